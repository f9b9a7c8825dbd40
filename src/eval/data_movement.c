/* Evaluator kernels that only move elements: broadcast, reshape, transpose, slice,
 * dynamic-slice, dynamic-update-slice, concatenate, pad, reverse, and iota (which makes
 * values from positions). None of them looks at element values, so they copy raw bytes
 * of hlo_type_size and work for every element type alike.
 *
 * Most of them are one "strided copy": walk an index space in row-major order, reading
 * the source and writing the destination at an offset plus per-dimension strides
 * (negative for reverse, zero for broadcast). A copy plan first drops unit dimensions and
 * merges dimensions that are contiguous in both buffers, so a slice of whole rows or a
 * concatenation along dimension 0 becomes a handful of memcpy calls instead of a loop
 * per element. The verifier has checked shapes, but every kernel re-checks the facts its
 * memory accesses rely on (types, bounds), so a module that slipped past verification
 * is an error, never an out-of-bounds access. */
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

/* ---- overflow-checked arithmetic (attribute values come from user files) ---- */

static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* ---- strided copy plans ---- */

typedef struct copy_plan {
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int64_t dst_strides[HLO_MAX_RANK]; /* in elements */
  int64_t src_strides[HLO_MAX_RANK];
  int64_t dst_offset, src_offset;
} copy_plan;

/* Drops unit dimensions and merges neighbours that are contiguous in both buffers, so
 * the innermost dimension is as long as possible. Returns false when the index space is
 * empty (nothing to copy). */
static bool plan_simplify(copy_plan *p) {
  int r = 0;
  for (int d = 0; d < p->rank; d++) {
    if (p->dims[d] == 0) return false;
    if (p->dims[d] == 1) continue;
    if (r > 0 && p->dst_strides[r - 1] == p->dst_strides[d] * p->dims[d] &&
        p->src_strides[r - 1] == p->src_strides[d] * p->dims[d]) {
      p->dims[r - 1] *= p->dims[d];
      p->dst_strides[r - 1] = p->dst_strides[d];
      p->src_strides[r - 1] = p->src_strides[d];
      continue;
    }
    p->dims[r] = p->dims[d];
    p->dst_strides[r] = p->dst_strides[d];
    p->src_strides[r] = p->src_strides[d];
    r++;
  }
  p->rank = r;
  return true;
}

/* One innermost run. The fixed-size memcpy per case compiles to a plain load/store. */
static void copy_run(char *dst, int64_t dst_stride, const char *src, int64_t src_stride, int64_t n,
                     size_t esize) {
  if (dst_stride == 1 && src_stride == 1) {
    memcpy(dst, src, (size_t)n * esize);
    return;
  }
  int64_t ds = dst_stride * (int64_t)esize, ss = src_stride * (int64_t)esize;
  switch (esize) {
#define RUN_CASE(size)                                          \
  case size:                                                    \
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * ds, src + i * ss, size); \
    return;
    RUN_CASE(1)
    RUN_CASE(2)
    RUN_CASE(4)
    RUN_CASE(8)
#undef RUN_CASE
    default:
      for (int64_t i = 0; i < n; i++) memcpy(dst + i * ds, src + i * ss, esize);
      return;
  }
}

static void plan_run(copy_plan p, void *dst, const void *src, size_t esize) {
  if (!plan_simplify(&p)) return;
  char *d = (char *)dst;
  const char *s = (const char *)src;
  if (p.rank == 0) {
    eval_copy_element(d, p.dst_offset, s, p.src_offset, esize);
    return;
  }
  int inner = p.rank - 1;
  int64_t idx[HLO_MAX_RANK] = {0};
  int64_t doff = p.dst_offset, soff = p.src_offset;
  for (;;) {
    copy_run(d + doff * (int64_t)esize, p.dst_strides[inner], s + soff * (int64_t)esize, p.src_strides[inner],
             p.dims[inner], esize);
    int dim = inner - 1;
    for (; dim >= 0; dim--) {
      doff += p.dst_strides[dim];
      soff += p.src_strides[dim];
      if (++idx[dim] < p.dims[dim]) break;
      doff -= p.dst_strides[dim] * p.dims[dim];
      soff -= p.src_strides[dim] * p.dims[dim];
      idx[dim] = 0;
    }
    if (dim < 0) return;
  }
}

/* A plan whose destination is a whole row-major array of shape `dims`. */
static void plan_init_dense_dst(copy_plan *p, int rank, const int64_t *dims) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    p->dims[d] = dims[d];
    p->dst_strides[d] = stride;
    stride *= dims[d];
  }
}

