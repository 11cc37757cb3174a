#!/usr/bin/env bash
# Key-free storage: [storage] auth = entra against the stack's HTTPS Azurite
# in OAuth mode (--oauth basic), with no account key anywhere in the
# configuration.  The Entra ID authority and the managed identity endpoint
# are tests/tools/fake_entra.py on the loopback (Entra cannot run here): it
# checks a client secret, verifies a certificate's client assertion (PS256,
# x5t#S256, audience, replay) and a federated token, and issues tokens
# Azurite takes.
#
#   - every storage path with a client secret: create, read, replace,
#     delete, a tus upload, a direct upload whose SAS is a user delegation
#     SAS (skoid, sktid, sp=c only), a redirect download (sp=r, rscd, rsct),
#     a crashed create the sweep resolves, audit, lifecycle-policy,
#     check-account and status --json (the token's and delegation key's
#     expiry); /metrics counts the refreshes;
#   - the token cache: DIR/<uid> is 0700, its files 0600; CGI processes
#     (one per request) reuse one token; a short-lived token is renewed
#     before it expires, by a FastCGI worker, not on a failure;
#   - the client certificate, the federated token and the managed identity
#     each create and read;
#   - named errors, nothing acknowledged lost: the authority refusing the
#     secret, another certificate, the authority out of reach (503, the
#     intent left for the sweeper), a token for another audience, an expired
#     token; the CLI says which credential failed, exit 77 or 69.
# Its documents live in a database of its own, so the other tests' sweeps
# and audits never see them.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_TOKEN BINDERY_TEST_VAR \
	BINDERY_TEST_TLS_BLOB_ENDPOINT BINDERY_TEST_TLS_CA BINDERY_TEST_BLOB_KEY
