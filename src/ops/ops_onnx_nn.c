/* ONNX neural-network ops: convolutions, pooling, normalisations, softmax family,
 * matrix products (MatMul, Gemm, Einsum) and the small shape-only layer Flatten
 * (Dropout, which draws random masks in training mode, lives in ops_onnx_random.c).
 *
 * Layout is ONNX's NCHW throughout, which HLO expresses directly through convolution
 * dimension numbers and per-dimension windows, so no transposes are emitted. Window
 * geometry (auto_pad, ceil_mode, dilations) is resolved on the host by ops_lib into
 * explicit HLO padding; average pooling divides by a window count computed with the
 * same window over a ones tensor, which handles count_include_pad and ceil_mode's
 * extra end padding uniformly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

static kiln_status need_rank_at_least(op_lower_ctx *ctx, hlo_instr *x, int rank, const char *what) {
  if (x->shape.rank < rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must have rank >= %d, got rank %d", what, rank,
                    x->shape.rank);
  return NULL;
}

/* Reads strides / dilations / pads / auto_pad for n spatial dims; kernel comes from
 * the caller (kernel_shape or the weights). */
static kiln_status read_window(op_lower_ctx *ctx, int n, const int64_t *kernel, oplib_window *w,
                               oplib_auto_pad *auto_pad, int64_t *pads, bool *have_pads) {
  const graph_node *node = ctx->node;
  int cnt;
  bool present;
  memset(w, 0, sizeof *w);
  w->n = n;
  for (int i = 0; i < n; i++) {
    w->kernel[i] = kernel[i];
    w->stride[i] = 1;
    w->dilation[i] = 1;
  }
  TRY(onnx_attr_ints(node, "strides", w->stride, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n)
    return op_error(node, KILN_INVALID_ARGUMENT, "strides has %d entries, expected %d", cnt, n);
  if (!present)
    for (int i = 0; i < n; i++) w->stride[i] = 1;
  TRY(onnx_attr_ints(node, "dilations", w->dilation, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n)
    return op_error(node, KILN_INVALID_ARGUMENT, "dilations has %d entries, expected %d", cnt, n);
  if (!present)
    for (int i = 0; i < n; i++) w->dilation[i] = 1;
  TRY(onnx_attr_ints(node, "pads", pads, 2 * HLO_MAX_RANK, &cnt, have_pads));
  if (*have_pads && cnt != 2 * n)
    return op_error(node, KILN_INVALID_ARGUMENT, "pads has %d entries, expected %d", cnt, 2 * n);
  if (!*have_pads)
    for (int i = 0; i < 2 * n; i++) pads[i] = 0;
  /* Bound the geometry so that window arithmetic cannot overflow. */
  const int64_t lim = (int64_t)1 << 31;
  for (int i = 0; i < n; i++) {
    if (w->kernel[i] < 1 || w->kernel[i] > lim || w->stride[i] < 1 || w->stride[i] > lim || w->dilation[i] < 1 ||
        w->dilation[i] > lim)
      return op_error(node, KILN_INVALID_ARGUMENT,
                      "spatial dim %d: kernel %lld, stride %lld and dilation %lld must be in [1, 2^31]", i,
                      (long long)w->kernel[i], (long long)w->stride[i], (long long)w->dilation[i]);
    if (pads[i] < 0 || pads[i] > lim || pads[i + n] < 0 || pads[i + n] > lim)
      return op_error(node, KILN_INVALID_ARGUMENT, "pads of spatial dim %d must be in [0, 2^31]", i);
  }
  const char *ap = onnx_attr_string(node, "auto_pad", "NOTSET");
  if (!oplib_parse_auto_pad(ap, auto_pad))
    return op_error(node, KILN_INVALID_ARGUMENT, "unknown auto_pad \"%s\"", ap);
  return NULL;
}

/* kernel_shape attribute (required when `required`), else from `fallback`. */
static kiln_status read_kernel(op_lower_ctx *ctx, int n, const int64_t *fallback, int64_t *kernel) {
  int cnt;
  bool present;
  TRY(onnx_attr_ints(ctx->node, "kernel_shape", kernel, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "kernel_shape has %d entries, input has %d spatial dims",
                    cnt, n);
  if (!present) {
    if (!fallback) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "kernel_shape is required");
    for (int i = 0; i < n; i++) kernel[i] = fallback[i];
  }
  return NULL;
}

/* Adds bias b ([C]) along dim 1 of y. */
static kiln_status add_channel_bias(op_lower_ctx *ctx, hlo_instr *y, hlo_instr *b, hlo_instr **out) {
  if (b->shape.rank != 1 || b->shape.dims[0] != y->shape.dims[1])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "bias must have shape [%lld], got rank %d",
                    (long long)y->shape.dims[1], b->shape.rank);
  hlo_instr *bb;
  int64_t one = 1;
  L(oplib_convert(ctx->comp, b, y->shape.type, &b));
  L(hlo_build_broadcast(ctx->comp, b, y->shape.rank, y->shape.dims, &one, &bb));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, bb, out));
  return NULL;
}

/* ------------------------------------------------------------------- Conv ---- */

