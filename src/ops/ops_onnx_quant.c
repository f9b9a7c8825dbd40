/* ONNX quantized integer ops: QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger,
 * DynamicQuantizeLinear, and the com.microsoft QLinear* ops that ONNX Runtime's
 * quantizer emits (QGemm, QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearGlobalAveragePool, QLinearConcat).
 *
 * Every op lowers to plain HLO, exactly: 8-bit operands are converted to s32, their zero
 * points subtracted in s32, and the contraction (dot / convolution) runs with s32
 * operands and an s32 result, so the integer ops (MatMulInteger, ConvInteger) are exact
 * and the QLinear ops see the exact int32 accumulator. Requantisation then follows ONNX
 * (and ONNX Runtime): the multiplier a_scale * b_scale / y_scale is formed in the
 * scales' own type (f32, or f16/bf16 for QLinearMatMul-21) and converted to f32, the
 * accumulator is converted to f32 and multiplied by it, rounded half to even, offset by
 * the output zero point and saturated to the output type's range before the convert.
 * The elementwise com.microsoft ops have no integer core: they dequantise in f32, apply
 * the float op and quantise again (what ORT's lookup tables hold), except QLinearMul,
 * whose (a - za) * (b - zb) product is exact in s32.
 *
 * Scales and zero points are checked before anything is emitted: a zero point must have
 * its tensor's type (int8 vs uint8 mismatches are refused naming both), and a scale or
 * zero point must have one of the shapes the op allows (per-tensor; per-row of a /
 * per-column of b for the matmuls; per-output-channel for the convolution weights),
 * otherwise the error names the node, the input and its shape. Convolution geometry
 * (strides, pads, dilations, auto_pad, group) is resolved through ops_lib's window
 * helpers, as the float Conv does. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hlo/literal.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* ------------------------------------------------------------------ helpers ---- */

static const char *tname(hlo_type t) { return graph_dtype_name(graph_dtype_from_hlo(t)); }

/* "[2,3]" into buf. */
static const char *dims_str(const hlo_shape *s, char *buf, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, cap - n, "[");
  for (int i = 0; i < s->rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)s->dims[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

/* The value of ONNX input pos (an HLO value, or its compile-time value as a constant);
 * NULL when the input is absent. */
static kiln_status opt_input(op_lower_ctx *ctx, int pos, hlo_instr **out) {
  *out = onnx_input(ctx, pos);
  if (!*out && onnx_const_input(ctx, pos)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, pos), out));
  return NULL;
}

static kiln_status req_input(op_lower_ctx *ctx, int pos, const char *name, hlo_instr **out) {
  TRY(opt_input(ctx, pos, out));
  if (!*out) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %d (%s) is required", pos, name);
  return NULL;
}

static bool is_8bit(hlo_type t) { return t == HLO_U8 || t == HLO_S8; }

