/* Tests of the float8 / float4 conversions in base/minifloat.h (E8M0FNU, an exponent
 * alone, has a test of its own): hand-computed bit patterns
 * of each format (ties, overflow, NaN, zeros, subnormals), every pattern decoded against
 * the formats' definitions ((1 + m/2^M) * 2^(e - bias), subnormals m * 2^(1 - bias - M))
 * and widened and narrowed back, and rounding checked at every boundary against a
 * neighbour search that compares with the exact midpoint and its neighbours (ties to the
 * even pattern; past the largest finite value, each format's overflow rule). Nothing
 * here reuses the code under test. ml_dtypes' own tables are compared by
 * tests/onnx_suite/test_narrow_types.py. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "base/minifloat.h"
#include "check.h"

typedef enum overflow_kind { TO_INF, TO_SIGNED_NAN, TO_0X80, TO_MAX } overflow_kind;

typedef struct ref_format {
  const char *name;
  minifloat_format f;
  int ebits, mbits, bias;
  unsigned max_pattern; /* largest finite positive pattern */
  overflow_kind overflow;
} ref_format;

static const ref_format formats[] = {
    {"E4M3FN", MINIFLOAT_E4M3FN, 4, 3, 7, 0x7e, TO_SIGNED_NAN},
    {"E4M3FNUZ", MINIFLOAT_E4M3FNUZ, 4, 3, 8, 0x7f, TO_0X80},
    {"E5M2", MINIFLOAT_E5M2, 5, 2, 15, 0x7b, TO_INF},
    {"E5M2FNUZ", MINIFLOAT_E5M2FNUZ, 5, 2, 16, 0x7f, TO_0X80},
    {"E2M1FN", MINIFLOAT_E2M1FN, 2, 1, 1, 0x7, TO_MAX},
};
#define N_FORMATS ((int)(sizeof formats / sizeof formats[0]))

static unsigned sign_of(const ref_format *r) { return 1u << (r->ebits + r->mbits); }

/* Value of a positive finite pattern by definition. */
static double ref_decode(const ref_format *r, unsigned bits) {
  int e = (int)(bits >> r->mbits), m = (int)(bits & ((1u << r->mbits) - 1));
  if (e == 0) return ldexp(m, 1 - r->bias - r->mbits);
  return ldexp(1.0 + ldexp(m, -r->mbits), e - r->bias);
}

/* The NaN pattern of a sign, or -1 when the format has none. */
static int ref_nan(const ref_format *r, bool neg) {
  switch (r->overflow) {
    case TO_INF: return (int)((neg ? sign_of(r) : 0) | 0x7e); /* quiet: top mantissa bit */
    case TO_SIGNED_NAN: return (int)((neg ? sign_of(r) : 0) | 0x7f);
    case TO_0X80: return 0x80;
    case TO_MAX: return -1;
  }
  return -1;
}

/* Round-to-nearest-even of a non-NaN double by neighbour search. */
static unsigned ref_round(const ref_format *r, double x) {
  unsigned sign = signbit(x) ? sign_of(r) : 0;
  double ax = fabs(x);
  double max = ref_decode(r, r->max_pattern);
  /* the overflow candidate: the next value of the largest binade */
  double next = max + ldexp(1.0, ilogb(max) - r->mbits);
  unsigned mag;
  if (isinf(ax) || ax > (max + next) / 2 || (ax == (max + next) / 2 && (r->max_pattern & 1))) {
    switch (r->overflow) {
      case TO_INF: return sign | 0x7c;
      case TO_SIGNED_NAN: return sign | 0x7f;
      case TO_0X80: return 0x80;
      case TO_MAX: return sign | r->max_pattern;
    }
  }
  if (ax >= max) {
    mag = r->max_pattern;
  } else {
    unsigned a = 0;
    while (ref_decode(r, a + 1) <= ax) a++;
    double lo = ref_decode(r, a), hi = ref_decode(r, a + 1), mid = (lo + hi) / 2;
    mag = ax < mid ? a : ax > mid ? a + 1 : (a & 1) ? a + 1 : a;
  }
  if (mag == 0 && r->overflow == TO_0X80) return 0; /* no negative zero */
  return sign | mag;
}

