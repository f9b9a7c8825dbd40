/* HLO verifier: structural and shape checks over a whole module — operand counts,
 * operand/result shapes against shape inference, called computation signatures,
 * parameter numbering, roots, entry presence, no use of instructions from another
 * computation. Run after parsing and after every pass that changed the module. */
#ifndef KILN_HLO_VERIFIER_H
#define KILN_HLO_VERIFIER_H

#include "base/status.h"
#include "hlo/ir.h"

kiln_status hlo_verify_module(const hlo_module *m);

#endif
