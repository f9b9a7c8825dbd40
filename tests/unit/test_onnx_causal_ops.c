/* Tests of src/ops/ops_onnx_causal.c (CausalConvWithState, LinearAttention) without the
 * importer or the executor: one hand-built node lowered into a fresh module, verified and
 * run on the reference evaluator. The expected values are worked out by hand from the
 * ONNX definitions (small integer-valued cases, so each line of arithmetic is in the
 * comments), and the refusals check that a bad shape, attribute or input combination is
 * an error naming the node. ONNX's conformance cases (tests/onnx_suite) cover the
 * numerics at large, float16 included. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "graph/graph.h"
#include "hlo/literal.h"

/* Appends an f32 parameter input: v, or zeros when v is NULL (refusal tests). */
static void input_f32(tcase *t, int rank, const int64_t *dims, const float *v) {
  hlo_shape s = shape_make(HLO_F32, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v ? v[i] : 0.0);
  tc_input(t, l, false);
}

static void set_str(tcase *t, const char *name, const char *v) {
  graph_node_set_attr_string(t->node, name, v, strlen(v));
}

static void check_dims(const hlo_literal *l, int rank, const int64_t *dims, int line) {
  bool ok = l && l->shape.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = l->shape.dims[i] == dims[i];
  if (!ok) check_fail(__FILE__, line, "result shape", NULL);
}

static void check_close(const hlo_literal *l, const float *want, int64_t n, int line) {
  tc_check_close(l, want, n, 1e-5, 1e-5, __FILE__, line);
}

/* ================================================== CausalConvWithState ====== */

/* x (1, 2, L) with channel 0 = 1 2 3 and channel 1 = 4 5 6; k = 3 taps per channel,
 * tap 0 applying to the oldest position: channel 0 (100, 10, 1), channel 1 (1, 0, -1);
 * bias (0.5, -1). */
static const float conv_w[6] = {100, 10, 1, 1, 0, -1};
static const float conv_bias[2] = {0.5f, -1};

static void test_causal_conv_zero_pads_the_first_call(void) {
  tcase t;
  tc_init(&t, "onnx.CausalConvWithState", 27);
  t.n_out = 2;
  input_f32(&t, 3, (int64_t[]){1, 2, 3}, (const float[]){1, 2, 3, 4, 5, 6});
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, conv_w);
  input_f32(&t, 1, (int64_t[]){2}, conv_bias);
  RUN(&t);
  /* channel 0 over (0 0 1 2 3): 1, 10+2 = 12, 100+20+3 = 123, each + 0.5;
   * channel 1 over (0 0 4 5 6): -4, -5, 4-6 = -2, each - 1. */
  check_dims(t.out[0], 3, (int64_t[]){1, 2, 3}, __LINE__);
  check_close(t.out[0], (const float[]){1.5f, 12.5f, 123.5f, -5, -6, -3}, 6, __LINE__);
  /* present_state: the last k-1 = 2 positions. */
  check_dims(t.out[1], 3, (int64_t[]){1, 2, 2}, __LINE__);
  check_close(t.out[1], (const float[]){2, 3, 5, 6}, 4, __LINE__);
  tc_free(&t);
}

static void test_causal_conv_carries_state_across_calls(void) {
  /* The same sequence in two calls (2 positions, then 1) gives the one-call result:
   * the second call is shorter than k-1, so its present_state reaches into past_state. */
  tcase t;
  tc_init(&t, "onnx.CausalConvWithState", 27);
  t.n_out = 2;
  input_f32(&t, 3, (int64_t[]){1, 2, 2}, (const float[]){1, 2, 4, 5});
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, conv_w);
  input_f32(&t, 1, (int64_t[]){2}, conv_bias);
  RUN(&t);
  check_close(t.out[0], (const float[]){1.5f, 12.5f, -5, -6}, 4, __LINE__);
  check_close(t.out[1], (const float[]){1, 2, 4, 5}, 4, __LINE__);
  hlo_literal *state = literal_clone(t.out[1]);
  tc_free(&t);

  tc_init(&t, "onnx.CausalConvWithState", 27);
  t.n_out = 2;
  input_f32(&t, 3, (int64_t[]){1, 2, 1}, (const float[]){3, 6});
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, conv_w);
  input_f32(&t, 1, (int64_t[]){2}, conv_bias);
  tc_input(&t, state, false);
  RUN(&t);
  /* channel 0 over (1 2 3): 100+20+3+0.5; channel 1 over (4 5 6): 4-6-1. */
  check_close(t.out[0], (const float[]){123.5f, -3}, 2, __LINE__);
  check_close(t.out[1], (const float[]){2, 3, 5, 6}, 4, __LINE__);
  tc_free(&t);
}

