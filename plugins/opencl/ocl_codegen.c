/* HLO IR -> OpenCL C and a launch plan. The entry computation is split into kernels, one
 * per materialized instruction (roots and root-tuple elements, reduce / dot /
 * convolution / reduce-window, values used several times whose inlined cost is more than
 * a few operations, and non-trivial operands of the contractions), with one work-item per
 * output element. Every other instruction is fused into its consumers: the emitter
 * produces the value of instruction X at a multi-index (C expressions of the kernel's
 * index variables) as statements writing fresh temporaries, so elementwise chains,
 * broadcast, reshape, transpose, slice, reverse, pad, concatenate, iota, convert,
 * compare, select and clamp cost no memory traffic. Values are memoised per (instruction,
 * index) within a block so diamonds are computed once. Reducer computations become
 * OpenCL functions of scalars. Integer semantics follow XLA / kiln's evaluator through
 * the preamble's helpers (ocl_types.c); f16/bf16 compute in float and are rounded after
 * every operation. The support check (ocl_instr_supported / ocl_op_supported) says
 * exactly what the generator accepts. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

/* ------------------------------------------------------------------ strings ---- */

typedef struct sb {
  char *p;
  size_t n, cap;
  int oom;
} sb;

static void sb_vf(sb *b, const char *fmt, va_list ap) {
  if (b->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int k = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (k < 0) {
    b->oom = 1;
    return;
  }
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 256;
    while (nc < b->n + (size_t)k + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
  b->n += (size_t)k;
}

static void sbf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbf(sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vf(b, fmt, ap);
  va_end(ap);
}

/* Arena of strings freed with the generator. */
typedef struct arena_blk {
  struct arena_blk *next;
  char data[];
} arena_blk;

/* ------------------------------------------------------------------ state ------ */

typedef struct info {
  int uses;
  int size; /* operations inlined when this value is emitted */
  int materialized;
  int kernel;    /* when materialized */
  int const_idx; /* non-scalar constants: index in plan->consts */
} info;

typedef struct reducer_fn {
  const ocl_comp *comp;
  int dtype;
  char name[24];
} reducer_fn;

typedef struct gen {
  const ocl_module *m;
  const ocl_caps *caps;
  ocl_plan *plan;
  sb src;
  arena_blk *arena;
  reducer_fn *reducers;
  int n_reducers;
  info *infos;
  int code;
  char *err;
  size_t err_cap;
  int tmp;
} gen;

static char *gstr(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *gstr(gen *g, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int k = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (k < 0) k = 0;
  arena_blk *b = malloc(sizeof *b + (size_t)k + 1);
  if (!b) {
    va_end(ap);
    g->code = KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED;
    snprintf(g->err, g->err_cap, "out of memory generating OpenCL source");
    return (char *)"0";
  }
  vsnprintf(b->data, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->next = g->arena;
  g->arena = b;
  return b->data;
}

static void fail(gen *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(gen *g, int code, const char *fmt, ...) {
  if (g->code) return;
  g->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, g->err_cap, fmt, ap);
  va_end(ap);
}

static info *inf(const ocl_instr *ins) { return (info *)ins->user; }

/* Emission context: one kernel body or one reducer function. */
typedef struct memo {
  const ocl_instr *ins;
  char *key;
  char *var;
} memo;

typedef struct ectx {
  gen *g;
  sb *out;
  int depth; /* indentation */
  ocl_kernel_plan *kp; /* NULL in reducer functions */
  int ref_cap;
  int *ref_dtypes;
  const ocl_instr *self;
  const ocl_comp *comp; /* computation whose parameters are bound to variables (reducers) */
  char **param_vars;
  int out_rank;
  const int64_t *out_dims;
  memo *memo;
  int n_memo, memo_cap;
} ectx;

static void line(ectx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(ectx *c, const char *fmt, ...) {
  for (int i = 0; i < c->depth + 1; i++) sbf(c->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  sb_vf(c->out, fmt, ap);
  va_end(ap);
  sbf(c->out, "\n");
}

static char *newvar(ectx *c, int dtype, const char *expr) {
  char *v = gstr(c->g, "t%d", c->g->tmp++);
  line(c, "%s %s = %s;", ocl_compute_type(dtype), v, expr);
  return v;
}

/* ------------------------------------------------------------------ helpers ---- */

static const char *suffix(int dtype) {
  switch (dtype) {
    case KILN_DTYPE_S8: return "s8";
    case KILN_DTYPE_S16: return "s16";
    case KILN_DTYPE_S32: return "s32";
    case KILN_DTYPE_S64: return "s64";
    case KILN_DTYPE_U8: return "u8";
    case KILN_DTYPE_U16: return "u16";
    case KILN_DTYPE_U32: return "u32";
    case KILN_DTYPE_U64: return "u64";
    case KILN_DTYPE_F64: return "f64";
    case KILN_DTYPE_PRED: return "u8";
    default: return "f32";
  }
}

/* Rounds a float result back to the storage precision of f16 / bf16. */
static char *rnd(gen *g, int dtype, const char *e) {
  if (dtype == KILN_DTYPE_F16) return gstr(g, "rh(%s)", e);
  if (dtype == KILN_DTYPE_BF16) return gstr(g, "rbf(%s)", e);
  return gstr(g, "(%s)", e);
}

static char *linear(gen *g, int rank, const int64_t *dims, char **idx) {
  if (rank == 0) return gstr(g, "0");
  char *s = gstr(g, "(%s)", idx[0]);
  for (int k = 1; k < rank; k++) s = gstr(g, "(%s * %lldL + (%s))", s, (long long)dims[k], idx[k]);
  return s;
}

static int same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
  if (ra != rb) return 0;
  for (int i = 0; i < ra; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* Kernel argument name for a buffer reference, adding it on first use. */
static const char *ref_arg(ectx *c, int kind, int index, int dtype, int identity) {
  ocl_kernel_plan *kp = c->kp;
  if (!kp) {
    fail(c->g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "an array operand inside a reducer computation");
    return "b0";
  }
  for (int i = 0; i < kp->n_refs; i++)
    if (kp->refs[i].kind == kind && kp->refs[i].index == index) {
      if (!identity) kp->refs[i].identity = 0;
      return gstr(c->g, "b%d", i);
    }
  if (kp->n_refs == c->ref_cap) {
    int nc = c->ref_cap ? c->ref_cap * 2 : 8;
    ocl_ref *nr = realloc(kp->refs, (size_t)nc * sizeof *nr);
    int *nd = realloc(c->ref_dtypes, (size_t)nc * sizeof *nd);
    if (nr) kp->refs = nr;
    if (nd) c->ref_dtypes = nd;
    if (!nr || !nd) {
      fail(c->g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
      return "b0";
    }
    c->ref_cap = nc;
  }
  kp->refs[kp->n_refs].kind = kind;
  kp->refs[kp->n_refs].index = index;
  kp->refs[kp->n_refs].identity = identity;
  c->ref_dtypes[kp->n_refs] = dtype;
  return gstr(c->g, "b%d", kp->n_refs++);
}

static char *load(ectx *c, int kind, int index, const ocl_shape *s, char **idx) {
  int identity = same_dims(s->rank, s->dims, c->out_rank, c->out_dims);
  for (int k = 0; identity && k < s->rank; k++) {
    char want[16];
    snprintf(want, sizeof want, "i%d", k);
    if (strcmp(idx[k], want)) identity = 0;
  }
  const char *b = ref_arg(c, kind, index, s->dtype, identity);
  char *l = linear(c->g, s->rank, s->dims, idx);
  char *e;
  switch (s->dtype) {
    case KILN_DTYPE_F16: e = gstr(c->g, "h2f(%s[%s])", b, l); break;
    case KILN_DTYPE_BF16: e = gstr(c->g, "bf2f(%s[%s])", b, l); break;
    case KILN_DTYPE_PRED: e = gstr(c->g, "(uchar)(%s[%s] != 0)", b, l); break;
    default: e = gstr(c->g, "%s[%s]", b, l); break;
  }
  return newvar(c, s->dtype, e);
}

static float half_to_float(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) {
    float f = (float)m * 5.9604644775390625e-8f;
    return s ? -f : f;
  }
  if (e == 31) u = s | 0x7f800000u | (m << 13);
  else u = s | ((e + 112u) << 23) | (m << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A scalar literal of dtype from its storage bytes, as an expression of compute type. */
static char *literal(gen *g, int dtype, const void *p) {
  uint64_t u = 0;
  int64_t s = 0;
  switch (dtype) {
    case KILN_DTYPE_PRED: return gstr(g, "(uchar)%d", *(const uint8_t *)p != 0);
    case KILN_DTYPE_S8: s = *(const int8_t *)p; break;
    case KILN_DTYPE_S16: { int16_t v; memcpy(&v, p, 2); s = v; break; }
    case KILN_DTYPE_S32: { int32_t v; memcpy(&v, p, 4); s = v; break; }
    case KILN_DTYPE_S64: memcpy(&s, p, 8); break;
    case KILN_DTYPE_U8: u = *(const uint8_t *)p; break;
    case KILN_DTYPE_U16: { uint16_t v; memcpy(&v, p, 2); u = v; break; }
    case KILN_DTYPE_U32: { uint32_t v; memcpy(&v, p, 4); u = v; break; }
    case KILN_DTYPE_U64: memcpy(&u, p, 8); break;
    case KILN_DTYPE_F16: case KILN_DTYPE_BF16: case KILN_DTYPE_F32: {
      uint32_t bits;
      if (dtype == KILN_DTYPE_F32) memcpy(&bits, p, 4);
      else {
        uint16_t h;
        memcpy(&h, p, 2);
        if (dtype == KILN_DTYPE_BF16) bits = (uint32_t)h << 16;
        else {
          float f = half_to_float(h);
          memcpy(&bits, &f, 4);
        }
      }
      return gstr(g, "as_float(0x%08xu)", bits);
    }
    case KILN_DTYPE_F64: memcpy(&u, p, 8); return gstr(g, "as_double(0x%016llxUL)", (unsigned long long)u);
    default: return gstr(g, "0");
  }
  if (ocl_dtype_is_signed(dtype)) {
    if (s == INT64_MIN) return gstr(g, "((long)(-9223372036854775807L - 1))");
    return gstr(g, "((%s)%lldL)", ocl_compute_type(dtype), (long long)s);
  }
  return gstr(g, "((%s)%lluUL)", ocl_compute_type(dtype), (unsigned long long)u);
}

/* Converts value v (compute type of `from`) to `to`, XLA's rules. */
static char *convert_expr(gen *g, int from, int to, const char *v) {
  const char *T = ocl_compute_type(to);
  if (from == to) return gstr(g, "%s", v);
  if (to == KILN_DTYPE_PRED) return gstr(g, "(uchar)(%s != 0)", v);
  if (ocl_dtype_is_float(to)) {
    if (to == KILN_DTYPE_F64) return gstr(g, "(double)(%s)", v);
    if (to == KILN_DTYPE_F32) return gstr(g, "(float)(%s)", v);
    return rnd(g, to, gstr(g, "(float)(%s)", v));
  }
  /* integer destination */
  if (!ocl_dtype_is_float(from)) return gstr(g, "(%s)(%s)", T, v);
  int bits = ocl_dtype_bits(to), sg = ocl_dtype_is_signed(to);
  double lo = sg ? -ldexp(1.0, bits - 1) : 0.0;
  double hib = sg ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);
  const char *fs = from == KILN_DTYPE_F64 ? "" : "f";
  char *minv, *maxv;
  if (sg) {
    minv = bits == 64 ? gstr(g, "(-9223372036854775807L - 1)") : gstr(g, "(%.0fL)", lo);
    maxv = gstr(g, "%.0fL", hib - 1);
  } else {
    minv = gstr(g, "0");
    maxv = bits == 64 ? gstr(g, "18446744073709551615UL") : gstr(g, "%.0fUL", hib - 1);
  }
  return gstr(g, "(isnan(%s) ? (%s)0 : (%s) <= %.1f%s ? (%s)%s : (%s) >= %.1f%s ? (%s)%s : (%s)(%s))", v, T, v, lo, fs,
              T, minv, v, hib, fs, T, maxv, T, v);
}

/* ------------------------------------------------------------------ opcodes ---- */

enum { M_PRED = 1, M_INT = 2, M_FLOAT = 4, M_ALL = 7, M_NUM = 6, M_LOGIC = 3 };

typedef enum okind { OK_UNARY, OK_BINARY, OK_OTHER } okind;

static const struct opinfo {
  const char *name;
  int mask;
  okind kind;
} ops[] = {
    {"abs", M_ALL, OK_UNARY}, {"negate", M_ALL, OK_UNARY}, {"sign", M_ALL, OK_UNARY}, {"copy", M_ALL, OK_UNARY},
    {"not", M_LOGIC, OK_UNARY}, {"exponential", M_FLOAT, OK_UNARY}, {"exponential-minus-one", M_FLOAT, OK_UNARY},
    {"log", M_FLOAT, OK_UNARY}, {"log-plus-one", M_FLOAT, OK_UNARY}, {"sqrt", M_FLOAT, OK_UNARY},
    {"rsqrt", M_FLOAT, OK_UNARY}, {"cbrt", M_FLOAT, OK_UNARY}, {"tanh", M_FLOAT, OK_UNARY},
    {"logistic", M_FLOAT, OK_UNARY}, {"sine", M_FLOAT, OK_UNARY}, {"cosine", M_FLOAT, OK_UNARY},
    {"tan", M_FLOAT, OK_UNARY}, {"floor", M_FLOAT, OK_UNARY}, {"ceil", M_FLOAT, OK_UNARY},
    {"round-nearest-even", M_FLOAT, OK_UNARY}, {"round-nearest-afz", M_FLOAT, OK_UNARY}, {"erf", M_FLOAT, OK_UNARY},
    {"popcnt", M_INT, OK_UNARY}, {"count-leading-zeros", M_INT, OK_UNARY},
    {"is-finite", M_PRED, OK_OTHER}, /* result pred; operand float (checked apart) */
    {"add", M_ALL, OK_BINARY}, {"subtract", M_ALL, OK_BINARY}, {"multiply", M_ALL, OK_BINARY},
    {"divide", M_ALL, OK_BINARY}, {"remainder", M_ALL, OK_BINARY}, {"maximum", M_ALL, OK_BINARY},
    {"minimum", M_ALL, OK_BINARY}, {"power", M_ALL, OK_BINARY}, {"atan2", M_FLOAT, OK_BINARY},
    {"and", M_LOGIC, OK_BINARY}, {"or", M_LOGIC, OK_BINARY}, {"xor", M_LOGIC, OK_BINARY},
    {"shift-left", M_INT, OK_BINARY}, {"shift-right-logical", M_INT, OK_BINARY},
    {"shift-right-arithmetic", M_INT, OK_BINARY},
    {"compare", M_PRED, OK_OTHER}, {"select", M_ALL, OK_OTHER}, {"clamp", M_ALL, OK_OTHER},
    {"convert", M_ALL, OK_OTHER}, {"reduce", M_ALL, OK_OTHER}, {"reduce-window", M_ALL, OK_OTHER},
    {"dot", M_NUM, OK_OTHER}, {"convolution", M_NUM, OK_OTHER}, {"broadcast", M_ALL, OK_OTHER},
    {"reshape", M_ALL, OK_OTHER}, {"bitcast", M_ALL, OK_OTHER}, {"transpose", M_ALL, OK_OTHER},
    {"slice", M_ALL, OK_OTHER}, {"concatenate", M_ALL, OK_OTHER}, {"reverse", M_ALL, OK_OTHER},
    {"pad", M_ALL, OK_OTHER}, {"iota", M_NUM, OK_OTHER}, {"tuple", M_ALL, OK_OTHER},
    {"get-tuple-element", M_ALL, OK_OTHER}, {"constant", M_ALL, OK_OTHER}, {"parameter", M_ALL, OK_OTHER},
    {"gather", M_ALL, OK_OTHER}, {"dynamic-slice", M_ALL, OK_OTHER}, {"dynamic-update-slice", M_ALL, OK_OTHER},
    {"reduce-precision", M_FLOAT, OK_OTHER}, {"bitcast-convert", M_NUM, OK_OTHER},
};
#define N_OPS ((int)(sizeof ops / sizeof ops[0]))

static const struct opinfo *find_op(const char *name) {
  for (int i = 0; i < N_OPS; i++)
    if (!strcmp(ops[i].name, name)) return &ops[i];
  return NULL;
}

static int type_mask(int dtype) {
  if (dtype == KILN_DTYPE_PRED) return M_PRED;
  if (ocl_dtype_is_int(dtype)) return M_INT;
  if (ocl_dtype_is_float(dtype)) return M_FLOAT;
  return 0;
}

static int dtype_ok(int dtype, const ocl_caps *caps) {
  if (!ocl_dtype_name(dtype)) return 0;
  if (dtype == KILN_DTYPE_F64 && !caps->has_fp64) return 0;
  return 1;
}

int ocl_op_supported(const char *opcode, int dtype, const ocl_caps *caps) {
  const struct opinfo *o = find_op(opcode);
  if (!o) return 0;
  if (dtype == 0)
    return !strcmp(opcode, "tuple") || !strcmp(opcode, "get-tuple-element") || !strcmp(opcode, "parameter") ||
           !strcmp(opcode, "reduce");
  if (!dtype_ok(dtype, caps)) return 0;
  if (!strcmp(opcode, "compare") || !strcmp(opcode, "is-finite")) return dtype == KILN_DTYPE_PRED;
  return (o->mask & type_mask(dtype)) != 0;
}

static int shape_ok(const ocl_shape *s, const ocl_caps *caps) {
  if (s->dtype == 0) {
    for (int i = 0; i < s->n_elems; i++)
      if (!shape_ok(&s->elems[i], caps)) return 0;
    return 1;
  }
  return dtype_ok(s->dtype, caps);
}

static int is_scalar_comp_ok(const ocl_comp *comp, int n, const ocl_caps *caps, char *why, size_t cap);
static int same_dims(int ra, const int64_t *a, int rb, const int64_t *b);

/* compare's direction: XLA prints direction=LT (comparison_direction in older text). */
static const char *direction_of(const ocl_instr *ins) {
  const char *d = ocl_attr(ins, "direction");
  return d ? d : ocl_attr(ins, "comparison_direction");
}

int ocl_instr_supported(const ocl_instr *ins, const ocl_caps *caps, char *why, size_t why_cap) {
  const char *op = ins->opcode;
  int dt = ins->shape.dtype;
#define NO(...) do { snprintf(why, why_cap, __VA_ARGS__); return 0; } while (0)
  const struct opinfo *o = find_op(op);
  if (!o) NO("%s: opcode '%s' is not implemented by the OpenCL plugin", ins->name, op);
  if (!shape_ok(&ins->shape, caps)) NO("%s: %s of this element type is not supported on this device%s", ins->name, op,
                                       caps->has_fp64 ? "" : " (no cl_khr_fp64)");
  for (int i = 0; i < ins->n_operands; i++)
    if (!shape_ok(&ins->operands[i]->shape, caps))
      NO("%s: an operand's element type is not supported on this device", ins->name);
  if (dt == 0 && strcmp(op, "tuple") && strcmp(op, "get-tuple-element") && strcmp(op, "parameter") && strcmp(op, "reduce"))
    NO("%s: tuple-shaped %s (variadic form) is not supported", ins->name, op);
  if (dt == OCL_DTYPE_TOKEN) NO("%s: tokens are not supported", ins->name);
  if (dt && !ocl_op_supported(op, dt, caps)) NO("%s: %s is not defined for %s here", ins->name, op, ocl_dtype_name(dt));
  if (o->kind != OK_OTHER)
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype != dt) NO("%s: mixed element types", ins->name);
  if (!strcmp(op, "is-finite") && (ins->n_operands != 1 || !ocl_dtype_is_float(ins->operands[0]->shape.dtype)))
    NO("%s: is-finite needs a float operand", ins->name);
  if (!strcmp(op, "compare")) {
    const char *d = direction_of(ins);
    if (!d || (strcmp(d, "EQ") && strcmp(d, "NE") && strcmp(d, "LT") && strcmp(d, "LE") && strcmp(d, "GT") && strcmp(d, "GE")))
      NO("%s: compare without a known comparison_direction", ins->name);
    if (ins->n_operands != 2 || ins->operands[0]->shape.dtype != ins->operands[1]->shape.dtype)
      NO("%s: compare of mixed types", ins->name);
  }
  if (!strcmp(op, "dot") || !strcmp(op, "convolution")) {
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype == KILN_DTYPE_PRED) NO("%s: %s of pred operands", ins->name, op);
    const char *bg = ocl_attr(ins, "batch_group_count");
    if (bg && strcmp(bg, "1")) NO("%s: batch_group_count > 1 is not supported", ins->name);
    if (ins->n_operands != 2) NO("%s: %s needs two operands", ins->name, op);
  }
  if (!strcmp(op, "reduce-window")) {
    if (ins->n_operands != 2 || ins->n_called != 1) NO("%s: only single-input %s is supported", ins->name, op);
    if (!is_scalar_comp_ok(ins->called[0], 1, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "reduce")) {
    int n = ins->n_operands / 2;
    if (ins->n_operands % 2 || n < 1 || ins->n_called != 1) NO("%s: malformed reduce", ins->name);
    if (n > 1) {
      if (dt != 0 || ins->shape.n_elems != n) NO("%s: variadic reduce must have a tuple of %d arrays", ins->name, n);
      for (int k = 0; k < n; k++)
        if (ins->shape.elems[k].dtype == 0 || ins->shape.elems[k].dtype != ins->operands[k]->shape.dtype ||
            !same_dims(ins->shape.elems[k].rank, ins->shape.elems[k].dims, ins->shape.elems[0].rank, ins->shape.elems[0].dims) ||
            !same_dims(ins->operands[k]->shape.rank, ins->operands[k]->shape.dims, ins->operands[0]->shape.rank,
                       ins->operands[0]->shape.dims))
          NO("%s: variadic reduce with mismatched inputs", ins->name);
    } else if (dt == 0) {
      NO("%s: tuple-shaped single-input reduce", ins->name);
    }
    if (!is_scalar_comp_ok(ins->called[0], n, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "get-tuple-element")) {
    if (ins->n_operands != 1 || (strcmp(ins->operands[0]->opcode, "tuple") && strcmp(ins->operands[0]->opcode, "reduce")))
      NO("%s: get-tuple-element of something other than a tuple or a variadic reduce", ins->name);
  }
  if (!strcmp(op, "gather")) {
    if (ins->n_operands != 2 || !ocl_dtype_is_int(ins->operands[1]->shape.dtype))
      NO("%s: gather needs integer start indices", ins->name);
  }
  if (!strcmp(op, "dynamic-slice") || !strcmp(op, "dynamic-update-slice")) {
    int first = !strcmp(op, "dynamic-slice") ? 1 : 2;
    if (ins->n_operands < first || ins->n_operands - first != ins->operands[0]->shape.rank)
      NO("%s: %s needs one scalar start per dimension", ins->name, op);
    for (int i = first; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.rank != 0 || !ocl_dtype_is_int(ins->operands[i]->shape.dtype))
        NO("%s: %s starts must be integer scalars", ins->name, op);
  }
  if (!strcmp(op, "bitcast-convert")) {
    if (ins->n_operands != 1 || type_mask(ins->operands[0]->shape.dtype) == M_PRED ||
        ocl_dtype_bits(ins->operands[0]->shape.dtype) != ocl_dtype_bits(dt))
      NO("%s: bitcast-convert between different widths is not supported", ins->name);
  }
  if (!strcmp(op, "reduce-precision")) {
    const char *e = ocl_attr(ins, "exponent_bits"), *m = ocl_attr(ins, "mantissa_bits");
    if (!e || !m || atoi(e) < 1 || atoi(m) < 0 || ins->n_operands != 1 || ins->operands[0]->shape.dtype != dt)
      NO("%s: reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0", ins->name);
  }
  if (!strcmp(op, "bitcast") && (ins->n_operands != 1 || ins->operands[0]->shape.dtype != dt))
    NO("%s: bitcast changing the element type", ins->name);
  if (!strcmp(op, "tuple"))
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype == 0) NO("%s: nested tuples are not supported", ins->name);
  return 1;
#undef NO
}

/* A reducer of n accumulators: 2n scalar parameters, scalar elementwise instructions,
 * the root a scalar (n = 1) or a tuple of n scalars. */
static int is_scalar_comp_ok(const ocl_comp *comp, int n, const ocl_caps *caps, char *why, size_t cap) {
  if (!comp || comp->n_params != 2 * n || !comp->root) {
    snprintf(why, cap, "reducer computation must take %d scalars", 2 * n);
    return 0;
  }
  for (int k = 0; k < 2 * n; k++)
    if (!comp->params[k] || comp->params[k]->shape.dtype != comp->params[k % n]->shape.dtype) {
      snprintf(why, cap, "reducer %s: accumulator and value types differ", comp->name);
      return 0;
    }
  if (n > 1) {
    const ocl_instr *r = comp->root;
    if (strcmp(r->opcode, "tuple") || r->n_operands != n) {
      snprintf(why, cap, "reducer %s: root must be a tuple of %d scalars", comp->name, n);
      return 0;
    }
    for (int k = 0; k < n; k++)
      if (r->operands[k]->shape.dtype != comp->params[k]->shape.dtype || r->operands[k]->shape.rank != 0 ||
          !strcmp(r->operands[k]->opcode, "tuple")) {
        snprintf(why, cap, "reducer %s: result %d does not match its accumulator", comp->name, k);
        return 0;
      }
  }
  for (int i = 0; i < comp->n_instrs; i++) {
    const ocl_instr *x = comp->instrs[i];
    if (n > 1 && x == comp->root) continue;
    if (x->shape.dtype == 0 || x->shape.rank != 0) {
      snprintf(why, cap, "reducer %s: %s is not scalar", comp->name, x->name);
      return 0;
    }
    const char *op = x->opcode;
    if (!strcmp(op, "reduce") || !strcmp(op, "reduce-window") || !strcmp(op, "dot") || !strcmp(op, "convolution") ||
        !strcmp(op, "tuple") || !strcmp(op, "get-tuple-element") || !strcmp(op, "iota")) {
      snprintf(why, cap, "reducer %s: %s is not allowed in a reducer", comp->name, op);
      return 0;
    }
    if (!ocl_instr_supported(x, caps, why, cap)) return 0;
  }
  if (n == 1 && comp->root->shape.dtype != comp->params[0]->shape.dtype) {
    snprintf(why, cap, "reducer %s: result type differs from the accumulator", comp->name);
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ emitter ---- */

static char *emit(ectx *c, const ocl_instr *ins, char **idx);

static char **idxv(gen *g, int n) {
  arena_blk *b = calloc(1, sizeof *b + sizeof(char *) * (size_t)(n ? n : 1));
  if (!b) {
    fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory generating OpenCL source");
    static char *dummy[OCL_MAX_RANK];
    return dummy;
  }
  b->next = g->arena;
  g->arena = b;
  return (char **)(void *)b->data;
}

static char *unary_expr(gen *g, const char *op, int dt, const char *a) {
  const char *S = suffix(dt);
  if (dt == KILN_DTYPE_PRED) {
    if (!strcmp(op, "not")) return gstr(g, "(uchar)(%s == 0)", a);
    return gstr(g, "%s", a);
  }
  if (ocl_dtype_is_int(dt)) {
    const char *T = ocl_compute_type(dt);
    if (!strcmp(op, "abs")) return gstr(g, "abs_%s(%s)", S, a);
    if (!strcmp(op, "negate")) return gstr(g, "neg_%s(%s)", S, a);
    if (!strcmp(op, "sign")) return gstr(g, "sign_%s(%s)", S, a);
    if (!strcmp(op, "not")) return gstr(g, "(%s)(~%s)", T, a);
    if (!strcmp(op, "popcnt")) return gstr(g, "popcnt_%s(%s)", S, a);
    if (!strcmp(op, "count-leading-zeros")) return gstr(g, "clz_%s(%s)", S, a);
    return gstr(g, "%s", a); /* copy */
  }
  const char *one = dt == KILN_DTYPE_F64 ? "1.0" : "1.0f";
  const char *f = NULL;
  char *e;
  if (!strcmp(op, "abs")) f = "fabs";
  else if (!strcmp(op, "exponential")) f = "exp";
  else if (!strcmp(op, "exponential-minus-one")) f = "expm1";
  else if (!strcmp(op, "log")) f = "log";
  else if (!strcmp(op, "log-plus-one")) f = "log1p";
  else if (!strcmp(op, "sqrt")) f = "sqrt";
  else if (!strcmp(op, "cbrt")) f = "cbrt";
  else if (!strcmp(op, "tanh")) f = "tanh";
  else if (!strcmp(op, "sine")) f = "sin";
  else if (!strcmp(op, "cosine")) f = "cos";
  else if (!strcmp(op, "tan")) f = "tan";
  else if (!strcmp(op, "floor")) f = "floor";
  else if (!strcmp(op, "ceil")) f = "ceil";
  else if (!strcmp(op, "round-nearest-even")) f = "rint";
  else if (!strcmp(op, "round-nearest-afz")) f = "round";
  else if (!strcmp(op, "erf")) f = "erf";
  else if (!strcmp(op, "sign")) f = dt == KILN_DTYPE_F64 ? "sign_f64" : "sign_f32";
  if (f) e = gstr(g, "%s(%s)", f, a);
  else if (!strcmp(op, "negate")) e = gstr(g, "-%s", a);
  else if (!strcmp(op, "rsqrt")) e = gstr(g, "%s / sqrt(%s)", one, a);
  else if (!strcmp(op, "logistic")) e = gstr(g, "%s / (%s + exp(-%s))", one, one, a);
  else e = gstr(g, "%s", a); /* copy */
  return rnd(g, dt, e);
}

static char *binary_expr(gen *g, const char *op, int dt, const char *a, const char *b) {
  const char *S = suffix(dt);
  if (dt == KILN_DTYPE_PRED) {
    if (!strcmp(op, "and") || !strcmp(op, "minimum") || !strcmp(op, "multiply")) return gstr(g, "(uchar)(%s & %s)", a, b);
    if (!strcmp(op, "or") || !strcmp(op, "maximum") || !strcmp(op, "add")) return gstr(g, "(uchar)(%s | %s)", a, b);
    if (!strcmp(op, "xor") || !strcmp(op, "subtract")) return gstr(g, "(uchar)(%s ^ %s)", a, b);
    if (!strcmp(op, "divide")) return gstr(g, "(uchar)(%s ? %s : 1)", b, a);
    if (!strcmp(op, "remainder")) return gstr(g, "(uchar)(%s ? 0 : %s)", b, a);
    if (!strcmp(op, "power")) return gstr(g, "(uchar)(%s | !%s)", a, b);
    return NULL;
  }
  if (ocl_dtype_is_int(dt)) {
    const char *T = ocl_compute_type(dt);
    static const char *const names[][2] = {
        {"add", "add"}, {"subtract", "sub"}, {"multiply", "mul"}, {"divide", "div"}, {"remainder", "rem"},
        {"power", "pow"}, {"maximum", "max"}, {"minimum", "min"}, {"shift-left", "shl"},
        {"shift-right-logical", "shrl"}, {"shift-right-arithmetic", "shra"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (!strcmp(op, names[i][0])) return gstr(g, "%s_%s(%s, %s)", names[i][1], S, a, b);
    if (!strcmp(op, "and")) return gstr(g, "(%s)(%s & %s)", T, a, b);
    if (!strcmp(op, "or")) return gstr(g, "(%s)(%s | %s)", T, a, b);
    if (!strcmp(op, "xor")) return gstr(g, "(%s)(%s ^ %s)", T, a, b);
    return NULL;
  }
  char *e;
  if (!strcmp(op, "add")) e = gstr(g, "%s + %s", a, b);
  else if (!strcmp(op, "subtract")) e = gstr(g, "%s - %s", a, b);
  else if (!strcmp(op, "multiply")) e = gstr(g, "%s * %s", a, b);
  else if (!strcmp(op, "divide")) e = gstr(g, "%s / %s", a, b);
  else if (!strcmp(op, "maximum")) e = gstr(g, "max_%s(%s, %s)", S, a, b);
  else if (!strcmp(op, "minimum")) e = gstr(g, "min_%s(%s, %s)", S, a, b);
  else if (!strcmp(op, "power")) e = gstr(g, "pow(%s, %s)", a, b);
  else if (!strcmp(op, "remainder")) e = gstr(g, "fmod(%s, %s)", a, b);
  else if (!strcmp(op, "atan2")) e = gstr(g, "atan2(%s, %s)", a, b);
  else return NULL;
  return rnd(g, dt, e);
}

/* Block scoping of the memo table: values computed inside a block die with it. */
static int memo_mark(ectx *c) { return c->n_memo; }
static void memo_reset(ectx *c, int mark) { c->n_memo = mark; }

static char *memo_key(gen *g, const ocl_instr *ins, char **idx) {
  char *k = gstr(g, "%p", (const void *)ins);
  for (int i = 0; i < ins->shape.rank; i++) k = gstr(g, "%s|%s", k, idx[i]);
  return k;
}

static char *emit_reducer_call(ectx *c, const ocl_comp *comp, int dtype, const char *acc, const char *v);

/* A block `if (cond) {...}` helper pair. */
static void open_block(ectx *c, const char *head) {
  line(c, "%s {", head);
  c->depth++;
}
static void close_block(ectx *c, const char *tail) {
  c->depth--;
  line(c, "}%s", tail ? tail : "");
}

/* An index value (any integer type) as a long, unsigned 64-bit values saturating. */
static char *index_value(ectx *c, const ocl_instr *x, char **idx) {
  char *v = emit(c, x, idx);
  char *l = gstr(c->g, "l%d", c->g->tmp++);
  if (x->shape.dtype == KILN_DTYPE_U64)
    line(c, "long %s = %s > 9223372036854775807UL ? 9223372036854775807L : (long)%s;", l, v, v);
  else
    line(c, "long %s = (long)%s;", l, v);
  return l;
}

static int in_list(const int64_t *v, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

static int int_attr_list(const ocl_instr *ins, const char *key, int64_t *out) {
  const char *a = ocl_attr(ins, key);
  return a ? ocl_parse_int_list(a, out, OCL_MAX_RANK) : 0;
}

static char *emit_gather(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0], *ix = ins->operands[1];
  int64_t od[OCL_MAX_RANK], cd[OCL_MAX_RANK], sm[OCL_MAX_RANK], ss[OCL_MAX_RANK], ob[OCL_MAX_RANK], sbd[OCL_MAX_RANK];
  int nod = int_attr_list(ins, "offset_dims", od), ncd = int_attr_list(ins, "collapsed_slice_dims", cd);
  int nsm = int_attr_list(ins, "start_index_map", sm), nss = int_attr_list(ins, "slice_sizes", ss);
  int nob = int_attr_list(ins, "operand_batching_dims", ob), nsb = int_attr_list(ins, "start_indices_batching_dims", sbd);
  const char *iv = ocl_attr(ins, "index_vector_dim");
  int xr = x->shape.rank, ir = ix->shape.rank, orank = ins->shape.rank;
  int ivd = iv ? atoi(iv) : ir;
  if (nod < 0 || ncd < 0 || nsm < 0 || nss != xr || nob < 0 || nsb != nob || ivd < 0 || ivd > ir ||
      nod + ncd + nob != xr) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad gather dimension numbers", ins->name);
    return "0";
  }
  /* Output batch dimensions pair with the start indices' dimensions other than ivd. */
  int bpos[OCL_MAX_RANK], nb = 0, sdims[OCL_MAX_RANK], ns = 0;
  for (int d = 0; d < orank; d++)
    if (in_list(od, nod, d) < 0) bpos[nb++] = d;
  for (int d = 0; d < ir; d++)
    if (d != ivd) sdims[ns++] = d;
  if (nb != ns) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: gather batch dimensions do not match the indices", ins->name);
    return "0";
  }
  char **iidx = idxv(g, ir + 1);
  for (int j = 0; j < ns; j++) iidx[sdims[j]] = idx[bpos[j]];
  char **oi = idxv(g, xr);
  for (int d = 0; d < xr; d++) oi[d] = gstr(g, "0L");
  for (int k = 0; k < nsm; k++) {
    if (sm[k] < 0 || sm[k] >= xr) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad start_index_map", ins->name);
      return "0";
    }
    if (ivd < ir) iidx[ivd] = gstr(g, "%dL", k);
    char *v = index_value(c, ix, iidx);
    oi[sm[k]] = gstr(g, "clamp_s64(0L, %s, %lldL)", v, (long long)(x->shape.dims[sm[k]] - ss[sm[k]]));
  }
  for (int j = 0; j < nob; j++) {
    int p = -1;
    for (int q = 0; q < ns; q++)
      if (sdims[q] == sbd[j]) p = q;
    if (p < 0 || ob[j] < 0 || ob[j] >= xr) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad batching dims", ins->name);
      return "0";
    }
    oi[ob[j]] = idx[bpos[p]];
  }
  int k = 0;
  for (int d = 0; d < xr; d++) {
    if (in_list(cd, ncd, d) >= 0 || in_list(ob, nob, d) >= 0) continue;
    if (k >= nod) break;
    oi[d] = gstr(g, "(%s + %s)", oi[d], idx[od[k++]]);
  }
  return emit(c, x, oi);
}

static char *emit_dynamic(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0];
  int upd = !strcmp(ins->opcode, "dynamic-update-slice");
  int rank = x->shape.rank, first = upd ? 2 : 1;
  int64_t sizes[OCL_MAX_RANK];
  if (upd) {
    memcpy(sizes, ins->operands[1]->shape.dims, sizeof sizes);
  } else if (int_attr_list(ins, "dynamic_slice_sizes", sizes) != rank) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dynamic_slice_sizes", ins->name);
    return "0";
  }
  char *st[OCL_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    char *v = index_value(c, ins->operands[first + d], NULL);
    st[d] = gstr(g, "s%d", g->tmp++);
    line(c, "long %s = clamp_s64(0L, %s, %lldL);", st[d], v, (long long)(x->shape.dims[d] - sizes[d]));
  }
  char **oi = idxv(g, rank);
  if (!upd) {
    for (int d = 0; d < rank; d++) oi[d] = gstr(g, "(%s + %s)", idx[d], st[d]);
    return emit(c, x, oi);
  }
  char *cond = gstr(g, "1");
  for (int d = 0; d < rank; d++) {
    oi[d] = gstr(g, "(%s - %s)", idx[d], st[d]);
    cond = gstr(g, "%s && %s >= 0 && %s < %lldL", cond, oi[d], oi[d], (long long)sizes[d]);
  }
  char *r = gstr(g, "t%d", g->tmp++);
  line(c, "%s %s;", ocl_compute_type(ins->shape.dtype), r);
  int mk = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *v = emit(c, ins->operands[1], oi);
  line(c, "%s = %s;", r, v);
  memo_reset(c, mk);
  close_block(c, NULL);
  open_block(c, "else");
  v = emit(c, x, idx);
  line(c, "%s = %s;", r, v);
  memo_reset(c, mk);
  close_block(c, NULL);
  return r;
}

static char *emit_uncached(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const char *op = ins->opcode;
  const int dt = ins->shape.dtype, rank = ins->shape.rank;
  const int64_t *dims = ins->shape.dims;
  const struct opinfo *o = find_op(op);
  info *in = c->comp ? NULL : inf(ins);

  if (in && in->materialized && ins != c->self) return load(c, OCL_REF_TEMP, in->kernel, &ins->shape, idx);
  if (!strcmp(op, "parameter")) {
    if (c->comp) return c->param_vars[ins->parameter_number];
    return load(c, OCL_REF_PARAM, (int)ins->parameter_number, &ins->shape, idx);
  }
  if (!strcmp(op, "constant")) {
    if (!ins->literal) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: constant without a value", ins->name);
      return "0";
    }
    if (ocl_shape_elems(&ins->shape) == 1 && (rank == 0 || !in || in->const_idx < 0))
      return literal(g, dt, ins->literal);
    if (!in) {
      fail(g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "%s: array constant inside a reducer", ins->name);
      return "0";
    }
    return load(c, OCL_REF_CONST, in->const_idx, &ins->shape, idx);
  }
  if (o && o->kind == OK_UNARY) {
    char *a = emit(c, ins->operands[0], idx);
    return newvar(c, dt, unary_expr(g, op, dt, a));
  }
  if (o && o->kind == OK_BINARY) {
    char *a = emit(c, ins->operands[0], idx);
    char *b = emit(c, ins->operands[1], idx);
    char *e = binary_expr(g, op, dt, a, b);
    if (!e) {
      fail(g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "%s: %s of %s", ins->name, op, ocl_dtype_name(dt));
      return "0";
    }
    return newvar(c, dt, e);
  }
  if (!strcmp(op, "is-finite")) {
    char *a = emit(c, ins->operands[0], idx);
    return newvar(c, dt, gstr(g, "(uchar)(isfinite(%s) != 0)", a));
  }
  if (!strcmp(op, "compare")) {
    int ot = ins->operands[0]->shape.dtype;
    char *a = emit(c, ins->operands[0], idx);
    char *b = emit(c, ins->operands[1], idx);
    const char *d = direction_of(ins);
    const char *sym = !strcmp(d, "EQ") ? "==" : !strcmp(d, "NE") ? "!=" : !strcmp(d, "LT") ? "<"
                      : !strcmp(d, "LE") ? "<=" : !strcmp(d, "GT") ? ">" : ">=";
    const char *ty = ocl_attr(ins, "type");
    if (ty && !strcmp(ty, "TOTALORDER") && ocl_dtype_is_float(ot)) {
      const char *k = ot == KILN_DTYPE_F64 ? "tkey64" : "tkey32";
      return newvar(c, dt, gstr(g, "(uchar)(%s(%s) %s %s(%s))", k, a, sym, k, b));
    }
    return newvar(c, dt, gstr(g, "(uchar)(%s %s %s)", a, sym, b));
  }
  if (!strcmp(op, "select")) {
    char *p = emit(c, ins->operands[0], ins->operands[0]->shape.rank ? idx : NULL);
    char *a = emit(c, ins->operands[1], idx);
    char *b = emit(c, ins->operands[2], idx);
    return newvar(c, dt, gstr(g, "(%s ? %s : %s)", p, a, b));
  }
  if (!strcmp(op, "clamp")) {
    char *v[3];
    for (int k = 0; k < 3; k++) v[k] = emit(c, ins->operands[k], ins->operands[k]->shape.rank ? idx : NULL);
    return newvar(c, dt, gstr(g, "clamp_%s(%s, %s, %s)", suffix(dt), v[0], v[1], v[2]));
  }
  if (!strcmp(op, "convert")) {
    int from = ins->operands[0]->shape.dtype;
    char *a = emit(c, ins->operands[0], idx);
    return newvar(c, dt, convert_expr(g, from, dt, a));
  }
  if (!strcmp(op, "broadcast")) {
    const ocl_instr *x = ins->operands[0];
    int64_t bd[OCL_MAX_RANK];
    int n = ocl_parse_int_list(ocl_attr(ins, "dimensions") ? ocl_attr(ins, "dimensions") : "{}", bd, OCL_MAX_RANK);
    if (n != x->shape.rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: broadcast dimensions do not match the operand", ins->name);
      return "0";
    }
    char **oi = idxv(g, n);
    for (int k = 0; k < n; k++) {
      if (bd[k] < 0 || bd[k] >= rank) {
        fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: broadcast dimension out of range", ins->name);
        return "0";
      }
      oi[k] = idx[bd[k]];
    }
    return emit(c, x, oi);
  }
  if (!strcmp(op, "transpose")) {
    const ocl_instr *x = ins->operands[0];
    int64_t p[OCL_MAX_RANK];
    int n = ocl_parse_int_list(ocl_attr(ins, "dimensions") ? ocl_attr(ins, "dimensions") : "{}", p, OCL_MAX_RANK);
    if (n != rank || x->shape.rank != rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad transpose permutation", ins->name);
      return "0";
    }
    char **oi = idxv(g, n);
    for (int k = 0; k < n; k++) {
      if (p[k] < 0 || p[k] >= rank) {
        fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad transpose permutation", ins->name);
        return "0";
      }
      oi[p[k]] = idx[k];
    }
    return emit(c, x, oi);
  }
  if (!strcmp(op, "reshape") || !strcmp(op, "bitcast")) {
    const ocl_instr *x = ins->operands[0];
    if (same_dims(rank, dims, x->shape.rank, x->shape.dims)) return emit(c, x, idx);
    char *l = gstr(g, "l%d", g->tmp++);
    line(c, "long %s = %s;", l, linear(g, rank, dims, idx));
    int xr = x->shape.rank;
    char **oi = idxv(g, xr);
    int64_t stride = 1;
    for (int k = xr - 1; k >= 0; k--) {
      oi[k] = gstr(g, "(%s / %lldL %% %lldL)", l, (long long)stride, (long long)(x->shape.dims[k] ? x->shape.dims[k] : 1));
      stride *= x->shape.dims[k] ? x->shape.dims[k] : 1;
    }
    return emit(c, x, oi);
  }
  if (!strcmp(op, "slice")) {
    int64_t st[OCL_MAX_RANK], li[OCL_MAX_RANK], sd[OCL_MAX_RANK];
    const char *a = ocl_attr(ins, "slice");
    int n = a ? ocl_parse_slice(a, st, li, sd, OCL_MAX_RANK) : -1;
    if (n != rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad slice attribute", ins->name);
      return "0";
    }
    char **oi = idxv(g, n);
    for (int k = 0; k < n; k++) oi[k] = gstr(g, "(%lldL + (%s) * %lldL)", (long long)st[k], idx[k], (long long)sd[k]);
    return emit(c, ins->operands[0], oi);
  }
  if (!strcmp(op, "reverse")) {
    int64_t rd[OCL_MAX_RANK];
    int n = ocl_parse_int_list(ocl_attr(ins, "dimensions") ? ocl_attr(ins, "dimensions") : "{}", rd, OCL_MAX_RANK);
    char **oi = idxv(g, rank);
    for (int k = 0; k < rank; k++) oi[k] = idx[k];
    for (int j = 0; j < n; j++) {
      if (rd[j] < 0 || rd[j] >= rank) {
        fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reverse dimension", ins->name);
        return "0";
      }
      oi[rd[j]] = gstr(g, "(%lldL - (%s))", (long long)(dims[rd[j]] - 1), idx[rd[j]]);
    }
    return emit(c, ins->operands[0], oi);
  }
  if (!strcmp(op, "iota")) {
    int d = (int)ins->int_payload;
    if (d < 0 || d >= rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad iota_dimension", ins->name);
      return "0";
    }
    return newvar(c, dt, convert_expr(g, KILN_DTYPE_S64, dt, idx[d]));
  }
  if (!strcmp(op, "get-tuple-element")) {
    const ocl_instr *t = ins->operands[0];
    if (strcmp(t->opcode, "tuple") || ins->int_payload < 0 || ins->int_payload >= t->n_operands) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: tuple index out of range", ins->name);
      return "0";
    }
    return emit(c, t->operands[ins->int_payload], idx);
  }
  if (!strcmp(op, "pad")) {
    const ocl_instr *x = ins->operands[0];
    ocl_pad_dim pd[OCL_MAX_RANK];
    const char *a = ocl_attr(ins, "padding");
    int n = a ? ocl_parse_padding(a, pd, OCL_MAX_RANK) : -1;
    if (n != rank || x->shape.rank != rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad padding attribute", ins->name);
      return "0";
    }
    char *r = gstr(g, "t%d", g->tmp++);
    line(c, "%s %s;", ocl_compute_type(dt), r);
    char *cond = gstr(g, "1");
    char **oi = idxv(g, rank);
    for (int k = 0; k < rank; k++) {
      char *t = gstr(g, "((%s) - (%lldL))", idx[k], (long long)pd[k].lo);
      long long step = (long long)pd[k].interior + 1;
      if (step == 1) {
        cond = gstr(g, "%s && %s >= 0 && %s < %lldL", cond, t, t, (long long)x->shape.dims[k]);
        oi[k] = t;
      } else {
        cond = gstr(g, "%s && %s >= 0 && %s %% %lld == 0 && %s / %lld < %lldL", cond, t, t, step, t, step,
                    (long long)x->shape.dims[k]);
        oi[k] = gstr(g, "(%s / %lld)", t, step);
      }
    }
    int mk = memo_mark(c);
    open_block(c, gstr(g, "if (%s)", cond));
    char *v = emit(c, x, oi);
    line(c, "%s = %s;", r, v);
    memo_reset(c, mk);
    close_block(c, NULL);
    open_block(c, "else");
    v = emit(c, ins->operands[1], NULL);
    line(c, "%s = %s;", r, v);
    memo_reset(c, mk);
    close_block(c, NULL);
    return r;
  }
  if (!strcmp(op, "concatenate")) {
    int d = (int)ins->int_payload;
    if (d < 0 || d >= rank) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad concatenate dimension", ins->name);
      return "0";
    }
    char *r = gstr(g, "t%d", g->tmp++);
    line(c, "%s %s;", ocl_compute_type(dt), r);
    int64_t off = 0;
    int mk = memo_mark(c);
    for (int j = 0; j < ins->n_operands; j++) {
      const ocl_instr *x = ins->operands[j];
      int64_t end = off + x->shape.dims[d];
      char **oi = idxv(g, rank);
      for (int k = 0; k < rank; k++) oi[k] = idx[k];
      oi[d] = gstr(g, "((%s) - %lldL)", idx[d], (long long)off);
      if (j == ins->n_operands - 1) open_block(c, j ? "else" : "");
      else open_block(c, gstr(g, "%sif ((%s) < %lldL)", j ? "else " : "", idx[d], (long long)end));
      char *v = emit(c, x, oi);
      line(c, "%s = %s;", r, v);
      memo_reset(c, mk);
      close_block(c, NULL);
      off = end;
    }
    return r;
  }
  if (!strcmp(op, "gather")) return emit_gather(c, ins, idx);
  if (!strcmp(op, "bitcast-convert")) {
    int from = ins->operands[0]->shape.dtype, bits = ocl_dtype_bits(dt);
    char *a = emit(c, ins->operands[0], idx);
    const char *U = bits == 8 ? "uchar" : bits == 16 ? "ushort" : bits == 32 ? "uint" : "ulong";
    char *b;
    switch (from) {
      case KILN_DTYPE_F16: b = gstr(g, "f2h(%s)", a); break;
      case KILN_DTYPE_BF16: b = gstr(g, "f2bf(%s)", a); break;
      case KILN_DTYPE_F32: b = gstr(g, "as_uint(%s)", a); break;
      case KILN_DTYPE_F64: b = gstr(g, "as_ulong(%s)", a); break;
      default: b = gstr(g, "(%s)%s", U, a); break;
    }
    char *e;
    switch (dt) {
      case KILN_DTYPE_F16: e = gstr(g, "h2f(%s)", b); break;
      case KILN_DTYPE_BF16: e = gstr(g, "bf2f(%s)", b); break;
      case KILN_DTYPE_F32: e = gstr(g, "as_float(%s)", b); break;
      case KILN_DTYPE_F64: e = gstr(g, "as_double(%s)", b); break;
      default: e = gstr(g, "(%s)%s", ocl_compute_type(dt), b); break;
    }
    return newvar(c, dt, e);
  }
  if (!strcmp(op, "reduce-precision")) {
    int eb = atoi(ocl_attr(ins, "exponent_bits")), mb = atoi(ocl_attr(ins, "mantissa_bits"));
    char *a = emit(c, ins->operands[0], idx);
    int d64 = dt == KILN_DTYPE_F64;
    int MB = d64 ? 52 : 23, EB = d64 ? 11 : 8;
    const char *UT = d64 ? "ulong" : "uint", *one = d64 ? "1UL" : "1U";
    char *u = gstr(g, "u%d", g->tmp++);
    line(c, "%s %s = %s(%s);", UT, u, d64 ? "as_ulong" : "as_uint", a);
    if (mb < MB) {
      line(c, "{ %s lb = %s << %d; %s bias = (lb >> 1) - 1 + ((%s & lb) >> %d); %s = (%s + bias) & ~(lb - 1); }", UT, one,
           MB - mb, UT, u, MB - mb, u, u);
    }
    if (eb < EB) {
      unsigned long long src_bias = (1ULL << (EB - 1)) - 1, red_bias = eb - 1 < 63 ? (1ULL << (eb - 1)) - 1 : ~0ULL;
      unsigned long long hi = (src_bias + red_bias) << MB, lo = src_bias > red_bias ? (src_bias - red_bias) << MB : 0;
      unsigned long long sign = 1ULL << (MB + EB), expm = ((1ULL << EB) - 1) << MB;
      line(c, "{ %s ex = %s & 0x%llxUL; if (ex > 0x%llxUL) %s = (%s & 0x%llxUL) | 0x%llxUL; else if (ex <= 0x%llxUL) %s = %s & 0x%llxUL; }",
           UT, u, expm, hi, u, u, sign, expm, lo, u, u, sign);
    }
    char *r = gstr(g, "(isnan(%s) ? %s : %s(%s))", a, mb > 0 ? a : (d64 ? "(double)INFINITY" : "INFINITY"),
                   d64 ? "as_double" : "as_float", u);
    return newvar(c, dt, rnd(g, dt, r));
  }
  if (!strcmp(op, "dynamic-slice") || !strcmp(op, "dynamic-update-slice")) return emit_dynamic(c, ins, idx);
  fail(g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "%s: %s cannot be fused here", ins->name, op);
  return "0";
}

static char *emit(ectx *c, const ocl_instr *ins, char **idx) {
  if (c->g->code) return "0";
  char *key = memo_key(c->g, ins, idx);
  for (int i = c->n_memo - 1; i >= 0; i--)
    if (c->memo[i].ins == ins && !strcmp(c->memo[i].key, key)) return c->memo[i].var;
  char *v = emit_uncached(c, ins, idx);
  if (c->n_memo == c->memo_cap) {
    int nc = c->memo_cap ? c->memo_cap * 2 : 32;
    memo *nm = realloc(c->memo, (size_t)nc * sizeof *nm);
    if (!nm) {
      fail(c->g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
      return "0";
    }
    c->memo = nm;
    c->memo_cap = nc;
  }
  c->memo[c->n_memo].ins = ins;
  c->memo[c->n_memo].key = key;
  c->memo[c->n_memo].var = v;
  c->n_memo++;
  return v;
}

/* ------------------------------------------------------------------ reducers --- */

static const char *reducer_name(gen *g, const ocl_comp *comp, int dtype) {
  for (int i = 0; i < g->n_reducers; i++)
    if (g->reducers[i].comp == comp && g->reducers[i].dtype == dtype) return g->reducers[i].name;
  int n = comp->n_params / 2;
  reducer_fn *nr = realloc(g->reducers, (size_t)(g->n_reducers + 1) * sizeof *nr);
  if (!nr) {
    fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return "red";
  }
  g->reducers = nr;
  reducer_fn *r = &g->reducers[g->n_reducers++];
  r->comp = comp;
  r->dtype = dtype;
  snprintf(r->name, sizeof r->name, "red%d", g->n_reducers - 1);
  /* The function body. */
  sb body = {0};
  ectx c = {0};
  c.g = g;
  c.out = &body;
  c.comp = comp;
  char **pv = idxv(g, 2 * n);
  for (int k = 0; k < 2 * n; k++) pv[k] = gstr(g, "x%d", k);
  c.param_vars = pv;
  if (n == 1) {
    char *v = emit(&c, comp->root, NULL);
    const char *T = ocl_compute_type(dtype);
    sbf(&g->src, "inline %s %s(%s x0, %s x1) {\n%s  return %s;\n}\n", T, r->name, T, T, body.p ? body.p : "", v);
  } else {
    char **vs = idxv(g, n);
    for (int k = 0; k < n; k++) vs[k] = emit(&c, comp->root->operands[k], NULL);
    sbf(&g->src, "inline void %s(", r->name);
    for (int k = 0; k < n; k++) sbf(&g->src, "%s *o%d, ", ocl_compute_type(comp->params[k]->shape.dtype), k);
    for (int k = 0; k < 2 * n; k++)
      sbf(&g->src, "%s x%d%s", ocl_compute_type(comp->params[k]->shape.dtype), k, k + 1 < 2 * n ? ", " : "");
    sbf(&g->src, ") {\n%s", body.p ? body.p : "");
    for (int k = 0; k < n; k++) sbf(&g->src, "  *o%d = %s;\n", k, vs[k]);
    sbf(&g->src, "}\n");
  }
  if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  free(body.p);
  free(c.memo);
  return r->name;
}

static char *emit_reducer_call(ectx *c, const ocl_comp *comp, int dtype, const char *acc, const char *v) {
  const char *fn = reducer_name(c->g, comp, dtype);
  return gstr(c->g, "%s(%s, %s)", fn, acc, v);
}

/* ------------------------------------------------------------------ roots ------ */

/* Reduce (n inputs, n inits): component j of the result at idx. */
static char *emit_reduce(ectx *c, const ocl_instr *ins, char **idx, int j) {
  gen *g = c->g;
  int nin = ins->n_operands / 2;
  const ocl_instr *x = ins->operands[0];
  const ocl_shape *rs = nin > 1 ? &ins->shape.elems[0] : &ins->shape;
  int64_t rd[OCL_MAX_RANK];
  const char *a = ocl_attr(ins, "dimensions");
  int n = a ? ocl_parse_int_list(a, rd, OCL_MAX_RANK) : -1;
  int xr = x->shape.rank;
  if (n < 0 || xr - n != rs->rank || j < 0 || j >= nin) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce dimensions", ins->name);
    return "0";
  }
  int reduced[OCL_MAX_RANK] = {0};
  for (int k = 0; k < n; k++) {
    if (rd[k] < 0 || rd[k] >= xr || reduced[rd[k]]) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce dimensions", ins->name);
      return "0";
    }
    reduced[rd[k]] = 1;
  }
  char **acc = idxv(g, nin);
  for (int k = 0; k < nin; k++) {
    acc[k] = gstr(g, "acc%d", g->tmp++);
    char *iv = emit(c, ins->operands[nin + k], NULL);
    line(c, "%s %s = %s;", ocl_compute_type(ins->operands[k]->shape.dtype), acc[k], iv);
  }
  char **oi = idxv(g, xr);
  int o = 0, mk = memo_mark(c);
  for (int k = 0; k < xr; k++) {
    if (reduced[k]) {
      char *r = gstr(g, "r%d", g->tmp++);
      open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", r, r, (long long)x->shape.dims[k], r));
      oi[k] = r;
    } else {
      oi[k] = idx[o++];
    }
  }
  if (nin == 1) {
    char *v = emit(c, x, oi);
    line(c, "%s = %s;", acc[0], emit_reducer_call(c, ins->called[0], ins->shape.dtype, acc[0], v));
  } else {
    char **vs = idxv(g, nin);
    for (int k = 0; k < nin; k++) vs[k] = emit(c, ins->operands[k], oi);
    const char *fn = reducer_name(g, ins->called[0], 0);
    char *call = gstr(g, "%s(", fn);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s&%s, ", call, acc[k]);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s%s, ", call, acc[k]);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s%s%s", call, vs[k], k + 1 < nin ? ", " : ")");
    line(c, "%s;", call);
  }
  memo_reset(c, mk);
  for (int k = 0; k < n; k++) close_block(c, NULL);
  return acc[j];
}

