/* Algebraic simplification: local rewrites that make real models smaller without ever
 * changing a result bit (the reference evaluator is the judge; the equivalence test runs
 * every corpus module before and after). Each rule below states why it is exact. Rules
 * that XLA applies but that are not bit-exact are deliberately absent: x*0 -> 0 on floats
 * (NaN*0 and inf*0 are NaN, -x*0 is -0), x+(+0) -> x on floats (-0 + +0 is +0), and
 * reassociations. NaN payloads are the one thing not tracked: IEEE leaves the payload of
 * an arithmetic NaN result unspecified, and the rules that drop an arithmetic op on
 * floats (x*1, x/1, x-0, x+(-0)) return x's NaN unchanged, which any quieting policy
 * accepts.
 *
 * Bypassed instructions are left in place; DCE removes them. New instructions are made
 * with the builder (shape-checked), and a builder refusal just means the rule does not
 * fire. Rewrites may append replacements after their users, so each changed computation
 * is put back in definition order at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/literal.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* A builder call that may fail: failure only means "do not simplify". */
static hlo_instr *try_build(kiln_status s, hlo_instr **out) {
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  return *out;
}

static bool is_int_like(hlo_type t) { return hlo_type_is_int(t); }

/* x + 0 (ints) / x + (-0.0) (floats): -0.0 is the additive identity of IEEE addition for
 * every x including +-0 and +-inf; +0.0 is not (-0 + +0 = +0). */
static bool is_additive_identity(const hlo_instr *z) {
  hlo_type t = z->shape.type;
  if (is_int_like(t)) return hlo_pass_is_int_constant(z, 0);
  if (hlo_type_is_float(t)) return hlo_pass_is_float_constant(z, 0.0, true);
  return false;
}

/* x - (+0.0) = x for every float x (-0 - +0 = -0); ints: x - 0 = x. */
static bool is_subtractive_identity(const hlo_instr *z) {
  hlo_type t = z->shape.type;
  if (is_int_like(t)) return hlo_pass_is_int_constant(z, 0);
  if (hlo_type_is_float(t)) return hlo_pass_is_float_constant(z, 0.0, false);
  return false;
}

/* x * 1 and x / 1 are exact in IEEE arithmetic (the result is x, sign included) and in
 * wrapping integer arithmetic. */
static bool is_one(const hlo_instr *z) {
  hlo_type t = z->shape.type;
  if (is_int_like(t)) return hlo_pass_is_int_constant(z, 1);
  if (hlo_type_is_float(t)) return hlo_pass_is_float_constant(z, 1.0, false);
  return false;
}

static bool same_dims_type(const hlo_instr *a, const hlo_instr *b) {
  return shape_is_array(&a->shape) && shape_compatible(&a->shape, &b->shape);
}

/* Whether converting type `from` to `wide` is exact for every value, so that converting
 * back to `from` restores the input. A narrow type (f8*, f4e2m1fn, s4, u4) is never the
 * wide side: their ranges, zeros and NaNs differ from each other's in ways the bit
 * counts below do not see (f8e4m3fn's 448 overflows f8e4m3fnuz, which has no -0). And
 * f8e5m2 widens its NaN payloads to the one quiet NaN (as ml_dtypes does), so its round
 * trip is not exact either. */
static bool widening_is_exact(hlo_type from, hlo_type wide) {
  if (from == wide) return true;
  if (hlo_type_is_narrow(wide) || from == HLO_F8E5M2) return false;
  if (from == HLO_PRED) return hlo_type_is_int(wide) || hlo_type_is_float(wide);
  if (hlo_type_is_float(from)) {
    if (!hlo_type_is_float(wide)) return false;
    /* every f16 and bf16 value is an f32; every f32 an f64 (NaN and inf included) */
    return hlo_type_mantissa_bits(wide) >= hlo_type_mantissa_bits(from) &&
           hlo_type_exponent_bits(wide) >= hlo_type_exponent_bits(from) && from != wide;
  }
  if (hlo_type_is_int(from)) {
    size_t fb = (size_t)hlo_type_bit_width(from);
    if (hlo_type_is_int(wide)) {
      size_t wb = (size_t)hlo_type_bit_width(wide);
      if (hlo_type_is_signed_int(from)) return hlo_type_is_signed_int(wide) && wb > fb;
      return hlo_type_is_signed_int(wide) ? wb > fb : wb > fb;
    }
    if (hlo_type_is_float(wide)) /* integers up to 2^(mantissa+1) are exact */
      return (int)fb <= hlo_type_mantissa_bits(wide) + 1;
  }
  return false;
}

