/* `kiln conformance --device NAME [--csv FILE]`: checks a device against the reference
 * evaluator, in the style of ggml's test-backend-ops.
 *
 * For every opcode the generator knows, every element type the opcode accepts and a few
 * shapes, it writes a small HLO module, fills the parameters with seeded random values,
 * runs it on the device and on the evaluator and compares the results by normalised
 * mean squared error. A case the device declines (its supports() says no, or compile
 * answers UNIMPLEMENTED) is "unsupported", reported apart from a wrong answer: only
 * wrong answers and execution errors fail the run. --csv writes the opcode x type
 * support matrix (supported / unsupported / partial / fail, empty when untested). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "base/flags.h"
#include "base/strbuf.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "tools/tool.h"

/* Which element types an opcode accepts. */
enum {
  T_PRED = 1 << 0,
  T_SINT = 1 << 1,
  T_UINT = 1 << 2,
  T_FLOAT = 1 << 3,
  T_NUM = T_SINT | T_UINT | T_FLOAT,
  T_ALL = T_NUM | T_PRED,
  T_SNUM = T_SINT | T_FLOAT,
  T_LOGIC = T_PRED | T_SINT | T_UINT,
};

/* How the module around the opcode is built. */
typedef enum case_kind {
  K_UNARY, K_BINARY, K_COMPARE, K_SELECT, K_CLAMP, K_CONVERT, K_REDUCE, K_DOT, K_BROADCAST, K_RESHAPE,
  K_TRANSPOSE, K_SLICE, K_CONCAT, K_REVERSE, K_PAD, K_IOTA, K_CONV, K_TUPLE, K_GTE, K_CONSTANT
} case_kind;

/* Input domains: ops like log and sqrt are tested where they are defined, and integer
 * division never sees a zero divisor. */
typedef enum domain { D_ANY, D_POSITIVE } domain;

typedef struct op_case {
  const char *opcode;
  case_kind kind;
  unsigned types;
  domain dom;
} op_case;

static const op_case op_cases[] = {
    {"abs", K_UNARY, T_SNUM, D_ANY},
    {"negate", K_UNARY, T_SNUM, D_ANY},
    {"sign", K_UNARY, T_SNUM, D_ANY},
    {"copy", K_UNARY, T_ALL, D_ANY},
    {"not", K_UNARY, T_LOGIC, D_ANY},
    {"exponential", K_UNARY, T_FLOAT, D_ANY},
    {"exponential-minus-one", K_UNARY, T_FLOAT, D_ANY},
    {"log", K_UNARY, T_FLOAT, D_POSITIVE},
    {"log-plus-one", K_UNARY, T_FLOAT, D_POSITIVE},
    {"sqrt", K_UNARY, T_FLOAT, D_POSITIVE},
    {"rsqrt", K_UNARY, T_FLOAT, D_POSITIVE},
    {"cbrt", K_UNARY, T_FLOAT, D_ANY},
    {"tanh", K_UNARY, T_FLOAT, D_ANY},
    {"logistic", K_UNARY, T_FLOAT, D_ANY},
    {"sine", K_UNARY, T_FLOAT, D_ANY},
    {"cosine", K_UNARY, T_FLOAT, D_ANY},
    {"floor", K_UNARY, T_FLOAT, D_ANY},
    {"ceil", K_UNARY, T_FLOAT, D_ANY},
    {"round-nearest-even", K_UNARY, T_FLOAT, D_ANY},
    {"round-nearest-afz", K_UNARY, T_FLOAT, D_ANY},
    {"add", K_BINARY, T_NUM, D_ANY},
    {"subtract", K_BINARY, T_NUM, D_ANY},
    {"multiply", K_BINARY, T_NUM, D_ANY},
    {"divide", K_BINARY, T_NUM, D_POSITIVE},
    {"remainder", K_BINARY, T_NUM, D_POSITIVE},
    {"maximum", K_BINARY, T_NUM, D_ANY},
    {"minimum", K_BINARY, T_NUM, D_ANY},
    {"power", K_BINARY, T_FLOAT, D_POSITIVE},
    {"atan2", K_BINARY, T_FLOAT, D_ANY},
    {"and", K_BINARY, T_LOGIC, D_ANY},
    {"or", K_BINARY, T_LOGIC, D_ANY},
    {"xor", K_BINARY, T_LOGIC, D_ANY},
    {"compare", K_COMPARE, T_ALL, D_ANY},
    {"select", K_SELECT, T_ALL, D_ANY},
    {"clamp", K_CLAMP, T_NUM, D_ANY},
    {"convert", K_CONVERT, T_ALL, D_ANY},
    {"reduce", K_REDUCE, T_ALL, D_ANY},
    {"dot", K_DOT, T_NUM, D_ANY},
    {"broadcast", K_BROADCAST, T_ALL, D_ANY},
    {"reshape", K_RESHAPE, T_ALL, D_ANY},
    {"transpose", K_TRANSPOSE, T_ALL, D_ANY},
    {"slice", K_SLICE, T_ALL, D_ANY},
    {"concatenate", K_CONCAT, T_ALL, D_ANY},
    {"reverse", K_REVERSE, T_ALL, D_ANY},
    {"pad", K_PAD, T_ALL, D_ANY},
    {"iota", K_IOTA, T_NUM, D_ANY},
    {"convolution", K_CONV, T_FLOAT | T_SINT, D_ANY},
    {"tuple", K_TUPLE, T_ALL, D_ANY},
    {"get-tuple-element", K_GTE, T_ALL, D_ANY},
    {"constant", K_CONSTANT, T_ALL, D_ANY},
};

