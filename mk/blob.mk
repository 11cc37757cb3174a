# blob: the Azure Blob Storage client (lib/blob*, lib/sign*), its tests and
# its benchmark.
lib_libbindery_a_SOURCES += lib/sign.c lib/sign.h lib/blob.c lib/blob.h \
	lib/blob_http.c lib/blob_upload.c \
	lib/blob_xml.c lib/blob_internal.h

check_PROGRAMS += tests/unit/test_sign tests/integration/test_blob \
	tests/integration/blobtool
UNIT_TESTS += tests/unit/test_sign
INTEGRATION_TESTS += tests/integration/test_blob \
	tests/integration/test_blob_interop.sh

# The benchmark program is built with everything else and run by
# tests/bench/bench_blob.sh; it is not a test.
noinst_PROGRAMS += tests/bench/bench_blob
tests_integration_test_blob_LDADD = $(LDADD) -lpthread
EXTRA_DIST += tests/integration/test_blob_interop.sh tests/bench/bench_blob.sh
