-- Drops the row counts 0006_row_counts.sql added; Health counts the log again.
DROP TABLE row_count_mark;
DROP TABLE row_count;
