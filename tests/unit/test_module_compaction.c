/* Unit tests for hlo_module_compact and the pipeline's compact option: a compacted
 * module prints exactly as before, keeps its struct, ids and the very literals its
 * constants held (moved, not copied), frees the instructions and literals nothing
 * holds, and never reuses an id; the pipeline compacts only when asked, once most of
 * the module is dead. Leaks and double frees show in the ASan build (make asan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hlo/clone.h"
#include "hlo/parser.h"
#include "hlo/passes/pipeline.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

static const char *const MODULE_TEXT =
    "HloModule compaction\n"
    "\n"
    "sum {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  p = f32[4] parameter(0)\n"
    "  weights = f32[4] constant({1, 2, 3, 4})\n"
    "  unused_weights = f32[4] constant({5, 6, 7, 8})\n"
    "  unused_sum = f32[4] add(p, unused_weights)\n"
    "  scaled = f32[4] multiply(p, weights)\n"
    "  zero = f32[] constant(0)\n"
    "  ROOT total = f32[] reduce(scaled, zero), dimensions={0}, to_apply=sum\n"
    "}\n";

static hlo_module *parse(void) {
  hlo_module *m = NULL;
  CHECK_OK(hlo_parse(MODULE_TEXT, strlen(MODULE_TEXT), "compaction.hlo", &m));
  return m;
}

static char *print(const hlo_module *m) {
  hlo_print_options o = hlo_print_options_default();
  return hlo_module_to_string(m, &o);
}

static void test_compaction_keeps_what_computations_hold_and_frees_the_rest(void) {
  hlo_module *m = parse();
  CHECK(hlo_computation_remove_dead(m->entry) == 2); /* unused_sum, then unused_weights */
  CHECK(hlo_module_dead_instrs(m) == 2);
  CHECK(m->n_owned_literals == 3);
  hlo_literal *weights = hlo_computation_find_instr(m->entry, "weights")->literal;
  int next_id = m->next_id;
  char *before = print(m);

  hlo_module *same = m;
  CHECK_OK(hlo_module_compact(m));
  CHECK(m == same);
  char *after = print(m);
  CHECK(strcmp(before, after) == 0);
  CHECK(hlo_module_dead_instrs(m) == 0);
  CHECK(m->n_owned_literals == 2);                                           /* unused_weights' went */
  CHECK(hlo_computation_find_instr(m->entry, "weights")->literal == weights); /* moved, not copied */
  for (int c = 0; c < m->n_comps; c++) CHECK(m->comps[c]->module == m);
  CHECK(m->entry->root->called[0] == hlo_module_find_computation(m, "sum"));
  CHECK_OK(hlo_verify_module(m));

  /* A new instruction gets an id never used before, so its made-up name is unique. */
  CHECK(m->next_id == next_id);
  hlo_shape s = shape_scalar(HLO_F32);
  hlo_instr *extra = hlo_instr_new(m->entry, HLO_OP_CONSTANT, &s, NULL);
  CHECK(extra->id == next_id);
  CHECK(!hlo_module_name_taken(m, extra->name, extra));
  free(before);
  free(after);
  hlo_module_free(m);
}

static void test_compaction_moves_a_literal_two_constants_share_once(void) {
  hlo_module *m = parse();
  hlo_instr *weights = hlo_computation_find_instr(m->entry, "weights");
  hlo_instr *unused = hlo_computation_find_instr(m->entry, "unused_weights");
  /* unused_weights now points at weights' literal without owning it; its own is
   * owned by the module and held by nothing. */
  unused->literal = weights->literal;
  CHECK_OK(hlo_module_compact(m));
  weights = hlo_computation_find_instr(m->entry, "weights");
  unused = hlo_computation_find_instr(m->entry, "unused_weights");
  CHECK(weights->literal == unused->literal);
  CHECK(m->n_owned_literals == 2); /* weights' (once) and zero's */
  CHECK(((const float *)unused->literal->data)[3] == 4.0f);
  hlo_module_free(m); /* frees the shared literal once */
}

/* Adds and drops 600 instructions on each of its first `runs` calls. */
static kiln_status churn(hlo_module *m, void *ctx, bool *changed) {
  int *runs = ctx;
  *changed = false;
  if (*runs == 0) return NULL;
  (*runs)--;
  hlo_shape s = shape_scalar(HLO_F32);
  for (int i = 0; i < 600; i++) hlo_instr_new(m->entry, HLO_OP_CONSTANT, &s, NULL);
  CHECK(hlo_computation_remove_dead(m->entry) == 600);
  *changed = true;
  return NULL;
}

static int64_t dead_after_churn(bool compact) {
  hlo_module *m = parse();
  hlo_computation_remove_dead(m->entry);
  CHECK_OK(hlo_module_compact(m)); /* nothing dead to begin with */
  int runs = 3;
  hlo_pipeline *p = hlo_pipeline_new("churning");
  hlo_pipeline *fix = hlo_pipeline_new("fix");
  hlo_pipeline_add_pass_ctx(fix, "churn", churn, &runs);
  hlo_pipeline_add_fix(p, fix, 10);
  hlo_pipeline_options o = hlo_pipeline_options_default();
  o.compact = compact;
  char *before = print(m);
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  char *after = print(m);
  CHECK(strcmp(before, after) == 0);
  int64_t dead = hlo_module_dead_instrs(m);
  free(before);
  free(after);
  hlo_pipeline_free(p);
  hlo_module_free(m);
  return dead;
}

static void test_pipeline_compacts_only_when_asked_and_most_of_the_module_is_dead(void) {
  CHECK(dead_after_churn(false) == 1800);
  /* 600 dead after the first run (under the 1024 floor), compacted after the second,
   * 600 again after the third. */
  CHECK(dead_after_churn(true) == 600);
}

TEST_MAIN(TEST(test_compaction_keeps_what_computations_hold_and_frees_the_rest),
          TEST(test_compaction_moves_a_literal_two_constants_share_once),
          TEST(test_pipeline_compacts_only_when_asked_and_most_of_the_module_is_dead))
