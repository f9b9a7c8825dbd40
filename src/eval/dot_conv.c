/* Evaluator kernels for dot and convolution: the two contractions of HLO.
 *
 * Both follow the same plan so the arithmetic is written once per accumulator kind:
 * operands are first converted to the result element type (XLA's preferred-element-type
 * semantics: s8 x s8 -> s32 converts then multiplies in s32), then loaded into flat
 * 64-bit buffers permuted so that the contracted dimension is innermost and contiguous,
 * and a small typed core does the multiply-accumulate. Floats accumulate in double and
 * are rounded once to the result type at the end; that is at least as accurate as any
 * backend's f32 accumulation, which is why backends are compared against this oracle
 * with a tolerance rather than bit for bit. Integers accumulate in uint64 with wrapping
 * arithmetic and are truncated at the end, which equals wrapping arithmetic in the
 * result type (two's complement, no signed-overflow UB). pred is "or of ands", i.e. the
 * integer sum tested against zero. Attribute inconsistencies a verifier would catch are
 * still checked here (cheaply) so an unverified module gets an error, not a wild read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"

/* ---------------------------------------------------------------- buffers */

/* Element count n of 8-byte values; errors (not aborts) when memory runs out. */
static kiln_status alloc8(const hlo_instr *ins, int64_t n, void **out) {
  *out = NULL;
  if (n < 0 || (uint64_t)n > SIZE_MAX / 8) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "temporary buffer too large");
  void *p = malloc(n ? (size_t)n * 8 : 8);
  if (!p) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory for a %lld-element buffer", (long long)n);
  *out = p;
  return NULL;
}

static bool acc_is_float(hlo_type t) { return hlo_type_is_float(t); }

static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
/* *acc *= v, remembering overflow: a shape with one zero dim can have other dims whose
 * partial products do not fit, even though the literal itself is empty. */
static void mul_into(int64_t *acc, int64_t v, bool *overflow) {
  if (!mul_ok(*acc, v, acc)) *overflow = true;
}

/* Loads every element of an array literal into doubles (exact for all float types). */
static void load_f64(const hlo_literal *l, double *dst) {
  const void *d = l->data;
  int64_t n = l->n;
  switch (l->shape.type) {
    case HLO_F16:
      for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(((const uint16_t *)d)[i]);
      break;
    case HLO_BF16:
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(((const uint16_t *)d)[i]);
      break;
    case HLO_F32:
      for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)d)[i];
      break;
    case HLO_F64:
      if (n) memcpy(dst, d, (size_t)n * 8);
      break;
    default:
      for (int64_t i = 0; i < n; i++) dst[i] = literal_get_f64(l, i);
      break;
  }
}

/* Loads integers (and pred as 0/1) into uint64; signed values are sign-extended so that
 * wrapping uint64 arithmetic truncated to the type equals the type's own arithmetic. */
static void load_u64(const hlo_literal *l, uint64_t *dst) {
  const void *d = l->data;
  int64_t n = l->n;
  switch (l->shape.type) {
    case HLO_PRED:
      for (int64_t i = 0; i < n; i++) dst[i] = ((const uint8_t *)d)[i] != 0;
      break;
    case HLO_S8:
      for (int64_t i = 0; i < n; i++) dst[i] = (uint64_t)(int64_t)((const int8_t *)d)[i];
      break;
    case HLO_S16:
      for (int64_t i = 0; i < n; i++) dst[i] = (uint64_t)(int64_t)((const int16_t *)d)[i];
      break;
    case HLO_S32:
      for (int64_t i = 0; i < n; i++) dst[i] = (uint64_t)(int64_t)((const int32_t *)d)[i];
      break;
    case HLO_S64:
    case HLO_U64:
      if (n) memcpy(dst, d, (size_t)n * 8);
      break;
    case HLO_U8:
      for (int64_t i = 0; i < n; i++) dst[i] = ((const uint8_t *)d)[i];
      break;
    case HLO_U16:
      for (int64_t i = 0; i < n; i++) dst[i] = ((const uint16_t *)d)[i];
      break;
    case HLO_U32:
      for (int64_t i = 0; i < n; i++) dst[i] = ((const uint32_t *)d)[i];
      break;
    default:
      for (int64_t i = 0; i < n; i++) dst[i] = literal_get_u64(l, i);
      break;
  }
}

