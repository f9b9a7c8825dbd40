/* Unit tests for the evaluator's LAPACK custom-calls (src/eval/lapack.c): jaxlib's
 * lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr,syevd,gesdd}_ffi, written as JAX prints them
 * (column-major layouts, typed-FFI backend_config), batched, in f32 and f64.
 *
 * The checks never restate the algorithms. Random cases are judged by what a correct
 * factorisation must satisfy -- L L^T = A, P A = L U, op(a) X = B, Q R = A with Q^T Q = I,
 * pivots inside their range, |L| <= 1 under partial pivoting -- recomputed here in double
 * from the literals' own values. Small hand-worked cases pin the exact values and LAPACK's
 * conventions (1-based pivots and info, the untouched triangle, the reflector storage),
 * and NaN planted where the routine must not read proves it does not. Error cases must be
 * clean errors, never crashes.
 *
 * Tolerances: each residual is compared with the classical backward-error bound of the
 * factorisation, componentwise where one exists (Higham, "Accuracy and Stability of
 * Numerical Algorithms": |A - L L^T| <= g(n+1) |L||L^T|, |P A - L U| <= g(n) |L||U|,
 * |B - op(a) X| <= g(k) |op(a)||X|, with g(n) ~ n u), here 4 (n + 1) u times the same
 * magnitudes to allow for the residual's own rounding; QR is normwise, 16 m n u max|A|.
 * u is the unit roundoff of the type (2^-24, 2^-53). The eigen- and singular value
 * decompositions (syevd, gesdd) are judged by their invariants, with the bounds their
 * section states. Any wrong index, sign or convention gives residuals of order one, far
 * above these. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/literal.h"

/* ------------------------------------------------------------------ helpers */

static const hlo_type TYPES[2] = {HLO_F32, HLO_F64};
static const char *tname(hlo_type t) { return t == HLO_F32 ? "f32" : "f64"; }
static char tletter(hlo_type t) { return t == HLO_F32 ? 's' : 'd'; }
static double unit_roundoff(hlo_type t) { return t == HLO_F32 ? 0x1p-24 : 0x1p-53; }

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_rng >> 11) * 0x1p-52 - 1.0;
}

/* A module parsed from text, evaluated on arguments holding the given values (rounded
 * to the parameter's type). A failed evaluation is reported and ends the program, as a
 * failed parse does: every later check would read a missing result. */
typedef struct run {
  hlo_module *m;
  hlo_literal *arg[2];
  hlo_literal *out;
} run;

static run run_hlo(const char *text, const double *v0, const double *v1) {
  run r;
  memset(&r, 0, sizeof r);
  r.m = check_parse_hlo(text);
  const double *vals[2] = {v0, v1};
  int n = r.m->entry->n_params;
  for (int p = 0; p < n && p < 2; p++) {
    CHECK_OK(literal_create(&r.m->entry->params[p]->shape, &r.arg[p]));
    for (int64_t i = 0; i < r.arg[p]->n; i++) literal_set_f64(r.arg[p], i, vals[p][i]);
  }
  kiln_status s = eval_module(r.m, r.arg, n, &r.out);
  if (s) {
    check_fail(__FILE__, __LINE__, text, kiln_status_message(s));
    kiln_status_free(s);
    abort();
  }
  return r;
}

static void run_free(run *r) {
  literal_free(r->out);
  literal_free(r->arg[0]);
  literal_free(r->arg[1]);
  hlo_module_free(r->m);
}

static double el(const hlo_literal *l, int64_t i) { return literal_get_f64(l, i); }
static int64_t iel(const hlo_literal *l, int64_t i) { return literal_get_s64(l, i); }
static bool same_value(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* |got - want| <= tol, reporting the first few failures. */
static int g_reported;
static bool close_to(double got, double want, double tol, const char *what, int64_t b, int64_t i, int64_t j) {
  if (fabs(got - want) <= tol) return true;
  if (g_reported++ < 5)
    fprintf(stderr, "  %s: batch %lld (%lld,%lld): got %.17g, want %.17g (tol %.3g)\n", what, (long long)b,
            (long long)i, (long long)j, got, want, tol);
  return false;
}

/* The result of a module with a lone custom-call as root of a given target and shape,
 * as JAX prints it. */
#define HEADER "HloModule lapack\n\nENTRY main {\n"

/* ------------------------------------------------------------------ potrf */

static void potrf_text(char *buf, size_t cap, hlo_type t, int b, int n, bool lower) {
  const char *T = tname(t);
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  ROOT c = (%s[%d,%d,%d]{1,2,0}, s32[%d]{0}) custom-call(a), "
                  "custom_call_target=\"lapack_%cpotrf_ffi\", "
                  "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, output_to_operand_aliasing={{0}: (0, {})}, "
                  "api_version=API_VERSION_TYPED_FFI, backend_config={uplo = %d : ui8}\n}\n",
           T, b, n, n, T, b, n, n, b, tletter(t), T, b, n, n, lower ? 'L' : 'U');
}

/* Random symmetric positive definite matrices M M^T + n I in the chosen triangle; the
 * other triangle holds NaN in matrix 0 (it must not be read) and unrelated values in the
 * others (they must come back unchanged). */
static void check_potrf_random(hlo_type t, bool lower) {
  enum { B = 3, N = 4 };
  double a[B * N * N], mm[N * N];
  for (int b = 0; b < B; b++) {
    for (int i = 0; i < N * N; i++) mm[i] = urand();
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double s = i == j ? N : 0;
        for (int p = 0; p < N; p++) s += mm[i * N + p] * mm[j * N + p];
        bool chosen = lower ? j <= i : j >= i;
        a[(b * N + i) * N + j] = chosen ? s : b == 0 ? NAN : 100 + i * N + j;
      }
  }
  char text[2048];
  potrf_text(text, sizeof text, t, B, N, lower);
  run r = run_hlo(text, a, NULL);
  const hlo_literal *f = r.out->tuple[0], *info = r.out->tuple[1], *in = r.arg[0];
  double tol_u = 4 * (N + 1) * unit_roundoff(t);
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    CHECK(iel(info, b) == 0);
    int64_t o = (int64_t)b * N * N;
    /* L(i, j) with j <= i: the factor's element, read from the chosen triangle */
#define LF(i, j) (lower ? el(f, o + (i) * N + (j)) : el(f, o + (j) * N + (i)))
#define AIN(i, j) (lower ? el(in, o + ((i) >= (j) ? (i) * N + (j) : (j) * N + (i))) \
                         : el(in, o + ((i) <= (j) ? (i) * N + (j) : (j) * N + (i))))
    for (int i = 0; i < N; i++) {
      CHECK(LF(i, i) > 0);
      for (int j = 0; j <= i; j++) {
        double s = 0, mag = 0;
        for (int p = 0; p <= j; p++) s += LF(i, p) * LF(j, p), mag += fabs(LF(i, p) * LF(j, p));
        CHECK(close_to(s, AIN(i, j), tol_u * mag, "L L^T vs A", b, i, j));
      }
    }
#undef LF
#undef AIN
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        if (lower ? j > i : j < i) CHECK(same_value(el(f, o + i * N + j), el(in, o + i * N + j)));
  }
  run_free(&r);
}

static void test_potrf_lower_factor_reproduces_matrix_and_keeps_upper_triangle(void) {
  for (int k = 0; k < 2; k++) check_potrf_random(TYPES[k], true);
}

static void test_potrf_upper_factor_reproduces_matrix_and_keeps_lower_triangle(void) {
  for (int k = 0; k < 2; k++) check_potrf_random(TYPES[k], false);
}

/* [[4,2],[2,5]] = L L^T with L = [[2,0],[1,2]] (2 = sqrt 4, 1 = 2/2, 2 = sqrt(5 - 1)),
 * all exact; the other triangle keeps its input. Upper: U = L^T. */
static void test_potrf_two_by_two_is_exact(void) {
  for (int k = 0; k < 2; k++) {
    char text[2048];
    double a[4] = {4, 2, 2, 5};
    potrf_text(text, sizeof text, TYPES[k], 1, 2, true);
    run r = run_hlo(text, a, NULL);
    const hlo_literal *f = r.out->tuple[0];
    CHECK(el(f, 0) == 2 && el(f, 1) == 2 && el(f, 2) == 1 && el(f, 3) == 2);
    CHECK(iel(r.out->tuple[1], 0) == 0);
    run_free(&r);
    potrf_text(text, sizeof text, TYPES[k], 1, 2, false);
    r = run_hlo(text, a, NULL);
    f = r.out->tuple[0];
    CHECK(el(f, 0) == 2 && el(f, 1) == 1 && el(f, 2) == 2 && el(f, 3) == 2);
    CHECK(iel(r.out->tuple[1], 0) == 0);
    run_free(&r);
  }
}

/* info is the 1-based column of the first pivot that is not positive, per matrix of the
 * batch: [[1,2],[2,1]] fails at column 2 (1 - 2^2 = -3) after factoring column 1 (L00 = 1,
 * L10 = 2); a zero, a negative or a NaN first pivot gives 1; a semidefinite matrix
 * ([[1,1],[1,1]]: second pivot exactly 0) gives 2; a good matrix beside them gives 0. */
