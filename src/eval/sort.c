/* Evaluator kernel for sort, plus the direct scalar comparisons that sort and
 * select-and-scatter use when their called computation is a single compare.
 *
 * Sort finds, for every row along the sort dimension, the permutation a stable bottom-up
 * merge sort produces with the comparator as "less", then applies that permutation to
 * every operand. The sort is always stable (so is_stable needs no special case) and the
 * merge pattern, hence the sequence of comparator calls, depends only on the row length
 * and the comparator's answers: the direct-compare fast path and the generic path (one
 * interpreter call per comparison) make the same decisions and give identical results,
 * even for comparators that are not strict weak orders (IEEE LT with NaNs, where NaN is
 * "equivalent" to everything; the output is then deterministic but not fully ordered,
 * exactly as with the generic path). */
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"

/* ---- direct scalar comparisons ---- */

static bool natural_compare_type(hlo_type t, hlo_compare_type ct, bool *total_order) {
  *total_order = false;
  if (hlo_type_is_float(t)) {
    if (ct == HLO_CMP_TOTALORDER) *total_order = true;
    return ct == HLO_CMP_DEFAULT || ct == HLO_CMP_FLOAT || ct == HLO_CMP_TOTALORDER;
  }
  if (hlo_type_is_signed_int(t)) return ct == HLO_CMP_DEFAULT || ct == HLO_CMP_SIGNED;
  if (hlo_type_is_unsigned_int(t) || t == HLO_PRED) return ct == HLO_CMP_DEFAULT || ct == HLO_CMP_UNSIGNED;
  return false;
}

static bool is_scalar_array(const hlo_shape *s) { return hlo_type_is_array(s->type) && s->rank == 0; }

bool eval_scalar_compare_match(const hlo_computation *c, eval_scalar_compare *out) {
  const hlo_instr *root = c ? c->root : NULL;
  if (!root || root->op != HLO_OP_COMPARE || root->n_operands != 2 || root->shape.type != HLO_PRED ||
      root->shape.rank != 0)
    return false;
  /* Nothing but parameters besides the root: no hidden work (or errors) to skip. */
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i] != root && c->instrs[i]->op != HLO_OP_PARAMETER) return false;
  const hlo_instr *a = root->operands[0], *b = root->operands[1];
  if (a->op != HLO_OP_PARAMETER || b->op != HLO_OP_PARAMETER || a == b) return false;
  if (!is_scalar_array(&a->shape) || !is_scalar_array(&b->shape) || a->shape.type != b->shape.type) return false;
  if (a->parameter_number < 0 || a->parameter_number >= c->n_params || b->parameter_number < 0 ||
      b->parameter_number >= c->n_params)
    return false;
  bool total;
  if (!natural_compare_type(a->shape.type, root->compare_type, &total)) return false;
  if (root->direction < HLO_DIR_EQ || root->direction > HLO_DIR_GE) return false;
  out->type = a->shape.type;
  out->dir = root->direction;
  out->total_order = total;
  out->lhs_param = (int)a->parameter_number;
  out->rhs_param = (int)b->parameter_number;
  return true;
}

/* Three-way result of an ordered comparison: -1, 0, 1. */
#define CMP3(x, y) ((x) < (y) ? -1 : (x) > (y) ? 1 : 0)

static bool from_order(hlo_direction dir, int c) {
  switch (dir) {
    case HLO_DIR_EQ: return c == 0;
    case HLO_DIR_NE: return c != 0;
    case HLO_DIR_LT: return c < 0;
    case HLO_DIR_LE: return c <= 0;
    case HLO_DIR_GT: return c > 0;
    case HLO_DIR_GE: return c >= 0;
  }
  return false;
}

static bool ieee_compare(hlo_direction dir, double x, double y) {
  switch (dir) {
    case HLO_DIR_EQ: return x == y;
    case HLO_DIR_NE: return x != y;
    case HLO_DIR_LT: return x < y;
    case HLO_DIR_LE: return x <= y;
    case HLO_DIR_GT: return x > y;
    case HLO_DIR_GE: return x >= y;
  }
  return false;
}

/* Maps float bits of `bits` width to an unsigned key whose order is the total order:
 * negatives (sign set) reverse, positives go above them. */