static kiln_status lower_conv(op_lower_ctx *ctx) {
  hlo_instr *x, *w, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &w));
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  int n = x->shape.rank - 2;
  if (w->shape.rank != x->shape.rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "weights W have rank %d, input X rank %d", w->shape.rank,
                    x->shape.rank);
  int64_t group = graph_node_attr_int_or(ctx->node, "group", 1);
  int64_t cin = x->shape.dims[1], m = w->shape.dims[0];
  if (group < 1 || cin % group != 0 || m % group != 0 || w->shape.dims[1] * group != cin)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "group %lld does not fit input channels %lld, weights [%lld, %lld, ...]", (long long)group,
                    (long long)cin, (long long)m, (long long)w->shape.dims[1]);
  int64_t kernel[HLO_MAX_RANK], pads[2 * HLO_MAX_RANK];
  TRY(read_kernel(ctx, n, w->shape.dims + 2, kernel));
  for (int i = 0; i < n; i++)
    if (kernel[i] != w->shape.dims[2 + i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "kernel_shape[%d] = %lld but W has %lld", i,
                      (long long)kernel[i], (long long)w->shape.dims[2 + i]);
  oplib_window win;
  oplib_auto_pad ap;
  bool have_pads;
  TRY(read_window(ctx, n, kernel, &win, &ap, pads, &have_pads));
  L(oplib_window_pads(&win, x->shape.dims + 2, ap, pads, false, NULL));
  hlo_window hw = oplib_conv_window(&win);
  hlo_conv_dnums dn = oplib_conv_dnums_nchw(n);
  L(oplib_convert(ctx->comp, w, x->shape.type, &w));
  L(hlo_build_convolution(ctx->comp, x, w, &hw, &dn, group, 1, HLO_BUILD_DEFAULT_TYPE, &y));
  hlo_instr *b = onnx_input(ctx, 2);
  if (!b && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &b));
  if (b) TRY(add_channel_bias(ctx, y, b, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ConvTranspose as the gradient of a convolution: the input dilated by the stride,
 * the kernel flipped, with its in/out feature roles swapped per group. */
static kiln_status lower_conv_transpose(op_lower_ctx *ctx) {
  hlo_instr *x, *w, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &w));
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  int n = x->shape.rank - 2, r = x->shape.rank;
  if (w->shape.rank != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "weights W have rank %d, input X rank %d", w->shape.rank, r);
  int64_t group = graph_node_attr_int_or(ctx->node, "group", 1);
  int64_t cin = x->shape.dims[1], mg = w->shape.dims[1];
  if (group < 1 || w->shape.dims[0] != cin || cin % group != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "group %lld does not fit input channels %lld and W [%lld, ...]",
                    (long long)group, (long long)cin, (long long)w->shape.dims[0]);
  int64_t kernel[HLO_MAX_RANK], pads[2 * HLO_MAX_RANK], outpad[HLO_MAX_RANK], outshape[HLO_MAX_RANK + 2];
  TRY(read_kernel(ctx, n, w->shape.dims + 2, kernel));
  oplib_window win;
  oplib_auto_pad ap;
  bool have_pads, have_outpad, have_outshape;
  int cnt;
  TRY(read_window(ctx, n, kernel, &win, &ap, pads, &have_pads));
  TRY(onnx_attr_ints(ctx->node, "output_padding", outpad, HLO_MAX_RANK, &cnt, &have_outpad));
  if (have_outpad && cnt != n)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_padding has %d entries, expected %d", cnt, n);
  if (!have_outpad)
    for (int i = 0; i < n; i++) outpad[i] = 0;
  for (int i = 0; i < n; i++)
    if (outpad[i] < 0 || outpad[i] > ((int64_t)1 << 31))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_padding must be in [0, 2^31]");
  TRY(onnx_attr_ints(ctx->node, "output_shape", outshape, HLO_MAX_RANK + 2, &cnt, &have_outshape));
  const int64_t *os = outshape;
  if (have_outshape) {
    if (cnt == n + 2)
      os = outshape + 2;
    else if (cnt != n)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_shape has %d entries, expected %d", cnt, n);
  }
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int64_t in = x->shape.dims[2 + i], s = win.stride[i], d = win.dilation[i];
    if (kernel[i] < 1 || s < 1 || d < 1 || outpad[i] < 0 || kernel[i] != w->shape.dims[2 + i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "invalid kernel/stride/dilation/output_padding for dim %d",
                      i);
    int64_t keff = (kernel[i] - 1) * d + 1;
    int64_t full = s * (in - 1) + outpad[i] + keff;
    int64_t begin, end;
    if (have_outshape || ap == OPLIB_AUTO_PAD_SAME_UPPER || ap == OPLIB_AUTO_PAD_SAME_LOWER) {
      if (have_outshape && (os[i] < 0 || os[i] > ((int64_t)1 << 40)))
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_shape[%d] = %lld is out of range", i,
                        (long long)os[i]);
      int64_t target = have_outshape ? os[i] : in * s;
      int64_t total = full - target;
      if (total < 0) total = 0;
      if (ap == OPLIB_AUTO_PAD_SAME_UPPER) {
        begin = total / 2;
        end = total - begin;
      } else {
        end = total / 2;
        begin = total - end;
      }
      /* An output_shape larger than the computed size pads zeros at the end. */
      if (have_outshape && full - begin - end < os[i]) end -= os[i] - (full - begin - end);
    } else if (ap == OPLIB_AUTO_PAD_VALID) {
      begin = end = 0;
    } else {
      begin = pads[i];
      end = pads[i + n];
    }
    lo[i] = keff - 1 - begin;
    hi[i] = keff - 1 - end + outpad[i];
  }
  /* W [Cin, M/g, k...] -> kernel [Cin/g, M, k...] (input feature dim 0, output dim 1),
   * spatially reversed. */
  L(oplib_convert(ctx->comp, w, x->shape.type, &w));
  hlo_instr *k = w;
  if (group > 1) {
    int64_t d5[HLO_MAX_RANK + 1], perm[HLO_MAX_RANK + 1], d4[HLO_MAX_RANK];
    d5[0] = group;
    d5[1] = cin / group;
    d5[2] = mg;
    for (int i = 0; i < n; i++) d5[3 + i] = kernel[i];
    L(hlo_build_reshape(ctx->comp, k, r + 1, d5, &k));
    perm[0] = 1;
    perm[1] = 0;
    perm[2] = 2;
    for (int i = 0; i < n; i++) perm[3 + i] = 3 + i;
    L(hlo_build_transpose(ctx->comp, k, perm, &k));
    d4[0] = cin / group;
    d4[1] = group * mg;
    for (int i = 0; i < n; i++) d4[2 + i] = kernel[i];
    L(hlo_build_reshape(ctx->comp, k, r, d4, &k));
  }
  int64_t sp[HLO_MAX_RANK];
  for (int i = 0; i < n; i++) sp[i] = 2 + i;
  L(hlo_build_reverse(ctx->comp, k, n, sp, &k));
  hlo_window hw;
  memset(&hw, 0, sizeof hw);
  hw.rank = n;
  for (int i = 0; i < n; i++) {
    hw.dims[i].size = kernel[i];
    hw.dims[i].stride = 1;
    hw.dims[i].pad_lo = lo[i];
    hw.dims[i].pad_hi = hi[i];
    hw.dims[i].lhs_dilate = win.stride[i];
    hw.dims[i].rhs_dilate = win.dilation[i];
  }
  hlo_conv_dnums dn = oplib_conv_dnums_nchw(n);
  dn.kernel_input_feature = 0;
  dn.kernel_output_feature = 1;
  L(hlo_build_convolution(ctx->comp, x, k, &hw, &dn, group, 1, HLO_BUILD_DEFAULT_TYPE, &y));
  hlo_instr *b = onnx_input(ctx, 2);
  if (!b && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &b));
  if (b) TRY(add_channel_bias(ctx, y, b, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------ pooling ---- */

typedef struct pool_geom {
  oplib_window win;
  int64_t extra_hi[HLO_MAX_RANK]; /* ceil_mode padding beyond the explicit pads */
} pool_geom;

static kiln_status pool_geometry(op_lower_ctx *ctx, hlo_instr *x, bool allow_ceil, pool_geom *g) {
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  int n = x->shape.rank - 2;
  int64_t kernel[HLO_MAX_RANK], pads[2 * HLO_MAX_RANK];
  TRY(read_kernel(ctx, n, NULL, kernel));
  oplib_auto_pad ap;
  bool have_pads;
  TRY(read_window(ctx, n, kernel, &g->win, &ap, pads, &have_pads));
  bool ceil_mode = allow_ceil && graph_node_attr_int_or(ctx->node, "ceil_mode", 0) != 0;
  L(oplib_window_pads(&g->win, x->shape.dims + 2, ap, pads, ceil_mode, g->extra_hi));
  return NULL;
}

static kiln_status lower_maxpool(op_lower_ctx *ctx) {
  hlo_instr *x, *init, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  pool_geom g;
  TRY(pool_geometry(ctx, x, true, &g));
  int r = x->shape.rank;
  hlo_window hw = oplib_window_to_hlo(&g.win, r, 2);
  L(oplib_lowest(ctx->comp, x->shape.type, &init));
  bool want_indices = ctx->n_outputs > 1 && ctx->outputs;
  if (!want_indices) {
    hlo_computation *mx;
    L(hlo_build_scalar_computation(ctx->comp->module, x->shape.type == HLO_PRED ? HLO_OP_OR : HLO_OP_MAXIMUM,
                                   x->shape.type, &mx));
    L(hlo_build_reduce_window(ctx->comp, 1, &x, &init, &hw, mx, &y));
    return onnx_set_output(ctx, 0, y);
  }
  /* Indices: flat positions in X (spatial part row- or column-major per
   * storage_order), reduced alongside the values. */
  bool col_major = graph_node_attr_int_or(ctx->node, "storage_order", 0) != 0;
  hlo_shape is = shape_make(HLO_S64, r, x->shape.dims);
  int64_t spatial = 1;
  for (int i = 2; i < r; i++) spatial *= x->shape.dims[i];
  hlo_instr *idx = NULL;
  for (int d = 0; d < r; d++) {
    int64_t stride;
    if (d == 0)
      stride = x->shape.dims[1] * spatial;
    else if (d == 1)
      stride = spatial;
    else {
      stride = 1;
      if (col_major)
        for (int j = 2; j < d; j++) stride *= x->shape.dims[j];
      else
        for (int j = d + 1; j < r; j++) stride *= x->shape.dims[j];
    }
    hlo_instr *io;
    L(hlo_build_iota(ctx->comp, &is, d, &io));
    if (stride != 1) L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, io, (double)stride, &io));
    if (idx)
      L(hlo_build_binary(ctx->comp, HLO_OP_ADD, idx, io, &idx));
    else
      idx = io;
  }
  hlo_instr *init_i, *t, *vals, *inds;
  L(oplib_highest(ctx->comp, HLO_S64, &init_i));
  hlo_computation *f;
  L(oplib_argminmax_computation(ctx->comp->module, x->shape.type, HLO_S64, true, false, &f));
  hlo_instr *ins[2] = {x, idx}, *inits[2] = {init, init_i};
  L(hlo_build_reduce_window(ctx->comp, 2, ins, inits, &hw, f, &t));
  L(hlo_build_get_tuple_element(ctx->comp, t, 0, &vals));
  L(hlo_build_get_tuple_element(ctx->comp, t, 1, &inds));
  onnx_set_output(ctx, 0, vals);
  return onnx_set_output(ctx, 1, inds);
}

