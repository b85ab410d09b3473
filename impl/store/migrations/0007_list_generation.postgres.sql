-- Same as 0007_list_generation.sqlite.sql, but for the trigger.
-- list_generation counts the changes of validator_blocks, so that a server
-- keeps the block counts in memory and reads them again only when the
-- generation moved (a page located its block with a window over every
-- block row). The bump runs at commit (a deferred constraint trigger):
-- a transaction takes the row's lock as its last step, when it waits for
-- nothing else, so writers of different blocks cannot deadlock on it, and
-- a reader that sees the new generation sees the new counts.
CREATE TABLE list_generation (
    singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
    g         BIGINT  NOT NULL
);
INSERT INTO list_generation (singleton, g) VALUES (1, 0);
CREATE FUNCTION list_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE list_generation SET g = g + 1;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER validator_blocks_generation AFTER INSERT OR UPDATE OR DELETE ON validator_blocks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION list_generation_bump();
