#!/usr/bin/env bash
# Pending blobs that no row names (doc/design.md "The claim and the fence",
# "What sweep and audit decide"): nothing waits for a lifecycle policy.
#
#   - A writer fenced out: its create is held at lease.before_commit (right
#     after its renewal, before Put Blob) while a forced sweep
#     (`--older-than 0 --force`, narrowed to its blob) drops its rows; it
#     then writes its blob tagged pending, loses its next renewal, and must
#     remove that blob itself (guarded by the pending tag and the ETag it
#     wrote), answering 5xx.  Before, the blob stayed: an orphan every audit
#     reported and no sweep removed.
#   - The sweep's own pass, with a CLI configuration whose sweep_cutoff is
#     11 s: pending blobs planted with no row are "in flight" for the audit
#     (exit 0, and --repair leaves them) until the cutoff has passed, then
#     orphans; `sweep --dry-run` names them and removes nothing; `sweep`
#     removes the one whose name this installation could have written
#     (prefix and 32 hex digits), and leaves a pending blob of another
#     name's shape and a committed one with no row (the audit's to report).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"

chaos_need_stack
sql_session
command -v jq >/dev/null || missing "jq"
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
FP=$BINDERY_TEST_VAR/failpoints
work=$(mktemp -d)
curl_pid=
cleanup() {
	: >"$FP" 2>/dev/null
	[ -n "$curl_pid" ] && kill "$curl_pid" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
run=stray$$x$RANDOM
storage_prefix=$(sed -n 's/^prefix *= *//p' "$BINDERY_CONFIG" | tail -n 1)
hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
tag=$(hex 4)	# the planted names start with it: --prefix narrows to them

# The CLI's configuration: the smallest sweep_cutoff the checks allow
# (2 x (heartbeat + request_deadline + body_idle_timeout) + 5).
cutoff=11
{
	cat "$BINDERY_CONFIG"
	printf '\n[limits]\nheartbeat = 1\nrequest_deadline = 1\nbody_idle_timeout = 1\nsweep_cutoff = %s\n' "$cutoff"
	printf 'upload_expiry = 3600\n'
} >"$work/cli.conf"
chmod 0600 "$work/cli.conf"
cli() { "$CHAOS_BIN/bindery" -c "$work/cli.conf" "$@"; }
in_storage() { az_list | awk -v n="$1" '$1 == n { print $3 }'; }

# ---- planted: pending and committed blobs with no row ------------------------
head -c 3000 /dev/urandom >"$work/planted.bin"
stray=$storage_prefix$tag$(hex 12)
foreign=$storage_prefix${tag}x/$(hex 4)
lonely=$storage_prefix$tag$(hex 12)
"$blobtool" put "$stray" "$work/planted.bin" state=pending >/dev/null &&
	"$blobtool" put "$foreign" "$work/planted.bin" state=pending >/dev/null &&
	"$blobtool" put "$lonely" "$work/planted.bin" state=committed >/dev/null ||
	bail_out "blobtool could not plant the blobs"
planted_at=$(date +%s)
note "planted $stray (pending), $foreign (pending, not a name bindery writes), $lonely (committed)"

cli audit --json --prefix "$tag" >"$work/young.json" 2>"$work/young.err"
rc=$?
[ "$rc" != 78 ] || bail_out "the CLI configuration does not load: $(head -n 2 "$work/young.err")"
kind_of() { jq -r --arg n "$2" '.findings[] | select(.name == $n) | .kind' "$1"; }
is "$(kind_of "$work/young.json" "$stray")" in_flight "a pending blob with no row, younger than sweep_cutoff: in flight"
is "$(jq -r '.counts.in_flight' "$work/young.json")" 2 "... both planted pending blobs are counted in flight"
is "$(kind_of "$work/young.json" "$lonely")" orphan "a committed blob with no row is an orphan at once"
cli audit --repair --min-age 0 --prefix "${stray#"$storage_prefix"}" >"$work/young-repair.out" 2>&1
is "$(in_storage "$stray")" pending "audit --repair leaves an in-flight blob alone"

# ---- a fenced-out writer removes what it wrote ------------------------------
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
URL=$CHAOS_URL
head -c 300000 /dev/urandom >"$work/body.bin"
name=$run-fenced
printf 'lease.before_commit sleep:4000 once\n' >"$FP.tmp" && mv -f "$FP.tmp" "$FP"
curl -s -m 60 -o "$work/fenced.body" -w '%{http_code}' "${CHAOS_AUTH[@]}" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$work/body.bin" \
	"$URL/documents?name=$name" >"$work/fenced.code" &
curl_pid=$!
fired() { ! grep -q '^lease.before_commit ' "$FP" 2>/dev/null; }
ok "$(wait_for 20 fired; echo $?)" "the create renewed its lease and is held before its Put Blob"
blob=$(sql "SELECT blob_name FROM documents WHERE name = $(sql_quote "$name")")
like "$blob" "^$storage_prefix[0-9a-f]{32}\$" "... its intent names blob $blob"
"$CHAOS_BIN/bindery" -v -c "$BINDERY_CONFIG" sweep --older-than 0 --force --prefix "${blob#"$storage_prefix"}" \
	>"$work/forced.out" 2>&1
like "$(cat "$work/forced.out")" ' 1 dropped' "a forced sweep drops the running upload's rows (nothing in storage yet)"
wait "$curl_pid"
curl_pid=
like "$(cat "$work/fenced.code")" '^5[0-9][0-9]$' "the fenced-out create answers 5xx ($(cat "$work/fenced.code"))"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$name")")" 0 "... no row names it"
is "$(in_storage "$blob")" "" "... and the pending blob it wrote after the drop is gone: it removed it itself"
ok "$(grep -q "intent $blob: its rows are gone; the pending blob it wrote was removed" \
	"$STACK_LOG/lighttpd.out" "$STACK_LOG"/lighttpd-error.log 2>/dev/null; echo $?)" "... and logged so"