/* Window counts over a [1, 1, spatial...] ones tensor; include_pad counts the explicit
 * pads but never ceil_mode's extra end padding. */
static kiln_status pool_counts(op_lower_ctx *ctx, hlo_instr *x, const pool_geom *g, bool include_pad,
                               hlo_instr **out) {
  int r = x->shape.rank, n = r - 2;
  hlo_type t = x->shape.type;
  int64_t dims[HLO_MAX_RANK];
  dims[0] = dims[1] = 1;
  for (int i = 0; i < n; i++) dims[2 + i] = x->shape.dims[2 + i];
  hlo_instr *ones, *zero, *cnt = NULL;
  L(oplib_full(ctx->comp, t, 1, r, dims, &ones));
  L(oplib_scalar(ctx->comp, t, 0, &zero));
  oplib_window w = g->win;
  if (include_pad) {
    hlo_instr *one;
    int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
      lo[2 + i] = w.pad_lo[i];
      hi[2 + i] = w.pad_hi[i] - g->extra_hi[i];
      w.pad_lo[i] = 0;
      w.pad_hi[i] = g->extra_hi[i];
    }
    L(oplib_scalar(ctx->comp, t, 1, &one));
    L(oplib_pad(ctx->comp, ones, one, lo, hi, &ones));
  }
  hlo_window hw = oplib_window_to_hlo(&w, r, 2);
  hlo_computation *add;
  L(hlo_build_scalar_computation(ctx->comp->module, HLO_OP_ADD, t, &add));
  L(hlo_build_reduce_window(ctx->comp, 1, &ones, &zero, &hw, add, &cnt));
  *out = cnt;
  return NULL;
}

static kiln_status lower_avgpool(op_lower_ctx *ctx) {
  hlo_instr *x, *zero, *sum, *cnt = NULL, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs a floating-point input");
  pool_geom g;
  TRY(pool_geometry(ctx, x, true, &g));
  int r = x->shape.rank;
  hlo_window hw = oplib_window_to_hlo(&g.win, r, 2);
  hlo_computation *add;
  L(hlo_build_scalar_computation(ctx->comp->module, HLO_OP_ADD, x->shape.type, &add));
  L(oplib_scalar(ctx->comp, x->shape.type, 0, &zero));
  L(hlo_build_reduce_window(ctx->comp, 1, &x, &zero, &hw, add, &sum));
  bool include_pad = graph_node_attr_int_or(ctx->node, "count_include_pad", 0) != 0;
  TRY(pool_counts(ctx, x, &g, include_pad, &cnt));
  L(oplib_binary(ctx->comp, HLO_OP_DIVIDE, sum, cnt, &y));
  return onnx_set_output(ctx, 0, y);
}

