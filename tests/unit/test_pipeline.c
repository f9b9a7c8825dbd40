/* Unit tests for the pass pipeline and DCE: dead instructions and unreachable
 * computations go, side-effecting instructions stay; fix() reruns until nothing changes
 * and stops at its cap; the verifier runs after changing passes and its error names the
 * pass; dumps appear under XLA's file names and honour dump_pass_re; disabled passes and
 * context passes work. Modules are built with the IR API so the tests do not depend on
 * the parser. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hlo/passes/pipeline.h"

/* (a, b) -> a + b; instruction names carry the computation's name because the verifier
 * wants names unique in the whole module, as XLA does. */
static hlo_computation *make_sum(hlo_module *m, const char *name, bool with_dead) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_shape s = shape_scalar(HLO_F32);
  char n[64];
  snprintf(n, sizeof n, "%s.a", name);
  hlo_instr *a = hlo_instr_new(c, HLO_OP_PARAMETER, &s, n);
  a->parameter_number = 0;
  snprintf(n, sizeof n, "%s.b", name);
  hlo_instr *b = hlo_instr_new(c, HLO_OP_PARAMETER, &s, n);
  b->parameter_number = 1;
  hlo_instr *ops[2] = {a, b};
  if (with_dead) {
    hlo_instr *mul = hlo_instr_new(c, HLO_OP_MULTIPLY, &s, "unused_mul");
    hlo_instr_set_operands(mul, 2, ops);
  }
  snprintf(n, sizeof n, "%s.sum", name);
  hlo_instr *add = hlo_instr_new(c, HLO_OP_ADD, &s, n);
  hlo_instr_set_operands(add, 2, ops);
  c->root = add;
  CHECK_OK(hlo_computation_index_params(c));
  return c;
}

static hlo_instr *make_reduce(hlo_computation *c, hlo_instr *x, hlo_instr *init, hlo_computation *fn, const char *name) {
  hlo_shape s = shape_scalar(HLO_F32);
  hlo_instr *r = hlo_instr_new(c, HLO_OP_REDUCE, &s, name);
  hlo_instr *ops[2] = {x, init};
  hlo_instr_set_operands(r, 2, ops);
  hlo_instr_set_called(r, 1, &fn);
  const int64_t dims[1] = {0};
  r->dimensions = hlo_ints_make(c->module->arena, 1, dims);
  return r;
}

/* entry(p0: f32[4]) -> (f32[4], f32[]) with dead instructions, a dead reduce whose
 * reducer is used nowhere else, and an orphan computation. */
static hlo_module *make_module(void) {
  hlo_module *m = hlo_module_new("test_module");
  hlo_computation *sum_live = make_sum(m, "sum_live", true);
  hlo_computation *sum_dead = make_sum(m, "sum_dead", false);
  make_sum(m, "orphan", false);
  hlo_computation *e = hlo_computation_new(m, "main");
  const int64_t d4[1] = {4};
  hlo_shape v4 = shape_make(HLO_F32, 1, d4);
  hlo_shape sc = shape_scalar(HLO_F32);
  hlo_instr *p0 = hlo_instr_new(e, HLO_OP_PARAMETER, &v4, "p0");
  p0->parameter_number = 0;
  hlo_instr *zero = hlo_instr_new(e, HLO_OP_CONSTANT, &sc, "zero");
  hlo_literal *lit = NULL;
  CHECK_OK(literal_create(&sc, &lit));
  hlo_instr_set_literal(zero, lit);
  hlo_instr *ops[2] = {p0, p0};
  hlo_instr *dead_add = hlo_instr_new(e, HLO_OP_ADD, &v4, "dead_add");
  hlo_instr_set_operands(dead_add, 2, ops);
  hlo_instr *dead_neg = hlo_instr_new(e, HLO_OP_NEGATE, &v4, "dead_neg");
  hlo_instr_set_operands(dead_neg, 1, &dead_add);
  make_reduce(e, p0, zero, sum_dead, "dead_reduce");
  hlo_instr *live_reduce = make_reduce(e, p0, zero, sum_live, "live_reduce");
  hlo_instr *neg = hlo_instr_new(e, HLO_OP_NEGATE, &v4, "neg");
  hlo_instr_set_operands(neg, 1, &p0);
  hlo_shape elems[2] = {v4, sc};
  hlo_shape ts = shape_tuple(m->arena, 2, elems);
  hlo_instr *t = hlo_instr_new(e, HLO_OP_TUPLE, &ts, "result");
  hlo_instr *tops[2] = {neg, live_reduce};
  hlo_instr_set_operands(t, 2, tops);
  e->root = t;
  e->is_entry = true;
  m->entry = e;
  CHECK_OK(hlo_computation_index_params(e));
  return m;
}

