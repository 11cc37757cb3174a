#!/usr/bin/env bash
# Benchmark (not a test): how much a download's speed (P5) spreads, through
# bindery against straight from Azurite, on this machine.  One lighttpd of
# its own ([download] mode = proxy), one MIB (default 256) random document;
# then PAIRS times (default 10) a download through bindery and one of the
# same blob straight from Azurite with a SAS, in alternating order (bindery
# first in odd pairs).  Prints each pair's MiB/s and ratio, and per side
# the median, the range and the spread (max / min): when the baseline alone
# spreads as far as bindery does, a slow P5 round is the machine's, not the
# download path's.  With --sync, every download is preceded by `sync`, so
# none meets the write-back of what the previous step wrote (in ./dev
# bench, P5 follows P1's three uploads of MIB each).
#
#   tests/bench/bench_p5.sh [--sync] [PAIRS] [MIB]
#
# Uses BENCH_CONF / BENCH_BIN when set (./dev bench), else the stack of
# `./dev test --keep` or `./dev up` (stack_bench_target).  Every download's
# SHA-256 must be the file's; the document is deleted at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"
sync_each=
[ "${1:-}" = --sync ] && { sync_each=1; shift; }
pairs=${1:-10}
mib=${2:-256}
bytes=$((mib * 1024 * 1024))

die() { printf 'bench_p5: %s\n' "$*" >&2; exit 1; }

if [ -n "${BENCH_CONF:-}" ] && [ -n "${BENCH_BIN:-}" ]; then
	conf=$BENCH_CONF bin=$BENCH_BIN
else
	stack_bench_target
fi
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] || die "no stack: run ./dev up or ./dev test --keep first"
tools=${BENCH_TOOLS:-$bin/..}
blobtool=$tools/tests/tools/blobtool
[ -x "$blobtool" ] || die "no $blobtool (built with the tree)"
stackdir=$(dirname "$conf")
conf_get() { sed -n "s/^$1 = //p" "$conf" | tail -n 1; }
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"
export BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY BLOBTOOL_CONTAINER
BINDERY_TEST_BLOB_ENDPOINT=$(conf_get endpoint) BINDERY_TEST_BLOB_ACCOUNT=$(conf_get account)
BINDERY_TEST_BLOB_KEY=$(conf_get key) BLOBTOOL_CONTAINER=$(conf_get container)
[ -n "$BINDERY_TEST_BLOB_KEY" ] || die "$conf has no [storage] key (the baseline needs a SAS)"

work=$(mktemp -d /dev/shm/bindery-bench-p5.XXXXXX 2>/dev/null || mktemp -d /tmp/bindery-bench-p5.XXXXXX)
chmod 755 "$work"
cleanup() {
	[ -d "$work/run" ] && { stack_init "$work"; stack_lighttpd_stop; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stack's own max_upload and mode lines, replaced (a key's first line counts).
sed -e "s/^max_upload = .*/max_upload = $((mib + 16))M/" -e 's/^mode = .*/mode = proxy/' "$conf" >"$work/p5.conf"
chmod 0600 "$work/p5.conf"
"$bin/bindery" -c "$work/p5.conf" lifecycle-policy >/dev/null 2>"$work/check.err" ||
	die "the configuration does not load: $(cat "$work/check.err")"
stack_init "$work"
STACK_AVOID_PORTS=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
stack_bench_lighttpd "$bin" "$work/p5.conf" "$mib" 18540 || die "no lighttpd"
url=http://127.0.0.1:$HTTP_PORT
auth=(-H "Authorization: Bearer $token")

head -c "$bytes" /dev/urandom >"$work/file.bin"
sha=$(sha256sum "$work/file.bin" | cut -d' ' -f1)
t=$(curl -s -o "$work/answer" -w '%{http_code}' "${auth[@]}" -H 'Expect:' -H 'Content-Type: application/octet-stream' \
	-X POST -T "$work/file.bin" "$url/documents?name=bench-p5-$$x$RANDOM")
[ "$t" = 201 ] || die "create answered $t: $(head -c 300 "$work/answer")"
id=$(jq -r .id "$work/answer")
rm -f "$work/file.bin"
# The blob's name is the row's: asked as the configuration's own account.
blob=$(mariadb --defaults-extra-file=<(printf '[client]\nuser=%s\npassword=%s\n%s\n' "$(conf_get user)" \
	"$(conf_get password)" "$(if [ -n "$(conf_get socket)" ]; then echo "socket=$(conf_get socket)";
	else printf 'host=%s\nport=%s' "$(conf_get host)" "$(conf_get port)"; fi)") -N "$(conf_get name)" \
	-e "SELECT blob_name FROM documents WHERE id = $id")
[ -n "$blob" ] || die "cannot find document $id's blob"
sas=$("$blobtool" account-sas r 3600) || die "blobtool account-sas failed"

# get SIDE: MiB/s of one download, its bytes checked.
get() {
	local u a=() t
	if [ "$1" = bindery ]; then u=$url/documents/$id/content a=("${auth[@]}")
	else u=$BINDERY_TEST_BLOB_ENDPOINT/$BLOBTOOL_CONTAINER/$blob?$sas; fi
	[ -n "$sync_each" ] && sync
	t=$(curl -s -o "$work/down" -w '%{http_code} %{time_total}' "${a[@]}" "$u")
	[ "${t%% *}" = 200 ] || { echo "$1: GET answered ${t%% *}" >&2; return 1; }
	[ "$(sha256sum "$work/down" | cut -d' ' -f1)" = "$sha" ] || { echo "$1: other bytes" >&2; return 1; }
	rm -f "$work/down"
	echo "$mib / ${t#* }" | bc -l
}

printf 'bench_p5: %d MiB, %d pairs%s, bindery %s, load %s\n' "$mib" "$pairs" "${sync_each:+ (sync before each)}" \
	"$url" "$(cut -d' ' -f1-3 /proc/loadavg)"
b=() d=() r=()
for ((i = 1; i <= pairs; i++)); do
	if ((i % 2)); then order="bindery direct"; else order="direct bindery"; fi
	for s in $order; do
		v=$(get "$s") || die "pair $i ($s) failed"
		if [ "$s" = bindery ]; then b+=("$v"); else d+=("$v"); fi
	done
	r+=("$(echo "${b[-1]} / ${d[-1]}" | bc -l)")
	printf 'pair %2d: bindery %6.1f MiB/s, direct %6.1f MiB/s, ratio %.2f\n' "$i" "${b[-1]}" "${d[-1]}" "${r[-1]}"
done
curl -s -o /dev/null "${auth[@]}" -X DELETE "$url/documents/$id"

stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "median %.1f, range %.1f-%.1f, spread %.2f", m, v[1], v[NR], v[NR] / v[1] }'; }
printf 'bindery: %s\n' "$(stats "${b[@]}")"
printf 'direct:  %s\n' "$(stats "${d[@]}")"
printf 'ratio:   %s (pairs below 0.8: %d of %d)\n' "$(stats "${r[@]}")" \
	"$(printf '%s\n' "${r[@]}" | awk '$1 < 0.8' | wc -l)" "$pairs"
