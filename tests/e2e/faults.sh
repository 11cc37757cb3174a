#!/usr/bin/env bash
# Faults between the responder and its services.
#
# bindery.fcgi runs as a CGI program with a second bindery.conf whose
# [storage] endpoint is tests/tools/faultproxy in front of Azurite.  Through the
# proxy: brief 503s (retried into a success, one document), an answer lost
# after the service acted (the create-only retry must recognise its own
# blob), a connection cut mid-body, a long stall.  Then Azurite killed during
# an upload and restarted, and MariaDB restarted between requests (through
# the stack's lighttpd, whose FastCGI workers keep their connections).  After
# every case: bindery sweep --older-than 0 --force, then the invariants in
# MariaDB and Azurite directly (tests/lib/chaos.sh chaos_verify).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/faultproxy.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
[ -x "$FAULTPROXY" ] || missing "tests/tools/faultproxy is not built"
[ -x "$CHAOS_BIN/bindery.fcgi" ] || missing "bindery.fcgi not found"

work=$(mktemp -d)
PROXY_PID=
cleanup() {
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
RUN=fl$$x$RANDOM
blob_port=${BINDERY_TEST_BLOB_ENDPOINT#http://127.0.0.1:}
blob_port=${blob_port%%/*}

proxy_start "$work" -t "127.0.0.1:$blob_port" || bail_out "faultproxy did not start"
pport=$PROXY_PORT

# The responder's config: storage through the proxy, a short deadline (a
# stalled call is given up at the next storage call past it).
sed -e "s|^endpoint = .*|endpoint = http://127.0.0.1:$pport/${BINDERY_TEST_BLOB_ACCOUNT}|" \
	-e 's|^request_deadline = .*|request_deadline = 6|' "$BINDERY_CONFIG" >"$work/proxy.conf"
grep -q "^endpoint = http://127.0.0.1:$pport/" "$work/proxy.conf" ||
	bail_out "the stack's bindery.conf has no [storage] endpoint line to point at the proxy"
# The CLI's: the stack's services directly, short sweep leases.
{ cat "$BINDERY_CONFIG"; grep -q '^\[sweep\]' "$BINDERY_CONFIG" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli.conf"
chmod 0600 "$work/proxy.conf" "$work/cli.conf"

# proxied METHOD URI FILE: FILE sent to bindery.fcgi in CGI mode, its storage
# through the proxy; sets CODE (000 without an answer) and BODY.
proxied() {
	local out=$work/answer.$BASHPID CGI_WRAP=(timeout 180) CGI_STDERR=$work/responder.log
	CGI_PROGRAM=$CHAOS_BIN/bindery.fcgi cgi_run "$out" "$work/proxy.conf" "$1" "$2" \
		BINDERY_FAILPOINTS_FILE=/dev/null CONTENT_LENGTH="$(stat -c %s "$3")" \
		CONTENT_TYPE=application/x-fault HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$3"
	CODE=$CGI_CODE
	BODY=$(cgi_body "$out")
}

# verify DESC NAME [FILE]: after a sweep, the invariants hold for this case;
# with FILE, NAME is a ready document with FILE's bytes (read through the
# stack's lighttpd), without, NAME does not exist.
n_case=0
begin() { case_t0=$SECONDS; n_case=$((n_case + 1)); P="$RUN-$n_case-"; chaos_snapshot "$work/before"; : >"$work/sweep.log"; }
verify() {
	local desc=$1 name=$2 file=${3:-} problems got id
	proxy_mode pass
	chaos_sweep "$work/cli.conf" "$work/sweep.log"
	problems=$(chaos_verify "$P" "$work/before")
	if [ -n "$file" ]; then
		id=$(sql "SELECT id FROM documents WHERE name = $(sql_quote "$name") AND status = 'ready'")
		got=$(curl -s -m 60 "$BINDERY_TEST_LIGHTTPD_URL/documents/${id:-0}/content" | sha)
		[ "$got" = "$(sha "$file")" ] || problems="$problems${problems:+$'\n'}$name is not readable with its bytes"
	else
		[ "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")" = 0 ] ||
			problems="$problems${problems:+$'\n'}$name exists"
	fi
	is "$problems" "" "$desc: after the sweep, consistent (case took $((SECONDS - case_t0)) s)"
	[ -z "$problems" ] || sed -e 's/^/#   sweep: /' "$work/sweep.log"
}

head -c 20000 /dev/urandom >"$work/small.bin"
head -c 9000000 /dev/urandom >"$work/large.bin"	# three 4 MiB blocks
head -c 20000000 /dev/urandom >"$work/five.bin"		# five

# --- pass ---
begin
proxied POST "/documents?name=${P}a" "$work/small.bin"
is "$CODE" 201 "through the proxy, a create is 201"
verify "pass" "${P}a" "$work/small.bin"

# --- brief 503s from storage: retried into a success, one document ---
for spec in "small:2" "large:3"; do
	size=${spec%%:*} k=${spec#*:}
	begin
	failed0=$(proxy_stat failed)
	proxy_mode "fail 503 $k"
	proxied POST "/documents?name=${P}a" "$work/$size.bin"
	is "$CODE" 201 "$k x 503 ServerBusy on a $size upload: retried into 201"
	is "$(($(proxy_stat failed) - failed0))" "$k" "... the proxy answered $k requests with 503"
	is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '${P}a'")" 1 "... exactly one document"
	verify "503 x $k ($size)" "${P}a" "$work/$size.bin"
done

# --- storage keeps failing: 503 to the client, only sweepable state ---
begin
proxy_mode "fail 503 1000"
proxied POST "/documents?name=${P}a" "$work/small.bin"
like "$CODE" '^5' "storage answering 503 to every try: the client gets a 5xx ($CODE)"
is "$(jfield "$BODY" error)" unavailable "... error unavailable"
verify "503 forever" "${P}a"

# --- the tag flip refused (412) while the tag still reads pending: the
# document must not become ready on a blob that is not committed ---
begin
proxy_mode "fail 412 1 comp=tags"
proxied POST "/documents?name=${P}a" "$work/small.bin"
like "$CODE" '^5' "Set Blob Tags refused with 412, the tag still pending: a 5xx ($CODE)"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '${P}a' AND status = 'ready'")" 0 \
	"... and no ready document"
verify "412 on the tag flip" "${P}a"

# --- the answer to a create-only Put Blob is lost after Azurite stored it ---
begin
proxy_mode "lose 1"
proxied POST "/documents?name=${P}a" "$work/small.bin"
is "$CODE" 201 "the Put Blob's answer lost: the retry recognises its own blob (201)"
is "$(proxy_stat lost)" 1 "... one answer was lost"
verify "lost answer" "${P}a" "$work/small.bin"

# --- cut mid-body ---
begin
proxy_mode "cut 1000000 1"
proxied POST "/documents?name=${P}a" "$work/large.bin"
is "$CODE" 201 "one connection cut mid-block: the block is retried (201)"
verify "cut once" "${P}a" "$work/large.bin"
begin
proxy_mode "cut 1000000 1000"
proxied POST "/documents?name=${P}a" "$work/large.bin"
like "$CODE" '^5' "every try cut mid-block: the client gets a 5xx ($CODE)"
verify "cut always" "${P}a"
# Five blocks: the fifth goes out on a connection an earlier block used,
# and the service drops that connection mid-body (Azurite does, answering
# 500, when its disk is full).  curl must send the block again on a new
# connection, rewinding its body; before the blob client let it rewind,
# the create answered 500.
begin
cuts=$(proxy_stat cut)
proxy_mode "cut 1000000 1 reused"
proxied POST "/documents?name=${P}a" "$work/five.bin"
is "$CODE" 201 "a kept-alive connection dropped mid-block: the block is sent again (201)"
is "$(($(proxy_stat cut) - cuts))" 1 "... the proxy did drop one reused connection"
verify "reused connection cut" "${P}a" "$work/five.bin"

# --- a stall: brief (the transfer resumes), then one that never ends ---
begin
proxy_mode stall
proxied POST "/documents?name=${P}a" "$work/small.bin" >/dev/null &
sleep 3
proxy_mode pass
wait $!
n=$(sql "SELECT COUNT(*) FROM documents WHERE name = '${P}a' AND status = 'ready'")
# 3 s is well inside the 6 s deadline: the transfer resumes and the create succeeds.
is "$n" 1 "storage stalled 3 s during a create, then resumed: the document is ready"
if [ "$n" = 1 ]; then verify "brief stall" "${P}a" "$work/small.bin"; else verify "brief stall" "${P}a"; fi
# A service that stalls for good: each storage attempt is cut at the time
# the request has left, and compensation gets its own short budget, so the
# client hears 503 soon after request_deadline, not minutes later.
begin
proxy_mode stall
t0=$(date +%s)
proxied POST "/documents?name=${P}a" "$work/small.bin"
t1=$(date +%s)
proxy_mode pass
like "$CODE" '^5' "storage stalled for good: the client gets a 5xx ($CODE)"
ok '[ $((t1 - t0)) -le 30 ]' "... after $((t1 - t0)) s: the deadline (6 s) plus compensation (5 s) bound it"
verify "long stall" "${P}a"

# --- Azurite killed during an upload, then restarted on the same port ---
. "$top/tests/lib/stack.sh"
stack_init "$BINDERY_TEST_VAR"
if ! stack_alive azurite; then
	if under_dev_test; then fail "Azurite of the ./dev test stack is running and ours to restart"
	else skip "Azurite of this stack is not ours to restart" 3; fi
else
	begin
	proxy_mode "latency 20"	# slow the upload down (~3 s) so the kill lands in it
	( proxied POST "/documents?name=${P}a" "$work/large.bin"; echo "$CODE" >"$work/killed.code" ) &
	cgi_pid=$!
	sleep 1
	stack_azurite_stop
	sleep 0.5
	BLOB_PORT_WAS=$BLOB_PORT
	stack_azurite_start || bail_out "Azurite did not come back"
	[ "$BLOB_PORT" = "$BLOB_PORT_WAS" ] || bail_out "Azurite came back on another port ($BLOB_PORT)"
	wait "$cgi_pid"
	# The answer went to the background job's variables; ask the database.
	n=$(sql "SELECT COUNT(*) FROM documents WHERE name = '${P}a' AND status = 'ready'")
	code=$(cat "$work/killed.code" 2>/dev/null)
	case $code:$n in 201:1 | 5??:0 | 5??:1) pass "Azurite killed during a staged upload and restarted: answered $code, document ready: $n" ;;
	*) fail "Azurite killed during a staged upload and restarted: answered $code, document ready: $n" ;;
	esac
	proxy_mode pass
	chaos_sweep "$work/cli.conf" "$work/sweep.log"
	problems=$(chaos_verify "$P" "$work/before")
	is "$problems" "" "Azurite restart: after the sweep, consistent"
	begin
	proxied POST "/documents?name=${P}b" "$work/small.bin"
	is "$CODE" 201 "after the restart, a create is 201"
fi

# --- MariaDB restarted between requests (lighttpd's FastCGI workers) ---
if ! stack_alive mariadb; then
	if under_dev_test; then fail "MariaDB of the ./dev test stack is running and ours to restart"
	else skip "MariaDB of this stack is not ours to restart" 3; fi
else
	begin
	curl -s -o /dev/null -m 30 "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-fault' \
		--data-binary "@$work/small.bin" "$BINDERY_TEST_LIGHTTPD_URL/documents?name=${P}warm"
	stack_mariadb_stop
	code=$(curl -s -o /dev/null -m 30 -w '%{http_code}' "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-fault' \
		--data-binary "@$work/small.bin" "$BINDERY_TEST_LIGHTTPD_URL/documents?name=${P}down")
	is "$code" 503 "MariaDB down: a create is 503"
	stack_mariadb_start || bail_out "MariaDB did not come back"
	codes=''
	for try in 1 2 3; do
		code=$(curl -s -o /dev/null -m 30 -w '%{http_code}' "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-fault' \
			--data-binary "@$work/small.bin" "$BINDERY_TEST_LIGHTTPD_URL/documents?name=${P}a")
		codes="$codes $code"
		[ "$code" = 201 ] && break
	done
	is "${codes# }" 201 "MariaDB restarted: the next create through lighttpd is 201 (the workers reconnect)"
	verify "MariaDB restart" "${P}a" "$work/small.bin"
fi

done_testing
