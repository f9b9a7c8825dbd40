/* Tests of the ONNX op lowerings (src/ops/ops_onnx_*.c) without the importer or the
 * executor: each test builds one graph node by hand, lowers it into a fresh HLO module
 * whose parameters are the node's non-constant inputs, verifies the module, runs it on
 * the reference evaluator and compares with results computed here by direct loops
 * written from the ONNX specification (not from the lowering). Also covers the
 * ops_lib conventions (absent optional inputs, broadcasting) and the host kernels. */
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

static hlo_literal *lit_s64(int rank, const int64_t *dims, const int64_t *v) {
  hlo_shape s = shape_make(HLO_S64, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_s64(l, i, v[i]);
  return l;
}

/* Deterministic values in [-1, 1). */
static void fill(float *v, int64_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = (float)((x % 2000u) / 1000.0 - 1.0);
  }
}

static void check_dims(const hlo_literal *l, int rank, const int64_t *dims, int line) {
  bool ok = l && l->shape.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = l->shape.dims[i] == dims[i];
  if (!ok) {
    char buf[256];
    char *got = l ? shape_to_string(&l->shape) : NULL;
    snprintf(buf, sizeof buf, "result shape %s, expected rank %d", got ? got : "(none)", rank);
    free(got);
    check_fail(__FILE__, line, "shape", buf);
  }
}

/* max|a-b| <= 1e-4 + 1e-3|b| per element. */
static void check_close(const hlo_literal *l, const float *want, int64_t n, int line) {
  tc_check_close(l, want, n, 1e-4, 1e-3, __FILE__, line);
}

static void check_ints(const hlo_literal *l, const int64_t *want, int64_t n, int line) {
  if (!l || l->n != n) {
    check_fail(__FILE__, line, "element count", NULL);
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

/* ------------------------------------------------------------ tests ---- */

static void test_registry(void) {
  const char *names[] = {"onnx.Conv",   "onnx.Gemm",   "onnx.MaxPool", "onnx.Softmax", "onnx.Reshape",
                         "onnx.Slice",  "onnx.Gather", "onnx.Resize",  "onnx.NonZero", "onnx.ReduceSum",
                         "onnx.TopK",   "onnx.Add",    "onnx.Einsum",  "onnx.Pad",     "onnx.Constant"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(op_find(names[i]) != NULL);
  CHECK(op_find("onnx.NoSuchOp") == NULL);
  for (int i = 1; i < op_count(); i++) CHECK(strcmp(op_at(i - 1)->name, op_at(i)->name) < 0);
  const op_def *nz = op_find("onnx.NonZero");
  CHECK(nz && !nz->lower && nz->host && (nz->traits & OP_DYNAMIC_SHAPE));
  const op_def *topk = op_find("onnx.TopK");
  CHECK(topk && topk->lower && topk->host && (topk->const_inputs & 2));
}

static void test_absent_inputs(void) {
  graph *g = graph_new("onnx");
  graph_node *n, *a, *b;
  graph_shape s = graph_shape_scalar();
  CHECK_OK(graph_add_node(g, "r", "Resize", &n));
  CHECK_OK(graph_add_input(g, "x", GRAPH_DT_FLOAT, &s, &a));
  CHECK_OK(graph_add_input(g, "sizes", GRAPH_DT_INT64, &s, &b));
  CHECK_OK(graph_add_edge(a, 0, n));
  CHECK_OK(graph_add_edge(b, 0, n));
  /* Resize(X, "", "", sizes): data inputs are X and sizes. */
  graph_node_set_attr_ints(n, "_absent_inputs", 2, (int64_t[]){1, 2});
  CHECK(onnx_input_index(n, 0) == 0);
  CHECK(onnx_input_index(n, 1) == -1);
  CHECK(onnx_input_index(n, 2) == -1);
  CHECK(onnx_input_index(n, 3) == 1);
  CHECK(onnx_input_index(n, 4) == -1);
  graph_free(g);
}

static void test_add_broadcast(void) {
  tcase t;
  tc_init(&t, "Add", 13);
  float a[6], b[3];
  fill(a, 6, 1);
  fill(b, 3, 2);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, a), false);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, b), false);
  RUN(&t);
  float want[6];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = a[i * 3 + j] + b[j];
  check_dims(t.out[0], 2, (int64_t[]){2, 3}, __LINE__);
  check_close(t.out[0], want, 6, __LINE__);
  tc_free(&t);
  /* Incompatible shapes are an error naming the node and both shapes. */
  tc_init(&t, "Mul", 13);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, a), false);
  tc_input(&t, lit_f32(1, (int64_t[]){2}, b), false);
  CHECK_ERR(tc_run(&t), "node n (onnx.Mul): shapes [3] and [2] cannot be broadcast");
  tc_free(&t);
}

