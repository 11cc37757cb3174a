#!/usr/bin/env bash
# The tus concatenation extension at /uploads, with curl, through lighttpd
# (doc/design.md, "Resumable uploads: concatenation"):
#
#   - discovery: Tus-Extension names concatenation;
#   - partial uploads: created without a name (also with their first
#     bytes), PATCHed to their length, which is reported whole at once; HEAD
#     says Upload-Concat: partial; storage holds the partial's blob tagged
#     pending and no document exists;
#   - a final naming three partials (a relative URL, an absolute one) with
#     the name and filetype: 201 once the document is ready, its bytes the
#     file's (SHA-256 of files, never shell strings); HEAD of the final says
#     Upload-Concat: final;... and names the document; PATCH to it is 403;
#     the same final again gets the same answer; the partials' blobs are
#     gone and a consumed partial still answers HEAD as complete;
#   - refusals that write nothing: someone else's partial (404), an
#     incomplete partial, an upload that is no partial, a partial another
#     final claimed (422, and termination of it too), Upload-Length or a
#     malformed URL on a final, a final without a name, a taken name (422
#     name_taken, and the partial stays free for another final), partials
#     that together pass max_upload (413);
#   - a final refused by admission lets its partials go; a DELETE of a
#     partial racing a final's claim (the final keeps it), a
#     claim marking its partials in use, a repeated final holding its
#     partials again before reading them, a final of 64 partials (HEAD
#     names them all);
#   - crash cells, on a responder that reads a failpoints file: after a
#     partial's commit, mid-assembly of the final, after the final's tag
#     flip.  Resumed (the client re-sends the tail, or repeats the final)
#     each ends with the document; abandoned, a sweep past the leases
#     resolves each (the final rolled forward after its flip; everything
#     else gone, staged blocks included; abandoned mid-assembly only under
#     --long, BINDERY_TEST_LONG); an interrupted final terminated
#     (DELETE) lets its partials go to another final.
#
# Last, `bindery audit` of every blob this run made is clean and
# chaos_verify finds every document ready on its committed blob.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
need_stack BINDERY_TEST_TOKEN_OTHER BINDERY_TEST_BIN
sql_session	# one client for the script's queries (tests/lib/db.sh)
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
RUN=tcat$$x$RANDOM
TUS=(-H 'Tus-Resumable: 1.0.0')
AUTH=("${CHAOS_AUTH[@]}" "${TUS[@]}")
OTHER=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN_OTHER" "${TUS[@]}")
STREAM=(-H 'Content-Type: application/offset+octet-stream')
MIB=1048576
STORAGE_PREFIX=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | tail -n 1)

# The whole file and its three parts (lengths not block-aligned).
head -c $((3 * MIB + 12345)) /dev/urandom >"$work/whole"
head -c $((MIB + 5)) "$work/whole" >"$work/part.1"
tail -c +$((MIB + 6)) "$work/whole" | head -c $((MIB - 3)) >"$work/part.2"
tail -c +$((2 * MIB + 3)) "$work/whole" >"$work/part.3"
head -c 100000 "$work/part.3" >"$work/part.3a"
tail -c +100001 "$work/part.3" >"$work/part.3b"
len() { stat -c %s "$1"; }

