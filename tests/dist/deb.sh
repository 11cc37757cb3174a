#!/bin/bash
# tests/dist/deb.sh — the Debian package (debian/) builds from the release
# tarball, is lintian-clean, installs, serves documents through the
# system's own Apache (mod_fcgid's body limit in a VirtualHost of its own),
# runs its cron job quietly, serves them again through
# its standing pool (bindery-fcgi.socket and bindery-fcgi.service, run by
# hand as systemd would: there is no systemd here) behind Apache's
# mod_proxy_fcgi, and purges without a trace.  Until its configuration is
# filled in nothing runs: no unit is enabled, the sweeper's service skips
# its runs and the cron job is silent (only while the shipped placeholders
# remain).  It pulls in no web server (Recommends) and its sweeper's
# service is sandboxed.
#
# Only under ./dev test --long (BINDERY_TEST_LONG): it builds the package
# with its unit tests, installs and purges it, and starts the system Apache
# (not ./dev's) on a spare loopback port; about 2.5 min here.  It changes
# the machine (a package, /etc/apache2) and restores it in its EXIT trap:
# ports.conf, the confs and the modules it enabled, Apache and the pool
# stopped by their PIDs, /run/bindery.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"

DEB_SRC=$(cd "${top_srcdir:?}" && pwd -P)
DEB_BUILD=$(cd "${top_builddir:?}" && pwd -P)
[ -n "${BINDERY_TEST_LONG:-}" ] ||
	skip_all "the Debian package build, install and purge run under ./dev test --long"
# dpkg-buildpackage's own make check and make distcheck run from a tarball.
if [ "$(git -C "$DEB_SRC" rev-parse --show-toplevel 2>/dev/null)" != "$DEB_SRC" ]; then
	skip_all "$DEB_SRC is not a git checkout (a tarball build)"
fi
need_stack BINDERY_TEST_VAR BINDERY_TEST_DB_PORT BINDERY_TEST_MIGRATE_CONFIG \
	BINDERY_TEST_DB_SOCKET BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT \
	BINDERY_TEST_BLOB_KEY BINDERY_TEST_TOKEN
[ "$(id -u)" = 0 ] || missing "root (the test installs a package and runs the system Apache)"
for tool in dpkg-buildpackage dh lintian apache2ctl a2enconf a2disconf a2enmod \
	a2dismod lighttpd mariadb flock systemd-analyze systemd-socket-activate setpriv; do
	command -v "$tool" >/dev/null 2>&1 || missing "$tool (./dev test --long installs it)"
done
[ -f /usr/lib/apache2/modules/mod_fcgid.so ] || missing "libapache2-mod-fcgid"
[ -f /usr/lib/apache2/modules/mod_proxy_fcgi.so ] || missing "mod_proxy_fcgi (apache2)"

# One run at a time on a machine: the package and /etc/apache2 are shared.
exec 9>/run/lock/bindery-deb-test.lock
flock -w 900 9 || bail_out "another tests/dist/deb.sh holds /run/lock/bindery-deb-test.lock"
if dpkg-query -W -f='${Status}' bindery 2>/dev/null | grep -q 'installed'; then
	bail_out "a bindery package is already installed here; this test would purge it"
fi
APACHE_PIDFILE=/var/run/apache2/apache2.pid
if [ -s "$APACHE_PIDFILE" ] && kill -0 "$(cat "$APACHE_PIDFILE")" 2>/dev/null; then
	bail_out "the system Apache is running; the test starts and stops it itself"
fi

DEB_TMP=$(mktemp -d "$BINDERY_TEST_VAR/deb.XXXXXX") || bail_out "mktemp -d failed"
DEB_TAG=$(stack_random_hex 4)
DEB_DB=bindery_deb_$DEB_TAG
DEB_APACHE_PID='' DEB_PORTS_SAVED='' DEB_CONF_ENABLED='' DEB_FCGID_ENABLED='' DEB_HEADERS_ENABLED=''
DEB_OVERRIDE_ADDED=''
DEB_POOL_PID='' DEB_PROXY_CONF_ENABLED='' DEB_PROXY_ENABLED='' DEB_PROXY_FCGI_ENABLED=''
DEB_RUN_BINDERY_MADE=''
# apache2ctl makes Debian's run directory; leave none behind if there was none.
DEB_RUNDIR_MADE=''
[ -d /var/run/apache2 ] || DEB_RUNDIR_MADE=1
# What cron, su and apache2ctl start with: none of the test stack's
# BINDERY_* variables (BINDERY_CONFIG would win over the installed file).
DEB_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ LANG=C)