[ -x "$(stack_lighttpd_bin)" ] || missing "lighttpd is not installed"
python3 -c 'import cryptography' 2>/dev/null || missing "python3-cryptography is not installed"
# Not under /tmp: [storage] token_cache refuses it (anyone can take a name there).
work=$(mktemp -d -p "$BINDERY_TEST_VAR") || bail_out "no work directory"
chmod 0755 "$work"
DBNAME=bindery_entra$$
fake_pid=
cleanup() {
	stack_private_lighttpd_stop
	[ -z "$fake_pid" ] || kill "$fake_pid" 2>/dev/null
	sql "DROP DATABASE IF EXISTS $DBNAME" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cli=$BINDERY_TEST_BIN/bindery
# Every CGI responder's stderr (its log) is kept, to search at the end.
export CGI_STDERR=$work/cgi.err
tls=$BINDERY_TEST_TLS_BLOB_ENDPOINT
ca=$BINDERY_TEST_TLS_CA
bearer="HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN"
TENANT=8d3c1f0e-5b6a-4c2e-9f1d-2a7b3c4d5e6f
CLIENT=5e1a7c3b-0d2f-4e8a-b6c9-1f2e3d4c5b6a
MI_CLIENT=0c9b8a7f-6e5d-4c3b-a291-8f7e6d5c4b3a
PREFIX=entra-$$-

# ---- the stand-in authority and its credentials ----
printf 'a-secret-%s\n' "$RANDOM$RANDOM" >"$work/secret"
printf 'federated-%s' "$RANDOM$RANDOM" >"$work/federated"
chmod 0600 "$work/secret" "$work/federated"
for c in cert other; do
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bindery entra test $c" \
		-keyout "$work/$c.key" -out "$work/$c.crt" 2>/dev/null &&
		cat "$work/$c.crt" "$work/$c.key" >"$work/$c.pem" && chmod 0600 "$work/$c.pem" ||
		bail_out "openssl cannot make the $c certificate"
done
python3 "$here/../tools/fake_entra.py" --port-file "$work/fake.port" --tenant "$TENANT" \
	--client-id "$CLIENT" --secret-file "$work/secret" --certificate "$work/cert.crt" \
	--federated-token-file "$work/federated" --imds-client-id "$MI_CLIENT" \
	--log "$work/fake.log" 2>"$work/fake.err" &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$work/fake.port" ] && break; sleep 0.05; done
[ -s "$work/fake.port" ] || bail_out "fake_entra.py did not start: $(cat "$work/fake.err")"
fake=http://127.0.0.1:$(cat "$work/fake.port")
control() { curl -s -X POST -H 'Content-Type: application/json' --data "$1" "$fake/_control" >/dev/null; }
issued() { curl -s "$fake/_control" | jq -r ".issued.$1"; }
token_requests() { curl -s "$fake/_control" | jq -r '.token_requests'; }

# conf NAME LINES...: the test configuration on our database and the HTTPS
# Azurite, with no key, then [storage] LINES.
conf() {
	local name=$1
	shift
	{
		sed -e '/^[;#]/d' -e "s|^name = bindery\$|name = $DBNAME|" -e "s|^endpoint = .*|endpoint = $tls|" \
			-e '/^key = /d' -e '/^connection_string = /d' -e '/^sas = /d' \
			-e 's/^direct = .*/direct = true/' "$BINDERY_TEST_MIGRATE_CONFIG"
		printf '[storage]\nca_file = %s\nprefix = %s\nauth = entra\n' "$ca" "$PREFIX"
		printf '%s\n' "$@"
	} >"$work/$name.conf"
	chmod 0644 "$work/$name.conf"	# lighttpd's responders read it; no secret in it
}
secret_lines=("tenant_id = $TENANT" "client_id = $CLIENT" "client_secret_file = $work/secret"
	"authority = $fake" "token_cache = $work/cache")
conf secret "${secret_lines[@]}"
# Not the key, not a SAS, not even the emulator's well-known key by accident.
grep -qiE '^(key|sas|connection_string) *=|AccountKey' "$work/secret.conf"
isnt $? 0 "the configuration holds no account key, SAS or connection string"
grep -qF "$BINDERY_TEST_BLOB_KEY" "$work/secret.conf"
isnt $? 0 "... and not the account key's text anywhere"

sql "CREATE DATABASE $DBNAME CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci" ||
	bail_out "cannot create database $DBNAME"
"$cli" -c "$work/secret.conf" migrate >"$work/migrate.out" 2>&1
ok $? "migrate with a bearer token ($(head -c 300 "$work/migrate.out"))"
is "$(stat -c %a "$work/cache/$(id -u)")" 700 "the token cache is DIR/<uid>, mode 0700"
modes=$(find "$work/cache/$(id -u)" -type f -printf '%m\n' | sort -u | tr '\n' ' ')
is "$modes" "600 " "... and its files are 0600"
grep -rqF "$(cat "$work/secret")" "$work/cache"
isnt $? 0 "... and hold no client secret"

# ---- every storage path, with a client secret, through CGI ----
head -c $((4 * 1024 * 1024 + 17)) /dev/urandom >"$work/doc"	# two blocks: Put Block, Put Block List
head -c 70000 /dev/urandom >"$work/new"
before=$(token_requests)
cgi_run "$work/create.out" "$work/secret.conf" POST "/documents?name=${PREFIX}doc" "$bearer" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$(stat -c %s "$work/doc")" <"$work/doc"
is "$CGI_CODE" 201 "create ($(cgi_body "$work/create.out" | head -c 200))"
id=$(jfield "$(cgi_body "$work/create.out")" id)
cgi_run "$work/get.out" "$work/secret.conf" GET "/documents/$id/content" </dev/null
is "$CGI_CODE" 200 "read"
tail -c "$(stat -c %s "$work/doc")" "$work/get.out" >"$work/got"
cmp -s "$work/doc" "$work/got"
ok $? "... byte-identical"
cgi_run "$work/put.out" "$work/secret.conf" PUT "/documents/$id/content" "$bearer" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH=70000 <"$work/new"
is "$CGI_CODE" 200 "replace ($(cgi_body "$work/put.out" | head -c 200))"
cgi_run "$work/get2.out" "$work/secret.conf" GET "/documents/$id/content" </dev/null
tail -c 70000 "$work/get2.out" >"$work/got2"
cmp -s "$work/new" "$work/got2"
ok $? "the replacement reads back"
for i in 1 2 3 4 5 6 7 8; do
	cgi_run "$work/many.out" "$work/secret.conf" POST "/documents?name=${PREFIX}many-$i" "$bearer" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH=5 < <(printf 'many%s' "$i")
	[ "$CGI_CODE" = 201 ] || break
done
is "$CGI_CODE" 201 "8 more creates, each its own CGI process"
is "$(token_requests)" "$before" "13 processes took their token from the cache: no token request"
cgi_run "$work/del.out" "$work/secret.conf" DELETE "/documents/$id" "$bearer" </dev/null
is "$CGI_CODE" 204 "delete"

# tus: create, two PATCHes, the document
head -c 300000 /dev/urandom >"$work/tus"
md="filename $(printf '%s' "${PREFIX}tus" | base64 -w0)"
cgi_run "$work/tus.out" "$work/secret.conf" POST /uploads "$bearer" HTTP_TUS_RESUMABLE=1.0.0 \
	HTTP_UPLOAD_LENGTH=300000 HTTP_UPLOAD_METADATA="$md" CONTENT_LENGTH=0 </dev/null
is "$CGI_CODE" 201 "tus: create ($(cgi_body "$work/tus.out" | head -c 200))"
loc=$(tr -d '\r' <"$work/tus.out" | sed -n 's/^Location: //p' | sed 's|^https\?://[^/]*||')
head -c 100000 "$work/tus" >"$work/tus.1"
tail -c 200000 "$work/tus" >"$work/tus.2"
cgi_run "$work/p1.out" "$work/secret.conf" PATCH "$loc" "$bearer" HTTP_TUS_RESUMABLE=1.0.0 \
	HTTP_UPLOAD_OFFSET=0 CONTENT_TYPE=application/offset+octet-stream CONTENT_LENGTH=100000 <"$work/tus.1"
is "$CGI_CODE" 204 "tus: first PATCH"
cgi_run "$work/p2.out" "$work/secret.conf" PATCH "$loc" "$bearer" HTTP_TUS_RESUMABLE=1.0.0 \
	HTTP_UPLOAD_OFFSET=100000 CONTENT_TYPE=application/offset+octet-stream CONTENT_LENGTH=200000 <"$work/tus.2"
is "$CGI_CODE" 204 "tus: last PATCH ($(cgi_body "$work/p2.out" | head -c 200))"
tusid=$(sql "SELECT id FROM $DBNAME.documents WHERE name = '${PREFIX}tus' AND status = 'ready'")
cgi_run "$work/tget.out" "$work/secret.conf" GET "/documents/$tusid/content" </dev/null
tail -c 300000 "$work/tget.out" >"$work/tgot"
cmp -s "$work/tus" "$work/tgot"
ok $? "tus: the document reads back"

# direct upload: a user delegation SAS, create-only
jq -cn --arg n "${PREFIX}direct" '{name: $n, size: 70000, content_type: "application/x-test"}' >"$work/d.json"
cgi_run "$work/d.out" "$work/secret.conf" POST /documents/direct "$bearer" CONTENT_TYPE=application/json \
	CONTENT_LENGTH="$(stat -c %s "$work/d.json")" <"$work/d.json"
is "$CGI_CODE" 201 "direct: the grant ($(cgi_body "$work/d.out" | head -c 200))"
cgi_body "$work/d.out" >"$work/d.ans"
up=$(jq -r .upload_url "$work/d.ans")
like "$up" '[?&]skoid=[0-9a-f-]+&.*sktid='"$TENANT" "direct: the SAS is a user delegation SAS (skoid, sktid)"
like "$up" '[?&]sp=c(&|$)' "... create only"
unlike "$up" '[?&]sig=[^&]*&.*sig=' "... one signature"
hdrs=()
while IFS= read -r h; do hdrs+=(-H "$h"); done < <(jq -r '.headers | to_entries[] | "\(.key): \(.value)"' "$work/d.ans")
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -X PUT "${hdrs[@]}" --data-binary "@$work/new" "$up")
is "$code" 201 "direct: storage takes the upload under the delegation SAS"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -X PUT "${hdrs[@]}" --data-binary "@$work/doc" "$up")
like "$code" '^(403|409)$' "... and refuses a second one ($code)"
fin=$(jq -r .finalize_url "$work/d.ans" | sed 's|^https\?://[^/]*||')
cgi_run "$work/f.out" "$work/secret.conf" POST "$fin" "$bearer" CONTENT_LENGTH=0 </dev/null
is "$CGI_CODE" 200 "direct: finalize ($(cgi_body "$work/f.out" | head -c 200))"
did=$(jq -r .id "$work/d.ans")
cgi_run "$work/dget.out" "$work/secret.conf" GET "/documents/$did/content" </dev/null
tail -c 70000 "$work/dget.out" >"$work/dgot"
cmp -s "$work/new" "$work/dgot"
ok $? "direct: the document reads back"
jq -r .upload_url "$work/d.ans" | sed 's/sig=[^&]*/sig=AAAA/' >"$work/tampered"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -X PUT "${hdrs[@]}" --data-binary "@$work/new" \
	"$(cat "$work/tampered")")
