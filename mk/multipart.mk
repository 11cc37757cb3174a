# multipart: the hostile-input parsers (multipart/form-data, request pieces,
# routes), the allocation hook they allocate through, their unit tests,
# allocation-failure loop, banned-function check and libFuzzer harnesses.
lib_libbindery_a_SOURCES += lib/alloc.c lib/alloc.h lib/multipart.c lib/multipart.h \
	lib/http_parse.c lib/http_parse.h

check_PROGRAMS += tests/unit/test_multipart tests/unit/test_http_parse \
	tests/unit/test_alloc_fail
# Found through $top_srcdir when the harness sets it, else this path.
tests_unit_test_multipart_CPPFLAGS = $(AM_CPPFLAGS) \
	-DMULTIPART_DATA_DIR='"$(abs_top_srcdir)/tests/data/multipart"'
UNIT_TESTS += tests/unit/test_multipart tests/unit/test_http_parse \
	tests/unit/test_alloc_fail tests/unit/banned.sh

EXTRA_DIST += tests/unit/banned.sh tests/data/multipart
