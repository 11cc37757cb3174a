#!/usr/bin/env bash
# Crash matrix: every failpoint x operation, through lighttpd.
#
# For each cell: arm one failpoint in the responder (a real _exit(137) of the
# FastCGI worker, or an injected error), send the request, disarm, run
#   bindery sweep --older-than 0 --force
# and check the invariants by looking at MariaDB and Azurite directly
# (tests/lib/chaos.sh signs its own Azurite requests):
#   - no ready document whose blob is missing or differs (I1)
#   - no committed blob lost, no registry row left pending/sweeping/deleting,
#     the outbox drained (I2, I3)
#   - no blob of this cell without a registry row (orphan) (I3)
#   - every acknowledged (2xx) document readable through the responder with
#     its exact bytes; the cell's expected outcome (roll forward after the
#     tag flip, roll back of a replace) (I1, I4)
# The lease cells (a crash right after a renewal) also show that a
# plain sweep leaves the intent while its lease lasts and resolves it after.
# One TAP ok per cell, and the matrix as a table of "# " lines.  Under
# --long (BINDERY_TEST_LONG) also the cells whose crash state another cell
# already leaves (the staged and form creates at two more points each, the
# heartbeat through the pool); the comments where they are say which.
#
# Time travel, where the protocol waits on the clock, is done in the
# database and said so: an outbox row's grace period (retire_after) and an
# abandoned intent's heartbeat and lease (touched_at, expires_at, for the
# idempotent resume) and
# the lease of a crashed compensation's or sweeper's claim (lease_until)
# are moved into the past; sweep leases are made short with a config copy.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"

chaos_need_stack
sql_session	# one client for the run's hundreds of queries (tests/lib/db.sh)
# The file the responder reads its failpoints from ($BINDERY_FAILPOINTS_FILE
# in the responder's environment; chaos_failpoint_responder checks it).
FP=$BINDERY_TEST_VAR/failpoints
URL=$BINDERY_TEST_LIGHTTPD_URL
RUN=cm$$x$RANDOM
work=$(mktemp -d)

cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	stack_private_lighttpd_stop	# the heartbeat ones, if started
	stack_private_pool_stop
	[ -n "${pool_fp_dir:-}" ] && rm -rf "$pool_fp_dir"
	rm -rf "$work"
}
trap cleanup EXIT

# A config for the CLI only: short sweep leases, so a crashed sweeper's
# claim ends in a second instead of five minutes.
sed -e '/^\[sweep\]/,/^\[/{/^lease *=/d}' "$BINDERY_CONFIG" >"$work/cli.conf"
if grep -q '^\[sweep\]' "$work/cli.conf"; then
	sed -i -e 's/^\[sweep\]/&\nlease = 1/' "$work/cli.conf"
else
	printf '\n[sweep]\nlease = 1\n' >>"$work/cli.conf"
fi
chmod 0600 "$work/cli.conf"

# sweep [ENV=VALUE...]: one sweep; output in $work/sweep.log; sets SWEEP_RC
sweep() { chaos_sweep "$work/cli.conf" "$work/sweep.log" "$@"; }

wait_up() { # the web server answers /healthz 200 again (worker restarted)
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$URL/healthz")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}

arm() { printf '%s\n' "$@" >"$FP.tmp" && mv -f "$FP.tmp" "$FP"; }
disarm() { : >"$FP"; }
fired() { ! grep -q "^$1 " "$FP" 2>/dev/null; }	# a "once" line is gone once it fired

# ---- make sure the responder sees $FP ---------------------------------------

mkdir -p "$(dirname "$FP")"
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
URL=$CHAOS_URL
disarm
sweep
note "failpoints armed through $FP; responder at $URL"

# ---- payloads ---------------------------------------------------------------

head -c 5000 /dev/urandom >"$work/small.bin"
head -c 6000000 /dev/urandom >"$work/large.bin"	# several 4 MiB blocks: staged upload
head -c 7000 /dev/urandom >"$work/new.bin"

# send OP NAME FILE [ID] [IDEM-KEY]: one request; sets CODE and BODY.
send() {
	local op=$1 name=$2 file=$3 id=${4:-} key=${5:-} args=()
	[ -n "$key" ] && args=(-H "Idempotency-Key: $key")
	case $op in
	raw) args+=(-X POST -H 'Content-Type: application/x-crash' --data-binary "@$file"
		"$URL/documents?name=$name") ;;
	form) args+=(-F "name=$name" -F "file=@$file;type=application/x-crash" "$URL/documents") ;;
	put) args+=(-X PUT -H 'Content-Type: application/x-crash' --data-binary "@$file"
		"$URL/documents/$id/content") ;;
	delete) args+=(-X DELETE "$URL/documents/$id") ;;
	esac
	CODE=$(curl -s -m 120 -o "$work/body" -w '%{http_code}' "${CHAOS_AUTH[@]}" "${args[@]}")
	BODY=$(<"$work/body") 2>/dev/null
}

