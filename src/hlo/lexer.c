/* Scanning primitives for HLO text: whitespace and comments, identifiers, integers,
 * quoted strings, and the located error messages every parse failure is reported with.
 * Kept apart from the grammar so the parser reads as grammar. */
#include "hlo/lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hlo_lex_init(hlo_lexer *lx, const char *src, size_t len, const char *filename) {
  lx->src = src;
  lx->len = len;
  lx->pos = 0;
  lx->filename = filename ? filename : "<input>";
}

void hlo_lex_skip_ws(hlo_lexer *lx) {
  while (lx->pos < lx->len) {
    char c = lx->src[lx->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      lx->pos++;
    } else if (c == '/' && lx->pos + 1 < lx->len && lx->src[lx->pos + 1] == '/') {
      while (lx->pos < lx->len && lx->src[lx->pos] != '\n') lx->pos++;
    } else if (c == '/' && lx->pos + 1 < lx->len && lx->src[lx->pos + 1] == '*') {
      size_t p = lx->pos + 2;
      while (p + 1 < lx->len && !(lx->src[p] == '*' && lx->src[p + 1] == '/')) p++;
      if (p + 1 >= lx->len) return; /* unterminated: leave it for the next expectation */
      lx->pos = p + 2;
    } else {
      return;
    }
  }
}

int hlo_lex_peek_raw(const hlo_lexer *lx) {
  return lx->pos < lx->len ? (unsigned char)lx->src[lx->pos] : -1;
}

int hlo_lex_peek(hlo_lexer *lx) {
  hlo_lex_skip_ws(lx);
  return hlo_lex_peek_raw(lx);
}

bool hlo_lex_accept(hlo_lexer *lx, char c) {
  if (hlo_lex_peek(lx) != (unsigned char)c) return false;
  lx->pos++;
  return true;
}

bool hlo_lex_accept_str(hlo_lexer *lx, const char *s) {
  hlo_lex_skip_ws(lx);
  size_t n = strlen(s);
  if (lx->len - lx->pos < n || memcmp(lx->src + lx->pos, s, n) != 0) return false;
  lx->pos += n;
  return true;
}

bool hlo_lex_accept_word(hlo_lexer *lx, const char *word) {
  hlo_lex_skip_ws(lx);
  size_t n = strlen(word);
  if (lx->len - lx->pos < n || memcmp(lx->src + lx->pos, word, n) != 0) return false;
  if (lx->pos + n < lx->len && hlo_lex_is_ident_char((unsigned char)lx->src[lx->pos + n])) return false;
  lx->pos += n;
  return true;
}

kiln_status hlo_lex_expect(hlo_lexer *lx, char c) {
  if (hlo_lex_accept(lx, c)) return NULL;
  char what[8];
  snprintf(what, sizeof what, "'%c'", c);
  return hlo_lex_expected(lx, what);
}

