#!/usr/bin/env bash
# The responder's request paths under valgrind memcheck, one process per
# request (CGI mode, so every request ends in a full exit and leak check):
# zero memory errors, nothing definitely or indirectly lost.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"

[ -n "${BINDERY_CONFIG:-}" ] && [ -n "${BINDERY_TEST_BIN:-}" ] && [ -n "${BINDERY_TEST_TOKEN:-}" ] ||
	skip_all "no test stack (./dev test starts one)"
command -v valgrind >/dev/null || skip_all "valgrind is not installed"
fcgi=$BINDERY_TEST_BIN/bindery.fcgi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cgi NAME METHOD URI [VAR=VALUE...] < body: run one request under memcheck.
cgi() {
	local name=$1 method=$2 uri=$3
	shift 3
	env -i PATH="$PATH" BINDERY_CONFIG="$BINDERY_CONFIG" GATEWAY_INTERFACE=CGI/1.1 \
		REQUEST_METHOD="$method" REQUEST_URI="$uri" QUERY_STRING="${uri#*\?}" "$@" \
		valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 --log-file="$work/$name.vg" "$fcgi" >"$work/$name.out" 2>"$work/$name.err"
	local rc=$?
	is "$rc" 0 "$name: memcheck clean (exit $rc)"
	[ "$rc" = 0 ] || sed -n '1,40p' "$work/$name.vg" | while IFS= read -r l; do diag "$l"; done
	STATUS=$(sed -n 's/^Status: \([0-9]*\).*/\1/p' "$work/$name.out" | tr -d '\r')
}

auth=HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
n="vg-$$-$RANDOM"
head -c 300000 /dev/urandom >"$work/body.bin"
len=$(stat -c %s "$work/body.bin")

cgi healthz GET /healthz </dev/null
is "$STATUS" 200 "healthz answered 200"
cgi create POST "/documents?name=$n" "$auth" CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$len" <"$work/body.bin"
is "$STATUS" 201 "create answered 201"
id=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$work/create.out")
printf -- '--b0\r\nContent-Disposition: form-data; name="file"; filename="%s-form.txt"\r\nContent-Type: text/plain\r\n\r\nform bytes\r\n--b0--\r\n' "$n" >"$work/form.bin"
cgi multipart POST /documents "$auth" "CONTENT_TYPE=multipart/form-data; boundary=b0" \
	CONTENT_LENGTH="$(stat -c %s "$work/form.bin")" <"$work/form.bin"
is "$STATUS" 201 "multipart create answered 201"
cgi idem POST "/documents?name=$n-idem" "$auth" HTTP_IDEMPOTENCY_KEY="vg-$n" CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"0123456789"
cgi idem-retry POST "/documents?name=$n-idem" "$auth" HTTP_IDEMPOTENCY_KEY="vg-$n" CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"0123456789"
is "$STATUS" 201 "an idempotent retry answered 201"
cgi list GET "/documents?limit=5" </dev/null
is "$STATUS" 200 "list answered 200"
cgi meta GET "/documents/$id" </dev/null
is "$STATUS" 200 "metadata answered 200"
cgi download GET "/documents/$id/content" </dev/null
is "$STATUS" 200 "download answered 200"
cgi range GET "/documents/$id/content" HTTP_RANGE=bytes=5-99 </dev/null
is "$STATUS" 206 "range answered 206"
cgi page GET / </dev/null
is "$STATUS" 200 "the page answered 200"
cgi replace PUT "/documents/$id/content" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"abcdefghij"
is "$STATUS" 200 "replace answered 200"
cgi stale PUT "/documents/$id/content" "$auth" HTTP_IF_MATCH='"1-999"' CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"abcdefghij"
is "$STATUS" 412 "a stale replace answered 412"
cgi badname POST "/documents?name=..%2Fx" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=3 <<<"abc"
is "$STATUS" 400 "a bad name answered 400"
printf -- '--b0\r\nContent-Disposition: form-data; name="file"; filename="t"\r\n\r\ntrunc' >"$work/trunc.bin"
cgi truncated POST /documents "$auth" "CONTENT_TYPE=multipart/form-data; boundary=b0" \
	CONTENT_LENGTH="$(stat -c %s "$work/trunc.bin")" <"$work/trunc.bin"
is "$STATUS" 400 "a truncated form answered 400"
cgi short POST "/documents?name=$n-short" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=1000 <<<"short"
is "$STATUS" 400 "a body shorter than Content-Length answered 400"
cgi delete DELETE "/documents/$id" "$auth" </dev/null
is "$STATUS" 204 "delete answered 204"
cgi missing GET "/documents/$id" </dev/null
is "$STATUS" 404 "a deleted document answered 404"
done_testing
