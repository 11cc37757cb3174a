#!/bin/bash
# tests/dist/install.sh — `make install DESTDIR=…` puts exactly the files a
# package needs where configure said (the CLI in sbindir, the responder in
# cgibindir, the SQL in pkgdatadir, every conf/ sample in docdir/examples,
# the man pages), and the default configuration file both programs and the
# man pages name follows --sysconfdir.  `make uninstall` removes them all.
. "$(dirname "$0")/../lib/tap.sh"

INST_SRC=$(cd "${top_srcdir:?}" && pwd -P)
INST_BUILD=$(cd "${top_builddir:?}" && pwd -P)
INST_TMP_ROOT=${BINDERY_TEST_VAR:-${TMPDIR:-/tmp}}
# Nothing here may find the test stack's configuration by accident.
unset $(compgen -e | grep -E '^BINDERY_')
unset MAKEFLAGS MFLAGS MAKELEVEL

INST_TMP=$(mktemp -d "$INST_TMP_ROOT/install.XXXXXX") || bail_out "mktemp -d failed"
trap 'rm -rf "$INST_TMP"' EXIT
INST_ROOT=$INST_TMP/root

make -s -C "$INST_BUILD" print-installdirs >"$INST_TMP/dirs" 2>&1 ||
	bail_out "make print-installdirs failed: $(head -n 3 "$INST_TMP/dirs")"
installdir() { sed -n "s/^$1=//p" "$INST_TMP/dirs"; }
INST_SBINDIR=$(installdir sbindir) INST_CGIBINDIR=$(installdir cgibindir)
INST_SYSCONFDIR=$(installdir sysconfdir) INST_PKGDATADIR=$(installdir pkgdatadir)
INST_DOCDIR=$(installdir docdir) INST_MANDIR=$(installdir mandir)
for d in "$INST_SBINDIR" "$INST_CGIBINDIR" "$INST_SYSCONFDIR" "$INST_PKGDATADIR" \
	"$INST_DOCDIR" "$INST_MANDIR"; do
	like "$d" '^/[^$]*$' "an absolute, fully expanded installation directory: $d"
done

make -C "$INST_BUILD" install DESTDIR="$INST_ROOT" >"$INST_TMP/install.out" 2>&1
inst_rc=$?
ok $inst_rc "make install DESTDIR=…"
[ $inst_rc -eq 0 ] || tail -n 20 "$INST_TMP/install.out" | sed 's/^/# /'

(cd "$INST_ROOT" && find . ! -type d | sed 's|^\.||' | LC_ALL=C sort) >"$INST_TMP/got"
{
	echo "$INST_SBINDIR/bindery"
	echo "$INST_CGIBINDIR/bindery.fcgi"
	for f in "$INST_SRC"/sql/*.sql; do echo "$INST_PKGDATADIR/sql/${f##*/}"; done
	for f in "$INST_SRC"/conf/*; do echo "$INST_DOCDIR/examples/${f##*/}"; done
	for f in README.md NEWS LICENSE openapi.yaml design.md api.md deploying.md \
		operating.md scaling.md performance.md; do echo "$INST_DOCDIR/$f"; done
	echo "$INST_MANDIR/man8/bindery.8"
	echo "$INST_MANDIR/man8/bindery.fcgi.8"
	echo "$INST_MANDIR/man5/bindery.conf.5"
} | LC_ALL=C sort >"$INST_TMP/want"
diff "$INST_TMP/want" "$INST_TMP/got" >"$INST_TMP/diff"
ok $? "exactly the expected files are installed, all under DESTDIR"
sed -n 's/^[<>]/# (< missing, > unexpected) &/p' "$INST_TMP/diff"
ok '[ -x "$INST_ROOT$INST_SBINDIR/bindery" ] && [ -x "$INST_ROOT$INST_CGIBINDIR/bindery.fcgi" ]' \
	"both programs are installed executable"

# The default configuration file is configure's, wherever it is shown.
INST_CONF=$INST_SYSCONFDIR/bindery/bindery.conf
"$INST_ROOT$INST_SBINDIR/bindery" --help >"$INST_TMP/help" 2>&1
like "$(tr -s ' \n' '  ' <"$INST_TMP/help")" "then $INST_CONF\)" "bindery --help names $INST_CONF"
"$INST_ROOT$INST_CGIBINDIR/bindery.fcgi" --help >"$INST_TMP/fcgi-help" 2>&1
like "$(tr -s ' \n' '  ' <"$INST_TMP/fcgi-help")" "or $INST_CONF\." "bindery.fcgi --help names $INST_CONF"
"$INST_ROOT$INST_SBINDIR/bindery" sweep --dry-run >"$INST_TMP/noconf" 2>&1
is "$?" 78 "bindery without -c or \$BINDERY_CONFIG: exit 78 (its default file is absent)"
like "$(cat "$INST_TMP/noconf")" "$INST_CONF" "... and the message names $INST_CONF"
for m in man8/bindery.8 man8/bindery.fcgi.8 man5/bindery.conf.5; do
	ok 'grep -qF "$INST_CONF" "$INST_ROOT$INST_MANDIR/$m"' "$m names $INST_CONF"
	unlike "$(grep -oE '@(sysconfdir|docdir|pkgdatadir|VERSION)@' "$INST_ROOT$INST_MANDIR/$m")" \
		'.' "$m has no placeholder left"
done

make -C "$INST_BUILD" uninstall DESTDIR="$INST_ROOT" >"$INST_TMP/uninstall.out" 2>&1
ok $? "make uninstall DESTDIR=…"
is "$(cd "$INST_ROOT" && find . ! -type d | wc -l)" 0 "make uninstall leaves no file behind"
done_testing
