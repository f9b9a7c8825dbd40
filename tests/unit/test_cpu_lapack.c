/* Unit tests for the cpu backend's LAPACK custom-calls (src/backends/cpu/cpu_lapack.c):
 * each of jaxlib's lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr,syevd,gesdd}_ffi calls, batched, must
 * run as a native thunk (the system LAPACK, not the evaluator) and agree with the
 * evaluator's own implementation (src/eval/lapack.c), which shares no code with LAPACK.
 *
 * The inputs are made well conditioned inside each module (a + 8 I for LU and triangular
 * solves, a a^T + 4 I for Cholesky) so that both sides' different elimination orders
 * stay within a few ulp per step: floats agree to 2e-5 (f32) / 1e-12 (f64) relative to
 * max(1, |value|); pivots and info are integers and must be equal. The row-major ->
 * column-major handling is what these cases exercise most: rectangular matrices, both
 * triangles, both sides and both transpositions. Eigen- and singular vectors are unique
 * only up to sign, so for syevd and gesdd the values must agree and LAPACK's vectors are
 * checked by reconstruction and orthonormality (10x the tolerance: n-term sums). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"
#include "hlo/literal.h"

static bool leaves_close(const hlo_literal *got, const hlo_literal *want, double tol) {
  if (shape_is_tuple(&want->shape)) {
    if (!shape_is_tuple(&got->shape) || got->shape.n_elems != want->shape.n_elems) return false;
    for (int i = 0; i < want->shape.n_elems; i++)
      if (!leaves_close(got->tuple[i], want->tuple[i], tol)) return false;
    return true;
  }
  if (got->shape.type != want->shape.type || got->n != want->n) return false;
  for (int64_t i = 0; i < want->n; i++) {
    double g, w;
    switch (want->shape.type) {
      case HLO_F32: g = ((const float *)got->data)[i], w = ((const float *)want->data)[i]; break;
      case HLO_F64: g = ((const double *)got->data)[i], w = ((const double *)want->data)[i]; break;
      case HLO_S32:
        if (((const int32_t *)got->data)[i] != ((const int32_t *)want->data)[i]) {
          fprintf(stderr, "integer leaf differs at %lld: %d vs %d\n", (long long)i, ((const int32_t *)got->data)[i],
                  ((const int32_t *)want->data)[i]);
          return false;
        }
        continue;
      default: return false;
    }
    if (!(fabs(g - w) <= tol * fmax(1.0, fabs(w)))) {
      fprintf(stderr, "element %lld: cpu %.17g, evaluator %.17g\n", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

static const char *current;
static double current_tol;
/* Checks the cpu result against the evaluator's; leaves_close unless set. */
static void (*current_compare)(const hlo_literal *arg, const hlo_literal *got, const hlo_literal *want);

static void run_case(void) {
  hlo_module *m = check_parse_hlo(current);
  if (!m) return;
  const backend *cpu = backend_find("cpu");
  CHECK(cpu != NULL);
  int n = m->entry->n_params;
  hlo_literal *args[4] = {0};
  for (int p = 0; p < n && p < 4; p++) {
    CHECK_OK(literal_create(&m->entry->params[p]->shape, &args[p]));
    literal_fill_pseudo_random(args[p], 7 + (uint64_t)p);
  }
  backend_compile_options o = backend_compile_options_default();
  o.profile = true;
  backend_executable *e = NULL;
  hlo_literal *got = NULL, *want = NULL;
  CHECK_OK(cpu ? cpu->compile(cpu, m, &o, &e) : NULL);
  if (e) {
    CHECK_OK(cpu->execute(e, args, n, &got));
    cpu->destroy(e); /* prints the profile */
  }
  CHECK_OK(eval_module(m, args, n, &want));
  if (current_compare && got && want)
    current_compare(args[0], got, want);
  else
    CHECK(got && want && leaves_close(got, want, current_tol));
  literal_free(got);
  literal_free(want);
  for (int p = 0; p < n && p < 4; p++) literal_free(args[p]);
  hlo_module_free(m);
}

/* Compiles and runs TEXT on cpu and the evaluator; the profile must name NATIVE (the
 * custom-call ran on LAPACK) and no evaluator thunk. */
static void check_lapack(const char *text, double tol, const char *native) {
  current = text;
  current_tol = tol;
  current_compare = NULL;
  char *err = check_capture_stderr(run_case);
  bool ran_native = err && strstr(err, native) != NULL;
  if (!ran_native || strstr(err, "evaluator")) fprintf(stderr, "%s\n", err ? err : "");
  CHECK(ran_native);
  CHECK(err && strstr(err, "evaluator ") == NULL);
  free(err);
}

