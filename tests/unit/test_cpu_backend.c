/* Unit tests for the `cpu` backend (src/backends/cpu): HLO modules compiled through the
 * backend vtable (pipeline, fusion, buffer assignment, LLVM kernels, oneDNN) and run
 * against the reference evaluator on the same inputs.
 *
 * Exact operations (integer and pred math, + - * / on floats, f16/bf16 rounding,
 * converts, select, compare, data movement, reductions in row-major order) must match
 * the evaluator bit for bit: the backend transcribes the evaluator's rules, so any
 * difference is a bug. Transcendentals are compared with a relative tolerance of 1e-6
 * (about 8 f32 ulps): most call the same libm functions as the evaluator and agree
 * exactly, but f32 exp, logistic (built on exp) and tanh are the backend's own
 * vectorizable polynomials, within 1 ulp (exp, over [-110, 95]) and 2 ulps (tanh, over
 * [-50, 50]) of glibc (checked when they were written), as XLA:CPU's own vectorized
 * versions are; a wrong formula (errors of order 1) still fails. Dots that oneDNN does not take run as naive loops accumulating
 * like the evaluator (double for floats, wrapping 64-bit for integers): integers are
 * exact; f64 sums may be associated differently, so they get 1e-12 relative.
 * Reductions over an input's minor dimension of 32 or more elements fold in 16 lanes, of
 * 128 or more in 64 (cpu_elemental.c, reduce_lanes): integer, min and max results stay exact (which of
 * several NaN payloads a max returns aside), float sums differ from the evaluator's
 * sequential order by rounding, so they are compared with 1e-5 of the largest result
 * magnitude (a sum of n terms in f32 is off by at most about n * 6e-8 of the sum of
 * magnitudes; n <= 1000 here and the magnitudes are of the results' order). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_pipeline.h"
#include "base/half.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

/* Special float values mixed into random inputs: zeros of both signs, infinities, NaNs
 * with payloads, huge and tiny values, ties for rounding. */
static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e30, -1e30, 1e-30, 2.5, -2.5,
                                  0.5, 65504.0, 65520.0, 3e38, -3e38, 127.5, -128.5, 255.5, 4294967296.0};

static void fill(hlo_literal *l, uint64_t seed, bool with_specials) {
  literal_fill_pseudo_random(l, seed);
  if (!with_specials) return;
  hlo_type t = l->shape.type;
  int64_t ns = (int64_t)(sizeof specials / sizeof specials[0]);
  for (int64_t i = 0; i < l->n; i += 3) {
    if (hlo_type_is_float(t)) {
      literal_set_f64(l, i, specials[(i / 3 + (int64_t)seed) % ns]);
    } else if (hlo_type_is_int(t)) {
      static const int64_t ints[] = {0, -1, 1, INT64_MIN, INT32_MIN, -128, 127, 255, 31, 32, 64, 7, -7};
      literal_set_s64(l, i, ints[(i / 3 + (int64_t)seed) % 13]);
    }
  }
}

typedef struct run_result {
  hlo_literal *cpu, *ref;
} run_result;

static void run_result_free(run_result *r) {
  literal_free(r->cpu);
  literal_free(r->ref);
  r->cpu = r->ref = NULL;
}

/* Explicit argument values (integers, row-major) replacing the random ones; NULL: none. */
static const int64_t *const *explicit_values;
/* Explicit bits of f32 arguments (NaN payloads included), by parameter; a NULL entry or
 * a parameter of another type keeps its values. */
static const uint32_t *const *explicit_f32_bits;

/* Compiles on cpu (must succeed), runs on fresh inputs and on the evaluator. */
static bool run_both(const char *text, uint64_t seed, bool with_specials, run_result *r) {
  memset(r, 0, sizeof *r);
  hlo_module *m = check_parse_hlo(text);
  if (!m) return false;
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  if (!cpu) {
    hlo_module_free(m);
    return false;
  }
  int n = m->entry->n_params;
  hlo_literal *args[8] = {0};
  for (int p = 0; p < n; p++) {
    CHECK_OK(literal_create(&m->entry->params[p]->shape, &args[p]));
    fill(args[p], seed + (uint64_t)p, with_specials);
    if (explicit_values)
      for (int64_t i = 0; i < args[p]->n; i++) literal_set_s64(args[p], i, explicit_values[p][i]);
    if (explicit_f32_bits && explicit_f32_bits[p] && args[p]->shape.type == HLO_F32)
      memcpy(args[p]->data, explicit_f32_bits[p], (size_t)args[p]->n * sizeof(uint32_t));
  }
  backend_executable *e = NULL;
  kiln_status s = cpu->compile(cpu, m, NULL, &e);
  bool ok = s == NULL;
  CHECK_OK(s);
  if (ok) {
    s = cpu->execute(e, args, n, &r->cpu);
    ok = s == NULL;
    CHECK_OK(s);
    cpu->destroy(e);
  }
  if (ok) {
    s = eval_module(m, args, n, &r->ref);
    ok = s == NULL;
    CHECK_OK(s);
  }
  for (int p = 0; p < n; p++) literal_free(args[p]);
  hlo_module_free(m);
  if (!ok) run_result_free(r);
  return ok;
}

/* Reports the first differing element to make failures readable. */
static bool same_bits(const hlo_literal *a, const hlo_literal *b, const char *what) {
  if (literal_equal(a, b)) return true;
  if (a->tuple == NULL && b->tuple == NULL && a->n == b->n) {
    for (int64_t i = 0; i < a->n; i++)
      if (literal_get_u64(a, i) != literal_get_u64(b, i) || literal_get_f64(a, i) != literal_get_f64(b, i)) {
        if (isnan(literal_get_f64(a, i)) && isnan(literal_get_f64(b, i)) &&
            literal_get_u64(a, i) == literal_get_u64(b, i))
          continue;
        fprintf(stderr, "  %s: element %lld: cpu %.17g (bits %llx), evaluator %.17g (bits %llx)\n", what,
                (long long)i, literal_get_f64(a, i), (unsigned long long)literal_get_u64(a, i),
                literal_get_f64(b, i), (unsigned long long)literal_get_u64(b, i));
        break;
      }
  }
  return false;
}

static void check_exact(const char *text, uint64_t seed, bool with_specials) {
  run_result r;
  if (!run_both(text, seed, with_specials, &r)) return;
  bool same = same_bits(r.cpu, r.ref, text);
  if (!same) fprintf(stderr, "module:\n%s\n", text);
  CHECK(same);
  run_result_free(&r);
}

/* Float results that may be associated differently from the evaluator: every element
 * within rel of the largest reference magnitude of the result (inf and NaN must match). */
static void check_close_scaled(const char *text, uint64_t seed, double rel) {
  run_result r;
  if (!run_both(text, seed, false, &r)) return;
  CHECK(r.cpu->n == r.ref->n);
  double scale = 0;
  for (int64_t i = 0; i < r.ref->n; i++)
    if (isfinite(literal_get_f64(r.ref, i)) && fabs(literal_get_f64(r.ref, i)) > scale) scale = fabs(literal_get_f64(r.ref, i));
  int bad = 0;
  for (int64_t i = 0; i < r.cpu->n && i < r.ref->n; i++) {
    double a = literal_get_f64(r.cpu, i), b = literal_get_f64(r.ref, i);
    if ((isnan(a) && isnan(b)) || a == b) continue;
    if (!(fabs(a - b) <= rel * scale) && bad++ < 3)
      fprintf(stderr, "  element %lld: cpu %.9g evaluator %.9g (scale %g)\n", (long long)i, a, b, scale);
  }
  CHECK(bad == 0);
  run_result_free(&r);
}

static void check_close(const char *text, uint64_t seed, double rel) {
  run_result r;
  if (!run_both(text, seed, false, &r)) return;
  CHECK(r.cpu->n == r.ref->n);
  int bad = 0;
  for (int64_t i = 0; i < r.cpu->n && i < r.ref->n; i++) {
    double a = literal_get_f64(r.cpu, i), b = literal_get_f64(r.ref, i);
    if (isnan(a) && isnan(b)) continue;
    if (a == b) continue;
    if (!(fabs(a - b) <= rel * fabs(b) + 1e-30)) {
      if (bad++ < 3) fprintf(stderr, "  element %lld: cpu %.9g evaluator %.9g\n", (long long)i, a, b);
    }
  }
  CHECK(bad == 0);
  run_result_free(&r);
}

/* An elementwise module over one type: a chain through every binary op family, plus
 * the bitwise ops for integer types. Each line is "name = T[dims] expression". */
static void elementwise_for_type(const char *t, const char *dims, bool logic) {
  bool is_unsigned = t[0] == 'u';
  static const char *common[][2] = {
      {"add", "add(a, b)"},         {"sub", "subtract(a, b)"},  {"mul", "multiply(add, sub)"},
      {"div", "divide(mul, b)"},    {"rem", "remainder(a, b)"}, {"mx", "maximum(div, rem)"},
      {"mn", "minimum(mx, a)"},     {"neg", "negate(mn)"},      {"ab", "abs(neg)"},
      {"sg", "sign(sub)"},          {"s", "select(c, ab, sg)"},
  };
  static const char *bits[][2] = {
      {"x1", "xor(a, s)"}, {"x2", "shift-left(x1, b)"}, {"x3", "shift-right-arithmetic(x2, b)"},
      {"x4", "shift-right-logical(x3, a)"}, {"x5", "and(x4, b)"}, {"x6", "or(x5, a)"}, {"x", "not(x6)"},
  };
  char text[8192];
  int n = snprintf(text, sizeof text, "HloModule ew\n\nENTRY main {\n  a = %s[%s] parameter(0)\n  b = %s[%s] parameter(1)\n",
                   t, dims, t, dims);
  for (int i = 0; i < (int)(sizeof common / sizeof common[0]); i++) {
    if (strcmp(common[i][0], "s") == 0)
      n += snprintf(text + n, sizeof text - (size_t)n, "  c = pred[%s] compare(ab, sg), direction=LT\n", dims);
    const char *expr = common[i][1];
    if (is_unsigned && strcmp(common[i][0], "ab") == 0) expr = "maximum(neg, a)"; /* abs/sign need a sign */
    if (is_unsigned && strcmp(common[i][0], "sg") == 0) expr = "minimum(sub, b)";
    n += snprintf(text + n, sizeof text - (size_t)n, "  %s = %s[%s] %s\n", common[i][0], t, dims, expr);
  }
  if (logic)
    for (int i = 0; i < (int)(sizeof bits / sizeof bits[0]); i++)
      n += snprintf(text + n, sizeof text - (size_t)n, "  %s = %s[%s] %s\n", bits[i][0], t, dims, bits[i][1]);
  snprintf(text + n, sizeof text - (size_t)n, "  ROOT r = %s[%s] add(s, %s)\n}\n", t, dims, logic ? "x" : "a");
  check_exact(text, 11, true);
  check_exact(text, 12, false);
}