deb_cleanup() {
	local i
	if [ -n "$DEB_APACHE_PID" ] && kill -0 "$DEB_APACHE_PID" 2>/dev/null; then
		kill "$DEB_APACHE_PID"
		for ((i = 0; i < 100; i++)); do
			kill -0 "$DEB_APACHE_PID" 2>/dev/null || break
			sleep 0.1
		done
	fi
	[ -z "$DEB_CONF_ENABLED" ] || [ ! -L /etc/apache2/conf-enabled/bindery.conf ] ||
		a2disconf -q bindery >/dev/null
	# a2enconf's record that an administrator enabled it: a2disconf -p in
	# the postrm leaves it when the conf is already purged (a2enmod returns
	# early for a dangling link).
	[ -z "$DEB_CONF_ENABLED" ] || rm -f /var/lib/apache2/conf/enabled_by_admin/bindery
	# And the record of the a2disconf before the pool's part.
	[ -z "$DEB_CONF_ENABLED" ] || rm -f /var/lib/apache2/conf/disabled_by_admin/bindery
	if [ -n "$DEB_POOL_PID" ] && kill -0 "$DEB_POOL_PID" 2>/dev/null; then
		kill "$DEB_POOL_PID"
		for ((i = 0; i < 100; i++)); do
			kill -0 "$DEB_POOL_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$DEB_POOL_PID" 2>/dev/null
	fi
	[ -z "$DEB_RUN_BINDERY_MADE" ] || rm -rf /run/bindery
	[ -z "$DEB_PROXY_CONF_ENABLED" ] || [ ! -L /etc/apache2/conf-enabled/bindery-proxy-fcgi.conf ] ||
		a2disconf -q bindery-proxy-fcgi >/dev/null
	[ -z "$DEB_PROXY_CONF_ENABLED" ] || rm -f /var/lib/apache2/conf/enabled_by_admin/bindery-proxy-fcgi
	# a2dismod would record them as disabled by an administrator: the
	# links and a2enmod's records go instead, as they were before.
	[ -z "$DEB_PROXY_FCGI_ENABLED" ] || rm -f /etc/apache2/mods-enabled/proxy_fcgi.load \
		/var/lib/apache2/module/enabled_by_admin/proxy_fcgi
	[ -z "$DEB_PROXY_ENABLED" ] || rm -f /etc/apache2/mods-enabled/proxy.load \
		/etc/apache2/mods-enabled/proxy.conf /var/lib/apache2/module/enabled_by_admin/proxy
	[ -z "$DEB_FCGID_ENABLED" ] || a2dismod -q fcgid >/dev/null
	[ -z "$DEB_HEADERS_ENABLED" ] || a2dismod -q headers >/dev/null
	[ -z "$DEB_RUNDIR_MADE" ] || rm -rf /var/run/apache2
	[ -z "$DEB_PORTS_SAVED" ] || cp -p "$DEB_TMP/ports.conf.saved" /etc/apache2/ports.conf
	# dpkg keeps a statoverride past a purge: take back the one this added.
	[ -z "$DEB_OVERRIDE_ADDED" ] || dpkg-statoverride --remove /etc/bindery/bindery.conf >/dev/null 2>&1
	if dpkg-query -W -f='${Status}' bindery 2>/dev/null | grep -q 'installed'; then
		apt-get purge -y -q -o DPkg::Lock::Timeout=300 bindery >/dev/null 2>&1
	fi
	mariadb --no-defaults --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
		-e "DROP DATABASE IF EXISTS \`$DEB_DB\`" 2>/dev/null
	rm -rf "$DEB_TMP"
}
trap deb_cleanup EXIT

# --- build: the make dist tarball, as a packager gets it ---------------------
t0=$(date +%s)
DEB_T0=$t0
(
	unset $(compgen -e | grep -E '^BINDERY_') MAKEFLAGS MFLAGS MAKELEVEL
	make -C "$DEB_BUILD" dist >"$DEB_TMP/dist.out" 2>&1 || exit 1
	version=$(sed -n 's/^PACKAGE_VERSION = //p' "$DEB_BUILD/Makefile")
	# 3.0 (quilt): the release tarball is the orig tarball.
	mv "$DEB_BUILD/bindery-$version.tar.gz" "$DEB_TMP/bindery_$version.orig.tar.gz" &&
		tar -xzf "$DEB_TMP/bindery_$version.orig.tar.gz" -C "$DEB_TMP" &&
		cd "$DEB_TMP/bindery-$version" &&
		dpkg-buildpackage -b -us -uc >"$DEB_TMP/build.out" 2>&1
)
deb_rc=$?
ok $deb_rc "dpkg-buildpackage -b -us -uc from the make dist tarball ($(($(date +%s) - t0)) s)"
[ $deb_rc -eq 0 ] || tail -n 30 "$DEB_TMP/build.out" "$DEB_TMP/dist.out" 2>/dev/null | sed 's/^/# /'
like "$(grep -E '^# (FAIL|ERROR):' "$DEB_TMP/build.out" | tr '\n' ' ')" '^# FAIL: +0 # ERROR: +0 $' \
	"the build's make check (unit tests): no failure, no error"
deb_file=''
for f in "$DEB_TMP"/bindery_*.deb; do [ -f "$f" ] && deb_file=$f && break; done
ok '[ -f "$deb_file" ]' "a bindery_*.deb: ${deb_file##*/}"
[ -f "$deb_file" ] || bail_out "no package to test"

# --- lintian ---------------------------------------------------------------
lintian "$deb_file" >"$DEB_TMP/lintian.out" 2>&1
grep -E '^[EW]: ' "$DEB_TMP/lintian.out" >"$DEB_TMP/lintian.bad"
ok '[ ! -s "$DEB_TMP/lintian.bad" ]' "lintian: no error, no warning"
sed 's/^/# /' "$DEB_TMP/lintian.bad"

# Installing bindery on a lighttpd host must not bring Apache (apt installs
# Recommends by default): no web server or module of one in Recommends or
# Depends; they are Suggests.
deb_field() { dpkg-deb -f "$deb_file" "$1"; }
unlike "$(deb_field Recommends) $(deb_field Depends)" 'apache|lighttpd|nginx|httpd' \
	"Recommends and Depends name no web server (Recommends: $(deb_field Recommends))"
