/* The OpenCL plugin's HLO text parser: turns the module text kiln hands to compile
 * (kiln's printer output, src/hlo/printer.c, in XLA's dump style) into the thin IR of
 * ocl_hlo.h, and decodes the attribute forms the code generator needs (integer lists,
 * slices, windows, paddings, convolution dim_labels). The plugin is built as an outside
 * vendor would build it, so this is a self-contained recursive-descent parser with no
 * dependency on kiln's HLO library. Everything a module owns lives in one arena that
 * ocl_module_free releases, and errors unwind with longjmp to the single entry point, so
 * no error path can leak; nesting is bounded (OCL_PARSE_MAX_DEPTH), names are found
 * through hash tables, and constants are only allocated once the text is known to be
 * long enough to hold them, so hostile input cannot make the parser crash, recurse
 * without bound, go quadratic or allocate far beyond the input's size. */
#include "ocl_hlo.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"

/* Deepest nesting of tuple shapes, tuple constants and bracketed attribute values. */
#define OCL_PARSE_MAX_DEPTH 64
/* Attributes of one instruction; keys are checked for duplicates pairwise, so a bound
 * keeps that linear in the input (XLA's instructions have a handful). */
#define OCL_PARSE_MAX_ATTRS 256
/* Longest number token in a constant (kiln prints at most 17 significant digits). */
#define OCL_PARSE_MAX_NUMBER 320

#if defined(__GNUC__) || defined(__clang__)
#define OCL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OCL_PRINTF(a, b)
#endif

/* ------------------------------------------------------------------------------------ */
/* Arena: every allocation of a module, freed at once.                                   */

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  max_align_t mem[];
} arena_block;

typedef struct arena {
  arena_block *head;
} arena;

enum { ARENA_CHUNK = 64 * 1024 };

/* Zeroed memory, 16-byte aligned; NULL when malloc fails or n is absurd. */
static void *arena_try_alloc(arena *a, size_t n) {
  if (n > ((size_t)-1) / 2) return NULL;
  n = n ? (n + 15) & ~(size_t)15 : 16;
  arena_block *h = a->head;
  if (h && h->cap - h->used >= n) {
    void *p = (char *)h->mem + h->used;
    h->used += n;
    memset(p, 0, n);
    return p;
  }
  size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
  arena_block *b = malloc(sizeof *b + cap);
  if (!b) return NULL;
  b->used = n;
  b->cap = cap;
  if (cap == n && h) {
    /* A big allocation gets a block of its own behind the head, so the head's free
     * space stays usable for the small ones that follow. */
    b->next = h->next;
    h->next = b;
  } else {
    b->next = h;
    a->head = b;
  }
  memset(b->mem, 0, n);
  return b->mem;
}

static void arena_free(arena *a) {
  arena_block *b = a->head;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}

/* What the caller owns: the public module first, so the two pointers coincide. */
typedef struct module_impl {
  ocl_module pub;
  arena mem;
} module_impl;

/* ------------------------------------------------------------------------------------ */
/* Parser state and errors                                                               */

typedef struct parser {
  const char *s;
  size_t n, pos;
  arena *a;
  char *err;
  size_t err_cap;
  char decimal_point; /* the C library's, for strtod under a non-"C" LC_NUMERIC */
  jmp_buf fail;
} parser;

static int is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_ident_char(int c) { return is_ident_start(c) || is_digit(c) || c == '.' || c == '-'; }
static int is_blank(int c) { return c == ' ' || c == '\t'; }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static void line_col(const parser *p, size_t pos, long *line, long *col) {
  long l = 1;
  size_t last = 0; /* offset just after the last newline */
  if (pos > p->n) pos = p->n;
  for (size_t i = 0; i < pos; i++)
    if (p->s[i] == '\n') {
      l++;
      last = i + 1;
    }
  *line = l;
  *col = (long)(pos - last) + 1;
}