/* Conv with groups, strides, dilations and asymmetric pads, against the definition. */
static void test_conv(void) {
  enum { N = 2, C = 4, H = 7, W = 6, M = 6, G = 2, KH = 3, KW = 2 };
  int64_t sh = 2, sw = 1, dh = 1, dw = 2, pt = 1, pl = 0, pb = 2, pr = 1;
  float x[N * C * H * W], w[M * (C / G) * KH * KW], bias[M];
  fill(x, N * C * H * W, 3);
  fill(w, M * (C / G) * KH * KW, 4);
  fill(bias, M, 5);
  tcase t;
  tc_init(&t, "Conv", 13);
  graph_node_set_attr_int(t.node, "group", G);
  graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){sh, sw});
  graph_node_set_attr_ints(t.node, "dilations", 2, (int64_t[]){dh, dw});
  graph_node_set_attr_ints(t.node, "pads", 4, (int64_t[]){pt, pl, pb, pr});
  tc_input(&t, lit_f32(4, (int64_t[]){N, C, H, W}, x), false);
  tc_input(&t, lit_f32(4, (int64_t[]){M, C / G, KH, KW}, w), true);
  tc_input(&t, lit_f32(1, (int64_t[]){M}, bias), false);
  RUN(&t);
  int64_t oh = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1, ow = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
  float *want = calloc((size_t)(N * M * oh * ow), sizeof *want);
  for (int n = 0; n < N; n++)
    for (int m = 0; m < M; m++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double acc = bias[m];
          int g = m / (M / G);
          for (int c = 0; c < C / G; c++)
            for (int ki = 0; ki < KH; ki++)
              for (int kj = 0; kj < KW; kj++) {
                int64_t yi = i * sh - pt + ki * dh, xj = j * sw - pl + kj * dw;
                if (yi < 0 || yi >= H || xj < 0 || xj >= W) continue;
                acc += x[((n * C + g * (C / G) + c) * H + yi) * W + xj] * w[((m * (C / G) + c) * KH + ki) * KW + kj];
              }
          want[((n * M + m) * oh + i) * ow + j] = (float)acc;
        }
  check_dims(t.out[0], 4, (int64_t[]){N, M, oh, ow}, __LINE__);
  check_close(t.out[0], want, N * M * oh * ow, __LINE__);
  free(want);
  tc_free(&t);

  /* SAME_UPPER keeps ceil(in / stride). */
  tc_init(&t, "Conv", 13);
  graph_node_set_attr_string(t.node, "auto_pad", "SAME_UPPER", 10);
  graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){2, 2});
  tc_input(&t, lit_f32(4, (int64_t[]){1, 4, 7, 6}, x), false);
  tc_input(&t, lit_f32(4, (int64_t[]){3, 4, 3, 3}, x), false);
  RUN(&t);
  check_dims(t.out[0], 4, (int64_t[]){1, 3, 4, 3}, __LINE__);
  tc_free(&t);
}

static void test_conv_transpose(void) {
  enum { C = 2, H = 3, W = 3, MG = 2, K = 3 };
  int64_t s = 2, p = 1, op = 1;
  float x[C * H * W], w[C * MG * K * K];
  fill(x, C * H * W, 6);
  fill(w, C * MG * K * K, 7);
  tcase t;
  tc_init(&t, "ConvTranspose", 13);
  graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){s, s});
  graph_node_set_attr_ints(t.node, "pads", 4, (int64_t[]){p, p, p, p});
  graph_node_set_attr_ints(t.node, "output_padding", 2, (int64_t[]){op, op});
  tc_input(&t, lit_f32(4, (int64_t[]){1, C, H, W}, x), false);
  tc_input(&t, lit_f32(4, (int64_t[]){C, MG, K, K}, w), false);
  RUN(&t);
  int64_t oh = s * (H - 1) + op + K - 2 * p;
  float *full = calloc((size_t)(MG * (oh + 2 * p) * (oh + 2 * p)), sizeof *full);
  int64_t fh = oh + 2 * p;
  /* Scatter form of the definition: every input pixel adds a scaled kernel. */
  for (int c = 0; c < C; c++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++)
        for (int m = 0; m < MG; m++)
          for (int ki = 0; ki < K; ki++)
            for (int kj = 0; kj < K; kj++) {
              int64_t yi = i * s + ki, xj = j * s + kj;
              if (yi < fh && xj < fh)
                full[(m * fh + yi) * fh + xj] += x[(c * H + i) * W + j] * w[((c * MG + m) * K + ki) * K + kj];
            }
  float *want = malloc((size_t)(MG * oh * oh) * sizeof *want);
  for (int m = 0; m < MG; m++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < oh; j++) want[(m * oh + i) * oh + j] = full[(m * fh + i + p) * fh + j + p];
  check_dims(t.out[0], 4, (int64_t[]){1, MG, oh, oh}, __LINE__);
  check_close(t.out[0], want, MG * oh * oh, __LINE__);
  free(full);
  free(want);
  tc_free(&t);
}

static void test_gemm(void) {
  enum { M = 3, K = 4, N = 5 };
  float a[K * M], b[N * K], cc[N];
  fill(a, K * M, 8);
  fill(b, N * K, 9);
  fill(cc, N, 10);
  tcase t;
  tc_init(&t, "Gemm", 13);
  graph_node_set_attr_int(t.node, "transA", 1);
  graph_node_set_attr_int(t.node, "transB", 1);
  graph_node_set_attr_float(t.node, "alpha", 0.5f);
  graph_node_set_attr_float(t.node, "beta", 2.0f);
  tc_input(&t, lit_f32(2, (int64_t[]){K, M}, a), false);
  tc_input(&t, lit_f32(2, (int64_t[]){N, K}, b), false);
  tc_input(&t, lit_f32(1, (int64_t[]){N}, cc), false);
  RUN(&t);
  float want[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += a[k * M + i] * b[j * K + k];
      want[i * N + j] = (float)(0.5 * acc + 2.0 * cc[j]);
    }
  check_dims(t.out[0], 2, (int64_t[]){M, N}, __LINE__);
  check_close(t.out[0], want, M * N, __LINE__);
  tc_free(&t);
}