/* Fills every element of l with the scalar value at `value` by doubling copies. */
static void fill_with_element(hlo_literal *l, const void *value) {
  size_t esize = hlo_type_size(l->shape.type);
  if (l->n == 0 || esize == 0) return;
  char *d = (char *)l->data;
  memcpy(d, value, esize);
  size_t done = esize, total = (size_t)l->n * esize;
  while (done < total) {
    size_t chunk = done < total - done ? done : total - done;
    memcpy(d + done, d, chunk);
    done += chunk;
  }
}

/* ---- shared checks ---- */

static kiln_status check_array_operand(const hlo_instr *ins, const hlo_literal *op, int i) {
  if (!op || op->shape.type == HLO_TUPLE || op->shape.type == HLO_TOKEN)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d is not an array", i);
  if (op->shape.type != ins->shape.type)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d has element type %s, result has %s", i,
                    hlo_type_name(op->shape.type), hlo_type_name(ins->shape.type));
  return NULL;
}

static kiln_status check_result_array(const hlo_instr *ins) {
  if (!hlo_type_is_array(ins->shape.type))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape is not an array");
  return NULL;
}

static kiln_status check_operand_count(const hlo_instr *ins, int want) {
  if (ins->n_operands != want)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected %d operands, got %d", want, ins->n_operands);
  return NULL;
}

/* Reads a scalar start index of any integer type, saturating unsigned values above
 * INT64_MAX (they are clamped to the valid range afterwards anyway). */
static kiln_status read_index(const hlo_instr *ins, const hlo_literal *l, int64_t i, int64_t *out) {
  hlo_type t = l->shape.type;
  if (!hlo_type_is_int(t))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "start index has element type %s, expected an integer type",
                    hlo_type_name(t));
  *out = hlo_index_at(t, l->data, i);
  return NULL;
}

/* Start indices of dynamic-(update-)slice: one scalar per dimension from operand `first`
 * on, or (the older form) one rank-1 vector. Each is clamped to [0, dim - size] as XLA
 * does, so the slice always lies inside the operand. */
static kiln_status read_start_indices(const hlo_instr *ins, hlo_literal *const *ops, int first, int rank,
                                      const int64_t *dims, const int64_t *sizes, int64_t *starts) {
  int n_idx = ins->n_operands - first;
  if (n_idx == 1 && ops[first]->shape.type != HLO_TUPLE && ops[first]->shape.rank == 1) {
    const hlo_literal *v = ops[first];
    if (v->n != rank)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "start index vector has %lld elements, expected %d",
                      (long long)v->n, rank);
    for (int d = 0; d < rank; d++) TRY(read_index(ins, v, d, &starts[d]));
  } else {
    if (n_idx != rank)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected %d start indices, got %d", rank, n_idx);
    for (int d = 0; d < rank; d++) {
      const hlo_literal *s = ops[first + d];
      if (!hlo_type_is_array(s->shape.type) || s->n != 1 || s->shape.rank != 0)
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "start index %d is not a scalar", d);
      TRY(read_index(ins, s, 0, &starts[d]));
    }
  }
  for (int d = 0; d < rank; d++) {
    int64_t hi = dims[d] - sizes[d];
    if (starts[d] > hi) starts[d] = hi;
    if (starts[d] < 0) starts[d] = 0;
  }
  return NULL;
}

/* ---- kernels ---- */

kiln_status eval_broadcast(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  TRY(check_operand_count(ins, 1));
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  const hlo_shape *os = &ins->shape;
  if (ins->dimensions.n != in->shape.rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimensions has %d entries for an operand of rank %d",
                    ins->dimensions.n, in->shape.rank);
  copy_plan p;
  plan_init_dense_dst(&p, os->rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  bool mapped[HLO_MAX_RANK] = {false};
  for (int i = 0; i < in->shape.rank; i++) {
    int64_t od = ins->dimensions.v[i];
    /* XLA also accepts a size-1 operand dimension broadcast into any output size */
    if (od < 0 || od >= os->rank || mapped[od] || (os->dims[od] != in->shape.dims[i] && in->shape.dims[i] != 1))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimensions[%d]=%lld does not map operand dimension %d", i,
                      (long long)od, i);
    mapped[od] = true;
    /* unmapped output dimensions, and size-1 operand dimensions, keep stride 0 */
    p.src_strides[od] = in->shape.dims[i] == 1 ? 0 : in_strides[i];
  }
  TRY(literal_create(os, out));
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_reshape(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  if (ins->n_operands < 1) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "missing operand");
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  TRY(literal_create(&ins->shape, out));
  if ((*out)->n != in->n) {
    literal_free(*out);
    *out = NULL;
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand has %lld elements, result %lld", (long long)in->n,
                    (long long)shape_elements(&ins->shape));
  }
  if (in->n) memcpy((*out)->data, in->data, (size_t)in->n * hlo_type_size(in->shape.type));
  return NULL;
}

