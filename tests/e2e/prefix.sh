#!/usr/bin/env bash
# The app mounted under a path prefix: every URL the responder
# hands out carries the prefix the web server mounts it at (SCRIPT_NAME),
# and a root mount is unchanged.
#
# A private lighttpd (FastCGI, conf/lighttpd.conf with var.bindery_mount =
# "/docs"), a private Apache mod_fcgid (conf/apache-fcgid.conf with its
# documented "Alias /bindery .../bindery.fcgi") and a private pool
# (bindery.fcgi --listen) behind Apache mod_proxy_fcgi
# (conf/apache-proxy-fcgi.conf with its documented /bindery lines in place of
# the root's), all in front of the test stack's MariaDB and Azurite with
# direct uploads on.  On each:
#   - POST {P}/documents: 201, Location {P}/documents/N, which GET answers;
#   - a browser form post (Accept: text/html): 303 to {P}/?created=ID;
#   - the page at {P}/ and {P}: its form action, download links, search
#     form, script and data-prefix all under {P}; {P}/page.js is served;
#   - tus: POST {P}/uploads, Location {P}/uploads/ID, the final PATCH's
#     Location {P}/documents/N, and HEAD's;
#   - name_taken for a name the caller's tus upload holds: "upload" is
#     {P}/uploads/ID; a direct upload's: {P}/documents/N/finalize;
#   - direct: Location {P}/documents/N and finalize_url
#     {P}/documents/N/finalize, which routes (409 not_uploaded before the PUT);
#   - a path outside the prefix is 404 and reaches no document.
# Then the responder as a CGI program (as mod_cgid runs it): SCRIPT_NAME
# /bindery gives the same URLs, a SCRIPT_NAME that is no safe path is never
# echoed into a URL (404, logged), and the stack's root-mounted lighttpd
# still answers /documents/N.  About 5 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"

need_stack BINDERY_TEST_TOKEN BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_VAR BINDERY_TEST_LIGHTTPD_URL
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "$BINDERY_TEST_BIN/bindery.fcgi was not built"
[ "$(id -u)" = 0 ] || missing "Apache's User www-data needs root to start"
[ -f /usr/lib/apache2/modules/mod_fcgid.so ] || missing "apache2 with mod_fcgid is not installed"
command -v jq >/dev/null || missing "jq"

work=$(mktemp -d)
cleanup() {
	stack_private_lighttpd_stop
	stack_private_apache_stop
	stack_private_pool_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
tus=(-H 'Tus-Resumable: 1.0.0')
b64() { printf '%s' "$1" | base64 -w0; }
run="prefix-$$-$RANDOM"
printf 'prefix test body\n' >"$work/body"
printf 'abcde' >"$work/five"

# The stack's configuration with direct uploads on.
sed -e 's/^direct = .*/direct = true/' "$BINDERY_CONFIG" >"$work/bindery.conf"
is "$(grep -c '^direct = true$' "$work/bindery.conf")" 1 "the private responders' config has direct = true"

# ---- the servers ----
stack_private_lighttpd "$BINDERY_TEST_VAR/prefix-lighttpd" lighttpd.conf "$work/bindery.conf" \
	"$BINDERY_TEST_BIN" 18800 /docs || bail_out "lighttpd at /docs did not start"
is "$(grep -c '^var\.bindery_mount = "/docs"$' "$STACK_VAR/lighttpd.conf")" 1 \
	"lighttpd: conf/lighttpd.conf with var.bindery_mount = \"/docs\""
lighttpd_url=http://127.0.0.1:$HTTP_PORT

STACK_AVOID_PORTS=${lighttpd_url##*:}
stack_private_apache "$BINDERY_TEST_VAR/prefix-apache" "$work/bindery.conf" 18820 apache-prefix ||
	bail_out "cannot make a private Apache ready"
conf=$STACK_PRIVATE_APACHE_CONF www=$STACK_PRIVATE_APACHE_WWW
# The sample's commented prefix example, applied: its Alias line replaced.
is "$(grep -c "^Alias / $www/bin/bindery.fcgi/\$" "$conf") $(grep -c "^#     Alias /bindery @BINDIR@/bindery.fcgi\$" \
	"$here/../../conf/apache-fcgid.conf")" "1 1" "apache: conf/apache-fcgid.conf has its root Alias and the prefix example"
sed -i -e "s|^Alias / $www/bin/bindery.fcgi/\$|Alias /bindery $www/bin/bindery.fcgi|" "$conf"
is "$(grep -c "^Alias /bindery $www/bin/bindery.fcgi\$" "$conf")" 1 "apache: ... mounted at /bindery instead"
stack_apache_start "$conf" || bail_out "Apache at /bindery did not start (log in $STACK_LOG)"
apache_url=http://127.0.0.1:$APACHE_PORT

STACK_AVOID_PORTS="${lighttpd_url##*:} ${apache_url##*:}"
stack_private_pool "$BINDERY_TEST_VAR/prefix-pool" "$work/bindery.conf" 2 18840 ||
	bail_out "cannot start a private pool"
conf=$STACK_PRIVATE_POOL_CONF
# The sample's commented prefix lines, uncommented, in place of its root
# ProxyPass line and <Location "/"> block.
sed -n '/^#     ProxyPass "\/bindery"/,/^#     <\/Location>$/s/^#     //p' "$conf" >"$work/pool-prefix"
is "$(grep -c '^ProxyPass "/bindery" "unix:.*|fcgi://localhost/bindery" max=2$' "$work/pool-prefix") $(grep -c \
	'SCRIPT_NAME "/bindery"$' "$work/pool-prefix")" "1 1" \
	"apache-pool: conf/apache-proxy-fcgi.conf documents the /bindery lines"
