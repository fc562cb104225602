-- Turns every batch lease back into the leased exception rows it stands
-- for, then drops the table 0007_batch_leases.sql added: nothing held is lost.
INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at)
SELECT b.stream_id, b.group_name, i.value, b.partition, v.value, 'leased', 1, b.lease_until, b.lease_token, b.holder, b.created_at
FROM delivery_batch b JOIN json_each(b.ids) i JOIN json_each(b.versions) v ON v.key = i.key WHERE 1
ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING;
DROP TABLE delivery_batch;