static kiln_status need_8bit(op_lower_ctx *ctx, hlo_instr *x, const char *name) {
  if (!is_8bit(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be uint8 or int8, got %s", name,
                    tname(x->shape.type));
  return NULL;
}

/* A zero point has the type of the tensor it belongs to. */
static kiln_status need_zp_type(op_lower_ctx *ctx, hlo_instr *zp, const char *zname, hlo_instr *x,
                                const char *xname) {
  if (zp && zp->shape.type != x->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "zero point %s has type %s but %s has type %s (a zero point must have its tensor's type)", zname,
                    tname(zp->shape.type), xname, tname(x->shape.type));
  return NULL;
}

static kiln_status need_float_scale(op_lower_ctx *ctx, hlo_instr *s, const char *name) {
  if (!hlo_type_is_float(s->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale %s must be floating-point, got %s", name,
                    tname(s->shape.type));
  return NULL;
}

/* The (tensor, scale, zero point) inputs at POS, POS+1, POS+2 of a quantized op: the
 * tensor 8-bit (absent when XN is NULL: an output's scale and zero point, which then
 * start at POS + 1), the scale floating-point (required unless SCALE_OPTIONAL), the
 * zero point optional and of the tensor's type (8-bit without a tensor). Shapes are
 * left to the op: some take per-channel parameters. */
static kiln_status q_triple(op_lower_ctx *ctx, int pos, const char *xn, const char *sn, const char *zn,
                            bool scale_optional, hlo_instr **x, hlo_instr **s, hlo_instr **zp) {
  if (xn) {
    TRY(req_input(ctx, pos, xn, x));
    TRY(need_8bit(ctx, *x, xn));
  }
  TRY(scale_optional ? opt_input(ctx, pos + 1, s) : req_input(ctx, pos + 1, sn, s));
  if (*s) TRY(need_float_scale(ctx, *s, sn));
  TRY(opt_input(ctx, pos + 2, zp));
  if (*zp && !*s) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s is given without %s", zn, sn);
  if (*zp && xn) TRY(need_zp_type(ctx, *zp, zn, *x, xn));
  if (*zp && !xn) TRY(need_8bit(ctx, *zp, zn));
  return NULL;
}

/* A per-tensor parameter (one element), as a scalar; else an error naming it. */
static kiln_status per_tensor(op_lower_ctx *ctx, hlo_instr *v, const char *name, hlo_instr **out) {
  if (shape_elements(&v->shape) != 1) {
    char b[128];
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s has shape %s; it must be a scalar (per-tensor)", name,
                    dims_str(&v->shape, b, sizeof b));
  }
  L(oplib_reshape(ctx->comp, v, 0, NULL, out));
  return NULL;
}

/* x converted to s32 minus its zero point zp (NULL: none), zp already shaped to
 * broadcast against x. */
static kiln_status sub_zp(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *zp, hlo_instr **out) {
  L(oplib_convert(ctx->comp, x, HLO_S32, out));
  if (zp) {
    L(oplib_convert(ctx->comp, zp, HLO_S32, &zp));
    L(oplib_binary(ctx->comp, HLO_OP_SUBTRACT, *out, zp, out));
  }
  return NULL;
}

/* saturate(round_half_even(f32(acc) * mult) + zp) as out_t. mult (f32) and zp (NULL:
 * 0) broadcast (numpy) against acc without growing it. */
static kiln_status requantize(op_lower_ctx *ctx, hlo_instr *acc, hlo_instr *mult, hlo_instr *zp, hlo_type out_t,
                              hlo_instr **out) {
  hlo_instr *y, *lo, *hi;
  L(oplib_convert(ctx->comp, acc, HLO_F32, &y));
  L(oplib_convert(ctx->comp, mult, HLO_F32, &mult));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, y, mult, &y));
  L(hlo_build_unary(ctx->comp, HLO_OP_ROUND_NEAREST_EVEN, y, &y));
  if (zp) {
    L(oplib_convert(ctx->comp, zp, HLO_F32, &zp));
    L(oplib_binary(ctx->comp, HLO_OP_ADD, y, zp, &y));
  }
  L(oplib_lowest(ctx->comp, out_t, &lo));
  L(oplib_highest(ctx->comp, out_t, &hi));
  L(hlo_build_convert(ctx->comp, lo, HLO_F32, &lo));
  L(hlo_build_convert(ctx->comp, hi, HLO_F32, &hi));
  L(hlo_build_clamp(ctx->comp, lo, y, hi, &y));
  L(hlo_build_convert(ctx->comp, y, out_t, out));
  return NULL;
}

/* Float x quantised: saturate(round_half_even(x / scale) + zp) as out_t (scale a
 * scalar f32, zp a scalar or NULL). */
static kiln_status quantize_f32(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *scale, hlo_instr *zp, hlo_type out_t,
                                hlo_instr **out) {
  hlo_instr *y, *lo, *hi;
  L(oplib_convert(ctx->comp, scale, HLO_F32, &scale));
  L(oplib_binary(ctx->comp, HLO_OP_DIVIDE, x, scale, &y));
  L(hlo_build_unary(ctx->comp, HLO_OP_ROUND_NEAREST_EVEN, y, &y));
  if (zp) {
    L(oplib_convert(ctx->comp, zp, HLO_F32, &zp));
    L(oplib_binary(ctx->comp, HLO_OP_ADD, y, zp, &y));
  }
  L(oplib_lowest(ctx->comp, out_t, &lo));
  L(oplib_highest(ctx->comp, out_t, &hi));
  L(hlo_build_convert(ctx->comp, lo, HLO_F32, &lo));
  L(hlo_build_convert(ctx->comp, hi, HLO_F32, &hi));
  L(hlo_build_clamp(ctx->comp, lo, y, hi, &y));
  L(hlo_build_convert(ctx->comp, y, out_t, out));
  return NULL;
}

/* ---------------------------------------------------------------- matmuls ---- */

/* A scale or zero point of matmul operand x: one element (per-tensor), or, when x has
 * rank >= 2, per row of a ([M] or [..., M, 1]) / per column of b ([N] or [..., 1, N]).
 * Returns it shaped to broadcast (numpy) against x and against the product. */
static kiln_status mm_param(op_lower_ctx *ctx, hlo_instr *v, const char *name, hlo_instr *x, const char *xname,
                            bool is_a, hlo_instr **out) {
  if (shape_elements(&v->shape) == 1) {
    L(oplib_reshape(ctx->comp, v, 0, NULL, out));
    return NULL;
  }
  int r = x->shape.rank;
  const int64_t *xd = x->shape.dims, *vd = v->shape.dims;
  if (r >= 2) {
    int64_t len = is_a ? xd[r - 2] : xd[r - 1];
    if (v->shape.rank == 1 && vd[0] == len) {
      if (is_a) {
        int64_t d[2] = {len, 1};
        L(oplib_reshape(ctx->comp, v, 2, d, out));
      } else {
        *out = v;
      }
      return NULL;
    }
    bool ok = v->shape.rank == r;
    for (int i = 0; ok && i < r - 2; i++) ok = vd[i] == xd[i];
    if (ok) ok = is_a ? vd[r - 2] == len && vd[r - 1] == 1 : vd[r - 2] == 1 && vd[r - 1] == len;
    if (ok) {
      *out = v;
      return NULL;
    }
  }
  char b1[128], b2[128];
  return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                  "%s has shape %s; for %s of shape %s it must be a scalar (per-tensor) or %s", name,
                  dims_str(&v->shape, b1, sizeof b1), xname, dims_str(&x->shape, b2, sizeof b2),
                  is_a ? "per-row ([M] or [..., M, 1])" : "per-column ([N] or [..., 1, N])");
}