static const hlo_type tested_types[] = {HLO_PRED, HLO_S8, HLO_S32, HLO_S64, HLO_U8, HLO_U32,
                                        HLO_F16,  HLO_BF16, HLO_F32, HLO_F64};
enum { N_TYPES = sizeof tested_types / sizeof tested_types[0], N_SHAPES = 3 };
#define N_OPS ((int)(sizeof op_cases / sizeof op_cases[0]))

static bool type_allowed(unsigned mask, hlo_type t) {
  if (t == HLO_PRED) return mask & T_PRED;
  if (hlo_type_is_signed_int(t)) return mask & T_SINT;
  if (hlo_type_is_unsigned_int(t)) return mask & T_UINT;
  return mask & T_FLOAT;
}

/* "f32[2,3,4]" for a type and dims. */
static void shape_text(strbuf *b, hlo_type t, int rank, const int64_t *dims) {
  strbuf_printf(b, "%s[", hlo_type_name(t));
  for (int i = 0; i < rank; i++) strbuf_printf(b, "%s%lld", i ? "," : "", (long long)dims[i]);
  strbuf_putc(b, ']');
}

static const char *zero_text(hlo_type t) { return t == HLO_PRED ? "false" : "0"; }

/* Elementwise shapes: a scalar, a vector, a rank-3 array. */
static const int64_t shape_dims[N_SHAPES][3] = {{0}, {7}, {2, 3, 4}};
static const int shape_ranks[N_SHAPES] = {0, 1, 3};

/* Writes the module for op x type x shape variant into b; false when the combination
 * does not exist (e.g. a transpose of a scalar). */
