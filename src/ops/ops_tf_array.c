/* TensorFlow array ops: constants and identities, shape operations (Reshape, Squeeze,
 * ExpandDims, Transpose, the Shape family), joining and splitting (ConcatV2, Pack,
 * Unpack, Split, SplitV), slicing (Slice, StridedSlice with every mask), Tile, the Pad
 * family, Fill/ZerosLike/OnesLike, Range/LinSpace, Reverse, BroadcastTo/BroadcastArgs
 * and the block rearrangements (DepthToSpace, SpaceToDepth, SpaceToBatchND,
 * BatchToSpaceND).
 *
 * Inputs that decide shapes (Reshape's shape, Slice's begin/size, …) are
 * compile-time values (op_def.const_inputs), as in tf2xla; ops whose result is fully
 * known from shapes alone (Shape, Size, Rank, Range, BroadcastArgs) lower to constants.
 * A few ops also have host kernels so that the executor can run them on values HLO
 * cannot hold (Const and Identity of strings or resources) or without compiling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

static kiln_status get1(op_lower_ctx *ctx, int n_inputs, hlo_instr **x) {
  TRY(tf_check_inputs(ctx, n_inputs, n_inputs));
  return tf_input(ctx, 0, x);
}

/* --------------------------------------------------------- const / identity ---- */