/* a + 8 I for a [B,N,N] parameter of type T, as instruction `w`. */
#define SHIFTED(T, B, N)                                                                            \
  "  a = " T "[" B "," N "," N "] parameter(0)\n"                                                   \
  "  i0 = s32[" B "," N "," N "] iota(), iota_dimension=1\n"                                        \
  "  i1 = s32[" B "," N "," N "] iota(), iota_dimension=2\n"                                        \
  "  d = pred[" B "," N "," N "] compare(i0, i1), direction=EQ\n"                                   \
  "  e8 = " T "[] constant(8)\n  z = " T "[] constant(0)\n"                                         \
  "  e8b = " T "[" B "," N "," N "] broadcast(e8), dimensions={}\n"                                 \
  "  zb = " T "[" B "," N "," N "] broadcast(z), dimensions={}\n"                                   \
  "  eye = " T "[" B "," N "," N "] select(d, e8b, zb)\n"                                           \
  "  w = " T "[" B "," N "," N "] add(a, eye)\n"

static void test_potrf_both_triangles_run_on_lapack(void) {
  static const char *const uplo[] = {"76", "85"};
  for (int u = 0; u < 2; u++) {
    char text[4096];
    snprintf(text, sizeof text,
             "HloModule potrf\n\nENTRY main {\n" SHIFTED("f32", "3", "5")
             "  s = f32[3,5,5] dot(w, w), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
             "rhs_contracting_dims={2}\n"
             "  ROOT c = (f32[3,5,5]{1,2,0}, s32[3]{0}) custom-call(s), custom_call_target=\"lapack_spotrf_ffi\", "
             "api_version=API_VERSION_TYPED_FFI, backend_config={uplo = %s : ui8}\n}\n",
             uplo[u]);
    check_lapack(text, 2e-5, "native c custom-call");
  }
}

static void test_potrf_reports_the_failing_column(void) {
  /* -I: the first pivot is already negative, info = 1 on both sides */
  check_lapack("HloModule potrf_fail\n\nENTRY main {\n"
               "  a = f64[2,3,3] parameter(0)\n"
               "  i0 = s32[2,3,3] iota(), iota_dimension=1\n  i1 = s32[2,3,3] iota(), iota_dimension=2\n"
               "  d = pred[2,3,3] compare(i0, i1), direction=EQ\n"
               "  m1 = f64[] constant(-1)\n  z = f64[] constant(0)\n"
               "  mb = f64[2,3,3] broadcast(m1), dimensions={}\n  zb = f64[2,3,3] broadcast(z), dimensions={}\n"
               "  s = f64[2,3,3] select(d, mb, zb)\n"
               "  ROOT c = (f64[2,3,3], s32[2]) custom-call(s), custom_call_target=\"lapack_dpotrf_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}\n}\n",
               1e-12, "native c custom-call");
}

