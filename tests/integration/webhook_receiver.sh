#!/usr/bin/env bash
# tests/integration/webhook_receiver.sh — tests/tools/webhook_receiver.py
# accepts what a Standard Webhooks sender signs and refuses the rest, and
# its modes answer as they say, so bindery's deliveries can be judged by
# it.  Driven with curl and openssl alone: the signatures are made here by
# hand (openssl dgst's HMAC, base64), not by bindery's code under test.
# Needs no stack: the receiver is all there is.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || missing "$PY is not installed"
for tool in curl openssl base64 od; do
	command -v "$tool" >/dev/null || missing "$tool is not installed"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/webhook_receiver.XXXXXX") || bail_out "mktemp -d failed"
recv_pid= slow_pid=
cleanup() {
	local pid
	for pid in $recv_pid $slow_pid; do kill "$pid" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

# The key, as bytes in a file; the secret as an admin's file holds it.
head -c 24 /dev/urandom >"$work/key.bin"
head -c 24 /dev/urandom >"$work/other.bin"
hexkey=$(od -An -v -tx1 "$work/key.bin") hexkey=${hexkey//[$' \n']/}
otherkey=$(od -An -v -tx1 "$work/other.bin") otherkey=${otherkey//[$' \n']/}
secret=whsec_$(base64 -w0 "$work/key.bin")
printf '%s\n' "$secret" >"$work/secret"

"$PY" "$here/../tools/webhook_receiver.py" --port-file "$work/port" \
	--control-port-file "$work/cport" --secret-file "$work/secret" \
	--log "$work/receiver.log" --events "$work/events" 2>"$work/receiver.err" &
recv_pid=$!
wait_for 10 test -s "$work/port" ||
	bail_out "webhook_receiver.py did not start: $(head -c 500 "$work/receiver.err")"
port=$(<"$work/port") cport=$(<"$work/cport")
base=http://127.0.0.1:$port control_url=http://127.0.0.1:$cport/_control
ok '[ "$port" != "$cport" ] && [ -n "$cport" ]' "it listens on two ports, the receiver's and the control's"

# sign ID TS [HEXKEY]: the v1 signature of ID.TS.<body.json> in $SIG.
sign() {
	printf '%s.%s.' "$1" "$2" >"$work/signed"
	cat "$work/body.json" >>"$work/signed"
	openssl dgst -sha256 -mac HMAC -macopt "hexkey:${3:-$hexkey}" -binary \
		-out "$work/sig.bin" "$work/signed" || bail_out "openssl dgst -mac HMAC failed"
	SIG=$(base64 -w0 "$work/sig.bin")
}
# deliver ID TS SIGNATURE-HEADER [PATH]: POST body.json to the receiver.
deliver() {
	req POST "$base${4:-/hooks/bindery}" -H 'Content-Type: application/json' \
		-H "webhook-id: $1" -H "webhook-timestamp: $2" -H "webhook-signature: $3" \
		--data-binary @"$work/body.json"
}
# event: the events file's last line in $EVENT.
event() {
	local lines
	mapfile -t lines <"$work/events"
	EVENT=${lines[-1]-}
}
# fields NAME...: the event's top-level fields, space-separated.  The
# first occurrence (jfield takes the last): the body, which may have a
# "timestamp" of its own, comes after all but status and attempt.
fields() {
	local f out='' re
	for f in "$@"; do
		re="\"$f\":\"?([^\",}]*)"
		[[ $EVENT =~ $re ]] && out+=" ${BASH_REMATCH[1]}"
	done
	printf '%s\n' "${out# }"
}
control() { req POST "$control_url" -H 'Content-Type: application/json' --data-binary "$1"; }

printf '{"type":"document.created","timestamp":"2025-01-01T00:00:00Z","data":{"id":"doc-%s"}}' "$$" \
	>"$work/body.json"
body=$(<"$work/body.json")
id=msg_first_$$

# --- signatures -------------------------------------------------------------
t1=$EPOCHSECONDS
sign "$id" "$t1"
good=$SIG
deliver "$id" "$t1" "v1,$good"
event
is "$HTTP_CODE" 204 "a correctly signed event: 204"
is "$(fields path webhook_id timestamp valid status attempt content_type)" \
	"/hooks/bindery $id $t1 true 204 1 application/json" "... recorded valid, attempt 1, with its path, id and timestamp"
ok '[[ $EVENT == *"\"body\":$body,"* ]] && [[ $EVENT != *why* ]]' "... its body parsed as JSON, and no why"
r=$(fields received)
ok '[[ $r =~ ^[0-9]+\.[0-9]+$ ]] && [ "${r%.*}" -ge "$t1" ] && [ "${r%.*}" -le $((t1 + 10)) ]' \
	"... received: when it arrived, seconds with a fraction ($r)"

deliver "$id" "$t1" "v1,$good"
event
is "$HTTP_CODE $(fields valid attempt)" "204 true 2" "the same webhook-id again: 204, attempt 2"

sign "msg_wrong_$$" "$EPOCHSECONDS" "$otherkey"
deliver "msg_wrong_$$" "$EPOCHSECONDS" "v1,$SIG"
event
is "$HTTP_CODE $(fields valid status attempt)" "401 false 401 1" "a signature by another key: 401, recorded invalid"
like "$(fields why)" "no signature matches" "... why: no signature matches"

old=$((EPOCHSECONDS - 600))
sign "msg_old_$$" "$old"
deliver "msg_old_$$" "$old" "v1,$SIG"
event
is "$HTTP_CODE $(fields valid status timestamp)" "400 false 400 $old" "a timestamp 10 minutes old, well signed: 400"
like "$(fields why)" "^stale timestamp: 60[01] s old" "... why: stale"

future=$((EPOCHSECONDS + 600))
sign "msg_future_$$" "$future"
deliver "msg_future_$$" "$future" "v1,$SIG"
event
is "$HTTP_CODE $(fields valid)" "400 false" "a timestamp 10 minutes ahead: 400"
like "$(fields why)" "in the future" "... why: in the future"

req POST "$base/hooks/bindery" -H "webhook-id: msg_bare_$$" -H "webhook-timestamp: $EPOCHSECONDS" \
	--data-binary @"$work/body.json"
event
is "$HTTP_CODE $(fields valid)" "400 false" "no webhook-signature header: 400"
like "$(fields why)" "missing header webhook-signature" "... why: the header missing"

t2=$EPOCHSECONDS
sign "msg_multi_$$" "$t2" "$otherkey"
bad=$SIG
sign "msg_multi_$$" "$t2"
deliver "msg_multi_$$" "$t2" "v1a,bm90IGEgc2ln v1,$bad v1,$SIG"
event
is "$HTTP_CODE $(fields valid)" "204 true" "several signatures in the header, the last of three valid: 204"

printf 'not json' >"$work/body.json"
sign "msg_text_$$" "$t2"
deliver "msg_text_$$" "$t2" "v1,$SIG"
event
is "$HTTP_CODE $(fields valid)" "204 true" "a body that is not JSON, well signed: 204"
null_body='"body":null,'
ok '[[ $EVENT == *"$null_body"* ]]' "... recorded with body null"
printf '%s' "$body" >"$work/body.json"

req POST "$base/hooks/bindery" -H 'Transfer-Encoding: chunked' -H "webhook-id: msg_chunked_$$" \
	--data-binary @"$work/body.json"
event
is "$HTTP_CODE $(fields webhook_id status valid)" "411 msg_chunked_$$ 411 false" \
	"no Content-Length (chunked): 411, recorded"
req GET "$base/hooks/bindery"
is "$HTTP_CODE $(wc -l <"$work/events")" "405 9" "a GET: 405, not an event"

# --- modes -----------------------------------------------------------------
# accepted PATH: the first event again (well signed, its id), to PATH;
# each is that id's next attempt.  An openssl started costs as much as a
# curl: the modes do not need a signature each.
accepted() {
	deliver "$id" "$t1" "v1,$good" "$1"
	event
}
control '{"mode":"status","status":500}'
is "$HTTP_CODE $(jfield "$HTTP_BODY" mode) $(jfield "$HTTP_BODY" status)" "200 status 500" \
	"_control mode status 500: 200, the state"
accepted /hooks/500
is "$HTTP_CODE $(fields valid status)" "500 true 500" "mode status 500: 500, the event recorded (valid)"
control '{"mode":"gone"}'
accepted /hooks/gone
is "$HTTP_CODE $(fields status)" "410 410" "mode gone: 410"
control '{"mode":"redirect"}'
accepted /hooks/redirect
is "$HTTP_CODE $(header location) $(fields status attempt)" \
	"307 $base/hooks/redirect 307 5" "mode redirect: 307, Location this same URL, one event (attempt 5)"

control '{"mode":"down"}'
is "$HTTP_CODE $(jfield "$HTTP_BODY" mode)" "200 down" "_control mode down: 200"
curl -s -o /dev/null -m 5 -X POST --data-binary @"$work/body.json" "$base/hooks/bindery"
is "$?" 7 "mode down: a connection to the receiver's port is refused (curl: 7)"
req GET "$control_url"
is "$HTTP_CODE $(jfield "$HTTP_BODY" mode)" "200 down" "... the control port still answers"
control '{"mode":"ok"}'
is "$HTTP_CODE $(jfield "$HTTP_BODY" mode)" "200 ok" "_control mode ok again: 200"
accepted /hooks/back
is "$HTTP_CODE $(fields valid) $(<"$work/port")" "204 true $port" "... accepted again, on the same port"

# The slow answer is awaited in the background while the control port is
# checked: its event is recorded before the delay, the answer after it.
control '{"mode":"slow","delay":1}'
(
	t0=${EPOCHREALTIME/./}
	accepted /hooks/slow
	printf '%s %s\n' "$HTTP_CODE" $(((${EPOCHREALTIME/./} - t0) / 1000)) >"$work/slow"
) &
slow_pid=$!
recorded_slow() { event; [[ $EVENT == *'"path":"/hooks/slow"'* ]]; }
wait_for 5 recorded_slow || fail "the slow event was not recorded within 5 s"

control '{"mode":"status"}'
is "$HTTP_CODE" 400 "_control refuses mode status without a status"
control '{"mode":"sideways"}'
is "$HTTP_CODE" 400 "... and a mode it does not know"
control '{"delay":2}'
is "$HTTP_CODE" 400 "... and a delay without mode slow"

control '{"mode":"ok"}'
req GET "$control_url"
# 9 events above, then 500, 410, 307, 204 and the slow 204 (recorded
# before its delay): valid are the first two, the multi, the text one and
# the five of the modes.
is "$HTTP_BODY" '{"mode":"ok","status":null,"delay":null,"received":14,"valid":9,"invalid":5,"by_status":{"204":6,"401":1,"400":3,"411":1,"500":1,"410":1,"307":1}}' \
	"GET /_control: the mode and the counts, by status"
req GET "http://127.0.0.1:$cport/_events"
first='[{"path":"/hooks/bindery","webhook_id":"'$id'",'
ok '[ "$HTTP_CODE" = 200 ] && [[ $HTTP_BODY == "$first"* ]] &&
	[ "$(grep -o "\"webhook_id\":" <<<"$HTTP_BODY" | wc -l)" = 14 ]' \
	"GET /_events: the 14 events as one JSON array"
wait "$slow_pid"
slow_pid=
read -r code ms <"$work/slow"
ok '[ "$code" = 204 ] && [ "$ms" -ge 1000 ]' "mode slow delay 1: 204 after ${ms} ms (at least 1,000)"

control '{"reset":true}'
is "$(jfield "$HTTP_BODY" received) $(wc -c <"$work/events")" "0 0" "_control reset: the counts and the events file emptied"
accepted /hooks/after-reset
is "$(fields attempt)" 1 "... and the attempts numbered afresh"

# --- the log, and the end -----------------------------------------------------
is "$(grep -c ' POST /hooks/' "$work/receiver.log")" 15 "the log has a line per event"
ok '! grep -qF -e "$secret" -e "${secret#whsec_}" -e "$hexkey" -e "$good" -e "$SIG" "$work/receiver.log" "$work/receiver.err"' \
	"the log holds neither the secret nor a signature"
kill "$recv_pid"
if wait_for 5 test ! -e "$work/port"; then
	wait "$recv_pid"
	rc=$?
	recv_pid=
else
	rc="still running after 5 s"
fi
is "$rc" 0 "SIGTERM stops it (status 0)"
ok '[ ! -e "$work/port" ] && [ ! -e "$work/cport" ]' "... and both port files go"
done_testing
