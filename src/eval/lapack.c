/* Evaluator kernels for the LAPACK custom-calls JAX emits on CPU (jaxlib's typed-FFI
 * targets lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr}_ffi, decoded by hlo/lapack_call.h).
 * The evaluator is the oracle the cpu backend's LAPACK thunks are tested against, so each
 * routine here is the plain textbook algorithm written out independently of LAPACK's
 * source, unblocked, over row-major literals on logical indices (layouts never matter),
 * computing in the literal's own type (f32 in float, f64 in double) so that its rounding
 * is that of a real f32/f64 factorisation rather than an over-precise one. Where LAPACK
 * fixes a convention that callers observe -- 1-based pivots and info, the triangle of a
 * Cholesky factor that is left untouched, the sign of a Householder beta, tau = 0 for a
 * column that needs no reflection, the implicit unit head of a reflector -- the same
 * convention is followed, so results agree with LAPACK's up to rounding (the elimination
 * and summation orders differ). Each batch matrix is independent; a failing factorisation
 * (info > 0) only stops its own matrix. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"
#include "hlo/lapack_call.h"

/* ---------------------------------------------------------------- potrf */

/* Cholesky factor of an n x n matrix in place, returning LAPACK's info. The upper case
 * (A = U^T U) is the lower one (A = L L^T) of the transposed view, L = U^T: element
 * (i, j) of L lives at a[i * rs + j * cs], so one loop serves both triangles and reads
 * and writes only the chosen one, leaving the other as the caller passed it. A pivot that
 * is not positive (or NaN, hence the negated comparison) stops the matrix: columns before
 * it are factored, it and everything after keep their input values. Entries below the
 * diagonal are divided by it, not multiplied by its reciprocal: one rounding, not two. */
#define DEFINE_POTRF(NAME, T, SQRT)                                   \
  static int32_t NAME(T *a, int64_t n, bool lower) {                  \
    int64_t rs = lower ? n : 1, cs = lower ? 1 : n;                   \
    for (int64_t j = 0; j < n; j++) {                                 \
      T dot = 0;                                                      \
      for (int64_t p = 0; p < j; p++)                                 \
        dot += a[j * rs + p * cs] * a[j * rs + p * cs];               \
      T d = a[j * rs + j * cs] - dot;                                 \
      if (!(d > 0)) return (int32_t)(j + 1);                          \
      T ljj = SQRT(d);                                                \
      a[j * rs + j * cs] = ljj;                                       \
      for (int64_t i = j + 1; i < n; i++) {                           \
        T s = 0;                                                      \
        for (int64_t p = 0; p < j; p++)                               \
          s += a[i * rs + p * cs] * a[j * rs + p * cs];               \
        a[i * rs + j * cs] = (a[i * rs + j * cs] - s) / ljj;          \
      }                                                               \
    }                                                                 \
    return 0;                                                         \
  }
DEFINE_POTRF(potrf_f32, float, sqrtf)
DEFINE_POTRF(potrf_f64, double, sqrt)

/* ---------------------------------------------------------------- getrf */

/* LU with partial pivoting of an m x n matrix in place (right-looking, one column at a
 * time): L's unit diagonal is implicit, U is on and above the diagonal, ipiv holds the
 * 1-based row swapped with each row j. The pivot is the first row with the largest
 * magnitude; NaN magnitudes are skipped, so a NaN is never preferred to a number, and a
 * column of nothing but NaN keeps its pivot at row j. A zero pivot records info (the
 * first one only) and leaves its column unscaled, as LAPACK does, but elimination goes
 * on so that the remaining columns are still factored. The multipliers are divided by
 * the pivot rather than multiplied by its reciprocal: one rounding instead of two. */
#define DEFINE_GETRF(NAME, T, FABS)                                   \
  static int32_t NAME(T *a, int64_t m, int64_t n, int32_t *ipiv) {    \
    int32_t info = 0;                                                 \
    int64_t mn = m < n ? m : n;                                       \
    for (int64_t j = 0; j < mn; j++) {                                \
      int64_t p = -1;                                                 \
      T best = 0;                                                     \
      for (int64_t i = j; i < m; i++) {                               \
        T v = FABS(a[i * n + j]);                                     \
        if (isnan(v)) continue;                                       \
        if (p < 0 || v > best) p = i, best = v;                       \
      }                                                               \
      if (p < 0) p = j;                                               \
      ipiv[j] = (int32_t)(p + 1);                                     \
      if (p != j)                                                     \
        for (int64_t c = 0; c < n; c++) {                             \
          T t = a[j * n + c];                                         \
          a[j * n + c] = a[p * n + c];                                \
          a[p * n + c] = t;                                           \
        }                                                             \
      T piv = a[j * n + j];                                           \
      if (piv == 0) {                                                 \
        if (info == 0) info = (int32_t)(j + 1);                       \
      } else {                                                        \
        for (int64_t i = j + 1; i < m; i++) a[i * n + j] /= piv;      \
      }                                                               \
      for (int64_t i = j + 1; i < m; i++) {                           \
        T l = a[i * n + j];                                           \
        for (int64_t c = j + 1; c < n; c++) a[i * n + c] -= l * a[j * n + c]; \
      }                                                               \
    }                                                                 \
    return info;                                                      \
  }
