#!/usr/bin/env bash
# tests/bench/bench.sh — the performance figures, what `./dev bench` runs.
# A benchmark, not a test (tests/e2e/bench_smoke.sh runs it tiny).
#
#   tests/bench/bench.sh [--quick] [--rounds N] [--mib N] [--no-big]
#                        [--p2-requests N] [--out FILE]
#
# Every figure through lighttpd (FastCGI), Apache mod_fcgid AND Apache
# mod_proxy_fcgi in front of bindery's own pool ("pool"), each beside
# two baselines measured in the same round: "direct", straight to Azurite
# with a SAS (curl -T Put Blob, GET; bench_load's keep-alive clients for
# P2), and "proxied", the same web server's mod_proxy straight to Azurite
# (a second port of the bench's own servers, /proxy/ mapped to the account,
# the client sends the SAS):
#   P1   create of a MIB document, raw body (POST /documents?name=, curl -T)
#   P2   1 KiB creates, 4 keep-alive clients (bench_load): creates/s, p50, p99
#   P2-cpu  the CPU ms per P2 request of storage, the database, the web
#        server and the responders, for bindery and each baseline
#   P2-db  bindery's database round trips per create (the responders'
#        own count, /metrics) and the statements the server ran per create
#        (its Questions)
#   P5   download of that document (GET /documents/ID/content, proxy mode)
#   P3   the largest RssAnon of every bindery.fcgi process during P1 (bench_load
#        rss), against 2 MiB + block_size x blocks_in_flight; without
#        --no-big also a 64 MiB and a 1 GiB create, whose peaks must agree
#        within 1 %
#   tus  MIB in 8 MiB PATCHes, against bindery's own single-request create
#        of the same file measured beside it (before it in odd rounds,
#        after it in even ones)
#   tus-parallel  MIB with tus-js-client and parallelUploads: 4 (the
#        concatenation extension: four partials at once, then the final
#        assembled in storage; tests/bench/bench_tus_parallel.mjs), against
#        the same create
#   finalize  a direct upload's finalize of MIB (ms), against a plain GET
# Rounds alternate bindery and its baselines; medians.  Prints one table and
# writes FILE (default var/bench/results.json): the machine (with what the
# stack's Azurite stored at the start and the end), the medians and every
# raw number.  Defaults: 5 rounds, 256 MiB, 100 requests per P2 client;
# --quick: 2 rounds, 64 MiB, 50 requests, no 1 GiB create.
#
# Correctness: every create must answer 201 with the file's SHA-256, every
# PATCH 204, every download's SHA-256 must equal the file's; anything else
# stops the run with an error (exit 1).  Documents are deleted as soon as
# measured; the baselines' blobs live in a container of the run's own,
# removed at the end.
#
# The stack (MariaDB, Azurite) and the programs come from the environment:
#   BENCH_CONF   the stack's bindery.conf  BENCH_BIN  bindery and bindery.fcgi
#   BENCH_TOOLS  the build tree holding tests/bench/bench_load and
#                tests/tools/blobtool (default BENCH_BIN/..)
# else stack_bench_target (tests/lib/stack.sh) picks them.  The bench starts
# its own lighttpd and Apache (rendered from conf/ with the body limits
# raised past 1 GiB, and [limits] max_upload = 1100M in its copy of the
# configuration) on free ports and stops them at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"

rounds=5 mib=256 big=1 p2_n=100 p2_clients=4 quick=false out=$top/var/bench/results.json
chunk_mib=8 upload_limit_mib=1100
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=true rounds=2 mib=64 big= p2_n=50 ;;
	--rounds) rounds=${2:?--rounds N}; shift ;;
	--mib) mib=${2:?--mib N}; shift ;;
	--no-big) big= ;;
	--p2-requests) p2_n=${2:?--p2-requests N}; shift ;;
	--out) out=${2:?--out FILE}; shift ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
case "$rounds$mib$p2_n" in *[!0-9]*) die "--rounds, --mib and --p2-requests take numbers" ;; esac
[ "$rounds" -ge 1 ] && [ "$mib" -ge 1 ] && [ "$mib" -le 1024 ] || die "need 1 <= rounds, 1 <= mib <= 1024"
bytes=$((mib * 1024 * 1024))

if [ -n "${BENCH_CONF:-}" ] && [ -n "${BENCH_BIN:-}" ]; then
	conf=$BENCH_CONF bin=$BENCH_BIN
else
	stack_bench_target
fi
tools=${BENCH_TOOLS:-$bin/..}
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] && [ -x "$bin/bindery" ] || die "no stack at $conf / $bin"
load=$tools/tests/bench/bench_load blobtool=$tools/tests/tools/blobtool
[ -x "$load" ] || make -C "$tools" tests/bench/bench_load >/dev/null 2>&1 || die "cannot build $load"
[ -x "$blobtool" ] || make -C "$tools" tests/tools/blobtool >/dev/null 2>&1 || die "cannot build $blobtool"
for c in curl jq sha256sum bc node; do command -v $c >/dev/null || die "$c is needed"; done
[ -f "$top/node_modules/tus-js-client/package.json" ] || die "tus-js-client is not in node_modules (./dev bench installs it)"
stackdir=$(dirname "$conf")
conf_get() { sed -n "s/^$1 = //p" "$conf" | tail -n 1; }
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"
endpoint=$(conf_get endpoint) account=$(conf_get account)
[ -n "$endpoint" ] && [ -n "$account" ] && [ -n "$(conf_get key)" ] ||
	die "$conf has no [storage] endpoint, account and key"
