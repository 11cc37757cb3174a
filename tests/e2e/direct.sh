#!/usr/bin/env bash
# Direct uploads (doc/design.md "Direct uploads"), with curl, through
# lighttpd; through Apache mod_fcgid and through Apache mod_proxy_fcgi with
# the pool the flow only (the whole pass under --long, BINDERY_TEST_LONG):
# what follows the flow is bindery's and storage's, the same behind any
# server (tests/e2e/direct_hardening.sh runs its cases through mod_fcgid).
#
# The flow a browser runs: POST /documents/direct, PUT the file to
# upload_url with exactly the headers the answer lists, POST finalize; the
# document then reads back byte-identical and is listed.  The SAS is
# create-only for one blob: Azurite refuses (403) every other use of it,
# before and after the upload: another name, a read, a listing, tags, a
# delete, an overwrite.  Bytes forced over a finalized blob with the
# account key are never served (500 bytes_changed) and `bindery audit`
# reports the document.  Nothing the client sets is trusted: tags and
# metadata it sends change nothing; a wrong size or declared sha256 is 422
# and nothing becomes ready.  409 name_taken naming the caller's pending
# direct upload, 413, 401, another owner's finalize (404), a finalize
# before any upload (409 not_uploaded), Idempotency-Key retries, and
# direct = false (404 direct_disabled, through the responder run as CGI).
#
# Then the sweeper, through lighttpd (MariaDB and Azurite looked at
# directly): a direct intent is never claimed before its lease ends, even
# by --older-than 0; once expired (expires_at moved back with SQL, said
# so) a blob never finalized is deleted and the rows dropped; a finalize
# killed after recording (ETag, size, SHA-256), or after its tag flip, is
# rolled forward, a create
# killed after writing its intent leaves rows the sweep drops; a
# recorded intent whose blob was overwritten since is deleted with
# If-Match, never made a document.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/direct.sh"

chaos_need_stack
need_stack BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_TOKEN_OTHER BINDERY_TEST_BIN
sql_session	# one client for the script's queries (tests/lib/db.sh)
command -v jq >/dev/null || missing "jq is needed to read the answers' headers object"
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
RUN=dr$$x$RANDOM
OTHER=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN_OTHER")
JSON=(-H 'Content-Type: application/json')
# finalize has no body; lighttpd wants a POST's length said (411 otherwise).
NOBODY=(-H 'Content-Length: 0')
KIB=1024
head -c $((300 * KIB + 11)) /dev/urandom >"$work/file"
head -c $((300 * KIB + 11)) /dev/urandom >"$work/intruder"
head -c 5000 /dev/urandom >"$work/small"
FILE_SIZE=$(stat -c %s "$work/file")
single_put_max=$(sed -n 's/^single_put_max *= *//p' "$BINDERY_CONFIG" | tail -n 1)
single_put_max=${single_put_max:-4M}
case $single_put_max in
*M) single_put_max=$((${single_put_max%M} * KIB * KIB)) ;;
*K) single_put_max=$((${single_put_max%K} * KIB)) ;;
esac

sweep_cutoff=$(sed -n 's/^sweep_cutoff *= *//p' "$BINDERY_CONFIG" | tail -n 1)
sweep_cutoff=${sweep_cutoff:-900}
audit() { "$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" audit --json --prefix "$1" 2>/dev/null; }

