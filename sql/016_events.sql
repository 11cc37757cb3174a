-- 016: events (doc/design.md, "Events"): a transactional outbox of
-- document.ready and document.deleted, written in the same transaction as
-- the change it reports, and its delivery state per receiver.
--
-- events: one row per change.  webhook_id is random (receivers dedupe on
-- it, so it must survive a restore that rewinds AUTO_INCREMENT); seq orders
-- a document's events (its version; a deletion one past the last version),
-- never id, which Galera interleaves across nodes.  body is the JSON sent,
-- fixed when the change commits; blob_name scopes a sweep's --prefix.
CREATE TABLE events (
	id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	webhook_id   CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	document_id  BIGINT UNSIGNED NOT NULL,
	seq          INT UNSIGNED NOT NULL,
	type         VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	blob_name    VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	body         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (id),
	UNIQUE KEY events_webhook_id (webhook_id),
	KEY events_document (document_id, seq)
) ENGINE = InnoDB;

-- event_deliveries: one row per event and receiver (endpoint: the hex
-- SHA-256 of its URL).  A sender claims a row by conditional UPDATE
-- (claimed_by, claimed_until) and sends nothing while an earlier event of
-- the same document is pending for the same receiver.
CREATE TABLE event_deliveries (
	event_id      BIGINT UNSIGNED NOT NULL,
	endpoint      CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	state         ENUM('pending', 'delivered', 'dead') NOT NULL DEFAULT 'pending',
	attempts      INT UNSIGNED NOT NULL DEFAULT 0,
	next_at       DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	claimed_by    CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
	claimed_until DATETIME(6) NULL,
	last_status   INT NULL,
	last_error    VARCHAR(255) NULL,
	delivered_at  DATETIME(6) NULL,
	PRIMARY KEY (event_id, endpoint),
	KEY event_deliveries_due (endpoint, state, next_at)
) ENGINE = InnoDB;

-- event_endpoints: a receiver that answered 410 Gone is stopped until an
-- operator resumes it (bindery events --resume URL).
CREATE TABLE event_endpoints (
	endpoint    CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	url         VARCHAR(2048) NOT NULL,
	stopped_at  DATETIME(6) NULL,
	PRIMARY KEY (endpoint)
) ENGINE = InnoDB;
