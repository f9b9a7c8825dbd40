/* Vectorizable f32 exp, tanh and erf, inline or out of line (see cpu_math.h).
 *
 * The bodies are built for a type context (scalar f32, or <N x float> with <N x i32>
 * beside it), so one description yields the inline code and every vector variant. The
 * out-of-line copies are internal, noinline and readnone: LLVM neither folds them back
 * into each loop nor fears they touch memory, and the vectorizer, finding the variant
 * list on the call, widens the loop and calls the variant of its vector width. The
 * variants are otherwise unreferenced before vectorization, so llvm.compiler.used keeps
 * them alive through the global clean-ups that run first. */
#include "backends/cpu/cpu_math.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mctx {
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef f, i;   /* float and i32, or their vectors */
  LLVMTypeRef f1, i1; /* the scalar element types */
  unsigned lanes;     /* 0 for scalar */
} mctx;

static mctx context(LLVMModuleRef m, LLVMBuilderRef b, unsigned lanes) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  mctx x = {m, b, NULL, NULL, LLVMFloatTypeInContext(c), LLVMInt32TypeInContext(c), lanes};
  x.f = lanes ? LLVMVectorType(x.f1, lanes) : x.f1;
  x.i = lanes ? LLVMVectorType(x.i1, lanes) : x.i1;
  return x;
}

static LLVMValueRef splat(const mctx *x, LLVMValueRef s) {
  if (!x->lanes) return s;
  LLVMValueRef v[16];
  for (unsigned k = 0; k < x->lanes; k++) v[k] = s;
  return LLVMConstVector(v, x->lanes);
}
static LLVMValueRef fc(const mctx *x, double v) { return splat(x, LLVMConstReal(x->f1, v)); }
static LLVMValueRef ic(const mctx *x, uint32_t v) { return splat(x, LLVMConstInt(x->i1, v, 0)); }

/* llvm.NAME.<elem> / llvm.NAME.vN<elem> of N_ARGS (at most 3) arguments of type t (the
 * context's lanes of elem) */
static LLVMValueRef intrinsic_of(const mctx *x, const char *base, LLVMTypeRef t, const char *elem, LLVMValueRef *args,
                                 unsigned n_args) {
  char name[64];
  if (x->lanes) snprintf(name, sizeof name, "llvm.%s.v%u%s", base, x->lanes, elem);
  else snprintf(name, sizeof name, "llvm.%s.%s", base, elem);
  LLVMTypeRef params[3] = {t, t, t};
  LLVMTypeRef fty = LLVMFunctionType(t, params, n_args, 0);
  LLVMValueRef f = LLVMGetNamedFunction(x->m, name);
  if (!f) f = LLVMAddFunction(x->m, name, fty);
  return LLVMBuildCall2(x->b, fty, f, args, n_args, "");
}
static LLVMValueRef intrinsic(const mctx *x, const char *base, LLVMValueRef *args, unsigned n_args) {
  return intrinsic_of(x, base, x->f, "f32", args, n_args);
}
static LLVMValueRef intr1(const mctx *x, const char *base, LLVMValueRef a) { return intrinsic(x, base, &a, 1); }
static LLVMValueRef intr2(const mctx *x, const char *base, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return intrinsic(x, base, args, 2);
}

static LLVMValueRef add(const mctx *x, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(x->b, a, b, ""); }
static LLVMValueRef sub(const mctx *x, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(x->b, a, b, ""); }
static LLVMValueRef mul(const mctx *x, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(x->b, a, b, ""); }
static LLVMValueRef sel(const mctx *x, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(x->b, c, a, b, "");
}
static LLVMValueRef cmp(const mctx *x, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(x->b, p, a, b, "");
}
static LLVMValueRef is_nan(const mctx *x, LLVMValueRef v) { return cmp(x, LLVMRealUNO, v, v); }

/* exp: Cody-Waite range reduction x = n ln2 + r with a two-part ln2, a degree-6
 * polynomial for e^r on |r| <= ln2/2 (Cephes' expf coefficients, about 1 ulp), and 2^n
 * applied as two exponent-field scalings so results down into the subnormal range come
 * out right. Inputs past the overflow / underflow thresholds give inf / 0 exactly as
 * libm does, NaN stays NaN (quieted). Against the evaluator (glibc expf, correctly
 * rounded in practice) results differ by at most a couple of ulps, inside
 * conformance's tolerance. */
