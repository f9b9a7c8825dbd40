/* Unit tests for while loops and conditionals compiled by the cpu backend
 * (cpu_backend.c: a loop's condition and body, and each branch, become programs of
 * their own run by a "loop" or "branch" thunk). Each module computes exactly (integer
 * math, + - * on floats, data movement), so the cpu result must equal the evaluator's
 * bit for bit on pseudo-random inputs, and nothing may run through the evaluator. The
 * cases cover how loop state moves: nested tuples, leaves passed through, leaves that
 * swap places (staged through scratch), a stacked buffer updated one row per step
 * (written in place) and the same with a later reader of the old buffer (must not be),
 * a state leaf computed elementwise from itself (written in place), read out of order
 * or read again after its update (must not be), or read by later instructions once new,
 * nested loops, data-dependent trip counts, and conditionals with pred and s32
 * selectors (out of range runs the last branch) and tuple operands that must be packed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "check_util.h"

#define COMPILED "!through the evaluator"
/* The profile's mark of a loop compiled as one function (cpu_loop_kernel.h); the
 * unprofiled run of every module below runs such loops that way. */
#define ONE_FUNCTION " (one function when not profiled)"

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

static void test_fori_loop_with_nested_tuple_state_is_compiled(void) {
  check_cpu_like_evaluator(WHILE, (const char *const[]){"loop   w while", "kernel", ONE_FUNCTION, COMPILED, NULL});
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
    "  m = s32[] constant(7)\n  i1 = s32[] and(i0, m)\n"
    "  init = (s32[], f32[3]) tuple(i1, x)\n"
    "  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body\n}\n";

static void test_while_as_root_with_data_dependent_start_is_compiled(void) {
  check_cpu_like_evaluator(WHILE_ROOT, (const char *const[]){"loop", ONE_FUNCTION, COMPILED, NULL});
}

/* The body returns (b, a) for state (a, b): each leaf comes from the other's place, so
 * a direct copy would overwrite one before reading it. The weights leaf passes through. */
static const char *const SWAP =
    "HloModule swap\n\n"
    "cond {\n  cp = (s32[], f32[16], f32[16], f32[16]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(5)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "body {\n  p = (s32[], f32[16], f32[16], f32[16]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  a = f32[16] get-tuple-element(p), index=1\n  b = f32[16] get-tuple-element(p), index=2\n"
    "  w = f32[16] get-tuple-element(p), index=3\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
    "  ROOT t = (s32[], f32[16], f32[16], f32[16]) tuple(j, b, a, w)\n}\n\n"
    "ENTRY main {\n  a = f32[16] parameter(0)\n  b = f32[16] parameter(1)\n  w = f32[16] parameter(2)\n"
    "  z = s32[] constant(0)\n  ab = f32[16] add(a, b)\n"
    "  init = (s32[], f32[16], f32[16], f32[16]) tuple(z, ab, b, w)\n"
    "  ROOT r = (s32[], f32[16], f32[16], f32[16]) while(init), condition=cond, body=body\n}\n";

static void test_loop_state_leaves_that_swap_places_are_staged(void) {
  check_cpu_like_evaluator(SWAP, (const char *const[]){"loop", "!" ONE_FUNCTION, COMPILED, NULL});
}

/* A scan: each step writes one row of a stacked buffer carried by the loop. The row's
 * dynamic-update-slice writes into the loop state in place. */
#define SCAN_BODY(extra, root)                                                                        \
  "body {\n  p = (s32[], f32[4], f32[6,4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n" \
  "  h = f32[4] get-tuple-element(p), index=1\n  ys = f32[6,4] get-tuple-element(p), index=2\n"       \
  "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  h2 = f32[4] add(h, h)\n"                      \
  "  row = f32[1,4] reshape(h2)\n  z = s32[] constant(0)\n"                                            \
  "  ys2 = f32[6,4] dynamic-update-slice(ys, row, i, z)\n" extra "  ROOT t = " root "\n}\n\n"

static const char *const SCAN =
    "HloModule scan\n\n"
    "cond {\n  cp = (s32[], f32[4], f32[6,4]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(6)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    SCAN_BODY("", "(s32[], f32[4], f32[6,4]) tuple(j, h2, ys2)")
    "ENTRY main {\n  h = f32[4] parameter(0)\n  ys = f32[6,4] parameter(1)\n  z = s32[] constant(0)\n"
    "  init = (s32[], f32[4], f32[6,4]) tuple(z, h, ys)\n"
    "  ROOT w = (s32[], f32[4], f32[6,4]) while(init), condition=cond, body=body\n}\n";

static void test_scan_writes_its_stacked_rows_in_place(void) {
  check_cpu_like_evaluator(SCAN, (const char *const[]){"loop", "native ys2 dynamic-update-slice", ONE_FUNCTION,
                                                       COMPILED, NULL});
}

/* The same, but the body also reads the old buffer after updating it: the update must
 * not overwrite the state the later reader needs. */
static const char *const SCAN_LATE_READER =
    "HloModule scan_late\n\n"
    "cond {\n  cp = (s32[], f32[4], f32[6,4]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(6)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    SCAN_BODY("  old = f32[6,4] negate(ys)\n  mix = f32[6,4] add(ys2, old)\n",
              "(s32[], f32[4], f32[6,4]) tuple(j, h2, mix)")
    "ENTRY main {\n  h = f32[4] parameter(0)\n  ys = f32[6,4] parameter(1)\n  z = s32[] constant(0)\n"
    "  init = (s32[], f32[4], f32[6,4]) tuple(z, h, ys)\n"
    "  ROOT w = (s32[], f32[4], f32[6,4]) while(init), condition=cond, body=body\n}\n";

static void test_scan_with_a_later_reader_of_the_old_buffer_keeps_it(void) {
  check_cpu_like_evaluator(SCAN_LATE_READER, (const char *const[]){"loop", ONE_FUNCTION, COMPILED, NULL});
}

/* A moving average over the rows of a bf16 matrix: the new average is computed
 * elementwise from the old one, so the body writes it straight into the loop state.
 * The step's row (64 elements) is longer than a fused dynamic-slice may be, so it is
 * copied natively. */
#define AVG_LOOP(name, extra, root)                                                                      \
  "HloModule " name "\n\n"                                                                             \
  "cond {\n  cp = (s32[], f32[64], bf16[16,64]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n" \
  "  n = s32[] constant(16)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"                \
  "body {\n  p = (s32[], f32[64], bf16[16,64]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n" \
  "  acc = f32[64] get-tuple-element(p), index=1\n  x = bf16[16,64] get-tuple-element(p), index=2\n"  \
  "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  z = s32[] constant(0)\n"                     \
  "  row = bf16[1,64] dynamic-slice(x, i, z), dynamic_slice_sizes={1,64}\n"                            \
  "  r = bf16[64] reshape(row)\n  rf = f32[64] convert(r)\n"                                           \
  "  half = f32[] constant(0.5)\n  hb = f32[64] broadcast(half), dimensions={}\n" extra               \
  "  ROOT t = (s32[], f32[64], bf16[16,64]) tuple(j, " root ", x)\n}\n\n"                           \
  "ENTRY main {\n  a = f32[64] parameter(0)\n  x = bf16[16,64] parameter(1)\n  z = s32[] constant(0)\n" \
  "  init = (s32[], f32[64], bf16[16,64]) tuple(z, a, x)\n"                                             \
  "  ROOT w = (s32[], f32[64], bf16[16,64]) while(init), condition=cond, body=body\n}\n"

static void test_moving_average_updates_its_state_leaf_in_place(void) {
  check_cpu_like_evaluator(AVG_LOOP("avg", "  m = f32[64] multiply(acc, hb)\n  acc2 = f32[64] add(m, rf)\n", "acc2"),
                           (const char *const[]){"loop", "native row dynamic-slice", ONE_FUNCTION, COMPILED, NULL});
}

/* The new value reads the old one reversed: element i needs old element 63 - i, which
 * writing in place would already have overwritten. */
static void test_state_leaf_read_out_of_order_is_not_updated_in_place(void) {
  check_cpu_like_evaluator(AVG_LOOP("avg_rev",
                                    "  rv = f32[64] reverse(acc), dimensions={0}\n  m = f32[64] multiply(rv, hb)\n"
                                    "  acc2 = f32[64] add(m, rf)\n",
                                    "acc2"),
                           (const char *const[]){"loop", COMPILED, NULL});
}

/* The old value is read again after the new one is computed (the subtract comes after
 * the add), and the new one is read by a later instruction too: that reader must see
 * the new value, the subtract the old. */
static void test_state_leaf_read_after_its_update_keeps_the_old_value(void) {
  check_cpu_like_evaluator(AVG_LOOP("avg_late",
                                    "  acc2 = f32[64] add(acc, rf)\n  rv = f32[64] reverse(acc2), dimensions={0}\n"
                                    "  d = f32[64] subtract(rv, acc)\n  e = f32[64] multiply(d, hb)\n",
                                    "e"),
                           (const char *const[]){"loop", COMPILED, NULL});
}

/* The new value is written in place and then read by later instructions, which must
 * find it in the loop state. */
static void test_state_leaf_updated_in_place_is_read_by_later_instructions(void) {
  check_cpu_like_evaluator(
      "HloModule later\n\n"
      "cond {\n  cp = (s32[], s32[32], s32[32]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
      "  n = s32[] constant(5)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
      "body {\n  p = (s32[], s32[32], s32[32]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
      "  a = s32[32] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
      "  three = s32[] constant(3)\n  tb = s32[32] broadcast(three), dimensions={}\n"
      "  a2 = s32[32] multiply(a, tb)\n  ra = s32[32] reverse(a2), dimensions={0}\n"
      "  ROOT t = (s32[], s32[32], s32[32]) tuple(j, a2, ra)\n}\n\n"
      "ENTRY main {\n  a = s32[32] parameter(0)\n  b = s32[32] parameter(1)\n  z = s32[] constant(0)\n"
      "  init = (s32[], s32[32], s32[32]) tuple(z, a, b)\n"
      "  ROOT w = (s32[], s32[32], s32[32]) while(init), condition=cond, body=body\n}\n",
      (const char *const[]){"loop", COMPILED, NULL});
}

/* A loop function's dynamic-update-slice with a window of several runs (f32[5,1,4] into
 * f32[5,6,4]: five rows of four), u32 start indices (zero-extended), a start past the
 * last valid one (i runs to 8 over a dim of 6: clamped to 5), and a state leaf (the
 * stacked buffer) whose old value a later reader needs, so that the update goes to a
 * copy of it. */
static const char *const WINDOW_RUNS =
    "HloModule window_runs\n\n"
    "cond {\n  cp = (u32[], f32[5,6,4], f32[5,6,4]) parameter(0)\n  ci = u32[] get-tuple-element(cp), index=0\n"
    "  n = u32[] constant(9)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "body {\n  p = (u32[], f32[5,6,4], f32[5,6,4]) parameter(0)\n  i = u32[] get-tuple-element(p), index=0\n"
    "  ys = f32[5,6,4] get-tuple-element(p), index=1\n  acc = f32[5,6,4] get-tuple-element(p), index=2\n"
    "  one = u32[] constant(1)\n  j = u32[] add(i, one)\n  z = u32[] constant(0)\n"
    "  fi = f32[] convert(i)\n  u = f32[5,1,4] broadcast(fi), dimensions={}\n"
    "  ys2 = f32[5,6,4] dynamic-update-slice(ys, u, z, i, z)\n  acc2 = f32[5,6,4] add(acc, ys)\n"
    "  ROOT t = (u32[], f32[5,6,4], f32[5,6,4]) tuple(j, ys2, acc2)\n}\n\n"
    "ENTRY main {\n  ys = f32[5,6,4] parameter(0)\n  acc = f32[5,6,4] parameter(1)\n  z = u32[] constant(0)\n"
    "  init = (u32[], f32[5,6,4], f32[5,6,4]) tuple(z, ys, acc)\n"
    "  ROOT w = (u32[], f32[5,6,4], f32[5,6,4]) while(init), condition=cond, body=body\n}\n";

static void test_loop_function_updates_windows_of_several_runs_with_clamped_unsigned_starts(void) {
  check_cpu_like_evaluator(WINDOW_RUNS, (const char *const[]){"native ys2 dynamic-update-slice", ONE_FUNCTION,
                                                              COMPILED, NULL});
}

/* A loop inside a loop body, and a trip count that depends on the data (doubling a
 * small value until it passes a bound). */
static const char *const NESTED =
    "HloModule nested\n\n"
    "icond {\n  cp = (s32[], s32[]) parameter(0)\n  v = s32[] get-tuple-element(cp), index=1\n"
    "  n = s32[] constant(1000)\n  ROOT lt = pred[] compare(v, n), direction=LT\n}\n\n"
    "ibody {\n  p = (s32[], s32[]) parameter(0)\n  k = s32[] get-tuple-element(p), index=0\n"
    "  v = s32[] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  k2 = s32[] add(k, one)\n"
    "  two = s32[] constant(2)\n  v2 = s32[] multiply(v, two)\n  v3 = s32[] add(v2, one)\n"
    "  ROOT t = (s32[], s32[]) tuple(k2, v3)\n}\n\n"
    "ocond {\n  cp = (s32[], s32[8]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "obody {\n  p = (s32[], s32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  acc = s32[8] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
    "  z = s32[] constant(0)\n  init = (s32[], s32[]) tuple(z, i)\n"
    "  inner = (s32[], s32[]) while(init), condition=icond, body=ibody\n"
    "  steps = s32[] get-tuple-element(inner), index=0\n  sb = s32[8] broadcast(steps), dimensions={}\n"
    "  acc2 = s32[8] add(acc, sb)\n  ROOT t = (s32[], s32[8]) tuple(j, acc2)\n}\n\n"
    "ENTRY main {\n  s = s32[] parameter(0)\n  acc = s32[8] parameter(1)\n  m = s32[] constant(15)\n"
    "  s1 = s32[] and(s, m)\n  init = (s32[], s32[8]) tuple(s1, acc)\n"
    "  ROOT w = (s32[], s32[8]) while(init), condition=ocond, body=obody\n}\n";

static void test_nested_loops_with_data_dependent_trip_counts(void) {
  check_cpu_like_evaluator(NESTED, (const char *const[]){"inner while (s32[], s32[])" ONE_FUNCTION,
                                                         "w while (s32[], s32[8])\n", COMPILED, NULL});
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

static void test_pred_conditional_is_compiled(void) {
  check_cpu_like_evaluator(CONDITIONAL, (const char *const[]){"branch c conditional", COMPILED, NULL});
}

/* An s32 selector in [-1, 2] over three branches: -1 is out of range and runs the last.
 * Branch operands are tuples built by `tuple` instructions (no block of their own, so
 * they are packed before the call), and a branch returns part of its operand as is. */
static const char *const SWITCH =
    "HloModule switch\n\n"
    "b0 {\n  p = (f32[5], s32[5]) parameter(0)\n  x = f32[5] get-tuple-element(p), index=0\n"
    "  k = s32[5] get-tuple-element(p), index=1\n  n = f32[5] negate(x)\n"
    "  ROOT t = (f32[5], s32[5]) tuple(n, k)\n}\n\n"
    "b1 {\n  p = (f32[5], s32[5]) parameter(0)\n  x = f32[5] get-tuple-element(p), index=0\n"
    "  k = s32[5] get-tuple-element(p), index=1\n  k2 = s32[5] multiply(k, k)\n"
    "  ROOT t = (f32[5], s32[5]) tuple(x, k2)\n}\n\n"
    "b2 {\n  p = f32[5] parameter(0)\n  d = f32[5] add(p, p)\n  z = s32[] constant(9)\n"
    "  zb = s32[5] broadcast(z), dimensions={}\n  ROOT t = (f32[5], s32[5]) tuple(d, zb)\n}\n\n"
    "ENTRY main {\n  sel = s32[] parameter(0)\n  x = f32[5] parameter(1)\n  k = s32[5] parameter(2)\n"
    "  three = s32[] constant(3)\n  one = s32[] constant(1)\n  s3 = s32[] and(sel, three)\n"
    "  idx = s32[] subtract(s3, one)\n  x2 = f32[5] multiply(x, x)\n"
    "  a0 = (f32[5], s32[5]) tuple(x2, k)\n  a1 = (f32[5], s32[5]) tuple(x, k)\n"
    "  c = (f32[5], s32[5]) conditional(idx, a0, a1, x2), branch_computations={b0, b1, b2}\n"
    "  c0 = f32[5] get-tuple-element(c), index=0\n  r = f32[5] add(c0, x)\n"
    "  ROOT out = (f32[5], (f32[5], s32[5])) tuple(r, c)\n}\n";

static void test_switch_runs_the_last_branch_when_out_of_range(void) {
  /* The pseudo-random selector covers -1..2 over the seeds used (and -1 at least once
   * for some seed with overwhelming likelihood; the evaluator comparison holds either way). */
  check_cpu_like_evaluator(SWITCH, (const char *const[]){"branch c conditional", COMPILED, NULL});
}

/* Graph placement asks supports() about every instruction of every computation: loops,
 * conditionals, their tuple-shaped parameters and the plumbing around them are now the
 * cpu backend's, so placement keeps such modules on cpu. */
static void test_supports_accepts_loops_and_branches(void) {
  const char *const texts[] = {WHILE, WHILE_ROOT, SWAP, SCAN, NESTED, CONDITIONAL, SWITCH};
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  for (size_t t = 0; cpu && t < sizeof texts / sizeof texts[0]; t++) {
    hlo_module *m = check_parse_hlo(texts[t]);
    for (int c = 0; m && c < m->n_comps; c++)
      for (int i = 0; i < m->comps[c]->n_instrs; i++) {
        bool ok = cpu->supports(cpu, m->comps[c]->instrs[i]);
        if (!ok) fprintf(stderr, "cpu refuses %s in %s\n", m->comps[c]->instrs[i]->name, m->name);
        CHECK(ok);
      }
    hlo_module_free(m);
  }
}

TEST_MAIN(TEST(test_fori_loop_with_nested_tuple_state_is_compiled), TEST(test_supports_accepts_loops_and_branches),
          TEST(test_while_as_root_with_data_dependent_start_is_compiled),
          TEST(test_loop_state_leaves_that_swap_places_are_staged), TEST(test_scan_writes_its_stacked_rows_in_place),
          TEST(test_scan_with_a_later_reader_of_the_old_buffer_keeps_it),
          TEST(test_nested_loops_with_data_dependent_trip_counts), TEST(test_pred_conditional_is_compiled),
          TEST(test_switch_runs_the_last_branch_when_out_of_range),
          TEST(test_moving_average_updates_its_state_leaf_in_place),
          TEST(test_state_leaf_read_out_of_order_is_not_updated_in_place),
          TEST(test_state_leaf_read_after_its_update_keeps_the_old_value),
          TEST(test_state_leaf_updated_in_place_is_read_by_later_instructions),
          TEST(test_loop_function_updates_windows_of_several_runs_with_clamped_unsigned_starts))
