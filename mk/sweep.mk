# sweep: bindery sweep, audit, lifecycle-policy, check-account.
lib_libbindery_a_SOURCES += lib/sweep.c lib/sweep.h lib/sweep_db.c lib/sweep_db.h \
	lib/lifecycle.c lib/lifecycle.h \
	lib/audit.c lib/audit.h
app_bindery_SOURCES += app/cmd_sweep.c app/cmd_audit.c app/cmd_account.c

check_PROGRAMS += tests/unit/test_sweep_decide
UNIT_TESTS += tests/unit/test_sweep_decide

check_PROGRAMS += tests/integration/test_sweep
INTEGRATION_TESTS += tests/integration/test_sweep
EXTRA_DIST += tests/integration/sweep_plant.h
check_PROGRAMS += tests/integration/test_audit
INTEGRATION_TESTS += tests/integration/test_audit
check_PROGRAMS += tests/unit/test_lifecycle_policy
UNIT_TESTS += tests/unit/test_lifecycle_policy
noinst_PROGRAMS += tests/bench/bench_sweep
EXTRA_DIST += tests/bench/bench_sweep.sh
INTEGRATION_TESTS += tests/integration/sweep.sh
EXTRA_DIST += tests/integration/sweep.sh
dist_man_MANS += man/bindery.1
INTEGRATION_TESTS += tests/integration/audit_deep.sh
EXTRA_DIST += tests/integration/audit_deep.sh
