/* Tests of src/ops/ops_onnx_attention.c without the importer or the executor: one hand-
 * built node lowered into a fresh module, verified and run on the reference evaluator.
 * Covers the refusals (bad ranks, head counts, shapes) and a few values computed here by
 * direct loops from the ONNX specification. ONNX's conformance cases (tests/onnx_suite)
 * cover the numerics at large. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "eval/eval.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

/* Appends an f32 parameter input of the given dims: v, or a fixed ramp when v is NULL. */
static void tc_input_f32(tcase *t, int rank, const int64_t *dims, const float *v) {
  hlo_shape s = shape_make(HLO_F32, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v ? v[i] : 0.01 * (double)(i % 17));
  tc_input(t, l, false);
}

static void check_close(const hlo_literal *l, const float *want, int64_t n, int line) {
  tc_check_close(l, want, n, 1e-5, 1e-4, __FILE__, line);
}

static void test_attention_refuses_bad_ranks_and_heads(void) {
  tcase t;
  tc_init(&t, "onnx.Attention", 23);
  tc_input_f32(&t, 2, (int64_t[]){2, 4}, NULL);
  tc_input_f32(&t, 2, (int64_t[]){2, 4}, NULL);
  tc_input_f32(&t, 2, (int64_t[]){2, 4}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.Attention): Q must be 3-D or 4-D, got rank 2");
  tc_free(&t);

  tc_init(&t, "onnx.Attention", 23);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  CHECK_ERR(tc_run(&t), "Q is 3-D, which needs a positive q_num_heads attribute");
  tc_free(&t);

  tc_init(&t, "onnx.Attention", 23);
  graph_node_set_attr_int(t.node, "q_num_heads", 3);
  graph_node_set_attr_int(t.node, "kv_num_heads", 2);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  CHECK_ERR(tc_run(&t), "Q hidden size 8 is not a multiple of q_num_heads=3");
  tc_free(&t);

  /* 3 query heads cannot share 2 KV heads. */
  tc_init(&t, "onnx.Attention", 23);
  tc_input_f32(&t, 4, (int64_t[]){1, 3, 2, 4}, NULL);
  tc_input_f32(&t, 4, (int64_t[]){1, 2, 2, 4}, NULL);
  tc_input_f32(&t, 4, (int64_t[]){1, 2, 2, 4}, NULL);
  CHECK_ERR(tc_run(&t), "q_num_heads 3 is not a multiple of kv_num_heads 2");
  tc_free(&t);

  tc_init(&t, "onnx.Attention", 23);
  tc_input_f32(&t, 4, (int64_t[]){1, 2, 2, 4}, NULL);
  tc_input_f32(&t, 4, (int64_t[]){1, 2, 2, 5}, NULL);
  tc_input_f32(&t, 4, (int64_t[]){1, 2, 2, 4}, NULL);
  CHECK_ERR(tc_run(&t), "K head size 5 differs from Q head size 4");
  tc_free(&t);
}

static void test_attention_refuses_past_key_without_past_value(void) {
  tcase t;
  tc_init(&t, "onnx.Attention", 23);
  for (int i = 0; i < 3; i++) tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 4}, NULL);
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 2}, NULL); /* attn_mask */
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 3, 4}, NULL); /* past_key only */
  CHECK_ERR(tc_run(&t), "past_key and past_value must be given together");
  tc_free(&t);
}

/* One query, two keys, causal with no past: only key 0 is visible, so Y = V[0]. */
static void test_attention_causal_single_head_values(void) {
  tcase t;
  tc_init(&t, "onnx.Attention", 23);
  graph_node_set_attr_int(t.node, "is_causal", 1);
  float q[4] = {1, 0, 0, 0}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 2}, q);
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 2}, k);
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 2}, v);
  CHECK_OK(tc_run(&t));
  /* Row 0 sees key 0 only; row 1 sees keys 0 and 1 with scores q1.k / sqrt(2) = 0. */
  float want[4] = {1, 2, 2, 3};
  check_close(t.out[0], want, 4, __LINE__);
  tc_free(&t);
}

static void test_rms_normalization_values(void) {
  tcase t;
  tc_init(&t, "onnx.RMSNormalization", 23);
  float x[4] = {3, 4, 1, -1}, s[2] = {1, 2};
  tc_input_f32(&t, 2, (int64_t[]){2, 2}, x);
  tc_input_f32(&t, 1, (int64_t[]){2}, s);
  graph_node_set_attr_float(t.node, "epsilon", 0.0f);
  CHECK_OK(tc_run(&t));
  double r0 = sqrt(12.5), r1 = 1.0;
  float want[4] = {(float)(3 / r0), (float)(8 / r0), (float)(1 / r1), (float)(-2 / r1)};
  check_close(t.out[0], want, 4, __LINE__);
  tc_free(&t);
}

static void test_rotary_embedding_refuses_odd_rotary_dim_and_3d_without_heads(void) {
  tcase t;
  tc_init(&t, "onnx.RotaryEmbedding", 23);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 8}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 4}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 4}, NULL);
  CHECK_ERR(tc_run(&t), "3-D X needs a num_heads attribute");
  tc_free(&t);

  tc_init(&t, "onnx.RotaryEmbedding", 23);
  graph_node_set_attr_int(t.node, "rotary_embedding_dim", 3);
  tc_input_f32(&t, 4, (int64_t[]){1, 1, 2, 4}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 2}, NULL);
  tc_input_f32(&t, 3, (int64_t[]){1, 2, 2}, NULL);
  CHECK_ERR(tc_run(&t), "rotary_embedding_dim 3 must be even");
  tc_free(&t);
}

static void test_swiglu_refuses_mismatched_shapes(void) {
  tcase t;
  tc_init(&t, "onnx.SwiGLU", 28);
  tc_input_f32(&t, 1, (int64_t[]){4}, NULL);
  tc_input_f32(&t, 1, (int64_t[]){1}, NULL);
  CHECK_ERR(tc_run(&t), "A and B must have identical shapes and types");
  tc_free(&t);
}

static void test_swish_values(void) {
  tcase t;
  tc_init(&t, "onnx.Swish", 24);
  graph_node_set_attr_float(t.node, "alpha", 2.0f);
  float x[3] = {-1, 0, 1.5f};
  tc_input_f32(&t, 1, (int64_t[]){3}, x);
  CHECK_OK(tc_run(&t));
  float want[3];
  for (int i = 0; i < 3; i++) want[i] = (float)(x[i] / (1 + exp(-2.0 * x[i])));
  check_close(t.out[0], want, 3, __LINE__);
  tc_free(&t);
}

TEST_MAIN(TEST(test_attention_refuses_bad_ranks_and_heads), TEST(test_attention_refuses_past_key_without_past_value),
          TEST(test_attention_causal_single_head_values), TEST(test_rms_normalization_values),
          TEST(test_rotary_embedding_refuses_odd_rotary_dim_and_3d_without_heads),
          TEST(test_swiglu_refuses_mismatched_shapes), TEST(test_swish_values))