static bool build_case(strbuf *b, const op_case *oc, hlo_type t, int variant) {
  strbuf s, s2;
  strbuf_init(&s);
  strbuf_init(&s2);
  const int rank = shape_ranks[variant];
  const int64_t *dims = shape_dims[variant];
  shape_text(&s, t, rank, dims);
  const char *T = hlo_type_name(t);
  const char *S = strbuf_cstr(&s);
  bool ok = true;
  strbuf_printf(b, "HloModule conformance_%s\n\n", oc->opcode);
  switch (oc->kind) {
  case K_UNARY:
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s %s(p0)\n}\n", S, S, oc->opcode);
    break;
  case K_BINARY:
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = %s %s(p0, p1)\n}\n",
                  S, S, S, oc->opcode);
    break;
  case K_COMPARE: {
    static const char *const dirs[] = {"LT", "EQ", "GE"};
    shape_text(&s2, HLO_PRED, rank, dims);
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = %s compare(p0, p1), direction=%s\n}\n",
                  S, S, strbuf_cstr(&s2), dirs[variant]);
    break;
  }
  case K_SELECT:
    shape_text(&s2, HLO_PRED, rank, dims);
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  ROOT r = %s select(p0, p1, p2)\n}\n",
                  strbuf_cstr(&s2), S, S, S);
    break;
  case K_CLAMP:
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  ROOT r = %s clamp(p0, p1, p2)\n}\n",
                  S, S, S, S);
    break;
  case K_CONVERT: {
    /* The tested type is the result; the source is f32 (or s32 when converting to f32). */
    hlo_type from = t == HLO_F32 ? HLO_S32 : HLO_F32;
    shape_text(&s2, from, rank, dims);
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s convert(p0)\n}\n", strbuf_cstr(&s2), S);
    break;
  }
  case K_REDUCE: {
    if (rank == 0) {
      ok = false;
      break;
    }
    shape_text(&s2, t, rank - 1, dims + 1);
    const char *combiner = t == HLO_PRED ? "or" : "add";
    strbuf_printf(b, "combine {\n  x = %s[] parameter(0)\n  y = %s[] parameter(1)\n  ROOT z = %s[] %s(x, y)\n}\n\n", T, T, T,
                  combiner);
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s reduce(p0, c), dimensions={0}, to_apply=combine\n}\n",
                  S, T, zero_text(t), strbuf_cstr(&s2));
    break;
  }
  case K_DOT:
    if (variant == 0)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[4] parameter(0)\n  p1 = %s[4] parameter(1)\n  ROOT r = %s[] dot(p0, p1), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n",
                    T, T, T);
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[3,4] parameter(0)\n  p1 = %s[4,5] parameter(1)\n  ROOT r = %s[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
                    T, T, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[2,3,4] parameter(0)\n  p1 = %s[2,4,5] parameter(1)\n  ROOT r = %s[2,3,5] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n",
                    T, T, T);
    break;
  case K_BROADCAST:
    if (variant == 0)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[] parameter(0)\n  ROOT r = %s[5] broadcast(p0), dimensions={}\n}\n", T, T);
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[7] parameter(0)\n  ROOT r = %s[7,3] broadcast(p0), dimensions={0}\n}\n", T, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[3] parameter(0)\n  ROOT r = %s[2,3,4] broadcast(p0), dimensions={1}\n}\n", T, T);
    break;
  case K_RESHAPE:
    if (variant == 0) strbuf_printf(b, "ENTRY e {\n  p0 = %s[] parameter(0)\n  ROOT r = %s[1,1] reshape(p0)\n}\n", T, T);
    else if (variant == 1) strbuf_printf(b, "ENTRY e {\n  p0 = %s[7] parameter(0)\n  ROOT r = %s[7,1] reshape(p0)\n}\n", T, T);
    else strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[6,4] reshape(p0)\n}\n", S, T);
    break;
  case K_TRANSPOSE:
    if (variant == 0) ok = false;
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[3,5] parameter(0)\n  ROOT r = %s[5,3] transpose(p0), dimensions={1,0}\n}\n", T, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[4,2,3] transpose(p0), dimensions={2,0,1}\n}\n", S, T);
    break;
  case K_SLICE:
    if (variant == 0) ok = false;
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[3] slice(p0), slice={[1:6:2]}\n}\n", S, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[2,2,2] slice(p0), slice={[0:2], [1:3], [0:4:2]}\n}\n", S, T);
    break;
  case K_CONCAT:
    if (variant == 0) ok = false;
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[7] parameter(0)\n  p1 = %s[2] parameter(1)\n  ROOT r = %s[9] concatenate(p0, p1), dimensions={0}\n}\n", T, T, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[2,3,4] parameter(0)\n  p1 = %s[2,1,4] parameter(1)\n  ROOT r = %s[2,4,4] concatenate(p0, p1), dimensions={1}\n}\n", T, T, T);
    break;
  case K_REVERSE:
    if (variant == 0) ok = false;
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s reverse(p0), dimensions={%s}\n}\n", S, S,
                    variant == 1 ? "0" : "0,2");
    break;
  case K_PAD:
    if (variant == 0) ok = false;
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s[10] pad(p0, c), padding=2_1_0\n}\n",
                    S, T, zero_text(t), T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s[4,7,4] pad(p0, c), padding=1_1_0x0_2_1x0_0_0\n}\n",
                    S, T, zero_text(t), T);
    break;
  case K_IOTA:
    if (variant == 0) ok = false;
    else if (variant == 1) strbuf_printf(b, "ENTRY e {\n  ROOT r = %s[7] iota(), iota_dimension=0\n}\n", T);
    else strbuf_printf(b, "ENTRY e {\n  ROOT r = %s iota(), iota_dimension=1\n}\n", S);
    break;
  case K_CONV:
    if (variant == 0) ok = false;
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[2,7,3] parameter(0)\n  p1 = %s[3,3,2] parameter(1)\n  ROOT r = %s[2,5,2] convolution(p0, p1), window={size=3}, dim_labels=b0f_0io->b0f\n}\n",
                    T, T, T);
    else
      strbuf_printf(b, "ENTRY e {\n  p0 = %s[1,5,5,2] parameter(0)\n  p1 = %s[3,3,2,4] parameter(1)\n  ROOT r = %s[1,3,3,4] convolution(p0, p1), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n",
                    T, T, T);
    break;
  case K_TUPLE:
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = (%s, %s) tuple(p0, p1)\n}\n", S, S,
                  S, S);
    break;
  case K_GTE:
    strbuf_printf(b, "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  t = (%s, %s) tuple(p0, p1)\n  ROOT r = %s get-tuple-element(t), index=1\n}\n",
                  S, S, S, S, S);
    break;
  case K_CONSTANT:
    if (variant == 0) strbuf_printf(b, "ENTRY e {\n  ROOT r = %s[] constant(%s)\n}\n", T, t == HLO_PRED ? "true" : "3");
    else if (variant == 1)
      strbuf_printf(b, "ENTRY e {\n  ROOT r = %s[3] constant({%s})\n}\n", T, t == HLO_PRED ? "true, false, true" : "1, 2, 5");
    else ok = false;
    break;
  }
  strbuf_free(&s);
  strbuf_free(&s2);
  return ok;
}

