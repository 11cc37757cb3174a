#!/usr/bin/env bash
# Events ([events]): document.ready and document.deleted written in the
# transaction of the change, delivered as Standard Webhooks to a loopback
# receiver (tests/tools/webhook_receiver.py) that checks every signature
# with Python's hmac: the independent implementation.
#
#   - create, replace, delete each arrive at once, signed, with the
#     document's id, version, owner, name, size, type and SHA-256;
#   - the receiver down during three changes of one document: the answers
#     are not held, the events wait, and the first sweep once it is back
#     (and their backoff has come) delivers them in version order;
#   - a responder stopped between its commit and its post (failpoint): the
#     sweep delivers the event; a 500: retried with the same webhook-id and
#     a fresh timestamp; a slow receiver: the answer waits at most the
#     timeout; a redirect is not followed; a 410 stops the receiver until
#     `bindery events --resume`; past max_age a delivery is dead, listed by
#     `bindery events --dead` and re-queued by --requeue;
#   - concurrent replaces of one document arrive in version order; two
#     sweepers deliver each waiting event exactly once between them;
#   - two receivers, each checking its own secret; a sweep sends only to
#     the receivers its configuration names, and with --prefix only its own
#     documents' events; delivered events pruned after the retention;
#   - without [events] nothing is written.
# Its documents live in a database of its own.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"
. "$here/../lib/webhook.sh"
. "$here/../lib/chaos.sh"

need_stack BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_VAR BINDERY_CONFIG \
	BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
