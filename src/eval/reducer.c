/* Recognising scalar reducer computations (reduce's to_apply, scatter's combiner, …)
 * that are one binary op over their two parameters, and applying that op directly.
 *
 * The fast path must give bit-for-bit what calling the computation through the
 * interpreter gives, so it uses the same scalar functions as the elementwise kernels
 * (scalar_ops.h): wrapping integers, NaN-propagating max/min, f16/bf16 rounded after
 * every step. Operand order matters for floats (which of two NaNs survives add or
 * multiply, which of -0 and +0 survives max/min), so op(p1, p0) is only recognised for
 * integer and pred types, where every listed op is exactly commutative; a float
 * computation with swapped parameters stays GENERIC. */
#include <math.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"
#include "eval/scalar_ops.h"

/* Whether the elementwise kernels define op k on type t. */
static bool kind_supports(eval_reducer_kind k, hlo_type t) {
  switch (k) {
    case EVAL_REDUCER_ADD:
    case EVAL_REDUCER_MUL:
    case EVAL_REDUCER_MAX:
    case EVAL_REDUCER_MIN: return t == HLO_PRED || hlo_type_is_int(t) || hlo_type_is_float(t);
    case EVAL_REDUCER_AND:
    case EVAL_REDUCER_OR:
    case EVAL_REDUCER_XOR: return t == HLO_PRED || hlo_type_is_int(t);
    default: return false;
  }
}

eval_reducer_kind eval_reducer_classify(const hlo_computation *c) {
  if (!c || !c->root) return EVAL_REDUCER_GENERIC;
  int n_params = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->op == HLO_OP_PARAMETER) n_params++;
  if (n_params != 2) return EVAL_REDUCER_GENERIC;
  const hlo_instr *root = c->root;
  eval_reducer_kind k;
  switch (root->op) {
    case HLO_OP_ADD: k = EVAL_REDUCER_ADD; break;
    case HLO_OP_MULTIPLY: k = EVAL_REDUCER_MUL; break;
    case HLO_OP_MAXIMUM: k = EVAL_REDUCER_MAX; break;
    case HLO_OP_MINIMUM: k = EVAL_REDUCER_MIN; break;
    case HLO_OP_AND: k = EVAL_REDUCER_AND; break;
    case HLO_OP_OR: k = EVAL_REDUCER_OR; break;
    case HLO_OP_XOR: k = EVAL_REDUCER_XOR; break;
    default: return EVAL_REDUCER_GENERIC;
  }
  if (root->n_operands != 2) return EVAL_REDUCER_GENERIC;
  const hlo_instr *a = root->operands[0], *b = root->operands[1];
  if (a->op != HLO_OP_PARAMETER || b->op != HLO_OP_PARAMETER) return EVAL_REDUCER_GENERIC;
  if (a->parent != c || b->parent != c) return EVAL_REDUCER_GENERIC;
  hlo_type t = root->shape.type;
  if (root->shape.rank != 0 || a->shape.rank != 0 || b->shape.rank != 0) return EVAL_REDUCER_GENERIC;
  if (a->shape.type != t || b->shape.type != t || !kind_supports(k, t)) return EVAL_REDUCER_GENERIC;
  if (a->parameter_number == 0 && b->parameter_number == 1) return k;
  if (a->parameter_number == 1 && b->parameter_number == 0) {
    if (hlo_type_is_float(t)) return EVAL_REDUCER_GENERIC;
    return k;
  }
  return EVAL_REDUCER_GENERIC;
}

#define APPLY_INT(CT)                                                 \
  {                                                                   \
    CT *d = (CT *)dst + di;                                           \
    CT s = ((const CT *)src)[si];                                     \
    switch (k) {                                                      \
      case EVAL_REDUCER_ADD: *d = EVAL_WRAP_ADD(CT, *d, s); return;   \
      case EVAL_REDUCER_MUL: *d = EVAL_WRAP_MUL(CT, *d, s); return;   \
      case EVAL_REDUCER_MAX: *d = *d < s ? s : *d; return;            \
      case EVAL_REDUCER_MIN: *d = s < *d ? s : *d; return;            \
      case EVAL_REDUCER_AND: *d = (CT)(*d & s); return;               \
      case EVAL_REDUCER_OR: *d = (CT)(*d | s); return;                \
      case EVAL_REDUCER_XOR: *d = (CT)(*d ^ s); return;               \
      default: return;                                                \
    }                                                                 \
  }

static inline float apply_f32(eval_reducer_kind k, float a, float b) {
  switch (k) {
    case EVAL_REDUCER_ADD: return eval_nan_pick_f32(a + b, a, b);
    case EVAL_REDUCER_MUL: return eval_nan_pick_f32(a * b, a, b);
    case EVAL_REDUCER_MAX: return eval_max_f32(a, b);
    case EVAL_REDUCER_MIN: return eval_min_f32(a, b);
    default: return a;
  }
}

void eval_reducer_apply(eval_reducer_kind k, hlo_type t, void *dst, int64_t di, const void *src, int64_t si) {
  switch (t) {
    case HLO_PRED: {
      uint8_t *d = (uint8_t *)dst + di;
      uint8_t a = *d != 0, b = ((const uint8_t *)src)[si] != 0;
      switch (k) {
        case EVAL_REDUCER_ADD:
        case EVAL_REDUCER_MAX:
        case EVAL_REDUCER_OR: *d = a | b; return;
        case EVAL_REDUCER_MUL:
        case EVAL_REDUCER_MIN:
        case EVAL_REDUCER_AND: *d = a & b; return;
        case EVAL_REDUCER_XOR: *d = a ^ b; return;
        default: return;
      }
    }
    case HLO_S8: APPLY_INT(int8_t)
    case HLO_S16: APPLY_INT(int16_t)
    case HLO_S32: APPLY_INT(int32_t)
    case HLO_S64: APPLY_INT(int64_t)
    case HLO_U8: APPLY_INT(uint8_t)
    case HLO_U16: APPLY_INT(uint16_t)
    case HLO_U32: APPLY_INT(uint32_t)
    case HLO_U64: APPLY_INT(uint64_t)
    case HLO_F16: {
      uint16_t *d = (uint16_t *)dst + di;
      *d = f32_to_f16(apply_f32(k, f16_to_f32(*d), f16_to_f32(((const uint16_t *)src)[si])));
      return;
    }
    case HLO_BF16: {
      uint16_t *d = (uint16_t *)dst + di;
      *d = f32_to_bf16(apply_f32(k, bf16_to_f32(*d), bf16_to_f32(((const uint16_t *)src)[si])));
      return;
    }
    case HLO_F32: {
      float *d = (float *)dst + di;
      *d = apply_f32(k, *d, ((const float *)src)[si]);
      return;
    }
    case HLO_F64: {
      double *d = (double *)dst + di;
      double b = ((const double *)src)[si];
      switch (k) {
        case EVAL_REDUCER_ADD: *d = eval_nan_pick_f64(*d + b, *d, b); return;
        case EVAL_REDUCER_MUL: *d = eval_nan_pick_f64(*d * b, *d, b); return;
        case EVAL_REDUCER_MAX: *d = eval_max_f64(*d, b); return;
        case EVAL_REDUCER_MIN: *d = eval_min_f64(*d, b); return;
        default: return;
      }
    }
    default: return;
  }
}
