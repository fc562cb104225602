-- When an operator paused a group (PauseGroup), NULL while it runs: its
-- claims lease nothing meanwhile.
ALTER TABLE consumer_group ADD COLUMN paused_at timestamptz;
