/* Unit tests for the optimization passes (CSE, algebraic simplifier, constant folding,
 * batch-norm expansion, transpose folding, reduction splitting) and the optimize pipeline. Each case parses a
 * small module, runs one pass followed by DCE, and checks that the module still verifies,
 * that the IR has the expected shape (instruction counts, root opcode, attributes), and
 * that the evaluator computes bit-identical results before and after on pseudo-random
 * inputs. Cases where a rewrite would be wrong (x*0 and x+(+0) on floats, lossy convert
 * chains, side-effecting duplicates, reordering transposes) check that nothing fires. */
#include <math.h>
#include <stdio.h>
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

static hlo_opcode root_op(const hlo_module *m) { return m->entry->root->op; }

/* ---- CSE ---- */

static void cse_merges_identical(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  p = f32[4] parameter(0)\n"
      "  c1 = f32[] constant(2)\n"
      "  c2 = f32[] constant(2)\n"
      "  b1 = f32[4] broadcast(c1), dimensions={}\n"
      "  b2 = f32[4] broadcast(c2), dimensions={}\n"
      "  a1 = f32[4] add(p, b1)\n"
      "  a2 = f32[4] add(p, b2)\n"
      "  ROOT r = f32[4] multiply(a1, a2)\n"
      "}\n",
      hlo_pass_cse, true);
  CHECK(check_count_op(m->entry, HLO_OP_CONSTANT) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_BROADCAST) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_ADD) == 1);
  CHECK(m->entry->root->operands[0] == m->entry->root->operands[1]);
  hlo_module_free(m);
}

static void cse_replaces_root_and_settles_before_dce(void) {
  /* The root's duplicate is merged too; a second run, with the dead duplicates still in
   * place (no DCE between), reports no change, so a fix() loop around CSE ends. */
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "ENTRY main {\n"
      "  p = f32[4] parameter(0)\n"
      "  x = f32[4] exponential(p)\n"
      "  s = f32[4] add(x, x)\n"
      "  ROOT y = f32[4] exponential(p)\n"
      "}\n");
  bool changed = false;
  CHECK_OK(hlo_pass_cse(m, &changed));
  CHECK(changed);
  CHECK(strcmp(m->entry->root->name, "x") == 0);
  CHECK_OK(hlo_pass_cse(m, &changed));
  CHECK(!changed);
  hlo_module_free(m);
}

static void cse_respects_attributes(void) {
  /* different constant values, broadcast dims, compare directions: nothing merges */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  p = f32[2,2] parameter(0)\n"
      "  v = f32[2] constant({1, 2})\n"
      "  w = f32[2] constant({1, 3})\n"
      "  b1 = f32[2,2] broadcast(v), dimensions={0}\n"
      "  b2 = f32[2,2] broadcast(v), dimensions={1}\n"
      "  b3 = f32[2,2] broadcast(w), dimensions={1}\n"
      "  c1 = pred[2,2] compare(b1, b2), direction=LT\n"
      "  c2 = pred[2,2] compare(b1, b2), direction=GT\n"
      "  a = f32[2,2] add(b2, b3)\n"
      "  ROOT r = (pred[2,2], pred[2,2], f32[2,2], f32[2,2]) tuple(c1, c2, a, p)\n"
      "}\n",
      hlo_pass_cse, false);
  CHECK(check_count_op(m->entry, HLO_OP_CONSTANT) == 2);
  CHECK(check_count_op(m->entry, HLO_OP_BROADCAST) == 3);
  CHECK(check_count_op(m->entry, HLO_OP_COMPARE) == 2);
  hlo_module_free(m);
}

static void cse_keeps_side_effects(void) {
  const char *text =
      "HloModule t\n"
      "ENTRY main {\n"
      "  p = f32[4] parameter(0)\n"
      "  c1 = f32[4] custom-call(p), custom_call_target=\"foo\"\n"
      "  c2 = f32[4] custom-call(p), custom_call_target=\"foo\"\n"
      "  ROOT r = f32[4] add(c1, c2)\n"
      "}\n";
  hlo_module *m = check_parse_hlo(text);
  bool changed = true;
  CHECK_OK(hlo_pass_cse(m, &changed));
  CHECK(!changed);
  CHECK(check_count_op(m->entry, HLO_OP_CUSTOM_CALL) == 2);
  hlo_module_free(m);
}

/* ---- algebraic simplifier ---- */

/* max(x, -inf) and min(x, +inf) are x (JAX clamps reduce_max results so); max with
 * +inf and min with -inf are not identities and stay. check_run_pass compares the
 * results bit for bit on pseudo-random inputs (NaNs included). */