static void test_matmul_batch(void) {
  float a[2 * 3 * 4], b[4 * 5];
  fill(a, 24, 11);
  fill(b, 20, 12);
  tcase t;
  tc_init(&t, "MatMul", 13);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, a), false);
  tc_input(&t, lit_f32(2, (int64_t[]){4, 5}, b), false);
  RUN(&t);
  float want[2 * 3 * 5];
  for (int bb = 0; bb < 2; bb++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++) {
        double acc = 0;
        for (int k = 0; k < 4; k++) acc += a[(bb * 3 + i) * 4 + k] * b[k * 5 + j];
        want[(bb * 3 + i) * 5 + j] = (float)acc;
      }
  check_dims(t.out[0], 3, (int64_t[]){2, 3, 5}, __LINE__);
  check_close(t.out[0], want, 30, __LINE__);
  tc_free(&t);
  /* vector @ batched matrices: [4] x [2,4,5] -> [2,5] */
  float bm[2 * 4 * 5];
  fill(bm, 40, 13);
  tc_init(&t, "MatMul", 13);
  tc_input(&t, lit_f32(1, (int64_t[]){4}, a), false);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 4, 5}, bm), false);
  RUN(&t);
  float want2[10];
  for (int bb = 0; bb < 2; bb++)
    for (int j = 0; j < 5; j++) {
      double acc = 0;
      for (int k = 0; k < 4; k++) acc += a[k] * bm[(bb * 4 + k) * 5 + j];
      want2[bb * 5 + j] = (float)acc;
    }
  check_dims(t.out[0], 2, (int64_t[]){2, 5}, __LINE__);
  check_close(t.out[0], want2, 10, __LINE__);
  tc_free(&t);
}

/* Pooling reference: windows over the padded input with ceil_mode's rule that a
 * window must start inside the input or the begin padding. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t lo, int64_t hi, bool ceil_mode) {
  int64_t span = in + lo + hi - k;
  int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (ceil_mode && (o - 1) * s >= in + lo) o--;
  return o;
}

static void test_pools(void) {
  enum { C = 2, H = 6, W = 5 };
  int64_t k = 3, s = 2, lo = 1, hi = 0;
  float x[C * H * W];
  fill(x, C * H * W, 14);
  for (int variant = 0; variant < 3; variant++) {
    /* 0: MaxPool ceil_mode, 1: AveragePool exclude pad, 2: AveragePool include pad */
    tcase t;
    tc_init(&t, variant == 0 ? "MaxPool" : "AveragePool", 13);
    graph_node_set_attr_ints(t.node, "kernel_shape", 2, (int64_t[]){k, k});
    graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){s, s});
    graph_node_set_attr_ints(t.node, "pads", 4, (int64_t[]){lo, lo, hi, hi});
    graph_node_set_attr_int(t.node, "ceil_mode", 1);
    if (variant == 2) graph_node_set_attr_int(t.node, "count_include_pad", 1);
    tc_input(&t, lit_f32(4, (int64_t[]){1, C, H, W}, x), false);
    RUN(&t);
    int64_t oh = pool_out(H, k, s, lo, hi, true), ow = pool_out(W, k, s, lo, hi, true);
    float *want = malloc((size_t)(C * oh * ow) * sizeof *want);
    for (int c = 0; c < C; c++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double mx = -INFINITY, sum = 0;
          int cnt = 0, cnt_pad = 0;
          for (int64_t a = 0; a < k; a++)
            for (int64_t b = 0; b < k; b++) {
              int64_t yi = i * s - lo + a, xj = j * s - lo + b;
              /* count_include_pad counts the explicit pads, not ceil_mode's overhang. */
              if (yi < H + hi && xj < W + hi) cnt_pad++;
              if (yi < 0 || yi >= H || xj < 0 || xj >= W) continue;
              double v = x[(c * H + yi) * W + xj];
              mx = v > mx ? v : mx;
              sum += v;
              cnt++;
            }
          want[(c * oh + i) * ow + j] = (float)(variant == 0 ? mx : variant == 1 ? sum / cnt : sum / cnt_pad);
        }
    check_dims(t.out[0], 4, (int64_t[]){1, C, oh, ow}, __LINE__);
    check_close(t.out[0], want, C * oh * ow, __LINE__);
    free(want);
    tc_free(&t);
  }
}

static void test_maxpool_indices(void) {
  float x[2 * 4 * 4];
  fill(x, 32, 15);
  tcase t;
  tc_init(&t, "MaxPool", 13);
  graph_node_set_attr_ints(t.node, "kernel_shape", 2, (int64_t[]){2, 2});
  graph_node_set_attr_ints(t.node, "strides", 2, (int64_t[]){2, 2});
  tc_input(&t, lit_f32(4, (int64_t[]){1, 2, 4, 4}, x), false);
  t.n_out = 2;
  RUN(&t);
  int64_t want[8];
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        int64_t best = -1;
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 2; b++) {
            int64_t at = (c * 4 + i * 2 + a) * 4 + j * 2 + b;
            if (best < 0 || x[at] > x[best]) best = at;
          }
        want[(c * 2 + i) * 2 + j] = best;
      }
  check_ints(t.out[1], want, 8, __LINE__);
  tc_free(&t);
}

static void softmax_ref(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; i++) mx = fmax(mx, x[(o * n + i) * inner + in]);
      for (int64_t i = 0; i < n; i++) sum += exp(x[(o * n + i) * inner + in] - mx);
      for (int64_t i = 0; i < n; i++) y[(o * n + i) * inner + in] = (float)(exp(x[(o * n + i) * inner + in] - mx) / sum);
    }
}

