#!/bin/sh
# Benchmark (not a test): 256 MiB through the blob client to Azurite versus
# `curl -T` of the same file to a SAS URL, alternating, and the client's
# peak RSS for 64 MiB and 1 GiB bodies.  Needs BINDERY_TEST_BLOB_ENDPOINT,
# _ACCOUNT, _KEY; run from the build directory or set top_builddir.
#   targets: client >= 0.95 x curl; RSS(1 GiB) within 2 MiB of RSS(64 MiB)
#   and <= 8 MiB + block_size x blocks_in_flight.
set -eu
b=${top_builddir:-.}
tool=$b/tests/integration/blobtool
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
cat "$tmp/256m.bin" > /dev/null	# warm the page cache for both sides

csum=0; usum=0
i=1
while [ "$i" -le "$rounds" ]; do
	c=$("$bench" "c$i" "$tmp/256m.bin" | sed 's/.*mibps=\([0-9.]*\).*/\1/')
	"$tool" rm "c$i"
	url=$("$tool" sas "u$i" cw 3600)
	t=$(curl -sf -o /dev/null -w '%{time_total}' -T "$tmp/256m.bin" \
		-H 'x-ms-blob-type: BlockBlob' "$url")
	u=$(echo "256 / $t" | bc -l)
	"$tool" rm "u$i"
	printf 'round %d: client %.1f MiB/s, curl -T %.1f MiB/s\n' "$i" "$c" "$u"
	csum=$(echo "$csum + $c" | bc -l); usum=$(echo "$usum + $u" | bc -l)
	i=$((i + 1))
done
printf '256 MiB mean: client %.1f MiB/s, curl %.1f MiB/s, ratio %.3f\n' \
	"$(echo "$csum / $rounds" | bc -l)" "$(echo "$usum / $rounds" | bc -l)" \
	"$(echo "$csum / $usum" | bc -l)"

r64=$("$bench" rss64 gen:64 | sed 's/.*maxrss_kib=//'); "$tool" rm rss64
r1g=$("$bench" rss1g gen:1024 | sed 's/.*maxrss_kib=//'); "$tool" rm rss1g
limit=$((8 * 1024 + BLOBTOOL_BLOCK_SIZE / 1024 * BLOBTOOL_IN_FLIGHT))
echo "peak RSS: 64 MiB body ${r64} KiB, 1 GiB body ${r1g} KiB (diff $((r1g - r64)) KiB;" \
	"limit ${limit} KiB for block ${BLOBTOOL_BLOCK_SIZE} x ${BLOBTOOL_IN_FLIGHT})"