static void test_getrf_of_wide_and_tall_matrices_pivots_like_the_evaluator(void) {
  /* no shift: random rows, so the partial pivoting actually swaps */
  check_lapack("HloModule getrf\n\nENTRY main {\n  a = f64[2,4,6] parameter(0)\n"
               "  ROOT lu = (f64[2,4,6], s32[2,4], s32[2]) custom-call(a), custom_call_target=\"lapack_dgetrf_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               1e-12, "native lu custom-call");
  check_lapack("HloModule getrf\n\nENTRY main {\n  a = f32[3,6,4] parameter(0)\n"
               "  ROOT lu = (f32[3,6,4], s32[3,4], s32[3]) custom-call(a), custom_call_target=\"lapack_sgetrf_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               2e-5, "native lu custom-call");
}

static void test_trsm_every_side_triangle_transpose_and_diagonal(void) {
  for (int side = 0; side < 2; side++)
    for (int lower = 0; lower < 2; lower++)
      for (int trans = 0; trans < 2; trans++)
        for (int unit = 0; unit < 2; unit++) {
          char text[4096];
          const char *b = side == 0 ? "f32[3,5,2]" : "f32[3,2,5]";
          snprintf(text, sizeof text,
                   "HloModule trsm\n\nENTRY main {\n" SHIFTED("f32", "3", "5") "  b = %s parameter(1)\n"
                   "  ROOT x = %s custom-call(w, b), custom_call_target=\"lapack_strsm_ffi\", "
                   "api_version=API_VERSION_TYPED_FFI, backend_config={diag = %d : ui8, side = %d : ui8, "
                   "trans_x = %d : ui8, uplo = %d : ui8}\n}\n",
                   b, b, unit ? 'U' : 'N', side ? 'R' : 'L', trans ? 'T' : 'N', lower ? 'L' : 'U');
          check_lapack(text, 2e-5, "native x custom-call");
        }
}

static void test_geqrf_then_orgqr_give_the_evaluators_q_and_r(void) {
  check_lapack("HloModule qr\n\nENTRY main {\n  a = f64[2,6,4] parameter(0)\n"
               "  qr = (f64[2,6,4], f64[2,4]) custom-call(a), custom_call_target=\"lapack_dgeqrf_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={}\n"
               "  r = f64[2,6,4] get-tuple-element(qr), index=0\n  t = f64[2,4] get-tuple-element(qr), index=1\n"
               "  q = f64[2,6,4] custom-call(r, t), custom_call_target=\"lapack_dorgqr_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={}\n"
               "  ROOT out = (f64[2,6,4], f64[2,4], f64[2,6,4]) tuple(r, t, q)\n}\n",
               1e-12, "native q custom-call");
  check_lapack("HloModule qr_wide\n\nENTRY main {\n  a = f32[3,4,6] parameter(0)\n"
               "  ROOT qr = (f32[3,4,6], f32[3,4]) custom-call(a), custom_call_target=\"lapack_sgeqrf_ffi\", "
               "api_version=API_VERSION_TYPED_FFI, backend_config={}\n}\n",
               2e-5, "native qr custom-call");
}

/* Element (i, j) of matrix b of an f32 or f64 literal with trailing dims [r, c]. */
static double at(const hlo_literal *l, int64_t b, int64_t i, int64_t j) {
  int r = l->shape.rank;
  int64_t rows = l->shape.dims[r - 2], cols = l->shape.dims[r - 1], k = (b * rows + i) * cols + j;
  return l->shape.type == HLO_F32 ? ((const float *)l->data)[k] : ((const double *)l->data)[k];
}

static double vat(const hlo_literal *l, int64_t b, int64_t i) {
  int64_t n = l->shape.dims[l->shape.rank - 1], k = b * n + i;
  return l->shape.type == HLO_F32 ? ((const float *)l->data)[k] : ((const double *)l->data)[k];
}

static double tol_of(const hlo_literal *l) { return l->shape.type == HLO_F32 ? 2e-5 : 1e-12; }

/* Eigenvectors are unique only up to sign, so LAPACK's and the evaluator's may differ:
 * the eigenvalues must agree, and LAPACK's vectors must be orthonormal and diagonalise the
 * lower triangle's symmetric matrix. */
static void compare_syevd(const hlo_literal *a, const hlo_literal *got, const hlo_literal *want) {
  const hlo_literal *v = got->tuple[0], *w = got->tuple[1];
  CHECK(leaves_close(w, want->tuple[1], tol_of(w)) && leaves_close(got->tuple[2], want->tuple[2], 0));
  int r = a->shape.rank;
  int64_t n = a->shape.dims[r - 1], batch = a->n / (n * n);
  double worst = 0, scale = 1;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double sym = i >= j ? at(a, b, i, j) : at(a, b, j, i), rec = 0, dot = 0;
        for (int64_t k = 0; k < n; k++) rec += at(v, b, i, k) * vat(w, b, k) * at(v, b, j, k);
        for (int64_t k = 0; k < n; k++) dot += at(v, b, k, i) * at(v, b, k, j);
        worst = fmax(worst, fmax(fabs(rec - sym), fabs(dot - (i == j))));
        scale = fmax(scale, fabs(sym));
      }
  if (!(worst <= 10 * tol_of(w) * scale)) fprintf(stderr, "syevd: reconstruction off by %g\n", worst);
  CHECK(worst <= 10 * tol_of(w) * scale);
}

/* Singular vectors likewise: the singular values must agree, and LAPACK's u diag(s) vt
 * must give back a with orthonormal columns of u and rows of vt (the thin or full ones). */
static void compare_gesdd(const hlo_literal *a, const hlo_literal *got, const hlo_literal *want) {
  const hlo_literal *sv = got->tuple[1], *u = got->tuple[2], *vt = got->tuple[3];
  CHECK(leaves_close(sv, want->tuple[1], tol_of(sv)) && leaves_close(got->tuple[4], want->tuple[4], 0));
  int r = a->shape.rank;
  int64_t m = a->shape.dims[r - 2], n = a->shape.dims[r - 1], p = m < n ? m : n, batch = a->n / (m * n);
  int64_t uc = u->shape.dims[r - 1], vr = vt->shape.dims[r - 2];
  double worst = 0;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double rec = 0;
        for (int64_t k = 0; k < p; k++) rec += at(u, b, i, k) * vat(sv, b, k) * at(vt, b, k, j);
        worst = fmax(worst, fabs(rec - at(a, b, i, j)));
      }
    for (int64_t i = 0; i < uc; i++)
      for (int64_t j = 0; j < uc; j++) {
        double dot = 0;
        for (int64_t k = 0; k < m; k++) dot += at(u, b, k, i) * at(u, b, k, j);
        worst = fmax(worst, fabs(dot - (i == j)));
      }
    for (int64_t i = 0; i < vr; i++)
      for (int64_t j = 0; j < vr; j++) {
        double dot = 0;
        for (int64_t k = 0; k < n; k++) dot += at(vt, b, i, k) * at(vt, b, j, k);
        worst = fmax(worst, fabs(dot - (i == j)));
      }
  }
  if (!(worst <= 10 * tol_of(sv))) fprintf(stderr, "gesdd: reconstruction off by %g\n", worst);
  CHECK(worst <= 10 * tol_of(sv));
}

