#!/usr/bin/env bash
# Two `bindery sweep` runs at once, each through a config that prefers a
# different Galera node (BINDERY_CONFIGS): every stale item is handled by
# exactly one of them.  Planted per round (SQL as root on node 1, blobs
# through blobtool): ITEMS/2 expired pending create intents, each with its
# pending document and a blob tagged pending, and ITEMS/2 due outbox rows
# (retired, retire_after past) with blobs tagged retired.  A claim is one
# conditional UPDATE: when two nodes claim one row, certification lets one
# write set through and the other statement runs again and claims other
# rows.  Proof of exactly once: both runs exit 0 with no problem and
# nothing deferred, their handled counts (deleted + outbox) sum to ITEMS,
# no row and no blob of the round is left (on both nodes), and
# `bindery audit` finds the prefix clean.  Then both with `--lock` on one
# name: one sweeps everything, the other exits 75.  Before that a single
# sweeper's round gives the items/s to compare with (diagnostics: the
# doc/scaling.md's figures).  CLUSTER_SWEEP_ITEMS (default 2000)
# sets the round's size.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cluster/env.sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
command -v jq >/dev/null || bail_out "jq is not installed"

items=${CLUSTER_SWEEP_ITEMS:-2000}
half=$((items / 2))
[ "$half" -ge 1 ] || bail_out "CLUSTER_SWEEP_ITEMS must be at least 2"
read -r conf_a conf_b _ <<<"$BINDERY_CONFIGS"
read -r sock1 sock2 _ <<<"$DB_NODE_SOCKETS"
[ -n "$conf_b" ] && [ -n "$sock2" ] || bail_out "two configs and two nodes needed"
blobtool=$BINDERY_BIN/../tests/tools/blobtool
if [ ! -x "$blobtool" ]; then
	make -s -C "$BINDERY_BIN/.." tests/tools/blobtool >/dev/null 2>&1 ||
		bail_out "could not build tests/tools/blobtool"
fi
conf_get() { sed -n "/^\[$2\]/,/^\[/s/^$3 = //p" "$1" | head -n 1; }
dbname=$(conf_get "$conf_a" database name)
export BINDERY_TEST_BLOB_ENDPOINT=$BLOB_ENDPOINT
export BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY BLOBTOOL_CONTAINER
BINDERY_TEST_BLOB_ACCOUNT=$(conf_get "$conf_a" storage account)
BINDERY_TEST_BLOB_KEY=$(conf_get "$conf_a" storage key)
BLOBTOOL_CONTAINER=$(conf_get "$conf_a" storage container)
# A configured storage prefix goes before every blob name (--prefix adds to it).
sprefix=$(conf_get "$conf_a" storage prefix)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nsql() { # NODE-SOCKET SQL
	mariadb --no-defaults --protocol=socket --socket="$1" -uroot -N -B "$dbname" -e "$2"
}
now() { date +%s.%N; }
printf 'stale bytes\n' >"$work/bytes"

# plant RUN: ITEMS stale items named RUN-i-NNNNN (intents) and RUN-o-NNNNN
# (outbox); returns nonzero when any part failed.
plant() {
	local run=$1 p=$sprefix$1
	nsql "$sock1" "
		INSERT INTO documents (name, status, blob_name, content_type, owner)
		SELECT CONCAT('$run-i-', LPAD(seq, 5, '0')), 'pending',
		       CONCAT('$p-i-', LPAD(seq, 5, '0')), 'text/plain', 'sweeptest'
		FROM seq_1_to_$half;
		INSERT INTO blobs (name, document_id, purpose, state, touched_at, expires_at)
		SELECT blob_name, id, 'create', 'pending', NOW(6) - INTERVAL 7200 SECOND,
		       NOW(6) - INTERVAL 60 SECOND
		FROM documents WHERE name LIKE '$run-i-%';
		INSERT INTO blobs (name, document_id, purpose, state, touched_at, expires_at, retire_after)
		SELECT CONCAT('$p-o-', LPAD(seq, 5, '0')), 0, 'replace', 'retired',
		       NOW(6) - INTERVAL 7200 SECOND, NULL, NOW(6) - INTERVAL 60 SECOND
		FROM seq_1_to_$half" || return 1
	# xargs appends NAME STATE: in sh -c, $0 is blobtool, $1 the bytes.
	{
		seq -f "$p-i-%05g pending" 1 "$half"
		seq -f "$p-o-%05g retired" 1 "$half"
	} | xargs -P 4 -L 1 sh -c '"$0" put "$2" "$1" "state=$3" >/dev/null' "$blobtool" "$work/bytes" ||
		return 1
}
# rows RUN SOCKET: the round's registry and document rows left on a node.
rows() {
	nsql "$2" "SELECT (SELECT COUNT(*) FROM blobs WHERE name LIKE '$sprefix$1-%')
		+ (SELECT COUNT(*) FROM documents WHERE name LIKE '$1-%')"
}
# audit_of RUN: blobs listed and findings under the round's prefix, and the exit status.
audit_of() {
	local rc
	"$BINDERY_BIN/bindery" -c "$conf_a" audit --json --prefix "$1" >"$work/audit.json" 2>"$work/audit.err"
	rc=$?
	printf '%s %s %s\n' "$(jq -r '.counts.blobs_listed' "$work/audit.json" 2>/dev/null)" \
		"$(jq -r '.findings | length' "$work/audit.json" 2>/dev/null)" "$rc"
}
# sweep_bg NAME CONF [ARGS...]: a sweep of the round in the background,
# its report in $work/NAME.out, its log in NAME.err, its status in NAME.rc.
sweep_bg() {
	local name=$1 conf=$2
	shift 2
	{
		BINDERY_LOG_STDERR=1 "$BINDERY_BIN/bindery" -c "$conf" sweep -v "$@" \
			>"$work/$name.out" 2>"$work/$name.err"
		echo $? >"$work/$name.rc"
	} &
}
# counts NAME: "handled problems deferred" from a run's -v report line
# (handled = dropped + deleted + purged + rolled forward + rolled back + outbox).
counts() {
	grep '^sweep:' "$work/$1.out" | grep -o '[0-9][0-9.]*' | tr '\n' ' ' |
		awk '{ print $1 + $2 + $3 + $4 + $5 + $6, $9, $10 }'
}
retried() { grep -c 'transaction retried' "$work/$1.err"; }