blob_port=${endpoint#http://127.0.0.1:}
blob_port=${blob_port%%/*}
case $blob_port in '' | *[!0-9]*) die "the bench wants a local Azurite endpoint, not $endpoint" ;; esac

# Sizes of the pipeline P3 is checked against, in bytes ("4M", "512K", "4194304").
size_bytes() {
	case $1 in
	*[Kk]) echo $((${1%?} * 1024)) ;; *[Mm]) echo $((${1%?} * 1048576)) ;;
	*[Gg]) echo $((${1%?} * 1073741824)) ;; '') echo '' ;; *) echo "$1" ;;
	esac
}
block_size=$(size_bytes "$(conf_get block_size)") in_flight=$(conf_get blocks_in_flight)
block_size=${block_size:-4194304} in_flight=${in_flight:-4}

work=$(mktemp -d /dev/shm/bindery-bench.XXXXXXXX 2>/dev/null || mktemp -d) || die "no work directory"
chmod 755 "$work"
export BINDERY_TEST_BLOB_ENDPOINT=$endpoint BINDERY_TEST_BLOB_ACCOUNT=$account
BINDERY_TEST_BLOB_KEY=$(conf_get key)
export BINDERY_TEST_BLOB_KEY
export BLOBTOOL_CONTAINER=bench-$$-$RANDOM
bc_name=$BLOBTOOL_CONTAINER
servers_up=
cleanup() {
	local d
	for d in lighttpd apache pool; do
		[ -d "$work/$d/run" ] || continue
		stack_init "$work/$d"
		stack_stop apache 30
		stack_stop apache-pool 30
		stack_pool_stop
		stack_stop lighttpd 20
		stack_remove_www
	done
	[ -z "${rss_pid:-}" ] || kill "$rss_pid" 2>/dev/null
	"$blobtool" rmcontainer >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the servers -------------------------------------------------------------

# The stack's configuration, with room for 1 GiB, direct uploads on (their
# SAS is signed with the key), downloads through the responder, and a
# deleted document's blob free for the outbox after a second (the sweep at
# the end removes every blob the run made).
make_config() {
	{ cat "$conf"; printf '\n[limits]\nmax_upload = %dM\nsingle_put_max = %dM\nretire_grace = 1\n[upload]\ndirect = true\n[download]\nmode = proxy\n' \
		"$upload_limit_mib" "$upload_limit_mib"; } >"$work/bindery.conf"
	# Blob names of the run's own (prefix + random hex), so the closing
	# sweep touches nothing else of the stack: it runs with the prefix
	# without its last character and --prefix that character.
	printf '[storage]\nprefix = %s\n' "$blob_prefix" >>"$work/bindery.conf"
	# /metrics on, with counters of the run's own (P2-db reads the round
	# trips there): a stack the bench started has no [metrics], and the
	# run's responders then count apart from the stack's.  One file for
	# every server: root's responders hand a file they create to the
	# directory's owner, the web server's user (lib/base/counters.h).
	mkdir -p "$work/metrics" && chmod 0770 "$work/metrics" || die "cannot make $work/metrics"
	[ "$(id -u)" != 0 ] || chown "$STACK_WWW_USER:$STACK_WWW_USER" "$work/metrics" || die "cannot hand $work/metrics to $STACK_WWW_USER"
	printf '[metrics]\nenabled = true\ncounters_file = %s\n' "$work/metrics/counters" >>"$work/bindery.conf"
	{ cat "$conf"; printf '\n[limits]\nretire_grace = 1\n[storage]\nprefix = %s\n' "${blob_prefix%?}"; } >"$work/sweep.conf"
	# Apache's www-data may not reach a socket inside the checkout: TCP.
	sed -e "s|^socket = .*|host = 127.0.0.1\nport = $(. "$stackdir/ports.env" && echo "$DB_PORT")|" \
		"$work/bindery.conf" >"$work/bindery-tcp.conf"
	chmod 0600 "$work/bindery.conf" "$work/bindery-tcp.conf" "$work/sweep.conf"
	"$bin/bindery" -c "$work/bindery.conf" sweep --dry-run --older-than 999999 >/dev/null 2>"$work/check.err" ||
		die "the configuration does not load: $(cat "$work/check.err")"
}

# bench_ports NAME...: a free port for each NAME, clear of the stack's and
# of the ones taken before.
avoid=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
bench_ports() {
	local n
	for n in "$@"; do
		printf -v "$n" '%s' ''
		STACK_AVOID_PORTS=$avoid
		stack_port "$n" 18600 || die "no free port"
		avoid="$avoid ${!n}"
	done
}

# lighttpd from conf/lighttpd.conf (bindery on LIGHTTPD_PORT, a private copy
# of bindery.fcgi so the sampler sees only these responders) and mod_proxy
# on LPROXY_PORT; mod_proxy comes first among the handlers, its only rule
# lives on the proxy's socket, and it streams both ways (the best any
# backend of lighttpd could do, whatever the template sets for FastCGI).
start_lighttpd() {
	local d=$work/lighttpd
	stack_init "$d"
	mkdir -p "$d/bin" && cp "$bin/bindery.fcgi" "$d/bin/bindery.fcgi" || die "cannot copy bindery.fcgi"
	bench_ports LIGHTTPD_PORT LPROXY_PORT
	HTTP_PORT=$LIGHTTPD_PORT
	stack_render "$top/conf/lighttpd.conf" "$d/lighttpd.conf" PORT="$HTTP_PORT" VAR="$d" \
		BINDIR="$d/bin" CONFIG="$work/bindery.conf" || die "bad conf/lighttpd.conf"
	# mod_proxy loaded before the template's modules: the first handler.
	{ echo 'server.modules += ( "mod_proxy" )'; cat "$d/lighttpd.conf"; } >"$d/lighttpd.conf.new" &&
		mv -f "$d/lighttpd.conf.new" "$d/lighttpd.conf" || die "cannot write $d/lighttpd.conf"
	sed -i -e "s/^server.max-request-size = .*/server.max-request-size = $(((upload_limit_mib + 1) * 1024))/" \
		"$d/lighttpd.conf"
	cat >>"$d/lighttpd.conf" <<EOF
\$SERVER["socket"] == "127.0.0.1:$LPROXY_PORT" {
	proxy.server = ( "/proxy/" => (( "host" => "127.0.0.1", "port" => $blob_port )) )
	proxy.header = ( "map-urlpath" => ( "/proxy/" => "/$account/" ) )
	server.stream-response-body = 2
}
EOF
	grep -q "^server.max-request-size = $(((upload_limit_mib + 1) * 1024))\$" "$d/lighttpd.conf" ||
		die "conf/lighttpd.conf: cannot raise server.max-request-size"
	stack_lighttpd_start "$d/lighttpd.conf" || die "lighttpd did not start (see $d/log)"
	LIGHTTPD_EXE=$d/bin/bindery.fcgi
}

# Apache from conf/apache-fcgid.conf with its body limits past 1 GiB, and a
# virtual host on APROXY_PORT whose mod_proxy maps /proxy/ to the account.
start_apache() {
	local d=$work/apache www lim=$(((upload_limit_mib + 1) * 1048576))
	stack_init "$d"
	bench_ports APACHE_PORT APROXY_PORT
	stack_www_prepare "$bin" "$work/bindery-tcp.conf" || die "cannot prepare Apache's directory"
	www=$(stack_www_dir) || die "cannot prepare Apache's directory"
	stack_render "$top/conf/apache-fcgid.conf" "$d/apache.conf" PORT="$APACHE_PORT" VAR="$d" \
		RUNDIR="$www" BINDIR="$www/bin" CONFIG="$www/bindery.conf" || die "bad conf/apache-fcgid.conf"
	sed -i -e "s/^LimitRequestBody .*/LimitRequestBody $lim/" \
		-e "s/-gt [0-9][0-9]*\"/-gt $lim\"/" \
		-e "s/^FcgidMaxRequestLen .*/FcgidMaxRequestLen $((lim + 65536))/" "$d/apache.conf"
	cat >>"$d/apache.conf" <<EOF
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so
Listen 127.0.0.1:$APROXY_PORT
<VirtualHost 127.0.0.1:$APROXY_PORT>
	LimitRequestBody 0
	ProxyPass /proxy/ http://127.0.0.1:$blob_port/$account/
</VirtualHost>
EOF
	grep -q "^LimitRequestBody $lim" "$d/apache.conf" && grep -q "^FcgidMaxRequestLen $((lim + 65536))" "$d/apache.conf" ||
		die "conf/apache-fcgid.conf: cannot raise its body limits"
	stack_apache_start "$d/apache.conf" || die "Apache did not start (see $d/log)"
	APACHE_EXE=$www/bin/bindery.fcgi
}

# The pool (bindery.fcgi --listen, as www-data) with Apache mod_proxy_fcgi
# in front from conf/apache-proxy-fcgi.conf, its body limits past 1 GiB, and
# a virtual host on PPROXY_PORT whose mod_proxy maps /proxy/ to the account:
# Apache as Debian would run it for a dedicated server.
start_pool() {
	local d=$work/pool www lim=$(((upload_limit_mib + 1) * 1048576)) mod_fcgid_port=$APACHE_PORT
	stack_init "$d"
	APACHE_PORT=$mod_fcgid_port	# stack_init forgets the ports of the state directory before
	bench_ports APACHE_POOL_PORT PPROXY_PORT
	stack_www_prepare "$bin" "$work/bindery-tcp.conf" || die "cannot prepare the pool's directory"
	www=$(stack_www_dir) || die "cannot prepare the pool's directory"
	stack_pool_start "$STACK_POOL_WORKERS" || die "the pool did not start (see $d/log)"
	stack_render_apache_pool "$d/apache-pool.conf" "$STACK_POOL_WORKERS" || die "bad conf/apache-proxy-fcgi.conf"
	# /proxy/ to Azurite comes before the template's ProxyPass "/" to the
	# pool (the first ProxyPass that matches wins, in a virtual host too,
	# which inherits the server's).
	sed -i -e "s/^LimitRequestBody .*/LimitRequestBody $lim/" -e "s/-gt [0-9][0-9]*\"/-gt $lim\"/" \
		-e "s|^ProxyPass \"/\" |ProxyPass /proxy/ http://127.0.0.1:$blob_port/$account/\n&|" "$d/apache-pool.conf"
	cat >>"$d/apache-pool.conf" <<EOF
LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so
Listen 127.0.0.1:$PPROXY_PORT
<VirtualHost 127.0.0.1:$PPROXY_PORT>
	LimitRequestBody 0
</VirtualHost>
EOF
	grep -q "^LimitRequestBody $lim" "$d/apache-pool.conf" && grep -q "^ProxyPass /proxy/ " "$d/apache-pool.conf" ||
		die "conf/apache-proxy-fcgi.conf: cannot raise its body limit or map /proxy/"
	stack_apache_start "$d/apache-pool.conf" apache-pool "$APACHE_POOL_PORT" ||
		die "Apache (pool) did not start (see $d/log)"
	POOL_EXE=$www/bin/bindery.fcgi
}

# use_server NAME: url (bindery), proxy (mod_proxy to the account) and exe
# (the responder's path) of that server.
use_server() {
	server=$1
	case $1 in
	lighttpd) url=http://127.0.0.1:$LIGHTTPD_PORT proxy=http://127.0.0.1:$LPROXY_PORT/proxy exe=$LIGHTTPD_EXE ;;
	apache) url=http://127.0.0.1:$APACHE_PORT proxy=http://127.0.0.1:$APROXY_PORT/proxy exe=$APACHE_EXE ;;
	pool) url=http://127.0.0.1:$APACHE_POOL_PORT proxy=http://127.0.0.1:$PPROXY_PORT/proxy exe=$POOL_EXE ;;
	esac
}