DEFINE_GETRF(getrf_f32, float, fabsf)
DEFINE_GETRF(getrf_f64, double, fabs)

/* ---------------------------------------------------------------- trsm */

/* Solves M y = x in place for one vector x (elements x[i * stride]), M a k x k
 * triangular matrix read from a as M(i, p) = a[i * ri + p * ci]: a itself (ri = k,
 * ci = 1) or its transpose (ri = 1, ci = k). Every trsm case reduces to this: the four
 * side x transpose combinations only change which view of a is M and whether x is a
 * column or a row of b (see eval_lapack's trsm case). Lower M: forward substitution, upper: backward;
 * either way only M's own triangle is read, and its diagonal not at all when it is
 * implicitly 1. */
#define DEFINE_TRSV(NAME, T)                                                                     \
  static void NAME(const T *a, int64_t k, int64_t ri, int64_t ci, bool m_lower, bool unit, T *x, \
                   int64_t stride) {                                                             \
    for (int64_t step = 0; step < k; step++) {                                                   \
      int64_t i = m_lower ? step : k - 1 - step;                                                 \
      int64_t lo = m_lower ? 0 : i + 1, hi = m_lower ? i : k;                                    \
      T s = 0;                                                                                   \
      for (int64_t p = lo; p < hi; p++) s += a[i * ri + p * ci] * x[p * stride];                 \
      T v = x[i * stride] - s;                                                                   \
      x[i * stride] = unit ? v : v / a[i * ri + i * ci];                                         \
    }                                                                                            \
  }
DEFINE_TRSV(trsv_f32, float)
DEFINE_TRSV(trsv_f64, double)

/* ---------------------------------------------------------------- geqrf */

/* ||x|| of len elements at stride. f32: squares summed in double cannot overflow or
 * underflow for any float, and rounding the root once gives the float norm. f64: a
 * running hypot, which never squares an element, so huge or tiny columns keep their norm
 * (a plain sum of squares would overflow beyond ~1e154). */
static float norm_f32(const float *x, int64_t len, int64_t stride) {
  double s = 0;
  for (int64_t i = 0; i < len; i++) s += (double)x[i * stride] * (double)x[i * stride];
  return (float)sqrt(s);
}
static double norm_f64(const double *x, int64_t len, int64_t stride) {
  double r = 0;
  for (int64_t i = 0; i < len; i++) r = hypot(r, x[i * stride]);
  return r;
}

/* Applies H = I - tau v v^T from the left to columns c0..n-1 of the m x n matrix q.
 * The reflector acts on rows j..m-1: its head (row j) is an implicit 1, never read (in
 * geqrf's storage that place holds beta), and its element for row i > j is
 * v[(i - j) * vs]. Per column, w = tau (v^T q_c), then q_c -= w v. */
#define DEFINE_APPLY_REFLECTOR(NAME, T)                                                          \
  static void NAME(const T *v, int64_t vs, T tau, int64_t j, T *q, int64_t m, int64_t n, int64_t c0) { \
    for (int64_t c = c0; c < n; c++) {                                                           \
      T w = q[j * n + c];                                                                        \
      for (int64_t i = j + 1; i < m; i++) w += v[(i - j) * vs] * q[i * n + c];                   \
      w = tau * w;                                                                               \
      q[j * n + c] -= w;                                                                         \
      for (int64_t i = j + 1; i < m; i++) q[i * n + c] -= v[(i - j) * vs] * w;                   \
    }                                                                                            \
  }
DEFINE_APPLY_REFLECTOR(reflect_f32, float)
DEFINE_APPLY_REFLECTOR(reflect_f64, double)

/* Householder QR of an m x n matrix in place, one column at a time: the reflector
 * H = I - tau v v^T maps column j's (alpha, x) to (beta, 0). beta takes the sign
 * opposite to alpha so that alpha - beta never cancels; v = x / (alpha - beta) is stored
 * below the diagonal with its leading 1 implicit, beta on the diagonal, and H is applied
 * to the columns on the right. A column already zero below the diagonal gets tau = 0
 * (H = I) and stays as it is, whatever alpha's sign, which is LAPACK's convention too. */
