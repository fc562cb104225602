-- When an operator paused a group (PauseGroup), NULL while it runs: its
-- claims lease nothing meanwhile. Guarded, as in 0003, so a migration that
-- died half-way runs again.
-- @unless-column consumer_group paused_at
ALTER TABLE consumer_group ADD COLUMN paused_at DATETIME(6) NULL;
