/* Shared lowering helpers (see ops_lib.h): broadcasting, constants, reductions,
 * softmax, windows, matmul, helper computations, and the ONNX input/attribute
 * conventions. Everything goes through the HLO builder, so a helper either appends
 * well-shaped instructions or fails with the builder's message; the op that called it
 * adds the node context with OPLIB_TRY. */
#include "ops/ops_lib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/literal.h"
#include "hlo/shape_inference.h"

/* ================================================================ errors ========== */

kiln_status oplib_wrap(const graph_node *node, kiln_status s) {
  if (!s || !node) return s;
  const char *msg = kiln_status_message(s);
  char prefix[512];
  snprintf(prefix, sizeof prefix, "node %s (%s)", node->name, node->op);
  if (msg && strncmp(msg, prefix, strlen(prefix)) == 0) return s;
  return status_wrap(s, "%s", prefix);
}

static void dims_text(char *buf, size_t cap, int rank, const int64_t *dims) {
  size_t len = 0;
  len += (size_t)snprintf(buf + len, cap - len, "[");
  for (int i = 0; i < rank && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* ============================================================= constants ========== */

kiln_status oplib_scalar(hlo_computation *c, hlo_type t, double v, hlo_instr **out) {
  return hlo_build_constant_scalar(c, t, v, out);
}

kiln_status oplib_full(hlo_computation *c, hlo_type t, double v, int rank, const int64_t *dims, hlo_instr **out) {
  hlo_instr *s;
  TRY(hlo_build_constant_scalar(c, t, v, &s));
  if (rank == 0) {
    *out = s;
    return NULL;
  }
  return hlo_build_broadcast(c, s, rank, dims, NULL, out);
}

kiln_status oplib_full_like(hlo_computation *c, hlo_instr *x, hlo_type t, double v, hlo_instr **out) {
  if (t == HLO_TYPE_COUNT) t = x->shape.type;
  return oplib_full(c, t, v, x->shape.rank, x->shape.dims, out);
}

static kiln_status new_literal(hlo_type t, int rank, const int64_t *dims, hlo_literal **out) {
  hlo_shape s = shape_make(t, rank, dims);
  TRY(hlo_shape_validate(&s, false));
  return literal_create(&s, out);
}

kiln_status oplib_const_ints(hlo_computation *c, hlo_type t, int rank, const int64_t *dims, const int64_t *v,
                             hlo_instr **out) {
  hlo_literal *lit;
  TRY(new_literal(t, rank, dims, &lit));
  for (int64_t i = 0; i < lit->n; i++) {
    if (hlo_type_is_float(t))
      literal_set_f64(lit, i, (double)v[i]);
    else
      literal_set_s64(lit, i, v[i]);
  }
  return hlo_build_constant(c, lit, out);
}

kiln_status oplib_const_f64s(hlo_computation *c, hlo_type t, int rank, const int64_t *dims, const double *v,
                             hlo_instr **out) {
  hlo_literal *lit;
  TRY(new_literal(t, rank, dims, &lit));
  for (int64_t i = 0; i < lit->n; i++) literal_set_f64(lit, i, v[i]);
  return hlo_build_constant(c, lit, out);
}

kiln_status oplib_const_vector(hlo_computation *c, hlo_type t, int64_t n, const int64_t *v, hlo_instr **out) {
  return oplib_const_ints(c, t, 1, &n, v, out);
}

kiln_status oplib_const_tensor(hlo_computation *c, const graph_tensor *t, hlo_instr **out) {
  hlo_type h;
  if (!graph_dtype_to_hlo(t->dtype, &h))
    return ERR_UNIMPLEMENTED("a %s constant has no HLO type", graph_dtype_name(t->dtype));
  hlo_literal *lit;
  TRY(tensor_to_literal(t, &lit));
  return hlo_build_constant(c, lit, out);
}

static kiln_status limit_constant(hlo_computation *c, hlo_type t, bool highest, hlo_instr **out) {
  hlo_shape s = shape_scalar(t);
  if (!hlo_type_is_array(t)) return ERR_INVALID("%s has no value range", hlo_type_name(t));
  hlo_literal *lit;
  TRY(literal_create(&s, &lit));
  minifloat_format mf;
  if (t == HLO_F8E8M0FNU) {
    literal_set_f64(lit, 0, highest ? minifloat_max(MINIFLOAT_E8M0FNU) : 0x1p-127); /* unsigned: its smallest is its lowest */
  } else if (hlo_type_minifloat(t, &mf) && !minifloat_has_inf(mf)) {
    literal_set_f64(lit, 0, highest ? minifloat_max(mf) : -minifloat_max(mf)); /* no infinity: the largest finite */
  } else if (hlo_type_is_float(t)) {
    literal_set_f64(lit, 0, highest ? INFINITY : -INFINITY);
  } else if (t == HLO_PRED) {
    literal_set_s64(lit, 0, highest ? 1 : 0);
  } else if (hlo_type_is_unsigned_int(t)) {
    int bits = hlo_type_bit_width(t);
    literal_set_u64(lit, 0, highest ? (bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1) : 0);
  } else {
    int bits = hlo_type_bit_width(t);
    int64_t hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    literal_set_s64(lit, 0, highest ? hi : -hi - 1);
  }
  return hlo_build_constant(c, lit, out);
}

kiln_status oplib_lowest(hlo_computation *c, hlo_type t, hlo_instr **out) { return limit_constant(c, t, false, out); }
kiln_status oplib_highest(hlo_computation *c, hlo_type t, hlo_instr **out) { return limit_constant(c, t, true, out); }

/* ================================================================ shapes ========== */

kiln_status oplib_normalize_axis(int64_t axis, int rank, int64_t *out) {
  int64_t r = rank;
  if (axis < -r || axis >= r || (rank == 0))
    return ERR_INVALID("axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = axis < 0 ? axis + r : axis;
  return NULL;
}

kiln_status oplib_normalize_axes(int n, int64_t *axes, int rank, bool unique) {
  for (int i = 0; i < n; i++) {
    TRY(oplib_normalize_axis(axes[i], rank, &axes[i]));
    if (unique)
      for (int j = 0; j < i; j++)
        if (axes[j] == axes[i]) return ERR_INVALID("axis %lld is repeated", (long long)axes[i]);
  }
  return NULL;
}

kiln_status oplib_checked_elements(int n, const int64_t *dims, int64_t *out) {
  int64_t p = 1;
  bool zero = false;
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0) return ERR_INVALID("dimension %d is negative (%lld)", i, (long long)dims[i]);
    if (dims[i] == 0) zero = true;
  }
  if (zero) {
    *out = 0;
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (p > INT64_MAX / dims[i]) {
      char b[256];
      dims_text(b, sizeof b, n, dims);
      return status_error(KILN_OUT_OF_RANGE, "shape %s has more than 2^63 elements", b);
    }
    p *= dims[i];
  }
  *out = p;
  return NULL;
}

kiln_status oplib_reshape(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out) {
  if (x->shape.rank == rank && (rank == 0 || memcmp(x->shape.dims, dims, (size_t)rank * sizeof *dims) == 0)) {
    *out = x;
    return NULL;
  }
  return hlo_build_reshape(c, x, rank, dims, out);
}

kiln_status oplib_transpose(hlo_computation *c, hlo_instr *x, const int64_t *perm, hlo_instr **out) {
  bool identity = true;
  for (int i = 0; i < x->shape.rank; i++)
    if (perm[i] != i) identity = false;
  if (identity) {
    *out = x;
    return NULL;
  }
  return hlo_build_transpose(c, x, perm, out);
}

kiln_status oplib_convert(hlo_computation *c, hlo_instr *x, hlo_type t, hlo_instr **out) {
  if (x->shape.type == t) {
    *out = x;
    return NULL;
  }
  return hlo_build_convert(c, x, t, out);
}

kiln_status oplib_slice_axis(hlo_computation *c, hlo_instr *x, int axis, int64_t start, int64_t limit,
                             hlo_instr **out) {
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  int r = x->shape.rank;
  for (int i = 0; i < r; i++) {
    lo[i] = 0;
    hi[i] = x->shape.dims[i];
  }
  if (axis < 0 || axis >= r) return ERR_INVALID("slice axis %d is out of range for rank %d", axis, r);
  if (start == 0 && limit == x->shape.dims[axis]) {
    *out = x;
    return NULL;
  }
  lo[axis] = start;
  hi[axis] = limit;
  return hlo_build_slice(c, x, lo, hi, NULL, out);
}

kiln_status oplib_pad(hlo_computation *c, hlo_instr *x, hlo_instr *value, const int64_t *lo, const int64_t *hi,
                      hlo_instr **out) {
  int64_t zeros[HLO_MAX_RANK] = {0};
  return hlo_build_pad(c, x, value, lo, hi, zeros, out);
}

kiln_status oplib_concat(hlo_computation *c, int n, hlo_instr *const *xs, int64_t axis, hlo_instr **out) {
  if (n == 1) {
    *out = xs[0];
    return NULL;
  }
  return hlo_build_concatenate(c, n, xs, axis, out);
}

kiln_status oplib_expand_rank(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims_in_out,
                              hlo_instr **out) {
  int64_t dims[HLO_MAX_RANK];
  if (rank > HLO_MAX_RANK) return ERR_INVALID("rank %d exceeds the maximum %d", rank, HLO_MAX_RANK);
  for (int i = 0; i < rank; i++) dims[i] = 1;
  for (int i = 0; i < x->shape.rank; i++) dims[dims_in_out[i]] = x->shape.dims[i];
  return oplib_reshape(c, x, rank, dims, out);
}

kiln_status oplib_take_constant(hlo_computation *c, hlo_instr *x, int axis, int64_t n, const int64_t *idx,
                                hlo_instr **out) {
  int r = x->shape.rank;
  /* The identity selection is common (scale 1 axes of a Resize): skip the gather. */
  if (n == x->shape.dims[axis]) {
    bool identity = true;
    for (int64_t i = 0; i < n && identity; i++) identity = idx[i] == i;
    if (identity) {
      *out = x;
      return NULL;
    }
  }
  hlo_instr *indices;
  int64_t idims[2] = {n, 1};
  TRY(oplib_const_ints(c, n <= INT32_MAX ? HLO_S32 : HLO_S64, 2, idims, idx, &indices));
  int64_t offset[HLO_MAX_RANK], sizes[HLO_MAX_RANK], one_axis = axis;
  int no = 0;
  for (int i = 0; i < r; i++) {
    if (i != axis) offset[no++] = i;
    sizes[i] = i == axis ? 1 : x->shape.dims[i];
  }
  hlo_gather_dnums dn = {0};
  dn.offset_dims = (hlo_ints){no, offset};
  dn.collapsed_slice_dims = (hlo_ints){1, &one_axis};
  dn.start_index_map = (hlo_ints){1, &one_axis};
  dn.index_vector_dim = 1;
  return hlo_build_gather(c, x, indices, &dn, sizes, out);
}

/* ========================================================== broadcasting ========== */

kiln_status oplib_broadcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims) {
  int r = ra > rb ? ra : rb;
  for (int j = 0; j < r; j++) {
    int ia = j - (r - ra), ib = j - (r - rb);
    int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
    if (a == b || b == 1)
      dims[j] = a;
    else if (a == 1)
      dims[j] = b;
    else {
      char sa[256], sb[256];
      dims_text(sa, sizeof sa, ra, da);
      dims_text(sb, sizeof sb, rb, db);
      return ERR_INVALID("shapes %s and %s cannot be broadcast together (dimension %d: %lld vs %lld)", sa, sb, j,
                         (long long)a, (long long)b);
    }
  }
  *rank = r;
  return NULL;
}

