#!/usr/bin/env bash
# The responder's request paths under valgrind memcheck, one process per
# request (CGI mode, so every request ends in a full exit and leak check):
# zero memory errors, nothing definitely or indirectly lost.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN
command -v valgrind >/dev/null || missing "valgrind is not installed"
fcgi=$BINDERY_TEST_BIN/bindery.fcgi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# memcheck NAME METHOD URI [VAR=VALUE...] < body: run one request under
# memcheck (cgi_run with valgrind in front); the answer in $work/NAME.out,
# its status code in STATUS.
memcheck() {
	local name=$1 CGI_STDERR=$work/$1.err CGI_PROGRAM=$fcgi
	local CGI_WRAP=(valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
		--error-exitcode=99 --log-file="$work/$name.vg")
	shift
	: >"$CGI_STDERR"
	cgi_run "$work/$name.out" "$BINDERY_CONFIG" "$@"
	is "$CGI_RC" 0 "$name: memcheck clean (exit $CGI_RC)"
	[ "$CGI_RC" = 0 ] || sed -n '1,40p' "$work/$name.vg" | while IFS= read -r l; do diag "$l"; done
	STATUS=$CGI_CODE
}

auth=HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
# Each request costs about 3 s of CPU under memcheck: a default run takes
# the writes, the reads of bytes, the page and the error paths of bodies;
# --long (BINDERY_TEST_LONG) also the short answers (healthz, metrics, the
# list, metadata, a bad name, a 404), a range and a stale replace.
long=${BINDERY_TEST_LONG:-}
n="vg-$$-$RANDOM"
head -c 300000 /dev/urandom >"$work/body.bin"
len=$(stat -c %s "$work/body.bin")

if [ -n "$long" ]; then
	memcheck healthz GET /healthz </dev/null
	is "$STATUS" 200 "healthz answered 200"
	memcheck metrics GET /metrics "$auth" </dev/null
	is "$STATUS" 200 "metrics answered 200 (on in the test stack's bindery.conf)"
fi
# The raw create carries an Idempotency-Key (its record is written in the
# same request) and its retry replays the answer; the multipart create
# takes the path without a key.  (A third request, a create of its own
# with a key, cost a default run 3 s of CPU for no path these two miss.)
memcheck create POST "/documents?name=$n" "$auth" HTTP_IDEMPOTENCY_KEY="vg-$n" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$len" <"$work/body.bin"
is "$STATUS" 201 "create with an Idempotency-Key answered 201"
id=$(jfield "$(<"$work/create.out")" id)
printf -- '--b0\r\nContent-Disposition: form-data; name="file"; filename="%s-form.txt"\r\nContent-Type: text/plain\r\n\r\nform bytes\r\n--b0--\r\n' "$n" >"$work/form.bin"
memcheck multipart POST /documents "$auth" "CONTENT_TYPE=multipart/form-data; boundary=b0" \
	CONTENT_LENGTH="$(stat -c %s "$work/form.bin")" <"$work/form.bin"
is "$STATUS" 201 "multipart create answered 201"
memcheck idem-retry POST "/documents?name=$n" "$auth" HTTP_IDEMPOTENCY_KEY="vg-$n" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$len" <"$work/body.bin"
is "$STATUS $(jfield "$(<"$work/idem-retry.out")" id)" "201 $id" "an idempotent retry answered 201, the same document"
if [ -n "$long" ]; then
	memcheck list GET "/documents?limit=5" </dev/null
	is "$STATUS" 200 "list answered 200"
	memcheck meta GET "/documents/$id" </dev/null
	is "$STATUS" 200 "metadata answered 200"
fi
memcheck download GET "/documents/$id/content" </dev/null
is "$STATUS" 200 "download answered 200"
if [ -n "$long" ]; then	# (download's path with a window on it)
	memcheck range GET "/documents/$id/content" HTTP_RANGE=bytes=5-99 </dev/null
	is "$STATUS" 206 "range answered 206"
fi
memcheck page GET / </dev/null
is "$STATUS" 200 "the page answered 200"
memcheck replace PUT "/documents/$id/content" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"abcdefghij"
is "$STATUS" 200 "replace answered 200"
if [ -n "$long" ]; then	# (replace's path, refused before any byte moves)
	memcheck stale PUT "/documents/$id/content" "$auth" HTTP_IF_MATCH='"1-999"' CONTENT_TYPE=text/plain CONTENT_LENGTH=10 <<<"abcdefghij"
	is "$STATUS" 412 "a stale replace answered 412"
	memcheck badname POST "/documents?name=..%2Fx" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=3 <<<"abc"
	is "$STATUS" 400 "a bad name answered 400"
fi
printf -- '--b0\r\nContent-Disposition: form-data; name="file"; filename="t"\r\n\r\ntrunc' >"$work/trunc.bin"
memcheck truncated POST /documents "$auth" "CONTENT_TYPE=multipart/form-data; boundary=b0" \
	CONTENT_LENGTH="$(stat -c %s "$work/trunc.bin")" <"$work/trunc.bin"
is "$STATUS" 400 "a truncated form answered 400"
memcheck short POST "/documents?name=$n-short" "$auth" CONTENT_TYPE=text/plain CONTENT_LENGTH=1000 <<<"short"
is "$STATUS" 400 "a body shorter than Content-Length answered 400"
memcheck delete DELETE "/documents/$id" "$auth" </dev/null
is "$STATUS" 204 "delete answered 204"
if [ -n "$long" ]; then
	memcheck missing GET "/documents/$id" </dev/null
	is "$STATUS" 404 "a deleted document answered 404"
fi
done_testing
