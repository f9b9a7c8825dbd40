/* JSON parser, DOM accessors, builders and writer (see json.h for the contract).
 *
 * The parser is recursive descent bounded by JSON_MAX_DEPTH. Children of open
 * containers collect on two shared scratch stacks (values for arrays, members for
 * objects) and are copied into an exact-size arena array when their container closes,
 * so building a document is linear in its size however long its arrays are and the
 * arena holds no abandoned growth copies. Line and column are computed only when an
 * error is reported, keeping the hot loop free of bookkeeping. */
#include "base/json.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Small shared helpers                                                                  */

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "kiln: out of memory (%zu bytes) while reading JSON\n", n);
    abort();
  }
  return q;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_word_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

/* Length of the well-formed UTF-8 sequence at s (at most avail bytes), or 0 when the
 * bytes there are not one: overlong forms, UTF-16 surrogates and code points beyond
 * U+10FFFF are all refused, as RFC 3629 requires. */
static size_t utf8_sequence_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (avail < n) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < n; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return n;
}

static size_t utf8_encode(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

static void write_string(strbuf *b, const char *s, size_t len);

/* A string as a JSON literal for a message, cut short if long. */
static void quote_preview(strbuf *out, const char *s, size_t len) {
  enum { PREVIEW_BYTES = 40 };
  write_string(out, s, len > PREVIEW_BYTES ? PREVIEW_BYTES : len);
  if (len > PREVIEW_BYTES) strbuf_append(out, "...");
}

/* strtod and %g follow the C locale's decimal point; an embedding program may have
 * called setlocale, so JSON's '.' is translated both ways. */
static char locale_decimal_point(void) {
  const struct lconv *lc = localeconv();
  return (lc && lc->decimal_point && lc->decimal_point[0] && !lc->decimal_point[1]) ? lc->decimal_point[0]
                                                                                     : '.';
}

/* Converts a literal already checked against the JSON number grammar. */
static double number_text_to_double(const char *text, size_t len) {
  char small[64];
  char *buf = len < sizeof small ? small : xrealloc(NULL, len + 1);
  memcpy(buf, text, len);
  buf[len] = 0;
  char dp = locale_decimal_point();
  if (dp != '.') {
    char *dot = memchr(buf, '.', len);
    if (dot) *dot = dp;
  }
  double d = strtod(buf, NULL);
  if (buf != small) free(buf);
  return d;
}

/* Scans the JSON number grammar at s[0..len); returns the literal's length (0 if none)
 * and whether it is integral (no fraction or exponent). On a malformed literal, *bad is
 * the offset of the offending byte and *why says what was expected there (for
 * "expected %s, got ..."). */
static size_t scan_number(const unsigned char *s, size_t len, bool *integral, size_t *bad, const char **why) {
  size_t i = 0;
  *integral = true;
  if (i < len && s[i] == '-') i++;
  if (i >= len || !is_digit(s[i])) {
    *bad = i;
    *why = i ? "a digit after '-'" : "a number";
    return 0;
  }
  if (s[i] == '0') {
    i++;
    if (i < len && is_digit(s[i])) {
      *bad = i;
      *why = "'.', 'e' or the end of the number after a leading 0 (JSON has no leading zeros)";
      return 0;
    }
  } else {
    while (i < len && is_digit(s[i])) i++;
  }
  if (i < len && s[i] == '.') {
    *integral = false;
    i++;
    if (i >= len || !is_digit(s[i])) {
      *bad = i;
      *why = "a digit after '.'";
      return 0;
    }
    while (i < len && is_digit(s[i])) i++;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    *integral = false;
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= len || !is_digit(s[i])) {
      *bad = i;
      *why = "a digit in the exponent";
      return 0;
    }
    while (i < len && is_digit(s[i])) i++;
  }
  return i;
}

/* Decimal integer text (optional '-', digits) to int64; false on overflow. */
static bool decimal_to_int64(const unsigned char *s, size_t len, int64_t *out) {
  size_t i = 0;
  bool neg = false;
  if (i < len && s[i] == '-') neg = true, i++;
  if (i >= len) return false;
  uint64_t mag = 0;
  const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < len; i++) {
    if (!is_digit(s[i])) return false;
    unsigned dgt = (unsigned)(s[i] - '0');
    if (mag > (limit - dgt) / 10) return false;
    mag = mag * 10 + dgt;
  }
  if (neg) *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
  else *out = (int64_t)mag;
  return true;
}

/* ------------------------------------------------------------------------------------ */
/* Object key index                                                                      */

static uint64_t key_hash(const char *key, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)key[i];
    h *= 1099511628211ull;
  }
  return h ^ (h >> 29);
}

static bool key_equal(const json_member *m, const char *key, size_t len) {
  return m->key_len == len && memcmp(m->key, key, len) == 0;
}

