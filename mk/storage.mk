# lib/storage: the Azure Blob Storage client (REST over libcurl, signing).
# It knows no database.
lib_libbindery_a_SOURCES += lib/storage/sign.c lib/storage/sign.h \
	lib/storage/jwt.c lib/storage/jwt.h \
	lib/storage/blob.c lib/storage/blob.h lib/storage/blob_http.c \
	lib/storage/blob_upload.c lib/storage/blob_xml.c lib/storage/blob_internal.h \
	lib/storage/blob_sas.c lib/storage/entra.c lib/storage/entra.h \
	lib/storage/secret_cache.c lib/storage/secret_cache.h

check_PROGRAMS += tests/unit/test_sign tests/integration/test_blob \
	tests/tools/blobtool
UNIT_TESTS += tests/unit/test_sign
# Entra ID's client assertion (PS256): openssl makes the keys and checks
# the signature at run time.
check_PROGRAMS += tests/unit/test_jwt
UNIT_TESTS += tests/unit/test_jwt
# The token cache's refusals, the delegation key's parse, the credential's
# settings: what needs no authority (tests/e2e/entra.sh has one).
check_PROGRAMS += tests/unit/test_entra
UNIT_TESTS += tests/unit/test_entra
# The loopback stand-in for Entra ID and IMDS (the suite's one fake of a
# service), and the check that it refuses what they refuse: it needs no
# stack, so it runs with the unit tests.
UNIT_TESTS += tests/integration/fake_entra.sh
EXTRA_DIST += tests/integration/fake_entra.sh tests/tools/fake_entra.py
INTEGRATION_TESTS += tests/integration/test_blob \
	tests/integration/test_blob_interop.sh tests/integration/test_blob_tls.sh
tests_integration_test_blob_LDADD = $(LDADD) -lpthread
EXTRA_DIST += tests/integration/test_blob_interop.sh tests/integration/test_blob_tls.sh \
	tests/tools/blob_helpers.h

# The benchmark program is built with everything else and run by
# tests/bench/bench_blob.sh; it is not a test.
noinst_PROGRAMS += tests/bench/bench_blob
EXTRA_DIST += tests/bench/bench_blob.sh
# ./dev bench's load generator (keep-alive libcurl clients on threads) and
# its sampler of the responders' private memory (tests/bench/bench.sh).
noinst_PROGRAMS += tests/bench/bench_load
tests_bench_bench_load_LDADD = $(LDADD) -lpthread
EXTRA_DIST += tests/bench/bench.sh tests/bench/bench_results.jq tests/bench/bench_table.jq
