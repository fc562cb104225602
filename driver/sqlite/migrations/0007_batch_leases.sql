-- Batch leases: the leased exception rows one main claim would write for
-- one partition, kept as one record while its members share a token,
-- holder, attempt (1) and expiry. ids lists the members still held,
-- ascending (a JSON array), versions each one's schema version. A member
-- has no exception row, and is at or below its partition's cursor. Drivers
-- write batches only with WithBatchLeases; every driver from this migration
-- on reads them.
CREATE TABLE delivery_batch (
    stream_id   INTEGER NOT NULL,
    group_name  TEXT    NOT NULL,
    lease_token TEXT    NOT NULL,
    partition   INTEGER NOT NULL,
    first_id    INTEGER NOT NULL,
    last_id     INTEGER NOT NULL,
    ids         TEXT    NOT NULL,
    versions    TEXT    NOT NULL,
    holder      TEXT,
    lease_until INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (stream_id, group_name, lease_token, partition)
);
CREATE INDEX delivery_batch_due ON delivery_batch (stream_id, group_name, lease_until);
CREATE INDEX delivery_batch_partition ON delivery_batch (stream_id, group_name, partition, first_id);