awk -v f="$work/pool-prefix" '
	/^ProxyPass "\/" / { while ((getline l < f) > 0) print l; skip = 0; next }
	/^<Location "\/">$/ { skip = 1; next }
	skip && /^<\/Location>$/ { skip = 0; next }
	!skip { print }' "$conf" >"$conf.new" && mv -f "$conf.new" "$conf"
mounted="$(grep -c '^ProxyPass "/' "$conf") $(grep -c '^ProxyPass "/bindery" ' "$conf")"
mounted+=" $(grep -c '^<Location "/">' "$conf") $(grep -c '^ *ProxyFCGISetEnvIf "true" SCRIPT_NAME "/bindery"$' "$conf")"
is "$mounted" "1 1 0 1" "apache-pool: ... mounted at /bindery instead of /"
stack_apache_start "$conf" apache-pool "$APACHE_POOL_PORT" ||
	bail_out "Apache mod_proxy_fcgi at /bindery did not start (log in $STACK_LOG)"
pool_url=http://127.0.0.1:$APACHE_POOL_PORT

# ---- the checks, on each server ----
# check_mount NAME BASE P: the URLs of a responder mounted at BASE + P.
check_mount() {
	local s=$1 base=$2 p=$3 id loc up up2 doc page fin
	local name="$run-$s"

	# create, and its Location
	req POST "$base$p/documents?name=$name-a" "${auth[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body"
	loc=$(header location)
	id=$(jfield "$HTTP_BODY" id)
	is "$HTTP_CODE $loc" "201 $p/documents/$id" "$s: POST $p/documents is 201 with Location $p/documents/N"
	req GET "$base$loc"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" id)" "200 $id" "$s: GET of that Location is the document"
	req GET "$base$loc/content"
	is "$HTTP_CODE $HTTP_BODY" "200 prefix test body" "$s: ... and its content"

	# a browser's form post lands back on the page under the prefix
	req POST "$base$p/documents" "${auth[@]}" -H 'Accept: text/html' -F "name=$name-form" \
		-F "file=@$work/body;filename=x.txt"
	like "$HTTP_CODE $(header location)" "^303 $p/\\?created=[0-9]+\$" "$s: a form post (Accept: text/html) is 303 to $p/?created=ID"

	# the page, filtered to this run's names (earlier tests' documents
	# would push ours off its first page)
	req GET "$base$p/?prefix=$name"
	page=$HTTP_BODY
	is "$HTTP_CODE" 200 "$s: GET $p/?prefix=... is the page"
	like "$page" "<body data-[^>]* data-prefix=\"$p\">" "$s: ... whose <body> says data-prefix=\"$p\" for the script"
	like "$page" "<form id=\"up\" method=\"post\" action=\"$p/documents\" " "$s: ... the upload form posts to $p/documents"
	like "$page" "<a class=\"dl\" href=\"$p/documents/$id/content\">" "$s: ... the name links to $p/documents/N/content"
	like "$page" "<a href=\"$p/documents/$id/content\" download>" "$s: ... and so does Download"
	like "$page" "<form method=\"get\" action=\"$p/\" role=\"search\">" "$s: ... the filter form gets $p/"
	like "$page" "<a href=\"$p/\">All documents</a>" "$s: ... All documents is $p/"
	like "$page" "<script nonce=\"[0-9a-f]{32}\" src=\"$p/page.js\"></script>" "$s: ... the script is $p/page.js"
	is "$(printf '%s' "$page" | grep -oE '(href|action|src)="[^"]*"' | grep -vc "=\"$p/")" 0 \
		"$s: ... and no link, action or script of the page leaves $p/"
	req GET "$base$p/?limit=1"
	like "$HTTP_BODY" "<a id=\"next\" rel=\"next\" href=\"$p/\\?after=[0-9]+&amp;limit=1\">" \
		"$s: ... its next-page link is under $p/"
	req GET "$base$p"
	is "$HTTP_CODE $(printf '%s' "$HTTP_BODY" | grep -c "<body data-[^>]* data-prefix=\"$p\">")" "200 1" \
		"$s: GET $p (no slash) is the page too"
	req GET "$base$p/page.js"
	like "$HTTP_CODE $HTTP_CTYPE" '^200 text/javascript' "$s: GET $p/page.js is the script"

	# tus: the upload's Location, the final PATCH's and HEAD's
	req POST "$base$p/uploads" "${auth[@]}" "${tus[@]}" -H 'Content-Length: 0' -H 'Upload-Length: 5' \
		-H "Upload-Metadata: filename $(b64 "$name-tus")"
	up=$(header location)
	like "$HTTP_CODE $up" "^201 $p/uploads/[0-9a-f]{32}\$" "$s: POST $p/uploads is 201 with Location $p/uploads/ID"
	req PATCH "$base$up" "${auth[@]}" "${tus[@]}" -H 'Content-Type: application/offset+octet-stream' \
		-H 'Upload-Offset: 0' --data-binary "@$work/five"
	doc=$(header location)
	like "$HTTP_CODE $doc" "^204 $p/documents/[0-9]+\$" "$s: the final PATCH is 204 with Location $p/documents/N"
	req GET "$base$doc/content"
	is "$HTTP_CODE $HTTP_BODY" "200 abcde" "$s: ... which is the uploaded document"
	req HEAD "$base$up" "${auth[@]}" "${tus[@]}"
	is "$HTTP_CODE $(header location)" "204 $doc" "$s: HEAD of the finished upload names it the same way"

	# name_taken names the caller's pending upload under the prefix
	req POST "$base$p/uploads" "${auth[@]}" "${tus[@]}" -H 'Content-Length: 0' -H 'Upload-Length: 10' \
		-H "Upload-Metadata: filename $(b64 "$name-held")"
	up2=$(header location)
	like "$HTTP_CODE $up2" "^201 $p/uploads/" "$s: a second tus upload, left pending"
	req POST "$base$p/documents?name=$name-held" "${auth[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error) $(jfield "$HTTP_BODY" upload)" "409 name_taken $up2" \
		"$s: a create of its name is 409 name_taken with upload $p/uploads/ID"
	req DELETE "$base$up2" "${auth[@]}" "${tus[@]}"
	is "$HTTP_CODE" 204 "$s: ... and DELETE of that URL ends the upload"

	# direct uploads
	jq -cn --arg n "$name-direct" '{name: $n, size: 5, content_type: "text/plain"}' >"$work/direct.json"
	req POST "$base$p/documents/direct" "${auth[@]}" -H 'Content-Type: application/json' \
		--data-binary "@$work/direct.json"
	id=$(printf '%s' "$HTTP_BODY" | jq -r '.id // empty' 2>/dev/null)
	fin=$(printf '%s' "$HTTP_BODY" | jq -r '.finalize_url // empty' 2>/dev/null)
	is "$HTTP_CODE $(header location) $fin" "201 $p/documents/$id $p/documents/$id/finalize" \
		"$s: POST $p/documents/direct: Location and finalize_url under $p"
	req POST "$base$p/documents/direct" "${auth[@]}" -H 'Content-Type: application/json' \
		--data-binary "@$work/direct.json"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" upload)" "409 $fin" \
		"$s: ... the same name again: 409 whose upload is that finalize_url"
	req POST "$base$fin" "${auth[@]}" -H 'Content-Length: 0'
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 not_uploaded" \
		"$s: ... which routes: finalize before the PUT is 409 not_uploaded"

	# outside the prefix
	req GET "$base/documents/$id"
	is "$HTTP_CODE" 404 "$s: GET /documents/N outside $p is 404"
	req GET "$base${p}x/documents/$id"
	is "$HTTP_CODE" 404 "$s: GET ${p}x/documents/N is 404"
	req POST "$base/documents?name=$name-outside" "${auth[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body"
	req GET "$base$p/documents?name=$name-outside"
	is "$(printf '%s' "$HTTP_BODY" | jq '.documents | length' 2>/dev/null)" 0 \
		"$s: ... and a POST /documents there stores nothing"
}

