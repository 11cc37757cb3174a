# service: the protocol, the FastCGI responder and the admin CLI.
lib_libbindery_a_SOURCES += lib/failpoint.c lib/failpoint.h lib/services.c lib/services.h \
	lib/protocol.c lib/protocol.h
bin_PROGRAMS += app/bindery
app_bindery_SOURCES = app/bindery_cli.c app/cli.h
bin_PROGRAMS += app/bindery.fcgi
app_bindery_fcgi_SOURCES = app/bindery_fcgi.c app/app.h app/handlers.c app/page.c \
	app/request.c app/request.h
E2E_TESTS += tests/e2e/api.sh
EXTRA_DIST += tests/e2e/api.sh
E2E_TESTS += tests/e2e/concurrency.sh
EXTRA_DIST += tests/e2e/concurrency.sh
check_PROGRAMS += tests/integration/test_experiments
INTEGRATION_TESTS += tests/integration/test_experiments
dist_man_MANS += man/bindery.fcgi.8
EXTRA_DIST += tests/bench/bench_fcgi_rss.sh
E2E_TESTS += tests/e2e/security.sh tests/e2e/valgrind_cgi.sh
EXTRA_DIST += tests/e2e/security.sh tests/e2e/valgrind_cgi.sh tests/final/secrets.sh
E2E_TESTS += tests/e2e/redirect.sh
EXTRA_DIST += tests/e2e/redirect.sh
E2E_TESTS += tests/e2e/auth_modes.sh
EXTRA_DIST += tests/e2e/auth_modes.sh
E2E_TESTS += tests/e2e/browser.sh
EXTRA_DIST += tests/e2e/browser.sh tests/e2e/browser.mjs
