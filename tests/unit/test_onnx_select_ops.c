/* Tests of src/ops/ops_onnx_select.c without the importer or the executor: the Unique
 * and Compress host kernels called directly on host tensors (exact int64 values, NaN,
 * first-occurrence order, strings), and the refusals of the HLO lowerings (BitCast,
 * ReverseSequence, TensorScatter) on a hand-built node. ONNX's conformance cases
 * (tests/onnx_suite) cover the common values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "hlo/builder.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

static graph_tensor *vec_s64(int64_t n, const int64_t *v) {
  graph_tensor *t;
  CHECK_OK(tensor_create(GRAPH_DT_INT64, 1, &n, &t));
  memcpy(t->data, v, sizeof(int64_t) * (size_t)n);
  return t;
}

static bool ints_are(const graph_tensor *t, int64_t n, const int64_t *v) {
  return t && t->dtype == GRAPH_DT_INT64 && t->n == n && memcmp(t->data, v, sizeof(int64_t) * (size_t)n) == 0;
}

static void test_unique_keeps_int64_values_beyond_double(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "Unique", 1);
  const int64_t big = INT64_MAX, big1 = INT64_MAX - 1;
  graph_tensor *x = vec_s64(4, (int64_t[]){big, big1, big, 3});
  graph_tensor *outs[4] = {0};
  op_host_ctx hc = {node, 11, 1, &x, 4, outs};
  CHECK_OK(op_find("onnx.Unique")->host(&hc));
  CHECK(ints_are(outs[0], 3, (int64_t[]){3, big1, big}));
  CHECK(ints_are(outs[1], 3, (int64_t[]){3, 1, 0}));
  CHECK(ints_are(outs[2], 4, (int64_t[]){2, 1, 2, 0}));
  CHECK(ints_are(outs[3], 3, (int64_t[]){1, 1, 2}));
  for (int i = 0; i < 4; i++) tensor_free(outs[i]);
  tensor_free(x);
  graph_free(g);
}

static void test_unique_unsorted_axis_keeps_first_occurrence_order_and_groups_nan(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "Unique", 1);
  graph_node_set_attr_int(node, "sorted", 0);
  graph_node_set_attr_int(node, "axis", 1);
  graph_tensor *x;
  CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 2, (int64_t[]){2, 4}, &x));
  /* columns (5, NaN) (1, 0) (5, NaN) (1, -0): NaN equals NaN and -0 equals 0 */
  float v[8] = {5, 1, 5, 1, NAN, 0, NAN, -0.0f};
  for (int i = 0; i < 8; i++) tensor_set_f64(x, i, v[i]);
  graph_tensor *outs[4] = {0};
  op_host_ctx hc = {node, 11, 1, &x, 4, outs};
  CHECK_OK(op_find("onnx.Unique")->host(&hc));
  CHECK(outs[0] && outs[0]->rank == 2 && outs[0]->dims[0] == 2 && outs[0]->dims[1] == 2);
  CHECK(ints_are(outs[1], 2, (int64_t[]){0, 1}));
  CHECK(ints_are(outs[2], 4, (int64_t[]){0, 1, 0, 1}));
  CHECK(ints_are(outs[3], 2, (int64_t[]){2, 2}));
  for (int i = 0; i < 4; i++) tensor_free(outs[i]);
  tensor_free(x);
  graph_free(g);
}

