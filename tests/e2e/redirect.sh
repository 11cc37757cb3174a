#!/usr/bin/env bash
# [download] mode = redirect: GET /documents/{id}/content answers 302 to a
# short-lived, read-only SAS URL that the storage service honours, and
# refuses once tampered with.  Runs the responder in CGI mode with a copy of
# the test configuration switched to redirect.
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

head -c 100000 /dev/urandom >"$work/doc"
out=$(cgi_req "$work/conf" POST "/documents?name=redirect-$$-$RANDOM" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	CONTENT_TYPE=application/pdf CONTENT_LENGTH=100000 <"$work/doc")
like "$out" '^Status: 201' "created through the redirect-mode responder"
id=$(jfield "$out" id)
out=$(cgi_req "$work/conf" GET "/documents/$id/content" </dev/null)
like "$out" '^Status: 302' "content answers 302"
loc=$(printf '%s\n' "$out" | sed -n 's/^Location: //p')
like "$loc" '^https?://.*sp=r(&|$)' "... to a read-only SAS URL"
like "$loc" 'se=[0-9]{4}-[0-9]{2}-[0-9]{2}T' "... with an expiry"
code=$(curl -s -o "$work/got" -w '%{http_code}' "$loc")
is "$code" 200 "the storage service honours the link"
is "$(sha "$work/got")" "$(sha "$work/doc")" "... and serves the document's bytes"
tampered=$(printf '%s' "$loc" | sed 's/sig=./sig=A/')
[ "$tampered" != "$loc" ] || tampered=$(printf '%s' "$loc" | sed 's/sig=./sig=B/')
code=$(curl -s -o /dev/null -w '%{http_code}' "$tampered")
is "$code" 403 "a tampered signature is refused (403)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' --data-binary x "$loc")
is "$code" 403 "the link cannot write (403)"
done_testing
