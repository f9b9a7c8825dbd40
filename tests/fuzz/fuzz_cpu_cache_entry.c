/* libFuzzer target for the cpu backend's persistent compilation cache reader
 * (cpu_persist_parse): any byte string must be refused or give objects whose lengths
 * add up to the entry -- never a crash, hang, leak or an allocation larger than the
 * input. Random bytes almost never carry the right checksum, so each input is parsed
 * twice: as it is, and with its correct checksum appended, which lets the fuzzer reach
 * the header fields (version, key length, object count and lengths) behind it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_persist.h"

static void parse(const uint8_t *data, size_t size) {
  cpu_jit_object *objs = NULL;
  int n = 0;
  kiln_status s = cpu_persist_parse(data, size, NULL, &objs, &n);
  if (s) {
    if (objs) abort(); /* an error hands nothing back */
    kiln_status_free(s);
    return;
  }
  size_t total = 0;
  for (int i = 0; i < n; i++) total += objs[i].size;
  if (total > size) abort();
  cpu_jit_objects_free(objs, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  parse(data, size);
  uint8_t *sealed = malloc(size + 16);
  if (!sealed) return 0;
  if (size) memcpy(sealed, data, size);
  uint64_t sum[2];
  cpu_persist_checksum(sealed, size, sum);
  memcpy(sealed + size, sum, 16);
  parse(sealed, size + 16);
  free(sealed);
  return 0;
}
