#!/usr/bin/env bash
# Storage in production's shape: bindery against Azurite over
# HTTPS at an account-host URL (https://devstoreaccount1.blob.localhost:PORT,
# which libcurl resolves to the loopback itself), its certificate verified
# against the CA ./dev test made for the run, named by [storage] ca_file.
#
#   - bindery migrate and check-account refuse (and /healthz answers 503),
#     with a message that names the cause: an untrusted certificate (no ca_file), a host name the
#     certificate does not carry, a refused connection, a name that does
#     not resolve.
#   - the connection string forms reach it: the portal's https form with
#     EndpointSuffix=localhost:PORT, and BlobEndpoint=; and a SAS-only
#     configuration (an account SAS, blobtool account-sas) creates, reads
#     and deletes.
#   - an API subset (create, read, Range, replace, delete; sweep and audit
#     clean afterwards) through a lighttpd of our own with FastCGI and with
#     mod_cgi, and redirect mode's SAS URL read over https.
# The documents live in a database of their own (bindery_tls), so nothing
# here is seen by the other tests' sweeps and audits.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_VAR BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_TLS_BLOB_ENDPOINT BINDERY_TEST_TLS_CA BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
[ -x "$(stack_lighttpd_bin)" ] || missing "lighttpd is not installed"
work=$(mktemp -d)
chmod 0755 "$work"
DBNAME=bindery_tls
cleanup() {
	stack_private_lighttpd_stop
	sql "DROP DATABASE IF EXISTS $DBNAME" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cli=$BINDERY_TEST_BIN/bindery
# Its configurations point at a scratch database that this test migrates
# (CREATE), so they start from the migration account's (sql/grants.sql).
base=$BINDERY_TEST_MIGRATE_CONFIG
port=${BINDERY_TEST_TLS_BLOB_ENDPOINT##*:}
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")

# conf NAME ENDPOINT CA-FILE [sed expressions...]: the test configuration
# pointed at ENDPOINT and our database, with [storage] ca_file CA-FILE
# (none when empty), then edited by the expressions.
conf() {
	local name=$1 endpoint=$2 ca=$3
	shift 3
	sed -e "s|^name = bindery\$|name = $DBNAME|" -e "s|^endpoint = .*|endpoint = $endpoint|" \
		-e "s|^\\[storage\\]\$|[storage]${ca:+\\nca_file = $ca}|" "$@" "$base" >"$work/$name.conf"
	chmod 0644 "$work/$name.conf"	# lighttpd's responders read it; a test key
	grep -q "^name = $DBNAME\$" "$work/$name.conf" && grep -qF "endpoint = $endpoint" "$work/$name.conf" &&
		{ [ -z "$ca" ] || grep -qF "ca_file = $ca" "$work/$name.conf"; } ||
		bail_out "could not point $name.conf at $endpoint"
}
tls=$BINDERY_TEST_TLS_BLOB_ENDPOINT
ca=$BINDERY_TEST_TLS_CA
sql "CREATE DATABASE IF NOT EXISTS $DBNAME CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci" ||
	bail_out "cannot create database $DBNAME"
conf tls "$tls" "$ca"
"$cli" -c "$work/tls.conf" migrate >"$work/migrate.out" 2>&1
ok $? "migrate over https with [storage] ca_file ($(head -c 300 "$work/migrate.out"))"

# ---- refusals, each named ----
# refused NAME WORDS ENDPOINT CA-FILE: migrate with that configuration
# fails, its message has WORDS (an extended regex), and holds no account key.
refused() {
	local name=$1 words=$2
	shift 2
	conf "$name" "$@"
	"$cli" -c "$work/$name.conf" migrate >"$work/$name.out" 2>&1
	isnt "$?" 0 "$name: migrate fails"
	like "$(cat "$work/$name.out")" "$words" "$name: ... and says why"
	unlike "$(cat "$work/$name.out")" "$BINDERY_TEST_BLOB_KEY" "$name: ... without the account key"
}
refused untrusted 'certificate was refused.*ca_file' "$tls" ''
refused wrong-host 'does not match' "https://wrongname.localhost:$port/devstoreaccount1" "$ca"
closed=$(STACK_AVOID_PORTS="$port" bash -c '. "$1"; stack_port P 19700 >/dev/null 2>&1; echo "$P"' _ \
	"$here/../lib/stack.sh" 2>/dev/null)
refused refused-connection 'refused the connection' "https://127.0.0.1:${closed:-1}/devstoreaccount1" "$ca"
refused no-dns 'DNS: .*does not resolve' https://no-such-host.invalid "$ca"
conf untrusted-check "$tls" ''
"$cli" -c "$work/untrusted-check.conf" check-account >"$work/check.out" 2>&1
isnt "$?" 0 "check-account without the CA fails"
like "$(cat "$work/check.out")" 'certificate was refused' "... and says the certificate was refused"

# ---- a clock off: Azure refuses the signature, its Date says why ----
# Azurite never checks x-ms-date, so a stand-in answers every request the
# way Azure answers a request signed an hour away from its clock: 403
# AuthenticationFailed, its own Date an hour ahead.
clockport=$(STACK_AVOID_PORTS="$port ${closed:-}" bash -c '. "$1"; stack_port P 19750 >/dev/null 2>&1; echo "$P"' \
	_ "$here/../lib/stack.sh" 2>/dev/null)
python3 "$here/../tools/clock_skew_storage.py" "$clockport" 3600 >"$work/clock.log" 2>&1 &
clockpid=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$clockport/" && break; sleep 0.1; done
refused clock-ahead 'AuthenticationFailed.*3[56][0-9][0-9] s ahead of ours: check the clock' \
	"http://127.0.0.1:$clockport/devstoreaccount1" ''
kill "$clockpid" 2>/dev/null
wait "$clockpid" 2>/dev/null

# ---- the connection string forms ----
for form in \
	"DefaultEndpointsProtocol=https;AccountName=$BINDERY_TEST_BLOB_ACCOUNT;AccountKey=$BINDERY_TEST_BLOB_KEY;EndpointSuffix=localhost:$port" \
	"BlobEndpoint=$BINDERY_TEST_TLS_BLOB_ENDPOINT;AccountName=$BINDERY_TEST_BLOB_ACCOUNT;AccountKey=$BINDERY_TEST_BLOB_KEY"; do
	# A line holds at most 198 characters: the string goes on indented
	# continuation lines, one part each.
	{
		sed -e "s|^name = bindery\$|name = $DBNAME|" -e '/^endpoint = /d' -e '/^account = /d' \
			-e '/^key = /d' "$base"
		printf '[storage]\nca_file = %s\nconnection_string = %s\n' "$ca" "${form//;/;$'\n\t'}"
	} >"$work/cs.conf"
	chmod 0600 "$work/cs.conf"
	"$cli" -c "$work/cs.conf" migrate >"$work/cs.out" 2>&1
	ok $? "connection string ${form%%;*};...: migrate over https ($(head -c 200 "$work/cs.out"))"
done

head -c $((5 * 1024 * 1024 + 17)) /dev/urandom >"$work/doc"	# more than one block
head -c 70000 /dev/urandom >"$work/new"

# ---- a SAS-only configuration (an account SAS, no key) ----
sas=$(BINDERY_TEST_BLOB_ENDPOINT=$tls BLOBTOOL_CONTAINER=unused "$BINDERY_TEST_BIN/../tests/tools/blobtool" \
	account-sas rwdlacutf 3600) || bail_out "blobtool account-sas failed"
{
	# (a SAS cannot sign direct uploads' links: they go off with the key)
	sed -e "s|^name = bindery\$|name = $DBNAME|" -e "s|^endpoint = .*|endpoint = $tls\nca_file = $ca|" \
		-e '/^key = /d' -e 's/^direct = .*/direct = false/' "$base"
	# a line holds at most 198 characters: the SAS goes on continuation lines
	printf '[storage]\nsas = %s\n' "${sas//&/&$'\n\t'}"
} >"$work/sas.conf"
chmod 0600 "$work/sas.conf"
grep -q '^key = ' "$work/sas.conf" && bail_out "sas.conf still has the key"
"$cli" -c "$work/sas.conf" migrate >"$work/sas.out" 2>&1
ok $? "SAS-only: migrate over https ($(head -c 200 "$work/sas.out"))"
out=$(cgi_req "$work/sas.conf" POST "/documents?name=tls-sas-$$" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH=70000 <"$work/new")
like "$out" '^Status: 201' "SAS-only: create"
id=$(jfield "$out" id)
cgi_run "$work/sas.got" "$work/sas.conf" GET "/documents/$id/content" </dev/null
is "$CGI_CODE" 200 "SAS-only: content answers 200"
tail -c 70000 "$work/sas.got" >"$work/sas.body"
cmp -s "$work/new" "$work/sas.body"
ok $? "SAS-only: read back byte-identical"
out=$(cgi_req "$work/sas.conf" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)
like "$out" '^Status: 204' "SAS-only: delete"

# ---- an API subset through a server ----
subset() { # LABEL URL
	local label=$1 url=$2 id etag name=tls-$1-$$-$RANDOM
	req GET "$url/healthz"
	is "$HTTP_CODE" 200 "$label: /healthz is 200 over https storage ($HTTP_BODY)"
	req POST "$url/documents?name=$name" "${auth[@]}" -H 'Content-Type: application/octet-stream' \
		--data-binary "@$work/doc"
	is "$HTTP_CODE" 201 "$label: create ($HTTP_BODY)"
	id=$(jfield "$HTTP_BODY" id)
	curl -s -o "$work/got" "$url/documents/$id/content"
	cmp -s "$work/doc" "$work/got"
	ok $? "$label: read back byte-identical"
	curl -s -o "$work/range" -H 'Range: bytes=1000-1999' "$url/documents/$id/content"
	dd if="$work/doc" of="$work/want" bs=1000 skip=1 count=1 2>/dev/null
	cmp -s "$work/want" "$work/range"
	ok $? "$label: a Range read is those bytes"
	req GET "$url/documents/$id"
	etag=$(header etag)
	req PUT "$url/documents/$id/content" "${auth[@]}" -H "If-Match: $etag" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$work/new"
	is "$HTTP_CODE" 200 "$label: replace with If-Match ($HTTP_BODY)"
	curl -s -o "$work/got" "$url/documents/$id/content"
	cmp -s "$work/new" "$work/got"
	ok $? "$label: the replacement reads back"
	req DELETE "$url/documents/$id" "${auth[@]}"
	is "$HTTP_CODE" 204 "$label: delete"
}
stack_private_lighttpd "$work/lighttpd-fcgi" lighttpd.conf "$work/tls.conf" "$BINDERY_TEST_BIN" 18600 ||
	bail_out "no lighttpd (FastCGI) of our own"
subset fastcgi "http://127.0.0.1:$HTTP_PORT"
stack_private_lighttpd_stop
stack_private_lighttpd "$work/lighttpd-cgi" lighttpd-cgi.conf "$work/tls.conf" "$BINDERY_TEST_BIN" 18600 ||
	bail_out "no lighttpd (mod_cgi) of our own"
subset cgi "http://127.0.0.1:$HTTP_PORT"
stack_private_lighttpd_stop
# Without the CA: /healthz says why, and so does the responder's log.
stack_private_lighttpd "$work/lighttpd-untrusted" lighttpd.conf "$work/untrusted-check.conf" \
	"$BINDERY_TEST_BIN" 18600 || bail_out "no lighttpd (FastCGI) of our own"
req GET "http://127.0.0.1:$HTTP_PORT/healthz"
is "$HTTP_CODE" 503 "without the CA /healthz is 503"
like "$HTTP_BODY" '"message":"TLS: storage.s certificate was refused' "... and its message names the cause"
stack_private_lighttpd_stop
like "$(cat "$work"/lighttpd-untrusted/log/* 2>/dev/null)" 'storage probe: .*certificate was refused' \
	"... as does the responder's log"

# ---- redirect mode: the SAS URL is https and storage honours it ----
conf redirect "$tls" "$ca" -e 's/^mode = .*/mode = redirect/'
out=$(cgi_req "$work/redirect.conf" POST "/documents?name=tls-redirect-$$" \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" CONTENT_TYPE=application/octet-stream \
	CONTENT_LENGTH=70000 <"$work/new")
like "$out" '^Status: 201' "redirect mode: create"
id=$(jfield "$out" id)
out=$(cgi_req "$work/redirect.conf" GET "/documents/$id/content" </dev/null)
loc=$(printf '%s\n' "$out" | sed -n 's/^Location: //p')
like "$loc" "^https://devstoreaccount1\\.blob\\.localhost:$port/" "redirect mode: a SAS URL at the account host, https"
curl -s --cacert "$BINDERY_TEST_TLS_CA" -o "$work/got" "$loc"
cmp -s "$work/new" "$work/got"
ok $? "... which storage serves over verified TLS, byte-identical"
out=$(cgi_req "$work/redirect.conf" DELETE "/documents/$id" HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" </dev/null)
like "$out" '^Status: 204' "redirect mode: delete"

# ---- sweep and audit: what the deletes and replaces left is collected ----
"$cli" -c "$work/tls.conf" sweep --older-than 0 --force >"$work/sweep.out" 2>&1
ok $? "sweep over https ($(tail -n 1 "$work/sweep.out"))"
"$cli" -c "$work/tls.conf" audit >"$work/audit.out" 2>&1
ok $? "audit over https is clean ($(tail -n 2 "$work/audit.out" | tr '\n' ' '))"
is "$(BINDERY_TEST_DB_NAME=$DBNAME sql "SELECT COUNT(*) FROM documents")" 0 "no document is left"
done_testing
