# Core: buffers, logging, configuration, the two programs.
lib_libbindery_a_SOURCES += lib/compat.h lib/buf.c lib/buf.h
check_PROGRAMS += tests/unit/test_buf
UNIT_TESTS += tests/unit/test_buf
lib_libbindery_a_SOURCES += lib/config.c lib/config.h lib/log.c lib/log.h \
	lib/rand.c lib/rand.h
check_PROGRAMS += tests/unit/test_config
UNIT_TESTS += tests/unit/test_config
