/* ONNX linear-algebra ops: Det.
 *
 * Det of [*, M, M] is lowered to HLO as Gaussian elimination with partial pivoting,
 * unrolled over the static M (one step per column, each working on the shrinking
 * trailing submatrix of every batch element at once). Step k picks the row of largest
 * |entry| in the first column (arg-max, first index on ties), swaps it with the first
 * row by selects over a row iota (no data-dependent indexing), multiplies the
 * running determinant by the pivot and by -1 when a swap happened, and eliminates the
 * column. A zero pivot means the whole column is zero: the determinant becomes 0 and
 * the pivot is replaced by 1 for the division so no NaN can appear later. f16/bf16
 * compute in f32 and round once at the end. Unrolling is bounded (M <= 64); larger
 * matrices are refused with an error rather than emitting a huge computation. */
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

#define DET_MAX_UNROLL 64

/* x[..., row, :] (row >= 0) or x[..., :, col] (col >= 0) of a [B..., m, m] value, as
 * [B..., m]. */
static kiln_status take_line(op_lower_ctx *ctx, hlo_instr *x, int64_t row, int64_t col, hlo_instr **out) {
  int r = x->shape.rank;
  int64_t start[HLO_MAX_RANK] = {0}, limit[HLO_MAX_RANK], dims[HLO_MAX_RANK];
  memcpy(limit, x->shape.dims, (size_t)r * sizeof *limit);
  if (row >= 0) {
    start[r - 2] = row;
    limit[r - 2] = row + 1;
  } else {
    start[r - 1] = col;
    limit[r - 1] = col + 1;
  }
  hlo_instr *s;
  L(hlo_build_slice(ctx->comp, x, start, limit, NULL, &s));
  memcpy(dims, x->shape.dims, (size_t)(r - 2) * sizeof *dims);
  dims[r - 2] = x->shape.dims[row >= 0 ? r - 1 : r - 2];
  L(oplib_reshape(ctx->comp, s, r - 1, dims, out));
  return NULL;
}

