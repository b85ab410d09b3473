-- Same as 0023_audit_role.sqlite.sql.
-- The role (setting api.auth.roles) that the caller's token carried when the
-- call was allowed or refused; '' when roles are off or for entries written
-- before this version. The subject index serves the audit read's filter.
ALTER TABLE audit_log ADD COLUMN role TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_log_subject_id ON audit_log (subject, id);
