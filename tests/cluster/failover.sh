#!/usr/bin/env bash
# [database] host as a list: the client fails over.  (1) A config whose
# first server refuses connections: bindery migrate works through the
# next.  (2) Node 1 (web host A's first) leaves the primary component
# (gmcast.isolate=1: it answers 1047 "WSREP has not yet prepared node"):
# bindery migrate with host A's config, and creates through host A, work
# through node 2; open connections to node 1 break on 1047 and the
# transaction runs again on a fresh one.  (3) Node 1 rejoins and has them.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

# migrate needs the migration account: host A's config with it (./dev cluster up).
conf_a=$BINDERY_MIGRATE_CONFIG
[ -r "$conf_a" ] || bail_out "no BINDERY_MIGRATE_CONFIG in the cluster's env (./dev cluster up again)"
read -r sock1 _ <<<"$DB_NODE_SOCKETS"
work=$(mktemp -d)
n1() { mariadb --no-defaults --protocol=socket --socket="$sock1" -uroot -N -B -e "$1" 2>/dev/null; }
status1() { n1 "SHOW STATUS LIKE '$1'" | cut -f2; }
rejoin() {
	local i
	n1 "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"
	for ((i = 0; i < 60; i++)); do
		[ "$(status1 wsrep_local_state_comment)" = Synced ] && [ "$(status1 wsrep_cluster_size)" = 3 ] && return 0
		sleep 1
	done
	return 1
}
trap 'rejoin; rm -rf "$work"' EXIT

# (1) a dead first server
sed -e 's|^host = |host = 127.0.0.1:1, |' "$conf_a" >"$work/dead-first.conf"
chmod 0600 "$work/dead-first.conf"
"$BINDERY_BIN/bindery" -c "$work/dead-first.conf" migrate >"$work/m1.out" 2>&1
is "$?" 0 "migrate with a refused first server works through the next"
sed -e 's|^host = .*|host = 127.0.0.1:1|' "$conf_a" >"$work/dead-only.conf"
chmod 0600 "$work/dead-only.conf"
"$BINDERY_BIN/bindery" -c "$work/dead-only.conf" migrate >/dev/null 2>&1
is "$?" 69 "... which alone is refused (exit 69: the list's first server is really tried)"

# (2) node 1 not primary
n1 "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'"
for ((i = 0; i < 30; i++)); do
	[ "$(status1 wsrep_ready)" = OFF ] && break
	sleep 0.5
done
is "$(status1 wsrep_ready)" OFF "node 1 isolated: wsrep_ready OFF"
"$BINDERY_BIN/bindery" -c "$conf_a" migrate >"$work/m2.out" 2>&1
is "$?" 0 "migrate with node 1 first works through node 2"
sed -e "s|^host = \([^,]*\),.*|host = \1|" "$conf_a" >"$work/node1-only.conf"
chmod 0600 "$work/node1-only.conf"
"$BINDERY_BIN/bindery" -c "$work/node1-only.conf" migrate >"$work/m3.out" 2>&1
isnt "$?" 0 "... while node 1 alone fails ($(grep -o '1047[^(]*' "$work/m3.out" | head -n 1))"
codes=''
head -c 1000 /dev/urandom >"$work/body"
for i in $(seq 1 20); do
	codes+="$(curl -s -m 30 -o /dev/null -w '%{http_code}' -H "$AUTH" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$work/body" "$URL_A/documents?name=cl-failover-$$-$i") "
done
tally=$(printf '%s\n' $codes | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
is "$(printf '%s\n' $codes | grep -c '^201$')" 20 "20 creates through host A while its first node is out: all 201 ($tally)"

# (3) node 1 back
rejoin
is "$(status1 wsrep_local_state_comment)" Synced "node 1 rejoined and is Synced"
is "$(n1 "SELECT COUNT(*) FROM bindery.documents WHERE name LIKE 'cl-failover-$$-%' AND status = 'ready'")" \
	"$(printf '%s\n' $codes | grep -c '^201$')" "... and has every document created while it was out"
done_testing
