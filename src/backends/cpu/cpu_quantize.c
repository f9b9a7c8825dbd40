/* Quantized dots and convolutions for the cpu backend (see cpu_quantize.h).
 *
 * ONNX's QDQ format (what onnxruntime.quantization writes) keeps every Conv, MatMul and
 * Gemm in f32 and puts DequantizeLinear in front of its operands: the importer lowers
 * that to convolution(dq(x), dq(w)) with dq(q) = convert_f32(convert_s32(q) - zp) *
 * scale. Run as written, every operand is widened to f32 and the product runs in f32,
 * which is slower than the fp32 model. This pass recognises the pattern and moves the
 * product into the integers, where it is exact:
 *
 *   conv(s_x (x - z_x), s_w w) = s_x s_w[c] * conv_s32(x - z_x, w)
 *
 * for an activation x (u8 or s8, one scale s_x and zero point z_x) and weights w (s8,
 * zero points all 0, one scale or one per output channel c). The rewrite emits
 * multiply(convert_f32(conv_s32(convert_s32(x) - z_x, convert_s32(w))), S) with S the
 * per-channel products s_x s_w[c] computed here in f32; dots likewise, with the per-
 * channel axis a free dimension of the weights. The result is plain HLO that the
 * evaluator runs too. A following add of an int32 bias dequantized with the same scales
 * (how ONNX Runtime's quantizer writes Conv/Gemm biases) joins the accumulator. The
 * fusion pass then groups the widening converts, the integer
 * product and its f32 epilogue into one kOutput fusion, which cpu_dnnl runs as a oneDNN
 * int8 (u8/s8 x s8 -> s32) primitive with the activation zero point as oneDNN's source
 * zero point and the epilogue (scale, bias, activation and the next QuantizeLinear's
 * divide/round/clamp/convert) as post-ops writing u8 directly.
 *
 * Exactness: the integer sum is exact where the f32 one rounded, so results differ from
 * the written graph by the f32 rounding of the original product (relative ~1e-7 per
 * term) and of S (one rounding instead of two); a value then requantized can land one
 * quantization step away when it sat within that rounding of a half-step boundary. The
 * pattern is left alone (run as written) when the weights have a nonzero zero point, the
 * activation has per-channel parameters, the operands are not 8-bit, or the
 * convolution is transposed (lhs dilation): those keep their f32 semantics exactly. The
 * pass must run before constant folding, which would fold dq(w) into f32 weights. */
#include "backends/cpu/cpu_quantize.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/literal.h"
#include "hlo/passes/pass_util.h"

#define MAX_CHANNELS (1 << 20)

/* A matched dequantization: q (8-bit integers) -> f32 with a scale and zero point that
 * are one value or one per index of dimension `axis` of q. */
typedef struct dq {
  hlo_instr *q;
  int axis; /* -1: per tensor */
  int64_t n; /* values in scale (and zp): 1 or q's size along axis */
  const hlo_literal *scale;
  const hlo_literal *zp; /* NULL: zero */
} dq;

static bool is_8bit(hlo_type t) { return t == HLO_U8 || t == HLO_S8; }

/* The literal behind a constant, seen through converts (the importer converts zero
 * points and scales to the arithmetic's type). */
static const hlo_literal *constant_of(const hlo_instr *x) {
  while (x->op == HLO_OP_CONVERT && x->n_operands == 1) x = x->operands[0];
  return x->op == HLO_OP_CONSTANT && x->literal && x->literal->data ? x->literal : NULL;
}

/* A per-tensor or per-axis parameter: a scalar constant, or broadcast(c) with c a
 * scalar or a rank-1 constant along one result dimension. Sets *axis (-1 for one value)
 * and returns the literal. */
static const hlo_literal *param_of(const hlo_instr *x, int *axis) {
  *axis = -1;
  if (x->op != HLO_OP_BROADCAST) {
    const hlo_literal *l = constant_of(x);
    return l && l->n == 1 ? l : NULL;
  }
  if (x->n_operands != 1) return NULL;
  const hlo_instr *src = x->operands[0];
  const hlo_literal *l = constant_of(src);
  if (!l) return NULL;
  if (l->n == 1) return l;
  if (src->shape.rank != 1 || x->dimensions.n != 1) return NULL;
  *axis = (int)x->dimensions.v[0];
  return l;
}

/* Matches dq(q) = multiply(convert_f32(y), scale) with y = subtract(convert_int(q), zp),
 * convert_int(q) or q itself; q 8-bit, or also int32 with WIDE (a bias). */
