/* XLA's optimised CPU modules carry top-k as custom-call(x), custom_call_target="TopK"
 * with a comparator computation (what XLA's TopkRewriter makes of sort + slice); the
 * unoptimised ones as the HLO `topk` instruction. Both mean: along the last dimension,
 * the first k elements of x in the comparator's order, with their s32 indices, ties in
 * index order. When the comparator is the plain "greater than" (or "less than") of the
 * two values -- in total order for floats, where NaN counts as the largest value, which
 * is what kiln's topk implements -- the custom-call is exactly topk(x, k, largest), and
 * it is rewritten into it in place, so every backend that runs topk runs it. Any other
 * comparator (XLA's optimiser writes total order as integer compares of bitcast keys)
 * becomes what TopK means literally: a stable sort of (x, iota) along the last dimension
 * with that comparator (its parameters are value lhs/rhs then index lhs/rhs, as a sort
 * comparator's), sliced to the first k. */
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* tuple(slice(sort(x, iota)...)) for topk custom-call t. */
static kiln_status sort_and_slice(hlo_computation *c, hlo_instr *t, hlo_instr **out) {
  hlo_instr *x = t->operands[0];
  const hlo_shape *xs = &x->shape;
  int last = xs->rank - 1;
  hlo_shape is = *xs;
  is.type = HLO_S32;
  hlo_instr *iota, *sorted, *parts[2], *sliced[2];
  TRY(hlo_build_iota(c, &is, last, &iota));
  hlo_instr *ops[2] = {x, iota};
  TRY(hlo_build_sort(c, 2, ops, last, true, t->called[0], &sorted));
  int64_t start[HLO_MAX_RANK] = {0}, limit[HLO_MAX_RANK];
  for (int d = 0; d < xs->rank; d++) limit[d] = t->shape.elems[0].dims[d];
  for (int k = 0; k < 2; k++) {
    TRY(hlo_build_get_tuple_element(c, sorted, k, &parts[k]));
    TRY(hlo_build_slice(c, parts[k], start, limit, NULL, &sliced[k]));
  }
  return hlo_build_tuple(c, 2, sliced, out);
}

/* Whether c compares its first two parameters (the values) as GT or LT, in total order
 * for floats; sets *largest. */
static bool plain_value_order(const hlo_computation *c, hlo_type t, bool *largest) {
  if (!c || c->n_params < 2 || !c->root || c->root->op != HLO_OP_COMPARE || c->root->n_operands != 2) return false;
  const hlo_instr *a = c->root->operands[0], *b = c->root->operands[1];
  if (a->op != HLO_OP_PARAMETER || b->op != HLO_OP_PARAMETER || a->shape.type != t) return false;
  bool forward = a->parameter_number == 0 && b->parameter_number == 1;
  bool backward = a->parameter_number == 1 && b->parameter_number == 0;
  if (!forward && !backward) return false;
  if (hlo_type_is_float(t) && c->root->compare_type != HLO_CMP_TOTALORDER) return false;
  if (c->root->direction != HLO_DIR_GT && c->root->direction != HLO_DIR_LT) return false;
  *largest = (c->root->direction == HLO_DIR_GT) == forward;
  return true;
}

static bool is_topk_call(const hlo_instr *ins) {
  if (ins->op != HLO_OP_CUSTOM_CALL || !ins->custom_call_target || strcmp(ins->custom_call_target, "TopK") != 0 ||
      ins->n_operands != 1 || ins->n_called != 1 || !ins->called[0])
    return false;
  const hlo_shape *x = &ins->operands[0]->shape, *s = &ins->shape;
  if (!shape_is_array(x) || x->rank < 1 || !shape_is_tuple(s) || s->n_elems != 2) return false;
  const hlo_shape *v = &s->elems[0], *idx = &s->elems[1];
  if (!shape_is_array(v) || !shape_is_array(idx) || v->type != x->type || idx->type != HLO_S32 ||
      v->rank != x->rank || !shape_same_dims(v, idx) || v->dims[v->rank - 1] > x->dims[x->rank - 1])
    return false;
  for (int d = 0; d + 1 < x->rank; d++)
    if (v->dims[d] != x->dims[d]) return false;
  return true;
}

kiln_status hlo_pass_topk_custom_call(hlo_module *m, bool *changed) {
  *changed = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    /* Found first: rewriting appends instructions and reorders the list. */
    int n = 0;
    hlo_instr **found = malloc(((size_t)c->n_instrs + 1) * sizeof *found);
    if (!found) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < c->n_instrs; i++)
      if (is_topk_call(c->instrs[i])) found[n++] = c->instrs[i];
    kiln_status st = NULL;
    bool reorder = false;
    for (int f = 0; f < n && !st; f++) {
      hlo_instr *ins = found[f];
      const hlo_computation *cmp = ins->called[0];
      bool largest;
      if (plain_value_order(cmp, ins->operands[0]->shape.type, &largest)) {
        ins->op = HLO_OP_TOPK;
        ins->k = ins->shape.elems[0].dims[ins->shape.elems[0].rank - 1];
        ins->largest = largest;
        ins->custom_call_target = NULL;
        hlo_instr_set_called(ins, 0, NULL);
        *changed = true;
      } else if (cmp->n_params == 4 && shape_is_array(&cmp->root->shape) && cmp->root->shape.type == HLO_PRED) {
        hlo_instr *repl;
        st = sort_and_slice(c, ins, &repl);
        if (!st) {
          hlo_pass_replace_uses(c, ins, repl);
          reorder = *changed = true;
        }
      }
    }
    free(found);
    if (reorder) hlo_pass_restore_order(c);
    if (st) return st;
  }
  return NULL;
}
