/* ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare.
 *
 * All share one lowering: axes come from the attribute (older opsets) or from the
 * constant second input (ReduceSum from opset 13, the others from 18), keepdims keeps
 * reduced axes as 1, and an empty axes list means "all axes" unless
 * noop_with_empty_axes says "identity". The per-op part is a pre-map, the reducer and a
 * post-map (|x|, x^2, exp, sqrt, log). LogSumExp shifts by the max for stability, as
 * ONNX Runtime does. */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

static kiln_status lower_reduce(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  const char *op = graph_node_op_base(ctx->node) + strlen("Reduce");
  int r = x->shape.rank, n;
  int64_t axes[HLO_MAX_RANK];
  bool present;
  TRY(onnx_ints_attr_or_input(ctx, "axes", 1, axes, HLO_MAX_RANK, &n, &present));
  bool keepdims = graph_node_attr_int_or(ctx->node, "keepdims", 1) != 0;
  bool noop = graph_node_attr_int_or(ctx->node, "noop_with_empty_axes", 0) != 0;
  if (n == 0) {
    if (noop) {
      if (ctx->n_outputs > 0) ctx->outputs[0] = x;
      return NULL;
    }
    for (int i = 0; i < r; i++) axes[i] = i;
    n = r;
  }
  L(oplib_normalize_axes(n, axes, r, true));
  hlo_computation *c = ctx->comp;
  bool needs_float = strcmp(op, "L2") == 0 || strcmp(op, "LogSum") == 0 || strcmp(op, "LogSumExp") == 0;
  if (needs_float && !hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "Reduce%s needs a floating-point input, got %s", op,
                    hlo_type_name(x->shape.type));
  if (strcmp(op, "Sum") == 0) {
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, x, n, axes, keepdims, &y));
  } else if (strcmp(op, "Mean") == 0) {
    L(oplib_reduce_mean(c, x, n, axes, keepdims, &y));
  } else if (strcmp(op, "Max") == 0) {
    L(oplib_reduce(c, OPLIB_REDUCE_MAX, x, n, axes, keepdims, &y));
  } else if (strcmp(op, "Min") == 0) {
    L(oplib_reduce(c, OPLIB_REDUCE_MIN, x, n, axes, keepdims, &y));
  } else if (strcmp(op, "Prod") == 0) {
    L(oplib_reduce(c, OPLIB_REDUCE_PROD, x, n, axes, keepdims, &y));
  } else if (strcmp(op, "L1") == 0) {
    hlo_instr *a = x;
    if (!hlo_type_is_unsigned_int(x->shape.type)) L(hlo_build_unary(c, HLO_OP_ABS, x, &a));
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, a, n, axes, keepdims, &y));
  } else if (strcmp(op, "L2") == 0 || strcmp(op, "SumSquare") == 0) {
    hlo_instr *sq;
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, x, x, &sq));
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, sq, n, axes, keepdims, &y));
    if (op[0] == 'L') L(hlo_build_unary(c, HLO_OP_SQRT, y, &y));
  } else if (strcmp(op, "LogSum") == 0) {
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, x, n, axes, keepdims, &y));
    L(hlo_build_unary(c, HLO_OP_LOG, y, &y));
  } else if (strcmp(op, "LogSumExp") == 0) {
    /* max + log(sum(exp(x - max))), with a finite shift when the max is infinite. */
    hlo_instr *mx, *fin, *zero, *mxb, *e, *s;
    L(oplib_reduce(c, OPLIB_REDUCE_MAX, x, n, axes, true, &mx));
    L(hlo_build_unary(c, HLO_OP_IS_FINITE, mx, &fin));
    L(oplib_full_like(c, mx, HLO_TYPE_COUNT, 0, &zero));
    L(hlo_build_select(c, fin, mx, zero, &mx));
    L(oplib_broadcast_to(c, mx, r, x->shape.dims, &mxb));
    L(hlo_build_binary(c, HLO_OP_SUBTRACT, x, mxb, &e));
    L(hlo_build_unary(c, HLO_OP_EXP, e, &e));
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, e, n, axes, true, &s));
    L(hlo_build_unary(c, HLO_OP_LOG, s, &s));
    L(hlo_build_binary(c, HLO_OP_ADD, s, mx, &y));
    if (!keepdims) {
      int64_t dims[HLO_MAX_RANK];
      int k = 0;
      for (int i = 0; i < r; i++) {
        bool reduced = false;
        for (int j = 0; j < n; j++) reduced |= axes[j] == i;
        if (!reduced) dims[k++] = x->shape.dims[i];
      }
      L(hlo_build_reshape(c, y, k, dims, &y));
    }
  } else {
    return op_error(ctx->node, KILN_INTERNAL, "unknown reduction %s", op);
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

#define REDUCE(n) {"onnx.Reduce" n, 0, 2, lower_reduce, NULL}

static const op_def onnx_reduce_defs[] = {
    REDUCE("Sum"), REDUCE("Mean"),   REDUCE("Max"),       REDUCE("Min"),      REDUCE("Prod"),
    REDUCE("L1"),  REDUCE("L2"),     REDUCE("LogSum"),    REDUCE("LogSumExp"), REDUCE("SumSquare"),
};

const op_table onnx_reduce_ops = {"onnx.reduce", (int)(sizeof onnx_reduce_defs / sizeof onnx_reduce_defs[0]),
                                  onnx_reduce_defs};
