#!/usr/bin/env bash
# The responder's request log line: one line per request
# with its id, the client's address, the owner (or "-"), method, path,
# status, bytes out and milliseconds; the id is the client's X-Request-Id
# when it is a sane token, else Apache's UNIQUE_ID, else one bindery makes,
# and every answer echoes it as X-Request-Id.
#
# Through lighttpd and Apache (the line in the server's error log, where
# the stack puts the responder's stderr): a given id, a refused one, the
# bearer token's owner, an anonymous caller, a percent-encoded hostile path.
# Neither server passes a raw control byte in a request line (both answer
# 400 themselves), so the hostile bytes (newline, CR, DEL, a forged line)
# go to the responder run as a CGI program, where REQUEST_URI is whatever
# the server hands over: they must come out escaped, on one line.  Also
# UNIQUE_ID, a long path cut, and [log] sink = syslog: the line goes to a
# /dev/log socket of the test's own (tests/tools/syslog_capture.py in a
# mount namespace of its own), not to stderr.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_VAR BINDERY_TEST_TOKEN \
	BINDERY_TEST_BIN BINDERY_CONFIG
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
AUTH=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
# The fields after "req=ID ": address, owner, method, path, status, bytes, ms.
TAIL='[0-9]+ [0-9]+ms$'

# logline SERVER ID: the request line of ID in SERVER's logs, once it is
# there.  The responder's stderr is the server's error log, or (lighttpd's
# FastCGI processes spawned before it opened that log) the server's own
# stderr, SERVER.out: tests/lib/stack.sh keeps both.
logline() {
	local logs=("$BINDERY_TEST_VAR/log/$1-error.log" "$BINDERY_TEST_VAR/log/$1.out")
	wait_for 5 grep -q -s -F "req=$2 " "${logs[@]}" || true
	grep -h -s -F "req=$2 " "${logs[@]}" | tail -n 1
}

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	[ -f "$BINDERY_TEST_VAR/log/$srv-error.log" ] || missing "$srv's error log"

	id=rl-$$-$srv.A_b
	req GET "$url/documents?limit=1" "${AUTH[@]}" -H "X-Request-Id: $id"
	is "$HTTP_CODE" 200 "$srv: a list with X-Request-Id"
	is "$(header x-request-id)" "$id" "$srv: ... the id comes back as X-Request-Id"
	line=$(logline "$srv" "$id")
	like "$line" " info: req=$id 127\.0\.0\.1 demo GET /documents 200 $TAIL" \
		"$srv: ... its log line: id, address, owner, method, path (no query), status, bytes, ms"

	req GET "$url/healthz" -H "X-Request-Id: not sane!"
	gen=$(header x-request-id)
	like "$gen" '^[0-9a-f]{16}$' "$srv: an id with a space is not taken: one of ours comes back"
	like "$(logline "$srv" "$gen")" " req=$gen 127\.0\.0\.1 - GET /healthz 200 $TAIL" \
		"$srv: ... and names the line; an anonymous caller is -"
	req GET "$url/healthz" -H "X-Request-Id: $(printf 'a%.0s' {1..65})"
	like "$(header x-request-id)" '^[0-9a-f]{16}$' "$srv: an id of 65 characters is not taken"

	# lighttpd refuses an encoded control byte (%0A) with its own 400.
	req GET "$url/no%20such%20req=forged%20200%200%200ms" -g
	gen=$(header x-request-id)
	is "$HTTP_CODE" 404 "$srv: a percent-encoded path is 404"
	like "$(logline "$srv" "$gen")" " req=$gen 127\.0\.0\.1 - GET /no%20such%20req=forged%20200%200%200ms 404 $TAIL" \
		"$srv: ... logged as sent (encoded), on its one line"
	ok '! cat "$BINDERY_TEST_VAR/log/$srv-error.log" "$BINDERY_TEST_VAR/log/$srv.out" 2>/dev/null |
		grep -q "info: req=forged"' "$srv: ... and no forged line"
done

# --- the responder as a CGI program: what a server could hand over ---
err=$work/cgi.err
hostile=$(printf '/x\nforged 127.0.0.1 root GET / 200 0 0ms\r\x7f\x1b[2J\\end')
CGI_STDERR=$err cgi_run "$work/a1" "$BINDERY_CONFIG" GET "$hostile" REMOTE_ADDR=203.0.113.9 \
	HTTP_X_REQUEST_ID=cgi-$$-1
