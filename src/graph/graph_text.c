/* The graph text format (grammar in graph.h): printer and parser.
 *
 * The printer writes one statement per line in a fixed order (framework, functions,
 * inputs, nodes in graph order, results) so that printing what the parser read gives
 * the same text back. The parser is a hand-written recursive descent over the raw
 * bytes: the format is small, lexing depends on context (a name may start with a
 * digit, a number with '-'), and a cursor makes it easy to name the line and column of
 * anything that goes wrong. References to nodes and functions may come before their
 * definitions (loops and libraries need that), so edges, results and function
 * references are recorded while reading and resolved at the end; everything read goes
 * straight into the graph's arena, so a failed parse frees the graph and leaks
 * nothing. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "graph/graph.h"

/* ================================================================================== */
/* Printer                                                                             */

static bool is_name_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == '-';
}

static bool is_device_char(int c) { return is_name_char(c) || c == ':' || c == '*'; }

static void print_word(strbuf *b, const char *s, bool (*ok)(int)) {
  bool bare = *s != 0;
  for (const char *p = s; *p && bare; p++) bare = ok((unsigned char)*p);
  if (bare) strbuf_append(b, s);
  else tensor_print_quoted(b, s, strlen(s));
}

static void print_name(strbuf *b, const char *s) { print_word(b, s, is_name_char); }

static void print_shape_dims(strbuf *b, const graph_shape *s) {
  for (int i = 0; i < s->rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (s->dims[i] < 0) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)s->dims[i]);
  }
}

static void print_type_spec(strbuf *b, graph_dtype t, const graph_shape *s) {
  strbuf_append(b, graph_dtype_name(t));
  if (s->rank < 0) return;
  strbuf_putc(b, '[');
  print_shape_dims(b, s);
  strbuf_putc(b, ']');
}

static void print_attr_float(strbuf *b, float f) {
  size_t start = b->len;
  tensor_print_float(b, f, GRAPH_DT_FLOAT);
  /* An attribute float must not read back as an int. */
  if (!strpbrk(strbuf_cstr(b) + start, ".en")) strbuf_append(b, ".0");
}

static void print_value(strbuf *b, const graph_attr_value *v, int64_t max_elems);

static void print_attr_list(strbuf *b, int n, const graph_attr *attrs, int64_t max_elems) {
  for (int i = 0; i < n; i++) {
    if (i) strbuf_append(b, ", ");
    const char *k = attrs[i].name;
    if (strcmp(k, "device") == 0 || strcmp(k, "assigned_device") == 0) tensor_print_quoted(b, k, strlen(k));
    else print_name(b, k);
    strbuf_putc(b, '=');
    print_value(b, &attrs[i].value, max_elems);
  }
}

static void print_value(strbuf *b, const graph_attr_value *v, int64_t max_elems) {
  switch (v->kind) {
    case GRAPH_ATTR_NONE: strbuf_append(b, "[]"); return;
    case GRAPH_ATTR_INT: strbuf_printf(b, "%lld", (long long)v->i); return;
    case GRAPH_ATTR_FLOAT: print_attr_float(b, v->f); return;
    case GRAPH_ATTR_BOOL: strbuf_append(b, v->b ? "true" : "false"); return;
    case GRAPH_ATTR_STRING: tensor_print_quoted(b, v->s.data, v->s.len); return;
    case GRAPH_ATTR_TYPE: strbuf_append(b, graph_dtype_name(v->type)); return;
    case GRAPH_ATTR_SHAPE:
      if (!v->shape || v->shape->rank < 0) {
        strbuf_append(b, "<unknown>");
      } else {
        strbuf_putc(b, '<');
        print_shape_dims(b, v->shape);
        strbuf_putc(b, '>');
      }
      return;
    case GRAPH_ATTR_TENSOR:
      if (v->tensor) tensor_print(b, v->tensor, max_elems);
      else strbuf_append(b, "tensor<?[]>{}"); /* only a broken graph has this; the parser refuses it */
      return;
    case GRAPH_ATTR_FUNC:
      strbuf_putc(b, '@');
      print_name(b, v->func.name ? v->func.name : "");
      if (v->func.n_attrs) {
        strbuf_putc(b, '[');
        print_attr_list(b, v->func.n_attrs, v->func.attrs, max_elems);
        strbuf_putc(b, ']');
      }
      return;
    case GRAPH_ATTR_LIST:
      strbuf_putc(b, '[');
      for (int i = 0; i < v->list.n; i++) {
        if (i) strbuf_append(b, ", ");
        print_value(b, &v->list.items[i], max_elems);
      }
      strbuf_putc(b, ']');
      return;
  }
}

void graph_attr_value_print(strbuf *b, const graph_attr_value *v) { print_value(b, v, 0); }

/* [attrs, device=..., assigned_device=...]; nothing when all are absent. */
static void print_node_attrs(strbuf *b, const graph_node *n, int64_t max_elems) {
  if (!n->n_attrs && !n->requested_device && !n->assigned_device) return;
  strbuf_putc(b, '[');
  print_attr_list(b, n->n_attrs, n->attrs, max_elems);
  bool sep = n->n_attrs > 0;
  if (n->requested_device) {
    strbuf_append(b, sep ? ", device=" : "device=");
    print_word(b, n->requested_device, is_device_char);
    sep = true;
  }
  if (n->assigned_device) {
    strbuf_append(b, sep ? ", assigned_device=" : "assigned_device=");
    print_word(b, n->assigned_device, is_device_char);
  }
  strbuf_putc(b, ']');
}

