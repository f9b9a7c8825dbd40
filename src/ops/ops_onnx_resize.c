/* ONNX Resize (opsets 10-19, antialias included) and the deprecated Upsample.
 *
 * Resampling is separable: every mode ONNX defines (nearest, linear, cubic) computes
 * each output coordinate of an axis from one input coordinate, and the N-D result is
 * the product of per-axis interpolations. So the lowering plans each resized axis on
 * the host (source coordinate per output index through the coordinate transformation,
 * then the taps: source indices and weights), and emits per tap a constant-index
 * gather along the axis times a constant weight vector. Coordinates are computed in
 * float32 with ONNX Runtime's formulas (including its rule that an axis of scale 1 is
 * copied untransformed and its opset-10 "simple" nearest rounding), so nearest-neighbour
 * index choices agree bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

typedef enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;
typedef enum rs_coord {
  RS_HALF_PIXEL,
  RS_ASYMMETRIC,
  RS_PYTORCH_HALF_PIXEL,
  RS_TF_HALF_PIXEL_FOR_NN,
  RS_ALIGN_CORNERS,
  RS_TF_CROP_AND_RESIZE,
  RS_HALF_PIXEL_SYMMETRIC
} rs_coord;
typedef enum rs_nearest { RS_SIMPLE, RS_ROUND_PREFER_FLOOR, RS_ROUND_PREFER_CEIL, RS_FLOOR, RS_CEIL } rs_nearest;

typedef struct rs_params {
  rs_mode mode;
  rs_coord coord;
  rs_nearest nearest;
  float cubic_a;
  bool exclude_outside;
  bool antialias; /* linear/cubic filters stretched by 1/scale when downsampling (opset 18) */
  float extrapolation;
} rs_params;

static float rs_original(const rs_params *p, float x, float scale, float out_len, float in_len, float roi_start,
                         float roi_end) {
  switch (p->coord) {
    case RS_ASYMMETRIC:
      return x / scale;
    case RS_PYTORCH_HALF_PIXEL:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case RS_TF_HALF_PIXEL_FOR_NN:
      return (x + 0.5f) / scale;
    case RS_ALIGN_CORNERS:
      return out_len == 1 ? 0 : x * (in_len - 1) / (out_len - 1);
    case RS_TF_CROP_AND_RESIZE: {
      double orig = out_len > 1 ? roi_start * (in_len - 1) + (x * (roi_end - roi_start) * (in_len - 1)) / (out_len - 1)
                                : 0.5 * (roi_start + roi_end) * (in_len - 1);
      return (float)orig;
    }
    case RS_HALF_PIXEL_SYMMETRIC: {
      float output_width = scale * in_len;
      float adjustment = out_len / output_width;
      float center = in_len / 2;
      float offset = center * (1 - adjustment);
      return (float)(offset + (x + 0.5) / scale - 0.5);
    }
    default:
      return ((x + 0.5f) / scale) - 0.5f;
  }
}

static int64_t rs_nearest_index(rs_nearest mode, float x, bool down) {
  switch (mode) {
    case RS_SIMPLE:
      return down ? (int64_t)ceilf(x) : (int64_t)x;
    case RS_ROUND_PREFER_CEIL:
      return (int64_t)roundf(x);
    case RS_FLOOR:
      return (int64_t)floorf(x);
    case RS_CEIL:
      return (int64_t)ceilf(x);
    default:
      if (x == (float)(int64_t)x + 0.5f) return (int64_t)floorf(x);
      return (int64_t)roundf(x);
  }
}

/* Taps of one axis: out x ntaps source indices and weights, plus the extrapolation
 * mask (tf_crop_and_resize). */
typedef struct rs_axis {
  int ntaps;
  int64_t *idx;
  double *w;
  bool *outside;
  bool any_outside;
} rs_axis;

static void rs_axis_free(rs_axis *a) {
  free(a->idx);
  free(a->w);
  free(a->outside);
}

