#!/usr/bin/env bash
# Real tus clients against /uploads, through lighttpd, through Apache
# mod_proxy_fcgi with the pool, and through Apache mod_fcgid (through these
# two the whole upload, the taken name and the checksums; every case under
# --long, BINDERY_TEST_LONG: the resume and the kill are the protocol's,
# and tests/e2e/pool.sh kills the pool's workers under load by default):
#   - tus-js-client 4.3.1 from Node (tests/e2e/tus_client.mjs), three cases
#     with a 20 MiB random file in 4 MiB chunks: a whole upload; an upload
#     aborted after two chunks and finished by a new client from the stored
#     upload URL; an upload whose responders get SIGKILL while a PATCH is
#     inside bindery, finished by the client's retries at once (the dead
#     PATCH's hold ends with its database session), well within the window a
#     silent live holder keeps it (heartbeat + request_deadline of the test
#     config);
#   - tus-js-client with parallelUploads: 4 (the concatenation extension),
#     a 6 MiB file, through lighttpd and Apache mod_fcgid (and under --long
#     the pool): four partial uploads at once and the final, the document
#     byte-identical;
#   - a name a ready document has: tus-js-client with the retryDelays and
#     onShouldRetry of doc/api.md's snippet must fail with 422 name_taken
#     within 5 s, after one POST (a 409 would keep it retrying for minutes);
#   - the checksum extension with curl (tus-js-client sends no checksums): a
#     wrong sha1 or sha256 digest is 460 and moves nothing, md5 is 400, right
#     digests are 204 and move the offset.
# Every finished upload's document is fetched by the Location of its last
# PATCH, its bytes compared with the file by SHA-256, and `bindery audit`
# must report nothing after each case (the test first sweeps what earlier
# tests left for the sweeper; anything the audit still reported then, it
# may go on reporting, and nothing more).  tus-js-client is installed by ./dev
# (pinned, like azurite and playwright-core): under ./dev test a missing one
# is a failure.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_APACHE_POOL_URL \
	BINDERY_TEST_TOKEN BINDERY_TEST_VAR \
	BINDERY_CONFIG BINDERY_TEST_BIN
command -v node >/dev/null || missing "no node (./dev installs nodejs)"
grep -q '"version": "4.3.1"' "$top/node_modules/tus-js-client/package.json" 2>/dev/null ||
	missing "no tus-js-client 4.3.1 in node_modules (./dev installs it)"
command -v openssl >/dev/null || missing "no openssl (for the checksum digests)"
command -v jq >/dev/null || missing "no jq (./dev installs it)"
stack_init "$BINDERY_TEST_VAR"
tus_azurite_pid=$(stack_pid azurite) || bail_out "the test stack's Azurite is not running"
tus_lighttpd_pid=$(stack_pid lighttpd) || bail_out "the test stack's lighttpd is not running"
tus_apache_pid=$(stack_pid apache) || bail_out "the test stack's Apache is not running"
tus_pool_pid=$(stack_pid pool) || bail_out "the test stack's pool is not running"

tus_run=$$x$RANDOM
tus_work=$BINDERY_TEST_VAR/tus-client.$tus_run
mkdir -p "$tus_work"
# Whatever happens to the Node client, Azurite must not stay stopped.
trap 'kill -CONT "$tus_azurite_pid" 2>/dev/null; rm -rf "$tus_work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

head -c $((20 * 1024 * 1024)) /dev/urandom >"$tus_work/file.bin"
# The parallel case's: small, as it runs by default through two servers.
head -c $((6 * 1024 * 1024 + 333)) "$tus_work/file.bin" >"$tus_work/parallel.bin"

# conf_limit KEY: the [limits] KEY of the test config (the last line wins).
conf_limit() {
	awk -F' *= *' -v k="$1" '/^\[/ { s = $0 } s == "[limits]" && $1 == k { v = $2 } END { print v }' \
		"$BINDERY_CONFIG"
}
tus_takeover=$(($(conf_limit heartbeat) + $(conf_limit request_deadline)))
ok '[ "$tus_takeover" -gt 0 ]' "the takeover time of the test config is $tus_takeover s (heartbeat + request_deadline)"

