/* TensorFlow attribute and input conventions for the TF op families: input count
 * checks, compile-time inputs, data_format and the windows of convolutions and pools
 * (TF's GetWindowedOutputSize rules, expressed through ops_lib's oplib_window). */
#include "ops/ops_tf_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kiln_status tf_check_inputs(const op_lower_ctx *ctx, int lo, int hi) {
  if (ctx->n_inputs < lo || (hi >= 0 && ctx->n_inputs > hi)) {
    if (lo == hi) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects %d inputs, has %d", lo, ctx->n_inputs);
    if (hi < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects at least %d inputs, has %d", lo, ctx->n_inputs);
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects %d to %d inputs, has %d", lo, hi, ctx->n_inputs);
  }
  return NULL;
}

kiln_status tf_host_check_inputs(const op_host_ctx *ctx, int lo, int hi) {
  if (ctx->n_inputs < lo || (hi >= 0 && ctx->n_inputs > hi))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects %d to %d inputs, has %d", lo, hi < 0 ? lo : hi,
                    ctx->n_inputs);
  for (int i = 0; i < ctx->n_inputs; i++)
    if (!ctx->inputs[i]) return op_error(ctx->node, KILN_INTERNAL, "input %d was not given", i);
  return NULL;
}

kiln_status tf_input(const op_lower_ctx *ctx, int i, hlo_instr **out) {
  *out = NULL;
  if (i < 0 || i >= ctx->n_inputs) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "has no input %d", i);
  if (!ctx->inputs[i]) {
    const graph_tensor *t = ctx->const_inputs ? ctx->const_inputs[i] : NULL;
    if (!t) return op_error(ctx->node, KILN_INTERNAL, "input %d has no HLO value", i);
    OPLIB_TRY(ctx->node, oplib_const_tensor(ctx->comp, t, out));
    return NULL;
  }
  *out = ctx->inputs[i];
  return NULL;
}

kiln_status tf_const_input(const op_lower_ctx *ctx, int i, const char *what, const graph_tensor **out) {
  *out = NULL;
  if (i < 0 || i >= ctx->n_inputs) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "has no input %d (%s)", i, what);
  const graph_tensor *t = ctx->const_inputs ? ctx->const_inputs[i] : NULL;
  if (!t)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input %d (%s) must be a compile-time constant", i, what);
  *out = t;
  return NULL;
}

kiln_status tf_const_ints(const op_lower_ctx *ctx, int i, const char *what, int64_t *buf, int cap, int *n) {
  const graph_tensor *t;
  TRY(tf_const_input(ctx, i, what, &t));
  if (!graph_dtype_is_int(t->dtype))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be an integer tensor, got %s", what,
                    graph_dtype_name(t->dtype));
  OPLIB_TRY(ctx->node, oplib_tensor_ints(t, what, buf, cap, n));
  return NULL;
}

