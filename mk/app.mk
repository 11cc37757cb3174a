# app: the FastCGI/CGI responder and the admin CLI, their man pages.
cgibin_PROGRAMS += app/bindery.fcgi
app_bindery_fcgi_SOURCES = app/bindery_fcgi.c app/app.h app/routes.c app/routes.h \
	app/handlers.c app/input.c app/input.h app/answer.c app/answer.h app/download.c app/health.c \
	app/tus.c app/direct.c app/page.c app/render.c app/render.h app/request.c app/request.h \
	app/body_pace.c app/body_pace.h app/admit.c app/admit.h app/pool.c app/pool.h app/status_render.c app/status_render.h
# The page's script is a file of its own (app/page.js) and part of the
# binary: a header generated from it, rebuilt whenever it changes.
nodist_app_bindery_fcgi_SOURCES = app/page_js.h app/favicon_ico.h
BUILT_SOURCES = app/page_js.h app/favicon_ico.h
CLEANFILES = app/page_js.h app/favicon_ico.h
app/page_js.h: $(top_srcdir)/app/page.js $(top_srcdir)/mk/embed.sh
	@$(MKDIR_P) app
	$(SHELL) $(top_srcdir)/mk/embed.sh page_js <$(top_srcdir)/app/page.js >$@.tmp && mv -f $@.tmp $@
# The page's icon likewise (16x16, 32-bit: a blue square, three white lines).
app/favicon_ico.h: $(top_srcdir)/app/favicon.ico $(top_srcdir)/mk/embed.sh
	@$(MKDIR_P) app
	$(SHELL) $(top_srcdir)/mk/embed.sh favicon_ico <$(top_srcdir)/app/favicon.ico >$@.tmp && mv -f $@.tmp $@
EXTRA_DIST += app/page.js app/favicon.ico mk/embed.sh
# The admin CLI is a system administrator's program: sbindir.
sbin_PROGRAMS += app/bindery
app_bindery_SOURCES = app/bindery_cli.c app/cli.c app/cli.h \
	app/cmd_sweep.c app/cmd_audit.c app/cmd_lifecycle_policy.c \
	app/cmd_check_account.c app/cmd_migrate.c app/cmd_cors.c \
	app/cmd_status.c app/cmd_events.c app/cmd_quota.c app/cmd_scan.c app/status_render.c app/status_render.h
# The route table is the responder's, not the library's: its test compiles it in.
check_PROGRAMS += tests/unit/test_routes
tests_unit_test_routes_SOURCES = tests/unit/test_routes.c app/routes.c
tests_unit_test_routes_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
UNIT_TESTS += tests/unit/test_routes
# How long the responder waits for a slow client's body: pure, compiled in.
check_PROGRAMS += tests/unit/test_body_pace
tests_unit_test_body_pace_SOURCES = tests/unit/test_body_pace.c app/body_pace.c app/body_pace.h
tests_unit_test_body_pace_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
UNIT_TESTS += tests/unit/test_body_pace
# One door: the responder's objects call lib/protocol, never the registry
# or storage (read from the built objects with nm).
UNIT_TESTS += tests/unit/front_door.sh
EXTRA_DIST += tests/unit/front_door.sh
# The man pages name the paths this build was configured with (the default
# configuration file, the examples), so they are made from man/*.in.
man_MANS = man/bindery.8 man/bindery.fcgi.8 man/bindery.conf.5
EXTRA_DIST += man/bindery.8.in man/bindery.fcgi.8.in man/bindery.conf.5.in
CLEANFILES += $(man_MANS)
man_subst = sed -e 's|@sysconfdir[@]|$(sysconfdir)|g' -e 's|@docdir[@]|$(docdir)|g' \
	-e 's|@pkgdatadir[@]|$(pkgdatadir)|g' -e 's|@VERSION[@]|$(VERSION)|g'
man/bindery.8: $(top_srcdir)/man/bindery.8.in Makefile
	@$(MKDIR_P) man
	$(AM_V_GEN)$(man_subst) <$(top_srcdir)/man/bindery.8.in >$@.tmp && mv -f $@.tmp $@
man/bindery.fcgi.8: $(top_srcdir)/man/bindery.fcgi.8.in Makefile
	@$(MKDIR_P) man
	$(AM_V_GEN)$(man_subst) <$(top_srcdir)/man/bindery.fcgi.8.in >$@.tmp && mv -f $@.tmp $@
man/bindery.conf.5: $(top_srcdir)/man/bindery.conf.5.in Makefile
	@$(MKDIR_P) man
	$(AM_V_GEN)$(man_subst) <$(top_srcdir)/man/bindery.conf.5.in >$@.tmp && mv -f $@.tmp $@
EXTRA_DIST += tests/bench/bench_fcgi_rss.sh
