/* Unit tests for the cpu backend's quantized-products pass (src/backends/cpu/
 * cpu_quantize.c) and what the cpu pipeline's fusion makes of its output.
 *
 * The modules are written the way the ONNX importer lowers a QDQ graph: QuantizeLinear
 * as divide / round-nearest-even / add zero point / clamp / convert, DequantizeLinear as
 * convert to s32 / subtract zero point / convert to f32 / multiply by scale. After the
 * pass a qualifying convolution or dot must be an s32 product of the widened 8-bit
 * values, and after the whole cpu pipeline one kOutput fusion reading the u8 activation
 * and writing the requantized u8 result. Values are checked against the module as
 * written on the evaluator: the integer product is exact where the written f32 one
 * rounds, so results agree to f32 rounding of the products (relative 1e-5 of the
 * output's magnitude for f32 results; a requantized result may move by one
 * quantization step where it sat on a rounding boundary, which these inputs avoid
 * checking by dequantizing before comparison with a one-step tolerance). Patterns the
 * pass must leave alone (nonzero weight zero points, per-channel activation parameters)
 * stay f32 products. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_quantize.h"
#include "backends/cpu/cpu_pipeline.h"
#include "check.h"
#include "check_util.h"
#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/passes/pipeline.h"
#include "hlo/verifier.h"

/* A QDQ convolution block: x (f32) quantized to u8 (scale 0.05, zero point 128),
 * dequantized, convolved with s8 weights dequantized per output channel (WZP: the
 * weights' zero point literal), plus bias, relu, quantized again (scale 0.1, zero point
 * 0) and dequantized to f32. */
static char *qdq_conv_text(const char *wzp) {
  static const char *fmt =
      "HloModule m\n"
      "ENTRY e {\n"
      "  x = f32[1,4,6,6] parameter(0)\n"
      "  s = f32[] constant(0.05)\n  sb = f32[1,4,6,6] broadcast(s), dimensions={}\n"
      "  d0 = f32[1,4,6,6] divide(x, sb)\n  r0 = f32[1,4,6,6] round-nearest-even(d0)\n"
      "  z = u8[] constant(128)\n  zf = f32[] convert(z)\n  zfb = f32[1,4,6,6] broadcast(zf), dimensions={}\n"
      "  a0 = f32[1,4,6,6] add(r0, zfb)\n  lo = f32[] constant(0)\n  hi = f32[] constant(255)\n"
      "  c0 = f32[1,4,6,6] clamp(lo, a0, hi)\n  q = u8[1,4,6,6] convert(c0)\n"
      "  qi = s32[1,4,6,6] convert(q)\n  zi = s32[] convert(z)\n  zib = s32[1,4,6,6] broadcast(zi), dimensions={}\n"
      "  qs = s32[1,4,6,6] subtract(qi, zib)\n  qf = f32[1,4,6,6] convert(qs)\n"
      "  dq = f32[1,4,6,6] multiply(qf, sb)\n"
      "  w = s8[8,4,3,3] constant({...})\n  wz = s8[8] constant(%s)\n"
      "  ws = f32[8] constant({0.01, 0.02, 0.015, 0.03, 0.011, 0.025, 0.018, 0.02})\n"
      "  wi = s32[8,4,3,3] convert(w)\n  wzi = s32[8] convert(wz)\n"
      "  wzb = s32[8,4,3,3] broadcast(wzi), dimensions={0}\n  wsub = s32[8,4,3,3] subtract(wi, wzb)\n"
      "  wf = f32[8,4,3,3] convert(wsub)\n  wsb = f32[8,4,3,3] broadcast(ws), dimensions={0}\n"
      "  wdq = f32[8,4,3,3] multiply(wf, wsb)\n"
      "  cv = f32[1,8,6,6] convolution(dq, wdq), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "  b = f32[8] constant({0.1, -0.2, 0.05, 0, 0.3, -0.1, 0.2, 0.01})\n"
      "  bb = f32[1,8,6,6] broadcast(b), dimensions={1}\n  ab = f32[1,8,6,6] add(cv, bb)\n"
      "  zero = f32[] constant(0)\n  zb = f32[1,8,6,6] broadcast(zero), dimensions={}\n"
      "  rl = f32[1,8,6,6] maximum(ab, zb)\n"
      "  s2 = f32[] constant(0.1)\n  s2b = f32[1,8,6,6] broadcast(s2), dimensions={}\n"
      "  d1 = f32[1,8,6,6] divide(rl, s2b)\n  r1 = f32[1,8,6,6] round-nearest-even(d1)\n"
      "  a1 = f32[1,8,6,6] add(r1, zb)\n  c1 = f32[1,8,6,6] clamp(lo, a1, hi)\n"
      "  q2 = u8[1,8,6,6] convert(c1)\n  q2f = f32[1,8,6,6] convert(q2)\n"
      "  ROOT y = f32[1,8,6,6] multiply(q2f, s2b)\n"
      "}\n";
  size_t n = strlen(fmt) + strlen(wzp) + 1;
  char *text = malloc(n);
  if (!text) abort();
  snprintf(text, n, fmt, wzp);
  return text;
}

