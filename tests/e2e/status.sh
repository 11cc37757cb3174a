#!/usr/bin/env bash
# Seeing the sweeper: `bindery sweep` records its run (a dry run
# records nothing); `bindery status` prints the figures as text and JSON
# and exits 0; with the last ok run planted older than [sweep] late_after
# ("cron stopped"), status says late and exits 1, and /healthz says
# "sweeper":"late" through lighttpd and Apache but stays 200.  GET /metrics
# (on in the test stack's bindery.conf): 401 without a caller, 200 in the
# Prometheus text format 0.0.4 through both servers, read back by Debian's
# python3-prometheus-client; 404 from a private lighttpd whose bindery.conf
# leaves it off, 403 for a caller other than [metrics] owner.  A sweep of
# one --prefix is recorded partial and never counts as the last ok run:
# status, /healthz and /metrics still say late after it, and ok again only
# after a full sweep.  When status cannot tell (a wrong database password,
# the database down, a wrong storage key), every command says the cause on
# stderr with stderr no terminal (cron), exits 77 for a refusal and 69 for
# a service down, and status --json still prints one JSON object.  A
# mistyped command gets four lines with the nearest command and exit 64.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"
. "$here/../lib/stack.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL \
	BINDERY_TEST_TOKEN BINDERY_TEST_TOKEN_OTHER BINDERY_TEST_DB_SOCKET BINDERY_TEST_VAR
