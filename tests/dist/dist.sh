#!/bin/bash
# tests/dist/dist.sh — the release tarball is complete and builds.
#
# Either way every file git tracks is in the tarball, but the few that only
# make sense in a git checkout (NOT_SHIPPED).  With BINDERY_TEST_LONG (what
# ./dev test --long runs in the background): the whole `make distcheck`
# (about 75 s on this machine's two shared cores: build, unit tests, install,
# uninstall, distclean).  Otherwise `make dist`, and (a make check by
# hand, about 30 s) the tarball configures and builds out of tree with its
# source read-only, as distcheck would build it; a default ./dev test's
# background stops after the tarball's contents, and its lanes skip it.  Every BINDERY_* variable is unset first, so nothing the
# tarball's tests run can reach the live test stack.
. "$(dirname "$0")/../lib/tap.sh"

# Tracked files a tarball leaves out on purpose.
NOT_SHIPPED='^\.gitignore$'

DIST_SRC=$(cd "${top_srcdir:?}" && pwd -P)
DIST_BUILD=$(cd "${top_builddir:?}" && pwd -P)
# Inside `make distcheck` the source is the unpacked tarball: it has no
# history to compare with (and running distcheck again would recurse).
if [ "$(git -C "$DIST_SRC" rev-parse --show-toplevel 2>/dev/null)" != "$DIST_SRC" ]; then
	skip_all "$DIST_SRC is not a git checkout (a tarball build, make distcheck's own)"
fi
DIST_TMP_ROOT=${BINDERY_TEST_VAR:-${TMPDIR:-/tmp}}
DIST_LONG=${BINDERY_TEST_LONG:-}
# A default ./dev test's background says so (dev's background_start): read
# here, before every BINDERY_* variable is unset below.
DIST_IN_DEV_TEST=${BINDERY_DIST_IN_DEV_TEST:-}
# ./dev test runs it in the background, in a build tree of its own, so its
# make check has nothing to add, with --long or without.  (Under --long it would also
# share this tree with deb.sh, whose make dist empties the directory
# distcheck builds and installs in: both failed that way.)
if [ -n "${BINDERY_TEST_LANES:-}" ]; then
	skip_all "./dev test runs it in the background with make distcheck (var/build-asan/tests/dist/dist.log)"
fi
unset $(compgen -e | grep -E '^BINDERY_')
# The sub-makes are ours: no -j jobserver or TESTS= override from make check.
unset MAKEFLAGS MFLAGS MAKELEVEL

DIST_TMP=$(mktemp -d "$DIST_TMP_ROOT/dist.XXXXXX") || bail_out "mktemp -d failed"
trap 'chmod -R u+w "$DIST_TMP" 2>/dev/null; rm -rf "$DIST_TMP"' EXIT

if [ -n "$DIST_LONG" ]; then
	# -O0: distcheck proves the tarball builds, checks and installs, not how
	# fast its programs run; it halves the build's CPU.
	make -C "$DIST_BUILD" -j2 distcheck DISTCHECK_CONFIGURE_FLAGS='CFLAGS=-O0' >"$DIST_TMP/distcheck.out" 2>&1
	dist_rc=$?
	ok $dist_rc "make distcheck passes"
	like "$(grep -E '^# (FAIL|ERROR):' "$DIST_TMP/distcheck.out" | tr '\n' ' ')" \
		'^# FAIL: +0 # ERROR: +0 $' "distcheck's make check: no failure, no error"
	[ $dist_rc -eq 0 ] || tail -n 40 "$DIST_TMP/distcheck.out" | sed 's/^/# /'
else
	make -C "$DIST_BUILD" dist >"$DIST_TMP/dist.out" 2>&1
	dist_rc=$?
	ok $dist_rc "make dist"
	[ $dist_rc -eq 0 ] || tail -n 20 "$DIST_TMP/dist.out" | sed 's/^/# /'
fi
DIST_VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$DIST_BUILD/Makefile")
DIST_TARBALL=bindery-$DIST_VERSION.tar.gz
mv "$DIST_BUILD/$DIST_TARBALL" "$DIST_TMP/" 2>/dev/null || bail_out "no $DIST_TARBALL from make dist"
DIST_DIR=${DIST_TARBALL%.tar.gz}

tar -tzf "$DIST_TMP/$DIST_TARBALL" | sed -n "s|^$DIST_DIR/||p" | grep -v '/$' |
	LC_ALL=C sort >"$DIST_TMP/shipped"
git -C "$DIST_SRC" ls-files | grep -Ev "$NOT_SHIPPED" | LC_ALL=C sort >"$DIST_TMP/tracked"
LC_ALL=C comm -23 "$DIST_TMP/tracked" "$DIST_TMP/shipped" >"$DIST_TMP/left-out"
ok '[ ! -s "$DIST_TMP/left-out" ]' "every tracked file is in $DIST_TARBALL"
sed 's/^/# not distributed: /' "$DIST_TMP/left-out"
for f in LICENSE NEWS configure Makefile.in build-aux/tap-driver.sh tests/tap.h; do
	ok 'grep -qxF "$f" "$DIST_TMP/shipped"' "the tarball has $f"
done

# distcheck has built the tarball out of tree with its source read-only.
[ -z "$DIST_LONG" ] || done_testing
# A default ./dev test stops here: the completeness above is what a missing
# file would break, and the build below (30 CPU seconds of a run whose
# budget is 600 s) is what distcheck repeats under --long.  A make check by
# hand still builds it.
[ -z "$DIST_IN_DEV_TEST" ] || done_testing
# Otherwise the same, as a packager's build would: out of tree, source read-only.
tar -xzf "$DIST_TMP/$DIST_TARBALL" -C "$DIST_TMP" && chmod -R a-w "$DIST_TMP/$DIST_DIR"
mkdir "$DIST_TMP/build"
# -O0: this proves the tarball builds, not how fast the result runs, and it
# halves the build (about 14 s instead of 30 s here).
(cd "$DIST_TMP/build" && "../$DIST_DIR/configure" --prefix="$DIST_TMP/prefix" CFLAGS='-O0 -g0') \
	>"$DIST_TMP/configure.out" 2>&1
dist_rc=$?
ok $dist_rc "the tarball configures out of tree"
[ $dist_rc -eq 0 ] || tail -n 20 "$DIST_TMP/configure.out" | sed 's/^/# /'
make -C "$DIST_TMP/build" -j2 >"$DIST_TMP/make.out" 2>&1
dist_rc=$?
ok $dist_rc "the tarball builds out of tree (source read-only)"
[ $dist_rc -eq 0 ] || tail -n 20 "$DIST_TMP/make.out" | sed 's/^/# /'
for f in app/bindery app/bindery.fcgi; do
	ok '[ -x "$DIST_TMP/build/$f" ]' "$f built from the tarball"
done
done_testing
