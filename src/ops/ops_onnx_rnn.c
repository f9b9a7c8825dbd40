/* ONNX recurrent layers: LSTM, GRU and RNN, lowered to HLO by unrolling the sequence.
 *
 * The executor lowers each node for its concrete input shapes, so the sequence length
 * is static here; unrolling it (one step = a few dots and elementwise ops) keeps the
 * lowering a straight-line computation that every backend and pass already handles,
 * whereas an HLO while loop would need a dynamic-slice/update-slice carry per output.
 * The cost is program size linear in seq_length x directions, which is small for the
 * streaming models that use these ops (silero VAD runs one step per call); a
 * bidirectional 300-step LSTM of hidden size 64 still runs in about half a second on
 * the reference evaluator.
 *
 * Semantics follow the ONNX spec (and ONNX Runtime where the spec is silent):
 *   - the input projection X*W^T (+ biases that do not interact with the reset gate)
 *     is one dot over all time steps, the recurrent part H*R^T one dot per step;
 *   - `clip` clamps every pre-activation given to an activation function f/g (not the
 *     cell state before h);
 *   - sequence_lens: for t >= len[b] the state of batch entry b is carried unchanged
 *     and Y is 0, so Y_h/Y_c are the last valid states and the reverse direction
 *     effectively starts at len[b]-1;
 *   - layout 1 is batch-major: X [B,T,I], initial/final states [B,D,H], Y [B,T,D,H];
 *   - activations (per direction, in order f, g[, h]) and their alpha/beta lists: an
 *     entry is consumed by each function that takes that parameter, defaults otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

typedef enum rnn_cell { RNN_CELL_SIMPLE, RNN_CELL_GRU, RNN_CELL_LSTM } rnn_cell;

typedef enum rnn_act_kind {
  RNN_ACT_SIGMOID,
  RNN_ACT_TANH,
  RNN_ACT_RELU,
  RNN_ACT_AFFINE,
  RNN_ACT_LEAKY_RELU,
  RNN_ACT_THRESHOLDED_RELU,
  RNN_ACT_SCALED_TANH,
  RNN_ACT_HARD_SIGMOID,
  RNN_ACT_ELU,
  RNN_ACT_SOFTSIGN,
  RNN_ACT_SOFTPLUS
} rnn_act_kind;

typedef struct rnn_act {
  rnn_act_kind kind;
  double alpha, beta;
} rnn_act;

typedef struct rnn_act_info {
  const char *name;
  rnn_act_kind kind;
  bool takes_alpha, takes_beta;
  double alpha, beta; /* defaults */
} rnn_act_info;

static const rnn_act_info rnn_acts[] = {
    {"Sigmoid", RNN_ACT_SIGMOID, false, false, 0, 0},
    {"Tanh", RNN_ACT_TANH, false, false, 0, 0},
    {"Relu", RNN_ACT_RELU, false, false, 0, 0},
    {"Affine", RNN_ACT_AFFINE, true, true, 1.0, 0.0},
    {"LeakyRelu", RNN_ACT_LEAKY_RELU, true, false, 0.01, 0},
    {"ThresholdedRelu", RNN_ACT_THRESHOLDED_RELU, true, false, 1.0, 0},
    {"ScaledTanh", RNN_ACT_SCALED_TANH, true, true, 1.0, 1.0},
    {"HardSigmoid", RNN_ACT_HARD_SIGMOID, true, true, 0.2, 0.5},
    {"Elu", RNN_ACT_ELU, true, false, 1.0, 0},
    {"Softsign", RNN_ACT_SOFTSIGN, false, false, 0, 0},
    {"Softplus", RNN_ACT_SOFTPLUS, false, false, 0, 0},
};

