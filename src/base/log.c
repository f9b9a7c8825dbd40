/* stderr diagnostics with a stable "kiln: warning:" prefix that tests can match. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

int log_verbose = 0;

void log_warning(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kiln: warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void log_info(const char *fmt, ...) {
  if (!log_verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("kiln: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
