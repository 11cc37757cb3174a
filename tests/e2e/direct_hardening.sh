#!/usr/bin/env bash
# Direct uploads against a hostile client (doc/api.md, "Direct uploads"),
# through Apache mod_fcgid (and lighttpd too under --long,
# BINDERY_TEST_LONG: the cases are bindery's and storage's, the same behind
# either server, and tests/e2e/direct.sh runs the whole direct pass through
# lighttpd), with MariaDB and Azurite looked at directly.  The race in 3
# sends its two finalizes through both servers either way.
# Each case is one an outside review reproduced; each check fails without
# the fix that answers it.
#
#  1. No SAS outlives what it may create.  A finalized direct document that
#     is deleted keeps its blob in the outbox until the latest SAS granted
#     for its name has expired (+ 300 s skew), however short retire_grace
#     is: a sweep after the grace leaves the blob, so the SAS cannot put
#     back a committed blob no row names (a private config through the
#     responder run as CGI: retire_grace = 1).  A replayed finished key
#     answers with the URL it had, re-signed at its recorded time, never a
#     fresh SAS, also after the document is deleted.
#  2. Routes do not mix.  A server create (POST /documents) with the key of
#     a lapsed direct intent, whose blob holds other bytes under forged
#     metadata, is 422 idempotency_mismatch and changes nothing; a direct
#     create with a server create's key is 422 too.
#  3. Finalize is idempotent.  A finalize killed after recording its triple
#     or after its tag (failpoints, the responder run as CGI with a
#     failpoints file of this test's own) is finished at once by the next
#     finalize through the web server, and two finalizes at the same time
#     (one through each server) end with one document and the same answer.
#  4. Finalize accepts exactly one Put Blob of a block blob.  A snapshot
#     taken with the SAS, a Copy Blob into the name from another blob of the
#     account, and a page blob are each refused (422 not_one_put_blob) and
#     deleted, and the intent takes a proper upload afterwards.  The
#     client's metadata and content headers are replaced by the server's,
#     and reads stay pinned to the ETag recorded after that.
# Finally `bindery audit --deep` is clean on every document this run made.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"
. "$top/tests/lib/direct.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL BINDERY_TEST_BIN
sql_session	# one client for the script's queries (tests/lib/db.sh)
command -v jq >/dev/null || missing "jq is needed to read the answers"
command -v openssl >/dev/null || missing "openssl is needed for the MD5 of a body"
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
RUN=dh$$x$RANDOM
AUTH="Bearer $BINDERY_TEST_TOKEN"
NOBODY=(-H 'Content-Length: 0')
head -c 5000 /dev/urandom >"$work/small"
head -c 5000 /dev/urandom >"$work/other"
SMALL_SHA=$(sha "$work/small")
SMALL_MD5=$(openssl dgst -md5 -binary "$work/small" | base64)

# A configuration of this test's own (its blob prefix, so its sweeps touch
# only its names) for the responder run as CGI.
stack_test_conf "$work/cgi.conf" "$RUN-cgi/" || bail_out "no configuration of the test's own"
stack_test_conf "$work/short.conf" "$RUN-short/" '[limits]' 'retire_grace = 1' \
	|| bail_out "retire_grace = 1 does not load"
: >"$work/fp"
# cgi CONF METHOD URI [VAR=VALUE...] < BODY: the responder as a CGI program,
# reading this test's failpoints file; CGI_CODE and $work/cgi.out.
cgi() {
	local conf=$1 method=$2 uri=$3
	shift 3
	cgi_run "$work/cgi.out" "$conf" "$method" "$uri" HTTP_AUTHORIZATION="$AUTH" \
		BINDERY_FAILPOINTS_FILE="$work/fp" "$@"
}
# cgi_direct_create CONF NAME SIZE [KEY]: POST /documents/direct as CGI; sets what direct_create does.
cgi_direct_create() {
	jq -cn --arg n "$2" --argjson s "$3" '{name: $n, size: $s, content_type: "application/x-test"}' \
		>"$work/req.json"
	cgi "$1" POST /documents/direct CONTENT_TYPE=application/json \
		CONTENT_LENGTH="$(stat -c %s "$work/req.json")" ${4:+HTTP_IDEMPOTENCY_KEY="$4"} <"$work/req.json"
	direct_read_answer "$(cgi_body "$work/cgi.out")"
}
audit_deep() { "$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" audit --deep --json --prefix "$1" >/dev/null 2>&1; }
# A blob of the account as a URL without any credential.
bare_url() { printf '%s' "${UPLOAD_URL%%\?*}" | sed "s|/[^/]*\$|/$1|"; }