static bool same_name_ci(const char *a, size_t n, const char *b) {
  if (strlen(b) != n) return false;
  for (size_t i = 0; i < n; i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

/* Reads the activations attribute (n_per_dir functions per direction) into acts, with
 * the cell's defaults when absent. */
static kiln_status rnn_read_activations(const graph_node *node, rnn_cell cell, int n_dirs, rnn_act *acts) {
  int n_per_dir = cell == RNN_CELL_LSTM ? 3 : cell == RNN_CELL_GRU ? 2 : 1;
  const graph_attr_value *a = graph_node_attr(node, "activations");
  double alphas[16], betas[16];
  int n_alpha = 0, n_beta = 0;
  bool present;
  TRY(onnx_attr_floats(node, "activation_alpha", alphas, 16, &n_alpha, &present));
  TRY(onnx_attr_floats(node, "activation_beta", betas, 16, &n_beta, &present));
  if (!a || (a->kind == GRAPH_ATTR_LIST && a->list.n == 0)) {
    for (int d = 0; d < n_dirs; d++) {
      for (int i = 0; i < n_per_dir; i++) {
        rnn_act_kind k = cell == RNN_CELL_SIMPLE ? RNN_ACT_TANH : i == 0 ? RNN_ACT_SIGMOID : RNN_ACT_TANH;
        acts[d * n_per_dir + i] = (rnn_act){k, 0, 0};
      }
    }
    return NULL;
  }
  if (a->kind != GRAPH_ATTR_LIST || (a->list.elem != GRAPH_ATTR_STRING && a->list.n > 0))
    return op_error(node, KILN_INVALID_ARGUMENT, "activations must be a list of strings");
  if (a->list.n != n_per_dir * n_dirs)
    return op_error(node, KILN_INVALID_ARGUMENT, "activations has %d entries, expected %d (%d per direction)",
                    a->list.n, n_per_dir * n_dirs, n_per_dir);
  int ia = 0, ib = 0;
  for (int i = 0; i < a->list.n; i++) {
    const graph_bytes *s = &a->list.items[i].s;
    const rnn_act_info *info = NULL;
    for (size_t k = 0; k < sizeof rnn_acts / sizeof rnn_acts[0]; k++)
      if (same_name_ci((const char *)s->data, s->len, rnn_acts[k].name)) info = &rnn_acts[k];
    if (!info)
      return op_error(node, KILN_UNIMPLEMENTED, "unsupported activation '%.*s'", (int)s->len,
                      (const char *)s->data);
    acts[i] = (rnn_act){info->kind, info->alpha, info->beta};
    if (info->takes_alpha && ia < n_alpha) acts[i].alpha = alphas[ia++];
    if (info->takes_beta && ib < n_beta) acts[i].beta = betas[ib++];
  }
  return NULL;
}

/* act(clip(x)). */
static kiln_status rnn_apply(hlo_computation *c, const rnn_act *act, double clip, hlo_instr *x, hlo_instr **out) {
  hlo_instr *y, *t, *z;
  if (clip > 0) {
    hlo_instr *lo, *hi;
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, -clip, &lo));
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, clip, &hi));
    TRY(hlo_build_clamp(c, lo, x, hi, &x));
  }
  switch (act->kind) {
  case RNN_ACT_SIGMOID: return hlo_build_unary(c, HLO_OP_LOGISTIC, x, out);
  case RNN_ACT_TANH: return hlo_build_unary(c, HLO_OP_TANH, x, out);
  case RNN_ACT_RELU:
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &z));
    return hlo_build_binary(c, HLO_OP_MAXIMUM, x, z, out);
  case RNN_ACT_AFFINE:
    TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, act->alpha, &y));
    return oplib_binary_scalar(c, HLO_OP_ADD, y, act->beta, out);
  case RNN_ACT_LEAKY_RELU:
  case RNN_ACT_ELU: {
    hlo_instr *neg, *ge;
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &z));
    TRY(hlo_build_compare(c, HLO_DIR_GE, x, z, &ge));
    if (act->kind == RNN_ACT_LEAKY_RELU) {
      TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, act->alpha, &neg));
    } else {
      TRY(hlo_build_unary(c, HLO_OP_EXPM1, x, &t));
      TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, t, act->alpha, &neg));
    }
    return hlo_build_select(c, ge, x, neg, out);
  }
  case RNN_ACT_THRESHOLDED_RELU: {
    hlo_instr *th, *gt;
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, act->alpha, &th));
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &z));
    TRY(hlo_build_compare(c, HLO_DIR_GT, x, th, &gt));
    return hlo_build_select(c, gt, x, z, out);
  }
  case RNN_ACT_SCALED_TANH:
    TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, act->beta, &t));
    TRY(hlo_build_unary(c, HLO_OP_TANH, t, &t));
    return oplib_binary_scalar(c, HLO_OP_MULTIPLY, t, act->alpha, out);
  case RNN_ACT_HARD_SIGMOID: {
    hlo_instr *lo, *hi;
    TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, act->alpha, &t));
    TRY(oplib_binary_scalar(c, HLO_OP_ADD, t, act->beta, &t));
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &lo));
    TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 1, &hi));
    return hlo_build_clamp(c, lo, t, hi, out);
  }
  case RNN_ACT_SOFTSIGN:
    TRY(hlo_build_unary(c, HLO_OP_ABS, x, &t));
    TRY(oplib_binary_scalar(c, HLO_OP_ADD, t, 1.0, &t));
    return hlo_build_binary(c, HLO_OP_DIVIDE, x, t, out);
  case RNN_ACT_SOFTPLUS:
    TRY(hlo_build_unary(c, HLO_OP_EXP, x, &t));
    return hlo_build_unary(c, HLO_OP_LOG1P, t, out);
  }
  return status_error(KILN_INTERNAL, "unknown RNN activation");
}