like "$(deb_field Suggests)" 'apache2 \| lighttpd' "... Suggests does (Suggests: $(deb_field Suggests))"
# README.md and doc/deploying.md name the file this build makes.
for doc in README.md doc/deploying.md; do
	deb_doc=$(grep -oE 'bindery_[^ `]+_amd64\.deb' "$DEB_SRC/$doc" | sort -u)
	is "$deb_doc" "bindery_$(deb_field Version)_amd64.deb" "$doc names the package this build makes"
done

# --- install ----------------------------------------------------------------
apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$deb_file" \
	>"$DEB_TMP/install.out" 2>&1
deb_rc=$?
ok $deb_rc "apt-get install ./${deb_file##*/}"
[ $deb_rc -eq 0 ] || { tail -n 20 "$DEB_TMP/install.out" | sed 's/^/# /'; bail_out "not installed"; }
for f in /usr/sbin/bindery /usr/lib/cgi-bin/bindery.fcgi; do
	ok '[ -x "$f" ]' "$f is installed, executable"
done
is "$(stat -c '%U %a' /var/cache/bindery/entra 2>&1)" "root 1733" \
	"/var/cache/bindery/entra is made sticky 1733 (each user's Entra token cache in it)"
for f in /etc/bindery/bindery.conf /etc/cron.d/bindery /etc/apache2/conf-available/bindery.conf \
	/etc/lighttpd/conf-available/50-bindery.conf /etc/apache2/conf-available/bindery-proxy-fcgi.conf \
	/etc/lighttpd/conf-available/50-bindery-pool.conf /etc/bindery/apache-fcgid-vhost.conf; do
	ok 'dpkg-query -W -f="\${Conffiles}\n" bindery | grep -q "^ $f "' "$f is a conffile"
done
is "$(stat -c '%U:%G %a' /etc/bindery/bindery.conf)" "root:www-data 640" \
	"/etc/bindery/bindery.conf is root:www-data 0640"
# An administrator's stricter mode survives the next configure (an upgrade
# or a reinstall runs the postinst again); then back to the package's.
chmod 0600 /etc/bindery/bindery.conf
dpkg-reconfigure bindery >"$DEB_TMP/reconfigure.out" 2>&1
ok $? "dpkg-reconfigure bindery"
is "$(stat -c '%U:%G %a' /etc/bindery/bindery.conf)" "root:www-data 600" \
	"... keeps an administrator's 0600 (the postinst never widens a mode)"
# A mode held by dpkg-statoverride is the administrator's too, even one the
# postinst would otherwise tighten (readable by everyone).
if [ -z "$(dpkg-statoverride --list /etc/bindery/bindery.conf)" ] &&
	dpkg-statoverride --add --update root root 0644 /etc/bindery/bindery.conf; then
	DEB_OVERRIDE_ADDED=1
	dpkg-reconfigure bindery >>"$DEB_TMP/reconfigure.out" 2>&1
	is "$(stat -c '%U:%G %a' /etc/bindery/bindery.conf)" "root:root 644" \
		"... and one dpkg-statoverride holds, even readable by everyone"
	dpkg-statoverride --remove /etc/bindery/bindery.conf && DEB_OVERRIDE_ADDED=
	chown root:www-data /etc/bindery/bindery.conf
else
	fail "dpkg-statoverride --add for /etc/bindery/bindery.conf"
fi
chmod 0640 /etc/bindery/bindery.conf
for f in man8/bindery.8.gz man8/bindery.fcgi.8.gz man5/bindery.conf.5.gz; do
	ok '[ -f "/usr/share/man/$f" ]' "the man page /usr/share/man/$f"
done
is "$(cd /usr/share/bindery/sql && ls *.sql)" "$(cd "$DEB_SRC/sql" && ls *.sql)" \
	"every migration in /usr/share/bindery/sql"

# The systemd units: the sweeper's and the standing pool's.
DEB_UNIT_DIR=''
for d in /lib/systemd/system /usr/lib/systemd/system; do
	[ -f "$d/bindery-fcgi.service" ] && DEB_UNIT_DIR=$d && break
done
ok '[ -n "$DEB_UNIT_DIR" ]' "bindery-fcgi.service is installed (in ${DEB_UNIT_DIR:-no unit directory})"
[ -n "$DEB_UNIT_DIR" ] || bail_out "no bindery-fcgi.service to test"
for u in bindery-fcgi.socket bindery-fcgi.service bindery.service bindery.timer; do
	ok '[ -f "$DEB_UNIT_DIR/$u" ]' "the unit $u is installed"
done
(cd / && systemd-analyze verify --man=no "$DEB_UNIT_DIR/bindery-fcgi.socket" \
	"$DEB_UNIT_DIR/bindery-fcgi.service" "$DEB_UNIT_DIR/bindery.timer" \
	"$DEB_UNIT_DIR/bindery.service") >"$DEB_TMP/verify.out" 2>&1