is "$code" 403 "a tampered delegation SAS is refused"

# redirect download: sp=r with rscd and rsct, read over https
conf redirect "${secret_lines[@]}" '[download]' 'mode = redirect'
cgi_run "$work/r.out" "$work/redirect.conf" GET "/documents/$did/content" </dev/null
like "$CGI_CODE" '^30[27]$' "redirect: the download is a redirect"
rloc=$(tr -d '\r' <"$work/r.out" | sed -n 's/^Location: //p')
like "$rloc" '[?&]sp=r&(.*&)?skoid=[0-9a-f-]+&' "... to a user delegation SAS, read only"
like "$rloc" '[?&]rscd=' "... that sets Content-Disposition (rscd)"
curl -s --cacert "$ca" -o "$work/rgot" "$rloc"
cmp -s "$work/new" "$work/rgot"
ok $? "... and storage serves the bytes under it"

# a create that dies after its upload: the sweep (no key) rolls it back or forward
cgi_run "$work/crash.out" "$work/secret.conf" POST "/documents?name=${PREFIX}crash" "$bearer" \
	BINDERY_FAILPOINTS=create.after_upload=exit CONTENT_TYPE=text/plain CONTENT_LENGTH=5 < <(printf crash)
is "$CGI_RC" 137 "a create dies after its upload (failpoint)"
is "$(sql "SELECT status FROM $DBNAME.documents WHERE name = '${PREFIX}crash'")" pending "... its row is pending"
"$cli" -c "$work/secret.conf" sweep --older-than 0 --force --prefix '' >"$work/sweep.out" 2>&1
ok $? "sweep with a bearer token ($(head -c 300 "$work/sweep.out"))"
is "$(sql "SELECT COUNT(*) FROM $DBNAME.documents WHERE name = '${PREFIX}crash' AND status = 'pending'")" 0 \
	"... resolved the crashed create"
