/* ONNX selection and re-layout ops: Compress and Unique (host kernels, their output
 * shapes depend on data), ReverseSequence, TensorScatter and BitCast (HLO lowerings).
 *
 * Compress and Unique only move elements, so their kernels copy raw element bytes
 * (strings as strings): int64/uint64 values never pass through a double. Unique
 * orders slices (or elements, without an axis) with a stable merge sort under a total
 * order -- numbers by value, -0 equal to +0, NaN after every number and equal to other
 * NaNs (numpy's equal_nan), strings by bytes -- so the first member of each run of
 * equal slices is its first occurrence; sorted=0 then reorders the runs by first
 * occurrence. ReverseSequence is one gather whose (batch, time) coordinates are built
 * from iotas and sequence_lens; TensorScatter is one scatter of update's (batch,
 * sequence) slices to (batch, write_index + s [mod max_sequence_length]); BitCast is
 * HLO bitcast-convert (bool, which has no bit pattern in HLO, goes through convert:
 * its bytes are 0/1). */
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* ---------------------------------------------------------------- helpers ---- */

/* Copies n elements from src[si..] to dst[di..] (same dtype). */
static void copy_elems(graph_tensor *dst, int64_t di, const graph_tensor *src, int64_t si, int64_t n) {
  if (n <= 0) return;
  if (src->dtype == GRAPH_DT_STRING) {
    for (int64_t k = 0; k < n; k++) {
      const graph_bytes *b = tensor_string(src, si + k);
      tensor_set_string(dst, di + k, b->data, b->len);
    }
    return;
  }
  size_t es = graph_dtype_size(src->dtype);
  memcpy((char *)dst->data + (size_t)di * es, (const char *)src->data + (size_t)si * es, (size_t)n * es);
}

static bool host_dtype_ok(graph_dtype t) {
  hlo_type h;
  return t == GRAPH_DT_STRING || graph_dtype_to_hlo(t, &h);
}

static kiln_status set_host_output(op_host_ctx *ctx, int i, graph_tensor *t) {
  if (i < ctx->n_outputs)
    ctx->outputs[i] = t;
  else
    tensor_free(t);
  return NULL;
}

/* outer * n * inner decomposition of x around `axis` (no axis: the flat tensor). */
static void split_axis(const graph_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
  if (axis < 0) {
    *outer = 1;
    *n = x->n;
    *inner = 1;
    return;
  }
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= x->dims[d];
  for (int d = axis + 1; d < x->rank; d++) *inner *= x->dims[d];
  *n = x->dims[axis];
}

/* The optional int `axis` attribute, normalised against rank; *has false when absent. */
static kiln_status read_axis(const graph_node *node, int rank, bool *has, int *axis) {
  *has = graph_node_attr(node, "axis") != NULL;
  *axis = -1;
  if (!*has) return NULL;
  int64_t a;
  TRY(graph_node_get_int(node, "axis", &a));
  if (rank < 1) return op_error(node, KILN_INVALID_ARGUMENT, "axis is given but the input is a scalar");
  if (a < -rank || a >= rank)
    return op_error(node, KILN_INVALID_ARGUMENT, "axis %lld is out of range for a rank-%d input", (long long)a,
                    rank);
  *axis = (int)(a < 0 ? a + rank : a);
  return NULL;
}

/* --------------------------------------------------------------- Compress ---- */

