/* Tests of src/ops/ops_onnx_image.c without the importer or the executor: the host
 * kernels of GridSample, AffineGrid, Col2Im, MaxUnpool, RoiAlign and DeformConv called
 * directly on host tensors, for their refusals of bad shapes, dtypes and indices (each
 * a clear error, never a crash) and for the version-dependent defaults (GridSample-16
 * is 4-D only, RoiAlign-10 behaves as output_half_pixel). ONNX's conformance cases
 * (tests/onnx_suite) cover the sampled values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

/* A tensor of dtype and dims, element i = v[i] (or i / 10 when v is NULL). */
static graph_tensor *tensor_of(graph_dtype dt, int rank, const int64_t *dims, const double *v) {
  graph_tensor *t;
  CHECK_OK(tensor_create(dt, rank, dims, &t));
  for (int64_t i = 0; i < t->n; i++) tensor_set_f64(t, i, v ? v[i] : (double)i / 10);
  return t;
}

/* Runs onnx.<op>'s host kernel over n inputs at opset; *out gets output 0 (or NULL). */
static kiln_status run_op(graph_node *node, int64_t opset, int n, graph_tensor **in, graph_tensor **out) {
  const op_def *def = op_find(node->op); /* node->op is namespaced: "onnx.GridSample" */
  CHECK(def && def->host);
  if (!def || !def->host) return ERR_INTERNAL("no host kernel for %s", node->op);
  graph_tensor *outs[1] = {0};
  op_host_ctx hc = {node, opset, n, in, 1, outs};
  kiln_status st = def->host(&hc);
  if (out)
    *out = outs[0];
  else
    tensor_free(outs[0]);
  return st;
}

static void free_all(graph_tensor **t, int n) {
  for (int i = 0; i < n; i++) tensor_free(t[i]);
}

static void test_grid_sample_refuses_bad_dtype_shape_mode_and_5d_before_opset_20(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "onnx.GridSample", 2);
  graph_tensor *in[2] = {tensor_of(GRAPH_DT_INT32, 4, (int64_t[]){1, 1, 2, 2}, NULL),
                         tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 3, 3, 2}, NULL)};
  CHECK_ERR(run_op(node, 20, 2, in, NULL), "input X has dtype int32");
  tensor_free(in[0]);
  in[0] = tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, NULL);
  graph_tensor *y = NULL;
  CHECK_OK(run_op(node, 20, 2, in, &y));
  CHECK(y && y->rank == 4 && y->dims[2] == 3 && y->dims[3] == 3);
  tensor_free(y);
  tensor_free(in[1]);
  in[1] = tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 3, 3, 3}, NULL);
  CHECK_ERR(run_op(node, 20, 2, in, NULL), "grid [1, 3, 3, 3]");
  tensor_free(in[1]);
  in[1] = tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 3, 3, 2}, NULL);
  graph_node_set_attr_string(node, "mode", "area", 4);
  CHECK_ERR(run_op(node, 20, 2, in, NULL), "unknown mode \"area\"");
  free_all(in, 2);

  graph_node *v = op_case_node(g, "onnx.GridSample", 2);
  graph_tensor *in5[2] = {tensor_of(GRAPH_DT_FLOAT, 5, (int64_t[]){1, 1, 2, 2, 2}, NULL),
                          tensor_of(GRAPH_DT_FLOAT, 5, (int64_t[]){1, 2, 2, 2, 3}, NULL)};
  CHECK_ERR(run_op(v, 16, 2, in5, NULL), "takes 4-D X only");
  CHECK_OK(run_op(v, 20, 2, in5, NULL));
  free_all(in5, 2);
  graph_free(g);
}

static void test_grid_sample_border_padding_clamps_outside_points_to_the_edge(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "onnx.GridSample", 2);
  graph_node_set_attr_string(node, "padding_mode", "border", 6);
  graph_node_set_attr_int(node, "align_corners", 1);
  /* X = [[1, 2], [3, 4]]; points (x, y): (-5, -5) top-left, (5, 5) bottom-right, (0, 0) centre. */
  graph_tensor *in[2] = {tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 2, 3, 4}),
                         tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 3, 2}, (double[]){-5, -5, 5, 5, 0, 0})};
  graph_tensor *y = NULL;
  CHECK_OK(run_op(node, 22, 2, in, &y));
  CHECK(y && y->n == 3);
  CHECK(tensor_get_f64(y, 0) == 1 && tensor_get_f64(y, 1) == 4 && tensor_get_f64(y, 2) == 2.5);
  tensor_free(y);
  free_all(in, 2);
  graph_free(g);
}