work=$(mktemp -d -p "$BINDERY_TEST_VAR") || bail_out "no work directory"
chmod 0755 "$work"
DBNAME=bindery_events$$
PREFIX=ev-$$-
rx_pid= rx2_pid=
cleanup() {
	webhook_stop "$rx_pid"; webhook_stop "$rx2_pid"
	az_remove_prefix "$PREFIX"
	sql "DROP DATABASE IF EXISTS $DBNAME" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cli=$BINDERY_TEST_BIN/bindery
bearer="HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN"
export CGI_STDERR=$work/cgi.err

# ---- the receiver ----
webhook_start "$work/rx"
rx_pid=$WEBHOOK_PID hook=$WEBHOOK_URL ctl=$WEBHOOK_CTL
cp "$WEBHOOK_SECRET" "$work/secret"
mode() { webhook_mode "$ctl" "$1"; }
# received [JQ-FILTER]: the receiver's records (one JSON object a line).
received() { jq -rc "${1:-.}" "$work/rx/rx.events" 2>/dev/null; }

# conf NAME LINES...: our database, the stack's storage, [events] LINES.
conf() {
	local name=$1
	shift
	{
		sed -e '/^[;#]/d' -e "s|^name = bindery\$|name = $DBNAME|" "$BINDERY_TEST_MIGRATE_CONFIG"
		printf '[storage]\nprefix = %s\n' "$PREFIX"
		printf '%s\n' "$@"
	} >"$work/$name.conf"
	chmod 0600 "$work/$name.conf"
}
conf plain
conf ev '[events]' 'backoff_max = 1' "url = $hook" "secret_file = $work/secret" 'timeout = 2' 'max_age = 3600'
sql "CREATE DATABASE $DBNAME CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci" ||
	bail_out "cannot create database $DBNAME"
"$cli" -c "$work/ev.conf" migrate >"$work/migrate.out" 2>&1
ok $? "migrate ($(tail -n 1 "$work/migrate.out"))"

# create NAME FILE [CONF [VAR=VALUE...]]: sets ID, CODE.
create() {
	local name=$1 file=$2 conf=${3:-ev}
	shift 3 2>/dev/null || shift $#
	cgi_run "$work/c.out" "$work/$conf.conf" POST "/documents?name=${PREFIX}$name" "$bearer" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH="$(stat -c %s "$file")" "$@" <"$file"
	CODE=$CGI_CODE
	ID=$(jfield "$(cgi_body "$work/c.out")" id)
}
replace() { # ID FILE [CONF]
	cgi_run "$work/r.out" "$work/${3:-ev}.conf" PUT "/documents/$1/content" "$bearer" CONTENT_TYPE=text/plain \
		CONTENT_LENGTH="$(stat -c %s "$2")" <"$2"
	CODE=$CGI_CODE
}
sweep() { "$cli" -c "$work/${1:-ev}.conf" -v sweep >"$work/sweep.out" 2>&1; }
printf 'version one\n' >"$work/v1"
printf 'version two, longer\n' >"$work/v2"
printf 'three\n' >"$work/v3"

# ---- create, replace, delete: at once, signed, the document's facts ----
create doc "$work/v1"
is "$CODE" 201 "create ($(cgi_body "$work/c.out" | head -c 160))"
doc=$ID
is "$(received "select(.body.data.id == \"$doc\") | [.valid, .body.type, .body.data.version] | @csv")" \
	'true,"document.ready",1' "document.ready arrived before the answer, its signature valid (Python's hmac)"
ev=$(received "select(.body.data.id == \"$doc\")" | head -n 1)
is "$(printf '%s' "$ev" | jq -r '[.body.data.name, .body.data.owner, .body.data.size, .body.data.content_type] | @tsv')" \
	"$(printf '%s\tdemo\t12\ttext/plain' "${PREFIX}doc")" "... with the name, owner, size and type"
is "$(printf '%s' "$ev" | jq -r .body.data.sha256)" "$(sha256sum "$work/v1" | cut -d' ' -f1)" "... and the SHA-256"
like "$(printf '%s' "$ev" | jq -r .webhook_id)" '^msg_[0-9a-f]{32}$' "... its webhook-id random, not a counter"
replace "$doc" "$work/v2"
is "$CODE" 200 "replace"
is "$(received "select(.body.data.id == \"$doc\") | .body.data.version" | tr '\n' ' ')" "1 2 " \
	"document.ready of version 2 arrived"
cgi_run "$work/d.out" "$work/ev.conf" DELETE "/documents/$doc" "$bearer" </dev/null
is "$CGI_CODE" 204 "delete"
is "$(received "select(.body.data.id == \"$doc\") | .body.type" | tail -n 1)" 'document.deleted' \
	"document.deleted arrived"
is "$(received 'select(.valid | not)' | wc -l)" 0 "every event so far was validly signed"

# A bound on a responder's time is the same work's time with the receiver
# answering at once, measured just before (a loaded machine slows both):
# base NAME sets BASE, the seconds of one create whose post is answered.
base() {
	local t0
	t0=$(date +%s.%N)
	create "$1" "$work/v1"
	BASE=$(echo "$(date +%s.%N) - $t0" | bc)
}

# ---- the receiver down: nothing held, nothing lost, order kept ----
base base-down
mode '{"mode": "down"}'
t0=$(date +%s.%N)
create down "$work/v1"
is "$CODE" 201 "receiver down: create answers 201"
down=$ID
replace "$down" "$work/v2"
is "$CODE" 200 "... replace answers 200"
replace "$down" "$work/v3"
t1=$(date +%s.%N)
# Held for the timeout, they would take 6 s more than three answered ones.
ok "[ \$(echo \"$t1 - $t0 < 3 * $BASE + 3\" | bc) = 1 ]" \
	"... three changes in $(echo "$t1 - $t0" | bc) s, one create with an answered post $BASE s: a refused connection holds nothing"
is "$("$cli" -c "$work/ev.conf" events --json | jq .pending)" 3 "bindery events: 3 pending"
mode '{"mode": "ok"}'
sleep 1.2	# the backoff (backoff_max = 1 s) comes due
sweep
ok $? "sweep ($(head -c 300 "$work/sweep.out"))"
is "$(received "select(.body.data.id == \"$down\") | .body.data.version" | tr '\n' ' ')" "1 2 3 " \
	"the first sweep after the receiver returned delivered all three, in version order"
like "$(cat "$work/sweep.out")" 'events: 3 delivered' "... and says so"

# ---- a responder stopped between commit and post: the sweep delivers ----
create failpoint "$work/v1" ev BINDERY_FAILPOINTS=events.after_commit=error
is "$CODE" 201 "create with the post skipped (failpoint events.after_commit)"
fp=$ID
is "$(received "select(.body.data.id == \"$fp\")" | wc -l)" 0 "... nothing arrived"
sweep
is "$(received "select(.body.data.id == \"$fp\") | .body.type")" 'document.ready' "... the sweep delivered it"

# ---- a crash: rolled forward gets its event, never ready gets none ----
create rolled "$work/v1" ev BINDERY_FAILPOINTS=create.after_tag=exit
is "$CGI_RC" 137 "a create dies after its tag flip (the client saw no answer)"
rolled=$(sql "SELECT id FROM $DBNAME.documents WHERE name = '${PREFIX}rolled'")
create never "$work/v1" ev BINDERY_FAILPOINTS=create.after_intent=exit
never=$(sql "SELECT id FROM $DBNAME.documents WHERE name = '${PREFIX}never'")
"$cli" -c "$work/ev.conf" sweep --older-than 0 --force >"$work/sweep.out" 2>&1
is "$(sql "SELECT status FROM $DBNAME.documents WHERE id = ${rolled:-0}")" ready "the sweep rolled the first forward"
is "$(received "select(.body.data.id == \"$rolled\") | .body.type")" 'document.ready' \
	"... and its document.ready arrived"
is "$(sql "SELECT COUNT(*) FROM $DBNAME.documents WHERE id = ${never:-0}")" 0 "the sweep dropped the other"
is "$(received "select(.body.data.id == \"$never\")" | wc -l)" 0 "... which never became ready: no event"

# ---- 500: retried, same webhook-id, a fresh timestamp ----
mode '{"mode": "status", "status": 500}'
create five "$work/v1"
five=$ID
mode '{"mode": "ok"}'
sleep 1.2
sweep
is "$(received "select(.body.data.id == \"$five\") | [.status, .attempt] | @csv" | tr '\n' ' ')" "500,1 204,2 " \
	"a 500, then the sweep's retry: the receiver saw the same webhook-id twice"
is "$(received "select(.body.data.id == \"$five\") | .timestamp" | sort -u | wc -l)" 2 \
	"... each attempt signed afresh with its own timestamp"

# ---- slow: the answer waits at most the timeout (2 s) ----
base base-slow
mode '{"mode": "slow", "delay": 6}'
t0=$(date +%s.%N)
create slow "$work/v1"
t1=$(date +%s.%N)
slow=$ID
is "$CODE" 201 "a slow receiver: create answers 201"
# The receiver answers after 6 s: past 2 s + a create, the timeout did not hold.
ok "[ \$(echo \"$t1 - $t0 < $BASE + 3.5\" | bc) = 1 ]" \
	"... after $(echo "$t1 - $t0" | bc) s, a create with an answered post $BASE s: not held past the timeout (2 s)"
mode '{"mode": "ok"}'
sleep 1.2
sweep
is "$(received "select(.body.data.id == \"$slow\" and .status == 204) | .body.type" | head -n 1)" \
	'document.ready' "... and the sweep delivered it"
# The slow attempt itself ends at the receiver 6 s after it began: wait for
# its record, so the counts below are not disturbed by it.
for _ in $(seq 1 100); do
	[ "$(received "select(.body.data.id == \"$slow\")" | wc -l)" -ge 2 ] && break
	sleep 0.1
done

# ---- a redirect is not followed ----
mode '{"mode": "redirect"}'
before=$(received | wc -l)
create redirect "$work/v1"
redir=$ID
is "$(($(received | wc -l) - before))" 1 "a 307 from the receiver: one request, not followed"
mode '{"mode": "ok"}'
sleep 1.2
sweep

# ---- 410: the receiver stopped until resumed ----
mode '{"mode": "gone"}'
create gone "$work/v1"
gone=$ID
"$cli" -c "$work/ev.conf" events >"$work/events.out" 2>&1
is "$?" 1 "410: bindery events exits 1"
like "$(cat "$work/events.out")" '1 receivers stopped' "... and names the stopped receiver"
mode '{"mode": "ok"}'
create after-gone "$work/v1"
ag=$ID
sleep 1.2
sweep
is "$(received "select(.body.data.id == \"$ag\" or .body.data.id == \"$gone\") | .status" | grep -c 204)" 0 \
	"... nothing is sent to it, by responders or the sweep"
"$cli" -c "$work/ev.conf" events --resume "$hook" >/dev/null
ok $? "bindery events --resume URL"
sweep
is "$(received "select(.status == 204 and (.body.data.id == \"$ag\" or .body.data.id == \"$gone\")) | .body.data.id" | tr -d '"' | tr '\n' ' ')" \
	"$gone $ag " "... then the sweep delivers both, oldest first"

# ---- dead past max_age, listed, re-queued ----
conf short '[events]' 'backoff_max = 1' "url = $hook" "secret_file = $work/secret" 'timeout = 2' 'max_age = 1'
mode '{"mode": "status", "status": 503}'
create dead "$work/v1" short
dead=$ID
sleep 2.2
sweep short
like "$(cat "$work/sweep.out")" 'events: 0 delivered, 0 retried, 1 dead' "past max_age the sweep gives it up"
"$cli" -c "$work/short.conf" events --dead >"$work/dead.out"
like "$(cat "$work/dead.out")" "dead msg_[0-9a-f]+ document.ready document $dead .*last 503" \
	"bindery events --dead lists it, with the receiver's last answer"
mode '{"mode": "ok"}'
"$cli" -c "$work/short.conf" events --requeue >/dev/null
sweep short
is "$(received "select(.body.data.id == \"$dead\") | .status" | tail -n 1)" 204 "--requeue: the next sweep delivers it"

# ---- concurrent replaces arrive in version order ----
create race "$work/v1"
race=$ID
pids=()
for i in 1 2 3 4 5 6; do
	printf 'racer %s\n' "$i" >"$work/race$i"
	cgi_run "$work/race$i.out" "$work/ev.conf" PUT "/documents/$race/content" "$bearer" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH="$(stat -c %s "$work/race$i")" <"$work/race$i" &
	pids+=($!)
done
wait "${pids[@]}"	# (not a bare wait: the receiver is a child too)
sweep
versions=$(received "select(.body.data.id == \"$race\" and .status == 204) | .body.data.version" | tr '\n' ' ')
final=$(sql "SELECT version FROM $DBNAME.documents WHERE id = $race")
is "$versions" "$(seq 1 "$final" | tr '\n' ' ')" "six concurrent replaces: every version arrived once, in order"

# ---- two sweepers: each waiting event exactly once ----
mode '{"mode": "down"}'
for i in $(seq 1 12); do create "two-$i" "$work/v1"; done
mode '{"mode": "ok"}'
sleep 1.2
"$cli" -c "$work/ev.conf" sweep >"$work/s1.out" 2>&1 &
s1=$!
"$cli" -c "$work/ev.conf" sweep >"$work/s2.out" 2>&1 &
wait "$s1" $!
got=$(received "select(.body.data.name | startswith(\"${PREFIX}two-\")) | .webhook_id" | sort | uniq -c |
	awk '{ print $1 }' | sort -u | tr '\n' ' ')
is "$got" "1 " "two sweepers: each of the 12 events reached the receiver exactly once"
is "$(received "select((.body.data.name | startswith(\"${PREFIX}two-\")) and .status == 204)" | wc -l)" 12 \
	"... all 12 delivered"

# ---- two receivers, each its own secret; a sweep serves only its own ----
webhook_start "$work/rx2"
rx2_pid=$WEBHOOK_PID ctl2=$WEBHOOK_CTL
received2() { jq -rc "${1:-.}" "$work/rx2/rx.events" 2>/dev/null; }
conf two '[events]' 'backoff_max = 1' "url = $hook" "secret_file = $work/secret" 'timeout = 2' \
	"url = $WEBHOOK_URL" "secret_file = $WEBHOOK_SECRET" 'timeout = 2'
create pair "$work/v1" two
pair=$ID
is "$(received "select(.body.data.id == \"$pair\") | .valid")" true \
	"two receivers: the first checks the event with its own secret"
is "$(received2 "select(.body.data.id == \"$pair\") | .valid")" true "... and so does the second, with its own"
webhook_mode "$ctl2" '{"mode": "down"}'
create pair2 "$work/v1" two
pair2=$ID
webhook_mode "$ctl2" '{"mode": "ok"}'
sleep 1.2
sweep ev
is "$(received2 "select(.body.data.id == \"$pair2\")" | wc -l)" 0 \
	"the second down: a sweep whose configuration names only the first sends it nothing"
is "$(sql "SELECT d.state FROM $DBNAME.event_deliveries d JOIN $DBNAME.events e ON e.id = d.event_id
	WHERE e.document_id = $pair2 AND d.endpoint = SHA2('$WEBHOOK_URL', 256)")" pending "... its delivery waits"
sweep two
is "$(received2 "select(.body.data.id == \"$pair2\") | [.valid, .status] | @csv")" 'true,204' \
	"... the sweep of a configuration that names it delivers it"
is "$(received "select(.body.data.id == \"$pair2\")" | wc -l)" 1 "... and the first received it once"
kill "$rx2_pid" 2>/dev/null

# ---- sweep --prefix: only its own documents' events ----
# (--prefix narrows by blob name: each document written under a prefix of its own)
for p in pa pb; do
	sed "s|^prefix = ${PREFIX}\$|prefix = ${PREFIX}$p-|" "$work/ev.conf" >"$work/$p.conf"
done
mode '{"mode": "down"}'
create pa-1 "$work/v1" pa
pa=$ID
create pb-1 "$work/v1" pb
pb=$ID
mode '{"mode": "ok"}'
sleep 1.2
"$cli" -c "$work/ev.conf" sweep --prefix pa- >"$work/sweep.out" 2>&1
is "$(received "select(.status == 204 and (.body.data.id == \"$pa\" or .body.data.id == \"$pb\")) | .body.data.name" |
	tr -d '"' | tr '\n' ' ')" "${PREFIX}pa-1 " "sweep --prefix pa-: delivers pa-1's event, not pb-1's"
sweep
is "$(received "select(.status == 204 and .body.data.id == \"$pb\")" | wc -l)" 1 "... a whole sweep delivers pb-1's"

# ---- pruning: delivered events go after the retention, waiting ones stay ----
conf keep '[events]' 'backoff_max = 1' "url = $hook" "secret_file = $work/secret" 'timeout = 2' 'retention = 1'
mode '{"mode": "down"}'
create waiting "$work/v1" keep
waiting=$ID
mode '{"mode": "ok"}'
delivered_before=$(sql "SELECT COUNT(*) FROM $DBNAME.events e WHERE NOT EXISTS (SELECT 1 FROM
	$DBNAME.event_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')")
ok "[ ${delivered_before:-0} -gt 10 ]" "$delivered_before delivered events are kept before the retention passes"
sql "UPDATE $DBNAME.event_deliveries SET next_at = NOW(6) + INTERVAL 1 HOUR WHERE event_id IN
	(SELECT id FROM $DBNAME.events WHERE document_id = $waiting)"
sleep 1.1
"$cli" -c "$work/keep.conf" -v sweep >"$work/sweep.out" 2>&1
like "$(cat "$work/sweep.out")" 'events: .*[1-9][0-9]* pruned' "retention = 1: the sweep prunes ($(grep -o 'events:.*' "$work/sweep.out"))"
is "$(sql "SELECT COUNT(*) FROM $DBNAME.events e WHERE NOT EXISTS (SELECT 1 FROM
	$DBNAME.event_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')")" 0 "... every delivered event is gone"
is "$(sql "SELECT COUNT(*) FROM $DBNAME.event_deliveries d JOIN $DBNAME.events e ON e.id = d.event_id
	WHERE e.document_id = $waiting AND d.state = 'pending'")" 1 "... the one still waiting stays"

# ---- without [events], nothing is written ----
create plain "$work/v1" plain
is "$CODE" 201 "a create without [events]"
is "$(sql "SELECT COUNT(*) FROM $DBNAME.events WHERE document_id = $ID")" 0 "... writes no event"
is "$(received 'select(.valid | not)' | wc -l)" 0 "no event was ever badly signed"
unlike "$(cat "$work/cgi.err" "$work"/*.out 2>/dev/null)" "$(sed 's/^whsec_//' "$work/secret")" \
	"the receiver's secret is in no log"
az_remove_checked "$PREFIX"
done_testing