static void print_op(strbuf *b, const graph_node *n) {
  const char *fw = n->graph->root->framework;
  if (fw) {
    size_t k = strlen(fw);
    const char *rest = n->op + k + 1;
    if (strncmp(n->op, fw, k) == 0 && n->op[k] == '.' && *rest && !strchr(rest, '.')) {
      print_name(b, rest);
      return;
    }
  }
  print_name(b, n->op);
}

static void print_node_line(strbuf *b, const graph_node *n, int64_t max_elems) {
  print_name(b, n->name);
  strbuf_append(b, " = ");
  print_op(b, n);
  print_node_attrs(b, n, max_elems);
  strbuf_putc(b, '(');
  for (int i = 0; i < n->n_inputs; i++) {
    if (i) strbuf_append(b, ", ");
    print_name(b, n->inputs[i].node->name);
    if (n->inputs[i].port) strbuf_printf(b, ":%d", n->inputs[i].port);
  }
  strbuf_putc(b, ')');
  for (int i = 0; i < n->n_control; i++) {
    strbuf_append(b, i ? ", " : " @ ");
    print_name(b, n->control_inputs[i]->name);
  }
  bool unknown_single = n->n_outputs == 1 && n->outputs[0].dtype == GRAPH_DT_INVALID && n->outputs[0].shape.rank < 0;
  if (!unknown_single) {
    strbuf_append(b, " -> (");
    for (int i = 0; i < n->n_outputs; i++) {
      if (i) strbuf_append(b, ", ");
      print_type_spec(b, n->outputs[i].dtype, &n->outputs[i].shape);
    }
    strbuf_putc(b, ')');
  }
}

void graph_node_print(strbuf *b, const graph_node *n) { print_node_line(b, n, 16); }

static void print_body(strbuf *b, const graph *g, const char *indent, int64_t max_elems) {
  for (int i = 0; i < g->n_inputs; i++) {
    const graph_node *n = g->inputs[i];
    strbuf_append(b, indent);
    strbuf_append(b, "input ");
    print_name(b, n->name);
    print_node_attrs(b, n, max_elems);
    strbuf_append(b, ": ");
    print_type_spec(b, n->outputs[0].dtype, &n->outputs[0].shape);
    strbuf_putc(b, '\n');
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    if (n->is_input) continue;
    strbuf_append(b, indent);
    print_node_line(b, n, max_elems);
    strbuf_putc(b, '\n');
  }
  for (int i = 0; i < g->n_results; i++) {
    strbuf_append(b, indent);
    strbuf_append(b, "output ");
    print_name(b, g->results[i].name);
    strbuf_append(b, " = ");
    print_name(b, g->results[i].node->name);
    strbuf_printf(b, ":%d\n", g->results[i].port);
  }
}

void graph_print(strbuf *b, const graph *g, const graph_print_options *opts) {
  int64_t max_elems = opts ? opts->max_tensor_elements : 0;
  const graph *root = g->root;
  if (root->framework) {
    strbuf_append(b, "framework ");
    print_name(b, root->framework);
    strbuf_append(b, "\n\n");
  }
  for (int i = 0; i < root->n_functions; i++) {
    const graph *f = root->functions[i];
    strbuf_append(b, "graph ");
    print_name(b, f->name);
    strbuf_append(b, " {\n");
    print_body(b, f, "  ", max_elems);
    strbuf_append(b, "}\n\n");
  }
  print_body(b, g, "", max_elems);
}

char *graph_to_string(const graph *g) {
  strbuf b;
  strbuf_init(&b);
  graph_print(&b, g, NULL);
  return strbuf_take(&b);
}

/* ================================================================================== */
/* Parser                                                                              */

enum { MAX_VALUE_DEPTH = 32, MAX_NUMBER_LEN = 64 };

typedef enum pending_kind { PEND_DATA, PEND_CONTROL, PEND_RESULT } pending_kind;

/* An edge or result whose source node may not have been read yet. */
typedef struct pending {
  pending_kind kind;
  graph *g;
  graph_node *dst;     /* data/control */
  const char *result;  /* result name */
  const char *src;
  int port;
  const char *at;      /* where src was written */
} pending;

typedef struct func_use {
  const char *name;
  const char *at;
} func_use;

typedef struct parser {
  const char *text, *p, *end;
  const char *filename;
  graph *root, *cur;
  bool seen_statement;
  int n_pend, cap_pend;
  pending *pend;
  int n_results, cap_results; /* the result statements again, for duplicate checks */
  pending *results;
  int n_fuse, cap_fuse;
  func_use *fuse;
  int n_declared, cap_declared; /* nodes with "-> (...)": their ports are fixed */
  graph_node **declared;
  uint64_t elided_seed;
} parser;

static void *grow_heap(void *arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return arr;
  int c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  void *n = realloc(arr, (size_t)c * elem);
  if (!n) {
    fprintf(stderr, "kiln: out of memory\n");
    abort();
  }
  *cap = c;
  return n;
}

static void location(const parser *P, const char *at, int *line, int *col) {
  int l = 1;
  const char *ls = P->text;
  for (const char *q = P->text; q < at && q < P->end; q++)
    if (*q == '\n') {
      l++;
      ls = q + 1;
    }
  *line = l;
  *col = (int)(at - ls) + 1;
}

static kiln_status fail_at(const parser *P, const char *at, const char *fmt, ...) KILN_PRINTF(3, 4);
static kiln_status fail_at(const parser *P, const char *at, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  location(P, at, &line, &col);
  return ERR_INVALID("%s:%d:%d: %s", P->filename, line, col, msg);
}

static kiln_status wrap_at(const parser *P, const char *at, kiln_status s) {
  if (!s) return NULL;
  int line, col;
  location(P, at, &line, &col);
  return status_wrap(s, "%s:%d:%d", P->filename, line, col);
}

