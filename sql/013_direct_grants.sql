-- 013: what a direct upload's SAS may still do, and which route a key
-- started (doc/api.md, "Direct uploads").
--
-- A create-only SAS (sp=c) can create its blob again once the blob is
-- gone: if the outbox deleted a finalized direct blob while a SAS granted
-- for its name was still valid, a client could put back a blob no row
-- names.  So every grant is recorded on the blob's row and no direct blob
-- is retired before the latest grant has expired:
--   sas_granted  the signing time of the latest grant (Unix seconds, the
--                responder's clock); a replayed finished intent answers
--                with the URL signed at exactly this time, never a new one
--   sas_expires  that grant's expiry (Unix seconds, the same clock); the
--                outbox's retire_after is at least sas_expires + the
--                storage clock skew allowed (300 s)
-- Both are NULL on rows no SAS was granted for (every server upload).
--
-- idempotency_keys.route: the route of the request that wrote the key.  A
-- key of one route is never resumed or replayed by another: a server
-- create never takes over a direct intent, whose bytes the client wrote.
ALTER TABLE blobs
	ADD COLUMN sas_granted BIGINT NULL AFTER etag,
	ADD COLUMN sas_expires BIGINT NULL AFTER sas_granted;

ALTER TABLE idempotency_keys
	ADD COLUMN route ENUM('server', 'direct') NOT NULL DEFAULT 'server' AFTER content_type;

UPDATE idempotency_keys k JOIN blobs b ON b.name = k.blob_name
SET k.route = 'direct' WHERE b.route = 'direct';

-- Rows written before this file have no record of their grants.  A grant
-- was valid at most [upload] direct_sas_lifetime (at most a day) after
-- the latest request that could make one, so a day from now covers every
-- SAS already handed out; the outbox keeps those blobs that much longer.
UPDATE blobs
SET sas_granted = UNIX_TIMESTAMP(),
	sas_expires = UNIX_TIMESTAMP() + 86400
WHERE route = 'direct';

UPDATE blobs
SET retire_after = GREATEST(retire_after, FROM_UNIXTIME(sas_expires + 300))
WHERE route = 'direct' AND state = 'retired';
