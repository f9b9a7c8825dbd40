/* Unit tests for the cpu backend's oneDNN primitives (src/backends/cpu/cpu_dnnl.c).
 *
 * Each case is an HLO module whose entry root is the instruction under test (a dot, a
 * convolution, or a kOutput fusion). The root is compiled with cpu_dnnl_create, run on
 * random inputs and compared with the evaluator running the same module, which
 * accumulates in double and rounds once: an independent oracle. Each case runs twice
 * with different inputs so rebinding buffers (and per-execute weight reorders) is
 * covered. Constant operands get NULL buffers, which proves they were captured at
 * create time.
 *
 * Tolerance: inputs are uniform in [-1, 1), so for an output element that sums K
 * products, sum_k |a_k * b_k| <= K. oneDNN accumulates in f32 (any order, possibly
 * blocked), whose worst-case error is about K * 2^-24 * sum|a_k b_k|, but realistic
 * (random-sign) error grows like sqrt(K) * 2^-24 * sum|a_k b_k|; epilogue operands are
 * also in [-1, 1) and add at most one f32 rounding each. So per element we require
 * |dnnl - eval| <= 1e-5 * (1 + K), i.e. the brief's 1e-5 * (1 + sum|a_k b_k|) with the
 * sum replaced by its bound K, plus a global relative NMSE <= 1e-6. An indexing
 * mistake produces O(1) errors and fails both (test_compare_rejects shows that).
 *
 * The random sweeps (dim_labels / dimension-number permutations, windows, groups) may
 * meet configurations oneDNN has no optimized kernel for; those are declined and
 * skipped (DNNL_TEST_DEBUG=1 prints why), but a declined case must be declined by both
 * cpu_dnnl_supports and cpu_dnnl_create, and most cases must run. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_shared_constants.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

/* ------------------------------------------------------------------ helpers */

/* Whether GOT matches REF within the tolerance explained above. */
static bool close_enough(const float *got, const hlo_literal *ref, int64_t k, double *worst, double *nmse) {
  const float *r = ref->data;
  double tol = 1e-5 * (1.0 + (double)k), err2 = 0, ref2 = 0;
  bool ok = true;
  *worst = 0;
  for (int64_t i = 0; i < ref->n; i++) {
    double d = fabs((double)got[i] - (double)r[i]);
    if (!(d <= tol)) ok = false; /* NaN fails too */
    if (!(d <= *worst)) *worst = d;
    err2 += d * d;
    ref2 += (double)r[i] * r[i];
  }
  *nmse = ref2 > 0 ? err2 / ref2 : err2;
  return ok && *nmse <= 1e-6;
}

/* Runs the entry root through oneDNN and the evaluator; K is the number of products
 * summed per output element. IN_PLACE >= 0: the result is computed in the buffer of
 * that operand (a parameter), as when buffer assignment hands a kOutput fusion its
 * residual's block. */
static bool run_case_at(const char *what, const char *text, int64_t k, bool must_support, int in_place) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return false;
  const hlo_instr *root = m->entry->root;
  cpu_dnnl_prim *prim = NULL;
  kiln_status s = cpu_dnnl_create(root, in_place, &prim);
  CHECK(cpu_dnnl_supports(root) == (s == NULL));
  if (s) {
    if (must_support || kiln_status_code(s) != KILN_UNIMPLEMENTED)
      check_fail(__FILE__, __LINE__, what, kiln_status_message(s));
    if (getenv("DNNL_TEST_DEBUG")) printf("%s: %s\n", what, kiln_status_message(s));
    kiln_status_free(s);
    hlo_module_free(m);
    return false;
  }
  int n_args = m->entry->n_params;
  hlo_literal *args[8] = {NULL};
  void *operands[8] = {NULL};
  hlo_literal *out = NULL;
  CHECK(n_args <= 8 && root->n_operands <= 8);
  CHECK_OK(literal_create(&root->shape, &out));
  for (int round = 0; round < 2 && out; round++) {
    for (int i = 0; i < n_args; i++) {
      literal_free(args[i]);
      args[i] = NULL;
      CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
      literal_fill_pseudo_random(args[i], 1000u * (uint64_t)round + 17u * (uint64_t)i + 3u);
    }
    for (int i = 0; i < root->n_operands; i++) {
      const hlo_instr *o = root->operands[i];
      operands[i] = o->op == HLO_OP_PARAMETER ? args[o->parameter_number]->data : NULL;
    }
    float *got = out->data;
    for (int64_t i = 0; i < out->n; i++) got[i] = NAN; /* every element must be written */
    if (in_place >= 0) {
      memcpy(out->data, operands[in_place], (size_t)out->n * sizeof(float));
      operands[in_place] = out->data;
    }
    CHECK_OK(cpu_dnnl_execute(prim, operands, out->data));
    hlo_literal *ref = NULL;
    CHECK_OK(eval_module(m, args, n_args, &ref));
    if (ref) {
      double worst, nmse;
      if (!close_enough(got, ref, k, &worst, &nmse)) {
        char msg[256];
        snprintf(msg, sizeof msg, "round %d: max |err| %.3g (tolerance %.3g), NMSE %.3g", round, worst,
                 1e-5 * (1.0 + (double)k), nmse);
        check_fail(__FILE__, __LINE__, what, msg);
      }
    }
    literal_free(ref);
  }
  for (int i = 0; i < n_args; i++) literal_free(args[i]);
  literal_free(out);
  cpu_dnnl_destroy(prim);
  hlo_module_free(m);
  return true;
}

static bool run_case_opt(const char *what, const char *text, int64_t k, bool must_support) {
  return run_case_at(what, text, k, must_support, -1);
}

static void run_case(const char *what, const char *text, int64_t k) { run_case_opt(what, text, k, true); }

/* The root must be declined, and create must say why (UNIMPLEMENTED, naming it). */
static void check_unsupported(const char *what, const char *text) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const hlo_instr *root = m->entry->root;
  if (cpu_dnnl_supports(root)) check_fail(__FILE__, __LINE__, what, "cpu_dnnl_supports said yes");
  cpu_dnnl_prim *prim = NULL;
  kiln_status s = cpu_dnnl_create(root, -1, &prim);
  CHECK(s != NULL && prim == NULL);
  if (s) {
    CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED);
    CHECK(strstr(kiln_status_message(s), root->name) != NULL);
    kiln_status_free(s);
  }
  cpu_dnnl_destroy(prim);
  hlo_module_free(m);
}

/* ------------------------------------------------------------------ the comparison itself */

static void test_compare_rejects(void) {
  hlo_shape sh = shape_make(HLO_F32, 1, (int64_t[]){64});
  hlo_literal *ref = NULL;
  CHECK_OK(literal_create(&sh, &ref));
  if (!ref) return;
  literal_fill_pseudo_random(ref, 5);
  float got[64];
  memcpy(got, ref->data, sizeof got);
  double worst, nmse;
  CHECK(close_enough(got, ref, 100, &worst, &nmse));
  got[17] += 0.01f; /* one element off by far more than f32 rounding of 100 products */
  CHECK(!close_enough(got, ref, 100, &worst, &nmse));
  got[17] = NAN;
  CHECK(!close_enough(got, ref, 100, &worst, &nmse));
  literal_free(ref);
}

/* ------------------------------------------------------------------ dot */

static void test_matmul(void) {
  run_case("matmul",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] parameter(0)\n  b = f32[96,80] parameter(1)\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
           96);
}

static void test_matmul_batched(void) {
  run_case("batched",
           "HloModule m\nENTRY e {\n"
           "  a = f32[4,3,32,48] parameter(0)\n  b = f32[4,3,48,40] parameter(1)\n"
           "  ROOT d = f32[4,3,32,40] dot(a, b), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, "
           "lhs_contracting_dims={3}, rhs_contracting_dims={2}\n}\n",
           48);
  /* Batch dim in the middle of both operands: strided batch. */
  run_case("batch in the middle",
           "HloModule m\nENTRY e {\n"
           "  a = f32[32,4,48] parameter(0)\n  b = f32[48,4,40] parameter(1)\n"
           "  ROOT d = f32[4,32,40] dot(a, b), lhs_batch_dims={1}, rhs_batch_dims={1}, "
           "lhs_contracting_dims={2}, rhs_contracting_dims={0}\n}\n",
           48);
}

static void test_matmul_transposed(void) {
  run_case("transposed both",
           "HloModule m\nENTRY e {\n"
           "  a = f32[96,64] parameter(0)\n  b = f32[80,96] parameter(1)\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n}\n",
           96);
  run_case("transposed rhs",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] parameter(0)\n  b = f32[80,96] parameter(1)\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n",
           96);
}

static void test_matrix_vector(void) {
  run_case("matrix-vector",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] parameter(0)\n  b = f32[96] parameter(1)\n"
           "  ROOT d = f32[64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
           96);
  run_case("vector-matrix",
           "HloModule m\nENTRY e {\n"
           "  a = f32[96] parameter(0)\n  b = f32[96,80] parameter(1)\n"
           "  ROOT d = f32[80] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n",
           96);
  run_case("inner product",
           "HloModule m\nENTRY e {\n"
           "  a = f32[96] parameter(0)\n  b = f32[96] parameter(1)\n"
           "  ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n",
           96);
}

static void test_matmul_merged_dims(void) {
  run_case("two contracting dims",
           "HloModule m\nENTRY e {\n"
           "  a = f32[16,8,12] parameter(0)\n  b = f32[8,12,20] parameter(1)\n"
           "  ROOT d = f32[16,20] dot(a, b), lhs_contracting_dims={1,2}, "
           "rhs_contracting_dims={0,1}\n}\n",
           96);
  run_case("contracting dims listed inner first",
           "HloModule m\nENTRY e {\n"
           "  a = f32[16,8,12] parameter(0)\n  b = f32[8,12,20] parameter(1)\n"
           "  ROOT d = f32[16,20] dot(a, b), lhs_contracting_dims={2,1}, "
           "rhs_contracting_dims={1,0}\n}\n",
           96);
  run_case("two free dims each",
           "HloModule m\nENTRY e {\n"
           "  a = f32[4,5,24] parameter(0)\n  b = f32[24,6,7] parameter(1)\n"
           "  ROOT d = f32[4,5,6,7] dot(a, b), lhs_contracting_dims={2}, "
           "rhs_contracting_dims={0}\n}\n",
           24);
}

static void test_matmul_constant_weights(void) {
  run_case("constant rhs",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] parameter(0)\n  b = f32[96,80] constant({...})\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
           96);
  run_case("constant transposed rhs",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] parameter(0)\n  b = f32[80,96] constant({...})\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, "
           "rhs_contracting_dims={1}\n}\n",
           96);
  run_case("constant lhs",
           "HloModule m\nENTRY e {\n"
           "  a = f32[64,96] constant({...})\n  b = f32[96,80] parameter(0)\n"
           "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
           96);
}

/* bf16 x bf16 -> f32 (JAX's preferred_element_type=float32): oneDNN reads the bf16
 * operands as they are; the products of two bf16 values are exact in f32, so the f32
 * accumulation bound above holds unchanged. A CPU without bf16 kernels declines it
 * (only a reference implementation): skipped then, not failed. Constant bf16 weights
 * are declined (captured constants are f32), and so is a bf16 convolution. */