static bool has_instr(const hlo_computation *c, const char *name) { return hlo_computation_find_instr(c, name) != NULL; }

static void test_dce_removes_dead_code(void) {
  hlo_module *m = make_module();
  CHECK(m->n_comps == 4);
  CHECK(m->entry->n_instrs == 8);
  bool changed = false;
  CHECK_OK(hlo_pass_dce(m, &changed));
  CHECK(changed);
  CHECK(m->entry->n_instrs == 5);
  CHECK(!has_instr(m->entry, "dead_add") && !has_instr(m->entry, "dead_neg") && !has_instr(m->entry, "dead_reduce"));
  CHECK(has_instr(m->entry, "p0") && has_instr(m->entry, "zero") && has_instr(m->entry, "live_reduce"));
  CHECK(m->n_comps == 2);
  CHECK(hlo_module_find_computation(m, "sum_live") != NULL);
  CHECK(hlo_module_find_computation(m, "sum_dead") == NULL);
  CHECK(hlo_module_find_computation(m, "orphan") == NULL);
  CHECK(m->comps[m->n_comps - 1] == m->entry); /* order kept: entry last */
  hlo_computation *sl = hlo_module_find_computation(m, "sum_live");
  if (sl) {
    CHECK(!has_instr(sl, "unused_mul"));
    CHECK(sl->n_instrs == 3); /* parameters stay even when unused */
  }
  /* Idempotent: nothing left to remove. */
  CHECK_OK(hlo_pass_dce(m, &changed));
  CHECK(!changed);
  hlo_module_free(m);
}

static void test_dce_keeps_side_effects(void) {
  hlo_module *m = hlo_module_new("side_effects");
  /* A computation with a side-effecting custom-call, called by a dead `call`. */
  hlo_computation *effect = hlo_computation_new(m, "effect");
  hlo_shape sc = shape_scalar(HLO_F32);
  hlo_instr *ep = hlo_instr_new(effect, HLO_OP_PARAMETER, &sc, "x");
  hlo_instr *cc = hlo_instr_new(effect, HLO_OP_CUSTOM_CALL, &sc, "log_it");
  hlo_instr_set_operands(cc, 1, &ep);
  hlo_instr_add_raw_attr(cc, "custom_call_has_side_effect", "true");
  effect->root = ep;
  CHECK_OK(hlo_computation_index_params(effect));

  hlo_computation *e = hlo_computation_new(m, "main");
  hlo_instr *p = hlo_instr_new(e, HLO_OP_PARAMETER, &sc, "p");
  hlo_instr *pure_cc = hlo_instr_new(e, HLO_OP_CUSTOM_CALL, &sc, "pure_call");
  hlo_instr_set_operands(pure_cc, 1, &p);
  hlo_instr *effect_cc = hlo_instr_new(e, HLO_OP_CUSTOM_CALL, &sc, "effect_call");
  hlo_instr_set_operands(effect_cc, 1, &p);
  hlo_instr_add_raw_attr(effect_cc, "custom_call_has_side_effect", "true");
  hlo_instr *call = hlo_instr_new(e, HLO_OP_CALL, &sc, "dead_call");
  hlo_instr_set_operands(call, 1, &p);
  hlo_instr_set_called(call, 1, &effect);
  hlo_instr *rng = hlo_instr_new(e, HLO_OP_RNG, &sc, "dead_rng");
  hlo_instr *rops[2] = {p, p};
  hlo_instr_set_operands(rng, 2, rops);
  hlo_instr *neg = hlo_instr_new(e, HLO_OP_NEGATE, &sc, "neg");
  hlo_instr_set_operands(neg, 1, &p);
  e->root = neg;
  e->is_entry = true;
  m->entry = e;
  CHECK_OK(hlo_computation_index_params(e));

  bool changed = false;
  CHECK_OK(hlo_pass_dce(m, &changed));
  CHECK(changed);
  CHECK(!has_instr(e, "pure_call"));
  CHECK(has_instr(e, "effect_call"));
  CHECK(has_instr(e, "dead_call")); /* its callee has a side effect */
  CHECK(has_instr(e, "dead_rng"));
  CHECK(has_instr(effect, "log_it"));
  CHECK(hlo_module_find_computation(m, "effect") != NULL);
  hlo_module_free(m);
}

/* ---- pipeline mechanics ---- */

static int always_changes_calls;
static kiln_status always_changes(hlo_module *m, bool *changed) {
  always_changes_calls++;
  *changed = true;
  return NULL;
}

static int changes_twice_calls;
static kiln_status changes_twice(hlo_module *m, bool *changed) {
  *changed = ++changes_twice_calls <= 2;
  return NULL;
}

