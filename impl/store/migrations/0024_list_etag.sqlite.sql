-- The list of release 1.11 answers an ETag made from list_generation and
-- the query (issue 24), so the generation must move whenever a page would
-- change. Inserts, removals, phases and finished creates move it already
-- (validator_blocks, 0007); an edit of what a list item shows (the
-- configuration, its list view, the flags and columns viewed beside it)
-- moves it here. A row still being created is not listed.
CREATE TRIGGER validators_list_generation_edit AFTER UPDATE ON validators
WHEN NOT NEW.creating AND (
    OLD.spec IS NOT NEW.spec OR OLD.list_view IS NOT NEW.list_view
    OR OLD.immutable IS NOT NEW.immutable OR OLD.custom_auth IS NOT NEW.custom_auth
    OR OLD.external_database IS NOT NEW.external_database OR OLD.database_storage IS NOT NEW.database_storage
    OR OLD.migration_id IS NOT NEW.migration_id OR OLD.migrating IS NOT NEW.migrating)
BEGIN
    UPDATE list_generation SET g = g + 1;
END;