# audit_findings OUT: `bindery audit --json` on the test stack, one "kind
# name" line per finding (sorted) in OUT; its exit status in AUDIT_RC
# (0 clean, 1 problems, 2 a dangling document; anything else: it failed).
audit_findings() {
	"$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" audit --json >"$tus_work/audit.json" 2>"$tus_work/audit.err"
	AUDIT_RC=$?
	jq -r '.findings[] | "\(.kind) \(.name)"' "$tus_work/audit.json" 2>/dev/null | sort >"$1"
}

# audit_clean WHAT: `bindery audit` reports nothing that it did not report
# before this test began (with nothing before, as in a run of this test
# alone: nothing at all).
audit_clean() {
	audit_findings "$tus_work/audit.now"
	comm -13 "$tus_work/audit.before" "$tus_work/audit.now" >"$tus_work/audit.new"
	ok '[ "$AUDIT_RC" -le 2 ] && [ ! -s "$tus_work/audit.new" ]' \
		"$1: bindery audit reports nothing new (exit $AUDIT_RC, $(grep -c . <"$tus_work/audit.now") findings)"
	sed -e 's/^/#   audit: /' "$tus_work/audit.new" "$tus_work/audit.err" | head -n 20
}

# document_is WHAT URL LOCATION NAME FILE: the document at LOCATION is ready
# under NAME, and its JSON and its content carry FILE's SHA-256.
document_is() {
	local what=$1 url=$2 loc=$3 name=$4 file=$5 want
	want=$(sha "$file")
	req GET "$url$loc"
	is "$HTTP_CODE" 200 "$what: GET $loc is 200"
	is "$(jfield "$HTTP_BODY" name)" "$name" "$what: the document has the upload's filename"
	is "$(jfield "$HTTP_BODY" sha256)" "$want" "$what: its sha256 is the file's"
	curl -s -m 120 -o "$tus_work/got.bin" "$url$loc/content"
	is "$(sha "$tus_work/got.bin")" "$want" "$what: its content's SHA-256 is the file's"
	rm -f "$tus_work/got.bin"
}

# options_advertised SERVER URL: OPTIONS /uploads names the protocol and the extensions.
options_advertised() {
	local server=$1 url=$2
	req OPTIONS "$url/uploads"
	is "$HTTP_CODE" 204 "$server: OPTIONS /uploads is 204"
	is "$(header tus-resumable)" 1.0.0 "$server: Tus-Resumable: 1.0.0"
	like "$(header tus-extension)" '(^|,) *checksum *(,|$)' "$server: Tus-Extension names checksum"
	like "$(header tus-checksum-algorithm)" '(^|,) *sha1 *(,|$)' "$server: Tus-Checksum-Algorithm offers sha1"
	like "$(header tus-checksum-algorithm)" '(^|,) *sha256 *(,|$)' "$server: ... and sha256"
}

# client CASE SERVER URL SERVER-PID: one case of tus_client.mjs, its
# document checked, then the audit.
client() {
	local kase=$1 server=$2 url=$3 pid=$4 name rc verdict what loc= file=$tus_work/file.bin
	[ "$kase" != parallel ] || file=$tus_work/parallel.bin
	name=tus-client-$tus_run-$kase-$server.bin
	node "$here/tus_client.mjs" "$kase" "$url" "$file" "$name" \
		"$pid" "$tus_azurite_pid" "$BLOB_PORT" "$tus_takeover" >"$tus_work/results" 2>"$tus_work/node.err"
	rc=$?
	local before=$TAP_N
	while IFS=$'\t' read -r verdict what; do
		case $verdict in
		pass) pass "$server: $what" ;;
		fail) fail "$server: $what" ;;
		location) loc=$what ;;
		*) note "$server: $what" ;;
		esac
	done <"$tus_work/results"
	if [ "$rc" != 0 ] || [ "$TAP_N" = "$before" ]; then
		fail "$server: tus_client.mjs $kase ran to its end (exit $rc)"
		while IFS= read -r l; do diag "$l"; done < <(tail -n 20 "$tus_work/node.err")
	fi
	if [ -n "$loc" ]; then
		document_is "$server $kase" "$url" "$loc" "$name" "$file"
	else
		fail "$server $kase: the upload named its document"
	fi
	audit_clean "$server $kase"
}

