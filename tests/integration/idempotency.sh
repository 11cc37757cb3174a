#!/usr/bin/env bash
# idempotency.sh - Idempotency-Key keeps I4 for its whole TTL:
# bindery.fcgi runs as a CGI program against the test stack's
# MariaDB and Azurite, is killed at failpoints, and the key's row is read
# straight from MariaDB.
#   - the answer is recorded in the transaction that makes the document
#     ready (a kill right after it cannot lose it), and by the sweeper's
#     roll forward, and by a replay that finds an older unanswered key;
#   - a retry after the document was deleted (before and after the outbox
#     drained) or replaced gets the recorded answer, never a second document;
#   - a finished key past idempotency_ttl is a new request; an unfinished one
#     never expires;
#   - `bindery sweep` forgets finished keys past the TTL, in batches, and
#     keeps unfinished and fresh ones; --dry-run only counts them;
#   - Content-Type is part of the fingerprint: 422 for another type.
# Time travel is done in the database and said so: a key's created_at and a
# registry row's touched_at/retire_after are moved into the past.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_DB_SOCKET BINDERY_TEST_TOKEN
sql_session	# one client for the script's queries (tests/lib/db.sh)
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "no bindery.fcgi in $BINDERY_TEST_BIN"

work=$(mktemp -d)
RUN=idem$$x$RANDOM
SEEN_IDS=''	# every document id a create of this test made, for the clean-up
cleanup() {
	sql "DELETE FROM idempotency_keys WHERE idem_key LIKE '$RUN-%'" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
export CGI_STDERR=$work/stderr

bindery() { BINDERY_LOG_STDERR=1 "$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" "$@"; }

# The TTL the stack's configuration gives (the default when it names none).
IDEM_TTL=$(sed -n 's/^idempotency_ttl *= *//p' "$BINDERY_CONFIG" | tail -n 1)
IDEM_TTL=${IDEM_TTL:-86400}

# post NAME FILE CTYPE KEY [FAILPOINTS]: a raw create through bindery.fcgi as
# CGI.  Sets CGI_RC (137 when a failpoint's exit fired), CGI_CODE and BODY.
post() {
	cgi_run "$work/answer" "$BINDERY_CONFIG" POST "/documents?name=$1" BINDERY_LOG_STDERR=1 \
		BINDERY_FAILPOINTS="${5:-}" CONTENT_LENGTH="$(stat -c %s "$2")" CONTENT_TYPE="$3" \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" HTTP_IDEMPOTENCY_KEY="$4" <"$2"
	BODY=$(cgi_body "$work/answer")
	SEEN_IDS="$SEEN_IDS $(doc_id "$1")"
}
# put ID FILE: replace a document's bytes.
put() {
	cgi_run "$work/answer" "$BINDERY_CONFIG" PUT "/documents/$1/content" BINDERY_LOG_STDERR=1 \
		CONTENT_LENGTH="$(stat -c %s "$2")" CONTENT_TYPE=application/x-idem \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$2"
}
# delete ID: delete a document.
delete() {
	cgi_run "$work/answer" "$BINDERY_CONFIG" DELETE "/documents/$1" BINDERY_LOG_STDERR=1 \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null
}
# key_row KEY: "status version size sha256" of the key's recorded answer ("-" for NULL).
key_row() {
	sql "SELECT CONCAT_WS(' ', COALESCE(status_code, '-'), COALESCE(answer_version, '-'),
		COALESCE(answer_size, '-'), COALESCE(sha256, '-'))
	     FROM idempotency_keys WHERE idem_key = '$1'"
}
key_count() { sql "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = '$1'"; }
# age_key KEY SECONDS: the key was created SECONDS ago.
age_key() {
	sql "UPDATE idempotency_keys SET created_at = NOW(6) - INTERVAL $2 SECOND WHERE idem_key = '$1'"
}
doc_id() { sql "SELECT id FROM documents WHERE name = '$1'"; }
doc_count() { sql "SELECT COUNT(*) FROM documents WHERE name = '$1'"; }
blob_of() { sql "SELECT blob_name FROM documents WHERE name = '$1'"; }
# rest BLOBNAME: the name without the configured prefix (what --prefix takes).
rest() {
	local prefix
	prefix=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | head -n 1)
	printf '%s' "${1#"$prefix"}"
}
# age BLOBNAME: its registry row looks abandoned (stale, grace over).
age() {
	sql "UPDATE blobs SET touched_at = NOW(6) - INTERVAL 7200 SECOND,
		expires_at = IF(expires_at IS NULL, NULL, NOW(6) - INTERVAL 1 SECOND),
		retire_after = IF(retire_after IS NULL, NULL, NOW(6) - INTERVAL 1 SECOND)
	     WHERE name = '$1'"
}
# sweep BLOBNAME [ARGS...]: a sweep narrowed to that one name, so tests
# sharing the stack never sweep each other's rows.  Output in $work/sweep.out.
sweep() {
	local b=$1
	shift
	bindery sweep --older-than 3600 --prefix "$(rest "$b")" "$@" >"$work/sweep.out" 2>&1
}
# replayed FILE ID DESC: one test: the answer is 201 with document ID
# holding FILE's bytes (the recorded answer).
replayed() {
	if [ "$CGI_CODE" = 201 ] && [ "$(jfield "$BODY" id)" = "$2" ] &&
		[ "$(jfield "$BODY" sha256)" = "$(sha "$1")" ]; then
		pass "$3"
	else
		fail "$3"
		diag "  answered $CGI_CODE $BODY"
	fi
}

