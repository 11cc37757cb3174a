# e2e: end-to-end scripts through lighttpd and Apache (they skip unless
# ./dev test has started the stack), and the tooling that runs them.
E2E_TESTS += tests/e2e/healthz.sh tests/e2e/smoke.sh tests/e2e/api.sh tests/e2e/security.sh \
	tests/e2e/redirect.sh tests/e2e/auth_modes.sh tests/e2e/content_safety.sh tests/e2e/csrf.sh \
	tests/e2e/config_secrets.sh
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/browser.sh
EXTRA_DIST += tests/e2e/pool.sh tests/e2e/healthz.sh tests/e2e/smoke.sh tests/e2e/api.sh tests/e2e/body_limits.sh \
	tests/e2e/concurrency.sh tests/e2e/security.sh tests/e2e/valgrind_cgi.sh \
	tests/e2e/redirect.sh tests/e2e/auth_modes.sh tests/e2e/browser.sh tests/e2e/content_safety.sh \
	tests/e2e/csrf.sh tests/e2e/config_secrets.sh tests/e2e/browser.mjs tests/final/secrets.sh \
	tests/lib/webauth-lighttpd.conf tests/lib/webauth-apache.conf \
	tests/lib/tap.sh tests/lib/stack.sh tests/lib/http.sh tests/lib/db.sh \
	tests/lib/faultproxy.sh \
	dev .ci/run .ci/provision.sh \
	tests/tools/short_body.py
# The tooling's own: stack_busy keeps a second ./dev bench off the state
# directory of one still running.
UNIT_TESTS += tests/unit/stack_busy.sh
EXTRA_DIST += tests/unit/stack_busy.sh
# The stacks' bindery.conf: /metrics on in ./dev up too, its counters where
# the web server's user can write them.
UNIT_TESTS += tests/unit/stack_config.sh
EXTRA_DIST += tests/unit/stack_config.sh
# ... and the bench's summaries: met goes by the rounds' own ratios.
UNIT_TESTS += tests/unit/bench_results.sh
EXTRA_DIST += tests/unit/bench_results.sh
# Slow clients must not pin workers: private lighttpds
# (FastCGI and CGI) with small body bounds, and a trickling client.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/slow_clients.sh
EXTRA_DIST += tests/e2e/slow_clients.sh tests/tools/slow_client.py
# A responder stopped and continued mid-body (SIGSTOP, SIGCONT): 503
# interrupted under FastCGI, whose body reads then fail with EINTR; the
# upload goes on under CGI.
E2E_TESTS += tests/e2e/stopped_responder.sh
EXTRA_DIST += tests/e2e/stopped_responder.sh
# What a worker caches, and that it gives it back before a body that fills
# every block in flight.
E2E_TESTS += tests/e2e/worker_caches.sh
EXTRA_DIST += tests/e2e/worker_caches.sh
# Pending blobs no row names: a fenced-out writer removes its own, the sweep
# the rest after sweep_cutoff, the audit calls the younger ones in flight.
E2E_TESTS += tests/e2e/strays.sh
EXTRA_DIST += tests/e2e/strays.sh
# Blobs that describe themselves: the committing call's metadata names the
# installation and the document, read back from the real service.
E2E_TESTS += tests/e2e/stamp.sh
EXTRA_DIST += tests/e2e/stamp.sh
# The restore drill: a database restored from an older backup while storage
# kept today's blobs, made right by audit --repair --adopt (crashed half-way
# and run again); a database and a prefix of its own, bindery.fcgi as CGI.
E2E_TESTS += tests/e2e/restore_drill.sh
EXTRA_DIST += tests/e2e/restore_drill.sh
# An upload that keeps making progress holds its intent by a lease, not a
# request deadline (doc/design.md "Leases"): a 3 MiB upload trickled over
# 31 s with request_deadline = 3, and a sweep during it; through lighttpd
# (FastCGI, CGI) and the pool behind Apache mod_proxy_fcgi, side by side.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/leases.sh
EXTRA_DIST += tests/e2e/leases.sh
# GET /documents?name=EXACT: exact names, pending unlisted.
E2E_TESTS += tests/e2e/list_by_name.sh
EXTRA_DIST += tests/e2e/list_by_name.sh
# The web servers pass tus (OPTIONS, PATCH, HEAD, DELETE, the tus headers) to
# bindery, and Apache's body limits apply to PATCH.
E2E_TESTS += tests/e2e/tus_webserver.sh
EXTRA_DIST += tests/e2e/tus_webserver.sh
# 200 MiB through tus in 8 MiB PATCHes under an Apache limited to 16 MiB per
# request, where a plain 20 MiB POST is 413: a host's cap on a request's size
# must not cap a document's.
E2E_TESTS += tests/e2e/tus_apache_limits.sh
EXTRA_DIST += tests/e2e/tus_apache_limits.sh
# The tus concatenation extension with curl: partial and final uploads,
# refusals, a repeated final, and the crash cells (a partial's commit,
# mid-assembly, the final's tag flip) resolved by resuming or by the sweep.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/tus_concat.sh
EXTRA_DIST += tests/e2e/tus_concat.sh
# Real tus clients, as users run them: tus-js-client 4.3.1 from Node
# (whole, aborted and resumed, responders killed mid-PATCH) and the checksum
# extension with curl, through lighttpd and Apache.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/tus_client.sh
EXTRA_DIST += tests/e2e/tus_client.sh tests/e2e/tus_client.mjs tests/bench/bench_tus.sh \
	tests/bench/bench_tus_parallel.mjs