# ---- one cell ---------------------------------------------------------------

ROWS=()
cell_no=0

# The cell's scope: documents named $P*, the ids it created, every blob name
# those rows ever mentioned and every blob that appeared in the container.
# scope_ids sets SCOPE_IDS to their ids, comma-separated ("0" for none).
# (In this shell, not through sort, tr and sed nor in a subshell: it runs a
# dozen times a cell, and a fork costs 3-4 ms of CPU here.)
scope_ids() {
	local id out='' rows
	local -A seen=()
	sql_to rows "SELECT id FROM documents WHERE name LIKE '$P%'"
	for id in $rows $CELL_IDS; do
		[ -z "${seen[$id]:-}" ] || continue
		seen[$id]=1 out+=${out:+,}$id
	done
	SCOPE_IDS=${out:-0}
}

note_blobs() { # remember every blob name the scope's rows mention now
	scope_ids
	sql "SELECT name FROM blobs WHERE document_id IN ($SCOPE_IDS)
	     UNION SELECT blob_name FROM documents WHERE id IN ($SCOPE_IDS)" >>"$work/scope-blobs"
}

# begin OP POINT ACTION: start a cell.
begin() {
	cell_no=$((cell_no + 1))
	C_OP=$1 C_POINT=$2 C_ACTION=$3
	P="$RUN-$cell_no-"
	CELL_IDS='' ACKED=() C_BAD=() EXPECT='' C_CODES='' C_NOTE=''
	: >"$work/scope-blobs"
	: >"$work/sweep.log"
	az_list | cut -d' ' -f1 | sort >"$work/before" || bail_out "cannot list Azurite"
}

ack() { # NAME FILE: the client was told NAME holds FILE's bytes
	ACKED+=("$1=$2")
}

# create_doc NAME FILE: an unarmed create (set-up); sets DOC_ID.
create_doc() {
	send raw "$1" "$2"
	[ "$CODE" = 201 ] || { C_NOTE="set-up create $CODE"; DOC_ID=0; return 1; }
	DOC_ID=$(jfield "$BODY" id)
	CELL_IDS="$CELL_IDS $DOC_ID"
	ack "$1" "$2"
	note_blobs
}

# make_due: the grace period of this cell's outbox rows has passed.
make_due() {
	scope_ids
	sql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND
	     WHERE document_id IN ($SCOPE_IDS) AND state = 'retired'"
}