for server in lighttpd pool apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	pool) url=$BINDERY_TEST_APACHE_POOL_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac
	s=$server
	sum=$(sha "$work/file")

	# ---- the flow ----
	direct_create "$url" "$RUN-$s-a" "$FILE_SIZE" "" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 201 "$s: POST /documents/direct answers 201"
	like "$ID" '^[0-9]+$' "$s: ... with the document's id"
	is "$FINALIZE" "/documents/$ID/finalize" "$s: ... its finalize_url"
	like "$(printf '%s' "$HTTP_BODY" | jq -r .expires_at)" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' \
		"$s: ... an RFC 3339 expires_at"
	blob=$(blob_of "$ID")
	like "$UPLOAD_URL" "/$CHAOS_CONTAINER/$blob\?" "$s: ... an upload_url for exactly the intent's blob"
	like "$UPLOAD_URL" '[?&]sp=c(&|$)' "$s: ... whose SAS may create only (sp=c)"
	like "$UPLOAD_URL" '[?&]sr=b(&|$)' "$s: ... one blob (sr=b)"
	is "$(printf '%s' "$HTTP_BODY" | jq -r '.headers | [."x-ms-blob-type", ."x-ms-tags", ."If-None-Match", ."Content-Type"] | join("|")')" \
		'BlockBlob|state=pending|*|application/x-test' "$s: ... and the headers to send"
	expires=$(printf '%s' "$HTTP_BODY" | jq -r .expires_at)
	se=$(printf '%s' "$UPLOAD_URL" | sed -n 's/.*[?&]se=\([^&]*\).*/\1/p' | sed 's/%3A/:/g')
	is "$se" "$expires" "$s: ... the SAS expires (se) at expires_at"
	lease=$(sql "SELECT CAST(UNIX_TIMESTAMP(expires_at) AS SIGNED) FROM blobs WHERE name = '$blob'")
	# The database's NOW(6) is read a moment after the SAS's clock: up to a second more.
	after=$((lease - $(date -u -d "$expires" +%s) - 300 - sweep_cutoff))
	ok "[ $after -ge 0 ] && [ $after -le 1 ]" \
		"$s: ... and the intent's lease ends 300 s + sweep_cutoff after it (+$after s)"
	origin=$url
	code=$(curl -s -o /dev/null -D "$work/preflight" -w '%{http_code}' -X OPTIONS -H "Origin: $origin" \
		-H 'Access-Control-Request-Method: PUT' \
		-H 'Access-Control-Request-Headers: x-ms-blob-type,x-ms-tags,if-none-match,content-type' "$UPLOAD_URL")
	is "$code" 200 "$s: storage's CORS preflight for the page's origin ($origin) passes"
	like "$(tr -d '\r' <"$work/preflight" | tr 'A-Z' 'a-z')" "access-control-allow-origin: $origin" \
		"$s: ... allowing that origin"
	code=$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: http://evil.example' \
		-H 'Access-Control-Request-Method: PUT' "$UPLOAD_URL")
	is "$code" 403 "$s: ... and refused for another origin (403)"
	other_name=$(printf '%s' "$UPLOAD_URL" | sed "s|/$blob?|/${blob}x?|")
	container_url=$(printf '%s' "$UPLOAD_URL" | sed "s|/$blob?|?restype=container\&comp=list\&|")
	is "$(sas_call PUT "$other_name" -H 'x-ms-blob-type: BlockBlob' --data-binary "@$work/small")" 403 \
		"$s: the SAS cannot create another blob name (403)"
	is "$(sas_call GET "$container_url")" 403 "$s: ... cannot list the container (403)"

	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 409 "$s: finalize before any upload: 409"
	is "$(jfield "$HTTP_BODY" error)" not_uploaded "$s: ... not_uploaded"

	is "$(direct_put "$work/file")" 201 "$s: PUT to upload_url with exactly those headers: 201"
	is "$(sas_call GET "$UPLOAD_URL")" 403 "$s: the SAS cannot read the blob (403)"
	is "$(sas_call PUT "$UPLOAD_URL&comp=tags" -H 'Content-Type: application/xml' \
		--data-binary '<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><Tag><Key>state</Key><Value>committed</Value></Tag></TagSet></Tags>')" \
		403 "$s: ... cannot set its tags (403)"
	is "$(sas_call DELETE "$UPLOAD_URL")" 403 "$s: ... cannot delete it (403)"
	is "$(sas_call PUT "$UPLOAD_URL" -H 'x-ms-blob-type: BlockBlob' --data-binary "@$work/intruder")" 403 \
		"$s: ... cannot overwrite it before finalize, without If-None-Match (403)"

	req POST "$url$FINALIZE" "${NOBODY[@]}" "${OTHER[@]}"
	is "$HTTP_CODE" 404 "$s: another owner's finalize: 404"
	req POST "$url$FINALIZE" "${NOBODY[@]}"
	is "$HTTP_CODE" 401 "$s: finalize without credentials: 401"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 200 "$s: finalize: 200"
	is "$(jfield "$HTTP_BODY" sha256)" "$sum" "$s: ... with the SHA-256 of the bytes it read"
	is "$(jfield "$HTTP_BODY" size)" "$FILE_SIZE" "$s: ... and their size"
	first=$HTTP_BODY
	req GET "$url/documents/$ID"
	is "$HTTP_BODY" "$first" "$s: ... the JSON GET /documents/ID answers"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE $HTTP_BODY" "200 $first" "$s: a second finalize answers the same (idempotent)"
	is "$(sql "SELECT blob_etag FROM documents WHERE id = $ID")" "$(etag_of "$blob")" \
		"$s: the document is pinned to the blob's ETag"
	curl -s -o "$work/got" "$url/documents/$ID/content"
	cmp -s "$work/got" "$work/file"; ok $? "$s: the content reads back byte-identical"
	req GET "$url/documents?name=$RUN-$s-a"
	like "$HTTP_BODY" "\"id\":\"$ID\"" "$s: the document is listed"
	# Neither mod_fcgid nor the pool adds anything to what follows but how
	# it carries a body: the flow up to here, the rest under --long.
	[ "$server" != lighttpd ] && [ -z "${BINDERY_TEST_LONG:-}" ] && continue
	"$blobtool" stat "$blob" >"$work/stat"
	like "$(cat "$work/stat")" 'tags=1 ' "$s: the blob carries one tag"
	is "$(direct_put "$work/intruder")" 403 "$s: a second PUT to upload_url after finalize: 403 from storage"
	is "$(sas_call PUT "$UPLOAD_URL" -H 'x-ms-blob-type: BlockBlob' --data-binary "@$work/intruder")" 403 \
		"$s: ... and without If-None-Match storage refuses it (403)"

	# An overwrite with the account key is never served, and audit sees it.
	rw=$("$blobtool" sas "$blob" rw 300)
	# Tagged committed as it was, as a leak would leave it: the outbox
	# re-tags a blob only from the tag it expects (etag_pin.sh does the same).
	is "$(sas_call PUT "$rw" -H 'x-ms-blob-type: BlockBlob' -H 'x-ms-tags: state=committed' \
		--data-binary "@$work/intruder")" 201 "$s: the blob is overwritten with the account key's SAS"
	code=$(curl -s -o "$work/got" -w '%{http_code}' "$url/documents/$ID/content")
	is "$code" 500 "$s: the download is refused (500)"
	is "$(jfield "$(cat "$work/got")" error)" bytes_changed "$s: ... as bytes_changed"
	out=$(audit "$blob"); rc=$?
	is "$rc" 2 "$s: bindery audit exits 2"
	like "$out" '"kind": "dangling"' "$s: ... reporting the document"
	req DELETE "$url/documents/$ID" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 204 "$s: the changed document can be deleted"

	# ---- nothing the client sets is trusted ----
	head -c 4000 /dev/urandom >"$work/lie"
	direct_create "$url" "$RUN-$s-lie" 3999 "" "${CHAOS_AUTH[@]}"
	PUT_HEADERS=(-H 'x-ms-blob-type: BlockBlob' -H 'x-ms-tags: state=committed' -H 'If-None-Match: *')
	is "$(direct_put "$work/lie" "" -H "x-ms-meta-sha256: $(sha "$work/lie")" -H 'x-ms-meta-size: 3999')" 201 \
		"$s: a PUT tagged committed with metadata claiming size and sha256 lands"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 422 "$s: ... finalize reads the real size: 422"
	is "$(jfield "$HTTP_BODY" error)" size_mismatch "$s: ... size_mismatch"
	req GET "$url/documents/$ID"
	is "$HTTP_CODE" 404 "$s: ... the document is not visible"
	is "$(sql "SELECT status FROM documents WHERE id = $ID")" pending "$s: ... and stays pending"

	direct_create "$url" "$RUN-$s-sha" 5000 "$(sha "$work/file")" "${CHAOS_AUTH[@]}"
	is "$(direct_put "$work/small")" 201 "$s: a PUT of other bytes than the declared sha256"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 422 "$s: ... finalize: 422"
	is "$(jfield "$HTTP_BODY" error)" sha256_mismatch "$s: ... sha256_mismatch"
	req GET "$url/documents?name=$RUN-$s-sha"
	unlike "$HTTP_BODY" "\"id\":\"$ID\"" "$s: ... not listed"
	is "$(sql "SELECT COALESCE(etag, 'NULL') FROM blobs WHERE name = '$(blob_of "$ID")'")" NULL \
		"$s: ... and nothing recorded for the sweeper to roll forward"

	direct_create "$url" "$RUN-$s-okh" 5000 "$(sha "$work/small")" "${CHAOS_AUTH[@]}"
	PUT_HEADERS+=(-H 'x-ms-meta-sha256: 0000000000000000000000000000000000000000000000000000000000000000')
	is "$(direct_put "$work/small")" 201 "$s: a PUT with a false sha256 metadata"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 200 "$s: ... finalize with the declared (true) sha256: 200"
	is "$(jfield "$HTTP_BODY" sha256)" "$(sha "$work/small")" "$s: ... the hash it computed, not the metadata"
	"$blobtool" stat "$(blob_of "$ID")" >"$work/stat"
	like "$(cat "$work/stat")" 'tags=1 ' "$s: ... one tag left on the blob: bindery's"
	out=$(audit "$(blob_of "$ID")"); rc=$?
	is "$rc" 0 "$s: ... and bindery audit, comparing by ETag, finds it clean"

	# ---- refusals ----
	direct_create "$url" "$RUN-$s-hold" 100 "" "${CHAOS_AUTH[@]}"
	held=$FINALIZE
	direct_create "$url" "$RUN-$s-hold" 100 "" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 409 "$s: a name held by a pending direct upload: 409"
	is "$(jfield "$HTTP_BODY" error)" name_taken "$s: ... name_taken"
	is "$(printf '%s' "$HTTP_BODY" | jq -r .upload)" "$held" "$s: ... naming the caller's upload"
	req POST "$url/documents?name=$RUN-$s-hold" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/small"
	is "$HTTP_CODE" 409 "$s: ... and POST /documents of that name: 409 too"
	direct_create "$url" "$RUN-$s-big" $((single_put_max + 1)) "" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 413 "$s: a size over single_put_max: 413"
	like "$(printf '%s' "$HTTP_BODY" | jq -r .message)" '/uploads' "$s: ... pointing at /uploads (tus)"
	direct_create "$url" "$RUN-$s-huge" $((1 << 50)) "" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 413 "$s: a size over max_upload: 413"
	direct_create "$url" "$RUN-$s-anon" 100 ""
	is "$HTTP_CODE" 401 "$s: no credentials: 401"
	printf '{"name": "x", "size": ' >"$work/bad.json"
	req POST "$url/documents/direct" "${CHAOS_AUTH[@]}" "${JSON[@]}" --data-binary "@$work/bad.json"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_json" "$s: bad JSON: 400 bad_json"
	direct_create "$url" "$RUN-$s-neg" -1 "" "${CHAOS_AUTH[@]}"
	is "$HTTP_CODE" 400 "$s: a negative size: 400"
	direct_create "$url" "$RUN/$s/slash" 100 "" "${CHAOS_AUTH[@]}"
	like "$HTTP_CODE $(jfield "$HTTP_BODY" error)" '^(201|400 bad_name)' "$s: the name rules of POST /documents"

	direct_create "$url" "$RUN-$s-key" 100 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k"
	first_id=$ID first_blob=$(blob_of "$ID")
	direct_create "$url" "$RUN-$s-key" 100 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k"
	is "$HTTP_CODE $ID" "201 $first_id" "$s: a retry with the same Idempotency-Key answers the same intent"
	like "$UPLOAD_URL" "/$first_blob\?" "$s: ... for the same blob"
	direct_create "$url" "$RUN-$s-key2" 100 "" "${CHAOS_AUTH[@]}" -H "Idempotency-Key: $RUN-$s-k"
	is "$HTTP_CODE" 422 "$s: ... the key with another name: 422"
