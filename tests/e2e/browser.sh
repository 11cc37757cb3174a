#!/usr/bin/env bash
# The HTML page driven in headless Chromium (tests/e2e/browser.mjs).  Needs
# Debian's chromium and the npm package playwright-core, which `./dev test
# --long` installs; without them this test is skipped, never passed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN
command -v "${CHROMIUM:-chromium}" >/dev/null || skip_all "no chromium (./dev test --long installs it)"
[ -d "$top/node_modules/playwright-core" ] || skip_all "no playwright-core (./dev test --long installs it)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'written in a browser\n' >"$work/upload.txt"
# A stored-XSS attempt: if it ever runs on the page's origin it sends the token off.
printf '%s\n' '<!doctype html><title>evil</title><script>' \
	'let t; try { t = sessionStorage.getItem("bindery-token"); } catch (e) { t = "denied:" + e.name; }' \
	'fetch("/healthz?stolen=" + encodeURIComponent(t)).catch(() => {});' \
	'new Image().src = "/healthz?stolen=img-" + encodeURIComponent(t);' \
	'</script>' >"$work/evil.html"
NODE_PATH=$top/node_modules node "$here/browser.mjs" "$BINDERY_TEST_LIGHTTPD_URL" "$BINDERY_TEST_TOKEN" \
	"$work/upload.txt" "$work/evil.html" >"$work/results" 2>"$work/node.err"
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
done_testing
