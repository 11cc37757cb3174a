# lib/protocol: the order of steps of doc/design.md (create, replace, delete,
# outbox), the reads, tus and direct uploads, the sweeper, the audit, the
# status figures, and the services bundle they run on.
lib_libbindery_a_SOURCES += lib/protocol/services.c lib/protocol/services.h \
	lib/protocol/events.c lib/protocol/events.h \
	lib/protocol/protocol.c lib/protocol/protocol.h lib/protocol/protocol_internal.h \
	lib/protocol/tus.c lib/protocol/tus.h lib/protocol/tus_internal.h \
	lib/protocol/tus_concat.c lib/protocol/tus_concat.h \
	lib/protocol/direct.c lib/protocol/direct.h \
	lib/protocol/sweep.c lib/protocol/sweep.h \
	lib/protocol/audit.c lib/protocol/audit.h \
	lib/protocol/reads.c lib/protocol/reads.h \
	lib/protocol/status.c lib/protocol/status.h \
	lib/protocol/stray.c lib/protocol/stray.h \
	lib/protocol/stamp.c lib/protocol/stamp.h \
	lib/protocol/adopt.c lib/protocol/adopt.h \
	lib/protocol/admission.c lib/protocol/admission.h lib/protocol/result.h \
	lib/protocol/sniff.c lib/protocol/sniff.h \
	lib/protocol/rescan.c lib/protocol/rescan.h

check_PROGRAMS += tests/unit/test_sweep_decide tests/unit/test_create_decide tests/unit/test_tus_decide \
	tests/unit/test_stamp tests/unit/test_adopt_decide tests/unit/test_rescan_decide
UNIT_TESTS += tests/unit/test_sweep_decide tests/unit/test_create_decide tests/unit/test_tus_decide \
	tests/unit/test_stamp tests/unit/test_adopt_decide tests/unit/test_rescan_decide
# libmagic's verdicts on bytes the test builds, and the leading-byte count.
check_PROGRAMS += tests/unit/test_sniff
UNIT_TESTS += tests/unit/test_sniff
# The Standard Webhooks signature, pinned to the specification's example.
check_PROGRAMS += tests/unit/test_events
UNIT_TESTS += tests/unit/test_events

check_PROGRAMS += tests/integration/test_experiments \
	tests/integration/test_sweep tests/integration/test_audit tests/integration/test_fencing
# (test_sweep is in Makefile.am's SLOW_TESTS: its 2,000-item backlog is
# swept in a lane whose container grows all run.)
INTEGRATION_TESTS += tests/integration/test_experiments \
	tests/integration/test_audit tests/integration/test_fencing \
	tests/integration/sweep.sh tests/integration/audit_deep.sh \
	tests/integration/idempotency.sh
EXTRA_DIST += tests/tools/sweep_plant.h tests/tools/audit_json.h tests/tools/mem_reader.h tests/integration/sweep.sh \
	tests/integration/idempotency.sh \
	tests/integration/audit_deep.sh

# conf/bindery.cron's command line, run as cron would: sweep --lock, quiet.
INTEGRATION_TESTS += tests/integration/cron.sh
EXTRA_DIST += tests/integration/cron.sh

# The loopback Standard Webhooks receiver that judges the events bindery
# delivers (signatures checked by Python's hmac, modes for the failures a
# receiver has), and the check that it accepts and refuses what the
# specification says: it needs no stack, so it runs with the unit tests.
UNIT_TESTS += tests/integration/webhook_receiver.sh
EXTRA_DIST += tests/integration/webhook_receiver.sh tests/tools/webhook_receiver.py

noinst_PROGRAMS += tests/bench/bench_sweep
EXTRA_DIST += tests/bench/bench_sweep.sh

# A claimed item is never processed after its lease ran out.
# ... and the audit reports only findings a fresh read confirms.
check_PROGRAMS += tests/integration/test_sweep_lease tests/integration/test_audit_race
INTEGRATION_TESTS += tests/integration/test_sweep_lease tests/integration/test_audit_race
# GET /documents?name=: docs_find_ready_by_name, exact and ready only.
check_PROGRAMS += tests/integration/test_docs_by_name
INTEGRATION_TESTS += tests/integration/test_docs_by_name
# GET /documents?prefix=: docs_list_ready with an escaped LIKE prefix (the page's filter).
check_PROGRAMS += tests/integration/test_docs_prefix
INTEGRATION_TESTS += tests/integration/test_docs_prefix
# The quarantine column (sql/018): the rescan's walk, quarantine on the bytes
# scanned, release, and every reader's query leaving it out.
check_PROGRAMS += tests/integration/test_docs_quarantine
INTEGRATION_TESTS += tests/integration/test_docs_quarantine

# clamd's INSTREAM client: its pure parts (clamd's answers as verdicts, the
# address forms) and what it does without a clamd.
lib_libbindery_a_SOURCES += lib/protocol/clamd.c lib/protocol/clamd.h
check_PROGRAMS += tests/unit/test_clamd
UNIT_TESTS += tests/unit/test_clamd
# ... and against a real clamd of the test's own (tests/lib/clamd.sh),
# through the driver clamd_scan (not a test itself).
check_PROGRAMS += tests/integration/clamd_scan
INTEGRATION_TESTS += tests/integration/clamd.sh
EXTRA_DIST += tests/integration/clamd.sh tests/lib/clamd.sh
