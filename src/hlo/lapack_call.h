/* The LAPACK custom-calls JAX emits for linear algebra on CPU (jaxlib's typed-FFI
 * targets lapack_<t><routine>_ffi), read into one descriptor that the evaluator and the
 * cpu backend both execute, so the target names, operand and result shapes and the
 * backend_config attributes (uplo = 76 : ui8, ...) are decoded in one place.
 *
 * Semantics are on logical indices: a matrix is the last two dimensions of an operand,
 * the dimensions before them are batch. The layouts JAX attaches (column-major
 * operand_layout_constraints) only say how XLA lays the matrices out in memory and do
 * not change any value. Routines (t = s: f32, d: f64):
 *   potrf(a) -> (a', info[batch])                       Cholesky, the `uplo` triangle
 *   getrf(a[m,n]) -> (lu, ipiv[batch,min(m,n)], info[batch])   LU, partial pivoting,
 *                                                       1-based pivot rows as LAPACK
 *   trsm(a, b) -> x                                    triangular solve (side, uplo,
 *                                                       trans_x, diag), alpha 1
 *   geqrf(a[m,n]) -> (a', tau[batch,min(m,n)])         Householder QR
 *   orgqr(a[m,n], tau[batch,k]) -> q[m,n]              the first n columns of Q
 *   syevd(a[n,n]) -> (v, w[batch,n], info)             symmetric eigendecomposition of
 *                                                       the `uplo` triangle: eigenvalues w
 *                                                       ascending, eigenvectors the columns
 *                                                       of v (mode 'V'; 'N': v unspecified)
 *   gesdd(a[m,n]) -> (a', s[batch,p], u, vt, info)     SVD, p = min(m,n), s descending,
 *                                                       a = u diag(s) vt; mode 'A': u m x m,
 *                                                       vt n x n; 'S': u m x p, vt p x n;
 *                                                       'N': singular values only (u, vt
 *                                                       unspecified); a' unspecified
 * Eigen- and singular vectors are unique only up to sign (and within repeated values), so
 * two implementations may return different ones; callers compare invariants.
 * info follows LAPACK: 0, or the 1-based index of the failing pivot/column. */
#ifndef KILN_HLO_LAPACK_CALL_H
#define KILN_HLO_LAPACK_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "hlo/ir.h"

typedef enum hlo_lapack_routine {
  HLO_LAPACK_POTRF,
  HLO_LAPACK_GETRF,
  HLO_LAPACK_TRSM,
  HLO_LAPACK_GEQRF,
  HLO_LAPACK_ORGQR,
  HLO_LAPACK_SYEVD,
  HLO_LAPACK_GESDD,
} hlo_lapack_routine;

typedef struct hlo_lapack_call {
  hlo_lapack_routine routine;
  hlo_type type;     /* HLO_F32 or HLO_F64 */
  int64_t batch;     /* product of the batch dimensions */
  int64_t m, n;      /* rows and columns of the (first) matrix operand; trsm: of b */
  int64_t k;         /* orgqr: reflectors (tau's last dim); trsm: a's order */
  bool lower;        /* potrf, trsm: uplo = 'L' */
  bool left;         /* trsm: side = 'L' (op(a) x = b), else x op(a) = b */
  bool transpose;    /* trsm: trans_x 'T' or 'C' (real types: the same) */
  bool unit_diagonal;/* trsm: diag = 'U' */
  bool vectors;      /* syevd: mode 'V'; gesdd: mode 'A' or 'S' */
  bool full;         /* gesdd: mode 'A' (u m x m, vt n x n) */
} hlo_lapack_call;

/* Whether INS is a custom-call whose target names a lapack_*_ffi routine at all (known or
 * not): such a call fails with hlo_lapack_call_read's error rather than a generic one. */
bool hlo_is_lapack_call(const hlo_instr *ins);

/* Decodes INS; an error names the instruction and what is unsupported (complex types,
 * routines outside the list above, shapes that do not match the routine). */
kiln_status hlo_lapack_call_read(const hlo_instr *ins, hlo_lapack_call *out);

#endif
