-- 019: the tus concatenation extension (doc/design.md, "Resumable uploads:
-- concatenation").  A partial upload is a pending intent of its own: a
-- registry row of purpose 'partial' (no document: it has no name until a
-- final names it), its own blob, the lease machinery of any upload.  Once
-- its PATCHes reach its length its block list is committed create-only,
-- tagged pending, and partial_etag records that blob's ETag: from then on
-- it is complete.  A final claims its partials by one conditional UPDATE
-- each (final_id, from NULL, on the same owner's complete partials) inside
-- the transaction that writes its own intent, and lists them (partials:
-- their ids in order, space-separated) so that a repeat of the same final
-- is recognised.  Once the final's document is ready, each partial's blob
-- is deleted guarded by its ETag and consumed_at is set; the row stays and
-- answers HEAD as complete until its lease ends and the sweeper drops it.
ALTER TABLE blobs
	MODIFY COLUMN purpose ENUM('create', 'replace', 'partial') NOT NULL;

ALTER TABLE uploads
	ADD COLUMN partial_etag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER hash_state,
	ADD COLUMN final_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER partial_etag,
	ADD COLUMN consumed_at DATETIME(6) NULL AFTER final_id,
	ADD COLUMN partials VARCHAR(2200) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER consumed_at,
	ADD KEY uploads_final (final_id);
