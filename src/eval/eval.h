/* The reference evaluator: executes HLO exactly as XLA's operation semantics define it.
 *
 * It is the oracle every backend is tested against, so it favours obvious correctness
 * over speed: each opcode is a direct transcription of the semantics over row-major
 * literals. Arguments are borrowed; the result is owned by the caller. Unsupported
 * opcodes (collectives, infeed/outfeed, rng, custom-calls other than the LAPACK ones of
 * lapack.c, …) are UNIMPLEMENTED errors
 * naming the instruction, never a crash. */
#ifndef KILN_EVAL_EVAL_H
#define KILN_EVAL_EVAL_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* Evaluates the entry computation. Argument count and shapes (types and dims) must
 * match the entry parameters; a mismatch is an INVALID_ARGUMENT error naming the
 * parameter. */
kiln_status eval_module(const hlo_module *m, hlo_literal *const *args, int n_args, hlo_literal **out);
kiln_status eval_computation(const hlo_computation *c, hlo_literal *const *args, int n_args, hlo_literal **out);

/* Whether the evaluator implements this instruction's opcode (for the interpreter
 * backend's supports() and for conformance reports). */
bool eval_supports(const hlo_instr *ins);

#endif
