#!/usr/bin/env bash
# doc/openapi.yaml against itself and against the real API, so it cannot drift.
#
# The document: it parses, is OpenAPI 3.1, every $ref resolves and every
# schema is a valid JSON Schema 2020-12 schema.  Then every route, through
# lighttpd AND Apache, with its main answers (201, 200 list/metadata/
# content, 206, 304 for If-None-Match, 416, 412 on a stale If-Match, 400
# bad_name, 401 (no token, an unknown one), 403, 404, 405 on every path
# (its Allow must list exactly the document's methods for the path), 409
# name_taken and offset_mismatch, 413, 415, 422 (a key reused, a tus name
# taken), 460, a create's replayed answer (Idempotent-Replayed), tus
# OPTIONS/POST/HEAD/PATCH/DELETE, direct create and finalize, /healthz, the
# page and its script): each answer is recorded in files (headers and the
# body's bytes, never a shell string) and tests/tools/openapi_check.py
# checks its status is one the operation declares, its JSON body against
# the declared schema and the declared required headers (Location, ETag,
# Upload-Offset, Tus-Resumable, X-Request-Id...), and that every operation
# the document describes was exercised.  Last, the checker must
# fail on a copy of the document with a wrong schema, a status removed and
# a broken $ref, and on a doctored answer: a check that cannot fail proves
# nothing.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN \
	BINDERY_TEST_TOKEN_OTHER BINDERY_TEST_WEBAUTH
command -v jq >/dev/null || missing "jq"
command -v openssl >/dev/null || missing "openssl (tus Upload-Checksum values)"
# Debian's python3-yaml and python3-jsonschema (./dev installs them); a
# python3 earlier in PATH may not see Debian's modules.
py=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import yaml, jsonschema; jsonschema.Draft202012Validator' 2>/dev/null; then
		py=$p
		break
	fi
done
[ -n "$py" ] || missing "python3 with yaml and jsonschema (python3-yaml, python3-jsonschema)"
spec=$top/doc/openapi.yaml
checker=$top/tests/tools/openapi_check.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ans=$work/answers
mkdir -p "$ans"

# tap_from FILE: each "ok ..." / "not ok ...: why" line the checker printed as TAP.
tap_from() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok "*) pass "${line#ok }" ;;
		"not ok "*) fail "${line#not ok }" ;;
		*) diag "$line" ;;
		esac
	done <"$1"
}

"$py" "$checker" spec "$spec" >"$work/spec.out" 2>&1
tap_from "$work/spec.out"

AUTH=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
OTHER=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN_OTHER")
TUS=(-H 'Tus-Resumable: 1.0.0')
OCTET=(-H 'Content-Type: application/octet-stream')
n=0
LAST=

# rec SERVER METHOD TEMPLATE WHAT URL [CURL-ARGS...]: one request, its answer
# recorded as $ans/NNN.{req,head,body}; LAST is the stem.  TEMPLATE is the
# document's path (or response=NAME for an answer no operation owns).
rec() {
	local server=$1 method=$2 template=$3 what=$4 url=$5 stem
	shift 5
	n=$((n + 1))
	stem=$ans/$(printf '%03d' "$n")
	{
		printf 'server=%s\nmethod=%s\nwhat=%s\n' "$server" "$method" "$what"
		case $template in
		response=*) printf '%s\npath=-\n' "$template" ;;
		*) printf 'path=%s\n' "$template" ;;
		esac
		[ -z "${ALLOW_FOR:-}" ] || printf 'allow_for=%s\n' "$ALLOW_FOR"
	} >"$stem.req"
	if [ "$method" = HEAD ]; then
		curl -s -m 30 -I -D "$stem.head" -o "$stem.body" "$@" "$url" || true
	else
		curl -s -m 30 -X "$method" -D "$stem.head" -o "$stem.body" "$@" "$url" || true
	fi
	: >>"$stem.head"
	: >>"$stem.body"
	LAST=$stem
}

# code STEM: the status of a recorded answer; hdr STEM NAME: one of its headers.
# (code in the shell: it runs for every recorded answer.)
code() {
	local line
	IFS= read -r line <"$1.head"
	[[ ${line%$'\r'} =~ ^HTTP/[0-9.]+\ ([0-9]+) ]] && printf '%s\n' "${BASH_REMATCH[1]}"
	return 0
}
hdr() { tr -d '\r' <"$1.head" | sed -n "s/^$2: *//Ip" | tail -n 1; }

