-- Restores the due index without the schema version (0008_exception_versions.sql).
DROP INDEX delivery_exception_due;
CREATE INDEX delivery_exception_due ON delivery_exception (stream_id, group_name, state, due_at);