kiln_status oplib_broadcast_to(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out) {
  const hlo_shape *s = &x->shape;
  int xr = s->rank;
  char sa[256], sb[256];
  if (xr > rank) {
    dims_text(sa, sizeof sa, xr, s->dims);
    dims_text(sb, sizeof sb, rank, dims);
    return ERR_INVALID("cannot broadcast shape %s to the lower-rank shape %s", sa, sb);
  }
  if (xr == rank && (rank == 0 || memcmp(s->dims, dims, (size_t)rank * sizeof *dims) == 0)) {
    *out = x;
    return NULL;
  }
  int64_t kept[HLO_MAX_RANK] = {0}, bdims[HLO_MAX_RANK] = {0};
  int nk = 0;
  for (int i = 0; i < xr; i++) {
    int j = rank - xr + i;
    if (s->dims[i] == dims[j]) {
      kept[nk] = s->dims[i];
      bdims[nk++] = j;
    } else if (s->dims[i] != 1) {
      dims_text(sa, sizeof sa, xr, s->dims);
      dims_text(sb, sizeof sb, rank, dims);
      return ERR_INVALID("cannot broadcast shape %s to %s", sa, sb);
    }
  }
  hlo_instr *y = x;
  if (nk != xr) TRY(hlo_build_reshape(c, x, nk, kept, &y));
  return hlo_build_broadcast(c, y, rank, dims, nk ? bdims : NULL, out);
}