wait_healthy() { # URL
	local i code
	for ((i = 0; i < 100; i++)); do
		code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$1/healthz") || code=000
		[ "$code" = 200 ] && return 0
		sleep 0.2
	done
	die "$1/healthz answers $code"
}

# --- one measurement each; each prints its figure, fails loudly ------------------

auth=(-H "Authorization: Bearer $token")
record() { # FIGURE SIDE VALUE
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$server" "$2" "$round" "$3" >>"$work/raw.tsv"
}
mibs() { echo "$1 / 1048576 / $2" | bc -l; }
# check_code WHAT WANT "CODE SECONDS": the seconds, or a loud failure.
check_code() {
	[ "${3%% *}" = "$2" ] || { echo "bench: $1 answered ${3%% *}, not $2: $(head -c 300 "$work/answer" 2>/dev/null)" >&2; return 1; }
	echo "${3#* }"
}
# check_sha WHAT FILE: FILE's SHA-256 is the source file's.
check_sha() {
	local got
	got=$(sha256sum "$2" | cut -d' ' -f1)
	[ "$got" = "$file_sha" ] || { echo "bench: $1: SHA-256 $got, not the file's $file_sha" >&2; return 1; }
}

# create FILE NAME SHA256: POST /documents?name= with the raw body; the
# seconds.  The document must carry SHA256; its id goes to $work/id.
create() {
	local t sha
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Expect:' \
		-H 'Content-Type: application/octet-stream' -T "$1" -X POST "$url/documents?name=$2")
	t=$(check_code "create through $server" 201 "$t") || return 1
	jq -r .id "$work/answer" >"$work/id" && sha=$(jq -r .sha256 "$work/answer")
	[ "$sha" = "$3" ] || { echo "bench: the created document's sha256 is $sha" >&2; return 1; }
	echo "$t"
}
drop() { # delete the document named in $work/id
	local id code
	read -r id <"$work/id" || return 1
	code=$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" -X DELETE "$url/documents/$id")
	[ "$code" = 204 ] || { echo "bench: DELETE /documents/$id answered $code" >&2; return 1; }
	rm -f "$work/id"
}
put_blob() { # URL-WITHOUT-QUERY: Put Blob of the file with the SAS; seconds
	local t
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' -H 'x-ms-blob-type: BlockBlob' \
		-H 'Expect:' -T "$file" "$1?$sas")
	check_code "Put Blob $1" 201 "$t"
}
get_to() { # URL OUT [CURL-ARGS...]: GET into OUT, checked against the file; seconds
	local t u=$1 o=$2
	shift 2
	t=$(curl -s -o "$o" -w '%{http_code} %{time_total}' "$@" "$u")
	t=$(check_code "GET ${u%%\?*}" 200 "$t") || return 1
	check_sha "GET ${u%%\?*}" "$o" || return 1
	rm -f "$o"
	echo "$t"
}

