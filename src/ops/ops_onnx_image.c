/* ONNX image sampling ops: GridSample, AffineGrid, Col2Im, MaxUnpool, RoiAlign and
 * DeformConv, all as host kernels.
 *
 * Every one of these ops is data-dependent indexing: the sampled positions come from
 * the values of an input (a flow field, offsets, RoI boxes, pooling indices), so each
 * output element reads a handful of input elements that only the data names. They run
 * as host kernels over graph tensors rather than HLO gathers: floating inputs (half,
 * bfloat16, float, double) are widened to double once, the kernel computes in double,
 * and the result is rounded back to the input's dtype, so float32 results agree with
 * the spec's float32 references to well within its tolerances. Other dtypes are refused
 * with an error naming the input. Spatial ops are written for any number of spatial
 * dims (a position is sampled as a product of per-dimension taps: 1 for nearest, 2 for
 * linear, 4 for cubic), with the version limits the spec sets (GridSample-16 is 4-D
 * only; RoiAlign is 4-D). Semantics follow the spec and the behaviour its recorded
 * cases pin down: GridSample pads coordinates before nearest/linear sampling and pads
 * each tap for cubic (Keys' kernel, A = -0.75), rounds nearest half-to-even;
 * RoiAlign-10 (before coordinate_transformation_mode existed) behaves as
 * output_half_pixel, and its max mode takes the largest weighted corner of each sample;
 * MaxUnpool's indices address the unpooled shape inferred from the attributes, which an
 * output_shape input then extends at the end of each axis. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define MAXR GRAPH_MAX_RANK

/* ------------------------------------------------------------------ helpers ---- */

static bool is_float_dtype(graph_dtype d) {
  return d == GRAPH_DT_FLOAT || d == GRAPH_DT_DOUBLE || d == GRAPH_DT_HALF || d == GRAPH_DT_BFLOAT16;
}

/* "[1, 3, 4, 4]" into buf. */
static const char *shape_str(const graph_tensor *t, char *buf, size_t cap) {
  size_t at = 0;
  at += (size_t)snprintf(buf + at, cap - at, "[");
  for (int i = 0; i < t->rank && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  if (at < cap) snprintf(buf + at, cap - at, "]");
  return buf;
}

static kiln_status need_input(const op_host_ctx *ctx, int pos, const char *what, graph_tensor **out) {
  *out = onnx_host_input(ctx, pos);
  if (!*out) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %s is missing", what);
  return NULL;
}

static kiln_status need_float(const op_host_ctx *ctx, const graph_tensor *t, const char *what) {
  if (!is_float_dtype(t->dtype))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input %s has dtype %s; kiln supports float16, bfloat16, float and double",
                    what, graph_dtype_name(t->dtype));
  return NULL;
}

static kiln_status need_int(const op_host_ctx *ctx, const graph_tensor *t, const char *what) {
  if (t->dtype != GRAPH_DT_INT64 && t->dtype != GRAPH_DT_INT32)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %s must be int64 (or int32), got %s", what,
                    graph_dtype_name(t->dtype));
  return NULL;
}

/* n zeroed doubles (at least one, so a zero-size result still has a buffer). */
static double *zalloc_f64(int64_t n) {
  double *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v) abort();
  return v;
}

/* t's elements as a fresh array of doubles. */
static double *load_f64(const graph_tensor *t) {
  double *v = zalloc_f64(t->n);
  if (t->dtype == GRAPH_DT_FLOAT) {
    const float *f = t->data;
    for (int64_t i = 0; i < t->n; i++) v[i] = f[i];
  } else if (t->dtype == GRAPH_DT_DOUBLE) {
    memcpy(v, t->data, (size_t)t->n * sizeof *v);
  } else {
    for (int64_t i = 0; i < t->n; i++) v[i] = tensor_get_f64(t, i);
  }
  return v;
}

static void store_f64(graph_tensor *t, const double *v) {
  if (t->dtype == GRAPH_DT_FLOAT) {
    float *f = t->data;
    for (int64_t i = 0; i < t->n; i++) f[i] = (float)v[i];
  } else if (t->dtype == GRAPH_DT_DOUBLE) {
    memcpy(t->data, v, (size_t)t->n * sizeof *v);
  } else {
    for (int64_t i = 0; i < t->n; i++) tensor_set_f64(t, i, v[i]);
  }
}

/* Output 0 is created (and size-checked) before any work, computed into doubles, then
 * rounded into it: finish_output stores v on success, frees what is left either way. */
static kiln_status start_output(graph_dtype dt, int rank, const int64_t *dims, graph_tensor **y, double **v) {
  TRY(tensor_create(dt, rank, dims, y));
  *v = zalloc_f64((*y)->n);
  return NULL;
}

