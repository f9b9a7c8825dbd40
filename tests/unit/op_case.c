/* The op-library unit tests' harness (op_case.h): builds the module around one node,
 * with its non-constant inputs as parameters, and runs it on the evaluator. */
#include "op_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eval/eval.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"
#include "ops/ops.h"

void tc_init(tcase *t, const char *op, int64_t opset) {
  memset(t, 0, sizeof *t);
  t->g = graph_new("onnx");
  t->g->opset = opset;
  t->opset = opset;
  kiln_status s = graph_add_node(t->g, "n", op, &t->node);
  if (s) {
    check_fail(__FILE__, __LINE__, "graph_add_node", kiln_status_message(s));
    kiln_status_free(s);
  }
  t->n_out = 1;
}

void tc_free(tcase *t) {
  for (int i = 0; i < t->n_in; i++) literal_free(t->in[i]);
  for (int i = 0; i < t->n_out; i++) literal_free(t->out[i]);
  graph_free(t->g);
}

void tc_input(tcase *t, hlo_literal *l, bool as_const) {
  t->in[t->n_in] = l;
  t->as_const[t->n_in] = as_const;
  t->n_in++;
}

hlo_literal *lit_f32(int rank, const int64_t *dims, const float *v) {
  hlo_shape s = shape_make(HLO_F32, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v[i]);
  return l;
}

kiln_status tc_run(tcase *t) {
  graph_node *srcs[OP_CASE_MAX_IO];
  for (int i = 0; i < t->n_in; i++) {
    char name[24];
    snprintf(name, sizeof name, "in%d", i);
    graph_dtype dt = graph_dtype_from_hlo(t->in[i]->shape.type);
    graph_shape gs = graph_shape_make(t->in[i]->shape.rank, t->in[i]->shape.dims);
    TRY(graph_add_input(t->g, name, dt, &gs, &srcs[i]));
    TRY(graph_add_edge(srcs[i], 0, t->node));
  }
  const op_def *def = op_find(t->node->op);
  if (!def) return ERR_INVALID("no op %s", t->node->op);
  if (!def->lower) return ERR_INVALID("op %s has no lowering", t->node->op);
  hlo_module *m = hlo_module_new("test");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_instr *inputs[OP_CASE_MAX_IO] = {0}, *outputs[OP_CASE_MAX_IO] = {0};
  const graph_tensor *consts[OP_CASE_MAX_IO] = {0};
  graph_tensor *owned[OP_CASE_MAX_IO] = {0};
  graph_dtype dts[OP_CASE_MAX_IO];
  hlo_literal *args[OP_CASE_MAX_IO];
  int n_args = 0;
  kiln_status st = NULL;
  for (int i = 0; i < t->n_in && !st; i++) {
    dts[i] = graph_dtype_from_hlo(t->in[i]->shape.type);
    if (t->as_const[i]) {
      st = tensor_from_literal(t->in[i], &owned[i]);
      consts[i] = owned[i];
    } else {
      st = hlo_build_parameter(c, n_args, &t->in[i]->shape, NULL, &inputs[i]);
      args[n_args++] = t->in[i];
    }
  }
  op_lower_ctx ctx = {t->node, t->opset, c, t->n_in, inputs, consts, dts, t->n_out, outputs};
  if (!st) st = def->lower(&ctx);
  hlo_instr *root = NULL;
  for (int i = 0; i < t->n_out && !st; i++)
    if (!outputs[i]) st = ERR_INTERNAL("output %d was not set", i);
  if (!st) st = t->n_out == 1 ? NULL : hlo_build_tuple(c, t->n_out, outputs, &root);
  if (!st) {
    if (t->n_out == 1) root = outputs[0];
    st = hlo_build_set_root(c, root);
  }
  if (!st) {
    hlo_build_set_entry(m, c);
    st = hlo_build_order_computations(m);
  }
  if (!st) st = hlo_verify_module(m);
  hlo_literal *res = NULL;
  if (!st) st = eval_module(m, args, n_args, &res);
  if (!st) {
    if (t->n_out == 1) {
      t->out[0] = res;
    } else {
      for (int i = 0; i < t->n_out; i++) t->out[i] = literal_clone(res->tuple[i]);
      literal_free(res);
    }
  }
  for (int i = 0; i < t->n_in; i++) tensor_free(owned[i]);
  hlo_module_free(m);
  return st;
}

graph_node *op_case_node(graph *g, const char *op, int n) {
  static int serial; /* names stay unique when a graph holds several nodes */
  graph_node *node, *src;
  char nname[32];
  snprintf(nname, sizeof nname, "n%d", ++serial);
  CHECK_OK(graph_add_node(g, nname, op, &node));
  graph_shape s = graph_shape_unknown();
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s_in%d", nname, i);
    CHECK_OK(graph_add_input(g, name, GRAPH_DT_FLOAT, &s, &src));
    CHECK_OK(graph_add_edge(src, 0, node));
  }
  return node;
}

void tc_check_close(const hlo_literal *l, const float *want, int64_t n, double atol, double rtol, const char *file,
                    int line) {
  if (!l || l->n != n) {
    check_fail(file, line, "element count", NULL);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double a = literal_get_f64(l, i), b = want[i];
    if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
      char buf[128];
      snprintf(buf, sizeof buf, "element %lld: got %.7g, expected %.7g", (long long)i, a, b);
      check_fail(file, line, "values", buf);
      return;
    }
  }
}
