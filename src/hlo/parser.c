/* HLO text parser: XLA's HLO text format (as several XLA versions print it) into an
 * hlo_module.
 *
 * Parsing runs in two phases. The first reads the text into IR objects while keeping
 * every name reference (operands, called computations) as a located, unresolved
 * reference, because XLA allows instructions to name operands defined later and
 * hand-written modules put computations in any order. The second phase resolves the
 * references, orders each computation so operands precede users (a cycle is an error),
 * orders computations callees-first with the entry last, and checks what the text
 * declares twice (typed parameter lists, entry_computation_layout) for agreement, and
 * renames instructions whose name another computation already uses (names are scoped
 * per computation in the text, module-unique in the IR; see uniquify_names). All
 * bookkeeping lives in a scratch arena and all IR in the module's arena, so any error
 * path frees everything by dropping the two; only constant literals are heap objects,
 * handed to the module the moment they are complete. */
#include "hlo/parser.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/half.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "hlo/lexer.h"

/* Tuple shapes nest by recursion; the limit keeps hostile input from exhausting the
 * stack. Real modules nest a handful of levels. */
enum { MAX_TUPLE_DEPTH = 64, MAX_RAW_NESTING = 256 };

/* ------------------------------------------------------------------------------------ */
/* Scratch containers                                                                    */

static void *grow_array(arena *a, void *items, int n, int *cap, size_t elem) {
  if (n < *cap) return items;
  int nc = *cap ? *cap * 2 : 8;
  void *ni = arena_calloc(a, (size_t)nc, elem);
  if (n) memcpy(ni, items, (size_t)n * elem);
  *cap = nc;
  return ni;
}

