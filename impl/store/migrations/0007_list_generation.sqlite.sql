-- list_generation counts the changes of validator_blocks, so that a server
-- keeps the block counts in memory and reads them again only when the
-- generation moved (a page located its block with a window over every
-- block row: a quarter of its CPU at 100,000 validators). Writers are
-- serialised by SQLite's write lock, so one row is enough.
CREATE TABLE list_generation (
    singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
    g         BIGINT  NOT NULL
);
INSERT INTO list_generation (singleton, g) VALUES (1, 0);
CREATE TRIGGER validator_blocks_generation_insert AFTER INSERT ON validator_blocks
BEGIN
    UPDATE list_generation SET g = g + 1;
END;
CREATE TRIGGER validator_blocks_generation_update AFTER UPDATE ON validator_blocks
BEGIN
    UPDATE list_generation SET g = g + 1;
END;
CREATE TRIGGER validator_blocks_generation_delete AFTER DELETE ON validator_blocks
BEGIN
    UPDATE list_generation SET g = g + 1;
END;
