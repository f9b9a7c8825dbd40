/* Tests of the narrow storage types (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0fnu,
 * f4e2m1fn, s4, u4, s2, u2; hlo/types.h) through kiln's layers: element access and 4- and
 * 2-bit wrapping in literals, HLO text (every pattern printed and parsed back, out-of-range constants
 * refused), shape inference (data movement and converts allowed, arithmetic refused by
 * name), the evaluator's converts and data movement, the .npy mapping (npy.h), and the
 * ONNX lowerings of Cast/CastLike (saturate, e8m0's round_mode), IsNaN/IsInf, QuantizeLinear and
 * DequantizeLinear, and the public API's dtypes. Expected values are written from the formats' definitions and
 * ONNX's specification (the conversions themselves are tested in test_minifloat.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "eval/eval.h"
#include "hlo/npy.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "op_case.h"

static const hlo_type narrow_floats[] = {HLO_F8E4M3FN, HLO_F8E4M3FNUZ, HLO_F8E5M2, HLO_F8E5M2FNUZ, HLO_F8E8M0FNU,
                                         HLO_F4E2M1FN};
#define N_NARROW_FLOATS ((int)(sizeof narrow_floats / sizeof narrow_floats[0]))

static hlo_literal *lit_f64(hlo_type t, int64_t n, const double *v) {
  hlo_shape s = shape_make(t, 1, &n);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < n; i++) literal_set_f64(l, i, v[i]);
  return l;
}

static hlo_literal *lit_bytes(hlo_type t, int64_t n, const uint8_t *b) {
  hlo_shape s = shape_make(t, 1, &n);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  memcpy(l->data, b, (size_t)n);
  return l;
}

static bool bytes_are(const hlo_literal *l, const uint8_t *want, int64_t n) {
  if (!l || l->n != n || hlo_type_size(l->shape.type) != 1 || memcmp(l->data, want, (size_t)n) != 0) {
    if (l && l->data)
      for (int64_t i = 0; i < l->n && i < n; i++)
        if (((const uint8_t *)l->data)[i] != want[i])
          fprintf(stderr, "  element %lld: 0x%02x, want 0x%02x\n", (long long)i, ((const uint8_t *)l->data)[i], want[i]);
    return false;
  }
  return true;
}

/* The entry of `text` evaluated on args (a one-element tuple result is unwrapped). */
static hlo_literal *eval_text(const char *text, int n, hlo_literal **args) {
  hlo_module *m = check_parse_hlo(text);
  hlo_literal *r = NULL;
  CHECK_OK(eval_module(m, args, n, &r));
  hlo_module_free(m);
  for (int i = 0; i < n; i++) literal_free(args[i]);
  return r;
}

static kiln_status parse_and_verify(const char *text) {
  hlo_module *m = NULL;
  kiln_status s = hlo_parse(text, strlen(text), "t.hlo", &m);
  if (!s) s = hlo_verify_module(m);
  hlo_module_free(m);
  return s;
}

/* ------------------------------------------------------------------- types ---- */

static void test_type_names_sizes_and_classes(void) {
  static const struct {
    const char *name;
    hlo_type t;
    int bits;
  } types[] = {{"f8e4m3fn", HLO_F8E4M3FN, 8}, {"f8e4m3fnuz", HLO_F8E4M3FNUZ, 8}, {"f8e5m2", HLO_F8E5M2, 8},
               {"f8e5m2fnuz", HLO_F8E5M2FNUZ, 8}, {"f4e2m1fn", HLO_F4E2M1FN, 4}, {"s4", HLO_S4, 4}, {"u4", HLO_U4, 4},
               {"f8e8m0fnu", HLO_F8E8M0FNU, 8}, {"s2", HLO_S2, 2}, {"u2", HLO_U2, 2}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    hlo_type t;
    CHECK(hlo_type_from_name(types[i].name, strlen(types[i].name), &t) && t == types[i].t);
    CHECK(strcmp(hlo_type_name(types[i].t), types[i].name) == 0);
    CHECK(hlo_type_size(t) == 1 && hlo_type_bit_width(t) == types[i].bits && hlo_type_is_narrow(t));
  }
  CHECK(hlo_type_is_float(HLO_F8E5M2) && hlo_type_is_signed_int(HLO_S4) && hlo_type_is_unsigned_int(HLO_U4));
  CHECK(!hlo_type_is_narrow(HLO_S8) && !hlo_type_is_narrow(HLO_BF16) && !hlo_type_is_narrow(HLO_PRED));
  CHECK(hlo_type_mantissa_bits(HLO_F8E4M3FN) == 3 && hlo_type_exponent_bits(HLO_F8E5M2FNUZ) == 5);
  CHECK(hlo_type_is_signed_int(HLO_S2) && hlo_type_is_unsigned_int(HLO_U2) && hlo_type_is_float(HLO_F8E8M0FNU));
  CHECK(hlo_type_mantissa_bits(HLO_F8E8M0FNU) == 0 && hlo_type_exponent_bits(HLO_F8E8M0FNU) == 8);
}

/* s2 and u2 keep their values as s4 and u4 do, in two bits: integer stores wrap, float
 * stores saturate (NaN -> 0). */
