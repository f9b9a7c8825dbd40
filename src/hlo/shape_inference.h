/* Shape inference: the result shape of an instruction from its opcode, operand shapes,
 * called computations and attributes, per XLA's operation semantics. Used by the
 * builder (to create instructions) and by the verifier (to check parsed ones). Errors
 * name the instruction, the opcode and the offending shapes. */
#ifndef KILN_HLO_SHAPE_INFERENCE_H
#define KILN_HLO_SHAPE_INFERENCE_H

#include "base/status.h"
#include "hlo/ir.h"

/* Computes the shape `ins` must have given its operands/attributes/called computations
 * (ins->shape itself is ignored, except for ops whose shape is an input: parameter,
 * constant, iota, custom-call, rng, infeed, reshape/broadcast/bitcast/convert-like
 * ops whose target shape is part of the instruction). Tuple element arrays go in A. */
kiln_status hlo_infer_shape(arena *a, const hlo_instr *ins, hlo_shape *out);

#endif