static kiln_status finish_output(op_host_ctx *ctx, kiln_status st, graph_tensor *y, double *v) {
  if (st) {
    tensor_free(y);
  } else {
    store_f64(y, v);
    ctx->outputs[0] = y;
  }
  free(v);
  return st;
}

static int64_t prod(const int64_t *d, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= d[i];
  return p;
}

/* Reads an int-list attribute with exactly n entries (or fills dflt when absent). */
static kiln_status attr_ints_n(const op_host_ctx *ctx, const char *name, int n, int64_t dflt, int64_t *buf) {
  int got = 0;
  bool present = false;
  TRY(onnx_attr_ints(ctx->node, name, buf, MAXR * 2, &got, &present));
  if (!present) {
    for (int i = 0; i < n; i++) buf[i] = dflt;
    return NULL;
  }
  if (got != n)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute %s has %d entries, expected %d", name, got, n);
  return NULL;
}

/* One sampling tap along one dimension: an index (-1: outside, reads zero) and a weight. */
typedef struct tap {
  int64_t index;
  double w;
} tap;

/* Sums weight products over every combination of the per-dim taps of one position:
 * img is one channel's image with dims sizes[0..r). */
static double sample_taps(const double *img, int r, const int64_t *sizes, tap taps[][4], const int *ntaps) {
  int k[MAXR] = {0};
  double acc = 0;
  for (;;) {
    double w = 1;
    int64_t at = 0;
    bool valid = true;
    for (int d = 0; d < r; d++) {
      const tap *t = &taps[d][k[d]];
      if (t->index < 0) {
        valid = false;
        break;
      }
      w *= t->w;
      at = at * sizes[d] + t->index;
    }
    if (valid && w != 0) acc += w * img[at];
    int d = r - 1;
    while (d >= 0 && ++k[d] == ntaps[d]) k[d--] = 0;
    if (d < 0) break;
  }
  return acc;
}

/* Linear taps of coordinate x in [0, size): corners outside read zero. */
static void linear_taps(double x, int64_t size, tap *t) {
  if (!(x > -2.0 && x < (double)size + 1.0)) { /* also NaN */
    t[0].index = t[1].index = -1;
    t[0].w = t[1].w = 0;
    return;
  }
  double f = floor(x);
  int64_t i0 = (int64_t)f;
  double a = x - f;
  t[0].index = i0 >= 0 && i0 < size ? i0 : -1;
  t[0].w = 1 - a;
  t[1].index = i0 + 1 >= 0 && i0 + 1 < size ? i0 + 1 : -1;
  t[1].w = a;
}

/* ---------------------------------------------------------------- GridSample ---- */

