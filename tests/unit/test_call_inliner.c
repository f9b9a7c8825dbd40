/* Unit tests for the call inliner (src/hlo/passes/call_inliner.c). Each case parses a
 * module with calls, runs the pass alone and checks that no call is left anywhere in
 * the module, that the module still verifies (definition order, unique names, shapes),
 * that the callees nothing reaches any more are gone while those still used (a
 * reducer) stay, and that the evaluator computes bit-identical results before and
 * after on pseudo-random inputs. The last cases go through the cpu pipeline and the cpu
 * backend's vtable: a module JAX-style calls compile there (before the inliner, the
 * code generator refused `call` and the whole module fell back to the interpreter). */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_pipeline.h"
#include "check.h"
#include "check_util.h"
#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/passes/pipeline.h"
#include "hlo/verifier.h"

static int count_op_in_module(const hlo_module *m, hlo_opcode op) {
  int n = 0;
  for (int i = 0; i < m->n_comps; i++) n += check_count_op(m->comps[i], op);
  return n;
}

/* Runs the inliner alone on a fresh parse of text; checks changed, verification, no
 * call left and equal evaluation (three seeds) against the module as written. */
static hlo_module *inline_checked(const char *text, bool expect_changed) {
  hlo_module *before = check_parse_hlo(text);
  hlo_module *m = check_parse_hlo(text);
  bool changed = !expect_changed;
  CHECK_OK(hlo_pass_call_inliner(m, &changed));
  CHECK(changed == expect_changed);
  CHECK_OK(hlo_verify_module(m));
  CHECK(count_op_in_module(m, HLO_OP_CALL) == 0);
  for (uint64_t seed = 17; seed < 20; seed++) check_same_eval(before, m, seed);
  hlo_module_free(before);
  return m;
}

static const char *relu_twice_text =
    "HloModule t\n"
    "relu {\n"
    "  x = f32[8] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  zb = f32[8] broadcast(z), dimensions={}\n"
    "  ROOT m = f32[8] maximum(x, zb)\n"
    "}\n"
    "ENTRY main {\n"
    "  a = f32[8] parameter(0)\n"
    "  b = f32[8] parameter(1)\n"
    "  r1 = f32[8] call(a), to_apply=relu\n"
    "  s = f32[8] subtract(r1, b)\n"
    "  r2 = f32[8] call(s), to_apply=relu\n"
    "  ROOT o = f32[8] multiply(r2, r1)\n"
    "}\n";

static void test_inlines_a_call(void) {
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "relu {\n"
      "  x = f32[2,3]{0,1} parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  zb = f32[2,3]{0,1} broadcast(z), dimensions={}\n"
      "  ROOT m = f32[2,3]{0,1} maximum(x, zb)\n"
      "}\n"
      "ENTRY main {\n"
      "  a = f32[2,3]{0,1} parameter(0)\n"
      "  n = f32[2,3]{0,1} negate(a)\n"
      "  ROOT r = f32[2,3]{0,1} call(n), to_apply=relu\n"
      "}\n",
      true);
  CHECK(m->n_comps == 1); /* relu is unreachable now: removed */
  CHECK(m->entry->root->op == HLO_OP_MAXIMUM);
  CHECK(m->entry->root->operands[0]->op == HLO_OP_NEGATE);
  CHECK(m->entry->root->operands[1]->op == HLO_OP_BROADCAST);
  /* The copies keep the original's layout and are named after it. */
  CHECK(m->entry->root->shape.has_layout && m->entry->root->shape.minor_to_major[0] == 0);
  CHECK(strncmp(m->entry->root->name, "m.", 2) == 0);
  hlo_module_free(m);
}

static void test_two_call_sites(void) {
  hlo_module *m = inline_checked(relu_twice_text, true);
  CHECK(m->n_comps == 1);
  CHECK(check_count_op(m->entry, HLO_OP_MAXIMUM) == 2);
  CHECK(check_count_op(m->entry, HLO_OP_CONSTANT) == 2); /* one copy per site (CSE may merge them) */
  /* Both copies got their own names (the verifier checks uniqueness too). */
  const hlo_instr *m1 = m->entry->root->operands[0], *m2 = m->entry->root->operands[1];
  CHECK(m1->op == HLO_OP_MAXIMUM && m2->op == HLO_OP_MAXIMUM && strcmp(m1->name, m2->name) != 0);
  hlo_module_free(m);
}