# finish: sweep, check everything for the cell, one TAP line and a table row.
finish() {
	local ids bad=("${C_BAD[@]}") n name file want got st id f sha_db row listed
	note_blobs
	disarm
	wait_up || bad+=("web server did not come back")
	make_due
	sweep
	[ "$SWEEP_RC" = 0 ] || bad+=("sweep exit $SWEEP_RC")
	# A sweep that left something for a later run gets a second chance
	# (a claim whose lease just ended); two are never needed otherwise.
	scope_ids
	ids=$SCOPE_IDS
	sql_to n "SELECT COUNT(*) FROM blobs WHERE document_id IN ($ids) AND state <> 'committed'"
	if [ "$n" != 0 ]; then
		sleep 1.1
		make_due
		sweep
		C_NOTE="${C_NOTE:+$C_NOTE; }2 sweeps"
	fi
	note_blobs
	scope_ids
	ids=$SCOPE_IDS
	az_list >"$work/after" || bad+=("cannot list Azurite")
	cut -d' ' -f1 "$work/after" | sort >"$work/after-names"
	# stuck intents and undrained outbox rows
	sql_to n "SELECT COUNT(*) FROM blobs WHERE document_id IN ($ids) AND state <> 'committed'"
	[ "$n" = 0 ] || bad+=("$n registry rows not committed: $(sql "SELECT CONCAT(name,':',state) FROM blobs WHERE document_id IN ($ids) AND state <> 'committed'" | tr '\n' ' ')")
	sql_to n "SELECT COUNT(*) FROM documents WHERE id IN ($ids) AND status <> 'ready'"
	[ "$n" = 0 ] || bad+=("$n documents still pending")
	# every committed registry row is the blob of a ready document, and
	# every ready document's blob is there, tagged committed, same bytes
	sql_to n "SELECT COUNT(*) FROM blobs b LEFT JOIN documents d ON d.blob_name = b.name AND d.status = 'ready'
		 WHERE b.document_id IN ($ids) AND b.state = 'committed' AND d.id IS NULL"
	[ "$n" = 0 ] || bad+=("$n committed rows without a document")
	while IFS=$'\t' read -r id f sha_db; do
		[ -n "$id" ] || continue
		listed=$(awk -v n="$f" '$1 == n { print $3 " " $4 }' "$work/after")
		[ "$listed" = "committed $sha_db" ] || bad+=("document $id: blob $f is '${listed:-missing}' (dangling)")
		[ "$(az_sha256 "$f")" = "$sha_db" ] || bad+=("document $id: blob bytes differ from sha256")
	done < <(sql "SELECT id, blob_name, sha256 FROM documents WHERE id IN ($ids)")
	# orphans: a blob of this cell (new in the container, or named by its
	# rows at any time) that no ready document references
	sort -u "$work/scope-blobs" >"$work/scope-sorted"
	{ comm -13 "$work/before" "$work/after-names"; comm -12 "$work/scope-sorted" "$work/after-names"; } |
		sort -u >"$work/cell-blobs"
	while read -r name; do
		[ -n "$name" ] || continue
		sql_to n "SELECT COUNT(*) FROM documents WHERE blob_name = '$name' AND status = 'ready'"
		[ "$n" = 1 ] || bad+=("orphan blob $name ($(awk -v n="$name" '$1 == n { print $3 }' "$work/after"), registry: $(sql "SELECT state FROM blobs WHERE name = '$name'"))")
	done <"$work/cell-blobs"
	# acknowledged documents: readable through the responder, exact bytes
	for row in "${ACKED[@]}"; do
		name=${row%%=*} file=${row#*=}
		if [ "$file" = GONE ]; then
			n=$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")
			[ "$n" = 0 ] || bad+=("acknowledged delete of $name: the document is back")
			continue
		fi
		id=$(sql "SELECT id FROM documents WHERE name = $(sql_quote "$name") AND status = 'ready'")
		got=$(curl -s -m 60 "$URL/documents/${id:-0}/content" | sha)
		[ "$got" = "$(sha "$file")" ] || bad+=("acknowledged $name: not readable with its bytes")
	done
	# the cell's expected outcome: gone, or NAME=FILE
	case $EXPECT in
	'') ;;
	gone:*)
		name=${EXPECT#gone:}
		n=$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")
		[ "$n" = 0 ] || bad+=("expected $name gone, it has $n rows")
		want=gone ;;
	*)
		name=${EXPECT%%=*} file=${EXPECT#*=}
		id=$(sql "SELECT id FROM documents WHERE name = $(sql_quote "$name") AND status = 'ready'")
		got=$(curl -s -m 60 "$URL/documents/${id:-0}/content" | sha)
		[ "$got" = "$(sha "$file")" ] || bad+=("expected $name with $(basename "$file")'s bytes")
		want="ready ($(basename "$file" .bin))" ;;
	esac
	sql_to n "SELECT name FROM documents WHERE name LIKE '$P%' GROUP BY name HAVING COUNT(*) > 1"
	[ -z "$n" ] || bad+=("a name with two documents")
	st=ok
	[ ${#bad[@]} -eq 0 ] || st=FAIL
	ROWS+=("$(printf '%-18s %-26s %-6s %-15s %-14s %-4s %s' "$C_OP" "$C_POINT" "$C_ACTION" \
		"${C_CODES# }" "${want:-ok}" "$st" "$C_NOTE")")
	ok "$([ $st = ok ]; echo $?)" "$C_OP x $C_POINT ($C_ACTION): answered ${C_CODES# }; after sweep ${want:-consistent}"
	if [ $st != ok ]; then
		for f in "${bad[@]}"; do diag "  $f"; done
		diag "  sweep log:"; sed -e 's/^/#   /' "$work/sweep.log"
	fi
}

code() { C_CODES="$C_CODES $CODE"; }
check_fired() { fired "$1" || C_NOTE="${C_NOTE:+$C_NOTE; }$1 did not fire"; }
need_fired() { fired "$1" || cell_fail "$1 did not fire"; }
cell_fail() { C_BAD+=("${*:-$C_NOTE}"); }

# ---- creates ------------------------------------------------------------------

# create_cell OP FILE POINT ACTION EXPECT(gone|ready)
create_cell() {
	local op=$1 file=$2 point=$3 action=$4 expect=$5 label
	label=$op; [ "$file" = "$work/large.bin" ] && label="$op(staged)"
	begin "create $label" "$point" "$action"
	arm "$point $action once"
	send "$op" "${P}doc" "$file"
	code
	need_fired "$point"
	case $CODE in 2*) ack "${P}doc" "$file" ;; esac
	if [ "$expect" = gone ]; then EXPECT="gone:${P}doc"; else EXPECT="${P}doc=$file"; fi
	finish
}

# Every point with a raw single Put Blob.  The staged upload (large) and
# the form add their own state at two points: the staged upload's blocks
# and block list (after_upload, rolled back; after_tag, rolled forward from
# the metadata Put Block List wrote) and the form's multipart body in
# storage (after_upload).  At the other points their crash state is the raw
# small cell's (an intent without bytes, or a ready row on a committed
# blob): those cells run under --long (BINDERY_TEST_LONG).
long=${BINDERY_TEST_LONG:-}
for point in create.after_intent create.after_upload; do
	create_cell raw "$work/small.bin" $point exit gone
	if [ $point = create.after_upload ] || [ -n "$long" ]; then
		create_cell raw "$work/large.bin" $point exit gone
		create_cell form "$work/small.bin" $point exit gone
	fi
done
for point in create.after_tag create.after_ready; do	# after the tag flip: roll forward
	create_cell raw "$work/small.bin" $point exit ready
	if [ $point = create.after_tag ] || [ -n "$long" ]; then
		create_cell raw "$work/large.bin" $point exit ready
	fi
	if [ -n "$long" ]; then
		create_cell form "$work/small.bin" $point exit ready
	fi
done

# A failure before the flip makes the responder compensate; crash there:
# before its claim (the row stays pending for the sweeper), or after it
# (the row is claimed, sweeping, under the responder's holder with a
# lease; the sweeper takes the claim over once the lease has ended).
claimed_by_compensation() { # the cell's intents are claimed (state sweeping)
	scope_ids
	[ "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id IN ($SCOPE_IDS) AND state = 'sweeping'
		  AND claimed_by = holder")" -ge 1 ]
}
expire_claims() { # time travel: the crashed compensation's lease has ended
	scope_ids
	sql "UPDATE blobs SET lease_until = NOW(6) - INTERVAL 1 SECOND
	     WHERE document_id IN ($SCOPE_IDS) AND state = 'sweeping'"
}
begin "create raw" "compensate.before_claim" exit
arm "create.after_upload error once" "compensate.before_claim exit once"
send raw "${P}doc" "$work/small.bin"; code
need_fired compensate.before_claim
note_blobs
scope_ids
[ "$(sql "SELECT COUNT(*) FROM blobs WHERE document_id IN ($SCOPE_IDS) AND state = 'pending'")" = 1 ] ||
	cell_fail "the intent is not left pending"
EXPECT="gone:${P}doc"
finish

begin "create raw" "compensate.before_delete" exit
arm "create.after_upload error once" "compensate.before_delete exit once"
send raw "${P}doc" "$work/small.bin"; code
need_fired compensate.before_delete
note_blobs
claimed_by_compensation || cell_fail "compensation did not claim the intent before its delete"
expire_claims
EXPECT="gone:${P}doc"
finish

# The error action: the client gets a 5xx, only sweepable state is left.
# After the flip (after_tag, after_ready) an error leaves the state the exit
# cells there leave: those two under --long.
for spec in create.after_intent:gone create.after_upload:gone create.after_tag:ready create.after_ready:ready; do
	point=${spec%%:*}
	[ "${spec#*:}" = ready ] && [ -z "$long" ] && continue
	begin "create raw" "$point" error
	arm "$point error once"
	send raw "${P}doc" "$work/small.bin"; code
	need_fired "$point"
	case $CODE in 5*) ;; 2*) ack "${P}doc" "$work/small.bin"; C_NOTE="not a 5xx" ;; *) C_NOTE="not a 5xx" ;; esac
	case $CODE in 503) ;; *) cell_fail "answered $CODE, not 503" ;; esac
	if [ "${spec#*:}" = gone ]; then EXPECT="gone:${P}doc"; else EXPECT="${P}doc=$work/small.bin"; fi
	finish