static void test_elementwise_exact(void) {
  const char *dims[] = {"1", "7", "1023", "3,5,4"};
  for (int d = 0; d < 4; d++) {
    elementwise_for_type("f32", dims[d], false);
    elementwise_for_type("f64", dims[d], false);
    elementwise_for_type("f16", dims[d], false);
    elementwise_for_type("bf16", dims[d], false);
    elementwise_for_type("s32", dims[d], true);
    elementwise_for_type("s8", dims[d], true);
    elementwise_for_type("u8", dims[d], true);
    elementwise_for_type("u32", dims[d], true);
    elementwise_for_type("s64", dims[d], true);
  }
}

/* Parameters, not constants: the pipeline would fold constants with the evaluator. */
static void test_integer_edge_cases(void) {
  /* Division by zero, INT_MIN / -1, shifts by the width or more, popcnt/clz, power. */
  static const int64_t sa[] = {INT32_MIN, 7, -7, 5, 0, 1, INT32_MIN, -1};
  static const int64_t sb[] = {-1, 0, 2, 32, 40, -3, 0, -1};
  const int64_t *s32_values[] = {sa, sb};
  explicit_values = s32_values;
  check_exact("HloModule i\n\nENTRY main {\n  a = s32[8] parameter(0)\n  b = s32[8] parameter(1)\n"
              "  d = s32[8] divide(a, b)\n  r = s32[8] remainder(a, b)\n"
              "  l = s32[8] shift-left(a, b)\n  sr = s32[8] shift-right-arithmetic(a, b)\n"
              "  sl = s32[8] shift-right-logical(a, b)\n  p = s32[8] power(a, b)\n"
              "  pc = s32[8] popcnt(a)\n  cz = s32[8] count-leading-zeros(b)\n"
              "  ROOT t = (s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], s32[8]) tuple(d, r, l, sr, sl, p, pc, cz)\n}\n",
              1, false);
  static const int64_t ua[] = {255, 7, 0, 128, 3, 2, 1, 0};
  static const int64_t ub[] = {0, 2, 9, 8, 200, 7, 255, 0};
  const int64_t *u8_values[] = {ua, ub};
  explicit_values = u8_values;
  check_exact("HloModule u\n\nENTRY main {\n  a = u8[8] parameter(0)\n  b = u8[8] parameter(1)\n"
              "  d = u8[8] divide(a, b)\n  r = u8[8] remainder(a, b)\n  l = u8[8] shift-left(a, b)\n"
              "  sr = u8[8] shift-right-arithmetic(a, b)\n  p = u8[8] power(a, b)\n"
              "  ROOT t = (u8[8], u8[8], u8[8], u8[8], u8[8]) tuple(d, r, l, sr, p)\n}\n",
              1, false);
  static const int64_t pa[] = {0, 1, 0, 1}, pb[] = {0, 0, 1, 1};
  const int64_t *pred_values[] = {pa, pb};
  explicit_values = pred_values;
  check_exact("HloModule p\n\nENTRY main {\n  a = pred[4] parameter(0)\n  b = pred[4] parameter(1)\n"
              "  x = pred[4] and(a, b)\n  y = pred[4] xor(a, b)\n  z = pred[4] or(a, b)\n"
              "  w = pred[4] minimum(a, b)\n  n = pred[4] not(a)\n  m = pred[4] maximum(a, b)\n"
              "  ROOT t = (pred[4], pred[4], pred[4], pred[4], pred[4], pred[4]) tuple(x, y, z, w, n, m)\n}\n",
              1, false);
  explicit_values = NULL;
}

