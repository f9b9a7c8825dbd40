/* Unit tests for the JSON reader/writer: every value kind (escapes, surrogate pairs,
 * int64 beyond 2^53, negative zero, exponents), strictness (each malformed document
 * must fail with the right FILE:LINE:COL and wording), robustness (deep nesting, every
 * truncation of a document, long arrays and big objects in linear time), the
 * path-naming checked accessors importers rely on, and the writer: exact compact and
 * pretty output, escaping, shortest round-trip doubles, and parse -> write -> parse
 * equality. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "check.h"

static json_value *parse_ok(arena *a, const char *text) {
  json_value *v = NULL;
  CHECK_OK(json_parse(a, text, strlen(text), "t.json", &v));
  return v;
}

static char *write_str(const json_value *v, bool pretty) {
  strbuf b;
  strbuf_init(&b);
  CHECK_OK(json_write(&b, v, pretty));
  return strbuf_take(&b);
}

static void test_scalars(void) {
  arena *a = arena_new();
  json_value *v = parse_ok(a, "null");
  CHECK(v && v->type == JSON_NULL && v->parent == NULL);
  v = parse_ok(a, " true ");
  CHECK(json_as_bool(v, false) == true);
  v = parse_ok(a, "false");
  CHECK(json_is(v, JSON_BOOL) && json_as_bool(v, true) == false);
  v = parse_ok(a, "\"hi\"");
  CHECK(v && strcmp(json_as_string(v), "hi") == 0 && v->u.string.len == 2);

  struct {
    const char *text;
    bool is_int;
    int64_t i;
    double d;
  } nums[] = {
      {"0", true, 0, 0.0},
      {"7", true, 7, 7.0},
      {"-12", true, -12, -12.0},
      {"1.5", false, 0, 1.5},
      {"-0.25", false, 0, -0.25},
      {"1e3", false, 0, 1000.0},
      {"1E+3", false, 0, 1000.0},
      {"25e-2", false, 0, 0.25},
      {"2.5E-1", false, 0, 0.25},
      {"9223372036854775807", true, INT64_MAX, 9223372036854775807.0},
      {"-9223372036854775808", true, INT64_MIN, -9223372036854775808.0},
      {"9007199254740993", true, 9007199254740993LL, 9007199254740992.0}, /* 2^53 + 1 */
      {"9223372036854775808", false, 0, 9223372036854775808.0},           /* 2^63 */
      {"-9223372036854775809", false, 0, -9223372036854775808.0},
      {"1.7976931348623157e308", false, 0, 1.7976931348623157e308},
      {"5e-324", false, 0, 5e-324},
      {"1e-400", false, 0, 0.0}, /* underflow reads as zero, as strtod gives */
      {"123456789012345678901234567890", false, 0, 123456789012345678901234567890.0},
  };
  for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
    v = parse_ok(a, nums[k].text);
    if (!v) continue;
    CHECK(v->type == JSON_NUMBER);
    CHECK(v->u.number.is_int == nums[k].is_int);
    if (nums[k].is_int) CHECK(v->u.number.i == nums[k].i);
    CHECK(v->u.number.d == nums[k].d);
    char *w = write_str(v, false);
    CHECK(strcmp(w, nums[k].text) == 0); /* the original text is kept */
    free(w);
  }

  /* Negative zero: an exact integer 0 whose double keeps the sign. */
  v = parse_ok(a, "-0");
  CHECK(v && v->u.number.is_int && v->u.number.i == 0 && signbit(v->u.number.d));
  char *w = write_str(v, false);
  CHECK(strcmp(w, "-0") == 0);
  free(w);
  v = parse_ok(a, "-0.0");
  CHECK(v && !v->u.number.is_int && signbit(v->u.number.d) && json_as_int64(v, 9) == 0);

  /* Integer views of numbers that are not integer literals. */
  CHECK(json_as_int64(parse_ok(a, "1e3"), -1) == 1000);
  CHECK(json_as_int64(parse_ok(a, "3.0"), -1) == 3);
  CHECK(json_as_int64(parse_ok(a, "3.5"), -1) == -1);
  CHECK(json_as_int64(parse_ok(a, "1e30"), -1) == -1);
  CHECK(json_as_double(parse_ok(a, "7"), 0) == 7.0);
  arena_free(a);
}

