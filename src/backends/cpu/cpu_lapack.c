/* The LAPACK custom-calls JAX emits on CPU (hlo/lapack_call.h), run natively by the
 * system's LAPACK, as XLA:CPU runs them: liblapack.so.3 is opened at first use (Debian's
 * liblapack3, or whichever implementation the alternatives system points it at), so
 * kiln neither links nor requires it -- without it these calls stay with the evaluator
 * thunk, which implements them itself (src/eval/lapack.c) and is the oracle they are
 * tested against.
 *
 * LAPACK is column-major and kiln's buffers are row-major, so each routine is called on
 * what the buffer means read column by column:
 *   potrf: a symmetric matrix reads as itself, only the triangle flips (uplo L <-> U);
 *          computed in place in the result buffer.
 *   trsm:  op(a) X = B read transposed is X^T op(a^T)' = B^T, i.e. the other side with
 *          the other triangle and the same transposition flag; in place, no copies.
 *   syevd: the symmetric input reads as itself (other triangle); the eigenvectors come
 *          back as columns of a column-major matrix and are transposed out.
 *   getrf, geqrf, orgqr, gesdd: the matrix is transposed into a column-major scratch and
 *          the results back, since a factorization of A^T is not one of A.
 * Fortran's hidden string-length arguments are passed (gfortran appends them). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_native.h"
#include "hlo/lapack_call.h"

typedef int lp_int; /* LAPACK's INTEGER in the LP64 interface Debian ships */

typedef void (*potrf_fn)(const char *uplo, const lp_int *n, void *a, const lp_int *lda, lp_int *info, size_t);
typedef void (*getrf_fn)(const lp_int *m, const lp_int *n, void *a, const lp_int *lda, lp_int *ipiv, lp_int *info);
typedef void (*trsm_fn)(const char *side, const char *uplo, const char *transa, const char *diag, const lp_int *m,
                        const lp_int *n, const void *alpha, const void *a, const lp_int *lda, void *b,
                        const lp_int *ldb, size_t, size_t, size_t, size_t);
typedef void (*geqrf_fn)(const lp_int *m, const lp_int *n, void *a, const lp_int *lda, void *tau, void *work,
                         const lp_int *lwork, lp_int *info);
typedef void (*orgqr_fn)(const lp_int *m, const lp_int *n, const lp_int *k, void *a, const lp_int *lda,
                         const void *tau, void *work, const lp_int *lwork, lp_int *info);
typedef void (*syevd_fn)(const char *jobz, const char *uplo, const lp_int *n, void *a, const lp_int *lda, void *w,
                         void *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info, size_t,
                         size_t);
typedef void (*gesdd_fn)(const char *jobz, const lp_int *m, const lp_int *n, void *a, const lp_int *lda, void *s,
                         void *u, const lp_int *ldu, void *vt, const lp_int *ldvt, void *work, const lp_int *lwork,
                         lp_int *iwork, lp_int *info, size_t);

/* The routines, [0] single and [1] double precision. */
static struct {
  void *lib;
  potrf_fn potrf[2];
  getrf_fn getrf[2];
  trsm_fn trsm[2];
  geqrf_fn geqrf[2];
  orgqr_fn orgqr[2];
  syevd_fn syevd[2];
  gesdd_fn gesdd[2];
  bool ok;
} lapack;
static pthread_once_t lapack_once = PTHREAD_ONCE_INIT;

