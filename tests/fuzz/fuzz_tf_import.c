/* libFuzzer target for the binary GraphDef importer: any byte string must give either a
 * graph or an error naming the input -- never a crash, hang or leak. A graph that
 * imports must pass graph_validate, print, and survive a topological sort (which may
 * report a cycle, but not crash). The tensor size cap is lowered so that a TensorProto
 * whose shape asks for gigabytes (a splat makes that cheap to write) is refused before
 * anything large is allocated. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "import/tf/tf_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  graph *g = NULL;
  kiln_status s = tf_import_graphdef_buffer(data, size, "<fuzz input>", &g);
  if (s) {
    if (!strstr(kiln_status_message(s), "<fuzz input>")) abort(); /* every error names the input */
    kiln_status_free(s);
    return 0;
  }
  if (graph_validate(g)) abort();
  free(graph_to_string(g));
  graph_node **order = NULL;
  int n = 0;
  s = graph_topo_order(g, &order, &n);
  kiln_status_free(s);
  free(order);
  graph_free(g);
  return 0;
}
