#!/usr/bin/env bash
# run.sh - build each libFuzzer harness with ASan and UBSan and run it for
# FUZZ_SECONDS (default 30) from its seed corpus; print TAP (tests/lib/tap.sh),
# one line per harness with the number of executions reached.
#
#   tests/fuzz/run.sh [harness ...]      default: every harness below
#
# FUZZ_JOBS (default 2) harnesses run at a time.  FUZZ_CC (default clang)
# must support -fsanitize=fuzzer; without it the script prints "1..0 # SKIP".
# FUZZ_WORKDIR (default a fresh temporary directory, removed afterwards
# unless something failed) holds the binaries,
# the growing corpora and the logs; the seed corpora in the source tree are
# only read.  A crash leaves its input as FUZZ_WORKDIR/<harness>-crash-*;
# replay it with "FUZZ_WORKDIR/<harness> FILE".

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$top/tests/lib/tap.sh"
secs=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
harnesses=${*:-"fuzz_multipart fuzz_http_parse fuzz_config fuzz_blob_xml fuzz_tus_headers"}

case $secs in
''|*[!0-9]*) bail_out "FUZZ_SECONDS must be a whole number" ;;
esac

if [ -n "${FUZZ_WORKDIR:-}" ]; then
	work=$FUZZ_WORKDIR
	keep=1
	mkdir -p "$work" || bail_out "cannot create $work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/bindery-fuzz.XXXXXX") || bail_out "mktemp failed"
	keep=0
fi

# libFuzzer needs clang with its runtime (Debian: libclang-rt-*-dev).
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	>"$work/probe.c"
if ! command -v "$cc" >/dev/null 2>&1 ||
    ! "$cc" $flags -o "$work/probe" "$work/probe.c" >"$work/probe.log" 2>&1; then
	[ "$keep" = 1 ] || rm -rf "$work"
	missing "$cc cannot build libFuzzer programs (-fsanitize=fuzzer)"
fi

# The library sources each harness is compiled with (instrumented, so they
# are not taken from libbindery.a).
sources_for() {
	case $1 in
	fuzz_multipart) echo "lib/parse/multipart.c lib/base/alloc.c lib/base/buf.c" ;;
	fuzz_http_parse) echo "lib/parse/http_parse.c lib/parse/disposition.c lib/parse/origin.c app/routes.c lib/base/alloc.c lib/base/buf.c" ;;
	fuzz_config) echo "lib/parse/config.c lib/parse/mime_list.c lib/parse/http_parse.c lib/parse/origin.c lib/base/log.c lib/base/alloc.c lib/base/buf.c" ;;
	fuzz_blob_xml) echo "lib/storage/blob.c lib/storage/blob_http.c lib/storage/blob_xml.c lib/storage/sign.c lib/storage/blob_sas.c lib/storage/entra.c lib/storage/jwt.c lib/storage/secret_cache.c lib/base/rand.c lib/base/base64.c lib/base/http_date.c lib/base/clock.c lib/base/counters.c lib/base/log.c lib/base/alloc.c lib/base/buf.c" ;;
	fuzz_tus_headers) echo "lib/parse/tus_headers.c lib/base/base64.c lib/base/http_date.c lib/base/alloc.c lib/base/buf.c" ;;
	*) return 1 ;;
	esac
}
# The libraries each harness links (not instrumented; pkg-config when it
# knows them).
libs_for() {
	case $1 in
	fuzz_config) pkg-config --libs inih 2>/dev/null || echo "-linih" ;;
	fuzz_blob_xml) pkg-config --libs expat libcurl gnutls jansson nettle 2>/dev/null ||
		echo "-lexpat -lcurl -lgnutls -ljansson -lnettle" ;;
	esac
}
dict_for() {
	case $1 in
	fuzz_multipart) echo "tests/fuzz/multipart.dict" ;;
	fuzz_http_parse) echo "tests/fuzz/http_parse.dict" ;;
	fuzz_config) echo "tests/fuzz/config.dict" ;;
	fuzz_blob_xml) echo "tests/fuzz/blob_xml.dict" ;;
	fuzz_tus_headers) echo "tests/fuzz/tus_headers.dict" ;;
	esac
}
# Extra read-only seed directories (libFuzzer reads them recursively).
seeds_for() {
	case $1 in
	fuzz_multipart) echo "tests/data/multipart" ;;
	esac
}

# fuzz_one HARNESS: build and run it; its verdict goes to WORK/HARNESS.verdict
# ("pass<TAB>what" or "fail<TAB>what", then "# ..." lines), for the main
# shell to print in order (harnesses run FUZZ_JOBS at a time: each is one
# process on one core, and ./dev test waits for the last of them).
fuzz_one() {
	local h=$1 srcs d rc execs corpus out=$work/$1.verdict
	if ! srcs=$(sources_for "$h"); then
		printf 'fail\t%s: no such harness\n' "$h" >"$out"
		return
	fi
	set --
	for s in tests/fuzz/$h.c $srcs; do
		set -- "$@" "$top/$s"
	done
	if ! "$cc" $flags -I"$top" -I"$top/lib" -I"$top/tests" -o "$work/$h" "$@" $(libs_for "$h") -lpthread \
	    >"$work/$h.build.log" 2>&1; then
		{ printf 'fail\t%s: build failed\n' "$h"; sed 's/^/# /' "$work/$h.build.log" | head -30; } >"$out"
		return
	fi
	mkdir -p "$work/corpus-$h"
	cp "$top/tests/fuzz/corpus/$h/"* "$work/corpus-$h/" 2>/dev/null
	set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/$h-" "$work/corpus-$h"
	d=$(dict_for "$h")
	[ -n "$d" ] && set -- -dict="$top/$d" "$@"
	for s in $(seeds_for "$h"); do
		set -- "$@" "$top/$s"
	done
	"$work/$h" "$@" >"$work/$h.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log" | tail -1)
	corpus=$(ls "$work/corpus-$h" | wc -l)
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		printf 'pass\t%s: %s executions in %ss, corpus %s inputs\n' "$h" "$execs" "$secs" "$corpus" >"$out"
	else
		{ printf 'fail\t%s: exit %s after %s executions (log %s)\n' "$h" "$rc" "${execs:-?}" "$work/$h.log"
		  grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$work/$h.log" | head -10 | sed 's/^/# /'
		} >"$out"
	fi
}

jobs_max=${FUZZ_JOBS:-2}
case $jobs_max in ''|*[!0-9]*|0) bail_out "FUZZ_JOBS must be a whole number above 0" ;; esac
running=0
for h in $harnesses; do
	if [ "$running" -ge "$jobs_max" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$h" &
	running=$((running + 1))
done
wait
failed=0
for h in $harnesses; do
	first=1
	while IFS= read -r line; do
		if [ "$first" = 1 ]; then
			first=0
			case $line in
			pass$'\t'*) pass "${line#*$'\t'}" ;;
			*) fail "${line#*$'\t'}"; failed=1 ;;
			esac
		else
			printf '%s\n' "$line"
		fi
	done <"$work/$h.verdict" 2>/dev/null
	[ "$first" = 0 ] || { fail "$h: no verdict"; failed=1; }
done
if [ "$failed" = 0 ] && [ "$keep" = 0 ]; then
	rm -rf "$work"
elif [ "$failed" = 1 ]; then
	note "work directory kept: $work"
fi
done_testing
