/* Tests of src/ops/ops_onnx_string.c without the importer or the executor: the string
 * host kernels (StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
 * TfIdfVectorizer, and the string forms of Equal, Cast and CastLike) called directly on
 * host tensors of hand-built nodes, with values worked out from the ONNX spec, Python's
 * str methods (which onnx's reference implementation uses) and UnicodeData.txt; and the
 * errors, each of which must name the node and op. ONNX's conformance cases
 * (tests/onnx_suite) cover the common values end to end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "op_case.h"
#include "ops/ops.h"
#include "ops/ops_onnx_string.h"

static graph_tensor *strs(int rank, const int64_t *dims, const char *const *v) {
  graph_tensor *t;
  CHECK_OK(tensor_create(GRAPH_DT_STRING, rank, dims, &t));
  for (int64_t i = 0; i < t->n; i++) tensor_set_string(t, i, v[i], strlen(v[i]));
  return t;
}

static graph_tensor *vec_strs(int64_t n, const char *const *v) { return strs(1, &n, v); }

static graph_tensor *vec_s64(graph_dtype dt, int rank, const int64_t *dims, const int64_t *v) {
  graph_tensor *t;
  CHECK_OK(tensor_create(dt, rank, dims, &t));
  for (int64_t i = 0; i < t->n; i++) tensor_set_s64(t, i, v[i]);
  return t;
}

static bool strings_are(const graph_tensor *t, int rank, const int64_t *dims, const char *const *v) {
  if (!t || t->dtype != GRAPH_DT_STRING || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i]) return false;
  for (int64_t i = 0; i < t->n; i++) {
    const graph_bytes *s = tensor_string(t, i);
    if (s->len != strlen(v[i]) || memcmp(s->data, v[i], s->len) != 0) return false;
  }
  return true;
}

static bool bools_are(const graph_tensor *t, int64_t n, const uint8_t *v) {
  return t && t->dtype == GRAPH_DT_BOOL && t->n == n && memcmp(t->data, v, (size_t)n) == 0;
}

/* Runs op's host kernel on a fresh node of n_in inputs; `setup` sets attributes. */
typedef struct run {
  graph *g;
  graph_node *node;
  graph_tensor *out[4];
} run;

static void run_init(run *r, const char *op, int n_in) {
  memset(r, 0, sizeof *r);
  r->g = graph_new("onnx");
  r->node = op_case_node(r->g, op, n_in);
}

static kiln_status run_host(run *r, const char *op, int n_in, graph_tensor **in, int n_out) {
  for (int i = 0; i < 4; i++) {
    tensor_free(r->out[i]);
    r->out[i] = NULL;
  }
  char name[64];
  snprintf(name, sizeof name, "onnx.%s", op);
  const op_def *d = op_find(name);
  CHECK(d && d->host);
  op_host_ctx hc = {r->node, 20, n_in, in, n_out, r->out};
  return d->host(&hc);
}

static void run_free(run *r) {
  for (int i = 0; i < 4; i++) tensor_free(r->out[i]);
  graph_free(r->g);
}

static void set_strings_attr(graph_node *n, const char *name, int count, const char *const *v) {
  graph_attr_value *items = calloc((size_t)count + 1, sizeof *items);
  for (int i = 0; i < count; i++) {
    items[i].kind = GRAPH_ATTR_STRING;
    items[i].s.data = (char *)v[i];
    items[i].s.len = strlen(v[i]);
  }
  graph_attr_value list = {.kind = GRAPH_ATTR_LIST};
  list.list.elem = GRAPH_ATTR_STRING;
  list.list.n = count;
  list.list.items = items;
  graph_node_set_attr(n, name, &list);
  free(items);
}

static void set_str(graph_node *n, const char *name, const char *v) { graph_node_set_attr_string(n, name, v, strlen(v)); }

/* ------------------------------------------------------- StringNormalizer ---- */

