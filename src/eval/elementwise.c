/* Elementwise kernels of the evaluator: unary and binary math and logic, compare,
 * select, clamp, is-finite, popcnt, count-leading-zeros, copy.
 *
 * Semantics follow XLA's HloEvaluator exactly (it is what every backend is compared
 * with): integer arithmetic wraps, integer division by zero gives all ones and
 * remainder by zero gives the dividend, shifts by at least the bit width give 0 (or the
 * sign fill), maximum/minimum propagate NaN, f16/bf16 compute in float and round once
 * per operation, f32 computes in float (so + - * / sqrt are bit-exact IEEE), f64 in
 * double. Each kernel switches on the element type and opcode once, outside the
 * element loop; the loops themselves are generated per type by macros. Operands of
 * rank 0 broadcast against the result (stride 0), which is what clamp's and select's
 * scalar forms need and costs nothing elsewhere. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"
#include "eval/scalar_ops.h"

/* f16/bf16 values are widened to float in blocks of this many elements. */
#define EW_CHUNK 256

#define EW_LOOP(n, body)                   \
  do {                                     \
    for (int64_t i = 0; i < (n); i++) body; \
  } while (0)

static kiln_status type_error(const hlo_instr *ins, hlo_type t) {
  return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "not defined for element type %s", hlo_type_name(t));
}

/* Element stride of operand k against a result of n elements: 1 when it has n elements,
 * 0 when it is a scalar to broadcast. */