static void test_matmul_bf16_to_f32(void) {
  run_case_opt("bf16 matmul",
               "HloModule m\nENTRY e {\n"
               "  a = bf16[64,96] parameter(0)\n  b = bf16[96,80] parameter(1)\n"
               "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
               96, false);
  run_case_opt("bf16 batched, transposed rhs",
               "HloModule m\nENTRY e {\n"
               "  a = bf16[3,16,24] parameter(0)\n  b = bf16[3,20,24] parameter(1)\n"
               "  ROOT d = f32[3,16,20] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
               "lhs_contracting_dims={2}, rhs_contracting_dims={2}\n}\n",
               24, false);
  run_case_opt("bf16 dot + bias",
               "HloModule m\n"
               "fused {\n"
               "  p0 = bf16[64,96] parameter(0)\n  p1 = bf16[96,80] parameter(1)\n  p2 = f32[80] parameter(2)\n"
               "  d = f32[64,80] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
               "  b = f32[64,80] broadcast(p2), dimensions={1}\n"
               "  ROOT a = f32[64,80] add(d, b)\n}\n"
               "ENTRY e {\n"
               "  x = bf16[64,96] parameter(0)\n  w = bf16[96,80] parameter(1)\n  bias = f32[80] parameter(2)\n"
               "  ROOT f = f32[64,80] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
               96, false);
  check_unsupported("bf16 constant weights",
                    "HloModule m\nENTRY e {\n"
                    "  a = bf16[64,96] parameter(0)\n  b = bf16[96,80] constant({...})\n"
                    "  ROOT d = f32[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  check_unsupported("bf16 result",
                    "HloModule m\nENTRY e {\n"
                    "  a = bf16[64,96] parameter(0)\n  b = bf16[96,80] parameter(1)\n"
                    "  ROOT d = bf16[64,80] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  check_unsupported("bf16 convolution",
                    "HloModule m\nENTRY e {\n"
                    "  x = bf16[1,8,8,4] parameter(0)\n  k = bf16[3,3,4,8] parameter(1)\n"
                    "  ROOT c = f32[1,6,6,8] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n}\n");
}

/* ------------------------------------------------------------------ convolution */

static void test_conv_nchw(void) {
  run_case("conv NCHW",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,8,17,19] parameter(0)\n  w = f32[16,8,3,3] parameter(1)\n"
           "  ROOT c = f32[2,16,17,19] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=bf01_oi01->bf01\n}\n",
           8 * 9);
}

static void test_conv_nhwc(void) {
  run_case("conv NHWC",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,17,19,8] parameter(0)\n  w = f32[3,3,8,16] parameter(1)\n"
           "  ROOT c = f32[2,17,19,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f\n}\n",
           8 * 9);
}

static void test_conv_stride_pad(void) {
  /* H: (17 + 0 + 1 - 3) / 2 + 1 = 8; W: (19 + 1 + 2 - 3) / 2 + 1 = 10. */
  run_case("stride 2, asymmetric pad",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,17,19,8] parameter(0)\n  w = f32[3,3,8,16] parameter(1)\n"
           "  ROOT c = f32[2,8,10,16] convolution(x, w), window={size=3x3 stride=2x2 "
           "pad=0_1x1_2}, dim_labels=b01f_01io->b01f\n}\n",
           8 * 9);
}

static void test_conv_dilation(void) {
  run_case("rhs dilation",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,8,17,19] parameter(0)\n  w = f32[16,8,3,3] parameter(1)\n"
           "  ROOT c = f32[2,16,17,19] convolution(x, w), window={size=3x3 pad=2_2x2_2 rhs_dilate=2x2}, "
           "dim_labels=bf01_oi01->bf01\n}\n",
           8 * 9);
}

static void test_conv_depthwise(void) {
  run_case("depthwise, multiplier 2",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,12,12,8] parameter(0)\n  w = f32[3,3,1,16] parameter(1)\n"
           "  ROOT c = f32[2,12,12,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f, feature_group_count=8\n}\n",
           9);
  run_case("depthwise NCHW",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,16,12,12] parameter(0)\n  w = f32[16,1,3,3] parameter(1)\n"
           "  ROOT c = f32[2,16,12,12] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=bf01_oi01->bf01, feature_group_count=16\n}\n",
           9);
  /* EfficientNet's depthwise + bias + swish (the jit_dw kernel, prefer_jit_dw) and a
   * large relu6 one (likewise by its size) */
  run_case("depthwise NHWC + bias + swish",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[1,14,14,48] parameter(0)\n  p1 = f32[5,5,1,48] parameter(1)\n  p2 = f32[48] parameter(2)\n"
           "  c = f32[1,14,14,48] convolution(p0, p1), window={size=5x5 pad=2_2x2_2}, dim_labels=b01f_01io->b01f, "
           "feature_group_count=48\n"
           "  b = f32[1,14,14,48] broadcast(p2), dimensions={3}\n  a = f32[1,14,14,48] add(c, b)\n"
           "  l = f32[1,14,14,48] logistic(a)\n  ROOT s = f32[1,14,14,48] multiply(a, l)\n}\n"
           "ENTRY e {\n"
           "  x = f32[1,14,14,48] parameter(0)\n  w = f32[5,5,1,48] parameter(1)\n  bias = f32[48] parameter(2)\n"
           "  ROOT f = f32[1,14,14,48] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           25);
  run_case("large depthwise NHWC + relu6",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[1,64,64,16] parameter(0)\n  p1 = f32[3,3,1,16] parameter(1)\n"
           "  c = f32[1,64,64,16] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
           "feature_group_count=16\n"
           "  z = f32[] constant(0)\n  six = f32[] constant(6)\n"
           "  ROOT r = f32[1,64,64,16] clamp(z, c, six)\n}\n"
           "ENTRY e {\n"
           "  x = f32[1,64,64,16] parameter(0)\n  w = f32[3,3,1,16] parameter(1)\n"
           "  ROOT f = f32[1,64,64,16] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           9);
}

static void test_conv_grouped(void) {
  run_case("grouped",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,8,10,10] parameter(0)\n  w = f32[12,4,3,3] parameter(1)\n"
           "  ROOT c = f32[2,12,8,8] convolution(x, w), window={size=3x3}, "
           "dim_labels=bf01_oi01->bf01, feature_group_count=2\n}\n",
           4 * 9);
}

static void test_conv_1d_3d(void) {
  /* (30 + 2 + 1 - 5) / 2 + 1 = 15. */
  run_case("1-D",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,30,6] parameter(0)\n  w = f32[5,6,10] parameter(1)\n"
           "  ROOT c = f32[2,15,10] convolution(x, w), window={size=5 stride=2 pad=2_1}, "
           "dim_labels=b0f_0io->b0f\n}\n",
           5 * 6);
  run_case("3-D",
           "HloModule m\nENTRY e {\n"
           "  x = f32[1,4,6,6,6] parameter(0)\n  w = f32[8,4,3,3,3] parameter(1)\n"
           "  ROOT c = f32[1,8,4,4,4] convolution(x, w), window={size=3x3x3}, "
           "dim_labels=bf012_oi012->bf012\n}\n",
           4 * 27);
}

static void test_conv_constant_weights(void) {
  run_case("conv constant weights",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,17,19,8] parameter(0)\n  w = f32[3,3,8,16] constant({...})\n"
           "  ROOT c = f32[2,9,10,16] convolution(x, w), window={size=3x3 stride=2x2 "
           "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n",
           8 * 9);
  run_case("depthwise constant weights",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,16,12,12] parameter(0)\n  w = f32[16,1,3,3] constant({...})\n"
           "  ROOT c = f32[2,16,12,12] convolution(x, w), window={size=3x3 "
           "pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=16\n}\n",
           9);
}

/* Transposed convolutions (lhs dilation) and reversed windows run as oneDNN
 * deconvolutions with the kernel mirrored. out = (in-1)*L + 1 + pad_lo + pad_hi - (k-1)*d. */
static void test_conv_transposed(void) {
  run_case("lhs dilation 2, full padding",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,5,6,4] parameter(0)\n  w = f32[3,3,4,6] parameter(1)\n"
           "  ROOT c = f32[2,11,13,6] convolution(x, w), window={size=3x3 pad=2_2x2_2 "
           "lhs_dilate=2x2}, dim_labels=b01f_01io->b01f\n}\n",
           4 * 9);
  run_case("lhs dilation 2, asymmetric padding, NCHW",
           "HloModule m\nENTRY e {\n"
           "  x = f32[1,4,5,5] parameter(0)\n  w = f32[6,4,3,3] parameter(1)\n"
           "  ROOT c = f32[1,6,10,11] convolution(x, w), window={size=3x3 "
           "pad=1_2x2_2 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01\n}\n",
           4 * 9);
  run_case("lhs dilation 3 x 1, rhs dilation 2",
           "HloModule m\nENTRY e {\n"
           "  x = f32[1,4,4,3] parameter(0)\n  w = f32[2,3,3,5] parameter(1)\n"
           "  ROOT c = f32[1,11,4,5] convolution(x, w), window={size=2x3 "
           "pad=1_1x2_2 lhs_dilate=3x1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f\n}\n",
           3 * 6);
  run_case("reversed window",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,8,8,4] parameter(0)\n  w = f32[3,3,4,6] parameter(1)\n"
           "  ROOT c = f32[2,8,8,6] convolution(x, w), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x0}, "
           "dim_labels=b01f_01io->b01f\n}\n",
           4 * 9);
  run_case("lhs dilation with reversed window, grouped",
           "HloModule m\nENTRY e {\n"
           "  x = f32[1,4,5,5] parameter(0)\n  w = f32[6,2,3,3] parameter(1)\n"
           "  ROOT c = f32[1,6,11,11] convolution(x, w), window={size=3x3 "
           "pad=2_2x2_2 lhs_dilate=2x2 rhs_reversal=1x1}, "
           "dim_labels=bf01_oi01->bf01, feature_group_count=2\n}\n",
           2 * 9);
  run_case("1-D transposed, constant weights",
           "HloModule m\nENTRY e {\n"
           "  x = f32[2,7,3] parameter(0)\n  w = f32[4,3,5] constant({...})\n"
           "  ROOT c = f32[2,15,5] convolution(x, w), window={size=4 pad=2_3 "
           "lhs_dilate=2}, dim_labels=b0f_0io->b0f\n}\n",
           4 * 3);
  run_case("transposed, constant weights + bias",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[1,6,6,8] parameter(0)\n  p1 = f32[4,4,8,16] parameter(1)\n"
           "  p2 = f32[16] parameter(2)\n"
           "  c = f32[1,12,12,16] convolution(p0, p1), window={size=4x4 pad=2_2x2_2 "
           "lhs_dilate=2x2}, dim_labels=b01f_01io->b01f\n"
           "  b = f32[1,12,12,16] broadcast(p2), dimensions={3}\n"
           "  ROOT a = f32[1,12,12,16] add(c, b)\n}\n"
           "ENTRY e {\n"
           "  x = f32[1,6,6,8] parameter(0)\n  w = f32[4,4,8,16] constant({...})\n"
           "  bias = f32[16] parameter(1)\n"
           "  ROOT f = f32[1,12,12,16] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           8 * 16);
}

