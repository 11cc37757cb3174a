#!/usr/bin/env bash
# tests/lib/cluster.sh up|down|status|rejoin N|alive — bindery past one
# machine, on this one: what `./dev cluster` runs once it has built
# var/build (./dev cluster test runs tests/cluster/*.sh against it).
#
#   up        start what is missing: 3 Galera nodes, Azurite, 2 web hosts
#   down      stop them (joiners first)
#   status    what runs, where, and each node's wsrep state
#   rejoin N  start node N again after a stop or a kill -9 (--wsrep-recover,
#             then IST or SST) and wait until it is Synced
#   alive     exit 0 when any node runs
#
# Everything lives in var/cluster/, each part in a stack state directory of
# its own (tests/lib/stack.sh's layout, so its start, PID and stop
# functions apply unchanged):
#
#   var/cluster/          Azurite, secrets.env, env (for the tests)
#   var/cluster/nodeN/    MariaDB Galera node N (N = 1..3): db/, run/, log/,
#                         ports.env (DB_PORT) and galera.env (its gcomm,
#                         IST and SST ports)
#   var/cluster/webN/     web host N (N = 1..2): a lighttpd serving
#                         var/build/app/bindery.fcgi with webN/bindery.conf,
#                         whose [database] host lists node N first
#
# Galera: Debian's galera-4 provider, gcomm over loopback, SST by rsync,
# node 1 bootstraps the cluster (--wsrep-new-cluster), 2 and 3 join it.
# `up` with no node running starts from empty datadirs (a cluster that was
# stopped whole has no node that is safe to bootstrap without looking at
# grastate.dat: for a test cluster a fresh start is the simple, honest one);
# `up` with some nodes running starts only the missing ones, as joiners.

set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/stack.sh
. "$TOP/tests/lib/stack.sh"
say() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

CLUSTER_NODES=3
CLUSTER_WEBS=2
CLUSTER_GALERA=/usr/lib/galera/libgalera_smm.so

cluster_dir() { printf '%s/var/cluster' "$TOP"; }

# cluster_free_port START AVOID: the first free port from START not in the
# space-separated AVOID list (nor 10100-10199, which stack.sh keeps clear).
cluster_free_port() {
	local p=$1 avoid=" $2 "
	while :; do
		if [ "$p" -ge 10100 ] && [ "$p" -le 10199 ]; then
			p=10200
		fi
		case $avoid in *" $p "*) p=$((p + 1)); continue ;; esac
		stack_port_free "$p" && break
		p=$((p + 1))
		[ "$p" -lt 65000 ] || return 1
	done
	printf '%s\n' "$p"
}

# cluster_used_ports: every port a ./dev stack or this cluster remembers.
cluster_used_ports() {
	cat "$TOP/var/ports.env" "$TOP"/var/test/ports.env "$TOP"/var/test/lane-*/ports.env "$(cluster_dir)"/*/ports.env \
		"$(cluster_dir)"/ports.env "$(cluster_dir)"/*/galera.env 2>/dev/null |
		sed -n 's/^[A-Z_]*=//p' | tr '\n' ' '
}

# cluster_node_init N: stack_init on node N's directory; its ports chosen
# once (DB_PORT in ports.env; GCOMM_PORT IST_PORT SST_PORT in galera.env).
cluster_node_init() {
	local d avoid
	d=$(cluster_dir)/node$1
	stack_init "$d"
	GCOMM_PORT='' IST_PORT='' SST_PORT=''
	# shellcheck disable=SC1091
	[ -f "$d/galera.env" ] && . "$d/galera.env"
	if [ -z "$DB_PORT" ] || [ -z "$GCOMM_PORT" ]; then
		avoid=$(cluster_used_ports)
		DB_PORT=$(cluster_free_port $((23305 + $1)) "$avoid") || return 1
		avoid="$avoid $DB_PORT"
		GCOMM_PORT=$(cluster_free_port $((24566 + 10 * $1)) "$avoid") || return 1
		avoid="$avoid $GCOMM_PORT"
		IST_PORT=$(cluster_free_port $((GCOMM_PORT + 1)) "$avoid") || return 1
		avoid="$avoid $IST_PORT"
		SST_PORT=$(cluster_free_port $((GCOMM_PORT + 2)) "$avoid") || return 1
		stack_save_ports
		printf 'GCOMM_PORT=%s\nIST_PORT=%s\nSST_PORT=%s\n' "$GCOMM_PORT" "$IST_PORT" "$SST_PORT" \
			>"$d/galera.env"
	fi
}

