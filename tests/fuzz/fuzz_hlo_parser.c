/* libFuzzer target for the HLO text parser and printer. Any input must either fail with
 * an error or parse; a parsed module must print, reparse, and print identically
 * (print(parse(print(m))) == print(m)), and everything must be freed. A crash, hang, leak
 * or a round-trip mismatch (reported by abort) is a bug. Build with -DKILN_FUZZ=ON using
 * clang; seed it with tests/hlo/corpus. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/parser.h"
#include "hlo/printer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Keep elided constants and huge literals cheap: the fuzzer's memory limit is not the
   * parser's concern, and 64 KiB is plenty to exercise literal code. */
  literal_max_bytes = 64 * 1024;
  hlo_module *m = NULL;
  kiln_status s = hlo_parse((const char *)data, size, "fuzz.hlo", &m);
  if (s) {
    kiln_status_free(s);
    return 0;
  }
  char *first = hlo_module_to_string(m, NULL);
  hlo_module *m2 = NULL;
  s = hlo_parse(first, strlen(first), "fuzz-printed.hlo", &m2);
  if (s) {
    fprintf(stderr, "printed module does not parse: %s\n----\n%s\n", kiln_status_message(s), first);
    abort();
  }
  char *second = hlo_module_to_string(m2, NULL);
  if (strcmp(first, second) != 0) {
    fprintf(stderr, "round trip mismatch\n---- first ----\n%s\n---- second ----\n%s\n", first, second);
    abort();
  }
  free(first);
  free(second);
  hlo_module_free(m2);
  hlo_module_free(m);
  return 0;
}