static void test_convert_exact(void) {
  static const char *types[] = {"pred", "s8", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64"};
  int nt = (int)(sizeof types / sizeof types[0]);
  for (int i = 0; i < nt; i++)
    for (int j = 0; j < nt; j++) {
      char text[512];
      snprintf(text, sizeof text,
               "HloModule c\n\nENTRY main {\n  a = %s[37] parameter(0)\n  ROOT c = %s[37] convert(a)\n}\n", types[i],
               types[j]);
      check_exact(text, 5 + (uint64_t)i, true);
    }
  /* 64-bit integers that need one correct rounding into halves and f32 (values just
   * above 2^53, near the extremes, and halfway cases of f16). Large floats, infinities
   * and NaN into integers are in the specials `fill` mixes in above. */
  static const int64_t big[] = {9007199254740993, -9223372036854775807, 2049, 2051, 65520, -65519, 16777217, 0};
  const int64_t *big_values[] = {big};
  explicit_values = big_values;
  check_exact("HloModule c\n\nENTRY main {\n  a = s64[8] parameter(0)\n"
              "  h = f16[8] convert(a)\n  b = bf16[8] convert(a)\n  f = f32[8] convert(a)\n"
              "  ROOT t = (f16[8], bf16[8], f32[8]) tuple(h, b, f)\n}\n",
              1, false);
  explicit_values = NULL;
}

/* The narrow types' converts compile (the minifloats through the runtime helpers, s4/u4
 * wrapping and saturating inline) and give the evaluator's bits: every pattern of each
 * 8-bit float to each wide type and back, wide values with the specials (overflow,
 * inf, NaN, ties) to every narrow type, and data movement fused with them. */
static void test_narrow_converts_exact(void) {
  static const char *f8[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu"};
  static const char *wide[] = {"pred", "s4",  "u4",  "s2",  "u2",  "s8",      "s32",
                               "u64",  "f16", "bf16", "f32", "f64", "f4e2m1fn"};
  static int64_t pattern[256];
  for (int i = 0; i < 256; i++) pattern[i] = i;
  const int64_t *values[] = {pattern};
  char text[640];
  for (size_t i = 0; i < sizeof f8 / sizeof f8[0]; i++)
    for (size_t j = 0; j < sizeof wide / sizeof wide[0]; j++) {
      snprintf(text, sizeof text,
               "HloModule c\n\nENTRY main {\n  a = u8[256] parameter(0)\n  b = %s[256] bitcast-convert(a)\n"
               "  w = %s[256] convert(b)\n  n = %s[256] convert(w)\n  r = %s[16,16] reshape(n)\n"
               "  t = %s[16,16] transpose(r), dimensions={1,0}\n  ROOT o = (%s[256], %s[16,16]) tuple(w, t)\n}\n",
               f8[i], wide[j], f8[i], f8[i], f8[i], wide[j], f8[i]);
      explicit_values = values;
      check_exact(text, 1, false);
      explicit_values = NULL;
    }
  static const char *narrow[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f8e8m0fnu", "f4e2m1fn", "s4", "u4",
                                 "s2", "u2"};
  static const char *from[] = {"f32", "f64", "f16", "s32", "s64", "u64", "pred"};
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++)
    for (size_t j = 0; j < sizeof from / sizeof from[0]; j++) {
      snprintf(text, sizeof text,
               "HloModule c\n\nENTRY main {\n  a = %s[61] parameter(0)\n  ROOT c = %s[61] convert(a)\n}\n", from[j],
               narrow[i]);
      check_exact(text, 3 + (uint64_t)i, true);
    }
}

static void test_compare_select_clamp(void) {
  static const char *types[] = {"pred", "s8", "u32", "s64", "f16", "bf16", "f32", "f64"};
  static const char *dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (int i = 0; i < 8; i++) {
    for (int d = 0; d < 6; d++) {
      char text[768];
      snprintf(text, sizeof text,
               "HloModule c\n\nENTRY main {\n  a = %s[2,9] parameter(0)\n  b = %s[2,9] parameter(1)\n"
               "  c = pred[2,9] compare(a, b), direction=%s\n  s = %s[2,9] select(c, a, b)\n"
               "  ROOT t = (pred[2,9], %s[2,9]) tuple(c, s)\n}\n",
               types[i], types[i], dirs[d], types[i], types[i]);
      check_exact(text, 3, true);
    }
    char text[512];
    snprintf(text, sizeof text,
             "HloModule cl\n\nENTRY main {\n  lo = %s[] parameter(0)\n  x = %s[33] parameter(1)\n  hi = %s[33] parameter(2)\n"
             "  ROOT c = %s[33] clamp(lo, x, hi)\n}\n",
             types[i], types[i], types[i], types[i]);
    check_exact(text, 4, true);
  }
  check_exact("HloModule tot\n\nENTRY main {\n  a = f32[40] parameter(0)\n  b = f32[40] parameter(1)\n"
              "  ROOT c = pred[40] compare(a, b), direction=LT, type=TOTALORDER\n}\n",
              9, true);
}

static void test_data_movement(void) {
  check_exact("HloModule dm\n\nENTRY main {\n  a = f32[4,6] parameter(0)\n"
              "  t = f32[6,4] transpose(a), dimensions={1,0}\n"
              "  s = f32[3,2] slice(t), slice={[1:6:2], [0:4:2]}\n"
              "  rv = f32[4,6] reverse(a), dimensions={0,1}\n"
              "  r = f32[2,3] slice(rv), slice={[0:2], [1:4]}\n"
              "  sl = f32[2,3] slice(a), slice={[1:3], [2:5]}\n"
              "  c = f32[4,3] concatenate(r, sl), dimensions={0}\n"
              "  z = f32[] constant(-1)\n"
              "  p = f32[7,4] pad(c, z), padding=1_-1_1x0_1\n"
              "  b = f32[3,7,4] broadcast(p), dimensions={1,2}\n"
              "  re = f32[12,7] reshape(b)\n"
              "  i = f32[12,7] iota(), iota_dimension=1\n"
              "  m = f32[12,7] multiply(re, i)\n"
              "  ROOT out = (f32[3,2], f32[12,7]) tuple(s, m)\n}\n",
              21, true);
  /* Out-of-range dynamic starts clamp as in XLA. */
  check_exact("HloModule ds\n\nENTRY main {\n  a = s32[5,7] parameter(0)\n  u = s32[2,3] parameter(1)\n"
              "  i = s32[] constant(4)\n  j = s32[] constant(-3)\n  k = u32[] constant(4000000000)\n"
              "  k2 = u32[] constant(1)\n"
              "  d = s32[2,3] dynamic-slice(a, i, j), dynamic_slice_sizes={2,3}\n"
              "  e = s32[2,3] dynamic-slice(a, k2, k), dynamic_slice_sizes={2,3}\n"
              "  f = s32[5,7] dynamic-update-slice(a, u, k, k2)\n"
              "  g = s32[5,7] dynamic-update-slice(a, u, j, j)\n"
              "  ROOT out = (s32[2,3], s32[2,3], s32[5,7], s32[5,7]) tuple(d, e, f, g)\n}\n",
              2, false);
}

/* A kernel with a scalar result that is not elementwise work (a slice, a reversal, a
 * transpose, a dynamic slice picking one element, then a reshape to rank 0): the
 * kernel once addressed such a result with a "flat" index, which a reshape passes
 * through unchanged, so the slice read element 0 instead of its start (TF's
 * StridedSlice of a shape vector, in MoveNet-MultiPose). */
static void test_scalar_result_of_data_movement(void) {
  check_exact("HloModule sc\n\nENTRY main {\n  a = s32[4] parameter(0)\n"
              "  s = s32[1] slice(a), slice={[1:2]}\n"
              "  ROOT r = s32[] reshape(s)\n}\n",
              5, false);
  check_exact("HloModule sc2\n\nENTRY main {\n  a = f32[3,4] parameter(0)\n"
              "  t = f32[4,3] transpose(a), dimensions={1,0}\n"
              "  rv = f32[4,3] reverse(t), dimensions={0}\n"
              "  s = f32[1,1] slice(rv), slice={[1:2], [2:3]}\n"
              "  r = f32[] reshape(s)\n"
              "  i = s32[] constant(2)\n"
              "  d = f32[1,1] dynamic-slice(a, i, i), dynamic_slice_sizes={1,1}\n"
              "  dr = f32[] reshape(d)\n"
              "  ROOT out = (f32[], f32[]) tuple(r, dr)\n}\n",
              6, false);
}

static void test_concatenate_many(void) {
  /* 70 operands (more than one might guess a phi needs) put back in reverse order. */
  static char text[16384];
  int n = snprintf(text, sizeof text, "HloModule cc\n\nENTRY main {\n  a = s32[70,3] parameter(0)\n");
  for (int i = 0; i < 70; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "  s%d = s32[1,3] slice(a), slice={[%d:%d], [0:3]}\n", i, i, i + 1);
  n += snprintf(text + n, sizeof text - (size_t)n, "  ROOT c = s32[70,3] concatenate(");
  for (int i = 69; i >= 0; i--) n += snprintf(text + n, sizeof text - (size_t)n, "s%d%s", i, i ? ", " : "");
  snprintf(text + n, sizeof text - (size_t)n, "), dimensions={0}\n}\n");
  check_exact(text, 141, false);
}

static void test_gather(void) {
  /* Embedding lookup, GatherNd-style point gathers and windowed gathers; the specials
   * mixed into the indices (negative, huge) exercise the clamping. */
  check_exact("HloModule g\n\nENTRY main {\n  a = f32[10,4] parameter(0)\n  i = s32[6] parameter(1)\n"
              "  ROOT g = f32[6,4] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
              "index_vector_dim=1, slice_sizes={1,4}\n}\n",
              121, true);
  check_exact("HloModule g\n\nENTRY main {\n  a = bf16[4,5,6] parameter(0)\n  i = s64[3,2] parameter(1)\n"
              "  ROOT g = bf16[3,6] gather(a, i), offset_dims={1}, collapsed_slice_dims={0,1}, start_index_map={0,1}, "
              "index_vector_dim=1, slice_sizes={1,1,6}\n}\n",
              122, true);
  check_exact("HloModule g\n\nENTRY main {\n  a = s32[8,9] parameter(0)\n  i = u8[1,2] parameter(1)\n"
              "  ROOT g = s32[2,3,4] gather(a, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={1}, "
              "index_vector_dim=0, slice_sizes={3,4}\n}\n",
              123, true);
}

static const char *reducers =
    "add_f32 {\n  ax = f32[] parameter(0)\n  ay = f32[] parameter(1)\n  ROOT as = f32[] add(ax, ay)\n}\n\n"
    "max_f32 {\n  mx = f32[] parameter(0)\n  my = f32[] parameter(1)\n  ROOT ms = f32[] maximum(mx, my)\n}\n\n"
    "add_s32 {\n  ix = s32[] parameter(0)\n  iy = s32[] parameter(1)\n  ROOT is = s32[] add(ix, iy)\n}\n\n"
    "mix_bf16 {\n  bx = bf16[] parameter(0)\n  by = bf16[] parameter(1)\n  bm = bf16[] multiply(by, by)\n"
    "  ROOT bs = bf16[] add(bx, bm)\n}\n\n";

static void test_reduce(void) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule red\n\n%sENTRY main {\n  a = f32[6,5,7] parameter(0)\n  z = f32[] constant(0)\n"
           "  ninf = f32[] constant(-inf)\n"
           "  r0 = f32[5] reduce(a, z), dimensions={0,2}, to_apply=add_f32\n"
           "  r1 = f32[6,7] reduce(a, ninf), dimensions={1}, to_apply=max_f32\n"
           "  e = f32[6,5,7] multiply(a, a)\n"
           "  r2 = f32[] reduce(e, z), dimensions={0,1,2}, to_apply=add_f32\n"
           "  ROOT t = (f32[5], f32[6,7], f32[]) tuple(r0, r1, r2)\n}\n",
           reducers);
  check_exact(text, 31, false);
  check_exact(text, 32, true);
  snprintf(text, sizeof text,
           "HloModule red\n\n%sENTRY main {\n  a = s32[9,1023] parameter(0)\n  z = s32[] constant(0)\n"
           "  ROOT r = s32[9] reduce(a, z), dimensions={1}, to_apply=add_s32\n}\n",
           reducers);
  check_exact(text, 33, true);
  snprintf(text, sizeof text,
           "HloModule red\n\n%sENTRY main {\n  a = bf16[4,33] parameter(0)\n  z = bf16[] constant(0.5)\n"
           "  ROOT r = bf16[33] reduce(a, z), dimensions={0}, to_apply=mix_bf16\n}\n",
           reducers);
  check_exact(text, 34, false);
}

/* f16 arithmetic inside one kernel computes in f32 and rounds each result to f16 in one
 * step (round_to_f16_f32 in cpu_elemental.c), and reads and writes f16 through inline
 * conversions; its bits must be the evaluator's: every pairing of subnormals (the
 * smallest, one with a tie below it, the largest), the smallest normal, values around
 * 1 and 1/3, the largest finite value, infinities, and quiet and signalling NaNs with
 * payloads of both signs, through a product (subnormal and overflowing results), a sum
 * and a difference, read back as bits. */
static void test_f16_arithmetic_rounds_as_the_evaluator(void) {
  static const int64_t halves[] = {0x0001, 0x0003, 0x03ff, 0x0400, 0x1400, 0x1401, 0x3555, 0x3c00,
                                   0x3c01, (int16_t)0xbc03, 0x7bff, 0x7c00, (int16_t)0xfc00, 0x7e00,
                                   0x7d01, (int16_t)0xfe05};
  static int64_t a[256], b[256];
  for (int i = 0; i < 256; i++) {
    a[i] = halves[i / 16];
    b[i] = halves[i % 16];
  }
  const int64_t *values[] = {a, b};
  explicit_values = values;
  check_exact("HloModule h\n\nENTRY main {\n  pa = s16[256] parameter(0)\n  pb = s16[256] parameter(1)\n"
              "  x = f16[256] bitcast-convert(pa)\n  y = f16[256] bitcast-convert(pb)\n"
              "  m = f16[256] multiply(x, y)\n  s = f16[256] add(m, x)\n  d = f16[256] subtract(s, y)\n"
              "  q = f16[256] divide(m, y)\n  w = f32[256] convert(d)\n"
              "  rm = s16[256] bitcast-convert(m)\n  rd = s16[256] bitcast-convert(d)\n"
              "  rq = s16[256] bitcast-convert(q)\n  rw = s32[256] bitcast-convert(w)\n"
              "  ROOT t = (s16[256], s16[256], s16[256], s32[256]) tuple(rm, rd, rq, rw)\n}\n",
              1, false);
  explicit_values = NULL;
}

/* A fused kernel with enough NaN payload work runs each unit first without the payload
 * rules and exactly again only where an output came out NaN (emit_unit in
 * cpu_codegen.c); its f32 inputs' NaNs are read there as the quiet NaN of no payload, so
 * that its bf16 roundings need no NaN case. Every NaN input must still come out as the
 * evaluator's NaN: signalling NaNs of both signs with low payloads (a rounding without
 * its NaN case makes them infinities), all-ones payloads (the rounding's carry runs
 * into the sign), a NaN whose low half alone is set, besides infinities, ties and
 * ordinary values, through a convert to bf16, a product, a sum and a difference. */
static void test_two_pass_kernel_keeps_every_nan(void) {
  static const uint32_t specials_bits[] = {0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu, 0x7fff8000u,
                                           0x7f808000u, 0x7fc00000u, 0xffc01234u, 0x7f800000u, 0xff800000u,
                                           0x3f808000u, 0x3f818000u, 0x3f800000u, 0xc0490fdbu, 0x00008000u, 0u};
  /* one special per unit of 64 elements, so that no other NaN sends the unit to the
   * exact pass; y = 1 keeps an infinity an infinity */
  static uint32_t x[1024];
  static int64_t ones[1024];
  for (int i = 0; i < 1024; i++) {
    x[i] = i % 64 == 5 ? specials_bits[i / 64] : 0x3fc00000u;
    ones[i] = 1;
  }
  const uint32_t *bits[] = {x, NULL};
  const int64_t *values[] = {ones, ones};
  explicit_values = values;
  explicit_f32_bits = bits;
  check_exact("HloModule two\n\nENTRY main {\n  x = f32[1024] parameter(0)\n  y = bf16[1024] parameter(1)\n"
              "  c = bf16[1024] convert(x)\n  m = bf16[1024] multiply(c, y)\n  a = bf16[1024] add(m, c)\n"
              "  s = bf16[1024] subtract(a, y)\n  ROOT w = f32[1024] convert(s)\n}\n",
              7, false);
  explicit_f32_bits = NULL;
  explicit_values = NULL;
}

