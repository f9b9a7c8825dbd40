/* Element-type conversions of the evaluator: convert, bitcast-convert and
 * reduce-precision, with XLA's semantics.
 *
 * convert widens every source element to one of three carriers (uint64, int64 or
 * double, each exact for its source types) and narrows the carrier to the destination
 * with a single rounding: float -> int truncates toward zero and saturates (NaN -> 0),
 * int -> int wraps (to 4 or 2 bits for s4/u4/s2/u2), anything -> pred is x != 0, and float
 * destinations round to nearest-even exactly once (64-bit integers reach f16/bf16 and
 * the narrow floats through a round-to-odd double, which is what makes the second
 * rounding harmless; the narrow floats overflow to inf or NaN as minifloat.h says).
 * Work is done in blocks so each loop is a tight typed loop. bitcast-convert
 * reinterprets the row-major bytes, which is exactly XLA's rule (the extra minor
 * dimension holds the narrow pieces of one wide element in little-endian order).
 * reduce-precision transcribes XLA's bit-level algorithm on f32/f64 patterns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"
#include "eval/scalar_ops.h"

#define CV_CHUNK 256

typedef enum cv_carrier { CARRY_U64, CARRY_S64, CARRY_F64 } cv_carrier;

static cv_carrier carrier_of(hlo_type t) {
  if (hlo_type_is_float(t)) return CARRY_F64;
  if (hlo_type_is_signed_int(t)) return CARRY_S64;
  return CARRY_U64; /* pred and unsigned */
}

typedef union cv_block {
  uint64_t u[CV_CHUNK];
  int64_t s[CV_CHUNK];
  double d[CV_CHUNK];
} cv_block;

static void load_block(hlo_type t, const void *src, int64_t start, int64_t k, cv_block *b) {
#define LOAD(field, CT, EXPR)                            \
  {                                                      \
    const CT *p = (const CT *)src + start;               \
    for (int64_t i = 0; i < k; i++) b->field[i] = EXPR;  \
    return;                                              \
  }
  switch (t) {
    case HLO_PRED: LOAD(u, uint8_t, p[i] != 0)
    case HLO_U8: LOAD(u, uint8_t, p[i])
    case HLO_U16: LOAD(u, uint16_t, p[i])
    case HLO_U32: LOAD(u, uint32_t, p[i])
    case HLO_U64: LOAD(u, uint64_t, p[i])
    case HLO_S8: LOAD(s, int8_t, p[i])
    case HLO_S16: LOAD(s, int16_t, p[i])
    case HLO_S32: LOAD(s, int32_t, p[i])
    case HLO_S64: LOAD(s, int64_t, p[i])
    case HLO_F16: LOAD(d, uint16_t, f16_to_f32(p[i]))
    case HLO_BF16: LOAD(d, uint16_t, bf16_to_f32(p[i]))
    case HLO_F32: LOAD(d, float, p[i])
    case HLO_F64: LOAD(d, double, p[i])
    case HLO_S4: LOAD(s, int8_t, p[i])
    case HLO_U4: LOAD(u, uint8_t, p[i])
    case HLO_S2: LOAD(s, int8_t, p[i])
    case HLO_U2: LOAD(u, uint8_t, p[i])
    default: {
      minifloat_format f;
      if (hlo_type_minifloat(t, &f)) LOAD(d, uint8_t, minifloat_to_f32(f, p[i]))
      return;
    }
  }
#undef LOAD
}

/* Truncation toward zero, saturating at [lo, hi]; NaN -> 0. */
static int64_t f64_to_s64_sat(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi; /* (double)INT64_MAX is 2^63: anything >= saturates */
  return (int64_t)v;
}

static uint64_t f64_to_u64_sat(double v, uint64_t hi) {
  if (isnan(v) || v <= 0) return 0;
  if (v >= (double)hi) return hi;
  return (uint64_t)v;
}

