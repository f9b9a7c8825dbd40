/* Shared rewriting helpers for the HLO passes (see pass_util.h). Definition order is
 * restored with an explicit-stack DFS so deep chains cannot overflow the C stack. */
#include "hlo/passes/pass_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Builder-made replacements carry no layout; inheriting the replaced instruction's keeps
 * a dump with layouts uniformly annotated (layouts never change semantics). */
static void inherit_layout(const hlo_instr *from, hlo_instr *to) {
  if (shape_is_array(&to->shape) && !to->shape.has_layout && from->shape.has_layout &&
      from->shape.rank == to->shape.rank && to->op != HLO_OP_PARAMETER) {
    to->shape.has_layout = true;
    memcpy(to->shape.minor_to_major, from->shape.minor_to_major, sizeof to->shape.minor_to_major);
  }
}

int hlo_pass_replace_uses_many(hlo_computation *c, int n, hlo_instr *const *from, hlo_instr *const *to) {
  int max_id = 0, changed = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  for (int k = 0; k < n; k++)
    if (from[k]->id > max_id) max_id = from[k]->id;
  hlo_instr **repl = calloc((size_t)max_id + 1, sizeof *repl);
  if (!repl) abort();
  for (int k = 0; k < n; k++) {
    inherit_layout(from[k], to[k]);
    if (from[k]->id >= 0) repl[from[k]->id] = to[k];
  }
  for (int i = 0; i < c->n_instrs; i++) {
    hlo_instr *ins = c->instrs[i];
    for (int k = 0; k < ins->n_operands; k++) {
      int id = ins->operands[k]->id;
      hlo_instr *r = id >= 0 && id <= max_id ? repl[id] : NULL;
      if (r && r != ins) { /* never make a replacement its own operand */
        ins->operands[k] = r;
        changed++;
      }
    }
  }
  if (c->root && c->root->id >= 0 && c->root->id <= max_id && repl[c->root->id]) {
    c->root = repl[c->root->id];
    changed++;
  }
  free(repl);
  return changed;
}

int hlo_pass_replace_uses(hlo_computation *c, hlo_instr *from, hlo_instr *to) {
  int n = 0;
  inherit_layout(from, to);
  for (int i = 0; i < c->n_instrs; i++) {
    hlo_instr *ins = c->instrs[i];
    if (ins == to) continue; /* never make the replacement its own operand */
    for (int k = 0; k < ins->n_operands; k++)
      if (ins->operands[k] == from) {
        ins->operands[k] = to;
        n++;
      }
  }
  if (c->root == from) {
    c->root = to;
    n++;
  }
  return n;
}

void hlo_pass_restore_order(hlo_computation *c) {
  int n = c->n_instrs;
  if (n == 0) return;
  int max_id = 0;
  for (int i = 0; i < n; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  unsigned char *state = calloc((size_t)max_id + 1, 1); /* 0 new, 1 open, 2 placed */
  bool *member = calloc((size_t)max_id + 1, sizeof(bool));
  hlo_instr **out = malloc((size_t)n * sizeof *out);
  hlo_instr **stack = malloc((size_t)n * sizeof *stack);
  int *next_op = malloc((size_t)n * sizeof *next_op);
  if (!state || !member || !out || !stack || !next_op) abort();
  for (int i = 0; i < n; i++) member[c->instrs[i]->id] = true;
  int n_out = 0;
  for (int i = 0; i < n; i++) {
    if (state[c->instrs[i]->id]) continue;
    int sp = 0;
    stack[sp] = c->instrs[i];
    next_op[sp++] = 0;
    state[c->instrs[i]->id] = 1;
    while (sp) {
      hlo_instr *top = stack[sp - 1];
      if (next_op[sp - 1] < top->n_operands) {
        hlo_instr *op = top->operands[next_op[sp - 1]++];
        if (op->id < 0 || op->id > max_id || !member[op->id] || state[op->id]) continue;
        state[op->id] = 1;
        stack[sp] = op;
        next_op[sp++] = 0;
      } else {
        state[top->id] = 2;
        out[n_out++] = top;
        sp--;
      }
    }
  }
  memcpy(c->instrs, out, (size_t)n_out * sizeof *out);
  c->n_instrs = n_out;
  free(state);
  free(member);
  free(out);
  free(stack);
  free(next_op);
}

static bool comp_has_side_effect(const hlo_computation *c, int depth) {
  if (depth > 64) return true; /* absurd nesting (or a cycle): be conservative */
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (hlo_pass_has_side_effect(ins)) return true;
    for (int k = 0; k < ins->n_called; k++)
      if (comp_has_side_effect(ins->called[k], depth + 1)) return true;
  }
  return false;
}