/* f32 -> bf16 -> f32 inside one kernel is emitted as one rounding step
 * (cpu_elemental.c); its bits must be the two converts': signalling and quiet NaNs of
 * both signs, infinities, ties to even in both directions, the largest finite value
 * (rounds to infinity), a subnormal tie, and values just off a tie. The bits are read
 * through bitcast-converts so that NaN payloads are compared too. */
static void test_bf16_round_trip_in_one_step_matches_two_converts(void) {
  static const int64_t bits[] = {(int32_t)0x7f800001u, (int32_t)0xff800001u, (int32_t)0x7fc00000u,
                                 (int32_t)0xffbfffffu, (int32_t)0x7f800000u, (int32_t)0xff800000u,
                                 (int32_t)0x3f808000u, (int32_t)0x3f818000u, (int32_t)0x7f7fffffu,
                                 (int32_t)0x80000000u, (int32_t)0x00008000u, (int32_t)0x00018000u,
                                 (int32_t)0x3f808001u, (int32_t)0xbf817fffu, 0,          1};
  const int64_t *values[] = {bits};
  explicit_values = values;
  check_exact("HloModule rt\n\nENTRY main {\n  p = s32[16] parameter(0)\n  f = f32[16] bitcast-convert(p)\n"
              "  h = bf16[16] convert(f)\n  w = f32[16] convert(h)\n  ROOT r = s32[16] bitcast-convert(w)\n}\n",
              1, false);
  /* bf16 NaNs read from memory through a select: the convert must still quiet them */
  static const int64_t halves[] = {0x7f81, (int16_t)0xff81, 0x7fc0, 0x7f80, 0x3f80, (int16_t)0x8000, 1, 0x7f7f,
                                   0x7fbf, (int16_t)0xffbf, 0, 2, 3, 4, 5, 6};
  static const int64_t picks[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  static const int64_t others[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f81, (int16_t)0xff81, 0x7fc1, 1, 2, 3};
  const int64_t *half_values[] = {halves, picks, others};
  explicit_values = half_values;
  check_exact("HloModule rts\n\nENTRY main {\n  q = s16[16] parameter(0)\n  c = pred[16] parameter(1)\n"
              "  q2 = s16[16] parameter(2)\n  h = bf16[16] bitcast-convert(q)\n  h2 = bf16[16] bitcast-convert(q2)\n"
              "  s = bf16[16] select(c, h, h2)\n  w = f32[16] convert(s)\n  ROOT r = s32[16] bitcast-convert(w)\n}\n",
              1, false);
  explicit_values = NULL;
}

/* + - * / with NaN operands carry the first NaN operand, quieted (eval_nan_pick), and
 * the cpu kernels test only the first operand, leaving a NaN second operand to the
 * hardware (nan_pick in cpu_elemental.c): every pairing of a number, an infinity, quiet
 * and signalling NaNs with payloads and both signs, in f32 and f64, bit for bit; and
 * with constant operands LLVM rewrites (-0.0 - x, x * -1.0, x / -1.0), where both
 * operands are tested. (x + -0.0 is left out: the algebraic simplifier drops it, and
 * it documents that it keeps NaN payloads but not signalling NaNs' quieting.) */
static void test_nan_operands_give_the_first_nan_quieted(void) {
  static const uint64_t a32[] = {0x3fc00000u, 0x7f800000u, 0x7fc01234u, 0x7f800005u, 0xff812345u};
  static const uint64_t b32[] = {0xc0000000u, 0x7f800000u, 0x7fc0beefu, 0x7fa00001u, 0xffc00007u};
  static const uint64_t a64[] = {0x3ff8000000000000ull, 0x7ff0000000000000ull, 0x7ff8000000001234ull,
                                 0x7ff0000000000005ull, 0xfff0000000012345ull};
  static const uint64_t b64[] = {0xc000000000000000ull, 0x7ff0000000000000ull, 0x7ff800000000beefull,
                                 0x7ff4000000000001ull, 0xfff8000000000007ull};
  static int64_t va[25], vb[25];
  const int64_t *values[] = {va, vb};
  for (int wide = 0; wide < 2; wide++) {
    for (int i = 0; i < 25; i++) {
      va[i] = (int64_t)(wide ? a64[i / 5] : (uint64_t)(int32_t)a32[i / 5]);
      vb[i] = (int64_t)(wide ? b64[i % 5] : (uint64_t)(int32_t)b32[i % 5]);
    }
    explicit_values = values;
    char text[2048];
    const char *f = wide ? "f64" : "f32", *si = wide ? "s64" : "s32";
    snprintf(text, sizeof text,
             "HloModule nan_%s\n\nENTRY main {\n  pa = %s[25] parameter(0)\n  pb = %s[25] parameter(1)\n"
             "  a = %s[25] bitcast-convert(pa)\n  b = %s[25] bitcast-convert(pb)\n"
             "  nz = %s[] constant(-0)\n  nzb = %s[25] broadcast(nz), dimensions={}\n"
             "  m1 = %s[] constant(-1)\n  m1b = %s[25] broadcast(m1), dimensions={}\n"
             "  s = %s[25] add(a, b)\n  d = %s[25] subtract(a, b)\n  p = %s[25] multiply(a, b)\n"
             "  q = %s[25] divide(a, b)\n  n = %s[25] subtract(nzb, b)\n  m = %s[25] multiply(a, m1b)\n"
             "  v = %s[25] divide(b, m1b)\n"
             "  rs = %s[25] bitcast-convert(s)\n  rd = %s[25] bitcast-convert(d)\n  rp = %s[25] bitcast-convert(p)\n"
             "  rq = %s[25] bitcast-convert(q)\n  rn = %s[25] bitcast-convert(n)\n  rm = %s[25] bitcast-convert(m)\n"
             "  rv = %s[25] bitcast-convert(v)\n"
             "  ROOT t = (%s[25], %s[25], %s[25], %s[25], %s[25], %s[25], %s[25]) tuple(rs, rd, rp, rq, rn, rm, rv)\n}\n",
             f, si, si, f, f, f, f, f, f, f, f, f, f, f, f, f, si, si, si, si, si, si, si, si, si, si, si, si, si, si);
    check_exact(text, 1, false);
    explicit_values = NULL;
  }
}

static int64_t f32_bits(float f) {
  int32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* check_exact on an entry computation (with the reducers) whose one parameter takes
 * `values`. */
static void check_exact_entry(const char *entry, const int64_t *values) {
  const int64_t *per_param[] = {values};
  explicit_values = per_param;
  char text[2048];
  snprintf(text, sizeof text, "HloModule rows\n\n%sENTRY main {\n%s}\n", reducers, entry);
  check_exact(text, 1, false);
  explicit_values = NULL;
}

/* A row sum of values rounded through bf16 is folded first without the NaN payload
 * rules (its reads' NaNs canonical) and again, exactly, when its result is NaN
 * (reduce_may_skip_payloads in cpu_elemental.c): rows of 130 (64 lanes and a tail) with
 * a signalling NaN, a quiet NaN before a signalling one in a later lane, +inf meeting
 * -inf, and no NaN, all bit for bit against the evaluator. (Small integers keep the
 * sums exact in any order and bf16 exact; the NaNs sit where the lanes' in-order tree
 * and the evaluator's sequence agree on which comes first.) */
static void test_row_sum_over_nans_gives_the_evaluator_bits(void) {
  static int64_t v[4 * 130];
  for (int i = 0; i < 4 * 130; i++) v[i] = f32_bits((float)(i % 7));
  v[0 * 130 + 5] = (int32_t)0x7fa00001u;
  v[1 * 130 + 3] = (int32_t)0xffc0beefu;
  v[1 * 130 + 70] = (int32_t)0x7f800005u;
  v[2 * 130 + 1] = f32_bits(INFINITY);
  v[2 * 130 + 2] = f32_bits(-INFINITY);
  check_exact_entry("  p = s32[4,130] parameter(0)\n  f = f32[4,130] bitcast-convert(p)\n"
                    "  h = bf16[4,130] convert(f)\n  w = f32[4,130] convert(h)\n"
                    "  z = f32[] constant(0)\n  r = f32[4] reduce(w, z), dimensions={1}, to_apply=add_f32\n"
                    "  ROOT b = s32[4] bitcast-convert(r)\n",
                    v);
}

/* The first pass is not taken when the kernel reads the bits of a float it computed:
 * a bf16 signalling NaN widened to f32 (which quiets it) and bitcast to an integer,
 * summed as floats, must count the quiet bit (0x7fc10000, not 0x7f810000). */
static void test_row_sum_of_computed_float_bits_keeps_the_payload_rules(void) {
  static int64_t v[2 * 64];
  v[0 * 64 + 9] = 0x7f81;
  v[1 * 64 + 40] = 0x7fc1;
  check_exact_entry("  q = s16[2,64] parameter(0)\n  h = bf16[2,64] bitcast-convert(q)\n"
                    "  w = f32[2,64] convert(h)\n  i = s32[2,64] bitcast-convert(w)\n  f = f32[2,64] convert(i)\n"
                    "  z = f32[] constant(0)\n  ROOT r = f32[2] reduce(f, z), dimensions={1}, to_apply=add_f32\n",
                    v);
}

/* Reductions over the leading dimensions of a flat input read each chunk of outputs as
 * one contiguous row (cpu_codegen's reduces_leading_dims_flat): one and two leading
 * dims, outputs spanning several column chunks, a short last dimension, a fused
 * elementwise producer, and for contrast a broadcast producer (not flat) and a middle
 * dimension, which keep the per-row columns. Same summation order as the evaluator,
 * so exact. */
static void test_leading_dims_reduce_reads_contiguous_rows(void) {
  static const char *cases[] = {
      "  ROOT r = f32[40,3] reduce(a, z), dimensions={0}, to_apply=add_f32\n",
      "  ROOT r = f32[40,3] reduce(p2, z), dimensions={0,1}, to_apply=add_f32\n",
      "  m = f32[16,40,3] multiply(a, a)\n  s = f32[16,40,3] subtract(m, a)\n"
      "  ROOT r = f32[40,3] reduce(s, z), dimensions={0}, to_apply=add_f32\n",
      "  bb = f32[16,40,3] broadcast(b), dimensions={2}\n  m = f32[16,40,3] multiply(a, bb)\n"
      "  ROOT r = f32[40,3] reduce(m, z), dimensions={0}, to_apply=add_f32\n",
      "  ROOT r = f32[16,3] reduce(a, z), dimensions={1}, to_apply=add_f32\n",
      "  ROOT r = f32[700,3] reduce(w, z), dimensions={0}, to_apply=add_f32\n",
  };
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    char text[4096];
    snprintf(text, sizeof text,
             "HloModule lead\n\n%sENTRY main {\n  a = f32[16,40,3] parameter(0)\n  b = f32[3] parameter(1)\n"
             "  p2 = f32[4,4,40,3] parameter(2)\n  w = f32[5,700,3] parameter(3)\n  z = f32[] constant(0)\n%s}\n",
             reducers, cases[k]);
    check_exact(text, 90 + k, false);
    check_exact(text, 90 + k, true);
  }
}

static void test_variadic_reduce(void) {
  /* ArgMax as TF/JAX lower it: a (value, index) reduce with a tie-breaking comparator.
   * Results as a GTE, as the root tuple itself, and inside the root tuple. */
  static const char *argmax =
      "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
      "  bi = s32[] parameter(3)\n  gt = pred[] compare(av, bv), direction=GT\n"
      "  eq = pred[] compare(av, bv), direction=EQ\n  lt = pred[] compare(ai, bi), direction=LT\n"
      "  tie = pred[] and(eq, lt)\n  keep = pred[] or(gt, tie)\n  nan = pred[] compare(av, av), direction=NE\n"
      "  k2 = pred[] or(keep, nan)\n  v = f32[] select(k2, av, bv)\n  i = s32[] select(k2, ai, bi)\n"
      "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n\n";
  static const char *roots[] = {
      "  ROOT idx = s32[6] get-tuple-element(r), index=1\n",
      "  ROOT r2 = (f32[6], s32[6]) reduce(a, io, ninf, z), dimensions={1}, to_apply=argmax\n",
      ("  v0 = f32[6] get-tuple-element(r), index=0\n  i0 = s32[6] get-tuple-element(r), index=1\n"
       "  ROOT out = (s32[6], f32[6]) tuple(i0, v0)\n"),
  };
  for (int i = 0; i < 3; i++) {
    char text[4096];
    snprintf(text, sizeof text,
             "HloModule am\n\n%sENTRY main {\n  a = f32[6,37] parameter(0)\n  io = s32[6,37] iota(), iota_dimension=1\n"
             "  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
             "  r = (f32[6], s32[6]) reduce(a, io, ninf, z), dimensions={1}, to_apply=argmax\n%s}\n",
             argmax, roots[i]);
    check_exact(text, 131 + (uint64_t)i, true);
  }
  /* Rows long enough for 64 lanes, combined by their in-order tree. Without NaNs: with
   * several NaNs in a row, which one this reducer keeps depends on the fold order (it
   * keeps its first operand when both are NaN), which XLA leaves unspecified and the
   * lanes change. */
  for (int i = 0; i < 2; i++) {
    char text[4096];
    snprintf(text, sizeof text,
             "HloModule am\n\n%sENTRY main {\n  a = f32[6,%d] parameter(0)\n  io = s32[6,%d] iota(), iota_dimension=1\n"
             "  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
             "  r = (f32[6], s32[6]) reduce(a, io, ninf, z), dimensions={1}, to_apply=argmax\n%s}\n",
             argmax, i ? 300 : 128, i ? 300 : 128, roots[0]);
    check_exact(text, 134 + (uint64_t)i, false);
  }
}

static void test_reduce_window(void) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule rw\n\n%sENTRY main {\n  a = f32[2,9,11,3] parameter(0)\n  ninf = f32[] constant(-inf)\n"
           "  z = f32[] constant(0)\n"
           "  mp = f32[2,5,6,3] reduce-window(a, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, "
           "to_apply=max_f32\n"
           "  ap = f32[2,4,4,3] reduce-window(a, z), window={size=1x2x3x1 stride=1x2x2x1 pad=0_0x0_0x0_0x0_0 "
           "rhs_dilate=1x1x2x1}, to_apply=add_f32\n"
           "  bd = f32[2,17,11,3] reduce-window(a, z), window={size=1x2x1x1 lhs_dilate=1x2x1x1 pad=0_0x1_0x0_0x0_0}, "
           "to_apply=add_f32\n"
           "  ROOT t = (f32[2,5,6,3], f32[2,4,4,3], f32[2,17,11,3]) tuple(mp, ap, bd)\n}\n",
           reducers);
  check_exact(text, 41, true);
}

