/* Growable string buffer: doubling growth, always NUL-terminated once non-empty. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(strbuf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
}

void strbuf_free(strbuf *b) {
  free(b->data);
  strbuf_init(b);
}

static void reserve(strbuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    fprintf(stderr, "kiln: out of memory growing a string to %zu bytes\n", cap);
    abort();
  }
  b->data = d;
  b->cap = cap;
}

void strbuf_appendn(strbuf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void strbuf_append(strbuf *b, const char *s) { strbuf_appendn(b, s, strlen(s)); }

void strbuf_putc(strbuf *b, char c) { strbuf_appendn(b, &c, 1); }

void strbuf_printf(strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *strbuf_take(strbuf *b) {
  char *s = b->data;
  if (!s) {
    s = malloc(1);
    if (!s) abort();
    s[0] = 0;
  }
  strbuf_init(b);
  return s;
}

const char *strbuf_cstr(strbuf *b) { return b->data ? b->data : ""; }
