-- 014: who holds a tus upload, as the database itself can tell (doc/api.md,
-- "Resumable uploads").  A PATCH takes an upload by setting blobs.holder; a
-- PATCH whose process died used to keep it until its heartbeat had been
-- silent for heartbeat + request_deadline (5.5 minutes by default), and
-- every client retry meanwhile got 409 upload_busy.
--
-- holder_session: the database session of the PATCH that holds the row,
-- "HOST:PORT/USER/CONNECTION_ID" of the server it is connected to.  A
-- process that dies loses its session at once, so a new PATCH connected to
-- the same server as the same user (who sees every session of that user in
-- information_schema.PROCESSLIST) takes the upload over as soon as the
-- holder's session is gone; from another server (a Galera node) it waits
-- for the heartbeat window as before.  The old holder, if it was alive
-- after all (it reconnected), is fenced by holder at its next step.
-- NULL while no PATCH holds the row.
ALTER TABLE blobs
	ADD COLUMN holder_session VARCHAR(400) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL AFTER holder;