static hlo_instr *simplify_binary(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *a = ins->operands[0], *b = ins->operands[1];
  if (!same_dims_type(a, ins) || !same_dims_type(b, ins)) return NULL;
  switch (ins->op) {
    case HLO_OP_ADD:
      if (is_additive_identity(b)) return a;
      if (is_additive_identity(a)) return b;
      return NULL;
    case HLO_OP_SUBTRACT:
      return is_subtractive_identity(b) ? a : NULL;
    case HLO_OP_MULTIPLY:
      if (is_one(b)) return a;
      if (is_one(a)) return b;
      /* integer x*0 is 0 for every x (wrapping arithmetic); floats are excluded since
       * NaN*0 and inf*0 are NaN and -1*0 is -0 */
      if (is_int_like(ins->shape.type)) {
        if (hlo_pass_is_int_constant(b, 0)) return b;
        if (hlo_pass_is_int_constant(a, 0)) return a;
      }
      return NULL;
    case HLO_OP_DIVIDE:
      return is_one(b) ? a : NULL;
    /* max(x, -inf) and min(x, +inf) are x for every float x (NaN propagates, -0 stays):
     * JAX clamps every reduce_max with its -inf initial value this way, which would
     * otherwise hide a softmax from the backend's pattern. */
    case HLO_OP_MAXIMUM:
    case HLO_OP_MINIMUM: {
      bool neg = ins->op == HLO_OP_MAXIMUM;
      if (!hlo_type_is_float(ins->shape.type)) return NULL;
      if (hlo_pass_is_float_constant(b, neg ? -INFINITY : INFINITY, neg)) return a;
      if (hlo_pass_is_float_constant(a, neg ? -INFINITY : INFINITY, neg)) return b;
      return NULL;
    }
    default:
      return NULL;
  }
  (void)c;
}

static bool is_identity_perm(const hlo_ints *p) {
  for (int i = 0; i < p->n; i++)
    if (p->v[i] != i) return false;
  return true;
}

static hlo_instr *simplify_transpose(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0];
  /* transpose by the identity moves no element */
  if (is_identity_perm(&ins->dimensions)) return x;
  if (x->op != HLO_OP_TRANSPOSE || x->dimensions.n != ins->dimensions.n) return NULL;
  /* result dim i = inner dim p2[i] = x's dim p1[p2[i]]: one transpose moves each
   * element to the same place the two did */
  int64_t perm[HLO_MAX_RANK];
  for (int i = 0; i < ins->dimensions.n; i++) perm[i] = x->dimensions.v[ins->dimensions.v[i]];
  hlo_instr *src = x->operands[0], *out = NULL;
  hlo_ints p = {ins->dimensions.n, perm};
  if (is_identity_perm(&p)) return src;
  return try_build(hlo_build_transpose(c, src, perm, &out), &out);
}

static hlo_instr *simplify_reshape(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0], *out = NULL;
  /* reshape keeps row-major element order, so a reshape to the operand's own dims is
   * the identity and reshape(reshape(x)) is one reshape of x */
  if (shape_same_dims(&x->shape, &ins->shape) && x->shape.type == ins->shape.type) return x;
  if (x->op != HLO_OP_RESHAPE) return NULL;
  hlo_instr *src = x->operands[0];
  if (shape_same_dims(&src->shape, &ins->shape)) return src;
  return try_build(hlo_build_reshape(c, src, ins->shape.rank, ins->shape.dims, &out), &out);
}

static hlo_instr *simplify_broadcast(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0], *out = NULL;
  /* a broadcast of an array to its own dims along 0..r-1 copies each element once */
  if (shape_same_dims(&x->shape, &ins->shape) && is_identity_perm(&ins->dimensions)) return x;
  if (x->op != HLO_OP_BROADCAST) return NULL;
  /* src dim j -> inner dim d1[j] -> outer dim d2[d1[j]]: every output element reads the
   * same source element either way */
  hlo_instr *src = x->operands[0];
  int64_t dims[HLO_MAX_RANK];
  for (int j = 0; j < x->dimensions.n; j++) dims[j] = ins->dimensions.v[x->dimensions.v[j]];
  return try_build(hlo_build_broadcast(c, src, ins->shape.rank, ins->shape.dims,
                                       src->shape.rank ? dims : NULL, &out),
                   &out);
}

