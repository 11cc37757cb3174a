#!/usr/bin/env bash
# Leases instead of a request deadline (doc/design.md "Leases").  Three
# servers in front of the test stack's MariaDB and Azurite, side by side: a
# private lighttpd with mod_fastcgi (conf/lighttpd.conf), one running
# bindery.fcgi as a plain CGI program (conf/lighttpd-cgi.conf), and a pool
# (bindery.fcgi --listen) behind Apache mod_proxy_fcgi
# (conf/apache-proxy-fcgi.conf), each with
#   request_deadline = 3, heartbeat = 1, body_idle_timeout = 2,
#   sweep_cutoff = 17 (the least the relation allows: 2 x (1 + 3 + 2) + 5):
#   - a 3 MiB upload trickled over about 31 s (ten times the deadline,
#     longer than the cutoff) answers 201 and reads back byte-identical
#     (SHA-256 of the files); FastCGI and the pool with 1 MiB blocks (Put
#     Block, Put Block List), CGI with one Put Blob;
#   - a plain `bindery sweep` (no --older-than: leases only) run 21 s into
#     each upload, when the intent is older than sweep_cutoff, does not take
#     it: the row is still pending under the same holder, and the upload
#     still answers 201.
# The three uploads run at once (they mostly wait), so the test takes one
# upload's time.  Under Apache mod_fcgid, Apache reads the whole body before
# bindery sees a byte, so there is no heartbeat to test there
# (doc/deploying.md, "Apache with mod_fcgid"); mod_proxy_fcgi streams it.
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
chunk=40000 every=0.4		# 100 KB/s: about 31 s
cutoff=17
sweep_at=21			# seconds after the intent: past sweep_cutoff
kinds="fastcgi cgi pool"

work=$(mktemp -d)
cleanup() {
	local d
	for d in fastcgi cgi; do
		[ -d "$BINDERY_TEST_VAR/leases-$d" ] || continue
		stack_init "$BINDERY_TEST_VAR/leases-$d"
		stack_lighttpd_stop
	done
	stack_private_pool_stop
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
	stack_test_conf "$work/$1.conf" "$prefix" '[limits]' 'request_deadline = 3' 'heartbeat = 1' \
		'body_idle_timeout = 2' "sweep_cutoff = $cutoff" "block_size = $2" "single_put_max = $2" ||
		bail_out "the test configuration does not load"
}
conf fastcgi 1M
conf cgi 4M
conf pool 1M

# The servers, each in a state directory of its own; port[KIND] is where
# KIND's upload goes, log[KIND] what to show when it fails.
declare -A port log t0 client blob before
stack_private_lighttpd "$BINDERY_TEST_VAR/leases-fastcgi" lighttpd.conf "$work/fastcgi.conf" "$BINDERY_TEST_BIN" \
	18300 || bail_out "lighttpd (fastcgi) did not start"
port[fastcgi]=$HTTP_PORT log[fastcgi]=$STACK_LOG/lighttpd-error.log
STACK_AVOID_PORTS=${port[fastcgi]}
stack_private_lighttpd "$BINDERY_TEST_VAR/leases-cgi" lighttpd-cgi.conf "$work/cgi.conf" "$BINDERY_TEST_BIN" \
	18300 || bail_out "lighttpd (cgi) did not start"
port[cgi]=$HTTP_PORT log[cgi]=$STACK_LOG/lighttpd-error.log
STACK_AVOID_PORTS="${port[fastcgi]} ${port[cgi]}"
stack_private_pool "$BINDERY_TEST_VAR/leases-pool" "$work/pool.conf" 2 18320 || bail_out "the pool did not start"
stack_apache_start "$STACK_PRIVATE_POOL_CONF" apache-pool "$APACHE_POOL_PORT" ||
	bail_out "the pool's Apache did not start (log in $STACK_LOG)"
port[pool]=$APACHE_POOL_PORT log[pool]=$STACK_LOG/pool.log
note "ports: lighttpd fastcgi ${port[fastcgi]}, lighttpd cgi ${port[cgi]}, the pool's Apache ${port[pool]}"