static void test_potrf_info_names_the_first_non_positive_pivot_per_matrix(void) {
  for (int k = 0; k < 2; k++) {
    char text[2048];
    double a[6 * 4] = {1, 2, 2, 1, 0, 0, 0, 1, -1, 0, 0, 1, NAN, 0, 0, 1, 1, 1, 1, 1, 4, 2, 2, 5};
    potrf_text(text, sizeof text, TYPES[k], 6, 2, true);
    run r = run_hlo(text, a, NULL);
    const hlo_literal *f = r.out->tuple[0], *info = r.out->tuple[1];
    CHECK(iel(info, 0) == 2 && iel(info, 1) == 1 && iel(info, 2) == 1 && iel(info, 3) == 1 && iel(info, 4) == 2 &&
          iel(info, 5) == 0);
    CHECK(el(f, 0) == 1 && el(f, 2) == 2);                      /* the column before the failure */
    CHECK(el(f, 20) == 2 && el(f, 22) == 1 && el(f, 23) == 2); /* the good matrix */
    run_free(&r);
  }
}

/* ------------------------------------------------------------------ getrf */

static void getrf_text(char *buf, size_t cap, hlo_type t, int b, int m, int n) {
  const char *T = tname(t);
  int mn = m < n ? m : n;
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  ROOT lu = (%s[%d,%d,%d]{1,2,0}, s32[%d,%d]{1,0}, s32[%d]{0}) custom-call(a), "
                  "custom_call_target=\"lapack_%cgetrf_ffi\", operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, "
                  "output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, "
                  "backend_config={}\n}\n",
           T, b, m, n, T, b, m, n, b, mn, b, tletter(t), T, b, m, n);
}

/* P A = L U from the result alone: P applies the pivots' row swaps in order, L is the
 * unit lower part (m x min), U the upper part (min x n). Also: every pivot lies in
 * [j + 1, m] and partial pivoting keeps |L| <= 1. */
static void check_getrf_random(hlo_type t, int m, int n) {
  enum { B = 3 };
  int mn = m < n ? m : n;
  double *a = malloc(sizeof(double) * B * m * n), *pa = malloc(sizeof(double) * m * n);
  for (int i = 0; i < B * m * n; i++) a[i] = urand();
  char text[2048];
  getrf_text(text, sizeof text, t, B, m, n);
  run r = run_hlo(text, a, NULL);
  const hlo_literal *lu = r.out->tuple[0], *ipiv = r.out->tuple[1], *info = r.out->tuple[2], *in = r.arg[0];
  double tol_u = 4 * (n + 1) * unit_roundoff(t);
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    int64_t o = (int64_t)b * m * n;
    CHECK(iel(info, b) == 0);
    for (int i = 0; i < m * n; i++) pa[i] = el(in, o + i);
    for (int j = 0; j < mn; j++) {
      int64_t p = iel(ipiv, (int64_t)b * mn + j) - 1;
      CHECK(p >= j && p < m);
      if (p < j || p >= m) continue;
      for (int c = 0; c < n; c++) {
        double x = pa[j * n + c];
        pa[j * n + c] = pa[p * n + c];
        pa[p * n + c] = x;
      }
    }
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        if (j < i && j < mn) CHECK(fabs(el(lu, o + i * n + j)) <= 1);
        double s = 0, mag = 0;
        for (int p = 0; p < mn && p <= i && p <= j; p++) {
          double l = p == i ? 1 : el(lu, o + i * n + p), u = el(lu, o + p * n + j);
          s += l * u, mag += fabs(l * u);
        }
        CHECK(close_to(s, pa[i * n + j], tol_u * mag, "L U vs P A", b, i, j));
      }
  }
  run_free(&r);
  free(a);
  free(pa);
}

static void test_getrf_square_tall_and_wide_satisfy_pa_equals_lu(void) {
  for (int k = 0; k < 2; k++) {
    check_getrf_random(TYPES[k], 4, 4);
    check_getrf_random(TYPES[k], 5, 3);
    check_getrf_random(TYPES[k], 3, 5);
  }
}

/* Hand-worked factorisations, all exact in binary (batch of 1 each):
 *   [[1,1],[2,4]]: row 2 is the pivot -> [[2,4],[0.5,-1]], ipiv [2,2]
 *   [[0,1,2],[2,2,2],[4,0,4]]: pivots rows 3 then 2 -> [[4,0,4],[0.5,2,0],[0,0.5,2]],
 *     ipiv [3,2,3]
 *   [[-2,1],[2,3]]: |-2| ties |2|, the first row wins -> [[-2,1],[-1,4]], ipiv [1,2]
 *   tall [[1,2],[4,4],[2,0]]: swaps 1<->2 then 2<->3 -> [[4,4],[0.5,-2],[0.25,-0.5]],
 *     ipiv [2,3]
 *   wide [[1,2,3],[2,0,2]]: -> [[2,0,2],[0.5,2,2]], ipiv [2,2]
 *   [[NaN,1],[2,3]]: the NaN is passed over for row 2 -> [[2,3],[NaN,NaN]], ipiv [2,2]
 *   [[NaN,1],[NaN,2]]: nothing but NaN, the pivot stays -> [[NaN,1],[NaN,NaN]], ipiv [1,2]
 *   (a NaN pivot is not zero: info stays 0) */
static void expect_getrf(hlo_type t, int m, int n, const double *a, const double *want, const int *piv,
                         int want_info) {
  char text[2048];
  getrf_text(text, sizeof text, t, 1, m, n);
  run r = run_hlo(text, a, NULL);
  int mn = m < n ? m : n;
  for (int i = 0; i < m * n; i++) CHECK(same_value(el(r.out->tuple[0], i), want[i]));
  for (int j = 0; j < mn; j++) CHECK(iel(r.out->tuple[1], j) == piv[j]);
  CHECK(iel(r.out->tuple[2], 0) == want_info);
  run_free(&r);
}

static void test_getrf_hand_worked_cases_pivot_exactly(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    expect_getrf(t, 2, 2, (double[]){1, 1, 2, 4}, (double[]){2, 4, 0.5, -1}, (int[]){2, 2}, 0);
    expect_getrf(t, 3, 3, (double[]){0, 1, 2, 2, 2, 2, 4, 0, 4}, (double[]){4, 0, 4, 0.5, 2, 0, 0, 0.5, 2},
                 (int[]){3, 2, 3}, 0);
    expect_getrf(t, 2, 2, (double[]){-2, 1, 2, 3}, (double[]){-2, 1, -1, 4}, (int[]){1, 2}, 0);
    expect_getrf(t, 3, 2, (double[]){1, 2, 4, 4, 2, 0}, (double[]){4, 4, 0.5, -2, 0.25, -0.5}, (int[]){2, 3}, 0);
    expect_getrf(t, 2, 3, (double[]){1, 2, 3, 2, 0, 2}, (double[]){2, 0, 2, 0.5, 2, 2}, (int[]){2, 2}, 0);
    expect_getrf(t, 2, 2, (double[]){NAN, 1, 2, 3}, (double[]){2, 3, NAN, NAN}, (int[]){2, 2}, 0);
    expect_getrf(t, 2, 2, (double[]){NAN, 1, NAN, 2}, (double[]){NAN, 1, NAN, NAN}, (int[]){1, 2}, 0);
  }
}

/* Singular matrices: info is the first zero pivot's 1-based column and elimination goes
 * on past it.
 *   [[1,2],[2,4]] -> [[2,4],[0.5,0]], ipiv [2,2], info 2
 *   [[0,1],[0,2]]: the first column is zero (no swap, no scaling) -> unchanged,
 *     ipiv [1,2], info 1
 *   zeros: info 1, the first zero pivot, not the last */
static void test_getrf_singular_matrix_reports_first_zero_pivot(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    expect_getrf(t, 2, 2, (double[]){1, 2, 2, 4}, (double[]){2, 4, 0.5, 0}, (int[]){2, 2}, 2);
    expect_getrf(t, 2, 2, (double[]){0, 1, 0, 2}, (double[]){0, 1, 0, 2}, (int[]){1, 2}, 1);
    expect_getrf(t, 2, 2, (double[]){0, 0, 0, 0}, (double[]){0, 0, 0, 0}, (int[]){1, 2}, 1);
  }
}

/* ------------------------------------------------------------------ trsm */

/* b is [B, m, n]; a is k x k with k = m (left) or n (right). */
static void trsm_text(char *buf, size_t cap, hlo_type t, int b, int m, int n, bool left, bool lower, bool trans,
                      bool unit) {
  const char *T = tname(t);
  int k = left ? m : n;
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n  b = %s[%d,%d,%d]{1,2,0} parameter(1)\n"
                  "  ROOT x = %s[%d,%d,%d]{1,2,0} custom-call(a, b), custom_call_target=\"lapack_%ctrsm_ffi\", "
                  "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}, %s[%d,%d,%d]{1,2,0}}, "
                  "output_to_operand_aliasing={{}: (1, {})}, api_version=API_VERSION_TYPED_FFI, "
                  "backend_config={diag = %d : ui8, side = %d : ui8, trans_x = %d : ui8, uplo = %d : ui8}\n}\n",
           T, b, k, k, T, b, m, n, T, b, m, n, tletter(t), T, b, k, k, T, b, m, n, unit ? 'U' : 'N',
           left ? 'L' : 'R', trans ? 'T' : 'N', lower ? 'L' : 'U');
}

