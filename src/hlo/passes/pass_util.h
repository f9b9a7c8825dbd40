/* Helpers the rewriting passes share: redirecting users from one instruction to another,
 * restoring definition order after a rewrite appended replacements at the end of a
 * computation, and the side-effect test that CSE and constant folding must respect.
 * Passes never delete the instructions they bypass; DCE (which knows about side
 * effects) removes them, so a pass cannot drop an outfeed by accident. */
#ifndef KILN_HLO_PASSES_PASS_UTIL_H
#define KILN_HLO_PASSES_PASS_UTIL_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* A rewrite of one instruction: sets *out to its replacement, or to NULL to leave it
 * alone. An error means the builder refused the replacement's shapes. */
typedef kiln_status (*hlo_pass_rewrite_fn)(hlo_computation *c, hlo_instr *ins, hlo_instr **out);

/* Runs `rewrite` on every instruction each computation of m had when the pass started;
 * a replacement takes over all of the instruction's uses. An instruction whose rewrite
 * fails is left as it is (the half-built instructions are dead, for DCE), so the pass
 * never errs. Definition order is restored where anything was added. */
kiln_status hlo_pass_rewrite_each(hlo_module *m, hlo_pass_rewrite_fn rewrite, bool *changed);

/* Makes every operand reference to `from` inside c (and c's root) point at `to`.
 * Returns the number of references changed. A replacement without a layout (made by
 * the builder) takes over from's layout. */
int hlo_pass_replace_uses(hlo_computation *c, hlo_instr *from, hlo_instr *to);

/* hlo_pass_replace_uses for n pairs in one scan of c: a pass replacing many
 * instructions one call at a time would scan the computation once per replacement.
 * The from[] must be distinct and no to[] may be among them (replacements do not chain). */
int hlo_pass_replace_uses_many(hlo_computation *c, int n, hlo_instr *const *from, hlo_instr *const *to);

/* Reorders c->instrs so every operand precedes its users, keeping the existing order
 * wherever it is already valid (a stable depth-first post-order). */
void hlo_pass_restore_order(hlo_computation *c);

/* True for instructions whose execution is observable beyond their value or whose value
 * is not a function of their operands: send/recv, infeed/outfeed, rng, custom-calls,
 * collectives, async ops, and calls/whiles/conditionals whose callees contain any. */
bool hlo_pass_has_side_effect(const hlo_instr *ins);

/* A constant (or broadcast of a constant) whose every element equals the others;
 * returns that one element's literal index 0 through *lit. */
bool hlo_pass_uniform_constant(const hlo_instr *ins, const hlo_literal **lit);

/* The uniform value as an integer / double (only meaningful for int / float types). */
bool hlo_pass_is_int_constant(const hlo_instr *ins, int64_t value);
/* Float constant equal to value with the given sign bit (distinguishes -0.0 and +0.0). */
bool hlo_pass_is_float_constant(const hlo_instr *ins, double value, bool negative);


/* The binary op a reduce's computation applies to its two scalar parameters of type t
 * (p0 op p1 or p1 op p0), or false when it is anything else. */
bool hlo_pass_reducer_op(const hlo_computation *r, hlo_type t, hlo_opcode *op);


#endif
