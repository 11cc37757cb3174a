-- 005: an Idempotency-Key's fingerprint includes the request's Content-Type
-- (same key, name and bytes with another type is another request: 422), and
-- every key whose document became ready holds its answer.
--
-- content_type is the request's, written with the key.  Older keys take it
-- from their recorded answer or, unfinished, from their document; a key
-- that knows none stays NULL and is not compared.
ALTER TABLE idempotency_keys
	ADD COLUMN content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER doc_name;

UPDATE idempotency_keys k LEFT JOIN documents d ON d.id = k.document_id AND d.blob_name = k.blob_name
SET k.content_type = COALESCE(k.answer_content_type, d.content_type);

-- From now on the answer is recorded in the transaction that makes the
-- document ready.  An older bindery recorded it afterwards, in a statement
-- of its own that a crash could skip; record those answers now, from the
-- documents still ready on the key's blob, so a retry after a later delete
-- or replace gets the answer instead of a fresh document.
UPDATE idempotency_keys k JOIN documents d ON d.id = k.document_id AND d.blob_name = k.blob_name
SET k.status_code = 201, k.sha256 = d.sha256, k.answer_size = d.size,
	k.answer_content_type = d.content_type, k.answer_created_at = d.created_at,
	k.answer_version = d.version
WHERE k.status_code IS NULL AND d.status = 'ready';