static void algsimp_max_min_infinity_identities(void) {
  hlo_module *m = check_run_pass("HloModule t\nENTRY main {\n  x = f32[4] parameter(0)\n"
                                 "  ninf = f32[] constant(-inf)\n  nb = f32[4] broadcast(ninf), dimensions={}\n"
                                 "  pinf = f32[] constant(inf)\n  pb = f32[4] broadcast(pinf), dimensions={}\n"
                                 "  a = f32[4] maximum(x, nb)\n  b = f32[4] minimum(pb, a)\n"
                                 "  c = f32[4] maximum(b, pb)\n  ROOT r = f32[4] minimum(c, nb)\n}\n",
                                 hlo_pass_algebraic_simplifier, true);
  const hlo_instr *r = m->entry->root, *c = r->operands[0];
  CHECK(r->op == HLO_OP_MINIMUM && c->op == HLO_OP_MAXIMUM && c->operands[0]->op == HLO_OP_PARAMETER);
  hlo_module_free(m);
}

/* A tuple-shaped constant becomes a tuple of array constants (backends keep values in
 * arrays; the cpu backend once read a tuple constant's literal as if it were a packed
 * block and crashed), and reads of its elements fold to them. */
static void algsimp_splits_tuple_constants(void) {
  hlo_module *m = check_run_pass("HloModule t\nENTRY main {\n  x = f32[2] parameter(0)\n"
                                 "  c = ((f32[2], s32[]), u8[3]) constant((({1, 2}, 3), {4, 5, 6}))\n"
                                 "  g = (f32[2], s32[]) get-tuple-element(c), index=0\n"
                                 "  f = f32[2] get-tuple-element(g), index=0\n"
                                 "  a = f32[2] add(x, f)\n  ROOT r = (f32[2], ((f32[2], s32[]), u8[3])) tuple(a, c)\n}\n",
                                 hlo_pass_algebraic_simplifier, true);
  bool changed = false; /* the nested tuple splits on the next round, as in the pipeline's fix() */
  CHECK_OK(hlo_pass_algebraic_simplifier(m, &changed));
  CHECK_OK(hlo_pass_dce(m, &changed));
  for (int i = 0; i < m->entry->n_instrs; i++)
    if (m->entry->instrs[i]->op == HLO_OP_CONSTANT) CHECK(shape_is_array(&m->entry->instrs[i]->shape));
  hlo_module_free(m);
}

static void algsimp_arith_identities(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4] parameter(0)\n"
      "  i = s32[4] parameter(1)\n"
      "  one = f32[] constant(1)\n"
      "  ones = f32[4] broadcast(one), dimensions={}\n"
      "  nz = f32[4] constant({-0, -0, -0, -0})\n"
      "  pz = f32[] constant(0)\n"
      "  pzs = f32[4] broadcast(pz), dimensions={}\n"
      "  a = f32[4] multiply(ones, x)\n"
      "  b = f32[4] divide(a, ones)\n"
      "  c = f32[4] add(b, nz)\n"
      "  d = f32[4] subtract(c, pzs)\n"
      "  iz = s32[] constant(0)\n"
      "  izs = s32[4] broadcast(iz), dimensions={}\n"
      "  e = s32[4] add(izs, i)\n"
      "  f = s32[4] negate(e)\n"
      "  g = s32[4] negate(f)\n"
      "  ROOT r = (f32[4], s32[4]) tuple(d, g)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  CHECK(m->entry->root->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(m->entry->root->operands[1]->op == HLO_OP_PARAMETER);
  CHECK(m->entry->n_instrs == 3);
  hlo_module_free(m);
}

static void algsimp_not_where_inexact(void) {
  /* x + (+0.0) is not x for x = -0.0; x * 0.0 is not 0 for NaN, inf or negative x */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  zs = f32[4] broadcast(z), dimensions={}\n"
      "  a = f32[4] add(x, zs)\n"
      "  b = f32[4] multiply(a, zs)\n"
      "  ROOT r = f32[4] subtract(zs, b)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, false);
  CHECK(check_count_op(m->entry, HLO_OP_ADD) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_MULTIPLY) == 1);
  hlo_module_free(m);
}

static void algsimp_int_times_zero(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = s32[4] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  zs = s32[4] broadcast(z), dimensions={}\n"
      "  ROOT r = s32[4] multiply(x, zs)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  CHECK(root_op(m) == HLO_OP_BROADCAST);
  CHECK(check_count_op(m->entry, HLO_OP_MULTIPLY) == 0);
  hlo_module_free(m);
}

