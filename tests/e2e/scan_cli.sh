#!/usr/bin/env bash
# `bindery scan` (doc/design.md, "Admission"): ready documents' committed
# bytes through clamd again, after a signature update, against a clamd of
# the test's own (tests/lib/clamd.sh: Debian's clamd with one signature,
# EICAR's, built by sigtool here).  Documents go in through the responder
# (a CGI run) under a configuration WITHOUT [scan], as they did before the
# scanner knew them; the command runs with one that has it:
#   - it names the EICAR document (id, name, owner, signature), not the
#     clean ones, in text and in JSON; exit 2; without [scan] clamd: 78;
#   - --quarantine: the document is gone from GET /documents (plain, by
#     name, by prefix), GET /documents/ID, its download and the page (list
#     and count), a replace is 404, while its row stays ready, its blob
#     committed and in storage; the sweep leaves it, the audit is clean;
#     its commit, lost once (a failpoint), is found and done again;
#   - --release ID brings it back (200, the same bytes); releasing again,
#     an id that is no ready document, a malformed one: 1, 1, 64;
#   - quarantined, its owner may still delete it (204);
#   - a document whose bytes were changed behind bindery's back (EICAR put
#     through a SAS onto a clean document's blob) is reported changed,
#     never infected, and not quarantined;
#   - a clamd limit answer (StreamMaxLength below a document's size) is
#     "not scanned", never clean: exit 1;
#   - clamd stopped: exit 69 and a message naming it.
# `bindery audit` is clean at each step that leaves no changed bytes.  Its
# documents live in a database of its own, under a storage prefix of its
# own.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"
. "$top/tests/lib/clamd.sh"

