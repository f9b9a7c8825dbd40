/* Patterns the cpu backend's oneDNN primitives execute whole, as the fusion pass should
 * group them and as cpu_dnnl.c recognises them inside fusions: activations that one
 * oneDNN post-op applies (swish, hardswish, GELU), and a softmax over the minor
 * dimension (oneDNN's softmax primitive). The cpu pipeline hands them to the generic
 * fusion pass as its policy (cpu_pipeline.c). */
#ifndef KILN_BACKENDS_CPU_CPU_PATTERNS_H
#define KILN_BACKENDS_CPU_CPU_PATTERNS_H

#include <stdbool.h>

#include "hlo/ir.h"

/* Activations a dot/convolution epilogue can end with as one oneDNN post-op, matched on
 * the multiply that produces them: swish x * logistic(x); hardswish
 * x * clamp(x * (1/6) + 0.5, 0, 1) as PyTorch's HardSwish lowers (the clamp as
 * maximum(minimum(., 1), 0), minimum(maximum(., 0), 1) or clamp); GELU
 * (x * (erf(x / sqrt(2)) + 1)) * 0.5 (or x * (1/sqrt(2)) inside the erf). Operands of
 * the commutative ops in either order, the constants scalar or broadcast. Sets *x to
 * the activated value and inner[0 .. *n_inner) to the instructions between x and m, the
 * one reading x first (at most CPU_ACTIVATION_MAX_INNER); fusing them is only right
 * when each has one user, which the caller checks. */
typedef enum {
  CPU_ACTIVATION_NONE,
  CPU_ACTIVATION_SWISH,
  CPU_ACTIVATION_HARDSWISH,
  CPU_ACTIVATION_GELU
} cpu_activation;
#define CPU_ACTIVATION_MAX_INNER 4
cpu_activation cpu_match_activation(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner,
                                         int *n_inner);

/* Softmax over the minor dimension as the op library lowers it, matched on the final
 * divide d: d = e / broadcast(reduce_add(e, 0)), e = exp(x - broadcast(reduce_max(x,
 * -inf))), both reductions over the last dim and both broadcasts restoring the other
 * dims in order, f32 throughout. Sets *x and fills inner with the six instructions
 * between x and d (max reduce, its broadcast, subtract, exp, sum reduce, its broadcast);
 * fusing them is only right when their users are all among them and d, which the
 * caller checks. */
#define CPU_SOFTMAX_INNER 6
bool cpu_match_softmax(const hlo_instr *d, const hlo_instr **x, const hlo_instr **inner);

#endif