static kiln_status operand_stride(const hlo_instr *ins, const hlo_literal *op, int k, int64_t n, int64_t *stride) {
  if (!shape_is_array(&op->shape) || !op->data) {
    char *s = shape_to_string(&op->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d has non-array shape %s", k, s);
    free(s);
    return st;
  }
  if (op->n == n) {
    *stride = 1;
    return NULL;
  }
  if (op->shape.rank == 0) {
    *stride = 0;
    return NULL;
  }
  char *s = shape_to_string(&op->shape);
  char *r = shape_to_string(&ins->shape);
  kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d shape %s does not match result shape %s", k, s, r);
  free(s);
  free(r);
  return st;
}

static kiln_status make_result(const hlo_instr *ins, hlo_literal **out) {
  if (!shape_is_array(&ins->shape)) {
    char *s = shape_to_string(&ins->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape %s is not an array", s);
    free(s);
    return st;
  }
  return literal_create(&ins->shape, out);
}

static kiln_status same_type(const hlo_instr *ins, hlo_literal *const *ops, int n_ops, hlo_type t) {
  for (int k = 0; k < n_ops; k++)
    if (ops[k]->shape.type != t)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d has element type %s, expected %s", k,
                      hlo_type_name(ops[k]->shape.type), hlo_type_name(t));
  return NULL;
}

/* ---------------------------------------------------------------- float math ---- */

/* Unary float kernels for T in {float, double}; S is the libm suffix ("f" or empty).
 * Returns false for an opcode that is not a float unary op. */
#define DEFINE_FLOAT_UNARY(NAME, T, S)                                                  \
  static bool NAME(hlo_opcode op, const T *a, T *r, int64_t n) {                       \
    switch (op) {                                                                      \
      case HLO_OP_COPY: EW_LOOP(n, r[i] = a[i]); return true;                          \
      case HLO_OP_ABS: EW_LOOP(n, r[i] = fabs##S(a[i])); return true;                  \
      case HLO_OP_CBRT: EW_LOOP(n, r[i] = cbrt##S(a[i])); return true;                 \
      case HLO_OP_CEIL: EW_LOOP(n, r[i] = ceil##S(a[i])); return true;                 \
      case HLO_OP_COSINE: EW_LOOP(n, r[i] = cos##S(a[i])); return true;                \
      case HLO_OP_ERF: EW_LOOP(n, r[i] = erf##S(a[i])); return true;                   \
      case HLO_OP_EXP: EW_LOOP(n, r[i] = exp##S(a[i])); return true;                   \
      case HLO_OP_EXPM1: EW_LOOP(n, r[i] = expm1##S(a[i])); return true;               \
      case HLO_OP_FLOOR: EW_LOOP(n, r[i] = floor##S(a[i])); return true;               \
      case HLO_OP_LOG: EW_LOOP(n, r[i] = log##S(a[i])); return true;                   \
      case HLO_OP_LOG1P: EW_LOOP(n, r[i] = log1p##S(a[i])); return true;               \
      case HLO_OP_LOGISTIC: EW_LOOP(n, r[i] = (T)1 / ((T)1 + exp##S(-a[i]))); return true; \
      case HLO_OP_NEGATE: EW_LOOP(n, r[i] = -a[i]); return true;                       \
      case HLO_OP_ROUND_NEAREST_AFZ: EW_LOOP(n, r[i] = round##S(a[i])); return true;   \
      case HLO_OP_ROUND_NEAREST_EVEN: EW_LOOP(n, r[i] = nearbyint##S(a[i])); return true; \
      case HLO_OP_RSQRT: EW_LOOP(n, r[i] = (T)1 / sqrt##S(a[i])); return true;         \
      case HLO_OP_SIGN:                                                                \
        EW_LOOP(n, r[i] = isnan(a[i]) ? a[i] : copysign##S((T)(a[i] != 0), a[i]));     \
        return true;                                                                   \
      case HLO_OP_SINE: EW_LOOP(n, r[i] = sin##S(a[i])); return true;                  \
      case HLO_OP_SQRT: EW_LOOP(n, r[i] = sqrt##S(a[i])); return true;                 \
      case HLO_OP_TAN: EW_LOOP(n, r[i] = tan##S(a[i])); return true;                   \
      case HLO_OP_TANH: EW_LOOP(n, r[i] = tanh##S(a[i])); return true;                 \
      default: return false;                                                           \
    }                                                                                  \
  }

DEFINE_FLOAT_UNARY(unary_f32, float, f)
DEFINE_FLOAT_UNARY(unary_f64, double, )

/* Binary float kernels; sa/sb are element strides (0 broadcasts a scalar). */
#define DEFINE_FLOAT_BINARY(NAME, T, S, MAXF, MINF, NANPICK)                                     \
  static bool NAME(hlo_opcode op, const T *a, int64_t sa, const T *b, int64_t sb, T *r, int64_t n) { \
    switch (op) {                                                                               \
      case HLO_OP_ADD: EW_LOOP(n, r[i] = NANPICK(a[i * sa] + b[i * sb], a[i * sa], b[i * sb])); return true; \
      case HLO_OP_SUBTRACT: EW_LOOP(n, r[i] = NANPICK(a[i * sa] - b[i * sb], a[i * sa], b[i * sb])); return true; \
      case HLO_OP_MULTIPLY: EW_LOOP(n, r[i] = NANPICK(a[i * sa] * b[i * sb], a[i * sa], b[i * sb])); return true; \
      case HLO_OP_DIVIDE: EW_LOOP(n, r[i] = NANPICK(a[i * sa] / b[i * sb], a[i * sa], b[i * sb])); return true; \
      case HLO_OP_MAXIMUM: EW_LOOP(n, r[i] = MAXF(a[i * sa], b[i * sb])); return true;          \
      case HLO_OP_MINIMUM: EW_LOOP(n, r[i] = MINF(a[i * sa], b[i * sb])); return true;          \
      case HLO_OP_POWER: EW_LOOP(n, r[i] = pow##S(a[i * sa], b[i * sb])); return true;          \
      case HLO_OP_REMAINDER: EW_LOOP(n, r[i] = fmod##S(a[i * sa], b[i * sb])); return true;     \
      case HLO_OP_ATAN2: EW_LOOP(n, r[i] = atan2##S(a[i * sa], b[i * sb])); return true;        \
      default: return false;                                                                    \
    }                                                                                           \
  }

DEFINE_FLOAT_BINARY(binary_f32, float, f, eval_max_f32, eval_min_f32, eval_nan_pick_f32)
DEFINE_FLOAT_BINARY(binary_f64, double, , eval_max_f64, eval_min_f64, eval_nan_pick_f64)

static void half_load(hlo_type t, const uint16_t *src, int64_t stride, int64_t start, int64_t k, float *dst) {
  if (t == HLO_F16)
    for (int64_t i = 0; i < k; i++) dst[i] = f16_to_f32(src[(start + i) * stride]);
  else
    for (int64_t i = 0; i < k; i++) dst[i] = bf16_to_f32(src[(start + i) * stride]);
}

static void half_store(hlo_type t, const float *src, uint16_t *dst, int64_t k) {
  if (t == HLO_F16)
    for (int64_t i = 0; i < k; i++) dst[i] = f32_to_f16(src[i]);
  else
    for (int64_t i = 0; i < k; i++) dst[i] = f32_to_bf16(src[i]);
}

/* f16/bf16: widen a block to float, run the float kernel, round each result once. */
static bool unary_half(hlo_type t, hlo_opcode op, const uint16_t *a, uint16_t *r, int64_t n) {
  float fa[EW_CHUNK], fr[EW_CHUNK];
  if (n == 0) return unary_f32(op, NULL, NULL, 0);
  for (int64_t s = 0; s < n; s += EW_CHUNK) {
    int64_t k = n - s < EW_CHUNK ? n - s : EW_CHUNK;
    half_load(t, a, 1, s, k, fa);
    if (!unary_f32(op, fa, fr, k)) return false;
    half_store(t, fr, r + s, k);
  }
  return true;
}

static bool binary_half(hlo_type t, hlo_opcode op, const uint16_t *a, int64_t sa, const uint16_t *b, int64_t sb,
                        uint16_t *r, int64_t n) {
  float fa[EW_CHUNK], fb[EW_CHUNK], fr[EW_CHUNK];
  if (n == 0) return binary_f32(op, NULL, 1, NULL, 1, NULL, 0);
  for (int64_t s = 0; s < n; s += EW_CHUNK) {
    int64_t k = n - s < EW_CHUNK ? n - s : EW_CHUNK;
    half_load(t, a, sa, s, k, fa);
    half_load(t, b, sb, s, k, fb);
    if (!binary_f32(op, fa, 1, fb, 1, fr, k)) return false;
    half_store(t, fr, r + s, k);
  }
  return true;
}

/* ---------------------------------------------------------------- integer math -- */

static inline uint64_t ew_ipow(uint64_t base, uint64_t exp) {
  uint64_t r = 1;
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}

/* Integer kernels for T (unsigned twin UT, signed twin ST, BITS wide, TMIN its minimum:
 * 0 for unsigned types). NEG tests the sign bit without a comparison that would be
 * vacuous (and warned about) for unsigned types. */
#define DEFINE_INT_KERNELS(SUF, T, UT, ST, BITS, SIGNED, TMIN)                                   \
  static bool unary_##SUF(hlo_opcode op, const T *a, T *r, int64_t n) {                         \
    switch (op) {                                                                               \
      case HLO_OP_COPY: EW_LOOP(n, r[i] = a[i]); return true;                                   \
      case HLO_OP_ABS: EW_LOOP(n, r[i] = NEG_##SUF(a[i]) ? EVAL_WRAP_SUB(T, 0, a[i]) : a[i]); return true; \
      case HLO_OP_NEGATE: EW_LOOP(n, r[i] = EVAL_WRAP_SUB(T, 0, a[i])); return true;            \
      case HLO_OP_NOT: EW_LOOP(n, r[i] = (T)(~(uint64_t)a[i])); return true;                    \
      case HLO_OP_SIGN: EW_LOOP(n, r[i] = NEG_##SUF(a[i]) ? (T)-1 : (T)(a[i] != 0)); return true; \
      case HLO_OP_POPCNT: EW_LOOP(n, r[i] = (T)__builtin_popcountll((uint64_t)(UT)a[i])); return true; \
      case HLO_OP_CLZ:                                                                          \
        EW_LOOP(n, r[i] = (UT)a[i] == 0 ? (T)BITS                                               \
                                        : (T)(__builtin_clzll((uint64_t)(UT)a[i]) - (64 - BITS))); \
        return true;                                                                            \
      default: return false;                                                                    \
    }                                                                                           \
  }                                                                                             \
  static inline T div_##SUF(T a, T b) {                                                         \
    if (b == 0) return (T)-1; /* all ones: -1 signed, the maximum unsigned */                   \
    if (b == (T)-1 && a == (T)(TMIN)) return a;                                                 \
    return (T)(a / b);                                                                          \
  }                                                                                             \
  static inline T rem_##SUF(T a, T b) {                                                         \
    if (b == 0) return a;                                                                       \
    if (b == (T)-1 && a == (T)(TMIN)) return 0;                                                 \
    return (T)(a % b);                                                                          \
  }                                                                                             \
  static inline T pow_##SUF(T a, T b) {                                                         \
    if (a == 1 || b == 0) return 1;                                                             \
    if (NEG_##SUF(b)) return 0; /* XLA: a negative exponent gives 0 unless the base is 1 */     \
    return (T)ew_ipow((uint64_t)(UT)a, (uint64_t)(UT)b);                                        \
  }                                                                                             \
  static inline T shl_##SUF(T a, T b) {                                                         \
    if ((UT)b >= BITS) return 0;                                                                \
    return (T)(UT)((uint64_t)(UT)a << (UT)b);                                                   \
  }                                                                                             \
  static inline T shrl_##SUF(T a, T b) {                                                        \
    if ((UT)b >= BITS) return 0;                                                                \
    return (T)((UT)a >> (UT)b);                                                                 \
  }                                                                                             \
  static inline T shra_##SUF(T a, T b) {                                                        \
    if ((UT)b >= BITS) return NEG_BITS_##SUF(a) ? (T)-1 : 0;                                    \
    return (T)((ST)a >> (UT)b);                                                                 \
  }                                                                                             \
  static bool binary_##SUF(hlo_opcode op, const T *a, int64_t sa, const T *b, int64_t sb, T *r, int64_t n) { \
    switch (op) {                                                                               \
      case HLO_OP_ADD: EW_LOOP(n, r[i] = EVAL_WRAP_ADD(T, a[i * sa], b[i * sb])); return true;  \
      case HLO_OP_SUBTRACT: EW_LOOP(n, r[i] = EVAL_WRAP_SUB(T, a[i * sa], b[i * sb])); return true; \
      case HLO_OP_MULTIPLY: EW_LOOP(n, r[i] = EVAL_WRAP_MUL(T, a[i * sa], b[i * sb])); return true; \
      case HLO_OP_DIVIDE: EW_LOOP(n, r[i] = div_##SUF(a[i * sa], b[i * sb])); return true;      \
      case HLO_OP_REMAINDER: EW_LOOP(n, r[i] = rem_##SUF(a[i * sa], b[i * sb])); return true;   \
      case HLO_OP_POWER: EW_LOOP(n, r[i] = pow_##SUF(a[i * sa], b[i * sb])); return true;       \
      case HLO_OP_MAXIMUM: EW_LOOP(n, r[i] = a[i * sa] < b[i * sb] ? b[i * sb] : a[i * sa]); return true; \
      case HLO_OP_MINIMUM: EW_LOOP(n, r[i] = b[i * sb] < a[i * sa] ? b[i * sb] : a[i * sa]); return true; \
      case HLO_OP_AND: EW_LOOP(n, r[i] = (T)(a[i * sa] & b[i * sb])); return true;              \
      case HLO_OP_OR: EW_LOOP(n, r[i] = (T)(a[i * sa] | b[i * sb])); return true;               \
      case HLO_OP_XOR: EW_LOOP(n, r[i] = (T)(a[i * sa] ^ b[i * sb])); return true;              \
      case HLO_OP_SHIFT_LEFT: EW_LOOP(n, r[i] = shl_##SUF(a[i * sa], b[i * sb])); return true;  \
      case HLO_OP_SHIFT_RIGHT_LOGICAL: EW_LOOP(n, r[i] = shrl_##SUF(a[i * sa], b[i * sb])); return true; \
      case HLO_OP_SHIFT_RIGHT_ARITHMETIC: EW_LOOP(n, r[i] = shra_##SUF(a[i * sa], b[i * sb])); return true; \
      default: return false;                                                                    \
    }                                                                                           \
  }

/* Sign tests: NEG_x is "negative as this type" (never for unsigned types), NEG_BITS_x
 * is "top bit set" (what arithmetic shifts fill with, for unsigned types too). */
#define NEG_s8(x) (((uint8_t)(x) >> 7) != 0)
#define NEG_s16(x) (((uint16_t)(x) >> 15) != 0)
#define NEG_s32(x) (((uint32_t)(x) >> 31) != 0)
#define NEG_s64(x) (((uint64_t)(x) >> 63) != 0)
#define NEG_u8(x) ((void)(x), 0)
#define NEG_u16(x) ((void)(x), 0)
#define NEG_u32(x) ((void)(x), 0)
#define NEG_u64(x) ((void)(x), 0)
#define NEG_BITS_s8 NEG_s8
#define NEG_BITS_s16 NEG_s16
#define NEG_BITS_s32 NEG_s32
#define NEG_BITS_s64 NEG_s64
#define NEG_BITS_u8 NEG_s8
#define NEG_BITS_u16 NEG_s16
#define NEG_BITS_u32 NEG_s32
#define NEG_BITS_u64 NEG_s64

DEFINE_INT_KERNELS(s8, int8_t, uint8_t, int8_t, 8, 1, INT8_MIN)
DEFINE_INT_KERNELS(s16, int16_t, uint16_t, int16_t, 16, 1, INT16_MIN)
DEFINE_INT_KERNELS(s32, int32_t, uint32_t, int32_t, 32, 1, INT32_MIN)
DEFINE_INT_KERNELS(s64, int64_t, uint64_t, int64_t, 64, 1, INT64_MIN)
DEFINE_INT_KERNELS(u8, uint8_t, uint8_t, int8_t, 8, 0, 0)
DEFINE_INT_KERNELS(u16, uint16_t, uint16_t, int16_t, 16, 0, 0)
DEFINE_INT_KERNELS(u32, uint32_t, uint32_t, int32_t, 32, 0, 0)
DEFINE_INT_KERNELS(u64, uint64_t, uint64_t, int64_t, 64, 0, 0)

/* pred is bool as C++ sees it in XLA's evaluator: arithmetic promotes to int and
 * converts back with != 0, so add is or, multiply is and, subtract is xor. */
static bool unary_pred(hlo_opcode op, const uint8_t *a, uint8_t *r, int64_t n) {
  switch (op) {
    case HLO_OP_COPY:
    case HLO_OP_ABS:
    case HLO_OP_NEGATE:
    case HLO_OP_SIGN: EW_LOOP(n, r[i] = a[i] != 0); return true;
    case HLO_OP_NOT: EW_LOOP(n, r[i] = a[i] == 0); return true;
    default: return false;
  }
}

static bool binary_pred(hlo_opcode op, const uint8_t *a, int64_t sa, const uint8_t *b, int64_t sb, uint8_t *r,
                        int64_t n) {
#define PA (a[i * sa] != 0)
#define PB (b[i * sb] != 0)
  switch (op) {
    case HLO_OP_AND:
    case HLO_OP_MINIMUM:
    case HLO_OP_MULTIPLY: EW_LOOP(n, r[i] = PA & PB); return true;
    case HLO_OP_OR:
    case HLO_OP_MAXIMUM:
    case HLO_OP_ADD: EW_LOOP(n, r[i] = PA | PB); return true;
    case HLO_OP_XOR:
    case HLO_OP_SUBTRACT: EW_LOOP(n, r[i] = PA ^ PB); return true;
    case HLO_OP_DIVIDE: EW_LOOP(n, r[i] = PB ? PA : 1); return true;
    case HLO_OP_REMAINDER: EW_LOOP(n, r[i] = PB ? 0 : PA); return true;
    case HLO_OP_POWER: EW_LOOP(n, r[i] = PA | !PB); return true;
    default: return false;
  }
#undef PA
#undef PB
}

/* ---------------------------------------------------------------- dispatch ------ */

static kiln_status unary(const hlo_instr *ins, const hlo_literal *a, hlo_literal *r) {
  hlo_type t = a->shape.type;
  int64_t n = r->n;
  bool ok;
  switch (t) {
    case HLO_PRED: ok = unary_pred(ins->op, a->data, r->data, n); break;
    case HLO_S8: ok = unary_s8(ins->op, a->data, r->data, n); break;
    case HLO_S16: ok = unary_s16(ins->op, a->data, r->data, n); break;
    case HLO_S32: ok = unary_s32(ins->op, a->data, r->data, n); break;
    case HLO_S64: ok = unary_s64(ins->op, a->data, r->data, n); break;
    case HLO_U8: ok = unary_u8(ins->op, a->data, r->data, n); break;
    case HLO_U16: ok = unary_u16(ins->op, a->data, r->data, n); break;
    case HLO_U32: ok = unary_u32(ins->op, a->data, r->data, n); break;
    case HLO_U64: ok = unary_u64(ins->op, a->data, r->data, n); break;
    case HLO_F16:
    case HLO_BF16: ok = unary_half(t, ins->op, a->data, r->data, n); break;
    case HLO_F32: ok = unary_f32(ins->op, a->data, r->data, n); break;
    case HLO_F64: ok = unary_f64(ins->op, a->data, r->data, n); break;
    default: ok = false; break;
  }
  return ok ? NULL : type_error(ins, t);
}

static kiln_status binary(const hlo_instr *ins, const hlo_literal *a, int64_t sa, const hlo_literal *b, int64_t sb,
                          hlo_literal *r) {
  hlo_type t = a->shape.type;
  int64_t n = r->n;
  bool ok;
  switch (t) {
#define BIN(SUF, CT) ok = binary_##SUF(ins->op, (const CT *)a->data, sa, (const CT *)b->data, sb, (CT *)r->data, n)
    case HLO_PRED: BIN(pred, uint8_t); break;
    case HLO_S8: BIN(s8, int8_t); break;
    case HLO_S16: BIN(s16, int16_t); break;
    case HLO_S32: BIN(s32, int32_t); break;
    case HLO_S64: BIN(s64, int64_t); break;
    case HLO_U8: BIN(u8, uint8_t); break;
    case HLO_U16: BIN(u16, uint16_t); break;
    case HLO_U32: BIN(u32, uint32_t); break;
    case HLO_U64: BIN(u64, uint64_t); break;
    case HLO_F32: BIN(f32, float); break;
    case HLO_F64: BIN(f64, double); break;
#undef BIN
    case HLO_F16:
    case HLO_BF16: ok = binary_half(t, ins->op, a->data, sa, b->data, sb, r->data, n); break;
    default: ok = false; break;
  }
  return ok ? NULL : type_error(ins, t);
}

/* ---------------------------------------------------------------- compare ------- */

/* Total order keys: mapping sign-magnitude float bits to unsigned integers whose
 * natural order is -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN. */
static inline uint16_t total_key16(uint16_t u) { return (u & 0x8000u) ? (uint16_t)~u : (uint16_t)(u | 0x8000u); }
static inline uint32_t total_key32(uint32_t u) { return (u & 0x80000000u) ? ~u : (u | 0x80000000u); }
static inline uint64_t total_key64(uint64_t u) {
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}
static inline uint32_t f32_bits_at(const float *p, int64_t i) {
  uint32_t u;
  memcpy(&u, p + i, 4);
  return u;
}
static inline uint64_t f64_bits_at(const double *p, int64_t i) {
  uint64_t u;
  memcpy(&u, p + i, 8);
  return u;
}

/* Six direction loops over values produced by GA(i) / GB(i). */
#define CMP_LOOPS(dir, n, r, GA, GB)                              \
  do {                                                            \
    switch (dir) {                                                \
      case HLO_DIR_EQ: EW_LOOP(n, r[i] = GA(i) == GB(i)); break;  \
      case HLO_DIR_NE: EW_LOOP(n, r[i] = GA(i) != GB(i)); break;  \
      case HLO_DIR_LT: EW_LOOP(n, r[i] = GA(i) < GB(i)); break;   \
      case HLO_DIR_LE: EW_LOOP(n, r[i] = GA(i) <= GB(i)); break;  \
      case HLO_DIR_GT: EW_LOOP(n, r[i] = GA(i) > GB(i)); break;   \
      case HLO_DIR_GE: EW_LOOP(n, r[i] = GA(i) >= GB(i)); break;  \
    }                                                             \
  } while (0)

static kiln_status compare(const hlo_instr *ins, hlo_literal *const *ops, hlo_literal *res) {
  const hlo_literal *la = ops[0], *lb = ops[1];
  hlo_type t = la->shape.type;
  TRY(same_type(ins, ops, 2, t));
  if (res->shape.type != HLO_PRED)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result must be pred, not %s", hlo_type_name(res->shape.type));
  if ((unsigned)ins->direction > HLO_DIR_GE) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid direction");
  int64_t n = res->n, sa, sb;
  TRY(operand_stride(ins, la, 0, n, &sa));
  TRY(operand_stride(ins, lb, 1, n, &sb));
  uint8_t *r = res->data;
  hlo_direction dir = ins->direction;
  bool total = ins->compare_type == HLO_CMP_TOTALORDER;
  switch (t) {
#define NATIVE(CT)                                      \
  {                                                     \
    const CT *a = la->data, *b = lb->data;              \
    CMP_LOOPS(dir, n, r, GA_NATIVE, GB_NATIVE);         \
    return NULL;                                        \
  }
#define GA_NATIVE(i) a[(i) * sa]
#define GB_NATIVE(i) b[(i) * sb]
    case HLO_PRED: {
      const uint8_t *a = la->data, *b = lb->data;
#define GA_PRED(i) (a[(i) * sa] != 0)
#define GB_PRED(i) (b[(i) * sb] != 0)
      CMP_LOOPS(dir, n, r, GA_PRED, GB_PRED);
      return NULL;
    }
    case HLO_S8: NATIVE(int8_t)
    case HLO_S16: NATIVE(int16_t)
    case HLO_S32: NATIVE(int32_t)
    case HLO_S64: NATIVE(int64_t)
    case HLO_U8: NATIVE(uint8_t)
    case HLO_U16: NATIVE(uint16_t)
    case HLO_U32: NATIVE(uint32_t)
    case HLO_U64: NATIVE(uint64_t)
    case HLO_F32:
      if (!total) NATIVE(float)
      {
        const float *a = la->data, *b = lb->data;
#define GA_K32(i) total_key32(f32_bits_at(a, (i) * sa))
#define GB_K32(i) total_key32(f32_bits_at(b, (i) * sb))
        CMP_LOOPS(dir, n, r, GA_K32, GB_K32);
        return NULL;
      }
    case HLO_F64:
      if (!total) NATIVE(double)
      {
        const double *a = la->data, *b = lb->data;
#define GA_K64(i) total_key64(f64_bits_at(a, (i) * sa))
#define GB_K64(i) total_key64(f64_bits_at(b, (i) * sb))
        CMP_LOOPS(dir, n, r, GA_K64, GB_K64);
        return NULL;
      }
    case HLO_F16:
    case HLO_BF16: {
      const uint16_t *a = la->data, *b = lb->data;
      if (total) {
#define GA_K16(i) total_key16(a[(i) * sa])
#define GB_K16(i) total_key16(b[(i) * sb])
        CMP_LOOPS(dir, n, r, GA_K16, GB_K16);
      } else if (t == HLO_F16) {
#define GA_F16(i) f16_to_f32(a[(i) * sa])
#define GB_F16(i) f16_to_f32(b[(i) * sb])
        CMP_LOOPS(dir, n, r, GA_F16, GB_F16);
      } else {
#define GA_BF16(i) bf16_to_f32(a[(i) * sa])
#define GB_BF16(i) bf16_to_f32(b[(i) * sb])
        CMP_LOOPS(dir, n, r, GA_BF16, GB_BF16);
      }
      return NULL;
    }
#undef NATIVE
    default: return type_error(ins, t);
  }
}

/* ---------------------------------------------------------------- select/clamp -- */

static kiln_status select_op(const hlo_instr *ins, hlo_literal *const *ops, hlo_literal *res) {
  if (ops[0]->shape.type != HLO_PRED)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "predicate must be pred, not %s", hlo_type_name(ops[0]->shape.type));
  hlo_type t = res->shape.type;
  TRY(same_type(ins, ops + 1, 2, t));
  int64_t n = res->n, sp, sa, sb;
  TRY(operand_stride(ins, ops[0], 0, n, &sp));
  TRY(operand_stride(ins, ops[1], 1, n, &sa));
  TRY(operand_stride(ins, ops[2], 2, n, &sb));
  const uint8_t *p = ops[0]->data;
  switch (hlo_type_size(t)) {
#define SEL(CT)                                                      \
  {                                                                  \
    const CT *a = ops[1]->data, *b = ops[2]->data;                   \
    CT *r = res->data;                                               \
    EW_LOOP(n, r[i] = p[i * sp] ? a[i * sa] : b[i * sb]);            \
    return NULL;                                                     \
  }
    case 1: SEL(uint8_t)
    case 2: SEL(uint16_t)
    case 4: SEL(uint32_t)
    case 8: SEL(uint64_t)
#undef SEL
    default: return type_error(ins, t);
  }
}

static inline float clamp_f32(float lo, float x, float hi) {
  if (isnan(lo)) return lo;
  if (isnan(x)) return x;
  if (isnan(hi)) return hi;
  float m = x < lo ? lo : x;
  return m < hi ? m : hi;
}
static inline double clamp_f64(double lo, double x, double hi) {
  if (isnan(lo)) return lo;
  if (isnan(x)) return x;
  if (isnan(hi)) return hi;
  double m = x < lo ? lo : x;
  return m < hi ? m : hi;
}

/* clamp(min, x, max) = min(max, max(x, min)) in std::min/std::max order. */
static kiln_status clamp_op(const hlo_instr *ins, hlo_literal *const *ops, hlo_literal *res) {
  hlo_type t = res->shape.type;
  TRY(same_type(ins, ops, 3, t));
  int64_t n = res->n, s0, s1, s2;
  TRY(operand_stride(ins, ops[0], 0, n, &s0));
  TRY(operand_stride(ins, ops[1], 1, n, &s1));
  TRY(operand_stride(ins, ops[2], 2, n, &s2));
  switch (t) {
#define CLAMP_INT(CT)                                                      \
  {                                                                        \
    const CT *lo = ops[0]->data, *x = ops[1]->data, *hi = ops[2]->data;    \
    CT *r = res->data;                                                     \
    for (int64_t i = 0; i < n; i++) {                                      \
      CT m = x[i * s1] < lo[i * s0] ? lo[i * s0] : x[i * s1];              \
      r[i] = m < hi[i * s2] ? m : hi[i * s2];                              \
    }                                                                      \
    return NULL;                                                           \
  }
    case HLO_PRED: {
      const uint8_t *lo = ops[0]->data, *x = ops[1]->data, *hi = ops[2]->data;
      uint8_t *r = res->data;
      for (int64_t i = 0; i < n; i++) {
        uint8_t l = lo[i * s0] != 0, v = x[i * s1] != 0, h = hi[i * s2] != 0;
        uint8_t m = v < l ? l : v;
        r[i] = m < h ? m : h;
      }
      return NULL;
    }
    case HLO_S8: CLAMP_INT(int8_t)
    case HLO_S16: CLAMP_INT(int16_t)
    case HLO_S32: CLAMP_INT(int32_t)
    case HLO_S64: CLAMP_INT(int64_t)
    case HLO_U8: CLAMP_INT(uint8_t)
    case HLO_U16: CLAMP_INT(uint16_t)
    case HLO_U32: CLAMP_INT(uint32_t)
    case HLO_U64: CLAMP_INT(uint64_t)
#undef CLAMP_INT
    case HLO_F32: {
      const float *lo = ops[0]->data, *x = ops[1]->data, *hi = ops[2]->data;
      float *r = res->data;
      EW_LOOP(n, r[i] = clamp_f32(lo[i * s0], x[i * s1], hi[i * s2]));
      return NULL;
    }
    case HLO_F64: {
      const double *lo = ops[0]->data, *x = ops[1]->data, *hi = ops[2]->data;
      double *r = res->data;
      EW_LOOP(n, r[i] = clamp_f64(lo[i * s0], x[i * s1], hi[i * s2]));
      return NULL;
    }
    case HLO_F16:
    case HLO_BF16: {
      const uint16_t *lo = ops[0]->data, *x = ops[1]->data, *hi = ops[2]->data;
      uint16_t *r = res->data;
      /* The result is one of the inputs, so pick by bits rather than round-tripping. */
      float (*widen)(uint16_t) = t == HLO_F16 ? f16_to_f32 : bf16_to_f32;
      for (int64_t i = 0; i < n; i++) {
        uint16_t bl = lo[i * s0], bx = x[i * s1], bh = hi[i * s2];
        float fl = widen(bl), fx = widen(bx), fh = widen(bh);
        uint16_t pick;
        if (isnan(fl))
          pick = bl;
        else if (isnan(fx))
          pick = bx;
        else if (isnan(fh))
          pick = bh;
        else {
          uint16_t bm = fx < fl ? bl : bx;
          float fm = fx < fl ? fl : fx;
          pick = fm < fh ? bm : bh;
        }
        r[i] = pick;
      }
      return NULL;
    }
    default: return type_error(ins, t);
  }
}

static kiln_status is_finite(const hlo_instr *ins, const hlo_literal *a, hlo_literal *res) {
  if (res->shape.type != HLO_PRED)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result must be pred, not %s", hlo_type_name(res->shape.type));
  int64_t n = res->n;
  uint8_t *r = res->data;
  switch (a->shape.type) {
    case HLO_F16: {
      const uint16_t *p = a->data;
      EW_LOOP(n, r[i] = (p[i] & 0x7c00u) != 0x7c00u);
      return NULL;
    }
    case HLO_BF16: {
      const uint16_t *p = a->data;
      EW_LOOP(n, r[i] = (p[i] & 0x7f80u) != 0x7f80u);
      return NULL;
    }
    case HLO_F32: {
      const float *p = a->data;
      EW_LOOP(n, r[i] = isfinite(p[i]) != 0);
      return NULL;
    }
    case HLO_F64: {
      const double *p = a->data;
      EW_LOOP(n, r[i] = isfinite(p[i]) != 0);
      return NULL;
    }
    default: return type_error(ins, a->shape.type);
  }
}

kiln_status eval_elementwise(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  switch (ins->op) {
    case HLO_OP_CONVERT: return eval_convert(ctx, ins, ops, out);
    case HLO_OP_BITCAST_CONVERT: return eval_bitcast_convert(ctx, ins, ops, out);
    case HLO_OP_REDUCE_PRECISION: return eval_reduce_precision(ctx, ins, ops, out);
    default: break;
  }
  int arity = hlo_opcode_arity(ins->op);
  if (arity < 1 || arity > 3 || ins->n_operands != arity)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected %d operands, got %d", arity, ins->n_operands);
  hlo_literal *res = NULL;
  TRY(make_result(ins, &res));
  kiln_status st = NULL;
  int64_t n = res->n;
  switch (ins->op) {
    case HLO_OP_COMPARE: st = compare(ins, ops, res); break;
    case HLO_OP_SELECT: st = select_op(ins, ops, res); break;
    case HLO_OP_CLAMP: st = clamp_op(ins, ops, res); break;
    case HLO_OP_IS_FINITE: {
      int64_t s;
      st = operand_stride(ins, ops[0], 0, n, &s);
      if (!st && s != 1) st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand and result sizes differ");
      if (!st) st = is_finite(ins, ops[0], res);
      break;
    }
    default:
      st = same_type(ins, ops, arity, res->shape.type);
      if (st) break;
      if (arity == 1) {
        int64_t s;
        st = operand_stride(ins, ops[0], 0, n, &s);
        if (!st && s != 1) st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand and result sizes differ");
        if (!st) st = unary(ins, ops[0], res);
      } else if (arity == 2) {
        int64_t sa, sb;
        st = operand_stride(ins, ops[0], 0, n, &sa);
        if (!st) st = operand_stride(ins, ops[1], 1, n, &sb);
        if (!st) st = binary(ins, ops[0], sa, ops[1], sb, res);
      } else {
        st = EVAL_ERR(KILN_UNIMPLEMENTED, ins, "not an elementwise operation");
      }
      break;
  }
  if (st) {
    literal_free(res);
    return st;
  }
  *out = res;
  return NULL;
}
