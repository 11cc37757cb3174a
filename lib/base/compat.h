/* compat.h - compiler attributes used across bindery. */
#ifndef BINDERY_COMPAT_H
#define BINDERY_COMPAT_H

#if defined(__GNUC__)
#define BINDERY_NODISCARD __attribute__((warn_unused_result))
#define BINDERY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BINDERY_UNUSED __attribute__((unused))
#else
#define BINDERY_NODISCARD
#define BINDERY_PRINTF(f, a)
#define BINDERY_UNUSED
#endif

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