static int peek(const parser *P) { return P->p < P->end ? (unsigned char)*P->p : -1; }

static int peek_at(const parser *P, size_t k) {
  return P->p + k < P->end ? (unsigned char)P->p[k] : -1;
}

static void skip_ws(parser *P) {
  while (P->p < P->end) {
    char c = *P->p;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      P->p++;
    } else if (c == '#') {
      while (P->p < P->end && *P->p != '\n') P->p++;
    } else {
      break;
    }
  }
}

/* "found 'xyz'" for messages: the word or the character at the cursor. */
static const char *found(const parser *P, char *buf, size_t cap) {
  if (P->p >= P->end) return "end of input";
  unsigned char c = (unsigned char)*P->p;
  if (is_name_char(c)) {
    size_t n = 0;
    while (P->p + n < P->end && is_name_char((unsigned char)P->p[n]) && n < 24) n++;
    snprintf(buf, cap, "'%.*s'", (int)n, P->p);
  } else if (c >= 0x20 && c < 0x7f) {
    snprintf(buf, cap, "'%c'", c);
  } else {
    snprintf(buf, cap, "byte 0x%02x", c);
  }
  return buf;
}

static kiln_status expected(const parser *P, const char *what) {
  char buf[64];
  return fail_at(P, P->p, "expected %s, found %s", what, found(P, buf, sizeof buf));
}

static bool accept(parser *P, char c) {
  skip_ws(P);
  if (peek(P) == c) {
    P->p++;
    return true;
  }
  return false;
}

static kiln_status expect(parser *P, char c) {
  if (accept(P, c)) return NULL;
  char what[8] = {'\'', c, '\'', 0};
  return expected(P, what);
}

/* Word of [A-Za-z0-9_] at the cursor (after whitespace), not consumed. */
static size_t word_len(parser *P) {
  skip_ws(P);
  size_t n = 0;
  while (P->p + n < P->end && (isalnum((unsigned char)P->p[n]) || P->p[n] == '_')) n++;
  return n;
}

static bool word_is(parser *P, const char *w) {
  size_t n = word_len(P);
  return n == strlen(w) && memcmp(P->p, w, n) == 0;
}

/* "..." with escapes; P->p at the opening quote. Result in the root arena. */
static kiln_status parse_quoted(parser *P, graph_bytes *out) {
  const char *open = P->p;
  P->p++;
  strbuf b;
  strbuf_init(&b);
  kiln_status st = NULL;
  for (;;) {
    if (P->p >= P->end || *P->p == '\n') {
      st = fail_at(P, open, "unterminated string");
      break;
    }
    char c = *P->p++;
    if (c == '"') break;
    if (c != '\\') {
      strbuf_putc(&b, c);
      continue;
    }
    if (P->p >= P->end) {
      st = fail_at(P, open, "unterminated string");
      break;
    }
    const char *esc = P->p - 1;
    char e = *P->p++;
    if (e == 'n') strbuf_putc(&b, '\n');
    else if (e == 't') strbuf_putc(&b, '\t');
    else if (e == 'r') strbuf_putc(&b, '\r');
    else if (e == '\\' || e == '"' || e == '\'') strbuf_putc(&b, e);
    else if (e == 'x' && P->end - P->p >= 2 && isxdigit((unsigned char)P->p[0]) && isxdigit((unsigned char)P->p[1])) {
      char hex[3] = {P->p[0], P->p[1], 0};
      strbuf_putc(&b, (char)strtol(hex, NULL, 16));
      P->p += 2;
    } else {
      st = fail_at(P, esc, "unknown escape in string (use \\\\ \\\" \\n \\t \\r or \\xHH)");
      break;
    }
  }
  if (!st) {
    out->len = b.len;
    out->data = arena_alloc(P->root->arena, b.len + 1);
    if (b.len) memcpy(out->data, b.data, b.len);
    out->data[b.len] = 0;
  }
  strbuf_free(&b);
  return st;
}

/* A bare name ([A-Za-z0-9_./-]+, or with `device` also ':' and '*') or a quoted one,
 * as a NUL-terminated arena string. */
static kiln_status parse_word(parser *P, const char *what, bool device, const char **out, const char **at) {
  *out = NULL;
  skip_ws(P);
  *at = P->p;
  if (peek(P) == '"') {
    graph_bytes s;
    TRY(parse_quoted(P, &s));
    if (memchr(s.data, 0, s.len)) return fail_at(P, *at, "%s cannot contain a NUL byte", what);
    *out = s.data;
    return NULL;
  }
  const char *s = P->p;
  while (P->p < P->end && (device ? is_device_char((unsigned char)*P->p) : is_name_char((unsigned char)*P->p))) P->p++;
  if (P->p == s) return expected(P, what);
  *out = arena_strndup(P->root->arena, s, (size_t)(P->p - s));
  return NULL;
}

static kiln_status parse_name(parser *P, const char *what, const char **out, const char **at) {
  return parse_word(P, what, false, out, at);
}

/* A number token: [+-] then letters, digits, '.', and a sign right after an exponent
 * 'e'. Classified by the caller. */
static kiln_status number_token(parser *P, char *buf, const char **at) {
  skip_ws(P);
  *at = P->p;
  size_t n = 0;
  const char *q = P->p;
  if (q < P->end && (*q == '-' || *q == '+')) q++;
  while (q < P->end) {
    char c = *q;
    /* A sign continues the token only as an exponent sign: digit or '.', 'e', sign. */
    bool exp_sign = (c == '-' || c == '+') && q - P->p >= 2 && (q[-1] == 'e' || q[-1] == 'E') &&
                    (isdigit((unsigned char)q[-2]) || q[-2] == '.');
    if (!(isalnum((unsigned char)c) || c == '.' || exp_sign)) break;
    q++;
  }
  n = (size_t)(q - P->p);
  if (n == 0 || (n == 1 && (*P->p == '-' || *P->p == '+'))) return expected(P, "a number");
  if (n >= MAX_NUMBER_LEN) return fail_at(P, *at, "number is too long");
  memcpy(buf, P->p, n);
  buf[n] = 0;
  P->p = q;
  return NULL;
}