ok $? "systemd-analyze verify on the installed units (their programs where they run them)"
is "$(cat "$DEB_TMP/verify.out")" "" "... and it has nothing to say about them"
# Enabled is a link in /etc/systemd/system (deb-systemd-helper makes them
# with or without a running systemd): the timer's is there, the pool's not.
ok '[ ! -e /etc/systemd/system/timers.target.wants/bindery.timer ] &&
	[ ! -L /etc/systemd/system/timers.target.wants/bindery.timer ]' \
	"bindery.timer is not enabled at install (the configuration still holds placeholders)"
ok '[ ! -e /etc/systemd/system/sockets.target.wants/bindery-fcgi.socket ] &&
	[ ! -e /etc/systemd/system/multi-user.target.wants/bindery-fcgi.service ]' \
	"... nor the pool's socket and service"
# Every directive of the sandbox the sweeper's service runs in.
for k in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
	ProtectKernelTunables=yes ProtectKernelModules=yes ProtectKernelLogs=yes ProtectControlGroups=yes \
	ProtectClock=yes 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' SystemCallFilter=@system-service \
	CapabilityBoundingSet=; do
	ok 'grep -qxF "$k" "$DEB_UNIT_DIR/bindery.service"' "bindery.service is sandboxed: $k"
done
# A timer enabled anyway (by hand, or by an earlier package) runs the
# service: its ExecCondition, as its user, skips the run (1 to 254: the unit
# does not fail) while the shipped placeholders remain.
DEB_SWEEP_COND=$(sed -n 's/^ExecCondition=//p' "$DEB_UNIT_DIR/bindery.service")
DEB_SWEEP_USER=$(sed -n 's/^User=//p' "$DEB_UNIT_DIR/bindery.service")
[ -n "$DEB_SWEEP_COND" ] && [ -n "$DEB_SWEEP_USER" ] || bail_out "no ExecCondition or User in bindery.service"
"${DEB_ENV[@]}" su -s /bin/sh "$DEB_SWEEP_USER" -c "$DEB_SWEEP_COND" >"$DEB_TMP/cond.out" 2>&1
is $? 1 "bindery.service's ExecCondition skips the sweep on the shipped configuration (as $DEB_SWEEP_USER)"
like "$(cat "$DEB_TMP/cond.out")" 'still holds @NAME@ placeholders' "... and says why"
# The service's ExecStartPre, as its user: the shipped file does not start it.
DEB_POOL_PRE=$(sed -n 's/^ExecStartPre=//p' "$DEB_UNIT_DIR/bindery-fcgi.service")
DEB_POOL_USER=$(sed -n 's/^User=//p' "$DEB_UNIT_DIR/bindery-fcgi.service")
[ -n "$DEB_POOL_PRE" ] && [ -n "$DEB_POOL_USER" ] || bail_out "no ExecStartPre or User in bindery-fcgi.service"
"${DEB_ENV[@]}" su -s /bin/sh "$DEB_POOL_USER" -c "$DEB_POOL_PRE" >"$DEB_TMP/pre.out" 2>&1
is $? 78 "bindery-fcgi.service's ExecStartPre refuses the shipped configuration (as $DEB_POOL_USER)"
like "$(cat "$DEB_TMP/pre.out")" 'still holds @NAME@ placeholders' "... and says why"

# The packaged cron line is conf/bindery.cron's, with the package's path.
sample=$(grep -E '^[0-9*]' "$DEB_SRC/conf/bindery.cron")
cronline=$(grep -E '^[0-9*]' /etc/cron.d/bindery)
read -r c_min c_hour c_dom c_mon c_dow c_user c_cmd <<<"$cronline"
is "$c_min $c_hour $c_dom $c_mon $c_dow $c_user" "*/5 * * * * www-data" \
	"the cron job runs every five minutes as www-data"