/* The low 4 bits of v as a signed value (s4's storage: sign-extended into the byte). */
static int8_t s4_wrap(uint64_t v) { return (int8_t)(((v & 15) ^ 8) - 8); }
static int8_t s2_wrap(uint64_t v) { return (int8_t)(((v & 3) ^ 2) - 2); }

static void store_block(hlo_type t, cv_carrier c, const cv_block *b, void *dst, int64_t start, int64_t k) {
#define STORE(CT, EXPR_U, EXPR_S, EXPR_D)                                      \
  {                                                                            \
    CT *p = (CT *)dst + start;                                                 \
    switch (c) {                                                               \
      case CARRY_U64: for (int64_t i = 0; i < k; i++) p[i] = EXPR_U; return;   \
      case CARRY_S64: for (int64_t i = 0; i < k; i++) p[i] = EXPR_S; return;   \
      case CARRY_F64: for (int64_t i = 0; i < k; i++) p[i] = EXPR_D; return;   \
    }                                                                          \
    return;                                                                    \
  }
#define STORE_SINT(CT, LO, HI) \
  STORE(CT, (CT)b->u[i], (CT)(uint64_t)b->s[i], (CT)f64_to_s64_sat(b->d[i], LO, HI))
#define STORE_UINT(CT, HI) STORE(CT, (CT)b->u[i], (CT)(uint64_t)b->s[i], (CT)f64_to_u64_sat(b->d[i], HI))
  switch (t) {
    case HLO_PRED: STORE(uint8_t, b->u[i] != 0, b->s[i] != 0, b->d[i] != 0)
    case HLO_S8: STORE_SINT(int8_t, INT8_MIN, INT8_MAX)
    case HLO_S16: STORE_SINT(int16_t, INT16_MIN, INT16_MAX)
    case HLO_S32: STORE_SINT(int32_t, INT32_MIN, INT32_MAX)
    case HLO_S64: STORE_SINT(int64_t, INT64_MIN, INT64_MAX)
    case HLO_U8: STORE_UINT(uint8_t, UINT8_MAX)
    case HLO_U16: STORE_UINT(uint16_t, UINT16_MAX)
    case HLO_U32: STORE_UINT(uint32_t, UINT32_MAX)
    case HLO_U64: STORE_UINT(uint64_t, UINT64_MAX)
    case HLO_F16: STORE(uint16_t, u64_to_f16(b->u[i]), s64_to_f16(b->s[i]), f64_to_f16(b->d[i]))
    case HLO_BF16: STORE(uint16_t, u64_to_bf16(b->u[i]), s64_to_bf16(b->s[i]), f64_to_bf16(b->d[i]))
    case HLO_F32: STORE(float, (float)b->u[i], (float)b->s[i], (float)b->d[i])
    case HLO_F64: STORE(double, (double)b->u[i], (double)b->s[i], b->d[i])
    case HLO_S4: STORE(int8_t, s4_wrap(b->u[i]), s4_wrap((uint64_t)b->s[i]), (int8_t)f64_to_s64_sat(b->d[i], -8, 7))
    case HLO_U4: STORE(uint8_t, b->u[i] & 15, (uint64_t)b->s[i] & 15, (uint8_t)f64_to_u64_sat(b->d[i], 15))
    case HLO_S2: STORE(int8_t, s2_wrap(b->u[i]), s2_wrap((uint64_t)b->s[i]), (int8_t)f64_to_s64_sat(b->d[i], -2, 1))
    case HLO_U2: STORE(uint8_t, b->u[i] & 3, (uint64_t)b->s[i] & 3, (uint8_t)f64_to_u64_sat(b->d[i], 3))
    default: {
      minifloat_format f;
      if (!hlo_type_minifloat(t, &f)) return;
      STORE(uint8_t, minifloat_from_f64(f, half_u64_to_odd_double(b->u[i])),
            minifloat_from_f64(f, half_s64_to_odd_double(b->s[i])), minifloat_from_f64(f, b->d[i]))
    }
  }
#undef STORE_UINT
#undef STORE_SINT
#undef STORE
}

