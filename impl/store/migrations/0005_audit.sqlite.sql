-- The audit log: one row per mutating release 2.0 call, whatever its
-- outcome. Who (the token's subject), what (operationId, the validator and
-- the other path parameters as a JSON object), the answer's status and the
-- request id. Never a body, a secret or key material. No reference to
-- validators: an entry outlives the validator it names.
CREATE TABLE audit_log (
    id          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at          TIMESTAMP NOT NULL,
    subject     TEXT    NOT NULL,
    operation   TEXT    NOT NULL,
    validator   TEXT    NOT NULL DEFAULT '',
    targets     TEXT    NOT NULL DEFAULT '{}',
    status      INTEGER NOT NULL,
    request_id  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_validator_at ON audit_log (validator, at);
