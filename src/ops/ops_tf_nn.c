/* TensorFlow neural-network ops: convolutions (Conv2D/3D, depthwise, the transposed
 * Conv2DBackpropInput), MatMul and BatchMatMul, FusedBatchNorm, pooling, softmax, LRN,
 * Prelu, and the fused forms grappler and the TF.js converter emit (_FusedConv2D,
 * FusedDepthwiseConv2dNative, _FusedMatMul).
 *
 * Layouts stay as the graph has them: NHWC and NCHW become convolution dimension
 * numbers and window positions instead of transposes, and filters keep TF's
 * [spatial..., in, out] order (HWIO) as the kernel layout. Windows follow TF's
 * GetWindowedOutputSize through tf_window (ops_tf_common.c). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

/* ------------------------------------------------------------ convolutions ---- */

/* Convolution dimension numbers for a channels-last or channels-first operand with a
 * [spatial..., in, out] filter (transposed: in and out swapped). */
static hlo_conv_dnums conv_dnums(int n_spatial, bool channels_first, bool transposed) {
  hlo_conv_dnums d;
  memset(&d, 0, sizeof d);
  d.n_spatial = n_spatial;
  tf_layout_dims(n_spatial, channels_first, &d.input_batch, &d.input_feature, d.input_spatial);
  tf_layout_dims(n_spatial, channels_first, &d.output_batch, &d.output_feature, d.output_spatial);
  for (int i = 0; i < n_spatial; i++) d.kernel_spatial[i] = i;
  d.kernel_input_feature = transposed ? n_spatial + 1 : n_spatial;
  d.kernel_output_feature = transposed ? n_spatial : n_spatial + 1;
  return d;
}

static kiln_status check_rank(const graph_node *node, const char *what, const hlo_instr *x, int rank) {
  tf_shape_buf b;
  if (x->shape.rank != rank)
    return op_error(node, KILN_INVALID_ARGUMENT, "%s %s must have rank %d", what, tf_shape_text(&x->shape, &b), rank);
  return NULL;
}

/* Forward convolution: Conv2D/Conv3D (grouped when the input has a multiple of the
 * filter's input channels) and DepthwiseConv2dNative ([H, W, C, M] filter: C groups of
 * M outputs each, channel c's outputs at c*M..c*M+M-1). */
static kiln_status conv_forward(op_lower_ctx *ctx, int n_spatial, bool depthwise, hlo_instr *x, hlo_instr *filter,
                                hlo_instr **out) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  bool cf = false;
  int rank = n_spatial + 2;
  TRY(tf_data_format(node, &cf));
  TRY(check_rank(node, "input", x, rank));
  TRY(check_rank(node, "filter", filter, rank));
  int64_t batch, feature, spatial[HLO_MAX_RANK], in_spatial[HLO_MAX_RANK], kernel[HLO_MAX_RANK];
  tf_layout_dims(n_spatial, cf, &batch, &feature, spatial);
  for (int i = 0; i < n_spatial; i++) {
    in_spatial[i] = x->shape.dims[spatial[i]];
    kernel[i] = filter->shape.dims[i];
  }
  int64_t in_c = x->shape.dims[feature], f_in = filter->shape.dims[n_spatial];
  int64_t groups = 1;
  if (depthwise) {
    if (f_in != in_c)
      return op_error(node, KILN_INVALID_ARGUMENT, "filter has %lld input channels, input has %lld", (long long)f_in,
                      (long long)in_c);
    int64_t dims[HLO_MAX_RANK];
    for (int i = 0; i < n_spatial; i++) dims[i] = kernel[i];
    dims[n_spatial] = 1;
    dims[n_spatial + 1] = f_in * filter->shape.dims[n_spatial + 1];
    T(hlo_build_reshape(c, filter, rank, dims, &filter));
    groups = in_c;
  } else {
    if (f_in <= 0 || in_c % f_in != 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "input channels %lld are not a multiple of filter channels %lld",
                      (long long)in_c, (long long)f_in);
    groups = in_c / f_in;
    if (groups > 1 && filter->shape.dims[n_spatial + 1] % groups != 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "output channels %lld are not a multiple of the %lld groups",
                      (long long)filter->shape.dims[n_spatial + 1], (long long)groups);
  }
  oplib_window w;
  TRY(tf_window(node, n_spatial, cf, NULL, kernel, in_spatial, &w));
  hlo_window hw = oplib_conv_window(&w);
  hlo_conv_dnums dn = conv_dnums(n_spatial, cf, false);
  T(hlo_build_convolution(c, x, filter, &hw, &dn, groups, 1, HLO_BUILD_DEFAULT_TYPE, out));
  return NULL;
}

