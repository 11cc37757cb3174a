# dist: the release tarball and what `make install` puts where, and an
# upgrade from the previous release (upgrade.sh: --long only, on the stack).
# They are not UNIT_TESTS because the ASan build's check-unit has no reason
# to build the tarball a second time.
DIST_TESTS = tests/dist/dist.sh tests/dist/install.sh tests/dist/upgrade.sh
# The Debian package built, linted, installed, served through the system
# Apache and purged: only under ./dev test --long (it skips otherwise).
DIST_TESTS += tests/dist/deb.sh
EXTRA_DIST += $(DIST_TESTS)

# debian/ ships in the tarball: it is the orig tarball of the 3.0 (quilt)
# package, and dpkg-buildpackage -b works in an unpacked release.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/postinst debian/postrm debian/bindery.cron.d \
	debian/bindery.lintian-overrides debian/bindery.service \
	debian/bindery.timer debian/apache-bindery.conf debian/apache-bindery-fcgid-vhost.conf \
	debian/lighttpd-bindery.conf \
	debian/bindery.bindery-fcgi.socket debian/bindery.bindery-fcgi.service \
	debian/apache-bindery-proxy-fcgi.conf debian/lighttpd-bindery-pool.conf

# The package's systemd units pass systemd-analyze verify and agree with its
# web-server snippets and the sample configuration; a unit test (no stack,
# no tarball), so the package build runs it too.
UNIT_TESTS += tests/unit/systemd_units.sh
EXTRA_DIST += tests/unit/systemd_units.sh

# Every sample configuration and web-server snippet, for an administrator to
# copy (they carry @NAME@ placeholders, so none is installed live).
examplesdir = $(docdir)/examples
dist_examples_DATA = conf/bindery.conf.sample conf/bindery.cron \
	conf/apache-fcgid.conf conf/apache-fcgid.lua conf/apache-cgid.conf conf/apache-proxy-fcgi.conf \
	conf/lighttpd.conf conf/lighttpd-cgi.conf conf/lighttpd-pool.conf \
	conf/lighttpd-error-400.html conf/lighttpd-error-411.html conf/lighttpd-error-413.html \
	conf/lighttpd-error-431.html conf/lighttpd-error-500.html conf/lighttpd-error-503.html \
	conf/clamd-bindery.conf

# The installation directories as this build expands them, one NAME=DIR a
# line: tests/dist/install.sh checks `make install` against them.
print-installdirs:
	@printf '%s\n' 'sbindir=$(sbindir)' 'cgibindir=$(cgibindir)' \
		'sysconfdir=$(sysconfdir)' 'pkgdatadir=$(pkgdatadir)' \
		'docdir=$(docdir)' 'mandir=$(mandir)'
.PHONY: print-installdirs
