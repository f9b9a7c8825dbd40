/* Tests of the f16 / bf16 conversions in base/half.h against references built from the
 * formats' definitions: decoding by (1 + m/2^M) * 2^(e - bias), and rounding by
 * searching the two neighbouring representable values and comparing with their exact
 * midpoint (ties to the even pattern). Nothing here reuses the code under test. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "check.h"
#include "hlo/literal.h"

typedef struct fmt {
  int exp_bits, man_bits;
  uint16_t inf; /* also "largest finite + 1" */
} fmt;

static const fmt F16 = {5, 10, 0x7c00};
static const fmt BF16 = {8, 7, 0x7f80};

/* Value of a positive pattern by definition; the pattern `inf` decodes as the next
 * power of two past the largest finite value (the overflow candidate). */
static double ref_decode(fmt f, uint16_t bits) {
  int bias = (1 << (f.exp_bits - 1)) - 1;
  int e = bits >> f.man_bits;
  int m = bits & ((1 << f.man_bits) - 1);
  if (e == 0) return ldexp((double)m, 1 - bias - f.man_bits);
  return ldexp(1.0 + ldexp((double)m, -f.man_bits), e - bias);
}

/* Round-to-nearest-even of a non-NaN double by neighbour search. */
static uint16_t ref_round(fmt f, double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double ax = fabs(x);
  if (isinf(ax)) return sign | f.inf;
  /* largest pattern a in [0, inf) with decode(a) <= ax */
  unsigned lo = 0, hi = f.inf; /* decode(lo) <= ax holds; search in [lo, hi) */
  if (ref_decode(f, (uint16_t)(f.inf - 1)) <= ax) {
    lo = f.inf - 1u;
  } else {
    while (hi - lo > 1) {
      unsigned mid = (lo + hi) / 2;
      if (ref_decode(f, (uint16_t)mid) <= ax)
        lo = mid;
      else
        hi = mid;
    }
  }
  uint16_t a = (uint16_t)lo, b = (uint16_t)(lo + 1);
  double da = ref_decode(f, a), db = ref_decode(f, b);
  double mid = (da + db) / 2; /* exact: few significant bits */
  uint16_t r;
  if (ax < mid)
    r = a;
  else if (ax > mid)
    r = b;
  else
    r = (a & 1) ? b : a;
  return sign | r;
}

static bool is_nan16(fmt f, uint16_t h) {
  uint16_t a = h & 0x7fff;
  return a > f.inf;
}

static void test_f16_decode_exhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float v = f16_to_f32((uint16_t)h);
    uint16_t a = h & 0x7fff;
    if (a > 0x7c00) {
      if (!isnan(v) || (signbit(v) != 0) != ((h & 0x8000) != 0)) bad++;
      continue;
    }
    double want = a == 0x7c00 ? INFINITY : ref_decode(F16, a);
    if (h & 0x8000) want = -want;
    if ((double)v != want || !signbit(v) != !signbit(want)) bad++;
  }
  CHECK(bad == 0);
}

static void test_bf16_decode_exhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float v = bf16_to_f32((uint16_t)h);
    uint16_t a = h & 0x7fff;
    if (a > 0x7f80) {
      if (!isnan(v)) bad++;
      continue;
    }
    double want = a == 0x7f80 ? INFINITY : ref_decode(BF16, a);
    if (h & 0x8000) want = -want;
    if ((double)v != want || !signbit(v) != !signbit(want)) bad++;
  }
  CHECK(bad == 0);
}

/* Every f16 survives f16 -> f32 -> f16 and f16 -> f64 -> f16 (NaNs stay NaN of the
 * same sign, quieted). */
static void test_roundtrip_exhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t x = (uint16_t)h;
    if (is_nan16(F16, x)) {
      uint16_t r1 = f32_to_f16(f16_to_f32(x)), r2 = f64_to_f16(f16_to_f32(x));
      if (!is_nan16(F16, r1) || !is_nan16(F16, r2) || (r1 & 0x8000) != (x & 0x8000) || !(r1 & 0x0200)) bad++;
    } else {
      if (f32_to_f16(f16_to_f32(x)) != x) bad++;
      if (f64_to_f16((double)f16_to_f32(x)) != x) bad++;
    }
    if (is_nan16(BF16, x)) {
      uint16_t r1 = f32_to_bf16(bf16_to_f32(x)), r2 = f64_to_bf16(bf16_to_f32(x));
      if (!is_nan16(BF16, r1) || !is_nan16(BF16, r2) || (r1 & 0x8000) != (x & 0x8000)) bad++;
    } else {
      if (f32_to_bf16(bf16_to_f32(x)) != x) bad++;
      if (f64_to_bf16((double)bf16_to_f32(x)) != x) bad++;
    }
  }
  CHECK(bad == 0);
}