/* a's triangle random with a diagonal of magnitude >= 2 (well conditioned), the other
 * triangle NaN, and with a unit diagonal the diagonal NaN too: none of it may be read.
 * The residual B - op(a) X (left) or B - X op(a) (right) is checked against
 * g(k) |op(a)||X|. */
static void check_trsm_random(hlo_type t, bool left, bool lower, bool trans, bool unit) {
  enum { B = 3, M = 4, N = 5 };
  int k = left ? M : N;
  double *a = malloc(sizeof(double) * B * k * k), *bv = malloc(sizeof(double) * B * M * N);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < k; i++)
      for (int j = 0; j < k; j++) {
        double v = urand();
        if (i == j) v = unit ? NAN : (v < 0 ? -2 : 2) + v;
        else if (lower ? j > i : j < i) v = NAN;
        a[(b * k + i) * k + j] = v;
      }
  for (int i = 0; i < B * M * N; i++) bv[i] = urand();
  char text[2048];
  trsm_text(text, sizeof text, t, B, M, N, left, lower, trans, unit);
  run r = run_hlo(text, a, bv);
  const hlo_literal *x = r.out, *al = r.arg[0], *bl = r.arg[1];
  double tol_u = 4 * (k + 1) * unit_roundoff(t);
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    int64_t oa = (int64_t)b * k * k, ob = (int64_t)b * M * N;
    /* op(a)(i, j) as the solve must see it: the triangle, a unit diagonal, zeros */
#define OPA(i, j)                                                                                  \
  ((i) == (j) ? (unit ? 1.0 : el(al, oa + (i) * k + (i)))                                          \
   : (lower ? ((trans ? (j) > (i) : (i) > (j))) : ((trans ? (j) < (i) : (i) < (j))))               \
       ? el(al, oa + (trans ? (j) * k + (i) : (i) * k + (j)))                                      \
       : 0.0)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double s = 0, mag = 0;
        for (int p = 0; p < k; p++) {
          double term = left ? OPA(i, p) * el(x, ob + p * N + j) : el(x, ob + i * N + p) * OPA(p, j);
          s += term, mag += fabs(term);
        }
        CHECK(close_to(s, el(bl, ob + i * N + j), tol_u * (mag + fabs(el(bl, ob + i * N + j))), "op(a) X vs B", b,
                       i, j));
      }
#undef OPA
  }
  run_free(&r);
  free(a);
  free(bv);
}

static void test_trsm_every_side_uplo_transpose_and_diagonal_solves_the_system(void) {
  for (int k = 0; k < 2; k++)
    for (int left = 0; left < 2; left++)
      for (int lower = 0; lower < 2; lower++)
        for (int trans = 0; trans < 2; trans++)
          for (int unit = 0; unit < 2; unit++) check_trsm_random(TYPES[k], left, lower, trans, unit);
}

/* Exact small solves:
 *   left, lower: [[2,0],[1,4]] x = [2,9] -> x = [1, (9 - 1)/4 = 2]
 *   right, upper, transposed: x [[2,1],[0,4]]^T = [7,4] -> x1 = 4/4 = 1, x0 = (7 - 1)/2 = 3
 *   left, lower, unit diagonal (9s ignored): [[9,0],[3,9]] x = [1,5] -> [1, 5 - 3 = 2] */
static void test_trsm_small_solves_are_exact(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    char text[2048];
    trsm_text(text, sizeof text, t, 1, 2, 1, true, true, false, false);
    run r = run_hlo(text, (double[]){2, NAN, 1, 4}, (double[]){2, 9});
    CHECK(el(r.out, 0) == 1 && el(r.out, 1) == 2);
    run_free(&r);
    trsm_text(text, sizeof text, t, 1, 1, 2, false, false, true, false);
    r = run_hlo(text, (double[]){2, 1, NAN, 4}, (double[]){7, 4});
    CHECK(el(r.out, 0) == 3 && el(r.out, 1) == 1);
    run_free(&r);
    trsm_text(text, sizeof text, t, 1, 2, 1, true, true, false, true);
    r = run_hlo(text, (double[]){9, NAN, 3, 9}, (double[]){1, 5});
    CHECK(el(r.out, 0) == 1 && el(r.out, 1) == 2);
    run_free(&r);
  }
}

/* ------------------------------------------------------------------ geqrf, orgqr */

static void geqrf_text(char *buf, size_t cap, hlo_type t, int b, int m, int n) {
  const char *T = tname(t);
  int mn = m < n ? m : n;
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  ROOT qr = (%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}) custom-call(a), "
                  "custom_call_target=\"lapack_%cgeqrf_ffi\", operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, "
                  "output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, "
                  "backend_config={}\n}\n",
           T, b, m, n, T, b, m, n, T, b, mn, tletter(t), T, b, m, n);
}

/* Q (m x m) = H_0 H_1 ... H_{k-1}, H_j = I - tau_j v_j v_j^T with v_j = (0.., 1, v below
 * the diagonal of column j of the m x n matrix at offset o): LAPACK's storage convention,
 * multiplied out here left to right (orgqr goes the other way). */
static void q_from_reflectors(const hlo_literal *v, int64_t o, const hlo_literal *tau, int64_t ot, int m, int n,
                              int k, double *q) {
  double *w = malloc(sizeof(double) * m);
  for (int i = 0; i < m * m; i++) q[i] = i % (m + 1) == 0;
  for (int j = 0; j < k; j++) {
    double tj = el(tau, ot + j);
    for (int r = 0; r < m; r++) { /* w = Q v */
      w[r] = q[r * m + j];
      for (int i = j + 1; i < m; i++) w[r] += q[r * m + i] * el(v, o + i * n + j);
    }
    for (int r = 0; r < m; r++) { /* Q -= tau w v^T */
      q[r * m + j] -= tj * w[r];
      for (int i = j + 1; i < m; i++) q[r * m + i] -= tj * w[r] * el(v, o + i * n + j);
    }
  }
  free(w);
}

/* ||Q^T Q - I|| elementwise over the first `cols` columns of an m x ld matrix. */
static void check_orthonormal(const double *q, int m, int ld, int cols, double tol, int64_t b) {
  for (int i = 0; i < cols; i++)
    for (int j = 0; j < cols; j++) {
      double s = 0;
      for (int r = 0; r < m; r++) s += q[r * ld + i] * q[r * ld + j];
      CHECK(close_to(s, i == j, tol, "Q^T Q vs I", b, i, j));
    }
}

static double max_abs(const hlo_literal *l, int64_t o, int64_t n) {
  double x = 0;
  for (int64_t i = 0; i < n; i++) x = fmax(x, fabs(el(l, o + i)));
  return x;
}

static void check_geqrf_random(hlo_type t, int m, int n) {
  enum { B = 3 };
  int mn = m < n ? m : n;
  double *a = malloc(sizeof(double) * B * m * n), *q = malloc(sizeof(double) * m * m);
  for (int i = 0; i < B * m * n; i++) a[i] = urand();
  char text[2048];
  geqrf_text(text, sizeof text, t, B, m, n);
  run r = run_hlo(text, a, NULL);
  const hlo_literal *f = r.out->tuple[0], *tau = r.out->tuple[1], *in = r.arg[0];
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    int64_t o = (int64_t)b * m * n;
    double tol = 16 * m * n * unit_roundoff(t) * fmax(1, max_abs(in, o, m * n));
    q_from_reflectors(f, o, tau, (int64_t)b * mn, m, n, mn, q);
    check_orthonormal(q, m, m, m, 16 * m * n * unit_roundoff(t), b);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int p = 0; p < m && p <= j; p++) s += q[i * m + p] * el(f, o + p * n + j);
        CHECK(close_to(s, el(in, o + i * n + j), tol, "Q R vs A", b, i, j));
      }
  }
  run_free(&r);
  free(a);
  free(q);
}

static void test_geqrf_square_tall_and_wide_reflectors_reproduce_matrix(void) {
  for (int k = 0; k < 2; k++) {
    check_geqrf_random(TYPES[k], 4, 4);
    check_geqrf_random(TYPES[k], 5, 4);
    check_geqrf_random(TYPES[k], 3, 5);
  }
}

/* [[3,1],[4,2]]: column 0 is (alpha 3, x 4), norm 5, so beta = -5 (opposite to alpha),
 * tau = (-5 - 3)/-5 = 1.6, v1 = 4/(3 + 5) = 0.5. H applied to column 1 (1,2):
 * w = 1.6 (1 + 0.5 * 2) = 3.2 -> (1 - 3.2, 2 - 0.5 * 3.2) = (-2.2, 0.4). Column 1 has
 * nothing below its diagonal: tau 0. A column already zero below the diagonal
 * ([[0,1],[0,1]]'s first) keeps its values, whatever alpha is, with tau 0. */
static void test_geqrf_hand_worked_reflector_and_zero_column(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    double u = unit_roundoff(t);
    char text[2048];
    geqrf_text(text, sizeof text, t, 2, 2, 2);
    run r = run_hlo(text, (double[]){3, 1, 4, 2, 0, 1, 0, 1}, NULL);
    const hlo_literal *f = r.out->tuple[0], *tau = r.out->tuple[1];
    CHECK(el(f, 0) == -5 && el(f, 2) == 0.5);
    double rounded_1_6 = t == HLO_F32 ? (double)1.6f : 1.6; /* one correctly rounded division */
    CHECK(el(tau, 0) == rounded_1_6 && el(tau, 1) == 0);
    CHECK(fabs(el(f, 1) + 2.2) <= 8 * u && fabs(el(f, 3) - 0.4) <= 8 * u);
    CHECK(el(f, 4) == 0 && el(f, 5) == 1 && el(f, 6) == 0 && el(f, 7) == 1);
    CHECK(el(tau, 2) == 0);
    run_free(&r);
  }
}

