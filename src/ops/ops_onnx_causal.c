/* ONNX causal sequence-mixing ops of opset 27, the building blocks of Gated DeltaNet /
 * Mamba-style layers: CausalConvWithState (a depthwise causal 1-D convolution that carries
 * its last k-1 input positions between calls) and LinearAttention (a recurrent state
 * S (B, H_kv, d_k, d_v) updated once per token by one of four rules: linear, gated,
 * delta, gated_delta). Both lower to plain HLO with static shapes. The convolution is a
 * sum of k shifted slices times per-channel taps, which is exact, small for the kernel
 * sizes these models use (k = 4) and needs no grouped-convolution support from the
 * backends. LinearAttention unrolls the time steps like ops_onnx_rnn.c does (the
 * executor lowers per concrete shape, so T is known; decode calls have T = 1); GQA is a
 * dot over (kv head, group) rather than a repeat of the state, since query head h reads
 * KV head h / (q_num_heads / kv_num_heads). float16/bfloat16 compute in float32 and
 * convert back, rounding where ONNX's reference implementation rounds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/shape.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

static kiln_status require_rank(op_lower_ctx *ctx, hlo_instr *x, int rank, const char *what, const char *layout) {
  if (x->shape.rank != rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be rank %d %s, got rank %d", what, rank, layout,
                    x->shape.rank);
  return NULL;
}

/* =================================================== CausalConvWithState ====== */

static kiln_status lower_causal_conv(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *w, *bias, *past, *padded, *present;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &w));
  TRY(onnx_optional_value(ctx, 2, &bias));
  TRY(onnx_optional_value(ctx, 3, &past));
  TRY(onnx_require_float(ctx, x, "input"));
  TRY(require_rank(ctx, x, 3, "input", "(batch_size, channels, length)"));
  TRY(require_rank(ctx, w, 3, "weight", "(channels, 1, k)"));
  const char *act = onnx_attr_string(ctx->node, "activation", "none");
  bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
  if (!silu && strcmp(act, "none") != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "activation '%s' is not one of 'none', 'silu', 'swish'", act);
  hlo_type t = x->shape.type, ct = onnx_compute_type(t);
  int64_t B = x->shape.dims[0], C = x->shape.dims[1], Lx = x->shape.dims[2], k = w->shape.dims[2];
  if (w->shape.dims[0] != C || w->shape.dims[1] != 1 || k < 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "weight must be (channels %lld, 1, k >= 1) for a depthwise convolution, got (%lld, %lld, %lld)",
                    (long long)C, (long long)w->shape.dims[0], (long long)w->shape.dims[1], (long long)k);
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != C))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "bias must be rank 1 of %lld channels", (long long)C);
  /* Left context: the previous call's last k-1 positions, or zeros on a first call. */
  if (past) {
    const int64_t *pd = past->shape.dims;
    if (past->shape.rank != 3 || pd[0] != B || pd[1] != C || pd[2] != k - 1)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "past_state must be (%lld, %lld, k-1 = %lld)", (long long)B,
                      (long long)C, (long long)(k - 1));
    L(oplib_convert(c, past, t, &past));
    L(hlo_build_concatenate(c, 2, (hlo_instr *[]){past, x}, 2, &padded));
  } else {
    hlo_instr *zero;
    L(oplib_scalar(c, t, 0.0, &zero));
    L(oplib_pad(c, x, zero, (const int64_t[]){0, 0, k - 1}, (const int64_t[]){0, 0, 0}, &padded));
  }
  int64_t Lp = Lx + k - 1;
  /* present_state: the last k-1 positions of the padded input (it may reach back into
   * past_state when the input is shorter than k-1). */
  L(oplib_slice_axis(c, padded, 2, Lp - (k - 1), Lp, &present));

  /* out[b, c, l] = sum_j w[c, 0, j] * padded[b, c, l + j] (+ bias[c]). */
  hlo_instr *pw, *w2, *acc = NULL;
  int64_t out_dims[3] = {B, C, Lx};
  L(oplib_convert(c, padded, ct, &pw));
  L(oplib_convert(c, w, ct, &w2));
  L(oplib_reshape(c, w2, 2, (const int64_t[]){C, k}, &w2));
  for (int64_t j = 0; j < k; j++) {
    hlo_instr *xs, *tap, *term;
    L(oplib_slice_axis(c, pw, 2, j, j + Lx, &xs));
    L(oplib_slice_axis(c, w2, 1, j, j + 1, &tap));
    L(oplib_reshape(c, tap, 1, (const int64_t[]){C}, &tap));
    L(hlo_build_broadcast(c, tap, 3, out_dims, (const int64_t[]){1}, &tap));
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, xs, tap, &term));
    if (acc)
      L(hlo_build_binary(c, HLO_OP_ADD, acc, term, &acc));
    else
      acc = term;
  }
  if (bias) {
    hlo_instr *bb;
    L(oplib_convert(c, bias, ct, &bb));
    L(hlo_build_broadcast(c, bb, 3, out_dims, (const int64_t[]){1}, &bb));
    L(hlo_build_binary(c, HLO_OP_ADD, acc, bb, &acc));
  }
  /* The reference rounds the convolution to the input type before the activation. */
  hlo_instr *y;
  L(oplib_convert(c, acc, t, &y));
  if (silu) {
    hlo_instr *yw, *s;
    L(oplib_convert(c, y, ct, &yw));
    L(hlo_build_unary(c, HLO_OP_LOGISTIC, yw, &s));
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, yw, s, &yw));
    L(oplib_convert(c, yw, t, &y));
  }
  TRY(onnx_set_output(ctx, 0, y));
  return onnx_set_output(ctx, 1, present);
}