static LLVMValueRef exp_body(const mctx *x, LLVMValueRef v) {
  LLVMValueRef hi = fc(x, 88.72283935546875), lo = fc(x, -103.97208404541015625);
  LLVMValueRef vc = sel(x, cmp(x, LLVMRealOGT, v, hi), hi, v);
  vc = sel(x, cmp(x, LLVMRealOLT, vc, lo), lo, vc);
  /* NaN would make the float -> int conversion below poison; its result is replaced
   * at the end anyway. */
  vc = sel(x, is_nan(x, v), fc(x, 0), vc);
  LLVMValueRef n = intr1(x, "floor", add(x, mul(x, vc, fc(x, 1.44269504088896341)), fc(x, 0.5)));
  LLVMValueRef r = sub(x, vc, mul(x, n, fc(x, 0.693359375)));
  r = sub(x, r, mul(x, n, fc(x, -2.12194440e-4)));
  static const double c[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
                             5.0000001201e-1};
  LLVMValueRef p = fc(x, c[0]);
  for (int k = 1; k < 6; k++) p = add(x, mul(x, p, r), fc(x, c[k]));
  LLVMValueRef y = add(x, add(x, mul(x, p, mul(x, r, r)), r), fc(x, 1));
  /* 2^n = 2^(n/2) * 2^(n - n/2): each half stays a normal float for n in [-150, 128]. */
  LLVMValueRef ni = LLVMBuildFPToSI(x->b, n, x->i, "");
  LLVMValueRef n1 = LLVMBuildAShr(x->b, ni, ic(x, 1), "");
  LLVMValueRef n2 = LLVMBuildSub(x->b, ni, n1, "");
  LLVMValueRef s1 = LLVMBuildBitCast(x->b, LLVMBuildShl(x->b, LLVMBuildAdd(x->b, n1, ic(x, 127), ""), ic(x, 23), ""), x->f, "");
  LLVMValueRef s2 = LLVMBuildBitCast(x->b, LLVMBuildShl(x->b, LLVMBuildAdd(x->b, n2, ic(x, 127), ""), ic(x, 23), ""), x->f, "");
  y = mul(x, mul(x, y, s1), s2);
  y = sel(x, cmp(x, LLVMRealOGT, v, hi), fc(x, 1.0 / 0.0), y);
  y = sel(x, cmp(x, LLVMRealOLT, v, lo), fc(x, 0), y);
  return sel(x, is_nan(x, v), add(x, v, v), y);
}

/* The f64 type with the context's lanes, f64 constants of it, and llvm.fmuladd on it. */
static LLVMTypeRef f64_of(const mctx *x) {
  LLVMTypeRef d = LLVMDoubleTypeInContext(LLVMGetModuleContext(x->m));
  return x->lanes ? LLVMVectorType(d, x->lanes) : d;
}
static LLVMValueRef dc(const mctx *x, double v) {
  return splat(x, LLVMConstReal(LLVMDoubleTypeInContext(LLVMGetModuleContext(x->m)), v));
}
static LLVMValueRef fmuladd64(const mctx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return intrinsic_of(x, "fmuladd", f64_of(x), "f64", args, 3);
}

/* tanh(x) = x P(x^2) / Q(x^2) on |x| <= 9.1, P and Q of degree 6 with P(0) = Q(0) = 1,
 * coefficients fitted by us (scripts/fit_tanh.py: iterated weighted least squares
 * against mpmath's tanh, relative error 1.5e-8 at most; Q >= 1 there), evaluated in f64
 * so that f32 rounding inside the polynomials adds nothing: within 1 ulp of the
 * correctly rounded tanh at 6 million points over [0, 9.6] (log-spaced down to 1e-30
 * too); +-1 past 9.1, where tanh rounds to +-1 in f32. One rational expression and no
 * exp: a tanh on a recurrence's critical path (a scan step) takes about half as long as
 * in the former 1 - 2 / (e^2x + 1) form (xla_bench_scan_N2000_M3 0.099 -> 0.062 ms);
 * wide f64 halves the vector width, so a large tanh is ~9% slower (f32[128,1024] 0.032
 * -> 0.035 ms). Odd by construction (tanh(-0) is -0); NaN stays NaN. */