static _Noreturn void fail_at(parser *p, size_t pos, const char *fmt, ...) OCL_PRINTF(3, 4);
static _Noreturn void fail_at(parser *p, size_t pos, const char *fmt, ...) {
  if (p->err && p->err_cap) {
    long line, col;
    line_col(p, pos, &line, &col);
    int k = snprintf(p->err, p->err_cap, "%ld:%ld: ", line, col);
    if (k >= 0 && (size_t)k < p->err_cap) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(p->err + k, p->err_cap - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  longjmp(p->fail, 1);
}

/* A short, printable description of the text at pos for "got ..." messages. */
static void describe(const parser *p, size_t pos, char *buf, size_t cap) {
  if (pos >= p->n) {
    snprintf(buf, cap, "end of input");
    return;
  }
  unsigned char c = (unsigned char)p->s[pos];
  if (is_ident_char(c) || c == '%') {
    size_t e = pos + 1;
    while (e < p->n && e - pos < 40 && is_ident_char((unsigned char)p->s[e])) e++;
    snprintf(buf, cap, "'%.*s'", (int)(e - pos), p->s + pos);
  } else if (c == '\n' || c == '\r') {
    snprintf(buf, cap, "the end of the line");
  } else if (c >= 0x20 && c < 0x7f) {
    snprintf(buf, cap, "'%c'", c);
  } else {
    snprintf(buf, cap, "byte 0x%02x", c);
  }
}

static _Noreturn void fail_expected_at(parser *p, size_t pos, const char *what) {
  char got[64];
  describe(p, pos, got, sizeof got);
  fail_at(p, pos, "expected %s, got %s", what, got);
}

static void *palloc(parser *p, size_t n) {
  void *r = arena_try_alloc(p->a, n);
  if (!r) fail_at(p, p->pos, "out of memory (allocating %zu bytes)", n);
  return r;
}

/* count * size bytes, failing cleanly on overflow. */
static void *palloc_n(parser *p, size_t count, size_t size) {
  if (size && count > ((size_t)-1) / 2 / size) fail_at(p, p->pos, "out of memory (too many entries)");
  return palloc(p, count * size);
}

static char *pstrndup(parser *p, const char *s, size_t n) {
  char *r = palloc(p, n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

/* Room for one more element in a growing arena array (the old copy is abandoned; the
 * doubling keeps the waste below the final size). */
static void *grow(parser *p, void *items, int n, int *cap, size_t elem) {
  if (n < *cap) return items;
  if (*cap > (1 << 28)) fail_at(p, p->pos, "too many entries in one list");
  int nc = *cap ? *cap * 2 : 8;
  void *r = palloc_n(p, (size_t)nc, elem);
  if (n) memcpy(r, items, (size_t)n * elem);
  *cap = nc;
  return r;
}

/* ------------------------------------------------------------------------------------ */
/* Lexing                                                                                */

static void skip_ws(parser *p) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (is_space((unsigned char)c)) {
      p->pos++;
    } else if (c == '/' && p->pos + 1 < p->n && p->s[p->pos + 1] == '/') {
      while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
    } else if (c == '/' && p->pos + 1 < p->n && p->s[p->pos + 1] == '*') {
      size_t q = p->pos + 2;
      while (q + 1 < p->n && !(p->s[q] == '*' && p->s[q + 1] == '/')) q++;
      if (q + 1 >= p->n) fail_at(p, p->pos, "unterminated comment (expected '*/')");
      p->pos = q + 2;
    } else {
      return;
    }
  }
}

static int peek(parser *p) {
  skip_ws(p);
  return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

static int peek_raw(const parser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

static int accept(parser *p, char c) {
  if (peek(p) != (unsigned char)c) return 0;
  p->pos++;
  return 1;
}

static void expect(parser *p, char c, const char *what) {
  if (!accept(p, c)) fail_expected_at(p, p->pos, what);
}

/* An identifier ([A-Za-z_][A-Za-z0-9_.-]*, "->" never part of it), optionally after '%'.
 * Returns 0 (position unchanged) when there is none. */
static int ident(parser *p, int allow_percent, const char **start, size_t *len) {
  skip_ws(p);
  size_t q = p->pos;
  if (allow_percent && q < p->n && p->s[q] == '%') q++;
  if (q >= p->n || !is_ident_start((unsigned char)p->s[q])) return 0;
  size_t s = q;
  while (q < p->n && is_ident_char((unsigned char)p->s[q])) {
    if (p->s[q] == '-' && q + 1 < p->n && p->s[q + 1] == '>') break;
    q++;
  }
  *start = p->s + s;
  *len = q - s;
  p->pos = q;
  return 1;
}

static int word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* The keyword w as a whole word at the cursor; consumed when present. */
static int accept_word(parser *p, const char *w) {
  size_t save = p->pos;
  const char *s;
  size_t n;
  if (ident(p, 0, &s, &n) && word_is(s, n, w)) return 1;
  p->pos = save;
  return 0;
}

static void parse_name(parser *p, const char *what, const char **s, size_t *n, size_t *pos) {
  skip_ws(p);
  *pos = p->pos;
  if (!ident(p, 1, s, n)) fail_expected_at(p, p->pos, what);
}

/* A non-negative decimal integer (digits only, at most max). */
static int64_t parse_uint(parser *p, const char *what, int64_t max) {
  skip_ws(p);
  size_t start = p->pos;
  if (!is_digit(peek_raw(p))) fail_expected_at(p, start, what);
  int64_t v = 0;
  while (is_digit(peek_raw(p))) {
    int d = p->s[p->pos] - '0';
    if (v > (max - d) / 10) fail_at(p, start, "%s is out of range (at most %lld)", what, (long long)max);
    v = v * 10 + d;
    p->pos++;
  }
  return v;
}

/* An attribute value kept verbatim: brackets balanced, quoted strings (with escapes)
 * skipped whole; it ends at a ',' or a blank at depth 0, at the end of the line or a
 * comment, or at a closing bracket it did not open. mode 1: blanks belong to the value
 * (custom-call "literal=s32[] 5"); mode 2: exactly one bracketed group (a layout). An
 * empty value ("padding=" of a scalar pad) is allowed; a value never starts on the
 * next line. */
static void scan_value(parser *p, int mode, const char **out, size_t *out_len) {
  int blanks_inside = mode == 1;
  while (p->pos < p->n && is_blank((unsigned char)p->s[p->pos])) p->pos++;
  const char *s = p->s;
  size_t start = p->pos, q = start, n = p->n;
  char closer[OCL_PARSE_MAX_DEPTH];
  size_t opened[OCL_PARSE_MAX_DEPTH];
  int depth = 0;
  while (q < n) {
    char c = s[q];
    if (c == '"') {
      size_t open = q++;
      while (q < n && s[q] != '"') q += (s[q] == '\\' && q + 1 < n) ? 2 : 1;
      if (q >= n) fail_at(p, open, "unterminated string (expected a closing '\"')");
      q++;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      if (depth >= OCL_PARSE_MAX_DEPTH)
        fail_at(p, q, "attribute value nested more than %d deep", OCL_PARSE_MAX_DEPTH);
      closer[depth] = c == '{' ? '}' : c == '[' ? ']' : ')';
      opened[depth++] = q++;
      continue;
    }
    if (c == '}' || c == ']' || c == ')') {
      if (depth == 0) break;
      if (c != closer[depth - 1]) {
        long line, col;
        line_col(p, opened[depth - 1], &line, &col);
        fail_at(p, q, "expected '%c' to close the '%c' at %ld:%ld, got '%c'", closer[depth - 1],
                s[opened[depth - 1]], line, col, c);
      }
      depth--;
      q++;
      if (mode == 2 && depth == 0) break;
      continue;
    }
    if (depth == 0 && (c == ',' || c == '\n' || c == '\r' || (!blanks_inside && is_blank((unsigned char)c)) ||
                       (c == '/' && q + 1 < n && (s[q + 1] == '/' || s[q + 1] == '*'))))
      break;
    q++;
  }
  if (depth > 0) {
    long line, col;
    line_col(p, opened[depth - 1], &line, &col);
    char what[96];
    snprintf(what, sizeof what, "'%c' to close the '%c' at %ld:%ld", closer[depth - 1], s[opened[depth - 1]], line,
             col);
    fail_expected_at(p, q, what);
  }
  size_t end = q;
  while (blanks_inside && end > start && is_blank((unsigned char)s[end - 1])) end--;
  *out = s + start;
  *out_len = end - start;
  p->pos = q;
}

/* ------------------------------------------------------------------------------------ */
/* Name tables                                                                           */

typedef struct htab {
  const char **keys;
  size_t *lens;
  void **vals;
  size_t cap, n;
} htab;

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static void *ht_get(const htab *h, const char *k, size_t n) {
  if (!h->cap) return NULL;
  size_t mask = h->cap - 1, i = (size_t)hash_bytes(k, n) & mask;
  while (h->keys[i]) {
    if (h->lens[i] == n && memcmp(h->keys[i], k, n) == 0) return h->vals[i];
    i = (i + 1) & mask;
  }
  return NULL;
}

static void ht_insert_raw(htab *h, const char *k, size_t n, void *v) {
  size_t mask = h->cap - 1, i = (size_t)hash_bytes(k, n) & mask;
  while (h->keys[i]) i = (i + 1) & mask;
  h->keys[i] = k;
  h->lens[i] = n;
  h->vals[i] = v;
  h->n++;
}

/* k must outlive the table (an arena copy); the caller has checked it is new. */
static void ht_put(parser *p, htab *h, const char *k, size_t n, void *v) {
  if ((h->n + 1) * 2 > h->cap) {
    htab old = *h;
    size_t cap = old.cap ? old.cap * 2 : 16;
    h->keys = palloc_n(p, cap, sizeof *h->keys);
    h->lens = palloc_n(p, cap, sizeof *h->lens);
    h->vals = palloc_n(p, cap, sizeof *h->vals);
    h->cap = cap;
    h->n = 0;
    for (size_t i = 0; i < old.cap; i++)
      if (old.keys[i]) ht_insert_raw(h, old.keys[i], old.lens[i], old.vals[i]);
  }
  ht_insert_raw(h, k, n, v);
}

/* ------------------------------------------------------------------------------------ */
/* Shapes                                                                                */

static const struct {
  const char *name;
  int dtype;
} dtype_names[] = {
    {"pred", KILN_DTYPE_PRED}, {"s8", KILN_DTYPE_S8},     {"s16", KILN_DTYPE_S16}, {"s32", KILN_DTYPE_S32},
    {"s64", KILN_DTYPE_S64},   {"u8", KILN_DTYPE_U8},     {"u16", KILN_DTYPE_U16}, {"u32", KILN_DTYPE_U32},
    {"u64", KILN_DTYPE_U64},   {"f16", KILN_DTYPE_F16},   {"bf16", KILN_DTYPE_BF16}, {"f32", KILN_DTYPE_F32},
    {"f64", KILN_DTYPE_F64},   {"token", OCL_DTYPE_TOKEN},
};

static const char *dtype_name(int dtype) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].dtype == dtype) return dtype_names[i].name;
  return dtype == 0 ? "tuple" : "?";
}

size_t ocl_dtype_size(int dtype) {
  switch (dtype) {
    case KILN_DTYPE_PRED: case KILN_DTYPE_S8: case KILN_DTYPE_U8: return 1;
    case KILN_DTYPE_S16: case KILN_DTYPE_U16: case KILN_DTYPE_F16: case KILN_DTYPE_BF16: return 2;
    case KILN_DTYPE_S32: case KILN_DTYPE_U32: case KILN_DTYPE_F32: return 4;
    case KILN_DTYPE_S64: case KILN_DTYPE_U64: case KILN_DTYPE_F64: return 8;
    default: return 0;
  }
}

int64_t ocl_shape_elems(const ocl_shape *s) {
  if (!s || s->dtype == 0 || s->dtype == OCL_DTYPE_TOKEN) return 0;
  int64_t n = 1;
  for (int i = 0; i < s->rank && i < OCL_MAX_RANK; i++) n *= s->dims[i]; /* bounded at parse time */
  return n;
}

/* Skips a layout ("{1,0}", "{1,0:T(8,128)S(1)}", "{:S(1)}") right after ']': the plugin
 * lays every array out densely in row-major order whatever the layout says. */
static void skip_layout(parser *p) {
  const char *v;
  size_t n;
  scan_value(p, 2, &v, &n);
}

static void parse_shape(parser *p, ocl_shape *out, int depth);

static void parse_tuple_shape(parser *p, ocl_shape *out, int depth) {
  size_t open = p->pos;
  p->pos++; /* '(' */
  if (depth >= OCL_PARSE_MAX_DEPTH) fail_at(p, open, "tuple shape nested more than %d deep", OCL_PARSE_MAX_DEPTH);
  out->dtype = 0;
  int n = 0, cap = 0;
  ocl_shape *elems = NULL;
  if (!accept(p, ')')) {
    for (;;) {
      elems = grow(p, elems, n, &cap, sizeof *elems);
      parse_shape(p, &elems[n++], depth + 1);
      if (accept(p, ')')) break;
      if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or ')' in the tuple shape");
    }
  }
  out->n_elems = n;
  out->elems = elems;
}

static void parse_shape(parser *p, ocl_shape *out, int depth) {
  memset(out, 0, sizeof *out);
  skip_ws(p);
  size_t start = p->pos;
  if (peek_raw(p) == '(') {
    parse_tuple_shape(p, out, depth);
    return;
  }
  const char *t;
  size_t tn;
  if (!ident(p, 0, &t, &tn) || peek_raw(p) != '[') fail_expected_at(p, start, "a shape (like f32[2,3] or (s32[], f32[]))");
  out->dtype = -1;
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (word_is(t, tn, dtype_names[i].name)) out->dtype = dtype_names[i].dtype;
  if (out->dtype < 0)
    fail_at(p, start,
            "unsupported element type '%.*s' (the OpenCL plugin handles pred, s8, s16, s32, s64, u8, u16, u32, u64, "
            "f16, bf16, f32, f64 and token)",
            (int)(tn > 40 ? 40 : tn), t);
  p->pos++; /* '[' */
  /* The product of the dimensions, zeros counted as ones, must leave a byte size that
   * fits in 63 bits: then no element count or stride a generator computes from the
   * dims can overflow, even for shapes with a zero dimension. */
  int64_t span = 1;
  if (!accept(p, ']')) {
    for (;;) {
      skip_ws(p);
      size_t dpos = p->pos;
      if (peek_raw(p) == '<' || peek_raw(p) == '?')
        fail_at(p, dpos, "dynamic dimensions ('<=N' or '?') are not supported by the OpenCL plugin");
      if (out->rank >= OCL_MAX_RANK) fail_at(p, start, "shape has more than %d dimensions", OCL_MAX_RANK);
      int64_t d = parse_uint(p, "a dimension size", INT64_MAX);
      int64_t nz = d ? d : 1;
      if (span > INT64_MAX / 8 / nz) fail_at(p, start, "shape is too large: its byte size does not fit in 63 bits");
      span *= nz;
      out->dims[out->rank++] = d;
      if (accept(p, ']')) break;
      if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or ']' in the dimensions");
    }
  }
  if (out->dtype == OCL_DTYPE_TOKEN && out->rank) fail_at(p, start, "token shapes have no dimensions (token[])");
  if (peek_raw(p) == '{') skip_layout(p);
}

static int shapes_equal(const ocl_shape *a, const ocl_shape *b) {
  if (a->dtype != b->dtype) return 0;
  if (a->dtype == 0) {
    if (a->n_elems != b->n_elems) return 0;
    for (int i = 0; i < a->n_elems; i++)
      if (!shapes_equal(&a->elems[i], &b->elems[i])) return 0; /* depth bounded by parsing */
    return 1;
  }
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

/* Shape text for messages; truncated to cap. */
static void shape_str(const ocl_shape *s, char *buf, size_t cap, int depth) {
  size_t k = 0;
  int w;
#define PUT(...)                                              \
  do {                                                        \
    w = snprintf(buf + k, cap - k, __VA_ARGS__);              \
    if (w < 0 || (size_t)w >= cap - k) return;                \
    k += (size_t)w;                                           \
  } while (0)
  if (cap == 0) return;
  buf[0] = 0;
  if (s->dtype == 0) {
    PUT("(");
    for (int i = 0; i < s->n_elems; i++) {
      if (i) PUT(", ");
      if (depth > 4) {
        PUT("...");
        break;
      }
      shape_str(&s->elems[i], buf + k, cap - k, depth + 1);
      k += strlen(buf + k);
    }
    PUT(")");
    return;
  }
  PUT("%s[", dtype_name(s->dtype));
  for (int i = 0; i < s->rank; i++) PUT("%s%lld", i ? "," : "", (long long)s->dims[i]);
  PUT("]");
#undef PUT
}

/* ------------------------------------------------------------------------------------ */
/* Constants                                                                             */

typedef struct litw {
  unsigned char *buf; /* NULL: check the text only */
  size_t off, cap;
} litw;

/* Length of the number-like token at the cursor ("1.5e-3", "-inf", "0x1p-3", "true"). */
static size_t number_token_len(const parser *p) {
  const char *s = p->s + p->pos;
  size_t avail = p->n - p->pos, n = 0;
  if (n < avail && (s[n] == '-' || s[n] == '+')) n++;
  while (n < avail) {
    char c = s[n];
    if (is_digit((unsigned char)c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '_') {
      n++;
    } else if ((c == '-' || c == '+') && n > 0 &&
               (s[n - 1] == 'e' || s[n - 1] == 'E' || s[n - 1] == 'p' || s[n - 1] == 'P')) {
      n++;
    } else {
      break;
    }
  }
  return n;
}

static void put_bytes(parser *p, litw *w, const void *v, size_t size) {
  if (!w->buf) return;
  if (w->off + size > w->cap) fail_at(p, p->pos, "internal error: constant overran its buffer");
  memcpy(w->buf + w->off, v, size);
  w->off += size;
}

/* Rounds v to the nearest binary float with ebits exponent and mbits fraction bits
 * (ties to even), returning its bit pattern: f16 is (5, 10), bf16 (8, 7). Done in
 * double arithmetic that is exact at every step (scaling by powers of two, floor), so
 * it does not depend on the FPU's rounding mode. */
static uint16_t round_to_small_float(double v, int ebits, int mbits) {
  uint16_t sign = signbit(v) ? (uint16_t)0x8000u : 0;
  int bias = (1 << (ebits - 1)) - 1;
  uint16_t inf = (uint16_t)(((1u << ebits) - 1) << mbits);
  if (isnan(v)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
  double a = fabs(v);
  if (isinf(a)) return (uint16_t)(sign | inf);
  if (a == 0) return sign;
  int e;
  frexp(a, &e);
  int E = e - 1; /* a = 1.f * 2^E */
  if (E < 1 - bias) E = 1 - bias; /* subnormal range: fixed quantum */
  double scaled = ldexp(a, mbits - E);
  double fl = floor(scaled), frac = scaled - fl;
  uint64_t q = (uint64_t)fl;
  if (frac > 0.5 || (frac == 0.5 && (q & 1))) q++;
  if (q == (1ull << (mbits + 1))) { /* rounded up into the next binade */
    q >>= 1;
    E++;
  }
  int biased = q >= (1ull << mbits) ? E + bias : 0;
  if (biased >= (1 << ebits) - 1) return (uint16_t)(sign | inf);
  return (uint16_t)(sign | ((unsigned)biased << mbits) | (unsigned)(q & ((1ull << mbits) - 1)));
}

/* [+-]?digits into sign and magnitude; 0 when malformed or beyond 64 bits. */
static int parse_int_token(const char *t, int *neg, uint64_t *mag) {
  *neg = 0;
  if (*t == '-' || *t == '+') *neg = *t++ == '-';
  if (!*t) return 0;
  uint64_t v = 0;
  for (; *t; t++) {
    if (!is_digit((unsigned char)*t)) return 0;
    unsigned d = (unsigned)(*t - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  *mag = v;
  return 1;
}

static int is_signed_int(int dtype) {
  return dtype == KILN_DTYPE_S8 || dtype == KILN_DTYPE_S16 || dtype == KILN_DTYPE_S32 || dtype == KILN_DTYPE_S64;
}

static void parse_int_element(parser *p, const char *tok, size_t pos, int dtype, litw *w) {
  int neg;
  uint64_t mag;
  if (!parse_int_token(tok, &neg, &mag)) {
    if (tok[0] && strspn(tok + (tok[0] == '-' || tok[0] == '+'), "0123456789") == strlen(tok + (tok[0] == '-' || tok[0] == '+')))
      fail_at(p, pos, "value %s is out of range for %s", tok, dtype_name(dtype));
    fail_at(p, pos, "expected an integer for %s, got '%s'", dtype_name(dtype), tok);
  }
  size_t size = ocl_dtype_size(dtype);
  int bits = (int)size * 8;
  int ok;
  if (is_signed_int(dtype)) {
    uint64_t maxpos = UINT64_MAX >> (65 - bits); /* 2^(bits-1) - 1 */
    ok = neg ? mag <= maxpos + 1 : mag <= maxpos;
  } else {
    ok = (!neg || mag == 0) && (bits == 64 || mag <= (UINT64_MAX >> (64 - bits)));
  }
  if (!ok) fail_at(p, pos, "value %s is out of range for %s", tok, dtype_name(dtype));
  /* Two's complement in unsigned arithmetic: no signed overflow for INT64_MIN. */
  uint64_t u = neg ? 0 - mag : mag;
  switch (size) {
    case 1: { uint8_t v = (uint8_t)u; put_bytes(p, w, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)u; put_bytes(p, w, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)u; put_bytes(p, w, &v, 4); break; }
    default: put_bytes(p, w, &u, 8); break;
  }
}

/* The NaN of dtype with the given sign and payload (0: the quiet NaN). */
static void put_nan(parser *p, litw *w, int dtype, int neg, uint64_t payload) {
  switch (dtype) {
    case KILN_DTYPE_F16: {
      uint16_t m = (uint16_t)(payload & 0x3ffu);
      uint16_t b = (uint16_t)((neg ? 0x8000u : 0) | 0x7c00u | (m ? m : 0x200u));
      put_bytes(p, w, &b, 2);
      break;
    }
    case KILN_DTYPE_BF16: {
      uint16_t m = (uint16_t)(payload & 0x7fu);
      uint16_t b = (uint16_t)((neg ? 0x8000u : 0) | 0x7f80u | (m ? m : 0x40u));
      put_bytes(p, w, &b, 2);
      break;
    }
    case KILN_DTYPE_F32: {
      uint32_t m = (uint32_t)(payload & 0x7fffffu);
      uint32_t b = (neg ? 0x80000000u : 0) | 0x7f800000u | (m ? m : 0x400000u);
      put_bytes(p, w, &b, 4);
      break;
    }
    default: {
      uint64_t m = payload & 0xfffffffffffffull;
      uint64_t b = (neg ? 0x8000000000000000ull : 0) | 0x7ff0000000000000ull | (m ? m : 0x8000000000000ull);
      put_bytes(p, w, &b, 8);
      break;
    }
  }
}

static void put_inf(parser *p, litw *w, int dtype, int neg) {
  switch (dtype) {
    case KILN_DTYPE_F16: { uint16_t b = (uint16_t)((neg ? 0x8000u : 0) | 0x7c00u); put_bytes(p, w, &b, 2); break; }
    case KILN_DTYPE_BF16: { uint16_t b = (uint16_t)((neg ? 0x8000u : 0) | 0x7f80u); put_bytes(p, w, &b, 2); break; }
    case KILN_DTYPE_F32: { uint32_t b = (neg ? 0x80000000u : 0) | 0x7f800000u; put_bytes(p, w, &b, 4); break; }
    default: { uint64_t b = (neg ? 0x8000000000000000ull : 0) | 0x7ff0000000000000ull; put_bytes(p, w, &b, 8); break; }
  }
}

static void parse_float_element(parser *p, const char *tok, size_t pos, int dtype, litw *w) {
  const char *body = tok;
  int neg = 0;
  if (*body == '-' || *body == '+') neg = *body++ == '-';
  if (strcmp(body, "nan") == 0) {
    uint64_t payload = 0;
    if (peek_raw(p) == '(') { /* nan(0x<payload>) */
      p->pos++;
      size_t ppos = p->pos;
      if (!(p->pos + 2 < p->n && p->s[p->pos] == '0' && (p->s[p->pos + 1] == 'x' || p->s[p->pos + 1] == 'X')))
        fail_expected_at(p, ppos, "a hexadecimal NaN payload like 0x1");
      p->pos += 2;
      int digits = 0;
      for (;; p->pos++, digits++) {
        int c = peek_raw(p);
        int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (d < 0) break;
        if (payload >> 60) fail_at(p, ppos, "NaN payload does not fit in 64 bits");
        payload = payload << 4 | (uint64_t)d;
      }
      if (!digits) fail_expected_at(p, p->pos, "a hexadecimal NaN payload like 0x1");
      expect(p, ')', "')' closing the NaN payload");
    }
    put_nan(p, w, dtype, neg, payload);
    return;
  }
  if (strcmp(body, "inf") == 0 || strcmp(body, "infinity") == 0) {
    put_inf(p, w, dtype, neg);
    return;
  }
  /* strtod accepts more than numbers ("nan(...)", "infinity"); only digits get there. */
  if (!(is_digit((unsigned char)body[0]) || (body[0] == '.' && is_digit((unsigned char)body[1]))))
    fail_at(p, pos, "expected a number for %s, got '%s'", dtype_name(dtype), tok);
  char buf[OCL_PARSE_MAX_NUMBER + 1];
  size_t n = strlen(tok);
  memcpy(buf, tok, n + 1);
  if (p->decimal_point != '.')
    for (size_t i = 0; i < n; i++)
      if (buf[i] == '.') buf[i] = p->decimal_point;
  char *end;
  if (dtype == KILN_DTYPE_F32) {
    float f = strtof(buf, &end);
    if (end != buf + n) fail_at(p, pos, "expected a number for f32, got '%s'", tok);
    if (isinf(f)) fail_at(p, pos, "value %s is out of range for f32", tok);
    put_bytes(p, w, &f, 4);
    return;
  }
  double d = strtod(buf, &end);
  if (end != buf + n) fail_at(p, pos, "expected a number for %s, got '%s'", dtype_name(dtype), tok);
  if (isinf(d)) fail_at(p, pos, "value %s is out of range for %s", tok, dtype_name(dtype));
  if (dtype == KILN_DTYPE_F64) {
    put_bytes(p, w, &d, 8);
    return;
  }
  /* Straight from the double to 16 bits: one rounding (through float would be two). */
  uint16_t b = dtype == KILN_DTYPE_F16 ? round_to_small_float(d, 5, 10) : round_to_small_float(d, 8, 7);
  if ((b & 0x7fffu) == (dtype == KILN_DTYPE_F16 ? 0x7c00u : 0x7f80u))
    fail_at(p, pos, "value %s is out of range for %s", tok, dtype_name(dtype));
  put_bytes(p, w, &b, 2);
}

static void parse_scalar(parser *p, int dtype, litw *w) {
  skip_ws(p);
  size_t pos = p->pos;
  size_t len = number_token_len(p);
  if (len == 0) fail_expected_at(p, pos, dtype == KILN_DTYPE_PRED ? "'true' or 'false'" : "a number");
  if (len > OCL_PARSE_MAX_NUMBER) fail_at(p, pos, "number too long in constant");
  char tok[OCL_PARSE_MAX_NUMBER + 1];
  memcpy(tok, p->s + pos, len);
  tok[len] = 0;
  p->pos += len;
  switch (dtype) {
    case KILN_DTYPE_PRED: {
      uint8_t v;
      if (strcmp(tok, "true") == 0 || strcmp(tok, "1") == 0) v = 1;
      else if (strcmp(tok, "false") == 0 || strcmp(tok, "0") == 0) v = 0;
      else fail_at(p, pos, "expected 'true' or 'false' for pred, got '%s'", tok);
      put_bytes(p, w, &v, 1);
      return;
    }
    case KILN_DTYPE_F16: case KILN_DTYPE_BF16: case KILN_DTYPE_F32: case KILN_DTYPE_F64:
      parse_float_element(p, tok, pos, dtype, w);
      return;
    default:
      parse_int_element(p, tok, pos, dtype, w);
      return;
  }
}

/* The values of dimension dim of an array constant: "{...}" nested once per dimension. */
static void parse_array_values(parser *p, const ocl_shape *s, int dim, litw *w) {
  skip_ws(p);
  size_t open = p->pos;
  expect(p, '{', "'{' opening a dimension of the constant");
  int64_t count = 0;
  if (!accept(p, '}')) {
    for (;;) {
      if (count >= s->dims[dim]) {
        char sh[128];
        shape_str(s, sh, sizeof sh, 0);
        fail_at(p, open, "constant has more than %lld values in dimension %d, but its shape is %s",
                (long long)s->dims[dim], dim, sh);
      }
      if (dim == s->rank - 1) parse_scalar(p, s->dtype, w);
      else parse_array_values(p, s, dim + 1, w); /* depth bounded by the rank */
      count++;
      if (accept(p, '}')) break;
      if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or '}' in the constant");
    }
  }
  if (count != s->dims[dim]) {
    char sh[128];
    shape_str(s, sh, sizeof sh, 0);
    fail_at(p, open, "constant has %lld values in dimension %d, but its shape %s needs %lld", (long long)count, dim,
            sh, (long long)s->dims[dim]);
  }
}

static void parse_literal_value(parser *p, const ocl_shape *s, litw *w, int depth) {
  skip_ws(p);
  size_t pos = p->pos;
  if (s->dtype == 0) {
    if (depth >= OCL_PARSE_MAX_DEPTH) fail_at(p, pos, "tuple constant nested more than %d deep", OCL_PARSE_MAX_DEPTH);
    expect(p, '(', "'(' opening the tuple constant");
    int n = 0;
    if (!accept(p, ')')) {
      for (;;) {
        if (n >= s->n_elems) fail_at(p, pos, "tuple constant has more elements than its shape's %d", s->n_elems);
        /* Older XLA wrote each element with its shape: "(f32[2] {1, 2}, s32[] 3)". */
        skip_ws(p);
        size_t save = p->pos;
        const char *id;
        size_t idn;
        if (ident(p, 0, &id, &idn) && peek_raw(p) == '[') {
          ocl_shape es;
          p->pos = save;
          parse_shape(p, &es, depth + 1);
          if (!shapes_equal(&es, &s->elems[n]))
            fail_at(p, save, "tuple constant element %d is written with a shape that differs from the tuple's", n);
        } else {
          p->pos = save;
        }
        parse_literal_value(p, &s->elems[n], w, depth + 1);
        n++;
        if (accept(p, ')')) break;
        if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or ')' in the tuple constant");
      }
    }
    if (n != s->n_elems) fail_at(p, pos, "tuple constant has %d elements, but its shape has %d", n, s->n_elems);
    return;
  }
  if (s->dtype == OCL_DTYPE_TOKEN) fail_at(p, pos, "constants of token type are not supported");
  if (peek_raw(p) == '{') {
    size_t save = p->pos;
    p->pos++;
    skip_ws(p);
    if (p->n - p->pos >= 3 && memcmp(p->s + p->pos, "...", 3) == 0)
      fail_at(p, save, "the constant's values were elided ('{...}'); the host must print large constants in full");
    p->pos = save;
  }
  if (s->rank == 0) parse_scalar(p, s->dtype, w);
  else parse_array_values(p, s, 0, w);
}

/* Elements and bytes of every array leaf of s, in order. */
static void literal_size(parser *p, const ocl_shape *s, size_t pos, int64_t *elems, int64_t *bytes) {
  if (s->dtype == 0) {
    for (int i = 0; i < s->n_elems; i++) literal_size(p, &s->elems[i], pos, elems, bytes);
    return;
  }
  int64_t e = ocl_shape_elems(s), b = e * (int64_t)ocl_dtype_size(s->dtype); /* < 2^63 by parse_shape */
  if (*bytes > INT64_MAX - b) fail_at(p, pos, "constant is too large");
  *elems += e;
  *bytes += b;
}

static void parse_constant(parser *p, ocl_instr *ins) {
  skip_ws(p);
  size_t pos = p->pos;
  int64_t elems = 0, bytes = 0;
  literal_size(p, &ins->shape, pos, &elems, &bytes);
  litw w = {NULL, 0, 0};
  /* Every value takes at least one character of text, so a shape that claims more
   * elements than there is text left cannot be satisfied: check it without allocating
   * (the check fails with the precise message). */
  if ((uint64_t)elems > (uint64_t)(p->n - p->pos)) {
    parse_literal_value(p, &ins->shape, &w, 0);
    fail_at(p, pos, "internal error: constant shorter than its text");
  }
  w.cap = (size_t)bytes;
  w.buf = palloc(p, w.cap ? w.cap : 1);
  parse_literal_value(p, &ins->shape, &w, 0);
  if (w.off != w.cap) fail_at(p, pos, "internal error: constant filled %zu of %zu bytes", w.off, w.cap);
  ins->literal = w.buf;
  ins->literal_bytes = w.cap;
}

/* ------------------------------------------------------------------------------------ */
/* Instructions and computations                                                         */

/* A computation named by an attribute, resolved once every computation is known. */
typedef struct ref {
  const char *name;
  size_t len, pos;
} ref;

typedef struct pinstr {
  ocl_instr *ins;
  size_t pos;
  ref *calls;
  int n_calls, cap_calls;
} pinstr;

typedef struct pcomp {
  ocl_comp *c;
  size_t pos;
  pinstr *pis;
  int n, cap;
  htab names;
  int root_idx;
  /* The first operand that named no earlier instruction: reported when the
   * computation ends, where it can say whether the name is defined later. */
  const char *missing;
  size_t missing_len, missing_pos;
  int missing_user;
} pcomp;

typedef struct pmodule {
  pcomp *pcs;
  int n, cap;
  htab names;
} pmodule;

/* Attributes naming computations, as XLA and kiln spell them. */
static int is_computation_key(const char *k) {
  static const char *const keys[] = {"to_apply",         "calls",          "called_computations", "condition",
                                     "body",             "select",         "scatter",             "true_computation",
                                     "false_computation", "branch_computations", "comparator"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp(k, keys[i]) == 0) return 1;
  return 0;
}

static void add_call(parser *p, pinstr *pi, const char *s, size_t n, size_t pos) {
  pi->calls = grow(p, pi->calls, pi->n_calls, &pi->cap_calls, sizeof *pi->calls);
  ref *r = &pi->calls[pi->n_calls++];
  r->name = s;
  r->len = n;
  r->pos = pos;
}

/* A computation-valued attribute: "%c", "{%a, %b}" or (calls) "%a, %b". Returns the
 * value's text span. */
static void parse_called_value(parser *p, pinstr *pi, const char *key, const char **v, size_t *vn) {
  while (p->pos < p->n && is_blank((unsigned char)p->s[p->pos])) p->pos++;
  size_t start = p->pos;
  const char *s;
  size_t n, pos;
  if (peek_raw(p) == '{') {
    p->pos++;
    if (!accept(p, '}')) {
      for (;;) {
        parse_name(p, "a computation name", &s, &n, &pos);
        add_call(p, pi, s, n, pos);
        if (accept(p, '}')) break;
        if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or '}' in the computation list");
      }
    }
  } else {
    parse_name(p, "a computation name", &s, &n, &pos);
    add_call(p, pi, s, n, pos);
    /* kiln prints several callees as "calls=%a, %b": a name not followed by '='
     * continues the list instead of starting the next attribute. */
    while (strcmp(key, "calls") == 0) {
      size_t save = p->pos;
      if (!accept(p, ',')) break;
      skip_ws(p);
      pos = p->pos;
      if (!ident(p, 1, &s, &n) || peek(p) == '=') {
        p->pos = save;
        break;
      }
      add_call(p, pi, s, n, pos);
    }
  }
  *v = p->s + start;
  *vn = p->pos - start;
}

/* An attribute value that must be a plain integer ("index=2"). */
static int64_t int_attr(parser *p, const ocl_instr *ins, const char *key, size_t pos) {
  const char *v = ocl_attr(ins, key);
  if (!v) fail_at(p, pos, "%s '%s' needs a %s= attribute", ins->opcode, ins->name, key);
  const char *q = v;
  int neg = *q == '-';
  if (neg) q++;
  if (!is_digit((unsigned char)*q)) fail_at(p, pos, "%s '%s': %s=%s is not an integer", ins->opcode, ins->name, key, v);
  int64_t r = 0;
  for (; is_digit((unsigned char)*q); q++) {
    int d = *q - '0';
    if (r > (INT64_MAX - d) / 10) fail_at(p, pos, "%s '%s': %s=%s is out of range", ins->opcode, ins->name, key, v);
    r = r * 10 + d;
  }
  if (*q) fail_at(p, pos, "%s '%s': %s=%s is not an integer", ins->opcode, ins->name, key, v);
  return neg ? -r : r;
}

static void parse_attributes(parser *p, pinstr *pi) {
  ocl_instr *ins = pi->ins;
  int cap = 0;
  while (accept(p, ',')) {
    skip_ws(p);
    size_t kpos = p->pos;
    const char *k;
    size_t kn;
    if (!ident(p, 0, &k, &kn)) fail_expected_at(p, kpos, "an attribute name");
    char *key = pstrndup(p, k, kn);
    for (int i = 0; i < ins->n_attrs; i++)
      if (strcmp(ins->attr_keys[i], key) == 0) fail_at(p, kpos, "attribute '%s' given twice", key);
    if (ins->n_attrs >= OCL_PARSE_MAX_ATTRS) fail_at(p, kpos, "more than %d attributes", OCL_PARSE_MAX_ATTRS);
    if (peek_raw(p) != '=') fail_expected_at(p, p->pos, "'=' after the attribute name");
    p->pos++;
    const char *v;
    size_t vn;
    if (is_computation_key(key)) parse_called_value(p, pi, key, &v, &vn);
    else scan_value(p, strcmp(key, "literal") == 0, &v, &vn);
    int n = ins->n_attrs, c2 = cap;
    ins->attr_keys = grow(p, ins->attr_keys, n, &c2, sizeof *ins->attr_keys);
    ins->attr_values = grow(p, ins->attr_values, n, &cap, sizeof *ins->attr_values);
    ins->attr_keys[n] = key;
    ins->attr_values[n] = pstrndup(p, v, vn);
    ins->n_attrs = n + 1;
  }
}

/* Operands are resolved as they are read: they must be earlier instructions of the same
 * computation, which keeps the graph acyclic and instrs[] in operands-first order (as
 * kiln prints it). The printed shape, when there is one, must match the definition. */
static void parse_operands(parser *p, pcomp *pc, ocl_instr *ins) {
  int n = 0, cap = 0;
  ocl_instr **ops = NULL;
  if (!accept(p, ')')) {
    for (;;) {
      ops = grow(p, ops, n, &cap, sizeof *ops);
      skip_ws(p);
      size_t pos = p->pos;
      const char *s;
      size_t sn;
      ocl_shape sh;
      int has_shape = 0;
      if (peek_raw(p) == '(') {
        parse_shape(p, &sh, 0);
        has_shape = 1;
      } else if (ident(p, 1, &s, &sn) && p->s[pos] != '%' && peek_raw(p) == '[') {
        p->pos = pos; /* a type name: the operand's shape comes first */
        parse_shape(p, &sh, 0);
        has_shape = 1;
      } else {
        p->pos = pos;
      }
      const char *name;
      size_t len, npos;
      parse_name(p, "an operand name", &name, &len, &npos);
      intptr_t di = (intptr_t)ht_get(&pc->names, name, len);
      ocl_instr *def = di ? pc->pis[di - 1].ins : NULL;
      if (def == ins) def = NULL; /* its own name: not defined yet */
      if (!def && !pc->missing) {
        pc->missing = name;
        pc->missing_len = len;
        pc->missing_pos = npos;
        pc->missing_user = ins->index;
      }
      if (def && has_shape && !shapes_equal(&sh, &def->shape)) {
        char a[128], b[128];
        shape_str(&sh, a, sizeof a, 0);
        shape_str(&def->shape, b, sizeof b, 0);
        fail_at(p, npos, "operand '%s' is written with shape %s but defined with shape %s", def->name, a, b);
      }
      ops[n++] = def;
      if (accept(p, ')')) break;
      if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or ')' after an operand");
    }
  }
  ins->operands = n ? ops : palloc(p, sizeof *ops);
  ins->n_operands = n;
}

static void parse_instruction(parser *p, pcomp *pc) {
  skip_ws(p);
  size_t start = p->pos;
  int is_root = 0;
  {
    const char *s;
    size_t n;
    if (ident(p, 0, &s, &n) && word_is(s, n, "ROOT") && peek(p) != '=') is_root = 1;
    else p->pos = start;
  }
  const char *name;
  size_t name_len, name_pos;
  parse_name(p, "an instruction name", &name, &name_len, &name_pos);
  intptr_t prev = (intptr_t)ht_get(&pc->names, name, name_len);
  if (prev) {
    long line, col;
    line_col(p, pc->pis[prev - 1].pos, &line, &col);
    fail_at(p, name_pos, "duplicate instruction name '%.*s' (first defined at %ld:%ld)", (int)name_len, name, line, col);
  }
  expect(p, '=', "'=' after the instruction name");

  if (pc->n >= (1 << 28)) fail_at(p, start, "too many instructions");
  pc->pis = grow(p, pc->pis, pc->n, &pc->cap, sizeof *pc->pis);
  int idx = pc->n++;
  pinstr *pi = &pc->pis[idx];
  memset(pi, 0, sizeof *pi);
  ocl_instr *ins = palloc(p, sizeof *ins);
  pi->ins = ins;
  pi->pos = name_pos;
  ins->name = pstrndup(p, name, name_len);
  ins->index = idx;
  ins->parameter_number = -1;
  /* Indices, not pointers: pis[] moves as it grows. */
  ht_put(p, &pc->names, ins->name, name_len, (void *)(intptr_t)(idx + 1));
  if (is_root) {
    if (pc->root_idx >= 0)
      fail_at(p, start, "computation '%s' has more than one ROOT (also '%s')", pc->c->name,
              pc->pis[pc->root_idx].ins->name);
    pc->root_idx = idx;
  }

  parse_shape(p, &ins->shape, 0);
  skip_ws(p);
  size_t op_pos = p->pos;
  const char *op;
  size_t opn;
  if (!ident(p, 0, &op, &opn)) fail_expected_at(p, op_pos, "an opcode");
  ins->opcode = pstrndup(p, op, opn);
  expect(p, '(', "'(' after the opcode");
  if (strcmp(ins->opcode, "parameter") == 0) {
    ins->parameter_number = parse_uint(p, "a parameter number", INT32_MAX);
    expect(p, ')', "')' after the parameter number");
  } else if (strcmp(ins->opcode, "constant") == 0) {
    parse_constant(p, ins);
    expect(p, ')', "')' after the constant's value");
  } else {
    parse_operands(p, pc, ins);
  }
  parse_attributes(p, pi);

  if (strcmp(ins->opcode, "get-tuple-element") == 0) {
    ins->int_payload = int_attr(p, ins, "index", name_pos);
  } else if (strcmp(ins->opcode, "iota") == 0) {
    ins->int_payload = int_attr(p, ins, "iota_dimension", name_pos);
  } else if (strcmp(ins->opcode, "concatenate") == 0) {
    const char *v = ocl_attr(ins, "dimensions");
    int64_t d;
    if (!v || ocl_parse_int_list(v, &d, 1) != 1)
      fail_at(p, name_pos, "concatenate '%s' needs dimensions={d} with one dimension", ins->name);
    ins->int_payload = d;
  }
}

/* Resolves operands (earlier instructions of the same computation, so the graph is
 * acyclic and instrs[] is already an operands-first order), checks the printed operand
 * shapes, and fills root and params. */
static void finish_computation(parser *p, pcomp *pc, size_t close_pos) {
  ocl_comp *c = pc->c;
  if (pc->n == 0) fail_at(p, close_pos, "computation '%s' has no instructions", c->name);
  c->n_instrs = pc->n;
  c->instrs = palloc_n(p, (size_t)pc->n, sizeof *c->instrs);
  if (pc->missing) {
    intptr_t di = (intptr_t)ht_get(&pc->names, pc->missing, pc->missing_len);
    const char *user = pc->pis[pc->missing_user].ins->name;
    if (!di)
      fail_at(p, pc->missing_pos, "unknown operand '%.*s' of '%s' (no instruction of that name in computation '%s')",
              (int)(pc->missing_len > 80 ? 80 : pc->missing_len), pc->missing, user, c->name);
    long line, col;
    line_col(p, pc->pis[di - 1].pos, &line, &col);
    fail_at(p, pc->missing_pos, "operand '%s' of '%s' is defined at %ld:%ld, after its user (operands must come first)",
            pc->pis[di - 1].ins->name, user, line, col);
  }
  int n_params = 0;
  for (int i = 0; i < pc->n; i++) {
    pinstr *pi = &pc->pis[i];
    ocl_instr *ins = pi->ins;
    c->instrs[i] = ins;
    n_params += ins->parameter_number >= 0;
    if (strcmp(ins->opcode, "get-tuple-element") == 0) {
      if (ins->n_operands != 1 || ins->operands[0]->shape.dtype != 0)
        fail_at(p, pi->pos, "get-tuple-element '%s' needs one tuple-shaped operand", ins->name);
      const ocl_shape *t = &ins->operands[0]->shape;
      if (ins->int_payload < 0 || ins->int_payload >= t->n_elems)
        fail_at(p, pi->pos, "get-tuple-element '%s': index %lld is out of range for a tuple of %d", ins->name,
                (long long)ins->int_payload, t->n_elems);
      if (!shapes_equal(&ins->shape, &t->elems[ins->int_payload]))
        fail_at(p, pi->pos, "get-tuple-element '%s': its shape differs from tuple element %lld", ins->name,
                (long long)ins->int_payload);
    }
  }
  c->n_params = n_params;
  c->params = palloc_n(p, n_params ? (size_t)n_params : 1, sizeof *c->params);
  for (int i = 0; i < pc->n; i++) {
    ocl_instr *ins = pc->pis[i].ins;
    if (ins->parameter_number < 0) continue;
    if (ins->parameter_number >= n_params)
      fail_at(p, pc->pis[i].pos,
              "parameter number %lld of '%s' leaves a gap: computation '%s' has %d parameters, numbered from 0",
              (long long)ins->parameter_number, ins->name, c->name, n_params);
    if (c->params[ins->parameter_number])
      fail_at(p, pc->pis[i].pos, "parameter number %lld is given twice (also '%s')", (long long)ins->parameter_number,
              c->params[ins->parameter_number]->name);
    c->params[ins->parameter_number] = ins;
  }
  int r = pc->root_idx >= 0 ? pc->root_idx : pc->n - 1;
  c->root = c->instrs[r];
  c->root->is_root = 1;
}

static void parse_computation(parser *p, pmodule *pm) {
  skip_ws(p);
  int is_entry = accept_word(p, "ENTRY");
  const char *name;
  size_t name_len, pos;
  parse_name(p, is_entry ? "a computation name after ENTRY" : "a computation (or ENTRY)", &name, &name_len, &pos);
  if (ht_get(&pm->names, name, name_len)) fail_at(p, pos, "duplicate computation name '%.*s'", (int)name_len, name);
  if (pm->n >= (1 << 28)) fail_at(p, pos, "too many computations");
  pm->pcs = grow(p, pm->pcs, pm->n, &pm->cap, sizeof *pm->pcs);
  int ci = pm->n++;
  pcomp *pc = &pm->pcs[ci];
  memset(pc, 0, sizeof *pc);
  pc->c = palloc(p, sizeof *pc->c);
  pc->c->name = pstrndup(p, name, name_len);
  pc->c->is_entry = is_entry;
  pc->pos = pos;
  pc->root_idx = -1;
  ht_put(p, &pm->names, pc->c->name, name_len, (void *)(intptr_t)(ci + 1));

  /* The signature repeats the parameters' and root's shapes: read and checked for
   * syntax only; the instructions are what counts. */
  if (accept(p, '(')) {
    if (!accept(p, ')')) {
      for (;;) {
        const char *s;
        size_t n, ppos;
        ocl_shape sh;
        parse_name(p, "a parameter name", &s, &n, &ppos);
        expect(p, ':', "':' after the parameter name");
        parse_shape(p, &sh, 0);
        if (accept(p, ')')) break;
        if (!accept(p, ',')) fail_expected_at(p, p->pos, "',' or ')' in the parameter list");
      }
    }
    skip_ws(p);
    if (!(p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] == '>'))
      fail_expected_at(p, p->pos, "'->' and the result shape");
    p->pos += 2;
    ocl_shape result;
    parse_shape(p, &result, 0);
  }
  /* Computation attributes (execution_thread="main"): not needed by the plugin. */
  while (accept(p, ',')) {
    const char *k, *v;
    size_t kn, vn;
    if (!ident(p, 0, &k, &kn)) fail_expected_at(p, p->pos, "a computation attribute");
    expect(p, '=', "'=' after the attribute name");
    scan_value(p, 0, &v, &vn);
  }
  skip_ws(p);
  size_t open = p->pos;
  expect(p, '{', "'{' opening the computation body");
  for (;;) {
    int c = peek(p);
    if (c == '}') break;
    if (c < 0) {
      long line, col;
      line_col(p, open, &line, &col);
      char what[128];
      snprintf(what, sizeof what, "'}' closing computation '%.40s' (opened at %ld:%ld)", pc->c->name, line, col);
      fail_expected_at(p, p->pos, what);
    }
    parse_instruction(p, &pm->pcs[ci]);
  }
  size_t close = p->pos++;
  finish_computation(p, &pm->pcs[ci], close);
}

/* The stack-frame tables of newer XLA dumps (FileNames, FunctionNames, FileLocations,
 * StackFrames, each followed by "N value" lines): skipped. */
static int is_stack_frame_keyword(parser *p) {
  static const char *const kws[] = {"FileNames", "FunctionNames", "FileLocations", "StackFrames"};
  size_t save = p->pos;
  const char *s;
  size_t n;
  int yes = 0;
  if (ident(p, 0, &s, &n))
    for (int i = 0; i < 4; i++) yes |= word_is(s, n, kws[i]);
  p->pos = save;
  return yes;
}

static void skip_stack_frames(parser *p) {
  for (;;) {
    if (is_stack_frame_keyword(p)) {
      const char *s;
      size_t n;
      ident(p, 0, &s, &n);
    } else if (is_digit(peek(p))) {
      parse_uint(p, "a stack-frame table id", INT64_MAX);
      int c = peek(p);
      if (c != '"' && c != '{') fail_expected_at(p, p->pos, "a quoted name or '{' in the stack-frame tables");
      const char *v;
      size_t vn;
      scan_value(p, 0, &v, &vn);
    } else {
      return;
    }
  }
}

static void parse_header(parser *p, ocl_module *m) {
  if (!accept_word(p, "HloModule")) {
    m->name = pstrndup(p, "", 0); /* headerless text: just computations */
    return;
  }
  skip_ws(p);
  size_t start = p->pos;
  /* Module names are identifiers in kiln's output; accept anything up to a separator. */
  while (p->pos < p->n && !is_space((unsigned char)p->s[p->pos]) && p->s[p->pos] != ',' && p->s[p->pos] != '{' &&
         p->s[p->pos] != '}')
    p->pos++;
  if (p->pos == start) fail_expected_at(p, start, "a module name after HloModule");
  m->name = pstrndup(p, p->s + start, p->pos - start);
  /* Module attributes (entry_computation_layout, is_scheduled, input_output_alias...):
   * the instructions carry everything the plugin needs. */
  while (accept(p, ',')) {
    const char *k, *v;
    size_t kn, vn;
    if (!ident(p, 0, &k, &kn)) fail_expected_at(p, p->pos, "a module attribute name");
    expect(p, '=', "'=' after the module attribute name");
    scan_value(p, 0, &v, &vn);
  }
  skip_stack_frames(p);
}

/* Resolves called computations and rejects call cycles (a generator that follows calls
 * recursively must terminate). */
static void resolve_calls(parser *p, pmodule *pm) {
  /* Edges per computation, flattened for an iterative depth-first search. */
  int *edge_start = palloc_n(p, (size_t)pm->n + 1, sizeof *edge_start);
  int n_edges = 0;
  for (int ci = 0; ci < pm->n; ci++) {
    pcomp *pc = &pm->pcs[ci];
    edge_start[ci] = n_edges;
    for (int i = 0; i < pc->n; i++) {
      pinstr *pi = &pc->pis[i];
      ocl_instr *ins = pi->ins;
      ins->n_called = pi->n_calls;
      ins->called = palloc_n(p, pi->n_calls ? (size_t)pi->n_calls : 1, sizeof *ins->called);
      for (int k = 0; k < pi->n_calls; k++) {
        ref *r = &pi->calls[k];
        intptr_t j = (intptr_t)ht_get(&pm->names, r->name, r->len);
        if (!j)
          fail_at(p, r->pos, "unknown computation '%.*s' called by '%s'", (int)(r->len > 80 ? 80 : r->len), r->name,
                  ins->name);
        ins->called[k] = pm->pcs[j - 1].c;
        if (n_edges == INT32_MAX) fail_at(p, r->pos, "too many calls");
        n_edges++;
      }
    }
  }
  edge_start[pm->n] = n_edges;
  int *edges = palloc_n(p, n_edges ? (size_t)n_edges : 1, sizeof *edges);
  size_t *edge_pos = palloc_n(p, n_edges ? (size_t)n_edges : 1, sizeof *edge_pos);
  for (int ci = 0, e = 0; ci < pm->n; ci++) {
    pcomp *pc = &pm->pcs[ci];
    for (int i = 0; i < pc->n; i++)
      for (int k = 0; k < pc->pis[i].n_calls; k++) {
        ref *r = &pc->pis[i].calls[k];
        edges[e] = (int)(intptr_t)ht_get(&pm->names, r->name, r->len) - 1;
        edge_pos[e++] = r->pos;
      }
  }
  /* 0 unvisited, 1 on the stack, 2 done. */
  unsigned char *color = palloc_n(p, (size_t)pm->n, 1);
  int *stack = palloc_n(p, (size_t)pm->n, sizeof *stack);
  int *next = palloc_n(p, (size_t)pm->n, sizeof *next);
  for (int root = 0; root < pm->n; root++) {
    if (color[root]) continue;
    int sp = 0;
    stack[sp++] = root;
    color[root] = 1;
    next[root] = edge_start[root];
    while (sp) {
      int u = stack[sp - 1];
      if (next[u] == edge_start[u + 1]) {
        color[u] = 2;
        sp--;
        continue;
      }
      int e = next[u]++, v = edges[e];
      if (color[v] == 1)
        fail_at(p, edge_pos[e], "computation '%s' calls '%s', which is already being called on this path (call cycle)",
                pm->pcs[u].c->name, pm->pcs[v].c->name);
      if (color[v] == 0) {
        color[v] = 1;
        next[v] = edge_start[v];
        stack[sp++] = v;
      }
    }
  }
}

static void parse_module(parser *p, ocl_module *m) {
  parse_header(p, m);
  pmodule pm;
  memset(&pm, 0, sizeof pm);
  while (peek(p) >= 0) parse_computation(p, &pm);
  if (pm.n == 0) fail_expected_at(p, p->pos, "a computation");
  resolve_calls(p, &pm);
  int entry = -1;
  for (int i = 0; i < pm.n; i++)
    if (pm.pcs[i].c->is_entry) {
      if (entry >= 0)
        fail_at(p, pm.pcs[i].pos, "more than one ENTRY computation ('%s' and '%s')", pm.pcs[entry].c->name,
                pm.pcs[i].c->name);
      entry = i;
    }
  if (entry < 0) { /* XLA's rule: without ENTRY, the last computation is the entry */
    entry = pm.n - 1;
    pm.pcs[entry].c->is_entry = 1;
  }
  m->n_comps = pm.n;
  m->comps = palloc_n(p, (size_t)pm.n, sizeof *m->comps);
  for (int i = 0; i < pm.n; i++) m->comps[i] = pm.pcs[i].c;
  m->entry = pm.pcs[entry].c;
}

int ocl_parse_module(const char *text, size_t len, ocl_module **out, char *err, size_t err_cap) {
  if (out) *out = NULL;
  if (err && err_cap) err[0] = 0;
  if (!out) return -1;
  /* volatile: read again after longjmp. */
  module_impl *volatile mi = calloc(1, sizeof *mi);
  if (!mi) {
    if (err && err_cap) snprintf(err, err_cap, "out of memory");
    return -1;
  }
  parser p;
  memset(&p, 0, sizeof p);
  p.s = text ? text : "";
  p.n = text ? len : 0;
  p.a = &mi->mem;
  p.err = err;
  p.err_cap = err_cap;
  const struct lconv *lc = localeconv();
  p.decimal_point = lc && lc->decimal_point && lc->decimal_point[0] && !lc->decimal_point[1] ? lc->decimal_point[0] : '.';
  /* Every failure longjmps here; all memory is in mi's arena, so nothing leaks. */
  if (setjmp(p.fail)) {
    arena_free(&mi->mem);
    free(mi);
    return -1;
  }
  parse_module(&p, &mi->pub);
  *out = &mi->pub;
  return 0;
}

void ocl_module_free(ocl_module *m) {
  if (!m) return;
  module_impl *mi = (module_impl *)m;
  arena_free(&mi->mem);
  free(mi);
}

const char *ocl_attr(const ocl_instr *ins, const char *key) {
  if (!ins || !key) return NULL;
  for (int i = 0; i < ins->n_attrs; i++)
    if (strcmp(ins->attr_keys[i], key) == 0) return ins->attr_values[i];
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Attribute decoders: plain functions over a NUL-terminated value.                       */

static void skip_blanks(const char **q) {
  while (is_space((unsigned char)**q)) (*q)++;
}

/* An optionally negative decimal integer. */
static int read_int(const char **q, int64_t *out) {
  const char *s = *q;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (!is_digit((unsigned char)*s)) return 0;
  uint64_t v = 0;
  for (; is_digit((unsigned char)*s); s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > ((uint64_t)INT64_MAX + 1 - d) / 10) return 0;
    v = v * 10 + d;
  }
  if (!neg && v > (uint64_t)INT64_MAX) return 0;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v; /* 0 - 2^63 converts to INT64_MIN */
  *q = s;
  return 1;
}

static int at_end(const char *q) {
  skip_blanks(&q);
  return *q == 0;
}

int ocl_parse_int_list(const char *v, int64_t *out, int cap) {
  if (!v || cap < 0) return -1;
  const char *q = v;
  skip_blanks(&q);
  if (*q++ != '{') return -1;
  skip_blanks(&q);
  int n = 0;
  if (*q == '}') return at_end(q + 1) ? 0 : -1;
  for (;;) {
    int64_t x;
    skip_blanks(&q);
    if (!read_int(&q, &x) || n >= cap) return -1;
    out[n++] = x;
    skip_blanks(&q);
    if (*q == '}') return at_end(q + 1) ? n : -1;
    if (*q++ != ',') return -1;
  }
}

int ocl_parse_slice(const char *v, int64_t *start, int64_t *limit, int64_t *stride, int cap) {
  if (!v || cap < 0) return -1;
  const char *q = v;
  skip_blanks(&q);
  if (*q++ != '{') return -1;
  skip_blanks(&q);
  int n = 0;
  if (*q == '}') return at_end(q + 1) ? 0 : -1;
  for (;;) {
    int64_t a, b, c = 1;
    skip_blanks(&q);
    if (*q++ != '[') return -1;
    skip_blanks(&q);
    if (!read_int(&q, &a)) return -1;
    skip_blanks(&q);
    if (*q++ != ':') return -1;
    skip_blanks(&q);
    if (!read_int(&q, &b)) return -1;
    skip_blanks(&q);
    if (*q == ':') {
      q++;
      skip_blanks(&q);
      if (!read_int(&q, &c)) return -1;
      skip_blanks(&q);
    }
    if (*q++ != ']' || n >= cap) return -1;
    start[n] = a;
    limit[n] = b;
    stride[n] = c;
    n++;
    skip_blanks(&q);
    if (*q == '}') return at_end(q + 1) ? n : -1;
    if (*q++ != ',') return -1;
  }
}

/* "3x3x1", or with parts > 1 "0_1x1_0" (each entry parts integers joined by '_'). */
static int read_x_list(const char **q, int parts, int64_t vals[][OCL_MAX_RANK]) {
  int n = 0;
  for (;;) {
    if (n >= OCL_MAX_RANK) return -1;
    for (int k = 0; k < parts; k++) {
      if (k && *(*q)++ != '_') return -1;
      if (!read_int(q, &vals[k][n])) return -1;
    }
    n++;
    if (**q != 'x') return n;
    (*q)++;
  }
}

int ocl_parse_window(const char *v, ocl_window_dim *out, int cap) {
  static const char *const fields[] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"};
  if (!v || cap < 0) return -1;
  int64_t vals[6][2][OCL_MAX_RANK];
  int counts[6] = {0}, seen[6] = {0};
  const char *q = v;
  skip_blanks(&q);
  if (*q++ != '{') return -1;
  for (;;) {
    skip_blanks(&q);
    if (*q == '}') {
      if (!at_end(q + 1)) return -1;
      break;
    }
    int f = -1;
    for (int i = 0; i < 6; i++) {
      size_t fl = strlen(fields[i]);
      if (strncmp(q, fields[i], fl) == 0 && q[fl] == '=') {
        f = i;
        q += fl + 1;
        break;
      }
    }
    if (f < 0 || seen[f]) return -1;
    seen[f] = 1;
    counts[f] = read_x_list(&q, f == 2 ? 2 : 1, vals[f]);
    if (counts[f] < 0) return -1;
    if (*q && !is_space((unsigned char)*q) && *q != '}') return -1;
  }
  int any = 0;
  for (int i = 0; i < 6; i++) any |= seen[i];
  if (!any) return 0;
  if (!seen[0]) return -1;
  int rank = counts[0];
  for (int f = 1; f < 6; f++)
    if (seen[f] && counts[f] != rank) return -1;
  if (rank > cap) return -1;
  for (int i = 0; i < rank; i++) {
    ocl_window_dim *d = &out[i];
    d->size = vals[0][0][i];
    d->stride = seen[1] ? vals[1][0][i] : 1;
    d->pad_lo = seen[2] ? vals[2][0][i] : 0;
    d->pad_hi = seen[2] ? vals[2][1][i] : 0;
    d->lhs_dilate = seen[3] ? vals[3][0][i] : 1;
    d->rhs_dilate = seen[4] ? vals[4][0][i] : 1;
    if (seen[5] && vals[5][0][i] != 0 && vals[5][0][i] != 1) return -1;
    d->reversal = seen[5] ? (int)vals[5][0][i] : 0;
  }
  return rank;
}

int ocl_parse_padding(const char *v, ocl_pad_dim *out, int cap) {
  if (!v || cap < 0) return -1;
  const char *q = v;
  skip_blanks(&q);
  if (!*q) return 0; /* a scalar's pad prints as "padding=" */
  int n = 0;
  for (;;) {
    int64_t lo, hi, in = 0;
    if (!read_int(&q, &lo) || *q++ != '_' || !read_int(&q, &hi)) return -1;
    if (*q == '_') {
      q++;
      if (!read_int(&q, &in)) return -1;
    }
    if (n >= cap) return -1;
    out[n].lo = lo;
    out[n].hi = hi;
    out[n].interior = in;
    n++;
    if (*q != 'x') break;
    q++;
  }
  return at_end(q) ? n : -1;
}

/* One label group ("b01f", "01io"): positions of the two letters and of each spatial
 * digit; returns the number of spatial dimensions or -1. */
static int read_label_group(const char **q, char l1, char l2, int64_t *first, int64_t *second, int64_t *spatial) {
  int have[10] = {0};
  int pos = 0, n_sp = 0;
  *first = *second = -1;
  for (;; (*q)++, pos++) {
    char c = **q;
    if (c == l1 || c == l2) {
      int64_t *slot = c == l1 ? first : second;
      if (*slot >= 0) return -1;
      *slot = pos;
    } else if (is_digit((unsigned char)c)) {
      int d = c - '0';
      if (have[d] || d >= OCL_MAX_RANK) return -1;
      have[d] = 1;
      spatial[d] = pos;
      n_sp++;
    } else {
      break;
    }
  }
  if (*first < 0 || *second < 0) return -1;
  for (int d = 0; d < n_sp; d++)
    if (!have[d]) return -1;
  return n_sp;
}

int ocl_parse_conv_dnums(const char *v, ocl_conv_dnums *out) {
  if (!v || !out) return -1;
  ocl_conv_dnums d;
  memset(&d, 0, sizeof d);
  const char *q = v;
  skip_blanks(&q);
  int a = read_label_group(&q, 'b', 'f', &d.in_batch, &d.in_feature, d.in_spatial);
  if (a < 0 || *q++ != '_') return -1;
  int b = read_label_group(&q, 'i', 'o', &d.k_in_feature, &d.k_out_feature, d.k_spatial);
  if (b < 0 || q[0] != '-' || q[1] != '>') return -1;
  q += 2;
  int c = read_label_group(&q, 'b', 'f', &d.out_batch, &d.out_feature, d.out_spatial);
  if (c < 0 || a != b || a != c || !at_end(q)) return -1;
  d.n_spatial = a;
  *out = d;
  return 0;
}