/* ======================================================= LinearAttention ====== */

/* Row t of a (B, T, n) value as (B, n). */
static kiln_status step_row(op_lower_ctx *ctx, hlo_instr *x, int64_t t, hlo_instr **out) {
  int64_t B = x->shape.dims[0], n = x->shape.dims[2];
  L(oplib_slice_axis(ctx->comp, x, 1, t, t + 1, out));
  L(oplib_reshape(ctx->comp, *out, 2, (const int64_t[]){B, n}, out));
  return NULL;
}

static kiln_status lower_linear_attention(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *q, *k, *v, *past, *decay, *beta;
  TRY(onnx_require_input(ctx, 0, &q));
  TRY(onnx_require_input(ctx, 1, &k));
  TRY(onnx_require_input(ctx, 2, &v));
  TRY(onnx_optional_value(ctx, 3, &past));
  TRY(onnx_optional_value(ctx, 4, &decay));
  TRY(onnx_optional_value(ctx, 5, &beta));
  TRY(onnx_require_float(ctx, q, "query"));
  TRY(require_rank(ctx, q, 3, "query", "(B, T, H*D)"));
  TRY(require_rank(ctx, k, 3, "key", "(B, T, H*D)"));
  TRY(require_rank(ctx, v, 3, "value", "(B, T, H*D)"));

  const char *rule = onnx_attr_string(ctx->node, "update_rule", "gated_delta");
  bool gating, delta;
  if (strcmp(rule, "linear") == 0)
    gating = false, delta = false;
  else if (strcmp(rule, "gated") == 0)
    gating = true, delta = false;
  else if (strcmp(rule, "delta") == 0)
    gating = false, delta = true;
  else if (strcmp(rule, "gated_delta") == 0)
    gating = true, delta = true;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "update_rule '%s' is not one of 'linear', 'gated', 'delta', 'gated_delta'", rule);
  /* A decay or beta the rule would ignore is refused, as ONNX's reference does: it
   * means the model and the rule disagree. */
  if (gating != (decay != NULL))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "update_rule '%s' %s the decay input", rule,
                    gating ? "requires" : "forbids");
  if (delta != (beta != NULL))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "update_rule '%s' %s the beta input", rule,
                    delta ? "requires" : "forbids");

  int64_t Hq = graph_node_attr_int_or(ctx->node, "q_num_heads", 0);
  int64_t Hkv = graph_node_attr_int_or(ctx->node, "kv_num_heads", 0);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)", (long long)Hq,
                    (long long)Hkv);
  int64_t B = q->shape.dims[0], T = q->shape.dims[1], G = Hq / Hkv;
  for (int i = 0; i < 2; i++) {
    hlo_instr *x = i ? v : k;
    if (x->shape.dims[0] != B || x->shape.dims[1] != T)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must have query's batch %lld and length %lld",
                      i ? "value" : "key", (long long)B, (long long)T);
  }
  if (q->shape.dims[2] % Hq != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "query hidden size %lld is not a multiple of q_num_heads %lld",
                    (long long)q->shape.dims[2], (long long)Hq);
  int64_t dk = q->shape.dims[2] / Hq;
  if (k->shape.dims[2] != Hkv * dk)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "key hidden size %lld is not kv_num_heads*d_k = %lld",
                    (long long)k->shape.dims[2], (long long)(Hkv * dk));
  if (v->shape.dims[2] % Hkv != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "value hidden size %lld is not a multiple of kv_num_heads %lld",
                    (long long)v->shape.dims[2], (long long)Hkv);
  int64_t dv = v->shape.dims[2] / Hkv;
  int64_t sdims[4] = {B, Hkv, dk, dv};
  if (past) {
    TRY(onnx_require_float(ctx, past, "past_state"));
    const int64_t *pd = past->shape.dims;
    if (past->shape.rank != 4 || pd[0] != B || pd[1] != Hkv || pd[2] != dk || pd[3] != dv)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "past_state must be (%lld, %lld, %lld, %lld)", (long long)B,
                      (long long)Hkv, (long long)dk, (long long)dv);
  }
  bool decay_per_key = false;
  if (decay) {
    TRY(require_rank(ctx, decay, 3, "decay", "(B, T, H_kv or H_kv*d_k)"));
    const int64_t *dd = decay->shape.dims;
    if (dd[0] != B || dd[1] != T || (dd[2] != Hkv && dd[2] != Hkv * dk))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "decay must be (%lld, %lld, kv_num_heads %lld or kv_num_heads*d_k %lld)", (long long)B,
                      (long long)T, (long long)Hkv, (long long)(Hkv * dk));
    decay_per_key = dd[2] != Hkv;
  }
  if (beta) {
    TRY(require_rank(ctx, beta, 3, "beta", "(B, T, H_kv or 1)"));
    const int64_t *bd = beta->shape.dims;
    if (bd[0] != B || bd[1] != T || (bd[2] != Hkv && bd[2] != 1))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "beta must be (%lld, %lld, kv_num_heads %lld or 1)",
                      (long long)B, (long long)T, (long long)Hkv);
  }
  double scale = graph_node_attr_float_or(ctx->node, "scale", 0.0f);
  if (scale == 0.0) scale = 1.0 / sqrt((double)dk);

  /* Everything recurs in float32 (float64 stays float64); the outputs round at the end. */
  hlo_type t = q->shape.type, ct = onnx_compute_type(t);
  hlo_type st = past ? past->shape.type : t;
  hlo_instr *S;
  L(oplib_convert(c, q, ct, &q));
  L(oplib_convert(c, k, ct, &k));
  L(oplib_convert(c, v, ct, &v));
  if (past)
    L(oplib_convert(c, past, ct, &S));
  else
    L(oplib_full(c, ct, 0.0, 4, sdims, &S));
  if (decay) {
    L(oplib_convert(c, decay, ct, &decay));
    L(hlo_build_unary(c, HLO_OP_EXP, decay, &decay)); /* decay is log-space */
  }
  if (beta) L(oplib_convert(c, beta, ct, &beta));

  hlo_instr **outs = NULL;
  if (T > 0) {
    outs = calloc((size_t)T, sizeof *outs);
    if (!outs) return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory for %lld steps", (long long)T);
  }
  kiln_status err = NULL;
