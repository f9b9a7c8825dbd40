/* ONNX's string ops, and TfIdfVectorizer, as host kernels: StringNormalizer,
 * StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer, plus the string forms of
 * Equal, Cast and CastLike (ops_onnx_string.h). HLO has no strings, so none of these can
 * be lowered; the executor runs them on host tensors (OP_STRING keeps them out of
 * clusters) and the ones whose output shape depends on the values are OP_DYNAMIC_SHAPE.
 * Strings are UTF-8 byte strings; only the ops that must look at characters decode them
 * (case mapping, whitespace splitting), and an element that is not valid UTF-8 there is
 * an error naming the node and the element.
 *
 * Choices where the spec leaves room, each documented at its op:
 *   - case mapping (StringNormalizer) is Unicode's simple, locale-independent one-to-one
 *     mapping (UnicodeData.txt) from a table covering Latin, Greek, Coptic, Cyrillic,
 *     Armenian, Georgian, Cherokee, Glagolitic, Deseret, Osage, Vithkuqi, Old Hungarian,
 *     Warang Citi, Medefaidrin, Adlam and the full-width, circled and Roman-numeral
 *     letters (all of Unicode 14's one-to-one mappings); other code points keep their case,
 *     and one-to-many mappings (German sharp s to "SS") are not made, as in ONNX
 *     Runtime. The locale "" and every locale but Turkish, Azeri and Lithuanian (whose
 *     i-rules differ) give the same result, so those three are refused;
 *   - RegexFullMatch takes RE2 syntax, translates it to POSIX extended syntax and runs
 *     the C library's regcomp/regexec (glibc) in a C.UTF-8 locale, anchored at both
 *     ends; see the block before re2_to_ere for what translates and what is refused;
 *   - StringSplit without a delimiter splits at runs of Python's whitespace characters
 *     (str.split(), which onnx's reference implementation uses);
 *   - TfIdfVectorizer follows onnx's reference implementation (and ONNX Runtime): n-grams
 *     are matched with skips 0..max_skip_count, unigrams counted once, and weights are
 *     indexed by output column. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/utf8.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"
#include "ops/ops_onnx_ml.h"
#include "ops/ops_onnx_string.h"

/* ------------------------------------------------------------------ helpers ---- */

static void type_text(char *buf, size_t cap, const graph_tensor *t) {
  int n = snprintf(buf, cap, "%s[", graph_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && n > 0 && (size_t)n < cap; i++)
    n += snprintf(buf + n, cap - (size_t)n, i ? ",%lld" : "%lld", (long long)t->dims[i]);
  if (n > 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "]");
}

/* Input `pos` as a string tensor; `name` is its ONNX name for messages. */
static kiln_status string_input(op_host_ctx *ctx, int pos, const char *name, graph_tensor **out) {
  *out = onnx_host_input(ctx, pos);
  if (!*out) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %s is required", name);
  if ((*out)->dtype != GRAPH_DT_STRING) {
    char t[96];
    type_text(t, sizeof t, *out);
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input %s must be a string tensor, got %s", name, t);
  }
  return NULL;
}

/* A string attribute (dflt when absent); any other kind is an error. */
static kiln_status string_attr(const graph_node *node, const char *name, const char *dflt, graph_bytes *out) {
  const graph_attr_value *v = graph_node_attr(node, name);
  if (!v) {
    out->data = (char *)dflt;
    out->len = dflt ? strlen(dflt) : 0;
    return NULL;
  }
  if (v->kind != GRAPH_ATTR_STRING) return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a string", name);
  *out = v->s;
  return NULL;
}

