/* The cpu backend's HLO pipeline and the passes that are its own policy. */
#ifndef KILN_BACKENDS_CPU_CPU_PIPELINE_H
#define KILN_BACKENDS_CPU_CPU_PIPELINE_H

#include <stdbool.h>

#include "hlo/passes/pipeline.h"

/* What the cpu pipeline may assume of the machine it compiles for. */
typedef struct cpu_pipeline_options {
  /* Move QDQ products into the integers (quantized-products, cpu_quantize.c). Only
   * worth it where oneDNN's int8 kernels are exact (VNNI): elsewhere the integer product
   * could only run in generated code, many times slower than the f32 product as written,
   * so the QDQ graph stays f32 and its dequantized weights fold into f32 constants. */
  bool integer_products;
  /* Kernels compute bf16 arithmetic with excess precision (backend_compile_options'
   * allow_excess_precision), which changes what is worth fusing. */
  bool excess_precision;
} cpu_pipeline_options;

/* The options for the CPU this process runs on (integer_products where
 * cpu_dnnl_int8_exact). */
cpu_pipeline_options cpu_pipeline_options_for_host(void);

/* bitcast-layouts, topk-custom-call, quantized-products (if O->integer_products; O NULL:
 * cpu_pipeline_options_for_host), the optimize pipeline, then
 * half-products, conv-layout,
 * fix(algsimp, constant-folding, cse, dce), dot-canonicalize, fix(algsimp,
 * constant-folding, dce), opt-barrier-expander, dce, reduction-splitter, fusion (with
 * the cpu patterns), dce. */
hlo_pipeline *cpu_pipeline_new(const cpu_pipeline_options *o);

/* Layout assignment for convolutions (cpu_conv_layout.c): channels-first 2-D
 * convolutions (bf01_oi01->bf01) compute channels-last (b01f_01io->b01f) between
 * transposes, which are then sunk through elementwise ops, reductions, pooling, pad,
 * concatenate and slice until consecutive convolutions' transposes cancel;
 * bit-identical. */
kiln_status cpu_pass_conv_layout(hlo_module *m, bool *changed);

/* Dots and convolutions over f16/bf16 operands computed in f32 between exact widening
 * converts, rounded back to the half result type (cpu_half_products.c). */
kiln_status cpu_pass_half_products(hlo_module *m, bool *changed);

/* Splits reduces that keep the input's minor dimension and have too few outputs to
 * spread over the threads into two reduces, one dim split in two
 * (cpu_reduction_splitter.c). Float sums are reassociated. */
kiln_status cpu_pass_reduction_splitter(hlo_module *m, bool *changed);

/* Fusion (hlo/passes/fusion.c) with the cpu backend's patterns (cpu_patterns.h):
 * activations as kOutput epilogues, softmaxes as kCustom groups. */
kiln_status cpu_pass_fusion(hlo_module *m, bool *changed);
/* Fusion for kernels with excess precision: an f32 -> bf16 conversion fuses under a
 * broadcast (it costs nothing there), which cpu_pass_fusion keeps out. */
kiln_status cpu_pass_fusion_excess_precision(hlo_module *m, bool *changed);

#endif