/* Rounds the double accumulators once to the literal's float type. f16/bf16 go through
 * f32 as XLA's own f16 arithmetic does. */
static void store_f64(hlo_literal *l, const double *src) {
  void *d = l->data;
  int64_t n = l->n;
  switch (l->shape.type) {
    case HLO_F16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = f32_to_f16((float)src[i]);
      break;
    case HLO_BF16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = f32_to_bf16((float)src[i]);
      break;
    case HLO_F32:
      for (int64_t i = 0; i < n; i++) ((float *)d)[i] = (float)src[i];
      break;
    case HLO_F64:
      if (n) memcpy(d, src, (size_t)n * 8);
      break;
    default:
      for (int64_t i = 0; i < n; i++) literal_set_f64(l, i, src[i]);
      break;
  }
}

static void store_u64(hlo_literal *l, const uint64_t *src) {
  void *d = l->data;
  int64_t n = l->n;
  switch (l->shape.type) {
    case HLO_PRED:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)d)[i] = src[i] != 0;
      break;
    case HLO_S8:
    case HLO_U8:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)d)[i] = (uint8_t)src[i];
      break;
    case HLO_S16:
    case HLO_U16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = (uint16_t)src[i];
      break;
    case HLO_S32:
    case HLO_U32:
      for (int64_t i = 0; i < n; i++) ((uint32_t *)d)[i] = (uint32_t)src[i];
      break;
    case HLO_S64:
    case HLO_U64:
      if (n) memcpy(d, src, (size_t)n * 8);
      break;
    default:
      for (int64_t i = 0; i < n; i++) literal_set_u64(l, i, src[i]);
      break;
  }
}

/* Copies 8-byte elements while walking DIMS in row-major order: element idx is read at
 * sum(idx*src_strides) and written at sum(idx*dst_strides). Packing passes dst strides
 * that are row-major (dst contiguous); unpacking passes src strides that are. */
static void permute8(int rank, const int64_t *dims, const void *src, const int64_t *src_strides, void *dst,
                     const int64_t *dst_strides) {
  const unsigned char *s = src;
  unsigned char *d = dst;
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0) return;
  if (rank == 0) {
    memcpy(d, s, 8);
    return;
  }
  int64_t idx[HLO_MAX_RANK] = {0};
  int outer = rank - 1;
  int64_t inner = dims[outer], si = src_strides[outer], di = dst_strides[outer];
  do {
    int64_t so = eval_linear_index(outer, src_strides, idx), dof = eval_linear_index(outer, dst_strides, idx);
    for (int64_t j = 0; j < inner; j++) memcpy(d + (dof + j * di) * 8, s + (so + j * si) * 8, 8);
  } while (eval_next_index(outer, dims, idx));
}

/* Row-major strides. The product wraps instead of overflowing: strides only get used
 * for non-empty shapes, where they fit, but an empty shape may carry huge dims. */
static void row_major_strides(int rank, const int64_t *dims, int64_t *strides) {
  uint64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = (int64_t)s;
    s *= (uint64_t)dims[d];
  }
}

/* Loads LIT (already of the accumulation domain's type) into a fresh buffer whose
 * row-major order is the literal's dims taken in the order PERM. */
