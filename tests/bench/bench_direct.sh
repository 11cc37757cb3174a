#!/usr/bin/env bash
# Benchmark (not a test): what finalize of a direct upload costs.
# For the same 256 MiB random file, round after round, REPS times (default
# 3): POST /documents/direct, PUT the file to upload_url with its headers
# (straight to Azurite), then
#   finalize  POST /documents/ID/finalize: Get Blob Properties, the whole
#             blob read back under If-Match and hashed, the record, the tag,
#             the ready transaction (curl's time_total);
#   get       a plain GET of the same blob straight from Azurite with a
#             read SAS (curl -o /dev/null), the floor finalize stands on.
# Prints each round and the medians in ms, and finalize/get.
#
#   ./dev test --keep tests/e2e/healthz.sh && tests/bench/bench_direct.sh [REPS]
#   (or after ./dev up)
#
# Uses the stack of `./dev test --keep` (BINDERY_CONFIG, BINDERY_TEST_BIN)
# when those are exported, else var/test's, else the one ./dev up started.
# It starts its own lighttpd on a free port with a copy of the configuration
# whose max_upload and single_put_max fit 256 MiB and direct = true, and
# stops it afterwards.  Each document is deleted after its round (its blob
# goes through the outbox to the next sweep).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"
reps=${1:-3}
mib=256
bytes=$((mib * 1024 * 1024))

die() { printf 'bench_direct: %s\n' "$*" >&2; exit 1; }

stack_bench_target
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] || die "no stack: run ./dev up or ./dev test --keep first"
command -v jq >/dev/null || die "jq is needed"
stackdir=$(dirname "$conf")
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"
blobtool=$bin/../tests/tools/blobtool
[ -x "$blobtool" ] || make -C "$bin/.." tests/tools/blobtool >/dev/null 2>&1 || die "cannot build tests/tools/blobtool"
conf_storage() { sed -n "s/^$1 = //p" "$conf" | tail -n 1; }
export BINDERY_TEST_BLOB_ENDPOINT=${BINDERY_TEST_BLOB_ENDPOINT:-$(conf_storage endpoint)}
export BINDERY_TEST_BLOB_ACCOUNT=${BINDERY_TEST_BLOB_ACCOUNT:-$(conf_storage account)}
export BINDERY_TEST_BLOB_KEY=${BINDERY_TEST_BLOB_KEY:-$(conf_storage key)}
export BLOBTOOL_CONTAINER=$(conf_storage container)

work=$(mktemp -d)
chmod 755 "$work"
stopped=
cleanup() {
	[ -n "$stopped" ] || { stack_init "$work/stack"; stack_lighttpd_stop; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

{ cat "$conf"; printf '\n[limits]\nmax_upload = %dM\nsingle_put_max = %dM\n[upload]\ndirect = true\n' \
	$((mib + 16)) $((mib + 16)); } >"$work/bindery.conf"
chmod 0600 "$work/bindery.conf"
"$bin/bindery" -c "$work/bindery.conf" sweep --dry-run --older-than 999999 >/dev/null 2>"$work/check.err" ||
	die "the configuration does not load: $(cat "$work/check.err")"
avoid=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
stack_init "$work/stack"
STACK_AVOID_PORTS=$avoid
stack_bench_lighttpd "$bin" "$work/bindery.conf" "" 18500 || die "no lighttpd"
url=http://127.0.0.1:$HTTP_PORT

head -c "$bytes" /dev/urandom >"$work/file.bin"
cat "$work/file.bin" >/dev/null	# warm the page cache
auth=(-H "Authorization: Bearer $token")

# One round: prints "FINALIZE-SECONDS GET-SECONDS"; fails on any unexpected answer.
round() { # NAME
	local t g headers=() h id up fin blob
	jq -cn --arg n "$1" --argjson s "$bytes" '{name: $n, size: $s, content_type: "application/octet-stream"}' \
		>"$work/req.json"
	curl -s -o "$work/answer" "${auth[@]}" -H 'Content-Type: application/json' \
		--data-binary "@$work/req.json" "$url/documents/direct"
	id=$(jq -r '.id // empty' "$work/answer")
	[ -n "$id" ] || { echo "create: $(cat "$work/answer")" >&2; return 1; }
	up=$(jq -r .upload_url "$work/answer") fin=$(jq -r .finalize_url "$work/answer")
	while IFS= read -r h; do headers+=(-H "$h"); done < <(jq -r '.headers | to_entries[] | "\(.key): \(.value)"' "$work/answer")
	t=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "${headers[@]}" -H 'Expect:' -T "$work/file.bin" "$up")
	[ "$t" = 201 ] || { echo "Put Blob answered $t" >&2; return 1; }
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Content-Length: 0' \
		-X POST "$url$fin")
	[ "${t%% *}" = 200 ] || { echo "finalize answered ${t%% *}: $(cat "$work/answer")" >&2; return 1; }
	blob=${up%%\?*}
	blob=${blob##*/}
	g=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$("$blobtool" sas "$blob" r 600)")
	[ "${g%% *}" = 200 ] || { echo "GET answered ${g%% *}" >&2; return 1; }
	curl -s -o /dev/null "${auth[@]}" -X DELETE "$url/documents/$id"
	echo "${t#* } ${g#* }"
}

run=$$x$RANDOM
printf 'bench_direct: %d MiB, %d rounds, lighttpd %s, load %s\n' "$mib" "$reps" "$url" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
fin_s=() get_s=()
for ((i = 1; i <= reps; i++)); do
	r=$(round "bench-direct-$run-$i") || die "round $i failed"
	printf 'round %d: finalize %.0f ms, plain GET from Azurite %.0f ms\n' "$i" \
		"$(echo "${r% *} * 1000" | bc -l)" "$(echo "${r#* } * 1000" | bc -l)"
	fin_s+=("${r% *}") get_s+=("${r#* }")
done
stack_lighttpd_stop
stopped=1

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mf=$(median "${fin_s[@]}") mg=$(median "${get_s[@]}")
printf 'median: finalize %.0f ms (%.1f MB/s), plain GET %.0f ms (%.1f MB/s), finalize/get %.2f\n' \
	"$(echo "$mf * 1000" | bc -l)" "$(echo "$bytes / $mf / 1000000" | bc -l)" \
	"$(echo "$mg * 1000" | bc -l)" "$(echo "$bytes / $mg / 1000000" | bc -l)" "$(echo "$mf / $mg" | bc -l)"