/* ------------------------------------------------------------------ kOutput fusions */

static void test_fusion_conv_bias_relu(void) {
  run_case("conv + bias + relu",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,8,8,16] parameter(0)\n  p1 = f32[3,3,16,32] parameter(1)\n"
           "  p2 = f32[32] parameter(2)\n"
           "  c = f32[2,8,8,32] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f\n"
           "  b = f32[2,8,8,32] broadcast(p2), dimensions={3}\n"
           "  a = f32[2,8,8,32] add(c, b)\n"
           "  z = f32[] constant(0)\n  zb = f32[2,8,8,32] broadcast(z), dimensions={}\n"
           "  ROOT r = f32[2,8,8,32] maximum(a, zb)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,8,8,16] parameter(0)\n  w = f32[3,3,16,32] parameter(1)\n"
           "  bias = f32[32] parameter(2)\n"
           "  ROOT f = f32[2,8,8,32] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           16 * 9);
  /* NCHW with constant weights and a constant bias: everything but x pre-captured. */
  run_case("NCHW conv + constant bias + relu",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,16,9,9] parameter(0)\n  p1 = f32[32,16,3,3] parameter(1)\n"
           "  p2 = f32[32] parameter(2)\n"
           "  c = f32[2,32,9,9] convolution(p0, p1), window={size=3x3 "
           "pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
           "  b = f32[2,32,9,9] broadcast(p2), dimensions={1}\n"
           "  a = f32[2,32,9,9] add(b, c)\n"
           "  z = f32[] constant(0)\n  zb = f32[2,32,9,9] broadcast(z), "
           "dimensions={}\n"
           "  ROOT r = f32[2,32,9,9] maximum(zb, a)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,16,9,9] parameter(0)\n  w = f32[32,16,3,3] constant({...})\n"
           "  bias = f32[32] constant({...})\n"
           "  ROOT f = f32[2,32,9,9] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           16 * 9);
}

/* EfficientNet's swish after the bias add, MobileNetV3's hardswish, ViT's GELU and a
 * logistic gate: oneDNN eltwise post-ops
 * (their own exp, so within the tolerance above rather than bitwise). */
static void test_fusion_swish_logistic(void) {
  run_case("conv + bias + swish",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,7,7,16] parameter(0)\n  p1 = f32[3,3,16,24] parameter(1)\n"
           "  p2 = f32[24] parameter(2)\n"
           "  c = f32[2,7,7,24] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=b01f_01io->b01f\n"
           "  b = f32[2,7,7,24] broadcast(p2), dimensions={3}\n"
           "  a = f32[2,7,7,24] add(c, b)\n"
           "  l = f32[2,7,7,24] logistic(a)\n"
           "  ROOT r = f32[2,7,7,24] multiply(l, a)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,7,7,16] parameter(0)\n  w = f32[3,3,16,24] parameter(1)\n"
           "  bias = f32[24] parameter(2)\n"
           "  ROOT f = f32[2,7,7,24] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           16 * 9);
  /* MobileNetV3's hardswish as PyTorch's HardSwish lowers: x * clamp(x / 6 + 0.5, 0, 1) */
  run_case("conv + bias + hardswish",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,6,6,8] parameter(0)\n  p1 = f32[1,1,8,16] parameter(1)\n"
           "  p2 = f32[16] parameter(2)\n"
           "  c = f32[2,6,6,16] convolution(p0, p1), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
           "  b = f32[2,6,6,16] broadcast(p2), dimensions={3}\n"
           "  a = f32[2,6,6,16] add(c, b)\n"
           "  k6 = f32[] constant(0.166666672)\n  k6b = f32[2,6,6,16] broadcast(k6), dimensions={}\n"
           "  h = f32[] constant(0.5)\n  hb = f32[2,6,6,16] broadcast(h), dimensions={}\n"
           "  one = f32[] constant(1)\n  oneb = f32[2,6,6,16] broadcast(one), dimensions={}\n"
           "  z = f32[] constant(0)\n  zb = f32[2,6,6,16] broadcast(z), dimensions={}\n"
           "  s = f32[2,6,6,16] multiply(a, k6b)\n  t = f32[2,6,6,16] add(s, hb)\n"
           "  mn = f32[2,6,6,16] minimum(t, oneb)\n  mx = f32[2,6,6,16] maximum(mn, zb)\n"
           "  ROOT r = f32[2,6,6,16] multiply(a, mx)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,6,6,8] parameter(0)\n  w = f32[1,1,8,16] parameter(1)\n"
           "  bias = f32[16] parameter(2)\n"
           "  ROOT f = f32[2,6,6,16] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           8);
  /* ViT's GELU (erf form) after the bias add */
  run_case("dot + bias + gelu",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[6,40] parameter(0)\n  p1 = f32[40,24] parameter(1)\n  p2 = f32[24] parameter(2)\n"
           "  d = f32[6,24] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "  b = f32[6,24] broadcast(p2), dimensions={1}\n  a = f32[6,24] add(d, b)\n"
           "  r2 = f32[] constant(1.41421354)\n  r2b = f32[6,24] broadcast(r2), dimensions={}\n"
           "  one = f32[] constant(1)\n  oneb = f32[6,24] broadcast(one), dimensions={}\n"
           "  h = f32[] constant(0.5)\n  hb = f32[6,24] broadcast(h), dimensions={}\n"
           "  q = f32[6,24] divide(a, r2b)\n  e = f32[6,24] erf(q)\n  e1 = f32[6,24] add(e, oneb)\n"
           "  m1 = f32[6,24] multiply(a, e1)\n"
           "  ROOT g = f32[6,24] multiply(m1, hb)\n}\n"
           "ENTRY e {\n"
           "  x = f32[6,40] parameter(0)\n  w = f32[40,24] parameter(1)\n  bias = f32[24] parameter(2)\n"
           "  ROOT f = f32[6,24] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           40);
  run_case("dot + logistic",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[5,32] parameter(0)\n  p1 = f32[32,12] parameter(1)\n"
           "  d = f32[5,12] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "  ROOT r = f32[5,12] logistic(d)\n}\n"
           "ENTRY e {\n"
           "  x = f32[5,32] parameter(0)\n  w = f32[32,12] parameter(1)\n"
           "  ROOT f = f32[5,12] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           32);
}

static void test_fusion_dot_bias(void) {
  run_case("dot + bias",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[64,96] parameter(0)\n  p1 = f32[96,80] parameter(1)\n  p2 = f32[80] parameter(2)\n"
           "  d = f32[64,80] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "  b = f32[64,80] broadcast(p2), dimensions={1}\n"
           "  ROOT a = f32[64,80] add(d, b)\n}\n"
           "ENTRY e {\n"
           "  x = f32[64,96] parameter(0)\n  w = f32[96,80] constant({...})\n  bias = f32[80] parameter(1)\n"
           "  ROOT f = f32[64,80] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           96);
}

/* A batched dot, a residual add and a scale: (x . w + r) * 0.5. */
static const char *batched_dot_residual =
    "HloModule m\n"
    "fused {\n"
    "  p0 = f32[3,16,24] parameter(0)\n  p1 = f32[3,24,20] parameter(1)\n"
    "  p2 = f32[3,16,20] parameter(2)\n"
    "  d = f32[3,16,20] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, "
    "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
    "  a = f32[3,16,20] add(d, p2)\n"
    "  s = f32[] constant(0.5)\n  sb = f32[3,16,20] broadcast(s), dimensions={}\n"
    "  ROOT m = f32[3,16,20] multiply(sb, a)\n}\n"
    "ENTRY e {\n"
    "  x = f32[3,16,24] parameter(0)\n  w = f32[3,24,20] parameter(1)\n"
    "  r = f32[3,16,20] parameter(2)\n"
    "  ROOT f = f32[3,16,20] fusion(x, w, r), kind=kOutput, calls=fused\n}\n";

static void test_fusion_dot_residual(void) {
  run_case("batched dot + residual + scale", batched_dot_residual, 24);
  run_case("dot, subtract from residual, minimum",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[32,40] parameter(0)\n  p1 = f32[40,24] parameter(1)\n"
           "  p2 = f32[32,24] parameter(2)\n  p3 = f32[24] parameter(3)\n"
           "  d = f32[32,24] dot(p0, p1), lhs_contracting_dims={1}, "
           "rhs_contracting_dims={0}\n"
           "  s = f32[32,24] subtract(p2, d)\n"
           "  b = f32[32,24] broadcast(p3), dimensions={1}\n"
           "  ROOT m = f32[32,24] minimum(s, b)\n}\n"
           "ENTRY e {\n"
           "  x = f32[32,40] parameter(0)\n  w = f32[40,24] parameter(1)\n"
           "  r = f32[32,24] parameter(2)\n  v = f32[24] parameter(3)\n"
           "  ROOT f = f32[32,24] fusion(x, w, r, v), kind=kOutput, calls=fused\n}\n",
           40);
}

/* Results computed in the residual's buffer: ResNet's conv + bias + residual + relu and
 * a dot + residual + scale, where the residual add becomes oneDNN's sum post-op; a
 * dot subtracted from the residual (a negation, then the sum). A prim made for
 * in-place execution refuses any other result buffer. */
static void test_fusion_residual_in_place(void) {
  static const char *conv =
      "HloModule m\n"
      "fused {\n"
      "  p0 = f32[2,9,9,16] parameter(0)\n  p1 = f32[1,1,16,32] parameter(1)\n"
      "  p2 = f32[32] parameter(2)\n  p3 = f32[2,9,9,32] parameter(3)\n"
      "  c = f32[2,9,9,32] convolution(p0, p1), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
      "  b = f32[2,9,9,32] broadcast(p2), dimensions={3}\n  a = f32[2,9,9,32] add(c, b)\n"
      "  r = f32[2,9,9,32] add(a, p3)\n"
      "  z = f32[] constant(0)\n  zb = f32[2,9,9,32] broadcast(z), dimensions={}\n"
      "  ROOT m = f32[2,9,9,32] maximum(r, zb)\n}\n"
      "ENTRY e {\n"
      "  x = f32[2,9,9,16] parameter(0)\n  w = f32[1,1,16,32] parameter(1)\n"
      "  bias = f32[32] parameter(2)\n  res = f32[2,9,9,32] parameter(3)\n"
      "  ROOT f = f32[2,9,9,32] fusion(x, w, bias, res), kind=kOutput, calls=fused\n}\n";
  run_case_at("conv + bias + residual + relu, in place", conv, 16, true, 3);
  run_case_at("batched dot + residual + scale, in place", batched_dot_residual, 24, true, 2);
  run_case_at("dot subtracted from the residual, in place",
              "HloModule m\n"
              "fused {\n"
              "  p0 = f32[32,40] parameter(0)\n  p1 = f32[40,24] parameter(1)\n  p2 = f32[32,24] parameter(2)\n"
              "  d = f32[32,24] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
              "  ROOT s = f32[32,24] subtract(p2, d)\n}\n"
              "ENTRY e {\n"
              "  x = f32[32,40] parameter(0)\n  w = f32[40,24] parameter(1)\n  r = f32[32,24] parameter(2)\n"
              "  ROOT f = f32[32,24] fusion(x, w, r), kind=kOutput, calls=fused\n}\n",
              40, true, 2);
  hlo_module *m = check_parse_hlo(conv);
  cpu_dnnl_prim *prim = NULL;
  hlo_literal *lits[5] = {NULL};
  void *bufs[4];
  for (int i = 0; i < 4; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &lits[i]));
    literal_fill_pseudo_random(lits[i], 5u + (uint64_t)i);
    bufs[i] = lits[i]->data;
  }
  CHECK_OK(literal_create(&m->entry->root->shape, &lits[4]));
  CHECK_OK(cpu_dnnl_create(m->entry->root, 3, &prim));
  if (prim) {
    /* A result buffer apart from the residual (an output the run writes straight into
     * the caller's literal) gets the residual copied in first: the same values as in
     * place, and the residual left as it was. */
    hlo_literal *res = literal_clone(lits[3]);
    CHECK_OK(cpu_dnnl_execute(prim, bufs, lits[4]->data));
    CHECK(literal_equal(lits[3], res));
    CHECK_OK(cpu_dnnl_execute(prim, bufs, bufs[3]));
    CHECK(literal_equal(lits[3], lits[4]));
    CHECK(!literal_equal(lits[3], res));
    /* One that overlaps the residual only in part cannot be fixed up. */
    CHECK_ERR(cpu_dnnl_execute(prim, bufs, (char *)bufs[3] + 64), "must be computed in operand 3's buffer");
    literal_free(res);
  }
  cpu_dnnl_destroy(prim);
  for (int i = 0; i < 5; i++) literal_free(lits[i]);
  hlo_module_free(m);
}