static void test_literal_2bit_wrap_and_saturation(void) {
  hlo_literal *s2 = lit_f64(HLO_S2, 4, (double[]){9.7, -100, NAN, -2});
  CHECK(bytes_are(s2, (uint8_t[]){1, 0xfe, 0, 0xfe}, 4));
  literal_set_s64(s2, 0, 2);
  literal_set_s64(s2, 1, -3);
  literal_set_s64(s2, 2, 7);
  CHECK(bytes_are(s2, (uint8_t[]){0xfe, 1, 0xff, 0xfe}, 4));
  CHECK(literal_get_s64(s2, 0) == -2 && literal_get_f64(s2, 2) == -1);
  hlo_literal *u2 = lit_f64(HLO_U2, 3, (double[]){20, -3, 3});
  CHECK(bytes_are(u2, (uint8_t[]){3, 0, 3}, 3));
  literal_set_s64(u2, 0, -1);
  literal_set_u64(u2, 1, 6);
  CHECK(bytes_are(u2, (uint8_t[]){3, 2, 3}, 3));
  literal_free(s2);
  literal_free(u2);
}

/* s4 keeps its value sign-extended in the byte, u4 zero-extended: integer stores wrap to
 * four bits (as convert does), float stores saturate (NaN -> 0). */
static void test_literal_4bit_wrap_and_saturation(void) {
  hlo_literal *s4 = lit_f64(HLO_S4, 4, (double[]){9.7, -100, NAN, -8});
  CHECK(bytes_are(s4, (uint8_t[]){7, 0xf8, 0, 0xf8}, 4));
  literal_set_s64(s4, 0, 9);
  literal_set_s64(s4, 1, -9);
  literal_set_s64(s4, 2, 15);
  CHECK(bytes_are(s4, (uint8_t[]){0xf9, 7, 0xff, 0xf8}, 4));
  CHECK(literal_get_s64(s4, 0) == -7 && literal_get_f64(s4, 2) == -1);
  hlo_literal *u4 = lit_f64(HLO_U4, 3, (double[]){20, -3, 15});
  CHECK(bytes_are(u4, (uint8_t[]){15, 0, 15}, 3));
  literal_set_s64(u4, 0, -1);
  literal_set_u64(u4, 1, 17);
  CHECK(bytes_are(u4, (uint8_t[]){15, 1, 15}, 3));
  literal_free(s4);
  literal_free(u4);
}

/* ----------------------------------------------------------------- HLO text ---- */

/* Every pattern of each narrow float prints and parses back to the same bits (E5M2's NaN
 * payloads as its quiet NaN: constants print NaN without a payload). */
static void test_every_pattern_prints_and_parses_back(void) {
  for (int k = 0; k < N_NARROW_FLOATS; k++) {
    hlo_type t = narrow_floats[k];
    int n = 1 << hlo_type_bit_width(t);
    uint8_t all[256];
    for (int i = 0; i < n; i++) all[i] = (uint8_t)i;
    hlo_literal *l = lit_bytes(t, n, all);
    strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "HloModule m\nENTRY e {\n  ROOT c = %s[%d] constant(", hlo_type_name(t), n);
    literal_print_values(&b, l);
    strbuf_append(&b, ")\n}\n");
    hlo_module *m = check_parse_hlo(strbuf_cstr(&b));
    const hlo_literal *back = m->entry->root->literal;
    int bad = 0;
    for (int i = 0; i < n; i++) {
      uint8_t got = ((const uint8_t *)back->data)[i];
      bool nan = isnan(literal_get_f64(l, i));
      if (nan ? !isnan(literal_get_f64(back, i)) || (got & 0x80) != (all[i] & 0x80) : got != all[i]) bad++;
    }
    if (bad) fprintf(stderr, "  %s: %d patterns changed; text:\n%s\n", hlo_type_name(t), bad, strbuf_cstr(&b));
    CHECK(bad == 0);
    hlo_module_free(m);
    strbuf_free(&b);
    literal_free(l);
  }
}

static void test_out_of_range_constants_are_refused(void) {
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e4m3fn[] constant(465)\n}\n"),
            "value 465 is out of range for f8e4m3fn");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e4m3fn[] constant(464)\n}\n"));
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e4m3fnuz[] constant(-inf)\n}\n"),
            "f8e4m3fnuz has no infinity");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e5m2[2] constant({-inf, nan})\n}\n"));
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f4e2m1fn[] constant(nan)\n}\n"),
            "f4e2m1fn has no NaN");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f4e2m1fn[] constant(7)\n}\n"),
            "value 7 is out of range for f4e2m1fn");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = s4[] constant(8)\n}\n"), "value 8 is out of range for s4");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = u4[] constant(16)\n}\n"), "value 16 is out of range for u4");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = s4[2] constant({-8, 7})\n}\n"));
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = s2[] constant(2)\n}\n"),
            "value 2 is out of range for s2");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = u2[] constant(4)\n}\n"),
            "value 4 is out of range for u2");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = s2[2] constant({-2, 1})\n}\n"));
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e8m0fnu[] constant(0)\n}\n"),
            "value 0 is not a value of f8e8m0fnu, which has no zero and no sign");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e8m0fnu[] constant(-2)\n}\n"),
            "value -2 is not a value of f8e8m0fnu");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e8m0fnu[] constant(inf)\n}\n"),
            "f8e8m0fnu has no infinity");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  ROOT c = f8e8m0fnu[3] constant({0.25, 1.7014118346046923e+38, nan})\n}\n"));
}

