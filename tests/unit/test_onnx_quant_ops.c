/* Tests of the quantized integer ops (src/ops/ops_onnx_quant.c): QLinearMatMul,
 * QLinearConv, MatMulInteger, ConvInteger, DynamicQuantizeLinear and the com.microsoft
 * QLinearAdd / QLinearMul. Each test builds one node by hand, lowers it into a fresh HLO
 * module (its non-constant inputs become parameters), verifies the module, runs it on
 * the reference evaluator and compares with values computed here by direct loops from
 * the ONNX formulas (not from the lowering). The refusal tests check that mismatched
 * zero-point types and disallowed scale shapes give an error naming the node. */
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

/* ------------------------------------------- literals and checks (harness: op_case.h) ---- */

static hlo_literal *lit_int(hlo_type t, int rank, const int64_t *dims, const int64_t *v) {
  hlo_shape s = shape_make(t, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_s64(l, i, v[i]);
  return l;
}

static void check_ints(const hlo_literal *l, hlo_type type, const int64_t *want, int64_t n, int line) {
  if (!l || l->n != n || l->shape.type != type) {
    check_fail(__FILE__, line, "element count / type", NULL);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    if (literal_get_s64(l, i) != want[i]) {
      char buf[128];
      snprintf(buf, sizeof buf, "element %lld: got %lld, expected %lld", (long long)i,
               (long long)literal_get_s64(l, i), (long long)want[i]);
      check_fail(__FILE__, line, "values", buf);
      return;
    }
}

/* Deterministic integers in [lo, hi]. */
static void fill_ints(int64_t *v, int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = lo + (int64_t)(x % (uint32_t)(hi - lo + 1));
  }
}

static int64_t sat(double v, double lo, double hi) { return (int64_t)fmin(hi, fmax(lo, v)); }

/* ------------------------------------------------------------ refusals ---- */

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) with the given a_zp
 * type and a_scale shape. */
static void qmm_inputs(tcase *t, hlo_type azp_type, int as_rank, const int64_t *as_dims) {
  int64_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 6};
  float s[3] = {0.5f, 0.5f, 0.5f};
  tc_input(t, lit_int(HLO_U8, 2, (int64_t[]){2, 3}, a), false);
  tc_input(t, lit_f32(as_rank, as_dims, s), true);
  tc_input(t, lit_int(azp_type, 0, NULL, (int64_t[]){1}), true);
  tc_input(t, lit_int(HLO_U8, 2, (int64_t[]){3, 2}, b), false);
  tc_input(t, lit_f32(0, NULL, s), true);
  tc_input(t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
  tc_input(t, lit_f32(0, NULL, s), true);
  tc_input(t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
}

static void test_qlinearmatmul_refuses_mismatched_zero_point_type(void) {
  tcase t;
  tc_init(&t, "QLinearMatMul", 13);
  qmm_inputs(&t, HLO_S8, 0, NULL);
  CHECK_ERR(tc_run(&t), "node n (onnx.QLinearMatMul): zero point a_zero_point has type int8 but a has type uint8");
  tc_free(&t);
}

static void test_qlinearmatmul_refuses_scale_not_per_row(void) {
  tcase t;
  tc_init(&t, "QLinearMatMul", 13);
  qmm_inputs(&t, HLO_U8, 1, (int64_t[]){3}); /* a is [2, 3]: per-row would be [2] */
  CHECK_ERR(tc_run(&t), "node n (onnx.QLinearMatMul): a_scale has shape [3]; for a of shape [2,3]");
  tc_free(&t);
}

static void test_matmulinteger_refuses_mismatched_zero_point_type(void) {
  tcase t;
  tc_init(&t, "MatMulInteger", 13);
  tc_input(&t, lit_int(HLO_S8, 2, (int64_t[]){1, 2}, (int64_t[]){1, 2}), false);
  tc_input(&t, lit_int(HLO_U8, 2, (int64_t[]){2, 1}, (int64_t[]){1, 2}), false);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, (int64_t[]){1}), true);
  CHECK_ERR(tc_run(&t), "node n (onnx.MatMulInteger): zero point a_zero_point has type uint8 but A has type int8");
  tc_free(&t);
}