# rss_start / rss_stop: bench_load rss over this server's responders.
rss_start() {
	"$load" rss -i 20 "$exe" >"$work/rss.json" &
	rss_pid=$!
}
rss_stop() {
	kill -TERM "$rss_pid" 2>/dev/null
	wait "$rss_pid"
	rss_pid=
	jq -e '.rss_anon_kib >= 0' "$work/rss.json" >/dev/null || { echo "bench: no bindery.fcgi process to sample ($exe)" >&2; return 1; }
	jq -r .rss_anon_kib "$work/rss.json"
}

# P1 and P5 (P3 sampled during P1), each side once: bindery, straight,
# proxied in odd rounds, the reverse in even ones.  Whichever goes first
# meets the machine as the previous step left it (the uploads' 768 MiB
# just written, P2's load): always bindery's download first cost it in 4
# of 5 rounds on 2026-12-04.
p1_side() { # SIDE: P1 of that side (bindery's P3 too)
	local t kib blob=p1-$server-$round
	case $1 in
	bindery)
		rss_start
		t=$(create "$file" "bench-p1-$run-$server-$round" "$file_sha") || return 1
		kib=$(rss_stop) || return 1
		record p3_rss_kib bindery "$kib" ;;
	direct) t=$(put_blob "$endpoint/$bc_name/$blob") || return 1 ;;
	proxied) t=$(put_blob "$proxy/$bc_name/$blob-p") || return 1 ;;
	esac
	record p1_mibs "$1" "$(mibs "$bytes" "$t")"
}
p5_side() { # SIDE: P5 of that side, reading what p1_side wrote
	local t blob=p1-$server-$round
	case $1 in
	bindery) t=$(get_to "$url/documents/$(cat "$work/id")/content" "$work/down" "${auth[@]}") || return 1 ;;
	direct) t=$(get_to "$endpoint/$bc_name/$blob?$sas" "$work/down") || return 1 ;;
	proxied) t=$(get_to "$proxy/$bc_name/$blob-p?$sas" "$work/down") || return 1 ;;
	esac
	record p5_mibs "$1" "$(mibs "$bytes" "$t")"
}
measure_p1_p5() {
	local order=(bindery direct proxied) side
	((round % 2)) || order=(proxied direct bindery)
	for side in "${order[@]}"; do p1_side "$side" || return 1; done
	for side in "${order[@]}"; do p5_side "$side" || return 1; done
	drop
}