static kiln_status pack(const hlo_instr *ins, const hlo_literal *lit, const int *perm, bool is_float, void **out) {
  *out = NULL;
  int rank = lit->shape.rank;
  void *natural;
  TRY(alloc8(ins, lit->n, &natural));
  if (is_float)
    load_f64(lit, natural);
  else
    load_u64(lit, natural);
  bool identity = true;
  for (int i = 0; i < rank; i++) identity = identity && perm[i] == i;
  if (identity) {
    *out = natural;
    return NULL;
  }
  void *packed;
  kiln_status st = alloc8(ins, lit->n, &packed);
  if (st) {
    free(natural);
    return st;
  }
  int64_t strides[HLO_MAX_RANK], pdims[HLO_MAX_RANK], pstrides[HLO_MAX_RANK], dstrides[HLO_MAX_RANK];
  row_major_strides(rank, lit->shape.dims, strides);
  for (int i = 0; i < rank; i++) {
    pdims[i] = lit->shape.dims[perm[i]];
    pstrides[i] = strides[perm[i]];
  }
  row_major_strides(rank, pdims, dstrides);
  permute8(rank, pdims, natural, pstrides, packed, dstrides);
  free(natural);
  *out = packed;
  return NULL;
}

/* Gives OP in the result element type, converting when the types differ (*owned is then
 * the caller's to free). */
static kiln_status in_result_type(const hlo_instr *ins, const hlo_literal *op, hlo_literal **owned,
                                  const hlo_literal **view) {
  *owned = NULL;
  *view = op;
  if (op->shape.type == ins->shape.type) return NULL;
  TRY(eval_convert_literal(op, ins->shape.type, owned));
  *view = *owned;
  return NULL;
}

static bool is_plain_array(const hlo_literal *l) {
  return l && hlo_type_is_array(l->shape.type) && l->shape.type != HLO_TOKEN && l->shape.rank >= 0 &&
         l->shape.rank <= HLO_MAX_RANK;
}