static void test_strings(void) {
  arena *a = arena_new();
  json_value *v = parse_ok(a, "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"");
  CHECK(v && strcmp(json_as_string(v), "q\" b\\ s/ \b\f\n\r\t") == 0);
  v = parse_ok(a, "\"caf\\u00e9 \\u00E9 \\u4e2d\"");
  CHECK(v && strcmp(json_as_string(v), "caf\xC3\xA9 \xC3\xA9 \xE4\xB8\xAD") == 0);
  v = parse_ok(a, "\"\\ud83d\\ude00!\""); /* U+1F600 as a surrogate pair */
  CHECK(v && strcmp(json_as_string(v), "\xF0\x9F\x98\x80!") == 0 && v->u.string.len == 5);
  v = parse_ok(a, "\"\\uDBFF\\uDFFF\""); /* U+10FFFF, the last code point */
  CHECK(v && strcmp(json_as_string(v), "\xF4\x8F\xBF\xBF") == 0);
  v = parse_ok(a, "\"a\\u0000b\""); /* embedded NUL: the length is the truth */
  CHECK(v && v->u.string.len == 3 && memcmp(v->u.string.s, "a\0b", 4) == 0);
  v = parse_ok(a, "\"raw \xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9\""); /* raw UTF-8 passes through */
  CHECK(v && strcmp(json_as_string(v), "raw \xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9") == 0);
  v = parse_ok(a, "\"\"");
  CHECK(v && json_as_string(v) && v->u.string.len == 0);
  v = parse_ok(a, "\"\x7F\""); /* DEL is not a control character for JSON */
  CHECK(v && v->u.string.len == 1);
  arena_free(a);
}

static void test_containers(void) {
  arena *a = arena_new();
  const char *doc =
      "{\"z\": 1, \"a\": [true, null, {\"k\": \"v\"}, []], \"m\": {}, \"\": 0, \"a b\": \"x\"}";
  json_value *v = parse_ok(a, doc);
  if (!v) {
    arena_free(a);
    return;
  }
  CHECK(json_object_len(v) == 5);
  const char *order[] = {"z", "a", "m", "", "a b"};
  for (size_t i = 0; i < 5; i++) CHECK(strcmp(json_object_at(v, i)->key, order[i]) == 0);
  CHECK(json_object_at(v, 5) == NULL);
  const json_value *arr = json_get(v, "a");
  CHECK(json_array_len(arr) == 4);
  CHECK(json_is(json_array_at(arr, 0), JSON_BOOL));
  CHECK(json_is(json_array_at(arr, 1), JSON_NULL));
  CHECK(strcmp(json_as_string(json_get(json_array_at(arr, 2), "k")), "v") == 0);
  CHECK(json_array_len(json_array_at(arr, 3)) == 0 && json_is(json_array_at(arr, 3), JSON_ARRAY));
  CHECK(json_array_at(arr, 4) == NULL);
  CHECK(json_object_len(json_get(v, "m")) == 0);
  CHECK(json_as_int64(json_get(v, ""), -1) == 0);
  CHECK(json_get(v, "missing") == NULL);
  CHECK(json_get(arr, "z") == NULL);      /* not an object */
  CHECK(json_array_len(v) == 0);          /* not an array */
  CHECK(json_get(NULL, "z") == NULL);
  CHECK(json_as_string(NULL) == NULL && json_as_int64(NULL, 5) == 5 && json_as_double(NULL, 2.5) == 2.5);
  CHECK(json_as_bool(json_get(v, "z"), true) == true); /* wrong type: the fallback */

  /* Keys with NUL inside are found by length. */
  v = parse_ok(a, "{\"a\\u0000b\": 1, \"a\": 2}");
  CHECK(json_as_int64(json_getn(v, "a\0b", 3), 0) == 1);
  CHECK(json_as_int64(json_get(v, "a"), 0) == 2);

  /* A big object goes through the hash index; every key must be found. */
  strbuf b;
  strbuf_init(&b);
  strbuf_putc(&b, '{');
  for (int i = 0; i < 1000; i++) strbuf_printf(&b, "%s\"key%d\": %d", i ? "," : "", i, i * 3);
  strbuf_putc(&b, '}');
  v = parse_ok(a, strbuf_cstr(&b));
  CHECK(json_object_len(v) == 1000);
  int found = 0;
  for (int i = 0; i < 1000; i++) {
    char key[32];
    snprintf(key, sizeof key, "key%d", i);
    found += json_as_int64(json_get(v, key), -1) == i * 3;
  }
  CHECK(found == 1000);
  CHECK(json_get(v, "key1000") == NULL);
  strbuf_free(&b);

  /* Parent links give every value its place. */
  v = parse_ok(a, "[[0, {\"x\": [5]}]]");
  const json_value *five = json_array_at(json_get(json_array_at(json_array_at(v, 0), 1), "x"), 0);
  CHECK(five && five->index == 0 && five->parent->key && strcmp(five->parent->key, "x") == 0 && five->parent->parent->index == 1);
  arena_free(a);
}

static void test_whitespace_and_bom(void) {
  arena *a = arena_new();
  json_value *v = parse_ok(a, "\xEF\xBB\xBF {\"a\":1}");
  CHECK(json_as_int64(json_get(v, "a"), 0) == 1);
  v = parse_ok(a, " \t\r\n[ 1 ,\n\t2 ] \r\n");
  CHECK(json_array_len(v) == 2);
  /* A BOM does not count as a column. */
  CHECK_ERR(json_parse(a, "\xEF\xBB\xBFx", 4, "b.json", &v), "b.json:1:1: expected a value, got 'x'");
  /* Length is what counts, not a NUL terminator. */
  CHECK_OK(json_parse(a, "[1]garbage", 3, "n.json", &v));
  CHECK(json_array_len(v) == 1);
  CHECK_ERR(json_parse(a, "[1]\0", 4, "n.json", &v), "n.json:1:4: expected the end of input after the top-level value, got byte 0x00");
  CHECK_ERR(json_parse(a, NULL, 0, NULL, &v), "<input>:1:1: expected a value, got end of input");
  CHECK(v == NULL);
  arena_free(a);
}

static void test_invalid_documents(void) {
  static const struct {
    const char *text;
    const char *error;
  } cases[] = {
      {"", "bad.json:1:1: expected a value, got end of input"},
      {"   \n  ", "bad.json:2:3: expected a value, got end of input"},
      {"[1, 2", "bad.json:1:6: expected ',' or ']' after an array element, got end of input"},
      {"[1 2]", "bad.json:1:4: expected ',' or ']' after an array element, got '2'"},
      {"[1,]", "bad.json:1:4: expected a value after ',', got ']' (JSON has no trailing commas)"},
      {"{\"a\":1,}", "bad.json:1:8: expected '\"' to start a key after ',', got '}'"},
      {"{a:1}", "bad.json:1:2: expected '\"' to start an object key, got 'a'"},
      {"{'a':1}", "bad.json:1:2: expected '\"' to start an object key, got '''"},
      {"{\"a\" 1}", "bad.json:1:6: expected ':' after an object key, got '1'"},
      {"{\"a\":1 \"b\":2}", "bad.json:1:8: expected ',' or '}' after an object member, got '\"'"},
      {"{\n  \"a\": 1,\n  \"a\": 2\n}", "bad.json:3:3: duplicate key \"a\" (first at 2:3)"},
      {"[NaN]", "bad.json:1:2: expected a value (JSON has no NaN or Infinity), got 'NaN'"},
      {"Infinity", "bad.json:1:1: expected a value (JSON has no NaN or Infinity), got 'Infinity'"},
      {"-Infinity", "bad.json:1:2: expected a digit after '-', got 'Infinity'"},
      {"+1", "bad.json:1:1: expected a value, got '+'"},
      {"01", "bad.json:1:2: expected '.', 'e' or the end of the number after a leading 0"},
      {"1.", "bad.json:1:3: expected a digit after '.', got end of input"},
      {".5", "bad.json:1:1: expected a value, got '.'"},
      {"1e", "bad.json:1:3: expected a digit in the exponent, got end of input"},
      {"1e+x", "bad.json:1:4: expected a digit in the exponent, got 'x'"},
      {"1e400", "bad.json:1:1: expected a number within the range of a double, got 1e400"},
      {"-1e999", "bad.json:1:1: expected a number within the range of a double"},
      {"tru", "bad.json:1:1: expected a value, got 'tru'"},
      {"truex", "bad.json:1:1: expected a value, got 'truex'"},
      {"True", "bad.json:1:1: expected a value, got 'True'"},
      {"nul", "bad.json:1:1: expected a value, got 'nul'"},
      {"[1] x", "bad.json:1:5: expected the end of input after the top-level value, got 'x'"},
      {"{} {}", "bad.json:1:4: expected the end of input after the top-level value, got '{'"},
      {"// c\n1", "bad.json:1:1: expected a value, got '/'"},
      {"\"abc", "bad.json:1:1: expected '\"' to close this string, got end of input"},
      {"\"ab\\", "bad.json:1:1: expected '\"' to close this string, got end of input"},
      {"[\"a\nb\"]", "bad.json:1:4: expected control character U+000A to be escaped"},
      {"\"tab\there\"", "bad.json:1:5: expected control character U+0009 to be escaped"},
      {"\"\\x41\"", "bad.json:1:3: expected an escape (one of \" \\ / b f n r t u) after '\\', got 'x41'"},
      {"\"\\u12\"", "bad.json:1:2: expected 4 hex digits after \\u"},
      {"\"\\u12G4\"", "bad.json:1:2: expected 4 hex digits after \\u"},
      {"\"x\\ud83d\"", "bad.json:1:3: expected a low surrogate escape \\uDC00-\\uDFFF after high surrogate \\uD83D"},
      {"\"\\ud83d\\u0041\"", "bad.json:1:2: expected a low surrogate escape"},
      {"\"\\ude00\"", "bad.json:1:2: expected a high surrogate before low surrogate \\uDE00"},
      {"\"\xFF\"", "bad.json:1:2: expected valid UTF-8 in a string, got byte 0xff"},
      {"\"\xC0\xAF\"", "bad.json:1:2: expected valid UTF-8 in a string, got byte 0xc0"},       /* overlong '/' */
      {"\"\xED\xA0\x80\"", "bad.json:1:2: expected valid UTF-8 in a string, got byte 0xed"},   /* UTF-8 surrogate */
      {"\"\xF4\x90\x80\x80\"", "bad.json:1:2: expected valid UTF-8 in a string, got byte 0xf4"}, /* > U+10FFFF */
      {"\"\xE2\x82\"", "bad.json:1:2: expected valid UTF-8 in a string, got byte 0xe2"},       /* truncated */
      {"[\xC3\xA9]", "bad.json:1:2: expected a value, got byte 0xc3"},
      {"\xEF\xBB", "bad.json:1:1: expected a value, got byte 0xef"},
      {"[1,\n 2,\n  @]", "bad.json:3:3: expected a value, got '@'"},
  };
  arena *a = arena_new();
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    json_value *v = (json_value *)1;
    kiln_status s = json_parse(a, cases[k].text, strlen(cases[k].text), "bad.json", &v);
    if (!s || !strstr(kiln_status_message(s), cases[k].error)) {
      fprintf(stderr, "case %zu: %s\n  want: %s\n   got: %s\n", k, cases[k].text, cases[k].error,
              s ? kiln_status_message(s) : "OK");
      CHECK(!"wrong parse error");
    }
    CHECK(v == NULL);
    CHECK(kiln_status_code(s) == KILN_INVALID_ARGUMENT);
    kiln_status_free(s);
  }
  arena_free(a);
}

