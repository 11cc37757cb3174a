#!/usr/bin/env bash
# GET /metrics's counters are the sum over every responder process: the
# lane's lighttpd (several FastCGI processes), Apache mod_fcgid and the pool
# (bindery.fcgi --listen, four workers, behind Apache mod_proxy_fcgi) all
# add to one counters file.  Requests sent through all three are counted
# exactly, whichever process answers the scrape (each answer names its pid:
# at least three different ones), and the counts never go backwards
# between scrapes.  A create, a replace and a delete through three
# different servers count once each, the bytes in and out grow, and a
# `bindery sweep` (a process of its own) adds a run.  Every scrape is read
# by Debian's python3-prometheus-client (someone else's reading of the
# format); the build version, the up gauges and the stored documents and
# bytes (against the database) are checked, and the 401 without a caller
# says what the metrics need.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL \
	BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_TOKEN BINDERY_TEST_VAR
sql_session
PROM_PY=/usr/bin/python3	# Debian's, where python3-prometheus-client is installed
"$PROM_PY" -c 'import prometheus_client.parser' 2>/dev/null || missing "python3-prometheus-client"
servers="lighttpd=$BINDERY_TEST_LIGHTTPD_URL apache=$BINDERY_TEST_APACHE_URL pool=$BINDERY_TEST_APACHE_POOL_URL"
auth="Authorization: Bearer $BINDERY_TEST_TOKEN"
work=$(mktemp -d) || bail_out "mktemp -d failed"
trap 'rm -rf "$work"' EXIT
counters_file=$(sed -n 's/^counters_file = //p' "$BINDERY_CONFIG")
[ -n "$counters_file" ] || bail_out "the stack's bindery.conf names no [metrics] counters_file"

# scrape NAME URL: GET URL/metrics into $work/NAME.prom; SCRAPE_CODE and
# SCRAPE_PID (bindery_process_id: the process that answered).
scrape() {
	SCRAPE_CODE=$(curl -s -m 30 -o "$work/$1.prom" -w '%{http_code}' -H "$auth" "$2/metrics") || SCRAPE_CODE=000
	SCRAPE_PID=$(sed -n 's/^bindery_process_id \([0-9]*\)$/\1/p' "$work/$1.prom")
}
# value NAME SAMPLE: SAMPLE's value in scrape NAME (the raw text), 0 when absent.
value() {
	local v
	v=$(awk -v s="$2 " 'index($0, s) == 1 { print $NF; exit }' "$work/$1.prom")
	printf '%s\n' "${v:-0}"
}
# parsed NAME: scrape NAME read by python3-prometheus-client into
# $work/NAME.parsed (tests/tools/metrics_parse.py's lines); its status.
parsed() {
	"$PROM_PY" "$here/../tools/metrics_parse.py" "$work/$1.prom" >"$work/$1.parsed" 2>"$work/$1.err"
	local rc=$?
	sed 's/^/# /' "$work/$1.err"
	return $rc
}

lookups='bindery_http_requests_total{route="GET /documents/{id}",code="404"}'
scrapes='bindery_http_requests_total{route="GET /metrics",code="200"}'

# --- without a caller -------------------------------------------------------
code=$(curl -s -m 30 -o "$work/anon.json" -w '%{http_code}' "$BINDERY_TEST_APACHE_POOL_URL/metrics") || code=000
is "$code" 401 "/metrics without a caller is 401"
body=$(cat "$work/anon.json")
is "$(jfield "$body" error)" unauthorized "... error unauthorized (the JSON error body)"
like "$(jfield "$body" message)" '^the metrics need a bearer token' "... the message says what the metrics need"
unlike "$body" 'writes' "... not what writes need"

# --- one scrape from each server, read by someone else's parser -------------
version=$("$BINDERY_TEST_BIN/bindery.fcgi" --version | awk '{ print $NF }')
for s in $servers; do
	name=${s%%=*} url=${s#*=}
	scrape "first-$name" "$url"
	is "$SCRAPE_CODE" 200 "$name: /metrics is 200"
	parsed "first-$name"
	is "$?" 0 "$name: python3-prometheus-client parses it"
	is "$(awk '$3 != 1' "$work/first-$name.parsed" | head -n 3)" "" "$name: every family has a HELP"
	for c in http_requests documents_created documents_replaced documents_deleted http_request_bytes \
		http_response_bytes storage_errors database_errors sweep_runs sweep_actions; do
		ok "grep -q '^bindery_$c counter 1 bindery_${c}_total{' '$work/first-$name.parsed'" \
			"$name: bindery_${c}_total is a counter"
	done
	is "$(awk '$4 ~ /^bindery_build_info\{/ { print $4, $5 }' "$work/first-$name.parsed")" \
		"bindery_build_info{version=$version} 1.0" "$name: bindery_build_info names version $version"
	is "$(awk '$4 ~ /^bindery_(database|storage|counters)_up\{-\}$/ { print $4, $5 }' "$work/first-$name.parsed" |
		sort | tr '\n' ' ')" "bindery_counters_up{-} 1.0 bindery_database_up{-} 1.0 bindery_storage_up{-} 1.0 " \
		"$name: counters, database and storage up"
	ok "grep -q '^bindery_http_requests counter 1 bindery_http_requests_total{code=[0-9]*,route=[A-Z]* /' \
		'$work/first-$name.parsed'" "$name: requests are labelled by route template and code"