static kiln_status breaks_module(hlo_module *m, bool *changed) {
  /* negate(f32[4]) claiming to produce s32[4]: shape inference disagrees. */
  hlo_instr *neg = hlo_computation_find_instr(m->entry, "neg");
  neg->shape.type = HLO_S32;
  *changed = true;
  return NULL;
}

static kiln_status breaks_module_quietly(hlo_module *m, bool *changed) {
  bool ignored;
  breaks_module(m, &ignored);
  *changed = false;
  return NULL;
}

static kiln_status fails(hlo_module *m, bool *changed) {
  *changed = false;
  return ERR_INVALID("boom");
}

static kiln_status counts_ctx(hlo_module *m, void *ctx, bool *changed) {
  ++*(int *)ctx;
  *changed = false;
  return NULL;
}

static void test_fix_stops_at_cap(void) {
  hlo_module *m = make_module();
  hlo_pipeline *p = hlo_pipeline_new("outer");
  hlo_pipeline *sub = hlo_pipeline_new("loop");
  hlo_pipeline_add_pass(sub, "always", always_changes);
  hlo_pipeline_add_fix(p, sub, 3);
  always_changes_calls = 0;
  bool changed = false;
  CHECK_OK(hlo_pipeline_run(p, m, NULL, &changed));
  CHECK(always_changes_calls == 3);
  CHECK(changed);
  hlo_pipeline_free(p);

  /* Without a cap hit: runs until a round changes nothing. */
  p = hlo_pipeline_new("outer");
  sub = hlo_pipeline_new("loop");
  hlo_pipeline_add_pass(sub, "twice", changes_twice);
  hlo_pipeline_add_fix(p, sub, HLO_FIX_DEFAULT_MAX_ITERS);
  changes_twice_calls = 0;
  CHECK_OK(hlo_pipeline_run(p, m, NULL, &changed));
  CHECK(changes_twice_calls == 3);
  CHECK(changed);
  CHECK(strcmp(hlo_pipeline_name(p), "outer") == 0);
  hlo_pipeline_free(p);
  hlo_module_free(m);
}

static void test_default_pipeline_runs_dce(void) {
  hlo_module *m = make_module();
  hlo_pipeline *p = hlo_pipeline_new_default();
  bool changed = false;
  CHECK_OK(hlo_pipeline_run(p, m, NULL, &changed));
  CHECK(changed);
  CHECK(m->n_comps == 2 && m->entry->n_instrs == 5);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, &changed));
  CHECK(!changed);
  hlo_pipeline_free(p);
  hlo_module_free(m);
}

static void test_verifier_names_pass(void) {
  hlo_module *m = make_module();
  hlo_pipeline *p = hlo_pipeline_new("checked");
  hlo_pipeline_add_pass(p, "breaker", breaks_module);
  CHECK_ERR(hlo_pipeline_run(p, m, NULL, NULL), "after pass breaker");
  hlo_pipeline_free(p);
  hlo_module_free(m);

  /* A pass that says it changed nothing is not re-verified (the contract is on the
   * pass); with verify off, nothing is checked either. */
  m = make_module();
  p = hlo_pipeline_new("unchecked");
  hlo_pipeline_add_pass(p, "quiet", breaks_module_quietly);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  hlo_module_free(m);
  m = make_module();
  p = hlo_pipeline_new("unverified");
  hlo_pipeline_add_pass(p, "breaker", breaks_module);
  hlo_pipeline_options o = hlo_pipeline_options_default();
  o.verify = false;
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  hlo_pipeline_free(p);
  hlo_module_free(m);
}

static void test_errors_and_options(void) {
  hlo_module *m = make_module();
  hlo_pipeline *p = hlo_pipeline_new("errs");
  hlo_pipeline_add_pass(p, "failing", fails);
  CHECK_ERR(hlo_pipeline_run(p, m, NULL, NULL), "pass failing: boom");
  /* Disabled passes are skipped. */
  hlo_pipeline_options o = hlo_pipeline_options_default();
  o.disabled_passes = "other,failing";
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  hlo_pipeline_free(p);

  p = hlo_pipeline_new("ctx");
  int count = 0;
  hlo_pipeline_add_pass_ctx(p, "counter", counts_ctx, &count);
  hlo_pipeline_add_pass_ctx(p, "counter", counts_ctx, &count);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  CHECK(count == 2);
  o = hlo_pipeline_options_default();
  o.disabled_passes = "count";  /* a prefix is not a match */
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  CHECK(count == 4);
  hlo_pipeline_free(p);

  p = hlo_pipeline_new_default();
  o = hlo_pipeline_options_default();
  o.dump_to = "/tmp/kiln_never_created_by_test_pipeline";
  o.dump_pass_re = "([unclosed";
  CHECK_ERR(hlo_pipeline_run(p, m, &o, NULL), "bad --dump_pass_re");
  struct stat st;
  CHECK(stat(o.dump_to, &st) != 0);
  hlo_pipeline_free(p);
  hlo_module_free(m);
}