servers=apache
[ -z "${BINDERY_TEST_LONG:-}" ] || servers="lighttpd apache"
for server in $servers; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	s=$server

	# ---- 1. no SAS outlives what it may create ----
	direct_create "$url" "$RUN-$s-replay" 5000 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k1"
	first_url=$UPLOAD_URL first_expires=$EXPIRES id=$ID blob=$(blob_of "$ID")
	is "$(direct_put "$work/small")" 201 "$s: a direct upload"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 200 "$s: ... finalized"
	# A fresh SAS would be signed at a later second than the first.
	sleep 1.1
	direct_create "$url" "$RUN-$s-replay" 5000 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k1"
	is "$HTTP_CODE $ID" "201 $id" "$s: the key replayed after finalize: the same document"
	is "$UPLOAD_URL" "$first_url" "$s: ... the URL handed out before, not a new SAS"
	is "$EXPIRES" "$first_expires" "$s: ... expiring when it did"
	req DELETE "$url/documents/$id" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 204 "$s: the document deleted"
	is "$(sql "SELECT retire_after >= FROM_UNIXTIME(sas_expires + 300) FROM blobs WHERE name = '$blob'")" 1 \
		"$s: ... its blob retires no earlier than its SAS's expiry + 300 s"
	grace=$(sql "SELECT TIMESTAMPDIFF(SECOND, NOW(6), retire_after) FROM blobs WHERE name = '$blob'")
	ok "[ ${grace:-0} -ge 1100 ]" "$s: ... about 900 + 300 s from now, not retire_grace ($grace s)"
	direct_create "$url" "$RUN-$s-replay" 5000 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k1"
	is "$HTTP_CODE $UPLOAD_URL" "201 $first_url" "$s: the key replayed after the delete: the same answer, no 503"
	is "$(sas_call PUT "$UPLOAD_URL" -H 'x-ms-blob-type: BlockBlob' -H 'x-ms-tags: state=committed' \
		--data-binary "@$work/other")" 403 "$s: ... and its SAS cannot create the name: the blob is still there (403)"

	# ---- 2. routes do not mix ----
	direct_create "$url" "$RUN-$s-mix" 5000 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k2"
	mix_id=$ID mix_blob=$(blob_of "$ID")
	# X (other) under metadata that names B (small): what resuming would trust.
	is "$(direct_put "$work/other" "" -H "x-ms-meta-sha256: $SMALL_SHA" -H 'x-ms-meta-size: 5000')" 201 \
		"$s: a direct upload of other bytes with metadata naming the body to come"
	expire_intent "$mix_blob"
	req POST "$url/documents?name=$RUN-$s-mix" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k2" \
		-H 'Content-Type: application/x-test' --data-binary "@$work/small"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 idempotency_mismatch" \
		"$s: POST /documents with the lapsed direct intent's key: 422 idempotency_mismatch"
	is "$(sql "SELECT status FROM documents WHERE id = $mix_id")" pending "$s: ... the intent stays pending"
	req GET "$url/documents/$mix_id"
	is "$HTTP_CODE" 404 "$s: ... and nothing is readable"
	req POST "$url/documents?name=$RUN-$s-srv" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k3" \
		-H 'Content-Type: application/x-test' --data-binary "@$work/small"
	is "$HTTP_CODE" 201 "$s: a server create with a key"
	direct_create "$url" "$RUN-$s-srv" 5000 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k3"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 idempotency_mismatch" \
		"$s: ... a direct create with that key: 422 idempotency_mismatch"

	# ---- 3. finalize is idempotent ----
	for fp in direct.after_record direct.after_tag; do
		direct_create "$url" "$RUN-$s-$fp" 5000 "" "${CHAOS_AUTH[@]}"
		crash_id=$ID
		is "$(direct_put "$work/small")" 201 "$s: $fp: uploaded"
		printf '%s exit once\n' "$fp" >"$work/fp"
		cgi "$work/cgi.conf" POST "/documents/$crash_id/finalize" CONTENT_LENGTH=0 </dev/null
		: >"$work/fp"
		isnt "$CGI_CODE" 200 "$s: $fp: a finalize killed there answers nothing"
		is "$(sql "SELECT status FROM documents WHERE id = $crash_id")" pending "$s: $fp: ... the document pending"
		req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
		is "$HTTP_CODE" 200 "$s: $fp: the next finalize finishes it at once (200, not 503)"
		is "$(jfield "$HTTP_BODY" sha256)" "$SMALL_SHA" "$s: $fp: ... with the bytes' SHA-256"
		curl -s -o "$work/got" "$url/documents/$crash_id/content"
		cmp -s "$work/got" "$work/small"; ok $? "$s: $fp: ... readable, byte-identical"
	done

	for round in 1 2 3; do
		direct_create "$url" "$RUN-$s-race$round" 5000 "" "${CHAOS_AUTH[@]}"
		race_id=$ID
		direct_put "$work/small" >/dev/null
		curl -s -o "$work/race.a" -w '%{http_code}' -X POST "${NOBODY[@]}" "${CHAOS_AUTH[@]}" \
			"$BINDERY_TEST_LIGHTTPD_URL$FINALIZE" >"$work/race.a.code" &
		curl -s -o "$work/race.b" -w '%{http_code}' -X POST "${NOBODY[@]}" "${CHAOS_AUTH[@]}" \
			"$BINDERY_TEST_APACHE_URL$FINALIZE" >"$work/race.b.code"
		wait
		is "$(cat "$work/race.a.code") $(cat "$work/race.b.code")" "200 200" \
			"$s: race $round: two finalizes at once (lighttpd and Apache): both 200"
		cmp -s "$work/race.a" "$work/race.b"; ok $? "$s: race $round: ... with the same answer"
		is "$(sql "SELECT CONCAT(COUNT(*), ' ', MIN(status)) FROM documents WHERE name = '$RUN-$s-race$round'")" \
			"1 ready" "$s: race $round: ... one document, ready"
		is "$(sql "SELECT blob_etag FROM documents WHERE id = $race_id")" "$(etag_of "$(blob_of "$race_id")")" \
			"$s: race $round: ... pinned to the blob's ETag as it is now"
	done

	# ---- 4. one Put Blob of a block blob, and the server's headers ----
	direct_create "$url" "$RUN-$s-snap" 5000 "" "${CHAOS_AUTH[@]}"
	snap_blob=$(blob_of "$ID")
	is "$(direct_put "$work/small")" 201 "$s: snapshot: uploaded"
	is "$(sas_call PUT "$UPLOAD_URL&comp=snapshot" "${NOBODY[@]}")" 201 "$s: ... sp=c also takes a snapshot (201)"
	is "$("$blobtool" snapshots "$snap_blob")" 1 "$s: ... one snapshot there"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 not_one_put_blob" "$s: ... finalize refuses it (422 not_one_put_blob)"
	blob_exists "$snap_blob"; isnt $? 0 "$s: ... the blob is deleted"
	is "$("$blobtool" snapshots "$snap_blob")" 0 "$s: ... with its snapshot"
	is "$(direct_put "$work/small")" 201 "$s: ... the same upload_url takes a proper upload"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" sha256)" "200 $SMALL_SHA" "$s: ... which finalizes (200)"

	# The source: a document of this run, deleted (its blob in the outbox).
	req POST "$url/documents?name=$RUN-$s-src" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/other"
	src_id=$(jfield "$HTTP_BODY" id)
	src_blob=$(blob_of "$src_id")
	req DELETE "$url/documents/$src_id" "${CHAOS_AUTH[@]}"
	direct_create "$url" "$RUN-$s-copy" 5000 "" "${CHAOS_AUTH[@]}"
	copy_blob=$(blob_of "$ID")
	is "$(sas_call PUT "$UPLOAD_URL" "${NOBODY[@]}" -H "x-ms-copy-source: $(bare_url "$src_blob")")" 202 \
		"$s: copy: Copy Blob of a deleted document's blob into the name with the SAS (202)"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 not_one_put_blob" "$s: ... finalize refuses it (422)"
	blob_exists "$copy_blob"; isnt $? 0 "$s: ... and deletes it"
	is "$(sql "SELECT status FROM documents WHERE id = $ID")" pending "$s: ... nothing became ready"

	direct_create "$url" "$RUN-$s-page" 512 "" "${CHAOS_AUTH[@]}"
	page_blob=$(blob_of "$ID")
	is "$(sas_call PUT "$UPLOAD_URL" "${NOBODY[@]}" -H 'x-ms-blob-type: PageBlob' \
		-H 'x-ms-blob-content-length: 512')" 201 "$s: page: a page blob created with the SAS (201)"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 not_one_put_blob" "$s: ... finalize refuses it (422)"
	blob_exists "$page_blob"; isnt $? 0 "$s: ... and deletes it"

	direct_create "$url" "$RUN-$s-hdrs" 5000 "" "${CHAOS_AUTH[@]}"
	hdrs_id=$ID hdrs_blob=$(blob_of "$ID")
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
		-H 'x-ms-tags: state=pending' -H 'If-None-Match: *' -H 'Content-Type: text/html' \
		-H 'x-ms-meta-sha256: 0000000000000000000000000000000000000000000000000000000000000000' \
		-H 'x-ms-meta-size: 5000' -H 'x-ms-meta-owner: mallory' -H 'x-ms-meta-bindery_owner: mallory' \
		-H 'x-ms-meta-bindery_name: not-its-name' -H 'x-ms-blob-content-disposition: inline' \
		-H 'x-ms-blob-content-encoding: gzip' -H 'x-ms-blob-cache-control: public' \
		--data-binary "@$work/small" "$UPLOAD_URL")
	is "$code" 201 "$s: headers: a Put Blob with the client's own metadata and content headers"
	before=$(etag_of "$hdrs_blob")
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" content_type)" "200 application/x-test" "$s: ... finalize: 200"
	"$blobtool" stat "$hdrs_blob" >"$work/stat"
	like "$(cat "$work/stat")" " sha256=$SMALL_SHA meta_size=5000 " "$s: ... the metadata is the server's: size, sha256"
	like "$(cat "$work/stat")" ' type=application/x-test meta=9 ' \
		"$s: ... and the stamp naming installation and document (7 more), nothing else, and the intent's Content-Type"
	curl -sS -I "$("$blobtool" sas "$hdrs_blob" r 60)" | tr -d '\r' >"$work/head"
	has "$(cat "$work/head")" "x-ms-meta-bindery_owner: demo" "$s: ... the stamp's owner is the intent's, not the client's"
	has "$(cat "$work/head")" "x-ms-meta-bindery_name: $RUN-$s-hdrs" "$s: ... and so is its name"
	has "$(cat "$work/stat")" " md5=$SMALL_MD5 kind=BlockBlob copied=0 extras=0 " \
		"$s: ... the bytes' own MD5, no encoding, disposition or cache control"
	after=$(etag_of "$hdrs_blob")
	isnt "$after" "$before" "$s: ... which changed the ETag"
	is "$(sql "SELECT CONCAT(d.blob_etag, ' ', b.etag) FROM documents d JOIN blobs b ON b.name = d.blob_name WHERE d.id = $hdrs_id")" \
		"$after $after" "$s: ... and the ETag recorded and pinned is the one after"
	curl -s -o "$work/got" -w '%{http_code}' "$url/documents/$hdrs_id/content" >"$work/code"
	is "$(cat "$work/code")" 200 "$s: ... reads stay pinned: 200"
	cmp -s "$work/got" "$work/small"; ok $? "$s: ... byte-identical"

	for id in $(sql "SELECT id FROM documents WHERE name LIKE '$RUN-$s-%' AND status = 'ready'"); do
		audit_deep "$(blob_of "$id")"
		is "$?" 0 "$s: bindery audit --deep is clean on document $id"
	done
