/* Diagnostics. Warnings are for conditions the user should know about but that do not
 * stop the run (an elided constant filled with pseudo-random data, a fallback); info
 * messages are progress notes for --v=1. By default everything goes to stderr with a
 * stable "kiln: warning: " / "kiln: error: " / "kiln: " prefix that tests match; an
 * embedder can route the messages of one thread elsewhere with a per-thread sink, so
 * two callers on two threads can log to two places at once. */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

#include <stdbool.h>

typedef enum log_level { LOG_INFO = 0, LOG_WARNING = 1, LOG_ERROR = 2 } log_level;
typedef void (*log_sink_fn)(void *user, log_level level, const char *message); /* message without trailing newline */
typedef struct log_sink {
  log_sink_fn fn; /* NULL: stderr */
  void *user;
  log_level min_level; /* less severe messages are dropped (also for stderr) */
} log_sink;

/* Installs *s (copied) for the calling thread until replaced; NULL restores the process
 * default (stderr; info only when log_verbose). The previous setting comes back through
 * *prev and *had_sink when they are non-NULL (*had_sink false: the thread had the
 * default), so `log_set_thread_sink(had_sink ? &prev : NULL, NULL, NULL)` restores it
 * exactly. */
void log_set_thread_sink(const log_sink *s, log_sink *prev, bool *had_sink);

void log_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Like log_warning, at LOG_ERROR: for embedders' sinks; the kiln command reports its
 * errors through statuses. */
void log_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Verbose info: without a sink, printed only when log_verbose is set (the --v flag). */
void log_info(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
extern int log_verbose;

#endif
