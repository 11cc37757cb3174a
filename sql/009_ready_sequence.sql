-- 009: the list follows the order documents became ready (doc/design.md
-- "Smaller decisions").  A document's id is assigned at its intent, so a
-- resumable upload that finishes a day later has an old id: listed by id,
-- a pager whose cursor had passed that id would never see it.  ready_seq
-- is assigned in the transaction that makes the document ready, from one
-- counter row that transaction updates last: the row lock makes the
-- sequence follow commit order, so a later page (after=) can never be
-- overtaken by a document that commits with a smaller number.  A replace
-- keeps the document's place.  Pending documents have none (NULL).
--
-- Documents ready before this migration keep their order: ready_seq = id,
-- and the counter starts above every id, so the cursors clients already
-- hold (ids) go on working.
CREATE TABLE ready_counter (
	id  TINYINT UNSIGNED NOT NULL,
	n   BIGINT UNSIGNED NOT NULL,
	PRIMARY KEY (id)
) ENGINE = InnoDB;

ALTER TABLE documents
	ADD COLUMN ready_seq BIGINT UNSIGNED NULL AFTER status,
	ADD UNIQUE KEY documents_ready_seq (ready_seq);

UPDATE documents SET ready_seq = id WHERE status = 'ready';
INSERT INTO ready_counter (id, n) SELECT 1, COALESCE(MAX(id), 0) FROM documents;