/* Position of key among obj's members, or SIZE_MAX. */
static size_t object_find(const json_value *obj, const char *key, size_t len) {
  const json_member *ms = obj->u.object.members;
  if (obj->u.object.index) {
    size_t mask = obj->u.object.index_cap - 1;
    for (size_t slot = key_hash(key, len) & mask;; slot = (slot + 1) & mask) {
      uint32_t e = obj->u.object.index[slot];
      if (!e) return SIZE_MAX;
      if (key_equal(&ms[e - 1], key, len)) return e - 1;
    }
  }
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (key_equal(&ms[i], key, len)) return i;
  return SIZE_MAX;
}

/* Inserts member pos into the index; returns the position of an equal key already
 * there (the member is then not inserted), or SIZE_MAX. */
static size_t index_insert(json_value *obj, size_t pos) {
  const json_member *ms = obj->u.object.members;
  size_t mask = obj->u.object.index_cap - 1;
  for (size_t slot = key_hash(ms[pos].key, ms[pos].key_len) & mask;; slot = (slot + 1) & mask) {
    uint32_t e = obj->u.object.index[slot];
    if (!e) {
      obj->u.object.index[slot] = (uint32_t)(pos + 1);
      return SIZE_MAX;
    }
    if (key_equal(&ms[e - 1], ms[pos].key, ms[pos].key_len)) return e - 1;
  }
}

/* (Re)builds the index with room for `room` members at most half full, or drops it
 * when the object is small enough for a linear scan. Reports the first duplicate as
 * (*dup_first, *dup_second) and returns false if there is one. */