static kiln_status host_compress(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0), *cond = onnx_host_input(ctx, 1), *y;
  if (!x || !cond) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input and condition are required");
  if (!host_dtype_ok(x->dtype))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input of type %s is not supported", graph_dtype_name(x->dtype));
  hlo_type ct;
  if (!graph_dtype_to_hlo(cond->dtype, &ct))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "condition must be a bool tensor, got %s",
                    graph_dtype_name(cond->dtype));
  if (cond->rank != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "condition must be 1-D, got rank %d", cond->rank);
  bool has_axis;
  int axis;
  TRY(read_axis(ctx->node, x->rank, &has_axis, &axis));
  int64_t outer, n, inner;
  split_axis(x, axis, &outer, &n, &inner);
  int64_t kept = 0;
  for (int64_t k = 0; k < cond->n; k++) {
    if (tensor_get_f64(cond, k) == 0) continue;
    if (k >= n)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "condition selects index %lld but the input has %lld %s", (long long)k, (long long)n,
                      has_axis ? "slices along axis" : "elements");
    kept++;
  }
  int64_t dims[GRAPH_MAX_RANK];
  int rank;
  if (has_axis) {
    rank = x->rank;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
    dims[axis] = kept;
  } else {
    rank = 1;
    dims[0] = kept;
  }
  TRY(tensor_create(x->dtype, rank, dims, &y));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < cond->n && k < n; k++) {
      if (tensor_get_f64(cond, k) == 0) continue;
      copy_elems(y, at, x, (o * n + k) * inner, inner);
      at += inner;
    }
  }
  return set_host_output(ctx, 0, y);
}

/* ----------------------------------------------------------------- Unique ---- */

/* Total order on elements i and j of t (see the header comment). */
static int elem_cmp(const graph_tensor *t, int64_t i, int64_t j) {
  switch (t->dtype) {
    case GRAPH_DT_STRING: {
      const graph_bytes *a = tensor_string(t, i), *b = tensor_string(t, j);
      size_t m = a->len < b->len ? a->len : b->len;
      int c = m ? memcmp(a->data, b->data, m) : 0;
      if (c) return c < 0 ? -1 : 1;
      return a->len < b->len ? -1 : a->len > b->len;
    }
    case GRAPH_DT_INT64: {
      int64_t a = ((const int64_t *)t->data)[i], b = ((const int64_t *)t->data)[j];
      return a < b ? -1 : a > b;
    }
    case GRAPH_DT_UINT64: {
      uint64_t a = ((const uint64_t *)t->data)[i], b = ((const uint64_t *)t->data)[j];
      return a < b ? -1 : a > b;
    }
    default: {
      /* Every other numeric type is exact in a double. */
      double a = tensor_get_f64(t, i), b = tensor_get_f64(t, j);
      bool na = a != a, nb = b != b;
      if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
      return a < b ? -1 : a > b;
    }
  }
}

typedef struct unique_ctx {
  const graph_tensor *x;
  int64_t outer, n, inner;
} unique_ctx;

/* Lexicographic comparison of slices a and b (row-major over the other dims). */
static int slice_cmp(const unique_ctx *u, int64_t a, int64_t b) {
  if (a == b) return 0;
  for (int64_t o = 0; o < u->outer; o++) {
    int64_t base = o * u->n * u->inner;
    for (int64_t i = 0; i < u->inner; i++) {
      int c = elem_cmp(u->x, base + a * u->inner + i, base + b * u->inner + i);
      if (c) return c;
    }
  }
  return 0;
}

/* Stable bottom-up merge sort of v[0..n) by slice_cmp; tmp has n entries. */
static void merge_sort(const unique_ctx *u, int64_t *v, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = slice_cmp(u, v[j], v[i]) < 0 ? v[j++] : v[i++];
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, sizeof(int64_t) * (size_t)n);
  }
}