static void algsimp_reshape_transpose(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[2,3,4] parameter(0)\n"
      "  r1 = f32[6,4] reshape(x)\n"
      "  r2 = f32[24] reshape(r1)\n"
      "  r3 = f32[24] reshape(r2)\n"
      "  t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}\n"
      "  t2 = f32[4,3,2] transpose(t1), dimensions={1,0,2}\n"
      "  t3 = f32[2,3,4] transpose(x), dimensions={0,1,2}\n"
      "  t4 = f32[3,2,4] transpose(x), dimensions={1,0,2}\n"
      "  t5 = f32[2,3,4] transpose(t4), dimensions={1,0,2}\n"
      "  ROOT r = (f32[24], f32[4,3,2], f32[2,3,4], f32[2,3,4]) tuple(r3, t2, t3, t5)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(root->operands[0]->op == HLO_OP_RESHAPE && root->operands[0]->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[1]->op == HLO_OP_TRANSPOSE && root->operands[1]->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[1]->dimensions.v[0] == 2 && root->operands[1]->dimensions.v[1] == 1 &&
        root->operands[1]->dimensions.v[2] == 0);
  CHECK(root->operands[2]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[3]->op == HLO_OP_PARAMETER);
  CHECK(check_count_op(m->entry, HLO_OP_RESHAPE) == 1 && check_count_op(m->entry, HLO_OP_TRANSPOSE) == 1);
  hlo_module_free(m);
}

/* A reshape that only inserts size-1 dims moves below the elementwise ops that read it
 * (a dot's bias add and activation), renaming broadcast dims, folding into another such
 * reshape and reshaping a plain operand; one that changes dims otherwise stays. */
static void algsimp_unit_reshape_sinks(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  d = f32[8,6] parameter(0)\n"
      "  bias = f32[6] parameter(1)\n"
      "  res = f32[1,8,6] parameter(2)\n"
      "  r = f32[1,8,6] reshape(d)\n"
      "  bb = f32[1,8,6] broadcast(bias), dimensions={2}\n"
      "  a = f32[1,8,6] add(r, bb)\n"
      "  z = f32[] constant(0)\n"
      "  zb = f32[1,8,6] broadcast(z), dimensions={}\n"
      "  m = f32[1,8,6] maximum(a, zb)\n"
      "  ROOT s = f32[1,8,6] add(m, res)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  /* one reshape at the end; the adds and the maximum run at rank 2 */
  hlo_instr *root = m->entry->root;
  CHECK(root->op == HLO_OP_RESHAPE && root->operands[0]->op == HLO_OP_ADD && root->operands[0]->shape.rank == 2);
  hlo_instr *mx = root->operands[0]->operands[0];
  CHECK(mx->op == HLO_OP_MAXIMUM && mx->shape.rank == 2);
  hlo_instr *add = mx->operands[0];
  CHECK(add->op == HLO_OP_ADD && add->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(add->operands[1]->op == HLO_OP_BROADCAST && add->operands[1]->dimensions.v[0] == 1);
  hlo_module_free(m);
  /* a split of a dim is not a unit-dim reshape: nothing to do */
  m = check_run_pass("HloModule t\nENTRY main {\n  d = f32[8,6] parameter(0)\n  r = f32[2,4,6] reshape(d)\n"
               "  ROOT n = f32[2,4,6] negate(r)\n}\n",
               hlo_pass_algebraic_simplifier, false);
  hlo_module_free(m);
}

static void algsimp_broadcast_slice(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[3] parameter(0)\n"
      "  y = f32[10,8] parameter(1)\n"
      "  b1 = f32[3,4] broadcast(x), dimensions={0}\n"
      "  b2 = f32[5,3,4] broadcast(b1), dimensions={1,2}\n"
      "  s1 = f32[8,8] slice(y), slice={[1:9], [0:8:1]}\n"
      "  s2 = f32[3,3] slice(s1), slice={[2:8:2], [1:6:2]}\n"
      "  s3 = f32[10,8] slice(y), slice={[0:10], [0:8]}\n"
      "  ROOT r = (f32[5,3,4], f32[3,3], f32[10,8]) tuple(b2, s2, s3)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(check_count_op(m->entry, HLO_OP_BROADCAST) == 1 && root->operands[0]->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[0]->dimensions.n == 1 && root->operands[0]->dimensions.v[0] == 1);
  hlo_instr *s = root->operands[1];
  CHECK(check_count_op(m->entry, HLO_OP_SLICE) == 1 && s->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(s->slice_start.v[0] == 3 && s->slice_stride.v[0] == 2 && s->slice_start.v[1] == 1 &&
        s->slice_stride.v[1] == 2);
  CHECK(root->operands[2]->op == HLO_OP_PARAMETER);
  hlo_module_free(m);
}

static void algsimp_converts(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  h = f16[4] parameter(0)\n"
      "  f = f32[4] parameter(1)\n"
      "  a = f32[4] convert(h)\n"
      "  b = f16[4] convert(a)\n"
      "  c = f16[4] convert(f)\n"
      "  d = f32[4] convert(c)\n"
      "  e = f32[4] convert(f)\n"
      "  ROOT r = (f16[4], f32[4], f32[4]) tuple(b, d, e)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(root->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[1]->op == HLO_OP_CONVERT); /* f32 -> f16 -> f32 loses bits */
  CHECK(root->operands[2]->op == HLO_OP_PARAMETER);
  CHECK(check_count_op(m->entry, HLO_OP_CONVERT) == 2);
  hlo_module_free(m);
}

/* s8 -> s32 -> f32 is s8 -> f32 (one rounding of the same integer, here none); a
 * narrowing in between (s32 -> s8 wraps) or a float in between keeps both converts. */
static void algsimp_merges_exact_integer_widening_into_float_convert(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  q = s8[4] parameter(0)\n"
      "  i = s32[4] parameter(1)\n"
      "  w = s32[4] convert(q)\n"
      "  a = f32[4] convert(w)\n"
      "  n = s8[4] convert(i)\n"
      "  b = f32[4] convert(n)\n"
      "  h = f16[4] convert(q)\n"
      "  c = f32[4] convert(h)\n"
      "  ROOT r = (f32[4], f32[4], f32[4]) tuple(a, b, c)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(root->operands[0]->op == HLO_OP_CONVERT && root->operands[0]->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[1]->operands[0]->op == HLO_OP_CONVERT); /* s32 -> s8 wraps */
  CHECK(root->operands[2]->operands[0]->op == HLO_OP_CONVERT); /* through a float */
  hlo_module_free(m);
}

static void algsimp_structural(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4,5] parameter(0)\n"
      "  y = f32[4,5] parameter(1)\n"
      "  i = s32[4] parameter(2)\n"
      "  cat = f32[4,5] concatenate(x), dimensions={0}\n"
      "  z = f32[] constant(0)\n"
      "  pd = f32[4,5] pad(y, z), padding=0_0x0_0\n"
      "  t = pred[] constant(true)\n"
      "  tb = pred[4,5] broadcast(t), dimensions={}\n"
      "  sel = f32[4,5] select(tb, cat, pd)\n"
      "  eq = pred[4] compare(i, i), direction=GE\n"
      "  lt = pred[4] compare(i, i), direction=LT\n"
      "  k1 = s32[] constant(3)\n"
      "  k2 = s32[] constant(-2)\n"
      "  ds = f32[2,3] dynamic-slice(x, k1, k2), dynamic_slice_sizes={2,3}\n"
      "  ROOT r = (f32[4,5], f32[4,5], pred[4], pred[4], f32[2,3]) tuple(sel, pd, eq, lt, ds)\n"
      "}\n",
      hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(root->operands[0]->op == HLO_OP_PARAMETER && root->operands[0]->parameter_number == 0);
  CHECK(root->operands[1]->op == HLO_OP_PARAMETER && root->operands[1]->parameter_number == 1);
  CHECK(root->operands[2]->op == HLO_OP_BROADCAST && root->operands[3]->op == HLO_OP_BROADCAST);
  CHECK(check_count_op(m->entry, HLO_OP_COMPARE) == 0);
  hlo_instr *ds = root->operands[4];
  CHECK(ds->op == HLO_OP_SLICE && ds->slice_start.v[0] == 2 && ds->slice_start.v[1] == 0);
  CHECK(check_count_op(m->entry, HLO_OP_DYNAMIC_SLICE) == 0 && check_count_op(m->entry, HLO_OP_SELECT) == 0);
  hlo_module_free(m);
}

static void algsimp_float_compare_kept(void) {
  /* x == x is false for NaN */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4] parameter(0)\n"
      "  ROOT eq = pred[4] compare(x, x), direction=EQ\n"
      "}\n",
      hlo_pass_algebraic_simplifier, false);
  CHECK(root_op(m) == HLO_OP_COMPARE);
  hlo_module_free(m);
}