kiln_status tf_const_int(const op_lower_ctx *ctx, int i, const char *what, int64_t *out) {
  int64_t v[1];
  int n = 0;
  const graph_tensor *t;
  TRY(tf_const_input(ctx, i, what, &t));
  if (t->n != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must hold one value, has %lld", what, (long long)t->n);
  TRY(tf_const_ints(ctx, i, what, v, 1, &n));
  *out = v[0];
  return NULL;
}

const char *tf_attr_string(const graph_node *node, const char *name, const char *dflt) {
  const graph_attr_value *v = graph_node_attr(node, name);
  if (!v || v->kind != GRAPH_ATTR_STRING) return dflt;
  return v->s.data ? v->s.data : "";
}

kiln_status tf_attr_ints(const graph_node *node, const char *name, int64_t *buf, int cap, int *n, bool *present) {
  *n = 0;
  *present = false;
  const graph_attr_value *v = graph_node_attr(node, name);
  if (!v) return NULL;
  if (v->kind == GRAPH_ATTR_INT) { /* a lone int where a list is expected: accept it */
    if (cap < 1) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has too many values", name);
    buf[0] = v->i;
    *n = 1;
    *present = true;
    return NULL;
  }
  int count = 0;
  TRY(graph_node_get_ints(node, name, buf, cap, &count));
  if (count > cap)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has %d values, at most %d supported", name, count, cap);
  *n = count;
  *present = true;
  return NULL;
}

kiln_status tf_attr_hlo_type(const graph_node *node, const char *name, hlo_type dflt, hlo_type *out) {
  const graph_attr_value *v = graph_node_attr(node, name);
  if (!v) {
    *out = dflt;
    return NULL;
  }
  if (v->kind != GRAPH_ATTR_TYPE)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s is not a type", name);
  if (!graph_dtype_to_hlo(v->type, out))
    return op_error(node, KILN_UNIMPLEMENTED, "attribute %s: type %s cannot be compiled", name,
                    graph_dtype_name(v->type));
  return NULL;
}

kiln_status tf_data_format(const graph_node *node, bool *channels_first) {
  const char *f = tf_attr_string(node, "data_format", "NHWC");
  size_t n = strlen(f);
  if (n >= 2 && f[0] == 'N' && f[n - 1] == 'C') {
    *channels_first = false;
    return NULL;
  }
  if (n >= 2 && f[0] == 'N' && f[1] == 'C') {
    *channels_first = true;
    return NULL;
  }
  return op_error(node, KILN_UNIMPLEMENTED, "data_format \"%s\" is not supported", f);
}

void tf_layout_dims(int n_spatial, bool channels_first, int64_t *batch, int64_t *feature, int64_t *spatial) {
  *batch = 0;
  *feature = channels_first ? 1 : n_spatial + 1;
  for (int i = 0; i < n_spatial; i++) spatial[i] = channels_first ? 2 + i : 1 + i;
}

/* Reads a list attribute in data_format order; absent gives dflt for every entry. The
 * batch and channel entries must be 1 (TF allows nothing else there either). */
static kiln_status layout_list(const graph_node *node, const char *name, int n_spatial, bool channels_first,
                               bool required, int64_t dflt, int64_t *full) {
  int rank = n_spatial + 2, n = 0;
  bool present = false;
  TRY(tf_attr_ints(node, name, full, TF_MAX_INTS, &n, &present));
  if (!present) {
    if (required) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s is missing", name);
    for (int i = 0; i < rank; i++) full[i] = dflt;
    return NULL;
  }
  if (n != rank)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has %d entries, expected %d", name, n, rank);
  return NULL;
}

kiln_status tf_window_from(const graph_node *node, int n_spatial, bool channels_first, const int64_t *ksize_full,
                           const int64_t *strides_full, const int64_t *in_spatial, oplib_window *w) {
  int rank = n_spatial + 2;
  int64_t batch, feature, spatial[HLO_MAX_RANK];
  int64_t dil_full[TF_MAX_INTS];
  tf_layout_dims(n_spatial, channels_first, &batch, &feature, spatial);
  TRY(layout_list(node, "dilations", n_spatial, channels_first, false, 1, dil_full));
  if (strides_full[batch] != 1 || strides_full[feature] != 1)
    return op_error(node, KILN_UNIMPLEMENTED, "strides on the batch or channel dimension are not supported");
  if (ksize_full && (ksize_full[batch] != 1 || ksize_full[feature] != 1))
    return op_error(node, KILN_UNIMPLEMENTED, "pooling over the batch or channel dimension is not supported");
  if (dil_full[batch] != 1 || dil_full[feature] != 1)
    return op_error(node, KILN_UNIMPLEMENTED, "dilations on the batch or channel dimension are not supported");
  w->n = n_spatial;
  for (int i = 0; i < n_spatial; i++) {
    if (ksize_full) w->kernel[i] = ksize_full[spatial[i]];
    w->stride[i] = strides_full[spatial[i]];
    w->dilation[i] = dil_full[spatial[i]];
    if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1)
      return op_error(node, KILN_INVALID_ARGUMENT,
                      "window sizes, strides and dilations must be positive (spatial dim %d: %lld, %lld, %lld)", i,
                      (long long)w->kernel[i], (long long)w->stride[i], (long long)w->dilation[i]);
  }
  const char *padding = tf_attr_string(node, "padding", NULL);
  if (!padding) return op_error(node, KILN_INVALID_ARGUMENT, "attribute padding is missing");
  oplib_auto_pad mode;
  int64_t pads[2 * HLO_MAX_RANK] = {0};
  if (strcmp(padding, "SAME") == 0) {
    mode = OPLIB_AUTO_PAD_SAME_UPPER;
  } else if (strcmp(padding, "VALID") == 0) {
    mode = OPLIB_AUTO_PAD_VALID;
  } else if (strcmp(padding, "EXPLICIT") == 0) {
    int64_t ex[TF_MAX_INTS];
    int n = 0;
    bool present = false;
    mode = OPLIB_AUTO_PAD_NOTSET;
    TRY(tf_attr_ints(node, "explicit_paddings", ex, TF_MAX_INTS, &n, &present));
    if (n != 2 * rank)
      return op_error(node, KILN_INVALID_ARGUMENT, "explicit_paddings has %d entries, expected %d", n, 2 * rank);
    if (ex[2 * batch] || ex[2 * batch + 1] || ex[2 * feature] || ex[2 * feature + 1])
      return op_error(node, KILN_UNIMPLEMENTED, "padding the batch or channel dimension is not supported");
    for (int i = 0; i < n_spatial; i++) {
      pads[i] = ex[2 * spatial[i]];
      pads[n_spatial + i] = ex[2 * spatial[i] + 1];
      if (pads[i] < 0 || pads[n_spatial + i] < 0)
        return op_error(node, KILN_INVALID_ARGUMENT, "explicit_paddings must not be negative");
    }
  } else {
    return op_error(node, KILN_INVALID_ARGUMENT, "padding \"%s\" is not SAME, VALID or EXPLICIT", padding);
  }
  OPLIB_TRY(node, oplib_window_pads(w, in_spatial, mode, pads, false, NULL));
  for (int i = 0; i < n_spatial; i++) {
    int64_t eff = (w->kernel[i] - 1) * w->dilation[i] + 1;
    if (in_spatial[i] + w->pad_lo[i] + w->pad_hi[i] < eff)
      return op_error(node, KILN_INVALID_ARGUMENT,
                      "spatial dim %d: input size %lld (padded %lld + %lld) is smaller than the window %lld", i,
                      (long long)in_spatial[i], (long long)w->pad_lo[i], (long long)w->pad_hi[i], (long long)eff);
  }
  return NULL;
}