static void test_qlinearconv_refuses_w_scale_not_per_channel(void) {
  int64_t x[8] = {0}, w[4] = {0};
  float s[3] = {1, 1, 1};
  tcase t;
  tc_init(&t, "QLinearConv", 13);
  tc_input(&t, lit_int(HLO_U8, 4, (int64_t[]){1, 1, 2, 4}, x), false);
  tc_input(&t, lit_f32(0, NULL, s), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
  tc_input(&t, lit_int(HLO_S8, 4, (int64_t[]){2, 1, 1, 2}, w), false);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, s), true); /* M = 2 */
  tc_input(&t, lit_int(HLO_S8, 0, NULL, (int64_t[]){0}), true);
  tc_input(&t, lit_f32(0, NULL, s), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
  CHECK_ERR(tc_run(&t), "node n (onnx.QLinearConv): w_scale has shape [3]; it must be a scalar (per-tensor) or a [2]");
  tc_free(&t);
}

static void test_qlinearadd_refuses_mismatched_zero_point_type(void) {
  int64_t a[4] = {1, 2, 3, 4};
  float s = 0.5f;
  tcase t;
  tc_init(&t, "com.microsoft.QLinearAdd", 13);
  tc_input(&t, lit_int(HLO_U8, 1, (int64_t[]){4}, a), false);
  tc_input(&t, lit_f32(0, NULL, &s), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
  tc_input(&t, lit_int(HLO_U8, 1, (int64_t[]){4}, a), false);
  tc_input(&t, lit_f32(0, NULL, &s), true);
  tc_input(&t, lit_int(HLO_S8, 0, NULL, (int64_t[]){0}), true);
  tc_input(&t, lit_f32(0, NULL, &s), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, (int64_t[]){0}), true);
  CHECK_ERR(tc_run(&t),
            "node n (com.microsoft.QLinearAdd): zero point B_zero_point has type int8 but B has type uint8");
  tc_free(&t);
}

/* ------------------------------------------------------------ values ---- */

/* Per-row a and per-column b zero points: (A - za[m]) @ (B - zb[n]), exact int32. */
static void test_matmulinteger_per_row_and_column_zero_points(void) {
  enum { M = 3, K = 5, N = 4 };
  int64_t a[M * K], b[K * N], za[M] = {3, -7, 0}, zb[N] = {10, 200, 0, 255}, want[M * N];
  fill_ints(a, M * K, -128, 127, 1);
  fill_ints(b, K * N, 0, 255, 2);
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int64_t acc = 0;
      for (int k = 0; k < K; k++) acc += (a[m * K + k] - za[m]) * (b[k * N + n] - zb[n]);
      want[m * N + n] = acc;
    }
  tcase t;
  tc_init(&t, "MatMulInteger", 13);
  tc_input(&t, lit_int(HLO_S8, 2, (int64_t[]){M, K}, a), false);
  tc_input(&t, lit_int(HLO_U8, 2, (int64_t[]){K, N}, b), false);
  tc_input(&t, lit_int(HLO_S8, 1, (int64_t[]){M}, za), false);
  tc_input(&t, lit_int(HLO_U8, 1, (int64_t[]){N}, zb), false);
  RUN(&t);
  check_ints(t.out[0], HLO_S32, want, M * N, __LINE__);
  tc_free(&t);
}

/* y = saturate(round_half_even(acc * f32(a_scale * b_scale / y_scale)) + y_zp). */
static void test_qlinearmatmul_matches_spec_formula(void) {
  enum { M = 2, K = 6, N = 3 };
  int64_t a[M * K], b[K * N], want[M * N];
  fill_ints(a, M * K, 0, 255, 3);
  fill_ints(b, K * N, -128, 127, 4);
  const float as = 0.02f, bs = 0.05f, ys = 0.3f;
  const int64_t za = 113, zb = -2, zy = -9;
  float mult = as * bs / ys;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int32_t acc = 0;
      for (int k = 0; k < K; k++) acc += (int32_t)((a[m * K + k] - za) * (b[k * N + n] - zb));
      want[m * N + n] = sat(nearbyintf((float)acc * mult) + (double)zy, -128, 127);
    }
  tcase t;
  tc_init(&t, "QLinearMatMul", 13);
  tc_input(&t, lit_int(HLO_U8, 2, (int64_t[]){M, K}, a), false);
  tc_input(&t, lit_f32(0, NULL, &as), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, &za), true);
  tc_input(&t, lit_int(HLO_S8, 2, (int64_t[]){K, N}, b), false);
  tc_input(&t, lit_f32(0, NULL, &bs), true);
  tc_input(&t, lit_int(HLO_S8, 0, NULL, &zb), true);
  tc_input(&t, lit_f32(0, NULL, &ys), true);
  tc_input(&t, lit_int(HLO_S8, 0, NULL, &zy), true);
  RUN(&t);
  check_ints(t.out[0], HLO_S8, want, M * N, __LINE__);
  tc_free(&t);
}

