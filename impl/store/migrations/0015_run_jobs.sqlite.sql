-- A run observed from a Kubernetes Job is keyed by the Job's UID, so that
-- observing the Job again (each status change, a restart's relist) updates
-- the one row. Runs recorded otherwise have none (NULLs are distinct).
ALTER TABLE runs ADD COLUMN job_uid TEXT NULL;
CREATE UNIQUE INDEX runs_job_uid ON runs (job_uid);
-- Pages of every kind, newest first.
CREATE INDEX runs_validator_started ON runs (validator, started_at);