typedef enum { GS_LINEAR, GS_NEAREST, GS_CUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

static double gs_unnormalize(double g, int64_t size, bool align) {
  return align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
}

/* Reflects x into [lo2/2, hi2/2] (bounds given doubled, so half-pixel bounds stay exact). */
static double gs_reflect(double x, double lo2, double hi2) {
  if (lo2 == hi2) return 0;
  double lo = lo2 / 2, span = (hi2 - lo2) / 2;
  x = fabs(x - lo);
  double extra = fmod(x, span);
  double flips = floor(x / span);
  return fmod(flips, 2) == 0 ? lo + extra : lo + span - extra;
}

static double gs_pad_coord(double x, int64_t size, gs_pad pad, bool align) {
  if (pad == GS_ZEROS) return x;
  if (pad == GS_REFLECTION)
    x = align ? gs_reflect(x, 0, 2.0 * (double)(size - 1)) : gs_reflect(x, -1, 2.0 * (double)size - 1);
  if (isnan(x)) return 0;
  return fmin(fmax(x, 0), (double)(size - 1));
}

static void cubic_weights(double t, double w[4]) {
  const double A = -0.75;
  double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

static int gs_taps(double g, int64_t size, gs_mode mode, gs_pad pad, bool align, tap *t) {
  double x = gs_unnormalize(g, size, align);
  if (mode == GS_LINEAR) {
    linear_taps(gs_pad_coord(x, size, pad, align), size, t);
    return 2;
  }
  if (mode == GS_NEAREST) {
    x = gs_pad_coord(x, size, pad, align);
    t[0].w = 1;
    t[0].index = -1;
    if (x > -1.0 && x < (double)size) {
      int64_t i = (int64_t)nearbyint(x);
      if (i >= 0 && i < size) t[0].index = i;
    }
    return 1;
  }
  /* cubic: taps floor(x)-1 .. floor(x)+2, each padded on its own. */
  if (isnan(x)) {
    for (int k = 0; k < 4; k++) t[k].index = -1, t[k].w = 0;
    return 4;
  }
  x = fmin(fmax(x, -1e9), 1e9);
  double f = floor(x), w[4];
  cubic_weights(x - f, w);
  for (int k = 0; k < 4; k++) {
    double c = gs_pad_coord(f - 1 + k, size, pad, align);
    int64_t i = c > -1.0 && c < (double)size ? (int64_t)c : -1;
    t[k].index = i >= 0 && i < size ? i : -1;
    t[k].w = w[k];
  }
  return 4;
}

static kiln_status host_grid_sample(op_host_ctx *ctx) {
  graph_tensor *x, *grid;
  TRY(need_input(ctx, 0, "X", &x));
  TRY(need_input(ctx, 1, "grid", &grid));
  TRY(need_float(ctx, x, "X"));
  TRY(need_float(ctx, grid, "grid"));
  int since = op_onnx_since_version("GridSample", ctx->opset);
  int r = x->rank - 2;
  char b1[128], b2[128];
  if (r < 1 || grid->rank != x->rank || grid->dims[0] != x->dims[0] || grid->dims[grid->rank - 1] != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "X %s must be (N, C, D1..Dr) and grid %s (N, D1_out..Dr_out, r) with r = rank(X) - 2 >= 1",
                    shape_str(x, b1, sizeof b1), shape_str(grid, b2, sizeof b2));
  if (since < 20 && r != 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "GridSample-%d takes 4-D X only, got X %s", since,
                    shape_str(x, b1, sizeof b1));
  const char *ms = onnx_attr_string(ctx->node, "mode", since < 20 ? "bilinear" : "linear");
  gs_mode mode;
  if (!strcmp(ms, "linear") || !strcmp(ms, "bilinear"))
    mode = GS_LINEAR;
  else if (!strcmp(ms, "nearest"))
    mode = GS_NEAREST;
  else if (!strcmp(ms, "cubic") || !strcmp(ms, "bicubic"))
    mode = GS_CUBIC;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unknown mode \"%s\" (expected linear, nearest or cubic)", ms);
  const char *ps = onnx_attr_string(ctx->node, "padding_mode", "zeros");
  gs_pad pad;
  if (!strcmp(ps, "zeros"))
    pad = GS_ZEROS;
  else if (!strcmp(ps, "border"))
    pad = GS_BORDER;
  else if (!strcmp(ps, "reflection"))
    pad = GS_REFLECTION;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "unknown padding_mode \"%s\" (expected zeros, border or reflection)", ps);
  bool align = graph_node_attr_int_or(ctx->node, "align_corners", 0) != 0;
  if (mode == GS_CUBIC && r > 3)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "cubic mode over %d spatial dims (kiln supports up to 3)", r);

  int64_t N = x->dims[0], C = x->dims[1];
  const int64_t *in_sp = x->dims + 2;
  int64_t in_size = prod(in_sp, r), out_size = prod(grid->dims + 1, r);
  int64_t odims[MAXR];
  odims[0] = N;
  odims[1] = C;
  memcpy(odims + 2, grid->dims + 1, (size_t)r * sizeof *odims);
  graph_tensor *yt;
  double *yv;
  TRY(start_output(x->dtype, x->rank, odims, &yt, &yv));
  double *xv = load_f64(x), *gv = load_f64(grid);
  if (!yv) abort();
  tap taps[MAXR][4];
  int ntaps[MAXR];
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < out_size; o++) {
      const double *g = gv + (n * out_size + o) * r;
      /* spatial dim d (X order) takes grid component r-1-d (x addresses the last dim). */
      for (int d = 0; d < r; d++) ntaps[d] = gs_taps(g[r - 1 - d], in_sp[d], mode, pad, align, taps[d]);
      for (int64_t c = 0; c < C; c++)
        yv[(n * C + c) * out_size + o] = sample_taps(xv + (n * C + c) * in_size, r, in_sp, taps, ntaps);
    }
  free(xv);
  free(gv);
  return finish_output(ctx, NULL, yt, yv);
}

/* ---------------------------------------------------------------- AffineGrid ---- */

