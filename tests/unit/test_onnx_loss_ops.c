/* Tests of the lowerings in src/ops/ops_onnx_loss.c (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss) and src/ops/ops_onnx_linalg.c (Det) on hand-built nodes,
 * without the importer or the executor: the result shapes of each reduction and of
 * log_prob, and the refusals (bad reduction, labels or weight of the wrong shape,
 * non-float inputs, non-square or oversized Det) with errors that say what is wrong.
 * ONNX's conformance cases (tests/onnx_suite) cover the values. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

/* Lowers node over parameters of the given shapes with n_out outputs; copies the
 * outputs' shapes to out_shapes (may be NULL) and returns the lowering's status. */
static kiln_status lower_over(graph_node *node, int n, const hlo_shape *shapes, int n_out, hlo_shape *out_shapes) {
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
  op_lower_ctx ctx = {node, 22, c, n, inputs, consts, dts, n_out, outputs};
  if (!st) st = def->lower(&ctx);
  for (int i = 0; i < n_out && !st && out_shapes; i++) {
    if (!outputs[i]) {
      st = ERR_INVALID("output %d not set", i);
      break;
    }
    out_shapes[i] = outputs[i]->shape;
  }
  hlo_module_free(m);
  return st;
}

static bool shape_is(const hlo_shape *s, hlo_type t, int rank, const int64_t *dims) {
  if (s->type != t || s->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (s->dims[i] != dims[i]) return false;
  return true;
}

static void test_nll_loss_shapes_follow_reduction(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "NegativeLogLikelihoodLoss", 3);
  hlo_shape in[3] = {shape_make(HLO_F32, 4, (int64_t[]){2, 5, 3, 4}), shape_make(HLO_S32, 3, (int64_t[]){2, 3, 4}),
                     shape_make(HLO_F32, 1, (int64_t[]){5})};
  hlo_shape out;
  graph_node_set_attr_string(node, "reduction", "none", 4);
  CHECK_OK(lower_over(node, 3, in, 1, &out));
  CHECK(shape_is(&out, HLO_F32, 3, (int64_t[]){2, 3, 4}));
  graph_node_set_attr_string(node, "reduction", "mean", 4);
  graph_node_set_attr_int(node, "ignore_index", -1);
  CHECK_OK(lower_over(node, 3, in, 1, &out));
  CHECK(shape_is(&out, HLO_F32, 0, NULL));
  graph_free(g);
}

static void test_nll_loss_refuses_bad_reduction_labels_and_weight(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "NegativeLogLikelihoodLoss", 3);
  hlo_shape in[3] = {shape_make(HLO_F32, 3, (int64_t[]){2, 5, 3}), shape_make(HLO_S64, 2, (int64_t[]){2, 3}),
                     shape_make(HLO_F32, 1, (int64_t[]){4})};
  CHECK_ERR(lower_over(node, 3, in, 1, NULL), "weight must be a 1-D tensor of C = 5 entries");
  in[2] = shape_make(HLO_F32, 1, (int64_t[]){5});
  graph_node_set_attr_string(node, "reduction", "avg", 3);
  CHECK_ERR(lower_over(node, 3, in, 1, NULL), "reduction must be");
  graph_node_set_attr_string(node, "reduction", "sum", 3);
  in[1] = shape_make(HLO_S64, 2, (int64_t[]){2, 5});
  CHECK_ERR(lower_over(node, 3, in, 1, NULL), "target/labels must have the input's shape without its class axis");
  in[1] = shape_make(HLO_F32, 2, (int64_t[]){2, 3});
  CHECK_ERR(lower_over(node, 3, in, 1, NULL), "must be an integer tensor");
  graph_free(g);
}

static void test_sce_loss_returns_log_prob_of_scores_shape(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "SoftmaxCrossEntropyLoss", 2);
  hlo_shape in[2] = {shape_make(HLO_F64, 2, (int64_t[]){3, 5}), shape_make(HLO_S64, 1, (int64_t[]){3})};
  hlo_shape out[2];
  CHECK_OK(lower_over(node, 2, in, 2, out));
  CHECK(shape_is(&out[0], HLO_F64, 0, NULL));
  CHECK(shape_is(&out[1], HLO_F64, 2, (int64_t[]){3, 5}));
  in[0] = shape_make(HLO_S32, 2, (int64_t[]){3, 5});
  CHECK_ERR(lower_over(node, 2, in, 1, NULL), "scores must be a floating-point tensor");
  in[0] = shape_make(HLO_F32, 1, (int64_t[]){3});
  CHECK_ERR(lower_over(node, 2, in, 1, NULL), "rank >= 2");
  graph_free(g);
}

static void test_det_gives_batch_shape_and_refuses_non_square_or_huge(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "Det", 1);
  hlo_shape in = shape_make(HLO_F16, 4, (int64_t[]){2, 3, 4, 4}), out;
  CHECK_OK(lower_over(node, 1, &in, 1, &out));
  CHECK(shape_is(&out, HLO_F16, 2, (int64_t[]){2, 3}));
  in = shape_make(HLO_F32, 2, (int64_t[]){3, 4});
  CHECK_ERR(lower_over(node, 1, &in, 1, NULL), "square matrices");
  in = shape_make(HLO_F32, 2, (int64_t[]){65, 65});
  CHECK_ERR(lower_over(node, 1, &in, 1, NULL), "M <= 64");
  in = shape_make(HLO_S32, 2, (int64_t[]){2, 2});
  CHECK_ERR(lower_over(node, 1, &in, 1, NULL), "floating-point");
  graph_free(g);
}

TEST_MAIN(TEST(test_nll_loss_shapes_follow_reduction), TEST(test_nll_loss_refuses_bad_reduction_labels_and_weight),
          TEST(test_sce_loss_returns_log_prob_of_scores_shape),
          TEST(test_det_gives_batch_shape_and_refuses_non_square_or_huge))
