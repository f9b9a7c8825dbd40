/* Unit tests for .npy I/O: round trips of every element type (scalars and zero-size
 * arrays included), the exact header layout numpy writes, header spellings numpy and
 * other writers produce, big-endian payloads, and every malformed-file error — each must
 * be a clear error naming the file, never a crash or a huge allocation. Reading files
 * written by numpy itself is covered by tests/hlo/test_cli.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/half.h"
#include "check.h"
#include "hlo/npy.h"

static const hlo_type all_types[] = {HLO_PRED, HLO_S8,  HLO_S16, HLO_S32,  HLO_S64,  HLO_U8, HLO_U16,
                                     HLO_U32,  HLO_U64, HLO_F16, HLO_BF16, HLO_F32, HLO_F64};

static hlo_literal *make_literal(hlo_type t, int rank, const int64_t *dims) {
  hlo_shape s = shape_make(t, rank, dims);
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  if (!l) abort();
  for (int64_t i = 0; i < l->n; i++) {
    if (t == HLO_PRED) literal_set_s64(l, i, i % 3 == 0);
    else if (hlo_type_is_float(t)) literal_set_f64(l, i, (double)i * 0.5 - 3.25);
    else if (hlo_type_is_signed_int(t)) literal_set_s64(l, i, (i * 37 % 200) - 100);
    else literal_set_u64(l, i, (uint64_t)(i * 91 % 250));
  }
  if (t == HLO_S64 && l->n > 0) literal_set_s64(l, 0, INT64_MIN);
  if (t == HLO_U64 && l->n > 1) literal_set_u64(l, 1, UINT64_MAX);
  return l;
}

static void test_round_trip_every_type(void) {
  const int64_t scalar[1] = {0};
  const int64_t d1[] = {7};
  const int64_t d3[] = {2, 3, 4};
  const int64_t zero[] = {2, 0, 3};
  struct { int rank; const int64_t *dims; } shapes[] = {{0, scalar}, {1, d1}, {3, d3}, {3, zero}};
  for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      hlo_type t = all_types[ti];
      hlo_literal *l = make_literal(t, shapes[si].rank, shapes[si].dims);
      strbuf b;
      strbuf_init(&b);
      CHECK_OK(npy_write_buffer(l, &b));
      hlo_literal *back = NULL;
      CHECK_OK(npy_read_buffer(b.data, b.len, "roundtrip", &back));
      if (back) {
        if (t == HLO_BF16) { /* stored as f32, exactly */
          CHECK(back->shape.type == HLO_F32);
          CHECK(shape_same_dims(&back->shape, &l->shape));
          for (int64_t i = 0; i < l->n; i++) CHECK(literal_get_f64(back, i) == literal_get_f64(l, i));
          hlo_literal *narrowed = NULL;
          CHECK_OK(npy_convert_f32_to_bf16(back, &narrowed));
          CHECK(narrowed && literal_equal(narrowed, l));
          literal_free(narrowed);
        } else {
          CHECK(literal_equal(back, l));
        }
      }
      literal_free(back);
      strbuf_free(&b);
      literal_free(l);
    }
  }
}