static kiln_status host_affine_grid(op_host_ctx *ctx) {
  graph_tensor *theta, *size;
  TRY(need_input(ctx, 0, "theta", &theta));
  TRY(need_input(ctx, 1, "size", &size));
  TRY(need_float(ctx, theta, "theta"));
  TRY(need_int(ctx, size, "size"));
  char b1[128];
  if (size->rank != 1 || (size->n != 4 && size->n != 5))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size must be a 1-D tensor of 4 or 5 values, got %s",
                    shape_str(size, b1, sizeof b1));
  int r = (int)size->n - 2; /* spatial dims: 2 or 3 */
  int64_t sz[5];
  for (int i = 0; i < (int)size->n; i++) {
    sz[i] = tensor_get_s64(size, i);
    if (sz[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size[%d] = %lld is negative", i, (long long)sz[i]);
  }
  if (theta->rank != 3 || theta->dims[0] != sz[0] || theta->dims[1] != r || theta->dims[2] != r + 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "theta %s must be (N, %d, %d) with N = size[0] = %lld",
                    shape_str(theta, b1, sizeof b1), r, r + 1, (long long)sz[0]);
  bool align = graph_node_attr_int_or(ctx->node, "align_corners", 0) != 0;
  int64_t N = sz[0];
  const int64_t *sp = sz + 2; /* (D,) H, W */
  int64_t npos = prod(sp, r);
  int64_t odims[MAXR];
  odims[0] = N;
  memcpy(odims + 1, sp, (size_t)r * sizeof *odims);
  odims[r + 1] = r;
  graph_tensor *yt;
  double *yv;
  TRY(start_output(theta->dtype, r + 2, odims, &yt, &yv));
  double *tv = load_f64(theta);
  if (!yv) abort();
  for (int64_t n = 0; n < N; n++) {
    const double *th = tv + n * r * (r + 1);
    for (int64_t p = 0; p < npos; p++) {
      /* base[k]: k = 0 is x (last spatial dim), 1 is y, 2 is z; base[r] = 1. */
      double base[4];
      int64_t rem = p;
      for (int d = r - 1; d >= 0; d--) {
        int64_t S = sp[d], i = rem % S;
        rem /= S;
        double v;
        if (S <= 1)
          v = 0;
        else if (align)
          v = -1 + 2.0 * (double)i / (double)(S - 1);
        else
          v = (2.0 * (double)i + 1) / (double)S - 1;
        base[r - 1 - d] = v;
      }
      base[r] = 1;
      for (int k = 0; k < r; k++) {
        double acc = 0;
        for (int j = 0; j <= r; j++) acc += th[k * (r + 1) + j] * base[j];
        yv[(n * npos + p) * r + k] = acc;
      }
    }
  }
  free(tv);
  return finish_output(ctx, NULL, yt, yv);
}

/* -------------------------------------------------------------------- Col2Im ---- */

static kiln_status host_col2im(op_host_ctx *ctx) {
  graph_tensor *x, *ims, *bls;
  TRY(need_input(ctx, 0, "input", &x));
  TRY(need_input(ctx, 1, "image_shape", &ims));
  TRY(need_input(ctx, 2, "block_shape", &bls));
  TRY(need_float(ctx, x, "input"));
  TRY(need_int(ctx, ims, "image_shape"));
  TRY(need_int(ctx, bls, "block_shape"));
  char b1[128];
  int r = (int)ims->n;
  if (ims->rank != 1 || bls->rank != 1 || bls->n != ims->n || r < 1 || r > MAXR - 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "image_shape and block_shape must be 1-D with the same length (1..%d), got %lld and %lld values",
                    MAXR - 2, (long long)ims->n, (long long)bls->n);
  if (x->rank != 3)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %s must be 3-D (N, C * prod(block_shape), L)",
                    shape_str(x, b1, sizeof b1));
  int64_t img[MAXR], blk[MAXR], dil[MAXR], pads[2 * MAXR], str[MAXR], nb[MAXR];
  for (int i = 0; i < r; i++) {
    img[i] = tensor_get_s64(ims, i);
    blk[i] = tensor_get_s64(bls, i);
    if (img[i] < 0 || blk[i] < 1)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "image_shape[%d] = %lld and block_shape[%d] = %lld are invalid",
                      i, (long long)img[i], i, (long long)blk[i]);
  }
  TRY(attr_ints_n(ctx, "dilations", r, 1, dil));
  TRY(attr_ints_n(ctx, "pads", 2 * r, 0, pads));
  TRY(attr_ints_n(ctx, "strides", r, 1, str));
  int64_t L = 1;
  for (int i = 0; i < r; i++) {
    if (dil[i] < 1 || str[i] < 1 || pads[i] < 0 || pads[r + i] < 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dilations and strides must be >= 1 and pads >= 0 (axis %d)", i);
    int64_t span = img[i] + pads[i] + pads[r + i] - (dil[i] * (blk[i] - 1) + 1);
    if (span < 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "block %lld (dilated) exceeds padded image %lld on axis %d",
                      (long long)(dil[i] * (blk[i] - 1) + 1), (long long)(img[i] + pads[i] + pads[r + i]), i);
    nb[i] = span / str[i] + 1;
    L *= nb[i];
  }
  int64_t K = prod(blk, r);
  if (x->dims[1] % K != 0 || x->dims[2] != L)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "input %s must be (N, C * %lld, %lld) for these image, block, pads, strides and dilations",
                    shape_str(x, b1, sizeof b1), (long long)K, (long long)L);
  int64_t N = x->dims[0], C = x->dims[1] / K, isz = prod(img, r);
  int64_t odims[MAXR];
  odims[0] = N;
  odims[1] = C;
  memcpy(odims + 2, img, (size_t)r * sizeof *odims);
  graph_tensor *yt;
  double *yv;
  TRY(start_output(x->dtype, r + 2, odims, &yt, &yv));
  double *xv = load_f64(x);
  if (!yv) abort();
  for (int64_t k = 0; k < K; k++) {
    int64_t kc[MAXR], rem = k;
    for (int d = r - 1; d >= 0; d--) kc[d] = rem % blk[d], rem /= blk[d];
    for (int64_t l = 0; l < L; l++) {
      int64_t at = 0;
      bool inside = true;
      rem = l;
      int64_t pos[MAXR];
      for (int d = r - 1; d >= 0; d--) {
        int64_t bi = rem % nb[d];
        rem /= nb[d];
        pos[d] = bi * str[d] - pads[d] + kc[d] * dil[d];
        if (pos[d] < 0 || pos[d] >= img[d]) inside = false;
      }
      if (!inside) continue;
      for (int d = 0; d < r; d++) at = at * img[d] + pos[d];
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) yv[(n * C + c) * isz + at] += xv[(n * C * K + c * K + k) * L + l];
    }
  }
  free(xv);
  return finish_output(ctx, NULL, yt, yv);
}