static char *emit_dot(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  int64_t lb[OCL_MAX_RANK], rb[OCL_MAX_RANK], lc[OCL_MAX_RANK], rc[OCL_MAX_RANK];
  const char *s;
  int nlb = (s = ocl_attr(ins, "lhs_batch_dims")) ? ocl_parse_int_list(s, lb, OCL_MAX_RANK) : 0;
  int nrb = (s = ocl_attr(ins, "rhs_batch_dims")) ? ocl_parse_int_list(s, rb, OCL_MAX_RANK) : 0;
  int nlc = (s = ocl_attr(ins, "lhs_contracting_dims")) ? ocl_parse_int_list(s, lc, OCL_MAX_RANK) : 0;
  int nrc = (s = ocl_attr(ins, "rhs_contracting_dims")) ? ocl_parse_int_list(s, rc, OCL_MAX_RANK) : 0;
  int lr = l->shape.rank, rr = r->shape.rank, dt = ins->shape.dtype;
  if (nlb < 0 || nrb < 0 || nlc < 0 || nrc < 0 || nlb != nrb || nlc != nrc ||
      ins->shape.rank != lr + rr - nlb - 2 * nlc) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dot dimension numbers", ins->name);
    return "0";
  }
  int lrole[OCL_MAX_RANK], rrole[OCL_MAX_RANK]; /* -1 free, else batch k or 100+contract k */
  for (int k = 0; k < lr; k++) lrole[k] = -1;
  for (int k = 0; k < rr; k++) rrole[k] = -1;
  for (int k = 0; k < nlb; k++) {
    if (lb[k] < 0 || lb[k] >= lr || rb[k] < 0 || rb[k] >= rr) goto bad;
    lrole[lb[k]] = k;
    rrole[rb[k]] = k;
  }
  for (int k = 0; k < nlc; k++) {
    if (lc[k] < 0 || lc[k] >= lr || rc[k] < 0 || rc[k] >= rr) goto bad;
    lrole[lc[k]] = 100 + k;
    rrole[rc[k]] = 100 + k;
  }
  char **li = idxv(g, lr), **ri = idxv(g, rr);
  int o = nlb;
  for (int k = 0; k < lr; k++)
    if (lrole[k] == -1) li[k] = idx[o++];
  for (int k = 0; k < rr; k++)
    if (rrole[k] == -1) ri[k] = idx[o++];
  int isf = ocl_dtype_is_float(dt);
  const char *W = isf ? ocl_compute_type(dt) : ocl_dtype_bits(dt) == 64 ? "ulong" : "uint";
  char *acc = gstr(g, "acc%d", g->tmp++);
  line(c, "%s %s = 0;", W, acc);
  char *cv[OCL_MAX_RANK];
  for (int k = 0; k < nlc; k++) {
    cv[k] = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", cv[k], cv[k], (long long)l->shape.dims[lc[k]], cv[k]));
  }
  for (int k = 0; k < lr; k++)
    if (lrole[k] >= 100) li[k] = cv[lrole[k] - 100];
    else if (lrole[k] >= 0) li[k] = idx[lrole[k]];
  for (int k = 0; k < rr; k++)
    if (rrole[k] >= 100) ri[k] = cv[rrole[k] - 100];
    else if (rrole[k] >= 0) ri[k] = idx[rrole[k]];
  int mk = memo_mark(c);
  char *a = convert_expr(g, l->shape.dtype, dt, emit(c, l, li));
  char *b = convert_expr(g, r->shape.dtype, dt, emit(c, r, ri));
  if (isf) line(c, "%s += %s * %s;", acc, a, b);
  else {
    const char *UT = ocl_dtype_is_signed(dt) ? gstr(g, "u%s", ocl_compute_type(dt)) : ocl_compute_type(dt);
    line(c, "%s += (%s)(%s)(%s) * (%s)(%s)(%s);", acc, W, UT, a, W, UT, b);
  }
  memo_reset(c, mk);
  for (int k = 0; k < nlc; k++) close_block(c, NULL);
  if (isf) return newvar(c, dt, rnd(g, dt, acc));
  return newvar(c, dt, gstr(g, "(%s)%s", ocl_compute_type(dt), acc));
