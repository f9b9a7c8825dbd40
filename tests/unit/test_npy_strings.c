/* Tests of src/graph/npy_strings.c: numpy's fixed-width text ('<U', '>U') and bytes
 * ('|S') arrays read into STRING tensors (UTF-8, NUL padding stripped), numeric files
 * handed back untouched for hlo/npy.c, object arrays and malformed images refused with
 * messages that say what to do, and '<U' images written as np.save writes them (the
 * exact header) from valid UTF-8 only. The images here are built byte by byte; the CLI
 * test (tests/hlo/test_cli.py) checks the same files against numpy itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "check.h"
#include "graph/npy_strings.h"
#include "graph/tensor.h"

/* A version 1.0 .npy image: header dict `dict`, padded like numpy, then payload. */
static void image(strbuf *b, const char *dict, const void *payload, size_t n) {
  strbuf h;
  strbuf_init(&h);
  strbuf_append(&h, dict);
  while ((10 + h.len + 1) % 64) strbuf_putc(&h, ' ');
  strbuf_putc(&h, '\n');
  strbuf_init(b);
  strbuf_appendn(b, "\x93NUMPY\x01\x00", 8);
  strbuf_putc(b, (char)(h.len & 0xff));
  strbuf_putc(b, (char)(h.len >> 8));
  strbuf_appendn(b, h.data, h.len);
  strbuf_appendn(b, payload, n);
  strbuf_free(&h);
}

static void put_u32(unsigned char *p, uint32_t v, bool big) {
  for (int i = 0; i < 4; i++) p[big ? 3 - i : i] = (unsigned char)(v >> (8 * i));
}

static bool string_is(const graph_tensor *t, int64_t i, const char *want) {
  const graph_bytes *s = tensor_string(t, i);
  return s->len == strlen(want) && memcmp(s->data, want, s->len) == 0;
}

