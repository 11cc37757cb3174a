#!/usr/bin/env bash
# Read-after-write across nodes: a document created through web host A (its
# Galera node) is read through web host B (another node) at once, 200 times
# (CLUSTER_RAW_ROUNDS): every read must find it, metadata and bytes.  Galera
# certifies a commit on every node before it returns, but applies it on the
# others afterwards: without wsrep_sync_wait a read on B can miss it.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

rounds=${CLUSTER_RAW_ROUNDS:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
miss_meta=0 miss_bytes=0 created=0 t0=$(date +%s%N)
for i in $(seq 1 "$rounds"); do
	head -c 3000 /dev/urandom >"$work/body"
	id=$(curl -s -m 30 -H "$AUTH" -H 'Content-Type: application/octet-stream' --data-binary "@$work/body" \
		"$URL_A/documents?name=cl-raw-$$-$i" | jq -r '.id // empty' 2>/dev/null)
	[ -n "$id" ] || continue
	created=$((created + 1))
	code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -H "$AUTH" "$URL_B/documents/$id")
	[ "$code" = 200 ] || { miss_meta=$((miss_meta + 1)); diag "round $i: GET $URL_B/documents/$id: $code"; }
	curl -s -m 30 -o "$work/got" -H "$AUTH" "$URL_B/documents/$id/content"
	cmp -s "$work/body" "$work/got" || miss_bytes=$((miss_bytes + 1))
done
ms=$((($(date +%s%N) - t0) / 1000000))
is "$created" "$rounds" "$rounds creates through host A answered 201"
is "$miss_meta" 0 "... each one's metadata found at once through host B"
is "$miss_bytes" 0 "... and its bytes read back identical through host B"
diag "$rounds x (create on A, GET and GET content on B): $ms ms"
done_testing
