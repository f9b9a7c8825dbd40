/* libFuzzer target for the SavedModel reader (saved_model.pb: MetaGraphDef tags,
 * SignatureDefs, the GraphDef cut to a signature, the SavedObjectGraph, freezing and
 * call inlining): any byte string must give either a graph or an error naming the
 * input -- never a crash, hang or leak. There is no variables directory, so a signature
 * that reads variables ends in a clean NOT_FOUND after the object graph is parsed. A
 * graph that imports must pass graph_validate and print. Seeds in
 * tests/fuzz/seeds/fuzz_tf_savedmodel are saved_model.pb files TensorFlow 2.21 wrote
 * for tests/models/test_tf_savedmodels.py (a tf.Module with two signatures, and one
 * that writes a variable). The tensor size cap is lowered as in fuzz_tf_import. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/tf/tf_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  /* The first byte picks the signature asked for, so unknown names are covered too. */
  static const char *const sigs[] = {NULL, "other", "serve", "nope"};
  const char *sig = size ? sigs[data[0] & 3] : NULL;
  graph *g = NULL;
  kiln_status s = tf_import_savedmodel_buffer(data, size, NULL, sig, "<fuzz input>", &g, NULL);
  if (s) {
    if (!strstr(kiln_status_message(s), "<fuzz input>")) abort(); /* every error names the input */
    kiln_status_free(s);
    return 0;
  }
  if (graph_validate(g)) abort();
  free(graph_to_string(g));
  graph_free(g);
  return 0;
}
