#!/bin/bash
# tests/dist/upgrade.sh — an upgrade keeps data.
#
# Builds the previous release (tag v0.1.0, or its commit when the clone has
# no tags) from `git archive` out of tree, with failpoints; gives it a fresh
# database of its own (accounts made by sql/grants.sql) and a container of
# its own on the test stack's Azurite; runs the OLD `bindery migrate`, then
# the OLD responder (as a CGI program) leaves behind ready documents, a
# replaced and a deleted one (two outbox rows), an Idempotency-Key and a
# create killed after its upload (a pending intent).  Then the CURRENT
# `bindery migrate` runs, twice (the second changes nothing), every ready
# document reads back byte-identical through the current responder with the
# old release's configuration file unchanged, the key answers its retry,
# and the current sweep and audit resolve the old states: audit clean.
#
# Slow (a whole build of the old tree): only under ./dev test --long.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/http.sh"
. "$(dirname "$0")/../lib/db.sh"
. "$(dirname "$0")/../lib/stack.sh"

UP_TAG=v0.1.0
UP_COMMIT=8f8e725	# the tag's commit: what landed before the packaging work

[ -n "${BINDERY_TEST_LONG:-}" ] || skip_all "builds the previous release (about 50 s): ./dev test --long"
need_stack BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_VAR BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT BINDERY_TEST_BLOB_KEY
UP_SRC=$(cd "${top_srcdir:?}" && pwd -P)
command -v git >/dev/null || missing "git"
# A release the clone cannot reach is a broken set-up, never a pass.
up_rev=$(git -C "$UP_SRC" rev-parse -q --verify "$UP_TAG^{commit}" 2>/dev/null) ||
	up_rev=$(git -C "$UP_SRC" rev-parse -q --verify "$UP_COMMIT^{commit}" 2>/dev/null) ||
	missing "neither $UP_TAG nor $UP_COMMIT is in $UP_SRC's history"
# The sub-make is ours: no jobserver or TESTS= from make check.
unset MAKEFLAGS MFLAGS MAKELEVEL