static void test_nested_calls(void) {
  /* main -> outer -> middle -> inner, and a call inside a while body and inside a
   * reducer: every one is inlined wherever it is. */
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "inner {\n"
      "  p = f32[4] parameter(0)\n"
      "  ROOT e = f32[4] exponential(p)\n"
      "}\n"
      "middle {\n"
      "  p = f32[4] parameter(0)\n"
      "  q = f32[4] parameter(1)\n"
      "  c = f32[4] call(p), to_apply=inner\n"
      "  ROOT a = f32[4] add(c, q)\n"
      "}\n"
      "outer {\n"
      "  p = f32[4] parameter(0)\n"
      "  c1 = f32[4] call(p, p), to_apply=middle\n"
      "  c2 = f32[4] call(c1), to_apply=inner\n"
      "  ROOT t = f32[4] tanh(c2)\n"
      "}\n"
      "add_via_call {\n"
      "  x = f32[] parameter(0)\n"
      "  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] call(x, y), to_apply=scalar_add\n"
      "}\n"
      "scalar_add {\n"
      "  x = f32[] parameter(0)\n"
      "  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n"
      "}\n"
      "cond {\n"
      "  s = (s32[], f32[4]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n"
      "  k = s32[] constant(3)\n"
      "  ROOT lt = pred[] compare(i, k), direction=LT\n"
      "}\n"
      "body {\n"
      "  s = (s32[], f32[4]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n"
      "  v = f32[4] get-tuple-element(s), index=1\n"
      "  one = s32[] constant(1)\n"
      "  j = s32[] add(i, one)\n"
      "  w = f32[4] call(v), to_apply=outer\n"
      "  ROOT n = (s32[], f32[4]) tuple(j, w)\n"
      "}\n"
      "ENTRY main {\n"
      "  a = f32[4] parameter(0)\n"
      "  o = f32[4] call(a), to_apply=outer\n"
      "  zero = s32[] constant(0)\n"
      "  init = (s32[], f32[4]) tuple(zero, o)\n"
      "  l = (s32[], f32[4]) while(init), condition=cond, body=body\n"
      "  v = f32[4] get-tuple-element(l), index=1\n"
      "  z = f32[] constant(0)\n"
      "  ROOT r = f32[] reduce(v, z), dimensions={0}, to_apply=add_via_call\n"
      "}\n",
      true);
  /* inner, middle, outer and scalar_add are gone; cond, body, add_via_call stay. */
  CHECK(m->n_comps == 4);
  CHECK(!hlo_module_find_computation(m, "inner") && !hlo_module_find_computation(m, "middle") &&
        !hlo_module_find_computation(m, "outer") && !hlo_module_find_computation(m, "scalar_add"));
  hlo_computation *body = hlo_module_find_computation(m, "body");
  hlo_computation *red = hlo_module_find_computation(m, "add_via_call");
  CHECK(body && check_count_op(body, HLO_OP_EXP) == 2 && check_count_op(body, HLO_OP_TANH) == 1);
  CHECK(red && red->root->op == HLO_OP_ADD);
  CHECK(check_count_op(m->entry, HLO_OP_EXP) == 2);
  hlo_module_free(m);
}

static void test_tuple_root(void) {
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "split {\n"
      "  p = f32[6] parameter(0)\n"
      "  q = s32[] parameter(1)\n"
      "  lo = f32[3] slice(p), slice={[0:3]}\n"
      "  hi = f32[3] slice(p), slice={[3:6]}\n"
      "  cq = f32[] convert(q)\n"
      "  ROOT t = (f32[3], f32[3], f32[]) tuple(lo, hi, cq)\n"
      "}\n"
      "ENTRY main {\n"
      "  a = f32[6] parameter(0)\n"
      "  k = s32[] parameter(1)\n"
      "  c = (f32[3], f32[3], f32[]) call(a, k), to_apply=split\n"
      "  x = f32[3] get-tuple-element(c), index=0\n"
      "  y = f32[3] get-tuple-element(c), index=1\n"
      "  s = f32[] get-tuple-element(c), index=2\n"
      "  sb = f32[3] broadcast(s), dimensions={}\n"
      "  d0 = f32[3] subtract(x, y)\n"
      "  d = f32[3] multiply(d0, sb)\n"
      "  ROOT r = (f32[3], (f32[3], f32[3], f32[])) tuple(d, c)\n"
      "}\n",
      true);
  CHECK(m->n_comps == 1);
  const hlo_instr *inner = m->entry->root->operands[1];
  CHECK(inner->op == HLO_OP_TUPLE && inner->n_operands == 3);
  hlo_module_free(m);
}