static uint64_t total_order_key(uint64_t bits, int width) {
  uint64_t sign = (uint64_t)1 << (width - 1);
  uint64_t mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);
  return (bits & sign) ? (~bits & mask) : (bits | sign);
}

static double float_value(hlo_type t, const void *p, int64_t i) {
  switch (t) {
    case HLO_F16: {
      uint16_t h;
      memcpy(&h, (const char *)p + i * 2, 2);
      return f16_to_f32(h);
    }
    case HLO_BF16: {
      uint16_t h;
      memcpy(&h, (const char *)p + i * 2, 2);
      return bf16_to_f32(h);
    }
    case HLO_F32: {
      float f;
      memcpy(&f, (const char *)p + i * 4, 4);
      return f;
    }
    default: {
      double d;
      memcpy(&d, (const char *)p + i * 8, 8);
      return d;
    }
  }
}

static uint64_t raw_bits(const void *p, int64_t i, size_t size) {
  const char *s = (const char *)p + i * (int64_t)size;
  switch (size) {
    case 1: { uint8_t v; memcpy(&v, s, 1); return v; }
    case 2: { uint16_t v; memcpy(&v, s, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, s, 4); return v; }
    default: { uint64_t v; memcpy(&v, s, 8); return v; }
  }
}

bool eval_scalar_compare_apply(const eval_scalar_compare *cmp, const void *a, int64_t ai, const void *b,
                               int64_t bi) {
  hlo_type t = cmp->type;
  size_t size = hlo_type_size(t);
  if (hlo_type_is_float(t)) {
    if (!cmp->total_order) return ieee_compare(cmp->dir, float_value(t, a, ai), float_value(t, b, bi));
    int width = (int)size * 8;
    uint64_t x = total_order_key(raw_bits(a, ai, size), width), y = total_order_key(raw_bits(b, bi, size), width);
    return from_order(cmp->dir, CMP3(x, y));
  }
  uint64_t x = raw_bits(a, ai, size), y = raw_bits(b, bi, size);
  if (hlo_type_is_signed_int(t)) {
    /* Flipping the sign bit turns two's complement order into unsigned order. */
    uint64_t sign = (uint64_t)1 << (size * 8 - 1);
    x ^= sign;
    y ^= sign;
  } else if (t == HLO_PRED) {
    x = x != 0;
    y = y != 0;
  }
  return from_order(cmp->dir, CMP3(x, y));
}

/* ---- sort ---- */

typedef struct sort_state {
  eval_ctx *ctx;
  const hlo_instr *ins;
  int n_ops;
  hlo_literal *const *ops;
  int64_t base, inner; /* row element k lives at base + k * inner */
  /* fast path: a single compare of operand `key`'s lhs/rhs parameters */
  bool fast;
  eval_scalar_compare cmp;
  int key;
  bool swapped; /* compare(rhs, lhs): the comparator's lhs element is compare's operand 1 */
  /* generic path: 2 * n_ops scalar argument literals, reused for every call */
  hlo_literal **args;
} sort_state;

static kiln_status sort_less(sort_state *s, int64_t x, int64_t y, bool *less) {
  int64_t xi = s->base + x * s->inner, yi = s->base + y * s->inner;
  if (s->fast) {
    const void *d = s->ops[s->key]->data;
    *less = s->swapped ? eval_scalar_compare_apply(&s->cmp, d, yi, d, xi)
                       : eval_scalar_compare_apply(&s->cmp, d, xi, d, yi);
    return NULL;
  }
  for (int i = 0; i < s->n_ops; i++) {
    size_t esize = hlo_type_size(s->ops[i]->shape.type);
    eval_copy_element(s->args[2 * i]->data, 0, s->ops[i]->data, xi, esize);
    eval_copy_element(s->args[2 * i + 1]->data, 0, s->ops[i]->data, yi, esize);
  }
  hlo_literal *res = NULL;
  TRY(eval_call(s->ctx, s->ins->called[0], s->args, 2 * s->n_ops, &res));
  if (!res || res->shape.type != HLO_PRED || res->n != 1) {
    literal_free(res);
    return EVAL_ERR(KILN_INVALID_ARGUMENT, s->ins, "comparator %s did not return a pred scalar",
                    s->ins->called[0]->name);
  }
  *less = ((const uint8_t *)res->data)[0] != 0;
  literal_free(res);
  return NULL;
}

