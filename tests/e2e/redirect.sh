#!/usr/bin/env bash
# [download] mode = redirect: GET /documents/{id}/content answers 302 to a
# short-lived, read-only SAS URL that the storage service honours, and
# refuses once tampered with.  The SAS carries the same Content-Disposition
# as a proxied download (rscd) and the type a proxied download has (rsct:
# application/octet-stream for this text/html document, an active type),
# and the storage service answers with them (doc/design.md,
# "Serving user content").
# Runs the responder in CGI mode with a copy of the test configuration
# switched to redirect.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e 's/^mode = .*/mode = redirect/' -e 's/^sas_lifetime = .*/sas_lifetime = 120/' "$BINDERY_CONFIG" >"$work/conf"
grep -q '^mode = redirect' "$work/conf" || printf '[download]\nmode = redirect\nsas_lifetime = 120\n' >>"$work/conf"
chmod 600 "$work/conf"

# url_param URL NAME: the percent-decoded value of query parameter NAME.
url_param() {
	local v
	v=$(printf '%s' "$1" | sed -n "s/.*[?&]$2=\([^&]*\).*/\1/p")
	printf '%b' "${v//%/\\x}"
}

head -c 100000 /dev/urandom >"$work/doc"
# An HTML type and a name with non-ASCII bytes, a space and a quote:
# redirect-N r<U+00E9>sum<U+00E9> "x".html
tag="redirect-$$-$RANDOM"
out=$(cgi_req "$work/conf" POST "/documents?name=$tag%20r%C3%A9sum%C3%A9%20%22x%22.html" \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" CONTENT_TYPE=text/html CONTENT_LENGTH=100000 <"$work/doc")
like "$out" '^Status: 201' "created through the redirect-mode responder"
id=$(jfield "$out" id)
out=$(cgi_req "$work/conf" GET "/documents/$id/content" </dev/null)
like "$out" '^Status: 302' "content answers 302"
loc=$(printf '%s\n' "$out" | sed -n 's/^Location: //p')
like "$loc" '^https?://.*sp=r(&|$)' "... to a read-only SAS URL"
like "$loc" 'se=[0-9]{4}-[0-9]{2}-[0-9]{2}T' "... with an expiry"
want_cd="attachment; filename=\"$tag r_sum_ _x_.html\"; filename*=UTF-8''$tag%20r%C3%A9sum%C3%A9%20%22x%22.html"
is "$(url_param "$loc" rscd)" "$want_cd" "the SAS sets the download's Content-Disposition (rscd)"
is "$(url_param "$loc" rsct)" "application/octet-stream" \
	"the SAS sets the served Content-Type (rsct): octet-stream for an HTML document"
code=$(curl -s -D "$work/h" -o "$work/got" -w '%{http_code}' "$loc")
is "$code" 200 "the storage service honours the link"
is "$(sha "$work/got")" "$(sha "$work/doc")" "... and serves the document's bytes"
is "$(tr -d '\r' <"$work/h" | sed -n 's/^[Cc]ontent-[Dd]isposition: //p')" "$want_cd" \
	"... with the signed Content-Disposition"
is "$(tr -d '\r' <"$work/h" | sed -n 's/^[Cc]ontent-[Tt]ype: //p')" application/octet-stream \
	"... and with the signed Content-Type, not the blob's text/html"
# The blob carries text/html, so the octet-stream above came from rsct
# (test_blob_interop.sh checks the same at the blob client's level).
tampered=$(printf '%s' "$loc" | sed 's/sig=./sig=A/')
[ "$tampered" != "$loc" ] || tampered=$(printf '%s' "$loc" | sed 's/sig=./sig=B/')
code=$(curl -s -o /dev/null -w '%{http_code}' "$tampered")
is "$code" 403 "a tampered signature is refused (403)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' --data-binary x "$loc")
is "$code" 403 "the link cannot write (403)"

# The link's type is the proxied answer's: a script goes out as
# octet-stream, text/plain as stored, and with [download]
# serve_active_types = true the script keeps its own type too.
printf 'alert(1)\n' >"$work/small"
{ cat "$work/conf"; printf '\n[download]\nserve_active_types = true\n'; } >"$work/active.conf"
chmod 600 "$work/active.conf"
for c in "text/javascript conf application/octet-stream" "text/plain conf text/plain" \
	"text/javascript active.conf text/javascript"; do
	read -r type conf want <<<"$c"
	out=$(cgi_req "$work/conf" POST "/documents?name=$tag-$RANDOM.txt" \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" CONTENT_TYPE="$type" \
		CONTENT_LENGTH="$(wc -c <"$work/small")" <"$work/small")
	id=$(jfield "$out" id)
	out=$(cgi_req "$work/$conf" GET "/documents/$id/content" </dev/null)
	loc=$(printf '%s\n' "$out" | sed -n 's/^Location: //p')
	is "$(url_param "$loc" rsct)" "$want" "a $type document's link ($conf) sets rsct $want"
done
done_testing
