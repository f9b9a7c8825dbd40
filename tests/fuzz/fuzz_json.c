/* libFuzzer target for the JSON reader and writer: any byte string must give either a
 * document or an error — never a crash, hang, leak or stack overflow. A document that
 * parses is written compact and pretty; both must parse back to an equal document, and
 * writing is a fixed point (what the writer reads back it writes identically). Every
 * value is also put through the checked accessors, so the path-naming error messages
 * are built for arbitrary shapes of documents. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static void exercise_accessors(const json_value *v) {
  const char *s;
  int64_t i;
  double d;
  bool b;
  const json_value *m;
  kiln_status st[6] = {json_expect_string(v, &s, NULL), json_expect_int64(v, &i), json_expect_proto_int64(v, &i),
                       json_expect_proto_double(v, &d), json_expect_bool(v, &b),
                       json_expect_member(v, "name", &m)};
  for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) kiln_status_free(st[k]);
  for (size_t k = 0; k < json_array_len(v); k++) exercise_accessors(json_array_at(v, k));
  for (size_t k = 0; k < json_object_len(v); k++) {
    const json_member *mem = json_object_at(v, k);
    if (json_getn(v, mem->key, mem->key_len) != mem->value) abort(); /* lookup finds every key */
    exercise_accessors(mem->value);
  }
}

static void round_trip(const json_value *doc, bool pretty) {
  strbuf first, second;
  strbuf_init(&first);
  strbuf_init(&second);
  if (json_write(&first, doc, pretty)) abort(); /* every parsed document is writable */
  arena *a = arena_new();
  json_value *back = NULL;
  kiln_status s = json_parse(a, first.data, first.len, "<fuzz round trip>", &back);
  if (s || !json_equal(doc, back)) abort();
  if (json_write(&second, back, pretty)) abort();
  if (first.len != second.len || memcmp(first.data, second.data, first.len) != 0) abort();
  arena_free(a);
  strbuf_free(&first);
  strbuf_free(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  arena *a = arena_new();
  json_value *doc = NULL;
  kiln_status s = json_parse(a, (const char *)data, size, "<fuzz input>", &doc);
  if (s) {
    kiln_status_free(s);
    arena_free(a);
    return 0;
  }
  exercise_accessors(doc);
  round_trip(doc, false);
  round_trip(doc, true);
  arena_free(a);
  return 0;
}
