-- Back to the default threshold: new and updated batch records compress
-- their ids above about 2 kB again.
ALTER TABLE delivery_batch RESET (toast_tuple_target);
