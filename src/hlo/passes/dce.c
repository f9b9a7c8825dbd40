/* Dead code elimination, as XLA's HloDCE: an instruction survives if the root of its
 * computation depends on it, if it is a parameter (parameters are the signature), or if
 * it has a side effect (send/recv, infeed/outfeed, rng, custom-calls marked
 * custom_call_has_side_effect=true, and calls/whiles/conditionals whose callees contain
 * any of these) — removing those would change what the program does even though no value
 * flows out of them. Computations that no surviving instruction reaches from the entry
 * are then dropped from the module (their memory stays in the module's arena until the
 * module is freed, which is how every IR object is released). */
#include <stdlib.h>
#include <string.h>

#include "hlo/passes/pipeline.h"

enum { SE_UNKNOWN = 0, SE_VISITING, SE_NO, SE_YES };

static int comp_index(const hlo_module *m, const hlo_computation *c) {
  for (int i = 0; i < m->n_comps; i++)
    if (m->comps[i] == c) return i;
  return -1;
}

static bool comp_has_side_effect(const hlo_module *m, const hlo_computation *c, unsigned char *memo);

static bool instr_has_side_effect(const hlo_module *m, const hlo_instr *ins, unsigned char *memo) {
  switch (ins->op) {
    case HLO_OP_SEND:
    case HLO_OP_SEND_DONE:
    case HLO_OP_RECV:
    case HLO_OP_RECV_DONE:
    case HLO_OP_INFEED:
    case HLO_OP_OUTFEED:
    case HLO_OP_RNG:
    case HLO_OP_RNG_GET_AND_UPDATE_STATE:
      return true;
    case HLO_OP_CUSTOM_CALL:
      for (int i = 0; i < ins->n_raw_attrs; i++)
        if (strcmp(ins->raw_attrs[i].key, "custom_call_has_side_effect") == 0 &&
            strcmp(ins->raw_attrs[i].value, "true") == 0)
          return true;
      break;
    default:
      break;
  }
  for (int k = 0; k < ins->n_called; k++)
    if (comp_has_side_effect(m, ins->called[k], memo)) return true;
  return false;
}

static bool comp_has_side_effect(const hlo_module *m, const hlo_computation *c, unsigned char *memo) {
  int idx = comp_index(m, c);
  if (idx < 0) return false;
  if (memo[idx] == SE_YES) return true;
  if (memo[idx] != SE_UNKNOWN) return false; /* SE_NO, or a call cycle (invalid HLO) */
  memo[idx] = SE_VISITING;
  bool yes = false;
  for (int i = 0; i < c->n_instrs && !yes; i++) yes = instr_has_side_effect(m, c->instrs[i], memo);
  memo[idx] = yes ? SE_YES : SE_NO;
  return yes;
}

/* Removes dead instructions of c; returns how many. */
static int remove_dead_instrs(const hlo_module *m, hlo_computation *c, bool *live, unsigned char *memo) {
  /* instrs are in definition order, so one reverse sweep sees every user before its
   * operands. */
  for (int i = 0; i < c->n_instrs; i++) live[c->instrs[i]->id] = false;
  for (int i = c->n_instrs - 1; i >= 0; i--) {
    hlo_instr *ins = c->instrs[i];
    if (ins == c->root || ins->op == HLO_OP_PARAMETER || instr_has_side_effect(m, ins, memo)) live[ins->id] = true;
    if (!live[ins->id]) continue;
    for (int k = 0; k < ins->n_operands; k++) live[ins->operands[k]->id] = true;
  }
  int w = 0, removed = 0;
  for (int i = 0; i < c->n_instrs; i++) {
    if (live[c->instrs[i]->id])
      c->instrs[w++] = c->instrs[i];
    else
      removed++;
  }
  c->n_instrs = w;
  return removed;
}

/* Drops computations that no instruction reachable from the entry calls. */
static int remove_unreachable_computations(hlo_module *m) {
  if (!m->entry || m->n_comps == 0) return 0;
  bool *reached = calloc((size_t)m->n_comps, sizeof(bool));
  hlo_computation **work = calloc((size_t)m->n_comps, sizeof *work);
  if (!reached || !work) abort();
  int n_work = 0;
  int entry = comp_index(m, m->entry);
  if (entry < 0) {
    free(reached);
    free(work);
    return 0;
  }
  reached[entry] = true;
  work[n_work++] = m->entry;
  while (n_work) {
    hlo_computation *c = work[--n_work];
    for (int i = 0; i < c->n_instrs; i++) {
      const hlo_instr *ins = c->instrs[i];
      for (int k = 0; k < ins->n_called; k++) {
        int idx = comp_index(m, ins->called[k]);
        if (idx >= 0 && !reached[idx]) {
          reached[idx] = true;
          work[n_work++] = ins->called[k];
        }
      }
    }
  }
  int w = 0, removed = 0;
  for (int i = 0; i < m->n_comps; i++) {
    if (reached[i])
      m->comps[w++] = m->comps[i];
    else
      removed++;
  }
  m->n_comps = w;
  free(reached);
  free(work);
  return removed;
}

kiln_status hlo_pass_dce(hlo_module *m, bool *changed) {
  *changed = false;
  /* Sized by the largest id present rather than next_id, so a module built by hand with
   * odd ids cannot index past the array. */
  int max_id = m->next_id;
  for (int i = 0; i < m->n_comps; i++)
    for (int k = 0; k < m->comps[i]->n_instrs; k++)
      if (m->comps[i]->instrs[k]->id > max_id) max_id = m->comps[i]->instrs[k]->id;
  bool *live = calloc((size_t)max_id + 1, sizeof(bool));
  unsigned char *memo = calloc((size_t)m->n_comps + 1, 1);
  if (!live || !memo) abort();
  int removed = 0;
  for (int i = 0; i < m->n_comps; i++) removed += remove_dead_instrs(m, m->comps[i], live, memo);
  free(live);
  free(memo);
  removed += remove_unreachable_computations(m);
  *changed = removed > 0;
  return NULL;
}
