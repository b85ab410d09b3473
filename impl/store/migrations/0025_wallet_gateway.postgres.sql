-- Same as 0025_wallet_gateway.sqlite.sql, whose comments explain it.
CREATE TABLE wallet_gateways (
    validator   TEXT        NOT NULL PRIMARY KEY,
    enabled     BOOLEAN     NOT NULL DEFAULT FALSE,
    base_url    TEXT        NOT NULL DEFAULT '',
    credentials TEXT        NOT NULL DEFAULT '',
    updated_at  TIMESTAMPTZ
);

CREATE TABLE gateway_wallets (
    wallet_id        TEXT        NOT NULL PRIMARY KEY,
    validator        TEXT        NOT NULL,
    party_hint       TEXT        NOT NULL,
    party_id         TEXT        NOT NULL DEFAULT '',
    signing_provider TEXT        NOT NULL,
    is_primary       BOOLEAN     NOT NULL DEFAULT FALSE,
    vault            TEXT        NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (validator, party_hint)
);

CREATE TABLE wallet_gateway_changes (
    seq       BIGSERIAL NOT NULL PRIMARY KEY,
    validator TEXT      NOT NULL
);

CREATE FUNCTION wallet_gateway_changes_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO wallet_gateway_changes (validator) VALUES (NEW.validator);
    RETURN NULL;
END
$$;

CREATE TRIGGER wallet_gateways_changes AFTER INSERT OR UPDATE ON wallet_gateways
    FOR EACH ROW EXECUTE FUNCTION wallet_gateway_changes_track();
CREATE TRIGGER gateway_wallets_changes AFTER INSERT OR UPDATE ON gateway_wallets
    FOR EACH ROW EXECUTE FUNCTION wallet_gateway_changes_track();