static kiln_status host_unique(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0);
  if (!x) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X is required");
  if (!host_dtype_ok(x->dtype))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input of type %s is not supported", graph_dtype_name(x->dtype));
  bool has_axis;
  int axis;
  TRY(read_axis(ctx->node, x->rank, &has_axis, &axis));
  int64_t sorted = graph_node_attr_int_or(ctx->node, "sorted", 1);
  if (sorted != 0 && sorted != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "sorted must be 0 or 1, got %lld", (long long)sorted);
  unique_ctx u = {x, 0, 0, 0};
  split_axis(x, axis, &u.outer, &u.n, &u.inner);
  int64_t n = u.n;
  size_t cnt = (size_t)(n > 0 ? n : 1);
  /* order: slice ids sorted; group[s]: the unique id of slice s; first/count per unique. */
  int64_t *order = malloc(cnt * sizeof *order), *tmp = malloc(cnt * sizeof *tmp);
  int64_t *group = malloc(cnt * sizeof *group), *first = malloc(cnt * sizeof *first);
  int64_t *count = malloc(cnt * sizeof *count), *rank_of = malloc(cnt * sizeof *rank_of);
  if (!order || !tmp || !group || !first || !count || !rank_of) abort();
  for (int64_t i = 0; i < n; i++) order[i] = i;
  merge_sort(&u, order, tmp, n);
  int64_t nu = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || slice_cmp(&u, order[i - 1], order[i]) != 0) {
      first[nu] = order[i]; /* stable: the first of a run is the earliest occurrence */
      count[nu] = 0;
      nu++;
    }
    group[order[i]] = nu - 1;
    count[nu - 1]++;
  }
  /* rank_of[g]: output position of sorted group g. */
  for (int64_t g = 0; g < nu; g++) rank_of[g] = g;
  if (!sorted) {
    /* Groups in order of first occurrence: walk the slices, numbering unseen groups. */
    for (int64_t g = 0; g < nu; g++) rank_of[g] = -1;
    int64_t next = 0;
    for (int64_t s = 0; s < n; s++)
      if (rank_of[group[s]] < 0) rank_of[group[s]] = next++;
    int64_t *f2 = tmp, *c2 = order; /* reuse: both have n >= nu entries */
    for (int64_t g = 0; g < nu; g++) {
      f2[rank_of[g]] = first[g];
      c2[rank_of[g]] = count[g];
    }
    memcpy(first, f2, sizeof(int64_t) * (size_t)nu);
    memcpy(count, c2, sizeof(int64_t) * (size_t)nu);
  }
  kiln_status st = NULL;
  graph_tensor *y = NULL, *ti = NULL, *tinv = NULL, *tc = NULL;
  int64_t dims[GRAPH_MAX_RANK];
  int rank = 1;
  if (has_axis) {
    rank = x->rank;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
    dims[axis] = nu;
  } else {
    dims[0] = nu;
  }
  if ((st = tensor_create(x->dtype, rank, dims, &y))) goto done;
  if ((st = tensor_create(GRAPH_DT_INT64, 1, &nu, &ti))) goto done;
  if ((st = tensor_create(GRAPH_DT_INT64, 1, &n, &tinv))) goto done;
  if ((st = tensor_create(GRAPH_DT_INT64, 1, &nu, &tc))) goto done;
  for (int64_t o = 0; o < u.outer; o++)
    for (int64_t k = 0; k < nu; k++)
      copy_elems(y, (o * nu + k) * u.inner, x, (o * n + first[k]) * u.inner, u.inner);
  for (int64_t k = 0; k < nu; k++) {
    ((int64_t *)ti->data)[k] = first[k];
    ((int64_t *)tc->data)[k] = count[k];
  }
  for (int64_t s = 0; s < n; s++) ((int64_t *)tinv->data)[s] = rank_of[group[s]];
  set_host_output(ctx, 0, y);
  set_host_output(ctx, 1, ti);
  set_host_output(ctx, 2, tinv);
  set_host_output(ctx, 3, tc);
  y = ti = tinv = tc = NULL;
done:
  tensor_free(y);
  tensor_free(ti);
  tensor_free(tinv);
  tensor_free(tc);
  free(order);
  free(tmp);
  free(group);
  free(first);
  free(count);
  free(rank_of);
  return st ? oplib_wrap(ctx->node, st) : NULL;
}

/* -------------------------------------------------------- ReverseSequence ---- */

