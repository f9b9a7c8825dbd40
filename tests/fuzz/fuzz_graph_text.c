/* libFuzzer target for the graph text parser: any byte string must give either a graph
 * or an error naming line:col -- never a crash, hang or leak. A graph that parses must
 * print, and its print must parse back to a graph that prints identically
 * (print(parse(print(g))) == print(g)); anything else aborts so libFuzzer keeps the
 * input. The tensor size cap is lowered so a header such as tensor<float[1000000000]>
 * cannot make a run slow: the parser must refuse it before allocating. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  literal_max_bytes = (int64_t)16 << 20;
  graph *g = NULL;
  kiln_status s = graph_parse((const char *)data, size, "<fuzz input>", &g);
  if (s) {
    if (!strstr(kiln_status_message(s), "<fuzz input>:")) abort(); /* every error has a location */
    kiln_status_free(s);
    return 0;
  }
  if (graph_validate(g)) abort();
  char *first = graph_to_string(g);
  graph *again = NULL;
  s = graph_parse(first, strlen(first), "<fuzz round trip>", &again);
  if (s) {
    fprintf(stderr, "printed graph does not parse: %s\n%s\n", kiln_status_message(s), first);
    abort();
  }
  char *second = graph_to_string(again);
  if (strcmp(first, second) != 0) {
    fprintf(stderr, "round trip differs:\n%s\n---\n%s\n", first, second);
    abort();
  }
  /* Exercise the graph algorithms on whatever parsed; they must not crash either. */
  graph_node **order = NULL;
  int n = 0;
  s = graph_topo_order(g, &order, &n);
  kiln_status_free(s);
  free(order);
  graph *copy = graph_clone(g);
  graph_prune(copy, NULL, 0);
  if (graph_validate(copy)) abort();
  graph_free(copy);
  free(first);
  free(second);
  graph_free(again);
  graph_free(g);
  return 0;
}
