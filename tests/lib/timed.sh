#!/bin/sh
# timed.sh PROGRAM [ARGS...]: run one test the way automake's harness
# would (Makefile.am's LOG_COMPILER and SH_LOG_COMPILER), and when
# BINDERY_TEST_TIMES names a file (./dev test sets var/test/times.tsv),
# append "TEST<TAB>SECONDS" to it, so a run can say where its time went.
# The test's output and exit status pass through untouched.
start=$(date +%s.%N)
"$@"
rc=$?
if [ -n "${BINDERY_TEST_TIMES:-}" ]; then
	# The last argument is the test (a script after its shell, or a program).
	eval "test_name=\${$#}"
	awk -v a="$start" -v b="$(date +%s.%N)" -v t="$test_name" \
		'BEGIN { printf "%s\t%.1f\n", t, b - a }' >>"$BINDERY_TEST_TIMES"
fi
exit "$rc"