static void test_fusion_clamp(void) {
  run_case("dot + clamp 0..6",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[64,96] parameter(0)\n  p1 = f32[96,80] parameter(1)\n"
           "  d = f32[64,80] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "  lo = f32[] constant(0)\n  lob = f32[64,80] broadcast(lo), dimensions={}\n"
           "  hi = f32[] constant(6)\n  hib = f32[64,80] broadcast(hi), dimensions={}\n"
           "  ROOT c = f32[64,80] clamp(lob, d, hib)\n}\n"
           "ENTRY e {\n"
           "  x = f32[64,96] parameter(0)\n  w = f32[96,80] parameter(1)\n"
           "  ROOT f = f32[64,80] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           96);
  run_case("conv + bias + clamp(-0.5, 0.5)",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[1,10,10,8] parameter(0)\n  p1 = f32[3,3,8,8] parameter(1)\n"
           "  p2 = f32[8] parameter(2)\n"
           "  c = f32[1,10,10,8] convolution(p0, p1), window={size=3x3 "
           "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
           "  b = f32[1,10,10,8] broadcast(p2), dimensions={3}\n"
           "  a = f32[1,10,10,8] add(c, b)\n"
           "  lo = f32[] constant(-0.5)\n  hi = f32[] constant(0.5)\n"
           "  ROOT r = f32[1,10,10,8] clamp(lo, a, hi)\n}\n"
           "ENTRY e {\n"
           "  x = f32[1,10,10,8] parameter(0)\n  w = f32[3,3,8,8] parameter(1)\n"
           "  bias = f32[8] parameter(2)\n"
           "  ROOT f = f32[1,10,10,8] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           8 * 9);
  /* MobileNet's relu6 as the fusion pass builds it: maximum then minimum (one clip). */
  run_case("1x1 conv + maximum 0 + minimum 6",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[1,8,8,4] parameter(0)\n  p1 = f32[1,1,4,4] parameter(1)\n"
           "  c = f32[1,8,8,4] convolution(p0, p1), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
           "  z = f32[] constant(0)\n  zb = f32[1,8,8,4] broadcast(z), dimensions={}\n"
           "  s = f32[] constant(0.25)\n  sb = f32[1,8,8,4] broadcast(s), dimensions={}\n"
           "  mx = f32[1,8,8,4] maximum(c, zb)\n"
           "  ROOT mn = f32[1,8,8,4] minimum(mx, sb)\n}\n"
           "ENTRY e {\n"
           "  x = f32[1,8,8,4] parameter(0)\n  w = f32[1,1,4,4] parameter(1)\n"
           "  ROOT f = f32[1,8,8,4] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           4);
}

/* Hardsigmoid (x + 3, clamp 0..6, times 1/6) after a bias: two scalar affine steps and
 * a clip. oneDNN 2.6's jit post-op injector keeps one eltwise injector per algorithm,
 * so a second linear (or clip) silently ran with the first one's parameters: the
 * result came out as clip(x + 3, 0, 6) + 3 (CenterNet, MobileNetV3). */
static void test_fusion_repeated_eltwise(void) {
  static const char *const cores[][3] = {
      {"1x1 conv", "f32[1,8,8,16]", "c = f32[1,8,8,16] convolution(p0, p1), window={size=1x1}, "
                                    "dim_labels=b01f_01io->b01f"},
      {"3x3 conv", "f32[1,8,8,16]", "c = f32[1,8,8,16] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
                                    "dim_labels=b01f_01io->b01f"},
      {"dot", "f32[64,16]", "c = f32[64,16] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"},
  };
  static const char *const operands[][3] = {
      {"f32[1,8,8,16]", "f32[1,1,16,16]", "3"},
      {"f32[1,8,8,16]", "f32[3,3,16,16]", "3"},
      {"f32[64,16]", "f32[16,16]", "1"},
  };
  static const int64_t ks[] = {16, 16 * 9, 16};
  for (int i = 0; i < 3; i++) {
    const char *rs = cores[i][1], *bias_dim = operands[i][2];
    char text[2048], what[96];
    /* bias, +3, clamp(0, 6), *1/6, then 3 - y, minimum 0.75 and clamp(-1, 0.75): four
     * scalar affine steps and three clips in one chain. */
    snprintf(text, sizeof text,
             "HloModule m\n"
             "fused {\n"
             "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = f32[16] parameter(2)\n"
             "  %s\n"
             "  b = %s broadcast(p2), dimensions={%s}\n  a = %s add(c, b)\n"
             "  three = f32[] constant(3)\n  t = %s broadcast(three), dimensions={}\n"
             "  a3 = %s add(a, t)\n"
             "  z = f32[] constant(0)\n  zb = %s broadcast(z), dimensions={}\n"
             "  six = f32[] constant(6)\n  sb = %s broadcast(six), dimensions={}\n"
             "  cl = %s clamp(zb, a3, sb)\n"
             "  sixth = f32[] constant(0.166666672)\n  sx = %s broadcast(sixth), dimensions={}\n"
             "  m = %s multiply(sx, cl)\n"
             "  s = %s subtract(t, m)\n"
             "  h = f32[] constant(0.75)\n  hb = %s broadcast(h), dimensions={}\n"
             "  mn = %s minimum(s, hb)\n"
             "  n = f32[] constant(-1)\n  nb = %s broadcast(n), dimensions={}\n"
             "  ROOT r = %s clamp(nb, mn, hb)\n}\n"
             "ENTRY e {\n"
             "  x = %s parameter(0)\n  w = %s parameter(1)\n  bias = f32[16] parameter(2)\n"
             "  ROOT f = %s fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
             operands[i][0], operands[i][1], cores[i][2], rs, bias_dim, rs, rs, rs, rs, rs, rs, rs, rs, rs, rs, rs,
             rs, rs, operands[i][0], operands[i][1], rs);
    snprintf(what, sizeof what, "%s + bias + hardsigmoid + more affine/clip steps", cores[i][0]);
    run_case(what, text, ks[i]);
  }
}

static void test_unusual_layouts(void) {
  /* Batch dims merge in the lhs but not in the rhs (listed in the other order). */
  run_case("unmergeable batch dims",
           "HloModule m\nENTRY e {\n"
           "  a = f32[2,3,8,5] parameter(0)\n  b = f32[3,2,5,4] parameter(1)\n"
           "  ROOT d = f32[2,3,8,4] dot(a, b), lhs_batch_dims={0,1}, rhs_batch_dims={1,0}, "
           "lhs_contracting_dims={3}, rhs_contracting_dims={2}\n}\n",
           5);
  run_case("conv f01b_i01o->01fb",
           "HloModule m\nENTRY e {\n"
           "  x = f32[8,9,9,2] parameter(0)\n  w = f32[8,3,3,16] parameter(1)\n"
           "  ROOT c = f32[9,9,16,2] convolution(x, w), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=f01b_i01o->01fb\n}\n",
           8 * 9);
}

static void test_fusion_more(void) {
  run_case("dot / constant (a true division post-op)",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[8,8] parameter(0)\n  p1 = f32[8,8] parameter(1)\n"
           "  d = f32[8,8] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "  k = f32[] constant(3)\n  kb = f32[8,8] broadcast(k), dimensions={}\n"
           "  ROOT q = f32[8,8] divide(d, kb)\n}\n"
           "ENTRY e {\n"
           "  x = f32[8,8] parameter(0)\n  w = f32[8,8] parameter(1)\n"
           "  ROOT f = f32[8,8] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           8);
  run_case("1-D conv + bias",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,30,6] parameter(0)\n  p1 = f32[5,6,10] parameter(1)\n  p2 = f32[10] parameter(2)\n"
           "  c = f32[2,15,10] convolution(p0, p1), window={size=5 stride=2 pad=2_1}, "
           "dim_labels=b0f_0io->b0f\n"
           "  b = f32[2,15,10] broadcast(p2), dimensions={2}\n"
           "  ROOT a = f32[2,15,10] add(c, b)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,30,6] parameter(0)\n  w = f32[5,6,10] parameter(1)\n  bias = f32[10] parameter(2)\n"
           "  ROOT f = f32[2,15,10] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n",
           5 * 6);
  run_case("NCHW conv + residual",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[2,16,9,9] parameter(0)\n  p1 = f32[16,16,3,3] parameter(1)\n"
           "  c = f32[2,16,9,9] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
           "dim_labels=bf01_oi01->bf01\n"
           "  ROOT a = f32[2,16,9,9] add(c, p0)\n}\n"
           "ENTRY e {\n"
           "  x = f32[2,16,9,9] parameter(0)\n  w = f32[16,16,3,3] parameter(1)\n"
           "  ROOT f = f32[2,16,9,9] fusion(x, w), kind=kOutput, calls=fused\n}\n",
           16 * 9);
  run_case("dot, scalar parameter clamp bounds",
           "HloModule m\n"
           "fused {\n"
           "  p0 = f32[16,32] parameter(0)\n  p1 = f32[32,24] parameter(1)\n"
           "  p2 = f32[] parameter(2)\n  p3 = f32[] parameter(3)\n"
           "  d = f32[16,24] dot(p0, p1), lhs_contracting_dims={1}, "
           "rhs_contracting_dims={0}\n"
           "  ROOT c = f32[16,24] clamp(p2, d, p3)\n}\n"
           "ENTRY e {\n"
           "  x = f32[16,32] parameter(0)\n  w = f32[32,24] parameter(1)\n"
           "  lo = f32[] parameter(2)\n  hi = f32[] parameter(3)\n"
           "  ROOT f = f32[16,24] fusion(x, w, lo, hi), kind=kOutput, calls=fused\n}\n",
           32);
}

/* ------------------------------------------------------------------ random sweeps */

static uint64_t rng_state; /* each sweep seeds it, so sweeps are independent */
static int rnd(int lo, int hi) { /* inclusive */
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return lo + (int)((rng_state >> 33) % (uint64_t)(hi - lo + 1));
}
static void shuffle(char *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = rnd(0, i);
    char t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* Prints dims of a tensor whose dim i has role labels[i], sizes looked up by role. */
static void shape_text(char *buf, size_t cap, const char *labels, int n, const char *roles, const int64_t *sizes) {
  size_t len = (size_t)snprintf(buf, cap, "f32[");
  for (int i = 0; i < n; i++) {
    int64_t sz = sizes[strchr(roles, labels[i]) - roles];
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)sz);
  }
  snprintf(buf + len, cap - len, "]");
}

/* Appends " key=v0xv1" (or "lo_hi" pairs when HI is given) to a window={...} text. */
static void append_window_field(char *w, size_t cap, const char *key, int n, const int64_t *v, const int64_t *hi) {
  size_t len = strlen(w);
  len += (size_t)snprintf(w + len, cap - len, "%s%s=", len ? " " : "", key);
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(w + len, cap - len, "%s%lld", i ? "x" : "", (long long)v[i]);
    if (hi) len += (size_t)snprintf(w + len, cap - len, "_%lld", (long long)hi[i]);
  }
}

/* Convolutions with random dim_labels, window and grouping. Not every configuration
 * has an optimized oneDNN kernel; declined ones are skipped but most must run. */
static void test_random_convs(void) {
  int ran = 0, total = 60;
  rng_state = 0x9e3779b97f4a7c15u;
  for (int t = 0; t < total; t++) {
    int ns = rnd(1, 2), n = rnd(1, 2), g = rnd(0, 2), cg = rnd(1, 4), og = rnd(1, 4);
    int groups = g == 0 ? 1 : g == 1 ? 2 : rnd(3, 6);
    if (g == 2) cg = 1; /* depthwise */
    int64_t c = (int64_t)groups * cg, o = (int64_t)groups * og;
    /* One in three is a transposed convolution (lhs dilation, window stride 1, padding
     * within the dilated kernel), some with reversed windows. */
    bool transposed = rnd(0, 2) == 0;
    int64_t in[2], k[2], st[2], dl[2], ld[2], rev[2], pl[2], ph[2], out[2];
    char window[256] = "";
    for (int s = 0; s < ns; s++) {
      k[s] = rnd(1, 4), st[s] = transposed ? 1 : rnd(1, 3), dl[s] = rnd(1, 2), ld[s] = transposed ? rnd(1, 3) : 1;
      rev[s] = transposed ? rnd(0, 1) : 0;
      int64_t extent = (k[s] - 1) * dl[s];
      pl[s] = rnd(0, 2), ph[s] = rnd(0, 2);
      if (transposed && pl[s] > extent) pl[s] = extent;
      if (transposed && ph[s] > extent) ph[s] = extent;
      in[s] = rnd(1, 8) + extent; /* at least one window fits */
      out[s] = ((in[s] - 1) * ld[s] + 1 + pl[s] + ph[s] - (extent + 1)) / st[s] + 1;
    }
    append_window_field(window, sizeof window, "size", ns, k, NULL);
    append_window_field(window, sizeof window, "stride", ns, st, NULL);
    append_window_field(window, sizeof window, "pad", ns, pl, ph);
    append_window_field(window, sizeof window, "rhs_dilate", ns, dl, NULL);
    append_window_field(window, sizeof window, "lhs_dilate", ns, ld, NULL);
    append_window_field(window, sizeof window, "rhs_reversal", ns, rev, NULL);
    char xl[5] = "bf01", kl[5] = "io01", ol[5] = "bf01";
    xl[ns + 2] = kl[ns + 2] = ol[ns + 2] = 0;
    shuffle(xl, ns + 2);
    shuffle(kl, ns + 2);
    shuffle(ol, ns + 2);
    int64_t xs[4] = {n, c, in[0], ns > 1 ? in[1] : 0}, ks[4] = {cg, o, k[0], ns > 1 ? k[1] : 0};
    int64_t os[4] = {n, o, out[0], ns > 1 ? out[1] : 0};
    char xt[64], kt[64], ot[64], text[1024], what[400];
    shape_text(xt, sizeof xt, xl, ns + 2, "bf01", xs);
    shape_text(kt, sizeof kt, kl, ns + 2, "io01", ks);
    shape_text(ot, sizeof ot, ol, ns + 2, "bf01", os);
    snprintf(text, sizeof text,
             "HloModule m\nENTRY e {\n  x = %s parameter(0)\n  w = %s parameter(1)\n"
             "  ROOT c = %s convolution(x, w), window={%s}, dim_labels=%s_%s->%s, feature_group_count=%d\n}\n",
             xt, kt, ot, window, xl, kl, ol, groups);
    snprintf(what, sizeof what, "random conv %d: %s_%s->%s groups %d window %s", t, xl, kl, ol, groups, window);
    if (run_case_opt(what, text, cg * k[0] * (ns > 1 ? k[1] : 1), false)) ran++;
  }
  printf("random convolutions: %d of %d taken by oneDNN\n", ran, total);
  CHECK(ran >= total * 3 / 4);
}

/* Dots with random dimension placement; unmergeable ones are declined. */
static void test_random_dots(void) {
  int ran = 0, total = 60;
  rng_state = 0x2545f4914f6cdd1du;
  for (int t = 0; t < total; t++) {
    int nb = rnd(0, 2), nlf = rnd(0, 2), nrf = rnd(0, 2), nc = rnd(1, 2);
    int64_t bsz[2], lfs[2], rfs[2], csz[2];
    for (int i = 0; i < 2; i++) bsz[i] = rnd(1, 4), lfs[i] = rnd(1, 9), rfs[i] = rnd(1, 9), csz[i] = rnd(1, 12);
    /* Role letters: B,b batch; M,m lhs free; N,n rhs free; K,k contracting. */
    char lr[8] = {0}, rr[8] = {0};
    int ln = 0, rn = 0;
    for (int i = 0; i < nb; i++) lr[ln++] = "Bb"[i], rr[rn++] = "Bb"[i];
    for (int i = 0; i < nlf; i++) lr[ln++] = "Mm"[i];
    for (int i = 0; i < nrf; i++) rr[rn++] = "Nn"[i];
    for (int i = 0; i < nc; i++) lr[ln++] = "Kk"[i], rr[rn++] = "Kk"[i];
    if (rnd(0, 2)) shuffle(lr, ln);
    if (rnd(0, 2)) shuffle(rr, rn);
    /* Free dims keep their relative order in the result; sort them back in place. */
    const char *roles = "BbMmNnKk";
    int64_t sizes[8] = {bsz[0], bsz[1], lfs[0], lfs[1], rfs[0], rfs[1], csz[0], csz[1]};
    char lt[64], rt[64], ot[64], text[1024], dn[256], what[64], orole[8] = {0};
    int on = 0;
    for (int i = 0; i < nb; i++) orole[on++] = "Bb"[i];
    for (int i = 0; i < ln; i++)
      if (lr[i] == 'M' || lr[i] == 'm') orole[on++] = lr[i];
    for (int i = 0; i < rn; i++)
      if (rr[i] == 'N' || rr[i] == 'n') orole[on++] = rr[i];
    shape_text(lt, sizeof lt, lr, ln, roles, sizes);
    shape_text(rt, sizeof rt, rr, rn, roles, sizes);
    shape_text(ot, sizeof ot, orole, on, roles, sizes);
    char lb[32] = "", rb[32] = "", lc[32] = "", rc[32] = "", part[8];
    for (int i = 0; i < nb; i++) {
      snprintf(part, sizeof part, "%s%d", i ? "," : "", (int)(strchr(lr, "Bb"[i]) - lr)), strcat(lb, part);
      snprintf(part, sizeof part, "%s%d", i ? "," : "", (int)(strchr(rr, "Bb"[i]) - rr)), strcat(rb, part);
    }
    for (int i = 0; i < nc; i++) {
      snprintf(part, sizeof part, "%s%d", i ? "," : "", (int)(strchr(lr, "Kk"[i]) - lr)), strcat(lc, part);
      snprintf(part, sizeof part, "%s%d", i ? "," : "", (int)(strchr(rr, "Kk"[i]) - rr)), strcat(rc, part);
    }
    snprintf(dn, sizeof dn,
             "lhs_batch_dims={%s}, rhs_batch_dims={%s}, lhs_contracting_dims={%s}, rhs_contracting_dims={%s}", lb, rb,
             lc, rc);
    snprintf(text, sizeof text,
             "HloModule m\nENTRY e {\n  a = %s parameter(0)\n  b = %s parameter(1)\n  ROOT d = %s dot(a, b), %s\n}\n",
             lt, rt, ot, dn);
    snprintf(what, sizeof what, "random dot %d: %s x %s", t, lr, rr);
    if (run_case_opt(what, text, csz[0] * (nc > 1 ? csz[1] : 1), false)) ran++;
  }
  printf("random dots: %d of %d taken by oneDNN\n", ran, total);
  CHECK(ran >= total / 3);
}

/* Distinct prims run concurrently from two threads; each result is checked after. */
typedef struct thread_job {
  cpu_dnnl_prim *prim;
  void *operands[2];
  float *out;
  kiln_status status;
} thread_job;

static void *thread_run(void *arg) {
  thread_job *j = arg;
  for (int i = 0; i < 20 && !j->status; i++) j->status = cpu_dnnl_execute(j->prim, j->operands, j->out);
  return NULL;
}

static void test_concurrent_prims(void) {
  static const char *texts[2] = {
      "HloModule m\nENTRY e {\n  x = f32[2,12,12,16] parameter(0)\n  w = f32[3,3,16,16] parameter(1)\n"
      "  ROOT c = f32[2,12,12,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n",
      "HloModule m\nENTRY e {\n  a = f32[48,64] parameter(0)\n  b = f32[64,40] parameter(1)\n"
      "  ROOT d = f32[48,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"};
  static const int64_t ks[2] = {16 * 9, 64};
  hlo_module *m[2] = {NULL, NULL};
  hlo_literal *args[2][2] = {{NULL}}, *out[2] = {NULL};
  thread_job jobs[2];
  memset(jobs, 0, sizeof jobs);
  for (int t = 0; t < 2; t++) {
    m[t] = check_parse_hlo(texts[t]);
    if (!m[t]) goto done;
    CHECK_OK(cpu_dnnl_create(m[t]->entry->root, -1, &jobs[t].prim));
    if (!jobs[t].prim) goto done;
    for (int i = 0; i < 2; i++) {
      CHECK_OK(literal_create(&m[t]->entry->params[i]->shape, &args[t][i]));
      literal_fill_pseudo_random(args[t][i], (uint64_t)(7 * t + i + 1));
      jobs[t].operands[i] = args[t][i]->data;
    }
    CHECK_OK(literal_create(&m[t]->entry->root->shape, &out[t]));
    jobs[t].out = out[t]->data;
  }
  pthread_t th[2];
  for (int t = 0; t < 2; t++) CHECK(pthread_create(&th[t], NULL, thread_run, &jobs[t]) == 0);
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < 2; t++) {
    CHECK_OK(jobs[t].status);
    hlo_literal *ref = NULL;
    CHECK_OK(eval_module(m[t], args[t], 2, &ref));
    double worst, nmse;
    if (ref) CHECK(close_enough(jobs[t].out, ref, ks[t], &worst, &nmse));
    literal_free(ref);
  }
done:
  for (int t = 0; t < 2; t++) {
    cpu_dnnl_destroy(jobs[t].prim);
    for (int i = 0; i < 2; i++) literal_free(args[t][i]);
    literal_free(out[t]);
    hlo_module_free(m[t]);
  }
}