check_mount lighttpd "$lighttpd_url" /docs
check_mount apache "$apache_url" /bindery
check_mount apache-pool "$pool_url" /bindery

# ---- CGI (mod_cgid passes SCRIPT_NAME the same way) ----
cgi_run "$work/cgi.out" "$work/bindery.conf" POST "/bindery/documents?name=$run-cgi" \
	SCRIPT_NAME=/bindery PATH_INFO=/documents HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	CONTENT_TYPE=text/plain CONTENT_LENGTH="$(stat -c %s "$work/body")" <"$work/body"
id=$(jfield "$(cgi_body "$work/cgi.out")" id)
is "$CGI_CODE $(tr -d '\r' <"$work/cgi.out" | sed -n '1,/^$/s/^Location: //p')" "201 /bindery/documents/$id" \
	"cgi: SCRIPT_NAME=/bindery: 201 with Location /bindery/documents/N"
CGI_STDERR=$work/cgi.err cgi_run "$work/cgi.out" "$work/bindery.conf" GET "/a<b>/documents/$id" \
	SCRIPT_NAME='/a<b>' PATH_INFO="/documents/$id"
is "$CGI_CODE $(grep -c 'SCRIPT_NAME .* is not a safe path' "$work/cgi.err")" "404 1" \
	"cgi: a SCRIPT_NAME that is no safe path is not stripped (404) and is logged"