static void test_header_layout(void) {
  const int64_t dims[] = {2, 3};
  hlo_literal *l = make_literal(HLO_F32, 2, dims);
  strbuf b;
  strbuf_init(&b);
  CHECK_OK(npy_write_buffer(l, &b));
  CHECK(b.len == 128 + 24); /* numpy's size for this array, growth padding included */
  CHECK(memcmp(b.data, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hlen = (unsigned char)b.data[8] | (size_t)(unsigned char)b.data[9] << 8;
  CHECK(10 + hlen == 128);
  CHECK(b.data[10 + hlen - 1] == '\n');
  CHECK(strncmp(b.data + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 59) == 0);
  strbuf_free(&b);
  literal_free(l);

  /* 1-d shapes get Python's one-element tuple comma; scalars an empty tuple. */
  const int64_t d1[] = {5};
  l = make_literal(HLO_U8, 1, d1);
  strbuf_init(&b);
  CHECK_OK(npy_write_buffer(l, &b));
  CHECK(strstr(b.data + 10, "'descr': '|u1'") != NULL);
  CHECK(strstr(b.data + 10, "'shape': (5,)") != NULL);
  strbuf_free(&b);
  literal_free(l);
  l = make_literal(HLO_PRED, 0, d1);
  strbuf_init(&b);
  CHECK_OK(npy_write_buffer(l, &b));
  CHECK(strstr(b.data + 10, "'descr': '|b1'") != NULL);
  CHECK(strstr(b.data + 10, "'shape': ()") != NULL);
  CHECK(b.len == 129);
  strbuf_free(&b);
  literal_free(l);
  CHECK(strcmp(npy_descr_for_type(HLO_F16), "<f2") == 0);
  CHECK(strcmp(npy_descr_for_type(HLO_BF16), "<f4") == 0);
  CHECK(npy_descr_for_type(HLO_TUPLE) == NULL);
}

/* Builds an .npy image with an arbitrary header (no padding rules enforced). */
static void make_npy(strbuf *b, int major, const char *header, const void *data, size_t n) {
  strbuf_init(b);
  size_t hl = strlen(header);
  char pre[12] = {(char)0x93, 'N', 'U', 'M', 'P', 'Y', (char)major, 0};
  pre[8] = (char)(hl & 0xff);
  pre[9] = (char)(hl >> 8 & 0xff);
  pre[10] = (char)(hl >> 16 & 0xff);
  pre[11] = (char)(hl >> 24 & 0xff);
  strbuf_appendn(b, pre, major == 1 ? 10 : 12);
  strbuf_appendn(b, header, hl);
  if (n) strbuf_appendn(b, data, n);
}

static kiln_status read_with_header(int major, const char *header, const void *data, size_t n, hlo_literal **out) {
  strbuf b;
  make_npy(&b, major, header, data, n);
  kiln_status s = npy_read_buffer(b.data, b.len, "test.npy", out);
  strbuf_free(&b);
  return s;
}

static void test_header_spellings(void) {
  const int32_t v[6] = {1, -2, 3, -4, 5, -6};
  const char *ok_headers[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }         \n",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}\n",
      "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(2,3)}",
      "{ 'descr' : '<i4' ,\n 'fortran_order' : False ,\t'shape' : ( 2 , 3 , ) , }\n",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }\n",
      "{'descr': '<i4', 'fortran_order': False, 'shape': [2, 3]}\n",
      "{'descr': '=i4', 'fortran_order': False, 'shape': (2, 3)}  \n\0\0",
  };
  for (size_t i = 0; i < sizeof ok_headers / sizeof ok_headers[0]; i++) {
    for (int major = 1; major <= 3; major++) {
      hlo_literal *l = NULL;
      kiln_status s = read_with_header(major, ok_headers[i], v, sizeof v, &l);
      if (s) fprintf(stderr, "header %zu: %s\n", i, kiln_status_message(s));
      CHECK(s == NULL);
      kiln_status_free(s);
      if (l) {
        CHECK(l->shape.type == HLO_S32 && l->shape.rank == 2 && l->shape.dims[0] == 2 && l->shape.dims[1] == 3);
        CHECK(literal_get_s64(l, 5) == -6);
      }
      literal_free(l);
    }
  }
  /* A Python int in parentheses without a comma is read as a 1-d shape. */
  hlo_literal *l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6)}", v, sizeof v, &l));
  CHECK(l && l->shape.rank == 1 && l->shape.dims[0] == 6);
  literal_free(l);
  /* Scalars: shape (). */
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}", v, 4, &l));
  CHECK(l && l->shape.rank == 0 && literal_get_s64(l, 0) == 1);
  literal_free(l);
  /* fortran_order True on rank <= 1 is the same bytes: accepted. */
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (6,)}", v, sizeof v, &l));
  literal_free(l);
  /* Numpy's one-character aliases. */
  const unsigned char bools[3] = {0, 1, 2};
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '?', 'fortran_order': False, 'shape': (3,)}", bools, 3, &l));
  if (l) {
    CHECK(l->shape.type == HLO_PRED);
    CHECK(((unsigned char *)l->data)[2] == 1); /* normalised to 0/1 */
  }
  literal_free(l);
}

static void test_big_endian(void) {
  const unsigned char be_i4[8] = {0x00, 0x00, 0x01, 0x02, 0xff, 0xff, 0xff, 0xfe};
  hlo_literal *l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,)}", be_i4, 8, &l));
  if (l) {
    CHECK(literal_get_s64(l, 0) == 0x102);
    CHECK(literal_get_s64(l, 1) == -2);
  }
  literal_free(l);
  const unsigned char be_f8[8] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0}; /* 1.5 */
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '>f8', 'fortran_order': False, 'shape': ()}", be_f8, 8, &l));
  CHECK(l && literal_get_f64(l, 0) == 1.5);
  literal_free(l);
  const unsigned char be_f2[2] = {0x3c, 0x00}; /* f16 1.0 */
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (1,)}", be_f2, 2, &l));
  CHECK(l && l->shape.type == HLO_F16 && literal_get_f64(l, 0) == 1.0);
  literal_free(l);
  const unsigned char be_u8[8] = {0x01, 0, 0, 0, 0, 0, 0, 0x02};
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '>u8', 'fortran_order': False, 'shape': (1,)}", be_u8, 8, &l));
  CHECK(l && literal_get_u64(l, 0) == 0x0100000000000002ull);
  literal_free(l);
  /* Single bytes have no order: '>u1' and '<i1' are fine. */
  const unsigned char bytes[2] = {0xff, 7};
  l = NULL;
  CHECK_OK(read_with_header(1, "{'descr': '>i1', 'fortran_order': False, 'shape': (2,)}", bytes, 2, &l));
  CHECK(l && literal_get_s64(l, 0) == -1 && literal_get_s64(l, 1) == 7);
  literal_free(l);
}

