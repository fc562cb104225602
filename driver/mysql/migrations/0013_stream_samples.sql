-- One row per stream per sample time bucket: the figures maintenance read
-- from Health (samples.go); figures is a JSON document package sqlstreams
-- writes and reads.
CREATE TABLE IF NOT EXISTS stream_sample (
    stream_id  BIGINT      NOT NULL,
    sampled_at DATETIME(6) NOT NULL,
    figures    JSON        NOT NULL,
    PRIMARY KEY (stream_id, sampled_at),
    KEY stream_sample_at (sampled_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
