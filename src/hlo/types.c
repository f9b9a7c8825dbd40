/* Element-type table lookups generated from HLO_TYPE_LIST, and the narrow types'
 * minifloat formats. */
#include "hlo/types.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
  int bits;
  bool is_int, is_signed, is_float;
} type_info[] = {
#define X(e, n, s, b, i, sg, f) {n, s, b, i, sg, f},
    HLO_TYPE_LIST(X)
#undef X
};

const char *hlo_type_name(hlo_type t) {
  return (unsigned)t < HLO_TYPE_COUNT ? type_info[t].name : "invalid";
}

bool hlo_type_from_name(const char *name, size_t len, hlo_type *out) {
  for (int t = 0; t < HLO_TYPE_COUNT; t++) {
    if (strlen(type_info[t].name) == len && memcmp(type_info[t].name, name, len) == 0) {
      *out = (hlo_type)t;
      return true;
    }
  }
  return false;
}

size_t hlo_type_size(hlo_type t) { return type_info[t].size; }
int hlo_type_bit_width(hlo_type t) { return type_info[t].bits; }
bool hlo_type_is_int(hlo_type t) { return type_info[t].is_int; }
bool hlo_type_is_signed_int(hlo_type t) { return type_info[t].is_int && type_info[t].is_signed; }
bool hlo_type_is_unsigned_int(hlo_type t) { return type_info[t].is_int && !type_info[t].is_signed; }
bool hlo_type_is_float(hlo_type t) { return type_info[t].is_float; }
bool hlo_type_is_array(hlo_type t) { return t != HLO_TUPLE && t != HLO_TOKEN; }

/* Narrow: sub-byte integers and the one-byte floats. */
bool hlo_type_is_narrow(hlo_type t) {
  return hlo_type_is_array(t) && (type_info[t].bits < 8 || (type_info[t].is_float && type_info[t].size == 1));
}

bool hlo_type_minifloat(hlo_type t, minifloat_format *out) {
  switch (t) {
    case HLO_F8E4M3FN: *out = MINIFLOAT_E4M3FN; return true;
    case HLO_F8E4M3FNUZ: *out = MINIFLOAT_E4M3FNUZ; return true;
    case HLO_F8E5M2: *out = MINIFLOAT_E5M2; return true;
    case HLO_F8E5M2FNUZ: *out = MINIFLOAT_E5M2FNUZ; return true;
    case HLO_F4E2M1FN: *out = MINIFLOAT_E2M1FN; return true;
    case HLO_F8E8M0FNU: *out = MINIFLOAT_E8M0FNU; return true;
    default: return false;
  }
}

int hlo_type_mantissa_bits(hlo_type t) {
  switch (t) {
    case HLO_F16: return 10;
    case HLO_BF16: return 7;
    case HLO_F32: return 23;
    case HLO_F64: return 52;
    case HLO_F8E4M3FN: case HLO_F8E4M3FNUZ: return 3;
    case HLO_F8E5M2: case HLO_F8E5M2FNUZ: return 2;
    case HLO_F4E2M1FN: return 1;
    default: return 0;
  }
}

int hlo_type_exponent_bits(hlo_type t) {
  switch (t) {
    case HLO_F16: return 5;
    case HLO_BF16: return 8;
    case HLO_F32: return 8;
    case HLO_F64: return 11;
    case HLO_F8E4M3FN: case HLO_F8E4M3FNUZ: return 4;
    case HLO_F8E5M2: case HLO_F8E5M2FNUZ: return 5;
    case HLO_F4E2M1FN: return 2;
    case HLO_F8E8M0FNU: return 8;
    default: return 0;
  }
}
