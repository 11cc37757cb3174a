#!/usr/bin/env bash
# The page as the server writes it, run as a CGI
# program with the test stack's configuration and a copy with
# [upload] direct = true:
# - direct off: the page's CSP is exactly the usual one (connect-src falls
#   back to default-src 'self') and <body data-direct="0">;
# - direct on: the CSP's connect-src names 'self' and the storage
#   endpoint's origin (scheme, host and port, no path) and nothing else
#   changes; <body data-direct="1">;
# - GET /page.js is app/page.js byte for byte (compared by SHA-256 of the
#   files), and the page loads it; GET /favicon.ico is app/favicon.ico,
#   an icon, cached, and the page links it.
# Then the page without a browser, through each web server with curl:
# - the no-JavaScript form: its Token field has a name and comes before
#   the name and the file; posted with the token before the file it is 303
#   to /?created=ID, where that row is highlighted and named in escaped
#   words; with the token after the file, a wrong one or none, or from
#   another site, it is 303 to /?error=CODE and nothing is stored (no row,
#   not even a pending one); an API client (no Accept: text/html) hears
#   the same as JSON 401/403;
# - ?error= shows the page's own words, never the query's text; the page
#   tells its script whether the web server authenticated the reader;
# - the list is newest first, oldest first by ?order=oldest, with the
#   count of ready documents under the filter, and the keyset cursor pages
#   in the chosen direction (the API's ?order= too).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_LIGHTTPD_URL \
	BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET BINDERY_TEST_WEBAUTH
page_work=$(mktemp -d)
trap 'rm -rf "$page_work"' EXIT
csp_base="default-src 'self'; script-src 'nonce-N'; style-src 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
# The endpoint is http://127.0.0.1:PORT/devstoreaccount1: its origin drops the path.
storage_origin=$(printf '%s' "$BINDERY_TEST_BLOB_ENDPOINT" | sed -E 's#^(https?://[^/]+).*#\1#')
like "$storage_origin" '^http://127\.0\.0\.1:[0-9]+$' "the storage origin is worked out ($storage_origin)"
# Both settings from the stack's configuration, whichever it has.
grep -Eq '^direct = (true|false)$' "$BINDERY_CONFIG" || bail_out "the test configuration has no 'direct =' line"
sed -E 's/^direct = (true|false)$/direct = false/' "$BINDERY_CONFIG" >"$page_work/off.conf"
sed -E 's/^direct = (true|false)$/direct = true/' "$BINDERY_CONFIG" >"$page_work/direct.conf"

# The page's nonce is fresh each time: N stands for it.
csp_of() { tr -d '\r' <"$1" | sed -n '1,/^$/s/^Content-Security-Policy: //p' | sed -E "s/'nonce-[0-9a-f]{32}'/'nonce-N'/"; }

cgi_run "$page_work/off.http" "$page_work/off.conf" GET /
is "$CGI_CODE" 200 "direct off: the page is 200"
is "$(csp_of "$page_work/off.http")" "$csp_base" "direct off: the usual CSP, no connect-src of its own"
like "$(cgi_body "$page_work/off.http")" '<body data-direct="0"' "direct off: the page says so to its script"

cgi_run "$page_work/on.http" "$page_work/direct.conf" GET /
is "$CGI_CODE" 200 "direct on: the page is 200"
is "$(csp_of "$page_work/on.http")" "$csp_base; connect-src 'self' $storage_origin" \
	"direct on: connect-src allows the page itself and the storage origin"
like "$(cgi_body "$page_work/on.http")" '<body data-direct="1"' "direct on: the page says so to its script"
like "$(cgi_body "$page_work/on.http")" '<script nonce="[0-9a-f]{32}" src="/page\.js"></script>' "the page loads /page.js"
! grep -q '<script>' "$page_work/on.http"
ok $? "and has no inline script"

cgi_run "$page_work/js.http" "$BINDERY_CONFIG" GET /page.js
is "$CGI_CODE" 200 "GET /page.js is 200"
tr -d '\r' <"$page_work/js.http" | sed -n '1,/^$/p' >"$page_work/js.head"
tail -c "+$(($(wc -c <"$page_work/js.head") + $(grep -c '' "$page_work/js.head") + 1))" "$page_work/js.http" \
	>"$page_work/page.js"
is "$(sha "$page_work/page.js")" "$(sha "$top/app/page.js")" "GET /page.js is app/page.js byte for byte"