# taken SERVER URL: tus_client.mjs's taken case, against a name a ready
# document (made here with POST /documents) already has.
taken() {
	local server=$1 url=$2 name rc verdict what before=$TAP_N
	name=tus-client-$tus_run-taken-$server.bin
	printf 'taken\n' >"$tus_work/taken.txt"
	req POST "$url/documents?name=$name" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		-H 'Content-Type: text/plain' --data-binary "@$tus_work/taken.txt"
	is "$HTTP_CODE" 201 "$server taken: a document named $name exists"
	node "$here/tus_client.mjs" taken "$url" "$tus_work/taken.txt" "$name" >"$tus_work/results" \
		2>"$tus_work/node.err"
	rc=$?
	while IFS=$'\t' read -r verdict what; do
		case $verdict in
		pass) pass "$server: $what" ;;
		fail) fail "$server: $what" ;;
		*) note "$server: $what" ;;
		esac
	done <"$tus_work/results"
	if [ "$rc" != 0 ] || [ "$TAP_N" -lt $((before + 4)) ]; then
		fail "$server: tus_client.mjs taken ran to its end (exit $rc)"
		while IFS= read -r l; do diag "$l"; done < <(tail -n 20 "$tus_work/node.err")
	fi
}

# patch_sum URL UPLOAD OFFSET FILE CHECKSUM: PATCH FILE at OFFSET with
# Upload-Checksum CHECKSUM.
patch_sum() {
	req PATCH "$1$2" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Tus-Resumable: 1.0.0' \
		-H 'Content-Type: application/offset+octet-stream' -H "Upload-Offset: $3" \
		-H "Upload-Checksum: $5" --data-binary "@$4"
}

# offset_is WHAT URL UPLOAD WANT: HEAD reports Upload-Offset WANT (the tus
# spec allows 200 or 204 for it).
offset_is() {
	req HEAD "$2$3" -I -H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Tus-Resumable: 1.0.0'
	like "$HTTP_CODE:$(header upload-offset)" "^20[04]:$4\$" "$1: HEAD shows Upload-Offset $4"
}

# digest ALGORITHM FILE: the base64 of FILE's digest, as Upload-Checksum wants it.
digest() {
	openssl dgst "-$1" -binary "$2" | base64 -w0
}

