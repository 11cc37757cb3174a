#!/usr/bin/env bash
# The capacity model's figures (doc/scaling.md, "Capacity model"), counted on the
# cluster rather than read from the code:
#   - per create, download, replace, delete and outbox sweep item: database
#     round trips (node 1's general query log: Query, Prepare, Execute and
#     Reset stmt lines; Connect lines counted apart), replicated commits
#     (node 1's wsrep_local_commits) and storage calls (requests counted by
#     tests/tools/faultproxy between the responder and Azurite);
#   - creates/s through one web host: one client (one responder process
#     busy at a time) and four at once.
# A private lighttpd (the optimised var/build responder) whose config copy
# lists node 1 only and puts the proxy in front of Azurite does the
# requests; warm-up requests first, so the measured ones find their
# connections open and their statements prepared.  Figures are
# diagnostics; the checks are that every request succeeded and that
# each counted figure is a positive whole number per operation.
# CLUSTER_CAP_OPS (default 20) operations of each kind; CLUSTER_CAP_RATE
# (default 200) creates for the rate.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
top=$(cd "$cl_here/../.." && pwd)
. "$top/tests/lib/stack.sh"
export BINDERY_TEST_VAR=$CLUSTER_VAR

n=${CLUSTER_CAP_OPS:-20}
rate_n=${CLUSTER_CAP_RATE:-200}
read -r conf_a _ <<<"$BINDERY_CONFIGS"
read -r sock1 _ <<<"$DB_NODE_SOCKETS"
read -r port1 _ <<<"$DB_NODE_PORTS"
proxy=$BINDERY_BIN/../tests/tools/faultproxy
# (make: a current one, which writes its stats at every request)
make -s -C "$BINDERY_BIN/.." tests/tools/faultproxy >/dev/null 2>&1 || bail_out "could not build tests/tools/faultproxy"
root() { mariadb --no-defaults --protocol=socket --socket="$sock1" -uroot -N -B "$@"; }
work=$(mktemp -d)
ppid_=''
cleanup() {
	root -e "SET GLOBAL general_log = OFF" 2>/dev/null
	[ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
	[ -d "$CLUSTER_VAR/cap-web" ] && { stack_init "$CLUSTER_VAR/cap-web"; stack_lighttpd_stop; }
	rm -rf "$work"
}
trap cleanup EXIT

# ---- the proxy, the config copy, the web server ------------------------------------
az=$(sed -n 's|^endpoint = http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$conf_a")
[ -n "$az" ] || bail_out "no Azurite endpoint in $conf_a"
"$proxy" -t "127.0.0.1:$az" -l 0 -p "$work/proxy.port" -s "$work/proxy.stats" &
ppid_=$!
for _ in $(seq 1 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
pport=$(cat "$work/proxy.port")
[ -n "$pport" ] || bail_out "faultproxy did not start"
sed -e "s|^endpoint = http://127.0.0.1:$az/|endpoint = http://127.0.0.1:$pport/|" \
	-e "s|^host = .*|host = 127.0.0.1:$port1|" "$conf_a" >"$work/cap.conf"
{ grep -q '^\[sweep\]' "$work/cap.conf" || printf '\n[sweep]\nlease = 1\n'; } >>"$work/cap.conf"
chmod 0644 "$work/cap.conf"
stack_private_lighttpd "$CLUSTER_VAR/cap-web" lighttpd.conf "$work/cap.conf" "$BINDERY_BIN" 28220 ||
	bail_out "the measuring web server did not start"
URL=http://127.0.0.1:$HTTP_PORT
for _ in $(seq 1 100); do
	[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$URL/healthz")" = 200 ] && break
	sleep 0.1
done
head -c 4096 /dev/urandom >"$work/doc.bin"
head -c 4096 /dev/urandom >"$work/new.bin"
RUN=clcap$$x$RANDOM

requests() { sed -n 's/.*requests=\([0-9]*\).*/\1/p' "$work/proxy.stats"; }
commits() { root -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_commits'" | cut -f2; }
# measure LABEL COMMAND...: COMMAND (which does n operations) with the
# general log on; one diagnostic line of figures per operation, and
# FIG_RT FIG_COMMITS FIG_STORAGE (per operation, two decimals).
measure() {
	local label=$1 r0 c0 log lines rt conn
	shift
	log=$work/general.$label.log
	root -e "SET GLOBAL general_log_file = '$log', general_log = ON"
	r0=$(requests) c0=$(commits)
	"$@"
	FIG_COMMITS=$(echo "scale=2; ($(commits) - $c0) / $n" | bc)
	FIG_STORAGE=$(echo "scale=2; ($(requests) - $r0) / $n" | bc)
	root -e "SET GLOBAL general_log = OFF"
	# Our own root session's lines (SHOW STATUS, SET GLOBAL) are not
	# bindery's: they come from connections that ran as root.
	lines=$(awk '{
		if (!match($0, /\t *[0-9]+ [A-Z][a-z]+( stmt)?(\t|$)/)) next
		s = substr($0, RSTART + 1, RLENGTH - 1); sub(/\t$/, "", s); sub(/^ */, "", s)
		id = s; sub(/ .*/, "", id); cmd = s; sub(/^[0-9]+ /, "", cmd)
		rest = substr($0, RSTART + RLENGTH)
		if (cmd == "Connect") { if (rest ~ /^root@/) root[id] = 1; else conn++; next }
		if (id in root) next
		if (cmd ~ /^(Query|Prepare|Execute|Reset stmt)$/) rt++
	} END { printf "%d %d", rt, conn }' "$log")
	read -r rt conn <<<"$lines"
	FIG_RT=$(echo "scale=2; $rt / $n" | bc)
	diag "$label: $FIG_RT database round trips, $FIG_COMMITS replicated commits, $FIG_STORAGE storage calls each ($n ops; new connections: $conn)"
}
creates() {
	local i c
	: >"$work/ids"
	for ((i = 0; i < n; i++)); do
		c=$(curl -s -m 60 -o "$work/out" -w '%{http_code}' -H "$AUTH" -H 'Content-Type: application/octet-stream' \
			--data-binary "@$work/doc.bin" "$URL/documents?name=$RUN-$1-$i")
		[ "$c" = 201 ] && jq -r .id "$work/out" >>"$work/ids"
	done
}
downloads() {
	local id
	while read -r id; do
		curl -s -m 60 -o "$work/dl" -w '%{http_code}\n' "$URL/documents/$id/content" >>"$work/dl.codes"
	done <"$work/ids"
}
replaces() {
	local id
	while read -r id; do
		curl -s -m 60 -o /dev/null -w '%{http_code}\n' -H "$AUTH" -X PUT -H 'Content-Type: application/octet-stream' \
			--data-binary "@$work/new.bin" "$URL/documents/$id/content" >>"$work/put.codes"
	done <"$work/ids"
}
deletes() {
	local id
	while read -r id; do
		curl -s -m 60 -o /dev/null -w '%{http_code}\n' -H "$AUTH" -X DELETE "$URL/documents/$id" >>"$work/del.codes"
	done <"$work/ids"
}
sweep_outbox() {
	BINDERY_LOG_STDERR=1 "$BINDERY_BIN/bindery" -c "$work/cap.conf" sweep >"$work/sweep.out" 2>&1
	echo $? >"$work/sweep.rc"
}

# Warm-up: every responder process connects and prepares its statements.
for w in 1 2 3; do creates "warm$w"; downloads; replaces; deletes; done
: >"$work/dl.codes"; : >"$work/put.codes"; : >"$work/del.codes"

measure create creates m
is "$(wc -l <"$work/ids")" "$n" "$n creates answered 201"
cre="$FIG_RT $FIG_COMMITS $FIG_STORAGE"
measure download downloads
is "$(sort -u "$work/dl.codes")" 200 "$n downloads answered 200"
dl="$FIG_RT $FIG_COMMITS $FIG_STORAGE"
measure replace replaces
is "$(sort -u "$work/put.codes")" 200 "$n replaces answered 200"
measure delete deletes
is "$(sort -u "$work/del.codes")" 204 "$n deletes answered 204"
# Each replace and delete left one blob in the outbox (the warm-up's too):
# all made due; the figures are per item drained.
dbname=$(sed -n '/^\[database\]/,/^\[/s/^name = //p' "$work/cap.conf" | head -n 1)
items=$(root "$dbname" -e "SELECT COUNT(*) FROM blobs WHERE state = 'retired'")
root "$dbname" -e "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND WHERE state = 'retired'"
n_saved=$n
n=$items
measure sweep-outbox-item sweep_outbox
n=$n_saved
sw="$FIG_RT $FIG_COMMITS $FIG_STORAGE"
is "$(cat "$work/sweep.rc") $(root "$dbname" -e "SELECT COUNT(*) FROM blobs WHERE state = 'retired'")" "0 0" \
	"a sweep drained all $items outbox items (exit 0, none left)"
positive() { [ "$(echo "$1 > 0" | bc)" = 1 ]; }
for fig in "create:$cre" "download:$dl" "sweep item:$sw"; do
	read -r a _ c <<<"${fig#*:}"
	ok "$(positive "$a" && positive "$c"; echo $?)" "${fig%%:*}: database round trips and storage calls counted ($a, $c)"
done

# ---- creates/s through web host A (the cluster's own, node 1 first) ------------------
read -r URL_WEB _ <<<"$BINDERY_URLS"
rate() { # CLIENTS: creates/s with CLIENTS clients sharing rate_n creates
	local c t0 t1 per=$((rate_n / $1)) pids=()
	t0=$(date +%s.%N)
	for ((c = 0; c < $1; c++)); do
		for ((i = 0; i < per; i++)); do
			curl -s -m 60 -o /dev/null -w '%{http_code}\n' -H "$AUTH" -H 'Content-Type: application/octet-stream' \
				--data-binary "@$work/doc.bin" "$URL_WEB/documents?name=$RUN-r$1-$c-$i"
		done >"$work/rate.$1.$c" &
		pids+=($!)
	done
	wait "${pids[@]}"	# (not the proxy, also a child)
	t1=$(date +%s.%N)
	RATE=$(echo "scale=1; $per * $1 / ($t1 - $t0)" | bc)
	RATE_OK=$(cat "$work"/rate."$1".* | grep -c '^201$')
	RATE_N=$((per * $1))
}
rate 1
is "$RATE_OK" "$RATE_N" "$RATE_N creates from one client: all 201"
diag "creates/s through web host A, 4 KiB, one client (one responder process at a time): $RATE"
rate 4
is "$RATE_OK" "$RATE_N" "$RATE_N creates from four clients: all 201"
diag "creates/s through web host A, 4 KiB, four clients: $RATE"
done_testing
