#!/usr/bin/env bash
# bindery.fcgi as a plain CGI program: its own Apache with mod_cgid
# (conf/apache-cgid.conf) in front of the test stack's MariaDB and Azurite,
# and, when lighttpd is installed, its own lighttpd with mod_cgi
# (conf/lighttpd-cgi.conf).  Every request is a fresh process, so this checks
# that nothing depends on a long-lived responder: a representative subset of
# the API (create raw and multipart, list, download, replace, delete, a taken
# name, an oversize body, idempotent retries), then, in a --enable-failpoints
# build, compensation and an idempotent resume after a process died
# mid-request.  Status codes, JSON error codes, and bytes by SHA-256.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_VAR
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "$BINDERY_TEST_BIN/bindery.fcgi was not built"
[ -r "$BINDERY_CONFIG" ] || missing "cannot read $BINDERY_CONFIG"
[ "$(id -u)" = 0 ] || missing "Apache's User www-data needs root to start"
[ -x "$(stack_apache_bin)" ] && [ -f /usr/lib/apache2/modules/mod_cgid.so ] ||
	missing "apache2 with mod_cgid is not installed"
stack_init "$BINDERY_TEST_VAR"
stack_alive mariadb && stack_alive azurite || missing "MariaDB or Azurite of the test stack is not running"

