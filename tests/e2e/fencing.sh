#!/usr/bin/env bash
# Fencing (doc/design.md "The claim and the fence"):
# an idempotent resume races the original request's compensation.
#
#   R0 (Idempotency-Key K) writes its intent and is held at a failpoint
#      (create.after_intent sleep) past its lease.  The lease passing is
#      time travel in the database, said so: the intent's heartbeat
#      (touched_at) is moved a day back and its lease (expires_at) ended,
#      as tests/e2e/crash_matrix.sh does.
#   R1 (same key, same bytes) resumes: it takes the intent over, then is
#      held at resume.after_claim (sleep) while R0 wakes.
#   R0 wakes, reads the body and renews its lease right before its commit
#      (Put Blob): zero rows, so it stops there, answers 5xx and goes into
#      compensation, whose fenced claim loses too.  R1 holds the row now:
#      R0 must touch nothing, in storage (no blob under the name while R1
#      still holds) or in the database.
#   R1 wakes and finishes: 201.
#
# Then, in MariaDB and Azurite directly (tests/lib/chaos.sh), before any
# sweep: exactly one document for the name, ready; its blob committed,
# registered and holding the bytes; no registry row left pending; no orphan
# blob; R1's answer readable byte-identical.  Without fencing R0's
# compensation deleted the rows R1 had just renewed, and R1's committed
# blob became an orphan no sweep finds (R1 answered 503).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
sql_session	# one client for the script's queries (tests/lib/db.sh)
command -v curl >/dev/null || missing "curl is needed"
FENCE_FP=$BINDERY_TEST_VAR/failpoints
FENCE_RUN=fence$$x$RANDOM
fence_work=$(mktemp -d)
r0_pid= r1_pid=
cleanup() {
	: >"$FENCE_FP" 2>/dev/null
	[ -n "$r0_pid" ] && kill "$r0_pid" 2>/dev/null
	[ -n "$r1_pid" ] && kill "$r1_pid" 2>/dev/null
	chaos_stop_private
	rm -rf "$fence_work"
}
trap cleanup EXIT
chaos_failpoint_responder "$FENCE_FP" || bail_out "no responder that reads $FENCE_FP"
URL=$CHAOS_URL

# R0's hold (ms) ends well after R1 has taken over (about a second in) and
# well before R1's hold ends, so R0 compensates while R1 holds the row.
R0_HOLD_MS=3500
R1_HOLD_MS=7500

head -c 70000 /dev/urandom >"$fence_work/body.bin"
name="$FENCE_RUN-doc"
key="$FENCE_RUN-key"
chaos_snapshot "$fence_work/before" || bail_out "cannot list Azurite"

# post OUT-PREFIX: the create with key K, in the background; the status
# code lands in OUT-PREFIX.code and the body in OUT-PREFIX.body.
post() {
	curl -s -m 60 -o "$1.body" -w '%{http_code}' "${CHAOS_AUTH[@]}" \
		-H 'Content-Type: application/x-fence' -H "Idempotency-Key: $key" \
		--data-binary "@$fence_work/body.bin" "$URL/documents?name=$name" >"$1.code"
}

# fired NAME: the "once" line for NAME is gone from the failpoints file.
fired() { ! grep -q "^$1 " "$FENCE_FP" 2>/dev/null; }

intent_written() {
	[ "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")" = 1 ]
}

printf '%s\n' "create.after_intent sleep:$R0_HOLD_MS once" \
	"resume.after_claim sleep:$R1_HOLD_MS once" >"$FENCE_FP.tmp" && mv -f "$FENCE_FP.tmp" "$FENCE_FP"

post "$fence_work/r0" &
r0_pid=$!
ok "$(wait_for 20 intent_written; echo $?)" "R0 wrote its intent and is held at create.after_intent"
sql "UPDATE blobs b JOIN documents d ON d.blob_name = b.name SET b.touched_at = b.touched_at - INTERVAL 1 DAY,
     b.expires_at = NOW(6) - INTERVAL 1 SECOND
     WHERE d.name = $(sql_quote "$name") AND b.state = 'pending'"
