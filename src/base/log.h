/* Diagnostics to stderr. Warnings are for conditions the user should know about but that
 * do not stop the run (an elided constant filled with pseudo-random data, a fallback). */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

void log_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Verbose info, printed only when log_verbose is set (the --v flag). */
void log_info(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
extern int log_verbose;

#endif