/* geqrf then orgqr, as jnp.linalg.qr emits them: Q (m x n) has orthonormal columns, Q R
 * = A with R the upper n x n of geqrf's result, and Q equals the first n columns of the
 * reflectors' product multiplied out here. */
static void check_qr_pipeline(hlo_type t, int m, int n) {
  enum { B = 3 };
  const char *T = tname(t);
  char c = tletter(t), text[4096];
  snprintf(text, sizeof text,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  qr = (%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}) custom-call(a), "
                  "custom_call_target=\"lapack_%cgeqrf_ffi\", "
                  "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, output_to_operand_aliasing={{0}: (0, {})}, "
                  "api_version=API_VERSION_TYPED_FFI, backend_config={}\n"
                  "  r = %s[%d,%d,%d]{1,2,0} get-tuple-element(qr), index=0\n"
                  "  tau = %s[%d,%d]{1,0} get-tuple-element(qr), index=1\n"
                  "  q = %s[%d,%d,%d]{1,2,0} custom-call(r, tau), custom_call_target=\"lapack_%corgqr_ffi\", "
                  "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}}, "
                  "output_to_operand_aliasing={{}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}\n"
                  "  ROOT out = (%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}, %s[%d,%d,%d]{1,2,0}) tuple(r, tau, q)\n}\n",
           T, B, m, n, T, B, m, n, T, B, n, c, T, B, m, n, T, B, m, n, T, B, n, T, B, m, n, c, T, B, m, n, T, B, n, T,
           B, m, n, T, B, n, T, B, m, n);
  double *a = malloc(sizeof(double) * B * m * n), *qr = malloc(sizeof(double) * m * m);
  for (int i = 0; i < B * m * n; i++) a[i] = urand();
  run r = run_hlo(text, a, NULL);
  const hlo_literal *f = r.out->tuple[0], *tau = r.out->tuple[1], *q = r.out->tuple[2], *in = r.arg[0];
  double *qv = malloc(sizeof(double) * m * n);
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    int64_t o = (int64_t)b * m * n;
    double tol = 16 * m * n * unit_roundoff(t) * fmax(1, max_abs(in, o, m * n));
    for (int i = 0; i < m * n; i++) qv[i] = el(q, o + i);
    check_orthonormal(qv, m, n, n, 16 * m * n * unit_roundoff(t), b);
    q_from_reflectors(f, o, tau, (int64_t)b * n, m, n, n, qr);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int p = 0; p <= j; p++) s += qv[i * n + p] * el(f, o + p * n + j);
        CHECK(close_to(s, el(in, o + i * n + j), tol, "orgqr Q R vs A", b, i, j));
        CHECK(close_to(qv[i * n + j], qr[i * m + j], 16 * m * n * unit_roundoff(t), "orgqr vs reflectors", b, i, j));
      }
  }
  run_free(&r);
  free(a);
  free(qr);
  free(qv);
}

static void test_geqrf_then_orgqr_give_orthonormal_q_with_qr_equal_to_a(void) {
  for (int k = 0; k < 2; k++) {
    check_qr_pipeline(TYPES[k], 5, 4);
    check_qr_pipeline(TYPES[k], 4, 4);
  }
}

/* orgqr with fewer reflectors (k = 2) than columns (n = 4), one of them tau = 0 (H = I):
 * random v with tau = 2 / (v^T v) (v_0 = 1), so each H is an exact reflection in real
 * arithmetic. Q's n columns, including those past k, must match the product multiplied
 * out here and be orthonormal. */
static void test_orgqr_with_fewer_reflectors_than_columns(void) {
  enum { B = 2, M = 5, N = 4, K = 2 };
  for (int kk = 0; kk < 2; kk++) {
    hlo_type t = TYPES[kk];
    const char *T = tname(t);
    char text[2048];
    snprintf(text, sizeof text,
             HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n  tau = %s[%d,%d]{1,0} parameter(1)\n"
                    "  ROOT q = %s[%d,%d,%d]{1,2,0} custom-call(a, tau), custom_call_target=\"lapack_%corgqr_ffi\", "
                    "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}}, "
                    "output_to_operand_aliasing={{}: (0, {})}, api_version=API_VERSION_TYPED_FFI, "
                    "backend_config={}\n}\n",
             T, B, M, N, T, B, K, T, B, M, N, tletter(t), T, B, M, N, T, B, K);
    double a[B * M * N], tau[B * K], q[M * M], qv[M * N];
    for (int i = 0; i < B * M * N; i++) a[i] = urand();
    /* tau from the values the literal will hold (rounded to the type) */
    for (int b = 0; b < B; b++)
      for (int j = 0; j < K; j++) {
        double vv = 1;
        for (int i = j + 1; i < M; i++) {
          double x = t == HLO_F32 ? (double)(float)a[(b * M + i) * N + j] : a[(b * M + i) * N + j];
          vv += x * x;
        }
        tau[b * K + j] = b == 1 && j == 0 ? 0 : 2 / vv;
      }
    run r = run_hlo(text, a, tau);
    g_reported = 0;
    for (int b = 0; b < B; b++) {
      int64_t o = (int64_t)b * M * N;
      for (int i = 0; i < M * N; i++) qv[i] = el(r.out, o + i);
      q_from_reflectors(r.arg[0], o, r.arg[1], (int64_t)b * K, M, N, K, q);
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
          CHECK(close_to(qv[i * N + j], q[i * M + j], 16 * M * N * unit_roundoff(t), "orgqr vs reflectors", b, i, j));
      check_orthonormal(qv, M, N, N, 16 * M * N * unit_roundoff(t), b);
    }
    run_free(&r);
  }
}

/* Empty matrices and empty batches are valid calls with nothing to factor: info 0. */
static void test_empty_matrices_give_zero_info(void) {
  char text[2048];
  potrf_text(text, sizeof text, HLO_F32, 2, 0, true);
  run r = run_hlo(text, NULL, NULL);
  CHECK(r.out->tuple[0]->n == 0 && iel(r.out->tuple[1], 0) == 0 && iel(r.out->tuple[1], 1) == 0);
  run_free(&r);
  getrf_text(text, sizeof text, HLO_F64, 2, 0, 3);
  r = run_hlo(text, NULL, NULL);
  CHECK(r.out->tuple[1]->n == 0 && iel(r.out->tuple[2], 0) == 0 && iel(r.out->tuple[2], 1) == 0);
  run_free(&r);
  geqrf_text(text, sizeof text, HLO_F32, 0, 3, 2);
  r = run_hlo(text, NULL, NULL);
  CHECK(r.out->tuple[0]->n == 0 && r.out->tuple[1]->n == 0);
  run_free(&r);
  trsm_text(text, sizeof text, HLO_F64, 1, 3, 0, true, true, false, false);
  double a[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  r = run_hlo(text, a, NULL);
  CHECK(r.out->n == 0);
  run_free(&r);
}

/* ------------------------------------------------------------------ syevd, gesdd */

/* Eigen- and singular vectors are unique only up to sign (and within repeated values), so
 * the random cases check invariants; the hand-worked ones also pin the evaluator's own
 * sign convention (largest-magnitude component positive, see src/eval/lapack.c).
 *
 * Tolerances: both routines compute in double and round each result once, so for f32
 * the rounding of the outputs (u per element) dominates, and for f64 the Jacobi sweeps'
 * own rounding, a few eps per rotation a vector takes part in (~ sweeps x n of them, in
 * a random walk; gesdd also stops at columns orthogonal to M eps = 2 M u, see
 * jacobi_svd). Orthonormality |V^T V - I|, |u^T u - I|, |vt vt^T - I| <= 8 n u
 * elementwise, and reconstruction |A - V diag(w) V^T|, |a - u diag(s) vt|
 * <= 8 n u ||A||_F elementwise (n the larger dimension): over 2x the largest errors
 * measured (3.6 n u and 2 n u ||A||_F, f64, sizes up to 120 with graded, clustered and
 * rank-deficient matrices; the cases here stay below 3 n u), and orders of magnitude
 * below the O(1) error of a wrong index, sign or ordering. */

static double frob_norm(const hlo_literal *l, int64_t o, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += el(l, o + i) * el(l, o + i);
  return sqrt(s);
}

/* The largest error / tolerance seen, printed with KILN_TEST_VERBOSE set: how much room
 * the bounds leave. */
static double g_worst;
static bool within(double got, double want, double tol, const char *what, int64_t b, int64_t i, int64_t j) {
  if (tol > 0) g_worst = fmax(g_worst, fabs(got - want) / tol);
  return close_to(got, want, tol, what, b, i, j);
}

static void syevd_text(char *buf, size_t cap, hlo_type t, int b, int n, bool lower, bool vectors) {
  const char *T = tname(t);
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  ROOT e = (%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}, s32[%d]{0}) custom-call(a), "
                  "custom_call_target=\"lapack_%csyevd_ffi\", operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, "
                  "output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, "
                  "backend_config={mode = %d : ui8, uplo = %d : ui8}\n}\n",
           T, b, n, n, T, b, n, n, T, b, n, b, tletter(t), T, b, n, n, vectors ? 'V' : 'N', lower ? 'L' : 'U');
}

