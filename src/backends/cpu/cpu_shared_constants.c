/* The content-addressed store of read-only constant buffers (cpu_shared_constants.h).
 * A short list scanned under one mutex: a process holds tens to a few hundred packed
 * weights, and a lookup happens once per primitive at compile time, never per run. */
#include "backends/cpu/cpu_shared_constants.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  void *buf;
  size_t bytes;
  uint64_t hash;
  int refs;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;
static int n_entries, cap_entries;

/* FNV-1a over 64-bit words (and the tail bytes): a few GB/s, run once per weight. */
static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h ^ n;
}

void *cpu_shared_constant_adopt(void *buf, size_t bytes) {
  if (!buf) return NULL;
  uint64_t h = hash_bytes(buf, bytes);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_entries; i++) {
    entry *e = &entries[i];
    if (e->hash == h && e->bytes == bytes && memcmp(e->buf, buf, bytes) == 0) {
      e->refs++;
      pthread_mutex_unlock(&lock);
      free(buf);
      return e->buf;
    }
  }
  if (n_entries == cap_entries) {
    int cap = cap_entries ? 2 * cap_entries : 64;
    entry *grown = realloc(entries, (size_t)cap * sizeof *grown);
    if (!grown) abort();
    entries = grown;
    cap_entries = cap;
  }
  entries[n_entries++] = (entry){.buf = buf, .bytes = bytes, .hash = h, .refs = 1};
  pthread_mutex_unlock(&lock);
  return buf;
}

void cpu_shared_constant_release(void *buf) {
  if (!buf) return;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_entries; i++) {
    if (entries[i].buf != buf) continue;
    if (--entries[i].refs == 0) {
      free(buf);
      entries[i] = entries[--n_entries];
    }
    break;
  }
  pthread_mutex_unlock(&lock);
}

void cpu_shared_constant_stats(int *buffers, size_t *bytes) {
  pthread_mutex_lock(&lock);
  size_t total = 0;
  for (int i = 0; i < n_entries; i++) total += entries[i].bytes;
  *buffers = n_entries;
  *bytes = total;
  pthread_mutex_unlock(&lock);
}
