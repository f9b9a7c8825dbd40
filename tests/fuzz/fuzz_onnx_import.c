/* libFuzzer target for the ONNX importer: any byte string must give either a graph that
 * validates and prints, or an error naming the model ("<buffer>") -- never a crash,
 * hang or leak. The buffer is imported without a model path, so tensors with external
 * data are errors and no run touches the file system. The tensor size cap is lowered
 * so that a header promising a huge initializer cannot make a run slow: the importer
 * must compare the promised size with the bytes present before it allocates; the cap
 * on nodes made by inlining model-local functions is lowered for the same reason. Seeds:
 * tests/fuzz/seeds/fuzz_onnx_import (written by tests/import/make_onnx_models.py).
 * The lean wire copy of onnx_lean.c (what mapped model files are decoded from) is built
 * from every input too: it must stop at anything malformed, never read past the bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/onnx/onnx_import.h"
#include "import/onnx/onnx_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  onnx_import_max_inlined_nodes = 1 << 14;
  onnx_lean lean;
  if (onnx_lean_build(data, size, 1, &lean)) {
    for (size_t i = 0; i < lean.n; i++)
      if (lean.lifted[i].offset > size || lean.lifted[i].len > size - lean.lifted[i].offset) abort();
    if (lean.wire_len > size) abort(); /* only ever shorter */
    onnx_lean_free(&lean);
  }
  graph *g = NULL;
  kiln_status s = onnx_import_buffer(data, size, NULL, &g);
  if (s) {
    if (g || !strstr(kiln_status_message(s), "<buffer>")) abort(); /* errors name the model */
    kiln_status_free(s);
    return 0;
  }
  kiln_status v = graph_validate(g);
  if (v) {
    fprintf(stderr, "imported graph does not validate: %s\n", kiln_status_message(v));
    abort();
  }
  char *text = graph_to_string(g);
  free(text);
  graph_node **order = NULL;
  int n = 0;
  s = graph_topo_order(g, &order, &n); /* ONNX graphs are acyclic: the importer checked */
  if (s) {
    fprintf(stderr, "imported graph has a cycle: %s\n", kiln_status_message(s));
    abort();
  }
  free(order);
  graph_free(g);
  return 0;
}
