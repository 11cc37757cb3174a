#!/usr/bin/env bash
# bindery.fcgi as a standing pool (app/pool.h), seen from a real FastCGI
# client: a lighttpd of this test's own from conf/lighttpd-pool.conf, whose
# fastcgi.server names the pool's socket and spawns nothing.  (Apache
# mod_proxy_fcgi in front of the stack's own pool is tests/e2e/apache_pool.sh.)
#   - the socket is 0660; the master holds no database or storage
#     connection (its workers do);
#   - kill -9 of every worker: /healthz answers 200 again within 5 s;
#     workers killed during a burst of creates lose nothing acknowledged
#     (every 201 reads back with its bytes);
#   - --max-requests recycles workers, and no request fails for it;
#   - SIGHUP with a configuration that does not load keeps the workers
#     (logged); with a good one it replaces them, and requests made during
#     the reload all succeed;
#   - SIGTERM lets an upload in flight finish (201), then the master exits
#     and its socket is gone;
#   - the master killed: its workers exit, lighttpd answers 503, a restart
#     over the stale socket serves again; a second master on a socket in
#     use is refused;
#   - started by systemd-socket-activate (LISTEN_FDS) it serves without
#     --listen;
#   - --listen on a non-loopback address is refused (FastCGI carries no
#     authentication); a loopback TCP address serves.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"

need_stack BINDERY_TEST_VAR BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_LIGHTTPD_URL
lane_ports=$BINDERY_TEST_VAR/ports.env
stack_init "$BINDERY_TEST_VAR/pool"
dir=$STACK_VAR
sock=$dir/run/pool.sock
conf=$dir/bindery.conf
run=pool-$(stack_random_hex 4)
fcgi=$BINDERY_TEST_BIN/bindery.fcgi
auth="Authorization: Bearer $BINDERY_TEST_TOKEN"
work=$dir/work
rm -rf "$work" && mkdir -p "$work" "$dir/run" || bail_out "cannot make $work"

