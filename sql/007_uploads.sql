-- 007: resumable uploads (tus 1.0.0; doc/design.md "Resumable uploads").  An
-- upload resource is a pending intent (its registry row in blobs, and for
-- a create its pending document) whose bytes are uncommitted blocks of the
-- intent's blob.  The row here adds what a tus client negotiates: the
-- declared length, the owner, the bytes recorded so far (offset, the
-- number of blocks, the running SHA-256 state at that offset) and, for an
-- upload that replaces a document, which one and at which version.
--
-- The lease is the registry row's: expires_at = last progress +
-- upload_expiry, so the sweeper purges an abandoned upload like any stale
-- intent.  holder is the PATCH working on it now (NULL between PATCHes);
-- touched_at its heartbeat.  An upload's rows live exactly as long as its
-- registry row (ON DELETE CASCADE): dropped with an abandoned intent, or
-- with the blob once its document is replaced or deleted.
CREATE TABLE uploads (
	id           CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	blob_name    VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	document_id  BIGINT UNSIGNED NOT NULL,
	owner        VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	upload_length BIGINT UNSIGNED NOT NULL,
	content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	replace_version INT UNSIGNED NULL,	-- a replace's If-Match version; NULL: none
	recorded     BIGINT UNSIGNED NOT NULL DEFAULT 0,	-- bytes in recorded blocks
	nblocks      INT UNSIGNED NOT NULL DEFAULT 0,
	hash_state   VARCHAR(300) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (id),
	UNIQUE KEY uploads_blob (blob_name),
	CONSTRAINT uploads_blob_fk FOREIGN KEY (blob_name) REFERENCES blobs (name) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The blocks a PATCH staged and recorded, in order: each row is written
-- after its Put Block succeeded (after the PATCH's checksum verified, when
-- it carried one).  block_id is base64, one width for every block of the
-- blob; md5 lets a re-sent tail be checked against the recorded one.
-- Deleted when the document becomes ready.
CREATE TABLE upload_blocks (
	upload_id    CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	seq          INT UNSIGNED NOT NULL,
	block_id     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	size         BIGINT UNSIGNED NOT NULL,
	md5          CHAR(24) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	PRIMARY KEY (upload_id, seq),
	CONSTRAINT upload_blocks_fk FOREIGN KEY (upload_id) REFERENCES uploads (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = ascii;
