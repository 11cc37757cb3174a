#!/usr/bin/env bash
# Apache mod_fcgid under concurrent uploads: 300 small creates from 24
# clients at once, each answered 201, and no Apache child crashed.
#
# conf/apache-fcgid.conf puts a mod_lua input filter on every request with
# a body.  With "LuaScope server" (a pool of Lua states shared by the
# threads of mpm_event) children died with SIGSEGV on about 2 % of such
# requests at this concurrency and their clients got no answer at all
# (measured: 22 crashes and 108 unanswered requests in 1,013); "LuaScope
# thread" gives each thread its own state: 600 of 600 answered, no crash.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_VAR BINDERY_TEST_DB_SOCKET
errlog=$BINDERY_TEST_VAR/log/apache-error.log
[ -r "$errlog" ] || missing "no Apache error log at $errlog"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run=aload-$$-$RANDOM
printf 'three' >"$work/body"
crashes_before=$(grep -c 'exit signal Segmentation fault' "$errlog")
seq 1 300 | xargs -P 24 -I{} curl -s -m 60 -o /dev/null -w '%{http_code}\n' \
	-H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Content-Type: application/octet-stream' \
	--data-binary "@$work/body" "$BINDERY_TEST_APACHE_URL/documents?name=$run-{}" >"$work/codes"
codes=$(sort "$work/codes" | uniq -c | awk '{printf "%s:%s ", $2, $1}')
is "$(grep -c '^201$' "$work/codes")" 300 "300 concurrent creates through Apache: all 201 ($codes)"
is "$(($(grep -c 'exit signal Segmentation fault' "$errlog") - crashes_before))" 0 \
	"... and no Apache child crashed"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-%' AND status = 'ready'")" 300 \
	"... 300 ready documents"
# Leave nothing: delete them again through the API.
for id in $(sql "SELECT id FROM documents WHERE name LIKE '$run-%'"); do
	curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"$BINDERY_TEST_APACHE_URL/documents/$id"
done
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$run-%'")" 0 "... all deleted again"
done_testing
