#!/usr/bin/env bash
# GET /healthz through lighttpd, Apache and the pool (bindery.fcgi --listen
# behind Apache mod_proxy_fcgi): 200 when MariaDB and Azurite
# answer; 503 naming the one that does not while it is stopped (Azurite
# stopped refuses connections, and the message says so); 200 again after
# it restarts (the responder reconnects by itself).  Meanwhile /metrics
# stays 200 with bindery_database_up or bindery_storage_up 0.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_VAR \
	BINDERY_TEST_TOKEN
stack_init "$BINDERY_TEST_VAR"
stack_alive mariadb && stack_alive azurite || missing "MariaDB or Azurite of the test stack is not running"

servers="lighttpd=$BINDERY_TEST_LIGHTTPD_URL apache=$BINDERY_TEST_APACHE_URL pool=$BINDERY_TEST_APACHE_POOL_URL"

# wait_for URL WANT-CODE SECONDS: poll /healthz until it answers WANT-CODE.
wait_for() {
	local i
	for ((i = 0; i < $3 * 4; i++)); do
		req GET "$1/healthz"
		[ "$HTTP_CODE" = "$2" ] && return 0
		sleep 0.25
	done
	return 0
}

# all_healthy WHEN: every server answers 200 {"database":"ok","storage":"ok"}.
all_healthy() {
	local s name url
	for s in $servers; do
		name=${s%%=*} url=${s#*=}
		wait_for "$url" 200 15
		is "$HTTP_CODE" 200 "$name: /healthz is 200 $1"
		like "$HTTP_CTYPE" '^application/json' "$name: /healthz answers JSON $1"
		like "$HTTP_BODY" '"database" *: *"ok"' "$name: database ok $1"
		like "$HTTP_BODY" '"storage" *: *"ok"' "$name: storage ok $1"
	done
}

# all_down WHICH: every server answers 503 naming WHICH as not ok.
all_down() {
	local s name url other
	[ "$1" = database ] && other=storage || other=database
	for s in $servers; do
		name=${s%%=*} url=${s#*=}
		wait_for "$url" 503 15
		is "$HTTP_CODE" 503 "$name: /healthz is 503 with $1 down"
		like "$HTTP_BODY" "\"$1\"" "$name: the answer names $1"
		unlike "$HTTP_BODY" "\"$1\" *: *\"ok\"" "$name: $1 is not ok"
		like "$HTTP_BODY" "\"$other\" *: *\"ok\"" "$name: $other is still ok"
		ok 'no_secret_in "$HTTP_BODY"' "$name: no secret in the answer"
		# Stopped, it refuses connections: the message names that, not
		# the deadline that ended the retries.
		[ "$1" = database ] ||
			like "$(jfield "$HTTP_BODY" message)" '^storage refused the connection' \
				"$name: the message says storage refused the connection"
	done
	# A scraper wants the gauge, not a 503: /metrics (one server will
	# do: the code is the same) answers 200 and says which is down.
	metrics_code=$(curl -s -m 30 -o "$metrics_out" -w '%{http_code}' \
		-H "Authorization: Bearer $BINDERY_TEST_TOKEN" "$BINDERY_TEST_APACHE_POOL_URL/metrics") || metrics_code=000
	is "$metrics_code" 200 "pool: /metrics is 200 with $1 down"
	ok "grep -qx 'bindery_$1_up 0' '$metrics_out' && grep -qx 'bindery_${other}_up 1' '$metrics_out'" \
		"... bindery_$1_up 0, bindery_${other}_up 1"
	ok "grep -q '^bindery_http_requests_total{' '$metrics_out'" "... the counters are still there"
}

# no_secret_in TEXT: true unless TEXT holds the storage key or DB password.
no_secret_in() {
	local secret
	for secret in "${BINDERY_TEST_BLOB_KEY:-}" "${BINDERY_TEST_DB_PASSWORD:-}"; do
		[ -n "$secret" ] || continue
		case $1 in *"$secret"*) return 1 ;; esac
	done
	return 0
}

all_healthy "at the start"
metrics_out=$(mktemp) || bail_out "mktemp failed"

# MariaDB down and back.  Restart it whatever happens to the checks.
trap 'stack_mariadb_start >/dev/null 2>&1; stack_azurite_start >/dev/null 2>&1; rm -f "$metrics_out"' EXIT
stack_mariadb_stop
ok '! stack_alive mariadb' "MariaDB stopped"
all_down database
stack_mariadb_start >&2
ok 'stack_alive mariadb' "MariaDB started again on port $DB_PORT"
all_healthy "after MariaDB restarted"

# Azurite down and back.
stack_azurite_stop
ok '! stack_alive azurite' "Azurite stopped"
all_down storage
stack_azurite_start >&2
ok 'stack_alive azurite' "Azurite started again on port $BLOB_PORT"
all_healthy "after Azurite restarted"

done_testing
