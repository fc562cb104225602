-- One row per stream per sample time bucket: the figures maintenance read
-- from Health (samples.go); figures is a JSON document package sqlstreams
-- writes and reads.
CREATE TABLE stream_sample (
    stream_id  bigint      NOT NULL,
    sampled_at timestamptz NOT NULL,
    figures    jsonb       NOT NULL,
    PRIMARY KEY (stream_id, sampled_at)
);
CREATE INDEX stream_sample_at ON stream_sample (sampled_at);
