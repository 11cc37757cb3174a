#!/usr/bin/env bash
# Benchmark (not a test): the same 256 MiB random file
#   tus     through bindery's /uploads: POST, then PATCHes of CHUNK_MIB
#           (default 8, as bench.sh's tus figure) from one curl;
#   create  through bindery's single-request create, POST /documents?name=
#           with the raw body (curl -T);
#   parallel  through /uploads with tus-js-client 4.3.1 and parallelUploads:
#           4 (tests/bench/bench_tus_parallel.mjs): four partial uploads of
#           64 MiB at once, one PATCH each, then the final, assembled in
#           storage, whose 201 comes once the document is ready;
#   direct  straight to Azurite, one Put Blob to a SAS URL (curl -T);
# the first three through the same lighttpd, round after round, REPS times
# (default 3).  Prints each side's median seconds and MB/s (10^6 bytes) and
# the ratios tus/create (target >= 0.8), parallel/create (target >= 1.0)
# and tus/direct, as throughputs; parallel/create also round by round.
#
#   ./dev test --keep tests/e2e/healthz.sh && tests/bench/bench_tus.sh [REPS [CHUNK_MIB]]
#   (or after ./dev up)
#
# Uses the stack of `./dev test --keep` (BINDERY_CONFIG, BINDERY_TEST_BIN,
# BINDERY_TEST_BLOB_*) when those are exported, else var/test's, else the
# one ./dev up started (var/bindery.conf, var/build/app).  It starts its own
# lighttpd from conf/lighttpd.conf on a free port, with a copy of the
# configuration and of the server's body limit that fit 256 MiB, and stops
# it afterwards.  Apache is left out: the stack's LimitRequestBody and
# FcgidMaxRequestLen are 64 MiB, too small for the single-request create.
# Each document is deleted after its round (its blob goes through the
# outbox to the next sweep).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/tests/lib/stack.sh"
reps=${1:-3}
mib=256 chunk_mib=${2:-8}
bytes=$((mib * 1024 * 1024))

die() { printf 'bench_tus: %s\n' "$*" >&2; exit 1; }
case $reps$chunk_mib in *[!0-9]*) die "usage: bench_tus.sh [REPS [CHUNK_MIB]]" ;; esac
[ "$chunk_mib" -ge 1 ] && [ "$chunk_mib" -le "$mib" ] || die "CHUNK_MIB must be 1 to $mib"

stack_bench_target
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] || die "no stack: run ./dev up or ./dev test --keep first"
stackdir=$(dirname "$conf")
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || die "no demo token in $conf"
# blobtool signs the SAS for the direct side (tests/tools; built by make check).
blobtool=$bin/../tests/tools/blobtool
[ -x "$blobtool" ] || make -C "$bin/.." tests/tools/blobtool >/dev/null 2>&1 || die "cannot build tests/tools/blobtool"
conf_storage() { sed -n "s/^$1 = //p" "$conf" | tail -n 1; }
export BINDERY_TEST_BLOB_ENDPOINT=${BINDERY_TEST_BLOB_ENDPOINT:-$(conf_storage endpoint)}
export BINDERY_TEST_BLOB_ACCOUNT=${BINDERY_TEST_BLOB_ACCOUNT:-$(conf_storage account)}
export BINDERY_TEST_BLOB_KEY=${BINDERY_TEST_BLOB_KEY:-$(conf_storage key)}
export BLOBTOOL_CONTAINER=bench-tus-$$