static void algsimp_int_reduce_of_broadcast(void) {
  const char *text =
      "HloModule t\n"
      "add_s32 {\n"
      "  a = s32[] parameter(0)\n"
      "  b = s32[] parameter(1)\n"
      "  ROOT s = s32[] add(a, b)\n"
      "}\n"
      "max_s32 {\n"
      "  c = s32[] parameter(0)\n"
      "  d = s32[] parameter(1)\n"
      "  ROOT mx = s32[] maximum(d, c)\n"
      "}\n"
      "add_f32 {\n"
      "  e = f32[] parameter(0)\n"
      "  f = f32[] parameter(1)\n"
      "  ROOT fs = f32[] add(e, f)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = s32[3,4] parameter(0)\n"
      "  y = f32[3] parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  bx = s32[3,5,4] broadcast(x), dimensions={0,2}\n"
      "  r1 = s32[3,4] reduce(bx, i), dimensions={1}, to_apply=add_s32\n"
      "  r2 = s32[3,4] reduce(bx, i), dimensions={1}, to_apply=max_s32\n"
      "  fb = f32[3,7] broadcast(y), dimensions={0}\n"
      "  fz = f32[] constant(0)\n"
      "  r3 = f32[3] reduce(fb, fz), dimensions={1}, to_apply=add_f32\n"
      "  ROOT r = (s32[3,4], s32[3,4], f32[3]) tuple(r1, r2, r3)\n"
      "}\n";
  hlo_module *m = check_run_pass(text, hlo_pass_algebraic_simplifier, true);
  hlo_instr *root = m->entry->root;
  CHECK(root->operands[0]->op == HLO_OP_ADD && root->operands[1]->op == HLO_OP_MAXIMUM);
  CHECK(root->operands[2]->op == HLO_OP_REDUCE); /* float sums are order-dependent */
  CHECK(check_count_op(m->entry, HLO_OP_REDUCE) == 1);
  hlo_module_free(m);
}

