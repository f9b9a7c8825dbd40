/* TensorBundle reader (see tf_bundle.h). The table layout is LevelDB's (footer with two
 * block handles and the magic number, blocks of prefix-compressed entries ending in a
 * restart array, a 5-byte trailer after each block); the messages are those of
 * tensorflow/core/protobuf/tensor_bundle.proto and framework/tensor_slice.proto, read
 * with pb_wire. Every entry is decoded when the index is opened, so a malformed index
 * fails at once, naming the key; shard bytes are only touched when a tensor is read.
 * Slice keys are made with TensorFlow's ordered-code rules (strings escaped and
 * terminated, numbers prefixed by their length) so the lookup is a plain search in
 * the sorted keys. */
#include "import/tf/tf_bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/file.h"
#include "base/strbuf.h"
#include "import/tf/pb_wire.h"
#include "import/tf/tf_def.h"

/* ---- CRC32C ---- */

static uint32_t crc_table[256];

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t tf_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, crc_init);
  const uint8_t *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t tf_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/* ---- the bundle ---- */

enum { FOOTER_LEN = 48, BLOCK_TRAILER = 5, MAX_SLICES_PER_TENSOR = 1 << 16 };
static const uint64_t TABLE_MAGIC = 0xdb4775248b80fb57ull;

typedef struct bundle_slice {
  int rank;
  int64_t start[GRAPH_MAX_RANK], length[GRAPH_MAX_RANK]; /* length -1: the whole dim */
} bundle_slice;

typedef struct bundle_entry {
  const uint8_t *key; /* may hold NULs (slice keys); a NUL follows it */
  size_t key_len;
  int dtype;
  graph_shape shape;
  int shard;
  int64_t offset, size;
  uint32_t crc;
  int n_slices, cap_slices;
  bundle_slice *slices;
} bundle_entry;

typedef struct bundle_shard {
  bool tried;
  const uint8_t *map;
  size_t len;
  kiln_code err_code; /* when the shard could not be mapped */
  char *err;
} bundle_shard;

struct tf_bundle {
  arena *a;
  char *prefix; /* NULL: shards cannot be read */
  const char *index_name;
  uint8_t *index;
  size_t index_len;
  bundle_entry *entries; /* sorted by key bytes */
  int n_entries, cap_entries;
  const char **names; /* public tensor names, sorted */
  int n_names;
  int num_shards;
  bool have_header;
  bundle_shard *shards;
};

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

static int entry_cmp(const void *x, const void *y) {
  const bundle_entry *a = x, *b = y;
  return key_cmp(a->key, a->key_len, b->key, b->key_len);
}

static const bundle_entry *find_entry(const tf_bundle *b, const void *key, size_t len) {
  int lo = 0, hi = b->n_entries;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    int c = key_cmp(b->entries[mid].key, b->entries[mid].key_len, key, len);
    if (!c) return &b->entries[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

/* A printable form of a key for messages (slice keys hold binary bytes). */
static const char *key_text(tf_bundle *b, const uint8_t *key, size_t len) {
  strbuf s;
  strbuf_init(&s);
  for (size_t i = 0; i < len; i++) {
    if (key[i] >= 0x20 && key[i] < 0x7f) strbuf_putc(&s, (char)key[i]);
    else strbuf_printf(&s, "\\x%02x", key[i]);
  }
  char *t = arena_strdup(b->a, strbuf_cstr(&s));
  strbuf_free(&s);
  return t;
}

/* ---- protobuf messages ---- */

static kiln_status parse_shape(const pb_reader *r, graph_shape *out) {
  pb_reader s = *r;
  pb_field f;
  bool done, unknown = false;
  graph_shape sh = graph_shape_scalar();
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) break;
    if (f.number == 2) { /* dim */
      pb_reader d, dd;
      TRY(pb_sub(&s, &f, &d));
      if (sh.rank >= GRAPH_MAX_RANK) return ERR_INVALID("shape has more than %d dimensions", GRAPH_MAX_RANK);
      int64_t size = 0;
      dd = d;
      for (;;) {
        pb_field g;
        bool end;
        TRY(pb_next(&dd, &g, &end));
        if (end) break;
        if (g.number == 1) {
          TRY(pb_expect_wire(&g, PB_VARINT, "TensorShapeProto.Dim"));
          size = pb_int64(&g);
        }
      }
      if (size < -1) return ERR_INVALID("shape dimension %d is %lld", sh.rank, (long long)size);
      sh.dims[sh.rank++] = size;
    } else if (f.number == 3) {
      TRY(pb_expect_wire(&f, PB_VARINT, "TensorShapeProto"));
      unknown = pb_bool(&f);
    }
  }
  *out = unknown ? graph_shape_unknown() : sh;
  return NULL;
}

