#!/usr/bin/env bash
# The crash matrix's replace and delete cells (tests/e2e/crash_matrix.sh)
# with the two halves of each race on different Galera nodes: the request
# that crashes (or is held) runs through host A (node 1 first), and what
# resolves or races it runs through host B (node 2 first): a second
# writer, a reader, and the sweeper (`bindery sweep` with host B's config).
# Each cell arms a failpoint in host A's responders only (their own file),
# then checks by looking at the services directly (tests/lib/chaos.sh's
# chaos_verify: nothing pending or stuck, no orphan blob, every ready
# document's blob there with its bytes) and through BOTH hosts: the name
# holds the expected bytes (SHA-256 of what each serves, from a file) or is
# gone (404 on both).  One TAP line per cell, and the matrix as a table.
#
#   replace crashes on A (after intent / upload / tag / commit), B reads at
#     once, B's sweeper resolves it: old bytes, or new after the commit;
#   the same crashes, then a second replace through B before the sweep;
#   a replace on A held after its read while B deletes (A: 404) or B
#     replaces with the same If-Match (A: 412);
#   a delete crashes on A after its commit: B reads 404 at once, a replace
#     through B is 404, B's sweeper drains the outbox;
#   a delete on A held after its read while B replaces (unguarded: A's
#     delete runs again and removes the new version; guarded: A gets 412).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
top=$(cd "$cl_here/../.." && pwd)
. "$top/tests/lib/chaos.sh"
cl_chaos_view
read -r _ conf_b _ <<<"$BINDERY_CONFIGS"

