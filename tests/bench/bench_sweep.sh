#!/bin/bash
# bench_sweep.sh - how fast `bindery sweep` and `bindery audit` are against
# what the storage service itself allows, measured in the same run:
#
#   sweep: N stale intents with blobs tagged pending, swept with P workers,
#          against raw Delete Blob with P clients on as many blobs.
#          Target: sweep items/s >= 0.8 x raw deletes/s.
#   audit: M ready documents on committed blobs, audited, against List Blobs
#          with tags to the end over the same blobs.  Target >= 0.8 x.
#
# Environment: BINDERY_CONFIG (required), BINDERY_TEST_BIN (dir with bindery),
# BENCH_BIN (dir with bench_sweep; default the build's tests/bench),
# BENCH_SWEEP_N (10000), BENCH_AUDIT_N (100000), BENCH_PARALLEL (8),
# BENCH_AUDIT_PREFIX (reuse blobs planted by an earlier run under it).
set -u
: "${BINDERY_CONFIG:?set BINDERY_CONFIG}"
BIN=${BINDERY_TEST_BIN:-${top_builddir:-.}/app}
BENCH=${BENCH_BIN:-${top_builddir:-.}/tests/bench}
N=${BENCH_SWEEP_N:-10000}
M=${BENCH_AUDIT_N:-100000}
P=${BENCH_PARALLEL:-8}
RUN=bench$$-
export BINDERY_CONFIG

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
field() { sed -n "s/^$1 //p"; }
secs() { date +%s.%N; }

echo "== sweep: $N stale intents, $P workers"
raw=$("$BENCH/bench_sweep" raw-delete "${RUN}raw-" "$N" "$P") || exit 1
echo "$raw"
raw_rate=$(printf '%s\n' "$raw" | field raw_delete_per_s)
"$BENCH/bench_sweep" plant-intents "${RUN}sw-" "$N" "$P" || exit 1
out=$("$BIN/bindery" -v sweep --older-than 3600 --parallel "$P" --batch 500)
rc=$?
echo "$out"
swept=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9]*\) deleted,.*/\1/p')
took=$(printf '%s\n' "$out" | sed -n 's/.* in \([0-9.]*\)s$/\1/p')
sweep_rate=$(awk -v n="$swept" -v t="$took" 'BEGIN { printf "%.1f", (t > 0 ? n / t : 0) }')
echo "sweep exit $rc: $swept items in ${took}s = $sweep_rate items/s;" \
	"raw Delete Blob $raw_rate/s; ratio $(ratio "$sweep_rate" "$raw_rate") (target >= 0.80)"

echo "== audit: $M blobs"
AP=${BENCH_AUDIT_PREFIX:-}
if [ -z "$AP" ]; then
	AP="${RUN}au-"
	"$BENCH/bench_sweep" plant-ready "$AP" "$M" "$P" || exit 1
fi
list=$("$BENCH/bench_sweep" list "$AP") || exit 1
echo "$list"
list_rate=$(printf '%s\n' "$list" | field list_per_s)
prefix=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | head -n 1)
t0=$(secs)
out=$("$BIN/bindery" -v audit --prefix "${AP#"$prefix"}")
rc=$?
t1=$(secs)
echo "$out" | tail -n 1
n=$(printf '%s\n' "$out" | sed -n 's/^audit: \([0-9]*\) blobs.*/\1/p' | tail -n 1)
audit_rate=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
echo "audit exit $rc: $n blobs = $audit_rate blobs/s (whole process);" \
	"List Blobs with tags $list_rate/s; ratio $(ratio "$audit_rate" "$list_rate") (target >= 0.80)"

if [ -z "${BENCH_KEEP:-}" ]; then
	"$BENCH/bench_sweep" clean "$RUN"
fi
