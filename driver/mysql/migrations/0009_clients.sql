-- One row per open client: its heartbeat (clients.go); closed_at is NULL
-- while the client runs.
CREATE TABLE IF NOT EXISTS client_heartbeat (
    instance           VARCHAR(64)  NOT NULL,
    identity           VARCHAR(255) NOT NULL,
    host               VARCHAR(255) NOT NULL,
    pid                INT          NOT NULL,
    library_version    VARCHAR(64)  NOT NULL,
    group_list         JSON         NOT NULL,
    started_at         DATETIME(6)  NOT NULL,
    last_seen          DATETIME(6)  NOT NULL,
    heartbeat_every_us BIGINT       NOT NULL,
    closed_at          DATETIME(6)  NULL,
    PRIMARY KEY (instance)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