# cpu_parts: CPU ticks spent so far by storage (Azurite), the database,
# the web server's own processes and its responders (bindery.fcgi below
# it), in that order, on one line.  On one machine all of them share the
# cores, so once P2 saturates them its rate is what the CPU they spend per
# create allows: two snapshots around a load over N requests give each
# part's cost per request, the profile behind P2's ratios.  A process's
# ticks include its reaped children's (a responder that exits in between
# moves its ticks from "responders" to "web").
clk_tck=$(getconf CLK_TCK)
cpu_parts() {
	local az db srv
	read -r az <"$stackdir/run/azurite.pid" && read -r db <"$stackdir/run/mariadbd.pid" &&
		read -r srv <"$work/$server/run/$server.pid" || { echo "bench: no pid files for the CPU profile" >&2; return 1; }
	ps -e -o pid=,ppid= | awk -v az="$az" -v db="$db" -v srv="$srv" '
		{ parent[$1] = $2 }
		END {
			part[az] = "storage"; part[db] = "database"; part[srv] = "web"
			for (p in parent) {
				for (q = p; !(q in part) && (q in parent) && q > 1; q = parent[q])
					;
				if (!(q in part))
					continue
				f = "/proc/" p "/stat"
				if ((getline line <f) <= 0)
					continue
				close(f)
				comm = line
				sub(/^[^(]*\(/, "", comm)
				sub(/\)[^)]*$/, "", comm)
				sub(/^.*\) /, "", line)	# fields from state on: utime is the 12th
				split(line, v, " ")
				what = part[q]
				if (what == "web" && comm == "bindery.fcgi")
					what = "responders"
				sum[what] += v[12] + v[13] + v[14] + v[15]
			}
			printf "%d %d %d %d\n", sum["storage"], sum["database"], sum["web"], sum["responders"]
		}'
}
# record_cpu SIDE "BEFORE" "AFTER" REQUESTS: each part's CPU ms per request.
record_cpu() {
	local side=$1 n=$4 part i=0
	local -a before after
	read -r -a before <<<"$2"
	read -r -a after <<<"$3"
	for part in storage database web responders; do
		record "p2_cpu_${part}_ms" "$side" "$(echo "(${after[i]} - ${before[i]}) * 1000 / $clk_tck / $n" | bc -l)"
		i=$((i + 1))
	done
}