/* Rows [g*H, (g+1)*H) of the last axis of a [B, G*H] value. */
static kiln_status rnn_gate(hlo_computation *c, hlo_instr *x, int64_t g, int64_t hidden, hlo_instr **out) {
  return oplib_slice_axis(c, x, 1, g * hidden, (g + 1) * hidden, out);
}

/* a + b (same shapes); b NULL returns a. */
static kiln_status rnn_add(hlo_computation *c, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  if (!b) {
    *out = a;
    return NULL;
  }
  return hlo_build_binary(c, HLO_OP_ADD, a, b, out);
}

/* Slice d of a [D, ...] value with the leading axis dropped. */
static kiln_status rnn_dir_slice(hlo_computation *c, hlo_instr *x, int64_t d, hlo_instr **out) {
  hlo_instr *s;
  TRY(oplib_slice_axis(c, x, 0, d, d + 1, &s));
  return oplib_reshape(c, s, x->shape.rank - 1, x->shape.dims + 1, out);
}

typedef struct rnn_spec {
  rnn_cell cell;
  int64_t seq, batch, input, hidden, gates;
  double clip;
  bool input_forget, linear_before_reset;
  const rnn_act *acts; /* this direction's f, g[, h] */
} rnn_spec;

/* One direction: x [T,B,I]; w [G*H,I]; r [G*H,H]; bias [2*G*H] or NULL; p [3H] or NULL;
 * h, c0 [B,H] (c0 only for LSTM); lens [B] s64 or NULL. Fills ys[t] ([B,H]) and the
 * final states. */