/* Seeded inputs; D_POSITIVE keeps values in [0.25, 4) (ints in [1, 8)). */
static void fill_input(hlo_literal *l, uint64_t seed, domain dom) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (int64_t i = 0; i < l->n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
    hlo_type t = l->shape.type;
    if (t == HLO_PRED) literal_set_s64(l, i, (int64_t)(u * 2));
    else if (hlo_type_is_float(t)) literal_set_f64(l, i, dom == D_POSITIVE ? 0.25 + u * 3.75 : u * 4 - 2);
    else if (dom == D_POSITIVE) literal_set_s64(l, i, 1 + (int64_t)(u * 7));
    else if (hlo_type_is_unsigned_int(t)) literal_set_s64(l, i, (int64_t)(u * 16));
    else literal_set_s64(l, i, (int64_t)(u * 16) - 8);
  }
}

/* Normalised mean squared error of `got` against `want` (arrays of the same shape):
 * sum (got - want)^2 / sum want^2. NaN where want is NaN must be NaN in got; infinities
 * must match exactly; a mismatch is an infinite error. */
static double nmse_array(const hlo_literal *got, const hlo_literal *want) {
  if (!shape_equal(&got->shape, &want->shape) && !shape_same_dims(&got->shape, &want->shape)) return INFINITY;
  if (got->shape.type != want->shape.type) return INFINITY;
  double err = 0, ref = 0;
  for (int64_t i = 0; i < want->n; i++) {
    double a = literal_get_f64(got, i), b = literal_get_f64(want, i);
    if (isnan(a) || isnan(b)) {
      if (isnan(a) != isnan(b)) return INFINITY;
      continue;
    }
    if (isinf(a) || isinf(b)) {
      if (a != b) return INFINITY;
      continue;
    }
    if (hlo_type_is_int(want->shape.type) && literal_get_s64(got, i) != literal_get_s64(want, i)) return INFINITY;
    err += (a - b) * (a - b);
    ref += b * b;
  }
  return err == 0 ? 0 : err / (ref > 1e-30 ? ref : 1e-30);
}