/* Both operands as s32 minus their zero points, and their product (s32, exact). */
static kiln_status int_matmul(op_lower_ctx *ctx, hlo_instr *a, hlo_instr *azp, hlo_instr *b, hlo_instr *bzp,
                              const char *an, const char *azn, const char *bn, const char *bzn, hlo_instr **acc) {
  if (azp) TRY(mm_param(ctx, azp, azn, a, an, true, &azp));
  if (bzp) TRY(mm_param(ctx, bzp, bzn, b, bn, false, &bzp));
  hlo_instr *A, *B;
  TRY(sub_zp(ctx, a, azp, &A));
  TRY(sub_zp(ctx, b, bzp, &B));
  L(oplib_matmul(ctx->comp, A, B, acc));
  return NULL;
}

static kiln_status lower_matmul_integer(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *azp, *bzp, *y;
  TRY(req_input(ctx, 0, "A", &a));
  TRY(req_input(ctx, 1, "B", &b));
  TRY(opt_input(ctx, 2, &azp));
  TRY(opt_input(ctx, 3, &bzp));
  TRY(need_8bit(ctx, a, "A"));
  TRY(need_8bit(ctx, b, "B"));
  TRY(need_zp_type(ctx, azp, "a_zero_point", a, "A"));
  TRY(need_zp_type(ctx, bzp, "b_zero_point", b, "B"));
  TRY(int_matmul(ctx, a, azp, b, bzp, "A", "a_zero_point", "B", "b_zero_point", &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_qlinear_matmul(op_lower_ctx *ctx) {
  hlo_instr *a, *as, *azp, *b, *bs, *bzp, *ys, *yzp, *acc, *mult, *y;
  TRY(q_triple(ctx, 0, "a", "a_scale", "a_zero_point", false, &a, &as, &azp));
  TRY(q_triple(ctx, 3, "b", "b_scale", "b_zero_point", false, &b, &bs, &bzp));
  TRY(q_triple(ctx, 5, NULL, "y_scale", "y_zero_point", false, NULL, &ys, &yzp));
  hlo_type out_t = yzp ? yzp->shape.type : a->shape.type;
  if (bs->shape.type != as->shape.type || ys->shape.type != as->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "scales must share one type, got a_scale %s, b_scale %s, y_scale %s",
                    tname(as->shape.type), tname(bs->shape.type), tname(ys->shape.type));
  if (ctx->opset < 21 && as->shape.type != HLO_F32)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scales must be float before opset 21, got %s",
                    tname(as->shape.type));
  TRY(mm_param(ctx, as, "a_scale", a, "a", true, &as));
  TRY(mm_param(ctx, bs, "b_scale", b, "b", false, &bs));
  TRY(per_tensor(ctx, ys, "y_scale", &ys));
  if (yzp) TRY(per_tensor(ctx, yzp, "y_zero_point", &yzp));
  TRY(int_matmul(ctx, a, azp, b, bzp, "a", "a_zero_point", "b", "b_zero_point", &acc));
  /* The multiplier in the scales' type, as ONNX computes it. */
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, as, bs, &mult));
  L(oplib_binary(ctx->comp, HLO_OP_DIVIDE, mult, ys, &mult));
  TRY(requantize(ctx, acc, mult, yzp, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* com.microsoft QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp), attributes
 * alpha, transA, transB: what ONNX Runtime's QOperator quantizer makes of a Gemm. A and B
 * are 2-D (transposed first as asked), b_scale / b_zp per tensor or per column of B', C
 * an optional int32 bias in the accumulator's scale (a_scale * b_scale, zero point 0).
 * With y_scale the result is requantized to y_zp's type (A's without one) with the
 * multiplier alpha * a_scale * b_scale / y_scale; without it the result is f32,
 * (acc + C) * alpha * a_scale * b_scale. */
static kiln_status lower_ms_qgemm(op_lower_ctx *ctx) {
  hlo_instr *a, *as, *azp, *b, *bs, *bzp, *c, *ys, *yzp, *acc, *mult, *y;
  TRY(q_triple(ctx, 0, "A", "a_scale", "a_zero_point", false, &a, &as, &azp));
  TRY(q_triple(ctx, 3, "B", "b_scale", "b_zero_point", false, &b, &bs, &bzp));
  TRY(opt_input(ctx, 6, &c));
  TRY(q_triple(ctx, 6, NULL, "y_scale", "y_zero_point", true, NULL, &ys, &yzp));
  if (c && c->shape.type != HLO_S32)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "C must be int32, got %s", tname(c->shape.type));
  if (a->shape.rank != 2 || b->shape.rank != 2) {
    char b1[64], b2[64];
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "A and B must be 2-D, got A %s and B %s",
                    dims_str(&a->shape, b1, sizeof b1), dims_str(&b->shape, b2, sizeof b2));
  }
  static const int64_t swap[2] = {1, 0};
  if (graph_node_attr_int_or(ctx->node, "transA", 0)) L(oplib_transpose(ctx->comp, a, swap, &a));
  if (graph_node_attr_int_or(ctx->node, "transB", 0)) L(oplib_transpose(ctx->comp, b, swap, &b));
  float alpha = graph_node_attr_float_or(ctx->node, "alpha", 1.0f);
  TRY(per_tensor(ctx, as, "a_scale", &as));
  if (azp) TRY(per_tensor(ctx, azp, "a_zero_point", &azp));
  TRY(mm_param(ctx, bs, "b_scale", b, "B", false, &bs));
  TRY(int_matmul(ctx, a, azp, b, bzp, "A", "a_zero_point", "B", "b_zero_point", &acc));
  if (c) L(oplib_binary(ctx->comp, HLO_OP_ADD, acc, c, &acc));
  hlo_instr *al;
  L(hlo_build_constant_scalar(ctx->comp, HLO_F32, alpha, &al));
  L(oplib_convert(ctx->comp, as, HLO_F32, &as));
  L(oplib_convert(ctx->comp, bs, HLO_F32, &bs));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, as, bs, &mult));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, mult, al, &mult));
  if (!ys) {
    L(oplib_convert(ctx->comp, acc, HLO_F32, &y));
    L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, y, mult, &y));
    return onnx_set_output(ctx, 0, y);
  }
  TRY(per_tensor(ctx, ys, "y_scale", &ys));
  if (yzp) TRY(per_tensor(ctx, yzp, "y_zero_point", &yzp));
  L(oplib_convert(ctx->comp, ys, HLO_F32, &ys));
  L(oplib_binary(ctx->comp, HLO_OP_DIVIDE, mult, ys, &mult));
  TRY(requantize(ctx, acc, mult, yzp, yzp ? yzp->shape.type : a->shape.type, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------ convolutions ---- */

/* The integer convolution of x and w (both s32, zero points already subtracted) with
 * the node's kernel_shape / strides / dilations / pads / auto_pad / group: s32 result. */
static kiln_status int_conv(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *w, hlo_instr **y) {
  const graph_node *node = ctx->node;
  if (x->shape.rank < 3)
    return op_error(node, KILN_INVALID_ARGUMENT, "input x must have rank >= 3, got rank %d", x->shape.rank);
  if (w->shape.rank != x->shape.rank)
    return op_error(node, KILN_INVALID_ARGUMENT, "weights w have rank %d, input x rank %d", w->shape.rank,
                    x->shape.rank);
  int n = x->shape.rank - 2;
  int64_t group = graph_node_attr_int_or(node, "group", 1);
  int64_t cin = x->shape.dims[1], m = w->shape.dims[0];
  if (group < 1 || cin % group != 0 || m % group != 0 || w->shape.dims[1] * group != cin)
    return op_error(node, KILN_INVALID_ARGUMENT,
                    "group %lld does not fit input channels %lld, weights [%lld, %lld, ...]", (long long)group,
                    (long long)cin, (long long)m, (long long)w->shape.dims[1]);
  oplib_window win;
  memset(&win, 0, sizeof win);
  win.n = n;
  int cnt;
  bool present;
  int64_t kernel[HLO_MAX_RANK], pads[2 * HLO_MAX_RANK] = {0};
  TRY(onnx_attr_ints(node, "kernel_shape", kernel, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n)
    return op_error(node, KILN_INVALID_ARGUMENT, "kernel_shape has %d entries, input has %d spatial dims", cnt, n);
  for (int i = 0; i < n; i++) {
    if (present && kernel[i] != w->shape.dims[2 + i])
      return op_error(node, KILN_INVALID_ARGUMENT, "kernel_shape[%d] = %lld but w has %lld", i, (long long)kernel[i],
                      (long long)w->shape.dims[2 + i]);
    win.kernel[i] = w->shape.dims[2 + i];
    win.stride[i] = 1;
    win.dilation[i] = 1;
  }
  TRY(onnx_attr_ints(node, "strides", win.stride, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n) return op_error(node, KILN_INVALID_ARGUMENT, "strides has %d entries, expected %d", cnt, n);
  if (!present)
    for (int i = 0; i < n; i++) win.stride[i] = 1;
  TRY(onnx_attr_ints(node, "dilations", win.dilation, HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != n)
    return op_error(node, KILN_INVALID_ARGUMENT, "dilations has %d entries, expected %d", cnt, n);
  if (!present)
    for (int i = 0; i < n; i++) win.dilation[i] = 1;
  TRY(onnx_attr_ints(node, "pads", pads, 2 * HLO_MAX_RANK, &cnt, &present));
  if (present && cnt != 2 * n)
    return op_error(node, KILN_INVALID_ARGUMENT, "pads has %d entries, expected %d", cnt, 2 * n);
  if (!present)
    for (int i = 0; i < 2 * n; i++) pads[i] = 0;
  const int64_t lim = (int64_t)1 << 31;
  for (int i = 0; i < n; i++) {
    if (win.kernel[i] < 1 || win.kernel[i] > lim || win.stride[i] < 1 || win.stride[i] > lim ||
        win.dilation[i] < 1 || win.dilation[i] > lim)
      return op_error(node, KILN_INVALID_ARGUMENT,
                      "spatial dim %d: kernel %lld, stride %lld and dilation %lld must be in [1, 2^31]", i,
                      (long long)win.kernel[i], (long long)win.stride[i], (long long)win.dilation[i]);
    if (pads[i] < 0 || pads[i] > lim || pads[i + n] < 0 || pads[i + n] > lim)
      return op_error(node, KILN_INVALID_ARGUMENT, "pads of spatial dim %d must be in [0, 2^31]", i);
  }
  const char *aps = onnx_attr_string(node, "auto_pad", "NOTSET");
  oplib_auto_pad ap;
  if (!oplib_parse_auto_pad(aps, &ap)) return op_error(node, KILN_INVALID_ARGUMENT, "unknown auto_pad \"%s\"", aps);
  L(oplib_window_pads(&win, x->shape.dims + 2, ap, pads, false, NULL));
  hlo_window hw = oplib_conv_window(&win);
  hlo_conv_dnums dn = oplib_conv_dnums_nchw(n);
  L(hlo_build_convolution(ctx->comp, x, w, &hw, &dn, group, 1, HLO_S32, y));
  return NULL;
}

/* A per-output-channel parameter of w ([M], or one element): as a scalar, or as [M]
 * broadcast along dim `dim` of a value shaped like `like` (LIKE NULL: the [M] vector as is). */
static kiln_status channel_param(op_lower_ctx *ctx, hlo_instr *v, const char *name, int64_t m, hlo_instr *like,
                                 int64_t dim, hlo_instr **out) {
  if (shape_elements(&v->shape) == 1) {
    L(oplib_reshape(ctx->comp, v, 0, NULL, out));
    return NULL;
  }
  if (v->shape.rank != 1 || v->shape.dims[0] != m) {
    char b[128];
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "%s has shape %s; it must be a scalar (per-tensor) or a [%lld] vector (per output channel)", name,
                    dims_str(&v->shape, b, sizeof b), (long long)m);
  }
  if (!like) { /* checked only: the [M] vector itself */
    *out = v;
    return NULL;
  }
  L(hlo_build_broadcast(ctx->comp, v, like->shape.rank, like->shape.dims, &dim, out));
  return NULL;
}

/* Whether v is a constant whose elements are all 0. */
static bool is_zero_constant(const hlo_instr *v) {
  if (v->op != HLO_OP_CONSTANT || !v->literal || !v->literal->data) return false;
  for (int64_t i = 0; i < v->literal->n; i++)
    if (literal_get_s64(v->literal, i) != 0) return false;
  return true;
}

/* x - x_zp, w - w_zp in s32 and their convolution. */
static kiln_status conv_core(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *xzp, hlo_instr *w, hlo_instr *wzp,
                             hlo_instr **acc) {
  if (xzp) TRY(per_tensor(ctx, xzp, "x_zero_point", &xzp));
  if (w->shape.rank < 3)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "weights w must have rank >= 3, got rank %d", w->shape.rank);
  hlo_instr *X, *W;
  TRY(sub_zp(ctx, x, xzp, &X));
  L(oplib_convert(ctx->comp, w, HLO_S32, &W));
  if (wzp && is_zero_constant(wzp)) wzp = NULL; /* what quantizers write: nothing to subtract */
  if (wzp) {
    TRY(channel_param(ctx, wzp, "w_zero_point", w->shape.dims[0], W, 0, &wzp));
    L(oplib_convert(ctx->comp, wzp, HLO_S32, &wzp));
    L(oplib_binary(ctx->comp, HLO_OP_SUBTRACT, W, wzp, &W));
  }
  return int_conv(ctx, X, W, acc);
}

static kiln_status lower_conv_integer(op_lower_ctx *ctx) {
  hlo_instr *x, *w, *xzp, *wzp, *y;
  TRY(req_input(ctx, 0, "x", &x));
  TRY(req_input(ctx, 1, "w", &w));
  TRY(opt_input(ctx, 2, &xzp));
  TRY(opt_input(ctx, 3, &wzp));
  TRY(need_8bit(ctx, x, "x"));
  TRY(need_8bit(ctx, w, "w"));
  TRY(need_zp_type(ctx, xzp, "x_zero_point", x, "x"));
  TRY(need_zp_type(ctx, wzp, "w_zero_point", w, "w"));
  TRY(conv_core(ctx, x, xzp, w, wzp, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_qlinear_conv(op_lower_ctx *ctx) {
  hlo_instr *x, *xs, *xzp, *w, *ws, *wzp, *ys, *yzp, *bias, *acc, *mult, *y;
  TRY(q_triple(ctx, 0, "x", "x_scale", "x_zero_point", false, &x, &xs, &xzp));
  TRY(q_triple(ctx, 3, "w", "w_scale", "w_zero_point", false, &w, &ws, &wzp));
  TRY(q_triple(ctx, 5, NULL, "y_scale", "y_zero_point", false, NULL, &ys, &yzp));
  TRY(opt_input(ctx, 8, &bias));
  hlo_type out_t = yzp ? yzp->shape.type : x->shape.type;
  TRY(per_tensor(ctx, xs, "x_scale", &xs));
  TRY(per_tensor(ctx, ys, "y_scale", &ys));
  if (yzp) TRY(per_tensor(ctx, yzp, "y_zero_point", &yzp));
  if (bias && bias->shape.type != HLO_S32)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "bias B must be int32, got %s", tname(bias->shape.type));
  TRY(conv_core(ctx, x, xzp, w, wzp, &acc));
  int64_t m = w->shape.dims[0];
  if (bias) {
    hlo_instr *bb;
    TRY(channel_param(ctx, bias, "bias B", m, acc, 1, &bb));
    if (shape_elements(&bias->shape) == 1 && m != 1)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "bias B must have shape [%lld]", (long long)m);
    L(oplib_binary(ctx->comp, HLO_OP_ADD, acc, bb, &acc));
  }
  /* The multiplier per output channel, then broadcast: formed over the whole result it
   * would be recomputed per element and keep the backend from seeing one scale. */
  TRY(channel_param(ctx, ws, "w_scale", m, NULL, 1, &ws));
  bool per_channel = ws->shape.rank == 1;
  L(oplib_convert(ctx->comp, xs, HLO_F32, &xs));
  L(oplib_convert(ctx->comp, ws, HLO_F32, &ws));
  L(oplib_convert(ctx->comp, ys, HLO_F32, &ys));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, xs, ws, &mult));
  L(oplib_binary(ctx->comp, HLO_OP_DIVIDE, mult, ys, &mult));
  if (per_channel) TRY(channel_param(ctx, mult, "w_scale", m, acc, 1, &mult));
  TRY(requantize(ctx, acc, mult, yzp, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* --------------------------------------------------- DynamicQuantizeLinear ---- */

/* uint8: scale = (max(0, max x) - min(0, min x)) / 255 (1 when that range is empty, as
 * ONNX Runtime does), zero point = round_half_even(saturate(0 - min / scale)),
 * y = saturate(round_half_even(x / scale) + zero point). */
static kiln_status lower_dynamic_quantize(op_lower_ctx *ctx) {
  hlo_instr *x, *mx, *mn, *zero, *one, *range, *scale, *zp, *y, *eq, *lo, *hi;
  TRY(req_input(ctx, 0, "x", &x));
  if (x->shape.type != HLO_F32)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "x must be float, got %s", tname(x->shape.type));
  int64_t axes[HLO_MAX_RANK];
  for (int i = 0; i < x->shape.rank; i++) axes[i] = i;
  L(oplib_reduce(ctx->comp, OPLIB_REDUCE_MAX, x, x->shape.rank, axes, false, &mx));
  L(oplib_reduce(ctx->comp, OPLIB_REDUCE_MIN, x, x->shape.rank, axes, false, &mn));
  L(oplib_scalar(ctx->comp, HLO_F32, 0, &zero));
  L(oplib_scalar(ctx->comp, HLO_F32, 1, &one));
  L(hlo_build_binary(ctx->comp, HLO_OP_MAXIMUM, mx, zero, &mx));
  L(hlo_build_binary(ctx->comp, HLO_OP_MINIMUM, mn, zero, &mn));
  L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, mx, mn, &range));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_DIVIDE, range, 255.0, &scale));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, mx, mn, &eq));
  L(hlo_build_select(ctx->comp, eq, one, scale, &scale));
  /* zero point = round(clamp(0 - min / scale, 0, 255)) */
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, mn, scale, &zp));
  L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, zero, zp, &zp));
  L(oplib_scalar(ctx->comp, HLO_F32, 0, &lo));
  L(oplib_scalar(ctx->comp, HLO_F32, 255, &hi));
  L(hlo_build_clamp(ctx->comp, lo, zp, hi, &zp));
  L(hlo_build_unary(ctx->comp, HLO_OP_ROUND_NEAREST_EVEN, zp, &zp));
  TRY(quantize_f32(ctx, x, scale, zp, HLO_U8, &y));
  L(hlo_build_convert(ctx->comp, zp, HLO_U8, &zp));
  TRY(onnx_set_output(ctx, 0, y));
  TRY(onnx_set_output(ctx, 1, scale));
  return onnx_set_output(ctx, 2, zp);
}