bool hlo_pass_has_side_effect(const hlo_instr *ins) {
  switch (ins->op) {
    case HLO_OP_SEND: case HLO_OP_SEND_DONE: case HLO_OP_RECV: case HLO_OP_RECV_DONE:
    case HLO_OP_INFEED: case HLO_OP_OUTFEED:
    case HLO_OP_RNG: case HLO_OP_RNG_BIT_GENERATOR: case HLO_OP_RNG_GET_AND_UPDATE_STATE:
    case HLO_OP_CUSTOM_CALL:
    case HLO_OP_ALL_GATHER: case HLO_OP_ALL_REDUCE: case HLO_OP_ALL_TO_ALL:
    case HLO_OP_REDUCE_SCATTER: case HLO_OP_COLLECTIVE_PERMUTE:
    case HLO_OP_ASYNC_START: case HLO_OP_ASYNC_UPDATE: case HLO_OP_ASYNC_DONE:
    case HLO_OP_COPY_START: case HLO_OP_COPY_DONE:
    case HLO_OP_AFTER_ALL: case HLO_OP_ADD_DEPENDENCY:
    case HLO_OP_OPTIMIZATION_BARRIER: case HLO_OP_DOMAIN:
    case HLO_OP_REPLICA_ID: case HLO_OP_PARTITION_ID:
      return true;
    default:
      break;
  }
  for (int k = 0; k < ins->n_called; k++)
    if (comp_has_side_effect(ins->called[k], 0)) return true;
  return false;
}

bool hlo_pass_uniform_constant(const hlo_instr *ins, const hlo_literal **lit) {
  if (ins->op == HLO_OP_BROADCAST && ins->n_operands == 1) ins = ins->operands[0];
  if (ins->op != HLO_OP_CONSTANT || !ins->literal || !shape_is_array(&ins->literal->shape)) return false;
  const hlo_literal *l = ins->literal;
  if (l->n < 1) return false;
  size_t es = hlo_type_size(l->shape.type);
  const unsigned char *d = l->data;
  for (int64_t i = 1; i < l->n; i++)
    if (memcmp(d, d + (size_t)i * es, es) != 0) return false;
  *lit = l;
  return true;
}

bool hlo_pass_is_int_constant(const hlo_instr *ins, int64_t value) {
  const hlo_literal *l;
  if (!hlo_pass_uniform_constant(ins, &l)) return false;
  hlo_type t = l->shape.type;
  if (!hlo_type_is_int(t) && t != HLO_PRED) return false;
  if (hlo_type_is_unsigned_int(t)) return value >= 0 && literal_get_u64(l, 0) == (uint64_t)value;
  return literal_get_s64(l, 0) == value;
}

bool hlo_pass_is_float_constant(const hlo_instr *ins, double value, bool negative) {
  const hlo_literal *l;
  if (!hlo_pass_uniform_constant(ins, &l) || !hlo_type_is_float(l->shape.type)) return false;
  double v = literal_get_f64(l, 0);
  return v == value && (signbit(v) != 0) == negative;
}

kiln_status hlo_pass_rewrite_each(hlo_module *m, hlo_pass_rewrite_fn rewrite, bool *changed) {
  *changed = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    int n = c->n_instrs;
    bool any = false;
    for (int i = 0; i < n; i++) {
      hlo_instr *ins = c->instrs[i], *y = NULL;
      kiln_status s = rewrite(c, ins, &y);
      if (s) {
        kiln_status_free(s);
        continue;
      }
      if (!y) continue;
      hlo_pass_replace_uses(c, ins, y);
      any = true;
    }
    if (any || c->n_instrs != n) {
      hlo_pass_restore_order(c);
      *changed = true;
    }
  }
  return NULL;
}

bool hlo_pass_reducer_op(const hlo_computation *r, hlo_type t, hlo_opcode *op) {
  if (!r || r->n_params != 2 || !r->root || r->root->n_operands != 2) return false;
  const hlo_instr *root = r->root, *a = root->operands[0], *b = root->operands[1];
  if (a->op != HLO_OP_PARAMETER || b->op != HLO_OP_PARAMETER || a == b) return false;
  if (root->shape.rank != 0 || root->shape.type != t) return false;
  *op = root->op;
  return true;
}