kiln_status eval_transpose(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  TRY(check_operand_count(ins, 1));
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  const hlo_shape *os = &ins->shape;
  int rank = in->shape.rank;
  if (ins->dimensions.n != rank || os->rank != rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimensions is not a permutation of the operand's %d dimensions",
                    rank);
  copy_plan p;
  plan_init_dense_dst(&p, rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  bool seen[HLO_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    int64_t d = ins->dimensions.v[i];
    if (d < 0 || d >= rank || seen[d] || in->shape.dims[d] != os->dims[i])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimensions[%d]=%lld is not a valid permutation entry", i,
                      (long long)d);
    seen[d] = true;
    p.src_strides[i] = in_strides[d];
  }
  TRY(literal_create(os, out));
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  TRY(check_operand_count(ins, 1));
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  const hlo_shape *os = &ins->shape;
  int rank = in->shape.rank;
  if (os->rank != rank || ins->slice_start.n != rank || ins->slice_limit.n != rank ||
      (ins->slice_stride.n != rank && ins->slice_stride.n != 0))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice has the wrong number of dimensions for rank %d", rank);
  copy_plan p;
  plan_init_dense_dst(&p, rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  for (int d = 0; d < rank; d++) {
    int64_t start = ins->slice_start.v[d], limit = ins->slice_limit.v[d];
    int64_t stride = ins->slice_stride.n ? ins->slice_stride.v[d] : 1;
    if (start < 0 || start > limit || limit > in->shape.dims[d] || stride < 1)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice [%lld:%lld:%lld] is invalid for dimension %d of size %lld",
                      (long long)start, (long long)limit, (long long)stride, d, (long long)in->shape.dims[d]);
    int64_t want = (limit - start) / stride + ((limit - start) % stride != 0);
    if (want != os->dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice of dimension %d has %lld elements, result has %lld", d,
                      (long long)want, (long long)os->dims[d]);
    p.src_offset += start * in_strides[d];
    p.src_strides[d] = stride * in_strides[d]; /* < product of dims: cannot overflow */
  }
  TRY(literal_create(os, out));
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_dynamic_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  if (ins->n_operands < 1) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "missing operand");
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  const hlo_shape *os = &ins->shape;
  int rank = in->shape.rank;
  if (os->rank != rank) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result rank differs from operand rank");
  for (int d = 0; d < rank; d++)
    if (os->dims[d] > in->shape.dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice size %lld exceeds dimension %d of size %lld",
                      (long long)os->dims[d], d, (long long)in->shape.dims[d]);
  int64_t starts[HLO_MAX_RANK];
  TRY(read_start_indices(ins, ops, 1, rank, in->shape.dims, os->dims, starts));
  copy_plan p;
  plan_init_dense_dst(&p, rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  for (int d = 0; d < rank; d++) {
    p.src_offset += starts[d] * in_strides[d];
    p.src_strides[d] = in_strides[d];
  }
  TRY(literal_create(os, out));
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_dynamic_update_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                      hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  if (ins->n_operands < 2) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected operand and update");
  const hlo_literal *in = ops[0], *upd = ops[1];
  TRY(check_array_operand(ins, in, 0));
  TRY(check_array_operand(ins, upd, 1));
  int rank = in->shape.rank;
  if (!shape_same_dims(&in->shape, &ins->shape) || upd->shape.rank != rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand, update and result ranks/dims disagree");
  for (int d = 0; d < rank; d++)
    if (upd->shape.dims[d] > in->shape.dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "update size %lld exceeds dimension %d of size %lld",
                      (long long)upd->shape.dims[d], d, (long long)in->shape.dims[d]);
  int64_t starts[HLO_MAX_RANK];
  TRY(read_start_indices(ins, ops, 2, rank, in->shape.dims, upd->shape.dims, starts));
  TRY(literal_create(&ins->shape, out));
  size_t esize = hlo_type_size(in->shape.type);
  if (in->n) memcpy((*out)->data, in->data, (size_t)in->n * esize);
  copy_plan p;
  memset(&p, 0, sizeof p);
  p.rank = rank;
  int64_t in_strides[HLO_MAX_RANK], upd_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  shape_strides(&upd->shape, upd_strides);
  for (int d = 0; d < rank; d++) {
    p.dims[d] = upd->shape.dims[d];
    p.dst_strides[d] = in_strides[d];
    p.src_strides[d] = upd_strides[d];
    p.dst_offset += starts[d] * in_strides[d];
  }
  plan_run(p, (*out)->data, upd->data, esize);
  return NULL;
}

kiln_status eval_concatenate(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  const hlo_shape *os = &ins->shape;
  int rank = os->rank;
  if (ins->dimensions.n < 1 || ins->dimensions.v[0] < 0 || ins->dimensions.v[0] >= rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "concatenate needs a dimension in [0, %d)", rank);
  int cd = (int)ins->dimensions.v[0];
  int64_t total = 0;
  for (int i = 0; i < ins->n_operands; i++) {
    const hlo_literal *op = ops[i];
    TRY(check_array_operand(ins, op, i));
    if (op->shape.rank != rank)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d has rank %d, expected %d", i, op->shape.rank, rank);
    for (int d = 0; d < rank; d++)
      if (d != cd && op->shape.dims[d] != os->dims[d])
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d dimension %d is %lld, expected %lld", i, d,
                        (long long)op->shape.dims[d], (long long)os->dims[d]);
    if (!add_ok(total, op->shape.dims[cd], &total)) total = INT64_MAX;
  }
  if (total != os->dims[cd])
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operands sum to %lld along dimension %d, result has %lld",
                    (long long)total, cd, (long long)os->dims[cd]);
  TRY(literal_create(os, out));
  int64_t out_strides[HLO_MAX_RANK];
  shape_strides(os, out_strides);
  size_t esize = hlo_type_size(os->type);
  int64_t at = 0;
  for (int i = 0; i < ins->n_operands; i++) {
    const hlo_literal *op = ops[i];
    copy_plan p;
    memset(&p, 0, sizeof p);
    p.rank = rank;
    int64_t in_strides[HLO_MAX_RANK];
    shape_strides(&op->shape, in_strides);
    for (int d = 0; d < rank; d++) {
      p.dims[d] = op->shape.dims[d];
      p.dst_strides[d] = out_strides[d];
      p.src_strides[d] = in_strides[d];
    }
    p.dst_offset = at * out_strides[cd];
    plan_run(p, (*out)->data, op->data, esize);
    at += op->shape.dims[cd];
  }
  return NULL;
}

