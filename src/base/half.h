/* IEEE binary16 and bfloat16 conversions, bit-exact with round-to-nearest-even, as XLA
 * and numpy do them. Header-only so the evaluator's inner loops can inline them. */
#ifndef KILN_BASE_HALF_H
#define KILN_BASE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t half_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float half_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline float bf16_to_f32(uint16_t h) { return half_bits_f32((uint32_t)h << 16); }

static inline uint16_t f32_to_bf16(float f) {
  uint32_t u = half_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fffu + lsb;
  return (uint16_t)(u >> 16);
}

static inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400));
      u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  return half_bits_f32(u);
}

static inline uint16_t f32_to_f16(float f) {
  uint32_t u = half_f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((au >> 13) & 0x3ff)); /* NaN */
  if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow -> inf */
  if (au < 0x38800000u) {                                  /* subnormal or zero in f16 */
    if (au < 0x33000000u) return (uint16_t)sign;           /* below half the min subnormal */
    uint32_t man = (au & 0x7fffff) | 0x800000;
    int shift = 126 - (int)(au >> 23); /* 14..24 */
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t r = au + 0xfffu + ((au >> 13) & 1); /* round to nearest even on bit 13 */
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static inline uint64_t half_f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* Direct double -> binary16 rounding. Going through float first would round twice
 * (53 -> 24 -> 11 bits) and can land on the wrong neighbour when the first rounding
 * creates a tie, so the 52-bit mantissa is rounded to 10 bits in one step. */
static inline uint16_t f64_to_f16(double d) {
  uint64_t u = half_f64_bits(d);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
  uint64_t au = u & 0x7fffffffffffffffull;
  if (au > 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7e00 | ((au >> 42) & 0x3ff)); /* quiet NaN */
  if (au >= 0x40effe0000000000ull) return (uint16_t)(sign | 0x7c00); /* >= 65520: rounds past max */
  if (au < 0x3f10000000000000ull) {                                  /* below 2^-14: subnormal */
    if (au <= 0x3e60000000000000ull) return sign;                    /* <= 2^-25 ties to zero */
    uint64_t man = (au & 0xfffffffffffffull) | (1ull << 52);
    int shift = 1051 - (int)(au >> 52); /* value in units of 2^-24 is man >> shift; 43..53 */
    uint64_t half = man >> shift;
    uint64_t rem = man & ((1ull << shift) - 1);
    uint64_t mid = 1ull << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint64_t r = au + 0x1ffffffffffull + ((au >> 42) & 1); /* round to nearest even on bit 42 */
  return (uint16_t)(sign | ((r >> 42) - (1008u << 10)));  /* rebias 1023 -> 15 */
}

/* Direct double -> bfloat16 rounding (same reason as f64_to_f16). bfloat16 shares
 * float's exponent range, so subnormals are those of float. */
static inline uint16_t f64_to_bf16(double d) {
  uint64_t u = half_f64_bits(d);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
  uint64_t au = u & 0x7fffffffffffffffull;
  if (au > 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7fc0 | ((au >> 45) & 0x7f)); /* quiet NaN */
  if (au >= 0x47eff00000000000ull) return (uint16_t)(sign | 0x7f80); /* >= (2 - 2^-8) * 2^127 */
  if (au < 0x3810000000000000ull) {                                  /* below 2^-126: subnormal */
    if (au <= 0x3790000000000000ull) return sign;                    /* <= 2^-134 ties to zero */
    uint64_t man = (au & 0xfffffffffffffull) | (1ull << 52);
    int shift = 942 - (int)(au >> 52); /* value in units of 2^-133 is man >> shift; 46..53 */
    uint64_t half = man >> shift;
    uint64_t rem = man & ((1ull << shift) - 1);
    uint64_t mid = 1ull << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint64_t r = au + 0xfffffffffffull + ((au >> 45) & 1); /* round to nearest even on bit 45 */
  return (uint16_t)(sign | ((r >> 45) - (896u << 7)));    /* rebias 1023 -> 127 */
}

/* A double within one rounding of m, rounded to odd: exact below 2^53, otherwise the
 * dropped bits are folded into the last kept bit. Rounding that to any format of at
 * most 51 bits of precision gives the correctly rounded value of m, so the 64-bit
 * integer conversions below round once, as XLA's do. */
static inline double half_u64_to_odd_double(uint64_t m) {
  if (m < (1ull << 53)) return (double)m;
  int len = 64 - __builtin_clzll(m);
  int shift = len - 53;
  uint64_t kept = m >> shift;
  if (m & ((1ull << shift) - 1)) kept |= 1;
  return (double)kept * (double)(1ull << shift); /* shift <= 11: exact */
}

static inline double half_s64_to_odd_double(int64_t v) {
  double d = half_u64_to_odd_double(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
  return v < 0 ? -d : d;
}

static inline uint16_t u64_to_f16(uint64_t v) { return f64_to_f16(half_u64_to_odd_double(v)); }
static inline uint16_t s64_to_f16(int64_t v) { return f64_to_f16(half_s64_to_odd_double(v)); }
static inline uint16_t u64_to_bf16(uint64_t v) { return f64_to_bf16(half_u64_to_odd_double(v)); }
static inline uint16_t s64_to_bf16(int64_t v) { return f64_to_bf16(half_s64_to_odd_double(v)); }

#endif
