/* ONNX transformer-block ops: Attention (opsets 23, 24, 25), RMSNormalization (23),
 * RotaryEmbedding (23), Swish (24) and SwiGLU (28), each lowered to plain HLO with static
 * shapes. Attention brings Q/K/V to 4-D (batch, heads, seq, head_size) (3-D inputs are
 * split into heads and the result merged back), concatenates the past key/value cache
 * (the concatenation is the present output), repeats KV heads for grouped-query
 * attention with a broadcast (KV head h serves query heads h*r .. h*r+r-1), and forms one
 * additive bias from the attention mask plus one boolean "allowed" set built from iotas
 * (bottom-right causal frontier, nonpad_kv_seqlen padding, opset 25's sliding window).
 * Softmax is written out so that a row with no allowed key gives zeros rather than NaN.
 * float16/bfloat16 compute in float32 (softmax in softmax_precision when given) and
 * convert back; RMSNormalization honours stash_type; RotaryEmbedding gathers its cos/sin
 * caches by position_ids with an HLO gather. */
#include <math.h>
#include <string.h>

#include "hlo/shape.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* ============================================================= Attention ====== */

/* (B, S, H*D) -> (B, H, S, D); a 4-D input passes through. */
static kiln_status to_heads(op_lower_ctx *ctx, hlo_instr *x, const char *what, const char *heads_attr,
                            hlo_instr **out) {
  if (x->shape.rank == 4) {
    *out = x;
    return NULL;
  }
  if (x->shape.rank != 3)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be 3-D or 4-D, got rank %d", what, x->shape.rank);
  int64_t nh = graph_node_attr_int_or(ctx->node, heads_attr, 0);
  const int64_t *d = x->shape.dims;
  if (nh <= 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s is 3-D, which needs a positive %s attribute", what,
                    heads_attr);
  if (d[2] % nh != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s hidden size %lld is not a multiple of %s=%lld", what,
                    (long long)d[2], heads_attr, (long long)nh);
  int64_t dims[4] = {d[0], d[1], nh, d[2] / nh};
  L(oplib_reshape(ctx->comp, x, 4, dims, &x));
  L(oplib_transpose(ctx->comp, x, (const int64_t[]){0, 2, 1, 3}, out));
  return NULL;
}

/* (B, kvh, T, D) -> (B, kvh*reps, T, D), each KV head repeated reps times in place. */
static kiln_status repeat_heads(op_lower_ctx *ctx, hlo_instr *x, int64_t reps, hlo_instr **out) {
  if (reps == 1) {
    *out = x;
    return NULL;
  }
  const int64_t *d = x->shape.dims;
  int64_t b5[5] = {d[0], d[1], reps, d[2], d[3]};
  int64_t r4[4] = {d[0], d[1] * reps, d[2], d[3]};
  L(hlo_build_broadcast(ctx->comp, x, 5, b5, (const int64_t[]){0, 1, 3, 4}, &x));
  L(oplib_reshape(ctx->comp, x, 4, r4, out));
  return NULL;
}

static kiln_status softmax_precision_type(op_lower_ctx *ctx, hlo_type dflt, hlo_type *out) {
  const graph_attr_value *a = graph_node_attr(ctx->node, "softmax_precision");
  *out = dflt;
  if (!a) return NULL;
  int64_t v = graph_node_attr_int_or(ctx->node, "softmax_precision", 0);
  switch (v) {
    case 1: *out = HLO_F32; break;
    case 10: *out = HLO_F16; break;
    case 11: *out = HLO_F64; break;
    case 16: *out = HLO_BF16; break;
    default:
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "softmax_precision %lld is not one of 1 (float), 10 (float16), 11 (double), 16 (bfloat16)",
                      (long long)v);
  }
  /* Never compute the softmax narrower than the scores already are. */
  if (hlo_type_size(*out) < hlo_type_size(dflt)) *out = dflt;
  return NULL;
}

