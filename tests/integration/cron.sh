#!/bin/bash
# tests/integration/cron.sh — conf/bindery.cron is what its comment
# promises: one system crontab line, every five minutes as www-data, whose
# command is `bindery sweep --lock NAME`; and that command, run the way cron
# runs it (/bin/sh -c, cron's bare environment, no terminal, so logs go to
# syslog), succeeds and prints nothing, so cron mails nothing.  It runs as
# the test's user against the test stack: the file's paths are an
# installation's, replaced here by this build's and the stack's.
. "$(dirname "$0")/../lib/tap.sh"

need_stack BINDERY_CONFIG BINDERY_TEST_BIN
CRON_FILE=${top_srcdir:?}/conf/bindery.cron
CRON_TMP=$(mktemp -d) || bail_out "mktemp -d failed"
trap 'rm -rf "$CRON_TMP"' EXIT

grep -Ev '^[[:space:]]*(#|$)|^[A-Z_]+=' "$CRON_FILE" >"$CRON_TMP/jobs"
is "$(wc -l <"$CRON_TMP/jobs")" 1 "conf/bindery.cron holds one job"
read -r cron_min cron_hour cron_dom cron_mon cron_dow cron_user cron_cmd <"$CRON_TMP/jobs"
is "$cron_min $cron_hour $cron_dom $cron_mon $cron_dow" '*/5 * * * *' "... every five minutes"
is "$cron_user" www-data "... as www-data (the sixth field of a system crontab)"
like "$cron_cmd" '^/usr/local/sbin/bindery -c /etc/bindery/bindery\.conf sweep( [^ ]+)* --lock [a-z0-9-]+( |$)' \
	"... running make install's bindery: sweep --lock NAME"
like "$("$BINDERY_TEST_BIN/bindery" sweep --help)" '--lock NAME' "--lock NAME is an option of bindery sweep"

cron_local=${cron_cmd/#\/usr\/local\/sbin\/bindery /$BINDERY_TEST_BIN/bindery }
cron_local=${cron_local/ -c \/etc\/bindery\/bindery.conf / -c $BINDERY_CONFIG }
# Whatever earlier tests left for the sweeper is resolved first: the run
# under test is an ordinary one, with nothing wrong to report.
"$BINDERY_TEST_BIN/bindery" -c "$BINDERY_CONFIG" sweep >"$CRON_TMP/first" 2>&1 ||
	sed 's/^/# first sweep: /' "$CRON_TMP/first"

env -i PATH=/usr/bin:/bin SHELL=/bin/sh HOME="$CRON_TMP" LOGNAME="$(id -un)" \
	/bin/sh -c "$cron_local" >"$CRON_TMP/out" 2>&1 </dev/null
is "$?" 0 "the cron line's command exits 0"
is "$(wc -c <"$CRON_TMP/out")" 0 "... and prints nothing (cron mails nothing)"
sed 's/^/# printed: /' "$CRON_TMP/out"
done_testing