static kiln_status lower_conv(op_lower_ctx *ctx, int n_spatial, bool depthwise) {
  hlo_instr *x, *f, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &f));
  TRY(conv_forward(ctx, n_spatial, depthwise, x, f, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Conv2D(op_lower_ctx *ctx) { return lower_conv(ctx, 2, false); }
static kiln_status lower_Conv3D(op_lower_ctx *ctx) { return lower_conv(ctx, 3, false); }
static kiln_status lower_DepthwiseConv2dNative(op_lower_ctx *ctx) { return lower_conv(ctx, 2, true); }

/* The gradient of a convolution with respect to its input, i.e. a transposed
 * convolution: out_backprop dilated by the strides, convolved with the spatially
 * reversed filter (in/out swapped), padded so that the forward window's padding is
 * undone. input_sizes (input 0) gives the forward input's shape (all dims, or only the
 * spatial ones). */
static kiln_status lower_conv_backprop_input(op_lower_ctx *ctx, int n_spatial) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *filter, *dy, *rev, *r;
  bool cf = false;
  int rank = n_spatial + 2;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 1, &filter));
  TRY(tf_input(ctx, 2, &dy));
  TRY(tf_data_format(node, &cf));
  TRY(check_rank(node, "filter", filter, rank));
  TRY(check_rank(node, "out_backprop", dy, rank));
  int64_t sizes[TF_MAX_INTS];
  int n_sizes = 0;
  TRY(tf_const_ints(ctx, 0, "input_sizes", sizes, TF_MAX_INTS, &n_sizes));
  int64_t batch, feature, spatial[HLO_MAX_RANK], in_spatial[HLO_MAX_RANK], kernel[HLO_MAX_RANK];
  tf_layout_dims(n_spatial, cf, &batch, &feature, spatial);
  for (int i = 0; i < n_spatial; i++) {
    if (n_sizes == rank)
      in_spatial[i] = sizes[spatial[i]];
    else if (n_sizes == n_spatial)
      in_spatial[i] = sizes[i];
    else
      return op_error(node, KILN_INVALID_ARGUMENT, "input_sizes has %d entries, expected %d or %d", n_sizes, rank,
                      n_spatial);
    if (in_spatial[i] < 0) return op_error(node, KILN_INVALID_ARGUMENT, "input_sizes must not be negative");
    kernel[i] = filter->shape.dims[i];
  }
  int64_t in_c = filter->shape.dims[n_spatial];
  if (n_sizes == rank && (sizes[feature] != in_c || sizes[batch] != dy->shape.dims[batch]))
    return op_error(node, KILN_INVALID_ARGUMENT,
                    "input_sizes (batch %lld, channels %lld) disagree with out_backprop batch %lld / filter channels "
                    "%lld",
                    (long long)sizes[batch], (long long)sizes[feature], (long long)dy->shape.dims[batch],
                    (long long)in_c);
  if (filter->shape.dims[n_spatial + 1] != dy->shape.dims[feature])
    return op_error(node, KILN_INVALID_ARGUMENT, "filter has %lld output channels, out_backprop has %lld",
                    (long long)filter->shape.dims[n_spatial + 1], (long long)dy->shape.dims[feature]);
  oplib_window w;
  TRY(tf_window(node, n_spatial, cf, NULL, kernel, in_spatial, &w));
  int64_t fwd_out[HLO_MAX_RANK];
  oplib_window_out_dims(&w, in_spatial, fwd_out);
  hlo_window hw;
  memset(&hw, 0, sizeof hw);
  hw.rank = n_spatial;
  for (int i = 0; i < n_spatial; i++) {
    if (fwd_out[i] != dy->shape.dims[spatial[i]])
      return op_error(node, KILN_INVALID_ARGUMENT,
                      "out_backprop spatial dim %d is %lld, the forward convolution of input size %lld gives %lld", i,
                      (long long)dy->shape.dims[spatial[i]], (long long)in_spatial[i], (long long)fwd_out[i]);
    int64_t k_eff = (kernel[i] - 1) * w.dilation[i] + 1;
    int64_t dilated = fwd_out[i] > 0 ? (fwd_out[i] - 1) * w.stride[i] + 1 : 0;
    hlo_window_dim *d = &hw.dims[i];
    d->size = kernel[i];
    d->stride = 1;
    d->lhs_dilate = w.stride[i];
    d->rhs_dilate = w.dilation[i];
    d->pad_lo = k_eff - 1 - w.pad_lo[i];
    d->pad_hi = in_spatial[i] + k_eff - 1 - dilated - d->pad_lo;
  }
  int64_t rev_dims[HLO_MAX_RANK];
  for (int i = 0; i < n_spatial; i++) rev_dims[i] = i;
  T(hlo_build_reverse(c, filter, n_spatial, rev_dims, &rev));
  hlo_conv_dnums dn = conv_dnums(n_spatial, cf, true);
  T(hlo_build_convolution(c, dy, rev, &hw, &dn, 1, 1, HLO_BUILD_DEFAULT_TYPE, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Conv2DBackpropInput(op_lower_ctx *ctx) { return lower_conv_backprop_input(ctx, 2); }
static kiln_status lower_Conv3DBackpropInputV2(op_lower_ctx *ctx) { return lower_conv_backprop_input(ctx, 3); }

/* ------------------------------------------------------------ contractions ---- */

static kiln_status matmul2d(hlo_computation *c, hlo_instr *a, hlo_instr *b, bool ta, bool tb, hlo_instr **out) {
  if (a->shape.rank != 2 || b->shape.rank != 2)
    return ERR_INVALID("MatMul operands must be 2-D (ranks %d and %d)", a->shape.rank, b->shape.rank);
  int64_t lc = ta ? 0 : 1, rc = tb ? 1 : 0;
  if (a->shape.dims[lc] != b->shape.dims[rc])
    return ERR_INVALID("MatMul: inner dimensions %lld and %lld differ", (long long)a->shape.dims[lc],
                       (long long)b->shape.dims[rc]);
  hlo_dot_dnums dn = {.lhs_contracting = {1, &lc}, .rhs_contracting = {1, &rc}};
  return hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, out);
}

static kiln_status lower_MatMul(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &a));
  TRY(tf_input(ctx, 1, &b));
  bool ta = graph_node_attr_bool_or(ctx->node, "transpose_a", false);
  bool tb = graph_node_attr_bool_or(ctx->node, "transpose_b", false);
  T(matmul2d(ctx->comp, a, b, ta, tb, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* BatchMatMul: [..., M, K] x [..., K, N] with adj_x / adj_y transposing the last two
 * dims; V2/V3 broadcast the batch dims, V1 requires them equal. */
static kiln_status lower_batch_matmul(op_lower_ctx *ctx, bool broadcast) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *a, *b, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &a));
  TRY(tf_input(ctx, 1, &b));
  bool adj_x = graph_node_attr_bool_or(node, "adj_x", false), adj_y = graph_node_attr_bool_or(node, "adj_y", false);
  hlo_type tout;
  TRY(tf_attr_hlo_type(node, "Tout", a->shape.type, &tout));
  if (a->shape.type != tout) T(oplib_convert(c, a, tout, &a));
  if (b->shape.type != tout) T(oplib_convert(c, b, tout, &b));
  int ra = a->shape.rank, rb = b->shape.rank;
  if (ra < 2 || rb < 2) return op_error(node, KILN_INVALID_ARGUMENT, "operands must have rank >= 2 (%d, %d)", ra, rb);
  int nb = 0;
  int64_t bdims[HLO_MAX_RANK];
  if (broadcast) {
    T(oplib_broadcast_shape(ra - 2, a->shape.dims, rb - 2, b->shape.dims, &nb, bdims));
  } else {
    tf_shape_buf s1, s2;
    if (ra != rb || memcmp(a->shape.dims, b->shape.dims, (size_t)(ra - 2) * sizeof(int64_t)) != 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "batch dimensions of %s and %s differ",
                      tf_shape_text(&a->shape, &s1), tf_shape_text(&b->shape, &s2));
    nb = ra - 2;
    memcpy(bdims, a->shape.dims, (size_t)nb * sizeof(int64_t));
  }
  int64_t da[HLO_MAX_RANK], db[HLO_MAX_RANK];
  memcpy(da, bdims, (size_t)nb * sizeof(int64_t));
  memcpy(db, bdims, (size_t)nb * sizeof(int64_t));
  da[nb] = a->shape.dims[ra - 2];
  da[nb + 1] = a->shape.dims[ra - 1];
  db[nb] = b->shape.dims[rb - 2];
  db[nb + 1] = b->shape.dims[rb - 1];
  T(oplib_broadcast_to(c, a, nb + 2, da, &a));
  T(oplib_broadcast_to(c, b, nb + 2, db, &b));
  int64_t batch[HLO_MAX_RANK], lc = adj_x ? nb : nb + 1, rc = adj_y ? nb + 1 : nb;
  for (int i = 0; i < nb; i++) batch[i] = i;
  if (a->shape.dims[lc] != b->shape.dims[rc])
    return op_error(node, KILN_INVALID_ARGUMENT, "inner dimensions %lld and %lld differ", (long long)a->shape.dims[lc],
                    (long long)b->shape.dims[rc]);
  hlo_dot_dnums dn = {.lhs_batch = {nb, batch}, .rhs_batch = {nb, batch}, .lhs_contracting = {1, &lc},
                      .rhs_contracting = {1, &rc}};
  T(hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_BatchMatMul(op_lower_ctx *ctx) { return lower_batch_matmul(ctx, false); }
static kiln_status lower_BatchMatMulV2(op_lower_ctx *ctx) { return lower_batch_matmul(ctx, true); }

/* ------------------------------------------------------------ normalization ---- */

/* v broadcast along x's channel dim. */
static kiln_status along_channel(hlo_computation *c, hlo_instr *v, const hlo_instr *x, int64_t channel,
                                 hlo_instr **out) {
  if (v->shape.rank != 1 || v->shape.dims[0] != x->shape.dims[channel])
    return ERR_INVALID("a per-channel parameter of shape [%lld] was expected, got rank %d with %lld entries",
                       (long long)x->shape.dims[channel], v->shape.rank, (long long)(v->shape.rank ? v->shape.dims[0] : 1));
  return hlo_build_broadcast(c, v, x->shape.rank, x->shape.dims, &channel, out);
}

/* Inference batch norm as TF computes it: (x - mean) * (rsqrt(var + eps) * scale) +
 * offset, in the parameters' type (f32 for half inputs). */
static kiln_status batch_norm_infer(hlo_computation *c, hlo_instr *x, hlo_instr *scale, hlo_instr *offset,
                                    hlo_instr *mean, hlo_instr *var, double eps, int64_t channel, hlo_instr **out) {
  hlo_type xt = x->shape.type, ut = scale->shape.type;
  hlo_instr *ve, *rs, *f, *fb, *mb, *ob, *xc, *xs, *y;
  if (xt != ut) TRY(hlo_build_convert(c, x, ut, &x));
  TRY(oplib_binary_scalar(c, HLO_OP_ADD, var, eps, &ve));
  TRY(hlo_build_unary(c, HLO_OP_RSQRT, ve, &rs));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, rs, scale, &f));
  TRY(along_channel(c, f, x, channel, &fb));
  TRY(along_channel(c, mean, x, channel, &mb));
  TRY(along_channel(c, offset, x, channel, &ob));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, x, mb, &xc));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, xc, fb, &xs));
  TRY(hlo_build_binary(c, HLO_OP_ADD, xs, ob, &y));
  return oplib_convert(c, y, xt, out);
}