static void test_normalizer_drops_stopwords_case_insensitively_and_uppercases_unicode(void) {
  run r;
  run_init(&r, "StringNormalizer", 1);
  set_strings_attr(r.node, "stopwords", 1, (const char *[]){"monday"});
  set_str(r.node, "case_change_action", "UPPER");
  graph_tensor *x = strs(2, (int64_t[]){1, 4}, (const char *[]){"Monday", "stra\xc3\x9f" "e", "\xc3\xa9lan", "MONDAY"});
  CHECK_OK(run_host(&r, "StringNormalizer", 1, &x, 1));
  /* Simple case mapping: sharp s keeps its case (no "SS"), e-acute becomes E-acute. */
  CHECK(strings_are(r.out[0], 2, (int64_t[]){1, 2}, (const char *[]){"STRA\xc3\x9f" "E", "\xc3\x89LAN"}));
  tensor_free(x);
  run_free(&r);
}

static void test_normalizer_case_sensitive_keeps_other_spellings_and_lowercases_greek(void) {
  run r;
  run_init(&r, "StringNormalizer", 1);
  set_strings_attr(r.node, "stopwords", 1, (const char *[]){"monday"});
  set_str(r.node, "case_change_action", "LOWER");
  graph_node_set_attr_int(r.node, "is_case_sensitive", 1);
  set_str(r.node, "locale", "en_US");
  /* "ΣΊΣΥΦΟΣ": simple mapping lowers every sigma to σ (final-sigma rules are contextual) */
  graph_tensor *x = vec_strs(3, (const char *[]){"Monday", "monday", "\xce\xa3\xce\x8a\xce\xa3\xce\xa5\xce\xa6\xce\x9f\xce\xa3"});
  CHECK_OK(run_host(&r, "StringNormalizer", 1, &x, 1));
  CHECK(strings_are(r.out[0], 1, (int64_t[]){2},
                    (const char *[]){"monday", "\xcf\x83\xce\xaf\xcf\x83\xcf\x85\xcf\x86\xce\xbf\xcf\x83"}));
  tensor_free(x);
  run_free(&r);
}

static void test_normalizer_all_dropped_gives_one_empty_string(void) {
  run r;
  run_init(&r, "StringNormalizer", 1);
  set_strings_attr(r.node, "stopwords", 2, (const char *[]){"a", "b"});
  graph_tensor *x = strs(2, (int64_t[]){1, 2}, (const char *[]){"A", "b"});
  CHECK_OK(run_host(&r, "StringNormalizer", 1, &x, 1));
  CHECK(strings_are(r.out[0], 2, (int64_t[]){1, 1}, (const char *[]){""}));
  tensor_free(x);
  x = vec_strs(1, (const char *[]){"B"});
  CHECK_OK(run_host(&r, "StringNormalizer", 1, &x, 1));
  CHECK(strings_are(r.out[0], 1, (int64_t[]){1}, (const char *[]){""}));
  tensor_free(x);
  run_free(&r);
}

static void test_normalizer_errors_name_the_node(void) {
  run r;
  run_init(&r, "StringNormalizer", 1);
  graph_tensor *x = strs(2, (int64_t[]){2, 1}, (const char *[]){"a", "b"});
  CHECK_ERR(run_host(&r, "StringNormalizer", 1, &x, 1), "(onnx.StringNormalizer): X must be [C] or [1, C], got string[2,1]");
  tensor_free(x);
  x = vec_strs(1, (const char *[]){"\xff"});
  set_str(r.node, "case_change_action", "UPPER");
  CHECK_ERR(run_host(&r, "StringNormalizer", 1, &x, 1), "element 0 of X is not valid UTF-8");
  set_str(r.node, "case_change_action", "TITLE");
  CHECK_ERR(run_host(&r, "StringNormalizer", 1, &x, 1), "case_change_action 'TITLE' is not LOWER, UPPER or NONE");
  set_str(r.node, "case_change_action", "LOWER");
  set_str(r.node, "locale", "tr_TR.UTF-8");
  kiln_status s = run_host(&r, "StringNormalizer", 1, &x, 1);
  CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED);
  CHECK_ERR(s, "locale 'tr_TR.UTF-8' has language-specific case rules");
  tensor_free(x);
  int64_t one = 1;
  x = vec_s64(GRAPH_DT_INT64, 1, &one, (int64_t[]){3});
  CHECK_ERR(run_host(&r, "StringNormalizer", 1, &x, 1), "input X must be a string tensor, got int64[1]");
  tensor_free(x);
  run_free(&r);
}