/* TensorSliceProto: extent (1) { start (1), length (2), absent: the whole dim }. */
static kiln_status parse_slice(const pb_reader *r, bundle_slice *out) {
  pb_reader s = *r;
  pb_field f;
  bool done;
  memset(out, 0, sizeof *out);
  for (;;) {
    TRY(pb_next(&s, &f, &done));
    if (done) return NULL;
    if (f.number != 1) continue;
    if (out->rank >= GRAPH_MAX_RANK) return ERR_INVALID("slice has more than %d dimensions", GRAPH_MAX_RANK);
    pb_reader e;
    TRY(pb_sub(&s, &f, &e));
    int64_t start = 0, length = -1;
    for (;;) {
      pb_field g;
      bool end;
      TRY(pb_next(&e, &g, &end));
      if (end) break;
      if (g.number == 1 || g.number == 2) {
        TRY(pb_expect_wire(&g, PB_VARINT, "TensorSliceProto.Extent"));
        if (g.number == 1) start = pb_int64(&g);
        else length = pb_int64(&g);
      }
    }
    if (start < 0 || length < -1) return ERR_INVALID("slice extent %d is [%lld, +%lld)", out->rank, (long long)start,
                                                      (long long)length);
    out->start[out->rank] = start;
    out->length[out->rank] = length;
    out->rank++;
  }
}

static kiln_status parse_entry(tf_bundle *b, const uint8_t *data, size_t len, bundle_entry *e) {
  pb_reader r = pb_reader_init(data, len);
  pb_field f;
  bool done;
  e->shape = graph_shape_scalar();
  for (;;) {
    TRY(pb_next(&r, &f, &done));
    if (done) return NULL;
    switch (f.number) {
      case 1:
        TRY(pb_expect_wire(&f, PB_VARINT, "BundleEntryProto"));
        e->dtype = pb_int32(&f);
        break;
      case 2: {
        pb_reader s;
        TRY(pb_sub(&r, &f, &s));
        TRY(parse_shape(&s, &e->shape));
        break;
      }
      case 3:
        TRY(pb_expect_wire(&f, PB_VARINT, "BundleEntryProto"));
        e->shard = pb_int32(&f);
        break;
      case 4:
      case 5:
        TRY(pb_expect_wire(&f, PB_VARINT, "BundleEntryProto"));
        if (pb_int64(&f) < 0) return ERR_INVALID("negative %s", f.number == 4 ? "offset" : "size");
        if (f.number == 4) e->offset = pb_int64(&f);
        else e->size = pb_int64(&f);
        break;
      case 6:
        TRY(pb_expect_wire(&f, PB_I32, "BundleEntryProto"));
        e->crc = (uint32_t)f.bits;
        break;
      case 7: {
        pb_reader s;
        TRY(pb_sub(&r, &f, &s));
        if (e->n_slices >= MAX_SLICES_PER_TENSOR) return ERR_INVALID("more than %d slices", MAX_SLICES_PER_TENSOR);
        tf_grow(b->a, (void **)&e->slices, &e->cap_slices, e->n_slices + 1, sizeof *e->slices);
        TRY(parse_slice(&s, &e->slices[e->n_slices]));
        e->n_slices++;
        break;
      }
      default: break;
    }
  }
}

/* BundleHeaderProto: num_shards (1), endianness (2: 0 little, 1 big), version (3). */
static kiln_status parse_header(tf_bundle *b, const uint8_t *data, size_t len) {
  pb_reader r = pb_reader_init(data, len);
  pb_field f;
  bool done;
  b->num_shards = 0;
  for (;;) {
    TRY(pb_next(&r, &f, &done));
    if (done) break;
    if (f.number == 1) {
      TRY(pb_expect_wire(&f, PB_VARINT, "BundleHeaderProto"));
      int64_t n = pb_int64(&f);
      if (n < 0 || n > 1000000) return ERR_INVALID("header says %lld shards", (long long)n);
      b->num_shards = (int)n;
    } else if (f.number == 2) {
      TRY(pb_expect_wire(&f, PB_VARINT, "BundleHeaderProto"));
      if (f.bits != 0)
        return status_error(KILN_UNIMPLEMENTED, "the checkpoint is big-endian; kiln reads little-endian ones");
    }
  }
  b->have_header = true;
  return NULL;
}

