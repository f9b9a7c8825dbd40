/* oneDNN primitives for the cpu backend's dot and convolution instructions.
 *
 * The cpu backend hands each dot, convolution, or kOutput fusion of one of them with a
 * chain of elementwise epilogues to this module when cpu_dnnl_supports says yes. A
 * primitive is built once per instruction (cpu_dnnl_create) and executed on kiln's
 * row-major buffers, which oneDNN reads and writes in place through strided memory
 * descriptors: transposed dot operands and NHWC/any-order convolution layouts cost no
 * copies (layouts oneDNN has no fast kernel for, such as NCHW, are reordered). Transposed
 * convolutions (lhs dilation) run as oneDNN deconvolutions. Constant weights are
 * reordered into oneDNN's preferred blocked layout once, at create time, and primitives
 * whose packed (or copied) constants are equal share one buffer (cpu_shared_constants.h). f32 is
 * computed in oneDNN's strict (IEEE f32) math mode; results differ from the evaluator
 * (which accumulates in double) by f32 accumulation rounding only. Integer products
 * (cpu_quantize.c's form: u8/s8 activations widened to s32, s8 weights, an s32 result
 * converted to f32 first thing in the epilogue) run as oneDNN int8 primitives: the
 * activation zero point (constant or a runtime scalar operand) as the source zero point,
 * an int32 bias as the primitive's s32 bias, a constant rescale as output scales, and a
 * requantizing tail (x / c, round, + z, clamp, convert to 8 bits) as x * (1/c) + z and
 * oneDNN's saturating conversion, which can put a value within one f32 ulp of a
 * half-step boundary one step away from the evaluator's. One
 * semantic difference remains: maximum/minimum/clamp epilogues may not propagate NaN the
 * way XLA does (oneDNN's clip and max can return the bound where XLA returns NaN). */
#ifndef KILN_BACKENDS_CPU_CPU_DNNL_H
#define KILN_BACKENDS_CPU_CPU_DNNL_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* Whether oneDNN takes this instruction: a dot, a convolution, a `fusion` of kind
 * kOutput whose fused computation is a dot/convolution followed by a chain of
 * elementwise post-ops (add/subtract/multiply/maximum/minimum/clamp whose other operand
 * is a fusion parameter, broadcast(parameter) or broadcast(constant)), or a kCustom
 * fusion holding a softmax over the minor dimension (oneDNN's softmax primitive).
 * Element type f32, or an integer product as above. True means cpu_dnnl_create succeeds (barring memory exhaustion) with an
 * optimized (non-reference) oneDNN implementation. */
bool cpu_dnnl_supports(const hlo_instr *ins);

/* Whether oneDNN's int8 products are exact on this CPU. With VNNI (AVX512-VNNI,
 * AVX-VNNI, AMX) its kernels accumulate u8 x s8 products in 32 bits; without, they add
 * pairs of products in saturating 16 bits (vpmaddubsw), which clips (255 * 127 * 2 >
 * 32767), so integer products then run as generated code and QDQ graphs stay f32. */
bool cpu_dnnl_int8_exact(void);

typedef struct cpu_dnnl_prim cpu_dnnl_prim;

/* Creates the primitive (the engine is shared process-wide; each primitive has its own
 * stream and scratchpad so distinct primitives may run concurrently). A constant operand
 * (ins->operands[i] is a constant instruction, or a constant inside the fused
 * computation) is captured here: weights are reordered into oneDNN's preferred layout,
 * other constants are copied. IN_PLACE >= 0 says the result will be written into the
 * buffer of operand IN_PLACE (the residual of an epilogue add, which is then added by
 * oneDNN's sum post-op); -1 otherwise. Unsupported instructions are UNIMPLEMENTED
 * errors saying why; every error names the instruction. */
kiln_status cpu_dnnl_create(const hlo_instr *ins, int in_place, cpu_dnnl_prim **out);

/* operands[i]: row-major buffer of ins->operands[i] (entries of constant operands are
 * not read and may be NULL); out: row-major result buffer of ins's shape. out is
 * operands[in_place] when create was told so; any other overlap with an operand is
 * allowed too (the result is then staged and copied). Thread-safe for distinct prims; one prim must not run on two threads at once. */
kiln_status cpu_dnnl_execute(cpu_dnnl_prim *p, void *const *operands, void *out);

void cpu_dnnl_destroy(cpu_dnnl_prim *p);

#endif
