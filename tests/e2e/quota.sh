#!/usr/bin/env bash
# Quotas ([quota]; doc/design.md, "Quotas"): each owner's bytes, documents
# and uploads in flight, reserved with the intent by one conditional UPDATE
# and settled once by whatever ends it.  On a database of the test's own
# (its owners start empty), [limits] max_upload 1M:
#   - bytes_per_owner 2M: creates up to it are 201, the one past it is 413
#     quota_exceeded before a byte is stored; a delete gives room back; a
#     replace is counted by the difference and one past the limit is 413
#     and leaves the document as it was;
#   - pending_per_owner 3: a fourth tus upload in flight is 413 until one
#     ends; a tus partial upload (no document) reserves the same way;
#   - a direct upload whose client wrote more than it declared: finalize
#     422 size_mismatch, its bytes deleted at once, its row and reservation
#     kept until the sweep;
#   - documents_per_owner 6, 20 concurrent creates of one owner, half
#     through a lighttpd and half through an Apache mod_fcgid of the test's
#     own: exactly 6 are 201 and 14 are 413, never more documents than 6;
#   - after the sweep nothing is reserved; `bindery quota --recount`
#     (rebuilding from the rows) finds the figures kept as they were; the
#     audit is clean.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/stack.sh"
. "$top/tests/lib/direct.sh"