/* Points around every rounding boundary: each value, its midpoint with the next one,
 * and the closest inputs on either side of the midpoint (in f32 and in f64). */
static int check_boundaries(fmt f, uint16_t (*from32)(float), uint16_t (*from64)(double)) {
  int bad = 0;
  for (unsigned a = 0; a < f.inf; a++) {
    double da = ref_decode(f, (uint16_t)a), db = ref_decode(f, (uint16_t)(a + 1));
    double mid = (da + db) / 2;
    double pts64[] = {da, mid, nextafter(mid, 0), nextafter(mid, INFINITY), nextafter(da, INFINITY),
                      nextafter(db, 0)};
    float mf = (float)mid;
    float pts32[] = {(float)da, mf, nextafterf(mf, 0), nextafterf(mf, INFINITY), nextafterf((float)da, INFINITY)};
    for (size_t k = 0; k < sizeof pts64 / sizeof pts64[0]; k++) {
      for (int s = 0; s < 2; s++) {
        double x = s ? -pts64[k] : pts64[k];
        if (from64(x) != ref_round(f, x)) bad++;
      }
    }
    for (size_t k = 0; k < sizeof pts32 / sizeof pts32[0]; k++) {
      for (int s = 0; s < 2; s++) {
        float x = s ? -pts32[k] : pts32[k];
        if (from32(x) != ref_round(f, (double)x)) bad++;
      }
    }
  }
  return bad;
}

static void test_f16_rounding_boundaries(void) { CHECK(check_boundaries(F16, f32_to_f16, f64_to_f16) == 0); }
static void test_bf16_rounding_boundaries(void) { CHECK(check_boundaries(BF16, f32_to_bf16, f64_to_bf16) == 0); }

static uint64_t rng_state = 0x12345678abcdefull;
static uint64_t next_rand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Random f32 and f64 inputs (all exponents for f32, a wide band for f64). */
static void test_random_rounding(void) {
  int bad = 0;
  for (int i = 0; i < 300000; i++) {
    uint32_t u = (uint32_t)next_rand();
    float x;
    memcpy(&x, &u, 4);
    if (isnan(x)) {
      if (!is_nan16(F16, f32_to_f16(x)) || !is_nan16(BF16, f32_to_bf16(x))) bad++;
      continue;
    }
    if (f32_to_f16(x) != ref_round(F16, x)) bad++;
    if (f32_to_bf16(x) != ref_round(BF16, x)) bad++;
  }
  for (int i = 0; i < 300000; i++) {
    uint64_t u = next_rand();
    /* exponent in [2^-140, 2^130] so both formats see subnormal, normal and overflow */
    uint64_t e = 1023 - 140 + (u >> 52) % 271;
    u = (u & 0x800fffffffffffffull) | (e << 52);
    double x;
    memcpy(&x, &u, 8);
    if (f64_to_f16(x) != ref_round(F16, x)) bad++;
    if (f64_to_bf16(x) != ref_round(BF16, x)) bad++;
  }
  CHECK(bad == 0);
}

/* The case that motivates direct f64 rounding: rounding to f32 first makes an exact
 * tie, which then goes to even, the wrong side. */
