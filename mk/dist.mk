# dist: the release tarball and what `make install` puts where.  These tests
# need no stack; they are not UNIT_TESTS because the ASan build's check-unit
# has no reason to build the tarball a second time.
DIST_TESTS = tests/dist/dist.sh
EXTRA_DIST += $(DIST_TESTS)