done

# direct = false: the responder as a CGI program with such a config.
sed -e 's/^direct = .*/direct = false/' "$BINDERY_CONFIG" >"$work/off.conf"
printf '{"name": "%s-off", "size": 5}' "$RUN" >"$work/off.json"
cgi_run "$work/off.out" "$work/off.conf" POST /documents/direct CONTENT_TYPE=application/json \
	CONTENT_LENGTH="$(stat -c %s "$work/off.json")" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	<"$work/off.json"
is "$CGI_CODE" 404 "direct = false: POST /documents/direct answers 404"
is "$(jfield "$(cgi_body "$work/off.out")" error)" direct_disabled "... direct_disabled"

# bindery cors: its usage.
"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" cors --help >"$work/cors.help" 2>&1
is "$?" 0 "bindery cors --help exits 0"
like "$(cat "$work/cors.help")" 'usage: bindery cors ORIGIN' "... and says how"
"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" cors >/dev/null 2>&1
is "$?" 64 "bindery cors without an origin: usage (64)"
"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" cors 'http://a.example,http://b.example' >/dev/null 2>&1
is "$?" 64 "... an origin with a comma: usage (64), nothing set"

# ---- the sweeper ----
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
chaos_snapshot "$work/before"
url=$CHAOS_URL

direct_create "$url" "$RUN-sw-never" 5000 "" "${CHAOS_AUTH[@]}"
never_blob=$(blob_of "$ID")
is "$(direct_put "$work/small")" 201 "sweep: a direct upload never finalized"
direct_create "$url" "$RUN-sw-empty" 5000 "" "${CHAOS_AUTH[@]}"
empty_blob=$(blob_of "$ID")
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
blob_exists "$never_blob"; ok $? "sweep --older-than 0 before the lease ends: the blob stays"
is "$(rows_of "$never_blob") $(rows_of "$empty_blob")" "2 2" "... and the rows of both intents"
expire_intent "$never_blob"
expire_intent "$empty_blob"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
blob_exists "$never_blob"; isnt $? 0 "once expired: the blob never finalized is deleted"
is "$(rows_of "$never_blob")" 0 "... its rows dropped"
is "$(rows_of "$empty_blob")" 0 "an expired intent without a blob: its rows dropped"