/* Excess precision (backend_compile_options.allow_excess_precision, XLA's default): a
 * fused bf16 chain fed by a convert from f32 computes in f32 and rounds only what leaves
 * the kernel. The expected values are computed here in f32 (the chain unrounded, or a
 * bf16 root rounded once); with the option off, every op rounds as the evaluator does. */
static void check_bf16_chain(bool bf16_root) {
  char text[512];
  snprintf(text, sizeof text,
           "HloModule bf16_chain\n\nENTRY main {\n  p = f32[64] parameter(0)\n  c = bf16[64] convert(p)\n"
           "  m = bf16[64] multiply(c, c)\n  %sa = bf16[64] add(m, c)\n%s}\n",
           bf16_root ? "ROOT " : "", bf16_root ? "" : "  ROOT f = f32[64] convert(a)\n");
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const hlo_shape s = {.type = HLO_F32, .rank = 1, .dims = {64}};
  hlo_literal *arg = NULL, *ref = NULL;
  CHECK_OK(literal_create(&s, &arg));
  for (int i = 0; i < 64; i++) literal_set_f64(arg, i, 1.0 + i / 997.0);
  CHECK_OK(eval_module(m, &arg, 1, &ref));
  const backend *cpu = backend_find("cpu");
  for (int allow = 0; allow < 2 && ref; allow++) {
    backend_compile_options o = backend_compile_options_default();
    o.allow_excess_precision = allow;
    backend_executable *e = NULL;
    hlo_literal *out = NULL;
    CHECK_OK(cpu->compile(cpu, m, &o, &e));
    if (e) CHECK_OK(cpu->execute(e, &arg, 1, &out));
    int differs = 0;
    for (int i = 0; out && i < 64; i++) {
      double got = literal_get_f64(out, i), exact = literal_get_f64(ref, i);
      if (allow) {
        float x = (float)literal_get_f64(arg, i), chain = x * x + x;
        CHECK(got == (bf16_root ? bf16_to_f32(f32_to_bf16(chain)) : chain));
        differs += got != exact;
      } else {
        CHECK(got == exact);
      }
    }
    if (allow) CHECK(differs > 0); /* these inputs make the intermediate rounding visible */
    literal_free(out);
    if (e) cpu->destroy(e);
  }
  literal_free(ref);
  literal_free(arg);
  hlo_module_free(m);
}

static void test_bf16_chain_keeps_excess_precision_only_when_allowed(void) {
  check_bf16_chain(false);
  check_bf16_chain(true);
}

/* Flat kernels count their work in blocks of the largest power of two (8 to 64) that
 * divides the element count (cpu_codegen_add_kernel): counts that are a multiple of 8
 * only, of 64, and one large enough for the thread split, every element checked. */
static void test_flat_kernels_in_blocks_cover_every_element(void) {
  const char *dims[] = {"24", "72", "40,16", "33,1024"};
  for (int d = 0; d < 4; d++) {
    elementwise_for_type("f32", dims[d], false);
    elementwise_for_type("bf16", dims[d], false);
    elementwise_for_type("s8", dims[d], true);
    elementwise_for_type("f64", dims[d], false);
  }
}

static void test_fused_chain(void) {
  /* Goes through the cpu pipeline's fusion: a kLoop fusion with broadcasts and a kInput
   * reduce fusion. The loop part is exact; the row sums fold in lanes. */
  static const char *chain =
      "HloModule fz\n\n%sENTRY main {\n  a = f32[64,130] parameter(0)\n  b = f32[130] parameter(1)\n"
      "  bb = f32[64,130] broadcast(b), dimensions={1}\n  c = f32[] constant(1.5)\n"
      "  cb = f32[64,130] broadcast(c), dimensions={}\n"
      "  x = f32[64,130] multiply(a, bb)\n  y = f32[64,130] subtract(x, cb)\n"
      "  mm = f32[64,130] maximum(y, a)\n  d = f32[64,130] divide(mm, bb)\n"
      "  h = f16[64,130] convert(d)\n  hf = f32[64,130] convert(h)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[64] reduce(hf, z), dimensions={1}, to_apply=add_f32\n"
      "  ROOT t = %s\n}\n";
  char text[4096];
  snprintf(text, sizeof text, chain, reducers, "f32[64,130] add(hf, hf)");
  check_exact(text, 51, false);
  check_exact(text, 52, true);
  snprintf(text, sizeof text, chain, reducers, "f32[64] add(s, s)");
  check_close_scaled(text, 53, 1e-5);
}

/* A ResNet bottleneck's tail through the whole backend: the block input x0 is read by
 * the first convolution and, last, as the residual of the second one's epilogue, so
 * buffer assignment computes that epilogue in x0's block and oneDNN adds x0 with its
 * sum post-op. Products in f32 against the evaluator's doubles: scaled-close. */
static void test_residual_block_in_place(void) {
  check_close_scaled("HloModule rb\n\nENTRY main {\n  x = f32[2,6,6,16] parameter(0)\n"
                     "  w0 = f32[1,1,16,16] parameter(1)\n  w1 = f32[3,3,16,16] parameter(2)\n"
                     "  w2 = f32[1,1,16,16] parameter(3)\n  b = f32[16] parameter(4)\n"
                     "  z = f32[] constant(0)\n  zb = f32[2,6,6,16] broadcast(z), dimensions={}\n"
                     "  bb = f32[2,6,6,16] broadcast(b), dimensions={3}\n"
                     "  c0 = f32[2,6,6,16] convolution(x, w0), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
                     "  x0 = f32[2,6,6,16] maximum(c0, zb)\n"
                     "  c1 = f32[2,6,6,16] convolution(x0, w1), window={size=3x3 pad=1_1x1_1}, "
                     "dim_labels=b01f_01io->b01f\n"
                     "  h = f32[2,6,6,16] maximum(c1, zb)\n"
                     "  c2 = f32[2,6,6,16] convolution(h, w2), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
                     "  a = f32[2,6,6,16] add(c2, bb)\n  r = f32[2,6,6,16] add(a, x0)\n"
                     "  ROOT y = f32[2,6,6,16] maximum(r, zb)\n}\n",
                     191, 1e-5);
}

