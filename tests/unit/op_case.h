/* One framework node lowered and run on the reference evaluator, for the op-library unit
 * tests (test_ops_onnx.c and the per-family test_onnx_*_ops.c): a test builds the node
 * by hand, adds its inputs as literals (each a parameter of the module, or a
 * compile-time constant the lowering reads by value), runs it and compares t->out with
 * values it computes itself from the specification. */
#ifndef KILN_TESTS_OP_CASE_H
#define KILN_TESTS_OP_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"
#include "hlo/literal.h"
#include "kiln/kiln.h"

#define OP_CASE_MAX_IO 10

typedef struct tcase {
  graph *g;
  graph_node *node; /* named "n", on an "onnx" graph of the given opset */
  int n_in;
  hlo_literal *in[OP_CASE_MAX_IO]; /* owned */
  bool as_const[OP_CASE_MAX_IO];
  int n_out; /* 1 unless the test says more */
  hlo_literal *out[OP_CASE_MAX_IO];
  int64_t opset;
} tcase;

void tc_init(tcase *t, const char *op, int64_t opset);
void tc_free(tcase *t);
/* Appends input l (t takes it); as_const: a compile-time constant, else a parameter. */
void tc_input(tcase *t, hlo_literal *l, bool as_const);
/* Lowers the node, verifies and evaluates the module, fills t->out[0..n_out). */
kiln_status tc_run(tcase *t);
/* Checks l holds n values each within atol + rtol|want| of want[i]; a failure names
 * file:line and the first element off. */
void tc_check_close(const hlo_literal *l, const float *want, int64_t n, double atol, double rtol, const char *file,
                    int line);
/* An f32 literal of the given dims holding v. */
hlo_literal *lit_f32(int rank, const int64_t *dims, const float *v);

/* A node of op with n data inputs, graph inputs of float type and unknown shape, for
 * tests that lower or run a node their own way; node names are unique per process. */
graph_node *op_case_node(graph *g, const char *op, int n);

#define RUN(t) CHECK_OK(tc_run(t))

#endif