is "${c_cmd##*|| }" "$(printf '%s\n' "${sample#*www-data }" | sed 's|/usr/local/sbin/|/usr/sbin/|')" \
	"its command is conf/bindery.cron's, from /usr/sbin (with --lock)"
# Until the configuration is filled in the job is quiet (cron mails any
# output to root: every five minutes, 288 times a day), but only because of
# the placeholders: a file www-data cannot read still reaches the sweep,
# whose error is mailed.
"${DEB_ENV[@]}" su -s /bin/sh "$c_user" -c "$c_cmd" >"$DEB_TMP/cron-unfilled.out" 2>&1
is "$?:$(cat "$DEB_TMP/cron-unfilled.out")" "0:" \
	"the cron job on the shipped configuration exits 0 and prints nothing (no mail)"
chmod 0600 /etc/bindery/bindery.conf
"${DEB_ENV[@]}" su -s /bin/sh "$c_user" -c "$c_cmd" >"$DEB_TMP/cron-unreadable.out" 2>&1
is $? 78 "... on a configuration $c_user cannot read it runs the sweep, which exits 78"
like "$(cat "$DEB_TMP/cron-unreadable.out")" '/etc/bindery/bindery\.conf' "... and prints why (cron mails it)"
chmod 0640 /etc/bindery/bindery.conf

# mod_fcgid's body limit is not the whole server's: the snippets in
# conf-available (server-wide) have none, the piece for bindery's own
# <VirtualHost> has it.
for f in /etc/apache2/conf-available/bindery.conf /etc/apache2/conf-available/bindery-proxy-fcgi.conf; do
	ok '! grep -Eq "^[[:space:]]*FcgidMaxRequestLen" "$f"' "no server-wide FcgidMaxRequestLen in $f"
done
ok 'grep -Eq "^[[:space:]]*FcgidMaxRequestLen [0-9]+$" /etc/bindery/apache-fcgid-vhost.conf' \
	"/etc/bindery/apache-fcgid-vhost.conf sets it, for a <VirtualHost> to include"
like "$(sed -n '/^## Apache with mod_fcgid/,/^## /p' "$DEB_SRC/doc/deploying.md")" \
	'IncludeOptional /etc/bindery/apache-fcgid-vhost\.conf' "doc/deploying.md says how to include it"

# Each lighttpd snippet parses in a lighttpd with mod_fastcgi.
mkdir -p "$DEB_TMP/www"
for snippet in 50-bindery.conf 50-bindery-pool.conf; do
	cat >"$DEB_TMP/lighttpd.conf" <<EOF
server.modules = ( "mod_fastcgi" )
server.document-root = "$DEB_TMP/www"
server.port = 1
include "/etc/lighttpd/conf-available/$snippet"
EOF
	lighttpd -tt -f "$DEB_TMP/lighttpd.conf" >>"$DEB_TMP/lighttpd-t.out" 2>&1
	ok $? "lighttpd -tt accepts /etc/lighttpd/conf-available/$snippet"
done
prefix=$(sed -n 's/^[[:space:]]*server.errorfile-prefix = "\(.*\)"$/\1/p' /etc/lighttpd/conf-available/50-bindery.conf)
for code in 400 411 413 431 500 503; do
	is "$(jq -r '.error | type' "$prefix$code.html" 2>/dev/null)" string \
		"lighttpd's $code page is installed ($prefix$code.html) and is a JSON error"
done
sed 's/^/# /' "$DEB_TMP/lighttpd-t.out"

# --- the installed configuration, pointed at the test stack ------------------
# The package's file filled in the way an administrator would, with the test
# stack's values, a fresh database and a fresh container; written through
# the existing file so its owner and mode stay the package's.
# The test stack's migration account: it may create scratch databases
# bindery_* and holds every privilege on them (tests/lib/stack.sh); the
# runtime account reads and writes the stack's own database only.
DEB_DB_USER=$(sed -n 's/^user = //p' "$BINDERY_TEST_MIGRATE_CONFIG")
DEB_DB_PASSWORD=$(sed -n 's/^password = //p' "$BINDERY_TEST_MIGRATE_CONFIG")
[ -n "$DEB_DB_USER" ] && [ -n "$DEB_DB_PASSWORD" ] || bail_out "no user and password in $BINDERY_TEST_MIGRATE_CONFIG"
blob_key_sed=$(printf '%s' "$BINDERY_TEST_BLOB_KEY" | sed 's/[|&\\]/\\&/g')
sed -e "s|^socket = .*|host = 127.0.0.1\nport = $BINDERY_TEST_DB_PORT|" \
	-e "s|^user = .*|user = $DEB_DB_USER|" \
	-e "s|^password = .*|password = $DEB_DB_PASSWORD|" \
	-e "s|^name = .*|name = $DEB_DB|" \
	-e "s|^endpoint = .*|endpoint = $BINDERY_TEST_BLOB_ENDPOINT|" \
	-e "s|^account = .*|account = $BINDERY_TEST_BLOB_ACCOUNT|" \
	-e "s|^key = .*|key = $blob_key_sed|" \
	-e "s|^container = .*|container = deb-$DEB_TAG|" \
	-e "s|^token = demo:.*|token = demo:$BINDERY_TEST_TOKEN|" \
	/etc/bindery/bindery.conf >"$DEB_TMP/bindery.conf"
unlike "$(grep -v '^;' "$DEB_TMP/bindery.conf")" '@[A-Z_]+@' "no placeholder is left in the configuration"
cat "$DEB_TMP/bindery.conf" >/etc/bindery/bindery.conf
MYSQL_PWD=$DEB_DB_PASSWORD mariadb --no-defaults --protocol=tcp -h 127.0.0.1 \
	-P "$BINDERY_TEST_DB_PORT" -u"$DEB_DB_USER" -e "CREATE DATABASE \`$DEB_DB\`" \
	>"$DEB_TMP/createdb.out" 2>&1
ok $? "a fresh database $DEB_DB (as $DEB_DB_USER over TCP)"
# No -c: the compiled-in default is /etc/bindery/bindery.conf.
"${DEB_ENV[@]}" su -s /bin/sh www-data -c "/usr/sbin/bindery migrate" >"$DEB_TMP/migrate.out" 2>&1
ok $? "bindery migrate (as www-data, the default configuration file)"
sed 's/^/# /' "$DEB_TMP/migrate.out"

# --- the system Apache ----------------------------------------------------------
DEB_PORT=18400
while ! stack_port_free "$DEB_PORT"; do DEB_PORT=$((DEB_PORT + 1)); done
cp -p /etc/apache2/ports.conf "$DEB_TMP/ports.conf.saved" && DEB_PORTS_SAVED=1
DEB_PORT2=$((DEB_PORT + 1))
while ! stack_port_free "$DEB_PORT2"; do DEB_PORT2=$((DEB_PORT2 + 1)); done
# bindery's own virtual host includes the package's mod_fcgid piece, as
# doc/deploying.md says; the second port is the rest of the server.
cat >/etc/apache2/ports.conf <<EOF
Listen 127.0.0.1:$DEB_PORT
Listen 127.0.0.1:$DEB_PORT2
<VirtualHost 127.0.0.1:$DEB_PORT>
	IncludeOptional /etc/bindery/apache-fcgid-vhost.conf
</VirtualHost>
EOF
[ -L /etc/apache2/mods-enabled/fcgid.load ] || { a2enmod -q fcgid >/dev/null && DEB_FCGID_ENABLED=1; }
# doc/deploying.md's "a2enmod headers" for the JSON error pages.
[ -L /etc/apache2/mods-enabled/headers.load ] || { a2enmod -q headers >/dev/null && DEB_HEADERS_ENABLED=1; }
a2enconf -q bindery >/dev/null && DEB_CONF_ENABLED=1
ok '[ -n "$DEB_CONF_ENABLED" ]' "a2enconf bindery"
"${DEB_ENV[@]}" apache2ctl configtest >"$DEB_TMP/configtest.out" 2>&1
ok $? "apache2ctl configtest"
sed 's/^/# /' "$DEB_TMP/configtest.out"
"${DEB_ENV[@]}" apache2ctl start >"$DEB_TMP/apache-start.out" 2>&1
ok $? "apache2ctl start (listening on 127.0.0.1:$DEB_PORT)"
wait_for 10 test -s "$APACHE_PIDFILE"
DEB_APACHE_PID=$(cat "$APACHE_PIDFILE" 2>/dev/null)
url=http://127.0.0.1:$DEB_PORT/bindery
wait_for 15 eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "$url/healthz")" = 200 ]'
req GET "$url/healthz"
is "$HTTP_CODE" 200 "GET /bindery/healthz through the system Apache"
like "$HTTP_BODY" '"database" *: *"ok".*"storage" *: *"ok"|"storage" *: *"ok".*"database" *: *"ok"' \
	"... the database and storage answer"