cleanup() {
	stack_init "$dir"
	stack_lighttpd_stop
	stack_stop pool 30
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cleanup	# whatever an interrupted run left behind

stack_test_conf "$conf" "$run/" || bail_out "the test configuration does not load"
cp "$conf" "$work/good.conf"

# The test build's failpoints (lib/base/failpoint.h): armed below to hold
# creates in flight long enough to kill the worker serving one.
fp=$work/failpoints
: >"$fp"
pool_start() { # WORKERS [ARGS...]
	local n=$1
	shift
	BINDERY_FAILPOINTS_FILE=$fp stack_spawn pool "$STACK_LOG/pool.out" "$fcgi" -c "$conf" --listen "unix:$sock" --workers "$n" \
		--drain-seconds 20 "$@"
}
master() { stack_pid pool; }
# The master's children, sorted, on one line.
workers() {
	local m
	m=$(master) || return 0
	pgrep -P "$m" | sort -n | tr '\n' ' '
}
nworkers() { local w; w=$(workers); set -- $w; echo $#; }
healthy() { req GET "$url/healthz"; [ "$HTTP_CODE" = 200 ]; }

# The FastCGI client: lighttpd with the pool's socket and no bin-path.
STACK_AVOID_PORTS=$(sed -n 's/^[A-Z_]*=//p' "$lane_ports" 2>/dev/null | tr '\n' ' ')
rm -f "$dir/ports.env"
HTTP_PORT=''
stack_port HTTP_PORT 18400 || bail_out "no free port"
url=http://127.0.0.1:$HTTP_PORT
mkdir -p "$dir/www" "$dir/tmp"
stack_render "$STACK_TOP/conf/lighttpd-pool.conf" "$dir/lighttpd.conf" PORT="$HTTP_PORT" VAR="$dir" \
	SOCKET="$sock" || bail_out "bad conf/lighttpd-pool.conf"

pool_start 2 --max-requests 40 || bail_out "the pool did not start"
stack_lighttpd_start "$dir/lighttpd.conf" || bail_out "lighttpd did not start"
note "pool: master $(master), workers $(workers); lighttpd on $HTTP_PORT"

ok "$(wait_for 10 healthy; echo $?)" "the pool answers /healthz through lighttpd"
is "$(stat -c %a "$sock")" 660 "its socket is 0660: the owner and the web server's group only"
is "$(nworkers)" 2 "the master runs the 2 workers asked for"

# A document with every byte value, through the pool and back.
head -c 300000 /dev/urandom >"$work/doc.bin"
printf '\0\1\2\377' >>"$work/doc.bin"
req POST "$url/documents?name=$run-a" -H "$auth" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$work/doc.bin"
is "$HTTP_CODE" 201 "a create through the pool is 201"
id=$(jfield "$HTTP_BODY" id)
curl -s -o "$work/back.bin" -H "$auth" "$url/documents/$id/content"
is "$(sha "$work/back.bin")" "$(sha "$work/doc.bin")" "... and its bytes come back identical"

# Connections: the workers hold them, the master never does.
m=$(master)
is "$(ss -tnpH 2>/dev/null | grep -c "pid=$m,")" 0 "the master holds no TCP connection (no database, no storage)"
w=$(workers)
conns=0
for p in $w; do conns=$((conns + $(ss -tnpH 2>/dev/null | grep -c "pid=$p,"))); done
ok '[ "$conns" -gt 0 ]' "its workers hold the connections ($conns): the check above can see them"

# kill -9 every worker: back within 5 s.
before=$(workers)
kill -KILL $before 2>/dev/null
t0=$(date +%s%N)
ok "$(wait_for 5 healthy; echo $?)" "kill -9 of every worker: /healthz is 200 again within 5 s"
note "back after $((($(date +%s%N) - t0) / 1000000)) ms"
after=$(workers)
is "$(nworkers)" 2 "... with 2 workers again"
ok '[ -z "$(comm -12 <(tr " " "\n" <<<"$before" | sed "/^$/d") <(tr " " "\n" <<<"$after" | sed "/^$/d"))" ]' \
	"... all of them new ($before-> $after)"

# Creates while workers are killed: whatever was acknowledged is there.
# Each create waits 1.5 s once its intent is written, so a kill finds one
# in flight (and leaves a pending intent, which is the sweeper's).
printf 'create.after_intent sleep:1500\n' >"$fp"
for i in $(seq 1 24); do head -c $((60000 + i * 997)) /dev/urandom >"$work/burst-$i.bin"; done
(
	for i in $(seq 1 24); do
		code=$(curl -s -m 30 -o "$work/burst-$i.json" -w '%{http_code}' -X POST -H "$auth" \
			-H 'Content-Type: application/octet-stream' --data-binary @"$work/burst-$i.bin" \
			"$url/documents?name=$run-burst-$i")
		printf '%s %s\n' "$i" "$code"
	done >"$work/burst.codes"
) &
burst=$!
busy_kills=0 seen=$(grep -c 'create.after_intent: sleeping' "$STACK_LOG/pool.out")
# A worker in the middle of a create: the newest failpoint line it logged
# ("bindery.fcgi[PID] warn: failpoint create.after_intent: sleeping") says
# it has 1.5 s to go; killed at once, it dies with the create unanswered.
held() { grep -c 'create.after_intent: sleeping' "$STACK_LOG/pool.out"; }
while [ "$busy_kills" -lt 3 ] && kill -0 "$burst" 2>/dev/null; do
	now=$(held)
	if [ "$now" -gt "$seen" ]; then
		seen=$now
		p=$(grep 'create.after_intent: sleeping' "$STACK_LOG/pool.out" | tail -n 1)
		p=${p#*bindery.fcgi[}
		p=${p%%]*}
		kill -KILL "$p" 2>/dev/null && busy_kills=$((busy_kills + 1))
	else
		sleep 0.05
	fi
done
# The rest of the burst runs without the pause.
: >"$fp"
wait "$burst"
: >"$fp"
diag "creates held by the failpoint: $(grep -c 'create.after_intent: sleeping' "$STACK_LOG/pool.out")"
ok '[ "$busy_kills" -ge 1 ]' "workers were killed in the middle of a request ($busy_kills times)"
acked=0 lost=0 odd=0
while read -r i code; do
	case $code in
	201)
		acked=$((acked + 1))
		id=$(jfield "$(<"$work/burst-$i.json")" id)
		curl -s -o "$work/burst-back.bin" -H "$auth" "$url/documents/$id/content"
		[ "$(sha "$work/burst-back.bin")" = "$(sha "$work/burst-$i.bin")" ] || lost=$((lost + 1)) ;;
	5??) ;;
	*) odd=$((odd + 1)) ;;
	esac
