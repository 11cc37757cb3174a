-- 012: the sweeper's history (issue 15, "Seeing the sweeper").  Every
-- `bindery sweep` that is not a dry run writes a row as it starts and
-- completes it as it ends, so `bindery status`, /healthz and /metrics can
-- tell a sweeper that runs from one cron stopped calling.  A row without
-- finished_at is a run under way, or one that died before it could say.
--
-- result: ok (ran to the end; items left for a human are counted in
-- problems, since they would stay there run after run), partial (ran to
-- the end but deferred items to a later run after storage or database
-- trouble), failed (could not start, or was cut short).  A run that
-- found --lock held by another writes no row: the holder writes its own.
-- Times are the database's clock, so the age of a run is the same seen
-- from every host.  Sweep keeps the table bounded: it deletes runs older
-- than [sweep] history days, but never the newest ok one.
--
-- IF NOT EXISTS: a table created by hand (or a half-applied file) does
-- not stop the migration from recording itself.
CREATE TABLE IF NOT EXISTS sweep_runs (
	id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
	started_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	finished_at    DATETIME(6) NULL,
	result         ENUM('ok', 'partial', 'failed') NULL,
	host           VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	pid            INT UNSIGNED NOT NULL,
	lock_name      VARCHAR(64) NULL,
	holder         CHAR(32) NULL,
	dropped        BIGINT UNSIGNED NOT NULL DEFAULT 0,
	deleted        BIGINT UNSIGNED NOT NULL DEFAULT 0,
	purged         BIGINT UNSIGNED NOT NULL DEFAULT 0,
	rolled_forward BIGINT UNSIGNED NOT NULL DEFAULT 0,
	rolled_back    BIGINT UNSIGNED NOT NULL DEFAULT 0,
	outbox         BIGINT UNSIGNED NOT NULL DEFAULT 0,
	taken_over     BIGINT UNSIGNED NOT NULL DEFAULT 0,
	keys_expired   BIGINT UNSIGNED NOT NULL DEFAULT 0,
	problems       BIGINT UNSIGNED NOT NULL DEFAULT 0,
	deferred       BIGINT UNSIGNED NOT NULL DEFAULT 0,
	lease_expired  BIGINT UNSIGNED NOT NULL DEFAULT 0,
	PRIMARY KEY (id),
	KEY sweep_runs_started (started_at),
	-- the last successful run: the newest ok row
	KEY sweep_runs_result (result, finished_at)
) ENGINE = InnoDB DEFAULT CHARSET = ascii;
