# tests/lib/webhook.sh - a Standard Webhooks receiver of a test's own
# (tests/tools/webhook_receiver.py), for the tests of [events]
# (tests/e2e/events.sh, tests/e2e/restore_drill.sh, tests/chaos/events_chaos.sh,
# tests/cluster/events.sh).  Sourced after tests/lib/tap.sh.
#
# webhook_start DIR: a receiver with a fresh secret, its files in DIR
# (made if missing).  Sets
#   WEBHOOK_URL     its URL (http://127.0.0.1:PORT/hook)
#   WEBHOOK_CTL     its control endpoint's base URL
#   WEBHOOK_SECRET  the secret file (whsec_..., 0600), for secret_file =
#   WEBHOOK_EVENTS  the file of what it received, one JSON object a line
#   WEBHOOK_PID     its PID (stop it with webhook_stop PID, or kill it)
# Bails out when it does not come up within 5 s.  Start several in turn
# for several receivers, copying the variables between the starts.
webhook_start() {
	local dir=$1 i
	mkdir -p "$dir" || bail_out "no directory $dir for the receiver"
	# The secret through a file only: its bytes never pass a shell string.
	python3 -c 'import base64, os, sys; sys.stdout.write("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")' \
		>"$dir/secret" || bail_out "cannot make a webhook secret"
	chmod 0600 "$dir/secret"
	rm -f "$dir/rx.port" "$dir/rx.control"
	python3 "$_webhook_top/tests/tools/webhook_receiver.py" --port-file "$dir/rx.port" \
		--control-port-file "$dir/rx.control" --secret-file "$dir/secret" --log "$dir/rx.log" \
		--events "$dir/rx.events" 2>"$dir/rx.err" &
	WEBHOOK_PID=$!
	for ((i = 0; i < 100; i++)); do
		[ -s "$dir/rx.port" ] && [ -s "$dir/rx.control" ] && break
		sleep 0.05
	done
	[ -s "$dir/rx.port" ] || bail_out "webhook_receiver.py did not start: $(cat "$dir/rx.err")"
	WEBHOOK_URL=http://127.0.0.1:$(cat "$dir/rx.port")/hook
	WEBHOOK_CTL=http://127.0.0.1:$(cat "$dir/rx.control")
	WEBHOOK_SECRET=$dir/secret
	WEBHOOK_EVENTS=$dir/rx.events
}

# webhook_mode CTL JSON: set a receiver's mode (see webhook_receiver.py).
webhook_mode() {
	curl -s -X POST -H 'Content-Type: application/json' --data "$2" "$1/_control" >/dev/null
}

# webhook_stop PID: stop a receiver (SIGTERM; it removes its port files).
webhook_stop() {
	[ -z "$1" ] || kill "$1" 2>/dev/null
}

_webhook_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