/* ---- the table ---- */

static kiln_status read_handle(const uint8_t **p, const uint8_t *end, uint64_t *off, uint64_t *size) {
  TRY(pb_read_varint(p, end, off));
  return pb_read_varint(p, end, size);
}

/* Checks the block at [off, off+size) and its trailer; returns its contents. */
static kiln_status read_block(const tf_bundle *b, uint64_t off, uint64_t size, const uint8_t **data) {
  if (off > b->index_len || size > b->index_len - off || b->index_len - off - size < BLOCK_TRAILER)
    return ERR_INVALID("block at byte %llu (%llu bytes) lies beyond the end of the file (%zu bytes)",
                       (unsigned long long)off, (unsigned long long)size, b->index_len);
  const uint8_t *p = b->index + off;
  uint8_t type = p[size];
  uint32_t want = le32(p + size + 1);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* the fuzzer could never get past it */
  if (tf_crc32c_mask(tf_crc32c_extend(0, p, (size_t)size + 1)) != want)
    return ERR_INVALID("block at byte %llu has a bad CRC", (unsigned long long)off);
#else
  (void)want;
#endif
  if (type != 0)
    return status_error(KILN_UNIMPLEMENTED, "block at byte %llu is compressed (type %d); kiln reads uncompressed "
                        "tables", (unsigned long long)off, type);
  *data = p;
  return NULL;
}

typedef kiln_status (*entry_fn)(tf_bundle *b, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len);

static kiln_status walk_block(tf_bundle *b, uint64_t off, const uint8_t *data, size_t len, entry_fn fn) {
  if (len < 4) return ERR_INVALID("block at byte %llu is too short", (unsigned long long)off);
  uint32_t n_restarts = le32(data + len - 4);
  if (n_restarts > (len - 4) / 4)
    return ERR_INVALID("block at byte %llu claims %u restart points", (unsigned long long)off, n_restarts);
  const uint8_t *end = data + len - 4 - 4 * (size_t)n_restarts, *p = data;
  uint8_t *key = NULL;
  size_t key_len = 0, key_cap = 0;
  kiln_status s = NULL;
  while (p < end && !s) {
    uint64_t shared, non_shared, val_len;
    if ((s = pb_read_varint(&p, end, &shared)) || (s = pb_read_varint(&p, end, &non_shared)) ||
        (s = pb_read_varint(&p, end, &val_len)))
      break;
    if (shared > key_len || non_shared > (uint64_t)(end - p) || val_len > (uint64_t)(end - p) - non_shared) {
      s = ERR_INVALID("block at byte %llu: malformed entry at byte %llu", (unsigned long long)off,
                      (unsigned long long)(off + (uint64_t)(p - data)));
      break;
    }
    size_t need = (size_t)shared + (size_t)non_shared + 1;
    if (need > key_cap) {
      key_cap = need * 2;
      uint8_t *k = realloc(key, key_cap);
      if (!k) abort();
      key = k;
    }
    memcpy(key + shared, p, (size_t)non_shared);
    key_len = (size_t)(shared + non_shared);
    key[key_len] = 0;
    p += non_shared;
    s = fn(b, key, key_len, p, (size_t)val_len);
    p += val_len;
  }
  free(key);
  return s;
}

static kiln_status add_entry(tf_bundle *b, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len) {
  if (key_len == 0) {
    kiln_status s = parse_header(b, val, val_len);
    return s ? status_wrap(s, "the header entry") : NULL;
  }
  if (b->n_entries == INT32_MAX / 2) return ERR_INVALID("too many entries");
  tf_grow(b->a, (void **)&b->entries, &b->cap_entries, b->n_entries + 1, sizeof *b->entries);
  bundle_entry *e = &b->entries[b->n_entries];
  memset(e, 0, sizeof *e);
  uint8_t *k = arena_alloc(b->a, key_len + 1);
  memcpy(k, key, key_len);
  k[key_len] = 0;
  e->key = k;
  e->key_len = key_len;
  kiln_status s = parse_entry(b, val, val_len, e);
  if (s) return status_wrap(s, "entry '%s'", key_text(b, key, key_len));
  b->n_entries++;
  return NULL;
}

