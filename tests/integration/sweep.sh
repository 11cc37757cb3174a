#!/bin/bash
# sweep.sh - the crash table produced for real: bindery.fcgi (as a CGI
# program) is killed at each failpoint of lib/protocol/protocol.c, and `bindery
# sweep` must leave the documented outcome.  Needs a build with
# --enable-failpoints (skips otherwise) and the test stack.
top=${top_srcdir:-$(dirname "$0")/../..}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_DB_SOCKET BINDERY_TEST_TOKEN
sql_session	# one client for the script's queries (tests/lib/db.sh)
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "no bindery.fcgi in $BINDERY_TEST_BIN"
command -v jq >/dev/null || missing "jq is not installed"

bindery() { BINDERY_LOG_STDERR=1 "$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fire METHOD URI BODY [FAILPOINTS]: one request through bindery.fcgi as CGI
# with FAILPOINTS armed.  Sets CGI_RC (137 when a failpoint's exit fired).
fire() {
	printf '%s' "$3" >"$work/body"
	cgi_run "$work/answer" "$BINDERY_CONFIG" "$1" "$2" BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS="${4:-}" \
		CONTENT_LENGTH="$(stat -c %s "$work/body")" CONTENT_TYPE=text/plain \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$work/body"
}

RUN=swfp$$-$RANDOM
N=0
# blob_of DOCNAME: the blob the document row points at.
blob_of() { sql "SELECT blob_name FROM documents WHERE name = '$1'"; }
# rest BLOBNAME: the name without the configured prefix (what --prefix takes).
rest() {
	local prefix
	prefix=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | head -n 1)
	printf '%s' "${1#"$prefix"}"
}
# listed BLOBNAME: how many blobs the container has under exactly that name.
listed() { bindery audit --json --prefix "$(rest "$1")" | jq -r '.counts.blobs_listed'; }
# age BLOBNAME: make its registry row look abandoned (stale, leases and grace over).
age() {
	sql "UPDATE blobs SET touched_at = NOW(6) - INTERVAL 7200 SECOND,
		expires_at = IF(expires_at IS NULL, NULL, NOW(6) - INTERVAL 1 SECOND),
		lease_until = IF(lease_until IS NULL, NULL, NOW(6) - INTERVAL 1 SECOND),
		retire_after = IF(retire_after IS NULL, NULL, NOW(6) - INTERVAL 1 SECOND)
	     WHERE name = '$1'"
}
# sweep BLOBNAME: a sweep narrowed to that one name, so tests sharing the
# stack never sweep each other's states.
sweep() { bindery sweep --older-than 3600 --prefix "$(rest "$1")" >/dev/null 2>&1; }

# Probe: does this build have failpoints?
fire POST "/documents?name=$RUN-probe" probe "create.after_intent=exit"
[ "$CGI_RC" = 137 ] || missing "bindery.fcgi was built without --enable-failpoints"
probe_blob=$(blob_of "$RUN-probe")
age "$probe_blob"
sweep "$probe_blob"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-probe'")" 0 \
	"crash after 1 (create.after_intent): sweep drops the pending rows"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$probe_blob'")" 0 "and the registry row"

# crash after 2: blob uploaded, tagged pending
fire POST "/documents?name=$RUN-c2" "after upload" "create.after_upload=exit"
is "$CGI_RC" 137 "create.after_upload fired"
b=$(blob_of "$RUN-c2")
is "$(listed "$b")" 1 "crash after 2: the pending blob is there"
age "$b"
sweep "$b"
is "$(listed "$b")" 0 "crash after 2: sweep deleted the pending blob"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-c2'")" 0 "crash after 2: rows dropped"

# crash after 3 (create): tag flipped, never marked ready -> roll forward
fire POST "/documents?name=$RUN-c3" "after the tag flip" "create.after_tag=exit"
is "$CGI_RC" 137 "create.after_tag fired"
b=$(blob_of "$RUN-c3")
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-c3'")" pending "crash after 3: document pending"
age "$b"
sweep "$b"
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-c3'")" ready "crash after 3: rolled forward to ready"
is "$(sql "SELECT sha256 FROM documents WHERE name = '$RUN-c3'")" \
	"$(printf 'after the tag flip' | sha)" "with the SHA-256 of the bytes"
is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" committed "registry row committed"
id=$(sql "SELECT id FROM documents WHERE name = '$RUN-c3'")

# crash after 3 (replace): new blob committed-tagged, document not moved -> roll back
before=$(blob_of "$RUN-c3")
fire PUT "/documents/$id/content" "replacement" "replace.after_tag=exit"
is "$CGI_RC" 137 "replace.after_tag fired"
nb=$(sql "SELECT name FROM blobs WHERE document_id = $id AND purpose = 'replace' AND state = 'pending'")
isnt "$nb" "" "the replace's intent is pending"
is "$(listed "$nb")" 1 "its new blob is there"
age "$nb"
sweep "$nb"
is "$(listed "$nb")" 0 "replace crashed after 3: new blob rolled back (through the outbox)"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$nb'")" 0 "and its row dropped"
is "$(blob_of "$RUN-c3")" "$before" "the document still points at its old blob"
is "$(listed "$before")" 1 "and the old blob is intact"

