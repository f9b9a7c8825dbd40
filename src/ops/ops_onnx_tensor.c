/* ONNX shape and data-movement ops: Reshape, Transpose, Concat, Split, Slice,
 * Squeeze/Unsqueeze, Expand, Tile, Pad, Shape, Size, Identity, Constant,
 * ConstantOfShape, Range, DepthToSpace/SpaceToDepth, EyeLike, Trilu, CenterCropPad.
 *
 * Shape operands (Reshape's shape, Slice's starts…) arrive by value in
 * ctx->const_inputs; everything they decide is resolved on the host into static HLO
 * shapes, slices and pads. ONNX's index clamping rules (Slice) and the reflect/edge/wrap
 * Pad modes become explicit index lists, so each padded axis is one constant-index
 * gather. Constant, Identity, Shape and Size also have host kernels because their
 * inputs may be strings or other types HLO cannot hold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor_source.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* Every input after the first is needed by value (positions may shift when optional
 * inputs are absent, so all later bits are set). */
#define CONST_AFTER_0 (~(uint64_t)1)

static void dims_str(char *buf, size_t cap, int rank, const int64_t *dims) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && len < cap; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* ----------------------------------------------------------------- Reshape ---- */

static kiln_status lower_reshape(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int64_t shape[HLO_MAX_RANK];
  int n;
  bool present;
  TRY(onnx_ints_attr_or_input(ctx, "shape", 1, shape, HLO_MAX_RANK, &n, &present));
  if (!present) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "the target shape is missing");
  bool allowzero = graph_node_attr_int_or(ctx->node, "allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < n; i++) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= x->shape.rank)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape[%d] = 0 copies a dimension the rank-%d input lacks",
                        i, x->shape.rank);
      shape[i] = x->shape.dims[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape has more than one -1");
      infer = i;
    } else if (shape[i] < 0) {
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape[%d] = %lld is invalid", i, (long long)shape[i]);
    } else {
      int64_t e;
      L(oplib_checked_elements(1, &shape[i], &e));
      if (e && known > INT64_MAX / e) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "target shape overflows");
      known *= e;
    }
  }
  int64_t total = shape_elements(&x->shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      char b[256];
      dims_str(b, sizeof b, x->shape.rank, x->shape.dims);
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot infer the -1 dimension reshaping %s (%lld elements)",
                      b, (long long)total);
    }
    shape[infer] = total / known;
  }
  L(oplib_reshape(ctx->comp, x, n, shape, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ---------------------------------------------------------------- Transpose ---- */

static kiln_status lower_transpose(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank, n;
  int64_t perm[HLO_MAX_RANK];
  bool present;
  TRY(onnx_attr_ints(ctx->node, "perm", perm, HLO_MAX_RANK, &n, &present));
  if (!present) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    n = r;
  }
  if (n != r) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "perm has %d entries for rank %d", n, r);
  L(oplib_normalize_axes(n, perm, r, true));
  L(oplib_transpose(ctx->comp, x, perm, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- Concat ---- */

static kiln_status lower_concat(op_lower_ctx *ctx) {
  int n = ctx->n_inputs;
  if (n < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs at least one input");
  hlo_instr **xs = malloc((size_t)n * sizeof *xs), *y;
  if (!xs) abort();
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++) st = onnx_require_input(ctx, i, &xs[i]);
  int64_t axis = 0;
  if (!st) {
    const graph_attr_value *a = graph_node_attr(ctx->node, "axis");
    if (!a && ctx->opset > 0 && ctx->opset < 4) /* Concat-1: axis defaults to 1 */
      st = oplib_wrap(ctx->node, oplib_normalize_axis(1, xs[0]->shape.rank, &axis));
    else if (!a || a->kind != GRAPH_ATTR_INT)
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute axis is required");
    else
      st = oplib_wrap(ctx->node, oplib_normalize_axis(a->i, xs[0]->shape.rank, &axis));
  }
  if (!st) st = oplib_wrap(ctx->node, oplib_concat(ctx->comp, n, xs, axis, &y));
  free(xs);
  if (st) return st;
  return onnx_set_output(ctx, 0, y);
}

/* -------------------------------------------------------------------- Split ---- */

static kiln_status lower_split(op_lower_ctx *ctx) {
  hlo_instr *x;
  TRY(onnx_require_input(ctx, 0, &x));
  int64_t axis;
  L(oplib_normalize_axis(graph_node_attr_int_or(ctx->node, "axis", 0), x->shape.rank, &axis));
  int nout = ctx->n_outputs, n;
  if (nout < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs at least one output");
  int64_t *sizes = malloc((size_t)nout * sizeof *sizes);
  if (!sizes) abort();
  bool present;
  kiln_status st = onnx_ints_attr_or_input(ctx, "split", 1, sizes, nout, &n, &present);
  int64_t dim = x->shape.dims[axis];
  if (!st && present) {
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      if (sizes[i] < 0) st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "split sizes must be non-negative");
      sum += sizes[i];
    }
    if (!st && (n != nout || sum != dim))
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "split sizes (%d entries, total %lld) do not match %d outputs "
                    "over a dimension of %lld", n, (long long)sum, nout, (long long)dim);
  } else if (!st) {
    int64_t parts = graph_node_attr_int_or(ctx->node, "num_outputs", nout);
    if (parts != nout)
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT, "num_outputs %lld but the node has %d outputs", (long long)parts,
                    nout);
    /* Equal parts; an uneven split makes the last one smaller (opset 18's rule). */
    int64_t chunk = (dim + nout - 1) / nout;
    for (int i = 0; i < nout; i++) {
      int64_t start = chunk * i;
      sizes[i] = start >= dim ? 0 : (dim - start < chunk ? dim - start : chunk);
    }
  }
  int64_t start = 0;
  for (int i = 0; i < nout && !st; i++) {
    hlo_instr *part;
    st = oplib_wrap(ctx->node, oplib_slice_axis(ctx->comp, x, (int)axis, start, start + sizes[i], &part));
    if (!st) onnx_set_output(ctx, i, part);
    start += sizes[i];
  }
  free(sizes);
  return st;
}