sql_session	# one client for the script's queries (tests/lib/db.sh)
command -v jq >/dev/null || missing "jq"
PROM_PY=/usr/bin/python3	# Debian's, where python3-prometheus-client is installed
"$PROM_PY" -c 'import prometheus_client.parser' 2>/dev/null || missing "python3-prometheus-client"
BIN=$BINDERY_TEST_BIN/bindery
servers="lighttpd=$BINDERY_TEST_LIGHTTPD_URL apache=$BINDERY_TEST_APACHE_URL"
work=$(mktemp -d) || bail_out "mktemp -d failed"
cleanup() {
	stack_private_lighttpd_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bindery() { "$BIN" -c "$BINDERY_CONFIG" "$@"; }
runs() { sql "SELECT COUNT(*) FROM sweep_runs"; }
latest_sql=$(cd "$here/../../sql" && ls [0-9][0-9][0-9]_*.sql | tail -n 1 | cut -c1-3)
latest_sql=$((10#$latest_sql))

# --- the run history ------------------------------------------------------
before=$(runs)
bindery sweep --dry-run >"$work/dry.out" 2>&1
is "$?" 0 "sweep --dry-run exits 0"
is "$(runs)" "$before" "a dry run records nothing ($before runs)"

# Whatever earlier tests left for the sweeper is resolved first (as
# tests/integration/cron.sh does); an item left for a human stays and
# makes every run exit 1, which is still an ok run.
bindery sweep >"$work/first.out" 2>&1 || sed 's/^/# first sweep: /' "$work/first.out"
before=$(runs)
bindery sweep >"$work/sweep.out" 2>&1
rc=$?
sed 's/^/# sweep: /' "$work/sweep.out"
ok "[ $rc = 0 ] || [ $rc = 1 ]" "sweep exits 0 (or 1, problems an earlier test left): $rc"
IFS=$'\t' read -r run_id run_result run_host run_done run_problems <<<"$(sql "SELECT id, result, host,
	finished_at IS NOT NULL, problems FROM sweep_runs ORDER BY id DESC LIMIT 1")"
is "$(runs)" "$((before + 1))" "the sweep recorded one run"
is "$run_result $run_done" "ok 1" "... finished, result ok"
is "$run_host" "$(hostname)" "... on this host"
is "$([ "$run_problems" -gt 0 ] && echo 1 || echo 0)" "$rc" "... its problems count agrees with the exit status"

# --- status while all is well --------------------------------------------
bindery status >"$work/status.txt" 2>"$work/status.err"
is "$?" 0 "bindery status exits 0 right after a sweep"
sed 's/^/# /' "$work/status.txt" "$work/status.err"
like "$(cat "$work/status.txt")" 'sweeper: +ok' "the text says the sweeper is ok"
like "$(grep '^last sweep:' "$work/status.txt")" ', ok, [0-9]+s ago on ' "... and the last sweep's result and age"
like "$(grep '^schema:' "$work/status.txt")" "^schema: +$latest_sql applied, $latest_sql shipped\$" \
	"... and the schema, applied and shipped"
for line in 'pending intents:' 'outbox:' 'unfinished uploads:' 'idempotency keys:' 'last ok sweep:'; do
	ok "grep -q '^$line' '$work/status.txt'" "the text has '$line'"
done
bindery status --json >"$work/status.json"
is "$?" 0 "bindery status --json exits 0"
is "$(jq -r '[.ok, .sweep.late, .sweep.last.result, .sweep.last.id, .sweep.last_ok.id,
	.schema.applied, .schema.latest, .schema.behind] | map(tostring) | join(" ")' "$work/status.json")" \
	"true false ok $run_id $run_id $latest_sql $latest_sql false" \
	"the JSON: ok, not late, the run just recorded, schema current"
ok "jq -e '(.pending_intents.count | type == \"number\") and (.outbox.backlog | type == \"number\")
	and (.outbox.due | type == \"number\") and (.unfinished_uploads.tus | type == \"number\")
	and (.unfinished_uploads.direct | type == \"number\") and (.idempotency_keys.count | type == \"number\")
	and (.sweep.last_ok.age_seconds < 60) and (.sweep.late_after_seconds == 3600)' '$work/status.json' >/dev/null" \
	"the JSON has every figure, as numbers"

for s in $servers; do
	name=${s%%=*} url=${s#*=}
	req GET "$url/healthz"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" sweeper)" "200 ok" "$name: /healthz says the sweeper is ok"
done

# The schema against what a bindery ships: a newer bindery (one more
# migration) finds it behind, an older one (one fewer) ahead; both exit 1.
mkdir "$work/newer" "$work/older"
cp "$here"/../../sql/[0-9][0-9][0-9]_*.sql "$work/newer/"
cp "$here"/../../sql/[0-9][0-9][0-9]_*.sql "$work/older/"
printf -- '-- a future migration\nSELECT 1;\n' >"$work/newer/$(printf '%03d' $((latest_sql + 1)))_future.sql"
rm "$work/older/$(printf '%03d' "$latest_sql")"_*.sql
bindery status --sql-dir "$work/newer" --json >"$work/newer.json"
is "$?" 1 "status exits 1 when the schema is behind the shipped migrations"
is "$(jq -r '[.ok, .schema.applied, .schema.latest, .schema.behind] | map(tostring) | join(" ")' \
	"$work/newer.json")" "false $latest_sql $((latest_sql + 1)) true" "... the JSON says behind"
bindery status --sql-dir "$work/older" >"$work/older.txt"
is "$?" 1 "status exits 1 when the database is ahead of this bindery"
like "$(grep '^schema:' "$work/older.txt")" "$latest_sql applied, $((latest_sql - 1)) shipped \(ahead" \
	"... the text says ahead"

# A database nobody migrated: nothing to count, the schema behind, exit 1
# (not the 70 of an unreadable table).  Its own empty database, readable by
# the runtime account, named in a copy of the configuration.
never_db=bindery_never_migrated_$$
db_user=$(sed -n 's/^user = //p' "$BINDERY_CONFIG" | head -n 1)
sql "DROP DATABASE IF EXISTS $never_db; CREATE DATABASE $never_db" || bail_out "cannot create $never_db"
sql "SELECT CONCAT('GRANT SELECT ON $never_db.* TO ', QUOTE(user), '@', QUOTE(host))
	FROM mysql.user WHERE user = $(sql_quote "$db_user")" >"$work/grants.sql"
while read -r g; do sql "$g" || bail_out "cannot grant on $never_db"; done <"$work/grants.sql"
sed -e "s/^name = .*/name = $never_db/" "$BINDERY_CONFIG" >"$work/never.conf"
chmod 0600 "$work/never.conf"
"$BIN" -c "$work/never.conf" status >"$work/never.txt" 2>&1
is "$?" 1 "status exits 1 on a database never migrated"
like "$(cat "$work/never.txt")" "^schema: +never migrated \($latest_sql shipped\): run bindery migrate" \
	"... and says to run bindery migrate"
"$BIN" -c "$work/never.conf" status --json >"$work/never.json" 2>&1
is "$?" 1 "... --json exits 1 too"
is "$(jq -r '[.ok, .schema.migrated, .schema.applied, .schema.behind, .pending_intents.count] | map(tostring) | join(" ")' \
	"$work/never.json" 2>/dev/null)" "false false 0 true 0" "... the JSON: not migrated, 0 applied, behind"
# A dropped database keeps its grants in MariaDB: take them back too.
sed -e 's/^GRANT /REVOKE /' -e 's/ TO / FROM /' "$work/grants.sql" | while read -r g; do sql "$g"; done
sql "DROP DATABASE $never_db"

# --- when status cannot tell: the cause on stderr, sysexits, JSON ---------
# As under cron: stderr is no terminal and the log goes to syslog, so
# whatever names the cause must be the command's own line.  A wrong
# database password is refused by the server (1045, EX_NOPERM 77); a
# socket or port nobody listens on is a database down (69); a wrong
# storage key is refused by storage (403 AuthenticationFailed, 77).
# --json prints one object with the reason either way.
quiet() { env -u BINDERY_LOG_STDERR "$BIN" "$@" </dev/null; }
grep -q '^password = ' "$BINDERY_CONFIG" || bail_out "the stack's bindery.conf has no password line"
sed -e "s/^password = .*/password = not-the-password-$$/" "$BINDERY_CONFIG" >"$work/badpw.conf"
# Over a socket or TCP, whichever the stack uses: nothing listens there.
sed -e "s|^socket = .*|socket = $work/nobody-listens.sock|" -e "s|^port = .*|port = 1|" \
	"$BINDERY_CONFIG" >"$work/down.conf"
grep -q '^key = ' "$BINDERY_CONFIG" || bail_out "the stack's bindery.conf has no [storage] key line"
sed -e "s|^key = .*|key = $(head -c 64 /dev/urandom | base64 -w 0)|" "$BINDERY_CONFIG" >"$work/badkey.conf"
chmod 0600 "$work/badpw.conf" "$work/down.conf" "$work/badkey.conf"

quiet -c "$work/badpw.conf" status >"$work/badpw.out" 2>"$work/badpw.err"
is "$?" 77 "status with a wrong database password exits 77 (EX_NOPERM)"
like "$(cat "$work/badpw.err")" '^bindery status: database unavailable: 1045: Access denied for user' \
	"... and says MariaDB's words on stderr, not only 'unavailable'"
unlike "$(cat "$work/badpw.err")" "not-the-password-$$" "... without the password"
quiet -c "$work/badpw.conf" status --json >"$work/badpw.json" 2>/dev/null
is "$?" 77 "status --json exits 77 too"
is "$(jq -r '[.ok, .database, (.error | test("^database unavailable: 1045: Access denied"))] |
	map(tostring) | join(" ")' "$work/badpw.json" 2>/dev/null)" "false refused true" \
	"... and prints JSON: ok false, the database refused, the reason"
quiet -c "$work/badpw.conf" sweep >"$work/badpw-sweep.out" 2>"$work/badpw-sweep.err"
is "$?" 77 "sweep with a wrong database password exits 77"
like "$(cat "$work/badpw-sweep.err")" '^bindery sweep: could not start: database unavailable: 1045: Access denied' \
	"... naming the cause on stderr"
quiet -c "$work/badpw.conf" audit >/dev/null 2>"$work/badpw-audit.err"
is "$?" 77 "audit with a wrong database password exits 77"
like "$(cat "$work/badpw-audit.err")" '^bindery audit: database unavailable: 1045: Access denied' \
	"... naming the cause on stderr"

quiet -c "$work/down.conf" status >/dev/null 2>"$work/down.err"
is "$?" 69 "status with the database down exits 69"
like "$(cat "$work/down.err")" "^bindery status: database unavailable: 200[23]: Can't connect" \
	"... and names the connector's error"
quiet -c "$work/down.conf" status --json >"$work/down.json" 2>/dev/null
is "$?" 69 "status --json with the database down exits 69"
is "$(jq -r '[.ok, .database, (.error | test("^database unavailable: 200[23]: "))] | map(tostring) | join(" ")' \
	"$work/down.json" 2>/dev/null)" "false unavailable true" "... and still prints JSON with the reason"

quiet -c "$work/badkey.conf" audit --prefix "status-badkey-$$-" >/dev/null 2>"$work/badkey.err"
is "$?" 77 "audit with a wrong storage key exits 77"
like "$(cat "$work/badkey.err")" '^bindery audit: listing the container: BLOB_AUTH_FAILED \(HTTP 403 [A-Za-z]+\)' \
	"... naming storage's status and error code on stderr"
quiet -c "$work/badkey.conf" check-account >/dev/null 2>"$work/badkey-check.err"
is "$?" 77 "check-account with a wrong storage key exits 77"
like "$(cat "$work/badkey-check.err")" '^bindery check-account: Put Blob: BLOB_AUTH_FAILED \(HTTP 403 [A-Za-z]+\)' \
	"... naming storage's answer on stderr"

# A mistyped command: four lines, the nearest command, 64.
quiet stauts >"$work/typo.out" 2>"$work/typo.err"
is "$?" 64 "an unknown command exits 64"
like "$(head -n 1 "$work/typo.err")" "^bindery: unknown command 'stauts'; did you mean 'status'\\?\$" \
	"... and suggests the nearest command"
is "$(wc -l <"$work/typo.err") $(wc -c <"$work/typo.out")" "4 0" "... in four lines on stderr, not the whole help"
quiet frobnicate >/dev/null 2>"$work/far.err"
is "$?" 64 "a command nothing like one exits 64"
unlike "$(cat "$work/far.err")" 'did you mean' "... and suggests nothing"

# --- cron stopped: the last ok run is two hours old ------------------------
sql "UPDATE sweep_runs SET started_at = started_at - INTERVAL 7200 SECOND,
	finished_at = finished_at - INTERVAL 7200 SECOND"
bindery status >"$work/late.txt" 2>&1
is "$?" 1 "bindery status exits 1 when the sweeper is late"
like "$(cat "$work/late.txt")" 'sweeper: +late' "the text says late"
bindery status --json >"$work/late.json"
is "$?" 1 "... and so does --json"
is "$(jq -r '[.ok, .sweep.late, (.sweep.last_ok.age_seconds >= 7200)] | map(tostring) | join(" ")' \
	"$work/late.json")" "false true true" "the JSON: not ok, late, the last ok run 2 h old"
for s in $servers; do
	name=${s%%=*} url=${s#*=}
	req GET "$url/healthz"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" sweeper)" "200 late" \
		"$name: /healthz says late and stays 200"
	like "$HTTP_BODY" '"database" *: *"ok"' "$name: ... the database still ok"
done

# A sweep of a slice (--prefix) is no full run: recorded partial, the
# sweeper still late everywhere (it used to count as the last ok run).
# Its row is found by this host and the run's pid, not as the newest row
# (another sweep may record one meanwhile).
"$BIN" -c "$BINDERY_CONFIG" sweep --prefix "status-slice-$$-" >"$work/slice.out" 2>&1 &
slice_pid=$!
wait "$slice_pid"
ok "[ $? -le 1 ]" "sweep --prefix runs"
is "$(sql "SELECT result FROM sweep_runs WHERE pid = $slice_pid AND host = $(sql_quote "$(hostname)")
	ORDER BY id DESC LIMIT 1")" partial "... and is recorded as partial"
bindery status --json >"$work/slice.json"
is "$?" 1 "... bindery status still exits 1 (late)"
is "$(jq -r '[.sweep.late, .sweep.last.result, (.sweep.last_ok.age_seconds >= 7200)] | map(tostring) | join(" ")' \
	"$work/slice.json")" "true partial true" "... the JSON: late, the last run partial, the last ok run 2 h old"
for s in $servers; do
	name=${s%%=*} url=${s#*=}
	req GET "$url/healthz"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" sweeper)" "200 late" "$name: /healthz still says late after it"
done

# --- /metrics ----------------------------------------------------------------
# metrics NAME URL [CURL-ARGS...]: GET URL/metrics, the body in $work/NAME.prom.
metrics() {
	local name=$1 url=$2
	shift 2
	METRICS_CODE=$(curl -s -m 30 -D "$work/$name.h" -o "$work/$name.prom" -w '%{http_code}' "$@" \
		"$url/metrics") || METRICS_CODE=000
	METRICS_CTYPE=$(tr -d '\r' <"$work/$name.h" | sed -n 's/^[Cc]ontent-[Tt]ype: *//p' | tail -n 1)
}
want_ok=$(jq -r '.pending_intents.count' "$work/late.json")
for s in $servers; do
	name=${s%%=*} url=${s#*=}
	metrics "$name-anon" "$url"
	is "$METRICS_CODE" 401 "$name: /metrics without a caller is 401"
	metrics "$name" "$url" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
	is "$METRICS_CODE" 200 "$name: /metrics with the bearer token is 200"
	is "$METRICS_CTYPE" "text/plain; version=0.0.4; charset=utf-8" "$name: ... in text format 0.0.4"
	"$PROM_PY" "$here/../tools/metrics_parse.py" "$work/$name.prom" >"$work/$name.parsed" 2>"$work/$name.err"
	is "$?" 0 "$name: python3-prometheus-client parses it"
	sed 's/^/# /' "$work/$name.err"
	is "$(awk '$1 !~ /^bindery_/ || ($2 != "gauge" && $2 != "counter") || $3 != 1' "$work/$name.parsed" |
		head -n 3)" "" "$name: every family is a bindery_ gauge or counter with HELP"
	for m in pending_intents oldest_pending_intent_age_seconds outbox_blobs outbox_due_blobs \
		idempotency_keys sweep_last_success_age_seconds sweep_late schema_version \
		schema_version_latest; do
		ok "grep -q '^bindery_$m gauge 1 bindery_$m{-} ' '$work/$name.parsed'" "$name: bindery_$m"
	done
	is "$(grep -c '^bindery_unfinished_uploads gauge 1 bindery_unfinished_uploads{route=\(tus\|direct\)} ' \
		"$work/$name.parsed")" 2 "$name: unfinished uploads by route, tus and direct"
	is "$(awk '$4 == "bindery_sweep_late{-}" { print $5 }' "$work/$name.parsed")" "1.0" \
		"$name: bindery_sweep_late is 1"
	ok "awk '\$4 == \"bindery_sweep_last_success_age_seconds{-}\" { exit !(\$5 >= 7200) }' '$work/$name.parsed'" \
		"$name: ... the last success 2 h old, the --prefix run after it not counted"
	is "$(awk '$4 == "bindery_pending_intents{-}" { print $5 }' "$work/$name.parsed")" "$want_ok.0" \
		"$name: bindery_pending_intents is status's count"
	is "$(awk '$4 == "bindery_schema_version{-}" || $4 == "bindery_schema_version_latest{-}" { print $5 }' \
		"$work/$name.parsed" | tr '\n' ' ')" "$latest_sql.0 $latest_sql.0 " "$name: schema versions"
done

# Off: a private lighttpd whose bindery.conf leaves [metrics] enabled out.
sed -e 's/^enabled = true$/enabled = false/' "$BINDERY_CONFIG" >"$work/off.conf"
chmod 0600 "$work/off.conf"
grep -q '^enabled = false$' "$work/off.conf" || bail_out "the stack's bindery.conf has no [metrics] enabled line"
stack_private_lighttpd "$BINDERY_TEST_VAR/status-lighttpd" lighttpd.conf "$work/off.conf" \
	"$BINDERY_TEST_BIN" 18460 || bail_out "lighttpd did not start"
metrics off "http://127.0.0.1:$HTTP_PORT" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
is "$METRICS_CODE" 404 "metrics off: /metrics is 404, even with a token"
req GET "http://127.0.0.1:$HTTP_PORT/healthz"
is "$HTTP_CODE $(jfield "$HTTP_BODY" sweeper)" "200 late" "... while /healthz there still answers"
stack_private_lighttpd_stop

# [metrics] owner: only that caller (the responder run as CGI).
{ cat "$BINDERY_CONFIG"; printf '\n[metrics]\nowner = other\n'; } >"$work/owner.conf"
chmod 0600 "$work/owner.conf"
cgi_run "$work/owner-demo.out" "$work/owner.conf" GET /metrics \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
is "$CGI_CODE" 403 "[metrics] owner = other: demo's token is 403"
cgi_run "$work/owner-other.out" "$work/owner.conf" GET /metrics \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN_OTHER"
is "$CGI_CODE" 200 "... other's is 200"

# Cron runs again: a full run, on time once more everywhere.
bindery sweep >/dev/null 2>&1
bindery status >/dev/null 2>&1
is "$?" 0 "after the next sweep, status exits 0 again"
for s in $servers; do
	name=${s%%=*} url=${s#*=}
	req GET "$url/healthz"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" sweeper)" "200 ok" "$name: ... /healthz says ok again"
	metrics "$name-again" "$url" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
	"$PROM_PY" "$here/../tools/metrics_parse.py" "$work/$name-again.prom" >"$work/$name-again.parsed"
	is "$(awk '$4 == "bindery_sweep_late{-}" || $4 == "bindery_sweep_last_success_age_seconds{-}" {
		print $4, ($4 ~ /late/ ? $5 : ($5 < 60 ? "fresh" : $5)) }' "$work/$name-again.parsed" | sort | tr '\n' ' ')" \
		"bindery_sweep_last_success_age_seconds{-} fresh bindery_sweep_late{-} 0.0 " \
		"$name: ... /metrics: not late, the last success under a minute old"
done
done_testing
