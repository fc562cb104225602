-- Streams are found by name; each stream's rows live in message_log_<id>,
-- created by CreateStream, so a stream name never enters SQL text. Every
-- table lives in the first schema of the connection's search_path.
CREATE TABLE stream_config (
    id                   bigserial   PRIMARY KEY,
    name                 text        NOT NULL UNIQUE,
    partitions           integer     NOT NULL,
    compacted            boolean     NOT NULL,
    retention_max_age_us bigint      NOT NULL DEFAULT 0,
    retention_max_rows   bigint      NOT NULL DEFAULT 0,
    retention_hard       boolean     NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL
);

-- One row per (stream, partition). Appends lock the rows of the partitions
-- they write (FOR NO KEY UPDATE) before taking ids and hold the lock until
-- commit, so ids of a partition commit in id order (C5). The rows are never
-- updated: the lock is all they are for.
CREATE TABLE stream_partition (
    stream_id bigint  NOT NULL,
    partition integer NOT NULL,
    PRIMARY KEY (stream_id, partition)
);

CREATE TABLE consumer_group (
    stream_id      bigint      NOT NULL,
    name           text        NOT NULL,
    schema_version integer     NOT NULL,
    all_versions   boolean     NOT NULL,
    bindings       jsonb       NOT NULL,
    start_position integer     NOT NULL,
    removed_unread bigint      NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (stream_id, name)
);

-- position is the last id the group's main claim has passed in a partition.
-- Claims lock these rows FOR UPDATE SKIP LOCKED, so the consumers of a group
-- work on different partitions at once.
CREATE TABLE group_cursor (
    stream_id  bigint  NOT NULL,
    group_name text    NOT NULL,
    partition  integer NOT NULL,
    position   bigint  NOT NULL,
    PRIMARY KEY (stream_id, group_name, partition)
);

-- Deliveries that are leased, delayed or dead. Acked deliveries leave, so the
-- table stays small. Every claimed row is inserted here and deleted by its
-- ack, so each index costs claim throughput: there is none on msg_id alone
-- (retention and compaction scan this small table by stream instead).
CREATE TABLE delivery_exception (
    stream_id       bigint      NOT NULL,
    group_name      text        NOT NULL,
    msg_id          bigint      NOT NULL,
    partition       integer     NOT NULL,
    schema_version  integer     NOT NULL,
    state           text        NOT NULL,
    attempt         integer     NOT NULL,
    due_at          timestamptz NOT NULL,
    lease_token     text,
    last_error      text,
    first_failed_at timestamptz,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (stream_id, group_name, msg_id)
);
CREATE INDEX delivery_exception_due ON delivery_exception (stream_id, group_name, due_at) WHERE state <> 'dead';
CREATE INDEX delivery_exception_partition ON delivery_exception (stream_id, group_name, partition, msg_id) WHERE state <> 'dead';

-- The current head of each key of a compacted stream.
CREATE TABLE compaction_head (
    stream_id       bigint  NOT NULL,
    msg_key         text    NOT NULL,
    head_id         bigint  NOT NULL,
    schema_version  integer NOT NULL,
    compaction_rank integer NOT NULL,
    PRIMARY KEY (stream_id, msg_key)
);
CREATE INDEX compaction_head_id ON compaction_head (stream_id, head_id);