/* Sorted file names in dir, joined by spaces; also removes them when `clean`. */
static void list_dir(const char *dir, char *out, size_t cap, bool clean) {
  char names[32][256];
  int n = 0;
  DIR *d = opendir(dir);
  out[0] = 0;
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && n < 32) {
    if (e->d_name[0] == '.') continue;
    snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char t[256];
        memcpy(t, names[i], sizeof t);
        memcpy(names[i], names[j], sizeof t);
        memcpy(names[j], t, sizeof t);
      }
  for (int i = 0; i < n; i++) {
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i ? " " : "", names[i]);
    if (clean) {
      size_t n_path = strlen(dir) + strlen(names[i]) + 2;
      char *path = malloc(n_path);
      snprintf(path, n_path, "%s/%s", dir, names[i]);
      unlink(path);
      free(path);
    }
  }
}

static bool file_contains(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strstr(buf, needle) != NULL;
}

static void test_dumps(void) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/kiln_test_pipeline_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  char sub[128];
  snprintf(sub, sizeof sub, "%s/nested/dumps", dir); /* created on demand */

  hlo_module *m = make_module();
  hlo_pipeline *p = hlo_pipeline_new_default();
  hlo_pipeline_options o = hlo_pipeline_options_default();
  o.dump_to = sub;
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  char files[2048];
  char path[512];
  snprintf(path, sizeof path, "%s/module_0000.test_module.before_optimizations.hlo", sub);
  CHECK(file_contains(path, "orphan"));
  CHECK(file_contains(path, "dead_add"));
  snprintf(path, sizeof path, "%s/module_0000.test_module.0000.after_dce.hlo", sub);
  CHECK(!file_contains(path, "dead_add"));
  CHECK(file_contains(path, "live_reduce"));
  snprintf(path, sizeof path, "%s/module_0000.test_module.after_optimizations.hlo", sub);
  CHECK(!file_contains(path, "orphan"));
  list_dir(sub, files, sizeof files, true);
  /* fix(dce) ran twice: once removing code, once confirming nothing is left. */
  CHECK(strcmp(files, "module_0000.test_module.0000.after_dce.hlo module_0000.test_module.0001.after_dce.hlo "
                      "module_0000.test_module.after_optimizations.hlo "
                      "module_0000.test_module.before_optimizations.hlo") == 0);
  if (strcmp(files, "module_0000.test_module.0000.after_dce.hlo module_0000.test_module.0001.after_dce.hlo "
                    "module_0000.test_module.after_optimizations.hlo "
                    "module_0000.test_module.before_optimizations.hlo") != 0)
    fprintf(stderr, "dump files: %s\n", files);
  hlo_module_free(m);

  /* dump_pass_re filters the per-pass dumps, not the before/after files; module_id
   * numbers the files. */
  m = make_module();
  o.dump_pass_re = "^(cse|fold)$";
  o.module_id = 12;
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  list_dir(sub, files, sizeof files, true);
  CHECK(strcmp(files, "module_0012.test_module.after_optimizations.hlo "
                      "module_0012.test_module.before_optimizations.hlo") == 0);
  hlo_module_free(m);

  /* Partial regex match, as XLA's RE2::PartialMatch. */
  m = make_module();
  o.dump_pass_re = "dc";
  o.module_id = 1;
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  list_dir(sub, files, sizeof files, true);
  CHECK(strstr(files, "module_0001.test_module.0000.after_dce.hlo") != NULL);
  hlo_module_free(m);

  /* Unsafe characters in the module name do not escape the directory. */
  m = make_module();
  m->name = "../evil/name";
  o.dump_pass_re = "^$";
  o.module_id = 0;
  CHECK_OK(hlo_pipeline_run(p, m, &o, NULL));
  list_dir(sub, files, sizeof files, true);
  CHECK(strcmp(files, "module_0000..._evil_name.after_optimizations.hlo "
                      "module_0000..._evil_name.before_optimizations.hlo") == 0);
  hlo_module_free(m);
  hlo_pipeline_free(p);

  rmdir(sub);
  snprintf(path, sizeof path, "%s/nested", dir);
  rmdir(path);
  rmdir(dir);
}

TEST_MAIN(TEST(test_dce_removes_dead_code), TEST(test_dce_keeps_side_effects), TEST(test_fix_stops_at_cap),
          TEST(test_default_pipeline_runs_dce), TEST(test_verifier_names_pass), TEST(test_errors_and_options),
          TEST(test_dumps))
