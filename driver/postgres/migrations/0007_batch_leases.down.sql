-- Drops the batch leases 0007_batch_leases.sql added, after turning every
-- batch into the leased exception rows it stands for, so that nothing is
-- lost: the holders settle them as rows, and they expire as rows.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT stream_id FROM delivery_batch ORDER BY stream_id LOOP
        IF to_regclass(format('%I.%I', current_schema(), 'message_log_' || r.stream_id)) IS NOT NULL THEN
            EXECUTE format('INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at) '
                || 'SELECT b.stream_id, b.group_name, m.id, b.partition, m.schema_version, %L, 1, b.lease_until, b.lease_token, b.holder, b.created_at '
                || 'FROM delivery_batch b CROSS JOIN LATERAL unnest(b.ids) AS x(id) JOIN %I m ON m.id = x.id WHERE b.stream_id = %s '
                || 'ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING', 'leased', 'message_log_' || r.stream_id, r.stream_id);
        END IF;
    END LOOP;
END
$$;
DROP TABLE delivery_batch;