done

# ---- 1, end to end: a grace shorter than the SAS (retire_grace = 1) ----
cgi_direct_create "$work/short.conf" "$RUN-short" 5000
is "$CGI_CODE" 201 "short grace: a direct create (CGI, retire_grace = 1)"
short_id=$ID short_blob=$(blob_of "$ID")
is "$(direct_put "$work/small")" 201 "short grace: uploaded"
cgi "$work/short.conf" POST "/documents/$short_id/finalize" CONTENT_LENGTH=0 </dev/null
is "$CGI_CODE" 200 "short grace: finalized"
cgi "$work/short.conf" DELETE "/documents/$short_id" </dev/null
is "$CGI_CODE" 204 "short grace: deleted"
sleep 2
chaos_sweep "$work/short.conf" "$work/sweep.log"
is "$SWEEP_RC" 0 "short grace: a sweep after the grace has passed"
blob_exists "$short_blob"; ok $? "short grace: ... leaves the blob while its SAS is valid"
is "$(sas_call PUT "$UPLOAD_URL" -H 'x-ms-blob-type: BlockBlob' -H 'x-ms-tags: state=committed' \
	--data-binary "@$work/other")" 403 "short grace: ... so the SAS cannot put back a blob no row names (403)"
# Once the SAS is over (moved back with SQL, as an hour would), the outbox drains it.
sql "UPDATE blobs SET sas_expires = UNIX_TIMESTAMP() - 400, retire_after = NOW(6) - INTERVAL 1 SECOND
     WHERE name = '$short_blob'"
chaos_sweep "$work/short.conf" "$work/sweep.log"
blob_exists "$short_blob"; isnt $? 0 "short grace: ... and the outbox deletes it once every grant has expired"
is "$(rows_of "$short_blob")" 0 "short grace: ... its row gone"

# Leave nothing behind: the rest of this run's intents expired and swept.
sql "UPDATE blobs b JOIN documents d ON d.blob_name = b.name SET b.expires_at = NOW(6) - INTERVAL 1 SECOND
     WHERE d.name LIKE '$RUN-%' AND d.status = 'pending'"
for id in $(sql "SELECT id FROM documents WHERE name LIKE '$RUN-%' AND status = 'ready'"); do
	curl -s -o /dev/null "${CHAOS_AUTH[@]}" -X DELETE "$BINDERY_TEST_LIGHTTPD_URL/documents/$id"
done
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$RUN-%'")" 0 "no document of this run is left"
done_testing