# checksums SERVER URL: the checksum extension, with curl.
checksums() {
	local server=$1 url=$2 name up half=$((1024 * 1024)) meta
	name=tus-client-$tus_run-checksum-$server.bin
	head -c $half "$tus_work/file.bin" >"$tus_work/part1"
	tail -c +$((half + 1)) "$tus_work/file.bin" | head -c $half >"$tus_work/part2"
	cat "$tus_work/part1" "$tus_work/part2" >"$tus_work/both"
	meta="filename $(printf '%s' "$name" | base64 -w0),filetype $(printf 'application/octet-stream' | base64 -w0)"
	# No body: Content-Length 0 (lighttpd wants one on a POST).
	req POST "$url/uploads" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Tus-Resumable: 1.0.0' \
		-H "Upload-Length: $((2 * half))" -H "Upload-Metadata: $meta" -H 'Content-Length: 0'
	up=$(header location)
	is "$HTTP_CODE" 201 "$server checksum: POST /uploads is 201"
	like "$up" '^/uploads/[0-9a-f]{32}$' "$server checksum: Location names the upload ($up)"
	[[ $up =~ ^/uploads/[0-9a-f]{32}$ ]] || return 0

	# Real digests, but of the other part: the body does not match them.
	patch_sum "$url" "$up" 0 "$tus_work/part1" "sha1 $(digest sha1 "$tus_work/part2")"
	is "$HTTP_CODE" 460 "$server checksum: a wrong sha1 digest is 460"
	like "$HTTP_BODY" '"error":"[a-z_]+"' "$server checksum: ... with a JSON error ($HTTP_BODY)"
	offset_is "$server checksum: after the wrong sha1" "$url" "$up" 0
	patch_sum "$url" "$up" 0 "$tus_work/part1" "sha256 $(digest sha256 "$tus_work/part2")"
	is "$HTTP_CODE" 460 "$server checksum: a wrong sha256 digest is 460"
	offset_is "$server checksum: after the wrong sha256" "$url" "$up" 0
	# md5 is not offered, even with the right digest.
	patch_sum "$url" "$up" 0 "$tus_work/part1" "md5 $(digest md5 "$tus_work/part1")"
	is "$HTTP_CODE" 400 "$server checksum: an md5 checksum (not offered) is 400"
	like "$HTTP_BODY" '"error":"[a-z_]+"' "$server checksum: ... with a JSON error ($HTTP_BODY)"
	offset_is "$server checksum: after md5" "$url" "$up" 0

	patch_sum "$url" "$up" 0 "$tus_work/part1" "sha1 $(digest sha1 "$tus_work/part1")"
	is "$HTTP_CODE:$(header upload-offset)" "204:$half" "$server checksum: the right sha1 is 204, Upload-Offset $half"
	offset_is "$server checksum: after the right sha1" "$url" "$up" $half
	patch_sum "$url" "$up" $half "$tus_work/part2" "sha256 $(digest sha256 "$tus_work/part2")"
	is "$HTTP_CODE:$(header upload-offset)" "204:$((2 * half))" \
		"$server checksum: the right sha256 is 204, Upload-Offset $((2 * half))"
	local loc
	loc=$(header location)
	like "$loc" '^/documents/[0-9]+$' "$server checksum: the last PATCH names the document ($loc)"
	[[ $loc =~ ^/documents/[0-9]+$ ]] && document_is "$server checksum" "$url" "$loc" "$name" "$tus_work/both"
	audit_clean "$server checksum"
}

# Earlier tests leave intents for the sweeper on purpose (their crashes):
# resolve them first, so that the audits below speak of this test's
# uploads.  Whatever the audit still reports then (nothing, in a run of
# this test alone) is the baseline it must not grow from.
"$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" sweep --older-than 0 --force >"$tus_work/sweep.log" 2>&1
note "bindery sweep --older-than 0 --force before the uploads: exit $?"
audit_findings "$tus_work/audit.before"
ok '[ "$AUDIT_RC" -le 2 ]' "bindery audit runs before the uploads (exit $AUDIT_RC)"
while IFS= read -r tus_line; do note "audit before this test: $tus_line"; done <"$tus_work/audit.before"

for tus_server in lighttpd pool apache; do
	tus_cases='whole resume kill parallel'
	case $tus_server in
	lighttpd) tus_url=$BINDERY_TEST_LIGHTTPD_URL tus_pid=$tus_lighttpd_pid ;;
	pool | apache)
		if [ $tus_server = pool ]; then
			tus_url=$BINDERY_TEST_APACHE_POOL_URL tus_pid=$tus_pool_pid
		else
			tus_url=$BINDERY_TEST_APACHE_URL tus_pid=$tus_apache_pid
		fi
		# The pool streams each PATCH as lighttpd does, and mod_fcgid's
		# PATCHes are whole requests like any other; the resume and the
		# kill are the protocol's, run above.  A parallel upload runs
		# through mod_fcgid by default (its PATCHes are whole requests).
		if [ -z "${BINDERY_TEST_LONG:-}" ]; then
			tus_cases=whole
			[ $tus_server = pool ] || tus_cases='whole parallel'
		fi ;;
	esac
	options_advertised "$tus_server" "$tus_url"
	for tus_case in $tus_cases; do
		client "$tus_case" "$tus_server" "$tus_url" "$tus_pid"
	done
	taken "$tus_server" "$tus_url"
	checksums "$tus_server" "$tus_url"
done
done_testing