static bool object_reindex(arena *a, json_value *obj, size_t room, size_t *dup_first, size_t *dup_second) {
  size_t n = obj->u.object.len;
  if (room <= JSON_OBJECT_LINEAR_MAX || room >= UINT32_MAX / 4) {
    obj->u.object.index = NULL;
    obj->u.object.index_cap = 0;
    /* Past what a uint32 index holds (billions of members, unreachable with real
     * memory) duplicates go unchecked rather than checked in quadratic time. */
    if (n > JSON_OBJECT_LINEAR_MAX) return true;
    for (size_t j = 1; j < n; j++)
      for (size_t i = 0; i < j; i++)
        if (key_equal(&obj->u.object.members[i], obj->u.object.members[j].key, obj->u.object.members[j].key_len)) {
          *dup_first = i;
          *dup_second = j;
          return false;
        }
    return true;
  }
  size_t cap = 16;
  while (cap < room * 2) cap *= 2;
  obj->u.object.index = arena_calloc(a, cap, sizeof(uint32_t));
  obj->u.object.index_cap = cap;
  for (size_t j = 0; j < n; j++) {
    size_t prev = index_insert(obj, j);
    if (prev != SIZE_MAX) {
      *dup_first = prev;
      *dup_second = j;
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------------------------ */
/* Parser                                                                                */

typedef struct pending_member {
  json_member m;
  size_t key_pos; /* byte offset of the key's opening quote, for duplicate errors */
} pending_member;

typedef struct parser {
  arena *a;
  const unsigned char *s;
  size_t len, pos;
  const char *filename;
  json_value **vals; /* scratch stack of elements of open arrays */
  size_t nvals, capvals;
  pending_member *mems; /* scratch stack of members of open objects */
  size_t nmems, capmems;
  char *buf; /* scratch for decoding escaped strings */
  size_t buf_len, buf_cap;
} parser;

static void line_col(const parser *p, size_t pos, size_t *line, size_t *col) {
  size_t l = 1, start = 0;
  if (pos > p->len) pos = p->len;
  for (size_t i = 0; i < pos; i++)
    if (p->s[i] == '\n') l++, start = i + 1;
  /* The byte order mark is invisible in editors, so it does not count as a column. */
  if (l == 1 && p->len >= 3 && memcmp(p->s, "\xEF\xBB\xBF", 3) == 0 && pos >= 3) start = 3;
  *line = l;
  *col = pos - start + 1;
}

static kiln_status err_at(const parser *p, size_t pos, const char *fmt, ...) KILN_PRINTF(3, 4);
static kiln_status err_at(const parser *p, size_t pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = status_verror(KILN_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  size_t line, col;
  line_col(p, pos, &line, &col);
  return status_wrap(s, "%s:%zu:%zu", p->filename, line, col);
}

/* What the input holds at pos, for "got ..." in messages: a word ('NaN', 'True'), a
 * printable character, a byte value, or the end of input. */
static void describe_at(const parser *p, size_t pos, char *out, size_t cap) {
  if (pos >= p->len) {
    snprintf(out, cap, "end of input");
    return;
  }
  unsigned c = p->s[pos];
  if (is_word_char((int)c)) {
    size_t n = 0;
    while (pos + n < p->len && n < 24 && is_word_char(p->s[pos + n])) n++;
    bool more = pos + n < p->len && is_word_char(p->s[pos + n]);
    snprintf(out, cap, "'%.*s%s'", (int)n, (const char *)p->s + pos, more ? "..." : "");
  } else if (c > 0x20 && c < 0x7F) {
    snprintf(out, cap, "'%c'", (char)c);
  } else if (c == ' ') {
    snprintf(out, cap, "' '");
  } else {
    snprintf(out, cap, "byte 0x%02x", c);
  }
}

static kiln_status expected_at(const parser *p, size_t pos, const char *what) {
  char got[64];
  describe_at(p, pos, got, sizeof got);
  return err_at(p, pos, "expected %s, got %s", what, got);
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static void buf_append(parser *p, const void *data, size_t n) {
  if (!n) return;
  if (p->buf_len + n > p->buf_cap) {
    size_t cap = p->buf_cap ? p->buf_cap : 256;
    while (cap < p->buf_len + n) cap *= 2;
    p->buf = xrealloc(p->buf, cap);
    p->buf_cap = cap;
  }
  memcpy(p->buf + p->buf_len, data, n);
  p->buf_len += n;
}

static bool read_hex4(const parser *p, size_t pos, uint32_t *out) {
  if (pos > p->len || p->len - pos < 4) return false;
  uint32_t v = 0;
  for (size_t k = 0; k < 4; k++) {
    unsigned c = p->s[pos + k];
    unsigned d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

/* Reads the string whose opening quote is at p->pos into the arena. */
static kiln_status parse_string(parser *p, const char **out, size_t *len_out) {
  size_t open = p->pos;
  size_t i = open + 1, run = i;
  bool escaped = false;
  p->buf_len = 0;
  for (;;) {
    if (i >= p->len) return err_at(p, open, "expected '\"' to close this string, got end of input");
    unsigned c = p->s[i];
    if (c == '"') break;
    if (c < 0x20) {
      return err_at(p, i, "expected control character U+%04X to be escaped in a string (raw %s)", c,
                    c == '\n' ? "newline; strings cannot span lines" : "control characters are not JSON");
    }
    if (c >= 0x80) {
      size_t n = utf8_sequence_len(p->s + i, p->len - i);
      if (!n) return err_at(p, i, "expected valid UTF-8 in a string, got byte 0x%02x", c);
      i += n;
      continue;
    }
    if (c != '\\') {
      i++;
      continue;
    }
    escaped = true;
    buf_append(p, p->s + run, i - run);
    size_t esc = i;
    if (i + 1 >= p->len) return err_at(p, open, "expected '\"' to close this string, got end of input");
    unsigned e = p->s[i + 1];
    char ch;
    switch (e) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': ch = 0; break;
      default: return expected_at(p, i + 1, "an escape (one of \" \\ / b f n r t u) after '\\'");
    }
    if (e != 'u') {
      buf_append(p, &ch, 1);
      i += 2;
      run = i;
      continue;
    }
    uint32_t cp;
    if (!read_hex4(p, i + 2, &cp)) return err_at(p, esc, "expected 4 hex digits after \\u");
    i += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return err_at(p, esc, "expected a high surrogate before low surrogate \\u%04X (unpaired surrogates are not text)",
                    (unsigned)cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t lo;
      if (i + 1 >= p->len || p->s[i] != '\\' || p->s[i + 1] != 'u' || !read_hex4(p, i + 2, &lo) || lo < 0xDC00 ||
          lo > 0xDFFF)
        return err_at(p, esc, "expected a low surrogate escape \\uDC00-\\uDFFF after high surrogate \\u%04X",
                      (unsigned)cp);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      i += 6;
    }
    char enc[4];
    buf_append(p, enc, utf8_encode(cp, enc));
    run = i;
  }
  if (escaped) {
    buf_append(p, p->s + run, i - run);
    *out = arena_strndup(p->a, p->buf, p->buf_len);
    *len_out = p->buf_len;
  } else {
    *out = arena_strndup(p->a, (const char *)p->s + open + 1, i - open - 1);
    *len_out = i - open - 1;
  }
  p->pos = i + 1;
  return NULL;
}

static kiln_status parse_number(parser *p, json_value *v) {
  size_t start = p->pos, bad = 0;
  bool integral;
  const char *why = NULL;
  size_t n = scan_number(p->s + start, p->len - start, &integral, &bad, &why);
  if (!n) return expected_at(p, start + bad, why);
  const unsigned char *t = p->s + start;
  v->type = JSON_NUMBER;
  bool negative_zero = n == 2 && t[0] == '-' && t[1] == '0';
  if (integral && decimal_to_int64(t, n, &v->u.number.i)) {
    v->u.number.is_int = true;
    v->u.number.d = negative_zero ? -0.0 : (double)v->u.number.i;
    if (negative_zero) {
      v->u.number.text = arena_strndup(p->a, (const char *)t, n);
      v->u.number.text_len = n;
    }
  } else {
    double d = number_text_to_double((const char *)t, n);
    if (isinf(d))
      return err_at(p, start, "expected a number within the range of a double, got %.*s%s", n > 40 ? 40 : (int)n,
                    (const char *)t, n > 40 ? "..." : "");
    v->u.number.d = d;
    v->u.number.text = arena_strndup(p->a, (const char *)t, n);
    v->u.number.text_len = n;
  }
  p->pos = start + n;
  return NULL;
}

static kiln_status parse_value(parser *p, json_value *v, int depth);

static kiln_status enter_container(const parser *p, int depth) {
  if (depth >= JSON_MAX_DEPTH) return err_at(p, p->pos, "nesting deeper than %d arrays/objects", JSON_MAX_DEPTH);
  return NULL;
}

static kiln_status parse_array(parser *p, json_value *v, int depth) {
  TRY(enter_container(p, depth));
  v->type = JSON_ARRAY;
  size_t base = p->nvals;
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == ']') {
    p->pos++;
    return NULL;
  }
  for (;;) {
    json_value *item = arena_alloc(p->a, sizeof *item);
    item->parent = v;
    item->index = p->nvals - base;
    if (p->nvals == p->capvals) {
      p->capvals = p->capvals ? p->capvals * 2 : 256;
      p->vals = xrealloc(p->vals, p->capvals * sizeof *p->vals);
    }
    p->vals[p->nvals++] = item;
    TRY(parse_value(p, item, depth + 1));
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      skip_ws(p);
      if (p->pos < p->len && p->s[p->pos] == ']')
        return err_at(p, p->pos, "expected a value after ',', got ']' (JSON has no trailing commas)");
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == ']') break;
    return expected_at(p, p->pos, "',' or ']' after an array element");
  }
  p->pos++;
  size_t n = p->nvals - base;
  v->u.array.items = arena_memdup(p->a, p->vals + base, n * sizeof *p->vals);
  v->u.array.len = v->u.array.cap = n;
  p->nvals = base;
  return NULL;
}

static kiln_status parse_object(parser *p, json_value *v, int depth) {
  TRY(enter_container(p, depth));
  v->type = JSON_OBJECT;
  size_t base = p->nmems;
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == '}') {
    p->pos++;
    return NULL;
  }
  for (;;) {
    if (p->pos >= p->len || p->s[p->pos] != '"') {
      if (p->pos < p->len && p->s[p->pos] == '}')
        return err_at(p, p->pos, "expected '\"' to start a key after ',', got '}' (JSON has no trailing commas)");
      return expected_at(p, p->pos, "'\"' to start an object key");
    }
    if (p->nmems == p->capmems) {
      p->capmems = p->capmems ? p->capmems * 2 : 64;
      p->mems = xrealloc(p->mems, p->capmems * sizeof *p->mems);
    }
    pending_member *pm = &p->mems[p->nmems++];
    pm->key_pos = p->pos;
    TRY(parse_string(p, &pm->m.key, &pm->m.key_len));
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':') return expected_at(p, p->pos, "':' after an object key");
    p->pos++;
    json_value *item = arena_alloc(p->a, sizeof *item);
    item->parent = v;
    item->key = pm->m.key;
    item->key_len = pm->m.key_len;
    pm->m.value = item;
    /* pm may move when nested objects grow the stack; it is not used past here. */
    TRY(parse_value(p, item, depth + 1));
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      skip_ws(p);
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == '}') break;
    return expected_at(p, p->pos, "',' or '}' after an object member");
  }
  p->pos++;
  size_t n = p->nmems - base;
  json_member *ms = arena_calloc(p->a, n, sizeof *ms);
  for (size_t i = 0; i < n; i++) ms[i] = p->mems[base + i].m;
  v->u.object.members = ms;
  v->u.object.len = v->u.object.cap = n;
  size_t first, second;
  if (!object_reindex(p->a, v, n, &first, &second)) {
    size_t line, col;
    line_col(p, p->mems[base + first].key_pos, &line, &col);
    strbuf k;
    strbuf_init(&k);
    quote_preview(&k, ms[second].key, ms[second].key_len);
    kiln_status s = err_at(p, p->mems[base + second].key_pos, "duplicate key %s (first at %zu:%zu)", strbuf_cstr(&k),
                           line, col);
    strbuf_free(&k);
    return s;
  }
  p->nmems = base;
  return NULL;
}

static bool literal_at(const parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return false;
  return p->pos + n >= p->len || !is_word_char(p->s[p->pos + n]);
}

static kiln_status parse_value(parser *p, json_value *v, int depth) {
  skip_ws(p);
  if (p->pos >= p->len) return expected_at(p, p->pos, "a value");
  unsigned c = p->s[p->pos];
  switch (c) {
    case '{': return parse_object(p, v, depth);
    case '[': return parse_array(p, v, depth);
    case '"':
      v->type = JSON_STRING;
      return parse_string(p, &v->u.string.s, &v->u.string.len);
    case '-':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      return parse_number(p, v);
    default: break;
  }
  if (literal_at(p, "true") || literal_at(p, "false")) {
    v->type = JSON_BOOL;
    v->u.boolean = c == 't';
    p->pos += c == 't' ? 4 : 5;
    return NULL;
  }
  if (literal_at(p, "null")) {
    v->type = JSON_NULL;
    p->pos += 4;
    return NULL;
  }
  if (literal_at(p, "NaN") || literal_at(p, "Infinity") || literal_at(p, "inf") || literal_at(p, "nan"))
    return expected_at(p, p->pos, "a value (JSON has no NaN or Infinity)");
  return expected_at(p, p->pos, "a value");
}

kiln_status json_parse(arena *a, const char *text, size_t len, const char *filename, json_value **out) {
  *out = NULL;
  parser p = {0};
  p.a = a;
  p.s = (const unsigned char *)(text ? text : "");
  p.len = text ? len : 0;
  p.filename = arena_strdup(a, filename ? filename : "<input>");
  if (p.len >= 3 && memcmp(p.s, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
  json_value *root = arena_alloc(a, sizeof *root);
  root->key = p.filename;
  root->key_len = strlen(p.filename);
  kiln_status s = parse_value(&p, root, 0);
  if (!s) {
    skip_ws(&p);
    if (p.pos < p.len) s = expected_at(&p, p.pos, "the end of input after the top-level value");
  }
  free(p.vals);
  free(p.mems);
  free(p.buf);
  if (!s) *out = root;
  return s;
}

/* ------------------------------------------------------------------------------------ */
/* Lenient accessors                                                                     */

const char *json_type_name(json_type t) {
  switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "bool";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
  }
  return "unknown";
}

bool json_is(const json_value *v, json_type t) { return v && v->type == t; }

const json_value *json_getn(const json_value *obj, const char *key, size_t key_len) {
  if (!json_is(obj, JSON_OBJECT) || !key) return NULL;
  size_t i = object_find(obj, key, key_len);
  return i == SIZE_MAX ? NULL : obj->u.object.members[i].value;
}

const json_value *json_get(const json_value *obj, const char *key) {
  return key ? json_getn(obj, key, strlen(key)) : NULL;
}

size_t json_array_len(const json_value *arr) { return json_is(arr, JSON_ARRAY) ? arr->u.array.len : 0; }

const json_value *json_array_at(const json_value *arr, size_t i) {
  return i < json_array_len(arr) ? arr->u.array.items[i] : NULL;
}

size_t json_object_len(const json_value *obj) { return json_is(obj, JSON_OBJECT) ? obj->u.object.len : 0; }

const json_member *json_object_at(const json_value *obj, size_t i) {
  return i < json_object_len(obj) ? &obj->u.object.members[i] : NULL;
}

const char *json_as_string(const json_value *v) { return json_is(v, JSON_STRING) ? v->u.string.s : NULL; }

/* Integers beyond 2^53 are trusted only from an integer literal: a double there may
 * already be a rounded neighbour of what the author wrote. */
static bool number_to_int64(const json_value *v, int64_t *out) {
  if (v->u.number.is_int) {
    *out = v->u.number.i;
    return true;
  }
  double d = v->u.number.d;
  if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
    *out = (int64_t)d;
    return true;
  }
  return false;
}

int64_t json_as_int64(const json_value *v, int64_t fallback) {
  int64_t i;
  return json_is(v, JSON_NUMBER) && number_to_int64(v, &i) ? i : fallback;
}

double json_as_double(const json_value *v, double fallback) {
  return json_is(v, JSON_NUMBER) ? v->u.number.d : fallback;
}

bool json_as_bool(const json_value *v, bool fallback) { return json_is(v, JSON_BOOL) ? v->u.boolean : fallback; }

/* ------------------------------------------------------------------------------------ */
/* Paths and checked accessors                                                           */

static bool is_identifier(const char *s, size_t len) {
  if (!len || is_digit((unsigned char)s[0])) return false;
  for (size_t i = 0; i < len; i++)
    if (!is_word_char((unsigned char)s[i])) return false;
  return true;
}

void json_path(const json_value *v, strbuf *out) {
  size_t depth = 0;
  for (const json_value *w = v; w && w->parent; w = w->parent) depth++;
  if (!depth) {
    strbuf_append(out, "(top level)");
    return;
  }
  const json_value **chain = xrealloc(NULL, depth * sizeof *chain);
  size_t k = depth;
  for (const json_value *w = v; w && w->parent; w = w->parent) chain[--k] = w;
  for (size_t i = 0; i < depth; i++) {
    const json_value *w = chain[i];
    if (w->parent->type == JSON_ARRAY) {
      strbuf_printf(out, "[%zu]", w->index);
    } else if (is_identifier(w->key, w->key_len)) {
      if (i) strbuf_putc(out, '.');
      strbuf_appendn(out, w->key, w->key_len);
    } else {
      strbuf_putc(out, '[');
      write_string(out, w->key ? w->key : "", w->key ? w->key_len : 0);
      strbuf_putc(out, ']');
    }
  }
  free(chain);
}

const char *json_document_name(const json_value *v) {
  if (!v) return "<json>";
  while (v->parent) v = v->parent;
  return v->key ? v->key : "<json>";
}

static kiln_status verror_at(const json_value *v, kiln_code code, const char *fmt, va_list ap) {
  kiln_status s = status_verror(code, fmt, ap);
  if (!v) return status_wrap(s, "<json>");
  strbuf path;
  strbuf_init(&path);
  json_path(v, &path);
  s = status_wrap(s, "%s: %s", json_document_name(v), strbuf_cstr(&path));
  strbuf_free(&path);
  return s;
}

kiln_status json_error_at(const json_value *v, kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = verror_at(v, code, fmt, ap);
  va_end(ap);
  return s;
}

/* "number 3", "string \"abc\"", "bool true", "null", "array", "object": a value's
 * type with a short preview of a scalar, for "got ..." in messages. */
static void describe_value(const json_value *v, strbuf *out) {
  if (!v) {
    strbuf_append(out, "nothing");
    return;
  }
  strbuf_append(out, json_type_name(v->type));
  if (v->type == JSON_BOOL) {
    strbuf_append(out, v->u.boolean ? " true" : " false");
  } else if (v->type == JSON_STRING) {
    strbuf_putc(out, ' ');
    quote_preview(out, v->u.string.s, v->u.string.len);
  } else if (v->type == JSON_NUMBER) {
    strbuf num;
    strbuf_init(&num);
    kiln_status s = json_write(&num, v, false);
    if (s) strbuf_printf(&num, "%g", v->u.number.d);
    kiln_status_free(s);
    strbuf_putc(out, ' ');
    strbuf_appendn(out, num.data, num.len > 40 ? 40 : num.len);
    if (num.len > 40) strbuf_append(out, "...");
    strbuf_free(&num);
  }
}

static kiln_status mismatch(const json_value *v, const char *expected) {
  strbuf got;
  strbuf_init(&got);
  describe_value(v, &got);
  kiln_status s = json_error_at(v, KILN_INVALID_ARGUMENT, "expected %s, got %s", expected, strbuf_cstr(&got));
  strbuf_free(&got);
  return s;
}

static const char *type_with_article(json_type t) {
  switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a bool";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
  }
  return "a value";
}

