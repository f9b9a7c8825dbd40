/* Evaluator kernels for the LAPACK custom-calls JAX emits on CPU (jaxlib's typed-FFI
 * targets lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr,syevd,gesdd}_ffi, decoded by
 * hlo/lapack_call.h). The evaluator is the oracle the cpu backend's LAPACK thunks are
 * tested against, so each routine here is the plain textbook algorithm written out
 * independently of LAPACK's source, unblocked, over row-major literals on logical indices
 * (layouts never matter). The factorisations compute in the literal's own type (f32 in
 * float, f64 in double) so that their rounding is that of a real f32/f64 factorisation
 * rather than an over-precise one; the eigen- and singular value decompositions, being
 * iterative, compute in double and round once (their section says why, and which
 * conventions they fix where LAPACK leaves a choice). Where LAPACK
 * fixes a convention that callers observe -- 1-based pivots and info, the triangle of a
 * Cholesky factor that is left untouched, the sign of a Householder beta, tau = 0 for a
 * column that needs no reflection, the implicit unit head of a reflector -- the same
 * convention is followed, so results agree with LAPACK's up to rounding (the elimination
 * and summation orders differ). Each batch matrix is independent; a failing factorisation
 * (info > 0) only stops its own matrix. */
#include <float.h>
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

/* ---------------------------------------------------------------- syevd, gesdd */

/* The two decompositions are iterative, and what they return is defined by invariants
 * (A = V diag(w) V^T, a = u diag(s) vt, orthonormal vectors), not by a fixed sequence of
 * roundings that LAPACK and we could share; so, unlike the factorisations above, they run
 * in double for f32 and f64 alike and round each result once into the literal's type. An
 * f32 result is then as accurate as f32 can hold, the strictest oracle for a backend. Both
 * use Jacobi methods (Golub & Van Loan, "Matrix Computations", 8.5 and 8.6.3): slower than
 * LAPACK's divide and conquer, but short, and accurate to the working precision.
 *
 * Conventions where LAPACK leaves a choice (callers compare invariants, not vectors):
 * - Sign: each eigenvector, and each right singular vector (row of vt) with its column of
 *   u, is flipped so that its largest-magnitude component (the first on ties) is positive.
 *   LAPACK fixes no sign, so a backend may differ by a sign per vector.
 * - Failure: a NaN or inf in what the routine reads, or no convergence within
 *   JACOBI_MAX_SWEEPS sweeps, gives info = 1 (LAPACK's info > 0 means non-convergence) and
 *   NaN in every specified output of that matrix (w; v in mode 'V'; s; u and vt in modes
 *   'A' and 'S'). The unspecified outputs follow the mode's rule below either way.
 * - Unspecified outputs: syevd mode 'N' returns the operand unchanged as v; gesdd returns
 *   the operand unchanged as a' (LAPACK overwrites it with scratch) and, in mode 'N',
 *   zeros as u and vt, whatever shape the result gives them. */

#define JACOBI_MAX_SWEEPS 100 /* converged matrices take ~10: quadratic convergence */

/* The power of two e with max_abs = f 2^e, f in [0.5, 1) (0 for 0). Both routines work
 * on the matrix scaled by 2^-e: exact (ldexp), and it keeps the sums of squares below
 * from overflowing for f64 entries near DBL_MAX or losing subnormal ones; eigen- and
 * singular values are scaled back at the end, vectors do not change. */
static int scale_exponent(double max_abs) {
  int e = 0;
  if (max_abs > 0) frexp(max_abs, &e);
  return e;
}

/* t = tan(theta) of the Jacobi rotation [[c, s], [-s, c]] that diagonalises the symmetric
 * 2 x 2 [[app, apq], [apq, aqq]] (apq != 0): the root of t^2 + 2 tau t - 1 = 0,
 * tau = (aqq - app) / (2 apq), of smaller magnitude (|theta| <= pi/4, which the
 * convergence of cyclic Jacobi relies on), written so that nothing cancels; hypot keeps
 * tau^2 from overflowing. tau = 0 gives t = 1 (theta = pi/4). */
static double jacobi_tangent(double app, double aqq, double apq) {
  double tau = (aqq - app) / (2 * apq);
  double t = 1 / (fabs(tau) + hypot(1, tau));
  return tau < 0 ? -t : t;
}

/* Rotates columns x and y (len elements, contiguous) by [[c, s], [-s, c]]:
 * x' = c x - s y, y' = s x + c y. */
