-- Removes group pauses (0010_group_pause.sql): paused groups run again.
ALTER TABLE consumer_group DROP COLUMN paused_at;