bool hlo_lex_is_ident_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool hlo_lex_is_ident_char(int c) {
  return hlo_lex_is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

bool hlo_lex_ident(hlo_lexer *lx, bool allow_percent, const char **start, size_t *len) {
  hlo_lex_skip_ws(lx);
  size_t p = lx->pos;
  if (allow_percent && p < lx->len && lx->src[p] == '%') p++;
  if (p >= lx->len || !hlo_lex_is_ident_start((unsigned char)lx->src[p])) return false;
  size_t s = p;
  while (p < lx->len && hlo_lex_is_ident_char((unsigned char)lx->src[p])) {
    /* "->" never belongs to a name: it separates a signature from its result. */
    if (lx->src[p] == '-' && p + 1 < lx->len && lx->src[p + 1] == '>') break;
    p++;
  }
  *start = lx->src + s;
  *len = p - s;
  lx->pos = p;
  return true;
}

kiln_status hlo_lex_int64_here(hlo_lexer *lx, const char *what, int64_t *out) {
  size_t p = lx->pos, start = lx->pos;
  bool neg = false;
  if (p < lx->len && (lx->src[p] == '-' || lx->src[p] == '+')) {
    neg = lx->src[p] == '-';
    p++;
  }
  if (p >= lx->len || lx->src[p] < '0' || lx->src[p] > '9') {
    lx->pos = start;
    return hlo_lex_expected(lx, what);
  }
  uint64_t v = 0;
  bool overflow = false;
  while (p < lx->len && lx->src[p] >= '0' && lx->src[p] <= '9') {
    unsigned d = (unsigned)(lx->src[p] - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    else v = v * 10 + d;
    p++;
  }
  if (overflow || (!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1))
    return hlo_lex_error_at(lx, start, "integer %.*s is out of range for a 64-bit signed integer", (int)(p - start),
                            lx->src + start);
  lx->pos = p;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return NULL;
}

kiln_status hlo_lex_int64(hlo_lexer *lx, const char *what, int64_t *out) {
  hlo_lex_skip_ws(lx);
  return hlo_lex_int64_here(lx, what, out);
}

static int hex_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

kiln_status hlo_lex_string(hlo_lexer *lx, char **out, const char **raw_start, size_t *raw_len) {
  if (out) *out = NULL;
  if (hlo_lex_peek(lx) != '"') return hlo_lex_expected(lx, "a quoted string");
  size_t start = lx->pos, p = lx->pos + 1;
  char *buf = NULL;
  size_t n = 0;
  if (out) {
    /* Decoded text is never longer than the raw text. */
    size_t end = p;
    while (end < lx->len && lx->src[end] != '"') end += (lx->src[end] == '\\') ? 2 : 1;
    buf = malloc((end > lx->len ? lx->len : end) - start + 1);
    if (!buf) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory reading a string");
  }
  while (p < lx->len && lx->src[p] != '"') {
    char c = lx->src[p++];
    if (c == '\\') {
      if (p >= lx->len) break;
      char e = lx->src[p++];
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'a': c = '\a'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'v': c = '\v'; break;
        case 'x': {
          int v = 0, k = 0;
          while (k < 2 && p < lx->len && hex_value((unsigned char)lx->src[p]) >= 0) {
            v = v * 16 + hex_value((unsigned char)lx->src[p++]);
            k++;
          }
          c = (char)v;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', k = 1;
            while (k < 3 && p < lx->len && lx->src[p] >= '0' && lx->src[p] <= '7') {
              v = v * 8 + (lx->src[p++] - '0');
              k++;
            }
            c = (char)v;
          } else {
            c = e; /* \" \' \\ \? and anything else stand for themselves */
          }
      }
    }
    if (buf) buf[n++] = c;
  }
  if (p >= lx->len) {
    free(buf);
    return hlo_lex_error_at(lx, start, "unterminated string (expected a closing '\"')");
  }
  p++; /* closing quote */
  if (buf) {
    buf[n] = 0;
    *out = buf;
  }
  if (raw_start) *raw_start = lx->src + start;
  if (raw_len) *raw_len = p - start;
  lx->pos = p;
  return NULL;
}

void hlo_lex_line_col(const hlo_lexer *lx, size_t pos, int *line, int *col) {
  int l = 1;
  size_t line_start = 0;
  if (pos > lx->len) pos = lx->len;
  for (size_t i = 0; i < pos; i++) {
    if (lx->src[i] == '\n') {
      l++;
      line_start = i + 1;
    }
  }
  *line = l;
  *col = (int)(pos - line_start) + 1;
}

kiln_status hlo_lex_error_at(const hlo_lexer *lx, size_t pos, const char *fmt, ...) {
  int line, col;
  hlo_lex_line_col(lx, pos, &line, &col);
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = status_verror(KILN_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return status_wrap(s, "%s:%d:%d", lx->filename, line, col);
}

void hlo_lex_describe_token(const hlo_lexer *lx, size_t pos, char *buf, size_t cap) {
  if (pos >= lx->len) {
    snprintf(buf, cap, "end of input");
    return;
  }
  size_t end = pos + 1;
  unsigned char c = (unsigned char)lx->src[pos];
  if (hlo_lex_is_ident_start(c) || c == '%') {
    while (end < lx->len && hlo_lex_is_ident_char((unsigned char)lx->src[end])) end++;
  } else if ((c >= '0' && c <= '9') || c == '-') {
    while (end < lx->len &&
           (hlo_lex_is_ident_char((unsigned char)lx->src[end]) || lx->src[end] == '+'))
      end++;
  } else if (c == '/' && pos + 1 < lx->len && lx->src[pos + 1] == '*') {
    end = pos + 2;
  }
  if (end - pos > 24) end = pos + 24;
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "'");
  for (size_t i = pos; i < end && o + 6 < cap; i++) {
    unsigned char ch = (unsigned char)lx->src[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\'')
      buf[o++] = (char)ch;
    else
      o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
  }
  if (o + 2 < cap) {
    buf[o++] = '\'';
    buf[o] = 0;
  }
  if (c == '/' && end == pos + 2) snprintf(buf + o, cap - o, " (unterminated comment)");
}

kiln_status hlo_lex_expected(hlo_lexer *lx, const char *what) {
  hlo_lex_skip_ws(lx);
  char tok[96];
  hlo_lex_describe_token(lx, lx->pos, tok, sizeof tok);
  return hlo_lex_error_at(lx, lx->pos, "expected %s, got %s", what, tok);
}
