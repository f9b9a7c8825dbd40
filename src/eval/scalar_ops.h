/* Scalar semantics shared by the evaluator's elementwise kernels and the reducer fast
 * path (private to src/eval). Keeping one definition of "maximum of two floats" or
 * "wrapping s8 add" here is what makes a recognised reducer bit-identical to calling the
 * reducer computation through the interpreter: both paths run these same functions.
 *
 * Conventions (XLA's evaluator): integer arithmetic wraps (done in uint64_t so C never
 * sees a signed overflow), maximum/minimum propagate NaN (the left NaN wins) and
 * otherwise behave like std::max / std::min (ties keep the left operand, which decides
 * the sign of max(-0, +0)); f16/bf16 compute in float and round once per operation. */
#ifndef KILN_EVAL_SCALAR_OPS_H
#define KILN_EVAL_SCALAR_OPS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"

static inline float eval_max_f32(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return a < b ? b : a;
}
static inline float eval_min_f32(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return b < a ? b : a;
}
static inline double eval_max_f64(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return a < b ? b : a;
}
static inline double eval_min_f64(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return b < a ? b : a;
}

/* NaN results of + - * / carry the first NaN operand (quieted), else the NaN the
 * hardware made (inf - inf, 0 * inf, ...). Left to itself the payload would depend on
 * which operand order the compiler picked for a commutative op, and the reducer fast
 * path could then differ from the elementwise kernel. Only NaN results take the branch. */
static inline float eval_nan_pick_f32(float r, float a, float b) {
  if (!isnan(r)) return r;
  if (isnan(a)) return half_bits_f32(half_f32_bits(a) | 0x00400000u);
  if (isnan(b)) return half_bits_f32(half_f32_bits(b) | 0x00400000u);
  return r;
}
static inline double eval_nan_pick_f64(double r, double a, double b) {
  if (!isnan(r)) return r;
  uint64_t u;
  if (isnan(a)) {
    u = half_f64_bits(a) | 0x0008000000000000ull;
  } else if (isnan(b)) {
    u = half_f64_bits(b) | 0x0008000000000000ull;
  } else {
    return r;
  }
  memcpy(&r, &u, 8);
  return r;
}

/* Wrapping integer arithmetic: the cast back to a narrower or signed type is a
 * modulo-2^N truncation (implementation-defined in C, two's complement on every
 * compiler kiln supports, and not undefined behaviour). */
#define EVAL_WRAP_ADD(T, a, b) ((T)((uint64_t)(a) + (uint64_t)(b)))
#define EVAL_WRAP_SUB(T, a, b) ((T)((uint64_t)(a) - (uint64_t)(b)))
#define EVAL_WRAP_MUL(T, a, b) ((T)((uint64_t)(a) * (uint64_t)(b)))

/* The reduce-precision kernel lives with the conversions (convert.c); elementwise.c
 * dispatches to it. */
kiln_status eval_reduce_precision(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);

/* XLA's reduce-precision on one value's bits (exposed for the unit tests' sake too). */
float eval_reduce_precision_f32(float v, int exponent_bits, int mantissa_bits);
double eval_reduce_precision_f64(double v, int exponent_bits, int mantissa_bits);

#endif
