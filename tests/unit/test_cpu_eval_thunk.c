/* Unit tests for the cpu backend's evaluator thunks (src/backends/cpu/cpu_eval.c): an
 * instruction that neither the code generator nor oneDNN takes (sort, while,
 * conditional, reduce-precision, ...) runs alone through the evaluator while the rest of
 * the module stays compiled, so compile succeeds on cpu instead of answering
 * UNIMPLEMENTED. Every module here is built from exact operations (integer math,
 * + - * on floats, data movement) around the evaluated instruction, so the cpu result
 * must equal the evaluator's bit for bit on pseudo-random inputs. The --profile summary
 * must list the evaluated instruction as an "evaluator" thunk and its neighbours as
 * kernels, and compile must warn naming it; supports() keeps refusing it (graph
 * placement unchanged). */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"

/* Compiles text on cpu (must succeed) with profiling, runs it on pseudo-random
 * arguments (seeds seed, seed + 1, ...) and compares with the evaluator bit for bit. */
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
  backend_compile_options o = backend_compile_options_default();
  o.profile = true;
  backend_executable *e = NULL;
  hlo_literal *got = NULL, *want = NULL;
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
  CHECK_OK(eval_module(m, args, n, &want));
  bool same = got && want && literal_equal(got, want);
  if (!same) fprintf(stderr, "cpu and evaluator differ (seed %llu) on:\n%s\n", (unsigned long long)current_seed,
                     current_text);
  CHECK(same);
  literal_free(got);
  literal_free(want);
  for (int p = 0; p < n && p < 8; p++) literal_free(args[p]);
  hlo_module_free(m);
}

/* Runs text on several seeds; the captured stderr of the first (compile warning and
 * profile) must contain every string of `expect` (NULL-terminated). */
static void check_module(const char *text, const char *const *expect) {
  current_text = text;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    current_seed = seed * 101;
    char *err = check_capture_stderr(compile_run_compare);
    for (int k = 0; seed == 1 && err && expect[k]; k++) {
      bool found = strstr(err, expect[k]) != NULL;
      if (!found) fprintf(stderr, "expected \"%s\" in:\n%s\n", expect[k], err);
      CHECK(found);
    }
    CHECK(!err || strstr(err, "error") == NULL);
    free(err);
  }
}

/* supports() still refuses the instruction named `name` of text's entry. */
static void check_refused(const char *text, const char *name) {
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  const hlo_instr *ins = hlo_computation_find_instr(m->entry, name);
  CHECK(ins != NULL);
  if (ins && cpu) CHECK(!cpu->supports(cpu, ins));
  hlo_module_free(m);
}

static const char *const SORT =
    "HloModule sort_between\n\n"
    "lt {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(x, y), direction=LT, type=TOTALORDER\n}\n\n"
    "ENTRY main {\n  a = f32[4,33] parameter(0)\n  b = f32[4,33] parameter(1)\n"
    "  s = f32[4,33] add(a, b)\n"
    "  sorted = f32[4,33] sort(s), dimensions={1}, to_apply=lt\n"
    "  ROOT m = f32[4,33] multiply(sorted, b)\n}\n";

static void test_sort_between_compiled_ops(void) {
  check_module(SORT, (const char *const[]){"sorted (sort)", "evaluator sorted sort f32[4,33]", "kernel", NULL});
  check_refused(SORT, "sorted");
}

static const char *const KEY_VALUE_SORT =
    "HloModule kv_sort\n\n"
    "lt {\n  k0 = s32[] parameter(0)\n  k1 = s32[] parameter(1)\n  v0 = f32[] parameter(2)\n"
    "  v1 = f32[] parameter(3)\n  ROOT c = pred[] compare(k0, k1), direction=LT\n}\n\n"
    "ENTRY main {\n  k = s32[64] parameter(0)\n  v = f32[64] parameter(1)\n"
    "  k2 = s32[64] multiply(k, k)\n"
    "  s = (s32[64], f32[64]) sort(k2, v), dimensions={0}, is_stable=true, to_apply=lt\n"
    "  sk = s32[64] get-tuple-element(s), index=0\n  sv = f32[64] get-tuple-element(s), index=1\n"
    "  one = s32[] constant(1)\n  ones = s32[64] broadcast(one), dimensions={}\n"
    "  kk = s32[64] add(sk, ones)\n  vv = f32[64] negate(sv)\n"
    "  ROOT t = (s32[64], f32[64], (s32[64], f32[64])) tuple(kk, vv, s)\n}\n";

