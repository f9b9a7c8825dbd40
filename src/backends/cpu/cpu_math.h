/* Vectorizable f32 math for the cpu code generator: exp, tanh and erf as straight-line
 * arithmetic (a libm call per element cannot be vectorized), written once for a scalar
 * or a vector type.
 *
 * A call site either gets the arithmetic inline, or calls one out-of-line copy per
 * module (`kiln_math_expf` ...) that carries vector variants of 4, 8 and 16 lanes, which
 * the loop vectorizer substitutes through the "vector-function-abi-variant" attribute.
 * Inline code lets LLVM interleave neighbouring evaluations, but every inlined exp is
 * some forty instructions that LLVM optimises, selects and allocates again: a module
 * with many of them (a 16,000-instruction elementwise chain has over 6,000) spends most
 * of its compile time there. The out-of-line copies cost one call per vector instead.
 * Which one a module gets is the caller's policy (cpu_codegen counts the sites). */
#ifndef KILN_BACKENDS_CPU_MATH_H
#define KILN_BACKENDS_CPU_MATH_H

#include <stdbool.h>

#include <llvm-c/Core.h>

typedef enum cpu_math_fn {
  CPU_MATH_EXP,
  CPU_MATH_TANH,
  CPU_MATH_ERF,
  CPU_MATH_COUNT,
} cpu_math_fn;

/* FN of the f32 (or <N x float>) value X at B's insertion point in module M: inline
 * arithmetic, or a call to the module's out-of-line copy when OUTLINE (only for scalar
 * X, the form the elemental emitter builds). */
LLVMValueRef cpu_math_f32(LLVMModuleRef m, LLVMBuilderRef b, cpu_math_fn fn, LLVMValueRef x, bool outline);

#endif
