# tests/lib/tap.sh — TAP helpers for bindery's shell tests (bash).
#
#   . "$(dirname "$0")/../lib/tap.sh"
#   ok 0 "exit status 0 passes"            ok COND DESC
#   ok '[ "$x" -gt 2 ]' "an expression"    (COND: an integer is an exit status,
#                                            0 passes; anything else is eval'd)
#   is "$got" "$want" "equal strings"      is GOT WANT DESC
#   isnt "$got" "$bad" "different"         isnt GOT WANT DESC
#   like "$got" 'regex' "matches"          like GOT ERE DESC (grep -E)
#   unlike "$got" 'regex' "does not"       unlike GOT ERE DESC
#   skip "why" [N]                         N skipped tests
#   diag "text"                            a # comment explaining a failure
#   note "text"                            a # comment on stdout
#   skip_all "reason"                      1..0 # SKIP reason, exit 0
#   bail_out "reason"                      Bail out!, exit 1
#   done_testing                           the plan line 1..N; exit 0
#
# Failures are reported in the TAP stream ("not ok"), so done_testing exits 0;
# a script that dies before done_testing has no plan and the harness reports
# an error.  Also here: `req`, a curl wrapper for end-to-end tests.

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

like() { # GOT ERE DESC
	if printf '%s' "$1" | grep -Eq -- "$2"; then
		_tap_result 1 "${3:-}"
	else
		_tap_result 0 "${3:-}"
		diag "  got:  '$1'"
		diag "  want: /$2/"
	fi
}

unlike() { # GOT ERE DESC
	if ! printf '%s' "$1" | grep -Eq -- "$2"; then
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

bail_out() { # REASON
	printf 'Bail out! %s\n' "$1"
	exit 1
}

done_testing() {
	printf '1..%d\n' "$TAP_N"
	[ "$TAP_FAILED" -eq 0 ] || diag "$TAP_FAILED of $TAP_N failed"
	exit 0
}

# req METHOD URL [CURL-ARGS...]: one HTTP request.  Sets HTTP_CODE (000 when
# there was no answer), HTTP_BODY, HTTP_HEADERS (lower-cased names) and
# HTTP_CTYPE.  Never fails the script.
req() {
	local method=$1 url=$2 hfile bfile
	shift 2
	hfile=$(mktemp) bfile=$(mktemp)
	HTTP_CODE=$(curl -s -m "${REQ_TIMEOUT:-30}" -X "$method" -D "$hfile" -o "$bfile" \
		-w '%{http_code}' "$@" "$url" 2>/dev/null) || true
	[ -n "$HTTP_CODE" ] || HTTP_CODE=000
	HTTP_BODY=$(cat "$bfile")
	HTTP_HEADERS=$(tr -d '\r' <"$hfile" | sed -e 's/^\([^:]*\):/\L\1:/')
	HTTP_CTYPE=$(printf '%s\n' "$HTTP_HEADERS" | sed -n 's/^content-type: *//p' | tail -n 1)
	rm -f "$hfile" "$bfile"
}

# header NAME: the value of response header NAME (lower-case) from the last req.
header() {
	printf '%s\n' "$HTTP_HEADERS" | sed -n "s/^$1: *//p" | tail -n 1
}

# cgi_req CONF METHOD URI [VAR=VALUE...] < BODY: one request to
# $BINDERY_TEST_BIN/bindery.fcgi run as a plain CGI program with config CONF
# and a clean environment; prints the answer (headers and body, CRs removed).
cgi_req() {
	local conf=$1 method=$2 uri=$3 query=
	shift 3
	case $uri in *\?*) query=${uri#*\?} ;; esac
	env -i PATH="$PATH" BINDERY_CONFIG="$conf" GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD="$method" \
		REQUEST_URI="$uri" QUERY_STRING="$query" "$@" "$BINDERY_TEST_BIN/bindery.fcgi" 2>/dev/null |
		tr -d '\r'
}
