-- Batch leases: a main claim made with WithBatchLeases leases the rows it
-- takes from a partition as one record here instead of one leased
-- delivery_exception row each. A record stands for exactly the leased
-- exception rows it replaces: same token, partition and holder, attempt 1,
-- due at lease_until, updated at created_at. ids lists the members still
-- held, ascending; first_id and last_id are its lowest and highest. A
-- member has no exception row, and every member is at or below its
-- partition's cursor. Anything that is not an ack or a whole-batch
-- extension first turns the members it names into those rows
-- (materializes them). A claim writes one batch per partition.
CREATE TABLE delivery_batch (
    stream_id   bigint      NOT NULL,
    group_name  text        NOT NULL,
    lease_token text        NOT NULL,
    partition   integer     NOT NULL,
    first_id    bigint      NOT NULL,
    last_id     bigint      NOT NULL,
    ids         bigint[]    NOT NULL,
    holder      text,
    lease_until timestamptz NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (stream_id, group_name, lease_token, partition)
);
-- Expired batches, for the claim's probe and explosion.
CREATE INDEX delivery_batch_expiry ON delivery_batch (stream_id, group_name, lease_until);
-- Batches of a partition, for ordered groups.
CREATE INDEX delivery_batch_partition ON delivery_batch (stream_id, group_name, partition, first_id);
