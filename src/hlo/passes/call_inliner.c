/* Call inlining, as XLA's CallInliner: every `call` instruction is replaced by a copy of
 * its to_apply computation's instructions in the caller — the callee's parameters become
 * the call's operands and the copy of the callee's root takes over the call's uses.
 * JAX emits one call per named function (jax.nn.relu, jnp.where, ...), and nothing
 * after this pass (the simplifiers, fusion, the cpu code generator) has to know about
 * calls. Computations are processed callees first, so a callee's own calls (nested
 * calls) are already inlined when it is copied into its callers, and a call inside a
 * while body or a reducer is inlined there like anywhere else. Copies go through the
 * builder (shape inference checks every one) and keep the original's shape, layout,
 * attributes and metadata; each gets a fresh module-unique name made from the
 * original's ("max.3" -> "max.57", the suffix being its id, as the builder's generated
 * names are). Every callee instruction is copied, dead ones and side-effecting ones
 * included, so inlining never drops an outfeed; DCE removes what is dead. Callees that
 * no computation reaches from the entry afterwards are removed from the module; a
 * callee also used by a reduce, map, sort, while or fusion stays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* The copy of each callee instruction (or the call operand standing for a parameter),
 * indexed by instruction id. The array grows with the module: inlining a callee's own
 * calls creates instructions after the pass began. */
typedef struct copy_map {
  hlo_instr **of;
  int cap;
} copy_map;

static void copy_map_reserve(copy_map *cm, int n) {
  if (n <= cm->cap) return;
  int cap = cm->cap ? cm->cap : 256;
  while (cap < n) cap *= 2;
  hlo_instr **of = realloc(cm->of, (size_t)cap * sizeof *of);
  if (!of) abort();
  memset(of + cm->cap, 0, (size_t)(cap - cm->cap) * sizeof *of);
  cm->of = of;
  cm->cap = cap;
}

/* A fresh name for the copy of `src`: its name without a trailing ".N", then ".ID"
 * with the id the copy is about to get; ".ID.K" in the rare case a name read from a
 * file already has that form. */
static const char *copy_name(hlo_module *m, const hlo_instr *src) {
  const char *name = src->name;
  size_t len = strlen(name), base = len;
  while (base > 0 && name[base - 1] >= '0' && name[base - 1] <= '9') base--;
  if (base > 1 && base < len && name[base - 1] == '.')
    base--;
  else
    base = len;
  const char *cand = arena_printf(m->arena, "%.*s.%d", (int)base, name, m->next_id);
  for (int k = 1; hlo_module_name_taken(m, cand, NULL); k++)
    cand = arena_printf(m->arena, "%.*s.%d.%d", (int)base, name, m->next_id, k);
  return cand;
}

/* Copies the body of call->called[0] into call's computation and redirects the call's
 * uses to the copy of the callee's root. The call itself is left, unused, for the
 * caller to drop. */
static kiln_status inline_call(hlo_instr *call, copy_map *cm) {
  hlo_computation *c = call->parent, *callee = call->called[0];
  hlo_module *m = c->module;
  if (call->n_operands != callee->n_params)
    return ERR_INVALID("call-inliner: call %s passes %d operands to %s, which has %d parameters", call->name,
                       call->n_operands, callee->name, callee->n_params);
  copy_map_reserve(cm, m->next_id + 1); /* every callee instruction's id is below next_id */
  for (int k = 0; k < callee->n_params; k++) cm->of[callee->params[k]->id] = call->operands[k];
  kiln_status st = NULL;
  int max_ops = 1;
  for (int i = 0; i < callee->n_instrs; i++)
    if (callee->instrs[i]->n_operands > max_ops) max_ops = callee->instrs[i]->n_operands;
  hlo_instr **ops = malloc((size_t)max_ops * sizeof *ops);
  if (!ops) abort();
  for (int i = 0; i < callee->n_instrs && !st; i++) {
    hlo_instr *src = callee->instrs[i];
    if (src->op == HLO_OP_PARAMETER) continue;
    for (int k = 0; k < src->n_operands && !st; k++) {
      const hlo_instr *o = src->operands[k];
      ops[k] = o->id >= 0 && o->id < cm->cap ? cm->of[o->id] : NULL;
      if (!ops[k] || o->parent != callee)
        st = ERR_INVALID("call-inliner: %s in %s: operand %d (%s) is not defined before it", src->name, callee->name,
                         k, o->name);
    }
    if (st) break;
    hlo_instr tmpl = hlo_instr_template_from(src, ops);
    tmpl.name = copy_name(m, src);
    if (src->literal) tmpl.literal = literal_clone(src->literal); /* the builder takes it over */
    hlo_instr *copy = NULL;
    st = hlo_build_instr(c, &tmpl, &copy);
    if (st) {
      st = status_wrap(st, "call-inliner: copying %s of %s into %s", src->name, callee->name, c->name);
      break;
    }
    /* The builder infers a shape without a layout; the copy is the same value, so it
     * keeps the original's shape as written. */
    copy->shape = shape_clone(m->arena, &src->shape);
    cm->of[src->id] = copy;
  }
  free(ops);
  if (!st) {
    hlo_instr *result = cm->of[callee->root->id];
    hlo_pass_replace_uses(c, call, result);
  }
  for (int i = 0; i < callee->n_instrs; i++)
    if (callee->instrs[i]->id >= 0 && callee->instrs[i]->id < cm->cap) cm->of[callee->instrs[i]->id] = NULL;
  return st;
}

