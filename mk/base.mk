# lib/base: spans and capped buffers, the allocation hook, logging, random
# ids, failpoints, the state machine's names, base64, HTTP dates, the
# saved form of a running SHA-256, the counters every process shares.
# It includes nothing above itself.
lib_libbindery_a_SOURCES += lib/base/compat.h lib/base/buf.c lib/base/buf.h \
	lib/base/alloc.c lib/base/alloc.h lib/base/log.c lib/base/log.h \
	lib/base/rand.c lib/base/rand.h lib/base/failpoint.c lib/base/failpoint.h \
	lib/base/state.c lib/base/state.h lib/base/base64.c lib/base/base64.h \
	lib/base/http_date.c lib/base/http_date.h lib/base/clock.c lib/base/clock.h \
	lib/base/sha256_state.c lib/base/sha256_state.h lib/base/counters.c lib/base/counters.h

check_PROGRAMS += tests/unit/test_buf tests/unit/test_state tests/unit/test_base64 \
	tests/unit/test_http_date tests/unit/test_sha256_state tests/unit/test_log \
	tests/unit/test_counters
# banned.sh and layers.sh read every layer's sources: the house rules.
UNIT_TESTS += tests/unit/test_buf tests/unit/test_state tests/unit/test_base64 \
	tests/unit/test_http_date tests/unit/test_sha256_state tests/unit/test_log tests/unit/test_counters \
	tests/unit/banned.sh \
	tests/unit/layers.sh
EXTRA_DIST += tests/unit/banned.sh tests/unit/layers.sh
# cycles.sh reads every module's includes and, with nm, the built objects of
# lib/ and app/: no two modules depend on each other in a loop.
UNIT_TESTS += tests/unit/cycles.sh
EXTRA_DIST += tests/unit/cycles.sh