/* (sum |x|^p)^(1/p) over windows (zero padding). */
static kiln_status lp_of_sum(op_lower_ctx *ctx, hlo_instr *x, double p, bool pre, hlo_instr **out) {
  if (pre) {
    L(hlo_build_unary(ctx->comp, HLO_OP_ABS, x, &x));
    if (p == 2)
      L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, out));
    else if (p == 1)
      *out = x;
    else
      L(oplib_binary_scalar(ctx->comp, HLO_OP_POWER, x, p, out));
    return NULL;
  }
  if (p == 2)
    L(hlo_build_unary(ctx->comp, HLO_OP_SQRT, x, out));
  else if (p == 1)
    *out = x;
  else
    L(oplib_binary_scalar(ctx->comp, HLO_OP_POWER, x, 1.0 / p, out));
  return NULL;
}

static kiln_status lower_lppool(op_lower_ctx *ctx) {
  hlo_instr *x, *zero, *sum, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  pool_geom g;
  TRY(pool_geometry(ctx, x, true, &g));
  double p = (double)graph_node_attr_int_or(ctx->node, "p", 2);
  TRY(lp_of_sum(ctx, x, p, true, &x));
  hlo_window hw = oplib_window_to_hlo(&g.win, x->shape.rank, 2);
  hlo_computation *add;
  L(hlo_build_scalar_computation(ctx->comp->module, HLO_OP_ADD, x->shape.type, &add));
  L(oplib_scalar(ctx->comp, x->shape.type, 0, &zero));
  L(hlo_build_reduce_window(ctx->comp, 1, &x, &zero, &hw, add, &sum));
  TRY(lp_of_sum(ctx, sum, p, false, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_global_pool(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_rank_at_least(ctx, x, 2, "input X"));
  const char *base = graph_node_op_base(ctx->node);
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  for (int i = 2; i < x->shape.rank; i++) axes[n++] = i;
  if (strcmp(base, "GlobalMaxPool") == 0) {
    L(oplib_reduce(ctx->comp, OPLIB_REDUCE_MAX, x, n, axes, true, &y));
  } else if (strcmp(base, "GlobalAveragePool") == 0) {
    L(oplib_reduce_mean(ctx->comp, x, n, axes, true, &y));
  } else {
    double p = (double)graph_node_attr_int_or(ctx->node, "p", 2);
    TRY(lp_of_sum(ctx, x, p, true, &x));
    L(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, x, n, axes, true, &y));
    TRY(lp_of_sum(ctx, y, p, false, &y));
  }
  return onnx_set_output(ctx, 0, y);
}

/* ----------------------------------------------------------- normalisations ---- */

/* v ([C] or broadcastable) as a per-channel tensor along dim 1 of shape `like`. */
static kiln_status channel_param(op_lower_ctx *ctx, int pos, hlo_instr *like, hlo_instr **out) {
  hlo_instr *v;
  TRY(onnx_require_input(ctx, pos, &v));
  L(oplib_convert(ctx->comp, v, like->shape.type, &v));
  if (v->shape.rank == 1 && like->shape.rank >= 2 && v->shape.dims[0] == like->shape.dims[1]) {
    int64_t one = 1;
    L(hlo_build_broadcast(ctx->comp, v, like->shape.rank, like->shape.dims, &one, out));
    return NULL;
  }
  if (v->shape.rank == 1 && v->shape.dims[0] == 1) {
    L(oplib_broadcast_to(ctx->comp, v, like->shape.rank, like->shape.dims, out));
    return NULL;
  }
  return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %d must have shape [%lld]", pos,
                  (long long)(like->shape.rank >= 2 ? like->shape.dims[1] : 1));
}

/* BatchNormalization with training_mode=1 (opset 14+): normalises with the batch's own
 * statistics (mean and population variance over every axis but the channel axis 1) and
 * outputs the updated running statistics, input * momentum + batch * (1 - momentum). */
static kiln_status lower_batchnorm_training(op_lower_ctx *ctx, hlo_instr *x, double eps) {
  double momentum = graph_node_attr_float_or(ctx->node, "momentum", 0.9f);
  int64_t axes[HLO_MAX_RANK], one = 1;
  int n = 0;
  for (int i = 0; i < x->shape.rank; i++)
    if (i != 1) axes[n++] = i;
  hlo_instr *mean, *var, *d, *t, *scale, *bias, *y;
  L(oplib_reduce_mean(ctx->comp, x, n, axes, false, &mean)); /* [C] */
  L(hlo_build_broadcast(ctx->comp, mean, x->shape.rank, x->shape.dims, &one, &t));
  L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, x, t, &d));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, d, d, &t));
  L(oplib_reduce_mean(ctx->comp, t, n, axes, false, &var)); /* [C], population variance */
  L(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, var, eps, &t));
  L(hlo_build_unary(ctx->comp, HLO_OP_RSQRT, t, &t));
  L(hlo_build_broadcast(ctx->comp, t, x->shape.rank, x->shape.dims, &one, &t));
  TRY(channel_param(ctx, 1, x, &scale));
  TRY(channel_param(ctx, 2, x, &bias));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, d, t, &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, scale, &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, bias, &y));
  onnx_set_output(ctx, 0, y);
  hlo_instr *batch[2] = {mean, var};
  for (int i = 1; i < ctx->n_outputs && i < 3; i++) {
    hlo_instr *run, *a, *b;
    TRY(onnx_require_input(ctx, 2 + i, &run));
    L(oplib_convert(ctx->comp, run, x->shape.type, &run));
    if (run->shape.rank != 1 || run->shape.dims[0] != batch[i - 1]->shape.dims[0])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %d must have shape [%lld]", 2 + i,
                      (long long)batch[i - 1]->shape.dims[0]);
    L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, run, momentum, &a));
    L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, batch[i - 1], 1.0 - momentum, &b));
    L(hlo_build_binary(ctx->comp, HLO_OP_ADD, a, b, &a));
    onnx_set_output(ctx, i, a);
  }
  return NULL;
}