/* ---- constant folding ---- */

static void folding_folds_constants(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "add_f32 {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT sum = f32[] add(a, b)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[3] parameter(0)\n"
      "  c = f32[3] constant({1, 2, 3.5})\n"
      "  d = f32[3] multiply(c, c)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[] reduce(d, z), dimensions={0}, to_apply=add_f32\n"
      "  sb = f32[3] broadcast(s), dimensions={}\n"
      "  io = f32[3] iota(), iota_dimension=0\n"
      "  e = f32[3] add(x, sb)\n"
      "  ROOT r = f32[3] add(e, io)\n"
      "}\n",
      eval_pass_constant_folding, true);
  CHECK(check_count_op(m->entry, HLO_OP_MULTIPLY) == 0 && check_count_op(m->entry, HLO_OP_REDUCE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_BROADCAST) == 1); /* broadcasts only grow the module */
  CHECK(check_count_op(m->entry, HLO_OP_IOTA) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_ADD) == 2); /* depend on the parameter */
  hlo_module_free(m);
}

static void folding_does_not_grow(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  c = f32[2] constant({1, 2})\n"
      "  z = f32[] constant(0)\n"
      "  ROOT p = f32[400] pad(c, z), padding=0_398\n"
      "}\n",
      eval_pass_constant_folding, false);
  CHECK(root_op(m) == HLO_OP_PAD);
  hlo_module_free(m);
}

static void folding_respects_cap(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  c = f32[] constant(1)\n"
      "  b = f32[300,300] broadcast(c), dimensions={}\n"
      "  ROOT n = f32[300,300] negate(b)\n"
      "}\n",
      eval_pass_constant_folding, false);
  CHECK(root_op(m) == HLO_OP_NEGATE);
  hlo_module_free(m);
}

/* A weight times its per-channel scale (90,000 elements, above the general cap) folds
 * like a relayout; an elementwise op of a broadcast alone still does not (above). */
static void folding_takes_scaled_weights_as_a_relayout(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[300,300] parameter(0)\n"
      "  c = f32[300,300] constant({...})\n"
      "  s = f32[300] constant({...})\n"
      "  sb = f32[300,300] broadcast(s), dimensions={0}\n"
      "  d = f32[300,300] multiply(c, sb)\n"
      "  ROOT r = f32[300,300] add(x, d)\n"
      "}\n",
      eval_pass_constant_folding, true);
  CHECK(check_count_op(m->entry, HLO_OP_MULTIPLY) == 0);
  CHECK(m->entry->root->operands[1]->op == HLO_OP_CONSTANT);
  hlo_module_free(m);
}

/* Runs constant folding on m, which must change and still verify. */
static void fold_once(hlo_module *m) {
  bool changed = false;
  CHECK_OK(eval_pass_constant_folding(m, &changed));
  CHECK(changed);
  CHECK_OK(hlo_verify_module(m));
}

/* A constant whose only reader was folded gives up its data once DCE removed it, so a
 * weight folded through several steps keeps no intermediate copy. */
