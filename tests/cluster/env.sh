# shellcheck shell=bash
# tests/cluster/env.sh — sourced by tests/cluster/*.sh: tap.sh and http.sh,
# and the running cluster's var/cluster/env (./dev cluster up writes it;
# ./dev cluster test names it in BINDERY_CLUSTER_ENV).  Sets URL_A, URL_B
# (the two web hosts, each on its own Galera node) and AUTH.
cl_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$cl_here/../lib/tap.sh"
. "$cl_here/../lib/http.sh"
cl_env=${BINDERY_CLUSTER_ENV:-$cl_here/../../var/cluster/env}
[ -r "$cl_env" ] || bail_out "no cluster: $cl_env is missing (./dev cluster up)"
# shellcheck disable=SC1090
. "$cl_env"
read -r URL_A URL_B <<<"$BINDERY_URLS"
[ -n "$URL_A" ] && [ -n "$URL_B" ] || bail_out "BINDERY_URLS needs two web hosts: '$BINDERY_URLS'"
AUTH="Authorization: Bearer $BINDERY_TOKEN"

# cl_failpoint_hosts NAME FP...: one lighttpd of the test's own per web host
# config (BINDERY_CONFIGS), running the failpoints build's responder
# (BINDERY_FP_BIN, which ./dev cluster test sets) with
# BINDERY_FAILPOINTS_FILE the matching FP (host 1 the first, host 2 the
# second; one FP for both when only one is given).  State in
# $CLUSTER_VAR/NAME-webN.  Each is probed: an armed error point must be
# taken.  Sets CL_FP_URLS (an array) and CL_FP_LIGHTTPD_PIDS (space
# separated); cl_failpoint_hosts_stop NAME stops them.  Sources
# tests/lib/stack.sh.  Bails out when anything is missing.
cl_failpoint_hosts() {
	local name=$1 h=0 conf url fp
	shift
	# shellcheck source=tests/lib/stack.sh
	. "$cl_here/../lib/stack.sh"
	[ -n "${BINDERY_FP_BIN:-}" ] && [ -x "$BINDERY_FP_BIN/bindery.fcgi" ] ||
		bail_out "BINDERY_FP_BIN (a --enable-failpoints build's app/) is needed: run it through ./dev cluster test"
	export BINDERY_TEST_VAR=$CLUSTER_VAR	# stack_private_lighttpd keeps clear of its ports
	CL_FP_URLS=() CL_FP_LIGHTTPD_PIDS=''
	for conf in $BINDERY_CONFIGS; do
		h=$((h + 1))
		fp=${1:-}
		[ $# -gt 1 ] && shift
		: >"$fp"
		BINDERY_FAILPOINTS_FILE=$fp stack_private_lighttpd "$CLUSTER_VAR/$name-web$h" lighttpd.conf \
			"$conf" "$BINDERY_FP_BIN" $((28180 + 10 * h)) || bail_out "$name host $h did not start"
		url=http://127.0.0.1:$HTTP_PORT
		for _ in $(seq 1 100); do
			[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url/healthz")" = 200 ] && break
			sleep 0.1
		done
		printf 'create.after_intent error once\n' >"$fp"
		curl -s -o /dev/null -m 30 -H "$AUTH" -H 'Content-Type: text/plain' --data-binary probe \
			"$url/documents?name=cl-fp-probe-$$-$h"
		grep -q . "$fp" && bail_out "$name host $h ($url) does not read $fp"
		CL_FP_URLS+=("$url")
		CL_FP_LIGHTTPD_PIDS+="${CL_FP_LIGHTTPD_PIDS:+ }$(stack_pid lighttpd)"
	done
}

cl_failpoint_hosts_stop() {
	local d
	for d in "$CLUSTER_VAR/$1"-web*; do
		[ -d "$d" ] || continue
		stack_init "$d"
		stack_lighttpd_stop
	done
}

# cl_chaos_view: what tests/lib/chaos.sh needs to look at the services
# directly: node 1's socket as root (BINDERY_TEST_DB_SOCKET), Azurite with
# the first host config's account, key and container; CHAOS_AUTH.
cl_chaos_view() {
	local conf
	read -r conf _ <<<"$BINDERY_CONFIGS"
	cl_conf_get() { sed -n "/^\[$2\]/,/^\[/s/^$3 = //p" "$1" | head -n 1; }
	read -r BINDERY_TEST_DB_SOCKET _ <<<"$DB_NODE_SOCKETS"
	export BINDERY_TEST_DB_SOCKET BINDERY_TEST_DB_NAME BINDERY_TEST_BLOB_ENDPOINT=$BLOB_ENDPOINT
	export BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
	BINDERY_TEST_DB_NAME=$(cl_conf_get "$conf" database name)
	BINDERY_TEST_BLOB_ACCOUNT=$(cl_conf_get "$conf" storage account)
	BINDERY_TEST_BLOB_KEY=$(cl_conf_get "$conf" storage key)
	# For tests/lib/chaos.sh's functions, which the caller sources.
	# shellcheck disable=SC2034
	CHAOS_CONTAINER=$(cl_conf_get "$conf" storage container)
	# shellcheck disable=SC2034
	CHAOS_AUTH=(-H "$AUTH")
	# shellcheck disable=SC2034
	CHAOS_BIN=${BINDERY_FP_BIN:-$BINDERY_BIN}
	command -v openssl >/dev/null || bail_out "openssl is needed to sign Azurite requests"
}
