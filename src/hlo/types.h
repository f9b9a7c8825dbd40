/* HLO element types: the primitive types of XLA's shapes (pred, signed and unsigned
 * integers, f16/bf16/f32/f64, the float8 variants, f4e2m1fn and the 4- and 2-bit integers)
 * plus the non-array kinds tuple and token. The X-macro keeps names, byte sizes and
 * predicates in one table so no switch forgets a type.
 *
 * The narrow types (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0fnu, f4e2m1fn, s4,
 * u4, s2, u2) are storage types in kiln: every one takes one byte per element in memory
 * -- s4/u4/s2/u2 and f4e2m1fn are NOT packed as XLA packs them; s4 and s2 hold their
 * value sign-extended into an int8, u4, u2 and f4e2m1fn theirs in the low bits. kiln
 * moves them (reshape, transpose, slice, ...), converts them and bitcast-converts the
 * 8-bit floats, but computes on them only after a convert to a wider type: shape
 * inference refuses arithmetic on them by name (XLA upcasts such arithmetic itself). */
#ifndef KILN_HLO_TYPES_H
#define KILN_HLO_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/minifloat.h"

/* X(ENUM, text name, byte size, value bits, is_int, is_signed, is_float) */
#define HLO_TYPE_LIST(X)                     \
  X(PRED, "pred", 1, 8, 0, 0, 0)             \
  X(S8, "s8", 1, 8, 1, 1, 0)                 \
  X(S16, "s16", 2, 16, 1, 1, 0)              \
  X(S32, "s32", 4, 32, 1, 1, 0)              \
  X(S64, "s64", 8, 64, 1, 1, 0)              \
  X(U8, "u8", 1, 8, 1, 0, 0)                 \
  X(U16, "u16", 2, 16, 1, 0, 0)              \
  X(U32, "u32", 4, 32, 1, 0, 0)              \
  X(U64, "u64", 8, 64, 1, 0, 0)              \
  X(F16, "f16", 2, 16, 0, 1, 1)              \
  X(BF16, "bf16", 2, 16, 0, 1, 1)            \
  X(F32, "f32", 4, 32, 0, 1, 1)              \
  X(F64, "f64", 8, 64, 0, 1, 1)              \
  X(S4, "s4", 1, 4, 1, 1, 0)                 \
  X(U4, "u4", 1, 4, 1, 0, 0)                 \
  X(S2, "s2", 1, 2, 1, 1, 0)                 \
  X(U2, "u2", 1, 2, 1, 0, 0)                 \
  X(F8E4M3FN, "f8e4m3fn", 1, 8, 0, 1, 1)     \
  X(F8E4M3FNUZ, "f8e4m3fnuz", 1, 8, 0, 1, 1) \
  X(F8E5M2, "f8e5m2", 1, 8, 0, 1, 1)         \
  X(F8E5M2FNUZ, "f8e5m2fnuz", 1, 8, 0, 1, 1) \
  X(F4E2M1FN, "f4e2m1fn", 1, 4, 0, 1, 1)     \
  X(F8E8M0FNU, "f8e8m0fnu", 1, 8, 0, 0, 1)   \
  X(TUPLE, "tuple", 0, 0, 0, 0, 0)           \
  X(TOKEN, "token", 0, 0, 0, 0, 0)

typedef enum hlo_type {
#define X(e, n, s, b, i, sg, f) HLO_##e,
  HLO_TYPE_LIST(X)
#undef X
  HLO_TYPE_COUNT
} hlo_type;

const char *hlo_type_name(hlo_type t);
/* Returns false if NAME is not a known element type (c64 etc. are not supported). */
bool hlo_type_from_name(const char *name, size_t len, hlo_type *out);
size_t hlo_type_size(hlo_type t);
/* Bits of the value (s4: 4, f32: 32), whatever its storage takes. */
int hlo_type_bit_width(hlo_type t);
bool hlo_type_is_int(hlo_type t);      /* s*, u* (not pred) */
bool hlo_type_is_signed_int(hlo_type t);
bool hlo_type_is_unsigned_int(hlo_type t);
bool hlo_type_is_float(hlo_type t);    /* f16, bf16, f32, f64, f8*, f4e2m1fn */
bool hlo_type_is_array(hlo_type t);    /* everything but tuple and token */
/* The storage-only types (see above): f8*, f4e2m1fn, s4, u4, s2, u2. */
bool hlo_type_is_narrow(hlo_type t);
/* The minifloat format of a narrow float type; false for every other type. */
bool hlo_type_minifloat(hlo_type t, minifloat_format *out);
/* Bits of mantissa / exponent for float types (f32: 23 / 8, f8e4m3fn: 3 / 4). */
int hlo_type_mantissa_bits(hlo_type t);
int hlo_type_exponent_bits(hlo_type t);

#endif
