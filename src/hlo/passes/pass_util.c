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

/* The operand of binary `b` that is not the float constant `value` (either order). */
static const hlo_instr *other_than_constant(const hlo_instr *b, double value) {
  if (b->n_operands != 2) return NULL;
  for (int k = 0; k < 2; k++)
    if (hlo_pass_is_float_constant(b->operands[1 - k], value, false)) return b->operands[k];
  return NULL;
}

/* The value g clamps to [0, 1], or NULL; records the clamp's instructions (outer first). */
static const hlo_instr *unit_clamp_input(const hlo_instr *g, const hlo_instr **ops, int *n) {
  if (g->op == HLO_OP_CLAMP && g->n_operands == 3 && hlo_pass_is_float_constant(g->operands[0], 0.0, false) &&
      hlo_pass_is_float_constant(g->operands[2], 1.0, false)) {
    ops[(*n)++] = g;
    return g->operands[1];
  }
  hlo_opcode outer = g->op, inner = outer == HLO_OP_MAXIMUM ? HLO_OP_MINIMUM : HLO_OP_MAXIMUM;
  if (outer != HLO_OP_MAXIMUM && outer != HLO_OP_MINIMUM) return NULL;
  const hlo_instr *h = other_than_constant(g, outer == HLO_OP_MAXIMUM ? 0.0 : 1.0);
  if (!h || h->op != inner) return NULL;
  const hlo_instr *a = other_than_constant(h, inner == HLO_OP_MAXIMUM ? 0.0 : 1.0);
  if (!a) return NULL;
  ops[(*n)++] = g;
  ops[(*n)++] = h;
  return a;
}

/* GELU (erf form) as PyTorch exports it: m = (x * (erf(x / sqrt2) + 1)) * 0.5. */
static bool match_gelu(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner, int *n_inner) {
  const hlo_instr *m1 = other_than_constant(m, 0.5);
  if (!m1 || m1->op != HLO_OP_MULTIPLY || m1->n_operands != 2) return false;
  for (int k = 0; k < 2; k++) {
    const hlo_instr *v = m1->operands[k], *a = m1->operands[1 - k];
    if (a->op != HLO_OP_ADD) continue;
    const hlo_instr *e = other_than_constant(a, 1.0);
    if (!e || e->op != HLO_OP_ERF || e->n_operands != 1) continue;
    const hlo_instr *d = e->operands[0];
    bool scaled = (d->op == HLO_OP_DIVIDE && d->n_operands == 2 && d->operands[0] == v &&
                   hlo_pass_is_float_constant(d->operands[1], (double)(float)M_SQRT2, false)) ||
                  (d->op == HLO_OP_MULTIPLY && other_than_constant(d, (double)(float)M_SQRT1_2) == v);
    if (!scaled) continue;
    *x = v;
    inner[0] = d, inner[1] = e, inner[2] = a, inner[3] = m1;
    *n_inner = 4;
    return true;
  }
  return false;
}

hlo_activation hlo_pass_match_activation(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner,
                                         int *n_inner) {
  *n_inner = 0;
  if (m->op != HLO_OP_MULTIPLY || m->n_operands != 2) return HLO_ACTIVATION_NONE;
  if (match_gelu(m, x, inner, n_inner)) return HLO_ACTIVATION_GELU;
  for (int k = 0; k < 2; k++) {
    const hlo_instr *v = m->operands[k], *g = m->operands[1 - k];
    if (g->op == HLO_OP_LOGISTIC && g->n_operands == 1 && g->operands[0] == v) {
      *x = v;
      inner[0] = g;
      *n_inner = 1;
      return HLO_ACTIVATION_SWISH;
    }
    const hlo_instr *ops[HLO_ACTIVATION_MAX_INNER];
    int n = 0;
    const hlo_instr *a = unit_clamp_input(g, ops, &n);
    if (!a || a->op != HLO_OP_ADD) continue;
    const hlo_instr *s = other_than_constant(a, 0.5);
    if (!s || s->op != HLO_OP_MULTIPLY || other_than_constant(s, (double)(1.0f / 6.0f)) != v) continue;
    ops[n++] = a;
    ops[n++] = s;
    *x = v;
    for (int i = 0; i < n; i++) inner[i] = ops[n - 1 - i]; /* the one reading x first */
    *n_inner = n;
    return HLO_ACTIVATION_HARDSWISH;
  }
  return HLO_ACTIVATION_NONE;
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

/* A reduce of x over exactly its last dim with the given reducer and init. */
static bool reduces_last_dim(const hlo_instr *r, const hlo_instr *x, hlo_opcode op, double init, bool negative) {
  hlo_opcode got;
  return r->op == HLO_OP_REDUCE && r->n_operands == 2 && r->n_called == 1 && r->operands[0] == x &&
         r->dimensions.n == 1 && r->dimensions.v[0] == x->shape.rank - 1 &&
         hlo_pass_reducer_op(r->called[0], HLO_F32, &got) && got == op &&
         r->operands[1]->shape.rank == 0 && hlo_pass_is_float_constant(r->operands[1], init, negative);
}

/* A broadcast of r back over every dim of `like` but the last. */
static bool broadcasts_back(const hlo_instr *b, const hlo_instr *r, const hlo_instr *like) {
  if (b->op != HLO_OP_BROADCAST || b->n_operands != 1 || b->operands[0] != r) return false;
  if (!shape_same_dims(&b->shape, &like->shape) || b->dimensions.n != like->shape.rank - 1) return false;
  for (int i = 0; i < b->dimensions.n; i++)
    if (b->dimensions.v[i] != i) return false;
  return true;
}

bool hlo_pass_match_softmax(const hlo_instr *d, const hlo_instr **x, const hlo_instr **inner) {
  if (d->op != HLO_OP_DIVIDE || d->n_operands != 2 || d->shape.type != HLO_F32 || d->shape.rank < 1 ||
      d->shape.n_elems != 0)
    return false;
  const hlo_instr *e = d->operands[0], *bs = d->operands[1];
  if (e->op != HLO_OP_EXP || e->n_operands != 1 || bs->op != HLO_OP_BROADCAST || bs->n_operands != 1) return false;
  const hlo_instr *s = bs->operands[0], *sub = e->operands[0];
  if (!reduces_last_dim(s, e, HLO_OP_ADD, 0.0, false) || !broadcasts_back(bs, s, d)) return false;
  if (sub->op != HLO_OP_SUBTRACT || sub->n_operands != 2) return false;
  const hlo_instr *v = sub->operands[0], *bm = sub->operands[1];
  if (bm->op != HLO_OP_BROADCAST || bm->n_operands != 1 || v->shape.type != HLO_F32) return false;
  const hlo_instr *m = bm->operands[0];
  if (!reduces_last_dim(m, v, HLO_OP_MAXIMUM, -INFINITY, true) || !broadcasts_back(bm, m, d)) return false;
  *x = v;
  inner[0] = m, inner[1] = bm, inner[2] = sub, inner[3] = e, inner[4] = s, inner[5] = bs;
  return true;
}