kiln_status oplib_broadcast_all(hlo_computation *c, int n, hlo_instr **xs) {
  int rank = 0;
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0; i < n; i++) {
    if (!shape_is_array(&xs[i]->shape)) return ERR_INVALID("cannot broadcast a non-array value");
    if (i == 0) {
      rank = xs[0]->shape.rank;
      memcpy(dims, xs[0]->shape.dims, (size_t)rank * sizeof *dims);
    } else {
      int64_t tmp[HLO_MAX_RANK];
      int r;
      TRY(oplib_broadcast_shape(rank, dims, xs[i]->shape.rank, xs[i]->shape.dims, &r, tmp));
      rank = r;
      memcpy(dims, tmp, (size_t)r * sizeof *tmp);
    }
  }
  for (int i = 0; i < n; i++) TRY(oplib_broadcast_to(c, xs[i], rank, dims, &xs[i]));
  return NULL;
}

kiln_status oplib_binary(hlo_computation *c, hlo_opcode op, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  hlo_instr *xs[2] = {a, b};
  TRY(oplib_broadcast_all(c, 2, xs));
  return hlo_build_binary(c, op, xs[0], xs[1], out);
}

kiln_status oplib_compare(hlo_computation *c, hlo_direction dir, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  hlo_instr *xs[2] = {a, b};
  TRY(oplib_broadcast_all(c, 2, xs));
  return hlo_build_compare(c, dir, xs[0], xs[1], out);
}

kiln_status oplib_select(hlo_computation *c, hlo_instr *pred, hlo_instr *on_true, hlo_instr *on_false,
                         hlo_instr **out) {
  hlo_instr *xs[3] = {pred, on_true, on_false};
  TRY(oplib_broadcast_all(c, 3, xs));
  return hlo_build_select(c, xs[0], xs[1], xs[2], out);
}

kiln_status oplib_binary_scalar(hlo_computation *c, hlo_opcode op, hlo_instr *x, double v, hlo_instr **out) {
  hlo_instr *k;
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, v, &k));
  return hlo_build_binary(c, op, x, k, out);
}

kiln_status oplib_unary(hlo_computation *c, hlo_opcode op, hlo_instr *x, hlo_instr **out) {
  return hlo_build_unary(c, op, x, out);
}

/* ============================================================ reductions ========== */

kiln_status oplib_reduce(hlo_computation *c, oplib_reducer kind, hlo_instr *x, int n_axes, const int64_t *axes,
                         bool keepdims, hlo_instr **out) {
  if (n_axes == 0) {
    *out = x;
    return NULL;
  }
  hlo_type t = x->shape.type, acc = t;
  if ((kind == OPLIB_REDUCE_SUM || kind == OPLIB_REDUCE_PROD) && (t == HLO_F16 || t == HLO_BF16)) acc = HLO_F32;
  hlo_instr *in, *init, *r;
  TRY(oplib_convert(c, x, acc, &in));
  hlo_opcode op;
  switch (kind) {
    case OPLIB_REDUCE_SUM:
      op = HLO_OP_ADD;
      TRY(oplib_scalar(c, acc, 0, &init));
      break;
    case OPLIB_REDUCE_PROD:
      op = HLO_OP_MULTIPLY;
      TRY(oplib_scalar(c, acc, 1, &init));
      break;
    case OPLIB_REDUCE_MAX:
      op = acc == HLO_PRED ? HLO_OP_OR : HLO_OP_MAXIMUM;
      TRY(oplib_lowest(c, acc, &init));
      break;
    default:
      op = acc == HLO_PRED ? HLO_OP_AND : HLO_OP_MINIMUM;
      TRY(oplib_highest(c, acc, &init));
      break;
  }
  hlo_computation *f;
  TRY(hlo_build_scalar_computation(c->module, op, acc, &f));
  TRY(hlo_build_reduce(c, 1, &in, &init, n_axes, axes, f, &r));
  TRY(oplib_convert(c, r, t, &r));
  if (keepdims) {
    int64_t dims[HLO_MAX_RANK];
    int rank = x->shape.rank;
    memcpy(dims, x->shape.dims, (size_t)rank * sizeof *dims);
    for (int i = 0; i < n_axes; i++) dims[axes[i]] = 1;
    TRY(oplib_reshape(c, r, rank, dims, &r));
  }
  *out = r;
  return NULL;
}

kiln_status oplib_reduce_mean(hlo_computation *c, hlo_instr *x, int n_axes, const int64_t *axes, bool keepdims,
                              hlo_instr **out) {
  int64_t count = 1;
  for (int i = 0; i < n_axes; i++) count *= x->shape.dims[axes[i]];
  hlo_type t = x->shape.type;
  hlo_instr *s;
  if (t == HLO_F16 || t == HLO_BF16) {
    /* Divide before rounding back to the narrow type. */
    hlo_instr *wide;
    TRY(hlo_build_convert(c, x, HLO_F32, &wide));
    TRY(oplib_reduce(c, OPLIB_REDUCE_SUM, wide, n_axes, axes, keepdims, &s));
    TRY(oplib_binary_scalar(c, HLO_OP_DIVIDE, s, (double)count, &s));
    return hlo_build_convert(c, s, t, out);
  }
  TRY(oplib_reduce(c, OPLIB_REDUCE_SUM, x, n_axes, axes, keepdims, &s));
  if (count == 1) {
    *out = s;
    return NULL;
  }
  return oplib_binary_scalar(c, HLO_OP_DIVIDE, s, (double)count, out);
}