static void test_tuple_shaped_sort(void) {
  check_module(KEY_VALUE_SORT, (const char *const[]){"s (sort)", "evaluator s sort (s32[64], f32[64])", NULL});
}

static const char *const SCATTER =
    "HloModule scatter_add\n\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"
    "ENTRY main {\n  base = f32[16,8] parameter(0)\n  idx = s32[5,1] parameter(1)\n"
    "  upd = f32[5,8] parameter(2)\n"
    "  b2 = f32[16,8] multiply(base, base)\n"
    "  seven = s32[] constant(7)\n  sevens = s32[5,1] broadcast(seven), dimensions={}\n"
    "  i2 = s32[5,1] and(idx, sevens)\n"
    "  sc = f32[16,8] scatter(b2, i2, upd), update_window_dims={1}, inserted_window_dims={0},\n"
    "      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
    "  ROOT r = f32[16,8] subtract(sc, base)\n}\n";

/* Scatter left the evaluator for a native kernel (cpu_scatter.c): the same module now
 * shows a "native" thunk between the kernels, still equal to the evaluator bit for bit
 * (out-of-range rows skipped alike), and supports() accepts it. */
static void test_scatter(void) {
  check_module(SCATTER, (const char *const[]){"native sc scatter", "kernel b2 multiply", NULL});
  hlo_module *m = check_parse_hlo(SCATTER);
  const backend *cpu = backend_find("cpu");
  const hlo_instr *ins = m ? hlo_computation_find_instr(m->entry, "sc") : NULL;
  CHECK(ins != NULL && cpu != NULL);
  if (ins && cpu) CHECK(cpu->supports(cpu, ins));
  hlo_module_free(m);
}

/* A fori_loop as JAX writes it: the counter and a nested tuple of state in the loop,
 * read back through get-tuple-element by compiled consumers, and the whole while result
 * (a nested packed tuple) as an output too. */