static bool bytes_eq(const graph_bytes *a, const graph_bytes *b) {
  return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static bool bytes_is(const graph_bytes *a, const char *s) {
  return a->len == strlen(s) && memcmp(a->data, s, a->len) == 0;
}

static kiln_status set_output(op_host_ctx *ctx, int i, graph_dtype dt, int rank, const int64_t *dims,
                              graph_tensor **out) {
  *out = NULL;
  if (i >= ctx->n_outputs) return NULL;
  TRY(tensor_create(dt, rank, dims, &ctx->outputs[i]));
  *out = ctx->outputs[i];
  return NULL;
}

/* numpy (multidirectional) broadcasting of two host tensors: the result's dims and, for
 * each result element, the linear index it reads in a and in b. */
typedef struct bcast {
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
  int64_t sa[GRAPH_MAX_RANK], sb[GRAPH_MAX_RANK]; /* strides, 0 along broadcast dims */
  int64_t n;
} bcast;

static void strides_for(const graph_tensor *t, const bcast *bc, int64_t *st) {
  int64_t s = 1;
  for (int j = bc->rank - 1; j >= 0; j--) {
    int k = j - (bc->rank - t->rank);
    int64_t d = k >= 0 ? t->dims[k] : 1;
    st[j] = d == 1 ? 0 : s;
    s *= d;
  }
}

static kiln_status bcast_init(const graph_node *node, const graph_tensor *a, const graph_tensor *b, bcast *bc) {
  kiln_status s = oplib_broadcast_shape(a->rank, a->dims, b->rank, b->dims, &bc->rank, bc->dims);
  if (s) {
    kiln_status e = op_error(node, KILN_INVALID_ARGUMENT, "%s", kiln_status_message(s));
    kiln_status_free(s);
    return e;
  }
  bc->n = 1;
  for (int j = 0; j < bc->rank; j++) bc->n *= bc->dims[j];
  strides_for(a, bc, bc->sa);
  strides_for(b, bc, bc->sb);
  return NULL;
}

static void bcast_at(const bcast *bc, int64_t i, int64_t *ia, int64_t *ib) {
  int64_t a = 0, b = 0;
  for (int j = bc->rank - 1; j >= 0; j--) {
    int64_t c = i % bc->dims[j];
    i /= bc->dims[j];
    a += c * bc->sa[j];
    b += c * bc->sb[j];
  }
  *ia = a;
  *ib = b;
}

/* ------------------------------------------------------------ case mapping ---- */

/* Unicode simple case mapping, from UnicodeData.txt (Unicode 14). Each row maps the
 * uppercase letters [lo, hi] to lowercase:
 *   CASE_DELTA: every code point c in the range maps to c + delta (and back);
 *   CASE_PAIRS: alternating upper/lower pairs starting at lo (lo, lo+2, ... are upper,
 *               each maps to the code point after it);
 *   CASE_ONE_WAY: c + delta is c's lowercase, but that letter's uppercase is another
 *               one (U+0130 -> i, titlecase digraphs, the Kelvin sign...).
 * Uppercasing inverts the rows that are not one-way, after upper_special (lowercase
 * letters whose uppercase is not the inverse of any row: final sigma, micro sign...). */
typedef enum { CASE_DELTA, CASE_PAIRS, CASE_ONE_WAY } case_kind;
typedef struct case_row {
  uint32_t lo, hi;
  int32_t delta;
  case_kind kind;
} case_row;

static const case_row lower_rows[] = {
    {0x41, 0x5A, 32, CASE_DELTA},        {0xC0, 0xD6, 32, CASE_DELTA},        {0xD8, 0xDE, 32, CASE_DELTA},
    {0x100, 0x12F, 1, CASE_PAIRS},       {0x130, 0x130, -199, CASE_ONE_WAY},  {0x132, 0x137, 1, CASE_PAIRS},
    {0x139, 0x148, 1, CASE_PAIRS},       {0x14A, 0x177, 1, CASE_PAIRS},       {0x178, 0x178, -121, CASE_DELTA},
    {0x179, 0x17E, 1, CASE_PAIRS},       {0x181, 0x181, 210, CASE_DELTA},     {0x182, 0x185, 1, CASE_PAIRS},
    {0x186, 0x186, 206, CASE_DELTA},     {0x187, 0x188, 1, CASE_PAIRS},       {0x189, 0x18A, 205, CASE_DELTA},
    {0x18B, 0x18C, 1, CASE_PAIRS},       {0x18E, 0x18E, 79, CASE_DELTA},      {0x18F, 0x18F, 202, CASE_DELTA},
    {0x190, 0x190, 203, CASE_DELTA},     {0x191, 0x192, 1, CASE_PAIRS},       {0x193, 0x193, 205, CASE_DELTA},
    {0x194, 0x194, 207, CASE_DELTA},     {0x196, 0x196, 211, CASE_DELTA},     {0x197, 0x197, 209, CASE_DELTA},
    {0x198, 0x199, 1, CASE_PAIRS},       {0x19C, 0x19C, 211, CASE_DELTA},     {0x19D, 0x19D, 213, CASE_DELTA},
    {0x19F, 0x19F, 214, CASE_DELTA},     {0x1A0, 0x1A5, 1, CASE_PAIRS},       {0x1A6, 0x1A6, 218, CASE_DELTA},
    {0x1A7, 0x1A8, 1, CASE_PAIRS},       {0x1A9, 0x1A9, 218, CASE_DELTA},     {0x1AC, 0x1AD, 1, CASE_PAIRS},
    {0x1AE, 0x1AE, 218, CASE_DELTA},     {0x1AF, 0x1B0, 1, CASE_PAIRS},       {0x1B1, 0x1B2, 217, CASE_DELTA},
    {0x1B3, 0x1B6, 1, CASE_PAIRS},       {0x1B7, 0x1B7, 219, CASE_DELTA},     {0x1B8, 0x1B9, 1, CASE_PAIRS},
    {0x1BC, 0x1BD, 1, CASE_PAIRS},       {0x1C4, 0x1C4, 2, CASE_DELTA},       {0x1C5, 0x1C5, 1, CASE_ONE_WAY},
    {0x1C7, 0x1C7, 2, CASE_DELTA},       {0x1C8, 0x1C8, 1, CASE_ONE_WAY},     {0x1CA, 0x1CA, 2, CASE_DELTA},
    {0x1CB, 0x1CB, 1, CASE_ONE_WAY},     {0x1CD, 0x1DC, 1, CASE_PAIRS},       {0x1DE, 0x1EF, 1, CASE_PAIRS},
    {0x1F1, 0x1F1, 2, CASE_DELTA},       {0x1F2, 0x1F2, 1, CASE_ONE_WAY},     {0x1F4, 0x1F5, 1, CASE_PAIRS},
    {0x1F6, 0x1F6, -97, CASE_DELTA},     {0x1F7, 0x1F7, -56, CASE_DELTA},     {0x1F8, 0x21F, 1, CASE_PAIRS},
    {0x220, 0x220, -130, CASE_DELTA},    {0x222, 0x233, 1, CASE_PAIRS},       {0x23A, 0x23A, 10795, CASE_DELTA},
    {0x23B, 0x23C, 1, CASE_PAIRS},       {0x23D, 0x23D, -163, CASE_DELTA},    {0x23E, 0x23E, 10792, CASE_DELTA},
    {0x241, 0x242, 1, CASE_PAIRS},       {0x243, 0x243, -195, CASE_DELTA},    {0x244, 0x244, 69, CASE_DELTA},
    {0x245, 0x245, 71, CASE_DELTA},      {0x246, 0x24F, 1, CASE_PAIRS},
    /* Greek and Coptic */
    {0x370, 0x373, 1, CASE_PAIRS},       {0x376, 0x377, 1, CASE_PAIRS},       {0x37F, 0x37F, 116, CASE_DELTA},
    {0x386, 0x386, 38, CASE_DELTA},      {0x388, 0x38A, 37, CASE_DELTA},      {0x38C, 0x38C, 64, CASE_DELTA},
    {0x38E, 0x38F, 63, CASE_DELTA},      {0x391, 0x3A1, 32, CASE_DELTA},      {0x3A3, 0x3AB, 32, CASE_DELTA},
    {0x3CF, 0x3CF, 8, CASE_DELTA},       {0x3D8, 0x3EF, 1, CASE_PAIRS},       {0x3F4, 0x3F4, -60, CASE_ONE_WAY},
    {0x3F7, 0x3F8, 1, CASE_PAIRS},       {0x3F9, 0x3F9, -7, CASE_DELTA},      {0x3FA, 0x3FB, 1, CASE_PAIRS},
    {0x3FD, 0x3FF, -130, CASE_DELTA},
    /* Cyrillic */
    {0x400, 0x40F, 80, CASE_DELTA},      {0x410, 0x42F, 32, CASE_DELTA},      {0x460, 0x481, 1, CASE_PAIRS},
    {0x48A, 0x4BF, 1, CASE_PAIRS},       {0x4C0, 0x4C0, 15, CASE_DELTA},      {0x4C1, 0x4CE, 1, CASE_PAIRS},
    {0x4D0, 0x52F, 1, CASE_PAIRS},
    /* Armenian, Georgian, Cherokee */
    {0x531, 0x556, 48, CASE_DELTA},      {0x10A0, 0x10C5, 7264, CASE_DELTA},  {0x10C7, 0x10C7, 7264, CASE_DELTA},
    {0x10CD, 0x10CD, 7264, CASE_DELTA},  {0x13A0, 0x13EF, 38864, CASE_DELTA}, {0x13F0, 0x13F5, 8, CASE_DELTA},
    {0x1C90, 0x1CBA, -3008, CASE_DELTA}, {0x1CBD, 0x1CBF, -3008, CASE_DELTA},
    /* Latin Extended Additional, Greek Extended */
    {0x1E00, 0x1E95, 1, CASE_PAIRS},     {0x1E9E, 0x1E9E, -7615, CASE_ONE_WAY}, {0x1EA0, 0x1EFF, 1, CASE_PAIRS},
    {0x1F08, 0x1F0F, -8, CASE_DELTA},    {0x1F18, 0x1F1D, -8, CASE_DELTA},    {0x1F28, 0x1F2F, -8, CASE_DELTA},
    {0x1F38, 0x1F3F, -8, CASE_DELTA},    {0x1F48, 0x1F4D, -8, CASE_DELTA},    {0x1F59, 0x1F59, -8, CASE_DELTA},
    {0x1F5B, 0x1F5B, -8, CASE_DELTA},    {0x1F5D, 0x1F5D, -8, CASE_DELTA},    {0x1F5F, 0x1F5F, -8, CASE_DELTA},
    {0x1F68, 0x1F6F, -8, CASE_DELTA},    {0x1F88, 0x1F8F, -8, CASE_DELTA},    {0x1F98, 0x1F9F, -8, CASE_DELTA},
    {0x1FA8, 0x1FAF, -8, CASE_DELTA},    {0x1FB8, 0x1FB9, -8, CASE_DELTA},    {0x1FBA, 0x1FBB, -74, CASE_DELTA},
    {0x1FBC, 0x1FBC, -9, CASE_DELTA},    {0x1FC8, 0x1FCB, -86, CASE_DELTA},   {0x1FCC, 0x1FCC, -9, CASE_DELTA},
    {0x1FD8, 0x1FD9, -8, CASE_DELTA},    {0x1FDA, 0x1FDB, -100, CASE_DELTA},  {0x1FE8, 0x1FE9, -8, CASE_DELTA},
    {0x1FEA, 0x1FEB, -112, CASE_DELTA},  {0x1FEC, 0x1FEC, -7, CASE_DELTA},    {0x1FF8, 0x1FF9, -128, CASE_DELTA},
    {0x1FFA, 0x1FFB, -126, CASE_DELTA},  {0x1FFC, 0x1FFC, -9, CASE_DELTA},
    /* Letterlike symbols, number forms, enclosed letters */
    {0x2126, 0x2126, -7517, CASE_ONE_WAY}, {0x212A, 0x212A, -8383, CASE_ONE_WAY}, {0x212B, 0x212B, -8262, CASE_ONE_WAY},
    {0x2132, 0x2132, 28, CASE_DELTA},    {0x2160, 0x216F, 16, CASE_DELTA},    {0x2183, 0x2184, 1, CASE_PAIRS},
    {0x24B6, 0x24CF, 26, CASE_DELTA},
    /* Glagolitic, Latin Extended-C, Coptic */
    {0x2C00, 0x2C2F, 48, CASE_DELTA},    {0x2C60, 0x2C61, 1, CASE_PAIRS},     {0x2C62, 0x2C62, -10743, CASE_DELTA},
    {0x2C63, 0x2C63, -3814, CASE_DELTA}, {0x2C64, 0x2C64, -10727, CASE_DELTA}, {0x2C67, 0x2C6C, 1, CASE_PAIRS},
    {0x2C6D, 0x2C6D, -10780, CASE_DELTA}, {0x2C6E, 0x2C6E, -10749, CASE_DELTA}, {0x2C6F, 0x2C6F, -10783, CASE_DELTA},
    {0x2C70, 0x2C70, -10782, CASE_DELTA}, {0x2C72, 0x2C73, 1, CASE_PAIRS},    {0x2C75, 0x2C76, 1, CASE_PAIRS},
    {0x2C7E, 0x2C7F, -10815, CASE_DELTA}, {0x2C80, 0x2CE3, 1, CASE_PAIRS},    {0x2CEB, 0x2CEE, 1, CASE_PAIRS},
    {0x2CF2, 0x2CF3, 1, CASE_PAIRS},
    /* Cyrillic Extended-B, Latin Extended-D */
    {0xA640, 0xA66D, 1, CASE_PAIRS},     {0xA680, 0xA69B, 1, CASE_PAIRS},     {0xA722, 0xA72F, 1, CASE_PAIRS},
    {0xA732, 0xA76F, 1, CASE_PAIRS},     {0xA779, 0xA77C, 1, CASE_PAIRS},     {0xA77D, 0xA77D, -35332, CASE_DELTA},
    {0xA77E, 0xA787, 1, CASE_PAIRS},     {0xA78B, 0xA78C, 1, CASE_PAIRS},     {0xA78D, 0xA78D, -42280, CASE_DELTA},
    {0xA790, 0xA793, 1, CASE_PAIRS},     {0xA796, 0xA7A9, 1, CASE_PAIRS},     {0xA7AA, 0xA7AA, -42308, CASE_DELTA},
    {0xA7AB, 0xA7AB, -42319, CASE_DELTA}, {0xA7AC, 0xA7AC, -42315, CASE_DELTA}, {0xA7AD, 0xA7AD, -42305, CASE_DELTA},
    {0xA7AE, 0xA7AE, -42308, CASE_DELTA}, {0xA7B0, 0xA7B0, -42258, CASE_DELTA}, {0xA7B1, 0xA7B1, -42282, CASE_DELTA},
    {0xA7B2, 0xA7B2, -42261, CASE_DELTA}, {0xA7B3, 0xA7B3, 928, CASE_DELTA},    {0xA7B4, 0xA7C3, 1, CASE_PAIRS},
    {0xA7C4, 0xA7C4, -48, CASE_DELTA},   {0xA7C5, 0xA7C5, -42307, CASE_DELTA}, {0xA7C6, 0xA7C6, -35384, CASE_DELTA},
    {0xA7C7, 0xA7CA, 1, CASE_PAIRS},     {0xA7D0, 0xA7D1, 1, CASE_PAIRS},     {0xA7D6, 0xA7D9, 1, CASE_PAIRS},
    {0xA7F5, 0xA7F6, 1, CASE_PAIRS},
    /* Full-width Latin; Deseret, Osage, Old Hungarian, Warang Citi, Adlam */
    {0xFF21, 0xFF3A, 32, CASE_DELTA},    {0x10400, 0x10427, 40, CASE_DELTA},  {0x104B0, 0x104D3, 40, CASE_DELTA},
    {0x10570, 0x1057A, 39, CASE_DELTA},  {0x1057C, 0x1058A, 39, CASE_DELTA},  {0x1058C, 0x10592, 39, CASE_DELTA},
    {0x10594, 0x10595, 39, CASE_DELTA},  {0x10C80, 0x10CB2, 64, CASE_DELTA},  {0x118A0, 0x118BF, 32, CASE_DELTA},
    {0x16E40, 0x16E5F, 32, CASE_DELTA},  {0x1E900, 0x1E921, 34, CASE_DELTA},
};

/* Lowercase letters whose uppercase the rows above do not give by inversion. */
static const struct {
  uint32_t from, to;
} upper_special[] = {
    {0xB5, 0x39C},   {0xFF, 0x178},   {0x131, 0x49},   {0x17F, 0x53},   {0x1C5, 0x1C4},  {0x1C8, 0x1C7},
    {0x1CB, 0x1CA},  {0x1F2, 0x1F1},  {0x345, 0x399},  {0x3C2, 0x3A3},  {0x3D0, 0x392},  {0x3D1, 0x398},
    {0x3D5, 0x3A6},  {0x3D6, 0x3A0},  {0x3F0, 0x39A},  {0x3F1, 0x3A1},  {0x3F5, 0x395},  {0x1E9B, 0x1E60},
    {0x1FBE, 0x399},  {0x1C80, 0x412},  {0x1C81, 0x414},  {0x1C82, 0x41E},  {0x1C83, 0x421},  {0x1C84, 0x422},
    {0x1C85, 0x422},  {0x1C86, 0x42A},  {0x1C87, 0x462},  {0x1C88, 0xA64A},
};

#define N_LOWER_ROWS ((int)(sizeof lower_rows / sizeof lower_rows[0]))

uint32_t onnx_string_to_lower(uint32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  for (int i = 0; i < N_LOWER_ROWS; i++) {
    const case_row *r = &lower_rows[i];
    if (c < r->lo || c > r->hi) continue;
    if (r->kind == CASE_PAIRS) return (c - r->lo) % 2 == 0 ? c + 1 : c;
    return (uint32_t)((int64_t)c + r->delta);
  }
  return c;
}

uint32_t onnx_string_to_upper(uint32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  for (size_t i = 0; i < sizeof upper_special / sizeof upper_special[0]; i++)
    if (upper_special[i].from == c) return upper_special[i].to;
  for (int i = 0; i < N_LOWER_ROWS; i++) {
    const case_row *r = &lower_rows[i];
    if (r->kind == CASE_PAIRS) {
      if (c > r->lo && c <= r->hi && (c - r->lo) % 2 == 1) return c - 1;
      continue;
    }
    if (r->kind == CASE_ONE_WAY) continue;
    int64_t lo = (int64_t)r->lo + r->delta, hi = (int64_t)r->hi + r->delta;
    if ((int64_t)c >= lo && (int64_t)c <= hi) return (uint32_t)((int64_t)c - r->delta);
  }
  return c;
}

typedef enum { CASE_NONE, CASE_LOWER, CASE_UPPER } case_action;

/* s with every code point mapped, into *out (a strbuf the caller frees); false when s
 * is not valid UTF-8 (*bad_at: where). */
static bool change_case(const graph_bytes *s, case_action a, strbuf *out, size_t *bad_at) {
  size_t pos = 0;
  while (pos < s->len) {
    uint32_t cp;
    if (!utf8_decode(s->data, s->len, &pos, &cp)) {
      *bad_at = pos;
      return false;
    }
    cp = a == CASE_UPPER ? onnx_string_to_upper(cp) : a == CASE_LOWER ? onnx_string_to_lower(cp) : cp;
    char enc[4];
    strbuf_appendn(out, enc, (size_t)utf8_encode(cp, enc));
  }
  return true;
}

/* ------------------------------------------------------ StringNormalizer ---- */

/* Locales whose case rules differ from the default ones (dotted and dotless i). */
static kiln_status check_locale(const graph_node *node, const graph_bytes *loc) {
  size_t n = 0;
  while (n < loc->len && loc->data[n] != '_' && loc->data[n] != '-' && loc->data[n] != '.' && loc->data[n] != '@') n++;
  static const char *const special[] = {"tr", "az", "lt"};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    if (n == 2 && memcmp(loc->data, special[i], 2) == 0)
      return op_error(node, KILN_UNIMPLEMENTED,
                      "locale '%.*s' has language-specific case rules; kiln applies Unicode's locale-independent "
                      "simple case mapping (locale \"\" or en_US)",
                      (int)loc->len, loc->data);
  return NULL;
}

static kiln_status string_normalizer(op_host_ctx *ctx, ml_mem *m) {
  const graph_node *node = ctx->node;
  graph_tensor *x, *y;
  TRY(string_input(ctx, 0, "X", &x));
  if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1))) {
    char t[96];
    type_text(t, sizeof t, x);
    return op_error(node, KILN_INVALID_ARGUMENT, "X must be [C] or [1, C], got %s", t);
  }
  graph_bytes act = {0}, loc = {0};
  TRY(string_attr(node, "case_change_action", "NONE", &act));
  TRY(string_attr(node, "locale", "", &loc));
  case_action action;
  if (bytes_is(&act, "NONE")) action = CASE_NONE;
  else if (bytes_is(&act, "LOWER")) action = CASE_LOWER;
  else if (bytes_is(&act, "UPPER")) action = CASE_UPPER;
  else
    return op_error(node, KILN_INVALID_ARGUMENT, "case_change_action '%.*s' is not LOWER, UPPER or NONE",
                    (int)act.len, act.data);
  TRY(check_locale(node, &loc));
  bool sensitive = graph_node_attr_int_or(node, "is_case_sensitive", 0) != 0;
  graph_bytes *stops;
  int64_t n_stops;
  TRY(ml_attr_str(node, m, "stopwords", &stops, &n_stops, NULL));
  /* Case-insensitive matching compares the forms the case change makes (lowercase
   * when the action is NONE), as ONNX Runtime does. */
  case_action fold = sensitive ? CASE_NONE : action == CASE_UPPER ? CASE_UPPER : CASE_LOWER;
  graph_bytes *folded = ml_alloc(m, n_stops, sizeof *folded);
  for (int64_t k = 0; k < n_stops; k++) {
    strbuf b;
    strbuf_init(&b);
    size_t bad = 0;
    if (!change_case(&stops[k], fold, &b, &bad)) {
      strbuf_free(&b);
      return op_error(node, KILN_INVALID_ARGUMENT, "stopword %lld is not valid UTF-8 (at byte %zu)", (long long)k, bad);
    }
    folded[k].len = b.len;
    folded[k].data = ml_alloc(m, (int64_t)b.len + 1, 1);
    if (b.len) memcpy(folded[k].data, b.data, b.len);
    strbuf_free(&b);
  }
  graph_bytes *kept = ml_alloc(m, x->n, sizeof *kept);
  int64_t n_kept = 0;
  for (int64_t i = 0; i < x->n; i++) {
    const graph_bytes *s = tensor_string(x, i);
    strbuf f, o;
    strbuf_init(&f);
    strbuf_init(&o);
    size_t bad = 0;
    bool ok = !n_stops || change_case(s, fold, &f, &bad);
    if (ok) ok = change_case(s, action, &o, &bad);
    if (!ok) {
      strbuf_free(&f);
      strbuf_free(&o);
      return op_error(node, KILN_INVALID_ARGUMENT, "element %lld of X is not valid UTF-8 (at byte %zu)", (long long)i,
                      bad);
    }
    graph_bytes fb = {f.data, f.len};
    bool stop = false;
    for (int64_t k = 0; k < n_stops && !stop; k++) stop = bytes_eq(&fb, &folded[k]);
    if (!stop) {
      kept[n_kept].len = o.len;
      kept[n_kept].data = ml_alloc(m, (int64_t)o.len + 1, 1);
      if (o.len) memcpy(kept[n_kept].data, o.data, o.len);
      n_kept++;
    }
    strbuf_free(&f);
    strbuf_free(&o);
  }
  /* All dropped: one empty string, [1] or [1, 1] (the spec's empty value). */
  int64_t k = n_kept ? n_kept : 1;
  int64_t dims[2] = {1, k};
  TRY(set_output(ctx, 0, GRAPH_DT_STRING, x->rank, x->rank == 1 ? &k : dims, &y));
  for (int64_t i = 0; y && i < n_kept; i++) tensor_set_string(y, i, kept[i].data, kept[i].len);
  return NULL;
}
ML_KERNEL(host_string_normalizer, string_normalizer)