/* Converts in's elements into res (same element count, any array types). */
static void convert_into(const hlo_literal *in, hlo_literal *res) {
  hlo_type from = in->shape.type, to = res->shape.type;
  if (from == to) {
    memcpy(res->data, in->data, (size_t)in->n * hlo_type_size(from));
    return;
  }
  cv_carrier c = carrier_of(from);
  cv_block b;
  for (int64_t s = 0; s < in->n; s += CV_CHUNK) {
    int64_t k = in->n - s < CV_CHUNK ? in->n - s : CV_CHUNK;
    load_block(from, in->data, s, k, &b);
    store_block(to, c, &b, res->data, s, k);
  }
}

kiln_status eval_convert_literal(const hlo_literal *in, hlo_type to, hlo_literal **out) {
  *out = NULL;
  if (!shape_is_array(&in->shape) || !hlo_type_is_array(to))
    return ERR_INVALID("convert: cannot convert %s to %s (arrays only)", hlo_type_name(in->shape.type),
                       hlo_type_name(to));
  hlo_shape s = in->shape;
  s.type = to;
  hlo_literal *res;
  TRY(literal_create(&s, &res));
  convert_into(in, res);
  *out = res;
  return NULL;
}

static kiln_status check_array_operand(const hlo_instr *ins, const hlo_literal *op) {
  if (shape_is_array(&op->shape) && shape_is_array(&ins->shape)) return NULL;
  char *a = shape_to_string(&op->shape), *r = shape_to_string(&ins->shape);
  kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "needs array shapes, got %s -> %s", a, r);
  free(a);
  free(r);
  return st;
}