static void open_lapack(void) {
  lapack.lib = dlopen("liblapack.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!lapack.lib) return;
  /* dlsym searches the library's dependencies too: trsm comes from its BLAS */
  lapack.potrf[0] = (potrf_fn)dlsym(lapack.lib, "spotrf_"), lapack.potrf[1] = (potrf_fn)dlsym(lapack.lib, "dpotrf_");
  lapack.getrf[0] = (getrf_fn)dlsym(lapack.lib, "sgetrf_"), lapack.getrf[1] = (getrf_fn)dlsym(lapack.lib, "dgetrf_");
  lapack.trsm[0] = (trsm_fn)dlsym(lapack.lib, "strsm_"), lapack.trsm[1] = (trsm_fn)dlsym(lapack.lib, "dtrsm_");
  lapack.geqrf[0] = (geqrf_fn)dlsym(lapack.lib, "sgeqrf_"), lapack.geqrf[1] = (geqrf_fn)dlsym(lapack.lib, "dgeqrf_");
  lapack.orgqr[0] = (orgqr_fn)dlsym(lapack.lib, "sorgqr_"), lapack.orgqr[1] = (orgqr_fn)dlsym(lapack.lib, "dorgqr_");
  lapack.syevd[0] = (syevd_fn)dlsym(lapack.lib, "ssyevd_"), lapack.syevd[1] = (syevd_fn)dlsym(lapack.lib, "dsyevd_");
  lapack.gesdd[0] = (gesdd_fn)dlsym(lapack.lib, "sgesdd_"), lapack.gesdd[1] = (gesdd_fn)dlsym(lapack.lib, "dgesdd_");
  lapack.ok = true;
  for (int p = 0; p < 2; p++)
    lapack.ok = lapack.ok && lapack.potrf[p] && lapack.getrf[p] && lapack.trsm[p] && lapack.geqrf[p] &&
                lapack.orgqr[p] && lapack.syevd[p] && lapack.gesdd[p];
}

static bool lapack_available(void) {
  pthread_once(&lapack_once, open_lapack);
  return lapack.ok;
}

typedef struct lapack_state {
  hlo_lapack_call call;
  size_t elem; /* 4 or 8 */
  int p;       /* 0 single, 1 double */
  lp_int lwork;  /* workspace (elements), from LAPACK's size query */
  lp_int liwork; /* syevd/gesdd integer workspace */
  int64_t ucols, vrows; /* gesdd: u is m x ucols, vt vrows x n (as the result's shapes) */
} lapack_state;

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

static const char *gesdd_job(const hlo_lapack_call *c) { return !c->vectors ? "N" : c->full ? "A" : "S"; }

static bool la_supports(const hlo_instr *ins, strbuf *why) {
  if (!hlo_is_lapack_call(ins)) return false;
  hlo_lapack_call c;
  kiln_status st = hlo_lapack_call_read(ins, &c);
  if (st) {
    if (why) strbuf_printf(why, "%s", kiln_status_message(st));
    kiln_status_free(st);
    return false;
  }
  if (!fits_int(c.m) || !fits_int(c.n) || !fits_int(c.k) || c.m * c.n > INT_MAX) {
    if (why) strbuf_printf(why, "%s: matrices beyond LAPACK's 32-bit dimensions", ins->name);
    return false;
  }
  if (!lapack_available()) {
    if (why) strbuf_printf(why, "%s: the system LAPACK (liblapack.so.3) is not available", ins->name);
    return false;
  }
  return true;
}

static kiln_status la_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                             bool *uses_jit) {
  (void)jm;
  (void)prefix;
  *uses_jit = false;
  lapack_state *s = calloc(1, sizeof *s);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = hlo_lapack_call_read(ins, &s->call);
  if (st) {
    free(s);
    return st;
  }
  s->p = s->call.type == HLO_F64;
  s->elem = s->p ? 8 : 4;
  lp_int m = (lp_int)s->call.m, n = (lp_int)s->call.n, k = (lp_int)s->call.k, lda = m > 1 ? m : 1, query = -1,
         info = 0;
  union {
    double d;
    float f;
  } w = {0}; /* the optimal workspace comes back as a number of the routine's type */
  if (s->call.routine == HLO_LAPACK_GEQRF) {
    lapack.geqrf[s->p](&m, &n, NULL, &lda, NULL, &w, &query, &info);
  } else if (s->call.routine == HLO_LAPACK_ORGQR) {
    lapack.orgqr[s->p](&m, &n, &k, NULL, &lda, NULL, &w, &query, &info);
  }
  lp_int iw = 0;
  int64_t p = s->call.m < s->call.n ? s->call.m : s->call.n;
  if (s->call.routine == HLO_LAPACK_SYEVD) {
    lp_int lda1 = n > 1 ? n : 1;
    lapack.syevd[s->p](s->call.vectors ? "V" : "N", "L", &n, NULL, &lda1, NULL, &w, &query, &iw, &query, &info, 1, 1);
    s->liwork = iw > 1 ? iw : 1;
  } else if (s->call.routine == HLO_LAPACK_GESDD) {
    const hlo_shape *us = &ins->shape.elems[2], *vs = &ins->shape.elems[3];
    s->ucols = us->dims[us->rank - 1], s->vrows = vs->dims[vs->rank - 2];
    lp_int ldu = m > 1 ? m : 1, ldvt = (lp_int)(s->call.full ? n : p);
    if (ldvt < 1) ldvt = 1;
    lapack.gesdd[s->p](gesdd_job(&s->call), &m, &n, NULL, &lda, NULL, NULL, &ldu, NULL, &ldvt, &w, &query, &iw,
                       &info, 1);
    s->liwork = (lp_int)(8 * p > 1 ? 8 * p : 1);
  }
  double want = s->p ? w.d : (double)w.f;
  /* LAPACK rounds the size it reports to the workspace's type; one more is harmless */
  s->lwork = want >= 1 && want < INT_MAX - 1 ? (lp_int)want + 1 : (n > 1 ? n : 1);
  *state = s;
  return NULL;
}