/* Attention's softmax over [heads, q, k] scores through the whole backend: fusion
 * makes it one kCustom fusion, run by oneDNN's softmax; scaled-close to the evaluator
 * (oneDNN's exponentials and row sums round differently). */
static void test_softmax_through_backend(void) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule sm\n\n%sENTRY main {\n  x = f32[4,9,33] parameter(0)\n"
           "  ninf = f32[] constant(-inf)\n  zero = f32[] constant(0)\n"
           "  m = f32[4,9] reduce(x, ninf), dimensions={2}, to_apply=max_f32\n"
           "  mb = f32[4,9,33] broadcast(m), dimensions={0,1}\n  sub = f32[4,9,33] subtract(x, mb)\n"
           "  e = f32[4,9,33] exponential(sub)\n"
           "  s = f32[4,9] reduce(e, zero), dimensions={2}, to_apply=add_f32\n"
           "  sb = f32[4,9,33] broadcast(s), dimensions={0,1}\n  ROOT y = f32[4,9,33] divide(e, sb)\n}\n",
           reducers);
  check_close_scaled(text, 193, 1e-5);
}

/* Reductions the kernels restructure: over the minor dimension in lanes (lengths below,
 * at, and past whole blocks of 16 and of 64, with a non-identity init value that must be counted
 * once), and column reductions that keep the minor dimension (a global average pool of
 * a fused swish in NHWC, a reduction over the major dimension). Integer and max results
 * bitwise, float sums scaled-close. */
static void test_restructured_reductions(void) {
  char text[4096];
  static const int64_t lengths[] = {31, 32, 48, 127, 128, 1000};
  for (int i = 0; i < 6; i++) {
    long long n = (long long)lengths[i];
    snprintf(text, sizeof text,
             "HloModule lanes\n\n%sENTRY main {\n  a = s32[7,%lld] parameter(0)\n  f = f32[7,%lld] parameter(1)\n"
             "  z = s32[] constant(5)\n  ninf = f32[] constant(-inf)\n"
             "  si = s32[7] reduce(a, z), dimensions={1}, to_apply=add_s32\n"
             "  fm = f32[7] reduce(f, ninf), dimensions={1}, to_apply=max_f32\n"
             "  ROOT t = (s32[7], f32[7]) tuple(si, fm)\n}\n",
             reducers, n, n);
    check_exact(text, 150 + (uint64_t)i, false); /* with NaNs of two payloads, which one wins depends on order */
    snprintf(text, sizeof text,
             "HloModule lanes\n\n%sENTRY main {\n  f = f32[7,%lld] parameter(0)\n  one = f32[] constant(1)\n"
             "  ROOT s = f32[7] reduce(f, one), dimensions={1}, to_apply=add_f32\n}\n",
             reducers, n);
    check_close_scaled(text, 160 + (uint64_t)i, 1e-5);
  }
  snprintf(text, sizeof text,
           "HloModule gap\n\n%sENTRY main {\n  x = f32[2,7,7,100] parameter(0)\n  z = f32[] constant(0)\n"
           "  ninf = f32[] constant(-inf)\n  l = f32[2,7,7,100] logistic(x)\n  sw = f32[2,7,7,100] multiply(x, l)\n"
           "  sum = f32[2,100] reduce(sw, z), dimensions={1,2}, to_apply=add_f32\n"
           "  xm = f32[2,100] reduce(x, ninf), dimensions={1,2}, to_apply=max_f32\n"
           "  ROOT t = (f32[2,100], f32[2,100]) tuple(sum, xm)\n}\n",
           reducers);
  check_close(text, 170, 1e-6); /* sequential order: only logistic's ulps differ */
  snprintf(text, sizeof text,
           "HloModule col\n\n%sENTRY main {\n  a = s32[37,3,70] parameter(0)\n  z = s32[] constant(0)\n"
           "  ROOT r = s32[3,70] reduce(a, z), dimensions={0}, to_apply=add_s32\n}\n",
           reducers);
  check_exact(text, 171, true);
  /* Rows wider than a column chunk (a whole chunk and a partial one), and a column sum
   * with few outputs that the splitter divides, its bf16 round trip fused in. */
  snprintf(text, sizeof text,
           "HloModule col\n\n%sENTRY main {\n  a = s32[37,3,1100] parameter(0)\n  z = s32[] constant(0)\n"
           "  ROOT r = s32[3,1100] reduce(a, z), dimensions={0}, to_apply=add_s32\n}\n",
           reducers);
  check_exact(text, 172, true);
  snprintf(text, sizeof text,
           "HloModule col\n\n%sENTRY main {\n  x = f32[1,2048,1100] parameter(0)\n  z = f32[] constant(0)\n"
           "  h = bf16[1,2048,1100] convert(x)\n  w = f32[1,2048,1100] convert(h)\n"
           "  ROOT r = f32[1,1100] reduce(w, z), dimensions={1}, to_apply=add_f32\n}\n",
           reducers);
  check_close_scaled(text, 173, 1e-5);
}

/* Reshapes whose dims split into groups (size-1 dims inserted or dropped, dims split or
 * merged) read the right elements, alone and under a transpose. */
static void test_grouped_reshapes(void) {
  check_exact("HloModule rs\n\nENTRY main {\n  a = f32[6,1,40] parameter(0)\n"
              "  r = f32[6,5,8] reshape(a)\n  t = f32[5,6,8] transpose(r), dimensions={1,0,2}\n"
              "  b = f32[1,6,1,40] reshape(a)\n  c = f32[240] reshape(a)\n  d = f32[2,3,2,20] reshape(c)\n"
              "  e = f32[2,3,2,20] negate(d)\n"
              "  ROOT o = (f32[5,6,8], f32[1,6,1,40], f32[2,3,2,20]) tuple(t, b, e)\n}\n",
              181, true);
}

static void test_transcendentals(void) {
  static const char *ops[] = {"exponential", "exponential-minus-one", "tanh", "sine", "cosine", "logistic",
                              "cbrt", "tan", "erf"};
  static const char *types[] = {"f32", "f64", "f16", "bf16"};
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++) {
      char text[512];
      snprintf(text, sizeof text,
               "HloModule tr\n\nENTRY main {\n  a = %s[1031] parameter(0)\n  ROOT r = %s[1031] %s(a)\n}\n", types[t],
               types[t], ops[i]);
      check_close(text, 61 + (uint64_t)i, 1e-6);
    }
  /* log/sqrt/pow/atan2 on positive inputs (abs keeps the domain). */
  check_close("HloModule tr\n\nENTRY main {\n  a = f32[257] parameter(0)\n  b = f32[257] parameter(1)\n"
              "  x = f32[257] abs(a)\n  l = f32[257] log(x)\n  l1 = f32[257] log-plus-one(x)\n"
              "  s = f32[257] sqrt(x)\n  rs = f32[257] rsqrt(x)\n  p = f32[257] power(x, b)\n"
              "  at = f32[257] atan2(a, b)\n  u = f32[257] add(l, l1)\n  v = f32[257] add(s, rs)\n"
              "  w = f32[257] add(p, at)\n  uv = f32[257] add(u, v)\n  ROOT r = f32[257] add(uv, w)\n}\n",
              71, 1e-6);
}

static void test_dot_naive(void) {
  check_exact("HloModule d\n\nENTRY main {\n  a = s32[3,5,7] parameter(0)\n  b = s32[3,7,4] parameter(1)\n"
              "  ROOT d = s32[3,5,4] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
              "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n",
              81, false);
  check_close("HloModule d\n\nENTRY main {\n  a = f64[6,33] parameter(0)\n  b = f64[9,33] parameter(1)\n"
              "  ROOT d = f64[6,9] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n",
              82, 1e-12);
}

/* f16/bf16 dots and convolutions become f32 products between converts (the fast
 * kernels take f32), results rounded back: within two ulps of the half type of the
 * evaluator's double-accumulated result, scaled by the largest output. */
static void test_half_products_compute_in_f32(void) {
  const char *dot = "HloModule d\n\nENTRY main {\n  a = bf16[2,12,16,8] parameter(0)\n  b = bf16[2,12,16,8] parameter(1)\n"
                    "  ROOT d = bf16[2,12,16,16] dot(a, b), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, "
                    "lhs_contracting_dims={3}, rhs_contracting_dims={3}\n}\n";
  hlo_module *m = check_parse_hlo(dot);
  if (m) {
    bool changed = false;
    CHECK_OK(cpu_pass_half_products(m, &changed));
    const hlo_instr *root = m->entry->root;
    CHECK(changed && root->op == HLO_OP_CONVERT && root->shape.type == HLO_BF16);
    CHECK(root->operands[0]->op == HLO_OP_DOT && root->operands[0]->shape.type == HLO_F32);
    CHECK(root->operands[0]->operands[0]->op == HLO_OP_CONVERT);
    hlo_module_free(m);
  }
  check_close_scaled(dot, 91, 1.6e-2);
  /* bf16 operands, f32 result (XLA's preferred_element_type): no convert back */
  check_close_scaled("HloModule d\n\nENTRY main {\n  a = bf16[7,40] parameter(0)\n  b = bf16[40,5] parameter(1)\n"
                     "  ROOT d = f32[7,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
                     92, 1e-5);
  check_close_scaled("HloModule cv\n\nENTRY main {\n  x = f16[1,6,9,9] parameter(0)\n  w = f16[4,6,3,3] parameter(1)\n"
                     "  ROOT c = f16[1,4,9,9] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n}\n",
                     93, 2e-3);
}

/* f32 dots under the tiny-product threshold run as generated code instead of a oneDNN
 * call (alone, and as the core of a fusion with an epilogue): same results within f32
 * summation order. */