static bool match_dq_of(const hlo_instr *m, bool wide, dq *out) {
  memset(out, 0, sizeof *out);
  if (m->op != HLO_OP_MULTIPLY || m->n_operands != 2 || m->shape.type != HLO_F32) return false;
  for (int side = 0; side < 2; side++) {
    int s_axis;
    const hlo_literal *scale = param_of(m->operands[1 - side], &s_axis);
    const hlo_instr *v = m->operands[side];
    if (!scale || !hlo_type_is_float(scale->shape.type) || v->op != HLO_OP_CONVERT) continue;
    const hlo_instr *y = v->operands[0];
    const hlo_literal *zp = NULL;
    int z_axis = -1;
    if (y->op == HLO_OP_SUBTRACT) {
      zp = param_of(y->operands[1], &z_axis);
      if (!zp || !hlo_type_is_int(zp->shape.type)) continue;
      y = y->operands[0];
    }
    if (y->op == HLO_OP_CONVERT && hlo_type_is_int(y->shape.type) && hlo_type_size(y->shape.type) >= 2)
      y = y->operands[0];
    if (!is_8bit(y->shape.type) && !(wide && y->shape.type == HLO_S32)) continue;
    if (zp && zp->n > 1 && z_axis != s_axis) continue;
    out->q = (hlo_instr *)y;
    out->axis = scale->n > 1 ? s_axis : zp && zp->n > 1 ? z_axis : -1;
    out->n = scale->n > 1 ? scale->n : zp ? zp->n : 1;
    if ((scale->n > 1 && scale->n != out->n) || (zp && zp->n > 1 && zp->n != out->n)) continue;
    if (out->axis >= 0 && (out->axis >= y->shape.rank || y->shape.dims[out->axis] != out->n)) continue;
    out->scale = scale;
    out->zp = zp;
    return true;
  }
  return false;
}

static bool match_dq(const hlo_instr *m, dq *out) { return match_dq_of(m, false, out); }

static double value_at(const hlo_literal *l, int64_t i) { return literal_get_f64(l, l->n == 1 ? 0 : i); }

static bool zero_points_all_zero(const dq *d) {
  for (int64_t i = 0; d->zp && i < d->zp->n; i++)
    if (literal_get_s64(d->zp, i) != 0) return false;
  return true;
}

/* convert_s32(q) - zp for a per-tensor zero point (none when it is 0). */
static kiln_status widen(hlo_computation *c, const dq *d, hlo_instr **out) {
  TRY(hlo_build_convert(c, d->q, HLO_S32, out));
  int64_t z = d->zp ? literal_get_s64(d->zp, 0) : 0;
  if (z == 0) return NULL;
  hlo_instr *zc, *zb;
  TRY(hlo_build_constant_scalar(c, HLO_S32, (double)z, &zc));
  TRY(hlo_build_broadcast(c, zc, (*out)->shape.rank, (*out)->shape.dims, NULL, &zb));
  return hlo_build_binary(c, HLO_OP_SUBTRACT, *out, zb, out);
}

/* multiply(convert_f32(acc), broadcast(S)) with S[c] = s_x * s_w[c] along result
 * dimension `out_axis` (-1: one value). */
static kiln_status rescale(hlo_computation *c, hlo_instr *acc, const dq *x, const dq *w, int out_axis,
                           hlo_instr **out) {
  hlo_instr *f, *sc, *sb;
  TRY(hlo_build_convert(c, acc, HLO_F32, &f));
  int64_t n = out_axis >= 0 ? w->n : 1;
  hlo_shape s = {.type = HLO_F32, .rank = out_axis >= 0 ? 1 : 0, .dims = {n}};
  hlo_literal *lit;
  TRY(literal_create(&s, &lit));
  float sx = (float)value_at(x->scale, 0);
  for (int64_t i = 0; i < n; i++) ((float *)lit->data)[i] = sx * (float)value_at(w->scale, i);
  TRY(hlo_build_constant(c, lit, &sc));
  int64_t dim = out_axis;
  TRY(hlo_build_broadcast(c, sc, f->shape.rank, f->shape.dims, out_axis >= 0 ? &dim : NULL, &sb));
  return hlo_build_binary(c, HLO_OP_MULTIPLY, f, sb, out);
}

/* The operands when they qualify: activation per tensor, weights s8 with zero points 0
 * and the per-channel axis (if any) at W_AXIS of the weights. */
static bool operands_qualify(const hlo_instr *ins, dq *x, dq *w, int64_t w_axis) {
  if (!match_dq(ins->operands[0], x) || !match_dq(ins->operands[1], w)) return false;
  if (x->axis >= 0 || x->n != 1) return false;
  if (w->q->shape.type != HLO_S8 || !zero_points_all_zero(w)) return false;
  if (w->axis >= 0 && w->axis != w_axis) return false;
  return w->n >= 1 && w->n <= MAX_CHANNELS;
}

static kiln_status rewrite_convolution(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  if (ins->batch_group_count != 1 || !ins->has_conv_dnums) return NULL;
  for (int k = 0; k < ins->window.rank; k++)
    if (ins->window.dims[k].lhs_dilate > 1 || ins->window.dims[k].reversal) return NULL;
  dq x, w;
  if (!operands_qualify(ins, &x, &w, ins->conv.kernel_output_feature)) return NULL;
  hlo_instr *xi, *wi, *acc;
  TRY(widen(c, &x, &xi));
  TRY(widen(c, &w, &wi));
  TRY(hlo_build_convolution(c, xi, wi, &ins->window, &ins->conv, ins->feature_group_count, 1, HLO_S32, &acc));
  return rescale(c, acc, &x, &w, w.axis >= 0 ? (int)ins->conv.output_feature : -1, out);
}

