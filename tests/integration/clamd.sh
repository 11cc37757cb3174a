#!/usr/bin/env bash
# tests/integration/clamd.sh — lib/protocol/clamd.c against a real clamd
# of this test's own (tests/lib/clamd.sh: Debian's clamd, a database of one
# EICAR signature made here by sigtool), through the driver
# tests/integration/clamd_scan:
#   - EICAR is infected and named, whatever the feeds' sizes, and also
#     where it straddles two of the client's chunks; random bytes are clean;
#     over the unix socket and over TCP;
#   - a file above Debian's StreamMaxLength (25M) is a limit, never clean,
#     answered as soon as clamd gives up (the feeds after it only counted);
#     with StreamMaxLength raised but MaxFileSize not, AlertExceedsMax turns
#     clamd's "OK" for the file it skipped into a limit; with
#     conf/clamd-bindery.conf's settings the file is scanned (clean, and
#     EICAR at its end found), and a file above them is a limit again;
#   - clamd stopped: unavailable at once; clamd frozen (SIGSTOP): unavailable
#     after the timeout, not before and not much after; a bad address is
#     refused with a reason.
# Needs no stack; under ./dev test a missing clamd is a broken set-up.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/clamd.sh"

top=${top_srcdir:-$here/../..}
scan_bin=${top_builddir:-$here/../..}/tests/integration/clamd_scan
[ -x "$scan_bin" ] || missing "$scan_bin is not built"
clamd_need

work=$(mktemp -d "${TMPDIR:-/tmp}/clamd-test.XXXXXX") || bail_out "mktemp -d failed"
trap 'clamd_stop; rm -rf "$work"' EXIT
MIB=1048576

# scan [OPTIONS...] ADDRESS FILE: clamd_scan's answer in R (result), SIG,
# MSG, FED, EARLY (settled before the end) and MS (elapsed), its exit
# status in RC, its stderr in ERR.  A client that hung would be killed
# after 60 s and answer nothing: a failure, never a stuck test.
scan() {
	local k v
	timeout 60 "$scan_bin" "$@" >"$work/out" 2>"$work/err"
	RC=$?
	R='' SIG='' MSG='' FED='' EARLY='' MS=''
	while IFS='=' read -r k v; do
		case $k in
		result) R=$v ;; signature) SIG=$v ;; message) MSG=$v ;; fed) FED=$v ;;
		settled_early) EARLY=$v ;; elapsed_ms) MS=$v ;;
		esac
	done <"$work/out"
	ERR=$(cat "$work/err")
}
size() { stat -c %s "$1"; }

# --- the files ----------------------------------------------------------------
clamd_write_eicar "$work/eicar"
is "$(size "$work/eicar") $(md5sum <"$work/eicar")" "68 $CLAMD_EICAR_MD5  -" "the EICAR file: 68 bytes, its MD5"
head -c $MIB /dev/urandom >"$work/clean"
# EICAR across the end of the client's first chunk: 30 of its bytes in the
# first, 38 in the second, plain text around it.
head -c $((65536 - 30)) /dev/zero | tr '\0' 'a' >"$work/straddle"
cat "$work/eicar" >>"$work/straddle"
head -c 1000 /dev/zero | tr '\0' 'b' >>"$work/straddle"
is "$(tail -c +$((65536 - 30 + 1)) "$work/straddle" | head -c 68 | md5sum)" "$CLAMD_EICAR_MD5  -" \
	"the straddling file has EICAR at offset 65506, across the 65536-byte chunk boundary"
# Above 25 MiB, Debian's StreamMaxLength and MaxFileSize.
big_size=$((26 * MIB))
head -c $big_size /dev/urandom >"$work/big"
cat "$work/big" "$work/eicar" >"$work/big-eicar"

# --- clamd at Debian's sizes ----------------------------------------------------
clamd_start "$work/default" tcp=1 || bail_out "clamd did not start (StreamMaxLength 25M)"
note "clamd (one-signature database) answered PING ${CLAMD_START_MS} ms after its start"
pass "a clamd of the test's own at Debian's sizes, on $CLAMD_UNIX and $CLAMD_TCP"
ok '[ "$CLAMD_START_MS" -lt 30000 ]' "... it started within 30 s (${CLAMD_START_MS} ms)"

