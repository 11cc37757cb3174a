# bindery's sweeper (conf/bindery.cron with the package's paths): every five
# minutes it removes stale upload intents, rolls finished uploads forward and
# drains the deletion outbox.  It prints nothing when all is well, so cron
# mails only problems; --lock makes a run that finds another still going exit
# at once without a word.  The job does nothing, without a word: under
# systemd (bindery.timer runs the same command there, once enabled); once
# the package is removed but not purged; and while /etc/bindery/bindery.conf
# still holds the shipped @NAME@ placeholders (the names of
# bindery.conf.sample; a test compares them).  Any other problem, an
# unreadable or missing file included, reaches the sweep, whose error is
# mailed.
MAILTO=root
*/5 * * * * www-data [ -d /run/systemd/system ] || [ ! -x /usr/sbin/bindery ] || grep -Eqs '^[[:space:]]*[a-z_]+[[:space:]]*=.*@(DB_SOCKET|DB_PASSWORD|STORAGE_ENDPOINT|STORAGE_ACCOUNT|STORAGE_KEY|DEMO_TOKEN)@' /etc/bindery/bindery.conf || /usr/sbin/bindery -c /etc/bindery/bindery.conf sweep --lock bindery-sweep
