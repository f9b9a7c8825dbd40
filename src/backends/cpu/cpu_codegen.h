/* Kernel generation for the cpu backend: one LLVM function per kernel instruction (a
 * fusion or a single instruction), plus the thread split that runs it.
 *
 * A kernel has the signature void k(char **buffers, int64_t begin, int64_t end):
 * buffers[0 .. n) are its n outputs (n > 1 only for a variadic reduce), buffers[n + k]
 * operand k (fused parameter k); [begin, end) is a range of work units. A unit is one
 * element for "flat" kernels (same-size elementwise work, addressed by linear position:
 * the inner loop is a plain vectorizable loop), one output element for reductions over
 * the input's last dimension (the inner loop is the reduction, reading contiguously), a
 * chunk of CPU_COLUMN_CHUNK outputs of one row for reductions that keep the last
 * dimension (the inner loop runs over the chunk's columns once per reduced position,
 * accumulating in the output), and one row of the output's last dimension otherwise
 * (outer indices are computed once per row; the inner loop runs over the last
 * dimension). */
#ifndef KILN_BACKENDS_CPU_CPU_CODEGEN_H
#define KILN_BACKENDS_CPU_CPU_CODEGEN_H

#include <stdint.h>

#include "backends/cpu/cpu_jit.h"
#include "hlo/ir.h"

/* Output columns per work unit of a column reduction. Each reduced position reads one
 * contiguous run of this many input elements, then the unit moves a whole input row
 * ahead: runs of 32 f32 (two cache lines per 4 KiB page) defeated the hardware
 * prefetcher and left a column sum over [4096,1024] waiting on memory (3.4-3.6 ms of
 * one core, against 1.8 ms for the same bytes reduced along rows; 2.1-2.4 ms in runs
 * of 256, 1.2-1.5 ms in runs of 1024, whole 4 KiB pages of f32). The accumulators of
 * a chunk (4 KiB of f32) stay in L1. Wider chunks give fewer units; the reduction
 * splitter (cpu_reduction_splitter.c) splits the reduced dimension of a reduction
 * left with too few. */
#define CPU_COLUMN_CHUNK 1024

typedef void (*cpu_kernel_fn)(char **buffers, int64_t begin, int64_t end);

/* cpu_kernel_fn as an LLVM function type in context c. */
LLVMTypeRef cpu_kernel_llvm_type(LLVMContextRef c);

typedef struct cpu_kernel_space {
  int64_t units;      /* total work units */
  int64_t unit_cost; /* elements computed per unit, reduced inputs included */
} cpu_kernel_space;

/* How a kernel may be compiled, from what its caller knows about it. */
typedef struct cpu_kernel_options {
  bool excess_precision; /* see cpu_emitter_allow_excess_precision */
  /* No operand's storage overlaps the outputs' (a block fresh from buffer assignment,
   * not one taken over in place): the kernel's stores are declared apart from its
   * operand loads (scoped noalias metadata), so LLVM may keep per-row and per-column
   * operand values in registers across the stores instead of reloading and
   * recomputing them for every element. */
  bool outputs_apart;
  bool outline_math; /* see cpu_emitter_outline_math */
} cpu_kernel_options;

/* Defines function `name` computing `ins` in the module. The instruction must satisfy
 * cpu_elemental_supports. */
kiln_status cpu_codegen_add_kernel(cpu_jit_module *jm, const hlo_instr *ins, const char *name,
                                   const cpu_kernel_options *opts, cpu_kernel_space *space);

/* Whether cpu_kernel_run runs a kernel of this space on the calling thread alone (too
 * little work to pay for the OpenMP pool). */
bool cpu_kernel_runs_serially(const cpu_kernel_space *space);

/* Runs a kernel over its whole space, split across the OpenMP pool when the work is
 * large enough to pay for it. */
void cpu_kernel_run(cpu_kernel_fn fn, char **buffers, const cpu_kernel_space *space);

#endif
