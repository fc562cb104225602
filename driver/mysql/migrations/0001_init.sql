-- sqlstreams schema for MySQL 8.0+ and MariaDB 10.6+.
--
-- Every statement is idempotent (IF NOT EXISTS), because DDL commits on its
-- own: a process that dies half-way through a migration leaves some tables
-- created, and the next process simply runs the migration again. Migrate
-- holds a named lock (GET_LOCK) meanwhile, so only one process runs it.
--
-- Names use utf8mb4_bin (byte comparison, case-sensitive like the other
-- drivers). Message keys are VARBINARY: utf8mb4_bin pads trailing spaces, so
-- "a" and "a " would be one key. Times are DATETIME(6) holding UTC.

-- Streams are found by name; each stream's rows live in message_log_<id>,
-- created by CreateStream, so a stream name never enters SQL text.
CREATE TABLE IF NOT EXISTS stream_config (
    id                   BIGINT       NOT NULL AUTO_INCREMENT,
    name                 VARCHAR(128) NOT NULL,
    partitions           INT          NOT NULL,
    compacted            BOOLEAN      NOT NULL,
    retention_max_age_us BIGINT       NOT NULL DEFAULT 0,
    retention_max_rows   BIGINT       NOT NULL DEFAULT 0,
    retention_hard       BOOLEAN      NOT NULL DEFAULT FALSE,
    created_at           DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY stream_config_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per partition of a stream. Append locks the rows of the
-- partitions it writes (FOR UPDATE, in partition order) and holds them to
-- commit, so the ids of a partition are taken and committed in one order
-- (C5; see the package documentation).
CREATE TABLE IF NOT EXISTS stream_partition (
    stream_id   BIGINT NOT NULL,
    `partition` INT    NOT NULL,
    PRIMARY KEY (stream_id, `partition`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS consumer_group (
    stream_id      BIGINT       NOT NULL,
    name           VARCHAR(128) NOT NULL,
    schema_version INT          NOT NULL,
    all_versions   BOOLEAN      NOT NULL,
    bindings       LONGTEXT     NOT NULL CHECK (JSON_VALID(bindings)),
    -- Older versions the group reads through converters, as a JSON array.
    converts_from  LONGTEXT     NOT NULL CHECK (JSON_VALID(converts_from)),
    start_position INT          NOT NULL,
    removed_unread BIGINT       NOT NULL DEFAULT 0,
    created_at     DATETIME(6)  NOT NULL,
    PRIMARY KEY (stream_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- position is the last id the group's main claim has passed in a partition.
-- Claims lock a cursor row FOR UPDATE SKIP LOCKED, so concurrent consumers
-- of a group take different partitions.
CREATE TABLE IF NOT EXISTS group_cursor (
    stream_id   BIGINT       NOT NULL,
    group_name  VARCHAR(128) NOT NULL,
    `partition` INT          NOT NULL,
    position    BIGINT       NOT NULL,
    PRIMARY KEY (stream_id, group_name, `partition`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Deliveries that are leased, delayed or dead. Acked deliveries leave.
CREATE TABLE IF NOT EXISTS delivery_exception (
    stream_id       BIGINT       NOT NULL,
    group_name      VARCHAR(128) NOT NULL,
    msg_id          BIGINT       NOT NULL,
    `partition`     INT          NOT NULL,
    schema_version  INT          NOT NULL,
    state           VARCHAR(8)   NOT NULL,
    attempt         INT          NOT NULL,
    due_at          DATETIME(6)  NOT NULL,
    lease_token     VARCHAR(64)  NULL,
    last_error      MEDIUMTEXT   NULL,
    first_failed_at DATETIME(6)  NULL,
    updated_at      DATETIME(6)  NOT NULL,
    PRIMARY KEY (stream_id, group_name, msg_id),
    KEY delivery_exception_due (stream_id, group_name, state, due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The current head of each key of a compacted stream.
CREATE TABLE IF NOT EXISTS compaction_head (
    stream_id       BIGINT         NOT NULL,
    msg_key         VARBINARY(255) NOT NULL,
    head_id         BIGINT         NOT NULL,
    schema_version  INT            NOT NULL,
    compaction_rank BIGINT         NOT NULL,
    PRIMARY KEY (stream_id, msg_key),
    KEY compaction_head_id (stream_id, head_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