/* The cubic convolution kernel of parameter A at distance x. */
static double rs_cubic(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/* Antialiased taps of one output (ONNX Resize's antialias=1): the linear (support 1) or
 * cubic (support 2) filter stretched by 1/s, s = min(scale, 1), over the ntaps input
 * positions around orig; orig's integer part is the tap base, with an integral orig
 * counted as the right end of the interval below it (ratio in (0, 1]). Positions past
 * the edges read the edge element, or (exclude_outside) drop out before the weights
 * are normalised to sum 1. */
static void rs_antialias_taps(const rs_params *p, int64_t in, float scale, float orig, int ntaps, int64_t *ix,
                              double *w) {
  double s = scale < 1 ? scale : 1;
  double base = floor((double)orig), ratio = (double)orig - base;
  if (ratio == 0) {
    ratio = 1;
    base -= 1;
  }
  int start = 1 - ntaps / 2;
  double sum = 0;
  for (int t = 0; t < ntaps; t++) {
    double at = (double)(start + t);
    double c = p->mode == RS_LINEAR ? fmax(0.0, 1 - fabs((at - ratio) * s)) : rs_cubic((at - ratio) * s, p->cubic_a);
    int64_t j = (int64_t)base + start + t;
    if (p->exclude_outside && (j < 0 || j >= in)) c = 0;
    ix[t] = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
    w[t] = c;
    sum += c;
  }
  for (int t = 0; t < ntaps; t++) w[t] = sum != 0 ? w[t] / sum : 0;
}

/* Taps per output of an antialiased axis: 2 - 2 * (floor(-support / s) + 1). */
static int rs_antialias_ntaps(const rs_params *p, float scale) {
  double s = scale < 1 ? scale : 1, support = p->mode == RS_LINEAR ? 1 : 2;
  return 2 - 2 * ((int)floor(-support / s) + 1);
}

static void rs_plan_axis(const rs_params *p, int64_t in, int64_t out, float scale, float roi_start, float roi_end,
                         rs_axis *a) {
  bool aa = p->antialias && p->mode != RS_NEAREST;
  a->ntaps = aa ? rs_antialias_ntaps(p, scale) : p->mode == RS_NEAREST ? 1 : p->mode == RS_LINEAR ? 2 : 4;
  size_t n = (size_t)(out ? out : 1) * (size_t)a->ntaps;
  a->idx = malloc(n * sizeof *a->idx);
  a->w = malloc(n * sizeof *a->w);
  a->outside = calloc((size_t)(out ? out : 1), sizeof *a->outside);
  if (!a->idx || !a->w || !a->outside) abort();
  a->any_outside = false;
  bool extrapolate = p->coord == RS_TF_CROP_AND_RESIZE;
  for (int64_t o = 0; o < out; o++) {
    float orig = rs_original(p, (float)o, scale, (float)out, (float)in, roi_start, roi_end);
    if (extrapolate && (orig < 0 || orig > (float)(in - 1))) {
      a->outside[o] = true;
      a->any_outside = true;
    }
    int64_t *ix = a->idx + o * a->ntaps;
    double *w = a->w + o * a->ntaps;
    if (aa) {
      rs_antialias_taps(p, in, scale, orig, a->ntaps, ix, w);
    } else if (p->mode == RS_NEAREST) {
      int64_t i = rs_nearest_index(p->nearest, orig, scale < 1);
      ix[0] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
      w[0] = 1;
    } else if (p->mode == RS_LINEAR) {
      float v = fmaxf(0.0f, fminf(orig, (float)(in - 1)));
      int64_t i1 = (int64_t)v < in - 1 ? (int64_t)v : in - 1, i2 = i1 + 1 < in - 1 ? i1 + 1 : in - 1;
      float d1 = fabsf(v - (float)i1), d2 = fabsf(v - (float)i2);
      if (i1 == i2) d1 = d2 = 0.5f;
      ix[0] = i1;
      ix[1] = i2;
      w[0] = d2;
      w[1] = d1;
    } else {
      int64_t xi = (int64_t)floorf(orig);
      float s = fabsf(orig - (float)xi), A = p->cubic_a;
      float c[4];
      c[0] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
      c[1] = ((A + 2) * s - (A + 3)) * s * s + 1;
      c[2] = ((A + 2) * (1 - s) - (A + 3)) * (1 - s) * (1 - s) + 1;
      c[3] = ((A * (2 - s) - 5 * A) * (2 - s) + 8 * A) * (2 - s) - 4 * A;
      float sum = 1;
      if (p->exclude_outside) {
        sum = 0;
        for (int t = 0; t < 4; t++) {
          int64_t j = xi - 1 + t;
          if (j < 0 || j >= in) c[t] = 0;
          sum += c[t];
        }
      }
      for (int t = 0; t < 4; t++) {
        int64_t j = xi - 1 + t;
        ix[t] = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
        w[t] = c[t] / sum;
      }
    }
  }
}

/* y resampled along `axis` by a's taps (compute type of y). */
static kiln_status rs_apply_axis(op_lower_ctx *ctx, hlo_instr *y, int axis, int64_t out, const rs_axis *a,
                                 hlo_instr **res) {
  int64_t *col = malloc((size_t)(out ? out : 1) * sizeof *col);
  double *wc = malloc((size_t)(out ? out : 1) * sizeof *wc);
  if (!col || !wc) abort();
  hlo_instr *acc = NULL;
  kiln_status st = NULL;
  int r = y->shape.rank;
  for (int t = 0; t < a->ntaps && !st; t++) {
    for (int64_t o = 0; o < out; o++) {
      col[o] = a->idx[o * a->ntaps + t];
      wc[o] = a->w[o * a->ntaps + t];
    }
    hlo_instr *g, *wv, *wb;
    st = oplib_take_constant(ctx->comp, y, axis, out, col, &g);
    if (!st && a->ntaps > 1) {
      st = oplib_const_f64s(ctx->comp, y->shape.type, 1, &out, wc, &wv);
      int64_t ax = axis;
      if (!st) st = hlo_build_broadcast(ctx->comp, wv, r, g->shape.dims, &ax, &wb);
      if (!st) st = hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, g, wb, &g);
    }
    if (!st) {
      if (acc)
        st = hlo_build_binary(ctx->comp, HLO_OP_ADD, acc, g, &acc);
      else
        acc = g;
    }
  }
  free(col);
  free(wc);
  L(st);
  *res = acc;
  return NULL;
}