/* ----------------------------------------------------------- shape inference ---- */

static void test_arithmetic_on_narrow_types_is_refused(void) {
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  a = f8e4m3fn[4] parameter(0)\n"
                             "  ROOT r = f8e4m3fn[4] add(a, a)\n}\n"),
            "computes on f8e4m3fn values; kiln stores f8*, f4e2m1fn, s4, u4, s2 and u2 but computes on them only "
            "after a convert to a wider type");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  a = s4[4] parameter(0)\n"
                             "  ROOT r = pred[4] compare(a, a), direction=LT\n}\n"),
            "computes on s4 values");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  i = u4[] constant(1)\n"
                             "  ROOT r = f32[2] dynamic-slice(a, i), dynamic_slice_sizes={2}\n}\n"),
            "start index operand 1 must be an integer scalar");
  CHECK_ERR(parse_and_verify("HloModule m\nENTRY e {\n  a = u8[4] parameter(0)\n"
                             "  ROOT r = s4[4] bitcast-convert(a)\n}\n"),
            "kiln stores 4- and 2-bit types one per byte, where XLA packs them");
  CHECK_OK(parse_and_verify("HloModule m\nENTRY e {\n  a = u8[4] parameter(0)\n"
                            "  ROOT r = f8e5m2[4] bitcast-convert(a)\n}\n"));
}

/* ---------------------------------------------------------------- evaluator ---- */