static void rotate_pair(double *x, double *y, int64_t len, double c, double s) {
  for (int64_t i = 0; i < len; i++) {
    double xi = x[i], yi = y[i];
    x[i] = c * xi - s * yi;
    y[i] = s * xi + c * yi;
  }
}

static double dot_d(const double *x, const double *y, int64_t len) {
  double s = 0;
  for (int64_t i = 0; i < len; i++) s += x[i] * y[i];
  return s;
}

/* Flips x (and its partner y, when given) so that x's largest-magnitude component, the
 * first of equal ones, is positive: the deterministic sign described above. */
static void normalize_sign(double *x, int64_t len, double *y, int64_t ylen) {
  int64_t best = 0;
  for (int64_t i = 1; i < len; i++)
    if (fabs(x[i]) > fabs(x[best])) best = i;
  if (len == 0 || !(x[best] < 0)) return;
  for (int64_t i = 0; i < len; i++) x[i] = -x[i];
  if (y)
    for (int64_t i = 0; i < ylen; i++) y[i] = -y[i];
}

/* ord[0..n) = the indices of key[0..n) sorted ascending (descending when DESC), stable
 * (equal keys keep their order). Insertion sort: n is a matrix order, and the Jacobi
 * sweeps before it cost n^3. */
static void sort_order(const double *key, int64_t n, bool desc, int64_t *ord) {
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i;
    while (j > 0 && (desc ? key[ord[j - 1]] < key[i] : key[ord[j - 1]] > key[i])) {
      ord[j] = ord[j - 1];
      j--;
    }
    ord[j] = i;
  }
}

/* Cyclic Jacobi on the symmetric n x n a (row-major, both triangles, |a| <= 1): a
 * rotation J in each plane (p, q) in turn zeroes a(p, q), a <- J^T a J, and is
 * accumulated into v <- v J, v starting as I; v is column-major (column j at v + j n, so
 * that a rotation touches two contiguous columns), and its column j ends as the
 * eigenvector of the final a(j, j). Off-diagonal entries too small to matter are
 * skipped: below eps ||a||_F / n (then the off-diagonal
 * part left, below eps ||a||_F in norm, moves no eigenvalue by more than the rounding of
 * a backward-stable method), or below eps sqrt(|a(p,p)| |a(q,q)|) (relative to the
 * diagonal it would change: this keeps the small eigenvalues of graded matrices
 * accurate). A sweep that rotates nothing means convergence. The 2 x 2 block is updated
 * from t rather than rotated (a(p,p) - t a(p,q), a(q,q) + t a(p,q): fewer roundings, and
 * a(p,q) becomes exactly 0). Returns false when JACOBI_MAX_SWEEPS were not enough. */
static bool jacobi_eigen(double *a, double *v, int64_t n) {
  double frob = 0;
  for (int64_t i = 0; i < n * n; i++) frob += a[i] * a[i];
  double abs_tol = DBL_EPSILON * sqrt(frob) / (double)n;
  memset(v, 0, (size_t)(n * n) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i * n + i] = 1;
  for (int sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
    bool rotated = false;
    for (int64_t p = 0; p < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double app = a[p * n + p], aqq = a[q * n + q], apq = a[p * n + q];
        if (fabs(apq) <= abs_tol || fabs(apq) <= DBL_EPSILON * sqrt(fabs(app)) * sqrt(fabs(aqq))) continue;
        double t = jacobi_tangent(app, aqq, apq);
        if (t == 0) continue; /* the rotation would be the identity */
        double c = 1 / sqrt(1 + t * t), s = t * c;
        for (int64_t r = 0; r < n; r++) {
          if (r == p || r == q) continue;
          double arp = a[r * n + p], arq = a[r * n + q];
          a[r * n + p] = a[p * n + r] = c * arp - s * arq;
          a[r * n + q] = a[q * n + r] = s * arp + c * arq;
        }
        a[p * n + p] = app - t * apq;
        a[q * n + q] = aqq + t * apq;
        a[p * n + q] = a[q * n + p] = 0;
        rotate_pair(v + p * n, v + q * n, n, c, s);
        rotated = true;
      }
    if (!rotated) return true;
  }
  return false;
}

/* One syevd matrix: the chosen triangle of `in` (n x n at element offset o) is mirrored
 * into work a, decomposed, and written to v (mode 'V') and w (at offset ow); returns
 * info. work holds 2 n^2 + 2 n doubles. */
