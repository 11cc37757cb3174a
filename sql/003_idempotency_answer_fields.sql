-- 003: an Idempotency-Key's final answer is kept as the document's fields,
-- not as rendered JSON: the responder renders JSON and the ETag itself, the
-- same way for a first answer and for a replay.  Answers recorded as JSON
-- before this migration are converted; a row that cannot be converted keeps
-- answer_version NULL, and its retry re-reads the document instead.  The
-- response column is no longer written; older binaries that read it fall
-- back to re-reading the document as well.
ALTER TABLE idempotency_keys
	ADD COLUMN answer_size BIGINT UNSIGNED NULL AFTER status_code,
	ADD COLUMN answer_content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL
		AFTER answer_size,
	ADD COLUMN answer_created_at DATETIME(6) NULL AFTER answer_content_type,
	ADD COLUMN answer_version INT UNSIGNED NULL AFTER answer_created_at;

-- The recorded JSON's etag is "ID-VERSION" (quotes included).
UPDATE idempotency_keys SET
	answer_size = JSON_VALUE(response, '$.size'),
	answer_content_type = JSON_VALUE(response, '$.content_type'),
	answer_created_at = STR_TO_DATE(JSON_VALUE(response, '$.created_at'), '%Y-%m-%dT%H:%i:%s.%fZ'),
	answer_version = SUBSTRING_INDEX(TRIM(BOTH '"' FROM JSON_VALUE(response, '$.etag')), '-', -1)
WHERE status_code IS NOT NULL AND response IS NOT NULL AND JSON_VALID(response)
	AND JSON_VALUE(response, '$.etag') REGEXP '^"[0-9]+-[0-9]+"$';