static void test_softmax(void) {
  float x[2 * 3 * 4], want[24];
  fill(x, 24, 16);
  /* opset 13: along axis 1 only. */
  tcase t;
  tc_init(&t, "Softmax", 13);
  graph_node_set_attr_int(t.node, "axis", 1);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  RUN(&t);
  softmax_ref(x, want, 2, 3, 4);
  check_close(t.out[0], want, 24, __LINE__);
  tc_free(&t);
  /* opset 11: coerced to [2, 12], normalised over 12 elements. */
  tc_init(&t, "Softmax", 11);
  graph_node_set_attr_int(t.node, "axis", 1);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  RUN(&t);
  softmax_ref(x, want, 2, 12, 1);
  check_dims(t.out[0], 3, (int64_t[]){2, 3, 4}, __LINE__);
  check_close(t.out[0], want, 24, __LINE__);
  tc_free(&t);
  /* LogSoftmax default axis (-1). */
  tc_init(&t, "LogSoftmax", 13);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  RUN(&t);
  softmax_ref(x, want, 6, 4, 1);
  for (int i = 0; i < 24; i++) want[i] = logf(want[i]);
  check_close(t.out[0], want, 24, __LINE__);
  tc_free(&t);
}

static void test_reshape(void) {
  float x[2 * 3 * 4];
  fill(x, 24, 17);
  tcase t;
  tc_init(&t, "Reshape", 14);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){3}, (int64_t[]){0, -1, 2}), true);
  RUN(&t);
  check_dims(t.out[0], 3, (int64_t[]){2, 6, 2}, __LINE__);
  check_close(t.out[0], x, 24, __LINE__);
  tc_free(&t);
  tc_init(&t, "Reshape", 14);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){5, -1}), true);
  CHECK_ERR(tc_run(&t), "cannot infer the -1 dimension");
  tc_free(&t);
}

static void test_slice(void) {
  float x[5 * 6];
  fill(x, 30, 18);
  /* axis 1 reversed with step -2 from a clamped start; axis 0 with a huge end. */
  tcase t;
  tc_init(&t, "Slice", 13);
  tc_input(&t, lit_f32(2, (int64_t[]){5, 6}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){1, 100}), true);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){INT64_MAX, -100}), true);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){0, 1}), true);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){1, -2}), true);
  RUN(&t);
  /* rows 1..4, columns 5, 3, 1 */
  float want[4 * 3];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = x[(1 + i) * 6 + (5 - 2 * j)];
  check_dims(t.out[0], 2, (int64_t[]){4, 3}, __LINE__);
  check_close(t.out[0], want, 12, __LINE__);
  tc_free(&t);
  /* Absent axes (given as "") and steps 3 with negative start. */
  tc_init(&t, "Slice", 13);
  tc_input(&t, lit_f32(2, (int64_t[]){5, 6}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){-4, 0}), true);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){5, 6}), true);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){3, 4}), true);
  graph_node_set_attr_ints(t.node, "_absent_inputs", 1, (int64_t[]){3});
  RUN(&t);
  float want2[2 * 2];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) want2[i * 2 + j] = x[(1 + 3 * i) * 6 + 4 * j];
  check_dims(t.out[0], 2, (int64_t[]){2, 2}, __LINE__);
  check_close(t.out[0], want2, 4, __LINE__);
  tc_free(&t);
}

static void test_gather(void) {
  float x[3 * 4 * 2];
  fill(x, 24, 19);
  tcase t;
  tc_init(&t, "Gather", 13);
  graph_node_set_attr_int(t.node, "axis", 1);
  int64_t idx[2 * 3] = {0, -1, 2, 3, 1, -4};
  tc_input(&t, lit_f32(3, (int64_t[]){3, 4, 2}, x), false);
  tc_input(&t, lit_s64(2, (int64_t[]){2, 3}, idx), false);
  RUN(&t);
  float want[3 * 6 * 2];
  for (int a = 0; a < 3; a++)
    for (int i = 0; i < 6; i++)
      for (int c = 0; c < 2; c++) {
        int64_t j = idx[i] < 0 ? idx[i] + 4 : idx[i];
        want[(a * 6 + i) * 2 + c] = x[(a * 4 + j) * 2 + c];
      }
  check_dims(t.out[0], 4, (int64_t[]){3, 2, 3, 2}, __LINE__);
  check_close(t.out[0], want, 36, __LINE__);
  tc_free(&t);
  /* GatherElements along axis 0. */
  tc_init(&t, "GatherElements", 13);
  float m[3 * 2] = {1, 2, 3, 4, 5, 6};
  tc_input(&t, lit_f32(2, (int64_t[]){3, 2}, m), false);
  tc_input(&t, lit_s64(2, (int64_t[]){2, 2}, (int64_t[]){2, 0, -3, 1}), false);
  RUN(&t);
  check_close(t.out[0], (float[]){5, 2, 1, 4}, 4, __LINE__);
  tc_free(&t);
  /* GatherND with batch_dims 1. */
  tc_init(&t, "GatherND", 13);
  graph_node_set_attr_int(t.node, "batch_dims", 1);
  float d[2 * 2 * 2] = {0, 1, 2, 3, 4, 5, 6, 7};
  tc_input(&t, lit_f32(3, (int64_t[]){2, 2, 2}, d), false);
  tc_input(&t, lit_s64(2, (int64_t[]){2, 1}, (int64_t[]){1, 0}), false);
  RUN(&t);
  check_dims(t.out[0], 2, (int64_t[]){2, 2}, __LINE__);
  check_close(t.out[0], (float[]){2, 3, 4, 5}, 4, __LINE__);
  tc_free(&t);
}