static kiln_status add_data_block(tf_bundle *b, const uint8_t *key, size_t key_len, const uint8_t *val,
                                  size_t val_len) {
  (void)key;
  (void)key_len;
  const uint8_t *p = val;
  uint64_t off, size;
  TRY(read_handle(&p, val + val_len, &off, &size));
  const uint8_t *data;
  TRY(read_block(b, off, size, &data));
  return walk_block(b, off, data, (size_t)size, add_entry);
}

static kiln_status parse_table(tf_bundle *b) {
  if (b->index_len < FOOTER_LEN)
    return ERR_INVALID("%zu bytes is too short for a table (the footer alone is %d)", b->index_len, FOOTER_LEN);
  const uint8_t *footer = b->index + b->index_len - FOOTER_LEN;
  if (le64(footer + 40) != TABLE_MAGIC) return ERR_INVALID("bad magic number: not a TensorBundle index");
  const uint8_t *p = footer, *end = footer + 40;
  uint64_t meta_off, meta_size, index_off, index_size;
  TRY(read_handle(&p, end, &meta_off, &meta_size));
  TRY(read_handle(&p, end, &index_off, &index_size));
  const uint8_t *index;
  TRY(read_block(b, index_off, index_size, &index));
  TRY(walk_block(b, index_off, index, (size_t)index_size, add_data_block));
  if (!b->have_header) return ERR_INVALID("no header entry (BundleHeaderProto under the empty key)");
  if (b->n_entries > 1) qsort(b->entries, (size_t)b->n_entries, sizeof *b->entries, entry_cmp);
  for (int i = 0; i < b->n_entries; i++) {
    const bundle_entry *e = &b->entries[i];
    if (i && !entry_cmp(&b->entries[i - 1], e)) return ERR_INVALID("key '%s' appears twice", key_text(b, e->key, e->key_len));
    if (e->shard < 0 || (e->shard >= b->num_shards && !e->n_slices))
      return ERR_INVALID("tensor '%s' is in shard %d of %d", key_text(b, e->key, e->key_len), e->shard, b->num_shards);
  }
  b->names = arena_calloc(b->a, (size_t)b->n_entries + 1, sizeof *b->names);
  for (int i = 0; i < b->n_entries; i++) {
    const bundle_entry *e = &b->entries[i];
    /* Slice entries start with ordered-code 0 (a NUL); real names hold no NUL. */
    if (!memchr(e->key, 0, e->key_len)) b->names[b->n_names++] = (const char *)e->key;
  }
  b->shards = arena_calloc(b->a, (size_t)b->num_shards + 1, sizeof *b->shards);
  return NULL;
}

kiln_status tf_bundle_open_index(const void *data, size_t len, const char *prefix, tf_bundle **out) {
  *out = NULL;
  tf_bundle *b = calloc(1, sizeof *b);
  if (!b) abort();
  b->a = arena_new();
  b->prefix = prefix ? arena_strdup(b->a, prefix) : NULL;
  b->index_name = prefix ? arena_printf(b->a, "%s.index", prefix) : "<index>";
  b->index = arena_alloc(b->a, len + 1);
  if (len) memcpy(b->index, data, len);
  b->index_len = len;
  kiln_status s = parse_table(b);
  if (s) {
    s = status_wrap(s, "%s", b->index_name);
    tf_bundle_free(b);
    return s;
  }
  *out = b;
  return NULL;
}

kiln_status tf_bundle_open(const char *prefix, tf_bundle **out) {
  *out = NULL;
  char *path = malloc(strlen(prefix) + 8);
  if (!path) abort();
  sprintf(path, "%s.index", prefix);
  char *data;
  size_t len;
  kiln_status s = file_read_all(path, "checkpoint index", 0, &data, &len);
  free(path);
  if (s) return s;
  s = tf_bundle_open_index(data, len, prefix, out);
  free(data);
  return s;
}