static kiln_status lower_Const(op_lower_ctx *ctx) {
  const graph_tensor *t;
  hlo_instr *r;
  TRY(graph_node_get_tensor(ctx->node, "value", &t));
  T(oplib_const_tensor(ctx->comp, t, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status host_Const(op_host_ctx *ctx) {
  const graph_tensor *t;
  TRY(graph_node_get_tensor(ctx->node, "value", &t));
  if (ctx->n_outputs > 0) ctx->outputs[0] = tensor_ref((graph_tensor *)t);
  return NULL;
}

/* Identity, IdentityN and friends: outputs are the inputs. */
static kiln_status lower_Identity(op_lower_ctx *ctx) {
  if (ctx->n_inputs < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects at least 1 input");
  for (int i = 0; i < ctx->n_outputs && i < ctx->n_inputs; i++) {
    hlo_instr *x;
    TRY(tf_input(ctx, i, &x));
    tf_set_output(ctx, i, x);
  }
  return NULL;
}

static kiln_status host_Identity(op_host_ctx *ctx) {
  if (ctx->n_inputs < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "expects at least 1 input");
  for (int i = 0; i < ctx->n_outputs && i < ctx->n_inputs; i++) {
    if (!ctx->inputs[i]) return op_error(ctx->node, KILN_INTERNAL, "input %d was not given", i);
    ctx->outputs[i] = tensor_ref(ctx->inputs[i]);
  }
  return NULL;
}

static kiln_status lower_NoOp(op_lower_ctx *ctx) { return NULL; }
static kiln_status host_NoOp(op_host_ctx *ctx) { return NULL; }

/* ------------------------------------------------------------------ shapes ---- */

static kiln_status lower_Reshape(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  int64_t dims[TF_MAX_INTS];
  int n = 0;
  TRY(tf_const_ints(ctx, 1, "shape", dims, TF_MAX_INTS, &n));
  if (n > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d exceeds %d", n, HLO_MAX_RANK);
  int unknown = -1;
  int64_t known = 1, total = shape_elements(&x->shape);
  for (int i = 0; i < n; i++) {
    if (dims[i] == -1) {
      if (unknown >= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape has more than one -1");
      unknown = i;
    } else if (dims[i] < 0) {
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape entry %d is %lld", i, (long long)dims[i]);
    }
  }
  int64_t tmp[HLO_MAX_RANK];
  int nk = 0;
  for (int i = 0; i < n; i++)
    if (i != unknown) tmp[nk++] = dims[i];
  T(oplib_checked_elements(nk, tmp, &known));
  if (unknown >= 0) {
    if (known == 0 || total % known != 0) {
      tf_shape_buf b;
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot reshape %s: %lld elements are not a multiple of %lld",
                      tf_shape_text(&x->shape, &b), (long long)total, (long long)known);
    }
    dims[unknown] = total / known;
  } else if (known != total) {
    tf_shape_buf b;
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot reshape %s (%lld elements) into %lld elements",
                    tf_shape_text(&x->shape, &b), (long long)total, (long long)known);
  }
  T(oplib_reshape(ctx->comp, x, n, dims, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Squeeze(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(get1(ctx, 1, &x));
  int64_t axes[TF_MAX_INTS];
  int n = 0;
  bool present = false, drop[HLO_MAX_RANK] = {false};
  int rank = x->shape.rank;
  TRY(tf_attr_ints(ctx->node, "squeeze_dims", axes, TF_MAX_INTS, &n, &present));
  if (!present) TRY(tf_attr_ints(ctx->node, "axis", axes, TF_MAX_INTS, &n, &present));
  if (n == 0) {
    for (int i = 0; i < rank; i++) drop[i] = x->shape.dims[i] == 1;
  } else {
    T(oplib_normalize_axes(n, axes, rank, false));
    for (int i = 0; i < n; i++) {
      if (x->shape.dims[axes[i]] != 1)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot squeeze dim %lld of size %lld", (long long)axes[i],
                        (long long)x->shape.dims[axes[i]]);
      drop[axes[i]] = true;
    }
  }
  int64_t dims[HLO_MAX_RANK];
  int k = 0;
  for (int i = 0; i < rank; i++)
    if (!drop[i]) dims[k++] = x->shape.dims[i];
  T(oplib_reshape(ctx->comp, x, k, dims, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_ExpandDims(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  int64_t axis;
  TRY(tf_const_int(ctx, 1, "axis", &axis));
  int rank = x->shape.rank;
  if (rank + 1 > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d is too large", rank + 1);
  T(oplib_normalize_axis(axis, rank + 1, &axis));
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0, k = 0; i <= rank; i++) dims[i] = i == axis ? 1 : x->shape.dims[k++];
  T(oplib_reshape(ctx->comp, x, rank + 1, dims, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Transpose(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  int64_t perm[TF_MAX_INTS];
  int n = 0, rank = x->shape.rank;
  TRY(tf_const_ints(ctx, 1, "perm", perm, TF_MAX_INTS, &n));
  if (n != rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "perm has %d entries for a rank-%d input", n, rank);
  bool seen[HLO_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0) perm[i] += rank; /* TF accepts negative entries */
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "perm is not a permutation of 0..%d", rank - 1);
    seen[perm[i]] = true;
  }
  T(oplib_transpose(ctx->comp, x, perm, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* Shape, Size and Rank read only the static shape: constants of out_type. */
static kiln_status shape_input_dims(const op_lower_ctx *ctx, int i, int *rank, const int64_t **dims) {
  if (ctx->inputs && ctx->inputs[i]) {
    *rank = ctx->inputs[i]->shape.rank;
    *dims = ctx->inputs[i]->shape.dims;
    return NULL;
  }
  const graph_tensor *t = ctx->const_inputs ? ctx->const_inputs[i] : NULL;
  if (!t) return op_error(ctx->node, KILN_INTERNAL, "input %d has neither an HLO value nor a value", i);
  *rank = t->rank;
  *dims = t->dims;
  return NULL;
}

static kiln_status lower_Shape(op_lower_ctx *ctx) {
  hlo_type t;
  TRY(tf_check_inputs(ctx, 1, -1));
  TRY(tf_attr_hlo_type(ctx->node, "out_type", HLO_S32, &t));
  for (int i = 0; i < ctx->n_inputs; i++) { /* ShapeN: one output per input */
    int rank = 0;
    const int64_t *dims = NULL;
    hlo_instr *r;
    TRY(shape_input_dims(ctx, i, &rank, &dims));
    T(oplib_const_vector(ctx->comp, t, rank, dims, &r));
    tf_set_output(ctx, i, r);
  }
  return NULL;
}

static kiln_status lower_Size(op_lower_ctx *ctx) {
  hlo_type t;
  int rank = 0;
  const int64_t *dims = NULL;
  hlo_instr *r;
  TRY(tf_check_inputs(ctx, 1, 1));
  TRY(tf_attr_hlo_type(ctx->node, "out_type", HLO_S32, &t));
  TRY(shape_input_dims(ctx, 0, &rank, &dims));
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  T(oplib_scalar(ctx->comp, t, (double)n, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Rank(op_lower_ctx *ctx) {
  int rank = 0;
  const int64_t *dims = NULL;
  hlo_instr *r;
  TRY(tf_check_inputs(ctx, 1, 1));
  TRY(shape_input_dims(ctx, 0, &rank, &dims));
  T(oplib_scalar(ctx->comp, HLO_S32, rank, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status host_out_type(const op_host_ctx *ctx, graph_dtype *t) {
  const graph_attr_value *v = graph_node_attr(ctx->node, "out_type");
  *t = v && v->kind == GRAPH_ATTR_TYPE ? v->type : GRAPH_DT_INT32;
  if (*t != GRAPH_DT_INT32 && *t != GRAPH_DT_INT64)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "out_type must be int32 or int64");
  return NULL;
}

static kiln_status host_Shape(op_host_ctx *ctx) {
  graph_dtype t;
  TRY(tf_host_check_inputs(ctx, 1, -1));
  TRY(host_out_type(ctx, &t));
  for (int i = 0; i < ctx->n_inputs && i < ctx->n_outputs; i++) {
    const graph_tensor *x = ctx->inputs[i];
    graph_tensor *r;
    int64_t n = x->rank;
    TRY(tensor_create(t, 1, &n, &r));
    for (int k = 0; k < x->rank; k++) tensor_set_s64(r, k, x->dims[k]);
    ctx->outputs[i] = r;
  }
  return NULL;
}

static kiln_status host_Size(op_host_ctx *ctx) {
  graph_dtype t;
  graph_tensor *r;
  TRY(tf_host_check_inputs(ctx, 1, 1));
  TRY(host_out_type(ctx, &t));
  TRY(tensor_create_scalar(t, &r));
  tensor_set_s64(r, 0, ctx->inputs[0]->n);
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}

static kiln_status host_Rank(op_host_ctx *ctx) {
  graph_tensor *r;
  TRY(tf_host_check_inputs(ctx, 1, 1));
  TRY(tensor_create_scalar(GRAPH_DT_INT32, &r));
  tensor_set_s64(r, 0, ctx->inputs[0]->rank);
  if (ctx->n_outputs > 0) ctx->outputs[0] = r;
  else tensor_free(r);
  return NULL;
}

/* ------------------------------------------------------- joining, splitting ---- */

static kiln_status concat_values(op_lower_ctx *ctx, int first, int n, int64_t axis) {
  hlo_instr *xs[TF_MAX_INTS * 4], *r;
  if (n < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs at least one value to concatenate");
  if (n > (int)(sizeof xs / sizeof xs[0]))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "concatenation of %d values is not supported", n);
  for (int i = 0; i < n; i++) TRY(tf_input(ctx, first + i, &xs[i]));
  T(oplib_normalize_axis(axis, xs[0]->shape.rank, &axis));
  T(oplib_concat(ctx->comp, n, xs, axis, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_ConcatV2(op_lower_ctx *ctx) {
  int64_t axis;
  TRY(tf_check_inputs(ctx, 2, -1));
  TRY(tf_const_int(ctx, ctx->n_inputs - 1, "axis", &axis));
  return concat_values(ctx, 0, ctx->n_inputs - 1, axis);
}

static kiln_status lower_Concat(op_lower_ctx *ctx) {
  int64_t axis;
  TRY(tf_check_inputs(ctx, 2, -1));
  TRY(tf_const_int(ctx, 0, "concat_dim", &axis));
  return concat_values(ctx, 1, ctx->n_inputs - 1, axis);
}

static kiln_status lower_Pack(op_lower_ctx *ctx) {
  hlo_instr *xs[TF_MAX_INTS * 4], *r;
  int n = ctx->n_inputs;
  TRY(tf_check_inputs(ctx, 1, (int)(sizeof xs / sizeof xs[0])));
  int64_t axis = graph_node_attr_int_or(ctx->node, "axis", 0);
  TRY(tf_input(ctx, 0, &xs[0]));
  const hlo_shape first = xs[0]->shape;
  int rank = first.rank;
  if (rank + 1 > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d is too large", rank + 1);
  T(oplib_normalize_axis(axis, rank + 1, &axis));
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0, k = 0; i <= rank; i++) dims[i] = i == axis ? 1 : first.dims[k++];
  for (int i = 0; i < n; i++) {
    if (i > 0) TRY(tf_input(ctx, i, &xs[i]));
    if (!shape_same_dims(&xs[i]->shape, &first) || xs[i]->shape.type != first.type) {
      tf_shape_buf a, b;
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "value %d is %s, value 0 is %s", i,
                      tf_shape_text(&xs[i]->shape, &a), tf_shape_text(&first, &b));
    }
    T(hlo_build_reshape(ctx->comp, xs[i], rank + 1, dims, &xs[i]));
  }
  T(oplib_concat(ctx->comp, n, xs, axis, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Unpack(op_lower_ctx *ctx) {
  hlo_instr *x;
  TRY(get1(ctx, 1, &x));
  int64_t axis = graph_node_attr_int_or(ctx->node, "axis", 0);
  int rank = x->shape.rank;
  T(oplib_normalize_axis(axis, rank, &axis));
  int64_t num = graph_node_attr_int_or(ctx->node, "num", x->shape.dims[axis]);
  if (num != x->shape.dims[axis])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "num is %lld but dim %lld has size %lld", (long long)num,
                    (long long)axis, (long long)x->shape.dims[axis]);
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0, k = 0; i < rank; i++)
    if (i != axis) dims[k++] = x->shape.dims[i];
  for (int64_t i = 0; i < num && i < ctx->n_outputs; i++) {
    hlo_instr *s, *r;
    T(oplib_slice_axis(ctx->comp, x, (int)axis, i, i + 1, &s));
    T(hlo_build_reshape(ctx->comp, s, rank - 1, dims, &r));
    tf_set_output(ctx, (int)i, r);
  }
  return NULL;
}

/* Pieces of the given sizes along axis. */
static kiln_status split_pieces(op_lower_ctx *ctx, hlo_instr *x, int64_t axis, int n, const int64_t *sizes) {
  int64_t start = 0;
  for (int i = 0; i < n; i++) {
    hlo_instr *r;
    T(oplib_slice_axis(ctx->comp, x, (int)axis, start, start + sizes[i], &r));
    tf_set_output(ctx, i, r);
    start += sizes[i];
  }
  return NULL;
}

static kiln_status lower_Split(op_lower_ctx *ctx) {
  hlo_instr *x;
  int64_t axis, sizes[TF_MAX_INTS * 4];
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_const_int(ctx, 0, "split_dim", &axis));
  TRY(tf_input(ctx, 1, &x));
  T(oplib_normalize_axis(axis, x->shape.rank, &axis));
  int64_t n = graph_node_attr_int_or(ctx->node, "num_split", ctx->n_outputs);
  if (n < 1 || n > (int64_t)(sizeof sizes / sizeof sizes[0]))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "num_split %lld is out of range", (long long)n);
  int64_t d = x->shape.dims[axis];
  if (d % n != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dim %lld of size %lld does not split into %lld pieces",
                    (long long)axis, (long long)d, (long long)n);
  for (int64_t i = 0; i < n; i++) sizes[i] = d / n;
  return split_pieces(ctx, x, axis, (int)n, sizes);
}

static kiln_status lower_SplitV(op_lower_ctx *ctx) {
  hlo_instr *x;
  int64_t axis, sizes[TF_MAX_INTS * 4];
  int n = 0;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 1, "size_splits", sizes, (int)(sizeof sizes / sizeof sizes[0]), &n));
  TRY(tf_const_int(ctx, 2, "split_dim", &axis));
  T(oplib_normalize_axis(axis, x->shape.rank, &axis));
  int64_t d = x->shape.dims[axis], known = 0;
  int unknown = -1;
  for (int i = 0; i < n; i++) {
    if (sizes[i] == -1) {
      if (unknown >= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size_splits has more than one -1");
      unknown = i;
    } else if (sizes[i] < 0) {
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size_splits entry %d is negative", i);
    } else {
      known += sizes[i];
    }
  }
  if (unknown >= 0) {
    if (known > d) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size_splits exceed the dim size %lld", (long long)d);
    sizes[unknown] = d - known;
  } else if (known != d) {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size_splits add up to %lld, dim %lld has size %lld",
                    (long long)known, (long long)axis, (long long)d);
  }
  return split_pieces(ctx, x, axis, n, sizes);
}

/* ----------------------------------------------------------------- slicing ---- */

/* Slice with a begin known only at run time (a loop counter's tile): a dynamic-slice of
 * the constant size, tf2xla's lowering. Its starts are clamped into range where TF's
 * kernel would fail on an out-of-range begin (XLA's DynamicSlice semantics, which
 * TensorFlow's own compiled path has too); a size of -1 ("to the end") depends on the
 * begin, so it cannot have a static shape and is refused. */
static kiln_status lower_dynamic_slice(op_lower_ctx *ctx, hlo_instr *x, const int64_t *size, int ns) {
  hlo_instr *begin = ctx->inputs[1], *r;
  int rank = x->shape.rank;
  if (!begin || begin->shape.rank != 1 || begin->shape.dims[0] != rank || ns != rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "begin and size need %d entries", rank);
  hlo_instr *starts[HLO_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    if (size[i] < 0 || size[i] > x->shape.dims[i])
      return op_error(ctx->node, KILN_UNIMPLEMENTED,
                      "size %lld of dim %d (size %lld) with a begin known only at run time",
                      (long long)size[i], i, (long long)x->shape.dims[i]);
    int64_t lo = i, hi = i + 1;
    hlo_instr *one;
    T(hlo_build_slice(ctx->comp, begin, &lo, &hi, NULL, &one));
    T(hlo_build_reshape(ctx->comp, one, 0, NULL, &starts[i]));
  }
  T(hlo_build_dynamic_slice(ctx->comp, x, starts, size, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Slice(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  int64_t begin[TF_MAX_INTS], size[TF_MAX_INTS], limit[HLO_MAX_RANK];
  int nb = 0, ns = 0;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 2, "size", size, TF_MAX_INTS, &ns));
  if (!ctx->const_inputs[1]) return lower_dynamic_slice(ctx, x, size, ns);
  TRY(tf_const_ints(ctx, 1, "begin", begin, TF_MAX_INTS, &nb));
  int rank = x->shape.rank;
  if (nb != rank || ns != rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "begin and size need %d entries (have %d, %d)", rank, nb, ns);
  for (int i = 0; i < rank; i++) {
    int64_t d = x->shape.dims[i];
    if (size[i] == -1) size[i] = d - begin[i];
    if (begin[i] < 0 || begin[i] > d || size[i] < 0 || size[i] > d - begin[i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "slice [%lld, +%lld) of dim %d (size %lld) is out of range",
                      (long long)begin[i], (long long)size[i], i, (long long)d);
    limit[i] = begin[i] + size[i];
  }
  T(hlo_build_slice(ctx->comp, x, begin, limit, NULL, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* StridedSlice, following TF's ValidateStridedSliceOp: the sparse spec (begin/end/
 * strides with ellipsis, new-axis and shrink masks) is expanded to one range per input
 * dim, each canonicalised (negative indices, masks, clamping); negative strides
 * become a reverse plus a positive-stride slice; new axes and shrunk dims are a final
 * reshape. */
#define SS_NEW_AXIS (-1)
#define SS_SHRINK (-2)

static kiln_status lower_StridedSlice(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_instr *x, *r;
  int64_t begin[TF_MAX_INTS], end[TF_MAX_INTS], strides[TF_MAX_INTS];
  int nb = 0, ne = 0, ns = 0;
  TRY(tf_check_inputs(ctx, 4, 4));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 1, "begin", begin, TF_MAX_INTS - 1, &nb));
  TRY(tf_const_ints(ctx, 2, "end", end, TF_MAX_INTS - 1, &ne));
  TRY(tf_const_ints(ctx, 3, "strides", strides, TF_MAX_INTS - 1, &ns));
  if (nb != ne || nb != ns)
    return op_error(node, KILN_INVALID_ARGUMENT, "begin, end and strides have %d, %d and %d entries", nb, ne, ns);
  uint64_t begin_mask = (uint64_t)graph_node_attr_int_or(node, "begin_mask", 0);
  uint64_t end_mask = (uint64_t)graph_node_attr_int_or(node, "end_mask", 0);
  uint64_t ellipsis_mask = (uint64_t)graph_node_attr_int_or(node, "ellipsis_mask", 0);
  uint64_t new_axis_mask = (uint64_t)graph_node_attr_int_or(node, "new_axis_mask", 0);
  uint64_t shrink_mask = (uint64_t)graph_node_attr_int_or(node, "shrink_axis_mask", 0);
  int rank = x->shape.rank, n_sparse = nb;
  bool ellipsis_seen = false;
  int add_after_ellipsis = 0;
  for (int i = 0; i < nb; i++) {
    if (ellipsis_seen && (new_axis_mask >> i & 1)) add_after_ellipsis++;
    if (ellipsis_mask >> i & 1) {
      if (ellipsis_seen) return op_error(node, KILN_INVALID_ARGUMENT, "multiple ellipses in the slice spec");
      ellipsis_seen = true;
    }
  }
  if (!ellipsis_seen) { /* an implicit ellipsis at the end */
    ellipsis_mask |= (uint64_t)1 << nb;
    begin[nb] = end[nb] = 0;
    strides[nb] = 1;
    n_sparse++;
  }
  /* Dense spec: one entry per input dim. */
  int64_t db[HLO_MAX_RANK], de[HLO_MAX_RANK], ds[HLO_MAX_RANK];
  bool dbm[HLO_MAX_RANK], dem[HLO_MAX_RANK], dshrink[HLO_MAX_RANK];
  int gather[TF_MAX_INTS + HLO_MAX_RANK], n_gather = 0, full = 0;
  for (int i = 0; i < n_sparse; i++) {
    if (ellipsis_mask >> i & 1) {
      int next = rank - (n_sparse - i) + 1 + add_after_ellipsis;
      if (next > rank) next = rank;
      for (; full < next; full++) {
        db[full] = de[full] = 0;
        ds[full] = 1;
        dbm[full] = dem[full] = true;
        dshrink[full] = false;
        gather[n_gather++] = full;
      }
    } else if (new_axis_mask >> i & 1) {
      gather[n_gather++] = SS_NEW_AXIS;
    } else {
      if (full >= rank)
        return op_error(node, KILN_INVALID_ARGUMENT, "slice spec indexes more dims than the input's %d", rank);
      db[full] = begin[i];
      de[full] = end[i];
      ds[full] = strides[i];
      dbm[full] = begin_mask >> i & 1;
      dem[full] = end_mask >> i & 1;
      dshrink[full] = shrink_mask >> i & 1;
      gather[n_gather++] = dshrink[full] ? SS_SHRINK : full;
      full++;
    }
  }
  /* Canonical ranges. */
  int64_t start[HLO_MAX_RANK], limit[HLO_MAX_RANK], step[HLO_MAX_RANK], size[HLO_MAX_RANK], rev[HLO_MAX_RANK];
  int n_rev = 0;
  for (int i = 0; i < rank; i++) {
    int64_t dim = x->shape.dims[i], b = db[i], e = de[i], s = ds[i];
    if (s == 0) return op_error(node, KILN_INVALID_ARGUMENT, "stride of dim %d is 0", i);
    if (dshrink[i]) {
      if (s <= 0) return op_error(node, KILN_INVALID_ARGUMENT, "only stride 1 allowed on non-range indexing");
      int64_t fwd = b < 0 ? dim + b : b;
      if (fwd < 0 || fwd >= dim)
        return op_error(node, KILN_INVALID_ARGUMENT, "slice index %lld of dimension %d out of bounds", (long long)b, i);
      b = fwd;
      e = fwd + 1;
    } else {
      int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
      if (dbm[i]) {
        b = s > 0 ? lo : hi;
      } else {
        b = b < 0 ? dim + b : b;
        b = b < lo ? lo : b > hi ? hi : b;
      }
      if (dem[i]) {
        e = s > 0 ? hi : lo;
      } else {
        e = e < 0 ? dim + e : e;
        e = e < lo ? lo : e > hi ? hi : e;
      }
    }
    int64_t len = e - b;
    if (len == 0 || ((len < 0) != (s < 0)))
      size[i] = 0;
    else
      size[i] = len / s + (len % s != 0 ? 1 : 0);
    if (s > 0) {
      start[i] = size[i] ? b : 0;
      step[i] = s;
    } else {
      rev[n_rev++] = i;
      start[i] = size[i] ? dim - 1 - b : 0;
      step[i] = -s;
    }
    limit[i] = size[i] ? start[i] + (size[i] - 1) * step[i] + 1 : start[i];
  }
  if (n_rev) T(hlo_build_reverse(ctx->comp, x, n_rev, rev, &x));
  T(hlo_build_slice(ctx->comp, x, start, limit, step, &r));
  int64_t out_dims[HLO_MAX_RANK];
  int out_rank = 0;
  for (int i = 0; i < n_gather; i++) {
    if (gather[i] == SS_SHRINK) continue;
    if (out_rank >= HLO_MAX_RANK) return op_error(node, KILN_UNIMPLEMENTED, "result rank exceeds %d", HLO_MAX_RANK);
    out_dims[out_rank++] = gather[i] == SS_NEW_AXIS ? 1 : size[gather[i]];
  }
  T(oplib_reshape(ctx->comp, r, out_rank, out_dims, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------ tile and pad ---- */

static kiln_status lower_Tile(op_lower_ctx *ctx) {
  hlo_instr *x;
  int64_t mult[TF_MAX_INTS];
  int n = 0;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 1, "multiples", mult, TF_MAX_INTS, &n));
  int rank = x->shape.rank;
  if (n != rank) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "multiples has %d entries for rank %d", n, rank);
  for (int i = 0; i < rank; i++)
    if (mult[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "multiples entry %d is negative", i);
  if (rank >= HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d is too large", rank);
  /* One dim at a time: broadcast a new size-m dim in front of dim i, merge the two. */
  for (int i = 0; i < rank; i++) {
    if (mult[i] == 1) continue;
    int64_t bd[HLO_MAX_RANK], map[HLO_MAX_RANK], merged[HLO_MAX_RANK];
    for (int k = 0, j = 0; k <= rank; k++) {
      if (k == i) {
        bd[k] = mult[i];
      } else {
        map[j] = k;
        bd[k] = x->shape.dims[j++];
      }
    }
    hlo_instr *b;
    T(hlo_build_broadcast(ctx->comp, x, rank + 1, bd, map, &b));
    int64_t total;
    for (int k = 0; k < rank; k++) merged[k] = x->shape.dims[k];
    T(oplib_checked_elements(2, (int64_t[]){mult[i], x->shape.dims[i]}, &total));
    merged[i] = total;
    T(hlo_build_reshape(ctx->comp, b, rank, merged, &x));
  }
  tf_set_output(ctx, 0, x);
  return NULL;
}

static kiln_status read_paddings(op_lower_ctx *ctx, int input, int rank, int64_t *lo, int64_t *hi) {
  int64_t p[2 * HLO_MAX_RANK];
  int n = 0;
  const graph_tensor *t;
  TRY(tf_const_input(ctx, input, "paddings", &t));
  if (!(t->rank == 2 && t->dims[0] == rank && t->dims[1] == 2) && !(rank == 0 && t->n == 0))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "paddings must have shape [%d, 2]", rank);
  TRY(tf_const_ints(ctx, input, "paddings", p, 2 * HLO_MAX_RANK, &n));
  for (int i = 0; i < rank; i++) {
    lo[i] = p[2 * i];
    hi[i] = p[2 * i + 1];
    if (lo[i] < 0 || hi[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "paddings must not be negative");
  }
  return NULL;
}

/* Pad (zeros) and PadV2 (constant_values). */
static kiln_status lower_Pad(op_lower_ctx *ctx) {
  hlo_instr *x, *v, *r;
  TRY(tf_check_inputs(ctx, 2, 3));
  TRY(tf_input(ctx, 0, &x));
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  TRY(read_paddings(ctx, 1, x->shape.rank, lo, hi));
  if (ctx->n_inputs == 3) {
    TRY(tf_input(ctx, 2, &v));
    if (shape_elements(&v->shape) != 1)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "constant_values must be a scalar");
    T(oplib_reshape(ctx->comp, v, 0, (int64_t[1]){0}, &v));
    T(oplib_convert(ctx->comp, v, x->shape.type, &v));
  } else {
    T(oplib_scalar(ctx->comp, x->shape.type, 0, &v));
  }
  T(hlo_build_pad(ctx->comp, x, v, lo, hi, (int64_t[HLO_MAX_RANK]){0}, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* MirrorPad: each padded dim is a gather of source positions, reflected without
 * (REFLECT) or with (SYMMETRIC) the edge element. */
static kiln_status lower_MirrorPad(op_lower_ctx *ctx) {
  hlo_instr *x;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  int rank = x->shape.rank;
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  TRY(read_paddings(ctx, 1, rank, lo, hi));
  const char *mode = tf_attr_string(ctx->node, "mode", "REFLECT");
  bool symmetric;
  if (strcmp(mode, "REFLECT") == 0)
    symmetric = false;
  else if (strcmp(mode, "SYMMETRIC") == 0)
    symmetric = true;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "mode \"%s\" is not REFLECT or SYMMETRIC", mode);
  for (int i = 0; i < rank; i++) {
    if (!lo[i] && !hi[i]) continue;
    int64_t d = x->shape.dims[i], limit = symmetric ? d : d - 1;
    if (lo[i] > limit || hi[i] > limit)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "paddings %lld/%lld of dim %d exceed %lld for size %lld",
                      (long long)lo[i], (long long)hi[i], i, (long long)limit, (long long)d);
    int64_t n = lo[i] + d + hi[i];
    int64_t *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory");
    for (int64_t o = 0; o < n; o++) {
      int64_t p = o - lo[i];
      if (p < 0)
        p = symmetric ? -p - 1 : -p;
      else if (p >= d)
        p = symmetric ? 2 * d - 1 - p : 2 * (d - 1) - p;
      idx[o] = p;
    }
    kiln_status s = oplib_take_constant(ctx->comp, x, i, n, idx, &x);
    free(idx);
    T(s);
  }
  tf_set_output(ctx, 0, x);
  return NULL;
}

/* ---------------------------------------------------------- fill and range ---- */

static kiln_status lower_Fill(op_lower_ctx *ctx) {
  hlo_instr *v, *r;
  int64_t dims[TF_MAX_INTS], total;
  int n = 0;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_const_ints(ctx, 0, "dims", dims, TF_MAX_INTS, &n));
  TRY(tf_input(ctx, 1, &v));
  if (n > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank %d is too large", n);
  T(oplib_checked_elements(n, dims, &total));
  if (shape_elements(&v->shape) != 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "value must be a scalar");
  T(oplib_reshape(ctx->comp, v, 0, (int64_t[1]){0}, &v));
  T(hlo_build_broadcast(ctx->comp, v, n, dims, NULL, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_fill_like(op_lower_ctx *ctx, double v) {
  hlo_instr *x, *r;
  TRY(get1(ctx, 1, &x));
  T(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, v, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_ZerosLike(op_lower_ctx *ctx) { return lower_fill_like(ctx, 0); }
static kiln_status lower_OnesLike(op_lower_ctx *ctx) { return lower_fill_like(ctx, 1); }

/* Range(start, limit, delta) as a constant, accumulated in the output type the way
 * TF's kernel does (val += delta), so float ranges round exactly as TF's. */
static kiln_status lower_Range(op_lower_ctx *ctx) {
  const graph_tensor *ts, *tl, *td;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_const_input(ctx, 0, "start", &ts));
  TRY(tf_const_input(ctx, 1, "limit", &tl));
  TRY(tf_const_input(ctx, 2, "delta", &td));
  hlo_type t;
  if (!graph_dtype_to_hlo(ts->dtype, &t) || t == HLO_PRED)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start has unsupported type %s", graph_dtype_name(ts->dtype));
  TRY(tf_attr_hlo_type(ctx->node, "Tidx", t, &t));
  if (ts->n != 1 || tl->n != 1 || td->n != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start, limit and delta must be scalars");
  int64_t n;
  hlo_shape shape;
  hlo_literal *lit;
  if (hlo_type_is_int(t)) {
    int64_t s = tensor_get_s64(ts, 0), l = tensor_get_s64(tl, 0), d = tensor_get_s64(td, 0);
    if (d == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "delta must not be 0");
    if ((d > 0 && s > l) || (d < 0 && s < l))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start %lld and limit %lld disagree with delta %lld",
                      (long long)s, (long long)l, (long long)d);
    uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
    uint64_t ad = d > 0 ? (uint64_t)d : (uint64_t)0 - (uint64_t)d;
    n = (int64_t)(span / ad + (span % ad != 0));
    shape = shape_make(t, 1, &n);
    T(literal_create(&shape, &lit));
    int64_t v = s;
    for (int64_t i = 0; i < n; i++, v += d) literal_set_s64(lit, i, v);
  } else {
    double s = tensor_get_f64(ts, 0), l = tensor_get_f64(tl, 0), d = tensor_get_f64(td, 0);
    if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start, limit and delta must be finite, delta nonzero");
    if ((d > 0 && s > l) || (d < 0 && s < l))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start %g and limit %g disagree with delta %g", s, l, d);
    double count = ceil(fabs((l - s) / d));
    if (count > 1e12) return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "range of %g elements", count);
    n = (int64_t)count;
    shape = shape_make(t, 1, &n);
    T(literal_create(&shape, &lit));
    double v = s;
    for (int64_t i = 0; i < n; i++) {
      literal_set_f64(lit, i, v);
      v = literal_get_f64(lit, i) + d;
      if (t == HLO_F32) v = (float)v;
    }
  }
  hlo_instr *r;
  T(hlo_build_constant(ctx->comp, lit, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* LinSpace: start + i * step for i < num - 1, the last value exactly stop (TF). */
static kiln_status lower_LinSpace(op_lower_ctx *ctx) {
  const graph_tensor *ts, *te;
  int64_t num;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_const_input(ctx, 0, "start", &ts));
  TRY(tf_const_input(ctx, 1, "stop", &te));
  TRY(tf_const_int(ctx, 2, "num", &num));
  hlo_type t;
  if (!graph_dtype_to_hlo(ts->dtype, &t) || !hlo_type_is_float(t) || ts->n != 1 || te->n != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start and stop must be floating-point scalars");
  if (num <= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "num must be positive, is %lld", (long long)num);
  if (num > ((int64_t)1 << 40)) return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "num %lld is too large", (long long)num);
  double s = tensor_get_f64(ts, 0), e = tensor_get_f64(te, 0);
  hlo_shape shape = shape_make(t, 1, &num);
  hlo_literal *lit;
  T(literal_create(&shape, &lit));
  bool f32 = t == HLO_F32;
  if (num == 1) {
    literal_set_f64(lit, 0, s);
  } else if (f32) {
    float fs = (float)s, step = ((float)e - fs) / (float)(num - 1);
    for (int64_t i = 0; i < num - 1; i++) literal_set_f64(lit, i, fs + step * (float)i);
    literal_set_f64(lit, num - 1, e);
  } else {
    double step = (e - s) / (double)(num - 1);
    for (int64_t i = 0; i < num - 1; i++) literal_set_f64(lit, i, s + step * (double)i);
    literal_set_f64(lit, num - 1, e);
  }
  hlo_instr *r;
  T(hlo_build_constant(ctx->comp, lit, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ---------------------------------------------------- reverse, broadcasting ---- */

static kiln_status lower_ReverseV2(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  int64_t axes[TF_MAX_INTS];
  int n = 0;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 1, "axis", axes, TF_MAX_INTS, &n));
  T(oplib_normalize_axes(n, axes, x->shape.rank, true));
  if (n == 0) {
    tf_set_output(ctx, 0, x);
    return NULL;
  }
  T(hlo_build_reverse(ctx->comp, x, n, axes, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* Reverse (v1): a bool per dim. */
static kiln_status lower_Reverse(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  const graph_tensor *t;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_input(ctx, 1, "dims", &t));
  if (t->dtype != GRAPH_DT_BOOL || t->n != x->shape.rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dims must be %d bools", x->shape.rank);
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  for (int i = 0; i < x->shape.rank; i++)
    if (tensor_get_s64(t, i)) axes[n++] = i;
  r = x;
  if (n) T(hlo_build_reverse(ctx->comp, x, n, axes, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_BroadcastTo(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  int64_t dims[TF_MAX_INTS];
  int n = 0;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_ints(ctx, 1, "shape", dims, TF_MAX_INTS, &n));
  if (n > HLO_MAX_RANK || n < x->shape.rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "target rank %d is below the input's %d or too large", n,
                    x->shape.rank);
  int64_t total;
  T(oplib_checked_elements(n, dims, &total));
  T(oplib_broadcast_to(ctx->comp, x, n, dims, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_BroadcastArgs(op_lower_ctx *ctx) {
  int64_t a[TF_MAX_INTS], b[TF_MAX_INTS], d[HLO_MAX_RANK];
  int na = 0, nb = 0, n = 0;
  hlo_instr *r;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_const_ints(ctx, 0, "s0", a, TF_MAX_INTS, &na));
  TRY(tf_const_ints(ctx, 1, "s1", b, TF_MAX_INTS, &nb));
  if (na > HLO_MAX_RANK || nb > HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "rank too large");
  T(oplib_broadcast_shape(na, a, nb, b, &n, d));
  hlo_type t;
  if (!graph_dtype_to_hlo(ctx->const_inputs[0]->dtype, &t)) t = HLO_S32;
  T(oplib_const_vector(ctx->comp, t, n, d, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_InvertPermutation(op_lower_ctx *ctx) {
  int64_t p[TF_MAX_INTS * 4], inv[TF_MAX_INTS * 4];
  int n = 0;
  hlo_instr *r;
  TRY(tf_check_inputs(ctx, 1, 1));
  TRY(tf_const_ints(ctx, 0, "x", p, TF_MAX_INTS * 4, &n));
  for (int i = 0; i < n; i++) inv[i] = -1;
  for (int i = 0; i < n; i++) {
    if (p[i] < 0 || p[i] >= n || inv[p[i]] >= 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is not a permutation of 0..%d", n - 1);
    inv[p[i]] = i;
  }
  hlo_type t;
  if (!graph_dtype_to_hlo(ctx->const_inputs[0]->dtype, &t)) t = HLO_S32;
  T(oplib_const_vector(ctx->comp, t, n, inv, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------ block rearrangement ---- */

static kiln_status reshape_transpose_reshape(op_lower_ctx *ctx, hlo_instr *x, int r1, const int64_t *d1,
                                             const int64_t *perm, int r2, const int64_t *d2, hlo_instr **out) {
  hlo_instr *a, *b;
  T(hlo_build_reshape(ctx->comp, x, r1, d1, &a));
  T(hlo_build_transpose(ctx->comp, a, perm, &b));
  T(hlo_build_reshape(ctx->comp, b, r2, d2, out));
  return NULL;
}

static kiln_status lower_depth_space(op_lower_ctx *ctx, bool to_space) {
  hlo_instr *x, *r;
  TRY(get1(ctx, 1, &x));
  bool cf = false;
  TRY(tf_data_format(ctx->node, &cf));
  int64_t b = graph_node_attr_int_or(ctx->node, "block_size", 0);
  if (b < 2 || b > (1 << 20)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "block_size must be >= 2");
  if (x->shape.rank != 4) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be 4-D");
  int64_t n = x->shape.dims[0], c = x->shape.dims[cf ? 1 : 3], h = x->shape.dims[cf ? 2 : 1],
          w = x->shape.dims[cf ? 3 : 2];
  if (to_space) {
    if (c % (b * b)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "depth %lld is not divisible by %lld", (long long)c, (long long)(b * b));
    int64_t c2 = c / (b * b);
    if (!cf) {
      TRY(reshape_transpose_reshape(ctx, x, 6, (int64_t[]){n, h, w, b, b, c2}, (int64_t[]){0, 1, 3, 2, 4, 5}, 4,
                                    (int64_t[]){n, h * b, w * b, c2}, &r));
    } else {
      TRY(reshape_transpose_reshape(ctx, x, 6, (int64_t[]){n, b, b, c2, h, w}, (int64_t[]){0, 3, 4, 1, 5, 2}, 4,
                                    (int64_t[]){n, c2, h * b, w * b}, &r));
    }
  } else {
    if (h % b || w % b)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "spatial dims %lldx%lld are not divisible by %lld", (long long)h,
                      (long long)w, (long long)b);
    if (!cf) {
      TRY(reshape_transpose_reshape(ctx, x, 6, (int64_t[]){n, h / b, b, w / b, b, c}, (int64_t[]){0, 1, 3, 2, 4, 5}, 4,
                                    (int64_t[]){n, h / b, w / b, b * b * c}, &r));
    } else {
      TRY(reshape_transpose_reshape(ctx, x, 6, (int64_t[]){n, c, h / b, b, w / b, b}, (int64_t[]){0, 3, 5, 1, 2, 4}, 4,
                                    (int64_t[]){n, b * b * c, h / b, w / b}, &r));
    }
  }
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_DepthToSpace(op_lower_ctx *ctx) { return lower_depth_space(ctx, true); }
static kiln_status lower_SpaceToDepth(op_lower_ctx *ctx) { return lower_depth_space(ctx, false); }

/* block_shape [M] and a [M, 2] pads/crops tensor for the Nd block ops. */
static kiln_status read_blocks(op_lower_ctx *ctx, const hlo_instr *x, int64_t *block, int *m, int64_t *lo,
                               int64_t *hi, const char *what) {
  int nb = 0, np = 0;
  int64_t p[2 * HLO_MAX_RANK];
  TRY(tf_const_ints(ctx, 1, "block_shape", block, HLO_MAX_RANK, &nb));
  TRY(tf_const_ints(ctx, 2, what, p, 2 * HLO_MAX_RANK, &np));
  if (nb < 1 || np != 2 * nb || 1 + nb > x->shape.rank)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "block_shape has %d entries, %s %d, input rank %d", nb, what,
                    np, x->shape.rank);
  if (1 + 2 * nb + (x->shape.rank - 1 - nb) > HLO_MAX_RANK)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "too many block dims for rank %d", x->shape.rank);
  for (int i = 0; i < nb; i++) {
    if (block[i] < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "block_shape must be positive");
    lo[i] = p[2 * i];
    hi[i] = p[2 * i + 1];
    if (lo[i] < 0 || hi[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must not be negative", what);
  }
  *m = nb;
  return NULL;
}

static kiln_status lower_SpaceToBatchND(op_lower_ctx *ctx) {
  hlo_instr *x, *zero, *r;
  int64_t block[HLO_MAX_RANK], lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  int m = 0;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(read_blocks(ctx, x, block, &m, lo, hi, "paddings"));
  int rank = x->shape.rank, rest = rank - 1 - m;
  int64_t plo[HLO_MAX_RANK] = {0}, phi[HLO_MAX_RANK] = {0};
  for (int i = 0; i < m; i++) {
    plo[1 + i] = lo[i];
    phi[1 + i] = hi[i];
  }
  T(oplib_scalar(ctx->comp, x->shape.type, 0, &zero));
  T(hlo_build_pad(ctx->comp, x, zero, plo, phi, (int64_t[HLO_MAX_RANK]){0}, &x));
  int64_t d1[HLO_MAX_RANK], perm[HLO_MAX_RANK], d2[HLO_MAX_RANK];
  int64_t batch = x->shape.dims[0], prod = 1;
  d1[0] = batch;
  for (int i = 0; i < m; i++) {
    int64_t p = x->shape.dims[1 + i];
    if (p % block[i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "padded spatial dim %d (%lld) is not divisible by %lld", i,
                      (long long)p, (long long)block[i]);
    d1[1 + 2 * i] = p / block[i];
    d1[2 + 2 * i] = block[i];
    prod *= block[i];
  }
  for (int i = 0; i < rest; i++) d1[1 + 2 * m + i] = x->shape.dims[1 + m + i];
  int k = 0;
  for (int i = 0; i < m; i++) perm[k++] = 2 + 2 * i;
  perm[k++] = 0;
  for (int i = 0; i < m; i++) perm[k++] = 1 + 2 * i;
  for (int i = 0; i < rest; i++) perm[k++] = 1 + 2 * m + i;
  d2[0] = batch * prod;
  for (int i = 0; i < m; i++) d2[1 + i] = d1[1 + 2 * i];
  for (int i = 0; i < rest; i++) d2[1 + m + i] = d1[1 + 2 * m + i];
  TRY(reshape_transpose_reshape(ctx, x, 1 + 2 * m + rest, d1, perm, rank, d2, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_BatchToSpaceND(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  int64_t block[HLO_MAX_RANK], lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  int m = 0;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(read_blocks(ctx, x, block, &m, lo, hi, "crops"));
  int rank = x->shape.rank, rest = rank - 1 - m;
  int64_t prod = 1;
  for (int i = 0; i < m; i++) prod *= block[i];
  int64_t bb = x->shape.dims[0];
  if (bb % prod)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "batch %lld is not divisible by the block product %lld",
                    (long long)bb, (long long)prod);
  int64_t batch = bb / prod, d1[HLO_MAX_RANK], perm[HLO_MAX_RANK], d2[HLO_MAX_RANK];
  for (int i = 0; i < m; i++) d1[i] = block[i];
  d1[m] = batch;
  for (int i = 0; i < m + rest; i++) d1[m + 1 + i] = x->shape.dims[1 + i];
  int k = 0;
  perm[k++] = m;
  for (int i = 0; i < m; i++) {
    perm[k++] = m + 1 + i;
    perm[k++] = i;
  }
  for (int i = 0; i < rest; i++) perm[k++] = 2 * m + 1 + i;
  d2[0] = batch;
  for (int i = 0; i < m; i++) d2[1 + i] = x->shape.dims[1 + i] * block[i];
  for (int i = 0; i < rest; i++) d2[1 + m + i] = x->shape.dims[1 + m + i];
  TRY(reshape_transpose_reshape(ctx, x, 1 + 2 * m + rest, d1, perm, rank, d2, &r));
  int64_t start[HLO_MAX_RANK], limit[HLO_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    start[i] = 0;
    limit[i] = d2[i];
  }
  for (int i = 0; i < m; i++) {
    if (lo[i] + hi[i] > d2[1 + i])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "crops %lld/%lld exceed spatial size %lld", (long long)lo[i],
                      (long long)hi[i], (long long)d2[1 + i]);
    start[1 + i] = lo[i];
    limit[1 + i] = d2[1 + i] - hi[i];
  }
  T(hlo_build_slice(ctx->comp, r, start, limit, NULL, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------ band matrix ---- */

/* MatrixBandPart(x, num_lower, num_upper): keeps x[..., m, n] where
 * (num_lower < 0 || m - n <= num_lower) && (num_upper < 0 || n - m <= num_upper). */
static kiln_status lower_MatrixBandPart(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *rows, *cols, *diff, *keep = NULL, *zero, *r;
  int64_t lower, upper;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_int(ctx, 1, "num_lower", &lower));
  TRY(tf_const_int(ctx, 2, "num_upper", &upper));
  int rank = x->shape.rank;
  if (rank < 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 2");
  hlo_shape s = shape_make(HLO_S64, rank, x->shape.dims);
  T(hlo_build_iota(c, &s, rank - 2, &rows));
  T(hlo_build_iota(c, &s, rank - 1, &cols));
  if (lower >= 0) {
    hlo_instr *lim, *ok;
    T(hlo_build_binary(c, HLO_OP_SUBTRACT, rows, cols, &diff));
    T(oplib_full_like(c, diff, HLO_TYPE_COUNT, (double)lower, &lim));
    T(hlo_build_compare(c, HLO_DIR_LE, diff, lim, &ok));
    keep = ok;
  }
  if (upper >= 0) {
    hlo_instr *lim, *ok;
    T(hlo_build_binary(c, HLO_OP_SUBTRACT, cols, rows, &diff));
    T(oplib_full_like(c, diff, HLO_TYPE_COUNT, (double)upper, &lim));
    T(hlo_build_compare(c, HLO_DIR_LE, diff, lim, &ok));
    if (keep)
      T(hlo_build_binary(c, HLO_OP_AND, keep, ok, &keep));
    else
      keep = ok;
  }
  r = x;
  if (keep) {
    T(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &zero));
    T(hlo_build_select(c, keep, x, zero, &r));
  }
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------------ table ---- */

#define OP(NAME, FN, MASK) {"tf." NAME, 0, MASK, lower_##FN, NULL}
#define B(i) (1u << (i))

static const op_def tf_array_defs[] = {
    OP("BatchToSpaceND", BatchToSpaceND, B(1) | B(2)),
    {"tf.BroadcastArgs", 0, B(0) | B(1), lower_BroadcastArgs, NULL},
    OP("BroadcastTo", BroadcastTo, B(1)),
    {"tf.CheckNumerics", OP_ASSERT, 0, lower_Identity, host_Identity},
    OP("Concat", Concat, B(0)),
    {"tf.ConcatV2", OP_CONST_LAST_INPUT, 0, lower_ConcatV2, NULL},
    {"tf.Const", 0, 0, lower_Const, host_Const},
    OP("DepthToSpace", DepthToSpace, 0),
    {"tf.EnsureShape", 0, 0, lower_Identity, host_Identity},
    OP("ExpandDims", ExpandDims, B(1)),
    OP("Fill", Fill, B(0)),
    {"tf.Identity", 0, 0, lower_Identity, host_Identity},
    {"tf.IdentityN", 0, 0, lower_Identity, host_Identity},
    OP("InvertPermutation", InvertPermutation, B(0)),
    OP("LinSpace", LinSpace, B(0) | B(1) | B(2)),
    OP("MatrixBandPart", MatrixBandPart, B(1) | B(2)),
    OP("MirrorPad", MirrorPad, B(1)),
    {"tf.NoOp", 0, 0, lower_NoOp, host_NoOp},
    OP("OnesLike", OnesLike, 0),
    OP("Pack", Pack, 0),
    OP("Pad", Pad, B(1)),
    OP("PadV2", Pad, B(1)),
    {"tf.PlaceholderWithDefault", 0, 0, lower_Identity, host_Identity},
    {"tf.PreventGradient", 0, 0, lower_Identity, host_Identity},
    OP("Range", Range, B(0) | B(1) | B(2)),
    {"tf.Rank", OP_SHAPE_CONSUMER, 0, lower_Rank, host_Rank},
    OP("Reshape", Reshape, B(1)),
    OP("Reverse", Reverse, B(1)),
    OP("ReverseV2", ReverseV2, B(1)),
    {"tf.Shape", OP_SHAPE_CONSUMER, 0, lower_Shape, host_Shape},
    {"tf.ShapeN", OP_SHAPE_CONSUMER, 0, lower_Shape, host_Shape},
    {"tf.Size", OP_SHAPE_CONSUMER, 0, lower_Size, host_Size},
    {"tf.Slice", OP_RUNTIME_OK_INPUT1, B(1) | B(2), lower_Slice, NULL}, /* a runtime begin: dynamic-slice */
    {"tf.Snapshot", 0, 0, lower_Identity, host_Identity},
    OP("SpaceToBatchND", SpaceToBatchND, B(1) | B(2)),
    OP("SpaceToDepth", SpaceToDepth, 0),
    OP("Split", Split, B(0)),
    OP("SplitV", SplitV, B(1) | B(2)),
    OP("Squeeze", Squeeze, 0),
    {"tf.StopGradient", 0, 0, lower_Identity, host_Identity},
    OP("StridedSlice", StridedSlice, B(1) | B(2) | B(3)),
    OP("Tile", Tile, B(1)),
    OP("Transpose", Transpose, B(1)),
    OP("ConjugateTranspose", Transpose, B(1)),
    OP("Unpack", Unpack, 0),
    OP("ZerosLike", ZerosLike, 0),
};

const op_table tf_array_table = {"tf.array", (int)(sizeof tf_array_defs / sizeof tf_array_defs[0]), tf_array_defs};
