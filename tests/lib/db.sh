# tests/lib/db.sh — the test MariaDB, straight through the mariadb client
# (never through bindery's code).  Sourced after tests/lib/tap.sh.
#
#   sql "SELECT ..."             rows tab-separated, no header
#   sql_quote "$name"            a single-quoted SQL literal
#
# Connects over BINDERY_TEST_DB_SOCKET to BINDERY_TEST_DB_NAME (default
# bindery) as root, who connects over the socket without a password: tests
# plant states, create scratch databases and read the server's status, which
# the runtime account BINDERY_TEST_DB_USER (rows only, sql/grants.sql) may
# not.  Tests that mean to act as that account connect as it themselves.

# sql QUERY: run QUERY on the test database; tab-separated rows, no header.
sql() {
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
		-N -B "${BINDERY_TEST_DB_NAME:-bindery}" -e "$1"
}

# sql_quote TEXT: TEXT as a single-quoted SQL literal (names we generate are
# tame, but quote anyway).
sql_quote() {
	local s=${1//\\/\\\\}
	printf "'%s'" "${s//\'/\'\'}"
}
