-- Removes the streams' samples (0013_stream_samples.sql).
DROP TABLE IF EXISTS stream_sample;