#define DEFINE_GEQRF(NAME, T, NORM, HYPOT, COPYSIGN, REFLECT)                   \
  static void NAME(T *a, int64_t m, int64_t n, T *tau) {                        \
    int64_t mn = m < n ? m : n;                                                 \
    for (int64_t j = 0; j < mn; j++) {                                          \
      T alpha = a[j * n + j];                                                   \
      T xnorm = NORM(a + (j + 1) * n + j, m - j - 1, n);                        \
      if (xnorm == 0) {                                                         \
        tau[j] = 0;                                                             \
        continue;                                                               \
      }                                                                         \
      T beta = -COPYSIGN(HYPOT(alpha, xnorm), alpha);                           \
      tau[j] = (beta - alpha) / beta;                                           \
      T scale = 1 / (alpha - beta);                                             \
      for (int64_t i = j + 1; i < m; i++) a[i * n + j] *= scale;                \
      a[j * n + j] = beta;                                                      \
      REFLECT(a + j * n + j, n, tau[j], j, a, m, n, j + 1);                     \
    }                                                                           \
  }
DEFINE_GEQRF(geqrf_f32, float, norm_f32, hypotf, copysignf, reflect_f32)
DEFINE_GEQRF(geqrf_f64, double, norm_f64, hypot, copysign, reflect_f64)

/* ---------------------------------------------------------------- orgqr */

/* The first n columns of Q = H_0 H_1 ... H_{k-1} (reflectors as geqrf stores them in v,
 * an m x n matrix, with their tau), written to q (m x n): the identity's first n columns
 * with H_{k-1} applied first and H_0 last. H_i only needs columns i.. : columns before i
 * are still unit vectors e_c with c < i at that point (the reflectors applied so far
 * touch rows > i only), and v_i is zero above row i, so H_i e_c = e_c exactly. tau = 0
 * means H = I and is skipped, so an inf or NaN in an unused v cannot leak in as 0 * inf. */
#define DEFINE_ORGQR(NAME, T, REFLECT)                                                   \
  static void NAME(const T *v, const T *tau, int64_t m, int64_t n, int64_t k, T *q) {    \
    memset(q, 0, (size_t)(m * n) * sizeof(T));                                           \
    for (int64_t i = 0; i < n; i++) q[i * n + i] = 1;                                    \
    for (int64_t i = k - 1; i >= 0; i--)                                                 \
      if (tau[i] != 0) REFLECT(v + i * n + i, n, tau[i], i, q, m, n, i);                 \
  }
DEFINE_ORGQR(orgqr_f32, float, reflect_f32)
DEFINE_ORGQR(orgqr_f64, double, reflect_f64)

/* ---------------------------------------------------------------- the kernel */

bool eval_lapack_supported(const hlo_instr *ins) {
  if (!hlo_is_lapack_call(ins)) return false;
  hlo_lapack_call c;
  kiln_status s = hlo_lapack_call_read(ins, &c);
  bool ok = s == NULL;
  kiln_status_free(s);
  return ok;
}

/* A result leaf: element I of a tuple result, or the array result itself. */
static const hlo_shape *result_shape(const hlo_instr *ins, int i) {
  return shape_is_tuple(&ins->shape) ? &ins->shape.elems[i] : &ins->shape;
}

/* A new literal of shape S holding a copy of SRC's data (same element count). */
static kiln_status copy_of(const hlo_shape *s, const hlo_literal *src, hlo_literal **out) {
  TRY(literal_create_uninit(s, out));
  if (src->n) memcpy((*out)->data, src->data, (size_t)src->n * hlo_type_size(src->shape.type));
  return NULL;
}