# The list by name prefix in the API and on the page, the page's paging
# links: the page must work without JavaScript.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/list_prefix.sh
EXTRA_DIST += tests/e2e/list_prefix.sh
# The page's CSP with and without direct uploads, and /page.js = app/page.js.
E2E_TESTS += tests/e2e/page.sh
EXTRA_DIST += tests/e2e/page.sh

# Storage in production's shape: HTTPS, verified against [storage] ca_file,
# an account-host URL (the TLS Azurite ./dev test starts).
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/apache_load.sh
E2E_TESTS += tests/e2e/tls_storage.sh
EXTRA_DIST += tests/e2e/tls_storage.sh tests/tools/clock_skew_storage.py tests/e2e/apache_load.sh

# Direct uploads (doc/design.md "Direct uploads"): the curl flow, what the
# create-only SAS cannot do, finalize's checks, and the sweeper's cells for
# direct intents.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/direct.sh
EXTRA_DIST += tests/e2e/direct.sh tests/bench/bench_direct.sh tests/lib/direct.sh
# ... and what a hostile client does with its SAS: grants outliving rows,
# keys of another route, finalize's crashes and races, blobs that are not
# one Put Blob, client metadata (doc/api.md, "Direct uploads").
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/direct_hardening.sh
EXTRA_DIST += tests/e2e/direct_hardening.sh

# The HTTP API as documented (doc/openapi.yaml) against real answers through
# both servers, and the request log line: one per request, its id echoed back.
E2E_TESTS += tests/e2e/openapi.sh tests/e2e/request_log.sh
EXTRA_DIST += tests/e2e/openapi.sh tests/e2e/request_log.sh tests/tools/openapi_check.py \
	tests/tools/syslog_capture.py

# ./dev bench in miniature, so the benchmark cannot break unnoticed:
# tests/bench/bench.sh at 1 MiB, one round; results.json holds every figure
# through both servers.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/bench_smoke.sh
EXTRA_DIST += tests/e2e/bench_smoke.sh

# The web servers' own refusals (413, 411, 400, 431, 414, 408) are the API's
# JSON through the shipped configs, and bindery's own answers pass untouched:
# clients and operators see one error format, whoever refused.
E2E_TESTS += tests/e2e/server_errors.sh
EXTRA_DIST += tests/e2e/server_errors.sh tests/tools/raw_request.py