u=$BINDERY_TEST_LIGHTTPD_URL
curl -s -D "$page_work/ico.head" -o "$page_work/ico" "$u/favicon.ico"
ico_head=$(tr -d '\r' <"$page_work/ico.head" | tr 'A-Z' 'a-z')
like "$ico_head" $'^http/1\\.1 200.*\ncontent-type: image/vnd\\.microsoft\\.icon' "GET /favicon.ico is 200, an icon"
like "$ico_head" $'\ncache-control: public, max-age=[0-9]+' "... which browsers may cache"
is "$(sha "$page_work/ico")" "$(sha "$top/app/favicon.ico")" "... app/favicon.ico byte for byte"
is "$(od -An -tx1 -N4 "$page_work/ico" | tr -d ' ')" 00000100 "... an ICO file (its header)"
like "$(cgi_body "$page_work/off.http")" '<link rel="icon" href="/favicon\.ico">' "the page links its icon"

# The form without JavaScript: the token field is named, and the fields
# come in the order the create needs (token and name before the file).
form=$(cgi_body "$page_work/off.http" | tr -d '\n' | sed -E 's#.*(<form id="up".*</form>).*#\1#; s#</form>.*##')
like "$form" '<input id="token" name="token" type="password"' "the Token field has a name: the form sends it"
like "$form" 'name="token".*name="name".*name="file"' "... before the name, and both before the file"

