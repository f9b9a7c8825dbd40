/* libFuzzer target for the TensorBundle index reader (variables.index of a SavedModel):
 * any byte string must give either a bundle or an error naming the index -- never a
 * crash, hang or leak. A bundle that opens lists its keys, and reading each one must
 * fail cleanly (there are no data shards here) or, for a zero-size tensor, succeed.
 * Seeds in tests/fuzz/seeds/fuzz_tf_bundle are index files TensorFlow 2.21 wrote for
 * the test models of tests/models/test_tf_savedmodels.py (random weights), one of them
 * with a variable sliced over 13 shards. The tensor size cap is lowered so an entry
 * whose shape asks for gigabytes is refused before anything large is allocated. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/tf/tf_bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  tf_bundle *b = NULL;
  kiln_status s = tf_bundle_open_index(data, size, NULL, &b);
  if (s) {
    if (!strstr(kiln_status_message(s), "<index>")) abort(); /* every error names the index */
    kiln_status_free(s);
    return 0;
  }
  for (int i = 0; i < tf_bundle_count(b); i++) {
    const char *key = tf_bundle_key(b, i);
    if (!key || !tf_bundle_has(b, key)) abort();
    graph_tensor *t = NULL;
    s = tf_bundle_read(b, key, &t);
    if (s && !strstr(kiln_status_message(s), key)) abort(); /* read errors name the key */
    kiln_status_free(s);
    tensor_free(t);
  }
  tf_bundle_free(b);
  return 0;
}
