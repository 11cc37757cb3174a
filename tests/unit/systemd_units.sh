#!/bin/bash
# tests/unit/systemd_units.sh — the systemd units the Debian package ships
# (debian/bindery.service and debian/bindery.timer for the sweeper;
# debian/bindery.bindery-fcgi.socket and debian/bindery.bindery-fcgi.service,
# installed as bindery-fcgi.*, for the standing FastCGI pool) pass
# `systemd-analyze verify` without a word, and agree with the rest of the
# package: the socket is the path the Apache and lighttpd pool snippets
# connect to, root:www-data 0660; the pool runs as the sweeper's user, with
# a command line bindery.fcgi accepts, is stopped after its drain, reloads
# on SIGHUP and refuses to start on a configuration that still holds the
# sample's placeholders.  The sweeper's service is sandboxed as the pool's
# is, and both it and the package's cron job skip their runs in silence
# while the configuration holds those placeholders, and only then.
#
# verify requires the programs the units run to exist: copies name the
# built ones instead of /usr/sbin and /usr/lib/cgi-bin (tests/dist/deb.sh
# verifies the installed units as they are).  Documentation= is checked
# against man/ here rather than by running man(1).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/../lib/tap.sh"

SU_SRC=$(cd "${top_srcdir:?}" && pwd -P)
SU_BUILD=$(cd "${top_builddir:?}" && pwd -P)
command -v systemd-analyze >/dev/null 2>&1 ||
	missing "systemd-analyze (Debian's systemd package; .ci/provision.sh installs it)"
for b in bindery bindery.fcgi; do
	[ -x "$SU_BUILD/app/$b" ] || bail_out "$SU_BUILD/app/$b is not built"
done
SU_TMP=$(mktemp -d "${TMPDIR:-/tmp}/systemd_units.XXXXXX") || bail_out "mktemp -d failed"
trap 'rm -rf "$SU_TMP"' EXIT
SU_DEB=$SU_SRC/debian
SOCKET=$SU_DEB/bindery.bindery-fcgi.socket
SERVICE=$SU_DEB/bindery.bindery-fcgi.service
SWEEPER=$SU_DEB/bindery.service

# key UNIT-FILE KEY: every value of KEY= in the file, one a line.
key() { sed -n "s/^$2=//p" "$1"; }

# --- systemd-analyze verify ---------------------------------------------------
# The names dh_installsystemd installs them under, the programs the build's.
mkdir -p "$SU_TMP/units" "$SU_TMP/bad"
stage() { # SOURCE NAME
	sed -e "s|/usr/lib/cgi-bin/bindery\.fcgi |$SU_BUILD/app/bindery.fcgi |" \
		-e "s|/usr/sbin/bindery |$SU_BUILD/app/bindery |" "$1" >"$SU_TMP/units/$2"
}
stage "$SWEEPER" bindery.service
stage "$SU_DEB/bindery.timer" bindery.timer
stage "$SERVICE" bindery-fcgi.service
stage "$SOCKET" bindery-fcgi.socket
ok '! grep -qE "^Exec[A-Za-z]*=[^ ]*(/usr/sbin/|/usr/lib/cgi-bin/)" "$SU_TMP"/units/*' \
	"the staged units run the built programs"
(cd "$SU_TMP/units" && systemd-analyze verify --man=no ./bindery-fcgi.socket ./bindery-fcgi.service \
	./bindery.timer ./bindery.service) >"$SU_TMP/verify.out" 2>&1