static void test_scatter(void) {
  float data[4 * 2] = {0}, upd[2 * 2] = {1, 2, 3, 4};
  tcase t;
  tc_init(&t, "ScatterND", 16);
  graph_node_set_attr_string(t.node, "reduction", "add", 3);
  tc_input(&t, lit_f32(2, (int64_t[]){4, 2}, data), false);
  tc_input(&t, lit_s64(2, (int64_t[]){2, 1}, (int64_t[]){3, -3}), false);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 2}, upd), false);
  RUN(&t);
  check_close(t.out[0], (float[]){0, 0, 3, 4, 0, 0, 1, 2}, 8, __LINE__);
  tc_free(&t);
  tc_init(&t, "ScatterElements", 16);
  graph_node_set_attr_int(t.node, "axis", 1);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 4}, data), false);
  tc_input(&t, lit_s64(2, (int64_t[]){2, 2}, (int64_t[]){1, 3, 0, -1}), false);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 2}, upd), false);
  RUN(&t);
  check_close(t.out[0], (float[]){0, 1, 0, 2, 3, 0, 0, 4}, 8, __LINE__);
  tc_free(&t);
}

/* Reference resize from the ONNX formulas, 2-D (H, W) per channel. */
static float ref_coord(const char *mode, int64_t x, float scale, int64_t in, int64_t out) {
  if (strcmp(mode, "asymmetric") == 0) return (float)x / scale;
  if (strcmp(mode, "align_corners") == 0) return out == 1 ? 0 : (float)x * (float)(in - 1) / (float)(out - 1);
  if (strcmp(mode, "pytorch_half_pixel") == 0) return out > 1 ? ((float)x + 0.5f) / scale - 0.5f : 0;
  return ((float)x + 0.5f) / scale - 0.5f;
}

static void test_resize(void) {
  enum { C = 2, H = 3, W = 4 };
  float x[C * H * W];
  fill(x, C * H * W, 20);
  const char *coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
  for (int mode = 0; mode < 2; mode++)
    for (int ci = 0; ci < 4; ci++) {
      /* nearest with scales [1,1,2,1.5]; linear with sizes [1,2,5,3] */
      tcase t;
      tc_init(&t, "Resize", 13);
      graph_node_set_attr_string(t.node, "mode", mode ? "linear" : "nearest", mode ? 6 : 7);
      graph_node_set_attr_string(t.node, "coordinate_transformation_mode", coords[ci], strlen(coords[ci]));
      if (!mode) graph_node_set_attr_string(t.node, "nearest_mode", "floor", 5);
      tc_input(&t, lit_f32(4, (int64_t[]){1, C, H, W}, x), false);
      int64_t oh, ow;
      float sh, sw;
      if (!mode) {
        tc_input(&t, lit_f32(1, (int64_t[]){4}, (float[]){1, 1, 2, 1.5f}), true);
        graph_node_set_attr_ints(t.node, "_absent_inputs", 1, (int64_t[]){1});
        sh = 2;
        sw = 1.5f;
        oh = 6;
        ow = 6;
      } else {
        tc_input(&t, lit_s64(1, (int64_t[]){4}, (int64_t[]){1, C, 5, 3}), true);
        graph_node_set_attr_ints(t.node, "_absent_inputs", 2, (int64_t[]){1, 2});
        oh = 5;
        ow = 3;
        sh = 5.0f / H;
        sw = 3.0f / W;
      }
      RUN(&t);
      float want[C * 6 * 6];
      for (int c = 0; c < C; c++)
        for (int64_t i = 0; i < oh; i++)
          for (int64_t j = 0; j < ow; j++) {
            float fy = ref_coord(coords[ci], i, sh, H, oh), fx = ref_coord(coords[ci], j, sw, W, ow);
            float v;
            if (!mode) {
              int64_t yi = (int64_t)floorf(fy), xj = (int64_t)floorf(fx);
              yi = yi < 0 ? 0 : yi > H - 1 ? H - 1 : yi;
              xj = xj < 0 ? 0 : xj > W - 1 ? W - 1 : xj;
              v = x[(c * H + yi) * W + xj];
            } else {
              fy = fminf(fmaxf(fy, 0), H - 1);
              fx = fminf(fmaxf(fx, 0), W - 1);
              int64_t y0 = (int64_t)fy, x0 = (int64_t)fx, y1 = y0 + 1 < H ? y0 + 1 : H - 1,
                      x1 = x0 + 1 < W ? x0 + 1 : W - 1;
              float ay = fy - (float)y0, ax = fx - (float)x0;
              const float *p = x + c * H * W;
              v = (1 - ay) * ((1 - ax) * p[y0 * W + x0] + ax * p[y0 * W + x1]) +
                  ay * ((1 - ax) * p[y1 * W + x0] + ax * p[y1 * W + x1]);
            }
            want[(c * oh + i) * ow + j] = v;
          }
      check_dims(t.out[0], 4, (int64_t[]){1, C, oh, ow}, __LINE__);
      check_close(t.out[0], want, C * oh * ow, __LINE__);
      tc_free(&t);
    }
}

static void test_reduce_and_argmax(void) {
  float x[2 * 3 * 4];
  fill(x, 24, 21);
  x[5] = x[6] = 5; /* a tie on row (0, 1) */
  tcase t;
  tc_init(&t, "ReduceSum", 13);
  graph_node_set_attr_int(t.node, "keepdims", 0);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){0, -1}), true);
  RUN(&t);
  float want[3] = {0};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) want[b] += x[(a * 3 + b) * 4 + c];
  check_dims(t.out[0], 1, (int64_t[]){3}, __LINE__);
  check_close(t.out[0], want, 3, __LINE__);
  tc_free(&t);
  for (int last = 0; last < 2; last++) {
    tc_init(&t, "ArgMax", 13);
    graph_node_set_attr_int(t.node, "axis", 2);
    graph_node_set_attr_int(t.node, "select_last_index", last);
    tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, x), false);
    RUN(&t);
    int64_t wi[6];
    for (int r = 0; r < 6; r++) {
      int best = 0;
      for (int c = 1; c < 4; c++)
        if (x[r * 4 + c] > x[r * 4 + best] || (last && x[r * 4 + c] == x[r * 4 + best])) best = c;
      wi[r] = best;
    }
    check_dims(t.out[0], 3, (int64_t[]){2, 3, 1}, __LINE__);
    check_ints(t.out[0], wi, 6, __LINE__);
    tc_free(&t);
  }
}

