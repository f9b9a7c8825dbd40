/* The cpu backend's last resort: one instruction of the entry run through the evaluator.
 *
 * An instruction that neither oneDNN nor the code generator takes (while, conditional,
 * sort, scatter, select-and-scatter, reduce-precision, ...) becomes an evaluator thunk
 * instead of sending the whole module to the interpreter: at compile time a tiny
 * computation is added to the compiled module (one parameter per operand, a copy of the
 * instruction calling the same computations), and each run copies the operands out of
 * their buffers into literals, evaluates that computation and copies the result back.
 * Values are row-major both in literals and in the arena, so the copies are plain
 * memcpys; tuple-shaped values are handled leaf by leaf, each array leaf (depth-first)
 * at the place buffer assignment gives it (a packed tuple's leaves at aligned offsets
 * inside its block, see hlo/buffer_assignment.h). The copies also make the thunk safe
 * when buffer assignment lets the result take over an operand's block. */
#ifndef KILN_BACKENDS_CPU_CPU_EVAL_H
#define KILN_BACKENDS_CPU_CPU_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "hlo/ir.h"

typedef struct cpu_eval_op cpu_eval_op;

/* Whether the evaluator implements ins and everything in the computations it calls
 * (transitively), and every value it reads or writes is an array or a tuple of arrays
 * (no tokens). Otherwise appends the reason to why (may be NULL). */
bool cpu_eval_supports(const hlo_instr *ins, strbuf *why);

/* The array leaves of s, depth-first: 1 for an array. */
int cpu_eval_leaf_count(const hlo_shape *s);
/* The byte offset of leaf k of s inside a block packed as buffer assignment packs
 * tuples with this alignment (0 for an array). */
int64_t cpu_eval_leaf_offset(const hlo_shape *s, int k, int64_t alignment);

/* Builds the computation that evaluates ins inside m (ins's own module, which must
 * outlive the op). */
kiln_status cpu_eval_create(hlo_module *m, const hlo_instr *ins, cpu_eval_op **out);
/* One run: in holds the operands' leaves (operand 0's leaves first, each depth-first),
 * out the result's leaves. */
kiln_status cpu_eval_run(const cpu_eval_op *op, char *const *out, char *const *in);
void cpu_eval_destroy(cpu_eval_op *op);

#endif
