/* Unit tests for bitcasts between shapes with different layouts on the `cpu` backend,
 * and for the bitcast-layouts pass (src/hlo/passes/bitcast_layouts.c) that makes them
 * layout-free. XLA:CPU writes a transpose as a bitcast to a shape whose layout puts the
 * elements where the transpose would, followed by a copy to the default layout; the
 * evaluator (the oracle) reads a bitcast through the layouts, so the cpu backend must
 * give bit-identical results for every pair of layouts: rank 2, 3 and 4, bitcasts that
 * transpose, that transpose and reshape, that only reshape, chains of bitcasts, bitcasts
 * inside fusions and calls and copies between layouts. Where the answer is a plain
 * transpose, it is also checked against one computed here (numpy's transpose). */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"
#include "hlo/literal.h"
#include "hlo/passes/pipeline.h"

/* Compiles text on cpu and evaluates it, on the same pseudo-random inputs (distinct
 * values, so any misplaced element shows); both results are returned. */
static bool run_both(const char *text, hlo_literal **cpu_out, hlo_literal **ref_out) {
  *cpu_out = *ref_out = NULL;
  hlo_module *m = check_parse_hlo(text);
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  int n = m->entry->n_params;
  hlo_literal *args[4] = {0};
  bool ok = cpu != NULL && n <= 4;
  for (int p = 0; p < n && ok; p++) {
    CHECK_OK(literal_create(&m->entry->params[p]->shape, &args[p]));
    for (int64_t i = 0; i < args[p]->n; i++) literal_set_f64(args[p], i, (double)(i + 1000 * p));
  }
  backend_executable *e = NULL;
  if (ok) {
    kiln_status s = cpu->compile(cpu, m, NULL, &e);
    ok = s == NULL;
    CHECK_OK(s);
  }
  if (ok) {
    kiln_status s = cpu->execute(e, args, n, cpu_out);
    ok = s == NULL;
    CHECK_OK(s);
    cpu->destroy(e);
  }
  if (ok) {
    kiln_status s = eval_module(m, args, n, ref_out);
    ok = s == NULL;
    CHECK_OK(s);
  }
  for (int p = 0; p < n; p++) literal_free(args[p]);
  hlo_module_free(m);
  return ok;
}

/* Number of elements where a and b differ bitwise (-1 when they are not comparable). */
static int64_t differing(const hlo_literal *a, const hlo_literal *b) {
  if (!a || !b || a->tuple || b->tuple || a->n != b->n || a->shape.type != b->shape.type) return -1;
  int64_t bad = 0;
  for (int64_t i = 0; i < a->n; i++)
    if (literal_get_u64(a, i) != literal_get_u64(b, i)) bad++;
  return bad;
}

static void check_matches_evaluator(const char *text) {
  hlo_literal *cpu = NULL, *ref = NULL;
  if (run_both(text, &cpu, &ref)) {
    int64_t bad = differing(cpu, ref);
    if (bad != 0) fprintf(stderr, "  %lld elements differ from the evaluator in:\n%s\n", (long long)bad, text);
    CHECK(bad == 0);
  }
  literal_free(cpu);
  literal_free(ref);
}

/* Also: the result is the transpose by perm of the first parameter, whose element i
 * holds i (dims of the parameter in dims). */
static void check_is_transpose(const char *text, int rank, const int64_t *dims, const int64_t *perm) {
  hlo_literal *cpu = NULL, *ref = NULL;
  if (run_both(text, &cpu, &ref)) {
    CHECK(differing(cpu, ref) == 0);
    int64_t odims[HLO_MAX_RANK], in_strides[HLO_MAX_RANK], idx[HLO_MAX_RANK] = {0};
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
      in_strides[d] = st;
      st *= dims[d];
    }
    for (int d = 0; d < rank; d++) odims[d] = dims[perm[d]];
    int64_t bad = 0;
    for (int64_t i = 0; i < cpu->n; i++) {
      int64_t src = 0;
      for (int d = 0; d < rank; d++) src += idx[d] * in_strides[perm[d]];
      if (literal_get_f64(cpu, i) != (double)src) bad++;
      for (int d = rank - 1; d >= 0 && ++idx[d] == odims[d]; d--) idx[d] = 0;
    }
    if (bad) fprintf(stderr, "  %lld elements are not the transpose in:\n%s\n", (long long)bad, text);
    CHECK(bad == 0);
  }
  literal_free(cpu);
  literal_free(ref);
}

