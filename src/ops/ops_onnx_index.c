/* ONNX indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements
 * (and the deprecated Scatter), OneHot, ArgMax/ArgMin, TopK, CumSum/CumProd, and the
 * data-dependent ones that only have host kernels: NonZero and NonMaxSuppression
 * (TopK also runs on the host when k is not a compile-time constant).
 *
 * Every ONNX indexing form maps onto XLA's general gather/scatter: the index tensor is
 * completed into full coordinate vectors (iotas for the implied coordinates, batch
 * coordinates for GatherND's batch_dims), negative indices are wrapped by adding the
 * dimension size, and the dimension numbers then say which operand dims the vectors
 * address. Host kernels follow ONNX Runtime's ordering conventions (ties broken by
 * lower index, NMS by descending score) so results match it exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

static kiln_status need_int(op_lower_ctx *ctx, hlo_instr *idx, const char *what) {
  if (!hlo_type_is_int(idx->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be an integer tensor, got %s", what,
                    hlo_type_name(idx->shape.type));
  return NULL;
}

/* idx (s64) with negative entries shifted by `dims` (same shape). */
static kiln_status wrap_negative(op_lower_ctx *ctx, hlo_instr *idx, hlo_instr *dims, hlo_instr **out) {
  hlo_instr *zero, *neg, *sum;
  L(oplib_full_like(ctx->comp, idx, HLO_TYPE_COUNT, 0, &zero));
  L(hlo_build_compare(ctx->comp, HLO_DIR_LT, idx, zero, &neg));
  L(hlo_build_binary(ctx->comp, HLO_OP_ADD, idx, dims, &sum));
  L(hlo_build_select(ctx->comp, neg, sum, idx, out));
  return NULL;
}

/* idx as s64 with negatives wrapped by the single size `dim`. */
static kiln_status indices_for_dim(op_lower_ctx *ctx, hlo_instr *idx, int64_t dim, hlo_instr **out) {
  hlo_instr *d;
  L(oplib_convert(ctx->comp, idx, HLO_S64, &idx));
  L(oplib_full_like(ctx->comp, idx, HLO_TYPE_COUNT, (double)dim, &d));
  return wrap_negative(ctx, idx, d, out);
}

/* Appends a trailing size-1 dim (an index vector of length 1). */
static kiln_status as_index_vectors(op_lower_ctx *ctx, hlo_instr *idx, hlo_instr **out) {
  int64_t dims[HLO_MAX_RANK];
  int q = idx->shape.rank;
  if (q + 1 > HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "indices rank too large");
  memcpy(dims, idx->shape.dims, (size_t)q * sizeof *dims);
  dims[q] = 1;
  L(hlo_build_reshape(ctx->comp, idx, q + 1, dims, out));
  return NULL;
}

/* Full coordinates over idx's shape: coordinate `axis` is idx, the others iotas.
 * Result [idx dims..., r] (s64). */
static kiln_status element_coords(op_lower_ctx *ctx, hlo_instr *idx, int64_t axis, hlo_instr **out) {
  int r = idx->shape.rank;
  hlo_instr *parts[HLO_MAX_RANK];
  hlo_shape s = shape_make(HLO_S64, r, idx->shape.dims);
  for (int d = 0; d < r; d++) {
    hlo_instr *c = idx;
    if (d != axis) L(hlo_build_iota(ctx->comp, &s, d, &c));
    TRY(as_index_vectors(ctx, c, &parts[d]));
  }
  L(oplib_concat(ctx->comp, r, parts, r, out));
  return NULL;
}

static kiln_status iota_list(int n, int64_t first, int64_t *out) {
  for (int i = 0; i < n; i++) out[i] = first + i;
  return NULL;
}

/* ------------------------------------------------------------------- Gather ---- */

