-- Batch leases: a main claim leases the rows it takes
-- from a partition as one record here instead of one leased
-- delivery_exception row each. A batch is a compressed set of leased
-- exception rows sharing one claim: token, partition, holder, attempt 1,
-- due_at = lease_until, updated_at = created_at. Anything but the fast
-- paths (acks, and extensions of every remaining member) first writes the
-- members it names back as those exception rows and removes them from ids.
-- A row a group has passed is resolved, or a member of exactly one batch of
-- the group (then it has no exception row), or has an exception row; every
-- member is at or below its partition's cursor.
--
-- ids: the members still held, ascending, as a JSON array of integers in
-- text, written only by the driver (SQL joins it with JSON_TABLE; settles
-- compare it as text). first_id and last_id are its lowest and highest.
-- created_at is the claim's time, or that of the last whole-batch extension.
CREATE TABLE IF NOT EXISTS delivery_batch (
    stream_id   BIGINT         NOT NULL,
    group_name  VARCHAR(128)   NOT NULL,
    lease_token VARCHAR(64)    NOT NULL,
    `partition` INT            NOT NULL,
    first_id    BIGINT         NOT NULL,
    last_id     BIGINT         NOT NULL,
    ids         LONGTEXT       NOT NULL,
    holder      VARBINARY(256) NULL,
    lease_until DATETIME(6)    NOT NULL,
    created_at  DATETIME(6)    NOT NULL,
    PRIMARY KEY (stream_id, group_name, lease_token, `partition`),
    KEY delivery_batch_expiry (stream_id, group_name, lease_until),
    KEY delivery_batch_first (stream_id, group_name, `partition`, first_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