printf 'direct.after_intent exit once\n' >"$FP"
direct_create "$url" "$RUN-sw-intent" 5000 "" "${CHAOS_AUTH[@]}"
: >"$FP"
isnt "$HTTP_CODE" 201 "crash: a create killed after its intent was written gets no SAS"
intent_blob=$(sql "SELECT blob_name FROM documents WHERE name = '$RUN-sw-intent'")
is "$(rows_of "$intent_blob")" 2 "... its pending rows are there"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
is "$(rows_of "$intent_blob")" 2 "... and stay before the lease ends"
expire_intent "$intent_blob"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
is "$(rows_of "$intent_blob")" 0 "... the sweep drops them once it has"

direct_create "$url" "$RUN-sw-crash" "$FILE_SIZE" "" "${CHAOS_AUTH[@]}"
crash_blob=$(blob_of "$ID") crash_id=$ID
is "$(direct_put "$work/file")" 201 "crash: uploaded"
printf 'direct.after_record exit once\n' >"$FP"
req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
isnt "$HTTP_CODE" 200 "crash: finalize killed after recording the triple"
: >"$FP"
is "$(sql "SELECT CONCAT(status, ' ', (SELECT etag IS NOT NULL FROM blobs WHERE name = '$crash_blob')) FROM documents WHERE id = $crash_id")" \
	"pending 1" "... the document pending, the triple recorded"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
