#!/usr/bin/env bash
# Admission (doc/design.md, "Admission"): types by content and a
# malware scan, on every upload path, through a lighttpd and an Apache
# mod_fcgid of this test's own whose bindery.conf sets [upload]
# allowed_types and [scan] clamd: a clamd of the test's own
# (tests/lib/clamd.sh: Debian's clamd with one signature, EICAR's, built by
# sigtool here).  On each server (the second's replace and tus under
# --long):
#   - create, replace, tus and direct: a clean text file is admitted and
#     recorded with the type read from its bytes (not the one declared);
#   - EICAR is refused 422 infected on each path, and nothing of it is kept:
#     no row, no blob (a refused replace leaves the document as it was; a
#     direct upload's blob is deleted, its intent stays as for any refusal);
#   - an HTML file declared application/pdf is refused 415 type_not_allowed
#     before anything is stored.
# Past clamd's shipped 25M, with conf/clamd-bindery.conf: scanned whole.
# Then, once: clamd stopped: a create is 503 scan_unavailable and stores
# nothing, and the same request with its Idempotency-Key, once clamd is
# back, is 201; clamd frozen (SIGSTOP) after it took the connection: a
# keyed create waits the scan timeout, answers 503 and leaves its intent
# pending, and its retry resumes it (the same document); without a key it
# is compensated.  As CGI: content_type = declared records the declared
# type; on_scanner_error = admit admits with clamd stopped, but a clamd
# size-limit answer is refused even then.  `bindery audit`
# is clean for the test's prefix at the end.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"
. "$top/tests/lib/direct.sh"
. "$top/tests/lib/clamd.sh"