static kiln_status lower_gather(op_lower_ctx *ctx) {
  hlo_instr *x, *idx, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &idx));
  TRY(need_int(ctx, idx, "indices"));
  int r = x->shape.rank, q = idx->shape.rank;
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), r, &axis));
  if (r - 1 + q > HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "result rank too large");
  TRY(indices_for_dim(ctx, idx, x->shape.dims[axis], &idx));
  TRY(as_index_vectors(ctx, idx, &idx));
  int64_t offset[HLO_MAX_RANK], sizes[HLO_MAX_RANK];
  int no = 0;
  for (int d = 0; d < r; d++) {
    sizes[d] = d == axis ? 1 : x->shape.dims[d];
    if (d < axis)
      offset[no++] = d;
    else if (d > axis)
      offset[no++] = d - 1 + q;
  }
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){no, offset};
  dn.collapsed_slice_dims = (hlo_ints){1, &axis};
  dn.start_index_map = (hlo_ints){1, &axis};
  dn.index_vector_dim = q;
  L(hlo_build_gather(ctx->comp, x, idx, &dn, sizes, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_gather_elements(op_lower_ctx *ctx) {
  hlo_instr *x, *idx, *coords, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &idx));
  TRY(need_int(ctx, idx, "indices"));
  int r = x->shape.rank;
  if (idx->shape.rank != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "indices rank %d differs from data rank %d", idx->shape.rank, r);
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), r, &axis));
  TRY(indices_for_dim(ctx, idx, x->shape.dims[axis], &idx));
  TRY(element_coords(ctx, idx, axis, &coords));
  int64_t all[HLO_MAX_RANK], ones[HLO_MAX_RANK];
  iota_list(r, 0, all);
  for (int i = 0; i < r; i++) ones[i] = 1;
  hlo_gather_dnums dn = {0};
  dn.collapsed_slice_dims = (hlo_ints){r, all};
  dn.start_index_map = (hlo_ints){r, all};
  dn.index_vector_dim = r;
  L(hlo_build_gather(ctx->comp, x, coords, &dn, ones, &y));
  return onnx_set_output(ctx, 0, y);
}

/* GatherND / ScatterND index preparation: wraps negatives per component and prepends
 * batch coordinates. Returns [idx dims[:-1]..., b + k] (s64). */