static kiln_status lower_FusedBatchNorm(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *scale, *offset, *mean, *var, *y;
  TRY(tf_check_inputs(ctx, 5, 5));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &scale));
  TRY(tf_input(ctx, 2, &offset));
  TRY(tf_input(ctx, 3, &mean));
  TRY(tf_input(ctx, 4, &var));
  bool cf = false;
  TRY(tf_data_format(node, &cf));
  if (x->shape.rank < 2) return op_error(node, KILN_INVALID_ARGUMENT, "input must have rank >= 2");
  int64_t channel = cf ? 1 : x->shape.rank - 1;
  double eps = graph_node_attr_float_or(node, "epsilon", 1e-4f);
  /* TF's default is training mode, which normalises with batch statistics and takes
   * empty mean/variance inputs. Converted inference graphs sometimes keep the default
   * while feeding the moving statistics (TF.js then uses them, as do we): batch
   * statistics only when asked for and no statistics are given. */
  bool training = graph_node_attr_bool_or(node, "is_training", true) && shape_elements(&mean->shape) == 0;
  hlo_instr *out_mean = mean, *out_var = var;
  if (training) {
    /* Batch statistics over every dim but the channel; the variance used to normalise
     * is the biased one, the one reported is Bessel-corrected (as TF's kernel). */
    hlo_type ut = scale->shape.type;
    hlo_instr *xu, *bm, *bmb, *d, *d2, *bv, *bv_unbiased;
    int64_t axes[HLO_MAX_RANK];
    int na = 0;
    for (int i = 0; i < x->shape.rank; i++)
      if (i != channel) axes[na++] = i;
    int64_t count = 1;
    for (int i = 0; i < na; i++) count *= x->shape.dims[axes[i]];
    T(oplib_convert(c, x, ut, &xu));
    T(oplib_reduce_mean(c, xu, na, axes, false, &bm));
    T(along_channel(c, bm, xu, channel, &bmb));
    T(hlo_build_binary(c, HLO_OP_SUBTRACT, xu, bmb, &d));
    T(hlo_build_binary(c, HLO_OP_MULTIPLY, d, d, &d2));
    T(oplib_reduce_mean(c, d2, na, axes, false, &bv));
    T(oplib_binary_scalar(c, HLO_OP_MULTIPLY, bv, count > 1 ? (double)count / (double)(count - 1) : 1.0,
                          &bv_unbiased));
    mean = bm;
    var = bv;
    out_mean = bm;
    out_var = bv_unbiased;
  }
  T(batch_norm_infer(c, x, scale, offset, mean, var, eps, channel, &y));
  tf_set_output(ctx, 0, y);
  tf_set_output(ctx, 1, out_mean);
  tf_set_output(ctx, 2, out_var);
  tf_set_output(ctx, 3, mean);
  tf_set_output(ctx, 4, var);
  if (ctx->n_outputs > 5) { /* V3's reserve_space_3: nothing to reserve here */
    hlo_instr *empty;
    T(oplib_full(c, scale->shape.type, 0, 1, (int64_t[]){0}, &empty));
    tf_set_output(ctx, 5, empty);
  }
  return NULL;
}

