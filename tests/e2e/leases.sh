#!/usr/bin/env bash
# Leases instead of a request deadline (doc/design.md "Leases").  A private
# lighttpd, first with mod_fastcgi (conf/lighttpd.conf) and then running
# bindery.fcgi as a plain CGI program (conf/lighttpd-cgi.conf), in front of
# the test stack's MariaDB and Azurite, with
#   request_deadline = 5, heartbeat = 2, body_idle_timeout = 3,
#   sweep_cutoff = 25 (the least the relation allows: 2 x (2 + 5 + 3) + 5):
#   - a 3 MiB upload trickled over about 40 s (eight times the deadline,
#     longer than the cutoff) answers 201 and reads back byte-identical
#     (SHA-256 of the files); FastCGI with 1 MiB blocks (Put Block, Put
#     Block List), CGI with one Put Blob;
#   - a plain `bindery sweep` (no --older-than: leases only) run 30 s into
#     each upload, when the intent is older than sweep_cutoff, does not take
#     it: the row is still pending under the same holder, and the upload
#     still answers 201.
# Under Apache mod_fcgid reads the whole body before bindery sees a byte, so
# there is no heartbeat to test there (doc/deploying.md, "Apache with mod_fcgid").
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/chaos.sh"
. "$here/../lib/stack.sh"

chaos_need_private_lighttpd
command -v python3 >/dev/null || missing "python3 is needed for the slow client"

slow_client=$here/../tools/slow_client.py
run=lease$$x$RANDOM
prefix=leases-$run-
size=3145728			# 3 MiB
chunk=40000 every=0.5		# 80 KB/s: about 40 s
sweep_at=30			# seconds after the intent: past sweep_cutoff (25)

work=$(mktemp -d)
cleanup() {
	stack_private_lighttpd_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The body slow_client.py sends (b'x' repeated), as a file to hash.
python3 -c "import sys; sys.stdout.buffer.write(b'x' * $size)" >"$work/body.bin"

# conf NAME BLOCK: the stack's configuration with the small bounds, 1 MiB
# blocks or one Put Blob, and a blob prefix of this run's own.
conf() {
	stack_test_conf "$work/$1.conf" "$prefix" '[limits]' 'request_deadline = 5' 'heartbeat = 2' \
		'body_idle_timeout = 3' 'sweep_cutoff = 25' "block_size = $2" "single_put_max = $2" ||
		bail_out "the test configuration does not load"
}
conf fastcgi 1M
conf cgi 4M

# server KIND TEMPLATE: a private lighttpd from conf/TEMPLATE in a state
# directory of its own, running bindery.fcgi with KIND's configuration.
server() {
	stack_private_lighttpd "$BINDERY_TEST_VAR/leases-$1" "$2" "$work/$1.conf" "$BINDERY_TEST_BIN" 18300 ||
		bail_out "lighttpd ($1) did not start"
	note "lighttpd $1 on port $HTTP_PORT"
}

intent_written() { [ -n "$(blob_of "$1")" ]; }
blob_of() { sql "SELECT blob_name FROM documents WHERE name = '$1'"; }
row_of() { sql "SELECT CONCAT(state, ' ', COALESCE(holder, '-')) FROM blobs WHERE name = '$1'"; }

# upload KIND: the slow upload through the server started last, a sweep
# in the middle of it, then the checks.
upload() {
	local kind=$1 name=$run-$1 code secs err blob before after id t0
	t0=$(date +%s)
	python3 "$slow_client" --port "$HTTP_PORT" --path "/documents?name=$name" \
		--header "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		--header 'Content-Type: application/octet-stream' --length "$size" --first 0 \
		--every "$every" --chunk "$chunk" --give-up 120 >"$work/$kind.out" 2>"$work/$kind.err" ||
		printf '000 0 client-failed -\n' >"$work/$kind.out" &
	local client=$!
	ok "$(wait_for 20 intent_written "$name"; echo $?)" "$kind: the upload's intent is written"
	blob=$(blob_of "$name")
	sleep $((sweep_at - ($(date +%s) - t0)))
	before=$(row_of "$blob")
	"$BINDERY_TEST_BIN/bindery" -c "$work/$kind.conf" sweep --prefix "${blob#"$prefix"}" \
		>"$work/$kind-sweep.log" 2>&1
	is "$?" 0 "$kind: a plain bindery sweep ($(($(date +%s) - t0)) s into the upload) exits 0"
	after=$(row_of "$blob")
	like "$before" '^pending [0-9a-f]+$' "$kind: the row is pending under its holder before the sweep"
	is "$after" "$before" "$kind: ... and after it: the sweep did not take the live upload"
	ok "$(kill -0 "$client" 2>/dev/null; echo $?)" "$kind: ... which was still streaming then"
	wait "$client"
	read -r code secs err _ <"$work/$kind.out"
	is "$code" 201 "$kind: the 3 MiB upload over $secs s (request_deadline 5) answers 201 ($err)"
	if [ "$code" != 201 ]; then
		# What the responder and the database said while it ran.
		tail -n 15 "$BINDERY_TEST_VAR/leases-$kind/log/lighttpd-error.log" \
			"$BINDERY_TEST_VAR/log/mariadb.log" 2>&1 | sed -e 's/^/#   /'
	fi
	ok "awk -v s='$secs' 'BEGIN { exit !(s >= 30) }'" "$kind: ... and it took longer than sweep_cutoff"
	id=$(sql "SELECT id FROM documents WHERE name = '$name' AND status = 'ready'")
	curl -s -m 60 -o "$work/$kind.read" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"http://127.0.0.1:$HTTP_PORT/documents/${id:-0}/content"
	is "$(sha "$work/$kind.read")" "$(sha "$work/body.bin")" "$kind: it reads back byte-identical (SHA-256)"
	is "$(sql "SELECT state FROM blobs WHERE name = '$blob'")" committed "$kind: its registry row is committed"
	# Leave nothing behind: the document goes through the outbox.
	curl -s -m 30 -o /dev/null -X DELETE -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"http://127.0.0.1:$HTTP_PORT/documents/${id:-0}"
}

server fastcgi lighttpd.conf
upload fastcgi
stack_stop lighttpd 20
server cgi lighttpd-cgi.conf
upload cgi
stack_stop lighttpd 20

done_testing
