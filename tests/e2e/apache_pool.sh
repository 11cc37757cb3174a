#!/usr/bin/env bash
# The pool (bindery.fcgi --listen, run as www-data) behind Apache
# mod_proxy_fcgi with conf/apache-proxy-fcgi.conf, as the test stack runs
# them (BINDERY_TEST_APACHE_POOL_URL):
#   - /healthz is 200; a binary document (random bytes and NULs) goes through
#     create, the list by name, get, download, replace and delete, its bytes
#     compared by SHA-256 of files; Location has no prefix (SCRIPT_NAME is
#     the mount's, not the whole path);
#   - streaming: 5 MiB at once and then 1 MiB trickled over about 8 s; the
#     first block is staged in storage (Put Block, an uncommitted block)
#     while the client is still sending, and the upload answers 201 and
#     reads back whole.  (Under mod_fcgid bindery sees nothing before the
#     last byte.)
#   - a body that ends before its Content-Length (the client half-closes)
#     is 400 in JSON and leaves no row and no blob; a declared length over
#     LimitRequestBody is 413 at once;
#   - a bearer token reaches bindery (CGIPassAuth: owner demo) and so does
#     the user Apache authenticated (REMOTE_USER: owner alice);
#   - more clients than workers: 3 x N requests at once (N = the pool's
#     workers), N of them slow uploads that hold a worker for about 5 s,
#     all complete, the quick ones as soon as workers are free, and no
#     connection to the pool outlives its request (no kept connection holds
#     a worker);
#   - conf/lighttpd-pool.conf: a private lighttpd on the same pool's socket
#     serves /healthz and a document.
# The prefix mount is in tests/e2e/prefix.sh; slow clients, leases and tus
# through the pool in slow_clients.sh, leases.sh, tus_webserver.sh and
# tus_client.sh (and tus.sh under --long).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/chaos.sh"
. "$here/../lib/stack.sh"

chaos_need_private_lighttpd
need_stack BINDERY_TEST_APACHE_POOL_URL BINDERY_TEST_POOL_SOCKET BINDERY_TEST_POOL_WORKERS \
	BINDERY_TEST_WEBAUTH
command -v python3 >/dev/null || missing "python3 is needed for the raw-socket clients"
command -v ss >/dev/null || missing "ss (iproute2) is needed to count the pool's connections"
stack_alive pool && stack_alive apache-pool || missing "the test stack's pool or its Apache is not running"

