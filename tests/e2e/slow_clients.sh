#!/usr/bin/env bash
# Slow clients must not pin workers.  A private lighttpd,
# first with mod_fastcgi (conf/lighttpd.conf, its max-procs workers) and
# then with mod_cgi (conf/lighttpd-cgi.conf), in front of the test stack's
# MariaDB and Azurite, runs bindery.fcgi with small bounds:
# body_idle_timeout = 3, body_min_rate = 1024 B/s after a grace of 4 s.
#   - N silent clients and then N trickling ones (N = the FastCGI workers)
#     are each cut with 408 body_timeout within the bounds (the seconds are
#     printed), /healthz answers 200 right after, the intents were
#     compensated, and after `bindery sweep --older-than 0 --force` no row
#     and no blob of theirs is left;
#   - a client that is slow but keeps the average rate is not cut;
#   - a refused write (bad token) closes at once although its client keeps
#     trickling a body;
# and, with bindery.fcgi run directly as a CGI program: a 401 and a 413 for
# a declared 1 GiB body are answered without opening a database connection
# (MariaDB's Connections counter; a configuration whose database socket
# does not exist) and without waiting for a body that never comes.
# Then the pool (bindery.fcgi --listen, N workers) behind Apache
# mod_proxy_fcgi (conf/apache-proxy-fcgi.conf, RequestReadTimeout's body
# bound set to 8 s), which passes the body on as it arrives: bindery's
# bounds cut the same clients (its own 408s, logged within the bounds) and
# free their workers (/healthz answers at once while Apache still holds the
# silent clients); each client hears 408 when Apache next reads from it,
# within Apache's bound; the steady client is stored; the bad token is
# answered 401 by bindery at once and reaches the client within Apache's
# bound.
# The shared stack's timeouts stay as they are.  Apache mod_fcgid is not
# here: it reads the whole body before bindery sees it, and
# conf/apache-fcgid.conf bounds slow clients with RequestReadTimeout.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/chaos.sh"
. "$here/../lib/stack.sh"

chaos_need_private_lighttpd
command -v python3 >/dev/null || missing "python3 is needed for the slow client"

slow_client=$here/../tools/slow_client.py
run=slow$$x$RANDOM
prefix=slowclients-$run-
idle=3 grace=4 rate=1024
# Seconds a cut may come after its bound on this busy 2-core machine.
slack=4
workers=$(sed -n 's/.*"max-procs" *=> *\([0-9]*\).*/\1/p' "$here/../../conf/lighttpd.conf")
[ -n "$workers" ] && [ "$workers" -ge 1 ] || bail_out "no max-procs in conf/lighttpd.conf"
note "N = $workers FastCGI workers (conf/lighttpd.conf max-procs)"

