# lib/registry: MariaDB (prepared statements only), the documents, blobs and
# idempotency rows, the sweeper's claims, migrations.  It knows no storage.
lib_libbindery_a_SOURCES += lib/registry/db.c lib/registry/db.h \
	lib/registry/migrate.c lib/registry/migrate.h \
	lib/registry/doc_row.h \
	lib/registry/blobs_db.c lib/registry/blobs_db.h \
	lib/registry/idem_db.c lib/registry/idem_db.h \
	lib/registry/docs_db.c lib/registry/docs_db.h \
	lib/registry/sweep_db.c lib/registry/sweep_db.h \
	lib/registry/audit_db.c lib/registry/audit_db.h \
	lib/registry/uploads_db.c lib/registry/uploads_db.h \
	lib/registry/direct_db.c lib/registry/direct_db.h \
	lib/registry/status_db.c lib/registry/status_db.h \
	lib/registry/install_db.c lib/registry/install_db.h \
	lib/registry/adopt_db.c lib/registry/adopt_db.h \
	lib/registry/events_db.c lib/registry/events_db.h \
	lib/registry/quota_db.c lib/registry/quota_db.h \
	lib/registry/concat_db.c lib/registry/concat_db.h
dist_sql_DATA += sql/001_schema.sql sql/002_idempotency_blob_index.sql \
	sql/003_idempotency_answer_fields.sql \
	sql/004_fencing.sql sql/005_idempotency_fingerprint.sql \
	sql/006_leases.sql sql/007_uploads.sql sql/008_blob_etag.sql sql/009_ready_sequence.sql \
	sql/010_direct_uploads.sql sql/011_sweep_locks.sql \
	sql/012_sweep_runs.sql sql/013_direct_grants.sql \
	sql/014_holder_session.sql sql/015_installation.sql sql/016_events.sql \
	sql/017_quota.sql sql/018_quarantine.sql sql/019_tus_concat.sql
# Not a migration (migrate applies NNN_name.sql only): the database accounts'
# runbook template, installed beside them for the admin (doc/deploying.md).
dist_sql_DATA += sql/grants.sql

UNIT_TESTS += tests/unit/sql_literal.sh
EXTRA_DIST += tests/unit/sql_literal.sh
INTEGRATION_TESTS += tests/integration/migrate.sh
EXTRA_DIST += tests/integration/migrate.sh
INTEGRATION_TESTS += tests/integration/grants.sh
EXTRA_DIST += tests/integration/grants.sh
# tests/lib/db.sh's sql_session (one client for many queries) answers as a client each would.
INTEGRATION_TESTS += tests/integration/sql_session.sh
EXTRA_DIST += tests/integration/sql_session.sh
check_PROGRAMS += tests/integration/test_db
INTEGRATION_TESTS += tests/integration/test_db
# What an operator watches: the figures of `bindery status` and /metrics, the
# sweep run history.
check_PROGRAMS += tests/integration/test_status
INTEGRATION_TESTS += tests/integration/test_status