static void test_topk_and_host(void) {
  float x[2 * 5] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  tcase t;
  tc_init(&t, "TopK", 13);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 5}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){1}, (int64_t[]){3}), true);
  t.n_out = 2;
  RUN(&t);
  check_close(t.out[0], (float[]){5, 4, 3, 9, 6, 5}, 6, __LINE__);
  check_ints(t.out[1], (int64_t[]){4, 2, 0, 0, 2, 3}, 6, __LINE__);
  tc_free(&t);
  /* The host kernel (dynamic k) agrees, smallest first with index tie-break. */
  graph *g = graph_new("onnx");
  graph_node *n;
  CHECK_OK(graph_add_node(g, "t", "TopK", &n));
  graph_node_set_attr_int(n, "largest", 0);
  graph_tensor *xt, *kt, *outs[2] = {0};
  CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 2, (int64_t[]){2, 5}, &xt));
  for (int i = 0; i < 10; i++) tensor_set_f64(xt, i, x[i]);
  CHECK_OK(tensor_create(GRAPH_DT_INT64, 1, (int64_t[]){1}, &kt));
  tensor_set_s64(kt, 0, 2);
  graph_tensor *ins[2] = {xt, kt};
  graph_node *srcs[2];
  graph_shape s = graph_shape_unknown();
  CHECK_OK(graph_add_input(g, "x", GRAPH_DT_FLOAT, &s, &srcs[0]));
  CHECK_OK(graph_add_input(g, "k", GRAPH_DT_INT64, &s, &srcs[1]));
  CHECK_OK(graph_add_edge(srcs[0], 0, n));
  CHECK_OK(graph_add_edge(srcs[1], 0, n));
  op_host_ctx hc = {n, 13, 2, ins, 2, outs};
  CHECK_OK(op_find("onnx.TopK")->host(&hc));
  CHECK(outs[0] && outs[1] && outs[0]->dims[1] == 2);
  if (outs[1]) {
    CHECK(tensor_get_s64(outs[1], 0) == 1 && tensor_get_s64(outs[1], 1) == 3);
    CHECK(tensor_get_s64(outs[1], 2) == 1 && tensor_get_s64(outs[1], 3) == 4);
  }
  tensor_free(outs[0]);
  tensor_free(outs[1]);
  /* NonZero host kernel. */
  graph_node *nz;
  CHECK_OK(graph_add_node(g, "nz", "NonZero", &nz));
  CHECK_OK(graph_add_edge(srcs[0], 0, nz));
  tensor_set_f64(xt, 1, 0);
  tensor_set_f64(xt, 7, 0);
  graph_tensor *nzout[1] = {0};
  op_host_ctx nc = {nz, 13, 1, ins, 1, nzout};
  CHECK_OK(op_find("onnx.NonZero")->host(&nc));
  CHECK(nzout[0] && nzout[0]->dims[0] == 2 && nzout[0]->dims[1] == 8);
  if (nzout[0]) CHECK(tensor_get_s64(nzout[0], 1) == 0 && tensor_get_s64(nzout[0], 8 + 1) == 2);
  tensor_free(nzout[0]);
  tensor_free(xt);
  tensor_free(kt);
  graph_free(g);
}

static void test_pad_modes(void) {
  float x[2 * 3] = {1, 2, 3, 4, 5, 6};
  const char *modes[] = {"constant", "reflect", "edge", "wrap"};
  /* pads: rows [1, 0], cols [2, 1] */
  const float want[4][3 * 6] = {
      {9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9},
      {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5},
      {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6},
      {5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4},
  };
  for (int m = 0; m < 4; m++) {
    tcase t;
    tc_init(&t, "Pad", 19);
    graph_node_set_attr_string(t.node, "mode", modes[m], strlen(modes[m]));
    tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
    tc_input(&t, lit_s64(1, (int64_t[]){4}, (int64_t[]){1, 2, 0, 1}), true);
    tc_input(&t, lit_f32(0, NULL, (float[]){9}), true);
    RUN(&t);
    check_dims(t.out[0], 2, (int64_t[]){3, 6}, __LINE__);
    check_close(t.out[0], want[m], 18, __LINE__);
    tc_free(&t);
  }
}

static void test_einsum(void) {
  float a[2 * 3 * 4], b[2 * 4 * 5];
  fill(a, 24, 22);
  fill(b, 40, 23);
  tcase t;
  tc_init(&t, "Einsum", 13);
  graph_node_set_attr_string(t.node, "equation", "bij, bjk -> bki", 15);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 4}, a), false);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 4, 5}, b), false);
  RUN(&t);
  float want[2 * 5 * 3];
  for (int bb = 0; bb < 2; bb++)
    for (int k = 0; k < 5; k++)
      for (int i = 0; i < 3; i++) {
        double acc = 0;
        for (int j = 0; j < 4; j++) acc += a[(bb * 3 + i) * 4 + j] * b[(bb * 4 + j) * 5 + k];
        want[(bb * 5 + k) * 3 + i] = (float)acc;
      }
  check_dims(t.out[0], 3, (int64_t[]){2, 5, 3}, __LINE__);
  check_close(t.out[0], want, 30, __LINE__);
  tc_free(&t);
}

