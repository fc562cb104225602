-- Contract v2, delivery correctness: who holds each lease, a high-water mark
-- that compaction and retention keep, and payloads stored byte for byte.
--
-- MySQL has no ADD COLUMN IF NOT EXISTS and DDL commits on its own, so a
-- migration that died half-way runs again: each change is guarded by a
-- directive that looks at information_schema first (see parseMigration).
-- Directives are comments ("-- @..."), so a tool that applies this file
-- itself to a new database runs its statements as they are.

-- The client identity that took each lease (Holder), shown to operators.
-- VARBINARY: an identity is up to 256 bytes and need not be UTF-8.
-- @unless-column delivery_exception holder
ALTER TABLE delivery_exception ADD COLUMN holder VARBINARY(256) NULL;

-- The greatest id a partition ever had, raised by compaction and retention
-- when they remove its newest row, so that health's high-water mark never
-- goes down. Health reads the greater of this and the log's newest id.
-- @unless-column stream_partition high_water
ALTER TABLE stream_partition ADD COLUMN high_water BIGINT NOT NULL DEFAULT 0;

-- Payloads are stored byte for byte and checked by sqlstreams before they
-- are written (valid UTF-8 JSON, at most 4 MiB, nested at most 1000 deep).
-- Each existing log loses its JSON_VALID check on payload: MariaDB's
-- JSON_VALID refuses valid documents nested deeper than 32. On MariaDB the
-- check is part of the column's definition, which is restated without it
-- (MariaDB copies the table to do that: the time grows with the log's size,
-- and appends to that stream wait meanwhile); on MySQL it is a constraint
-- of the table, which is dropped in place.
-- @drop-checks {log} payload LONGTEXT NOT NULL
