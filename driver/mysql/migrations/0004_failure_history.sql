-- Contract v2.1: every failed attempt of a delivery, oldest first, as a JSON
-- array of {"attempt", "error", "at", "holder"} objects in text (NULL: none
-- yet). Fail, and the claim's burying of an expired lease on its last
-- attempt, append to it with JSON_ARRAY_APPEND in the statement that records
-- the failure; replay keeps it. LONGTEXT rather than MySQL's JSON type, as
-- elsewhere; no JSON_VALID check, so that adding the column is instant on
-- both engines (only the driver's JSON functions write it).
-- @unless-column delivery_exception failures
ALTER TABLE delivery_exception ADD COLUMN failures LONGTEXT NULL;