/* Stable bottom-up merge sort of perm[0..len) (tmp is scratch of the same length). On an
 * equal pair the left run's element goes first; runs already in order are not merged. */
static kiln_status merge_sort(sort_state *s, int64_t *perm, int64_t *tmp, int64_t len) {
  int64_t *src = perm, *dst = tmp;
  for (int64_t width = 1; width < len; width *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * width) {
      int64_t mid = lo + width < len ? lo + width : len;
      int64_t hi = mid + width < len ? mid + width : len;
      bool ordered = true;
      if (mid < hi) {
        bool out_of_order;
        TRY(sort_less(s, src[mid], src[mid - 1], &out_of_order));
        ordered = !out_of_order;
      }
      if (ordered) {
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *src);
        continue;
      }
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        bool take_right;
        TRY(sort_less(s, src[j], src[i], &take_right));
        dst[k++] = take_right ? src[j++] : src[i++];
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    int64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != perm) memcpy(perm, src, (size_t)len * sizeof *perm);
  return NULL;
}

static void apply_permutation(const hlo_literal *in, hlo_literal *out, int64_t base, int64_t inner,
                              const int64_t *perm, int64_t len) {
  size_t esize = hlo_type_size(in->shape.type);
  for (int64_t k = 0; k < len; k++)
    eval_copy_element(out->data, base + k * inner, in->data, base + perm[k] * inner, esize);
}

/* Decides whether the comparator is one compare on some operand's (lhs, rhs) pair. */
static void sort_pick_fast_path(sort_state *s) {
  s->fast = false;
  eval_scalar_compare cmp;
  if (!eval_scalar_compare_match(s->ins->called[0], &cmp)) return;
  if (cmp.lhs_param / 2 != cmp.rhs_param / 2) return;
  int key = cmp.lhs_param / 2;
  if (key >= s->n_ops || s->ops[key]->shape.type != cmp.type) return;
  s->fast = true;
  s->cmp = cmp;
  s->key = key;
  s->swapped = cmp.lhs_param % 2 == 1;
}

kiln_status eval_sort(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  int n = ins->n_operands;
  if (n < 1) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "sort needs at least one operand");
  if (ins->n_called < 1 || !ins->called[0]) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "sort needs a comparator");
  bool tuple_result = ins->shape.type == HLO_TUPLE;
  if (tuple_result ? ins->shape.n_elems != n : n != 1)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape does not match %d operand(s)", n);
  const hlo_shape *s0 = &ops[0]->shape;
  for (int i = 0; i < n; i++) {
    const hlo_shape *si = &ops[i]->shape;
    const hlo_shape *ri = tuple_result ? &ins->shape.elems[i] : &ins->shape;
    if (!hlo_type_is_array(si->type) || !shape_same_dims(si, s0))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d is not an array with the dimensions of operand 0", i);
    if (ri->type != si->type || !shape_same_dims(ri, si))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result %d does not match operand %d", i, i);
  }
  int rank = s0->rank;
  int64_t dim = ins->dimensions.n > 0 ? ins->dimensions.v[0] : (rank == 0 ? 0 : -1);
  if (rank > 0 && (dim < 0 || dim >= rank))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "sort dimension %lld out of range for rank %d", (long long)dim, rank);

  hlo_literal **res = calloc((size_t)n, sizeof *res);
  if (!res) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  int64_t *perm = NULL, *tmp = NULL;
  sort_state s = {.ctx = ctx, .ins = ins, .n_ops = n, .ops = ops};
  for (int i = 0; i < n && !st; i++)
    st = literal_create(tuple_result ? &ins->shape.elems[i] : &ins->shape, &res[i]);
  if (st) goto done;

  int64_t len = rank > 0 ? s0->dims[dim] : 1, inner = 1, outer = 1;
  for (int d = 0; d < rank; d++) {
    if (d < dim) outer *= s0->dims[d];
    if (d > dim) inner *= s0->dims[d];
  }
  if (ops[0]->n == 0) goto done;
  if (len <= 1) {
    for (int i = 0; i < n; i++)
      memcpy(res[i]->data, ops[i]->data, (size_t)ops[i]->n * hlo_type_size(ops[i]->shape.type));
    goto done;
  }
  sort_pick_fast_path(&s);
  if (!s.fast) {
    s.args = calloc((size_t)(2 * n), sizeof *s.args);
    if (!s.args) {
      st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
      goto done;
    }
    for (int i = 0; i < 2 * n && !st; i++) {
      hlo_shape sc = shape_scalar(ops[i / 2]->shape.type);
      st = literal_create(&sc, &s.args[i]);
    }
    if (st) goto done;
  }
  perm = malloc((size_t)len * sizeof *perm);
  tmp = malloc((size_t)len * sizeof *tmp);
  if (!perm || !tmp) {
    st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory sorting rows of %lld elements", (long long)len);
    goto done;
  }
  s.inner = inner;
  for (int64_t o = 0; o < outer && !st; o++) {
    for (int64_t in = 0; in < inner && !st; in++) {
      s.base = o * len * inner + in;
      for (int64_t k = 0; k < len; k++) perm[k] = k;
      st = merge_sort(&s, perm, tmp, len);
      if (st) break;
      for (int i = 0; i < n; i++) apply_permutation(ops[i], res[i], s.base, inner, perm, len);
    }
  }