b64() { printf '%s' "$1" | base64 -w0; }
meta() { printf 'filename %s%s' "$(b64 "$1")" "${2:+,filetype $(b64 "$2")}"; }
# partial LENGTH [CURL-ARGS...]: POST /uploads Upload-Concat: partial; sets LOC.
partial() {
	local n=$1
	shift
	req POST "$url/uploads" "${AUTH[@]}" -H 'Upload-Concat: partial' -H "Upload-Length: $n" "$@"
	LOC=$(header location)
}
# patch LOC OFFSET FILE [CURL-ARGS...]
patch() {
	local loc=$1 off=$2 file=$3
	shift 3
	req PATCH "$url$loc" "${AUTH[@]}" "${STREAM[@]}" -H "Upload-Offset: $off" --data-binary "@$file" "$@"
}
# done_partial FILE: a complete partial of FILE's bytes; prints its LOC.
done_partial() {
	partial "$(len "$1")" -H 'Content-Length: 0'
	patch "$LOC" 0 "$1"
	[ "$HTTP_CODE $(header upload-offset)" = "204 $(len "$1")" ] || echo "partial:$HTTP_CODE"
	echo "$LOC"
}
# final NAME URL... [-- CURL-ARGS...]: POST /uploads Upload-Concat: final.
final() {
	local name=$1 urls=
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do urls+="${urls:+ }$1"; shift; done
	[ "${1:-}" != -- ] || shift
	req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Concat: final;$urls" \
		-H "Upload-Metadata: $(meta "$name" application/x-concat)" -H 'Content-Length: 0' "$@"
}
# final_until_free NAME URL...: the final, again each second while its
# upload is busy (a dead holder's hold lapsing), at most ten times.
final_until_free() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		final "$@"
		[ "$(jfield "$HTTP_BODY" error)" = upload_busy ] || return 0
		sleep 1
	done
}
offset_of() {
	req HEAD "$url$1" "${AUTH[@]}" -I
	[ "$HTTP_CODE" = 204 ] && header upload-offset || echo "none:$HTTP_CODE"
}
blob_of() { sql "SELECT blob_name FROM uploads WHERE id = '${1##*/}'"; }
# stored BLOB: its state tag in Azurite, "uncommitted" for staged blocks only, "none".
stored() { az_list "$1" | awk -v n="$1" '$1 == n { print $3; f = 1 } END { if (!f) print "none" }'; }
content_sha() { curl -s -m 60 "$url/documents/$1/content" | sha; }
BLOBS=()
note() { local b; for b in "$@"; do BLOBS+=("$(blob_of "$b")"); done; }

chaos_snapshot "$work/before"
url=$BINDERY_TEST_LIGHTTPD_URL

# ---- discovery and partial uploads ------------------------------------------
req OPTIONS "$url/uploads"
like "$(header tus-extension)" '(^|,)concatenation(,|$)' "Tus-Extension names concatenation"

partial "$(len "$work/part.1")" -H 'Content-Length: 0'
is "$HTTP_CODE" 201 "a partial upload is created without a name (201)"
p1=$LOC
req HEAD "$url$p1" "${AUTH[@]}" -I
is "$(header upload-concat) $(header upload-offset) $(header upload-length)" \
	"partial 0 $(len "$work/part.1")" "... HEAD says Upload-Concat: partial, offset 0, its length"
patch "$p1" 0 "$work/part.1"
is "$HTTP_CODE $(header upload-offset)" "204 $(len "$work/part.1")" \
	"a partial's PATCH that reaches its length reports the whole offset"
is "$(offset_of "$p1")" "$(len "$work/part.1")" "... and so does HEAD"
is "$(stored "$(blob_of "$p1")")" pending "... its blob is committed, tagged pending"
is "$(sql "SELECT CONCAT(b.purpose, ' ', b.state, ' ', b.document_id) FROM blobs b JOIN uploads u
	ON u.blob_name = b.name WHERE u.id = '${p1##*/}'")" "partial pending 0" \
	"... its registry row is a pending partial with no document"

partial "$(len "$work/part.2")" "${STREAM[@]}" --data-binary "@$work/part.2"
is "$HTTP_CODE $(header upload-offset)" "201 $(len "$work/part.2")" \
	"a partial created with all its bytes (creation-with-upload) is complete at once"
p2=$LOC
partial "$(len "$work/part.3")" -H 'Content-Length: 0'
p3=$LOC
patch "$p3" 0 "$work/part.3a"
patch "$p3" 100000 "$work/part.3b"
is "$HTTP_CODE $(header upload-offset)" "204 $(len "$work/part.3")" "a partial in two PATCHes completes"
note "$p1" "$p2" "$p3"