/* is_nan(v) as v != v (false for non-floats, which need no test). */
static kiln_status is_nan(hlo_computation *c, hlo_instr *v, hlo_instr **out) {
  return hlo_build_compare(c, HLO_DIR_NE, v, v, out);
}

/* The arg-reducer: (acc_v, acc_i, in_v, in_i) -> (v, i) keeping the better pair. */
kiln_status oplib_argminmax_computation(hlo_module *m, hlo_type vt, hlo_type it, bool is_max, bool select_last,
                                        hlo_computation **out) {
  hlo_computation *f = oplib_new_computation(m, is_max ? "argmax" : "argmin");
  hlo_shape sv = shape_scalar(vt), si = shape_scalar(it);
  hlo_instr *av, *ai, *bv, *bi, *better, *equal, *tie, *take, *t1, *rv, *ri, *root;
  TRY(hlo_build_parameter(f, 0, &sv, NULL, &av));
  TRY(hlo_build_parameter(f, 1, &si, NULL, &ai));
  TRY(hlo_build_parameter(f, 2, &sv, NULL, &bv));
  TRY(hlo_build_parameter(f, 3, &si, NULL, &bi));
  TRY(hlo_build_compare(f, is_max ? HLO_DIR_GT : HLO_DIR_LT, bv, av, &better));
  TRY(hlo_build_compare(f, HLO_DIR_EQ, bv, av, &equal));
  if (hlo_type_is_float(vt)) {
    /* NaN beats every number; two NaNs tie. */
    hlo_instr *an, *bn, *not_an, *both;
    TRY(is_nan(f, av, &an));
    TRY(is_nan(f, bv, &bn));
    TRY(hlo_build_unary(f, HLO_OP_NOT, an, &not_an));
    TRY(hlo_build_binary(f, HLO_OP_AND, not_an, better, &better));
    TRY(hlo_build_binary(f, HLO_OP_AND, bn, not_an, &t1));
    TRY(hlo_build_binary(f, HLO_OP_OR, better, t1, &better));
    TRY(hlo_build_binary(f, HLO_OP_AND, an, bn, &both));
    TRY(hlo_build_binary(f, HLO_OP_OR, equal, both, &equal));
  }
  TRY(hlo_build_compare(f, select_last ? HLO_DIR_GT : HLO_DIR_LT, bi, ai, &tie));
  TRY(hlo_build_binary(f, HLO_OP_AND, equal, tie, &t1));
  TRY(hlo_build_binary(f, HLO_OP_OR, better, t1, &take));
  TRY(hlo_build_select(f, take, bv, av, &rv));
  TRY(hlo_build_select(f, take, bi, ai, &ri));
  hlo_instr *pair[2] = {rv, ri};
  TRY(hlo_build_tuple(f, 2, pair, &root));
  TRY(hlo_build_set_root(f, root));
  *out = f;
  return NULL;
}

kiln_status oplib_argminmax(hlo_computation *c, hlo_instr *x, int64_t axis, bool is_max, bool select_last,
                            bool keepdims, hlo_type index_type, hlo_instr **out) {
  hlo_type vt = x->shape.type;
  hlo_shape is = shape_make(index_type, x->shape.rank, x->shape.dims);
  hlo_instr *iota, *init_v, *init_i, *r, *idx;
  TRY(hlo_build_iota(c, &is, axis, &iota));
  TRY(is_max ? oplib_lowest(c, vt, &init_v) : oplib_highest(c, vt, &init_v));
  /* The init index never wins a tie: past the end for "first", before it for "last". */
  if (select_last)
    TRY(oplib_scalar(c, index_type, -1, &init_i));
  else
    TRY(oplib_highest(c, index_type, &init_i));
  hlo_computation *f;
  TRY(oplib_argminmax_computation(c->module, vt, index_type, is_max, select_last, &f));
  hlo_instr *ins[2] = {x, iota}, *inits[2] = {init_v, init_i};
  TRY(hlo_build_reduce(c, 2, ins, inits, 1, &axis, f, &r));
  TRY(hlo_build_get_tuple_element(c, r, 1, &idx));
  if (keepdims) {
    int64_t dims[HLO_MAX_RANK];
    memcpy(dims, x->shape.dims, (size_t)x->shape.rank * sizeof *dims);
    dims[axis] = 1;
    TRY(hlo_build_reshape(c, idx, x->shape.rank, dims, &idx));
  }
  *out = idx;
  return NULL;
}

kiln_status oplib_normalize(hlo_computation *c, hlo_instr *x, int n_axes, const int64_t *axes, double eps,
                            hlo_instr **y, hlo_instr **mean, hlo_instr **inv_std) {
  hlo_instr *m, *mb, *d, *sq, *var, *inv, *invb;
  TRY(oplib_reduce_mean(c, x, n_axes, axes, true, &m));
  TRY(oplib_broadcast_to(c, m, x->shape.rank, x->shape.dims, &mb));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, x, mb, &d));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, d, d, &sq));
  TRY(oplib_reduce_mean(c, sq, n_axes, axes, true, &var));
  TRY(oplib_binary_scalar(c, HLO_OP_ADD, var, eps, &var));
  TRY(hlo_build_unary(c, HLO_OP_RSQRT, var, &inv));
  TRY(oplib_broadcast_to(c, inv, x->shape.rank, x->shape.dims, &invb));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, d, invb, y));
  if (mean) *mean = m;
  if (inv_std) *inv_std = inv;
  return NULL;
}

/* Broadcasts r (x reduced over `axis`) back to x's dims. */
static kiln_status broadcast_back(hlo_computation *c, hlo_instr *r, const hlo_shape *xs, int64_t axis,
                                  hlo_instr **out) {
  int64_t bd[HLO_MAX_RANK];
  int n = 0;
  for (int i = 0; i < xs->rank; i++)
    if (i != axis) bd[n++] = i;
  return hlo_build_broadcast(c, r, xs->rank, xs->dims, n ? bd : NULL, out);
}