/* Random symmetric matrices in the chosen triangle, the other one NaN in matrix 0 and
 * unrelated values in the others (neither may be read): info 0, w ascending,
 * V^T V = I and V diag(w) V^T = A, with A the chosen triangle mirrored. Matrix 2 has a
 * repeated eigenvalue (Q diag(1,1,-2,...) Q^T by a reflector Q = I - 2 x x^T / x^T x),
 * where the vectors are not unique but the invariants still hold. */
static void check_syevd_random(hlo_type t, int n, bool lower) {
  enum { B = 3 };
  double *a = malloc(sizeof(double) * B * n * n), *x = malloc(sizeof(double) * n);
  for (int b = 0; b < B; b++) {
    double xx = 0;
    for (int i = 0; i < n; i++) x[i] = urand(), xx += x[i] * x[i];
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= i; j++) {
        double v = urand();
        if (b == 2) { /* sum_k Q(i,k) d_k Q(j,k), d = (1, 1, -2, 3, 4, ...) */
          v = 0;
          for (int k = 0; k < n; k++) {
            double d = k < 2 ? 1 : k == 2 ? -2 : k;
            v += ((i == k) - 2 * x[i] * x[k] / xx) * d * ((j == k) - 2 * x[j] * x[k] / xx);
          }
        }
        a[(b * n + (lower ? i : j)) * n + (lower ? j : i)] = v;
        if (i != j) a[(b * n + (lower ? j : i)) * n + (lower ? i : j)] = b == 0 ? NAN : 50 + urand();
      }
  }
  char text[2048];
  syevd_text(text, sizeof text, t, B, n, lower, true);
  run r = run_hlo(text, a, NULL);
  const hlo_literal *v = r.out->tuple[0], *w = r.out->tuple[1], *info = r.out->tuple[2], *in = r.arg[0];
  double u = unit_roundoff(t);
  g_reported = 0;
  for (int b = 0; b < B; b++) {
    int64_t o = (int64_t)b * n * n, ow = (int64_t)b * n;
    CHECK(iel(info, b) == 0);
#define AIN(i, j) el(in, o + (lower == ((i) >= (j)) ? (i) * n + (j) : (j) * n + (i)))
    double norm = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) norm += AIN(i, j) * AIN(i, j);
    norm = sqrt(norm);
    for (int j = 0; j + 1 < n; j++) CHECK(el(w, ow + j) <= el(w, ow + j + 1));
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double vtv = 0, rec = 0;
        for (int k = 0; k < n; k++) {
          vtv += el(v, o + k * n + i) * el(v, o + k * n + j);
          rec += el(v, o + i * n + k) * el(w, ow + k) * el(v, o + j * n + k);
        }
        CHECK(within(vtv, i == j, 8 * n * u, "V^T V vs I", b, i, j));
        CHECK(within(rec, AIN(i, j), 8 * n * u * norm, "V diag(w) V^T vs A", b, i, j));
      }
#undef AIN
    if (b == 2) /* the repeated eigenvalue 1 */
      CHECK(within(el(w, ow + 1), 1, 8 * n * u * norm, "double eigenvalue", b, 1, 1) &&
            within(el(w, ow + 2), 1, 8 * n * u * norm, "double eigenvalue", b, 2, 2));
  }
  run_free(&r);
  free(a);
  free(x);
}

static void test_syevd_eigenvectors_are_orthonormal_and_reconstruct_the_matrix(void) {
  g_worst = 0;
  for (int k = 0; k < 2; k++)
    for (int lower = 0; lower < 2; lower++) {
      check_syevd_random(TYPES[k], 4, lower);
      check_syevd_random(TYPES[k], 7, lower);
    }
  if (getenv("KILN_TEST_VERBOSE")) fprintf(stderr, "  syevd: worst error / tolerance %.3g\n", g_worst);
}

/* [[2,1],[1,2]]: tau = 0, so the rotation is by pi/4: w = (2 - 1, 2 + 1) = (1, 3) exactly
 * and the vectors are (1,-1)/sqrt 2 and (1,1)/sqrt 2, each element within 1 ulp of
 * 1/sqrt 2, signed so that the first (of equal magnitudes) is positive. [[3,0],[0,1]]
 * (upper, NaN below) is already diagonal: sorting swaps it to w = (1, 3) with
 * v = [[0,1],[1,0]], exactly. */
static void test_syevd_two_by_two_is_exact(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    double ulp = 2 * unit_roundoff(t) * 0.5, h = sqrt(0.5); /* the ulp of numbers in [0.5, 1) */
    char text[2048];
    syevd_text(text, sizeof text, t, 2, 2, true, true);
    run r = run_hlo(text, (double[]){2, NAN, 1, 2, 2, 7, 1, 2}, NULL);
    const hlo_literal *v = r.out->tuple[0], *w = r.out->tuple[1];
    for (int b = 0; b < 2; b++) {
      CHECK(el(w, 2 * b) == 1 && el(w, 2 * b + 1) == 3);
      CHECK(iel(r.out->tuple[2], b) == 0);
      const double sign[4] = {1, 1, -1, 1}; /* v = [[h, h], [-h, h]] */
      for (int i = 0; i < 4; i++) CHECK(fabs(el(v, 4 * b + i) - sign[i] * h) <= ulp);
    }
    run_free(&r);
    syevd_text(text, sizeof text, t, 1, 2, false, true);
    r = run_hlo(text, (double[]){3, 0, NAN, 1}, NULL);
    v = r.out->tuple[0], w = r.out->tuple[1];
    CHECK(el(w, 0) == 1 && el(w, 1) == 3);
    CHECK(el(v, 0) == 0 && el(v, 1) == 1 && el(v, 2) == 1 && el(v, 3) == 0);
    run_free(&r);
  }
}

/* The triangle not chosen is never read: NaN there or other values give bitwise the same
 * v and w, for both choices of uplo. */
static void test_syevd_reads_only_the_chosen_triangle(void) {
  enum { N = 5 };
  for (int k = 0; k < 2; k++)
    for (int lower = 0; lower < 2; lower++) {
      double a1[N * N], a2[N * N];
      for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
          bool chosen = lower ? j <= i : j >= i;
          a1[i * N + j] = chosen ? urand() : NAN;
          a2[i * N + j] = chosen ? a1[i * N + j] : 1e30;
        }
      char text[2048];
      syevd_text(text, sizeof text, TYPES[k], 1, N, lower, true);
      run r1 = run_hlo(text, a1, NULL), r2 = run_hlo(text, a2, NULL);
      for (int i = 0; i < N * N; i++) CHECK(el(r1.out->tuple[0], i) == el(r2.out->tuple[0], i));
      for (int i = 0; i < N; i++) CHECK(el(r1.out->tuple[1], i) == el(r2.out->tuple[1], i));
      CHECK(iel(r1.out->tuple[2], 0) == 0 && iel(r2.out->tuple[2], 0) == 0);
      run_free(&r1);
      run_free(&r2);
    }
}

/* Mode 'N' computes the same eigenvalues (bitwise: the same rotations) and returns the
 * operand as v, unchanged, NaN triangle included. */
static void test_syevd_mode_n_gives_the_same_eigenvalues_and_returns_the_operand(void) {
  enum { B = 2, N = 4 };
  for (int k = 0; k < 2; k++) {
    double a[B * N * N];
    for (int i = 0; i < B * N * N; i++) a[i] = urand();
    a[1] = NAN; /* matrix 0's upper triangle */
    char text[2048];
    syevd_text(text, sizeof text, TYPES[k], B, N, true, true);
    run rv = run_hlo(text, a, NULL);
    syevd_text(text, sizeof text, TYPES[k], B, N, true, false);
    run rn = run_hlo(text, a, NULL);
    for (int i = 0; i < B * N; i++) CHECK(el(rn.out->tuple[1], i) == el(rv.out->tuple[1], i));
    for (int i = 0; i < B * N * N; i++) CHECK(same_value(el(rn.out->tuple[0], i), el(rn.arg[0], i)));
    for (int b = 0; b < B; b++) CHECK(iel(rn.out->tuple[2], b) == 0);
    run_free(&rv);
    run_free(&rn);
  }
}

/* A NaN or inf in the chosen triangle fails its own matrix only: info 1 and NaN in w
 * and v (mode 'V'; mode 'N' still returns the operand as v); the good matrix beside it
 * is unaffected. An inf outside the triangle is not read and does not fail. */