static const char *const WHILE =
    "HloModule fori\n\n"
    "cond {\n  cp = (s32[], (f32[4,8], s32[8])) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(5)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "body {\n  p = (s32[], (f32[4,8], s32[8])) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  st = (f32[4,8], s32[8]) get-tuple-element(p), index=1\n"
    "  x = f32[4,8] get-tuple-element(st), index=0\n  c = s32[8] get-tuple-element(st), index=1\n"
    "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
    "  half = f32[] constant(0.5)\n  hb = f32[4,8] broadcast(half), dimensions={}\n"
    "  y = f32[4,8] multiply(x, hb)\n  ib = s32[8] broadcast(i), dimensions={}\n  c2 = s32[8] add(c, ib)\n"
    "  st2 = (f32[4,8], s32[8]) tuple(y, c2)\n"
    "  ROOT t = (s32[], (f32[4,8], s32[8])) tuple(j, st2)\n}\n\n"
    "ENTRY main {\n  a = f32[4,8] parameter(0)\n  c = s32[8] parameter(1)\n"
    "  a2 = f32[4,8] add(a, a)\n  z = s32[] constant(0)\n"
    "  st = (f32[4,8], s32[8]) tuple(a2, c)\n"
    "  init = (s32[], (f32[4,8], s32[8])) tuple(z, st)\n"
    "  w = (s32[], (f32[4,8], s32[8])) while(init), condition=cond, body=body\n"
    "  ws = (f32[4,8], s32[8]) get-tuple-element(w), index=1\n"
    "  wx = f32[4,8] get-tuple-element(ws), index=0\n"
    "  r = f32[4,8] subtract(wx, a)\n"
    "  ROOT out = (f32[4,8], (s32[], (f32[4,8], s32[8]))) tuple(r, w)\n}\n";

static void test_while_loop(void) {
  check_module(WHILE, (const char *const[]){"w (while)", "evaluator w while", "kernel", NULL});
  check_refused(WHILE, "w");
}

/* A while whose result is the root itself, fed straight by a parameter tuple. */
static const char *const WHILE_ROOT =
    "HloModule while_root\n\n"
    "cond {\n  cp = (s32[], f32[3]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(4)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "body {\n  p = (s32[], f32[3]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[3] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
    "  y = f32[3] add(x, x)\n  ROOT t = (s32[], f32[3]) tuple(j, y)\n}\n\n"
    "ENTRY main {\n  i0 = s32[] parameter(0)\n  x = f32[3] parameter(1)\n"
    "  init = (s32[], f32[3]) tuple(i0, x)\n"
    "  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body\n}\n";

static void test_while_as_root(void) {
  check_module(WHILE_ROOT, (const char *const[]){"w (while)", NULL});
}

static const char *const CONDITIONAL =
    "HloModule cond\n\n"
    "on_true {\n  p = f32[6] parameter(0)\n  ROOT n = f32[6] negate(p)\n}\n\n"
    "on_false {\n  p = f32[6] parameter(0)\n  ROOT a = f32[6] add(p, p)\n}\n\n"
    "ENTRY main {\n  x = f32[6] parameter(0)\n  y = f32[6] parameter(1)\n"
    "  zero = f32[] constant(0)\n  x1 = f32[1] slice(x), slice={[0:1]}\n  x0 = f32[] reshape(x1)\n"
    "  pr = pred[] compare(x0, zero), direction=GT\n"
    "  s = f32[6] multiply(x, y)\n"
    "  c = f32[6] conditional(pr, s, s), true_computation=on_true, false_computation=on_false\n"
    "  ROOT r = f32[6] add(c, y)\n}\n";

static void test_conditional(void) {
  check_module(CONDITIONAL, (const char *const[]){"c (conditional)", "evaluator c conditional", NULL});
}

/* An elementwise op the code generator lacks: fusion puts it in one loop fusion with
 * its neighbours, which compile splits again so only it is evaluated; buffer
 * assignment may let it write over its operand's block, which the thunk's copies make
 * safe. */
static const char *const REDUCE_PRECISION =
    "HloModule rp\n\n"
    "ENTRY main {\n  a = f32[100] parameter(0)\n  b = f32[100] parameter(1)\n"
    "  m = f32[100] multiply(a, b)\n"
    "  rp = f32[100] reduce-precision(m), exponent_bits=5, mantissa_bits=10\n"
    "  ROOT r = f32[100] add(rp, b)\n}\n";

static void test_reduce_precision(void) {
  check_module(REDUCE_PRECISION,
               (const char *const[]){"runs 1 instruction", "(reduce-precision)", "kernel", NULL});
}

/* What the evaluator cannot run either still makes compile answer UNIMPLEMENTED naming
 * the instruction, so the caller can fall back (or report it). */
static void test_custom_call_still_refused(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule cc\n\nENTRY main {\n  x = f32[4] parameter(0)\n  e = f32[4] negate(x)\n"
      "  ROOT my_call = f32[4] custom-call(e), custom_call_target=\"no_such_target\"\n}\n");
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e = NULL;
  kiln_status s = cpu->compile(cpu, m, NULL, &e);
  CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
  if (s) {
    CHECK(strstr(kiln_status_message(s), "my_call") != NULL);
    CHECK(strstr(kiln_status_message(s), "custom-call") != NULL);
    kiln_status_free(s);
  }
  CHECK(e == NULL);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_sort_between_compiled_ops), TEST(test_tuple_shaped_sort), TEST(test_scatter),
          TEST(test_while_loop), TEST(test_while_as_root), TEST(test_conditional), TEST(test_reduce_precision),
          TEST(test_custom_call_still_refused))