bad:
  fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dot dimension numbers", ins->name);
  return "0";
}

static int window_of(gen *g, const ocl_instr *ins, int n, ocl_window_dim *w) {
  for (int k = 0; k < n; k++) {
    w[k].size = 1;
    w[k].stride = 1;
    w[k].pad_lo = w[k].pad_hi = 0;
    w[k].lhs_dilate = w[k].rhs_dilate = 1;
    w[k].reversal = 0;
  }
  const char *a = ocl_attr(ins, "window");
  if (!a) return n == 0 ? 0 : (fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: no window", ins->name), -1);
  int m = ocl_parse_window(a, w, OCL_MAX_RANK);
  if (m != n) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: window has %d dimensions, expected %d", ins->name, m, n);
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (w[k].stride < 1 || w[k].lhs_dilate < 1 || w[k].rhs_dilate < 1 || w[k].size < 0) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad window", ins->name);
      return -1;
    }
  return 0;
}

/* Input position of output o and window offset w along one dimension; writes the
 * validity condition and the position expression. */
static void window_pos(gen *g, const ocl_window_dim *w, const char *o, const char *wv, int64_t in_dim, char **cond,
                       char **pos) {
  char *p = gstr(g, "((%s) * %lldL - %lldL + (%s) * %lldL)", o, (long long)w->stride, (long long)w->pad_lo, wv,
                 (long long)w->rhs_dilate);
  if (w->lhs_dilate > 1) {
    *cond = gstr(g, "%s && %s >= 0 && %s %% %lldL == 0 && %s / %lldL < %lldL", *cond, p, p, (long long)w->lhs_dilate, p,
                 (long long)w->lhs_dilate, (long long)in_dim);
    *pos = gstr(g, "(%s / %lldL)", p, (long long)w->lhs_dilate);
  } else {
    *cond = gstr(g, "%s && %s >= 0 && %s < %lldL", *cond, p, p, (long long)in_dim);
    *pos = p;
  }
}