/* ---------------------------------------------------------- StringConcat ---- */

static kiln_status host_string_concat(op_host_ctx *ctx) {
  graph_tensor *x, *y, *z;
  TRY(string_input(ctx, 0, "X", &x));
  TRY(string_input(ctx, 1, "Y", &y));
  bcast bc;
  TRY(bcast_init(ctx->node, x, y, &bc));
  TRY(set_output(ctx, 0, GRAPH_DT_STRING, bc.rank, bc.dims, &z));
  strbuf b;
  strbuf_init(&b);
  for (int64_t i = 0; z && i < bc.n; i++) {
    int64_t ia, ib;
    bcast_at(&bc, i, &ia, &ib);
    const graph_bytes *u = tensor_string(x, ia), *v = tensor_string(y, ib);
    b.len = 0;
    strbuf_appendn(&b, u->data, u->len);
    strbuf_appendn(&b, v->data, v->len);
    tensor_set_string(z, i, b.data ? b.data : "", b.len);
  }
  strbuf_free(&b);
  return NULL;
}

/* ------------------------------------------------------------ StringSplit ---- */

/* Python's str.isspace() code points (what str.split() without a separator splits on). */
static bool py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code point at *pos (a byte that is not UTF-8 counts as a non-space of length 1). */
static bool space_at(const graph_bytes *s, size_t pos, size_t *next) {
  uint32_t cp;
  size_t p = pos;
  if (!utf8_decode(s->data, s->len, &p, &cp)) {
    *next = pos + 1;
    return false;
  }
  *next = p;
  return py_space(cp);
}

