-- Lists from memory (issue 23). Each server keeps the list's rows (name,
-- phase, immutable, list view) in memory in name order, and reads again
-- only the rows whose list_seq is past the generation it holds: triggers
-- stamp each written row with the next generation (list_generation.g), and
-- a delete moves list_generation.removed, after which a server reads every
-- row again (deletes are rare). Writers are serialised by SQLite's write
-- lock, so generations are stamped in commit order.
--
-- This replaces the block counts and trigrams of 0003 and 0007 and the
-- partial indexes the pages walked (0006): a page is a slice of memory.
DROP TRIGGER validators_block_insert;
DROP TRIGGER validators_block_delete;
DROP TRIGGER validators_block_shown;
DROP TRIGGER validators_block_phase;
DROP TRIGGER validators_trigrams_insert;
DROP TRIGGER validators_trigrams_delete;
DROP TRIGGER validator_blocks_generation_insert;
DROP TRIGGER validator_blocks_generation_update;
DROP TRIGGER validator_blocks_generation_delete;
DROP TABLE validator_blocks;
DROP TABLE validator_trigrams;
DROP TABLE trigram_positions;
DROP INDEX validators_shown;
DROP INDEX validators_shown_phase;

ALTER TABLE list_generation ADD COLUMN removed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE validators ADD COLUMN list_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX validators_list_seq ON validators (list_seq);

CREATE TRIGGER validators_list_insert AFTER INSERT ON validators
BEGIN
    UPDATE list_generation SET g = g + 1;
    UPDATE validators SET list_seq = (SELECT g FROM list_generation) WHERE name = NEW.name;
END;

CREATE TRIGGER validators_list_update
AFTER UPDATE OF phase, immutable, creating, list_view, list_view_version ON validators
WHEN OLD.phase IS NOT NEW.phase OR OLD.immutable IS NOT NEW.immutable OR OLD.creating IS NOT NEW.creating
  OR OLD.list_view IS NOT NEW.list_view OR OLD.list_view_version IS NOT NEW.list_view_version
BEGIN
    UPDATE list_generation SET g = g + 1;
    UPDATE validators SET list_seq = (SELECT g FROM list_generation) WHERE name = NEW.name;
END;

CREATE TRIGGER validators_list_delete AFTER DELETE ON validators
BEGIN
    UPDATE list_generation SET g = g + 1, removed = g + 1;
END;
