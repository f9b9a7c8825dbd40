/* Unit tests for the cpu backend's LAPACK custom-calls (src/backends/cpu/cpu_lapack.c):
 * each of jaxlib's lapack_{s,d}{potrf,getrf,trsm,geqrf,orgqr}_ffi calls, batched, must
 * run as a native thunk (the system LAPACK, not the evaluator) and agree with the
 * evaluator's own implementation (src/eval/lapack.c), which shares no code with LAPACK.
 *
 * The inputs are made well conditioned inside each module (a + 8 I for LU and triangular
 * solves, a a^T + 4 I for Cholesky) so that both sides' different elimination orders
 * stay within a few ulp per step: floats agree to 2e-5 (f32) / 1e-12 (f64) relative to
 * max(1, |value|); pivots and info are integers and must be equal. The row-major ->
 * column-major handling is what these cases exercise most: rectangular matrices, both
 * triangles, both sides and both transpositions. */
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

TEST_MAIN(TEST(test_potrf_both_triangles_run_on_lapack), TEST(test_potrf_reports_the_failing_column),
          TEST(test_getrf_of_wide_and_tall_matrices_pivots_like_the_evaluator),
          TEST(test_trsm_every_side_triangle_transpose_and_diagonal),
          TEST(test_geqrf_then_orgqr_give_the_evaluators_q_and_r))
