#!/usr/bin/env bash
# The two ways a caller is known and the read switch, through the responder
# in CGI mode: REMOTE_USER from the web server's own authentication (it wins
# over a bearer token), and reads_need_auth = true.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"

[ -n "${BINDERY_CONFIG:-}" ] && [ -n "${BINDERY_TEST_BIN:-}" ] && [ -n "${BINDERY_TEST_TOKEN:-}" ] ||
	skip_all "no test stack (./dev test starts one)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cgi() { # CONF METHOD URI [VAR=VALUE...] < body: prints the status code
	cgi_req "$@" >"$work/out"
	sed -n 's/^Status: \([0-9]*\).*/\1/p' "$work/out"
}
n="auth-$$-$RANDOM"

# REMOTE_USER: the web server vouches for the caller; documents are theirs.
is "$(cgi "$BINDERY_CONFIG" POST "/documents?name=$n" REMOTE_USER=alice CONTENT_TYPE=text/plain \
	CONTENT_LENGTH=5 <<<"alice")" 201 "a write with REMOTE_USER is accepted"
id=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$work/out")
is "$(cgi "$BINDERY_CONFIG" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)" \
	403 "the token's owner may not delete alice's document"
is "$(cgi "$BINDERY_CONFIG" DELETE "/documents/$id" REMOTE_USER=bob </dev/null)" 403 "nor may bob"
is "$(cgi "$BINDERY_CONFIG" DELETE "/documents/$id" REMOTE_USER=alice \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)" 204 "alice may (REMOTE_USER wins over a token)"

# reads_need_auth = true: anonymous reads are refused, known callers read everything.
sed -e 's/^reads_need_auth = .*/reads_need_auth = true/' "$BINDERY_CONFIG" >"$work/conf"
grep -q '^reads_need_auth = true' "$work/conf" || sed -i 's/^\[auth\]$/[auth]\nreads_need_auth = true/' "$work/conf"
chmod 600 "$work/conf"
is "$(cgi "$work/conf" POST "/documents?name=$n-r" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	CONTENT_TYPE=text/plain CONTENT_LENGTH=4 <<<"read")" 201 "a document to read"
id=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$work/out")
for path in / /documents "/documents/$id" "/documents/$id/content"; do
	is "$(cgi "$work/conf" GET "$path" </dev/null)" 401 "anonymous GET $path is 401"
done
is "$(cgi "$work/conf" GET "/documents/$id/content" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)" \
	200 "with a token it reads"
is "$(cgi "$work/conf" GET "/documents/$id" REMOTE_USER=carol </dev/null)" 200 "any authenticated caller reads"
is "$(cgi "$work/conf" GET /healthz </dev/null)" 200 "healthz stays open for monitors"
is "$(cgi "$work/conf" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)" 204 \
	"cleaned up"
done_testing