static void test_tiny_f32_dots_run_as_generated_code(void) {
  check_close_scaled("HloModule d\n\nENTRY main {\n  a = f32[3,3] parameter(0)\n  s = f32[3] parameter(1)\n"
                     "  ROOT d = f32[3] dot(a, s), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
                     94, 1e-6);
  check_close_scaled("HloModule d\n\nENTRY main {\n  a = f32[4,8] parameter(0)\n  b = f32[8,2] parameter(1)\n"
                     "  c = f32[4,2] parameter(2)\n  d = f32[4,2] dot(a, b), lhs_contracting_dims={1}, "
                     "rhs_contracting_dims={0}\n  e = f32[4,2] add(d, c)\n  z = f32[] constant(0)\n"
                     "  zb = f32[4,2] broadcast(z), dimensions={}\n  ROOT r = f32[4,2] maximum(e, zb)\n}\n",
                     95, 1e-6);
}

static void test_convolution_naive(void) {
  /* Integer convolutions oneDNN does not take: grouped, strided, padded, dilated,
   * reversed; integer accumulation wraps exactly like the evaluator's. */
  check_exact("HloModule cv\n\nENTRY main {\n  x = s32[2,9,8,4] parameter(0)\n  w = s32[3,2,2,6] parameter(1)\n"
              "  ROOT c = s32[2,5,8,6] convolution(x, w), window={size=3x2 stride=2x1 pad=1_1x1_1 rhs_dilate=1x2 "
              "rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, feature_group_count=2\n}\n",
              101, false);
  check_exact("HloModule cv\n\nENTRY main {\n  x = s8[4,3,7] parameter(0)\n  w = s8[6,3,2] parameter(1)\n"
              "  ROOT c = s8[2,6,8] convolution(x, w), window={size=2 pad=1_1 lhs_dilate=1}, dim_labels=bf0_oi0->bf0, "
              "batch_group_count=2\n}\n",
              102, false);
  check_close("HloModule cv\n\nENTRY main {\n  x = f64[1,6,6,2] parameter(0)\n  w = f64[2,2,2,3] parameter(1)\n"
              "  ROOT c = f64[1,10,5,3] convolution(x, w), window={size=2x2 lhs_dilate=2x1}, dim_labels=b01f_01io->b01f\n}\n",
              103, 1e-12);
}

static void test_big_and_odd_sizes(void) {
  /* 1M elements: split across threads; the sizes around it exercise vector tails. */
  static const char *sizes[] = {"1048576", "1", "7", "1023", "1025,3"};
  for (int i = 0; i < 5; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "HloModule big\n\nENTRY main {\n  a = f32[%s] parameter(0)\n  b = f32[%s] parameter(1)\n"
             "  m = f32[%s] multiply(a, b)\n  s = f32[%s] add(m, a)\n  n = f32[%s] negate(s)\n"
             "  ROOT x = f32[%s] maximum(n, b)\n}\n",
             sizes[i], sizes[i], sizes[i], sizes[i], sizes[i], sizes[i]);
    check_exact(text, 91 + (uint64_t)i, i > 0);
  }
}

static void test_outputs_and_aliases(void) {
  /* Outputs that are parameters, constants, reshapes (aliases) of parameters, repeated
   * tuple elements and zero-element arrays are copied out, never handed out aliased. */
  check_exact("HloModule o\n\nENTRY main {\n  a = f32[3,4] parameter(0)\n  c = s32[2] constant({7, -7})\n"
              "  r = f32[12] reshape(a)\n  n = f32[3,4] negate(a)\n  e = f32[0,5] parameter(1)\n"
              "  ee = f32[0,5] exponential(e)\n"
              "  ROOT t = (f32[3,4], s32[2], f32[12], f32[3,4], f32[3,4], f32[0,5]) tuple(a, c, r, n, n, ee)\n}\n",
              111, true);
  check_exact("HloModule o\n\nENTRY main {\n  a = f32[3,4] parameter(0)\n  ROOT r = f32[4,3] reshape(a)\n}\n", 112,
              true);
  check_exact("HloModule o\n\nENTRY main {\n  ROOT a = f16[5] parameter(0)\n}\n", 113, true);
}

/* A `tuple` inside the root tuple compiles on cpu (it used to send the whole module to
 * the interpreter) and the result keeps its nesting. Its leaves mix the kinds of
 * output: blocks the kernels write straight into the result (n, m), copies (a
 * parameter, a constant, a block named twice) and a while's packed tuple. */
static void test_nested_tuple_outputs_compile_and_keep_their_structure(void) {
  check_exact("HloModule nt\n\n"
              "cond {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
              "  k = s32[] constant(3)\n  ROOT lt = pred[] compare(i, k), direction=LT\n}\n\n"
              "body {\n  s = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
              "  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  v = f32[4] get-tuple-element(s), index=1\n"
              "  w = f32[4] add(v, v)\n  ROOT t = (s32[], f32[4]) tuple(j, w)\n}\n\n"
              "ENTRY main {\n  a = f32[4] parameter(0)\n  b = f32[2,3] parameter(1)\n"
              "  c = s32[2] constant({7, -7})\n  n = f32[4] negate(a)\n  m = f32[2,3] multiply(b, b)\n"
              "  zero = s32[] constant(0)\n  init = (s32[], f32[4]) tuple(zero, a)\n"
              "  w = (s32[], f32[4]) while(init), condition=cond, body=body\n"
              "  inner = (f32[4], f32[2,3]) tuple(n, m)\n"
              "  deeper = ((f32[4], f32[2,3]), s32[2]) tuple(inner, c)\n"
              "  ROOT out = (((f32[4], f32[2,3]), s32[2]), f32[4], (s32[], f32[4]), f32[2,3], (f32[4], f32[2,3])) "
              "tuple(deeper, a, w, m, inner)\n}\n",
              121, true);
}

/* Output blocks live in the result literals (cpu_program.slot_extra), so each run must
 * hand out fresh ones: a second run leaves the first run's result as it was, and an
 * output named twice is two literals. */
static void test_results_written_in_place_belong_to_the_caller(void) {
  hlo_module *m = check_parse_hlo("HloModule r\n\nENTRY main {\n  a = f32[64,64] parameter(0)\n"
                                  "  e = f32[64,64] add(a, a)\n  n = f32[64,64] negate(a)\n"
                                  "  ROOT t = (f32[64,64], f32[64,64], f32[64,64]) tuple(e, n, e)\n}\n");
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e = NULL;
  hlo_literal *args[2] = {0}, *out[2] = {0}, *ref[2] = {0};
  CHECK_OK(cpu->compile(cpu, m, NULL, &e));
  for (int r = 0; r < 2 && e; r++) {
    CHECK_OK(literal_create(&m->entry->params[0]->shape, &args[r]));
    fill(args[r], 130 + (uint64_t)r, true);
    CHECK_OK(cpu->execute(e, &args[r], 1, &out[r]));
    CHECK_OK(eval_module(m, &args[r], 1, &ref[r]));
  }
  if (out[0] && out[1] && ref[0] && ref[1]) {
    CHECK(same_bits(out[0]->tuple[0], ref[0]->tuple[0], "first run, e"));
    CHECK(same_bits(out[0]->tuple[1], ref[0]->tuple[1], "first run, n"));
    CHECK(same_bits(out[0]->tuple[2], ref[0]->tuple[2], "first run, e again"));
    CHECK(literal_equal(out[1], ref[1]));
    CHECK(out[0]->tuple[0]->data != out[1]->tuple[0]->data);
    CHECK(out[0]->tuple[0]->data != out[0]->tuple[2]->data);
  }
  for (int r = 0; r < 2; r++) {
    literal_free(args[r]);
    literal_free(out[r]);
    literal_free(ref[r]);
  }
  if (e) cpu->destroy(e);
  hlo_module_free(m);
}

/* Kernels whose output block is fresh declare their stores apart from their operand
 * loads (scoped noalias metadata, cpu_kernel_options.outputs_apart); a kernel that
 * computes in place over an operand's block must not, or LLVM could move a load of an
 * element past the store that overwrites it. Here the row sum's block is fresh and the
 * kLoop fusion after it takes that block over in place. Read from the optimised IR
 * (KILN_CPU_DUMP_IR); the results are checked against the evaluator too (the row sum
 * folds in lanes: scaled-close, see the top of this file). */
static void compile_with_ir_dump(void) {
  check_close_scaled("HloModule apart_probe\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
              "  ROOT s = f32[] add(x, y)\n}\n\n"
              "ENTRY main {\n  a = f32[64,48] parameter(0)\n  r = f32[64] parameter(1)\n  z = f32[] constant(0)\n"
              "  s = f32[64] reduce(a, z), dimensions={1}, to_apply=add\n"
              "  m = f32[64] multiply(s, r)\n  ROOT n = f32[64] subtract(m, r)\n}\n",
              141, 1e-5);
}

static void test_only_kernels_with_outputs_apart_declare_noalias(void) {
  setenv("KILN_CPU_DUMP_IR", "1", 1);
  char *ir = check_capture_stderr(compile_with_ir_dump);
  unsetenv("KILN_CPU_DUMP_IR");
  const char *k0 = strstr(ir, "_k0("), *k1 = strstr(ir, "_k1(");
  if (strstr(ir, "CHECK failed")) fputs(ir, stderr); /* the run inside the capture failed */
  CHECK(k0 && k1);
  if (k0 && k1) {
    /* each function's text runs to the next "define" or the end */
    const char *end0 = strstr(k0, "\ndefine"), *end1 = strstr(k1, "\ndefine");
    size_t n0 = end0 ? (size_t)(end0 - k0) : strlen(k0), n1 = end1 ? (size_t)(end1 - k1) : strlen(k1);
    char *f0 = strndup(k0, n0), *f1 = strndup(k1, n1);
    bool reduce_first = strstr(f0, "!noalias") != NULL; /* the reduce: a fresh block */
    const char *fresh = reduce_first ? f0 : f1, *in_place = reduce_first ? f1 : f0;
    CHECK(strstr(fresh, "!noalias") && strstr(fresh, "!alias.scope"));
    CHECK(!strstr(in_place, "!noalias") && !strstr(in_place, "!alias.scope"));
    free(f0);
    free(f1);
  }
  free(ir);
}

/* What neither the code generator, oneDNN nor the evaluator runs (an unknown
 * custom-call) makes compile answer UNIMPLEMENTED naming it; a sort, a native kernel
 * now (cpu_sort.c), is accepted by supports(). */
