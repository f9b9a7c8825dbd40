/* Growable string buffer used by printers, dumps and error messages. Owns its heap
 * storage; strbuf_take hands the string to the caller. */
#ifndef KILN_BASE_STRBUF_H
#define KILN_BASE_STRBUF_H

#include <stddef.h>

typedef struct strbuf {
  char *data;
  size_t len, cap;
} strbuf;

void strbuf_init(strbuf *b);
void strbuf_free(strbuf *b);
void strbuf_append(strbuf *b, const char *s);
void strbuf_appendn(strbuf *b, const char *s, size_t n);
void strbuf_putc(strbuf *b, char c);
void strbuf_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Returns the malloc'ed, NUL-terminated contents and resets the buffer. */
char *strbuf_take(strbuf *b);
/* Always NUL-terminated (never NULL). */
const char *strbuf_cstr(strbuf *b);

#endif