static LLVMValueRef tanh_body(const mctx *x, LLVMValueRef v) {
  static const double p[] = {1.0, -0.15887399676853356, 0.031423904200052026, 0.007947928952079202,
                             0.00022539757122676365, 1.3318105480863637e-06, 8.379860833018782e-10};
  static const double q[] = {1.0, 0.17445921616768545, -0.0437560146328502, 0.024069245465022183,
                             0.0016286200367203623, 2.1326497978804628e-05, 4.9653664186376234e-08};
  LLVMValueRef av = intr1(x, "fabs", v);
  LLVMValueRef big = cmp(x, LLVMRealOGT, av, fc(x, 9.1));
  LLVMValueRef xd = LLVMBuildFPExt(x->b, sel(x, big, fc(x, 0), v), f64_of(x), ""); /* keeps P, Q finite */
  LLVMValueRef t = LLVMBuildFMul(x->b, xd, xd, "");
  LLVMValueRef num = dc(x, p[6]), den = dc(x, q[6]);
  for (int k = 5; k >= 0; k--) {
    num = fmuladd64(x, num, t, dc(x, p[k]));
    den = fmuladd64(x, den, t, dc(x, q[k]));
  }
  LLVMValueRef rd = LLVMBuildFDiv(x->b, LLVMBuildFMul(x->b, xd, num, ""), den, "");
  LLVMValueRef r = LLVMBuildFPTrunc(x->b, rd, x->f, "");
  /* |r| can round a hair past 1 just below |x| = 9.1 */
  r = intr2(x, "copysign", intr2(x, "minnum", intr1(x, "fabs", r), fc(x, 1)), v);
  r = sel(x, big, intr2(x, "copysign", fc(x, 1), v), r);
  return sel(x, is_nan(x, v), add(x, v, v), r);
}

/* erf (GELU evaluates it per activation; a libm call per element was the largest cost
 * of vit_b_16 on cpu): erf(x) = x P(x^2) / Q(x^2) on |x| <= 4, degrees 6 and 5,
 * coefficients fitted by us (iterated weighted least squares against mpmath's erf on
 * [0, 4], then rounded to f32); +-1 past 4, where erf rounds to +-1 in f32. Evaluated
 * in f32 it is within 6 ulps of the exact value over every f32 in [0, 4] (3.5e-7
 * absolute at most), odd by construction (erf(-0) = -0), NaN stays NaN. */
static LLVMValueRef erf_body(const mctx *x, LLVMValueRef v) {
  static const double p[] = {-1.1465355775897024e-08, 4.3402928895375226e-06, 0.00036700916825793684,
                             0.0038299451116472483, 0.05408335477113724, 0.1856781393289566, 1.128379225730896};
  static const double q[] = {5.983457594993524e-05, 0.0012865262106060982, 0.015379637479782104,
                             0.1138920858502388, 0.4978863298892975, 1.0};
  LLVMValueRef av = intr1(x, "fabs", v);
  LLVMValueRef big = cmp(x, LLVMRealOGT, av, fc(x, 4));
  LLVMValueRef vc = sel(x, big, fc(x, 0), v); /* keeps the polynomials finite */
  LLVMValueRef t = mul(x, vc, vc);
  LLVMValueRef num = fc(x, p[0]), den = fc(x, q[0]);
  for (int k = 1; k < 7; k++) num = add(x, mul(x, num, t), fc(x, p[k]));
  for (int k = 1; k < 6; k++) den = add(x, mul(x, den, t), fc(x, q[k]));
  LLVMValueRef r = LLVMBuildFDiv(x->b, mul(x, vc, num), den, "");
  /* |r| can round a hair past 1 just below |x| = 4 */
  r = intr2(x, "copysign", intr2(x, "minnum", intr1(x, "fabs", r), fc(x, 1)), v);
  r = sel(x, big, intr2(x, "copysign", fc(x, 1), v), r);
  return sel(x, is_nan(x, v), add(x, v, v), r);
}

static LLVMValueRef body(const mctx *x, cpu_math_fn fn, LLVMValueRef v) {
  switch (fn) {
    case CPU_MATH_EXP: return exp_body(x, v);
    case CPU_MATH_TANH: return tanh_body(x, v);
    default: return erf_body(x, v);
  }
}

static const char *const fn_names[CPU_MATH_COUNT] = {"kiln_math_expf", "kiln_math_tanhf", "kiln_math_erff"};
static const unsigned variant_lanes[] = {4, 8, 16};
#define N_VARIANTS (sizeof variant_lanes / sizeof variant_lanes[0])

static void add_fn_attr(LLVMValueRef f, const char *kind) {
  LLVMContextRef c = LLVMGetModuleContext(LLVMGetGlobalParent(f));
  unsigned id = LLVMGetEnumAttributeKindForName(kind, strlen(kind));
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, id, 0));
}