head -c 3000 /dev/urandom >"$work/a.bin"
head -c 4000 /dev/urandom >"$work/b.bin"

# Does this build have failpoints?  (./dev test always builds them; a plain
# `make check` does not, and then the crash cases are skipped, said so.)
if grep -q 'create\.after_ready' "$BINDERY_TEST_BIN/bindery.fcgi"; then
	failpoints=1
else
	failpoints=
fi

# ---- the answer is recorded with the ready transaction --------------------------------

if [ -n "$failpoints" ]; then
	# Killed right after the ready transaction committed: nothing of the
	# request runs after it, so the answer must already be in the key.
	post "$RUN-ready" "$work/a.bin" application/x-idem "$RUN-k1" create.after_ready=exit
	is "$CGI_RC" 137 "create.after_ready fired (the responder died after marking the document ready)"
	id1=$(doc_id "$RUN-ready")
	is "$(key_row "$RUN-k1")" "201 1 3000 $(sha "$work/a.bin")" \
		"the key's answer was recorded in the ready transaction"

	# Deleted, the old blob still in the outbox: the recorded answer.
	delete "$id1"
	is "$CGI_CODE" 204 "the document is deleted"
	post "$RUN-ready" "$work/a.bin" application/x-idem "$RUN-k1"
	replayed "$work/a.bin" "$id1" "a retry after the delete answers the recorded 201 (document $id1)"
	is "$(doc_count "$RUN-ready")" 0 "... and creates no document"

	# The outbox drained: the registry row is gone too.  Still the answer.
	b=$(sql "SELECT name FROM blobs WHERE document_id = $id1")
	age "$b"
	sweep "$b"
	is "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id = $id1")" 0 "the outbox drained the old blob"
	post "$RUN-ready" "$work/a.bin" application/x-idem "$RUN-k1"
	replayed "$work/a.bin" "$id1" "a retry after the outbox drained answers the recorded 201"
	is "$(doc_count "$RUN-ready")" 0 "... and still no second document"

	# Replaced after a kill at the same point: the answer is the first version.
	post "$RUN-repl" "$work/a.bin" application/x-idem "$RUN-k2" create.after_ready=exit
	is "$CGI_RC" 137 "create.after_ready fired again"
	id2=$(doc_id "$RUN-repl")
	put "$id2" "$work/b.bin"
	is "$CGI_CODE" 200 "the document is replaced"
	post "$RUN-repl" "$work/a.bin" application/x-idem "$RUN-k2"
	replayed "$work/a.bin" "$id2" "a retry after the replace answers the recorded 201"
	like "$BODY" "\"etag\":\"\\\\\"$id2-1\\\\\"\"" "... with the first version's ETag"
	is "$(doc_count "$RUN-repl")" 1 "... and one document with that name"
	is "$(sql "SELECT sha256 FROM documents WHERE id = $id2")" "$(sha "$work/b.bin")" \
		"... which keeps the replaced bytes"

	# Killed after the tag flip: the sweeper rolls the create forward and
	# records the answer in the same transaction.
	post "$RUN-fwd" "$work/a.bin" application/x-idem "$RUN-k3" create.after_tag=exit
	is "$CGI_RC" 137 "create.after_tag fired"
	id3=$(doc_id "$RUN-fwd")
	b=$(blob_of "$RUN-fwd")
	age "$b"
	sweep "$b"
	is "$(sql "SELECT status FROM documents WHERE id = $id3")" ready "the sweeper rolled the create forward"
	is "$(key_row "$RUN-k3")" "201 1 3000 $(sha "$work/a.bin")" "... and recorded the key's answer with it"
	delete "$id3"
	age "$b"
	sweep "$b"
	post "$RUN-fwd" "$work/a.bin" application/x-idem "$RUN-k3"
	replayed "$work/a.bin" "$id3" "a retry after deleting the rolled-forward document answers the recorded 201"
	is "$(doc_count "$RUN-fwd")" 0 "... and creates no document"
