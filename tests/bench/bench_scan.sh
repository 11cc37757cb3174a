#!/usr/bin/env bash
# Benchmark (not a test): what the malware scan ([scan] clamd) costs a large
# create (P1).  Two lighttpds of its own, one whose bindery.conf has [scan]
# (a clamd of the bench's own, tests/lib/clamd.sh, its limits raised past
# the file) and one without; round after round, REPS times (default 3), the
# same MIB (default 256) random file created through each (POST
# /documents?name=, curl -T), in alternating order (the scanned one first in
# odd rounds).  Prints each round's MiB/s and the medians, and
# scanned/plain: the ratio against the baseline measured beside it.
#
#   tests/bench/bench_scan.sh [REPS] [MIB]      (./dev bench runs it last)
#
# Uses BENCH_CONF / BENCH_BIN when set (./dev bench), else the stack of
# `./dev test --keep` or `./dev up` (stack_bench_target).  Each document is
# deleted after its round.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"
reps=${1:-3}
mib=${2:-256}
bytes=$((mib * 1024 * 1024))

die() { printf 'bench_scan: %s\n' "$*" >&2; exit 1; }

if [ -n "${BENCH_CONF:-}" ] && [ -n "${BENCH_BIN:-}" ]; then
	conf=$BENCH_CONF bin=$BENCH_BIN
else
	stack_bench_target
fi
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] || die "no stack: run ./dev up or ./dev test --keep first"
[ -x /usr/sbin/clamd ] || die "clamd is not installed (apt-get install clamav-daemon clamav)"
stackdir=$(dirname "$conf")
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"

work=$(mktemp -d /tmp/bindery-bench-scan.XXXXXX)
chmod 755 "$work"
# tests/lib/clamd.sh's functions report through these two.
bail_out() { die "$*"; }
missing() { die "$*"; }
. "$top/tests/lib/clamd.sh"
cleanup() {
	clamd_stop
	for s in plain scan; do
		[ -d "$work/$s" ] && { stack_init "$work/$s"; stack_lighttpd_stop; }
	done
	[ -n "${BENCH_SCAN_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

limit=$((mib + 16))M
clamd_start "$work/clamd" include="$top/conf/clamd-bindery.conf" StreamMaxLength=$limit MaxFileSize=$limit \
	MaxScanSize=$((2 * mib + 32))M ||
	die "clamd did not start"
# The stack's own max_upload line raised (a key's first line counts: ./dev
# up's configuration has one; the bench's own stack's is already past it).
if grep -q '^max_upload = ' "$conf"; then
	sed -e "s/^max_upload = .*/max_upload = $limit/" "$conf" >"$work/plain.conf"
else
	{ cat "$conf"; printf '\n[limits]\nmax_upload = %s\n' "$limit"; } >"$work/plain.conf"
fi
{ cat "$work/plain.conf"; printf '\n[scan]\nclamd = unix:%s\ntimeout = 30\n' "$CLAMD_SOCKET"; } >"$work/scan.conf"
chmod 0600 "$work/plain.conf" "$work/scan.conf"
for s in plain scan; do
	"$bin/bindery" -c "$work/$s.conf" lifecycle-policy >/dev/null 2>"$work/check.err" ||
		die "the $s configuration does not load: $(cat "$work/check.err")"
done
# request_deadline must cover the scan of the whole file after its upload.
avoid=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
declare -A url
port=18530
for s in plain scan; do
	stack_init "$work/$s"
	STACK_AVOID_PORTS=$avoid
	stack_bench_lighttpd "$bin" "$work/$s.conf" "$mib" "$port" || die "no lighttpd ($s)"
	url[$s]=http://127.0.0.1:$HTTP_PORT
	avoid="$avoid $HTTP_PORT"
	port=$((HTTP_PORT + 1))
done

head -c "$bytes" /dev/urandom >"$work/file.bin"
cat "$work/file.bin" >/dev/null	# warm the page cache
sha=$(sha256sum "$work/file.bin" | cut -d' ' -f1)
auth=(-H "Authorization: Bearer $token")

# create SERVER NAME: prints the seconds; fails on anything but a 201 with the file's SHA-256.
create() {
	local t id
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Expect:' \
		-H 'Content-Type: application/octet-stream' -X POST -T "$work/file.bin" "${url[$1]}/documents?name=$2")
	[ "${t%% *}" = 201 ] || { echo "$1: create answered ${t%% *}: $(head -c 300 "$work/answer")" >&2; return 1; }
	grep -q "\"sha256\":\"$sha\"" "$work/answer" || { echo "$1: another SHA-256" >&2; return 1; }
	id=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$work/answer")
	curl -s -o /dev/null "${auth[@]}" -X DELETE "${url[$1]}/documents/$id"
	echo "${t#* }"
}

run=$$x$RANDOM
printf 'bench_scan: %d MiB, %d rounds, plain %s, scanned %s (clamd %s), load %s\n' "$mib" "$reps" "${url[plain]}" \
	"${url[scan]}" "$CLAMD_SOCKET" "$(cut -d' ' -f1-3 /proc/loadavg)"
plain_s=() scan_s=()
for ((i = 1; i <= reps; i++)); do
	if ((i % 2)); then order="scan plain"; else order="plain scan"; fi
	for s in $order; do
		t=$(create "$s" "bench-scan-$run-$s-$i") || die "round $i ($s) failed"
		if [ "$s" = plain ]; then plain_s+=("$t"); else scan_s+=("$t"); fi
	done
	printf 'round %d: plain %.1f MiB/s, scanned %.1f MiB/s\n' "$i" \
		"$(echo "$mib / ${plain_s[-1]}" | bc -l)" "$(echo "$mib / ${scan_s[-1]}" | bc -l)"
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mp=$(median "${plain_s[@]}") ms=$(median "${scan_s[@]}")
printf 'median: P1 plain %.1f MiB/s, P1 scanned %.1f MiB/s, scanned/plain %.2f\n' \
	"$(echo "$mib / $mp" | bc -l)" "$(echo "$mib / $ms" | bc -l)" "$(echo "$mp / $ms" | bc -l)"