done

# ---- create with an Idempotency-Key, then the retries -------------------------------

# The crashed request's intent is stale only after request_deadline; the
# retry at once must say "in progress" (409) or replay, never start a second
# document.  Then its heartbeat is moved past the deadline and the retry
# resumes the intent (or replays the answer): one document, the same bytes.
age_intents() {
	scope_ids
	sql "UPDATE blobs SET touched_at = touched_at - INTERVAL 1 DAY, expires_at = NOW(6) - INTERVAL 1 SECOND
	     WHERE document_id IN ($SCOPE_IDS) AND state = 'pending'"
}

for point in create.after_intent create.after_upload create.after_tag create.after_ready; do
	begin "create idem+retry" "$point" exit
	key="$P-key"
	arm "$point exit once"
	send raw "${P}doc" "$work/small.bin" '' "$key"; code
	need_fired "$point"
	note_blobs
	wait_up
	send raw "${P}doc" "$work/small.bin" '' "$key"; code
	first=$(jfield "$BODY" id)
	case $CODE in
	201) ack "${P}doc" "$work/small.bin" ;;
	409) [ "$(jfield "$BODY" error)" = idempotency_in_progress ] || C_NOTE="409 $(jfield "$BODY" error)" ;;
	*) C_NOTE="retry answered $CODE"; cell_fail ;;
	esac
	age_intents
	send raw "${P}doc" "$work/small.bin" '' "$key"; code
	case $CODE in
	201) ack "${P}doc" "$work/small.bin"
	     if [ -n "$first" ] && [ "$first" != "$(jfield "$BODY" id)" ]; then
		C_NOTE="two ids: $first $(jfield "$BODY" id)"; cell_fail; fi ;;
	*) C_NOTE="${C_NOTE:+$C_NOTE; }aged retry answered $CODE"; cell_fail ;;
	esac
	# And the same key with other bytes: refused, changes nothing (I4).
	send raw "${P}doc" "$work/new.bin" '' "$key"; code
	case $CODE in 422 | 409) ;; *) C_NOTE="${C_NOTE:+$C_NOTE; }other bytes answered $CODE"; cell_fail ;; esac
	EXPECT="${P}doc=$work/small.bin"
	finish
