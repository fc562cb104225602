-- Batch records keep their ids in the row, uncompressed, up to a page
-- (issue #28). A claim's batch of a few hundred ids (8 bytes each) passed
-- the default threshold of about 2 kB, so every claim compressed its ids and
-- moved them out of the row, and every settle of some of its members read
-- them back and did it again: Run acks a batch in parts. Larger batches are
-- still compressed and moved out, as before.
ALTER TABLE delivery_batch SET (toast_tuple_target = 8160);
