#!/usr/bin/env bash
# The web servers' own refusals speak the API's JSON: one error format, whoever
# refused.
# Some answers come from lighttpd or Apache before bindery runs: a body over
# the server's limit, a request it cannot parse, headers that never finish.
# The shipped configs (conf/lighttpd.conf's server.errorfile-prefix and
# conf/lighttpd-error-*.html, conf/apache-fcgid.conf's ErrorDocument lines)
# make each a JSON error body with Content-Type application/json, and leave
# bindery's own answers alone:
#   - lighttpd: 413 (Content-Length over server.max-request-size), 411 (a
#     POST with no length), 400 (a header line without a colon), 431
#     (headers over its limit);
#   - Apache: 413, 400, 414 (a request line over LimitRequestLine), and 408
#     from a private Apache whose RequestReadTimeout gives headers 1 s;
#   - through both, bindery's own 400 bad_name keeps its code.
# Requests go over a raw socket (tests/tools/raw_request.py): no client
# library writes a broken request.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_CONFIG \
	BINDERY_TEST_BIN BINDERY_TEST_VAR
[ "$(id -u)" = 0 ] || missing "Apache's User www-data needs root to start"
command -v jq >/dev/null || missing "jq"
command -v python3 >/dev/null || missing "python3"
work=$BINDERY_TEST_VAR/server-errors
rm -rf "$work" && mkdir -p "$work" || bail_out "cannot create $work"

# The requests, as bytes in files.
printf 'POST /documents?name=se-%s HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999\r\n\r\n' $$ \
	>"$work/too_large.req"
printf 'POST /documents?name=se-%s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' $$ >"$work/no_length.req"
printf 'GET /healthz HTTP/1.1\r\nHost: t\r\nthis line has no colon\r\n\r\n' >"$work/bad_header.req"
{ printf 'GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: '; head -c 70000 /dev/zero | tr '\0' a; printf '\r\n\r\n'; } \
	>"$work/big_headers.req"
{ printf 'GET /documents/'; head -c 10000 /dev/zero | tr '\0' 1; printf ' HTTP/1.1\r\nHost: t\r\n\r\n'; } \
	>"$work/long_uri.req"
printf 'GET /healthz HTTP/1.1\r\nHost: t\r\n' >"$work/unfinished.req"	# no empty line: never ends

# refused SERVER PORT REQUEST CODE ERROR: the server's answer to REQUEST is
# CODE, typed application/json, with {"error": ERROR, "message": ...}.
refused() {
	local server=$1 port=$2 name=$3 code=$4 error=$5 out
	out=$work/$name.$server
	python3 "$here/../tools/raw_request.py" 127.0.0.1 "$port" "$work/$name.req" "$out" ||
		fail "$server, $name: raw_request.py failed"
	is "$(cat "$out.code")" "$code" "$server answers $name with $code"
	like "$(sed -n 's/^content-type: *//p' "$out.headers" | tr -d '\r')" '^application/json' \
		"... typed application/json"
	is "$(jq -r '.error + " " + (.message | type)' <"$out.body" 2>/dev/null)" "$error string" \
		"... its body is the API's error: $error, with a message"
}

port_of() { local u=${1##*:}; printf '%s' "${u%%/*}"; }
lport=$(port_of "$BINDERY_TEST_LIGHTTPD_URL")
aport=$(port_of "$BINDERY_TEST_APACHE_URL")

refused lighttpd "$lport" too_large 413 too_large
refused lighttpd "$lport" no_length 411 length_required
refused lighttpd "$lport" bad_header 400 bad_request
refused lighttpd "$lport" big_headers 431 headers_too_large
refused apache "$aport" too_large 413 too_large
refused apache "$aport" bad_header 400 bad_request
refused apache "$aport" long_uri 414 uri_too_long

# bindery's own 400 passes through untouched: the server's page is only for
# errors the server raised.
printf 'x' >"$work/one"
for server in lighttpd apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	req POST "$url/documents?name=bad%2Fname" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/one"
	is "$HTTP_CODE $(printf '%s' "$HTTP_BODY" | jq -r .error 2>/dev/null)" "400 bad_name" \
		"$server: bindery's own 400 keeps its body (bad_name, not the server's bad_request)"
done

# 408: a private Apache from conf/apache-fcgid.conf whose RequestReadTimeout
# gives headers 1 s (the sample's 20-40 s would make this test wait).
trap stack_private_apache_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stack_private_apache "$BINDERY_TEST_VAR/server-errors-apache" "$BINDERY_CONFIG" 18500 apache-408 ||
	bail_out "cannot make a private Apache ready"
conf=$STACK_PRIVATE_APACHE_CONF
is "$(grep -c '^RequestReadTimeout handshake=0 header=20-40,MinRate=500 ' "$conf")" 1 \
	"conf/apache-fcgid.conf has the RequestReadTimeout line this test shortens"
sed -i -e 's/^RequestReadTimeout handshake=0 header=20-40,MinRate=500 /RequestReadTimeout handshake=0 header=1 /' "$conf"
stack_apache_start "$conf" || bail_out "Apache (header timeout 1 s) did not start (log in $STACK_LOG)"
start=$(date +%s)
refused apache-408 "$APACHE_PORT" unfinished 408 request_timeout
took=$(($(date +%s) - start))
ok "[ $took -le 10 ]" "... after the 1 s header timeout, not a hang ($took s)"
done_testing
