/* float8 / float4 conversions (see minifloat.h for the formats' rules). Both directions
 * work on bit patterns, as half.h does for f16, so that converting a large tensor costs a
 * few integer operations per element: widening places the fields in a float (subnormals
 * by one exact multiplication), narrowing rounds the double's mantissa to nearest even
 * at the target's precision (at the subnormal quantum below the smallest normal) and
 * reads overflow off the resulting pattern, which orders like the values. E8M0FNU, an
 * unsigned exponent with no mantissa, shares none of those fields' rules and has its own
 * two small functions. */
#include "base/minifloat.h"

#include <string.h>

typedef enum nan_kind {
  NAN_IEEE, /* inf at the top exponent with a zero mantissa, NaN with any other */
  NAN_FN,   /* no inf; only the all-ones pattern (either sign) is NaN */
  NAN_FNUZ, /* no inf, no negative zero; the "negative zero" pattern is the NaN */
  NAN_NONE, /* neither: overflow saturates */
} nan_kind;

typedef struct format {
  int ebits, mbits, bias;
  nan_kind nan;
  unsigned max_pattern; /* the largest finite positive pattern */
  double max;
} format;

static const format formats[] = {
    [MINIFLOAT_E4M3FN] = {4, 3, 7, NAN_FN, 0x7e, 448.0},
    [MINIFLOAT_E4M3FNUZ] = {4, 3, 8, NAN_FNUZ, 0x7f, 240.0},
    [MINIFLOAT_E5M2] = {5, 2, 15, NAN_IEEE, 0x7b, 57344.0},
    [MINIFLOAT_E5M2FNUZ] = {5, 2, 16, NAN_FNUZ, 0x7f, 57344.0},
    [MINIFLOAT_E2M1FN] = {2, 1, 1, NAN_NONE, 0x7, 6.0},
    [MINIFLOAT_E8M0FNU] = {8, 0, 127, NAN_FN, 0xfe, 0x1p127},
};

static unsigned sign_bit(const format *x) { return 1u << (x->ebits + x->mbits); }
static unsigned exp_all_ones(const format *x) { return (1u << x->ebits) - 1; }
static unsigned man_mask(const format *x) { return (1u << x->mbits) - 1; }

static float float_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* E8M0FNU: pattern e is 2^(e - 127); 0xFF is NaN (widened as +NaN, as ml_dtypes does). */
static float e8m0_to_f32(uint8_t bits) {
  if (bits == 0xff) return float_of_bits(0x7fc00000u);
  if (bits == 0) return float_of_bits(0x00400000u); /* 2^-127: an f32 subnormal */
  return float_of_bits((uint32_t)bits << 23);
}

/* Nearest power of two, ties (a mantissa of exactly 1.5) up; the pattern 0xFF past the
 * largest. Non-positive values and NaN have no pattern but NaN. Below 2^-126 (where an
 * f32 is subnormal) ml_dtypes does not round to nearest: everything up to 2^-127
 * becomes 2^-127 and everything above it 2^-126; kiln follows it, doubles too. */
static uint8_t e8m0_from_f64(double v, bool *overflow) {
  *overflow = false;
  if (!(v > 0)) return 0xff; /* zero, negative, NaN */
  uint64_t u;
  memcpy(&u, &v, 8);
  int e = (int)(u >> 52) - 1023; /* a double subnormal is far below 2^-127 */
  if (e == 0x7ff - 1023) return 0xff; /* inf */
  if (e < -126) return v > 0x1p-127 ? 1 : 0;
  if ((u >> 51) & 1) e++; /* mantissa >= 1.5 */
  if (e > 127) {
    *overflow = true;
    return 0xff;
  }
  return (uint8_t)(e + 127);
}

float minifloat_to_f32(minifloat_format f, uint8_t bits) {
  if (f == MINIFLOAT_E8M0FNU) return e8m0_to_f32(bits);
  const format *x = &formats[f];
  bits &= (uint8_t)(2 * sign_bit(x) - 1);
  bool neg = bits & sign_bit(x);
  unsigned e = (bits >> x->mbits) & exp_all_ones(x), m = bits & man_mask(x);
  uint32_t sign = neg ? 0x80000000u : 0;
  bool nan;
  switch (x->nan) {
    case NAN_IEEE:
      if (e == exp_all_ones(x) && !m) return float_of_bits(sign | 0x7f800000u);
      nan = e == exp_all_ones(x);
      break;
    case NAN_FN: nan = e == exp_all_ones(x) && m == man_mask(x); break;
    case NAN_FNUZ: nan = bits == sign_bit(x); break;
    default: nan = false; break;
  }
  if (nan) return float_of_bits(sign | 0x7fc00000u); /* the quiet NaN of its sign */
  if (e)
    return float_of_bits(sign | (uint32_t)((int)e - x->bias + 127) << 23 | (uint32_t)m << (23 - x->mbits));
  /* subnormal: m units of 2^(1 - bias - mbits), a power of two float holds exactly */
  float mag = (float)m * float_of_bits((uint32_t)(127 + 1 - x->bias - x->mbits) << 23);
  return neg ? -mag : mag;
}

