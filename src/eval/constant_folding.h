/* Constant folding lives in kiln_eval, not with the other passes in kiln_hlo: it runs
 * the reference evaluator, and kiln_hlo must not depend on kiln_eval. It is an ordinary
 * hlo_pass_fn, handed to hlo_pipeline_new_optimize() by whoever links both layers (the
 * `kiln compile` tool, backends). */
#ifndef KILN_EVAL_CONSTANT_FOLDING_H
#define KILN_EVAL_CONSTANT_FOLDING_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* Results larger than this many elements are not folded (a big constant costs more in
 * the module than the op that makes it), except relayouts of a single constant
 * (transpose, reshape, copy, bitcast, reverse, slice, convert), which fold up to 64M
 * elements: they replace a weight by its relayout instead of redoing it every run. */
#define EVAL_CONSTANT_FOLDING_MAX_ELEMENTS 65536

/* Replaces every instruction whose operands are all constants by the constant the
 * evaluator computes for it, except side-effecting and nondeterministic ops, control
 * flow, ops without operands (iota, replica-id…), broadcasts and other ops whose result
 * outgrows their inputs (over 256 elements and more than the operands hold: folding
 * would only grow the module), non-array results and results over the size cap. An evaluator error just
 * leaves the instruction alone. */
kiln_status eval_pass_constant_folding(hlo_module *m, bool *changed);

#endif
