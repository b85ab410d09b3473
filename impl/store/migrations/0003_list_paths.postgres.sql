-- Lists that cost the page, not the table (issue 8); the same objects as
-- 0003_list_paths.sqlite.sql, whose comment explains them.

CREATE INDEX validators_phase_name ON validators (phase, name);
DROP INDEX validators_phase;

CREATE TABLE validator_blocks (
    lo    TEXT   COLLATE "C" NOT NULL,
    phase TEXT   NOT NULL,
    n     BIGINT NOT NULL,
    PRIMARY KEY (lo, phase)
);

-- The store's rebuild (blocks.go) runs the same statement.
INSERT INTO validator_blocks (lo, phase, n)
WITH r AS (SELECT name, phase, (ROW_NUMBER() OVER (ORDER BY name) - 1) / 1000 AS b FROM validators WHERE NOT creating),
     l AS (SELECT b, CASE WHEN b = 0 THEN '' ELSE MIN(name) END AS lo FROM r GROUP BY b)
SELECT l.lo, r.phase, COUNT(*) FROM r JOIN l ON l.b = r.b GROUP BY l.lo, r.phase;

CREATE FUNCTION validator_blocks_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM validator_blocks;
        RETURN NULL;
    END IF;
    -- A validator whose create has not finished (creating, 0002) is not
    -- counted (lists do not show it) until its create clears the mark.
    IF TG_OP IN ('DELETE', 'UPDATE') AND NOT OLD.creating THEN
        UPDATE validator_blocks SET n = n - 1
            WHERE phase = OLD.phase AND lo = (SELECT MAX(lo) FROM validator_blocks WHERE lo <= OLD.name);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NOT NEW.creating THEN
        INSERT INTO validator_blocks (lo, phase, n)
            VALUES (COALESCE((SELECT MAX(lo) FROM validator_blocks WHERE lo <= NEW.name), ''), NEW.phase, 1)
            ON CONFLICT (lo, phase) DO UPDATE SET n = validator_blocks.n + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER validators_block AFTER INSERT OR DELETE ON validators
    FOR EACH ROW EXECUTE FUNCTION validator_blocks_track();
CREATE TRIGGER validators_block_phase AFTER UPDATE OF phase, creating ON validators
    FOR EACH ROW WHEN (OLD.phase IS DISTINCT FROM NEW.phase OR OLD.creating IS DISTINCT FROM NEW.creating)
    EXECUTE FUNCTION validator_blocks_track();
CREATE TRIGGER validators_block_truncate AFTER TRUNCATE ON validators
    FOR EACH STATEMENT EXECUTE FUNCTION validator_blocks_track();

CREATE INDEX remote_participants_phase_name ON remote_participants (phase, name);
DROP INDEX remote_participants_phase;

-- A name filter is a literal substring (LIKE '%...%' with the wildcards
-- escaped): a trigram index serves it when the pattern has three characters
-- or more. pg_trgm ships with PostgreSQL and is a trusted extension, but a
-- server may lack it or the role may not create it: then name filters scan
-- the name index, as on SQLite.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX validators_name_trgm ON validators USING gin (name gin_trgm_ops);
    CREATE INDEX remote_participants_name_trgm ON remote_participants USING gin (name gin_trgm_ops);
EXCEPTION WHEN insufficient_privilege OR undefined_file OR undefined_object OR feature_not_supported THEN
    RAISE NOTICE 'pg_trgm is not available (%): name filters scan the name index', SQLERRM;
END
$$;