static char *emit_conv(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  ocl_conv_dnums dn;
  const char *a = ocl_attr(ins, "dim_labels");
  int dt = ins->shape.dtype;
  if (!a || ocl_parse_conv_dnums(a, &dn) != 0) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dim_labels", ins->name);
    return "0";
  }
  int ns = dn.n_spatial;
  if (l->shape.rank != ns + 2 || r->shape.rank != ns + 2 || ins->shape.rank != ns + 2) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: convolution ranks do not match dim_labels", ins->name);
    return "0";
  }
  ocl_window_dim w[OCL_MAX_RANK];
  if (window_of(g, ins, ns, w)) return "0";
  int64_t groups = 1;
  const char *fg = ocl_attr(ins, "feature_group_count");
  if (fg) groups = strtoll(fg, NULL, 10);
  int64_t in_f = l->shape.dims[dn.in_feature], out_f = ins->shape.dims[dn.out_feature];
  if (groups < 1 || in_f % groups || out_f % groups || r->shape.dims[dn.k_in_feature] != in_f / groups) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad feature_group_count", ins->name);
    return "0";
  }
  int64_t ifg = in_f / groups, ofg = out_f / groups;
  int isf = ocl_dtype_is_float(dt);
  const char *W = isf ? ocl_compute_type(dt) : ocl_dtype_bits(dt) == 64 ? "ulong" : "uint";
  char *acc = gstr(g, "acc%d", g->tmp++);
  line(c, "%s %s = 0;", W, acc);
  char *grp = gstr(g, "((%s) / %lldL)", idx[dn.out_feature], (long long)ofg);
  char *ic = gstr(g, "r%d", g->tmp++);
  open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", ic, ic, (long long)ifg, ic));
  char **li = idxv(g, ns + 2), **ri = idxv(g, ns + 2);
  char *cond = gstr(g, "1");
  for (int k = 0; k < ns; k++) {
    char *wv = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", wv, wv, (long long)w[k].size, wv));
    window_pos(g, &w[k], idx[dn.out_spatial[k]], wv, l->shape.dims[dn.in_spatial[k]], &cond, &li[dn.in_spatial[k]]);
    ri[dn.k_spatial[k]] = w[k].reversal ? gstr(g, "(%lldL - %s)", (long long)(w[k].size - 1), wv) : wv;
  }
  li[dn.in_batch] = idx[dn.out_batch];
  li[dn.in_feature] = gstr(g, "(%s * %lldL + %s)", grp, (long long)ifg, ic);
  ri[dn.k_in_feature] = ic;
  ri[dn.k_out_feature] = idx[dn.out_feature];
  int mk = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *x = convert_expr(g, l->shape.dtype, dt, emit(c, l, li));
  char *y = convert_expr(g, r->shape.dtype, dt, emit(c, r, ri));
  if (isf) line(c, "%s += %s * %s;", acc, x, y);
  else {
    const char *UT = ocl_dtype_is_signed(dt) ? gstr(g, "u%s", ocl_compute_type(dt)) : ocl_compute_type(dt);
    line(c, "%s += (%s)(%s)(%s) * (%s)(%s)(%s);", acc, W, UT, x, W, UT, y);
  }
  memo_reset(c, mk);
  close_block(c, NULL);
  for (int k = 0; k < ns; k++) close_block(c, NULL);
  close_block(c, NULL);
  if (isf) return newvar(c, dt, rnd(g, dt, acc));
  return newvar(c, dt, gstr(g, "(%s)%s", ocl_compute_type(dt), acc));
}

