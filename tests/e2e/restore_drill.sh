#!/usr/bin/env bash
# Restore drill (doc/operating.md, "Restoring the database"): the database
# is restored from an older backup while storage kept today's blobs, and
# `bindery audit --repair --adopt` makes it right.  On a database of its own
# (a restore must not rewind the lane's rows), with its own blob prefix,
# served by bindery.fcgi run as CGI.
#
# Documents A exist at the backup (mariadb-dump).  After it: B created,
# some A replaced, some A deleted (some of their blobs drained by the
# outbox, some still within the retire grace), some B created and deleted.
# The dump is restored; a dry run changes nothing; a repair crashed half-way
# (a failpoint) and run again leaves: every B and every replaced A reading
# back its newest bytes, every deleted A and B answering 404, the ids and
# names the API answered before, no new document on an id a blob names, and
# a clean audit.  With [events] on: the repair writes document.ready for
# every document it made again or moved to a newer version and
# document.deleted for every one it deleted, and the next sweep delivers
# them (signed, to a receiver of the drill's own).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/db.sh"
. "$top/tests/lib/webhook.sh"
. "$top/tests/lib/chaos.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_TOKEN BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
command -v mariadb-dump >/dev/null || missing "mariadb-dump"
bindery=$BINDERY_TEST_BIN/bindery
work=$(mktemp -d)
rdb=bindery_rd$$
run=rd$$x$RANDOM
# rsql QUERY: the drill's own database, as root.
rsql() {
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
		-N -B "$rdb" -e "$1"
}
rx_pid=
cleanup() {
	webhook_stop "$rx_pid"
	az_remove_prefix "$run/"
	# DROP DATABASE leaves its grants behind: revoke them too, or the lane's
	# runtime account keeps rights on a database that is gone (grants.sh
	# checks the account holds its own and nothing else).
	[ -s "$work/revokes.sql" ] && sql "$(cat "$work/revokes.sql")" 2>/dev/null
	sql "DROP DATABASE IF EXISTS $rdb" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# ---- a database, a prefix and a configuration of its own ----
sql "DROP DATABASE IF EXISTS $rdb; CREATE DATABASE $rdb" || bail_out "cannot create $rdb"
db_user=$(sed -n 's/^user = //p' "$BINDERY_CONFIG" | head -n 1)
sql "SELECT CONCAT('GRANT SELECT, INSERT, UPDATE, DELETE ON $rdb.* TO ', QUOTE(user), '@', QUOTE(host))
	FROM mysql.user WHERE user = $(sql_quote "$db_user")" >"$work/grants.sql"
sql "SELECT CONCAT('REVOKE ALL PRIVILEGES ON $rdb.* FROM ', QUOTE(user), '@', QUOTE(host), ';')
	FROM mysql.user WHERE user = $(sql_quote "$db_user")" >"$work/revokes.sql"
while read -r g; do sql "$g" || bail_out "cannot grant on $rdb"; done <"$work/grants.sql"
# retire_grace 1: the outbox drains a blob a second after its delete.
set_conf() { # IN OUT
	sed -e "s/^name = .*/name = $rdb/" -e "s|^container = \\(.*\\)|container = \\1\\nprefix = $run/|" \
		-e "s/^\\[limits\\]/[limits]\\nretire_grace = 1/" "$1" >"$2"
	chmod 0600 "$2"
}
webhook_start "$work/rx"
rx_pid=$WEBHOOK_PID
set_conf "$BINDERY_CONFIG" "$work/rt.conf"
printf '[events]\nurl = %s\nsecret_file = %s\nbackoff_max = 1\n' "$WEBHOOK_URL" "$WEBHOOK_SECRET" >>"$work/rt.conf"
set_conf "$BINDERY_TEST_MIGRATE_CONFIG" "$work/mig.conf"
"$bindery" -c "$work/mig.conf" migrate >"$work/migrate.out" 2>&1 ||
	bail_out "migrate $rdb: $(head -c 300 "$work/migrate.out")"

auth=HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN"
# api METHOD URI [FILE]: one request; CGI_CODE, and BODY its body.
api() {
	local method=$1 uri=$2 file=${3:-/dev/null}
	cgi_run "$work/answer" "$work/rt.conf" "$method" "$uri" "$auth" \
		CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$(stat -c %s "$file")" <"$file"
	BODY=$(cgi_body "$work/answer")
}
declare -A id file
# create KEY NAME: a new document of a fresh random body.
create() {
	head -c $((1000 + RANDOM % 5000)) /dev/urandom >"$work/$1.1"
	api POST "/documents?name=$(urlenc "$2")" "$work/$1.1"
	[ "$CGI_CODE" = 201 ] || fail "create $2: $CGI_CODE $BODY"
	id[$1]=$(jfield "$BODY" id)
	file[$1]=$work/$1.1
}
# replace KEY: new bytes for it.
replace() {
	local n=$(($(ls "$work/$1".* | wc -l) + 1))
	head -c $((1000 + RANDOM % 5000)) /dev/urandom >"$work/$1.$n"
	api PUT "/documents/${id[$1]}/content" "$work/$1.$n"
	[ "$CGI_CODE" = 200 ] || fail "replace $1: $CGI_CODE $BODY"
	file[$1]=$work/$1.$n
}
delete() {
	api DELETE "/documents/${id[$1]}"
	[ "$CGI_CODE" = 204 ] || fail "delete $1: $CGI_CODE $BODY"
	file[$1]=gone
}
# listing: "id name" of every ready document, sorted.
listing() {
	api GET "/documents?limit=1000"
	printf '%s' "$BODY" | jq -r '.documents[] | "\(.id) \(.name)"' | sort
}

for k in A1 A2 A3 A4 A5 A6; do create "$k" "$run-$k"; done
mariadb-dump --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
	--single-transaction "$rdb" >"$work/backup.sql"
ok $? "the backup: mariadb-dump with A1..A6"

create B1 "$run-B1"
create B2 "$run-B2-r$(printf '\xc3\xa9')sum$(printf '\xc3\xa9') 100%"
create B3 "$run-B3"
create B4 "$run-B4"
replace A2
replace A3
replace B4
delete A1
delete A4
delete B3
sleep 1.2
"$bindery" -c "$work/rt.conf" sweep >"$work/sweep.out" 2>&1
is "$(rsql "SELECT COUNT(*) FROM blobs WHERE state = 'retired'")" 0 \
	"the outbox drained the blobs of A1, A4 and B3 and the old ones of A2, A3, B4"
# Within the grace: their blobs are still there, tagged retired.
replace A2
replace B1
delete A5
create B5 "$run-B5"
delete B5
is "$(rsql "SELECT COUNT(*) FROM blobs WHERE state = 'retired'")" 4 \
	"... and four are within the grace (A2's second, B1's old, A5's, B5's)"
listing >"$work/before.list"
is "$(wc -l <"$work/before.list")" 6 "the API lists A2 A3 A6 B1 B2 B4, nothing deleted"

# ---- the restore: writes stay off until the repair has run ----
rx_before=$(wc -l <"$WEBHOOK_EVENTS")
{ echo "DROP DATABASE $rdb; CREATE DATABASE $rdb; USE $rdb;"; cat "$work/backup.sql"; } |
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot
ok $? "the backup restored over the database"
is "$(rsql "SELECT GROUP_CONCAT(name ORDER BY id) FROM documents")" \
	"$run-A1,$run-A2,$run-A3,$run-A4,$run-A5,$run-A6" "... which knows A1..A6 only, at their first versions"
"$bindery" -c "$work/rt.conf" audit >"$work/audit0.out" 2>&1
is "$?" 2 "the audit after the restore: dangling documents (exit 2)"
like "$(cat "$work/audit0.out")" 'adoptable' "... and adoptable blobs"
# (--min-age: the retired orphans stay, so B5's blob still names its id)
"$bindery" -c "$work/rt.conf" audit --repair --min-age 3600 >"$work/audit1.out" 2>&1
sed 's/^/# repair: /' "$work/audit1.out"
is "$(grep -c '\[deleted\]' "$work/audit1.out")" 0 "--repair without --adopt deletes no blob"
is "$(grep -c '^adoptable' "$work/audit1.out")" 5 "... the five acknowledged ones it reports as adoptable"
like "$(cat "$work/audit1.out")" "tagged retired \[retired: deleted or replaced after a restored backup" \
	"... and it tags no retired blob committed again"
state() { rsql "SELECT id, name, version, blob_name, status FROM documents ORDER BY id; SELECT name, state FROM blobs ORDER BY name"; }
state >"$work/restored.state"
"$bindery" -c "$work/rt.conf" audit --repair --adopt --dry-run >"$work/dry.out" 2>&1
state >"$work/dry.state"
cmp -s "$work/restored.state" "$work/dry.state"
ok $? "--dry-run changes no row"
diff "$work/restored.state" "$work/dry.state" | sed 's/^/# /' 
like "$(cat "$work/dry.out")" "document ${id[B1]} \"$run-B1\" \(owner demo\): would make it again" \
	"... and prints each decision: B1 made again"
like "$(cat "$work/dry.out")" "document ${id[A2]} \"$run-A2\": would move from blob" "... A2 moved to its newest"
like "$(cat "$work/dry.out")" "document ${id[A1]} \"$run-A1\": would delete it: its blob .* is gone" \
	"... A1 deleted (its blob gone, by Get Blob Properties)"
like "$(cat "$work/dry.out")" "document ${id[A5]} \"$run-A5\": would delete it: its blob .* is tagged retired" \
	"... A5 deleted (its blob retired, within the grace)"

# ---- the repair, crashed after its first step, then run again ----
BINDERY_FAILPOINTS=adopt.after_step=exit "$bindery" -c "$work/rt.conf" audit --repair --adopt \
	>"$work/crash.out" 2>&1
is "$?" 137 "the repair crashed half-way (after its first step)"
"$bindery" -c "$work/rt.conf" audit --repair --adopt >"$work/repair.out" 2>&1
is "$?" 0 "run again, it finishes and the audit after it is clean"
sed 's/^/# /' "$work/repair.out"
# The repair's events: what the receiver got after the restore.
"$bindery" -c "$work/rt.conf" sweep >"$work/sweep2.out" 2>&1
rx_events() { tail -n +$((rx_before + 1)) "$WEBHOOK_EVENTS" | jq -r "$1"; }
is "$(rx_events 'select(.status == 204 and .body.type == "document.deleted") | .body.data.id' | sort -n | uniq | tr '\n' ' ')" \
	"$(printf '%s\n' "${id[A1]}" "${id[A4]}" "${id[A5]}" | sort -n | tr '\n' ' ')" \
	"the repair's events: document.deleted for A1, A4, A5, delivered by the next sweep"
for k in A2 A3 B1 B2 B4; do
	is "$(rx_events "select(.status == 204 and .body.type == \"document.ready\" and .body.data.id == \"${id[$k]}\") | [.body.data.version, .body.data.sha256] | @tsv" | sort -u)" \
		"$(printf '%s\t%s' "$(rsql "SELECT version FROM documents WHERE id = ${id[$k]}")" "$(sha <"${file[$k]}")")" \
		"... document.ready for $k at its adopted version, with its newest bytes' SHA-256"
done
is "$(rx_events 'select(.status == 204) | .body.data.id' | sort -u | wc -l)" 8 "... and for no other document"
is "$(rx_events 'select(.valid | not)' | wc -l)" 0 "... each signed with the receiver's secret"
"$bindery" -c "$work/rt.conf" audit --repair --adopt >"$work/again.out" 2>&1
like "$(cat "$work/again.out")" 'adopt: 0 made again, 0 moved to a newer version, 0 deleted, 0 into the outbox' \
	"a third run finds nothing left to do"

for k in A2 A3 A6 B1 B2 B4; do
	cgi_run "$work/answer" "$work/rt.conf" GET "/documents/${id[$k]}/content" "$auth" </dev/null
	# The body's bytes, untouched: everything after the first blank line.
	perl -0777 -ne 'print substr($_, index($_, "\r\n\r\n") + 4)' "$work/answer" >"$work/got.$k"
	is "$CGI_CODE $(sha <"$work/got.$k")" "200 $(sha <"${file[$k]}")" "$k reads back its newest bytes"
done
for k in A1 A4 A5 B3 B5; do
	api GET "/documents/${id[$k]}"
	is "$CGI_CODE" 404 "$k, deleted after the backup, answers 404"
done
listing >"$work/after.list"
diff "$work/before.list" "$work/after.list" | sed 's/^/# /'
cmp -s "$work/before.list" "$work/after.list"
ok $? \
	"the ids and names the API answered before the restore are the ones it answers after"
"$bindery" -c "$work/rt.conf" audit >"$work/audit.out" 2>&1
is "$?" 0 "audit is clean"
sed 's/^/# /' "$work/audit.out"
create C1 "$run-C1"
highest=${id[B5]}	# its blob, retired within the grace, names the highest id
[ "${id[C1]}" -gt "$highest" ]
ok $? "a new document takes an id past every id a blob names (${id[C1]} > $highest)"
sql "$(cat "$work/revokes.sql")" && : >"$work/revokes.sql"
is "$(sql "SELECT COUNT(*) FROM mysql.db WHERE Db = $(sql_quote "$rdb")")" 0 \
	"the drill's grants are revoked (the runtime account keeps only its own)"
az_remove_checked "$run/"
done_testing