void tf_bundle_free(tf_bundle *b) {
  if (!b) return;
  for (int i = 0; b->shards && i < b->num_shards; i++) {
    if (b->shards[i].map) munmap((void *)b->shards[i].map, b->shards[i].len);
    free(b->shards[i].err);
  }
  arena_free(b->a);
  free(b);
}

int tf_bundle_count(const tf_bundle *b) { return b->n_names; }
const char *tf_bundle_key(const tf_bundle *b, int i) { return i >= 0 && i < b->n_names ? b->names[i] : NULL; }
bool tf_bundle_has(const tf_bundle *b, const char *key) { return *key && find_entry(b, key, strlen(key)); }
int tf_bundle_num_shards(const tf_bundle *b) { return b->num_shards; }

/* ---- shards ---- */

static char *shard_path(const tf_bundle *b, int shard) {
  size_t n = strlen(b->prefix) + 40;
  char *p = malloc(n);
  if (!p) abort();
  snprintf(p, n, "%s.data-%05d-of-%05d", b->prefix, shard, b->num_shards);
  return p;
}

static kiln_status map_shard(tf_bundle *b, int shard, const bundle_shard **out) {
  bundle_shard *sh = &b->shards[shard];
  if (!sh->tried) {
    sh->tried = true;
    char *path = shard_path(b, shard);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char msg[512];
    msg[0] = 0;
    if (fd < 0) {
      sh->err_code = errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR;
      snprintf(msg, sizeof msg, "%s: %s (shard %d of the checkpoint)", path,
               errno == ENOENT ? "missing" : strerror(errno), shard);
    } else if (fstat(fd, &st) != 0) {
      sh->err_code = KILN_IO_ERROR;
      snprintf(msg, sizeof msg, "%s: %s", path, strerror(errno));
    } else if (st.st_size > 0) {
      void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        sh->err_code = KILN_IO_ERROR;
        snprintf(msg, sizeof msg, "%s: mmap failed: %s", path, strerror(errno));
      } else {
        sh->map = m;
        sh->len = (size_t)st.st_size;
      }
    }
    if (fd >= 0) close(fd);
    if (msg[0]) {
      sh->err = malloc(strlen(msg) + 1);
      if (!sh->err) abort();
      strcpy(sh->err, msg);
    }
    free(path);
  }
  if (sh->err) return status_error(sh->err_code, "%s", sh->err);
  *out = sh;
  return NULL;
}