blob_name=$(sql "SELECT blob_name FROM documents WHERE name = $(sql_quote "$name")")

post "$fence_work/r1" &
r1_pid=$!
ok "$(wait_for 20 fired resume.after_claim; echo $?)" "R1 took the intent over and is held at resume.after_claim"
ok "$(kill -0 "$r0_pid" 2>/dev/null; echo $?)" "R0 is still held when R1 holds the row (the race is staged)"

wait "$r0_pid"
r0_pid=
r0_code=$(cat "$fence_work/r0.code")
ok "$(kill -0 "$r1_pid" 2>/dev/null; echo $?)" "R0 answered while R1 still holds the row"
az_list >"$fence_work/r0-done" || bail_out "cannot list Azurite"
is "$(awk -v n="$blob_name" '$1 == n' "$fence_work/r0-done")" "" \
	"R0 stopped at its lease renewal before the commit: no blob under the name"
like "$r0_code" '^5[0-9][0-9]$' "R0, which lost its row, answers 5xx ($r0_code)"
wait "$r1_pid"
r1_pid=
r1_code=$(cat "$fence_work/r1.code")
is "$r1_code" 201 "R1, the resume, succeeds"
r1_body=$(cat "$fence_work/r1.body")
r1_id=$(jfield "$r1_body" id)

# Everything as the two requests left it, before any sweep.
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")" 1 \
	"exactly one document for the name"
is "$(sql "SELECT CONCAT(id, ' ', status, ' ', blob_name) FROM documents WHERE name = $(sql_quote "$name")")" \
	"${r1_id:-none} ready $blob_name" "it is R1's document, ready, on the intent's blob"
is "$(sql "SELECT state FROM blobs WHERE name = $(sql_quote "$blob_name")")" committed \
	"the blob's registry row is committed"
az_list >"$fence_work/after" || bail_out "cannot list Azurite"
is "$(awk -v n="$blob_name" '$1 == n { print $3 " " $4 }' "$fence_work/after")" \
	"committed $(sha "$fence_work/body.bin")" "the blob is tagged committed and its metadata has the body's SHA-256"
problems=$(chaos_verify "$FENCE_RUN-" "$fence_work/before")
is "$problems" "" "no stuck row, no dangling document, no orphan blob (MariaDB and Azurite)"
curl -s -m 60 -o "$fence_work/read.bin" "$URL/documents/${r1_id:-0}/content"
ok "$(cmp -s "$fence_work/read.bin" "$fence_work/body.bin"; echo $?)" "R1's document reads back byte-identical"
is "$(sql "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = $(sql_quote "$key")")" 1 \
	"the key is still there (a retry replays, never creates)"

# ---- two replaces racing with one If-Match ------------------------------------
# Both pass the early If-Match check, then are held inside their commit
# transaction right after reading the document (replace.commit_after_read
# sleep, one "once" line each), so both have read the same version when
# they change it: one 200, one 412 (doc/design.md "Past one machine": the
# commit is UPDATE ... WHERE id = ? AND version = ? AND status = 'ready',
# one row; no SELECT ... FOR UPDATE serialises them).  The loser's new blob
# goes out through the outbox.  After a sweep (grace periods
# time-travelled), nothing of either is left but the winner's document.
chaos_snapshot "$fence_work/before2" || bail_out "cannot list Azurite"
rname="$FENCE_RUN-r-doc"
head -c 3000 /dev/urandom >"$fence_work/orig.bin"
head -c 4000 /dev/urandom >"$fence_work/put1.bin"
head -c 5000 /dev/urandom >"$fence_work/put2.bin"
req POST "$URL/documents?name=$rname" "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-fence' \
	--data-binary "@$fence_work/orig.bin"