static kiln_status rs_parse(op_lower_ctx *ctx, bool legacy, rs_params *p) {
  const graph_node *n = ctx->node;
  const char *mode = onnx_attr_string(n, "mode", "nearest");
  if (strcmp(mode, "nearest") == 0)
    p->mode = RS_NEAREST;
  else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
    p->mode = RS_LINEAR;
  else if (strcmp(mode, "cubic") == 0)
    p->mode = RS_CUBIC;
  else
    return op_error(n, KILN_INVALID_ARGUMENT, "unknown mode \"%s\"", mode);
  p->coord = RS_ASYMMETRIC;
  p->nearest = RS_SIMPLE;
  if (!legacy) {
    const char *c = onnx_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    static const struct {
      const char *name;
      rs_coord v;
    } coords[] = {{"half_pixel", RS_HALF_PIXEL},
                  {"asymmetric", RS_ASYMMETRIC},
                  {"pytorch_half_pixel", RS_PYTORCH_HALF_PIXEL},
                  {"tf_half_pixel_for_nn", RS_TF_HALF_PIXEL_FOR_NN},
                  {"align_corners", RS_ALIGN_CORNERS},
                  {"tf_crop_and_resize", RS_TF_CROP_AND_RESIZE},
                  {"half_pixel_symmetric", RS_HALF_PIXEL_SYMMETRIC}};
    size_t i;
    for (i = 0; i < sizeof coords / sizeof coords[0]; i++)
      if (strcmp(coords[i].name, c) == 0) break;
    if (i == sizeof coords / sizeof coords[0])
      return op_error(n, KILN_INVALID_ARGUMENT, "unknown coordinate_transformation_mode \"%s\"", c);
    p->coord = coords[i].v;
    const char *nm = onnx_attr_string(n, "nearest_mode", "round_prefer_floor");
    if (strcmp(nm, "round_prefer_floor") == 0)
      p->nearest = RS_ROUND_PREFER_FLOOR;
    else if (strcmp(nm, "round_prefer_ceil") == 0)
      p->nearest = RS_ROUND_PREFER_CEIL;
    else if (strcmp(nm, "floor") == 0)
      p->nearest = RS_FLOOR;
    else if (strcmp(nm, "ceil") == 0)
      p->nearest = RS_CEIL;
    else
      return op_error(n, KILN_INVALID_ARGUMENT, "unknown nearest_mode \"%s\"", nm);
  }
  p->cubic_a = graph_node_attr_float_or(n, "cubic_coeff_a", -0.75f);
  p->exclude_outside = graph_node_attr_int_or(n, "exclude_outside", 0) != 0;
  p->antialias = graph_node_attr_int_or(n, "antialias", 0) != 0;
  p->extrapolation = graph_node_attr_float_or(n, "extrapolation_value", 0.0f);
  return NULL;
}

/* Reads a float list from a constant tensor. */
static kiln_status rs_floats(op_lower_ctx *ctx, const graph_tensor *t, const char *what, float *buf, int cap,
                             int *n) {
  hlo_type h;
  if (!graph_dtype_to_hlo(t->dtype, &h) || !hlo_type_is_float(h))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be a float tensor", what);
  if (t->n > cap) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s has too many values", what);
  for (int64_t i = 0; i < t->n; i++) buf[i] = (float)tensor_get_f64(t, i);
  *n = (int)t->n;
  return NULL;
}