/* -------------------------------------------------------------------- Slice ---- */

static kiln_status lower_slice(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  int64_t starts[HLO_MAX_RANK], ends[HLO_MAX_RANK], axes[HLO_MAX_RANK], steps[HLO_MAX_RANK];
  int ns, ne, na, nst;
  bool have_axes, have_steps, p1, p2;
  if (ctx->opset > 0 && ctx->opset < 10) {
    TRY(onnx_attr_ints(ctx->node, "starts", starts, HLO_MAX_RANK, &ns, &p1));
    TRY(onnx_attr_ints(ctx->node, "ends", ends, HLO_MAX_RANK, &ne, &p2));
    TRY(onnx_attr_ints(ctx->node, "axes", axes, HLO_MAX_RANK, &na, &have_axes));
    have_steps = false;
    nst = 0;
  } else {
    const graph_tensor *t;
    TRY(onnx_require_const(ctx, 1, "starts", &t));
    L(oplib_tensor_ints(t, "starts", starts, HLO_MAX_RANK, &ns));
    TRY(onnx_require_const(ctx, 2, "ends", &t));
    L(oplib_tensor_ints(t, "ends", ends, HLO_MAX_RANK, &ne));
    have_axes = onnx_has_input(ctx, 3);
    na = 0;
    if (have_axes) {
      TRY(onnx_require_const(ctx, 3, "axes", &t));
      L(oplib_tensor_ints(t, "axes", axes, HLO_MAX_RANK, &na));
    }
    have_steps = onnx_has_input(ctx, 4);
    nst = 0;
    if (have_steps) {
      TRY(onnx_require_const(ctx, 4, "steps", &t));
      L(oplib_tensor_ints(t, "steps", steps, HLO_MAX_RANK, &nst));
    }
  }
  if (ns != ne || (have_axes && na != ns) || (have_steps && nst != ns))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "starts/ends/axes/steps have different lengths (%d/%d/%d/%d)",
                    ns, ne, have_axes ? na : ns, have_steps ? nst : ns);
  if (!have_axes)
    for (int i = 0; i < ns; i++) axes[i] = i;
  if (!have_steps)
    for (int i = 0; i < ns; i++) steps[i] = 1;
  L(oplib_normalize_axes(ns, axes, r, true));
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK], st[HLO_MAX_RANK], rev[HLO_MAX_RANK];
  int nrev = 0;
  for (int i = 0; i < r; i++) {
    lo[i] = 0;
    hi[i] = x->shape.dims[i];
    st[i] = 1;
  }
  for (int i = 0; i < ns; i++) {
    int a = (int)axes[i];
    int64_t dim = x->shape.dims[a], s = starts[i], e = ends[i], step = steps[i];
    if (step == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "steps[%d] is 0", i);
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = s < 0 ? 0 : s > dim ? dim : s;
      e = e < 0 ? 0 : e > dim ? dim : e;
      count = e > s ? (e - s - 1) / step + 1 : 0;
      lo[a] = count ? s : 0;
      hi[a] = count ? s + (count - 1) * step + 1 : 0;
      st[a] = step;
    } else {
      s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      int64_t mstep = step == INT64_MIN ? INT64_MAX : -step;
      count = s > e && dim > 0 ? (s - e - 1) / mstep + 1 : 0;
      /* In the reversed axis the walk runs forward from dim-1-s. */
      int64_t rs = dim - 1 - s;
      lo[a] = count ? rs : 0;
      hi[a] = count ? rs + (count - 1) * mstep + 1 : 0;
      st[a] = count ? mstep : 1;
      if (count) rev[nrev++] = a;
    }
  }
  y = x;
  if (nrev) L(hlo_build_reverse(ctx->comp, y, nrev, rev, &y));
  bool whole = true;
  for (int i = 0; i < r; i++)
    if (lo[i] != 0 || hi[i] != x->shape.dims[i] || st[i] != 1) whole = false;
  if (!whole) L(hlo_build_slice(ctx->comp, y, lo, hi, st, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------- Squeeze, Unsqueeze ---- */

static kiln_status lower_squeeze(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank, n;
  int64_t axes[HLO_MAX_RANK];
  bool present;
  TRY(onnx_ints_attr_or_input(ctx, "axes", 1, axes, HLO_MAX_RANK, &n, &present));
  L(oplib_normalize_axes(n, axes, r, true));
  bool drop[HLO_MAX_RANK] = {false};
  if (!present) {
    for (int i = 0; i < r; i++) drop[i] = x->shape.dims[i] == 1;
  } else {
    for (int i = 0; i < n; i++) {
      if (x->shape.dims[axes[i]] != 1)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot squeeze axis %lld of size %lld", (long long)axes[i],
                        (long long)x->shape.dims[axes[i]]);
      drop[axes[i]] = true;
    }
  }
  int64_t dims[HLO_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) dims[k++] = x->shape.dims[i];
  L(oplib_reshape(ctx->comp, x, k, dims, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_unsqueeze(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank, n;
  int64_t axes[HLO_MAX_RANK];
  bool present;
  TRY(onnx_ints_attr_or_input(ctx, "axes", 1, axes, HLO_MAX_RANK, &n, &present));
  if (!present) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "axes are required");
  int out_rank = r + n;
  if (out_rank > HLO_MAX_RANK)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "result rank %d exceeds %d", out_rank, HLO_MAX_RANK);
  L(oplib_normalize_axes(n, axes, out_rank, true));
  bool ins[HLO_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) ins[axes[i]] = true;
  int64_t dims[HLO_MAX_RANK];
  int k = 0;
  for (int i = 0; i < out_rank; i++) dims[i] = ins[i] ? 1 : x->shape.dims[k++];
  L(oplib_reshape(ctx->comp, x, out_rank, dims, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------ Expand, Tile ---- */

static kiln_status lower_expand(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  const graph_tensor *t;
  TRY(onnx_require_const(ctx, 1, "shape", &t));
  int64_t shape[HLO_MAX_RANK], dims[HLO_MAX_RANK], e;
  int n, r;
  L(oplib_tensor_ints(t, "shape", shape, HLO_MAX_RANK, &n));
  for (int i = 0; i < n; i++)
    if (shape[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape[%d] = %lld is negative", i,
                                      (long long)shape[i]);
  L(oplib_broadcast_shape(x->shape.rank, x->shape.dims, n, shape, &r, dims));
  L(oplib_checked_elements(r, dims, &e));
  L(oplib_broadcast_to(ctx->comp, x, r, dims, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_tile(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  const graph_tensor *t;
  TRY(onnx_require_const(ctx, 1, "repeats", &t));
  int64_t reps[HLO_MAX_RANK];
  int n, r = x->shape.rank;
  L(oplib_tensor_ints(t, "repeats", reps, HLO_MAX_RANK, &n));
  if (n != r) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "repeats has %d entries for rank %d", n, r);
  /* Broadcast to [r0, d0, r1, d1, ...] (only the repeated axes get a leading dim),
   * then merge each pair. */
  int64_t bdims[HLO_MAX_RANK], bmap[HLO_MAX_RANK], out[HLO_MAX_RANK], e;
  int nb = 0;
  for (int i = 0; i < r; i++) {
    if (reps[i] < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "repeats[%d] is negative", i);
    out[i] = x->shape.dims[i] * reps[i];
    if (reps[i] != 1) {
      if (nb >= HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "too many tiled axes for rank %d", r);
      bdims[nb++] = reps[i];
    }
    if (nb >= HLO_MAX_RANK) return op_error(ctx->node, KILN_UNIMPLEMENTED, "too many tiled axes for rank %d", r);
    bmap[i] = nb;
    bdims[nb++] = x->shape.dims[i];
  }
  L(oplib_checked_elements(nb, bdims, &e));
  if (nb == r) return onnx_set_output(ctx, 0, x);
  L(hlo_build_broadcast(ctx->comp, x, nb, bdims, bmap, &y));
  L(hlo_build_reshape(ctx->comp, y, r, out, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ---------------------------------------------------------------------- Pad ---- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

/* Source index in [0, dim) of padded position p (p < 0 or >= dim outside). */
static int64_t pad_source(pad_mode mode, int64_t p, int64_t dim) {
  switch (mode) {
    case PAD_EDGE:
      return p < 0 ? 0 : p >= dim ? dim - 1 : p;
    case PAD_WRAP:
      return ((p % dim) + dim) % dim;
    default: {
      if (dim == 1) return 0;
      int64_t period = 2 * (dim - 1);
      int64_t q = ((p % period) + period) % period;
      return q < dim ? q : period - q;
    }
  }
}

static kiln_status lower_pad(op_lower_ctx *ctx) {
  hlo_instr *x, *y, *value = NULL;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank, np, na = 0;
  int64_t pads[2 * HLO_MAX_RANK], axes[HLO_MAX_RANK];
  bool legacy = ctx->opset > 0 && ctx->opset < 11, present;
  if (legacy) {
    TRY(onnx_attr_ints(ctx->node, "pads", pads, 2 * HLO_MAX_RANK, &np, &present));
    if (!present) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute pads is required");
    L(oplib_scalar(ctx->comp, x->shape.type, graph_node_attr_float_or(ctx->node, "value", 0.0f), &value));
  } else {
    const graph_tensor *t;
    TRY(onnx_require_const(ctx, 1, "pads", &t));
    L(oplib_tensor_ints(t, "pads", pads, 2 * HLO_MAX_RANK, &np));
    if (onnx_has_input(ctx, 2)) {
      const graph_tensor *cv = onnx_const_input(ctx, 2);
      if (cv) {
        if (cv->n != 1 && cv->n != 0)
          return op_error(ctx->node, KILN_INVALID_ARGUMENT, "constant_value must have one element");
        if (cv->n == 1) {
          L(oplib_const_tensor(ctx->comp, cv, &value));
          L(oplib_reshape(ctx->comp, value, 0, NULL, &value));
        }
      } else {
        value = onnx_input(ctx, 2);
        if (value) L(oplib_reshape(ctx->comp, value, 0, NULL, &value));
      }
      if (value) L(oplib_convert(ctx->comp, value, x->shape.type, &value));
    }
    if (onnx_has_input(ctx, 3)) {
      TRY(onnx_require_const(ctx, 3, "axes", &t));
      L(oplib_tensor_ints(t, "axes", axes, HLO_MAX_RANK, &na));
      L(oplib_normalize_axes(na, axes, r, true));
    }
  }
  if (!value) L(oplib_scalar(ctx->comp, x->shape.type, 0, &value));
  if (!na) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (np != 2 * na)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "pads has %d entries, expected %d", np, 2 * na);
  int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    lo[axes[i]] = pads[i];
    hi[axes[i]] = pads[i + na];
  }
  const char *mode_s = onnx_attr_string(ctx->node, "mode", "constant");
  pad_mode mode;
  if (strcmp(mode_s, "constant") == 0)
    mode = PAD_CONSTANT;
  else if (strcmp(mode_s, "reflect") == 0)
    mode = PAD_REFLECT;
  else if (strcmp(mode_s, "edge") == 0)
    mode = PAD_EDGE;
  else if (strcmp(mode_s, "wrap") == 0)
    mode = PAD_WRAP;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unknown mode \"%s\"", mode_s);
  for (int i = 0; i < r; i++) {
    int64_t out = x->shape.dims[i] + lo[i] + hi[i];
    if (lo[i] < -x->shape.dims[i] || hi[i] < -x->shape.dims[i] || out < 0 || lo[i] > ((int64_t)1 << 40) ||
        hi[i] > ((int64_t)1 << 40))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "pads %lld/%lld are out of range for dimension %d of size %lld",
                      (long long)lo[i], (long long)hi[i], i, (long long)x->shape.dims[i]);
  }
  if (mode == PAD_CONSTANT) {
    L(oplib_pad(ctx->comp, x, value, lo, hi, &y));
    return onnx_set_output(ctx, 0, y);
  }
  y = x;
  for (int i = 0; i < r; i++) {
    if (lo[i] == 0 && hi[i] == 0) continue;
    int64_t dim = x->shape.dims[i], out = dim + lo[i] + hi[i];
    if (dim == 0 && out > 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "cannot %s-pad an empty dimension", mode_s);
    if (mode == PAD_REFLECT && (lo[i] >= dim || hi[i] >= dim) && dim > 1)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "reflect pads %lld/%lld must be smaller than the dimension %lld",
                      (long long)lo[i], (long long)hi[i], (long long)dim);
    if (out > ((int64_t)1 << 28))
      return op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "%s padding to %lld entries along dimension %d is too large",
                      mode_s, (long long)out, i);
    int64_t *idx = malloc((size_t)(out ? out : 1) * sizeof *idx);
    if (!idx) abort();
    for (int64_t j = 0; j < out; j++) idx[j] = pad_source(mode, j - lo[i], dim);
    kiln_status st = oplib_take_constant(ctx->comp, y, i, out, idx, &y);
    free(idx);
    L(st);
  }
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------- Shape, Size, etc. ---- */

/* Shape's [start, end) after ONNX's clamping. */
static void shape_range(const graph_node *node, int r, int64_t *start, int64_t *end) {
  int64_t s = graph_node_attr_int_or(node, "start", 0), e = graph_node_attr_int_or(node, "end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  *start = s;
  *end = e > s ? e : s;
}

static kiln_status lower_shape(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  int r;
  const int64_t *dims;
  x = onnx_input(ctx, 0);
  const graph_tensor *t = onnx_const_input(ctx, 0);
  if (x) {
    r = x->shape.rank;
    dims = x->shape.dims;
  } else if (t) {
    r = t->rank;
    dims = t->dims;
  } else {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is missing");
  }
  int64_t s, e;
  shape_range(ctx->node, r, &s, &e);
  L(oplib_const_vector(ctx->comp, HLO_S64, e - s, dims + s, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status host_shape(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0), *y;
  if (!x) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is missing");
  int64_t s, e;
  shape_range(ctx->node, x->rank, &s, &e);
  int64_t n = e - s;
  TRY(tensor_create(GRAPH_DT_INT64, 1, &n, &y));
  for (int64_t i = 0; i < n; i++) tensor_set_s64(y, i, x->dims[s + i]);
  ctx->outputs[0] = y;
  return NULL;
}

static kiln_status lower_size(op_lower_ctx *ctx) {
  hlo_instr *x = onnx_input(ctx, 0), *y;
  const graph_tensor *t = onnx_const_input(ctx, 0);
  int64_t n;
  if (x)
    n = shape_elements(&x->shape);
  else if (t)
    n = t->n;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is missing");
  L(oplib_scalar(ctx->comp, HLO_S64, (double)n, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status host_size(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0), *y;
  if (!x) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is missing");
  TRY(tensor_create_scalar(GRAPH_DT_INT64, &y));
  tensor_set_s64(y, 0, x->n);
  ctx->outputs[0] = y;
  return NULL;
}

static kiln_status lower_identity(op_lower_ctx *ctx) {
  hlo_instr *x;
  TRY(onnx_require_input(ctx, 0, &x));
  return onnx_set_output(ctx, 0, x);
}

static kiln_status host_identity(op_host_ctx *ctx) {
  graph_tensor *x = onnx_host_input(ctx, 0);
  if (!x) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input is missing");
  ctx->outputs[0] = tensor_ref(x);
  return NULL;
}

/* The Constant node's value as a new tensor reference (any of ONNX's attribute forms). */
static kiln_status constant_value(const graph_node *node, graph_tensor **out) {
  const graph_attr_value *a;
  if ((a = graph_node_attr(node, "value")) && a->kind == GRAPH_ATTR_TENSOR && a->tensor)
    return tensor_ref_loaded(a->tensor, out); /* read back from its file if a compile dropped it */
  if ((a = graph_node_attr(node, "value_float")) && a->kind == GRAPH_ATTR_FLOAT) {
    TRY(tensor_create_scalar(GRAPH_DT_FLOAT, out));
    tensor_set_f64(*out, 0, a->f);
    return NULL;
  }
  if ((a = graph_node_attr(node, "value_int")) && a->kind == GRAPH_ATTR_INT) {
    TRY(tensor_create_scalar(GRAPH_DT_INT64, out));
    tensor_set_s64(*out, 0, a->i);
    return NULL;
  }
  if ((a = graph_node_attr(node, "value_string")) && a->kind == GRAPH_ATTR_STRING) {
    TRY(tensor_create_scalar(GRAPH_DT_STRING, out));
    tensor_set_string(*out, 0, a->s.data, a->s.len);
    return NULL;
  }
  if ((a = graph_node_attr(node, "value_floats")) || (a = graph_node_attr(node, "value_ints")) ||
      (a = graph_node_attr(node, "value_strings"))) {
    if (a->kind != GRAPH_ATTR_LIST) return op_error(node, KILN_INVALID_ARGUMENT, "constant list attribute expected");
    int64_t n = a->list.n;
    graph_attr_kind k = a->list.elem;
    graph_dtype dt = k == GRAPH_ATTR_FLOAT ? GRAPH_DT_FLOAT : k == GRAPH_ATTR_STRING ? GRAPH_DT_STRING : GRAPH_DT_INT64;
    if (k == GRAPH_ATTR_NONE) dt = graph_node_attr(node, "value_floats") ? GRAPH_DT_FLOAT : GRAPH_DT_INT64;
    TRY(tensor_create(dt, 1, &n, out));
    for (int64_t i = 0; i < n; i++) {
      const graph_attr_value *v = &a->list.items[i];
      if (v->kind == GRAPH_ATTR_FLOAT)
        tensor_set_f64(*out, i, v->f);
      else if (v->kind == GRAPH_ATTR_INT)
        tensor_set_s64(*out, i, v->i);
      else if (v->kind == GRAPH_ATTR_STRING)
        tensor_set_string(*out, i, v->s.data, v->s.len);
    }
    return NULL;
  }
  if (graph_node_attr(node, "sparse_value"))
    return op_error(node, KILN_UNIMPLEMENTED, "sparse constants are not supported");
  return op_error(node, KILN_INVALID_ARGUMENT, "constant has no value attribute");
}

static kiln_status lower_constant(op_lower_ctx *ctx) {
  graph_tensor *t;
  hlo_instr *y;
  TRY(constant_value(ctx->node, &t));
  kiln_status st = oplib_const_tensor(ctx->comp, t, &y);
  tensor_free(t);
  L(st);
  return onnx_set_output(ctx, 0, y);
}

static kiln_status host_constant(op_host_ctx *ctx) { return constant_value(ctx->node, &ctx->outputs[0]); }

static kiln_status lower_constant_of_shape(op_lower_ctx *ctx) {
  const graph_tensor *t;
  TRY(onnx_require_const(ctx, 0, "shape", &t));
  int64_t dims[HLO_MAX_RANK], e;
  int n;
  L(oplib_tensor_ints(t, "shape", dims, HLO_MAX_RANK, &n));
  L(oplib_checked_elements(n, dims, &e));
  const graph_attr_value *v = graph_node_attr(ctx->node, "value");
  hlo_instr *s, *y;
  if (v && v->kind == GRAPH_ATTR_TENSOR && v->tensor) {
    if (v->tensor->n != 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "value must have one element");
    L(oplib_const_tensor(ctx->comp, v->tensor, &s));
    L(oplib_reshape(ctx->comp, s, 0, NULL, &s));
  } else {
    L(oplib_scalar(ctx->comp, HLO_F32, 0, &s));
  }
  if (n == 0)
    y = s;
  else
    L(hlo_build_broadcast(ctx->comp, s, n, dims, NULL, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_range(op_lower_ctx *ctx) {
  const graph_tensor *ts, *tl, *td;
  TRY(onnx_require_const(ctx, 0, "start", &ts));
  TRY(onnx_require_const(ctx, 1, "limit", &tl));
  TRY(onnx_require_const(ctx, 2, "delta", &td));
  if (ts->n != 1 || tl->n != 1 || td->n != 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start, limit and delta must be scalars");
  hlo_type t;
  if (!graph_dtype_to_hlo(ts->dtype, &t) || t == HLO_PRED)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "unsupported type %s", graph_dtype_name(ts->dtype));
  hlo_literal *lit;
  hlo_instr *y;
  if (hlo_type_is_int(t)) {
    int64_t s = tensor_get_s64(ts, 0), l = tensor_get_s64(tl, 0), d = tensor_get_s64(td, 0);
    if (d == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "delta is 0");
    /* ceil((l - s) / d) without overflow, in wide arithmetic. */
    double span = (double)l - (double)s;
    double cnt = ceil(span / (double)d);
    if (cnt > 1e12) return op_error(ctx->node, KILN_OUT_OF_RANGE, "range has too many elements");
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    hlo_shape sh = shape_make(t, 1, &n);
    L(literal_create(&sh, &lit));
    /* Unsigned arithmetic: the values stay in range, the intermediate product may not. */
    for (int64_t i = 0; i < n; i++) literal_set_s64(lit, i, (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d));
  } else {
    double s = tensor_get_f64(ts, 0), l = tensor_get_f64(tl, 0), d = tensor_get_f64(td, 0);
    if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "start, limit and delta must be finite and delta non-zero");
    double cnt = ceil((l - s) / d);
    if (cnt > 1e12) return op_error(ctx->node, KILN_OUT_OF_RANGE, "range has too many elements");
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    hlo_shape sh = shape_make(t, 1, &n);
    L(literal_create(&sh, &lit));
    /* ONNX Runtime accumulates in the element type: val += delta. */
    if (t == HLO_F32) {
      float v = (float)s, fd = (float)d;
      for (int64_t i = 0; i < n; i++, v += fd) literal_set_f64(lit, i, v);
    } else {
      double v = s;
      for (int64_t i = 0; i < n; i++, v += d) literal_set_f64(lit, i, v);
    }
  }
  L(hlo_build_constant(ctx->comp, lit, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------ DepthToSpace, SpaceToDepth ---- */

static kiln_status lower_depth_space(op_lower_ctx *ctx) {
  hlo_instr *x, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  if (x->shape.rank != 4) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be 4-D NCHW");
  int64_t b = graph_node_attr_int_or(ctx->node, "blocksize", 0);
  const int64_t *d = x->shape.dims;
  int64_t N = d[0], C = d[1], H = d[2], W = d[3];
  if (b < 1 || b > (1 << 20)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "blocksize must be positive");
  bool to_space = strcmp(graph_node_op_base(ctx->node), "DepthToSpace") == 0;
  if (to_space) {
    if (C % (b * b) != 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "channels %lld are not divisible by blocksize^2",
                      (long long)C);
    bool crd = strcmp(onnx_attr_string(ctx->node, "mode", "DCR"), "CRD") == 0;
    int64_t c = C / (b * b);
    int64_t dcr[6] = {N, b, b, c, H, W}, crd_d[6] = {N, c, b, b, H, W};
    int64_t p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
    int64_t out[4] = {N, c, H * b, W * b};
    L(hlo_build_reshape(ctx->comp, x, 6, crd ? crd_d : dcr, &y));
    L(hlo_build_transpose(ctx->comp, y, crd ? p_crd : p_dcr, &y));
    L(hlo_build_reshape(ctx->comp, y, 4, out, &y));
  } else {
    if (H % b != 0 || W % b != 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "spatial dims %lldx%lld are not divisible by blocksize %lld",
                      (long long)H, (long long)W, (long long)b);
    /* Version 28 added `mode` (DCR before it, and still the default): DCR puts the
     * block offset outermost in the new channel axis, CRD the original channel. */
    bool crd = false;
    if (op_onnx_since_version("SpaceToDepth", ctx->opset) >= 28) {
      const char *mode = onnx_attr_string(ctx->node, "mode", "DCR");
      if (strcmp(mode, "CRD") == 0)
        crd = true;
      else if (strcmp(mode, "DCR") != 0)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "mode '%s' is neither 'DCR' nor 'CRD'", mode);
    }
    int64_t s6[6] = {N, C, H / b, b, W / b, b}, out[4] = {N, C * b * b, H / b, W / b};
    int64_t p_dcr[6] = {0, 3, 5, 1, 2, 4}, p_crd[6] = {0, 1, 3, 5, 2, 4};
    L(hlo_build_reshape(ctx->comp, x, 6, s6, &y));
    L(hlo_build_transpose(ctx->comp, y, crd ? p_crd : p_dcr, &y));
    L(hlo_build_reshape(ctx->comp, y, 4, out, &y));
  }
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------ EyeLike, Trilu ---- */

/* col - row over the last two dims of `dims`, as s64. */
static kiln_status diag_offset(op_lower_ctx *ctx, int r, const int64_t *dims, hlo_instr **out) {
  hlo_shape s = shape_make(HLO_S64, r, dims);
  hlo_instr *row, *col;
  L(hlo_build_iota(ctx->comp, &s, r - 2, &row));
  L(hlo_build_iota(ctx->comp, &s, r - 1, &col));
  L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, col, row, out));
  return NULL;
}

static kiln_status lower_eyelike(op_lower_ctx *ctx) {
  hlo_type t;
  TRY(onnx_input_hlo_type(ctx, 0, &t));
  hlo_instr *x = onnx_input(ctx, 0);
  const graph_tensor *xt = onnx_const_input(ctx, 0);
  int r = x ? x->shape.rank : xt ? xt->rank : -1;
  const int64_t *dims = x ? x->shape.dims : xt ? xt->dims : NULL;
  if (r != 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be 2-D");
  if (graph_node_attr(ctx->node, "dtype")) {
    graph_dtype dt;
    TRY(onnx_attr_dtype(ctx->node, "dtype", &dt));
    if (!graph_dtype_to_hlo(dt, &t)) return op_error(ctx->node, KILN_UNIMPLEMENTED, "unsupported dtype");
  }
  int64_t k = graph_node_attr_int_or(ctx->node, "k", 0);
  hlo_instr *off, *kk, *eq, *y;
  TRY(diag_offset(ctx, 2, dims, &off));
  L(oplib_full_like(ctx->comp, off, HLO_S64, (double)k, &kk));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, off, kk, &eq));
  L(hlo_build_convert(ctx->comp, eq, t, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_trilu(op_lower_ctx *ctx) {
  hlo_instr *x, *off, *kk, *keep, *zero, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  if (x->shape.rank < 2) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 2");
  double k = 0;
  if (onnx_has_input(ctx, 1)) {
    const graph_tensor *t;
    TRY(onnx_require_const(ctx, 1, "k", &t));
    L(oplib_tensor_scalar(t, "k", &k));
  }
  bool upper = graph_node_attr_int_or(ctx->node, "upper", 1) != 0;
  TRY(diag_offset(ctx, x->shape.rank, x->shape.dims, &off));
  L(oplib_full_like(ctx->comp, off, HLO_S64, k, &kk));
  L(hlo_build_compare(ctx->comp, upper ? HLO_DIR_GE : HLO_DIR_LE, off, kk, &keep));
  L(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, 0, &zero));
  L(hlo_build_select(ctx->comp, keep, x, zero, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ----------------------------------------------------------- CenterCropPad ---- */

/* Each listed axis (all axes without the attribute) becomes the target size from the
 * constant `shape` input: a larger input is cropped to a centred window whose start
 * rounds down, a smaller one is zero-padded with the odd pixel on the high side. Both
 * are one edge pad (negative amounts crop). */
static kiln_status lower_center_crop_pad(op_lower_ctx *ctx) {
  hlo_instr *x, *zero, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  const graph_tensor *st;
  TRY(onnx_require_const(ctx, 1, "shape", &st));
  int64_t shape[HLO_MAX_RANK], axes[HLO_MAX_RANK];
  int ns, na;
  bool present;
  L(oplib_tensor_ints(st, "shape", shape, HLO_MAX_RANK, &ns));
  TRY(onnx_attr_ints(ctx->node, "axes", axes, HLO_MAX_RANK, &na, &present));
  if (!present) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  L(oplib_normalize_axes(na, axes, r, true));
  if (ns != na)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape has %d entries but there are %d axes", ns, na);
  int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t in = x->shape.dims[axes[i]], out = shape[i];
    if (out < 0)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape[%d] = %lld is negative", i, (long long)out);
    if (in > out) {
      int64_t start = (in - out) / 2;
      lo[axes[i]] = -start;
      hi[axes[i]] = -(in - out - start);
    } else {
      int64_t total = out - in;
      lo[axes[i]] = total / 2;
      hi[axes[i]] = total - total / 2;
    }
  }
  L(oplib_scalar(ctx->comp, x->shape.type, 0, &zero));
  L(oplib_pad(ctx->comp, x, zero, lo, hi, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- table ---- */

static const op_def onnx_tensor_defs[] = {
    {"onnx.Reshape", 0, CONST_AFTER_0, lower_reshape, NULL},
    {"onnx.Transpose", 0, 0, lower_transpose, NULL},
    {"onnx.Concat", 0, 0, lower_concat, NULL},
    {"onnx.Split", 0, CONST_AFTER_0, lower_split, NULL},
    {"onnx.Slice", 0, CONST_AFTER_0, lower_slice, NULL},
    {"onnx.Squeeze", 0, CONST_AFTER_0, lower_squeeze, NULL},
    {"onnx.Unsqueeze", 0, CONST_AFTER_0, lower_unsqueeze, NULL},
    {"onnx.Expand", 0, CONST_AFTER_0, lower_expand, NULL},
    {"onnx.Tile", 0, CONST_AFTER_0, lower_tile, NULL},
    {"onnx.Pad", 0, CONST_AFTER_0, lower_pad, NULL},
    {"onnx.CenterCropPad", 0, CONST_AFTER_0, lower_center_crop_pad, NULL},
    {"onnx.Shape", OP_SHAPE_CONSUMER, 0, lower_shape, host_shape},
    {"onnx.Size", OP_SHAPE_CONSUMER, 0, lower_size, host_size},
    {"onnx.Identity", 0, 0, lower_identity, host_identity},
    {"onnx.Constant", 0, 0, lower_constant, host_constant},
    {"onnx.ConstantOfShape", 0, 1, lower_constant_of_shape, NULL},
    {"onnx.Range", 0, 7, lower_range, NULL},
    {"onnx.DepthToSpace", 0, 0, lower_depth_space, NULL},
    {"onnx.SpaceToDepth", 0, 0, lower_depth_space, NULL},
    {"onnx.EyeLike", OP_SHAPE_CONSUMER, 0, lower_eyelike, NULL},
    {"onnx.Trilu", 0, CONST_AFTER_0, lower_trilu, NULL},
};

const op_table onnx_tensor_ops = {"onnx.tensor", (int)(sizeof onnx_tensor_defs / sizeof onnx_tensor_defs[0]),
                                  onnx_tensor_defs};