static kiln_status lower_batchnorm(op_lower_ctx *ctx) {
  hlo_instr *x, *scale, *bias, *mean, *var, *t, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_rank_at_least(ctx, x, 2, "input X"));
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs a floating-point input");
  double eps = graph_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
  if (graph_node_attr_int_or(ctx->node, "training_mode", 0) != 0) return lower_batchnorm_training(ctx, x, eps);
  TRY(channel_param(ctx, 1, x, &scale));
  TRY(channel_param(ctx, 2, x, &bias));
  TRY(channel_param(ctx, 3, x, &mean));
  TRY(channel_param(ctx, 4, x, &var));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, var, eps, &t));
  L(hlo_build_unary(ctx->comp, HLO_OP_SQRT, t, &t));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, scale, t, &t)); /* scale / sqrt(var + eps) */
  L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, x, mean, &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, t, &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, bias, &y));
  onnx_set_output(ctx, 0, y);
  /* Older opsets list running statistics as outputs: pass the inputs through. */
  for (int i = 1; i < ctx->n_outputs && i < 3; i++) {
    hlo_instr *v;
    TRY(onnx_require_input(ctx, 2 + i, &v));
    onnx_set_output(ctx, i, v);
  }
  return NULL;
}

/* Computes in f32 for half types (ONNX's stash_type), returning the compute input. */
static kiln_status widen(op_lower_ctx *ctx, hlo_instr *x, hlo_instr **out) {
  if (x->shape.type == HLO_F16 || x->shape.type == HLO_BF16) {
    L(hlo_build_convert(ctx->comp, x, HLO_F32, out));
    return NULL;
  }
  *out = x;
  return NULL;
}

static kiln_status lower_instancenorm(op_lower_ctx *ctx) {
  hlo_instr *x, *xw, *y, *scale, *bias;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  double eps = graph_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  for (int i = 2; i < x->shape.rank; i++) axes[n++] = i;
  TRY(widen(ctx, x, &xw));
  L(oplib_normalize(ctx->comp, xw, n, axes, eps, &y, NULL, NULL));
  TRY(channel_param(ctx, 1, y, &scale));
  TRY(channel_param(ctx, 2, y, &bias));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, scale, &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, bias, &y));
  L(oplib_convert(ctx->comp, y, x->shape.type, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_layernorm(op_lower_ctx *ctx) {
  hlo_instr *x, *xw, *y, *mean, *inv, *scale, *bias;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", -1), r, &axis));
  double eps = graph_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  for (int i = (int)axis; i < r; i++) axes[n++] = i;
  TRY(widen(ctx, x, &xw));
  L(oplib_normalize(ctx->comp, xw, n, axes, eps, &y, &mean, &inv));
  TRY(onnx_require_input(ctx, 1, &scale));
  L(oplib_convert(ctx->comp, scale, y->shape.type, &scale));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, y, scale, &y));
  bias = onnx_input(ctx, 2);
  if (!bias && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &bias));
  if (bias) {
    L(oplib_convert(ctx->comp, bias, y->shape.type, &bias));
    L(oplib_binary(ctx->comp, HLO_OP_ADD, y, bias, &y));
  }
  if (y->shape.rank != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "Scale/B broadcast beyond the input's rank");
  L(oplib_convert(ctx->comp, y, x->shape.type, &y));
  onnx_set_output(ctx, 0, y);
  onnx_set_output(ctx, 1, mean);
  return onnx_set_output(ctx, 2, inv);
}

static kiln_status lower_groupnorm(op_lower_ctx *ctx) {
  hlo_instr *x, *xw, *y, *scale, *bias;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  int r = x->shape.rank;
  int64_t groups = graph_node_attr_int_or(ctx->node, "num_groups", 0), ch = x->shape.dims[1];
  if (groups < 1 || ch % groups != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "num_groups %lld does not divide %lld channels",
                    (long long)groups, (long long)ch);
  double eps = graph_node_attr_float_or(ctx->node, "epsilon", 1e-5f);
  TRY(widen(ctx, x, &xw));
  int64_t gd[3] = {x->shape.dims[0], groups, 1}, axis2 = 2;
  for (int i = 1; i < r; i++) gd[2] *= x->shape.dims[i];
  gd[2] /= groups;
  L(hlo_build_reshape(ctx->comp, xw, 3, gd, &y));
  L(oplib_normalize(ctx->comp, y, 1, &axis2, eps, &y, NULL, NULL));
  L(hlo_build_reshape(ctx->comp, y, r, x->shape.dims, &y));
  TRY(onnx_require_input(ctx, 1, &scale));
  TRY(onnx_require_input(ctx, 2, &bias));
  hlo_instr *params[2] = {scale, bias};
  for (int k = 0; k < 2; k++) {
    hlo_instr *v = params[k];
    L(oplib_convert(ctx->comp, v, y->shape.type, &v));
    if (v->shape.rank != 1 || (v->shape.dims[0] != ch && v->shape.dims[0] != groups))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale and bias must have %lld or %lld entries",
                      (long long)ch, (long long)groups);
    if (v->shape.dims[0] != ch) {
      /* Per-group parameters (opset 18): repeat each over its channels. */
      int64_t d2[2] = {groups, ch / groups}, zero = 0;
      L(hlo_build_broadcast(ctx->comp, v, 2, d2, &zero, &v));
      L(hlo_build_reshape(ctx->comp, v, 1, &ch, &v));
    }
    int64_t one = 1;
    L(hlo_build_broadcast(ctx->comp, v, r, y->shape.dims, &one, &params[k]));
  }
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, params[0], &y));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, params[1], &y));
  L(oplib_convert(ctx->comp, y, x->shape.type, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_mvn(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int64_t axes[HLO_MAX_RANK] = {0, 2, 3};
  int n = 3;
  bool present;
  TRY(onnx_attr_ints(ctx->node, "axes", axes, HLO_MAX_RANK, &n, &present));
  if (!present) n = 3;
  L(oplib_normalize_axes(n, axes, x->shape.rank, true));
  L(oplib_normalize(ctx->comp, x, n, axes, 1e-9, &y, NULL, NULL));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_lrn(op_lower_ctx *ctx) {
  hlo_instr *x, *sq, *zero, *sum, *t, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_rank_at_least(ctx, x, 3, "input X"));
  int64_t size = graph_node_attr_int_or(ctx->node, "size", 0);
  if (size < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size must be positive");
  double alpha = graph_node_attr_float_or(ctx->node, "alpha", 1e-4f);
  double beta = graph_node_attr_float_or(ctx->node, "beta", 0.75f);
  double bias = graph_node_attr_float_or(ctx->node, "bias", 1.0f);
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, &sq));
  oplib_window w;
  memset(&w, 0, sizeof w);
  w.n = 1;
  w.kernel[0] = size;
  w.stride[0] = 1;
  w.dilation[0] = 1;
  w.pad_lo[0] = (size - 1) / 2;
  w.pad_hi[0] = size - 1 - (size - 1) / 2;
  hlo_window hw = oplib_window_to_hlo(&w, x->shape.rank, 1);
  hlo_computation *add;
  L(hlo_build_scalar_computation(ctx->comp->module, HLO_OP_ADD, x->shape.type, &add));
  L(oplib_scalar(ctx->comp, x->shape.type, 0, &zero));
  L(hlo_build_reduce_window(ctx->comp, 1, &sq, &zero, &hw, add, &sum));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, sum, alpha / (double)size, &t));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, t, bias, &t));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_POWER, t, beta, &t));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, x, t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* x / ||x||_p along axis. A vector whose norm is 0 (all zeros, or squares that underflow)
 * gives zeros rather than 0/0 = NaN, as in ONNX Runtime (`norm != 0 ? x / norm : 0`).
 * The norm is the plain sum, not rescaled by max|x| first, so squares that overflow
 * give x / inf, as in ONNX Runtime 1.30 (newer ONNX Runtime sources rescale). */
