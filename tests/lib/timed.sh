#!/bin/sh
# timed.sh PROGRAM [ARGS...]: run one test the way automake's harness
# would (Makefile.am's LOG_COMPILER and SH_LOG_COMPILER).
#
# Under ./dev test, BINDERY_TEST_LANES lists the lanes' state directories
# (a whole stack each; dev's test_lanes_start): the test runs in the first
# lane nobody holds, with that lane's environment (LANE/test.env), and holds
# it (flock on LANE/lane.lock) until it ends, so tests in one lane never
# overlap.
#
# BINDERY_TEST_LIGHT_LANE, when set, is one of those lanes kept for the
# tests Makefile.am calls light (BINDERY_LIGHT_TESTS: they mostly wait on a
# lease, a deadline or a held failpoint and use little CPU): a light test
# tries it first and takes any other free lane after it; any other test never
# takes it.  So at most one test more than there are cores' worth of busy
# lanes runs at once, and it is one that sleeps.
#
# When BINDERY_TEST_TIMES names a file, "TEST<TAB>SECONDS<TAB>LANE<TAB>CPU
# <TAB>START" (START in seconds since the epoch) is appended to it, so a run
# can say where its time went and when each lane was busy.  The test's output
# and exit status pass through untouched.
lane=-
if [ -n "${BINDERY_TEST_LANES:-}" ]; then
	eval "timed_test=\${$#}"
	timed_light=
	for t in ${BINDERY_LIGHT_TESTS:-}; do
		case $timed_test in
		*/"$t" | "$t") timed_light=1 ;;
		esac
	done
	if [ -n "$timed_light" ]; then
		timed_lanes="${BINDERY_TEST_LIGHT_LANE:-} $BINDERY_TEST_LANES"
	else
		timed_lanes=
		for d in $BINDERY_TEST_LANES; do
			[ "$d" = "${BINDERY_TEST_LIGHT_LANE:-}" ] || timed_lanes="$timed_lanes $d"
		done
	fi
	lane=
	while [ -z "$lane" ]; do
		for d in $timed_lanes; do
			# LANE/holder names the test shell holding the lane: while
			# that process lives, the lane is not worth a flock (a
			# program of its own, and a waiting test tries every lane
			# five times a second).  The lock alone decides.
			read -r holder 2>/dev/null <"$d/holder" && [ -n "$holder" ] &&
				kill -0 "$holder" 2>/dev/null && continue
			exec 9>>"$d/lane.lock"
			if flock -n 9; then
				lane=$d
				echo "$$" >"$d/holder"
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
	# CPU seconds (user + system) of the test and what it waited for: the
	# second line of `times` ("0m1.20s 0m0.50s"); not the lane's servers'.
	# (Run by this shell, not in a $(...) subshell, which has no children.)
	cpu_file=$(mktemp) && times >"$cpu_file" && cpu=$(sed -n '2s/[ms]/ /gp' "$cpu_file")
	rm -f "$cpu_file"
	awk -v a="$start" -v b="$(date +%s.%N)" -v t="$test_name" -v l="${lane##*/}" -v c="$cpu" \
		'BEGIN { split(c, x, " "); printf "%s\t%.1f\t%s\t%.1f\t%.1f\n", t, b - a, l, x[1] * 60 + x[2] + x[3] * 60 + x[4], a }' \
		>>"$BINDERY_TEST_TIMES"
fi
# Still holding the lock: no waiter may take the lane for a process that
# reuses this shell's PID (pid_max is 32768 here; a run starts 50,000).
[ "$lane" = - ] || : >"$lane/holder"
exit "$rc"