/* The boolean "allowed" set of (B, Sq, T) from is_causal, nonpad_kv_seqlen and the
 * opset-25 window; NULL when nothing restricts it. */
static kiln_status allowed_keys(op_lower_ctx *ctx, int64_t B, int64_t Sq, int64_t T, int64_t past, hlo_instr *nonpad,
                                hlo_instr **out) {
  *out = NULL;
  bool causal = graph_node_attr_int_or(ctx->node, "is_causal", 0) != 0;
  int64_t left = -1, right = -1;
  if (ctx->opset >= 25) {
    left = graph_node_attr_int_or(ctx->node, "left_window_size", -1);
    right = graph_node_attr_int_or(ctx->node, "right_window_size", -1);
  }
  if (!causal && !nonpad && left < 0 && right < 0) return NULL;
  int64_t dims[3] = {B, Sq, T};
  hlo_shape s = shape_make(HLO_S64, 3, dims);
  hlo_instr *i, *j, *p, *allowed = NULL, *c;
  L(hlo_build_iota(ctx->comp, &s, 1, &i));
  L(hlo_build_iota(ctx->comp, &s, 2, &j));
  hlo_instr *nb = NULL; /* nonpad_kv_seqlen broadcast to (B, Sq, T) */
  if (nonpad) {
    if (nonpad->shape.rank != 1 || nonpad->shape.dims[0] != B)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "nonpad_kv_seqlen must have shape (%lld), got rank %d",
                      (long long)B, nonpad->shape.rank);
    hlo_instr *n64;
    L(oplib_convert(ctx->comp, nonpad, HLO_S64, &n64));
    L(hlo_build_broadcast(ctx->comp, n64, 3, dims, (const int64_t[]){0}, &nb));
  }
  /* Absolute position of query i: offset + i. */
  if (past > 0 || !nb) {
    L(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, i, (double)past, &p));
  } else {
    L(hlo_build_binary(ctx->comp, HLO_OP_ADD, i, nb, &p));
    L(oplib_binary_scalar(ctx->comp, HLO_OP_SUBTRACT, p, (double)Sq, &p));
  }
#define AND_IN(cond)                                                             \
  do {                                                                           \
    if (allowed) L(hlo_build_binary(ctx->comp, HLO_OP_AND, allowed, cond, &allowed)); \
    else allowed = cond;                                                         \
  } while (0)
  if (causal) {
    L(hlo_build_compare(ctx->comp, HLO_DIR_LE, j, p, &c));
    AND_IN(c);
  }
  if (nb) {
    L(hlo_build_compare(ctx->comp, HLO_DIR_LT, j, nb, &c));
    AND_IN(c);
  }
  if (left >= 0) {
    hlo_instr *lo;
    L(oplib_binary_scalar(ctx->comp, HLO_OP_SUBTRACT, p, (double)left, &lo));
    L(hlo_build_compare(ctx->comp, HLO_DIR_GE, j, lo, &c));
    AND_IN(c);
  }
  if (right >= 0) {
    hlo_instr *hi;
    L(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, p, (double)right, &hi));
    L(hlo_build_compare(ctx->comp, HLO_DIR_LE, j, hi, &c));
    AND_IN(c);
  }
#undef AND_IN
  *out = allowed;
  return NULL;
}

/* Softmax over the last axis of a rank-4 x in which a row whose every entry is -inf
 * gives zeros (not NaN). */