/* Where operand elements land along one padded dimension: output position
 * lo + i * (interior + 1) for operand index i, kept only when inside [0, out_dim). Finds
 * the first kept i and how many are kept, without overflow for any attribute values. */
static bool pad_dim_range(int64_t in_dim, int64_t out_dim, int64_t lo, int64_t step, int64_t *first,
                          int64_t *count, int64_t *out_first) {
  *count = 0;
  *first = 0;
  *out_first = 0;
  if (in_dim == 0 || out_dim == 0) return true;
  int64_t i0 = 0;
  if (lo < 0) i0 = (-(lo + 1)) / step + 1; /* ceil(-lo / step) */
  if (i0 >= in_dim) return true;
  int64_t room; /* out_dim - 1 - lo; overflows only for very negative lo (room is huge) */
  int64_t i_end = in_dim;
  if (!__builtin_sub_overflow(out_dim - 1, lo, &room)) {
    if (room < 0) return true;
    if (room / step + 1 < i_end) i_end = room / step + 1;
  }
  if (i_end <= i0) return true;
  int64_t pos;
  if (!mul_ok(i0, step, &pos) || !add_ok(pos, lo, &pos)) return false;
  *first = i0;
  *count = i_end - i0;
  *out_first = pos;
  return true;
}

kiln_status eval_pad(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  TRY(check_operand_count(ins, 2));
  const hlo_literal *in = ops[0], *pv = ops[1];
  TRY(check_array_operand(ins, in, 0));
  TRY(check_array_operand(ins, pv, 1));
  if (pv->n != 1) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "padding value is not a scalar");
  const hlo_shape *os = &ins->shape;
  int rank = in->shape.rank;
  bool no_config = ins->pad_lo.n == 0 && ins->pad_hi.n == 0 && ins->pad_interior.n == 0;
  if (os->rank != rank ||
      (!no_config && (ins->pad_lo.n != rank || ins->pad_hi.n != rank || ins->pad_interior.n != rank)))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "padding config does not match operand rank %d", rank);
  copy_plan p;
  plan_init_dense_dst(&p, rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  for (int d = 0; d < rank; d++) {
    int64_t lo = no_config ? 0 : ins->pad_lo.v[d], hi = no_config ? 0 : ins->pad_hi.v[d];
    int64_t interior = no_config ? 0 : ins->pad_interior.v[d];
    int64_t in_dim = in->shape.dims[d], want, step;
    if (interior < 0 || !add_ok(interior, 1, &step) ||
        !mul_ok(in_dim > 0 ? in_dim - 1 : 0, interior, &want) || !add_ok(want, in_dim, &want) ||
        !add_ok(want, lo, &want) || !add_ok(want, hi, &want) || want != os->dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "padding %lld_%lld_%lld of dimension %d (size %lld) does not give %lld",
                      (long long)lo, (long long)hi, (long long)interior, d, (long long)in_dim,
                      (long long)os->dims[d]);
    int64_t first, count, out_first;
    if (!pad_dim_range(in_dim, os->dims[d], lo, step, &first, &count, &out_first))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "padding of dimension %d overflows", d);
    p.dims[d] = count;
    p.src_offset += first * in_strides[d];
    p.dst_offset += out_first * p.dst_strides[d];
    /* with count > 1, (count - 1) * step * stride lies inside the output: no overflow */
    p.dst_strides[d] = count > 1 ? p.dst_strides[d] * step : 0;
    p.src_strides[d] = in_strides[d];
  }
  TRY(literal_create(os, out));
  fill_with_element(*out, pv->data);
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_reverse(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  TRY(check_result_array(ins));
  TRY(check_operand_count(ins, 1));
  const hlo_literal *in = ops[0];
  TRY(check_array_operand(ins, in, 0));
  const hlo_shape *os = &ins->shape;
  if (!shape_same_dims(&in->shape, os))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result dims differ from operand dims");
  int rank = os->rank;
  copy_plan p;
  plan_init_dense_dst(&p, rank, os->dims);
  int64_t in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  for (int d = 0; d < rank; d++) p.src_strides[d] = in_strides[d];
  bool reversed[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->dimensions.n; i++) {
    int64_t d = ins->dimensions.v[i];
    if (d < 0 || d >= rank)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimension %lld out of range for rank %d", (long long)d, rank);
    reversed[d] = true; /* a dimension listed twice is still reversed once */
  }
  for (int d = 0; d < rank; d++) {
    if (!reversed[d] || os->dims[d] == 0) continue;
    p.src_offset += (os->dims[d] - 1) * in_strides[d];
    p.src_strides[d] = -in_strides[d];
  }
  TRY(literal_create(os, out));
  plan_run(p, (*out)->data, in->data, hlo_type_size(os->type));
  return NULL;
}

