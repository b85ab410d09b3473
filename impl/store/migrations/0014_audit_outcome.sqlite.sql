-- An audit entry is written before the operation is attempted (outcome
-- 'pending', status 0) and completed after it ('done' with the answer's
-- status). A server that stops between the two leaves 'pending'; the next
-- start marks such entries 'unknown': the operation may or may not have
-- reached the upstream. Entries written before this version are 'done'.
ALTER TABLE audit_log ADD COLUMN outcome TEXT NOT NULL DEFAULT 'done';
CREATE INDEX audit_log_pending ON audit_log (outcome) WHERE outcome = 'pending';
