/* libFuzzer target for the .npy reader: any byte string must give either a literal or
 * an error — never a crash, hang, leak or an allocation larger than the input justifies.
 * The size cap is lowered so that a header claiming a large-but-legal tensor cannot make
 * a run slow; the reader must still refuse it before allocating. Successful reads are
 * written back and re-read, which must reproduce the same literal. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hlo/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)64 << 20;
  hlo_literal *lit = NULL;
  kiln_status s = npy_read_buffer(data, size, "<fuzz input>", &lit);
  if (s) {
    kiln_status_free(s);
    return 0;
  }
  strbuf b;
  strbuf_init(&b);
  s = npy_write_buffer(lit, &b);
  if (s) abort(); /* everything the reader returns must be writable */
  hlo_literal *again = NULL;
  s = npy_read_buffer(b.data, b.len, "<fuzz round trip>", &again);
  if (s || !literal_equal(lit, again)) abort();
  literal_free(again);
  strbuf_free(&b);
  literal_free(lit);
  return 0;
}
