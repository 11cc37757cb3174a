#!/usr/bin/env bash
# tests/unit/test_lists.sh — every end-to-end and chaos script is in the
# suite once.  Makefile.am names the slow ones in SLOW_TESTS (in the order
# the lanes start them) and the fragments in mk/ name the rest in their
# E2E_TESTS, so a script dropped from both, or named in both, would be
# skipped or run twice without anything saying so.  LIGHT_TESTS (the ones
# ./dev test may run in its fourth lane) must name tests of the suite: a
# name that matches none would send nothing there, silently.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
cd "$top" || bail_out "cannot cd to $top"
export LC_ALL=C

# listed VAR: the words assigned to VAR (= or +=) in Makefile.am and mk/*.mk,
# continuation lines joined, one per line.
listed() {
	cat Makefile.am mk/*.mk | sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' |
		sed -n "s/^$1 *+*= *//p" | tr -s ' \t' '\n\n' | sed '/^$/d'
}
work=$(mktemp -d) || bail_out "no temporary directory"
trap 'rm -rf "$work"' EXIT
slow=$work/slow e2e=$work/e2e
listed SLOW_TESTS >"$slow"
listed E2E_TESTS >"$e2e"

ok '[ "$(wc -l <"$slow")" -ge 10 ] && [ "$(wc -l <"$e2e")" -ge 10 ]' \
	"the lists are read ($(wc -l <"$slow") slow, $(wc -l <"$e2e") other)"
both=$(sort "$slow" "$e2e" | uniq -d | tr '\n' ' ')
is "$both" "" "no script is named twice (SLOW_TESTS and E2E_TESTS together)"
missing=''
for f in tests/e2e/*.sh tests/chaos/chaos.sh; do
	grep -qxF "$f" "$slow" "$e2e" || missing="$missing $f"
done
is "${missing# }" "" "every tests/e2e/*.sh and tests/chaos/chaos.sh is in the suite"
gone=''
for f in $(cat "$slow" "$e2e"); do [ -e "$f" ] || [ -e "$f.c" ] || gone="$gone $f"; done
is "${gone# }" "" "every script named exists"

# Every test of the suite, by the names the lists give (programs without .sh).
listed_all() {
	for v in SLOW_TESTS E2E_TESTS INTEGRATION_TESTS DIST_TESTS UNIT_TESTS FINAL_TESTS; do listed "$v"; done
}
listed LIGHT_TESTS >"$work/light"
listed_all >"$work/all"
ok '[ "$(wc -l <"$work/light")" -ge 3 ]' "the light tests are read ($(wc -l <"$work/light"))"
stray=''
for f in $(cat "$work/light"); do grep -qxF "$f" "$work/all" || stray="$stray $f"; done
is "${stray# }" "" "every light test is a test of the suite"
done_testing
