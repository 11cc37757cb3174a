#!/usr/bin/env bash
# The restore drill (tests/e2e/restore_drill.sh) on the Galera cluster: its
# database of its own is created, dumped and restored through node 1 (root
# over node 1's socket), while every request, sweep and repair goes
# through host B's configuration, which prefers node 2.  So the repair
# reads rows a restore wrote on another node, and the id floor it raises
# (AUTO_INCREMENT, which Galera spaces per node) must hold cluster-wide: a
# new document after the repair takes no id a surviving blob names.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
top=$(cd "$cl_here/../.." && pwd)
read -r _ conf_b _ <<<"$BINDERY_CONFIGS"
read -r sock1 _ <<<"$DB_NODE_SOCKETS"
[ -n "$conf_b" ] && [ -n "$sock1" ] || bail_out "two configs and a node socket needed"
[ -n "${BINDERY_FP_BIN:-}" ] && [ -x "$BINDERY_FP_BIN/bindery" ] ||
	bail_out "BINDERY_FP_BIN (a --enable-failpoints build's app/) is needed: run it through ./dev cluster test"
# The drill's own names for what it needs (tests/lib/db.sh's sql() reads
# the socket and database name; the drill the rest).
export BINDERY_CONFIG=$conf_b BINDERY_TEST_MIGRATE_CONFIG=$BINDERY_MIGRATE_CONFIG \
	BINDERY_TEST_BIN=$BINDERY_FP_BIN BINDERY_TEST_DB_SOCKET=$sock1 BINDERY_TEST_DB_NAME=bindery \
	BINDERY_TEST_TOKEN=$BINDERY_TOKEN
exec bash "$top/tests/e2e/restore_drill.sh"
