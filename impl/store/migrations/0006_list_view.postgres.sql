-- Same as 0006_list_view.sqlite.sql.
-- A list page that does not decode whole configurations (issue 8).
--
-- list_view is the configuration as release 1.11 lists it: the API layer
-- renders it from spec whenever it writes spec, and a page splices it
-- after the columns it shows (name, phase, ...). list_view_version names
-- the rendering: a row whose version is not the server's (0: never
-- rendered, as every row before this migration) is rendered from spec on
-- read, and rewritten in the background.
ALTER TABLE validators ADD COLUMN list_view TEXT;
ALTER TABLE validators ADD COLUMN list_view_version INTEGER NOT NULL DEFAULT 0;

-- A page walks the names of the validators shown (not creating) from its
-- block: these indexes hold only those, and every column the walk reads
-- (creating too: SQLite checks the condition on each entry), so the walk
-- reads the index alone.
CREATE INDEX validators_shown ON validators (name, creating) WHERE NOT creating;
CREATE INDEX validators_shown_phase ON validators (phase, name, creating) WHERE NOT creating;
