/* Unit tests for the optimization-barrier expander (src/hlo/passes/opt_barrier_expander.c).
 * Each case parses a module with opt-barriers, runs the pass (then DCE) and checks that
 * no barrier is left in any computation, that the module still verifies, that reads of
 * a tuple through a barrier now read the tuple's elements, and that the evaluator gives
 * bit-identical results before and after. The last case runs the cpu pipeline and the
 * cpu backend on a jax.checkpoint-shaped module: the barrier is gone before fusion, the
 * values behind it fuse with their users, and the compiled module matches the
 * evaluator bit for bit. */
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

static int barriers_in(const hlo_module *m) {
  int n = 0;
  for (int i = 0; i < m->n_comps; i++) n += check_count_op(m->comps[i], HLO_OP_OPTIMIZATION_BARRIER);
  return n;
}

static hlo_module *expand(const char *text, bool expect_changed) {
  hlo_module *m = check_run_pass(text, hlo_pass_opt_barrier_expander, expect_changed);
  CHECK(barriers_in(m) == 0);
  return m;
}

/* jax.checkpoint's shape: a tuple of saved values through a barrier, read back by
 * get-tuple-element. */
static const char *remat_text =
    "HloModule remat\n"
    "ENTRY main {\n"
    "  x = s32[4,3] parameter(0)\n"
    "  w = s32[3,3] parameter(1)\n"
    "  t = (s32[4,3], s32[3,3]) tuple(x, w)\n"
    "  b = (s32[4,3], s32[3,3]) opt-barrier(t)\n"
    "  x1 = s32[4,3] get-tuple-element(b), index=0\n"
    "  w1 = s32[3,3] get-tuple-element(b), index=1\n"
    "  d = s32[4,3] dot(x1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  m = s32[4,3] multiply(d, x1)\n"
    "  ROOT s = s32[4,3] add(m, x)\n"
    "}\n";

static void test_tuple_reads_go_to_the_elements(void) {
  hlo_module *m = expand(remat_text, true);
  const hlo_instr *root = m->entry->root; /* s = add(multiply(dot(x, w), x), x) */
  CHECK(root->op == HLO_OP_ADD);
  const hlo_instr *mul = root->operands[0], *x = root->operands[1];
  CHECK(x->op == HLO_OP_PARAMETER && x->parameter_number == 0);
  CHECK(mul->op == HLO_OP_MULTIPLY && mul->operands[1] == x);
  CHECK(mul->operands[0]->op == HLO_OP_DOT);
  CHECK(mul->operands[0]->operands[0] == x);
  CHECK(mul->operands[0]->operands[1]->op == HLO_OP_PARAMETER);
  /* the tuple and its reads were dead, DCE took them */
  CHECK(check_count_op(m->entry, HLO_OP_TUPLE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_GET_TUPLE_ELEMENT) == 0);
  hlo_module_free(m);
}

static void test_nothing_to_do_reports_unchanged(void) {
  hlo_module *m = expand("HloModule t\n"
                         "ENTRY main {\n"
                         "  a = f32[4] parameter(0)\n"
                         "  ROOT n = f32[4] negate(a)\n"
                         "}\n",
                         false);
  hlo_module_free(m);
}

/* A barrier as the root: the root becomes its operand (the tuple stays, it is the
 * result). */
static void test_barrier_as_root(void) {
  hlo_module *m = expand("HloModule t\n"
                         "ENTRY main {\n"
                         "  a = f32[4] parameter(0)\n"
                         "  n = f32[4] negate(a)\n"
                         "  t = (f32[4], f32[4]) tuple(a, n)\n"
                         "  ROOT b = (f32[4], f32[4]) opt-barrier(t)\n"
                         "}\n",
                         true);
  CHECK(m->entry->root->op == HLO_OP_TUPLE);
  CHECK(m->entry->root->n_operands == 2);
  hlo_module_free(m);
}