# Round 1: one sweeper, for the rate to compare with.
run1=cl-sw1-$$-$RANDOM
t0=$(now)
plant "$run1"
is "$?" 0 "round 1: planted $items stale items in $(printf '%.1f' "$(echo "$(now) - $t0" | bc)") s"
is "$(audit_of "$run1" | cut -d' ' -f1)" "$items" "... all $items blobs are there"
t0=$(now)
sweep_bg one "$conf_a" --prefix "$run1"
wait
t1=$(now)
read -r h1 p1 d1 <<<"$(counts one)"
is "$(cat "$work/one.rc")" 0 "one sweeper: exit 0"
is "$h1 $p1 $d1" "$items 0 0" "... $items handled, no problem, nothing deferred"
is "$(rows "$run1" "$sock1")" 0 "... no row left"
rate1=$(echo "$items / ($t1 - $t0)" | bc)
diag "one sweeper: $items items in $(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s = $rate1 items/s"

# Round 2: two sweepers at once, through node 1 and node 2.
run2=cl-sw2-$$-$RANDOM
plant "$run2"
is "$?" 0 "round 2: planted $items stale items"
t0=$(now)
sweep_bg a "$conf_a" --prefix "$run2"
sweep_bg b "$conf_b" --prefix "$run2"
wait
t1=$(now)
read -r ha pa da <<<"$(counts a)"
read -r hb pb db <<<"$(counts b)"
is "$(cat "$work/a.rc") $(cat "$work/b.rc")" "0 0" "two sweepers on two nodes: both exit 0"
is "$((ha + hb))" "$items" "... their handled counts sum to $items ($ha + $hb): none twice, none missed"
is "$pa $da $pb $db" "0 0 0 0" "... no problem, nothing deferred"
is "$(rows "$run2" "$sock1") $(rows "$run2" "$sock2")" "0 0" "... no row left on node 1 nor node 2"
read -r listed findings arc <<<"$(audit_of "$run2")"
is "$listed $findings $arc" "0 0 0" "... no blob left; bindery audit clean (blobs, findings, exit)"
if [ "$((pa + da + pb + db))" != 0 ]; then
	grep -vh 'transaction retried' "$work/a.err" "$work/b.err" | sort | uniq -c | sort -rn | head -n 8 |
		while read -r line; do diag "log: $line"; done
fi
[ "$ha" -gt 0 ] && [ "$hb" -gt 0 ] || diag "one sweeper did all the work this time ($ha / $hb)"
rate2=$(echo "$items / ($t1 - $t0)" | bc)
diag "two sweepers: $items items in $(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s = $rate2 items/s (one: $rate1); transaction retries $(retried a) + $(retried b)"

# Round 3: both with --lock on one name: one sweeps, the other exits 75.
run3=cl-sw3-$$-$RANDOM
plant "$run3"
is "$?" 0 "round 3: planted $items stale items"
sweep_bg la "$conf_a" --prefix "$run3" --lock "$run3"
sweep_bg lb "$conf_b" --prefix "$run3" --lock "$run3"
wait
rcs=$(printf '%s\n' "$(cat "$work/la.rc")" "$(cat "$work/lb.rc")" | sort -n | tr '\n' ' ')
is "$rcs" "0 75 " "--lock on both: one exits 0, the other 75"
if [ "$(cat "$work/la.rc")" = 0 ]; then winner=la; else winner=lb; fi
read -r hw pw dw <<<"$(counts "$winner")"
is "$hw $pw $dw" "$items 0 0" "... the one that ran handled all $items, no problem, nothing deferred"
is "$(rows "$run3" "$sock1") $(rows "$run3" "$sock2")" "0 0" "... no row left on either node"
read -r listed findings arc <<<"$(audit_of "$run3")"
is "$listed $findings $arc" "0 0 0" "... no blob left; bindery audit clean"
is "$(nsql "$sock2" "SELECT COUNT(*) FROM sweep_locks WHERE name = '$run3' AND holder IS NULL")" 1 \
	"... and the lock row is free again"
nsql "$sock1" "DELETE FROM sweep_locks WHERE name = '$run3'" >/dev/null
done_testing
