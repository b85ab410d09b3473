-- Same as 0021_one_writer.sqlite.sql, whose comments explain it.
ALTER TABLE validators ADD COLUMN pending_secrets TEXT NOT NULL DEFAULT '';
ALTER TABLE validators ADD COLUMN provision_error TEXT NOT NULL DEFAULT '';

UPDATE validators SET creating = FALSE WHERE creating;

-- Taken by delete of the rows read, not by a cursor: a transaction that
-- commits after a later one (its seq lower) is still taken.
CREATE TABLE validator_changes (
    seq  BIGSERIAL NOT NULL PRIMARY KEY,
    name TEXT      NOT NULL
);

CREATE FUNCTION validator_changes_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO validator_changes (name) VALUES (OLD.name);
    ELSE
        INSERT INTO validator_changes (name) VALUES (NEW.name);
    END IF;
    RETURN NULL;
END
$$;

-- The schedules' key is their validator.
CREATE FUNCTION schedule_changes_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO validator_changes (name) VALUES (OLD.validator);
    ELSE
        INSERT INTO validator_changes (name) VALUES (NEW.validator);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER validator_changes AFTER INSERT OR DELETE ON validators
    FOR EACH ROW EXECUTE FUNCTION validator_changes_track();
CREATE TRIGGER validator_changes_update AFTER UPDATE OF custom_auth, external_database, database_storage, migration_id, migrating, spec ON validators
    FOR EACH ROW EXECUTE FUNCTION validator_changes_track();
CREATE TRIGGER prune_changes AFTER INSERT OR UPDATE OR DELETE ON prune_schedules
    FOR EACH ROW EXECUTE FUNCTION schedule_changes_track();
CREATE TRIGGER backup_changes AFTER INSERT OR UPDATE OR DELETE ON backup_schedules
    FOR EACH ROW EXECUTE FUNCTION schedule_changes_track();