typedef struct piece {
  size_t off, len;
} piece;

typedef struct pieces {
  int64_t n, cap;
  piece *v;
} pieces;

static void add_piece(pieces *p, size_t off, size_t len) {
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->v = realloc(p->v, (size_t)p->cap * sizeof *p->v);
    if (!p->v) abort();
  }
  p->v[p->n++] = (piece){off, len};
}

/* Python's str.split(sep, maxsplit) (maxsplit < 0: no limit) and str.split(None, ...). */
static void split_one(const graph_bytes *s, const graph_bytes *sep, int64_t maxsplit, pieces *out) {
  int64_t left = maxsplit < 0 ? INT64_MAX : maxsplit;
  size_t len = s->len, i = 0, next;
  if (sep) {
    size_t j = 0, sl = sep->len;
    while (j + sl <= len && left-- > 0) {
      for (; j + sl <= len; j++)
        if (memcmp(s->data + j, sep->data, sl) == 0) {
          add_piece(out, i, j - i);
          i = j = j + sl;
          break;
        }
    }
    add_piece(out, i, len - i);
    return;
  }
  while (left-- > 0) {
    while (i < len && space_at(s, i, &next)) i = next;
    if (i == len) break;
    size_t j = i;
    while (i < len && !space_at(s, i, &next)) i = next;
    add_piece(out, j, i - j);
  }
  if (i < len) { /* maxsplit reached: the rest, leading whitespace skipped */
    while (i < len && space_at(s, i, &next)) i = next;
    if (i < len) add_piece(out, i, len - i);
  }
}

static kiln_status host_string_split(op_host_ctx *ctx) {
  const graph_node *node = ctx->node;
  graph_tensor *x, *y, *z;
  TRY(string_input(ctx, 0, "X", &x));
  if (x->rank >= GRAPH_MAX_RANK)
    return op_error(node, KILN_INVALID_ARGUMENT, "X has rank %d; Y would need rank %d (at most %d)", x->rank,
                    x->rank + 1, GRAPH_MAX_RANK);
  graph_bytes sep;
  TRY(string_attr(node, "delimiter", "", &sep));
  int64_t maxsplit = -1;
  const graph_attr_value *ms = graph_node_attr(node, "maxsplit");
  if (ms) {
    if (ms->kind != GRAPH_ATTR_INT) return op_error(node, KILN_INVALID_ARGUMENT, "attribute maxsplit must be an int");
    maxsplit = ms->i;
  }
  pieces p = {0};
  int64_t *first = calloc((size_t)x->n + 1, sizeof *first);
  if (!first) abort();
  int64_t width = 0;
  for (int64_t i = 0; i < x->n; i++) {
    first[i] = p.n;
    split_one(tensor_string(x, i), sep.len ? &sep : NULL, maxsplit, &p);
    if (p.n - first[i] > width) width = p.n - first[i];
  }
  first[x->n] = p.n;
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[x->rank] = width;
  kiln_status s = set_output(ctx, 0, GRAPH_DT_STRING, x->rank + 1, dims, &y);
  if (!s) s = set_output(ctx, 1, GRAPH_DT_INT64, x->rank, x->dims, &z);
  for (int64_t i = 0; !s && i < x->n; i++) {
    const graph_bytes *e = tensor_string(x, i);
    int64_t cnt = first[i + 1] - first[i];
    for (int64_t k = 0; y && k < cnt; k++) {
      const piece *pc = &p.v[first[i] + k];
      tensor_set_string(y, i * width + k, e->data + pc->off, pc->len);
    }
    if (z) tensor_set_s64(z, i, cnt);
  }
  free(p.v);
  free(first);
  return s;
}

/* --------------------------------------------------------- RegexFullMatch ---- */

/* RE2 syntax (what ONNX specifies) as POSIX extended syntax (what regcomp takes).
 *
 * Translated: \d \D \w \W \s \S outside brackets and \d \w \s inside them become RE2's
 * ASCII sets ([0-9], [0-9A-Za-z_], [\t\n\f\r ]); '.' matches any character but
 * newline unless (?s); escaped punctuation becomes the literal; \n \t \r \f \v \a \xHH
 * \x{H..} the character; \Q...\E literal text; \A and \z the anchors; (?:...) and named
 * groups (?P<n>...) plain groups; lazy quantifiers (*? +? ?? {n,m}?) their greedy form
 * (whether a full match exists does not depend on laziness); a leading (?i) / (?s) /
 * (?is) sets case-insensitive matching / dot-matches-newline. Inside brackets, escapes
 * become literal members and ']' '-' '^' are placed where POSIX reads them literally.
 * Left to the C library: \b and \B (word boundaries, a glibc extension), POSIX classes
 * ([:alpha:]), intervals. Refused with an error naming the node: \p{..} Unicode classes,
 * \D \W \S inside brackets, backreferences (RE2 has none), other (?...) groups and flag
 * sets not at the start, and unknown escapes. Matching runs in the C.UTF-8 locale when
 * the system has it, so '.' and bracket negations take one character, not one byte. */
