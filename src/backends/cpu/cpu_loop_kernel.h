/* A while loop compiled into one function. A loop whose condition and body are only
 * small kernels (too little work to be split across threads), copies and
 * dynamic-(update-)slices, and whose state leaves stay in place or are copied back whole,
 * runs as a single generated function: the loop itself, each step a direct call of its
 * kernel with the kernel's constant unit range (the kernels live in the same LLVM
 * module and are inlined there, their loops folding away), each dynamic-update-slice
 * and native dynamic-slice an inline clamp and copy of its window, each body result copied back into the state
 * with a constant size. Through thunks, every step of every iteration is a dispatch
 * through the executable's run loop; the scan step of xla_bench_scan_N2000_M3
 * (bench/jax_models.py: a 3x3 dot, a tanh and a row written back) spent most of its
 * time there. The thunks stay the loop's description, and what --profile runs. */
#ifndef KILN_BACKENDS_CPU_CPU_LOOP_KERNEL_H
#define KILN_BACKENDS_CPU_CPU_LOOP_KERNEL_H

#include <stdint.h>

#include "backends/cpu/cpu_jit.h"
#include "hlo/ir.h"

typedef enum cpu_loop_step_kind {
  CPU_STEP_KERNEL,       /* call kernel(addrs + at, 0, units) */
  CPU_STEP_COPY,         /* memmove(addrs[at], addrs[at + 1], bytes) */
  CPU_STEP_UPDATE_SLICE, /* addrs[at]: the result, then the operand, the update and the start indices */
  CPU_STEP_SLICE,        /* a dynamic-slice, addrs[at]: the result, then the operand and the start indices */
} cpu_loop_step_kind;

typedef struct cpu_loop_step {
  cpu_loop_step_kind kind;
  int at;              /* the step's first buffer in its program's address array */
  const char *kernel;  /* CPU_STEP_KERNEL: its function, defined in the same module */
  int64_t units;       /* CPU_STEP_KERNEL */
  int64_t bytes;       /* CPU_STEP_COPY */
  const hlo_instr *ins; /* CPU_STEP_UPDATE_SLICE, CPU_STEP_SLICE: the instruction */
} cpu_loop_step;

/* What the function runs: the condition's steps, then (while the predicate holds) the
 * body's, then the moves of state leaves move_leaf[i] (move_bytes[i] each). */
typedef struct cpu_loop_plan {
  int n_cond, n_body, n_moves;
  const cpu_loop_step *cond, *body;
  const int *move_leaf;
  const int64_t *move_bytes;
} cpu_loop_plan;

/* The function: cond_addrs and body_addrs are the two programs' bound address arrays,
 * pred the condition's result, leaf[k] state leaf k and from[k] the body's result leaf k. */
typedef void (*cpu_loop_fn)(char **cond_addrs, char **body_addrs, const uint8_t *pred, char *const *leaf,
                            char *const *from);

/* Defines function `name` running plan in jm, where the plan's kernels are defined. */
kiln_status cpu_codegen_add_loop(cpu_jit_module *jm, const char *name, const cpu_loop_plan *plan);

#endif
