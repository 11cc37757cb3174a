#!/usr/bin/env bash
# Chaos run: 8 clients doing creates, retried creates with one
# Idempotency-Key, replaces, deletes and downloads through lighttpd and
# through Apache mod_proxy_fcgi in front of the stack's pool, while a
# controller crashes the responder (failpoints with exit, kill -9 of a
# FastCGI worker of either) and injects failures (failpoints with error,
# sleeps).  Then
# one sweep, and every acknowledged document must be readable with its
# SHA-256, nothing stuck, no orphan, and `bindery audit` clean.
#
# Fixed seed (CHAOS_SEED, default 6), bounded count (CHAOS_OPS, default 1000).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
sql_session	# one client for the run's hundreds of queries (tests/lib/db.sh)
OPS=${CHAOS_OPS:-1000}
SEED=${CHAOS_SEED:-6}
CLIENTS=8
FP=$BINDERY_TEST_VAR/failpoints
RUN=ch$$x$RANDOM
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
URL=$CHAOS_URL
{ cat "$BINDERY_CONFIG"; grep -q '^\[sweep\]' "$BINDERY_CONFIG" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli.conf"
chmod 0600 "$work/cli.conf"
chaos_sweep "$work/cli.conf" "$work/sweep.log"
chaos_snapshot "$work/before"
# The closing audit covers the whole container: whatever an earlier test
# left is found here first, so a finding there is not laid at the chaos.
chaos_audit "$work/cli.conf" "$work/audit-before.log" \
	"bindery audit is clean before the chaos (what earlier tests left, swept)"

CHAOS_WORK=$work CHAOS_RUN=$RUN CHAOS_SEED=$SEED CHAOS_URLS=("$URL") CHAOS_FP=$FP
CHAOS_LIGHTTPD_PIDS=$CHAOS_LIGHTTPD_PID
# The stack's pool, behind Apache mod_proxy_fcgi, reads the same failpoints
# file: each operation goes to lighttpd or to it, and its workers are
# killed as lighttpd's are.
pool_pid=
if [ -z "$CHAOS_PRIVATE_LIGHTTPD" ]; then
	[ -n "${BINDERY_TEST_APACHE_POOL_URL:-}" ] && pool_pid=$(stack_pid pool) ||
		missing "the test stack's pool and its Apache (BINDERY_TEST_APACHE_POOL_URL)"
	CHAOS_URLS+=("$BINDERY_TEST_APACHE_POOL_URL")
	CHAOS_LIGHTTPD_PIDS+=" $pool_pid"
fi
note "chaos: seed $SEED, $OPS operations, $CLIENTS clients, responders ${CHAOS_URLS[*]}"
chaos_run "$CLIENTS" "$OPS"

# ---- one sweep, then the checks ------------------------------------------------------
chaos_check "$work/cli.conf" "$work/before"
note "chaos: operations $CHAOS_OPS_DONE, crashes $CHAOS_CRASHES (kill -9: $CHAOS_KILLS), faults $CHAOS_FAULTS, acknowledged $CHAOS_ACKED, verified $CHAOS_VERIFIED, violations $CHAOS_VIOLATIONS ($CHAOS_SECONDS s)"
note "chaos: answers $(awk '$1 == "op" { n[$3]++ } END { for (c in n) printf "%s:%d ", c, n[c] }' "$work/events")"
ok "$([ "$CHAOS_CRASHES" -gt 0 ]; echo $?)" "the run crashed the responder ($CHAOS_CRASHES times)"
if [ -n "$pool_pid" ]; then
	pool_kills=$(awk -v m="$pool_pid" '$1 == "kill" && $3 == m' "$work/chaos" | grep -c .)
	ok "$([ "$pool_kills" -gt 0 ]; echo $?)" "workers of the pool were killed too ($pool_kills of $CHAOS_KILLS kills)"
fi
done_testing