static bool token_is_float(const char *t) {
  const char *u = t + (*t == '-' || *t == '+');
  if (strcmp(u, "inf") == 0 || strcmp(u, "nan") == 0) return true;
  return strpbrk(u, ".eE") != NULL;
}

static kiln_status token_to_double(const parser *P, const char *t, const char *at, double *out) {
  const char *u = t + (*t == '-' || *t == '+');
  bool neg = *t == '-';
  if (strcmp(u, "inf") == 0) {
    *out = neg ? -INFINITY : INFINITY;
    return NULL;
  }
  if (strcmp(u, "nan") == 0) {
    *out = neg ? -NAN : NAN;
    return NULL;
  }
  for (const char *c = u; *c; c++)
    if (!isdigit((unsigned char)*c) && !strchr(".eE+-", *c)) return fail_at(P, at, "malformed number '%s'", t);
  char *endp;
  errno = 0;
  *out = strtod(t, &endp);
  if (*endp || endp == t) return fail_at(P, at, "malformed number '%s'", t);
  return NULL;
}

/* Integer token: sign and magnitude (up to 2^64 - 1). */
static kiln_status token_to_int(const parser *P, const char *t, const char *at, bool *neg, uint64_t *mag) {
  *neg = *t == '-';
  const char *u = t + (*t == '-' || *t == '+');
  if (!*u) return fail_at(P, at, "malformed integer '%s'", t);
  uint64_t v = 0;
  for (const char *c = u; *c; c++) {
    if (!isdigit((unsigned char)*c)) return fail_at(P, at, "malformed integer '%s'", t);
    unsigned d = (unsigned)(*c - '0');
    if (v > (UINT64_MAX - d) / 10) return fail_at(P, at, "integer '%s' is out of range", t);
    v = v * 10 + d;
  }
  *mag = v;
  return NULL;
}

static kiln_status parse_int64(parser *P, int64_t *out) {
  char buf[MAX_NUMBER_LEN];
  const char *at;
  TRY(number_token(P, buf, &at));
  if (token_is_float(buf)) return fail_at(P, at, "expected an integer, found '%s'", buf);
  bool neg;
  uint64_t mag;
  TRY(token_to_int(P, buf, at, &neg, &mag));
  if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
    return fail_at(P, at, "integer '%s' does not fit in 64 bits", buf);
  *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return NULL;
}

static kiln_status parse_dtype(parser *P, bool allow_unknown, graph_dtype *out) {
  skip_ws(P);
  const char *at = P->p;
  if (peek(P) == '?') {
    if (!allow_unknown) return fail_at(P, at, "a tensor needs a known element type");
    P->p++;
    *out = GRAPH_DT_INVALID;
    return NULL;
  }
  size_t n = word_len(P);
  if (!n || !graph_dtype_from_name(P->p, n, out)) return expected(P, "an element type (float, int32, ...)");
  P->p += n;
  return NULL;
}

/* Dimensions up to the closing bracket `close` (the opener is consumed). */
static kiln_status parse_dims(parser *P, char close, bool allow_unknown, graph_shape *s) {
  s->rank = 0;
  if (accept(P, close)) return NULL;
  for (;;) {
    skip_ws(P);
    if (s->rank == GRAPH_MAX_RANK) return fail_at(P, P->p, "more than %d dimensions", GRAPH_MAX_RANK);
    if (peek(P) == '?') {
      if (!allow_unknown) return fail_at(P, P->p, "a tensor's dimensions must be known");
      P->p++;
      s->dims[s->rank++] = GRAPH_UNKNOWN;
    } else {
      const char *at = P->p;
      int64_t d;
      if (peek(P) < '0' || peek(P) > '9') return expected(P, allow_unknown ? "a dimension or '?'" : "a dimension");
      TRY(parse_int64(P, &d));
      if (d < 0) return fail_at(P, at, "dimension %lld is negative", (long long)d);
      s->dims[s->rank++] = d;
    }
    if (accept(P, close)) return NULL;
    if (!accept(P, ',')) {
      char what[16];
      snprintf(what, sizeof what, "',' or '%c'", close);
      return expected(P, what);
    }
  }
}

/* DTYPE or DTYPE[DIMS] (absent dims: unknown rank). */
static kiln_status parse_type_spec(parser *P, graph_dtype *t, graph_shape *s) {
  TRY(parse_dtype(P, true, t));
  *s = graph_shape_unknown();
  if (accept(P, '[')) TRY(parse_dims(P, ']', true, s));
  return NULL;
}

