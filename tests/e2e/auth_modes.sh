#!/usr/bin/env bash
# The two ways a caller is known and the read switch, through the responder
# in CGI mode: REMOTE_USER from the web server's own authentication (it wins
# over a bearer token), and reads_need_auth = true.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

n="auth-$$-$RANDOM"
out=$work/out	# each answer, for cgi_run (tests/lib/http.sh); its Status in CGI_CODE

# REMOTE_USER: the web server vouches for the caller; documents are theirs.
cgi_run "$out" "$BINDERY_CONFIG" POST "/documents?name=$n" REMOTE_USER=alice CONTENT_TYPE=text/plain \
	CONTENT_LENGTH=5 <<<"alice"
is "$CGI_CODE" 201 "a write with REMOTE_USER is accepted"
id=$(jfield "$(<"$out")" id)
cgi_run "$out" "$BINDERY_CONFIG" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null
is "$CGI_CODE" 403 "the token's owner may not delete alice's document"
cgi_run "$out" "$BINDERY_CONFIG" DELETE "/documents/$id" REMOTE_USER=bob </dev/null
is "$CGI_CODE" 403 "nor may bob"
cgi_run "$out" "$BINDERY_CONFIG" DELETE "/documents/$id" REMOTE_USER=alice \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null
is "$CGI_CODE" 204 "alice may (REMOTE_USER wins over a token)"

# A REMOTE_USER the owner column cannot hold exactly: over
# 128 characters, or not UTF-8.  Stored, it would be a 500 (strict SQL) or cut
# into another user's name (lax SQL): it is a 403 JSON answer, nothing stored.
long_user=$(printf 'u%.0s' {1..129})
bad_user=$(printf 'caf\xe9')	# Latin-1, not UTF-8
for who in long bad; do
	if [ $who = long ]; then user=$long_user; else user=$bad_user; fi
	cgi_run "$out" "$BINDERY_CONFIG" POST "/documents?name=$n-$who" REMOTE_USER="$user" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH=5 <<<"user"
	is "$CGI_CODE" 403 "a $who REMOTE_USER is 403"
	is "$(jfield "$(cgi_body "$out")" error)" forbidden "... error forbidden, in JSON"
	is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$n-$who")")" 0 "... nothing stored"
done
at_max=${long_user:0:128}
cgi_run "$out" "$BINDERY_CONFIG" POST "/documents?name=$n-max" REMOTE_USER="$at_max" \
	CONTENT_TYPE=text/plain CONTENT_LENGTH=5 <<<"user"
is "$CGI_CODE" 201 "a 128-character REMOTE_USER is accepted"
id=$(jfield "$(<"$out")" id)
is "$(sql "SELECT CHAR_LENGTH(owner) FROM documents WHERE id = ${id:-0}")" 128 "... and stored whole"
cgi_run "$out" "$BINDERY_CONFIG" DELETE "/documents/${id:-0}" REMOTE_USER="$at_max" </dev/null
is "$CGI_CODE" 204 "... and may delete its document"

# reads_need_auth = true: anonymous reads are refused, known callers read everything.
sed -e 's/^reads_need_auth = .*/reads_need_auth = true/' "$BINDERY_CONFIG" >"$work/conf"
grep -q '^reads_need_auth = true' "$work/conf" || sed -i 's/^\[auth\]$/[auth]\nreads_need_auth = true/' "$work/conf"
chmod 600 "$work/conf"
cgi_run "$out" "$work/conf" POST "/documents?name=$n-r" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	CONTENT_TYPE=text/plain CONTENT_LENGTH=4 <<<"read"
is "$CGI_CODE" 201 "a document to read"
id=$(jfield "$(<"$out")" id)
for path in / /documents "/documents/$id" "/documents/$id/content"; do
	cgi_run "$out" "$work/conf" GET "$path" </dev/null
	is "$CGI_CODE" 401 "anonymous GET $path is 401"
done
cgi_run "$out" "$work/conf" GET "/documents/$id/content" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null
is "$CGI_CODE" 200 "with a token it reads"
cgi_run "$out" "$work/conf" GET "/documents/$id" REMOTE_USER=carol </dev/null
is "$CGI_CODE" 200 "any authenticated caller reads"
cgi_run "$out" "$work/conf" GET /healthz </dev/null
is "$CGI_CODE" 200 "healthz stays open for monitors"
cgi_run "$out" "$work/conf" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null
is "$CGI_CODE" 204 "cleaned up"
done_testing