else
	skip "bindery.fcgi was built without --enable-failpoints: no crash cases" 19
fi

# An older bindery recorded the answer after the ready transaction and could
# lose it: such a key (planted by clearing the answer) is answered from the
# document and recorded by that replay.
post "$RUN-old" "$work/a.bin" application/x-idem "$RUN-k4"
is "$CGI_CODE" 201 "a create with a key"
id4=$(jfield "$BODY" id)
sql "UPDATE idempotency_keys SET status_code = NULL, sha256 = NULL, answer_size = NULL,
	answer_content_type = NULL, answer_created_at = NULL, answer_version = NULL
     WHERE idem_key = '$RUN-k4'"
post "$RUN-old" "$work/a.bin" application/x-idem "$RUN-k4"
replayed "$work/a.bin" "$id4" "an unanswered key of a ready document replays it"
is "$(key_row "$RUN-k4")" "201 1 3000 $(sha "$work/a.bin")" "... and the replay recorded the answer"

# A key whose answer an older bindery kept only as JSON it could not convert
# (no answer fields), for a document since deleted: a stable 404, no document.
post "$RUN-legacy" "$work/a.bin" application/x-idem "$RUN-k5"
id5=$(jfield "$BODY" id)
sql "UPDATE idempotency_keys SET answer_version = NULL WHERE idem_key = '$RUN-k5'"
delete "$id5"
post "$RUN-legacy" "$work/a.bin" application/x-idem "$RUN-k5"
is "$CGI_CODE" 404 "a retry of a finished key without answer fields whose document is gone: 404"
post "$RUN-legacy" "$work/a.bin" application/x-idem "$RUN-k5"
is "$CGI_CODE" 404 "... every time"
is "$(doc_count "$RUN-legacy")" 0 "... and no document is created"

# ---- Content-Type joins the fingerprint ------------------------------------------------

post "$RUN-type" "$work/a.bin" text/plain "$RUN-k6"
is "$CGI_CODE" 201 "a create as text/plain"
id6=$(jfield "$BODY" id)
post "$RUN-type" "$work/a.bin" application/octet-stream "$RUN-k6"
is "$CGI_CODE" 422 "the same key, name and bytes as application/octet-stream: 422"
is "$(jfield "$BODY" error)" idempotency_mismatch "... idempotency_mismatch"
is "$(sql "SELECT content_type FROM documents WHERE id = $id6")" text/plain "... and the document is unchanged"
post "$RUN-type" "$work/a.bin" text/plain "$RUN-k6"
replayed "$work/a.bin" "$id6" "the same type again replays"

if [ -n "$failpoints" ]; then
	# An unfinished key (the request died after its upload) is the same.
	post "$RUN-type2" "$work/a.bin" text/plain "$RUN-k7" create.after_upload=exit
	is "$CGI_RC" 137 "create.after_upload fired"
	age "$(blob_of "$RUN-type2")"
	post "$RUN-type2" "$work/a.bin" application/octet-stream "$RUN-k7"
	is "$CGI_CODE" 422 "resuming an unfinished key with another Content-Type: 422"
	is "$(sql "SELECT status FROM documents WHERE name = '$RUN-type2'")" pending "... and the intent is left alone"
	post "$RUN-type2" "$work/a.bin" text/plain "$RUN-k7"
	is "$CGI_CODE" 201 "the same type resumes and finishes"
