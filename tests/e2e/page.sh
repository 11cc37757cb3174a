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
#   files), and the page loads it.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_BLOB_ENDPOINT
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
done_testing