static kiln_status guarded_softmax(op_lower_ctx *ctx, hlo_instr *x, hlo_instr **out) {
  hlo_computation *c = ctx->comp;
  hlo_instr *m, *ninf, *dead, *zero, *msafe, *e, *s, *p;
  const int64_t *d = x->shape.dims;
  int64_t axes[1] = {3};
  L(oplib_reduce(c, OPLIB_REDUCE_MAX, x, 1, axes, false, &m));
  L(oplib_full_like(c, m, HLO_TYPE_COUNT, -INFINITY, &ninf));
  L(hlo_build_compare(c, HLO_DIR_EQ, m, ninf, &dead));
  L(oplib_full_like(c, m, HLO_TYPE_COUNT, 0.0, &zero));
  L(hlo_build_select(c, dead, zero, m, &msafe));
  L(hlo_build_broadcast(c, msafe, 4, d, (const int64_t[]){0, 1, 2}, &msafe));
  L(hlo_build_binary(c, HLO_OP_SUBTRACT, x, msafe, &e));
  L(hlo_build_unary(c, HLO_OP_EXP, e, &e));
  L(oplib_reduce(c, OPLIB_REDUCE_SUM, e, 1, axes, false, &s));
  L(oplib_convert(c, s, x->shape.type, &s));
  L(hlo_build_broadcast(c, s, 4, d, (const int64_t[]){0, 1, 2}, &s));
  L(hlo_build_binary(c, HLO_OP_DIVIDE, e, s, &p));
  L(hlo_build_broadcast(c, dead, 4, d, (const int64_t[]){0, 1, 2}, &dead));
  L(oplib_full_like(c, p, HLO_TYPE_COUNT, 0.0, &zero));
  L(hlo_build_select(c, dead, zero, p, out));
  return NULL;
}

