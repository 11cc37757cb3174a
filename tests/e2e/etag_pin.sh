#!/usr/bin/env bash
# Reads pinned to the committed blob (doc/design.md "Conditional reads"),
# through lighttpd and Apache.
#
# Every way a document becomes ready records its blob's storage ETag: a
# create (POST), a replace (PUT), a resumable upload (tus).  The recorded
# ETag is the blob's as the service reports it, after the tag flip (which
# must not move it).  When the bytes are then changed behind bindery's back
# (a PUT through a SAS, as a leaked or still-valid SAS could), a download,
# whole or by Range, is refused with 500 bytes_changed and never carries the
# new bytes, and `bindery audit` reports the document, before any --deep
# re-read.  A document deleted afterwards leaves the audit clean.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
RUN=ep$$x$RANDOM
TUS=("${CHAOS_AUTH[@]}" -H 'Tus-Resumable: 1.0.0')
head -c 5000 /dev/urandom >"$work/one"
head -c 7000 /dev/urandom >"$work/two"
head -c 7000 /dev/urandom >"$work/intruder"

# etag_of BLOB: the blob's ETag as the service reports it now.
etag_of() { "$blobtool" stat "$1" | sed -n 's/.* etag=//p'; }
pinned() { sql "SELECT COALESCE(blob_etag, 'NULL') FROM documents WHERE id = $1"; }
blob_of() { sql "SELECT blob_name FROM documents WHERE id = $1"; }
audit() { "$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" audit --json --prefix "$1" 2>/dev/null; }

for server in lighttpd apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	s=$server

	req POST "$url/documents?name=$RUN-$s-a" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/one"
	a=$(jfield "$HTTP_BODY" id)
	like "$(pinned "$a")" '^"0x[0-9A-F]+"$' "$s: a create records its blob's ETag"
	is "$(pinned "$a")" "$(etag_of "$(blob_of "$a")")" "$s: ... the blob's own, after the tag flip"
	req PUT "$url/documents/$a/content" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/two"
	is "$HTTP_CODE" 200 "$s: a replace"
	is "$(pinned "$a")" "$(etag_of "$(blob_of "$a")")" "$s: ... records the new blob's ETag"

	req POST "$url/uploads" "${TUS[@]}" -H 'Upload-Length: 5000' -H 'Content-Length: 0' \
		-H "Upload-Metadata: filename $(printf %s "$RUN-$s-t" | base64 -w0)"
	req PATCH "$url$(header location)" "${TUS[@]}" -H 'Content-Type: application/offset+octet-stream' \
		-H 'Upload-Offset: 0' --data-binary "@$work/one"
	t=$(header location)
	t=${t##*/}
	is "$(pinned "$t")" "$(etag_of "$(blob_of "$t")")" "$s: a tus upload records its blob's ETag"

	# Behind bindery's back: other bytes of the same size (no metadata) onto A's blob.
	blob=$(blob_of "$a")
	sas=$("$blobtool" sas "$blob" rw 300)
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
		-H 'x-ms-tags: state=committed' --data-binary "@$work/intruder" "$sas")
	is "$code" 201 "$s: the blob is overwritten through a SAS"
	code=$(curl -s -o "$work/got" -w '%{http_code}' "$url/documents/$a/content")
	is "$code" 500 "$s: the download is refused (500)"
	is "$(jfield "$(cat "$work/got")" error)" bytes_changed "$s: ... as bytes_changed"
	isnt "$(sha "$work/got")" "$(sha "$work/intruder")" "$s: ... and the new bytes are not served"
	code=$(curl -s -o "$work/got" -w '%{http_code}' -H 'Range: bytes=10-99' "$url/documents/$a/content")
	is "$code" 500 "$s: a Range read is refused too"
	out=$(audit "$blob"); rc=$?
	is "$rc" 2 "$s: bindery audit exits 2"
	like "$out" '"kind": "dangling"' "$s: ... reporting the document dangling"
	like "$out" 'ETag' "$s: ... by its ETag, without --deep"
	req GET "$url/documents/$t/content"
	is "$HTTP_CODE" 200 "$s: an untouched document still downloads"
	req DELETE "$url/documents/$a" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 204 "$s: the changed document can be deleted"
	out=$(audit "$blob"); rc=$?
	is "$rc" 0 "$s: ... and the audit of its blob is clean again"
done
done_testing
