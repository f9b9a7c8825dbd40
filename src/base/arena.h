/* Arena allocation for IR objects.
 *
 * Modules and graphs own every object they contain through one arena and are freed
 * whole, so IR code never tracks individual frees and a failed parse leaks nothing.
 * Allocation aborts only on genuine out-of-memory (an internal invariant); sizes that a
 * user file controls must be checked by the caller before they reach the arena. */
#ifndef KILN_BASE_ARENA_H
#define KILN_BASE_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct arena_chunk arena_chunk;
typedef struct arena {
  arena_chunk *head;
  size_t used_bytes; /* total handed out; for diagnostics */
} arena;

arena *arena_new(void);
void arena_free(arena *a);
/* Zero-initialised, 16-byte aligned. */
void *arena_alloc(arena *a, size_t size);
void *arena_calloc(arena *a, size_t count, size_t size);
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
void *arena_memdup(arena *a, const void *p, size_t size);
char *arena_printf(arena *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