/* ----------------------------------------------------------------- MaxUnpool ---- */

static kiln_status host_max_unpool(op_host_ctx *ctx) {
  graph_tensor *x, *ind;
  TRY(need_input(ctx, 0, "X", &x));
  TRY(need_input(ctx, 1, "I", &ind));
  graph_tensor *oshape = onnx_host_input(ctx, 2);
  TRY(need_float(ctx, x, "X"));
  TRY(need_int(ctx, ind, "I"));
  char b1[128], b2[128];
  int r = x->rank - 2;
  if (r < 1 || ind->rank != x->rank || memcmp(ind->dims, x->dims, (size_t)x->rank * sizeof *x->dims) != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "X %s must be (N, C, D1..Dn) and I %s of the same shape",
                    shape_str(x, b1, sizeof b1), shape_str(ind, b2, sizeof b2));
  int64_t ks[MAXR], str[MAXR], pads[2 * MAXR];
  int nk = 0;
  bool present = false;
  TRY(onnx_attr_ints(ctx->node, "kernel_shape", ks, MAXR, &nk, &present));
  if (!present || nk != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "kernel_shape must have %d entries for X %s", r,
                    shape_str(x, b1, sizeof b1));
  TRY(attr_ints_n(ctx, "strides", r, 1, str));
  TRY(attr_ints_n(ctx, "pads", 2 * r, 0, pads));
  int64_t inf[MAXR], out[MAXR];
  inf[0] = x->dims[0];
  inf[1] = x->dims[1];
  for (int d = 0; d < r; d++) {
    inf[d + 2] = (x->dims[d + 2] - 1) * str[d] - (pads[d] + pads[r + d]) + ks[d];
    if (inf[d + 2] < 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "the unpooled size of axis %d is negative (%lld)", d + 2,
                      (long long)inf[d + 2]);
  }
  memcpy(out, inf, sizeof out);
  if (oshape) {
    TRY(need_int(ctx, oshape, "output_shape"));
    if (oshape->rank != 1 || oshape->n != x->rank)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_shape %s must hold %d values",
                      shape_str(oshape, b1, sizeof b1), x->rank);
    for (int d = 0; d < x->rank; d++) {
      out[d] = tensor_get_s64(oshape, d);
      if (out[d] < inf[d])
        return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                        "output_shape[%d] = %lld is smaller than the unpooled size %lld the attributes give", d,
                        (long long)out[d], (long long)inf[d]);
    }
  }
  int64_t total_inf = prod(inf, x->rank);
  graph_tensor *yt;
  double *yv;
  TRY(start_output(x->dtype, x->rank, out, &yt, &yv));
  double *xv = load_f64(x);
  if (!yv) abort();
  kiln_status st = NULL;
  for (int64_t i = 0; i < x->n; i++) {
    int64_t idx = tensor_get_s64(ind, i);
    if (idx < 0 || idx >= total_inf) {
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "index I[%lld] = %lld is outside the unpooled tensor of %lld elements",
                    (long long)i, (long long)idx, (long long)total_inf);
      break;
    }
    /* Coordinates in the inferred shape, placed at the same coordinates of the output. */
    int64_t at = 0, mul = 1, rem = idx;
    for (int d = x->rank - 1; d >= 0; d--) {
      at += (rem % inf[d]) * mul;
      rem /= inf[d];
      mul *= out[d];
    }
    yv[at] = xv[i];
  }
  free(xv);
  return finish_output(ctx, st, yt, yv);
}