/* Reads one unsliced entry; `name` is the tensor's key (for messages). */
static kiln_status read_entry(tf_bundle *b, const bundle_entry *e, const char *name, graph_tensor **out) {
  graph_dtype dt;
  TRY(tf_dtype_to_graph(e->dtype, "the tensor", &dt));
  if (!graph_shape_is_fully_known(&e->shape)) return ERR_INVALID("the tensor's shape is not fully known");
  if (dt == GRAPH_DT_RESOURCE || dt == GRAPH_DT_VARIANT)
    return status_error(KILN_UNIMPLEMENTED, "dtype %s is not supported in a checkpoint", graph_dtype_name(dt));
  if (!b->prefix) return status_error(KILN_NOT_FOUND, "no data files to read (an index without a prefix)");
  const bundle_shard *sh;
  TRY(map_shard(b, e->shard, &sh));
  if ((uint64_t)e->offset > sh->len || (uint64_t)e->size > sh->len - (uint64_t)e->offset) {
    char *path = shard_path(b, e->shard);
    kiln_status s = ERR_INVALID("%s is truncated: the tensor needs bytes [%lld, %lld) but the file has %zu", path,
                                (long long)e->offset, (long long)(e->offset + e->size), sh->len);
    free(path);
    return s;
  }
  const uint8_t *p = sh->map ? sh->map + e->offset : (const uint8_t *)"";
  size_t size = (size_t)e->size;
  graph_tensor *t;
  TRY(tensor_create(dt, e->shape.rank, e->shape.dims, &t));
  kiln_status s = NULL;
  uint32_t crc;
  if (dt == GRAPH_DT_STRING) {
    /* n varint64 lengths, a masked CRC32C of them, then the bytes. The entry's CRC
     * covers each length as a little-endian uint32 (uint64 when it does not fit),
     * then the 4 checksum bytes, then the string bytes. */
    const uint8_t *q = p, *end = p + size;
    uint64_t *lens = malloc(((size_t)t->n + 1) * sizeof *lens);
    if (!lens) abort();
    crc = 0;
    for (int64_t i = 0; i < t->n && !s; i++) {
      s = pb_read_varint(&q, end, &lens[i]);
      uint8_t le[8];
      for (int k = 0; k < 8; k++) le[k] = (uint8_t)(lens[i] >> (8 * k));
      if (!s) crc = tf_crc32c_extend(crc, le, lens[i] <= UINT32_MAX ? 4 : 8);
    }
    if (!s && end - q < 4) s = ERR_INVALID("string tensor is cut short");
    if (!s) {
      crc = tf_crc32c_extend(crc, q, 4);
      q += 4;
      crc = tf_crc32c_extend(crc, q, (size_t)(end - q));
    }
    for (int64_t i = 0; i < t->n && !s; i++) {
      if (lens[i] > (uint64_t)(end - q)) {
        s = ERR_INVALID("string %lld runs past the tensor's bytes", (long long)i);
        break;
      }
      tensor_set_string(t, i, (const char *)q, (size_t)lens[i]);
      q += lens[i];
    }
    free(lens);
  } else {
    crc = tf_crc32c_extend(0, p, size);
    if (tensor_byte_size(t) != size)
      s = ERR_INVALID("%s[%lld elements] needs %zu bytes, the entry has %zu", graph_dtype_name(dt), (long long)t->n,
                      tensor_byte_size(t), size);
  }
  if (!s && tf_crc32c_mask(crc) != e->crc) {
    char *path = shard_path(b, e->shard);
    s = ERR_INVALID("%s: bad CRC for the tensor's %zu bytes at offset %lld (the data is corrupt)", path, size,
                    (long long)e->offset);
    free(path);
  }
  if (s) {
    tensor_free(t);
    return s;
  }
  if (dt != GRAPH_DT_STRING && size) memcpy(t->data, p, size);
  (void)name;
  *out = t;
  return NULL;
}

/* ---- slices ---- */

static void put_num_increasing(strbuf *s, uint64_t v) {
  uint8_t buf[9];
  int n = 0;
  while (v) {
    buf[8 - n++] = (uint8_t)(v & 0xff);
    v >>= 8;
  }
  strbuf_putc(s, (char)n);
  strbuf_appendn(s, (const char *)buf + 9 - n, (size_t)n);
}

static void put_string(strbuf *s, const char *str) {
  for (; *str; str++) {
    uint8_t c = (uint8_t)*str;
    strbuf_putc(s, (char)c);
    if (c == 0xff) strbuf_putc(s, 0); /* 0xff is escaped as ff 00; NUL cannot occur */
  }
  strbuf_putc(s, 0);
  strbuf_putc(s, 1);
}

/* Ordered code's signed numbers: a run of header bits giving the length in bytes, then
 * the value's big-endian bits, all XORed with the sign. */