static int count_all(const hlo_module *m, hlo_opcode op, hlo_type t) {
  int n = 0;
  for (int ci = 0; ci < m->n_comps; ci++)
    for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
      const hlo_instr *x = m->comps[ci]->instrs[i];
      n += x->op == op && x->shape.type == t;
    }
  return n;
}

/* max |a - b| over two f32 results of the same shape. */
static double max_abs_diff(const hlo_literal *a, const hlo_literal *b) {
  double worst = 0;
  for (int64_t i = 0; i < a->n; i++) {
    double d = fabs((double)((const float *)a->data)[i] - (double)((const float *)b->data)[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* ORIG and M (rewritten) evaluate within TOL of each other on the same pseudo-random
 * arguments (SEED); frees both. */
static void check_close_and_free(hlo_module *orig, hlo_module *m, uint64_t seed, double tol) {
  hlo_literal *want = check_eval_random(orig, seed, NULL), *got = check_eval_random(m, seed, NULL);
  if (want && got) CHECK(max_abs_diff(want, got) <= tol);
  literal_free(want);
  literal_free(got);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* Parses TEXT twice and runs the pass on the second copy, which it must change. */
static hlo_module *rewritten(const char *text, hlo_module **orig) {
  *orig = check_parse_hlo(text);
  hlo_module *m = check_parse_hlo(text);
  bool changed = false;
  CHECK_OK(cpu_pass_quantized_products(m, &changed));
  CHECK(changed);
  CHECK_OK(hlo_verify_module(m));
  return m;
}

static void test_qdq_conv_becomes_integer_product(void) {
  char *text = qdq_conv_text("{0, 0, 0, 0, 0, 0, 0, 0}");
  hlo_module *orig, *m = rewritten(text, &orig);
  CHECK(count_all(m, HLO_OP_CONVOLUTION, HLO_S32) == 1);
  /* One output quantization step (0.1): a value on a rounding boundary may move. */
  check_close_and_free(orig, m, 5, 0.1 + 1e-6);
  free(text);
}

/* The whole cpu pipeline, for a CPU with exact int8 kernels: the convolution, its
 * dequantization, bias, relu and requantization end up in one kOutput fusion reading u8
 * and writing u8. */
static void test_cpu_pipeline_forms_one_int8_fusion(void) {
  char *text = qdq_conv_text("{0, 0, 0, 0, 0, 0, 0, 0}");
  hlo_module *orig = check_parse_hlo(text), *m = check_parse_hlo(text);
  hlo_pipeline *p = cpu_pipeline_new(&(cpu_pipeline_options){.integer_products = true});
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  int int8_fusions = 0;
  for (int i = 0; i < m->entry->n_instrs; i++) {
    const hlo_instr *x = m->entry->instrs[i];
    if (x->op != HLO_OP_FUSION || !x->fusion_kind || strcmp(x->fusion_kind, "kOutput") != 0) continue;
    bool reads_u8 = false;
    for (int k = 0; k < x->n_operands; k++) reads_u8 = reads_u8 || x->operands[k]->shape.type == HLO_U8;
    int8_fusions += reads_u8 && x->shape.type == HLO_U8;
  }
  CHECK(int8_fusions == 1);
  CHECK(check_count_op(m->entry, HLO_OP_CONVOLUTION) == 0); /* only inside the fusion */
  check_close_and_free(orig, m, 9, 0.1 + 1e-6);
  free(text);
}

/* For a CPU without exact int8 kernels the QDQ graph runs as written: no integer
 * product, the dequantized weights folded into one f32 constant that the convolution
 * reads (so oneDNN packs it once), and results bit-identical to the module as written. */
static void test_without_exact_int8_kernels_qdq_runs_as_written_on_folded_weights(void) {
  char *text = qdq_conv_text("{0, 0, 0, 0, 0, 0, 0, 0}");
  hlo_module *orig = check_parse_hlo(text), *m = check_parse_hlo(text);
  hlo_pipeline *p = cpu_pipeline_new(&(cpu_pipeline_options){.integer_products = false});
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  CHECK(count_all(m, HLO_OP_CONVOLUTION, HLO_S32) == 0);
  CHECK(count_all(m, HLO_OP_CONVOLUTION, HLO_F32) == 1);
  for (int ci = 0; ci < m->n_comps; ci++)
    for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
      const hlo_instr *x = m->comps[ci]->instrs[i];
      if (x->op != HLO_OP_CONVOLUTION) continue;
      const hlo_instr *w = x->operands[1];
      /* inside its fusion the weight is a parameter; follow it out */
      if (w->op == HLO_OP_PARAMETER && ci != 0) {
        for (int j = 0; j < m->entry->n_instrs; j++) {
          const hlo_instr *f = m->entry->instrs[j];
          if (f->op == HLO_OP_FUSION && f->called[0] == m->comps[ci]) w = f->operands[w->parameter_number];
        }
      }
      CHECK(w->op == HLO_OP_CONSTANT && w->shape.type == HLO_F32);
    }
  check_close_and_free(orig, m, 9, 0.0);
  free(text);
}

/* Nonzero weight zero points would need a correction term the int8 kernels lack: the
 * convolution stays in f32, exactly as written. */
static void test_nonzero_weight_zero_point_stays_float(void) {
  char *text = qdq_conv_text("{0, 0, 3, 0, 0, 0, 0, 0}");
  hlo_module *m = check_run_pass(text, cpu_pass_quantized_products, false);
  if (m) {
    CHECK(count_all(m, HLO_OP_CONVOLUTION, HLO_S32) == 0);
    CHECK(count_all(m, HLO_OP_CONVOLUTION, HLO_F32) == 1);
  }
  hlo_module_free(m);
  free(text);
}

/* A dot with weights dequantized per column (the free dim of [K, N]): the rescale
 * broadcasts along the result's N; per-channel activations are left alone. */
static const char *dot_text =
    "HloModule m\n"
    "ENTRY e {\n"
    "  x = u8[3,5] parameter(0)\n"
    "  xi = s32[3,5] convert(x)\n  z = s32[] constant(%d)\n  zb = s32[3,5] broadcast(z), dimensions={}\n"
    "  xs = s32[3,5] subtract(xi, zb)\n  xf = f32[3,5] convert(xs)\n"
    "  sx = f32[%s] constant(%s)\n  sxb = f32[3,5] broadcast(sx), dimensions={%s}\n"
    "  xdq = f32[3,5] multiply(xf, sxb)\n"
    "  w = s8[5,4] constant({ {1, -2, 3, 4}, {-5, 6, 7, -8}, {9, 10, -11, 12}, {13, -14, 15, 16}, {0, 1, -1, 2} })\n"
    "  wi = s32[5,4] convert(w)\n  wf = f32[5,4] convert(wi)\n"
    "  ws = f32[4] constant({0.5, 0.25, 0.125, 1})\n  wsb = f32[5,4] broadcast(ws), dimensions={1}\n"
    "  wdq = f32[5,4] multiply(wf, wsb)\n"
    "  ROOT d = f32[3,4] dot(xdq, wdq), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

static hlo_module *parse_dot(int zp, const char *sx_dims, const char *sx, const char *bdims) {
  char text[2048];
  snprintf(text, sizeof text, dot_text, zp, sx_dims, sx, bdims);
  return check_parse_hlo(text);
}

static void test_dot_per_column_weights(void) {
  char text[2048];
  snprintf(text, sizeof text, dot_text, 100, "", "0.02", "");
  hlo_module *orig, *m = rewritten(text, &orig);
  CHECK(count_all(m, HLO_OP_DOT, HLO_S32) == 1);
  /* |result| <= 5 * 255 * 0.02 * 16: a few f32 roundings of that. */
  check_close_and_free(orig, m, 3, 1e-4);
}

/* A bias quantized to int32 in the accumulator's scale (s_x * s_w[c], what ONNX
 * Runtime's quantizer writes) joins the integer accumulator: one s32 add, one rescale. */
static void test_int32_bias_joins_accumulator(void) {
  static const float ws[4] = {0.5f, 0.25f, 0.125f, 1.0f};
  char scales[160];
  int n = 0;
  for (int i = 0; i < 4; i++)
    n += snprintf(scales + n, sizeof scales - (size_t)n, "%s%.9g", i ? ", " : "", (double)(0.02f * ws[i]));
  static const char *fmt =
      "HloModule m\n"
      "ENTRY e {\n"
      "  x = u8[3,5] parameter(0)\n"
      "  xi = s32[3,5] convert(x)\n  z = s32[] constant(100)\n  zb = s32[3,5] broadcast(z), dimensions={}\n"
      "  xs = s32[3,5] subtract(xi, zb)\n  xf = f32[3,5] convert(xs)\n"
      "  sx = f32[] constant(0.02)\n  sxb = f32[3,5] broadcast(sx), dimensions={}\n"
      "  xdq = f32[3,5] multiply(xf, sxb)\n"
      "  w = s8[5,4] constant({ {1, -2, 3, 4}, {-5, 6, 7, -8}, {9, 10, -11, 12}, {13, -14, 15, 16}, {0, 1, -1, 2} })\n"
      "  wi = s32[5,4] convert(w)\n  wf = f32[5,4] convert(wi)\n"
      "  ws = f32[4] constant({0.5, 0.25, 0.125, 1})\n  wsb = f32[5,4] broadcast(ws), dimensions={1}\n"
      "  wdq = f32[5,4] multiply(wf, wsb)\n"
      "  d = f32[3,4] dot(xdq, wdq), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  b = s32[4] constant({7, -3, 250, 0})\n  bf = f32[4] convert(b)\n"
      "  bsc = f32[4] constant({%s})\n  bs = f32[4] broadcast(bsc), dimensions={0}\n"
      "  bq = f32[4] multiply(bf, bs)\n"
      "  bb = f32[3,4] broadcast(bq), dimensions={1}\n  ROOT y = f32[3,4] add(d, bb)\n"
      "}\n";
  char text[2048];
  snprintf(text, sizeof text, fmt, scales);
  hlo_module *orig, *m = rewritten(text, &orig);
  CHECK(count_all(m, HLO_OP_DOT, HLO_S32) == 1);
  CHECK(count_all(m, HLO_OP_ADD, HLO_S32) == 1);
  check_close_and_free(orig, m, 4, 1e-4);
}

static void test_per_row_activation_scale_stays_float(void) {
  hlo_module *m = parse_dot(0, "3", "{0.1, 0.2, 0.3}", "0");
  bool changed = true;
  CHECK_OK(cpu_pass_quantized_products(m, &changed));
  CHECK(!changed);
  CHECK(count_all(m, HLO_OP_DOT, HLO_S32) == 0);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_qdq_conv_becomes_integer_product), TEST(test_cpu_pipeline_forms_one_int8_fusion),
          TEST(test_without_exact_int8_kernels_qdq_runs_as_written_on_folded_weights),
          TEST(test_nonzero_weight_zero_point_stays_float), TEST(test_dot_per_column_weights),
          TEST(test_int32_bias_joins_accumulator), TEST(test_per_row_activation_scale_stays_float))
