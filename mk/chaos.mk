# chaos: proof-of-survival tests (issue 6) -- the crash matrix (every
# failpoint x operation through lighttpd, then a sweep, then the invariants
# checked in MariaDB and Azurite directly), the fault proxy and the chaos run.
# They skip unless ./dev test has started the stack.
E2E_TESTS += tests/e2e/crash_matrix.sh
EXTRA_DIST += tests/e2e/crash_matrix.sh tests/chaos/lib.sh
