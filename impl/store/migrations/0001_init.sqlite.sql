-- Schema of release 1.11 for SQLite. Timestamps are declared TIMESTAMP so the
-- mattn driver reads them back as time.Time; the store writes them in UTC.

CREATE TABLE validators (
    name              TEXT    NOT NULL PRIMARY KEY,
    phase             TEXT    NOT NULL DEFAULT '',
    immutable         BOOLEAN NOT NULL DEFAULT FALSE,
    custom_auth       BOOLEAN NOT NULL DEFAULT FALSE,
    external_database BOOLEAN NOT NULL DEFAULT FALSE,
    database_storage  TEXT    NOT NULL DEFAULT '',
    migration_id      INTEGER NOT NULL DEFAULT 0,
    migrating         BOOLEAN NOT NULL DEFAULT FALSE,
    spec              TEXT    NOT NULL DEFAULT '',
    wallet_user_id    TEXT    NOT NULL DEFAULT '',
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE INDEX validators_phase ON validators (phase);

CREATE TABLE prune_schedules (
    validator            TEXT    NOT NULL PRIMARY KEY REFERENCES validators (name) ON DELETE CASCADE,
    cron                 TEXT    NOT NULL,
    max_duration_seconds BIGINT  NOT NULL,
    retention_seconds    BIGINT  NOT NULL,
    max_duration_text    TEXT    NOT NULL DEFAULT '',
    retention_text       TEXT    NOT NULL DEFAULT '',
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL
);

CREATE TABLE backup_schedules (
    validator   TEXT    NOT NULL PRIMARY KEY REFERENCES validators (name) ON DELETE CASCADE,
    cron        TEXT    NOT NULL,
    max_backups INTEGER NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    deleted_at  TIMESTAMP NULL
);

CREATE TABLE remote_participants (
    name            TEXT    NOT NULL PRIMARY KEY,
    spec            TEXT    NOT NULL DEFAULT '',
    phase           TEXT    NOT NULL DEFAULT '',
    admin_address   TEXT    NOT NULL DEFAULT '',
    admin_port      TEXT    NOT NULL DEFAULT '',
    ledger_address  TEXT    NOT NULL DEFAULT '',
    ledger_port     TEXT    NOT NULL DEFAULT '',
    healthy         BOOLEAN NULL,
    last_checked_at TIMESTAMP NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX remote_participants_phase ON remote_participants (phase);

-- AUTOINCREMENT so that the id of a removed run is never handed out again.
CREATE TABLE runs (
    id          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    validator   TEXT    NOT NULL REFERENCES validators (name) ON DELETE CASCADE,
    kind        TEXT    NOT NULL CHECK (kind IN ('backup', 'prune')),
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP NULL,
    succeeded   BOOLEAN NULL,
    message     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX runs_validator_kind_started ON runs (validator, kind, started_at);