/* Checks that dimension numbers name distinct dims of an operand of rank RANK. */
static bool dims_valid(int rank, const hlo_ints *a, const hlo_ints *b, const hlo_ints *c, bool *seen) {
  for (int i = 0; i < rank; i++) seen[i] = false;
  const hlo_ints *lists[3] = {a, b, c};
  for (int l = 0; l < 3; l++) {
    if (!lists[l]) continue;
    for (int i = 0; i < lists[l]->n; i++) {
      int64_t d = lists[l]->v[i];
      if (d < 0 || d >= rank || seen[d]) return false;
      seen[d] = true;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- dot */

/* out[b,m,n] = sum_k l[b,m,k] * r[b,n,k]. Four partial sums break the add latency chain;
 * the order is fixed, so results are deterministic. */
#define DEFINE_DOT_CORE(NAME, T)                                                          \
  static void NAME(const T *l, const T *r, T *o, int64_t nb, int64_t nm, int64_t nn, int64_t nk) { \
    for (int64_t b = 0; b < nb; b++)                                                      \
      for (int64_t m = 0; m < nm; m++) {                                                  \
        const T *lr = l + (b * nm + m) * nk;                                              \
        for (int64_t n = 0; n < nn; n++) {                                                \
          const T *rr = r + (b * nn + n) * nk;                                            \
          T a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                               \
          int64_t k = 0;                                                                  \
          for (; k + 4 <= nk; k += 4) {                                                   \
            a0 += lr[k] * rr[k];                                                          \
            a1 += lr[k + 1] * rr[k + 1];                                                  \
            a2 += lr[k + 2] * rr[k + 2];                                                  \
            a3 += lr[k + 3] * rr[k + 3];                                                  \
          }                                                                               \
          for (; k < nk; k++) a0 += lr[k] * rr[k];                                        \
          o[(b * nm + m) * nn + n] = (a0 + a1) + (a2 + a3);                               \
        }                                                                                 \
      }                                                                                   \
  }
DEFINE_DOT_CORE(dot_core_f64, double)
DEFINE_DOT_CORE(dot_core_u64, uint64_t)

kiln_status eval_dot(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  *out = NULL;
  if (ins->n_operands != 2 || !is_plain_array(ops[0]) || !is_plain_array(ops[1]) ||
      !hlo_type_is_array(ins->shape.type) || ins->shape.type == HLO_TOKEN)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dot needs two array operands and an array result");
  const hlo_dot_dnums *dn = &ins->dot;
  const hlo_shape *ls = &ops[0]->shape, *rs = &ops[1]->shape;
  bool seen[HLO_MAX_RANK];
  if (dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n ||
      !dims_valid(ls->rank, &dn->lhs_batch, &dn->lhs_contracting, NULL, seen) ||
      !dims_valid(rs->rank, &dn->rhs_batch, &dn->rhs_contracting, NULL, seen))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid dot dimension numbers for operands of rank %d and %d",
                    ls->rank, rs->rank);

  /* Packed orders: lhs [batch, free, contracting], rhs [batch, free, contracting]. */
  int lperm[HLO_MAX_RANK], rperm[HLO_MAX_RANK], nl = 0, nr = 0;
  int64_t nb = 1, nm = 1, nn = 1, nk = 1;
  bool overflow = false;
  int64_t odims[HLO_MAX_RANK];
  int orank = 0;
  for (int i = 0; i < dn->lhs_batch.n; i++) {
    int64_t ld = dn->lhs_batch.v[i], rd = dn->rhs_batch.v[i];
    if (ls->dims[ld] != rs->dims[rd])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "batch dimension %d sizes differ: %lld vs %lld", i,
                      (long long)ls->dims[ld], (long long)rs->dims[rd]);
    lperm[nl++] = (int)ld;
    rperm[nr++] = (int)rd;
    mul_into(&nb, ls->dims[ld], &overflow);
    odims[orank++] = ls->dims[ld];
  }
  dims_valid(ls->rank, &dn->lhs_batch, &dn->lhs_contracting, NULL, seen);
  for (int d = 0; d < ls->rank; d++)
    if (!seen[d]) {
      lperm[nl++] = d;
      mul_into(&nm, ls->dims[d], &overflow);
      if (orank >= HLO_MAX_RANK) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dot result rank too large");
      odims[orank++] = ls->dims[d];
    }
  dims_valid(rs->rank, &dn->rhs_batch, &dn->rhs_contracting, NULL, seen);
  for (int d = 0; d < rs->rank; d++)
    if (!seen[d]) {
      rperm[nr++] = d;
      mul_into(&nn, rs->dims[d], &overflow);
      if (orank >= HLO_MAX_RANK) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dot result rank too large");
      odims[orank++] = rs->dims[d];
    }
  for (int i = 0; i < dn->lhs_contracting.n; i++) {
    int64_t ld = dn->lhs_contracting.v[i], rd = dn->rhs_contracting.v[i];
    if (ls->dims[ld] != rs->dims[rd])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "contracting dimension %d sizes differ: %lld vs %lld", i,
                      (long long)ls->dims[ld], (long long)rs->dims[rd]);
    lperm[nl++] = (int)ld;
    rperm[nr++] = (int)rd;
    mul_into(&nk, ls->dims[ld], &overflow);
  }
  bool empty_operand = ops[0]->n == 0 || ops[1]->n == 0;
  if (overflow && !empty_operand) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "dot dimensions too large");
  if (orank != ins->shape.rank || memcmp(odims, ins->shape.dims, (size_t)orank * sizeof odims[0]) != 0) {
    char *s = shape_to_string(&ins->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape %s does not match the dot's dimensions", s);
    free(s);
    return st;
  }

  hlo_literal *lown, *rown, *res = NULL;
  if (empty_operand) return literal_create(&ins->shape, out); /* sums over nothing: zeros */
  const hlo_literal *lv, *rv;
  TRY(in_result_type(ins, ops[0], &lown, &lv));
  kiln_status st = in_result_type(ins, ops[1], &rown, &rv);
  void *lp = NULL, *rp = NULL, *op = NULL;
  bool f = acc_is_float(ins->shape.type);
  if (!st) st = pack(ins, lv, lperm, f, &lp);
  if (!st) st = pack(ins, rv, rperm, f, &rp);
  if (!st) st = literal_create(&ins->shape, &res);
  if (!st) st = alloc8(ins, res->n, &op);
  if (!st) {
    if (f) {
      dot_core_f64(lp, rp, op, nb, nm, nn, nk);
      store_f64(res, op);
    } else {
      dot_core_u64(lp, rp, op, nb, nm, nn, nk);
      store_u64(res, op);
    }
  }
  free(lp);
  free(rp);
  free(op);
  literal_free(lown);
  literal_free(rown);
  if (st) {
    literal_free(res);
    return st;
  }
  *out = res;
  return NULL;
}

