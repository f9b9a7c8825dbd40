/* Element-type table lookups generated from HLO_TYPE_LIST. */
#include "hlo/types.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
  bool is_int, is_signed, is_float;
} type_info[] = {
#define X(e, n, s, i, sg, f) {n, s, i, sg, f},
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
bool hlo_type_is_int(hlo_type t) { return type_info[t].is_int; }
bool hlo_type_is_signed_int(hlo_type t) { return type_info[t].is_int && type_info[t].is_signed; }
bool hlo_type_is_unsigned_int(hlo_type t) { return type_info[t].is_int && !type_info[t].is_signed; }
bool hlo_type_is_float(hlo_type t) { return type_info[t].is_float; }
bool hlo_type_is_array(hlo_type t) { return t != HLO_TUPLE && t != HLO_TOKEN; }

int hlo_type_mantissa_bits(hlo_type t) {
  switch (t) {
    case HLO_F16: return 10;
    case HLO_BF16: return 7;
    case HLO_F32: return 23;
    case HLO_F64: return 52;
    default: return 0;
  }
}

int hlo_type_exponent_bits(hlo_type t) {
  switch (t) {
    case HLO_F16: return 5;
    case HLO_BF16: return 8;
    case HLO_F32: return 8;
    case HLO_F64: return 11;
    default: return 0;
  }
}