printf 'sent by a form without script\n' >"$page_work/form.txt"
run=page-$$-$RANDOM
sql_session
# How many rows, pending or ready, carry a name: 0 means nothing was stored.
rows_named() { sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"; }
for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	req POST "$url/documents" -H 'Accept: text/html,application/xhtml+xml' -F "token=$BINDERY_TEST_TOKEN" \
		-F "name=$run-$srv-ok.txt" -F "file=@$page_work/form.txt"
	loc=$(header location)
	like "$HTTP_CODE $loc" '^303 /\?created=[0-9]+$' "$srv: the form with the token before the file: 303 to the page naming the new document"
	id=${loc##*=}
	req GET "$url/documents?name=$(urlenc "$run-$srv-ok.txt")"
	is "$(jfield "$HTTP_BODY" id)" "$id" "$srv: ... which is there, ready, with that id"
	req GET "$url$loc"
	like "$HTTP_BODY" "<tr data-id=\"$id\" class=\"new\"" "$srv: the page it lands on highlights that row"
	has "$HTTP_BODY" "Uploaded “$run-$srv-ok.txt”." "$srv: ... and says what was uploaded"

	req POST "$url/documents" -H 'Accept: text/html' -F "name=$run-$srv-late.txt" \
		-F "file=@$page_work/form.txt" -F "token=$BINDERY_TEST_TOKEN"
	is "$HTTP_CODE $(header location)" "303 /?error=unauthorized" \
		"$srv: the token after the file: refused, 303 to the page with the error"
	is "$(rows_named "$run-$srv-late.txt")" 0 "$srv: ... and nothing was stored, not even a pending row"
done

req POST "$u/documents" -H 'Accept: text/html' -F "token=not-$BINDERY_TEST_TOKEN" -F "name=$run-wrong.txt" \
	-F "file=@$page_work/form.txt"
is "$HTTP_CODE $(header location) $(rows_named "$run-wrong.txt")" "303 /?error=unauthorized 0" \
	"a wrong token before the file: 303 with the error, nothing stored"
req POST "$u/documents" -H 'Accept: text/html' -F "name=$run-none.txt" -F "file=@$page_work/form.txt"
is "$HTTP_CODE $(header location) $(rows_named "$run-none.txt")" "303 /?error=unauthorized 0" \
	"no token at all: the same"
req POST "$u/documents" -F "name=$run-api.txt" -F "file=@$page_work/form.txt" -F "token=$BINDERY_TEST_TOKEN"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error) $(rows_named "$run-api.txt")" "401 unauthorized 0" \
	"an API client (no Accept: text/html), token after the file: JSON 401 as before, nothing stored"
like "$(header www-authenticate)" '^Bearer realm="bindery"' "... with the Bearer challenge"
req POST "$u/documents" -F "token=nope" -F "name=$run-api2.txt" -F "file=@$page_work/form.txt"
is "$HTTP_CODE $(header www-authenticate)" '401 Bearer realm="bindery", error="invalid_token"' \
	"an API client's wrong form token is invalid_token, as a wrong bearer token is"
req POST "$u/documents" -H 'Accept: text/html' -H 'Origin: http://evil.example' -H 'Sec-Fetch-Site: cross-site' \
	-F "token=$BINDERY_TEST_TOKEN" -F "name=$run-csrf.txt" -F "file=@$page_work/form.txt"
is "$HTTP_CODE $(header location) $(rows_named "$run-csrf.txt")" "303 /?error=forbidden 0" \
	"another site's form, even with the right token: refused (CSRF), nothing stored"
req POST "$u/documents" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" -F "token=nope" \
	-F "name=$run-hdr.txt" -F "file=@$page_work/form.txt"
is "$HTTP_CODE $(rows_named "$run-hdr.txt")" "201 1" "with a bearer header the form's token field plays no part"

req GET "$u/?prefix=$run"
like "$HTTP_BODY" '<body [^>]*data-auth="0"' "an anonymous reader's page: the server knows no caller (data-auth=\"0\")"
req GET "$u/?prefix=$run" -u "$BINDERY_TEST_WEBAUTH"
like "$HTTP_BODY" '<body [^>]*data-auth="1"' "signed in by the web server: data-auth=\"1\", the script offers Replace and Delete"
req GET "$u/?error=unauthorized&prefix=$run"
has "$HTTP_BODY" '<span class="err">The upload did not start: the token is missing or not valid.' \
	"?error=unauthorized: the page says so in its own words"
req GET "$u/?error=%3Cb%3Eboo&prefix=$run"
unlike "$HTTP_BODY" 'boo' "?error= with markup: nothing of it is shown"
req GET "$u/?error=made_up&prefix=$run"
has "$HTTP_BODY" '<span class="err">The upload did not go through. Try again.</span>' "?error= unknown: a plain general line"
req GET "$u/?created=99999999999&prefix=$run"
is "$HTTP_CODE" 200 "?created= of no document: the page all the same"

# Newest first, the count, the sort and the keyset cursor.
for n in 1 2 3; do
	req POST "$u/documents?name=$run-order-$n" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		-H 'Content-Type: text/plain' --data-binary "@$page_work/form.txt"
done
names() { grep -o "$run-order-[0-9]" <<<"$1" | uniq | tr '\n' ' '; }
req GET "$u/?prefix=$run-order-"
is "$(names "$HTTP_BODY")" "$run-order-3 $run-order-2 $run-order-1 " "the page lists newest first"
has "$HTTP_BODY" "<span id=\"count\">3 documents whose names start with “$run-order-”</span>" \
	"... and says how many there are under the filter"
has "$HTTP_BODY" "<strong aria-current=\"true\">Newest first</strong> <a href=\"/?order=oldest&amp;prefix=$run-order-\">Oldest first</a>" \
	"... with a link to the other order that keeps the filter"
req GET "$u/?order=oldest&prefix=$run-order-"
is "$(names "$HTTP_BODY")" "$run-order-1 $run-order-2 $run-order-3 " "?order=oldest: the other way round"
req GET "$u/?prefix=$run-order-&limit=2"
next=$(grep -o '<a id="next" rel="next" href="[^"]*"' <<<"$HTTP_BODY" | sed -e 's/.*href="//' -e 's/"$//' -e 's/&amp;/\&/g')
like "$next" "^/\\?after=[0-9]+&prefix=$run-order-&limit=2\$" "newest first, page 1 of 2 links the next ($next)"
req POST "$u/documents?name=$run-order-4" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Content-Type: text/plain' --data-binary "@$page_work/form.txt"
req GET "$u$next"
is "$(names "$HTTP_BODY")" "$run-order-1 " "a document uploaded meanwhile neither shifts nor repeats page 2"
req GET "$u/documents?prefix=$run-order-&order=newest&limit=3"
is "$(grep -o "$run-order-[0-9]" <<<"$HTTP_BODY" | tr '\n' ' ')" "$run-order-4 $run-order-3 $run-order-2 " \
	"the API lists newest first with ?order=newest"
req GET "$u/documents?prefix=$run-order-&order=newest&limit=3&after=$(jfield "$HTTP_BODY" next)"
is "$(grep -o "$run-order-[0-9]" <<<"$HTTP_BODY" | tr '\n' ' ')" "$run-order-1 " "... and its next cursor goes on downwards"
req GET "$u/documents?prefix=$run-order-&limit=2"
is "$(grep -o "$run-order-[0-9]" <<<"$HTTP_BODY" | tr '\n' ' ')" "$run-order-1 $run-order-2 " "without order= the API is oldest first, as before"
req GET "$u/documents?order=sideways"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_order" "?order= neither oldest nor newest is 400 bad_order"

# This run's documents go again.
while read -r id; do
	curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $BINDERY_TEST_TOKEN" "$u/documents/$id"
done < <(sql "SELECT id FROM documents WHERE name LIKE $(sql_quote "$run-%") AND status = 'ready'")
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE $(sql_quote "$run-%")")" 0 "this run's documents are deleted again"
done_testing
