-- Rows per partition and schema version, counted up to a mark, so that
-- Health reads the counts instead of scanning the log: it counts only the
-- rows past each partition's mark (counted_to; no row here: 0) and moves the
-- marks on. A partition's ids commit in increasing order, so no row at or
-- below a mark can appear later. Compaction and retention subtract the rows
-- they remove at or below the mark, in the transaction that removes them;
-- both they and Health lock the stream's stream_config row first.
CREATE TABLE row_count (
    stream_id      bigint  NOT NULL,
    partition      integer NOT NULL,
    schema_version integer NOT NULL,
    row_count      bigint  NOT NULL,
    PRIMARY KEY (stream_id, partition, schema_version)
);

CREATE TABLE row_count_mark (
    stream_id  bigint  NOT NULL,
    partition  integer NOT NULL,
    counted_to bigint  NOT NULL,
    PRIMARY KEY (stream_id, partition)
);