"$cli" -c "$work/secret.conf" audit --json --prefix '' >"$work/audit.json" 2>"$work/audit.err"
ok $? "audit with a bearer token ($(head -c 200 "$work/audit.err"))"
is "$(jq -r '[.orphans, .dangling] | map(length) | add' "$work/audit.json" 2>/dev/null)" 0 \
	"... finds no orphan and no dangling document"
"$cli" -c "$work/secret.conf" lifecycle-policy >"$work/lc.out" 2>&1
ok $? "lifecycle-policy ($(head -c 100 "$work/lc.out"))"
"$cli" -c "$work/secret.conf" check-account >"$work/check.out" 2>&1
like "$?" '^[01]$' "check-account answers (0, or 1 for Azurite's missing soft delete)"
like "$(cat "$work/check.out")" 'auth: entra \(client secret' "... names the auth mode and credential"
like "$(cat "$work/check.out")" 'token: expires [0-9TZ:-]+ \(in [0-9]+ min\)' "... the token's expiry"
like "$(cat "$work/check.out")" 'delegation key: expires [0-9TZ:-]+' "... and the delegation key's"
like "$(cat "$work/check.out")" 'tags: write  ok' "... and the tag permissions work with the token"
"$cli" -c "$work/secret.conf" status --json >"$work/status.json" 2>/dev/null
is "$(jq -r .storage_auth.mode "$work/status.json")" entra "status --json: storage_auth.mode"
like "$(jq -r .storage_auth.token_expires "$work/status.json")" '^20[0-9-]+T' "... token_expires"
like "$(jq -r .storage_auth.delegation_key_expires "$work/status.json")" '^20[0-9-]+T' "... delegation_key_expires"

# ---- FastCGI: four workers share one token, renewed before it expires ----
# First a token of 8 s (renewed once 4 s are left), then hour-long ones
# under CREATES creates: how many token requests a pool makes.
creates=40
[ -z "${BINDERY_TEST_LONG:-}" ] || creates=1000
conf fcgi "${secret_lines[@]/#token_cache = */token_cache = $work/fcgi-cache}" '[metrics]' 'enabled = true' \
	"counters_file = $work/counters"