/* ------------------------------------------------------------------ RoiAlign ---- */

static kiln_status host_roi_align(op_host_ctx *ctx) {
  graph_tensor *x, *rois, *bi;
  TRY(need_input(ctx, 0, "X", &x));
  TRY(need_input(ctx, 1, "rois", &rois));
  TRY(need_input(ctx, 2, "batch_indices", &bi));
  TRY(need_float(ctx, x, "X"));
  TRY(need_float(ctx, rois, "rois"));
  TRY(need_int(ctx, bi, "batch_indices"));
  char b1[128], b2[128], b3[128];
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "X %s must be (N, C, H, W), rois %s (num_rois, 4) and batch_indices %s (num_rois)",
                    shape_str(x, b1, sizeof b1), shape_str(rois, b2, sizeof b2), shape_str(bi, b3, sizeof b3));
  int since = op_onnx_since_version("RoiAlign", ctx->opset);
  const char *ctm = onnx_attr_string(ctx->node, "coordinate_transformation_mode",
                                     since < 16 ? "output_half_pixel" : "half_pixel");
  bool half_pixel;
  if (!strcmp(ctm, "half_pixel"))
    half_pixel = true;
  else if (!strcmp(ctm, "output_half_pixel"))
    half_pixel = false;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "unknown coordinate_transformation_mode \"%s\" (expected half_pixel or output_half_pixel)", ctm);
  const char *ms = onnx_attr_string(ctx->node, "mode", "avg");
  bool is_max;
  if (!strcmp(ms, "avg"))
    is_max = false;
  else if (!strcmp(ms, "max"))
    is_max = true;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unknown mode \"%s\" (expected avg or max)", ms);
  int64_t oh = graph_node_attr_int_or(ctx->node, "output_height", 1);
  int64_t ow = graph_node_attr_int_or(ctx->node, "output_width", 1);
  int64_t sr = graph_node_attr_int_or(ctx->node, "sampling_ratio", 0);
  double scale = graph_node_attr_float_or(ctx->node, "spatial_scale", 1.0f);
  if (oh < 1 || ow < 1 || sr < 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "output_height %lld and output_width %lld must be >= 1 and sampling_ratio %lld >= 0", (long long)oh,
                    (long long)ow, (long long)sr);
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
  int64_t odims[4] = {R, C, oh, ow};
  graph_tensor *yt;
  double *yv;
  TRY(start_output(x->dtype, 4, odims, &yt, &yv));
  double *xv = load_f64(x), *rv = load_f64(rois);
  if (!yv) abort();
  kiln_status st = NULL;
  double off = half_pixel ? 0.5 : 0;
  for (int64_t ri = 0; ri < R && !st; ri++) {
    int64_t b = tensor_get_s64(bi, ri);
    if (b < 0 || b >= N) {
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "batch_indices[%lld] = %lld is outside [0, %lld)", (long long)ri,
                    (long long)b, (long long)N);
      break;
    }
    const double *box = rv + ri * 4;
    double x0 = box[0] * scale - off, y0 = box[1] * scale - off;
    double rw = box[2] * scale - off - x0, rh = box[3] * scale - off - y0;
    if (!half_pixel) {
      rw = fmax(rw, 1.0);
      rh = fmax(rh, 1.0);
    }
    double bh = rh / (double)oh, bw = rw / (double)ow;
    double gh_d = sr > 0 ? (double)sr : ceil(rh / (double)oh), gw_d = sr > 0 ? (double)sr : ceil(rw / (double)ow);
    /* Guard absurd boxes (a NaN or enormous extent) from exploding the sample count. */
    if (!(gh_d >= 0 && gh_d <= 1e6 && gw_d >= 0 && gw_d <= 1e6 && gh_d * gw_d <= 1e8)) {
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "roi %lld gives an unusable sampling grid (%g x %g)", (long long)ri,
                    gh_d, gw_d);
      break;
    }
    int64_t gh = (int64_t)gh_d, gw = (int64_t)gw_d;
    double count = fmax((double)(gh * gw), 1.0);
    for (int64_t c = 0; c < C; c++) {
      const double *img = xv + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++) {
          double acc = 0, mx = 0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; iy++) {
            double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double v[4] = {0, 0, 0, 0};
              if (!(y < -1.0 || y > (double)H || xx < -1.0 || xx > (double)W) && H > 0 && W > 0) {
                double yy = fmax(y, 0), xq = fmax(xx, 0);
                int64_t yl = (int64_t)yy, xl = (int64_t)xq, yh, xh;
                if (yl >= H - 1) {
                  yh = yl = H - 1;
                  yy = (double)yl;
                } else
                  yh = yl + 1;
                if (xl >= W - 1) {
                  xh = xl = W - 1;
                  xq = (double)xl;
                } else
                  xh = xl + 1;
                double ly = yy - (double)yl, lx = xq - (double)xl, hy = 1 - ly, hx = 1 - lx;
                v[0] = hy * hx * img[yl * W + xl];
                v[1] = hy * lx * img[yl * W + xh];
                v[2] = ly * hx * img[yh * W + xl];
                v[3] = ly * lx * img[yh * W + xh];
              }
              if (is_max) {
                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                mx = any ? fmax(mx, m) : m;
                any = true;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          }
          yv[((ri * C + c) * oh + ph) * ow + pw] = is_max ? mx : acc / count;
        }
    }
  }
  free(xv);
  free(rv);
  return finish_output(ctx, st, yt, yv);
}

