#!/usr/bin/env bash
# Chaos with [events] on: the chaos run of tests/lib/chaos.sh
# (8 clients creating, retrying with one Idempotency-Key, replacing,
# deleting and downloading while a controller kills FastCGI workers and
# fires failpoints, the events' own among them) through a lighttpd (and,
# under --long, an Apache mod_fcgid) of this test's own whose responders
# post to a loopback receiver (tests/tools/webhook_receiver.py, Python's hmac checks every
# signature).  After it, one sweep (tests/lib/chaos.sh's checks: every
# acknowledged document readable, audit clean), then the events:
#   - every ready version of every document of the run arrived at least
#     once (so every acknowledged create and replace, and every one the
#     sweeper rolled forward after its client saw a 5xx);
#   - every event that arrived names a change the database made: a ready
#     version no later than the document's (its SHA-256 when it is the
#     current one), or a document that is gone and whose deletion arrived
#     too; a document.deleted only for a document that is gone; none for a
#     create that never became ready;
#   - per document, the versions arrived in order (a retry never after a
#     later version);
#   - every event validly signed, none left waiting after the sweep.
# Fixed seed (CHAOS_SEED, default 7), bounded count (CHAOS_OPS, default
# 1000; ./dev test sets 90, --long 1000).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"
. "$top/tests/lib/webhook.sh"

