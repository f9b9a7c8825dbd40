/* TensorFlow image ops: ResizeBilinear and ResizeNearestNeighbor (align_corners,
 * half_pixel_centers) lowered to gathers with compile-time source positions and
 * weights, and host kernels for CropAndResize and NonMaxSuppression (v1 to v5, with
 * score thresholds and soft-NMS).
 *
 * Source positions and weights are computed in single precision exactly as TF's
 * kernels do (resize_bilinear_op.cc, resize_nearest_neighbor_op.cc), and the
 * interpolation is evaluated in TF's order (along x within the two rows, then along
 * y), so results match TF up to the evaluation of one lerp. NMS reproduces TF's
 * candidate queue exactly: highest score first, ties to the lower box index, each
 * candidate compared against the boxes selected since it was last examined. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

/* ------------------------------------------------------------------ resize ---- */

static float resize_scale(int64_t in, int64_t out, bool align_corners) {
  return (align_corners && out > 1) ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

typedef struct resize_args {
  hlo_instr *images;
  int64_t in_h, in_w, out_h, out_w;
  bool align_corners, half_pixel;
} resize_args;

static kiln_status resize_prologue(op_lower_ctx *ctx, resize_args *a) {
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &a->images));
  int64_t size[TF_MAX_INTS];
  int n = 0;
  TRY(tf_const_ints(ctx, 1, "size", size, TF_MAX_INTS, &n));
  if (n != 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size must have 2 entries, has %d", n);
  if (a->images->shape.rank != 4) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "images must be 4-D (NHWC)");
  a->in_h = a->images->shape.dims[1];
  a->in_w = a->images->shape.dims[2];
  a->out_h = size[0];
  a->out_w = size[1];
  if (a->out_h <= 0 || a->out_w <= 0 || a->out_h > ((int64_t)1 << 24) || a->out_w > ((int64_t)1 << 24))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output size %lldx%lld is out of range", (long long)a->out_h,
                    (long long)a->out_w);
  if (a->in_h <= 0 || a->in_w <= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input images are empty");
  a->align_corners = graph_node_attr_bool_or(ctx->node, "align_corners", false);
  a->half_pixel = graph_node_attr_bool_or(ctx->node, "half_pixel_centers", false);
  if (a->align_corners && a->half_pixel)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "align_corners and half_pixel_centers cannot both be true");
  return NULL;
}

/* Lower/upper source rows and the weight of the upper one, per output position. */
static void bilinear_weights(int64_t in, int64_t out, bool align, bool half, int64_t *lower, int64_t *upper,
                             double *lerp) {
  float scale = resize_scale(in, out, align);
  for (int64_t o = 0; o < out; o++) {
    float v = half ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    float fl = floorf(v);
    int64_t lo = (int64_t)fl, hi = (int64_t)ceilf(v);
    lower[o] = lo < 0 ? 0 : lo;
    upper[o] = hi > in - 1 ? in - 1 : hi;
    lerp[o] = v - fl;
  }
}

/* a + (b - a) * w, w a vector along `dim`. */
static kiln_status lerp_along(hlo_computation *c, hlo_instr *a, hlo_instr *b, const double *w, int64_t n, int64_t dim,
                              hlo_instr **out) {
  hlo_instr *wc, *wb, *d, *m;
  TRY(oplib_const_f64s(c, HLO_F32, 1, &n, w, &wc));
  TRY(hlo_build_broadcast(c, wc, a->shape.rank, a->shape.dims, &dim, &wb));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, b, a, &d));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, d, wb, &m));
  return hlo_build_binary(c, HLO_OP_ADD, a, m, out);
}

