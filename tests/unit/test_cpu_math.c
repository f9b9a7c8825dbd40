/* Unit tests for the cpu backend's f32 exp, tanh and erf (cpu_math.c): the out-of-line
 * copies -- scalar and the vector variants the loop vectorizer substitutes -- compute
 * bit for bit what the inline expansion computes; both stay within a few ulps of glibc
 * (the evaluator's libm, an independent implementation) with libm's special values; and
 * the vectorizer really does widen an out-of-line call into a call of a vector variant
 * instead of scalarising it (which would keep the results right and lose the speed). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_elemental.h" /* cpu_loop */
#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/cpu_math.h"
#include "base/strbuf.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"

typedef void (*map_fn)(const float *x, float *y, int64_t n);

static const char *const fn_label[CPU_MATH_COUNT] = {"exp", "tanh", "erf"};

/* Defines void NAME(const float *x, float *y, int64_t n) { y[i] = FN(x[i]) }, the loop
 * shape of a flat elemental kernel. */
static void add_map(LLVMModuleRef m, const char *name, cpu_math_fn fn, bool outline) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef fp = LLVMPointerType(f32, 0);
  LLVMTypeRef params[3] = {fp, fp, i64};
  LLVMValueRef f = LLVMAddFunction(m, name, LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, f, "entry"));
  /* distinct arrays, as a kernel's operands and outputs are */
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(f, 1, LLVMCreateEnumAttribute(c, noalias, 0));
  LLVMAddAttributeAtIndex(f, 2, LLVMCreateEnumAttribute(c, noalias, 0));
  cpu_loop l;
  cpu_loop_begin(b, f, &l, LLVMConstInt(i64, 0, 0), LLVMGetParam(f, 2), "i");
  LLVMValueRef at = LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(f, 0), &l.index, 1, "");
  LLVMValueRef y = cpu_math_f32(m, b, fn, LLVMBuildLoad2(b, f32, at, ""), outline);
  LLVMBuildStore(b, y, LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(f, 1), &l.index, 1, ""));
  cpu_loop_end(b, &l);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

/* Inputs: a sweep over FN's interesting range, plus libm's special cases. */
static float *inputs(cpu_math_fn fn, int *n_out) {
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 1e-7f, -3e-6f,
                                  0.5f, 0.625f, -0.625f, 0.62499994f, 1.0f, 4.0f, -4.0f, 3.9999998f,
                                  44.0f, -44.5f, 88.7f, 89.0f, -103.9f, -104.5f, -200.0f, 1e30f, -1e30f};
  double lo = fn == CPU_MATH_EXP ? -87.0 : fn == CPU_MATH_TANH ? -20.0 : -5.0;
  double hi = fn == CPU_MATH_EXP ? 88.7 : -lo;
  int n_sweep = 20011; /* odd: the vector loop leaves a scalar remainder */
  int n = n_sweep + (int)(sizeof special / sizeof special[0]);
  float *x = malloc((size_t)n * sizeof *x);
  if (!x) abort();
  for (int i = 0; i < n_sweep; i++) x[i] = (float)(lo + (hi - lo) * i / (n_sweep - 1));
  memcpy(x + n_sweep, special, sizeof special);
  *n_out = n;
  return x;
}

/* Distance in representable floats (both finite). */
static int64_t ulps(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  int64_t ka = ia < 0 ? (int64_t)INT32_MIN - ia : ia, kb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return ka > kb ? ka - kb : kb - ka;
}

static float libm(cpu_math_fn fn, float x) {
  return fn == CPU_MATH_EXP ? expf(x) : fn == CPU_MATH_TANH ? tanhf(x) : erff(x);
}