kiln_status eval_lapack(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  *out = NULL;
  hlo_lapack_call c;
  TRY(hlo_lapack_call_read(ins, &c)); /* its errors name the instruction and the target */
  /* The decoder checked the instruction's shapes; the literals must be the operands'. */
  for (int i = 0; i < ins->n_operands; i++)
    if (!ops[i] || !shape_compatible(&ops[i]->shape, &ins->operands[i]->shape) || (ops[i]->n && !ops[i]->data))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d's value does not have the operand's shape", i);
  /* Pivots and info are s32 and 1-based, so every index they may hold must fit. */
  if (c.m > INT32_MAX || c.n > INT32_MAX)
    return EVAL_ERR(KILN_UNIMPLEMENTED, ins, "matrices of %lld x %lld are too large for s32 pivots",
                    (long long)c.m, (long long)c.n);
  bool f32 = c.type == HLO_F32;
  size_t es = hlo_type_size(c.type);
  int64_t mat = c.m * c.n; /* elements per batch matrix */
  /* Empty matrices need no work (and their literals may have no data to point into):
   * the zero-filled info and pivot results are already right. */
  int64_t nb = mat ? c.batch : 0;
  hlo_literal *res[3] = {NULL, NULL, NULL};
  int n_res = 1;
  kiln_status st = NULL;

  switch (c.routine) {
    case HLO_LAPACK_POTRF: {
      n_res = 2;
      st = copy_of(result_shape(ins, 0), ops[0], &res[0]);
      if (!st) st = literal_create(result_shape(ins, 1), &res[1]);
      if (st) break;
      int32_t *info = res[1]->data;
      for (int64_t b = 0; b < nb; b++) {
        char *a = (char *)res[0]->data + (size_t)(b * mat) * es;
        info[b] = f32 ? potrf_f32((float *)a, c.n, c.lower) : potrf_f64((double *)a, c.n, c.lower);
      }
      break;
    }
    case HLO_LAPACK_GETRF: {
      n_res = 3;
      int64_t mn = c.m < c.n ? c.m : c.n;
      st = copy_of(result_shape(ins, 0), ops[0], &res[0]);
      if (!st) st = literal_create(result_shape(ins, 1), &res[1]);
      if (!st) st = literal_create(result_shape(ins, 2), &res[2]);
      if (st) break;
      int32_t *ipiv = res[1]->data, *info = res[2]->data;
      for (int64_t b = 0; b < nb; b++) {
        char *a = (char *)res[0]->data + (size_t)(b * mat) * es;
        int32_t *piv = ipiv + b * mn;
        info[b] = f32 ? getrf_f32((float *)a, c.m, c.n, piv) : getrf_f64((double *)a, c.m, c.n, piv);
      }
      break;
    }
    case HLO_LAPACK_TRSM: {
      /* Every case is M y = x with M a view of a (see DEFINE_TRSV). left, op(a) X = B:
       * M = op(a), x a column of B. right, X op(a) = B, i.e. op(a)^T X^T = B^T: M =
       * op(a)^T, x a row of B. M is a's transpose exactly when `tr` below, and M is lower
       * triangular when a is lower xor M is transposed. */
      st = copy_of(result_shape(ins, 0), ops[1], &res[0]);
      if (st) break;
      bool tr = c.left ? c.transpose : !c.transpose;
      int64_t k = c.k, ri = tr ? 1 : k, ci = tr ? k : 1;
      bool m_lower = c.lower != tr;
      int64_t n_vec = c.left ? c.n : c.m, vec_step = c.left ? 1 : c.n, stride = c.left ? c.n : 1;
      for (int64_t b = 0; b < nb; b++) {
        const char *a = (const char *)ops[0]->data + (size_t)(b * k * k) * es;
        char *x = (char *)res[0]->data + (size_t)(b * mat) * es;
        for (int64_t v = 0; v < n_vec; v++) {
          if (f32)
            trsv_f32((const float *)a, k, ri, ci, m_lower, c.unit_diagonal, (float *)x + v * vec_step, stride);
          else
            trsv_f64((const double *)a, k, ri, ci, m_lower, c.unit_diagonal, (double *)x + v * vec_step, stride);
        }
      }
      break;
    }
    case HLO_LAPACK_GEQRF: {
      n_res = 2;
      int64_t mn = c.m < c.n ? c.m : c.n;
      st = copy_of(result_shape(ins, 0), ops[0], &res[0]);
      if (!st) st = literal_create(result_shape(ins, 1), &res[1]);
      if (st) break;
      for (int64_t b = 0; b < nb; b++) {
        char *a = (char *)res[0]->data + (size_t)(b * mat) * es;
        char *tau = (char *)res[1]->data + (size_t)(b * mn) * es;
        if (f32)
          geqrf_f32((float *)a, c.m, c.n, (float *)tau);
        else
          geqrf_f64((double *)a, c.m, c.n, (double *)tau);
      }
      break;
    }
    case HLO_LAPACK_ORGQR: {
      st = literal_create_uninit(result_shape(ins, 0), &res[0]);
      if (st) break;
      for (int64_t b = 0; b < nb; b++) {
        const char *v = (const char *)ops[0]->data + (size_t)(b * mat) * es;
        const char *tau = (const char *)ops[1]->data + (size_t)(b * c.k) * es;
        char *q = (char *)res[0]->data + (size_t)(b * mat) * es;
        if (f32)
          orgqr_f32((const float *)v, (const float *)tau, c.m, c.n, c.k, (float *)q);
        else
          orgqr_f64((const double *)v, (const double *)tau, c.m, c.n, c.k, (double *)q);
      }
      break;
    }
  }
  if (st) {
    for (int i = 0; i < 3; i++) literal_free(res[i]);
    return st;
  }
  *out = shape_is_tuple(&ins->shape) ? literal_tuple(n_res, res) : res[0];
  return NULL;
}