/* ---------------------------------------------------------------- DeformConv ---- */

static kiln_status host_deform_conv(op_host_ctx *ctx) {
  graph_tensor *x, *w, *offt;
  TRY(need_input(ctx, 0, "X", &x));
  TRY(need_input(ctx, 1, "W", &w));
  TRY(need_input(ctx, 2, "offset", &offt));
  graph_tensor *bias = onnx_host_input(ctx, 3), *mask = onnx_host_input(ctx, 4);
  TRY(need_float(ctx, x, "X"));
  TRY(need_float(ctx, w, "W"));
  TRY(need_float(ctx, offt, "offset"));
  if (bias) TRY(need_float(ctx, bias, "B"));
  if (mask) TRY(need_float(ctx, mask, "mask"));
  char b1[128], b2[128], b3[128];
  int r = x->rank - 2;
  if (r < 1 || w->rank != x->rank || offt->rank != x->rank || offt->dims[0] != x->dims[0])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "X %s, W %s and offset %s must have the same rank >= 3 and offset the batch size of X",
                    shape_str(x, b1, sizeof b1), shape_str(w, b2, sizeof b2), shape_str(offt, b3, sizeof b3));
  int64_t group = graph_node_attr_int_or(ctx->node, "group", 1);
  int64_t og = graph_node_attr_int_or(ctx->node, "offset_group", 1);
  int64_t N = x->dims[0], C = x->dims[1], OC = w->dims[0];
  if (group < 1 || og < 1 || C % group != 0 || OC % group != 0 || w->dims[1] * group != C || C % og != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "X %s and W %s do not fit group %lld and offset_group %lld (C and oC must divide by group, "
                    "W[1] = C / group, C divide by offset_group)",
                    shape_str(x, b1, sizeof b1), shape_str(w, b2, sizeof b2), (long long)group, (long long)og);
  int64_t ks[MAXR], str[MAXR], dil[MAXR], pads[2 * MAXR];
  int nk = 0;
  bool present = false;
  TRY(onnx_attr_ints(ctx->node, "kernel_shape", ks, MAXR, &nk, &present));
  if (present && (nk != r || memcmp(ks, w->dims + 2, (size_t)r * sizeof *ks) != 0))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "kernel_shape does not match W %s", shape_str(w, b1, sizeof b1));
  memcpy(ks, w->dims + 2, (size_t)r * sizeof *ks);
  TRY(attr_ints_n(ctx, "strides", r, 1, str));
  TRY(attr_ints_n(ctx, "dilations", r, 1, dil));
  TRY(attr_ints_n(ctx, "pads", 2 * r, 0, pads));
  const int64_t *isp = x->dims + 2, *osp = offt->dims + 2;
  for (int d = 0; d < r; d++) {
    if (str[d] < 1 || dil[d] < 1 || pads[d] < 0 || pads[r + d] < 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "strides and dilations must be >= 1 and pads >= 0 (axis %d)", d);
    int64_t span = isp[d] + pads[d] + pads[r + d] - ((ks[d] - 1) * dil[d] + 1);
    int64_t want = span < 0 ? 0 : span / str[d] + 1;
    if (osp[d] != want)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "offset %s: spatial dim %d is %lld, but X %s, kernel, pads, strides and dilations give %lld",
                      shape_str(offt, b1, sizeof b1), d, (long long)osp[d], shape_str(x, b2, sizeof b2), (long long)want);
  }
  int64_t K = prod(ks, r), O = prod(osp, r), isz = prod(isp, r);
  if (offt->dims[1] != og * K * r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "offset %s must have offset_group * prod(kernel) * %d = %lld channels",
                    shape_str(offt, b1, sizeof b1), r, (long long)(og * K * r));
  if (mask && (mask->rank != x->rank || mask->dims[0] != N || mask->dims[1] != og * K ||
               memcmp(mask->dims + 2, osp, (size_t)r * sizeof *osp) != 0))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "mask %s must be (N, %lld, output spatial dims of offset %s)",
                    shape_str(mask, b1, sizeof b1), (long long)(og * K), shape_str(offt, b2, sizeof b2));
  if (bias && (bias->rank != 1 || bias->dims[0] != OC))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "B %s must be 1-D of length %lld", shape_str(bias, b1, sizeof b1),
                    (long long)OC);
  if (r > 3)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "DeformConv over %d spatial dims (kiln supports up to 3)", r);
  int64_t odims[MAXR];
  odims[0] = N;
  odims[1] = OC;
  memcpy(odims + 2, osp, (size_t)r * sizeof *odims);
  /* cols[c][k][o]: the (masked) sample of channel c for kernel position k at output o,
   * one batch element at a time: no bigger than the unfolded input of a convolution. */
  if ((double)C * (double)K * (double)O > 1e9)
    return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "the sampled columns (%lld x %lld x %lld) are too large",
                    (long long)C, (long long)K, (long long)O);
  graph_tensor *yt;
  double *yv;
  TRY(start_output(x->dtype, x->rank, odims, &yt, &yv));
  double *xv = load_f64(x), *wv = load_f64(w), *ov = load_f64(offt);
  double *mv = mask ? load_f64(mask) : NULL, *bv = bias ? load_f64(bias) : NULL;
  double *cols = zalloc_f64(C * K * O);
  int64_t cpg = C / og, icg = C / group, ocg = OC / group;
  tap taps[MAXR][4];
  int ntaps[MAXR];
  for (int64_t n = 0; n < N; n++) {
    for (int64_t g = 0; g < og; g++)
      for (int64_t k = 0; k < K; k++) {
        int64_t kc[MAXR], rem = k;
        for (int d = r - 1; d >= 0; d--) kc[d] = rem % ks[d], rem /= ks[d];
        for (int64_t o = 0; o < O; o++) {
          int64_t oc_[MAXR];
          rem = o;
          for (int d = r - 1; d >= 0; d--) oc_[d] = rem % osp[d], rem /= osp[d];
          for (int d = 0; d < r; d++) {
            double p = (double)(oc_[d] * str[d] - pads[d] + kc[d] * dil[d]) +
                       ov[((n * og + g) * K * r + k * r + d) * O + o];
            linear_taps(p, isp[d], taps[d]);
            ntaps[d] = 2;
          }
          double m = mv ? mv[((n * og + g) * K + k) * O + o] : 1.0;
          for (int64_t c = g * cpg; c < (g + 1) * cpg; c++)
            cols[(c * K + k) * O + o] = m * sample_taps(xv + (n * C + c) * isz, r, isp, taps, ntaps);
        }
      }
    for (int64_t oc = 0; oc < OC; oc++) {
      double *yo = yv + (n * OC + oc) * O;
      int64_t gi = oc / ocg;
      for (int64_t o = 0; o < O; o++) yo[o] = bv ? bv[oc] : 0;
      for (int64_t ci = 0; ci < icg; ci++) {
        int64_t c = gi * icg + ci;
        for (int64_t k = 0; k < K; k++) {
          double wk = wv[(oc * icg + ci) * K + k];
          const double *col = cols + (c * K + k) * O;
          for (int64_t o = 0; o < O; o++) yo[o] += wk * col[o];
        }
      }
    }
  }
  free(xv);
  free(wv);
  free(ov);
  free(mv);
  free(bv);
  free(cols);
  return finish_output(ctx, NULL, yt, yv);
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_image_defs[] = {
    {"onnx.GridSample", 0, 0, NULL, host_grid_sample},
    {"onnx.AffineGrid", 0, 0, NULL, host_affine_grid},
    {"onnx.Col2Im", 0, 0, NULL, host_col2im},
    {"onnx.MaxUnpool", 0, 0, NULL, host_max_unpool},
    {"onnx.RoiAlign", 0, 0, NULL, host_roi_align},
    {"onnx.DeformConv", 0, 0, NULL, host_deform_conv},
};

const op_table onnx_image_ops = {"onnx.image", (int)(sizeof onnx_image_defs / sizeof onnx_image_defs[0]),
                                 onnx_image_defs};