/* Repeated labels take diagonals: "bii->bi" is each batch's diagonal, implicit "ii" is
 * the trace (a label written twice is not an implicit output), and a diagonal must have
 * equal sizes. */
static void test_einsum_repeated_label_takes_diagonal(void) {
  float a[2 * 3 * 3];
  fill(a, 18, 24);
  tcase t;
  tc_init(&t, "Einsum", 13);
  graph_node_set_attr_string(t.node, "equation", "bii->bi", 7);
  tc_input(&t, lit_f32(3, (int64_t[]){2, 3, 3}, a), false);
  RUN(&t);
  float want[6];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++) want[b * 3 + i] = a[(b * 3 + i) * 3 + i];
  check_dims(t.out[0], 2, (int64_t[]){2, 3}, __LINE__);
  check_close(t.out[0], want, 6, __LINE__);
  tc_free(&t);
  tc_init(&t, "Einsum", 13);
  graph_node_set_attr_string(t.node, "equation", "ii", 2);
  tc_input(&t, lit_f32(2, (int64_t[]){3, 3}, a), false);
  RUN(&t);
  float trace = a[0] + a[4] + a[8];
  check_dims(t.out[0], 0, NULL, __LINE__);
  check_close(t.out[0], &trace, 1, __LINE__);
  tc_free(&t);
  tc_init(&t, "Einsum", 13);
  graph_node_set_attr_string(t.node, "equation", "ii->i", 5);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, a), false);
  kiln_status st = tc_run(&t); /* a [2, 3] tensor has no diagonal */
  CHECK(st != NULL && strstr(kiln_status_message(st), "sizes 2 and 3") != NULL);
  kiln_status_free(st);
  tc_free(&t);
}

static hlo_literal *lit_typed(hlo_type type, int rank, const int64_t *dims, const double *v) {
  hlo_shape s = shape_make(type, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v[i]);
  return l;
}

/* Per-tensor QuantizeLinear/DequantizeLinear on a rank-1 x: ONNX ignores axis for a
 * scalar scale, so neither the default axis 1 nor an explicit one (out of range for
 * rank 1) is an error. Expected values: y = saturate(round_half_even(x / s) + zp) and
 * x = (q - zp) * s, with x / 0.5 exact so that the ties really are ties. */
static void test_quantize_rank1(void) {
  const float x[7] = {-1.25f, 0.25f, 0.75f, 3.0f, 100.0f, -100.0f, 1.3f};
  const struct {
    hlo_type t;
    double zp, lo, hi;
  } kinds[] = {{HLO_U8, 130, 0, 255}, {HLO_S8, -5, -128, 127}};
  for (int k = 0; k < 2; k++)
    for (int with_axis = 0; with_axis < 2; with_axis++) {
      tcase t;
      tc_init(&t, "QuantizeLinear", 13);
      if (with_axis) graph_node_set_attr_int(t.node, "axis", 1);
      tc_input(&t, lit_f32(1, (int64_t[]){7}, x), false);
      tc_input(&t, lit_f32(0, NULL, (float[]){0.5f}), true);
      tc_input(&t, lit_typed(kinds[k].t, 0, NULL, &kinds[k].zp), true);
      RUN(&t);
      int64_t want[7];
      for (int i = 0; i < 7; i++)
        want[i] = (int64_t)fmin(kinds[k].hi, fmax(kinds[k].lo, nearbyint(x[i] / 0.5) + kinds[k].zp));
      CHECK(t.out[0] && t.out[0]->shape.type == kinds[k].t);
      check_ints(t.out[0], want, 7, __LINE__);
      tc_free(&t);

      double q[5] = {kinds[k].lo, kinds[k].hi, kinds[k].zp, 0, 100};
      tc_init(&t, "DequantizeLinear", 13);
      if (with_axis) graph_node_set_attr_int(t.node, "axis", 1);
      tc_input(&t, lit_typed(kinds[k].t, 1, (int64_t[]){5}, q), false);
      tc_input(&t, lit_f32(1, (int64_t[]){1}, (float[]){0.25f}), true); /* one element: per-tensor too */
      tc_input(&t, lit_typed(kinds[k].t, 1, (int64_t[]){1}, &kinds[k].zp), true);
      RUN(&t);
      float dq[5];
      for (int i = 0; i < 5; i++) dq[i] = (float)((q[i] - kinds[k].zp) * 0.25);
      check_dims(t.out[0], 1, (int64_t[]){5}, __LINE__);
      check_close(t.out[0], dq, 5, __LINE__);
      tc_free(&t);
    }
  /* A per-axis scale still needs its axis to exist. */
  tcase t;
  tc_init(&t, "QuantizeLinear", 13);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, x), false);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, (float[]){0.5f, 0.25f, 1.0f}), true);
  CHECK_ERR(tc_run(&t), "node n (onnx.QuantizeLinear): axis 1 is out of range for rank 1");
  tc_free(&t);
  /* Blocked (opset 21): each scale / zero point covers block_size consecutive elements
   * along axis, the last block short: 5 elements in blocks of 2 take 3 of them. */
  tc_init(&t, "DequantizeLinear", 21);
  graph_node_set_attr_int(t.node, "block_size", 2);
  graph_node_set_attr_int(t.node, "axis", 0);
  tc_input(&t, lit_typed(HLO_U8, 1, (int64_t[]){5}, (double[]){1, 2, 3, 4, 5}), false);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, (float[]){0.5f, 0.25f, 2.0f}), true);
  tc_input(&t, lit_typed(HLO_U8, 1, (int64_t[]){3}, (double[]){1, 2, 3}), true);
  RUN(&t);
  check_close(t.out[0], (float[]){(1 - 1) * 0.5f, (2 - 1) * 0.5f, (3 - 2) * 0.25f, (4 - 2) * 0.25f, (5 - 3) * 2.0f}, 5,
              __LINE__);
  tc_free(&t);
  /* A blocked scale that does not cover x is refused by shape. */
  tc_init(&t, "DequantizeLinear", 21);
  graph_node_set_attr_int(t.node, "block_size", 2);
  graph_node_set_attr_int(t.node, "axis", 0);
  tc_input(&t, lit_typed(HLO_U8, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4}), false);
  tc_input(&t, lit_f32(1, (int64_t[]){3}, (float[]){0.5f, 0.25f, 1.0f}), true);
  CHECK_ERR(tc_run(&t), "blocked quantisation: a scale/zero point of rank 1 does not cover x of rank 1 in blocks of 2");
  tc_free(&t);
}

