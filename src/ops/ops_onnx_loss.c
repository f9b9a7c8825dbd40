/* ONNX loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (forward).
 *
 * Both share one lowering over log-probabilities logp [N, C, d1..dk] and integer labels
 * [N, d1..dk]. The label's class is picked without a gather: labels are broadcast
 * along the class axis and compared with an iota over C, and a sum over C of
 * select(match, logp, 0) yields logp[n, label, d...] (a label outside [0, C), such as
 * an ignore_index of -1, simply picks nothing, so no index can go out of bounds). The
 * per-sample weight W is picked the same way from the optional per-class `weight`
 * input (all ones without it) and is zeroed where the label equals ignore_index (only
 * when that attribute is present). The loss is -logp_picked * W; reduction "none"
 * keeps it ([N, d1..dk]), "sum" sums it, and "mean" divides the sum by sum(W) — the
 * count of non-ignored samples when there are no weights — as the spec says (a mean
 * over nothing is 0/0 = NaN, as in the reference). SoftmaxCrossEntropyLoss first takes
 * a numerically stable log-softmax of the scores over axis 1 and also returns it as
 * its optional second output, log_prob. Sums of f16/bf16 accumulate in f32
 * (oplib_reduce). */
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* Reduction attribute, checked. */
typedef enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

static kiln_status parse_reduction(op_lower_ctx *ctx, loss_reduction *out) {
  const char *s = onnx_attr_string(ctx->node, "reduction", "mean");
  if (strcmp(s, "none") == 0)
    *out = LOSS_NONE;
  else if (strcmp(s, "sum") == 0)
    *out = LOSS_SUM;
  else if (strcmp(s, "mean") == 0)
    *out = LOSS_MEAN;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "reduction must be \"none\", \"sum\" or \"mean\", got \"%s\"",
                    s);
  return NULL;
}

/* The loss from log-probabilities logp [N, C, d...], labels [N, d...] at ONNX input
 * position 1 and the optional per-class weight at position 2. */