work=$(mktemp -d)
cleanup() {
	stack_private_lighttpd_stop
	stack_private_pool_stop
	[ -n "${fifo_fd:-}" ] && exec 7>&-
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stack's configuration with the small bounds, and a blob prefix of
# this run's own so its blobs can be found (and only its).
conf=$work/bindery.conf
stack_test_conf "$conf" "$prefix" '[limits]' "body_idle_timeout = $idle" "body_min_rate = $rate" \
	"body_min_rate_grace = $grace" || bail_out "the test configuration does not load"

# server KIND TEMPLATE: a private lighttpd from conf/TEMPLATE in a state
# directory of its own, running bindery.fcgi with the test configuration.
server() {
	stack_private_lighttpd "$BINDERY_TEST_VAR/slow-$1" "$2" "$conf" "$BINDERY_TEST_BIN" 18200 ||
		bail_out "lighttpd ($1) did not start"
	note "lighttpd $1 on port $HTTP_PORT"
}

# slow NAME OUT ARGS...: one slow client creating NAME, its line in OUT.
slow() {
	local name=$1 out=$2
	shift 2
	python3 "$slow_client" --port "$HTTP_PORT" --path "/documents?name=$name" \
		--header "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		--header 'Content-Type: application/octet-stream' "$@" >"$out" 2>"$out.err" ||
		printf '000 0 client-failed -\n' >"$out"
}

# within SECONDS LOW HIGH: LOW <= SECONDS <= HIGH
within() { awk -v s="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(s >= lo && s <= hi) }'; }

# healthz_after KIND WHAT: /healthz answers 200 within 3 s, right now.
healthz_after() {
	local t
	t=$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$HTTP_PORT/healthz")
	like "$t" '^200 ' "$1: /healthz is 200 right after the $2 clients were cut ($t s)"
	ok "within '${t#* }' 0 3" "$1: ... and answers at once"
}

# round KIND MODE LOW HIGH CLIENT-ARGS...: N clients at once, each cut with
# 408 body_timeout between LOW and HIGH seconds.
round() {
	local kind=$1 mode=$2 low=$3 high=$4 i code secs err pids=()
	shift 4
	for ((i = 1; i <= workers; i++)); do
		slow "$run-$kind-$mode-$i" "$work/$kind-$mode-$i" --length 1048576 --first 100 \
			--give-up 30 "$@" &
		pids+=($!)
	done
	# Only the clients: a bare wait would also wait for lighttpd.
	wait "${pids[@]}"
	for ((i = 1; i <= workers; i++)); do
		read -r code secs err _ <"$work/$kind-$mode-$i"
		is "$code $err" "408 body_timeout" "$kind: $mode client $i of $workers is cut with 408 body_timeout"
		ok "within '$secs' $low $high" "$kind: ... after $secs s (bound: $low to $high s)"
	done
	healthz_after "$kind" "$mode"
}

# clients KIND: the slow clients against the server started last.
clients() {
	local kind=$1 code secs err closed good_blob
	# Silent after the first 100 bytes: the idle bound cuts them.
	round "$kind" silent $((idle - 1)) $((idle + slack)) --every 0
	# A byte every half second: never idle for long, but far below the
	# average rate once the grace is over.
	round "$kind" trickling $((grace - 1)) $((grace + slack)) --every 0.5 --chunk 1
	is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-$kind-%'")" 0 \
		"$kind: the cut uploads were compensated: no document rows"

	# 24 KiB at 4 KiB/s: slower than the grace, faster than the rate.
	slow "$run-$kind-steady" "$work/$kind-steady" --length 24576 --first 0 --every 0.25 --chunk 1024
	read -r code secs err _ <"$work/$kind-steady"
	is "$code" 201 "$kind: a client that keeps the average rate is not cut ($secs s)"

	# A write with a bad token is refused before its body; the client
	# keeps trickling, and the server must still hang up at once.  (lighttpd
	# closes the client's connection itself once the answer is complete;
	# whether the program also stops reading is checked below, with
	# bindery.fcgi run directly as CGI.)
	python3 "$slow_client" --port "$HTTP_PORT" --path "/documents?name=$run-$kind-refused" \
		--header 'Authorization: Bearer not-a-token-of-ours-0000' \
		--header 'Content-Type: application/octet-stream' --length 1048576 --first 100 \
		--every 0.5 --until-close --give-up 20 >"$work/$kind-refused" 2>&1
	read -r code secs err closed <"$work/$kind-refused"
	is "$code $err" "401 unauthorized" "$kind: a bad token with a trickling body is 401 ($secs s)"
	ok "[ '$closed' != - ] && within '$closed' 0 2" \
		"$kind: ... and the connection is closed at once, not drained ($closed s)"
}

server fastcgi lighttpd.conf
clients fastcgi
stack_stop lighttpd 20
server cgi lighttpd-cgi.conf
clients cgi
stack_stop lighttpd 20

# ---- the pool behind Apache mod_proxy_fcgi ----
# Apache's own bound on a body (RequestReadTimeout's initial body seconds),
# which ends a request Apache still waits on; after bindery answers, libfcgi
# keeps the worker until Apache closes the connection or 2 s pass in silence.
abody=8 linger=2
stack_private_pool "$BINDERY_TEST_VAR/slow-pool" "$conf" "$workers" 18240 || bail_out "the pool did not start"
sed -i -e "s/^RequestReadTimeout handshake=0 header=20-40,MinRate=500 body=30,MinRate=1024\$/RequestReadTimeout \
handshake=0 header=20-40,MinRate=500 body=$abody,MinRate=1024/" "$STACK_PRIVATE_POOL_CONF"
is "$(grep -c "^RequestReadTimeout .* body=$abody,MinRate=1024\$" "$STACK_PRIVATE_POOL_CONF")" 1 \
	"pool: conf/apache-proxy-fcgi.conf with RequestReadTimeout's body bound at $abody s"
stack_apache_start "$STACK_PRIVATE_POOL_CONF" apache-pool "$APACHE_POOL_PORT" ||
	bail_out "the pool's Apache did not start (log in $STACK_LOG)"
note "the pool's Apache on port $APACHE_POOL_PORT, $workers workers"
HTTP_PORT=$APACHE_POOL_PORT
plog=$STACK_LOG/pool.log

# cuts SINCE: bindery's 408 answers logged after line SINCE of the pool's log,
# one line each: the milliseconds it read for.
cuts() { tail -n +"$(($1 + 1))" "$plog" | sed -n 's|.* POST /documents 408 [0-9]* \([0-9]*\)ms$|\1|p'; }
enough_cuts() { [ "$(cuts "$1" | wc -l)" -ge "$workers" ]; }
alive_any() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }

# pool_round MODE LOW HIGH WANT CLIENT-ARGS...: N clients at once through the
# pool; bindery cuts each (a 408 logged within LOW..HIGH seconds of reading),
# the client hears WANT (an ERE of "code error") within Apache's bound.
pool_round() {
	local mode=$1 low=$2 high=$3 want=$4 i code secs err since ms pids=() t
	shift 4
	since=$(wc -l <"$plog")
	for ((i = 1; i <= workers; i++)); do
		slow "$run-pool-$mode-$i" "$work/pool-$mode-$i" --length 1048576 --first 100 --give-up 30 "$@" &
		pids+=($!)
	done
	ok "$(wait_for $((high + 5)) enough_cuts "$since"; echo $?)" "pool: bindery cut the $workers $mode clients itself"
	for ms in $(cuts "$since"); do
		ok "within $((ms / 1000)) $low $high" "pool: ... a 408 after reading for $ms ms (bound: $low to $high s)"
	done
	if [ "$mode" = silent ]; then
		# Apache still waits on these clients; their workers are free.
		sleep $((linger + 1))
		t=$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$HTTP_PORT/healthz")
		alive_any "${pids[@]}" && still=waiting || still=answered
		is "${t%% *} $still" "200 waiting" \
			"pool: /healthz is 200 while Apache still holds the silent clients ($t s): bindery freed the workers"
		# As for lighttpd above: seconds, not Apache's 8 s bound (1.24 s
		# on a loaded run once: a bound of 1 s was a test of the load).
		ok "within '${t#* }' 0 3" "pool: ... and answers at once"
	fi
	wait "${pids[@]}"
	for ((i = 1; i <= workers; i++)); do
		read -r code secs err _ <"$work/pool-$mode-$i"
		like "$code $err" "$want" "pool: $mode client $i of $workers hears $code $err"
		ok "within '$secs' $low $((abody + slack))" "pool: ... after $secs s (Apache's bound: $abody s)"
	done
	healthz_after pool "$mode"
}
# Silent: Apache waits on the client, so it hears Apache's own 408 (or
# bindery's, should Apache read the pool's answer first).
pool_round silent $((idle - 1)) $((idle + slack)) '^408 (request_timeout|body_timeout)$' --every 0
pool_round trickling $((grace - 1)) $((grace + slack)) '^408 (request_timeout|body_timeout)$' --every 0.5 --chunk 1
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-pool-%'")" 0 \
	"pool: the cut uploads were compensated: no document rows"
# The steady client beside a refused one (a worker each).
slow "$run-pool-steady" "$work/pool-steady" --length 24576 --first 0 --every 0.25 --chunk 1024 &
steady_pid=$!
since=$(wc -l <"$plog")
python3 "$slow_client" --port "$HTTP_PORT" --path "/documents?name=$run-pool-refused" \
	--header 'Authorization: Bearer not-a-token-of-ours-0000' \
	--header 'Content-Type: application/octet-stream' --length 1048576 --first 100 \
	--every 0.5 --until-close --give-up 30 >"$work/pool-refused" 2>&1
read -r code secs err closed <"$work/pool-refused"
is "$code $err" "401 unauthorized" "pool: a bad token with a trickling body is 401 ($secs s)"
ok "within '$secs' 0 $((abody + slack))" "pool: ... which the client hears within Apache's bound"
ok "[ '$closed' != - ] && within '$closed' 0 $((abody + slack))" "pool: ... and the connection is closed then ($closed s)"
ms=$(tail -n +"$((since + 1))" "$plog" | sed -n 's|.* POST /documents 401 [0-9]* \([0-9]*\)ms$|\1|p' | head -n 1)
ok "[ -n '$ms' ] && [ '$ms' -lt 1000 ]" "pool: ... bindery answered it at once, reading no body (${ms:-no} ms)"
wait "$steady_pid"
read -r code secs err _ <"$work/pool-steady"
is "$code" 201 "pool: a client that keeps the average rate is not cut ($secs s)"
stack_private_pool_stop

# Nothing is left but what the sweeper resolves, and after it, nothing.
"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" sweep --older-than 0 --force --prefix "$prefix" \
	>"$work/sweep.log" 2>&1
is "$?" 0 "bindery sweep --older-than 0 --force --prefix $prefix exits 0"
steady=$(sql "SELECT blob_name FROM documents WHERE name LIKE '$run-%-steady'" | tr '\n' '|')
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-%' AND name NOT LIKE '%-steady'")" 0 \
	"after the sweep: no document rows of the cut clients"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name LIKE '$prefix%'
	AND name NOT IN (SELECT blob_name FROM documents WHERE name LIKE '$run-%-steady')")" 0 \
	"after the sweep: no registry rows of theirs"
az_list >"$work/blobs" || fail "cannot list Azurite"
left=$(grep "^$prefix" "$work/blobs" | cut -d' ' -f1 | grep -v -x -E "${steady%|}" | tr '\n' ' ')
is "$left" "" "after the sweep: no blobs of theirs in storage"
is "$(grep -c "^$prefix" "$work/blobs")" 3 "... the three steady uploads' blobs are there (the listing works)"

# ---- refusals before the database, as a plain CGI program ----
# A pipe that stays open and empty: a program that waited for this body
# would wait until `timeout` kills it.
mkfifo "$work/never"
exec 7<>"$work/never"
fifo_fd=7
dead=$work/dead-db.conf
# Over a socket or TCP, whichever the stack uses: neither answers (port 1
# has no listener here).
sed -e "s|^socket = .*|socket = $work/no-such-mysqld.sock|" -e 's|^port = .*|port = 1|' "$conf" >"$dead"
grep -q -e "^socket = $work/no-such-mysqld.sock" -e '^port = 1$' "$dead" ||
	bail_out "the stack's configuration names no database socket or port to break"
chmod 0600 "$dead"
CGI_WRAP=(timeout 10)
cgi_refusal() { # WHAT WANT-CODE CONF VAR=VALUE...
	local what=$1 want=$2 cfg=$3 t0 t1
	shift 3
	t0=$(date +%s.%N)
	cgi_run "$work/cgi.out" "$cfg" POST "/documents?name=$run-cgi-direct" \
		CONTENT_TYPE=application/octet-stream "$@" <"$work/never"
	t1=$(date +%s.%N)
	is "$CGI_CODE $(jfield "$(cgi_body "$work/cgi.out")" error)" "$want" "CGI: $what"
	ok "within $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') 0 2" \
		"CGI: ... answered and exited at once, reading no body (rc $CGI_RC)"
}
before=$(sql "SHOW GLOBAL STATUS LIKE 'Connections'" | cut -f2)
cgi_refusal "a bad token with a declared 1 MiB body is 401" "401 unauthorized" "$conf" \
	CONTENT_LENGTH=1048576 HTTP_AUTHORIZATION="Bearer not-a-token-of-ours-0000"
cgi_refusal "a declared 1 GiB body is 413" "413 too_large" "$conf" \
	CONTENT_LENGTH=1073741824 HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
after=$(sql "SHOW GLOBAL STATUS LIKE 'Connections'" | cut -f2)
# The second query's own connection is the one expected.
is "$((after - before))" 1 "CGI: the two refusals opened no database connection (Connections $before -> $after)"
cgi_refusal "with no database at all, a bad token is still 401" "401 unauthorized" "$dead" \
	CONTENT_LENGTH=1048576 HTTP_AUTHORIZATION="Bearer not-a-token-of-ours-0000"
cgi_refusal "with no database at all, a declared 1 GiB body is still 413" "413 too_large" "$dead" \
	CONTENT_LENGTH=1073741824 HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
cgi_refusal "with no database, a write that passes the checks is 503" "503 unavailable" "$dead" \
	CONTENT_LENGTH=10 HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"

done_testing