head -c 300000 /dev/urandom >"$DEB_TMP/doc.bin"
req POST "$url/documents?name=deb-$DEB_TAG.bin" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$DEB_TMP/doc.bin"
is "$HTTP_CODE" 201 "create a document through /bindery"
id=$(jfield "$HTTP_BODY" id)
like "$id" '^[0-9]+$' "... its id is $id"
is "$(header location)" "/bindery/documents/$id" "... its Location carries the mount (SCRIPT_NAME)"
# The same body through the server's other port: mod_fcgid's default limit
# (128 KiB) holds there, so the piece changed bindery's virtual host alone.
req POST "http://127.0.0.1:$DEB_PORT2/bindery/documents?name=deb-$DEB_TAG-elsewhere.bin" \
	-H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Content-Type: application/octet-stream' \
	--data-binary "@$DEB_TMP/doc.bin"
is "$HTTP_CODE" 500 "... while outside that VirtualHost mod_fcgid refuses it (its 128 KiB default: 500)"
# Apache's own 413 (a declared length over LimitRequestBody) is the API's JSON.
req POST "$url/documents?name=deb-$DEB_TAG-huge" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Expect:' -H 'Content-Type: application/octet-stream' -H 'Content-Length: 99999999999' \
	--data-binary @/dev/null
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "413 too_large" "Apache's own 413 is the API's JSON error"
curl -s -o "$DEB_TMP/got.bin" -w '%{http_code}' "$url/documents/$id/content" >"$DEB_TMP/code"
is "$(cat "$DEB_TMP/code")" 200 "read it back"
is "$(sha "$DEB_TMP/got.bin")" "$(sha "$DEB_TMP/doc.bin")" "... byte-identical (SHA-256)"
req DELETE "$url/documents/$id" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
is "$HTTP_CODE" 204 "delete it"
req GET "$url/documents/$id"
is "$HTTP_CODE" 404 "... then it is 404"

# --- the cron job, as cron would run it ----------------------------------------
"${DEB_ENV[@]}" su -s /bin/sh "$c_user" -c "$c_cmd" >"$DEB_TMP/cron.out" 2>&1
ok $? "the cron job's command as $c_user exits 0"
ok '[ ! -s "$DEB_TMP/cron.out" ]' "... and prints nothing"
sed 's/^/# /' "$DEB_TMP/cron.out"

# --- stop Apache ----------------------------------------------------------------------
kill "$DEB_APACHE_PID" 2>/dev/null
wait_for 10 eval '! kill -0 "$DEB_APACHE_PID" 2>/dev/null'
ok '! kill -0 "$DEB_APACHE_PID" 2>/dev/null' "the system Apache stopped (pid $DEB_APACHE_PID)"
DEB_APACHE_OLD=$DEB_APACHE_PID

