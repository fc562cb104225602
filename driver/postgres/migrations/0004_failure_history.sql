-- Every failed attempt of a delivery, oldest first, as a JSON array of
-- {"attempt", "error", "at", "holder"} objects (NULL: none yet). Fail and the
-- claim's burying of an expired lease on its last attempt append to it in the
-- statement that records the failure; replay keeps it.
ALTER TABLE delivery_exception ADD COLUMN failures jsonb;
