-- 006: leases (doc/design.md "Leases").  A pending row
-- carries expires_at, the end of its holder's lease: whoever creates,
-- renews or takes over a pending row writes now + its lease (a streaming
-- upload: now + sweep_cutoff, renewed while bytes make progress).  The
-- sweeper claims a pending row, and an idempotent resume takes one over,
-- only once expires_at has passed; touched_at stays the time of the last
-- renewal (audit's age, and `bindery sweep --older-than N`, which treats
-- rows idle for N seconds as expired).
--
-- Existing pending rows get touched_at + 900 s (the default sweep_cutoff):
-- the cutoff they were swept by until now, unless an operator shortened
-- it.  The column default gives a row inserted by an older bindery during
-- an upgrade the same lease from its insert.  Rows in other states keep
-- no lease here (NULL).
ALTER TABLE blobs
	ADD COLUMN expires_at DATETIME(6) NULL DEFAULT (NOW(6) + INTERVAL 900 SECOND) AFTER touched_at,
	ADD KEY blobs_state_expires (state, expires_at);

UPDATE blobs SET expires_at = IF(state = 'pending', touched_at + INTERVAL 900 SECOND, NULL);