chaos_need_stack
need_stack BINDERY_TEST_MIGRATE_CONFIG BINDERY_TEST_BIN
clamd_need
command -v jq >/dev/null || missing "jq"
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
work=$(mktemp -d -p "$BINDERY_TEST_VAR") || bail_out "no work directory"
chmod 0755 "$work"
DBNAME=bindery_scan$$
PREFIX=scan$$x$RANDOM/
cleanup() {
	clamd_stop
	az_remove_prefix "$PREFIX"
	sql "DROP DATABASE IF EXISTS $DBNAME" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
bearer="HTTP_AUTHORIZATION=Bearer $BINDERY_TEST_TOKEN"
export CGI_STDERR=$work/cgi.err

# conf NAME LINES...: our database, our prefix, the stack's storage, LINES.
conf() {
	local name=$1
	shift
	{
		sed -e '/^[;#]/d' -e "s|^name = bindery\$|name = $DBNAME|" "$BINDERY_TEST_MIGRATE_CONFIG"
		printf '[storage]\nprefix = %s\n' "$PREFIX"
		printf '%s\n' "$@"
	} >"$work/$name.conf"
	chmod 0600 "$work/$name.conf"
}
clamd_start "$work/clamd" include="$top/conf/clamd-bindery.conf" ||
	bail_out "clamd did not start: $(tail -n 5 "$CLAMD_LOG" 2>/dev/null)"
conf plain
conf scan '[scan]' "clamd = $CLAMD_UNIX" 'timeout = 10'
grep -q "^name = $DBNAME\$" "$work/scan.conf" || bail_out "the test's configuration did not take"
sql "CREATE DATABASE $DBNAME CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci" ||
	bail_out "cannot create database $DBNAME"
export BINDERY_TEST_DB_NAME=$DBNAME	# sql reads our database from here on
"$CHAOS_BIN/bindery" -c "$work/scan.conf" migrate >"$work/migrate.out" 2>&1
ok $? "migrate ($(tail -n 1 "$work/migrate.out"))"

# scan CONF [ARGS...]: `bindery scan`; OUT, ERR (files' text) and RC.
FP=/dev/null
scan() {
	local conf=$1
	shift
	BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS_FILE=$FP "$CHAOS_BIN/bindery" -c "$work/$conf.conf" scan "$@" \
		>"$work/scan.out" 2>"$work/scan.err"
	RC=$?
	OUT=$(cat "$work/scan.out") ERR=$(cat "$work/scan.err")
}
audit() { # LABEL
	BINDERY_LOG_STDERR=1 "$CHAOS_BIN/bindery" -c "$work/scan.conf" audit >"$work/audit.out" 2>&1
	is "$?" 0 "$1: bindery audit is clean"
	sed 's/^/# /' "$work/audit.out" | tail -n 5
}
# create NAME FILE: through the responder, without [scan]; sets ID, CODE.
create() {
	cgi_run "$work/c.out" "$work/plain.conf" POST "/documents?name=$1" "$bearer" \
		CONTENT_TYPE=text/plain CONTENT_LENGTH="$(stat -c %s "$2")" <"$2"
	CODE=$CGI_CODE
	ID=$(jfield "$(cgi_body "$work/c.out")" id)
}
# get URI: GET through the responder; CODE, BODY (the body in $work/g.body).
get() {
	cgi_run "$work/g.out" "$work/plain.conf" GET "$1" "$bearer" </dev/null
	CODE=$CGI_CODE
	tr -d '\r' <"$work/g.out" | sed -e '1,/^$/d' >"$work/g.body"
	BODY=$(cat "$work/g.body")
}
listed_ids() { jq -r '.documents[].id' <<<"$BODY" | sort -n | tr '\n' ' '; }
doc_row() { sql "SELECT CONCAT_WS(' ', status, version, blob_name, quarantined_at IS NOT NULL) FROM documents WHERE id = ${1:-0}"; }
blob_of() { sql "SELECT blob_name FROM documents WHERE id = ${1:-0}"; }
registry_state() { sql "SELECT state FROM blobs WHERE name = '$1'"; }
stored_tag() { az_list "$1" | awk -v b="$1" '$1 == b { print $3 }'; }

# ---- documents that got in before the scanner knew them ----
clamd_write_eicar "$work/eicar"
printf 'a plain text file, clean.\n' >"$work/clean"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'z' >"$work/big"
create scan-eicar "$work/eicar"
is "$CODE" 201 "without [scan], EICAR gets in (201)"
eicar=$ID
create scan-clean "$work/clean"
is "$CODE" 201 "a clean document beside it"
clean=$ID
create scan-big "$work/big"
is "$CODE" 201 "and a 2 MiB one"
big=$ID
eicar_blob=$(blob_of "$eicar")

# ---- the report ----
scan plain
is "$RC" 78 "without [scan] clamd: exit 78 (configuration)"
like "$ERR" '^bindery scan: \[scan\] clamd is not set' "... saying so"
scan scan
sed 's/^/# /' "$work/scan.out"
is "$RC" 2 "bindery scan: exit 2, infected documents found"
like "$OUT" "^infected +document $eicar \"scan-eicar\" owner demo: $CLAMD_SIGNATURE\$" \
	"... one line naming the EICAR document: id, name, owner, signature"
unlike "$OUT" 'scan-clean|scan-big' "... and not the clean ones"
like "$OUT" 'scan: 3 documents, [0-9]+ bytes read; 2 clean, 1 infected, 0 not scanned, 0 changed' \
	"... then a summary"
unlike "$OUT" '\[quarantined' "... quarantining nothing"
scan scan --json
is "$RC" 2 "--json: exit 2 too"
is "$(jq -r '[.complete, .clean, .counts.documents, .counts.infected, (.findings | length)] | @tsv' "$work/scan.out")" \
	"$(printf 'true\tfalse\t3\t1\t1')" "... complete, not clean, 3 documents, 1 infected, one finding"
is "$(jq -r '.findings[0] | [.id, .name, .owner, .result, .signature, .quarantine] | @tsv' "$work/scan.out")" \
	"$(printf '%s\tscan-eicar\tdemo\tinfected\t%s\tnone' "$eicar" "$CLAMD_SIGNATURE")" \
	"... the finding: id, name, owner, result, signature, not quarantined"
scan scan --prefix nothing-here-
is "$RC $(grep -o 'scan: 0 documents' <<<"$OUT")" "0 scan: 0 documents" \
	"--prefix under the configured prefix: only those blobs (none here: exit 0)"
get "/documents/$eicar"
is "$CODE" 200 "a report changes nothing: the document still reads (200)"
audit "after the report"

# ---- --quarantine ----
FP=$work/failpoints
printf 'scan.quarantine_commit_lost error once\n' >"$FP"
scan scan --quarantine
FP=/dev/null
is "$RC" 2 "--quarantine: exit 2"
like "$OUT" "infected +document $eicar \"scan-eicar\" owner demo: $CLAMD_SIGNATURE \\[quarantined now\\]" \
	"... the line says it was quarantined now"
like "$OUT" '1 quarantined now, 0 before' "... and the summary"
is "$(grep -c quarantine_commit_lost "$FP")" 0 "... its commit, lost once (failpoint), was found lost"
like "$ERR" 'quarantine of document [0-9]+: COMMIT succeeded but it is not quarantined' \
	"... by the check after the COMMIT, and done again"
get "/documents/$eicar"
is "$CODE $(jfield "$BODY" error)" "404 not_found" "GET /documents/ID: 404 not_found, as a deleted document"
get "/documents/$eicar/content"
is "$CODE" 404 "its download: 404"
cgi_run "$work/h.out" "$work/plain.conf" HEAD "/documents/$eicar/content" "$bearer" </dev/null
is "$CGI_CODE" 404 "HEAD of its download: 404"
get "/documents"
is "$CODE $(listed_ids)" "200 $clean $big " "GET /documents lists the others, not it"
get "/documents?name=scan-eicar"
is "$CODE $(jq -c .documents <<<"$BODY")" "200 []" "GET /documents?name=: none"
get "/documents?prefix=scan-e"
is "$CODE $(jq -c .documents <<<"$BODY")" "200 []" "GET /documents?prefix=: none"
get "/?order=oldest"
is "$CODE" 200 "the page"
unlike "$BODY" 'scan-eicar' "... does not list it"
like "$BODY" 'scan-clean' "... lists the clean one"
like "$BODY" '<span id="count">2 documents</span>' "... and counts 2 documents"
get "/?prefix=scan-e"
like "$BODY" '<span id="count">0 documents whose names start with' "... 0 under a prefix only it matches"
v0=$(doc_row "$eicar")
cgi_run "$work/r.out" "$work/plain.conf" PUT "/documents/$eicar/content" "$bearer" CONTENT_TYPE=text/plain \
	CONTENT_LENGTH="$(stat -c %s "$work/clean")" <"$work/clean"
is "$CGI_CODE $(jfield "$(cgi_body "$work/r.out")" error)" "404 not_found" "a replace of it: 404 not_found"
is "$(doc_row "$eicar")" "$v0" "... the document as it was"
is "$v0" "ready 1 $eicar_blob 1" "its row stays ready, on its blob, quarantined"
is "$(registry_state "$eicar_blob") $(stored_tag "$eicar_blob")" "committed committed" \
	"... its registry row and its blob's tag committed: nothing deleted"
is "$(az_sha256 "$eicar_blob")" "$(sha256sum <"$work/eicar" | cut -d' ' -f1)" "... its bytes still in storage"
is "$(sql "SELECT COUNT(*) FROM blobs WHERE state <> 'committed'")" 0 "... and no intent left by the refused replace"
scan scan --quarantine
is "$RC" 2 "a second --quarantine: exit 2 (it is still infected)"
like "$OUT" "infected +document $eicar .*\\[quarantined\\]" "... the line says it is quarantined"
like "$OUT" '0 quarantined now, 1 before' "... quarantined before this run"
BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS_FILE=/dev/null "$CHAOS_BIN/bindery" -c "$work/scan.conf" \
	sweep --older-than 0 --force >"$work/sweep.out" 2>&1
is "$?" 0 "a sweep runs"
is "$(doc_row "$eicar") $(registry_state "$eicar_blob") $(stored_tag "$eicar_blob")" \
	"ready 1 $eicar_blob 1 committed committed" "... and leaves the quarantined document as it was"
audit "quarantined"

# ---- --release ----
FP=$work/failpoints
printf 'scan.release_commit_lost error once\n' >"$FP"
scan scan --release "$eicar"
FP=/dev/null
is "$RC" 0 "--release ID: exit 0"
like "$OUT" "^document $eicar released" "... saying so"
is "$(grep -c release_commit_lost "$FP")" 0 "... its commit, lost once, was found lost and done again"
get "/documents/$eicar"
is "$CODE $(jfield "$BODY" id)" "200 $eicar" "GET /documents/ID: 200 again"
get "/documents/$eicar/content"
is "$CODE $(sha256sum <"$work/g.body" | cut -d' ' -f1)" "200 $(sha256sum <"$work/eicar" | cut -d' ' -f1)" \
	"its download: 200, the same bytes"
get "/documents"
is "$(listed_ids)" "$eicar $clean $big " "listed again, in its place"
scan scan --release "$eicar"
is "$RC $OUT" "1 document $eicar was not quarantined" "--release again: exit 1, it was not quarantined"
scan scan --release 99999999
is "$RC" 1 "--release of an id no ready document has: exit 1"
like "$ERR" 'no ready document 99999999' "... saying so"
scan scan --release 12x
is "$RC" 64 "--release of a malformed id: exit 64"
scan scan --release "$eicar" --quarantine
is "$RC" 64 "--release with another option: exit 64"

# ---- its owner may delete it ----
scan scan --quarantine
is "$RC" 2 "quarantined again"
cgi_run "$work/d.out" "$work/plain.conf" DELETE "/documents/$eicar" "$bearer" </dev/null
is "$CGI_CODE" 204 "its owner deletes it: 204"
is "$(sql "SELECT COUNT(*) FROM documents WHERE id = $eicar") $(registry_state "$eicar_blob")" "0 retired" \
	"... the row gone, its blob retired (the outbox deletes it)"
scan scan
is "$RC" 0 "bindery scan: exit 0, all clean"
like "$OUT" 'scan: 2 documents, [0-9]+ bytes read; 2 clean, 0 infected' "... 2 documents, 2 clean"
audit "after the delete"

# ---- bytes changed behind bindery's back ----
create scan-swapped "$work/clean"
swapped=$ID
sas=$("$blobtool" sas "$(blob_of "$swapped")" rw 300)
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'x-ms-blob-type: BlockBlob' \
	-H 'x-ms-tags: state=committed' --data-binary "@$work/eicar" "$sas")