/* The module: jnp.transpose(z, (2, 0, 1)) as XLA:CPU writes it, bare and with
 * the copy fused as XLA prints it. */
static void test_layout_changing_bitcast_matches_evaluator(void) {
  static const int64_t dims[] = {2, 3, 4}, perm[] = {2, 0, 1};
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  z = f32[2,3,4]{2,1,0} parameter(0)\n"
                     "  b = f32[4,2,3]{0,2,1} bitcast(z)\n"
                     "  ROOT c = f32[4,2,3]{2,1,0} copy(b)\n}\n",
                     3, dims, perm);
  check_is_transpose("HloModule jit_f\n\n"
                     "%fused_computation (param_0.1: f32[4,2,3]) -> f32[4,2,3] {\n"
                     "  %param_0.1 = f32[4,2,3]{0,2,1} parameter(0)\n"
                     "  ROOT %copy.1 = f32[4,2,3]{2,1,0} copy(f32[4,2,3]{0,2,1} %param_0.1)\n}\n\n"
                     "ENTRY %main.4 (Arg_0.1: f32[2,3,4]) -> f32[4,2,3] {\n"
                     "  %Arg_0.1 = f32[2,3,4]{2,1,0} parameter(0)\n"
                     "  %bitcast = f32[4,2,3]{0,2,1} bitcast(f32[2,3,4]{2,1,0} %Arg_0.1)\n"
                     "  ROOT %copy_fusion = f32[4,2,3]{2,1,0} fusion(f32[4,2,3]{0,2,1} %bitcast), kind=kLoop, "
                     "calls=%fused_computation\n}\n",
                     3, dims, perm);
  /* Without the copy: the bitcast itself is the root. */
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  z = f32[2,3,4]{2,1,0} parameter(0)\n"
                     "  ROOT b = f32[4,2,3]{0,2,1} bitcast(z)\n}\n",
                     3, dims, perm);
}

static void test_rank2_layout_bitcasts_match_evaluator(void) {
  static const int64_t dims[] = {3, 5}, perm[] = {1, 0};
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  x = f32[3,5]{1,0} parameter(0)\n"
                     "  b = f32[5,3]{0,1} bitcast(x)\n"
                     "  ROOT c = f32[5,3]{1,0} copy(b)\n}\n",
                     2, dims, perm);
  /* A column-major operand flattened: its physical order is the transpose's. */
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  x = f32[3,5]{1,0} parameter(0)\n"
                     "  y = f32[3,5]{0,1} copy(x)\n"
                     "  b = f32[15]{0} bitcast(y)\n"
                     "  ROOT r = f32[5,3]{1,0} reshape(b)\n}\n",
                     2, dims, perm);
  /* Column-major to column-major with other dims: a reshape of the physical order. */
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[4,6]{0,1} parameter(0)\n"
                          "  ROOT b = f32[8,3]{0,1} bitcast(x)\n}\n");
}

/* Every pair of layouts of a rank-3 operand and a rank-3 result with other dims. */
static void test_all_rank3_layout_pairs_match_evaluator(void) {
  static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  char text[512];
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 6; b++) {
      snprintf(text, sizeof text,
               "HloModule t\n\nENTRY main {\n"
               "  x = f32[2,3,4]{%d,%d,%d} parameter(0)\n"
               "  b = f32[3,4,2]{%d,%d,%d} bitcast(x)\n"
               "  ROOT r = f32[3,4,2]{2,1,0} copy(b)\n}\n",
               perms[a][0], perms[a][1], perms[a][2], perms[b][0], perms[b][1], perms[b][2]);
      check_matches_evaluator(text);
    }
}

