-- Lists that cost the page, not the table (issue 8).
--
-- validator_blocks cuts the validators, in name order, into blocks of about
-- a thousand and keeps, per block and phase, how many validators it holds:
-- block lo holds the names from lo up to the next block's lo (the first
-- block's lo is ''). Triggers keep the counts exact in the writing
-- transaction; the store splits a block that grows past two thousand. A page
-- at any offset then reads the block counts (n/1000 rows per phase), finds
-- the block holding the offset, and walks at most a block of the name index.
-- The sum of the counts is the unfiltered or phase-filtered totalCount.
--
-- validators_phase_name serves a phase-filtered page from the index alone
-- (it replaces validators_phase, which it covers).

CREATE INDEX validators_phase_name ON validators (phase, name);
DROP INDEX validators_phase;

CREATE TABLE validator_blocks (
    lo    TEXT   NOT NULL,
    phase TEXT   NOT NULL,
    n     BIGINT NOT NULL,
    PRIMARY KEY (lo, phase)
);

-- The store's rebuild (blocks.go) runs the same statement.
INSERT INTO validator_blocks (lo, phase, n)
WITH r AS (SELECT name, phase, (ROW_NUMBER() OVER (ORDER BY name) - 1) / 1000 AS b FROM validators WHERE NOT creating),
     l AS (SELECT b, CASE WHEN b = 0 THEN '' ELSE MIN(name) END AS lo FROM r GROUP BY b)
SELECT l.lo, r.phase, COUNT(*) FROM r JOIN l ON l.b = r.b GROUP BY l.lo, r.phase;

-- A validator whose create has not finished (creating, 0002) is not counted
-- (lists do not show it) until its create clears the mark.
CREATE TRIGGER validators_block_insert AFTER INSERT ON validators
WHEN NOT NEW.creating
BEGIN
    INSERT INTO validator_blocks (lo, phase, n)
        VALUES (COALESCE((SELECT MAX(lo) FROM validator_blocks WHERE lo <= NEW.name), ''), NEW.phase, 1)
        ON CONFLICT (lo, phase) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER validators_block_delete AFTER DELETE ON validators
WHEN NOT OLD.creating
BEGIN
    UPDATE validator_blocks SET n = n - 1
        WHERE phase = OLD.phase AND lo = (SELECT MAX(lo) FROM validator_blocks WHERE lo <= OLD.name);
END;

CREATE TRIGGER validators_block_shown AFTER UPDATE OF creating ON validators
WHEN OLD.creating AND NOT NEW.creating
BEGIN
    INSERT INTO validator_blocks (lo, phase, n)
        VALUES (COALESCE((SELECT MAX(lo) FROM validator_blocks WHERE lo <= NEW.name), ''), NEW.phase, 1)
        ON CONFLICT (lo, phase) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER validators_block_phase AFTER UPDATE OF phase ON validators
WHEN OLD.phase <> NEW.phase AND NOT OLD.creating AND NOT NEW.creating
BEGIN
    UPDATE validator_blocks SET n = n - 1
        WHERE phase = OLD.phase AND lo = (SELECT MAX(lo) FROM validator_blocks WHERE lo <= OLD.name);
    INSERT INTO validator_blocks (lo, phase, n)
        VALUES (COALESCE((SELECT MAX(lo) FROM validator_blocks WHERE lo <= NEW.name), ''), NEW.phase, 1)
        ON CONFLICT (lo, phase) DO UPDATE SET n = n + 1;
END;

CREATE INDEX remote_participants_phase_name ON remote_participants (phase, name);
DROP INDEX remote_participants_phase;

-- A name filter is a literal substring: no B-tree seeks it. validator_trigrams
-- holds every three-character substring of every name (triggers keep it), so
-- a filter of three characters or more reads the names of its rarest
-- trigram and checks each with instr, instead of scanning every name; the
-- store falls back to the scan when even the rarest trigram is common.
-- trigram_positions is a table of numbers, because SQLite does not allow a
-- WITH clause in a trigger; it covers names of up to 1,000 characters
-- (names are DNS labels: release 1.11 allows 33).
CREATE TABLE trigram_positions (k INTEGER NOT NULL PRIMARY KEY);
WITH RECURSIVE p(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM p WHERE k < 1000)
INSERT INTO trigram_positions (k) SELECT k FROM p;

CREATE TABLE validator_trigrams (
    tri  TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (tri, name)
) WITHOUT ROWID;
CREATE INDEX validator_trigrams_name ON validator_trigrams (name);
INSERT OR IGNORE INTO validator_trigrams (tri, name)
    SELECT substr(v.name, p.k, 3), v.name FROM validators v JOIN trigram_positions p ON p.k <= length(v.name) - 2;

CREATE TRIGGER validators_trigrams_insert AFTER INSERT ON validators
BEGIN
    INSERT OR IGNORE INTO validator_trigrams (tri, name)
        SELECT substr(NEW.name, k, 3), NEW.name FROM trigram_positions WHERE k <= length(NEW.name) - 2;
END;

CREATE TRIGGER validators_trigrams_delete AFTER DELETE ON validators
BEGIN
    DELETE FROM validator_trigrams WHERE name = OLD.name;
END;
