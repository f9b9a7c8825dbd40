/* The string host kernels that other families' ops take when a string tensor reaches
 * them (ops_onnx_string.c defines them): the HLO lowerings of Equal, Cast and CastLike
 * cannot see strings, so their op_defs name these as host kernels, which the executor
 * runs whenever an input has no HLO type (or, for Cast to STRING, when the lowering
 * answers UNIMPLEMENTED). */
#ifndef KILN_OPS_OPS_ONNX_STRING_H
#define KILN_OPS_OPS_ONNX_STRING_H

#include "ops/ops.h"

/* Equal on two string tensors (numpy broadcasting), bytewise. */
kiln_status onnx_host_string_equal(op_host_ctx *ctx);
/* Cast / CastLike where the source or the target is STRING. */
kiln_status onnx_host_string_cast(op_host_ctx *ctx);
kiln_status onnx_host_string_castlike(op_host_ctx *ctx);

/* Unicode simple case mapping (UnicodeData.txt's one-to-one mappings for the scripts
 * kiln's table covers; see ops_onnx_string.c). Code points without a mapping map to
 * themselves. */
uint32_t onnx_string_to_upper(uint32_t cp);
uint32_t onnx_string_to_lower(uint32_t cp);

#endif