else
	skip "bindery.fcgi was built without --enable-failpoints: no crash cases" 4
fi

# ---- the TTL --------------------------------------------------------------------------

post "$RUN-ttl" "$work/a.bin" application/x-idem "$RUN-k8"
is "$CGI_CODE" 201 "a create with a key"
id8=$(jfield "$BODY" id)
age_key "$RUN-k8" $((IDEM_TTL - 60))
post "$RUN-ttl-2" "$work/a.bin" application/x-idem "$RUN-k8"
is "$CGI_CODE" 422 "within the TTL the key is bound to its request (another name: 422)"
age_key "$RUN-k8" $((IDEM_TTL + 1))
post "$RUN-ttl-2" "$work/a.bin" application/x-idem "$RUN-k8"
is "$CGI_CODE" 201 "past the TTL the same key starts a new create"
id8b=$(jfield "$BODY" id)
isnt "$id8b" "$id8" "... of a new document"
is "$(sql "SELECT document_id FROM idempotency_keys WHERE idem_key = '$RUN-k8'")" "$id8b" \
	"... and the key now answers for it"
post "$RUN-ttl-2" "$work/a.bin" application/x-idem "$RUN-k8"
replayed "$work/a.bin" "$id8b" "a retry of the new request replays the new answer"

if [ -n "$failpoints" ]; then
	post "$RUN-unf" "$work/a.bin" application/x-idem "$RUN-k9" create.after_upload=exit
	is "$CGI_RC" 137 "create.after_upload fired (an unfinished key)"
	age_key "$RUN-k9" $((IDEM_TTL * 2))
	post "$RUN-unf" "$work/a.bin" application/x-idem "$RUN-k9"
	is "$CGI_CODE" 409 "an unfinished key never expires: its intent is still in progress (409)"
	is "$(doc_count "$RUN-unf")" 1 "... and no second document was started"
else
	skip "bindery.fcgi was built without --enable-failpoints: no crash cases" 2
fi

# ---- bindery sweep forgets finished keys past the TTL ------------------------------------

post "$RUN-old-1" "$work/a.bin" application/x-idem "$RUN-k10"
b10=$(blob_of "$RUN-old-1")
post "$RUN-fresh" "$work/a.bin" application/x-idem "$RUN-k11"
b11=$(blob_of "$RUN-fresh")
age_key "$RUN-k10" $((IDEM_TTL + 60))
age_key "$RUN-k11" $((IDEM_TTL - 60))
sweep "$b10" --dry-run
like "$(cat "$work/sweep.out")" "would forget 1 finished idempotency key" "sweep --dry-run reports the expired key"
is "$(key_count "$RUN-k10")" 1 "... and keeps it"
sweep "$b10" -v --batch 1
like "$(cat "$work/sweep.out")" ' 1 keys expired' "sweep forgets the finished key past the TTL"
is "$(key_count "$RUN-k10")" 0 "... which is gone"
is "$(doc_count "$RUN-old-1")" 1 "... and its document stays"
sweep "$b11" -v
is "$(key_count "$RUN-k11")" 1 "a finished key within the TTL stays"
if [ -n "$failpoints" ]; then
	b9=$(sql "SELECT blob_name FROM idempotency_keys WHERE idem_key = '$RUN-k9'")
	sweep "$b9" -v
	is "$(key_count "$RUN-k9")" 1 "an unfinished key older than the TTL stays (it follows its intent)"
else
	skip "bindery.fcgi was built without --enable-failpoints: no unfinished key" 1
fi

# Leave nothing behind: the documents deleted through the API, every blob
# they ever had drained from the outbox, the abandoned intent swept.
ids=$( { sql "SELECT id FROM documents WHERE name LIKE '$RUN-%'"; printf '%s\n' $SEEN_IDS; } |
	sort -u | sed '/^$/d' | tr '\n' ',' | sed -e 's/,$//')
for id in $(sql "SELECT id FROM documents WHERE name LIKE '$RUN-%' AND status = 'ready'"); do
	delete "$id"
done
for b in $(sql "SELECT name FROM blobs WHERE document_id IN (${ids:-0})"); do
	age "$b"
	sweep "$b"
done
is "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id IN (${ids:-0})")" 0 \
	"clean-up: every registry row of this test is gone (blobs deleted through the sweeper)"
done_testing