static void test_causal_conv_past_state_without_bias_and_silu(void) {
  /* CausalConvWithState(x, w, "", past): bias absent, past_state given; k = 2, one
   * channel, taps (1, 2), past (3): conv over (3 1 -2) = 3+2, 1-4 -> (5, -3), then
   * SiLU y * sigmoid(y). */
  tcase t;
  tc_init(&t, "onnx.CausalConvWithState", 27);
  t.n_out = 2;
  set_str(&t, "activation", "silu");
  graph_node_set_attr_ints(t.node, "_absent_inputs", 1, (int64_t[]){2});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){1, -2});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){1, 2});
  input_f32(&t, 3, (int64_t[]){1, 1, 1}, (const float[]){3});
  RUN(&t);
  float want[2] = {(float)(5 / (1 + exp(-5.0))), (float)(-3 / (1 + exp(3.0)))};
  check_close(t.out[0], want, 2, __LINE__);
  check_close(t.out[1], (const float[]){-2}, 1, __LINE__);
  tc_free(&t);
}

static void test_causal_conv_refuses_bad_shapes_and_activation(void) {
  tcase t;
  tc_init(&t, "onnx.CausalConvWithState", 27);
  set_str(&t, "activation", "relu");
  input_f32(&t, 3, (int64_t[]){1, 2, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.CausalConvWithState): activation 'relu' is not one of 'none', 'silu', 'swish'");
  tc_free(&t);

  /* A weight of 2 input channels per group is not depthwise. */
  tc_init(&t, "onnx.CausalConvWithState", 27);
  input_f32(&t, 3, (int64_t[]){1, 2, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){2, 2, 3}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.CausalConvWithState): weight must be (channels 2, 1, k >= 1)");
  tc_free(&t);

  tc_init(&t, "onnx.CausalConvWithState", 27);
  input_f32(&t, 2, (int64_t[]){2, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.CausalConvWithState): input must be rank 3");
  tc_free(&t);

  /* past_state must hold k-1 = 2 positions. */
  tc_init(&t, "onnx.CausalConvWithState", 27);
  graph_node_set_attr_ints(t.node, "_absent_inputs", 1, (int64_t[]){2});
  input_f32(&t, 3, (int64_t[]){1, 2, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){2, 1, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){1, 2, 3}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.CausalConvWithState): past_state must be (1, 2, k-1 = 2)");
  tc_free(&t);
}

/* ====================================================== LinearAttention ====== */

static void la_init(tcase *t, const char *rule, int64_t hq, int64_t hkv) {
  tc_init(t, "onnx.LinearAttention", 27);
  t->n_out = 2;
  set_str(t, "update_rule", rule);
  graph_node_set_attr_int(t->node, "q_num_heads", hq);
  graph_node_set_attr_int(t->node, "kv_num_heads", hkv);
}

static void test_linear_attention_linear_accumulates_outer_products(void) {
  /* One head, d_k 2, d_v 1, scale 1, two steps from a zero state:
   * S1 = k1 v1 = (1 2)^T 10 = (10 20); o1 = q1.S1 = (1 0).(10 20) = 10;
   * S2 = S1 + (3 4)^T 20 = (70 100);   o2 = (0 1).(70 100) = 100. */
  tcase t;
  la_init(&t, "linear", 1, 1);
  graph_node_set_attr_float(t.node, "scale", 1.0f);
  input_f32(&t, 3, (int64_t[]){1, 2, 2}, (const float[]){1, 0, 0, 1});
  input_f32(&t, 3, (int64_t[]){1, 2, 2}, (const float[]){1, 2, 3, 4});
  input_f32(&t, 3, (int64_t[]){1, 2, 1}, (const float[]){10, 20});
  RUN(&t);
  check_dims(t.out[0], 3, (int64_t[]){1, 2, 1}, __LINE__);
  check_close(t.out[0], (const float[]){10, 100}, 2, __LINE__);
  check_dims(t.out[1], 4, (int64_t[]){1, 1, 2, 1}, __LINE__);
  check_close(t.out[1], (const float[]){70, 100}, 2, __LINE__);
  tc_free(&t);
}

static void test_linear_attention_gated_delta_decays_then_corrects(void) {
  /* LinearAttention(q, k, v, past, decay, beta), one head, d_k 2, d_v 1, default scale
   * 1/sqrt(2). past S0 = (1 2); decay ln 0.5 -> S' = (0.5 1); k = (1 1): retrieved
   * S'^T k = 1.5; v' = beta (v - 1.5) = 0.5 (3 - 1.5) = 0.75; S = S' + k v' =
   * (1.25 1.75); o = (2 0).S / sqrt(2) = 2.5 / sqrt(2). */
  tcase t;
  la_init(&t, "gated_delta", 1, 1);
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){2, 0});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){1, 1});
  input_f32(&t, 3, (int64_t[]){1, 1, 1}, (const float[]){3});
  input_f32(&t, 4, (int64_t[]){1, 1, 2, 1}, (const float[]){1, 2});
  input_f32(&t, 3, (int64_t[]){1, 1, 1}, (const float[]){(float)log(0.5)});
  input_f32(&t, 3, (int64_t[]){1, 1, 1}, (const float[]){0.5f});
  RUN(&t);
  check_close(t.out[0], (const float[]){(float)(2.5 / sqrt(2.0))}, 1, __LINE__);
  check_close(t.out[1], (const float[]){1.25f, 1.75f}, 2, __LINE__);
  tc_free(&t);
}

