/* Error objects behind kiln_status: a code plus a heap-allocated message. Allocation
 * failure while building an error falls back to a static object so that reporting an
 * out-of-memory condition never itself fails. */
#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kiln_status_t {
  kiln_code code;
  char *message;
  int is_static;
};

static kiln_status_t oom_status = {KILN_RESOURCE_EXHAUSTED, "out of memory while reporting an error", 1};

kiln_status status_verror(kiln_code code, const char *fmt, va_list ap) {
  kiln_status s = malloc(sizeof *s);
  if (!s) return &oom_status;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  s->code = code;
  s->is_static = 0;
  s->message = malloc((size_t)(n < 0 ? 0 : n) + 1);
  if (!s->message) {
    free(s);
    return &oom_status;
  }
  vsnprintf(s->message, (size_t)n + 1, fmt, ap);
  return s;
}

kiln_status status_error(kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = status_verror(code, fmt, ap);
  va_end(ap);
  return s;
}

kiln_status status_wrap(kiln_status s, const char *fmt, ...) {
  if (!s || s->is_static) return s;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return s;
  size_t old = strlen(s->message);
  char *m = malloc((size_t)n + 2 + old + 1);
  if (!m) return s;
  va_start(ap, fmt);
  vsnprintf(m, (size_t)n + 1, fmt, ap);
  va_end(ap);
  memcpy(m + n, ": ", 2);
  memcpy(m + n + 2, s->message, old + 1);
  free(s->message);
  s->message = m;
  return s;
}

kiln_code kiln_status_code(const kiln_status_t *s) { return s ? s->code : KILN_OK; }
const char *kiln_status_message(const kiln_status_t *s) { return s ? s->message : "OK"; }

const char *kiln_code_name(kiln_code code) {
  switch (code) {
    case KILN_OK: return "OK";
    case KILN_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case KILN_NOT_FOUND: return "NOT_FOUND";
    case KILN_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case KILN_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case KILN_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case KILN_INTERNAL: return "INTERNAL";
    case KILN_IO_ERROR: return "IO_ERROR";
  }
  return "UNKNOWN";
}

void kiln_status_free(kiln_status_t *s) {
  if (!s || s->is_static) return;
  free(s->message);
  free(s);
}