static void test_case_mapping_follows_unicode_simple_mappings(void) {
  CHECK(onnx_string_to_upper('a') == 'A' && onnx_string_to_lower('Z') == 'z');
  CHECK(onnx_string_to_upper(0xFF) == 0x178 && onnx_string_to_lower(0x178) == 0xFF);  /* ÿ Ÿ */
  CHECK(onnx_string_to_lower(0x130) == 'i' && onnx_string_to_upper('i') == 'I');     /* İ -> i, one way */
  CHECK(onnx_string_to_upper(0x131) == 'I');                                          /* dotless ı */
  CHECK(onnx_string_to_upper(0xDF) == 0xDF && onnx_string_to_lower(0x1E9E) == 0xDF);  /* ß has no simple upper */
  CHECK(onnx_string_to_upper(0x3C2) == 0x3A3 && onnx_string_to_lower(0x3A3) == 0x3C3); /* final sigma */
  CHECK(onnx_string_to_upper(0xB5) == 0x39C);                                         /* micro sign */
  CHECK(onnx_string_to_lower(0x2126) == 0x3C9 && onnx_string_to_upper(0x3C9) == 0x3A9); /* Ohm sign */
  CHECK(onnx_string_to_upper(0x436) == 0x416 && onnx_string_to_lower(0x401) == 0x451); /* ж, Ё */
  CHECK(onnx_string_to_upper(0x1C6) == 0x1C4 && onnx_string_to_lower(0x1C5) == 0x1C6); /* Ǆ ǅ ǆ */
  CHECK(onnx_string_to_upper(0x10428) == 0x10400);                                    /* Deseret */
  CHECK(onnx_string_to_upper(0x4E2D) == 0x4E2D && onnx_string_to_upper('7') == '7');  /* no case */
}

/* ----------------------------------------------------------- StringConcat ---- */

static void test_concat_broadcasts_and_refuses_numbers(void) {
  run r;
  run_init(&r, "StringConcat", 2);
  graph_tensor *in[2] = {strs(2, (int64_t[]){2, 1}, (const char *[]){"a", "\xc3\xa9"}),
                         vec_strs(3, (const char *[]){"1", "", "\xe4\xb8\xad"})};
  CHECK_OK(run_host(&r, "StringConcat", 2, in, 1));
  CHECK(strings_are(r.out[0], 2, (int64_t[]){2, 3},
                    (const char *[]){"a1", "a", "a\xe4\xb8\xad", "\xc3\xa9" "1", "\xc3\xa9", "\xc3\xa9\xe4\xb8\xad"}));
  tensor_free(in[1]);
  int64_t two = 2;
  in[1] = vec_s64(GRAPH_DT_INT32, 1, &two, (int64_t[]){1, 2});
  CHECK_ERR(run_host(&r, "StringConcat", 2, in, 1), "(onnx.StringConcat): input Y must be a string tensor, got int32[2]");
  tensor_free(in[1]);
  in[1] = vec_strs(3, (const char *[]){"1", "2", "3"});
  tensor_free(in[0]);
  in[0] = vec_strs(2, (const char *[]){"a", "b"});
  CHECK_ERR(run_host(&r, "StringConcat", 2, in, 1), "cannot be broadcast");
  tensor_free(in[0]);
  tensor_free(in[1]);
  run_free(&r);
}

/* ------------------------------------------------------------ StringSplit ---- */

static bool lengths_are(const graph_tensor *t, int64_t n, const int64_t *v) {
  return t && t->dtype == GRAPH_DT_INT64 && t->n == n && memcmp(t->data, v, sizeof(int64_t) * (size_t)n) == 0;
}

static void test_split_without_delimiter_follows_python_str_split(void) {
  run r;
  run_init(&r, "StringSplit", 1);
  /* Runs of whitespace, Unicode ideographic space (U+3000) included, separate; leading
   * and trailing whitespace gives no empty pieces; "" splits into nothing. */
  graph_tensor *x = vec_strs(3, (const char *[]){"  a\xe3\x80\x80" "b \t c ", "", "x"});
  CHECK_OK(run_host(&r, "StringSplit", 1, &x, 2));
  CHECK(strings_are(r.out[0], 2, (int64_t[]){3, 3}, (const char *[]){"a", "b", "c", "", "", "", "x", "", ""}));
  CHECK(lengths_are(r.out[1], 3, (int64_t[]){3, 0, 1}));
  /* maxsplit: the rest keeps its trailing whitespace, as str.split(None, 1) does. */
  graph_node_set_attr_int(r.node, "maxsplit", 1);
  tensor_free(x);
  x = vec_strs(1, (const char *[]){"  a b  c "});
  CHECK_OK(run_host(&r, "StringSplit", 1, &x, 2));
  CHECK(strings_are(r.out[0], 2, (int64_t[]){1, 2}, (const char *[]){"a", "b  c "}));
  tensor_free(x);
  run_free(&r);
}