# replace crashed after its upload (blob tagged pending)
fire PUT "/documents/$id/content" "replacement 2" "replace.after_upload=exit"
is "$CGI_RC" 137 "replace.after_upload fired"
nb=$(sql "SELECT name FROM blobs WHERE document_id = $id AND purpose = 'replace' AND state = 'pending'")
age "$nb"
sweep "$nb"
is "$(listed "$nb")" 0 "replace crashed after upload: pending blob deleted"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$nb'")" 0 "and its row dropped"

# delete committed, the process died: the old blob waits in the outbox
fire DELETE "/documents/$id" "" "delete.after_commit=exit"
is "$CGI_RC" 137 "delete.after_commit fired"
is "$(sql "SELECT state FROM blobs WHERE name = '$before'")" retired "deleted document's blob is retired"
age "$before"
sweep "$before"
is "$(listed "$before")" 0 "outbox: sweep deleted the retired blob"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$before'")" 0 "outbox: row dropped"

# (An outbox drain that died after re-tagging, and an intent whose sweeper
# died holding it, are planted by tests/integration/test_sweep.c: the
# responder refuses a stale If-Match before uploading, so no request can
# be cut there.)
# A lost certification (a Galera node's write set beaten by another's; a
# failpoint makes the transaction fail as db_set_lost_commit does) in the
# sweeper's two transactions: the whole transaction runs again
# (sweep_db.c, DB_IN_TX), up to DB_TXN_TRIES runs in all.
fp=$work/failpoints
# cert_sweep BLOBNAME: sweep it with $fp armed (-v: info lines are logged);
# CERT_RC, CERT_RETRIED (log lines).
cert_sweep() {
	BINDERY_FAILPOINTS_FILE=$fp bindery sweep -v --older-than 3600 --prefix "$(rest "$1")" \
		>"$work/cert.out" 2>"$work/cert.err"
	CERT_RC=$?
	CERT_RETRIED=$(grep -c 'transaction retried' "$work/cert.err")
}
fire POST "/documents?name=$RUN-cert1" "certification one" "create.after_upload=exit"
is "$CGI_RC" 137 "certification: create.after_upload fired"
b=$(blob_of "$RUN-cert1")
age "$b"
printf 'sweep.drop_certification error once\n' >"$fp"
cert_sweep "$b"
is "$CERT_RC" 0 "drop lost certification once: sweep exits 0"
is "$(grep -c drop_certification "$fp")" 0 "... the failpoint fired (and disarmed itself)"
is "$CERT_RETRIED" 1 "... the transaction ran again once"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$b'")" 0 "... and its second run dropped the row"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-cert1'")" 0 "... and the document"
is "$(listed "$b")" 0 "... and the pending blob is gone"

fire POST "/documents?name=$RUN-cert2" "certification two" "create.after_upload=exit"
b=$(blob_of "$RUN-cert2")
age "$b"
printf 'sweep.drop_certification error\n' >"$fp"
cert_sweep "$b"
is "$CERT_RC" 75 "drop losing certification every run: sweep exits 75 (try later)"
is "$CERT_RETRIED" 2 "... after three runs of the transaction (DB_TXN_TRIES)"
is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" sweeping "... the row stays claimed, nothing half done"
: >"$fp"
age "$b"
cert_sweep "$b"
is "$CERT_RC" 0 "a later run takes the claim over"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$b'")" 0 "... and drops the row"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-cert2'")" 0 "... and the document"

fire POST "/documents?name=$RUN-cert3" "certification three" "create.after_tag=exit"
is "$CGI_RC" 137 "certification: create.after_tag fired"
b=$(blob_of "$RUN-cert3")
age "$b"
printf 'sweep.roll_forward_certification error once\n' >"$fp"
cert_sweep "$b"
is "$CERT_RC" 0 "roll forward lost certification once: sweep exits 0"
is "$(grep -c roll_forward_certification "$fp")" 0 "... the failpoint fired"
is "$CERT_RETRIED" 1 "... the transaction ran again once"
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-cert3'")" ready "... and rolled the document forward"
is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" committed "... its row committed"
# Leave no committed blob behind (the rows go below; a later test's audit of
# the whole container would find it an orphan): delete it through bindery
# and drain it from the outbox.
fire DELETE "/documents/$(sql "SELECT id FROM documents WHERE name = '$RUN-cert3'")" ""
is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" retired "... deleted: its blob waits in the outbox"
age "$b"
sweep "$b"
is "$(listed "$b")" 0 "... and the sweep deleted it from storage"

