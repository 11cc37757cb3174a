#!/usr/bin/env bash
# tests/bench/bench_results.jq and bench_table.jq on raw numbers made up to
# tell the two summaries apart: a ratio of the medians can pair one side's
# fast round with the other's slow one, so "met" goes by the median of each
# round's own ratio (paired_*).  Rounds missing on one side are left out of
# the pairs, not counted as zero.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
bench=$here/../bench

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$work/raw.tsv"; }
# P1 through lighttpd, three rounds: bindery 100 200 50 against proxied
# 90 260 60 (round ratios 1.11 0.77 0.83: median 0.83, under 0.9; the
# medians 100 / 90 = 1.11 are over) and direct 100 100 100 (ratios 1 2 0.5).
for r in 1:100:90:100 2:200:260:100 3:50:60:100; do
	IFS=: read -r round b p d <<<"$r"
	raw p1_mibs lighttpd bindery "$round" "$b"
	raw p1_mibs lighttpd proxied "$round" "$p"
	raw p1_mibs lighttpd direct "$round" "$d"
done
# P5 with round 3 of its direct side missing: pairs from rounds 1 and 2 only.
raw p5_mibs lighttpd bindery 1 300
raw p5_mibs lighttpd bindery 2 400
raw p5_mibs lighttpd bindery 3 500
raw p5_mibs lighttpd proxied 1 300
raw p5_mibs lighttpd proxied 2 400
raw p5_mibs lighttpd proxied 3 500
raw p5_mibs lighttpd direct 1 400
raw p5_mibs lighttpd direct 2 400
# tus against the create beside it: 80/100, 90/100, 70/50 -> 0.8 0.9 1.4.
for r in 1:80:100 2:90:100 3:70:50; do
	IFS=: read -r round t c <<<"$r"
	raw tus_mibs lighttpd bindery "$round" "$t"
	raw tus_mibs lighttpd create "$round" "$c"
done
params='{"rounds": 3, "mib": 256, "quick": false, "big": false, "block_size": 4194304,
	"blocks_in_flight": 4, "p2_clients": 4, "p2_requests_per_client": 100, "tus_chunk_mib": 8}'
jq -R -s --argjson machine '{}' --argjson params "$params" -f "$bench/bench_results.jq" \
	"$work/raw.tsv" >"$work/results.json" 2>"$work/err"
is "$?" 0 "bench_results.jq reads the raw numbers ($(head -c 200 "$work/err"))"
fig() { # FIGURE JQ -> the value
	jq -r --arg f "$1" "[.figures[] | select(.server == \"lighttpd\" and .figure == \$f)][0] | $2" "$work/results.json"
}
round2() { jq -r ". * 100 | round / 100" <<<"$1"; }
is "$(round2 "$(fig P1 .ratio_proxied)")" 1.11 "P1: the ratio of the medians, 100 / 90"
is "$(round2 "$(fig P1 .paired_proxied)")" 0.83 "P1: the median of the rounds' own ratios"
is "$(round2 "$(fig P1 .paired_direct)")" 1 "P1: ... against direct, 1 2 0.5"
is "$(fig P1 .met)" false "P1: not met, though the ratio of the medians is over 0.9"
is "$(round2 "$(fig P5 .paired_direct)")" 0.88 "P5: a round missing on one side is left out (0.75 1)"
is "$(fig P5 .met)" true "P5: met, 1.00 proxied and 0.88 direct"
is "$(round2 "$(fig tus .paired_create)")" 0.9 "tus: the median of 0.8 0.9 1.4"
is "$(round2 "$(fig tus .ratio_create)")" 0.8 "tus: ... the ratio of the medians, 80 / 100"
is "$(fig tus .met)" true "tus: met by the rounds' own ratios"

jq -r -f "$bench/bench_table.jq" "$work/results.json" >"$work/table" 2>"$work/err"
is "$?" 0 "bench_table.jq prints the table ($(head -c 200 "$work/err"))"
like "$(grep -P '^P1 \(MiB/s\)\tlighttpd\t' "$work/table")" $'\t''0\.83× \(1\.11×\)'$'\t' \
	"the table: P1's paired ratio, then the ratio of the medians in brackets"
like "$(grep -P '^P1 \(MiB/s\)\tlighttpd\t' "$work/table")" $'\t''NO$' "the table: P1 not met"
like "$(grep -P '^tus \(MiB/s\)\tlighttpd\t' "$work/table")" '0\.90× of 100; medians 0\.80×' \
	"the table: tus against the create beside it, both ways"
done_testing