static void expect_bad(const char *header, size_t data_len, const char *needle) {
  static const unsigned char zeros[64];
  hlo_literal *l = NULL;
  kiln_status s = read_with_header(1, header, zeros, data_len, &l);
  CHECK(l == NULL);
  if (s && !strstr(kiln_status_message(s), "test.npy")) {
    fprintf(stderr, "error does not name the file: %s\n", kiln_status_message(s));
    CHECK(!"error names the file");
  }
  CHECK_ERR(s, needle);
  literal_free(l);
}

static void test_malformed_headers(void) {
  expect_bad("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16, "fortran_order");
  expect_bad("{'fortran_order': False, 'shape': (2,)}", 8, "missing 'descr'");
  expect_bad("{'descr': '<f4', 'shape': (2,)}", 8, "missing 'fortran_order'");
  expect_bad("{'descr': '<f4', 'fortran_order': False}", 8, "missing 'shape'");
  expect_bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8, "duplicate key");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8, "unexpected key 'extra'");
  expect_bad("{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", 16, "'<c8' is not supported");
  expect_bad("{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", 24, "not supported");
  expect_bad("{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 16, "not supported");
  expect_bad("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8, "structured");
  expect_bad("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8, "True or False");
  expect_bad("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", 8, "True or False");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", 8, "tuple");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", 8, "negative dimension");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 8, "64 bits");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}", 4,
             "more than 16 dimensions");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", 8, "integer dimension");
  expect_bad("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8, "not supported");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", 8, "after the header dict");
  expect_bad("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8, "expected ','");
  expect_bad("['descr']", 8, "expected '{'");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 8, "integer dimension");
  expect_bad("{'descr: '<f4'}", 8, "bad .npy header");
  expect_bad("", 8, "expected '{'");
  /* Payload size against the header. */
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 20, "truncated .npy data");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 28, "4 unexpected bytes");
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}", 4, "unexpected bytes");
}

static void test_giant_shapes(void) {
  /* 10 GB: over the default 8 GiB limit, refused before any allocation. */
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (50000, 50000)}", 8, "limit");
  /* Past 2^63 bytes. */
  expect_bad("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 8, "more than 2^63");
  /* Under the byte limit but far more than the file holds: a truncation error, not an allocation. */
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000,)}", 8, "truncated");
  /* The limit is configurable. */
  int64_t saved = literal_max_bytes;
  literal_max_bytes = 16;
  expect_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", 20, "16-byte limit");
  literal_max_bytes = saved;
}

static void test_bad_preambles(void) {
  hlo_literal *l = NULL;
  CHECK_ERR(npy_read_buffer("", 0, "empty.npy", &l), "empty.npy");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x01", 7, "short.npy", &l), "shorter than the 10-byte");
  CHECK_ERR(npy_read_buffer("PK\x03\x04 not numpy", 15, "z.npy", &l), "bad magic");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x04\x00\x10\x00", 10, "v4.npy", &l), "version 4.0");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x01\x01\x10\x00", 10, "v11.npy", &l), "version 1.1");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x02\x00\x10\x00", 10, "v2.npy", &l), "needs 12");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x01\x00\x40\x00{}", 12, "h.npy", &l), "truncated .npy header");
  CHECK_ERR(npy_read_buffer("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12, "big.npy", &l), "limit");
  CHECK(l == NULL);
}

static char tmpdir[64];

static void path_in_tmp(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(p, 1, n, f) == n);
  fclose(f);
}

