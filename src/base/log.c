/* Diagnostics with a stable "kiln: warning:" prefix that tests can match, or through the
 * calling thread's sink. A message is formatted once and written with one call, so lines
 * from concurrent threads do not interleave mid-line on stderr. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int log_verbose = 0;

static _Thread_local bool thread_has_sink;
static _Thread_local log_sink thread_sink;

void log_set_thread_sink(const log_sink *s, log_sink *prev, bool *had_sink) {
  if (prev) *prev = thread_has_sink ? thread_sink : (log_sink){NULL, NULL, LOG_INFO};
  if (had_sink) *had_sink = thread_has_sink;
  thread_has_sink = s != NULL;
  thread_sink = s ? *s : (log_sink){NULL, NULL, LOG_INFO};
}

static void emit(log_level level, const char *fmt, va_list ap) {
  if (thread_has_sink ? level < thread_sink.min_level : level == LOG_INFO && !log_verbose) return;
  char small[512];
  char *msg = small;
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small) {
    msg = malloc((size_t)n + 1);
    if (msg) vsnprintf(msg, (size_t)n + 1, fmt, again);
    else msg = small; /* out of memory: the truncated text is better than nothing */
  }
  va_end(again);
  if (n < 0) small[0] = 0;
  if (thread_has_sink && thread_sink.fn) {
    thread_sink.fn(thread_sink.user, level, msg);
  } else {
    static const char *const prefix[] = {"kiln: ", "kiln: warning: ", "kiln: error: "};
    fprintf(stderr, "%s%s\n", prefix[level], msg);
  }
  if (msg != small) free(msg);
}

void log_warning(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(LOG_WARNING, fmt, ap);
  va_end(ap);
}

void log_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(LOG_ERROR, fmt, ap);
  va_end(ap);
}

void log_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(LOG_INFO, fmt, ap);
  va_end(ap);
}
