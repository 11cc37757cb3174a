#!/usr/bin/env bash
# ./dev bench in miniature: tests/bench/bench.sh at 1 MiB, one
# round, 3 requests per P2 client, no 1 GiB create, on the test stack.  It
# must finish, every create 201 and every download's SHA-256 the file's
# (the bench checks those and exits 1 otherwise), write a results.json that
# parses and holds every figure through the three servers with its
# baselines, and leave no document behind.  The figures themselves are
# noise at this size; this is not a benchmark.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_LIGHTTPD_URL
# 21 CPU seconds of the default run's 600 s budget for a script that only
# has to keep working (./dev bench runs it in earnest): under --long.
[ -n "${BINDERY_TEST_LONG:-}" ] || skip_all "./dev bench in miniature runs under ./dev test --long"
[ -x "$BINDERY_TEST_BIN/../tests/bench/bench_load" ] || missing "tests/bench/bench_load (built with the tree)"
command -v jq >/dev/null || missing "jq"

bench_work=$(mktemp -d)
trap 'rm -rf "$bench_work"' EXIT
results=$bench_work/results.json

BENCH_CONF=$BINDERY_CONFIG BENCH_BIN=$BINDERY_TEST_BIN BENCH_TOOLS=$BINDERY_TEST_BIN/.. \
	bash "$here/../bench/bench.sh" --rounds 1 --mib 1 --no-big --p2-requests 3 --out "$results" \
	>"$bench_work/out" 2>&1
bench_rc=$?
is "$bench_rc" 0 "bench.sh --rounds 1 --mib 1 exits 0"
[ "$bench_rc" = 0 ] || sed -e 's/^/# /' "$bench_work/out" | tail -n 20
jq -e '.figures | length > 0' "$results" >/dev/null 2>&1
ok $? "results.json parses"
grep -q '^P1 (MiB/s) *lighttpd' "$bench_work/out"
ok $? "the bench printed its table"

# fig SERVER FIGURE FILTER: the exit status of "the figure's one row for
# SERVER satisfies FILTER" (0: it does).
fig() {
	jq -e --arg s "$1" --arg f "$2" "[.figures[] | select(.server == \$s and .figure == \$f)] | length == 1 and (.[0] | $3)" \
		"$results" >/dev/null 2>&1
	echo $?
}
for bench_server in lighttpd apache pool; do
	for bench_fig in P1 P2 P5; do
		ok "$(fig "$bench_server" "$bench_fig" '[.bindery, .direct, .proxied, .ratio_direct, .ratio_proxied] | all(type == "number" and . > 0)')" \
			"$bench_server $bench_fig: bindery, both baselines and both ratios"
		ok "$(fig "$bench_server" "$bench_fig" '[.paired_direct, .paired_proxied] | all(type == "number" and . > 0)')" \
			"$bench_server $bench_fig: both ratios round by round"
	done
	ok "$(fig "$bench_server" P2 '[.p50_ms.bindery, .p99_ms.bindery, .p50_ms.proxied] | all(type == "number" and . > 0)')" \
		"$bench_server P2: p50 and p99"
	ok "$(fig "$bench_server" P2-cpu '(.parts.storage.bindery > 0) and ([.parts[] | .bindery, .direct, .proxied] | all(type == "number" and . >= 0))')" \
		"$bench_server P2-cpu: every part's CPU per request, storage's above zero"
	# The counts are host-wide and other tests run beside this one: the
	# figure must be there, its value is ./dev bench's to judge.
	ok "$(fig "$bench_server" P2-db '[.bindery, .statements] | all(type == "number" and . > 0)')" \
		"$bench_server P2-db: round trips and statements per create"
	ok "$(fig "$bench_server" P3 '(.bindery | type == "number" and . > 0) and (.met | type == "boolean")')" \
		"$bench_server P3: the responders' peak RssAnon, checked against its limit"
	ok "$(fig "$bench_server" tus '[.bindery, .create, .ratio_create, .paired_create] | all(type == "number" and . > 0)')" \
		"$bench_server tus: throughput, the create beside it and the ratio"
	ok "$(fig "$bench_server" tus-parallel '[.bindery, .create, .ratio_create, .paired_create] | all(type == "number" and . > 0)')" \
		"$bench_server tus-parallel (tus-js-client, parallelUploads: 4): throughput, the create beside it and the ratio"
	ok "$(fig "$bench_server" finalize '[.bindery, .direct] | all(type == "number" and . > 0)')" \
		"$bench_server finalize: ms and the plain GET"
done
jq -e '(.machine.nproc | type == "number") and (.machine.loadavg_start | length > 0)
	and (.machine.loadavg_end | length > 0) and (.machine.kernel | length > 0) and (.machine.date_start | length > 0)' \
	"$results" >/dev/null 2>&1
ok $? "results.json describes the machine"
jq -e '[.machine.storage_mib_start, .machine.storage_mib_end] | all(type == "number" and . >= 0)' "$results" >/dev/null 2>&1
ok $? "results.json says what the stack's Azurite stored at the start and the end"
for bench_fig in P1-pool P5-pool; do
	ok "$(fig pool "$bench_fig" '[.bindery, .direct, .ratio_direct, .paired_direct] | all(type == "number" and . > 0)')" \
		"$bench_fig: the pool's figure against lighttpd's in the same round"
done
# One round: a raw number for every figure, side and server measured.
is "$(jq '[.raw[] | select(.round == 1)] | length' "$results" 2>/dev/null)" 105 "105 raw numbers from the one round"

# tests/bench/bench_ab.sh, one build against itself: both sides' creates
# answer 201 with the file's SHA-256 (it checks), one line a pair and the
# medians.
bash "$here/../bench/bench_ab.sh" --pairs 2 --mib 2 "$BINDERY_TEST_BIN" "$BINDERY_TEST_BIN" \
	>"$bench_work/ab" 2>&1
ab_rc=$?
is "$ab_rc" 0 "bench_ab.sh --pairs 2 --mib 2, the test build against itself, exits 0"
[ "$ab_rc" = 0 ] || sed -e 's/^/# /' "$bench_work/ab" | tail -n 10
is "$(grep -cE '^pair +[12]: A +[0-9.]+ MiB/s, B +[0-9.]+ MiB/s, B/A [0-9.]+$' "$bench_work/ab")" 2 \
	"... one line for each pair with both sides' MiB/s"
like "$(grep '^B/A: ' "$bench_work/ab")" '^B/A: median of the pairs [0-9.]+, of the medians [0-9.]+$' \
	"... and the ratio of B to A"
bash "$here/../bench/bench_ab.sh" --pairs 1 "$BINDERY_TEST_BIN" /nonexistent >"$bench_work/ab" 2>&1
is "$?" 1 "bench_ab.sh refuses a directory without bindery.fcgi"
like "$(cat "$bench_work/ab")" 'B: no /nonexistent/bindery.fcgi' "... and names it"

# The bench deleted every document it made (names begin with bench-).
req GET "$BINDERY_TEST_LIGHTTPD_URL/documents?prefix=bench-&limit=10"
is "$HTTP_CODE" 200 "the list by prefix answers"
is "$(printf '%s' "$HTTP_BODY" | jq -c '.documents | length')" 0 "no bench- document is left"
done_testing