/* ------------------------------------------------ com.microsoft QLinear* ---- */

/* Reads (x, x_scale, x_zero_point) at positions pos..pos+2: x 8-bit, scale a float
 * scalar, zero point (optional) a scalar of x's type. */
static kiln_status ms_triple(op_lower_ctx *ctx, int pos, const char *xn, const char *sn, const char *zn, hlo_instr **x,
                             hlo_instr **s, hlo_instr **zp) {
  TRY(q_triple(ctx, pos, x ? xn : NULL, sn, zn, false, x, s, zp));
  if (*zp) TRY(per_tensor(ctx, *zp, zn, zp));
  TRY(per_tensor(ctx, *s, sn, s));
  L(oplib_convert(ctx->comp, *s, HLO_F32, s));
  return NULL;
}

/* (x - zp) * scale in f32. */
static kiln_status dequant(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *s, hlo_instr *zp, hlo_instr **out) {
  hlo_instr *v;
  TRY(sub_zp(ctx, x, zp, &v));
  L(oplib_convert(ctx->comp, v, HLO_F32, &v));
  L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, v, s, out));
  return NULL;
}

/* QLinearAdd / QLinearMul(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp). */
static kiln_status lower_ms_binary(op_lower_ctx *ctx) {
  bool mul = strstr(ctx->node->op, "QLinearMul") != NULL;
  hlo_instr *a, *as, *azp, *b, *bs, *bzp, *cs, *czp, *y;
  TRY(ms_triple(ctx, 0, "A", "A_scale", "A_zero_point", &a, &as, &azp));
  TRY(ms_triple(ctx, 3, "B", "B_scale", "B_zero_point", &b, &bs, &bzp));
  TRY(ms_triple(ctx, 5, NULL, "C_scale", "C_zero_point", NULL, &cs, &czp));
  if (a->shape.type != b->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "A (%s) and B (%s) must have one type", tname(a->shape.type),
                    tname(b->shape.type));
  hlo_type out_t = czp ? czp->shape.type : a->shape.type;
  if (out_t != a->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "zero point C_zero_point has type %s but A has type %s",
                    tname(out_t), tname(a->shape.type));
  if (mul) {
    /* (a - za) * (b - zb) exactly, then * (sa * sb / sc). */
    hlo_instr *A, *B, *acc, *mult;
    TRY(sub_zp(ctx, a, azp, &A));
    TRY(sub_zp(ctx, b, bzp, &B));
    L(oplib_binary(ctx->comp, HLO_OP_MULTIPLY, A, B, &acc));
    L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, as, bs, &mult));
    L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, mult, cs, &mult));
    TRY(requantize(ctx, acc, mult, czp, out_t, &y));
    return onnx_set_output(ctx, 0, y);
  }
  /* (a - za) * (sa / sc) + (b - zb) * (sb / sc), rounded, + zc. */
  hlo_instr *A, *B, *ra, *rb, *one;
  L(oplib_scalar(ctx->comp, HLO_F32, 1, &one));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, as, cs, &ra));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, bs, cs, &rb));
  TRY(dequant(ctx, a, ra, azp, &A));
  TRY(dequant(ctx, b, rb, bzp, &B));
  L(oplib_binary(ctx->comp, HLO_OP_ADD, A, B, &y));
  TRY(quantize_f32(ctx, y, one, czp, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* QLinearSigmoid / QLinearLeakyRelu(X, X_scale, X_zp, Y_scale, Y_zp). */
static kiln_status lower_ms_unary(op_lower_ctx *ctx) {
  bool leaky = strstr(ctx->node->op, "LeakyRelu") != NULL;
  hlo_instr *x, *xs, *xzp, *ys, *yzp, *v, *y;
  TRY(ms_triple(ctx, 0, "X", "X_scale", "X_zero_point", &x, &xs, &xzp));
  TRY(ms_triple(ctx, 2, NULL, "Y_scale", "Y_zero_point", NULL, &ys, &yzp));
  hlo_type out_t = yzp ? yzp->shape.type : x->shape.type;
  if (out_t != x->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "zero point Y_zero_point has type %s but X has type %s",
                    tname(out_t), tname(x->shape.type));
  TRY(dequant(ctx, x, xs, xzp, &v));
  if (leaky) {
    float alpha = graph_node_attr_float_or(ctx->node, "alpha", 0.01f);
    hlo_instr *zero, *neg, *ge;
    L(oplib_full_like(ctx->comp, v, HLO_TYPE_COUNT, 0, &zero));
    L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, v, alpha, &neg));
    L(hlo_build_compare(ctx->comp, HLO_DIR_GE, v, zero, &ge));
    L(hlo_build_select(ctx->comp, ge, v, neg, &v));
  } else {
    L(hlo_build_unary(ctx->comp, HLO_OP_LOGISTIC, v, &v));
  }
  TRY(quantize_f32(ctx, v, ys, yzp, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp), attribute channels_last:
 * the s32 sum of x - zx over the spatial dims, times x_scale / (y_scale * count). */
static kiln_status lower_ms_gap(op_lower_ctx *ctx) {
  hlo_instr *x, *xs, *xzp, *ys, *yzp, *acc, *mult, *y;
  TRY(ms_triple(ctx, 0, "X", "x_scale", "x_zero_point", &x, &xs, &xzp));
  TRY(ms_triple(ctx, 2, NULL, "y_scale", "y_zero_point", NULL, &ys, &yzp));
  hlo_type out_t = yzp ? yzp->shape.type : x->shape.type;
  int r = x->shape.rank;
  if (r < 3) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "X must have rank >= 3, got rank %d", r);
  bool last = graph_node_attr_int_or(ctx->node, "channels_last", 0) != 0;
  int64_t axes[HLO_MAX_RANK], count = 1, dims[HLO_MAX_RANK];
  int n = 0;
  for (int i = 0; i < r; i++) {
    bool spatial = last ? i >= 1 && i < r - 1 : i >= 2;
    dims[i] = spatial ? 1 : x->shape.dims[i];
    if (spatial) {
      axes[n++] = i;
      count *= x->shape.dims[i];
    }
  }
  TRY(sub_zp(ctx, x, xzp, &acc));
  L(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, acc, n, axes, false, &acc));
  L(oplib_reshape(ctx->comp, acc, r, dims, &acc));
  L(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, ys, (double)(count ? count : 1), &mult));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, xs, mult, &mult));
  TRY(requantize(ctx, acc, mult, yzp, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

/* QLinearConcat(Y_scale, Y_zp, X1, X1_scale, X1_zp, X2, ...), attribute axis: each input
 * requantised to (Y_scale, Y_zp), then concatenated. */
static kiln_status lower_ms_concat(op_lower_ctx *ctx) {
  hlo_instr *ys, *yzp;
  TRY(req_input(ctx, 0, "Y_scale", &ys));
  TRY(need_float_scale(ctx, ys, "Y_scale"));
  TRY(per_tensor(ctx, ys, "Y_scale", &ys));
  L(oplib_convert(ctx->comp, ys, HLO_F32, &ys));
  TRY(req_input(ctx, 1, "Y_zero_point", &yzp));
  TRY(need_8bit(ctx, yzp, "Y_zero_point"));
  hlo_type out_t = yzp->shape.type;
  TRY(per_tensor(ctx, yzp, "Y_zero_point", &yzp));
  int n_pos = ctx->n_inputs; /* absent inputs are not expected in QLinearConcat */
  if (graph_node_attr(ctx->node, "_absent_inputs"))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "QLinearConcat does not take absent inputs");
  if (n_pos < 5 || (n_pos - 2) % 3 != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "expects Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got %d inputs", n_pos);
  int k = (n_pos - 2) / 3;
  if (k > 1024) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "too many inputs (%d)", k);
  hlo_instr *parts[1024];
  int rank = -1;
  for (int i = 0; i < k; i++) {
    hlo_instr *x, *xs, *xzp, *v;
    char xn[32], sn[32], zn[32];
    snprintf(xn, sizeof xn, "X%d", i + 1);
    snprintf(sn, sizeof sn, "X%d_scale", i + 1);
    snprintf(zn, sizeof zn, "X%d_zero_point", i + 1);
    TRY(ms_triple(ctx, 2 + 3 * i, xn, sn, zn, &x, &xs, &xzp));
    if (x->shape.type != out_t)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s has type %s but Y_zero_point has type %s", xn,
                      tname(x->shape.type), tname(out_t));
    if (rank < 0) rank = x->shape.rank;
    TRY(dequant(ctx, x, xs, xzp, &v));
    TRY(quantize_f32(ctx, v, ys, yzp, out_t, &parts[i]));
  }
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), rank, &axis));
  hlo_instr *y;
  L(oplib_concat(ctx->comp, k, parts, axis, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_quant_defs[] = {
    {"com.microsoft.QGemm", 0, 0, lower_ms_qgemm, NULL},
    {"com.microsoft.QLinearAdd", 0, 0, lower_ms_binary, NULL},
    {"com.microsoft.QLinearConcat", 0, 0, lower_ms_concat, NULL},
    {"com.microsoft.QLinearGlobalAveragePool", 0, 0, lower_ms_gap, NULL},
    {"com.microsoft.QLinearLeakyRelu", 0, 0, lower_ms_unary, NULL},
    {"com.microsoft.QLinearMul", 0, 0, lower_ms_binary, NULL},
    {"com.microsoft.QLinearSigmoid", 0, 0, lower_ms_unary, NULL},
    {"onnx.ConvInteger", 0, 0, lower_conv_integer, NULL},
    {"onnx.DynamicQuantizeLinear", 0, 0, lower_dynamic_quantize, NULL},
    {"onnx.MatMulInteger", 0, 0, lower_matmul_integer, NULL},
    {"onnx.QLinearConv", 0, 0, lower_qlinear_conv, NULL},
    {"onnx.QLinearMatMul", 0, 0, lower_qlinear_matmul, NULL},
};

const op_table onnx_quant_ops = {"onnx.quant", (int)(sizeof onnx_quant_defs / sizeof onnx_quant_defs[0]),
                                 onnx_quant_defs};