done <"$work/burst.codes"
note "burst: $acked of 24 acknowledged while $busy_kills busy workers were killed"
ok '[ "$acked" -gt 0 ] && [ "$acked" -lt 24 ]' "some creates were acknowledged, the killed ones were not ($acked of 24)"
is "$lost" 0 "every acknowledged create reads back with its bytes"
is "$odd" 0 "every other answer is a 5xx (no 4xx, no silence)"

# --max-requests 40: workers are recycled, no request fails for it.
# (One curl sends the 100, one after another: a curl each cost more CPU
# than the pool serving them.  lighttpd opens a FastCGI connection per
# request either way.)
before=$(workers)
urls=()
for i in $(seq 1 100); do urls+=(-o /dev/null "$url/healthz"); done
curl -s -m 120 -w '%{http_code}\n' "${urls[@]}" >"$work/recycle.codes"
fails=$(grep -vc '^200$' "$work/recycle.codes")
is "$fails $(grep -c . "$work/recycle.codes")" "0 100" "100 requests over workers recycled every 40 all succeed"
isnt "$(workers)" "$before" "... and the workers were replaced meanwhile"

# SIGHUP with a configuration that does not load: the workers stay.
before=$(workers)
printf '\n[limits]\nno_such_key = 1\n' >>"$conf"
kill -HUP "$(master)"
ok "$(wait_for 5 grep -q 'reload refused' "$STACK_LOG/pool.out"; echo $?)" \
	"SIGHUP with a broken configuration is refused, logged"
is "$(workers)" "$before" "... and the running workers keep serving"
ok "$(healthy; echo $?)" "... /healthz is 200"

# SIGHUP with a good one: new workers; requests during the reload succeed.
cp "$work/good.conf" "$conf"
(
	for i in $(seq 1 60); do
		curl -s -o /dev/null -w '%{http_code}\n' "$url/healthz"
	done >"$work/reload.codes"
) &
load=$!
sleep 0.2
kill -HUP "$(master)"
wait "$load"
is "$(grep -vc '^200$' "$work/reload.codes")" 0 "60 requests across a reload all answer 200"
gone() { local p; for p in $before; do grep -qs '^State:[[:space:]]*[^Z]' "/proc/$p/status" && return 1; done; return 0; }
ok "$(wait_for 10 gone; echo $?)" "SIGHUP with a good configuration replaces every worker"
is "$(nworkers)" 2 "... 2 of them"

# SIGTERM while an upload is in flight: it finishes, then the master goes.
# First the reload's new workers answer (lighttpd sets a backend that
# refused a connection aside for a moment: its 503 is not the drain's).
wait_for 10 healthy
size=400000
python3 "$here/../tools/slow_client.py" --port "$HTTP_PORT" --path "/documents?name=$run-drain" \
	--header "$auth" --header 'Content-Type: application/octet-stream' --length "$size" \
	--first 50000 --every 0.25 --chunk 35000 --give-up 60 >"$work/drain.out" 2>&1 &
client=$!
# The stop comes once a worker reads the body (in read(2), not accept(2)):
# a fixed pause lost a race with python's start on a loaded machine.
reading() { local p; for p in $(workers); do [ "$(cut -d' ' -f1 "/proc/$p/syscall" 2>/dev/null)" = 0 ] && return 0; done; return 1; }
ok "$(wait_for 10 reading; echo $?)" "a worker is reading the upload's body"
m=$(master)
kill -TERM "$m"
wait "$client"
read -r code secs err _ <"$work/drain.out"
is "$code $err" "201 -" "SIGTERM during an upload: the upload still finishes, 201 ($secs s)"
master_gone() { ! kill -0 "$m" 2>/dev/null; }
ok "$(wait_for 8 master_gone; echo $?)" "... then the master exits within 8 s, well inside --drain-seconds 20 (idle workers stop at once)"
ok '[ ! -e "$sock" ]' "... and its socket is removed"
req GET "$BINDERY_TEST_LIGHTTPD_URL/documents?name=$run-drain" -H "$auth"
like "$HTTP_BODY" "\"size\": *$size" "... the drained upload is a ready document of $size bytes"

