/* See check_util.h. */
#include "check_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