static char *emit_reduce_window(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0], *init = ins->operands[1];
  int n = x->shape.rank;
  ocl_window_dim w[OCL_MAX_RANK];
  if (ins->shape.rank != n || window_of(g, ins, n, w)) {
    if (!g->code) fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce-window", ins->name);
    return "0";
  }
  char *acc = gstr(g, "acc%d", g->tmp++);
  char *iv = emit(c, init, NULL);
  line(c, "%s %s = %s;", ocl_compute_type(ins->shape.dtype), acc, iv);
  char **xi = idxv(g, n);
  char *cond = gstr(g, "1");
  for (int k = 0; k < n; k++) {
    char *wv = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", wv, wv, (long long)w[k].size, wv));
    window_pos(g, &w[k], idx[k], wv, x->shape.dims[k], &cond, &xi[k]);
  }
  int mk = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *v = emit(c, x, xi);
  line(c, "%s = %s;", acc, emit_reducer_call(c, ins->called[0], ins->shape.dtype, acc, v));
  memo_reset(c, mk);
  close_block(c, NULL);
  for (int k = 0; k < n; k++) close_block(c, NULL);
  return acc;
}

/* ------------------------------------------------------------------ kernels ---- */

/* A plain f32 matmul (one free dimension per side, one contracting dimension, any batch
 * dimensions) big enough to be worth it becomes a tiled kernel: TxT work-groups stage
 * TxT tiles of both operands in local memory (the operands' producers are still fused:
 * the tile loads are emitted like any other read). */