static void test_syevd_nan_or_inf_input_reports_info_and_nan_results(void) {
  for (int k = 0; k < 2; k++) {
    double a[4 * 4] = {NAN, 0, 0, 1, 1, 0, INFINITY, 1, 2, 1, 1, 2, 2, INFINITY, 1, 2};
    char text[2048];
    syevd_text(text, sizeof text, TYPES[k], 4, 2, true, true);
    run r = run_hlo(text, a, NULL);
    const hlo_literal *v = r.out->tuple[0], *w = r.out->tuple[1], *info = r.out->tuple[2];
    CHECK(iel(info, 0) == 1 && iel(info, 1) == 1 && iel(info, 2) == 0 && iel(info, 3) == 0);
    for (int i = 0; i < 8; i++) CHECK(isnan(el(v, i)));
    for (int i = 0; i < 4; i++) CHECK(isnan(el(w, i)));
    for (int b = 2; b < 4; b++) CHECK(el(w, 2 * b) == 1 && el(w, 2 * b + 1) == 3);
    run_free(&r);
    syevd_text(text, sizeof text, TYPES[k], 4, 2, true, false);
    r = run_hlo(text, a, NULL);
    CHECK(iel(r.out->tuple[2], 0) == 1 && isnan(el(r.out->tuple[1], 0)));
    for (int i = 0; i < 16; i++) CHECK(same_value(el(r.out->tuple[0], i), a[i]));
    run_free(&r);
  }
}

/* mode: 'A', 'S' or 'N'; n_full: in mode 'N', whether u and vt are given their full
 * shapes (m x m, n x n) rather than the thin ones (both are valid). */
static void gesdd_text(char *buf, size_t cap, hlo_type t, int b, int m, int n, char mode, bool n_full) {
  const char *T = tname(t);
  int p = m < n ? m : n;
  bool full = mode == 'A' || (mode == 'N' && n_full);
  int uc = full ? m : p, vr = full ? n : p;
  snprintf(buf, cap,
           HEADER "  a = %s[%d,%d,%d]{1,2,0} parameter(0)\n"
                  "  ROOT s = (%s[%d,%d,%d]{1,2,0}, %s[%d,%d]{1,0}, %s[%d,%d,%d]{1,2,0}, %s[%d,%d,%d]{1,2,0}, "
                  "s32[%d]{0}) custom-call(a), custom_call_target=\"lapack_%cgesdd_ffi\", "
                  "operand_layout_constraints={%s[%d,%d,%d]{1,2,0}}, output_to_operand_aliasing={{0}: (0, {})}, "
                  "api_version=API_VERSION_TYPED_FFI, backend_config={mode = %d : ui8}\n}\n",
           T, b, m, n, T, b, m, n, T, b, p, T, b, m, uc, T, b, vr, n, b, tletter(t), T, b, m, n, mode);
}

/* The SVD invariants of matrix b of a gesdd result in mode 'A' or 'S': info 0, s
 * descending and non-negative, u^T u = I (u's columns), vt vt^T = I (vt's rows) and
 * u diag(s) vt = a. */
static void check_svd_invariants(const run *r, hlo_type t, int64_t b, int m, int n, bool full) {
  const hlo_literal *s = r->out->tuple[1], *u = r->out->tuple[2], *vt = r->out->tuple[3], *in = r->arg[0];
  int p = m < n ? m : n, uc = full ? m : p, vr = full ? n : p, big = m > n ? m : n;
  int64_t o = b * m * n, os = b * p, ou = b * m * uc, ov = b * vr * n;
  double tol = 8 * big * unit_roundoff(t);
  double norm = frob_norm(in, o, (int64_t)m * n);
  CHECK(iel(r->out->tuple[4], b) == 0);
  for (int j = 0; j < p; j++) CHECK(el(s, os + j) >= 0 && (j == 0 || el(s, os + j) <= el(s, os + j - 1)));
  for (int i = 0; i < uc; i++)
    for (int j = 0; j < uc; j++) {
      double x = 0;
      for (int k = 0; k < m; k++) x += el(u, ou + k * uc + i) * el(u, ou + k * uc + j);
      CHECK(within(x, i == j, tol, "u^T u vs I", b, i, j));
    }
  for (int i = 0; i < vr; i++)
    for (int j = 0; j < vr; j++) {
      double x = 0;
      for (int k = 0; k < n; k++) x += el(vt, ov + i * n + k) * el(vt, ov + j * n + k);
      CHECK(within(x, i == j, tol, "vt vt^T vs I", b, i, j));
    }
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double x = 0;
      for (int k = 0; k < p; k++) x += el(u, ou + i * uc + k) * el(s, os + k) * el(vt, ov + k * n + j);
      CHECK(within(x, el(in, o + i * n + j), tol * norm, "u diag(s) vt vs a", b, i, j));
    }
}

/* Random matrices, tall, wide and square, in modes 'A' and 'S'; mode 'N' then gives
 * bitwise the same s (the same rotations), zeros for u and vt, whichever shapes they
 * have, and, like every mode, the operand unchanged as a'. */
static void check_gesdd_random(hlo_type t, int m, int n) {
  enum { B = 3 };
  double *a = malloc(sizeof(double) * B * m * n);
  for (int i = 0; i < B * m * n; i++) a[i] = urand();
  int p = m < n ? m : n;
  char text[2048];
  g_reported = 0;
  gesdd_text(text, sizeof text, t, B, m, n, 'S', false);
  run rs = run_hlo(text, a, NULL);
  for (int b = 0; b < B; b++) check_svd_invariants(&rs, t, b, m, n, false);
  gesdd_text(text, sizeof text, t, B, m, n, 'A', false);
  run ra = run_hlo(text, a, NULL);
  for (int b = 0; b < B; b++) check_svd_invariants(&ra, t, b, m, n, true);
  for (int i = 0; i < B * p; i++) CHECK(el(ra.out->tuple[1], i) == el(rs.out->tuple[1], i));
  for (int nf = 0; nf < 2; nf++) {
    gesdd_text(text, sizeof text, t, B, m, n, 'N', nf);
    run rn = run_hlo(text, a, NULL);
    for (int i = 0; i < B * p; i++) CHECK(el(rn.out->tuple[1], i) == el(rs.out->tuple[1], i));
    for (int q = 2; q < 4; q++)
      for (int64_t i = 0; i < rn.out->tuple[q]->n; i++) CHECK(el(rn.out->tuple[q], i) == 0);
    CHECK(rn.out->tuple[2]->n == (int64_t)B * m * (nf ? m : p) && rn.out->tuple[3]->n == (int64_t)B * n * (nf ? n : p));
    for (int b = 0; b < B; b++) CHECK(iel(rn.out->tuple[4], b) == 0);
    for (int i = 0; i < B * m * n; i++) CHECK(el(rn.out->tuple[0], i) == el(rn.arg[0], i));
    run_free(&rn);
  }
  for (int i = 0; i < B * m * n; i++) CHECK(el(rs.out->tuple[0], i) == el(rs.arg[0], i));
  run_free(&rs);
  run_free(&ra);
  free(a);
}

static void test_gesdd_tall_wide_and_square_in_every_mode_satisfy_the_svd_invariants(void) {
  g_worst = 0;
  for (int k = 0; k < 2; k++) {
    check_gesdd_random(TYPES[k], 5, 4);
    check_gesdd_random(TYPES[k], 3, 5);
    check_gesdd_random(TYPES[k], 4, 4);
    check_gesdd_random(TYPES[k], 8, 7);
    check_gesdd_random(TYPES[k], 1, 3);
  }
  if (getenv("KILN_TEST_VERBOSE")) fprintf(stderr, "  gesdd: worst error / tolerance %.3g\n", g_worst);
}

/* Rank-deficient matrices: a tall one whose third column is the sum of the first two
 * (rank 2), its transpose (wide), a rank-1 outer product and the zero matrix. The
 * negligible singular values are ~0 (within the reconstruction tolerance), and u and vt
 * are still orthogonal in mode 'A': the directions the matrix does not determine come
 * from completing the basis. The zero matrix gives s = 0, u = I and vt = I exactly. */
static void test_gesdd_rank_deficient_matrix_keeps_full_orthonormal_bases(void) {
  enum { M = 4, N = 3 };
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    double a[4 * M * N], at[4 * M * N];
    for (int i = 0; i < M; i++) {
      double x = urand(), y = urand(), z = urand();
      a[i * N + 0] = x, a[i * N + 1] = y, a[i * N + 2] = t == HLO_F32 ? (double)((float)x + (float)y) : x + y;
      for (int j = 0; j < N; j++) a[M * N + i * N + j] = (i + 1.0) * (j - 1.5) * z / z; /* rank 1 */
      for (int j = 0; j < N; j++) a[2 * M * N + i * N + j] = 0;
      for (int j = 0; j < N; j++) a[3 * M * N + i * N + j] = (i == j) * 0.5;
    }
    for (int b = 0; b < 4; b++)
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) at[b * M * N + j * M + i] = a[b * M * N + i * N + j];
    char text[2048];
    g_reported = 0;
    for (int wide = 0; wide < 2; wide++) {
      int m = wide ? N : M, n = wide ? M : N;
      gesdd_text(text, sizeof text, t, 4, m, n, 'A', false);
      run r = run_hlo(text, wide ? at : a, NULL);
      const hlo_literal *s = r.out->tuple[1], *u = r.out->tuple[2], *vt = r.out->tuple[3];
      for (int b = 0; b < 4; b++) check_svd_invariants(&r, t, b, m, n, true);
      double tol = 8 * M * unit_roundoff(t);
      CHECK(within(el(s, 2), 0, tol * frob_norm(r.arg[0], 0, M * N), "rank 2: s[2]", 0, 2, 2));
      CHECK(within(el(s, 3 + 1), 0, tol * frob_norm(r.arg[0], M * N, M * N), "rank 1: s[1]", 1, 1, 1));
      CHECK(within(el(s, 3 + 2), 0, tol * frob_norm(r.arg[0], M * N, M * N), "rank 1: s[2]", 1, 2, 2));
      for (int j = 0; j < N; j++) CHECK(el(s, 6 + j) == 0 && el(s, 9 + j) == 0.5);
      for (int i = 0; i < m * m; i++) CHECK(el(u, 2 * m * m + i) == (i % (m + 1) == 0));
      for (int i = 0; i < n * n; i++) CHECK(el(vt, 2 * n * n + i) == (i % (n + 1) == 0));
      run_free(&r);
    }
  }
}

