#!/usr/bin/env bash
# The chaos run (tests/lib/chaos.sh's clients and controller, as
# tests/chaos/chaos.sh runs them) over both web hosts, while Galera node 2
# (web host B's first node) is killed with SIGKILL and later rejoins
# (`./dev cluster rejoin 2`: mariadbd --wsrep-recover, then IST or SST).
# Clients do creates, retried creates with one Idempotency-Key, replaces,
# deletes and downloads, each through a host picked at random; the
# controller arms crash and fault points in the responders of both hosts
# and kills FastCGI workers with kill -9.  The run lasts until the node has
# rejoined and some more operations went through it (or CHAOS_OPS are
# done).  Then: one sweep exits 0, every acknowledged document reads back
# byte-identical (SHA-256 of the bytes, from files) through both chaos
# hosts AND both of the cluster's own web hosts, nothing stuck and no
# orphan, `bindery audit` clean, and the three nodes hold the same rows
# (CHECKSUM TABLE).  Figures: operations, responder kills, node down and
# rejoin time (IST or SST), acknowledged = verified.
#
# The responders come from the failpoints build (BINDERY_FP_BIN, set by
# ./dev cluster test): two lighttpds of this test's own, one per web host
# config.  CHAOS_SEED (default 16), CHAOS_OPS (default 3000, an upper
# bound), CLUSTER_KILL_AFTER and CLUSTER_DOWN_FOR (seconds, default 8 and 10).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
top=$(cd "$cl_here/../.." && pwd)
. "$top/tests/lib/chaos.sh"

read -r conf_a _ <<<"$BINDERY_CONFIGS"
cl_chaos_view

OPS=${CHAOS_OPS:-3000}
SEED=${CHAOS_SEED:-16}
KILL_AFTER=${CLUSTER_KILL_AFTER:-8}
DOWN_FOR=${CLUSTER_DOWN_FOR:-10}
CLIENTS=8
VICTIM=2
FP=$CLUSTER_VAR/chaos-failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	touch "$work/halt" "$work/stop" 2>/dev/null
	cl_failpoint_hosts_stop chaos
	# A node this run killed and did not bring back comes back now.
	stack_init "$CLUSTER_VAR/node$VICTIM"
	stack_alive mariadb || "$top/dev" cluster rejoin "$VICTIM" >>"$work/rejoin.log" 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
# Two responders with failpoints, one per web host config, one file.
cl_failpoint_hosts chaos "$FP"
urls=("${CL_FP_URLS[@]}") lpids=$CL_FP_LIGHTTPD_PIDS