static bool listed(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

static kiln_status rewrite_dot(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  const hlo_dot_dnums *dn = &ins->dot;
  dq x, w;
  if (!match_dq(ins->operands[1], &w)) return NULL;
  /* The per-channel axis must be a free dim of the weights; its result dim follows the
   * batch dims and the lhs free dims, in order. */
  int64_t out_axis = -1;
  if (w.axis >= 0) {
    if (listed(&dn->rhs_batch, w.axis) || listed(&dn->rhs_contracting, w.axis)) return NULL;
    int64_t lfree = ins->operands[0]->shape.rank - dn->lhs_batch.n - dn->lhs_contracting.n, before = 0;
    for (int d = 0; d < w.axis; d++) before += !listed(&dn->rhs_batch, d) && !listed(&dn->rhs_contracting, d);
    out_axis = dn->lhs_batch.n + lfree + before;
  }
  if (!operands_qualify(ins, &x, &w, w.axis)) return NULL;
  hlo_instr *xi, *wi, *acc;
  TRY(widen(c, &x, &xi));
  TRY(widen(c, &w, &wi));
  TRY(hlo_build_dot(c, xi, wi, dn, HLO_S32, &acc));
  return rescale(c, acc, &x, &w, (int)out_axis, out);
}

/* add(multiply(convert_f32(acc), broadcast(S)), broadcast(dq(b))) with acc an integer
 * product made above and dq(b) an int32 bias whose scale is S itself (ONNX Runtime's
 * quantizer writes the bias in the accumulator's scale, s_x * s_w[c]): the bias joins
 * the accumulator, multiply(convert_f32(acc + b), broadcast(S)), which oneDNN's int8
 * primitives take as their s32 bias. (acc + b) * S rounds once where acc * S + b * S
 * rounded three times. */
static kiln_status fold_bias(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  for (int side = 0; side < 2; side++) {
    hlo_instr *m = ins->operands[side], *bb = ins->operands[1 - side];
    if (m->op != HLO_OP_MULTIPLY || m->operands[0]->op != HLO_OP_CONVERT || bb->op != HLO_OP_BROADCAST) continue;
    hlo_instr *acc = m->operands[0]->operands[0], *sb = m->operands[1];
    if (acc->shape.type != HLO_S32 || (acc->op != HLO_OP_CONVOLUTION && acc->op != HLO_OP_DOT)) continue;
    if (sb->op != HLO_OP_BROADCAST || sb->operands[0]->op != HLO_OP_CONSTANT || !sb->operands[0]->literal) continue;
    const hlo_literal *S = sb->operands[0]->literal;
    dq b;
    if (bb->n_operands != 1 || !match_dq_of(bb->operands[0], true, &b) || b.q->shape.type != HLO_S32 ||
        b.q->op != HLO_OP_CONSTANT || !zero_points_all_zero(&b) || b.q->shape.rank > 1)
      continue;
    /* The bias must lie along the channel S scales, with S's values. */
    if (b.q->shape.rank == 1 && (bb->dimensions.n != 1 || S->n == 1 || sb->dimensions.n != 1 ||
                                 bb->dimensions.v[0] != sb->dimensions.v[0] || b.q->shape.dims[0] != S->n))
      continue;
    bool same = b.scale->n == S->n || b.scale->n == 1;
    for (int64_t i = 0; same && i < S->n; i++) same = (float)value_at(b.scale, i) == ((const float *)S->data)[i];
    if (!same || S->shape.type != HLO_F32) continue;
    hlo_instr *bi, *sum, *f;
    TRY(hlo_build_broadcast(c, b.q, acc->shape.rank, acc->shape.dims, bb->dimensions.n ? bb->dimensions.v : NULL,
                            &bi));
    TRY(hlo_build_binary(c, HLO_OP_ADD, acc, bi, &sum));
    TRY(hlo_build_convert(c, sum, HLO_F32, &f));
    return hlo_build_binary(c, HLO_OP_MULTIPLY, f, sb, out);
  }
  return NULL;
}

static kiln_status rewrite(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  *out = NULL;
  if (ins->shape.type != HLO_F32 || ins->n_operands != 2) return NULL;
  if (ins->op == HLO_OP_ADD) return fold_bias(c, ins, out);
  if (ins->op == HLO_OP_CONVOLUTION) return rewrite_convolution(c, ins, out);
  if (ins->op == HLO_OP_DOT) return rewrite_dot(c, ins, out);
  return NULL;
}

kiln_status cpu_pass_quantized_products(hlo_module *m, bool *changed) {
  return hlo_pass_rewrite_each(m, rewrite, changed);
}