/* A barrier on an array, and a barrier of a barrier: both read straight through. */
static void test_array_and_nested_barriers(void) {
  hlo_module *m = expand("HloModule t\n"
                         "ENTRY main {\n"
                         "  a = f32[4] parameter(0)\n"
                         "  b = f32[4] opt-barrier(a)\n"
                         "  e = f32[4] exponential(b)\n"
                         "  t = (f32[4], f32[4]) tuple(e, a)\n"
                         "  b1 = (f32[4], f32[4]) opt-barrier(t)\n"
                         "  b2 = (f32[4], f32[4]) opt-barrier(b1)\n"
                         "  g0 = f32[4] get-tuple-element(b2), index=0\n"
                         "  g1 = f32[4] get-tuple-element(b2), index=1\n"
                         "  ROOT s = f32[4] subtract(g0, g1)\n"
                         "}\n",
                         true);
  const hlo_instr *root = m->entry->root;
  CHECK(root->op == HLO_OP_SUBTRACT);
  CHECK(root->operands[0]->op == HLO_OP_EXP);
  CHECK(root->operands[0]->operands[0]->op == HLO_OP_PARAMETER);
  CHECK(root->operands[1]->op == HLO_OP_PARAMETER);
  CHECK(check_count_op(m->entry, HLO_OP_TUPLE) == 0);
  hlo_module_free(m);
}

/* Barriers inside a while body (JAX's remat inside a scan) go too; the body's root
 * tuple is rebuilt from the forwarded values. */
static void test_barrier_in_a_while_body(void) {
  hlo_module *m = expand("HloModule t\n"
                         "cond {\n"
                         "  p = (s32[], f32[4]) parameter(0)\n"
                         "  i = s32[] get-tuple-element(p), index=0\n"
                         "  k = s32[] constant(3)\n"
                         "  ROOT lt = pred[] compare(i, k), direction=LT\n"
                         "}\n"
                         "body {\n"
                         "  p = (s32[], f32[4]) parameter(0)\n"
                         "  b = (s32[], f32[4]) opt-barrier(p)\n"
                         "  i = s32[] get-tuple-element(b), index=0\n"
                         "  v = f32[4] get-tuple-element(b), index=1\n"
                         "  one = s32[] constant(1)\n"
                         "  i1 = s32[] add(i, one)\n"
                         "  v1 = f32[4] multiply(v, v)\n"
                         "  ROOT r = (s32[], f32[4]) tuple(i1, v1)\n"
                         "}\n"
                         "ENTRY main {\n"
                         "  a = f32[4] parameter(0)\n"
                         "  z = s32[] constant(0)\n"
                         "  t = (s32[], f32[4]) tuple(z, a)\n"
                         "  ROOT w = (s32[], f32[4]) while(t), condition=cond, body=body\n"
                         "}\n",
                         true);
  hlo_computation *body = hlo_module_find_computation(m, "body");
  CHECK(body != NULL);
  if (body) {
    /* p is a parameter, not a tuple instruction: its reads stay reads of p */
    const hlo_instr *v1 = body->root->operands[1];
    CHECK(v1->op == HLO_OP_MULTIPLY);
    CHECK(v1->operands[0]->op == HLO_OP_GET_TUPLE_ELEMENT && v1->operands[0]->operands[0]->op == HLO_OP_PARAMETER);
  }
  hlo_module_free(m);
}

/* Through the cpu pipeline: no barrier before fusion, so the dot's operands are plain
 * values; on the backend the module compiles and equals the evaluator bit for bit
 * (an s32 dot wraps the same in any order). */
static void test_cpu_pipeline_and_backend(void) {
  hlo_module *m = check_parse_hlo(remat_text);
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  CHECK(barriers_in(m) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_TUPLE) == 0);
  hlo_module_free(m);

  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  if (!cpu) return;
  m = check_parse_hlo(remat_text);
  hlo_literal *args[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    if (args[i]) literal_fill_pseudo_random(args[i], 11 + (uint64_t)i);
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
  CHECK(barriers_in(m) == 1); /* the backend works on a copy */
  for (int i = 0; i < 2; i++) literal_free(args[i]);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_tuple_reads_go_to_the_elements), TEST(test_nothing_to_do_reports_unchanged),
          TEST(test_barrier_as_root), TEST(test_array_and_nested_barriers), TEST(test_barrier_in_a_while_body),
          TEST(test_cpu_pipeline_and_backend))
