/* The cpu backend's HLO pass pipeline, as XLA's CpuCompiler owns its passes: the
 * generic optimize passes (src/hlo/passes) plus what is the cpu backend's policy --
 * quantized products for oneDNN's int8 primitives (where they are exact), f16/bf16 products in f32
 * (cpu_half_products.c), channels-last convolutions for
 * oneDNN's direct kernels (cpu_conv_layout.c), dot canonicalisation, the reduction
 * splitter that gives the thread pool work (cpu_reduction_splitter.c), and fusion with
 * the activation and softmax patterns oneDNN executes whole (cpu_patterns.c). */
#include "backends/cpu/cpu_pipeline.h"

#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_patterns.h"
#include "backends/cpu/cpu_quantize.h"
#include "eval/constant_folding.h"

_Static_assert(CPU_ACTIVATION_MAX_INNER == HLO_FUSION_MAX_ACTIVATION_INNER, "activation patterns must fit fusion's");
_Static_assert(CPU_SOFTMAX_INNER == HLO_FUSION_SOFTMAX_INNER, "softmax patterns must fit fusion's");

static bool is_activation(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner, int *n_inner) {
  return cpu_match_activation(m, x, inner, n_inner) != CPU_ACTIVATION_NONE;
}

/* A conversion to a half type rounds in software: f32 -> bf16 is about seven vector
 * instructions (cpu_elemental.c, round_to_bf16_f32), -> f16 some twenty-five
 * (f32_to_f16_bits). Fused below a
 * broadcast it is redone for every element: a layer norm's bf16 scale and shift,
 * converted from f32 per column, cost 16 of the 65 instructions per vector of its
 * output kernel; as kernels of their own they are a load and a shift each. */
static bool narrows_to_half(const hlo_instr *ins) {
  if (ins->op != HLO_OP_CONVERT || (ins->shape.type != HLO_BF16 && ins->shape.type != HLO_F16)) return false;
  hlo_type from = ins->operands[0]->shape.type;
  return from == HLO_F32 || from == HLO_F64;
}

/* With excess precision a kernel takes an f32 -> bf16 conversion that feeds bf16
 * arithmetic unrounded (cpu_emitter_allow_excess_precision): fused, it is free. */
static bool narrows_to_half_rounding(const hlo_instr *ins) {
  return narrows_to_half(ins) && !(ins->shape.type == HLO_BF16 && ins->operands[0]->shape.type == HLO_F32);
}

static const hlo_fusion_policy cpu_fusion_policy = {
    .match_activation = is_activation, .match_softmax = cpu_match_softmax, .costly_per_element = narrows_to_half};
static const hlo_fusion_policy cpu_fusion_policy_excess_precision = {
    .match_activation = is_activation, .match_softmax = cpu_match_softmax, .costly_per_element = narrows_to_half_rounding};

kiln_status cpu_pass_fusion(hlo_module *m, bool *changed) { return hlo_pass_fusion_with(m, &cpu_fusion_policy, changed); }

kiln_status cpu_pass_fusion_excess_precision(hlo_module *m, bool *changed) {
  return hlo_pass_fusion_with(m, &cpu_fusion_policy_excess_precision, changed);
}

cpu_pipeline_options cpu_pipeline_options_for_host(void) {
  return (cpu_pipeline_options){.integer_products = cpu_dnnl_int8_exact()};
}

hlo_pipeline *cpu_pipeline_new(const cpu_pipeline_options *o) {
  cpu_pipeline_options host = cpu_pipeline_options_for_host();
  if (!o) o = &host;
  hlo_pass_fn constant_folding = eval_pass_constant_folding;
  hlo_pipeline *p = hlo_pipeline_new("optimizations");
  /* Before everything: the code generator reads every bitcast as a reshape of a
   * row-major buffer, and the call inliner would replace a callee parameter's layout
   * (which a bitcast in the callee is defined by) with its argument's. */
  hlo_pipeline_add_pass(p, "bitcast-layouts", hlo_pass_bitcast_layouts);
  /* XLA's optimised modules write top-k as a custom-call; kiln runs it natively. */
  hlo_pipeline_add_pass(p, "topk-custom-call", hlo_pass_topk_custom_call);
  /* Before constant folding, which would fold dequantized weights into f32 constants. */
  if (o->integer_products) hlo_pipeline_add_pass(p, "quantized-products", cpu_pass_quantized_products);
  hlo_pipeline_add_optimize_passes(p, constant_folding);
  /* Before conv-layout and dot-canonicalize, so the f32 products it makes get their
   * layouts and kernels like any other. */
  hlo_pipeline_add_pass(p, "half-products", cpu_pass_half_products);
  /* NHWC convolutions: the transposes left between convolutions cancel in algsimp,
   * transposed constant kernels fold into relayouted constants, and CSE merges the
   * input transposes of convolutions sharing an operand. */
  hlo_pipeline_add_pass(p, "conv-layout", cpu_pass_conv_layout);
  hlo_pipeline_add_simplification(p, "conv-layout-cleanup", constant_folding);
  hlo_pipeline_add_pass(p, "dot-canonicalize", hlo_pass_dot_canonicalize);
  /* Canonicalization's reshapes and transposes often cancel against neighbours, and
   * those it puts on constant weights fold into relayouted constants (which the
   * backend then pre-packs) instead of running on every execution. */
  hlo_pipeline *tidy = hlo_pipeline_new("dot-cleanup");
  hlo_pipeline_add_pass(tidy, "algsimp", hlo_pass_algebraic_simplifier);
  hlo_pipeline_add_pass(tidy, "constant-folding", constant_folding);
  hlo_pipeline_add_pass(tidy, "dce", hlo_pass_dce);
  hlo_pipeline_add_fix(p, tidy, HLO_FIX_DEFAULT_MAX_ITERS);
  /* The barriers kept the simplifiers (CSE above all) from merging jax.checkpoint's
   * recomputation into the saved values; that is done now. Before fusion, and dead
   * tuples swept at once, so the values behind a barrier fuse with their users. */
  hlo_pipeline_add_pass(p, "opt-barrier-expander", hlo_pass_opt_barrier_expander);
  hlo_pipeline_add_pass(p, "dce", hlo_pass_dce);
  hlo_pipeline_add_pass(p, "reduction-splitter", cpu_pass_reduction_splitter);
  /* The reduces the splitter replaced still read their inputs until DCE removes them;
   * fusion would count them as users and keep the split reduce's producers out. */
  hlo_pipeline_add_pass(p, "dce", hlo_pass_dce);
  hlo_pipeline_add_pass(p, "fusion", o->excess_precision ? cpu_pass_fusion_excess_precision : cpu_pass_fusion);
  hlo_pipeline_add_pass(p, "dce", hlo_pass_dce);
  return p;
}