static void check_vectors(const char *text, const char *native,
                          void (*compare)(const hlo_literal *, const hlo_literal *, const hlo_literal *)) {
  current = text;
  current_compare = compare;
  char *err = check_capture_stderr(run_case);
  bool ran_native = err && strstr(err, native) != NULL;
  if (!ran_native || strstr(err, "evaluator ") || strstr(err, "off by")) fprintf(stderr, "%s\n", err ? err : "");
  CHECK(ran_native);
  CHECK(err && strstr(err, "evaluator ") == NULL);
  free(err);
  current_compare = NULL;
}

static void test_syevd_eigenvalues_match_and_vectors_diagonalise(void) {
  check_vectors("HloModule eigh\n\nENTRY main {\n  a = f32[3,5,5] parameter(0)\n"
                "  ROOT e = (f32[3,5,5], f32[3,5], s32[3]) custom-call(a), custom_call_target=\"lapack_ssyevd_ffi\", "
                "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8}\n}\n",
                "native e custom-call", compare_syevd);
  check_vectors("HloModule eigh\n\nENTRY main {\n  a = f64[2,4,4] parameter(0)\n"
                "  ROOT e = (f64[2,4,4], f64[2,4], s32[2]) custom-call(a), custom_call_target=\"lapack_dsyevd_ffi\", "
                "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8}\n}\n",
                "native e custom-call", compare_syevd);
}

static void test_gesdd_thin_and_full_of_tall_and_wide_matrices(void) {
  check_vectors("HloModule svd\n\nENTRY main {\n  a = f32[3,6,4] parameter(0)\n"
                "  ROOT s = (f32[3,6,4], f32[3,4], f32[3,6,4], f32[3,4,4], s32[3]) custom-call(a), "
                "custom_call_target=\"lapack_sgesdd_ffi\", api_version=API_VERSION_TYPED_FFI, "
                "backend_config={mode = 83 : ui8}\n}\n",
                "native s custom-call", compare_gesdd);
  check_vectors("HloModule svd\n\nENTRY main {\n  a = f64[2,3,5] parameter(0)\n"
                "  ROOT s = (f64[2,3,5], f64[2,3], f64[2,3,3], f64[2,5,5], s32[2]) custom-call(a), "
                "custom_call_target=\"lapack_dgesdd_ffi\", api_version=API_VERSION_TYPED_FFI, "
                "backend_config={mode = 65 : ui8}\n}\n",
                "native s custom-call", compare_gesdd);
}

TEST_MAIN(TEST(test_potrf_both_triangles_run_on_lapack), TEST(test_potrf_reports_the_failing_column),
          TEST(test_getrf_of_wide_and_tall_matrices_pivots_like_the_evaluator),
          TEST(test_trsm_every_side_triangle_transpose_and_diagonal),
          TEST(test_geqrf_then_orgqr_give_the_evaluators_q_and_r),
          TEST(test_syevd_eigenvalues_match_and_vectors_diagonalise),
          TEST(test_gesdd_thin_and_full_of_tall_and_wide_matrices))
