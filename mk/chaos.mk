# chaos: bindery survives crashes and faults -- the crash matrix (every
# failpoint x operation through lighttpd, then a sweep, then the invariants
# checked in MariaDB and Azurite directly), the fault proxy and its own test,
# the fault tests through it, and the chaos run.  The end-to-end ones skip
# unless ./dev test has started the stack.
check_PROGRAMS += tests/tools/faultproxy
tests_tools_faultproxy_SOURCES = tests/tools/faultproxy.c
tests_tools_faultproxy_LDADD =
UNIT_TESTS += tests/chaos/faultproxy.sh
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/faults.sh tests/e2e/fencing.sh tests/chaos/chaos.sh
# tests/chaos/events_chaos.sh: the chaos run with [events] on, every event checked
EXTRA_DIST += tests/e2e/crash_matrix.sh tests/e2e/fencing.sh tests/e2e/faults.sh tests/lib/chaos.sh \
	tests/chaos/faultproxy.sh tests/chaos/chaos.sh tests/chaos/events_chaos.sh
# Storage refusing a request bindery built is 502 storage_error, never the
# client's 400 (through the fault proxy and a lighttpd of its own); If-Match: *
# matches whatever version is current when the commit lands, even under a
# concurrent replace held by a failpoint.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/tus.sh
E2E_TESTS += tests/e2e/storage_errors.sh tests/e2e/if_match.sh tests/e2e/etag_pin.sh \
	tests/e2e/list_order.sh tests/e2e/download_stream.sh
EXTRA_DIST += tests/e2e/storage_errors.sh tests/e2e/if_match.sh tests/e2e/tus.sh tests/e2e/tus_crash.sh tests/e2e/etag_pin.sh tests/e2e/list_order.sh tests/e2e/download_stream.sh tests/tools/count_creates.py
# A database that stops answering costs a request, not a worker: it answers
# 503 within request_deadline (faultproxy -r in front of MariaDB's TCP port, a
# lighttpd of its own).
E2E_TESTS += tests/e2e/db_deadline.sh
EXTRA_DIST += tests/e2e/db_deadline.sh
