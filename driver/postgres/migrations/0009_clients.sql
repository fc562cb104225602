-- One row per open client: its heartbeat (clients.go); closed_at is NULL
-- while the client runs.
CREATE TABLE client_heartbeat (
    instance           text        PRIMARY KEY,
    identity           text        NOT NULL,
    host               text        NOT NULL,
    pid                integer     NOT NULL,
    library_version    text        NOT NULL,
    group_list         jsonb       NOT NULL,
    started_at         timestamptz NOT NULL,
    last_seen          timestamptz NOT NULL,
    heartbeat_every_us bigint      NOT NULL,
    closed_at          timestamptz
);
