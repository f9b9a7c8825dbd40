/* Unit tests for the cpu backend's evaluator thunks (src/backends/cpu/cpu_eval.c): an
 * instruction that neither the code generator, oneDNN nor a native kernel takes (here
 * `map`, and a variadic reduce with more results than one kernel writes) runs alone
 * through the evaluator while the rest of the module stays compiled -- also inside a
 * compiled loop body -- so compile succeeds on cpu instead of answering UNIMPLEMENTED. Every module here is built from exact operations (integer math,
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

static const char *const MAP =
    "HloModule map_between\n\n"
    "hyp {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  xx = f32[] multiply(x, x)\n"
    "  ROOT s = f32[] subtract(xx, y)\n}\n\n"
    "ENTRY main {\n  a = f32[4,33] parameter(0)\n  b = f32[4,33] parameter(1)\n"
    "  s = f32[4,33] add(a, b)\n"
    "  mapped = f32[4,33] map(s, b), dimensions={0,1}, to_apply=hyp\n"
    "  ROOT m = f32[4,33] multiply(mapped, b)\n}\n";

static void test_map_between_compiled_ops_is_evaluated(void) {
  check_cpu_like_evaluator(MAP, (const char *const[]){"mapped (map)", "evaluator mapped map f32[4,33]", "kernel", NULL});
  check_cpu_refuses(MAP, "mapped");
}

/* Nine accumulators: more results than one generated kernel writes, so the whole
 * (tuple-shaped) reduce is evaluated, its leaves read back by compiled consumers. */
static const char *const WIDE_REDUCE =
    "HloModule wide_reduce\n\n"
    "sum9 {\n"
    "  a0 = f32[] parameter(0)\n  a1 = f32[] parameter(1)\n  a2 = f32[] parameter(2)\n"
    "  a3 = f32[] parameter(3)\n  a4 = f32[] parameter(4)\n  a5 = f32[] parameter(5)\n"
    "  a6 = f32[] parameter(6)\n  a7 = f32[] parameter(7)\n  a8 = f32[] parameter(8)\n"
    "  b0 = f32[] parameter(9)\n  b1 = f32[] parameter(10)\n  b2 = f32[] parameter(11)\n"
    "  b3 = f32[] parameter(12)\n  b4 = f32[] parameter(13)\n  b5 = f32[] parameter(14)\n"
    "  b6 = f32[] parameter(15)\n  b7 = f32[] parameter(16)\n  b8 = f32[] parameter(17)\n"
    "  c0 = f32[] add(a0, b0)\n  c1 = f32[] add(a1, b1)\n  c2 = f32[] add(a2, b2)\n"
    "  c3 = f32[] maximum(a3, b3)\n  c4 = f32[] add(a4, b4)\n  c5 = f32[] minimum(a5, b5)\n"
    "  c6 = f32[] add(a6, b6)\n  c7 = f32[] add(a7, b7)\n  c8 = f32[] multiply(a8, b8)\n"
    "  ROOT t = (f32[], f32[], f32[], f32[], f32[], f32[], f32[], f32[], f32[]) "
    "tuple(c0, c1, c2, c3, c4, c5, c6, c7, c8)\n}\n\n"
    "ENTRY main {\n  x = f32[4,5] parameter(0)\n  y = f32[4,5] parameter(1)\n"
    "  xy = f32[4,5] add(x, y)\n  z = f32[] constant(0)\n  one = f32[] constant(1)\n"
    "  r = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) "
    "reduce(x, y, xy, x, y, xy, x, y, x, z, z, z, z, z, z, z, z, one), dimensions={1}, to_apply=sum9\n"
    "  r3 = f32[4] get-tuple-element(r), index=3\n  r8 = f32[4] get-tuple-element(r), index=8\n"
    "  ROOT out = f32[4] subtract(r3, r8)\n}\n";

static void test_tuple_shaped_reduce_is_evaluated(void) {
  check_cpu_like_evaluator(WIDE_REDUCE, (const char *const[]){"r (reduce)", "evaluator r reduce", "kernel", NULL});
}

/* The loop is compiled (a "loop" thunk) and only the map inside its body is evaluated. */
static const char *const MAP_IN_LOOP =
    "HloModule map_in_loop\n\n"
    "hyp {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  xx = f32[] multiply(x, y)\n"
    "  ROOT s = f32[] add(xx, y)\n}\n\n"
    "cond {\n  cp = (s32[], f32[8]) parameter(0)\n  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(ci, n), direction=LT\n}\n\n"
    "body {\n  p = (s32[], f32[8]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[8] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
    "  h = f32[] constant(0.5)\n  hb = f32[8] broadcast(h), dimensions={}\n"
    "  mapped = f32[8] map(x, hb), dimensions={0}, to_apply=hyp\n  ROOT t = (s32[], f32[8]) tuple(j, mapped)\n}\n\n"
    "ENTRY main {\n  x = f32[8] parameter(0)\n  z = s32[] constant(0)\n"
    "  init = (s32[], f32[8]) tuple(z, x)\n"
    "  w = (s32[], f32[8]) while(init), condition=cond, body=body\n"
    "  ROOT r = f32[8] get-tuple-element(w), index=1\n}\n";

static void test_map_inside_compiled_loop_is_evaluated(void) {
  check_cpu_like_evaluator(MAP_IN_LOOP, (const char *const[]){"runs 1 instruction", "mapped (map)", "loop", "evaluator mapped map", NULL});
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

TEST_MAIN(TEST(test_map_between_compiled_ops_is_evaluated), TEST(test_tuple_shaped_reduce_is_evaluated),
          TEST(test_map_inside_compiled_loop_is_evaluated), TEST(test_custom_call_still_refused))