static void test_out_of_line_math_matches_inline_and_libm(void) {
  /* the bounds of the comments in cpu_math.c, plus one for glibc's own rounding */
  static const int64_t max_ulps[CPU_MATH_COUNT] = {3, 3, 7};
  cpu_jit_module jm;
  CHECK_OK(cpu_jit_new_module("math", &jm));
  if (!jm.module) return;
  for (int fn = 0; fn < CPU_MATH_COUNT; fn++) {
    char name[32];
    snprintf(name, sizeof name, "inline_%d", fn);
    add_map(jm.module, name, (cpu_math_fn)fn, false);
    snprintf(name, sizeof name, "outline_%d", fn);
    add_map(jm.module, name, (cpu_math_fn)fn, true);
  }
  cpu_jit *j = NULL;
  CHECK_OK(cpu_jit_create(&jm, &j));
  if (!j) return;
  for (int fn = 0; fn < CPU_MATH_COUNT; fn++) {
    void *pi = NULL, *po = NULL;
    char name[32];
    snprintf(name, sizeof name, "inline_%d", fn);
    CHECK_OK(cpu_jit_lookup(j, name, &pi));
    snprintf(name, sizeof name, "outline_%d", fn);
    CHECK_OK(cpu_jit_lookup(j, name, &po));
    if (!pi || !po) continue;
    int n;
    float *x = inputs((cpu_math_fn)fn, &n);
    float *yi = malloc((size_t)n * sizeof *yi), *yo = malloc((size_t)n * sizeof *yo);
    if (!yi || !yo) abort();
    ((map_fn)pi)(x, yi, n);
    ((map_fn)po)(x, yo, n);
    int bad_bits = 0, bad_libm = 0;
    int64_t worst = 0;
    for (int i = 0; i < n; i++) {
      if (memcmp(&yi[i], &yo[i], 4) != 0 && bad_bits++ < 3)
        fprintf(stderr, "%s(%.9g): inline %.9g, out of line %.9g\n", fn_label[fn], x[i], yi[i], yo[i]);
      float want = libm((cpu_math_fn)fn, x[i]);
      bool ok;
      if (isnan(want)) ok = isnan(yi[i]);
      else if (isinf(want) || want == 0) ok = yi[i] == want && signbit(yi[i]) == signbit(want);
      else {
        int64_t d = ulps(yi[i], want);
        if (d > worst) worst = d;
        ok = d <= max_ulps[fn];
      }
      if (!ok && bad_libm++ < 3) fprintf(stderr, "%s(%.9g) = %.9g, libm %.9g\n", fn_label[fn], x[i], yi[i], want);
    }
    CHECK(bad_bits == 0);
    CHECK(bad_libm == 0);
    fprintf(stderr, "%s: %d inputs, at most %lld ulps from libm\n", fn_label[fn], n, (long long)worst);
    free(x);
    free(yi);
    free(yo);
  }
  cpu_jit_destroy(j);
}

/* Optimises M as cpu_jit does (default<O3>, vectorizers on, a host target machine). */
static void optimise_for_host(LLVMModuleRef m) {
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  LLVMTargetRef target;
  char *err = NULL;
  CHECK(LLVMGetTargetFromTriple(triple, &target, &err) == 0);
  LLVMDisposeMessage(err);
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelAggressive,
                                                    LLVMRelocDefault, LLVMCodeModelJITDefault);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMErrorRef e = LLVMRunPasses(m, "default<O3>", tm, opts);
  CHECK(e == NULL);
  if (e) LLVMConsumeError(e);
  LLVMDisposePassBuilderOptions(opts);
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

/* Whether F calls a function whose name starts with PREFIX. */
static bool calls_prefix(LLVMValueRef f, const char *prefix) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsACallInst(i)) continue;
      LLVMValueRef callee = LLVMGetCalledValue(i);
      size_t len;
      const char *name = callee ? LLVMGetValueName2(callee, &len) : NULL;
      if (name && strncmp(name, prefix, strlen(prefix)) == 0) return true;
    }
  return false;
}

static void test_vectorizer_calls_the_vector_variants(void) {
  cpu_jit_module jm;
  CHECK_OK(cpu_jit_new_module("math_vectorized", &jm));
  if (!jm.module) return;
  add_map(jm.module, "outline_exp", CPU_MATH_EXP, true);
  add_map(jm.module, "outline_tanh", CPU_MATH_TANH, true);
  add_map(jm.module, "inline_erf", CPU_MATH_ERF, false);
  optimise_for_host(jm.module);
  /* each loop calls a variant (4, 8 or 16 lanes: the host's choice); the inline one
   * calls nothing of ours and its floor is the vector intrinsic */
  CHECK(calls_prefix(LLVMGetNamedFunction(jm.module, "outline_exp"), "kiln_math_expf_v"));
  CHECK(calls_prefix(LLVMGetNamedFunction(jm.module, "outline_tanh"), "kiln_math_tanhf_v"));
  CHECK(!calls_prefix(LLVMGetNamedFunction(jm.module, "inline_erf"), "kiln_math"));
  /* the copies were not inlined back, and erf, never called out of line, has none */
  CHECK(LLVMGetNamedFunction(jm.module, "kiln_math_expf_v8") != NULL);
  CHECK(LLVMGetNamedFunction(jm.module, "kiln_math_erff") == NULL);
  cpu_jit_module_discard(&jm);
}

