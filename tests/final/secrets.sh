#!/usr/bin/env bash
# Runs last: every log the test run produced (the web servers' error logs,
# which hold bindery's stderr, their access logs, and each test's own log)
# is searched for the account key, the database password, the write tokens
# and SAS signatures.  None may appear.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"

need_stack BINDERY_TEST_VAR BINDERY_TEST_BLOB_KEY
build=${top_builddir:-.}

# Azurite's own logs (plain and TLS) are the storage service's, not ours;
# everything else counts, in every lane ./dev test ran (one set of secrets
# serves them all).
lane_logs=()
for lane in ${BINDERY_TEST_LANES:-$BINDERY_TEST_VAR}; do
	lane_logs+=("$lane/log")
done
mapfile -t logs < <(find "${lane_logs[@]}" "$build/tests" -type f \( -name '*.log' -o -name '*.out' \) \
	! -name 'azurite.log' ! -name 'azurite-tls.log' ! -name 'secrets.log' 2>/dev/null)
ok '[ "${#logs[@]}" -gt 10 ]' "searching ${#logs[@]} log files"
request_logs=()
for lane in "${lane_logs[@]}"; do
	request_logs+=("$lane"/lighttpd* "$lane"/apache*)
done
ok '[ -n "$(cat "${request_logs[@]}" 2>/dev/null | grep -m1 "req=")" ]' \
	"the responder's request log is among them"

search() { # NEEDLE DESC
	local hits
	hits=$(grep -lF -- "$1" "${logs[@]}" 2>/dev/null | head -n 5 | tr '\n' ' ')
	is "$hits" "" "$2"
}
search "$BINDERY_TEST_BLOB_KEY" "the account key appears in no log"
search "${BINDERY_TEST_BLOB_KEY:0:20}" "... not even its first 20 characters"
[ -z "${BINDERY_TEST_DB_PASSWORD:-}" ] || search "$BINDERY_TEST_DB_PASSWORD" "the database password appears in no log"
[ -z "${BINDERY_TEST_DB_MIGRATE_PASSWORD:-}" ] ||
	search "$BINDERY_TEST_DB_MIGRATE_PASSWORD" "the migration account's password appears in no log"
search "$BINDERY_TEST_TOKEN" "the write token appears in no log"
[ -z "${BINDERY_TEST_TOKEN_OTHER:-}" ] || search "$BINDERY_TEST_TOKEN_OTHER" "the second token appears in no log"
# A SAS signature is the sig= parameter (base64, percent-encoded).
hits=$(grep -lE 'sig=[A-Za-z0-9%+/=]{20,}' "${logs[@]}" 2>/dev/null | head -n 5 | tr '\n' ' ')
is "$hits" "" "no SAS signature appears in any log"
done_testing
