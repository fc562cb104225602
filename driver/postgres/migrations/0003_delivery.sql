-- Who holds each lease (the client identity), shown to operators.
ALTER TABLE delivery_exception ADD COLUMN holder text;

-- The greatest id each partition ever had, raised by compaction and
-- retention before they remove rows, so that health's high-water mark never
-- goes down. Appends do not maintain it: the log's own max(id) covers rows
-- still present.
ALTER TABLE stream_partition ADD COLUMN high_water bigint NOT NULL DEFAULT 0;

-- Compaction ranks hold int64.
ALTER TABLE compaction_head ALTER COLUMN compaction_rank TYPE bigint;

-- Every existing stream's log: payloads become bytea, stored byte for byte
-- (jsonb normalized RawPayload bytes and refused \u0000), and ranks bigint.
-- The jsonb text is what reads returned so far, so payloads read the same.
DO $$
DECLARE
    r record;
    log text;
BEGIN
    FOR r IN SELECT id FROM stream_config ORDER BY id LOOP
        log := format('%I.%I', current_schema(), 'message_log_' || r.id);
        IF to_regclass(log) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN payload TYPE bytea USING convert_to(payload::text, %L), '
                || 'ALTER COLUMN compaction_rank TYPE bigint', log, 'UTF8');
        END IF;
    END LOOP;
END
$$;