static kiln_status nd_coords(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *idx, int64_t b, hlo_instr **out) {
  int r = x->shape.rank, q = idx->shape.rank;
  if (q < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "indices must have rank >= 1");
  int64_t k = idx->shape.dims[q - 1];
  if (b < 0 || b >= q || b + k > r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "index vectors of length %lld with batch_dims %lld do not fit data of rank %d", (long long)k,
                    (long long)b, r);
  for (int i = 0; i < b; i++)
    if (idx->shape.dims[i] != x->shape.dims[i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "batch dimension %d differs between data and indices", i);
  hlo_instr *dims, *dv;
  L(oplib_convert(ctx->comp, idx, HLO_S64, &idx));
  L(oplib_const_vector(ctx->comp, HLO_S64, k, x->shape.dims + b, &dv));
  int64_t last = q - 1;
  L(hlo_build_broadcast(ctx->comp, dv, q, idx->shape.dims, &last, &dims));
  TRY(wrap_negative(ctx, idx, dims, &idx));
  if (b == 0) {
    *out = idx;
    return NULL;
  }
  hlo_instr *parts[HLO_MAX_RANK + 1];
  int64_t cd[HLO_MAX_RANK];
  memcpy(cd, idx->shape.dims, (size_t)q * sizeof *cd);
  cd[q - 1] = 1;
  hlo_shape s = shape_make(HLO_S64, q, cd);
  for (int j = 0; j < b; j++) L(hlo_build_iota(ctx->comp, &s, j, &parts[j]));
  parts[b] = idx;
  L(hlo_build_concatenate(ctx->comp, (int)b + 1, parts, q - 1, out));
  return NULL;
}

static kiln_status lower_gather_nd(op_lower_ctx *ctx) {
  hlo_instr *x, *idx, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &idx));
  TRY(need_int(ctx, idx, "indices"));
  int64_t b = graph_node_attr_int_or(ctx->node, "batch_dims", 0);
  TRY(nd_coords(ctx, x, idx, b, &idx));
  int r = x->shape.rank, q = idx->shape.rank;
  int64_t m = idx->shape.dims[q - 1]; /* b + k */
  if (q - 1 + (r - m) > HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "result rank too large");
  int64_t mapped[HLO_MAX_RANK], offset[HLO_MAX_RANK], sizes[HLO_MAX_RANK];
  iota_list((int)m, 0, mapped);
  iota_list(r - (int)m, q - 1, offset);
  for (int d = 0; d < r; d++) sizes[d] = d < m ? 1 : x->shape.dims[d];
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){r - (int)m, offset};
  dn.collapsed_slice_dims = (hlo_ints){(int)m, mapped};
  dn.start_index_map = (hlo_ints){(int)m, mapped};
  dn.index_vector_dim = q - 1;
  L(hlo_build_gather(ctx->comp, x, idx, &dn, sizes, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------ Scatter ---- */

static kiln_status scatter_combiner(op_lower_ctx *ctx, hlo_type t, hlo_computation **out) {
  const char *red = onnx_attr_string(ctx->node, "reduction", "none");
  hlo_module *m = ctx->comp->module;
  if (strcmp(red, "none") == 0) {
    L(oplib_replace_computation(m, t, out));
    return NULL;
  }
  hlo_opcode op;
  if (strcmp(red, "add") == 0)
    op = t == HLO_PRED ? HLO_OP_OR : HLO_OP_ADD;
  else if (strcmp(red, "mul") == 0)
    op = t == HLO_PRED ? HLO_OP_AND : HLO_OP_MULTIPLY;
  else if (strcmp(red, "max") == 0)
    op = t == HLO_PRED ? HLO_OP_OR : HLO_OP_MAXIMUM;
  else if (strcmp(red, "min") == 0)
    op = t == HLO_PRED ? HLO_OP_AND : HLO_OP_MINIMUM;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unknown reduction \"%s\"", red);
  L(hlo_build_scalar_computation(m, op, t, out));
  return NULL;
}

static kiln_status lower_scatter_nd(op_lower_ctx *ctx) {
  hlo_instr *x, *idx, *upd, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &idx));
  TRY(onnx_require_input(ctx, 2, &upd));
  TRY(need_int(ctx, idx, "indices"));
  TRY(nd_coords(ctx, x, idx, 0, &idx));
  int r = x->shape.rank, q = idx->shape.rank;
  int64_t k = idx->shape.dims[q - 1];
  L(oplib_convert(ctx->comp, upd, x->shape.type, &upd));
  int64_t window[HLO_MAX_RANK], inserted[HLO_MAX_RANK];
  iota_list(r - (int)k, q - 1, window);
  iota_list((int)k, 0, inserted);
  hlo_scatter_dnums dn = {0};
  dn.update_window_dims = (hlo_ints){r - (int)k, window};
  dn.inserted_window_dims = (hlo_ints){(int)k, inserted};
  dn.scatter_dims_to_operand_dims = (hlo_ints){(int)k, inserted};
  dn.index_vector_dim = q - 1;
  hlo_computation *f;
  TRY(scatter_combiner(ctx, x->shape.type, &f));
  L(hlo_build_scatter(ctx->comp, 1, &x, idx, &upd, &dn, f, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_scatter_elements(op_lower_ctx *ctx) {
  hlo_instr *x, *idx, *upd, *coords, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &idx));
  TRY(onnx_require_input(ctx, 2, &upd));
  TRY(need_int(ctx, idx, "indices"));
  int r = x->shape.rank;
  if (idx->shape.rank != r || !shape_same_dims(&idx->shape, &upd->shape))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "indices and updates must have the same shape and data's rank");
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), r, &axis));
  TRY(indices_for_dim(ctx, idx, x->shape.dims[axis], &idx));
  TRY(element_coords(ctx, idx, axis, &coords));
  L(oplib_convert(ctx->comp, upd, x->shape.type, &upd));
  int64_t all[HLO_MAX_RANK];
  iota_list(r, 0, all);
  hlo_scatter_dnums dn = {0};
  dn.inserted_window_dims = (hlo_ints){r, all};
  dn.scatter_dims_to_operand_dims = (hlo_ints){r, all};
  dn.index_vector_dim = r;
  hlo_computation *f;
  TRY(scatter_combiner(ctx, x->shape.type, &f));
  L(hlo_build_scatter(ctx->comp, 1, &x, coords, &upd, &dn, f, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- OneHot ---- */

static kiln_status lower_onehot(op_lower_ctx *ctx) {
  hlo_instr *idx, *values, *off, *on, *io, *ib, *eq, *y;
  TRY(onnx_require_input(ctx, 0, &idx));
  const graph_tensor *dt;
  TRY(onnx_require_const(ctx, 1, "depth", &dt));
  double depth_f;
  L(oplib_tensor_scalar(dt, "depth", &depth_f));
  if (!(depth_f >= 1) || depth_f > 1e9) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "depth must be positive");
  int64_t depth = (int64_t)depth_f;
  TRY(onnx_require_input(ctx, 2, &values));
  if (shape_elements(&values->shape) != 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "values must have two elements [off, on]");
  int64_t two = 2;
  L(oplib_reshape(ctx->comp, values, 1, &two, &values));
  L(oplib_slice_axis(ctx->comp, values, 0, 0, 1, &off));
  L(oplib_slice_axis(ctx->comp, values, 0, 1, 2, &on));
  L(hlo_build_reshape(ctx->comp, off, 0, NULL, &off));
  L(hlo_build_reshape(ctx->comp, on, 0, NULL, &on));
  int q = idx->shape.rank, r = q + 1;
  if (r > HLO_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "result rank too large");
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", -1), r, &axis));
  /* Indices are compared in their own type, so a non-integral float index matches no
   * position (as in ONNX Runtime); negative ones count from the end. */
  if (idx->shape.type == HLO_PRED || hlo_type_is_unsigned_int(idx->shape.type))
    L(hlo_build_convert(ctx->comp, idx, HLO_S64, &idx));
  hlo_instr *dv;
  L(oplib_full_like(ctx->comp, idx, HLO_TYPE_COUNT, (double)depth, &dv));
  TRY(wrap_negative(ctx, idx, dv, &idx));
  int64_t dims[HLO_MAX_RANK], bd[HLO_MAX_RANK];
  for (int d = 0, k = 0; d < r; d++) {
    if (d == axis) {
      dims[d] = depth;
    } else {
      dims[d] = idx->shape.dims[k];
      bd[k++] = d;
    }
  }
  hlo_shape s = shape_make(idx->shape.type, r, dims);
  L(hlo_build_iota(ctx->comp, &s, axis, &io));
  L(hlo_build_broadcast(ctx->comp, idx, r, dims, q ? bd : NULL, &ib));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, io, ib, &eq));
  L(hlo_build_broadcast(ctx->comp, on, r, dims, NULL, &on));
  L(hlo_build_broadcast(ctx->comp, off, r, dims, NULL, &off));
  L(hlo_build_select(ctx->comp, eq, on, off, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------ ArgMax/ArgMin ---- */

static kiln_status lower_argminmax(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), x->shape.rank, &axis));
  bool is_max = strcmp(graph_node_op_base(ctx->node), "ArgMax") == 0;
  bool keepdims = graph_node_attr_int_or(ctx->node, "keepdims", 1) != 0;
  bool last = graph_node_attr_int_or(ctx->node, "select_last_index", 0) != 0;
  L(oplib_argminmax(ctx->comp, x, axis, is_max, last, keepdims, HLO_S64, &y));
  return onnx_set_output(ctx, 0, y);
}