/* One tensor element at linear index i. */
static kiln_status parse_element(parser *P, graph_tensor *t, int64_t i) {
  skip_ws(P);
  const char *at = P->p;
  switch (t->dtype) {
    case GRAPH_DT_STRING: {
      if (peek(P) != '"') return expected(P, "a quoted string");
      graph_bytes s;
      TRY(parse_quoted(P, &s));
      tensor_set_string(t, i, s.data, s.len);
      return NULL;
    }
    case GRAPH_DT_BOOL:
      if (word_is(P, "true") || word_is(P, "false")) {
        tensor_set_s64(t, i, *P->p == 't');
        P->p += *P->p == 't' ? 4 : 5;
        return NULL;
      }
      return expected(P, "true or false");
    case GRAPH_DT_COMPLEX64:
    case GRAPH_DT_COMPLEX128: {
      char buf[MAX_NUMBER_LEN];
      double re, im;
      const char *nat;
      TRY(expect(P, '('));
      TRY(number_token(P, buf, &nat));
      TRY(token_to_double(P, buf, nat, &re));
      TRY(expect(P, ','));
      TRY(number_token(P, buf, &nat));
      TRY(token_to_double(P, buf, nat, &im));
      TRY(expect(P, ')'));
      if (t->dtype == GRAPH_DT_COMPLEX64) {
        ((float *)t->data)[2 * i] = (float)re;
        ((float *)t->data)[2 * i + 1] = (float)im;
      } else {
        ((double *)t->data)[2 * i] = re;
        ((double *)t->data)[2 * i + 1] = im;
      }
      return NULL;
    }
    default: break;
  }
  char buf[MAX_NUMBER_LEN];
  TRY(number_token(P, buf, &at));
  if (graph_dtype_is_float(t->dtype)) {
    double v;
    TRY(token_to_double(P, buf, at, &v));
    tensor_set_f64(t, i, v);
    return NULL;
  }
  if (token_is_float(buf)) return fail_at(P, at, "expected an integer for a %s tensor, found '%s'", graph_dtype_name(t->dtype), buf);
  bool neg;
  uint64_t mag;
  TRY(token_to_int(P, buf, at, &neg, &mag));
  hlo_type h = HLO_S64;
  graph_dtype_to_hlo(t->dtype, &h); /* every integer dtype has one */
  int bits = hlo_type_bit_width(h);
  bool is_unsigned = hlo_type_is_unsigned_int(h);
  uint64_t max_pos = is_unsigned ? (bits == 64 ? UINT64_MAX : (1ull << bits) - 1) : (1ull << (bits - 1)) - 1;
  uint64_t max_neg = is_unsigned ? 0 : 1ull << (bits - 1);
  if (neg ? mag > max_neg : mag > max_pos)
    return fail_at(P, at, "%s is out of range for %s", buf, graph_dtype_name(t->dtype));
  if (t->dtype == GRAPH_DT_UINT64) ((uint64_t *)t->data)[i] = mag;
  else tensor_set_s64(t, i, neg ? (int64_t)(0 - mag) : (int64_t)mag);
  return NULL;
}

/* tensor<DTYPE[DIMS]>{values} with P->p after the word "tensor". The new tensor is
 * handed to the graph at once, so an error later in the file cannot leak it. */
static kiln_status parse_tensor(parser *P, const char *start, graph_tensor **out) {
  graph_dtype dt;
  graph_shape s;
  TRY(expect(P, '<'));
  TRY(parse_dtype(P, false, &dt));
  TRY(expect(P, '['));
  TRY(parse_dims(P, ']', false, &s));
  TRY(expect(P, '>'));
  TRY(expect(P, '{'));
  graph_tensor *t;
  TRY(wrap_at(P, start, tensor_create(dt, s.rank, s.dims, &t)));
  graph_adopt_tensor(P->root, t);
  *out = t;
  skip_ws(P);
  if (P->end - P->p >= 3 && memcmp(P->p, "...", 3) == 0) {
    P->p += 3;
    hlo_literal view;
    if (tensor_literal_view(t, &view)) literal_fill_pseudo_random(&view, P->elided_seed++);
    return expect(P, '}');
  }
  if (dt == GRAPH_DT_RESOURCE || dt == GRAPH_DT_VARIANT)
    return fail_at(P, P->p, "%s tensors have no values to write: use {...}", graph_dtype_name(dt));
  int64_t i = 0;
  if (accept(P, '}')) {
    if (t->n) return fail_at(P, P->p - 1, "expected %lld values, found none", (long long)t->n);
    return NULL;
  }
  for (;;) {
    if (i == t->n) {
      skip_ws(P);
      return fail_at(P, P->p, "more values than the %lld of the tensor's shape", (long long)t->n);
    }
    TRY(parse_element(P, t, i++));
    if (accept(P, '}')) break;
    if (!accept(P, ',')) return expected(P, "',' or '}'");
  }
  if (i != t->n)
    return fail_at(P, P->p - 1, "expected %lld values, found %lld", (long long)t->n, (long long)i);
  return NULL;
}

static kiln_status parse_value(parser *P, graph_attr_value *v, int depth);

/* ATTR=VALUE, ... up to ']' (the '[' is consumed). Device pseudo-attributes are
 * allowed only when `node` is given. Sorted, duplicate-free result in *attrs. */
static kiln_status parse_attr_block(parser *P, graph_node *node, int depth, int *n_out, graph_attr **attrs_out,
                                    int *cap_out) {
  int n = 0, cap = 0;
  graph_attr *attrs = NULL;
  bool had_device = false, had_assigned = false;
  if (accept(P, ']')) goto done;
  for (;;) {
    skip_ws(P);
    bool quoted = peek(P) == '"';
    const char *key, *at;
    TRY(parse_name(P, "an attribute name", &key, &at));
    TRY(expect(P, '='));
    if (!quoted && node && (strcmp(key, "device") == 0 || strcmp(key, "assigned_device") == 0)) {
      bool req = key[0] == 'd';
      if (req ? had_device : had_assigned) return fail_at(P, at, "attribute '%s' is given twice", key);
      const char *dev, *dat;
      TRY(parse_word(P, "a device name", true, &dev, &dat));
      if (req) {
        had_device = true;
        node->requested_device = dev;
      } else {
        had_assigned = true;
        node->assigned_device = dev;
      }
    } else {
      for (int i = 0; i < n; i++)
        if (strcmp(attrs[i].name, key) == 0) return fail_at(P, at, "attribute '%s' is given twice", key);
      if (n == cap) {
        int nc = cap ? cap * 2 : 4;
        graph_attr *na = arena_calloc(P->root->arena, (size_t)nc, sizeof *na);
        if (n) memcpy(na, attrs, (size_t)n * sizeof *na);
        attrs = na;
        cap = nc;
      }
      attrs[n].name = key;
      TRY(parse_value(P, &attrs[n].value, depth + 1));
      n++;
    }
    if (accept(P, ']')) break;
    if (!accept(P, ',')) return expected(P, "',' or ']'");
  }
done:
  /* Insertion sort: attribute lists are short, and the order must match the node's. */
  for (int i = 1; i < n; i++) {
    graph_attr x = attrs[i];
    int j = i - 1;
    while (j >= 0 && strcmp(attrs[j].name, x.name) > 0) {
      attrs[j + 1] = attrs[j];
      j--;
    }
    attrs[j + 1] = x;
  }
  *n_out = n;
  *attrs_out = attrs;
  if (cap_out) *cap_out = cap;
  return NULL;
}

