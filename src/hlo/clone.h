/* Deep copies of HLO modules. A backend compiles a copy of the caller's module (its
 * pass pipeline rewrites the copy, and the compiled executable outlives the caller's
 * module), so the copy shares nothing with the original: its own arena, instructions,
 * attribute arrays and constant literals. Compaction is the same copy taking the
 * original's place, which frees what the original's passes left behind. */
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

/* Instructions m has made and no computation holds any more: a module's arena keeps
 * every instruction until the module is freed, and a pass pipeline replaces thousands. */
int64_t hlo_module_dead_instrs(const hlo_module *m);
/* Rebuilds m in place from what its computations hold: a fresh arena with only the live
 * instructions (a clone that keeps their ids and next_id, so an id is never reused and
 * made-up names stay unique; user_data cleared) and only the constant literals they
 * hold (moved, not copied); the old arena and every literal no instruction holds are
 * freed. The hlo_module pointer stays valid; pointers to its computations and
 * instructions do not. On error m is unchanged. */
kiln_status hlo_module_compact(hlo_module *m);

#endif