/* QLinearConv, 2-D, pads 1, stride 2, per-output-channel w scales and zero points, a
 * bias: direct loops over the spec's formula. */
static void test_qlinearconv_matches_spec_formula(void) {
  enum { C = 2, H = 5, W = 5, M = 3, KH = 3, KW = 3, S = 2, P = 1 };
  enum { OH = (H + 2 * P - KH) / S + 1, OW = (W + 2 * P - KW) / S + 1 };
  int64_t x[C * H * W], w[M * C * KH * KW], bias[M] = {100, -250, 7}, wzp[M] = {0, 3, -4}, want[M * OH * OW];
  fill_ints(x, C * H * W, 0, 255, 5);
  fill_ints(w, M * C * KH * KW, -128, 127, 6);
  const float xs = 0.015f, ws[M] = {0.004f, 0.01f, 0.002f}, ys = 0.07f;
  const int64_t zx = 128, zy = 20;
  for (int m = 0; m < M; m++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int32_t acc = (int32_t)bias[m];
        for (int c = 0; c < C; c++)
          for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
              int ih = oh * S - P + kh, iw = ow * S - P + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; /* padding is a zero of x - zx */
              acc += (int32_t)((x[(c * H + ih) * W + iw] - zx) * (w[((m * C + c) * KH + kh) * KW + kw] - wzp[m]));
            }
        float mult = xs * ws[m] / ys;
        want[(m * OH + oh) * OW + ow] = sat(nearbyintf((float)acc * mult) + (double)zy, 0, 255);
      }
  tcase t;
  tc_init(&t, "QLinearConv", 13);
  graph_node_set_attr_ints(t.node, "pads", 4, (int64_t[]){P, P, P, P});
  graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){S, S});
  tc_input(&t, lit_int(HLO_U8, 4, (int64_t[]){1, C, H, W}, x), false);
  tc_input(&t, lit_f32(0, NULL, &xs), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, &zx), true);
  tc_input(&t, lit_int(HLO_S8, 4, (int64_t[]){M, C, KH, KW}, w), true);
  tc_input(&t, lit_f32(1, (int64_t[]){M}, ws), true);
  tc_input(&t, lit_int(HLO_S8, 1, (int64_t[]){M}, wzp), true);
  tc_input(&t, lit_f32(0, NULL, &ys), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, &zy), true);
  tc_input(&t, lit_int(HLO_S32, 1, (int64_t[]){M}, bias), true);
  RUN(&t);
  check_ints(t.out[0], HLO_U8, want, M * OH * OW, __LINE__);
  tc_free(&t);
}

/* ConvInteger with a scalar x zero point and grouped weights: exact int32. */
static void test_convinteger_grouped_exact(void) {
  enum { C = 4, H = 3, W = 4, G = 2, M = 2, KH = 2, KW = 2, OH = H - KH + 1, OW = W - KW + 1 };
  int64_t x[C * H * W], w[M * (C / G) * KH * KW], want[M * OH * OW];
  fill_ints(x, C * H * W, 0, 255, 7);
  fill_ints(w, M * (C / G) * KH * KW, 0, 255, 8);
  const int64_t zx = 17, zw = 250;
  for (int m = 0; m < M; m++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int64_t acc = 0;
        int g = m / (M / G);
        for (int ci = 0; ci < C / G; ci++)
          for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++)
              acc += (x[((g * (C / G) + ci) * H + oh + kh) * W + ow + kw] - zx) *
                     (w[((m * (C / G) + ci) * KH + kh) * KW + kw] - zw);
        want[(m * OH + oh) * OW + ow] = acc;
      }
  tcase t;
  tc_init(&t, "ConvInteger", 13);
  graph_node_set_attr_int(t.node, "group", G);
  tc_input(&t, lit_int(HLO_U8, 4, (int64_t[]){1, C, H, W}, x), false);
  tc_input(&t, lit_int(HLO_U8, 4, (int64_t[]){M, C / G, KH, KW}, w), false);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, &zx), true);
  tc_input(&t, lit_int(HLO_U8, 0, NULL, &zw), true);
  RUN(&t);
  check_ints(t.out[0], HLO_S32, want, M * OH * OW, __LINE__);
  tc_free(&t);
}