work=$(mktemp -d)
cleanup() {
	stack_cgi_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Our own state directory inside the test stack's: our servers' PID files,
# logs, configs, and the directory www-data reads the program from.
stack_cgi_prepare "$BINDERY_TEST_VAR/cgi" "${BINDERY_CGI_PORT_START:-18100}" "$BINDERY_TEST_BIN" \
	"$BINDERY_CONFIG" || bail_out "cannot prepare the CGI servers"
www=$STACK_CGI_WWW
conf=$STACK_VAR/apache-cgid.conf

# A failpoint build can be told to die or fail at a named step (lib/base/failpoint.h);
# the file lives where www-data may rewrite it ("once" disarms itself).
failpoints=
if grep -q 'create\.after_ready' "$www/bin/bindery.fcgi"; then
	failpoints=$www/tmp/failpoints
	: >"$failpoints"
	chown "$STACK_WWW_USER" "$failpoints"
	printf '\n# tests/e2e/cgi.sh\nSetEnv BINDERY_FAILPOINTS_FILE %s\n' "$failpoints" >>"$conf"
fi
arm() { printf '%s %s once\n' "$1" "$2" >"$failpoints"; }
disarm() { : >"$failpoints"; }

stack_apache_start "$conf" || bail_out "Apache with mod_cgid did not start (log in $STACK_LOG)"
apache_url=http://127.0.0.1:$APACHE_PORT
note "Apache mod_cgid on $apache_url (state in $STACK_VAR)"

auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
etag_of() { # JSON: the etag field, unescaped (a quoted strong ETag)
	printf '%s' "$1" | sed -n 's/.*"etag":"\\"\([^"\\]*\)\\"".*/"\1"/p' | head -n 1
}
# count_named URL NAME: how many listed documents have exactly this name.
count_named() {
	req GET "$1/documents?limit=1000"
	printf '%s' "$HTTP_BODY" | grep -o "\"name\":\"$2\"" | wc -l | tr -d ' '
}

head -c 3000000 /dev/urandom >"$work/big.bin"	# several blocks of the test config
printf 'abc' >"$work/three.bin"
head -c 1024 /dev/urandom >"$work/1k.bin"
printf 'hello, bindery\n' >"$work/small.txt"
printf 'replacement bytes\n' >"$work/new.txt"
head -c $((64 * 1024 * 1024 + 1)) /dev/zero >"$work/huge.bin"

# subset SERVER URL: the API subset through one CGI server.
subset() {
	local srv=$1 url=$2 tag id fid etag key kid
	tag="cgi-$srv-$$-$RANDOM"

	req GET "$url/healthz"
	is "$HTTP_CODE" 200 "$srv: /healthz is 200"
	like "$HTTP_BODY" '"database":"ok".*"storage":"ok"' "$srv: ... database and storage ok"
	like "$(header x-request-id)" '^[0-9a-f]{16}$' "$srv: ... answered by bindery (X-Request-Id)"
	# A query without '=' becomes the program's argv under Apache's CGI
	# (RFC 3875 4.4): it must not choose the configuration.
	req GET "$url/healthz?-c+/dev/null"
	is "$HTTP_CODE" 200 "$srv: /healthz?-c+/dev/null still runs on the real configuration"
	req GET "$url/"
	is "$HTTP_CODE" 200 "$srv: the page at / is 200"
	like "$HTTP_CTYPE" '^text/html' "$srv: ... HTML"

	# --- a body that ends before its Content-Length: 3 bytes of a declared
	# 1000, then the client half-closes (a raw socket) ---
	python3 "$here/../tools/short_body.py" "$url/documents?name=$tag-short" 1000 "$work/three.bin" \
		"$work/short" "Authorization: Bearer $BINDERY_TEST_TOKEN" 'Content-Type: application/octet-stream'
	like "$(<"$work/short.code")" '^(000|400)$' "$srv: a body cut short is 400 or dropped, never stored ($(<"$work/short.code"))"
	sleep 1
	is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$tag-short'")" 0 "$srv: ... and no document row"

	# --- create, raw body (several blocks, streamed from stdin) ---
	req POST "$url/documents?name=$tag-big.bin" "${auth[@]}" -H 'Content-Type: application/x-test' \
		--data-binary "@$work/big.bin"
	is "$HTTP_CODE" 201 "$srv: raw create is 201"
	id=$(jfield "$HTTP_BODY" id)
	etag=$(etag_of "$HTTP_BODY")
	like "$id" '^[0-9]+$' "$srv: ... with an id"
	is "$(header location)" "/documents/$id" "$srv: ... Location names it"
	is "$(jfield "$HTTP_BODY" sha256)" "$(sha "$work/big.bin")" "$srv: ... sha256 of the bytes"
	is "$(jfield "$HTTP_BODY" size)" 3000000 "$srv: ... size"
	is "$(header etag)" "$etag" "$srv: ... ETag header equals the JSON etag"

	# --- create, multipart ---
	curl -s -o "$work/body" -w '%{http_code}' "${auth[@]}" -F "name=$tag form.txt" \
		-F "file=@$work/small.txt;type=text/plain" "$url/documents" >"$work/code"
	is "$(cat "$work/code")" 201 "$srv: multipart create is 201"
	fid=$(jfield "$(cat "$work/body")" id)
	is "$(jfield "$(cat "$work/body")" name)" "$tag form.txt" "$srv: ... the name field names it"
	is "$(jfield "$(cat "$work/body")" content_type)" text/plain "$srv: ... the part's type kept"
	is "$(jfield "$(cat "$work/body")" sha256)" "$(sha "$work/small.txt")" "$srv: ... sha256 of the part"

	# --- list, metadata, download ---
	req GET "$url/documents?limit=1000"
	is "$HTTP_CODE" 200 "$srv: list is 200"
	like "$HTTP_BODY" "\"id\":\"$id\"" "$srv: ... lists the raw document"
	like "$HTTP_BODY" "\"id\":\"$fid\"" "$srv: ... and the multipart one"
	like "$HTTP_BODY" '"next":' "$srv: ... with a next field"
	req GET "$url/documents/$id"
	is "$HTTP_CODE" 200 "$srv: metadata is 200"
	is "$(jfield "$HTTP_BODY" name)" "$tag-big.bin" "$srv: ... with the name"
	curl -s -o "$work/got.bin" -D "$work/h" "$url/documents/$id/content"
	is "$(sha "$work/got.bin")" "$(sha "$work/big.bin")" "$srv: download is byte-identical"
	like "$(tr -d '\r' <"$work/h" | tr 'A-Z' 'a-z')" 'content-length: 3000000' "$srv: ... with Content-Length"
	like "$(tr -d '\r' <"$work/h" | tr 'A-Z' 'a-z')" 'content-type: application/x-test' "$srv: ... and Content-Type"

	# --- refusals that change nothing ---
	req POST "$url/documents?name=$tag-big.bin" "${auth[@]}" -H 'Content-Type: application/octet-stream' --data-binary "@$work/small.txt"
	is "$HTTP_CODE" 409 "$srv: a taken name is 409"
	is "$(jfield "$HTTP_BODY" error)" name_taken "$srv: ... name_taken"
	req POST "$url/documents?name=$tag-noauth" -H 'Content-Type: application/octet-stream' --data-binary "@$work/small.txt"
	is "$HTTP_CODE" 401 "$srv: a write without a token is 401"
	is "$(jfield "$HTTP_BODY" error)" unauthorized "$srv: ... unauthorized"
	# A refusal leaves the body unread; the program must still read it
	# before exiting, or mod_cgid sees ECONNRESET on its stdout socket and
	# the client waits out KeepAliveTimeout for a cut-off answer.
	t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -m 30 "${auth[@]}" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/big.bin" \
		"$url/documents?name=$tag-big.bin")
	like "$t" '^409 ' "$srv: a taken name with a 3 MB body is 409"
	ok "awk 'BEGIN { exit !(${t#* } < 2.5) }'" "$srv: ... answered at once and completely (${t#* } s)"
	req POST "$url/documents?name=$tag-huge" "${auth[@]}" -H 'Expect:' -H 'Content-Type: application/octet-stream' --data-binary "@$work/huge.bin"
	is "$HTTP_CODE" 413 "$srv: a body one byte over the limit is 413"
	is "$(jfield "$HTTP_BODY" error)" too_large "$srv: ... too_large"
	is "$(count_named "$url" "$tag-huge")" 0 "$srv: ... and created nothing"
	# A declared length over the server's own limit: the server answers
	# itself, in the API's JSON too (conf/ samples' error pages).
	req POST "$url/documents?name=$tag-huger" "${auth[@]}" -H 'Expect:' \
		-H 'Content-Type: application/octet-stream' -H 'Content-Length: 99999999999' --data-binary @/dev/null
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "413 too_large" "$srv: the server's own 413 is the API's JSON"
	like "$(header content-type)" '^application/json' "$srv: ... typed application/json"

	# --- idempotent retries: two processes, one key, one document ---
	key="key-$tag"
	req POST "$url/documents?name=$tag-idem" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 201 "$srv: first create with a key is 201"
	kid=$(jfield "$HTTP_BODY" id)
	req POST "$url/documents?name=$tag-idem" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 201 "$srv: the retry (a fresh process) is 201 again"
	is "$(jfield "$HTTP_BODY" id)" "$kid" "$srv: ... with the same id"
	is "$(count_named "$url" "$tag-idem")" 1 "$srv: ... and one document"
	req POST "$url/documents?name=$tag-idem" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/new.txt"
	is "$HTTP_CODE" 422 "$srv: the same key with other bytes is 422"
	is "$(jfield "$HTTP_BODY" error)" idempotency_mismatch "$srv: ... idempotency_mismatch"

	# --- replace ---
	req PUT "$url/documents/$id/content" "${auth[@]}" -H 'If-Match: "0-0"' -H 'Content-Type: text/plain' \
		--data-binary "@$work/new.txt"
	is "$HTTP_CODE" 412 "$srv: replace with a stale If-Match is 412"
	is "$(jfield "$HTTP_BODY" error)" precondition_failed "$srv: ... precondition_failed"
	req PUT "$url/documents/$id/content" "${auth[@]}" -H "If-Match: $etag" -H 'Content-Type: text/plain' \
		--data-binary "@$work/new.txt"
	is "$HTTP_CODE" 200 "$srv: replace with the current If-Match is 200"
	is "$(jfield "$HTTP_BODY" sha256)" "$(sha "$work/new.txt")" "$srv: ... the new sha256"
	isnt "$(etag_of "$HTTP_BODY")" "$etag" "$srv: ... a new etag"
	curl -s -o "$work/got.bin" "$url/documents/$id/content"
	is "$(sha "$work/got.bin")" "$(sha "$work/new.txt")" "$srv: the download has the new bytes"

	# --- delete ---
	req DELETE "$url/documents/$id" "${auth[@]}"
	is "$HTTP_CODE" 204 "$srv: delete is 204"
	req GET "$url/documents/$id"
	is "$HTTP_CODE" 404 "$srv: a deleted document is 404"
	is "$(jfield "$HTTP_BODY" error)" not_found "$srv: ... not_found"
	req DELETE "$url/documents/$id" "${auth[@]}"
	is "$HTTP_CODE" 404 "$srv: deleting it again is 404"
	for d in "$fid" "$kid"; do
		req DELETE "$url/documents/$d" "${auth[@]}"
	done
}

before=$TAP_N
subset apache-cgid "$apache_url"
apache_tests=$((TAP_N - before))

# Every answer came from a process of its own: bindery logs its PID with
# each request line (stderr, Apache's error log).
pids=$(sed -n 's/.*bindery\.fcgi\[\([0-9]*\)\] info: req=.*/\1/p' "$STACK_LOG/apache-error.log" | sort)
is "$(printf '%s\n' "$pids" | uniq -d | wc -l | tr -d ' ')" 0 \
	"apache-cgid: no process served two requests ($(printf '%s\n' "$pids" | wc -l | tr -d ' ') logged)"

# --- protocol steps across processes (failpoint builds only) ---
if [ -n "$failpoints" ]; then
	url=$apache_url tag="cgi-fp-$$-$RANDOM"

	# Compensation inside one process; the next process finds the name free.
	arm create.after_upload error
	req POST "$url/documents?name=$tag-comp" "${auth[@]}" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 503 "failpoint: a create that fails after the upload is 503"
	is "$(jfield "$HTTP_BODY" error)" unavailable "failpoint: ... unavailable"
	disarm
	req POST "$url/documents?name=$tag-comp" "${auth[@]}" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 201 "failpoint: ... compensated: the name is free for the next process"
	cid=$(jfield "$HTTP_BODY" id)
	req DELETE "$url/documents/$cid" "${auth[@]}"

	# A replace that fails after its upload is rolled back; the old bytes stay.
	req POST "$url/documents?name=$tag-rep" "${auth[@]}" -H 'Content-Type: application/octet-stream' --data-binary "@$work/small.txt"
	rid=$(jfield "$HTTP_BODY" id)
	arm replace.after_tag error
	req PUT "$url/documents/$rid/content" "${auth[@]}" -H 'Content-Type: text/plain' --data-binary "@$work/new.txt"
	is "$HTTP_CODE" 503 "failpoint: a replace that fails after its tag flip is 503"
	disarm
	curl -s -o "$work/got.bin" "$url/documents/$rid/content"
	is "$(sha "$work/got.bin")" "$(sha "$work/small.txt")" "failpoint: ... and the old bytes are still served"
	req DELETE "$url/documents/$rid" "${auth[@]}"

	# The process dies after the document is ready but before the answer
	# is recorded (a crash, not an error: _exit(137)).  A fresh process
	# with the same key finds the committed blob and answers the same
	# document; one more retry replays the recorded answer.
	key="resume-$tag"
	arm create.after_ready exit
	req POST "$url/documents?name=$tag-resume" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	like "$HTTP_CODE" '^5' "failpoint: the process that died mid-create got no answer out ($HTTP_CODE)"
	disarm
	req POST "$url/documents?name=$tag-resume" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 201 "resume: the retry in a fresh process is 201"
	id1=$(jfield "$HTTP_BODY" id)
	is "$(jfield "$HTTP_BODY" sha256)" "$(sha "$work/1k.bin")" "resume: ... with the bytes' sha256"
	req POST "$url/documents?name=$tag-resume" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
	is "$HTTP_CODE" 201 "resume: a second retry is 201"
	is "$(jfield "$HTTP_BODY" id)" "$id1" "resume: ... the same id"
	is "$(count_named "$url" "$tag-resume")" 1 "resume: one document under the name"
	curl -s -o "$work/got.bin" "$url/documents/$id1/content"
	is "$(sha "$work/got.bin")" "$(sha "$work/1k.bin")" "resume: ... holding the bytes"
	req DELETE "$url/documents/$id1" "${auth[@]}"

	# The long version: the process dies after the tag flip, before the
	# document is ready.  Until its lease (sweep_cutoff from its last
	# renewal) has passed the intent counts as in progress; then a fresh
	# process resumes it.
	if [ -n "${BINDERY_TEST_LONG:-}" ]; then
		lease=$(sed -n 's/^sweep_cutoff *= *\([0-9]*\).*/\1/p' "$BINDERY_CONFIG" | head -n 1)
		key="stale-$tag"
		arm create.after_tag exit
		req POST "$url/documents?name=$tag-stale" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
		like "$HTTP_CODE" '^5' "long: the process died after the tag flip ($HTTP_CODE)"
		disarm
		req POST "$url/documents?name=$tag-stale" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
		is "$HTTP_CODE" 409 "long: a retry within the lease is 409"
		is "$(jfield "$HTTP_BODY" error)" idempotency_in_progress "long: ... idempotency_in_progress"
		sleep $((${lease:-200} + 2))
		req POST "$url/documents?name=$tag-stale" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
		is "$HTTP_CODE" 201 "long: after the lease a fresh process resumes it: 201"
		sid=$(jfield "$HTTP_BODY" id)
		req POST "$url/documents?name=$tag-stale" "${auth[@]}" -H "Idempotency-Key: $key" -H 'Content-Type: application/octet-stream' --data-binary "@$work/1k.bin"
		is "$(jfield "$HTTP_BODY" id)" "$sid" "long: ... and the next retry has the same id"
		req DELETE "$url/documents/$sid" "${auth[@]}"
	else
		skip "the stale-intent resume waits sweep_cutoff (./dev test --long)" 5
	fi
elif under_dev_test; then
	fail "bindery.fcgi has failpoints (./dev test always builds them)"
else
	skip "bindery.fcgi was built without --enable-failpoints" 17
fi
stack_stop apache 30

# --- the same subset under lighttpd mod_cgi, when lighttpd is there ---
# (./dev test always installs lighttpd: there its absence is a failure.)
lighttpd_tests=0
if [ -x "$(stack_lighttpd_bin)" ] && [ -n "$HTTP_PORT" ]; then
	if stack_lighttpd_start "$STACK_VAR/lighttpd-cgi.conf"; then
		before=$TAP_N
		subset lighttpd-cgi "http://127.0.0.1:$HTTP_PORT"
		lighttpd_tests=$((TAP_N - before))
	else
		fail "lighttpd with mod_cgi started (log in $STACK_LOG)"
	fi
	stack_stop lighttpd 20
elif under_dev_test; then
	fail "lighttpd is installed (./dev test installs it) and has a port ($HTTP_PORT)"
else
	skip "lighttpd is not installed: no lighttpd mod_cgi half"
fi
# The lighttpd half must have run its checks, not vanished on the way.
if [ -x "$(stack_lighttpd_bin)" ] && [ -n "$HTTP_PORT" ]; then
	is "$lighttpd_tests" "$apache_tests" "the lighttpd mod_cgi half ran as many checks as the Apache one"
fi

done_testing
