#!/usr/bin/env bash
# A certification conflict: two replaces of one document with the same
# If-Match, at once, through different web hosts (so committed on different
# Galera nodes).  The conditional UPDATE is the fence on a cluster too:
# exactly one 200 and one 412.  When the two write sets meet in
# certification the loser's transaction fails (deadlock) and runs again
# (db_txn_retry), now seeing the winner's version: 412, not 503.  Before
# replace checked its commit (docs_db.c replace_commit_check) about one
# round in 160 answered 200 twice while only one replace took effect.
# The document then reads back as the winner's bytes on both hosts.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

rounds=${CLUSTER_CONFLICT_ROUNDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
two_ok=0 no_ok=0 not_412=0 bad_bytes=0 tally=''
for r in $(seq 1 "$rounds"); do
	head -c 2000 /dev/urandom >"$work/orig"
	req POST "$URL_A/documents?name=cl-conflict-$$-$r" -H "$AUTH" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/orig"
	[ "$HTTP_CODE" = 201 ] || { diag "round $r: create: $HTTP_CODE"; continue; }
	id=$(printf '%s' "$HTTP_BODY" | jq -r .id) etag=$(printf '%s' "$HTTP_BODY" | jq -r .etag)
	head -c 2000 /dev/urandom >"$work/a"
	head -c 2000 /dev/urandom >"$work/b"
	curl -s -m 30 -o "$work/ra" -w '%{http_code}' -X PUT -H "$AUTH" -H "If-Match: $etag" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/a" \
		"$URL_A/documents/$id/content" >"$work/ca" &
	curl -s -m 30 -o "$work/rb" -w '%{http_code}' -X PUT -H "$AUTH" -H "If-Match: $etag" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/b" \
		"$URL_B/documents/$id/content" >"$work/cb" &
	wait
	ca=$(cat "$work/ca") cb=$(cat "$work/cb")
	tally+="$ca/$cb "
	oks=0 winner=
	[ "$ca" = 200 ] && oks=$((oks + 1)) winner=a
	[ "$cb" = 200 ] && oks=$((oks + 1)) winner=b
	if [ "$oks" -gt 1 ]; then
		two_ok=$((two_ok + 1))
		diag "round $r: two 200s for document $id (If-Match $etag): A $(cat "$work/ra") B $(cat "$work/rb")"
	fi
	[ "$oks" = 0 ] && no_ok=$((no_ok + 1))
	[ "$ca" = 412 ] || [ "$cb" = 412 ] || not_412=$((not_412 + 1))
	if [ "$oks" = 1 ]; then
		for u in "$URL_A" "$URL_B"; do
			curl -s -m 30 -o "$work/got" -H "$AUTH" "$u/documents/$id/content"
			cmp -s "$work/$winner" "$work/got" || bad_bytes=$((bad_bytes + 1))
		done
	fi
done
is "$two_ok" 0 "$rounds rounds of two same-If-Match replaces on two nodes: never two 200s"
is "$no_ok" 0 "... always one 200"
is "$not_412" 0 "... and one 412 (a certification loss is retried, not a 503)"
is "$bad_bytes" 0 "... and the winner's bytes read back on both hosts"
diag "codes (host A/host B): $(printf '%s\n' $tally | sort | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
done_testing