is "$HTTP_CODE" 201 "a document to replace"
rid=$(jfield "$HTTP_BODY" id)
etag=$(header etag)
like "$etag" '^"[0-9]+-1"$' "its ETag ($etag)"
put() { # N: replace with putN.bin under If-Match $etag; code in putN.code
	curl -s -m 60 -o "$fence_work/put$1.body" -w '%{http_code}' "${CHAOS_AUTH[@]}" -X PUT \
		-H "If-Match: $etag" -H 'Content-Type: application/x-fence' \
		--data-binary "@$fence_work/put$1.bin" "$URL/documents/${rid:-0}/content" >"$fence_work/put$1.code"
}
# The hold must outlast the other request's way to the same read: on a
# loaded 2-core machine that once took more than 2.5 s (the second request
# then read after the first had committed, and the race was never staged).
RACE_HOLD_MS=5000
printf '%s\n' "replace.commit_after_read sleep:$RACE_HOLD_MS once" "replace.commit_after_read sleep:$RACE_HOLD_MS once" >"$FENCE_FP.tmp" &&
	mv -f "$FENCE_FP.tmp" "$FENCE_FP"
put 1 &
p1=$!
put 2 &
p2=$!
wait "$p1" "$p2"
ok "$(fired replace.commit_after_read; echo $?)" "both replaces read the document in their commit (both passed If-Match)"
: >"$FENCE_FP"
codes=$(printf '%s\n' "$(cat "$fence_work/put1.code")" "$(cat "$fence_work/put2.code")" | sort | tr '\n' ' ')
is "$codes" "200 412 " "one replace wins (200), the other is refused (412)"
winner=1
[ "$(cat "$fence_work/put2.code")" = 200 ] && winner=2
req GET "$URL/documents/${rid:-0}" "${CHAOS_AUTH[@]}"
like "$(header etag)" '^"[0-9]+-2"$' "the document moved one version ($(header etag))"
curl -s -m 60 -o "$fence_work/read2.bin" "$URL/documents/${rid:-0}/content"
ok "$(cmp -s "$fence_work/read2.bin" "$fence_work/put$winner.bin"; echo $?)" "it holds the winner's bytes"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id = ${rid:-0} AND state IN ('pending', 'sweeping')")" 0 \
	"no intent of either replace is left pending"
sql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND WHERE document_id = ${rid:-0} AND state = 'retired'"
{ cat "$BINDERY_CONFIG"; } >"$fence_work/cli.conf"
chmod 0600 "$fence_work/cli.conf"
chaos_sweep "$fence_work/cli.conf" "$fence_work/sweep.log"
is "$SWEEP_RC" 0 "a sweep drains the outbox"
problems=$(chaos_verify "$FENCE_RUN-r-" "$fence_work/before2")
is "$problems" "" "after the sweep: no leftover row, no orphan blob of either replace, the document intact"

# ---- two deletes racing -------------------------------------------------------
# Both read the document in their commit, then delete on that version: one
# 204, one 404, the blob retired once.
del() { # N
	curl -s -m 60 -o /dev/null -w '%{http_code}' "${CHAOS_AUTH[@]}" -X DELETE \
		"$URL/documents/${rid:-0}" >"$fence_work/del$1.code"
}
printf '%s\n' "delete.commit_after_read sleep:$RACE_HOLD_MS once" "delete.commit_after_read sleep:$RACE_HOLD_MS once" >"$FENCE_FP.tmp" &&
	mv -f "$FENCE_FP.tmp" "$FENCE_FP"
del 1 &
p1=$!
del 2 &
p2=$!
wait "$p1" "$p2"
ok "$(fired delete.commit_after_read; echo $?)" "both deletes read the document in their commit"
: >"$FENCE_FP"
codes=$(printf '%s\n' "$(cat "$fence_work/del1.code")" "$(cat "$fence_work/del2.code")" | sort | tr '\n' ' ')
is "$codes" "204 404 " "one delete wins (204), the other finds nothing (404)"
is "$(sql "SELECT COUNT(*) FROM documents WHERE id = ${rid:-0}")" 0 "the document is gone"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id = ${rid:-0} AND state NOT IN ('retired', 'deleting')")" 0 \
	"its blob is in the outbox, nothing else of it is left"
done_testing