/* LpNormalization of a vector with norm 0 is zeros (ONNX Runtime: norm != 0 ? x / norm
 * : 0), never 0/0. */
static void test_lpnorm_zero(void) {
  float x[3 * 4];
  fill(x, 12, 31);
  for (int j = 0; j < 4; j++) x[4 + j] = 0; /* row 1 */
  for (int p = 1; p <= 2; p++) {
    tcase t;
    tc_init(&t, "LpNormalization", 13);
    graph_node_set_attr_int(t.node, "axis", 1);
    graph_node_set_attr_int(t.node, "p", p);
    tc_input(&t, lit_f32(2, (int64_t[]){3, 4}, x), false);
    RUN(&t);
    float want[12];
    for (int i = 0; i < 3; i++) {
      double norm = 0;
      for (int j = 0; j < 4; j++) norm += p == 1 ? fabs(x[i * 4 + j]) : (double)x[i * 4 + j] * x[i * 4 + j];
      if (p == 2) norm = sqrt(norm);
      for (int j = 0; j < 4; j++) want[i * 4 + j] = norm != 0 ? (float)(x[i * 4 + j] / norm) : 0.0f;
    }
    check_close(t.out[0], want, 12, __LINE__);
    tc_free(&t);
  }
}

static void test_errors(void) {
  float x[6] = {0};
  tcase t;
  tc_init(&t, "Transpose", 13);
  graph_node_set_attr_ints(t.node, "perm", 2, (int64_t[]){0, 5});
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  CHECK_ERR(tc_run(&t), "node n (onnx.Transpose): axis 5 is out of range for rank 2");
  tc_free(&t);
  tc_init(&t, "Conv", 13);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  CHECK_ERR(tc_run(&t), "input X must have rank >= 3");
  tc_free(&t);
  tc_init(&t, "Reshape", 13);
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  tc_input(&t, lit_s64(1, (int64_t[]){2}, (int64_t[]){2, 3}), false);
  CHECK_ERR(tc_run(&t), "must be a compile-time constant");
  tc_free(&t);
}

/* SpaceToDepth of x (1, 2, 2, 4) with x[c][h][w] = 8c + 4h + w, blocksize 2, into
 * (1, 8, 1, 2): output channel (c, bh, bw) under CRD, (bh, bw, c) under DCR, holding
 * x[c][bh][2*wo + bw] at column wo. */
static void test_space_to_depth_crd_orders_channel_before_block_offset(void) {
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i;
  const float crd[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
  const float dcr[16] = {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15};
  /* mode CRD at opset 28; DCR by default; before version 28 there is no mode. */
  const struct {
    int64_t opset;
    const char *mode;
    const float *want;
  } cases[] = {{28, "CRD", crd}, {28, NULL, dcr}, {28, "DCR", dcr}, {13, NULL, dcr}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tcase t;
    tc_init(&t, "SpaceToDepth", cases[i].opset);
    graph_node_set_attr_int(t.node, "blocksize", 2);
    if (cases[i].mode) graph_node_set_attr_string(t.node, "mode", cases[i].mode, strlen(cases[i].mode));
    tc_input(&t, lit_f32(4, (int64_t[]){1, 2, 2, 4}, x), false);
    RUN(&t);
    check_dims(t.out[0], 4, (int64_t[]){1, 8, 1, 2}, __LINE__);
    check_close(t.out[0], cases[i].want, 16, __LINE__);
    tc_free(&t);
  }
}

static void test_space_to_depth_refuses_unknown_mode(void) {
  float x[16] = {0};
  tcase t;
  tc_init(&t, "SpaceToDepth", 28);
  graph_node_set_attr_int(t.node, "blocksize", 2);
  graph_node_set_attr_string(t.node, "mode", "RDC", 3);
  tc_input(&t, lit_f32(4, (int64_t[]){1, 2, 2, 4}, x), false);
  CHECK_ERR(tc_run(&t), "node n (onnx.SpaceToDepth): mode 'RDC' is neither 'DCR' nor 'CRD'");
  tc_free(&t);
}

TEST_MAIN(TEST(test_registry), TEST(test_absent_inputs), TEST(test_add_broadcast), TEST(test_conv),
          TEST(test_conv_transpose), TEST(test_gemm), TEST(test_matmul_batch), TEST(test_pools),
          TEST(test_maxpool_indices), TEST(test_softmax), TEST(test_reshape), TEST(test_slice), TEST(test_gather),
          TEST(test_scatter), TEST(test_resize), TEST(test_reduce_and_argmax), TEST(test_topk_and_host),
          TEST(test_pad_modes), TEST(test_einsum), TEST(test_einsum_repeated_label_takes_diagonal), TEST(test_quantize_rank1), TEST(test_lpnorm_zero),
          TEST(test_space_to_depth_crd_orders_channel_before_block_offset),
          TEST(test_space_to_depth_refuses_unknown_mode), TEST(test_errors))
