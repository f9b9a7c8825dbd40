/* HLO element types: the primitive types of XLA's shapes (pred, signed and unsigned
 * integers, f16/bf16/f32/f64) plus the non-array kinds tuple and token. The X-macro
 * keeps names, byte sizes and predicates in one table so no switch forgets a type. */
#ifndef KILN_HLO_TYPES_H
#define KILN_HLO_TYPES_H

#include <stdbool.h>
#include <stddef.h>

/* X(ENUM, text name, byte size, is_int, is_signed, is_float) */
#define HLO_TYPE_LIST(X)            \
  X(PRED, "pred", 1, 0, 0, 0)       \
  X(S8, "s8", 1, 1, 1, 0)           \
  X(S16, "s16", 2, 1, 1, 0)         \
  X(S32, "s32", 4, 1, 1, 0)         \
  X(S64, "s64", 8, 1, 1, 0)         \
  X(U8, "u8", 1, 1, 0, 0)           \
  X(U16, "u16", 2, 1, 0, 0)         \
  X(U32, "u32", 4, 1, 0, 0)         \
  X(U64, "u64", 8, 1, 0, 0)         \
  X(F16, "f16", 2, 0, 1, 1)         \
  X(BF16, "bf16", 2, 0, 1, 1)       \
  X(F32, "f32", 4, 0, 1, 1)         \
  X(F64, "f64", 8, 0, 1, 1)         \
  X(TUPLE, "tuple", 0, 0, 0, 0)     \
  X(TOKEN, "token", 0, 0, 0, 0)

typedef enum hlo_type {
#define X(e, n, s, i, sg, f) HLO_##e,
  HLO_TYPE_LIST(X)
#undef X
  HLO_TYPE_COUNT
} hlo_type;

const char *hlo_type_name(hlo_type t);
/* Returns false if NAME is not a known element type (c64 etc. are not supported). */
bool hlo_type_from_name(const char *name, size_t len, hlo_type *out);
size_t hlo_type_size(hlo_type t);
bool hlo_type_is_int(hlo_type t);      /* s*, u* (not pred) */
bool hlo_type_is_signed_int(hlo_type t);
bool hlo_type_is_unsigned_int(hlo_type t);
bool hlo_type_is_float(hlo_type t);    /* f16, bf16, f32, f64 */
bool hlo_type_is_array(hlo_type t);    /* everything but tuple and token */
/* Bits of mantissa / exponent for float types (f32: 23 / 8). */
int hlo_type_mantissa_bits(hlo_type t);
int hlo_type_exponent_bits(hlo_type t);

#endif
