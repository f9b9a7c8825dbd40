/* Implementation of the unit-test harness in check.h. */
#include "check.h"

#include <string.h>

int check_failures = 0;

void check_fail(const char *file, int line, const char *expr, const char *detail) {
  check_failures++;
  fprintf(stderr, "%s:%d: CHECK failed: %s%s%s\n", file, line, expr, detail ? ": " : "", detail ? detail : "");
}

void check_err_impl(const char *file, int line, const char *expr, kiln_status s, const char *needle) {
  if (!s) {
    check_fail(file, line, expr, "expected an error, got OK");
    return;
  }
  const char *m = kiln_status_message(s);
  if (needle && !strstr(m, needle)) {
    char buf[1024];
    snprintf(buf, sizeof buf, "error message \"%s\" lacks \"%s\"", m, needle);
    check_fail(file, line, expr, buf);
  }
  kiln_status_free(s);
}

int check_run(const char *suite, const check_case *cases, int n) {
  int passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    int before = check_failures;
    cases[i].fn();
    if (check_failures == before) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAIL %s\n", cases[i].name);
    }
  }
  printf("%s: %d passed, %d failed\n", suite, passed, failed);
  return failed ? 1 : 0;
}