static void test_compress_copies_strings_and_refuses_condition_beyond_input(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "Compress", 2);
  graph_tensor *x, *cond, *outs[1] = {0};
  CHECK_OK(tensor_create(GRAPH_DT_STRING, 1, (int64_t[]){3}, &x));
  tensor_set_string(x, 0, "a", 1);
  tensor_set_string(x, 1, "bc", 2);
  tensor_set_string(x, 2, "d", 1);
  CHECK_OK(tensor_create(GRAPH_DT_BOOL, 1, (int64_t[]){2}, &cond));
  tensor_set_s64(cond, 1, 1);
  graph_tensor *ins[2] = {x, cond};
  op_host_ctx hc = {node, 11, 2, ins, 1, outs};
  CHECK_OK(op_find("onnx.Compress")->host(&hc));
  CHECK(outs[0] && outs[0]->n == 1 && tensor_string(outs[0], 0)->len == 2);
  tensor_free(outs[0]);
  outs[0] = NULL;
  tensor_free(cond);
  CHECK_OK(tensor_create(GRAPH_DT_BOOL, 1, (int64_t[]){5}, &cond));
  tensor_set_s64(cond, 4, 1);
  ins[1] = cond;
  CHECK_ERR(op_find("onnx.Compress")->host(&hc), "selects index 4 but the input has 3 elements");
  CHECK(outs[0] == NULL);
  tensor_free(cond);
  tensor_free(x);
  graph_free(g);
}

/* Lowers node over parameters of the given shapes; returns the lowering's status. */
static kiln_status lower_over(graph_node *node, int n, const hlo_shape *shapes) {
  const op_def *def = op_find(node->op);
  if (!def || !def->lower) return ERR_INVALID("no lowering for %s", node->op);
  hlo_module *m = hlo_module_new("test");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_instr *inputs[4] = {0}, *outputs[4] = {0};
  const graph_tensor *consts[4] = {0};
  graph_dtype dts[4];
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++) {
    dts[i] = graph_dtype_from_hlo(shapes[i].type);
    st = hlo_build_parameter(c, i, &shapes[i], NULL, &inputs[i]);
  }
  op_lower_ctx ctx = {node, 26, c, n, inputs, consts, dts, 1, outputs};
  if (!st) st = def->lower(&ctx);
  hlo_module_free(m);
  return st;
}

static void test_lowerings_refuse_bad_types_and_axes(void) {
  graph *g = graph_new("onnx");
  graph_node *bc = op_case_node(g, "BitCast", 1);
  graph_node_set_attr_int(bc, "to", 7); /* INT64 */
  hlo_shape f32 = shape_make(HLO_F32, 1, (int64_t[]){3});
  CHECK_ERR(lower_over(bc, 1, &f32), "differ in width");
  graph_free(g);

  g = graph_new("onnx");
  graph_node *rs = op_case_node(g, "ReverseSequence", 2);
  graph_node_set_attr_int(rs, "time_axis", 1);
  graph_node_set_attr_int(rs, "batch_axis", 1);
  hlo_shape rs_in[2] = {shape_make(HLO_F32, 2, (int64_t[]){2, 3}), shape_make(HLO_S64, 1, (int64_t[]){3})};
  CHECK_ERR(lower_over(rs, 2, rs_in), "time_axis and batch_axis must be 0 and 1");
  graph_free(g);

  g = graph_new("onnx");
  graph_node *ts = op_case_node(g, "TensorScatter", 2);
  graph_node_set_attr_int(ts, "axis", 0);
  hlo_shape ts_in[2] = {shape_make(HLO_F32, 3, (int64_t[]){2, 4, 5}), shape_make(HLO_F32, 3, (int64_t[]){2, 1, 5})};
  CHECK_ERR(lower_over(ts, 2, ts_in), "axis must not be the batch dimension");
  graph_node_set_attr_int(ts, "axis", 1);
  graph_node_set_attr_string(ts, "mode", "ring", 4);
  CHECK_ERR(lower_over(ts, 2, ts_in), "mode must be");
  graph_node_set_attr_string(ts, "mode", "circular", 8);
  CHECK_OK(lower_over(ts, 2, ts_in));
  ts_in[1] = shape_make(HLO_F32, 3, (int64_t[]){2, 1, 6});
  CHECK_ERR(lower_over(ts, 2, ts_in), "update dim 2 is 6");
  graph_free(g);
}

TEST_MAIN(TEST(test_unique_keeps_int64_values_beyond_double),
          TEST(test_unique_unsorted_axis_keeps_first_occurrence_order_and_groups_nan),
          TEST(test_compress_copies_strings_and_refuses_condition_beyond_input),
          TEST(test_lowerings_refuse_bad_types_and_axes))
