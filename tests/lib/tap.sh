# tests/lib/tap.sh — TAP helpers for bindery's shell tests (bash).
#
#   . "$(dirname "$0")/../lib/tap.sh"
#   ok 0 "exit status 0 passes"            ok COND DESC
#   ok '[ "$x" -gt 2 ]' "an expression"    (COND: an integer is an exit status,
#                                            0 passes; anything else is eval'd)
#   pass "desc" / fail "desc"              a result decided by the script
#   is "$got" "$want" "equal strings"      is GOT WANT DESC
#   isnt "$got" "$bad" "different"         isnt GOT WANT DESC
#   like "$got" 'regex' "matches"          like GOT ERE DESC (grep -E)
#   unlike "$got" 'regex' "does not"       unlike GOT ERE DESC
#   skip "why" [N]                         N skipped tests
#   diag "text"                            a # comment explaining a failure
#   note "text"                            a # comment on stdout
#   skip_all "reason"                      1..0 # SKIP reason, exit 0
#   need_stack VAR...                      skip_all unless ./dev test set each VAR
#   missing "what is absent"               skip_all, but a failure under ./dev test
#   under_dev_test                         true when ./dev test runs us
#   bail_out "reason"                      Bail out!, exit 1
#   done_testing                           the plan line 1..N; exit 0
#
# Failures are reported in the TAP stream ("not ok"), so done_testing exits 0;
# a script that dies before done_testing has no plan and the harness reports
# an error.  Requests and answers are in tests/lib/http.sh, the test database
# in tests/lib/db.sh.

if [ -z "${BASH_VERSION:-}" ]; then
	echo "Bail out! tests/lib/tap.sh needs bash" >&2
	exit 1
fi

TAP_N=0
TAP_FAILED=0

_tap_result() { # PASSED(0|1) DESC
	TAP_N=$((TAP_N + 1))
	local desc=${2//$'\n'/ }
	desc=${desc//#/\\#}
	if [ "$1" = 1 ]; then
		printf 'ok %d - %s\n' "$TAP_N" "$desc"
	else
		printf 'not ok %d - %s\n' "$TAP_N" "$desc"
		TAP_FAILED=$((TAP_FAILED + 1))
	fi
}

ok() { # COND DESC
	local cond=$1 desc=${2:-}
	case $cond in
	'' ) _tap_result 0 "$desc" ;;
	*[!0-9]*)
		if eval "$cond"; then _tap_result 1 "$desc"; else
			_tap_result 0 "$desc"
			diag "  condition: $cond"
		fi ;;
	*)
		if [ "$cond" -eq 0 ]; then _tap_result 1 "$desc"; else
			_tap_result 0 "$desc"
			diag "  exit status: $cond"
		fi ;;
	esac
	return 0
}

pass() { # DESC
	_tap_result 1 "${1:-}"
}

fail() { # DESC
	_tap_result 0 "${1:-}"
}

is() { # GOT WANT DESC
	if [ "$1" = "$2" ]; then
		_tap_result 1 "${3:-}"
	else
		_tap_result 0 "${3:-}"
		diag "  got:  '$1'"
		diag "  want: '$2'"
	fi
}

isnt() { # GOT UNWANTED DESC
	if [ "$1" != "$2" ]; then
		_tap_result 1 "${3:-}"
	else
		_tap_result 0 "${3:-}"
		diag "  got:  '$1' (unwanted)"
	fi
}

# _tap_match TEXT ERE: true when a line of TEXT matches ERE, as
# `printf %s TEXT | grep -Eq ERE` says.  One line (most texts) goes to
# bash's own matcher, glibc's regex with the same GNU syntax: a fork and a
# program fewer, a thousand times a run.  Several lines still go to grep,
# where ^ and $ anchor at every line; an empty text has no line to match.
_tap_match() {
	[ -n "$1" ] || return 1
	if [[ $1 != *$'\n'* ]]; then
		[[ $1 =~ $2 ]]
	else
		printf '%s' "$1" | grep -Eq -- "$2"
	fi
}

like() { # GOT ERE DESC
	if _tap_match "$1" "$2"; then
		_tap_result 1 "${3:-}"
	else
		_tap_result 0 "${3:-}"
		diag "  got:  '$1'"
		diag "  want: /$2/"
	fi
}

# A literal substring, for values that are data, not patterns: a base64
# digest's '+' or a password's '.' would change what like() asks.
has() { # GOT STRING DESC
	case "$1" in
	*"$2"*) _tap_result 1 "${3:-}" ;;
	*)
		_tap_result 0 "${3:-}"
		diag "  got:  '$1'"
		diag "  want: '$2' within it"
		;;
	esac
}

unlike() { # GOT ERE DESC
	if ! _tap_match "$1" "$2"; then
		_tap_result 1 "${3:-}"
	else
		_tap_result 0 "${3:-}"
		diag "  got:  '$1'"
		diag "  unwanted: /$2/"
	fi
}

skip() { # REASON [N]
	local i
	for ((i = 0; i < ${2:-1}; i++)); do
		TAP_N=$((TAP_N + 1))
		printf 'ok %d # SKIP %s\n' "$TAP_N" "$1"
	done
}

# diag goes to stdout like note: automake's TAP driver then keeps it next to
# the "not ok" line it explains in the test's .log (stderr would be out of order).
diag() { printf '# %s\n' "$*"; }
note() { printf '# %s\n' "$*"; }

skip_all() { # REASON
	printf '1..0 # SKIP %s\n' "$1"
	exit 0
}

# under_dev_test: true when ./dev test runs this test.  ./dev test always
# exports BINDERY_TEST_VAR (even when its stack failed to start), always
# starts MariaDB, Azurite, lighttpd and Apache, always builds failpoints and
# installs every tool the tests use (chromium, playwright-core, jq, valgrind,
# clang).  So under it a missing dependency is a broken set-up, never a skip.
under_dev_test() {
	[ -n "${BINDERY_TEST_VAR:-}" ]
}

# missing WHAT: a dependency this test needs is absent.  Outside ./dev test
# (make check by hand) that is a skip; under ./dev test it is a failure, so
# a broken stack or install step can never pass as a quiet skip.
missing() {
	if under_dev_test; then
		bail_out "$1 (./dev test provides it: a broken set-up, not a skip)"
	fi
	skip_all "$1"
}

# need_stack VAR...: skip the whole test unless every VAR (BINDERY_CONFIG,
# BINDERY_TEST_*: what ./dev test hands to the tests) is set and not empty;
# under ./dev test an unset VAR is a failure (see missing).
need_stack() {
	local v
	for v in "$@"; do
		[ -n "${!v:-}" ] || missing "no test stack ($v is not set; ./dev test starts one)"
	done
}

bail_out() { # REASON
	printf 'Bail out! %s\n' "$1"
	exit 1
}

done_testing() {
	printf '1..%d\n' "$TAP_N"
	[ "$TAP_FAILED" -eq 0 ] || diag "$TAP_FAILED of $TAP_N failed"
	exit 0
}