static kiln_status lower_ResizeBilinear(op_lower_ctx *ctx) {
  resize_args a;
  hlo_computation *c = ctx->comp;
  TRY(resize_prologue(ctx, &a));
  size_t nh = (size_t)a.out_h, nw = (size_t)a.out_w;
  int64_t *yl = malloc(nh * sizeof *yl), *yu = malloc(nh * sizeof *yu), *xl = malloc(nw * sizeof *xl),
          *xu = malloc(nw * sizeof *xu);
  double *yw = malloc(nh * sizeof *yw), *xw = malloc(nw * sizeof *xw);
  kiln_status s = NULL;
  hlo_instr *x, *top, *bot, *tl, *tr, *bl, *br, *t, *b, *r = NULL;
  if (!yl || !yu || !xl || !xu || !yw || !xw) {
    s = op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  bilinear_weights(a.in_h, a.out_h, a.align_corners, a.half_pixel, yl, yu, yw);
  bilinear_weights(a.in_w, a.out_w, a.align_corners, a.half_pixel, xl, xu, xw);
  if (!s) s = oplib_convert(c, a.images, HLO_F32, &x);
  if (!s) s = oplib_take_constant(c, x, 1, a.out_h, yl, &top);
  if (!s) s = oplib_take_constant(c, x, 1, a.out_h, yu, &bot);
  if (!s) s = oplib_take_constant(c, top, 2, a.out_w, xl, &tl);
  if (!s) s = oplib_take_constant(c, top, 2, a.out_w, xu, &tr);
  if (!s) s = oplib_take_constant(c, bot, 2, a.out_w, xl, &bl);
  if (!s) s = oplib_take_constant(c, bot, 2, a.out_w, xu, &br);
  if (!s) s = lerp_along(c, tl, tr, xw, a.out_w, 2, &t);
  if (!s) s = lerp_along(c, bl, br, xw, a.out_w, 2, &b);
  if (!s) s = lerp_along(c, t, b, yw, a.out_h, 1, &r);
done:
  free(yl);
  free(yu);
  free(xl);
  free(xu);
  free(yw);
  free(xw);
  T(s);
  tf_set_output(ctx, 0, r);
  return NULL;
}

static void nearest_index(int64_t in, int64_t out, bool align, bool half, int64_t *idx) {
  float scale = resize_scale(in, out, align);
  for (int64_t o = 0; o < out; o++) {
    float v = half ? ((float)o + 0.5f) * scale : (float)o * scale;
    int64_t i = align ? (int64_t)roundf(v) : (int64_t)floorf(v);
    if (i > in - 1) i = in - 1;
    if (half && i < 0) i = 0;
    idx[o] = i;
  }
}

static kiln_status lower_ResizeNearestNeighbor(op_lower_ctx *ctx) {
  resize_args a;
  hlo_computation *c = ctx->comp;
  TRY(resize_prologue(ctx, &a));
  int64_t *yi = malloc((size_t)a.out_h * sizeof *yi), *xi = malloc((size_t)a.out_w * sizeof *xi);
  kiln_status s = NULL;
  hlo_instr *rows = NULL, *r = NULL;
  if (!yi || !xi) {
    s = op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory");
  } else {
    nearest_index(a.in_h, a.out_h, a.align_corners, a.half_pixel, yi);
    nearest_index(a.in_w, a.out_w, a.align_corners, a.half_pixel, xi);
    s = oplib_take_constant(c, a.images, 1, a.out_h, yi, &rows);
    if (!s) s = oplib_take_constant(c, rows, 2, a.out_w, xi, &r);
  }
  free(yi);
  free(xi);
  T(s);
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ----------------------------------------------------------- CropAndResize ---- */

/* CropAndResize(image [N,H,W,C], boxes [B,4], box_ind [B], crop_size [2]) ->
 * float [B, ch, cw, C], sampling each normalised box (y1, x1, y2, x2) with bilinear
 * or nearest interpolation; samples outside the image get extrapolation_value. */
static kiln_status host_CropAndResize(op_host_ctx *ctx) {
  TRY(tf_host_check_inputs(ctx, 4, 4));
  const graph_node *node = ctx->node;
  const graph_tensor *img = ctx->inputs[0], *boxes = ctx->inputs[1], *bind = ctx->inputs[2], *cs = ctx->inputs[3];
  if (img->rank != 4) return op_error(node, KILN_INVALID_ARGUMENT, "image must be 4-D");
  if (!graph_dtype_is_int(img->dtype) && !graph_dtype_is_float(img->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "image must be numeric");
  if (boxes->rank != 2 || boxes->dims[1] != 4 || !graph_dtype_is_float(boxes->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "boxes must be a float [num_boxes, 4] tensor");
  int64_t nb = boxes->dims[0];
  if (bind->rank != 1 || bind->dims[0] != nb || !graph_dtype_is_int(bind->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "box_ind must be an int vector of %lld entries", (long long)nb);
  if (cs->n != 2 || !graph_dtype_is_int(cs->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "crop_size must hold 2 integers");
  int64_t ch = tensor_get_s64(cs, 0), cw = tensor_get_s64(cs, 1);
  if (ch <= 0 || cw <= 0) return op_error(node, KILN_INVALID_ARGUMENT, "crop_size must be positive");
  const char *method = tf_attr_string(node, "method", "bilinear");
  bool nearest = strcmp(method, "nearest") == 0;
  if (!nearest && strcmp(method, "bilinear") != 0)
    return op_error(node, KILN_INVALID_ARGUMENT, "method \"%s\" is not bilinear or nearest", method);
  float extrap = graph_node_attr_float_or(node, "extrapolation_value", 0.0f);
  int64_t n = img->dims[0], h = img->dims[1], w = img->dims[2], depth = img->dims[3];
  graph_tensor *r;
  TRY(tensor_create(GRAPH_DT_FLOAT, 4, (int64_t[]){nb, ch, cw, depth}, &r));
  float *out = r->data;
  for (int64_t b = 0; b < nb; b++) {
    float y1 = (float)tensor_get_f64(boxes, b * 4), x1 = (float)tensor_get_f64(boxes, b * 4 + 1),
          y2 = (float)tensor_get_f64(boxes, b * 4 + 2), x2 = (float)tensor_get_f64(boxes, b * 4 + 3);
    int64_t bi = tensor_get_s64(bind, b);
    if (bi < 0 || bi >= n) {
      tensor_free(r);
      return op_error(node, KILN_INVALID_ARGUMENT, "box_ind[%lld] = %lld is not in [0, %lld)", (long long)b,
                      (long long)bi, (long long)n);
    }
    float hs = ch > 1 ? (y2 - y1) * (float)(h - 1) / (float)(ch - 1) : 0;
    float ws = cw > 1 ? (x2 - x1) * (float)(w - 1) / (float)(cw - 1) : 0;
    for (int64_t y = 0; y < ch; y++) {
      float in_y = ch > 1 ? y1 * (float)(h - 1) + (float)y * hs : 0.5f * (y1 + y2) * (float)(h - 1);
      float *row = out + ((b * ch + y) * cw) * depth;
      if (in_y < 0 || in_y > (float)(h - 1)) {
        for (int64_t k = 0; k < cw * depth; k++) row[k] = extrap;
        continue;
      }
      int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y), ny = (int64_t)roundf(in_y);
      float yl = in_y - (float)ty;
      for (int64_t x = 0; x < cw; x++) {
        float in_x = cw > 1 ? x1 * (float)(w - 1) + (float)x * ws : 0.5f * (x1 + x2) * (float)(w - 1);
        float *px = row + x * depth;
        if (in_x < 0 || in_x > (float)(w - 1)) {
          for (int64_t d = 0; d < depth; d++) px[d] = extrap;
          continue;
        }
        if (nearest) {
          int64_t nx = (int64_t)roundf(in_x);
          for (int64_t d = 0; d < depth; d++) px[d] = (float)tensor_get_f64(img, ((bi * h + ny) * w + nx) * depth + d);
          continue;
        }
        int64_t lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x);
        float xl = in_x - (float)lx;
        for (int64_t d = 0; d < depth; d++) {
          float tlv = (float)tensor_get_f64(img, ((bi * h + ty) * w + lx) * depth + d);
          float trv = (float)tensor_get_f64(img, ((bi * h + ty) * w + rx) * depth + d);
          float blv = (float)tensor_get_f64(img, ((bi * h + by) * w + lx) * depth + d);
          float brv = (float)tensor_get_f64(img, ((bi * h + by) * w + rx) * depth + d);
          float top = tlv + (trv - tlv) * xl, bottom = blv + (brv - blv) * xl;
          px[d] = top + (bottom - top) * yl;
        }
      }
    }
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}

/* --------------------------------------------------------------------- NMS ---- */

typedef struct nms_cand {
  int32_t index;
  float score;
  int32_t suppress_begin; /* selected boxes before this one were already compared */
} nms_cand;

/* Priority: higher score first, then lower box index. */
static bool nms_before(const nms_cand *a, const nms_cand *b) {
  return a->score > b->score || (a->score == b->score && a->index < b->index);
}

static void heap_push(nms_cand *h, int64_t *n, nms_cand c) {
  int64_t i = (*n)++;
  h[i] = c;
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (!nms_before(&h[i], &h[p])) break;
    nms_cand t = h[i];
    h[i] = h[p];
    h[p] = t;
    i = p;
  }
}

static nms_cand heap_pop(nms_cand *h, int64_t *n) {
  nms_cand top = h[0];
  h[0] = h[--(*n)];
  int64_t i = 0;
  for (;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && nms_before(&h[l], &h[m])) m = l;
    if (r < *n && nms_before(&h[r], &h[m])) m = r;
    if (m == i) break;
    nms_cand t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
  return top;
}

/* Intersection over union of boxes i and j, corners in either order (TF's IOU). */
static float nms_iou(const float *b, int64_t i, int64_t j) {
  const float *bi = b + 4 * i, *bj = b + 4 * j;
  float ymin_i = fminf(bi[0], bi[2]), xmin_i = fminf(bi[1], bi[3]), ymax_i = fmaxf(bi[0], bi[2]),
        xmax_i = fmaxf(bi[1], bi[3]);
  float ymin_j = fminf(bj[0], bj[2]), xmin_j = fminf(bj[1], bj[3]), ymax_j = fmaxf(bj[0], bj[2]),
        xmax_j = fmaxf(bj[1], bj[3]);
  float area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i), area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  float iy0 = fmaxf(ymin_i, ymin_j), ix0 = fmaxf(xmin_i, xmin_j), iy1 = fminf(ymax_i, ymax_j),
        ix1 = fminf(xmax_i, xmax_j);
  float inter = fmaxf(iy1 - iy0, 0.0f) * fmaxf(ix1 - ix0, 0.0f);
  return inter / (area_i + area_j - inter);
}

static kiln_status scalar_f(const op_host_ctx *ctx, int i, const char *what, float *out) {
  const graph_tensor *t = ctx->inputs[i];
  if (t->n != 1 || (!graph_dtype_is_float(t->dtype) && !graph_dtype_is_int(t->dtype)))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be a numeric scalar", what);
  *out = (float)tensor_get_f64(t, 0);
  return NULL;
}

/* version: 1 (iou_threshold attribute), 2, 3 (score_threshold), 4 (+ valid_outputs,
 * padding), 5 (+ soft_nms_sigma, selected_scores). */
static kiln_status nms(op_host_ctx *ctx, int version) {
  static const int n_in[] = {0, 3, 4, 5, 5, 6};
  TRY(tf_host_check_inputs(ctx, n_in[version], n_in[version]));
  const graph_node *node = ctx->node;
  const graph_tensor *boxes = ctx->inputs[0], *scores = ctx->inputs[1], *mos = ctx->inputs[2];
  if (boxes->rank != 2 || boxes->dims[1] != 4 || !graph_dtype_is_float(boxes->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "boxes must be a float [num_boxes, 4] tensor");
  int64_t nb = boxes->dims[0];
  if (scores->rank != 1 || scores->dims[0] != nb || !graph_dtype_is_float(scores->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "scores must be a float vector of %lld entries", (long long)nb);
  if (mos->n != 1 || !graph_dtype_is_int(mos->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "max_output_size must be an integer scalar");
  if (nb > INT32_MAX) return op_error(node, KILN_UNIMPLEMENTED, "too many boxes");
  int64_t max_out = tensor_get_s64(mos, 0);
  if (max_out < 0) return op_error(node, KILN_INVALID_ARGUMENT, "max_output_size must be non-negative");
  if (max_out > INT32_MAX) max_out = INT32_MAX;
  float iou_threshold = 0.5f, score_threshold = -INFINITY, sigma = 0;
  if (version == 1)
    iou_threshold = graph_node_attr_float_or(node, "iou_threshold", 0.5f);
  else
    TRY(scalar_f(ctx, 3, "iou_threshold", &iou_threshold));
  if (version >= 3) TRY(scalar_f(ctx, 4, "score_threshold", &score_threshold));
  if (version == 5) TRY(scalar_f(ctx, 5, "soft_nms_sigma", &sigma));
  if (!(iou_threshold >= 0 && iou_threshold <= 1))
    return op_error(node, KILN_INVALID_ARGUMENT, "iou_threshold must be in [0, 1], is %g", (double)iou_threshold);
  if (version == 5 && sigma < 0) return op_error(node, KILN_INVALID_ARGUMENT, "soft_nms_sigma must be non-negative");
  bool pad = version >= 4 && graph_node_attr_bool_or(node, "pad_to_max_output_size", false);

  size_t cells = (size_t)(nb > 0 ? nb : 1);
  float *bx = malloc(cells * 4 * sizeof *bx);
  nms_cand *heap = malloc(cells * sizeof *heap);
  int32_t *sel = malloc(cells * sizeof *sel);
  float *sel_scores = malloc(cells * sizeof *sel_scores);
  graph_tensor *out_idx = NULL, *out_scores = NULL, *out_valid = NULL;
  kiln_status s = NULL;
  if (!bx || !heap || !sel || !sel_scores) {
    s = op_error(node, KILN_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (int64_t i = 0; i < nb * 4; i++) bx[i] = (float)tensor_get_f64(boxes, i);
  int64_t nh = 0, ns = 0;
  for (int64_t i = 0; i < nb; i++) {
    float sc = (float)tensor_get_f64(scores, i);
    if (sc > score_threshold) heap_push(heap, &nh, (nms_cand){(int32_t)i, sc, 0});
  }
  bool soft = sigma > 0;
  float scale = soft ? -0.5f / sigma : 0.0f;
  while (ns < max_out && nh > 0) {
    nms_cand cand = heap_pop(heap, &nh);
    float original = cand.score;
    bool hard = false;
    for (int64_t j = ns - 1; j >= cand.suppress_begin; j--) {
      float sim = nms_iou(bx, cand.index, sel[j]);
      float weight = expf(scale * sim * sim);
      cand.score *= (soft || sim <= iou_threshold) ? weight : 0.0f;
      if (!soft && sim > iou_threshold) {
        hard = true;
        break;
      }
      if (cand.score <= score_threshold) break;
    }
    cand.suppress_begin = (int32_t)ns;
    if (hard) continue;
    if (cand.score == original) {
      sel[ns] = cand.index;
      sel_scores[ns++] = cand.score;
    } else if (cand.score > score_threshold) {
      heap_push(heap, &nh, cand);
    }
  }
  int64_t len = pad ? max_out : ns;
  s = tensor_create(GRAPH_DT_INT32, 1, &len, &out_idx);
  if (!s && version == 5) s = tensor_create(scores->dtype, 1, &len, &out_scores);
  if (!s && version >= 4) s = tensor_create_scalar(GRAPH_DT_INT32, &out_valid);
  if (s) goto done;
  for (int64_t i = 0; i < ns; i++) {
    tensor_set_s64(out_idx, i, sel[i]);
    if (out_scores) tensor_set_f64(out_scores, i, sel_scores[i]);
  }
  if (out_valid) tensor_set_s64(out_valid, 0, ns);
  graph_tensor *outs[3] = {out_idx, version == 5 ? out_scores : out_valid, version == 5 ? out_valid : NULL};
  for (int i = 0; i < 3; i++) {
    if (!outs[i]) continue;
    if (i < ctx->n_outputs) {
      ctx->outputs[i] = outs[i];
    } else {
      tensor_free(outs[i]);
    }
  }
  out_idx = out_scores = out_valid = NULL;
done:
  tensor_free(out_idx);
  tensor_free(out_scores);
  tensor_free(out_valid);
  free(bx);
  free(heap);
  free(sel);
  free(sel_scores);
  return s;
}
static kiln_status host_NonMaxSuppression(op_host_ctx *ctx) { return nms(ctx, 1); }
static kiln_status host_NonMaxSuppressionV2(op_host_ctx *ctx) { return nms(ctx, 2); }
static kiln_status host_NonMaxSuppressionV3(op_host_ctx *ctx) { return nms(ctx, 3); }
static kiln_status host_NonMaxSuppressionV4(op_host_ctx *ctx) { return nms(ctx, 4); }
static kiln_status host_NonMaxSuppressionV5(op_host_ctx *ctx) { return nms(ctx, 5); }

/* ------------------------------------------------------------------ table ---- */

#define HOST(NAME, FN) {"tf." NAME, OP_DYNAMIC_SHAPE, 0, NULL, host_##FN}

static const op_def tf_image_defs[] = {
    HOST("CropAndResize", CropAndResize),
    HOST("NonMaxSuppression", NonMaxSuppression),
    HOST("NonMaxSuppressionV2", NonMaxSuppressionV2),
    HOST("NonMaxSuppressionV3", NonMaxSuppressionV3),
    HOST("NonMaxSuppressionV4", NonMaxSuppressionV4),
    HOST("NonMaxSuppressionV5", NonMaxSuppressionV5),
    {"tf.ResizeBilinear", 0, 1u << 1, lower_ResizeBilinear, NULL},
    {"tf.ResizeNearestNeighbor", 0, 1u << 1, lower_ResizeNearestNeighbor, NULL},
};

const op_table tf_image_table = {"tf.image", (int)(sizeof tf_image_defs / sizeof tf_image_defs[0]), tf_image_defs};
