-- Removes group pauses (0010_group_pause.sql): paused groups run again.
-- @if-column consumer_group paused_at
ALTER TABLE consumer_group DROP COLUMN paused_at;
