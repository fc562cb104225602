-- When an operator paused a group (PauseGroup), NULL while it runs: its
-- claims lease nothing meanwhile. Unix microseconds.
ALTER TABLE consumer_group ADD COLUMN paused_at INTEGER;
