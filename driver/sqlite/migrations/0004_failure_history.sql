-- Every failed attempt of a delivery, oldest first, as a JSON array of
-- {"attempt", "error", "at", "holder"}: the dead-letter history operators
-- read. NULL until the first failure.
ALTER TABLE delivery_exception ADD COLUMN failures TEXT;
