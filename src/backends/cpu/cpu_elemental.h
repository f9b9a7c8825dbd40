/* The elemental emitter of the cpu backend, after XLA's ElementalIrEmitter: given an
 * instruction and an output multi-index (LLVM values), it emits the LLVM IR that
 * computes that one element, recursing through operands, fused computations and
 * reducer bodies. Kernels (cpu_codegen.c) wrap it in loops.
 *
 * Values are kept in their storage type (pred as i8 0/1, f16/bf16 as their 16-bit
 * patterns, the narrow types as their byte: shape inference lets them only be moved and
 * converted, and their converts call the evaluator's conversions in cpu_runtime.c or,
 * for s4/u4, wrap and saturate inline): every f16/bf16 operation widens to float and
 * rounds back once, exactly as the evaluator does, so the two agree bit for bit on
 * everything but transcendentals
 * and float sums: transcendentals call the same libm functions (and so usually agree
 * too), except f32 exp, tanh and erf, which are emitted inline so that they vectorize
 * (within 1, 2 and 6 ulps); a reduction over the input's minor dimension folds in lanes
 * (a different association for float sums, see emit_reduce_minor_in_lanes). */
#ifndef KILN_BACKENDS_CPU_CPU_ELEMENTAL_H
#define KILN_BACKENDS_CPU_CPU_ELEMENTAL_H

#include <stdbool.h>

#include <llvm-c/Core.h>

#include "base/strbuf.h"
#include "hlo/ir.h"

/* A multi-index; `flat` indexes describe every array of the kernel by its row-major
 * linear position (kernels made only of same-size elementwise work use them). */
typedef struct cpu_index {
  int rank;
  bool flat;
  LLVMValueRef v[HLO_MAX_RANK];
} cpu_index;

typedef struct cpu_emitter cpu_emitter;

/* Whether the emitter can produce `ins` (a top-level instruction or a fusion); when
 * not, appends the reason naming the offending instruction to `why` (may be NULL). */
bool cpu_elemental_supports(const hlo_instr *ins, strbuf *why);

/* Most results one kernel writes (a variadic reduce writes one per accumulator). */
#define CPU_MAX_KERNEL_OUTPUTS 8

/* An emitter writing into fn (whose first argument is the char** buffer table) with
 * builder b, for kernel instruction `root`: its outputs live in buffers[0 .. n) (n =
 * cpu_kernel_output_count) and its operand k (or fused parameter k) in buffers[n + k]. */
cpu_emitter *cpu_emitter_new(LLVMModuleRef m, LLVMValueRef fn, LLVMBuilderRef b, const hlo_instr *root);
/* An emitter for a function that only computes scalars from its arguments (a sort
 * comparator, a scatter combiner): no buffer table; use cpu_emit_scalar_call. */
cpu_emitter *cpu_emitter_new_scalar(LLVMModuleRef m, LLVMValueRef fn, LLVMBuilderRef b);
void cpu_emitter_free(cpu_emitter *e);
/* Lets a kernel compute chains of bf16 arithmetic in f32 without rounding the
 * intermediates (XLA's excess precision; see computes_wide in cpu_elemental.c). Off by
 * default: every bf16 op then rounds, as the evaluator does. */
void cpu_emitter_allow_excess_precision(cpu_emitter *e, bool allow);
/* Tags every operand and constant load the emitter builds with `!noalias list` (a
 * metadata node list of alias scopes; NULL: none), for a kernel whose output stores
 * carry those scopes (cpu_kernel_options.outputs_apart). */
void cpu_emitter_set_load_noalias(cpu_emitter *e, LLVMMetadataRef list);
/* f32 exp, tanh and erf (logistic's exp too) call the module's out-of-line copies
 * instead of expanding inline (see cpu_math.h). Off by default. */
void cpu_emitter_outline_math(cpu_emitter *e, bool outline);

/* Inlines scalar computation c (a reducer, comparator or combiner) on argument values
 * (LLVM storage types, see cpu_llvm_type; pred is i8 0/1); a tuple root yields one
 * result per element. */