# db_counts: the database round trips the responders counted (their
# /metrics) and the statements the server ran (its Questions), on one
# line.  A scrape and the SHOW cost a few of each: P2 takes one pair of
# counts before the load and two after it; the second pair, taken with
# nothing between, is what the counting itself costs, subtracted.
# The server is asked as the configuration's own account (SHOW GLOBAL
# STATUS needs no privilege), over its socket or host and port.
db_option() { awk -v k="$1" '/^\[/ { s = ($0 == "[database]") } s && $1 == k && $2 == "=" { print $3; exit }' "$conf"; }
db_counts_cnf=$work/db-counts.cnf
{
	printf '[client]\nuser=%s\npassword=%s\n' "$(db_option user)" "$(db_option password)"
	if [ -n "$(db_option socket)" ]; then
		printf 'socket=%s\n' "$(db_option socket)"
	else
		printf 'host=%s\nport=%s\n' "$(db_option host)" "$(db_option port)"
	fi
} >"$db_counts_cnf"
chmod 0600 "$db_counts_cnf"
db_counts() {
	local rt q
	rt=$(curl -s "${auth[@]}" "$url/metrics" | awk '$1 == "bindery_database_round_trips_total" { print $2 }')
	q=$(mariadb --defaults-extra-file="$db_counts_cnf" -N -e "SHOW GLOBAL STATUS LIKE 'Questions'" 2>/dev/null |
		awk '{ print $2 }')
	echo "${rt:-x} ${q:-x}"
}
# record_db "BEFORE" "AFTER" "AGAIN" REQUESTS: round trips and statements
# per create, less what one count (AGAIN - AFTER) costs.
record_db() {
	local -a b a c
	read -r -a b <<<"$1"
	read -r -a a <<<"$2"
	read -r -a c <<<"$3"
	[[ "${b[0]}${a[0]}${c[0]}" != *x* ]] &&
		record p2_db_round_trips bindery "$(echo "(${a[0]} - ${b[0]} - (${c[0]} - ${a[0]})) / $4" | bc -l)"
	[[ "${b[1]}${a[1]}${c[1]}" != *x* ]] &&
		record p2_db_statements bindery "$(echo "(${a[1]} - ${b[1]} - (${c[1]} - ${a[1]})) / $4" | bc -l)"
	return 0
}

# p2 SIDE URL LOAD-OPTIONS...: bench_load's 4 clients; creates/s, p50, p99,
# the CPU each part spent per request, and bindery's database round trips.
p2() {
	local side=$1 u=$2 j c0 c1 d0= d1
	shift 2
	[ "$side" = bindery ] && d0=$(db_counts)
	c0=$(cpu_parts) || return 1
	j=$("$load" load -c "$p2_clients" -n "$p2_n" -s 1024 "$@" "$u") || { echo "bench: P2 $side through $server failed" >&2; return 1; }
	c1=$(cpu_parts) || return 1
	if [ -n "$d0" ]; then
		d1=$(db_counts)
		record_db "$d0" "$d1" "$(db_counts)" $((p2_clients * p2_n))
	fi
	record p2_rate "$side" "$(jq -r .rate <<<"$j")"
	record p2_p50_ms "$side" "$(jq -r .p50_ms <<<"$j")"
	record p2_p99_ms "$side" "$(jq -r .p99_ms <<<"$j")"
	record_cpu "$side" "$c0" "$c1" $((p2_clients * p2_n))
}
measure_p2() {
	local put=(-X PUT -H 'x-ms-blob-type: BlockBlob') n
	p2 bindery "$url/documents?name=bench-p2-$run-$server-$round-@N@" -H "Authorization: Bearer $token" \
		-H 'Content-Type: application/octet-stream' -L "$work/p2.loc" || return 1
	p2 direct "$endpoint/$bc_name/p2-$server-$round-@N@?$sas" "${put[@]}" || return 1
	p2 proxied "$proxy/$bc_name/p2p-$server-$round-@N@?$sas" "${put[@]}" || return 1
	# Delete what the bindery side made: one curl, one connection.
	sed -e "s|^|url = \"$url|" -e 's|$|"|' "$work/p2.loc" >"$work/p2.curl"
	n=$(curl -s -X DELETE "${auth[@]}" -w '%{http_code}\n' -K "$work/p2.curl" | grep -c '^204$')
	[ "$n" = $((p2_clients * p2_n)) ] || { echo "bench: deleted $n of $((p2_clients * p2_n)) P2 documents" >&2; return 1; }
}

