# tests/lib/db.sh — the test MariaDB, straight through the mariadb client
# (never through bindery's code).  Sourced after tests/lib/tap.sh.
#
#   sql "SELECT ..."             rows tab-separated, no header
#   sql_quote "$name"            a single-quoted SQL literal
#
# Connects over BINDERY_TEST_DB_SOCKET to BINDERY_TEST_DB_NAME (default
# bindery) as BINDERY_TEST_DB_USER with BINDERY_TEST_DB_PASSWORD (in the
# environment, never on the command line); without a user, as root, who
# connects over the socket without a password.

# sql QUERY: run QUERY on the test database; tab-separated rows, no header.
sql() {
	MYSQL_PWD=${BINDERY_TEST_DB_PASSWORD:-} mariadb --no-defaults --protocol=socket \
		--socket="$BINDERY_TEST_DB_SOCKET" -u"${BINDERY_TEST_DB_USER:-root}" \
		-N -B "${BINDERY_TEST_DB_NAME:-bindery}" -e "$1"
}

# sql_quote TEXT: TEXT as a single-quoted SQL literal (names we generate are
# tame, but quote anyway).
sql_quote() {
	local s=${1//\\/\\\\}
	printf "'%s'" "${s//\'/\'\'}"
}