static void variant_name(char *out, size_t size, cpu_math_fn fn, unsigned lanes) {
  if (lanes) snprintf(out, size, "%s_v%u", fn_names[fn], lanes);
  else snprintf(out, size, "%s", fn_names[fn]);
}

/* The module's copy of FN for LANES (0: scalar), defined on first use. */
static LLVMValueRef define_copy(LLVMModuleRef m, cpu_math_fn fn, unsigned lanes, bool *is_new) {
  char name[64];
  variant_name(name, sizeof name, fn, lanes);
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  *is_new = f == NULL;
  if (f) return f;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  mctx x = context(m, b, lanes);
  f = LLVMAddFunction(m, name, LLVMFunctionType(x.f, &x.f, 1, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  add_fn_attr(f, "readnone");
  add_fn_attr(f, "nounwind");
  add_fn_attr(f, "willreturn");
  add_fn_attr(f, "nofree");
  add_fn_attr(f, "nosync");
  add_fn_attr(f, "noinline");
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, f, "entry"));
  LLVMBuildRet(b, body(&x, fn, LLVMGetParam(f, 0)));
  LLVMDisposeBuilder(b);
  return f;
}

/* Appends FNS to llvm.compiler.used (rebuilt: a global's initializer type is fixed). */
static void keep_alive(LLVMModuleRef m, LLVMValueRef *fns, unsigned n) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  LLVMValueRef old = LLVMGetNamedGlobal(m, "llvm.compiler.used");
  LLVMValueRef init = old ? LLVMGetInitializer(old) : NULL;
  unsigned n_old = init ? (unsigned)LLVMGetNumOperands(init) : 0;
  LLVMValueRef *vals = malloc((n_old + n) * sizeof *vals);
  if (!vals) abort(); /* as every LLVM builder call does when memory runs out */
  for (unsigned k = 0; k < n_old; k++) vals[k] = LLVMGetOperand(init, k);
  for (unsigned k = 0; k < n; k++) vals[n_old + k] = LLVMConstBitCast(fns[k], i8p);
  if (old) LLVMDeleteGlobal(old);
  LLVMValueRef g = LLVMAddGlobal(m, LLVMArrayType(i8p, n_old + n), "llvm.compiler.used");
  LLVMSetLinkage(g, LLVMAppendingLinkage);
  LLVMSetSection(g, "llvm.metadata");
  LLVMSetInitializer(g, LLVMConstArray(i8p, vals, n_old + n));
  free(vals);
}

static LLVMValueRef outlined_call(LLVMModuleRef m, LLVMBuilderRef b, cpu_math_fn fn, LLVMValueRef v) {
  bool is_new;
  LLVMValueRef f = define_copy(m, fn, 0, &is_new);
  if (is_new) {
    LLVMValueRef variants[N_VARIANTS];
    for (unsigned k = 0; k < N_VARIANTS; k++) variants[k] = define_copy(m, fn, variant_lanes[k], &is_new);
    keep_alive(m, variants, N_VARIANTS);
  }
  LLVMTypeRef ft = LLVMTypeOf(v);
  LLVMTypeRef fty = LLVMFunctionType(ft, &ft, 1, 0);
  LLVMValueRef call = LLVMBuildCall2(b, fty, f, &v, 1, "");
  /* The vector function ABI's LLVM-internal mangling: _ZGV_LLVM_N<lanes>v_<scalar>(<vector>),
   * unmasked, one vector parameter. */
  char list[512];
  size_t used = 0;
  for (unsigned k = 0; k < N_VARIANTS; k++) {
    char vname[64];
    variant_name(vname, sizeof vname, fn, variant_lanes[k]);
    used += (size_t)snprintf(list + used, sizeof list - used, "%s_ZGV_LLVM_N%uv_%s(%s)", k ? "," : "",
                             variant_lanes[k], fn_names[fn], vname);
  }
  static const char kind[] = "vector-function-abi-variant";
  LLVMAttributeRef attr = LLVMCreateStringAttribute(LLVMGetModuleContext(m), kind, sizeof kind - 1, list, (unsigned)used);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, attr);
  return call;
}

LLVMValueRef cpu_math_f32(LLVMModuleRef m, LLVMBuilderRef b, cpu_math_fn fn, LLVMValueRef x, bool outline) {
  LLVMTypeRef t = LLVMTypeOf(x);
  unsigned lanes = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 0;
  if (outline && !lanes) return outlined_call(m, b, fn, x);
  mctx c = context(m, b, lanes);
  return body(&c, fn, x);
}
