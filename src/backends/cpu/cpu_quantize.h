/* The cpu backend's quantized-product pass: dequantize -> f32 convolution/dot (ONNX's
 * QDQ format) rewritten into an exact integer product and one f32 rescale, which the
 * fusion pass and cpu_dnnl turn into oneDNN int8 primitives (cpu_quantize.c). */
#ifndef KILN_BACKENDS_CPU_CPU_QUANTIZE_H
#define KILN_BACKENDS_CPU_CPU_QUANTIZE_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* Runs before constant folding (which would fold the weights' dequantization into f32
 * constants). Never errs on a pattern it does not take: those stay as written. */
kiln_status cpu_pass_quantized_products(hlo_module *m, bool *changed);

#endif
