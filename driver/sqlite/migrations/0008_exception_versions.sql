-- Health counts a stream's exceptions by group, schema version and state.
-- With the version in the due index, that count reads the index alone, not
-- each exception's row (a dead letter's carries its error text): 10k dead
-- letters cost a read of 10k rows scattered over the table before. The
-- exception claim's walk in due order is unchanged.
DROP INDEX delivery_exception_due;
CREATE INDEX delivery_exception_due ON delivery_exception (stream_id, group_name, state, due_at, schema_version);
