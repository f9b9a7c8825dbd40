/* The compiled form of an HLO module on the cpu backend, and how it runs.
 *
 * An executable is a program for the entry computation plus the programs its loops and
 * conditionals run. A program is a computation's buffer assignment (one arena,
 * allocated on the program's first run and kept) and its thunk sequence: each thunk
 * runs one instruction (or fusion) as a generated kernel, a oneDNN primitive, a native
 * kernel, a copy, an evaluator call, or -- for while and conditional -- the programs
 * of the computations it calls. Thunks name their buffers as (instruction, byte offset)
 * pairs resolved against the running program's parameters, constants and arena.
 * cpu_compiler.c builds executables, cpu_cache.c shares them, this file runs, profiles
 * and frees them. One executable runs one call at a time (its arenas are its own). */
#ifndef KILN_BACKENDS_CPU_CPU_EXECUTABLE_H
#define KILN_BACKENDS_CPU_CPU_EXECUTABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/cpu_codegen.h"
#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_eval.h"
#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/cpu_loop_kernel.h"
#include "backends/cpu/cpu_native.h"
#include "hlo/buffer_assignment.h"
#include "hlo/ir.h"

/* Buffer alignment: of the arena's blocks and of leaves inside packed tuples. */
#define CPU_ALIGNMENT 64

typedef enum thunk_kind {
  THUNK_KERNEL,
  THUNK_DNNL,
  THUNK_COPY,
  THUNK_EVAL,
  THUNK_NATIVE,
  THUNK_WHILE,
  THUNK_CONDITIONAL,
} thunk_kind;

/* Where a buffer lives: instruction `base` of the program's computation (its
 * PARAMETER, CONSTANT or ARENA storage) plus a byte offset. */
typedef struct buffer_ref {
  int base;
  int64_t offset;
} buffer_ref;

typedef struct cpu_program cpu_program;

/* How a while thunk moves leaf k of the body's result into the loop state: copy it
 * from the body's own storage, keep it (the body passed the state's leaf k through),
 * or stage it through scratch memory first (the body returns another state leaf, which
 * a direct copy could overwrite before it is read). */
typedef enum leaf_move { LEAF_COPY, LEAF_KEEP, LEAF_STAGE } leaf_move;

typedef struct thunk {
  thunk_kind kind;
  int n_refs;
  buffer_ref *refs; /* [0] the output, [1 + k] operand k; leaf thunks: see add_leaf_thunk */
  int n_out;        /* leaf thunks (evaluator, native, while, conditional): refs[0..n_out) are the result's leaves */
  cpu_eval_op *eval;
  cpu_native *native;
  int kernel; /* THUNK_KERNEL: the function is kiln_x<executable>_k<kernel> */
  cpu_kernel_fn fn;
  cpu_kernel_space space;
  cpu_dnnl_prim *prim;
  int64_t bytes; /* THUNK_COPY */
  /* THUNK_WHILE: progs[0] the condition, progs[1] the body, both reading the loop state
   * (the while's own block) as their parameter. THUNK_CONDITIONAL: one per branch. */
  int n_progs;
  cpu_program **progs;
  int64_t *leaf_bytes;   /* while / conditional: the size of each result leaf */
  leaf_move *moves;      /* while: per state leaf */
  int64_t *stage_at;     /* while: where a LEAF_STAGE leaf waits in scratch */
  int *arg_leaf;         /* conditional: refs index of branch b's operand's first leaf */
  bool *arg_packed;      /* conditional: that operand's leaves already lie packed in one block */
  char *scratch;         /* while: staging; conditional: an operand packed into one block */
  int loop;              /* while: the loop function's number (kiln_x<executable>_w<loop>), or -1 */
  cpu_loop_fn loop_fn;   /* while: the whole loop as one function (cpu_loop_kernel.h), or NULL */
  const hlo_instr *ins;  /* what it computes (in the executable's module) */
  int64_t ns, runs;      /* profiling: time spent and executions */
} thunk;