done
unlike "$(grep -h '^bindery_http_requests_total' "$work"/first-*.prom)" 'route="[^"]*/[0-9]' \
	"no route label holds a path's id (the label set stays bounded)"
# Nothing is written between the last scrape and this query (the lane is ours).
IFS=$'\t' read -r docs bytes <<<"$(sql "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM documents WHERE status = 'ready'")"
is "$(value first-pool bindery_stored_documents) $(value first-pool bindery_stored_bytes)" "$docs $bytes" \
	"bindery_stored_documents and _bytes are the database's ready rows and sizes ($docs, $bytes)"
is "$(stat -c '%U %a' "$counters_file")" "www-data 660" "the counters file is www-data's, mode 0660"

# --- N requests through three servers, the sum from every process -----------
before=$(value first-pool "$lookups")
sent=0
for s in $servers; do
	url=${s#*=}
	urls=()
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do urls+=("$url/documents/9999999999$i"); done
	sent=$((sent + $(curl -s -m 60 -H "$auth" -o /dev/null -w '%{http_code}\n' "${urls[@]}" | grep -c '^404$')))
done
is "$sent" 36 "36 lookups of missing documents answered 404 (12 through each server)"
pids='' last_scrapes='' backwards=0 k=0
for round in 1 2; do
	for s in $servers; do
		name=${s%%=*} url=${s#*=}
		k=$((k + 1))
		scrape "sum-$k" "$url"
		is "$(value "sum-$k" "$lookups")" "$((before + sent))" \
			"scrape $k ($name, pid $SCRAPE_PID): the 404 lookups are $before + $sent"
		n=$(value "sum-$k" "$scrapes")
		# Every scrape before this one was answered 200 and counted
		# (after its answer): one more each time, never fewer.
		if [ -n "$last_scrapes" ] && [ "$n" != $((last_scrapes + 1)) ]; then
			diag "scrape $k: $scrapes $n after $last_scrapes"
			backwards=$((backwards + 1))
		fi
		last_scrapes=$n pids="$pids $SCRAPE_PID"
	done
done
is "$backwards" 0 "each scrape saw the scrapes before it counted: one more each time, never backwards"
distinct=$(printf '%s\n' $pids | sort -u | grep -c .)
ok "[ $distinct -ge 3 ]" "the six scrapes were answered by $distinct different processes:$pids"
parsed "sum-$k"
is "$?" 0 "the last scrape parses too"

# --- a create, a replace and a delete, each through another server ---------
scrape docs-before "$BINDERY_TEST_LIGHTTPD_URL"
head -c 1000 /dev/urandom >"$work/v1.bin"
head -c 2000 /dev/urandom >"$work/v2.bin"
name="metrics-$$-$RANDOM.bin"
code=$(curl -s -m 30 -o "$work/created.json" -w '%{http_code}' -H "$auth" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$work/v1.bin" "$BINDERY_TEST_LIGHTTPD_URL/documents?name=$name") || code=000
id=$(jfield "$(cat "$work/created.json")" id)
is "$code" 201 "created $name through lighttpd (id $id)"
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X PUT -H "$auth" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$work/v2.bin" "$BINDERY_TEST_APACHE_URL/documents/$id/content") || code=000
is "$code" 200 "... replaced through Apache mod_fcgid"
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" \
	"$BINDERY_TEST_APACHE_POOL_URL/documents/$id") || code=000
is "$code" 204 "... deleted through the pool"
scrape docs-after "$BINDERY_TEST_APACHE_URL"
for c in created replaced deleted; do
	is "$(($(value docs-after "bindery_documents_${c}_total") - $(value docs-before "bindery_documents_${c}_total")))" 1 \
		"bindery_documents_${c}_total counted it once"
done
ok "[ $(($(value docs-after bindery_http_request_bytes_total) - $(value docs-before bindery_http_request_bytes_total))) -ge 3000 ]" \
	"bindery_http_request_bytes_total grew by the two bodies (3000 bytes) at least"
ok "[ $(($(value docs-after bindery_http_response_bytes_total) - $(value docs-before bindery_http_response_bytes_total))) -ge $(stat -c %s "$work/docs-before.prom") ]" \
	"bindery_http_response_bytes_total grew by the scrape answered between them at least"

# --- the sweeper, a process of its own, counts in the same file ------------
"$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" sweep --prefix "metrics-none-$$-" >"$work/sweep.out" 2>&1
rc=$?
sed 's/^/# sweep: /' "$work/sweep.out"
ok "[ $rc = 0 ] || [ $rc = 1 ]" "bindery sweep --prefix ran ($rc)"
scrape sweep-after "$BINDERY_TEST_APACHE_POOL_URL"
is "$(($(value sweep-after bindery_sweep_runs_total) - $(value docs-after bindery_sweep_runs_total)))" 1 \
	"bindery_sweep_runs_total counted the run, read through the pool"
is "$(grep -c '^bindery_sweep_actions_total{action="[a-z_]*"} [0-9]*$' "$work/sweep-after.prom")" 11 \
	"bindery_sweep_actions_total has its eleven actions"
done_testing