static void test_convert_f32_to_each_narrow_type(void) {
  static const double x[] = {1.0, 464, 465, -INFINITY, NAN, -0.0, 0x1p-10, 5};
  static const struct {
    hlo_type t;
    uint8_t want[8];
  } cases[] = {
      {HLO_F8E4M3FN, {0x38, 0x7e, 0x7f, 0xff, 0x7f, 0x80, 0x00, 0x4a}},
      {HLO_F8E4M3FNUZ, {0x40, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x52}},
      {HLO_F8E5M2, {0x3c, 0x5f, 0x5f, 0xfc, 0x7e, 0x80, 0x14, 0x45}},
      {HLO_F8E5M2FNUZ, {0x40, 0x63, 0x63, 0x80, 0x80, 0x00, 0x18, 0x49}},
      {HLO_F4E2M1FN, {0x2, 0x7, 0x7, 0xf, 0x8, 0x8, 0x0, 0x6}},
      /* truncation toward zero and saturation, NaN -> 0, as every float -> int convert */
      {HLO_S4, {1, 7, 7, 0xf8, 0, 0, 0, 5}},
      {HLO_U4, {1, 15, 15, 0, 0, 0, 0, 5}},
      {HLO_S2, {1, 1, 1, 0xfe, 0, 0, 0, 1}},
      {HLO_U2, {1, 3, 3, 0, 0, 0, 0, 3}},
      /* the nearest power of two (464 = 1.8125 * 2^8 -> 2^9); -inf, NaN and -0 -> NaN */
      {HLO_F8E8M0FNU, {0x7f, 0x88, 0x88, 0xff, 0xff, 0xff, 0x75, 0x81}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char text[256];
    snprintf(text, sizeof text, "HloModule m\nENTRY e {\n  a = f32[8] parameter(0)\n  ROOT r = %s[8] convert(a)\n}\n",
             hlo_type_name(cases[k].t));
    hlo_literal *args[1] = {lit_f64(HLO_F32, 8, x)};
    hlo_literal *r = eval_text(text, 1, args);
    if (!bytes_are(r, cases[k].want, 8)) {
      fprintf(stderr, "  f32 -> %s\n", hlo_type_name(cases[k].t));
      CHECK(!"convert");
    }
    literal_free(r);
  }
}

/* Integer sources: int -> 4-bit wraps; 64-bit integers reach the minifloats through one
 * rounding; narrow -> wide is exact (NaN stays NaN, -0 stays -0). */
static void test_convert_between_integers_and_narrow_types(void) {
  hlo_literal *args[1] = {lit_f64(HLO_S32, 5, (double[]){9, -9, 7, 100, -8})};
  hlo_literal *r = eval_text("HloModule m\nENTRY e {\n  a = s32[5] parameter(0)\n  s = s4[5] convert(a)\n"
                             "  u = u4[5] convert(a)\n  ROOT t = (s4[5], u4[5]) tuple(s, u)\n}\n",
                             1, args);
  CHECK(r && r->shape.n_elems == 2 && bytes_are(r->tuple[0], (uint8_t[]){0xf9, 7, 7, 4, 0xf8}, 5) &&
        bytes_are(r->tuple[1], (uint8_t[]){9, 7, 7, 4, 8}, 5));
  literal_free(r);
  args[0] = lit_f64(HLO_S32, 5, (double[]){9, -9, 7, 100, -8});
  r = eval_text("HloModule m\nENTRY e {\n  a = s32[5] parameter(0)\n  s = s2[5] convert(a)\n"
                "  u = u2[5] convert(a)\n  ROOT t = (s2[5], u2[5]) tuple(s, u)\n}\n",
                1, args);
  CHECK(r && r->shape.n_elems == 2 && bytes_are(r->tuple[0], (uint8_t[]){1, 0xff, 0xff, 0, 0}, 5) &&
        bytes_are(r->tuple[1], (uint8_t[]){1, 3, 3, 0, 0}, 5));
  literal_free(r);
  /* 2^53 + 1 as s64 is between 2^53 and 2^53 + 2: as a double it would tie; to E5M2 it
   * overflows anyway, and 5 -> float4 ties to the even 4 */
  args[0] = lit_f64(HLO_S64, 2, (double[]){5, -6});
  r = eval_text("HloModule m\nENTRY e {\n  a = s64[2] parameter(0)\n  ROOT r = f4e2m1fn[2] convert(a)\n}\n", 1, args);
  CHECK(bytes_are(r, (uint8_t[]){0x6, 0xf}, 2));
  literal_free(r);
  args[0] = lit_bytes(HLO_F8E4M3FN, 4, (uint8_t[]){0xff, 0x80, 0x01, 0x7e});
  r = eval_text("HloModule m\nENTRY e {\n  a = f8e4m3fn[4] parameter(0)\n  b = bf16[4] convert(a)\n"
                "  c = f16[4] convert(a)\n  d = s32[4] convert(a)\n  ROOT t = (bf16[4], f16[4], s32[4]) tuple(b, c, d)\n}\n",
                1, args);
  CHECK(r && isnan(literal_get_f64(r->tuple[0], 0)) && signbit(literal_get_f64(r->tuple[1], 1)));
  CHECK(r && literal_get_f64(r->tuple[0], 2) == 0x1p-9 && literal_get_f64(r->tuple[1], 2) == 0x1p-9);
  CHECK(r && literal_get_s64(r->tuple[2], 3) == 448 && literal_get_s64(r->tuple[2], 0) == 0);
  literal_free(r);
  /* narrow to narrow: E4M3FN's 448 overflows E4M3FNUZ to its NaN, -0 becomes +0 */
  args[0] = lit_bytes(HLO_F8E4M3FN, 3, (uint8_t[]){0x7e, 0x80, 0x38});
  r = eval_text("HloModule m\nENTRY e {\n  a = f8e4m3fn[3] parameter(0)\n  ROOT r = f8e4m3fnuz[3] convert(a)\n}\n", 1,
                args);
  CHECK(bytes_are(r, (uint8_t[]){0x80, 0x00, 0x40}, 3));
  literal_free(r);
}

/* Reshape, transpose, slice, concatenate, pad, reverse, broadcast, select, gather and
 * dynamic-slice move narrow elements by their byte, exactly as they move s8. */
static void test_data_movement_moves_bytes(void) {
  static const char *body =
      "  a = T[2,3] parameter(0)\n  p = pred[] parameter(1)\n  z = T[] constant(0)\n"
      "  t = T[3,2] transpose(a), dimensions={1,0}\n  r = T[6] reshape(t)\n"
      "  s = T[3] slice(r), slice={[1:6:2]}\n  c = T[9] concatenate(r, s), dimensions={0}\n"
      "  d = T[11] pad(c, z), padding=1_1\n  v = T[11] reverse(d), dimensions={0}\n"
      "  b = T[2,11] broadcast(v), dimensions={1}\n  q = T[2,11] select(p, b, b)\n"
      "  i = s32[] constant(1)\n  y = T[1,4] dynamic-slice(q, i, i), dynamic_slice_sizes={1,4}\n"
      "  g = T[1,4] gather(y, i), offset_dims={0,1}, collapsed_slice_dims={}, start_index_map={0}, "
      "index_vector_dim=0, slice_sizes={1,4}\n"
      "  ROOT o = T[1,4] copy(g)\n";
  static const uint8_t bytes[6] = {0x01, 0x7e, 0x80, 0x0f, 0xf9, 0x38};
  hlo_literal *want = NULL;
  const hlo_type types[] = {HLO_S8, HLO_F8E4M3FN, HLO_F8E5M2FNUZ, HLO_S4, HLO_U4, HLO_F4E2M1FN};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    hlo_type t = types[k];
    strbuf b;
    strbuf_init(&b);
    strbuf_append(&b, "HloModule m\nENTRY e {\n");
    for (const char *p = body; *p; p++) {
      if (*p == 'T' && p[1] == '[') strbuf_append(&b, hlo_type_name(t));
      else strbuf_putc(&b, *p);
    }
    strbuf_append(&b, "}\n");
    uint8_t in[6];
    for (int i = 0; i < 6; i++) /* valid bytes of each type: 4-bit ones keep their range */
      in[i] = t == HLO_S4 ? (uint8_t)((((bytes[i] & 15u) ^ 8u) - 8u) & 0xff) : hlo_type_bit_width(t) == 4 ? bytes[i] & 15 : bytes[i];
    hlo_shape s = shape_make(t, 2, (int64_t[]){2, 3});
    hlo_literal *a;
    CHECK_OK(literal_create(&s, &a));
    memcpy(a->data, in, 6);
    hlo_literal *p = lit_f64(HLO_PRED, 1, (double[]){1});
    p->shape.rank = 0;
    hlo_literal *args[2] = {a, p};
    hlo_literal *r = eval_text(strbuf_cstr(&b), 2, args);
    strbuf_free(&b);
    if (k == 0) {
      want = r;
      continue;
    }
    /* the s8 run moved the raw bytes of the same inputs except for the 4-bit masking */
    uint8_t expect[4];
    for (int i = 0; i < 4; i++) {
      uint8_t w = ((const uint8_t *)want->data)[i];
      expect[i] = t == HLO_S4 ? (uint8_t)((((w & 15u) ^ 8u) - 8u) & 0xff) : hlo_type_bit_width(t) == 4 ? w & 15 : w;
    }
    if (!bytes_are(r, expect, 4)) {
      fprintf(stderr, "  data movement of %s\n", hlo_type_name(t));
      CHECK(!"data movement");
    }
    literal_free(r);
  }
  literal_free(want);
}

