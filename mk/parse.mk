# lib/parse: pure parsers of hostile input (multipart/form-data and its pull
# reader for uploads, request pieces) and of configuration (bindery.conf, the
# lifecycle policy).  No I/O but reading the config file and the callbacks it
# is handed; nothing from storage or the registry.
lib_libbindery_a_SOURCES += lib/parse/multipart.c lib/parse/multipart.h \
	lib/parse/form_reader.c lib/parse/form_reader.h \
	lib/parse/http_parse.c lib/parse/http_parse.h \
	lib/parse/disposition.c lib/parse/disposition.h \
	lib/parse/config.c lib/parse/config.h \
	lib/parse/mime_list.c lib/parse/mime_list.h \
	lib/parse/lifecycle.c lib/parse/lifecycle.h \
	lib/parse/origin.c lib/parse/origin.h \
	lib/parse/tus_headers.c lib/parse/tus_headers.h

check_PROGRAMS += tests/unit/test_multipart tests/unit/test_http_parse \
	tests/unit/test_alloc_fail tests/unit/test_config \
	tests/unit/test_lifecycle_policy tests/unit/test_form_reader \
	tests/unit/test_disposition tests/unit/test_origin \
	tests/unit/test_tus_headers tests/unit/test_mime_list
# Found through $top_srcdir when the harness sets it, else this path.
tests_unit_test_multipart_CPPFLAGS = $(AM_CPPFLAGS) \
	-DMULTIPART_DATA_DIR='"$(abs_top_srcdir)/tests/data/multipart"'
UNIT_TESTS += tests/unit/test_multipart tests/unit/test_http_parse \
	tests/unit/test_alloc_fail tests/unit/test_config \
	tests/unit/test_lifecycle_policy tests/unit/test_form_reader \
	tests/unit/test_disposition tests/unit/test_origin \
	tests/unit/test_tus_headers tests/unit/test_mime_list
# bindery.conf(5) and the sample document every key the parser knows.
UNIT_TESTS += tests/unit/config_doc.sh
EXTRA_DIST += tests/unit/config_doc.sh

EXTRA_DIST += tests/data/multipart tests/fuzz/run.sh \
	tests/fuzz/fuzz_multipart.c tests/fuzz/fuzz_http_parse.c tests/fuzz/corpus \
	tests/fuzz/multipart.dict tests/fuzz/http_parse.dict \
	tests/fuzz/fuzz_config.c tests/fuzz/config.dict \
	tests/fuzz/fuzz_blob_xml.c tests/fuzz/blob_xml.dict \
	tests/fuzz/fuzz_tus_headers.c tests/fuzz/tus_headers.dict

# ./configure CC=clang --enable-fuzzers builds the harnesses with their own
# instrumentation (the library sources are compiled in, not linked from
# libbindery.a, so libFuzzer sees their coverage).  tests/fuzz/run.sh builds
# and runs them without configure.
if FUZZERS
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
noinst_PROGRAMS += tests/fuzz/fuzz_multipart tests/fuzz/fuzz_http_parse \
	tests/fuzz/fuzz_tus_headers
tests_fuzz_fuzz_multipart_SOURCES = tests/fuzz/fuzz_multipart.c lib/parse/multipart.c \
	lib/base/alloc.c lib/base/buf.c
tests_fuzz_fuzz_multipart_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
tests_fuzz_fuzz_multipart_LDFLAGS = $(FUZZ_FLAGS)
tests_fuzz_fuzz_multipart_LDADD =
tests_fuzz_fuzz_http_parse_SOURCES = tests/fuzz/fuzz_http_parse.c lib/parse/http_parse.c \
	lib/parse/disposition.c lib/parse/origin.c app/routes.c lib/base/alloc.c lib/base/buf.c
tests_fuzz_fuzz_http_parse_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
tests_fuzz_fuzz_http_parse_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
tests_fuzz_fuzz_http_parse_LDFLAGS = $(FUZZ_FLAGS)
tests_fuzz_fuzz_http_parse_LDADD =
tests_fuzz_fuzz_tus_headers_SOURCES = tests/fuzz/fuzz_tus_headers.c \
	lib/parse/tus_headers.c lib/base/base64.c lib/base/http_date.c \
	lib/base/alloc.c lib/base/buf.c
tests_fuzz_fuzz_tus_headers_CFLAGS = $(AM_CFLAGS) $(FUZZ_FLAGS)
tests_fuzz_fuzz_tus_headers_LDFLAGS = $(FUZZ_FLAGS)
tests_fuzz_fuzz_tus_headers_LDADD =
endif

# make check-fuzz: every harness for FUZZ_SECONDS (default 30) under ASan+UBSan.
check-fuzz:
	top_srcdir='$(abs_top_srcdir)' $(SHELL) $(top_srcdir)/tests/fuzz/run.sh
.PHONY: check-fuzz
