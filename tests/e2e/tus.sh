#!/usr/bin/env bash
# tus 1.0.0 at /uploads, with curl, through lighttpd, which streams each
# PATCH to bindery as it arrives; under --long (BINDERY_TEST_LONG) through
# the pool (bindery.fcgi --listen) behind Apache mod_proxy_fcgi, which
# streams it too, and Apache mod_fcgid, which buffers each PATCH whole
# first.  By default tests/e2e/tus_webserver.sh checks tus through both
# (every method, the tus headers both ways, a whole upload, 460, DELETE),
# tus_client.sh runs tus-js-client's whole 20 MiB upload, a taken name and
# the checksum extension through both, and tus_apache_limits.sh the body
# limits of mod_fcgid.
#
# The protocol as a client sees it: discovery (OPTIONS), the version check,
# creation (with and without upload), PATCH in chunks, HEAD, the checksum
# extension (460 moves nothing), termination, ownership (another owner's
# upload is 404), a name taken by a ready document or by the owner's own
# pending upload (422 on POST /uploads, 409 on POST /documents), a replace through an upload, an empty upload.  Every
# finished upload is read back and compared by SHA-256 of files.
#
# Then, on a responder that reads a failpoints file: two PATCHes at once
# (one 409 upload_busy with Retry-After), and the tail acknowledged last: a
# PATCH that fails after its last block is recorded, or after the tag flip,
# leaves HEAD at length - last block; re-sending the tail finishes the
# document, and a different tail is refused.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_TOKEN_OTHER
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
RUN=tus$$x$RANDOM
TUS=(-H 'Tus-Resumable: 1.0.0')
AUTH=("${CHAOS_AUTH[@]}" "${TUS[@]}")
OTHER=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN_OTHER" "${TUS[@]}")
STREAM=(-H 'Content-Type: application/offset+octet-stream')
MIB=1048576
max_upload=$(sed -n 's/^max_upload *= *//p' "$BINDERY_CONFIG" | tail -n 1)
case $max_upload in
*M) max_upload=$((${max_upload%M} * MIB)) ;;
*K) max_upload=$((${max_upload%K} * 1024)) ;;
esac

head -c $((10 * MIB)) /dev/urandom >"$work/big"
head -c $((5 * MIB)) "$work/big" >"$work/big.1"
tail -c +$((5 * MIB + 1)) "$work/big" >"$work/big.2"
head -c 3000 /dev/urandom >"$work/small"
head -c 1000 "$work/small" >"$work/small.1k"
head -c $((2 * MIB + 7)) /dev/urandom >"$work/replacement"
: >"$work/empty"

b64() { printf '%s' "$1" | base64 -w0; }
# meta NAME [TYPE]: an Upload-Metadata value.
meta() { printf 'filename %s%s' "$(b64 "$1")" "${2:+,filetype $(b64 "$2")}"; }
# create URL LENGTH METADATA [CURL-ARGS...]: POST /uploads; sets LOC.
create() {
	local url=$1 len=$2 md=$3
	shift 3
	req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Length: $len" -H "Upload-Metadata: $md" \
		-H 'Content-Length: 0' "$@"
	LOC=$(header location)
}
# patch URL LOC OFFSET FILE [CURL-ARGS...]: one PATCH of FILE's bytes.
patch() {
	local url=$1 loc=$2 off=$3 file=$4
	shift 4
	req PATCH "$url$loc" "${AUTH[@]}" "${STREAM[@]}" -H "Upload-Offset: $off" \
		--data-binary "@$file" "$@"
}
# offset_of URL LOC: the Upload-Offset HEAD reports ("none" without an answer).
offset_of() {
	req HEAD "$1$2" "${AUTH[@]}" -I
	[ "$HTTP_CODE" = 204 ] && header upload-offset || echo "none:$HTTP_CODE"
}
content_sha() { curl -s -m 60 "$1/documents/$2/content" | sha; }
digest_b64() { openssl dgst "-$1" -binary "$2" | base64 -w0; }

