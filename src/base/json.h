/* JSON (RFC 8259) reading and writing for model files and manifests.
 *
 * kiln reads TF.js graph models (model.json: a topology of TF NodeDefs plus a weights
 * manifest) and plugin manifests, and writes manifests and dumps. Documents parse into
 * a DOM that lives in a caller-owned arena, so a whole document is freed at once and a
 * failed parse leaks nothing. Every value remembers its parent and its key or index, so
 * a type check deep inside an importer can say exactly where the problem is:
 *   "model.json: modelTopology.node[12].attr.T: expected a string, got number 3".
 * Parse errors name FILE:LINE:COL (1-based; columns count bytes, as the HLO parser's
 * do). The parser is strict: no comments, trailing commas, NaN/Infinity, single quotes,
 * leading zeros, unescaped control characters, invalid UTF-8, unpaired surrogate escapes
 * or duplicate keys (RFC 8259 leaves duplicates' meaning undefined, and a compiler must
 * not guess which one the author meant). A UTF-8 byte order mark is skipped. Nesting
 * deeper than JSON_MAX_DEPTH is an error rather than a stack overflow.
 *
 * Numbers keep three views of the literal: the double nearest to it, the exact int64
 * when the literal is an integer that fits (so ids and sizes beyond 2^53 stay exact),
 * and the original text, which the writer reproduces byte for byte.
 *
 * Objects keep their key order. Lookup is linear for small objects and goes through a
 * hash index for objects with more than JSON_OBJECT_LINEAR_MAX members, so no lookup
 * pattern is quadratic in a document's size. */
#ifndef KILN_BASE_JSON_H
#define KILN_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "base/strbuf.h"

enum { JSON_MAX_DEPTH = 512, JSON_OBJECT_LINEAR_MAX = 8 };