kiln_status json_expect_type(const json_value *v, json_type t) {
  return json_is(v, t) ? NULL : mismatch(v, type_with_article(t));
}

kiln_status json_expect_object(const json_value *v) { return json_expect_type(v, JSON_OBJECT); }

kiln_status json_expect_array(const json_value *v, size_t *len_out) {
  TRY(json_expect_type(v, JSON_ARRAY));
  if (len_out) *len_out = v->u.array.len;
  return NULL;
}

kiln_status json_expect_member(const json_value *obj, const char *key, const json_value **out) {
  TRY(json_expect_object(obj));
  const json_value *m = json_get(obj, key);
  if (!m) {
    strbuf k;
    strbuf_init(&k);
    quote_preview(&k, key, strlen(key));
    kiln_status s = json_error_at(obj, KILN_INVALID_ARGUMENT, "missing required key %s", strbuf_cstr(&k));
    strbuf_free(&k);
    return s;
  }
  *out = m;
  return NULL;
}

kiln_status json_expect_string(const json_value *v, const char **out, size_t *len_out) {
  TRY(json_expect_type(v, JSON_STRING));
  *out = v->u.string.s;
  if (len_out) *len_out = v->u.string.len;
  return NULL;
}

kiln_status json_expect_int64(const json_value *v, int64_t *out) {
  if (!json_is(v, JSON_NUMBER)) return mismatch(v, "an integer");
  if (!number_to_int64(v, out)) {
    double d = v->u.number.d;
    return mismatch(v, d == floor(d) ? "an integer that int64 holds exactly" : "an integer");
  }
  return NULL;
}