enum { TILE = 16 };

static int gen_tiled_dot(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c) {
  if (strcmp(ins->opcode, "dot") || g->caps->max_work_group < TILE * TILE || g->caps->local_mem < 2 * TILE * (TILE + 1) * 4)
    return 0;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  if (ins->shape.dtype != KILN_DTYPE_F32 || l->shape.dtype != KILN_DTYPE_F32 || r->shape.dtype != KILN_DTYPE_F32) return 0;
  int64_t lb[OCL_MAX_RANK], rb[OCL_MAX_RANK], lc[OCL_MAX_RANK], rc[OCL_MAX_RANK];
  const char *s;
  int nlb = (s = ocl_attr(ins, "lhs_batch_dims")) ? ocl_parse_int_list(s, lb, OCL_MAX_RANK) : 0;
  int nrb = (s = ocl_attr(ins, "rhs_batch_dims")) ? ocl_parse_int_list(s, rb, OCL_MAX_RANK) : 0;
  int nlc = (s = ocl_attr(ins, "lhs_contracting_dims")) ? ocl_parse_int_list(s, lc, OCL_MAX_RANK) : 0;
  int nrc = (s = ocl_attr(ins, "rhs_contracting_dims")) ? ocl_parse_int_list(s, rc, OCL_MAX_RANK) : 0;
  int lr = l->shape.rank, rr = r->shape.rank;
  if (nlb < 0 || nlb != nrb || nlc != 1 || nrc != 1 || lr != nlb + 2 || rr != nrb + 2 || ins->shape.rank != nlb + 2)
    return 0;
  int lrole[OCL_MAX_RANK], rrole[OCL_MAX_RANK];
  for (int k = 0; k < lr; k++) lrole[k] = -1;
  for (int k = 0; k < rr; k++) rrole[k] = -1;
  for (int k = 0; k < nlb; k++) {
    if (lb[k] < 0 || lb[k] >= lr || rb[k] < 0 || rb[k] >= rr) return 0;
    lrole[lb[k]] = k;
    rrole[rb[k]] = k;
  }
  if (lc[0] < 0 || lc[0] >= lr || rc[0] < 0 || rc[0] >= rr || lrole[lc[0]] != -1 || rrole[rc[0]] != -1) return 0;
  lrole[lc[0]] = 100;
  rrole[rc[0]] = 100;
  int lf = -1, rf = -1;
  for (int k = 0; k < lr; k++)
    if (lrole[k] == -1) lf = k;
  for (int k = 0; k < rr; k++)
    if (rrole[k] == -1) rf = k;
  if (lf < 0 || rf < 0) return 0;
  int64_t M = l->shape.dims[lf], N = r->shape.dims[rf], K = l->shape.dims[lc[0]], B = 1;
  if (K != r->shape.dims[rc[0]] || M * N < 1024 || K < TILE) return 0;
  for (int k = 0; k < nlb; k++) B *= ins->shape.dims[k];
  /* Batch indices from get_global_id(2). */
  char **bidx = idxv(g, nlb + 1);
  int64_t stride = 1;
  for (int k = nlb - 1; k >= 0; k--) {
    bidx[k] = gstr(g, "q%d", k);
    line(c, "long q%d = bb / %lldL %% %lldL;", k, (long long)stride, (long long)ins->shape.dims[k]);
    stride *= ins->shape.dims[k];
  }
  line(c, "float acc = 0.0f;");
  open_block(c, gstr(g, "for (long k0 = 0; k0 < %lldL; k0 += %d)", (long long)K, TILE));
  for (int side = 0; side < 2; side++) {
    const ocl_instr *x = side ? r : l;
    int *role = side ? rrole : lrole;
    char **xi = idxv(g, x->shape.rank);
    for (int k = 0; k < x->shape.rank; k++)
      xi[k] = role[k] == 100 ? "tk" : role[k] == -1 ? "tf" : bidx[role[k]];
    open_block(c, "");
    if (!side) line(c, "long tf = get_group_id(1) * %dL + lr, tk = k0 + lc;", TILE);
    else line(c, "long tk = k0 + lr, tf = get_group_id(0) * %dL + lc;", TILE);
    line(c, "float v = 0.0f;");
    int mk = memo_mark(c);
    open_block(c, gstr(g, "if (tf < %lldL && tk < %lldL)", (long long)(side ? N : M), (long long)K));
    char *val = emit(c, x, xi);
    line(c, "v = %s;", val);
    close_block(c, NULL);
    memo_reset(c, mk);
    line(c, "%s[lr][lc] = v;", side ? "Bs" : "As");
    close_block(c, NULL);
  }
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  line(c, "for (int t = 0; t < %d; t++) acc += As[lr][t] * Bs[t][lc];", TILE);
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  close_block(c, NULL);
  line(c, "if (row < %lldL && col < %lldL) out[(bb * %lldL + row) * %lldL + col] = acc;", (long long)M, (long long)N,
       (long long)M, (long long)N);
  kp->work_dim = 3;
  kp->local[0] = kp->local[1] = TILE;
  kp->local[2] = 1;
  kp->global[0] = (size_t)((N + TILE - 1) / TILE * TILE);
  kp->global[1] = (size_t)((M + TILE - 1) / TILE * TILE);
  kp->global[2] = (size_t)B;
  return 1;
}

