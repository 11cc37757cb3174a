#!/usr/bin/env bash
# bindery audit --deep re-reads a ready document's bytes: a blob overwritten
# behind bindery's back with bytes of the same size (and no metadata to
# compare) passes the shallow audit but is reported dangling by the deep one.
# The document here is one made ready before sql/008 (its ETag not
# recorded, so nothing pins it; tests/e2e/etag_pin.sh covers pinned ones,
# which the shallow audit catches by their ETag).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_BLOB_ENDPOINT
blobtool=${top_builddir:-.}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BINDERY_LOG_STDERR=1
export BLOBTOOL_CONTAINER
BLOBTOOL_CONTAINER=$(sed -n 's/^container *= *//p' "$BINDERY_CONFIG" | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

head -c 4096 /dev/urandom >"$work/doc"
name="deep-$$-$RANDOM"
out=$(cgi_req "$BINDERY_CONFIG" POST "/documents?name=$name" CONTENT_TYPE=application/octet-stream \
	CONTENT_LENGTH=4096 HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$work/doc")
like "$out" '^Status: 201' "a document created"
id=$(jfield "$out" id)
blob=$(sql "SELECT blob_name FROM documents WHERE id = ${id:-0}")
like "$blob" '^[0-9a-z_-]+$' "its blob is $blob"
sql "UPDATE documents SET blob_etag = NULL WHERE id = ${id:-0}"	# as before 008
audit() { "$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" audit --json --prefix "$blob" "$@" 2>/dev/null; }

out=$(audit --deep); rc=$?
is "$rc" 0 "deep audit of the intact document is clean"
like "$out" '"rehashed": 1' "... and re-hashed it"

# Same size, other bytes, no metadata: what a stray overwrite would leave.
url=$("$blobtool" sas "$blob" rwt 300)
head -c 4096 /dev/urandom >"$work/other"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
	-H 'x-ms-tags: state=committed' --data-binary "@$work/other" "$url")
is "$code" 201 "the blob is overwritten behind bindery's back"
out=$(audit); rc=$?
is "$rc" 0 "the shallow audit cannot tell (sizes match, no metadata to compare)"
out=$(audit --deep); rc=$?
is "$rc" 2 "the deep audit exits 2: a dangling document"
like "$out" '"kind": "dangling"' "... and names the finding"
like "$out" 'its bytes are 4096 bytes sha256' "... with what it read"

# Put the original bytes back so the run's later audits stay clean.
url=$("$blobtool" sas "$blob" rwt 300)
sha=$(sha "$work/doc")
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
	-H 'x-ms-tags: state=committed' -H "x-ms-meta-sha256: $sha" -H 'x-ms-meta-size: 4096' \
	--data-binary "@$work/doc" "$url")
is "$code" 201 "the original bytes are restored"
out=$(audit --deep); rc=$?
is "$rc" 0 "deep audit is clean again"
done_testing
