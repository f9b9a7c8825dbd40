/* HLO text parser: reads XLA's HLO text format into an hlo_module.
 *
 * Accepts what XLA prints (with or without '%', layouts, operand shapes, index
 * comments, entry_computation_layout, typed parameter lists, metadata and other
 * attributes, elided constants "{...}"). Every error names file:line:col and what was
 * expected. The parser resolves names and orders each computation so operands precede
 * users; it does not run the verifier (callers do: hlo_verify_module). */
#ifndef KILN_HLO_PARSER_H
#define KILN_HLO_PARSER_H

#include <stddef.h>

#include "base/status.h"
#include "hlo/ir.h"

/* `filename` is used only in messages (may be NULL: "<input>"). */
kiln_status hlo_parse(const char *text, size_t len, const char *filename, hlo_module **out);
kiln_status hlo_parse_file(const char *path, hlo_module **out);

#endif
