#!/usr/bin/env bash
# Crash matrix for resumable uploads: a responder killed
# (_exit(137), as kill -9 leaves things) after each tus step, through lighttpd:
#
#   tus.after_create       the upload's rows are committed, nothing staged
#   tus.mid_patch          a PATCH recorded its first blocks, more were coming
#   tus.after_last_block   every block recorded, nothing committed
#   tus.after_commit       the block list committed, tagged pending
#   tus.after_flip         the tag flipped to committed, the row not yet ready
#
# Each cell twice (the mid-PATCH one with 24 MiB, the others with 9 MiB:
# see use_file), but for the abandoned tus.after_last_block (under --long,
# BINDERY_TEST_LONG: its state, staged blocks and no committed blob, is the
# abandoned tus.mid_patch's, which the same sweep purges).  Resumed: the client comes back (HEAD, then PATCH from the
# offset it is told) and the document ends ready with the file's bytes.
# Abandoned: nobody comes back; a plain `bindery sweep` leaves the upload
# alone (its lease, Upload-Expires, has not passed), a sweep past the lease
# (--older-than 0 --force) resolves it: nothing left in MariaDB or Azurite,
# staged blocks purged; after the flip it rolls forward instead (the blob's
# metadata carries size and SHA-256).  chaos_verify checks the invariants
# by looking at MariaDB and Azurite directly.
#
# No time travel: a killed PATCH lets go of its upload as soon as its
# database session is gone (sql/014), not after heartbeat + request_deadline
# (330 s here), so the resumed cells resume at once; a busy answer, should
# MariaDB not yet have noticed the dead session, is retried each second for
# at most 10 s.  Then (under --long) one cell again under a private Apache
# mod_fcgid whose responders read a failpoints file of this test's own.
#
# Last, the fenced late writer, through a lighttpd of our own whose
# responders read heartbeat = 1 and request_deadline = 3 (a live but silent
# holder keeps the upload 4 s) and a failpoints file of the test's own: a
# PATCH that recorded its first blocks sleeps 15 s; a PATCH 2 s into its
# silence hears 409 upload_busy with a Retry-After no longer than what is
# left of the 4 s; another client takes the upload over once they have
# passed and finishes it; the sleeper, awake, answers 5xx and records
# nothing more, and the finished document's committed block list holds only
# the blocks it recorded before the takeover.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"

chaos_need_stack
need_stack BINDERY_TEST_BIN
sql_session	# one client for the script's queries (tests/lib/db.sh)
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	stack_private_apache_stop
	stack_private_lighttpd_stop 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
RUN=tc$$x$RANDOM
AUTH=("${CHAOS_AUTH[@]}" -H 'Tus-Resumable: 1.0.0')
STREAM=(-H 'Content-Type: application/offset+octet-stream')
MIB=1048576
# 24 MiB in one PATCH: with the stack's block_size 4M and 4 blocks in
# flight, the body cannot all be read before storage accepted the PATCH's
# first two blocks (only four fit in memory), so the mid-PATCH record comes
# while more is to come, as the mid_patch cell needs.  The other cells'
# states need several blocks, not that many: they upload 9 MiB (blocks of
# 4, 4 and 1 MiB), which is a third of the bytes through every service.
head -c $((24 * MIB)) /dev/urandom >"$work/file.24"
head -c $((9 * MIB)) "$work/file.24" >"$work/file.9"
# use_file MIB: the cells from here on upload $work/file, MIB MiB ($LEN bytes).
use_file() {
	LEN=$(($1 * MIB))
	ln -sfn "file.$1" "$work/file"
}
use_file 24
chaos_snapshot "$work/before"
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
url=$CHAOS_URL