static kiln_status lower_attention(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *q0, *k0, *v0, *q, *k, *v, *mask, *pk, *pv, *nonpad = NULL;
  TRY(onnx_require_input(ctx, 0, &q0));
  TRY(onnx_require_input(ctx, 1, &k0));
  TRY(onnx_require_input(ctx, 2, &v0));
  TRY(onnx_require_float(ctx, q0, "Q"));
  TRY(onnx_require_float(ctx, k0, "K"));
  TRY(onnx_require_float(ctx, v0, "V"));
  hlo_type t1 = q0->shape.type;
  if (k0->shape.type != t1 || v0->shape.type != t1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "Q, K and V must share one element type (%s, %s, %s)",
                    hlo_type_name(t1), hlo_type_name(k0->shape.type), hlo_type_name(v0->shape.type));
  TRY(to_heads(ctx, q0, "Q", "q_num_heads", &q));
  TRY(to_heads(ctx, k0, "K", "kv_num_heads", &k));
  TRY(to_heads(ctx, v0, "V", "kv_num_heads", &v));
  TRY(onnx_optional_value(ctx, 3, &mask));
  TRY(onnx_optional_value(ctx, 4, &pk));
  TRY(onnx_optional_value(ctx, 5, &pv));
  if (ctx->opset >= 24) TRY(onnx_optional_value(ctx, 6, &nonpad));
  if (!pk != !pv)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "past_key and past_value must be given together");
  const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
  int64_t B = qd[0], qh = qd[1], Sq = qd[2], hd = qd[3];
  int64_t kvh = kd[1], vhd = vd[3];
  if (kd[0] != B || vd[0] != B)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "Q, K and V batch sizes differ (%lld, %lld, %lld)",
                    (long long)B, (long long)kd[0], (long long)vd[0]);
  if (kd[3] != hd)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "K head size %lld differs from Q head size %lld",
                    (long long)kd[3], (long long)hd);
  if (vd[1] != kvh || vd[2] != kd[2])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "V has %lld heads and sequence length %lld, K has %lld and %lld", (long long)vd[1],
                    (long long)vd[2], (long long)kvh, (long long)kd[2]);
  if (kvh <= 0 || qh % kvh != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "q_num_heads %lld is not a multiple of kv_num_heads %lld",
                    (long long)qh, (long long)kvh);
  int64_t past = 0;
  if (pk) {
    if (pk->shape.rank != 4 || pv->shape.rank != 4)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "past_key and past_value must be 4-D");
    const int64_t *pkd = pk->shape.dims, *pvd = pv->shape.dims;
    if (pkd[0] != B || pkd[1] != kvh || pkd[3] != hd || pvd[0] != B || pvd[1] != kvh || pvd[3] != vhd ||
        pvd[2] != pkd[2])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "past_key/past_value shapes do not match (batch %lld, kv heads %lld, head sizes %lld/%lld)",
                      (long long)B, (long long)kvh, (long long)hd, (long long)vhd);
    past = pkd[2];
    L(oplib_convert(c, pk, t1, &pk));
    L(oplib_convert(c, pv, t1, &pv));
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){pk, k}, 2, &k));
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){pv, v}, 2, &v));
  }
  onnx_set_output(ctx, 1, k);
  onnx_set_output(ctx, 2, v);
  int64_t T = k->shape.dims[2];

  hlo_type ct = onnx_compute_type(t1);
  L(oplib_convert(c, q, ct, &q));
  L(oplib_convert(c, k, ct, &k));
  L(oplib_convert(c, v, ct, &v));
  double scale = graph_node_attr(ctx->node, "scale") ? graph_node_attr_float_or(ctx->node, "scale", 1.0f)
                                                      : 1.0 / sqrt((double)hd);
  double sq = sqrt(scale);
  if (!(sq == sq)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale %g is negative", scale);
  L(oplib_binary_scalar(c, HLO_OP_MULTIPLY, q, sq, &q));
  L(oplib_binary_scalar(c, HLO_OP_MULTIPLY, k, sq, &k));
  TRY(repeat_heads(ctx, k, qh / kvh, &k));
  TRY(repeat_heads(ctx, v, qh / kvh, &v));

  int64_t b2[2] = {0, 1}, c3[1] = {3}, c2[1] = {2};
  hlo_dot_dnums qk_dn = {.lhs_batch = {2, b2}, .rhs_batch = {2, b2}, .lhs_contracting = {1, c3},
                         .rhs_contracting = {1, c3}};
  hlo_instr *s, *qk_out = NULL;
  L(hlo_build_dot(c, q, k, &qk_dn, HLO_BUILD_DEFAULT_TYPE, &s)); /* (B, qh, Sq, T) */
  int64_t mode = graph_node_attr_int_or(ctx->node, "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "qk_matmul_output_mode %lld is not 0..3", (long long)mode);
  if (mode == 0) qk_out = s;
  double softcap = graph_node_attr_float_or(ctx->node, "softcap", 0.0f);
  if (softcap > 0) {
    L(oplib_binary_scalar(c, HLO_OP_DIVIDE, s, softcap, &s));
    L(hlo_build_unary(c, HLO_OP_TANH, s, &s));
    L(oplib_binary_scalar(c, HLO_OP_MULTIPLY, s, softcap, &s));
  }
  if (mode == 1) qk_out = s;

  int64_t sdims[4] = {B, qh, Sq, T};
  if (mask) {
    int mr = mask->shape.rank;
    if (mr < 1 || mr > 4)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attn_mask must have rank 1..4, got %d", mr);
    bool is_bool = mask->shape.type == HLO_PRED;
    if (!is_bool && !hlo_type_is_float(mask->shape.type))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attn_mask must be bool or floating-point, got %s",
                      hlo_type_name(mask->shape.type));
    if (!is_bool) L(oplib_convert(c, mask, ct, &mask));
    int64_t last = mask->shape.dims[mr - 1];
    if (last < T && last != 1) {
      if (ctx->opset < 24)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                        "attn_mask's last dimension %lld is shorter than the total sequence length %lld",
                        (long long)last, (long long)T);
      hlo_instr *padv;
      int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
      hi[mr - 1] = T - last;
      if (is_bool)
        L(oplib_scalar(c, HLO_PRED, 0, &padv));
      else
        L(oplib_scalar(c, ct, -INFINITY, &padv));
      L(oplib_pad(c, mask, padv, lo, hi, &mask));
    }
    hlo_instr *bias;
    if (is_bool) {
      hlo_instr *z, *ninf;
      L(oplib_full_like(c, mask, ct, 0.0, &z));
      L(oplib_full_like(c, mask, ct, -INFINITY, &ninf));
      L(hlo_build_select(c, mask, z, ninf, &bias));
    } else {
      bias = mask;
    }
    L(oplib_broadcast_to(c, bias, 4, sdims, &bias));
    L(hlo_build_binary(c, HLO_OP_ADD, s, bias, &s));
  }
  hlo_instr *allowed;
  TRY(allowed_keys(ctx, B, Sq, T, past, nonpad, &allowed));
  if (allowed) {
    hlo_instr *ninf, *sum;
    L(hlo_build_broadcast(c, allowed, 4, sdims, (const int64_t[]){0, 2, 3}, &allowed));
    L(oplib_full_like(c, s, HLO_TYPE_COUNT, -INFINITY, &ninf));
    /* Adding the bias (rather than selecting) keeps NaN scores NaN, as ONNX's additive
     * composition does. */
    L(hlo_build_binary(c, HLO_OP_ADD, s, ninf, &sum));
    L(hlo_build_select(c, allowed, s, sum, &s));
  }
  if (mode == 2) qk_out = s;

  hlo_type st;
  TRY(softmax_precision_type(ctx, ct, &st));
  hlo_instr *p;
  L(oplib_convert(c, s, st, &s));
  TRY(guarded_softmax(ctx, s, &p));
  if (mode == 3) qk_out = p;
  L(oplib_convert(c, p, ct, &p));
  hlo_dot_dnums pv_dn = {.lhs_batch = {2, b2}, .rhs_batch = {2, b2}, .lhs_contracting = {1, c3},
                         .rhs_contracting = {1, c2}};
  hlo_instr *y;
  L(hlo_build_dot(c, p, v, &pv_dn, HLO_BUILD_DEFAULT_TYPE, &y)); /* (B, qh, Sq, vhd) */
  L(oplib_convert(c, y, t1, &y));
  if (q0->shape.rank == 3) {
    L(oplib_transpose(c, y, (const int64_t[]){0, 2, 1, 3}, &y));
    L(oplib_reshape(c, y, 3, (const int64_t[]){B, Sq, qh * vhd}, &y));
  }
  onnx_set_output(ctx, 0, y);
  if (qk_out) {
    L(oplib_convert(c, qk_out, t1, &qk_out));
    onnx_set_output(ctx, 3, qk_out);
  }
  return NULL;
}