/* Constants are captured at create time: the module (and its literals) may be freed
 * before the prim runs. The reference is computed first. */
static void test_module_freed_after_create(void) {
  hlo_module *m = check_parse_hlo("HloModule m\n"
                        "fused {\n"
                        "  p0 = f32[2,16,9,9] parameter(0)\n  p1 = f32[32,16,3,3] parameter(1)\n"
                        "  p2 = f32[32] parameter(2)\n"
                        "  c = f32[2,32,9,9] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
                        "dim_labels=bf01_oi01->bf01\n"
                        "  b = f32[2,32,9,9] broadcast(p2), dimensions={1}\n"
                        "  ROOT a = f32[2,32,9,9] add(c, b)\n}\n"
                        "ENTRY e {\n"
                        "  x = f32[2,16,9,9] parameter(0)\n  w = f32[32,16,3,3] constant({...})\n"
                        "  bias = f32[32] constant({...})\n"
                        "  ROOT f = f32[2,32,9,9] fusion(x, w, bias), kind=kOutput, calls=fused\n}\n");
  if (!m) return;
  cpu_dnnl_prim *p = NULL;
  hlo_literal *x = NULL, *ref = NULL, *out = NULL;
  CHECK_OK(cpu_dnnl_create(m->entry->root, -1, &p));
  CHECK_OK(literal_create(&m->entry->params[0]->shape, &x));
  CHECK_OK(literal_create(&m->entry->root->shape, &out));
  if (x) literal_fill_pseudo_random(x, 99);
  if (x) CHECK_OK(eval_module(m, &x, 1, &ref));
  hlo_module_free(m);
  if (p && x && ref && out) {
    void *ops[3] = {x->data, NULL, NULL};
    CHECK_OK(cpu_dnnl_execute(p, ops, out->data));
    double worst, nmse;
    CHECK(close_enough(out->data, ref, 16 * 9, &worst, &nmse));
  }
  cpu_dnnl_destroy(p);
  literal_free(x);
  literal_free(ref);
  literal_free(out);
}