static void folding_releases_the_data_of_constants_it_replaced(void) {
  hlo_module *m = check_parse_hlo("HloModule t\n"
                                  "ENTRY main {\n"
                                  "  x = f32[300,300] parameter(0)\n"
                                  "  c = f32[300,300] constant({...})\n"
                                  "  t = f32[300,300] transpose(c), dimensions={1,0}\n"
                                  "  n = f32[300,300] negate(t)\n"
                                  "  keep = f32[300,300] constant({...})\n"
                                  "  k2 = f32[300,300] negate(keep)\n"
                                  "  a = f32[300,300] add(x, n)\n"
                                  "  b = f32[300,300] add(a, k2)\n"
                                  "  ROOT r = (f32[300,300], f32[300,300]) tuple(b, keep)\n"
                                  "}\n");
  if (!m) return;
  hlo_literal *c = hlo_computation_find_instr(m->entry, "c")->literal;
  hlo_literal *keep = hlo_computation_find_instr(m->entry, "keep")->literal;
  fold_once(m);
  CHECK(c->data == NULL);    /* folded into t, then n: released */
  CHECK(keep->data != NULL); /* still an output */
  CHECK(check_count_op(m->entry, HLO_OP_NEGATE) == 0 && check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  hlo_module_free(m);
}

/* A pass that replaces a weight's reader leaves the old reader behind until DCE
 * (conv-layout's NHWC convolution beside the NCHW one it replaced); folding must count
 * live readers only, or the weight's data stays alive beside its folded copy through
 * the whole pipeline (resnet50's 97 MB of weights held twice). */
static void folding_releases_a_constant_whose_other_reader_is_dead(void) {
  hlo_module *m = check_parse_hlo("HloModule t\n"
                                  "ENTRY main {\n"
                                  "  x = f32[300,300] parameter(0)\n"
                                  "  c = f32[300,300] constant({...})\n"
                                  "  old_reader = f32[300,300] add(x, c)\n"
                                  "  t = f32[300,300] transpose(c), dimensions={1,0}\n"
                                  "  ROOT a = f32[300,300] add(x, t)\n"
                                  "}\n");
  if (!m) return;
  hlo_literal *c = hlo_computation_find_instr(m->entry, "c")->literal;
  fold_once(m);
  CHECK(c->data == NULL); /* folded into t; old_reader was dead */
  CHECK(hlo_computation_find_instr(m->entry, "old_reader") == NULL);
  hlo_module_free(m);
}

/* ---- batch-norm expansion ---- */

static void batchnorm_expands(void) {
  static const char *types[] = {"f32", "f16", "bf16", "f64"};
  for (int t = 0; t < 4; t++) {
    char text[2048];
    const char *T = types[t];
    snprintf(text, sizeof text,
             "HloModule t\n"
             "ENTRY main {\n"
             "  x = %s[2,3,4] parameter(0)\n"
             "  s = %s[3] parameter(1)\n"
             "  o = %s[3] parameter(2)\n"
             "  m = %s[3] parameter(3)\n"
             "  v = %s[3] constant({0.5, 1.25, 3})\n"
             "  ROOT bn = %s[2,3,4] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1\n"
             "}\n",
             T, T, T, T, T, T);
    hlo_module *mod = check_run_pass(text, hlo_pass_batchnorm_expander, true);
    CHECK(check_count_op(mod->entry, HLO_OP_BATCH_NORM_INFERENCE) == 0);
    CHECK(root_op(mod) == HLO_OP_ADD);
    CHECK(check_count_op(mod->entry, HLO_OP_SQRT) == 1);
    hlo_module_free(mod);
  }
}

/* ---- transpose folding ---- */

static void transpose_folds_into_dot(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,2] parameter(0)\n"
      "  b = f32[4,3] parameter(1)\n"
      "  at = f32[2,3] transpose(a), dimensions={1,0}\n"
      "  bt = f32[3,4] transpose(b), dimensions={1,0}\n"
      "  ROOT d = f32[2,4] dot(at, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "}\n",
      hlo_pass_transpose_folding, true);
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  CHECK(root_op(m) == HLO_OP_DOT);
  CHECK(m->entry->root->dot.lhs_contracting.v[0] == 0 && m->entry->root->dot.rhs_contracting.v[0] == 1);
  hlo_module_free(m);
}

static void transpose_batch_dims_fold(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,5,2] parameter(0)\n"
      "  b = f32[5,3,4] parameter(1)\n"
      "  at = f32[5,2,3] transpose(a), dimensions={1,2,0}\n"
      "  ROOT d = f32[5,2,4] dot(at, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
      "rhs_contracting_dims={1}\n"
      "}\n",
      hlo_pass_transpose_folding, true);
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  CHECK(m->entry->root->dot.lhs_batch.v[0] == 1 && m->entry->root->dot.lhs_contracting.v[0] == 0);
  hlo_module_free(m);
}

static void transpose_reordering_free_dims_kept(void) {
  /* the transpose swaps two free dims: the dot cannot express that */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[4,2,3] parameter(0)\n"
      "  b = f32[3,5] parameter(1)\n"
      "  at = f32[2,4,3] transpose(a), dimensions={1,0,2}\n"
      "  ROOT d = f32[2,4,5] dot(at, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
      "}\n",
      hlo_pass_transpose_folding, false);
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 1);
  hlo_module_free(m);
}

/* ---- reduction splitting ---- */

static const char *split_reducers =
    "add_s32 {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT s = s32[] add(a, b)\n}\n"
    "max_f32 {\n  c = f32[] parameter(0)\n  d = f32[] parameter(1)\n  ROOT m = f32[] maximum(c, d)\n}\n"
    "add_f32 {\n  e = f32[] parameter(0)\n  f = f32[] parameter(1)\n  ROOT t = f32[] add(e, f)\n}\n";

/* A module reducing x of TYPE and X_SHAPE over DIMS from INIT with REDUCER. */
static void split_module(char *text, size_t size, const char *type, const char *init, const char *reducer,
                         const char *dims, const char *x_shape, const char *r_shape) {
  snprintf(text, size,
           "HloModule t\n%sENTRY main {\n  x = %s%s parameter(0)\n  i = %s[] constant(%s)\n"
           "  ROOT r = %s%s reduce(x, i), dimensions={%s}, to_apply=%s\n}\n",
           split_reducers, type, x_shape, type, init, type, r_shape, dims, reducer);
}

