-- Same as 0002_intent.sqlite.sql.
-- A validator row is the record of what the operator asked for; the
-- reconciler drives the identity provider and the cluster to it. A create
-- inserts its row with creating set and clears it when every step is done:
-- a row still creating after its process died is undone by the reconciler.
-- claim tags what the create made (the wallet user carries it), so the undo
-- never removes a user someone else made.
ALTER TABLE validators ADD COLUMN creating BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE validators ADD COLUMN claim TEXT NOT NULL DEFAULT '';
CREATE INDEX validators_creating ON validators (name) WHERE creating;

-- The installation this database belongs to: the Validator resources its
-- server writes carry the id (label validator-manager.io/installation), and its
-- reconciler removes only those of its own that have no row. One row.
CREATE TABLE instance (
    singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
    id        TEXT    NOT NULL
);
