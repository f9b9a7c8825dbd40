/* TensorFlow indexing ops: Gather/GatherV2 (with batch_dims), GatherNd, ScatterNd and
 * the TensorScatter* updates, OneHot and the UnsortedSegment* reductions lowered to HLO
 * gather/scatter; and the host kernels of the ops whose output shape depends on
 * values: Where (coordinates of true elements), Unique, SparseToDense, Bincount and
 * DenseBincount.
 *
 * Out-of-range indices: TF's CPU kernels reject them, XLA clamps gathers and drops
 * scatters; lowered ops follow XLA (as tf2xla does), host kernels reject them as TF. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

static kiln_status check_index_type(const graph_node *node, const hlo_instr *idx) {
  if (!hlo_type_is_int(idx->shape.type))
    return op_error(node, KILN_INVALID_ARGUMENT, "indices must be integers, got %s", hlo_type_name(idx->shape.type));
  return NULL;
}

/* ------------------------------------------------------------------ gather ---- */

/* params[..., indices, ...] along axis, the first batch_dims dims of params and
 * indices walking together (XLA's operand/start-indices batching dims). */
static kiln_status gather_axis(op_lower_ctx *ctx, hlo_instr *params, hlo_instr *idx, int64_t axis, int64_t b,
                               hlo_instr **out) {
  const graph_node *node = ctx->node;
  int r = params->shape.rank, q = idx->shape.rank;
  TRY(check_index_type(node, idx));
  if (r < 1) return op_error(node, KILN_INVALID_ARGUMENT, "params must have rank >= 1");
  if (b < 0) b += q;
  if (b < 0 || b > q) return op_error(node, KILN_INVALID_ARGUMENT, "batch_dims %lld is out of range", (long long)b);
  T(oplib_normalize_axis(axis, r, &axis));
  if (b > axis)
    return op_error(node, KILN_INVALID_ARGUMENT, "batch_dims %lld must not exceed axis %lld", (long long)b,
                    (long long)axis);
  for (int i = 0; i < b; i++)
    if (params->shape.dims[i] != idx->shape.dims[i])
      return op_error(node, KILN_INVALID_ARGUMENT, "batch dim %d differs: params %lld, indices %lld", i,
                      (long long)params->shape.dims[i], (long long)idx->shape.dims[i]);
  if (q + r - 1 - b > HLO_MAX_RANK) return op_error(node, KILN_UNIMPLEMENTED, "result rank is too large");
  if (params->shape.dims[axis] == 0) {
    /* Nothing to gather from (an empty detection list): a slice of size 1 does not fit
     * an empty axis, so the result -- empty whenever the indices are, as TF requires --
     * is built directly: params[:axis] + indices[b:] + params[axis+1:], zeros. */
    int64_t dims[HLO_MAX_RANK];
    int n = 0;
    for (int64_t i = 0; i < axis; i++) dims[n++] = params->shape.dims[i];
    for (int i = (int)b; i < q; i++) dims[n++] = idx->shape.dims[i];
    for (int i = (int)axis + 1; i < r; i++) dims[n++] = params->shape.dims[i];
    hlo_instr *zero;
    T(hlo_build_constant_scalar(ctx->comp, params->shape.type, 0.0, &zero));
    T(hlo_build_broadcast(ctx->comp, zero, n, dims, NULL, out));
    return NULL;
  }
  int64_t offset[HLO_MAX_RANK], bat[HLO_MAX_RANK], sizes[HLO_MAX_RANK];
  int no = 0;
  for (int64_t i = b; i < axis; i++) offset[no++] = i;
  for (int64_t i = axis + 1; i < r; i++) offset[no++] = i - 1 + (q - b);
  for (int i = 0; i < b; i++) bat[i] = i;
  for (int i = 0; i < r; i++) sizes[i] = (i == axis || i < b) ? 1 : params->shape.dims[i];
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){no, offset};
  dn.collapsed_slice_dims = (hlo_ints){1, &axis};
  dn.start_index_map = (hlo_ints){1, &axis};
  dn.operand_batching_dims = (hlo_ints){(int)b, bat};
  dn.start_indices_batching_dims = (hlo_ints){(int)b, bat};
  dn.index_vector_dim = q;
  T(hlo_build_gather(ctx->comp, params, idx, &dn, sizes, out));
  return NULL;
}