ok $? "systemd-analyze verify: bindery-fcgi.socket, bindery-fcgi.service, bindery.timer, bindery.service"
is "$(cat "$SU_TMP/verify.out")" "" "... and it has nothing to say about them (no unknown key, no warning)"
# The same check on a unit with a misspelt key: verify must notice.
sed 's/^ExecReload=/ExecRelaod=/' "$SU_TMP/units/bindery-fcgi.service" >"$SU_TMP/bad/bindery-fcgi.service"
cp "$SU_TMP/units/bindery-fcgi.socket" "$SU_TMP/bad/"
(cd "$SU_TMP/bad" && systemd-analyze verify --man=no ./bindery-fcgi.service) >"$SU_TMP/bad.out" 2>&1
like "$(cat "$SU_TMP/bad.out")" "ExecRelaod" "... while a misspelt key in a copy draws a word (the check can fail)"
# How much of the system each service can reach (0 none, 10 all).
for u in bindery-fcgi.service bindery.service; do
	systemd-analyze security --offline=true --threshold=20 --no-pager \
		"$SU_TMP/units/$u" >"$SU_TMP/security.out" 2>&1
	ok $? "systemd-analyze security: $u's exposure is 2.0 or less ($(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$SU_TMP/security.out"))"
done

for u in "$SOCKET" "$SERVICE" "$SWEEPER" "$SU_DEB/bindery.timer"; do
	for d in $(key "$u" Documentation); do
		page=${d#man:}
		name=${page%(*}
		sect=${page#*(}
		sect=${sect%)}
		ok '[ -f "$SU_SRC/man/$name.$sect.in" ]' "${u##*/}: Documentation=$d is man/$name.$sect.in"
	done
done

# --- the socket: where the snippets connect, for www-data only ----------------
sock=$(key "$SOCKET" ListenStream)
is "$sock" /run/bindery/fcgi.sock "the pool's socket is /run/bindery/fcgi.sock"
is "$(sed -n 's/.*ProxyPass "unix:\([^|]*\)|fcgi:.*/\1/p' "$SU_DEB/apache-bindery-proxy-fcgi.conf")" "$sock" \
	"debian/apache-bindery-proxy-fcgi.conf proxies to it"
is "$(sed -n 's/.*"socket" *=> *"\([^"]*\)".*/\1/p' "$SU_DEB/lighttpd-bindery-pool.conf")" "$sock" \
	"debian/lighttpd-bindery-pool.conf connects to it"
is "$(key "$SOCKET" SocketUser):$(key "$SOCKET" SocketGroup) $(key "$SOCKET" SocketMode)" "root:www-data 0660" \
	"root:www-data 0660: the web servers' group may connect, no one else (FastCGI carries no authentication)"
is "$(key "$SOCKET" Accept)" no "the pool's workers accept, not systemd (Accept=no)"

# --- the service ----------------------------------------------------------------
is "$(key "$SERVICE" User):$(key "$SERVICE" Group)" "$(key "$SWEEPER" User):$(key "$SWEEPER" Group)" \
	"the pool runs as the sweeper's user and group ($(key "$SWEEPER" User))"
like " $(key "$SERVICE" Requires) " ' bindery-fcgi\.socket ' "the pool requires its socket"
like " $(key "$SERVICE" After) " ' bindery-fcgi\.socket ' "... and starts after it"
read -r -a exec_start <<<"$(key "$SERVICE" ExecStart)"
is "${exec_start[0]}" "$(sed -n 's/.*--with-cgibindir=\([^ ]*\).*/\1/p' "$SU_DEB/rules")/bindery.fcgi" \
	"ExecStart runs bindery.fcgi where debian/rules installs it"
is "${exec_start[*]:1:2}" "-c /etc/bindery/bindery.conf" "... with the package's configuration"
# The options as bindery.fcgi parses them: --help comes last, so a bad
# option before it is refused (64) before the usage is printed (0).
"$SU_BUILD/app/bindery.fcgi" "${exec_start[@]:1}" --help >"$SU_TMP/help.out" 2>&1
ok $? "bindery.fcgi accepts ExecStart's options: ${exec_start[*]:1}"
"$SU_BUILD/app/bindery.fcgi" "${exec_start[@]:1}" --workers 0 --help >"$SU_TMP/help0.out" 2>&1
is $? 64 "... and would refuse a bad one (--workers 0 is 64)"
drain=
for ((i = 1; i < ${#exec_start[@]}; i++)); do
	[ "${exec_start[i]}" != --drain-seconds ] || drain=${exec_start[i + 1]}
done
like "$drain" '^[0-9]+$' "ExecStart names the drain: --drain-seconds $drain"
workers=
for ((i = 1; i < ${#exec_start[@]}; i++)); do
	[ "${exec_start[i]}" != --workers ] || workers=${exec_start[i + 1]}
done
is "$(sed -n 's/.*ProxyPass "unix:[^ ]* .*max=\([0-9]*\).*/\1/p' "$SU_DEB/apache-bindery-proxy-fcgi.conf")" \
	"${workers:-none}" "the Apache snippet opens at most --workers ($workers) connections per child (max=)"
stop=$(key "$SERVICE" TimeoutStopSec)
ok '[[ $stop =~ ^[0-9]+$ ]] && [ "$stop" -gt "${drain:-0}" ]' \
	"TimeoutStopSec ($stop s) is longer than the drain ($drain s): requests in flight finish"
is "$(key "$SERVICE" KillMode)" mixed "KillMode=mixed: SIGTERM to the master alone, which drains its workers"
is "$(key "$SERVICE" ExecReload)" '/bin/kill -HUP $MAINPID' "ExecReload sends the master SIGHUP"
like " $(key "$SERVICE" RestartPreventExitStatus) " ' 78 ' "a refused configuration (78) is not restarted"
# Both services sandboxed alike: no privilege to gain, a read-only system,
# no home, /tmp, devices, kernel or clock of the host, the network families
# MariaDB and storage need, the system calls of a service, no capability.
for u in "$SERVICE" "$SWEEPER"; do
	for k in NoNewPrivileges ProtectSystem ProtectHome PrivateTmp PrivateDevices ProtectKernelTunables \
		ProtectKernelModules ProtectKernelLogs ProtectControlGroups ProtectClock; do
		like "$(key "$u" "$k")" '^(yes|strict)$' "${u##*/} sandboxed: $k=$(key "$u" "$k")"
	done
	is "$(key "$u" RestrictAddressFamilies)" "AF_UNIX AF_INET AF_INET6" \
		"${u##*/}: RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"
	like "$(key "$u" SystemCallFilter | head -n 1)" '^@system-service$' "${u##*/}: SystemCallFilter=@system-service"
	ok 'grep -qx "CapabilityBoundingSet=" "$u"' "${u##*/}: CapabilityBoundingSet= (none)"
done
is "$(key "$SOCKET" WantedBy) $(key "$SERVICE" Also)" "sockets.target bindery-fcgi.socket" \
	"enabling either unit enables the socket"

# --- placeholders: ExecStartPre refuses the shipped configuration -----------------
# The names the guard knows are exactly those of the sample's settings.
pre=$(key "$SERVICE" ExecStartPre)
guarded=$(grep -oE '@\([A-Z_|]+\)@' <<<"$pre" | tr -d '@()' | tr '|' '\n' | LC_ALL=C sort)
in_sample=$(grep -v '^[;#]' "$SU_SRC/conf/bindery.conf.sample" | grep -oE '@[A-Z_]+@' | tr -d @ |
	LC_ALL=C sort -u)
like "$in_sample" 'DB_PASSWORD' "conf/bindery.conf.sample holds placeholders (the extraction works)"
is "$guarded" "$in_sample" "ExecStartPre's placeholder names are conf/bindery.conf.sample's"
# As debian/rules ships it: the MariaDB socket filled in, the rest not.
sed -e 's|@DB_SOCKET@|/run/mysqld/mysqld.sock|' "$SU_SRC/conf/bindery.conf.sample" >"$SU_TMP/shipped.conf"
filled=$SU_TMP/filled.conf
sed -E 's/@[A-Z_]+@/filled-in-value-0123456789/g' "$SU_TMP/shipped.conf" >"$filled"
printf '; password = @DB_PASSWORD@ (a comment naming a placeholder)\n' >>"$filled"
run_pre() { # CONFIG
	local cmd=${pre//\/etc\/bindery\/bindery.conf/$1}
	eval "$cmd"
}
run_pre "$SU_TMP/shipped.conf" >"$SU_TMP/pre.out" 2>&1
is $? 78 "ExecStartPre refuses the configuration the package ships (exit 78)"
like "$(cat "$SU_TMP/pre.out")" 'still holds @NAME@ placeholders' "... and says why"
run_pre "$filled" >"$SU_TMP/pre-ok.out" 2>&1
is $? 0 "... and passes one filled in (a placeholder in a comment does not count)"
is "$(cat "$SU_TMP/pre-ok.out")" "" "... silently"

# --- the sweeper: skipped, not failed, while the placeholders remain ----------
# ExecCondition: 0 runs the sweep, 1 to 254 skips it (the unit does not fail).
cond=$(key "$SWEEPER" ExecCondition)
names() { grep -oE '@\([A-Z_|]+\)@' <<<"$1" | tr -d '@()' | tr '|' '\n' | LC_ALL=C sort; }
is "$(names "$cond")" "$in_sample" "bindery.service's ExecCondition names conf/bindery.conf.sample's placeholders"
run_cond() { # CONFIG
	local cmd=${cond//\/etc\/bindery\/bindery.conf/$1}
	eval "$cmd"
}
run_cond "$SU_TMP/shipped.conf" >"$SU_TMP/cond.out" 2>&1
is $? 1 "ExecCondition skips the sweep on the shipped configuration (1: skipped, not failed)"
like "$(cat "$SU_TMP/cond.out")" 'still holds @NAME@ placeholders' "... and says why in the journal"
run_cond "$filled" >"$SU_TMP/cond-ok.out" 2>&1
is "$?:$(cat "$SU_TMP/cond-ok.out")" "0:" "... runs it on one filled in, silently"
run_cond "$SU_TMP/no-such.conf" >"$SU_TMP/cond-missing.out" 2>&1
is $? 0 "... and on a file it cannot read: the sweep itself fails and says why"

# --- the package's cron job: the same rule ----------------------------------------
# Its line with a stand-in for bindery (it prints and fails, as a sweep on
# a bad configuration does), the configuration a copy, no systemd.
cron_cmd=$(grep -E '^[0-9*]' "$SU_DEB/bindery.cron.d" | cut -d' ' -f7-)
is "$(names "$cron_cmd")" "$in_sample" "debian/bindery.cron.d names conf/bindery.conf.sample's placeholders"
printf '#!/bin/sh\necho "sweep ran: $*"\nexit 78\n' >"$SU_TMP/bindery" && chmod +x "$SU_TMP/bindery"
run_cron() { # CONFIG
	local cmd=${cron_cmd//\/usr\/sbin\/bindery/$SU_TMP/bindery}
	cmd=${cmd//\/run\/systemd\/system/$SU_TMP/no-systemd}
	env -i PATH=/usr/bin:/bin /bin/sh -c "${cmd//\/etc\/bindery\/bindery.conf/$1}" </dev/null
}
run_cron "$SU_TMP/shipped.conf" >"$SU_TMP/cron.out" 2>&1
is "$?:$(cat "$SU_TMP/cron.out")" "0:" "the cron job on the shipped configuration: exits 0, prints nothing (no mail)"
run_cron "$filled" >"$SU_TMP/cron-filled.out" 2>&1
is "$?:$(cat "$SU_TMP/cron-filled.out")" "78:sweep ran: -c $filled sweep --lock bindery-sweep" \
	"... on one filled in, it runs the sweep, whose error cron mails"
run_cron "$SU_TMP/no-such.conf" >"$SU_TMP/cron-missing.out" 2>&1
is "$?:$(cat "$SU_TMP/cron-missing.out")" "78:sweep ran: -c $SU_TMP/no-such.conf sweep --lock bindery-sweep" \
	"... and on a file it cannot read (only the placeholders keep it quiet)"
done_testing