static void test_dynamicquantizelinear_matches_spec_formula(void) {
  const float x[6] = {-1.5f, 0.25f, 3.0f, 0.0f, 2.125f, -0.75f};
  float mx = 0, mn = 0;
  for (int i = 0; i < 6; i++) {
    mx = fmaxf(mx, x[i]);
    mn = fminf(mn, x[i]);
  }
  float scale = (mx - mn) / 255.0f;
  float zpf = nearbyintf(fminf(255.0f, fmaxf(0.0f, 0.0f - mn / scale)));
  int64_t want[6];
  for (int i = 0; i < 6; i++) want[i] = sat(nearbyintf(x[i] / scale) + zpf, 0, 255);
  tcase t;
  tc_init(&t, "DynamicQuantizeLinear", 13);
  t.n_out = 3;
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  RUN(&t);
  check_ints(t.out[0], HLO_U8, want, 6, __LINE__);
  CHECK(t.out[1] && t.out[1]->shape.type == HLO_F32 && t.out[1]->shape.rank == 0 &&
        (float)literal_get_f64(t.out[1], 0) == scale);
  check_ints(t.out[2], HLO_U8, (int64_t[]){(int64_t)zpf}, 1, __LINE__);
  tc_free(&t);
}

/* com.microsoft.QLinearAdd / QLinearMul: C = quantize(dequantize(A) op dequantize(B)),
 * scales chosen so that no result lies within float error of a rounding tie. */
static void test_qlinearadd_and_mul_match_dequantize_op_quantize(void) {
  enum { N = 24 };
  int64_t a[N], b[N], want[N];
  fill_ints(a, N, 0, 255, 9);
  fill_ints(b, N, 0, 255, 10);
  const float as = 0.5f, bs = 0.25f, cs = 0.75f;
  const int64_t za = 120, zb = 3, zc = 128;
  for (int mul = 0; mul < 2; mul++) {
    for (int i = 0; i < N; i++) {
      double da = (double)(a[i] - za) * as, db = (double)(b[i] - zb) * bs;
      double v = mul ? da * db : da + db;
      want[i] = sat(nearbyint(v / cs) + (double)zc, 0, 255);
    }
    tcase t;
    tc_init(&t, mul ? "com.microsoft.QLinearMul" : "com.microsoft.QLinearAdd", 13);
    tc_input(&t, lit_int(HLO_U8, 2, (int64_t[]){4, 6}, a), false);
    tc_input(&t, lit_f32(0, NULL, &as), true);
    tc_input(&t, lit_int(HLO_U8, 0, NULL, &za), true);
    tc_input(&t, lit_int(HLO_U8, 2, (int64_t[]){4, 6}, b), false);
    tc_input(&t, lit_f32(0, NULL, &bs), true);
    tc_input(&t, lit_int(HLO_U8, 0, NULL, &zb), true);
    tc_input(&t, lit_f32(0, NULL, &cs), true);
    tc_input(&t, lit_int(HLO_U8, 0, NULL, &zc), true);
    RUN(&t);
    check_ints(t.out[0], HLO_U8, want, N, __LINE__);
    tc_free(&t);
  }
}

TEST_MAIN(TEST(test_qlinearmatmul_refuses_mismatched_zero_point_type),
          TEST(test_qlinearmatmul_refuses_scale_not_per_row),
          TEST(test_matmulinteger_refuses_mismatched_zero_point_type),
          TEST(test_qlinearconv_refuses_w_scale_not_per_channel),
          TEST(test_qlinearadd_refuses_mismatched_zero_point_type),
          TEST(test_matmulinteger_per_row_and_column_zero_points), TEST(test_qlinearmatmul_matches_spec_formula),
          TEST(test_qlinearconv_matches_spec_formula), TEST(test_convinteger_grouped_exact),
          TEST(test_dynamicquantizelinear_matches_spec_formula),
          TEST(test_qlinearadd_and_mul_match_dequantize_op_quantize))