is "$(sql "SELECT status FROM documents WHERE id = $crash_id")" pending "... not swept before its lease ends"
expire_intent "$crash_blob"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
req GET "$url/documents/$crash_id"
is "$HTTP_CODE" 200 "... once expired the sweep rolls it forward"
is "$(jfield "$HTTP_BODY" sha256)" "$(sha "$work/file")" "... with the recorded SHA-256"
curl -s -o "$work/got" "$url/documents/$crash_id/content"
cmp -s "$work/got" "$work/file"; ok $? "... and the document reads back byte-identical"
"$blobtool" stat "$crash_blob" >"$work/stat"
like "$(cat "$work/stat")" 'tags=1 ' "... its blob tagged by bindery"

direct_create "$url" "$RUN-sw-tagged" 5000 "" "${CHAOS_AUTH[@]}"
tagged_blob=$(blob_of "$ID") tagged_id=$ID
is "$(direct_put "$work/small")" 201 "crash after the tag: uploaded"
printf 'direct.after_tag exit once\n' >"$FP"
req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
: >"$FP"
isnt "$HTTP_CODE" 200 "... finalize killed after tagging the blob committed"
is "$(sql "SELECT status FROM documents WHERE id = $tagged_id")" pending "... the document still pending"
expire_intent "$tagged_blob"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
req GET "$url/documents/$tagged_id/content"
is "$HTTP_CODE" 200 "... once expired the sweep rolls it forward, readable"