static kiln_status lower_Gather(op_lower_ctx *ctx) {
  hlo_instr *p, *i, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &p));
  TRY(tf_input(ctx, 1, &i));
  TRY(gather_axis(ctx, p, i, 0, 0, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_GatherV2(op_lower_ctx *ctx) {
  hlo_instr *p, *i, *r;
  int64_t axis;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &p));
  TRY(tf_input(ctx, 1, &i));
  TRY(tf_const_int(ctx, 2, "axis", &axis));
  int64_t b = graph_node_attr_int_or(ctx->node, "batch_dims", 0);
  TRY(gather_axis(ctx, p, i, axis, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* GatherNd: the last dim of indices (K) indexes the first K dims of params (after
 * batch_dims shared leading dims). */
static kiln_status lower_GatherNd(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_instr *p, *idx, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &p));
  TRY(tf_input(ctx, 1, &idx));
  TRY(check_index_type(node, idx));
  int rp = p->shape.rank, q = idx->shape.rank;
  int64_t b = graph_node_attr_int_or(node, "batch_dims", 0);
  if (q < 1) return op_error(node, KILN_INVALID_ARGUMENT, "indices must have rank >= 1");
  int64_t k = idx->shape.dims[q - 1];
  if (b < 0 || b >= q || b + k > rp)
    return op_error(node, KILN_INVALID_ARGUMENT, "index depth %lld (batch_dims %lld) exceeds params rank %d",
                    (long long)k, (long long)b, rp);
  for (int i = 0; i < b; i++)
    if (p->shape.dims[i] != idx->shape.dims[i])
      return op_error(node, KILN_INVALID_ARGUMENT, "batch dim %d differs", i);
  int64_t offset[HLO_MAX_RANK], map[HLO_MAX_RANK], bat[HLO_MAX_RANK], sizes[HLO_MAX_RANK];
  int no = 0;
  for (int64_t i = b + k; i < rp; i++) offset[no++] = (q - 1) + (i - b - k);
  for (int64_t i = 0; i < k; i++) map[i] = b + i;
  for (int i = 0; i < b; i++) bat[i] = i;
  for (int i = 0; i < rp; i++) sizes[i] = i < b + k ? 1 : p->shape.dims[i];
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){no, offset};
  dn.collapsed_slice_dims = (hlo_ints){(int)k, map};
  dn.start_index_map = (hlo_ints){(int)k, map};
  dn.operand_batching_dims = (hlo_ints){(int)b, bat};
  dn.start_indices_batching_dims = (hlo_ints){(int)b, bat};
  dn.index_vector_dim = q - 1;
  T(hlo_build_gather(ctx->comp, p, idx, &dn, sizes, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ----------------------------------------------------------------- scatter ---- */

typedef enum scatter_kind { SC_ADD, SC_REPLACE, SC_MAX, SC_MIN, SC_MUL } scatter_kind;

/* Scatters updates [..., rest] into operand at indices [..., K] (ScatterNd's layout). */
static kiln_status scatter_nd(op_lower_ctx *ctx, hlo_instr *operand, hlo_instr *idx, hlo_instr *upd,
                              scatter_kind kind, hlo_instr **out) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  TRY(check_index_type(node, idx));
  int r = operand->shape.rank, q = idx->shape.rank;
  if (q < 1) return op_error(node, KILN_INVALID_ARGUMENT, "indices must have rank >= 1");
  int64_t k = idx->shape.dims[q - 1];
  if (k > r) return op_error(node, KILN_INVALID_ARGUMENT, "index depth %lld exceeds rank %d", (long long)k, r);
  /* updates must be indices.shape[:-1] + shape[K:] */
  bool ok = upd->shape.rank == (q - 1) + (r - (int)k);
  for (int i = 0; ok && i < q - 1; i++) ok = upd->shape.dims[i] == idx->shape.dims[i];
  for (int i = 0; ok && i < r - k; i++) ok = upd->shape.dims[q - 1 + i] == operand->shape.dims[k + i];
  if (!ok) {
    tf_shape_buf a, b2, d;
    return op_error(node, KILN_INVALID_ARGUMENT, "updates %s do not fit indices %s into %s",
                    tf_shape_text(&upd->shape, &a), tf_shape_text(&idx->shape, &b2), tf_shape_text(&operand->shape, &d));
  }
  if (upd->shape.type != operand->shape.type) T(oplib_convert(c, upd, operand->shape.type, &upd));
  int64_t window[HLO_MAX_RANK], inserted[HLO_MAX_RANK];
  int nw = 0;
  for (int64_t i = k; i < r; i++) window[nw++] = q - 1 + (i - k);
  for (int64_t i = 0; i < k; i++) inserted[i] = i;
  hlo_scatter_dnums dn = {0};
  dn.update_window_dims = (hlo_ints){nw, window};
  dn.inserted_window_dims = (hlo_ints){(int)k, inserted};
  dn.scatter_dims_to_operand_dims = (hlo_ints){(int)k, inserted};
  dn.index_vector_dim = q - 1;
  hlo_computation *f;
  hlo_type t = operand->shape.type;
  switch (kind) {
    case SC_REPLACE: T(oplib_replace_computation(c->module, t, &f)); break;
    case SC_MAX: T(hlo_build_scalar_computation(c->module, t == HLO_PRED ? HLO_OP_OR : HLO_OP_MAXIMUM, t, &f)); break;
    case SC_MIN: T(hlo_build_scalar_computation(c->module, t == HLO_PRED ? HLO_OP_AND : HLO_OP_MINIMUM, t, &f)); break;
    case SC_MUL: T(hlo_build_scalar_computation(c->module, HLO_OP_MULTIPLY, t, &f)); break;
    default: T(hlo_build_scalar_computation(c->module, t == HLO_PRED ? HLO_OP_OR : HLO_OP_ADD, t, &f)); break;
  }
  T(hlo_build_scatter(c, 1, &operand, idx, &upd, &dn, f, out));
  return NULL;
}

static kiln_status lower_ScatterNd(op_lower_ctx *ctx) {
  hlo_instr *idx, *upd, *zero, *r;
  int64_t dims[TF_MAX_INTS], total;
  int n = 0;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &idx));
  TRY(tf_input(ctx, 1, &upd));
  TRY(tf_const_ints(ctx, 2, "shape", dims, TF_MAX_INTS, &n));
  if (n > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d is too large", n);
  T(oplib_checked_elements(n, dims, &total));
  T(oplib_full(ctx->comp, upd->shape.type, 0, n, dims, &zero));
  TRY(scatter_nd(ctx, zero, idx, upd, SC_ADD, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_tensor_scatter(op_lower_ctx *ctx, scatter_kind kind, bool negate) {
  hlo_instr *x, *idx, *upd, *r;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &idx));
  TRY(tf_input(ctx, 2, &upd));
  if (negate) T(hlo_build_unary(ctx->comp, HLO_OP_NEGATE, upd, &upd));
  TRY(scatter_nd(ctx, x, idx, upd, kind, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_TensorScatterUpdate(op_lower_ctx *ctx) { return lower_tensor_scatter(ctx, SC_REPLACE, false); }
static kiln_status lower_TensorScatterAdd(op_lower_ctx *ctx) { return lower_tensor_scatter(ctx, SC_ADD, false); }
static kiln_status lower_TensorScatterSub(op_lower_ctx *ctx) { return lower_tensor_scatter(ctx, SC_ADD, true); }
static kiln_status lower_TensorScatterMax(op_lower_ctx *ctx) { return lower_tensor_scatter(ctx, SC_MAX, false); }
static kiln_status lower_TensorScatterMin(op_lower_ctx *ctx) { return lower_tensor_scatter(ctx, SC_MIN, false); }

/* UnsortedSegment*(data, segment_ids, num_segments): row i of data combines into
 * output row segment_ids[i]; empty segments hold the combiner's identity. */
static kiln_status lower_segment(op_lower_ctx *ctx, scatter_kind kind) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *data, *ids, *init, *r;
  int64_t num;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &data));
  TRY(tf_input(ctx, 1, &ids));
  TRY(tf_const_int(ctx, 2, "num_segments", &num));
  TRY(check_index_type(node, ids));
  int q = ids->shape.rank, rd = data->shape.rank;
  if (num < 0) return op_error(node, KILN_INVALID_ARGUMENT, "num_segments must not be negative");
  bool ok = q <= rd;
  for (int i = 0; ok && i < q; i++) ok = ids->shape.dims[i] == data->shape.dims[i];
  if (!ok) return op_error(node, KILN_INVALID_ARGUMENT, "segment_ids shape must be a prefix of data's shape");
  int64_t dims[HLO_MAX_RANK], window[HLO_MAX_RANK], zero_dim = 0;
  dims[0] = num;
  int nw = 0;
  for (int i = q; i < rd; i++) {
    dims[1 + i - q] = data->shape.dims[i];
    window[nw++] = i;
  }
  hlo_type t = data->shape.type;
  /* Empty segments: TF's numeric_limits<T>::lowest()/max(), finite for floats. */
  double big = t == HLO_F64 ? DBL_MAX : t == HLO_F16 ? 65504.0 : t == HLO_BF16 ? 3.3895313892515355e38 : FLT_MAX;
  switch (kind) {
    case SC_MAX:
      if (hlo_type_is_float(t))
        T(oplib_scalar(c, t, -big, &init));
      else
        T(oplib_lowest(c, t, &init));
      break;
    case SC_MIN:
      if (hlo_type_is_float(t))
        T(oplib_scalar(c, t, big, &init));
      else
        T(oplib_highest(c, t, &init));
      break;
    case SC_MUL: T(oplib_scalar(c, t, 1, &init)); break;
    default: T(oplib_scalar(c, t, 0, &init)); break;
  }
  T(hlo_build_broadcast(c, init, 1 + rd - q, dims, NULL, &init));
  hlo_scatter_dnums dn = {0};
  dn.update_window_dims = (hlo_ints){nw, window};
  dn.inserted_window_dims = (hlo_ints){1, &zero_dim};
  dn.scatter_dims_to_operand_dims = (hlo_ints){1, &zero_dim};
  dn.index_vector_dim = q;
  hlo_computation *f;
  hlo_opcode op = kind == SC_MAX ? HLO_OP_MAXIMUM : kind == SC_MIN ? HLO_OP_MINIMUM : kind == SC_MUL ? HLO_OP_MULTIPLY
                                                                                                     : HLO_OP_ADD;
  T(hlo_build_scalar_computation(c->module, op, t, &f));
  T(hlo_build_scatter(c, 1, &init, ids, &data, &dn, f, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_UnsortedSegmentSum(op_lower_ctx *ctx) { return lower_segment(ctx, SC_ADD); }
static kiln_status lower_UnsortedSegmentMax(op_lower_ctx *ctx) { return lower_segment(ctx, SC_MAX); }
static kiln_status lower_UnsortedSegmentMin(op_lower_ctx *ctx) { return lower_segment(ctx, SC_MIN); }
static kiln_status lower_UnsortedSegmentProd(op_lower_ctx *ctx) { return lower_segment(ctx, SC_MUL); }

/* OneHot(indices, depth, on_value, off_value): a new dim of size depth at `axis`,
 * on where the iota equals the index (negative or too large indices: all off). */
static kiln_status lower_OneHot(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  hlo_instr *idx, *on, *off, *iota, *ib, *eq, *r;
  int64_t depth;
  TRY(tf_check_inputs(ctx, 4, 4));
  TRY(tf_input(ctx, 0, &idx));
  TRY(tf_const_int(ctx, 1, "depth", &depth));
  TRY(tf_input(ctx, 2, &on));
  TRY(tf_input(ctx, 3, &off));
  TRY(check_index_type(node, idx));
  if (depth < 0) return op_error(node, KILN_INVALID_ARGUMENT, "depth must not be negative");
  int q = idx->shape.rank;
  if (q + 1 > HLO_MAX_RANK) return op_error(node, KILN_UNIMPLEMENTED, "rank too large");
  int64_t axis = graph_node_attr_int_or(node, "axis", -1);
  if (axis == -1) axis = q;
  if (axis < 0 || axis > q) return op_error(node, KILN_INVALID_ARGUMENT, "axis %lld is out of range", (long long)axis);
  int64_t dims[HLO_MAX_RANK], map[HLO_MAX_RANK], total;
  for (int i = 0, k = 0; i <= q; i++) {
    if (i == axis) {
      dims[i] = depth;
    } else {
      map[k] = i;
      dims[i] = idx->shape.dims[k++];
    }
  }
  T(oplib_checked_elements(q + 1, dims, &total));
  hlo_shape is = shape_make(idx->shape.type, q + 1, dims);
  T(hlo_build_iota(c, &is, axis, &iota));
  T(hlo_build_broadcast(c, idx, q + 1, dims, map, &ib));
  T(hlo_build_compare(c, HLO_DIR_EQ, iota, ib, &eq));
  if (shape_elements(&on->shape) != 1 || shape_elements(&off->shape) != 1)
    return op_error(node, KILN_INVALID_ARGUMENT, "on_value and off_value must be scalars");
  T(oplib_reshape(c, on, 0, (int64_t[1]){0}, &on));
  T(oplib_reshape(c, off, 0, (int64_t[1]){0}, &off));
  T(oplib_select(c, eq, on, off, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------ host kernels ---- */

static bool element_nonzero(const graph_tensor *t, int64_t i) {
  if (graph_dtype_is_float(t->dtype)) return tensor_get_f64(t, i) != 0; /* NaN counts as true */
  return tensor_get_s64(t, i) != 0;
}

static kiln_status host_Where(op_host_ctx *ctx) {
  TRY(tf_host_check_inputs(ctx, 1, 1));
  const graph_tensor *x = ctx->inputs[0];
  hlo_type h;
  if (!graph_dtype_to_hlo(x->dtype, &h) && !graph_dtype_is_complex(x->dtype))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input of type %s has no truth value", graph_dtype_name(x->dtype));
  int64_t count = 0;
  for (int64_t i = 0; i < x->n; i++) count += element_nonzero(x, i);
  graph_tensor *r;
  TRY(tensor_create(GRAPH_DT_INT64, 2, (int64_t[]){count, x->rank}, &r));
  int64_t *out = r->data, k = 0, coord[GRAPH_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->n; i++) {
    if (element_nonzero(x, i)) {
      memcpy(out + k * x->rank, coord, (size_t)x->rank * sizeof *coord);
      k++;
    }
    for (int d = x->rank - 1; d >= 0; d--) { /* row-major odometer */
      if (++coord[d] < x->dims[d]) break;
      coord[d] = 0;
    }
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}

typedef struct unique_ctx {
  const graph_tensor *x;
} unique_ctx;

/* A total order for grouping equal keys: numbers by value (-0 == 0), NaNs after
 * every number and never equal to each other (ordered by position), strings by bytes. */
static int unique_cmp(const void *p, int64_t a, int64_t b) {
  const graph_tensor *x = ((const unique_ctx *)p)->x;
  if (x->dtype == GRAPH_DT_STRING) {
    const graph_bytes *sa = tensor_string(x, a), *sb = tensor_string(x, b);
    size_t n = sa->len < sb->len ? sa->len : sb->len;
    int c = n ? memcmp(sa->data, sb->data, n) : 0;
    if (c) return c;
    return sa->len < sb->len ? -1 : sa->len > sb->len ? 1 : 0;
  }
  if (graph_dtype_is_float(x->dtype)) {
    double va = tensor_get_f64(x, a), vb = tensor_get_f64(x, b);
    bool na = isnan(va), nb = isnan(vb);
    if (na || nb) {
      if (!na) return -1;
      if (!nb) return 1;
      return a < b ? -1 : a > b ? 1 : 0;
    }
    return va < vb ? -1 : va > vb ? 1 : 0;
  }
  if (x->dtype == GRAPH_DT_UINT64) {
    uint64_t va = (uint64_t)tensor_get_s64(x, a), vb = (uint64_t)tensor_get_s64(x, b);
    return va < vb ? -1 : va > vb ? 1 : 0;
  }
  int64_t va = tensor_get_s64(x, a), vb = tensor_get_s64(x, b);
  return va < vb ? -1 : va > vb ? 1 : 0;
}

/* Unique(x) -> (y, idx): y holds the distinct values in order of first occurrence,
 * idx[i] the position of x[i] in y. */
static kiln_status host_Unique(op_host_ctx *ctx) {
  TRY(tf_host_check_inputs(ctx, 1, 1));
  const graph_tensor *x = ctx->inputs[0];
  if (x->rank != 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be 1-D, is rank %d", x->rank);
  hlo_type h;
  if (x->dtype != GRAPH_DT_STRING && (!graph_dtype_to_hlo(x->dtype, &h)))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "Unique of %s", graph_dtype_name(x->dtype));
  const graph_attr_value *ov = graph_node_attr(ctx->node, "out_idx");
  graph_dtype it = ov && ov->kind == GRAPH_ATTR_TYPE ? ov->type : GRAPH_DT_INT32;
  if (it != GRAPH_DT_INT32 && it != GRAPH_DT_INT64)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "out_idx must be int32 or int64");
  int64_t n = x->n;
  size_t cells = (size_t)(n > 0 ? n : 1);
  int64_t *order = malloc(cells * sizeof *order), *group = malloc(cells * sizeof *group),
          *first = malloc(cells * sizeof *first), *rank_of = malloc(cells * sizeof *rank_of);
  graph_tensor *y = NULL, *idx = NULL;
  kiln_status s = NULL;
  if (!order || !group || !first || !rank_of) {
    s = op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  unique_ctx uc = {x};
  for (int64_t i = 0; i < n; i++) order[i] = i;
  tf_sort_indices(order, n, unique_cmp, &uc);
  /* Groups of equal keys; the stable sort puts each group's first occurrence first. */
  int64_t ng = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || unique_cmp(&uc, order[i - 1], order[i]) != 0) first[ng++] = order[i];
    group[order[i]] = ng - 1;
  }
  /* Number the groups by first occurrence. */
  int64_t *by_pos = order; /* reuse: group ids sorted by their first position */
  for (int64_t g = 0; g < ng; g++) by_pos[g] = g;
  {
    int64_t *tmp = rank_of;
    /* first[] positions are distinct: sort group ids by them (a counting pass). */
    for (int64_t i = 0; i < n; i++) tmp[i] = -1;
    for (int64_t g = 0; g < ng; g++) tmp[first[g]] = g;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
      if (tmp[i] >= 0) by_pos[k++] = tmp[i];
  }
  for (int64_t k = 0; k < ng; k++) rank_of[by_pos[k]] = k;
  s = tensor_create(x->dtype, 1, &ng, &y);
  if (!s) s = tensor_create(it, 1, &n, &idx);
  if (s) goto done;
  size_t es = graph_dtype_size(x->dtype);
  for (int64_t k = 0; k < ng; k++) {
    int64_t src = first[by_pos[k]];
    if (x->dtype == GRAPH_DT_STRING) {
      const graph_bytes *b = tensor_string(x, src);
      tensor_set_string(y, k, b->data, b->len);
    } else {
      memcpy((char *)y->data + (size_t)k * es, (const char *)x->data + (size_t)src * es, es);
    }
  }
  for (int64_t i = 0; i < n; i++) tensor_set_s64(idx, i, rank_of[group[i]]);
  if (ctx->n_outputs > 0) {
    ctx->outputs[0] = y;
    y = NULL;
  }
  if (ctx->n_outputs > 1) {
    ctx->outputs[1] = idx;
    idx = NULL;
  }
done:
  tensor_free(y);
  tensor_free(idx);
  free(order);
  free(group);
  free(first);
  free(rank_of);
  return s;
}

/* SparseToDense(sparse_indices, output_shape, sparse_values, default_value). */
static kiln_status host_SparseToDense(op_host_ctx *ctx) {
  TRY(tf_host_check_inputs(ctx, 4, 4));
  const graph_tensor *ind = ctx->inputs[0], *shp = ctx->inputs[1], *val = ctx->inputs[2], *dflt = ctx->inputs[3];
  const graph_node *node = ctx->node;
  if (!graph_dtype_is_int(ind->dtype) || !graph_dtype_is_int(shp->dtype))
    return op_error(node, KILN_INVALID_ARGUMENT, "sparse_indices and output_shape must be integers");
  if (shp->rank > 1 || shp->n > GRAPH_MAX_RANK)
    return op_error(node, KILN_INVALID_ARGUMENT, "output_shape must be a vector of at most %d dims", GRAPH_MAX_RANK);
  int rank = (int)shp->n;
  int64_t dims[GRAPH_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    dims[i] = tensor_get_s64(shp, i);
    if (dims[i] < 0) return op_error(node, KILN_INVALID_ARGUMENT, "output_shape has a negative dim");
  }
  if (ind->rank > 2) return op_error(node, KILN_INVALID_ARGUMENT, "sparse_indices must have rank <= 2");
  int64_t n = ind->rank == 0 ? 1 : ind->dims[0];
  int64_t depth = ind->rank == 2 ? ind->dims[1] : 1;
  if (depth != rank && !(rank == 0 && n == 0))
    return op_error(node, KILN_INVALID_ARGUMENT, "sparse_indices has %lld columns for a rank-%d output",
                    (long long)depth, rank);
  if (val->n != 1 && val->n != n)
    return op_error(node, KILN_INVALID_ARGUMENT, "sparse_values has %lld values for %lld indices", (long long)val->n,
                    (long long)n);
  if (dflt->n != 1 || dflt->dtype != val->dtype)
    return op_error(node, KILN_INVALID_ARGUMENT, "default_value must be a scalar of the values' type");
  if (val->dtype == GRAPH_DT_STRING || graph_dtype_size(val->dtype) == 0)
    return op_error(node, KILN_UNIMPLEMENTED, "SparseToDense of %s", graph_dtype_name(val->dtype));
  graph_tensor *r;
  TRY(tensor_create(val->dtype, rank, dims, &r));
  size_t es = graph_dtype_size(val->dtype);
  for (int64_t i = 0; i < r->n; i++) memcpy((char *)r->data + (size_t)i * es, dflt->data, es);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) {
      int64_t v = tensor_get_s64(ind, i * depth + d);
      if (v < 0 || v >= dims[d]) {
        tensor_free(r);
        return op_error(node, KILN_INVALID_ARGUMENT, "sparse index %lld is out of bounds in dim %d", (long long)i, d);
      }
      off = off * dims[d] + v;
    }
    memcpy((char *)r->data + (size_t)off * es, (const char *)val->data + (size_t)(val->n == 1 ? 0 : i) * es, es);
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}

/* Bincount(arr, size, weights) and DenseBincount(input, size, weights): counts (or
 * weight sums) of each value in [0, size); others are ignored. binary_output
 * (DenseBincount) records presence instead. 2-D inputs count per row. */
static kiln_status bincount(op_host_ctx *ctx, bool dense) {
  TRY(tf_host_check_inputs(ctx, 3, 3));
  const graph_tensor *arr = ctx->inputs[0], *sz = ctx->inputs[1], *w = ctx->inputs[2];
  const graph_node *node = ctx->node;
  if (!graph_dtype_is_int(arr->dtype) || !graph_dtype_is_int(sz->dtype) || sz->n != 1)
    return op_error(node, KILN_INVALID_ARGUMENT, "input must be integers and size an integer scalar");
  int64_t size = tensor_get_s64(sz, 0);
  if (size < 0) return op_error(node, KILN_INVALID_ARGUMENT, "size must not be negative");
  bool binary = dense && graph_node_attr_bool_or(node, "binary_output", false);
  bool weighted = w->n > 0;
  if (weighted && w->n != arr->n)
    return op_error(node, KILN_INVALID_ARGUMENT, "weights must have the input's shape or be empty");
  int rows = dense && arr->rank == 2 ? (int)arr->dims[0] : 1;
  if (arr->rank > (dense ? 2 : GRAPH_MAX_RANK))
    return op_error(node, KILN_INVALID_ARGUMENT, "input rank %d is not supported", arr->rank);
  graph_dtype ot = w->dtype;
  if (!graph_dtype_is_int(ot) && !graph_dtype_is_float(ot))
    return op_error(node, KILN_INVALID_ARGUMENT, "weights must be numbers");
  graph_tensor *r;
  int64_t dims[2] = {rows, size};
  bool two_d = dense && arr->rank == 2;
  TRY(tensor_create(ot, two_d ? 2 : 1, two_d ? dims : &dims[1], &r));
  int64_t per_row = rows ? arr->n / rows : 0;
  for (int64_t i = 0; i < arr->n; i++) {
    int64_t v = tensor_get_s64(arr, i);
    if (v < 0 || v >= size) continue;
    int64_t o = (two_d ? (i / per_row) * size : 0) + v;
    if (binary) {
      tensor_set_f64(r, o, 1);
    } else if (graph_dtype_is_int(ot)) {
      tensor_set_s64(r, o, tensor_get_s64(r, o) + (weighted ? tensor_get_s64(w, i) : 1));
    } else {
      tensor_set_f64(r, o, tensor_get_f64(r, o) + (weighted ? tensor_get_f64(w, i) : 1));
    }
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}
static kiln_status host_Bincount(op_host_ctx *ctx) { return bincount(ctx, false); }
static kiln_status host_DenseBincount(op_host_ctx *ctx) { return bincount(ctx, true); }

/* ------------------------------------------------------------------ table ---- */

#define OP(NAME, FN, MASK) {"tf." NAME, 0, MASK, lower_##FN, NULL}
#define HOST(NAME, FN) {"tf." NAME, OP_DYNAMIC_SHAPE, 0, NULL, host_##FN}
#define B(i) (1u << (i))

static const op_def tf_index_defs[] = {
    HOST("Bincount", Bincount),
    HOST("DenseBincount", DenseBincount),
    OP("Gather", Gather, 0),
    OP("GatherNd", GatherNd, 0),
    OP("GatherV2", GatherV2, B(2)),
    OP("OneHot", OneHot, B(1)),
    OP("ScatterNd", ScatterNd, B(2)),
    HOST("SparseToDense", SparseToDense),
    OP("TensorScatterAdd", TensorScatterAdd, 0),
    OP("TensorScatterMax", TensorScatterMax, 0),
    OP("TensorScatterMin", TensorScatterMin, 0),
    OP("TensorScatterSub", TensorScatterSub, 0),
    OP("TensorScatterUpdate", TensorScatterUpdate, 0),
    HOST("Unique", Unique),
    OP("UnsortedSegmentMax", UnsortedSegmentMax, B(2)),
    OP("UnsortedSegmentMin", UnsortedSegmentMin, B(2)),
    OP("UnsortedSegmentProd", UnsortedSegmentProd, B(2)),
    OP("UnsortedSegmentSum", UnsortedSegmentSum, B(2)),
    HOST("Where", Where),
};

const op_table tf_index_table = {"tf.index", (int)(sizeof tf_index_defs / sizeof tf_index_defs[0]), tf_index_defs};