static int32_t syevd_one(const hlo_literal *in, int64_t o, int64_t n, bool lower, bool vectors, hlo_literal *vout,
                         hlo_literal *wout, int64_t ow, double *work) {
  double *a = work, *vc = a + n * n, *d = vc + n * n; /* vc: the vectors, column-major */
  int64_t *ord = (int64_t *)(d + n);
  double max_abs = 0;
  bool finite = true;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) {
      /* (i, j) of the lower triangle is (j, i) of the upper one */
      double x = literal_get_f64(in, o + (lower ? i * n + j : j * n + i));
      if (!isfinite(x)) finite = false;
      max_abs = fmax(max_abs, fabs(x));
      a[i * n + j] = a[j * n + i] = x;
    }
  int e = scale_exponent(max_abs);
  for (int64_t i = 0; i < n * n; i++) a[i] = ldexp(a[i], -e);
  if (!finite || !jacobi_eigen(a, vc, n)) {
    for (int64_t j = 0; j < n; j++) literal_set_f64(wout, ow + j, NAN);
    if (vectors)
      for (int64_t i = 0; i < n * n; i++) literal_set_f64(vout, o + i, NAN);
    return 1;
  }
  for (int64_t j = 0; j < n; j++) d[j] = a[j * n + j];
  sort_order(d, n, false, ord);
  for (int64_t j = 0; j < n; j++) {
    literal_set_f64(wout, ow + j, ldexp(d[ord[j]], e));
    if (!vectors) continue;
    double *x = vc + ord[j] * n; /* the eigenvector of the j-th smallest eigenvalue */
    normalize_sign(x, n, NULL, 0);
    for (int64_t i = 0; i < n; i++) literal_set_f64(vout, o + i * n + j, x[i]);
  }
  return 0;
}

/* One-sided (Hestenes) Jacobi on the M x N matrix g (M >= N, column-major: column j at
 * g + j M, |g| <= 1): the rotation of columns j and k that makes them orthogonal is the
 * two-sided one of their Gram matrix [[x.x, x.y], [x.y, y.y]], applied to g from the
 * right and accumulated into v (N x N, column-major, starting as I). On convergence g's
 * columns are orthogonal, g = U diag(s) with s their norms, and the input is g v^T. A
 * pair counts as orthogonal when
 * |x.y| <= M eps |x| |y|: relative to the columns themselves, so small singular values
 * keep their accuracy (Demmel & Veselic), and M eps because a computed dot product of M
 * terms cannot promise better, so a tighter test might never be met. */
static bool jacobi_svd(double *g, int64_t M, int64_t N, double *v) {
  double tol = (double)M * DBL_EPSILON;
  memset(v, 0, (size_t)(N * N) * sizeof *v);
  for (int64_t i = 0; i < N; i++) v[i * N + i] = 1;
  for (int sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
    bool rotated = false;
    for (int64_t j = 0; j < N; j++)
      for (int64_t k = j + 1; k < N; k++) {
        double *x = g + j * M, *y = g + k * M;
        double alpha = dot_d(x, x, M), beta = dot_d(y, y, M), gamma = dot_d(x, y, M);
        if (fabs(gamma) <= tol * sqrt(alpha) * sqrt(beta)) continue; /* a zero column: gamma = 0 */
        double t = jacobi_tangent(alpha, beta, gamma);
        if (t == 0) continue;
        double c = 1 / sqrt(1 + t * t), s = t * c;
        rotate_pair(x, y, M, c, s);
        rotate_pair(v + j * N, v + k * N, N, c, s);
        rotated = true;
      }
    if (!rotated) return true;
  }
  return false;
}

/* x = e_i with its components along columns 0..j-1 of q (M rows, column-major,
 * orthonormal) removed by Gram-Schmidt, run twice ("twice is enough": the second pass
 * removes what the first one's rounding left); returns |x|^2. */
static double basis_residual(double *x, int64_t i, const double *q, int64_t j, int64_t M) {
  memset(x, 0, (size_t)M * sizeof *x);
  x[i] = 1;
  for (int pass = 0; pass < 2; pass++)
    for (int64_t k = 0; k < j; k++) {
      const double *qk = q + k * M;
      double h = dot_d(qk, x, M);
      for (int64_t r = 0; r < M; r++) x[r] -= h * qk[r];
    }
  return dot_d(x, x, M);
}

/* Fills columns from..to-1 of q (M rows, column-major) with unit vectors orthogonal to
 * the columns before them (orthonormal already): each is the residual of the next
 * standard basis vector e_i whose residual is large enough, |.|^2 >= 1 / (2M), normalised.
 * The residuals of all e_i sum (in squares) to the complement's dimension, >= 1 while a
 * column is missing; the e_i passed over hold less than M / (2M) = 1/2 of it (and only
 * lose more as the span grows), so one of the rest qualifies and a single cursor over i
 * serves all the columns: O(M^2) residuals at most, not O(M^3). Should rounding ever
 * leave none, the largest residual of all is taken. */
