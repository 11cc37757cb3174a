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

EXTRA_DIST += tests/unit/banned.sh tests/data/multipart tests/fuzz/run.sh \
	tests/fuzz/fuzz_multipart.c tests/fuzz/fuzz_http_parse.c tests/fuzz/corpus \
	tests/fuzz/multipart.dict tests/fuzz/http_parse.dict \
	tests/fuzz/fuzz_config.c tests/fuzz/config.dict \
	tests/fuzz/fuzz_blob_xml.c tests/fuzz/blob_xml.dict

# ./configure CC=clang --enable-fuzzers builds the harnesses with their own
# instrumentation (the library sources are compiled in, not linked from
# libbindery.a, so libFuzzer sees their coverage).  tests/fuzz/run.sh builds
# and runs them without configure.
if FUZZERS
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
noinst_PROGRAMS += tests/fuzz/fuzz_multipart tests/fuzz/fuzz_http_parse
tests_fuzz_fuzz_multipart_SOURCES = tests/fuzz/fuzz_multipart.c lib/multipart.c \
	lib/alloc.c lib/buf.c
tests_fuzz_fuzz_multipart_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
tests_fuzz_fuzz_multipart_LDFLAGS = $(FUZZ_FLAGS)
tests_fuzz_fuzz_multipart_LDADD =
tests_fuzz_fuzz_http_parse_SOURCES = tests/fuzz/fuzz_http_parse.c lib/http_parse.c \
	lib/alloc.c lib/buf.c
tests_fuzz_fuzz_http_parse_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
tests_fuzz_fuzz_http_parse_LDFLAGS = $(FUZZ_FLAGS)
tests_fuzz_fuzz_http_parse_LDADD =
endif

# make check-fuzz: every harness for FUZZ_SECONDS (default 30) under ASan+UBSan.
check-fuzz:
	top_srcdir='$(abs_top_srcdir)' $(SHELL) $(top_srcdir)/tests/fuzz/run.sh
.PHONY: check-fuzz