static void test_depth_limit(void) {
  arena *a = arena_new();
  size_t n = 100000;
  char *text = malloc(2 * n + 1);
  for (size_t depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    json_value *v = NULL;
    kiln_status s = json_parse(a, text, 2 * depth, "deep.json", &v);
    if (depth == JSON_MAX_DEPTH) {
      CHECK_OK(s);
      /* The deepest value still writes and compares. */
      char *w = write_str(v, true);
      CHECK(w && strlen(w) >= 2 * depth);
      free(w);
      CHECK(json_equal(v, v));
    } else {
      CHECK_ERR(s, "deep.json:1:513: nesting deeper than 512 arrays/objects");
    }
  }
  /* Far deeper than any stack could recurse: an error, not a crash. */
  memset(text, '[', n);
  CHECK_ERR(json_parse(a, text, n, "deep.json", &(json_value *){NULL}), "nesting deeper than 512");
  for (size_t i = 0; i < n; i++) text[i] = (i % 2) ? '[' : '{';
  CHECK_ERR(json_parse(a, text, n, "deep.json", &(json_value *){NULL}), "deep.json:1:2: expected '\"' to start an object key");
  strcpy(text, "{\"a\":");
  size_t len = strlen(text);
  for (size_t i = 0; i < 600; i++) {
    memcpy(text + len, "{\"a\":", 5);
    len += 5;
  }
  CHECK_ERR(json_parse(a, text, len, "deep.json", &(json_value *){NULL}), "nesting deeper than 512");
  free(text);
  arena_free(a);
}