: >"$FP"

# ---- the sweep's pass, after the cutoff --------------------------------------
left=$((planted_at + cutoff + 1 - $(date +%s)))
[ "$left" -le 0 ] || sleep "$left"
cli audit --json --prefix "$tag" >"$work/old.json" 2>"$work/old.err"
is "$?" 1 "after sweep_cutoff the audit reports problems (exit 1)"
is "$(kind_of "$work/old.json" "$stray")" orphan "... the old pending blob with no row is an orphan now"
cli sweep --dry-run --prefix "$tag" >"$work/dry.out" 2>&1
like "$(cat "$work/dry.out")" "would remove $stray " "sweep --dry-run names the stray"
is "$(in_storage "$stray")" pending "... and removes nothing"
cli -v sweep --prefix "$tag" >"$work/sweep.out" 2>&1
is "$?" 0 "sweep exits 0"
like "$(cat "$work/sweep.out")" ' 1 strays' "... removing one stray"
is "$(in_storage "$stray")" "" "the pending blob no row names, older than the cutoff, is gone"
is "$(in_storage "$foreign")" pending "a pending blob whose name bindery never writes is left"
is "$(in_storage "$lonely")" committed "a committed blob with no row is left (the audit's to report)"

# A SAS that may not search by tags (no f): the sweep says so once and
# leaves strays to the lifecycle policy, and the run is not a failed one.
sas=$("$blobtool" account-sas rwdlacut 600) || bail_out "blobtool account-sas failed"
{
	sed -e '/^key = /d' -e 's/^direct = .*/direct = false/' "$work/cli.conf"
	printf '[storage]\nsas = %s\n' "${sas//&/&$'\n\t'}"
} >"$work/sas.conf"
chmod 0600 "$work/sas.conf"
BINDERY_LOG_STDERR=1 "$CHAOS_BIN/bindery" -v -c "$work/sas.conf" sweep --prefix "$tag" >"$work/sas-sweep.out" 2>&1
rc=$?
is "$rc" 0 "a SAS without the f permission: the sweep exits 0 ($(tail -n 1 "$work/sas-sweep.out"))"
like "$(cat "$work/sas-sweep.out")" 'refused Find Blobs by Tags.*lifecycle policy' "... and says strays are left to the lifecycle policy"
like "$(cat "$work/sas-sweep.out")" ' 0 deferred' "... not counting it as work deferred"

"$blobtool" rm "$foreign" >/dev/null 2>&1
"$blobtool" rm "$lonely" >/dev/null 2>&1
cli audit --json --prefix "$tag" >"$work/end.json" 2>/dev/null
is "$?" 0 "the audit of the planted names is clean once the test removed its own"
done_testing