/* Inlines every call of c; returns through *n how many. */
static kiln_status inline_calls_of(hlo_computation *c, copy_map *cm, bool *was_callee, int *n) {
  hlo_module *m = c->module;
  *n = 0;
  int n_before = c->n_instrs; /* copies are appended after these; callees have no calls left */
  for (int i = 0; i < n_before; i++) {
    hlo_instr *ins = c->instrs[i];
    if (ins->op != HLO_OP_CALL) continue;
    if (ins->n_called != 1 || !ins->called[0])
      return ERR_INVALID("call-inliner: call %s in %s has %d called computations, not 1", ins->name, c->name,
                         ins->n_called);
    for (int k = 0; k < m->n_comps; k++)
      if (m->comps[k] == ins->called[0]) was_callee[k] = true;
    TRY(inline_call(ins, cm));
    (*n)++;
  }
  if (!*n) return NULL;
  int w = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (i >= n_before || c->instrs[i]->op != HLO_OP_CALL) c->instrs[w++] = c->instrs[i];
  c->n_instrs = w;
  hlo_pass_restore_order(c); /* the copies went to the end, after the call's users */
  return NULL;
}

/* Removes the computations marked in was_callee that nothing reachable from the entry
 * calls any more (m->comps is not reordered otherwise). */
static void remove_unreachable_callees(hlo_module *m, const bool *was_callee) {
  int n = m->n_comps;
  bool *reached = calloc((size_t)n + 1, sizeof *reached);
  int *work = calloc((size_t)n + 1, sizeof *work);
  if (!reached || !work) abort();
  int n_work = 0;
  for (int i = 0; i < n; i++)
    if (m->comps[i] == m->entry || !was_callee[i]) {
      reached[i] = true; /* the entry, and computations this pass has no business removing */
      work[n_work++] = i;
    }
  while (n_work) {
    const hlo_computation *c = m->comps[work[--n_work]];
    for (int i = 0; i < c->n_instrs; i++)
      for (int k = 0; k < c->instrs[i]->n_called; k++)
        for (int j = 0; j < n; j++)
          if (m->comps[j] == c->instrs[i]->called[k] && !reached[j]) {
            reached[j] = true;
            work[n_work++] = j;
          }
  }
  int w = 0;
  for (int i = 0; i < n; i++)
    if (reached[i]) m->comps[w++] = m->comps[i];
  m->n_comps = w;
  free(reached);
  free(work);
}

kiln_status hlo_pass_call_inliner(hlo_module *m, bool *changed) {
  *changed = false;
  bool any = false;
  for (int i = 0; i < m->n_comps && !any; i++)
    for (int j = 0; j < m->comps[i]->n_instrs && !any; j++) any = m->comps[i]->instrs[j]->op == HLO_OP_CALL;
  if (!any) return NULL;
  /* Callees first (an error here is a call cycle, which no valid module has). */
  TRY(status_wrap(hlo_build_order_computations(m), "call-inliner"));
  copy_map cm = {NULL, 0};
  bool *was_callee = calloc((size_t)m->n_comps + 1, sizeof *was_callee);
  if (!was_callee) abort();
  kiln_status st = NULL;
  int total = 0;
  for (int i = 0; i < m->n_comps && !st; i++) {
    int n = 0;
    st = inline_calls_of(m->comps[i], &cm, was_callee, &n);
    total += n;
  }
  if (!st && total) remove_unreachable_callees(m, was_callee);
  free(was_callee);
  free(cm.of);
  *changed = total > 0;
  return st;
}