cgi_run "$work/cgi.out" "$work/bindery.conf" GET "/documents/$id" SCRIPT_NAME=/bindery PATH_INFO="/documents/$id"
is "$CGI_CODE" 200 "cgi: a SCRIPT_NAME the path does not start with (a rewrite in front) routes the path as it is"
cgi_run "$work/cgi.out" "$work/bindery.conf" GET "/" SCRIPT_NAME=/bindery PATH_INFO=/
like "$(cgi_body "$work/cgi.out")" '<body data-[^>]* data-prefix="">' "... and hands out root URLs, as the client sees the app"

# ---- the root mount is unchanged ----
req POST "$BINDERY_TEST_LIGHTTPD_URL/documents?name=$run-root" "${auth[@]}" -H 'Content-Type: text/plain' \
	--data-binary "@$work/body"
id=$(jfield "$HTTP_BODY" id)
is "$HTTP_CODE $(header location)" "201 /documents/$id" "root mount: Location /documents/N as before"
req GET "$BINDERY_TEST_LIGHTTPD_URL/"
like "$HTTP_BODY" '<body data-[^>]* data-prefix="">' "root mount: the page's data-prefix is empty"
like "$HTTP_BODY" '<form id="up" method="post" action="/documents" ' "root mount: ... its form posts to /documents"

done_testing