/* A single-input reduce over many elements becomes one work-group per output element:
 * each work-item folds a strided share of the reduced elements, then the group combines
 * the partial results in local memory (a tree; a flag marks work-items that saw no
 * element, so the init value is applied exactly once, by the final combine). */
enum { RED_THRESHOLD = 1024 };

static int tree_group_size(const gen *g) {
  int l = 256;
  while (l > 1 && (size_t)l > g->caps->max_work_group) l /= 2;
  return l;
}

static int gen_tree_reduce(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c) {
  if (strcmp(ins->opcode, "reduce") || ins->n_operands != 2 || ins->shape.dtype == 0) return 0;
  int L = tree_group_size(g);
  if (L < 32 || g->caps->local_mem < (size_t)L * 9) return 0;
  const ocl_instr *x = ins->operands[0];
  int64_t rd[OCL_MAX_RANK];
  const char *a = ocl_attr(ins, "dimensions");
  int n = a ? ocl_parse_int_list(a, rd, OCL_MAX_RANK) : -1;
  int xr = x->shape.rank;
  if (n <= 0 || xr - n != ins->shape.rank) return 0;
  int reduced[OCL_MAX_RANK] = {0};
  int64_t R = 1;
  for (int k = 0; k < n; k++) {
    if (rd[k] < 0 || rd[k] >= xr || reduced[rd[k]]) return 0;
    reduced[rd[k]] = 1;
    R *= x->shape.dims[rd[k]];
  }
  if (R < RED_THRESHOLD) return 0;
  int dt = ins->shape.dtype;
  const char *T = ocl_compute_type(dt);
  int rank = ins->shape.rank;
  char **idx = idxv(g, rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = gstr(g, "i%d", k);
    line(c, "long i%d = grp / %lldL %% %lldL;", k, (long long)stride, (long long)ins->shape.dims[k]);
    stride *= ins->shape.dims[k];
  }
  line(c, "%s p = 0;", T);
  line(c, "int have = 0;");
  open_block(c, gstr(g, "for (long rr = lid; rr < %lldL; rr += %d)", (long long)R, L));
  char **oi = idxv(g, xr);
  int o = 0;
  stride = 1;
  for (int k = xr - 1; k >= 0; k--)
    if (reduced[k]) {
      oi[k] = gstr(g, "(rr / %lldL %% %lldL)", (long long)stride, (long long)x->shape.dims[k]);
      stride *= x->shape.dims[k];
    }
  for (int k = 0; k < xr; k++)
    if (!reduced[k]) oi[k] = idx[o++];
  int mk = memo_mark(c);
  char *v = emit(c, x, oi);
  line(c, "p = have ? %s : %s;", emit_reducer_call(c, ins->called[0], dt, "p", v), v);
  line(c, "have = 1;");
  memo_reset(c, mk);
  close_block(c, NULL);
  line(c, "vals[lid] = p;");
  line(c, "flags[lid] = (uchar)have;");
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  open_block(c, gstr(g, "for (int s = %d; s > 0; s >>= 1)", L / 2));
  open_block(c, "if (lid < s)");
  line(c, "if (flags[lid] && flags[lid + s]) vals[lid] = %s;",
       emit_reducer_call(c, ins->called[0], dt, "vals[lid]", "vals[lid + s]"));
  line(c, "else if (flags[lid + s]) { vals[lid] = vals[lid + s]; flags[lid] = 1; }");
  close_block(c, NULL);
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  close_block(c, NULL);
  open_block(c, "if (lid == 0)");
  char *iv = emit(c, ins->operands[1], NULL);
  line(c, "%s r = flags[0] ? %s : %s;", T, emit_reducer_call(c, ins->called[0], dt, iv, "vals[0]"), iv);
  if (dt == KILN_DTYPE_F16) line(c, "out[grp] = f2h(r);");
  else if (dt == KILN_DTYPE_BF16) line(c, "out[grp] = f2bf(r);");
  else line(c, "out[grp] = (%s)r;", ocl_storage_type(dt));
  close_block(c, NULL);
  kp->work_dim = 1;
  kp->local[0] = (size_t)L;
  kp->global[0] = (size_t)kp->n_elems * (size_t)L;
  kp->local[1] = kp->local[2] = kp->global[1] = kp->global[2] = 1;
  return L;
}