scan -p "$CLAMD_UNIX"
is "$R" pong "PING over the unix socket: PONG ($MSG)"
scan -p "$CLAMD_TCP"
is "$R" pong "PING over TCP: PONG"

for feed in 65536 1 7 1000; do
	scan -f $feed "$CLAMD_UNIX" "$work/eicar"
	is "$R $SIG $FED" "infected $CLAMD_SIGNATURE 68" "EICAR in feeds of $feed bytes: infected, named, 68 bytes fed"
done
like "$MSG" "^clamd answered \"stream: $CLAMD_SIGNATURE FOUND\"$" "... the message quotes clamd"
scan "$CLAMD_TCP" "$work/eicar"
is "$R $SIG" "infected $CLAMD_SIGNATURE" "EICAR over TCP: infected, named"

for feed in 65536 1000 1 65537; do
	scan -f $feed "$CLAMD_UNIX" "$work/straddle"
	is "$R $SIG $FED" "infected $CLAMD_SIGNATURE $(size "$work/straddle")" \
		"EICAR across two chunks, in feeds of $feed bytes: infected"
done

scan "$CLAMD_UNIX" "$work/clean"
is "$R $SIG $FED" "clean  $MIB" "1 MiB of random bytes: clean"
is "$MSG" 'clamd answered "stream: OK"' "... clamd said stream: OK"
scan -f 4093 "$CLAMD_TCP" "$work/clean"
is "$R" clean "... over TCP, in feeds of 4093 bytes: clean"
: >"$work/empty"
scan "$CLAMD_UNIX" "$work/empty"
is "$R $FED" "clean 0" "an empty stream: clean"

scan "$CLAMD_UNIX" "$work/big"
is "$R $FED" "limit $big_size" "26 MiB, above StreamMaxLength 25M: a limit, every byte counted"
like "$MSG" 'INSTREAM size limit exceeded\. ERROR' "... clamd's own answer, not a timeout ($MS ms)"
is "$EARLY" 1 "... known before the end: the rest of the feeds were only counted"
scan "$CLAMD_TCP" "$work/big"
is "$R" limit "... over TCP too"
scan -f 65537 "$CLAMD_UNIX" "$work/big-eicar"
is "$R" limit "... and with EICAR past the limit: a limit, not clean"
ok 'grep -q "INSTREAM: Size limit reached" "$CLAMD_DIR/clamd.log"' "clamd's log says it stopped at the size limit"
clamd_stop

# --- StreamMaxLength raised, MaxFileSize not --------------------------------------
clamd_start "$work/alert" StreamMaxLength=64M AlertExceedsMax=yes ||
	bail_out "clamd did not start (StreamMaxLength 64M, AlertExceedsMax)"
scan "$CLAMD_UNIX" "$work/big"
is "$R $SIG" "limit Heuristics.Limits.Exceeded.MaxFileSize" \
	"26 MiB past MaxFileSize 25M with AlertExceedsMax: a limit, clamd's name for it kept"
like "$MSG" 'not scanned' "... the message says it was not scanned"
clamd_stop

# Why conf/clamd-bindery.conf sets AlertExceedsMax: without it, clamd says
# "OK" for the file it did not scan (even with EICAR in it), and nothing
# in the answer tells it from a scanned one.
clamd_start "$work/silent" StreamMaxLength=64M AlertExceedsMax=no ||
	bail_out "clamd did not start (StreamMaxLength 64M)"
scan "$CLAMD_UNIX" "$work/big-eicar"
is "$R" clean "without AlertExceedsMax clamd answers OK for 26 MiB it skipped, EICAR in it (what the shipped settings prevent)"
clamd_stop

# --- conf/clamd-bindery.conf ------------------------------------------------------
clamd_start "$work/shipped" tcp=1 include="$top/conf/clamd-bindery.conf" ||
	bail_out "clamd did not start with conf/clamd-bindery.conf"
conf_size() { sed -n "s/^$1 //p" "$CLAMD_CONF"; }
is "$(conf_size StreamMaxLength) $(conf_size MaxFileSize) $(conf_size AlertExceedsMax)" "64M 64M yes" \
	"conf/clamd-bindery.conf's settings are the ones clamd read (one line a key)"