# The master killed: its workers follow it; a restart serves again.
pool_start 2 || bail_out "the pool did not restart"
ok "$(wait_for 10 healthy; echo $?)" "a new master over the stale socket serves"
m=$(master)
w=$(workers)
kill -KILL "$m"
# A zombie has exited: only its parent has not reaped it yet.
running() { grep -qs '^State:[[:space:]]*[^Z]' "/proc/$1/status"; }
no_orphans() { local p; for p in $w; do running "$p" && return 1; done; return 0; }
ok "$(wait_for 5 no_orphans; echo $?)" "kill -9 of the master: its workers exit too"
req GET "$url/healthz"
like "$HTTP_CODE" '^50[23]$' "... and lighttpd answers $HTTP_CODE with no pool behind it"
pool_start 2 || bail_out "the pool did not restart"
ok "$(wait_for 10 healthy; echo $?)" "a restart serves again"

# A second master on the same socket is refused; the first keeps it.
"$fcgi" -c "$conf" --listen "unix:$sock" --workers 1 >"$work/second.out" 2>&1
rc=$?
isnt "$rc" 0 "a second master on a socket in use is refused (exit $rc)"
like "$(<"$work/second.out")" 'in use' "... saying the socket is in use"
ok "$(healthy; echo $?)" "... and the first still serves"

# systemd's socket activation: the socket comes as descriptor 3 with
# LISTEN_FDS and LISTEN_PID, and no --listen is given.
command -v systemd-socket-activate >/dev/null || missing "systemd-socket-activate (the systemd package)"
m=$(master)
kill -TERM "$m"
ok "$(wait_for 25 master_gone; echo $?)" "the pool stops on SIGTERM"
rm -f "$sock"
systemd-socket-activate -l "$sock" "$fcgi" -c "$conf" --workers 1 >"$work/activated.out" 2>&1 &
activated=$!
ok "$(wait_for 10 healthy; echo $?)" "started by systemd-socket-activate (LISTEN_FDS), the pool serves"
like "$(tr '\0' ' ' <"/proc/$activated/cmdline")" 'bindery\.fcgi' "... as bindery.fcgi itself, on the socket it was given"
kill -TERM "$activated"
wait "$activated"
is "$?" 0 "... and exits 0 on SIGTERM"

# Settings only a worker would open with are checked by the master: a pool
# that could never serve stops at once instead of respawning workers.
{ cat "$work/good.conf"; printf '\n[storage]\nkey = @STORAGE_KEY@\n'; } >"$work/badkey.conf"
timeout 20 "$fcgi" -c "$work/badkey.conf" --listen "unix:$work/badkey.sock" --workers 1 >"$work/badkey.out" 2>&1
is "$?" 78 "a storage key that is not base64 stops the pool at start (78), no worker respawned"
like "$(<"$work/badkey.out")" 'storage' "... naming the storage settings"

# Addresses: loopback TCP only.
"$fcgi" -c "$conf" --listen 0.0.0.0:18499 --workers 1 >"$work/any.out" 2>&1
is "$?" 78 "--listen 0.0.0.0:PORT is refused as a configuration error (78)"
like "$(<"$work/any.out")" 'loopback' "... naming the loopback rule"
"$fcgi" -c "$conf" --listen "[::]:18499" --workers 1 >/dev/null 2>&1
is "$?" 78 "--listen [::]:PORT is refused too"
"$fcgi" -c "$conf" --workers 0 --listen "unix:$work/x.sock" >/dev/null 2>&1
is "$?" 64 "--workers 0 is a usage error (64)"
tport=$HTTP_PORT
stack_forget_port POOL_TCP_PORT
stack_port POOL_TCP_PORT 18450 || bail_out "no free port"
"$fcgi" -c "$conf" --listen "127.0.0.1:$POOL_TCP_PORT" --workers 1 >"$work/tcp.out" 2>&1 &
tcp=$!
listening() { [ -n "$(ss -ltnH "sport = :$POOL_TCP_PORT" 2>/dev/null)" ]; }
ok "$(wait_for 5 listening; echo $?)" "--listen 127.0.0.1:PORT listens"
like "$(ss -ltnH "sport = :$POOL_TCP_PORT")" "127\.0\.0\.1:$POOL_TCP_PORT" "... on the loopback address only"
kill -TERM "$tcp"
wait "$tcp"
is "$?" 0 "... and exits 0 on SIGTERM"
HTTP_PORT=$tport

done_testing