static void complete_basis(double *q, int64_t M, int64_t from, int64_t to) {
  int64_t next = 0;
  for (int64_t j = from; j < to; j++) {
    double *x = q + j * M;
    bool found = false;
    for (int64_t i = next; i < M && !found; i++)
      if (basis_residual(x, i, q, j, M) >= 1 / (2.0 * (double)M)) found = true, next = i + 1;
    if (!found) {
      double best = -1;
      int64_t best_i = 0;
      for (int64_t i = 0; i < M; i++) {
        double r2 = basis_residual(x, i, q, j, M);
        if (r2 > best) best = r2, best_i = i;
      }
      basis_residual(x, best_i, q, j, M);
    }
    double nrm = sqrt(dot_d(x, x, M));
    for (int64_t r = 0; r < M; r++) x[r] /= nrm;
  }
}

/* Where one gesdd matrix's results go: u (m x ucols) and vt (vrows x n) at element
 * offsets ou, ov; s at os. */
typedef struct svd_out {
  hlo_literal *s, *u, *vt;
  int64_t os, ou, ov, ucols, vrows;
} svd_out;

/* Doubles gesdd_one needs for an m x n matrix (K: the columns of U computed, M or p). */
static int64_t gesdd_work(int64_t m, int64_t n, bool full) {
  int64_t M = m >= n ? m : n, N = m >= n ? n : m, K = full ? M : N;
  return M * N + K * M + 2 * N * N + 2 * N;
}

/* One gesdd matrix (m x n at element offset o of in). The one-sided method wants a tall
 * matrix, so it runs on g = a (m >= n) or g = a^T (m < n), M x N with M >= N = p:
 * g = Ug diag(s) Vg^T gives u = Ug, vt = Vg^T for a, or u = Vg, vt = Ug^T for a^T. Ug's
 * columns are g's after Jacobi divided by their norms, the singular values, sorted
 * descending. A column whose singular value is negligible (<= M eps s_max, zero
 * included) carries no direction worth keeping -- its normalisation would be rounding
 * noise, not guaranteed orthogonal to the rest -- so it is replaced, as are the columns
 * past N that mode 'A' asks for, by complete_basis; u diag(s) vt changes by at most that
 * negligible s. Returns info. */
static int32_t gesdd_one(const hlo_literal *in, int64_t o, int64_t m, int64_t n, bool vectors, bool full,
                         const svd_out *out, double *work) {
  bool tall = m >= n;
  int64_t M = tall ? m : n, N = tall ? n : m, K = vectors && full ? M : N;
  double *g = work, *ub = g + M * N, *vg = ub + K * M, *vb = vg + N * N, *sig = vb + N * N;
  int64_t *ord = (int64_t *)(sig + N);
  double max_abs = 0;
  bool finite = true;
  /* g(i, j) = a(i, j) (tall) or a(j, i) (wide: a's row-major elements in order) */
  for (int64_t j = 0; j < N; j++)
    for (int64_t i = 0; i < M; i++) {
      double x = literal_get_f64(in, o + (tall ? i * n + j : j * n + i));
      if (!isfinite(x)) finite = false;
      max_abs = fmax(max_abs, fabs(x));
      g[j * M + i] = x;
    }
  int e = scale_exponent(max_abs);
  for (int64_t i = 0; i < M * N; i++) g[i] = ldexp(g[i], -e);
  if (!finite || !jacobi_svd(g, M, N, vg)) {
    for (int64_t j = 0; j < N; j++) literal_set_f64(out->s, out->os + j, NAN);
    if (vectors) {
      for (int64_t i = 0; i < m * out->ucols; i++) literal_set_f64(out->u, out->ou + i, NAN);
      for (int64_t i = 0; i < out->vrows * n; i++) literal_set_f64(out->vt, out->ov + i, NAN);
    }
    return 1;
  }
  for (int64_t j = 0; j < N; j++) sig[j] = sqrt(dot_d(g + j * M, g + j * M, M));
  sort_order(sig, N, true, ord);
  for (int64_t j = 0; j < N; j++) literal_set_f64(out->s, out->os + j, ldexp(sig[ord[j]], e));
  if (!vectors) return 0;
  /* Ug and Vg in sorted order; the negligible columns form a suffix from r on */
  int64_t r = 0;
  double negligible = N ? (double)M * DBL_EPSILON * sig[ord[0]] : 0;
  for (int64_t j = 0; j < N; j++) {
    double sj = sig[ord[j]];
    memcpy(vb + j * N, vg + ord[j] * N, (size_t)N * sizeof *vb);
    if (sj > negligible) {
      for (int64_t i = 0; i < M; i++) ub[j * M + i] = g[ord[j] * M + i] / sj;
      r = j + 1;
    }
  }
  complete_basis(ub, M, r, K);
  /* the sign: the right singular vector is Vg's column (tall) or Ug's (wide) */
  for (int64_t j = 0; j < N; j++) {
    if (tall)
      normalize_sign(vb + j * N, N, ub + j * M, M);
    else
      normalize_sign(ub + j * M, M, vb + j * N, N);
  }
  if (tall) { /* u = Ug (m x K), vt = Vg^T (n x n) */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < out->ucols; j++) literal_set_f64(out->u, out->ou + i * out->ucols + j, ub[j * M + i]);
    for (int64_t i = 0; i < out->vrows; i++)
      for (int64_t j = 0; j < n; j++) literal_set_f64(out->vt, out->ov + i * n + j, vb[i * N + j]);
  } else { /* u = Vg (m x m), vt = Ug^T (K x n) */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < out->ucols; j++) literal_set_f64(out->u, out->ou + i * out->ucols + j, vb[j * N + i]);
    for (int64_t i = 0; i < out->vrows; i++)
      for (int64_t j = 0; j < n; j++) literal_set_f64(out->vt, out->ov + i * n + j, ub[i * M + j]);
  }
  return 0;
}

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