scan "$CLAMD_UNIX" "$work/big"
is "$R $FED" "clean $big_size" "with conf/clamd-bindery.conf: 26 MiB of random bytes scanned, clean"
scan "$CLAMD_TCP" "$work/big-eicar"
is "$R $SIG" "infected $CLAMD_SIGNATURE" "... and EICAR after those 26 MiB is found: the whole stream was scanned"
over=$((64 * MIB + MIB))
head -c $over /dev/urandom >"$work/over"
scan "$CLAMD_UNIX" "$work/over"
is "$R $FED" "limit $over" "65 MiB, above its StreamMaxLength 64M: a limit"
rm -f "$work/over"

# --- a frozen clamd: every wait ends at the timeout ---------------------------------
kill -STOP "$CLAMD_PID" || bail_out "cannot SIGSTOP clamd"
frozen() { # DESC MIN-MS: MS within [MIN, MIN + 3000): the timeout, not a hang
	local min=$2
	ok "[ \"\$R\" = unavailable ] && [ \"\$MS\" -ge $min ] && [ \"\$MS\" -lt $((min + 3000)) ]" \
		"$1: unavailable after ${MS} ms (timeout $min ms)"
}
scan -t 1000 -p "$CLAMD_UNIX"
frozen "clamd frozen, PING" 1000
like "$MSG" 'no answer within 1000 ms' "... the message says what it waited for"
scan -t 1000 "$CLAMD_UNIX" "$work/eicar"
frozen "clamd frozen, EICAR over the unix socket" 1000
like "$MSG" 'no answer within 1000 ms' "... waiting for the answer"
scan -t 1000 "$CLAMD_TCP" "$work/eicar"
frozen "clamd frozen, EICAR over TCP" 1000
scan -t 1000 "$CLAMD_UNIX" "$work/big"
frozen "clamd frozen, 26 MiB over the unix socket (the socket's buffer fills)" 1000
like "$MSG" 'took no more of the stream within 1000 ms' "... waiting to send: $MSG"
is "$EARLY $FED" "1 $big_size" "... settled mid-stream, the rest only counted"
kill -CONT "$CLAMD_PID"
scan -t 5000 "$CLAMD_UNIX" "$work/eicar"
is "$R" infected "SIGCONT: clamd answers again"
unix_addr=$CLAMD_UNIX tcp_addr=$CLAMD_TCP tcp_port=$CLAMD_PORT
clamd_stop

# --- clamd stopped -------------------------------------------------------------------
scan -t 5000 "$unix_addr" "$work/eicar"
ok '[ "$R" = unavailable ] && [ "$MS" -lt 1000 ]' "clamd stopped, unix socket: unavailable at once (${MS} ms)"
like "$MSG" 'cannot connect: (No such file or directory|Connection refused)' "... cannot connect: $MSG"
is "$EARLY" 1 "... known at the open"
scan -t 5000 "$tcp_addr" "$work/eicar"
ok '[ "$R" = unavailable ] && [ "$MS" -lt 1000 ]' "clamd stopped, TCP: unavailable at once (${MS} ms)"
like "$MSG" 'cannot connect: Connection refused' "... connection refused"
scan -t 5000 "localhost:$tcp_port" "$work/eicar"
ok '[ "$R" = unavailable ] && [ "$MS" -lt 1000 ]' "... by the name localhost too (${MS} ms)"
scan -t 5000 -p "$unix_addr"
is "$R" unavailable "PING with clamd stopped: unavailable"

# --- addresses that are not addresses ------------------------------------------------
bad() { # ADDRESS REASON
	scan "$1" "$work/eicar"
	ok '[ "$RC" = 2 ] && [ -z "$R" ]' "\"$1\": refused before any connection (exit $RC)"
	like "$ERR" "not an address of clamd.*: .*$2" "... saying: $ERR"
}
bad nonsense 'neither unix:/PATH nor HOST:PORT'
bad unix:clamd.ctl 'absolute path'
bad 127.0.0.1:99999 'port is not a number from 1 to 65535'
bad ::1:3310 'IPv6 address needs brackets'
bad "tcp://127.0.0.1:$tcp_port" 'a URL is not an address'
scan -p ''
is "$RC" 2 "PING of an empty address: refused (exit 2)"
done_testing