# Seeing the sweeper (a sweeper that stopped must not go unnoticed): the run
# history, `bindery status`, the sweeper in /healthz, GET /metrics through
# both servers.
E2E_TESTS += tests/e2e/status.sh
EXTRA_DIST += tests/e2e/status.sh tests/tools/metrics_parse.py

# The counters of GET /metrics are the sum over every responder process
# (lighttpd's, Apache mod_fcgid's, the pool's workers) and bindery sweep:
# requests through all three servers counted exactly, whichever process
# answers, never backwards; read by python3-prometheus-client.
E2E_TESTS += tests/e2e/metrics.sh
EXTRA_DIST += tests/e2e/metrics.sh

# The pool (bindery.fcgi --listen) behind Apache mod_proxy_fcgi
# (conf/apache-proxy-fcgi.conf): a binary round trip, a body streamed to
# storage while the client still sends, bodies that do not arrive whole,
# tokens and web-server users, more clients than workers; and
# conf/lighttpd-pool.conf in front of the same pool.
# (slow: ordered in Makefile.am's SLOW_TESTS) tests/e2e/apache_pool.sh
EXTRA_DIST += tests/e2e/apache_pool.sh

# The app under a path prefix: lighttpd at /docs, Apache at
# /bindery, CGI; every URL it hands out carries the prefix.
E2E_TESTS += tests/e2e/prefix.sh
EXTRA_DIST += tests/e2e/prefix.sh

# 401's challenge (invalid_token), If-None-Match's 304 and a replayed
# answer's Idempotent-Replayed, through the three web server set-ups.
E2E_TESTS += tests/e2e/http_details.sh
EXTRA_DIST += tests/e2e/http_details.sh

# Past one machine (no answer may depend on the node a request lands on):
# ./dev cluster's Galera cluster and two web hosts (tests/lib/cluster.sh);
# tests/cluster/*.sh run only under ./dev cluster test, against a running
# cluster.
EXTRA_DIST += tests/lib/cluster.sh
EXTRA_DIST += tests/cluster/env.sh tests/cluster/same_name.sh tests/cluster/read_after_write.sh \
	tests/cluster/replace_conflict.sh tests/cluster/galera_cost.sh \
	tests/cluster/failover.sh tests/cluster/delete_conflict.sh \
	tests/cluster/two_sweepers.sh tests/cluster/chaos_node_kill.sh tests/cluster/crash_split.sh \
	tests/cluster/capacity.sh tests/cluster/restore_drill.sh tests/cluster/events.sh
# Key-free storage ([storage] auth = entra): every storage path against the
# HTTPS Azurite in OAuth mode with no account key, the authority a loopback
# stand-in (tests/tools/fake_entra.py).
E2E_TESTS += tests/e2e/entra.sh
EXTRA_DIST += tests/e2e/entra.sh
# Events ([events]): webhooks written with the change, delivered at least
# once in each document's order, to a loopback Standard Webhooks receiver
# that checks the signatures itself (tests/tools/webhook_receiver.py).
# (In Makefile.am's SLOW_TESTS.)
EXTRA_DIST += tests/e2e/events.sh tests/lib/webhook.sh
# Admission: types by content and the clamd scan on every upload path,
# through a lighttpd and an Apache mod_fcgid of the test's own (tests/lib/clamd.sh).
E2E_TESTS += tests/e2e/admission.sh
EXTRA_DIST += tests/e2e/admission.sh tests/bench/bench_scan.sh tests/bench/bench_p5.sh
# Two builds' P1 side by side (bench_smoke.sh runs it under --long).
EXTRA_DIST += tests/bench/bench_ab.sh
# Quotas: reservations with the intent, settled once; 20 concurrent creates
# of one owner through a lighttpd and an Apache mod_fcgid of the test's own.
E2E_TESTS += tests/e2e/quota.sh
EXTRA_DIST += tests/e2e/quota.sh
# `bindery scan`: ready documents rescanned by a clamd of the test's own,
# infected ones quarantined out of every read and released again.
E2E_TESTS += tests/e2e/scan_cli.sh
EXTRA_DIST += tests/e2e/scan_cli.sh
