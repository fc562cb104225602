-- Who holds each lease (the client identity), shown to operators.
ALTER TABLE delivery_exception ADD COLUMN holder TEXT;

-- The greatest id each partition ever had, kept by compaction and retention
-- when they remove the newest rows, so that health's high-water mark never
-- goes down. A partition without a row here has never lost its newest row.
CREATE TABLE partition_mark (
    stream_id  INTEGER NOT NULL,
    partition  INTEGER NOT NULL,
    high_water INTEGER NOT NULL,
    PRIMARY KEY (stream_id, partition)
);