static kiln_status rnn_direction(const op_lower_ctx *ctx, const rnn_spec *sp, bool reverse, hlo_instr *x,
                                 hlo_instr *w, hlo_instr *r, hlo_instr *bias, hlo_instr *p, hlo_instr *h,
                                 hlo_instr *cell, hlo_instr *lens, hlo_instr **ys, hlo_instr **h_out,
                                 hlo_instr **c_out) {
  hlo_computation *c = ctx->comp;
  int64_t T = sp->seq, B = sp->batch, H = sp->hidden, GH = sp->gates * sp->hidden;
  hlo_type ty = x->shape.type;
  /* Input projection over all steps, with the biases that simply add. */
  hlo_instr *x2, *xw, *rb_h = NULL;
  int64_t flat[2] = {T * B, sp->input};
  L(oplib_reshape(c, x, 2, flat, &x2));
  int64_t one = 1;
  hlo_dot_dnums dn = {.lhs_contracting = {1, &one}, .rhs_contracting = {1, &one}};
  L(hlo_build_dot(c, x2, w, &dn, HLO_BUILD_DEFAULT_TYPE, &xw));
  if (bias) {
    hlo_instr *wb, *rb, *sum, *sumb;
    L(oplib_slice_axis(c, bias, 0, 0, GH, &wb));
    L(oplib_slice_axis(c, bias, 0, GH, 2 * GH, &rb));
    if (sp->cell == RNN_CELL_GRU && sp->linear_before_reset) {
      /* Rb_h multiplies with r, so only Rb_z and Rb_r join the input side. */
      hlo_instr *rb_zr, *zero_h, *parts[2];
      L(oplib_slice_axis(c, rb, 0, 0, 2 * H, &rb_zr));
      L(oplib_slice_axis(c, rb, 0, 2 * H, 3 * H, &rb_h));
      L(oplib_full(c, ty, 0, 1, &H, &zero_h));
      parts[0] = rb_zr;
      parts[1] = zero_h;
      L(hlo_build_concatenate(c, 2, parts, 0, &rb));
      int64_t bh[2] = {B, H};
      L(oplib_broadcast_to(c, rb_h, 2, bh, &rb_h));
    }
    L(hlo_build_binary(c, HLO_OP_ADD, wb, rb, &sum));
    L(oplib_broadcast_to(c, sum, 2, xw->shape.dims, &sumb));
    L(hlo_build_binary(c, HLO_OP_ADD, xw, sumb, &xw));
  }
  hlo_instr *pi = NULL, *po = NULL, *pf = NULL;
  if (p) {
    int64_t bh[2] = {B, H};
    L(oplib_slice_axis(c, p, 0, 0, H, &pi));
    L(oplib_slice_axis(c, p, 0, H, 2 * H, &po));
    L(oplib_slice_axis(c, p, 0, 2 * H, 3 * H, &pf));
    L(oplib_broadcast_to(c, pi, 2, bh, &pi));
    L(oplib_broadcast_to(c, po, 2, bh, &po));
    L(oplib_broadcast_to(c, pf, 2, bh, &pf));
  }
  hlo_instr *r_zr = NULL, *r_h = NULL; /* GRU: the reset gate acts between them */
  if (sp->cell == RNN_CELL_GRU) {
    L(oplib_slice_axis(c, r, 0, 0, 2 * H, &r_zr));
    L(oplib_slice_axis(c, r, 0, 2 * H, 3 * H, &r_h));
  }
  hlo_instr *zeros_bh = NULL;
  if (lens) {
    int64_t bh[2] = {B, H};
    L(oplib_full(c, ty, 0, 2, bh, &zeros_bh));
  }
  const rnn_act *f = &sp->acts[0], *g = &sp->acts[sp->cell == RNN_CELL_SIMPLE ? 0 : 1];
  for (int64_t s = 0; s < T; s++) {
    int64_t t = reverse ? T - 1 - s : s;
    hlo_instr *xt, *hr, *hn, *cn = NULL;
    int64_t bgh[2] = {B, GH}, bh[2] = {B, H};
    L(oplib_slice_axis(c, xw, 0, t * B, (t + 1) * B, &xt));
    L(oplib_reshape(c, xt, 2, bgh, &xt));
    if (sp->cell == RNN_CELL_GRU) {
      hlo_instr *rz, *rr, *rh, *xz, *xr, *xh, *z, *rg, *hh, *tmp;
      hlo_dot_dnums dn1 = dn;
      L(hlo_build_dot(c, h, r_zr, &dn1, HLO_BUILD_DEFAULT_TYPE, &hr));
      L(rnn_gate(c, hr, 0, H, &rz));
      L(rnn_gate(c, hr, 1, H, &rr));
      L(rnn_gate(c, xt, 0, H, &xz));
      L(rnn_gate(c, xt, 1, H, &xr));
      L(rnn_gate(c, xt, 2, H, &xh));
      L(hlo_build_binary(c, HLO_OP_ADD, xz, rz, &z));
      L(rnn_apply(c, f, sp->clip, z, &z));
      L(hlo_build_binary(c, HLO_OP_ADD, xr, rr, &rg));
      L(rnn_apply(c, f, sp->clip, rg, &rg));
      if (sp->linear_before_reset) {
        L(hlo_build_dot(c, h, r_h, &dn1, HLO_BUILD_DEFAULT_TYPE, &rh));
        L(rnn_add(c, rh, rb_h, &rh));
        L(hlo_build_binary(c, HLO_OP_MULTIPLY, rg, rh, &rh));
      } else {
        L(hlo_build_binary(c, HLO_OP_MULTIPLY, rg, h, &tmp));
        L(hlo_build_dot(c, tmp, r_h, &dn1, HLO_BUILD_DEFAULT_TYPE, &rh));
      }
      L(hlo_build_binary(c, HLO_OP_ADD, xh, rh, &hh));
      L(rnn_apply(c, g, sp->clip, hh, &hh));
      /* (1 - z) * hh + z * h */
      hlo_instr *onez, *a1, *a2;
      L(oplib_full_like(c, z, HLO_TYPE_COUNT, 1, &onez));
      L(hlo_build_binary(c, HLO_OP_SUBTRACT, onez, z, &onez));
      L(hlo_build_binary(c, HLO_OP_MULTIPLY, onez, hh, &a1));
      L(hlo_build_binary(c, HLO_OP_MULTIPLY, z, h, &a2));
      L(hlo_build_binary(c, HLO_OP_ADD, a1, a2, &hn));
    } else {
      L(hlo_build_dot(c, h, r, &dn, HLO_BUILD_DEFAULT_TYPE, &hr));
      hlo_instr *pre;
      L(hlo_build_binary(c, HLO_OP_ADD, xt, hr, &pre));
      if (sp->cell == RNN_CELL_SIMPLE) {
        L(rnn_apply(c, f, sp->clip, pre, &hn));
      } else {
        hlo_instr *gi, *go, *gf, *gc, *tmp;
        L(rnn_gate(c, pre, 0, H, &gi));
        L(rnn_gate(c, pre, 1, H, &go));
        L(rnn_gate(c, pre, 2, H, &gf));
        L(rnn_gate(c, pre, 3, H, &gc));
        if (pi) {
          L(hlo_build_binary(c, HLO_OP_MULTIPLY, pi, cell, &tmp));
          L(hlo_build_binary(c, HLO_OP_ADD, gi, tmp, &gi));
        }
        L(rnn_apply(c, f, sp->clip, gi, &gi));
        if (sp->input_forget) {
          L(oplib_full_like(c, gi, HLO_TYPE_COUNT, 1, &gf));
          L(hlo_build_binary(c, HLO_OP_SUBTRACT, gf, gi, &gf));
        } else {
          if (pf) {
            L(hlo_build_binary(c, HLO_OP_MULTIPLY, pf, cell, &tmp));
            L(hlo_build_binary(c, HLO_OP_ADD, gf, tmp, &gf));
          }
          L(rnn_apply(c, f, sp->clip, gf, &gf));
        }
        L(rnn_apply(c, g, sp->clip, gc, &gc));
        hlo_instr *a1, *a2;
        L(hlo_build_binary(c, HLO_OP_MULTIPLY, gf, cell, &a1));
        L(hlo_build_binary(c, HLO_OP_MULTIPLY, gi, gc, &a2));
        L(hlo_build_binary(c, HLO_OP_ADD, a1, a2, &cn));
        if (po) {
          L(hlo_build_binary(c, HLO_OP_MULTIPLY, po, cn, &tmp));
          L(hlo_build_binary(c, HLO_OP_ADD, go, tmp, &go));
        }
        L(rnn_apply(c, f, sp->clip, go, &go));
        L(rnn_apply(c, &sp->acts[2], 0, cn, &tmp));
        L(hlo_build_binary(c, HLO_OP_MULTIPLY, go, tmp, &hn));
      }
    }
    if (lens) {
      hlo_instr *tc, *valid, *validb;
      L(oplib_scalar(c, HLO_S64, (double)t, &tc));
      L(hlo_build_broadcast(c, tc, 1, &B, NULL, &tc));
      L(hlo_build_compare(c, HLO_DIR_LT, tc, lens, &valid));
      int64_t bdim = 0;
      L(hlo_build_broadcast(c, valid, 2, bh, &bdim, &validb));
      L(hlo_build_select(c, validb, hn, zeros_bh, &ys[t]));
      L(hlo_build_select(c, validb, hn, h, &h));
      if (cn) L(hlo_build_select(c, validb, cn, cell, &cell));
    } else {
      ys[t] = hn;
      h = hn;
      if (cn) cell = cn;
    }
  }
  *h_out = h;
  *c_out = cell;
  return NULL;
}

