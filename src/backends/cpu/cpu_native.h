/* Native runtime kernels of the cpu backend: instructions that are neither loop nests
 * the code generator emits element by element nor oneDNN primitives, such as sort,
 * scatter and select-and-scatter, run as C code in kiln that calls small functions
 * generated from the instruction's scalar computations (a comparator, a combiner).
 * They replace the evaluator thunk for those instructions.
 *
 * Each kind of native kernel lives in a file of its own (cpu_sort.c, cpu_scatter.c, ...)
 * and is listed in cpu_native.c's table; the backend sees only this interface.
 * Buffers are passed as leaves, as for evaluator thunks (cpu_eval.h): out holds the
 * result's array leaves (one for an array result, each element of a tuple result
 * depth-first), in the operands' leaves in operand order. The result's storage never
 * overlaps an operand's (buffer assignment only shares blocks with elementwise work). */
#ifndef KILN_BACKENDS_CPU_CPU_NATIVE_H
#define KILN_BACKENDS_CPU_CPU_NATIVE_H

#include <stdbool.h>

#include "backends/cpu/cpu_jit.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "hlo/ir.h"

/* One kind of native kernel. create may add functions named PREFIX... to jm (and says
 * whether it did); link finds them once the JIT has compiled the module; run executes
 * one instruction. State is the kind's own object. */
typedef struct cpu_native_kind {
  const char *name;
  bool (*supports)(const hlo_instr *ins, strbuf *why);
  kiln_status (*create)(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state, bool *uses_jit);
  kiln_status (*link)(void *state, cpu_jit *jit);
  kiln_status (*run)(void *state, char *const *out, char *const *in);
  void (*destroy)(void *state);
} cpu_native_kind;

/* The kinds (each defined in its own file). */
extern const cpu_native_kind cpu_native_update_slice; /* dynamic-update-slice (cpu_update_slice.c) */
extern const cpu_native_kind cpu_native_dynamic_slice; /* dynamic-slice of whole rows (cpu_update_slice.c) */
extern const cpu_native_kind cpu_native_scan;         /* cumulative reduce-window (cpu_scan.c) */
extern const cpu_native_kind cpu_native_sort;         /* sort, any comparator (cpu_sort.c) */
extern const cpu_native_kind cpu_native_topk;         /* topk (cpu_sort.c) */
extern const cpu_native_kind cpu_native_scatter;      /* scatter, any combiner (cpu_scatter.c) */
extern const cpu_native_kind cpu_native_select_and_scatter; /* (cpu_scatter.c) */
extern const cpu_native_kind cpu_native_reduce_window; /* tuple-shaped (variadic) reduce-window (cpu_scatter.c) */
extern const cpu_native_kind cpu_native_lapack;       /* JAX's LAPACK custom-calls, by the system LAPACK (cpu_lapack.c) */

typedef struct cpu_native cpu_native;

/* Whether some native kernel implements ins; otherwise appends why (may be NULL). */
bool cpu_native_supports(const hlo_instr *ins, strbuf *why);
/* Builds ins's kernel; *uses_jit says whether it added functions to jm. */
kiln_status cpu_native_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, cpu_native **out,
                              bool *uses_jit);
kiln_status cpu_native_link(cpu_native *n, cpu_jit *jit);
kiln_status cpu_native_run(const cpu_native *n, char *const *out, char *const *in);
void cpu_native_destroy(cpu_native *n);

/* The window of a dynamic-update-slice or dynamic-slice (dims `window` in an operand of
 * shape s) as contiguous runs: dims >= *inner form one run of *run elements (the longest
 * suffix of dims the window spans whole, plus the dim before it); the window's dims
 * before *inner count the runs (cpu_update_slice.c). */
void cpu_window_runs(const hlo_shape *s, const int64_t *window, int *inner, int64_t *run);

#endif