typedef enum json_type {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_value json_value;

typedef struct json_member {
  const char *key; /* NUL-terminated; may also contain NULs (from \u0000): see key_len */
  size_t key_len;
  json_value *value;
} json_member;

/* Fields are readable, but the accessors below are the intended interface: they accept
 * NULL and wrong types gracefully. Treat parsed documents as read-only; build new ones
 * with the json_new_* and json_*_append/set functions. */
struct json_value {
  json_type type;
  /* Where this value sits, for error messages: parent is NULL for a root, whose key is
   * then the document name given to json_parse (NULL for built documents). An object
   * member has its key here; an array element has key NULL and its index. */
  const json_value *parent;
  const char *key;
  size_t key_len;
  size_t index;
  union {
    bool boolean;
    struct {
      double d;       /* nearest double (signed zero kept: "-0" is -0.0) */
      int64_t i;      /* valid when is_int */
      bool is_int;    /* literal has no fraction/exponent and fits int64 */
      /* The original literal, written back verbatim; NULL when the literal is exactly
       * the decimal form of i (the common case, which needs no copy) and for numbers
       * built in code. */
      const char *text;
      size_t text_len;
    } number;
    struct {
      const char *s; /* valid UTF-8, NUL-terminated; len counts bytes, embedded NULs allowed */
      size_t len;
    } string;
    struct {
      json_value **items;
      size_t len, cap;
    } array;
    struct {
      json_member *members;
      size_t len, cap;
      uint32_t *index; /* open-addressing hash: member position + 1, 0 = empty; or NULL */
      size_t index_cap; /* power of two, or 0 */
    } object;
  } u;
};

/* Parses text[0..len) into *out (NULL on error). filename names the document in error
 * messages ("<input>" when NULL); it is copied into the arena. The text need not be
 * NUL-terminated and is not referenced after the call. */
kiln_status json_parse(arena *a, const char *text, size_t len, const char *filename, json_value **out);

/* "null", "bool", "number", "string", "array", "object". */
const char *json_type_name(json_type t);

/* ---- Lenient accessors: NULL or a wrong type gives NULL/0/the fallback, never an
 * error, so optional fields read in one line: json_as_int64(json_get(o, "n"), 1). */
const json_value *json_get(const json_value *obj, const char *key);
const json_value *json_getn(const json_value *obj, const char *key, size_t key_len);
size_t json_array_len(const json_value *arr);
const json_value *json_array_at(const json_value *arr, size_t i);
size_t json_object_len(const json_value *obj);
const json_member *json_object_at(const json_value *obj, size_t i);
bool json_is(const json_value *v, json_type t);
const char *json_as_string(const json_value *v); /* NULL unless a string */
/* An integer literal that fits int64, or any other number that is integral and at most
 * 2^53 in magnitude (1e3, 3.0), where a double cannot have rounded away a fraction or
 * a neighbouring integer. */
int64_t json_as_int64(const json_value *v, int64_t fallback);
double json_as_double(const json_value *v, double fallback);
bool json_as_bool(const json_value *v, bool fallback);

/* ---- Checked accessors: a wrong type, a missing key or an inexact integer is an
 * INVALID_ARGUMENT error "FILE: PATH: expected ..., got ...". v may be NULL only where
 * noted. Out-parameters are written only on success. */
kiln_status json_expect_type(const json_value *v, json_type t);
kiln_status json_expect_object(const json_value *v);
kiln_status json_expect_array(const json_value *v, size_t *len_out /* may be NULL */);
kiln_status json_expect_member(const json_value *obj, const char *key, const json_value **out);
kiln_status json_expect_string(const json_value *v, const char **out, size_t *len_out /* may be NULL */);
kiln_status json_expect_int64(const json_value *v, int64_t *out); /* as json_as_int64 */
/* What protobuf's JSON mapping (and so TF.js) writes for int64 fields: a number or a
 * string of an optional '-' and decimal digits ("-1", "3"). */
kiln_status json_expect_proto_int64(const json_value *v, int64_t *out);
kiln_status json_expect_double(const json_value *v, double *out);
/* What protobuf's JSON mapping writes for float/double fields: a number, a numeric
 * string, or one of the strings "NaN", "Infinity", "-Infinity". */
kiln_status json_expect_proto_double(const json_value *v, double *out);
kiln_status json_expect_bool(const json_value *v, bool *out);

/* Appends v's path to out: "modelTopology.node[12].attr.T"; keys that are not
 * identifiers are quoted: node[0]["a b"]; a root is "(top level)". */
void json_path(const json_value *v, strbuf *out);
/* Returns the document name of v's root ("<json>" for built documents). */
const char *json_document_name(const json_value *v);
/* An error "FILE: PATH: MESSAGE" about v, for importers' own semantic checks. */
kiln_status json_error_at(const json_value *v, kiln_code code, const char *fmt, ...) KILN_PRINTF(3, 4);

/* ---- Building documents (for manifests and dumps). Strings and keys are copied. A
 * value belongs to one container: appending it to a second one re-parents it. */
json_value *json_new_null(arena *a);
json_value *json_new_bool(arena *a, bool b);
json_value *json_new_int64(arena *a, int64_t i);
/* Non-finite doubles can be built but json_write refuses them (JSON has no NaN/Inf). */
json_value *json_new_double(arena *a, double d);
json_value *json_new_string(arena *a, const char *s);
json_value *json_new_stringn(arena *a, const char *s, size_t len);
json_value *json_new_array(arena *a);
json_value *json_new_object(arena *a);
void json_array_append(arena *a, json_value *arr, json_value *item);
/* Replaces the value of an existing key in place (keeping its position) or appends. */
void json_object_set(arena *a, json_value *obj, const char *key, json_value *value);

/* ---- Writing. Compact output has no whitespace; pretty output indents by two spaces,
 * one member or element per line, except arrays of scalars other than strings
 * ("shape": [1, 224, 224, 3]). Parsed numbers are written as their original text, built
 * ones as the shortest text that reads back to the same double (or the exact int64).
 * Strings are escaped as RFC 8259 requires; invalid UTF-8 in a built string becomes
 * U+FFFD so the output is always valid. No trailing newline. Errors: a non-finite
 * number or nesting deeper than JSON_MAX_DEPTH (both only possible in built documents). */
kiln_status json_write(strbuf *out, const json_value *v, bool pretty);

/* Structural equality: objects compare as key sets (order ignored), numbers by value
 * (1 equals 1.0; 0 and -0 differ; large integers compare exactly). */
bool json_equal(const json_value *a, const json_value *b);

#endif