static void test_files(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln_test_npy_XXXXXX");
  CHECK(mkdtemp(tmpdir) != NULL);
  char path[128];
  const int64_t dims[] = {3, 5};
  for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
    hlo_literal *l = make_literal(all_types[ti], 2, dims);
    path_in_tmp(path, sizeof path, "rt.npy");
    CHECK_OK(npy_write_file(path, l));
    hlo_literal *back = NULL;
    CHECK_OK(npy_read_file(path, &back));
    if (back && all_types[ti] != HLO_BF16) CHECK(literal_equal(back, l));
    if (back && all_types[ti] == HLO_BF16) CHECK(back->shape.type == HLO_F32 && back->n == l->n);
    literal_free(back);
    literal_free(l);
  }
  hlo_literal *l = NULL;
  path_in_tmp(path, sizeof path, "missing.npy");
  kiln_status s = npy_read_file(path, &l);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND);
  CHECK_ERR(s, "missing.npy");
  CHECK_ERR(npy_read_file(tmpdir, &l), "is a directory");

  /* Truncated payload in a real file. */
  strbuf b;
  const float f6[6] = {0};
  make_npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", f6, 20);
  path_in_tmp(path, sizeof path, "trunc.npy");
  write_bytes(path, b.data, b.len);
  strbuf_free(&b);
  CHECK_ERR(npy_read_file(path, &l), "trunc.npy: truncated .npy data");
  /* Header length past the end of the file. */
  write_bytes(path, "\x93NUMPY\x01\x00\x50\x00{'descr'", 17);
  CHECK_ERR(npy_read_file(path, &l), "truncated .npy header");
  write_bytes(path, "\x93NUM", 4);
  CHECK_ERR(npy_read_file(path, &l), "shorter than the 10-byte");
  /* A 10 GB header on a tiny file: refused before allocating. */
  make_npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (50000, 50000)}", f6, 8);
  path_in_tmp(path, sizeof path, "giant.npy");
  write_bytes(path, b.data, b.len);
  strbuf_free(&b);
  CHECK_ERR(npy_read_file(path, &l), "giant.npy: shape f32[50000,50000] needs 10000000000 bytes");
  make_npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5000, 5000)}", f6, 8);
  write_bytes(path, b.data, b.len);
  strbuf_free(&b);
  CHECK_ERR(npy_read_file(path, &l), "truncated .npy data");
  make_npy(&b, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2)}", f6, 24);
  path_in_tmp(path, sizeof path, "fortran.npy");
  write_bytes(path, b.data, b.len);
  strbuf_free(&b);
  CHECK_ERR(npy_read_file(path, &l), "fortran.npy: fortran_order=True");
  CHECK(l == NULL);

  /* Writing into a missing directory is an I/O error naming the path. */
  path_in_tmp(path, sizeof path, "no/such/dir/x.npy");
  hlo_literal *w = make_literal(HLO_F32, 2, dims);
  s = npy_write_file(path, w);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND || kiln_status_code(s) == KILN_IO_ERROR);
  CHECK_ERR(s, "no/such/dir/x.npy");
  literal_free(w);

  const char *names[] = {"rt.npy", "trunc.npy", "giant.npy", "fortran.npy"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    path_in_tmp(path, sizeof path, names[i]);
    unlink(path);
  }
  rmdir(tmpdir);
}

static void test_write_errors(void) {
  const int64_t d[] = {2};
  hlo_literal *elems[2] = {make_literal(HLO_F32, 1, d), make_literal(HLO_S32, 1, d)};
  hlo_literal *t = literal_tuple(2, elems);
  strbuf b;
  strbuf_init(&b);
  CHECK_ERR(npy_write_buffer(t, &b), "tuple");
  strbuf_free(&b);
  literal_free(t);
}

static void test_bf16_rounding(void) {
  const int64_t d[] = {5};
  hlo_shape s = shape_make(HLO_F32, 1, d);
  hlo_literal *f = NULL;
  CHECK_OK(literal_create(&s, &f));
  if (!f) return;
  float *v = f->data;
  v[0] = 1.00390625f;   /* 1 + 2^-8: exactly halfway, rounds to even (1.0) */
  v[1] = 1.01171875f;   /* 1 + 3*2^-8: halfway, rounds to even (1 + 2^-6) */
  v[2] = 1.0f + 0x1p-7f; /* representable */
  v[3] = -2.5f;
  v[4] = 3.0e38f;
  hlo_literal *b = NULL;
  CHECK_OK(npy_convert_f32_to_bf16(f, &b));
  if (b) {
    CHECK(b->shape.type == HLO_BF16);
    const uint16_t *h = b->data;
    CHECK(bf16_to_f32(h[0]) == 1.0f);
    CHECK(bf16_to_f32(h[1]) == 1.015625f);
    CHECK(bf16_to_f32(h[2]) == 1.0f + 0x1p-7f);
    CHECK(bf16_to_f32(h[3]) == -2.5f);
  }
  literal_free(b);
  hlo_literal *i32 = make_literal(HLO_S32, 1, d);
  CHECK_ERR(npy_convert_f32_to_bf16(i32, &b), "f32");
  literal_free(i32);
  literal_free(f);
}

TEST_MAIN(TEST(test_round_trip_every_type), TEST(test_header_layout), TEST(test_header_spellings),
          TEST(test_big_endian), TEST(test_malformed_headers), TEST(test_giant_shapes), TEST(test_bad_preambles),
          TEST(test_files), TEST(test_write_errors), TEST(test_bf16_rounding))
