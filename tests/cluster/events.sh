#!/usr/bin/env bash
# Events on Galera: two web hosts, each a lighttpd of this test's
# own on its own node (the configs of BINDERY_CONFIGS with [events] added),
# posting to one loopback receiver (tests/tools/webhook_receiver.py, Python's
# hmac checks every signature).
#   - concurrent replaces of one document through both hosts: every version
#     the database committed arrives, once, in version order (the order is the
#     document's version, not an AUTO_INCREMENT Galera interleaves);
#   - the receiver down during creates through both hosts, then two sweeps
#     at once, each through a config on a different node: every waiting event
#     is delivered exactly once between them (claims are one conditional
#     UPDATE: certification lets one node's claim through).
# CLUSTER_EVENTS_ITEMS (default 40) waiting events in the second part.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
. "$cl_here/../lib/webhook.sh"
. "$cl_here/../lib/db.sh"
cl_chaos_view	# sql: node 1, as root
command -v jq >/dev/null || bail_out "jq is not installed"

items=${CLUSTER_EVENTS_ITEMS:-40}
work=$(mktemp -d -p "$CLUSTER_VAR")
chmod 0755 "$work"
run=clev$$x$RANDOM
rx_pid=
cleanup() {
	webhook_stop "$rx_pid"
	cl_failpoint_hosts_stop events
	rm -rf "$work"
}
trap cleanup EXIT

webhook_start "$work/rx"
rx_pid=$WEBHOOK_PID
received() { jq -rc "$1" "$WEBHOOK_EVENTS"; }
confs=()
h=0
for conf in $BINDERY_CONFIGS; do
	h=$((h + 1))
	{ cat "$conf"; printf '\n[events]\nbackoff_max = 1\nurl = %s\nsecret_file = %s\ntimeout = 2\n' \
		"$WEBHOOK_URL" "$WEBHOOK_SECRET"; } >"$work/host$h.conf"
	chmod 0600 "$work/host$h.conf"
	confs+=("$work/host$h.conf")
done
[ ${#confs[@]} -ge 2 ] || bail_out "two host configs needed"
BINDERY_CONFIGS="${confs[*]}" cl_failpoint_hosts events "$work/fp1" "$work/fp2"
url_a=${CL_FP_URLS[0]} url_b=${CL_FP_URLS[1]}
cli=$BINDERY_BIN/bindery

# ---- concurrent replaces through both hosts ----
printf 'first\n' >"$work/v1"
code=$(curl -s -o "$work/c.out" -w '%{http_code}' -H "$AUTH" -H 'Content-Type: text/plain' \
	--data-binary "@$work/v1" "$url_a/documents?name=$run-race")
is "$code" 201 "a create through host A"
doc=$(jfield "$(cat "$work/c.out")" id)
pids=()
for i in $(seq 1 10); do
	head -c $((100 + i)) /dev/urandom >"$work/r$i"
	u=$url_a
	[ $((i % 2)) = 0 ] && u=$url_b
	curl -s -o /dev/null -w '%{http_code}\n' -H "$AUTH" -H 'Content-Type: text/plain' -X PUT \
		--data-binary "@$work/r$i" "$u/documents/$doc/content" >"$work/r$i.code" &
	pids+=($!)
done
wait "${pids[@]}"
note "replaces answered: $(sort "$work"/r*.code | uniq -c | tr -s ' \n' ' ')"
sleep 1.2
"$cli" -c "${confs[0]}" sweep >"$work/sweep0.out" 2>&1
final=$(sql "SELECT version FROM documents WHERE id = $doc AND status = 'ready'")
ok "$([ "${final:-0}" -ge 2 ]; echo $?)" "ten concurrent replaces through both hosts: the document is at version $final"
is "$(received "select(.body.data.id == \"$doc\" and .status == 204) | .body.data.version" | tr '\n' ' ')" \
	"$(seq 1 "$final" | tr '\n' ' ')" "... every version arrived once, in version order"
is "$(received 'select(.valid | not)' | wc -l)" 0 "... every event validly signed"

# ---- two sweepers on two nodes: each waiting event exactly once ----
webhook_mode "$WEBHOOK_CTL" '{"mode": "down"}'
for i in $(seq 1 "$items"); do
	u=$url_a
	[ $((i % 2)) = 0 ] && u=$url_b
	curl -s -o /dev/null -w '%{http_code}\n' -H "$AUTH" -H 'Content-Type: text/plain' --data-binary "item $i" \
		"$u/documents?name=$run-two-$i"
done >"$work/creates.codes"
is "$(sort -u "$work/creates.codes" | tr '\n' ' ')" "201 " "$items creates through both hosts, the receiver down"
webhook_mode "$WEBHOOK_CTL" '{"mode": "ok"}'
sleep 1.2
"$cli" -c "${confs[0]}" -v sweep >"$work/s1.out" 2>&1 &
s1=$!
"$cli" -c "${confs[1]}" -v sweep >"$work/s2.out" 2>&1 &
s2=$!
wait "$s1"
rc1=$?
wait "$s2"
rc2=$?
is "$rc1 $rc2" "0 0" "two sweeps at once, on two nodes"
[ "$rc1 $rc2" = "0 0" ] || sed 's/^/#   /' "$work/s1.out" "$work/s2.out"
note "sweep 1: $(grep -o 'events:.*' "$work/s1.out"); sweep 2: $(grep -o 'events:.*' "$work/s2.out")"
got=$(received "select((.body.data.name | startswith(\"$run-two-\")) and .status == 204) | .webhook_id" |
	sort | uniq -c | awk '{ print $1 }' | sort -u | tr '\n' ' ')
is "$got" "1 " "each event reached the receiver exactly once between them"
is "$(received "select((.body.data.name | startswith(\"$run-two-\")) and .status == 204)" | wc -l)" "$items" \
	"... all $items delivered"
done_testing