static kiln_status lower_lpnorm(op_lower_ctx *ctx) {
  hlo_instr *x, *n, *nb, *y, *zero, *is_zero;
  TRY(onnx_require_input(ctx, 0, &x));
  int64_t axis, p = graph_node_attr_int_or(ctx->node, "p", 2);
  if (p != 1 && p != 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "p must be 1 or 2, got %lld", (long long)p);
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", -1), x->shape.rank, &axis));
  TRY(lp_of_sum(ctx, x, (double)p, true, &n));
  L(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, n, 1, &axis, true, &n));
  TRY(lp_of_sum(ctx, n, (double)p, false, &n));
  L(oplib_broadcast_to(ctx->comp, n, x->shape.rank, x->shape.dims, &nb));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, x, nb, &y));
  L(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, 0, &zero));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, nb, zero, &is_zero));
  L(hlo_build_select(ctx->comp, is_zero, zero, y, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ---------------------------------------------------------- softmax family ---- */

/* Applies softmax/logsoftmax/hardmax along `axis` of x. */
static kiln_status softmax_along(op_lower_ctx *ctx, const char *base, hlo_instr *x, int64_t axis, hlo_instr **out) {
  if (strcmp(base, "Hardmax") == 0) {
    hlo_instr *am, *io, *amb, *eq;
    L(oplib_argminmax(ctx->comp, x, axis, true, false, false, HLO_S64, &am));
    hlo_shape is = shape_make(HLO_S64, x->shape.rank, x->shape.dims);
    L(hlo_build_iota(ctx->comp, &is, axis, &io));
    int64_t bd[HLO_MAX_RANK];
    int nb = 0;
    for (int i = 0; i < x->shape.rank; i++)
      if (i != axis) bd[nb++] = i;
    L(hlo_build_broadcast(ctx->comp, am, x->shape.rank, x->shape.dims, nb ? bd : NULL, &amb));
    L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, io, amb, &eq));
    L(hlo_build_convert(ctx->comp, eq, x->shape.type, out));
    return NULL;
  }
  L(oplib_softmax(ctx->comp, x, axis, strcmp(base, "LogSoftmax") == 0, out));
  return NULL;
}

static kiln_status lower_softmax(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  const char *base = graph_node_op_base(ctx->node);
  int r = x->shape.rank;
  if (r == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  bool legacy = ctx->opset > 0 && ctx->opset < 13;
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", legacy ? 1 : -1), r, &axis));
  if (!legacy) {
    TRY(softmax_along(ctx, base, x, axis, &y));
    return onnx_set_output(ctx, 0, y);
  }
  /* Before opset 13: coerce to [prod(d<axis), prod(d>=axis)] and act on dim 1. */
  int64_t d2[2] = {1, 1};
  for (int i = 0; i < r; i++) d2[i < axis ? 0 : 1] *= x->shape.dims[i];
  hlo_instr *x2;
  L(oplib_reshape(ctx->comp, x, 2, d2, &x2));
  TRY(softmax_along(ctx, base, x2, 1, &y));
  L(oplib_reshape(ctx->comp, y, r, x->shape.dims, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------ shape-only ---- */

static kiln_status lower_flatten(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  int64_t axis = graph_node_attr_int_or(ctx->node, "axis", 1);
  if (axis < -r || axis > r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  int64_t d2[2] = {1, 1};
  for (int i = 0; i < r; i++) d2[i < axis ? 0 : 1] *= x->shape.dims[i];
  L(hlo_build_reshape(ctx->comp, x, 2, d2, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ----------------------------------------------------------- contractions ---- */

static kiln_status lower_matmul(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *y;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  L(oplib_matmul(ctx->comp, a, b, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_gemm(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *y;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  if (a->shape.rank != 2 || b->shape.rank != 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "A and B must be matrices (ranks %d and %d)", a->shape.rank,
                    b->shape.rank);
  bool ta = graph_node_attr_int_or(ctx->node, "transA", 0) != 0;
  bool tb = graph_node_attr_int_or(ctx->node, "transB", 0) != 0;
  double alpha = graph_node_attr_float_or(ctx->node, "alpha", 1.0f);
  double beta = graph_node_attr_float_or(ctx->node, "beta", 1.0f);
  int64_t lc = ta ? 0 : 1, rc = tb ? 1 : 0;
  hlo_dot_dnums dn = {.lhs_contracting = {1, &lc}, .rhs_contracting = {1, &rc}};
  L(hlo_build_dot(ctx->comp, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &y));
  if (alpha != 1) L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, y, alpha, &y));
  hlo_instr *c = onnx_input(ctx, 2);
  if (!c && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &c));
  if (c && beta != 0) {
    L(oplib_convert(ctx->comp, c, y->shape.type, &c));
    if (beta != 1) L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, c, beta, &c));
    L(oplib_broadcast_to(ctx->comp, c, 2, y->shape.dims, &c));
    L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, c, &y));
  }
  return onnx_set_output(ctx, 0, y);
}

/* Einsum by pairwise contraction: labels are ints (letters 0..51, ellipsis dims 100+).
 * Each step sums away labels no later operand or the output needs, then contracts
 * shared labels with a dot (batch = shared and still needed). */
typedef struct ein_term {
  int n;
  int labels[HLO_MAX_RANK];
} ein_term;

static int ein_find(const ein_term *t, int label) {
  for (int i = 0; i < t->n; i++)
    if (t->labels[i] == label) return i;
  return -1;
}

static int ein_letter(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
  return -1;
}

/* Parses one term; ellipsis expands to `ell` labels 100+(E-ell)..100+E-1. */
static kiln_status ein_parse_term(const graph_node *node, const char *s, size_t len, int rank, int max_ell,
                                  ein_term *t, int *ell_out) {
  int letters = 0;
  bool has_ell = false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || has_ell)
        return op_error(node, KILN_INVALID_ARGUMENT, "bad ellipsis in equation");
      has_ell = true;
      i += 2;
    } else if (ein_letter(s[i]) >= 0) {
      letters++;
    } else {
      return op_error(node, KILN_INVALID_ARGUMENT, "unexpected character '%c' in equation", s[i]);
    }
  }
  int ell = has_ell ? rank - letters : 0;
  if (rank >= 0 && (ell < 0 || (!has_ell && letters != rank)))
    return op_error(node, KILN_INVALID_ARGUMENT, "equation term \"%.*s\" does not match an operand of rank %d",
                    (int)len, s, rank);
  if (rank < 0) ell = max_ell; /* output term */
  if (letters + ell > HLO_MAX_RANK) return op_error(node, KILN_INVALID_ARGUMENT, "equation term is too long");
  t->n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      for (int j = 0; j < ell; j++) t->labels[t->n++] = 100 + (max_ell - ell) + j;
      i += 2;
    } else {
      t->labels[t->n++] = ein_letter(s[i]);
    }
  }
  if (ell_out) *ell_out = ell;
  return NULL;
}