done

# The resume itself crashes after renewing the intent's claim.
begin "create idem+retry" resume.after_claim exit
key="$P-key"
arm "create.after_upload exit once"
send raw "${P}doc" "$work/small.bin" '' "$key"; code
need_fired create.after_upload
note_blobs; wait_up; age_intents
arm "resume.after_claim exit once"
send raw "${P}doc" "$work/small.bin" '' "$key"; code
need_fired resume.after_claim
EXPECT="gone:${P}doc"
finish

# ...and after the sweep took the old intent, the key starts a fresh one.
begin "create idem+retry" "create.after_upload+sweep" exit
key="$P-key"
arm "create.after_upload exit once"
send raw "${P}doc" "$work/small.bin" '' "$key"; code
need_fired create.after_upload
note_blobs; disarm; wait_up; sweep
send raw "${P}doc" "$work/small.bin" '' "$key"; code
case $CODE in 201) ack "${P}doc" "$work/small.bin" ;; *) cell_fail "fresh retry answered $CODE" ;; esac
EXPECT="${P}doc=$work/small.bin"
finish

# ---- replace -------------------------------------------------------------------

# replace_cell POINT ACTION EXPECT(old|new) [EXTRA-ARM-LINE]
replace_cell() {
	local point=$1 action=$2 expect=$3 extra=${4:-}
	begin "replace" "$point" "$action"
	create_doc "${P}doc" "$work/small.bin" || { finish; return; }
	ACKED=()	# the replace decides which bytes the name holds
	if [ -n "$extra" ]; then arm "$extra" "$point $action once"; else arm "$point $action once"; fi
	send put "${P}doc" "$work/new.bin" "$DOC_ID"; code
	need_fired "$point"
	if [ "$point" = compensate.before_delete ]; then
		note_blobs
		claimed_by_compensation || cell_fail "compensation did not claim the intent before its delete"
		expire_claims
	fi
	case $CODE in
	2*) ack "${P}doc" "$work/new.bin" ;;
	5*) ;;
	*) C_NOTE="answered $CODE"; cell_fail ;;
	esac
	[ "$action" = error ] && [ "$CODE" != 503 ] && cell_fail "answered $CODE, not 503"
	if [ "$expect" = old ]; then EXPECT="${P}doc=$work/small.bin"; else EXPECT="${P}doc=$work/new.bin"; fi
	finish
}
replace_cell replace.after_intent exit old
replace_cell replace.after_upload exit old
replace_cell replace.after_tag exit old		# tag flipped, not committed: roll back
replace_cell replace.after_commit exit new
replace_cell compensate.before_claim exit old "replace.after_upload error once"
replace_cell compensate.before_delete exit old "replace.after_upload error once"
replace_cell replace.after_upload error old
[ -n "$long" ] && replace_cell replace.after_tag error old	# (the exit cell's state)