/* ---------------------------------------------------------------- convolution */

/* Geometry in packed coordinates: input [n_in][in spatial...][c_in], kernel
 * [kernel spatial...][c_out][cg], output [n_out][out spatial...][c_out]. */
typedef struct conv_geom {
  int ns;
  int64_t n_in, n_out, c_in, c_out, cg;
  int64_t in_sp[HLO_MAX_RANK], k_sp[HLO_MAX_RANK], out_sp[HLO_MAX_RANK];
  int64_t in_sp_stride[HLO_MAX_RANK]; /* row-major over in_sp, in spatial positions */
  int64_t in_sp_total, k_sp_total, out_sp_total;
  /* coord[s][p * k_sp[s] + q]: input coordinate that kernel tap q meets at output
   * position p along spatial dim s, or -1 where it meets padding or a dilation hole. */
  int64_t *coord[HLO_MAX_RANK];
  /* x_base[o]: packed-input offset of the feature run output feature o reads (its feature
   * group's first input feature, in its batch group's first batch). */
  int64_t *x_base;
} conv_geom;

#define DEFINE_CONV_CORE(NAME, T)                                                          \
  static void NAME(const conv_geom *g, const T *x, const T *w, T *y, T *acc) {             \
    int64_t p[HLO_MAX_RANK] = {0}, q[HLO_MAX_RANK];                                       \
    for (int64_t b = 0; b < g->n_out; b++) {                                               \
      for (int s = 0; s < g->ns; s++) p[s] = 0;                                            \
      for (int64_t pl = 0; pl < g->out_sp_total; pl++) {                                   \
        for (int64_t o = 0; o < g->c_out; o++) acc[o] = 0;                                 \
        for (int s = 0; s < g->ns; s++) q[s] = 0;                                          \
        for (int64_t ql = 0; ql < g->k_sp_total; ql++) {                                   \
          int64_t sp = 0;                                                                  \
          bool inside = true;                                                              \
          for (int s = 0; s < g->ns && inside; s++) {                                      \
            int64_t c = g->coord[s][p[s] * g->k_sp[s] + q[s]];                             \
            inside = c >= 0;                                                               \
            sp += c * g->in_sp_stride[s];                                                  \
          }                                                                                \
          if (inside) {                                                                    \
            int64_t xoff = (b * g->in_sp_total + sp) * g->c_in;                            \
            const T *wq = w + ql * g->c_out * g->cg;                                       \
            for (int64_t o = 0; o < g->c_out; o++) {                                       \
              const T *xr = x + g->x_base[o] + xoff, *wr = wq + o * g->cg;                 \
              T a0 = 0, a1 = 0;                                                            \
              int64_t k = 0;                                                               \
              for (; k + 2 <= g->cg; k += 2) {                                             \
                a0 += xr[k] * wr[k];                                                       \
                a1 += xr[k + 1] * wr[k + 1];                                               \
              }                                                                            \
              if (k < g->cg) a0 += xr[k] * wr[k];                                          \
              acc[o] += a0 + a1;                                                           \
            }                                                                              \
          }                                                                                \
          eval_next_index(g->ns, g->k_sp, q);                                              \
        }                                                                                  \
        memcpy(y + (b * g->out_sp_total + pl) * g->c_out, acc, (size_t)g->c_out * sizeof(T)); \
        eval_next_index(g->ns, g->out_sp, p);                                              \
      }                                                                                    \
    }                                                                                      \
  }