static void test_split_with_delimiter_keeps_empty_pieces_and_scalars_work(void) {
  run r;
  run_init(&r, "StringSplit", 1);
  set_str(r.node, "delimiter", "--");
  graph_tensor *x = vec_strs(2, (const char *[]){"a----b--", ""});
  CHECK_OK(run_host(&r, "StringSplit", 1, &x, 2));
  CHECK(strings_are(r.out[0], 2, (int64_t[]){2, 4}, (const char *[]){"a", "", "b", "", "", "", "", ""}));
  CHECK(lengths_are(r.out[1], 2, (int64_t[]){4, 1}));
  tensor_free(x);
  graph_node_set_attr_int(r.node, "maxsplit", 1);
  x = strs(0, NULL, (const char *[]){"a--b--c"});
  CHECK_OK(run_host(&r, "StringSplit", 1, &x, 2));
  CHECK(strings_are(r.out[0], 1, (int64_t[]){2}, (const char *[]){"a", "b--c"}));
  CHECK(r.out[1] && r.out[1]->rank == 0 && tensor_get_s64(r.out[1], 0) == 2);
  tensor_free(x);
  int64_t one = 1;
  x = vec_s64(GRAPH_DT_FLOAT, 1, &one, (int64_t[]){1});
  CHECK_ERR(run_host(&r, "StringSplit", 1, &x, 2), "(onnx.StringSplit): input X must be a string tensor");
  tensor_free(x);
  run_free(&r);
}

/* --------------------------------------------------------- RegexFullMatch ---- */

/* Whether each of n strings fully matches pattern. */
static void expect_matches(const char *pattern, int n, const char *const *v, const uint8_t *want) {
  run r;
  run_init(&r, "RegexFullMatch", 1);
  set_str(r.node, "pattern", pattern);
  graph_tensor *x = vec_strs(n, v);
  kiln_status s = run_host(&r, "RegexFullMatch", 1, &x, 1);
  if (s) check_fail(__FILE__, __LINE__, pattern, kiln_status_message(s));
  kiln_status_free(s);
  if (!bools_are(r.out[0], n, want)) check_fail(__FILE__, __LINE__, "full-match results", pattern);
  tensor_free(x);
  run_free(&r);
}

static void test_regex_full_match_translates_re2_syntax(void) {
  expect_matches("\\d{3}-\\d{4}", 3, (const char *[]){"555-1234", "555-12345", "a55-1234"}, (uint8_t[]){1, 0, 0});
  expect_matches("[\\w.\\-]+@[a-z]+\\.com", 3, (const char *[]){"a.b-c@x.com", "a b@x.com", "a@x.comm"},
                 (uint8_t[]){1, 0, 0});
  expect_matches("(?i)hello", 2, (const char *[]){"HeLLo", "hello!"}, (uint8_t[]){1, 0});
  expect_matches(".*?x", 2, (const char *[]){"abx", "abxy"}, (uint8_t[]){1, 0});
  expect_matches("(?:ab)+", 2, (const char *[]){"abab", "aba"}, (uint8_t[]){1, 0});
  expect_matches("a|b", 3, (const char *[]){"a", "b", "ab"}, (uint8_t[]){1, 1, 0});
  expect_matches("h.llo", 2, (const char *[]){"h\xc3\xa9llo", "h\nllo"}, (uint8_t[]){1, 0}); /* '.' is a character */
  expect_matches("(?s)h.llo", 1, (const char *[]){"h\nllo"}, (uint8_t[]){1});
  expect_matches("[]a]+", 3, (const char *[]){"]a", "a", "b"}, (uint8_t[]){1, 1, 0});
  expect_matches("[^-]x", 2, (const char *[]){"-x", "yx"}, (uint8_t[]){0, 1});
  expect_matches("[\\^a]", 2, (const char *[]){"^", "a"}, (uint8_t[]){1, 1});
  expect_matches("\\x41\\x{e9}\\.", 2, (const char *[]){"A\xc3\xa9.", "A\xc3\xa9x"}, (uint8_t[]){1, 0});
  expect_matches("\\Qa+b\\E", 2, (const char *[]){"a+b", "aab"}, (uint8_t[]){1, 0});
  expect_matches("", 2, (const char *[]){"", "a"}, (uint8_t[]){1, 0});
  expect_matches("www\\.[\\w.-]+\\.\\bcom\\b", 2, (const char *[]){"www.google.com", "www.bbc.co.uk"},
                 (uint8_t[]){1, 0});
}

