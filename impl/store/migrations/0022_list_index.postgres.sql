-- Lists from memory (issue 23); the same design as 0022_list_index.sqlite.sql,
-- whose comment explains it. Writers run concurrently here, so a row is
-- stamped at commit (a deferred constraint trigger): the transaction takes
-- list_generation's row lock as its last step and holds it to its commit,
-- so generations are stamped in commit order, and a server that has read
-- generation g has seen every row stamped up to g.
DROP TRIGGER validators_block ON validators;
DROP TRIGGER validators_block_phase ON validators;
DROP TRIGGER validators_block_truncate ON validators;
DROP FUNCTION validator_blocks_track();
DROP TRIGGER validator_blocks_generation ON validator_blocks;
DROP FUNCTION list_generation_bump();
DROP TABLE validator_blocks;
DROP INDEX validators_shown;
DROP INDEX validators_shown_phase;
-- Name filters are matched in memory now.
DROP INDEX IF EXISTS validators_name_trgm;

ALTER TABLE list_generation ADD COLUMN removed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE validators ADD COLUMN list_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX validators_list_seq ON validators (list_seq);

-- One generation per transaction (kept in the transaction-local setting
-- vm.list_gen): a bulk import does not update list_generation's row once
-- per validator, which PostgreSQL would make quadratic (each update of a
-- row updated earlier in the same transaction walks its chain of versions).
CREATE FUNCTION validators_list_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gen BIGINT;
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        UPDATE list_generation SET g = g + 1, removed = g + 1;
        PERFORM set_config('vm.list_gen', '', true);
        RETURN NULL;
    END IF;
    gen := NULLIF(current_setting('vm.list_gen', true), '')::BIGINT;
    IF gen IS NULL THEN
        UPDATE list_generation SET g = g + 1 RETURNING g INTO gen;
        PERFORM set_config('vm.list_gen', gen::text, true);
    END IF;
    UPDATE validators SET list_seq = gen WHERE name = NEW.name;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER validators_list_insert AFTER INSERT OR DELETE ON validators
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION validators_list_track();
CREATE CONSTRAINT TRIGGER validators_list_update
    AFTER UPDATE OF phase, immutable, creating, list_view, list_view_version ON validators
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.phase IS DISTINCT FROM NEW.phase OR OLD.immutable IS DISTINCT FROM NEW.immutable
       OR OLD.creating IS DISTINCT FROM NEW.creating OR OLD.list_view IS DISTINCT FROM NEW.list_view
       OR OLD.list_view_version IS DISTINCT FROM NEW.list_view_version)
    EXECUTE FUNCTION validators_list_track();
CREATE TRIGGER validators_list_truncate AFTER TRUNCATE ON validators
    FOR EACH STATEMENT EXECUTE FUNCTION validators_list_track();