chaos_need_stack
need_stack BINDERY_TEST_BIN BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_TOKEN_OTHER
sql_session
command -v jq >/dev/null || missing "jq"
cli=$BINDERY_TEST_BIN/bindery
work=$(mktemp -d -p "$BINDERY_TEST_VAR")
chmod 0755 "$work"
qdb=bindery_quota$$
PREFIX=qt$$x$RANDOM/
NP=${PREFIX%/}-
cleanup() {
	stack_private_lighttpd_stop
	stack_private_apache_stop
	az_remove_prefix "$PREFIX"
	[ -s "$work/revokes.sql" ] && sql "$(cat "$work/revokes.sql")" 2>/dev/null
	sql "DROP DATABASE IF EXISTS $qdb" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- a database of its own, with the runtime account's rights on it ----
sql "CREATE DATABASE $qdb" || bail_out "cannot create $qdb"
db_user=$(sed -n 's/^user = //p' "$BINDERY_CONFIG" | head -n 1)
sql "SELECT CONCAT('GRANT SELECT, INSERT, UPDATE, DELETE ON $qdb.* TO ', QUOTE(user), '@', QUOTE(host))
	FROM mysql.user WHERE user = $(sql_quote "$db_user")" >"$work/grants.sql"
sql "SELECT CONCAT('REVOKE ALL PRIVILEGES ON $qdb.* FROM ', QUOTE(user), '@', QUOTE(host), ';')
	FROM mysql.user WHERE user = $(sql_quote "$db_user")" >"$work/revokes.sql"
while read -r g; do sql "$g" || bail_out "cannot grant on $qdb"; done <"$work/grants.sql"
# conf IN OUT QUOTA-LINES...: IN on the test's database and prefix, max_upload 1M, [quota] as given.
conf() {
	local in=$1 out=$2
	shift 2
	{
		sed -e "s/^name = .*/name = $qdb/" -e "s|^\\[storage\\]\$|[storage]\\nprefix = $PREFIX|" \
			-e 's/^max_upload = .*/max_upload = 1M/' "$in"
		printf '\n[quota]\n'
		printf '%s\n' "$@"
	} >"$out"
	chmod 0600 "$out"
}
conf "$BINDERY_TEST_MIGRATE_CONFIG" "$work/mig.conf" 'documents_per_owner = 6'
"$cli" -c "$work/mig.conf" migrate >"$work/migrate.out" 2>&1 || bail_out "migrate $qdb: $(tail -n 3 "$work/migrate.out")"
conf "$BINDERY_CONFIG" "$work/q.conf" 'bytes_per_owner = 2M' 'pending_per_owner = 3'
conf "$BINDERY_CONFIG" "$work/race.conf" 'documents_per_owner = 6'
grep -q '^max_upload = 1M$' "$work/q.conf" && grep -q "^name = $qdb\$" "$work/q.conf" ||
	bail_out "the test's configuration did not take"
qsql() { sql "USE $qdb; $1"; }
usage() { # OWNER: "bytes documents reserved pending"
	qsql "SELECT CONCAT_WS(' ', bytes, documents, reserved, pending) FROM owner_usage WHERE owner = '$1'"
}

bearer="HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN"
create() { # NAME SIZE: CODE, ID, BODY
	head -c "$2" /dev/urandom >"$work/body"
	cgi_run "$work/c.out" "$work/q.conf" POST "/documents?name=$NP$1" "$bearer" CONTENT_TYPE=text/plain \
		CONTENT_LENGTH="$2" <"$work/body"
	CODE=$CGI_CODE BODY=$(cgi_body "$work/c.out")
	ID=$(jfield "$BODY" id)
}
K=1024

# ---- bytes ----
create a $((600 * K))
is "$CODE" 201 "600 KiB: 201"
a=$ID
create b $((600 * K))
is "$CODE" 201 "another 600 KiB: 201"
create c $((900 * K))
is "$CODE $(jfield "$BODY" error)" "413 quota_exceeded" "900 KiB more would pass bytes_per_owner 2M: 413 quota_exceeded"
is "$(qsql "SELECT COUNT(*) FROM documents WHERE name = '${NP}c'")" 0 "... nothing of it stored (no row)"
is "$(usage demo)" "$((1200 * K)) 2 0 0" "the owner's figures: 1200 KiB in 2 documents, nothing reserved"
"$cli" -c "$work/q.conf" quota --json >"$work/quota.json" 2>&1
is "$(jq -r 'select(.owner == "demo") | "\(.bytes) \(.documents)"' "$work/quota.json")" "$((1200 * K)) 2" \
	"bindery quota --json shows them"
cgi_run "$work/d.out" "$work/q.conf" DELETE "/documents/$a" "$bearer" </dev/null
is "$CGI_CODE" 204 "a delete"
is "$(usage demo)" "$((600 * K)) 1 0 0" "... gives its 600 KiB back"
create c $((900 * K))
is "$CODE" 201 "now 900 KiB fits: 201"
c=$ID
head -c $((600 * K)) /dev/urandom >"$work/r1"
before=$(qsql "SELECT CONCAT(version, ' ', sha256) FROM documents WHERE id = $c")
cgi_run "$work/r.out" "$work/q.conf" PUT "/documents/$c/content" "$bearer" CONTENT_TYPE=text/plain \
	CONTENT_LENGTH=$((600 * K)) <"$work/r1"
is "$CGI_CODE $(jfield "$(cgi_body "$work/r.out")" error)" "413 quota_exceeded" \
	"a replace reserving 600 KiB more than the 1500 KiB stored would pass 2M: 413"
is "$(qsql "SELECT CONCAT(version, ' ', sha256) FROM documents WHERE id = $c")" "$before" "... the document as it was"
head -c $((100 * K)) /dev/urandom >"$work/r2"
cgi_run "$work/r.out" "$work/q.conf" PUT "/documents/$c/content" "$bearer" CONTENT_TYPE=text/plain \
	CONTENT_LENGTH=$((100 * K)) <"$work/r2"
is "$CGI_CODE" 200 "a replace by 100 KiB: 200"
is "$(usage demo)" "$((700 * K)) 2 0 0" "... counted by the difference: 700 KiB in 2 documents"

# ---- uploads in flight: pending_per_owner 3 ----
tus_new() { # NAME: CODE, LOC
	cgi_run "$work/t.out" "$work/q.conf" POST /uploads "$bearer" HTTP_TUS_RESUMABLE=1.0.0 HTTP_UPLOAD_LENGTH=1000 \
		HTTP_UPLOAD_METADATA="filename $(printf '%s' "$NP$1" | base64 -w0)" CONTENT_LENGTH=0 </dev/null
	CODE=$CGI_CODE
	LOC=$(tr -d '\r' <"$work/t.out" | sed -n 's/^Location: //Ip' | head -n 1)
}
tus_new t1; c1=$CODE; l1=$LOC
tus_new t2; c2=$CODE
tus_new t3; c3=$CODE
is "$c1 $c2 $c3" "201 201 201" "three tus uploads in flight: 201 each"
is "$(usage demo | cut -d' ' -f3-)" "3000 3" "... each reserves its Upload-Length: 3000 bytes, 3 pending"
tus_new t4
is "$CODE" 413 "a fourth in flight: 413 (pending_per_owner 3)"
terminate() { # LOCATION
	cgi_run "$work/x.out" "$work/q.conf" DELETE "$(printf '%s' "$1" | sed -E 's|^https?://[^/]+||')" "$bearer" \
		HTTP_TUS_RESUMABLE=1.0.0 </dev/null
}
terminate "$l1"
is "$CGI_CODE" 204 "one terminated"
tus_new t5
is "$CODE" 201 "... then another may start: 201"
terminate "$LOC"
is "$CGI_CODE $(usage demo | cut -d' ' -f3-)" "204 2000 2" "another terminated: its reservation settled"
# A tus partial upload (concatenation) is an intent of its own, with no
# document: it reserves like any upload, and is refused past the limit.
partial_new() {
	cgi_run "$work/t.out" "$work/q.conf" POST /uploads "$bearer" HTTP_TUS_RESUMABLE=1.0.0 HTTP_UPLOAD_LENGTH=1000 \
		HTTP_UPLOAD_CONCAT=partial CONTENT_LENGTH=0 </dev/null
	CODE=$CGI_CODE
	LOC=$(tr -d '\r' <"$work/t.out" | sed -n 's/^Location: //Ip' | head -n 1)
}
partial_new
is "$CODE $(usage demo | cut -d' ' -f3-)" "201 3000 3" "a partial upload reserves its Upload-Length like any upload"
pl=$LOC
partial_new
is "$CODE" 413 "... and another past pending_per_owner is 413"
terminate "$pl"
is "$CGI_CODE $(usage demo | cut -d' ' -f3-)" "204 2000 2" "... its termination settles it"

# ---- a direct upload that writes more than it declared ----
cgi_run "$work/dc.out" "$work/q.conf" POST /documents/direct "$bearer" CONTENT_TYPE=application/json \
	CONTENT_LENGTH=$(printf '{"name":"%sdirect","size":1000,"content_type":"text/plain"}' "$NP" | wc -c) \
	< <(printf '{"name":"%sdirect","size":1000,"content_type":"text/plain"}' "$NP")
direct_read_answer "$(cgi_body "$work/dc.out")"
is "$CGI_CODE" 201 "a direct upload declaring 1000 bytes"
is "$(usage demo | cut -d' ' -f3-)" "3000 3" "... reserves them (two tus uploads and it in flight)"
head -c 5000 /dev/urandom >"$work/more"
is "$(direct_put "$work/more")" 201 "... its client writes 5000 bytes (a SAS cannot cap a size)"
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
dblob=$(qsql "SELECT blob_name FROM documents WHERE id = ${ID:-0}")
cgi_run "$work/f.out" "$work/q.conf" POST "$FINALIZE" "$bearer" CONTENT_LENGTH=0 </dev/null
is "$CGI_CODE $(jfield "$(cgi_body "$work/f.out")" error)" "422 size_mismatch" "finalize: 422 size_mismatch"
"$blobtool" stat "$dblob" >/dev/null 2>&1
is "$?" 1 "... its 5000 bytes deleted at once"
is "$(qsql "SELECT status FROM documents WHERE id = ${ID:-0}") $(usage demo | cut -d' ' -f3-)" "pending 3000 3" \
	"... its row and reservation kept until the sweep"

# ---- 20 concurrent creates of one owner, through lighttpd and Apache ----
stack_private_servers quota "$work/race.conf" 18510 ||
	bail_out "the test's lighttpd and Apache did not start (log in $STACK_LOG)"
lighttpd_url=$PRIVATE_LIGHTTPD_URL apache_url=$PRIVATE_APACHE_URL
printf 'small\n' >"$work/small"
pids=()
for i in $(seq 1 20); do
	url=$lighttpd_url
	[ $((i % 2)) = 0 ] && url=$apache_url
	curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $BINDERY_TEST_TOKEN_OTHER" \
		-H 'Content-Type: text/plain' --data-binary "@$work/small" "$url/documents?name=${NP}race-$i" \
		>"$work/rc.$i" &
	pids+=($!)
done
# Recounts while the creates run: a reservation racing a recount is never lost.
for _ in 1 2 3; do "$cli" -c "$work/race.conf" quota --recount >>"$work/race-recount.out" 2>&1 || echo failed >>"$work/race-recount.out"; done &
pids+=($!)
wait "${pids[@]}"
is "$(grep -c failed "$work/race-recount.out")" 0 "three recounts ran beside them"
is "$(cat "$work"/rc.* | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" "201:6 413:14 " \
	"20 concurrent creates, documents_per_owner 6: six 201, fourteen 413"
other=$(qsql "SELECT DISTINCT owner FROM documents WHERE name LIKE '${NP}race-%'")
is "$(qsql "SELECT COUNT(*) FROM documents WHERE owner = '$other'")" 6 "... never more than 6 documents"
is "$(usage "$other" | cut -d' ' -f2-)" "6 0 0" "... and the owner's figures say 6, nothing reserved"

# ---- the sweep settles what is left; a recount agrees ----
qsql "UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE state = 'pending'"
sed "s|^prefix = $PREFIX\$|prefix = ${PREFIX%/}|" "$work/q.conf" >"$work/sweep.conf"
"$cli" -c "$work/sweep.conf" sweep --older-than 0 --force --prefix / >"$work/sweep.out" 2>&1
ok $? "a sweep resolves the uploads left in flight ($(tail -n 1 "$work/sweep.out"))"
is "$(usage demo)" "$((700 * K)) 2 0 0" "... their reservations settled: 700 KiB in 2 documents, nothing reserved"
qsql "SELECT owner, bytes, documents, reserved, pending FROM owner_usage ORDER BY owner" >"$work/kept"
"$cli" -c "$work/q.conf" quota --recount >"$work/recount.out" 2>&1
ok $? "bindery quota --recount ($(head -n 1 "$work/recount.out"))"
qsql "SELECT owner, bytes, documents, reserved, pending FROM owner_usage ORDER BY owner" >"$work/recounted"
diff "$work/kept" "$work/recounted" | sed 's/^/# /'
cmp -s "$work/kept" "$work/recounted"
ok $? "the figures kept transaction by transaction are the ones a recount from the rows finds"
"$cli" -c "$work/q.conf" status --json >"$work/status.json" 2>/dev/null
is "$(jq -r '.quota[] | select(.owner == "demo") | "\(.bytes) \(.documents) \(.reserved) \(.pending)"' "$work/status.json")" \
	"$((700 * K)) 2 0 0" "bindery status --json shows each owner's usage"
# A restore rewinds the figures with the rows: the repair after it recounts.
qsql "UPDATE owner_usage SET bytes = 0, documents = 0"
"$cli" -c "$work/q.conf" audit --repair --adopt >"$work/adopt.out" 2>&1
like "$(cat "$work/adopt.out")" 'quota: [0-9]+ owners recounted' "audit --repair --adopt recounts the owners' figures"
qsql "SELECT owner, bytes, documents, reserved, pending FROM owner_usage ORDER BY owner" >"$work/readopted"
cmp -s "$work/kept" "$work/readopted"
ok $? "... back to what they were"
"$cli" -c "$work/q.conf" audit >"$work/audit.out" 2>&1
is "$?" 0 "bindery audit is clean"
az_remove_checked "$PREFIX"
done_testing