# ---- refusals that write nothing ----------------------------------------------
partial 1000 -H 'Content-Length: 0'
half=$LOC
head -c 500 "$work/part.1" >"$work/half"
patch "$half" 0 "$work/half"
final "$RUN-r1" "$p1" "$half"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 partial_incomplete" "a final naming an incomplete partial is 400"
req POST "$url/uploads" "${OTHER[@]}" -H 'Upload-Concat: partial' -H 'Upload-Length: 4' -H 'Content-Length: 0'
theirs=$(header location)
head -c 4 "$work/half" >"$work/four"
req PATCH "$url$theirs" "${OTHER[@]}" "${STREAM[@]}" -H 'Upload-Offset: 0' --data-binary "@$work/four"
is "$HTTP_CODE $(header upload-offset)" "204 4" "(another owner's partial is complete)"
final "$RUN-r2" "$p1" "$theirs"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "404 not_found" "a final naming someone else's partial is 404"
req POST "$url/uploads" "${AUTH[@]}" -H 'Upload-Length: 10' -H 'Content-Length: 0' \
	-H "Upload-Metadata: $(meta "$RUN-plain")"
plain=$(header location)
final "$RUN-r3" "$p1" "$plain"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 not_partial" "a final naming an upload that is no partial is 400"
final "$RUN-r4" "$p1" -- -H 'Upload-Length: 10'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_concat" "a final with Upload-Length is 400"
final "$RUN-r5" "$p1" /documents/1
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_concat" "a final naming no upload URL is 400"
req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Concat: final;$p1" -H 'Content-Length: 0'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 missing_name" "a final without a filename is 400"
req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Concat: whole" -H 'Upload-Length: 1' -H 'Content-Length: 0'
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_concat" "an Upload-Concat of neither kind is 400"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$RUN-r%'") $(sql "SELECT COUNT(*)
	FROM uploads WHERE id IN ('${p1##*/}', '${p2##*/}', '${p3##*/}') AND final_id IS NOT NULL")" "0 0" \
	"... none of them wrote a document or claimed a partial"

# ---- the final ---------------------------------------------------------------
final "$RUN-whole" "$p1" "$url$p2" "$p3"
is "$HTTP_CODE" 201 "a final of three partials (relative and absolute URLs) is 201"
fin=$(header location)
like "$fin" '/uploads/[0-9a-f]{32}$' "... Location is the final upload's"
note "$fin"
req HEAD "$url$fin" "${AUTH[@]}" -I
is "$(header upload-concat)" "final;$p1 $p2 $p3" "HEAD of the final: Upload-Concat: final; and its partials"
is "$(header upload-offset) $(header upload-length)" "$(len "$work/whole") $(len "$work/whole")" \
	"... whole: offset and length the file's"
doc=$(header location)
like "$doc" '/documents/[0-9]+$' "... and it names the document"
id=${doc##*/}
is "$(content_sha "$id")" "$(sha "$work/whole")" "the document's bytes are the file's"
req GET "$url/documents/$id"
is "$(jfield "$HTTP_BODY" sha256) $(jfield "$HTTP_BODY" size) $(jfield "$HTTP_BODY" content_type)" \
	"$(sha "$work/whole") $(len "$work/whole") application/x-concat" "... its sha256, size and filetype"
patch "$fin" 0 "$work/four"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "403 final_upload" "a PATCH to a final upload is 403"
final "$RUN-whole" "$p1" "$url$p2" "$p3"
is "$HTTP_CODE $(header location)" "201 $fin" "the same final again gets the same answer"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$RUN-whole'")" 1 "... and no second document"
is "$(stored "$(blob_of "$p1")") $(stored "$(blob_of "$p2")") $(stored "$(blob_of "$p3")")" "none none none" \
	"the partials' blobs are gone once the document is ready"
req HEAD "$url$p2" "${AUTH[@]}" -I
is "$HTTP_CODE $(header upload-offset) $(header upload-concat)" "204 $(len "$work/part.2") partial" \
	"a consumed partial still answers HEAD as complete"
final "$RUN-again" "$p1"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 partial_claimed" "a partial another final claimed is 422"
final "$RUN-whole" "$p2" "$p1" "$p3"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 partial_claimed" "... so are the same partials in another order"
req DELETE "$url$p3" "${AUTH[@]}"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 partial_claimed" "... and terminating a claimed partial"

r1=$(done_partial "$work/part.2")
note "$r1"
final "$RUN-whole" "$r1"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "422 name_taken" "a final with a taken name is 422 name_taken"
is "$(sql "SELECT COALESCE(final_id, 'free') FROM uploads WHERE id = '${r1##*/}'")" free \
	"... its partial stays unclaimed"
final "$RUN-single" "$r1"
is "$HTTP_CODE" 201 "... and another final takes it (a final of one partial)"
single=$(header location)
note "$single"
req HEAD "$url$single" "${AUTH[@]}" -I
doc=$(header location)
is "$(content_sha "${doc##*/}")" "$(sha "$work/part.2")" "... bytes identical"

# Partials that together pass max_upload: 413 before anything is copied,
# in words about the partials (not a PATCH's).  The code is the same under
# any limit, so these requests go to bindery.fcgi as a CGI program with
# max_upload = 1M (the lane's 64M would cost 64 MiB of uploads).
sed 's/^max_upload = .*/max_upload = 1M/' "$BINDERY_CONFIG" >"$work/small.conf"
head -c $((MIB / 2 + 1)) /dev/urandom >"$work/over"
cgi_auth=("HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN" HTTP_TUS_RESUMABLE=1.0.0)
# cgi_partial: a complete partial of $work/over under small.conf; prints its path.
cgi_partial() {
	local loc
	cgi_run "$work/o.out" "$work/small.conf" POST /uploads "${cgi_auth[@]}" HTTP_UPLOAD_CONCAT=partial \
		HTTP_UPLOAD_LENGTH="$(len "$work/over")" CONTENT_LENGTH=0 </dev/null
	loc=$(tr -d '\r' <"$work/o.out" | sed -n 's|^Location: .*\(/uploads/[0-9a-f]*\)$|\1|p')
	cgi_run "$work/o.out" "$work/small.conf" PATCH "$loc" "${cgi_auth[@]}" HTTP_UPLOAD_OFFSET=0 \
		CONTENT_TYPE=application/offset+octet-stream CONTENT_LENGTH="$(len "$work/over")" <"$work/over"
	[ "$CGI_CODE" = 204 ] || echo "partial:$CGI_CODE"
	echo "$loc"
}
o1=$(cgi_partial) o2=$(cgi_partial)
like "$o1 $o2" '^/uploads/[0-9a-f]{32} /uploads/[0-9a-f]{32}$' "two complete partials of 512 KiB + 1 under a 1 MiB limit"
# cgi_final CONFIG NAME PATH...: a final through bindery.fcgi as a CGI
# program under CONFIG; its answer in $work/o.out.
cgi_final() {
	local conf=$1 name=$2
	shift 2
	cgi_run "$work/o.out" "$conf" POST /uploads "${cgi_auth[@]}" HTTP_UPLOAD_CONCAT="final;$*" \
		HTTP_UPLOAD_METADATA="$(meta "$name")" CONTENT_LENGTH=0 </dev/null
}
# left_by NAME PATH1 PATH2: the documents named NAME, and how many of the
# two partials a final claims.
left_by() {
	echo "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$1'") $(sql "SELECT COUNT(*)
		FROM uploads WHERE id IN ('${2##*/}', '${3##*/}') AND final_id IS NOT NULL")"
}
# terminate_both PATH1 PATH2: what the DELETE of each answers.
terminate_both() {
	local code1
	req DELETE "$url$1" "${AUTH[@]}"
	code1=$HTTP_CODE
	req DELETE "$url$2" "${AUTH[@]}"
	echo "$code1 $HTTP_CODE"
}
cgi_final "$work/small.conf" "$RUN-over" "$o1" "$o2"
is "$CGI_CODE $(jfield "$(cgi_body "$work/o.out")" error)" "413 too_large" \
	"a final whose partials together pass max_upload is 413"
like "$(jfield "$(cgi_body "$work/o.out")" message)" 'partial uploads together' "... saying so about the partials"
is "$(left_by "$RUN-over" "$o1" "$o2")" "0 0" "... no document, neither partial claimed"
is "$(terminate_both "$o1" "$o2")" "204 204" "... and both are terminated like any upload"

# A final whose bytes admission refuses ([upload] allowed_types; random
# bytes sniff as application/octet-stream) is dropped, and lets its
# partials go: their owner can terminate them at once.
sed '/^\[upload\]/a allowed_types = application/pdf' "$BINDERY_CONFIG" >"$work/pdf.conf"
q1=$(done_partial "$work/part.1") q2=$(done_partial "$work/part.2")
note "$q1" "$q2"
cgi_final "$work/pdf.conf" "$RUN-refused" "$q1" "$q2"
is "$CGI_CODE $(jfield "$(cgi_body "$work/o.out")" error)" "415 type_not_allowed" \
	"a final whose bytes admission refuses is 415 type_not_allowed"
is "$(left_by "$RUN-refused" "$q1" "$q2")" "0 0" "... no document, and its partials are nobody's again"
is "$(terminate_both "$q1" "$q2")" "204 204" "... so their owner can terminate them"

# The refusals' leftovers go the way every upload goes.
req DELETE "$url$half" "${AUTH[@]}"
is "$HTTP_CODE" 204 "an unclaimed partial is terminated like any upload"
req DELETE "$url$theirs" "${OTHER[@]}"
req DELETE "$url$plain" "${AUTH[@]}"

# ---- crash cells ------------------------------------------------------------
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
url=$CHAOS_URL
# swept_away BLOB...: no registry row, no upload row, nothing in storage.
swept_away() {
	local b n=0
	for b in "$@"; do
		n=$((n + $(sql "SELECT (SELECT COUNT(*) FROM blobs WHERE name = '$b') +
			(SELECT COUNT(*) FROM uploads WHERE blob_name = '$b')")))
		[ "$(stored "$b")" = none ] || n=$((n + 1))
	done
	echo "$n"
}
expire() { local b; for b in "$@"; do sql "UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE name = '$b'"; done; }

# After a partial's commit, before its ETag is recorded.
for how in resumed abandoned; do
	partial "$(len "$work/part.1")" -H 'Content-Length: 0'
	c=$LOC
	note "$c"
	printf 'tus.partial_after_commit exit once\n' >"$FP"
	patch "$c" 0 "$work/part.1"
	like "$HTTP_CODE" '^(5..|000)$' "partial_after_commit ($how): the PATCH dies with the responder"
	: >"$FP"
	is "$(stored "$(blob_of "$c")")" pending "partial_after_commit ($how): its blob is committed, tagged pending"
	off=$(offset_of "$c")
	ok '[ "$off" -lt '"$(len "$work/part.1")"' ] 2>/dev/null' \
		"partial_after_commit ($how): HEAD holds the last block back ($off)"
	if [ $how = resumed ]; then
		tail -c +$((off + 1)) "$work/part.1" >"$work/tail"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			patch "$c" "$off" "$work/tail"
			[ "$(jfield "$HTTP_BODY" error)" = upload_busy ] || break
			sleep 1
		done
		is "$HTTP_CODE $(header upload-offset)" "204 $(len "$work/part.1")" \
			"partial_after_commit (resumed): re-sending the tail completes the partial"
		c2=$(done_partial "$work/part.2")
		note "$c2"
		final "$RUN-crash-partial" "$c" "$c2"
		is "$HTTP_CODE" 201 "partial_after_commit (resumed): ... and a final of it is 201"
		req HEAD "$url$(header location)" "${AUTH[@]}" -I
		doc=$(header location)
		cat "$work/part.1" "$work/part.2" >"$work/p12"
		is "$(content_sha "${doc##*/}")" "$(sha "$work/p12")" "partial_after_commit (resumed): ... bytes identical"
	else
		cb=$(blob_of "$c")
		chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
		is "$SWEEP_RC $(swept_away "$cb")" "0 0" \
			"partial_after_commit (abandoned): a sweep past its lease leaves nothing of it"
	fi
done

# Mid-assembly of the final, and after the final's tag flip.
for point in tus.concat_mid_assembly tus.after_flip; do
	# Abandoned mid-assembly, a sweep leaves nothing (the state the partial's
	# abandoned cell above shows): under --long (BINDERY_TEST_LONG).
	hows=resumed
	[ $point = tus.after_flip ] || [ -n "${BINDERY_TEST_LONG:-}" ] && hows+=' abandoned'
	[ $point = tus.after_flip ] || hows+=' terminated'
	for how in $hows; do
		a=$(done_partial "$work/part.1")
		b=$(done_partial "$work/part.2")
		note "$a" "$b"
		name=$RUN-${point#tus.}-$how
		printf '%s exit once\n' "$point" >"$FP"
		final "$name" "$a" "$b"
		like "$HTTP_CODE" '^(5..|000)$' "$point ($how): the final dies with the responder"
		: >"$FP"
		fb=$(sql "SELECT blob_name FROM documents WHERE name = '$name'")
		BLOBS+=("$fb")
		is "$(sql "SELECT status FROM documents WHERE name = '$name'")" pending \
			"$point ($how): its document is pending"
		if [ $how = terminated ]; then
			floc=/uploads/$(sql "SELECT u.id FROM uploads u JOIN documents d ON d.id = u.document_id
				WHERE d.name = '$name'")
			for i in 1 2 3 4 5 6 7 8 9 10; do
				req DELETE "$url$floc" "${AUTH[@]}"
				[ "$(jfield "$HTTP_BODY" error)" = upload_busy ] || break
				sleep 1
			done
			is "$HTTP_CODE $(swept_away "$fb")" "204 0" \
				"$point (terminated): DELETE of the final drops it, staged blocks included"
			final "$name-again" "$a" "$b"
			is "$HTTP_CODE" 201 "$point (terminated): ... and its partials are free for another final"
			req HEAD "$url$(header location)" "${AUTH[@]}" -I
			doc=$(header location)
			is "$(content_sha "${doc##*/}")" "$(sha "$work/p12")" "$point (terminated): ... bytes identical"
		elif [ $how = resumed ]; then
			final_until_free "$name" "$a" "$b"
			is "$HTTP_CODE" 201 "$point (resumed): the same final again finishes it"
			req HEAD "$url$(header location)" "${AUTH[@]}" -I
			doc=$(header location)
			is "$(content_sha "${doc##*/}")" "$(sha "$work/p12")" "$point (resumed): ... bytes identical"
			is "$(stored "$(blob_of "$a")") $(stored "$(blob_of "$b")")" "none none" \
				"$point (resumed): ... and the partials' blobs are gone"
		else
			ab=$(blob_of "$a") bb=$(blob_of "$b")
			chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
			is "$SWEEP_RC" 0 "$point (abandoned): a sweep past the leases succeeds"
			if [ $point = tus.after_flip ]; then
				is "$(sql "SELECT CONCAT(status, ' ', sha256) FROM documents WHERE name = '$name'")" \
					"ready $(sha "$work/p12")" "$point (abandoned): the final rolled forward, its SHA-256 the file's"
				is "$(swept_away "$ab" "$bb")" 0 "$point (abandoned): ... its partials gone"
			else
				is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$name'") $(swept_away "$fb" "$ab" "$bb")" \
					"0 0" "$point (abandoned): nothing left of the final or its partials, staged blocks included"
			fi
		fi
	done
done

# ---- a final beside a DELETE, the sweeper and many partials ------------------
# A DELETE of a partial that reads it unclaimed, then waits (a failpoint)
# while a final claims it and waits in turn: under its hold the DELETE
# reads the partial again and refuses; the final is not robbed of it.
rp=$(done_partial "$work/part.2")
note "$rp"
printf 'tus.terminate_before_take sleep:3000 once\ntus.concat_after_claim sleep:4000 once\n' >"$FP"
curl -s -o "$work/del.out" -w '%{http_code}' -X DELETE "${AUTH[@]}" "$url$rp" >"$work/del.code" &
del_pid=$!
sleep 1
final "$RUN-race" "$rp"
final_code=$HTTP_CODE final_loc=$(header location)
wait "$del_pid"
: >"$FP"
is "$(cat "$work/del.code") $(jfield "$(cat "$work/del.out")" error)" "422 partial_claimed" \
	"a DELETE of a partial that a final claims while it waits is refused (422 partial_claimed)"
is "$final_code" 201 "... and the final finishes"
req HEAD "$url$final_loc" "${AUTH[@]}" -I
doc=$(header location)
is "$(content_sha "${doc##*/}")" "$(sha "$work/part.2")" "... its bytes the partial's"

# A final holds its partials as in use (touched_at), so that `sweep
# --older-than` does not take them while it reads and copies them.  The
# partials here look as a PATCH that died after recording them complete
# leaves them, held by a holder silent for an hour: no obstacle to a final.
ta=$(done_partial "$work/part.1") tb=$(done_partial "$work/part.2")
note "$ta" "$tb"
sql "UPDATE blobs b JOIN uploads u ON u.blob_name = b.name SET b.touched_at = NOW(6) - INTERVAL 1 HOUR,
	b.holder = 'a-patch-that-died' WHERE u.id IN ('${ta##*/}', '${tb##*/}')"
printf 'tus.concat_after_claim error once\n' >"$FP"
final "$RUN-held" "$ta" "$tb"
: >"$FP"
is "$HTTP_CODE" 503 "a final of partials whose holder died, stopped right after its claim, answers 503"
is "$(sql "SELECT COUNT(*) FROM blobs b JOIN uploads u ON u.blob_name = b.name WHERE u.id IN
	('${ta##*/}', '${tb##*/}') AND u.final_id IS NOT NULL AND b.touched_at > NOW(6) - INTERVAL 10 MINUTE")" 2 \
	"... its claim marked both partials in use (touched_at now, not an hour ago)"
final_until_free "$RUN-held" "$ta" "$tb"
is "$HTTP_CODE" 201 "... and the same final again finishes it"

# A repeated final holds its partials again before it reads them: their
# leases may have run out while the client was away.
ra=$(done_partial "$work/part.1") rb=$(done_partial "$work/part.2")
note "$ra" "$rb"
printf 'tus.concat_after_claim error once\n' >"$FP"
final "$RUN-late" "$ra" "$rb"
: >"$FP"
sql "UPDATE blobs b JOIN uploads u ON u.blob_name = b.name SET b.expires_at = NOW(6) - INTERVAL 1 SECOND
	WHERE u.id IN ('${ra##*/}', '${rb##*/}')"
printf 'tus.concat_mid_assembly error once\n' >"$FP"
final_until_free "$RUN-late" "$ra" "$rb"
: >"$FP"
is "$HTTP_CODE $(sql "SELECT COUNT(*) FROM blobs b JOIN uploads u ON u.blob_name = b.name WHERE u.id IN
	('${ra##*/}', '${rb##*/}') AND b.expires_at > NOW(6)")" "503 2" \
	"a final repeated after its partials' leases ran out holds them again before reading them"
final_until_free "$RUN-late" "$ra" "$rb"
is "$HTTP_CODE" 201 "... and, repeated once more, finishes"

# The most partials a final may name (64): 201, and HEAD of the final
# names every one of them in Upload-Concat.
head -c 64000 /dev/urandom >"$work/many"
split -b 1000 -d -a 2 "$work/many" "$work/many."
many=() made=
for f in "$work"/many.[0-9][0-9]; do	# each created with its bytes: one request
	partial "$(len "$f")" "${STREAM[@]}" --data-binary "@$f"
	made+=" $HTTP_CODE"
	many+=("$LOC")
done
is "$made" "$(printf ' 201%.0s' {1..64})" "64 partials, each created complete with its bytes"
note "${many[@]}"
final "$RUN-many" "${many[@]}"
is "$HTTP_CODE" 201 "a final of 64 partials is created (201)"
req HEAD "$url$(header location)" "${AUTH[@]}" -I
is "$HTTP_CODE" 204 "... HEAD of it answers 204"
concat=$(header upload-concat)
is "$(printf '%s' "${concat#final;}" | tr ' ' '\n' | sed 's|^.*/uploads/|/uploads/|' | paste -sd' ')" "${many[*]}" \
	"... its Upload-Concat names all 64 partials, in order"
doc=$(header location)
is "$(content_sha "${doc##*/}")" "$(sha "$work/many")" "... its bytes the 64 parts in order"

# ---- nothing broken or orphaned ---------------------------------------------
bad=
for b in "${BLOBS[@]}"; do
	[ -n "$b" ] || continue
	"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" audit --prefix "${b#"$STORAGE_PREFIX"}" >"$work/audit.out" 2>&1 ||
		bad+="$b: $(head -n 2 "$work/audit.out" | tr '\n' ' ') "
done
is "$bad" "" "bindery audit of every blob this run made is clean (${#BLOBS[@]} blobs)"
is "$(chaos_verify "$RUN" "$work/before" | head -n 5)" "" \
	"every document of this run is ready on a committed blob with its bytes; no orphan"
done_testing