done:
  free(perm);
  free(tmp);
  if (s.args) {
    for (int i = 0; i < 2 * n; i++) literal_free(s.args[i]);
    free(s.args);
  }
  if (st) {
    for (int i = 0; i < n; i++) literal_free(res[i]);
    free(res);
    return st;
  }
  *out = tuple_result ? literal_tuple(n, res) : res[0];
  free(res);
  return NULL;
}

/* ---- topk ---- */

/* topk: the k largest (or smallest) elements along the last dimension, in order, with
 * their s32 indices. Ties keep the lower index first (the sort is stable), and floats
 * are ordered totally (-NaN < -inf < … < +inf < +NaN), so a NaN counts as the largest
 * value — what XLA's TopK does. Reuses the sort's fast comparison path. */
kiln_status eval_topk(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  const hlo_literal *x = ops[0];
  int rank = x->shape.rank;
  if (rank < 1 || ins->shape.type != HLO_TUPLE || ins->shape.n_elems != 2)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "topk needs an array of rank >= 1 and a (values, indices) result");
  int64_t len = x->shape.dims[rank - 1], k = ins->k;
  if (k < 0 || k > len)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "k=%lld is outside [0, %lld]", (long long)k, (long long)len);
  const hlo_shape *vs = &ins->shape.elems[0], *is = &ins->shape.elems[1];
  if (vs->type != x->shape.type || is->type != HLO_S32 || vs->rank != rank || vs->dims[rank - 1] != k)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shapes do not match the operand and k=%lld", (long long)k);

  hlo_literal *values = NULL, *indices = NULL;
  TRY(literal_create(vs, &values));
  kiln_status st = literal_create(is, &indices);
  int64_t *perm = NULL, *tmp = NULL;
  if (st) goto done;
  int64_t rows = len ? x->n / len : 0;
  perm = malloc((size_t)(len ? len : 1) * sizeof *perm);
  tmp = malloc((size_t)(len ? len : 1) * sizeof *tmp);
  if (!perm || !tmp) {
    st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  sort_state s = {.ctx = ctx, .ins = ins, .n_ops = 1, .ops = ops, .inner = 1, .fast = true, .key = 0};
  s.cmp.type = x->shape.type;
  s.cmp.dir = ins->largest ? HLO_DIR_GT : HLO_DIR_LT;
  s.cmp.total_order = hlo_type_is_float(x->shape.type);
  s.cmp.lhs_param = 0;
  s.cmp.rhs_param = 1;
  size_t esize = hlo_type_size(x->shape.type);
  for (int64_t r = 0; r < rows && !st; r++) {
    s.base = r * len;
    for (int64_t j = 0; j < len; j++) perm[j] = j;
    st = merge_sort(&s, perm, tmp, len);
    for (int64_t j = 0; j < k && !st; j++) {
      eval_copy_element(values->data, r * k + j, x->data, s.base + perm[j], esize);
      ((int32_t *)indices->data)[r * k + j] = (int32_t)perm[j];
    }
  }

done:
  free(perm);
  free(tmp);
  if (st) {
    literal_free(values);
    literal_free(indices);
    return st;
  }
  hlo_literal *pair[2] = {values, indices};
  *out = literal_tuple(2, pair);
  return NULL;
}