# cluster_gcomm_address: gcomm://127.0.0.1:P1,... over every node.
cluster_gcomm_address() {
	local n addr='' p
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		p=$(sed -n 's/^GCOMM_PORT=//p' "$(cluster_dir)/node$n/galera.env")
		addr+="${addr:+,}127.0.0.1:$p"
	done
	printf 'gcomm://%s\n' "$addr"
}

# cluster_sql N SQL: run SQL as root on node N (socket), tab-separated output.
cluster_sql() {
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$(cluster_dir)/node$1/run/mysqld.sock" \
		-uroot -N -B -e "$2"
}

# cluster_status_var N NAME: the value of SHOW STATUS NAME on node N.
cluster_status_var() {
	cluster_sql "$1" "SHOW STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

# cluster_wait_synced N SECONDS SIZE: node N is ready (wsrep_ready=ON,
# Synced) in a primary component of at least SIZE nodes.
cluster_wait_synced() {
	local n=$1 limit=$2 want=$3 i ready state size
	for ((i = 0; i < limit * 5; i++)); do
		ready=$(cluster_status_var "$n" wsrep_ready)
		state=$(cluster_status_var "$n" wsrep_local_state_comment)
		size=$(cluster_status_var "$n" wsrep_cluster_size)
		[ "$ready" = ON ] && [ "$state" = Synced ] && [ "${size:-0}" -ge "$want" ] && return 0
		sleep 0.2
	done
	say "node $n: wsrep_ready=$ready state=$state cluster_size=$size after ${limit}s"
	return 1
}

# cluster_node_recover N: mariadbd --wsrep-recover on node N's datadir (the
# server is stopped); its recovered position UUID:SEQNO is added to
# STACK_MARIADB_EXTRA as --wsrep-start-position and logged to
# log/recover.log.  A clean shutdown's grastate.dat already holds the
# position; after a kill -9 it says seqno -1 and only InnoDB knows.
cluster_node_recover() {
	local n=$1 pos
	# (rsync SST, the default method, wants a cluster address even here.)
	"$(stack_mariadbd)" --no-defaults --user="$(id -un)" --datadir="$STACK_VAR/db" \
		--wsrep-on=ON --wsrep-provider="$CLUSTER_GALERA" --wsrep-cluster-address="$(cluster_gcomm_address)" \
		--innodb-buffer-pool-size=64M --binlog-format=ROW --wsrep-recover \
		>"$STACK_LOG/recover.log" 2>&1 || { say "node $n: mariadbd --wsrep-recover failed (var/cluster/node$n/log/recover.log)"; return 1; }
	pos=$(sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$STACK_LOG/recover.log" | tail -n 1)
	[ -n "$pos" ] || { say "node $n: no recovered position in var/cluster/node$n/log/recover.log"; return 1; }
	say "node $n: recovered position $pos"
	STACK_MARIADB_EXTRA+=(--wsrep-start-position="$pos")
}

# cluster_node_start N [bootstrap]: start node N with wsrep on.
cluster_node_start() {
	local n=$1 boot=${2:-} gcomm
	cluster_node_init "$n" || return 1
	stack_alive mariadb && return 0
	gcomm=$(cluster_gcomm_address)
	STACK_MARIADB_EXTRA=(--wsrep-on=ON --wsrep-provider="$CLUSTER_GALERA"
		--wsrep-cluster-name=bindery-dev --wsrep-cluster-address="$gcomm"
		--wsrep-node-name="node$n" --wsrep-node-address="127.0.0.1:$GCOMM_PORT"
		--wsrep-provider-options="base_port=$GCOMM_PORT;gmcast.listen_addr=tcp://127.0.0.1:$GCOMM_PORT;ist.recv_addr=127.0.0.1:$IST_PORT;gcache.size=64M"
		--wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$SST_PORT"
		--binlog-format=ROW --default-storage-engine=InnoDB --innodb-autoinc-lock-mode=2
		--innodb-buffer-pool-size=64M)
	if [ -n "$boot" ]; then
		STACK_MARIADB_EXTRA+=(--wsrep-new-cluster)
	elif [ -f "$STACK_VAR/db/grastate.dat" ]; then
		# A node that stopped (or was killed) rejoins from where its
		# InnoDB is: the position --wsrep-recover finds lets the donor
		# send only the missing write sets (IST) when its gcache still
		# holds them, instead of the whole datadir (SST).
		cluster_node_recover "$n" || return 1
	elif [ ! -d "$STACK_VAR/db/mysql" ]; then
		# A joiner gets its whole datadir by SST: no mariadb-install-db
		# (an empty mysql/ tells stack_mariadb_start there is one).  The
		# joiner's rsync daemon, started as root, drops to nobody, so
		# nobody must be able to write the datadir.
		mkdir -p "$STACK_VAR/db/mysql" || return 1
		[ "$(id -u)" = 0 ] && chown -R nobody:nogroup "$STACK_VAR/db"
	fi
	# A joiner answers pings only after its state transfer.
	STACK_MARIADB_WAIT=1200 stack_mariadb_start
	local rc=$?
	STACK_MARIADB_EXTRA=()
	return $rc
}

# cluster_web_start N BINDIR: web host N: its bindery.conf (the nodes listed
# from node N on, so each host prefers a different node) and its lighttpd.
cluster_web_start() {
	local n=$1 bindir=$2 hosts='' k m port
	for ((k = 0; k < CLUSTER_NODES; k++)); do
		m=$(((n - 1 + k) % CLUSTER_NODES + 1))
		port=$(sed -n 's/^DB_PORT=//p' "$(cluster_dir)/node$m/ports.env")
		hosts+="${hosts:+, }127.0.0.1:$port"
	done
	stack_init "$(cluster_dir)/web$n"
	if [ -z "$HTTP_PORT" ]; then
		STACK_AVOID_PORTS=$(cluster_used_ports)
		stack_port HTTP_PORT $((28079 + n)) || return 1
	fi
	BLOB_PORT=$CLUSTER_BLOB_PORT
	# stack_write_config renders one host; the list replaces it in a copy, so
	# an unchanged list leaves bindery.conf (and lighttpd) alone.
	stack_write_config "$STACK_VAR/bindery.conf.one" tcp || return 1
	sed -e "s|^host = .*|host = $hosts|" -e '/^port = /d' "$STACK_VAR/bindery.conf.one" \
		>"$STACK_VAR/bindery.conf.new" || return 1
	chmod --reference="$STACK_VAR/bindery.conf.one" "$STACK_VAR/bindery.conf.new"
	chown --reference="$STACK_VAR/bindery.conf.one" "$STACK_VAR/bindery.conf.new"
	CONFIG_CHANGED=
	if cmp -s "$STACK_VAR/bindery.conf.new" "$STACK_VAR/bindery.conf"; then
		rm -f "$STACK_VAR/bindery.conf.new"
	else
		mv -f "$STACK_VAR/bindery.conf.new" "$STACK_VAR/bindery.conf"
		CONFIG_CHANGED=1
	fi
	stack_render_lighttpd "$STACK_VAR/lighttpd.conf" "$bindir" "$STACK_VAR/bindery.conf" || return 1
	# A rebuilt responder or a new config needs fresh FastCGI processes.
	if stack_alive lighttpd && { [ -n "$CONFIG_CHANGED" ] ||
		[ "$bindir/bindery.fcgi" -nt "$STACK_RUN/lighttpd.pid" ]; }; then
		stack_lighttpd_stop
	fi
	stack_lighttpd_start "$STACK_VAR/lighttpd.conf" || return 1
	stack_wait_healthz "http://127.0.0.1:$HTTP_PORT" 30
}

cluster_write_env() {
	local d n urls='' configs='' pids='' ports='' pid
	d=$(cluster_dir)
	for ((n = 1; n <= CLUSTER_WEBS; n++)); do
		stack_init "$d/web$n"
		urls+="${urls:+ }http://127.0.0.1:$HTTP_PORT"
		configs+="${configs:+ }$STACK_VAR/bindery.conf"
	done
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		stack_init "$d/node$n"
		pid=$(stack_pid mariadb) || pid=
		pids+="${pids:+ }$pid"
		ports+="${ports:+ }$DB_PORT"
	done
	stack_init "$d"
	cat >"$d/env.new" <<EOF
# written by ./dev cluster up; sourced by tests/cluster/*.sh
CLUSTER_VAR=$d
BINDERY_URLS='$urls'
BINDERY_TOKEN=$DEMO_TOKEN
BINDERY_CONFIGS='$configs'
BINDERY_MIGRATE_CONFIG=$(cluster_dir)/web1/bindery-migrate.conf
BINDERY_BIN=$TOP/var/build/app
DB_NODE_PIDS='$pids'
DB_NODE_PORTS='$ports'
DB_NODE_SOCKETS='$(for ((n = 1; n <= CLUSTER_NODES; n++)); do printf '%s ' "$d/node$n/run/mysqld.sock"; done)'
DB_PASSWORD=$DB_PASSWORD
BLOB_ENDPOINT=$(stack_blob_endpoint)
EOF
	chmod 0600 "$d/env.new" && mv -f "$d/env.new" "$d/env"
}

cluster_any_node_alive() {
	local n
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		stack_init "$(cluster_dir)/node$n"
		stack_alive mariadb && return 0
	done
	return 1
}

cmd_cluster_up() {
	local t0 d bindir=$TOP/var/build/app n fresh=
	t0=$(date +%s.%N)
	d=$(cluster_dir)
	[ -r "$CLUSTER_GALERA" ] || die "$CLUSTER_GALERA is missing (apt-get install galera-4)"
	[ -x "$bindir/bindery.fcgi" ] || die "var/build/app/bindery.fcgi was not built (./dev cluster up builds it)"
	if ! cluster_any_node_alive; then
		fresh=1
		for ((n = 1; n <= CLUSTER_NODES; n++)); do
			rm -rf "$d/node$n/db"
		done
	fi
	stack_init "$d"
	# Fresh nodes are an empty registry: the last cluster's blobs would all
	# be orphans to the audit (chaos_node_kill.sh audits the container).
	if [ -n "$fresh" ] && ! stack_alive azurite; then
		rm -rf "$d/azurite"
	fi
	stack_secrets
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		cluster_node_init "$n" || die "no free ports for node $n"
	done
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		if [ -n "$fresh" ] && [ "$n" = 1 ]; then
			say "node 1: bootstrapping the cluster"
			cluster_node_start 1 bootstrap || die "node 1 did not start (var/cluster/node1/log/mariadb.log)"
			cluster_wait_synced 1 60 1 || die "node 1 is not ready"
			stack_init "$d/node1"
			stack_mariadb_setup || die "could not create the database and user"
		else
			cluster_node_init "$n" && stack_alive mariadb || say "node $n: joining"
			cluster_node_start "$n" || die "node $n did not start (var/cluster/node$n/log/mariadb.log)"
		fi
	done
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		cluster_wait_synced "$n" 120 "$CLUSTER_NODES" || die "node $n did not reach Synced"
	done
	stack_init "$d"
	stack_azurite_start || die "Azurite did not start (var/cluster/log/azurite.log)"
	CLUSTER_BLOB_PORT=$BLOB_PORT
	for ((n = 1; n <= CLUSTER_WEBS; n++)); do
		cluster_web_start "$n" "$bindir" || die "web host $n did not start (var/cluster/web$n/log/)"
		# The migration account's copy of the host's config (the runtime
		# account has rows only: sql/grants.sql); migrate runs once,
		# through the first web host: DDL replicates (TOI).
		stack_write_migrate_config "$STACK_VAR/bindery.conf" "$STACK_VAR/bindery-migrate.conf" ||
			die "no migration config for web host $n"
		if [ "$n" = 1 ]; then
			stack_migrate "$bindir" "$STACK_VAR/bindery-migrate.conf" || die "migration failed"
		fi
	done
	cluster_write_env
	cmd_cluster_status
	say "cluster up took $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s"
}

cmd_cluster_down() {
	local d n
	d=$(cluster_dir)
	[ -d "$d" ] || return 0
	for ((n = 1; n <= CLUSTER_WEBS; n++)); do
		[ -d "$d/web$n/run" ] || continue
		stack_init "$d/web$n"
		stack_lighttpd_stop
	done
	stack_init "$d"
	stack_azurite_stop
	# The joiners first, the bootstrap node last.
	for ((n = CLUSTER_NODES; n >= 1; n--)); do
		[ -d "$d/node$n/run" ] || continue
		stack_init "$d/node$n"
		stack_mariadb_stop
	done
	say "cluster stopped"
}

cmd_cluster_status() {
	local d n pid
	d=$(cluster_dir)
	[ -d "$d" ] || { echo "cluster: never started"; return 0; }
	echo "cluster ($d):"
	for ((n = 1; n <= CLUSTER_NODES; n++)); do
		cluster_node_init "$n" >/dev/null 2>&1 || continue
		if pid=$(stack_pid mariadb); then
			printf '  node%s     running  pid %-7s port %-5s gcomm %s  %s %s size %s\n' "$n" "$pid" \
				"$DB_PORT" "$GCOMM_PORT" "$(cluster_status_var "$n" wsrep_local_state_comment)" \
				"$(cluster_status_var "$n" wsrep_cluster_status)" "$(cluster_status_var "$n" wsrep_cluster_size)"
		else
			printf '  node%s     stopped\n' "$n"
		fi
	done
	stack_init "$d"
	if pid=$(stack_pid azurite); then
		printf '  azurite   running  pid %-7s port %s\n' "$pid" "$BLOB_PORT"
	else
		printf '  azurite   stopped\n'
	fi
	for ((n = 1; n <= CLUSTER_WEBS; n++)); do
		[ -d "$d/web$n" ] || continue
		stack_init "$d/web$n"
		if pid=$(stack_pid lighttpd); then
			printf '  web%s      running  pid %-7s http://127.0.0.1:%s/  healthz %s\n' "$n" "$pid" \
				"$HTTP_PORT" "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/healthz")"
		else
			printf '  web%s      stopped\n' "$n"
		fi
	done
}

# cmd_cluster_rejoin N: start node N again (after a stop or a kill -9) as a
# joiner, --wsrep-recover first (cluster_node_start), and wait until it is
# Synced in the full cluster; nothing else is built or restarted, so a test
# may call it under load and time it.  Rewrites var/cluster/env (its PID).
cmd_cluster_rejoin() {
	local n=${1:-}
	case $n in [1-9]) [ "$n" -le "$CLUSTER_NODES" ] || die "no node $n" ;; *) die "./dev cluster rejoin N" ;; esac
	cluster_node_init "$n" || die "node $n: no ports"
	stack_alive mariadb && die "node $n is running"
	cluster_node_start "$n" || die "node $n did not start (var/cluster/node$n/log/mariadb.log)"
	cluster_wait_synced "$n" 300 "$CLUSTER_NODES" || die "node $n did not reach Synced"
	cluster_write_env
}

case ${1:-status} in
up) cmd_cluster_up ;;
down) cmd_cluster_down ;;
status) cmd_cluster_status ;;
rejoin) cmd_cluster_rejoin "${2:-}" ;;
alive) cluster_any_node_alive ;;
*) die "usage: ./dev cluster up|down|status|test|rejoin N" ;;
esac