# A lost commit: on a Galera node a COMMIT has been answered
# "committed" for a write set that did not take effect.  A failpoint makes
# one here (the COMMIT becomes a ROLLBACK answered as a success); each
# transaction reads back what it wrote (DB_IN_TX_CHECKED) and runs again.
# Without the check: a create's intent lost -> a blob no row names and no
# 201; its mark-ready lost -> a 201 for a pending document; a sweeper's
# drop lost -> the blob deleted under a row still claimed; its roll
# forward lost -> the document left pending.
# lost_fire METHOD URI BODY: fire with $fp armed (the file: "once" works).
lost_fire() {
	printf '%s' "$3" >"$work/body"
	CGI_STDERR=$work/lost.err cgi_run "$work/answer" "$BINDERY_CONFIG" "$1" "$2" BINDERY_LOG_STDERR=1 \
		BINDERY_FAILPOINTS_FILE="$fp" CONTENT_LENGTH="$(stat -c %s "$work/body")" CONTENT_TYPE=text/plain \
		HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$work/body"
}
for point in create.intent_commit_lost create.ready_commit_lost; do
	: >"$work/lost.err"
	printf '%s error once\n' "$point" >"$fp"
	lost_fire POST "/documents?name=$RUN-$point" "lost commit $point"
	is "$CGI_CODE" 201 "$point once: the create answers 201"
	is "$(grep -c "$point" "$fp")" 0 "... the failpoint fired"
	is "$(grep -c 'taken as a certification failure' "$work/lost.err")" 1 "... the check after COMMIT found it lost"
	is "$(sql "SELECT status, sha256 FROM documents WHERE name = '$RUN-$point'")" \
		"ready	$(printf 'lost commit %s' "$point" | sha)" "... the document is ready at once, with its bytes' SHA-256"
	b=$(blob_of "$RUN-$point")
	is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" committed "... its registry row committed"
	is "$(listed "$b")" 1 "... its blob there"
	fire DELETE "/documents/$(sql "SELECT id FROM documents WHERE name = '$RUN-$point'")" ""
	age "$b"
	sweep "$b"
done
: >"$work/lost.err"
fire POST "/documents?name=$RUN-lost-drop" "lost drop" "create.after_upload=exit"
b=$(blob_of "$RUN-lost-drop")
age "$b"
printf 'sweep.drop_commit_lost error once\n' >"$fp"
cert_sweep "$b"
is "$CERT_RC" 0 "a sweeper's drop whose commit was lost: sweep exits 0"
is "$(grep -c drop_commit_lost "$fp")" 0 "... the failpoint fired"
is "$(grep -c 'taken as a certification failure' "$work/cert.err")" 1 "... the check after COMMIT found it lost"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$b'")" 0 "... the second run dropped the row"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-lost-drop'")" 0 "... and the document"
is "$(listed "$b")" 0 "... and the blob is gone"
fire POST "/documents?name=$RUN-lost-fwd" "lost roll forward" "create.after_tag=exit"
b=$(blob_of "$RUN-lost-fwd")
age "$b"
printf 'sweep.roll_forward_commit_lost error once\n' >"$fp"
cert_sweep "$b"
is "$CERT_RC" 0 "a sweeper's roll forward whose commit was lost: sweep exits 0"
is "$(grep -c roll_forward_commit_lost "$fp")" 0 "... the failpoint fired"
is "$(sql "SELECT status FROM documents WHERE name = '$RUN-lost-fwd'")" ready "... the second run rolled the document forward"
is "$(sql "SELECT state FROM blobs WHERE name = '$b'")" committed "... its row committed"
fire DELETE "/documents/$(sql "SELECT id FROM documents WHERE name = '$RUN-lost-fwd'")" ""
age "$b"
sweep "$b"
is "$(listed "$b")" 0 "... (deleted and drained again)"

# A direct upload's intent whose commit was lost: its SAS would create a
# blob no row names; the read-back runs the transaction again.
sed -e 's/^direct = .*/direct = true/' "$BINDERY_CONFIG" >"$work/direct.conf"
grep -q '^direct = true$' "$work/direct.conf" || printf '\n[upload]\ndirect = true\n' >>"$work/direct.conf"
chmod 0600 "$work/direct.conf"
printf '{"name": "%s", "size": 5, "content_type": "text/plain"}' "$RUN-lost-direct" >"$work/body"
printf 'direct.intent_commit_lost error once\n' >"$fp"
: >"$work/lost.err"
CGI_STDERR=$work/lost.err cgi_run "$work/answer" "$work/direct.conf" POST /documents/direct BINDERY_LOG_STDERR=1 \
	BINDERY_FAILPOINTS_FILE="$fp" CONTENT_LENGTH="$(stat -c %s "$work/body")" CONTENT_TYPE=application/json \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$work/body"
is "$CGI_CODE" 201 "a direct upload's intent whose commit was lost: 201"
is "$(grep -c direct.intent_commit_lost "$fp")" 0 "... the failpoint fired"
is "$(grep -c 'taken as a certification failure' "$work/lost.err")" 1 "... the check after COMMIT found it lost"
b=$(blob_of "$RUN-lost-direct")
is "$(sql "SELECT CONCAT(state, ' ', route) FROM blobs WHERE name = '${b:-none}'")" "pending direct" \
	"... the intent its SAS names is in the registry"

sql "DELETE FROM blobs WHERE document_id IN (SELECT id FROM documents WHERE name LIKE '$RUN-%')" >/dev/null
sql "DELETE FROM documents WHERE name LIKE '$RUN-%'" >/dev/null
done_testing