static void test_affine_grid_and_col2im_refuse_inconsistent_shapes(void) {
  graph *g = graph_new("onnx");
  graph_node *ag = op_case_node(g, "onnx.AffineGrid", 2);
  graph_tensor *in[2] = {tensor_of(GRAPH_DT_FLOAT, 3, (int64_t[]){2, 2, 3}, NULL),
                         tensor_of(GRAPH_DT_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 3, 3})};
  CHECK_ERR(run_op(ag, 20, 2, in, NULL), "N = size[0] = 1");
  free_all(in, 2);

  graph_node *ci = op_case_node(g, "onnx.Col2Im", 3);
  /* 2x2 blocks over a 3x3 image give 4 blocks; the input claims 5. */
  graph_tensor *cin[3] = {tensor_of(GRAPH_DT_FLOAT, 3, (int64_t[]){1, 4, 5}, NULL),
                          tensor_of(GRAPH_DT_INT64, 1, (int64_t[]){2}, (double[]){3, 3}),
                          tensor_of(GRAPH_DT_INT64, 1, (int64_t[]){2}, (double[]){2, 2})};
  CHECK_ERR(run_op(ci, 18, 3, cin, NULL), "must be (N, C * 4, 4)");
  free_all(cin, 3);
  graph_free(g);
}

static void test_max_unpool_refuses_index_outside_unpooled_shape_and_small_output_shape(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "onnx.MaxUnpool", 3);
  graph_node_set_attr_ints(node, "kernel_shape", 2, (int64_t[]){2, 2});
  graph_node_set_attr_ints(node, "strides", 2, (int64_t[]){2, 2});
  graph_tensor *in[3] = {tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 1, 1}, (double[]){7}),
                         tensor_of(GRAPH_DT_INT64, 4, (int64_t[]){1, 1, 1, 1}, (double[]){4}),
                         tensor_of(GRAPH_DT_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 1, 2})};
  CHECK_ERR(run_op(node, 22, 2, in, NULL), "I[0] = 4 is outside the unpooled tensor of 4 elements");
  CHECK_ERR(run_op(node, 22, 3, in, NULL), "output_shape[2] = 1 is smaller");
  tensor_set_s64(in[1], 0, 3);
  graph_tensor *y = NULL;
  CHECK_OK(run_op(node, 22, 2, in, &y));
  CHECK(y && y->n == 4 && tensor_get_f64(y, 3) == 7 && tensor_get_f64(y, 0) == 0);
  tensor_free(y);
  free_all(in, 3);
  graph_free(g);
}

static void test_roi_align_10_defaults_to_output_half_pixel_and_refuses_bad_batch_index(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "onnx.RoiAlign", 3);
  /* X[0, 0] = x coordinate: a linear ramp, so a sample reads its own x position. */
  double xv[16];
  for (int i = 0; i < 16; i++) xv[i] = i % 4;
  graph_tensor *in[3] = {tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 4, 4}, xv),
                         tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){1, 4}, (double[]){1, 1, 3, 3}),
                         tensor_of(GRAPH_DT_INT64, 1, (int64_t[]){1}, (double[]){0})};
  graph_tensor *y10 = NULL, *y16 = NULL;
  CHECK_OK(run_op(node, 10, 3, in, &y10));
  CHECK_OK(run_op(node, 16, 3, in, &y16));
  /* One bin over [1, 3] (output_half_pixel) has its mean at 2; half_pixel shifts it to 1.5. */
  CHECK(y10 && fabs(tensor_get_f64(y10, 0) - 2.0) < 1e-6);
  CHECK(y16 && fabs(tensor_get_f64(y16, 0) - 1.5) < 1e-6);
  tensor_free(y10);
  tensor_free(y16);
  tensor_set_s64(in[2], 0, 1);
  CHECK_ERR(run_op(node, 16, 3, in, NULL), "batch_indices[0] = 1 is outside [0, 1)");
  free_all(in, 3);
  graph_free(g);
}

static void test_deform_conv_refuses_offset_that_does_not_match_the_output(void) {
  graph *g = graph_new("onnx");
  graph_node *node = op_case_node(g, "onnx.DeformConv", 3);
  /* 3x3 input, 2x2 kernel: a 2x2 output needs offset (1, 8, 2, 2). */
  graph_tensor *in[3] = {tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 3, 3}, NULL),
                         tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 1, 2, 2}, NULL),
                         tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 8, 3, 3}, NULL)};
  CHECK_ERR(run_op(node, 19, 3, in, NULL), "spatial dim 0 is 3");
  tensor_free(in[2]);
  in[2] = tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 6, 2, 2}, NULL);
  CHECK_ERR(run_op(node, 19, 3, in, NULL), "= 8 channels");
  tensor_free(in[2]);
  in[2] = tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 8, 2, 2}, (double[32]){0});
  graph_tensor *y = NULL;
  CHECK_OK(run_op(node, 19, 3, in, &y));
  /* Zero offsets: a plain convolution. Top-left: 0*0 + .1*.1 + .3*.2 + .4*.3 = .19 */
  CHECK(y && y->n == 4 && fabs(tensor_get_f64(y, 0) - 0.19) < 1e-6);
  tensor_free(y);
  free_all(in, 3);
  graph_free(g);
}

TEST_MAIN(TEST(test_grid_sample_refuses_bad_dtype_shape_mode_and_5d_before_opset_20),
          TEST(test_grid_sample_border_padding_clamps_outside_points_to_the_edge),
          TEST(test_affine_grid_and_col2im_refuse_inconsistent_shapes),
          TEST(test_max_unpool_refuses_index_outside_unpooled_shape_and_small_output_shape),
          TEST(test_roi_align_10_defaults_to_output_half_pixel_and_refuses_bad_batch_index),
          TEST(test_deform_conv_refuses_offset_that_does_not_match_the_output))
