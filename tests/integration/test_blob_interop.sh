#!/usr/bin/env bash
# Interop: a blob written by our client reads back byte-identical, with its
# tags, through plain curl and a SAS URL that our code generated (so
# Azurite, not our own client, verifies our SAS signing).  Skips unless
# BINDERY_TEST_BLOB_ENDPOINT is set.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
tool=${top_builddir:-$here/../..}/tests/tools/blobtool
[ -x "$tool" ] || tool=$here/../tools/blobtool

[ -n "${BINDERY_TEST_BLOB_ENDPOINT:-}" ] || missing "BINDERY_TEST_BLOB_ENDPOINT is not set"
command -v curl >/dev/null || missing "curl not installed"
BLOBTOOL_CONTAINER=t-blob-interop-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
export BLOBTOOL_CONTAINER BLOBTOOL_BLOCK_SIZE=65536 BLOBTOOL_SINGLE_PUT_MAX=16384
tmp=$(mktemp -d)
trap '"$tool" rmcontainer >/dev/null 2>&1; rm -rf "$tmp"' EXIT

"$tool" mkcontainer; ok $? "container created"
head -c 300000 /dev/urandom > "$tmp/in.bin"
printf 'small body\n' > "$tmp/small.txt"
"$tool" put "dir/staged file.bin" "$tmp/in.bin" state=pending owner=interop > "$tmp/put.out"
ok $? "staged upload through our client"
"$tool" put "small.txt" "$tmp/small.txt" state=committed > /dev/null
ok $? "single Put Blob through our client"
is "$(cut -d' ' -f2 < "$tmp/put.out")" "$(sha "$tmp/in.bin")" "client-reported sha256 matches sha256sum"

url=$("$tool" sas "dir/staged file.bin" r 600); ok $? "SAS URL generated"
curl -sf -o "$tmp/out.bin" "$url"; ok $? "curl GET with our SAS"
cmp -s "$tmp/in.bin" "$tmp/out.bin"; ok $? "bytes read back identical"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
	--data-binary @"$tmp/small.txt" "$url")
is "$code" 403 "read-only SAS cannot write (HTTP $code)"

turl=$("$tool" sas "dir/staged file.bin" rt 600)
curl -sf "$turl&comp=tags" > "$tmp/tags.xml"; ok $? "curl Get Blob Tags with a t SAS"
grep -q '<Key>state</Key><Value>pending</Value>' "$tmp/tags.xml" &&
	grep -q '<Key>owner</Key><Value>interop</Value>' "$tmp/tags.xml"
ok $? "tags set by our client are there"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url&comp=tags")
is "$code" 403 "SAS without t cannot read tags (HTTP $code)"

durl=$("$tool" sas "small.txt" r 600 'attachment; filename="s.txt"')
curl -sf -D "$tmp/h" -o "$tmp/s.out" "$durl"; ok $? "curl GET with rscd SAS"
cmp -s "$tmp/small.txt" "$tmp/s.out"; ok $? "small blob identical"
grep -qi '^content-disposition: attachment; filename="s.txt"' "$tmp/h"
ok $? "service answers with the signed Content-Disposition"
durl=$("$tool" sas "small.txt" r 600 'attachment; filename="s.txt"' 'text/x-signed')
curl -sf -D "$tmp/h" -o /dev/null "$durl"; ok $? "curl GET with rscd and rsct SAS"
grep -qi '^content-type: text/x-signed' "$tmp/h"
ok $? "service answers with the signed Content-Type"

bad=$(printf '%s' "$url" | sed 's/sig=./sig=A/')
[ "$bad" != "$url" ] || bad=$(printf '%s' "$url" | sed 's/sig=./sig=B/')
code=$(curl -s -o /dev/null -w '%{http_code}' "$bad")
is "$code" 403 "tampered SAS refused (HTTP $code)"

done_testing