url=$BINDERY_TEST_APACHE_POOL_URL
port=${url##*:}
workers=$BINDERY_TEST_POOL_WORKERS
slow_client=$here/../tools/slow_client.py
run=pool$$x$RANDOM
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
octet=(-H 'Content-Type: application/octet-stream')
MIB=1048576

work=$(mktemp -d)
cleanup() {
	stack_private_lighttpd_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rows() { sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"; }
# remember: the blobs of this run's documents now (before a delete or a
# replace retires them), for the storage check at the end.
remember() { sql "SELECT blob_name FROM documents WHERE name LIKE '$run-%'" >>"$work/blobs.mine"; }
: >"$work/blobs.mine"
chaos_snapshot "$work/blobs.before" || bail_out "cannot list Azurite"

# ---- healthz and a binary round trip -----------------------------------------
req GET "$url/healthz"
is "$HTTP_CODE" 200 "GET /healthz through the pool is 200"
like "$HTTP_BODY" '"database" *: *"ok"' "... the pool's workers reach the database"

# Random bytes with runs of NULs in them (a shell string would drop those).
{ head -c 300000 /dev/urandom; head -c 4096 /dev/zero; head -c 300000 /dev/urandom; } >"$work/doc.bin"
{ head -c 1000 /dev/zero; head -c 200000 /dev/urandom; } >"$work/doc2.bin"
ok "[ \$(tr -cd '\\000' <'$work/doc.bin' | wc -c) -ge 4096 ]" "the body has NUL bytes"
name=$run-bin
req POST "$url/documents?name=$name" "${auth[@]}" "${octet[@]}" --data-binary "@$work/doc.bin"
is "$HTTP_CODE" 201 "create a 604 KB binary document: 201"
id=$(jfield "$HTTP_BODY" id)
is "$(header location)" "/documents/$id" "... Location /documents/N: no prefix (SCRIPT_NAME is the mount's)"
is "$(jfield "$HTTP_BODY" sha256) $(jfield "$HTTP_BODY" size)" "$(sha "$work/doc.bin") $(wc -c <"$work/doc.bin")" \
	"... its sha256 and size are the file's"
req GET "$url/documents?name=$(urlenc "$name")"
is "$HTTP_CODE $(jfield "$HTTP_BODY" id)" "200 $id" "the list by name finds it"
req GET "$url/documents/$id"
is "$HTTP_CODE $(jfield "$HTTP_BODY" name)" "200 $name" "GET /documents/N is its metadata"
etag=$(header etag)
curl -s -m 30 -o "$work/doc.read" "$url/documents/$id/content"
is "$(sha "$work/doc.read")" "$(sha "$work/doc.bin")" "its download is byte-identical (SHA-256)"
remember
req PUT "$url/documents/$id/content" "${auth[@]}" "${octet[@]}" -H "If-Match: $etag" \
	--data-binary "@$work/doc2.bin"
is "$HTTP_CODE" 200 "replace with the current If-Match: 200"
remember
curl -s -m 30 -o "$work/doc2.read" "$url/documents/$id/content"
is "$(sha "$work/doc2.read")" "$(sha "$work/doc2.bin")" "... the download is now the new bytes"
req DELETE "$url/documents/$id" "${auth[@]}"
is "$HTTP_CODE" 204 "delete: 204"
req GET "$url/documents/$id"
is "$HTTP_CODE" 404 "... then GET is 404"

# ---- streaming: storage sees the body while the client still sends ----------
# slow_client.py sends b'x' repeated: the same bytes as a file, to compare.
python3 -c "import sys; sys.stdout.buffer.write(b'x' * (6 * $MIB))" >"$work/x6.bin"
name=$run-stream
t0=$(date +%s.%N)
python3 "$slow_client" --port "$port" --path "/documents?name=$name" \
	--header "Authorization: Bearer $BINDERY_TEST_TOKEN" --header 'Content-Type: application/octet-stream' \
	--length $((6 * MIB)) --first $((5 * MIB)) --every 0.5 --chunk 65536 --give-up 90 \
	>"$work/stream.out" 2>"$work/stream.err" || printf '000 0 client-failed -\n' >"$work/stream.out" &
client=$!
blob_of() { sql "SELECT blob_name FROM documents WHERE name = '$1'"; }
staged() { local b; b=$(blob_of "$name"); [ -n "$b" ] && [ "$(az_staged "$b")" -ge 1 ] 2>/dev/null; }
wait_for 20 staged
staged_rc=$?
still=$(kill -0 "$client" 2>/dev/null && echo sending || echo done)
seen=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
is "$staged_rc $still" "0 sending" "a block is staged in storage ${seen} s in, while the client still sends"
is "$(sql "SELECT state FROM blobs WHERE name = '$(blob_of "$name")'")" pending "... its registry row is pending then"
wait "$client"
read -r code secs err _ <"$work/stream.out"
is "$code" 201 "the trickled 6 MiB upload answers 201 after $secs s"
# (The client's own clock starts when it connects, $seen when python3 was
# started: comparing them said more about the machine's load than about
# streaming; "still sends" above is the fact.)
id=$(sql "SELECT id FROM documents WHERE name = '$name' AND status = 'ready'")
curl -s -m 60 -o "$work/x6.read" "$url/documents/${id:-0}/content"
is "$(sha "$work/x6.read")" "$(sha "$work/x6.bin")" "... and reads back whole (SHA-256)"
remember
req DELETE "$url/documents/${id:-0}" "${auth[@]}" >/dev/null

# ---- bodies that do not arrive whole ------------------------------------------
head -c 200000 /dev/urandom >"$work/part.bin"
name=$run-short
python3 "$here/../tools/short_body.py" "$url/documents?name=$name" 1000000 "$work/part.bin" "$work/short" \
	"Authorization: Bearer $BINDERY_TEST_TOKEN" 'Content-Type: application/octet-stream'
is "$(<"$work/short.code")" 400 "200 KB of a declared 1 MB, then the client half-closes: 400"
is "$(sed -n 's/^content-type: *//p' "$work/short.headers" | tr -d '\r')" application/json "... in JSON"
like "$(tr -d '\0' <"$work/short.body")" '"error":"bad_request"' "... the server's bad_request"
no_rows() { [ "$(rows "$1")" = 0 ]; }
ok "$(wait_for 10 no_rows "$name"; echo $?)" "... and no document row is left (the intent compensated)"

printf 'x' >"$work/one"
name=$run-cl
REQ_TIMEOUT=20 req POST "$url/documents?name=$name" "${auth[@]}" "${octet[@]}" -H 'Content-Length: 70000000' \
	--data-binary "@$work/one"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "413 too_large" "Content-Length 70000000 with a 1-byte body: 413 too_large"
is "$HTTP_CTYPE" application/json "... in JSON"
is "$(rows "$name")" 0 "... and no document row"

# ---- who the caller is ----------------------------------------------------------
printf 'owner check\n' >"$work/small"
req POST "$url/documents?name=$run-token" "${auth[@]}" -H 'Content-Type: text/plain' --data-binary "@$work/small"
id=$(jfield "$HTTP_BODY" id)
is "$HTTP_CODE $(sql "SELECT owner FROM documents WHERE id = '${id:-0}'")" "201 demo" \
	"a bearer token reaches bindery (CGIPassAuth): 201, owner demo"
remember
req DELETE "$url/documents/${id:-0}" "${auth[@]}" >/dev/null
req POST "$url/documents?name=$run-anon" -H 'Content-Type: text/plain' --data-binary "@$work/small"
is "$HTTP_CODE" 401 "... and without one a write is 401"
req POST "$url/documents?name=$run-basic" -u "$BINDERY_TEST_WEBAUTH" -H 'Content-Type: text/plain' \
	--data-binary "@$work/small"
id=$(jfield "$HTTP_BODY" id)
is "$HTTP_CODE $(sql "SELECT owner FROM documents WHERE id = '${id:-0}'")" "201 ${BINDERY_TEST_WEBAUTH%%:*}" \
	"the user Apache authenticated reaches bindery (REMOTE_USER)"
remember
req DELETE "$url/documents/${id:-0}" -u "$BINDERY_TEST_WEBAUTH" >/dev/null

# ---- more clients than workers ----------------------------------------------------
# pool_conns: connections to the pool's socket now, its listener aside.
pool_conns() { ss -xH state connected 2>/dev/null | awk -v s="$BINDERY_TEST_POOL_SOCKET" '$5 == s' | wc -l; }
no_pool_conns() { [ "$(pool_conns)" = 0 ]; }
python3 -c "import sys; sys.stdout.buffer.write(b'x' * 102400)" >"$work/x100k.bin"
n=$((3 * workers))
t0=$(date +%s.%N)
pids=()
for ((i = 1; i <= workers; i++)); do
	# 100 KB in 10 KB steps every half second: about 5 s, a worker each.
	python3 "$slow_client" --port "$port" --path "/documents?name=$run-slow-$i" \
		--header "Authorization: Bearer $BINDERY_TEST_TOKEN" --header 'Content-Type: application/octet-stream' \
		--length 102400 --first 0 --every 0.5 --chunk 10240 --give-up 90 >"$work/slow-$i" 2>&1 ||
		printf '000 0 client-failed -\n' >"$work/slow-$i" &
	pids+=($!)
done
# The slow ones first hold every worker (python3 takes a while to start).
busy() { [ "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-slow-%'")" -ge "$workers" ]; }
ok "$(wait_for 20 busy; echo $?)" "$workers slow uploads hold the $workers workers"
ok "[ $(pool_conns) -ge $workers ]" "... each on a connection of its own to the pool ($(pool_conns) now)"
for ((i = 1; i <= n - workers; i++)); do
	if ((i % 2)); then
		curl -s -m 90 -o /dev/null -w '%{http_code} %{time_total}\n' "${auth[@]}" "${octet[@]}" \
			--data-binary "@$work/doc2.bin" "$url/documents?name=$run-quick-$i" >"$work/quick-$i" 2>&1 &
	else
		curl -s -m 90 -o /dev/null -w '%{http_code} %{time_total}\n' "$url/healthz" >"$work/quick-$i" 2>&1 &
	fi
	pids+=($!)
done
wait "${pids[@]}"
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
codes=
for ((i = 1; i <= workers; i++)); do read -r code _ <"$work/slow-$i"; codes+=" $code"; done
for ((i = 1; i <= n - workers; i++)); do read -r code _ <"$work/quick-$i"; codes+=" $code"; done
want=$(for ((i = 1; i <= workers; i++)); do printf ' 201'; done)
want+=$(for ((i = 1; i <= n - workers; i++)); do ((i % 2)) && printf ' 201' || printf ' 200'; done)
is "$codes" "$want" "$n requests at once on $workers workers ($workers slow): every one answered, 201 or 200"
ok "awk -v t='$took' 'BEGIN { exit !(t < 40) }'" "... all within $took s (the slow ones take about 5 s)"
ok "$(wait_for 5 no_pool_conns; echo $?)" "... and no connection to the pool is left open after them ($(pool_conns) now)"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-slow-%' AND status = 'ready'")" "$workers" \
	"... the slow uploads are ready documents"
remember
sql "SELECT id FROM documents WHERE name LIKE '$run-%'" >"$work/ids"
while read -r id; do
	req DELETE "$url/documents/$id" "${auth[@]}" >/dev/null
done <"$work/ids"

# ---- conf/lighttpd-pool.conf in front of the same pool ----------------------------
stack_private_lighttpd "$BINDERY_TEST_VAR/pool-lighttpd" lighttpd-pool.conf "$BINDERY_TEST_POOL_SOCKET" - 18700 ||
	bail_out "lighttpd (conf/lighttpd-pool.conf) did not start"
lurl=http://127.0.0.1:$HTTP_PORT
req GET "$lurl/healthz"
is "$HTTP_CODE" 200 "lighttpd-pool.conf: /healthz through the same pool is 200"
req POST "$lurl/documents?name=$run-lighttpd" "${auth[@]}" "${octet[@]}" --data-binary "@$work/doc.bin"
id=$(jfield "$HTTP_BODY" id)
is "$HTTP_CODE $(header location)" "201 /documents/$id" "lighttpd-pool.conf: a create is 201 at /documents/N"
curl -s -m 30 -o "$work/l.read" "$lurl/documents/${id:-0}/content"
is "$(sha "$work/l.read")" "$(sha "$work/doc.bin")" "lighttpd-pool.conf: ... and reads back byte-identical"
remember
req DELETE "$lurl/documents/${id:-0}" "${auth[@]}"
is "$HTTP_CODE" 204 "lighttpd-pool.conf: ... and is deleted"
stack_private_lighttpd_stop

# Nothing of the refused bodies stayed in storage: every blob new since the
# start is one of this run's documents' (deleted ones wait out their grace).
chaos_snapshot "$work/blobs.after" || bail_out "cannot list Azurite"
comm -13 "$work/blobs.before" "$work/blobs.after" >"$work/blobs.new"
sort -u "$work/blobs.mine" >"$work/blobs.known"
is "$(comm -23 "$work/blobs.new" "$work/blobs.known" | tr '\n' ' ')" "" \
	"Azurite: no blob of a refused body (every new blob is a document's of this run)"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-%'")" 0 "MariaDB: no document of this run is left"
done_testing