static void test_linear_attention_per_key_decay_scales_state_rows(void) {
  /* gated, decay per key dim (ln 2, ln 0.5): S0 = (1 1) -> (2 0.5); k = (0 1), v = 4:
   * S = (2 4.5); o = (1 1).S = 6.5 with scale 1. */
  tcase t;
  la_init(&t, "gated", 1, 1);
  graph_node_set_attr_float(t.node, "scale", 1.0f);
  graph_node_set_attr_ints(t.node, "_absent_inputs", 1, (int64_t[]){5});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){1, 1});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){0, 1});
  input_f32(&t, 3, (int64_t[]){1, 1, 1}, (const float[]){4});
  input_f32(&t, 4, (int64_t[]){1, 1, 2, 1}, (const float[]){1, 1});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){(float)log(2.0), (float)log(0.5)});
  RUN(&t);
  check_close(t.out[0], (const float[]){6.5f}, 1, __LINE__);
  check_close(t.out[1], (const float[]){2, 4.5f}, 2, __LINE__);
  tc_free(&t);
}

static void test_linear_attention_gqa_query_head_reads_kv_head_h_over_group(void) {
  /* 4 query heads over 2 KV heads, d_k = d_v = 1, scale 1: k = (1 1), v = (10 20) give
   * states 10 and 20; query heads 0, 1 read KV head 0 and heads 2, 3 read KV head 1:
   * q (1 2 3 4) -> (10 20 60 80). */
  tcase t;
  la_init(&t, "linear", 4, 2);
  graph_node_set_attr_float(t.node, "scale", 1.0f);
  input_f32(&t, 3, (int64_t[]){1, 1, 4}, (const float[]){1, 2, 3, 4});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){1, 1});
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, (const float[]){10, 20});
  RUN(&t);
  check_close(t.out[0], (const float[]){10, 20, 60, 80}, 4, __LINE__);
  check_dims(t.out[1], 4, (int64_t[]){1, 2, 1, 1}, __LINE__);
  tc_free(&t);
}

static void test_linear_attention_refuses_bad_rules_heads_and_shapes(void) {
  tcase t;
  la_init(&t, "softmax", 1, 1);
  for (int i = 0; i < 3; i++) input_f32(&t, 3, (int64_t[]){1, 1, 2}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.LinearAttention): update_rule 'softmax' is not one of");
  tc_free(&t);

  la_init(&t, "gated", 1, 1);
  for (int i = 0; i < 3; i++) input_f32(&t, 3, (int64_t[]){1, 1, 2}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.LinearAttention): update_rule 'gated' requires the decay input");
  tc_free(&t);

  la_init(&t, "linear", 3, 2);
  for (int i = 0; i < 3; i++) input_f32(&t, 3, (int64_t[]){1, 1, 6}, NULL);
  CHECK_ERR(tc_run(&t), "q_num_heads (3) must be a positive multiple of kv_num_heads (2)");
  tc_free(&t);

  /* key's d_k (3) differs from query's (2). */
  la_init(&t, "linear", 1, 1);
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, NULL);
  input_f32(&t, 3, (int64_t[]){1, 1, 3}, NULL);
  input_f32(&t, 3, (int64_t[]){1, 1, 2}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.LinearAttention): key hidden size 3 is not kv_num_heads*d_k = 2");
  tc_free(&t);

  la_init(&t, "linear", 1, 1);
  for (int i = 0; i < 3; i++) input_f32(&t, 3, (int64_t[]){1, 1, 2}, NULL);
  input_f32(&t, 4, (int64_t[]){1, 1, 2, 1}, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.LinearAttention): past_state must be (1, 1, 2, 2)");
  tc_free(&t);
}

TEST_MAIN(TEST(test_causal_conv_zero_pads_the_first_call), TEST(test_causal_conv_carries_state_across_calls),
          TEST(test_causal_conv_past_state_without_bias_and_silu),
          TEST(test_causal_conv_refuses_bad_shapes_and_activation),
          TEST(test_linear_attention_linear_accumulates_outer_products),
          TEST(test_linear_attention_gated_delta_decays_then_corrects),
          TEST(test_linear_attention_per_key_decay_scales_state_rows),
          TEST(test_linear_attention_gqa_query_head_reads_kv_head_h_over_group),
          TEST(test_linear_attention_refuses_bad_rules_heads_and_shapes))
