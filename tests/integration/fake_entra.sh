#!/usr/bin/env bash
# tests/integration/fake_entra.sh — tests/tools/fake_entra.py refuses what
# Microsoft Entra ID and Azure IMDS refuse, so a client that gets a token
# from it has done what the real services ask.  Driven with curl and openssl
# alone: the certificate assertions are made here by hand (base64url parts,
# openssl dgst's PSS signature), not by bindery's code under test.  Needs no
# stack: the fake is all there is.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

# Debian's python3 with its python3-cryptography, whatever python3 comes
# first in PATH (.ci/provision.sh installs it).
PY=/usr/bin/python3
"$PY" -c 'import cryptography' 2>/dev/null ||
	missing "$PY with python3-cryptography is not installed"
for tool in curl openssl basenc; do
	command -v "$tool" >/dev/null || missing "$tool is not installed"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/fake_entra.XXXXXX") || bail_out "mktemp -d failed"
fake_pid= other_pid=
cleanup() {
	local pid
	for pid in $fake_pid $other_pid; do kill "$pid" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

tenant=tenant-$$ client=app-$$ mi=identity-$$
scope=https://storage.azure.com/.default
jwt_bearer=urn:ietf:params:oauth:client-assertion-type:jwt-bearer
# The secret and the federated token as an admin's files hold them: a
# final newline the fake drops.
printf 'not-a-real-secret~%s\n' "$$" >"$work/secret"
printf 'eyJmZWRlcmF0ZWQiOnRydWV9.federated-%s.token\n' "$$" >"$work/federated"
secret=$(<"$work/secret") federated=$(<"$work/federated")

# The other key (an impostor's) is made while the fake starts: each RSA
# key costs openssl a few hundred ms.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/other.pem" \
	2>/dev/null &
other_pid=$!
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
	-subj /CN=fake-entra-test -days 1 2>/dev/null || bail_out "openssl req failed"
openssl x509 -in "$work/cert.pem" -outform DER -out "$work/cert.der" &&
	openssl dgst -sha256 -binary -out "$work/thumb.bin" "$work/cert.der" ||
	bail_out "openssl could not hash the certificate"

# b64url FILE: the file's bytes as unpadded base64url (RFC 7515).
b64url() {
	local s
	s=$(basenc --base64url -w0 "$1")
	printf '%s' "${s%%=*}"
}
# b64url_text TEXT: the bytes base64url TEXT stands for, on stdout.
b64url_text() {
	local s=${1//-/+}
	s=${s//_//}
	while ((${#s} % 4)); do s+='='; done
	printf '%s' "$s" | base64 -d 2>/dev/null
}
thumb=$(b64url "$work/thumb.bin")

"$PY" "$here/../tools/fake_entra.py" --port-file "$work/port" --tenant "$tenant" \
	--client-id "$client" --secret-file "$work/secret" --certificate "$work/cert.pem" \
	--federated-token-file "$work/federated" --imds-client-id "$mi" \
	--log "$work/entra.log" 2>"$work/entra.err" &
fake_pid=$!
wait_for 10 test -s "$work/port" || bail_out "fake_entra.py did not start: $(head -c 500 "$work/entra.err")"
port=$(<"$work/port")
wait "$other_pid" || bail_out "openssl genpkey failed"
other_pid=
base=http://127.0.0.1:$port
endpoint=$base/$tenant/oauth2/v2.0/token

# token CURL-ARGS...: a client-credentials request to the token endpoint
# ($ENDPOINT when set) with grant_type, client_id and scope, plus the args.
token() {
	req POST "${ENDPOINT:-$endpoint}" -d grant_type=client_credentials \
		--data-urlencode "client_id=${CLIENT:-$client}" --data-urlencode "scope=${SCOPE:-$scope}" "$@"
}
# claims: the payload of the access token in the last answer (JSON text).
claims() {
	local t
	t=$(jfield "$HTTP_BODY" access_token)
	t=${t#*.}
	b64url_text "${t%%.*}"
}
# description: the last answer's error_description (jfield stops at a
# comma; Entra's sentences have them).
description() {
	local re='"error_description":"(([^"\\]|\\.)*)"'
	[[ $HTTP_BODY =~ $re ]] && printf '%s\n' "${BASH_REMATCH[1]}"
}
# refused CODE STATUS ERROR DESC: the last answer is Entra's refusal.
refused() {
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error) $(jfield "$HTTP_BODY" error_codes)" \
		"$2 $3 [$1]" "$4: $2 $3 AADSTS$1"
	like "$(description)" "^AADSTS$1: .*Trace ID: .*Correlation ID: " \
		"... its description is Entra's shape"
}

# --- client secret ------------------------------------------------------
token --data-urlencode "client_secret=$secret"
is "$HTTP_CODE $(jfield "$HTTP_BODY" token_type) $(jfield "$HTTP_BODY" expires_in)" \
	"200 Bearer 3600" "the secret: 200, a Bearer token for an hour"
c=$(claims)
is "$(jfield "$c" aud) $(jfield "$c" iss) $(jfield "$c" tid) $(jfield "$c" appid)" \
	"https://storage.azure.com https://sts.windows.net/$tenant/ $tenant $client" \
	"... the token's aud, iss, tid and appid"
is "$(($(jfield "$c" exp) - $(jfield "$c" iat)))" 3600 "... its exp is an hour after iat"
like "$(jfield "$c" oid)" '^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-' "... its oid is a UUID (v5: stable)"
t=$(jfield "$HTTP_BODY" access_token)
is "$(b64url_text "${t%%.*}")" '{"alg":"RS256","typ":"JWT"}' "... its header"
oid=$(jfield "$c" oid)

token --data-urlencode "client_secret=$secret-x"
refused 7000215 401 invalid_client "a wrong secret"
ENDPOINT=$base/other-tenant/oauth2/v2.0/token token --data-urlencode "client_secret=$secret"
refused 90002 400 invalid_request "another tenant"
CLIENT=someone-else token --data-urlencode "client_secret=$secret"
refused 700016 400 unauthorized_client "an unknown client"
SCOPE=https://storage.azure.com/user_impersonation token --data-urlencode "client_secret=$secret"
refused 1002012 400 invalid_scope "a scope other than storage's .default"
token
refused 7000216 401 invalid_client "no credential"

# --- certificate assertions, made by hand -----------------------------------
# assertion KEY AUD JTI [EXP-SECONDS [SALT [X5T]]]: a PS256 assertion in
# $ASSERTION, signed by KEY with a salt of SALT bytes (32).
assertion() {
	local now=$EPOCHSECONDS exp salt=${5:-32} x5t=${6:-$thumb}
	exp=$((now + ${4:-600}))
	printf '{"alg":"PS256","typ":"JWT","x5t#S256":"%s"}' "$x5t" >"$work/header.json"
	printf '{"aud":"%s","iss":"%s","sub":"%s","jti":"%s","nbf":%d,"iat":%d,"exp":%d}' \
		"$2" "$client" "$client" "$3" "$now" "$now" "$exp" >"$work/payload.json"
	printf '%s.%s' "$(b64url "$work/header.json")" "$(b64url "$work/payload.json")" >"$work/input"
	openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt "rsa_pss_saltlen:$salt" \
		-sigopt rsa_mgf1_md:sha256 -sign "$1" -out "$work/sig.bin" "$work/input" ||
		bail_out "openssl dgst -sign failed"
	ASSERTION=$(<"$work/input").$(b64url "$work/sig.bin")
}
post_assertion() { # [ASSERTION]
	token --data-urlencode "client_assertion_type=$jwt_bearer" \
		--data-urlencode "client_assertion=${1:-$ASSERTION}"
}

assertion "$work/key.pem" "$endpoint" "jti-1-$$"
post_assertion
is "$HTTP_CODE $(jfield "$(claims)" appid)" "200 $client" "a certificate assertion: 200, a token for the client"
signature=${ASSERTION##*.}
post_assertion
refused 700027 401 invalid_client "the same assertion again (its jti)"
like "$(description)" 'seen before' "... the description says it is a replay"
assertion "$work/other.pem" "$endpoint" "jti-2-$$"
post_assertion
refused 700027 401 invalid_client "an assertion signed by another key"
like "$(description)" 'signature does not verify' "... the description says the signature"
assertion "$work/key.pem" "$base/another/oauth2/v2.0/token" "jti-3-$$"
post_assertion
refused 700027 401 invalid_client "an assertion for another URL (aud)"
like "$(description)" "aud is .*another.*, not $endpoint" "... the description says the aud"
assertion "$work/key.pem" "$endpoint" "jti-4-$$" 600 20
post_assertion
refused 700027 401 invalid_client "an assertion with a salt of 20 bytes, not 32"
assertion "$work/key.pem" "$endpoint" "jti-5-$$" -60
post_assertion
refused 700027 401 invalid_client "an expired assertion"
assertion "$work/key.pem" "$endpoint" "jti-6-$$" 7200
post_assertion
refused 700027 401 invalid_client "an assertion valid for two hours"
assertion "$work/key.pem" "$endpoint" "jti-7-$$" 600 32 "$(b64url "$work/cert.der")"
post_assertion
refused 700027 401 invalid_client "an x5t#S256 that is not the certificate's thumbprint"
assertion "$work/key.pem" "$endpoint" "jti-8-$$"
post_assertion
is "$HTTP_CODE" 200 "a fresh assertion after all those: 200"

# --- federated token --------------------------------------------------------
post_assertion "$federated"
is "$HTTP_CODE $(jfield "$(claims)" appid)" "200 $client" "the federated token file's content: 200"
post_assertion "$federated.x"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "401 invalid_client" "another federated token: 401"

# --- IMDS -------------------------------------------------------------------
imds="$base/metadata/identity/oauth2/token?api-version=2018-02-01"
req GET "$imds&resource=https://storage.azure.com/"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 invalid_request" "IMDS without Metadata: true: 400"
req GET "$imds&resource=https://storage.azure.com/" -H 'Metadata: true'
is "$HTTP_CODE $(jfield "$HTTP_BODY" client_id) $(jfield "$HTTP_BODY" expires_in) $(jfield "$HTTP_BODY" resource)" \
	"200 $mi 3599 https://storage.azure.com/" "IMDS with Metadata: true: 200, the one identity's token"
is "$(jfield "$(claims)" appid) $(jfield "$(claims)" aud)" "$mi https://storage.azure.com" "... for that identity and storage"
like "$(jfield "$HTTP_BODY" expires_on)" '^[0-9]{10}$' "... expires_on in epoch seconds, as a string"
req GET "$imds&resource=https://storage.azure.com/&client_id=$mi" -H 'Metadata: true'
is "$HTTP_CODE" 200 "IMDS with its client_id: 200"
req GET "$imds&resource=https://storage.azure.com/&client_id=nobody" -H 'Metadata: true'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error_description)" "400 Identity not found" "IMDS with another client_id: 400 Identity not found"
req GET "$imds&resource=https://storage.azure.com/" -H 'Metadata: true' -H 'X-Forwarded-For: 10.0.0.1'
is "$HTTP_CODE" 400 "IMDS through a proxy (X-Forwarded-For): 400"

# --- faults -----------------------------------------------------------------
control() { req POST "$base/_control" -H 'Content-Type: application/json' --data-binary "$1"; }
control '{"audience":"https://wrong.example"}'
token --data-urlencode "client_secret=$secret"
is "$(jfield "$(claims)" aud)" https://wrong.example "_control audience: the next token has that aud"
control '{"reset":true,"expired":true}'
token --data-urlencode "client_secret=$secret"
c=$(claims)
ok '[ "$(jfield "$c" exp)" -lt "$EPOCHSECONDS" ] && [ "$(jfield "$c" aud)" = https://storage.azure.com ]' \
	"_control expired (after a reset): the token's exp is past, its aud storage's again"
control '{"reset":true,"refuse":true}'
token --data-urlencode "client_secret=$secret"
refused 7000215 401 invalid_client "_control refuse: the good secret is refused"
control '{"reset":true,"status":503}'
req GET "$imds&resource=https://storage.azure.com/" -H 'Metadata: true'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "503 temporarily_unavailable" "_control status 503: IMDS answers 503"
control '{"reset":true,"lifetime":120}'
token --data-urlencode "client_secret=$secret"
c=$(claims)
is "$(jfield "$HTTP_BODY" expires_in) $(($(jfield "$c" exp) - $(jfield "$c" iat))) $(jfield "$c" oid)" \
	"120 120 $oid" "_control lifetime: two minutes, the same oid for the client"
control '{"delay":0.3}'
t0=${EPOCHREALTIME/./}
token --data-urlencode "client_secret=$secret"
ok '[ $(((${EPOCHREALTIME/./} - t0) / 1000)) -ge 300 ] && [ "$HTTP_CODE" = 200 ]' \
	"_control delay: the answer waits 0.3 s"
control '{"refuse":"yes"}'
is "$HTTP_CODE" 400 "_control refuses a member of the wrong type"
control '{"reset":true}'
req GET "$base/_control"
# 17 to the token endpoint and 5 to IMDS above, 6 among the faults; 10 of
# them issued.
is "$HTTP_BODY" '{"token_requests":28,"issued":{"secret":5,"certificate":2,"federated":1,"imds":2},"refused":18}' \
	"GET /_control counts the requests, the tokens by kind and the refusals"

# --- the log, and the end -----------------------------------------------------
is "$(grep -c " /$tenant/oauth2/v2.0/token " "$work/entra.log") $(grep -c " /metadata/identity/oauth2/token " "$work/entra.log")" \
	"21 6" "the log has a line per token request (21 to the tenant's endpoint, 6 to IMDS)"
ok '! grep -qF -e "$secret" -e "$signature" -e "${federated%.token}" "$work/entra.log"' \
	"the log holds neither the secret, an assertion's signature, nor the federated token"
kill "$fake_pid"
if wait_for 5 test ! -e "$work/port"; then
	wait "$fake_pid"
	rc=$?
	fake_pid=
else
	rc="still running after 5 s"
fi
is "$rc" 0 "SIGTERM stops it (status 0) and its port file goes"
done_testing
