-- 010: direct uploads (doc/design.md "Direct uploads", issue
-- 13).  A direct intent is a create whose bytes the client sends straight
-- to storage with a create-only SAS; the server never sees them until
-- finalize reads them back.  The sweeper must tell such an intent apart:
-- it rolls one forward only when finalize recorded what it verified and
-- the blob still carries that ETag, and deletes it otherwise with If-Match
-- (the client sets the blob's tags, so the pending tag guard proves
-- nothing).
--
-- route: how the bytes reach storage ('server': through bindery, the
-- default of every row written so far; 'direct': from the client).
-- direct_size / direct_sha256: what the client declared at create (the
-- sha256 is optional).  etag: the storage ETag finalize verified, written
-- in the same statement as blobs.size and blobs.sha256, so the triple is
-- recorded whole or not at all; NULL until then.
ALTER TABLE blobs
	ADD COLUMN route ENUM('server', 'direct') NOT NULL DEFAULT 'server' AFTER purpose,
	ADD COLUMN direct_size BIGINT UNSIGNED NULL AFTER sha256,
	ADD COLUMN direct_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER direct_size,
	ADD COLUMN etag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER direct_sha256;