static bool ein_needed(int label, const ein_term *terms, int from, int n_terms, const ein_term *out) {
  if (ein_find(out, label) >= 0) return true;
  for (int k = from; k < n_terms; k++)
    if (ein_find(&terms[k], label) >= 0) return true;
  return false;
}

/* Sums away labels of (x, t) that `keep` rejects. */
static kiln_status ein_sum_unneeded(op_lower_ctx *ctx, hlo_instr **x, ein_term *t, const ein_term *terms, int from,
                                    int n_terms, const ein_term *out, const ein_term *partner) {
  int64_t axes[HLO_MAX_RANK];
  int na = 0;
  ein_term kept = {0};
  for (int i = 0; i < t->n; i++) {
    int l = t->labels[i];
    if (ein_needed(l, terms, from, n_terms, out) || (partner && ein_find(partner, l) >= 0))
      kept.labels[kept.n++] = l;
    else
      axes[na++] = i;
  }
  if (na) {
    L(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, *x, na, axes, false, x));
    *t = kept;
  }
  return NULL;
}

/* A label repeated within one term ("ii", "bii->bi") takes the diagonal: positions A < B
 * of x (equal sizes) keep the elements whose two indices agree, then B is summed away,
 * and the term keeps the label once, at A. select(iota_A == iota_B, x, 0) then a sum
 * adds exactly one element to zeros, so the diagonal is exact. */
static kiln_status ein_diagonals(op_lower_ctx *ctx, hlo_instr **x, ein_term *t) {
  for (int b = 1; b < t->n; b++) {
    int a = 0;
    while (a < b && t->labels[a] != t->labels[b]) a++;
    if (a == b) continue;
    const hlo_shape *s = &(*x)->shape;
    if (s->dims[a] != s->dims[b])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "a label repeated within a term has sizes %lld and %lld (dims %d and %d)",
                      (long long)s->dims[a], (long long)s->dims[b], a, b);
    hlo_shape is = *s;
    is.type = HLO_S32;
    hlo_instr *ia, *ib, *eq, *zero, *kept;
    L(hlo_build_iota(ctx->comp, &is, a, &ia));
    L(hlo_build_iota(ctx->comp, &is, b, &ib));
    L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, ia, ib, &eq));
    L(hlo_build_constant_scalar(ctx->comp, s->type, 0, &zero));
    L(hlo_build_broadcast(ctx->comp, zero, s->rank, s->dims, NULL, &zero));
    L(hlo_build_select(ctx->comp, eq, *x, zero, &kept));
    int64_t axis = b;
    L(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, kept, 1, &axis, false, x));
    for (int k = b; k + 1 < t->n; k++) t->labels[k] = t->labels[k + 1];
    t->n--;
    b = 0; /* rescan: the term changed */
  }
  return NULL;
}