kiln_status json_expect_proto_int64(const json_value *v, int64_t *out) {
  if (json_is(v, JSON_STRING)) {
    if (!decimal_to_int64((const unsigned char *)v->u.string.s, v->u.string.len, out))
      return mismatch(v, "an int64 (a number or a string of decimal digits)");
    return NULL;
  }
  if (!json_is(v, JSON_NUMBER)) return mismatch(v, "an int64 (a number or a string of decimal digits)");
  return json_expect_int64(v, out);
}

kiln_status json_expect_double(const json_value *v, double *out) {
  TRY(json_expect_type(v, JSON_NUMBER));
  *out = v->u.number.d;
  return NULL;
}

kiln_status json_expect_proto_double(const json_value *v, double *out) {
  static const char *what = "a number (or a numeric string, \"NaN\", \"Infinity\" or \"-Infinity\")";
  if (json_is(v, JSON_NUMBER)) {
    *out = v->u.number.d;
    return NULL;
  }
  if (!json_is(v, JSON_STRING)) return mismatch(v, what);
  const char *s = v->u.string.s;
  size_t n = v->u.string.len;
  if (n == 3 && memcmp(s, "NaN", 3) == 0) {
    *out = NAN;
    return NULL;
  }
  if (n == 8 && memcmp(s, "Infinity", 8) == 0) {
    *out = INFINITY;
    return NULL;
  }
  if (n == 9 && memcmp(s, "-Infinity", 9) == 0) {
    *out = -INFINITY;
    return NULL;
  }
  bool integral;
  size_t bad;
  const char *why;
  if (n && scan_number((const unsigned char *)s, n, &integral, &bad, &why) == n) {
    *out = number_text_to_double(s, n);
    return NULL;
  }
  return mismatch(v, what);
}