static void test_callee_also_used_by_reduce(void) {
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "add {\n"
      "  x = f32[] parameter(0)\n"
      "  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n"
      "}\n"
      "ENTRY main {\n"
      "  a = f32[5] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  r = f32[] reduce(a, z), dimensions={0}, to_apply=add\n"
      "  ROOT c = f32[] call(r, r), to_apply=add\n"
      "}\n",
      true);
  hlo_computation *add = hlo_module_find_computation(m, "add");
  CHECK(add != NULL && m->n_comps == 2);
  const hlo_instr *red = m->entry->root->operands[0];
  CHECK(m->entry->root->op == HLO_OP_ADD && red->op == HLO_OP_REDUCE && red->called[0] == add);
  hlo_module_free(m);
}

static void test_edge_cases(void) {
  /* A callee returning its parameter, one with a dead instruction (copied, left for
   * DCE), a call as an operand of another call. */
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "ident {\n"
      "  p = f32[3] parameter(0)\n"
      "  dead = f32[3] negate(p)\n"
      "  ROOT q = f32[3] parameter(1)\n"
      "  unused = f32[3] parameter(2)\n"
      "}\n"
      "ENTRY main {\n"
      "  a = f32[3] parameter(0)\n"
      "  b = f32[3] parameter(1)\n"
      "  i1 = f32[3] call(a, b, a), to_apply=ident\n"
      "  ROOT i2 = f32[3] call(b, i1, b), to_apply=ident\n"
      "}\n",
      true);
  CHECK(m->n_comps == 1);
  CHECK(strcmp(m->entry->root->name, "b") == 0);
  CHECK(check_count_op(m->entry, HLO_OP_NEGATE) == 2);
  hlo_module_free(m);

  /* Nothing to do: unchanged, not even reordered. */
  m = inline_checked(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3] parameter(0)\n"
      "  ROOT n = f32[3] negate(a)\n"
      "}\n",
      false);
  CHECK(m->n_comps == 1 && m->entry->n_instrs == 2);
  hlo_module_free(m);
}

/* Names repeated across computations (renamed by the parser) and names of the form the
 * inliner generates must not collide. */
static void test_fresh_names(void) {
  hlo_module *m = inline_checked(
      "HloModule t\n"
      "f {\n"
      "  m = f32[2] parameter(0)\n"
      "  ROOT m.1 = f32[2] negate(m)\n"
      "}\n"
      "ENTRY main {\n"
      "  m = f32[2] parameter(0)\n"
      "  m.2 = f32[2] call(m), to_apply=f\n"
      "  m.3 = f32[2] call(m.2), to_apply=f\n"
      "  m.4 = f32[2] call(m.3), to_apply=f\n"
      "  ROOT m.5 = f32[2] add(m.4, m.2)\n"
      "}\n",
      true);
  CHECK(check_count_op(m->entry, HLO_OP_NEGATE) == 3);
  hlo_module_free(m);
}

/* The optimize and cpu pipelines start with the inliner: nothing after it sees a call. */
static void test_cpu_pipeline_and_backend(void) {
  hlo_module *m = check_parse_hlo(relu_twice_text);
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  CHECK(count_op_in_module(m, HLO_OP_CALL) == 0);
  hlo_module_free(m);

  /* Through the vtable: compiles on cpu (UNIMPLEMENTED before the inliner) and matches
   * the evaluator bit for bit (maximum, subtract, multiply are exact). */
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  if (!cpu) return;
  m = check_parse_hlo(relu_twice_text);
  hlo_literal *args[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    if (args[i]) literal_fill_pseudo_random(args[i], 5 + (uint64_t)i);
  }
  backend_executable *e = NULL;
  kiln_status s = cpu->compile(cpu, m, NULL, &e);
  CHECK_OK(s);
  if (!s && args[0] && args[1]) {
    hlo_literal *got = NULL, *want = NULL;
    CHECK_OK(cpu->execute(e, args, 2, &got));
    CHECK_OK(eval_module(m, args, 2, &want));
    CHECK(got && want && literal_equal(got, want));
    literal_free(got);
    literal_free(want);
  }
  if (e) cpu->destroy(e);
  /* The module handed to compile is not changed (the backend works on a copy). */
  CHECK(count_op_in_module(m, HLO_OP_CALL) == 2);
  for (int i = 0; i < 2; i++) literal_free(args[i]);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_inlines_a_call), TEST(test_two_call_sites), TEST(test_nested_calls), TEST(test_tuple_root),
          TEST(test_callee_also_used_by_reduce), TEST(test_edge_cases), TEST(test_fresh_names),
          TEST(test_cpu_pipeline_and_backend))