static kiln_status lower_einsum(op_lower_ctx *ctx) {
  const char *eq_raw = onnx_attr_string(ctx->node, "equation", NULL);
  if (!eq_raw) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "equation attribute is missing");
  char eq[512];
  size_t len = 0;
  for (const char *p = eq_raw; *p; p++)
    if (*p != ' ') {
      if (len + 1 >= sizeof eq) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "equation is too long");
      eq[len++] = *p;
    }
  eq[len] = 0;
  int n = ctx->n_inputs;
  if (n < 1 || n > 16) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs 1 to 16 inputs");
  hlo_instr *xs[16];
  for (int i = 0; i < n; i++) TRY(onnx_require_input(ctx, i, &xs[i]));
  char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
  /* Split the left side by commas. */
  size_t starts[16], lens[16];
  int nt = 0;
  size_t s0 = 0;
  for (size_t i = 0; i <= lhs_len; i++) {
    if (i == lhs_len || eq[i] == ',') {
      if (nt >= 16) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "too many terms");
      starts[nt] = s0;
      lens[nt++] = i - s0;
      s0 = i + 1;
    }
  }
  if (nt != n)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "equation has %d input terms for %d inputs", nt, n);
  ein_term terms[16], out;
  int max_ell = 0;
  for (int i = 0; i < n; i++) {
    int ell;
    TRY(ein_parse_term(ctx->node, eq + starts[i], lens[i], xs[i]->shape.rank, 0, &terms[i], &ell));
    if (ell > max_ell) max_ell = ell;
  }
  for (int i = 0; i < n; i++)
    TRY(ein_parse_term(ctx->node, eq + starts[i], lens[i], xs[i]->shape.rank, max_ell, &terms[i], NULL));
  /* Occurrences of each label as written (an implicit output keeps the labels written
   * once, so "ii" is a trace); then repeated labels within a term become diagonals, and
   * label sizes are checked (1 broadcasts). */
  int occurrences[52] = {0};
  for (int i = 0; i < n; i++)
    for (int j = 0; j < terms[i].n; j++)
      if (terms[i].labels[j] < 52) occurrences[terms[i].labels[j]]++;
  for (int i = 0; i < n; i++) TRY(ein_diagonals(ctx, &xs[i], &terms[i]));
  int64_t size[200];
  for (int i = 0; i < 200; i++) size[i] = -1;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < terms[i].n; j++) {
      int l = terms[i].labels[j];
      int64_t d = xs[i]->shape.dims[j];
      if (size[l] < 0 || size[l] == 1)
        size[l] = d;
      else if (d != 1 && d != size[l])
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "label sizes %lld and %lld differ", (long long)size[l],
                        (long long)d);
    }
  if (arrow) {
    TRY(ein_parse_term(ctx->node, arrow + 2, strlen(arrow + 2), -1, max_ell, &out, NULL));
    for (int j = 0; j < out.n; j++)
      if (size[out.labels[j]] < 0)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output label does not appear in the inputs");
  } else {
    /* Implicit output: ellipsis dims, then labels seen once, alphabetically. */
    out.n = 0;
    for (int j = 0; j < max_ell; j++) out.labels[out.n++] = 100 + j;
    for (int l = 0; l < 52; l++) {
      if (occurrences[l] == 1) {
        if (out.n >= HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output rank too large");
        out.labels[out.n++] = l;
      }
    }
  }
  /* Broadcast size-1 dims to their label's size. */
  for (int i = 0; i < n; i++) {
    int64_t dims[HLO_MAX_RANK];
    for (int j = 0; j < terms[i].n; j++) dims[j] = size[terms[i].labels[j]];
    L(oplib_broadcast_to(ctx->comp, xs[i], terms[i].n, dims, &xs[i]));
  }
  hlo_instr *cur = xs[0];
  ein_term ct = terms[0];
  for (int i = 1; i < n; i++) {
    ein_term rt = terms[i];
    hlo_instr *rhs = xs[i];
    TRY(ein_sum_unneeded(ctx, &cur, &ct, terms, i + 1, n, &out, &rt));
    TRY(ein_sum_unneeded(ctx, &rhs, &rt, terms, i + 1, n, &out, &ct));
    int64_t lb[HLO_MAX_RANK], rb[HLO_MAX_RANK], lcd[HLO_MAX_RANK], rcd[HLO_MAX_RANK];
    int nb = 0, nc = 0;
    ein_term res = {0};
    for (int j = 0; j < ct.n; j++) {
      int l = ct.labels[j], k = ein_find(&rt, l);
      if (k < 0) continue;
      if (ein_needed(l, terms, i + 1, n, &out)) {
        lb[nb] = j;
        rb[nb++] = k;
        res.labels[res.n++] = l;
      } else {
        lcd[nc] = j;
        rcd[nc++] = k;
      }
    }
    for (int j = 0; j < ct.n; j++)
      if (ein_find(&rt, ct.labels[j]) < 0) res.labels[res.n++] = ct.labels[j];
    for (int j = 0; j < rt.n; j++)
      if (ein_find(&ct, rt.labels[j]) < 0) res.labels[res.n++] = rt.labels[j];
    if (res.n > HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "intermediate rank too large");
    hlo_dot_dnums dn = {.lhs_batch = {nb, lb}, .rhs_batch = {nb, rb}, .lhs_contracting = {nc, lcd},
                        .rhs_contracting = {nc, rcd}};
    L(hlo_build_dot(ctx->comp, cur, rhs, &dn, HLO_BUILD_DEFAULT_TYPE, &cur));
    ct = res;
  }
  TRY(ein_sum_unneeded(ctx, &cur, &ct, terms, n, n, &out, NULL));
  if (ct.n != out.n) return op_error(ctx->node, KILN_INTERNAL, "einsum labels do not match the output");
  int64_t perm[HLO_MAX_RANK];
  for (int j = 0; j < out.n; j++) {
    int k = ein_find(&ct, out.labels[j]);
    if (k < 0) return op_error(ctx->node, KILN_INTERNAL, "einsum output label lost");
    perm[j] = k;
  }
  L(oplib_transpose(ctx->comp, cur, perm, &cur));
  return onnx_set_output(ctx, 0, cur);
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_nn_defs[] = {
    {"onnx.Conv", 0, 0, lower_conv, NULL},
    {"onnx.ConvTranspose", 0, 0, lower_conv_transpose, NULL},
    {"onnx.MaxPool", 0, 0, lower_maxpool, NULL},
    {"onnx.AveragePool", 0, 0, lower_avgpool, NULL},
    {"onnx.LpPool", 0, 0, lower_lppool, NULL},
    {"onnx.GlobalAveragePool", 0, 0, lower_global_pool, NULL},
    {"onnx.GlobalMaxPool", 0, 0, lower_global_pool, NULL},
    {"onnx.GlobalLpPool", 0, 0, lower_global_pool, NULL},
    {"onnx.BatchNormalization", 0, 0, lower_batchnorm, NULL},
    {"onnx.InstanceNormalization", 0, 0, lower_instancenorm, NULL},
    {"onnx.LayerNormalization", 0, 0, lower_layernorm, NULL},
    {"onnx.GroupNormalization", 0, 0, lower_groupnorm, NULL},
    {"onnx.MeanVarianceNormalization", 0, 0, lower_mvn, NULL},
    {"onnx.LRN", 0, 0, lower_lrn, NULL},
    {"onnx.LpNormalization", 0, 0, lower_lpnorm, NULL},
    {"onnx.Softmax", 0, 0, lower_softmax, NULL},
    {"onnx.LogSoftmax", 0, 0, lower_softmax, NULL},
    {"onnx.Hardmax", 0, 0, lower_softmax, NULL},
    {"onnx.Flatten", 0, 0, lower_flatten, NULL},
    {"onnx.MatMul", 0, 0, lower_matmul, NULL},
    {"onnx.Gemm", 0, 0, lower_gemm, NULL},
    {"onnx.Einsum", 0, 0, lower_einsum, NULL},
};

const op_table onnx_nn_ops = {"onnx.nn", (int)(sizeof onnx_nn_defs / sizeof onnx_nn_defs[0]), onnx_nn_defs};