static double nmse(const hlo_literal *got, const hlo_literal *want) {
  if (shape_is_tuple(&want->shape) != shape_is_tuple(&got->shape)) return INFINITY;
  if (!shape_is_tuple(&want->shape)) return nmse_array(got, want);
  if (got->shape.n_elems != want->shape.n_elems) return INFINITY;
  double worst = 0;
  for (int i = 0; i < want->shape.n_elems; i++) {
    double e = nmse(got->tuple[i], want->tuple[i]);
    if (e > worst || isnan(e)) worst = e;
  }
  return worst;
}

typedef enum verdict { V_UNTESTED = 0, V_PASS, V_UNSUPPORTED, V_FAIL } verdict;

static double tolerance(hlo_type t) { return t == HLO_F16 || t == HLO_BF16 ? 1e-4 : 1e-7; }

static bool device_supports_module(const backend *dev, const hlo_module *m) {
  for (int c = 0; c < m->n_comps; c++)
    for (int i = 0; i < m->comps[c]->n_instrs; i++)
      if (!dev->supports(dev, m->comps[c]->instrs[i])) return false;
  return true;
}

/* Runs one case; prints its line; returns the verdict. */
static verdict run_case(const backend *dev, const backend_compile_options *copts, const op_case *oc, hlo_type t,
                        int variant, const char *text, uint64_t seed) {
  hlo_module *m = NULL;
  hlo_literal **args = NULL;
  hlo_literal *want = NULL, *got = NULL;
  backend_executable *exe = NULL;
  verdict v = V_FAIL;
  char detail[512] = "";
  kiln_status s = hlo_parse(text, strlen(text), "<conformance>", &m);
  if (!s) s = hlo_verify_module(m);
  if (s) {
    snprintf(detail, sizeof detail, "generated module rejected: %s", kiln_status_message(s));
    goto done;
  }
  const hlo_computation *e = m->entry;
  args = calloc((size_t)e->n_params + 1, sizeof *args);
  if (!args) abort();
  for (int i = 0; i < e->n_params && !s; i++) {
    s = literal_create(&e->params[i]->shape, &args[i]);
    if (!s) fill_input(args[i], seed * 31 + (uint64_t)i, oc->dom);
  }
  if (!s) s = eval_module(m, args, e->n_params, &want);
  if (s) {
    snprintf(detail, sizeof detail, "reference failed: %s", kiln_status_message(s));
    goto done;
  }
  if (!device_supports_module(dev, m)) {
    v = V_UNSUPPORTED;
    snprintf(detail, sizeof detail, "not in the device's supported set");
    goto done;
  }
  s = dev->compile(dev, m, copts, &exe);
  if (s) {
    v = kiln_status_code(s) == KILN_UNIMPLEMENTED ? V_UNSUPPORTED : V_FAIL;
    snprintf(detail, sizeof detail, "compile: %s", kiln_status_message(s));
    goto done;
  }
  s = dev->execute(exe, args, e->n_params, &got);
  if (s) {
    snprintf(detail, sizeof detail, "execute: %s", kiln_status_message(s));
    goto done;
  }
  double err = nmse(got, want);
  v = err <= tolerance(t) ? V_PASS : V_FAIL;
  snprintf(detail, sizeof detail, "nmse %.3g", err);
done:
  if (s) kiln_status_free(s);
  printf("  %-22s %-5s shape#%d  %-11s %s\n", oc->opcode, hlo_type_name(t), variant,
         v == V_PASS ? "OK" : v == V_UNSUPPORTED ? "unsupported" : "FAIL", detail);
  if (exe) dev->destroy(exe);
  literal_free(got);
  literal_free(want);
  if (args && m)
    for (int i = 0; i < m->entry->n_params; i++) literal_free(args[i]);
  free(args);
  hlo_module_free(m);
  return v;
}