/* Copies the rows x cols row-major matrix SRC into DST column-major (or back: the same
 * copy with rows and cols exchanged). */
static void transpose(char *dst, const char *src, int64_t rows, int64_t cols, size_t elem) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) memcpy(dst + (size_t)(j * rows + i) * elem, src + (size_t)(i * cols + j) * elem, elem);
}

static kiln_status la_run(void *state, char *const *out, char *const *in) {
  const lapack_state *s = state;
  const hlo_lapack_call *c = &s->call;
  size_t mat = (size_t)(c->m * c->n) * s->elem;
  int64_t mn = c->m < c->n ? c->m : c->n;
  lp_int m = (lp_int)c->m, n = (lp_int)c->n, k = (lp_int)c->k, info = 0;
  char *scratch = NULL, *work = NULL;
  lp_int *iwork = NULL;
  char *u_cm = NULL, *vt_cm = NULL;
  size_t u_bytes = (size_t)(c->m * s->ucols) * s->elem, vt_bytes = (size_t)(s->vrows * c->n) * s->elem;
  if (c->routine != HLO_LAPACK_POTRF && c->routine != HLO_LAPACK_TRSM) {
    scratch = malloc(mat ? mat : 1);
    work = malloc((size_t)s->lwork * s->elem);
    iwork = malloc((size_t)(s->liwork > 0 ? s->liwork : 1) * sizeof *iwork);
    if (c->routine == HLO_LAPACK_GESDD) u_cm = calloc(1, u_bytes + 1), vt_cm = calloc(1, vt_bytes + 1);
    if (!scratch || !work || !iwork || (c->routine == HLO_LAPACK_GESDD && (!u_cm || !vt_cm))) {
      free(scratch);
      free(work);
      free(iwork);
      free(u_cm);
      free(vt_cm);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (int64_t b = 0; b < c->batch; b++) {
    switch (c->routine) {
      case HLO_LAPACK_POTRF: {
        char *a = out[0] + (size_t)b * mat;
        if (out[0] != in[0]) memcpy(a, in[0] + (size_t)b * mat, mat);
        lp_int lda = n > 1 ? n : 1;
        const char *uplo = c->lower ? "U" : "L";
        lapack.potrf[s->p](uplo, &n, a, &lda, &info, 1);
        ((int32_t *)out[1])[b] = info;
        break;
      }
      case HLO_LAPACK_GETRF: {
        lp_int lda = m > 1 ? m : 1;
        transpose(scratch, in[0] + (size_t)b * mat, c->m, c->n, s->elem);
        lapack.getrf[s->p](&m, &n, scratch, &lda, (lp_int *)((int32_t *)out[1] + b * mn), &info);
        transpose(out[0] + (size_t)b * mat, scratch, c->n, c->m, s->elem);
        ((int32_t *)out[2])[b] = info;
        break;
      }
      case HLO_LAPACK_TRSM: {
        size_t asz = (size_t)(c->k * c->k) * s->elem;
        char *x = out[0] + (size_t)b * mat;
        if (out[0] != in[1]) memcpy(x, in[1] + (size_t)b * mat, mat);
        /* column-major, x is n x m: the other side, the other triangle */
        lp_int rows = n, cols = m, lda = k > 1 ? k : 1, ldb = n > 1 ? n : 1;
        double one = 1.0;
        float onef = 1.0f;
        lapack.trsm[s->p](c->left ? "R" : "L", c->lower ? "U" : "L", c->transpose ? "T" : "N",
                          c->unit_diagonal ? "U" : "N", &rows, &cols, s->p ? (const void *)&one : (const void *)&onef,
                          in[0] + (size_t)b * asz, &lda, x, &ldb, 1, 1, 1, 1);
        break;
      }
      case HLO_LAPACK_GEQRF: {
        lp_int lda = m > 1 ? m : 1;
        transpose(scratch, in[0] + (size_t)b * mat, c->m, c->n, s->elem);
        lapack.geqrf[s->p](&m, &n, scratch, &lda, out[1] + (size_t)(b * mn) * s->elem, work, &s->lwork, &info);
        transpose(out[0] + (size_t)b * mat, scratch, c->n, c->m, s->elem);
        break;
      }
      case HLO_LAPACK_ORGQR: {
        lp_int lda = m > 1 ? m : 1;
        transpose(scratch, in[0] + (size_t)b * mat, c->m, c->n, s->elem);
        lapack.orgqr[s->p](&m, &n, &k, scratch, &lda, in[1] + (size_t)(b * c->k) * s->elem, work, &s->lwork, &info);
        transpose(out[0] + (size_t)b * mat, scratch, c->n, c->m, s->elem);
        break;
      }
      case HLO_LAPACK_SYEVD: {
        /* symmetric: the buffer read column-major is the same matrix, other triangle */
        lp_int lda = n > 1 ? n : 1;
        memcpy(scratch, in[0] + (size_t)b * mat, mat);
        lapack.syevd[s->p](c->vectors ? "V" : "N", c->lower ? "U" : "L", &n, scratch, &lda,
                           out[1] + (size_t)(b * c->n) * s->elem, work, &s->lwork, iwork, &s->liwork, &info, 1, 1);
        if (c->vectors) /* eigenvectors are scratch's columns: out[i][j] = scratch[j * n + i] */
          transpose(out[0] + (size_t)b * mat, scratch, c->n, c->n, s->elem);
        else /* unspecified: the input, as the evaluator writes it */
          memcpy(out[0] + (size_t)b * mat, in[0] + (size_t)b * mat, mat);
        ((int32_t *)out[2])[b] = info;
        break;
      }
      case HLO_LAPACK_GESDD: {
        lp_int lda = m > 1 ? m : 1, ldu = m > 1 ? m : 1, ldvt = (lp_int)(s->vrows > 1 ? s->vrows : 1);
        transpose(scratch, in[0] + (size_t)b * mat, c->m, c->n, s->elem);
        lapack.gesdd[s->p](gesdd_job(c), &m, &n, scratch, &lda, out[1] + (size_t)(b * mn) * s->elem, u_cm, &ldu,
                           vt_cm, &ldvt, work, &s->lwork, iwork, &info, 1);
        /* a' is unspecified (LAPACK destroys it): the input, as the evaluator writes it */
        memcpy(out[0] + (size_t)b * mat, in[0] + (size_t)b * mat, mat);
        if (c->vectors) {
          transpose(out[2] + (size_t)b * u_bytes, u_cm, s->ucols, c->m, s->elem);
          transpose(out[3] + (size_t)b * vt_bytes, vt_cm, c->n, s->vrows, s->elem);
        } else { /* unspecified: zeros, as the evaluator writes them */
          memset(out[2] + (size_t)b * u_bytes, 0, u_bytes);
          memset(out[3] + (size_t)b * vt_bytes, 0, vt_bytes);
        }
        ((int32_t *)out[4])[b] = info;
        break;
      }
    }
  }
  free(scratch);
  free(work);
  free(iwork);
  free(u_cm);
  free(vt_cm);
  return NULL;
}

static void la_destroy(void *state) { free(state); }

const cpu_native_kind cpu_native_lapack = {
    .name = "lapack",
    .supports = la_supports,
    .create = la_create,
    .run = la_run,
    .destroy = la_destroy,
};