/* --------------------------------------------------------------------- TopK ---- */

typedef struct topk_params {
  int64_t axis, k;
  bool largest;
} topk_params;

static kiln_status topk_params_read(const graph_node *node, int64_t opset, int rank, const graph_tensor *kt,
                                    topk_params *p) {
  OPLIB_TRY(node, oplib_normalize_axis(graph_node_attr_int_or(node, "axis", -1), rank, &p->axis));
  p->largest = graph_node_attr_int_or(node, "largest", 1) != 0;
  if (opset > 0 && opset < 10) {
    p->k = graph_node_attr_int_or(node, "k", -1);
  } else {
    int64_t kv[1];
    int n;
    OPLIB_TRY(node, oplib_tensor_ints(kt, "K", kv, 1, &n));
    if (n != 1) return op_error(node, KILN_INVALID_ARGUMENT, "K must have one element");
    p->k = kv[0];
  }
  if (p->k < 0) return op_error(node, KILN_INVALID_ARGUMENT, "k must be non-negative, got %lld", (long long)p->k);
  return NULL;
}

static kiln_status lower_topk(op_lower_ctx *ctx) {
  hlo_instr *x, *v, *i;
  TRY(onnx_require_input(ctx, 0, &x));
  if (x->shape.rank < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  const graph_tensor *kt = NULL;
  if (!(ctx->opset > 0 && ctx->opset < 10)) TRY(onnx_require_const(ctx, 1, "K", &kt));
  topk_params p;
  TRY(topk_params_read(ctx->node, ctx->opset, x->shape.rank, kt, &p));
  if (p.k > x->shape.dims[p.axis])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "k=%lld exceeds the axis size %lld", (long long)p.k,
                    (long long)x->shape.dims[p.axis]);
  L(oplib_topk(ctx->comp, x, p.axis, p.k, p.largest, HLO_S64, &v, &i));
  onnx_set_output(ctx, 0, v);
  return onnx_set_output(ctx, 1, i);
}