/* One computation turned into thunks: the entry, or a loop's condition and body, or a
 * conditional's branch. Each has its own buffer assignment and arena (allocated on its
 * first run, kept); a sub-program's parameter is the block its caller passes, and its
 * result is the root's leaves, which the caller copies out. */
struct cpu_program {
  const hlo_computation *comp;
  hlo_buffer_assignment *assignment;
  int n_thunks;
  thunk *thunks;
  int n_results;
  buffer_ref *results; /* sub-programs: the root's array leaves, depth-first */
  char *arena;
  /* Every thunk's refs resolved to addresses, thunk after thunk, for the parameters in
   * bound[0 .. comp->n_params): a loop runs its condition and body on the same state
   * block every iteration, so they are resolved once per loop, not per thunk run.
   * Allocated on the program's first run, with the arena. */
  char **addrs;
  char **bound;
  bool resolved;
  /* The entry only: blocks that are whole array outputs live in the caller's result
   * instead of the arena. slot_extra[i] >= 0 names slot i's address in the run's
   * address list after the parameters (params[comp->n_params + slot_extra[i]]), so
   * the kernels that compute an output write it in place and no copy follows. NULL
   * when there are none (sub-programs: their results move into the caller's block). */
  int n_extra;
  int *slot_extra;
};

/* One array (or packed-tuple) leaf of the entry's result, in depth-first order of the
 * root's `tuple` instructions, nested ones included. direct >= 0: the leaf's block is
 * the program's extra address `direct`, the result literal the run allocates before
 * it starts; -1: it is copied out of its storage (a parameter, a constant, a block
 * that another output names too, a leaf of a packed tuple) after the run. */
typedef struct cpu_output {
  const hlo_instr *ins;
  buffer_ref ref;
  int direct;
} cpu_output;

typedef struct cpu_executable {
  uint64_t id;       /* unique per process */
  /* Prefix of its kernels' symbols: kiln_x<id>, or kiln_p<key digest> when compiled
   * through the persistent cache (the same in every process, cpu_persist.h), in which
   * case persist_claim is the claimed digest. */
  char sym[40];
  uint64_t persist_claim;
  bool persist_claimed;
  char *fingerprint; /* the cache key (cpu_cache.c) */
  uint64_t hash;
  int refs;          /* cache references (cpu_cache.c) */
  bool profile; /* time every thunk; print the summary when the last user releases it */
  hlo_module *module; /* the compiled clone; constants live here */
  cpu_program *entry;
  int n_kernels;
  int n_loops; /* loop functions (thunk.loop) */
  cpu_jit *jit;
  int n_outputs;
  cpu_output *outputs; /* the result's leaves */
  char *evaluated; /* the warning naming the evaluator thunks (repeated by every compile), or NULL */
  int n_evaluated;  /* how many thunks that is */
  pthread_mutex_t run_lock; /* one run at a time: the arenas are the executable's */
  struct cpu_executable *next; /* cache list, most recently used first */
} cpu_executable;

/* Frees a thunk's resources (and the programs it runs) and zeroes it. */
void cpu_thunk_free(thunk *t);
void cpu_program_free(cpu_program *p);
void cpu_executable_free(cpu_executable *x);

/* The shape of array leaf k of s, depth-first (s itself for an array). */
const hlo_shape *cpu_leaf_shape(const hlo_shape *s, int k);

/* Runs x on args (checked against the entry's parameters); *out is an array literal,
 * or a tuple shaped as the root's (nested `tuple` instructions give nested tuples).
 * Serialised on x->run_lock. */
kiln_status cpu_executable_run(cpu_executable *x, hlo_literal *const *args, int n_args, hlo_literal **out);

/* --profile: the summary of where x's runs spent their time, to stderr. */
void cpu_executable_print_profile(const cpu_executable *x);

#endif
