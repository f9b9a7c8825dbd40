/* Byte-string keyed hash tables and key builders for the executor's compile caches.
 *
 * Both caches (op_runner.c's single-op modules, cluster_runner.c's cluster signatures)
 * key on a byte string that spells everything a compiled module depends on: dtypes,
 * dims, the values of must-be-constant inputs. The keys are built with the put helpers
 * below and looked up in an open-addressing table (FNV-1a, linear probing, grown at
 * 3/4 load), so the two caches agree on how a tensor is spelled. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

static uint64_t fnv1a(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* The slot holding key, or the empty slot where it would go (cap > 0). */
static exec_key_slot *slot_for(const exec_key_table *t, const char *key, size_t len, uint64_t h) {
  for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    exec_key_slot *s = &t->slots[i];
    if (!s->key) return s;
    if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
  }
}

void *exec_key_table_get(const exec_key_table *t, const char *key, size_t len) {
  if (!t->cap) return NULL;
  exec_key_slot *s = slot_for(t, key, len, fnv1a(key, len));
  return s->key ? s->value : NULL;
}

void exec_key_table_put(exec_key_table *t, char *key, size_t len, void *value) {
  if ((t->n + 1) * 4 > t->cap * 3) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    exec_key_slot *old = t->slots;
    size_t old_cap = t->cap;
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) abort();
    t->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].key) *slot_for(t, old[i].key, old[i].len, old[i].hash) = old[i];
    free(old);
  }
  uint64_t h = fnv1a(key, len);
  *slot_for(t, key, len, h) = (exec_key_slot){h, key, len, value};
  t->n++;
}

void exec_key_table_free(exec_key_table *t, void (*free_value)(void *)) {
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i].key) continue;
    if (free_value) free_value(t->slots[i].value);
    free(t->slots[i].key);
  }
  free(t->slots);
  memset(t, 0, sizeof *t);
}

void exec_key_bytes(strbuf *b, const void *p, size_t n) { strbuf_appendn(b, (const char *)p, n); }

void exec_key_i64(strbuf *b, int64_t v) { exec_key_bytes(b, &v, sizeof v); }

void exec_key_str(strbuf *b, const char *s, size_t n) {
  exec_key_i64(b, (int64_t)n);
  exec_key_bytes(b, s, n);
}

void exec_key_type(strbuf *b, graph_dtype dtype, int rank, const int64_t *dims) {
  exec_key_i64(b, dtype);
  exec_key_i64(b, rank);
  if (rank > 0) exec_key_bytes(b, dims, (size_t)rank * sizeof dims[0]);
}

void exec_key_tensor(strbuf *b, const graph_tensor *t) {
  exec_key_type(b, t->dtype, t->rank, t->dims);
  if (t->dtype == GRAPH_DT_STRING) {
    for (int64_t i = 0; i < t->n; i++) {
      const graph_bytes *s = tensor_string(t, i);
      exec_key_str(b, s->data, s->len);
    }
  } else {
    exec_key_bytes(b, t->data, tensor_byte_size(t));
  }
}
