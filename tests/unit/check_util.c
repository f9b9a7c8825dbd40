/* See check_util.h. */
#include "check_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "check.h"
#include "eval/eval.h"
#include "hlo/literal.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

hlo_module *check_parse_hlo(const char *text) {
  hlo_module *m = NULL;
  kiln_status s = hlo_parse(text, strlen(text), "test.hlo", &m);
  if (!s) s = hlo_verify_module(m);
  if (s) {
    check_fail(__FILE__, __LINE__, "parsing the test's HLO", kiln_status_message(s));
    kiln_status_free(s);
    abort();
  }
  return m;
}

graph *check_parse_graph(const char *text) {
  graph *g = NULL;
  kiln_status s = graph_parse(text, strlen(text), "test.graph", &g);
  if (s) {
    check_fail(__FILE__, __LINE__, "parsing the test's graph", kiln_status_message(s));
    kiln_status_free(s);
    abort();
  }
  return g;
}

hlo_literal *check_eval_random(const hlo_module *m, uint64_t seed, kiln_status *err) {
  int n = m->entry->n_params;
  hlo_literal **args = calloc((size_t)n + 1, sizeof *args);
  if (!args) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n && !s; i++) {
    s = literal_create(&m->entry->params[i]->shape, &args[i]);
    if (!s) literal_fill_pseudo_random(args[i], seed + (uint64_t)i);
  }
  hlo_literal *out = NULL;
  if (!s) s = eval_module(m, args, n, &out);
  for (int i = 0; i < n; i++) literal_free(args[i]);
  free(args);
  if (err)
    *err = s;
  else
    CHECK_OK(s);
  return out;
}

void check_same_eval(const hlo_module *a, const hlo_module *b, uint64_t seed) {
  hlo_literal *ra = check_eval_random(a, seed, NULL), *rb = check_eval_random(b, seed, NULL);
  CHECK(ra && rb && literal_equal(ra, rb));
  literal_free(ra);
  literal_free(rb);
}

hlo_module *check_run_pass(const char *text, hlo_pass_fn pass, bool expect_changed) {
  hlo_module *before = check_parse_hlo(text);
  hlo_module *m = check_parse_hlo(text);
  bool changed = false, dce_changed = false;
  CHECK_OK(pass(m, &changed));
  CHECK(changed == expect_changed);
  CHECK_OK(hlo_verify_module(m));
  CHECK_OK(hlo_pass_dce(m, &dce_changed));
  CHECK_OK(hlo_verify_module(m));
  check_same_eval(before, m, 17);
  hlo_module_free(before);
  return m;
}

int check_count_op(const hlo_computation *c, hlo_opcode op) {
  int n = 0;
  for (int i = 0; i < c->n_instrs; i++) n += c->instrs[i]->op == op;
  return n;
}

/* Runs fn with stderr going to a temporary file and returns what it wrote (malloc'ed). */
char *check_capture_stderr(void (*fn)(void)) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  if (!tmp) abort();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long n = ftell(tmp);
  char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
  if (!text) abort();
  rewind(tmp);
  if (n > 0 && fread(text, 1, (size_t)n, tmp) != (size_t)n) text[0] = 0;
  fclose(tmp);
  return text;
}

/* Compiles text on cpu (must succeed) with profiling and without, runs each on
 * pseudo-random arguments (seeds seed, seed + 1, ...) and compares with the evaluator bit
 * for bit. Both: a profiled executable runs thunk by thunk (the profile is what the
 * caller checks), an unprofiled one may run a loop as one function. */
static const char *current_text;
static uint64_t current_seed;

static void compile_run_compare(void) {
  hlo_module *m = check_parse_hlo(current_text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  int n = m->entry->n_params;
  hlo_literal *args[8] = {0};
  for (int p = 0; p < n && p < 8; p++) {
    CHECK_OK(literal_create(&m->entry->params[p]->shape, &args[p]));
    literal_fill_pseudo_random(args[p], current_seed + (uint64_t)p);
  }
  hlo_literal *want = NULL;
  CHECK_OK(eval_module(m, args, n, &want));
  for (int profiled = 1; profiled >= 0; profiled--) {
    backend_compile_options o = backend_compile_options_default();
    o.profile = profiled;
    backend_executable *e = NULL;
    hlo_literal *got = NULL;
    CHECK_OK(cpu ? cpu->compile(cpu, m, &o, &e) : NULL);
    if (e) {
      /* Twice: the evaluator thunk's computation is built once and reused. */
      for (int r = 0; r < 2; r++) {
        literal_free(got);
        got = NULL;
        CHECK_OK(cpu->execute(e, args, n, &got));
      }
      cpu->destroy(e); /* prints the profile */
    }
    bool same = got && want && literal_equal(got, want);
    if (!same)
      fprintf(stderr, "cpu (%s) and evaluator differ (seed %llu) on:\n%s\n", profiled ? "profiled" : "not profiled",
              (unsigned long long)current_seed, current_text);
    CHECK(same);
    literal_free(got);
  }
  literal_free(want);
  for (int p = 0; p < n && p < 8; p++) literal_free(args[p]);
  hlo_module_free(m);
}

void check_cpu_like_evaluator(const char *text, const char *const *expect) {
  current_text = text;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    current_seed = seed * 101;
    char *err = check_capture_stderr(compile_run_compare);
    for (int k = 0; seed == 1 && err && expect[k]; k++) {
      bool absent = expect[k][0] == '!';
      bool found = strstr(err, expect[k] + absent) != NULL;
      if (found == absent) fprintf(stderr, "expected \"%s\" %sin:\n%s\n", expect[k] + absent, absent ? "not " : "", err);
      CHECK(found != absent);
    }
    CHECK(!err || strstr(err, "error") == NULL);
    free(err);
  }
}

void check_cpu_refuses(const char *text, const char *name) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  const hlo_instr *ins = hlo_computation_find_instr(m->entry, name);
  CHECK(ins != NULL);
  if (ins && cpu) CHECK(!cpu->supports(cpu, ins));
  hlo_module_free(m);
}