static void put_signed_increasing(strbuf *s, int64_t v) {
  static const uint8_t header[11][2] = {{0, 0},    {0x80, 0}, {0xc0, 0}, {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
                                        {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  uint64_t x = v < 0 ? ~(uint64_t)v : (uint64_t)v;
  if (x < 64) {
    strbuf_putc(s, (char)(header[1][0] ^ (uint8_t)v));
    return;
  }
  int bits = 64;
  while (!(x >> (bits - 1))) bits--;
  int len = (bits + 1 + 6) / 7; /* bits of magnitude plus a sign bit, 7 per byte */
  uint8_t buf[10];
  buf[0] = buf[1] = v < 0 ? 0xff : 0;
  for (int i = 0; i < 8; i++) buf[2 + i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
  uint8_t *begin = buf + 10 - len;
  begin[0] ^= header[len][0];
  begin[1] ^= header[len][1];
  strbuf_appendn(s, (const char *)begin, (size_t)len);
}

static void slice_key(strbuf *s, const char *name, const bundle_slice *sl) {
  put_num_increasing(s, 0);
  put_string(s, name);
  put_num_increasing(s, (uint64_t)sl->rank);
  for (int d = 0; d < sl->rank; d++) {
    put_signed_increasing(s, sl->start[d]);
    put_signed_increasing(s, sl->length[d]);
  }
}

/* Copies piece (the slice's values, row-major) into full at the slice's place. */
static void place_slice(graph_tensor *full, const graph_tensor *piece, const int64_t *start) {
  size_t es = graph_dtype_size(full->dtype);
  int rank = full->rank;
  if (piece->n == 0) return;
  if (rank == 0) {
    memcpy(full->data, piece->data, es);
    return;
  }
  int64_t idx[GRAPH_MAX_RANK] = {0};
  int64_t run = piece->dims[rank - 1];
  const uint8_t *src = piece->data;
  for (int64_t done = 0; done < piece->n; done += run) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off = off * full->dims[d] + start[d] + (d == rank - 1 ? 0 : idx[d]);
    memcpy((uint8_t *)full->data + (size_t)off * es, src, (size_t)run * es);
    src += (size_t)run * es;
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < piece->dims[d]) break;
      idx[d] = 0;
    }
  }
}

static kiln_status read_sliced(tf_bundle *b, const bundle_entry *e, const char *name, graph_tensor **out) {
  graph_dtype dt;
  TRY(tf_dtype_to_graph(e->dtype, "the tensor", &dt));
  if (!graph_shape_is_fully_known(&e->shape)) return ERR_INVALID("the tensor's shape is not fully known");
  if (dt == GRAPH_DT_STRING || dt == GRAPH_DT_RESOURCE || dt == GRAPH_DT_VARIANT)
    return status_error(KILN_UNIMPLEMENTED, "a sliced %s tensor is not supported", graph_dtype_name(dt));
  graph_tensor *full;
  TRY(tensor_create(dt, e->shape.rank, e->shape.dims, &full));
  kiln_status s = NULL;
  for (int i = 0; i < e->n_slices && !s; i++) {
    const bundle_slice *sl = &e->slices[i];
    if (sl->rank != e->shape.rank) {
      s = ERR_INVALID("slice %d has rank %d, the tensor %d", i, sl->rank, e->shape.rank);
      break;
    }
    int64_t start[GRAPH_MAX_RANK], dims[GRAPH_MAX_RANK];
    for (int d = 0; d < sl->rank && !s; d++) {
      start[d] = sl->start[d];
      dims[d] = sl->length[d] < 0 ? e->shape.dims[d] - start[d] : sl->length[d];
      if (start[d] > e->shape.dims[d] || dims[d] < 0 || dims[d] > e->shape.dims[d] - start[d])
        s = ERR_INVALID("slice %d lies outside the tensor in dimension %d", i, d);
    }
    if (s) break;
    strbuf k;
    strbuf_init(&k);
    slice_key(&k, name, sl);
    const bundle_entry *pe = find_entry(b, strbuf_cstr(&k), k.len);
    strbuf_free(&k);
    if (!pe) {
      s = status_error(KILN_NOT_FOUND, "slice %d has no entry in the index", i);
      break;
    }
    if (pe->n_slices || pe->dtype != e->dtype || pe->shape.rank != sl->rank) {
      s = ERR_INVALID("slice %d's entry does not match the tensor's dtype and rank", i);
      break;
    }
    for (int d = 0; d < sl->rank && !s; d++) /* the first mismatch only: a second error would leak the first */
      if (pe->shape.dims[d] != dims[d]) s = ERR_INVALID("slice %d's entry has the wrong shape in dimension %d", i, d);
    if (s) break;
    graph_tensor *piece;
    s = read_entry(b, pe, name, &piece);
    if (s) s = status_wrap(s, "slice %d", i);
    else {
      place_slice(full, piece, start);
      tensor_free(piece);
    }
  }
  if (s) {
    tensor_free(full);
    return s;
  }
  *out = full;
  return NULL;
}

kiln_status tf_bundle_read(tf_bundle *b, const char *key, graph_tensor **out) {
  *out = NULL;
  const bundle_entry *e = *key ? find_entry(b, key, strlen(key)) : NULL;
  if (!e) return status_error(KILN_NOT_FOUND, "%s: the checkpoint has no tensor '%s'", b->index_name, key);
  kiln_status s = e->n_slices ? read_sliced(b, e, key, out) : read_entry(b, e, key, out);
  return s ? status_wrap(s, "checkpoint tensor '%s'", key) : NULL;
}
