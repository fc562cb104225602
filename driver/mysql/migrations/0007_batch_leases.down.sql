-- Drops the batch leases 0007_batch_leases.sql added, writing every batch's
-- members back as the leased exception rows they stand for first (one
-- statement per stream log; {stream} is the log's stream id), so that going
-- back loses no lease. Guarded by the table's presence: a down step that
-- died after the DROP runs again.
-- @if-column delivery_batch ids
INSERT IGNORE INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, lease_token, holder, updated_at)
SELECT b.stream_id, b.group_name, j.id, b.`partition`, m.schema_version, 'leased', 1, b.lease_until, b.lease_token, b.holder, b.created_at
FROM delivery_batch b JOIN JSON_TABLE(b.ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j JOIN {log} m ON m.id = j.id
WHERE b.stream_id = {stream};
DROP TABLE IF EXISTS delivery_batch;