kiln_status eval_iota(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  (void)ops;
  TRY(check_result_array(ins));
  const hlo_shape *os = &ins->shape;
  int64_t dim = ins->iota_dimension;
  if (dim < 0 || dim >= os->rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "iota_dimension %lld out of range for rank %d", (long long)dim,
                    os->rank);
  TRY(literal_create(os, out));
  hlo_literal *res = *out;
  if (res->n == 0) return NULL;
  /* One element per value along the iota dimension, converted once (literal_set_* round
     floats and wrap integers exactly like convert from s64), then replicated. */
  int64_t len = os->dims[dim];
  hlo_shape row_shape = shape_make(os->type, 1, &len);
  hlo_literal *row;
  kiln_status st = literal_create(&row_shape, &row);
  if (st) {
    literal_free(res);
    *out = NULL;
    return st;
  }
  for (int64_t i = 0; i < len; i++) literal_set_s64(row, i, i);
  int64_t inner = 1, outer = 1;
  for (int d = (int)dim + 1; d < os->rank; d++) inner *= os->dims[d];
  for (int d = 0; d < dim; d++) outer *= os->dims[d];
  size_t esize = hlo_type_size(os->type);
  char *dst = (char *)res->data;
  const char *src = (const char *)row->data;
  /* Write rows of the form [v0 x inner, v1 x inner, ...] once, then copy to every outer. */
  for (int64_t k = 0; k < len; k++) {
    char *run = dst + k * inner * (int64_t)esize;
    memcpy(run, src + k * (int64_t)esize, esize);
    size_t done = esize, total = (size_t)inner * esize;
    while (done < total) {
      size_t chunk = done < total - done ? done : total - done;
      memcpy(run + done, run, chunk);
      done += chunk;
    }
  }
  size_t block = (size_t)(len * inner) * esize;
  for (int64_t o = 1; o < outer; o++) memcpy(dst + (size_t)o * block, dst, block);
  literal_free(row);
  return NULL;
}