# ---- delete and the outbox ---------------------------------------------------------

for action in exit error; do
	begin "delete" delete.after_commit "$action"
	create_doc "${P}doc" "$work/small.bin"
	ACKED=()
	arm "delete.after_commit $action once"
	send delete "${P}doc" "$work/small.bin" "$DOC_ID"; code
	need_fired delete.after_commit
	EXPECT="gone:${P}doc"
	finish
done

# The sweeper's drain of the outbox crashes (a replaced blob, then a deleted one).
# expire_sweep_claims: time travel, the crashed sweeper's claims (deleting,
# or sweeping) have passed their lease (1 s in the CLI config: a sleep of
# 1.1 s a cell before).
expire_sweep_claims() {
	scope_ids
	sql "UPDATE blobs SET lease_until = NOW(6) - INTERVAL 1 SECOND
	     WHERE document_id IN ($SCOPE_IDS) AND state IN ('sweeping', 'deleting')"
}
for point in drain.after_claim drain.after_tag drain.after_delete; do
	begin "sweep drain" "$point" exit
	create_doc "${P}doc" "$work/small.bin"
	send put "${P}doc" "$work/new.bin" "$DOC_ID"; code
	ACKED=()
	send delete "${P}doc" "$work/small.bin" "$DOC_ID"; code
	[ "$CODE" = 204 ] && ack "${P}doc" GONE
	make_due
	sweep BINDERY_FAILPOINTS="$point=exit"
	[ "$SWEEP_RC" = 137 ] || C_NOTE="the sweep with $point armed exited $SWEEP_RC"
	[ "$SWEEP_RC" = 137 ] || cell_fail
	expire_sweep_claims	# the crashed sweeper's lease ends
	EXPECT="gone:${P}doc"
	finish
done

# ---- leases: a crash right after a renewal ---------------------------------------------

