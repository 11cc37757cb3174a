-- 008: reads are pinned to the bytes that were committed (doc/design.md
-- "Conditional reads").  blob_etag is the storage ETag of the
-- document's committed blob, written in the same statement that makes the
-- document ready or points it at a replace's blob (and by the sweeper's
-- roll forward); every read of the blob sends If-Match with it, so bytes
-- changed out of band (through a SAS still valid, or by hand) are never
-- served, and `bindery audit` reports the document.  Set Blob Tags leaves
-- a blob's ETag as it is (checked by tests/integration/test_blob), so the
-- tag flip after the commit does not move it.  Documents made ready
-- before this migration have none (NULL): their reads are not pinned.
ALTER TABLE documents
	ADD COLUMN blob_etag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER sha256;