static void gen_kernel(gen *g, const ocl_instr *ins, int kidx) {
  ocl_kernel_plan *kp = &g->plan->kernels[kidx];
  snprintf(kp->name, sizeof kp->name, "k%d", kidx);
  kp->dtype = ins->shape.dtype;
  kp->rank = ins->shape.rank;
  memcpy(kp->dims, ins->shape.dims, sizeof kp->dims);
  kp->n_elems = ocl_shape_elems(&ins->shape);
  kp->bytes = (size_t)kp->n_elems * ocl_dtype_size(kp->dtype);
  sb body = {0};
  ectx c = {0};
  c.g = g;
  c.out = &body;
  c.kp = kp;
  c.self = ins;
  c.out_rank = ins->shape.rank;
  c.out_dims = ins->shape.dims;
  if (kp->n_elems > 0 && gen_tiled_dot(g, ins, kp, &c)) {
    sbf(&g->src, "__kernel __attribute__((reqd_work_group_size(%d, %d, 1))) void %s(", TILE, TILE, kp->name);
    for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
    sbf(&g->src,
        "__global float *out, long n) {\n  __local float As[%d][%d];\n  __local float Bs[%d][%d];\n"
        "  int lc = get_local_id(0), lr = get_local_id(1);\n"
        "  long col = get_global_id(0), row = get_global_id(1), bb = get_global_id(2);\n%s}\n",
        TILE, TILE + 1, TILE, TILE + 1, body.p ? body.p : "");
    if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    free(body.p);
    free(c.memo);
    free(c.ref_dtypes);
    return;
  }
  int L = kp->n_elems > 0 ? gen_tree_reduce(g, ins, kp, &c) : 0;
  if (L) {
    const char *ST = ocl_compute_type(kp->dtype);
    sbf(&g->src, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1))) void %s(", L, kp->name);
    for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
    sbf(&g->src,
        "__global %s *out, long n) {\n  __local %s vals[%d];\n  __local uchar flags[%d];\n"
        "  int lid = get_local_id(0);\n  long grp = get_group_id(0);\n%s}\n",
        ocl_storage_type(kp->dtype), ST, L, L, body.p ? body.p : "");
    if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    free(body.p);
    free(c.memo);
    free(c.ref_dtypes);
    return;
  }
  int rank = ins->shape.rank;
  char **idx = idxv(g, rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = gstr(g, "i%d", k);
    line(&c, "long i%d = gid / %lldL %% %lldL;", k, (long long)stride, (long long)(ins->shape.dims[k] ? ins->shape.dims[k] : 1));
    stride *= ins->shape.dims[k] ? ins->shape.dims[k] : 1;
  }
  const char *op = ins->opcode;
  char *v;
  if (!strcmp(op, "reduce")) v = emit_reduce(&c, ins, idx, 0);
  else if (!strcmp(op, "get-tuple-element") && !strcmp(ins->operands[0]->opcode, "reduce"))
    v = emit_reduce(&c, ins->operands[0], idx, (int)ins->int_payload);
  else if (!strcmp(op, "dot")) v = emit_dot(&c, ins, idx);
  else if (!strcmp(op, "convolution")) v = emit_conv(&c, ins, idx);
  else if (!strcmp(op, "reduce-window")) v = emit_reduce_window(&c, ins, idx);
  else v = emit(&c, ins, idx);
  char *st;
  if (kp->dtype == KILN_DTYPE_F16) st = gstr(g, "f2h(%s)", v);
  else if (kp->dtype == KILN_DTYPE_BF16) st = gstr(g, "f2bf(%s)", v);
  else st = gstr(g, "(%s)(%s)", ocl_storage_type(kp->dtype), v);
  sbf(&g->src, "__kernel void %s(", kp->name);
  for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
  sbf(&g->src, "__global %s *out, long n) {\n  long gid = get_global_id(0);\n  if (gid >= n) return;\n%s  out[gid] = %s;\n}\n",
      ocl_storage_type(kp->dtype), body.p ? body.p : "", st);
  if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  free(body.p);
  free(c.memo);
  free(c.ref_dtypes);
}

void ocl_plan_free(ocl_plan *p) {
  if (!p) return;
  free(p->source);
  if (p->kernels)
    for (int i = 0; i < p->n_kernels; i++) free(p->kernels[i].refs);
  free(p->kernels);
  if (p->consts)
    for (int i = 0; i < p->n_consts; i++) free(p->consts[i].data);
  free(p->consts);
  free(p->params);
  free(p->result_kernel);
  free(p);
}

static int is_contraction(const char *op) {
  return !strcmp(op, "reduce") || !strcmp(op, "dot") || !strcmp(op, "convolution") || !strcmp(op, "reduce-window");
}

int ocl_codegen(const ocl_module *m, const ocl_caps *caps, ocl_plan **out, char *err, size_t err_cap) {
  *out = NULL;
  gen g = {0};
  g.m = m;
  g.caps = caps;
  g.err = err;
  g.err_cap = err_cap;
  const ocl_comp *e = m ? m->entry : NULL;
  if (!e || !e->root) {
    snprintf(err, err_cap, "module has no entry computation");
    return KILN_PLUGIN_ERR_INVALID_ARGUMENT;
  }
  /* Support check first: UNIMPLEMENTED names the first instruction the device lacks. */
  for (int i = 0; i < e->n_instrs; i++)
    if (!ocl_instr_supported(e->instrs[i], caps, err, err_cap)) return KILN_PLUGIN_ERR_UNIMPLEMENTED;
  const ocl_instr *root = e->root;
  if (root->shape.dtype == 0 && strcmp(root->opcode, "tuple")) {
    snprintf(err, err_cap, "%s: a tuple-shaped root must be a tuple instruction", root->name);
    return KILN_PLUGIN_ERR_UNIMPLEMENTED;
  }
  ocl_plan *p = calloc(1, sizeof *p);
  g.infos = calloc((size_t)e->n_instrs + 1, sizeof *g.infos);
  if (!p || !g.infos) {
    free(p);
    free(g.infos);
    snprintf(err, err_cap, "out of memory");
    return KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED;
  }
  g.plan = p;
  for (int i = 0; i < e->n_instrs; i++) {
    e->instrs[i]->user = &g.infos[i];
    g.infos[i].const_idx = -1;
    g.infos[i].kernel = -1;
  }
  /* Uses, inline sizes, materialization. */
  for (int i = 0; i < e->n_instrs; i++)
    for (int j = 0; j < e->instrs[i]->n_operands; j++) inf(e->instrs[i]->operands[j])->uses++;
  for (int i = 0; i < e->n_instrs; i++) {
    ocl_instr *x = e->instrs[i];
    info *in = inf(x);
    const char *op = x->opcode;
    if (!strcmp(op, "parameter") || !strcmp(op, "constant") || !strcmp(op, "iota")) in->size = 1;
    else {
      in->size = 1;
      for (int j = 0; j < x->n_operands; j++)
        if (!inf(x->operands[j])->materialized) in->size += inf(x->operands[j])->size;
    }
    if (!strcmp(op, "get-tuple-element") && !strcmp(x->operands[0]->opcode, "reduce")) {
      in->materialized = 1;
      continue;
    }
    if (!strcmp(op, "tuple") || !strcmp(op, "parameter") || !strcmp(op, "get-tuple-element") || x->shape.dtype == 0)
      continue;
    if (!strcmp(op, "constant")) {
      if (ocl_shape_elems(&x->shape) > 1 || x->shape.rank > 0) {
        ocl_const_plan *nc = realloc(p->consts, (size_t)(p->n_consts + 1) * sizeof *nc);
        if (!nc) goto oom;
        p->consts = nc;
        nc[p->n_consts].bytes = x->literal_bytes;
        nc[p->n_consts].data = malloc(x->literal_bytes ? x->literal_bytes : 1);
        if (!nc[p->n_consts].data) goto oom;
        if (x->literal_bytes) memcpy(nc[p->n_consts].data, x->literal, x->literal_bytes);
        in->const_idx = p->n_consts++;
      }
      continue;
    }
    if (is_contraction(op) || (in->uses > 1 && in->size > 8) || in->size > 200) in->materialized = 1;
    if (!strcmp(op, "dot") || !strcmp(op, "convolution") || !strcmp(op, "reduce-window"))
      for (int j = 0; j < x->n_operands; j++) {
        info *oi = inf(x->operands[j]);
        if (oi->size > 3 && strcmp(x->operands[j]->opcode, "tuple") && strcmp(x->operands[j]->opcode, "constant") &&
            strcmp(x->operands[j]->opcode, "parameter") && strcmp(x->operands[j]->opcode, "get-tuple-element"))
          oi->materialized = 1;
      }
  }
  /* Results. */
  int n_res = !strcmp(root->opcode, "tuple") ? root->n_operands : 1;
  p->n_results = n_res;
  p->result_kernel = calloc((size_t)n_res + 1, sizeof *p->result_kernel);
  if (!p->result_kernel) goto oom;
  for (int r = 0; r < n_res; r++) {
    const ocl_instr *x = root->opcode[0] == 't' && !strcmp(root->opcode, "tuple") ? root->operands[r] : root;
    inf(x)->materialized = 1;
  }
  /* Kernels, in instruction order. */
  for (int i = 0; i < e->n_instrs; i++)
    if (g.infos[i].materialized) g.infos[i].kernel = p->n_kernels++;
  p->kernels = calloc((size_t)p->n_kernels + 1, sizeof *p->kernels);
  if (!p->kernels) goto oom;
  for (int r = 0; r < n_res; r++) {
    const ocl_instr *x = !strcmp(root->opcode, "tuple") ? root->operands[r] : root;
    p->result_kernel[r] = inf(x)->kernel;
  }
  p->n_params = e->n_params;
  p->params = calloc((size_t)e->n_params + 1, sizeof *p->params);
  if (!p->params) goto oom;
  for (int i = 0; i < e->n_params; i++) {
    if (!e->params[i]) {
      snprintf(err, err_cap, "parameter %d is missing", i);
      ocl_plan_free(p);
      free(g.infos);
      return KILN_PLUGIN_ERR_INVALID_ARGUMENT;
    }
    p->params[i].dtype = e->params[i]->shape.dtype;
    p->params[i].rank = e->params[i]->shape.rank;
    memcpy(p->params[i].dims, e->params[i]->shape.dims, sizeof p->params[i].dims);
  }
  sbf(&g.src, "%s", ocl_preamble);
  for (int i = 0; i < e->n_instrs && !g.code; i++)
    if (g.infos[i].materialized) gen_kernel(&g, e->instrs[i], g.infos[i].kernel);
  if (g.src.oom && !g.code) fail(&g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  int code = g.code;
  if (!code) {
    p->source = g.src.p;
    g.src.p = NULL;
    *out = p;
  } else {
    ocl_plan_free(p);
  }
  for (int i = 0; i < e->n_instrs; i++) e->instrs[i]->user = NULL;
  free(g.src.p);
  free(g.infos);
  free(g.reducers);
  while (g.arena) {
    arena_blk *n = g.arena->next;
    free(g.arena);
    g.arena = n;
  }
  return code;
oom:
  ocl_plan_free(p);
  for (int i = 0; i < e->n_instrs; i++) e->instrs[i]->user = NULL;
  free(g.infos);
  snprintf(err, err_cap, "out of memory");
  return KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED;
}
