#!/bin/sh
# Benchmark (not a test): 256 MiB through the blob client to Azurite versus
# curl of the same file to a SAS URL, alternating, and the client's peak
# memory for 64 MiB and 1 GiB bodies.  Needs BINDERY_TEST_BLOB_ENDPOINT,
# _ACCOUNT, _KEY; run from the build directory or set top_builddir.
#   targets: client >= 0.95 x curl; RSS(1 GiB) within 2 MiB of RSS(64 MiB)
#   and <= 8 MiB + block_size x blocks_in_flight.
#
# Two curl references, because they are not the same work:
#   curl -T   one Put Blob of 256 MiB, no Content-MD5, no SHA-256: the
#             targets' reference.
#   curl blk  the client's protocol: Put Block of block_size with
#             Content-MD5, blocks_in_flight at once (curl -Z), then Put
#             Block List; the digests are computed before the clock starts,
#             so curl still hashes nothing (needs openssl; else skipped).
# The client hashes every byte twice (MD5 per block, SHA-256 of the body)
# on a machine whose CPUs it shares with Azurite, so compare with both.
set -eu
b=${top_builddir:-.}
tool=$b/tests/tools/blobtool
bench=$b/tests/bench/bench_blob
rounds=${BENCH_ROUNDS:-3}
: "${BINDERY_TEST_BLOB_ENDPOINT:?set BINDERY_TEST_BLOB_ENDPOINT}"
BLOBTOOL_CONTAINER=bench-blob-$$
BLOBTOOL_BLOCK_SIZE=${BLOBTOOL_BLOCK_SIZE:-8388608}
BLOBTOOL_IN_FLIGHT=${BLOBTOOL_IN_FLIGHT:-4}
export BLOBTOOL_CONTAINER BLOBTOOL_BLOCK_SIZE BLOBTOOL_IN_FLIGHT
tmp=$(mktemp -d)
trap '"$tool" rmcontainer >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$tool" mkcontainer
head -c 268435456 /dev/urandom > "$tmp/256m.bin"
cat "$tmp/256m.bin" > /dev/null	# warm the page cache for every side

staged=no
if command -v openssl >/dev/null 2>&1; then
	mkdir "$tmp/blk"
	split -b "$BLOBTOOL_BLOCK_SIZE" -d -a 5 "$tmp/256m.bin" "$tmp/blk/p"
	for p in "$tmp"/blk/p?????; do
		openssl dgst -md5 -binary "$p" | base64 > "$p.md5"
	done
	staged=yes
fi

# curl_staged NAME: the client's protocol, driven by curl; prints seconds.
curl_staged() {
	url=$("$tool" sas "$1" cw 3600)
	xml='<?xml version="1.0" encoding="utf-8"?><BlockList>'
	set --
	for p in "$tmp"/blk/p?????; do
		id=$(printf 'blk%s' "${p##*/p}" | base64)
		[ $# -gt 0 ] && set -- "$@" --next
		set -- "$@" -f -o /dev/null -H "Content-MD5: $(cat "$p.md5")" \
			-T "$p" "$url&comp=block&blockid=$id"
		xml="$xml<Latest>$id</Latest>"
	done
	xml="$xml</BlockList>"
	t0=$(date +%s.%N)
	# -Z draws its own meter whatever -s says; -f still fails the run.
	curl -s -Z --parallel-max "$BLOBTOOL_IN_FLIGHT" "$@" 2>/dev/null ||
		{ echo "curl blk: a Put Block failed" >&2; return 1; }
	curl -sf -o /dev/null -X PUT -H 'If-None-Match: *' --data-binary "$xml" \
		"$url&comp=blocklist"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

csum=0; usum=0; ssum=0
i=1
while [ "$i" -le "$rounds" ]; do
	c=$("$bench" "c$i" "$tmp/256m.bin" | sed 's/.*mibps=\([0-9.]*\).*/\1/')
	"$tool" rm "c$i"
	url=$("$tool" sas "u$i" cw 3600)
	t=$(curl -sf -o /dev/null -w '%{time_total}' -T "$tmp/256m.bin" \
		-H 'x-ms-blob-type: BlockBlob' "$url")
	u=$(echo "256 / $t" | bc -l)
	"$tool" rm "u$i"
	s=0
	if [ "$staged" = yes ]; then
		s=$(echo "256 / $(curl_staged "s$i")" | bc -l)
		"$tool" rm "s$i"
	fi
	printf 'round %d: client %.1f MiB/s, curl -T %.1f MiB/s, curl blk %.1f MiB/s\n' \
		"$i" "$c" "$u" "$s"
	csum=$(echo "$csum + $c" | bc -l); usum=$(echo "$usum + $u" | bc -l)
	ssum=$(echo "$ssum + $s" | bc -l)
	i=$((i + 1))
done
printf '256 MiB mean: client %.1f MiB/s, curl -T %.1f MiB/s (ratio %.3f)' \
	"$(echo "$csum / $rounds" | bc -l)" "$(echo "$usum / $rounds" | bc -l)" \
	"$(echo "$csum / $usum" | bc -l)"
if [ "$staged" = yes ]; then
	printf ', curl blk %.1f MiB/s (ratio %.3f)' "$(echo "$ssum / $rounds" | bc -l)" \
		"$(echo "$csum / $ssum" | bc -l)"
fi
printf '\n'

o64=$("$bench" rss64 gen:64); "$tool" rm rss64
o1g=$("$bench" rss1g gen:1024); "$tool" rm rss1g
r64=$(echo "$o64" | sed 's/.*maxrss_kib=\([0-9]*\).*/\1/')
r1g=$(echo "$o1g" | sed 's/.*maxrss_kib=\([0-9]*\).*/\1/')
a64=$(echo "$o64" | sed 's/.*anon_kib=\([0-9-]*\).*/\1/')
a1g=$(echo "$o1g" | sed 's/.*anon_kib=\([0-9-]*\).*/\1/')
limit=$((8 * 1024 + BLOBTOOL_BLOCK_SIZE / 1024 * BLOBTOOL_IN_FLIGHT))
echo "peak RSS: 64 MiB body ${r64} KiB, 1 GiB body ${r1g} KiB (diff $((r1g - r64)) KiB;" \
	"limit ${limit} KiB for block ${BLOBTOOL_BLOCK_SIZE} x ${BLOBTOOL_IN_FLIGHT})"
echo "peak private (RssAnon): 64 MiB body ${a64} KiB, 1 GiB body ${a1g} KiB" \
	"(the rest of RSS is shared library pages)"
