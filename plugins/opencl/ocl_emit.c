/* The value emitter of the OpenCL code generator: string and arena helpers, then the
 * function that produces the value of an instruction at a multi-index as OpenCL C
 * statements (fresh temporaries of the compute type), memoised per (instruction, index)
 * within a block. Elementwise operations use the preamble's helpers for XLA's integer
 * rules and round f16/bf16 after every operation; data movement (broadcast, reshape,
 * transpose, slice, reverse, pad, concatenate, gather, dynamic-slice,
 * dynamic-update-slice, get-tuple-element) only rewrites the index, so all of these fuse
 * into whatever kernel reads them. Materialized instructions, parameters and array
 * constants are loads from the kernel's buffer arguments. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_gen.h"

/* ------------------------------------------------------------------ strings ---- */


void sb_vf(sb *b, const char *fmt, va_list ap) {
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

void sbf(sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vf(b, fmt, ap);
  va_end(ap);
}

/* Arena of strings freed with the generator. */

/* ------------------------------------------------------------------ state ------ */




char *gstr(gen *g, const char *fmt, ...) {
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

void fail(gen *g, int code, const char *fmt, ...) {
  if (g->code) return;
  g->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, g->err_cap, fmt, ap);
  va_end(ap);
}


/* Emission context: one kernel body or one reducer function. */


void line(ectx *c, const char *fmt, ...) {
  for (int i = 0; i < c->depth + 1; i++) sbf(c->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  sb_vf(c->out, fmt, ap);
  va_end(ap);
  sbf(c->out, "\n");
}

char *newvar(ectx *c, int dtype, const char *expr) {
  char *v = gstr(c->g, "t%d", c->g->tmp++);
  line(c, "%s %s = %s;", ocl_compute_type(dtype), v, expr);
  return v;
}

/* ------------------------------------------------------------------ helpers ---- */

const char *suffix(int dtype) {
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
char *rnd(gen *g, int dtype, const char *e) {
  if (dtype == KILN_DTYPE_F16) return gstr(g, "rh(%s)", e);
  if (dtype == KILN_DTYPE_BF16) return gstr(g, "rbf(%s)", e);
  return gstr(g, "(%s)", e);
}

char *linear(gen *g, int rank, const int64_t *dims, char **idx) {
  if (rank == 0) return gstr(g, "0");
  char *s = gstr(g, "(%s)", idx[0]);
  for (int k = 1; k < rank; k++) s = gstr(g, "(%s * %lldL + (%s))", s, (long long)dims[k], idx[k]);
  return s;
}

int same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
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
char *convert_expr(gen *g, int from, int to, const char *v) {
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


/* ------------------------------------------------------------------ emitter ---- */


char **idxv(gen *g, int n) {
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
int memo_mark(ectx *c) { return c->n_memo; }
void memo_reset(ectx *c, int mark) { c->n_memo = mark; }

static char *memo_key(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  /* The innermost fusion is part of the key: one fused computation may serve several
   * fusion instructions with different operands. */
  char *k = gstr(g, "%p/%p", (const void *)ins, (const void *)(c->n_fus ? c->fus[c->n_fus - 1] : NULL));
  for (int i = 0; i < ins->shape.rank; i++) k = gstr(g, "%s|%s", k, idx[i]);
  return k;
}


/* A block `if (cond) {...}` helper pair. */
void open_block(ectx *c, const char *head) {
  line(c, "%s {", head);
  c->depth++;
}
void close_block(ectx *c, const char *tail) {
  c->depth--;
  line(c, "}%s", tail ? tail : "");
}

/* An index value (any integer type) as a long, unsigned 64-bit values saturating. */
char *index_value(ectx *c, const ocl_instr *x, char **idx) {
  char *v = emit(c, x, idx);
  char *l = gstr(c->g, "l%d", c->g->tmp++);
  if (x->shape.dtype == KILN_DTYPE_U64)
    line(c, "long %s = %s > 9223372036854775807UL ? 9223372036854775807L : (long)%s;", l, v, v);
  else
    line(c, "long %s = (long)%s;", l, v);
  return l;
}

int in_list(const int64_t *v, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

int int_attr_list(const ocl_instr *ins, const char *key, int64_t *out) {
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
  const int kind = op_kind(op);
  info *in = c->comp ? NULL : inf(ins);

  if (in && in->materialized && ins != c->self) return load(c, OCL_REF_TEMP, in->kernel, &ins->shape, idx);
  if (!strcmp(op, "parameter")) {
    if (c->comp) return c->param_vars[ins->parameter_number];
    if (!in) { /* a fused computation's parameter: the fusion's operand, outside it */
      if (!c->n_fus || ins->parameter_number < 0 || ins->parameter_number >= c->fus[c->n_fus - 1]->n_operands) {
        fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: parameter outside any fusion", ins->name);
        return "0";
      }
      const ocl_instr *f = c->fus[--c->n_fus];
      char *v = emit(c, f->operands[ins->parameter_number], idx);
      c->fus[c->n_fus++] = f;
      return v;
    }
    return load(c, OCL_REF_PARAM, (int)ins->parameter_number, &ins->shape, idx);
  }
  if (!strcmp(op, "fusion")) {
    if (c->n_fus == (int)(sizeof c->fus / sizeof c->fus[0]) || ins->n_called != 1 || !ins->called[0]->root) {
      fail(g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "%s: fusion nested too deeply", ins->name);
      return "0";
    }
    c->fus[c->n_fus++] = ins;
    char *v = emit(c, ins->called[0]->root, idx);
    c->n_fus--;
    return v;
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
  if (kind == OP_UNARY) {
    char *a = emit(c, ins->operands[0], idx);
    return newvar(c, dt, unary_expr(g, op, dt, a));
  }
  if (kind == OP_BINARY) {
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
      if (ocl_shape_elems(&ins->shape) < ((int64_t)1 << 31)) /* 32-bit division where it fits */
        oi[k] = gstr(g, "(long)((uint)%s / %lluU %% %lluU)", l, (unsigned long long)stride,
                     (unsigned long long)(x->shape.dims[k] ? x->shape.dims[k] : 1));
      else
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

char *emit(ectx *c, const ocl_instr *ins, char **idx) {
  if (c->g->code) return "0";
  char *key = memo_key(c, ins, idx);
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