kiln_status tf_window(const graph_node *node, int n_spatial, bool channels_first, const char *ksize_attr,
                      const int64_t *kernel, const int64_t *in_spatial, oplib_window *w) {
  int64_t strides_full[TF_MAX_INTS], ksize_full[TF_MAX_INTS];
  memset(w, 0, sizeof *w);
  TRY(layout_list(node, "strides", n_spatial, channels_first, true, 1, strides_full));
  if (ksize_attr) {
    TRY(layout_list(node, ksize_attr, n_spatial, channels_first, true, 1, ksize_full));
  } else {
    for (int i = 0; i < n_spatial; i++) w->kernel[i] = kernel[i];
  }
  return tf_window_from(node, n_spatial, channels_first, ksize_attr ? ksize_full : NULL, strides_full, in_spatial, w);
}

const char *tf_shape_text(const hlo_shape *shape, tf_shape_buf *buf) {
  char *t = shape_to_string(shape);
  snprintf(buf->s, sizeof buf->s, "%s", t ? t : "?");
  free(t);
  return buf->s;
}

static void merge_sort(int64_t *a, int64_t *tmp, int64_t n, tf_index_cmp cmp, const void *ctx) {
  if (n < 2) return;
  if (n <= 16) { /* insertion sort: stable and quick on short runs */
    for (int64_t i = 1; i < n; i++) {
      int64_t v = a[i], j = i;
      while (j > 0 && cmp(ctx, a[j - 1], v) > 0) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = v;
    }
    return;
  }
  int64_t h = n / 2;
  merge_sort(a, tmp, h, cmp, ctx);
  merge_sort(a + h, tmp, n - h, cmp, ctx);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
}

void tf_sort_indices(int64_t *idx, int64_t n, tf_index_cmp cmp, const void *ctx) {
  if (n < 2) return;
  int64_t *tmp = malloc((size_t)n * sizeof *tmp);
  if (!tmp) abort(); /* out of memory: an internal invariant, as for the arenas */
  merge_sort(idx, tmp, n, cmp, ctx);
  free(tmp);
}