/* The result may share the residual's buffer (in-place output fusion). */
static void test_result_aliases_residual(void) {
  hlo_module *m = check_parse_hlo("HloModule m\n"
                        "fused {\n"
                        "  p0 = f32[24,40] parameter(0)\n  p1 = f32[40,32] parameter(1)\n"
                        "  p2 = f32[24,32] parameter(2)\n"
                        "  d = f32[24,32] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                        "  ROOT a = f32[24,32] add(d, p2)\n}\n"
                        "ENTRY e {\n"
                        "  x = f32[24,40] parameter(0)\n  w = f32[40,32] parameter(1)\n  r = f32[24,32] parameter(2)\n"
                        "  ROOT f = f32[24,32] fusion(x, w, r), kind=kOutput, calls=fused\n}\n");
  if (!m) return;
  hlo_literal *args[3] = {NULL}, *ref = NULL;
  cpu_dnnl_prim *p = NULL;
  CHECK_OK(cpu_dnnl_create(m->entry->root, -1, &p));
  for (int i = 0; i < 3; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    if (args[i]) literal_fill_pseudo_random(args[i], (uint64_t)(31 + i));
  }
  if (p && args[0] && args[1] && args[2]) {
    CHECK_OK(eval_module(m, args, 3, &ref));
    void *ops[3] = {args[0]->data, args[1]->data, args[2]->data};
    CHECK_OK(cpu_dnnl_execute(p, ops, args[2]->data)); /* overwrites the residual */
    double worst, nmse;
    if (ref) CHECK(close_enough(args[2]->data, ref, 40, &worst, &nmse));
  }
  for (int i = 0; i < 3; i++) literal_free(args[i]);
  literal_free(ref);
  cpu_dnnl_destroy(p);
  hlo_module_free(m);
}

