# db: the MariaDB connection, migrations, and the documents/blobs registry.
lib_libbindery_a_SOURCES += lib/db.c lib/db.h lib/migrate.c lib/migrate.h \
	lib/docs_db.c lib/docs_db.h
dist_sql_DATA += sql/001_schema.sql sql/002_idempotency_blob_index.sql
UNIT_TESTS += tests/unit/sql_literal.sh
EXTRA_DIST += tests/unit/sql_literal.sh
INTEGRATION_TESTS += tests/integration/migrate.sh
EXTRA_DIST += tests/integration/migrate.sh