static int64_t stride_at(const hlo_ints *s, int d) { return s->n > d ? s->v[d] : 1; }

static hlo_instr *simplify_slice(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0], *out = NULL;
  int r = ins->shape.rank;
  bool full = shape_same_dims(&x->shape, &ins->shape);
  for (int d = 0; d < r && full; d++)
    full = ins->slice_start.v[d] == 0 && stride_at(&ins->slice_stride, d) == 1;
  /* start 0, stride 1 and the operand's extent: every element, in place */
  if (full) return x;
  if (x->op != HLO_OP_SLICE) return NULL;
  /* output index i reads inner index s2+i*t2, which reads x at s1+(s2+i*t2)*t1 */
  hlo_instr *src = x->operands[0];
  int64_t start[HLO_MAX_RANK], limit[HLO_MAX_RANK], stride[HLO_MAX_RANK];
  for (int d = 0; d < r; d++) {
    int64_t t1 = stride_at(&x->slice_stride, d), t2 = stride_at(&ins->slice_stride, d);
    start[d] = x->slice_start.v[d] + ins->slice_start.v[d] * t1;
    stride[d] = t1 * t2;
    int64_t n = ins->shape.dims[d];
    limit[d] = n > 0 ? start[d] + (n - 1) * stride[d] + 1 : start[d];
  }
  return try_build(hlo_build_slice(c, src, start, limit, stride, &out), &out);
}

static hlo_instr *simplify_convert(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0];
  /* converting to the operand's own type changes nothing */
  if (x->shape.type == ins->shape.type) return x;
  /* convert(convert(y, W), T) with y of type T and T -> W exact (f16->f32, s8->s32,
   * s16->f32, pred->anything…): the round trip returns y */
  if (x->op == HLO_OP_CONVERT) {
    hlo_instr *y = x->operands[0];
    if (y->shape.type == ins->shape.type && widening_is_exact(y->shape.type, x->shape.type) &&
        y->shape.type != HLO_PRED)
      return y;
    /* convert(convert(y, W), T) with y -> W an exact integer widening (s8 -> s32) and T
     * a float: both paths round the same integer value to T once, so convert(y, T). A
     * dequantization's s8 -> s32 -> f32 becomes one convert that constant folding can
     * take as a relayout of the weights. */
    if (hlo_type_is_int(y->shape.type) && hlo_type_is_int(x->shape.type) && hlo_type_is_float(ins->shape.type) &&
        widening_is_exact(y->shape.type, x->shape.type)) {
      hlo_instr *out = NULL;
      return try_build(hlo_build_convert(c, y, ins->shape.type, &out), &out);
    }
  }
  (void)c;
  return NULL;
}

static hlo_instr *simplify_pad(hlo_computation *c, hlo_instr *ins) {
  (void)c;
  /* no edge and no interior padding: the output is the operand */
  for (int d = 0; d < ins->pad_lo.n; d++)
    if (ins->pad_lo.v[d] || ins->pad_hi.v[d] || (ins->pad_interior.n > d && ins->pad_interior.v[d])) return NULL;
  return shape_same_dims(&ins->operands[0]->shape, &ins->shape) ? ins->operands[0] : NULL;
}

static hlo_instr *simplify_select(hlo_computation *c, hlo_instr *ins) {
  (void)c;
  const hlo_literal *l;
  hlo_instr *p = ins->operands[0];
  /* a predicate known to be all true (all false) picks on_true (on_false) everywhere */
  if (p->shape.type != HLO_PRED || !hlo_pass_uniform_constant(p, &l)) return NULL;
  hlo_instr *pick = literal_get_s64(l, 0) ? ins->operands[1] : ins->operands[2];
  return shape_compatible(&pick->shape, &ins->shape) ? pick : NULL;
}

static hlo_instr *simplify_compare(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *a = ins->operands[0];
  /* integers compare equal to themselves (no NaN): EQ/LE/GE true, NE/LT/GT false */
  if (a != ins->operands[1] || !(hlo_type_is_int(a->shape.type) || a->shape.type == HLO_PRED)) return NULL;
  bool v = ins->direction == HLO_DIR_EQ || ins->direction == HLO_DIR_LE || ins->direction == HLO_DIR_GE;
  hlo_instr *k = NULL;
  k = try_build(hlo_build_constant_scalar(c, HLO_PRED, v ? 1.0 : 0.0, &k), &k);
  if (!k || ins->shape.rank == 0) return k;
  hlo_instr *out = NULL;
  return try_build(hlo_build_broadcast(c, k, ins->shape.rank, ins->shape.dims, NULL, &out), &out);
}

