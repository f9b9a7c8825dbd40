/* Status construction for kiln internals.
 *
 * Every fallible function returns kiln_status (NULL on success). The helpers here build
 * error objects with printf-style messages and let callers prepend context as an error
 * travels outward ("while parsing x.hlo: 3:14: expected ']'"), so the final message says
 * where the problem is without any layer knowing the whole path. TRY() propagates. */
#ifndef KILN_BASE_STATUS_H
#define KILN_BASE_STATUS_H

#include "kiln/kiln.h"
#include <stdarg.h>

#if defined(__GNUC__)
#define KILN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KILN_PRINTF(a, b)
#endif

kiln_status status_error(kiln_code code, const char *fmt, ...) KILN_PRINTF(2, 3);
kiln_status status_verror(kiln_code code, const char *fmt, va_list ap);
/* Prepends "PREFIX: " to s's message and returns s (NULL passes through). */
kiln_status status_wrap(kiln_status s, const char *fmt, ...) KILN_PRINTF(2, 3);

#define TRY(expr)                                                              \
  do {                                                                         \
    kiln_status try_status_ = (expr);                                          \
    if (try_status_) return try_status_;                                       \
  } while (0)

#define ERR_INVALID(...) status_error(KILN_INVALID_ARGUMENT, __VA_ARGS__)
#define ERR_UNIMPLEMENTED(...) status_error(KILN_UNIMPLEMENTED, __VA_ARGS__)
#define ERR_INTERNAL(...) status_error(KILN_INTERNAL, __VA_ARGS__)

#endif
