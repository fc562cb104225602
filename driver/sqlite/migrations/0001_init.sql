-- Streams are found by name; each stream's rows live in message_log_<id>,
-- created by CreateStream, so a stream name never enters SQL text.
CREATE TABLE stream_config (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    name                 TEXT    NOT NULL UNIQUE,
    partitions           INTEGER NOT NULL,
    compacted            INTEGER NOT NULL,
    retention_max_age_us INTEGER NOT NULL DEFAULT 0,
    retention_max_rows   INTEGER NOT NULL DEFAULT 0,
    retention_hard       INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL
);

CREATE TABLE consumer_group (
    stream_id      INTEGER NOT NULL,
    name           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    all_versions   INTEGER NOT NULL,
    bindings       TEXT    NOT NULL,
    start_position INTEGER NOT NULL,
    removed_unread INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (stream_id, name)
);

-- position is the last id the group's main claim has passed in a partition.
CREATE TABLE group_cursor (
    stream_id  INTEGER NOT NULL,
    group_name TEXT    NOT NULL,
    partition  INTEGER NOT NULL,
    position   INTEGER NOT NULL,
    PRIMARY KEY (stream_id, group_name, partition)
);

-- Deliveries that are leased, delayed or dead. Acked deliveries leave.
CREATE TABLE delivery_exception (
    stream_id       INTEGER NOT NULL,
    group_name      TEXT    NOT NULL,
    msg_id          INTEGER NOT NULL,
    partition       INTEGER NOT NULL,
    schema_version  INTEGER NOT NULL,
    state           TEXT    NOT NULL,
    attempt         INTEGER NOT NULL,
    due_at          INTEGER NOT NULL,
    lease_token     TEXT,
    last_error      TEXT,
    first_failed_at INTEGER,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (stream_id, group_name, msg_id)
);
CREATE INDEX delivery_exception_due ON delivery_exception (stream_id, group_name, state, due_at);

-- The current head of each key of a compacted stream.
CREATE TABLE compaction_head (
    stream_id       INTEGER NOT NULL,
    msg_key         TEXT    NOT NULL,
    head_id         INTEGER NOT NULL,
    schema_version  INTEGER NOT NULL,
    compaction_rank INTEGER NOT NULL,
    PRIMARY KEY (stream_id, msg_key)
);
CREATE INDEX compaction_head_id ON compaction_head (stream_id, head_id);
