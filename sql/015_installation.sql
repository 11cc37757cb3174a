-- 015: the installation's id (doc/design.md, "Blobs that describe
-- themselves").  Every blob bindery commits names its installation and its
-- document in its metadata, so that after the database is restored from an
-- older backup `bindery audit --repair --adopt` can tell the documents
-- acknowledged since, and never takes a blob of another installation that
-- shares the container under a prefix of its own.
--
-- One row.  The id is 32 random hex digits that bindery itself draws (from
-- GnuTLS's generator) and inserts the first time any of its programs needs
-- it (INSERT IGNORE: the first writer wins, everybody reads that one); a
-- backup carries it, so a restored database keeps its installation.
CREATE TABLE installation (
	id           TINYINT UNSIGNED NOT NULL,
	install_id   CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (id)
) ENGINE = InnoDB;
