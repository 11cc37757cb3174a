#!/usr/bin/env bash
# Benchmark (not a test): two builds of the responder against each other on
# P1, the create of one MIB (default 256) document through lighttpd, on
# this machine at the same time.  Each build gets a lighttpd of its own
# (conf/lighttpd.conf) in front of the same stack; then PAIRS times
# (default 8) one create through each, A first in odd pairs and B first in
# even ones, each document deleted again.  Prints every pair's MiB/s and
# B/A, then the medians and the median of the pairs' own ratios: a figure
# that moves 10 % between ./dev bench runs is compared here with the other
# build in the same minute, so "no worse than before" becomes a number.
#
#   tests/bench/bench_ab.sh [--pairs N] [--mib MIB] A-BINDIR B-BINDIR
#
# A BINDIR holds bindery.fcgi and bindery, as a build's app/ does.  To
# measure against an older revision:
#
#   git worktree add /tmp/old REV && cd /tmp/old && autoreconf -fi &&
#       mkdir b && cd b && ../configure && make -j2
#   tests/bench/bench_ab.sh /tmp/old/b/app var/build/app
#
# Both builds read the stack's configuration (./dev test --keep or ./dev up,
# stack_bench_target; BENCH_CONF to name another) with max_upload raised
# for the document; the older one must accept it and the schema as it is.
# Every create must answer 201 with the file's SHA-256; status 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"

die() { printf 'bench_ab: %s\n' "$*" >&2; exit 1; }
usage() { printf 'usage: %s\n' "$(sed -n '12s/^# *//p' "$0")" >&2; exit 2; }

pairs=8 mib=256
while [ $# -gt 0 ]; do
	case $1 in
	--pairs) [ $# -ge 2 ] || usage; pairs=$2; shift 2 ;;
	--mib) [ $# -ge 2 ] || usage; mib=$2; shift 2 ;;
	-h | --help) usage ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# = 2 ] || usage
case $pairs$mib in *[!0-9]*) die "--pairs and --mib take whole numbers" ;; esac
[ "$pairs" -ge 1 ] && [ "$mib" -ge 1 ] || die "--pairs and --mib must be at least 1"
declare -A bindir=([A]=$1 [B]=$2) url=()
for s in A B; do
	[ -x "${bindir[$s]}/bindery.fcgi" ] || die "$s: no ${bindir[$s]}/bindery.fcgi"
	bindir[$s]=$(cd "${bindir[$s]}" && pwd)
done

if [ -n "${BENCH_CONF:-}" ]; then
	conf=$BENCH_CONF
else
	stack_bench_target
fi
[ -r "$conf" ] || die "no stack: run ./dev up or ./dev test --keep first"
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"
stackdir=$(dirname "$conf")

work=$(mktemp -d /dev/shm/bindery-bench-ab.XXXXXX 2>/dev/null || mktemp -d /tmp/bindery-bench-ab.XXXXXX)
chmod 755 "$work"
cleanup() {
	local s
	for s in A B; do
		[ -d "$work/$s/run" ] || continue
		stack_init "$work/$s"
		stack_lighttpd_stop
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stack's own max_upload line replaced (a key's first line counts), or
# one added; the copy holds the configuration's secrets, so it is made 0600.
prev_umask=$(umask)
umask 077
if grep -q '^max_upload = ' "$conf"; then
	sed -e "s/^max_upload = .*/max_upload = $((mib + 16))M/" "$conf" >"$work/ab.conf"
else
	{ cat "$conf"; printf '\n[limits]\nmax_upload = %dM\n' $((mib + 16)); } >"$work/ab.conf"
fi
umask "$prev_umask"
STACK_AVOID_PORTS=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
port=18620
for s in A B; do
	"${bindir[$s]}/bindery" -c "$work/ab.conf" lifecycle-policy >/dev/null 2>"$work/check.err" ||
		die "$s does not load the configuration: $(head -c 300 "$work/check.err")"
	mkdir -p "$work/$s"
	stack_init "$work/$s"
	stack_bench_lighttpd "${bindir[$s]}" "$work/ab.conf" "$mib" "$port" || die "$s: no lighttpd"
	STACK_AVOID_PORTS="$STACK_AVOID_PORTS $HTTP_PORT"
	port=$((HTTP_PORT + 1))
	url[$s]=http://127.0.0.1:$HTTP_PORT
done

head -c $((mib * 1024 * 1024)) /dev/urandom >"$work/file.bin"
sha=$(sha256sum "$work/file.bin" | cut -d' ' -f1)

# create SIDE: MiB/s of one create through that side's lighttpd, its
# answer's SHA-256 checked; the document is deleted again.
create() {
	local t secs id
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $token" \
		-H 'Expect:' -H 'Content-Type: application/octet-stream' -X POST -T "$work/file.bin" \
		"${url[$1]}/documents?name=bench-ab-$1-$$x$RANDOM")
	secs=${t#* }
	[ "${t%% *}" = 201 ] || { echo "bench_ab: $1: create answered ${t%% *}: $(head -c 300 "$work/answer")" >&2; return 1; }
	[ "$(jq -r .sha256 "$work/answer")" = "$sha" ] || { echo "bench_ab: $1: the answer's SHA-256 is not the file's" >&2; return 1; }
	id=$(jq -r .id "$work/answer")
	t=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -X DELETE "${url[$1]}/documents/$id")
	[ "$t" = 204 ] || { echo "bench_ab: $1: delete of document $id answered $t" >&2; return 1; }
	echo "$mib / $secs" | bc -l
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf 'bench_ab: P1, %d MiB, %d pairs; A %s, B %s; load %s\n' "$mib" "$pairs" "${bindir[A]}" "${bindir[B]}" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
# One create each first: both sides' workers started, their caches warm.
for s in A B; do create "$s" >/dev/null || die "$s: the warm-up create failed"; done
a=() b=() r=()
for ((i = 1; i <= pairs; i++)); do
	if ((i % 2)); then order="A B"; else order="B A"; fi
	for s in $order; do
		v=$(create "$s") || die "pair $i ($s) failed"
		if [ "$s" = A ]; then a+=("$v"); else b+=("$v"); fi
	done
	r+=("$(echo "${b[-1]} / ${a[-1]}" | bc -l)")
	printf 'pair %2d: A %6.1f MiB/s, B %6.1f MiB/s, B/A %.3f\n' "$i" "${a[-1]}" "${b[-1]}" "${r[-1]}"
done
printf 'A: median %s MiB/s\nB: median %s MiB/s\nB/A: median of the pairs %s, of the medians %s\n' \
	"$(median "${a[@]}")" "$(median "${b[@]}")" "$(median "${r[@]}")" \
	"$(echo "$(median "${b[@]}") / $(median "${a[@]}")" | bc -l | awk '{ printf "%.3f", $1 }')"