kiln_status json_expect_bool(const json_value *v, bool *out) {
  TRY(json_expect_type(v, JSON_BOOL));
  *out = v->u.boolean;
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Builders                                                                              */

static json_value *new_value(arena *a, json_type t) {
  json_value *v = arena_alloc(a, sizeof *v);
  v->type = t;
  return v;
}

json_value *json_new_null(arena *a) { return new_value(a, JSON_NULL); }

json_value *json_new_bool(arena *a, bool b) {
  json_value *v = new_value(a, JSON_BOOL);
  v->u.boolean = b;
  return v;
}

json_value *json_new_int64(arena *a, int64_t i) {
  json_value *v = new_value(a, JSON_NUMBER);
  v->u.number.i = i;
  v->u.number.d = (double)i;
  v->u.number.is_int = true;
  return v;
}

json_value *json_new_double(arena *a, double d) {
  json_value *v = new_value(a, JSON_NUMBER);
  v->u.number.d = d;
  return v;
}

json_value *json_new_stringn(arena *a, const char *s, size_t len) {
  json_value *v = new_value(a, JSON_STRING);
  v->u.string.s = arena_strndup(a, s ? s : "", s ? len : 0);
  v->u.string.len = s ? len : 0;
  return v;
}

json_value *json_new_string(arena *a, const char *s) { return json_new_stringn(a, s, s ? strlen(s) : 0); }

json_value *json_new_array(arena *a) { return new_value(a, JSON_ARRAY); }

json_value *json_new_object(arena *a) { return new_value(a, JSON_OBJECT); }

void json_array_append(arena *a, json_value *arr, json_value *item) {
  if (!json_is(arr, JSON_ARRAY) || !item) return;
  if (arr->u.array.len == arr->u.array.cap) {
    size_t cap = arr->u.array.cap ? arr->u.array.cap * 2 : 8;
    json_value **items = arena_calloc(a, cap, sizeof *items);
    if (arr->u.array.len) memcpy(items, arr->u.array.items, arr->u.array.len * sizeof *items);
    arr->u.array.items = items;
    arr->u.array.cap = cap;
  }
  item->parent = arr;
  item->key = NULL;
  item->key_len = 0;
  item->index = arr->u.array.len;
  arr->u.array.items[arr->u.array.len++] = item;
}

void json_object_set(arena *a, json_value *obj, const char *key, json_value *value) {
  if (!json_is(obj, JSON_OBJECT) || !key || !value) return;
  size_t key_len = strlen(key);
  size_t pos = object_find(obj, key, key_len);
  if (pos == SIZE_MAX) {
    if (obj->u.object.len == obj->u.object.cap) {
      size_t cap = obj->u.object.cap ? obj->u.object.cap * 2 : 8;
      json_member *ms = arena_calloc(a, cap, sizeof *ms);
      if (obj->u.object.len) memcpy(ms, obj->u.object.members, obj->u.object.len * sizeof *ms);
      obj->u.object.members = ms;
      obj->u.object.cap = cap;
    }
    pos = obj->u.object.len++;
    obj->u.object.members[pos].key = arena_strndup(a, key, key_len);
    obj->u.object.members[pos].key_len = key_len;
    size_t n = obj->u.object.len;
    if (n > JSON_OBJECT_LINEAR_MAX) {
      size_t dup_first, dup_second;
      if (!obj->u.object.index || n * 2 > obj->u.object.index_cap)
        object_reindex(a, obj, n * 2, &dup_first, &dup_second); /* keys are unique here */
      else
        index_insert(obj, pos);
    }
  }
  json_member *m = &obj->u.object.members[pos];
  m->value = value;
  value->parent = obj;
  value->key = m->key;
  value->key_len = m->key_len;
  value->index = 0;
}

/* ------------------------------------------------------------------------------------ */
/* Writer                                                                                */

static void write_string(strbuf *b, const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  strbuf_putc(b, '"');
  size_t run = 0, i = 0;
  while (i < len) {
    unsigned c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      i++;
      continue;
    }
    size_t n = c >= 0x80 ? utf8_sequence_len(s + i, len - i) : 0;
    if (n) {
      i += n;
      continue;
    }
    strbuf_appendn(b, str + run, i - run);
    switch (c) {
      case '"': strbuf_append(b, "\\\""); break;
      case '\\': strbuf_append(b, "\\\\"); break;
      case '\b': strbuf_append(b, "\\b"); break;
      case '\f': strbuf_append(b, "\\f"); break;
      case '\n': strbuf_append(b, "\\n"); break;
      case '\r': strbuf_append(b, "\\r"); break;
      case '\t': strbuf_append(b, "\\t"); break;
      default:
        if (c < 0x20) strbuf_printf(b, "\\u%04x", c);
        else strbuf_append(b, "\xEF\xBF\xBD"); /* a byte that is not valid UTF-8 */
        break;
    }
    i++;
    run = i;
  }
  strbuf_appendn(b, str + run, len - run);
  strbuf_putc(b, '"');
}