{ cat "$conf_a"; grep -q '^\[sweep\]' "$conf_a" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli.conf"
chmod 0600 "$work/cli.conf"
chaos_sweep "$work/cli.conf" "$work/sweep.log"
chaos_snapshot "$work/before"
stack_init "$CLUSTER_VAR/node$VICTIM"
victim_pid=$(stack_pid mariadb) || bail_out "node $VICTIM is not running"

# ---- the node killer ---------------------------------------------------------------
# Kills node VICTIM after KILL_AFTER s, starts it again DOWN_FOR s later
# (./dev cluster rejoin: --wsrep-recover, then IST or SST, then Synced),
# lets the run go on 10 s with the node back, then halts the clients.
# Writes "killed_at restart_at synced_at" (seconds of the epoch) to
# $work/node.times and the rejoin's status to $work/node.rc.
node_killer() {
	local tk tr ts rc
	sleep "$KILL_AFTER"
	[ -e "$work/halt" ] && { echo "no kill: the clients were done" >"$work/node.rc"; return; }
	kill -9 "$victim_pid"
	tk=$(date +%s.%N)
	sleep "$DOWN_FOR"
	tr=$(date +%s.%N)
	"$top/dev" cluster rejoin "$VICTIM" >"$work/rejoin.log" 2>&1
	rc=$?
	ts=$(date +%s.%N)
	echo "$tk $tr $ts" >"$work/node.times"
	echo "$rc" >"$work/node.rc"
	[ -e "$work/halt" ] && echo late >"$work/node.late"
	sleep 10
	touch "$work/halt"
}

note "chaos over two hosts (${urls[*]}), node $VICTIM (pid $victim_pid) killed after ${KILL_AFTER}s for ${DOWN_FOR}s; seed $SEED, at most $OPS operations, $CLIENTS clients"
logmark=$(wc -c <"$CLUSTER_VAR/node$VICTIM/log/mariadb.log")
CHAOS_WORK=$work CHAOS_RUN=clch$$x$RANDOM CHAOS_SEED=$SEED CHAOS_URLS=("${urls[@]}") CHAOS_FP=$FP
CHAOS_LIGHTTPD_PIDS=$lpids
node_killer &
kpid=$!
chaos_run "$CLIENTS" "$OPS"
touch "$work/halt"
wait "$kpid"

# ---- the node came back -----------------------------------------------------------------
is "$(cat "$work/node.rc" 2>/dev/null)" 0 "node $VICTIM was killed (SIGKILL) during the run and rejoined (./dev cluster rejoin)"
[ "$(cat "$work/node.rc" 2>/dev/null)" = 0 ] || sed -e 's/^/#   rejoin: /' "$work/rejoin.log" | tail -n 20
ok "$([ ! -e "$work/node.late" ]; echo $?)" "... while the clients were still running"
read -r tk tr ts <"$work/node.times" 2>/dev/null
down=$(printf '%.1f' "$(echo "${ts:-0} - ${tk:-0}" | bc)")
rejoin=$(printf '%.1f' "$(echo "${ts:-0} - ${tr:-0}" | bc)")
newlog=$(tail -c +$((logmark + 1)) "$CLUSTER_VAR/node$VICTIM/log/mariadb.log")
if grep -q 'IST received' <<<"$newlog"; then transfer=IST
elif grep -qi 'SST .*complete\|sst_received\|SST received' <<<"$newlog"; then transfer=SST
else transfer=unknown
fi
recovered=$(sed -n 's/.*recovered position //p' "$work/rejoin.log" | tail -n 1)

# ---- the checks: through the chaos hosts and the cluster's own web hosts ----------------
read -r -a web_urls <<<"$BINDERY_URLS"
CHAOS_URLS=("${urls[@]}" "${web_urls[@]}")
chaos_check "$work/cli.conf" "$work/before"
sums=''
for s in $DB_NODE_SOCKETS; do
	sums+="$(mariadb --no-defaults --protocol=socket --socket="$s" -uroot -N -B "$BINDERY_TEST_DB_NAME" \
		-e 'SET SESSION wsrep_sync_wait = 1; CHECKSUM TABLE documents, blobs, idempotency_keys' | awk '{ printf "%s ", $2 }')/"
done
is "$(tr '/' '\n' <<<"$sums" | sed '/^$/d' | awk 'NF == 3' | sort -u | wc -l) $(tr '/' '\n' <<<"$sums" | awk 'NF == 3' | wc -l)" \
	"1 $(wc -w <<<"$DB_NODE_SOCKETS")" "the three nodes hold the same rows (CHECKSUM TABLE documents, blobs, idempotency_keys: $sums)"
note "chaos on the cluster: operations $CHAOS_OPS_DONE in $CHAOS_SECONDS s, responder crashes $CHAOS_CRASHES (kill -9 of workers: $CHAOS_KILLS), faults $CHAOS_FAULTS"
note "node $VICTIM: SIGKILL, down ${down} s in all, rejoin ${rejoin} s (--wsrep-recover at ${recovered:-?}, $transfer)"
note "acknowledged $CHAOS_ACKED = verified $CHAOS_VERIFIED (through ${#CHAOS_URLS[@]} URLs), violations $CHAOS_VIOLATIONS"
note "answers $(awk '$1 == "op" { n[$3]++ } END { for (c in n) printf "%s:%d ", c, n[c] }' "$work/events")"
ok "$([ "$CHAOS_CRASHES" -gt 0 ]; echo $?)" "the run crashed responders ($CHAOS_CRASHES times)"
done_testing