static const char *kind_word(graph_attr_kind k) {
  switch (k) {
    case GRAPH_ATTR_INT: return "int";
    case GRAPH_ATTR_FLOAT: return "float";
    case GRAPH_ATTR_BOOL: return "bool";
    case GRAPH_ATTR_STRING: return "string";
    case GRAPH_ATTR_TYPE: return "type";
    case GRAPH_ATTR_SHAPE: return "shape";
    case GRAPH_ATTR_TENSOR: return "tensor";
    case GRAPH_ATTR_FUNC: return "function";
    default: return "other";
  }
}

static kiln_status parse_list(parser *P, graph_attr_value *v, int depth) {
  v->kind = GRAPH_ATTR_LIST;
  v->list.elem = GRAPH_ATTR_NONE;
  v->list.n = 0;
  v->list.items = NULL;
  if (accept(P, ']')) return NULL;
  int cap = 0;
  for (;;) {
    skip_ws(P);
    const char *at = P->p;
    if (peek(P) == '[') return fail_at(P, at, "lists cannot contain lists");
    graph_attr_value item;
    TRY(parse_value(P, &item, depth + 1));
    if (v->list.n == 0) v->list.elem = item.kind;
    else if (item.kind != v->list.elem)
      return fail_at(P, at, "list elements must all be of one kind, like the first (%s)", kind_word(v->list.elem));
    if (v->list.n == cap) {
      int nc = cap ? cap * 2 : 4;
      graph_attr_value *ni = arena_calloc(P->root->arena, (size_t)nc, sizeof *ni);
      if (v->list.n) memcpy(ni, v->list.items, (size_t)v->list.n * sizeof *ni);
      v->list.items = ni;
      cap = nc;
    }
    v->list.items[v->list.n++] = item;
    if (accept(P, ']')) return NULL;
    if (!accept(P, ',')) return expected(P, "',' or ']'");
  }
}

static kiln_status parse_value(parser *P, graph_attr_value *v, int depth) {
  memset(v, 0, sizeof *v);
  skip_ws(P);
  const char *at = P->p;
  if (depth > MAX_VALUE_DEPTH) return fail_at(P, at, "attribute values nest more than %d deep", MAX_VALUE_DEPTH);
  int c = peek(P);
  if (c == '"') {
    v->kind = GRAPH_ATTR_STRING;
    return parse_quoted(P, &v->s);
  }
  if (c == '<') {
    P->p++;
    v->kind = GRAPH_ATTR_SHAPE;
    v->shape = arena_alloc(P->root->arena, sizeof *v->shape);
    if (word_is(P, "unknown")) {
      P->p += 7;
      *v->shape = graph_shape_unknown();
      return expect(P, '>');
    }
    return parse_dims(P, '>', true, v->shape);
  }
  if (c == '[') {
    P->p++;
    return parse_list(P, v, depth);
  }
  if (c == '@') {
    P->p++;
    v->kind = GRAPH_ATTR_FUNC;
    const char *name, *nat;
    TRY(parse_name(P, "a function name", &name, &nat));
    v->func.name = name;
    P->fuse = grow_heap(P->fuse, &P->cap_fuse, P->n_fuse + 1, sizeof *P->fuse);
    P->fuse[P->n_fuse++] = (func_use){name, nat};
    skip_ws(P);
    if (peek(P) == '[') {
      P->p++;
      TRY(parse_attr_block(P, NULL, depth, &v->func.n_attrs, &v->func.attrs, NULL));
    }
    return NULL;
  }
  if (c == '?') {
    P->p++;
    v->kind = GRAPH_ATTR_TYPE;
    v->type = GRAPH_DT_INVALID;
    return NULL;
  }
  if (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9')) {
    char buf[MAX_NUMBER_LEN];
    TRY(number_token(P, buf, &at));
    if (token_is_float(buf)) {
      double d;
      TRY(token_to_double(P, buf, at, &d));
      v->kind = GRAPH_ATTR_FLOAT;
      v->f = (float)d;
      return NULL;
    }
    P->p = at;
    v->kind = GRAPH_ATTR_INT;
    return parse_int64(P, &v->i);
  }
  size_t n = word_len(P);
  if (n) {
    if (word_is(P, "true") || word_is(P, "false")) {
      v->kind = GRAPH_ATTR_BOOL;
      v->b = *P->p == 't';
      P->p += n;
      return NULL;
    }
    if (word_is(P, "inf") || word_is(P, "nan")) {
      v->kind = GRAPH_ATTR_FLOAT;
      v->f = *P->p == 'i' ? INFINITY : NAN;
      P->p += n;
      return NULL;
    }
    if (word_is(P, "tensor")) {
      P->p += n;
      v->kind = GRAPH_ATTR_TENSOR;
      return parse_tensor(P, at, &v->tensor);
    }
    graph_dtype dt;
    if (graph_dtype_from_name(P->p, n, &dt)) {
      P->p += n;
      v->kind = GRAPH_ATTR_TYPE;
      v->type = dt;
      return NULL;
    }
  }
  return expected(P, "an attribute value");
}

