/* Unit tests for the conv-layout pass (src/backends/cpu/cpu_conv_layout.c): small NCHW
 * convolution chains as ONNX lowers them (bias + relu, pooling + pad, a residual add
 * with a depthwise and a constant kernel, two concatenated branches with a global
 * average pool and a classifier, a squeeze-excite block) must come out with every
 * convolution channels-last and no transpose left on any path between two
 * convolutions, and must evaluate bit-identically to the module as written on
 * pseudo-random inputs (the evaluator is the oracle). Reductions whose element order
 * NHWC would change must be left in NCHW; channels-last modules and a lone
 * convolution are left alone. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_pipeline.h"
#include "check.h"
#include "check_util.h"
#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/passes/pipeline.h"
#include "hlo/verifier.h"

/* The pass and the cleanup the cpu pipeline runs after it (transposes cancel,
 * transposed constants fold, duplicates merge, bypassed instructions go). */
static bool run_layout(hlo_module *m) {
  bool changed = false;
  CHECK_OK(cpu_pass_conv_layout(m, &changed));
  CHECK_OK(hlo_verify_module(m));
  hlo_pipeline *p = hlo_pipeline_new("cleanup");
  hlo_pipeline *fix = hlo_pipeline_new("fix");
  hlo_pipeline_add_pass(fix, "algsimp", hlo_pass_algebraic_simplifier);
  hlo_pipeline_add_pass(fix, "constant-folding", eval_pass_constant_folding);
  hlo_pipeline_add_pass(fix, "cse", hlo_pass_cse);
  hlo_pipeline_add_pass(fix, "dce", hlo_pass_dce);
  hlo_pipeline_add_fix(p, fix, HLO_FIX_DEFAULT_MAX_ITERS);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  return changed;
}

/* Transposes with a convolution both among their operands' ancestors and among their
 * users' descendants: data movement the pass should have removed. */
static int transposes_between_convs(const hlo_computation *c) {
  int max_id = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  bool *after = calloc((size_t)max_id + 1, sizeof(bool)), *before = calloc((size_t)max_id + 1, sizeof(bool));
  if (!after || !before) abort();
  for (int i = 0; i < c->n_instrs; i++) { /* definition order: operands first */
    const hlo_instr *x = c->instrs[i];
    for (int k = 0; k < x->n_operands; k++) {
      const hlo_instr *o = x->operands[k];
      if (o->op == HLO_OP_CONVOLUTION || after[o->id]) after[x->id] = true;
    }
  }
  for (int i = c->n_instrs - 1; i >= 0; i--) { /* users first */
    const hlo_instr *x = c->instrs[i];
    if (x->op == HLO_OP_CONVOLUTION || before[x->id])
      for (int k = 0; k < x->n_operands; k++) before[x->operands[k]->id] = true;
  }
  int n = 0;
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *x = c->instrs[i];
    if (x->op == HLO_OP_TRANSPOSE && after[x->id] && before[x->id]) n++;
  }
  free(after);
  free(before);
  return n;
}

/* Every convolution computes NHWC with a 01io kernel; a parameter input of at most 4
 * channels (an image) is read channels-first instead (bf01_01io->b01f), and only that. */
static bool all_convs_channels_last(const hlo_computation *c) {
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *x = c->instrs[i];
    if (x->op != HLO_OP_CONVOLUTION) continue;
    const hlo_conv_dnums *d = &x->conv;
    const hlo_instr *in = x->operands[0];
    bool image = in->op == HLO_OP_PARAMETER && in->shape.dims[1] <= 4;
    if (d->input_feature != (image ? 1 : 3) || d->output_feature != 3 || d->kernel_input_feature != 2 ||
        d->kernel_output_feature != 3)
      return false;
  }
  return true;
}

/* Parses TEXT twice, runs the pass on one copy and checks it against the other. */
static hlo_module *rewritten(const char *text, hlo_module **orig) {
  *orig = check_parse_hlo(text);
  hlo_module *m = check_parse_hlo(text);
  CHECK(run_layout(m));
  CHECK(all_convs_channels_last(m->entry));
  check_same_eval(*orig, m, 101);
  return m;
}