/* -------------------------------------------------------------------- .npy ---- */

static char *header_of(const hlo_literal *l) {
  strbuf b;
  strbuf_init(&b);
  CHECK_OK(npy_write_buffer(l, &b));
  char *h = strndup(b.data + 10, 40);
  strbuf_free(&b);
  return h;
}

static void test_npy_carries_bit_patterns_and_int4_values(void) {
  hlo_literal *f8 = lit_bytes(HLO_F8E5M2, 2, (uint8_t[]){0x7c, 0x01});
  hlo_literal *s4 = lit_bytes(HLO_S4, 2, (uint8_t[]){0xf8, 0x07});
  char *h1 = header_of(f8), *h2 = header_of(s4);
  CHECK(strstr(h1, "'descr': '|u1'") && strstr(h2, "'descr': '|i1'"));
  free(h1);
  free(h2);
  /* written bytes read back as u8 / s8 and narrow again to the same literal */
  strbuf b;
  strbuf_init(&b);
  CHECK_OK(npy_write_buffer(f8, &b));
  hlo_literal *raw = NULL, *back = NULL;
  CHECK_OK(npy_read_buffer(b.data, b.len, "f8.npy", &raw));
  CHECK(raw && raw->shape.type == HLO_U8);
  CHECK_OK(npy_convert_to_narrow(raw, HLO_F8E5M2, &back));
  CHECK(back && literal_equal(back, f8));
  literal_free(raw);
  literal_free(back);
  strbuf_free(&b);
  /* uint8 4-bit patterns (ml_dtypes' int4 storage) sign-extend; int8 values are taken */
  hlo_literal *u = lit_bytes(HLO_U8, 3, (uint8_t[]){15, 8, 7}), *sv = lit_bytes(HLO_S8, 2, (uint8_t[]){0xf8, 7});
  CHECK_OK(npy_convert_to_narrow(u, HLO_S4, &back));
  CHECK(bytes_are(back, (uint8_t[]){0xff, 0xf8, 7}, 3));
  literal_free(back);
  CHECK_OK(npy_convert_to_narrow(sv, HLO_S4, &back));
  CHECK(literal_equal(back, s4));
  literal_free(back);
  hlo_literal *bad = lit_bytes(HLO_U8, 2, (uint8_t[]){3, 16});
  CHECK_ERR(npy_convert_to_narrow(bad, HLO_F4E2M1FN, &back), "element 1 is 16, which is not a 4-bit pattern (0..15)");
  CHECK_ERR(npy_convert_to_narrow(bad, HLO_U4, &back), "element 1 is 16, which is not a u4 value (0..15)");
  hlo_literal *eight = lit_bytes(HLO_S8, 1, (uint8_t[]){8});
  CHECK_ERR(npy_convert_to_narrow(eight, HLO_S4, &back), "element 0 is 8, which is not an s4 value (-8..7)");
  literal_free(eight);
  CHECK_ERR(npy_convert_to_narrow(sv, HLO_F8E4M3FN, &back), "a .npy file of s8 cannot hold f8e4m3fn values");
  /* int2 as int8 values or uint8 2-bit patterns (sign-extended), uint2 as uint8 values */
  hlo_literal *u2bits = lit_bytes(HLO_U8, 4, (uint8_t[]){0, 1, 2, 3}), *s2v = lit_bytes(HLO_S8, 2, (uint8_t[]){0xfe, 1});
  CHECK_OK(npy_convert_to_narrow(u2bits, HLO_S2, &back));
  CHECK(back && back->shape.type == HLO_S2 && bytes_are(back, (uint8_t[]){0, 1, 0xfe, 0xff}, 4));
  literal_free(back);
  CHECK_OK(npy_convert_to_narrow(s2v, HLO_S2, &back));
  CHECK(bytes_are(back, (uint8_t[]){0xfe, 1}, 2));
  literal_free(back);
  CHECK_OK(npy_convert_to_narrow(u2bits, HLO_U2, &back));
  CHECK(bytes_are(back, (uint8_t[]){0, 1, 2, 3}, 4));
  literal_free(back);
  hlo_literal *four = lit_bytes(HLO_U8, 1, (uint8_t[]){4}), *two = lit_bytes(HLO_S8, 1, (uint8_t[]){2});
  CHECK_ERR(npy_convert_to_narrow(four, HLO_U2, &back), "element 0 is 4, which is not a u2 value (0..3)");
  CHECK_ERR(npy_convert_to_narrow(four, HLO_S2, &back), "element 0 is 4, which is not a 2-bit pattern (0..3)");
  CHECK_ERR(npy_convert_to_narrow(two, HLO_S2, &back), "element 0 is 2, which is not an s2 value (-2..1)");
  CHECK_ERR(npy_convert_to_narrow(two, HLO_U2, &back), "a .npy file of s8 cannot hold u2 values");
  /* e8m0 is a byte like the other 8-bit floats: every byte is a pattern */
  hlo_literal *ff = lit_bytes(HLO_U8, 2, (uint8_t[]){0xff, 0});
  CHECK_OK(npy_convert_to_narrow(ff, HLO_F8E8M0FNU, &back));
  CHECK(back && isnan(literal_get_f64(back, 0)) && literal_get_f64(back, 1) == 0x1p-127);
  literal_free(back);
  hlo_literal *s2l = lit_bytes(HLO_S2, 2, (uint8_t[]){0xfe, 1});
  char *h3 = header_of(s2l);
  CHECK(h3 && strstr(h3, "'descr': '|i1'"));
  free(h3);
  literal_free(s2l);
  literal_free(ff);
  literal_free(four);
  literal_free(two);
  literal_free(u2bits);
  literal_free(s2v);
  /* np.save of an ml_dtypes array writes '|V1': its raw bytes */
  static const char hdr[] = "{'descr': '|V1', 'fortran_order': False, 'shape': (2,), }\n";
  unsigned char v1[128] = "\x93NUMPY\x01\x00";
  v1[8] = (unsigned char)(sizeof hdr - 1);
  memcpy(v1 + 10, hdr, sizeof hdr - 1);
  v1[10 + sizeof hdr - 1] = 0x7c;
  v1[11 + sizeof hdr - 1] = 0x01;
  CHECK_OK(npy_read_buffer(v1, 12 + sizeof hdr - 1, "v1.npy", &raw));
  CHECK(raw && raw->shape.type == HLO_U8 && bytes_are(raw, (uint8_t[]){0x7c, 0x01}, 2));
  literal_free(raw);
  literal_free(u);
  literal_free(sv);
  literal_free(bad);
  literal_free(f8);
  literal_free(s4);
}