static hlo_instr *simplify_dynamic_slice(hlo_computation *c, hlo_instr *ins) {
  hlo_instr *x = ins->operands[0], *out = NULL;
  int r = x->shape.rank;
  if (ins->n_operands != r + 1 || ins->dynamic_slice_sizes.n != r) return NULL;
  int64_t start[HLO_MAX_RANK], limit[HLO_MAX_RANK];
  for (int d = 0; d < r; d++) {
    const hlo_instr *idx = ins->operands[d + 1];
    if (idx->op != HLO_OP_CONSTANT || !idx->literal || idx->shape.rank != 0) return NULL;
    hlo_type t = idx->shape.type;
    if (!hlo_type_is_int(t)) return NULL;
    int64_t v = hlo_index_at(t, idx->literal->data, 0);
    /* dynamic-slice clamps the start into [0, dim - size], so the static slice uses the
     * clamped start and reads exactly the same elements */
    int64_t size = ins->dynamic_slice_sizes.v[d], hi = x->shape.dims[d] - size;
    if (hi < 0) return NULL;
    if (v < 0) v = 0;
    if (v > hi) v = hi;
    start[d] = v;
    limit[d] = v + size;
  }
  return try_build(hlo_build_slice(c, x, start, limit, NULL, &out), &out);
}

/* Integer reduce of a broadcast over exactly the broadcast-added dims: each output
 * element reduces init with `count` copies of one x element. With wrapping integer
 * arithmetic (associative and commutative) that is x*count + init for add, and
 * max(x, init) / min(x, init) for maximum / minimum (idempotent) when count >= 1.
 * Floats are left alone: float sums depend on the order and do not equal a product. */
static hlo_instr *simplify_reduce(hlo_computation *c, hlo_instr *ins) {
  if (ins->n_operands != 2 || ins->n_called != 1 || !shape_is_array(&ins->shape)) return NULL;
  hlo_instr *bc = ins->operands[0], *init = ins->operands[1];
  hlo_type t = ins->shape.type;
  hlo_opcode op;
  if (bc->op != HLO_OP_BROADCAST || !hlo_type_is_int(t) || !hlo_pass_reducer_op(ins->called[0], t, &op)) return NULL;
  if (op != HLO_OP_ADD && op != HLO_OP_MAXIMUM && op != HLO_OP_MINIMUM) return NULL;
  hlo_instr *x = bc->operands[0];
  if (x->shape.type != t || !shape_same_dims(&x->shape, &ins->shape)) return NULL;
  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->dimensions.n; i++) {
    int64_t d = ins->dimensions.v[i];
    if (d < 0 || d >= bc->shape.rank) return NULL;
    reduced[d] = true;
  }
  /* x's dims must be exactly the kept dims, in order, for x to line up with the result */
  int64_t prev = -1;
  for (int j = 0; j < bc->dimensions.n; j++) {
    int64_t d = bc->dimensions.v[j];
    if (d <= prev || reduced[d]) return NULL;
    prev = d;
  }
  if (bc->dimensions.n + ins->dimensions.n != bc->shape.rank) return NULL;
  int64_t count = 1;
  for (int d = 0; d < bc->shape.rank; d++)
    if (reduced[d]) count *= bc->shape.dims[d];
  /* The multiplier only matters modulo 2^bits: wrap it into the type's range (as a
   * signed value for signed types) so the constant holds it exactly. */
  int bits = (int)hlo_type_size(t) * 8;
  int64_t mult = count;
  if (bits < 64) {
    uint64_t w = (uint64_t)count & (((uint64_t)1 << bits) - 1);
    mult = hlo_type_is_signed_int(t) && w >= ((uint64_t)1 << (bits - 1)) ? (int64_t)w - ((int64_t)1 << bits)
                                                                          : (int64_t)w;
  }
  if (mult > ((int64_t)1 << 53) || mult < -((int64_t)1 << 53)) return NULL; /* exact as a double */
  int r = ins->shape.rank;
  hlo_instr *init_b = init, *out = NULL;
  if (r > 0 && !(init_b = try_build(hlo_build_broadcast(c, init, r, ins->shape.dims, NULL, &init_b), &init_b)))
    return NULL;
  if (count == 0) return init_b;
  if (op != HLO_OP_ADD) return try_build(hlo_build_binary(c, op, x, init_b, &out), &out);
  hlo_instr *k = NULL, *kb = NULL, *prod = NULL;
  if (!(k = try_build(hlo_build_constant_scalar(c, t, (double)mult, &k), &k))) return NULL;
  kb = k;
  if (r > 0 && !(kb = try_build(hlo_build_broadcast(c, k, r, ins->shape.dims, NULL, &kb), &kb))) return NULL;
  if (!(prod = try_build(hlo_build_binary(c, HLO_OP_MULTIPLY, x, kb, &prod), &prod))) return NULL;
  return try_build(hlo_build_binary(c, HLO_OP_ADD, prod, init_b, &out), &out);
}