static void test_execute_errors(void) {
  hlo_module *m = check_parse_hlo("HloModule m\nENTRY e {\n  a = f32[4,4] parameter(0)\n  b = f32[4,4] parameter(1)\n"
                        "  ROOT d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  if (!m) return;
  cpu_dnnl_prim *p = NULL;
  CHECK_OK(cpu_dnnl_create(m->entry->root, -1, &p));
  if (p) {
    float a[16] = {0}, out[16];
    void *ops[2] = {a, NULL};
    CHECK_ERR(cpu_dnnl_execute(p, ops, out), "no buffer for operand 1");
    ops[1] = a;
    CHECK_ERR(cpu_dnnl_execute(p, ops, NULL), "no result buffer");
    CHECK_OK(cpu_dnnl_execute(p, ops, out));
  }
  cpu_dnnl_destroy(p);
  hlo_module_free(m);
}

/* Two primitives over the same constant weight (a weight an exporter deduplicated
 * across identical layers) hold one packed copy between them; a third with another
 * weight adds one; the buffers go with their last holder. */
static void test_equal_packed_weights_are_shared(void) {
  const char *same = "HloModule m\nENTRY e {\n  a = f32[64,256] parameter(0)\n  w = f32[256,256] constant({...})\n"
                     "  ROOT d = f32[64,256] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const char *other = "HloModule m\nENTRY e {\n  a = f32[64,256] parameter(0)\n  w = f32[256,192] constant({...})\n"
                      "  ROOT d = f32[64,192] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  int n0, n1, n2, n3;
  size_t b0, b1, b2, b3;
  cpu_shared_constant_stats(&n0, &b0);
  hlo_module *m1 = check_parse_hlo(same), *m2 = check_parse_hlo(same), *m3 = check_parse_hlo(other);
  cpu_dnnl_prim *p1 = NULL, *p2 = NULL, *p3 = NULL;
  if (m1 && m2 && m3) {
    CHECK_OK(cpu_dnnl_create(m1->entry->root, -1, &p1));
    cpu_shared_constant_stats(&n1, &b1);
    CHECK_OK(cpu_dnnl_create(m2->entry->root, -1, &p2));
    cpu_shared_constant_stats(&n2, &b2);
    CHECK(n1 == n0 + 1 && b1 >= b0 + 256 * 256 * sizeof(float));
    CHECK(n2 == n1 && b2 == b1); /* the second one shares the first's buffer */
    CHECK_OK(cpu_dnnl_create(m3->entry->root, -1, &p3));
    cpu_shared_constant_stats(&n3, &b3);
    CHECK(n3 == n2 + 1);
    /* both still compute: the same input gives the same output through either */
    static float a[64 * 256], o1[64 * 256], o2[64 * 256];
    for (int i = 0; i < 64 * 256; i++) a[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    void *ops[1] = {a};
    CHECK_OK(cpu_dnnl_execute(p1, ops, o1));
    cpu_dnnl_destroy(p1);
    p1 = NULL;
    CHECK_OK(cpu_dnnl_execute(p2, ops, o2));
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
  }
  cpu_dnnl_destroy(p1);
  cpu_dnnl_destroy(p2);
  cpu_dnnl_destroy(p3);
  cpu_shared_constant_stats(&n3, &b3);
  CHECK(n3 == n0 && b3 == b0);
  hlo_module_free(m1);
  hlo_module_free(m2);
  hlo_module_free(m3);
}

/* ------------------------------------------------------------------ declined */

/* The kCustom softmax fusion (fusion.c) as oneDNN's softmax primitive, against the
 * evaluator running the fused computation: rows of 7 (a tail shorter than a vector) and
 * of 197 (ViT's attention). The tolerance is the dot/conv one with K = the row length:
 * the exponentials and the row sums differ from the evaluator's by rounding only. */
static const char *softmax_fusion =
    "HloModule m\n"
    "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT mx = f32[] maximum(a, b)\n}\n"
    "add_f32 {\n  c = f32[] parameter(0)\n  d = f32[] parameter(1)\n  ROOT sm = f32[] add(c, d)\n}\n"
    "fused {\n  x = f32[%d,%d] parameter(0)\n"
    "  ninf = f32[] constant(-inf)\n  zero = f32[] constant(0)\n"
    "  m = f32[%d] reduce(x, ninf), dimensions={1}, to_apply=max_f32\n"
    "  mb = f32[%d,%d] broadcast(m), dimensions={0}\n  sub = f32[%d,%d] subtract(x, mb)\n"
    "  e = f32[%d,%d] exponential(sub)\n"
    "  s = f32[%d] reduce(e, zero), dimensions={1}, to_apply=%s\n"
    "  sb = f32[%d,%d] broadcast(s), dimensions={0}\n  ROOT y = f32[%d,%d] divide(e, sb)\n}\n"
    "ENTRY e {\n  p = f32[%d,%d] parameter(0)\n"
    "  ROOT f = f32[%d,%d] fusion(p), kind=kCustom, calls=fused\n}\n";

static void softmax_module(char *text, size_t size, int rows, int cols, const char *sum_reducer) {
  snprintf(text, size, softmax_fusion, rows, cols, rows, rows, cols, rows, cols, rows, cols, rows, sum_reducer, rows,
           cols, rows, cols, rows, cols, rows, cols);
}

static void test_softmax(void) {
  char text[2048];
  softmax_module(text, sizeof text, 5, 7, "add_f32");
  run_case("softmax over rows of 7", text, 7);
  softmax_module(text, sizeof text, 24, 197, "add_f32");
  run_case("softmax over rows of 197", text, 197);
  softmax_module(text, sizeof text, 5, 7, "max_f32"); /* normalised by the maximum: not a softmax */
  check_unsupported("kCustom fusion that is not a softmax", text);
}

static void test_unsupported(void) {
  check_unsupported("f64 dot",
                    "HloModule m\nENTRY e {\n"
                    "  a = f64[8,8] parameter(0)\n  b = f64[8,8] parameter(1)\n"
                    "  ROOT d = f64[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  check_unsupported("s32 dot",
                    "HloModule m\nENTRY e {\n"
                    "  a = s32[8,8] parameter(0)\n  b = s32[8,8] parameter(1)\n"
                    "  ROOT d = s32[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  check_unsupported("lhs free dims apart",
                    "HloModule m\nENTRY e {\n"
                    "  a = f32[4,8,6] parameter(0)\n  b = f32[8,5] parameter(1)\n"
                    "  ROOT d = f32[4,6,5] dot(a, b), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}\n}\n");
  check_unsupported("lhs dilation with a window stride",
                    "HloModule m\nENTRY e {\n"
                    "  x = f32[1,5,5,4] parameter(0)\n  w = f32[3,3,4,4] parameter(1)\n"
                    "  ROOT c = f32[1,4,4,4] convolution(x, w), window={size=3x3 stride=2x2 lhs_dilate=2x2}, "
                    "dim_labels=b01f_01io->b01f\n}\n");
  check_unsupported("negative padding",
                    "HloModule m\nENTRY e {\n"
                    "  x = f32[1,8,8,4] parameter(0)\n  w = f32[3,3,4,4] parameter(1)\n"
                    "  ROOT c = f32[1,4,4,4] convolution(x, w), window={size=3x3 pad=-1_-1x-1_-1}, "
                    "dim_labels=b01f_01io->b01f\n}\n");
  check_unsupported("batch_group_count",
                    "HloModule m\nENTRY e {\n"
                    "  x = f32[4,6,6,4] parameter(0)\n  w = f32[3,3,4,4] parameter(1)\n"
                    "  ROOT c = f32[2,4,4,4] convolution(x, w), window={size=3x3}, "
                    "dim_labels=b01f_01io->b01f, batch_group_count=2\n}\n");
  check_unsupported("lhs dilation, padding beyond the kernel",
                    "HloModule m\nENTRY e {\n"
                    "  x = f32[1,5,5,4] parameter(0)\n  w = f32[3,3,4,4] parameter(1)\n"
                    "  ROOT c = f32[1,13,13,4] convolution(x, w), window={size=3x3 pad=3_3x3_3 lhs_dilate=2x2}, "
                    "dim_labels=b01f_01io->b01f\n}\n");
  check_unsupported("not a contraction",
                    "HloModule m\nENTRY e {\n"
                    "  a = f32[8] parameter(0)\n  b = f32[8] parameter(1)\n"
                    "  ROOT s = f32[8] add(a, b)\n}\n");
  check_unsupported("divide by the product",
                    "HloModule m\n"
                    "fused {\n"
                    "  p0 = f32[8,8] parameter(0)\n  p1 = f32[8,8] parameter(1)\n"
                    "  p2 = f32[8,8] parameter(2)\n"
                    "  d = f32[8,8] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                    "  ROOT q = f32[8,8] divide(p2, d)\n}\n"
                    "ENTRY e {\n"
                    "  x = f32[8,8] parameter(0)\n  w = f32[8,8] parameter(1)\n  r = f32[8,8] parameter(2)\n"
                    "  ROOT f = f32[8,8] fusion(x, w, r), kind=kOutput, calls=fused\n}\n");
  check_unsupported("kLoop fusion",
                    "HloModule m\n"
                    "fused {\n"
                    "  p0 = f32[8] parameter(0)\n  p1 = f32[8] parameter(1)\n"
                    "  ROOT s = f32[8] add(p0, p1)\n}\n"
                    "ENTRY e {\n"
                    "  x = f32[8] parameter(0)\n  y = f32[8] parameter(1)\n"
                    "  ROOT f = f32[8] fusion(x, y), kind=kLoop, calls=fused\n}\n");
  check_unsupported("empty dot",
                    "HloModule m\nENTRY e {\n"
                    "  a = f32[0,8] parameter(0)\n  b = f32[8,4] parameter(1)\n"
                    "  ROOT d = f32[0,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
}

/* ------------------------------------------------------------------ integer products */

/* Fills an integer parameter over its type's range (u8 0..255, s8 -127..127) or a float
 * one over [-1, 1), deterministically. */
static void fill_quantized(hlo_literal *l, uint64_t seed) {
  uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < l->n; i++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    if (l->shape.type == HLO_U8) literal_set_s64(l, i, (int64_t)(st % 256));
    else if (l->shape.type == HLO_S8) literal_set_s64(l, i, (int64_t)(st % 255) - 127);
    else if (l->shape.type == HLO_S32) literal_set_s64(l, i, (int64_t)(st % 256)); /* a zero point */
    else literal_set_f64(l, i, (double)(st >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
}

/* Runs a kOutput fusion over an integer product (cpu_quantize.c's form) on oneDNN and
 * on the evaluator. The integer sum is exact on both sides and the epilogue is the same
 * f32 operations, except that a requantization's x / c runs as x * (1/c), which can
 * differ in the last bit: an 8-bit result may then land one step away where x / c lay
 * within that bit of a half-step boundary, so 8-bit results must match except for at
 * most 1% of elements off by exactly 1; an f32 result within 1e-6 relative. Returns
 * false when oneDNN declined (then must_support fails). */
static bool run_quantized_case(const char *what, const char *text, bool must_support) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return false;
  const hlo_instr *root = m->entry->root;
  cpu_dnnl_prim *prim = NULL;
  kiln_status s = cpu_dnnl_create(root, -1, &prim);
  CHECK(cpu_dnnl_supports(root) == (s == NULL));
  if (!cpu_dnnl_int8_exact()) {
    /* No VNNI here: oneDNN must decline, and the generated code computes it exactly. */
    CHECK(s && strstr(kiln_status_message(s), "without VNNI"));
    kiln_status_free(s);
    cpu_dnnl_destroy(prim);
    hlo_module_free(m);
    check_cpu_like_evaluator(text, (const char *const[]){NULL});
    return false;
  }
  if (s) {
    if (must_support) check_fail(__FILE__, __LINE__, what, kiln_status_message(s));
    kiln_status_free(s);
    hlo_module_free(m);
    return false;
  }
  int n_args = m->entry->n_params;
  hlo_literal *args[8] = {NULL}, *out = NULL;
  void *operands[8] = {NULL};
  CHECK(n_args <= 8);
  CHECK_OK(literal_create(&root->shape, &out));
  for (int round = 0; round < 2 && out; round++) {
    for (int i = 0; i < n_args; i++) {
      literal_free(args[i]);
      CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
      fill_quantized(args[i], 100u * (uint64_t)round + (uint64_t)i + 1);
    }
    for (int i = 0; i < root->n_operands; i++) {
      const hlo_instr *o = root->operands[i];
      operands[i] = o->op == HLO_OP_PARAMETER ? args[o->parameter_number]->data : NULL;
    }
    memset(out->data, 0xA5, (size_t)shape_byte_size(&out->shape));
    CHECK_OK(cpu_dnnl_execute(prim, operands, out->data));
    hlo_literal *ref = NULL;
    CHECK_OK(eval_module(m, args, n_args, &ref));
    int64_t bad = 0, steps = 0;
    for (int64_t i = 0; ref && i < ref->n; i++) {
      double g = literal_get_f64(out, i), r = literal_get_f64(ref, i);
      bool f32 = out->shape.type == HLO_F32;
      steps += !f32 && fabs(g - r) == 1;
      bool ok = f32 ? fabs(g - r) <= 1e-6 * fmax(1.0, fabs(r)) : fabs(g - r) <= 1 && steps * 100 <= ref->n;
      if (!ok && bad++ == 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "round %d: element %lld is %g, the evaluator says %g", round, (long long)i, g, r);
        check_fail(__FILE__, __LINE__, what, msg);
      }
    }
    literal_free(ref);
  }
  for (int i = 0; i < n_args; i++) literal_free(args[i]);
  literal_free(out);
  cpu_dnnl_destroy(prim);
  hlo_module_free(m);
  return true;
}

/* The requantization epilogue a QDQ convolution + relu + QuantizeLinear gets: u8
 * activations with zero point 128 (so padding must contribute a real zero), per-channel
 * scale, bias, relu, x / s rounded half to even, + zero point, clamped, written as u8. */
static void test_quantized_conv_requantizes_to_u8(void) {
  run_quantized_case("quantized conv -> u8",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = u8[1,9,9,16] parameter(0)\n  w = s8[3,3,16,32] parameter(1)\n"
                     "  sc = f32[32] parameter(2)\n  b = f32[32] parameter(3)\n"
                     "  xi = s32[1,9,9,16] convert(x)\n  z = s32[] constant(128)\n"
                     "  zb = s32[1,9,9,16] broadcast(z), dimensions={}\n"
                     "  xs = s32[1,9,9,16] subtract(xi, zb)\n  wi = s32[3,3,16,32] convert(w)\n"
                     "  c = s32[1,9,9,32] convolution(xs, wi), window={size=3x3 pad=1_1x1_1}, "
                     "dim_labels=b01f_01io->b01f\n"
                     "  cf = f32[1,9,9,32] convert(c)\n"
                     "  scb = f32[1,9,9,32] broadcast(sc), dimensions={3}\n"
                     "  m0 = f32[1,9,9,32] multiply(cf, scb)\n"
                     "  bb = f32[1,9,9,32] broadcast(b), dimensions={3}\n  a0 = f32[1,9,9,32] add(m0, bb)\n"
                     "  zero = f32[] constant(0)\n  zf = f32[1,9,9,32] broadcast(zero), dimensions={}\n"
                     "  r = f32[1,9,9,32] maximum(a0, zf)\n"
                     "  ys = f32[] constant(0.37)\n  ysb = f32[1,9,9,32] broadcast(ys), dimensions={}\n"
                     "  d = f32[1,9,9,32] divide(r, ysb)\n"
                     "  rn = f32[1,9,9,32] round-nearest-even(d)\n"
                     "  yz = f32[] constant(3)\n  yzb = f32[1,9,9,32] broadcast(yz), dimensions={}\n"
                     "  a1 = f32[1,9,9,32] add(rn, yzb)\n"
                     "  hi = f32[] constant(255)\n"
                     "  cl = f32[1,9,9,32] clamp(zero, a1, hi)\n"
                     "  ROOT q = u8[1,9,9,32] convert(cl)\n}\n"
                     "ENTRY e {\n"
                     "  x = u8[1,9,9,16] parameter(0)\n  w = s8[3,3,16,32] parameter(1)\n"
                     "  sc = f32[32] parameter(2)\n  b = f32[32] parameter(3)\n"
                     "  ROOT f = u8[1,9,9,32] fusion(x, w, sc, b), kind=kOutput, calls=fused\n}\n",
                     true);
}

/* QLinearConv's form: an int32 bias on the accumulators (oneDNN's s32 bias), constant
 * per-channel multipliers (output scales) and a requantization to u8 with zero point 7
 * (x / c + z through oneDNN's saturating conversion). */
static void test_quantized_conv_int_bias_output_scales(void) {
  run_quantized_case("quantized conv, int32 bias, output scales",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = u8[1,7,7,24] parameter(0)\n  w = s8[1,1,24,8] parameter(1)\n"
                     "  b = s32[8] parameter(2)\n"
                     "  xi = s32[1,7,7,24] convert(x)\n  z = s32[] constant(120)\n"
                     "  zb = s32[1,7,7,24] broadcast(z), dimensions={}\n"
                     "  xs = s32[1,7,7,24] subtract(xi, zb)\n  wi = s32[1,1,24,8] convert(w)\n"
                     "  c = s32[1,7,7,8] convolution(xs, wi), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
                     "  bb = s32[1,7,7,8] broadcast(b), dimensions={3}\n  cb = s32[1,7,7,8] add(c, bb)\n"
                     "  cf = f32[1,7,7,8] convert(cb)\n"
                     "  sc = f32[8] constant({0.001, 0.002, 0.0015, 0.0008, 0.003, 0.0012, 0.0009, 0.002})\n"
                     "  scb = f32[1,7,7,8] broadcast(sc), dimensions={3}\n"
                     "  m0 = f32[1,7,7,8] multiply(cf, scb)\n"
                     "  ys = f32[] constant(0.25)\n  ysb = f32[1,7,7,8] broadcast(ys), dimensions={}\n"
                     "  d = f32[1,7,7,8] divide(m0, ysb)\n  rn = f32[1,7,7,8] round-nearest-even(d)\n"
                     "  yz = f32[] constant(7)\n  yzb = f32[1,7,7,8] broadcast(yz), dimensions={}\n"
                     "  a1 = f32[1,7,7,8] add(rn, yzb)\n  lo = f32[] constant(0)\n  hi = f32[] constant(255)\n"
                     "  cl = f32[1,7,7,8] clamp(lo, a1, hi)\n  ROOT q = u8[1,7,7,8] convert(cl)\n}\n"
                     "ENTRY e {\n"
                     "  x = u8[1,7,7,24] parameter(0)\n  w = s8[1,1,24,8] parameter(1)\n  b = s32[8] parameter(2)\n"
                     "  ROOT f = u8[1,7,7,8] fusion(x, w, b), kind=kOutput, calls=fused\n}\n",
                     true);
}

/* An s8 activation read through a transpose (NCHW buffer, NHWC convolution), stride 2,
 * an f32 result; and a depthwise convolution. */
static void test_quantized_conv_transposed_s8_and_depthwise(void) {
  run_quantized_case("quantized conv, s8 NCHW input",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = s8[2,8,10,10] parameter(0)\n  w = s8[3,3,8,16] parameter(1)\n"
                     "  sc = f32[16] parameter(2)\n"
                     "  xi = s32[2,8,10,10] convert(x)\n  z = s32[] constant(-5)\n"
                     "  zb = s32[2,8,10,10] broadcast(z), dimensions={}\n"
                     "  xs = s32[2,8,10,10] subtract(xi, zb)\n"
                     "  xt = s32[2,10,10,8] transpose(xs), dimensions={0,2,3,1}\n"
                     "  wi = s32[3,3,8,16] convert(w)\n"
                     "  c = s32[2,5,5,16] convolution(xt, wi), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
                     "dim_labels=b01f_01io->b01f\n"
                     "  cf = f32[2,5,5,16] convert(c)\n"
                     "  scb = f32[2,5,5,16] broadcast(sc), dimensions={3}\n"
                     "  ROOT m0 = f32[2,5,5,16] multiply(cf, scb)\n}\n"
                     "ENTRY e {\n"
                     "  x = s8[2,8,10,10] parameter(0)\n  w = s8[3,3,8,16] parameter(1)\n  sc = f32[16] parameter(2)\n"
                     "  ROOT f = f32[2,5,5,16] fusion(x, w, sc), kind=kOutput, calls=fused\n}\n",
                     true);
  run_quantized_case("quantized depthwise conv",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = u8[1,12,12,32] parameter(0)\n  w = s8[3,3,1,32] parameter(1)\n"
                     "  sc = f32[32] parameter(2)\n"
                     "  xi = s32[1,12,12,32] convert(x)\n  z = s32[] constant(17)\n"
                     "  zb = s32[1,12,12,32] broadcast(z), dimensions={}\n"
                     "  xs = s32[1,12,12,32] subtract(xi, zb)\n  wi = s32[3,3,1,32] convert(w)\n"
                     "  c = s32[1,12,12,32] convolution(xs, wi), window={size=3x3 pad=1_1x1_1}, "
                     "dim_labels=b01f_01io->b01f, feature_group_count=32\n"
                     "  cf = f32[1,12,12,32] convert(c)\n"
                     "  scb = f32[1,12,12,32] broadcast(sc), dimensions={3}\n"
                     "  m0 = f32[1,12,12,32] multiply(cf, scb)\n"
                     "  lo = f32[] constant(0)\n  six = f32[] constant(6)\n"
                     "  ROOT r6 = f32[1,12,12,32] clamp(lo, m0, six)\n}\n"
                     "ENTRY e {\n"
                     "  x = u8[1,12,12,32] parameter(0)\n  w = s8[3,3,1,32] parameter(1)\n  sc = f32[32] parameter(2)\n"
                     "  ROOT f = f32[1,12,12,32] fusion(x, w, sc), kind=kOutput, calls=fused\n}\n",
                     true);
}

/* A matmul u8 x s8 with constant weights whose widening constant folding already folded
 * (s32 values within s8, narrowed at create time), requantized to s8. */
static void test_quantized_dot_constant_weights(void) {
  run_quantized_case("quantized dot, folded constant weights",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = u8[4,3] parameter(0)\n  w = s32[3,2] parameter(1)\n"
                     "  xi = s32[4,3] convert(x)\n  z = s32[] constant(100)\n"
                     "  zb = s32[4,3] broadcast(z), dimensions={}\n  xs = s32[4,3] subtract(xi, zb)\n"
                     "  d = s32[4,2] dot(xs, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  df = f32[4,2] convert(d)\n  s = f32[] constant(0.5)\n"
                     "  sb = f32[4,2] broadcast(s), dimensions={}\n  m0 = f32[4,2] multiply(df, sb)\n"
                     "  ys = f32[] constant(7)\n  ysb = f32[4,2] broadcast(ys), dimensions={}\n"
                     "  dv = f32[4,2] divide(m0, ysb)\n  rn = f32[4,2] round-nearest-even(dv)\n"
                     "  lo = f32[] constant(-128)\n  hi = f32[] constant(127)\n"
                     "  cl = f32[4,2] clamp(lo, rn, hi)\n  ROOT q = s8[4,2] convert(cl)\n}\n"
                     "ENTRY e {\n"
                     "  x = u8[4,3] parameter(0)\n"
                     "  w = s32[3,2] constant({ {1, -2}, {127, -128}, {0, 5} })\n"
                     "  ROOT f = s8[4,2] fusion(x, w), kind=kOutput, calls=fused\n}\n",
                     true);
}

/* DynamicQuantizeLinear's zero point is computed at run time: an s32 scalar operand that
 * oneDNN reads as its runtime source zero point on every execute (two rounds, two
 * values). The scale is a runtime scalar too. */
static void test_quantized_dot_runtime_zero_point(void) {
  run_quantized_case("quantized dot, runtime zero point",
                     "HloModule m\n"
                     "fused {\n"
                     "  x = u8[16,32] parameter(0)\n  w = s8[32,24] parameter(1)\n  z = s32[] parameter(2)\n"
                     "  s = f32[] parameter(3)\n"
                     "  xi = s32[16,32] convert(x)\n  zb = s32[16,32] broadcast(z), dimensions={}\n"
                     "  xs = s32[16,32] subtract(xi, zb)\n  wi = s32[32,24] convert(w)\n"
                     "  d = s32[16,24] dot(xs, wi), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  df = f32[16,24] convert(d)\n  sb = f32[16,24] broadcast(s), dimensions={}\n"
                     "  ROOT m0 = f32[16,24] multiply(df, sb)\n}\n"
                     "ENTRY e {\n"
                     "  x = u8[16,32] parameter(0)\n  w = s8[32,24] parameter(1)\n  z = s32[] parameter(2)\n"
                     "  s = f32[] parameter(3)\n"
                     "  ROOT f = f32[16,24] fusion(x, w, z, s), kind=kOutput, calls=fused\n}\n",
                     true);
}

/* Integer products oneDNN must decline rather than compute differently: weights beyond
 * s8, and a convert to 8 bits of a value not rounded first (HLO truncates, oneDNN
 * would round). */
static void test_quantized_declines_inexact(void) {
  check_unsupported("integer weights beyond s8",
                    "HloModule m\n"
                    "fused {\n"
                    "  x = u8[4,3] parameter(0)\n  w = s32[3,2] parameter(1)\n  xi = s32[4,3] convert(x)\n"
                    "  d = s32[4,2] dot(xi, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                    "  ROOT df = f32[4,2] convert(d)\n}\n"
                    "ENTRY e {\n"
                    "  x = u8[4,3] parameter(0)\n  w = s32[3,2] constant({ {1, 2}, {300, 4}, {5, 6} })\n"
                    "  ROOT f = f32[4,2] fusion(x, w), kind=kOutput, calls=fused\n}\n");
  check_unsupported("convert to u8 without rounding",
                    "HloModule m\n"
                    "fused {\n"
                    "  x = u8[4,3] parameter(0)\n  w = s8[3,2] parameter(1)\n  xi = s32[4,3] convert(x)\n"
                    "  wi = s32[3,2] convert(w)\n"
                    "  d = s32[4,2] dot(xi, wi), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                    "  df = f32[4,2] convert(d)\n  lo = f32[] constant(0)\n  hi = f32[] constant(255)\n"
                    "  cl = f32[4,2] clamp(lo, df, hi)\n  ROOT q = u8[4,2] convert(cl)\n}\n"
                    "ENTRY e {\n"
                    "  x = u8[4,3] parameter(0)\n  w = s8[3,2] parameter(1)\n"
                    "  ROOT f = u8[4,2] fusion(x, w), kind=kOutput, calls=fused\n}\n");
}

TEST_MAIN(TEST(test_compare_rejects), TEST(test_matmul), TEST(test_matmul_batched), TEST(test_matmul_transposed),
          TEST(test_matrix_vector), TEST(test_matmul_merged_dims), TEST(test_matmul_constant_weights),
          TEST(test_conv_nchw), TEST(test_conv_nhwc), TEST(test_conv_stride_pad), TEST(test_conv_dilation),
          TEST(test_matmul_bf16_to_f32), TEST(test_conv_depthwise), TEST(test_conv_grouped), TEST(test_conv_1d_3d), TEST(test_conv_constant_weights),
          TEST(test_conv_transposed),
          TEST(test_fusion_conv_bias_relu), TEST(test_fusion_swish_logistic), TEST(test_fusion_dot_bias), TEST(test_fusion_dot_residual),
          TEST(test_fusion_residual_in_place),
          TEST(test_fusion_clamp), TEST(test_fusion_repeated_eltwise), TEST(test_unusual_layouts), TEST(test_fusion_more),
          TEST(test_random_convs), TEST(test_random_dots),
          TEST(test_concurrent_prims), TEST(test_module_freed_after_create), TEST(test_result_aliases_residual),
          TEST(test_execute_errors), TEST(test_equal_packed_weights_are_shared), TEST(test_softmax),
          TEST(test_unsupported), TEST(test_quantized_conv_requantizes_to_u8),
          TEST(test_quantized_conv_transposed_s8_and_depthwise), TEST(test_quantized_dot_constant_weights),
          TEST(test_quantized_conv_int_bias_output_scales), TEST(test_quantized_dot_runtime_zero_point),
          TEST(test_quantized_declines_inexact))