/* -------------------------------------------------------------- ONNX lowering ---- */

static hlo_literal *shaped(hlo_literal *l, int rank) {
  l->shape.rank = rank;
  return l;
}

/* saturate=1 (the default) clamps to +-max, infinities included; saturate=0 is XLA's
 * convert (E4M3FN overflow -> NaN); a bf16 source clamps in bf16. */
static void test_cast_saturates_unless_told_not_to(void) {
  static const double x[] = {1000, -INFINITY, NAN, 0.4375};
  for (int sat = 0; sat < 2; sat++)
    for (int bf = 0; bf < 2; bf++) {
      tcase t;
      tc_init(&t, "Cast", 19);
      graph_node_set_attr_int(t.node, "to", 17); /* FLOAT8E4M3FN */
      if (!sat) graph_node_set_attr_int(t.node, "saturate", 0);
      tc_input(&t, lit_f64(bf ? HLO_BF16 : HLO_F32, 4, x), false);
      RUN(&t);
      uint8_t want_sat[4] = {0x7e, 0xfe, 0x7f, 0x2e}, want_raw[4] = {0x7f, 0xff, 0x7f, 0x2e};
      CHECK(t.out[0] && t.out[0]->shape.type == HLO_F8E4M3FN && bytes_are(t.out[0], sat ? want_sat : want_raw, 4));
      tc_free(&t);
    }
  /* float -> int4 truncates and wraps like the reference's ml_dtypes cast */
  tcase t;
  tc_init(&t, "Cast", 21);
  graph_node_set_attr_int(t.node, "to", 22); /* INT4 */
  tc_input(&t, lit_f64(HLO_F32, 4, (double[]){-9, 8.5, 15, 7.9}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){7, 0xf8, 0xff, 7}, 4));
  tc_free(&t);
  /* CastLike takes the type from its second input and reads saturate too */
  tc_init(&t, "CastLike", 19);
  graph_node_set_attr_int(t.node, "saturate", 0);
  tc_input(&t, lit_f64(HLO_F32, 2, (double[]){1e6, 2}), false);
  tc_input(&t, lit_bytes(HLO_F8E5M2, 1, (uint8_t[]){0}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){0x7c, 0x40}, 2));
  tc_free(&t);
  /* to bool: nonzero; the narrow source widens first */
  tc_init(&t, "Cast", 21);
  graph_node_set_attr_int(t.node, "to", 9); /* BOOL */
  tc_input(&t, lit_bytes(HLO_F8E4M3FNUZ, 3, (uint8_t[]){0x00, 0x80, 0x01}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){0, 1, 1}, 3));
  tc_free(&t);
}

/* Cast to FLOAT8E8M0 reads the f32's exponent field (sign ignored, zero -> 2^-127) and
 * bumps it by round_mode: "up" on any fraction, "nearest" from 1.5 up (1.5 itself too),
 * "down" never; saturate stops a bump into NaN, as onnx.numpy_helper.to_float8e8m0 does. */
