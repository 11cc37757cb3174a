#!/usr/bin/env bash
# The blob client's integration tests (test_blob) again, against storage in
# production's shape: Azurite over HTTPS at an account-host URL,
# https://devstoreaccount1.blob.localhost:PORT, its certificate verified
# against the CA ./dev test made for the run ([storage] ca_file).  Then the
# refusals: without that CA, and under a name the certificate does not
# carry, every call fails, and the message says why.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
bin=${top_builddir:-$here/../..}/tests/integration/test_blob
tool=${top_builddir:-$here/../..}/tests/tools/blobtool

need_stack BINDERY_TEST_TLS_BLOB_ENDPOINT BINDERY_TEST_TLS_CA BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
[ -x "$bin" ] && [ -x "$tool" ] || missing "test_blob and blobtool are not built"
case $BINDERY_TEST_TLS_BLOB_ENDPOINT in
https://*) ;;
*) bail_out "BINDERY_TEST_TLS_BLOB_ENDPOINT is not https: $BINDERY_TEST_TLS_BLOB_ENDPOINT" ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The whole of test_blob over TLS; its TAP lines become ours.
BINDERY_TEST_BLOB_ENDPOINT=$BINDERY_TEST_TLS_BLOB_ENDPOINT BINDERY_TEST_BLOB_CA_FILE=$BINDERY_TEST_TLS_CA \
	"$bin" >"$work/tap" 2>"$work/err"
rc=$?
total=0
plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$work/tap" | head -n 1)
while IFS= read -r line; do
	case $line in
	"ok "*"# SKIP"*) skip "tls: ${line#*# SKIP }" ;;
	"ok "*) pass "tls: ${line#ok [0-9]* - }"; total=$((total + 1)) ;;
	"not ok "*) fail "tls: ${line#not ok [0-9]* - }"; total=$((total + 1)) ;;
	esac
done <"$work/tap"
is "$rc" 0 "test_blob over TLS exits 0"
skipped=$(grep -c '^ok .*# SKIP' "$work/tap")
is "$((total + skipped))" "${plan:-none}" "test_blob over TLS ran every check of its plan"
while IFS= read -r l; do diag "$l"; done < <(tail -n 5 "$work/err")

# blobtool: one client call, with or without the CA, at an endpoint.
probe() { # ENDPOINT CA-OR-EMPTY
	BINDERY_TEST_BLOB_ENDPOINT=$1 BINDERY_TEST_BLOB_CA_FILE=$2 BLOBTOOL_CONTAINER=tls-probe-$$ \
		"$tool" mkcontainer >"$work/out" 2>&1
}
probe "$BINDERY_TEST_TLS_BLOB_ENDPOINT" "$BINDERY_TEST_TLS_CA"
ok $? "with the stack's CA the TLS Azurite answers ($(head -c 200 "$work/out"))"
probe "$BINDERY_TEST_TLS_BLOB_ENDPOINT" ""
isnt "$?" 0 "without the stack's CA (the system store only) the call fails"
like "$(cat "$work/out")" "certificate was refused" "... and says the certificate was refused"
port=${BINDERY_TEST_TLS_BLOB_ENDPOINT##*:}
probe "https://wrongname.localhost:$port/devstoreaccount1" "$BINDERY_TEST_TLS_CA"
isnt "$?" 0 "a host name the certificate does not carry fails, CA or not"
like "$(cat "$work/out")" "does not match" "... and says the name does not match"
BINDERY_TEST_BLOB_ENDPOINT=$BINDERY_TEST_TLS_BLOB_ENDPOINT BINDERY_TEST_BLOB_CA_FILE=$BINDERY_TEST_TLS_CA \
	BLOBTOOL_CONTAINER=tls-probe-$$ "$tool" rmcontainer >/dev/null 2>&1
done_testing