/* Host TopK: per slice, a merge sort of positions by (value, index). */
typedef struct topk_key {
  double v;
  int64_t iv; /* exact integer value for integer tensors */
  int64_t index;
  bool nan;
} topk_key;

static bool topk_before(const topk_key *a, const topk_key *b, bool largest, bool is_int) {
  if (a->nan || b->nan) {
    if (a->nan && b->nan) return a->index < b->index;
    return largest ? a->nan : b->nan;
  }
  if (is_int) {
    if (a->iv != b->iv) return largest ? a->iv > b->iv : a->iv < b->iv;
  } else if (a->v != b->v) {
    return largest ? a->v > b->v : a->v < b->v;
  }
  return a->index < b->index;
}

static void topk_sort(topk_key *k, topk_key *tmp, int64_t n, bool largest, bool is_int) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) tmp[o++] = topk_before(&k[j], &k[i], largest, is_int) ? k[j++] : k[i++];
      while (i < mid) tmp[o++] = k[i++];
      while (j < hi) tmp[o++] = k[j++];
    }
    memcpy(k, tmp, (size_t)n * sizeof *k);
  }
}

static kiln_status host_topk(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0), *kt = onnx_host_input(ctx, 1);
  if (!x) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X is missing");
  hlo_type ht;
  if (!graph_dtype_to_hlo(x->dtype, &ht) || ht == HLO_PRED || x->rank < 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a numeric tensor of rank >= 1");
  topk_params p;
  TRY(topk_params_read(ctx->node, ctx->opset, x->rank, kt, &p));
  int64_t dim = x->dims[p.axis];
  if (p.k > dim)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "k=%lld exceeds the axis size %lld", (long long)p.k,
                    (long long)dim);
  int64_t inner = 1, outer = 1;
  for (int i = p.axis + 1; i < x->rank; i++) inner *= x->dims[i];
  for (int i = 0; i < p.axis; i++) outer *= x->dims[i];
  int64_t odims[GRAPH_MAX_RANK];
  memcpy(odims, x->dims, (size_t)x->rank * sizeof *odims);
  odims[p.axis] = p.k;
  graph_tensor *vals = NULL, *inds = NULL;
  TRY(tensor_create(x->dtype, x->rank, odims, &vals));
  kiln_status st = tensor_create(GRAPH_DT_INT64, x->rank, odims, &inds);
  if (st) {
    tensor_free(vals);
    return st;
  }
  topk_key *keys = malloc((size_t)(dim ? dim : 1) * 2 * sizeof *keys);
  if (!keys) abort();
  bool is_int = hlo_type_is_int(ht);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      for (int64_t j = 0; j < dim; j++) {
        int64_t at = (o * dim + j) * inner + in;
        keys[j].v = tensor_get_f64(x, at);
        keys[j].iv = is_int ? tensor_get_s64(x, at) : 0;
        keys[j].nan = !is_int && isnan(keys[j].v);
        keys[j].index = j;
      }
      topk_sort(keys, keys + dim, dim, p.largest, is_int);
      for (int64_t j = 0; j < p.k; j++) {
        int64_t src = (o * dim + keys[j].index) * inner + in, dst = (o * p.k + j) * inner + in;
        memcpy((char *)vals->data + dst * graph_dtype_size(x->dtype),
               (const char *)x->data + src * graph_dtype_size(x->dtype), graph_dtype_size(x->dtype));
        tensor_set_s64(inds, dst, keys[j].index);
      }
    }
  free(keys);
  ctx->outputs[0] = vals;
  if (ctx->n_outputs > 1)
    ctx->outputs[1] = inds;
  else
    tensor_free(inds);
  return NULL;
}