/* The shortest %g rendering that strtod maps back to d exactly. */
static void write_double(strbuf *b, double d) {
  char buf[40];
  char dp = locale_decimal_point();
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (dp != '.') {
      char *q = strchr(buf, dp);
      if (q) *q = '.';
    }
    if (number_text_to_double(buf, strlen(buf)) == d) break;
  }
  strbuf_append(b, buf);
}

static void newline_indent(strbuf *b, int indent) {
  strbuf_putc(b, '\n');
  for (int i = 0; i < indent; i++) strbuf_append(b, "  ");
}

static kiln_status write_value(strbuf *b, const json_value *v, bool pretty, int depth) {
  if (!v) {
    strbuf_append(b, "null");
    return NULL;
  }
  switch (v->type) {
    case JSON_NULL: strbuf_append(b, "null"); return NULL;
    case JSON_BOOL: strbuf_append(b, v->u.boolean ? "true" : "false"); return NULL;
    case JSON_NUMBER:
      if (v->u.number.text) strbuf_appendn(b, v->u.number.text, v->u.number.text_len);
      else if (v->u.number.is_int) strbuf_printf(b, "%" PRId64, v->u.number.i);
      else if (!isfinite(v->u.number.d))
        return json_error_at(v, KILN_INVALID_ARGUMENT, "cannot write %g as JSON (JSON has no NaN or Infinity)",
                             v->u.number.d);
      else write_double(b, v->u.number.d);
      return NULL;
    case JSON_STRING: write_string(b, v->u.string.s, v->u.string.len); return NULL;
    case JSON_ARRAY:
    case JSON_OBJECT: break;
  }
  if (depth >= JSON_MAX_DEPTH)
    return json_error_at(v, KILN_INVALID_ARGUMENT, "cannot write nesting deeper than %d arrays/objects",
                         JSON_MAX_DEPTH);
  if (v->type == JSON_ARRAY) {
    size_t n = v->u.array.len;
    bool inline_scalars = true;
    for (size_t i = 0; i < n && inline_scalars; i++) {
      const json_value *e = v->u.array.items[i];
      inline_scalars = !e || e->type == JSON_NULL || e->type == JSON_BOOL || e->type == JSON_NUMBER;
    }
    strbuf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
      if (i) strbuf_append(b, pretty && inline_scalars ? ", " : ",");
      if (pretty && !inline_scalars) newline_indent(b, depth + 1);
      TRY(write_value(b, v->u.array.items[i], pretty, depth + 1));
    }
    if (pretty && !inline_scalars && n) newline_indent(b, depth);
    strbuf_putc(b, ']');
    return NULL;
  }
  size_t n = v->u.object.len;
  strbuf_putc(b, '{');
  for (size_t i = 0; i < n; i++) {
    const json_member *m = &v->u.object.members[i];
    if (i) strbuf_putc(b, ',');
    if (pretty) newline_indent(b, depth + 1);
    write_string(b, m->key, m->key_len);
    strbuf_append(b, pretty ? ": " : ":");
    TRY(write_value(b, m->value, pretty, depth + 1));
  }
  if (pretty && n) newline_indent(b, depth);
  strbuf_putc(b, '}');
  return NULL;
}

