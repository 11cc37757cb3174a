#!/usr/bin/env bash
# The HTML page driven in headless Chromium (tests/e2e/browser.mjs), and the
# proof that an uploaded HTML document cannot steal the page's token.  Needs
# Debian's chromium and the npm package playwright-core, which ./dev installs
# for every `./dev test`: there a missing browser is a failure, never a skip.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET
browser_bin=${BINDERY_TEST_CHROMIUM:-chromium}
command -v "$browser_bin" >/dev/null || missing "no chromium (./dev installs it)"
[ -d "$top/node_modules/playwright-core" ] || missing "no playwright-core in node_modules (./dev installs it)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'written in a browser\n' >"$work/upload.txt"
# What the uploaded script would create with a stolen token.
stolen="browser-stolen-$$-$RANDOM"
BINDERY_TEST_CHROMIUM=$(command -v "$browser_bin") NODE_PATH=$top/node_modules \
	node "$here/browser.mjs" "$BINDERY_TEST_LIGHTTPD_URL" "$BINDERY_TEST_TOKEN" \
	"$work/upload.txt" "$stolen" >"$work/results" 2>"$work/node.err"
rc=$?
# One "pass<TAB>what" or "fail<TAB>what" line per check.
while IFS=$'\t' read -r verdict what; do
	case $verdict in
	pass) pass "$what" ;;
	fail) fail "$what" ;;
	*) note "$verdict $what" ;;
	esac
done <"$work/results"
if [ "$rc" != 0 ] || [ "$TAP_N" = 0 ]; then
	fail "browser.mjs ran to its end (exit $rc, $TAP_N checks)"
	while IFS= read -r l; do diag "$l"; done < <(tail -n 20 "$work/node.err")
fi
# The script's own write with the token, looked for in the database.
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$stolen")")" 0 \
	"no document was created with a token the uploaded HTML read"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$stolen-control")")" 0 \
	"control 2's document was deleted again"
done_testing
