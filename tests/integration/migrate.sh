#!/usr/bin/env bash
# bindery migrate is idempotent and refuses a newer schema; configuration
# mistakes exit 78 naming file, line and key; the sweeper's and readers'
# queries are index range scans.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_DB_SOCKET
bindery=$BINDERY_TEST_BIN/bindery
# migrate runs as the migration account; the runtime one cannot (grants.sh)
mconf=$BINDERY_TEST_MIGRATE_CONFIG
export BINDERY_LOG_STDERR=1
work=$(mktemp -d)
trap 'rm -rf "$work"; sql "DELETE FROM schema_migrations WHERE version = 999" 2>/dev/null' EXIT

out=$("$bindery" -c "$mconf" -v migrate 2>&1); rc=$?
is "$rc" 0 "migrate on a migrated database exits 0"
like "$out" 'applied 0 migration' "... and applies nothing"
known=$(ls "$top_srcdir"/sql/[0-9][0-9][0-9]_*.sql | wc -l)
is "$(sql 'SELECT COUNT(*) FROM schema_migrations')" "$known" "every shipped migration is recorded once"
out=$("$bindery" -c "$mconf" migrate --dry-run 2>&1); rc=$?
is "$rc" 0 "migrate --dry-run exits 0"

sql "INSERT INTO schema_migrations (version, name) VALUES (999, '999_future.sql')"
out=$("$bindery" -c "$mconf" migrate 2>&1); rc=$?
isnt "$rc" 0 "a database newer than this bindery is refused"
like "$out" 'version 999 .*upgrade bindery' "... with a message that says so"
sql "DELETE FROM schema_migrations WHERE version = 999"

# Configuration errors: a line per problem naming file, line and key; exit 78.
printf '[database]\nsocket = /x\nuser = u\nname = n\n[limits]\nmax_upload = huge\n' >"$work/bad.conf"
out=$("$bindery" -c "$work/bad.conf" migrate 2>&1); rc=$?
is "$rc" 78 "a bad value exits 78 (EX_CONFIG)"
like "$out" "$work/bad.conf:6: \\[limits\\] max_upload: invalid value" "... naming file, line and key"
printf '[database]\nsokcet = /x\n' >"$work/typo.conf"
out=$("$bindery" -c "$work/typo.conf" migrate 2>&1); rc=$?
is "$rc" 78 "an unknown key exits 78"
# The message names the line and the section's keys, never the unknown text
# (it may be a piece of a secret that lost its indentation).
like "$out" 'typo.conf:2: \[database\]: unknown key; the keys of \[database\] are socket, ' "... naming its line and the keys"
unlike "$out" 'sokcet' "... without quoting it"
out=$("$bindery" -c "$work/missing.conf" migrate 2>&1); rc=$?
is "$rc" 78 "an unreadable file exits 78"
out=$(BINDERY_CONFIG="$work/bad.conf" "$BINDERY_TEST_BIN/bindery.fcgi" </dev/null 2>&1); rc=$?
is "$rc" 78 "the responder refuses the same file with 78"
like "$out" 'max_upload: invalid value' "... and the same message"
cp "$mconf" "$work/readable.conf"; chmod 644 "$work/readable.conf"
out=$("$bindery" -c "$work/readable.conf" migrate 2>&1)
like "$out" 'world-readable' "a world-readable config holding secrets draws a warning"

out=$("$bindery" --help 2>&1); rc=$?
is "$rc" 0 "--help exits 0"
like "$out" 'sweep' "... and lists the commands"
out=$("$bindery" frobnicate 2>&1); rc=$?
is "$rc" 64 "an unknown command exits 64 (EX_USAGE)"
out=$("$bindery" 2>&1); rc=$?
is "$rc" 64 "no command exits 64"
like "$out" '^bindery: no command given' "... saying so first"
like "$("$bindery" --version)" '^bindery [0-9]+\.[0-9]+\.[0-9]+$' "bindery --version prints PACKAGE_STRING"
like "$("$BINDERY_TEST_BIN/bindery.fcgi" --version)" '^bindery [0-9]+\.[0-9]+\.[0-9]+$' \
	"bindery.fcgi --version prints the same"