static void test_cast_to_e8m0_rounds_by_mode(void) {
  static const double x[] = {1.0, 1.25, 1.5, -3.0, 0.0, 0x1.8p127, INFINITY, NAN};
  static const struct {
    const char *mode;
    int saturate;
    uint8_t want[8];
  } cases[] = {
      {"up", 1, {0x7f, 0x80, 0x80, 0x81, 0x00, 0xfe, 0xff, 0xff}},
      {"up", 0, {0x7f, 0x80, 0x80, 0x81, 0x00, 0xff, 0xff, 0xff}},
      {"down", 1, {0x7f, 0x7f, 0x7f, 0x80, 0x00, 0xfe, 0xff, 0xff}},
      {"nearest", 1, {0x7f, 0x7f, 0x80, 0x81, 0x00, 0xfe, 0xff, 0xff}},
      {"nearest", 0, {0x7f, 0x7f, 0x80, 0x81, 0x00, 0xff, 0xff, 0xff}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tcase t;
    tc_init(&t, "Cast", 24);
    graph_node_set_attr_int(t.node, "to", 24); /* FLOAT8E8M0 */
    graph_node_set_attr_string(t.node, "round_mode", cases[k].mode, strlen(cases[k].mode));
    graph_node_set_attr_int(t.node, "saturate", cases[k].saturate);
    tc_input(&t, lit_f64(HLO_F32, 8, x), false);
    RUN(&t);
    if (!t.out[0] || t.out[0]->shape.type != HLO_F8E8M0FNU || !bytes_are(t.out[0], cases[k].want, 8)) {
      fprintf(stderr, "  round_mode %s, saturate %d\n", cases[k].mode, cases[k].saturate);
      CHECK(!"cast to e8m0");
    }
    tc_free(&t);
  }
  tcase t;
  tc_init(&t, "Cast", 24);
  graph_node_set_attr_int(t.node, "to", 24);
  graph_node_set_attr_string(t.node, "round_mode", "sideways", 8);
  tc_input(&t, lit_f64(HLO_F32, 1, x), false);
  kiln_status s = tc_run(&t);
  CHECK(s && strstr(kiln_status_message(s), "round_mode must be \"up\", \"down\" or \"nearest\", got \"sideways\""));
  kiln_status_free(s);
  tc_free(&t);
  /* float -> int2 truncates and wraps like the reference's ml_dtypes cast */
  tc_init(&t, "Cast", 25);
  graph_node_set_attr_int(t.node, "to", 26); /* INT2 */
  tc_input(&t, lit_f64(HLO_F32, 4, (double[]){-3, 2.5, 3, 1.9}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){1, 0xfe, 0xff, 1}, 4));
  tc_free(&t);
}

static void test_isnan_and_isinf_of_float8(void) {
  tcase t;
  tc_init(&t, "IsNaN", 20);
  tc_input(&t, lit_bytes(HLO_F8E5M2FNUZ, 3, (uint8_t[]){0x80, 0x00, 0x7f}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){1, 0, 0}, 3));
  tc_free(&t);
  tc_init(&t, "IsInf", 20);
  graph_node_set_attr_int(t.node, "detect_positive", 0);
  tc_input(&t, lit_bytes(HLO_F8E5M2, 3, (uint8_t[]){0x7c, 0xfc, 0x7e}), false);
  RUN(&t);
  CHECK(bytes_are(t.out[0], (uint8_t[]){0, 1, 0}, 3));
  tc_free(&t);
}

/* QuantizeLinear to float8 rounds in the convert (no integer rounding) and saturates
 * unless saturate=0; to int4 it clamps to -8..7 after adding the zero point;
 * DequantizeLinear widens float8 exactly and subtracts an int4 zero point. */
static void test_quantize_and_dequantize_narrow_types(void) {
  for (int sat = 0; sat < 2; sat++) {
    tcase t;
    tc_init(&t, "QuantizeLinear", 21);
    if (!sat) graph_node_set_attr_int(t.node, "saturate", 0);
    tc_input(&t, lit_f64(HLO_F32, 3, (double[]){0.8125, 1000, -3}), false);
    tc_input(&t, shaped(lit_f64(HLO_F32, 1, (double[]){0.5}), 0), true);
    tc_input(&t, shaped(lit_bytes(HLO_F8E4M3FN, 1, (uint8_t[]){0}), 0), true);
    RUN(&t);
    /* 1.625 -> 0.0111.101 = 0x3d, 2000 -> 448 or NaN, -6 -> 1.1001.100 */
    CHECK(bytes_are(t.out[0], sat ? (uint8_t[]){0x3d, 0x7e, 0xcc} : (uint8_t[]){0x3d, 0x7f, 0xcc}, 3));
    tc_free(&t);
  }
  tcase t;
  tc_init(&t, "QuantizeLinear", 21);
  tc_input(&t, lit_f64(HLO_F32, 4, (double[]){3, -100, 100, 0.75}), false);
  tc_input(&t, shaped(lit_f64(HLO_F32, 1, (double[]){0.5}), 0), true);
  tc_input(&t, shaped(lit_f64(HLO_S4, 1, (double[]){-2}), 0), true);
  RUN(&t);
  CHECK(t.out[0] && t.out[0]->shape.type == HLO_S4 && bytes_are(t.out[0], (uint8_t[]){4, 0xf8, 7, 0}, 4));
  tc_free(&t);
  tc_init(&t, "DequantizeLinear", 21);
  tc_input(&t, lit_f64(HLO_S4, 3, (double[]){-8, 7, -2}), false);
  tc_input(&t, shaped(lit_f64(HLO_F32, 1, (double[]){0.5}), 0), true);
  tc_input(&t, shaped(lit_f64(HLO_S4, 1, (double[]){-2}), 0), true);
  RUN(&t);
  CHECK(t.out[0] && literal_get_f64(t.out[0], 0) == -3 && literal_get_f64(t.out[0], 1) == 4.5 &&
        literal_get_f64(t.out[0], 2) == 0);
  tc_free(&t);
  tc_init(&t, "DequantizeLinear", 21);
  tc_input(&t, lit_bytes(HLO_F8E5M2, 2, (uint8_t[]){0xfc, 0x3d}), false);
  tc_input(&t, shaped(lit_f64(HLO_F16, 1, (double[]){2}), 0), true);
  RUN(&t);
  CHECK(t.out[0] && t.out[0]->shape.type == HLO_F16 && literal_get_f64(t.out[0], 0) == -INFINITY &&
        literal_get_f64(t.out[0], 1) == 2.5);
  tc_free(&t);
}