# The container's blobs before this test: the closing chaos_verify looks
# only at the ones that appeared since (not at every earlier test's).
chaos_snapshot "$work/before"
servers=lighttpd
[ -z "${BINDERY_TEST_LONG:-}" ] || servers+=" pool apache"
for server in $servers; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	pool) url=$BINDERY_TEST_APACHE_POOL_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	s=$server

	# ---- discovery and refusals that move nothing ------------------------
	req OPTIONS "$url/uploads"
	is "$HTTP_CODE" 204 "$s: OPTIONS /uploads is 204"
	is "$(header tus-version)" 1.0.0 "$s: ... Tus-Version 1.0.0"
	is "$(header tus-resumable)" 1.0.0 "$s: ... Tus-Resumable 1.0.0"
	is "$(header tus-extension)" creation,creation-with-upload,termination,checksum,expiration,concatenation \
		"$s: ... exactly the extensions built"
	is "$(header tus-max-size)" "$max_upload" "$s: ... Tus-Max-Size is max_upload"
	is "$(header tus-checksum-algorithm)" sha1,sha256 "$s: ... sha1 and sha256"

	create "$url" 10 "$(meta "$RUN-$s-v")" -H 'Tus-Resumable: 0.2.2'
	is "$HTTP_CODE" 412 "$s: another Tus-Resumable is 412"
	is "$(header tus-version)" 1.0.0 "$s: ... naming the version spoken"
	req POST "$url/uploads" "${CHAOS_AUTH[@]}" -H 'Upload-Length: 10' -H 'Content-Length: 0'
	is "$HTTP_CODE" 412 "$s: no Tus-Resumable is 412"
	req POST "$url/uploads" "${TUS[@]}" -H 'Upload-Length: 10' -H 'Content-Length: 0' \
		-H "Upload-Metadata: $(meta "$RUN-$s-anon")"
	is "$HTTP_CODE" 401 "$s: no caller is 401"
	is "$(jfield "$HTTP_BODY" error)" unauthorized "$s: ... with a JSON error"
	create "$url" $((max_upload + 1)) "$(meta "$RUN-$s-huge")"
	is "$HTTP_CODE" 413 "$s: Upload-Length over Tus-Max-Size is 413"
	create "$url" -1 "$(meta "$RUN-$s-neg")"
	is "$(jfield "$HTTP_BODY" error)" bad_upload_length "$s: Upload-Length -1 is 400 bad_upload_length"
	create "$url" 10 "filetype $(b64 text/plain)"
	is "$(jfield "$HTTP_BODY" error)" missing_name "$s: no filename is 400 missing_name"
	create "$url" 10 'filename not*base64'
	is "$(jfield "$HTTP_BODY" error)" bad_metadata "$s: malformed Upload-Metadata is 400 bad_metadata"
	create "$url" 10 "filename $(printf 'a\nb' | base64 -w0)"
	is "$(jfield "$HTTP_BODY" error)" bad_name "$s: a name with a newline is 400 bad_name"
	is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$RUN-$s-%'")" 0 \
		"$s: ... and none of these made a row"

	# ---- create, PATCH in two chunks, read back ---------------------------
	create "$url" $((10 * MIB)) "$(meta "$RUN-$s-big" application/x-test)"
	is "$HTTP_CODE" 201 "$s: POST /uploads is 201"
	like "$LOC" '^/uploads/[0-9a-f]{32}$' "$s: ... Location is the upload"
	like "$(header upload-expires)" '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$' \
		"$s: ... Upload-Expires is an HTTP date"
	big=$LOC
	req HEAD "$url$big" "${AUTH[@]}" -I
	is "$HTTP_CODE $(header upload-offset) $(header upload-length)" "204 0 $((10 * MIB))" \
		"$s: HEAD of a fresh upload: offset 0 and its length"
	is "$(header cache-control)" no-store "$s: ... Cache-Control: no-store"
	req PATCH "$url$big" "${AUTH[@]}" -H 'Content-Type: text/plain' -H 'Upload-Offset: 0' \
		--data-binary "@$work/big.1"
	is "$HTTP_CODE" 415 "$s: a PATCH of another Content-Type is 415"
	patch "$url" "$big" 1 "$work/big.1"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 offset_mismatch" "$s: a PATCH at the wrong offset is 409"
	patch "$url" "$big" x "$work/big.1"
	is "$HTTP_CODE" 400 "$s: Upload-Offset x is 400"
	patch "$url" "$big" 0 "$work/big.1"
	is "$HTTP_CODE $(header upload-offset)" "204 $((5 * MIB))" "$s: the first 5 MiB: 204, offset 5 MiB"
	is "$(offset_of "$url" "$big")" $((5 * MIB)) "$s: HEAD says 5 MiB"
	is "$(sql "SELECT status FROM documents WHERE name = '$RUN-$s-big'")" pending \
		"$s: ... the document is pending, not visible"
	req HEAD "$url$big" "${OTHER[@]}" -I
	is "$HTTP_CODE" 404 "$s: another owner's HEAD is 404"
	req PATCH "$url$big" "${OTHER[@]}" "${STREAM[@]}" -H "Upload-Offset: $((5 * MIB))" \
		--data-binary "@$work/big.2"
	is "$HTTP_CODE" 404 "$s: another owner's PATCH is 404"
	req DELETE "$url$big" "${OTHER[@]}"
	is "$HTTP_CODE" 404 "$s: another owner's DELETE is 404"

	# ---- the checksum extension ------------------------------------------
	patch "$url" "$big" $((5 * MIB)) "$work/big.2" \
		-H "Upload-Checksum: sha256 $(digest_b64 sha256 "$work/big.1")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "460 checksum_mismatch" "$s: a wrong sha256 is 460"
	is "$(offset_of "$url" "$big")" $((5 * MIB)) "$s: ... and the offset did not move"
	patch "$url" "$big" $((5 * MIB)) "$work/big.2" -H "Upload-Checksum: md5 $(digest_b64 md5 "$work/big.2")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 unsupported_checksum" "$s: md5 is 400"
	patch "$url" "$big" $((5 * MIB)) "$work/big.2" \
		-H "Upload-Checksum: sha1 $(digest_b64 sha1 "$work/big.2")"
	is "$HTTP_CODE $(header upload-offset)" "204 $((10 * MIB))" "$s: the rest with a right sha1 finishes: 204"
	doc=$(header location)
	like "$doc" '^/documents/[0-9]+$' "$s: ... Location names the document"
	id=${doc##*/}
	is "$(content_sha "$url" "$id")" "$(sha "$work/big")" "$s: the document's bytes are the file's"
	req GET "$url$doc"
	is "$(jfield "$HTTP_BODY" sha256) $(jfield "$HTTP_BODY" content_type)" \
		"$(sha "$work/big") application/x-test" "$s: ... its sha256 and filetype"
	req HEAD "$url$big" "${AUTH[@]}" -I
	is "$(header upload-offset) $(header location)" "$((10 * MIB)) $doc" \
		"$s: HEAD of the finished upload: the whole length and the document"
	req PATCH "$url$big" "${AUTH[@]}" "${STREAM[@]}" -H "Upload-Offset: $((10 * MIB))" -H 'Content-Length: 0'
	is "$HTTP_CODE $(header location)" "204 $doc" "$s: an empty PATCH at the end repeats the answer"
	req DELETE "$url$big" "${AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 upload_finished" "$s: a finished upload cannot be terminated"

	# ---- names --------------------------------------------------------------
	# On POST /uploads a taken name is 422, which tus clients do not retry
	# (they retry every 409); POST /documents keeps 409.
	create "$url" 10 "$(meta "$RUN-$s-big")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 name_taken" "$s: a ready document's name is 422"
	create "$url" 3000 "$(meta "$RUN-$s-held")"
	held=$LOC
	create "$url" 3000 "$(meta "$RUN-$s-held")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error) $(jfield "$HTTP_BODY" upload)" "422 name_taken $held" \
		"$s: the owner's own pending upload of the name is 422 naming it"
	is "$(header tus-resumable)" 1.0.0 "$s: ... with Tus-Resumable"
	req POST "$url/uploads" "${OTHER[@]}" -H 'Upload-Length: 3000' -H 'Content-Length: 0' \
		-H "Upload-Metadata: $(meta "$RUN-$s-held")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error) $(jfield "$HTTP_BODY" upload)" "422 name_taken " \
		"$s: ... another owner's 422 does not name it"
	req POST "$url/documents?name=$RUN-$s-held" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/small"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" upload)" "409 $held" \
		"$s: a single-request create of that name is 409 naming the owner's upload too"

	# ---- termination -------------------------------------------------------
	patch "$url" "$held" 0 "$work/small.1k"
	is "$HTTP_CODE $(header upload-offset)" "204 1000" "$s: a first chunk of 1000 bytes"
	blob=$(sql "SELECT blob_name FROM uploads WHERE id = '${held##*/}'")
	req DELETE "$url$held" "${AUTH[@]}"
	is "$HTTP_CODE" 204 "$s: DELETE terminates: 204"
	req HEAD "$url$held" "${AUTH[@]}" -I
	is "$HTTP_CODE" 404 "$s: ... HEAD is then 404"
	is "$(sql "SELECT (SELECT COUNT(*) FROM documents WHERE name = '$RUN-$s-held') +
		(SELECT COUNT(*) FROM blobs WHERE name = '$blob') +
		(SELECT COUNT(*) FROM uploads WHERE blob_name = '$blob')")" 0 \
		"$s: ... no document, registry row or upload row is left"
	is "$(az_list "$blob" | awk -v n="$blob" '$1 == n' | wc -l)" 0 "$s: ... and nothing of it in storage"
	create "$url" 3000 "$(meta "$RUN-$s-held")"
	is "$HTTP_CODE" 201 "$s: ... and the name is free again"
	req DELETE "$url$LOC" "${AUTH[@]}" >/dev/null

	# ---- creation with upload; an empty upload ------------------------------
	req POST "$url/uploads" "${AUTH[@]}" "${STREAM[@]}" -H 'Upload-Length: 3000' \
		-H "Upload-Metadata: $(meta "$RUN-$s-small" text/plain)" --data-binary "@$work/small"
	is "$HTTP_CODE $(header upload-offset)" "201 3000" "$s: creation with upload: 201 and the offset"
	req HEAD "$url$(header location)" "${AUTH[@]}" -I
	small=$(header location)
	like "$small" '^/documents/[0-9]+$' "$s: ... the upload is finished"
	is "$(content_sha "$url" "${small##*/}")" "$(sha "$work/small")" "$s: ... bytes identical"
	create "$url" 0 "$(meta "$RUN-$s-empty")"
	patch "$url" "$LOC" 0 "$work/empty"
	is "$HTTP_CODE $(header upload-offset)" "204 0" "$s: an empty upload finishes with one empty PATCH"
	req GET "$url$(header location)"
	is "$(jfield "$HTTP_BODY" size) $(jfield "$HTTP_BODY" sha256)" "0 $(sha "$work/empty")" \
		"$s: ... an empty document"

	# ---- a replace through an upload ----------------------------------------
	req GET "$url$doc"
	etag=$(header etag)
	create "$url" $((2 * MIB + 7)) "replaces $(b64 "$id"),if_match $(b64 '"0-0"')"
	is "$HTTP_CODE" 412 "$s: a replace with a stale if_match is 412 at creation"
	create "$url" $((2 * MIB + 7)) "replaces $(b64 "$id"),if_match $(b64 "$etag"),filetype $(b64 text/x-new)"
	is "$HTTP_CODE" 201 "$s: a replace upload with the current ETag is 201"
	patch "$url" "$LOC" 0 "$work/replacement"
	is "$HTTP_CODE $(header location)" "204 $doc" "$s: ... finishing it answers the same document"
	is "$(content_sha "$url" "$id")" "$(sha "$work/replacement")" "$s: ... which now holds the new bytes"
	req GET "$url$doc"
	like "$(header etag)" "^\"$id-2\"$" "$s: ... at version 2"
	is "$(jfield "$HTTP_BODY" content_type)" text/x-new "$s: ... with the new filetype"
done

# ---- two PATCHes at once; the tail acknowledged last ------------------------

chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
url=$CHAOS_URL
create "$url" $((10 * MIB)) "$(meta "$RUN-busy")"
busy=$LOC
printf 'tus.after_take sleep:6000 once\n' >"$FP"
(patch "$url" "$busy" 0 "$work/big.1"; echo "$HTTP_CODE $(header upload-offset)" >"$work/first") &
sleep 2
patch "$url" "$busy" 0 "$work/big.1"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 upload_busy" "a PATCH while another holds the upload is 409"
like "$(header retry-after)" '^[0-9]+$' "... with Retry-After"
wait
is "$(cat "$work/first")" "204 $((5 * MIB))" "... and the holder finishes its PATCH"

printf 'tus.after_last_block error once\n' >"$FP"
patch "$url" "$busy" $((5 * MIB)) "$work/big.2"
is "$HTTP_CODE" 503 "the last PATCH fails after its last block is recorded (503)"
last=$(sql "SELECT size FROM upload_blocks WHERE upload_id = '${busy##*/}' ORDER BY seq DESC LIMIT 1")
is "$(offset_of "$url" "$busy")" $((10 * MIB - last)) \
	"HEAD holds the last block back ($last bytes): the client will re-send it"
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-busy'")" pending "... the document is not visible"
tail -c "$last" "$work/big" >"$work/tail"
head -c "$last" /dev/urandom >"$work/other-tail"
patch "$url" "$busy" $((10 * MIB - last)) "$work/other-tail"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 offset_mismatch" "a different tail there is refused"
printf 'tus.after_flip error once\n' >"$FP"
patch "$url" "$busy" $((10 * MIB - last)) "$work/tail"
is "$HTTP_CODE" 503 "re-sending the tail, failing after the tag flip: 503"
is "$(offset_of "$url" "$busy")" $((10 * MIB - last)) "... HEAD still holds the last block back"
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-busy'")" pending "... still not visible"
patch "$url" "$busy" $((10 * MIB - last)) "$work/tail"
is "$HTTP_CODE $(header upload-offset)" "204 $((10 * MIB))" "re-sending the tail again finishes it"
done_id=$(header location)
is "$(content_sha "$url" "${done_id##*/}")" "$(sha "$work/big")" "... bytes identical"
is "$(sql "SELECT COUNT(*) FROM upload_blocks WHERE upload_id = '${busy##*/}'")" 0 \
	"... and its block rows are gone with the ready transaction"
# (A replaced document's old blob waits out retire_grace in the outbox: retired is right there.)
is "$(chaos_verify "$RUN" "$work/before" | grep -v -e '^orphan' -e ' is retired$' | head -n 5)" "" \
	"every finished tus document is ready on a committed blob with its bytes"
done_testing