static void add_pending(parser *P, pending p) {
  P->pend = grow_heap(P->pend, &P->cap_pend, P->n_pend + 1, sizeof *P->pend);
  P->pend[P->n_pend++] = p;
}

/* NAME or NAME:PORT. */
static kiln_status parse_ref(parser *P, const char **name, int *port, const char **at) {
  TRY(parse_name(P, "a node name", name, at));
  *port = 0;
  if (P->p < P->end && *P->p == ':') {
    P->p++;
    skip_ws(P);
    const char *pat = P->p;
    int64_t v;
    if (peek(P) < '0' || peek(P) > '9') return expected(P, "an output port number");
    TRY(parse_int64(P, &v));
    if (v < 0 || v >= GRAPH_MAX_OUTPUTS) return fail_at(P, pat, "output port %lld is out of range", (long long)v);
    *port = (int)v;
  }
  return NULL;
}

static kiln_status check_new_node_name(parser *P, const char *name, const char *at) {
  if (graph_find_node(P->cur, name)) return fail_at(P, at, "node '%s' is defined twice", name);
  return NULL;
}

/* The parsed attributes already live in the root arena, sorted, with their tensors
 * adopted by the graph: the node takes the array as it is instead of copying each
 * value through graph_node_set_attr (which would double the arena use of big graphs). */
static void set_attrs(graph_node *n, int count, graph_attr *attrs, int cap) {
  n->attrs = attrs;
  n->n_attrs = count;
  n->cap_attrs = cap;
}

/* input NAME[ATTRS]: TYPE */
static kiln_status parse_input(parser *P) {
  const char *name, *at;
  TRY(parse_name(P, "an input name", &name, &at));
  TRY(check_new_node_name(P, name, at));
  graph_node *n;
  TRY(wrap_at(P, at, graph_add_input(P->cur, name, GRAPH_DT_INVALID, NULL, &n)));
  skip_ws(P);
  if (peek(P) == '[') {
    P->p++;
    int na, cap;
    graph_attr *attrs;
    TRY(parse_attr_block(P, n, 0, &na, &attrs, &cap));
    set_attrs(n, na, attrs, cap);
  }
  TRY(expect(P, ':'));
  graph_dtype t;
  graph_shape s;
  TRY(parse_type_spec(P, &t, &s));
  graph_node_set_output(n, 0, t, &s);
  return NULL;
}

/* output NAME = REF */
static kiln_status parse_output(parser *P) {
  const char *name, *at, *src, *sat;
  int port;
  TRY(parse_name(P, "a result name", &name, &at));
  for (int i = 0; i < P->n_results; i++)
    if (P->results[i].g == P->cur && strcmp(P->results[i].result, name) == 0)
      return fail_at(P, at, "result '%s' is defined twice", name);
  TRY(expect(P, '='));
  TRY(parse_ref(P, &src, &port, &sat));
  pending p = {PEND_RESULT, P->cur, NULL, name, src, port, sat};
  add_pending(P, p);
  P->results = grow_heap(P->results, &P->cap_results, P->n_results + 1, sizeof *P->results);
  P->results[P->n_results++] = p;
  return NULL;
}

/* NAME = OP[ATTRS](INPUTS) @ CONTROLS -> (TYPES), with NAME already read. */
static kiln_status parse_node(parser *P, const char *name, const char *at) {
  TRY(check_new_node_name(P, name, at));
  TRY(expect(P, '='));
  const char *op, *oat;
  TRY(parse_name(P, "an op name", &op, &oat));
  graph_node *n;
  TRY(wrap_at(P, at, graph_add_node(P->cur, name, op, &n)));
  skip_ws(P);
  if (peek(P) == '[') {
    P->p++;
    int na, cap;
    graph_attr *attrs;
    TRY(parse_attr_block(P, n, 0, &na, &attrs, &cap));
    set_attrs(n, na, attrs, cap);
  }
  TRY(expect(P, '('));
  if (!accept(P, ')')) {
    for (;;) {
      const char *src, *sat;
      int port;
      TRY(parse_ref(P, &src, &port, &sat));
      add_pending(P, (pending){PEND_DATA, P->cur, n, NULL, src, port, sat});
      if (accept(P, ')')) break;
      if (!accept(P, ',')) return expected(P, "',' or ')'");
    }
  }
  if (accept(P, '@')) {
    do {
      const char *src, *sat;
      TRY(parse_name(P, "a control input name", &src, &sat));
      add_pending(P, (pending){PEND_CONTROL, P->cur, n, NULL, src, 0, sat});
    } while (accept(P, ','));
  }
  skip_ws(P);
  if (peek(P) == '-' && peek_at(P, 1) == '>') {
    P->p += 2;
    TRY(expect(P, '('));
    int k = 0;
    n->n_outputs = 0; /* a node being read has no consumers yet: nothing to check */
    graph_invalidate(n->graph);
    if (!accept(P, ')')) {
      for (;;) {
        graph_dtype t;
        graph_shape s;
        if (k == GRAPH_MAX_OUTPUTS) return fail_at(P, P->p, "more than %d outputs", GRAPH_MAX_OUTPUTS);
        TRY(parse_type_spec(P, &t, &s));
        graph_node_set_output(n, k++, t, &s);
        if (accept(P, ')')) break;
        if (!accept(P, ',')) return expected(P, "',' or ')'");
      }
    }
    P->declared = grow_heap(P->declared, &P->cap_declared, P->n_declared + 1, sizeof *P->declared);
    P->declared[P->n_declared++] = n;
    n->user_data = P; /* marks "ports declared" until the parse ends */
  }
  return NULL;
}