void cpu_emit_scalar_call(cpu_emitter *e, const hlo_computation *c, LLVMValueRef *args, LLVMValueRef *results);
/* Whether c takes n_params scalars and returns n_results scalars (a tuple when more than
 * one) that the emitter can compute; otherwise appends why, naming user. */
bool cpu_elemental_supports_scalar(const hlo_instr *user, const hlo_computation *c, int n_params, int n_results,
                                   strbuf *why);

/* The values of the kernel's results at `ix` (the fused root for a fusion; one per
 * accumulator of a variadic reduce). */
void cpu_emit_root(cpu_emitter *e, const cpu_index *ix, LLVMValueRef *values);
/* For kernels that run the loops of their value reduce themselves (cpu_codegen's column
 * reductions): the reduce's init values, and one reducer step folding the input
 * elements at input index ix into acc (read as the current values, written with the
 * next). Each call site must use its own index object. */
void cpu_emit_reduce_init(cpu_emitter *e, const hlo_instr *reduce, LLVMValueRef *init);
void cpu_emit_reduce_step(cpu_emitter *e, const hlo_instr *reduce, const cpu_index *ix, LLVMValueRef *acc);
/* How many arrays the kernel writes, and the shape of each. */
int cpu_kernel_output_count(const hlo_instr *root);
const hlo_shape *cpu_kernel_output_shape(const hlo_instr *root, int k);
/* Forgets values computed for earlier indices (call when a new loop body starts). */
void cpu_emitter_reset_cache(cpu_emitter *e);

/* A payload-free pass: what is emitted while `on` drops the NaN payload rules -- + - * /
 * take whichever NaN the hardware returns, conversions do not quiet, f32/f64/f16 inputs
 * with a NaN read as the quiet NaN of no payload, and bf16 rounding then needs no NaN
 * case. Every value it computes has the exact pass's bits or is NaN in both, in a kernel
 * cpu_emitter_may_skip_payloads accepts; so a result that is not NaN is exact, and a
 * kernel recomputes exactly only what came out NaN. Reset the cache between passes. */
void cpu_emitter_set_payload_free(cpu_emitter *e, bool on);
/* Whether the kernel's fused computation is sound for a payload-free pass and saves
 * more instructions per element in it than the pass's NaN tests add. */
bool cpu_emitter_may_skip_payloads(const cpu_emitter *e);
/* Whether output value v of element type t (its storage value) is a NaN; NULL for a type
 * without NaNs. */
LLVMValueRef cpu_emit_is_nan_value(cpu_emitter *e, hlo_type t, LLVMValueRef v);

/* The instruction whose value the kernel stores (the fused root of a fusion). */
const hlo_instr *cpu_kernel_value_instr(const hlo_instr *root);
/* Whether every array in the kernel can be addressed by one linear index. */
bool cpu_kernel_is_flat(const hlo_instr *root);
/* Whether a reduce kernel's input can be addressed by one linear index: every array
 * its fused computation computes below the reduce is flat (as cpu_kernel_is_flat) over
 * the reduce's input; an unfused reduce reads its input from a buffer. */
bool cpu_reduce_input_is_flat(const hlo_instr *root);

/* LLVM storage type of an element type in context c. */
LLVMTypeRef cpu_llvm_type(LLVMContextRef c, hlo_type t);

/* Loop helpers (alloca-based counters; mem2reg turns them into phis). */
typedef struct cpu_loop {
  LLVMValueRef counter; /* alloca i64 */
  LLVMValueRef index;   /* current value, valid inside the body */
  LLVMBasicBlockRef header, body, exit;
} cpu_loop;
void cpu_loop_begin(LLVMBuilderRef b, LLVMValueRef fn, cpu_loop *l, LLVMValueRef lo, LLVMValueRef hi, const char *name);
/* Closes the loop; returns its back-edge branch (where loop metadata goes). */
LLVMValueRef cpu_loop_end(LLVMBuilderRef b, cpu_loop *l);
/* An alloca in the function's entry block. */
LLVMValueRef cpu_entry_alloca(LLVMValueRef fn, LLVMTypeRef t, const char *name);

#endif