kiln_status eval_convert(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  TRY(check_array_operand(ins, ops[0]));
  if (!shape_same_dims(&ops[0]->shape, &ins->shape)) {
    char *a = shape_to_string(&ops[0]->shape), *r = shape_to_string(&ins->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %s and result %s differ in dimensions", a, r);
    free(a);
    free(r);
    return st;
  }
  hlo_literal *res;
  TRY(literal_create(&ins->shape, &res));
  convert_into(ops[0], res);
  *out = res;
  return NULL;
}

/* XLA's dimension rule for bitcast-convert between element types of different widths:
 * the narrow side has one extra minor dimension of size (wide / narrow). */
static bool bitcast_dims_ok(const hlo_shape *in, const hlo_shape *out) {
  size_t a = hlo_type_size(in->type), b = hlo_type_size(out->type);
  if (a == b) return shape_same_dims(in, out);
  const hlo_shape *wide = a > b ? in : out, *narrow = a > b ? out : in;
  size_t ratio = a > b ? a / b : b / a;
  if (narrow->rank != wide->rank + 1 || narrow->dims[narrow->rank - 1] != (int64_t)ratio) return false;
  for (int d = 0; d < wide->rank; d++)
    if (wide->dims[d] != narrow->dims[d]) return false;
  return true;
}

kiln_status eval_bitcast_convert(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  TRY(check_array_operand(ins, ops[0]));
  if (!bitcast_dims_ok(&ops[0]->shape, &ins->shape)) {
    char *a = shape_to_string(&ops[0]->shape), *r = shape_to_string(&ins->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins,
                              "cannot bitcast %s to %s (same width needs equal dimensions; different widths "
                              "need one extra minor dimension of the width ratio on the narrow side)",
                              a, r);
    free(a);
    free(r);
    return st;
  }
  hlo_literal *res;
  TRY(literal_create(&ins->shape, &res));
  memcpy(res->data, ops[0]->data, (size_t)shape_byte_size(&ins->shape));
  if (res->shape.type == HLO_PRED) { /* keep preds canonical (0/1) for every later kernel */
    uint8_t *p = res->data;
    for (int64_t i = 0; i < res->n; i++) p[i] = p[i] != 0;
  }
  *out = res;
  return NULL;
}

/* XLA's reduce-precision: round the mantissa to nearest-even at mantissa_bits, then
 * send exponents above the reduced format's range to inf and those at or below its
 * smallest normal exponent to zero (reduced-format subnormals flush). NaN stays the
 * input NaN, except that with no mantissa bits NaN cannot be represented and becomes
 * +inf. */
#define DEFINE_REDUCE_PRECISION(NAME, FT, UT, MBITS, EBITS)                               \
  FT NAME(FT v, int exponent_bits, int mantissa_bits) {                                  \
    UT u;                                                                                \
    memcpy(&u, &v, sizeof u);                                                            \
    if (mantissa_bits < MBITS) {                                                         \
      UT last_bit = (UT)1 << (MBITS - mantissa_bits);                                    \
      UT bias = (last_bit >> 1) - 1 + ((u & last_bit) >> (MBITS - mantissa_bits));       \
      u = (u + bias) & ~(last_bit - 1);                                                  \
    }                                                                                    \
    if (exponent_bits < EBITS) {                                                         \
      UT sign_mask = (UT)1 << (MBITS + EBITS);                                           \
      UT exp_mask = (((UT)1 << EBITS) - 1) << MBITS;                                     \
      UT src_bias = ((UT)1 << (EBITS - 1)) - 1;                                          \
      UT reduced_bias = ((UT)1 << (exponent_bits - 1)) - 1;                              \
      UT exponent = u & exp_mask;                                                        \
      if (exponent > ((src_bias + reduced_bias) << MBITS))                               \
        u = (u & sign_mask) | exp_mask;                                                  \
      else if (exponent <= ((src_bias - reduced_bias) << MBITS))                         \
        u = u & sign_mask;                                                               \
    }                                                                                    \
    if (isnan(v)) return mantissa_bits > 0 ? v : (FT)INFINITY;                           \
    FT r;                                                                                \
    memcpy(&r, &u, sizeof r);                                                            \
    return r;                                                                            \
  }

DEFINE_REDUCE_PRECISION(eval_reduce_precision_f32, float, uint32_t, 23, 8)
DEFINE_REDUCE_PRECISION(eval_reduce_precision_f64, double, uint64_t, 52, 11)

kiln_status eval_reduce_precision(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  TRY(check_array_operand(ins, ops[0]));
  hlo_type t = ops[0]->shape.type;
  if (!hlo_type_is_float(t) || hlo_type_is_narrow(t) || ins->shape.type != t || ops[0]->n != shape_elements(&ins->shape))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "needs an f16, bf16, f32 or f64 operand of the result's shape, got %s",
                    hlo_type_name(t));
  int eb = (int)ins->exponent_bits, mb = (int)ins->mantissa_bits;
  if (ins->exponent_bits < 1 || ins->exponent_bits > 1024 || ins->mantissa_bits < 0 || ins->mantissa_bits > 1024)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid exponent_bits=%lld mantissa_bits=%lld (need >= 1 and >= 0)",
                    (long long)ins->exponent_bits, (long long)ins->mantissa_bits);
  hlo_literal *res;
  TRY(literal_create(&ins->shape, &res));
  int64_t n = res->n;
  switch (t) {
    case HLO_F32: {
      const float *a = ops[0]->data;
      float *r = res->data;
      for (int64_t i = 0; i < n; i++) r[i] = eval_reduce_precision_f32(a[i], eb, mb);
      break;
    }
    case HLO_F64: {
      const double *a = ops[0]->data;
      double *r = res->data;
      for (int64_t i = 0; i < n; i++) r[i] = eval_reduce_precision_f64(a[i], eb, mb);
      break;
    }
    case HLO_F16: {
      const uint16_t *a = ops[0]->data;
      uint16_t *r = res->data;
      for (int64_t i = 0; i < n; i++) r[i] = f32_to_f16(eval_reduce_precision_f32(f16_to_f32(a[i]), eb, mb));
      break;
    }
    default: { /* HLO_BF16 */
      const uint16_t *a = ops[0]->data;
      uint16_t *r = res->data;
      for (int64_t i = 0; i < n; i++) r[i] = f32_to_bf16(eval_reduce_precision_f32(bf16_to_f32(a[i]), eb, mb));
      break;
    }
  }
  *out = res;
  return NULL;
}