static kiln_status lower_reverse_sequence(op_lower_ctx *ctx) {
  hlo_instr *x, *lens;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &lens));
  hlo_computation *c = ctx->comp;
  int r = x->shape.rank;
  if (r < 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 2, got %d", r);
  int64_t ta = graph_node_attr_int_or(ctx->node, "time_axis", 0);
  int64_t ba = graph_node_attr_int_or(ctx->node, "batch_axis", 1);
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "time_axis and batch_axis must be 0 and 1 in some order, got %lld and %lld", (long long)ta,
                    (long long)ba);
  if (!hlo_type_is_int(lens->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "sequence_lens must be an integer tensor, got %s",
                    hlo_type_name(lens->shape.type));
  int64_t B = x->shape.dims[ba];
  if (lens->shape.rank != 1 || lens->shape.dims[0] != B)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "sequence_lens must have shape [%lld] (the batch size), got rank %d", (long long)B,
                    lens->shape.rank);
  int64_t d2[2] = {x->shape.dims[0], x->shape.dims[1]};
  hlo_shape s2 = shape_make(HLO_S64, 2, d2);
  hlo_instr *len2, *t, *b, *one, *lt, *rev, *src;
  L(oplib_convert(c, lens, HLO_S64, &lens));
  int64_t bdim = ba;
  L(hlo_build_broadcast(c, lens, 2, d2, &bdim, &len2));
  L(hlo_build_iota(c, &s2, ta, &t));
  L(hlo_build_iota(c, &s2, ba, &b));
  L(hlo_build_compare(c, HLO_DIR_LT, t, len2, &lt));
  L(oplib_full(c, HLO_S64, 1, 2, d2, &one));
  L(hlo_build_binary(c, HLO_OP_SUBTRACT, len2, one, &rev));
  L(hlo_build_binary(c, HLO_OP_SUBTRACT, rev, t, &rev));
  L(hlo_build_select(c, lt, rev, t, &src));
  /* coordinates [d0, d1, 2]: (dim-0 coordinate, dim-1 coordinate) */
  int64_t d3[3] = {d2[0], d2[1], 1};
  hlo_instr *coord[2];
  L(hlo_build_reshape(c, ta == 0 ? src : b, 3, d3, &coord[0]));
  L(hlo_build_reshape(c, ta == 1 ? src : b, 3, d3, &coord[1]));
  hlo_instr *idx, *y;
  L(hlo_build_concatenate(c, 2, coord, 2, &idx));
  int64_t offset[HLO_MAX_RANK], slice[HLO_MAX_RANK], both[2] = {0, 1};
  for (int i = 2; i < r; i++) offset[i - 2] = i;
  slice[0] = slice[1] = 1;
  for (int i = 2; i < r; i++) slice[i] = x->shape.dims[i];
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){r - 2, offset};
  dn.collapsed_slice_dims = (hlo_ints){2, both};
  dn.start_index_map = (hlo_ints){2, both};
  dn.index_vector_dim = 2;
  L(hlo_build_gather(c, x, idx, &dn, slice, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* ---------------------------------------------------------- TensorScatter ---- */

static kiln_status lower_tensor_scatter(op_lower_ctx *ctx) {
  hlo_instr *cache, *upd, *wi = onnx_input(ctx, 2);
  TRY(onnx_require_input(ctx, 0, &cache));
  TRY(onnx_require_input(ctx, 1, &upd));
  hlo_computation *c = ctx->comp;
  int r = cache->shape.rank;
  if (r < 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "past_cache must have rank >= 2, got %d", r);
  if (upd->shape.rank != r)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "update has rank %d, past_cache rank %d", upd->shape.rank, r);
  if (upd->shape.type != cache->shape.type)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "update is %s, past_cache %s", hlo_type_name(upd->shape.type),
                    hlo_type_name(cache->shape.type));
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", -2), r, &axis));
  if (axis == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "axis must not be the batch dimension 0");
  const char *mode = onnx_attr_string(ctx->node, "mode", "linear");
  bool circular;
  if (strcmp(mode, "linear") == 0)
    circular = false;
  else if (strcmp(mode, "circular") == 0)
    circular = true;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "mode must be \"linear\" or \"circular\", got \"%s\"", mode);
  for (int i = 0; i < r; i++) {
    if (i != axis && upd->shape.dims[i] != cache->shape.dims[i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "update dim %d is %lld but past_cache's is %lld (only the sequence axis %lld may differ)", i,
                      (long long)upd->shape.dims[i], (long long)cache->shape.dims[i], (long long)axis);
  }
  int64_t B = cache->shape.dims[0], S = upd->shape.dims[axis], M = cache->shape.dims[axis];
  if (S > M)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "update's sequence length %lld exceeds max_sequence_length %lld",
                    (long long)S, (long long)M);
  int64_t d2[2] = {B, S};
  hlo_shape s2 = shape_make(HLO_S64, 2, d2);
  hlo_instr *bi, *si, *pos;
  L(hlo_build_iota(c, &s2, 0, &bi));
  L(hlo_build_iota(c, &s2, 1, &si));
  pos = si;
  if (wi) {
    if (!hlo_type_is_int(wi->shape.type) || wi->shape.rank != 1 || wi->shape.dims[0] != B)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "write_indices must be an integer tensor of shape [%lld]",
                      (long long)B);
    hlo_instr *w2;
    int64_t zero_dim = 0;
    L(oplib_convert(c, wi, HLO_S64, &wi));
    L(hlo_build_broadcast(c, wi, 2, d2, &zero_dim, &w2));
    L(hlo_build_binary(c, HLO_OP_ADD, w2, si, &pos));
  }
  if (circular && M > 0) {
    hlo_instr *m;
    L(oplib_full(c, HLO_S64, (double)M, 2, d2, &m));
    L(hlo_build_binary(c, HLO_OP_REMAINDER, pos, m, &pos));
    L(hlo_build_binary(c, HLO_OP_ADD, pos, m, &pos));
    L(hlo_build_binary(c, HLO_OP_REMAINDER, pos, m, &pos));
  }
  int64_t d3[3] = {B, S, 1};
  hlo_instr *parts[2], *idx, *y;
  L(hlo_build_reshape(c, bi, 3, d3, &parts[0]));
  L(hlo_build_reshape(c, pos, 3, d3, &parts[1]));
  L(hlo_build_concatenate(c, 2, parts, 2, &idx));
  int64_t window[HLO_MAX_RANK], ins[2] = {0, axis};
  int nw = 0;
  for (int i = 1; i < r; i++)
    if (i != axis) window[nw++] = i;
  hlo_scatter_dnums dn = {0};
  dn.update_window_dims = (hlo_ints){nw, window};
  dn.inserted_window_dims = (hlo_ints){2, ins};
  dn.scatter_dims_to_operand_dims = (hlo_ints){2, ins};
  dn.index_vector_dim = 2;
  hlo_computation *f;
  L(oplib_replace_computation(c->module, cache->shape.type, &f));
  L(hlo_build_scatter(c, 1, &cache, idx, &upd, &dn, f, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* ---------------------------------------------------------------- BitCast ---- */

static kiln_status lower_bitcast(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  graph_dtype from = onnx_input_dtype(ctx, 0), to;
  TRY(onnx_attr_dtype(ctx->node, "to", &to));
  if (from == GRAPH_DT_INVALID) from = graph_dtype_from_hlo(x->shape.type);
  hlo_type ht;
  if (!graph_dtype_to_hlo(to, &ht))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "bitcast to %s is not supported", graph_dtype_name(to));
  if (graph_dtype_size(from) != graph_dtype_size(to))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s (%zu bytes) and %s (%zu bytes) differ in width",
                    graph_dtype_name(from), graph_dtype_size(from), graph_dtype_name(to), graph_dtype_size(to));
  if (ht == x->shape.type) {
    y = x;
  } else if (ht == HLO_PRED || x->shape.type == HLO_PRED) {
    /* A bool's byte is 0 or 1, which convert reproduces. */
    L(hlo_build_convert(ctx->comp, x, ht, &y));
  } else {
    L(hlo_build_bitcast_convert(ctx->comp, x, ht, &y));
  }
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

static const op_def onnx_select_defs[] = {
    {"onnx.BitCast", 0, 0, lower_bitcast, NULL},
    {"onnx.Compress", OP_DYNAMIC_SHAPE, 0, NULL, host_compress},
    {"onnx.ReverseSequence", 0, 0, lower_reverse_sequence, NULL},
    {"onnx.TensorScatter", 0, 0, lower_tensor_scatter, NULL},
    {"onnx.Unique", OP_DYNAMIC_SHAPE, 0, NULL, host_unique},
};

const op_table onnx_select_ops = {"onnx.select", (int)(sizeof onnx_select_defs / sizeof onnx_select_defs[0]),
                                  onnx_select_defs};