intent_written() { [ -n "$(blob_of "$1")" ]; }
blob_of() { sql "SELECT blob_name FROM documents WHERE name = '$1'"; }
row_of() { sql "SELECT CONCAT(state, ' ', COALESCE(holder, '-')) FROM blobs WHERE name = '$1'"; }
age() { echo $(($(date +%s) - ${t0[$1]})); }

# The three slow uploads at once.
for kind in $kinds; do
	t0[$kind]=$(date +%s)
	python3 "$slow_client" --port "${port[$kind]}" --path "/documents?name=$run-$kind" \
		--header "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		--header 'Content-Type: application/octet-stream' --length "$size" --first 0 \
		--every "$every" --chunk "$chunk" --give-up 120 >"$work/$kind.out" 2>"$work/$kind.err" ||
		printf '000 0 client-failed -\n' >"$work/$kind.out" &
	client[$kind]=$!
done
for kind in $kinds; do
	ok "$(wait_for 20 intent_written "$run-$kind"; echo $?)" "$kind: the upload's intent is written"
	blob[$kind]=$(blob_of "$run-$kind")
done

# A sweep in the middle of each, past sweep_cutoff: the three side by side,
# each at its own upload's mark (one after the other, on a loaded machine,
# the last came 51 s in, after its upload had ended).
sweep_mid() { # KIND: its facts in $work/KIND.mid, one per line
	local kind=$1 before after rc alive=no
	[ "$(age "$kind")" -ge "$sweep_at" ] || sleep $((sweep_at - $(age "$kind")))
	before=$(row_of "${blob[$kind]}")
	"$BINDERY_TEST_BIN/bindery" -c "$work/$kind.conf" sweep --prefix "${blob[$kind]#"$prefix"}" \
		>"$work/$kind-sweep.log" 2>&1
	rc=$?
	after=$(row_of "${blob[$kind]}")
	kill -0 "${client[$kind]}" 2>/dev/null && alive=yes
	printf '%s\n' "$rc" "$(age "$kind")" "$before" "$after" "$alive" >"$work/$kind.mid"
}
mids=()
for kind in $kinds; do
	sweep_mid "$kind" &
	mids+=($!)
done
wait "${mids[@]}"
for kind in $kinds; do
	{ read -r rc; read -r at; read -r before_row; read -r after; read -r alive; } <"$work/$kind.mid"
	is "$rc" 0 "$kind: a plain bindery sweep ($at s into the upload) exits 0"
	like "$before_row" '^pending [0-9a-f]+$' "$kind: the row is pending under its holder before the sweep"
	is "$after" "$before_row" "$kind: ... and after it: the sweep did not take the live upload"
	is "$alive" yes "$kind: ... which was still streaming then"
done

# Each upload's end.
for kind in $kinds; do
	wait "${client[$kind]}"
	read -r code secs err _ <"$work/$kind.out"
	is "$code" 201 "$kind: the 3 MiB upload over $secs s (request_deadline 3) answers 201 ($err)"
	if [ "$code" != 201 ]; then
		# What the responder and the database said while it ran.
		tail -n 15 "${log[$kind]}" "$BINDERY_TEST_VAR/log/mariadb.log" 2>&1 | sed -e 's/^/#   /'
	fi
	ok "awk -v s='$secs' 'BEGIN { exit !(s > $cutoff) }'" "$kind: ... and it took longer than sweep_cutoff ($cutoff s)"
	id=$(sql "SELECT id FROM documents WHERE name = '$run-$kind' AND status = 'ready'")
	curl -s -m 60 -o "$work/$kind.read" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"http://127.0.0.1:${port[$kind]}/documents/${id:-0}/content"
	is "$(sha "$work/$kind.read")" "$(sha "$work/body.bin")" "$kind: it reads back byte-identical (SHA-256)"
	is "$(sql "SELECT state FROM blobs WHERE name = '${blob[$kind]}'")" committed "$kind: its registry row is committed"
	# Leave nothing behind: the document goes through the outbox.
	curl -s -m 30 -o /dev/null -X DELETE -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"http://127.0.0.1:${port[$kind]}/documents/${id:-0}"
done

done_testing
