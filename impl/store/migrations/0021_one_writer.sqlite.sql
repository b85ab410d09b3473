-- One writer: handlers record intent, the elected leader makes the cluster
-- and the identity provider match it (docs/decisions.md, "One writer").
--
-- pending_secrets: the secret values a create or an edit gave that the
-- leader has not written into the validator's Secrets yet, sealed (AES-GCM
-- under a key derived from the cluster's password key), base64; '' when
-- none wait. The leader clears it only if it still holds what it wrote.
-- provision_error: why the leader could not provision the validator (the
-- identity provider refused or failed); '' once it could.
ALTER TABLE validators ADD COLUMN pending_secrets TEXT NOT NULL DEFAULT '';
ALTER TABLE validators ADD COLUMN provision_error TEXT NOT NULL DEFAULT '';

-- A create is finished, never undone: a row an older version left
-- creating is a recorded create like any other.
UPDATE validators SET creating = FALSE WHERE creating;

-- The names whose intent changed, for the leader, which takes them (reads
-- and deletes) every few hundred milliseconds: a write on any replica
-- reaches the leader's work queue without a message between processes.
-- Only the columns an operator's request writes count; the leader's own
-- bookkeeping (phase, list view, provisioned ids, pending_secrets cleared)
-- does not.
CREATE TABLE validator_changes (
    seq  INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    name TEXT    NOT NULL
);
CREATE TRIGGER validator_changes_insert AFTER INSERT ON validators
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.name); END;
CREATE TRIGGER validator_changes_update AFTER UPDATE OF custom_auth, external_database, database_storage, migration_id, migrating, spec ON validators
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.name); END;
CREATE TRIGGER validator_changes_delete AFTER DELETE ON validators
BEGIN INSERT INTO validator_changes (name) VALUES (OLD.name); END;
CREATE TRIGGER prune_changes_insert AFTER INSERT ON prune_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.validator); END;
CREATE TRIGGER prune_changes_update AFTER UPDATE ON prune_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.validator); END;
CREATE TRIGGER prune_changes_delete AFTER DELETE ON prune_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (OLD.validator); END;
CREATE TRIGGER backup_changes_insert AFTER INSERT ON backup_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.validator); END;
CREATE TRIGGER backup_changes_update AFTER UPDATE ON backup_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (NEW.validator); END;
CREATE TRIGGER backup_changes_delete AFTER DELETE ON backup_schedules
BEGIN INSERT INTO validator_changes (name) VALUES (OLD.validator); END;