DEFINE_CONV_CORE(conv_core_f64, double)
DEFINE_CONV_CORE(conv_core_u64, uint64_t)

/* Number of windows along one spatial dim (StableHLO's num_windows, which is XLA's
 * shape inference), or -1 when an intermediate size overflows int64. */
static int64_t conv_num_windows(int64_t in, int64_t k, const hlo_window_dim *wd) {
  int64_t in_dil = 0, k_dil = 0, padded;
  if (in > 0) {
    if (!mul_ok(in - 1, wd->lhs_dilate, &in_dil) || !add_ok(in_dil, 1, &in_dil)) return -1;
  }
  if (k > 0) {
    if (!mul_ok(k - 1, wd->rhs_dilate, &k_dil) || !add_ok(k_dil, 1, &k_dil)) return -1;
  }
  if (!add_ok(in_dil, wd->pad_lo, &padded) || !add_ok(padded, wd->pad_hi, &padded)) return -1;
  if (padded <= 0 || k_dil > padded) return 0;
  return (padded - k_dil) / wd->stride + 1;
}

static kiln_status conv_check(const hlo_instr *ins, const hlo_literal *x, const hlo_literal *w, conv_geom *g) {
  const hlo_conv_dnums *cd = &ins->conv;
  int rank = x->shape.rank, ns = cd->n_spatial;
  if (w->shape.rank != rank || ins->shape.rank != rank || ns != rank - 2 || ns < 0)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "convolution ranks disagree: input %d, kernel %d, result %d, %d spatial",
                    rank, w->shape.rank, ins->shape.rank, ns);
  if (ins->window.rank != ns && !(ins->window.rank == 0 && ns == 0))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "window has %d dims, convolution has %d spatial dims",
                    ins->window.rank, ns);
  /* Each of input/kernel/output labels must name every dim exactly once. */
  int64_t lists[3][HLO_MAX_RANK];
  for (int s = 0; s < ns; s++) {
    lists[0][s] = cd->input_spatial[s];
    lists[1][s] = cd->kernel_spatial[s];
    lists[2][s] = cd->output_spatial[s];
  }
  lists[0][ns] = cd->input_batch, lists[0][ns + 1] = cd->input_feature;
  lists[1][ns] = cd->kernel_input_feature, lists[1][ns + 1] = cd->kernel_output_feature;
  lists[2][ns] = cd->output_batch, lists[2][ns + 1] = cd->output_feature;
  for (int l = 0; l < 3; l++) {
    bool seen[HLO_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
      int64_t d = lists[l][i];
      if (d < 0 || d >= rank || seen[d])
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid convolution dim_labels");
      seen[d] = true;
    }
  }
  int64_t fgc = ins->feature_group_count, bgc = ins->batch_group_count;
  g->ns = ns;
  g->n_in = x->shape.dims[cd->input_batch];
  g->c_in = x->shape.dims[cd->input_feature];
  g->c_out = w->shape.dims[cd->kernel_output_feature];
  g->cg = w->shape.dims[cd->kernel_input_feature];
  if (fgc < 1 || bgc < 1 || g->c_in % fgc != 0 || g->cg != g->c_in / fgc || g->c_out % fgc != 0 ||
      g->c_out % bgc != 0 || g->n_in % bgc != 0)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins,
                    "inconsistent convolution features/groups: input batch %lld, input features %lld, kernel input "
                    "features %lld, output features %lld, feature_group_count %lld, batch_group_count %lld",
                    (long long)g->n_in, (long long)g->c_in, (long long)g->cg, (long long)g->c_out, (long long)fgc,
                    (long long)bgc);
  g->n_out = g->n_in / bgc;
  if (ins->shape.dims[cd->output_batch] != g->n_out || ins->shape.dims[cd->output_feature] != g->c_out)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result batch/feature sizes %lld/%lld, expected %lld/%lld",
                    (long long)ins->shape.dims[cd->output_batch], (long long)ins->shape.dims[cd->output_feature],
                    (long long)g->n_out, (long long)g->c_out);
  g->in_sp_total = g->k_sp_total = g->out_sp_total = 1;
  bool overflow = false;
  for (int s = 0; s < ns; s++) {
    const hlo_window_dim *wd = &ins->window.dims[s];
    g->in_sp[s] = x->shape.dims[cd->input_spatial[s]];
    g->k_sp[s] = w->shape.dims[cd->kernel_spatial[s]];
    g->out_sp[s] = ins->shape.dims[cd->output_spatial[s]];
    if (wd->size != g->k_sp[s] || wd->stride < 1 || wd->lhs_dilate < 1 || wd->rhs_dilate < 1)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins,
                      "window dim %d (size %lld, stride %lld, lhs_dilate %lld, rhs_dilate %lld) does not fit a kernel "
                      "of size %lld",
                      s, (long long)wd->size, (long long)wd->stride, (long long)wd->lhs_dilate,
                      (long long)wd->rhs_dilate, (long long)g->k_sp[s]);
    int64_t nw = conv_num_windows(g->in_sp[s], g->k_sp[s], wd);
    if (nw != g->out_sp[s])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result spatial dim %d has size %lld, the window gives %lld", s,
                      (long long)g->out_sp[s], (long long)nw);
    mul_into(&g->in_sp_total, g->in_sp[s], &overflow);
    mul_into(&g->k_sp_total, g->k_sp[s], &overflow);
    mul_into(&g->out_sp_total, g->out_sp[s], &overflow);
    int64_t taps = g->out_sp[s];
    mul_into(&taps, g->k_sp[s], &overflow);
  }
  /* With an empty operand or result the caller returns zeros without using the totals. */
  if (overflow && x->n && w->n && shape_elements(&ins->shape) != 0)
    return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "convolution dimensions too large");
  row_major_strides(ns, g->in_sp, g->in_sp_stride);
  return NULL;
}

