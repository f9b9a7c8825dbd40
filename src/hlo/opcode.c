/* Opcode table lookups generated from HLO_OPCODE_LIST. */
#include "hlo/opcode.h"

#include <string.h>

static const struct {
  const char *name;
  int arity;
} opcode_info[] = {
#define X(e, n, a) {n, a},
    HLO_OPCODE_LIST(X)
#undef X
};

const char *hlo_opcode_name(hlo_opcode op) {
  return (unsigned)op < HLO_OP_COUNT ? opcode_info[op].name : "invalid";
}

bool hlo_opcode_from_name(const char *name, size_t len, hlo_opcode *out) {
  for (int i = 0; i < HLO_OP_COUNT; i++) {
    if (strlen(opcode_info[i].name) == len && memcmp(opcode_info[i].name, name, len) == 0) {
      *out = (hlo_opcode)i;
      return true;
    }
  }
  return false;
}

int hlo_opcode_arity(hlo_opcode op) { return opcode_info[op].arity; }

bool hlo_opcode_is_elementwise(hlo_opcode op) {
  switch (op) {
    case HLO_OP_ABS: case HLO_OP_ADD: case HLO_OP_AND: case HLO_OP_ATAN2:
    case HLO_OP_CBRT: case HLO_OP_CEIL: case HLO_OP_CLAMP: case HLO_OP_CLZ:
    case HLO_OP_COMPARE: case HLO_OP_CONVERT: case HLO_OP_COPY: case HLO_OP_COSINE:
    case HLO_OP_DIVIDE: case HLO_OP_ERF: case HLO_OP_EXP: case HLO_OP_EXPM1:
    case HLO_OP_FLOOR: case HLO_OP_IS_FINITE: case HLO_OP_LOG: case HLO_OP_LOG1P:
    case HLO_OP_LOGISTIC: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_MULTIPLY:
    case HLO_OP_NEGATE: case HLO_OP_NOT: case HLO_OP_OR: case HLO_OP_POPCNT:
    case HLO_OP_POWER: case HLO_OP_REDUCE_PRECISION: case HLO_OP_REMAINDER:
    case HLO_OP_ROUND_NEAREST_AFZ: case HLO_OP_ROUND_NEAREST_EVEN: case HLO_OP_RSQRT:
    case HLO_OP_SELECT: case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC:
    case HLO_OP_SHIFT_RIGHT_LOGICAL: case HLO_OP_SIGN: case HLO_OP_SINE: case HLO_OP_SQRT:
    case HLO_OP_SUBTRACT: case HLO_OP_TAN: case HLO_OP_TANH: case HLO_OP_XOR:
      return true;
    default:
      return false;
  }
}