chaos_need_stack
sql_session
OPS=${CHAOS_OPS:-1000}
SEED=${CHAOS_SEED:-7}
CLIENTS=8
RUN=ev$$x$RANDOM
work=$(mktemp -d)
chmod 0755 "$work"
rx_pid=
cleanup() {
	webhook_stop "$rx_pid"
	[ -n "${CHAOS_FP:-}" ] && : >"$CHAOS_FP" 2>/dev/null
	stack_private_lighttpd_stop
	stack_private_apache_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

webhook_start "$work/rx"
rx_pid=$WEBHOOK_PID
{
	cat "$BINDERY_CONFIG"
	grep -q '^\[sweep\]' "$BINDERY_CONFIG" || printf '\n[sweep]\nlease = 1\n'
	printf '\n[events]\nbackoff_max = 1\nurl = %s\nsecret_file = %s\ntimeout = 2\n' "$WEBHOOK_URL" "$WEBHOOK_SECRET"
} >"$work/ev.conf"
chmod 0600 "$work/ev.conf"

# ---- the responders: a private lighttpd and (under --long, a further
# server: BINDERY_TEST_LONG) a private Apache mod_fcgid, one failpoints file
# (with Apache in www-data's directory: a fired "once" rewrites it) ----
with_apache=${BINDERY_TEST_LONG:-}
CHAOS_FP=$work/failpoints
: >"$CHAOS_FP"
if [ -n "$with_apache" ]; then
	stack_private_apache "$BINDERY_TEST_VAR/events-chaos-apache" "$work/ev.conf" 18470 apache-events-chaos ||
		bail_out "no private Apache"
	www=$STACK_PRIVATE_APACHE_WWW
	# www-data reads the secret from its own directory.
	install -m 0600 -o www-data "$WEBHOOK_SECRET" "$www/webhook.secret" &&
		sed -i "s|^secret_file = .*|secret_file = $www/webhook.secret|" "$www/bindery.conf" ||
		bail_out "cannot give www-data the receiver's secret"
	fpdir=$www/failpoints.d
	mkdir -p "$fpdir" && chown www-data "$fpdir" && : >"$fpdir/failpoints" && chmod 0666 "$fpdir/failpoints"
	CHAOS_FP=$fpdir/failpoints
	printf 'FcgidInitialEnv BINDERY_FAILPOINTS_FILE %s\n' "$CHAOS_FP" >>"$STACK_PRIVATE_APACHE_CONF"
	grep -q "^FcgidInitialEnv BINDERY_FAILPOINTS_FILE $CHAOS_FP\$" "$STACK_PRIVATE_APACHE_CONF" ||
		bail_out "the private Apache's failpoints line did not take"
	stack_apache_start "$STACK_PRIVATE_APACHE_CONF" || bail_out "the private Apache did not start (log in $STACK_LOG)"
	apache_url=http://127.0.0.1:$APACHE_PORT
	apache_master=$(stack_pid apache)
fi
BINDERY_FAILPOINTS_FILE=$CHAOS_FP stack_private_lighttpd "$BINDERY_TEST_VAR/events-chaos-lighttpd" lighttpd.conf \
	"$work/ev.conf" "$BINDERY_TEST_BIN" 18480 || bail_out "no private lighttpd"
lighttpd_url=http://127.0.0.1:$HTTP_PORT
lighttpd_pid=$(stack_pid lighttpd)
stack_wait_healthz "$lighttpd_url" 5 || bail_out "the test's lighttpd does not answer /healthz (log in $STACK_LOG)"
CHAOS_URLS=("$lighttpd_url")
CHAOS_LIGHTTPD_PIDS=$lighttpd_pid
if [ -n "$with_apache" ]; then
	stack_wait_healthz "$apache_url" 5 || bail_out "the test's Apache does not answer /healthz (log in $STACK_LOG)"
	# mod_fcgid's workers are children of its process manager, not of the
	# master: the first request makes one, and its parent is the one to watch.
	code=$(curl -s -o "$work/probe" -w '%{http_code}' "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary probe "$apache_url/documents?name=$RUN-probe")
	is "$code" 201 "a create through the private Apache ($(head -c 120 "$work/probe"))"
	pm=
	for p in $(pgrep -f "$www/bin/bindery.fcgi"); do pm=$(ps -o ppid= -p "$p" | tr -d ' ') && break; done
	[ -n "$pm" ] && [ "$pm" != "$apache_master" ] || bail_out "no mod_fcgid process manager found"
	CHAOS_URLS+=("$apache_url")
	CHAOS_LIGHTTPD_PIDS+=" $pm"
else
	code=$(curl -s -o "$work/probe" -w '%{http_code}' "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
		--data-binary probe "$lighttpd_url/documents?name=$RUN-probe")
	is "$code" 201 "a create through the private lighttpd ($(head -c 120 "$work/probe"))"
fi
is "$(jq -r "select(.body.data.name == \"$RUN-probe\") | [.valid, .body.type] | @csv" "$WEBHOOK_EVENTS")" \
	'true,"document.ready"' "... its document.ready arrived, signed"

# (No audit before the run: chaos.sh's, and the audit of every test that
# writes, answer for what earlier tests leave; each whole-container audit
# costs seconds late in a run.)
chaos_sweep "$work/ev.conf" "$work/sweep.log"
chaos_snapshot "$work/before"

CHAOS_WORK=$work CHAOS_RUN=$RUN CHAOS_SEED=$SEED
CHAOS_POINTS+=(events.after_commit events.before_send)
note "events chaos: seed $SEED, $OPS operations, $CLIENTS clients, responders ${CHAOS_URLS[*]}"
chaos_run "$CLIENTS" "$OPS"

# A worker killed mid-post leaves its claim (timeout + 30 s) and a failed
# post its backoff: both moved into the past for this run's rows, so the
# one sweep delivers them (time travel, in the database only, while no
# sender runs).
sql "UPDATE event_deliveries d JOIN events e ON e.id = d.event_id
     SET d.claimed_until = NULL, d.next_at = NOW(6) - INTERVAL 1 SECOND
     WHERE d.state = 'pending' AND JSON_VALUE(e.body, '\$.data.name') LIKE '$RUN-%'"
chaos_check "$work/ev.conf" "$work/before"
note "events chaos: operations $CHAOS_OPS_DONE, crashes $CHAOS_CRASHES (kill -9: $CHAOS_KILLS), faults $CHAOS_FAULTS, acknowledged $CHAOS_ACKED ($CHAOS_SECONDS s)"
ok "$([ "$CHAOS_CRASHES" -gt 0 ]; echo $?)" "the run crashed responders ($CHAOS_CRASHES times)"
fired=$(grep -c 'armed events\.' "$work/chaos")
note "events chaos: the events' own failpoints armed $fired times"

# ---- the events against the database ----
sql "SELECT id, name, version, sha256 FROM documents WHERE status = 'ready' AND name LIKE '$RUN-%'" >"$work/ready.tsv"
waiting=$(sql "SELECT COUNT(*) FROM event_deliveries d JOIN events e ON e.id = d.event_id
	WHERE d.state <> 'delivered' AND JSON_VALUE(e.body, '\$.data.name') LIKE '$RUN-%'")
is "$waiting" 0 "after the sweep no event of the run is waiting or dead"
python3 - "$WEBHOOK_EVENTS" "$work/ready.tsv" "$RUN-" >"$work/event-violations" 2>"$work/event-summary" <<'EOF'
import json, sys
events_file, ready_file, prefix = sys.argv[1:4]
ready = {}
for line in open(ready_file):
    i, name, version, sha = line.rstrip("\n").split("\t")
    ready[i] = (int(version), sha)
got = {}        # id -> [(kind, version, sha)] of the 2xx deliveries, in order
bad = []
for line in open(events_file):
    r = json.loads(line)
    b = r.get("body") or {}
    d = b.get("data") or {}
    if not str(d.get("name", "")).startswith(prefix):
        continue
    if not r["valid"]:
        bad.append("an event not validly signed: %s (%s)" % (r.get("webhook_id"), r.get("why")))
    if not 200 <= r["status"] <= 299:
        continue
    got.setdefault(str(d["id"]), []).append((b["type"], int(d["version"]), d.get("sha256")))
deliveries = sum(len(v) for v in got.values())
for i, (version, sha) in ready.items():
    seen = {v for k, v, _ in got.get(i, []) if k == "document.ready"}
    missing = sorted(set(range(1, version + 1)) - seen)
    if missing:
        bad.append("document %s: ready at version %d, no document.ready of version(s) %s" % (i, version, missing))
for i, evs in got.items():
    deleted = any(k == "document.deleted" for k, _, _ in evs)
    if deleted and i in ready:
        bad.append("document %s: document.deleted arrived, but it is ready" % i)
    for k, v, sha in evs:
        if k != "document.ready":
            continue
        if i in ready:
            if v > ready[i][0]:
                bad.append("document %s: document.ready of version %d, the database is at %d" % (i, v, ready[i][0]))
            elif v == ready[i][0] and sha != ready[i][1]:
                bad.append("document %s: version %d's event says SHA-256 %s, the database %s" % (i, v, sha, ready[i][1]))
        elif not deleted:
            bad.append("document %s: document.ready of version %d for a document that is not ready, no deletion" % (i, v))
    order = [float("inf") if k == "document.deleted" else v for k, v, _ in evs]
    if order != sorted(order):
        bad.append("document %s: versions arrived out of order: %s" % (i, order))
for b in bad:
    print(b)
print("# %d documents ready, %d documents with events, %d deliveries" % (len(ready), len(got), deliveries), file=sys.stderr)
EOF
sed 's/^/# /' "$work/event-summary"
is "$(grep -c . "$work/event-violations")" 0 \
	"every ready version's event arrived; every event names a change the database made, in version order, signed"
head -n 20 "$work/event-violations" | sed 's/^/#   /'
ok "$([ "$(wc -l <"$work/ready.tsv")" -gt 0 ]; echo $?)" "the run left ready documents to check ($(wc -l <"$work/ready.tsv"))"
done_testing
