/* Minimal unit-test harness: CHECK records a failure with file:line and keeps going,
 * TEST_MAIN runs the listed test functions and prints "N passed, N failed" (the plain
 * closing line CI reads) and exits non-zero on any failure. */
#ifndef KILN_TESTS_CHECK_H
#define KILN_TESTS_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "kiln/kiln.h"

extern int check_failures;

void check_fail(const char *file, int line, const char *expr, const char *detail);

#define CHECK(cond)                                            \
  do {                                                         \
    if (!(cond)) check_fail(__FILE__, __LINE__, #cond, NULL);  \
  } while (0)

/* Expects a NULL status; prints the message otherwise. */
#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    kiln_status check_s_ = (expr);                                             \
    if (check_s_) {                                                            \
      check_fail(__FILE__, __LINE__, #expr, kiln_status_message(check_s_));    \
      kiln_status_free(check_s_);                                              \
    }                                                                          \
  } while (0)

/* Expects an error whose message contains `needle`. */
#define CHECK_ERR(expr, needle) check_err_impl(__FILE__, __LINE__, #expr, (expr), (needle))
void check_err_impl(const char *file, int line, const char *expr, kiln_status s, const char *needle);

typedef struct check_case {
  const char *name;
  void (*fn)(void);
} check_case;

int check_run(const char *suite, const check_case *cases, int n);

#define TEST_MAIN(...)                                                        \
  int main(void) {                                                            \
    static const check_case cases_[] = {__VA_ARGS__};                         \
    return check_run(__FILE__, cases_, (int)(sizeof cases_ / sizeof cases_[0])); \
  }
#define TEST(fn) {#fn, fn}

#endif