kiln_status oplib_softmax(hlo_computation *c, hlo_instr *x, int64_t axis, bool log, hlo_instr **out) {
  hlo_instr *mx, *mxb, *shifted, *e, *sum, *sumb, *r;
  if (!hlo_type_is_float(x->shape.type))
    return ERR_INVALID("softmax needs a floating-point operand, got %s", hlo_type_name(x->shape.type));
  TRY(oplib_reduce(c, OPLIB_REDUCE_MAX, x, 1, &axis, false, &mx));
  TRY(broadcast_back(c, mx, &x->shape, axis, &mxb));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, x, mxb, &shifted));
  TRY(hlo_build_unary(c, HLO_OP_EXP, shifted, &e));
  TRY(oplib_reduce(c, OPLIB_REDUCE_SUM, e, 1, &axis, false, &sum));
  if (log) {
    TRY(hlo_build_unary(c, HLO_OP_LOG, sum, &sum));
    TRY(broadcast_back(c, sum, &x->shape, axis, &sumb));
    TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, shifted, sumb, &r));
  } else {
    TRY(broadcast_back(c, sum, &x->shape, axis, &sumb));
    TRY(hlo_build_binary(c, HLO_OP_DIVIDE, e, sumb, &r));
  }
  *out = r;
  return NULL;
}

/* =============================================================== windows ========== */

bool oplib_parse_auto_pad(const char *s, oplib_auto_pad *out) {
  if (!s || !*s || strcmp(s, "NOTSET") == 0)
    *out = OPLIB_AUTO_PAD_NOTSET;
  else if (strcmp(s, "SAME_UPPER") == 0 || strcmp(s, "SAME") == 0)
    *out = OPLIB_AUTO_PAD_SAME_UPPER;
  else if (strcmp(s, "SAME_LOWER") == 0)
    *out = OPLIB_AUTO_PAD_SAME_LOWER;
  else if (strcmp(s, "VALID") == 0)
    *out = OPLIB_AUTO_PAD_VALID;
  else
    return false;
  return true;
}

static int64_t effective_kernel(const oplib_window *w, int i) { return (w->kernel[i] - 1) * w->dilation[i] + 1; }

kiln_status oplib_window_pads(oplib_window *w, const int64_t *in_spatial, oplib_auto_pad auto_pad,
                              const int64_t *explicit_pads, bool ceil_mode, int64_t *extra_hi) {
  for (int i = 0; i < w->n; i++) {
    if (w->kernel[i] < 1) return ERR_INVALID("kernel size %lld must be positive", (long long)w->kernel[i]);
    if (w->stride[i] < 1) return ERR_INVALID("stride %lld must be positive", (long long)w->stride[i]);
    if (w->dilation[i] < 1) return ERR_INVALID("dilation %lld must be positive", (long long)w->dilation[i]);
    if (w->kernel[i] > (int64_t)1 << 40 || w->dilation[i] > (int64_t)1 << 20)
      return ERR_INVALID("kernel size %lld with dilation %lld is too large", (long long)w->kernel[i],
                         (long long)w->dilation[i]);
    int64_t k = effective_kernel(w, i), in = in_spatial[i], s = w->stride[i];
    if (extra_hi) extra_hi[i] = 0;
    switch (auto_pad) {
      case OPLIB_AUTO_PAD_NOTSET:
        w->pad_lo[i] = explicit_pads ? explicit_pads[i] : 0;
        w->pad_hi[i] = explicit_pads ? explicit_pads[i + w->n] : 0;
        if (w->pad_lo[i] < 0 || w->pad_hi[i] < 0 || w->pad_lo[i] > (int64_t)1 << 40 || w->pad_hi[i] > (int64_t)1 << 40)
          return ERR_INVALID("pads %lld/%lld of spatial dimension %d are out of range", (long long)w->pad_lo[i],
                             (long long)w->pad_hi[i], i);
        break;
      case OPLIB_AUTO_PAD_VALID:
        w->pad_lo[i] = w->pad_hi[i] = 0;
        break;
      default: {
        int64_t out = (in + s - 1) / s;
        int64_t total = (out - 1) * s + k - in;
        if (total < 0) total = 0;
        if (auto_pad == OPLIB_AUTO_PAD_SAME_UPPER) {
          w->pad_lo[i] = total / 2;
          w->pad_hi[i] = total - total / 2;
        } else {
          w->pad_hi[i] = total / 2;
          w->pad_lo[i] = total - total / 2;
        }
        break;
      }
    }
    if (ceil_mode) {
      int64_t padded = in + w->pad_lo[i] + w->pad_hi[i];
      if (padded >= k) {
        int64_t out = (padded - k + s - 1) / s + 1;
        if ((out - 1) * s >= in + w->pad_lo[i]) out--;
        int64_t extra = (out - 1) * s + k - padded;
        if (extra > 0) {
          w->pad_hi[i] += extra;
          if (extra_hi) extra_hi[i] = extra;
        }
      }
    }
  }
  return NULL;
}

void oplib_window_out_dims(const oplib_window *w, const int64_t *in_spatial, int64_t *out) {
  for (int i = 0; i < w->n; i++) {
    int64_t padded = in_spatial[i] + w->pad_lo[i] + w->pad_hi[i], k = effective_kernel(w, i);
    out[i] = padded < k ? 0 : (padded - k) / w->stride[i] + 1;
  }
}

hlo_window oplib_window_to_hlo(const oplib_window *w, int rank, int first_spatial) {
  hlo_window h;
  memset(&h, 0, sizeof h);
  h.rank = rank;
  for (int i = 0; i < rank; i++) {
    hlo_window_dim *d = &h.dims[i];
    d->size = 1;
    d->stride = 1;
    d->lhs_dilate = 1;
    d->rhs_dilate = 1;
    int j = i - first_spatial;
    if (j >= 0 && j < w->n) {
      d->size = w->kernel[j];
      d->stride = w->stride[j];
      d->pad_lo = w->pad_lo[j];
      d->pad_hi = w->pad_hi[j];
      d->rhs_dilate = w->dilation[j];
    }
  }
  return h;
}

hlo_window oplib_conv_window(const oplib_window *w) { return oplib_window_to_hlo(w, w->n, 0); }

hlo_conv_dnums oplib_conv_dnums_nchw(int n_spatial) {
  hlo_conv_dnums d;
  memset(&d, 0, sizeof d);
  d.n_spatial = n_spatial;
  d.input_batch = 0;
  d.input_feature = 1;
  d.kernel_output_feature = 0;
  d.kernel_input_feature = 1;
  d.output_batch = 0;
  d.output_feature = 1;
  for (int i = 0; i < n_spatial; i++) d.input_spatial[i] = d.kernel_spatial[i] = d.output_spatial[i] = 2 + i;
  return d;
}