#define STEP(expr)                          \
  do {                                      \
    err = oplib_wrap(ctx->node, (expr));    \
    if (err) goto done;                     \
  } while (0)
  /* dot dimension numbers: retrieval S^T k (batch B, H_kv; contract d_k) and the read
   * q^T S with q as (B, H_kv, G, d_k) (same batch dims, contract d_k). */
  int64_t bat[2] = {0, 1}, c2[1] = {2}, c3[1] = {3};
  hlo_dot_dnums dn_get = {.lhs_batch = {2, bat}, .rhs_batch = {2, bat}, .lhs_contracting = {1, c2},
                          .rhs_contracting = {1, c2}};
  hlo_dot_dnums dn_read = {.lhs_batch = {2, bat}, .rhs_batch = {2, bat}, .lhs_contracting = {1, c3},
                           .rhs_contracting = {1, c2}};
  int64_t kvdv[3] = {B, Hkv, dv};
  for (int64_t i = 0; i < T; i++) {
    hlo_instr *qt, *kt, *vt, *kb, *vb, *kv, *o;
    STEP(step_row(ctx, q, i, &qt));
    STEP(step_row(ctx, k, i, &kt));
    STEP(step_row(ctx, v, i, &vt));
    STEP(oplib_reshape(c, kt, 3, (const int64_t[]){B, Hkv, dk}, &kt));
    STEP(oplib_reshape(c, vt, 3, kvdv, &vt));
    if (gating) {
      /* S *= exp(g_t), per head (B, H_kv) or per key dim (B, H_kv, d_k), over d_v. */
      hlo_instr *g;
      STEP(step_row(ctx, decay, i, &g));
      if (decay_per_key) {
        STEP(oplib_reshape(c, g, 3, (const int64_t[]){B, Hkv, dk}, &g));
        STEP(hlo_build_broadcast(c, g, 4, sdims, (const int64_t[]){0, 1, 2}, &g));
      } else {
        STEP(hlo_build_broadcast(c, g, 4, sdims, (const int64_t[]){0, 1}, &g));
      }
      STEP(hlo_build_binary(c, HLO_OP_MULTIPLY, S, g, &S));
    }
    if (delta) {
      /* v_t <- beta_t * (v_t - S^T k_t), read from the (decayed) state. */
      hlo_instr *got, *bt;
      STEP(hlo_build_dot(c, S, kt, &dn_get, HLO_BUILD_DEFAULT_TYPE, &got));
      STEP(hlo_build_binary(c, HLO_OP_SUBTRACT, vt, got, &vt));
      STEP(step_row(ctx, beta, i, &bt));
      if (beta->shape.dims[2] == 1) {
        STEP(oplib_reshape(c, bt, 1, (const int64_t[]){B}, &bt));
        STEP(hlo_build_broadcast(c, bt, 3, kvdv, (const int64_t[]){0}, &bt));
      } else {
        STEP(hlo_build_broadcast(c, bt, 3, kvdv, (const int64_t[]){0, 1}, &bt));
      }
      STEP(hlo_build_binary(c, HLO_OP_MULTIPLY, bt, vt, &vt));
    }
    /* S += k_t (outer) v_t */
    STEP(hlo_build_broadcast(c, kt, 4, sdims, (const int64_t[]){0, 1, 2}, &kb));
    STEP(hlo_build_broadcast(c, vt, 4, sdims, (const int64_t[]){0, 1, 3}, &vb));
    STEP(hlo_build_binary(c, HLO_OP_MULTIPLY, kb, vb, &kv));
    STEP(hlo_build_binary(c, HLO_OP_ADD, S, kv, &S));
    /* o_t = scale * q_t^T S: query head kv*G + g reads KV head kv. */
    STEP(oplib_reshape(c, qt, 4, (const int64_t[]){B, Hkv, G, dk}, &qt));
    STEP(hlo_build_dot(c, qt, S, &dn_read, HLO_BUILD_DEFAULT_TYPE, &o)); /* (B, H_kv, G, d_v) */
    STEP(oplib_binary_scalar(c, HLO_OP_MULTIPLY, o, scale, &o));
    STEP(oplib_reshape(c, o, 3, (const int64_t[]){B, 1, Hq * dv}, &outs[i]));
  }
  hlo_instr *y, *present;
  if (T > 0)
    STEP(oplib_concat(c, (int)T, outs, 1, &y));
  else
    STEP(oplib_full(c, ct, 0.0, 3, (const int64_t[]){B, 0, Hq * dv}, &y));
  STEP(oplib_convert(c, y, t, &y));
  STEP(oplib_convert(c, S, st, &present));
  STEP(onnx_set_output(ctx, 0, y));
  STEP(onnx_set_output(ctx, 1, present));
#undef STEP
done:
  free(outs);
  return err;
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_causal_defs[] = {
    {"onnx.CausalConvWithState", 0, 0, lower_causal_conv, NULL},
    {"onnx.LinearAttention", 0, 0, lower_linear_attention, NULL},
};

const op_table onnx_causal_ops = {"onnx.causal", (int)(sizeof onnx_causal_defs / sizeof onnx_causal_defs[0]),
                                  onnx_causal_defs};