/* Maps the dims of `big` onto `small` when small is big with some size-1 dims dropped:
 * to[i] = small's dim for big's dim i, or -1 for a dropped one. Greedy left to right,
 * which finds a mapping whenever one exists (a size-1 dim matched early or dropped
 * addresses the same elements). */
static bool drops_unit_dims(const hlo_shape *big, const hlo_shape *small, int *to) {
  if (small->rank >= big->rank) return false;
  int j = 0;
  for (int i = 0; i < big->rank; i++) {
    if (j < small->rank && big->dims[i] == small->dims[j]) to[i] = j++;
    else if (big->dims[i] == 1) to[i] = -1;
    else return false;
  }
  return j == small->rank;
}

/* E(.., reshape(x), ..) -> reshape(E'(.., x, ..)) when the reshape only inserts size-1
 * dims: a dot canonicalized to rank 2 is reshaped back before its bias add and
 * activation, and the reshape would keep them from fusing into the dot as post-ops.
 * Every other operand is re-expressed at x's dims: a broadcast by renaming its dims,
 * another such reshape by its source, anything else by a reshape (free: the backend
 * aliases it). Exact: reshape keeps the row-major element order, so each output
 * element is computed from the same operand elements. The rule only lowers ranks, so
 * it cannot undo itself. */
static hlo_instr *sink_unit_reshape(hlo_computation *c, hlo_instr *ins) {
  const hlo_shape *small = NULL;
  int to[HLO_MAX_RANK];
  for (int k = 0; k < ins->n_operands && !small; k++) {
    const hlo_instr *o = ins->operands[k];
    if (o->op == HLO_OP_RESHAPE && drops_unit_dims(&o->shape, &o->operands[0]->shape, to))
      small = &o->operands[0]->shape;
  }
  if (!small) return NULL;
  hlo_instr *ops[3];
  if (ins->n_operands > 3) return NULL;
  for (int k = 0; k < ins->n_operands; k++) {
    hlo_instr *o = ins->operands[k], *r = NULL;
    if (o->shape.rank == 0) { /* clamp / select scalar bounds */
      ops[k] = o;
      continue;
    }
    if (!shape_same_dims(&o->shape, &ins->shape)) return NULL;
    if (o->op == HLO_OP_RESHAPE && shape_same_dims(&o->operands[0]->shape, small)) {
      ops[k] = o->operands[0];
      continue;
    }
    if (o->op == HLO_OP_BROADCAST) {
      int64_t dims[HLO_MAX_RANK];
      bool mapped = true;
      for (int j = 0; j < o->dimensions.n && mapped; j++) mapped = (dims[j] = to[o->dimensions.v[j]]) >= 0;
      if (mapped && (r = try_build(hlo_build_broadcast(c, o->operands[0], small->rank, small->dims,
                                                       o->dimensions.n ? dims : NULL, &r), &r))) {
        ops[k] = r;
        continue;
      }
    }
    if (!(ops[k] = try_build(hlo_build_reshape(c, o, small->rank, small->dims, &r), &r))) return NULL;
  }
  hlo_instr tmpl = hlo_instr_template_from(ins, ops), *e = NULL, *out = NULL;
  tmpl.shape.has_layout = false;
  if (!(e = try_build(hlo_build_instr(c, &tmpl, &e), &e))) return NULL;
  return try_build(hlo_build_reshape(c, e, ins->shape.rank, ins->shape.dims, &out), &out);
}

