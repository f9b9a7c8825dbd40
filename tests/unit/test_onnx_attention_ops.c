/* Tests of src/ops/ops_onnx_attention.c without the importer or the executor: one hand-
 * built node lowered into a fresh module, verified and run on the reference evaluator.
 * Covers the refusals (bad ranks, head counts, shapes) and a few values computed here by
 * direct loops from the ONNX specification. ONNX's conformance cases (tests/onnx_suite)
 * cover the numerics at large. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eval/eval.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define MAX_IO 8

typedef struct tcase {
  graph *g;
  graph_node *node;
  int n_in;
  hlo_literal *in[MAX_IO];
  hlo_literal *out;
  int64_t opset;
} tcase;

static void tc_init(tcase *t, const char *op, int64_t opset) {
  memset(t, 0, sizeof *t);
  t->g = graph_new("onnx");
  t->g->opset = opset;
  t->opset = opset;
  kiln_status s = graph_add_node(t->g, "n", op, &t->node);
  if (s) {
    check_fail(__FILE__, __LINE__, "graph_add_node", kiln_status_message(s));
    kiln_status_free(s);
  }
}

static void tc_free(tcase *t) {
  for (int i = 0; i < t->n_in; i++) literal_free(t->in[i]);
  literal_free(t->out);
  graph_free(t->g);
}

static void tc_input_f32(tcase *t, int rank, const int64_t *dims, const float *v) {
  hlo_shape s = shape_make(HLO_F32, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v ? v[i] : 0.01 * (double)(i % 17));
  t->in[t->n_in++] = l;
}

/* Lowers the node with every input a parameter and runs it; output 0 goes to t->out. */
static kiln_status tc_run(tcase *t) {
  graph_node *srcs[MAX_IO];
  for (int i = 0; i < t->n_in; i++) {
    char name[24];
    snprintf(name, sizeof name, "in%d", i);
    graph_shape gs = graph_shape_make(t->in[i]->shape.rank, t->in[i]->shape.dims);
    TRY(graph_add_input(t->g, name, graph_dtype_from_hlo(t->in[i]->shape.type), &gs, &srcs[i]));
    TRY(graph_add_edge(srcs[i], 0, t->node));
  }
  const op_def *def = op_find(t->node->op);
  if (!def || !def->lower) return ERR_INVALID("no lowering for %s", t->node->op);
  hlo_module *m = hlo_module_new("test");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_instr *inputs[MAX_IO] = {0}, *outputs[MAX_IO] = {0};
  const graph_tensor *consts[MAX_IO] = {0};
  graph_dtype dts[MAX_IO];
  kiln_status st = NULL;
  for (int i = 0; i < t->n_in && !st; i++) {
    dts[i] = graph_dtype_from_hlo(t->in[i]->shape.type);
    st = hlo_build_parameter(c, i, &t->in[i]->shape, NULL, &inputs[i]);
  }
  op_lower_ctx ctx = {t->node, t->opset, c, t->n_in, inputs, consts, dts, 1, outputs};
  if (!st) st = def->lower(&ctx);
  if (!st && !outputs[0]) st = ERR_INTERNAL("output 0 was not set");
  if (!st) st = hlo_build_set_root(c, outputs[0]);
  if (!st) {
    hlo_build_set_entry(m, c);
    st = hlo_build_order_computations(m);
  }
  if (!st) st = hlo_verify_module(m);
  if (!st) st = eval_module(m, t->in, t->n_in, &t->out);
  hlo_module_free(m);
  return st;
}

static void check_close(const hlo_literal *l, const float *want, int64_t n, int line) {
  if (!l || l->n != n) {
    check_fail(__FILE__, line, "element count", NULL);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double a = literal_get_f64(l, i), b = want[i];
    if (!(fabs(a - b) <= 1e-5 + 1e-4 * fabs(b))) {
      char buf[128];
      snprintf(buf, sizeof buf, "element %lld: got %.7g, expected %.7g", (long long)i, a, b);
      check_fail(__FILE__, line, "values", buf);
      return;
    }
  }
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
  check_close(t.out, want, 4, __LINE__);
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
  check_close(t.out, want, 4, __LINE__);
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
  check_close(t.out, want, 3, __LINE__);
  tc_free(&t);
}

TEST_MAIN(TEST(test_attention_refuses_bad_ranks_and_heads), TEST(test_attention_refuses_past_key_without_past_value),
          TEST(test_attention_causal_single_head_values), TEST(test_rms_normalization_values),
          TEST(test_rotary_embedding_refuses_odd_rotary_dim_and_3d_without_heads),
          TEST(test_swiglu_refuses_mismatched_shapes), TEST(test_swish_values))
