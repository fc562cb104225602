-- One row per open client: its heartbeat (clients.go). Times are unix
-- microseconds; closed_at is NULL while the client runs.
CREATE TABLE client_heartbeat (
    instance           TEXT    PRIMARY KEY,
    identity           TEXT    NOT NULL,
    host               TEXT    NOT NULL,
    pid                INTEGER NOT NULL,
    library_version    TEXT    NOT NULL,
    group_list         TEXT    NOT NULL,
    started_at         INTEGER NOT NULL,
    last_seen          INTEGER NOT NULL,
    heartbeat_every_us INTEGER NOT NULL,
    closed_at          INTEGER
);