/* A scratch buffer of n doubles (n >= 0); running out of memory is an error, not an abort. */
static kiln_status alloc_doubles(const hlo_instr *ins, int64_t n, double **out) {
  *out = NULL;
  if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double))
    return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "scratch buffer too large");
  *out = malloc(n ? (size_t)n * sizeof(double) : 1);
  if (!*out) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory for %lld scratch doubles", (long long)n);
  return NULL;
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
  hlo_literal *res[5] = {NULL, NULL, NULL, NULL, NULL};
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
    case HLO_LAPACK_SYEVD: {
      /* v starts as the operand: mode 'N' leaves it so (see the conventions above) */
      n_res = 3;
      double *work = NULL;
      st = copy_of(result_shape(ins, 0), ops[0], &res[0]);
      if (!st) st = literal_create(result_shape(ins, 1), &res[1]);
      if (!st) st = literal_create(result_shape(ins, 2), &res[2]);
      if (!st && nb) st = alloc_doubles(ins, 2 * mat + 2 * c.n, &work);
      if (st) break;
      int32_t *info = res[2]->data;
      for (int64_t b = 0; b < nb; b++)
        info[b] = syevd_one(ops[0], b * mat, c.n, c.lower, c.vectors, res[0], res[1], b * c.n, work);
      free(work);
      break;
    }
    case HLO_LAPACK_GESDD: {
      /* u and vt start as zeros, what mode 'N' returns; a' is the operand. Every batch
       * matrix is visited even when empty: mode 'A' of an m x 0 matrix still has an
       * m x m u to fill (the identity). */
      n_res = 5;
      int64_t p = c.m < c.n ? c.m : c.n;
      double *work = NULL;
      for (int i = 0; i < 5 && !st; i++)
        st = i == 0 ? copy_of(result_shape(ins, 0), ops[0], &res[0]) : literal_create(result_shape(ins, i), &res[i]);
      if (!st && c.batch) st = alloc_doubles(ins, gesdd_work(c.m, c.n, c.vectors && c.full), &work);
      if (st) break;
      const hlo_shape *us = result_shape(ins, 2), *vs = result_shape(ins, 3);
      svd_out o = {.s = res[1], .u = res[2], .vt = res[3], .ucols = us->dims[us->rank - 1],
                   .vrows = vs->dims[vs->rank - 2]};
      int32_t *info = res[4]->data;
      for (int64_t b = 0; b < c.batch; b++) {
        o.os = b * p, o.ou = b * c.m * o.ucols, o.ov = b * o.vrows * c.n;
        info[b] = gesdd_one(ops[0], b * mat, c.m, c.n, c.vectors, c.full, &o, work);
      }
      free(work);
      break;
    }
  }
  if (st) {
    for (int i = 0; i < 5; i++) literal_free(res[i]);
    return st;
  }
  *out = shape_is_tuple(&ins->shape) ? literal_tuple(n_res, res) : res[0];
  return NULL;
}