# Each renewal pushes the intent's lease (expires_at) to now + sweep_cutoff,
# so a crash right after one leaves a row the sweeper must leave alone until
# the lease has passed, and resolve then.  A plain sweep (leases only, no
# --older-than) runs first, with the lease still live: it must leave the
# row and what storage holds.  Then the lease is moved into the past (time
# travel in the database, as above) and a plain sweep must resolve it: no
# row, no document, no blob, no staged blocks, and `bindery audit` of the
# blob's name clean.  finish then checks the cell as for every other one.
STORAGE_PREFIX=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | tail -n 1)

# plain_sweep: one `bindery sweep` without --older-than; sets SWEEP_RC.
plain_sweep() {
	env BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS_FILE=/dev/null \
		"$CHAOS_BIN/bindery" -c "$work/cli.conf" sweep >>"$work/sweep.log" 2>&1
	SWEEP_RC=$?
}
# storage_of BLOB: what storage holds under the name: "staged" (uncommitted
# blocks, nothing committed), a committed blob's state tag ("untagged"
# without one), or "none".
storage_of() {
	local tag staged
	tag=$(az_list "$1" | awk -v n="$1" '$1 == n { print $3 }')
	staged=$(az_staged "$1")
	if [ "$(az_sha256 "$1")" != missing ]; then
		case $tag in -) echo untagged ;; *) echo "$tag" ;; esac
	elif [ "$staged" = '?' ]; then
		echo '?'
	elif [ "$staged" -gt 0 ]; then
		echo staged
	else
		echo none
	fi
}
intent_state() { sql "SELECT state FROM blobs WHERE name = '$1'"; }

# lease_cell STORED: the cell's intent, crashed right after a renewal,
# holds STORED in storage (storage_of: staged, pending or none).
lease_cell() {
	local stored=$1 blob
	blob=$(sql "SELECT blob_name FROM documents WHERE name = $(sql_quote "${P}doc")")
	[ -n "$blob" ] || { cell_fail "no intent was written"; return; }
	note_blobs
	disarm
	wait_up || cell_fail "web server did not come back"
	[ "$(sql "SELECT COUNT(*) FROM blobs WHERE name = '$blob' AND state = 'pending'
		  AND expires_at > NOW(6) + INTERVAL 2 SECOND")" = 1 ] ||
		cell_fail "the intent is not pending under a live lease"
	[ "$(storage_of "$blob")" = "$stored" ] || cell_fail "storage holds '$(storage_of "$blob")', not '$stored'"
	plain_sweep
	[ "$SWEEP_RC" = 0 ] || cell_fail "plain sweep exit $SWEEP_RC"
	[ "$(intent_state "$blob")" = pending ] ||
		cell_fail "a sweep before the lease passed took the intent ($(intent_state "$blob"))"
	[ "$(storage_of "$blob")" = "$stored" ] || cell_fail "a sweep before the lease passed touched storage"
	sql "UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE name = '$blob' AND state = 'pending'"
	plain_sweep
	[ "$SWEEP_RC" = 0 ] || cell_fail "plain sweep after the lease exit $SWEEP_RC"
	[ -z "$(intent_state "$blob")" ] || cell_fail "after the lease passed the row is still $(intent_state "$blob")"
	[ "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "${P}doc")")" = 0 ] ||
		cell_fail "after the lease passed the document row is still there"
	[ "$(storage_of "$blob")" = none ] ||
		cell_fail "after the lease passed storage still holds '$(storage_of "$blob")'"
	"$CHAOS_BIN/bindery" -c "$work/cli.conf" audit --prefix "${blob#"$STORAGE_PREFIX"}" >"$work/audit.out" 2>&1 ||
		cell_fail "audit of $blob: $(head -n 3 "$work/audit.out" | tr '\n' ' ')"
	C_NOTE="${C_NOTE:+$C_NOTE; }kept by a sweep under its lease"
	EXPECT="gone:${P}doc"
}

# Fenced renewals around the commit, through the stack's responder (its
# block size: large.bin is staged as blocks, small.bin is one Put Blob).
for spec in "lease.before_commit large staged" "lease.before_commit small none" \
	"lease.before_flip large pending"; do
	read -r point size stored <<<"$spec"
	begin "create raw($size)" "$point" exit
	arm "$point exit once"
	send raw "${P}doc" "$work/$size.bin"; code
	need_fired "$point"
	lease_cell "$stored"
	finish