static void test_rank4_layout_bitcasts_match_evaluator(void) {
  /* NCHW -> NHWC, the way XLA writes a transpose (0,2,3,1). */
  static const int64_t dims[] = {2, 3, 4, 5}, perm[] = {0, 2, 3, 1};
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  x = f32[2,3,4,5]{3,2,1,0} parameter(0)\n"
                     "  b = f32[2,4,5,3]{2,1,3,0} bitcast(x)\n"
                     "  ROOT c = f32[2,4,5,3]{3,2,1,0} copy(b)\n}\n",
                     4, dims, perm);
  static const char *cases[] = {
      /* transpose and reshape at once, to another rank */
      "  b = f32[6,20]{0,1} bitcast(x)\n  ROOT r = f32[6,20]{1,0} copy(b)\n",
      "  b = f32[4,30]{0,1} bitcast(x)\n  ROOT r = f32[4,30]{1,0} copy(b)\n",
      "  b = f32[5,2,12]{0,2,1} bitcast(x)\n  ROOT r = f32[5,2,12]{2,1,0} copy(b)\n",
      /* degenerate dims: a layout that moves only size-1 dims is a reshape */
      "  b = f32[2,1,60,1]{1,3,2,0} bitcast(x)\n  ROOT r = f32[2,1,60,1]{3,2,1,0} copy(b)\n",
      "  b = f32[120,1]{0,1} bitcast(x)\n  ROOT r = f32[120]{0} bitcast(b)\n",
  };
  char text[512];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, "HloModule t\n\nENTRY main {\n  x = f32[2,3,4,5]{3,2,1,0} parameter(0)\n%s}\n",
             cases[i]);
    check_matches_evaluator(text);
    /* the same from a column-major operand */
    snprintf(text, sizeof text, "HloModule t\n\nENTRY main {\n  x = f32[2,3,4,5]{0,1,2,3} parameter(0)\n%s}\n",
             cases[i]);
    check_matches_evaluator(text);
  }
}

/* A bitcast that keeps the physical order (a reshape with default layouts, or only
 * size-1 dims moved) moves no element: it stays a bitcast or becomes one reshape, both
 * aliases of the operand's buffer, and no transpose appears. */
static void test_reshaping_bitcast_stays_an_alias(void) {
  static const char *plain = "HloModule t\n\nENTRY main {\n"
                             "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                             "  b = f32[6,4]{1,0} bitcast(x)\n"
                             "  ROOT r = f32[6,4]{1,0} negate(b)\n}\n";
  hlo_module *m = check_run_pass(plain, hlo_pass_bitcast_layouts, false);
  CHECK(check_count_op(m->entry, HLO_OP_BITCAST) == 1);
  hlo_module_free(m);
  check_matches_evaluator(plain);

  static const char *degenerate = "HloModule t\n\nENTRY main {\n"
                                  "  x = f32[1,6]{0,1} parameter(0)\n"
                                  "  b = f32[3,1,2]{1,2,0} bitcast(x)\n"
                                  "  ROOT r = f32[3,1,2]{2,1,0} negate(b)\n}\n";
  m = check_run_pass(degenerate, hlo_pass_bitcast_layouts, true);
  CHECK(check_count_op(m->entry, HLO_OP_BITCAST) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_TRANSPOSE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_RESHAPE) == 1);
  hlo_module_free(m);
  check_matches_evaluator(degenerate);
}

/* The pass leaves no bitcast whose meaning depends on a layout, and the module means
 * what it meant (check_run_pass evaluates both). */
static void test_pass_removes_layout_changing_bitcasts(void) {
  static const char *text = "HloModule t\n\nENTRY main {\n"
                            "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                            "  b = f32[4,2,3]{0,2,1} bitcast(x)\n"
                            "  b2 = f32[24]{0} bitcast(b)\n"
                            "  ROOT r = f32[24]{0} negate(b2)\n}\n";
  hlo_module *m = check_run_pass(text, hlo_pass_bitcast_layouts, true);
  for (int i = 0; i < m->entry->n_instrs; i++) {
    const hlo_instr *ins = m->entry->instrs[i];
    if (ins->op != HLO_OP_BITCAST) continue;
    const hlo_shape *s = &ins->operands[0]->shape;
    for (int d = 0; s->has_layout && d < s->rank; d++) CHECK(s->minor_to_major[d] == s->rank - 1 - d);
    for (int d = 0; ins->shape.has_layout && d < ins->shape.rank; d++)
      CHECK(ins->shape.minor_to_major[d] == ins->shape.rank - 1 - d);
  }
  hlo_module_free(m);
}

/* A bitcast of a layout-changing bitcast reads its operand's layout: laying x out as
 * {0,2,1} and reading it back as f32[24] gives x's own order again. */
static void test_chained_bitcasts_match_evaluator(void) {
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  b = f32[4,2,3]{0,2,1} bitcast(x)\n"
                          "  ROOT b2 = f32[24]{0} bitcast(b)\n}\n");
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  b = f32[4,2,3]{0,2,1} bitcast(x)\n"
                          "  b2 = f32[6,4]{0,1} bitcast(b)\n"
                          "  ROOT r = f32[6,4]{1,0} copy(b2)\n}\n");
}

/* Bitcasts between elementwise work, so fusion pulls the rewritten transposes into a
 * loop fusion; and a layout-changing bitcast inside a fused computation. */