static const char *matrix_cell(unsigned seen) {
  /* seen: bit per verdict observed across shapes. */
  if (seen & (1u << V_FAIL)) return "fail";
  if ((seen & (1u << V_PASS)) && (seen & (1u << V_UNSUPPORTED))) return "partial";
  if (seen & (1u << V_PASS)) return "supported";
  if (seen & (1u << V_UNSUPPORTED)) return "unsupported";
  return "";
}

static kiln_status write_csv(const char *path, unsigned (*seen)[N_TYPES]) {
  FILE *f = fopen(path, "w");
  if (!f) return status_error(KILN_IO_ERROR, "cannot write %s", path);
  fputs("opcode", f);
  for (int t = 0; t < N_TYPES; t++) fprintf(f, ",%s", hlo_type_name(tested_types[t]));
  fputc('\n', f);
  for (int o = 0; o < N_OPS; o++) {
    fputs(op_cases[o].opcode, f);
    for (int t = 0; t < N_TYPES; t++) fprintf(f, ",%s", matrix_cell(seen[o][t]));
    fputc('\n', f);
  }
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad) return status_error(KILN_IO_ERROR, "error writing %s", path);
  return NULL;
}

int cmd_conformance(int argc, char **argv) {
  if (argc > 0) return tool_usage_error("kiln conformance takes no positional arguments (got '%s')", argv[0]);
  if (!kiln_flags.device[0]) return tool_usage_error("kiln conformance needs a device: --device NAME (see `kiln devices`)");
  const backend *dev = backend_find(kiln_flags.device);
  if (!dev) {
    const backend_entry *e = backend_entry_find(kiln_flags.device);
    if (e) return tool_usage_error("device '%s' is unavailable: %s", kiln_flags.device, e->reason);
    return tool_usage_error("unknown device '%s' (see `kiln devices`)", kiln_flags.device);
  }
  unsigned(*seen)[N_TYPES] = calloc((size_t)N_OPS, sizeof *seen);
  if (!seen) abort();
  int counts[4] = {0};
  backend_compile_options copts = tool_compile_options();
  printf("conformance of device %s against the reference evaluator\n", dev->name);
  strbuf text;
  strbuf_init(&text);
  uint64_t seed = 1;
  for (int o = 0; o < N_OPS; o++) {
    for (int ti = 0; ti < N_TYPES; ti++) {
      if (!type_allowed(op_cases[o].types, tested_types[ti])) continue;
      for (int variant = 0; variant < N_SHAPES; variant++) {
        text.len = 0;
        if (!build_case(&text, &op_cases[o], tested_types[ti], variant)) continue;
        verdict v = run_case(dev, &copts, &op_cases[o], tested_types[ti], variant, strbuf_cstr(&text), seed++);
        counts[v]++;
        seen[o][ti] |= 1u << v;
      }
    }
  }
  strbuf_free(&text);
  printf("%d cases: %d passed, %d failed, %d unsupported\n", counts[V_PASS] + counts[V_FAIL] + counts[V_UNSUPPORTED],
         counts[V_PASS], counts[V_FAIL], counts[V_UNSUPPORTED]);
  kiln_status s = NULL;
  if (*kiln_flags.csv) s = write_csv(kiln_flags.csv, seen);
  free(seen);
  if (s) return tool_fail(s);
  return counts[V_FAIL] ? TOOL_FAILED : TOOL_OK;
}