/* ========================================================== contractions ========== */

kiln_status oplib_matmul(hlo_computation *c, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  int ra = a->shape.rank, rb = b->shape.rank;
  if (ra < 1 || rb < 1) return ERR_INVALID("matmul operands must have rank >= 1 (got ranks %d and %d)", ra, rb);
  bool vec_a = ra == 1, vec_b = rb == 1;
  if (vec_a) {
    int64_t d[2] = {1, a->shape.dims[0]};
    TRY(hlo_build_reshape(c, a, 2, d, &a));
    ra = 2;
  }
  if (vec_b) {
    int64_t d[2] = {b->shape.dims[0], 1};
    TRY(hlo_build_reshape(c, b, 2, d, &b));
    rb = 2;
  }
  int64_t m = a->shape.dims[ra - 2], k = a->shape.dims[ra - 1], k2 = b->shape.dims[rb - 2], n = b->shape.dims[rb - 1];
  if (k != k2) {
    char sa[256], sb[256];
    dims_text(sa, sizeof sa, a->shape.rank, a->shape.dims);
    dims_text(sb, sizeof sb, b->shape.rank, b->shape.dims);
    return ERR_INVALID("matmul of %s and %s: contracting dimensions %lld and %lld differ", sa, sb, (long long)k,
                       (long long)k2);
  }
  int64_t bdims[HLO_MAX_RANK];
  int nb;
  TRY(oplib_broadcast_shape(ra - 2, a->shape.dims, rb - 2, b->shape.dims, &nb, bdims));
  int64_t res[HLO_MAX_RANK];
  memcpy(res, bdims, (size_t)nb * sizeof *res);
  res[nb] = m;
  res[nb + 1] = n;
  hlo_instr *r;
  if (rb == 2 && nb > 0) {
    /* A batch of rows times one matrix: fold the batch into the rows. */
    int64_t rows = 1;
    for (int i = 0; i < ra - 1; i++) rows *= a->shape.dims[i];
    int64_t d2[2] = {rows, k};
    hlo_instr *a2;
    TRY(hlo_build_reshape(c, a, 2, d2, &a2));
    int64_t lc = 1, rc = 0;
    hlo_dot_dnums dn = {.lhs_contracting = {1, &lc}, .rhs_contracting = {1, &rc}};
    TRY(hlo_build_dot(c, a2, b, &dn, HLO_BUILD_DEFAULT_TYPE, &r));
    TRY(hlo_build_reshape(c, r, nb + 2, res, &r));
  } else {
    int64_t full[HLO_MAX_RANK];
    memcpy(full, bdims, (size_t)nb * sizeof *full);
    full[nb] = m;
    full[nb + 1] = k;
    TRY(oplib_broadcast_to(c, a, nb + 2, full, &a));
    full[nb] = k;
    full[nb + 1] = n;
    TRY(oplib_broadcast_to(c, b, nb + 2, full, &b));
    int64_t batch[HLO_MAX_RANK], lc = nb + 1, rc = nb;
    for (int i = 0; i < nb; i++) batch[i] = i;
    hlo_dot_dnums dn = {.lhs_batch = {nb, batch}, .rhs_batch = {nb, batch}, .lhs_contracting = {1, &lc},
                        .rhs_contracting = {1, &rc}};
    TRY(hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &r));
  }
  if (vec_a || vec_b) {
    int64_t d[HLO_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < nb; i++) d[nd++] = bdims[i];
    if (!vec_a) d[nd++] = m;
    if (!vec_b) d[nd++] = n;
    TRY(hlo_build_reshape(c, r, nd, d, &r));
  }
  *out = r;
  return NULL;
}

/* ========================================================== computations ========== */

hlo_computation *oplib_new_computation(hlo_module *m, const char *base) {
  const char *name = base;
  for (int k = 1; hlo_module_find_computation(m, name); k++) name = arena_printf(m->arena, "%s.%d", base, k);
  hlo_computation *c = hlo_computation_new(m, name);
  /* It calls nothing, so placing it first keeps callees before callers. */
  memmove(&m->comps[1], &m->comps[0], (size_t)(m->n_comps - 1) * sizeof *m->comps);
  m->comps[0] = c;
  return c;
}

kiln_status oplib_replace_computation(hlo_module *m, hlo_type t, hlo_computation **out) {
  char base[64];
  snprintf(base, sizeof base, "replace_%s", hlo_type_name(t));
  hlo_computation *f = oplib_new_computation(m, base);
  hlo_shape s = shape_scalar(t);
  hlo_instr *a, *b;
  TRY(hlo_build_parameter(f, 0, &s, NULL, &a));
  TRY(hlo_build_parameter(f, 1, &s, NULL, &b));
  TRY(hlo_build_set_root(f, b));
  *out = f;
  return NULL;
}

kiln_status oplib_topk_comparator(hlo_module *m, hlo_type value_type, hlo_type index_type, bool largest,
                                  hlo_computation **out) {
  hlo_computation *f = oplib_new_computation(m, largest ? "topk_gt" : "topk_lt");
  hlo_shape sv = shape_scalar(value_type), si = shape_scalar(index_type);
  hlo_instr *av, *bv, *ai, *bi, *before, *equal, *tie, *t;
  TRY(hlo_build_parameter(f, 0, &sv, NULL, &av));
  TRY(hlo_build_parameter(f, 1, &sv, NULL, &bv));
  TRY(hlo_build_parameter(f, 2, &si, NULL, &ai));
  TRY(hlo_build_parameter(f, 3, &si, NULL, &bi));
  TRY(hlo_build_compare(f, largest ? HLO_DIR_GT : HLO_DIR_LT, av, bv, &before));
  TRY(hlo_build_compare(f, HLO_DIR_EQ, av, bv, &equal));
  TRY(hlo_build_compare(f, HLO_DIR_LT, ai, bi, &tie));
  if (hlo_type_is_float(value_type)) {
    /* NaN sorts beyond every number: first when largest, last when smallest. */
    hlo_instr *an, *bn, *both, *one;
    TRY(is_nan(f, av, &an));
    TRY(is_nan(f, bv, &bn));
    TRY(hlo_build_binary(f, HLO_OP_AND, an, bn, &both));
    TRY(hlo_build_binary(f, HLO_OP_OR, equal, both, &equal));
    hlo_instr *not_other;
    TRY(hlo_build_unary(f, HLO_OP_NOT, largest ? bn : an, &not_other));
    TRY(hlo_build_binary(f, HLO_OP_AND, largest ? an : bn, not_other, &one));
    TRY(hlo_build_binary(f, HLO_OP_OR, before, one, &before));
  }
  TRY(hlo_build_binary(f, HLO_OP_AND, equal, tie, &t));
  TRY(hlo_build_binary(f, HLO_OP_OR, before, t, &t));
  TRY(hlo_build_set_root(f, t));
  *out = f;
  return NULL;
}