/* A module of SITES exp and tanh, each of the parameter plus its own constant (nothing
 * for CSE to merge), summed. */
static char *fan_module(int sites) {
  strbuf t;
  strbuf_init(&t);
  strbuf_printf(&t, "HloModule fan_%d\n\nENTRY main {\n  p = f32[256] parameter(0)\n", sites);
  for (int k = 0; k < sites; k++) {
    strbuf_printf(&t, "  c%d = f32[] constant(%g)\n  b%d = f32[256] broadcast(c%d), dimensions={}\n", k, k * 0.01, k, k);
    strbuf_printf(&t, "  a%d = f32[256] add(p, b%d)\n  m%d = f32[256] %s(a%d)\n", k, k, k, k % 2 ? "tanh" : "exponential", k);
    if (k) strbuf_printf(&t, "  s%d = f32[256] add(%s%d, m%d)\n", k, k > 1 ? "s" : "m", k - 1, k);
  }
  strbuf_printf(&t, "  ROOT r = f32[256] copy(s%d)\n}\n", sites - 1);
  return strbuf_take(&t);
}

static const char *fan_text;

/* Whether a line of the IR text IR calls a vector (any width: the host's choice)
 * through NAME_PREFIX, e.g. "%5 = call <8 x float> @kiln_math_expf_v8(<8 x float> %4)". */
static bool calls_variant(const char *ir, const char *name_prefix) {
  for (const char *line = ir; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *call = strstr(line, "call <");
    const char *name = strstr(line, name_prefix);
    if (call && name && call < line + len && name < line + len && call < name) return true;
    line = end ? end + 1 : NULL;
  }
  return false;
}

/* Compiles fan_text on cpu with the IR dump on (stderr), runs it and compares with the
 * evaluator: the sum of a few hundred terms, each within a few ulps of glibc's, so
 * within 1e-5 relative. */
static void compile_fan(void) {
  hlo_module *m = check_parse_hlo(fan_text);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  hlo_literal *arg = NULL, *got = NULL, *want = NULL;
  CHECK_OK(literal_create(&m->entry->params[0]->shape, &arg));
  literal_fill_pseudo_random(arg, 7);
  backend_compile_options o = backend_compile_options_default();
  backend_executable *e = NULL;
  setenv("KILN_CPU_DUMP_IR", "1", 1);
  CHECK_OK(cpu->compile(cpu, m, &o, &e));
  unsetenv("KILN_CPU_DUMP_IR");
  if (e) {
    CHECK_OK(cpu->execute(e, &arg, 1, &got));
    cpu->destroy(e);
  }
  CHECK_OK(eval_module(m, &arg, 1, &want));
  double worst = 0;
  for (int64_t i = 0; got && want && i < want->n; i++) {
    double w = literal_get_f64(want, i), g = literal_get_f64(got, i);
    double rel = fabs(g - w) / fabs(w);
    if (!(rel <= worst)) worst = rel;
  }
  fprintf(stdout, "fan: cpu within %.3g relative of the evaluator\n", worst);
  CHECK(got && want && worst <= 1e-5);
  literal_free(arg);
  literal_free(got);
  literal_free(want);
  hlo_module_free(m);
}

/* The policy in cpu_compiler.c: up to CPU_INLINE_MATH_LIMIT (256) sites a module keeps
 * the inline expansion, past it the kernels call the out-of-line copies; the results
 * agree with the evaluator either way. */
static void test_a_module_past_the_inline_limit_calls_its_math_out_of_line(void) {
  char *few = fan_module(200), *many = fan_module(300);
  fan_text = few;
  char *ir = check_capture_stderr(compile_fan);
  CHECK(ir && strstr(ir, "define") != NULL);
  CHECK(ir && strstr(ir, "kiln_math_") == NULL);
  free(ir);
  fan_text = many;
  ir = check_capture_stderr(compile_fan);
  CHECK(ir && calls_variant(ir, "@kiln_math_tanhf_v"));
  CHECK(ir && calls_variant(ir, "@kiln_math_expf_v"));
  free(ir);
  free(few);
  free(many);
}

TEST_MAIN(TEST(test_out_of_line_math_matches_inline_and_libm), TEST(test_vectorizer_calls_the_vector_variants),
          TEST(test_a_module_past_the_inline_limit_calls_its_math_out_of_line))
