-- Removes the streams' samples (0015_stream_samples.sql).
DROP TABLE stream_sample;
