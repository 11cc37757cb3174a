#!/bin/sh
# timed.sh PROGRAM [ARGS...]: run one test the way automake's harness
# would (Makefile.am's LOG_COMPILER and SH_LOG_COMPILER).
#
# Under ./dev test, BINDERY_TEST_LANES lists the lanes' state directories
# (a whole stack each; dev's test_lanes_start): the test runs in the first
# lane nobody holds, with that lane's environment (LANE/test.env), and holds
# it (flock on LANE/lane.lock) until it ends, so tests in one lane never
# overlap.  make check -jN with N lanes always finds one free.
#
# When BINDERY_TEST_TIMES names a file, "TEST<TAB>SECONDS<TAB>LANE" is
# appended to it, so a run can say where its time went.  The test's output
# and exit status pass through untouched.
lane=-
if [ -n "${BINDERY_TEST_LANES:-}" ]; then
	lane=
	while [ -z "$lane" ]; do
		for d in $BINDERY_TEST_LANES; do
			exec 9>>"$d/lane.lock"
			if flock -n 9; then
				lane=$d
				break
			fi
			exec 9>&-
		done
		[ -n "$lane" ] || sleep 0.2
	done
	# shellcheck disable=SC1091
	. "$lane/test.env"
	echo "# lane: $lane"
fi
start=$(date +%s.%N)
# The lock stays with this shell: nothing the test starts inherits it.
"$@" 9>&-
rc=$?
if [ -n "${BINDERY_TEST_TIMES:-}" ]; then
	# The last argument is the test (a script after its shell, or a program).
	eval "test_name=\${$#}"
	awk -v a="$start" -v b="$(date +%s.%N)" -v t="$test_name" -v l="${lane##*/}" \
		'BEGIN { printf "%s\t%.1f\t%s\n", t, b - a, l }' >>"$BINDERY_TEST_TIMES"
fi
exit "$rc"