typedef struct rx_class {
  strbuf body;
  bool rbracket, lbracket, dash, caret;
} rx_class;

static void rx_literal(strbuf *b, char c) {
  if (strchr(".[]()*+?{}|^$\\", c)) strbuf_putc(b, '\\');
  strbuf_putc(b, c);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* \xHH or \x{H...} at p[*i] (just past the 'x'): the UTF-8 bytes into enc. */
static bool rx_hex(const char *p, size_t len, size_t *i, char *enc, int *n) {
  uint32_t v = 0;
  if (*i < len && p[*i] == '{') {
    size_t j = *i + 1;
    int digits = 0;
    while (j < len && hexval(p[j]) >= 0 && digits < 8) v = v * 16 + (uint32_t)hexval(p[j++]), digits++;
    if (j >= len || p[j] != '}' || !digits) return false;
    *i = j + 1;
  } else {
    if (*i + 2 > len || hexval(p[*i]) < 0 || hexval(p[*i + 1]) < 0) return false;
    v = (uint32_t)(hexval(p[*i]) * 16 + hexval(p[*i + 1]));
    *i += 2;
  }
  *n = utf8_encode(v, enc);
  return *n > 0 && v != 0;
}

static const char RX_SPACE[] = "\t\n\f\r ";

static kiln_status rx_refuse(const graph_node *node, const char *pattern, size_t at, const char *what) {
  return op_error(node, KILN_UNIMPLEMENTED,
                  "pattern '%s': %s (at offset %zu); kiln translates RE2 syntax to POSIX extended regular expressions "
                  "and cannot express this",
                  pattern, what, at);
}

static kiln_status rx_bad(const graph_node *node, const char *pattern, size_t at, const char *what) {
  return op_error(node, KILN_INVALID_ARGUMENT, "pattern '%s': %s at offset %zu", pattern, what, at);
}

/* The single-character escapes both contexts share (\n \t ...); 0 when e is not one. */
static char rx_char_escape(char e) {
  switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'a': return '\a';
    default: return 0;
  }
}

/* One bracket member at p[*j]: a character (its UTF-8 bytes into ch) or, for \d \w \s,
 * the member text of that set into *set. */
static kiln_status rx_member(const graph_node *node, const char *p, size_t len, size_t *j, char *ch, int *nch,
                             const char **set) {
  *set = NULL;
  *nch = 1;
  size_t at = *j;
  if (p[at] != '\\') {
    unsigned char u = (unsigned char)p[at];
    int extra = u >= 0xF0 ? 3 : u >= 0xE0 ? 2 : u >= 0xC0 ? 1 : 0;
    ch[0] = p[at];
    for (int q = 1; q <= extra && at + (size_t)q < len; q++) ch[(*nch)++] = p[at + (size_t)q];
    *j = at + (size_t)*nch;
    return NULL;
  }
  if (at + 1 >= len) return rx_bad(node, p, at, "trailing backslash");
  char e = p[at + 1];
  *j = at + 2;
  if (e == 'd') *set = "0-9";
  else if (e == 'w') *set = "0-9A-Za-z_";
  else if (e == 's') *set = RX_SPACE;
  else if (e == 'D' || e == 'W' || e == 'S' || e == 'p' || e == 'P')
    return rx_refuse(node, p, at, "a negated or Unicode class inside brackets");
  else if (rx_char_escape(e)) ch[0] = rx_char_escape(e);
  else if (e == 'x') {
    if (!rx_hex(p, len, j, ch, nch)) return rx_bad(node, p, at, "bad \\x escape");
  } else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
    return rx_refuse(node, p, at, "an unknown escape inside brackets");
  else ch[0] = e;
  return NULL;
}

static bool rx_special_member(const char *ch, int n) {
  return n == 1 && (ch[0] == ']' || ch[0] == '[' || ch[0] == '-' || ch[0] == '^');
}

/* An RE2 bracket expression at p[*i] ('[') as a POSIX one: escapes become members, and
 * ']' '[' '^' '-' go where POSIX reads them literally (first, or last). */
static kiln_status rx_bracket(const graph_node *node, const char *p, size_t len, size_t *i, strbuf *out) {
  size_t start = *i, j = start + 1;
  bool neg = false;
  if (j < len && p[j] == '^') neg = true, j++;
  rx_class cl;
  memset(&cl, 0, sizeof cl);
  strbuf_init(&cl.body);
  bool first = true;
  kiln_status s = NULL;
  for (;;) {
    if (j >= len) {
      s = rx_bad(node, p, start, "unterminated character class");
      break;
    }
    if (p[j] == ']' && !first) {
      j++;
      break;
    }
    first = false;
    if (p[j] == '[' && j + 1 < len && p[j + 1] == ':') { /* [:alpha:] */
      const char *end = strstr(p + j + 2, ":]");
      if (!end) {
        s = rx_bad(node, p, j, "unterminated [: class");
        break;
      }
      strbuf_appendn(&cl.body, p + j, (size_t)(end + 2 - (p + j)));
      j = (size_t)(end + 2 - p);
      continue;
    }
    char lo[4], hi[4];
    int nlo, nhi;
    const char *set;
    size_t at = j;
    if ((s = rx_member(node, p, len, &j, lo, &nlo, &set))) break;
    if (set) {
      strbuf_append(&cl.body, set);
      continue;
    }
    if (j + 1 < len && p[j] == '-' && p[j + 1] != ']') { /* a range lo-hi */
      j++;
      if ((s = rx_member(node, p, len, &j, hi, &nhi, &set))) break;
      if (set) {
        s = rx_refuse(node, p, at, "a class as a range end");
        break;
      }
      if (rx_special_member(lo, nlo) || rx_special_member(hi, nhi)) {
        s = rx_refuse(node, p, at, "a range that starts or ends with ] [ - or ^");
        break;
      }
      strbuf_appendn(&cl.body, lo, (size_t)nlo);
      strbuf_putc(&cl.body, '-');
      strbuf_appendn(&cl.body, hi, (size_t)nhi);
      continue;
    }
    if (nlo == 1 && lo[0] == ']') cl.rbracket = true;
    else if (nlo == 1 && lo[0] == '[') cl.lbracket = true;
    else if (nlo == 1 && lo[0] == '-') cl.dash = true;
    else if (nlo == 1 && lo[0] == '^') cl.caret = true;
    else strbuf_appendn(&cl.body, lo, (size_t)nlo);
  }
  if (!s) {
    if (!neg && !cl.rbracket && !cl.lbracket && !cl.dash && cl.caret && cl.body.len == 0) {
      strbuf_append(out, "\\^"); /* [\^] alone: "[^]" would not parse */
    } else {
      strbuf_putc(out, '[');
      if (neg) strbuf_putc(out, '^');
      if (cl.rbracket) strbuf_putc(out, ']');
      if (cl.body.len) strbuf_appendn(out, cl.body.data, cl.body.len);
      if (cl.lbracket) strbuf_putc(out, '[');
      if (cl.caret) strbuf_putc(out, '^');
      if (cl.dash) strbuf_putc(out, '-');
      strbuf_putc(out, ']');
    }
    *i = j;
  }
  strbuf_free(&cl.body);
  return s;
}

/* An ERE interval {n}, {n,}, {n,m} at p[i]; its length, 0 when it is not one (RE2 then
 * reads the brace literally). */
static size_t rx_interval(const char *p, size_t len, size_t i) {
  size_t j = i + 1;
  bool digits = false;
  while (j < len && p[j] >= '0' && p[j] <= '9') j++, digits = true;
  if (!digits) return 0;
  if (j < len && p[j] == ',') {
    j++;
    while (j < len && p[j] >= '0' && p[j] <= '9') j++;
  }
  return j < len && p[j] == '}' ? j + 1 - i : 0;
}