# create NAME: POST /uploads; sets LOC, UPLOAD (its id) and BLOB.
create() {
	req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Length: $LEN" -H 'Content-Length: 0' \
		-H "Upload-Metadata: filename $(printf %s "$1" | base64 -w0)"
	LOC=$(header location)
	UPLOAD=${LOC##*/}
	BLOB=$(sql "SELECT blob_name FROM documents WHERE name = '$1'")
}
# patch_from OFFSET: PATCH the file's bytes from OFFSET to the end.
patch_from() {
	tail -c +$(($1 + 1)) "$work/file" >"$work/rest"
	req PATCH "$url$LOC" "${AUTH[@]}" "${STREAM[@]}" -H "Upload-Offset: $1" --data-binary "@$work/rest"
}
head_offset() {
	req HEAD "$url$LOC" "${AUTH[@]}" -I
	[ "$HTTP_CODE" = 204 ] && header upload-offset || echo "none:$HTTP_CODE"
}
# crash_at POINT NAME: a new upload NAME whose responder dies at POINT.
crash_at() {
	local point=$1 name=$2
	if [ "$point" = tus.after_create ]; then
		printf '%s exit once\n' "$point" >"$FP"
		create "$name"
		LOC= UPLOAD=$(sql "SELECT u.id FROM uploads u JOIN documents d ON d.id = u.document_id
			WHERE d.name = '$name'")
		BLOB=$(sql "SELECT blob_name FROM documents WHERE name = '$name'")
		[ -n "$UPLOAD" ] && LOC=/uploads/$UPLOAD
		return
	fi
	create "$name"
	printf '%s exit once\n' "$point" >"$FP"
	patch_from 0
}
state() { sql "SELECT COALESCE((SELECT state FROM blobs WHERE name = '$BLOB'), 'gone')"; }
# resume_from OFFSET: patch_from, again each second while the upload is
# busy, for 10 s at most; BUSY counts the busy answers.
resume_from() {
	local i
	BUSY=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		patch_from "$1"
		[ "$HTTP_CODE" = 409 ] && [ "$(jfield "$HTTP_BODY" error)" = upload_busy ] || return 0
		BUSY=$((BUSY + 1))
		sleep 1
	done
}

for point in tus.after_create tus.mid_patch tus.after_last_block tus.after_commit tus.after_flip; do
	if [ $point = tus.mid_patch ]; then use_file 24; else use_file 9; fi
	# ---- resumed ----
	name=$RUN-${point#tus.}-resumed
	crash_at "$point" "$name"
	like "$HTTP_CODE" '^(5..|000)$' "$point: the request dies with the responder ($HTTP_CODE)"
	: >"$FP"
	is "$(state)" pending "$point: the upload's registry row is pending"
	"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" sweep >>"$work/sweep.log" 2>&1
	is "$(state)" pending "$point: a plain sweep leaves it (its lease has not passed)"
	off=$(head_offset)
	like "$off" '^[0-9]+$' "$point: HEAD answers an offset ($off)"
	if [ "$point" = tus.mid_patch ]; then
		ok '[ "${off:-0}" -gt 0 ] 2>/dev/null && [ "$off" -lt $((LEN / 2)) ]' \
			"$point: ... part-way, from a record made while the body was still coming"
	fi
	resume_from "$off"
	is "$HTTP_CODE $(header upload-offset)" "204 $LEN" \
		"$point: the client resumes from $off at once and finishes ($BUSY s busy, the window is 330 s)"
	doc=$(header location)
	is "$(curl -s -m 60 "$url$doc/content" | sha)" "$(sha "$work/file")" "$point: ... bytes identical"

	# ---- abandoned ----
	# At after_last_block the sweep finds what it finds at mid_patch
	# (blocks staged, none committed) and purges them the same way.
	[ $point = tus.after_last_block ] && [ -z "${BINDERY_TEST_LONG:-}" ] && continue
	name=$RUN-${point#tus.}-abandoned
	crash_at "$point" "$name"
	: >"$FP"
	"$CHAOS_BIN/bindery" -c "$BINDERY_CONFIG" sweep >>"$work/sweep.log" 2>&1
	is "$(state)" pending "$point (abandoned): a plain sweep leaves it"
	chaos_sweep "$BINDERY_CONFIG" "$work/sweep.log"
	is "$SWEEP_RC" 0 "$point (abandoned): a sweep past its lease succeeds"
	if [ "$point" = tus.after_flip ]; then
		is "$(sql "SELECT CONCAT(status, ' ', sha256) FROM documents WHERE name = '$name'")" \
			"ready $(sha "$work/file")" "$point (abandoned): rolled forward, with the file's SHA-256"
	else
		is "$(sql "SELECT (SELECT COUNT(*) FROM documents WHERE name = '$name') +
			(SELECT COUNT(*) FROM blobs WHERE name = '$BLOB') +
			(SELECT COUNT(*) FROM uploads WHERE blob_name = '$BLOB')")" 0 \
			"$point (abandoned): no document, registry row or upload row left"
		is "$(az_list "$BLOB" | awk -v n="$BLOB" '$1 == n' | wc -l)" 0 \
			"$point (abandoned): nothing in storage, staged blocks included"
	fi
done

# ---- the same under Apache mod_fcgid (a private one: the test stack's
# Apache responders read no failpoints file) ----
# A further server's repeat: under --long (BINDERY_TEST_LONG); tus through
# Apache mod_fcgid stays in every run in tus_webserver.sh and tus_client.sh.
if [ -n "${BINDERY_TEST_LONG:-}" ]; then
	stack_private_apache "$BINDERY_TEST_VAR/tus-crash-apache" "$BINDERY_CONFIG" 18420 apache-tus-crash ||
		bail_out "no private Apache"
	apache_conf=$STACK_PRIVATE_APACHE_CONF
	# www-data's own directory: a failpoint fired once rewrites the file there.
	fpdir=$STACK_PRIVATE_APACHE_WWW/failpoints.d
	mkdir -p "$fpdir" && chown www-data "$fpdir" && : >"$fpdir/failpoints" && chmod 0666 "$fpdir/failpoints"
	printf 'FcgidInitialEnv BINDERY_FAILPOINTS_FILE %s\n' "$fpdir/failpoints" >>"$apache_conf"
	grep -q "^FcgidInitialEnv BINDERY_FAILPOINTS_FILE $fpdir/failpoints\$" "$apache_conf" ||
		bail_out "the private Apache's failpoints line did not take"
	stack_apache_start "$apache_conf" || bail_out "the private Apache did not start (log in $STACK_LOG)"
	url=http://127.0.0.1:$APACHE_PORT
	use_file 24
	name=$RUN-apache-mid_patch
	create "$name"
	printf 'tus.mid_patch exit once\n' >"$fpdir/failpoints"
	patch_from 0
	like "$HTTP_CODE" '^(5..|000)$' "apache: tus.mid_patch: the request dies with the responder ($HTTP_CODE)"
	: >"$fpdir/failpoints"
	off=$(head_offset)
	like "$off" '^[0-9]+$' "apache: tus.mid_patch: HEAD answers an offset ($off)"
	resume_from "$off"
	is "$HTTP_CODE $(header upload-offset)" "204 $LEN" \
		"apache: tus.mid_patch: the client resumes from $off at once and finishes ($BUSY s busy)"
	is "$(curl -s -m 60 "$url$(header location)/content" | sha)" "$(sha "$work/file")" "apache: ... bytes identical"
fi

# ---- the fenced late writer ----
# Bounds, said so: a silent live holder keeps the upload heartbeat +
# request_deadline = 4 s here; the takeover is due 4-5 s into the sleeper's
# 15 s, and FENCE_BOUND (10 s from 2 s into the silence) leaves the client
# room for HEADs, 409s and a 2 MiB PATCH on a busy machine while the
# sleeper still sleeps.  (The sleep was 20 s on a 6 s window: the same
# margins, 5 s less of a default run.)
FENCE_BOUND=10
FLEN=$((12 * MIB))
head -c $FLEN /dev/urandom >"$work/fence"
ffp=$BINDERY_TEST_VAR/tus-crash-fence.failpoints
: >"$ffp" && chmod 0666 "$ffp" || bail_out "cannot create $ffp"
stack_test_conf "$work/fence.conf" "$RUN-fence-" '[limits]' 'heartbeat = 1' 'request_deadline = 3' \
	'body_idle_timeout = 10' 'sweep_cutoff = 300' 'block_size = 1M' ||
	bail_out "the fence test's configuration does not load"
BINDERY_FAILPOINTS_FILE=$ffp stack_private_lighttpd "$BINDERY_TEST_VAR/tus-crash-fence" lighttpd.conf \
	"$work/fence.conf" "$BINDERY_TEST_BIN" 18440 || bail_out "the fence test's lighttpd did not start"
url=http://127.0.0.1:$HTTP_PORT
wait_for 10 eval '[ "$(curl -s -o /dev/null -m 5 -w "%{http_code}" "$url/healthz")" = 200 ]' ||
	bail_out "the fence test's lighttpd does not answer"

# fpatch OFFSET [BYTES]: PATCH BYTES of the fence file from OFFSET (else the rest).
fpatch() {
	local part=$work/part.$BASHPID
	if [ -n "${2:-}" ]; then
		tail -c +$(($1 + 1)) "$work/fence" | head -c "$2" >"$part"
	else
		tail -c +$(($1 + 1)) "$work/fence" >"$part"
	fi
	req PATCH "$url$LOC" "${AUTH[@]}" "${STREAM[@]}" -H "Upload-Offset: $1" --data-binary "@$part"
}
# follow DEADLINE [BYTES]: what a client does after a failed PATCH: HEAD,
# PATCH from the offset it is told, and after 409 upload_busy the same once
# Retry-After has passed, until another answer or DEADLINE (epoch seconds).
follow() {
	local off ra now
	BUSY=0
	while :; do
		off=$(head_offset)
		case $off in none:*) HTTP_CODE=$off; return ;; esac
		fpatch "$off" "${2:-}"
		[ "$HTTP_CODE $(jfield "$HTTP_BODY" error)" = "409 upload_busy" ] || return 0
		BUSY=$((BUSY + 1))
		now=$(date +%s)
		[ "$now" -lt "$1" ] || return 0
		ra=$(header retry-after)
		[[ $ra =~ ^[0-9]+$ ]] || ra=1
		[ "$ra" -le $(($1 - now)) ] || ra=$(($1 - now))	# one last try at DEADLINE
		sleep "$ra"
	done
}
# az_committed BLOB: the committed block ids, one a line.
az_committed() {
	az_curl GET "$1" 'blocklisttype=committed&comp=blocklist' '\nblocklisttype:committed\ncomp:blocklist' |
		tr -d '\r\n' | sed -n 's|.*<CommittedBlocks>\(.*\)</CommittedBlocks>.*|\1|p' |
		grep -o '<Name>[^<]*</Name>' | sed -e 's/<[^>]*>//g'
}
# with_prefix PREFIX: how many lines of stdin start with PREFIX (no regex).
with_prefix() { awk -v p="$1" 'substr($0, 1, length(p)) == p' | wc -l; }
# fired UPLOAD: the once-armed tus.mid_patch is gone and UPLOAD has blocks recorded.
fired() {
	! grep -q '^tus.mid_patch ' "$ffp" && [ "$(sql "SELECT nblocks FROM uploads WHERE id = '$1'")" -gt 0 ]
}

name=$RUN-fence
req POST "$url/uploads" "${AUTH[@]}" -H "Upload-Length: $FLEN" -H 'Content-Length: 0' \
	-H "Upload-Metadata: filename $(printf %s "$name" | base64 -w0)"
is "$HTTP_CODE" 201 "fence: POST /uploads is 201"
LOC=$(header location)
upload=${LOC##*/}
BLOB=$(sql "SELECT blob_name FROM documents WHERE name = '$name'")
printf 'tus.mid_patch sleep:15000 once\n' >"$ffp"
(fpatch 0; printf '%s %s\n' "$HTTP_CODE" "$(jfield "$HTTP_BODY" error)" >"$work/late") &
late_pid=$!
wait_for 30 fired "$upload" || bail_out "tus.mid_patch did not fire in 30 s"
holder=$(sql "SELECT holder FROM blobs WHERE name = '$BLOB'")
n_rec=$(sql "SELECT nblocks FROM uploads WHERE id = '$upload'")
# Its block ids begin with the first 12 bytes of its attempt id (lib/protocol/tus.c).
pre=$(printf '%s' "${holder:0:24}" | xxd -r -p | base64 -w0)
like "$holder $n_rec" '^[0-9a-f]{24,} [1-9][0-9]*$' "fence: the sleeping PATCH holds the upload, $n_rec blocks recorded"
# 409 upload_busy's Retry-After says how long the silent holder has left of
# the 4 s (it was 5 s whatever was left): 2 s into its silence, a PATCH
# hears at most the seconds left as measured just before it (they only
# shrink while the request runs), rounded up, and at least 1.
sleep 2
left=$(sql "SELECT CEIL((4000000 - TIMESTAMPDIFF(MICROSECOND, touched_at, NOW(6))) / 1000000)
	FROM blobs WHERE name = '$BLOB'")
fpatch "$(head_offset)" $((2 * MIB))
ra=$(header retry-after)
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "409 upload_busy" "fence: a PATCH 2 s into the holder's silence is 409 upload_busy"
ok "[[ '$ra' =~ ^[0-9]+\$ ]] && [ '$ra' -ge 1 ] && [ '$ra' -le '$left' ]" \
	"fence: ... with Retry-After $ra, the holder's $left s left at most"
t0=$(date +%s)
follow $((t0 + FENCE_BOUND)) $((2 * MIB))
is "$HTTP_CODE" 204 "fence: another PATCH takes the upload over and sends 2 MiB ($BUSY busy answers)"
ok "[ $(($(date +%s) - t0)) -le $FENCE_BOUND ]" "fence: ... within $FENCE_BOUND s ($(($(date +%s) - t0)) s)"
ok "kill -0 $late_pid 2>/dev/null" "fence: ... while the sleeping PATCH still sleeps"
wait "$late_pid"
like "$(cat "$work/late")" '^5[0-9][0-9] ' "fence: the sleeper, awake, fails ($(cat "$work/late"))"
is "$(sql "SELECT COUNT(*) FROM upload_blocks WHERE upload_id = '$upload'
	AND BINARY LEFT(block_id, 16) = '$pre'")" "$n_rec" "fence: ... and recorded nothing more than its $n_rec blocks"
# Awake, it may stage a few more blocks before its next record meets the
# fence, or none: its transfers in flight are past request_deadline (the
# window a silent holder keeps is heartbeat + request_deadline, so it always
# is), and what it sends after that races its record.  Said, not asserted;
# the committed-list check below holds either way.
note "fence: the sleeper's blocks in storage: $(az_curl GET "$BLOB" 'blocklisttype=uncommitted&comp=blocklist' \
	'\nblocklisttype:uncommitted\ncomp:blocklist' | grep -o '<Name>[^<]*</Name>' | sed -e 's/<[^>]*>//g' |
	with_prefix "$pre") uncommitted, $n_rec of them recorded"
follow $(($(date +%s) + FENCE_BOUND))
is "$HTTP_CODE $(header upload-offset)" "204 $FLEN" "fence: the client finishes the upload"
is "$(curl -s -m 60 "$url$(header location)/content" | sha)" "$(sha "$work/fence")" "fence: ... bytes identical"
is "$(az_committed "$BLOB" | with_prefix "$pre")" "$n_rec" \
	"fence: the committed block list holds the sleeper's $n_rec recorded blocks and none it staged later"
stack_private_lighttpd_stop

is "$(chaos_verify "$RUN" "$work/before" | head -n 5)" "" "the invariants hold for every cell"
done_testing
