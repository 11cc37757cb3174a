-- 001: documents, the blob registry (intents + deletion outbox), idempotency keys.
--
-- Names use utf8mb4_nopad_bin: "a.txt", "A.txt" and "a.txt " are three names.
-- Blob names are ASCII (prefix + 32 hex digits) and compared byte for byte.

CREATE TABLE documents (
	id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	name         VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	status       ENUM('pending', 'ready') NOT NULL,
	blob_name    VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	size         BIGINT UNSIGNED NULL,
	content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	sha256       CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
	owner        VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	version      INT UNSIGNED NOT NULL DEFAULT 1,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	updated_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (id),
	UNIQUE KEY documents_name (name),
	UNIQUE KEY documents_blob_name (blob_name),
	-- readers list ready documents in id order (keyset pagination)
	KEY documents_status_id (status, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Every blob bindery ever writes has a row here before its first byte is sent,
-- and keeps it until the blob is gone.  state:
--   pending    intent: upload in progress (touched_at is the owner's heartbeat)
--   committed  a document references it
--   retired    the deletion outbox: delete once retire_after has passed
--   sweeping   claimed from pending by a sweeper (lease_until)
--   deleting   claimed from retired by a sweeper (lease_until)
CREATE TABLE blobs (
	name         VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	document_id  BIGINT UNSIGNED NOT NULL,
	purpose      ENUM('create', 'replace') NOT NULL,
	state        ENUM('pending', 'committed', 'retired', 'sweeping', 'deleting') NOT NULL,
	size         BIGINT UNSIGNED NULL,
	sha256       CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	touched_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	retire_after DATETIME(6) NULL,
	claimed_by   VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
	lease_until  DATETIME(6) NULL,
	PRIMARY KEY (name),
	KEY blobs_document (document_id),
	-- the sweeper's three queries are range scans on these
	KEY blobs_state_touched (state, touched_at),
	KEY blobs_state_retire (state, retire_after),
	KEY blobs_state_lease (state, lease_until)
) ENGINE = InnoDB DEFAULT CHARSET = ascii;

-- Idempotency-Key: unique per owner.  blob_name is the intent the key started;
-- status_code/response hold the final answer once there is one.
CREATE TABLE idempotency_keys (
	owner        VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	idem_key     VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	document_id  BIGINT UNSIGNED NULL,
	blob_name    VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NULL,
	doc_name     VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	status_code  SMALLINT UNSIGNED NULL,
	response     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
	sha256       CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (owner, idem_key),
	KEY idempotency_created (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
