# Core: buffers, logging, configuration, the two programs.
lib_libbindery_a_SOURCES += lib/compat.h lib/buf.c lib/buf.h
check_PROGRAMS += tests/unit/test_buf
UNIT_TESTS += tests/unit/test_buf