static void test_regex_full_match_refusals_name_the_node(void) {
  run r;
  run_init(&r, "RegexFullMatch", 1);
  graph_tensor *x = vec_strs(1, (const char *[]){"a"});
  set_str(r.node, "pattern", "(ab");
  CHECK_ERR(run_host(&r, "RegexFullMatch", 1, &x, 1),
            "(onnx.RegexFullMatch): pattern '(ab' does not compile as a POSIX extended regular expression");
  set_str(r.node, "pattern", "\\p{L}+");
  kiln_status s = run_host(&r, "RegexFullMatch", 1, &x, 1);
  CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED);
  CHECK_ERR(s, "Unicode classes");
  set_str(r.node, "pattern", "(a)\\1");
  CHECK_ERR(run_host(&r, "RegexFullMatch", 1, &x, 1), "backreferences");
  set_str(r.node, "pattern", "a(?=b)");
  CHECK_ERR(run_host(&r, "RegexFullMatch", 1, &x, 1), "a (?...) group");
  set_str(r.node, "pattern", "[\\W]");
  CHECK_ERR(run_host(&r, "RegexFullMatch", 1, &x, 1), "a negated or Unicode class inside brackets");
  graph_node_remove_attr(r.node, "pattern");
  CHECK_ERR(run_host(&r, "RegexFullMatch", 1, &x, 1), "attribute pattern (a string) is required");
  tensor_free(x);
  run_free(&r);
}

/* -------------------------------------------------------- TfIdfVectorizer ---- */

static bool floats_are(const graph_tensor *t, int rank, const int64_t *dims, const float *v) {
  if (!t || t->dtype != GRAPH_DT_FLOAT || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i]) return false;
  for (int64_t i = 0; i < t->n; i++)
    if (((const float *)t->data)[i] != v[i]) return false;
  return true;
}

static void tfidf_node(run *r, const char *mode, int64_t min_n, int64_t max_n, int64_t skip) {
  set_str(r->node, "mode", mode);
  graph_node_set_attr_int(r->node, "min_gram_length", min_n);
  graph_node_set_attr_int(r->node, "max_gram_length", max_n);
  graph_node_set_attr_int(r->node, "max_skip_count", skip);
}

static void test_tfidf_counts_ngrams_with_skips_like_the_reference(void) {
  /* onnx's tf_batch_uniandbigrams_skip5 case. */
  run r;
  run_init(&r, "TfIdfVectorizer", 1);
  tfidf_node(&r, "TF", 1, 2, 5);
  graph_node_set_attr_ints(r.node, "ngram_counts", 2, (int64_t[]){0, 4});
  graph_node_set_attr_ints(r.node, "ngram_indexes", 7, (int64_t[]){0, 1, 2, 3, 4, 5, 6});
  graph_node_set_attr_ints(r.node, "pool_int64s", 10, (int64_t[]){2, 3, 5, 4, 5, 6, 7, 8, 6, 7});
  graph_tensor *x = vec_s64(GRAPH_DT_INT32, 2, (int64_t[]){2, 6}, (int64_t[]){1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 2, (int64_t[]){2, 7}, (float[]){0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1}));
  tensor_free(x);
  run_free(&r);
}