/* ====================================================== RMSNormalization ====== */

static kiln_status lower_rmsnorm(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *xw, *scale, *sq, *ms, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &scale));
  TRY(onnx_require_float(ctx, x, "X"));
  int r = x->shape.rank;
  if (r < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "X must have rank >= 1");
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", -1), r, &axis));
  double eps = graph_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
  int64_t stash = graph_node_attr_int_or(ctx->node, "stash_type", 1);
  hlo_type ct = x->shape.type;
  if (stash == 1)
    ct = HLO_F32;
  else if (stash == 11)
    ct = HLO_F64;
  else if (stash == 10)
    ct = HLO_F16;
  else if (stash == 16)
    ct = HLO_BF16;
  else if (stash != 0 && stash != -1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "stash_type %lld is not a float type", (long long)stash);
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  for (int i = (int)axis; i < r; i++) axes[n++] = i;
  L(oplib_convert(c, x, ct, &xw));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, xw, xw, &sq));
  L(oplib_reduce_mean(c, sq, n, axes, true, &ms));
  L(oplib_binary_scalar(c, HLO_OP_ADD, ms, eps, &ms));
  L(hlo_build_unary(c, HLO_OP_SQRT, ms, &ms));
  L(oplib_binary(c, HLO_OP_DIVIDE, xw, ms, &y));
  L(oplib_convert(c, y, x->shape.type, &y));
  L(oplib_convert(c, scale, x->shape.type, &scale));
  if (scale->shape.rank > r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale (rank %d) has a higher rank than X (%d)",
                    scale->shape.rank, r);
  L(oplib_broadcast_to(c, scale, r, x->shape.dims, &scale));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, y, scale, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ======================================================= RotaryEmbedding ====== */

