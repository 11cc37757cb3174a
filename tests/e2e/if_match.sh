#!/usr/bin/env bash
# If-Match: * (RFC 9110 13.1.1) matches ANY current version.
#
# Through lighttpd and Apache: PUT and DELETE under "If-Match: *" on an
# existing ready document succeed; on a missing one they are 404, as without
# the header (13.2.1: a failure found before the precondition is evaluated
# takes precedence, so not 412).  A stale entity-tag is still 412, for a
# DELETE too (which then deletes nothing).
#
# The race that used to break "*": the responder read the version when the
# request came in and pinned the commit to it, so another replace landing
# during the upload turned "*" into a 412.  A failpoint holds request A
# (If-Match: *) after its upload while request B replaces the document; A
# must then commit (200) and its bytes win.  The same race under A's exact
# ETag must still be 412: that is what a specific If-Match is for.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
RUN=im$$x$RANDOM
auth=("${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain')
printf 'first version\n' >"$work/v1"
printf 'second version, longer\n' >"$work/v2"
printf 'from request A\n' >"$work/a"
printf 'from request B\n' >"$work/b"

# create URL NAME FILE: a ready document; prints its id.
create() {
	req POST "$1/documents?name=$2" "${auth[@]}" --data-binary "@$3"
	[ "$HTTP_CODE" = 201 ] || bail_out "create $2: $HTTP_CODE $HTTP_BODY"
	jfield "$HTTP_BODY" id
}
# content_sha URL ID: SHA-256 of the document's bytes as served.
content_sha() { curl -s -m 30 "$1/documents/$2/content" | sha; }

for server in lighttpd apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	id=$(create "$url" "$RUN-$server" "$work/v1")
	req PUT "$url/documents/$id/content" "${auth[@]}" -H 'If-Match: *' --data-binary "@$work/v2"
	is "$HTTP_CODE" 200 "$server: PUT with If-Match: * on an existing document is 200"
	is "$(content_sha "$url" "$id")" "$(sha "$work/v2")" "$server: ... and it holds the new bytes"
	req PUT "$url/documents/$id/content" "${auth[@]}" -H 'If-Match: "0-0"' --data-binary "@$work/v1"
	is "$HTTP_CODE" 412 "$server: a stale If-Match is still 412"
	req PUT "$url/documents/999999999/content" "${auth[@]}" -H 'If-Match: *' --data-binary "@$work/v1"
	is "$HTTP_CODE" 404 "$server: PUT with If-Match: * on a missing document is 404 (RFC 9110 13.2.1)"
	req GET "$url/documents/$id" "${CHAOS_AUTH[@]}"
	etag=$(header etag)
	like "$etag" '^"[0-9]+-2"$' "$server: the replaced document's ETag names version 2"
	req DELETE "$url/documents/$id" "${CHAOS_AUTH[@]}" -H 'If-Match: "0-0"'
	is "$HTTP_CODE" 412 "$server: DELETE with a stale If-Match is 412"
	is "$(content_sha "$url" "$id")" "$(sha "$work/v2")" "$server: ... and the document is still there"
	req DELETE "$url/documents/$id" "${CHAOS_AUTH[@]}" -H "If-Match: $etag"
	is "$HTTP_CODE" 204 "$server: DELETE with the current ETag is 204"
	id=$(create "$url" "$RUN-$server-2" "$work/v1")
	req DELETE "$url/documents/$id" "${CHAOS_AUTH[@]}" -H 'If-Match: *'
	is "$HTTP_CODE" 204 "$server: DELETE with If-Match: * on an existing document is 204"
	req DELETE "$url/documents/$id" "${CHAOS_AUTH[@]}" -H 'If-Match: *'
	is "$HTTP_CODE" 404 "$server: DELETE with If-Match: * once it is gone is 404"
done

# ---- the race: another replace lands while A uploads -------------------------

chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
url=$CHAOS_URL
arm() { printf '%s\n' "$1" >"$FP.tmp" && mv -f "$FP.tmp" "$FP"; }
fired() { ! grep -q "^$1 " "$FP" 2>/dev/null; }	# a "once" line is gone once it fired

# race ID IF-MATCH: request A (with IF-MATCH; "@" = the document's current
# ETag) is held after its upload while B replaces the document.  Sets
# RACE_CODE, A's status.
race() {
	local id=$1 if_match=$2 i
	if [ "$if_match" = @ ]; then
		req GET "$url/documents/$id"
		if_match=$(header etag)
	fi
	arm "replace.after_upload sleep:8000 once"	# B must finish inside it, on a loaded machine too
	( req PUT "$url/documents/$id/content" "${auth[@]}" -H "If-Match: $if_match" \
		--data-binary "@$work/a"; echo "$HTTP_CODE" >"$work/a.code" ) &
	for ((i = 0; i < 100; i++)); do fired replace.after_upload && break; sleep 0.1; done
	fired replace.after_upload || bail_out "the failpoint replace.after_upload did not fire"
	req PUT "$url/documents/$id/content" "${auth[@]}" --data-binary "@$work/b"
	[ "$HTTP_CODE" = 200 ] || bail_out "request B: $HTTP_CODE $HTTP_BODY"
	wait $!
	RACE_CODE=$(cat "$work/a.code")
}

id=$(create "$url" "$RUN-race-any" "$work/v1")
race "$id" '*'
is "$RACE_CODE" 200 "If-Match: *, another replace landed during the upload: still 200"
is "$(content_sha "$url" "$id")" "$(sha "$work/a")" "... and A, committed last, holds the bytes"

id=$(create "$url" "$RUN-race-etag" "$work/v1")
race "$id" @
is "$RACE_CODE" 412 "If-Match: <the ETag A read>, another replace landed meanwhile: 412"
is "$(content_sha "$url" "$id")" "$(sha "$work/b")" "... and B's bytes stay"

: >"$FP"
done_testing
