#!/usr/bin/env bash
# tests/lib/db.sh's sql_session, which the crash matrix and the chaos run
# lean on: one client answers many calls with the same rows, status and
# messages a client per call gives; a process substitution whose reader
# queries too, a pipeline and a subshell each get the right answer.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_DB_SOCKET BINDERY_TEST_VAR
err=$(mktemp)
trap 'rm -f "$err"' EXIT

alone=$(sql "SELECT 1, 'a\tb', NULL")
sql_session
is "$(sql "SELECT 1, 'a\tb', NULL;  ")" "$alone" "a row: what a client of its own answers (trailing ';' and spaces too)"
is "$(sql "SELECT 2; SELECT 3")" $'2\n3' "two statements in one call: both answers"
out=$(sql "SELECT no_such_column FROM documents" 2>"$err")
is "$?:$out" "1:" "a failing statement: status 1, no rows"
like "$(cat "$err")" "Unknown column 'no_such_column'" "... and the server's message on stderr"
is "$(sql "SELECT 4" 2>"$err"):$(wc -c <"$err")" "4:0" "the next call answers, with no stale message"
n=0 bad=0
while read -r i; do
	n=$((n + 1))
	[ "$(sql "SELECT $i * 2")" = $((i * 2)) ] || bad=$((bad + 1))
done < <(sql "SELECT seq FROM seq_1_to_40")
is "$n/$bad" "40/0" "a process substitution's rows, each read while the reader queries: 40 rows, 40 right answers"
is "$(sql "SELECT 5" | cat)" 5 "in a pipeline (a client of its own)"
sub=$( (sql "SELECT 6") )
is "$sub" 6 "in a subshell (a client of its own)"
is "$(sql "DO 1")" "" "a statement without rows: nothing"
like "$(sql "SELECT CONNECTION_ID()")" "^$(sql "SELECT CONNECTION_ID()")\$" "calls share one connection"
# (Last: should the bare wait hang on the client, a watchdog that is not
# this shell's job ends the client after 5 s and the check fails.)
( { sleep 5; kill "$_SQL_CO_PID"; } >/dev/null 2>&1 & )
sleep 0.3 &
t0=$(date +%s%N)
wait
is "$(( ($(date +%s%N) - t0) / 100000000 < 50 ))" 1 "a bare wait returns once the script's own jobs end (not waiting for the client)"
done_testing