static kiln_status lower_det(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  hlo_type t = x->shape.type;
  if (!hlo_type_is_float(t))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a floating-point tensor, got %s",
                    hlo_type_name(t));
  if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have shape [*, M, M] (square matrices)");
  int64_t M = x->shape.dims[r - 1];
  if (M > DET_MAX_UNROLL)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "Det of %lldx%lld matrices: kiln supports M <= %d", (long long)M,
                    (long long)M, DET_MAX_UNROLL);
  int nb = r - 2;
  const int64_t *bdims = x->shape.dims;
  hlo_type ct = (t == HLO_F16 || t == HLO_BF16) ? HLO_F32 : t;

  hlo_instr *det;
  L(oplib_full(c, ct, 1, nb, bdims, &det));
  hlo_instr *s;
  L(oplib_convert(c, x, ct, &s));
  for (int64_t m = M; m >= 1; m--) {
    /* s: [B..., m, m] */
    if (m == 1) {
      hlo_instr *last;
      L(oplib_reshape(c, s, nb, bdims, &last));
      L(hlo_build_binary(c, HLO_OP_MULTIPLY, det, last, &det));
      break;
    }
    hlo_instr *col0, *abs_col, *p, *row0;
    TRY(take_line(ctx, s, -1, 0, &col0)); /* [B..., m] */
    L(hlo_build_unary(c, HLO_OP_ABS, col0, &abs_col));
    L(oplib_argminmax(c, abs_col, nb, true, false, false, HLO_S64, &p)); /* [B...] */
    TRY(take_line(ctx, s, 0, -1, &row0));                                 /* [B..., m] */

    /* is_p[b, i, j] = (i == p[b]) over s's shape; pivot_row = s[b, p[b], :]. */
    int64_t bd_rows[HLO_MAX_RANK];
    for (int i = 0; i < nb; i++) bd_rows[i] = i;
    hlo_instr *p_b, *row_iota, *is_p, *zeros, *sel, *pivot_row;
    L(hlo_build_broadcast(c, p, r, s->shape.dims, bd_rows, &p_b));
    hlo_shape is = shape_make(HLO_S64, r, s->shape.dims);
    L(hlo_build_iota(c, &is, r - 2, &row_iota));
    L(hlo_build_compare(c, HLO_DIR_EQ, row_iota, p_b, &is_p));
    L(oplib_full_like(c, s, HLO_TYPE_COUNT, 0, &zeros));
    L(hlo_build_select(c, is_p, s, zeros, &sel));
    int64_t row_axis = r - 2;
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, sel, 1, &row_axis, false, &pivot_row)); /* [B..., m] */

    /* det *= pivot * (p != 0 ? -1 : 1) */
    hlo_instr *pivot, *zero_i, *swapped, *neg_pivot, *signed_pivot;
    {
      int64_t start[HLO_MAX_RANK] = {0}, limit[HLO_MAX_RANK];
      memcpy(limit, pivot_row->shape.dims, (size_t)(r - 1) * sizeof *limit);
      limit[r - 2] = 1;
      hlo_instr *pv;
      L(hlo_build_slice(c, pivot_row, start, limit, NULL, &pv));
      L(oplib_reshape(c, pv, nb, bdims, &pivot));
    }
    L(oplib_full_like(c, p, HLO_TYPE_COUNT, 0, &zero_i));
    L(hlo_build_compare(c, HLO_DIR_NE, p, zero_i, &swapped));
    L(hlo_build_unary(c, HLO_OP_NEGATE, pivot, &neg_pivot));
    L(hlo_build_select(c, swapped, neg_pivot, pivot, &signed_pivot));
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, det, signed_pivot, &det));

    /* Rows 1..m-1 after the swap: row p (if p != 0) takes the old row 0. */
    hlo_instr *row0_b, *rows, *rest;
    int64_t bd_line[HLO_MAX_RANK];
    for (int i = 0; i < nb; i++) bd_line[i] = i;
    bd_line[nb] = r - 1;
    L(hlo_build_broadcast(c, row0, r, s->shape.dims, bd_line, &row0_b));
    L(hlo_build_select(c, is_p, row0_b, s, &rows));
    L(oplib_slice_axis(c, rows, r - 2, 1, m, &rest)); /* [B..., m-1, m] */

    /* factors = rest[..., :, 0] / pivot (pivot 0 -> 1: the column is all zero). */
    hlo_instr *pz, *is_zero, *one, *safe_pivot, *fcol, *safe_b, *factors;
    L(oplib_full_like(c, pivot, HLO_TYPE_COUNT, 0, &pz));
    L(hlo_build_compare(c, HLO_DIR_EQ, pivot, pz, &is_zero));
    L(oplib_full_like(c, pivot, HLO_TYPE_COUNT, 1, &one));
    L(hlo_build_select(c, is_zero, one, pivot, &safe_pivot));
    TRY(take_line(ctx, rest, -1, 0, &fcol)); /* [B..., m-1] */
    L(hlo_build_broadcast(c, safe_pivot, r - 1, fcol->shape.dims, bd_rows, &safe_b));
    L(hlo_build_binary(c, HLO_OP_DIVIDE, fcol, safe_b, &factors));

    /* next = rest[..., :, 1:] - factors[..., :, None] * pivot_row[..., None, 1:] */
    hlo_instr *rest_tail, *prow_tail, *f_b, *pr_b, *prod, *next;
    L(oplib_slice_axis(c, rest, r - 1, 1, m, &rest_tail)); /* [B..., m-1, m-1] */
    L(oplib_slice_axis(c, pivot_row, r - 2, 1, m, &prow_tail)); /* [B..., m-1] */
    int64_t bd_col[HLO_MAX_RANK];
    for (int i = 0; i < nb; i++) bd_col[i] = i;
    bd_col[nb] = r - 2;
    L(hlo_build_broadcast(c, factors, r, rest_tail->shape.dims, bd_col, &f_b));
    L(hlo_build_broadcast(c, prow_tail, r, rest_tail->shape.dims, bd_line, &pr_b));
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, f_b, pr_b, &prod));
    L(hlo_build_binary(c, HLO_OP_SUBTRACT, rest_tail, prod, &next));
    s = next;
  }
  L(oplib_convert(c, det, t, &det));
  if (ctx->n_outputs > 0) ctx->outputs[0] = det;
  return NULL;
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_linalg_defs[] = {
    {"onnx.Det", 0, 0, lower_det, NULL},
};

const op_table onnx_linalg_ops = {"onnx.linalg", (int)(sizeof onnx_linalg_defs / sizeof onnx_linalg_defs[0]),
                                  onnx_linalg_defs};