is "$CGI_CODE" 404 "CGI: a path with control bytes is 404"
like "$(tr -d '\r' <"$work/a1" | sed -n 's/^X-Request-Id: //p')" "^cgi-$$-1\$" "CGI: ... X-Request-Id echoed"
is "$(grep -c -F "req=cgi-$$-1 " "$err")" 1 "CGI: ... one log line"
like "$(grep -F "req=cgi-$$-1 " "$err")" \
	" req=cgi-$$-1 203\.0\.113\.9 - GET /x\\\\x0aforged\\\\x20127\.0\.0\.1\\\\x20root\\\\x20GET\\\\x20/\\\\x20200\\\\x200\\\\x200ms\\\\x0d\\\\x7f\\\\x1b\[2J\\\\x5cend 404 $TAIL" \
	"CGI: ... newline, CR, DEL, ESC, space and backslash escaped as \\xNN"
is "$(grep -c '^forged' "$err")" 0 "CGI: ... and no line starts with the forged text"

: >"$err"
CGI_STDERR=$err cgi_run "$work/a2" "$BINDERY_CONFIG" GET /healthz REMOTE_ADDR=198.51.100.7 \
	UNIQUE_ID='ZC3x@AAB-yz0' HTTP_X_REQUEST_ID='bad/id'
like "$(tr -d '\r' <"$work/a2" | sed -n 's/^X-Request-Id: //p')" '^ZC3x@AAB-yz0$' \
	"CGI: no sane X-Request-Id: Apache's UNIQUE_ID is the id"
like "$(cat "$err")" " req=ZC3x@AAB-yz0 198\.51\.100\.7 - GET /healthz 200 $TAIL" "CGI: ... in the log line"
: >"$err"
CGI_STDERR=$err cgi_run "$work/a3" "$BINDERY_CONFIG" GET /healthz UNIQUE_ID='ZC3x@AAB-yz0' \
	HTTP_X_REQUEST_ID=client-$$
like "$(tr -d '\r' <"$work/a3" | sed -n 's/^X-Request-Id: //p')" "^client-$$\$" \
	"CGI: a sane X-Request-Id wins over UNIQUE_ID"
: >"$err"
long=/$(printf 'p%.0s' {1..300})
CGI_STDERR=$err cgi_run "$work/a4" "$BINDERY_CONFIG" GET "$long" HTTP_X_REQUEST_ID=long-$$
like "$(cat "$err")" " req=long-$$ - - GET /p{199}\.\.\. 404 $TAIL" \
	"CGI: a long path is cut at 200 bytes, marked ...; no address is -"

# --- [log] sink = syslog ---
conf=$work/syslog.conf
sed -e 's/^; sink = stderr$/sink = syslog/' "$BINDERY_CONFIG" >"$conf"
if ! grep -q '^sink = syslog$' "$conf"; then
	printf '[log]\nsink = syslog\n' >>"$conf"
fi
chmod 0600 "$conf"
# The wrapper runs in cgi_run's clean environment: a python3 that needs its
# own (a pyenv shim) would not start there.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! unshare -m true 2>/dev/null; then
	skip "no mount namespace here (unshare -m): the syslog sink is not checked" 3
else
	: >"$err"
	CGI_WRAP=(unshare -m "$py" "$top/tests/tools/syslog_capture.py" "$work/syslog.out")
	CGI_STDERR=$err cgi_run "$work/a5" "$conf" GET /healthz HTTP_X_REQUEST_ID=sys-$$ \
		REMOTE_ADDR=192.0.2.1
	CGI_WRAP=()
	is "$CGI_CODE" 200 "syslog sink: the request is answered"
	like "$(cat "$work/syslog.out" 2>/dev/null)" \
		"bindery\.fcgi\[[0-9]+\]: req=sys-$$ 192\.0\.2\.1 - GET /healthz 200 $TAIL" \
		"syslog sink: the line goes to /dev/log, tagged bindery.fcgi"
	ok '! grep -q "req=sys-$$" "$err"' "syslog sink: ... and not to stderr"
fi

done_testing