/* Every proper prefix of a document that opens with '{' is invalid: each must be an
 * error naming end of input or a bad token, never a crash or an accepted value. */
static void test_truncations(void) {
  const char *doc =
      "{\"format\": \"graph-model\", \"n\": [1, -2.5e3, true, false, null, \"\\u00e9\\ud83d\\ude00\"],"
      " \"o\": {\"k\": {\"deep\": [[]]}}, \"s\": \"caf\xC3\xA9\"}";
  size_t len = strlen(doc);
  arena *a = arena_new();
  json_value *v = NULL;
  CHECK_OK(json_parse(a, doc, len, "t.json", &v));
  int errors = 0;
  for (size_t cut = 0; cut < len; cut++) {
    kiln_status s = json_parse(a, doc, cut, "t.json", &v);
    errors += s != NULL && v == NULL;
    kiln_status_free(s);
  }
  CHECK(errors == (int)len);
  arena_free(a);
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Long arrays, big objects and many strings must parse in linear time. A quadratic
 * step would take minutes here; linear takes well under a second. */
static void test_large_documents(void) {
  const size_t n = 300000;
  strbuf b;
  strbuf_init(&b);
  strbuf_append(&b, "{\"node\":[");
  for (size_t i = 0; i < n; i++) strbuf_printf(&b, "%s{\"name\":\"n%zu\",\"i\":%zu}", i ? "," : "", i, i);
  strbuf_append(&b, "],\"big\":{");
  for (size_t i = 0; i < n / 4; i++) strbuf_printf(&b, "%s\"k%zu\":[%zu]", i ? "," : "", i, i);
  strbuf_append(&b, "}}");
  arena *a = arena_new();
  json_value *v = NULL;
  double t0 = seconds();
  CHECK_OK(json_parse(a, b.data, b.len, "big.json", &v));
  double t1 = seconds();
  const json_value *nodes = json_get(v, "node");
  CHECK(json_array_len(nodes) == n);
  CHECK(json_as_int64(json_get(json_array_at(nodes, n - 1), "i"), -1) == (int64_t)(n - 1));
  const json_value *big = json_get(v, "big");
  CHECK(json_object_len(big) == n / 4);
  int64_t sum = 0;
  for (size_t i = 0; i < n / 4; i += 997) {
    char key[32];
    snprintf(key, sizeof key, "k%zu", i);
    sum += json_as_int64(json_array_at(json_get(big, key), 0), -1) == (int64_t)i;
  }
  CHECK(sum == (int64_t)((n / 4 + 996) / 997));
  strbuf out;
  strbuf_init(&out);
  CHECK_OK(json_write(&out, v, false));
  double t2 = seconds();
  CHECK(out.len == b.len && memcmp(out.data, b.data, b.len) == 0); /* compact in, same out */
  json_value *back = NULL;
  CHECK_OK(json_parse(a, out.data, out.len, "big2.json", &back));
  CHECK(json_equal(v, back));
  CHECK(t1 - t0 < 20.0 && t2 - t1 < 20.0);
  strbuf_free(&out);
  strbuf_free(&b);
  arena_free(a);
}

static const char *model_json =
    "{\n"
    "  \"format\": \"graph-model\",\n"
    "  \"modelTopology\": {\n"
    "    \"node\": [\n"
    "      {\"name\": \"x\", \"op\": \"Placeholder\", \"attr\": {\"dtype\": {\"type\": \"DT_FLOAT\"}}},\n"
    "      {\"name\": \"y\", \"op\": \"Cast\", \"attr\": {\"T\": 3, \"i\": {\"i\": \"-7\"}, \"big\": \"9007199254740993\",\n"
    "       \"f\": {\"f\": \"NaN\"}, \"g\": 0.5, \"odd key\": true}}\n"
    "    ]\n"
    "  },\n"
    "  \"weightsManifest\": [{\"paths\": [\"group1-shard1of1.bin\"],\n"
    "    \"weights\": [{\"name\": \"w\", \"shape\": [3, 3, 1.5], \"dtype\": \"float32\"}]}]\n"
    "}\n";

static void test_checked_accessors(void) {
  arena *a = arena_new();
  json_value *root = NULL;
  CHECK_OK(json_parse(a, model_json, strlen(model_json), "model.json", &root));
  if (!root) {
    arena_free(a);
    return;
  }
  const json_value *topo = NULL, *nodes = NULL, *node = NULL, *attr = NULL, *t = NULL;
  size_t n = 0;
  CHECK_OK(json_expect_object(root));
  CHECK_OK(json_expect_member(root, "modelTopology", &topo));
  CHECK_OK(json_expect_member(topo, "node", &nodes));
  CHECK_OK(json_expect_array(nodes, &n));
  CHECK(n == 2);
  node = json_array_at(nodes, 1);
  CHECK_OK(json_expect_member(node, "attr", &attr));
  CHECK_OK(json_expect_member(attr, "T", &t));
  const char *str = NULL;
  CHECK_ERR(json_expect_string(t, &str, NULL), "model.json: modelTopology.node[1].attr.T: expected a string, got number 3");
  CHECK(str == NULL);
  CHECK_ERR(json_expect_member(node, "device", &t), "model.json: modelTopology.node[1]: missing required key \"device\"");
  CHECK_ERR(json_expect_member(nodes, "x", &t), "model.json: modelTopology.node: expected an object, got array");
  CHECK_ERR(json_expect_array(root, NULL), "model.json: (top level): expected an array, got object");
  CHECK_ERR(json_expect_bool(json_get(root, "format"), &(bool){0}),
            "model.json: format: expected a bool, got string \"graph-model\"");
  CHECK_ERR(json_expect_double(json_get(attr, "odd key"), &(double){0}),
            "model.json: modelTopology.node[1].attr[\"odd key\"]: expected a number, got bool true");
  CHECK_ERR(json_expect_type(json_get(json_array_at(nodes, 0), "attr"), JSON_NULL), "attr: expected null, got object");

  /* Integers: numbers, protobuf's decimal strings, and what is refused. */
  int64_t i = 0;
  CHECK_OK(json_expect_int64(t = json_get(attr, "T"), &i));
  CHECK(i == 3);
  CHECK_OK(json_expect_proto_int64(json_get(json_get(attr, "i"), "i"), &i));
  CHECK(i == -7);
  CHECK_OK(json_expect_proto_int64(json_get(attr, "big"), &i));
  CHECK(i == 9007199254740993LL);
  CHECK_ERR(json_expect_int64(json_get(attr, "big"), &i),
            "model.json: modelTopology.node[1].attr.big: expected an integer, got string \"9007199254740993\"");
  const json_value *shape = json_get(json_array_at(json_get(json_array_at(json_get(root, "weightsManifest"), 0), "weights"), 0), "shape");
  CHECK_ERR(json_expect_int64(json_array_at(shape, 2), &i),
            "model.json: weightsManifest[0].weights[0].shape[2]: expected an integer, got number 1.5");
  CHECK_ERR(json_expect_proto_int64(json_get(node, "op"), &i),
            "node[1].op: expected an int64 (a number or a string of decimal digits), got string \"Cast\"");
  json_value *v = parse_ok(a, "[\"99999999999999999999\", 1e19, \"\", \"+1\", \" 1\", 1e300, -9.5e18]");
  CHECK_ERR(json_expect_proto_int64(json_array_at(v, 0), &i), "t.json: [0]: expected an int64");
  CHECK_ERR(json_expect_int64(json_array_at(v, 1), &i), "[1]: expected an integer that int64 holds exactly, got number 1e19");
  CHECK_ERR(json_expect_proto_int64(json_array_at(v, 2), &i), "[2]: expected an int64");
  CHECK_ERR(json_expect_proto_int64(json_array_at(v, 3), &i), "[3]: expected an int64");
  CHECK_ERR(json_expect_proto_int64(json_array_at(v, 4), &i), "[4]: expected an int64");
  CHECK_ERR(json_expect_int64(json_array_at(v, 5), &i), "[5]: expected an integer that int64 holds exactly");
  CHECK_ERR(json_expect_int64(json_array_at(v, 6), &i), "[6]: expected an integer that int64 holds exactly");

  /* Doubles: protobuf writes non-finite floats as strings. */
  double d = 0;
  CHECK_OK(json_expect_proto_double(json_get(json_get(attr, "f"), "f"), &d));
  CHECK(isnan(d));
  CHECK_OK(json_expect_proto_double(json_get(attr, "g"), &d));
  CHECK(d == 0.5);
  v = parse_ok(a, "[\"Infinity\", \"-Infinity\", \"-2.5e1\", \"nan\", \"1.\", \"\", null]");
  CHECK_OK(json_expect_proto_double(json_array_at(v, 0), &d));
  CHECK(isinf(d) && d > 0);
  CHECK_OK(json_expect_proto_double(json_array_at(v, 1), &d));
  CHECK(isinf(d) && d < 0);
  CHECK_OK(json_expect_proto_double(json_array_at(v, 2), &d));
  CHECK(d == -25.0);
  CHECK_ERR(json_expect_proto_double(json_array_at(v, 3), &d), "[3]: expected a number (or a numeric string");
  CHECK_ERR(json_expect_proto_double(json_array_at(v, 4), &d), "[4]: expected a number");
  CHECK_ERR(json_expect_proto_double(json_array_at(v, 5), &d), "[5]: expected a number");
  CHECK_ERR(json_expect_proto_double(json_array_at(v, 6), &d), "[6]: expected a number (or a numeric string, \"NaN\", \"Infinity\" or \"-Infinity\"), got null");

  /* Strings, with length; long previews are cut. */
  size_t len = 0;
  CHECK_OK(json_expect_string(json_get(node, "op"), &str, &len));
  CHECK(strcmp(str, "Cast") == 0 && len == 4);
  v = parse_ok(a, "{\"long\": \"0123456789012345678901234567890123456789012345678901234567890123456789\"}");
  CHECK_ERR(json_expect_int64(json_get(v, "long"), &i), "got string \"0123456789012345678901234567890123456789\"...");

  /* Importers' own checks carry the same location prefix. */
  CHECK_ERR(json_error_at(node, KILN_UNIMPLEMENTED, "op %s is not supported", "Cast"),
            "model.json: modelTopology.node[1]: op Cast is not supported");
  CHECK(strcmp(json_document_name(t), "model.json") == 0);
  strbuf p;
  strbuf_init(&p);
  json_path(json_array_at(shape, 0), &p);
  CHECK(strcmp(strbuf_cstr(&p), "weightsManifest[0].weights[0].shape[0]") == 0);
  strbuf_free(&p);
  v = parse_ok(a, "[{\"\\n\": [1]}]");
  CHECK_ERR(json_expect_string(json_array_at(json_get(json_array_at(v, 0), "\n"), 0), &str, NULL),
            "t.json: [0][\"\\n\"][0]: expected a string, got number 1");
  arena_free(a);
}

static void test_writer_exact_output(void) {
  arena *a = arena_new();
  json_value *v = parse_ok(a, " { \"a\" : [ 1 , 2.50 , -0 , 1E5 ] , \"b\" : { } , \"c\" : [ ] , \"d\" : [ \"x\" , {\"e\": null} ],"
                              " \"f\": true }");
  char *w = write_str(v, false);
  CHECK(strcmp(w, "{\"a\":[1,2.50,-0,1E5],\"b\":{},\"c\":[],\"d\":[\"x\",{\"e\":null}],\"f\":true}") == 0);
  free(w);
  w = write_str(v, true);
  CHECK(strcmp(w,
               "{\n"
               "  \"a\": [1, 2.50, -0, 1E5],\n"
               "  \"b\": {},\n"
               "  \"c\": [],\n"
               "  \"d\": [\n"
               "    \"x\",\n"
               "    {\n"
               "      \"e\": null\n"
               "    }\n"
               "  ],\n"
               "  \"f\": true\n"
               "}") == 0);
  free(w);

  /* Escaping: the two mandatory escapes, short forms for common controls, \u for the rest;
   * '/' and non-ASCII text stay as they are. */
  json_value *s = json_new_stringn(a, "q\"\\/\b\f\n\r\t\x01\x1f\x7f\xC3\xA9\0z", 16);
  w = write_str(s, false);
  CHECK(strcmp(w, "\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xC3\xA9\\u0000z\"") == 0);
  json_value *back = parse_ok(a, w);
  CHECK(json_equal(s, back) && back->u.string.len == 16);
  free(w);
  /* Invalid UTF-8 in a built string is replaced so the output stays valid JSON. */
  w = write_str(json_new_string(a, "a\xFF" "b\xE2\x82"), false);
  CHECK(strcmp(w, "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD\"") == 0);
  CHECK(parse_ok(a, w) != NULL);
  free(w);

  /* Built numbers: exact int64, shortest round-trip doubles. */
  struct {
    json_value *v;
    const char *text;
  } nums[] = {
      {json_new_int64(a, INT64_MIN), "-9223372036854775808"},
      {json_new_int64(a, 9007199254740993LL), "9007199254740993"},
      {json_new_double(a, 0.1), "0.1"},
      {json_new_double(a, 1.0 / 3.0), "0.3333333333333333"},
      {json_new_double(a, -0.0), "-0"},
      {json_new_double(a, 3.0), "3"},
      {json_new_double(a, 1e300), "1e+300"},
      {json_new_double(a, 5e-324), "5e-324"},
      {json_new_double(a, 1.7976931348623157e308), "1.7976931348623157e+308"},
      {json_new_double(a, 123456.789), "123456.789"},
  };
  for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
    w = write_str(nums[k].v, false);
    if (strcmp(w, nums[k].text) != 0) {
      fprintf(stderr, "number %zu: want %s got %s\n", k, nums[k].text, w);
      CHECK(!"number text");
    }
    json_value *r = parse_ok(a, w);
    CHECK(json_equal(r, nums[k].v));
    if (!nums[k].v->u.number.is_int && r) CHECK(r->u.number.d == nums[k].v->u.number.d);
    free(w);
  }
  strbuf b;
  strbuf_init(&b);
  json_value *arr = json_new_array(a);
  json_array_append(a, arr, json_new_double(a, NAN));
  CHECK_ERR(json_write(&b, arr, false), "<json>: [0]: cannot write nan as JSON");
  strbuf_free(&b);
  arena_free(a);
}

