#!/usr/bin/env bash
# The HTML page driven in headless Chromium (tests/e2e/browser.mjs) through
# lighttpd AND Apache mod_fcgid: uploads (form, no script with the typed
# token, dropped files in two batches, tus cancelled and tus resumed after a
# reload, direct when on), the new rows on top and highlighted, the count,
# download compared by SHA-256 with the file on disk, Replace and Delete
# only with a token, a row's error in its row, replace, delete, the icon;
# and the proof that an uploaded HTML document cannot steal the page's
# token.  Under Apache only the steps whose requests differ by web server
# run (no script, form, drop, tus resume, download), every step under
# --long (BINDERY_TEST_LONG).  Needs Debian's chromium and the
# npm package playwright-core, which ./dev installs for every `./dev test`:
# there a missing browser is a failure, never a skip.  A screenshot of each
# step goes to $BINDERY_TEST_VAR/screens/SERVER-NN-step.png (./dev test lists
# them at the end).  It runs on every ./dev test: keep it near a minute.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/db.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET \
	BINDERY_TEST_VAR BINDERY_CONFIG
browser_bin=${BINDERY_TEST_CHROMIUM:-chromium}
command -v "$browser_bin" >/dev/null || missing "no chromium (./dev installs it)"
[ -d "$top/node_modules/playwright-core" ] || missing "no playwright-core in node_modules (./dev installs it)"
browser_work=$(mktemp -d)
trap 'rm -rf "$browser_work"' EXIT
browser_screens=$BINDERY_TEST_VAR/screens
mkdir -p "$browser_screens" && rm -f "$browser_screens"/lighttpd-*.png "$browser_screens"/apache-*.png
printf 'written in a browser\n' >"$browser_work/small.txt"
# Five 256 KiB tus chunks and a bit: the page reloads after the first.
head -c $((5 * 262144 + 1000)) /dev/urandom >"$browser_work/tus.bin"
head -c 150000 /dev/urandom >"$browser_work/replace.bin"
# What the resumed tus upload hears first, several times over (browser.mjs).
printf '{"error":"upload_busy","message":"another request is writing this upload"}\n' \
	>"$browser_work/busy.json"
# The direct step runs when the stack's configuration has direct uploads on
# (./dev test does); the page must say what the configuration says.
browser_direct=0
grep -q '^direct = true$' "${BINDERY_CONFIG:-/dev/null}" && browser_direct=1
# What the uploaded script would create with a stolen token.
stolen="browser-stolen-$$-$RANDOM"
browser_full=0
[ -n "${BINDERY_TEST_LONG:-}" ] && browser_full=1
browser_t0=$(date +%s%N)
BINDERY_TEST_CHROMIUM=$(command -v "$browser_bin") NODE_PATH=$top/node_modules \
	node "$here/browser.mjs" "$BINDERY_TEST_TOKEN" "$browser_work" "$browser_screens" "$stolen" "$browser_direct" \
	"$browser_full" "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL" \
	>"$browser_work/results" 2>"$browser_work/node.err"
rc=$?
browser_ms=$((($(date +%s%N) - browser_t0) / 1000000))
# One "pass<TAB>what" or "fail<TAB>what" line per check.
while IFS=$'\t' read -r verdict what; do
	case $verdict in
	pass) pass "$what" ;;
	fail) fail "$what" ;;
	*) note "$verdict $what" ;;
	esac
done <"$browser_work/results"
if [ "$rc" != 0 ] || [ "$TAP_N" -lt 55 ]; then
	fail "browser.mjs ran to its end (exit $rc, $TAP_N checks)"
	while IFS= read -r l; do diag "$l"; done < <(tail -n 20 "$browser_work/node.err")
fi
# Its time is a note, not a check: on a loaded machine a wall-clock bound
# fails for the machine's sake (./dev test lists the slowest tests and warns
# when the whole run is over its budget).
note "the browser run took $browser_ms ms"
for srv in lighttpd apache; do
	# page, nojs-upload, form-upload, drop-two, tus-progress, tus-resumed,
	# tus-download; and with every step nojs-refused, tus-cancel,
	# row-error, replaced, deleted, (direct,) wrong-token, xss-clicked
	want_shots=7
	if [ "$srv" = lighttpd ] || [ "$browser_full" = 1 ]; then
		want_shots=$((14 + browser_direct))
		# The script's own write with the token, looked for in the database.
		is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$stolen-$srv")")" 0 \
			"$srv: no document was created with a token the uploaded HTML read"
		is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$stolen-$srv-control")")" 0 \
			"$srv: control 2's document was deleted again"
	fi
	shots=0
	for f in "$browser_screens/$srv"-[0-9][0-9]-*.png; do
		[ "$(od -An -c -N4 "$f" 2>/dev/null | tr -d ' ')" = '211PNG' ] && shots=$((shots + 1))
	done
	is "$shots" "$want_shots" "$srv: a PNG screenshot of each step (in ${browser_screens#"$top"/})"
	ok "! ls '$browser_screens' | grep -q '^$srv-[0-9][0-9]-failed\.png\$'" "$srv: no step failed"
done
done_testing
