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
/* The same, except that array constants borrow the source's data (literal_borrow; a
 * counted borrow where the source's literal names a lender, literal_owner): a backend
 * whose compile consumes large constants (packing them into a library's layout) never
 * holds a second copy of them. The source must stay alive and unchanged until
 * hlo_module_own_constants gives the copy its own data for the constants it still has
 * and lets go of the rest. */
kiln_status hlo_module_clone_borrowing_constants(const hlo_module *src, hlo_module **out);
void hlo_module_own_constants(hlo_module *m);

#endif
