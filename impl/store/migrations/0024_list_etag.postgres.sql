-- Same as 0024_list_etag.sqlite.sql: an edit of what a list item shows
-- moves list_generation, at commit like the bump of 0007 (a deferred
-- constraint trigger), so that a reader that sees the new generation sees
-- the edit. Its own function: the trigger does not depend on how 0007
-- keeps the block counts.
CREATE FUNCTION list_generation_edit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE list_generation SET g = g + 1;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER validators_list_generation_edit AFTER UPDATE ON validators
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NOT NEW.creating AND (
        OLD.spec IS DISTINCT FROM NEW.spec OR OLD.list_view IS DISTINCT FROM NEW.list_view
        OR OLD.immutable IS DISTINCT FROM NEW.immutable OR OLD.custom_auth IS DISTINCT FROM NEW.custom_auth
        OR OLD.external_database IS DISTINCT FROM NEW.external_database OR OLD.database_storage IS DISTINCT FROM NEW.database_storage
        OR OLD.migration_id IS DISTINCT FROM NEW.migration_id OR OLD.migrating IS DISTINCT FROM NEW.migrating))
    EXECUTE FUNCTION list_generation_edit();