kiln_status json_write(strbuf *out, const json_value *v, bool pretty) { return write_value(out, v, pretty, 0); }

/* ------------------------------------------------------------------------------------ */
/* Equality                                                                              */

static bool number_equal(const json_value *a, const json_value *b) {
  if (signbit(a->u.number.d) != signbit(b->u.number.d)) return false;
  if (a->u.number.is_int && b->u.number.is_int) return a->u.number.i == b->u.number.i;
  if (a->u.number.is_int || b->u.number.is_int) {
    const json_value *i = a->u.number.is_int ? a : b, *f = a->u.number.is_int ? b : a;
    double d = f->u.number.d;
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d) &&
           (int64_t)d == i->u.number.i;
  }
  return a->u.number.d == b->u.number.d;
}

static bool equal_at(const json_value *a, const json_value *b, int depth) {
  if (!a || !b) return a == b;
  if (a->type != b->type || depth > JSON_MAX_DEPTH) return false;
  switch (a->type) {
    case JSON_NULL: return true;
    case JSON_BOOL: return a->u.boolean == b->u.boolean;
    case JSON_NUMBER: return number_equal(a, b);
    case JSON_STRING:
      return a->u.string.len == b->u.string.len && memcmp(a->u.string.s, b->u.string.s, a->u.string.len) == 0;
    case JSON_ARRAY:
      if (a->u.array.len != b->u.array.len) return false;
      for (size_t i = 0; i < a->u.array.len; i++)
        if (!equal_at(a->u.array.items[i], b->u.array.items[i], depth + 1)) return false;
      return true;
    case JSON_OBJECT:
      if (a->u.object.len != b->u.object.len) return false;
      for (size_t i = 0; i < a->u.object.len; i++) {
        const json_member *m = &a->u.object.members[i];
        size_t j = object_find(b, m->key, m->key_len);
        if (j == SIZE_MAX || !equal_at(m->value, b->u.object.members[j].value, depth + 1)) return false;
      }
      return true;
  }
  return false;
}

bool json_equal(const json_value *a, const json_value *b) { return equal_at(a, b, 0); }
