/* Deep copies of HLO modules. A backend compiles a copy of the caller's module (its
 * pass pipeline rewrites the copy, and the compiled executable outlives the caller's
 * module), so the copy shares nothing with the original: its own arena, instructions,
 * attribute arrays and constant literals. */
#ifndef KILN_HLO_CLONE_H
#define KILN_HLO_CLONE_H

#include "base/status.h"
#include "hlo/ir.h"

/* Instructions keep their names, order and attributes; ids are renumbered densely;
 * user_data is cleared. Errors (an instruction outside the module's id range, a use
 * before definition, a call of a computation of another module) name the instruction. */
kiln_status hlo_module_clone(const hlo_module *src, hlo_module **out);

#endif