static void test_tfidf_weights_follow_output_columns_in_idf_and_tfidf(void) {
  run r;
  run_init(&r, "TfIdfVectorizer", 1);
  graph_node_set_attr_ints(r.node, "ngram_counts", 1, (int64_t[]){0});
  graph_node_set_attr_ints(r.node, "ngram_indexes", 3, (int64_t[]){2, 0, 1}); /* unigram 1 -> column 2 ... */
  graph_node_set_attr_ints(r.node, "pool_int64s", 3, (int64_t[]){1, 2, 3});
  graph_node_set_attr_floats(r.node, "weights", 3, (float[]){0.5f, 2, 4});
  int64_t three = 3;
  graph_tensor *x = vec_s64(GRAPH_DT_INT64, 1, &three, (int64_t[]){1, 2, 1});
  tfidf_node(&r, "TF", 1, 1, 0);
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 1, &three, (float[]){1, 0, 2}));
  tfidf_node(&r, "IDF", 1, 1, 0);
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 1, &three, (float[]){0.5f, 0, 4}));
  tfidf_node(&r, "TFIDF", 1, 1, 0);
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 1, &three, (float[]){0.5f, 0, 8}));
  tensor_free(x);
  run_free(&r);
}

static void test_tfidf_matches_string_pools(void) {
  run r;
  run_init(&r, "TfIdfVectorizer", 1);
  tfidf_node(&r, "TF", 2, 2, 0);
  graph_node_set_attr_ints(r.node, "ngram_counts", 2, (int64_t[]){0, 2});
  graph_node_set_attr_ints(r.node, "ngram_indexes", 3, (int64_t[]){0, 1, 2});
  set_strings_attr(r.node, "pool_strings", 4, (const char *[]){"a", "b", "a", "b"});
  graph_tensor *x = vec_strs(5, (const char *[]){"a", "b", "x", "a", "b"});
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 1, (int64_t[]){3}, (float[]){0, 0, 2}));
  tfidf_node(&r, "TF", 1, 2, 0);
  CHECK_OK(run_host(&r, "TfIdfVectorizer", 1, &x, 1));
  CHECK(floats_are(r.out[0], 1, (int64_t[]){3}, (float[]){2, 2, 2}));
  tensor_free(x);
  run_free(&r);
}

static void test_tfidf_errors_name_the_node(void) {
  run r;
  run_init(&r, "TfIdfVectorizer", 1);
  tfidf_node(&r, "BM25", 1, 1, 0);
  graph_node_set_attr_ints(r.node, "ngram_counts", 1, (int64_t[]){0});
  graph_node_set_attr_ints(r.node, "ngram_indexes", 1, (int64_t[]){0});
  graph_node_set_attr_ints(r.node, "pool_int64s", 2, (int64_t[]){1, 2});
  int64_t two = 2;
  graph_tensor *x = vec_s64(GRAPH_DT_INT64, 1, &two, (int64_t[]){1, 2});
  CHECK_ERR(run_host(&r, "TfIdfVectorizer", 1, &x, 1), "(onnx.TfIdfVectorizer): mode 'BM25' is not TF, IDF or TFIDF");
  tfidf_node(&r, "TF", 1, 1, 0);
  CHECK_ERR(run_host(&r, "TfIdfVectorizer", 1, &x, 1), "ngram_indexes has 1 entries but the pool holds more n-grams");
  tensor_free(x);
  x = vec_strs(1, (const char *[]){"a"});
  CHECK_ERR(run_host(&r, "TfIdfVectorizer", 1, &x, 1), "X is string but the pool is pool_int64s");
  tensor_free(x);
  run_free(&r);
}

/* ------------------------------------------------------- Equal and Cast ---- */

static void test_equal_compares_strings_bytewise_with_broadcasting(void) {
  run r;
  run_init(&r, "Equal", 2);
  graph_tensor *in[2] = {strs(2, (int64_t[]){2, 2}, (const char *[]){"a", "b", "", "\xc3\xa9"}),
                         vec_strs(2, (const char *[]){"a", "\xc3\xa9"})};
  CHECK_OK(run_host(&r, "Equal", 2, in, 1));
  CHECK(bools_are(r.out[0], 4, (uint8_t[]){1, 0, 0, 1}));
  tensor_free(in[0]);
  tensor_free(in[1]);
  run_free(&r);
}

