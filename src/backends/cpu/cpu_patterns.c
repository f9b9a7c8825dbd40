/* The activation and softmax patterns of cpu_patterns.h, matched on the instruction that
 * ends them, operands of commutative ops in either order. */
#include "backends/cpu/cpu_patterns.h"

#include <math.h>

#include "hlo/passes/pass_util.h"

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

cpu_activation cpu_match_activation(const hlo_instr *m, const hlo_instr **x, const hlo_instr **inner,
                                         int *n_inner) {
  *n_inner = 0;
  if (m->op != HLO_OP_MULTIPLY || m->n_operands != 2) return CPU_ACTIVATION_NONE;
  if (match_gelu(m, x, inner, n_inner)) return CPU_ACTIVATION_GELU;
  for (int k = 0; k < 2; k++) {
    const hlo_instr *v = m->operands[k], *g = m->operands[1 - k];
    if (g->op == HLO_OP_LOGISTIC && g->n_operands == 1 && g->operands[0] == v) {
      *x = v;
      inner[0] = g;
      *n_inner = 1;
      return CPU_ACTIVATION_SWISH;
    }
    const hlo_instr *ops[CPU_ACTIVATION_MAX_INNER];
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
    return CPU_ACTIVATION_HARDSWISH;
  }
  return CPU_ACTIVATION_NONE;
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

bool cpu_match_softmax(const hlo_instr *d, const hlo_instr **x, const hlo_instr **inner) {
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