/* A global max pool / integer sum over [1,64,64,8] ([1,8]: one column chunk) becomes a
 * reduce to [1,16,8] partials over a reshape splitting the 64 rows in 16, then a reduce
 * of the partials; bitwise the same (max and integer sums do not depend on order). */
static void reduction_splitter_splits_column_reductions(void) {
  char text[2048];
  static const char *cases[][3] = {{"f32", "-inf", "max_f32"}, {"s32", "0", "add_s32"}};
  for (int i = 0; i < 2; i++) {
    split_module(text, sizeof text, cases[i][0], cases[i][1], cases[i][2], "1,2", "[1,64,64,8]", "[1,8]");
    hlo_module *m = check_run_pass(text, cpu_pass_reduction_splitter, true);
    CHECK(check_count_op(m->entry, HLO_OP_REDUCE) == 2 && check_count_op(m->entry, HLO_OP_RESHAPE) == 1);
    const hlo_instr *outer = m->entry->root, *inner = outer->operands[0];
    CHECK(outer->op == HLO_OP_REDUCE && outer->dimensions.n == 1 && outer->dimensions.v[0] == 1);
    CHECK(inner->op == HLO_OP_REDUCE && inner->shape.rank == 3 && inner->shape.dims[1] == 16);
    CHECK(inner->operands[0]->op == HLO_OP_RESHAPE && inner->operands[0]->shape.rank == 5);
    hlo_module_free(m);
  }
}

/* Left alone: a non-identity init (it would be added twice), a reduction of the minor
 * dimension (one unit per output already), too little to reduce per output, enough
 * outputs for the threads, a reducer that is not a plain binary op. */
static void reduction_splitter_leaves_others(void) {
  char text[2048];
  split_module(text, sizeof text, "f32", "1", "add_f32", "1,2", "[1,64,64,8]", "[1,8]");
  hlo_module_free(check_run_pass(text, cpu_pass_reduction_splitter, false));
  split_module(text, sizeof text, "f32", "0", "add_f32", "2,3", "[1,8,64,64]", "[1,8]");
  hlo_module_free(check_run_pass(text, cpu_pass_reduction_splitter, false));
  split_module(text, sizeof text, "f32", "-inf", "max_f32", "1,2", "[1,16,16,8]", "[1,8]");
  hlo_module_free(check_run_pass(text, cpu_pass_reduction_splitter, false));
  split_module(text, sizeof text, "f32", "-inf", "max_f32", "1", "[16,2048,256]", "[16,256]");
  hlo_module_free(check_run_pass(text, cpu_pass_reduction_splitter, false));
  const char *first = "HloModule t\n"
                      "first {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] copy(a)\n}\n"
                      "ENTRY main {\n  x = f32[1,64,64,8] parameter(0)\n  i = f32[] constant(0)\n"
                      "  ROOT r = f32[1,8] reduce(x, i), dimensions={1,2}, to_apply=first\n}\n";
  hlo_module_free(check_run_pass(first, cpu_pass_reduction_splitter, false));
}

/* A float sum (a global average pool) is split too; its result differs from the single
 * sequential sum by rounding only: within 1e-5 of the result's scale (2^-24 per add over
 * 4096 terms, summed in 16 partials of 256 and then 16, stays far below that). */
static void reduction_splitter_float_sum_close(void) {
  char text[2048];
  split_module(text, sizeof text, "f32", "0", "add_f32", "1,2", "[1,64,64,8]", "[1,8]");
  hlo_module *before = check_parse_hlo(text), *m = check_parse_hlo(text);
  bool changed = false;
  CHECK_OK(cpu_pass_reduction_splitter(m, &changed));
  CHECK(changed);
  CHECK_OK(hlo_verify_module(m));
  hlo_literal *a = check_eval_random(before, 23, NULL), *b = check_eval_random(m, 23, NULL);
  CHECK(a && b && a->n == 8 && b->n == 8);
  double scale = 0;
  for (int64_t k = 0; a && k < a->n; k++)
    if (fabs(literal_get_f64(a, k)) > scale) scale = fabs(literal_get_f64(a, k));
  for (int64_t k = 0; a && b && k < a->n; k++)
    CHECK(fabs(literal_get_f64(a, k) - literal_get_f64(b, k)) <= 1e-5 * scale);
  literal_free(a);
  literal_free(b);
  hlo_module_free(before);
  hlo_module_free(m);
}

/* ---- pipeline ---- */

