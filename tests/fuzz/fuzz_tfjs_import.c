/* libFuzzer target for the TF.js graph-model importer. The input is model.json, a NUL
 * byte, then the weight data (all shards concatenated): a NUL cannot occur in valid
 * JSON, so the split is unambiguous and mutations move freely between the two parts.
 * Any input must give either a graph or an error naming the document -- never a crash,
 * hang or leak; a graph that imports must pass graph_validate and print. The tensor
 * size cap is lowered so that a weight or inline tensor with a huge shape is refused
 * before anything large is allocated. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/tf/tf_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  const uint8_t *nul = memchr(data, 0, size);
  size_t json_len = nul ? (size_t)(nul - data) : size;
  const uint8_t *weights = nul ? nul + 1 : NULL;
  size_t weights_len = nul ? size - json_len - 1 : 0;
  graph *g = NULL;
  kiln_status s = tfjs_import_buffer((const char *)data, json_len, weights, weights_len, "<fuzz model.json>", &g);
  if (s) {
    if (!strstr(kiln_status_message(s), "<fuzz model.json>")) abort(); /* every error names the document */
    kiln_status_free(s);
    return 0;
  }
  if (graph_validate(g)) abort();
  free(graph_to_string(g));
  graph_free(g);
  return 0;
}