static void test_unsupported_names_instruction(void) {
  const char *text =
      "HloModule u\n\nENTRY main {\n  a = f32[8] parameter(0)\n  e = f32[8] exponential(a)\n"
      "  ROOT my_call = f32[8] custom-call(e), custom_call_target=\"no_such_target\"\n}\n";
  hlo_module *m = check_parse_hlo(text);
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
  CHECK(!cpu->supports(cpu, m->entry->root));
  CHECK(cpu->supports(cpu, m->entry->root->operands[0]));
  hlo_module_free(m);
  m = check_parse_hlo(
      "HloModule u\n\ncmp {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT c = pred[] compare(x, y), direction=LT\n}\n\n"
      "ENTRY main {\n  a = f32[8] parameter(0)\n  e = f32[8] exponential(a)\n"
      "  ROOT my_sort = f32[8] sort(e), dimensions={0}, to_apply=cmp\n}\n");
  if (!m) return;
  /* Sort is a native kernel of the cpu backend (cpu_sort.c) now. */
  CHECK(cpu->supports(cpu, m->entry->root));
  hlo_module_free(m);
}

static void test_cache_hit(void) {
  const char *text = "HloModule cache_probe\n\nENTRY main {\n  a = f32[5] parameter(0)\n"
                     "  ROOT r = f32[5] multiply(a, a)\n}\n";
  hlo_module *m1 = check_parse_hlo(text), *m2 = check_parse_hlo(text);
  if (!m1 || !m2) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e1 = NULL, *e2 = NULL;
  CHECK_OK(cpu->compile(cpu, m1, NULL, &e1));
  int after_first = cpu_backend_cache_size();
  CHECK_OK(cpu->compile(cpu, m2, NULL, &e2));
  CHECK(cpu_backend_cache_size() == after_first);
  hlo_module_free(m1); /* the executable does not borrow the module */
  hlo_literal *arg = NULL, *out = NULL;
  CHECK_OK(literal_create(&m2->entry->params[0]->shape, &arg));
  for (int i = 0; i < 5; i++) literal_set_f64(arg, i, i + 0.5);
  if (e1) {
    CHECK_OK(cpu->execute(e1, &arg, 1, &out));
    if (out) CHECK(literal_get_f64(out, 4) == 4.5 * 4.5);
    literal_free(out);
    cpu->destroy(e1);
  }
  if (e2) cpu->destroy(e2);
  literal_free(arg);
  hlo_module_free(m2);
}

/* A kernel reads a vector constant at its address. The compile borrows the caller's
 * constants, so the kernel must read a copy that lives with the executable: the caller
 * frees its module (the bridge does, right after compiling), and the scribbled freed
 * memory must not reach the result. */
static void test_kernel_constants_outlive_the_callers_module(void) {
  const char *text = "HloModule kernel_constant\n\nfused {\n  p = f32[8] parameter(0)\n"
                     "  c = f32[8] constant({0.5, -1, 2, 3.25, -4, 5, 6.5, -7})\n"
                     "  m = f32[8] multiply(p, c)\n  ROOT r = f32[8] add(m, c)\n}\n\n"
                     "ENTRY main {\n  a = f32[8] parameter(0)\n"
                     "  ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused\n}\n";
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e = NULL;
  CHECK_OK(cpu->compile(cpu, m, NULL, &e));
  for (int i = 0; i < m->n_comps; i++) /* what a freed module's memory may hold */
    for (int k = 0; k < m->comps[i]->n_instrs; k++) {
      hlo_literal *l = m->comps[i]->instrs[k]->literal;
      if (l && l->data) memset(l->data, 0x7f, (size_t)shape_byte_size(&l->shape));
    }
  hlo_module_free(m);
  static const double c[8] = {0.5, -1, 2, 3.25, -4, 5, 6.5, -7};
  const hlo_shape s = {.type = HLO_F32, .rank = 1, .dims = {8}};
  hlo_literal *arg = NULL, *out = NULL;
  CHECK_OK(literal_create(&s, &arg));
  for (int i = 0; i < 8; i++) literal_set_f64(arg, i, i - 3);
  if (e) {
    CHECK_OK(cpu->execute(e, &arg, 1, &out));
    for (int i = 0; out && i < 8; i++) CHECK(literal_get_f64(out, i) == (i - 3) * c[i] + c[i]);
    literal_free(out);
    cpu->destroy(e);
  }
  literal_free(arg);
}

/* Appends a constant's values "{{...}, ...}" for ROWS x COLS (or a vector: ROWS 0). */
static void append_values(char *text, size_t size, int rows, int cols, double scale) {
  size_t n = strlen(text);
  n += (size_t)snprintf(text + n, size - n, "{");
  for (int r = 0; r < (rows ? rows : 1); r++) {
    if (rows) n += (size_t)snprintf(text + n, size - n, "%s{", r ? ", " : "");
    for (int c = 0; c < cols; c++)
      n += (size_t)snprintf(text + n, size - n, "%s%g", c ? ", " : "", scale * (((r * 7 + c * 3) % 11) - 5));
    if (rows) n += (size_t)snprintf(text + n, size - n, "}");
  }
  snprintf(text + n, size - n, "})");
}

/* Constants oneDNN captured are released from the compiled module (their data is never
 * read again): w feeds only a dot. v feeds a dot and an elementwise kernel, and vs is an
 * output, so both stay. The executable runs twice, each time matching the evaluator. */
static void test_captured_constants_released(void) {
  char text[16384] = "HloModule cw\n\nENTRY main {\n  x = f32[4,16] parameter(0)\n  p = f32[8,8] parameter(1)\n"
                     "  w = f32[16,8] constant(";
  append_values(text, sizeof text, 16, 8, 0.25);
  strncat(text, "\n  v = f32[8,8] constant(", sizeof text - strlen(text) - 1);
  append_values(text, sizeof text, 8, 8, 0.5);
  strncat(text, "\n  vs = f32[8] constant(", sizeof text - strlen(text) - 1);
  append_values(text, sizeof text, 0, 8, 1.0);
  strncat(text,
          "\n  d1 = f32[4,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
          "  d2 = f32[4,8] dot(d1, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
          "  a = f32[8,8] add(v, p)\n"
          "  ROOT t = (f32[4,8], f32[8,8], f32[8]) tuple(d2, a, vs)\n}\n",
          sizeof text - strlen(text) - 1);
  hlo_module *m = check_parse_hlo(text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e = NULL;
  hlo_literal *args[2] = {NULL, NULL}, *ref = NULL;
  for (int i = 0; i < 2; i++) {
    CHECK_OK(literal_create(&m->entry->params[i]->shape, &args[i]));
    fill(args[i], 301 + (uint64_t)i, false);
  }
  CHECK_OK(eval_module(m, args, 2, &ref));
  CHECK_OK(cpu->compile(cpu, m, NULL, &e));
  for (int run = 0; run < 2 && e && ref; run++) {
    hlo_literal *out = NULL;
    CHECK_OK(cpu->execute(e, args, 2, &out));
    for (int k = 0; out && k < 3; k++) {
      const hlo_literal *got = out->tuple[k], *want = ref->tuple[k];
      CHECK(got->n == want->n);
      for (int64_t i = 0; i < got->n && i < want->n; i++)
        CHECK(fabs(literal_get_f64(got, i) - literal_get_f64(want, i)) <= 1e-4 * (1 + fabs(literal_get_f64(want, i))));
    }
    literal_free(out);
  }
  if (e) cpu->destroy(e);
  literal_free(ref);
  for (int i = 0; i < 2; i++) literal_free(args[i]);
  hlo_module_free(m);
}

static void test_bad_arguments(void) {
  hlo_module *m = check_parse_hlo("HloModule bad\n\nENTRY main {\n  a = f32[5] parameter(0)\n  ROOT r = f32[5] negate(a)\n}\n");
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  backend_executable *e = NULL;
  CHECK_OK(cpu->compile(cpu, m, NULL, &e));
  hlo_shape s = shape_make(HLO_F32, 1, (int64_t[]){6});
  hlo_literal *arg = NULL, *out = NULL;
  CHECK_OK(literal_create(&s, &arg));
  if (e) {
    CHECK_ERR(cpu->execute(e, &arg, 1, &out), "expected f32[5]");
    CHECK_ERR(cpu->execute(e, &arg, 0, &out), "expected 1 arguments");
    cpu->destroy(e);
  }
  literal_free(arg);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_elementwise_exact), TEST(test_integer_edge_cases), TEST(test_convert_exact), TEST(test_narrow_converts_exact),
          TEST(test_compare_select_clamp), TEST(test_data_movement), TEST(test_scalar_result_of_data_movement), TEST(test_concatenate_many), TEST(test_gather), TEST(test_reduce), TEST(test_variadic_reduce), TEST(test_reduce_window), TEST(test_restructured_reductions), TEST(test_grouped_reshapes),
          TEST(test_fused_chain), TEST(test_residual_block_in_place), TEST(test_softmax_through_backend), TEST(test_transcendentals), TEST(test_dot_naive), TEST(test_half_products_compute_in_f32), TEST(test_tiny_f32_dots_run_as_generated_code), TEST(test_convolution_naive), TEST(test_big_and_odd_sizes),
          TEST(test_outputs_and_aliases), TEST(test_nested_tuple_outputs_compile_and_keep_their_structure),
         TEST(test_results_written_in_place_belong_to_the_caller),
         TEST(test_only_kernels_with_outputs_apart_declare_noalias), TEST(test_unsupported_names_instruction), TEST(test_cache_hit), TEST(test_kernel_constants_outlive_the_callers_module),
          TEST(test_flat_kernels_in_blocks_cover_every_element),
          TEST(test_bf16_chain_keeps_excess_precision_only_when_allowed),
          TEST(test_leading_dims_reduce_reads_contiguous_rows),
          TEST(test_bf16_round_trip_in_one_step_matches_two_converts),
          TEST(test_nan_operands_give_the_first_nan_quieted),
          TEST(test_f16_arithmetic_rounds_as_the_evaluator),
          TEST(test_two_pass_kernel_keeps_every_nan),
          TEST(test_row_sum_over_nans_gives_the_evaluator_bits),
          TEST(test_row_sum_of_computed_float_bits_keeps_the_payload_rules),
          TEST(test_captured_constants_released), TEST(test_bad_arguments))