static void test_round_trip(void) {
  const char *docs[] = {
      model_json,
      "[]",
      "{}",
      "\"\\ud83d\\ude00 \\u0000 \\\\ \\\" \\u001F\"",
      "[0, -0, -0.0, 1e-7, 1.5E+300, 9223372036854775807, -9223372036854775808, 18446744073709551616, 0.1]",
      "{\"a\": {\"b\": {\"c\": [[[{}]]]}}, \"\": [null, true, false], \"\\u00e9\": \"\xE2\x82\xAC\"}",
  };
  for (size_t k = 0; k < sizeof docs / sizeof docs[0]; k++) {
    for (int pretty = 0; pretty <= 1; pretty++) {
      arena *a = arena_new();
      json_value *v = parse_ok(a, docs[k]);
      char *w = write_str(v, pretty);
      json_value *back = parse_ok(a, w);
      CHECK(json_equal(v, back));
      char *w2 = write_str(back, pretty);
      CHECK(strcmp(w, w2) == 0); /* writing is a fixed point */
      free(w);
      free(w2);
      arena_free(a);
    }
  }
}

static void test_builder_and_equality(void) {
  arena *a = arena_new();
  json_value *o = json_new_object(a);
  json_object_set(a, o, "name", json_new_string(a, "cpu"));
  json_object_set(a, o, "abi", json_new_int64(a, 1));
  json_value *devs = json_new_array(a);
  for (int i = 0; i < 20; i++) json_array_append(a, devs, json_new_int64(a, i));
  json_object_set(a, o, "devices", devs);
  json_object_set(a, o, "abi", json_new_int64(a, 2)); /* replaced in place */
  CHECK(json_object_len(o) == 3);
  CHECK(json_as_int64(json_get(o, "abi"), 0) == 2);
  CHECK(strcmp(json_object_at(o, 1)->key, "abi") == 0);
  CHECK(json_as_int64(json_array_at(devs, 19), 0) == 19);
  char *w = write_str(o, false);
  CHECK(strcmp(w, "{\"name\":\"cpu\",\"abi\":2,\"devices\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]}") == 0);
  free(w);
  CHECK_ERR(json_expect_string(json_array_at(devs, 4), &(const char *){NULL}, NULL),
            "<json>: devices[4]: expected a string, got number 4");

  /* Many keys: lookups and replacements through the index as it grows. */
  json_value *big = json_new_object(a);
  for (int i = 0; i < 3000; i++) {
    char key[32];
    snprintf(key, sizeof key, "k%d", i);
    json_object_set(a, big, key, json_new_int64(a, i));
  }
  for (int i = 0; i < 3000; i += 3) {
    char key[32];
    snprintf(key, sizeof key, "k%d", i);
    json_object_set(a, big, key, json_new_int64(a, -i));
  }
  CHECK(json_object_len(big) == 3000);
  int good = 0;
  for (int i = 0; i < 3000; i++) {
    char key[32];
    snprintf(key, sizeof key, "k%d", i);
    good += json_as_int64(json_get(big, key), 1) == (i % 3 ? i : -i);
  }
  CHECK(good == 3000);

  /* Equality is semantic: key order is ignored, numbers compare by value. */
  json_value *x = parse_ok(a, "{\"a\": 1, \"b\": [1.0, 2e0, 1e2], \"c\": \"s\"}");
  json_value *y = parse_ok(a, "{\"c\": \"s\", \"b\": [1, 2, 100], \"a\": 1.00}");
  CHECK(json_equal(x, y));
  CHECK(!json_equal(parse_ok(a, "0"), parse_ok(a, "-0")));
  CHECK(!json_equal(parse_ok(a, "9007199254740993"), parse_ok(a, "9007199254740992")));
  CHECK(!json_equal(parse_ok(a, "9007199254740993"), parse_ok(a, "9007199254740993.0")));
  CHECK(json_equal(parse_ok(a, "9007199254740992"), parse_ok(a, "9007199254740992.0")));
  CHECK(!json_equal(parse_ok(a, "[1, 2]"), parse_ok(a, "[2, 1]")));
  CHECK(!json_equal(parse_ok(a, "{\"a\": 1}"), parse_ok(a, "{\"a\": 1, \"b\": 2}")));
  CHECK(!json_equal(parse_ok(a, "{\"a\": 1}"), parse_ok(a, "{\"b\": 1}")));
  CHECK(!json_equal(parse_ok(a, "\"a\""), parse_ok(a, "\"a\\u0000\"")));
  CHECK(!json_equal(parse_ok(a, "null"), parse_ok(a, "false")));
  CHECK(strcmp(json_type_name(JSON_OBJECT), "object") == 0 && strcmp(json_type_name(JSON_NULL), "null") == 0);

  /* A built document too deep to write is an error, not a stack overflow. */
  json_value *deep = json_new_array(a), *cur = deep;
  for (int i = 0; i < JSON_MAX_DEPTH + 5; i++) {
    json_value *next = json_new_array(a);
    json_array_append(a, cur, next);
    cur = next;
  }
  strbuf b;
  strbuf_init(&b);
  CHECK_ERR(json_write(&b, deep, false), "cannot write nesting deeper than 512");
  strbuf_free(&b);
  arena_free(a);
}

TEST_MAIN(TEST(test_scalars), TEST(test_strings), TEST(test_containers), TEST(test_whitespace_and_bom),
          TEST(test_invalid_documents), TEST(test_depth_limit), TEST(test_truncations), TEST(test_large_documents),
          TEST(test_checked_accessors), TEST(test_writer_exact_output), TEST(test_round_trip),
          TEST(test_builder_and_equality))