static void conv_geom_free(conv_geom *g) {
  for (int s = 0; s < g->ns; s++) free(g->coord[s]);
  free(g->x_base);
}

/* Fills the per-dimension tap tables and per-feature input offsets. */
static kiln_status conv_tables(const hlo_instr *ins, conv_geom *g) {
  for (int s = 0; s < g->ns; s++) {
    const hlo_window_dim *wd = &ins->window.dims[s];
    int64_t n = g->out_sp[s] * g->k_sp[s];
    TRY(alloc8(ins, n, (void **)&g->coord[s]));
    int64_t in = g->in_sp[s], k = g->k_sp[s];
    int64_t in_dil = in > 0 ? (in - 1) * wd->lhs_dilate + 1 : 0; /* no overflow: checked before */
    for (int64_t p = 0; p < g->out_sp[s]; p++)
      for (int64_t q = 0; q < k; q++) {
        /* Reversal flips the window, i.e. tap q meets the input where tap k-1-q would. */
        int64_t tap = wd->reversal ? k - 1 - q : q, pos, c = -1;
        if (mul_ok(p, wd->stride, &pos) && add_ok(pos, tap * wd->rhs_dilate, &pos) &&
            !__builtin_sub_overflow(pos, wd->pad_lo, &pos) && pos >= 0 && pos < in_dil && pos % wd->lhs_dilate == 0)
          c = pos / wd->lhs_dilate;
        g->coord[s][p * k + q] = c;
      }
  }
  TRY(alloc8(ins, g->c_out, (void **)&g->x_base));
  int64_t per_fgroup = g->c_out / ins->feature_group_count, per_bgroup = g->c_out / ins->batch_group_count;
  for (int64_t o = 0; o < g->c_out; o++) {
    int64_t fgroup = o / per_fgroup, bgroup = o / per_bgroup;
    g->x_base[o] = bgroup * g->n_out * g->in_sp_total * g->c_in + fgroup * g->cg;
  }
  return NULL;
}

