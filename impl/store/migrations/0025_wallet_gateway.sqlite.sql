-- The wallet gateway of release 2.0 is recorded intent like every other
-- write: handlers on any replica record it here, the elected leader writes
-- it into the Secret <validator>-wallet-gateway (impl/controller/gateway).
-- Rows are keyed by the Validator resource's name, which need not have a
-- validators row (release 2.0 reads resources it did not make): no foreign key.
--
-- credentials: the custody provider's credentials, sealed (AES-GCM under a
-- key derived from the cluster's password key), base64; '' when none.
CREATE TABLE wallet_gateways (
    validator   TEXT      NOT NULL PRIMARY KEY,
    enabled     BOOLEAN   NOT NULL DEFAULT FALSE,
    base_url    TEXT      NOT NULL DEFAULT '',
    credentials TEXT      NOT NULL DEFAULT '',
    updated_at  TIMESTAMP
);

-- A wallet is recorded before its party is allocated; party_id is '' until
-- the allocation is recorded, so that a crash or a refused call in between
-- leaves a record that a retry with the same party hint finishes.
CREATE TABLE gateway_wallets (
    wallet_id        TEXT      NOT NULL PRIMARY KEY,
    validator        TEXT      NOT NULL,
    party_hint       TEXT      NOT NULL,
    party_id         TEXT      NOT NULL DEFAULT '',
    signing_provider TEXT      NOT NULL,
    is_primary       BOOLEAN   NOT NULL DEFAULT FALSE,
    vault            TEXT      NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    UNIQUE (validator, party_hint)
);

-- The validators whose wallet gateway changed, for the leader, which takes
-- them (reads and deletes) the way it takes validator_changes.
CREATE TABLE wallet_gateway_changes (
    seq       INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    validator TEXT    NOT NULL
);
CREATE TRIGGER wallet_gateways_insert AFTER INSERT ON wallet_gateways
BEGIN INSERT INTO wallet_gateway_changes (validator) VALUES (NEW.validator); END;
CREATE TRIGGER wallet_gateways_update AFTER UPDATE ON wallet_gateways
BEGIN INSERT INTO wallet_gateway_changes (validator) VALUES (NEW.validator); END;
CREATE TRIGGER gateway_wallets_insert AFTER INSERT ON gateway_wallets
BEGIN INSERT INTO wallet_gateway_changes (validator) VALUES (NEW.validator); END;
CREATE TRIGGER gateway_wallets_update AFTER UPDATE ON gateway_wallets
BEGIN INSERT INTO wallet_gateway_changes (validator) VALUES (NEW.validator); END;