control '{"lifetime": 8}'
stack_private_lighttpd "$work/lighttpd" lighttpd.conf "$work/fcgi.conf" "$BINDERY_TEST_BIN" 18700 ||
	bail_out "no lighttpd (FastCGI) of our own"
url=http://127.0.0.1:$HTTP_PORT
post() { req POST "$url/documents?name=${PREFIX}$1" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Content-Type: text/plain' --data-binary "$1"; }
t0=$(token_requests)
post fcgi-1
is "$HTTP_CODE" 201 "FastCGI: create with a fresh token"
t1=$(token_requests)
post fcgi-2
t2=$(token_requests)
sleep 4.5
post fcgi-3
is "$HTTP_CODE" 201 "FastCGI: a create past the renewal point"
t3=$(token_requests)
ok "[ $((t1 - t0)) = 1 ] && [ $t2 = $t1 ] && [ $((t3 - t2)) = 1 ]" \
	"the token is fetched, reused (by whichever worker), and renewed before it expired (token requests $t0 -> $t1 -> $t2 -> $t3)"
control '{"reset": true}'
failed=0
for i in $(seq 1 "$creates"); do
	post "pool-$i"
	[ "$HTTP_CODE" = 201 ] || failed=$((failed + 1))
done
t4=$(token_requests)
is "$failed" 0 "$creates creates through four FastCGI workers"
ok "[ $((t4 - t3)) -le 1 ]" "... made $((t4 - t3)) token request(s): one at most, when the short token's renewal fell in them"
note "token requests per 1,000 creates (FastCGI, shared cache): $(( (t4 - t3) * 1000 / creates ))"
req GET "$url/metrics" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
like "$HTTP_BODY" 'bindery_entra_token_refreshes_total [1-9]' "/metrics counts token refreshes"
like "$HTTP_BODY" 'bindery_delegation_key_refreshes_total [0-9]' "... and has the delegation key's counter"
stack_private_lighttpd_stop

# ---- the other credentials ----
other_cred() { # LABEL KIND LINES...
	local label=$1
	shift
	conf "$label" "$@" "authority = $fake" "token_cache = none"
	cgi_run "$work/$label.out" "$work/$label.conf" POST "/documents?name=${PREFIX}$label" "$bearer" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH=6 < <(printf '%s' "${label:0:6}")
	is "$CGI_CODE" 201 "$label: create ($(cgi_body "$work/$label.out" | head -c 200))"
	cgi_run "$work/$label.get" "$work/$label.conf" GET "/documents/$(jfield "$(cgi_body "$work/$label.out")" id)/content" </dev/null
	is "$CGI_CODE" 200 "$label: read"
}
c0=$(issued certificate)
other_cred certif "tenant_id = $TENANT" "client_id = $CLIENT" "client_certificate = $work/cert.pem"
ok "[ $(issued certificate) -gt $c0 ]" "... the authority verified the certificate's assertion"
f0=$(issued federated)
other_cred federa "tenant_id = $TENANT" "client_id = $CLIENT" "federated_token_file = $work/federated"
ok "[ $(issued federated) -gt $f0 ]" "... the authority took the federated token"
m0=$(issued imds)
other_cred manage "managed_identity = yes" "client_id = $MI_CLIENT" \
	"imds_endpoint = $fake/metadata/identity/oauth2/token"
ok "[ $(issued imds) -gt $m0 ]" "... the managed identity endpoint issued it"

# ---- named errors; nothing acknowledged is lost ----
# refused NAME STATUS WORDS: a create with NAME.conf answers STATUS, the
# responder's log has WORDS, no ready row has the name, and check-account
# exits non-zero naming the cause.
refused() {
	local name=$1 want=$2 words=$3 exit_want=$4
	: >"$work/$name.err"
	CGI_STDERR=$work/$name.err cgi_run "$work/$name.out" "$work/$name.conf" POST \
		"/documents?name=${PREFIX}$name" "$bearer" CONTENT_TYPE=text/plain CONTENT_LENGTH=4 < <(printf nope)
	is "$CGI_CODE" "$want" "$name: create answers $want ($(cgi_body "$work/$name.out" | head -c 160))"
	like "$(cat "$work/$name.err")" "$words" "$name: ... the log names the cause"
	is "$(sql "SELECT COUNT(*) FROM $DBNAME.documents WHERE name = '${PREFIX}$name' AND status = 'ready'")" 0 \
		"$name: ... and nothing became ready"
	"$cli" -c "$work/$name.conf" check-account >"$work/$name.check" 2>&1
	is "$?" "$exit_want" "$name: check-account exits $exit_want"
	like "$(cat "$work/$name.check")" "$words" "$name: ... and says why"
	unlike "$(cat "$work/$name.err" "$work/$name.check")" 'a-secret-|eyJ' "$name: ... with no secret or token in either"
}
printf 'the-wrong-secret\n' >"$work/wrong"
conf badsecret "tenant_id = $TENANT" "client_id = $CLIENT" "client_secret_file = $work/wrong" \
	"authority = $fake" "token_cache = none"
refused badsecret 503 'client secret .*invalid_client.*AADSTS7000215' 77
conf badcert "tenant_id = $TENANT" "client_id = $CLIENT" "client_certificate = $work/other.pem" \
	"authority = $fake" "token_cache = none"
refused badcert 503 'client certificate .*invalid_client.*AADSTS700027' 77
closed=$(STACK_AVOID_PORTS="$(cat "$work/fake.port")" bash -c '. "$1"; stack_port P 19800 >/dev/null 2>&1; echo "$P"' \
	_ "$here/../lib/stack.sh" 2>/dev/null)
conf unreachable "tenant_id = $TENANT" "client_id = $CLIENT" "client_secret_file = $work/secret" \
	"authority = http://127.0.0.1:${closed:-1}" "token_cache = none"
refused unreachable 503 'out of reach' 69
is "$(sql "SELECT status FROM $DBNAME.documents WHERE name = '${PREFIX}unreachable'")" pending \
	"unreachable: the intent is left pending for the sweeper"
"$cli" -c "$work/secret.conf" sweep --older-than 0 --force --prefix '' >"$work/sweep2.out" 2>&1
is "$(sql "SELECT COUNT(*) FROM $DBNAME.documents WHERE name = '${PREFIX}unreachable'")" 0 \
	"... which the sweep (the authority back) resolves"
control '{"audience": "https://wrong.example"}'
conf audience "${secret_lines[@]/#token_cache = */token_cache = none}"
refused audience 500 'AuthenticationFailed|audience' 77
control '{"reset": true}'
control '{"expired": true}'
conf expired "${secret_lines[@]/#token_cache = */token_cache = none}"
refused expired 500 'AuthenticationFailed|expired' 77
control '{"reset": true}'
# ---- no secret in any log ----
# The responders' logs (CGI stderr, lighttpd's error log), the CLI's output
# and the stand-in's log: no token (a JWT: base64 of '{"' is "eyJ"), no
# client secret, no delegation key, no SAS signature.
udk=$(find "$work/cache" -name '*.udk' -exec tail -n 1 {} \; 2>/dev/null | head -n 1)
ok '[ -n "$udk" ]' "(a delegation key is in the cache to look for)"
logs=("$work"/*.err "$work"/*.check "$work"/check.out "$work"/sweep*.out "$work"/migrate.out "$work"/fake.log)
mapfile -t -O "${#logs[@]}" logs < <(find "$work/lighttpd" -type f -name '*.log' 2>/dev/null)
ok '[ -s "$work/cgi.err" ] && [ ${#logs[@]} -gt 15 ]' "searching ${#logs[@]} logs"
is "$(grep -lE 'eyJ[A-Za-z0-9_-]{8,}\.eyJ' "${logs[@]}" 2>/dev/null | tr '\n' ' ')" "" "no access token in any log"
is "$(grep -lF "$(cat "$work/secret")" "${logs[@]}" 2>/dev/null | tr '\n' ' ')" "" "no client secret"
is "$(grep -lF "${udk:-none}" "${logs[@]}" 2>/dev/null | tr '\n' ' ')" "" "no delegation key"
is "$(grep -lE 'sig=[A-Za-z0-9%+/=]{20,}' "${logs[@]}" 2>/dev/null | tr '\n' ' ')" "" "no SAS signature"
done_testing