static uint8_t nan_bits(const format *x, unsigned sign) {
  switch (x->nan) {
    case NAN_IEEE: return (uint8_t)(sign | (exp_all_ones(x) << x->mbits) | (1u << (x->mbits - 1)));
    case NAN_FN: return (uint8_t)(sign | (exp_all_ones(x) << x->mbits) | man_mask(x));
    case NAN_FNUZ: return (uint8_t)sign_bit(x);
    case NAN_NONE: break;
  }
  /* ml_dtypes' stand-in for a NaN the format lacks: -0 for +NaN (its quiet_NaN()),
   * negated for -NaN. */
  return (uint8_t)(sign ^ sign_bit(x));
}

/* The magnitude's pattern (exponent and mantissa fields) of |v|, rounded to nearest
 * even, for a finite non-negative double's bits au; past the largest finite pattern
 * when v rounds beyond it (capped, so it cannot wrap). */
static uint64_t round_magnitude(const format *x, uint64_t au) {
  int m = x->mbits, e = (int)(au >> 52) - 1023, emin = 1 - x->bias;
  if (e < emin) {
    /* below the smallest normal: count units of the subnormal quantum 2^(emin - m);
     * a double subnormal (e = -1023) is far below half of one */
    if (!(au >> 52)) return 0;
    uint64_t man = (au & 0xfffffffffffffull) | (1ull << 52);
    int shift = 52 + emin - m - e; /* > 52 - m */
    if (shift > 53) return 0;      /* man < 2^53 <= half a unit */
    uint64_t q = man >> shift, rem = man & ((1ull << shift) - 1), mid = 1ull << (shift - 1);
    if (rem > mid || (rem == mid && (q & 1))) q++; /* 2^m units: the smallest normal */
    return q;
  }
  if (e > 64) return (uint64_t)x->max_pattern + 1;
  int shift = 52 - m;
  uint64_t r = (au + (1ull << (shift - 1)) - 1 + ((au >> shift) & 1)) >> shift; /* a carry bumps the exponent */
  return ((uint64_t)((int64_t)(r >> m) - 1023 + x->bias) << m) | (r & man_mask(x));
}

static uint8_t encode(const format *x, double v, bool *overflow) {
  *overflow = false;
  uint64_t u;
  memcpy(&u, &v, 8);
  unsigned sign = (u >> 63) ? sign_bit(x) : 0;
  uint64_t au = u & 0x7fffffffffffffffull;
  if (au > 0x7ff0000000000000ull) return nan_bits(x, sign);
  bool inf = au == 0x7ff0000000000000ull;
  uint64_t mag = inf ? (uint64_t)x->max_pattern + 1 : round_magnitude(x, au);
  if (mag > x->max_pattern) {
    *overflow = !inf;
    switch (x->nan) {
      case NAN_IEEE: return (uint8_t)(sign | (exp_all_ones(x) << x->mbits));
      case NAN_FN:
      case NAN_FNUZ: return nan_bits(x, sign);
      case NAN_NONE: return (uint8_t)(sign | x->max_pattern);
    }
  }
  if (mag == 0) return x->nan == NAN_FNUZ ? 0 : (uint8_t)sign;
  return (uint8_t)(sign | mag);
}

uint8_t minifloat_from_f64(minifloat_format f, double v) {
  bool overflow;
  if (f == MINIFLOAT_E8M0FNU) return e8m0_from_f64(v, &overflow);
  return encode(&formats[f], v, &overflow);
}

bool minifloat_overflows(minifloat_format f, double v) {
  bool overflow;
  if (f == MINIFLOAT_E8M0FNU) {
    e8m0_from_f64(v, &overflow);
    return overflow;
  }
  encode(&formats[f], v, &overflow);
  return overflow;
}

double minifloat_max(minifloat_format f) { return formats[f].max; }

bool minifloat_has_inf(minifloat_format f) { return formats[f].nan == NAN_IEEE; }