static kiln_status nll_from_log_prob(op_lower_ctx *ctx, hlo_instr *logp, hlo_instr **loss_out) {
  hlo_computation *c = ctx->comp;
  hlo_instr *labels;
  TRY(onnx_require_input(ctx, 1, &labels));
  hlo_instr *weight = onnx_input(ctx, 2);
  loss_reduction red = LOSS_MEAN;
  TRY(parse_reduction(ctx, &red));

  hlo_type t = logp->shape.type;
  if (!hlo_type_is_float(t))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a floating-point tensor, got %s",
                    hlo_type_name(t));
  if (!hlo_type_is_int(labels->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "target/labels must be an integer tensor, got %s",
                    hlo_type_name(labels->shape.type));
  int r = logp->shape.rank;
  const int64_t *xd = logp->shape.dims;
  if (r < 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have shape [N, C, d1..dk] (rank >= 2), got rank %d",
                    r);
  /* labels: x's dims without the class axis. */
  int64_t bdims[HLO_MAX_RANK], ldims[HLO_MAX_RANK];
  bool ok = labels->shape.rank == r - 1;
  for (int i = 0, j = 0; i < r; i++) {
    if (i == 1) continue;
    bdims[j] = i;
    ldims[j] = xd[i];
    if (ok && labels->shape.dims[j] != xd[i]) ok = false;
    j++;
  }
  if (!ok)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "target/labels must have the input's shape without its class axis (rank %d, dim 1 = C = %lld "
                    "removed), got rank %d",
                    r, (long long)xd[1], labels->shape.rank);
  int64_t C = xd[1];
  if (weight) {
    if (weight->shape.rank != 1 || weight->shape.dims[0] != C)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "weight must be a 1-D tensor of C = %lld entries", (long long)C);
    if (weight->shape.type != t)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "weight type %s differs from input type %s",
                      hlo_type_name(weight->shape.type), hlo_type_name(t));
  }

  /* match[n, c, d...] = (labels[n, d...] == c) */
  hlo_instr *lab, *lab_b, *iota, *match, *zeros, *picked_all, *picked;
  L(oplib_convert(c, labels, HLO_S64, &lab));
  L(hlo_build_broadcast(c, lab, r, xd, bdims, &lab_b));
  hlo_shape is = shape_make(HLO_S64, r, xd);
  L(hlo_build_iota(c, &is, 1, &iota));
  L(hlo_build_compare(c, HLO_DIR_EQ, lab_b, iota, &match));
  L(oplib_full_like(c, logp, HLO_TYPE_COUNT, 0, &zeros));
  L(hlo_build_select(c, match, logp, zeros, &picked_all));
  int64_t class_axis = 1;
  L(oplib_reduce(c, OPLIB_REDUCE_SUM, picked_all, 1, &class_axis, false, &picked));

  /* valid[n, d...]: label != ignore_index (all true without the attribute). */
  hlo_instr *valid = NULL;
  if (graph_node_attr(ctx->node, "ignore_index")) {
    int64_t ii = graph_node_attr_int_or(ctx->node, "ignore_index", 0);
    hlo_instr *ii_c;
    L(oplib_full_like(c, lab, HLO_TYPE_COUNT, (double)ii, &ii_c));
    L(hlo_build_compare(c, HLO_DIR_NE, lab, ii_c, &valid));
  }

  /* w[n, d...]: weight[label] (1 without weights), 0 where ignored. */
  hlo_instr *w;
  if (weight) {
    hlo_instr *wb, *w_all;
    int64_t one = 1;
    L(hlo_build_broadcast(c, weight, r, xd, &one, &wb));
    L(hlo_build_select(c, match, wb, zeros, &w_all));
    L(oplib_reduce(c, OPLIB_REDUCE_SUM, w_all, 1, &class_axis, false, &w));
  } else {
    L(oplib_full(c, t, 1, r - 1, ldims, &w));
  }
  if (valid) {
    hlo_instr *wz;
    L(oplib_full_like(c, w, HLO_TYPE_COUNT, 0, &wz));
    L(hlo_build_select(c, valid, w, wz, &w));
  }

  hlo_instr *loss;
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, picked, w, &loss));
  L(hlo_build_unary(c, HLO_OP_NEGATE, loss, &loss));
  if (red == LOSS_NONE) {
    *loss_out = loss;
    return NULL;
  }
  int64_t all[HLO_MAX_RANK];
  for (int i = 0; i < r - 1; i++) all[i] = i;
  hlo_instr *sum;
  L(oplib_reduce(c, OPLIB_REDUCE_SUM, loss, r - 1, all, false, &sum));
  if (red == LOSS_SUM) {
    *loss_out = sum;
    return NULL;
  }
  hlo_instr *wsum;
  L(oplib_reduce(c, OPLIB_REDUCE_SUM, w, r - 1, all, false, &wsum));
  L(hlo_build_binary(c, HLO_OP_DIVIDE, sum, wsum, loss_out));
  return NULL;
}

/* -------------------------------------------------- NegativeLogLikelihoodLoss ---- */

static kiln_status lower_nll_loss(op_lower_ctx *ctx) {
  hlo_instr *x, *loss;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(nll_from_log_prob(ctx, x, &loss));
  if (ctx->n_outputs > 0) ctx->outputs[0] = loss;
  return NULL;
}

/* --------------------------------------------------- SoftmaxCrossEntropyLoss ---- */

static kiln_status lower_sce_loss(op_lower_ctx *ctx) {
  hlo_instr *x, *logp, *loss;
  TRY(onnx_require_input(ctx, 0, &x));
  if (x->shape.rank < 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scores must have shape [N, C, D1..Dk] (rank >= 2), got rank %d",
                    x->shape.rank);
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scores must be a floating-point tensor, got %s",
                    hlo_type_name(x->shape.type));
  L(oplib_softmax(ctx->comp, x, 1, true, &logp));
  TRY(nll_from_log_prob(ctx, logp, &loss));
  if (ctx->n_outputs > 0) ctx->outputs[0] = loss;
  if (ctx->n_outputs > 1) ctx->outputs[1] = logp;
  return NULL;
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_loss_defs[] = {
    {"onnx.NegativeLogLikelihoodLoss", 0, 0, lower_nll_loss, NULL},
    {"onnx.SoftmaxCrossEntropyLoss", 0, 0, lower_sce_loss, NULL},
};

const op_table onnx_loss_ops = {"onnx.loss", (int)(sizeof onnx_loss_defs / sizeof onnx_loss_defs[0]), onnx_loss_defs};
