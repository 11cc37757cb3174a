#!/usr/bin/env bash
# A database that stops answering costs a request request_deadline, not a
# worker (doc/design.md "Smaller decisions": request_deadline bounds each
# wait on storage or the database).  The test stack's MariaDB is shared with
# every other test, so it is never stopped here: tests/tools/faultproxy, in
# raw mode (-r: MariaDB's protocol is not HTTP), stands in front of its TCP
# port, and a lighttpd of this test's own runs bindery.fcgi (FastCGI) with
# the stack's configuration pointed at the proxy and request_deadline = 3.
#   - both FastCGI workers hold a database connection (two requests at once
#     while the proxy adds latency), then the proxy stalls: it keeps every
#     connection open and moves no byte, new ones included;
#   - a read (GET /documents) answers 503 unavailable within DEADLINE plus
#     slack seconds, not the registry's old fixed 60 s; so do a second read
#     and a create (POST), and the create leaves no document row;
#   - once the proxy passes bytes again, reads answer 200.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/faultproxy.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"

chaos_need_private_lighttpd
need_stack BINDERY_TEST_DB_PORT
[ -x "$FAULTPROXY" ] || missing "tests/tools/faultproxy is not built"

deadline=3
# Seconds an answer may come after the deadline on this busy 2-core
# machine (a stalled connect and a stalled read may each take one deadline).
slack=4
run=dbdl$$x$RANDOM
work=$(mktemp -d)
cleanup() {
	[ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null
	stack_private_lighttpd_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

proxy_start "$work" -r -t "127.0.0.1:$BINDERY_TEST_DB_PORT" || bail_out "faultproxy did not start"
{
	# [database] over TCP through the proxy, whether the stack's
	# configuration names a socket or a host and port.
	sed -e "/^\[database\]/,/^\[/{s|^port = .*|port = $PROXY_PORT|;s|^host = .*|host = 127.0.0.1|;s|^socket = .*|host = 127.0.0.1\nport = $PROXY_PORT|}" \
		"$BINDERY_CONFIG"
	printf '\n[limits]\nrequest_deadline = %s\n' "$deadline"
} >"$work/bindery.conf"
chmod 0600 "$work/bindery.conf"
grep -q "^port = $PROXY_PORT\$" "$work/bindery.conf" ||
	bail_out "the stack's bindery.conf has no [database] socket or port line to point at the proxy"
"$CHAOS_BIN/bindery" -c "$work/bindery.conf" sweep --dry-run --older-than 999999 >/dev/null \
	2>"$work/check.err" || bail_out "the test configuration does not load: $(cat "$work/check.err")"
stack_private_lighttpd "$BINDERY_TEST_VAR/dbdeadline-lighttpd" lighttpd.conf "$work/bindery.conf" \
	"$CHAOS_BIN" 18380 || bail_out "lighttpd did not start"
URL=http://127.0.0.1:$HTTP_PORT

# timed NAME CURL-ARGS...: one request; "CODE SECONDS" in $work/NAME.t,
# the body in $work/NAME.body.
timed() {
	local name=$1
	shift
	curl -s -m 90 -o "$work/$name.body" -w '%{http_code} %{time_total}\n' "$@" >"$work/$name.t"
}
within() { awk -v s="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(s >= lo && s <= hi) }'; }
answered_within() { # NAME WHAT: 503 unavailable within deadline + slack
	local code secs
	read -r code secs <"$work/$1.t"
	is "$code $(jfield "$(cat "$work/$1.body")" error)" "503 unavailable" \
		"$2 while the database is silent: 503 unavailable"
	ok "within '$secs' $((deadline - 1)) $((deadline + slack))" \
		"... after $secs s (request_deadline $deadline, bound $((deadline + slack)) s)"
}

# Every worker connects: two reads at once, each slowed by the proxy.
proxy_mode "latency 200"
timed warm1 "$URL/documents" &
w1=$!
timed warm2 "$URL/documents" &
w2=$!
wait "$w1" "$w2"
is "$(cut -d' ' -f1 "$work/warm1.t") $(cut -d' ' -f1 "$work/warm2.t")" "200 200" \
	"two reads at once through the proxy answer 200 (both workers connected)"
ok "[ \"\$(proxy_stat conns)\" -ge 2 ]" "... over $(proxy_stat conns) database connections"

proxy_mode stall
timed read1 "$URL/documents"
answered_within read1 "a read"
timed read2 "$URL/documents"
answered_within read2 "a second read"
head -c 3000 /dev/urandom >"$work/doc.bin"
timed create -X POST -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$work/doc.bin" \
	"$URL/documents?name=$run-doc"
answered_within create "a create"

proxy_mode pass
reads_ok() { [ "$(curl -s -o /dev/null -m 10 -w '%{http_code}' "$URL/documents")" = 200 ]; }
ok "$(wait_for 30 reads_ok; echo $?)" "once the database answers again, reads answer 200"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$run-doc'")" 0 \
	"the create refused while the database was silent left no document row"
done_testing