done

# The heartbeat while the body streams needs a body slower than heartbeat
# and a server that streams it: a lighttpd of our own, then a pool of our
# own behind Apache mod_proxy_fcgi (mod_fcgid buffers the body, so no
# heartbeat runs while it arrives), whose responders read a configuration
# with heartbeat = 1 and 1 MiB blocks (the stack's prefix, so the CLI's
# sweep sees its names), and a client that sends 2 MiB at once (two blocks
# are staged) and then trickles.
{
	cat "$BINDERY_CONFIG"
	printf '\n[limits]\nheartbeat = 1\nrequest_deadline = 5\nbody_idle_timeout = 3\n'
	printf 'sweep_cutoff = 25\nblock_size = 1M\nsingle_put_max = 1M\n'
} >"$work/heartbeat.conf"
chmod 0600 "$work/heartbeat.conf"

# heartbeat_cell SERVER PORT: the cell through the server on PORT.
heartbeat_cell() {
	begin "create slow(staged) $1" lease.after_heartbeat exit
	arm "lease.after_heartbeat exit once"
	python3 "$top/tests/tools/slow_client.py" --port "$2" --path "/documents?name=${P}doc" \
		--header "Authorization: Bearer $BINDERY_TEST_TOKEN" --header 'Content-Type: application/x-crash' \
		--length 3145728 --first 2097152 --every 0.2 --chunk 20000 --give-up 60 >"$work/slow.out" 2>&1
	read -r CODE _ <"$work/slow.out"; code
	need_fired lease.after_heartbeat
	lease_cell staged
	finish
}

BINDERY_FAILPOINTS_FILE=$FP stack_private_lighttpd "$BINDERY_TEST_VAR/crash-heartbeat" lighttpd.conf \
	"$work/heartbeat.conf" "$CHAOS_BIN" 18190 || bail_out "the heartbeat lighttpd did not start"
heartbeat_cell lighttpd "$HTTP_PORT"
stack_private_lighttpd_stop

# The same cell through the pool runs under --long: its crash state is the
# lighttpd cell's above, and tests/e2e/leases.sh keeps the pool's heartbeat
# (a trickled upload behind mod_proxy_fcgi that a sweep must not take) in
# the default run.
if [ -n "$long" ]; then
# The pool's workers run as the web server's user: a "once" line is taken
# out by writing the file anew beside it, so its directory is theirs.
# Not under the checkout: a clone in a 0700 directory (mktemp -d) is closed
# to www-data, and the failpoint would never fire.
pool_fp_dir=$(mktemp -d /tmp/bindery-fp.XXXXXX) || bail_out "mktemp failed"
lane_fp=$FP FP=$pool_fp_dir/failpoints
: >"$FP" && chmod 0755 "$pool_fp_dir" && chown -R "$STACK_WWW_USER" "$pool_fp_dir" ||
	bail_out "cannot make the pool's failpoints file"
stack_private_pool "$BINDERY_TEST_VAR/crash-heartbeat-pool" "$work/heartbeat.conf" 2 18190 \
	BINDERY_FAILPOINTS_FILE="$FP" || bail_out "the heartbeat pool did not start"
stack_apache_start "$STACK_PRIVATE_POOL_CONF" apache-pool "$APACHE_POOL_PORT" ||
	bail_out "the heartbeat pool's Apache did not start"
# finish reads the cell's documents back, and waits for a worker, there.
lane_url=$URL URL=http://127.0.0.1:$APACHE_POOL_PORT
heartbeat_cell pool "$APACHE_POOL_PORT"
URL=$lane_url FP=$lane_fp
stack_private_pool_stop
fi

# ---- the matrix ------------------------------------------------------------------------

note ""
note "crash matrix ($cell_no cells; answered = HTTP codes the client saw, in order)"
note "$(printf '%-18s %-26s %-6s %-15s %-14s %-4s %s' operation failpoint action answered 'after sweep' cell note)"
for row in "${ROWS[@]}"; do note "$row"; done
done_testing