FP_A=$CLUSTER_VAR/split-failpoints-a
FP_B=$CLUSTER_VAR/split-failpoints-b
RUN=clsp$$x$RANDOM
work=$(mktemp -d)
cleanup() {
	: >"$FP_A" 2>/dev/null
	: >"$FP_B" 2>/dev/null
	cl_failpoint_hosts_stop split
	rm -rf "$work"
}
trap cleanup EXIT
cl_failpoint_hosts split "$FP_A" "$FP_B"
A=${CL_FP_URLS[0]} B=${CL_FP_URLS[1]}
{ cat "$conf_b"; grep -q '^\[sweep\]' "$conf_b" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli-b.conf"
chmod 0600 "$work/cli-b.conf"
chaos_sweep "$work/cli-b.conf" "$work/sweep.log"
note "host A $A (node 1 first, failpoints armed here), host B $B (node 2 first: second writer, reader, sweeper)"

head -c 5000 /dev/urandom >"$work/old.bin"
head -c 7000 /dev/urandom >"$work/new.bin"
head -c 6000 /dev/urandom >"$work/b.bin"
HOLD_MS=4000	# a held request's pause: long enough for B's whole request here

# send URL OP ID-OR-NAME [FILE] [IF-MATCH]: one request; prints the status.
send() {
	local url=$1 op=$2 id=$3 file=${4:-} im=${5:-} args=()
	[ -n "$im" ] && args=(-H "If-Match: $im")
	case $op in
	create) args+=(-X POST -H 'Content-Type: application/x-split' --data-binary "@$file" "$url/documents?name=$id") ;;
	put) args+=(-X PUT -H 'Content-Type: application/x-split' --data-binary "@$file" "$url/documents/$id/content") ;;
	delete) args+=(-X DELETE "$url/documents/$id") ;;
	esac
	curl -s -m 60 -o "$work/body" -w '%{http_code}' "${CHAOS_AUTH[@]}" "${args[@]}"
}
fired() { ! grep -q "^$1 " "$FP_A" 2>/dev/null; }
wait_fired() { # POINT: until host A took it (10 s at most)
	local i
	for ((i = 0; i < 100; i++)); do fired "$1" && return 0; sleep 0.1; done
	return 1
}
wait_up() { # host A answers /healthz again (its worker restarted)
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$A/healthz")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}
# reads ID: "CODE-on-A/CODE-on-B", each host's bytes in $work/read.A, read.B.
reads() {
	local h u out=''
	for h in A B; do
		u=$A; [ $h = B ] && u=$B
		out+="$(curl -s -m 60 -o "$work/read.$h" -w '%{http_code}' "$u/documents/$1/content")/"
	done
	printf '%s' "${out%/}"
}

ROWS=()
cell=0
# begin LABEL: a new cell with a fresh document ($P"doc", old.bin, created
# through B so A's first touch is the armed request); sets ID, ETAG, P.
begin() {
	cell=$((cell + 1))
	C_LABEL=$1 C_BAD=() C_CODES=''
	P=$RUN-$cell-
	: >"$FP_A"; : >"$FP_B"
	chaos_snapshot "$work/before"
	req POST "$B/documents?name=${P}doc" "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-split' \
		--data-binary "@$work/old.bin"
	[ "$HTTP_CODE" = 201 ] || C_BAD+=("set-up create answered $HTTP_CODE")
	ID=$(jfield "$HTTP_BODY" id) ETAG=$(header etag)
}
bad() { C_BAD+=("$*"); }
# finish EXPECT: old|new|b|gone: sweep through B, then the checks.
finish() {
	local expect=$1 r want f
	: >"$FP_A"
	wait_up || bad "host A did not come back"
	sql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND, expires_at = NOW(6) - INTERVAL 1 SECOND,
	     touched_at = NOW(6) - INTERVAL 7200 SECOND WHERE document_id = ${ID:-0} AND state IN ('retired', 'pending')"
	chaos_sweep "$work/cli-b.conf" "$work/sweep.log"
	[ "$SWEEP_RC" = 0 ] || bad "the sweep through B exited $SWEEP_RC"
	r=$(chaos_verify "$P" "$work/before" "${ID:-0}")
	[ -z "$r" ] || bad "$(tr '\n' ';' <<<"$r")"
	r=$(reads "${ID:-0}")
	if [ "$expect" = gone ]; then
		[ "$r" = 404/404 ] || bad "expected gone, hosts read $r"
	else
		f=$work/$expect.bin
		want=$(sha <"$f")
		[ "$r" = 200/200 ] && [ "$(sha <"$work/read.A")" = "$want" ] && [ "$(sha <"$work/read.B")" = "$want" ] ||
			bad "expected $expect.bin's bytes, hosts read $r"
	fi
	ROWS+=("$(printf '%-68s %-22s %-5s %s' "$C_LABEL" "${C_CODES# }" "$expect" "$([ ${#C_BAD[@]} = 0 ] && echo ok || echo FAIL)")")
	ok "$([ ${#C_BAD[@]} = 0 ]; echo $?)" "$C_LABEL: answered ${C_CODES# }; after B's sweep both hosts read $expect"
	for r in "${C_BAD[@]}"; do diag "  $r"; done
	[ ${#C_BAD[@]} = 0 ] || sed -e 's/^/#   sweep: /' "$work/sweep.log" | tail -n 10
}
code() { C_CODES+=" $1"; }

# ---- replace crashes on A; B reads at once, B's sweeper resolves it ----------
for cellspec in replace.after_intent:old replace.after_upload:old replace.after_tag:old replace.after_commit:new; do
	point=${cellspec%%:*} expect=${cellspec#*:}
	begin "replace on A, crash at $point"
	printf '%s exit once\n' "$point" >"$FP_A"
	code "$(send "$A" put "$ID" "$work/new.bin")"
	fired "$point" || bad "$point did not fire"
	r=$(reads "$ID")
	want=$(sha <"$work/$expect.bin")
	[ "$r" = 200/200 ] && [ "$(sha <"$work/read.B")" = "$want" ] ||
		bad "before the sweep, B read $r, not $expect.bin's bytes"
	code "read:$r"
	finish "$expect"
done

# ---- the same crashes, then a second writer through B --------------------------
for point in replace.after_intent replace.after_upload replace.after_tag; do
	begin "replace on A crashes at $point, B replaces"
	printf '%s exit once\n' "$point" >"$FP_A"
	code "$(send "$A" put "$ID" "$work/new.bin")"
	fired "$point" || bad "$point did not fire"
	c=$(send "$B" put "$ID" "$work/b.bin")
	code "B:$c"
	[ "$c" = 200 ] || bad "B's replace answered $c"
	finish b
done
begin "replace on A commits then crashes, B replaces with A's old If-Match"
printf 'replace.after_commit exit once\n' >"$FP_A"
code "$(send "$A" put "$ID" "$work/new.bin")"
c=$(send "$B" put "$ID" "$work/b.bin" "$ETAG")
code "B:$c"
[ "$c" = 412 ] || bad "B's stale If-Match answered $c, not 412"
finish new

# ---- a replace on A held after its read, raced by B --------------------------------
# held_a POINT OP ID [FILE] [IF-MATCH]: A's request in the background, held
# HOLD_MS at POINT (after its read, inside its commit transaction); returns
# once it is held.  Its status lands in $work/a.code.
held_a() {
	local point=$1
	shift
	printf '%s sleep:%s once\n' "$point" "$HOLD_MS" >"$FP_A"
	send "$A" "$@" >"$work/a.code" &
	APID=$!
	wait_fired "$point" || bad "$point did not fire"
}
begin "replace on A held after read, B deletes"
held_a replace.commit_after_read put "$ID" "$work/new.bin"
c=$(send "$B" delete "$ID")
wait "$APID"
code "A:$(cat "$work/a.code") B:$c"
[ "$c" = 204 ] || bad "B's delete answered $c"
[ "$(cat "$work/a.code")" = 404 ] || bad "A's replace of a deleted document answered $(cat "$work/a.code"), not 404"
finish gone

begin "replace on A held after read, B replaces, one If-Match"
held_a replace.commit_after_read put "$ID" "$work/new.bin" "$ETAG"
c=$(send "$B" put "$ID" "$work/b.bin" "$ETAG")
wait "$APID"
code "A:$(cat "$work/a.code") B:$c"
[ "$c" = 200 ] && [ "$(cat "$work/a.code")" = 412 ] || bad "wanted A 412, B 200"
finish b

# ---- delete crashes on A after its commit -----------------------------------------
begin "delete on A, crash at delete.after_commit"
printf 'delete.after_commit exit once\n' >"$FP_A"
code "$(send "$A" delete "$ID")"
fired delete.after_commit || bad "delete.after_commit did not fire"
r=$(reads "$ID")
code "read:$r"
[ "$r" = 404/404 ] || bad "the committed delete reads $r before the sweep"
c=$(send "$B" put "$ID" "$work/b.bin")
code "B:$c"
[ "$c" = 404 ] || bad "B's replace of the deleted document answered $c"
finish gone

# ---- a delete on A held after its read, raced by B ---------------------------------
begin "delete on A held after read, B replaces"
held_a delete.commit_after_read delete "$ID"
c=$(send "$B" put "$ID" "$work/b.bin")
wait "$APID"
code "A:$(cat "$work/a.code") B:$c"
[ "$c" = 200 ] && [ "$(cat "$work/a.code")" = 204 ] || bad "wanted B 200, then A's delete (run again) 204"
finish gone

begin "delete on A held after read, B replaces, one If-Match"
held_a delete.commit_after_read delete "$ID" "" "$ETAG"
c=$(send "$B" put "$ID" "$work/b.bin" "$ETAG")
wait "$APID"
code "A:$(cat "$work/a.code") B:$c"
[ "$c" = 200 ] && [ "$(cat "$work/a.code")" = 412 ] || bad "wanted B 200, A 412"
finish b

diag "$(printf '%-68s %-22s %-5s %s' cell answers after '')"
for r in "${ROWS[@]}"; do diag "$r"; done
done_testing
