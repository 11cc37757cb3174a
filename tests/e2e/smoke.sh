#!/usr/bin/env bash
# The responder answers through lighttpd and Apache: GET / is the HTML page,
# an unknown route is a JSON 404.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	name=${s%%=*} url=${s#*=}

	req GET "$url/"
	is "$HTTP_CODE" 200 "$name: GET / is 200"
	like "$HTTP_CTYPE" '^text/html' "$name: GET / is HTML"
	like "$HTTP_BODY" '<html|<!DOCTYPE|<!doctype' "$name: GET / has a page"

	req GET "$url/no-such-route-$$"
	is "$HTTP_CODE" 404 "$name: unknown route is 404"
	like "$HTTP_CTYPE" '^application/json' "$name: the 404 is JSON"
	like "$HTTP_BODY" '"error" *: *"[a-z_]+"' "$name: the 404 has an error code"
	like "$HTTP_BODY" '"message" *: *"' "$name: the 404 has a message"

	req GET "$url/documents/999999999"
	is "$HTTP_CODE" 404 "$name: an unknown document is 404"
	like "$HTTP_CTYPE" '^application/json' "$name: that 404 is JSON"
done

done_testing
