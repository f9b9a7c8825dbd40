/* A small, bounds-checked reader of the protocol buffer wire format, enough for the
 * TensorFlow importer to walk GraphDef, NodeDef, AttrValue, TensorProto and the rest
 * without a protobuf library or generated code. The importer knows the field numbers
 * (facts of the .proto files in tensorflow/core/framework); this layer only splits bytes
 * into (field number, wire type, payload) records and decodes scalars.
 *
 * Every read is checked against the end of its buffer, varints longer than ten bytes
 * are errors, and a sub-message reader carries its depth so that a hostile file cannot
 * make the importer recurse without bound (PB_MAX_DEPTH). Group wire types (3, 4) are
 * rejected: no TensorFlow message uses them. Errors are INVALID_ARGUMENT statuses that
 * say what was malformed and at which byte offset of the whole buffer. */
#ifndef KILN_IMPORT_TF_PB_WIRE_H
#define KILN_IMPORT_TF_PB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"

enum { PB_MAX_DEPTH = 64 };

typedef enum pb_wire_type {
  PB_VARINT = 0,
  PB_I64 = 1,
  PB_LEN = 2,
  PB_I32 = 5
} pb_wire_type;

typedef struct pb_reader {
  const uint8_t *base; /* start of the whole buffer (offsets in messages count from it) */
  const uint8_t *p, *end;
  int depth;
} pb_reader;

/* One field record. For PB_VARINT, PB_I64 and PB_I32 the payload bits are in `bits`
 * (I32 zero-extended); for PB_LEN data/len delimit the payload inside the buffer. */
typedef struct pb_field {
  uint32_t number;
  pb_wire_type wire;
  uint64_t bits;
  const uint8_t *data;
  size_t len;
  size_t offset; /* of the record's tag, from the start of the buffer */
} pb_field;

pb_reader pb_reader_init(const void *data, size_t len);
/* Reads the next field into *f; *done is set (and f untouched) at the end of the
 * message. */
kiln_status pb_next(pb_reader *r, pb_field *f, bool *done);
/* A reader over a length-delimited field's payload, one level deeper than r; an error
 * when the field is not length-delimited or the nesting limit is reached. */
kiln_status pb_sub(const pb_reader *r, const pb_field *f, pb_reader *sub);
/* An error when f's wire type is not `want` (names the field and the message). */
kiln_status pb_expect_wire(const pb_field *f, pb_wire_type want, const char *message);
/* A length-delimited field as a NUL-terminated copy in arena a; a NUL byte inside is an
 * error naming `what` (TF names and keys are C strings everywhere after import). */
kiln_status pb_string(const pb_field *f, arena *a, const char *what, const char **out);

/* Scalar views of a field's bits. */
static inline int64_t pb_int64(const pb_field *f) { return (int64_t)f->bits; }
static inline int32_t pb_int32(const pb_field *f) { return (int32_t)(uint32_t)f->bits; }
static inline bool pb_bool(const pb_field *f) { return f->bits != 0; }
float pb_float(const pb_field *f);
double pb_double(const pb_field *f);

/* Repeated scalar fields come packed (one PB_LEN record holding many values) or one
 * record per value; proto3 parsers must accept both. pb_packed_each calls fn once per
 * value with the value's bits (varints as decoded, fixed-width values zero-extended),
 * for a field whose element encoding is elem_wire (PB_VARINT, PB_I32 or PB_I64). */
typedef kiln_status (*pb_value_fn)(void *ctx, uint64_t bits);
kiln_status pb_packed_each(const pb_field *f, pb_wire_type elem_wire, pb_value_fn fn, void *ctx);

/* Decodes one varint from [*p, end); advances *p. */
kiln_status pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
