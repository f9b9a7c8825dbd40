/* Shape inference: the result shape of an instruction from its opcode, operand shapes,
 * called computations and attributes, per XLA's operation semantics. Used by the
 * builder (to create instructions) and by the verifier (to check parsed ones). Errors
 * name the instruction, the opcode and the offending shapes. */
#ifndef KILN_HLO_SHAPE_INFERENCE_H
#define KILN_HLO_SHAPE_INFERENCE_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

/* Computes the shape `ins` must have given its operands/attributes/called computations
 * (ins->shape itself is ignored, except for ops whose shape is an input: parameter,
 * constant, iota, custom-call, rng, infeed, reshape/broadcast/bitcast/convert-like
 * ops whose target shape is part of the instruction). Tuple element arrays go in A.
 *
 * What ins->shape contributes, op by op:
 *   dims and type: parameter, iota, custom-call, infeed, recv, async-*, all-gather,
 *                  all-to-all, reduce-scatter, rng-bit-generator, fft, bitcast and the
 *                  other ops whose shape XLA takes as given;
 *   dims only:     reshape, broadcast, dynamic-reshape, rng (type = operands' type);
 *   type only:     convert, bitcast-convert, stochastic-convert, and dot/convolution
 *                  (their preferred_element_type; a tuple/token type there means
 *                  "the operands' type").
 * The operand count (fixed arity or the op's own rule, e.g. reduce's 2N) and the
 * called computations' signatures are checked here too, so a malformed instruction
 * yields an error, never a crash. */
kiln_status hlo_infer_shape(arena *a, const hlo_instr *ins, hlo_shape *out);

/* Structural validity of a shape on its own: known element type, rank within
 * HLO_MAX_RANK, non-negative dims, tokens of rank 0, well-formed tuples; with
 * check_layout, a layout present must be a permutation of 0..rank-1. */
kiln_status hlo_shape_validate(const hlo_shape *s, bool check_layout);

/* The element type XLA gives a mixed-type dot/convolution by default: floating point
 * over integer over pred, then the wider type (a on ties). */
hlo_type hlo_higher_precision_type(hlo_type a, hlo_type b);

#endif
