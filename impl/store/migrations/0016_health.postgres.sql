-- Same as 0016_health.sqlite.sql.
-- One row the health check rewrites: a ping proves only that the database
-- answers, a write that it can still keep what it acknowledges (a read-only
-- or full file, a read-only standby answer pings).
CREATE TABLE health (
    singleton  INTEGER     NOT NULL PRIMARY KEY CHECK (singleton = 1),
    checked_at TIMESTAMPTZ NOT NULL
);