static void conv_bias_relu_conv(void) {
  const char *text =
      "HloModule chain\n"
      "ENTRY %main (x: f32[2,3,9,9], k1: f32[4,3,3,3], b1: f32[4], k2: f32[5,4,3,3]) -> f32[2,5,7,7] {\n"
      "  %x = f32[2,3,9,9] parameter(0)\n"
      "  %k1 = f32[4,3,3,3] parameter(1)\n"
      "  %b1 = f32[4] parameter(2)\n"
      "  %k2 = f32[5,4,3,3] parameter(3)\n"
      "  %c1 = f32[2,4,9,9] convolution(%x, %k1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "  %bb = f32[2,4,9,9] broadcast(%b1), dimensions={1}\n"
      "  %a1 = f32[2,4,9,9] add(%c1, %bb)\n"
      "  %zero = f32[] constant(0)\n"
      "  %zb = f32[2,4,9,9] broadcast(%zero), dimensions={}\n"
      "  %r1 = f32[2,4,9,9] maximum(%a1, %zb)\n"
      "  ROOT %c2 = f32[2,5,7,7] convolution(%r1, %k2), window={size=3x3}, dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 0);
  /* the two kernels to 01io, the result back to NCHW (x, 3 channels, is read NCHW) */
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 3);
  CHECK(check_count_op(orig->entry, HLO_OP_TRANSPOSE) == 0);
  hlo_module_free(orig);
  hlo_module_free(m);
}