direct_create "$url" "$RUN-sw-changed" "$FILE_SIZE" "" "${CHAOS_AUTH[@]}"
changed_blob=$(blob_of "$ID") changed_id=$ID
is "$(direct_put "$work/file")" 201 "changed: uploaded"
printf 'direct.after_record exit once\n' >"$FP"
req POST "$url$FINALIZE" "${NOBODY[@]}" "${CHAOS_AUTH[@]}"
: >"$FP"
is "$(sql "SELECT etag IS NOT NULL FROM blobs WHERE name = '$changed_blob'")" 1 "changed: the triple recorded"
rw=$("$blobtool" sas "$changed_blob" rw 300)
is "$(sas_call PUT "$rw" -H 'x-ms-blob-type: BlockBlob' --data-binary "@$work/intruder")" 201 \
	"... then the blob overwritten (another ETag)"
expire_intent "$changed_blob"
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
blob_exists "$changed_blob"; isnt $? 0 "... the sweep deletes it"
is "$(rows_of "$changed_blob")" 0 "... drops the rows"
req GET "$url/documents/$changed_id"
is "$HTTP_CODE" 404 "... and no document appears"
is "$(chaos_verify "$RUN-sw" "$work/before" "$crash_id,$tagged_id")" "" \
	"MariaDB and Azurite agree: no orphan, nothing dangling, nothing stuck"

# Leave nothing for the tests after this one: every intent of this run
# expired and swept (blobs deleted with If-Match), the documents deleted
# and the outbox drained.
sql "UPDATE blobs b JOIN documents d ON d.blob_name = b.name SET b.expires_at = NOW(6) - INTERVAL 1 SECOND
     WHERE d.name LIKE '$RUN-%' AND d.status = 'pending'"
for id in $(sql "SELECT id FROM documents WHERE name LIKE '$RUN-%' AND status = 'ready'"); do
	curl -s -o /dev/null "${CHAOS_AUTH[@]}" -X DELETE "$url/documents/$id"
done
chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
is "$SWEEP_RC" 0 "a last sweep resolves everything this run left, exit 0"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$RUN-%'")" 0 "... no document of this run is left"
done_testing