kiln_status eval_convolution(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  *out = NULL;
  if (ins->n_operands != 2 || !is_plain_array(ops[0]) || !is_plain_array(ops[1]) ||
      !hlo_type_is_array(ins->shape.type) || ins->shape.type == HLO_TOKEN)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "convolution needs two array operands and an array result");
  conv_geom g;
  memset(&g, 0, sizeof g);
  TRY(conv_check(ins, ops[0], ops[1], &g));
  const hlo_conv_dnums *cd = &ins->conv;
  int ns = g.ns, rank = ns + 2;
  int xperm[HLO_MAX_RANK], wperm[HLO_MAX_RANK];
  xperm[0] = (int)cd->input_batch;
  for (int s = 0; s < ns; s++) {
    xperm[1 + s] = (int)cd->input_spatial[s];
    wperm[s] = (int)cd->kernel_spatial[s];
  }
  xperm[ns + 1] = (int)cd->input_feature;
  wperm[ns] = (int)cd->kernel_output_feature;
  wperm[ns + 1] = (int)cd->kernel_input_feature;

  hlo_literal *xown = NULL, *wown = NULL, *res = NULL;
  TRY(literal_create(&ins->shape, &res));
  /* Empty sums are zero: skip the tables, which for an empty operand could be huge. */
  if (res->n == 0 || ops[0]->n == 0 || ops[1]->n == 0) {
    *out = res;
    return NULL;
  }
  const hlo_literal *xv, *wv;
  void *xp = NULL, *wp = NULL, *yp = NULL, *yn = NULL, *acc = NULL;
  bool f = acc_is_float(ins->shape.type);
  kiln_status st = conv_tables(ins, &g);
  if (!st) st = in_result_type(ins, ops[0], &xown, &xv);
  if (!st) st = in_result_type(ins, ops[1], &wown, &wv);
  if (!st) st = pack(ins, xv, xperm, f, &xp);
  if (!st) st = pack(ins, wv, wperm, f, &wp);
  if (!st) st = alloc8(ins, res->n, &yp);
  if (!st) st = alloc8(ins, res->n, &yn);
  if (!st) st = alloc8(ins, g.c_out, &acc);
  if (!st) {
    if (f)
      conv_core_f64(&g, xp, wp, yp, acc);
    else
      conv_core_u64(&g, xp, wp, yp, acc);
    /* Packed output [batch][spatial...][feature] back to the result's dim order. */
    int64_t pdims[HLO_MAX_RANK], pstrides[HLO_MAX_RANK], ostrides[HLO_MAX_RANK], dstrides[HLO_MAX_RANK];
    row_major_strides(rank, ins->shape.dims, ostrides);
    pdims[0] = g.n_out;
    dstrides[0] = ostrides[cd->output_batch];
    for (int s = 0; s < ns; s++) {
      pdims[1 + s] = g.out_sp[s];
      dstrides[1 + s] = ostrides[cd->output_spatial[s]];
    }
    pdims[ns + 1] = g.c_out;
    dstrides[ns + 1] = ostrides[cd->output_feature];
    row_major_strides(rank, pdims, pstrides);
    permute8(rank, pdims, yp, pstrides, yn, dstrides);
    if (f)
      store_f64(res, yn);
    else
      store_u64(res, yn);
  }
  conv_geom_free(&g);
  free(xp);
  free(wp);
  free(yp);
  free(yn);
  free(acc);
  literal_free(xown);
  literal_free(wown);
  if (st) {
    literal_free(res);
    return st;
  }
  *out = res;
  return NULL;
}
