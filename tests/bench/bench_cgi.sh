#!/usr/bin/env bash
# Benchmark (not a test): what plain CGI costs per request compared with
# FastCGI.  Starts its own Apache with mod_cgid (conf/apache-cgid.conf) and
# its own Apache with mod_fcgid (conf/apache-fcgid.conf), and, when lighttpd
# is installed, lighttpd with mod_cgi (conf/lighttpd-cgi.conf) and with
# mod_fastcgi (conf/lighttpd.conf), all in front of the test stack's MariaDB
# and Azurite, then times `GET /healthz` and a 1 KiB raw create, N requests
# each per server, in alternating rounds (so load drift hits every mode
# alike), over one keep-alive connection per round (curl's time_total: the
# server's latency, not curl's start-up).  Prints median and p90 in ms, and
# CGI / FastCGI ratios and differences.
#
#   BENCH_N       requests per operation and server (default 200)
#   BENCH_ROUNDS  rounds they are split into (default 4)
#
# Needs the ./dev test environment (BINDERY_CONFIG, BINDERY_TEST_BIN,
# BINDERY_TEST_TOKEN, BINDERY_TEST_VAR; ./dev test --keep, then export what
# it prints, or source a private stack's env) and root (Apache's www-data).
# The created documents are deleted afterwards.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"

N=${BENCH_N:-200}
ROUNDS=${BENCH_ROUNDS:-4}
die() { printf 'bench_cgi: %s\n' "$*" >&2; exit 1; }
: "${BINDERY_CONFIG:?set BINDERY_CONFIG (./dev test --keep)}"
: "${BINDERY_TEST_BIN:?set BINDERY_TEST_BIN}"
: "${BINDERY_TEST_TOKEN:?set BINDERY_TEST_TOKEN}"
: "${BINDERY_TEST_VAR:?set BINDERY_TEST_VAR}"
[ "$(id -u)" = 0 ] || die "needs root (Apache runs the responder as www-data)"
[ $((N % ROUNDS)) = 0 ] || die "BENCH_N must be a multiple of BENCH_ROUNDS"
per=$((N / ROUNDS))

stack_init "$BINDERY_TEST_VAR"
stack_alive mariadb && stack_alive azurite || die "MariaDB or Azurite of the test stack is not running"
STACK_AVOID_PORTS="$DB_PORT $BLOB_PORT $HTTP_PORT $APACHE_PORT"
base=$BINDERY_TEST_VAR/bench-cgi
work=$(mktemp -d)

# Each server gets a state directory of its own under $base/MODE.
modes=(apache-cgid apache-fcgid)
[ -x "$(stack_lighttpd_bin)" ] && modes+=(lighttpd-cgi lighttpd-fastcgi)
declare -A URL

stop_all() {
	local m
	for m in "${modes[@]}"; do
		[ -d "$base/$m" ] || continue
		stack_init "$base/$m"
		stack_stop apache 30
		stack_stop lighttpd 20
		stack_remove_www
	done
}
cleanup() { stop_all; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start() { # MODE: start its server; sets URL[MODE]
	local m=$1 www port
	stack_init "$base/$m"
	stack_stop apache 30
	stack_stop lighttpd 20
	rm -f "$STACK_VAR/ports.env"
	APACHE_PORT='' HTTP_PORT=''
	case $m in
	apache-*)
		stack_port APACHE_PORT 18200 || return 1
		port=$APACHE_PORT
		stack_www_prepare "$BINDERY_TEST_BIN" "$BINDERY_CONFIG" || return 1
		www=$(stack_www_dir) || return 1
		stack_render "$top/conf/apache-${m#apache-}.conf" "$STACK_VAR/apache.conf" PORT="$port" \
			VAR="$STACK_VAR" RUNDIR="$www" BINDIR="$www/bin" CONFIG="$www/bindery.conf" || return 1
		stack_apache_start "$STACK_VAR/apache.conf" || return 1
		;;
	lighttpd-*)
		stack_port HTTP_PORT 18200 || return 1
		port=$HTTP_PORT
		local src=$top/conf/lighttpd.conf
		[ "$m" = lighttpd-cgi ] && src=$top/conf/lighttpd-cgi.conf
		stack_render "$src" "$STACK_VAR/lighttpd.conf" PORT="$port" VAR="$STACK_VAR" \
			BINDIR="$BINDERY_TEST_BIN" CONFIG="$BINDERY_CONFIG" || return 1
		stack_lighttpd_start "$STACK_VAR/lighttpd.conf" || return 1
		;;
	esac
	STACK_AVOID_PORTS="$STACK_AVOID_PORTS $port"
	URL[$m]=http://127.0.0.1:$port
}