static void conv_pool_pad_conv(void) {
  const char *text =
      "HloModule pool\n"
      "%max_f32 (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %m = f32[] maximum(%a, %b)\n"
      "}\n"
      "ENTRY %main (x: f32[1,4,10,10], k1: f32[6,4,1,1], k2: f32[3,6,3,3]) -> f32[1,3,5,5] {\n"
      "  %x = f32[1,4,10,10] parameter(0)\n"
      "  %k1 = f32[6,4,1,1] parameter(1)\n"
      "  %k2 = f32[3,6,3,3] parameter(2)\n"
      "  %c1 = f32[1,6,10,10] convolution(%x, %k1), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %lo = f32[] constant(0)\n"
      "  %hi = f32[] constant(0.5)\n"
      "  %cl = f32[1,6,10,10] clamp(%lo, %c1, %hi)\n"
      "  %ninf = f32[] constant(-inf)\n"
      "  %mp = f32[1,6,5,5] reduce-window(%cl, %ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, "
      "to_apply=%max_f32\n"
      "  %zero = f32[] constant(0)\n"
      "  %p = f32[1,6,7,7] pad(%mp, %zero), padding=0_0x0_0x1_1x1_1\n"
      "  %cv = f64[1,6,7,7] convert(%p)\n"
      "  %back = f32[1,6,7,7] convert(%cv)\n"
      "  ROOT %c2 = f32[1,3,5,5] convolution(%back, %k2), window={size=3x3}, dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_REDUCE_WINDOW) == 1);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* Depthwise conv, a constant 1x1 kernel (folded into a 01io constant), a residual add
 * and a select over a compare. */
static void residual_add(void) {
  const char *text =
      "HloModule residual\n"
      "ENTRY %main (x: f32[1,4,6,6], k1: f32[4,1,3,3], k3: f32[2,4,3,3]) -> f32[1,2,6,6] {\n"
      "  %x = f32[1,4,6,6] parameter(0)\n"
      "  %k1 = f32[4,1,3,3] parameter(1)\n"
      "  %k3 = f32[2,4,3,3] parameter(2)\n"
      "  %k2 = f32[4,4,1,1] constant({ { {{1}}, {{0.5}}, {{-1}}, {{2}} }, { {{0.25}}, {{1}}, {{3}}, {{-2}} }, "
      "{ {{-0.5}}, {{1.5}}, {{1}}, {{0}} }, { {{2}}, {{-1}}, {{0.75}}, {{1}} } })\n"
      "  %c1 = f32[1,4,6,6] convolution(%x, %k1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, "
      "feature_group_count=4\n"
      "  %zero = f32[] constant(0)\n"
      "  %zb = f32[1,4,6,6] broadcast(%zero), dimensions={}\n"
      "  %r1 = f32[1,4,6,6] maximum(%c1, %zb)\n"
      "  %c2 = f32[1,4,6,6] convolution(%r1, %k2), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %s = f32[1,4,6,6] add(%r1, %c2)\n"
      "  %gt = pred[1,4,6,6] compare(%s, %zb), direction=GT\n"
      "  %neg = f32[1,4,6,6] negate(%s)\n"
      "  %sel = f32[1,4,6,6] select(%gt, %s, %neg)\n"
      "  ROOT %c3 = f32[1,2,6,6] convolution(%sel, %k3), window={size=3x3 pad=1_1x1_1}, "
      "dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 0);
  /* k1 and k3 (parameters) relayouted, the result out; k2 folded; x read NCHW */
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 3);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* Two branches concatenated along channels, a global average pool and a classifier:
 * the pool reduces NHWC's H and W and needs no transpose before the dot. */
static void concat_branches_pool(void) {
  const char *text =
      "HloModule concat\n"
      "%add_f32 (p0: f32[], p1: f32[]) -> f32[] {\n"
      "  %p0 = f32[] parameter(0)\n"
      "  %p1 = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%p0, %p1)\n"
      "}\n"
      "ENTRY %main (x: f32[2,3,8,8], ka: f32[4,3,3,3], kb: f32[2,3,1,1], kc: f32[5,6,3,3], w: f32[5,7]) -> "
      "f32[2,7] {\n"
      "  %x = f32[2,3,8,8] parameter(0)\n"
      "  %ka = f32[4,3,3,3] parameter(1)\n"
      "  %kb = f32[2,3,1,1] parameter(2)\n"
      "  %kc = f32[5,6,3,3] parameter(3)\n"
      "  %w = f32[5,7] parameter(4)\n"
      "  %a = f32[2,4,8,8] convolution(%x, %ka), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "  %b = f32[2,2,8,8] convolution(%x, %kb), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %cat = f32[2,6,8,8] concatenate(%a, %b), dimensions={1}\n"
      "  %c = f32[2,5,8,8] convolution(%cat, %kc), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "  %zero = f32[] constant(0)\n"
      "  %r = f32[2,5] reduce(%c, %zero), dimensions={2,3}, to_apply=%add_f32\n"
      "  %n = f32[] constant(64)\n"
      "  %nb = f32[2,5] broadcast(%n), dimensions={}\n"
      "  %mean = f32[2,5] divide(%r, %nb)\n"
      "  ROOT %d = f32[2,7] dot(%mean, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 0);
  /* three kernels (x is read NCHW by both branches); nothing after the last conv */
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 3);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* Squeeze-excite: global mean -> [N,C,1,1] -> 1x1 convs -> sigmoid gate multiplied
 * back onto the feature map; the [N,C,1,1] transposes become reshapes. */
static void squeeze_excite(void) {
  const char *text =
      "HloModule se\n"
      "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%a, %b)\n"
      "}\n"
      "ENTRY %main (x: f32[1,8,5,5], k1: f32[8,8,1,1], ks1: f32[2,8,1,1], ks2: f32[8,2,1,1], k3: f32[4,8,1,1]) -> "
      "f32[1,4,5,5] {\n"
      "  %x = f32[1,8,5,5] parameter(0)\n"
      "  %k1 = f32[8,8,1,1] parameter(1)\n"
      "  %ks1 = f32[2,8,1,1] parameter(2)\n"
      "  %ks2 = f32[8,2,1,1] parameter(3)\n"
      "  %k3 = f32[4,8,1,1] parameter(4)\n"
      "  %c1 = f32[1,8,5,5] convolution(%x, %k1), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %zero = f32[] constant(0)\n"
      "  %sum = f32[1,8] reduce(%c1, %zero), dimensions={2,3}, to_apply=%add_f32\n"
      "  %sr = f32[1,8,1,1] reshape(%sum)\n"
      "  %n = f32[] constant(25)\n"
      "  %nb = f32[1,8,1,1] broadcast(%n), dimensions={}\n"
      "  %mean = f32[1,8,1,1] divide(%sr, %nb)\n"
      "  %s1 = f32[1,2,1,1] convolution(%mean, %ks1), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %zb = f32[1,2,1,1] broadcast(%zero), dimensions={}\n"
      "  %s1r = f32[1,2,1,1] maximum(%s1, %zb)\n"
      "  %s2 = f32[1,8,1,1] convolution(%s1r, %ks2), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %g = f32[1,8,1,1] logistic(%s2)\n"
      "  %gr = f32[1,8] reshape(%g)\n"
      "  %gb = f32[1,8,5,5] broadcast(%gr), dimensions={0,1}\n"
      "  %y = f32[1,8,5,5] multiply(%c1, %gb)\n"
      "  ROOT %c3 = f32[1,4,5,5] convolution(%y, %k3), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 0);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* Sum pools over C and H, and a sum over C and H: NHWC would fold their elements in
 * another order (and random floats would show it), so both stay NCHW between
 * transposes and the results stay bit-identical. */
static void order_changing_reductions_stay(void) {
  const char *text =
      "HloModule order\n"
      "%add_f32 (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(%a, %b)\n"
      "}\n"
      "ENTRY %main (x: f32[1,4,6,6], k1: f32[4,4,1,1], k2: f32[2,3,1,1]) -> (f32[1,2,5,6], f32[1,6]) {\n"
      "  %x = f32[1,4,6,6] parameter(0)\n"
      "  %k1 = f32[4,4,1,1] parameter(1)\n"
      "  %k2 = f32[2,3,1,1] parameter(2)\n"
      "  %c1 = f32[1,4,6,6] convolution(%x, %k1), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %zero = f32[] constant(0)\n"
      "  %rw = f32[1,3,5,6] reduce-window(%c1, %zero), window={size=1x2x2x1}, to_apply=%add_f32\n"
      "  %c2 = f32[1,2,5,6] convolution(%rw, %k2), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "  %r = f32[1,6] reduce(%c1, %zero), dimensions={1,2}, to_apply=%add_f32\n"
      "  ROOT %t = (f32[1,2,5,6], f32[1,6]) tuple(%c2, %r)\n"
      "}\n";
  hlo_module *orig = NULL, *m = rewritten(text, &orig);
  CHECK(transposes_between_convs(m->entry) == 2); /* into and out of the NCHW pool */
  for (int i = 0; i < m->entry->n_instrs; i++) {
    const hlo_instr *x = m->entry->instrs[i];
    if (x->op == HLO_OP_REDUCE_WINDOW) CHECK(x->window.dims[1].size == 2 && x->window.dims[2].size == 2);
    if (x->op == HLO_OP_REDUCE) CHECK(x->dimensions.n == 2 && x->dimensions.v[0] == 1 && x->dimensions.v[1] == 2);
  }
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* A channels-last module (as TF lowers) has nothing to relayout. */
static void channels_last_untouched(void) {
  const char *text =
      "HloModule nhwc\n"
      "ENTRY %main (x: f32[1,5,5,3], k: f32[3,3,3,4]) -> f32[1,5,5,4] {\n"
      "  %x = f32[1,5,5,3] parameter(0)\n"
      "  %k = f32[3,3,3,4] parameter(1)\n"
      "  %c = f32[1,5,5,4] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
      "  %zero = f32[] constant(0)\n"
      "  %zb = f32[1,5,5,4] broadcast(%zero), dimensions={}\n"
      "  ROOT %r = f32[1,5,5,4] maximum(%c, %zb)\n"
      "}\n";
  hlo_module *m = check_parse_hlo(text);
  bool changed = true;
  CHECK_OK(cpu_pass_conv_layout(m, &changed));
  CHECK(!changed);
  hlo_module_free(m);
}

/* One convolution alone (op-by-op execution) keeps its layout: its transposes would
 * have nothing to cancel against. */
static void lone_conv_untouched(void) {
  const char *text =
      "HloModule lone\n"
      "ENTRY %main (x: f32[1,3,5,5], k: f32[4,3,3,3]) -> f32[1,4,5,5] {\n"
      "  %x = f32[1,3,5,5] parameter(0)\n"
      "  %k = f32[4,3,3,3] parameter(1)\n"
      "  ROOT %c = f32[1,4,5,5] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *m = check_parse_hlo(text);
  bool changed = true;
  CHECK_OK(cpu_pass_conv_layout(m, &changed));
  CHECK(!changed);
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  hlo_module_free(m);
}

/* The whole cpu pipeline, which runs the pass before fusion. */
static void in_cpu_pipeline(void) {
  const char *text =
      "HloModule pipeline\n"
      "ENTRY %main (x: f32[1,3,8,8], k1: f32[4,3,3,3], b1: f32[4], k2: f32[2,4,1,1]) -> f32[1,2,8,8] {\n"
      "  %x = f32[1,3,8,8] parameter(0)\n"
      "  %k1 = f32[4,3,3,3] parameter(1)\n"
      "  %b1 = f32[4] parameter(2)\n"
      "  %k2 = f32[2,4,1,1] parameter(3)\n"
      "  %c1 = f32[1,4,8,8] convolution(%x, %k1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
      "  %bb = f32[1,4,8,8] broadcast(%b1), dimensions={1}\n"
      "  %a1 = f32[1,4,8,8] add(%c1, %bb)\n"
      "  %lo = f32[] constant(0)\n"
      "  %hi = f32[] constant(6)\n"
      "  %lob = f32[1,4,8,8] broadcast(%lo), dimensions={}\n"
      "  %hib = f32[1,4,8,8] broadcast(%hi), dimensions={}\n"
      "  %mx = f32[1,4,8,8] maximum(%a1, %lob)\n"
      "  %mn = f32[1,4,8,8] minimum(%mx, %hib)\n"
      "  ROOT %c2 = f32[1,2,8,8] convolution(%mn, %k2), window={size=1x1}, dim_labels=bf01_oi01->bf01\n"
      "}\n";
  hlo_module *orig = check_parse_hlo(text), *m = check_parse_hlo(text);
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  check_same_eval(orig, m, 101);
  for (int ci = 0; ci < m->n_comps; ci++) CHECK(all_convs_channels_last(m->comps[ci]));
  hlo_module_free(orig);
  hlo_module_free(m);
}

TEST_MAIN(TEST(conv_bias_relu_conv), TEST(conv_pool_pad_conv), TEST(residual_add), TEST(concat_branches_pool),
          TEST(squeeze_excite), TEST(order_changing_reductions_stay), TEST(channels_last_untouched),
          TEST(lone_conv_untouched), TEST(in_cpu_pipeline))