/* Matrices with orthogonal columns (or rows) need no rotation, so everything is exact:
 *   [[0,-2],[3,0],[0,0]]: s = (3, 2); u's columns are the columns over their norms,
 *     (0,1,0) and (-1,0,0), completed in mode 'A' by e_3; vt = I
 *   [[1,0],[0,-4]]: sorting puts 4 first: s = (4, 1), vt = [[0,1],[1,0]] (each row's
 *     largest component positive), so u = [[0,1],[-1,0]]
 *   the transpose of the first (wide): s = (3, 2); vt's rows are now those columns,
 *     so the second, (-1,0,0), is flipped, and with it u's second column:
 *     vt = [[0,1,0],[1,0,0]], u = [[1,0],[0,-1]] */
static void test_gesdd_orthogonal_columns_give_exact_singular_values_and_vectors(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    char text[2048];
    gesdd_text(text, sizeof text, t, 1, 3, 2, 'A', false);
    run r = run_hlo(text, (double[]){0, -2, 3, 0, 0, 0}, NULL);
    const double u1[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1}, vt1[4] = {1, 0, 0, 1};
    CHECK(el(r.out->tuple[1], 0) == 3 && el(r.out->tuple[1], 1) == 2 && iel(r.out->tuple[4], 0) == 0);
    for (int i = 0; i < 9; i++) CHECK(el(r.out->tuple[2], i) == u1[i]);
    for (int i = 0; i < 4; i++) CHECK(el(r.out->tuple[3], i) == vt1[i]);
    run_free(&r);
    gesdd_text(text, sizeof text, t, 1, 2, 2, 'S', false);
    r = run_hlo(text, (double[]){1, 0, 0, -4}, NULL);
    const double u2[4] = {0, 1, -1, 0}, vt2[4] = {0, 1, 1, 0};
    CHECK(el(r.out->tuple[1], 0) == 4 && el(r.out->tuple[1], 1) == 1);
    for (int i = 0; i < 4; i++) CHECK(el(r.out->tuple[2], i) == u2[i] && el(r.out->tuple[3], i) == vt2[i]);
    run_free(&r);
    gesdd_text(text, sizeof text, t, 1, 2, 3, 'S', false);
    r = run_hlo(text, (double[]){0, 3, 0, -2, 0, 0}, NULL);
    const double u3[4] = {1, 0, 0, -1}, vt3[6] = {0, 1, 0, 1, 0, 0};
    CHECK(el(r.out->tuple[1], 0) == 3 && el(r.out->tuple[1], 1) == 2);
    for (int i = 0; i < 4; i++) CHECK(el(r.out->tuple[2], i) == u3[i]);
    for (int i = 0; i < 6; i++) CHECK(el(r.out->tuple[3], i) == vt3[i]);
    run_free(&r);
  }
}

/* A NaN or inf fails its own matrix: info 1, NaN s, u and vt; the matrix beside it is
 * unaffected. */
static void test_gesdd_nan_or_inf_input_reports_info_and_nan_results(void) {
  for (int k = 0; k < 2; k++) {
    char text[2048];
    gesdd_text(text, sizeof text, TYPES[k], 3, 2, 2, 'S', false);
    run r = run_hlo(text, (double[]){1, NAN, 0, 1, 2, 0, 0, 1, INFINITY, 0, 0, 1}, NULL);
    const hlo_literal *s = r.out->tuple[1], *u = r.out->tuple[2], *vt = r.out->tuple[3], *info = r.out->tuple[4];
    CHECK(iel(info, 0) == 1 && iel(info, 1) == 0 && iel(info, 2) == 1);
    for (int b = 0; b < 3; b += 2) {
      CHECK(isnan(el(s, 2 * b)) && isnan(el(s, 2 * b + 1)));
      for (int i = 0; i < 4; i++) CHECK(isnan(el(u, 4 * b + i)) && isnan(el(vt, 4 * b + i)));
    }
    CHECK(el(s, 2) == 2 && el(s, 3) == 1);
    run_free(&r);
  }
}

/* Entries near the top or the bottom of the type's range: the hand-worked matrices
 * above times 2^k come out exactly 2^k times the same values, with the same vectors,
 * although their squares (formed by a naive Jacobi step or column norm) overflow
 * (2^1000, f32: 2^126) or vanish (2^-1070, f32: 2^-147, subnormal entries). */
static void test_syevd_and_gesdd_scale_huge_and_tiny_matrices_exactly(void) {
  for (int k = 0; k < 2; k++) {
    hlo_type t = TYPES[k];
    const int ks[2] = {t == HLO_F32 ? 126 : 1000, t == HLO_F32 ? -147 : -1070};
    for (int q = 0; q < 2; q++) {
      double f = ldexp(1, ks[q]), h = sqrt(0.5), ulp = unit_roundoff(t);
      char text[2048];
      syevd_text(text, sizeof text, t, 1, 2, true, true);
      run r = run_hlo(text, (double[]){2 * f, NAN, f, 2 * f}, NULL);
      CHECK(iel(r.out->tuple[2], 0) == 0);
      CHECK(el(r.out->tuple[1], 0) == f && el(r.out->tuple[1], 1) == 3 * f);
      const double sign[4] = {1, 1, -1, 1};
      for (int i = 0; i < 4; i++) CHECK(fabs(el(r.out->tuple[0], i) - sign[i] * h) <= ulp);
      run_free(&r);
      gesdd_text(text, sizeof text, t, 1, 3, 2, 'S', false);
      r = run_hlo(text, (double[]){0, -2 * f, 3 * f, 0, 0, 0}, NULL);
      const double u1[6] = {0, -1, 1, 0, 0, 0};
      CHECK(iel(r.out->tuple[4], 0) == 0);
      CHECK(el(r.out->tuple[1], 0) == 3 * f && el(r.out->tuple[1], 1) == 2 * f);
      for (int i = 0; i < 6; i++) CHECK(el(r.out->tuple[2], i) == u1[i]);
      for (int i = 0; i < 4; i++) CHECK(el(r.out->tuple[3], i) == (i % 3 == 0));
      run_free(&r);
    }
  }
}

/* Empty matrices: nothing to decompose, info 0; in mode 'A' an m x 0 matrix still has
 * an m x m u, the identity (and a 0 x n one an n x n vt). */
static void test_gesdd_and_syevd_of_empty_matrices(void) {
  char text[2048];
  gesdd_text(text, sizeof text, HLO_F32, 2, 3, 0, 'A', false);
  run r = run_hlo(text, NULL, NULL);
  CHECK(r.out->tuple[1]->n == 0 && r.out->tuple[3]->n == 0 && iel(r.out->tuple[4], 1) == 0);
  for (int i = 0; i < 18; i++) CHECK(el(r.out->tuple[2], i) == (i % 9 % 4 == 0));
  run_free(&r);
  gesdd_text(text, sizeof text, HLO_F64, 1, 0, 2, 'A', false);
  r = run_hlo(text, NULL, NULL);
  for (int i = 0; i < 4; i++) CHECK(el(r.out->tuple[3], i) == (i % 3 == 0));
  run_free(&r);
  syevd_text(text, sizeof text, HLO_F64, 2, 0, true, true);
  r = run_hlo(text, NULL, NULL);
  CHECK(r.out->tuple[0]->n == 0 && iel(r.out->tuple[2], 0) == 0 && iel(r.out->tuple[2], 1) == 0);
  run_free(&r);
}

/* ------------------------------------------------------------------ errors, support */

/* The status of evaluating TEXT's entry (argument values zero), and whether the
 * evaluator claims to support its root. */
static kiln_status eval_status(const char *text, bool *supported) {
  hlo_module *m = check_parse_hlo(text);
  int n = m->entry->n_params;
  hlo_literal *args[2] = {NULL, NULL}, *out = NULL;
  for (int p = 0; p < n && p < 2; p++) CHECK_OK(literal_create(&m->entry->params[p]->shape, &args[p]));
  kiln_status s = eval_module(m, args, n, &out);
  *supported = eval_supports(m->entry->root);
  literal_free(out);
  for (int p = 0; p < 2; p++) literal_free(args[p]);
  hlo_module_free(m);
  return s;
}

static void expect_error(const char *text, kiln_code code, const char *needle1, const char *needle2) {
  bool supported = true;
  kiln_status s = eval_status(text, &supported);
  CHECK(s != NULL);
  CHECK(!supported);
  if (!s) return;
  const char *msg = kiln_status_message(s);
  if (code != KILN_OK) CHECK(kiln_status_code(s) == code);
  if (!strstr(msg, needle1) || !strstr(msg, needle2)) fprintf(stderr, "  message: %s\n", msg);
  CHECK(strstr(msg, needle1) != NULL);
  CHECK(strstr(msg, needle2) != NULL);
  kiln_status_free(s);
}