static const char *hex(unsigned v) {
  static char buf[16];
  snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

static void check_pattern(const ref_format *r, double x, unsigned want, int *bad) {
  unsigned got = minifloat_from_f64(r->f, x);
  if (got != want) {
    if (*bad < 5) fprintf(stderr, "  %s: %.17g -> %s, want 0x%02x\n", r->name, x, hex(got), want);
    (*bad)++;
  }
}

static void test_hand_computed_patterns(void) {
  static const struct {
    minifloat_format f;
    double x;
    unsigned bits;
  } cases[] = {
      /* E4M3FN: 1 = 0.0111.000; largest 448 = 0.1111.110; 464 ties to 448 (even
       * mantissa), 465 overflows to NaN; inf -> NaN with its sign; the smallest
       * subnormal 2^-9; 2^-10 ties to +0; 3 * 2^-10 ties to the even 2^-8. */
      {MINIFLOAT_E4M3FN, 1.0, 0x38},      {MINIFLOAT_E4M3FN, -448.0, 0xfe},   {MINIFLOAT_E4M3FN, 464.0, 0x7e},
      {MINIFLOAT_E4M3FN, 465.0, 0x7f},    {MINIFLOAT_E4M3FN, -INFINITY, 0xff}, {MINIFLOAT_E4M3FN, 0x1p-9, 0x01},
      {MINIFLOAT_E4M3FN, 0x1p-10, 0x00},  {MINIFLOAT_E4M3FN, 0x3p-10, 0x02},  {MINIFLOAT_E4M3FN, -0.0, 0x80},
      {MINIFLOAT_E4M3FN, 0x1p-6, 0x08},   {MINIFLOAT_E4M3FN, NAN, 0x7f},      {MINIFLOAT_E4M3FN, -NAN, 0xff},
      /* E4M3FNUZ: bias 8, so 1 = 0.1000.000; largest 240 = 0.1111.111, 248 ties up and
       * overflows to the one NaN 0x80; -0 is +0. */
      {MINIFLOAT_E4M3FNUZ, 1.0, 0x40},    {MINIFLOAT_E4M3FNUZ, 240.0, 0x7f},  {MINIFLOAT_E4M3FNUZ, 248.0, 0x80},
      {MINIFLOAT_E4M3FNUZ, -0.0, 0x00},   {MINIFLOAT_E4M3FNUZ, -1e-9, 0x00},  {MINIFLOAT_E4M3FNUZ, -NAN, 0x80},
      {MINIFLOAT_E4M3FNUZ, 0x1p-10, 0x01},
      /* E5M2: IEEE-like; 57344 = 0.11110.11, 61440 ties to the even inf, -inf keeps its
       * sign, NaN is the quiet 0.11111.10. */
      {MINIFLOAT_E5M2, 1.0, 0x3c},        {MINIFLOAT_E5M2, 57344.0, 0x7b},    {MINIFLOAT_E5M2, 61439.0, 0x7b},
      {MINIFLOAT_E5M2, 61440.0, 0x7c},    {MINIFLOAT_E5M2, -INFINITY, 0xfc},  {MINIFLOAT_E5M2, NAN, 0x7e},
      {MINIFLOAT_E5M2, 0x1p-16, 0x01},    {MINIFLOAT_E5M2, -0.0, 0x80},
      /* E5M2FNUZ: bias 16; largest 57344 = 0.11111.11, overflow and inf -> 0x80. */
      {MINIFLOAT_E5M2FNUZ, 1.0, 0x40},    {MINIFLOAT_E5M2FNUZ, 57344.0, 0x7f}, {MINIFLOAT_E5M2FNUZ, 61440.0, 0x80},
      {MINIFLOAT_E5M2FNUZ, INFINITY, 0x80}, {MINIFLOAT_E5M2FNUZ, 0x1p-17, 0x01},
      /* E2M1FN: 0, 0.5, 1, 1.5, 2, 3, 4, 6; 0.25 ties to 0, 0.75 to 1, 5 to 4; 7 and
       * beyond saturate to 6; NaN becomes ml_dtypes' -0 for +NaN. */
      {MINIFLOAT_E2M1FN, 1.0, 0x2},       {MINIFLOAT_E2M1FN, 6.0, 0x7},       {MINIFLOAT_E2M1FN, 0.25, 0x0},
      {MINIFLOAT_E2M1FN, 0.75, 0x2},      {MINIFLOAT_E2M1FN, 5.0, 0x6},       {MINIFLOAT_E2M1FN, 7.0, 0x7},
      {MINIFLOAT_E2M1FN, -1e6, 0xf},      {MINIFLOAT_E2M1FN, INFINITY, 0x7},  {MINIFLOAT_E2M1FN, -0.0, 0x8},
      {MINIFLOAT_E2M1FN, NAN, 0x8},       {MINIFLOAT_E2M1FN, -NAN, 0x0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unsigned got = minifloat_from_f64(cases[i].f, cases[i].x);
    if (got != cases[i].bits) {
      fprintf(stderr, "  format %d: %g -> %s, want 0x%02x\n", (int)cases[i].f, cases[i].x, hex(got), cases[i].bits);
      CHECK(!"hand-computed pattern");
    }
  }
  CHECK(minifloat_to_f32(MINIFLOAT_E4M3FN, 0x7e) == 448.0f && minifloat_to_f32(MINIFLOAT_E4M3FNUZ, 0x7f) == 240.0f);
  CHECK(minifloat_to_f32(MINIFLOAT_E5M2, 0x7c) == INFINITY && minifloat_to_f32(MINIFLOAT_E2M1FN, 0xf) == -6.0f);
  CHECK(isnan(minifloat_to_f32(MINIFLOAT_E4M3FNUZ, 0x80)) && isnan(minifloat_to_f32(MINIFLOAT_E5M2, 0x7d)));
}

/* A double rounds once: 1.0625 + 2^-40 is just above the tie between 1 and 1.125, so it
 * goes up (through float it would first become the tie and then 1). */
static void test_double_rounds_once(void) {
  CHECK(minifloat_from_f64(MINIFLOAT_E4M3FN, 1.0625 + 0x1p-40) == 0x39);
  CHECK(minifloat_from_f64(MINIFLOAT_E4M3FN, (float)(1.0625 + 0x1p-40)) == 0x38);
  CHECK(minifloat_from_f64(MINIFLOAT_E2M1FN, 1.25 + 0x1p-40) == 0x3);
}

static void test_every_pattern_decodes_by_definition(void) {
  for (int k = 0; k < N_FORMATS; k++) {
    const ref_format *r = &formats[k];
    int bad = 0;
    for (unsigned b = 0; b < 2 * sign_of(r); b++) {
      float v = minifloat_to_f32(r->f, (uint8_t)b);
      unsigned mag = b & (sign_of(r) - 1);
      bool neg = b & sign_of(r);
      if ((int)b == ref_nan(r, neg) || (r->overflow == TO_SIGNED_NAN && mag == 0x7f) ||
          (r->overflow == TO_INF && mag > 0x7c)) {
        if (!isnan(v) || !signbit(v) != !neg) bad++;
        continue;
      }
      double want = r->overflow == TO_INF && mag == 0x7c ? INFINITY : ref_decode(r, mag);
      if (neg) want = -want;
      if ((double)v != want || !signbit(v) != !signbit(want)) {
        if (bad < 5) fprintf(stderr, "  %s %s -> %g, want %g\n", r->name, hex(b), v, want);
        bad++;
      }
    }
    CHECK(bad == 0);
  }
}

/* Every pattern goes to f32 and back unchanged; NaNs come back as the format's
 * NaN of their sign (E5M2's payloads canonicalize to the quiet NaN, as in ml_dtypes). */
static void test_every_pattern_round_trips(void) {
  for (int k = 0; k < N_FORMATS; k++) {
    const ref_format *r = &formats[k];
    int bad = 0;
    for (unsigned b = 0; b < 2 * sign_of(r); b++) {
      float v = minifloat_to_f32(r->f, (uint8_t)b);
      unsigned want = b;
      if (isnan(v)) want = (unsigned)ref_nan(r, b & sign_of(r));
      if (minifloat_from_f64(r->f, v) != want) {
        if (bad < 5) fprintf(stderr, "  %s %s does not round-trip\n", r->name, hex(b));
        bad++;
      }
    }
    CHECK(bad == 0);
  }
}

/* Every rounding boundary: each value, the midpoint with the next, the closest doubles
 * and floats on either side of it, both signs; then the overflow side. */
static void test_rounding_at_every_boundary(void) {
  for (int k = 0; k < N_FORMATS; k++) {
    const ref_format *r = &formats[k];
    int bad = 0;
    double max = ref_decode(r, r->max_pattern), next = max + ldexp(1.0, ilogb(max) - r->mbits);
    for (unsigned a = 0; a <= r->max_pattern; a++) {
      double da = ref_decode(r, a), db = a < r->max_pattern ? ref_decode(r, a + 1) : next;
      double mid = (da + db) / 2;
      float mf = (float)mid;
      double pts[] = {da, mid, nextafter(mid, 0), nextafter(mid, INFINITY), nextafterf(mf, 0),
                      nextafterf(mf, INFINITY), nextafter(da, INFINITY), nextafter(db, 0), db, 2 * db};
      for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        for (int s = 0; s < 2; s++) {
          double x = s ? -pts[i] : pts[i];
          check_pattern(r, x, ref_round(r, x), &bad);
        }
    }
    double far[] = {1e30, 1e300, INFINITY, 0x1p-30, 1e-300, 5e-324};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
      check_pattern(r, far[i], ref_round(r, far[i]), &bad);
      check_pattern(r, -far[i], ref_round(r, -far[i]), &bad);
    }
    CHECK(bad == 0);
  }
}

/* The saturation bound ONNX clamps to, and the overflow test the parser uses. */
static void test_max_and_overflow(void) {
  CHECK(minifloat_max(MINIFLOAT_E4M3FN) == 448 && minifloat_max(MINIFLOAT_E4M3FNUZ) == 240);
  CHECK(minifloat_max(MINIFLOAT_E5M2) == 57344 && minifloat_max(MINIFLOAT_E5M2FNUZ) == 57344);
  CHECK(minifloat_max(MINIFLOAT_E2M1FN) == 6);
  CHECK(!minifloat_overflows(MINIFLOAT_E4M3FN, 464) && minifloat_overflows(MINIFLOAT_E4M3FN, 465));
  CHECK(minifloat_overflows(MINIFLOAT_E5M2, -61440) && !minifloat_overflows(MINIFLOAT_E5M2, INFINITY));
  CHECK(minifloat_overflows(MINIFLOAT_E2M1FN, 7) && !minifloat_overflows(MINIFLOAT_E2M1FN, 6.9));
  CHECK(minifloat_has_inf(MINIFLOAT_E5M2) && !minifloat_has_inf(MINIFLOAT_E5M2FNUZ));
}

/* E8M0FNU: pattern e is exactly 2^(e - 127) (0x00 an f32 subnormal), 0xFF NaN; narrowing
 * goes to the nearest power of two with a mantissa of 1.5 rounding up, zero, negatives,
 * infinities and NaN become NaN, and below 2^-126 the split is at 2^-127 as in ml_dtypes. */
static void test_e8m0_is_an_unsigned_power_of_two(void) {
  const minifloat_format f = MINIFLOAT_E8M0FNU;
  for (int e = 0; e < 255; e++) {
    float v = minifloat_to_f32(f, (uint8_t)e);
    CHECK(v == ldexpf(1.0f, e - 127));
    CHECK(minifloat_from_f64(f, v) == e);
  }
  CHECK(isnan(minifloat_to_f32(f, 0xff)) && !signbit(minifloat_to_f32(f, 0xff)));
  CHECK(minifloat_from_f64(f, 1.5) == 128 && minifloat_from_f64(f, 1.4999999) == 127);
  CHECK(minifloat_from_f64(f, 3.0) == 129 && minifloat_from_f64(f, 0.75) == 127); /* ties up, not to even */
  CHECK(minifloat_from_f64(f, 0.0) == 0xff && minifloat_from_f64(f, -0.0) == 0xff);
  CHECK(minifloat_from_f64(f, -2.0) == 0xff && minifloat_from_f64(f, NAN) == 0xff);
  CHECK(minifloat_from_f64(f, INFINITY) == 0xff && minifloat_from_f64(f, -INFINITY) == 0xff);
  CHECK(minifloat_from_f64(f, 0x1p-127) == 0 && minifloat_from_f64(f, 0x1p-140) == 0);
  CHECK(minifloat_from_f64(f, 0x1p-1074) == 0); /* the smallest double: no zero to go to */
  CHECK(minifloat_from_f64(f, 0x1.000002p-127) == 1 && minifloat_from_f64(f, 0x1.7fp-126) == 1);
  CHECK(minifloat_from_f64(f, 0x1.8p-126) == 2);
  CHECK(minifloat_from_f64(f, 0x1.7ffffp127) == 254 && minifloat_from_f64(f, 0x1.8p127) == 0xff);
  CHECK(minifloat_max(f) == 0x1p127 && !minifloat_has_inf(f));
  CHECK(!minifloat_overflows(f, 0x1.7ffffp127) && minifloat_overflows(f, 0x1.8p127) && minifloat_overflows(f, 1e300));
  CHECK(!minifloat_overflows(f, -1.0) && !minifloat_overflows(f, INFINITY)); /* NaN, but not by overflowing */
}

TEST_MAIN(TEST(test_hand_computed_patterns), TEST(test_double_rounds_once), TEST(test_every_pattern_decodes_by_definition),
          TEST(test_every_pattern_round_trips), TEST(test_rounding_at_every_boundary), TEST(test_max_and_overflow),
          TEST(test_e8m0_is_an_unsigned_power_of_two))
