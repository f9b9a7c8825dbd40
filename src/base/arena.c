/* Bump allocator over a list of chunks. Large requests get a chunk of their own so a
 * single big constant does not waste the tail of a shared chunk. */
#include "base/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
  arena_chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
};

enum { ARENA_CHUNK = 64 * 1024 };

static void *checked_malloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "kiln: out of memory allocating %zu bytes\n", n);
    abort();
  }
  return p;
}

arena *arena_new(void) {
  arena *a = checked_malloc(sizeof *a);
  a->head = NULL;
  a->used_bytes = 0;
  return a;
}

void arena_free(arena *a) {
  if (!a) return;
  arena_chunk *c = a->head;
  while (c) {
    arena_chunk *n = c->next;
    free(c);
    c = n;
  }
  free(a);
}

void *arena_alloc(arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  arena_chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t cap = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
    arena_chunk *n = checked_malloc(sizeof *n + cap);
    n->size = cap;
    n->used = 0;
    if (cap != ARENA_CHUNK && c) {
      /* Dedicated big chunk: link it behind the head so the head keeps serving. */
      n->next = c->next;
      c->next = n;
    } else {
      n->next = c;
      a->head = n;
    }
    c = n;
  }
  void *p = c->data + c->used;
  c->used += size;
  a->used_bytes += size;
  memset(p, 0, size);
  return p;
}

void *arena_calloc(arena *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    fprintf(stderr, "kiln: arena request overflows (%zu x %zu)\n", count, size);
    abort();
  }
  return arena_alloc(a, count * size);
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

void *arena_memdup(arena *a, const void *p, size_t size) {
  void *q = arena_alloc(a, size);
  if (size) memcpy(q, p, size);
  return q;
}

char *arena_printf(arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