/* cache (M, h) gathered at ids (B, S) -> (B, S, h). */
static kiln_status gather_rows(op_lower_ctx *ctx, hlo_instr *cache, hlo_instr *ids, hlo_instr **out) {
  int64_t off[1] = {2}, coll[1] = {0}, map[1] = {0};
  hlo_gather_dnums dn = {.offset_dims = {1, off}, .collapsed_slice_dims = {1, coll}, .start_index_map = {1, map},
                         .index_vector_dim = 2};
  int64_t sizes[2] = {1, cache->shape.dims[1]};
  L(hlo_build_gather(ctx->comp, cache, ids, &dn, sizes, out));
  return NULL;
}

static kiln_status lower_rotary(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x0, *x, *cosc, *sinc, *pos = NULL;
  TRY(onnx_require_input(ctx, 0, &x0));
  TRY(onnx_require_input(ctx, 1, &cosc));
  TRY(onnx_require_input(ctx, 2, &sinc));
  TRY(onnx_optional_value(ctx, 3, &pos));
  TRY(onnx_require_float(ctx, x0, "X"));
  hlo_type t = x0->shape.type, ct = onnx_compute_type(t);
  const int64_t *d = x0->shape.dims;
  int64_t B, S, H, D;
  if (x0->shape.rank == 4) {
    B = d[0], H = d[1], S = d[2], D = d[3];
    L(oplib_transpose(c, x0, (const int64_t[]){0, 2, 1, 3}, &x));
  } else if (x0->shape.rank == 3) {
    H = graph_node_attr_int_or(ctx->node, "num_heads", 0);
    if (H <= 0 || d[2] % H != 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "3-D X needs a num_heads attribute dividing its hidden size %lld (num_heads=%lld)",
                      (long long)d[2], (long long)H);
    B = d[0], S = d[1], D = d[2] / H;
    L(oplib_reshape(c, x0, 4, (const int64_t[]){B, S, H, D}, &x));
  } else {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "X must be 3-D or 4-D, got rank %d", x0->shape.rank);
  }
  int64_t rd = graph_node_attr_int_or(ctx->node, "rotary_embedding_dim", 0);
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2 != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "rotary_embedding_dim %lld must be even and at most the head size %lld", (long long)rd,
                    (long long)D);
  int64_t half = rd / 2;
  if (pos) {
    if (!hlo_type_is_int(pos->shape.type) || pos->shape.rank != 2 || pos->shape.dims[0] != B ||
        pos->shape.dims[1] != S)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "position_ids must be integer of shape (%lld, %lld)",
                      (long long)B, (long long)S);
    if (cosc->shape.rank != 2 || sinc->shape.rank != 2)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "with position_ids, cos_cache and sin_cache must be 2-D");
    L(oplib_convert(c, pos, HLO_S64, &pos));
    TRY(gather_rows(ctx, cosc, pos, &cosc));
    TRY(gather_rows(ctx, sinc, pos, &sinc));
  } else if (cosc->shape.rank != 3 || sinc->shape.rank != 3) {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "without position_ids, cos_cache and sin_cache must be 3-D");
  }
  for (int i = 0; i < 2; i++) {
    const int64_t *cd = (i ? sinc : cosc)->shape.dims;
    if (cd[0] != B || cd[1] != S || cd[2] != half)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "%s must give (batch %lld, sequence %lld, rotary_dim/2 %lld) values, got (%lld, %lld, %lld)",
                      i ? "sin_cache" : "cos_cache", (long long)B, (long long)S, (long long)half, (long long)cd[0],
                      (long long)cd[1], (long long)cd[2]);
  }
  int64_t hdims[4] = {B, S, H, half};
  L(oplib_convert(c, cosc, ct, &cosc));
  L(oplib_convert(c, sinc, ct, &sinc));
  L(hlo_build_broadcast(c, cosc, 4, hdims, (const int64_t[]){0, 1, 3}, &cosc));
  L(hlo_build_broadcast(c, sinc, 4, hdims, (const int64_t[]){0, 1, 3}, &sinc));
  L(oplib_convert(c, x, ct, &x));
  bool inter = graph_node_attr_int_or(ctx->node, "interleaved", 0) != 0;
  hlo_instr *x1, *x2, *a, *b, *re, *im, *rot;
  if (inter) {
    L(hlo_build_slice(c, x, (const int64_t[]){0, 0, 0, 0}, (const int64_t[]){B, S, H, rd},
                      (const int64_t[]){1, 1, 1, 2}, &x1));
    L(hlo_build_slice(c, x, (const int64_t[]){0, 0, 0, 1}, (const int64_t[]){B, S, H, rd},
                      (const int64_t[]){1, 1, 1, 2}, &x2));
  } else {
    L(oplib_slice_axis(c, x, 3, 0, half, &x1));
    L(oplib_slice_axis(c, x, 3, half, rd, &x2));
  }
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, cosc, x1, &a));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, sinc, x2, &b));
  L(hlo_build_binary(c, HLO_OP_SUBTRACT, a, b, &re));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, sinc, x1, &a));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, cosc, x2, &b));
  L(hlo_build_binary(c, HLO_OP_ADD, a, b, &im));
  if (inter) {
    int64_t d5[5] = {B, S, H, half, 1};
    L(oplib_reshape(c, re, 5, d5, &re));
    L(oplib_reshape(c, im, 5, d5, &im));
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){re, im}, 4, &rot));
    L(oplib_reshape(c, rot, 4, (const int64_t[]){B, S, H, rd}, &rot));
  } else {
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){re, im}, 3, &rot));
  }
  if (rd < D) {
    hlo_instr *pass;
    L(oplib_slice_axis(c, x, 3, rd, D, &pass));
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){rot, pass}, 3, &rot));
  }
  L(oplib_convert(c, rot, t, &rot));
  if (x0->shape.rank == 4)
    L(oplib_transpose(c, rot, (const int64_t[]){0, 2, 1, 3}, &rot));
  else
    L(oplib_reshape(c, rot, 3, d, &rot));
  return onnx_set_output(ctx, 0, rot);
}

