#!/usr/bin/env bash
# Deletes racing on two Galera nodes (through the two web hosts):
# (1) two deletes of one document at once: one 204, one 404, and the
# document is gone on both hosts; (2) a replace and a delete with the same
# If-Match at once: exactly one succeeds (200 or 204), the other is
# refused (412 or 404), and both hosts then show what the winner left.  An
# acknowledged delete must never leave the document readable
# (docs_db.c delete_commit_check).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"

rounds=${CLUSTER_CONFLICT_ROUNDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
create() { # NAME: sets id, etag
	req POST "$URL_A/documents?name=$1" -H "$AUTH" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$work/orig"
	id=$(printf '%s' "$HTTP_BODY" | jq -r '.id // empty') etag=$(printf '%s' "$HTTP_BODY" | jq -r '.etag // empty')
}
code_on() { curl -s -m 30 -o "$work/got" -w '%{http_code}' -H "$AUTH" "$1/documents/$id/content"; }

bad_dd=0 tally_dd='' bad_rd=0 tally_rd=''
for r in $(seq 1 "$rounds"); do
	head -c 2000 /dev/urandom >"$work/orig"
	create "cl-deldel-$$-$r"
	[ -n "$id" ] || { bad_dd=$((bad_dd + 1)); diag "round $r: create failed"; continue; }
	curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE -H "$AUTH" "$URL_A/documents/$id" >"$work/da" &
	curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE -H "$AUTH" "$URL_B/documents/$id" >"$work/db" &
	wait
	pair="$(cat "$work/da")/$(cat "$work/db")"
	tally_dd+="$pair "
	case $pair in 204/404 | 404/204) ;; *) bad_dd=$((bad_dd + 1)); diag "round $r: two deletes: $pair" ;; esac
	for u in "$URL_A" "$URL_B"; do
		c=$(code_on "$u")
		[ "$c" = 404 ] || { bad_dd=$((bad_dd + 1)); diag "round $r: deleted document $id reads $c on $u"; }
	done

	create "cl-repdel-$$-$r"
	[ -n "$id" ] || { bad_rd=$((bad_rd + 1)); diag "round $r: create failed"; continue; }
	head -c 2000 /dev/urandom >"$work/new"
	curl -s -m 30 -o /dev/null -w '%{http_code}' -X PUT -H "$AUTH" -H "If-Match: $etag" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/new" \
		"$URL_A/documents/$id/content" >"$work/ra" &
	curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE -H "$AUTH" -H "If-Match: $etag" \
		"$URL_B/documents/$id" >"$work/rb" &
	wait
	pair="$(cat "$work/ra")/$(cat "$work/rb")"
	tally_rd+="$pair "
	case $pair in
	200/412 | 200/404) want=new ;;
	412/204 | 404/204) want=gone ;;
	*) want=bad ;;
	esac
	if [ "$want" = bad ]; then
		bad_rd=$((bad_rd + 1)); diag "round $r: replace/delete: $pair"
		continue
	fi
	for u in "$URL_A" "$URL_B"; do
		c=$(code_on "$u")
		if [ "$want" = gone ]; then
			[ "$c" = 404 ] || { bad_rd=$((bad_rd + 1)); diag "round $r: $pair but $u reads $c"; }
		else
			[ "$c" = 200 ] && cmp -s "$work/got" "$work/new" ||
				{ bad_rd=$((bad_rd + 1)); diag "round $r: $pair but $u reads $c, not the new bytes"; }
		fi
	done
done
is "$bad_dd" 0 "$rounds rounds of two deletes on two nodes: one 204, one 404, gone on both hosts"
is "$bad_rd" 0 "$rounds rounds of replace and delete with one If-Match on two nodes: one wins, both hosts agree"
diag "two deletes (A/B): $(printf '%s\n' $tally_dd | sort | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
diag "replace/delete (A/B): $(printf '%s\n' $tally_rd | sort | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
done_testing
