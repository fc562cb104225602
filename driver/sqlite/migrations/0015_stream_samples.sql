-- One row per stream per sample time bucket: the figures maintenance read
-- from Health (samples.go). sampled_at is unix microseconds; figures is a
-- JSON document package sqlstreams writes and reads.
CREATE TABLE stream_sample (
    stream_id  INTEGER NOT NULL,
    sampled_at INTEGER NOT NULL,
    figures    TEXT    NOT NULL,
    PRIMARY KEY (stream_id, sampled_at)
) WITHOUT ROWID;
CREATE INDEX stream_sample_at ON stream_sample (sampled_at);
