/* Half-precision products in f32: a dot or convolution over f16/bf16 operands becomes
 * the same product over f32 operands (exact widening converts), its result rounded back
 * to the half type when that is the product's type. The cpu backend's fast dot and
 * convolution kernels (oneDNN, the packed matmuls) take f32; the element-at-a-time
 * emitter that a half product otherwise falls to ran a [1,12,128,128] x [1,12,128,64]
 * bf16 attention product at ~1 GFLOP/s (13.6 ms; XLA:CPU, which normalises bf16 products
 * to f32 the same way, 1.4 ms for the whole block). The result changes by rounding
 * only: the evaluator accumulates in double and rounds once, the f32 product
 * accumulates in f32 and then rounds to the half type. */
#include "backends/cpu/cpu_pipeline.h"
#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"

static bool is_half(hlo_type t) { return t == HLO_F16 || t == HLO_BF16; }
static bool is_float_product_type(hlo_type t) { return is_half(t) || t == HLO_F32; }

static kiln_status widen_product(hlo_computation *c, hlo_instr *ins, hlo_instr **out) {
  *out = NULL;
  if ((ins->op != HLO_OP_DOT && ins->op != HLO_OP_CONVOLUTION) || ins->n_operands != 2 ||
      !is_float_product_type(ins->shape.type) || ins->shape.rank < 0)
    return NULL;
  bool any_half = is_half(ins->shape.type);
  for (int k = 0; k < 2; k++) {
    hlo_type t = ins->operands[k]->shape.type;
    if (!is_float_product_type(t)) return NULL;
    any_half = any_half || is_half(t);
  }
  if (!any_half) return NULL;
  hlo_instr *ops[2];
  for (int k = 0; k < 2; k++) {
    ops[k] = ins->operands[k];
    if (is_half(ops[k]->shape.type)) TRY(hlo_build_convert(c, ops[k], HLO_F32, &ops[k]));
  }
  hlo_instr tmpl = hlo_instr_template_from(ins, ops);
  tmpl.shape.type = HLO_F32;
  hlo_instr *wide;
  TRY(hlo_build_instr(c, &tmpl, &wide));
  if (ins->shape.type == HLO_F32) {
    *out = wide;
    return NULL;
  }
  return hlo_build_convert(c, wide, ins->shape.type, out);
}

kiln_status cpu_pass_half_products(hlo_module *m, bool *changed) {
  return hlo_pass_rewrite_each(m, widen_product, changed);
}
