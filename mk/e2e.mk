# e2e: end-to-end scripts through lighttpd and Apache (they skip unless
# ./dev test has started the stack), and the tooling that runs them.
E2E_TESTS += tests/e2e/healthz.sh tests/e2e/smoke.sh
EXTRA_DIST += tests/e2e/healthz.sh tests/e2e/smoke.sh \
	tests/lib/tap.sh tests/lib/stack.sh \
	dev .ci/run \
	conf/bindery.conf.sample conf/lighttpd.conf conf/apache-fcgid.conf conf/bindery.cron
