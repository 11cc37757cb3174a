#!/usr/bin/env bash
# The responder answers through lighttpd and Apache: GET / is the HTML page,
# an unknown route is a JSON 404.  And `./dev status` prints again what
# `./dev up` printed once: the stack's URLs and its demo write token.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_VAR

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

# ./dev status lists every test lane too: this one's URLs and token.
status_out=$("${top_srcdir:?}/dev" status 2>&1)
like "$status_out" "URL +$BINDERY_TEST_LIGHTTPD_URL/ +\\(lighttpd\\)" "./dev status prints this stack's lighttpd URL"
like "$status_out" "URL +$BINDERY_TEST_APACHE_URL/ +\\(Apache mod_fcgid\\)" "... its Apache URL"
like "$status_out" "write token +$BINDERY_TEST_TOKEN +\\(owner demo; in [^ ]+/secrets\\.env\\)" \
	"... and its demo write token, with the file that keeps it"
done_testing
