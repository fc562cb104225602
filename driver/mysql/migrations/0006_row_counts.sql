-- Rows per partition and schema version, counted up to a mark, so that
-- Health reads the counts instead of scanning the log: it counts only the
-- rows past each partition's mark (counted_to; no row here: 0) and moves the
-- marks on. A partition's ids commit in increasing order, so no row at or
-- below a mark can appear later. Compaction and retention subtract the rows
-- they remove at or below the mark, in the transaction that removes them;
-- both they and Health's count lock the stream's stream_config row first.
CREATE TABLE IF NOT EXISTS row_count (
    stream_id      BIGINT NOT NULL,
    `partition`    INT    NOT NULL,
    schema_version INT    NOT NULL,
    row_count      BIGINT NOT NULL,
    PRIMARY KEY (stream_id, `partition`, schema_version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS row_count_mark (
    stream_id   BIGINT NOT NULL,
    `partition` INT    NOT NULL,
    counted_to  BIGINT NOT NULL,
    PRIMARY KEY (stream_id, `partition`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