static void test_no_double_rounding(void) {
  double x = 1.0 + ldexp(1, -11) + ldexp(1, -40); /* just above the f16 midpoint of 1 and 1+2^-10 */
  CHECK(f64_to_f16(x) == 0x3c01);
  CHECK(f32_to_f16((float)x) == 0x3c00); /* what the two-step path would give */
  double y = 1.0 + ldexp(1, -8) + ldexp(1, -40); /* above the bf16 midpoint of 1 and 1+2^-7 */
  CHECK(f64_to_bf16(y) == 0x3f81);
  CHECK(f64_to_bf16(-y) == 0xbf81);
  /* literal_set_f64 uses the direct path */
  hlo_shape s = shape_make(HLO_F16, 0, NULL);
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  literal_set_f64(l, 0, x);
  CHECK(((uint16_t *)l->data)[0] == 0x3c01);
  literal_free(l);
  s = shape_make(HLO_BF16, 0, NULL);
  CHECK_OK(literal_create(&s, &l));
  literal_set_f64(l, 0, y);
  CHECK(((uint16_t *)l->data)[0] == 0x3f81);
  literal_free(l);
}

static void test_special_values(void) {
  CHECK(f64_to_f16(65504.0) == 0x7bff);
  CHECK(f64_to_f16(65519.99) == 0x7bff);
  CHECK(f64_to_f16(65520.0) == 0x7c00); /* tie between max (odd) and 2^16: overflow */
  CHECK(f64_to_f16(-1e300) == 0xfc00);
  CHECK(f64_to_f16(ldexp(1, -24)) == 0x0001);
  CHECK(f64_to_f16(ldexp(1, -25)) == 0x0000);                     /* tie to even zero */
  CHECK(f64_to_f16(nextafter(ldexp(1, -25), 1)) == 0x0001);       /* just above: min subnormal */
  CHECK(f64_to_f16(-ldexp(1, -26)) == 0x8000);                    /* -0 */
  CHECK(f64_to_f16(ldexp(3, -25)) == 0x0002);                     /* 1.5 ulp: tie to even 2 */
  CHECK(f64_to_f16(ldexp(1, -14) - ldexp(1, -25)) == 0x0400);     /* rounds up into the normals */
  CHECK(is_nan16(F16, f64_to_f16(NAN)));
  CHECK(f64_to_bf16(ldexp(1, -133)) == 0x0001);
  CHECK(f64_to_bf16(ldexp(1, -134)) == 0x0000);
  CHECK(f64_to_bf16(3.0e38) == 0x7f62);
  CHECK(f64_to_bf16(ldexp(2.0 - ldexp(1, -8), 127)) == 0x7f80);
  CHECK(f64_to_bf16(nextafter(ldexp(2.0 - ldexp(1, -8), 127), 0)) == 0x7f7f);
  CHECK(f64_to_bf16(-INFINITY) == 0xff80);
}

/* literal_set_f64 into integers: truncation toward zero, saturation, NaN -> 0. */
static void test_literal_set_f64_ints(void) {
  struct {
    hlo_type t;
    double v;
    int64_t want;
  } cases[] = {
      {HLO_S32, 1e20, INT32_MAX},   {HLO_S32, -1e20, INT32_MIN}, {HLO_S32, NAN, 0},
      {HLO_S32, -2.9, -2},          {HLO_S8, 300.0, 127},        {HLO_U8, -5.0, 0},
      {HLO_U8, 255.9, 255},         {HLO_S64, 1e19, INT64_MAX},  {HLO_S64, -1e19, INT64_MIN},
      {HLO_U32, 4294967296.0, 4294967295LL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hlo_shape s = shape_make(cases[i].t, 0, NULL);
    hlo_literal *l = NULL;
    CHECK_OK(literal_create(&s, &l));
    literal_set_f64(l, 0, cases[i].v);
    CHECK(literal_get_s64(l, 0) == cases[i].want);
    literal_free(l);
  }
  hlo_shape s = shape_make(HLO_U64, 0, NULL);
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  literal_set_f64(l, 0, 1e30);
  CHECK(literal_get_u64(l, 0) == UINT64_MAX);
  literal_set_f64(l, 0, 9223372036854775808.0); /* 2^63: beyond int64, inside uint64 */
  CHECK(literal_get_u64(l, 0) == 9223372036854775808ull);
  literal_free(l);
}

TEST_MAIN(TEST(test_f16_decode_exhaustive), TEST(test_bf16_decode_exhaustive), TEST(test_roundtrip_exhaustive),
          TEST(test_f16_rounding_boundaries), TEST(test_bf16_rounding_boundaries), TEST(test_random_rounding),
          TEST(test_no_double_rounding), TEST(test_special_values), TEST(test_literal_set_f64_ints))