static void test_bitcast_in_fusible_chain_matches_evaluator(void) {
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  y = f32[2,3,4]{2,1,0} parameter(1)\n"
                          "  a = f32[2,3,4]{2,1,0} add(x, y)\n"
                          "  b = f32[4,2,3]{0,2,1} bitcast(a)\n"
                          "  n = f32[4,2,3]{0,2,1} negate(b)\n"
                          "  c = f32[4,2,3]{2,1,0} copy(n)\n"
                          "  ROOT m = f32[4,2,3]{2,1,0} multiply(c, c)\n}\n");
  check_matches_evaluator("HloModule t\n\n"
                          "fused {\n"
                          "  p = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  e = f32[2,3,4]{2,1,0} exponential(p)\n"
                          "  b = f32[3,8]{0,1} bitcast(e)\n"
                          "  ROOT c = f32[3,8]{1,0} copy(b)\n}\n\n"
                          "ENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  ROOT f = f32[3,8]{1,0} fusion(x), kind=kLoop, calls=fused\n}\n");
}

/* A bitcast in a called computation reads the callee parameter's layout, which the call
 * inliner would replace with the argument's: the pass runs before it. */
static void test_bitcast_in_callee_matches_evaluator(void) {
  check_matches_evaluator("HloModule t\n\n"
                          "callee {\n"
                          "  p = f32[4,2,3]{0,2,1} parameter(0)\n"
                          "  ROOT b = f32[24]{0} bitcast(p)\n}\n\n"
                          "ENTRY main {\n"
                          "  x = f32[4,2,3]{2,1,0} parameter(0)\n"
                          "  ROOT c = f32[24]{0} call(x), to_apply=callee\n}\n");
}

/* Copies between layouts are the identity on the logical value (the evaluator's rule),
 * and a bitcast after one reads the copy's layout. */
static void test_copy_between_layouts_matches_evaluator(void) {
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[3,4]{1,0} parameter(0)\n"
                          "  ROOT c = f32[3,4]{0,1} copy(x)\n}\n");
  static const int64_t dims[] = {3, 4}, perm[] = {1, 0};
  check_is_transpose("HloModule t\n\nENTRY main {\n"
                     "  x = f32[3,4]{1,0} parameter(0)\n"
                     "  c = f32[3,4]{0,1} copy(x)\n"
                     "  ROOT b = f32[4,3]{1,0} bitcast(c)\n}\n",
                     2, dims, perm);
}

/* Type changes reinterpret the moved bytes, of any width; between elementwise ops a
 * type-changing bitcast must not be read as a reshape of its operand's elements. */
static void test_type_changing_bitcast_matches_evaluator(void) {
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  b = s32[4,2,3]{0,2,1} bitcast(x)\n"
                          "  ROOT c = s32[4,2,3]{2,1,0} copy(b)\n}\n");
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  ROOT b = s32[6,4]{1,0} bitcast(x)\n}\n");
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[2,3,4]{2,1,0} parameter(0)\n"
                          "  n = f32[2,3,4]{2,1,0} negate(x)\n"
                          "  b = s32[6,4]{1,0} bitcast(n)\n"
                          "  ROOT a = s32[6,4]{1,0} add(b, b)\n}\n");
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[3,4]{1,0} parameter(0)\n"
                          "  b = f16[8,3]{0,1} bitcast(x)\n"
                          "  ROOT c = f16[8,3]{1,0} copy(b)\n}\n");
  check_matches_evaluator("HloModule t\n\nENTRY main {\n"
                          "  x = f32[3,4]{0,1} parameter(0)\n"
                          "  b = u8[2,24]{1,0} bitcast(x)\n"
                          "  ROOT c = u8[2,24]{1,0} add(b, b)\n}\n");
}

TEST_MAIN(TEST(test_layout_changing_bitcast_matches_evaluator), TEST(test_rank2_layout_bitcasts_match_evaluator),
          TEST(test_all_rank3_layout_pairs_match_evaluator), TEST(test_rank4_layout_bitcasts_match_evaluator),
          TEST(test_reshaping_bitcast_stays_an_alias), TEST(test_pass_removes_layout_changing_bitcasts),
          TEST(test_chained_bitcasts_match_evaluator), TEST(test_bitcast_in_fusible_chain_matches_evaluator),
          TEST(test_bitcast_in_callee_matches_evaluator), TEST(test_copy_between_layouts_matches_evaluator),
          TEST(test_type_changing_bitcast_matches_evaluator))
