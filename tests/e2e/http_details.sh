#!/usr/bin/env bash
# HTTP details a client relies on, through lighttpd, Apache mod_fcgid and
# Apache mod_proxy_fcgi with the pool (a web server could change each):
#   - 401's challenge (RFC 6750 3.1): no credentials, or another scheme, get
#     the bare `Bearer realm="bindery"`; a Bearer token bindery does not
#     know gets `error="invalid_token"` too, for writes and for a read of
#     the page that needs no caller it is still served (reads are public);
#   - If-None-Match on GET and HEAD /documents/{id}/content (RFC 9110
#     13.1.2): the current ETag, its W/ form, a list holding it or "*" is
#     304 with the ETag and no body, even beside a Range; a stale tag or a
#     malformed header is the 200 with the bytes;
#   - an Idempotency-Key retry answered from the record carries
#     `Idempotent-Replayed: true`; the first answer does not.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL \
	BINDERY_TEST_TOKEN

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
text=(-H 'Content-Type: text/plain')
printf 'http details %s\n' "$$" >"$work/small.txt"
printf 'other bytes %s\n' "$$" >"$work/other.txt"

# get_content URL ID [CURL-ARGS...]: GET (or, with -I, HEAD) of the content,
# body in $work/body; sets CODE and HEAD (the headers, CR removed).
get_content() {
	local url=$1 id=$2
	shift 2
	# curl makes no output file for an answer without a body
	: >"$work/body"
	if [ "${1:-}" = -I ]; then
		CODE=$(curl -s -m 30 -I -o "$work/head" -w '%{http_code}' "${@:2}" "$url/documents/$id/content")
	else
		CODE=$(curl -s -m 30 -D "$work/head" -o "$work/body" -w '%{http_code}' "$@" \
			"$url/documents/$id/content")
	fi
	HEAD=$(tr -d '\r' <"$work/head")
}
# head_of NAME: that header of the last get_content.
head_of() { printf '%s\n' "$HEAD" | sed -n "s/^$1: *//Ip" | tail -n 1; }

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL" \
	"pool=$BINDERY_TEST_APACHE_POOL_URL"; do
	srv=${s%%=*} url=${s#*=}
	tag=hd-$srv-$$-$RANDOM

	# --- 401's challenge ---
	req POST "$url/documents?name=$tag-none" "${text[@]}" --data-binary "@$work/small.txt"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "401 unauthorized" "$srv: a write without credentials is 401"
	is "$(header www-authenticate)" 'Bearer realm="bindery"' "$srv: ... with the bare Bearer challenge"
	req POST "$url/documents?name=$tag-wrong" -H 'Authorization: Bearer not-a-token-bindery-knows' \
		"${text[@]}" --data-binary "@$work/small.txt"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "401 unauthorized" "$srv: a write with an unknown token is 401"
	is "$(header www-authenticate)" 'Bearer realm="bindery", error="invalid_token"' \
		"$srv: ... with error=\"invalid_token\" (RFC 6750 3.1)"
	req DELETE "$url/documents/1" -H 'Authorization: bearer =malformed='
	is "$HTTP_CODE $(header www-authenticate)" '401 Bearer realm="bindery", error="invalid_token"' \
		"$srv: a malformed Bearer credential is invalid_token too"
	req POST "$url/uploads" -H 'Authorization: Bearer not-a-token-bindery-knows' -H 'Tus-Resumable: 1.0.0' \
		-H 'Upload-Length: 1' -H 'Content-Length: 0' -H "Upload-Metadata: filename $(printf x | base64)"
	is "$HTTP_CODE $(header www-authenticate)" '401 Bearer realm="bindery", error="invalid_token"' \
		"$srv: tus: an unknown token is invalid_token"
	req GET "$url/documents?limit=1" -H 'Authorization: Bearer not-a-token-bindery-knows'
	is "$HTTP_CODE" 200 "$srv: a public read with an unknown token is still served"

	# --- If-None-Match ---
	req POST "$url/documents?name=$tag-inm" "${auth[@]}" "${text[@]}" --data-binary "@$work/small.txt"
	is "$HTTP_CODE" 201 "$srv: a document to read"
	id=$(jfield "$HTTP_BODY" id)
	etag=$(header etag)
	like "$etag" '^"[0-9]+-[0-9]+"$' "$srv: its ETag is $etag"
	get_content "$url" "$id" -H "If-None-Match: $etag"
	is "$CODE" 304 "$srv: GET with If-None-Match: the current ETag is 304"
	is "$(head_of etag)" "$etag" "$srv: ... with the ETag"
	is "$(stat -c %s "$work/body")" 0 "$srv: ... and no body"
	get_content "$url" "$id" -H "If-None-Match: W/$etag"
	is "$CODE $(head_of etag)" "304 $etag" "$srv: its weak form matches too (weak comparison)"
	get_content "$url" "$id" -H "If-None-Match: \"0-0\", $etag"
	is "$CODE" 304 "$srv: a list holding it matches"
	get_content "$url" "$id" -H 'If-None-Match: *'
	is "$CODE" 304 "$srv: * matches"
	get_content "$url" "$id" -H "If-None-Match: $etag" -H 'Range: bytes=0-3'
	is "$CODE" 304 "$srv: 304 comes before a Range"
	get_content "$url" "$id" -I -H "If-None-Match: $etag"
	is "$CODE $(head_of etag)" "304 $etag" "$srv: HEAD with the current ETag is 304 with the ETag"
	get_content "$url" "$id" -H 'If-None-Match: "0-0"'
	is "$CODE" 200 "$srv: a stale ETag is 200"
	ok 'cmp -s "$work/body" "$work/small.txt"' "$srv: ... with the bytes"
	get_content "$url" "$id" -H 'If-None-Match: not-a-tag'
	is "$CODE" 200 "$srv: a malformed If-None-Match is ignored (200)"
	ok 'cmp -s "$work/body" "$work/small.txt"' "$srv: ... with the bytes"
	req PUT "$url/documents/$id/content" "${auth[@]}" "${text[@]}" --data-binary "@$work/other.txt"
	is "$HTTP_CODE" 200 "$srv: the document is replaced"
	get_content "$url" "$id" -H "If-None-Match: $etag"
	is "$CODE" 200 "$srv: the old ETag no longer matches: 200"
	ok 'cmp -s "$work/body" "$work/other.txt"' "$srv: ... with the new bytes"

	# --- a replayed answer says so ---
	key=hd-key-$tag
	req POST "$url/documents?name=$tag-idem" "${auth[@]}" "${text[@]}" -H "Idempotency-Key: $key" \
		--data-binary "@$work/small.txt"
	is "$HTTP_CODE $(header idempotent-replayed)" "201 " "$srv: the first answer is 201, not marked replayed"
	first=$(jfield "$HTTP_BODY" id)
	req POST "$url/documents?name=$tag-idem" "${auth[@]}" "${text[@]}" -H "Idempotency-Key: $key" \
		--data-binary "@$work/small.txt"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" id)" "201 $first" "$srv: the retry answers the same document"
	is "$(header idempotent-replayed)" true "$srv: ... with Idempotent-Replayed: true"
done

done_testing
