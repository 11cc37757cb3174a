#!/usr/bin/env bash
# faultproxy's own test: the proxy in front of its built-in HTTP server (-S),
# every mode driven through the control file, checked with curl.  Needs no
# stack.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/faultproxy.sh"

[ -x "$FAULTPROXY" ] || missing "tests/tools/faultproxy is not built"
command -v curl >/dev/null || missing "curl is needed"

work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

"$FAULTPROXY" -S -p "$work/server.port" 2>"$work/server.log" &
pids+=($!)
for ((i = 0; i < 50; i++)); do [ -s "$work/server.port" ] && break; sleep 0.1; done
[ -s "$work/server.port" ] || bail_out "the -S server did not start"
proxy_start "$work" -t "127.0.0.1:$(cat "$work/server.port")"
started=$?
pids+=("$PROXY_PID")
[ "$started" = 0 ] || bail_out "the proxy did not start"
url=http://127.0.0.1:$PROXY_PORT/x
head -c 300000 /dev/zero >"$work/body"

post() { # [CURL-ARGS]: CODE and OUT of one POST of the 300 kB body
	OUT=$(curl -s -m "${post_timeout:-10}" -w ' %{http_code}' -H 'Expect:' --data-binary "@$work/body" "$@" "$url" 2>/dev/null)
	CODE=${OUT##* }
	OUT=${OUT% *}
	OUT=${OUT//$'\n'/}
}

post
is "$CODE $OUT" "200 got 0000300000" "pass: the whole body reaches the server"
curl -s -m 5 "$url" >"$work/get" 2>/dev/null
is "$(cat "$work/get")" "got 0000000000" "pass: a GET without a body"

proxy_mode "fail 503 2"
post; c1=$CODE; b1=$OUT
post; c2=$CODE
post; c3=$CODE
is "$c1 $c2 $c3" "503 503 200" "fail 503 2: two canned 503s, then the server again"
like "$b1" '<Code>ServerBusy</Code>' "the canned 503 carries Azure's ServerBusy code"
is "$(proxy_stat failed)" 2 "stats count two failed requests"
proxy_mode "fail 500 1"
OUT=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'Expect: 100-continue' --data-binary "@$work/body" "$url")
is "$OUT" 500 "fail 500: answered before the body when the client expects 100-continue"
post
is "$CODE" 200 "... and pass afterwards"

proxy_mode "cut 100000"
post
isnt "$CODE" 200 "cut 100000: the request does not complete"
is "$(proxy_stat cut)" 1 "stats count one cut"
post
is "$CODE $OUT" "200 got 0000300000" "after one cut, pass again"

proxy_mode "cut 100000 1 reused"
post
is "$CODE $(proxy_stat cut)" "200 1" "cut 100000 1 reused: a connection's first request passes"
# Two requests on one kept-alive connection: the second is cut.  (Whether
# curl then sends it again on a new connection depends on when it notices:
# it retries a reused connection that fails as it reads, not as it sends.)
OUT=$(curl -s -m 10 -w '%{http_code}\n' -o /dev/null -H 'Expect:' --data-binary "@$work/body" "$url" \
	--next -s -m 10 -w '%{http_code}\n' -o /dev/null -H 'Expect:' --data-binary "@$work/body" "$url" 2>/dev/null)
is "${OUT%%$'\n'*}" 200 "... the first request on a new connection passes"
is "$(proxy_stat cut)" 2 "... the second, on the same kept-alive connection, is cut"
post
is "$CODE $OUT" "200 got 0000300000" "after that cut, pass again"

proxy_mode "latency 400"
t0=$(date +%s%N); curl -s -m 10 -o /dev/null "$url"; t1=$(date +%s%N)
ok "$([ $(((t1 - t0) / 1000000)) -ge 700 ]; echo $?)" "latency 400: a request and its answer take >= 800 ms ($(((t1 - t0) / 1000000)) ms)"

proxy_mode stall
post_timeout=2 post
is "$CODE" 000 "stall: the client times out"
proxy_mode pass
post
is "$CODE $OUT" "200 got 0000300000" "pass again after the stall"

proxy_mode "lose 1"
post
isnt "$CODE" 200 "lose 1: the client gets no answer"
is "$(proxy_stat lost)" 1 "... although the server answered (stats: lost=1)"
post
is "$CODE" 200 "... once"

kill -HUP "${pids[1]}"
post
is "$CODE" 200 "SIGHUP re-reads the control file"
done_testing