/* One statement of the current graph; false in *done at '}' or end of input. */
static kiln_status parse_statement(parser *P, bool *done) {
  skip_ws(P);
  *done = false;
  int c = peek(P);
  if (c < 0) {
    if (P->cur != P->root) return fail_at(P, P->p, "expected '}' to close graph '%s', found end of input", P->cur->name);
    *done = true;
    return NULL;
  }
  if (c == '}') {
    if (P->cur == P->root) return fail_at(P, P->p, "'}' without a graph block to close");
    P->p++;
    *done = true;
    return NULL;
  }
  const char *start = P->p;
  bool quoted = c == '"';
  const char *word, *at;
  TRY(parse_name(P, "a statement (input, output, graph, framework or NAME = OP(...))", &word, &at));
  skip_ws(P);
  bool is_assignment = peek(P) == '=';
  if (!quoted && !is_assignment && strcmp(word, "framework") != 0) P->seen_statement = true;
  if (!quoted && !is_assignment) {
    if (strcmp(word, "input") == 0) return parse_input(P);
    if (strcmp(word, "output") == 0) return parse_output(P);
    if (strcmp(word, "framework") == 0) {
      if (P->seen_statement || P->cur != P->root)
        return fail_at(P, start, "'framework' must be the first statement of the file");
      const char *fw, *fat;
      TRY(parse_name(P, "a framework name", &fw, &fat));
      P->root->framework = fw;
      return NULL;
    }
    if (strcmp(word, "graph") == 0) {
      if (P->cur != P->root) return fail_at(P, start, "graph blocks are only allowed at the top level");
      const char *fname, *fat;
      TRY(parse_name(P, "a function name", &fname, &fat));
      graph *f;
      TRY(wrap_at(P, fat, graph_add_function(P->root, fname, &f)));
      TRY(expect(P, '{'));
      P->cur = f;
      P->seen_statement = true;
      for (bool fdone = false; !fdone;) TRY(parse_statement(P, &fdone));
      P->cur = P->root;
      return NULL;
    }
    return fail_at(P, P->p, "expected '=' after node name '%s'", word);
  }
  P->seen_statement = true;
  return parse_node(P, word, at);
}

static void resolve_func_value(graph *root, graph_attr_value *v) {
  if (v->kind == GRAPH_ATTR_FUNC) {
    v->func.body = graph_find_function(root, v->func.name);
    for (int i = 0; i < v->func.n_attrs; i++) resolve_func_value(root, &v->func.attrs[i].value);
  } else if (v->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < v->list.n; i++) resolve_func_value(root, &v->list.items[i]);
  }
}

static void resolve_funcs_in(graph *root, graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i]->n_attrs; k++) resolve_func_value(root, &g->nodes[i]->attrs[k].value);
}

static kiln_status resolve(parser *P) {
  for (int i = 0; i < P->n_pend; i++) {
    const pending *p = &P->pend[i];
    graph_node *src = graph_find_node(p->g, p->src);
    if (!src) {
      if (p->g != P->root) return fail_at(P, p->at, "unknown node '%s' in graph '%s'", p->src, p->g->name);
      return fail_at(P, p->at, "unknown node '%s'", p->src);
    }
    if (p->kind != PEND_CONTROL && src->user_data == P && p->port >= src->n_outputs)
      return fail_at(P, p->at, "node '%s' has %d outputs (declared with ->), so output %d does not exist", p->src,
                     src->n_outputs, p->port);
    if (p->kind == PEND_DATA) TRY(wrap_at(P, p->at, graph_add_edge(src, p->port, p->dst)));
    else if (p->kind == PEND_CONTROL) TRY(wrap_at(P, p->at, graph_add_control_edge(src, p->dst)));
    else TRY(wrap_at(P, p->at, graph_add_result(p->g, p->result, src, p->port)));
  }
  for (int i = 0; i < P->n_fuse; i++)
    if (!graph_find_function(P->root, P->fuse[i].name))
      return fail_at(P, P->fuse[i].at, "unknown function '%s'", P->fuse[i].name);
  resolve_funcs_in(P->root, P->root);
  for (int i = 0; i < P->root->n_functions; i++) resolve_funcs_in(P->root, P->root->functions[i]);
  return NULL;
}

kiln_status graph_parse(const char *text, size_t len, const char *filename, graph **out) {
  *out = NULL;
  parser P;
  memset(&P, 0, sizeof P);
  P.text = P.p = text ? text : "";
  P.end = P.text + (text ? len : 0);
  P.filename = filename ? filename : "<input>";
  P.root = P.cur = graph_new(NULL);
  kiln_status st = NULL;
  for (bool done = false; !done && !st;) st = parse_statement(&P, &done);
  if (!st) st = resolve(&P);
  for (int i = 0; i < P.n_declared; i++) P.declared[i]->user_data = NULL;
  if (!st) st = status_wrap(graph_validate(P.root), "%s", P.filename);
  free(P.pend);
  free(P.results);
  free(P.fuse);
  free(P.declared);
  if (st) {
    graph_free(P.root);
    return st;
  }
  *out = P.root;
  return NULL;
}

kiln_status graph_parse_file(const char *path, graph **out) {
  *out = NULL;
  char *text;
  size_t len;
  TRY(file_read_all(path, "graph file", 0, &text, &len));
  kiln_status st = graph_parse(text, len, path, out);
  free(text);
  return st;
}
