# bindery's sweeper (conf/bindery.cron with the package's paths): every five
# minutes it removes stale upload intents, rolls finished uploads forward and
# drains the deletion outbox.  It prints nothing when all is well, so cron
# mails only problems; --lock makes a run that finds another still going exit
# at once without a word.  Until /etc/bindery/bindery.conf is filled in, each
# run mails the configuration error.  Under systemd, bindery.timer runs the
# same command instead; the [ -x ] check keeps the job quiet once the package
# is removed but not purged.
MAILTO=root
*/5 * * * * www-data [ ! -d /run/systemd/system ] && [ -x /usr/sbin/bindery ] && /usr/sbin/bindery -c /etc/bindery/bindery.conf sweep --lock bindery-sweep
