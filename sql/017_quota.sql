-- 017: per-owner quotas (doc/design.md, "Quotas"): what each owner has
-- stored and what its uploads in flight have reserved.  Written only when
-- [quota] is configured; `bindery quota --recount` rebuilds it from the rows.
--
-- owner_usage: one row per owner.  bytes and documents count its ready
-- documents; reserved and pending its intents' reservations (creates counts
-- the intents that would add a document).  A reservation is one conditional
-- UPDATE of this row, so two uploads of one owner never both pass a limit,
-- on one server or on Galera (both write this row: certification lets one
-- through).
CREATE TABLE owner_usage (
	owner      VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	bytes      BIGINT UNSIGNED NOT NULL DEFAULT 0,
	documents  INT UNSIGNED NOT NULL DEFAULT 0,
	reserved   BIGINT UNSIGNED NOT NULL DEFAULT 0,
	pending    INT UNSIGNED NOT NULL DEFAULT 0,
	creates    INT UNSIGNED NOT NULL DEFAULT 0,
	PRIMARY KEY (owner)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- quota_reservations: what one intent (its blob name) reserved, until the
-- transaction that ends the intent (ready, abandoned, rolled back) settles
-- it and deletes the row: settled exactly once, whoever ends it.
CREATE TABLE quota_reservations (
	blob_name  VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	owner      VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
	bytes      BIGINT UNSIGNED NOT NULL,
	is_create  TINYINT(1) NOT NULL,
	created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (blob_name),
	KEY quota_reservations_owner (owner)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