/* Local response normalisation over the last (channel) dim:
 * x / (bias + alpha * sum(x^2 over [d - r, d + r]))^beta. */
static kiln_status lower_LRN(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *x2, *zero, *sum, *scaled, *base, *beta, *p, *r;
  TRY(tf_check_inputs(ctx, 1, 1));
  TRY(tf_input(ctx, 0, &x));
  if (x->shape.rank != 4) return op_error(node, KILN_INVALID_ARGUMENT, "input must be 4-D");
  if (!hlo_type_is_float(x->shape.type)) return op_error(node, KILN_INVALID_ARGUMENT, "input must be floating point");
  int64_t radius = graph_node_attr_int_or(node, "depth_radius", 5);
  if (radius < 0 || radius > (1 << 20)) return op_error(node, KILN_INVALID_ARGUMENT, "depth_radius out of range");
  double bias = graph_node_attr_float_or(node, "bias", 1.0f), alpha = graph_node_attr_float_or(node, "alpha", 1.0f),
         b = graph_node_attr_float_or(node, "beta", 0.5f);
  hlo_computation *add;
  T(hlo_build_binary(c, HLO_OP_MULTIPLY, x, x, &x2));
  T(oplib_scalar(c, x->shape.type, 0, &zero));
  T(hlo_build_scalar_computation(c->module, HLO_OP_ADD, x->shape.type, &add));
  hlo_window w = hlo_window_make(4, (int64_t[]){1, 1, 1, 2 * radius + 1}, NULL);
  w.dims[3].pad_lo = radius;
  w.dims[3].pad_hi = radius;
  T(hlo_build_reduce_window(c, 1, &x2, &zero, &w, add, &sum));
  T(oplib_binary_scalar(c, HLO_OP_MULTIPLY, sum, alpha, &scaled));
  T(oplib_binary_scalar(c, HLO_OP_ADD, scaled, bias, &base));
  T(oplib_full_like(c, base, HLO_TYPE_COUNT, b, &beta));
  T(hlo_build_binary(c, HLO_OP_POWER, base, beta, &p));
  T(hlo_build_binary(c, HLO_OP_DIVIDE, x, p, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ----------------------------------------------------------------- pooling ---- */

/* MaxPool / AvgPool (2-D and 3-D; MaxPoolV2 takes ksize and strides as inputs). Max
 * pads with the lowest value; Avg divides each window's sum by the number of input
 * (not padding) elements it covers, which TF's SAME padding requires. */
static kiln_status lower_pool(op_lower_ctx *ctx, int n_spatial, bool is_max, bool sizes_from_inputs) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *init, *r;
  TRY(tf_check_inputs(ctx, sizes_from_inputs ? 3 : 1, sizes_from_inputs ? 3 : 1));
  TRY(tf_input(ctx, 0, &x));
  bool cf = false;
  int rank = n_spatial + 2;
  TRY(tf_data_format(node, &cf));
  TRY(check_rank(node, "input", x, rank));
  int64_t batch, feature, spatial[HLO_MAX_RANK], in_spatial[HLO_MAX_RANK];
  tf_layout_dims(n_spatial, cf, &batch, &feature, spatial);
  for (int i = 0; i < n_spatial; i++) in_spatial[i] = x->shape.dims[spatial[i]];
  oplib_window w;
  memset(&w, 0, sizeof w);
  if (sizes_from_inputs) {
    int64_t ks[TF_MAX_INTS], st[TF_MAX_INTS];
    int nk = 0, ns = 0;
    TRY(tf_const_ints(ctx, 1, "ksize", ks, TF_MAX_INTS, &nk));
    TRY(tf_const_ints(ctx, 2, "strides", st, TF_MAX_INTS, &ns));
    if (nk != rank || ns != rank)
      return op_error(node, KILN_INVALID_ARGUMENT, "ksize and strides must have %d entries (have %d, %d)", rank, nk,
                      ns);
    TRY(tf_window_from(node, n_spatial, cf, ks, st, in_spatial, &w));
  } else {
    TRY(tf_window(node, n_spatial, cf, "ksize", NULL, in_spatial, &w));
  }
  hlo_type t = x->shape.type;
  hlo_computation *fn;
  hlo_window hw = oplib_window_to_hlo(&w, rank, (int)spatial[0]);
  if (is_max) {
    T(oplib_lowest(c, t, &init));
    T(hlo_build_scalar_computation(c->module, HLO_OP_MAXIMUM, t, &fn));
    T(hlo_build_reduce_window(c, 1, &x, &init, &hw, fn, &r));
    tf_set_output(ctx, 0, r);
    return NULL;
  }
  if (!hlo_type_is_float(t)) return op_error(node, KILN_INVALID_ARGUMENT, "AvgPool needs floating-point input");
  /* Sum in f32 for half types, then divide by the per-position counts (a constant). */
  hlo_type acc = (t == HLO_F16 || t == HLO_BF16) ? HLO_F32 : t;
  hlo_instr *xa, *sum, *counts, *cb;
  T(oplib_convert(c, x, acc, &xa));
  T(oplib_scalar(c, acc, 0, &init));
  T(hlo_build_scalar_computation(c->module, HLO_OP_ADD, acc, &fn));
  T(hlo_build_reduce_window(c, 1, &xa, &init, &hw, fn, &sum));
  int64_t out_spatial[HLO_MAX_RANK], n_out = 1;
  oplib_window_out_dims(&w, in_spatial, out_spatial);
  for (int i = 0; i < n_spatial; i++) n_out *= out_spatial[i];
  double *cnt = malloc((size_t)(n_out > 0 ? n_out : 1) * sizeof *cnt);
  if (!cnt) return op_error(node, KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t p = 0; p < n_out; p++) {
    int64_t rem = p;
    double count = 1;
    for (int i = n_spatial - 1; i >= 0; i--) {
      int64_t o = rem % out_spatial[i];
      rem /= out_spatial[i];
      int64_t start = o * w.stride[i] - w.pad_lo[i], end = start + (w.kernel[i] - 1) * w.dilation[i] + 1;
      /* Positions start, start + d, … below end that fall inside [0, in). */
      int64_t k = 0;
      for (int64_t q = start; q < end; q += w.dilation[i])
        if (q >= 0 && q < in_spatial[i]) k++;
      count *= (double)k;
    }
    cnt[p] = count;
  }
  kiln_status st = oplib_const_f64s(c, acc, n_spatial, out_spatial, cnt, &counts);
  free(cnt);
  T(st);
  T(hlo_build_broadcast(c, counts, rank, sum->shape.dims, spatial, &cb));
  T(hlo_build_binary(c, HLO_OP_DIVIDE, sum, cb, &r));
  T(oplib_convert(c, r, t, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_MaxPool(op_lower_ctx *ctx) { return lower_pool(ctx, 2, true, false); }
static kiln_status lower_MaxPoolV2(op_lower_ctx *ctx) { return lower_pool(ctx, 2, true, true); }
static kiln_status lower_MaxPool3D(op_lower_ctx *ctx) { return lower_pool(ctx, 3, true, false); }
static kiln_status lower_AvgPool(op_lower_ctx *ctx) { return lower_pool(ctx, 2, false, false); }
static kiln_status lower_AvgPool3D(op_lower_ctx *ctx) { return lower_pool(ctx, 3, false, false); }

/* ----------------------------------------------------------------- softmax ---- */

static kiln_status lower_softmax(op_lower_ctx *ctx, bool log) {
  hlo_instr *x, *r;
  TRY(tf_check_inputs(ctx, 1, 1));
  TRY(tf_input(ctx, 0, &x));
  if (x->shape.rank < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  T(oplib_softmax(ctx->comp, x, x->shape.rank - 1, log, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Softmax(op_lower_ctx *ctx) { return lower_softmax(ctx, false); }
static kiln_status lower_LogSoftmax(op_lower_ctx *ctx) { return lower_softmax(ctx, true); }

/* x > 0 ? x : alpha * x with alpha broadcast (TF.js's Prelu). */
static kiln_status prelu(hlo_computation *c, hlo_instr *x, hlo_instr *alpha, hlo_instr **out) {
  hlo_instr *ax, *zero, *pos, *xs[2];
  TRY(oplib_binary(c, HLO_OP_MULTIPLY, x, alpha, &ax));
  xs[0] = x;
  xs[1] = ax;
  TRY(oplib_broadcast_all(c, 2, xs));
  TRY(oplib_full_like(c, xs[0], HLO_TYPE_COUNT, 0, &zero));
  TRY(hlo_build_compare(c, HLO_DIR_GT, xs[0], zero, &pos));
  return hlo_build_select(c, pos, xs[0], xs[1], out);
}

static kiln_status lower_Prelu(op_lower_ctx *ctx) {
  hlo_instr *x, *a, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &a));
  T(prelu(ctx->comp, x, a, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------- fused forms ---- */

/* Applies fused_ops in order to y, taking their extra operands from the node's inputs
 * starting at input 2: BiasAdd (1), Add/AddV2 (1), Prelu (1), FusedBatchNorm (scale,
 * offset, mean, variance), then any activation of tf_activation. Names compare without
 * case (TF.js lowercases them in places). */
static kiln_status apply_fused_ops(op_lower_ctx *ctx, hlo_instr *y, bool channels_first, hlo_instr **out) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  const graph_attr_value *ops = graph_node_attr(node, "fused_ops");
  if (!ops || ops->kind != GRAPH_ATTR_LIST || (ops->list.n && ops->list.elem != GRAPH_ATTR_STRING))
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute fused_ops (a list of strings) is missing");
  int n_args = (int)graph_node_attr_int_or(node, "num_args", ctx->n_inputs - 2);
  if (n_args < 0 || 2 + n_args > ctx->n_inputs)
    return op_error(node, KILN_INVALID_ARGUMENT, "num_args %d but only %d inputs", n_args, ctx->n_inputs);
  double eps = graph_node_attr_float_or(node, "epsilon", 1e-4f);
  double alpha = graph_node_attr_float_or(node, "leakyrelu_alpha", 0.2f);
  int64_t channel = channels_first ? 1 : y->shape.rank - 1;
  int next = 2;
  for (int i = 0; i < ops->list.n; i++) {
    const char *name = ops->list.items[i].s.data ? ops->list.items[i].s.data : "";
    int need = 0;
    if (!strcasecmp(name, "BiasAdd") || !strcasecmp(name, "Add") || !strcasecmp(name, "AddV2") ||
        !strcasecmp(name, "Prelu"))
      need = 1;
    else if (!strcasecmp(name, "FusedBatchNorm") || !strcasecmp(name, "FusedBatchNormV3"))
      need = 4;
    if (next + need > 2 + n_args)
      return op_error(node, KILN_INVALID_ARGUMENT, "fused op %s needs %d more argument(s) than num_args %d gives", name,
                      need, n_args);
    hlo_instr *args[4];
    for (int k = 0; k < need; k++) TRY(tf_input(ctx, next + k, &args[k]));
    next += need;
    if (!strcasecmp(name, "BiasAdd")) {
      T(tf_bias_add(c, y, args[0], channels_first, &y));
    } else if (!strcasecmp(name, "Add") || !strcasecmp(name, "AddV2")) {
      T(oplib_binary(c, HLO_OP_ADD, y, args[0], &y));
    } else if (!strcasecmp(name, "Prelu")) {
      T(prelu(c, y, args[0], &y));
    } else if (need == 4) {
      T(batch_norm_infer(c, y, args[0], args[1], args[2], args[3], eps, channel, &y));
    } else {
      static const char *const acts[] = {"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softplus",
                                         "Identity", "Linear"};
      const char *canon = NULL;
      for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++)
        if (!strcasecmp(name, acts[k])) canon = acts[k];
      bool known = false;
      if (canon) T(tf_activation(c, canon, y, alpha, &y, &known));
      if (!known) return op_error(node, KILN_UNIMPLEMENTED, "fused op \"%s\" is not supported", name);
    }
  }
  *out = y;
  return NULL;
}

static kiln_status lower_fused_conv(op_lower_ctx *ctx, bool depthwise) {
  hlo_instr *x, *f, *y;
  TRY(tf_check_inputs(ctx, 2, -1));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &f));
  bool cf = false;
  TRY(tf_data_format(ctx->node, &cf));
  TRY(conv_forward(ctx, 2, depthwise, x, f, &y));
  TRY(apply_fused_ops(ctx, y, cf, &y));
  tf_set_output(ctx, 0, y);
  return NULL;
}
static kiln_status lower__FusedConv2D(op_lower_ctx *ctx) { return lower_fused_conv(ctx, false); }
static kiln_status lower_FusedDepthwiseConv2dNative(op_lower_ctx *ctx) { return lower_fused_conv(ctx, true); }

static kiln_status lower__FusedMatMul(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *y;
  TRY(tf_check_inputs(ctx, 2, -1));
  TRY(tf_input(ctx, 0, &a));
  TRY(tf_input(ctx, 1, &b));
  bool ta = graph_node_attr_bool_or(ctx->node, "transpose_a", false);
  bool tb = graph_node_attr_bool_or(ctx->node, "transpose_b", false);
  T(matmul2d(ctx->comp, a, b, ta, tb, &y));
  TRY(apply_fused_ops(ctx, y, false, &y));
  tf_set_output(ctx, 0, y);
  return NULL;
}

/* ------------------------------------------------------------------ table ---- */

#define OP(NAME, FN) {"tf." NAME, 0, 0, lower_##FN, NULL}
#define OPC(NAME, FN, MASK) {"tf." NAME, 0, MASK, lower_##FN, NULL}

static const op_def tf_nn_defs[] = {
    OP("AvgPool", AvgPool),
    OP("AvgPool3D", AvgPool3D),
    OP("BatchMatMul", BatchMatMul),
    OP("BatchMatMulV2", BatchMatMulV2),
    OP("BatchMatMulV3", BatchMatMulV2),
    OP("Conv2D", Conv2D),
    OPC("Conv2DBackpropInput", Conv2DBackpropInput, 1u << 0),
    OP("Conv3D", Conv3D),
    OPC("Conv3DBackpropInputV2", Conv3DBackpropInputV2, 1u << 0),
    OP("DepthwiseConv2dNative", DepthwiseConv2dNative),
    OP("FusedBatchNorm", FusedBatchNorm),
    OP("FusedBatchNormV2", FusedBatchNorm),
    OP("FusedBatchNormV3", FusedBatchNorm),
    OP("FusedDepthwiseConv2dNative", FusedDepthwiseConv2dNative),
    OP("LRN", LRN),
    OP("LogSoftmax", LogSoftmax),
    OP("MatMul", MatMul),
    OP("MaxPool", MaxPool),
    OP("MaxPool3D", MaxPool3D),
    OPC("MaxPoolV2", MaxPoolV2, (1u << 1) | (1u << 2)),
    OP("Prelu", Prelu),
    OP("Softmax", Softmax),
    OP("_FusedConv2D", _FusedConv2D),
    OP("_FusedDepthwiseConv2dNative", FusedDepthwiseConv2dNative),
    OP("_FusedMatMul", _FusedMatMul),
};

const op_table tf_nn_table = {"tf.nn", (int)(sizeof tf_nn_defs / sizeof tf_nn_defs[0]), tf_nn_defs};
