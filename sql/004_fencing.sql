-- 004: fencing (doc/design.md "The claim and the fence").  holder is the
-- attempt id of whoever last created, resumed or claimed the row: a
-- responder's fresh random id, or a sweeper's claimer id (compensation
-- claims under its own holder).  Every later transition of a pending row
-- is conditional on it and must touch one row, so a request that lost its
-- row to a resume or a sweeper learns so and touches nothing.  Rows from
-- before this migration have none (NULL): no live request of this version
-- holds them, and a resume or a sweeper's claim writes one.  Transitions
-- are by primary key, so holder needs no index of its own.  The lease
-- clock stays touched_at (an idempotent resume takes a row over once
-- touched_at is older than request_deadline; the sweeper once it is older
-- than sweep_cutoff).
ALTER TABLE blobs
	ADD COLUMN holder VARCHAR(96) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER lease_until;