static void optimize_pipeline_runs(void) {
  const char *text =
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[2,3] parameter(0)\n"
      "  w = f32[4,3] parameter(1)\n"
      "  one = f32[] constant(1)\n"
      "  two = f32[] constant(2)\n"
      "  three = f32[] add(one, two)\n"
      "  b = f32[2,4] broadcast(three), dimensions={}\n"
      "  wt = f32[3,4] transpose(w), dimensions={1,0}\n"
      "  r1 = f32[2,3] reshape(x)\n"
      "  d1 = f32[2,4] dot(r1, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  d2 = f32[2,4] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  s = f32[2,4] add(d1, d2)\n"
      "  ROOT r = f32[2,4] multiply(s, b)\n"
      "}\n";
  hlo_module *before = check_parse_hlo(text), *m = check_parse_hlo(text);
  hlo_pipeline *p = hlo_pipeline_new_optimize(eval_pass_constant_folding);
  hlo_pipeline_options opts = hlo_pipeline_options_default();
  bool changed = false;
  CHECK_OK(hlo_pipeline_run(p, m, &opts, &changed));
  CHECK(changed);
  CHECK(check_count_op(m->entry, HLO_OP_DOT) == 1 && check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_RESHAPE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_CONSTANT) == 1);
  hlo_literal *a = check_eval_random(before, 17, NULL), *b = check_eval_random(m, 17, NULL);
  CHECK(a && b && literal_equal(a, b));
  literal_free(a);
  literal_free(b);
  hlo_pipeline_free(p);
  hlo_module_free(before);
  hlo_module_free(m);
}

/* XLA's custom-call TopK with a plain value comparator becomes kiln's topk, a GT with
 * the parameters swapped meaning smallest; any other comparator becomes a stable sort of
 * (x, iota) with it, sliced (both forms evaluate like the original: checked against
 * XLA's own results by the JAX suite's optimised top_k module). */
static const char *topk_call(const char *direction, const char *operands, const char *type) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "HloModule topk\n\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
           "  d = s32[] parameter(3)\n  ROOT r = pred[] compare(%s), direction=%s%s\n}\n\n"
           "ENTRY main {\n  x = f32[4,10] parameter(0)\n"
           "  ROOT t = (f32[4,3], s32[4,3]) custom-call(x), custom_call_target=\"TopK\", called_computations={cmp}\n}\n",
           operands, direction, type);
  return buf;
}

static void topk_custom_call_becomes_topk(void) {
  struct {
    const char *dir, *ops, *type;
    bool rewritten, largest;
  } cases[] = {
      {"GT", "a, b", ", type=TOTALORDER", true, true},
      {"LT", "a, b", ", type=TOTALORDER", true, false},
      {"GT", "b, a", ", type=TOTALORDER", true, false},
      {"GT", "a, b", "", false, false}, /* IEEE order: NaNs would not sort as kiln's topk does */
      {"GE", "a, b", ", type=TOTALORDER", false, false},
      {"GT", "c, d", "", false, false}, /* by index */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hlo_module *m = check_parse_hlo(topk_call(cases[k].dir, cases[k].ops, cases[k].type));
    bool changed = false;
    CHECK_OK(hlo_pass_topk_custom_call(m, &changed));
    CHECK(changed);
    CHECK_OK(hlo_verify_module(m));
    const hlo_instr *t = m->entry->root;
    if (cases[k].rewritten) {
      CHECK(t->op == HLO_OP_TOPK && t->k == 3 && t->largest == cases[k].largest && t->n_called == 0);
    } else {
      CHECK(t->op == HLO_OP_TUPLE && t->operands[0]->op == HLO_OP_SLICE && check_count_op(m->entry, HLO_OP_SORT) == 1);
    }
    hlo_module_free(m);
  }
}

TEST_MAIN(TEST(cse_merges_identical), TEST(cse_replaces_root_and_settles_before_dce), TEST(cse_respects_attributes), TEST(cse_keeps_side_effects),
          TEST(algsimp_arith_identities), TEST(algsimp_splits_tuple_constants), TEST(algsimp_max_min_infinity_identities), TEST(algsimp_not_where_inexact), TEST(algsimp_int_times_zero),
          TEST(algsimp_reshape_transpose), TEST(algsimp_unit_reshape_sinks), TEST(algsimp_broadcast_slice), TEST(algsimp_converts),
          TEST(algsimp_merges_exact_integer_widening_into_float_convert), TEST(algsimp_structural), TEST(algsimp_float_compare_kept), TEST(algsimp_int_reduce_of_broadcast), TEST(folding_folds_constants),
          TEST(folding_respects_cap), TEST(folding_takes_scaled_weights_as_a_relayout),
          TEST(folding_releases_the_data_of_constants_it_replaced),
          TEST(folding_releases_a_constant_whose_other_reader_is_dead), TEST(folding_does_not_grow), TEST(batchnorm_expands), TEST(transpose_folds_into_dot),
          TEST(transpose_batch_dims_fold), TEST(transpose_reordering_free_dims_kept),
          TEST(reduction_splitter_splits_column_reductions), TEST(reduction_splitter_leaves_others),
          TEST(reduction_splitter_float_sum_close), TEST(optimize_pipeline_runs), TEST(topk_custom_call_becomes_topk))