for m in "${modes[@]}"; do
	start "$m" || die "$m did not start (logs in $base/$m/log)"
done

head -c 1024 /dev/urandom >"$work/1k.bin"
tag=bench-cgi-$$-$RANDOM
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")

# run MODE OP ROUND COUNT: COUNT requests on one connection; appends
# "code seconds" lines to $work/MODE.OP and the answers to $work/MODE.OP.body.
run() {
	local m=$1 op=$2 r=$3 n=$4 i urls=()
	case $op in
	healthz)
		for ((i = 0; i < n; i++)); do urls+=("${URL[$m]}/healthz"); done
		curl -s -w '\n@@ %{http_code} %{time_total}\n' "${urls[@]}" ;;
	create)
		for ((i = 0; i < n; i++)); do urls+=("${URL[$m]}/documents?name=$tag-$m-$r-$i"); done
		curl -s -w '\n@@ %{http_code} %{time_total}\n' "${auth[@]}" \
			-H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin" "${urls[@]}" ;;
	esac >"$work/out"
	sed -n 's/^@@ //p' "$work/out" >>"$work/$m.$op"
	grep -v '^@@ ' "$work/out" >>"$work/$m.$op.body"
}

# Warm up: fcgid and lighttpd start their FastCGI processes on first use.
for m in "${modes[@]}"; do
	run "$m" healthz w 5
	run "$m" create w 2
	rm -f "$work/$m.healthz" "$work/$m.create"
done

for ((r = 1; r <= ROUNDS; r++)); do
	for op in healthz create; do
		for m in "${modes[@]}"; do
			run "$m" "$op" "$r" "$per"
		done
	done
done

# stats FILE WANT-CODE: "median p90 mean bad" in ms (bad = answers not WANT-CODE).
stats() {
	local bad
	bad=$(awk -v want="$2" '$1 != want' "$1" | wc -l)
	awk '{ print $2 * 1000 }' "$1" | sort -n | awk -v bad="$bad" '
		{ v[NR] = $1; s += $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			p = v[int(NR * 0.9 + 0.999999)]
			printf "%.2f %.2f %.2f %d\n", m, p, s / NR, bad
		}'
}

declare -A MED
printf '\n%d requests per operation and server, %d rounds; %s; load average %s\n' \
	"$N" "$ROUNDS" "$(nproc) CPUs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %-8s %9s %9s %9s %5s\n' server operation 'median' 'p90' 'mean' 'non-2xx'
for op in healthz create; do
	want=200
	[ "$op" = create ] && want=201
	for m in "${modes[@]}"; do
		read -r med p90 mean bad < <(stats "$work/$m.$op" "$want")
		MED[$m.$op]=$med
		printf '%-18s %-8s %7s ms %6s ms %6s ms %5s\n' "$m" "$op" "$med" "$p90" "$mean" "$bad"
	done
done
echo
for op in healthz create; do
	for pair in apache-cgid:apache-fcgid lighttpd-cgi:lighttpd-fastcgi; do
		c=${pair%%:*} f=${pair#*:}
		[ -n "${MED[$c.$op]:-}" ] && [ -n "${MED[$f.$op]:-}" ] || continue
		awk -v c="${MED[$c.$op]}" -v f="${MED[$f.$op]}" -v op="$op" -v cn="$c" -v fn="$f" 'BEGIN {
			printf "%-8s %s / %s: median ratio %.2f, CGI adds %.2f ms\n", op, cn, fn, c / f, c - f }'
	done
done

# Delete what the creates made (through the FastCGI server, quickly).
ids=$(cat "$work"/*.create.body 2>/dev/null | sed -n 's/.*"id":"\([0-9]*\)".*/\1/p')
urls=()
for id in $ids; do urls+=("${URL[apache-fcgid]}/documents/$id"); done
[ ${#urls[@]} -eq 0 ] || curl -s -o /dev/null -X DELETE "${auth[@]}" "${urls[@]}"
