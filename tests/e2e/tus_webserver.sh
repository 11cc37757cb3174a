#!/usr/bin/env bash
# The web servers pass tus to bindery (conf/).
#
# Through the test stack's lighttpd (FastCGI), Apache (mod_fcgid) and the
# pool behind Apache mod_proxy_fcgi, and
# private Apache mod_cgid and lighttpd mod_cgi servers rendered from
# conf/apache-cgid.conf and conf/lighttpd-cgi.conf:
#   - OPTIONS /uploads and PATCH, HEAD, DELETE on /uploads/{id} reach
#     bindery and come back as bindery answered them: the same status and
#     the same tus headers as bindery.fcgi run directly as a CGI program
#     with the same request, and bindery's X-Request-Id.  Neither server
#     answers OPTIONS itself (lighttpd answers only "OPTIONS *"; old
#     mod_cgi/mod_cgid releases answered OPTIONS for a CGI program).
#   - the tus request headers arrive: a POST /uploads with Upload-Length
#     and Upload-Metadata is 201 with a Location; a PATCH with a wrong
#     Upload-Checksum is 460; PATCH moves Upload-Offset; HEAD reports it;
#     the finished document has the name and type of the metadata and the
#     bytes sent; DELETE terminates.
#   - Apache mod_fcgid: the body-limit machinery of conf/apache-fcgid.conf
#     (the <If Content-Length> 413 and conf/apache-fcgid.lua) applies to a
#     PATCH as to a POST: a declared length over the limit is 413 in JSON,
#     a body that ends early is 400 bad_body in JSON, never a 2xx.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_TOKEN BINDERY_CONFIG \
	BINDERY_TEST_BIN BINDERY_TEST_VAR BINDERY_TEST_DB_SOCKET
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "$BINDERY_TEST_BIN/bindery.fcgi was not built"
[ "$(id -u)" = 0 ] || missing "Apache's User www-data needs root to start"
[ -f /usr/lib/apache2/modules/mod_cgid.so ] || missing "apache2 with mod_cgid is not installed"
[ -x "$(stack_lighttpd_bin)" ] || missing "lighttpd is not installed"
command -v python3 >/dev/null || missing "python3 is not installed (./dev installs it)"
work=$(mktemp -d)
cleanup() {
	stack_cgi_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Our own state directory for the two CGI servers.
stack_cgi_prepare "$BINDERY_TEST_VAR/tus-webserver" 18300 "$BINDERY_TEST_BIN" "$BINDERY_CONFIG" ||
	bail_out "cannot prepare the CGI servers"
stack_apache_start "$STACK_VAR/apache-cgid.conf" || bail_out "Apache mod_cgid did not start (log in $STACK_LOG)"
stack_lighttpd_start "$STACK_VAR/lighttpd-cgi.conf" || bail_out "lighttpd mod_cgi did not start (log in $STACK_LOG)"

token=$BINDERY_TEST_TOKEN
id0=0123456789abcdef0123456789abcdef	# an upload id nobody holds
b64() { printf '%s' "$1" | base64 -w0; }

# tus_headers FILE: the answer's status line code and its tus-relevant
# headers (lower-case names, sorted), one per line, from a header block in
# FILE (an HTTP answer's or a CGI program's).  Upload-Expires is a time and
# Content-Length differs for HEAD; both are left out.
tus_headers() {
	tr -d '\r' <"$1" | sed -n '1,/^$/p' | sed -e 's/^\([^:]*\):/\L\1:/' |
		grep -E '^(status|tus-[a-z-]*|upload-offset|upload-length|allow|location|cache-control|content-type|retry-after):' |
		sed -e 's/^status: *\([0-9]*\).*/status: \1/' | sort
}

# direct METHOD URI [VAR=VALUE...] < BODY: bindery.fcgi's own answer, as a
# CGI program, into $work/direct.h (headers normalised by tus_headers).
direct() {
	local method=$1 uri=$2
	shift 2
	cgi_run "$work/direct.raw" "$BINDERY_CONFIG" "$method" "$uri" HTTP_HOST=127.0.0.1 \
		HTTP_AUTHORIZATION="Bearer $token" HTTP_TUS_RESUMABLE=1.0.0 "$@"
	tus_headers "$work/direct.raw" >"$work/direct.h"
}

# through NAME URL METHOD PATH [curl args...]: the same request through a
# server; compares status and tus headers with bindery's direct answer.
through() {
	local name=$1 url=$2 method=$3 path=$4 code
	shift 4
	if [ "$method" = HEAD ]; then
		code=$(curl -s -m 30 -I -D "$work/srv.raw" -o /dev/null -w '%{http_code}' \
			-H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' "$@" "$url$path")
	else
		code=$(curl -s -m 30 -X "$method" -D "$work/srv.raw" -o "$work/srv.body" -w '%{http_code}' \
			-H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' "$@" "$url$path")
	fi
	{ printf 'status: %s\n' "$code"; tus_headers "$work/srv.raw" | grep -v '^status:'; } | sort >"$work/srv.h"
	ok 'cmp -s "$work/srv.h" "$work/direct.h"' \
		"$name: $method $path answers as bindery does ($(tr '\n' ' ' <"$work/direct.h"))"
	[ -s "$work/srv.h" ] && ! cmp -s "$work/srv.h" "$work/direct.h" &&
		diag "server: $(tr '\n' ' ' <"$work/srv.h")"
	like "$(tr -d '\r' <"$work/srv.raw" | sed -n 's/^[Xx]-[Rr]equest-[Ii]d: *//p')" '^[0-9a-f]{16}$' \
		"$name: ... with bindery's X-Request-Id (not the server's own answer)"
}

printf 'tus body\n' >"$work/nine"
printf 'x' >"$work/one"
printf 'abc' >"$work/three"

# --- every method reaches bindery, on every server ---
direct OPTIONS /uploads </dev/null
servers=("lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"
	"pool=$BINDERY_TEST_APACHE_POOL_URL"
	"apache-cgid=http://127.0.0.1:$APACHE_PORT" "lighttpd-cgi=http://127.0.0.1:$HTTP_PORT")
for s in "${servers[@]}"; do
	through "${s%%=*}" "${s#*=}" OPTIONS /uploads
done
direct HEAD "/uploads/$id0" </dev/null
for s in "${servers[@]}"; do
	through "${s%%=*}" "${s#*=}" HEAD "/uploads/$id0"
done
direct DELETE "/uploads/$id0" </dev/null
for s in "${servers[@]}"; do
	through "${s%%=*}" "${s#*=}" DELETE "/uploads/$id0"
done
direct PATCH "/uploads/$id0" CONTENT_TYPE=application/offset+octet-stream CONTENT_LENGTH=9 \
	HTTP_UPLOAD_OFFSET=0 <"$work/nine"
for s in "${servers[@]}"; do
	through "${s%%=*}" "${s#*=}" PATCH "/uploads/$id0" -H 'Content-Type: application/offset+octet-stream' \
		-H 'Upload-Offset: 0' --data-binary "@$work/nine"
done

# --- the tus headers arrive: a whole upload through each server ---
for s in "${servers[@]}"; do
	srv=${s%%=*} url=${s#*=}
	name="tusweb-$srv-$$-$RANDOM.txt"
	meta="filename $(b64 "$name"),filetype $(b64 text/x-tus-test)"
	# A create has no body; like a browser, say so with Content-Length: 0
	# (lighttpd refuses a POST with neither it nor a chunked body: 411).
	req POST "$url/uploads" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
		-H 'Content-Length: 0' -H 'Upload-Length: 9' -H "Upload-Metadata: $meta"
	is "$HTTP_CODE" 201 "$srv: POST /uploads with Upload-Length and Upload-Metadata is 201"
	loc=$(header location)
	like "$loc" '^/uploads/[0-9a-f]{32}$' "$srv: ... with a Location"
	is "$(header tus-resumable)" 1.0.0 "$srv: ... and Tus-Resumable"
	like "$(header upload-expires)" '[0-9]{2}:[0-9]{2}:[0-9]{2} GMT$' "$srv: ... and Upload-Expires"

	code=$(curl -s -I -D "$work/h" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
		-H 'Tus-Resumable: 1.0.0' "$url$loc")
	hs=$(tr -d '\r' <"$work/h" | sed -e 's/^\([^:]*\):/\L\1:/')
	is "$code $(printf '%s\n' "$hs" | sed -n 's/^upload-offset: *//p') $(printf '%s\n' "$hs" | sed -n 's/^upload-length: *//p')" \
		"204 0 9" "$srv: HEAD is 204 with Upload-Offset 0 and Upload-Length 9"
	like "$(printf '%s\n' "$hs" | sed -n 's/^cache-control: *//p')" 'no-store' "$srv: ... and Cache-Control: no-store"

	req PATCH "$url$loc" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 0' \
		-H "Upload-Checksum: sha1 $(openssl sha1 -binary "$work/three" | base64 -w0)" --data-binary "@$work/nine"
	is "$HTTP_CODE" 460 "$srv: a PATCH whose Upload-Checksum does not match is 460"
	req PATCH "$url$loc" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 0' \
		-H "Upload-Checksum: sha1 $(openssl sha1 -binary "$work/nine" | base64 -w0)" \
		--data-binary "@$work/nine"
	is "$HTTP_CODE" 204 "$srv: the PATCH with the right Upload-Offset and Upload-Checksum is 204"
	is "$(header upload-offset)" 9 "$srv: ... Upload-Offset 9"
	doc=$(header location)
	like "$doc" '^/documents/[0-9]+$' "$srv: ... and the finished upload's Location names the document"
	# A CGI server (RFC 3875 6.2.3) turns a 200 carrying a local Location
	# into an internal redirect: HEAD must come back as bindery sent it.
	code=$(curl -s -I -D "$work/h" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
		-H 'Tus-Resumable: 1.0.0' "$url$loc")
	is "$code $(tr -d '\r' <"$work/h" | sed -n 's/^[Ll]ocation: *//p')" "204 $doc" \
		"$srv: HEAD of the finished upload is 204 with the document's Location, not redirected"
	req GET "$url$doc"
	is "$(jfield "$HTTP_BODY" name) $(jfield "$HTTP_BODY" content_type)" "$name text/x-tus-test" \
		"$srv: the document has the metadata's filename and filetype"
	curl -s -o "$work/got" "$url$doc/content"
	ok 'cmp -s "$work/got" "$work/nine"' "$srv: ... and the bytes sent"

	req POST "$url/uploads" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
		-H 'Content-Length: 0' -H 'Upload-Length: 9' -H "Upload-Metadata: filename $(b64 "$name.gone")"
	loc=$(header location)
	req DELETE "$url$loc" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0'
	is "$HTTP_CODE" 204 "$srv: DELETE terminates an upload (204)"
	code=$(curl -s -I -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
		-H 'Tus-Resumable: 1.0.0' "$url$loc")
	like "$code" '^(404|410)$' "$srv: ... and it is gone ($code)"
	req POST "$url/uploads" -H "Authorization: Bearer $token" -H 'Content-Length: 0' -H 'Upload-Length: 9' \
		-H "Upload-Metadata: filename $(b64 "$name.v")"
	is "$HTTP_CODE $(header tus-version)" "412 1.0.0" "$srv: without Tus-Resumable it is 412 with Tus-Version"
	if [ "$srv" = lighttpd ]; then
		req POST "$url/uploads" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
			-H 'Upload-Length: 9' -H "Upload-Metadata: filename $(b64 "$name.411")"
		is "$HTTP_CODE" 411 "$srv: a create without Content-Length is lighttpd's own 411 (doc/deploying.md)"
	fi
done

# --- Apache mod_fcgid: the body limits apply to PATCH as to POST ---
url=$BINDERY_TEST_APACHE_URL
before=$(sql "SELECT COUNT(*) FROM documents")
req PATCH "$url/uploads/$id0" -H "Authorization: Bearer $token" -H 'Tus-Resumable: 1.0.0' \
	-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 0' \
	-H 'Content-Length: 70000000' --data-binary "@$work/one"
is "$HTTP_CODE $(header content-type) $(jfield "$HTTP_BODY" error)" "413 application/json too_large" \
	"apache: a PATCH declaring more than LimitRequestBody is 413 too_large in JSON"
python3 "$here/../tools/short_body.py" --method PATCH "$url/uploads/$id0" 1000 "$work/three" "$work/hc" \
	"Authorization: Bearer $token" 'Tus-Resumable: 1.0.0' 'Upload-Offset: 0' \
	'Content-Type: application/offset+octet-stream'
is "$(cat "$work/hc.code") $(sed -n 's/^content-type: *//p' "$work/hc.headers" | tr -d '\r')" \
	"400 application/json" "apache: a PATCH body that ends before its Content-Length is 400 in JSON"
like "$(tr -d '\0' <"$work/hc.body")" '"error":"bad_body"' "apache: ... bad_body"
is "$(sql "SELECT COUNT(*) FROM documents")" "$before" "apache: ... and neither created a document"
done_testing
