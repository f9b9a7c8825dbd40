/* Dot canonicalization for the CPU backend, as XLA's DotDecomposer: after it every dot
 * has the one form a GEMM library call takes,
 *   lhs [batch..., M, K] x rhs [batch..., K, N] -> [batch..., M, N],
 * batch dimensions leading and numbered in order on both sides, exactly one contracting
 * dimension. Each operand is transposed to (batch dims in dnums order, free dims in
 * increasing order, contracting dims in dnums order) on the lhs and (batch, contracting,
 * free) on the rhs, then reshaped so the free dims collapse into M (or N) and the
 * contracting dims into K; a missing M or N (matrix-vector, vector-vector) becomes a
 * size-1 dimension. The dot's result [batch..., lhs free..., rhs free...] has the same
 * row-major element order as [batch..., M, N], so a reshape restores the original shape.
 * Every output element is the same sum of the same products in the same order (the
 * contracting multi-index runs row-major over the dnums order either way), so results
 * are bit-identical; transposes and reshapes that would be identities are not made. The
 * old dot is left for DCE. */
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

static bool is_canonical(const hlo_instr *dot) {
  const hlo_dot_dnums *dn = &dot->dot;
  int nb = dn->lhs_batch.n;
  if (dn->lhs_contracting.n != 1 || dn->rhs_contracting.n != 1 || dn->rhs_batch.n != nb) return false;
  if (dot->operands[0]->shape.rank != nb + 2 || dot->operands[1]->shape.rank != nb + 2) return false;
  for (int i = 0; i < nb; i++)
    if (dn->lhs_batch.v[i] != i || dn->rhs_batch.v[i] != i) return false;
  return dn->lhs_contracting.v[0] == nb + 1 && dn->rhs_contracting.v[0] == nb;
}

static bool listed(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

/* Transposes x to batch, then (contracting_first ? contracting, free : free,
 * contracting), and reshapes to [batch..., A, B] where A and B are the products of the
 * two trailing groups. */
static kiln_status canonical_operand(hlo_computation *c, hlo_instr *x, const hlo_ints *batch,
                                     const hlo_ints *contracting, bool contracting_first, hlo_instr **out) {
  const hlo_shape *s = &x->shape;
  /* room for repeated dims too: those are rejected by the count check below */
  int64_t perm[2 * HLO_MAX_RANK], free_dims[HLO_MAX_RANK];
  int n = 0, n_free = 0;
  bool valid = shape_is_array(s) && batch->n + contracting->n <= s->rank && batch->n + 2 <= HLO_MAX_RANK;
  for (int i = 0; i < batch->n && valid; i++) valid = batch->v[i] >= 0 && batch->v[i] < s->rank;
  for (int i = 0; i < contracting->n && valid; i++) valid = contracting->v[i] >= 0 && contracting->v[i] < s->rank;
  if (!valid)
    return ERR_INVALID("dot-canonicalize: operand %s of rank %d has malformed dimension numbers", x->name, s->rank);
  for (int d = 0; d < s->rank; d++)
    if (!listed(batch, d) && !listed(contracting, d)) free_dims[n_free++] = d;
  for (int i = 0; i < batch->n; i++) perm[n++] = batch->v[i];
  const hlo_ints free_list = {n_free, free_dims};
  const hlo_ints *first = contracting_first ? contracting : &free_list;
  const hlo_ints *second = contracting_first ? &free_list : contracting;
  int64_t a = 1, b = 1;
  for (int i = 0; i < first->n; i++) {
    perm[n++] = first->v[i];
    a *= s->dims[first->v[i]];
  }
  for (int i = 0; i < second->n; i++) {
    perm[n++] = second->v[i];
    b *= s->dims[second->v[i]];
  }
  if (n != s->rank)
    return ERR_INVALID("dot-canonicalize: operand %s of rank %d has malformed dimension numbers", x->name, s->rank);
  bool identity = true;
  for (int i = 0; i < n; i++) identity = identity && perm[i] == i;
  hlo_instr *t = x;
  if (!identity) TRY(hlo_build_transpose(c, x, perm, &t));
  int64_t dims[HLO_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < batch->n; i++) dims[rank++] = s->dims[batch->v[i]];
  dims[rank++] = a;
  dims[rank++] = b;
  bool same = t->shape.rank == rank && memcmp(t->shape.dims, dims, (size_t)rank * sizeof dims[0]) == 0;
  if (same) {
    *out = t;
    return NULL;
  }
  return hlo_build_reshape(c, t, rank, dims, out);
}

static kiln_status canonicalize_dot(hlo_computation *c, hlo_instr *dot, hlo_instr **out) {
  const hlo_dot_dnums *dn = &dot->dot;
  if (dot->n_operands != 2 || dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n)
    return ERR_INVALID("dot-canonicalize: %s has malformed operands or dimension numbers", dot->name);
  int nb = dn->lhs_batch.n;
  hlo_instr *lhs, *rhs;
  TRY(canonical_operand(c, dot->operands[0], &dn->lhs_batch, &dn->lhs_contracting, false, &lhs));
  TRY(canonical_operand(c, dot->operands[1], &dn->rhs_batch, &dn->rhs_contracting, true, &rhs));
  int64_t batch_dims[HLO_MAX_RANK], lc = nb + 1, rc = nb;
  for (int i = 0; i < nb; i++) batch_dims[i] = i;
  hlo_instr *ops[2] = {lhs, rhs};
  hlo_instr tmpl = hlo_instr_template_from(dot, ops); /* keeps the preferred element type and raw attrs */
  tmpl.dot.lhs_batch = (hlo_ints){nb, batch_dims};
  tmpl.dot.rhs_batch = (hlo_ints){nb, batch_dims};
  tmpl.dot.lhs_contracting = (hlo_ints){1, &lc};
  tmpl.dot.rhs_contracting = (hlo_ints){1, &rc};
  hlo_instr *d;
  TRY(hlo_build_instr(c, &tmpl, &d));
  if (shape_same_dims(&d->shape, &dot->shape)) {
    *out = d;
    return NULL;
  }
  return hlo_build_reshape(c, d, dot->shape.rank, dot->shape.dims, out);
}

kiln_status hlo_pass_dot_canonicalize(hlo_module *m, bool *changed) {
  *changed = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    int n = c->n_instrs;
    bool any = false;
    for (int i = 0; i < n; i++) {
      hlo_instr *ins = c->instrs[i];
      if (ins->op != HLO_OP_DOT || (ins != c->root && hlo_instr_count_users(ins) == 0) || is_canonical(ins))
        continue;
      hlo_instr *repl = NULL;
      kiln_status st = canonicalize_dot(c, ins, &repl);
      if (st) {
        hlo_pass_restore_order(c);
        return status_wrap(st, "dot-canonicalize: %s in %s", ins->name, c->name);
      }
      if (!shape_compatible(&repl->shape, &ins->shape)) {
        hlo_pass_restore_order(c);
        return ERR_INTERNAL("dot-canonicalize: %s: rewrite produced a different shape", ins->name);
      }
      hlo_pass_replace_uses(c, ins, repl);
      any = true;
    }
    if (any || c->n_instrs != n) hlo_pass_restore_order(c);
    if (any) *changed = true;
  }
  return NULL;
}
