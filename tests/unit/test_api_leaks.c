/* 1,000 load / run / free cycles of one model through the public API: under
 * LeakSanitizer (`make asan`) the process must end with nothing leaked, and in a
 * plain build the resident set after the first 100 cycles must stay flat (within 5%)
 * to the end, so nothing accumulates per model (compiled executables are shared and
 * capped by the cpu backend's cache, which is why cycles after the first compile
 * nothing new). Under AddressSanitizer the resident-set check is skipped: its
 * quarantine holds freed memory on purpose. The model is loaded from memory and from
 * its file on alternate cycles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kiln/kiln.h"

#define CYCLES 1000
#define WARMUP 100

#if defined(__SANITIZE_ADDRESS__)
#define KILN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_TEST_ASAN 1
#endif
#endif

static long resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = 0;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_load_run_free_cycles_leave_memory_flat(void) {
  const char *path = "tests/api/transformer.graph";
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text, f);
  fclose(f);
  float x[16 * 32];
  for (int i = 0; i < 16 * 32; i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  int64_t dims[3] = {1, 16, 32};
  kiln_value in = KILN_VALUE_INIT;
  in.name = "x";
  in.dtype = KILN_FLOAT32;
  in.rank = 3;
  in.dims = dims;
  in.data = x;
  in.byte_size = sizeof x;
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "format", "graph"));
  float first[16 * 32];
  long rss_warm = 0, rss_end = 0;
  int failures = 0;
  for (int c = 0; c < CYCLES && failures < 3; c++) {
    kiln_model *m = NULL;
    kiln_status s = c % 2 ? kiln_model_load(path, NULL, &m) : kiln_model_load_from_memory(text, len, KILN_FORMAT_AUTO, o, &m);
    kiln_tensor *out = NULL;
    if (!s) s = kiln_model_run(m, NULL, 1, &in, 1, NULL, &out);
    if (s) {
      failures++;
      CHECK_OK(s);
    } else if (c == 0) {
      memcpy(first, kiln_tensor_data(out), sizeof first);
    } else if (memcmp(first, kiln_tensor_data(out), sizeof first) != 0) {
      failures++;
      CHECK(!"a cycle's result differs from the first cycle's");
    }
    kiln_tensor_free(out);
    kiln_model_free(m);
    if (c == WARMUP - 1) rss_warm = resident_kib();
  }
  rss_end = resident_kib();
  kiln_options_free(o);
  fprintf(stderr, "resident set: %ld KiB after %d cycles, %ld KiB after %d\n", rss_warm, WARMUP, rss_end, CYCLES);
#ifndef KILN_TEST_ASAN
  CHECK(rss_warm > 0 && rss_end > 0);
  CHECK(rss_end <= rss_warm + rss_warm / 20);
#endif
}

TEST_MAIN(TEST(test_load_run_free_cycles_leave_memory_flat))