is "$code" 201 "EICAR put through a SAS onto a clean document's blob"
scan scan --quarantine
sed 's/^/# /' "$work/scan.out" "$work/scan.err"
is "$RC" 1 "bindery scan: exit 1 (a document not judged), not 2"
like "$OUT" "changed +document $swapped \"scan-swapped\" owner demo: blob .* is not the one committed" \
	"... it is reported changed"
unlike "$OUT" 'infected +document' "... never infected"
is "$(doc_row "$swapped" | cut -d' ' -f4)" 0 "... and not quarantined"
cgi_run "$work/d.out" "$work/plain.conf" DELETE "/documents/$swapped" "$bearer" </dev/null
is "$CGI_CODE" 204 "it is deleted"
audit "changed bytes deleted"

# ---- a clamd limit: not scanned, never clean ----
clamd_stop
clamd_start "$work/clamd" include="$top/conf/clamd-bindery.conf" StreamMaxLength=1M ||
	bail_out "clamd did not start (StreamMaxLength 1M): $(tail -n 5 "$CLAMD_LOG" 2>/dev/null)"
scan scan
sed 's/^/# /' "$work/scan.out" "$work/scan.err"
is "$RC" 1 "StreamMaxLength 1M: exit 1"
like "$OUT" "not scanned +document $big \"scan-big\" owner demo: past a clamd limit, not scanned" \
	"... the 2 MiB document is not scanned, never clean"
like "$OUT" '1 clean, 0 infected, 1 not scanned' "... the summary says so"

# ---- clamd stopped ----
clamd_stop
scan scan
is "$RC" 69 "clamd stopped: exit 69"
like "$ERR" "bindery scan: stopped: clamd at $CLAMD_UNIX does not answer" "... a message naming it"
is "$OUT" "" "... and no report"
audit "at the end"
az_remove_checked "$PREFIX"
done_testing
