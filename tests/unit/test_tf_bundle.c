/* Unit tests for the TensorBundle checkpoint reader (src/import/tf/tf_bundle.c). A
 * small writer here makes bundles the way TensorFlow lays them out -- a sorted string
 * table (one data block with a restart point per entry, an empty metaindex, an index
 * block, the 48-byte footer), BundleEntryProto values with masked CRC32Cs, raw tensor
 * bytes in .data-NNNNN-of-MMMMM shards -- into a temporary directory. The slice keys
 * are written as literal bytes, worked out by hand from TensorFlow's ordered-code rules,
 * so they check the reader's encoder rather than repeat it (the TensorFlow-made bundles
 * of tests/models/test_tf_savedmodels.py check it against the real thing). Damaged
 * bundles check that each failure names the file and the tensor key. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "import/tf/tf_bundle.h"

/* ---- a byte buffer ---- */

typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
} wbuf;

static void put(wbuf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void put_byte(wbuf *b, uint8_t c) { put(b, &c, 1); }

static void put_varint(wbuf *b, uint64_t v) {
  while (v >= 0x80) {
    put_byte(b, (uint8_t)(v | 0x80));
    v >>= 7;
  }
  put_byte(b, (uint8_t)v);
}

static void put_le32(wbuf *b, uint32_t v) {
  for (int i = 0; i < 4; i++) put_byte(b, (uint8_t)(v >> (8 * i)));
}

static void put_msg(wbuf *b, int field, const wbuf *m) {
  put_varint(b, (uint64_t)field << 3 | 2);
  put_varint(b, m->n);
  put(b, m->p, m->n);
}

static void put_int_field(wbuf *b, int field, int64_t v) {
  put_varint(b, (uint64_t)field << 3);
  put_varint(b, (uint64_t)v);
}

/* ---- bundle entries ---- */

enum { DT_FLOAT = 1, DT_INT32 = 3, DT_STRING = 7, DT_QINT8 = 11 };

typedef struct slice_spec {
  int rank;
  int64_t start[4], length[4];
} slice_spec;

static wbuf entry(int dtype, int rank, const int64_t *dims, int shard, int64_t offset, int64_t size, uint32_t crc,
                  int n_slices, const slice_spec *slices) {
  wbuf e = {0}, shape = {0};
  put_int_field(&e, 1, dtype);
  for (int i = 0; i < rank; i++) {
    wbuf dim = {0};
    put_int_field(&dim, 1, dims[i]);
    put_msg(&shape, 2, &dim);
    free(dim.p);
  }
  put_msg(&e, 2, &shape);
  free(shape.p);
  if (shard) put_int_field(&e, 3, shard);
  if (offset) put_int_field(&e, 4, offset);
  if (size) put_int_field(&e, 5, size);
  put_varint(&e, 6 << 3 | 5);
  put_le32(&e, tf_crc32c_mask(crc));
  for (int s = 0; s < n_slices; s++) {
    wbuf sl = {0};
    for (int d = 0; d < slices[s].rank; d++) {
      wbuf ext = {0};
      put_int_field(&ext, 1, slices[s].start[d]);
      if (slices[s].length[d] >= 0) put_int_field(&ext, 2, slices[s].length[d]);
      put_msg(&sl, 1, &ext);
      free(ext.p);
    }
    put_msg(&e, 7, &sl);
    free(sl.p);
  }
  return e;
}

/* ---- the table ---- */

typedef struct kv {
  uint8_t key[64];
  size_t key_len;
  wbuf value;
} kv;

typedef struct writer {
  char prefix[256];
  int num_shards;
  wbuf shards[4];
  kv kvs[32];
  int n;
} writer;

static void add_kv(writer *w, const void *key, size_t key_len, wbuf value) {
  kv *e = &w->kvs[w->n++];
  memcpy(e->key, key, key_len);
  e->key_len = key_len;
  e->value = value;
}

/* Appends data to a shard and adds its entry under key. */
static void add_tensor(writer *w, const void *key, size_t key_len, int dtype, int rank, const int64_t *dims, int shard,
                       const void *data, size_t size) {
  int64_t offset = (int64_t)w->shards[shard].n;
  put(&w->shards[shard], data, size);
  add_kv(w, key, key_len, entry(dtype, rank, dims, shard, offset, (int64_t)size, tf_crc32c_extend(0, data, size), 0,
                                NULL));
}

static int kv_cmp(const void *a, const void *b) {
  const kv *x = a, *y = b;
  size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static void put_block(wbuf *file, const wbuf *block, uint64_t *off, uint64_t *size) {
  *off = file->n;
  *size = block->n;
  put(file, block->p, block->n);
  uint8_t type = 0;
  put_byte(file, type);
  uint32_t crc = tf_crc32c_extend(tf_crc32c_extend(0, block->p, block->n), &type, 1);
  put_le32(file, tf_crc32c_mask(crc));
}

static wbuf table_bytes(writer *w) {
  wbuf header = {0};
  put_int_field(&header, 1, w->num_shards);
  add_kv(w, "", 0, header);
  qsort(w->kvs, (size_t)w->n, sizeof *w->kvs, kv_cmp);
  wbuf file = {0}, data = {0}, restarts = {0};
  for (int i = 0; i < w->n; i++) {
    put_le32(&restarts, (uint32_t)data.n);
    put_varint(&data, 0);
    put_varint(&data, w->kvs[i].key_len);
    put_varint(&data, w->kvs[i].value.n);
    put(&data, w->kvs[i].key, w->kvs[i].key_len);
    put(&data, w->kvs[i].value.p, w->kvs[i].value.n);
  }
  put(&data, restarts.p, restarts.n);
  put_le32(&data, (uint32_t)w->n);
  uint64_t data_off, data_size, meta_off, meta_size, index_off, index_size;
  put_block(&file, &data, &data_off, &data_size);
  wbuf meta = {0};
  put_le32(&meta, 0);
  put_le32(&meta, 1);
  put_block(&file, &meta, &meta_off, &meta_size);
  wbuf index = {0}, handle = {0};
  put_varint(&handle, data_off);
  put_varint(&handle, data_size);
  put_varint(&index, 0);
  put_varint(&index, w->kvs[w->n - 1].key_len);
  put_varint(&index, handle.n);
  put(&index, w->kvs[w->n - 1].key, w->kvs[w->n - 1].key_len);
  put(&index, handle.p, handle.n);
  put_le32(&index, 0);
  put_le32(&index, 1);
  put_block(&file, &index, &index_off, &index_size);
  wbuf footer = {0};
  put_varint(&footer, meta_off);
  put_varint(&footer, meta_size);
  put_varint(&footer, index_off);
  put_varint(&footer, index_size);
  while (footer.n < 40) put_byte(&footer, 0);
  uint64_t magic = 0xdb4775248b80fb57ull;
  for (int i = 0; i < 8; i++) put_byte(&footer, (uint8_t)(magic >> (8 * i)));
  put(&file, footer.p, footer.n);
  free(data.p);
  free(restarts.p);
  free(meta.p);
  free(index.p);
  free(handle.p);
  free(footer.p);
  return file;
}

static void write_file(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(d, 1, n, f) == n);
  fclose(f);
}

static char *shard_name(const writer *w, int i) {
  static char path[320];
  snprintf(path, sizeof path, "%s.data-%05d-of-%05d", w->prefix, i, w->num_shards);
  return path;
}

/* Writes the index and the shards; frees the writer's buffers. */
static void finish(writer *w) {
  wbuf t = table_bytes(w);
  char path[320];
  snprintf(path, sizeof path, "%s.index", w->prefix);
  write_file(path, t.p, t.n);
  free(t.p);
  for (int i = 0; i < w->num_shards; i++) {
    write_file(shard_name(w, i), w->shards[i].p ? w->shards[i].p : (uint8_t *)"", w->shards[i].n);
    free(w->shards[i].p);
  }
  for (int i = 0; i < w->n; i++) free(w->kvs[i].value.p);
}

static void new_writer(writer *w, int num_shards) {
  memset(w, 0, sizeof *w);
  char dir[] = "/tmp/kiln_bundle_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  snprintf(w->prefix, sizeof w->prefix, "%s/variables", dir);
  w->num_shards = num_shards;
}

static const float kW[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};

/* A bundle with a float matrix "w", an int vector "n" and a string vector "s". */
static void make_basic(writer *w) {
  new_writer(w, 1);
  int64_t wd[2] = {2, 3}, nd[1] = {3}, sd[1] = {2};
  add_tensor(w, "w", 1, DT_FLOAT, 2, wd, 0, kW, sizeof kW);
  int32_t n[3] = {7, -8, 9};
  add_tensor(w, "n", 1, DT_INT32, 1, nd, 0, n, sizeof n);
  /* Strings: varint lengths, the masked CRC32C of the lengths as uint32s, the bytes;
   * the entry's CRC covers the uint32 lengths, the checksum and the bytes. */
  uint8_t lens_le[8] = {2, 0, 0, 0, 3, 0, 0, 0};
  uint32_t lcrc = tf_crc32c_mask(tf_crc32c_extend(0, lens_le, 8));
  uint8_t sdata[] = {2, 3, (uint8_t)lcrc, (uint8_t)(lcrc >> 8), (uint8_t)(lcrc >> 16), (uint8_t)(lcrc >> 24),
                     'h', 'i', 'y', 'o', 'u'};
  uint32_t crc = tf_crc32c_extend(tf_crc32c_extend(0, lens_le, 8), sdata + 2, sizeof sdata - 2);
  int64_t off = (int64_t)w->shards[0].n;
  put(&w->shards[0], sdata, sizeof sdata);
  add_kv(w, "s", 1, entry(DT_STRING, 1, sd, 0, off, sizeof sdata, crc, 0, NULL));
}

static void cleanup(const writer *w) {
  char path[320];
  snprintf(path, sizeof path, "%s.index", w->prefix);
  unlink(path);
  for (int i = 0; i < w->num_shards; i++) unlink(shard_name(w, i));
  snprintf(path, sizeof path, "%s", w->prefix);
  char *slash = strrchr(path, '/');
  if (slash) *slash = 0;
  rmdir(path);
}

/* ---- the tests ---- */

/* The bundle w wrote (finished), opened; NULL (a failed check) if it does not open. */
static tf_bundle *open_bundle(const writer *w) {
  tf_bundle *b = NULL;
  CHECK_OK(tf_bundle_open(w->prefix, &b));
  return b;
}

static void test_crc32c_matches_the_castagnoli_check_value(void) {
  CHECK(tf_crc32c_extend(0, "123456789", 9) == 0xe3069283u);
  /* Extending in two pieces is the same as one. */
  CHECK(tf_crc32c_extend(tf_crc32c_extend(0, "1234", 4), "56789", 5) == 0xe3069283u);
}

static void test_reads_numeric_and_string_tensors_with_their_shapes(void) {
  writer w;
  make_basic(&w);
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  CHECK(tf_bundle_count(b) == 3);
  CHECK(!strcmp(tf_bundle_key(b, 0), "n") && !strcmp(tf_bundle_key(b, 2), "w"));
  CHECK(tf_bundle_has(b, "s") && !tf_bundle_has(b, "x") && !tf_bundle_has(b, ""));
  graph_tensor *t = NULL;
  CHECK_OK(tf_bundle_read(b, "w", &t));
  if (t) {
    CHECK(t->dtype == GRAPH_DT_FLOAT && t->rank == 2 && t->dims[0] == 2 && t->dims[1] == 3);
    CHECK(!memcmp(t->data, kW, sizeof kW));
    tensor_free(t);
  }
  CHECK_OK(tf_bundle_read(b, "n", &t));
  if (t) {
    CHECK(t->dtype == GRAPH_DT_INT32 && ((int32_t *)t->data)[1] == -8);
    tensor_free(t);
  }
  CHECK_OK(tf_bundle_read(b, "s", &t));
  if (t) {
    const graph_bytes *s0 = tensor_string(t, 0), *s1 = tensor_string(t, 1);
    CHECK(s0->len == 2 && !memcmp(s0->data, "hi", 2));
    CHECK(s1->len == 3 && !memcmp(s1->data, "you", 3));
    tensor_free(t);
  }
  CHECK_ERR(tf_bundle_read(b, "nope", &t), "no tensor 'nope'");
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_assembles_a_tensor_from_slices_in_two_shards(void) {
  writer w;
  new_writer(&w, 2);
  /* "t" is 3x2, saved as rows [0,2) in shard 0 and row [2,3) in shard 1; "u" is [100],
   * saved as [0,70) and [70,100) (70 needs a two-byte ordered-code number). */
  int64_t td[2] = {3, 2}, ud[1] = {100};
  slice_spec ts[2] = {{2, {0, 0}, {2, -1}}, {2, {2, 0}, {1, -1}}};
  slice_spec us[2] = {{1, {0}, {70}}, {1, {70}, {30}}};
  add_kv(&w, "t", 1, entry(DT_FLOAT, 2, td, 0, 0, 0, 0, 2, ts));
  add_kv(&w, "u", 1, entry(DT_FLOAT, 1, ud, 0, 0, 0, 0, 2, us));
  float top[4] = {1, 2, 3, 4}, bottom[2] = {5, 6}, u[100];
  for (int i = 0; i < 100; i++) u[i] = (float)i * 0.5f;
  /* 0 "t" (escaped, 00 01 ends it), rank 2, then signed start/length per dim. */
  static const uint8_t k_top[] = {0x00, 't', 0x00, 0x01, 0x01, 0x02, 0x80, 0x82, 0x80, 0x7f};
  static const uint8_t k_bottom[] = {0x00, 't', 0x00, 0x01, 0x01, 0x02, 0x82, 0x81, 0x80, 0x7f};
  static const uint8_t k_u0[] = {0x00, 'u', 0x00, 0x01, 0x01, 0x01, 0x80, 0xc0, 0x46};
  static const uint8_t k_u1[] = {0x00, 'u', 0x00, 0x01, 0x01, 0x01, 0xc0, 0x46, 0x9e};
  int64_t d_top[2] = {2, 2}, d_bottom[2] = {1, 2}, d_u0[1] = {70}, d_u1[1] = {30};
  add_tensor(&w, k_top, sizeof k_top, DT_FLOAT, 2, d_top, 0, top, sizeof top);
  add_tensor(&w, k_bottom, sizeof k_bottom, DT_FLOAT, 2, d_bottom, 1, bottom, sizeof bottom);
  add_tensor(&w, k_u0, sizeof k_u0, DT_FLOAT, 1, d_u0, 1, u, 70 * sizeof(float));
  add_tensor(&w, k_u1, sizeof k_u1, DT_FLOAT, 1, d_u1, 0, u + 70, 30 * sizeof(float));
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  CHECK(tf_bundle_count(b) == 2); /* slice entries are not listed */
  graph_tensor *t = NULL;
  CHECK_OK(tf_bundle_read(b, "t", &t));
  if (t) {
    static const float want[6] = {1, 2, 3, 4, 5, 6};
    CHECK(t->rank == 2 && t->dims[0] == 3 && t->dims[1] == 2 && !memcmp(t->data, want, sizeof want));
    tensor_free(t);
  }
  CHECK_OK(tf_bundle_read(b, "u", &t));
  if (t) {
    CHECK(t->n == 100 && !memcmp(t->data, u, sizeof u));
    tensor_free(t);
  }
  tf_bundle_free(b);
  cleanup(&w);
}

/* A slice whose entry has the wrong shape in both dims: one error, naming the first
 * (found by fuzz_tf_bundle: a second error used to replace the first, which leaked; the
 * ASan run of this test checks for leaks). */
static void test_a_slice_entry_of_the_wrong_shape_is_one_error(void) {
  writer w;
  new_writer(&w, 1);
  int64_t td[2] = {3, 2};
  slice_spec ts[2] = {{2, {0, 0}, {2, -1}}, {2, {2, 0}, {1, -1}}};
  add_kv(&w, "t", 1, entry(DT_FLOAT, 2, td, 0, 0, 0, 0, 2, ts));
  static const uint8_t k_top[] = {0x00, 't', 0x00, 0x01, 0x01, 0x02, 0x80, 0x82, 0x80, 0x7f};
  static const uint8_t k_bottom[] = {0x00, 't', 0x00, 0x01, 0x01, 0x02, 0x82, 0x81, 0x80, 0x7f};
  float one = 1, bottom[2] = {5, 6};
  int64_t d_top[2] = {1, 1}, d_bottom[2] = {1, 2}; /* the top slice should be 2x2 */
  add_tensor(&w, k_top, sizeof k_top, DT_FLOAT, 2, d_top, 0, &one, sizeof one);
  add_tensor(&w, k_bottom, sizeof k_bottom, DT_FLOAT, 2, d_bottom, 0, bottom, sizeof bottom);
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  graph_tensor *t = NULL;
  CHECK_ERR(tf_bundle_read(b, "t", &t), "slice 0's entry has the wrong shape in dimension 0");
  CHECK(t == NULL);
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_a_corrupt_byte_is_a_bad_crc_naming_file_and_key(void) {
  writer w;
  make_basic(&w);
  w.shards[0].p[0] ^= 0x10; /* inside "w", the first tensor written */
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  graph_tensor *t = NULL;
  CHECK_ERR(tf_bundle_read(b, "w", &t), "bad CRC");
  CHECK_ERR(tf_bundle_read(b, "w", &t), "checkpoint tensor 'w'");
  CHECK_ERR(tf_bundle_read(b, "w", &t), ".data-00000-of-00001");
  CHECK_OK(tf_bundle_read(b, "n", &t)); /* the others still read */
  tensor_free(t);
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_a_missing_shard_is_not_found_naming_the_file(void) {
  writer w;
  make_basic(&w);
  finish(&w);
  unlink(shard_name(&w, 0));
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  graph_tensor *t = NULL;
  kiln_status s = tf_bundle_read(b, "n", &t);
  CHECK(s && kiln_status_code(s) == KILN_NOT_FOUND);
  kiln_status_free(s);
  CHECK_ERR(tf_bundle_read(b, "n", &t), "variables.data-00000-of-00001: missing");
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_a_truncated_shard_names_the_file_and_the_bytes_needed(void) {
  writer w;
  make_basic(&w);
  w.shards[0].n -= 5; /* cuts into "s", the last tensor */
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  graph_tensor *t = NULL;
  CHECK_ERR(tf_bundle_read(b, "s", &t), "is truncated");
  CHECK_ERR(tf_bundle_read(b, "s", &t), "checkpoint tensor 's'");
  CHECK_OK(tf_bundle_read(b, "w", &t));
  tensor_free(t);
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_an_unsupported_dtype_names_the_tensor(void) {
  writer w;
  new_writer(&w, 1);
  int64_t d[1] = {4};
  add_tensor(&w, "q", 1, DT_QINT8, 1, d, 0, "abcd", 4);
  finish(&w);
  tf_bundle *b = open_bundle(&w);
  if (!b) return;
  graph_tensor *t = NULL;
  CHECK_ERR(tf_bundle_read(b, "q", &t), "DT_QINT8");
  CHECK_ERR(tf_bundle_read(b, "q", &t), "checkpoint tensor 'q'");
  tf_bundle_free(b);
  cleanup(&w);
}

static void test_index_damage_is_an_error_never_a_crash(void) {
  writer w;
  make_basic(&w);
  wbuf t = table_bytes(&w);
  tf_bundle *b = NULL;
  CHECK_OK(tf_bundle_open_index(t.p, t.n, NULL, &b));
  tf_bundle_free(b);
  /* Every truncation fails (the footer moves), and so does every flipped byte: block
   * CRCs cover the blocks, the magic number the footer's end; the footer's handles
   * may still point at valid blocks, which is fine as long as nothing crashes. */
  for (size_t n = 0; n < t.n; n++) {
    kiln_status s = tf_bundle_open_index(t.p, n, NULL, &b);
    CHECK(s != NULL);
    kiln_status_free(s);
  }
  uint8_t *copy = malloc(t.n);
  for (size_t i = 0; i < t.n; i++) {
    memcpy(copy, t.p, t.n);
    copy[i] ^= 0x01;
    kiln_status s = tf_bundle_open_index(copy, t.n, NULL, &b);
    if (!s) tf_bundle_free(b);
    kiln_status_free(s);
  }
  memcpy(copy, t.p, t.n);
  copy[t.n - 1] ^= 0x80;
  CHECK_ERR(tf_bundle_open_index(copy, t.n, NULL, &b), "bad magic");
  memcpy(copy, t.p, t.n);
  copy[3] ^= 0x01; /* inside the data block */
  CHECK_ERR(tf_bundle_open_index(copy, t.n, NULL, &b), "bad CRC");
  free(copy);
  free(t.p);
  for (int i = 0; i < w.num_shards; i++) free(w.shards[i].p);
  for (int i = 0; i < w.n; i++) free(w.kvs[i].value.p);
  cleanup(&w);
}

TEST_MAIN(TEST(test_crc32c_matches_the_castagnoli_check_value),
          TEST(test_reads_numeric_and_string_tensors_with_their_shapes),
          TEST(test_assembles_a_tensor_from_slices_in_two_shards),
          TEST(test_a_slice_entry_of_the_wrong_shape_is_one_error),
          TEST(test_a_corrupt_byte_is_a_bad_crc_naming_file_and_key),
          TEST(test_a_missing_shard_is_not_found_naming_the_file),
          TEST(test_a_truncated_shard_names_the_file_and_the_bytes_needed),
          TEST(test_an_unsupported_dtype_names_the_tensor),
          TEST(test_index_damage_is_an_error_never_a_crash))