static kiln_status lower_resize(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  if (r < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  bool upsample = strcmp(graph_node_op_base(ctx->node), "Upsample") == 0;
  bool legacy = upsample || (ctx->opset > 0 && ctx->opset < 11);
  rs_params p = {0};
  TRY(rs_parse(ctx, legacy, &p));
  /* Axes the scales/sizes refer to (opset 18). */
  int64_t axes[HLO_MAX_RANK];
  int na = 0;
  bool have_axes;
  TRY(onnx_attr_ints(ctx->node, "axes", axes, HLO_MAX_RANK, &na, &have_axes));
  if (have_axes)
    L(oplib_normalize_axes(na, axes, r, true));
  else {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  float scales[HLO_MAX_RANK], given[HLO_MAX_RANK], roi[2 * HLO_MAX_RANK];
  int64_t out[HLO_MAX_RANK];
  for (int i = 0; i < r; i++) {
    scales[i] = 1;
    out[i] = x->shape.dims[i];
    roi[i] = 0;
    roi[r + i] = 1;
  }
  int ng = 0;
  bool have_scales = false, have_sizes = false;
  int64_t sizes[HLO_MAX_RANK];
  if (upsample && ctx->opset > 0 && ctx->opset < 9) {
    double sc[HLO_MAX_RANK];
    bool present;
    TRY(onnx_attr_floats(ctx->node, "scales", sc, HLO_MAX_RANK, &ng, &present));
    if (!present) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute scales is required");
    for (int i = 0; i < ng; i++) given[i] = (float)sc[i];
    have_scales = true;
  } else {
    int scales_pos = legacy ? 1 : 2;
    const graph_tensor *st = onnx_const_input(ctx, scales_pos);
    if (onnx_has_input(ctx, scales_pos) && !st)
      return op_error(ctx->node, KILN_UNIMPLEMENTED, "scales must be a compile-time constant");
    if (st && st->n > 0) {
      TRY(rs_floats(ctx, st, "scales", given, HLO_MAX_RANK, &ng));
      have_scales = true;
    }
    if (!legacy && !have_scales) {
      const graph_tensor *zt;
      TRY(onnx_require_const(ctx, 3, "sizes", &zt));
      L(oplib_tensor_ints(zt, "sizes", sizes, HLO_MAX_RANK, &ng));
      have_sizes = true;
    }
    if (!legacy && p.coord == RS_TF_CROP_AND_RESIZE) {
      const graph_tensor *rt;
      TRY(onnx_require_const(ctx, 1, "roi", &rt));
      float rv[2 * HLO_MAX_RANK];
      int nr;
      TRY(rs_floats(ctx, rt, "roi", rv, 2 * HLO_MAX_RANK, &nr));
      if (nr != 2 * na) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "roi must have %d values", 2 * na);
      for (int i = 0; i < na; i++) {
        roi[axes[i]] = rv[i];
        roi[r + axes[i]] = rv[na + i];
      }
    }
  }
  if (!have_scales && !have_sizes)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "one of scales and sizes is required");
  if (ng != na)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s has %d entries, expected %d", have_scales ? "scales" : "sizes",
                    ng, na);
  if (have_scales) {
    for (int i = 0; i < na; i++) {
      float s = given[i];
      if (!(s > 0) || !isfinite(s) || (upsample && s < 1))
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale %g is invalid", (double)s);
      int a = (int)axes[i];
      scales[a] = s;
      double o = (double)(s * (float)x->shape.dims[a]);
      if (o > (double)((int64_t)1 << 40))
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale %g makes the output too large", (double)s);
      out[a] = (int64_t)(s * (float)x->shape.dims[a]);
    }
  } else {
    for (int i = 0; i < na; i++) {
      int a = (int)axes[i];
      if (sizes[i] < 0 || sizes[i] > ((int64_t)1 << 40))
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "sizes[%d] = %lld is invalid", i, (long long)sizes[i]);
      if (x->shape.dims[a] == 0) {
        if (sizes[i] != 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot resize an empty dimension");
        scales[a] = 1;
      } else {
        scales[a] = (float)sizes[i] / (float)x->shape.dims[a];
      }
      out[a] = sizes[i];
    }
    const char *policy = onnx_attr_string(ctx->node, "keep_aspect_ratio_policy", "stretch");
    bool not_larger = strcmp(policy, "not_larger") == 0, not_smaller = strcmp(policy, "not_smaller") == 0;
    if (!not_larger && !not_smaller && strcmp(policy, "stretch") != 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unknown keep_aspect_ratio_policy \"%s\"", policy);
    if (not_larger || not_smaller) {
      float s = not_larger ? 3.402823466e38f : 1.175494351e-38f;
      for (int i = 0; i < na; i++) s = not_larger ? fminf(s, scales[axes[i]]) : fmaxf(s, scales[axes[i]]);
      for (int i = 0; i < na; i++) {
        int a = (int)axes[i];
        scales[a] = s;
        out[a] = (int64_t)roundf(s * (float)x->shape.dims[a]);
      }
    }
  }
  /* Antialiasing bounds the filter's taps (a 1/1000 downscale would take thousands). */
  if (p.antialias && p.mode != RS_NEAREST)
    for (int i = 0; i < r; i++)
      if (out[i] != x->shape.dims[i] && rs_antialias_ntaps(&p, scales[i]) > 256)
        return op_error(ctx->node, KILN_UNIMPLEMENTED,
                        "antialiased downsampling by %g along axis %d needs %d taps per output (kiln takes 256)",
                        (double)scales[i], i, rs_antialias_ntaps(&p, scales[i]));
  bool same = true;
  for (int i = 0; i < r; i++) same &= out[i] == x->shape.dims[i];
  if (same) {
    if (ctx->n_outputs > 0) ctx->outputs[0] = x;
    return NULL;
  }
  hlo_type t = x->shape.type;
  bool interp = p.mode != RS_NEAREST;
  hlo_type ct = interp && t != HLO_F64 ? HLO_F32 : t;
  L(oplib_convert(ctx->comp, x, ct, &y));
  hlo_instr *outside = NULL;
  for (int i = 0; i < r; i++) {
    int64_t in = x->shape.dims[i];
    if (scales[i] == 1 && out[i] == in) continue;
    if (in == 0 || out[i] == 0) {
      /* Nothing to interpolate from or to: an empty or extrapolated slab. */
      int64_t dims[HLO_MAX_RANK];
      memcpy(dims, y->shape.dims, (size_t)r * sizeof *dims);
      dims[i] = out[i];
      if (in == 0 && out[i] != 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot resize an empty dimension");
      L(oplib_full(ctx->comp, y->shape.type, 0, r, dims, &y));
      continue;
    }
    if (out[i] > ((int64_t)1 << 28))
      return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "output dimension %d of size %lld is too large", i,
                      (long long)out[i]);
    rs_axis a;
    rs_plan_axis(&p, in, out[i], scales[i], roi[i], roi[r + i], &a);
    kiln_status st = rs_apply_axis(ctx, y, i, out[i], &a, &y);
    if (!st && a.any_outside) {
      /* Mark extrapolated positions of this axis; applied once at the end. */
      int64_t *flags = malloc((size_t)out[i] * sizeof *flags);
      if (!flags) abort();
      for (int64_t o = 0; o < out[i]; o++) flags[o] = a.outside[o];
      hlo_instr *fv, *fb;
      int64_t ax = i, n1 = out[i];
      st = oplib_const_ints(ctx->comp, HLO_PRED, 1, &n1, flags, &fv);
      free(flags);
      if (!st) st = hlo_build_broadcast(ctx->comp, fv, r, out, &ax, &fb);
      if (!st) {
        if (outside) {
          /* Masks are built at the final output shape, so they combine directly. */
          st = hlo_build_binary(ctx->comp, HLO_OP_OR, outside, fb, &outside);
        } else {
          outside = fb;
        }
      }
    }
    rs_axis_free(&a);
    L(st);
  }
  if (outside) {
    hlo_instr *ev;
    L(oplib_full_like(ctx->comp, y, HLO_TYPE_COUNT, p.extrapolation, &ev));
    L(hlo_build_select(ctx->comp, outside, ev, y, &y));
  }
  if (ct != t) {
    if (hlo_type_is_int(t)) L(hlo_build_unary(ctx->comp, HLO_OP_ROUND_NEAREST_EVEN, y, &y));
    L(hlo_build_convert(ctx->comp, y, t, &y));
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

static const op_def onnx_resize_defs[] = {
    {"onnx.Resize", 0, ~(uint64_t)1, lower_resize, NULL},
    {"onnx.Upsample", 0, ~(uint64_t)1, lower_resize, NULL},
};

const op_table onnx_resize_ops = {"onnx.resize", (int)(sizeof onnx_resize_defs / sizeof onnx_resize_defs[0]),
                                  onnx_resize_defs};