static kiln_status re2_to_ere(const graph_node *node, const char *p, size_t len, strbuf *out, int *cflags) {
  size_t i = 0;
  bool dot_all = false;
  /* Leading flags: (?i) (?s) (?is) (?si). */
  if (len >= 4 && p[0] == '(' && p[1] == '?') {
    size_t j = 2;
    bool icase = false, s = false, ok = true;
    while (j < len && p[j] != ')') {
      if (p[j] == 'i') icase = true;
      else if (p[j] == 's') s = true;
      else ok = false;
      j++;
    }
    if (ok && j < len && j > 2) {
      if (icase) *cflags |= REG_ICASE;
      dot_all = s;
      i = j + 1;
    }
  }
  bool after_quantifier = false; /* the last thing emitted was a quantifier */
  while (i < len) {
    char c = p[i];
    bool quant = false;
    if (c == '\\') {
      if (i + 1 >= len) return rx_bad(node, p, i, "trailing backslash");
      char e = p[i + 1];
      size_t at = i;
      i += 2;
      if (e == 'd') strbuf_append(out, "[0-9]");
      else if (e == 'D') strbuf_append(out, "[^0-9]");
      else if (e == 'w') strbuf_append(out, "[0-9A-Za-z_]");
      else if (e == 'W') strbuf_append(out, "[^0-9A-Za-z_]");
      else if (e == 's') strbuf_printf(out, "[%s]", RX_SPACE);
      else if (e == 'S') strbuf_printf(out, "[^%s]", RX_SPACE);
      else if (e == 'b') strbuf_append(out, "\\b");
      else if (e == 'B') strbuf_append(out, "\\B");
      else if (e == 'A') strbuf_putc(out, '^');
      else if (e == 'z') strbuf_putc(out, '$');
      else if (rx_char_escape(e)) strbuf_putc(out, rx_char_escape(e));
      else if (e == 'x') {
        char enc[4];
        int n = 0;
        if (!rx_hex(p, len, &i, enc, &n)) return rx_bad(node, p, at, "bad \\x escape");
        if (n == 1) rx_literal(out, enc[0]);
        else strbuf_appendn(out, enc, (size_t)n);
      } else if (e == 'Q') {
        const char *end = strstr(p + i, "\\E");
        size_t stop = end ? (size_t)(end - p) : len;
        for (; i < stop; i++) rx_literal(out, p[i]);
        if (end) i += 2;
      } else if (e == 'p' || e == 'P') {
        return rx_refuse(node, p, at, "Unicode classes (\\p, \\P) are not supported");
      } else if (e >= '0' && e <= '9') {
        return rx_refuse(node, p, at, "backreferences (RE2 has none)");
      } else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
        return rx_refuse(node, p, at, "an unknown escape");
      } else {
        rx_literal(out, e);
      }
    } else if (c == '[') {
      TRY(rx_bracket(node, p, len, &i, out));
    } else if (c == '.') {
      strbuf_append(out, dot_all ? "." : "[^\n]");
      i++;
    } else if (c == '(' && i + 1 < len && p[i + 1] == '?') {
      size_t j = i + 2;
      if (j < len && p[j] == ':') {
        i = j + 1;
      } else {
        if (j < len && p[j] == 'P') j++;
        const char *gt = j < len && p[j] == '<' ? memchr(p + j, '>', len - j) : NULL;
        if (!gt) return rx_refuse(node, p, i, "a (?...) group other than (?:...), a named group or leading flags");
        i = (size_t)(gt - p) + 1;
      }
      strbuf_putc(out, '(');
    } else if ((c == '?' || c == '+') && after_quantifier) {
      /* "x*?": lazy, and whether a full match exists does not depend on laziness;
       * "x*+" would be possessive, which RE2 does not have. */
      if (c == '+') return rx_refuse(node, p, i, "a possessive quantifier (RE2 has none)");
      i++;
    } else if (c == '{' && rx_interval(p, len, i)) {
      size_t n = rx_interval(p, len, i);
      strbuf_appendn(out, p + i, n);
      i += n;
      quant = true;
    } else if (c == '{' || c == '}') {
      rx_literal(out, c); /* RE2 reads a brace that starts no interval literally */
      i++;
    } else {
      strbuf_putc(out, c);
      quant = c == '*' || c == '+' || c == '?';
      i++;
    }
    after_quantifier = quant;
  }
  return NULL;
}

/* The C.UTF-8 locale, made once; (locale_t)0 when the system lacks it (then patterns
 * and strings are matched byte by byte). */
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static locale_t utf8_locale;

static void make_utf8_locale(void) {
  utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (!utf8_locale) utf8_locale = newlocale(LC_CTYPE_MASK, "C.utf8", (locale_t)0);
  if (!utf8_locale) utf8_locale = newlocale(LC_CTYPE_MASK, "en_US.UTF-8", (locale_t)0);
}

static kiln_status host_regex_full_match(op_host_ctx *ctx) {
  const graph_node *node = ctx->node;
  graph_tensor *x, *y;
  TRY(string_input(ctx, 0, "X", &x));
  const graph_attr_value *pa = graph_node_attr(node, "pattern");
  if (!pa || pa->kind != GRAPH_ATTR_STRING)
    return op_error(node, KILN_INVALID_ARGUMENT, "attribute pattern (a string) is required");
  const char *pattern = pa->s.data ? pa->s.data : "";
  if (strlen(pattern) != pa->s.len)
    return op_error(node, KILN_INVALID_ARGUMENT, "pattern holds a NUL byte, which regcomp cannot take");
  strbuf ere;
  strbuf_init(&ere);
  int cflags = REG_EXTENDED;
  kiln_status s = re2_to_ere(node, pattern, pa->s.len, &ere, &cflags);
  if (s) {
    strbuf_free(&ere);
    return s;
  }
  pthread_once(&utf8_once, make_utf8_locale);
  locale_t prev = utf8_locale ? uselocale(utf8_locale) : (locale_t)0;
  /* The translation alone must compile (so that wrapping it cannot hide an unbalanced
   * ')'); the anchored form "^(...)$" is what runs. */
  regex_t alone, full;
  int rc = regcomp(&alone, strbuf_cstr(&ere), cflags | REG_NOSUB);
  if (rc) {
    char msg[256];
    regerror(rc, &alone, msg, sizeof msg);
    if (prev) uselocale(prev);
    s = op_error(node, KILN_INVALID_ARGUMENT,
                 "pattern '%s' does not compile as a POSIX extended regular expression (translated from RE2 syntax "
                 "to '%s'): %s",
                 pattern, strbuf_cstr(&ere), msg);
    strbuf_free(&ere);
    return s;
  }
  regfree(&alone);
  strbuf anchored;
  strbuf_init(&anchored);
  strbuf_printf(&anchored, "^(%s)$", strbuf_cstr(&ere));
  strbuf_free(&ere);
  rc = regcomp(&full, strbuf_cstr(&anchored), cflags);
  if (rc) {
    char msg[256];
    regerror(rc, &full, msg, sizeof msg);
    if (prev) uselocale(prev);
    s = op_error(node, KILN_INTERNAL, "anchored pattern '%s' does not compile: %s", strbuf_cstr(&anchored), msg);
    strbuf_free(&anchored);
    return s;
  }
  strbuf_free(&anchored);
  s = set_output(ctx, 0, GRAPH_DT_BOOL, x->rank, x->dims, &y);
  for (int64_t i = 0; !s && y && i < x->n; i++) {
    const graph_bytes *e = tensor_string(x, i);
    regmatch_t m[1];
    int flags = 0;
#ifdef REG_STARTEND
    /* The string's real length, so an embedded NUL does not end it early. */
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)e->len;
    flags = REG_STARTEND;
#else
    if (strlen(e->data) != e->len) {
      s = op_error(node, KILN_UNIMPLEMENTED,
                   "element %lld holds a NUL byte, which this C library's regexec cannot see past",
                   (long long)i);
      break;
    }
#endif
    rc = regexec(&full, e->data, 1, m, flags);
    bool hit = rc == 0 && m[0].rm_so == 0 && (size_t)m[0].rm_eo == e->len;
    ((uint8_t *)y->data)[i] = hit;
  }
  regfree(&full);
  if (prev) uselocale(prev);
  return s;
}

/* -------------------------------------------------------- TfIdfVectorizer ---- */

/* The pool's n-grams as a trie: node 0 is the root, each edge one pool item, a node's
 * `id` the 1-based n-gram number (0: only a prefix of longer n-grams). Edges live in one
 * open-addressing hash table keyed by (parent, item). */
typedef struct tfidf_edge {
  int32_t parent, child; /* child 0: empty slot */
  int64_t ival;
  const graph_bytes *sval;
} tfidf_edge;

typedef struct tfidf {
  bool strings;
  int64_t n_nodes, cap_nodes;
  int64_t *ids;
  int64_t cap_edges, n_edges;
  tfidf_edge *edges;
} tfidf;

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

static uint64_t edge_hash(int32_t parent, int64_t ival, const graph_bytes *sval) {
  uint64_t h = 1469598103934665603ULL ^ (uint64_t)parent;
  if (sval) {
    for (size_t i = 0; i < sval->len; i++) h = (h ^ (unsigned char)sval->data[i]) * 1099511628211ULL;
  } else {
    h ^= (uint64_t)ival;
  }
  return mix(h);
}

static int64_t edge_find(const tfidf *t, int32_t parent, int64_t ival, const graph_bytes *sval) {
  uint64_t mask = (uint64_t)t->cap_edges - 1;
  for (uint64_t k = edge_hash(parent, ival, sval) & mask;; k = (k + 1) & mask) {
    const tfidf_edge *e = &t->edges[k];
    if (!e->child) return -(int64_t)k - 1;
    if (e->parent != parent) continue;
    if (sval ? bytes_eq(e->sval, sval) : e->ival == ival) return e->child;
  }
}

