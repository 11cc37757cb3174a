# app: the FastCGI/CGI responder and the admin CLI, their man pages.
bin_PROGRAMS += app/bindery.fcgi
app_bindery_fcgi_SOURCES = app/bindery_fcgi.c app/app.h app/handlers.c app/page.c \
	app/render.c app/render.h app/request.c app/request.h
bin_PROGRAMS += app/bindery
app_bindery_SOURCES = app/bindery_cli.c app/cli.h \
	app/cmd_sweep.c app/cmd_audit.c app/cmd_account.c
dist_man_MANS += man/bindery.1 man/bindery.fcgi.8
EXTRA_DIST += tests/bench/bench_fcgi_rss.sh