static void test_cast_numbers_to_strings_writes_numpy_str(void) {
  run r;
  run_init(&r, "Cast", 1);
  graph_node_set_attr_int(r.node, "to", 8 /* STRING */);
  graph_tensor *x;
  int64_t seven = 7;
  CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 1, &seven, &x));
  float v[7] = {0.1f, 1e-5f, 3, -0.0f, 1e16f, NAN, -INFINITY};
  for (int i = 0; i < 7; i++) tensor_set_f64(x, i, v[i]);
  CHECK_OK(run_host(&r, "Cast", 1, &x, 1));
  CHECK(strings_are(r.out[0], 1, &seven, (const char *[]){"0.1", "1e-05", "3.0", "-0.0", "1e+16", "nan", "-inf"}));
  tensor_free(x);
  int64_t three = 3;
  x = vec_s64(GRAPH_DT_INT64, 1, &three, (int64_t[]){-42, 0, INT64_MAX});
  CHECK_OK(run_host(&r, "Cast", 1, &x, 1));
  CHECK(strings_are(r.out[0], 1, &three, (const char *[]){"-42", "0", "9223372036854775807"}));
  tensor_free(x);
  x = vec_s64(GRAPH_DT_BOOL, 1, &three, (int64_t[]){1, 0, 1});
  CHECK_OK(run_host(&r, "Cast", 1, &x, 1));
  CHECK(strings_are(r.out[0], 1, &three, (const char *[]){"True", "False", "True"}));
  tensor_free(x);
  run_free(&r);
}

static void test_cast_strings_to_numbers_parses_and_names_bad_elements(void) {
  run r;
  run_init(&r, "Cast", 1);
  graph_node_set_attr_int(r.node, "to", 1 /* FLOAT */);
  graph_tensor *x = vec_strs(4, (const char *[]){"1e3", " 2.5 ", "-INF", "nan"});
  CHECK_OK(run_host(&r, "Cast", 1, &x, 1));
  const float *f = r.out[0] ? r.out[0]->data : NULL;
  CHECK(f && f[0] == 1000 && f[1] == 2.5f && isinf(f[2]) && f[2] < 0 && isnan(f[3]));
  tensor_free(x);
  graph_node_set_attr_int(r.node, "to", 7 /* INT64 */);
  x = vec_strs(3, (const char *[]){"42", "-7", "1e3"});
  CHECK_OK(run_host(&r, "Cast", 1, &x, 1));
  CHECK(lengths_are(r.out[0], 3, (int64_t[]){42, -7, 1000}));
  tensor_free(x);
  x = vec_strs(2, (const char *[]){"1", "abc"});
  CHECK_ERR(run_host(&r, "Cast", 1, &x, 1), "(onnx.Cast): element 1 (\"abc\") is not a number, cannot cast to int64");
  tensor_free(x);
  run_free(&r);
  /* CastLike takes the target type from its second input. */
  run_init(&r, "CastLike", 2);
  graph_tensor *in[2] = {vec_strs(2, (const char *[]){"True", "0"}), NULL};
  int64_t one = 1;
  in[1] = vec_s64(GRAPH_DT_BOOL, 1, &one, (int64_t[]){0});
  CHECK_OK(run_host(&r, "CastLike", 2, in, 1));
  CHECK(bools_are(r.out[0], 2, (uint8_t[]){1, 0}));
  tensor_free(in[0]);
  tensor_free(in[1]);
  run_free(&r);
}

TEST_MAIN(TEST(test_normalizer_drops_stopwords_case_insensitively_and_uppercases_unicode),
          TEST(test_normalizer_case_sensitive_keeps_other_spellings_and_lowercases_greek),
          TEST(test_normalizer_all_dropped_gives_one_empty_string), TEST(test_normalizer_errors_name_the_node),
          TEST(test_case_mapping_follows_unicode_simple_mappings), TEST(test_concat_broadcasts_and_refuses_numbers),
          TEST(test_split_without_delimiter_follows_python_str_split),
          TEST(test_split_with_delimiter_keeps_empty_pieces_and_scalars_work),
          TEST(test_regex_full_match_translates_re2_syntax), TEST(test_regex_full_match_refusals_name_the_node),
          TEST(test_tfidf_counts_ngrams_with_skips_like_the_reference),
          TEST(test_tfidf_weights_follow_output_columns_in_idf_and_tfidf), TEST(test_tfidf_matches_string_pools),
          TEST(test_tfidf_errors_name_the_node), TEST(test_equal_compares_strings_bytewise_with_broadcasting),
          TEST(test_cast_numbers_to_strings_writes_numpy_str),
          TEST(test_cast_strings_to_numbers_parses_and_names_bad_elements))
