#!/usr/bin/env bash
# 20 concurrent creates of one name spread over both web hosts (so over two
# Galera nodes): the unique-name index is certified cluster-wide, so exactly
# one 201 and nineteen 409 (a certification loss must not become a 500 or
# a second document).  Then the name resolves to one document on both hosts.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 20000 /dev/urandom >"$work/payload.bin"
for round in 1 2 3; do
	name="cl-race-$$-$round-$RANDOM"
	for i in $(seq 1 20); do
		if [ $((i % 2)) = 0 ]; then u=$URL_A; else u=$URL_B; fi
		curl -s -o /dev/null -w '%{http_code}\n' -H "$AUTH" -H 'Content-Type: application/octet-stream' \
			--data-binary "@$work/payload.bin" "$u/documents?name=$name" >"$work/race.$round.$i" &
	done
	wait
	codes=$(cat "$work"/race.$round.* | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	is "$(cat "$work"/race.$round.* | grep -c '^201$')" 1 "round $round: 20 creates over two hosts, exactly one 201 ($codes)"
	is "$(cat "$work"/race.$round.* | grep -c '^409$')" 19 "round $round: ... and nineteen 409"
	for u in "$URL_A" "$URL_B"; do
		req GET "$u/documents?name=$name" -H "$AUTH"
		is "$(printf '%s' "$HTTP_BODY" | jq '.documents | length' 2>/dev/null)" 1 "round $round: $u lists one document by that name"
	done
done
done_testing