printf 'openapi check %s\n' "$$" >"$work/small.txt"
head -c 3000 /dev/urandom >"$work/bytes.bin"
printf 'five!' >"$work/five"
printf '{"name":"x","size":"big"}' >"$work/bad.json"
printf '' >"$work/empty"

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	t=oa$$-$srv-$RANDOM

	# --- service ---
	rec "$srv" GET /healthz "" "$url/healthz"
	rec "$srv" GET / "the page" "$url/?limit=5"
	rec "$srv" GET / "bad limit" "$url/?limit=0"
	rec "$srv" GET /page.js "" "$url/page.js"
	rec "$srv" GET response=NoRoute "no such route" "$url/no-such-route"
	rec "$srv" HEAD / "" "$url/"
	rec "$srv" HEAD /page.js "" "$url/page.js"
	rec "$srv" GET /favicon.ico "" "$url/favicon.ico"
	rec "$srv" HEAD /favicon.ico "" "$url/favicon.ico"
	rec "$srv" GET / "oldest first" "$url/?limit=5&order=oldest"
	rec "$srv" HEAD /healthz "" "$url/healthz"
	rec "$srv" HEAD /documents "" "$url/documents?limit=1"

	# --- documents ---
	rec "$srv" POST /documents "raw" "$url/documents?name=$t-raw" "${AUTH[@]}" \
		-H 'Content-Type: text/plain' -H "Idempotency-Key: $t-key" --data-binary "@$work/small.txt"
	raw=$LAST
	id=$(jq -r .id "$raw.body" 2>/dev/null)
	etag=$(hdr "$raw" etag)
	rec "$srv" POST /documents "multipart" "$url/documents" "${AUTH[@]}" \
		-F "name=$t-form" -F "file=@$work/bytes.bin;type=application/octet-stream"
	rec "$srv" POST /documents "name taken" "$url/documents?name=$t-raw" "${AUTH[@]}" "${OCTET[@]}" \
		--data-binary "@$work/small.txt"
	rec "$srv" POST /documents "bad name" "$url/documents?name=a%2Fb" "${AUTH[@]}" "${OCTET[@]}" \
		--data-binary "@$work/small.txt"
	rec "$srv" POST /documents "no name" "$url/documents" "${AUTH[@]}" "${OCTET[@]}" \
		--data-binary "@$work/small.txt"
	rec "$srv" POST /documents "no caller" "$url/documents?name=$t-anon" "${OCTET[@]}" \
		--data-binary "@$work/small.txt"
	rec "$srv" POST /documents "form encoding" "$url/documents?name=$t-urlenc" "${AUTH[@]}" \
		-H 'Content-Type: application/x-www-form-urlencoded' --data-binary "@$work/small.txt"
	rec "$srv" POST /documents "replayed" "$url/documents?name=$t-raw" "${AUTH[@]}" \
		-H 'Content-Type: text/plain' -H "Idempotency-Key: $t-key" --data-binary "@$work/small.txt"
	is "$(hdr "$LAST" idempotent-replayed)" true "$srv: the replayed create says Idempotent-Replayed: true"
	rec "$srv" POST /documents "unknown token" "$url/documents?name=$t-anon" \
		-H 'Authorization: Bearer not-a-token-bindery-knows' "${OCTET[@]}" --data-binary "@$work/small.txt"
	rec "$srv" POST /documents "key reused" "$url/documents?name=$t-other" "${AUTH[@]}" \
		-H 'Content-Type: text/plain' -H "Idempotency-Key: $t-key" --data-binary "@$work/small.txt"
	# Refused from Content-Length alone, before a byte of the body is read:
	# one past max_upload (64M) through lighttpd, which streams the body;
	# Apache's mod_fcgid would wait for the whole body below
	# LimitRequestBody, so there a length past it, which Apache hands to
	# bindery's 413 (conf/apache-fcgid.conf).
	big=67108865
	[ "$srv" = apache ] && big=70000000
	rec "$srv" POST /documents "too large" "$url/documents?name=$t-huge" "${AUTH[@]}" "${OCTET[@]}" \
		-H 'Expect:' -H "Content-Length: $big" --data-binary "@$work/five"
	# The web server's own authentication (Basic), as REMOTE_USER.
	rec "$srv" POST /documents "a form with its token" "$url/documents" -H 'Accept: text/html' \
		-F "token=$BINDERY_TEST_TOKEN" -F "name=$t-formtok" -F "file=@$work/small.txt"
	rec "$srv" POST /documents "Basic" "$url/documents?name=$t-basic" -u "$BINDERY_TEST_WEBAUTH" \
		-H 'Content-Type: text/plain' --data-binary "@$work/small.txt"
	rec "$srv" GET /documents "a page" "$url/documents?limit=2"
	rec "$srv" GET /documents "by name" "$url/documents?name=$t-raw"
	rec "$srv" GET /documents "prefix" "$url/documents?prefix=$t"
	rec "$srv" GET /documents "bad cursor" "$url/documents?after=x"
	rec "$srv" GET /documents "newest first" "$url/documents?prefix=$t&order=newest&limit=1"
	rec "$srv" GET /documents "bad order" "$url/documents?order=up"
	rec "$srv" GET /documents/{id} "" "$url/documents/$id"
	rec "$srv" HEAD /documents/{id} "" "$url/documents/$id"
	rec "$srv" GET /documents/{id} "unknown" "$url/documents/999999999"
	rec "$srv" GET /documents/{id}/content "" "$url/documents/$id/content"
	rec "$srv" HEAD /documents/{id}/content "" "$url/documents/$id/content"
	rec "$srv" GET /documents/{id}/content "not modified" "$url/documents/$id/content" \
		-H "If-None-Match: $etag"
	rec "$srv" HEAD /documents/{id}/content "not modified" "$url/documents/$id/content" \
		-H "If-None-Match: W/$etag"
	rec "$srv" GET /documents/{id}/content "range" "$url/documents/$id/content" -H 'Range: bytes=0-3'
	rec "$srv" GET /documents/{id}/content "range outside" "$url/documents/$id/content" \
		-H 'Range: bytes=99999-'
	rec "$srv" PUT /documents/{id}/content "If-Match" "$url/documents/$id/content" "${AUTH[@]}" \
		-H 'Content-Type: text/plain' -H "If-Match: $etag" --data-binary "@$work/bytes.bin"
	newetag=$(hdr "$LAST" etag)
	rec "$srv" PUT /documents/{id}/content "stale If-Match" "$url/documents/$id/content" "${AUTH[@]}" \
		-H 'Content-Type: text/plain' -H "If-Match: $etag" --data-binary "@$work/small.txt"
	rec "$srv" PUT /documents/{id}/content "a form" "$url/documents/$id/content" "${AUTH[@]}" \
		-F "file=@$work/small.txt"
	rec "$srv" DELETE /documents/{id} "another owner" "$url/documents/$id" "${OTHER[@]}"
	rec "$srv" DELETE /documents/{id} "stale If-Match" "$url/documents/$id" "${AUTH[@]}" -H "If-Match: $etag"
	rec "$srv" DELETE /documents/{id} "" "$url/documents/$id" "${AUTH[@]}" -H "If-Match: $newetag"
	rec "$srv" DELETE /documents/{id} "gone" "$url/documents/$id" "${AUTH[@]}"

	# --- tus ---
	meta="filename $(printf '%s' "$t-tus" | base64 -w0),filetype $(printf text/plain | base64 -w0)"
	rec "$srv" OPTIONS /uploads "" "$url/uploads" "${TUS[@]}"
	rec "$srv" POST /uploads "" "$url/uploads" "${AUTH[@]}" "${TUS[@]}" -H 'Content-Length: 0' \
		-H 'Upload-Length: 10' -H "Upload-Metadata: $meta"
	up=$(hdr "$LAST" location)
	up=${up##*/}
	rec "$srv" POST /uploads "name taken" "$url/uploads" "${AUTH[@]}" "${TUS[@]}" -H 'Content-Length: 0' \
		-H 'Upload-Length: 10' -H "Upload-Metadata: $meta"
	rec "$srv" POST /uploads "too large" "$url/uploads" "${AUTH[@]}" "${TUS[@]}" -H 'Content-Length: 0' \
		-H 'Upload-Length: 999999999999' -H "Upload-Metadata: $meta"
	rec "$srv" POST /uploads "no Tus-Resumable" "$url/uploads" "${AUTH[@]}" -H 'Content-Length: 0' \
		-H 'Upload-Length: 10' -H "Upload-Metadata: $meta"
	rec "$srv" PATCH /uploads/{upload} "first half" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}" \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 0' --data-binary "@$work/five"
	rec "$srv" HEAD /uploads/{upload} "" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}"
	rec "$srv" PATCH /uploads/{upload} "wrong offset" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}" \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 1' --data-binary "@$work/five"
	rec "$srv" PATCH /uploads/{upload} "bad checksum" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}" \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 5' \
		-H "Upload-Checksum: sha256 $(printf 'other' | openssl dgst -sha256 -binary | base64 -w0)" \
		--data-binary "@$work/five"
	rec "$srv" PATCH /uploads/{upload} "not tus bytes" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}" \
		-H 'Content-Type: text/plain' -H 'Upload-Offset: 5' --data-binary "@$work/five"
	rec "$srv" PATCH /uploads/{upload} "the rest" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}" \
		-H 'Content-Type: application/offset+octet-stream' -H 'Upload-Offset: 5' \
		-H "Upload-Checksum: sha256 $(openssl dgst -sha256 -binary <"$work/five" | base64 -w0)" \
		--data-binary "@$work/five"
	rec "$srv" HEAD /uploads/{upload} "finished" "$url/uploads/$up" "${AUTH[@]}" "${TUS[@]}"
	rec "$srv" POST /uploads "to terminate" "$url/uploads" "${AUTH[@]}" "${TUS[@]}" -H 'Content-Length: 0' \
		-H 'Upload-Length: 10' \
		-H "Upload-Metadata: filename $(printf '%s' "$t-gone" | base64 -w0)"
	up2=$(hdr "$LAST" location)
	up2=${up2##*/}
	rec "$srv" DELETE /uploads/{upload} "" "$url/uploads/$up2" "${AUTH[@]}" "${TUS[@]}"
	rec "$srv" HEAD /uploads/{upload} "terminated" "$url/uploads/$up2" "${AUTH[@]}" "${TUS[@]}"
	rec "$srv" DELETE /uploads/{upload} "no caller" "$url/uploads/$up2" "${TUS[@]}"
	rec "$srv" DELETE /uploads/{upload} "terminated" "$url/uploads/$up2" "${AUTH[@]}" "${TUS[@]}"

	# --- direct ---
	jq -n --arg n "$t-direct" --argjson s "$(stat -c %s "$work/bytes.bin")" \
		'{name: $n, size: $s, content_type: "application/octet-stream"}' >"$work/direct.json"
	rec "$srv" POST /documents/direct "" "$url/documents/direct" "${AUTH[@]}" \
		-H 'Content-Type: application/json' --data-binary "@$work/direct.json"
	grant=$LAST
	rec "$srv" POST /documents/direct "name taken" "$url/documents/direct" "${AUTH[@]}" \
		-H 'Content-Type: application/json' --data-binary "@$work/direct.json"
	rec "$srv" POST /documents/direct "bad JSON" "$url/documents/direct" "${AUTH[@]}" \
		-H 'Content-Type: application/json' --data-binary "@$work/bad.json"
	jq -n --arg n "$t-big" '{name: $n, size: 999999999999}' >"$work/big.json"
	rec "$srv" POST /documents/direct "too large" "$url/documents/direct" "${AUTH[@]}" \
		-H 'Content-Type: application/json' --data-binary "@$work/big.json"
	fin=$(jq -r .finalize_url "$grant.body" 2>/dev/null)
	rec "$srv" POST /documents/{id}/finalize "before the upload" "$url$fin" "${AUTH[@]}" -H 'Content-Length: 0'
	# The Put Blob goes to storage, not to bindery: not recorded.
	mapfile -t puthdr < <(jq -r '.headers | to_entries[] | "-H\n\(.key): \(.value)"' "$grant.body" 2>/dev/null)
	curl -s -o /dev/null -X PUT "${puthdr[@]}" --data-binary "@$work/bytes.bin" \
		"$(jq -r .upload_url "$grant.body" 2>/dev/null)" || true
	rec "$srv" POST /documents/{id}/finalize "" "$url$fin" "${AUTH[@]}" -H 'Content-Length: 0'
	rec "$srv" POST /documents/{id}/finalize "unknown" "$url/documents/999999999/finalize" "${AUTH[@]}" \
		-H 'Content-Length: 0'

	# --- 405 on every path: its Allow is exactly the document's methods ---
	for p in "/=/" "/page.js=/page.js" "/favicon.ico=/favicon.ico" "/healthz=/healthz" "/documents=/documents" \
		"/documents/direct=/documents/direct" "/documents/{id}=/documents/1" \
		"/documents/{id}/finalize=/documents/1/finalize" "/documents/{id}/content=/documents/1/content" \
		"/uploads=/uploads" "/uploads/{upload}=/uploads/0123456789abcdef0123456789abcdef"; do
		m=PATCH
		[ "${p%%=*}" = "/uploads/{upload}" ] && m=PUT
		ALLOW_FOR=${p%%=*} rec "$srv" "$m" response=MethodNotAllowed "on ${p%%=*}" "$url${p#*=}" \
			-H 'Content-Length: 0'
	done
done

# The answers this test means to get, so a drift in what it sends shows
# as well as a drift in the document.
codes=
for f in "$ans"/*.req; do
	stem=${f%.req}
	codes="$codes $(code "$stem")"
done
note "statuses:$codes"
for want in 200 201 204 206 304 400 401 403 404 405 409 412 413 415 416 422 460; do
	case " $codes " in
	*" $want "*) pass "a $want was recorded" ;;
	*) fail "a $want was recorded" ;;
	esac
done

"$py" "$checker" answers "$spec" "$ans" >"$work/answers.out" 2>&1
rc=$?
tap_from "$work/answers.out"
# Its exit status agrees with the lines it printed.
if grep -q '^not ok ' "$work/answers.out"; then is "$rc" 1 "checker exit status 1 with failures"
else is "$rc" 0 "checker exit status 0 with no failures"; fi

# --- the checker can fail ---
# A wrong document: Document without etag (additionalProperties: false),
# POST /documents without 409, a $ref to nothing, a schema that is not one.
"$py" - "$spec" "$work/wrong.yaml" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], 'rb'))
del doc['components']['schemas']['Document']['properties']['etag']
doc['components']['schemas']['Document']['required'].remove('etag')
del doc['paths']['/documents']['post']['responses']['409']
doc['paths']['/healthz']['get']['responses']['200']['content']['application/json']['schema'] = \
    {'$ref': '#/components/schemas/NoSuchSchema'}
doc['components']['schemas']['DocumentList']['properties']['next']['type'] = 'nullable-string'
yaml.safe_dump(doc, open(sys.argv[2], 'w'))
EOF
"$py" "$checker" spec "$work/wrong.yaml" >"$work/wrong-spec.out" 2>&1
is "$?" 1 "the checker fails a broken document"
like "$(cat "$work/wrong-spec.out")" 'not ok every \$ref resolves.*NoSuchSchema' "... naming the \$ref that resolves to nothing"
like "$(cat "$work/wrong-spec.out")" 'not ok every schema is valid.*DocumentList' "... and the schema that is not a schema"
# The same real answers against a document that no longer matches them
# (the broken $ref and schema repaired so the answers are what is checked).
"$py" - "$work/wrong.yaml" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], 'rb'))
doc['paths']['/healthz']['get']['responses']['200']['content']['application/json']['schema'] = \
    {'$ref': '#/components/schemas/Health'}
doc['components']['schemas']['DocumentList']['properties']['next']['type'] = ['string', 'null']
# An operation the code does not have.
doc['paths']['/healthz']['post'] = {'responses': {'200': {'description': 'none such'}}}
yaml.safe_dump(doc, open(sys.argv[1], 'w'))
EOF
"$py" "$checker" answers "$work/wrong.yaml" "$ans" >"$work/wrong-answers.out" 2>&1
is "$?" 1 "real answers fail against a document that does not describe them"
like "$(grep '^not ok' "$work/wrong-answers.out")" "POST /documents name taken -> 409: status 409 is not declared" \
	"... an undeclared status fails"
like "$(grep '^not ok' "$work/wrong-answers.out")" "Additional properties.*etag" "... a field the schema does not allow fails"
like "$(grep '^not ok' "$work/wrong-answers.out")" "Allow says \['GET', 'HEAD'\], the document has \['GET', 'HEAD', 'POST'\] for /healthz" \
	"... a method the code does not take fails (405's Allow)"
like "$(grep '^not ok' "$work/wrong-answers.out")" "every operation of the document was exercised: POST /healthz" \
	"... and so does an operation no request exercised"
# A doctored answer: a 201 without ETag, whose JSON lacks sha256.
bad=$ans/999
cp "$raw.req" "$bad.req"
grep -iv '^etag:' "$raw.head" >"$bad.head"
jq -c 'del(.sha256)' "$raw.body" >"$bad.body"
"$py" "$checker" answers "$spec" "$ans" >"$work/doctored.out" 2>&1
is "$?" 1 "a doctored answer fails"
like "$(grep '^not ok' "$work/doctored.out")" "required header ETag is absent" "... a missing required header"
like "$(grep '^not ok' "$work/doctored.out")" "'sha256' is a required property" "... a missing JSON field"

done_testing