kiln_status oplib_topk(hlo_computation *c, hlo_instr *x, int64_t axis, int64_t k, bool largest, hlo_type index_type,
                       hlo_instr **values, hlo_instr **indices) {
  if (k < 0 || k > x->shape.dims[axis])
    return ERR_INVALID("k=%lld is outside [0, %lld]", (long long)k, (long long)x->shape.dims[axis]);
  hlo_shape is = shape_make(index_type, x->shape.rank, x->shape.dims);
  hlo_instr *iota, *sorted, *v, *i;
  TRY(hlo_build_iota(c, &is, axis, &iota));
  hlo_computation *cmp;
  TRY(oplib_topk_comparator(c->module, x->shape.type, index_type, largest, &cmp));
  hlo_instr *ops[2] = {x, iota};
  TRY(hlo_build_sort(c, 2, ops, axis, true, cmp, &sorted));
  TRY(hlo_build_get_tuple_element(c, sorted, 0, &v));
  TRY(hlo_build_get_tuple_element(c, sorted, 1, &i));
  TRY(oplib_slice_axis(c, v, (int)axis, 0, k, values));
  TRY(oplib_slice_axis(c, i, (int)axis, 0, k, indices));
  return NULL;
}

/* ======================================================= constant inputs ========== */

kiln_status oplib_tensor_ints(const graph_tensor *t, const char *what, int64_t *buf, int cap, int *n) {
  if (!t) return ERR_INVALID("%s is not a compile-time constant", what);
  if (!graph_dtype_is_int(t->dtype))
    return ERR_INVALID("%s must be an integer tensor, got %s", what, graph_dtype_name(t->dtype));
  if (t->n > cap)
    return ERR_INVALID("%s has %lld values; at most %d are supported", what, (long long)t->n, cap);
  for (int64_t i = 0; i < t->n; i++) buf[i] = tensor_get_s64(t, i);
  *n = (int)t->n;
  return NULL;
}

kiln_status oplib_tensor_scalar(const graph_tensor *t, const char *what, double *out) {
  if (!t) return ERR_INVALID("%s is not a compile-time constant", what);
  hlo_type h;
  if (!graph_dtype_to_hlo(t->dtype, &h)) return ERR_INVALID("%s has non-numeric type %s", what, graph_dtype_name(t->dtype));
  if (t->n != 1) return ERR_INVALID("%s must have exactly one element, has %lld", what, (long long)t->n);
  *out = tensor_get_f64(t, 0);
  return NULL;
}

/* ===================================================== ONNX conventions ========== */

hlo_instr *onnx_input(const op_lower_ctx *ctx, int onnx_position) {
  int i = onnx_input_index(ctx->node, onnx_position);
  return i >= 0 && i < ctx->n_inputs && ctx->inputs ? ctx->inputs[i] : NULL;
}

const graph_tensor *onnx_const_input(const op_lower_ctx *ctx, int onnx_position) {
  int i = onnx_input_index(ctx->node, onnx_position);
  return i >= 0 && i < ctx->n_inputs && ctx->const_inputs ? ctx->const_inputs[i] : NULL;
}

kiln_status onnx_optional_value(op_lower_ctx *ctx, int onnx_position, hlo_instr **out) {
  *out = onnx_input(ctx, onnx_position);
  const graph_tensor *t = *out ? NULL : onnx_const_input(ctx, onnx_position);
  if (t) OPLIB_TRY(ctx->node, oplib_const_tensor(ctx->comp, t, out));
  return NULL;
}

kiln_status onnx_set_output(op_lower_ctx *ctx, int i, hlo_instr *v) {
  if (i < ctx->n_outputs) ctx->outputs[i] = v;
  return NULL;
}

kiln_status onnx_require_float(op_lower_ctx *ctx, const hlo_instr *x, const char *what) {
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be a floating-point tensor, got %s", what,
                    hlo_type_name(x->shape.type));
  return NULL;
}

hlo_type onnx_compute_type(hlo_type t) { return (t == HLO_F16 || t == HLO_BF16) ? HLO_F32 : t; }

graph_dtype onnx_input_dtype(const op_lower_ctx *ctx, int onnx_position) {
  int i = onnx_input_index(ctx->node, onnx_position);
  return i >= 0 && i < ctx->n_inputs && ctx->input_dtypes ? ctx->input_dtypes[i] : GRAPH_DT_INVALID;
}

bool onnx_has_input(const op_lower_ctx *ctx, int onnx_position) {
  int i = onnx_input_index(ctx->node, onnx_position);
  return i >= 0 && i < ctx->n_inputs;
}

graph_tensor *onnx_host_input(const op_host_ctx *ctx, int onnx_position) {
  int i = onnx_input_index(ctx->node, onnx_position);
  return i >= 0 && i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

kiln_status onnx_require_input(const op_lower_ctx *ctx, int onnx_position, hlo_instr **out) {
  *out = onnx_input(ctx, onnx_position);
  if (*out) return NULL;
  if (onnx_const_input(ctx, onnx_position)) {
    /* Given by value only: make it a constant. */
    return oplib_const_tensor(ctx->comp, onnx_const_input(ctx, onnx_position), out);
  }
  return op_error(ctx->node, KILN_INVALID_ARGUMENT, "required input %d is missing", onnx_position);
}

kiln_status onnx_require_const(const op_lower_ctx *ctx, int onnx_position, const char *what,
                               const graph_tensor **out) {
  *out = onnx_const_input(ctx, onnx_position);
  if (*out) return NULL;
  if (!onnx_has_input(ctx, onnx_position))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "required input %d (%s) is missing", onnx_position, what);
  return op_error(ctx->node, KILN_UNIMPLEMENTED, "input %d (%s) must be a compile-time constant", onnx_position,
                  what);
}

