#!/usr/bin/env bash
# Least privilege (sql/grants.sql): the test stack runs as the
# production accounts.  The runtime account (BINDERY_CONFIG's) holds rows
# only: CREATE, ALTER, DROP, CREATE INDEX, temporary tables, LOCK TABLES and
# TRUNCATE are refused; `bindery migrate` with its file fails saying which
# account to use; the migration account's file migrates; the responders
# behind lighttpd and Apache really hold their connections as the runtime
# account; sweep and audit run with it.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_DB_USER BINDERY_TEST_DB_PASSWORD BINDERY_TEST_DB_MIGRATE_USER \
	BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN
command -v ss >/dev/null || missing "ss (iproute2)"
bindery=$BINDERY_TEST_BIN/bindery
db=${BINDERY_TEST_DB_NAME:-bindery}
runtime=$BINDERY_TEST_DB_USER
migrator=$BINDERY_TEST_DB_MIGRATE_USER
probe=grants_probe_$$
work=$(mktemp -d)
trap 'rm -rf "$work"; sql "DROP TABLE IF EXISTS $probe, ${probe}_new" 2>/dev/null' EXIT

# as_runtime QUERY: QUERY as the runtime account (its password in the
# environment, never on the command line); the client's messages on stdout.
as_runtime() {
	MYSQL_PWD=$BINDERY_TEST_DB_PASSWORD mariadb --no-defaults --protocol=socket \
		--socket="$BINDERY_TEST_DB_SOCKET" -u"$runtime" -N -B "$db" -e "$1" 2>&1
}

# ---- the stack's configuration files name the two accounts ----
is "$(sed -n 's/^user = //p' "$BINDERY_CONFIG")" "$runtime" "BINDERY_CONFIG connects as the runtime account"
is "$(sed -n 's/^user = //p' "$BINDERY_TEST_MIGRATE_CONFIG")" "$migrator" \
	"BINDERY_TEST_MIGRATE_CONFIG connects as the migration account"
isnt "$runtime" "$migrator" "... and they are two accounts"

# ---- what each account holds ----
grants=$(sql "SHOW GRANTS FOR '$runtime'@'127.0.0.1'" | grep -v '^GRANT USAGE ON \*\.\*')
is "$grants" "GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.* TO \`$runtime\`@\`127.0.0.1\`" \
	"the runtime account holds SELECT, INSERT, UPDATE, DELETE on $db and nothing else"
mgrant=$(sql "SHOW GRANTS FOR '$migrator'@'127.0.0.1'" | grep " ON \`$db\`\.\* TO ")
for priv in SELECT INSERT UPDATE DELETE CREATE ALTER INDEX REFERENCES; do
	like "$mgrant" "^GRANT .*\<$priv\>.* ON " "the migration account holds $priv on $db"
done
unlike "$mgrant" '\<(DROP|ALL PRIVILEGES|GRANT OPTION)\>' "... but no DROP, ALL or GRANT OPTION there"

# ---- rows: yes ----
sql "CREATE TABLE $probe (id INT PRIMARY KEY, v INT NOT NULL) ENGINE = InnoDB" || bail_out "cannot create $probe as root"
out=$(as_runtime "INSERT INTO $probe VALUES (1, 1); UPDATE $probe SET v = 2 WHERE id = 1;
	SELECT v FROM $probe WHERE id = 1; DELETE FROM $probe WHERE id = 1; SELECT COUNT(*) FROM $probe")
is "$out" $'2\n0' "the runtime account inserts, updates, selects and deletes rows"

# ---- DDL and locks: no ----
refused() { # DESC SQL
	local out
	out=$(as_runtime "$2")
	like "$out" 'denied' "the runtime account may not $1 ($(printf '%s' "$out" | grep -o 'ERROR.*' | head -c 120))"
}
refused "CREATE TABLE" "CREATE TABLE ${probe}_new (id INT PRIMARY KEY)"
refused "ALTER TABLE" "ALTER TABLE $probe ADD COLUMN w INT"
refused "ALTER a bindery table" "ALTER TABLE documents ADD COLUMN w INT"
refused "DROP TABLE" "DROP TABLE $probe"
refused "CREATE INDEX" "CREATE INDEX ${probe}_v ON $probe (v)"
refused "CREATE TEMPORARY TABLE" "CREATE TEMPORARY TABLE ${probe}_tmp (id INT)"
refused "LOCK TABLES" "LOCK TABLES documents READ"
refused "TRUNCATE" "TRUNCATE TABLE $probe"
is "$(sql "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = '$probe'")" 2 \
	"... and $probe still has its two columns"
is "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = '${probe}_new'")" 0 \
	"... and no table was created"

# ---- migrate: the runtime file is refused with a clear message ----
"$bindery" -c "$BINDERY_CONFIG" migrate >"$work/rt.out" 2>&1
is "$?" 77 "migrate with the runtime account's file exits 77 (EX_NOPERM: retrying cannot help)"
out=$(cat "$work/rt.out")
like "$out" 'CREATE command denied' "... quoting the server's refusal"
like "$out" "lacks the privileges migrations need.*migration account's configuration" \
	"... and saying to run it with the migration account's file"
unlike "$out" "$BINDERY_TEST_DB_PASSWORD" "... without the password"
"$bindery" -c "$BINDERY_TEST_MIGRATE_CONFIG" -v migrate >"$work/mig.out" 2>&1
is "$?" 0 "migrate with the migration account's file exits 0 ($(head -c 200 "$work/mig.out"))"

# ---- sweep and audit run with the runtime file ----
BINDERY_LOG_STDERR=1 "$bindery" -c "$BINDERY_CONFIG" sweep --prefix "grants-$$-" >"$work/sweep.out" 2>&1
is "$?" 0 "sweep runs as the runtime account ($(head -c 200 "$work/sweep.out"))"
"$bindery" -c "$BINDERY_CONFIG" audit --prefix "grants-$$-" >"$work/audit.out" 2>&1
is "$?" 0 "audit runs as the runtime account ($(head -c 200 "$work/audit.out"))"

# ---- the responders hold their connections as the runtime account ----
# A FastCGI responder keeps its connection between requests: after one
# request through each server, every connection the server's bindery.fcgi
# processes hold (found by the client port in PROCESSLIST, its owner by ss)
# is the runtime account's.
for url in "$BINDERY_TEST_LIGHTTPD_URL" "$BINDERY_TEST_APACHE_URL"; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -m 30 -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"$url/documents?limit=1")
	is "$code" 200 "a list request through $url"
done
fcgi_users=
while IFS=$'\t' read -r user host; do
	port=${host##*:}
	case $port in '' | *[!0-9]*) continue ;; esac
	if ss -Htnp "( sport = :$port )" 2>/dev/null | grep -q '"bindery.fcgi"'; then
		fcgi_users="$fcgi_users $user"
	fi
done < <(sql "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE DB = '$db' AND HOST LIKE '127.0.0.1:%'")
ok '[ -n "$fcgi_users" ]' "bindery.fcgi processes hold database connections (as:$fcgi_users)"
unlike "$(printf '%s\n' $fcgi_users | sort -u)" "^($migrator|root)\$" "... none as the migration account or root"
is "$(printf '%s\n' $fcgi_users | sort -u)" "$runtime" "... all as the runtime account"
done_testing