# --- the standing pool, as bindery-fcgi.socket and .service run it -------------------
# No systemd here: the socket is made as bindery-fcgi.socket says (its path,
# directory mode, owner, group and mode) and passed the way systemd passes
# it (systemd-socket-activate: LISTEN_FDS, and the program started at the
# first connection); the program is the service's ExecStart, as its User
# and Group, after its ExecStartPre; ExecReload and the stop (SIGTERM to
# the master alone, KillMode=mixed) are sent by hand.
unit_key() { sed -n "s/^$2=//p" "$DEB_UNIT_DIR/$1"; }
DEB_SOCK=$(unit_key bindery-fcgi.socket ListenStream)
is "$DEB_SOCK" /run/bindery/fcgi.sock "bindery-fcgi.socket listens on /run/bindery/fcgi.sock"
read -r -a DEB_POOL_CMD <<<"$(unit_key bindery-fcgi.service ExecStart)"
DEB_POOL_GROUP=$(unit_key bindery-fcgi.service Group)
DEB_POOL_WORKERS=''
for ((i = 1; i < ${#DEB_POOL_CMD[@]}; i++)); do
	[ "${DEB_POOL_CMD[i]}" != --workers ] || DEB_POOL_WORKERS=${DEB_POOL_CMD[i + 1]}
done
like "$DEB_POOL_WORKERS" '^[1-9][0-9]*$' "its ExecStart names the workers: ${DEB_POOL_CMD[*]}"
"${DEB_ENV[@]}" su -s /bin/sh "$DEB_POOL_USER" -c "$DEB_POOL_PRE" >"$DEB_TMP/pre.out" 2>&1
ok $? "its ExecStartPre passes the filled-in configuration"
if [ ! -d /run/bindery ]; then
	install -d -m "$(unit_key bindery-fcgi.socket DirectoryMode)" /run/bindery && DEB_RUN_BINDERY_MADE=1
fi
(umask 0177 && exec "${DEB_ENV[@]}" systemd-socket-activate -l "$DEB_SOCK" \
	setpriv --reuid="$DEB_POOL_USER" --regid="$DEB_POOL_GROUP" --init-groups --no-new-privs -- \
	"${DEB_POOL_CMD[@]}") >"$DEB_TMP/pool.log" 2>&1 &
DEB_POOL_PID=$!
wait_for 10 test -S "$DEB_SOCK"
chown "$(unit_key bindery-fcgi.socket SocketUser):$(unit_key bindery-fcgi.socket SocketGroup)" "$DEB_SOCK" &&
	chmod "$(unit_key bindery-fcgi.socket SocketMode)" "$DEB_SOCK"
is "$(stat -c '%U:%G %a' "$DEB_SOCK" 2>/dev/null)" "root:www-data 660" "$DEB_SOCK is root:www-data 0660"

# Apache: the proxy snippet instead of the mod_fcgid one (both map /bindery).
a2disconf -q bindery >/dev/null
[ -L /etc/apache2/mods-enabled/proxy.load ] || DEB_PROXY_ENABLED=1
[ -L /etc/apache2/mods-enabled/proxy_fcgi.load ] || { a2enmod -q proxy_fcgi >/dev/null && DEB_PROXY_FCGI_ENABLED=1; }
a2enconf -q bindery-proxy-fcgi >/dev/null && DEB_PROXY_CONF_ENABLED=1
ok '[ -n "$DEB_PROXY_CONF_ENABLED" ] && [ -L /etc/apache2/mods-enabled/proxy_fcgi.load ] &&
	[ ! -e /etc/apache2/conf-enabled/bindery.conf ]' \
	"a2enmod proxy_fcgi, a2enconf bindery-proxy-fcgi (and a2disconf bindery)"
"${DEB_ENV[@]}" apache2ctl configtest >"$DEB_TMP/configtest.out" 2>&1
ok $? "apache2ctl configtest"
sed 's/^/# /' "$DEB_TMP/configtest.out"
"${DEB_ENV[@]}" apache2ctl start >"$DEB_TMP/apache-start.out" 2>&1
ok $? "apache2ctl start, with mod_proxy_fcgi"
wait_for 10 eval '[ -s "$APACHE_PIDFILE" ] && [ "$(cat "$APACHE_PIDFILE")" != "$DEB_APACHE_OLD" ]'
DEB_APACHE_PID=$(cat "$APACHE_PIDFILE" 2>/dev/null)

# The first connection starts the pool, as socket activation does.
wait_for 20 eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "$url/healthz")" = 200 ]'
req GET "$url/healthz" -H "X-Request-Id: deb-pool-$DEB_TAG-health"
is "$HTTP_CODE" 200 "GET /bindery/healthz through mod_proxy_fcgi and the pool"
like "$(cat "$DEB_TMP/pool.log")" "req=deb-pool-$DEB_TAG-health " "... answered by the pool (its log has the request)"
like "$(cat "$DEB_TMP/pool.log")" "pool: $DEB_POOL_WORKERS workers on the socket systemd passed" \
	"the pool took the socket from LISTEN_FDS, with $DEB_POOL_WORKERS workers"
is "$(ps -o user= -p "$DEB_POOL_PID" 2>/dev/null)" "$DEB_POOL_USER" "its master runs as $DEB_POOL_USER"
is "$(readlink "/proc/$DEB_POOL_PID/exe" 2>/dev/null)" "${DEB_POOL_CMD[0]}" "... and is ${DEB_POOL_CMD[0]}"
deb_children() { pgrep -P "$DEB_POOL_PID" | LC_ALL=C sort; }
deb_children >"$DEB_TMP/workers.before"
is "$(wc -l <"$DEB_TMP/workers.before")" "$DEB_POOL_WORKERS" "... with $DEB_POOL_WORKERS workers"

head -c 300000 /dev/urandom >"$DEB_TMP/doc2.bin"
req POST "$url/documents?name=deb-pool-$DEB_TAG.bin" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$DEB_TMP/doc2.bin"
is "$HTTP_CODE" 201 "create a document through the pool (the bearer token arrives: CGIPassAuth)"
id=$(jfield "$HTTP_BODY" id)
is "$(header location)" "/bindery/documents/$id" "... its Location carries the mount (the snippet's SCRIPT_NAME)"
curl -s -o "$DEB_TMP/got2.bin" -w '%{http_code}' "$url/documents/$id/content" >"$DEB_TMP/code"
is "$(cat "$DEB_TMP/code")" 200 "read it back through the pool"
is "$(sha "$DEB_TMP/got2.bin")" "$(sha "$DEB_TMP/doc2.bin")" "... byte-identical (SHA-256)"
req POST "$url/documents?name=deb-pool-$DEB_TAG-huge" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Expect:' -H 'Content-Type: application/octet-stream' -H 'Content-Length: 99999999999' \
	--data-binary @/dev/null
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "413 too_large" "the proxy snippet's own 413 is the API's JSON error"

# systemctl reload: ExecReload, $MAINPID the master.
reload=$(unit_key bindery-fcgi.service ExecReload)
is "$reload" '/bin/kill -HUP $MAINPID' "ExecReload sends SIGHUP to the master"
kill -HUP "$DEB_POOL_PID"
wait_for 10 grep -q 'pool: configuration reloaded' "$DEB_TMP/pool.log"
like "$(cat "$DEB_TMP/pool.log")" "pool: configuration reloaded; $DEB_POOL_WORKERS new workers" \
	"SIGHUP: the configuration is reloaded"
wait_for 10 eval '[ -z "$(deb_children | comm -12 "$DEB_TMP/workers.before" -)" ]'
deb_children >"$DEB_TMP/workers.after"
ok '[ "$(wc -l <"$DEB_TMP/workers.after")" = "$DEB_POOL_WORKERS" ] &&
	[ -z "$(comm -12 "$DEB_TMP/workers.before" "$DEB_TMP/workers.after")" ]' \
	"... on $DEB_POOL_WORKERS new workers, the old ones gone ($(tr '\n' ' ' <"$DEB_TMP/workers.before")-> $(tr '\n' ' ' <"$DEB_TMP/workers.after"))"
req DELETE "$url/documents/$id" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
is "$HTTP_CODE" 204 "delete it through the reloaded pool"
req GET "$url/documents/$id"
is "$HTTP_CODE" 404 "... then it is 404"

# systemctl stop: SIGTERM to the master alone; it drains and exits 0 within
# the unit's TimeoutStopSec.
t0=$(date +%s)
kill -TERM "$DEB_POOL_PID"
wait "$DEB_POOL_PID"
deb_rc=$?
took=$(($(date +%s) - t0))
is "$deb_rc" 0 "SIGTERM: the pool drains and exits 0"
ok '[ "$took" -lt "$(unit_key bindery-fcgi.service TimeoutStopSec)" ]' \
	"... in $took s, within TimeoutStopSec ($(unit_key bindery-fcgi.service TimeoutStopSec) s)"
like "$(cat "$DEB_TMP/pool.log")" 'pool: stopped' "... and says so"
is "$(cat "$DEB_TMP/workers.after" | while read -r w; do kill -0 "$w" 2>/dev/null && echo "$w"; done)" "" \
	"no worker is left"
DEB_POOL_PID=''
req GET "$url/healthz"
is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "503 unavailable" "with no pool, Apache answers 503 in the API's JSON"
grep -E ' (error|warn): ' "$DEB_TMP/pool.log" | sed 's/^/# /'

kill "$DEB_APACHE_PID" 2>/dev/null
wait_for 10 eval '! kill -0 "$DEB_APACHE_PID" 2>/dev/null'
ok '! kill -0 "$DEB_APACHE_PID" 2>/dev/null' "the system Apache stopped (pid $DEB_APACHE_PID)"

# --- purge ------------------------------------------------------------------------
apt-get purge -y -q -o DPkg::Lock::Timeout=300 bindery >"$DEB_TMP/purge.out" 2>&1
deb_rc=$?
ok $deb_rc "apt-get purge bindery"
[ $deb_rc -eq 0 ] || tail -n 20 "$DEB_TMP/purge.out" | sed 's/^/# /'
for f in /etc/bindery /usr/sbin/bindery /usr/lib/cgi-bin/bindery.fcgi /etc/cron.d/bindery \
	/etc/apache2/conf-available/bindery.conf /etc/lighttpd/conf-available/50-bindery.conf \
	/etc/apache2/conf-available/bindery-proxy-fcgi.conf /etc/lighttpd/conf-available/50-bindery-pool.conf \
	"$DEB_UNIT_DIR/bindery-fcgi.socket" "$DEB_UNIT_DIR/bindery-fcgi.service" "$DEB_UNIT_DIR/bindery.timer" \
	/etc/systemd/system/timers.target.wants/bindery.timer /usr/share/bindery /var/cache/bindery; do
	ok '[ ! -e "$f" ] && [ ! -L "$f" ]' "purged: $f is gone"
done
ok '[ ! -L /etc/apache2/conf-enabled/bindery.conf ] && [ ! -L /etc/apache2/conf-enabled/bindery-proxy-fcgi.conf ]' \
	"purged: no conf-enabled link left for Apache"
note "tests/dist/deb.sh took $(($(date +%s) - DEB_T0)) s from the build to the purge"
done_testing
