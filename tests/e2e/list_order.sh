#!/usr/bin/env bash
# The list follows the order documents became ready, not their ids
# (doc/design.md "Smaller decisions"), through lighttpd and Apache.
#
# A resumable upload gets its id when it is created and may finish much
# later.  A pager that has read up to a document made ready after the
# upload was created must still see the upload's document on its next page
# once it finishes: listed by id it would sort before the cursor and be
# skipped for good.  A replace keeps a document's place.
#
# The cursor the pager holds is the one the API hands out: a page of one
# (limit=1) that ends at document A gives A's cursor as "next".  To land
# that page on A, the test reads from the database where A sits in the
# list (white-box, said so), as the previous entry's ready_seq.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
RUN=lo$$x$RANDOM
TUS=("${CHAOS_AUTH[@]}" -H 'Tus-Resumable: 1.0.0')
head -c 3000 /dev/urandom >"$work/body"

# ids_after URL CURSOR: the ids of the list after CURSOR, one per line (limit 1000).
ids_after() {
	curl -s -m 30 "$1/documents?limit=1000&after=$2" |
		python3 -c 'import json, sys; [print(d["id"]) for d in json.load(sys.stdin)["documents"]]'
}

for server in lighttpd apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	s=$server

	# U: an upload created first (the older id), finished last.
	req POST "$url/uploads" "${TUS[@]}" -H 'Upload-Length: 3000' -H 'Content-Length: 0' \
		-H "Upload-Metadata: filename $(printf %s "$RUN-$s-u" | base64 -w0)"
	loc=$(header location)
	u=$(sql "SELECT id FROM documents WHERE name = '$RUN-$s-u'")
	req POST "$url/documents?name=$RUN-$s-a" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body"
	a=$(jfield "$HTTP_BODY" id)
	ok "[ ${u:-0} -gt 0 ] && [ ${a:-0} -gt ${u:-0} ]" "$s: the upload's document has the older id ($u < $a)"

	# The pager's page of one that ends at A, and the cursor it hands out.
	before=$(sql "SELECT COALESCE(MAX(ready_seq), 0) FROM documents
		WHERE ready_seq < (SELECT ready_seq FROM documents WHERE id = $a)")
	req GET "$url/documents?limit=1&after=$before"
	is "$(printf '%s' "$HTTP_BODY" | python3 -c 'import json, sys; print(json.load(sys.stdin)["documents"][0]["id"])')" \
		"$a" "$s: a page of one ends at A"
	cursor=$(jfield "$HTTP_BODY" next)
	like "$cursor" '^[0-9]+$' "$s: ... and hands out a cursor"

	req PATCH "$url$loc" "${TUS[@]}" -H 'Content-Type: application/offset+octet-stream' \
		-H 'Upload-Offset: 0' --data-binary "@$work/body"
	is "$HTTP_CODE $(header location)" "204 /documents/$u" "$s: the upload finishes after A"
	ids_after "$url" "$cursor" >"$work/next"
	ok "grep -qx '$u' '$work/next'" "$s: the next page from A's cursor lists it (older id, ready later)"
	unlike "$(cat "$work/next")" "^$a\$" "$s: ... and not A again"

	# A replace keeps the document's place.
	req PUT "$url/documents/$a/content" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body"
	is "$HTTP_CODE" 200 "$s: A is replaced"
	ids_after "$url" "$cursor" >"$work/next"
	ok "! grep -qx '$a' '$work/next'" "$s: ... and stays before the cursor (a replace keeps the place)"
	ids_after "$url" "$before" | head -n 1 >"$work/first"
	is "$(cat "$work/first")" "$a" "$s: ... where it was"
done
done_testing