/* ONNX ops that compute do not take float8 (the schema says so); a lowering that would
 * compute on one anyway fails naming the node, the op and the type. */
static void test_arithmetic_on_float8_names_node_and_type(void) {
  tcase t;
  tc_init(&t, "Relu", 14);
  tc_input(&t, lit_bytes(HLO_F8E4M3FN, 2, (uint8_t[]){0x38, 0xb8}), false);
  kiln_status s = tc_run(&t);
  CHECK(s && strstr(kiln_status_message(s), "node n (onnx.Relu)") &&
        strstr(kiln_status_message(s), "computes on f8e4m3fn values"));
  kiln_status_free(s);
  tc_free(&t);
}

/* ----------------------------------------------------------------- C API ---- */

/* The public dtypes carry one byte per element; a 4-bit input holding a value its type
 * cannot have is refused before the run, naming the input and the element. */
static void test_api_takes_narrow_inputs_and_checks_4bit_ranges(void) {
  CHECK(kiln_dtype_size(KILN_FLOAT8E4M3FN) == 1 && kiln_dtype_size(KILN_UINT4) == 1);
  CHECK(strcmp(kiln_dtype_name(KILN_FLOAT8E5M2FNUZ), "float8_e5m2fnuz") == 0);
  CHECK(strcmp(kiln_dtype_name(KILN_FLOAT4E2M1FN), "float4_e2m1fn") == 0 && strcmp(kiln_dtype_name(KILN_INT4), "int4") == 0);
  CHECK(strcmp(kiln_dtype_name(KILN_INT2), "int2") == 0 && strcmp(kiln_dtype_name(KILN_UINT2), "uint2") == 0);
  CHECK(strcmp(kiln_dtype_name(KILN_FLOAT8E8M0FNU), "float8_e8m0fnu") == 0 && kiln_dtype_size(KILN_INT2) == 1);
  static const char text[] = "HloModule m\nENTRY e {\n  a = s4[3] parameter(0)\n  b = f8e4m3fn[3] convert(a)\n"
                             "  c = f32[3] convert(a)\n  ROOT t = (f32[3], f8e4m3fn[3]) tuple(c, b)\n}\n";
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load_from_memory(text, sizeof text - 1, KILN_FORMAT_HLO, NULL, &m));
  if (!m) return;
  kiln_value in = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 0, &in));
  CHECK(in.dtype == KILN_INT4);
  int8_t v[3] = {-8, 7, 9};
  int64_t dims[1] = {3};
  in.data = v;
  in.dims = dims;
  in.rank = 1;
  in.byte_size = 3;
  kiln_tensor *out[2] = {NULL, NULL};
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 2, NULL, out), "element 2 is 9, outside int4's -8..7");
  v[2] = -1;
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 2, NULL, out));
  if (out[0] && out[1]) {
    const float *f = kiln_tensor_data(out[0]);
    CHECK(f[0] == -8 && f[1] == 7 && f[2] == -1);
    CHECK(kiln_tensor_dtype(out[1]) == KILN_FLOAT8E4M3FN && kiln_tensor_byte_size(out[1]) == 3);
    CHECK(memcmp(kiln_tensor_data(out[1]), "\xd0\x4e\xb8", 3) == 0); /* -8, 7, -1 */
  }
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_model_free(m);
}

TEST_MAIN(TEST(test_type_names_sizes_and_classes), TEST(test_literal_4bit_wrap_and_saturation),
          TEST(test_literal_2bit_wrap_and_saturation), TEST(test_cast_to_e8m0_rounds_by_mode),
          TEST(test_every_pattern_prints_and_parses_back), TEST(test_out_of_range_constants_are_refused),
          TEST(test_arithmetic_on_narrow_types_is_refused), TEST(test_convert_f32_to_each_narrow_type),
          TEST(test_convert_between_integers_and_narrow_types), TEST(test_data_movement_moves_bytes),
          TEST(test_npy_carries_bit_patterns_and_int4_values), TEST(test_cast_saturates_unless_told_not_to),
          TEST(test_isnan_and_isinf_of_float8), TEST(test_quantize_and_dequantize_narrow_types),
          TEST(test_arithmetic_on_float8_names_node_and_type), TEST(test_api_takes_narrow_inputs_and_checks_4bit_ranges))
