/* The cpu executable cache (see cpu_cache.h). */
#include "backends/cpu/cpu_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_compiler.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "hlo/printer.h"

/* Idle cached executables kept beyond this many are evicted (oldest first). */
#define CPU_CACHE_MAX_ENTRIES 256

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_executable *cache_head;
static int cache_size;

/* Two independent 64-bit hashes of a byte range, together a 128-bit digest. The bytes
 * are read eight at a time into four independent multiply-xorshift lanes (two per
 * hash, over alternate words), folded at the end: the digest covers every constant of
 * the module, ~100 MB for resnet50, and a byte-at-a-time FNV loop (one dependent
 * multiply per byte per hash) spent ~0.2 s of its compile there. */
static uint64_t mix_word(uint64_t h, uint64_t w, uint64_t k, int shift) {
  h = (h ^ w) * k;
  return h ^ (h >> shift);
}

static void digest_bytes(const unsigned char *p, size_t n, uint64_t *h1, uint64_t *h2) {
  const uint64_t k1 = 0x9e3779b97f4a7c15ull, k2 = 0xc2b2ae3d27d4eb4full;
  uint64_t a0 = *h1, a1 = *h1 ^ 0x243f6a8885a308d3ull, b0 = *h2, b1 = *h2 ^ 0x13198a2e03707344ull;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t w0, w1;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + i + 8, 8);
    a0 = mix_word(a0, w0, k1, 29);
    a1 = mix_word(a1, w1, k1, 29);
    b0 = mix_word(b0, (w0 << 31) | (w0 >> 33), k2, 32);
    b1 = mix_word(b1, (w1 << 31) | (w1 >> 33), k2, 32);
  }
  uint64_t tail = 0; /* the last 0..15 bytes, with the length so that trailing zeros count */
  for (; i < n; i++) tail = (tail ^ p[i]) * 1099511628211ull;
  tail ^= (uint64_t)n;
  a0 = mix_word(mix_word(a0, a1, k1, 29), tail, k1, 29);
  b0 = mix_word(mix_word(b0, b1, k2, 32), tail, k2, 32);
  *h1 = a0;
  *h2 = b0;
}

void cpu_cache_digest(const void *p, size_t n, uint64_t *h1, uint64_t *h2) { digest_bytes(p, n, h1, h2); }

/* The cache key: the module text with large constants elided, then the byte length
 * and digest of every constant's data in print order, then the options that change the
 * executable (dump options do not: a cache hit simply writes no dumps). */
static char *fingerprint_module(const hlo_module *m, const backend_compile_options *opts, uint64_t *hash) {
  hlo_print_options po = hlo_print_options_default();
  po.print_metadata = false;
  po.print_large_constants = false;
  char *text = hlo_module_to_string(m, &po);
  strbuf b;
  strbuf_init(&b);
  strbuf_append(&b, text);
  free(text);
  for (int c = 0; c < m->n_comps; c++) {
    const hlo_computation *comp = m->comps[c];
    for (int i = 0; i < comp->n_instrs; i++) {
      const hlo_literal *l = comp->instrs[i]->literal;
      if (!l || !l->data) continue;
      int64_t bytes = shape_byte_size(&l->shape);
      uint64_t h1 = 1469598103934665603ull, h2 = 0x84222325cbf29ce4ull;
      digest_bytes(l->data, (size_t)bytes, &h1, &h2);
      strbuf_printf(&b, "\n#%lld:%016llx%016llx", (long long)bytes, (unsigned long long)h1, (unsigned long long)h2);
    }
  }
  if (opts->disabled_passes && *opts->disabled_passes) strbuf_printf(&b, "\n#disabled:%s", opts->disabled_passes);
  if (opts->profile) strbuf_append(&b, "\n#profile");
  if (opts->allow_excess_precision) strbuf_append(&b, "\n#excess-precision");
  char *key = strbuf_take(&b);
  uint64_t h1 = 1469598103934665603ull, h2 = 0;
  digest_bytes((const unsigned char *)key, strlen(key), &h1, &h2);
  *hash = h1;
  return key;
}

/* Drops idle entries beyond the cap, least recently used first. Called locked. */
static void cache_trim(void) {
  while (cache_size > CPU_CACHE_MAX_ENTRIES) {
    cpu_executable **victim = NULL;
    for (cpu_executable **p = &cache_head; *p; p = &(*p)->next)
      if ((*p)->refs == 0) victim = p;
    if (!victim) return;
    cpu_executable *x = *victim;
    *victim = x->next;
    cache_size--;
    cpu_executable_free(x);
  }
}

/* At exit: the cached executables first, then the JIT that holds their code. */
__attribute__((destructor)) static void cache_free_all(void) {
  while (cache_head) {
    cpu_executable *x = cache_head;
    cache_head = x->next;
    cpu_executable_free(x);
  }
  cache_size = 0;
  cpu_jit_shutdown();
}

kiln_status cpu_cache_get(const hlo_module *m, const backend_compile_options *opts, cpu_executable **out) {
  *out = NULL;
  uint64_t hash;
  char *text = fingerprint_module(m, opts, &hash);

  pthread_mutex_lock(&cache_lock);
  for (cpu_executable **p = &cache_head; *p; p = &(*p)->next) {
    cpu_executable *x = *p;
    if (x->hash == hash && strcmp(x->fingerprint, text) == 0) {
      *p = x->next; /* move to the front */
      x->next = cache_head;
      cache_head = x;
      x->refs++;
      pthread_mutex_unlock(&cache_lock);
      free(text);
      if (x->evaluated) log_warning("%s", x->evaluated);
      *out = x;
      return NULL;
    }
  }
  pthread_mutex_unlock(&cache_lock);

  /* Compiled unlocked: two threads may compile the same module; the second insert
   * then simply adds a twin, which is harmless. */
  cpu_executable *x = NULL;
  kiln_status st = cpu_compile_executable(m, opts, text, &x);
  if (st) {
    free(text);
    return st;
  }
  x->fingerprint = text;
  x->hash = hash;
  if (x->evaluated) log_warning("%s", x->evaluated);
  pthread_mutex_lock(&cache_lock);
  x->refs = 1;
  x->next = cache_head;
  cache_head = x;
  cache_size++;
  cache_trim();
  pthread_mutex_unlock(&cache_lock);
  *out = x;
  return NULL;
}

void cpu_cache_release(cpu_executable *x) {
  if (!x) return;
  pthread_mutex_lock(&cache_lock);
  x->refs--;
  if (x->refs == 0 && x->profile) cpu_executable_print_profile(x);
  cache_trim();
  pthread_mutex_unlock(&cache_lock);
}

void cpu_backend_cache_drop_idle(void) {
  pthread_mutex_lock(&cache_lock);
  for (cpu_executable **p = &cache_head; *p;) {
    cpu_executable *x = *p;
    if (x->refs != 0) {
      p = &x->next;
      continue;
    }
    *p = x->next;
    cache_size--;
    cpu_executable_free(x);
  }
  pthread_mutex_unlock(&cache_lock);
}

int cpu_backend_cache_size(void) {
  pthread_mutex_lock(&cache_lock);
  int n = cache_size;
  pthread_mutex_unlock(&cache_lock);
  return n;
}