chaos_need_stack
need_stack BINDERY_TEST_BIN
clamd_need
sql_session
command -v jq >/dev/null || missing "jq"
cli=$BINDERY_TEST_BIN/bindery
work=$(mktemp -d -p "$BINDERY_TEST_VAR")
chmod 0755 "$work"
PREFIX=adm$$x$RANDOM/
NP=${PREFIX%/}-	# document names (a name holds no "/")
clamd_dir=
cleanup() {
	clamd_stop
	[ -z "$clamd_dir" ] || rm -rf "$clamd_dir"
	stack_private_lighttpd_stop
	stack_private_apache_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- clamd, the configuration, the two servers ----
# clamd's socket where Apache's www-data can reach it: the test's own
# directory may sit under one it cannot enter (a clone in a private place).
clamd_dir=$(mktemp -d /tmp/bindery-clamd.XXXXXX) || bail_out "no directory for clamd"
chmod 0755 "$clamd_dir"
clamd_start "$clamd_dir" include="$top/conf/clamd-bindery.conf" LocalSocketMode=666 ||
	bail_out "clamd did not start: $(tail -n 5 "$CLAMD_LOG" 2>/dev/null)"
note "clamd answered PING $CLAMD_START_MS ms after its start"
clamd_write_eicar "$work/eicar"
printf 'a plain text file, clean.\n' >"$work/clean"
printf '<!DOCTYPE html>\n<html><head><title>x</title></head><body><p>not a PDF</p></body></html>\n' >"$work/fake.pdf"
{
	sed -e "s|^\\[storage\\]\$|[storage]\\nprefix = $PREFIX|" \
	    -e 's|^\[upload\]$|[upload]\nallowed_types = text/plain, application/pdf, image/*|' "$BINDERY_CONFIG"
	printf '\n[scan]\nclamd = unix:%s\ntimeout = 2\n' "$CLAMD_SOCKET"
} >"$work/adm.conf"
chmod 0600 "$work/adm.conf"
grep -q "^prefix = $PREFIX\$" "$work/adm.conf" && grep -q '^allowed_types = ' "$work/adm.conf" ||
	bail_out "the test's configuration did not take"
"$cli" -c "$work/adm.conf" lifecycle-policy >"$work/check.out" 2>&1 ||
	bail_out "the test's configuration is refused: $(cat "$work/check.out")"

stack_private_servers admission "$work/adm.conf" 18490 ||
	bail_out "the test's lighttpd and Apache did not start (log in $STACK_LOG)"
lighttpd_url=$PRIVATE_LIGHTTPD_URL apache_url=$PRIVATE_APACHE_URL

AUTH=("${CHAOS_AUTH[@]}")
TUS=(-H 'Tus-Resumable: 1.0.0')
# blobs_of_prefix: the test's blobs in storage, one name a line.
blobs_of_prefix() { az_list | cut -d' ' -f1 | grep "^$PREFIX" | sort; }
# ready_blobs: the blobs the test's ready documents name.
ready_blobs() { sql "SELECT blob_name FROM documents WHERE status = 'ready' AND blob_name LIKE '$PREFIX%' ORDER BY blob_name"; }
rows_named() { sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"; }
post() { # URL NAME FILE TYPE [CURL-ARGS...]
	local url=$1 name=$2 file=$3 type=$4
	shift 4
	req POST "$url/documents?name=$(urlenc "$name")" "${AUTH[@]}" -H "Content-Type: $type" \
		--data-binary "@$file" "$@"
}
b64() { printf '%s' "$1" | base64 -w0; }
tus_upload() { # URL NAME FILE TYPE: sets LOC, HTTP_CODE (the PATCH's)
	local url=$1 name=$2 file=$3 type=$4
	req POST "$url/uploads" "${AUTH[@]}" "${TUS[@]}" -H "Upload-Length: $(stat -c %s "$file")" \
		-H "Upload-Metadata: filename $(b64 "$name"),filetype $(b64 "$type")" -H 'Content-Length: 0'
	LOC=$(header location)
	[ "$HTTP_CODE" = 201 ] || return 0
	req PATCH "$url$LOC" "${AUTH[@]}" "${TUS[@]}" -H 'Upload-Offset: 0' \
		-H 'Content-Type: application/offset+octet-stream' --data-binary "@$file"
}

paths() { # URL LABEL all|some
	local url=$1 s=$2 id before after
	# -- create --
	post "$url" "$NP$s-clean" "$work/clean" application/x-declared
	is "$HTTP_CODE" 201 "$s: create, a clean text file: 201"
	id=$(jfield "$HTTP_BODY" id)
	is "$(jfield "$HTTP_BODY" content_type)" text/plain "$s: ... recorded as text/plain (read from its bytes; declared application/x-declared)"
	before=$(blobs_of_prefix)
	post "$url" "$NP$s-eicar" "$work/eicar" text/plain
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 infected" "$s: create, EICAR: 422 infected"
	is "$(rows_named "$NP$s-eicar")" 0 "$s: ... no row"
	is "$(blobs_of_prefix)" "$before" "$s: ... and no blob left in storage"
	post "$url" "$NP$s-fake" "$work/fake.pdf" application/pdf
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "415 type_not_allowed" \
		"$s: create, HTML declared application/pdf: 415 type_not_allowed"
	is "$(rows_named "$NP$s-fake") $(blobs_of_prefix | wc -l)" "0 $(printf '%s\n' "$before" | grep -c .)" \
		"$s: ... no row, no blob"
	# replace and tus through a second server: under --long (create and
	# direct keep that server's check in every run)
	if [ "$3" = all ]; then
		# -- replace --
		local v0 sha0
		v0=$(sql "SELECT CONCAT(version, ' ', sha256) FROM documents WHERE id = ${id:-0}")
		req PUT "$url/documents/$id/content" "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary "@$work/eicar"
		is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 infected" "$s: replace with EICAR: 422 infected"
		is "$(sql "SELECT CONCAT(version, ' ', sha256) FROM documents WHERE id = ${id:-0}")" "$v0" \
			"$s: ... the document as it was (version and SHA-256)"
		is "$(blobs_of_prefix)" "$before" "$s: ... no new blob left"
		req PUT "$url/documents/$id/content" "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary "@$work/fake.pdf"
		is "$HTTP_CODE" 415 "$s: replace with HTML: 415"
		# -- tus --
		tus_upload "$url" "$NP$s-tus-clean" "$work/clean" application/octet-stream
		is "$HTTP_CODE" 204 "$s: tus, a clean file: the PATCH that finishes it is 204"
		is "$(sql "SELECT CONCAT(status, ' ', content_type) FROM documents WHERE name = '$NP$s-tus-clean'")" \
			'ready text/plain' "$s: ... ready, recorded as text/plain"
		before=$(blobs_of_prefix)
		tus_upload "$url" "$NP$s-tus-eicar" "$work/eicar" text/plain
		is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 infected" "$s: tus, EICAR: the finishing PATCH is 422 infected"
		is "$(rows_named "$NP$s-tus-eicar")" 0 "$s: ... no row"
		is "$(blobs_of_prefix)" "$before" "$s: ... no blob"
		req HEAD "$url$LOC" "${AUTH[@]}" "${TUS[@]}"
		is "$HTTP_CODE" 404 "$s: ... the upload is gone (HEAD 404)"
	fi
	# -- direct --
	direct_create "$url" "$NP$s-direct-eicar" "$(stat -c %s "$work/eicar")" "" "${AUTH[@]}"
	is "$HTTP_CODE" 201 "$s: direct: an intent for EICAR"
	is "$(direct_put "$work/eicar")" 201 "$s: ... the client puts it into storage"
	blob=$(blob_of "$ID")
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${AUTH[@]}"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 infected" "$s: ... finalize: 422 infected"
	blob_exists "$blob"
	is "$?" 1 "$s: ... its blob deleted at once"
	is "$(sql "SELECT status FROM documents WHERE id = ${ID:-0}")" pending \
		"$s: ... its intent stays (its SAS could still create the blob), for the sweeper"
	direct_create "$url" "$NP$s-direct-clean" "$(stat -c %s "$work/clean")" "" "${AUTH[@]}"
	is "$(direct_put "$work/clean")" 201 "$s: direct: a clean file put into storage"
	req POST "$url$FINALIZE" "${NOBODY[@]}" "${AUTH[@]}"
	like "$HTTP_CODE" '^20[01]$' "$s: ... finalize admits it ($HTTP_CODE)"
	is "$(sql "SELECT CONCAT(status, ' ', content_type) FROM documents WHERE id = ${ID:-0}")" \
		'ready text/plain' "$s: ... ready, recorded as text/plain (declared application/x-test)"
}
NOBODY=(-H 'Content-Length: 0')
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
paths "$lighttpd_url" lighttpd all
paths "$apache_url" apache "$([ -n "${BINDERY_TEST_LONG:-}" ] && echo all || echo some)"

# ---- above clamd's shipped sizes (Debian: StreamMaxLength and MaxFileSize 25M) ----
yes 'a line of plain text that is clean and repeated past twenty five mebibytes' | head -c $((26 * 1024 * 1024)) >"$work/bigtext"
post "$lighttpd_url" "${NP}bigtext" "$work/bigtext" text/plain
is "$HTTP_CODE" 201 "$(($(stat -c %s "$work/bigtext") / 1048576)) MiB of text, past clamd's shipped 25M: scanned whole with conf/clamd-bindery.conf, admitted"
rm -f "$work/bigtext"

# ---- clamd stopped, then back: 503, nothing stored, the retry goes through ----
clamd_stop
post "$lighttpd_url" "${NP}down" "$work/clean" text/plain -H 'Idempotency-Key: adm-down'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "503 scan_unavailable" "clamd stopped: create is 503 scan_unavailable"
is "$(header retry-after)" 5 "... with Retry-After"
is "$(rows_named "${NP}down")" 0 "... nothing stored (refused before the first byte went to storage)"
clamd_start "$clamd_dir" include="$top/conf/clamd-bindery.conf" LocalSocketMode=666 || bail_out "clamd did not restart"
post "$lighttpd_url" "${NP}down" "$work/clean" text/plain -H 'Idempotency-Key: adm-down'
is "$HTTP_CODE" 201 "clamd back: the same request with its Idempotency-Key is 201"

# ---- clamd frozen mid-scan: 503 after the timeout, the intent kept for the key's retry ----
kill -STOP "$CLAMD_PID"
t0=$(date +%s.%N)
post "$lighttpd_url" "${NP}frozen" "$work/clean" text/plain -H 'Idempotency-Key: adm-frozen'
t1=$(date +%s.%N)
kill -CONT "$CLAMD_PID"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "503 scan_unavailable" \
	"clamd frozen: 503 scan_unavailable after $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s (timeout 2 s)"
is "$(sql "SELECT status FROM documents WHERE name = '${NP}frozen'")" pending "... its intent stays pending"
frozen_id=$(sql "SELECT id FROM documents WHERE name = '${NP}frozen'")
post "$lighttpd_url" "${NP}frozen" "$work/clean" text/plain -H 'Idempotency-Key: adm-frozen'
is "$HTTP_CODE $(jfield "$HTTP_BODY" id)" "201 $frozen_id" "... the retry with its key resumes it: 201, the same document"
kill -STOP "$CLAMD_PID"
post "$lighttpd_url" "${NP}frozen-nokey" "$work/clean" text/plain
kill -CONT "$CLAMD_PID"
is "$HTTP_CODE $(rows_named "${NP}frozen-nokey")" "503 0" \
	"clamd frozen, no Idempotency-Key: 503, compensated (its retry will not meet its own name)"

# ---- the same configuration's other choices, as CGI ----
cgi() { # CONF NAME FILE TYPE: CODE, BODY
	cgi_run "$work/cgi.out" "$1" POST "/documents?name=$2" "HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN" \
		CONTENT_TYPE="$4" CONTENT_LENGTH="$(stat -c %s "$3")" <"$3"
	CODE=$CGI_CODE BODY=$(cgi_body "$work/cgi.out")
}
export CGI_STDERR=$work/cgi.err
sed 's/^allowed_types = .*/&\ncontent_type = declared/' "$work/adm.conf" >"$work/declared.conf"
cgi "$work/declared.conf" "${NP}declared" "$work/clean" application/x-declared
is "$CODE $(jfield "$BODY" content_type)" "201 application/x-declared" \
	"content_type = declared: the type is checked by its bytes, the declared one recorded"
printf '\n[scan]\nclamd = unix:%s\ntimeout = 2\non_scanner_error = admit\n' "$CLAMD_SOCKET" >"$work/admit.tail"
{ sed '/^\[scan\]$/,$d' "$work/adm.conf"; cat "$work/admit.tail"; } >"$work/admit.conf"
clamd_stop
cgi "$work/admit.conf" "${NP}admitted" "$work/clean" text/plain
is "$CODE" 201 "on_scanner_error = admit, clamd stopped: admitted"
like "$(cat "$work/cgi.err")" 'admitted unscanned \(on_scanner_error = admit\)' "... and the log says so"
# clamd at Debian's sizes (StreamMaxLength 25M): a limit answer, never clean, not even under admit.
clamd_start "$clamd_dir" LocalSocketMode=666 || bail_out "clamd did not restart at its shipped sizes"
yes 'a line of plain text that is clean and repeated past twenty five mebibytes' | head -c $((26 * 1024 * 1024)) >"$work/bigtext"
cgi "$work/admit.conf" "${NP}limit" "$work/bigtext" text/plain
is "$CODE $(jfield "$BODY" error) $(rows_named "${NP}limit")" "503 scan_unavailable 0" \
	"past clamd's StreamMaxLength, under admit: 503, not admitted, nothing kept (a limit is never clean)"
rm -f "$work/bigtext"

# ---- what is left ----
sql "UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE name LIKE '$PREFIX%' AND state = 'pending'"
# (the sweep scoped to the test's prefix: the configured one less its "/",
# and --prefix /)
sed "s|^prefix = $PREFIX\$|prefix = ${PREFIX%/}|" "$work/adm.conf" >"$work/sweep.conf"
"$cli" -c "$work/sweep.conf" sweep --older-than 0 --force --prefix / >"$work/sweep.out" 2>&1
ok $? "a sweep resolves the direct intents left ($(tail -n 1 "$work/sweep.out"))"
is "$(blobs_of_prefix)" "$(ready_blobs)" "in storage: exactly the blobs of the ready documents"
"$cli" -c "$work/adm.conf" audit >"$work/audit.out" 2>&1
is "$?" 0 "bindery audit is clean"
sed 's/^/# /' "$work/audit.out" | tail -n 5
done_testing