/* String -> index map (open addressing) for name resolution in large modules. */
typedef struct name_map {
  int cap, n;
  const char **keys;
  int *vals;
} name_map;

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static int map_get(const name_map *m, const char *key) {
  if (!m->cap) return -1;
  size_t mask = (size_t)m->cap - 1;
  for (size_t i = (size_t)hash_bytes(key, strlen(key)) & mask;; i = (i + 1) & mask) {
    if (!m->keys[i]) return -1;
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

static void map_put(arena *a, name_map *m, const char *key, int val) {
  if ((m->n + 1) * 2 > m->cap) {
    name_map bigger = {m->cap ? m->cap * 2 : 64, 0, NULL, NULL};
    bigger.keys = arena_calloc(a, (size_t)bigger.cap, sizeof(char *));
    bigger.vals = arena_calloc(a, (size_t)bigger.cap, sizeof(int));
    for (int i = 0; i < m->cap; i++)
      if (m->keys[i]) map_put(a, &bigger, m->keys[i], m->vals[i]);
    *m = bigger;
  }
  size_t mask = (size_t)m->cap - 1;
  size_t i = (size_t)hash_bytes(key, strlen(key)) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
  if (!m->keys[i]) m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
}

/* ------------------------------------------------------------------------------------ */
/* Parser state                                                                          */

/* A name written in the text, resolved after the enclosing scope is complete. */
typedef struct ref {
  const char *name;
  size_t pos;
  bool has_shape; /* operand written as "f32[2] %x": checked against %x's shape */
  hlo_shape shape;
} ref;

typedef struct pinstr {
  hlo_instr *ins;
  size_t pos;
  int n_ops;
  ref *ops;
  int *op_idx; /* resolved operand indices into the computation's pinstr array */
  int n_called;
  ref *called;
} pinstr;

typedef struct sig_param {
  const char *name;
  size_t pos;
  hlo_shape shape;
} sig_param;

typedef struct pcomp {
  hlo_computation *c;
  size_t pos;
  bool is_entry;
  bool has_sig;
  int n_sig, cap_sig;
  sig_param *sig;
  hlo_shape sig_result;
  size_t sig_result_pos;
  int n_instrs, cap_instrs;
  pinstr *instrs;
  name_map names;
  int root_idx; /* -1: none marked */
} pcomp;

typedef struct parser {
  hlo_lexer lx;
  arena *tmp;
  hlo_module *m;
  int n_comps, cap_comps;
  pcomp *comps;
  name_map comp_names;
  bool has_ecl; /* entry_computation_layout seen */
  size_t ecl_pos;
  int n_ecl;
  hlo_shape *ecl_params;
  hlo_shape ecl_result;
  strbuf elided; /* names of constants written as {...} */
  int n_elided;
  int shape_depth;
} parser;

static kiln_status err_at(parser *p, size_t pos, const char *fmt, ...) KILN_PRINTF(3, 4);
static kiln_status err_at(parser *p, size_t pos, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return hlo_lex_error_at(&p->lx, pos, "%s", msg);
}

static kiln_status expected(parser *p, const char *what) { return hlo_lex_expected(&p->lx, what); }

static char *tmp_strndup(parser *p, const char *s, size_t n) { return arena_strndup(p->tmp, s, n); }

/* Reads a name (optionally %-prefixed) into the scratch arena. */
static kiln_status parse_name(parser *p, const char *what, const char **out, size_t *pos) {
  hlo_lex_skip_ws(&p->lx);
  *pos = p->lx.pos;
  const char *s;
  size_t n;
  if (!hlo_lex_ident(&p->lx, true, &s, &n)) return expected(p, what);
  *out = tmp_strndup(p, s, n);
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Shapes                                                                                */

static kiln_status parse_shape(parser *p, hlo_shape *out);

static kiln_status parse_layout(parser *p, hlo_shape *s) {
  size_t start = p->lx.pos;
  p->lx.pos++; /* '{' */
  int n = 0;
  if (hlo_lex_peek(&p->lx) != '}' && hlo_lex_peek(&p->lx) != ':') {
    for (;;) {
      int64_t v;
      TRY(hlo_lex_int64(&p->lx, "a layout dimension number", &v));
      if (n >= HLO_MAX_RANK || n >= s->rank)
        return err_at(p, start, "bad layout: more minor-to-major entries than the shape's rank %d", s->rank);
      if (v < 0 || v >= s->rank)
        return err_at(p, start, "bad layout: dimension %lld is out of range for rank %d", (long long)v, s->rank);
      for (int i = 0; i < n; i++)
        if (s->minor_to_major[i] == v)
          return err_at(p, start, "bad layout: dimension %lld appears twice", (long long)v);
      s->minor_to_major[n++] = v;
      if (!hlo_lex_accept(&p->lx, ',')) break;
    }
  }
  if (hlo_lex_peek(&p->lx) == ':') {
    /* Tiling, memory space and similar extras: kept verbatim for printing. */
    size_t es = p->lx.pos, q = p->lx.pos;
    int paren = 0;
    while (q < p->lx.len) {
      char c = p->lx.src[q];
      if (c == '(') paren++;
      else if (c == ')') paren--;
      else if (c == '}' && paren <= 0) break;
      if (paren < 0 || c == '\n' || c == '{' || (unsigned char)c < 0x20) break;
      q++;
    }
    if (q >= p->lx.len || p->lx.src[q] != '}') {
      p->lx.pos = q;
      return expected(p, "'}' closing the layout");
    }
    s->layout_extra = tmp_strndup(p, p->lx.src + es, q - es);
    p->lx.pos = q;
  }
  if (!hlo_lex_accept(&p->lx, '}')) return expected(p, "',' or '}' in the layout");
  if (n != s->rank)
    return err_at(p, start, "bad layout: %d minor-to-major entries for a shape of rank %d", n, s->rank);
  /* A scalar has only the trivial layout; XLA never writes "{}" for it. */
  s->has_layout = s->rank > 0 || s->layout_extra;
  return NULL;
}

static kiln_status check_shape_size(parser *p, size_t pos, const hlo_shape *s) {
  if (shape_byte_size(s) < 0) {
    char *str = shape_to_string(s);
    kiln_status st = err_at(p, pos, "shape %s is too large: its byte size does not fit in 64 bits", str);
    free(str);
    return st;
  }
  return NULL;
}

/* An array or token shape whose type name has just been read. */
static kiln_status parse_array_shape(parser *p, const char *tname, size_t tlen, size_t tpos, hlo_shape *out) {
  memset(out, 0, sizeof *out);
  hlo_type t;
  if (!hlo_type_from_name(tname, tlen, &t) || t == HLO_TUPLE)
    return err_at(p, tpos, "expected a shape, got unknown or unsupported element type '%.*s'", (int)(tlen > 40 ? 40 : tlen),
                  tname);
  out->type = t;
  if (hlo_lex_peek_raw(&p->lx) != '[') return expected(p, "'[' after the element type");
  p->lx.pos++;
  if (!hlo_lex_accept(&p->lx, ']')) {
    for (;;) {
      if (out->rank >= HLO_MAX_RANK)
        return err_at(p, tpos, "shape has more than %d dimensions", HLO_MAX_RANK);
      bool dyn = hlo_lex_accept_str(&p->lx, "<=");
      hlo_lex_skip_ws(&p->lx);
      if (hlo_lex_peek_raw(&p->lx) == '?')
        return err_at(p, p->lx.pos, "unbounded dynamic dimensions ('?') are not supported");
      if (hlo_lex_peek_raw(&p->lx) == '-')
        return expected(p, "a dimension size (a non-negative integer)");
      int64_t d;
      TRY(hlo_lex_int64(&p->lx, "a dimension size (a non-negative integer)", &d));
      out->dynamic[out->rank] = dyn;
      out->dims[out->rank++] = d;
      if (hlo_lex_accept(&p->lx, ']')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or ']' in the dimensions");
    }
  }
  if (t == HLO_TOKEN && out->rank != 0) return err_at(p, tpos, "token shapes have no dimensions: write token[]");
  /* A layout is attached directly ("f32[2]{0}"); a '{' after a blank opens a body. */
  if (hlo_lex_peek_raw(&p->lx) == '{') TRY(parse_layout(p, out));
  return check_shape_size(p, tpos, out);
}

static kiln_status parse_shape(parser *p, hlo_shape *out) {
  memset(out, 0, sizeof *out);
  int c = hlo_lex_peek(&p->lx);
  size_t pos = p->lx.pos;
  if (c == '(') {
    if (p->shape_depth >= MAX_TUPLE_DEPTH) return err_at(p, pos, "tuple shapes nested too deeply");
    p->lx.pos++;
    p->shape_depth++;
    int n = 0, cap = 0;
    hlo_shape *elems = NULL;
    if (!hlo_lex_accept(&p->lx, ')')) {
      for (;;) {
        elems = grow_array(p->tmp, elems, n, &cap, sizeof *elems);
        kiln_status st = parse_shape(p, &elems[n]);
        if (st) {
          p->shape_depth--;
          return st;
        }
        n++;
        if (hlo_lex_accept(&p->lx, ')')) break;
        if (!hlo_lex_accept(&p->lx, ',')) {
          p->shape_depth--;
          return expected(p, "',' or ')' in the tuple shape");
        }
      }
    }
    p->shape_depth--;
    out->type = HLO_TUPLE;
    out->n_elems = n;
    out->elems = n ? elems : arena_calloc(p->tmp, 1, sizeof(hlo_shape));
    return NULL;
  }
  const char *s;
  size_t n;
  if (!hlo_lex_ident(&p->lx, false, &s, &n)) return expected(p, "a shape");
  return parse_array_shape(p, s, n, pos, out);
}

/* ------------------------------------------------------------------------------------ */
/* Literals                                                                              */

static uint64_t name_seed(const char *name) { return hash_bytes(name, strlen(name)); }

/* Reads one number-like token ("1.5e-3", "-inf", "0x1p-3", "true") starting at the
 * cursor into buf; returns its length (0 if none). */
static size_t scan_number_token(parser *p, char *buf, size_t cap, size_t *tok_len) {
  hlo_lex_skip_ws(&p->lx);
  const char *s = p->lx.src + p->lx.pos;
  size_t avail = p->lx.len - p->lx.pos, n = 0;
  if (n < avail && (s[n] == '-' || s[n] == '+')) n++;
  while (n < avail) {
    char c = s[n];
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum || c == '.' || c == '_') {
      n++;
    } else if ((c == '-' || c == '+') && n > 0 && (s[n - 1] == 'e' || s[n - 1] == 'E' || s[n - 1] == 'p' || s[n - 1] == 'P')) {
      n++;
    } else {
      break;
    }
  }
  *tok_len = n;
  if (n == 0 || n >= cap) return 0;
  memcpy(buf, s, n);
  buf[n] = 0;
  return n;
}

static kiln_status parse_int_value(parser *p, const char *tok, size_t pos, hlo_type t, int64_t *sv, uint64_t *uv) {
  const char *q = tok;
  bool neg = false;
  if (*q == '-' || *q == '+') neg = *q++ == '-';
  if (!*q) return err_at(p, pos, "expected an integer for %s, got '%s'", hlo_type_name(t), tok);
  uint64_t v = 0;
  bool overflow = false;
  for (; *q; q++) {
    if (*q < '0' || *q > '9') return err_at(p, pos, "expected an integer for %s, got '%s'", hlo_type_name(t), tok);
    unsigned d = (unsigned)(*q - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    else v = v * 10 + d;
  }
  int bits = hlo_type_bit_width(t);
  bool ok;
  if (overflow) {
    ok = false;
  } else if (hlo_type_is_unsigned_int(t)) {
    ok = (!neg || v == 0) && (bits == 64 || v <= (UINT64_MAX >> (64 - bits)));
  } else {
    uint64_t maxpos = (UINT64_MAX >> (65 - bits));
    ok = neg ? v <= maxpos + 1 : v <= maxpos;
  }
  if (!ok) return err_at(p, pos, "value %s is out of range for %s", tok, hlo_type_name(t));
  *uv = neg ? 0 - v : v;
  *sv = neg ? (int64_t)(0 - v) : (int64_t)v;
  return NULL;
}

/* Writes NaN with an explicit payload ("nan(0x...)"), bit-exactly per type. */
static void set_nan_payload(hlo_literal *dst, int64_t i, bool neg, uint64_t payload) {
  switch (dst->shape.type) {
    case HLO_F64: {
      uint64_t m = payload & 0xfffffffffffffull;
      uint64_t b = ((uint64_t)neg << 63) | 0x7ff0000000000000ull | (m ? m : 0x8000000000000ull);
      memcpy((char *)dst->data + i * 8, &b, 8);
      return;
    }
    case HLO_F32: {
      uint32_t m = (uint32_t)(payload & 0x7fffffu);
      uint32_t b = ((uint32_t)neg << 31) | 0x7f800000u | (m ? m : 0x400000u);
      memcpy((char *)dst->data + i * 4, &b, 4);
      return;
    }
    case HLO_F16: {
      uint16_t m = (uint16_t)(payload & 0x3ffu);
      uint16_t b = (uint16_t)(((unsigned)neg << 15) | 0x7c00u | (m ? m : 0x200u));
      memcpy((char *)dst->data + i * 2, &b, 2);
      return;
    }
    case HLO_BF16: {
      uint16_t m = (uint16_t)(payload & 0x7fu);
      uint16_t b = (uint16_t)(((unsigned)neg << 15) | 0x7f80u | (m ? m : 0x40u));
      memcpy((char *)dst->data + i * 2, &b, 2);
      return;
    }
    case HLO_F8E5M2: { /* the one 8-bit format with NaN payloads */
      uint8_t m = (uint8_t)(payload & 0x3u);
      ((uint8_t *)dst->data)[i] = (uint8_t)(((unsigned)neg << 7) | 0x7cu | (m ? m : 0x2u));
      return;
    }
    default: /* the other narrow floats have a single NaN per sign (or none: refused before) */
      literal_set_f64(dst, i, neg ? -NAN : NAN);
      return;
  }
}

/* One scalar value of type t. dst NULL: validate only. */
static kiln_status parse_scalar(parser *p, hlo_type t, hlo_literal *dst, int64_t *index) {
  char tok[128];
  size_t tok_len;
  size_t pos = (hlo_lex_skip_ws(&p->lx), p->lx.pos);
  if (!scan_number_token(p, tok, sizeof tok, &tok_len)) {
    if (tok_len) return err_at(p, pos, "number too long in constant");
    return expected(p, t == HLO_PRED ? "'true' or 'false'" : "a number");
  }
  p->lx.pos += tok_len;
  int64_t i = *index;
  if (dst && i >= dst->n) return err_at(p, pos, "internal: constant has more values than its shape");
  if (t == HLO_PRED) {
    int v;
    if (strcmp(tok, "true") == 0 || strcmp(tok, "1") == 0) v = 1;
    else if (strcmp(tok, "false") == 0 || strcmp(tok, "0") == 0) v = 0;
    else return err_at(p, pos, "expected 'true' or 'false' for pred, got '%s'", tok);
    if (dst) ((uint8_t *)dst->data)[i] = (uint8_t)v;
  } else if (hlo_type_is_int(t)) {
    int64_t sv = 0;
    uint64_t uv = 0;
    TRY(parse_int_value(p, tok, pos, t, &sv, &uv));
    if (dst) {
      if (t == HLO_U64) literal_set_u64(dst, i, uv);
      else literal_set_s64(dst, i, sv);
    }
  } else {
    const char *q = tok;
    bool neg = *q == '-';
    if (*q == '-' || *q == '+') q++;
    minifloat_format mf;
    bool mini = hlo_type_minifloat(t, &mf);
    if (strcmp(q, "nan") == 0 && t == HLO_F4E2M1FN) /* the one float type without a NaN */
      return err_at(p, pos, "%s has no NaN", hlo_type_name(t));
    if (strcmp(q, "nan") == 0 && hlo_lex_peek_raw(&p->lx) == '(') {
      /* nan(0x<payload>) */
      p->lx.pos++;
      size_t ppos = p->lx.pos;
      char ptok[64];
      size_t plen;
      if (!scan_number_token(p, ptok, sizeof ptok, &plen) || strncmp(ptok, "0x", 2) != 0)
        return err_at(p, ppos, "expected a hexadecimal NaN payload like 0x1");
      p->lx.pos += plen;
      char *end;
      errno = 0;
      unsigned long long payload = strtoull(ptok + 2, &end, 16);
      if (*end || errno) return err_at(p, ppos, "bad NaN payload '%s'", ptok);
      TRY(hlo_lex_expect(&p->lx, ')'));
      if (dst) set_nan_payload(dst, i, neg, payload);
    } else {
      char *end;
      double v = strtod(tok, &end);
      if (*end || end == tok) return err_at(p, pos, "expected a number for %s, got '%s'", hlo_type_name(t), tok);
      if (isfinite(v)) {
        double r;
        switch (t) {
          case HLO_F32: r = (float)v; break;
          case HLO_F16: r = f16_to_f32(f32_to_f16((float)v)); break;
          case HLO_BF16: r = bf16_to_f32(f32_to_bf16((float)v)); break;
          default: r = v; break;
        }
        if (isinf(r) || (mini && minifloat_overflows(mf, v)))
          return err_at(p, pos, "value %s is out of range for %s", tok, hlo_type_name(t));
        if (t == HLO_F8E8M0FNU && !(v > 0)) /* powers of two only: convert would make it NaN */
          return err_at(p, pos, "value %s is not a value of %s, which has no zero and no sign", tok,
                        hlo_type_name(t));
      } else if (mini && isinf(v) && !minifloat_has_inf(mf)) {
        return err_at(p, pos, "%s has no infinity", hlo_type_name(t));
      }
      if (dst) {
        if (isnan(v)) {
          set_nan_payload(dst, i, neg, 0);
        } else {
          literal_set_f64(dst, i, v);
        }
      }
    }
  }
  (*index)++;
  return NULL;
}

/* Values of an array literal, nested dim by dim as XLA prints them. */
static kiln_status parse_array_values(parser *p, const hlo_shape *s, int dim, hlo_literal *dst, int64_t *index) {
  if (s->rank == 0) return parse_scalar(p, s->type, dst, index);
  hlo_lex_skip_ws(&p->lx);
  size_t open = p->lx.pos;
  if (!hlo_lex_accept(&p->lx, '{')) return expected(p, "'{' opening a dimension of the constant");
  int64_t count = 0;
  if (!hlo_lex_accept(&p->lx, '}')) {
    for (;;) {
      if (count >= s->dims[dim]) {
        char *str = shape_to_string(s);
        kiln_status st = err_at(p, open, "constant has more than %lld values in dimension %d, but its shape is %s",
                                (long long)s->dims[dim], dim, str);
        free(str);
        return st;
      }
      if (dim == s->rank - 1) TRY(parse_scalar(p, s->type, dst, index));
      else TRY(parse_array_values(p, s, dim + 1, dst, index));
      count++;
      if (hlo_lex_accept(&p->lx, '}')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or '}' in the constant");
    }
  }
  if (count != s->dims[dim]) {
    char *str = shape_to_string(s);
    kiln_status st = err_at(p, open, "constant has %lld values in dimension %d, but its shape %s needs %lld",
                            (long long)count, dim, str, (long long)s->dims[dim]);
    free(str);
    return st;
  }
  return NULL;
}

static void note_elided(parser *p, const char *name) {
  if (p->n_elided++ < 8) strbuf_printf(&p->elided, "%s%s", p->n_elided > 1 ? ", " : "", name);
}

static kiln_status parse_literal(parser *p, const hlo_shape *s, const char *name, uint64_t seed, hlo_literal **out) {
  *out = NULL;
  hlo_lex_skip_ws(&p->lx);
  size_t pos = p->lx.pos;
  if (s->type == HLO_TUPLE) {
    TRY(hlo_lex_expect(&p->lx, '('));
    hlo_literal **elems = arena_calloc(p->tmp, s->n_elems ? (size_t)s->n_elems : 1, sizeof *elems);
    int n = 0;
    kiln_status st = NULL;
    if (!hlo_lex_accept(&p->lx, ')')) {
      for (;;) {
        if (n >= s->n_elems) {
          st = err_at(p, pos, "tuple constant has more elements than its shape's %d", s->n_elems);
          break;
        }
        /* Older XLA wrote each element with its shape: "(f32[2] {1, 2}, s32[] 3)". */
        size_t save = (hlo_lex_skip_ws(&p->lx), p->lx.pos);
        const char *id;
        size_t idn;
        if (hlo_lex_ident(&p->lx, false, &id, &idn) && hlo_lex_peek_raw(&p->lx) == '[') {
          hlo_shape es;
          if ((st = parse_array_shape(p, id, idn, save, &es))) break;
          if (!shape_compatible(&es, &s->elems[n])) {
            st = err_at(p, save, "tuple constant element %d is written with a shape that differs from the tuple's", n);
            break;
          }
        } else {
          p->lx.pos = save;
        }
        if ((st = parse_literal(p, &s->elems[n], name, seed * 31 + (uint64_t)n + 1, &elems[n]))) break;
        n++;
        if (hlo_lex_accept(&p->lx, ')')) break;
        if (!hlo_lex_accept(&p->lx, ',')) {
          st = expected(p, "',' or ')' in the tuple constant");
          break;
        }
      }
    }
    if (!st && n != s->n_elems)
      st = err_at(p, pos, "tuple constant has %d elements, but its shape has %d", n, s->n_elems);
    if (st) {
      for (int i = 0; i < n; i++) literal_free(elems[i]);
      return st;
    }
    *out = literal_tuple(n, elems);
    return NULL;
  }
  if (s->type == HLO_TOKEN) return err_at(p, pos, "constants of token type are not supported");
  int64_t bytes = shape_byte_size(s);
  if (bytes < 0 || bytes > literal_max_bytes) {
    char *str = shape_to_string(s);
    kiln_status st = err_at(p, pos, "constant '%s' of shape %s is larger than the %lld-byte limit for one value", name,
                            str, (long long)literal_max_bytes);
    free(str);
    return st;
  }
  /* "{...}": XLA elided the values when printing; fill deterministically. */
  size_t save = p->lx.pos;
  if (hlo_lex_accept(&p->lx, '{') && hlo_lex_accept_str(&p->lx, "...")) {
    TRY(hlo_lex_expect(&p->lx, '}'));
    hlo_literal *l;
    kiln_status st = literal_create(s, &l);
    if (st) return status_wrap(st, "%s", "constant");
    literal_fill_pseudo_random(l, seed);
    note_elided(p, name);
    *out = l;
    return NULL;
  }
  p->lx.pos = save;
  /* Pass 1 checks the structure and every value without allocating, so a constant that
   * claims a huge shape but lists few values fails before any allocation. */
  int64_t index = 0;
  TRY(parse_array_values(p, s, 0, NULL, &index));
  size_t end = p->lx.pos;
  hlo_literal *l;
  kiln_status st = literal_create(s, &l);
  if (st) return status_wrap(st, "%s", "constant");
  p->lx.pos = save;
  index = 0;
  st = parse_array_values(p, s, 0, l, &index);
  if (st || p->lx.pos != end) {
    literal_free(l);
    return st ? st : err_at(p, save, "internal: constant re-read ended elsewhere");
  }
  *out = l;
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Attribute values                                                                      */

/* A value kept verbatim: balanced (), [], {} with quoted strings, ending at a ',' or blank
 * at depth 0 or at a closing bracket that it did not open. */
static kiln_status scan_raw_value_ex(parser *p, bool blanks_inside, const char **out, size_t *out_len) {
  hlo_lex_skip_ws(&p->lx);
  const char *src = p->lx.src;
  size_t start = p->lx.pos, q = start, len = p->lx.len;
  char stack[MAX_RAW_NESTING];
  size_t open_pos[MAX_RAW_NESTING];
  int depth = 0;
  while (q < len) {
    char c = src[q];
    if (c == '"') {
      size_t s = q++;
      while (q < len && src[q] != '"') q += src[q] == '\\' ? 2 : 1;
      if (q >= len) return err_at(p, s, "unterminated string (expected a closing '\"')");
      q++;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      if (depth >= MAX_RAW_NESTING) return err_at(p, q, "attribute value nested too deeply");
      stack[depth] = c == '{' ? '}' : c == '[' ? ']' : ')';
      open_pos[depth++] = q++;
      continue;
    }
    if (c == '}' || c == ']' || c == ')') {
      if (depth == 0) break;
      if (c != stack[depth - 1]) {
        int line, col;
        hlo_lex_line_col(&p->lx, open_pos[depth - 1], &line, &col);
        p->lx.pos = q;
        char what[48];
        snprintf(what, sizeof what, "'%c' (to close %d:%d)", stack[depth - 1], line, col);
        return expected(p, what);
      }
      depth--;
      q++;
      continue;
    }
    if (depth == 0 && (c == ',' || (!blanks_inside && (c == ' ' || c == '\t')) || c == '\n' || c == '\r' ||
                       (c == '/' && q + 1 < len && (src[q + 1] == '/' || src[q + 1] == '*'))))
      break;
    q++;
  }
  while (blanks_inside && q > start && (src[q - 1] == ' ' || src[q - 1] == '\t')) q--;
  if (depth > 0) {
    int line, col;
    hlo_lex_line_col(&p->lx, open_pos[depth - 1], &line, &col);
    p->lx.pos = q;
    char what[48];
    snprintf(what, sizeof what, "'%c' (to close %d:%d)", stack[depth - 1], line, col);
    return expected(p, what);
  }
  if (q == start) return expected(p, "an attribute value");
  *out = src + start;
  *out_len = q - start;
  p->lx.pos = q;
  return NULL;
}

static kiln_status scan_raw_value(parser *p, const char **out, size_t *out_len) {
  return scan_raw_value_ex(p, false, out, out_len);
}

/* Whether the '{' at s[0] is closed exactly at s[last] (quoted strings skipped). On
 * false, *close is where the group actually closed. */
static bool braced_group_ends_at(const char *s, size_t last, size_t *close) {
  int depth = 0;
  for (size_t q = 0; q <= last; q++) {
    if (s[q] == '"') {
      for (q++; q <= last && s[q] != '"'; q += s[q] == '\\' ? 2 : 1) {
      }
      continue;
    }
    if (s[q] == '{' || s[q] == '[' || s[q] == '(') depth++;
    if (s[q] == '}' || s[q] == ']' || s[q] == ')') {
      if (--depth == 0) {
        *close = q;
        return q == last;
      }
    }
  }
  return false;
}

static kiln_status parse_int_list(parser *p, hlo_ints *out) {
  TRY(hlo_lex_expect(&p->lx, '{'));
  int n = 0, cap = 0;
  int64_t *v = NULL;
  if (!hlo_lex_accept(&p->lx, '}')) {
    for (;;) {
      v = grow_array(p->tmp, v, n, &cap, sizeof *v);
      TRY(hlo_lex_int64(&p->lx, "an integer", &v[n]));
      n++;
      if (hlo_lex_accept(&p->lx, '}')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or '}' in the integer list");
    }
  }
  *out = hlo_ints_make(p->m->arena, n, v);
  return NULL;
}

static kiln_status parse_bool(parser *p, bool *out) {
  if (hlo_lex_accept_word(&p->lx, "true")) *out = true;
  else if (hlo_lex_accept_word(&p->lx, "false")) *out = false;
  else return expected(p, "'true' or 'false'");
  return NULL;
}

/* slice={[0:2], [1:5:2]} */
static kiln_status parse_slice(parser *p, hlo_instr *ins) {
  TRY(hlo_lex_expect(&p->lx, '{'));
  int64_t start[HLO_MAX_RANK], limit[HLO_MAX_RANK], stride[HLO_MAX_RANK];
  int n = 0;
  if (!hlo_lex_accept(&p->lx, '}')) {
    for (;;) {
      if (n >= HLO_MAX_RANK) return err_at(p, p->lx.pos, "slice has more than %d dimensions", HLO_MAX_RANK);
      TRY(hlo_lex_expect(&p->lx, '['));
      TRY(hlo_lex_int64(&p->lx, "a slice start", &start[n]));
      TRY(hlo_lex_expect(&p->lx, ':'));
      TRY(hlo_lex_int64(&p->lx, "a slice limit", &limit[n]));
      stride[n] = 1;
      if (hlo_lex_accept(&p->lx, ':')) TRY(hlo_lex_int64(&p->lx, "a slice stride", &stride[n]));
      TRY(hlo_lex_expect(&p->lx, ']'));
      n++;
      if (hlo_lex_accept(&p->lx, '}')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or '}' in the slice");
    }
  }
  arena *a = p->m->arena;
  ins->slice_start = hlo_ints_make(a, n, start);
  ins->slice_limit = hlo_ints_make(a, n, limit);
  ins->slice_stride = hlo_ints_make(a, n, stride);
  return NULL;
}

/* padding=0_0_0x1_2_1: per dimension lo_hi[_interior], dimensions joined by 'x'. */
static kiln_status parse_padding(parser *p, hlo_instr *ins) {
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK], in[HLO_MAX_RANK];
  int n = 0;
  int c = hlo_lex_peek(&p->lx);
  if ((c >= '0' && c <= '9') || c == '-') {
    for (;;) {
      if (n >= HLO_MAX_RANK) return err_at(p, p->lx.pos, "padding has more than %d dimensions", HLO_MAX_RANK);
      TRY(hlo_lex_int64_here(&p->lx, "a low padding", &lo[n]));
      if (hlo_lex_peek_raw(&p->lx) != '_') return expected(p, "'_' between low and high padding");
      p->lx.pos++;
      TRY(hlo_lex_int64_here(&p->lx, "a high padding", &hi[n]));
      in[n] = 0;
      if (hlo_lex_peek_raw(&p->lx) == '_') {
        p->lx.pos++;
        TRY(hlo_lex_int64_here(&p->lx, "an interior padding", &in[n]));
      }
      n++;
      if (hlo_lex_peek_raw(&p->lx) != 'x') break;
      p->lx.pos++;
    }
  }
  arena *a = p->m->arena;
  ins->pad_lo = hlo_ints_make(a, n, lo);
  ins->pad_hi = hlo_ints_make(a, n, hi);
  ins->pad_interior = hlo_ints_make(a, n, in);
  return NULL;
}

/* "3x3x1" (or, with pairs, "0_1x1_0"); returns the count. */
static kiln_status parse_x_list(parser *p, bool pairs, int64_t *a, int64_t *b, int *n) {
  *n = 0;
  for (;;) {
    if (*n >= HLO_MAX_RANK) return err_at(p, p->lx.pos, "window has more than %d dimensions", HLO_MAX_RANK);
    TRY(hlo_lex_int64_here(&p->lx, "an integer", &a[*n]));
    if (pairs) {
      if (hlo_lex_peek_raw(&p->lx) != '_') return expected(p, "'_' between low and high padding");
      p->lx.pos++;
      TRY(hlo_lex_int64_here(&p->lx, "a high padding", &b[*n]));
    }
    (*n)++;
    if (hlo_lex_peek_raw(&p->lx) != 'x') return NULL;
    p->lx.pos++;
  }
}

/* window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1} */
static kiln_status parse_window(parser *p, hlo_window *w) {
  memset(w, 0, sizeof *w);
  size_t open = (hlo_lex_skip_ws(&p->lx), p->lx.pos);
  TRY(hlo_lex_expect(&p->lx, '{'));
  static const char *const fields[] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"};
  int64_t vals[6][HLO_MAX_RANK], hi[HLO_MAX_RANK];
  int counts[6] = {0};
  bool seen[6] = {false};
  while (!hlo_lex_accept(&p->lx, '}')) {
    size_t kpos = (hlo_lex_skip_ws(&p->lx), p->lx.pos);
    const char *k;
    size_t kn;
    if (!hlo_lex_ident(&p->lx, false, &k, &kn)) return expected(p, "a window field (size, stride, pad, ...) or '}'");
    int f = -1;
    for (int i = 0; i < 6; i++)
      if (strlen(fields[i]) == kn && memcmp(fields[i], k, kn) == 0) f = i;
    if (f < 0) return err_at(p, kpos, "unknown window field '%.*s'", (int)(kn > 40 ? 40 : kn), k);
    if (seen[f]) return err_at(p, kpos, "window field '%s' given twice", fields[f]);
    seen[f] = true;
    TRY(hlo_lex_expect(&p->lx, '='));
    hlo_lex_skip_ws(&p->lx);
    TRY(parse_x_list(p, f == 2, vals[f], hi, &counts[f]));
    if (f == 2)
      for (int i = 0; i < counts[f]; i++) w->dims[i].pad_hi = hi[i];
  }
  bool any = false;
  for (int i = 0; i < 6; i++) any |= seen[i];
  if (!any) return NULL;
  if (!seen[0]) return err_at(p, open, "window needs a size= field");
  int rank = counts[0];
  for (int f = 1; f < 6; f++)
    if (seen[f] && counts[f] != rank)
      return err_at(p, open, "window field '%s' has %d entries but size= has %d", fields[f], counts[f], rank);
  w->rank = rank;
  for (int i = 0; i < rank; i++) {
    hlo_window_dim *d = &w->dims[i];
    d->size = vals[0][i];
    d->stride = seen[1] ? vals[1][i] : 1;
    d->pad_lo = seen[2] ? vals[2][i] : 0;
    if (!seen[2]) d->pad_hi = 0;
    d->lhs_dilate = seen[3] ? vals[3][i] : 1;
    d->rhs_dilate = seen[4] ? vals[4][i] : 1;
    d->reversal = seen[5] ? vals[5][i] != 0 : false;
  }
  return NULL;
}

/* One group of dim_labels ("b01f"): letters a and b are the two non-spatial dims. */
static kiln_status parse_label_group(parser *p, const char *letters, int64_t *first, int64_t *second, int64_t *spatial,
                                     int *n_spatial) {
  size_t start = p->lx.pos;
  int have[HLO_MAX_RANK] = {0};
  int pos = 0, n_sp = 0;
  *first = *second = -1;
  while (p->lx.pos < p->lx.len) {
    char c = p->lx.src[p->lx.pos];
    if (c == letters[0] || c == letters[1]) {
      int64_t *slot = c == letters[0] ? first : second;
      if (*slot >= 0) return err_at(p, p->lx.pos, "dim_labels: '%c' appears twice", c);
      *slot = pos;
    } else if (c >= '0' && c <= '9') {
      int d = c - '0';
      if (d >= HLO_MAX_RANK || have[d]) return err_at(p, p->lx.pos, "dim_labels: bad or repeated spatial dimension '%c'", c);
      have[d] = 1;
      spatial[d] = pos;
      n_sp++;
    } else {
      break;
    }
    pos++;
    p->lx.pos++;
    if (pos > HLO_MAX_RANK) return err_at(p, start, "dim_labels: too many dimensions");
  }
  if (*first < 0 || *second < 0) {
    p->lx.pos = start;
    char what[64];
    snprintf(what, sizeof what, "dim_labels with '%c' and '%c' (like b01f_01io->b01f)", letters[0], letters[1]);
    return expected(p, what);
  }
  for (int d = 0; d < n_sp; d++)
    if (!have[d]) return err_at(p, start, "dim_labels: spatial dimensions must be numbered 0..%d", n_sp - 1);
  *n_spatial = n_sp;
  return NULL;
}

static kiln_status parse_dim_labels(parser *p, hlo_conv_dnums *dn) {
  memset(dn, 0, sizeof *dn);
  hlo_lex_skip_ws(&p->lx);
  size_t start = p->lx.pos;
  int n_in, n_k, n_out;
  TRY(parse_label_group(p, "bf", &dn->input_batch, &dn->input_feature, dn->input_spatial, &n_in));
  if (hlo_lex_peek_raw(&p->lx) != '_') return expected(p, "'_' after the input labels");
  p->lx.pos++;
  TRY(parse_label_group(p, "io", &dn->kernel_input_feature, &dn->kernel_output_feature, dn->kernel_spatial, &n_k));
  if (!(p->lx.pos + 1 < p->lx.len && p->lx.src[p->lx.pos] == '-' && p->lx.src[p->lx.pos + 1] == '>'))
    return expected(p, "'->' after the kernel labels");
  p->lx.pos += 2;
  TRY(parse_label_group(p, "bf", &dn->output_batch, &dn->output_feature, dn->output_spatial, &n_out));
  if (n_in != n_k || n_in != n_out)
    return err_at(p, start, "dim_labels: input, kernel and output have different numbers of spatial dimensions");
  dn->n_spatial = n_in;
  return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Instruction attributes                                                                */

typedef enum akey {
  A_RAW,
  A_METADATA,
  A_DIMENSIONS,
  A_INDEX,
  A_IOTA_DIMENSION,
  A_SLICE,
  A_DYNAMIC_SLICE_SIZES,
  A_PADDING,
  A_WINDOW,
  A_DIM_LABELS,
  A_FEATURE_GROUP_COUNT,
  A_BATCH_GROUP_COUNT,
  A_LHS_BATCH_DIMS,
  A_RHS_BATCH_DIMS,
  A_LHS_CONTRACTING_DIMS,
  A_RHS_CONTRACTING_DIMS,
  A_OFFSET_DIMS,
  A_COLLAPSED_SLICE_DIMS,
  A_START_INDEX_MAP,
  A_OPERAND_BATCHING_DIMS,
  A_START_INDICES_BATCHING_DIMS,
  A_INDEX_VECTOR_DIM,
  A_SLICE_SIZES,
  A_INDICES_ARE_SORTED,
  A_UPDATE_WINDOW_DIMS,
  A_INSERTED_WINDOW_DIMS,
  A_SCATTER_DIMS_TO_OPERAND_DIMS,
  A_INPUT_BATCHING_DIMS,
  A_SCATTER_INDICES_BATCHING_DIMS,
  A_UNIQUE_INDICES,
  A_DIRECTION,
  A_TYPE,
  A_EXPONENT_BITS,
  A_MANTISSA_BITS,
  A_IS_STABLE,
  A_CUSTOM_CALL_TARGET,
  A_KIND,
  A_K,
  A_LARGEST,
  A_TO_APPLY,
  A_CALLS,
  A_CALLED_COMPUTATIONS,
  A_CONDITION,
  A_BODY,
  A_SELECT,
  A_SCATTER,
  A_TRUE_COMPUTATION,
  A_FALSE_COMPUTATION,
  A_BRANCH_COMPUTATIONS,
  A_COMPARATOR,
  A_COUNT
} akey;

static const char *const akey_names[A_COUNT] = {
    "",
    "metadata",
    "dimensions",
    "index",
    "iota_dimension",
    "slice",
    "dynamic_slice_sizes",
    "padding",
    "window",
    "dim_labels",
    "feature_group_count",
    "batch_group_count",
    "lhs_batch_dims",
    "rhs_batch_dims",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "index_vector_dim",
    "slice_sizes",
    "indices_are_sorted",
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "unique_indices",
    "direction",
    "type",
    "exponent_bits",
    "mantissa_bits",
    "is_stable",
    "custom_call_target",
    "kind",
    "k",
    "largest",
    "to_apply",
    "calls",
    "called_computations",
    "condition",
    "body",
    "select",
    "scatter",
    "true_computation",
    "false_computation",
    "branch_computations",
    "comparator",
};

/* Whether key k is interpreted (typed) for op. Keys that are not typed for an op are kept
 * verbatim, except computation references, which must be understood to be resolved. */
static bool akey_applies(akey k, hlo_opcode op) {
  switch (k) {
    case A_METADATA:
    case A_TO_APPLY:
    case A_CALLS:
    case A_CALLED_COMPUTATIONS:
      return true;
    case A_DIMENSIONS:
      switch (op) {
        case HLO_OP_BROADCAST: case HLO_OP_TRANSPOSE: case HLO_OP_REDUCE: case HLO_OP_REVERSE:
        case HLO_OP_MAP: case HLO_OP_CONCATENATE: case HLO_OP_SORT: case HLO_OP_ALL_GATHER:
        case HLO_OP_ALL_TO_ALL: case HLO_OP_REDUCE_SCATTER: case HLO_OP_GET_DIMENSION_SIZE:
        case HLO_OP_SET_DIMENSION_SIZE:
          return true;
        default:
          return false;
      }
    case A_INDEX: return op == HLO_OP_GET_TUPLE_ELEMENT;
    case A_IOTA_DIMENSION: return op == HLO_OP_IOTA;
    case A_SLICE: return op == HLO_OP_SLICE;
    case A_DYNAMIC_SLICE_SIZES: return op == HLO_OP_DYNAMIC_SLICE;
    case A_PADDING: return op == HLO_OP_PAD;
    case A_WINDOW:
      return op == HLO_OP_CONVOLUTION || op == HLO_OP_REDUCE_WINDOW || op == HLO_OP_SELECT_AND_SCATTER ||
             op == HLO_OP_CUSTOM_CALL;
    case A_DIM_LABELS:
    case A_FEATURE_GROUP_COUNT:
    case A_BATCH_GROUP_COUNT:
      return op == HLO_OP_CONVOLUTION || op == HLO_OP_CUSTOM_CALL;
    case A_LHS_BATCH_DIMS:
    case A_RHS_BATCH_DIMS:
    case A_LHS_CONTRACTING_DIMS:
    case A_RHS_CONTRACTING_DIMS:
      return op == HLO_OP_DOT;
    case A_OFFSET_DIMS:
    case A_COLLAPSED_SLICE_DIMS:
    case A_START_INDEX_MAP:
    case A_OPERAND_BATCHING_DIMS:
    case A_START_INDICES_BATCHING_DIMS:
    case A_SLICE_SIZES:
      return op == HLO_OP_GATHER;
    case A_INDEX_VECTOR_DIM:
    case A_INDICES_ARE_SORTED:
      return op == HLO_OP_GATHER || op == HLO_OP_SCATTER;
    case A_UPDATE_WINDOW_DIMS:
    case A_INSERTED_WINDOW_DIMS:
    case A_SCATTER_DIMS_TO_OPERAND_DIMS:
    case A_INPUT_BATCHING_DIMS:
    case A_SCATTER_INDICES_BATCHING_DIMS:
    case A_UNIQUE_INDICES:
      return op == HLO_OP_SCATTER;
    case A_DIRECTION:
    case A_TYPE:
      return op == HLO_OP_COMPARE;
    case A_EXPONENT_BITS:
    case A_MANTISSA_BITS:
      return op == HLO_OP_REDUCE_PRECISION;
    case A_IS_STABLE: return op == HLO_OP_SORT;
    case A_CUSTOM_CALL_TARGET: return op == HLO_OP_CUSTOM_CALL;
    case A_KIND: return op == HLO_OP_FUSION;
    case A_K:
    case A_LARGEST:
      return op == HLO_OP_TOPK;
    case A_CONDITION:
    case A_BODY:
      return op == HLO_OP_WHILE;
    case A_SELECT:
    case A_SCATTER:
      return op == HLO_OP_SELECT_AND_SCATTER;
    case A_TRUE_COMPUTATION:
    case A_FALSE_COMPUTATION:
    case A_BRANCH_COMPUTATIONS:
      return op == HLO_OP_CONDITIONAL;
    case A_COMPARATOR: return op == HLO_OP_SORT || op == HLO_OP_TOPK;
    default: return false;
  }
}

static bool akey_is_computation(akey k) { return k >= A_TO_APPLY && k <= A_COMPARATOR; }

static akey akey_lookup(const char *k, size_t n) {
  for (int i = 1; i < A_COUNT; i++)
    if (strlen(akey_names[i]) == n && memcmp(akey_names[i], k, n) == 0) return (akey)i;
  return A_RAW;
}

/* Computation references of one instruction, by the attribute that named them. */
typedef struct called_refs {
  int n[A_COUNT];
  ref *refs[A_COUNT];
  size_t pos[A_COUNT];
} called_refs;

static kiln_status parse_comp_ref(parser *p, ref *out) {
  memset(out, 0, sizeof *out);
  return parse_name(p, "a computation name", &out->name, &out->pos);
}

static kiln_status parse_called_attr(parser *p, akey k, called_refs *cr) {
  int n = 0, cap = 0;
  ref *refs = NULL;
  bool list = k == A_CALLED_COMPUTATIONS || k == A_BRANCH_COMPUTATIONS || k == A_CALLS;
  if (list && hlo_lex_accept(&p->lx, '{')) {
    if (!hlo_lex_accept(&p->lx, '}')) {
      for (;;) {
        refs = grow_array(p->tmp, refs, n, &cap, sizeof *refs);
        TRY(parse_comp_ref(p, &refs[n++]));
        if (hlo_lex_accept(&p->lx, '}')) break;
        if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or '}' in the computation list");
      }
    }
  } else {
    refs = grow_array(p->tmp, refs, n, &cap, sizeof *refs);
    TRY(parse_comp_ref(p, &refs[n++]));
    /* XLA prints several callees as "calls=%a, %b": a name not followed by '=' continues
     * the list rather than starting the next attribute. */
    while (k == A_CALLS) {
      size_t save = p->lx.pos;
      if (!hlo_lex_accept(&p->lx, ',')) break;
      const char *s;
      size_t sn;
      hlo_lex_skip_ws(&p->lx);
      size_t npos = p->lx.pos;
      if (!hlo_lex_ident(&p->lx, true, &s, &sn) || hlo_lex_peek(&p->lx) == '=') {
        p->lx.pos = save;
        break;
      }
      refs = grow_array(p->tmp, refs, n, &cap, sizeof *refs);
      memset(&refs[n], 0, sizeof refs[n]);
      refs[n].name = tmp_strndup(p, s, sn);
      refs[n++].pos = npos;
    }
  }
  cr->n[k] = n;
  cr->refs[k] = refs;
  return NULL;
}

static kiln_status parse_direction(parser *p, hlo_direction *out) {
  static const char *const names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const char *s;
  size_t n;
  hlo_lex_skip_ws(&p->lx);
  size_t save = p->lx.pos;
  if (hlo_lex_ident(&p->lx, false, &s, &n))
    for (int i = 0; i < 6; i++)
      if (n == 2 && memcmp(s, names[i], 2) == 0) {
        *out = (hlo_direction)i;
        return NULL;
      }
  p->lx.pos = save;
  return expected(p, "a comparison direction (EQ, NE, LT, LE, GT, GE)");
}

static kiln_status parse_compare_type(parser *p, hlo_compare_type *out) {
  static const char *const names[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  const char *s;
  size_t n;
  hlo_lex_skip_ws(&p->lx);
  size_t save = p->lx.pos;
  if (hlo_lex_ident(&p->lx, false, &s, &n))
    for (int i = 1; i < 5; i++)
      if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0) {
        *out = (hlo_compare_type)i;
        return NULL;
      }
  p->lx.pos = save;
  return expected(p, "a comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)");
}

static kiln_status parse_string_attr(parser *p, const char **out) {
  char *s;
  TRY(hlo_lex_string(&p->lx, &s, NULL, NULL));
  *out = arena_strdup(p->m->arena, s);
  free(s);
  return NULL;
}

static kiln_status parse_typed_attr(parser *p, hlo_instr *ins, akey k, called_refs *cr) {
  arena *a = p->m->arena;
  if (akey_is_computation(k)) return parse_called_attr(p, k, cr);
  switch (k) {
    case A_METADATA: {
      const char *s;
      size_t n;
      hlo_lex_skip_ws(&p->lx);
      if (hlo_lex_peek_raw(&p->lx) != '{') return expected(p, "'{' after metadata=");
      TRY(scan_raw_value(p, &s, &n));
      /* The value must be exactly one braced group: "{...}x" would print back as a
       * different group. */
      size_t close = n - 1;
      if (!braced_group_ends_at(s, n - 1, &close)) {
        p->lx.pos = (size_t)(s - p->lx.src) + close + 1;
        return expected(p, "',' or a new line after metadata={...}");
      }
      ins->metadata = arena_strndup(a, s + 1, n - 2);
      return NULL;
    }
    case A_DIMENSIONS: return parse_int_list(p, &ins->dimensions);
    case A_INDEX: return hlo_lex_int64(&p->lx, "a tuple index", &ins->tuple_index);
    case A_IOTA_DIMENSION: return hlo_lex_int64(&p->lx, "a dimension number", &ins->iota_dimension);
    case A_SLICE: return parse_slice(p, ins);
    case A_DYNAMIC_SLICE_SIZES: return parse_int_list(p, &ins->dynamic_slice_sizes);
    case A_PADDING: return parse_padding(p, ins);
    case A_WINDOW: return parse_window(p, &ins->window);
    case A_DIM_LABELS:
      TRY(parse_dim_labels(p, &ins->conv));
      ins->has_conv_dnums = true;
      return NULL;
    case A_FEATURE_GROUP_COUNT: return hlo_lex_int64(&p->lx, "a group count", &ins->feature_group_count);
    case A_BATCH_GROUP_COUNT: return hlo_lex_int64(&p->lx, "a group count", &ins->batch_group_count);
    case A_LHS_BATCH_DIMS: return parse_int_list(p, &ins->dot.lhs_batch);
    case A_RHS_BATCH_DIMS: return parse_int_list(p, &ins->dot.rhs_batch);
    case A_LHS_CONTRACTING_DIMS: return parse_int_list(p, &ins->dot.lhs_contracting);
    case A_RHS_CONTRACTING_DIMS: return parse_int_list(p, &ins->dot.rhs_contracting);
    case A_OFFSET_DIMS: return parse_int_list(p, &ins->gather.offset_dims);
    case A_COLLAPSED_SLICE_DIMS: return parse_int_list(p, &ins->gather.collapsed_slice_dims);
    case A_START_INDEX_MAP: return parse_int_list(p, &ins->gather.start_index_map);
    case A_OPERAND_BATCHING_DIMS: return parse_int_list(p, &ins->gather.operand_batching_dims);
    case A_START_INDICES_BATCHING_DIMS: return parse_int_list(p, &ins->gather.start_indices_batching_dims);
    case A_INDEX_VECTOR_DIM: {
      int64_t v;
      TRY(hlo_lex_int64(&p->lx, "a dimension number", &v));
      ins->gather.index_vector_dim = v;
      ins->scatter.index_vector_dim = v;
      return NULL;
    }
    case A_SLICE_SIZES: return parse_int_list(p, &ins->gather_slice_sizes);
    case A_INDICES_ARE_SORTED: return parse_bool(p, &ins->indices_are_sorted);
    case A_UPDATE_WINDOW_DIMS: return parse_int_list(p, &ins->scatter.update_window_dims);
    case A_INSERTED_WINDOW_DIMS: return parse_int_list(p, &ins->scatter.inserted_window_dims);
    case A_SCATTER_DIMS_TO_OPERAND_DIMS: return parse_int_list(p, &ins->scatter.scatter_dims_to_operand_dims);
    case A_INPUT_BATCHING_DIMS: return parse_int_list(p, &ins->scatter.input_batching_dims);
    case A_SCATTER_INDICES_BATCHING_DIMS: return parse_int_list(p, &ins->scatter.scatter_indices_batching_dims);
    case A_UNIQUE_INDICES: return parse_bool(p, &ins->unique_indices);
    case A_DIRECTION: return parse_direction(p, &ins->direction);
    case A_TYPE: return parse_compare_type(p, &ins->compare_type);
    case A_EXPONENT_BITS: return hlo_lex_int64(&p->lx, "a bit count", &ins->exponent_bits);
    case A_MANTISSA_BITS: return hlo_lex_int64(&p->lx, "a bit count", &ins->mantissa_bits);
    case A_IS_STABLE: return parse_bool(p, &ins->is_stable);
    case A_CUSTOM_CALL_TARGET: return parse_string_attr(p, &ins->custom_call_target);
    case A_KIND: {
      const char *s;
      size_t n;
      if (!hlo_lex_ident(&p->lx, false, &s, &n)) return expected(p, "a fusion kind (kLoop, kInput, kOutput, kCustom)");
      ins->fusion_kind = arena_strndup(a, s, n);
      return NULL;
    }
    case A_K: return hlo_lex_int64(&p->lx, "an integer", &ins->k);
    case A_LARGEST: return parse_bool(p, &ins->largest);
    default: return ERR_INTERNAL("parser: unhandled attribute %d", (int)k);
  }
}

/* Attributes an op cannot do without: missing ones are errors here rather than silently
 * printed back as defaults. */
static const akey *required_attrs(hlo_opcode op) {
  static const akey gte[] = {A_INDEX, A_RAW};
  static const akey dims[] = {A_DIMENSIONS, A_RAW};
  static const akey iota[] = {A_IOTA_DIMENSION, A_RAW};
  static const akey slice[] = {A_SLICE, A_RAW};
  static const akey dslice[] = {A_DYNAMIC_SLICE_SIZES, A_RAW};
  static const akey pad[] = {A_PADDING, A_RAW};
  static const akey cmp[] = {A_DIRECTION, A_RAW};
  static const akey rp[] = {A_EXPONENT_BITS, A_MANTISSA_BITS, A_RAW};
  static const akey conv[] = {A_DIM_LABELS, A_RAW};
  static const akey gather[] = {A_OFFSET_DIMS, A_COLLAPSED_SLICE_DIMS, A_START_INDEX_MAP, A_INDEX_VECTOR_DIM,
                                A_SLICE_SIZES, A_RAW};
  static const akey scatter[] = {A_UPDATE_WINDOW_DIMS, A_INSERTED_WINDOW_DIMS, A_SCATTER_DIMS_TO_OPERAND_DIMS,
                                 A_INDEX_VECTOR_DIM, A_RAW};
  static const akey window[] = {A_WINDOW, A_RAW};
  static const akey cc[] = {A_CUSTOM_CALL_TARGET, A_RAW};
  static const akey fusion[] = {A_KIND, A_RAW};
  static const akey topk[] = {A_K, A_RAW};
  static const akey none[] = {A_RAW};
  switch (op) {
    case HLO_OP_GET_TUPLE_ELEMENT: return gte;
    case HLO_OP_BROADCAST: case HLO_OP_TRANSPOSE: case HLO_OP_REVERSE: case HLO_OP_REDUCE:
    case HLO_OP_CONCATENATE: case HLO_OP_SORT: case HLO_OP_GET_DIMENSION_SIZE: case HLO_OP_SET_DIMENSION_SIZE:
    case HLO_OP_ALL_GATHER: case HLO_OP_REDUCE_SCATTER:
      return dims;
    case HLO_OP_IOTA: return iota;
    case HLO_OP_SLICE: return slice;
    case HLO_OP_DYNAMIC_SLICE: return dslice;
    case HLO_OP_PAD: return pad;
    case HLO_OP_COMPARE: return cmp;
    case HLO_OP_REDUCE_PRECISION: return rp;
    case HLO_OP_CONVOLUTION: return conv;
    case HLO_OP_GATHER: return gather;
    case HLO_OP_SCATTER: return scatter;
    case HLO_OP_REDUCE_WINDOW: case HLO_OP_SELECT_AND_SCATTER: return window;
    case HLO_OP_CUSTOM_CALL: return cc;
    case HLO_OP_FUSION: return fusion;
    case HLO_OP_TOPK: return topk;
    default: return none;
  }
}

/* Ops whose single callee XLA requires. */
static bool needs_callee(hlo_opcode op) {
  switch (op) {
    case HLO_OP_REDUCE: case HLO_OP_REDUCE_WINDOW: case HLO_OP_MAP: case HLO_OP_SCATTER: case HLO_OP_CALL:
    case HLO_OP_ALL_REDUCE: case HLO_OP_REDUCE_SCATTER: case HLO_OP_SORT: case HLO_OP_FUSION:
    case HLO_OP_ASYNC_START:
      return true;
    default:
      return false;
  }
}

/* Puts the computation references into ins->called order (see ir.h). */
static kiln_status assemble_called(parser *p, pinstr *pi, called_refs *cr, const bool *seen) {
  static const akey generic[] = {A_TO_APPLY, A_COMPARATOR, A_CALLS, A_CALLED_COMPUTATIONS};
  hlo_instr *ins = pi->ins;
  const char *opname = hlo_opcode_name(ins->op);
  akey pair[2] = {A_RAW, A_RAW}; /* fixed two-callee forms */
  akey list = A_RAW;             /* list or single-callee forms */
  switch (ins->op) {
    case HLO_OP_WHILE:
      pair[0] = A_CONDITION;
      pair[1] = A_BODY;
      break;
    case HLO_OP_SELECT_AND_SCATTER:
      pair[0] = A_SELECT;
      pair[1] = A_SCATTER;
      break;
    case HLO_OP_CONDITIONAL:
      if (seen[A_BRANCH_COMPUTATIONS]) {
        if (seen[A_TRUE_COMPUTATION] || seen[A_FALSE_COMPUTATION])
          return err_at(p, pi->pos, "conditional '%s' has both branch_computations and true/false_computation",
                        ins->name);
        list = A_BRANCH_COMPUTATIONS;
      } else {
        pair[0] = A_TRUE_COMPUTATION;
        pair[1] = A_FALSE_COMPUTATION;
      }
      break;
    default:
      for (int i = 0; i < 4; i++) {
        if (!seen[generic[i]]) continue;
        if (list != A_RAW)
          return err_at(p, cr->pos[generic[i]], "instruction '%s' has both %s= and %s=", ins->name, akey_names[list],
                        akey_names[generic[i]]);
        list = generic[i];
      }
      if (list == A_RAW && needs_callee(ins->op))
        return err_at(p, pi->pos, "instruction '%s' (%s) is missing required attribute '%s'", ins->name, opname,
                      ins->op == HLO_OP_FUSION || ins->op == HLO_OP_ASYNC_START ? "calls" : "to_apply");
      if (ins->op == HLO_OP_FUSION && cr->n[list] != 1)
        return err_at(p, pi->pos, "fusion '%s' must call exactly one computation", ins->name);
      break;
  }
  if (ins->op == HLO_OP_WHILE || ins->op == HLO_OP_SELECT_AND_SCATTER || ins->op == HLO_OP_CONDITIONAL)
    for (int i = 0; i < 4; i++)
      if (seen[generic[i]])
        return err_at(p, cr->pos[generic[i]], "attribute '%s' is not valid for %s", akey_names[generic[i]], opname);
  for (int i = 0; i < 2; i++)
    if (pair[i] != A_RAW && !seen[pair[i]])
      return err_at(p, pi->pos, "instruction '%s' (%s) is missing required attribute '%s'", ins->name, opname,
                    akey_names[pair[i]]);
  int n = pair[0] != A_RAW ? 2 : list != A_RAW ? cr->n[list] : 0;
  pi->n_called = n;
  pi->called = arena_calloc(p->tmp, n ? (size_t)n : 1, sizeof(ref));
  for (int i = 0; i < n; i++) pi->called[i] = pair[0] != A_RAW ? cr->refs[pair[i]][0] : cr->refs[list][i];
  return NULL;
}

static kiln_status parse_attributes(parser *p, pinstr *pi) {
  hlo_instr *ins = pi->ins;
  bool seen[A_COUNT] = {false};
  called_refs cr;
  memset(&cr, 0, sizeof cr);
  while (hlo_lex_accept(&p->lx, ',')) {
    hlo_lex_skip_ws(&p->lx);
    size_t kpos = p->lx.pos;
    const char *k;
    size_t kn;
    if (!hlo_lex_ident(&p->lx, false, &k, &kn)) return expected(p, "an attribute name");
    TRY(hlo_lex_expect(&p->lx, '='));
    akey key = akey_lookup(k, kn);
    if (key != A_RAW && !akey_applies(key, ins->op)) {
      if (akey_is_computation(key))
        return err_at(p, kpos, "attribute '%s' is not valid for %s", akey_names[key], hlo_opcode_name(ins->op));
      key = A_RAW;
    }
    if (key == A_RAW) {
      const char *v;
      size_t vn;
      char *kname = tmp_strndup(p, k, kn);
      for (int i = 0; i < ins->n_raw_attrs; i++)
        if (strcmp(ins->raw_attrs[i].key, kname) == 0) return err_at(p, kpos, "attribute '%s' given twice", kname);
      /* A custom-call literal is written with its shape: "literal=s32[] 5". */
      TRY(scan_raw_value_ex(p, strcmp(kname, "literal") == 0, &v, &vn));
      hlo_instr_add_raw_attr(ins, kname, tmp_strndup(p, v, vn));
      continue;
    }
    if (seen[key]) return err_at(p, kpos, "attribute '%s' given twice", akey_names[key]);
    seen[key] = true;
    cr.pos[key] = kpos;
    TRY(parse_typed_attr(p, ins, key, &cr));
  }
  for (const akey *r = required_attrs(ins->op); *r != A_RAW; r++)
    if (!seen[*r])
      return err_at(p, pi->pos, "instruction '%s' (%s) is missing required attribute '%s'", ins->name,
                    hlo_opcode_name(ins->op), akey_names[*r]);
  if (ins->op == HLO_OP_MAP && !seen[A_DIMENSIONS]) {
    /* XLA's default: map over every dimension. */
    int64_t d[HLO_MAX_RANK];
    for (int i = 0; i < ins->shape.rank; i++) d[i] = i;
    ins->dimensions = hlo_ints_make(p->m->arena, ins->shape.rank, d);
  }
  if (ins->op == HLO_OP_DOT) {
    arena *a = p->m->arena;
    if (!ins->dot.lhs_contracting.v) ins->dot.lhs_contracting = hlo_ints_make(a, 0, NULL);
    if (!ins->dot.rhs_contracting.v) ins->dot.rhs_contracting = hlo_ints_make(a, 0, NULL);
    if (!ins->dot.lhs_batch.v) ins->dot.lhs_batch = hlo_ints_make(a, 0, NULL);
    if (!ins->dot.rhs_batch.v) ins->dot.rhs_batch = hlo_ints_make(a, 0, NULL);
  }
  return assemble_called(p, pi, &cr, seen);
}

/* ------------------------------------------------------------------------------------ */
/* Instructions and computations                                                         */

static kiln_status parse_operands(parser *p, pinstr *pi) {
  int n = 0, cap = 0;
  ref *ops = NULL;
  if (!hlo_lex_accept(&p->lx, ')')) {
    for (;;) {
      ops = grow_array(p->tmp, ops, n, &cap, sizeof *ops);
      ref *r = &ops[n];
      memset(r, 0, sizeof *r);
      hlo_lex_skip_ws(&p->lx);
      size_t pos = p->lx.pos;
      if (hlo_lex_peek_raw(&p->lx) == '(') {
        TRY(parse_shape(p, &r->shape));
        r->has_shape = true;
      } else {
        const char *s;
        size_t sn;
        if (!hlo_lex_ident(&p->lx, true, &s, &sn)) return expected(p, "an operand");
        if (hlo_lex_peek_raw(&p->lx) == '[' && p->lx.src[pos] != '%') {
          TRY(parse_array_shape(p, s, sn, pos, &r->shape));
          r->has_shape = true;
        } else {
          r->name = tmp_strndup(p, s, sn);
          r->pos = pos;
        }
      }
      if (r->has_shape) TRY(parse_name(p, "an operand name", &r->name, &r->pos));
      n++;
      if (hlo_lex_accept(&p->lx, ')')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or ')' after an operand");
    }
  }
  pi->n_ops = n;
  pi->ops = ops;
  return NULL;
}

static kiln_status parse_instruction(parser *p, int comp_index) {
  pcomp *pc = &p->comps[comp_index];
  hlo_lex_skip_ws(&p->lx);
  size_t start = p->lx.pos;
  bool is_root = false;
  {
    const char *s;
    size_t n;
    size_t save = p->lx.pos;
    if (hlo_lex_ident(&p->lx, false, &s, &n) && n == 4 && memcmp(s, "ROOT", 4) == 0 && hlo_lex_peek(&p->lx) != '=')
      is_root = true;
    else
      p->lx.pos = save;
  }
  const char *name = NULL;
  size_t name_pos;
  TRY(parse_name(p, "an instruction name", &name, &name_pos));
  int prev = map_get(&pc->names, name);
  if (prev >= 0) {
    int line, col;
    hlo_lex_line_col(&p->lx, pc->instrs[prev].pos, &line, &col);
    return err_at(p, name_pos, "duplicate instruction name '%s' (first defined at %d:%d)", name, line, col);
  }
  if (!hlo_lex_accept(&p->lx, '=')) return expected(p, "'=' after the instruction name");
  hlo_shape shape;
  TRY(parse_shape(p, &shape));
  hlo_lex_skip_ws(&p->lx);
  size_t op_pos = p->lx.pos;
  const char *ops;
  size_t opn;
  if (!hlo_lex_ident(&p->lx, false, &ops, &opn)) return expected(p, "an opcode");
  hlo_opcode op;
  if (!hlo_opcode_from_name(ops, opn, &op))
    return err_at(p, op_pos, "unknown opcode '%.*s'", (int)(opn > 60 ? 60 : opn), ops);
  if (!hlo_lex_accept(&p->lx, '(')) return expected(p, "'(' after the opcode");

  hlo_instr *ins = hlo_instr_new(pc->c, op, &shape, name);
  if (op == HLO_OP_TOPK) ins->largest = true;
  pc->instrs = grow_array(p->tmp, pc->instrs, pc->n_instrs, &pc->cap_instrs, sizeof *pc->instrs);
  int idx = pc->n_instrs++;
  pinstr *pi = &pc->instrs[idx];
  memset(pi, 0, sizeof *pi);
  pi->ins = ins;
  pi->pos = name_pos;
  map_put(p->tmp, &pc->names, name, idx);
  if (is_root) {
    if (pc->root_idx >= 0)
      return err_at(p, start, "computation '%s' has more than one ROOT (also '%s')", pc->c->name,
                    pc->instrs[pc->root_idx].ins->name);
    pc->root_idx = idx;
  }

  if (op == HLO_OP_PARAMETER) {
    int64_t num;
    hlo_lex_skip_ws(&p->lx);
    size_t npos = p->lx.pos;
    TRY(hlo_lex_int64(&p->lx, "a parameter number", &num));
    if (num < 0 || num > 1000000) return err_at(p, npos, "parameter number %lld is out of range", (long long)num);
    ins->parameter_number = num;
    TRY(hlo_lex_expect(&p->lx, ')'));
  } else if (op == HLO_OP_CONSTANT) {
    hlo_literal *lit;
    TRY(parse_literal(p, &shape, ins->name, name_seed(ins->name), &lit));
    hlo_instr_set_literal(ins, lit);
    TRY(hlo_lex_expect(&p->lx, ')'));
  } else {
    TRY(parse_operands(p, pi));
  }
  return parse_attributes(p, pi);
}

/* Resolves operand names, then orders instructions so operands precede users (a
 * depth-first post-order in text order, so text already in order stays as written). */
static kiln_status finish_computation(parser *p, pcomp *pc, size_t close_pos) {
  hlo_computation *c = pc->c;
  int n = pc->n_instrs;
  if (n == 0) return err_at(p, close_pos, "computation '%s' has no instructions", c->name);
  for (int i = 0; i < n; i++) {
    pinstr *pi = &pc->instrs[i];
    pi->op_idx = arena_calloc(p->tmp, pi->n_ops ? (size_t)pi->n_ops : 1, sizeof(int));
    hlo_instr **ops = arena_calloc(p->tmp, pi->n_ops ? (size_t)pi->n_ops : 1, sizeof(hlo_instr *));
    for (int k = 0; k < pi->n_ops; k++) {
      ref *r = &pi->ops[k];
      int j = map_get(&pc->names, r->name);
      if (j < 0)
        return err_at(p, r->pos, "unknown operand '%s' of instruction '%s' (no instruction of that name in computation '%s')",
                      r->name, pi->ins->name, c->name);
      hlo_instr *o = pc->instrs[j].ins;
      if (r->has_shape && !shape_compatible(&r->shape, &o->shape)) {
        char *a = shape_to_string(&r->shape), *b = shape_to_string(&o->shape);
        kiln_status st = err_at(p, r->pos, "operand '%s' is written with shape %s, but '%s' has shape %s", r->name, a,
                                r->name, b);
        free(a);
        free(b);
        return st;
      }
      pi->op_idx[k] = j;
      ops[k] = o;
    }
    hlo_instr_set_operands(pi->ins, pi->n_ops, ops);
  }

  /* Iterative DFS: chains of 100k instructions must not overflow the C stack. */
  unsigned char *state = arena_calloc(p->tmp, (size_t)n, 1); /* 0 new, 1 open, 2 done */
  int *stack = arena_calloc(p->tmp, (size_t)n, sizeof(int));
  int *next_op = arena_calloc(p->tmp, (size_t)n, sizeof(int));
  int out = 0;
  for (int s = 0; s < n; s++) {
    if (state[s]) continue;
    int top = 0;
    stack[top++] = s;
    state[s] = 1;
    while (top) {
      int v = stack[top - 1];
      pinstr *pv = &pc->instrs[v];
      if (next_op[v] < pv->n_ops) {
        int k = next_op[v]++;
        int u = pv->op_idx[k];
        if (state[u] == 1)
          return err_at(p, pv->ops[k].pos, "cycle in computation '%s': '%s' depends on itself through operand '%s'",
                        c->name, pv->ins->name, pc->instrs[u].ins->name);
        if (state[u] == 0) {
          state[u] = 1;
          stack[top++] = u;
        }
      } else {
        state[v] = 2;
        c->instrs[out++] = pv->ins;
        top--;
      }
    }
  }
  c->root = pc->instrs[pc->root_idx >= 0 ? pc->root_idx : n - 1].ins;

  kiln_status st = hlo_computation_index_params(c);
  if (st) {
    int line, col;
    hlo_lex_line_col(&p->lx, pc->pos, &line, &col);
    return status_wrap(st, "%s:%d:%d", p->lx.filename, line, col);
  }
  return NULL;
}

static kiln_status check_signature(parser *p, pcomp *pc) {
  hlo_computation *c = pc->c;
  if (!pc->has_sig) return NULL;
  if (pc->n_sig != c->n_params)
    return err_at(p, pc->pos, "computation '%s' declares %d parameters in its signature but has %d parameter instructions",
                  c->name, pc->n_sig, c->n_params);
  for (int i = 0; i < pc->n_sig; i++) {
    hlo_instr *param = c->params[i];
    if (!shape_compatible(&pc->sig[i].shape, &param->shape)) {
      char *a = shape_to_string(&pc->sig[i].shape), *b = shape_to_string(&param->shape);
      kiln_status st = err_at(p, pc->sig[i].pos,
                              "signature of computation '%s' gives parameter %d shape %s, but parameter '%s' has shape %s",
                              c->name, i, a, param->name, b);
      free(a);
      free(b);
      return st;
    }
  }
  if (!shape_compatible(&pc->sig_result, &c->root->shape)) {
    char *a = shape_to_string(&pc->sig_result), *b = shape_to_string(&c->root->shape);
    kiln_status st = err_at(p, pc->sig_result_pos,
                            "signature of computation '%s' gives result shape %s, but its root '%s' has shape %s",
                            c->name, a, c->root->name, b);
    free(a);
    free(b);
    return st;
  }
  return NULL;
}

static kiln_status parse_computation(parser *p) {
  hlo_lex_skip_ws(&p->lx);
  bool is_entry = hlo_lex_accept_word(&p->lx, "ENTRY");
  const char *name = NULL;
  size_t pos = 0;
  TRY(parse_name(p, is_entry ? "a computation name after ENTRY" : "a computation (or 'ENTRY')", &name, &pos));
  if (map_get(&p->comp_names, name) >= 0) return err_at(p, pos, "duplicate computation name '%s'", name);
  p->comps = grow_array(p->tmp, p->comps, p->n_comps, &p->cap_comps, sizeof *p->comps);
  int ci = p->n_comps++;
  pcomp *pc = &p->comps[ci];
  memset(pc, 0, sizeof *pc);
  pc->c = hlo_computation_new(p->m, name);
  pc->pos = pos;
  pc->is_entry = is_entry;
  pc->root_idx = -1;
  map_put(p->tmp, &p->comp_names, name, ci);

  if (hlo_lex_accept(&p->lx, '(')) {
    pc->has_sig = true;
    if (!hlo_lex_accept(&p->lx, ')')) {
      for (;;) {
        pc->sig = grow_array(p->tmp, pc->sig, pc->n_sig, &pc->cap_sig, sizeof *pc->sig);
        sig_param *sp = &pc->sig[pc->n_sig++];
        TRY(parse_name(p, "a parameter name", &sp->name, &sp->pos));
        TRY(hlo_lex_expect(&p->lx, ':'));
        TRY(parse_shape(p, &sp->shape));
        if (hlo_lex_accept(&p->lx, ')')) break;
        if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or ')' in the parameter list");
      }
    }
    if (!hlo_lex_accept_str(&p->lx, "->")) return expected(p, "'->' and the result shape");
    hlo_lex_skip_ws(&p->lx);
    pc->sig_result_pos = p->lx.pos;
    TRY(parse_shape(p, &pc->sig_result));
  }
  /* Computation attributes (execution_thread="..."): accepted and dropped. */
  while (hlo_lex_accept(&p->lx, ',')) {
    const char *k, *v;
    size_t kn, vn;
    if (!hlo_lex_ident(&p->lx, false, &k, &kn)) return expected(p, "a computation attribute");
    TRY(hlo_lex_expect(&p->lx, '='));
    TRY(scan_raw_value(p, &v, &vn));
  }
  if (!hlo_lex_accept(&p->lx, '{')) return expected(p, "'{' opening the computation body");
  for (;;) {
    int c = hlo_lex_peek(&p->lx);
    if (c == '}') break;
    if (c < 0) return expected(p, "'}' closing the computation body");
    TRY(parse_instruction(p, ci));
    pc = &p->comps[ci];
  }
  size_t close = p->lx.pos;
  p->lx.pos++;
  TRY(finish_computation(p, pc, close));
  return check_signature(p, pc);
}

/* ------------------------------------------------------------------------------------ */
/* Module                                                                                */

static kiln_status parse_entry_layout(parser *p) {
  hlo_lex_skip_ws(&p->lx);
  p->ecl_pos = p->lx.pos;
  TRY(hlo_lex_expect(&p->lx, '{'));
  TRY(hlo_lex_expect(&p->lx, '('));
  int cap = 0;
  if (!hlo_lex_accept(&p->lx, ')')) {
    for (;;) {
      p->ecl_params = grow_array(p->tmp, p->ecl_params, p->n_ecl, &cap, sizeof(hlo_shape));
      TRY(parse_shape(p, &p->ecl_params[p->n_ecl]));
      p->n_ecl++;
      if (hlo_lex_accept(&p->lx, ')')) break;
      if (!hlo_lex_accept(&p->lx, ',')) return expected(p, "',' or ')' in entry_computation_layout");
    }
  }
  if (!hlo_lex_accept_str(&p->lx, "->")) return expected(p, "'->' in entry_computation_layout");
  TRY(parse_shape(p, &p->ecl_result));
  TRY(hlo_lex_expect(&p->lx, '}'));
  p->has_ecl = true;
  return NULL;
}

static void add_module_raw_attr(parser *p, const char *k, size_t kn, const char *v, size_t vn) {
  hlo_module *m = p->m;
  hlo_raw_attr *na = arena_calloc(m->arena, (size_t)m->n_raw_attrs + 1, sizeof *na);
  if (m->n_raw_attrs) memcpy(na, m->raw_attrs, (size_t)m->n_raw_attrs * sizeof *na);
  na[m->n_raw_attrs].key = arena_strndup(m->arena, k, kn);
  na[m->n_raw_attrs].value = arena_strndup(m->arena, v, vn);
  m->raw_attrs = na;
  m->n_raw_attrs++;
}

static bool is_stack_frame_keyword(parser *p) {
  static const char *const kws[] = {"FileNames", "FunctionNames", "FileLocations", "StackFrames"};
  for (int i = 0; i < 4; i++) {
    size_t save = p->lx.pos;
    bool yes = hlo_lex_accept_word(&p->lx, kws[i]);
    p->lx.pos = save;
    if (yes) return true;
  }
  return false;
}

/* The stack-frame index of newer dumps: section keywords followed by "N "string"" or
 * "N {...}" lines, kept verbatim. */
static kiln_status parse_stack_frames(parser *p) {
  hlo_lex_skip_ws(&p->lx);
  size_t start = p->lx.pos, end = start;
  for (;;) {
    if (is_stack_frame_keyword(p)) {
      const char *s;
      size_t n;
      hlo_lex_ident(&p->lx, false, &s, &n);
    } else {
      int c = hlo_lex_peek(&p->lx);
      if (!(c >= '0' && c <= '9')) break;
      int64_t id;
      TRY(hlo_lex_int64(&p->lx, "a stack-frame table id", &id));
      int v = hlo_lex_peek(&p->lx);
      if (v != '"' && v != '{') return expected(p, "a quoted name or '{' in the stack-frame tables");
      const char *s;
      size_t n;
      TRY(scan_raw_value(p, &s, &n));
    }
    end = p->lx.pos;
  }
  p->m->stack_frames = arena_strndup(p->m->arena, p->lx.src + start, end - start);
  return NULL;
}

static kiln_status parse_header(parser *p) {
  hlo_lex_skip_ws(&p->lx);
  if (!hlo_lex_accept_word(&p->lx, "HloModule")) return NULL; /* headerless text: one computation set */
  const char *s;
  size_t n;
  if (!hlo_lex_ident(&p->lx, false, &s, &n)) return expected(p, "a module name after HloModule");
  p->m->name = arena_strndup(p->m->arena, s, n);
  while (hlo_lex_accept(&p->lx, ',')) {
    hlo_lex_skip_ws(&p->lx);
    size_t kpos = p->lx.pos;
    const char *k, *v;
    size_t kn, vn;
    if (!hlo_lex_ident(&p->lx, false, &k, &kn)) return expected(p, "a module attribute name");
    TRY(hlo_lex_expect(&p->lx, '='));
    if (kn == 24 && memcmp(k, "entry_computation_layout", kn) == 0) {
      if (p->has_ecl) return err_at(p, kpos, "entry_computation_layout given twice");
      TRY(parse_entry_layout(p));
      continue;
    }
    for (int i = 0; i < p->m->n_raw_attrs; i++)
      if (strlen(p->m->raw_attrs[i].key) == kn && memcmp(p->m->raw_attrs[i].key, k, kn) == 0)
        return err_at(p, kpos, "module attribute '%.*s' given twice", (int)kn, k);
    TRY(scan_raw_value(p, &v, &vn));
    add_module_raw_attr(p, k, kn, v, vn);
  }
  if (is_stack_frame_keyword(p)) TRY(parse_stack_frames(p));
  return NULL;
}

static kiln_status resolve_calls(parser *p) {
  for (int ci = 0; ci < p->n_comps; ci++) {
    pcomp *pc = &p->comps[ci];
    for (int i = 0; i < pc->n_instrs; i++) {
      pinstr *pi = &pc->instrs[i];
      hlo_computation **called = arena_calloc(p->tmp, pi->n_called ? (size_t)pi->n_called : 1, sizeof *called);
      for (int k = 0; k < pi->n_called; k++) {
        int j = map_get(&p->comp_names, pi->called[k].name);
        if (j < 0)
          return err_at(p, pi->called[k].pos, "unknown computation '%s' called by instruction '%s'", pi->called[k].name,
                        pi->ins->name);
        if (p->comps[j].is_entry)
          return err_at(p, pi->called[k].pos, "instruction '%s' calls the entry computation '%s'", pi->ins->name,
                        pi->called[k].name);
        called[k] = p->comps[j].c;
        if (pi->ins->op == HLO_OP_FUSION) called[k]->is_fusion_computation = true;
      }
      hlo_instr_set_called(pi->ins, pi->n_called, called);
    }
  }
  return NULL;
}

/* Orders computations callees-first (DFS post-order in text order, so an ordered file
 * keeps its order) with the entry last; recursion among computations is an error. */
static kiln_status order_computations(parser *p, int entry) {
  int n = p->n_comps;
  unsigned char *state = arena_calloc(p->tmp, (size_t)n, 1);
  int *stack = arena_calloc(p->tmp, (size_t)n, sizeof(int));
  int *next_instr = arena_calloc(p->tmp, (size_t)n, sizeof(int));
  int *next_call = arena_calloc(p->tmp, (size_t)n, sizeof(int));
  hlo_computation **order = arena_calloc(p->m->arena, (size_t)n, sizeof *order);
  int out = 0;
  for (int s = 0; s < n; s++) {
    if (state[s] || s == entry) continue;
    int top = 0;
    stack[top++] = s;
    state[s] = 1;
    while (top) {
      int v = stack[top - 1];
      pcomp *pv = &p->comps[v];
      int u = -1;
      pinstr *via = NULL;
      while (next_instr[v] < pv->n_instrs) {
        pinstr *pi = &pv->instrs[next_instr[v]];
        if (next_call[v] < pi->n_called) {
          u = map_get(&p->comp_names, pi->called[next_call[v]++].name);
          via = pi;
          break;
        }
        next_instr[v]++;
        next_call[v] = 0;
      }
      if (u < 0) {
        state[v] = 2;
        order[out++] = pv->c;
        top--;
        continue;
      }
      if (state[u] == 1)
        return err_at(p, via->pos, "computation '%s' calls itself (through '%s' calling '%s')", p->comps[u].c->name,
                      via->ins->name, p->comps[u].c->name);
      if (state[u] == 0) {
        state[u] = 1;
        stack[top++] = u;
      }
    }
  }
  order[out++] = p->comps[entry].c;
  p->m->comps = order;
  p->m->cap_comps = n;
  return NULL;
}

static kiln_status check_entry_layout(parser *p) {
  if (!p->has_ecl) return NULL;
  hlo_computation *e = p->m->entry;
  if (p->n_ecl != e->n_params)
    return err_at(p, p->ecl_pos, "entry_computation_layout lists %d parameters, but entry computation '%s' has %d",
                  p->n_ecl, e->name, e->n_params);
  for (int i = 0; i < p->n_ecl; i++) {
    if (!shape_compatible(&p->ecl_params[i], &e->params[i]->shape)) {
      char *a = shape_to_string(&p->ecl_params[i]), *b = shape_to_string(&e->params[i]->shape);
      kiln_status st = err_at(p, p->ecl_pos, "entry_computation_layout gives parameter %d shape %s, but '%s' has shape %s",
                              i, a, e->params[i]->name, b);
      free(a);
      free(b);
      return st;
    }
  }
  if (!shape_compatible(&p->ecl_result, &e->root->shape)) {
    char *a = shape_to_string(&p->ecl_result), *b = shape_to_string(&e->root->shape);
    kiln_status st = err_at(p, p->ecl_pos, "entry_computation_layout gives result shape %s, but the entry root '%s' has shape %s",
                            a, e->root->name, b);
    free(a);
    free(b);
    return st;
  }
  return NULL;
}

/* Instruction names are scoped per computation in the text (operands are looked up in
 * their own computation), as in XLA, where reducers written by hand commonly reuse the
 * entry's `lhs`/`rhs`; kiln's IR keeps them unique in the module (the verifier, the
 * builder and every dump rely on it). So a name already taken by an earlier-claimed
 * computation is renamed to "BASE.N" (BASE: the name without a trailing ".N"; N the
 * smallest number whose name no instruction of the module has). The entry claims its
 * names first, so entry parameters keep the names `kiln run -i NAME=` refers to; the
 * other computations follow in text order. */
static void uniquify_names(parser *p, int entry) {
  name_map all, taken, next;
  memset(&all, 0, sizeof all);
  memset(&taken, 0, sizeof taken);
  memset(&next, 0, sizeof next);
  bool dup = false;
  for (int ci = 0; ci < p->n_comps; ci++)
    for (int i = 0; i < p->comps[ci].n_instrs; i++) {
      const char *name = p->comps[ci].instrs[i].ins->name;
      if (map_get(&all, name) >= 0) dup = true;
      map_put(p->tmp, &all, name, ci);
    }
  if (!dup) return;
  for (int k = -1; k < p->n_comps; k++) {
    int ci = k < 0 ? entry : k;
    if (k >= 0 && ci == entry) continue;
    pcomp *pc = &p->comps[ci];
    for (int i = 0; i < pc->n_instrs; i++) {
      hlo_instr *ins = pc->instrs[i].ins;
      if (map_get(&taken, ins->name) >= 0) {
        size_t len = strlen(ins->name), base = len;
        while (base > 0 && ins->name[base - 1] >= '0' && ins->name[base - 1] <= '9') base--;
        if (base > 1 && base < len && ins->name[base - 1] == '.')
          base--;
        else
          base = len;
        char *b = tmp_strndup(p, ins->name, base);
        int n = map_get(&next, b);
        if (n < 1) n = 1;
        const char *cand = NULL;
        for (;; n++) {
          cand = arena_printf(p->m->arena, "%s.%d", b, n);
          if (map_get(&all, cand) < 0 && map_get(&taken, cand) < 0) break;
        }
        map_put(p->tmp, &next, b, n + 1);
        ins->name = cand;
      }
      map_put(p->tmp, &taken, ins->name, ci);
    }
  }
}

static kiln_status parse_module(parser *p) {
  hlo_lex_skip_ws(&p->lx);
  if (p->lx.len - p->lx.pos >= 3 && memcmp(p->lx.src + p->lx.pos, "\xef\xbb\xbf", 3) == 0) p->lx.pos += 3;
  for (size_t i = 0; i < p->lx.len; i++)
    if (p->lx.src[i] == 0) return err_at(p, i, "unexpected NUL byte in HLO text");
  hlo_lex_skip_ws(&p->lx);
  bool has_header = hlo_lex_peek(&p->lx) >= 0 && (p->lx.len - p->lx.pos >= 9) &&
                    memcmp(p->lx.src + p->lx.pos, "HloModule", 9) == 0;
  TRY(parse_header(p));
  int entry = -1;
  while (hlo_lex_peek(&p->lx) >= 0) {
    size_t pos = p->lx.pos;
    TRY(parse_computation(p));
    if (p->comps[p->n_comps - 1].is_entry) {
      if (entry >= 0)
        return err_at(p, pos, "second ENTRY computation '%s' (the first is '%s')", p->comps[p->n_comps - 1].c->name,
                      p->comps[entry].c->name);
      entry = p->n_comps - 1;
    }
  }
  if (p->n_comps == 0)
    return expected(p, has_header ? "a computation" : "'HloModule' or a computation");
  if (entry < 0) {
    entry = p->n_comps - 1;
    p->comps[entry].is_entry = true;
  }
  TRY(resolve_calls(p));
  TRY(order_computations(p, entry));
  p->m->entry = p->comps[entry].c;
  p->m->entry->is_entry = true;
  TRY(check_entry_layout(p));
  /* Last, so every message above names instructions as the text does. */
  uniquify_names(p, entry);
  return NULL;
}

kiln_status hlo_parse(const char *text, size_t len, const char *filename, hlo_module **out) {
  *out = NULL;
  parser p;
  memset(&p, 0, sizeof p);
  hlo_lex_init(&p.lx, text ? text : "", text ? len : 0, filename);
  p.tmp = arena_new();
  p.m = hlo_module_new("module");
  strbuf_init(&p.elided);
  kiln_status st = parse_module(&p);
  if (st) {
    hlo_module_free(p.m);
  } else {
    if (p.n_elided)
      log_warning("%s: %d constant%s elided as {...} (%s%s) filled with deterministic pseudo-random values",
                  p.lx.filename, p.n_elided, p.n_elided == 1 ? "" : "s", strbuf_cstr(&p.elided),
                  p.n_elided > 8 ? ", ..." : "");
    *out = p.m;
  }
  strbuf_free(&p.elided);
  arena_free(p.tmp);
  return st;
}

kiln_status hlo_parse_file(const char *path, hlo_module **out) {
  *out = NULL;
  char *text;
  size_t len;
  TRY(file_read_all(path, "HLO file", 0, &text, &len));
  kiln_status st = hlo_parse(text, len, path, out);
  free(text);
  return st;
}
