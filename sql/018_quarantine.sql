-- 018: quarantine (doc/design.md, "Admission"; `bindery scan --quarantine`).
-- A ready document a rescan found infected after a signature update is
-- taken out of every read (lists, counts, by id, by name, its bytes) while
-- its row, its registry row and its blob stay exactly as they were, so an
-- administrator decides what becomes of it: `bindery scan --release ID`
-- puts it back, its owner may still delete it.  A column, not a status:
-- the document stays 'ready' to the sweeper, the audit, the outbox and
-- adoption, whose rules are about bytes and rows, and none of which
-- quarantine changes.  NULL: not quarantined; otherwise since when.
--
-- The list and its count read only documents that are not quarantined:
-- (quarantined_at, ready_seq) keeps both index range scans in list order
-- (every visible document has quarantined_at NULL, so within that value
-- the index is ready_seq's order), and the page's count of every visible
-- document reads the index alone, as it did on documents_ready_seq.
ALTER TABLE documents
	ADD COLUMN quarantined_at DATETIME(6) NULL AFTER ready_seq,
	ADD KEY documents_visible (quarantined_at, ready_seq);