work=$(mktemp -d)
chmod 755 "$work"
stopped=
cleanup() {
	[ -n "$stopped" ] || { stack_init "$work/stack"; stack_lighttpd_stop; }
	"$blobtool" rmcontainer >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stack's configuration with room for the file, and a lighttpd of our own.
{ cat "$conf"; printf '\n[limits]\nmax_upload = %dM\n' $((mib + 16)); } >"$work/bindery.conf"
chmod 0600 "$work/bindery.conf"
"$bin/bindery" -c "$work/bindery.conf" sweep --dry-run --older-than 999999 >/dev/null 2>"$work/check.err" ||
	die "the configuration does not load: $(cat "$work/check.err")"
avoid=$(sed -n 's/^[A-Z_]*=//p' "$stackdir/ports.env" 2>/dev/null | tr '\n' ' ')
stack_init "$work/stack"
STACK_AVOID_PORTS=$avoid
stack_bench_lighttpd "$bin" "$work/bindery.conf" "$mib" 18400 || die "no lighttpd"
url=http://127.0.0.1:$HTTP_PORT
"$blobtool" mkcontainer || die "cannot create container $BLOBTOOL_CONTAINER"

head -c "$bytes" /dev/urandom >"$work/file.bin"
mkdir "$work/parts"
split -b $((chunk_mib * 1024 * 1024)) -d -a 3 "$work/file.bin" "$work/parts/p"
cat "$work/file.bin" "$work/parts"/p* >/dev/null	# warm the page cache for every side

auth=(-H "Authorization: Bearer $token")
tus=(-H 'Tus-Resumable: 1.0.0')
# Each side prints its seconds (and fails on any unexpected answer).
# tus: the POST, then every PATCH from one curl (--next: one process and
# its kept-alive connection, each part streamed from its file, as -T does
# for the other sides), so the figure is the server's, not the shell's.
run_tus() { # NAME
	local meta up off=0 p args=() t0 t1 code secs
	meta="filename $(printf '%s' "$1" | base64 -w0),filetype $(printf 'application/octet-stream' | base64 -w0)"
	for p in "$work/parts"/p*; do
		[ "$off" = 0 ] || args+=(--next)
		args+=(-s -o "$work/answer" -D "$work/headers" -w '%{http_code} %{time_total}\n' "${auth[@]}" "${tus[@]}"
			-H 'Expect:' -H 'Content-Type: application/offset+octet-stream' -H "Upload-Offset: $off"
			-X PATCH -T "$p" "$url@UPLOAD@")
		off=$((off + $(stat -c %s "$p")))
	done
	t0=$(date +%s.%N)
	up=$(curl -sf -o /dev/null -D - "${auth[@]}" "${tus[@]}" -H "Upload-Length: $bytes" \
		-H "Upload-Metadata: $meta" -H 'Content-Length: 0' -X POST "$url/uploads" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	[ -n "$up" ] || { echo "tus: POST /uploads failed" >&2; return 1; }
	curl "${args[@]//@UPLOAD@/$up}" >"$work/patches"
	t1=$(date +%s.%N)
	# Every PATCH 204; the seconds of each, the last one (which commits) apart.
	while read -r code secs; do
		[ "$code" = 204 ] || { echo "tus: a PATCH answered $code: $(cat "$work/answer")" >&2; return 1; }
	done <"$work/patches"
	[ "$(grep -c . "$work/patches")" = "$(ls "$work/parts" | grep -c .)" ] || { echo "tus: PATCHes missing" >&2; return 1; }
	sed -e '$d' "$work/patches" | cut -d' ' -f2 >>"$work/patch.mid"
	tail -n 1 "$work/patches" | cut -d' ' -f2 >>"$work/patch.last"
	tr -d '\r' <"$work/headers" | sed -n 's|^[Ll]ocation: /documents/||p' >"$work/id"
	echo "$t1 - $t0" | bc -l
}
run_create() { # NAME
	local t
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Expect:' \
		-H 'Content-Type: application/octet-stream' -T "$work/file.bin" -X POST \
		"$url/documents?name=$1")
	[ "${t%% *}" = 201 ] || { echo "create answered ${t%% *}: $(cat "$work/answer")" >&2; return 1; }
	jq -r .id "$work/answer" >"$work/id"
	echo "${t#* }"
}
run_parallel() { # NAME
	local out
	out=$(BINDERY_TEST_TOKEN=$token node "$here/bench_tus_parallel.mjs" "$url" "$work/file.bin" "$1") || return 1
	echo "${out#* }" >"$work/id"
	echo "${out%% *}"
}
run_direct() { # NAME
	local sas t
	sas=$("$blobtool" sas "$1" cw 3600) || return 1
	t=$(curl -s -o "$work/answer" -w '%{http_code} %{time_total}' -H 'x-ms-blob-type: BlockBlob' \
		-H 'Expect:' -T "$work/file.bin" "$sas")
	[ "${t%% *}" = 201 ] || { echo "Put Blob answered ${t%% *}: $(cat "$work/answer")" >&2; return 1; }
	echo "${t#* }"
}
# drop: delete the document the last tus or create side made (its id in
# $work/id), so rounds do not pile up 256 MiB blobs.
drop() {
	local id
	read -r id <"$work/id" && [ -n "$id" ] && curl -s -o /dev/null "${auth[@]}" -X DELETE "$url/documents/$id"
	rm -f "$work/id"
}

run=$$x$RANDOM
printf 'bench_tus: %d MiB, %d MiB PATCHes, %d rounds, lighttpd %s, load %s\n' "$mib" "$chunk_mib" \
	"$reps" "$url" "$(cut -d' ' -f1-3 /proc/loadavg)"
tus_s=() create_s=() direct_s=() par_s=() par_ratio=()
command -v node >/dev/null && [ -d "$top/node_modules/tus-js-client" ] || die "no node or tus-js-client (./dev installs them)"
for ((i = 1; i <= reps; i++)); do
	t=$(run_tus "bench-tus-$run-$i") || die "round $i: tus failed"
	drop
	c=$(run_create "bench-create-$run-$i") || die "round $i: create failed"
	drop
	p=$(run_parallel "bench-par-$run-$i") || die "round $i: parallel failed"
	drop
	d=$(run_direct "direct-$i") || die "round $i: direct failed"
	"$blobtool" rm "direct-$i" >/dev/null
	printf 'round %d: tus %.2f s, create %.2f s, parallel %.2f s (%.3f× the create), direct %.2f s\n' \
		"$i" "$t" "$c" "$p" "$(echo "$c / $p" | bc -l)" "$d"
	tus_s+=("$t") create_s+=("$c") direct_s+=("$d") par_s+=("$p") par_ratio+=("$(echo "$c / $p" | bc -l)")
done
stack_lighttpd_stop
stopped=1

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mt=$(median "${tus_s[@]}") mc=$(median "${create_s[@]}") md=$(median "${direct_s[@]}") mp=$(median "${par_s[@]}")
mbs() { echo "$bytes / $1 / 1000000" | bc -l; }
printf 'median: tus %.2f s (%.1f MB/s), create %.2f s (%.1f MB/s), direct %.2f s (%.1f MB/s)\n' \
	"$mt" "$(mbs "$mt")" "$mc" "$(mbs "$mc")" "$md" "$(mbs "$md")"
printf 'ratio tus/create %.3f (target >= 0.8), tus/direct %.3f\n' \
	"$(echo "$mc / $mt" | bc -l)" "$(echo "$md / $mt" | bc -l)"
printf 'tus-parallel (parallelUploads: 4): median %.2f s (%.1f MB/s); parallel/create %.3f by the rounds'"'"' own ratios (target >= 1.0), %.3f by the medians\n' \
	"$mp" "$(mbs "$mp")" "$(median "${par_ratio[@]}")" "$(echo "$mc / $mp" | bc -l)"
# Where tus spends it: a PATCH of 8 MiB, and the last one, which commits.
mapfile -t mid <"$work/patch.mid"
mapfile -t last <"$work/patch.last"
printf 'tus PATCH of %d MiB: median %.3f s (%d of them); the last, which commits: median %.3f s\n' \
	"$chunk_mib" "$(median "${mid[@]}")" "${#mid[@]}" "$(median "${last[@]}")"
