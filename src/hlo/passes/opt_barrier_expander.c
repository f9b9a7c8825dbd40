/* Optimization-barrier removal, as XLA's OptimizationBarrierExpander: `opt-barrier(x)`
 * returns x unchanged, and its only meaning is to stop the passes from moving,
 * merging or simplifying work across it (jax.checkpoint puts one around the recomputed
 * forward pass, so that CSE does not merge the recomputation back into the saved
 * activations). Once the simplification passes have run it has done its job, and the
 * backends need not know about it: every use of a barrier is redirected to its operand
 * and the barrier is taken out of its computation. A barrier is side-effecting for DCE
 * (that is what keeps the simplifiers off it), so this pass removes it itself instead
 * of leaving it dead. Its operand is almost always a tuple instruction read through
 * get-tuple-elements; those reads are forwarded to the tuple's elements directly, so
 * the values behind the barrier are plain operands of their users again and fuse as if
 * the barrier had never been there (the dead tuple and reads are DCE's). Barriers in
 * every computation go, while bodies and branches included. */
#include <stdlib.h>

#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* Redirects the uses of barrier b (in its computation c) to what it stands for. */
static void bypass(hlo_computation *c, hlo_instr *b) {
  hlo_instr *src = b->operands[0];
  /* The reads of a tuple through the barrier, forwarded to the tuple's elements. The
   * instruction list is scanned before any use moves, so only the barrier's own
   * readers are touched. */
  if (src->op == HLO_OP_TUPLE) {
    for (int i = 0; i < c->n_instrs; i++) {
      hlo_instr *u = c->instrs[i];
      if (u->op != HLO_OP_GET_TUPLE_ELEMENT || u->n_operands != 1 || u->operands[0] != b) continue;
      if (u->tuple_index < 0 || u->tuple_index >= src->n_operands) continue; /* the verifier's to report */
      hlo_pass_replace_uses(c, u, src->operands[u->tuple_index]);
    }
  }
  hlo_pass_replace_uses(c, b, src);
}

kiln_status hlo_pass_opt_barrier_expander(hlo_module *m, bool *changed) {
  bool any = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    /* Uses first, with the list intact (a barrier of a barrier then reads through
     * both); then the barriers, unused and no longer the root, leave the list. */
    int n = 0;
    for (int i = 0; i < c->n_instrs; i++)
      if (c->instrs[i]->op == HLO_OP_OPTIMIZATION_BARRIER && c->instrs[i]->n_operands == 1) {
        bypass(c, c->instrs[i]);
        n++;
      }
    if (!n) continue;
    int w = 0;
    for (int i = 0; i < c->n_instrs; i++) {
      hlo_instr *ins = c->instrs[i];
      if (!(ins->op == HLO_OP_OPTIMIZATION_BARRIER && ins->n_operands == 1)) c->instrs[w++] = ins;
    }
    c->n_instrs = w;
    any = true;
  }
  if (changed) *changed = any;
  return NULL;
}