# tus: POST /uploads, then every 8 MiB PATCH from one curl (--next: one
# process, one kept-alive connection); the finished document must carry
# the file's SHA-256.  Its baseline is a create of the same file right
# beside it, first in odd rounds and second in even ones: P1, measured
# before P2's hundreds of creates, ran on a machine in another state
# (2026-12-04: P1 bindery 114-151 MiB/s in the same run's five rounds).
measure_tus() {
	if ((round % 2)); then
		measure_tus_create && measure_tus_upload && measure_tus_parallel
	else
		measure_tus_parallel && measure_tus_upload && measure_tus_create
	fi
}
measure_tus_create() {
	local t
	t=$(create "$file" "bench-tusc-$run-$server-$round" "$file_sha") || return 1
	record tus_mibs create "$(mibs "$bytes" "$t")"
	drop
}
measure_tus_upload() {
	local meta up off=0 p args=() t0 t1 rest
	meta="filename $(printf 'bench-tus-%s-%s-%s' "$run" "$server" "$round" | base64 -w0),filetype $(printf 'application/octet-stream' | base64 -w0)"
	for p in "$work/parts"/p*; do
		[ "$off" = 0 ] || args+=(--next)
		args+=(-s -o "$work/answer" -D "$work/headers" -w '%{http_code}\n' "${auth[@]}" -H 'Tus-Resumable: 1.0.0'
			-H 'Expect:' -H 'Content-Type: application/offset+octet-stream' -H "Upload-Offset: $off"
			-X PATCH -T "$p" "$url@UPLOAD@")
		off=$((off + $(stat -c %s "$p")))
	done
	t0=$(date +%s.%N)
	up=$(curl -s -o /dev/null -D - "${auth[@]}" -H 'Tus-Resumable: 1.0.0' -H "Upload-Length: $bytes" \
		-H "Upload-Metadata: $meta" -H 'Content-Length: 0' -X POST "$url/uploads" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	[ -n "$up" ] || { echo "bench: POST /uploads through $server failed" >&2; return 1; }
	curl "${args[@]//@UPLOAD@/$up}" >"$work/patches"
	t1=$(date +%s.%N)
	[ "$(grep -c '^204$' "$work/patches")" = "$nparts" ] && [ "$(grep -c . "$work/patches")" = "$nparts" ] ||
		{ echo "bench: tus PATCHes through $server answered $(sort "$work/patches" | uniq -c | tr '\n' ' ')" >&2; return 1; }
	tr -d '\r' <"$work/headers" | sed -n 's|^[Ll]ocation: /documents/||p' >"$work/id"
	document_is_file "the tus document" || return 1
	rest=$(echo "$t1 - $t0" | bc -l)
	record tus_mibs bindery "$(mibs "$bytes" "$rest")"
	drop
}

# document_is_file WHAT: the document $work/id names answers 200 with the
# file's SHA-256.
document_is_file() {
	local code sha
	code=$(curl -s -o "$work/answer" -w '%{http_code}' "$url/documents/$(cat "$work/id")")
	sha=$(jq -r .sha256 "$work/answer" 2>/dev/null)
	[ "$code" = 200 ] && [ "$sha" = "$file_sha" ] || { echo "bench: $1: $code, sha256 $sha" >&2; return 1; }
}

# tus-parallel: the file through tus-js-client with parallelUploads: 4; the
# helper prints its own seconds (from the first request to the final's
# answer) and the document's id, whose SHA-256 must be the file's.
measure_tus_parallel() {
	local out secs id
	out=$(BINDERY_TEST_TOKEN=$token node "$here/bench_tus_parallel.mjs" "$url" "$file" \
		"bench-tusp-$run-$server-$round" 2>"$work/parallel.err") ||
		{ echo "bench: tus-js-client through $server: $(head -c 300 "$work/parallel.err")" >&2; return 1; }
	read -r secs id <<<"$out"
	[ -n "$id" ] || { echo "bench: tus-js-client through $server named no document ($out)" >&2; return 1; }
	echo "$id" >"$work/id"
	document_is_file "the tus-parallel document" || return 1
	record tus_mibs parallel "$(mibs "$bytes" "$secs")"
	drop
}

# finalize: POST /documents/direct, the PUT straight to storage (not
# timed), then finalize (timed) against a plain GET of the same blob.
measure_finalize() {
	local h headers=() id up fin t g
	jq -cn --arg n "bench-direct-$run-$server-$round" --argjson s "$bytes" \
		'{name: $n, size: $s, content_type: "application/octet-stream"}' >"$work/req.json"
	curl -s -o "$work/answer" "${auth[@]}" -H 'Content-Type: application/json' \
		--data-binary "@$work/req.json" "$url/documents/direct"
	id=$(jq -r '.id // empty' "$work/answer" 2>/dev/null)
	[ -n "$id" ] || { echo "bench: POST /documents/direct: $(head -c 300 "$work/answer")" >&2; return 1; }
	echo "$id" >"$work/id"
	up=$(jq -r .upload_url "$work/answer") fin=$(jq -r .finalize_url "$work/answer")
	while IFS= read -r h; do headers+=(-H "$h"); done < <(jq -r '.headers | to_entries[] | "\(.key): \(.value)"' "$work/answer")
	t=$(curl -s -o "$work/answer" -w '%{http_code} 0' -X PUT "${headers[@]}" -H 'Expect:' -T "$file" "$up")
	check_code "the direct upload's PUT" 201 "$t" >/dev/null || return 1
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Content-Length: 0' -X POST "$url$fin")
	t=$(check_code "finalize through $server" 200 "$t") || return 1
	[ "$(jq -r .sha256 "$work/answer")" = "$file_sha" ] || { echo "bench: finalize's sha256 is not the file's" >&2; return 1; }
	g=$(get_to "${up%%\?*}?$sas" "$work/down") || return 1
	record finalize_ms bindery "$(echo "$t * 1000" | bc -l)"
	record finalize_ms direct "$(echo "$g * 1000" | bc -l)"
	drop
}

# P3 against the document's size: a 64 MiB and a 1 GiB create, each peak.
measure_p3_big() {
	local m t kib f
	for m in 64 1024; do
		f=$work/big.bin
		head -c $((m * 1048576)) /dev/urandom >"$f"
		rss_start
		t=$(create "$f" "bench-p3-$run-$server-$m" "$(sha256sum "$f" | cut -d' ' -f1)") || return 1
		kib=$(rss_stop) || return 1
		record "p3_${m}m_kib" bindery "$kib"
		drop
		rm -f "$f"
	done
}

# --- the run -------------------------------------------------------------------

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# What the stack's Azurite stores, in MiB ("null" when its files are not
# in the stack's directory): an Azurite holding many gigabytes of earlier
# runs' blobs costs more per call, and not by the same factor for every
# figure (doc/performance.md), so runs compare only at a similar size.
storage_mib() {
	local m
	[ -d "$stackdir/azurite" ] && m=$(du -sm "$stackdir/azurite" 2>/dev/null) && echo "${m%%[[:space:]]*}" ||
		echo null
}
run=$$x$RANDOM blob_prefix=bench$$x$RANDOM-
started=$(date -u +%Y-%m-%dT%H:%M:%SZ) load_start=$(loadavg) storage_start=$(storage_mib)
make_config
file=$work/file.bin
head -c "$bytes" /dev/urandom >"$file"
file_sha=$(sha256sum "$file" | cut -d' ' -f1)
mkdir "$work/parts"
split -b $((chunk_mib * 1048576)) -d -a 3 "$file" "$work/parts/p"
nparts=$(find "$work/parts" -type f | grep -c .)
"$blobtool" mkcontainer >/dev/null || die "cannot create container $bc_name"
sas=$("$blobtool" account-sas rwdlac 14400) || die "blobtool account-sas failed"
start_lighttpd
start_apache
start_pool
wait_healthy "http://127.0.0.1:$LIGHTTPD_PORT"
wait_healthy "http://127.0.0.1:$APACHE_PORT"
wait_healthy "http://127.0.0.1:$APACHE_POOL_PORT"
: >"$work/raw.tsv"
printf 'bench: %d rounds, %d MiB, P2 %d clients x %d requests; lighttpd :%s (proxy :%s), Apache mod_fcgid :%s (proxy :%s), Apache mod_proxy_fcgi + pool :%s (proxy :%s); load %s; Azurite stores %s MiB\n' \
	"$rounds" "$mib" "$p2_clients" "$p2_n" "$LIGHTTPD_PORT" "$LPROXY_PORT" "$APACHE_PORT" "$APROXY_PORT" \
	"$APACHE_POOL_PORT" "$PPROXY_PORT" "$load_start" "$storage_start" >&2
for ((round = 1; round <= rounds; round++)); do
	for s in lighttpd apache pool; do
		use_server "$s"
		measure_p1_p5 || die "round $round, $s: P1/P5 failed"
		measure_p2 || die "round $round, $s: P2 failed"
		measure_tus || die "round $round, $s: tus failed"
		measure_finalize || die "round $round, $s: finalize failed"
		printf 'bench: round %d %s done (load %s)\n' "$round" "$s" "$(loadavg)" >&2
	done
done
if [ -n "$big" ]; then
	round=1
	for s in lighttpd apache pool; do
		use_server "$s"
		measure_p3_big || die "$s: P3 64 MiB / 1 GiB failed"
	done
fi

last_delete=$(date +%s.%N)
# --- results -------------------------------------------------------------------

machine=$(jq -n --arg nproc "$(nproc)" --arg l0 "$load_start" --arg l1 "$(loadavg)" \
	--arg kernel "$(uname -sr)" --arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
	--arg mem "$(sed -n 's/^MemTotal: *//p' /proc/meminfo)" --arg d0 "$started" --arg d1 "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	--argjson st0 "$storage_start" --argjson st1 "$(storage_mib)" \
	'{nproc: ($nproc | tonumber), loadavg_start: $l0, loadavg_end: $l1, kernel: $kernel, cpu: $cpu,
	  memory: $mem, date_start: $d0, date_end: $d1, storage_mib_start: $st0, storage_mib_end: $st1}')
params=$(jq -n --argjson rounds "$rounds" --argjson mib "$mib" --argjson quick "$quick" \
	--argjson big "$([ -n "$big" ] && echo true || echo false)" --argjson bs "$block_size" --argjson bif "$in_flight" \
	--argjson clients "$p2_clients" --argjson n "$p2_n" --arg bin "$bin" --arg conf "$conf" \
	'{rounds: $rounds, mib: $mib, quick: $quick, big: $big, block_size: $bs, blocks_in_flight: $bif,
	  p2_clients: $clients, p2_requests_per_client: $n, tus_chunk_mib: 8, bin: $bin, stack_config: $conf}')
mkdir -p "$(dirname "$out")"
jq -R -s --argjson machine "$machine" --argjson params "$params" -f "$here/bench_results.jq" \
	"$work/raw.tsv" >"$out.new" && mv -f "$out.new" "$out" || die "cannot write $out"
jq -r -f "$here/bench_table.jq" "$out" | column -t -s $'\t'
echo "×: the median of each round's own ratio, which decides met (in brackets: the ratio of the medians)"

# What the run deleted leaves blobs in the outbox, due retire_grace (1 s)
# after their delete: the sweep of the run's prefix removes them, one
# storage call at a time (8 minutes after a default run).  Not on a stack
# the caller removes after the run (BENCH_STACK_DISCARDED, ./dev bench's own).
if [ -z "${BENCH_STACK_DISCARDED:-}" ]; then
	sleep "$(echo "w = 2.1 - ($(date +%s.%N) - $last_delete); if (w < 0) w = 0; w" | bc -l)"
	"$bin/bindery" -c "$work/sweep.conf" sweep --prefix - >"$work/sweep.out" 2>&1 ||
		die "the closing sweep failed: $(tail -n 5 "$work/sweep.out")"
fi
printf 'load average %s at the start, %s at the end; Azurite stored %s MiB at the start; %s\n' "$load_start" \
	"$(loadavg)" "$storage_start" "$out"
