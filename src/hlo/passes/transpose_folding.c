/* Transpose folding into dot, as XLA's TransposeFolding: dot(transpose(a), b) reads a's
 * elements through the permutation, so instead of materialising the transpose the dot's
 * dimension numbers can name a's dimensions directly. A dot's result is laid out as
 * batch dims (in dnums order), then lhs free dims, then rhs free dims, each group in
 * increasing dimension order; renaming batch and contracting dims through the
 * permutation changes nothing, but free dims are ordered by their index, so the fold is
 * exact only when the permutation keeps the operand's free dims in the same relative
 * order. Every element of the result is then the same sum of the same products in the
 * same order, so the result is bit-identical. The old transpose is left for DCE. */
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

static bool contains(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

/* Maps batch/contracting dims of a transposed operand onto the transpose's input;
 * false when the free dims would come out reordered. */
static bool fold_side(const hlo_instr *tr, const hlo_ints *batch, const hlo_ints *contr, int64_t *nbatch,
                      int64_t *ncontr) {
  const hlo_ints *perm = &tr->dimensions;
  int r = perm->n;
  int64_t last = -1;
  for (int d = 0; d < r; d++) {
    if (contains(batch, d) || contains(contr, d)) continue;
    if (perm->v[d] <= last) return false;
    last = perm->v[d];
  }
  for (int i = 0; i < batch->n; i++) nbatch[i] = perm->v[batch->v[i]];
  for (int i = 0; i < contr->n; i++) ncontr[i] = perm->v[contr->v[i]];
  return true;
}

static hlo_instr *fold_dot(hlo_computation *c, hlo_instr *dot) {
  if (dot->n_operands != 2) return NULL;
  hlo_instr *lhs = dot->operands[0], *rhs = dot->operands[1];
  bool fold_l = lhs->op == HLO_OP_TRANSPOSE && lhs->dimensions.n == lhs->shape.rank;
  bool fold_r = rhs->op == HLO_OP_TRANSPOSE && rhs->dimensions.n == rhs->shape.rank;
  if (!fold_l && !fold_r) return NULL;
  const hlo_dot_dnums *dn = &dot->dot;
  int64_t lb[HLO_MAX_RANK], lc[HLO_MAX_RANK], rb[HLO_MAX_RANK], rc[HLO_MAX_RANK];
  if (dn->lhs_batch.n > HLO_MAX_RANK || dn->lhs_contracting.n > HLO_MAX_RANK || dn->rhs_batch.n > HLO_MAX_RANK ||
      dn->rhs_contracting.n > HLO_MAX_RANK)
    return NULL;
  memcpy(lb, dn->lhs_batch.v, (size_t)dn->lhs_batch.n * sizeof(int64_t));
  memcpy(lc, dn->lhs_contracting.v, (size_t)dn->lhs_contracting.n * sizeof(int64_t));
  memcpy(rb, dn->rhs_batch.v, (size_t)dn->rhs_batch.n * sizeof(int64_t));
  memcpy(rc, dn->rhs_contracting.v, (size_t)dn->rhs_contracting.n * sizeof(int64_t));
  if (fold_l && !fold_side(lhs, &dn->lhs_batch, &dn->lhs_contracting, lb, lc)) fold_l = false;
  if (fold_r && !fold_side(rhs, &dn->rhs_batch, &dn->rhs_contracting, rb, rc)) fold_r = false;
  if (!fold_l && !fold_r) return NULL;

  hlo_instr *ops[2] = {fold_l ? lhs->operands[0] : lhs, fold_r ? rhs->operands[0] : rhs};
  hlo_instr tmpl = hlo_instr_template_from(dot, ops); /* keeps preferred type, precision config, raw attrs */
  tmpl.dot.lhs_batch = (hlo_ints){dn->lhs_batch.n, lb};
  tmpl.dot.lhs_contracting = (hlo_ints){dn->lhs_contracting.n, lc};
  tmpl.dot.rhs_batch = (hlo_ints){dn->rhs_batch.n, rb};
  tmpl.dot.rhs_contracting = (hlo_ints){dn->rhs_contracting.n, rc};
  hlo_instr *out = NULL;
  kiln_status s = hlo_build_instr(c, &tmpl, &out);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  if (!shape_compatible(&out->shape, &dot->shape)) return NULL; /* left dead for DCE */
  return out;
}

kiln_status hlo_pass_transpose_folding(hlo_module *m, bool *changed) {
  *changed = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    int n = c->n_instrs;
    bool any = false;
    for (int i = 0; i < n; i++) {
      hlo_instr *ins = c->instrs[i];
      if (ins->op != HLO_OP_DOT || (ins != c->root && hlo_instr_count_users(ins) == 0)) continue;
      hlo_instr *folded = fold_dot(c, ins);
      if (folded && hlo_pass_replace_uses(c, ins, folded) > 0) any = true;
    }
    if (any || c->n_instrs != n) hlo_pass_restore_order(c);
    if (any) *changed = true;
  }
  return NULL;
}