/* ========================================================= Swish, SwiGLU ====== */

static kiln_status swish(op_lower_ctx *ctx, hlo_instr *x, hlo_instr **out) {
  double alpha = graph_node_attr_float_or(ctx->node, "alpha", 1.0f);
  hlo_instr *xw, *s;
  L(oplib_convert(ctx->comp, x, onnx_compute_type(x->shape.type), &xw));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, xw, alpha, &s));
  L(hlo_build_unary(ctx->comp, HLO_OP_LOGISTIC, s, &s));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, xw, s, out));
  return NULL;
}

static kiln_status lower_swish(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_float(ctx, x, "X"));
  TRY(swish(ctx, x, &y));
  L(oplib_convert(ctx->comp, y, x->shape.type, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_swiglu(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *y, *bw;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  TRY(onnx_require_float(ctx, a, "A"));
  if (b->shape.type != a->shape.type || !shape_equal(&a->shape, &b->shape))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "A and B must have identical shapes and types");
  TRY(swish(ctx, a, &y));
  L(oplib_convert(ctx->comp, b, y->shape.type, &bw));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, bw, &y));
  L(oplib_convert(ctx->comp, y, a->shape.type, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_attention_defs[] = {
    {"onnx.Attention", 0, 0, lower_attention, NULL},
    {"onnx.RMSNormalization", 0, 0, lower_rmsnorm, NULL},
    {"onnx.RotaryEmbedding", 0, 0, lower_rotary, NULL},
    {"onnx.Swish", 0, 0, lower_swish, NULL},
    {"onnx.SwiGLU", 0, 0, lower_swiglu, NULL},
};

const op_table onnx_attention_ops = {"onnx.attention",
                                     (int)(sizeof onnx_attention_defs / sizeof onnx_attention_defs[0]),
                                     onnx_attention_defs};