# Every subcommand: --help is its usage on stdout and exit 0.  The list is
# the one `bindery --help` shows, so a new command cannot go untested.
cli_commands='migrate sweep status audit lifecycle-policy check-account events quota scan cors'
is "$("$bindery" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' | tr '\n' ' ')" "$cli_commands " \
	"the commands --help lists are the ones tested here"
for cmd in $cli_commands; do
	"$bindery" -c "$BINDERY_CONFIG" "$cmd" --help >"$work/help.out" 2>"$work/help.err"
	is "$?" 0 "bindery $cmd --help exits 0"
	like "$(head -n 1 "$work/help.out")" "^usage: bindery $cmd( |\$)" "... with its usage on stdout"
	is "$(wc -c <"$work/help.err")" 0 "... and nothing on stderr"
done
# One usage error each: exit 64, a message naming the command, its usage.
usage_error() { # CMD ARG...
	"$bindery" -c "$BINDERY_CONFIG" "$@" >"$work/usage.out" 2>"$work/usage.err"
	is "$?" 64 "bindery $* exits 64 (EX_USAGE)"
	like "$(head -n 1 "$work/usage.err")" "^bindery $1: " "... with a message naming the command"
	like "$(tail -n +2 "$work/usage.err")" "usage: bindery $1( |\$)" "... then its usage"
	is "$(wc -c <"$work/usage.out")" 0 "... and nothing on stdout"
}
usage_error migrate extra
usage_error sweep --bogus
usage_error status extra
usage_error audit extra
usage_error lifecycle-policy extra
usage_error check-account extra
usage_error scan extra
usage_error scan --release 1 --quarantine
usage_error cors

# The queries that must stay cheap as tables grow use an index range.
explain() { sql "EXPLAIN $1" | awk -F'\t' '{print $4 "/" $6}'; }
is "$(explain "SELECT name FROM blobs WHERE state = 'pending' AND touched_at < NOW(6) - INTERVAL 900 SECOND ORDER BY touched_at LIMIT 500")" \
	"range/blobs_state_touched" "stale intents: a range scan on (state, touched_at)"
is "$(explain "SELECT name FROM blobs WHERE state = 'pending' AND expires_at < NOW(6) ORDER BY expires_at LIMIT 500")" \
	"range/blobs_state_expires" "expired leases: a range scan on (state, expires_at)"
is "$(explain "SELECT name FROM blobs WHERE state = 'retired' AND retire_after <= NOW(6) LIMIT 500")" \
	"range/blobs_state_retire" "the outbox: a range scan on (state, retire_after)"
is "$(explain "SELECT name FROM blobs WHERE state IN ('sweeping', 'deleting') AND lease_until < NOW(6) LIMIT 500")" \
	"range/blobs_state_lease" "expired claims: a range scan on (state, lease_until)"
is "$(explain "SELECT id FROM documents WHERE ready_seq > 0 ORDER BY ready_seq LIMIT 50")" \
	"range/documents_ready_seq" "a list page: a range scan on ready_seq"
# The reads' own (docs_db.c): quarantined documents (sql/018) left out.
like "$(explain "SELECT id FROM documents WHERE quarantined_at IS NULL AND ready_seq > 0 ORDER BY ready_seq LIMIT 50")" \
	'^range/documents_(visible|ready_seq)$' "a list page without quarantined documents: still a range scan"
is "$(explain "SELECT COUNT(*) FROM documents WHERE quarantined_at IS NULL AND ready_seq IS NOT NULL")" \
	"range/documents_visible" "the page's count of them: a range scan on (quarantined_at, ready_seq)"
# The sweeper's prune of finished Idempotency-Keys past the TTL (sweep_db.c).
is "$(explain "DELETE FROM idempotency_keys WHERE created_at < NOW(6) - INTERVAL 86400 SECOND
	AND status_code IS NOT NULL AND LEFT(blob_name, CHAR_LENGTH('')) = '' ORDER BY created_at LIMIT 500")" \
	"range/idempotency_created" "expired idempotency keys: a range scan on created_at"
done_testing