const char *onnx_attr_string(const graph_node *node, const char *name, const char *dflt) {
  const graph_attr_value *a = graph_node_attr(node, name);
  if (!a || a->kind != GRAPH_ATTR_STRING || !a->s.data) return dflt;
  return a->s.data;
}

kiln_status onnx_attr_ints(const graph_node *node, const char *name, int64_t *buf, int cap, int *n, bool *present) {
  const graph_attr_value *a = graph_node_attr(node, name);
  *n = 0;
  if (present) *present = a != NULL;
  if (!a) return NULL;
  if (a->kind == GRAPH_ATTR_INT) {
    if (cap < 1) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has too many values", name);
    buf[0] = a->i;
    *n = 1;
    return NULL;
  }
  if (a->kind != GRAPH_ATTR_LIST || (a->list.n > 0 && a->list.elem != GRAPH_ATTR_INT))
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a list of ints", name);
  if (a->list.n > cap)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has %d values; at most %d are supported", name,
                    a->list.n, cap);
  for (int i = 0; i < a->list.n; i++) buf[i] = a->list.items[i].i;
  *n = a->list.n;
  return NULL;
}

kiln_status onnx_attr_floats(const graph_node *node, const char *name, double *buf, int cap, int *n, bool *present) {
  const graph_attr_value *a = graph_node_attr(node, name);
  *n = 0;
  if (present) *present = a != NULL;
  if (!a) return NULL;
  if (a->kind == GRAPH_ATTR_FLOAT || a->kind == GRAPH_ATTR_INT) {
    if (cap < 1) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has too many values", name);
    buf[0] = a->kind == GRAPH_ATTR_FLOAT ? a->f : (double)a->i;
    *n = 1;
    return NULL;
  }
  if (a->kind != GRAPH_ATTR_LIST ||
      (a->list.n > 0 && a->list.elem != GRAPH_ATTR_FLOAT && a->list.elem != GRAPH_ATTR_INT))
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a list of floats", name);
  if (a->list.n > cap)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has %d values; at most %d are supported", name,
                    a->list.n, cap);
  for (int i = 0; i < a->list.n; i++)
    buf[i] = a->list.items[i].kind == GRAPH_ATTR_FLOAT ? a->list.items[i].f : (double)a->list.items[i].i;
  *n = a->list.n;
  return NULL;
}

/* TensorProto.DataType's enum names, at their numbers (ONNX's onnx.proto). */
static const char *const onnx_type_names[] = {
    "UNDEFINED",      "FLOAT",      "UINT8",        "INT8",           "UINT16",     "INT16",
    "INT32",          "INT64",      "STRING",       "BOOL",           "FLOAT16",    "DOUBLE",
    "UINT32",         "UINT64",     "COMPLEX64",    "COMPLEX128",     "BFLOAT16",   "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",        "INT4",       "FLOAT4E2M1",
    "FLOAT8E8M0",     "UINT2",      "INT2",         "FLOAT6E2M3",     "FLOAT6E3M2"};
enum { ONNX_TYPE_NAMES = (int)(sizeof onnx_type_names / sizeof onnx_type_names[0]) };

static graph_dtype onnx_dtype_from_name(const char *s, size_t n) {
  for (int i = 1; i < ONNX_TYPE_NAMES; i++)
    if (strlen(onnx_type_names[i]) == n && memcmp(onnx_type_names[i], s, n) == 0) return graph_dtype_from_onnx(i);
  return GRAPH_DT_INVALID;
}

kiln_status onnx_attr_dtype(const graph_node *node, const char *name, graph_dtype *out) {
  const graph_attr_value *a = graph_node_attr(node, name);
  if (!a) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s is missing", name);
  if (a->kind == GRAPH_ATTR_TYPE)
    *out = a->type;
  else if (a->kind == GRAPH_ATTR_INT)
    *out = graph_dtype_from_onnx((int)(a->i >= 0 && a->i < 1000 ? a->i : 0));
  else if (a->kind == GRAPH_ATTR_STRING) /* Cast-1 names its target: "FLOAT", "INT64"... */
    *out = onnx_dtype_from_name(a->s.data, a->s.len);
  else
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a data type", name);
  if (*out == GRAPH_DT_INVALID && a->kind == GRAPH_ATTR_INT && a->i > 0 && a->i < ONNX_TYPE_NAMES)
    return op_error(node, KILN_UNIMPLEMENTED, "attribute %s names data type %s (%lld), which kiln does not support",
                    name, onnx_type_names[a->i], (long long)a->i);
  if (*out == GRAPH_DT_INVALID)
    return op_error(node, KILN_UNIMPLEMENTED, "attribute %s names an unsupported data type", name);
  return NULL;
}

kiln_status onnx_ints_attr_or_input(const op_lower_ctx *ctx, const char *attr, int onnx_position, int64_t *buf,
                                    int cap, int *n, bool *present) {
  bool have;
  TRY(onnx_attr_ints(ctx->node, attr, buf, cap, n, &have));
  if (have) {
    *present = true;
    return NULL;
  }
  *present = false;
  *n = 0;
  if (!onnx_has_input(ctx, onnx_position)) return NULL;
  const graph_tensor *t = onnx_const_input(ctx, onnx_position);
  if (!t)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input %d (%s) must be a compile-time constant", onnx_position,
                    attr);
  OPLIB_TRY(ctx->node, oplib_tensor_ints(t, attr, buf, cap, n));
  *present = true;
  return NULL;
}

kiln_status onnx_input_hlo_type(const op_lower_ctx *ctx, int onnx_position, hlo_type *out) {
  hlo_instr *x = onnx_input(ctx, onnx_position);
  if (x) {
    *out = x->shape.type;
    return NULL;
  }
  graph_dtype d = onnx_input_dtype(ctx, onnx_position);
  const graph_tensor *t = onnx_const_input(ctx, onnx_position);
  if (d == GRAPH_DT_INVALID && t) d = t->dtype;
  if (!graph_dtype_to_hlo(d, out))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "input %d has type %s, which HLO cannot represent", onnx_position,
                    graph_dtype_name(d));
  return NULL;
}
