#!/usr/bin/env bash
# What Galera costs here (doc/performance.md, "On a Galera cluster"): 200 single-row
# INSERT + COMMIT transactions on node 1 replicated (wsrep on) and with the
# session's replication off (SET SESSION wsrep_on = OFF: the same server,
# disk and settings, so the difference is certification and replication);
# and 200 point SELECTs by primary key with wsrep_sync_wait = 0 and = 1
# (read-after-write across nodes).  Figures are diagnostics; the checks
# are that every statement ran.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

n=${CLUSTER_COST_ROWS:-200}
read -r sock1 sock2 _ <<<"$DB_NODE_SOCKETS"
my() { # SOCKET SQL...
	local s=$1
	shift
	mariadb --no-defaults --protocol=socket --socket="$s" -uroot -N -B "$@"
}
ms_of() { # SOCKET FILE: run FILE's statements in one session; print milliseconds
	local t0
	t0=$(date +%s%N)
	my "$1" bindery_cost <"$2" >/dev/null || return 1
	echo $((($(date +%s%N) - t0) / 1000000))
}
work=$(mktemp -d)
trap 'rm -rf "$work"; my "$sock1" -e "DROP DATABASE IF EXISTS bindery_cost" 2>/dev/null' EXIT

my "$sock1" -e "DROP DATABASE IF EXISTS bindery_cost; CREATE DATABASE bindery_cost;
	CREATE TABLE bindery_cost.t (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64) NOT NULL,
	local_only TINYINT NOT NULL) ENGINE=InnoDB" || bail_out "cannot create bindery_cost on node 1"

for i in $(seq 1 "$n"); do printf 'START TRANSACTION; INSERT INTO t (v, local_only) VALUES ("r%s", 0); COMMIT;\n' "$i"; done >"$work/repl.sql"
{ echo 'SET SESSION wsrep_on = OFF;'
  for i in $(seq 1 "$n"); do printf 'START TRANSACTION; INSERT INTO t (v, local_only) VALUES ("l%s", 1); COMMIT;\n' "$i"; done; } >"$work/local.sql"
# Twice each, interleaved, the better of two: the machine is shared.
r1=$(ms_of "$sock1" "$work/repl.sql") l1=$(ms_of "$sock1" "$work/local.sql")
r2=$(ms_of "$sock1" "$work/repl.sql") l2=$(ms_of "$sock1" "$work/local.sql")
repl=$((r1 < r2 ? r1 : r2)) local=$((l1 < l2 ? l1 : l2))
is "$(my "$sock1" -e 'SELECT COUNT(*) FROM bindery_cost.t WHERE local_only = 0')" $((2 * n)) "$((2 * n)) replicated commits on node 1"
is "$(my "$sock2" -e 'SELECT COUNT(*) FROM bindery_cost.t WHERE local_only = 1')" 0 \
	"... and the wsrep_on=OFF ones stayed on node 1 (the comparison is fair)"
diag "$n single-row INSERT+COMMIT on node 1: replicated ${repl} ms ($((repl * 1000 / n)) us each), wsrep_on=OFF ${local} ms ($((local * 1000 / n)) us each)"

# Point reads on node 2 of rows written through node 1.
{ echo 'SET SESSION wsrep_sync_wait = 0;'
  for i in $(seq 1 "$n"); do printf 'SELECT v FROM t WHERE id = %s;\n' "$i"; done; } >"$work/read0.sql"
{ echo 'SET SESSION wsrep_sync_wait = 1;'
  for i in $(seq 1 "$n"); do printf 'SELECT v FROM t WHERE id = %s;\n' "$i"; done; } >"$work/read1.sql"
a1=$(ms_of "$sock2" "$work/read0.sql") b1=$(ms_of "$sock2" "$work/read1.sql")
a2=$(ms_of "$sock2" "$work/read0.sql") b2=$(ms_of "$sock2" "$work/read1.sql")
ok "[ -n '$a1' ] && [ -n '$b1' ]" "$n point SELECTs on node 2, with and without wsrep_sync_wait"
a=$((a1 < a2 ? a1 : a2)) b=$((b1 < b2 ? b1 : b2))
diag "$n point SELECTs on node 2: wsrep_sync_wait=0 ${a} ms ($((a * 1000 / n)) us each), =1 ${b} ms ($((b * 1000 / n)) us each)"
done_testing