/* A tuple-shaped constant -> tuple(constant per element): backends keep values in
 * arrays (a packed tuple block is a result of a real op, a constant's literal is not laid
 * out as one), and get-tuple-elements of it then fold away. Nested tuples split on the
 * next round. */
static hlo_instr *split_tuple_constant(hlo_computation *c, hlo_instr *ins) {
  const hlo_literal *l = ins->literal;
  if (!l || !shape_is_tuple(&ins->shape) || !l->tuple || ins->shape.n_elems > 64) return NULL;
  hlo_instr *parts[64];
  for (int k = 0; k < ins->shape.n_elems; k++) {
    hlo_literal *e = literal_clone(l->tuple[k]);
    if (!e || hlo_build_constant(c, e, &parts[k])) return NULL;
  }
  hlo_instr *t;
  return hlo_build_tuple(c, ins->shape.n_elems, parts, &t) ? NULL : t;
}

static hlo_instr *simplify(hlo_computation *c, hlo_instr *ins) {
  if (hlo_opcode_is_elementwise(ins->op) && ins->shape.rank > 0) {
    hlo_instr *r = sink_unit_reshape(c, ins);
    if (r) return r;
  }
  switch (ins->op) {
    case HLO_OP_ADD:
    case HLO_OP_SUBTRACT:
    case HLO_OP_MULTIPLY:
    case HLO_OP_DIVIDE:
    case HLO_OP_MAXIMUM:
    case HLO_OP_MINIMUM:
      return ins->n_operands == 2 ? simplify_binary(c, ins) : NULL;
    case HLO_OP_CONSTANT: return split_tuple_constant(c, ins);
    case HLO_OP_TRANSPOSE: return simplify_transpose(c, ins);
    case HLO_OP_RESHAPE: return simplify_reshape(c, ins);
    case HLO_OP_BROADCAST: return simplify_broadcast(c, ins);
    case HLO_OP_SLICE: return simplify_slice(c, ins);
    case HLO_OP_CONVERT: return simplify_convert(c, ins);
    case HLO_OP_PAD: return simplify_pad(c, ins);
    case HLO_OP_SELECT: return simplify_select(c, ins);
    case HLO_OP_COMPARE: return simplify_compare(c, ins);
    case HLO_OP_DYNAMIC_SLICE: return simplify_dynamic_slice(c, ins);
    case HLO_OP_REDUCE: return simplify_reduce(c, ins);
    case HLO_OP_CONCATENATE:
      /* concatenating one array is that array */
      return ins->n_operands == 1 && shape_compatible(&ins->operands[0]->shape, &ins->shape) ? ins->operands[0]
                                                                                              : NULL;
    case HLO_OP_NEGATE: {
      /* -(-x) = x: exact for IEEE (sign flip) and for wrapping ints (-INT_MIN wraps back) */
      hlo_instr *x = ins->operands[0];
      return x->op == HLO_OP_NEGATE ? x->operands[0] : NULL;
    }
    default:
      return NULL;
  }
}

static bool simplify_computation(hlo_computation *c) {
  int n = c->n_instrs;
  int max_id = 0;
  for (int i = 0; i < n; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  /* Instructions nobody uses are skipped: rewriting them would only grow the module
   * (and make a fix() loop around this pass never settle). */
  bool *used = calloc((size_t)max_id + 1, sizeof(bool));
  if (!used) abort();
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++) {
      int id = c->instrs[i]->operands[k]->id;
      if (id >= 0 && id <= max_id) used[id] = true;
    }
  bool changed = false;
  for (int i = 0; i < n; i++) {
    hlo_instr *ins = c->instrs[i];
    if (ins != c->root && !used[ins->id]) continue;
    if (!shape_is_array(&ins->shape) && ins->op != HLO_OP_CONSTANT) continue; /* tuple constants split */
    hlo_instr *repl = simplify(c, ins);
    if (!repl || repl == ins) continue;
    if (!shape_compatible(&repl->shape, &ins->shape)) continue; /* internal guard */
    if (hlo_pass_replace_uses(c, ins, repl) > 0) changed = true;
  }
  free(used);
  if (c->n_instrs != n || changed) hlo_pass_restore_order(c);
  return changed;
}

kiln_status hlo_pass_algebraic_simplifier(hlo_module *m, bool *changed) {
  *changed = false;
  for (int i = 0; i < m->n_comps; i++)
    if (simplify_computation(m->comps[i])) *changed = true;
  return NULL;
}
