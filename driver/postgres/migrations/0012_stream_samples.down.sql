-- Removes the streams' samples (0012_stream_samples.sql).
DROP TABLE stream_sample;