/* Complex and unknown LAPACK routines are UNIMPLEMENTED, naming the call and its target;
 * malformed shapes are errors naming the call; a custom-call that is no LAPACK call keeps
 * the evaluator's generic error. None is "supported". */
static void test_unsupported_or_malformed_lapack_calls_are_clean_errors(void) {
  expect_error(HEADER "  a = f32[2,2] parameter(0)\n"
                      "  ROOT lu = (f32[2,2], s32[2], s32[]) custom-call(a), custom_call_target=\"lapack_cgetrf_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               KILN_UNIMPLEMENTED, "lapack_cgetrf_ffi", "lu");
  expect_error(HEADER "  a = f32[3,3] parameter(0)\n"
                      "  ROOT eig = (f32[3,3], f32[3], f32[3], f32[3,3], f32[3,3], s32[]) custom-call(a), "
                      "custom_call_target=\"lapack_sgeev_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={jobvl = 86 : ui8, jobvr = 86 : ui8}\n}\n",
               KILN_UNIMPLEMENTED, "lapack_sgeev_ffi", "eig");
  expect_error(HEADER "  a = f32[3,3] parameter(0)\n"
                      "  ROOT eig = (f32[3,3], f32[3], s32[]) custom-call(a), "
                      "custom_call_target=\"lapack_cheevd_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8}\n}\n",
               KILN_UNIMPLEMENTED, "lapack_cheevd_ffi", "eig");
  /* syevd of a non-square matrix; gesdd in mode 'S' with a full (m x m) u */
  expect_error(HEADER "  a = f32[3,4] parameter(0)\n"
                      "  ROOT e = (f32[3,4], f32[3], s32[]) custom-call(a), custom_call_target=\"lapack_ssyevd_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8}\n}\n",
               KILN_OK, "lapack_ssyevd_ffi", "e ");
  expect_error(HEADER "  a = f64[4,3] parameter(0)\n"
                      "  ROOT s = (f64[4,3], f64[3], f64[4,4], f64[3,3], s32[]) custom-call(a), "
                      "custom_call_target=\"lapack_dgesdd_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8}\n}\n",
               KILN_OK, "lapack_dgesdd_ffi", "s ");
  /* potrf of a non-square matrix */
  expect_error(HEADER "  a = f32[2,3,4] parameter(0)\n"
                      "  ROOT c = (f32[2,3,4], s32[2]) custom-call(a), custom_call_target=\"lapack_spotrf_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}\n}\n",
               KILN_OK, "lapack_spotrf_ffi", "c ");
  /* getrf with pivots of the wrong length */
  expect_error(HEADER "  a = f64[3,4] parameter(0)\n"
                      "  ROOT lu = (f64[3,4], s32[4], s32[]) custom-call(a), custom_call_target=\"lapack_dgetrf_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               KILN_OK, "lapack_dgetrf_ffi", "lu");
  /* trsm whose result is not shaped like b, and one whose batch dims differ from a's */
  expect_error(HEADER "  a = f32[2,2] parameter(0)\n  b = f32[2,3] parameter(1)\n"
                      "  ROOT x = f32[3,2] custom-call(a, b), custom_call_target=\"lapack_strsm_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={side = 76 : ui8}\n}\n",
               KILN_OK, "lapack_strsm_ffi", "x ");
  expect_error(HEADER "  a = f32[2,3,2,2] parameter(0)\n  b = f32[3,2,2,1] parameter(1)\n"
                      "  ROOT x = f32[3,2,2,1] custom-call(a, b), custom_call_target=\"lapack_strsm_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={side = 76 : ui8}\n}\n",
               KILN_OK, "lapack_strsm_ffi", "x ");
  /* orgqr with more rows of tau than the matrix has columns; a wrong element type */
  expect_error(HEADER "  a = f32[4,2] parameter(0)\n  tau = f32[3] parameter(1)\n"
                      "  ROOT q = f32[4,2] custom-call(a, tau), custom_call_target=\"lapack_sorgqr_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               KILN_OK, "lapack_sorgqr_ffi", "q ");
  expect_error(HEADER "  a = f64[2,2] parameter(0)\n"
                      "  ROOT qr = (f64[2,2], f64[2]) custom-call(a), custom_call_target=\"lapack_sgeqrf_ffi\", "
                      "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               KILN_OK, "lapack_sgeqrf_ffi", "qr");
  /* a bare prefix, and a custom-call that is not LAPACK at all */
  expect_error(HEADER "  a = f32[2,2] parameter(0)\n"
                      "  ROOT c = f32[2,2] custom-call(a), custom_call_target=\"lapack_\"\n}\n",
               KILN_UNIMPLEMENTED, "lapack_", "c ");
  expect_error(HEADER "  a = f32[2,2] parameter(0)\n"
                      "  ROOT c = f32[2,2] custom-call(a), custom_call_target=\"my_kernel\"\n}\n",
               KILN_UNIMPLEMENTED, "custom-call target \"my_kernel\" is not supported by the evaluator", "c ");
}

/* The supported calls are what eval_supports says yes to. */
static void test_eval_supports_the_decodable_lapack_calls(void) {
  char text[2048];
  bool supported = false;
  potrf_text(text, sizeof text, HLO_F64, 1, 2, true);
  kiln_status s = eval_status(text, &supported);
  CHECK(s == NULL && supported);
  kiln_status_free(s);
  trsm_text(text, sizeof text, HLO_F32, 2, 3, 2, false, true, true, true);
  s = eval_status(text, &supported);
  CHECK(s == NULL && supported);
  kiln_status_free(s);
  syevd_text(text, sizeof text, HLO_F32, 2, 3, false, true);
  s = eval_status(text, &supported);
  CHECK(s == NULL && supported);
  kiln_status_free(s);
  gesdd_text(text, sizeof text, HLO_F64, 2, 3, 4, 'N', true);
  s = eval_status(text, &supported);
  CHECK(s == NULL && supported);
  kiln_status_free(s);
}

/* Constant folding leaves LAPACK calls alone even on constant operands (custom-calls
 * count as side-effecting for the passes), here a trsm whose array result would
 * otherwise qualify; the module still evaluates to the solve. */
static void test_constant_folding_does_not_fold_lapack_calls(void) {
  hlo_module *m = check_parse_hlo(
      HEADER "  a = f32[1,2,2] constant({{{2,0},{1,4}}})\n  b = f32[1,2,1] constant({{{2},{9}}})\n"
             "  ROOT x = f32[1,2,1] custom-call(a, b), custom_call_target=\"lapack_strsm_ffi\", "
             "api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, "
             "trans_x = 78 : ui8, uplo = 76 : ui8}\n}\n");
  bool changed = true;
  CHECK_OK(eval_pass_constant_folding(m, &changed));
  CHECK(!changed);
  CHECK(m->entry->root->op == HLO_OP_CUSTOM_CALL);
  hlo_literal *out = NULL;
  CHECK_OK(eval_module(m, NULL, 0, &out));
  CHECK(out && el(out, 0) == 1 && el(out, 1) == 2);
  literal_free(out);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_potrf_lower_factor_reproduces_matrix_and_keeps_upper_triangle),
          TEST(test_potrf_upper_factor_reproduces_matrix_and_keeps_lower_triangle),
          TEST(test_potrf_two_by_two_is_exact),
          TEST(test_potrf_info_names_the_first_non_positive_pivot_per_matrix),
          TEST(test_getrf_square_tall_and_wide_satisfy_pa_equals_lu),
          TEST(test_getrf_hand_worked_cases_pivot_exactly),
          TEST(test_getrf_singular_matrix_reports_first_zero_pivot),
          TEST(test_trsm_every_side_uplo_transpose_and_diagonal_solves_the_system),
          TEST(test_trsm_small_solves_are_exact),
          TEST(test_geqrf_square_tall_and_wide_reflectors_reproduce_matrix),
          TEST(test_geqrf_hand_worked_reflector_and_zero_column),
          TEST(test_geqrf_then_orgqr_give_orthonormal_q_with_qr_equal_to_a),
          TEST(test_orgqr_with_fewer_reflectors_than_columns),
          TEST(test_empty_matrices_give_zero_info),
          TEST(test_syevd_eigenvectors_are_orthonormal_and_reconstruct_the_matrix),
          TEST(test_syevd_two_by_two_is_exact),
          TEST(test_syevd_reads_only_the_chosen_triangle),
          TEST(test_syevd_mode_n_gives_the_same_eigenvalues_and_returns_the_operand),
          TEST(test_syevd_nan_or_inf_input_reports_info_and_nan_results),
          TEST(test_gesdd_tall_wide_and_square_in_every_mode_satisfy_the_svd_invariants),
          TEST(test_gesdd_rank_deficient_matrix_keeps_full_orthonormal_bases),
          TEST(test_gesdd_orthogonal_columns_give_exact_singular_values_and_vectors),
          TEST(test_gesdd_nan_or_inf_input_reports_info_and_nan_results),
          TEST(test_syevd_and_gesdd_scale_huge_and_tiny_matrices_exactly),
          TEST(test_gesdd_and_syevd_of_empty_matrices),
          TEST(test_unsupported_or_malformed_lapack_calls_are_clean_errors),
          TEST(test_eval_supports_the_decodable_lapack_calls),
          TEST(test_constant_folding_does_not_fold_lapack_calls))