static int32_t edge_child(tfidf *t, int32_t parent, int64_t ival, const graph_bytes *sval) {
  int64_t f = edge_find(t, parent, ival, sval);
  if (f > 0) return (int32_t)f;
  if (t->n_nodes == t->cap_nodes) {
    t->cap_nodes *= 2;
    t->ids = realloc(t->ids, (size_t)t->cap_nodes * sizeof *t->ids);
    if (!t->ids) abort();
  }
  int32_t c = (int32_t)t->n_nodes++;
  t->ids[c] = 0;
  tfidf_edge *e = &t->edges[-f - 1];
  *e = (tfidf_edge){parent, c, ival, sval};
  t->n_edges++;
  return c;
}

static kiln_status tfidf_vectorizer(op_host_ctx *ctx, ml_mem *m) {
  const graph_node *node = ctx->node;
  graph_tensor *x = onnx_host_input(ctx, 0), *y;
  if (!x) return op_error(node, KILN_INVALID_ARGUMENT, "input X is required");
  bool strings = x->dtype == GRAPH_DT_STRING;
  if (!strings && x->dtype != GRAPH_DT_INT32 && x->dtype != GRAPH_DT_INT64)
    return op_error(node, KILN_INVALID_ARGUMENT, "X must be a string, int32 or int64 tensor, got %s",
                    graph_dtype_name(x->dtype));
  if (x->rank > 2 || (x->rank == 2 && x->dims[0] < 1)) {
    char t[96];
    type_text(t, sizeof t, x);
    return op_error(node, KILN_INVALID_ARGUMENT, "X must be [C] or [N, C] with N > 0, got %s", t);
  }
  graph_bytes mode = {0};
  TRY(string_attr(node, "mode", "", &mode));
  enum { TF, IDF, TFIDF } wm;
  if (bytes_is(&mode, "TF")) wm = TF;
  else if (bytes_is(&mode, "IDF")) wm = IDF;
  else if (bytes_is(&mode, "TFIDF")) wm = TFIDF;
  else return op_error(node, KILN_INVALID_ARGUMENT, "mode '%.*s' is not TF, IDF or TFIDF", (int)mode.len, mode.data);
  int64_t min_n = graph_node_attr_int_or(node, "min_gram_length", 0);
  int64_t max_n = graph_node_attr_int_or(node, "max_gram_length", 0);
  int64_t max_skip = graph_node_attr_int_or(node, "max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    return op_error(node, KILN_INVALID_ARGUMENT,
                    "min_gram_length %lld, max_gram_length %lld, max_skip_count %lld: need 1 <= min <= max and "
                    "skip >= 0",
                    (long long)min_n, (long long)max_n, (long long)max_skip);
  int64_t *counts, n_counts, *indexes, n_indexes, *pool_i = NULL, n_pool = 0;
  graph_bytes *pool_s = NULL;
  double *weights;
  int64_t n_weights;
  bool has_pi, has_ps;
  TRY(ml_attr_i64(node, m, "ngram_counts", &counts, &n_counts, NULL));
  TRY(ml_attr_i64(node, m, "ngram_indexes", &indexes, &n_indexes, NULL));
  TRY(ml_attr_f64(node, m, "weights", &weights, &n_weights, NULL));
  TRY(ml_attr_i64(node, m, "pool_int64s", &pool_i, &n_pool, &has_pi));
  if (!has_pi) TRY(ml_attr_str(node, m, "pool_strings", &pool_s, &n_pool, &has_ps));
  else has_ps = graph_node_attr(node, "pool_strings") != NULL;
  if (has_pi == has_ps)
    return op_error(node, KILN_INVALID_ARGUMENT, "exactly one of pool_int64s and pool_strings must be given");
  if (strings != has_ps)
    return op_error(node, KILN_INVALID_ARGUMENT, "X is %s but the pool is %s", graph_dtype_name(x->dtype),
                    has_ps ? "pool_strings" : "pool_int64s");
  int64_t out_size = 0;
  for (int64_t k = 0; k < n_indexes; k++) {
    if (indexes[k] < 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "ngram_indexes[%lld] is negative (%lld)", (long long)k,
                      (long long)indexes[k]);
    if (indexes[k] + 1 > out_size) out_size = indexes[k] + 1;
  }
  if (n_weights && n_weights < out_size)
    return op_error(node, KILN_INVALID_ARGUMENT, "%lld weights for %lld output columns", (long long)n_weights,
                    (long long)out_size);
  /* The trie of the n-grams of the lengths asked for; every n-gram of the pool counts
   * towards the numbering that ngram_indexes follows. */
  tfidf t = {strings, 1, 64, NULL, 16, 0, NULL};
  while (t.cap_edges < 2 * n_pool + 16) t.cap_edges *= 2;
  t.ids = calloc((size_t)t.cap_nodes, sizeof *t.ids);
  t.edges = calloc((size_t)t.cap_edges, sizeof *t.edges);
  if (!t.ids || !t.edges) abort();
  kiln_status s = NULL;
  int64_t gram_id = 1;
  for (int64_t k = 0; k < n_counts && !s; k++) {
    int64_t n = k + 1, start = counts[k], end = k + 1 < n_counts ? counts[k + 1] : n_pool;
    if (start < 0 || end < start || end > n_pool) {
      s = op_error(node, KILN_INVALID_ARGUMENT, "ngram_counts[%lld] = %lld does not start a run of the pool of %lld",
                   (long long)k, (long long)start, (long long)n_pool);
      break;
    }
    if ((end - start) % n) {
      s = op_error(node, KILN_INVALID_ARGUMENT, "the %lld pool items of %lld-grams are not a whole number of n-grams",
                   (long long)(end - start), (long long)n);
      break;
    }
    for (int64_t g = start; g < end; g += n, gram_id++) {
      if (n < min_n || n > max_n) continue;
      if (gram_id > n_indexes) {
        s = op_error(node, KILN_INVALID_ARGUMENT, "ngram_indexes has %lld entries but the pool holds more n-grams",
                     (long long)n_indexes);
        break;
      }
      int32_t at = 0;
      for (int64_t q = 0; q < n; q++)
        at = edge_child(&t, at, strings ? 0 : pool_i[g + q], strings ? &pool_s[g + q] : NULL);
      t.ids[at] = gram_id;
    }
  }
  int64_t rows = x->rank == 2 ? x->dims[0] : 1, cols = x->rank == 0 ? 1 : x->dims[x->rank - 1];
  int64_t odims[2] = {rows, out_size};
  if (!s) s = set_output(ctx, 0, GRAPH_DT_FLOAT, x->rank == 2 ? 2 : 1, x->rank == 2 ? odims : &out_size, &y);
  int64_t *freq = s ? NULL : ml_alloc(m, rows * out_size, sizeof *freq);
  for (int64_t r = 0; !s && r < rows && t.n_nodes > 1; r++) {
    int64_t start_n = min_n;
    for (int64_t d = 1; d <= max_skip + 1; d++) {
      for (int64_t st = 0; st < cols; st++) {
        if (st + d * (start_n - 1) >= cols) break;
        int32_t at = 0;
        for (int64_t n = 1, item = st; n <= max_n && item < cols; n++, item += d) {
          int64_t e = r * cols + item;
          int64_t f = strings ? edge_find(&t, at, 0, tensor_string(x, e))
                              : edge_find(&t, at, tensor_get_s64(x, e), NULL);
          if (f <= 0) break;
          at = (int32_t)f;
          if (n >= start_n && t.ids[at]) freq[r * out_size + indexes[t.ids[at] - 1]]++;
        }
      }
      if (start_n == 1) { /* unigrams do not depend on the skip: counted once */
        start_n = 2;
        if (start_n > max_n) break;
      }
    }
  }
  for (int64_t r = 0; !s && y && r < rows; r++)
    for (int64_t c = 0; c < out_size; c++) {
      int64_t f = freq[r * out_size + c];
      double v = wm == TF ? (double)f
                 : wm == IDF ? (f > 0 ? (n_weights ? weights[c] : 1.0) : 0.0)
                             : (n_weights ? weights[c] : 1.0) * (double)f;
      ((float *)y->data)[r * out_size + c] = (float)v;
    }
  free(t.ids);
  free(t.edges);
  return s;
}
ML_KERNEL(host_tfidf_vectorizer, tfidf_vectorizer)

/* ------------------------------------------------------- Equal and Cast ---- */