t0=$(date +%s)
up=$(mktemp -d "$BINDERY_TEST_VAR/upgrade.XXXXXX") || bail_out "mktemp -d failed"
up_db=upgrade$$
up_rt=up_rt_$$ up_mig=up_mig_$$
upsql() { BINDERY_TEST_DB_NAME=$up_db sql "$1"; }
cleanup() {
	sql "DROP DATABASE IF EXISTS $up_db; DROP USER IF EXISTS '$up_rt'@'localhost', '$up_mig'@'localhost'" \
		>/dev/null 2>&1
	rm -rf "$up"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the old release, built out of tree ----
mkdir -p "$up/build" && git -C "$UP_SRC" archive --prefix=src/ "$up_rev" | tar -x -C "$up" ||
	bail_out "git archive $up_rev failed"
{ (cd "$up/src" && autoreconf -fi) && (cd "$up/build" && "$up/src/configure" --enable-failpoints) &&
	make -C "$up/build" app/page_js.h && make -C "$up/build" -j2 app/bindery app/bindery.fcgi; } \
	>"$up/build.log" 2>&1	# (page_js.h: a BUILT_SOURCES file, which only `make all` makes first)
ok $? "the old release ($(git -C "$UP_SRC" describe --tags --always "$up_rev" 2>/dev/null)) builds with failpoints"
old=$up/build/app
[ -x "$old/bindery" ] && [ -x "$old/bindery.fcgi" ] || { tail -n 20 "$up/build.log" | sed 's/^/# /'; bail_out "no old programs"; }
note "old build: $(($(date +%s) - t0)) s"

# ---- a fresh database: the runbook's two accounts ----
rt_pw=$(stack_random_hex 16) mig_pw=$(stack_random_hex 16)
(umask 077 && stack_render "$UP_SRC/sql/grants.sql" "$up/grants.sql" DB_NAME="$up_db" HOST=localhost \
	RUNTIME_USER="$up_rt" RUNTIME_PASSWORD="$rt_pw" MIGRATE_USER="$up_mig" MIGRATE_PASSWORD="$mig_pw") ||
	bail_out "cannot render sql/grants.sql"
mariadb --no-defaults --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot <"$up/grants.sql"
ok $? "sql/grants.sql makes $up_db and its runtime and migration accounts"

# The configuration an admin of the old release had: its own sample, filled in.
stack_render "$up/src/conf/bindery.conf.sample" "$up/rt.conf" DB_SOCKET="$BINDERY_TEST_DB_SOCKET" \
	DB_PASSWORD="$rt_pw" STORAGE_ENDPOINT="$BINDERY_TEST_BLOB_ENDPOINT" \
	STORAGE_ACCOUNT="$BINDERY_TEST_BLOB_ACCOUNT" STORAGE_KEY="$BINDERY_TEST_BLOB_KEY" \
	DEMO_TOKEN="upgrade$$token" || bail_out "cannot render the old sample configuration"
sed -i -e "s|^name = bindery\$|name = $up_db|" -e "s|^user = bindery\$|user = $up_rt|" \
	-e "s|^container = .*|container = upgrade$$|" "$up/rt.conf"
sed -e "s|^user = .*|user = $up_mig|" -e "s|^password = .*|password = $mig_pw|" "$up/rt.conf" >"$up/mig.conf"
chmod 0600 "$up/rt.conf" "$up/mig.conf"
grep -q "^name = $up_db\$" "$up/rt.conf" && grep -q "^user = $up_rt\$" "$up/rt.conf" &&
	grep -q "^container = upgrade$$\$" "$up/rt.conf" && grep -q "^user = $up_mig\$" "$up/mig.conf" ||
	bail_out "could not point the old configuration at $up_db"

"$old/bindery" -c "$up/mig.conf" migrate --sql-dir "$up/src/sql" >"$up/old-migrate.out" 2>&1
ok $? "the OLD migrate builds the old schema ($(head -c 200 "$up/old-migrate.out"))"
old_known=$(ls "$up/src/sql"/[0-9][0-9][0-9]_*.sql | wc -l)
is "$(upsql "SELECT COUNT(*) FROM schema_migrations")" "$old_known" "... at the old release's version ($old_known migrations)"

# ---- the old responder leaves its states behind ----
auth=HTTP_AUTHORIZATION="Bearer upgrade$$token"
# old_create NAME FILE [VAR=VALUE...]: a create through the OLD responder;
# sets CGI_* and ID.
old_create() {
	local name=$1 file=$2
	shift 2
	CGI_PROGRAM=$old/bindery.fcgi cgi_run "$up/answer" "$up/rt.conf" POST "/documents?name=$name" "$auth" \
		CONTENT_TYPE=application/octet-stream CONTENT_LENGTH="$(stat -c %s "$file")" "$@" <"$file"
	ID=$(jfield "$(cgi_body "$up/answer")" id)
}
head -c 1024 /dev/urandom >"$up/a"
head -c 70000 /dev/urandom >"$up/b"
head -c $((5 * 1024 * 1024 + 17)) /dev/urandom >"$up/c"	# more than one block
head -c 3000 /dev/urandom >"$up/d"
head -c 4000 /dev/urandom >"$up/d2"
head -c 500 /dev/urandom >"$up/e"
head -c 800 /dev/urandom >"$up/p"
declare -A doc
for n in a b c d e; do
	old_create "up-$n" "$up/$n" HTTP_IDEMPOTENCY_KEY="upgrade-$$-$n"
	is "$CGI_CODE" 201 "old: create up-$n (with an Idempotency-Key)"
	doc[$n]=$ID
done
CGI_PROGRAM=$old/bindery.fcgi cgi_run "$up/answer" "$up/rt.conf" PUT "/documents/${doc[d]}/content" "$auth" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH=4000 HTTP_IF_MATCH='*' <"$up/d2"
is "$CGI_CODE" 200 "old: replace up-d (its old blob goes to the outbox)"
CGI_PROGRAM=$old/bindery.fcgi cgi_run "$up/answer" "$up/rt.conf" DELETE "/documents/${doc[e]}" "$auth" </dev/null
is "$CGI_CODE" 204 "old: delete up-e (its blob goes to the outbox)"
old_create up-crash "$up/p" BINDERY_FAILPOINTS=create.after_upload=exit
is "$CGI_RC" 137 "old: a create killed after its upload, before the tag flip"
is "$(upsql "SELECT COUNT(*) FROM blobs WHERE state = 'retired'")" 2 "old states: two outbox rows"
is "$(upsql "SELECT COUNT(*) FROM documents WHERE status = 'pending'")" 1 "old states: one pending intent"
is "$(upsql "SELECT COUNT(*) FROM idempotency_keys")" 5 "old states: five idempotency keys"
upsql "SELECT name, status, sha256 FROM documents ORDER BY id" >"$up/docs.before"

# ---- the current migrate, twice ----
bindery=$BINDERY_TEST_BIN/bindery
known=$(ls "$UP_SRC/sql"/[0-9][0-9][0-9]_*.sql | wc -l)
"$bindery" -c "$up/mig.conf" -v migrate --sql-dir "$UP_SRC/sql" >"$up/migrate1.out" 2>&1
ok $? "the CURRENT migrate upgrades the old database ($(head -c 200 "$up/migrate1.out"))"
like "$(cat "$up/migrate1.out")" "applied $((known - old_known)) migration\\(s\\); schema version $known of $known" \
	"... applying the $((known - old_known)) new migration(s)"
dump() {
	mariadb-dump --no-defaults --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
		--skip-comments --skip-dump-date --skip-extended-insert "$up_db" 2>/dev/null |
		grep -v 'schema_migrations'
}
dump >"$up/dump1"
"$bindery" -c "$up/mig.conf" -v migrate --sql-dir "$UP_SRC/sql" >"$up/migrate2.out" 2>&1
ok $? "a second migrate exits 0"
like "$(cat "$up/migrate2.out")" "applied 0 migration\\(s\\); schema version $known of $known" "... and applies nothing"
dump >"$up/dump2"
ok '[ -s "$up/dump1" ] && cmp -s "$up/dump1" "$up/dump2"' "... and changes no table or row (mariadb-dump identical)"
is "$(upsql "SELECT COUNT(*) FROM schema_migrations")" "$known" "every migration is recorded once"
upsql "SELECT name, status, sha256 FROM documents ORDER BY id" >"$up/docs.after"
ok 'cmp -s "$up/docs.before" "$up/docs.after"' "the documents' rows are as the old release left them"

# ---- the current responder reads the old documents, with the old file ----
readback() { # NAME FILE
	cgi_run "$up/got" "$up/rt.conf" GET "/documents/${doc[$1]}/content" </dev/null
	is "$CGI_CODE" 200 "new: up-$1's content answers 200"
	tail -c "$(stat -c %s "$2")" "$up/got" >"$up/got.body"
	cmp -s "$2" "$up/got.body"
	ok $? "new: up-$1 reads back byte-identical ($(stat -c %s "$2") bytes)"
}
readback a "$up/a"
readback b "$up/b"
readback c "$up/c"
readback d "$up/d2"
cgi_run "$up/got" "$up/rt.conf" GET "/documents/${doc[e]}" </dev/null
is "$CGI_CODE" 404 "new: the deleted up-e stays deleted"
cgi_run "$up/answer" "$up/rt.conf" POST "/documents?name=up-a" "$auth" HTTP_IDEMPOTENCY_KEY="upgrade-$$-a" \
	CONTENT_TYPE=application/octet-stream CONTENT_LENGTH=1024 <"$up/a"
is "$CGI_CODE" 201 "new: the old Idempotency-Key's retry answers as the first time"
is "$(jfield "$(cgi_body "$up/answer")" id)" "${doc[a]}" "... with the same document"
is "$(upsql "SELECT COUNT(*) FROM documents WHERE name = 'up-a'")" 1 "... and creates nothing"

# ---- the current sweep and audit resolve the old states ----
# The outbox waits out retire_grace: as root, let that time pass.
upsql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND WHERE state = 'retired'"
BINDERY_LOG_STDERR=1 "$bindery" -c "$up/rt.conf" sweep --older-than 0 --force >"$up/sweep.out" 2>&1
ok $? "the CURRENT sweep runs on the old states ($(tail -c 300 "$up/sweep.out" | tr '\n' ' '))"
is "$(upsql "SELECT COUNT(*) FROM blobs WHERE state <> 'committed'")" 0 "... the outbox is drained and the intent resolved"
is "$(upsql "SELECT COUNT(*) FROM documents WHERE status <> 'ready'")" 0 "... no pending document is left"
"$bindery" -c "$up/rt.conf" audit >"$up/audit.out" 2>&1
ok $? "the CURRENT audit is clean ($(head -c 300 "$up/audit.out" | tr '\n' ' '))"
readback c "$up/c"
note "upgrade test: $(($(date +%s) - t0)) s"
done_testing