static kiln_status lower_rnn_cell(op_lower_ctx *ctx, rnn_cell kind) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *w, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &w));
  TRY(onnx_require_input(ctx, 2, &r));
  hlo_instr *b = onnx_input(ctx, 3), *lens = onnx_input(ctx, 4), *h0 = onnx_input(ctx, 5);
  hlo_instr *c0 = kind == RNN_CELL_LSTM ? onnx_input(ctx, 6) : NULL;
  hlo_instr *p = kind == RNN_CELL_LSTM ? onnx_input(ctx, 7) : NULL;
  const graph_node *node = ctx->node;
  int64_t G = kind == RNN_CELL_LSTM ? 4 : kind == RNN_CELL_GRU ? 3 : 1;
  int64_t layout = graph_node_attr_int_or(node, "layout", 0);
  const char *direction = onnx_attr_string(node, "direction", "forward");
  int n_dirs;
  bool rev0;
  if (strcmp(direction, "forward") == 0) {
    n_dirs = 1;
    rev0 = false;
  } else if (strcmp(direction, "reverse") == 0) {
    n_dirs = 1;
    rev0 = true;
  } else if (strcmp(direction, "bidirectional") == 0) {
    n_dirs = 2;
    rev0 = false;
  } else {
    return op_error(node, KILN_INVALID_ARGUMENT, "unknown direction '%s'", direction);
  }
  if (layout != 0 && layout != 1) return op_error(node, KILN_INVALID_ARGUMENT, "layout must be 0 or 1");
  if (!hlo_type_is_float(x->shape.type))
    return op_error(node, KILN_INVALID_ARGUMENT, "X must be floating-point, got %s", hlo_type_name(x->shape.type));
  if (x->shape.rank != 3 || w->shape.rank != 3 || r->shape.rank != 3)
    return op_error(node, KILN_INVALID_ARGUMENT, "X, W and R must be 3-D");
  if (layout == 1) {
    int64_t perm[3] = {1, 0, 2};
    L(oplib_transpose(c, x, perm, &x));
  }
  rnn_spec sp = {.cell = kind, .gates = G};
  sp.seq = x->shape.dims[0];
  sp.batch = x->shape.dims[1];
  sp.input = x->shape.dims[2];
  int64_t H = w->shape.dims[1] / G;
  int64_t hidden_attr = graph_node_attr_int_or(node, "hidden_size", H);
  sp.hidden = H;
  int64_t B = sp.batch, T = sp.seq;
  if (hidden_attr != H || w->shape.dims[1] != G * H || H <= 0 || w->shape.dims[0] != n_dirs ||
      w->shape.dims[2] != sp.input)
    return op_error(node, KILN_INVALID_ARGUMENT, "W has shape [%lld,%lld,%lld], expected [%d,%lld,%lld]",
                    (long long)w->shape.dims[0], (long long)w->shape.dims[1], (long long)w->shape.dims[2], n_dirs,
                    (long long)(G * hidden_attr), (long long)sp.input);
  if (r->shape.dims[0] != n_dirs || r->shape.dims[1] != G * H || r->shape.dims[2] != H)
    return op_error(node, KILN_INVALID_ARGUMENT, "R must have shape [%d,%lld,%lld]", n_dirs, (long long)(G * H),
                    (long long)H);
  if (b && (b->shape.rank != 2 || b->shape.dims[0] != n_dirs || b->shape.dims[1] != 2 * G * H))
    return op_error(node, KILN_INVALID_ARGUMENT, "B must have shape [%d,%lld]", n_dirs, (long long)(2 * G * H));
  if (p && (p->shape.rank != 2 || p->shape.dims[0] != n_dirs || p->shape.dims[1] != 3 * H))
    return op_error(node, KILN_INVALID_ARGUMENT, "P must have shape [%d,%lld]", n_dirs, (long long)(3 * H));
  if (lens && (lens->shape.rank != 1 || lens->shape.dims[0] != B || hlo_type_is_float(lens->shape.type)))
    return op_error(node, KILN_INVALID_ARGUMENT, "sequence_lens must be an integer vector of %lld", (long long)B);
  if (T <= 0) return op_error(node, KILN_UNIMPLEMENTED, "empty sequence");
  hlo_instr *states[2] = {h0, c0};
  for (int i = 0; i < 2; i++) {
    if (!states[i]) continue;
    if (layout == 1) {
      int64_t perm[3] = {1, 0, 2};
      if (states[i]->shape.rank == 3) L(oplib_transpose(c, states[i], perm, &states[i]));
    }
    if (states[i]->shape.rank != 3 || states[i]->shape.dims[0] != n_dirs || states[i]->shape.dims[1] != B ||
        states[i]->shape.dims[2] != H)
      return op_error(node, KILN_INVALID_ARGUMENT, "initial_%c has the wrong shape", i ? 'c' : 'h');
  }
  h0 = states[0];
  c0 = states[1];
  if (lens) L(oplib_convert(c, lens, HLO_S64, &lens));
  sp.clip = 0;
  const graph_attr_value *clip = graph_node_attr(node, "clip");
  if (clip) {
    if (clip->kind != GRAPH_ATTR_FLOAT || !(clip->f > 0))
      return op_error(node, KILN_INVALID_ARGUMENT, "clip must be a positive float");
    sp.clip = clip->f;
  }
  sp.input_forget = graph_node_attr_int_or(node, "input_forget", 0) != 0;
  sp.linear_before_reset = graph_node_attr_int_or(node, "linear_before_reset", 0) != 0;
  rnn_act acts[6];
  TRY(rnn_read_activations(node, kind, n_dirs, acts));
  int n_per_dir = kind == RNN_CELL_LSTM ? 3 : kind == RNN_CELL_GRU ? 2 : 1;

  hlo_instr **ys = calloc((size_t)T, sizeof *ys);
  if (!ys) abort();
  hlo_instr *y_dirs[2] = {NULL, NULL}, *h_dirs[2] = {NULL, NULL}, *c_dirs[2] = {NULL, NULL};
  kiln_status st = NULL;
  int64_t bh[2] = {B, H}, one_bh[3] = {1, B, H};
  for (int d = 0; d < n_dirs && !st; d++) {
    hlo_instr *wd = NULL, *rd = NULL, *bd = NULL, *pd = NULL, *hd = NULL, *cd = NULL, *hf = NULL, *cf = NULL;
    sp.acts = &acts[d * n_per_dir];
    st = rnn_dir_slice(c, w, d, &wd);
    if (!st) st = rnn_dir_slice(c, r, d, &rd);
    if (!st && b) st = rnn_dir_slice(c, b, d, &bd);
    if (!st && p) st = rnn_dir_slice(c, p, d, &pd);
    if (!st) st = h0 ? rnn_dir_slice(c, h0, d, &hd) : oplib_full(c, x->shape.type, 0, 2, bh, &hd);
    if (!st && kind == RNN_CELL_LSTM)
      st = c0 ? rnn_dir_slice(c, c0, d, &cd) : oplib_full(c, x->shape.type, 0, 2, bh, &cd);
    if (st) break;
    st = rnn_direction(ctx, &sp, d == 1 || rev0, x, wd, rd, bd, pd, hd, cd, lens, ys, &hf, &cf);
    if (st) break;
    for (int64_t t = 0; t < T && !st; t++) st = hlo_build_reshape(c, ys[t], 3, one_bh, &ys[t]);
    if (!st) st = hlo_build_concatenate(c, (int)T, ys, 0, &y_dirs[d]);
    if (!st) {
      int64_t dims4[4] = {T, 1, B, H};
      st = hlo_build_reshape(c, y_dirs[d], 4, dims4, &y_dirs[d]);
    }
    if (!st) st = hlo_build_reshape(c, hf, 3, one_bh, &h_dirs[d]);
    if (!st && cf) st = hlo_build_reshape(c, cf, 3, one_bh, &c_dirs[d]);
  }
  free(ys);
  if (st) return oplib_wrap(node, st);
  hlo_instr *y, *yh, *yc = NULL;
  L(oplib_concat(c, n_dirs, y_dirs, 1, &y));
  L(oplib_concat(c, n_dirs, h_dirs, 0, &yh));
  if (kind == RNN_CELL_LSTM) L(oplib_concat(c, n_dirs, c_dirs, 0, &yc));
  if (layout == 1) {
    int64_t py[4] = {2, 0, 1, 3}, ps[3] = {1, 0, 2};
    L(oplib_transpose(c, y, py, &y));
    L(oplib_transpose(c, yh, ps, &yh));
    if (yc) L(oplib_transpose(c, yc, ps, &yc));
  }
  hlo_instr *outs[3] = {y, yh, yc};
  for (int i = 0; i < ctx->n_outputs && i < 3; i++) ctx->outputs[i] = outs[i];
  return NULL;
}

static kiln_status lower_lstm(op_lower_ctx *ctx) { return lower_rnn_cell(ctx, RNN_CELL_LSTM); }
static kiln_status lower_gru(op_lower_ctx *ctx) { return lower_rnn_cell(ctx, RNN_CELL_GRU); }
static kiln_status lower_rnn(op_lower_ctx *ctx) { return lower_rnn_cell(ctx, RNN_CELL_SIMPLE); }

static const op_def onnx_rnn_defs[] = {
    {"onnx.GRU", 0, 0, lower_gru, NULL},
    {"onnx.LSTM", 0, 0, lower_lstm, NULL},
    {"onnx.RNN", 0, 0, lower_rnn, NULL},
};

const op_table onnx_rnn_ops = {"onnx.rnn", (int)(sizeof onnx_rnn_defs / sizeof onnx_rnn_defs[0]), onnx_rnn_defs};
