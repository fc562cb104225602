ALTER TABLE delivery_exception DROP COLUMN failures;