/* ---------------------------------------------------------- CumSum, CumProd ---- */

/* A running reduction along the constant `axis` input: a reduce-window whose window
 * spans the whole axis and is padded by dim-1 identity elements at the start, so
 * output j folds elements 0..j. `exclusive` shifts the input by one identity element
 * first; `reverse` flips the axis before and after. `prod` picks multiply (identity 1;
 * AND for bool) instead of add (identity 0; OR for bool). */
static kiln_status lower_cumulative(op_lower_ctx *ctx, bool prod) {
  hlo_instr *x, *y, *identity;
  TRY(onnx_require_input(ctx, 0, &x));
  const graph_tensor *at;
  TRY(onnx_require_const(ctx, 1, "axis", &at));
  double axis_f;
  L(oplib_tensor_scalar(at, "axis", &axis_f));
  int64_t axis;
  L(oplib_normalize_axis((int64_t)axis_f, x->shape.rank, &axis));
  bool exclusive = graph_node_attr_int_or(ctx->node, "exclusive", 0) != 0;
  bool reverse = graph_node_attr_int_or(ctx->node, "reverse", 0) != 0;
  int64_t dim = x->shape.dims[axis];
  if (dim == 0) return onnx_set_output(ctx, 0, x);
  bool is_pred = x->shape.type == HLO_PRED;
  y = x;
  if (reverse) L(hlo_build_reverse(ctx->comp, y, 1, &axis, &y));
  L(oplib_scalar(ctx->comp, x->shape.type, prod ? 1 : 0, &identity));
  if (exclusive) {
    int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
    lo[axis] = 1;
    hi[axis] = -1;
    L(oplib_pad(ctx->comp, y, identity, lo, hi, &y));
  }
  oplib_window w;
  memset(&w, 0, sizeof w);
  w.n = 1;
  w.kernel[0] = dim;
  w.stride[0] = 1;
  w.dilation[0] = 1;
  w.pad_lo[0] = dim - 1;
  hlo_window hw = oplib_window_to_hlo(&w, x->shape.rank, (int)axis);
  hlo_opcode op = prod ? (is_pred ? HLO_OP_AND : HLO_OP_MULTIPLY) : (is_pred ? HLO_OP_OR : HLO_OP_ADD);
  hlo_computation *fold;
  L(hlo_build_scalar_computation(ctx->comp->module, op, x->shape.type, &fold));
  hlo_instr *acc;
  L(hlo_build_reduce_window(ctx->comp, 1, &y, &identity, &hw, fold, &acc));
  y = acc;
  if (reverse) L(hlo_build_reverse(ctx->comp, y, 1, &axis, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_cumsum(op_lower_ctx *ctx) { return lower_cumulative(ctx, false); }
static kiln_status lower_cumprod(op_lower_ctx *ctx) { return lower_cumulative(ctx, true); }

/* ------------------------------------------------------------------ NonZero ---- */

static kiln_status host_nonzero(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0), *y;
  hlo_type ht;
  if (!x || !graph_dtype_to_hlo(x->dtype, &ht))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a numeric or bool tensor");
  int64_t nnz = 0;
  for (int64_t i = 0; i < x->n; i++) nnz += tensor_get_f64(x, i) != 0;
  /* A scalar reads as a 1-element vector, as numpy's nonzero does. */
  int rank = x->rank ? x->rank : 1;
  int64_t dims[2] = {rank, nnz};
  TRY(tensor_create(GRAPH_DT_INT64, 2, dims, &y));
  int64_t k = 0;
  for (int64_t i = 0; i < x->n; i++) {
    if (tensor_get_f64(x, i) == 0) continue;
    int64_t rem = i;
    for (int d = x->rank - 1; d >= 0; d--) {
      tensor_set_s64(y, d * nnz + k, rem % x->dims[d]);
      rem /= x->dims[d];
    }
    k++;
  }
  ctx->outputs[0] = y;
  return NULL;
}

/* -------------------------------------------------------- NonMaxSuppression ---- */

typedef struct nms_box {
  double y1, x1, y2, x2; /* corners, ordered */
} nms_box;

static nms_box nms_read_box(const graph_tensor *boxes, int64_t at, bool center) {
  double a = tensor_get_f64(boxes, at), b = tensor_get_f64(boxes, at + 1), c = tensor_get_f64(boxes, at + 2),
         d = tensor_get_f64(boxes, at + 3);
  nms_box r;
  if (center) {
    /* [x_center, y_center, width, height] */
    r.x1 = a - c / 2;
    r.x2 = a + c / 2;
    r.y1 = b - d / 2;
    r.y2 = b + d / 2;
  } else {
    r.y1 = fmin(a, c);
    r.y2 = fmax(a, c);
    r.x1 = fmin(b, d);
    r.x2 = fmax(b, d);
  }
  return r;
}

static bool nms_suppress(const nms_box *a, const nms_box *b, double iou_threshold) {
  double ix1 = fmax(a->x1, b->x1), iy1 = fmax(a->y1, b->y1), ix2 = fmin(a->x2, b->x2), iy2 = fmin(a->y2, b->y2);
  double aa = (a->x2 - a->x1) * (a->y2 - a->y1), ab = (b->x2 - b->x1) * (b->y2 - b->y1);
  if (aa <= 0 || ab <= 0) return false;
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  double inter = (ix2 - ix1) * (iy2 - iy1);
  double iou = inter / (aa + ab - inter);
  return iou > iou_threshold;
}

typedef struct nms_cand {
  double score;
  int64_t index;
} nms_cand;

static int nms_cmp(const void *pa, const void *pb) {
  const nms_cand *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static kiln_status host_nms(op_host_ctx *ctx) {
  graph_tensor *boxes = onnx_host_input(ctx, 0), *scores = onnx_host_input(ctx, 1);
  graph_tensor *tmax = onnx_host_input(ctx, 2), *tiou = onnx_host_input(ctx, 3), *tscore = onnx_host_input(ctx, 4);
  if (!boxes || !scores) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "boxes and scores are required");
  if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 || scores->dims[0] != boxes->dims[0] ||
      scores->dims[2] != boxes->dims[1])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "boxes must be [B, N, 4] and scores [B, C, N] (got ranks %d and %d)", boxes->rank, scores->rank);
  int64_t max_out = tmax && tmax->n > 0 ? tensor_get_s64(tmax, 0) : 0;
  double iou_thr = tiou && tiou->n > 0 ? tensor_get_f64(tiou, 0) : 0;
  bool have_score_thr = tscore && tscore->n > 0;
  double score_thr = have_score_thr ? tensor_get_f64(tscore, 0) : 0;
  bool center = graph_node_attr_int_or(ctx->node, "center_point_box", 0) != 0;
  if (iou_thr < 0 || iou_thr > 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "iou_threshold %g must be in [0, 1]", iou_thr);
  int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];
  if (max_out < 0) max_out = 0;
  if (max_out > N) max_out = N;
  /* Selected triples, grown as needed. */
  int64_t cap = 64, count = 0;
  int64_t *sel = malloc((size_t)cap * 3 * sizeof *sel);
  nms_cand *cands = malloc((size_t)(N ? N : 1) * sizeof *cands);
  nms_box *picked = malloc((size_t)(N ? N : 1) * sizeof *picked);
  if (!sel || !cands || !picked) abort();
  for (int64_t b = 0; b < B && max_out > 0; b++)
    for (int64_t c = 0; c < C; c++) {
      int64_t nc = 0;
      for (int64_t i = 0; i < N; i++) {
        double s = tensor_get_f64(scores, (b * C + c) * N + i);
        if (have_score_thr && !(s > score_thr)) continue;
        cands[nc].score = s;
        cands[nc++].index = i;
      }
      qsort(cands, (size_t)nc, sizeof *cands, nms_cmp);
      int64_t npicked = 0;
      for (int64_t j = 0; j < nc && npicked < max_out; j++) {
        nms_box bx = nms_read_box(boxes, (b * N + cands[j].index) * 4, center);
        bool keep = true;
        for (int64_t p = 0; p < npicked && keep; p++) keep = !nms_suppress(&picked[p], &bx, iou_thr);
        if (!keep) continue;
        picked[npicked++] = bx;
        if (count == cap) {
          cap *= 2;
          sel = realloc(sel, (size_t)cap * 3 * sizeof *sel);
          if (!sel) abort();
        }
        sel[count * 3] = b;
        sel[count * 3 + 1] = c;
        sel[count * 3 + 2] = cands[j].index;
        count++;
      }
    }
  free(cands);
  free(picked);
  graph_tensor *y;
  int64_t dims[2] = {count, 3};
  kiln_status st = tensor_create(GRAPH_DT_INT64, 2, dims, &y);
  if (!st) {
    for (int64_t i = 0; i < count * 3; i++) tensor_set_s64(y, i, sel[i]);
    ctx->outputs[0] = y;
  }
  free(sel);
  return st;
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_index_defs[] = {
    {"onnx.Gather", 0, 0, lower_gather, NULL},
    {"onnx.GatherElements", 0, 0, lower_gather_elements, NULL},
    {"onnx.GatherND", 0, 0, lower_gather_nd, NULL},
    {"onnx.ScatterND", 0, 0, lower_scatter_nd, NULL},
    {"onnx.ScatterElements", 0, 0, lower_scatter_elements, NULL},
    {"onnx.Scatter", 0, 0, lower_scatter_elements, NULL},
    {"onnx.OneHot", 0, 2, lower_onehot, NULL},
    {"onnx.ArgMax", 0, 0, lower_argminmax, NULL},
    {"onnx.ArgMin", 0, 0, lower_argminmax, NULL},
    {"onnx.TopK", 0, 2, lower_topk, host_topk},
    {"onnx.CumSum", 0, 2, lower_cumsum, NULL},
    {"onnx.CumProd", 0, 2, lower_cumprod, NULL},
    {"onnx.NonZero", OP_DYNAMIC_SHAPE, 0, NULL, host_nonzero},
    {"onnx.NonMaxSuppression", OP_DYNAMIC_SHAPE, 0, NULL, host_nms},
};

const op_table onnx_index_ops = {"onnx.index", (int)(sizeof onnx_index_defs / sizeof onnx_index_defs[0]),
                                 onnx_index_defs};
