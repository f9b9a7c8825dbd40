/* Protocol buffer wire-format decoding for the TensorFlow importer: tags, varints,
 * fixed-width scalars and length-delimited payloads, each read only after checking it
 * lies inside the buffer. Little-endian decoding is done byte by byte so the reader is
 * independent of the host's byte order. */
#include "import/tf/pb_wire.h"

#include <string.h>

pb_reader pb_reader_init(const void *data, size_t len) {
  pb_reader r;
  r.base = data;
  r.p = data;
  r.end = r.p + len;
  r.depth = 0;
  return r;
}

kiln_status pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  const uint8_t *q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return ERR_INVALID("truncated varint");
    uint8_t b = *q++;
    /* The tenth byte may only carry the top bit of a 64-bit value. */
    if (shift == 63 && (b & 0x7e)) return ERR_INVALID("varint overflows 64 bits");
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *p = q;
      *out = v;
      return NULL;
    }
  }
  return ERR_INVALID("varint longer than 10 bytes");
}

static uint64_t load_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

kiln_status pb_next(pb_reader *r, pb_field *f, bool *done) {
  *done = false;
  if (r->p >= r->end) {
    *done = true;
    return NULL;
  }
  size_t offset = (size_t)(r->p - r->base);
  uint64_t tag = 0;
  kiln_status s = pb_read_varint(&r->p, r->end, &tag);
  if (s) return status_wrap(s, "byte %zu: field tag", offset);
  uint64_t number = tag >> 3;
  int wire = (int)(tag & 7);
  if (number == 0 || number > 0x1fffffff)
    return ERR_INVALID("byte %zu: invalid field number %llu", offset, (unsigned long long)number);
  f->number = (uint32_t)number;
  f->offset = offset;
  f->data = NULL;
  f->len = 0;
  f->bits = 0;
  switch (wire) {
    case PB_VARINT:
      f->wire = PB_VARINT;
      s = pb_read_varint(&r->p, r->end, &f->bits);
      if (s) return status_wrap(s, "byte %zu: field %u", offset, f->number);
      return NULL;
    case PB_I64:
      if (r->end - r->p < 8) return ERR_INVALID("byte %zu: field %u: truncated 64-bit value", offset, f->number);
      f->wire = PB_I64;
      f->bits = load_le(r->p, 8);
      r->p += 8;
      return NULL;
    case PB_I32:
      if (r->end - r->p < 4) return ERR_INVALID("byte %zu: field %u: truncated 32-bit value", offset, f->number);
      f->wire = PB_I32;
      f->bits = load_le(r->p, 4);
      r->p += 4;
      return NULL;
    case PB_LEN: {
      uint64_t len = 0;
      s = pb_read_varint(&r->p, r->end, &len);
      if (s) return status_wrap(s, "byte %zu: field %u length", offset, f->number);
      if (len > (uint64_t)(r->end - r->p))
        return ERR_INVALID("byte %zu: field %u: length %llu runs past the end of its message (%zu bytes left)", offset,
                           f->number, (unsigned long long)len, (size_t)(r->end - r->p));
      f->wire = PB_LEN;
      f->data = r->p;
      f->len = (size_t)len;
      r->p += len;
      return NULL;
    }
    default:
      return ERR_INVALID("byte %zu: field %u has unsupported wire type %d", offset, f->number, wire);
  }
}

kiln_status pb_sub(const pb_reader *r, const pb_field *f, pb_reader *sub) {
  if (f->wire != PB_LEN)
    return ERR_INVALID("byte %zu: field %u should be a message (wire type 2), got wire type %d", f->offset, f->number,
                       (int)f->wire);
  if (r->depth + 1 > PB_MAX_DEPTH)
    return ERR_INVALID("byte %zu: messages nest deeper than %d levels", f->offset, PB_MAX_DEPTH);
  sub->base = r->base;
  sub->p = f->data;
  sub->end = f->data + f->len;
  sub->depth = r->depth + 1;
  return NULL;
}

kiln_status pb_expect_wire(const pb_field *f, pb_wire_type want, const char *message) {
  if (f->wire == want) return NULL;
  return ERR_INVALID("byte %zu: %s field %u has wire type %d, expected %d", f->offset, message, f->number,
                     (int)f->wire, (int)want);
}

float pb_float(const pb_field *f) {
  uint32_t u = (uint32_t)f->bits;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

double pb_double(const pb_field *f) {
  double v;
  memcpy(&v, &f->bits, 8);
  return v;
}

kiln_status pb_packed_each(const pb_field *f, pb_wire_type elem_wire, pb_value_fn fn, void *ctx) {
  if (f->wire == elem_wire) return fn(ctx, f->bits);
  if (f->wire != PB_LEN)
    return ERR_INVALID("byte %zu: repeated field %u has wire type %d, expected %d or packed", f->offset, f->number,
                       (int)f->wire, (int)elem_wire);
  const uint8_t *p = f->data, *end = f->data + f->len;
  if (elem_wire == PB_VARINT) {
    while (p < end) {
      uint64_t v = 0;
      kiln_status s = pb_read_varint(&p, end, &v);
      if (s) return status_wrap(s, "byte %zu: packed field %u", f->offset, f->number);
      TRY(fn(ctx, v));
    }
    return NULL;
  }
  int width = elem_wire == PB_I32 ? 4 : 8;
  if (f->len % (size_t)width)
    return ERR_INVALID("byte %zu: packed field %u: %zu bytes is not a multiple of %d", f->offset, f->number, f->len,
                       width);
  for (; p < end; p += width) TRY(fn(ctx, load_le(p, width)));
  return NULL;
}

kiln_status pb_string(const pb_field *f, arena *a, const char *what, const char **out) {
  TRY(pb_expect_wire(f, PB_LEN, what));
  if (memchr(f->data, 0, f->len)) return ERR_INVALID("byte %zu: %s contains a NUL byte", f->offset, what);
  *out = arena_strndup(a, (const char *)f->data, f->len);
  return NULL;
}