kiln_status onnx_host_string_equal(op_host_ctx *ctx) {
  graph_tensor *a = onnx_host_input(ctx, 0), *b = onnx_host_input(ctx, 1), *z;
  if (!a || !b) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "Equal takes two inputs");
  if (a->dtype != GRAPH_DT_STRING || b->dtype != GRAPH_DT_STRING)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "on the host Equal compares two string tensors, got %s and %s (numbers run compiled)",
                    graph_dtype_name(a->dtype), graph_dtype_name(b->dtype));
  bcast bc;
  TRY(bcast_init(ctx->node, a, b, &bc));
  TRY(set_output(ctx, 0, GRAPH_DT_BOOL, bc.rank, bc.dims, &z));
  for (int64_t i = 0; z && i < bc.n; i++) {
    int64_t ia, ib;
    bcast_at(&bc, i, &ia, &ib);
    ((uint8_t *)z->data)[i] = bytes_eq(tensor_string(a, ia), tensor_string(b, ib));
  }
  return NULL;
}

/* Whether a and b are the same value once stored as an element of dt. */
static bool same_element(double a, double b, graph_dtype dt) {
  switch (dt) {
    case GRAPH_DT_HALF: return f64_to_f16(a) == f64_to_f16(b);
    case GRAPH_DT_BFLOAT16: return f64_to_bf16(a) == f64_to_bf16(b);
    case GRAPH_DT_FLOAT: return (float)a == (float)b;
    default: return a == b;
  }
}

/* numpy's str() of a float: the shortest digits that read back to the same value of
 * the element type, positional for exponents -4..15 (with ".0" when integral), else
 * scientific ("1e-05", "1.5e+16"), as np.array(x).astype(str) writes them. */
static void format_float(strbuf *b, double v, graph_dtype dt) {
  if (isnan(v)) {
    strbuf_append(b, "nan");
    return;
  }
  if (isinf(v)) {
    strbuf_append(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  for (int prec = 0; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec, v);
    if (same_element(strtod(buf, NULL), v, dt)) break;
  }
  /* buf is "[-]d.ddde[+-]XX": split digits and exponent. */
  const char *p = buf;
  bool neg = *p == '-';
  if (neg) p++;
  char digits[32];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  int exp = atoi(p + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  if (neg) strbuf_putc(b, '-');
  if (exp < -4 || exp >= 16) {
    strbuf_putc(b, digits[0]);
    if (nd > 1) {
      strbuf_putc(b, '.');
      strbuf_appendn(b, digits + 1, (size_t)nd - 1);
    }
    strbuf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return;
  }
  if (exp < 0) {
    strbuf_append(b, "0.");
    for (int k = -1; k > exp; k--) strbuf_putc(b, '0');
    strbuf_appendn(b, digits, (size_t)nd);
    return;
  }
  for (int k = 0; k <= exp; k++) strbuf_putc(b, k < nd ? digits[k] : '0');
  strbuf_putc(b, '.');
  if (nd > exp + 1) strbuf_appendn(b, digits + exp + 1, (size_t)(nd - exp - 1));
  else strbuf_putc(b, '0');
}

static kiln_status cast_strings(op_host_ctx *ctx, graph_dtype to) {
  const graph_node *node = ctx->node;
  graph_tensor *x = onnx_host_input(ctx, 0), *y;
  if (!x) return op_error(node, KILN_INVALID_ARGUMENT, "input is required");
  graph_dtype from = x->dtype;
  hlo_type h;
  bool num_from = from != GRAPH_DT_STRING && graph_dtype_to_hlo(from, &h);
  bool num_to = to != GRAPH_DT_STRING && graph_dtype_to_hlo(to, &h);
  if (!((from == GRAPH_DT_STRING && (num_to || to == GRAPH_DT_STRING)) || (to == GRAPH_DT_STRING && num_from)))
    return op_error(node, KILN_UNIMPLEMENTED, "no host cast from %s to %s (the host casts to and from strings)",
                    graph_dtype_name(from), graph_dtype_name(to));
  if (from == GRAPH_DT_STRING && to == GRAPH_DT_STRING) {
    ctx->outputs[0] = tensor_ref(x);
    return NULL;
  }
  TRY(set_output(ctx, 0, to, x->rank, x->dims, &y));
  if (!y) return NULL;
  strbuf b;
  strbuf_init(&b);
  for (int64_t i = 0; i < x->n; i++) {
    if (to == GRAPH_DT_STRING) {
      b.len = 0;
      if (from == GRAPH_DT_BOOL) strbuf_append(&b, tensor_get_s64(x, i) ? "True" : "False");
      else if (graph_dtype_is_float(from)) format_float(&b, tensor_get_f64(x, i), from);
      else if (from == GRAPH_DT_UINT64) strbuf_printf(&b, "%llu", (unsigned long long)((const uint64_t *)x->data)[i]);
      else strbuf_printf(&b, "%lld", (long long)tensor_get_s64(x, i));
      tensor_set_string(y, i, b.data ? b.data : "", b.len);
      continue;
    }
    /* String to number: the whole element must be a number (surrounding whitespace
     * allowed); floats take strtod's forms ("1e-5", "INF", "nan"), integers a decimal
     * integer or any number strtod reads (truncated); bools "True"/"true"/"False"/
     * "false" or a number (nonzero is true). */
    const graph_bytes *e = tensor_string(x, i);
    const char *str = e->data;
    char *end = NULL;
    bool ok = e->len > 0 && strlen(str) == e->len;
    if (ok && to == GRAPH_DT_BOOL) {
      const char *t = str;
      while (*t == ' ' || *t == '\t') t++;
      if (!strncmp(t, "True", 4) || !strncmp(t, "true", 4)) end = (char *)t + 4, tensor_set_s64(y, i, 1);
      else if (!strncmp(t, "False", 5) || !strncmp(t, "false", 5)) end = (char *)t + 5, tensor_set_s64(y, i, 0);
      else {
        double v = strtod(str, &end);
        tensor_set_s64(y, i, v != 0);
      }
    } else if (ok && graph_dtype_is_int(to)) {
      /* Decimal integers exactly (uint64 past INT64_MAX included), else via strtod. */
      bool unsigned64 = to == GRAPH_DT_UINT64 && str[strspn(str, " \t")] != '-';
      errno = 0;
      unsigned long long u = 0;
      long long v = 0;
      if (unsigned64) u = strtoull(str, &end, 10);
      else v = strtoll(str, &end, 10);
      if (end != str && (*end == 0 || *end == ' ' || *end == '\t' || *end == '\n') && errno == 0) {
        if (unsigned64) ((uint64_t *)y->data)[i] = u;
        else tensor_set_s64(y, i, v);
      } else {
        tensor_set_f64(y, i, strtod(str, &end));
      }
    } else if (ok) {
      tensor_set_f64(y, i, strtod(str, &end));
    }
    if (ok) {
      while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
      ok = end && end != str && *end == 0;
    }
    if (!ok) {
      strbuf_free(&b);
      strbuf q;
      strbuf_init(&q);
      tensor_print_quoted(&q, e->data, e->len > 64 ? 64 : e->len);
      kiln_status s = op_error(node, KILN_INVALID_ARGUMENT, "element %lld (%s%s) is not a number, cannot cast to %s",
                               (long long)i, strbuf_cstr(&q), e->len > 64 ? "..." : "", graph_dtype_name(to));
      strbuf_free(&q);
      return s;
    }
  }
  strbuf_free(&b);
  return NULL;
}

kiln_status onnx_host_string_cast(op_host_ctx *ctx) {
  graph_dtype to;
  TRY(onnx_attr_dtype(ctx->node, "to", &to));
  return cast_strings(ctx, to);
}

kiln_status onnx_host_string_castlike(op_host_ctx *ctx) {
  graph_tensor *like = onnx_host_input(ctx, 1);
  if (!like) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "CastLike needs input target_type");
  return cast_strings(ctx, like->dtype);
}

/* -------------------------------------------------------------------- table ---- */

static const op_def onnx_string_defs[] = {
    {"onnx.RegexFullMatch", OP_STRING, 0, NULL, host_regex_full_match},
    {"onnx.StringConcat", OP_STRING, 0, NULL, host_string_concat},
    {"onnx.StringNormalizer", OP_STRING | OP_DYNAMIC_SHAPE, 0, NULL, host_string_normalizer},
    {"onnx.StringSplit", OP_STRING | OP_DYNAMIC_SHAPE, 0, NULL, host_string_split},
    {"onnx.TfIdfVectorizer", OP_STRING, 0, NULL, host_tfidf_vectorizer},
};

const op_table onnx_string_ops = {"onnx.string", (int)(sizeof onnx_string_defs / sizeof onnx_string_defs[0]),
                                  onnx_string_defs};