static void test_reads_unicode_arrays_as_utf8_without_padding(void) {
  /* ["hé", "a中😀"] as '<U3': code points, NUL-padded to 3 per element. */
  uint32_t cps[6] = {'h', 0xE9, 0, 'a', 0x4E2D, 0x1F600};
  unsigned char payload[24];
  for (int i = 0; i < 6; i++) put_u32(payload + 4 * i, cps[i], false);
  strbuf b;
  image(&b, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", payload, sizeof payload);
  graph_tensor *t = NULL;
  CHECK_OK(npy_strings_read_buffer(b.data, b.len, "x.npy", &t));
  CHECK(t && t->dtype == GRAPH_DT_STRING && t->rank == 1 && t->dims[0] == 2);
  if (t) CHECK(string_is(t, 0, "h\xc3\xa9") && string_is(t, 1, "a\xe4\xb8\xad\xf0\x9f\x98\x80"));
  tensor_free(t);
  strbuf_free(&b);
  /* The same big-endian, in a 2-D shape given in another key order. */
  for (int i = 0; i < 6; i++) put_u32(payload + 4 * i, cps[i], true);
  image(&b, "{'shape': (1, 2), 'fortran_order': False, 'descr': '>U3'}", payload, sizeof payload);
  CHECK_OK(npy_strings_read_buffer(b.data, b.len, "x.npy", &t));
  CHECK(t && t->rank == 2 && t->dims[0] == 1 && t->dims[1] == 2);
  if (t) CHECK(string_is(t, 0, "h\xc3\xa9") && string_is(t, 1, "a\xe4\xb8\xad\xf0\x9f\x98\x80"));
  tensor_free(t);
  strbuf_free(&b);
}

static void test_reads_bytes_arrays_as_they_are(void) {
  const char payload[6] = {'a', 'b', 'c', '\xff', 0, 0};
  strbuf b;
  image(&b, "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", payload, sizeof payload);
  graph_tensor *t = NULL;
  CHECK_OK(npy_strings_read_buffer(b.data, b.len, "x.npy", &t));
  CHECK(t && string_is(t, 0, "abc") && string_is(t, 1, "\xff"));
  tensor_free(t);
  strbuf_free(&b);
}

static void test_numeric_files_are_left_to_the_numeric_reader(void) {
  float v[2] = {1, 2};
  strbuf b;
  image(&b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
  graph_tensor *t = (graph_tensor *)&b; /* must be reset */
  CHECK_OK(npy_strings_read_buffer(b.data, b.len, "x.npy", &t));
  CHECK(t == NULL);
  strbuf_free(&b);
  CHECK_OK(npy_strings_read_buffer("not a npy", 9, "x.npy", &t));
  CHECK(t == NULL);
}

static void test_object_arrays_and_bad_images_are_refused(void) {
  strbuf b;
  graph_tensor *t = NULL;
  image(&b, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "\x80\x02", 2);
  CHECK_ERR(npy_strings_read_buffer(b.data, b.len, "o.npy", &t), "o.npy holds a numpy object array");
  CHECK_ERR(npy_strings_read_buffer(b.data, b.len, "o.npy", &t), "save string arrays with dtype=str");
  strbuf_free(&b);
  unsigned char payload[8];
  put_u32(payload, 'a', false);
  put_u32(payload + 4, 0xD800, false); /* a surrogate is no character */
  image(&b, "{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", payload, sizeof payload);
  CHECK_ERR(npy_strings_read_buffer(b.data, b.len, "s.npy", &t), "s.npy: element 0 holds U+D800 at character 1");
  strbuf_free(&b);
  image(&b, "{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }", payload, sizeof payload);
  CHECK_ERR(npy_strings_read_buffer(b.data, b.len, "s.npy", &t), "promises 24 bytes of strings but the file holds 8");
  strbuf_free(&b);
  image(&b, "{'descr': '<U1', 'fortran_order': True, 'shape': (2, 2), }", payload, 0);
  CHECK_ERR(npy_strings_read_buffer(b.data, b.len, "f.npy", &t), "fortran_order=True");
  strbuf_free(&b);
  CHECK(t == NULL);
}

static void test_writes_utf8_as_numpy_unicode_exactly_like_np_save(void) {
  graph_tensor *t, *back = NULL;
  int64_t dims[2] = {2, 1};
  CHECK_OK(tensor_create(GRAPH_DT_STRING, 2, dims, &t));
  tensor_set_string(t, 0, "h\xc3\xa9llo", 6);
  tensor_set_string(t, 1, "", 0);
  strbuf b;
  strbuf_init(&b);
  CHECK_OK(npy_strings_write_buffer(t, "output y", &b));
  /* np.save(np.array([["héllo"], [""]])): '<U5', numpy's 21-digit room, 64-byte pad. */
  const char *head = "\x93NUMPY\x01\x00v\x00{'descr': '<U5', 'fortran_order': False, 'shape': (2, 1), }";
  CHECK(b.len == 128 + 2 * 5 * 4 && memcmp(b.data, head, strlen(head) + 0) == 0 && b.data[127] == '\n');
  CHECK_OK(npy_strings_read_buffer(b.data, b.len, "y.npy", &back));
  CHECK(back && tensor_equal(t, back));
  tensor_free(back);
  strbuf_free(&b);
  tensor_free(t);
}

static void test_write_refuses_what_numpy_text_cannot_hold(void) {
  graph_tensor *t;
  int64_t n = 2;
  CHECK_OK(tensor_create(GRAPH_DT_STRING, 1, &n, &t));
  tensor_set_string(t, 0, "ok", 2);
  tensor_set_string(t, 1, "a\xc3", 2);
  strbuf b;
  strbuf_init(&b);
  CHECK_ERR(npy_strings_write_buffer(t, "output y", &b), "output y: element 1 is not valid UTF-8 (at byte 1 of 2)");
  tensor_set_string(t, 1, "a\0", 2);
  CHECK_ERR(npy_strings_write_buffer(t, "output y", &b), "output y: element 1 ends with a NUL character");
  strbuf_free(&b);
  tensor_free(t);
}

static void test_files_round_trip_and_missing_files_are_not_found(void) {
  char path[] = "/tmp/kiln-npy-strings-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  graph_tensor *t, *back = NULL;
  CHECK_OK(tensor_create(GRAPH_DT_STRING, 0, NULL, &t));
  tensor_set_string(t, 0, "\xce\xa9", 2);
  CHECK_OK(npy_strings_write_file(path, t, "output w"));
  CHECK_OK(npy_strings_read_file(path, &back));
  CHECK(back && tensor_equal(t, back));
  tensor_free(back);
  tensor_free(t);
  remove(path);
  kiln_status s = npy_strings_read_file("/nonexistent/x.npy", &back);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND && back == NULL);
  kiln_status_free(s);
}

TEST_MAIN(TEST(test_reads_unicode_arrays_as_utf8_without_padding), TEST(test_reads_bytes_arrays_as_they_are),
          TEST(test_numeric_files_are_left_to_the_numeric_reader), TEST(test_object_arrays_and_bad_images_are_refused),
          TEST(test_writes_utf8_as_numpy_unicode_exactly_like_np_save),
          TEST(test_write_refuses_what_numpy_text_cannot_hold),
          TEST(test_files_round_trip_and_missing_files_are_not_found))
