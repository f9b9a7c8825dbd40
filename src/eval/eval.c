/* The evaluator's core: argument checking, the walk over a computation, the opcode ->
 * kernel table, and the control-flow and plumbing ops (parameter, constant, tuple,
 * get-tuple-element, call, fusion, map, while, conditional, bitcast, pass-throughs).
 *
 * A computation runs from a plan built once per computation and cached in the eval_ctx
 * (operand positions, which instructions the root needs, how many users each value
 * has), so called computations that run millions of times (reducers, map bodies, loop
 * bodies) pay no setup. Each value lives in a slot with a remaining-use count and is
 * freed right after its last user ran, which keeps memory proportional to the live
 * values rather than to the graph. Ownership is tracked so that plumbing ops move
 * values instead of copying them: a tuple or while loop takes an operand it is the last
 * user of, get-tuple-element aliases into its tuple (the tuple stays alive while an
 * alias does), and a called computation may take over an argument the caller no longer
 * needs — a loop state is thus passed around, not cloned, every iteration.
 * Instructions the root does not depend on are never run, as in XLA's evaluator. */
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "eval/eval_internal.h"
#include "hlo/lapack_call.h"

/* A stack guard only: the verifier already rejects recursive call graphs. Each level
 * costs a few kilobytes of C stack (more under ASan); 512 levels fit the default 8 MiB
 * stack with a wide margin while allowing any realistic nesting. */
#define EVAL_MAX_DEPTH 512

/* ------------------------------------------------------------------ plans ------ */

typedef struct eval_plan {
  const hlo_computation *comp;
  int n;          /* instructions */
  int root;       /* position of the root */
  int n_params;
  int *param_pos; /* by parameter number */
  int *op_start;  /* n + 1 offsets into op_pos */
  int *op_pos;    /* operand positions, instruction by instruction */
  int *uses;      /* users among needed instructions (+1 on the root for the result) */
  bool *live;     /* needed by the root */
} eval_plan;

struct eval_plan_cache {
  int cap, count;
  eval_plan **items; /* open addressing on the computation pointer */
};

static void plan_free(eval_plan *p) {
  if (!p) return;
  free(p->param_pos);
  free(p->op_start);
  free(p->op_pos);
  free(p->uses);
  free(p->live);
  free(p);
}

static kiln_status plan_build(const hlo_computation *c, eval_plan **out) {
  *out = NULL;
  int n = c->n_instrs;
  if (n <= 0) return ERR_INVALID("computation %s has no instructions", c->name);
  eval_plan *p = calloc(1, sizeof *p);
  if (!p) abort();
  p->comp = c;
  p->n = n;
  int min_id = c->instrs[0]->id, max_id = min_id, total_ops = 0;
  for (int i = 0; i < n; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->id < min_id) min_id = ins->id;
    if (ins->id > max_id) max_id = ins->id;
    total_ops += ins->n_operands;
  }
  /* Instruction ids are dense per module, so an id-indexed table is small. */
  int range = max_id - min_id + 1;
  int *pos_of = malloc((size_t)range * sizeof *pos_of);
  p->op_start = malloc((size_t)(n + 1) * sizeof(int));
  p->op_pos = malloc((size_t)(total_ops ? total_ops : 1) * sizeof(int));
  p->uses = calloc((size_t)n, sizeof(int));
  p->live = calloc((size_t)n, sizeof(bool));
  if (!pos_of || !p->op_start || !p->op_pos || !p->uses || !p->live) abort();
  for (int i = 0; i < range; i++) pos_of[i] = -1;
  for (int i = 0; i < n; i++) pos_of[c->instrs[i]->id - min_id] = i;

  kiln_status st = NULL;
  const hlo_instr *root = c->root ? c->root : c->instrs[n - 1];
  p->root = (root->id >= min_id && root->id <= max_id) ? pos_of[root->id - min_id] : -1;
  if (p->root < 0 || c->instrs[p->root] != root) {
    st = ERR_INVALID("computation %s: root %s is not one of its instructions", c->name, root->name);
    goto fail;
  }
  int k = 0;
  for (int i = 0; i < n && !st; i++) {
    const hlo_instr *ins = c->instrs[i];
    p->op_start[i] = k;
    for (int j = 0; j < ins->n_operands; j++) {
      const hlo_instr *o = ins->operands[j];
      int q = (o && o->id >= min_id && o->id <= max_id) ? pos_of[o->id - min_id] : -1;
      if (q < 0 || c->instrs[q] != o) {
        st = ERR_INVALID("computation %s: %s uses %s, which is not an instruction of this computation", c->name,
                         ins->name, o ? o->name : "(null)");
        break;
      }
      if (q >= i) {
        st = ERR_INVALID("computation %s: %s uses %s before it is defined", c->name, ins->name, o->name);
        break;
      }
      p->op_pos[k++] = q;
    }
  }
  if (st) goto fail;
  p->op_start[n] = k;

  p->live[p->root] = true;
  for (int i = n - 1; i >= 0; i--) {
    if (!p->live[i]) continue;
    for (int j = p->op_start[i]; j < p->op_start[i + 1]; j++) {
      p->live[p->op_pos[j]] = true;
      p->uses[p->op_pos[j]]++;
    }
  }
  p->uses[p->root]++;

  for (int i = 0; i < n; i++)
    if (c->instrs[i]->op == HLO_OP_PARAMETER) p->n_params++;
  p->param_pos = malloc((size_t)(p->n_params ? p->n_params : 1) * sizeof(int));
  if (!p->param_pos) abort();
  for (int i = 0; i < p->n_params; i++) p->param_pos[i] = -1;
  for (int i = 0; i < n; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->op != HLO_OP_PARAMETER) continue;
    int64_t num = ins->parameter_number;
    if (num < 0 || num >= p->n_params || p->param_pos[num] >= 0) {
      st = ERR_INVALID("computation %s: parameter %s has number %lld; numbers must be 0..%d without repeats", c->name,
                       ins->name, (long long)num, p->n_params - 1);
      goto fail;
    }
    p->param_pos[num] = i;
  }
  free(pos_of);
  *out = p;
  return NULL;
fail:
  free(pos_of);
  plan_free(p);
  return st;
}

static size_t cache_hash(const void *ptr, int cap) {
  uintptr_t v = (uintptr_t)ptr;
  v ^= v >> 17;
  v *= (uintptr_t)0x9e3779b97f4a7c15ull;
  return (size_t)(v >> 7) & (size_t)(cap - 1);
}

static eval_plan *cache_find(const struct eval_plan_cache *pc, const hlo_computation *c) {
  if (!pc || !pc->cap) return NULL;
  for (size_t h = cache_hash(c, pc->cap);; h = (h + 1) & (size_t)(pc->cap - 1)) {
    eval_plan *p = pc->items[h];
    if (!p) return NULL;
    if (p->comp == c) return p;
  }
}

static void cache_insert(struct eval_plan_cache *pc, eval_plan *p) {
  if ((pc->count + 1) * 2 > pc->cap) {
    int ncap = pc->cap ? pc->cap * 2 : 16;
    eval_plan **ni = calloc((size_t)ncap, sizeof *ni);
    if (!ni) abort();
    for (int i = 0; i < pc->cap; i++) {
      eval_plan *q = pc->items[i];
      if (!q) continue;
      size_t h = cache_hash(q->comp, ncap);
      while (ni[h]) h = (h + 1) & (size_t)(ncap - 1);
      ni[h] = q;
    }
    free(pc->items);
    pc->items = ni;
    pc->cap = ncap;
  }
  size_t h = cache_hash(p->comp, pc->cap);
  while (pc->items[h]) h = (h + 1) & (size_t)(pc->cap - 1);
  pc->items[h] = p;
  pc->count++;
}

static void cache_free(struct eval_plan_cache *pc) {
  for (int i = 0; i < pc->cap; i++) plan_free(pc->items[i]);
  free(pc->items);
  pc->items = NULL;
  pc->cap = pc->count = 0;
}

/* ------------------------------------------------------------------ slots ------ */

/* One value of the running computation. An alias (parent >= 0) points into its
 * parent's tuple and holds one use of the parent; it never owns its literal. */
typedef struct eval_slot {
  hlo_literal *lit;
  int uses;
  int parent;
  bool owned;
} eval_slot;

static void slot_release(eval_slot *s, int i) {
  while (i >= 0) {
    if (--s[i].uses > 0) return;
    if (s[i].owned) literal_free(s[i].lit);
    s[i].lit = NULL;
    s[i].owned = false;
    int parent = s[i].parent;
    s[i].parent = -1;
    i = parent;
  }
}

/* Whether alias chain starting at parent p is held only by the one alias being taken
 * and ends in an owned value, so that detaching the element harms no one. */
static bool chain_exclusive(const eval_slot *s, int p) {
  while (p >= 0) {
    if (s[p].uses != 1) return false;
    if (s[p].owned) return true;
    p = s[p].parent;
  }
  return false;
}

/* Moves slot i's value out when the current instruction is its last user and nobody
 * else can see it; NULL otherwise. */
static hlo_literal *slot_steal(eval_slot *s, int i) {
  eval_slot *x = &s[i];
  if (x->uses != 1 || !x->lit) return NULL;
  if (x->owned) {
    hlo_literal *l = x->lit;
    x->lit = NULL;
    x->owned = false;
    return l;
  }
  if (x->parent >= 0 && chain_exclusive(s, x->parent)) {
    hlo_literal *t = s[x->parent].lit;
    for (int k = 0; k < t->shape.n_elems; k++) {
      if (t->tuple[k] == x->lit) {
        t->tuple[k] = NULL;
        hlo_literal *l = x->lit;
        x->lit = NULL;
        return l;
      }
    }
  }
  return NULL;
}

/* How a plumbing kernel reaches its operands: through slots (can move) or through a
 * plain borrowed array (must copy), so the same code serves the walk and the table. */
typedef struct eval_operands {
  eval_slot *slots;
  const int *pos;
  hlo_literal *const *borrowed;
} eval_operands;

static hlo_literal *opnd_get(const eval_operands *a, int k) {
  return a->slots ? a->slots[a->pos[k]].lit : a->borrowed[k];
}

/* An owned copy of operand k (moved when possible). */
static hlo_literal *opnd_take(const eval_operands *a, int k) {
  if (a->slots) {
    hlo_literal *l = slot_steal(a->slots, a->pos[k]);
    if (l) return l;
  }
  return literal_clone(opnd_get(a, k));
}

/* Operand k moved (*owned = true) or borrowed (*owned = false), never copied. */
static hlo_literal *opnd_take_or_borrow(const eval_operands *a, int k, bool *owned) {
  if (a->slots) {
    hlo_literal *l = slot_steal(a->slots, a->pos[k]);
    if (l) {
      *owned = true;
      return l;
    }
  }
  *owned = false;
  return opnd_get(a, k);
}

/* ------------------------------------------------------------------ calls ------ */

static char *shape_str(const hlo_shape *s) {
  strbuf b;
  strbuf_init(&b);
  shape_print(&b, s, false);
  return strbuf_take(&b);
}

static void free_owned_args(hlo_literal *const *args, const bool *owned, int n) {
  if (!owned) return;
  for (int i = 0; i < n; i++)
    if (owned[i]) literal_free(args[i]);
}

static kiln_status check_args(const hlo_computation *c, const eval_plan *p, hlo_literal *const *args, int n_args) {
  if (n_args != p->n_params)
    return ERR_INVALID("computation %s takes %d argument%s, given %d", c->name, p->n_params,
                       p->n_params == 1 ? "" : "s", n_args);
  for (int i = 0; i < n_args; i++) {
    const hlo_instr *param = c->instrs[p->param_pos[i]];
    if (!args[i]) return ERR_INVALID("computation %s: argument %d (parameter %s) is missing", c->name, i, param->name);
    if (shape_compatible(&args[i]->shape, &param->shape)) continue;
    char *want = shape_str(&param->shape), *got = shape_str(&args[i]->shape);
    kiln_status st = ERR_INVALID("computation %s: argument %d (parameter %s): expected %s, given %s", c->name, i,
                                 param->name, want, got);
    free(want);
    free(got);
    return st;
  }
  return NULL;
}

static kiln_status run_plan(eval_ctx *ctx, const eval_plan *p, hlo_literal *const *args, const bool *owned,
                            hlo_literal **out);

/* Runs c on args; args flagged in `owned` (may be NULL) are handed over and freed
 * whatever happens. */
static kiln_status call_computation(eval_ctx *ctx, const hlo_computation *c, hlo_literal *const *args,
                                    const bool *owned, int n_args, hlo_literal **out) {
  *out = NULL;
  if (ctx->depth >= EVAL_MAX_DEPTH) {
    free_owned_args(args, owned, n_args);
    return ERR_INVALID("computation %s: calls nested more than %d deep (recursive computations?)", c->name,
                       EVAL_MAX_DEPTH);
  }
  eval_plan *p = cache_find(ctx->plans, c);
  bool cached = p != NULL;
  if (!p) {
    kiln_status st = plan_build(c, &p);
    if (st) {
      free_owned_args(args, owned, n_args);
      return st;
    }
    if (ctx->plans) {
      cache_insert(ctx->plans, p);
      cached = true;
    }
  }
  kiln_status st = check_args(c, p, args, n_args);
  if (st) {
    free_owned_args(args, owned, n_args);
  } else {
    ctx->depth++;
    st = run_plan(ctx, p, args, owned, out);
    ctx->depth--;
  }
  if (!cached) plan_free(p);
  return st;
}

kiln_status eval_call(eval_ctx *ctx, const hlo_computation *c, hlo_literal *const *args, int n_args,
                      hlo_literal **out) {
  return call_computation(ctx, c, args, NULL, n_args, out);
}

/* Errors from a called computation gain the calling instruction as context, for the
 * outermost few levels only: the innermost message plus where the outer calls came from
 * says enough, and a deep chain would otherwise repeat itself hundreds of times. */
enum { EVAL_CONTEXT_LEVELS = 8 };

static kiln_status wrap_called(const eval_ctx *ctx, kiln_status st, const hlo_instr *ins, const hlo_computation *c) {
  if (ctx->depth >= EVAL_CONTEXT_LEVELS) return st;
  return status_wrap(st, "%s (%s) calling %s", ins->name, hlo_opcode_name(ins->op), c->name);
}

static kiln_status need_called(const hlo_instr *ins, int n) {
  if (ins->n_called >= n) return NULL;
  return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "needs %d called computation%s, has %d", n, n == 1 ? "" : "s",
                  ins->n_called);
}

/* ------------------------------------------------------- plumbing kernels ------ */

typedef kiln_status (*plumbing_kernel)(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a,
                                       hlo_literal **out);

static kiln_status k_constant(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  if (!ins->literal) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "constant has no value");
  *out = literal_clone(ins->literal);
  return NULL;
}

static kiln_status k_tuple(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  int n = ins->n_operands;
  hlo_literal **elems = malloc((size_t)(n ? n : 1) * sizeof *elems);
  if (!elems) abort();
  for (int k = 0; k < n; k++) elems[k] = opnd_take(a, k);
  *out = literal_tuple(n, elems);
  free(elems);
  return NULL;
}

static kiln_status check_gte(const hlo_instr *ins, const hlo_literal *t) {
  if (t->shape.type != HLO_TUPLE)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand is a %s, not a tuple", hlo_type_name(t->shape.type));
  if (ins->tuple_index < 0 || ins->tuple_index >= t->shape.n_elems || !t->tuple[ins->tuple_index])
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "index %lld out of range for a tuple of %d elements",
                    (long long)ins->tuple_index, t->shape.n_elems);
  return NULL;
}

static kiln_status k_get_tuple_element(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a,
                                       hlo_literal **out) {
  const hlo_literal *t = opnd_get(a, 0);
  TRY(check_gte(ins, t));
  *out = literal_clone(t->tuple[ins->tuple_index]);
  return NULL;
}

static kiln_status k_pass_through(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  if (ins->n_operands < 1) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "needs an operand");
  *out = opnd_take(a, 0);
  return NULL;
}

static kiln_status k_call(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  TRY(need_called(ins, 1));
  int n = ins->n_operands;
  hlo_literal *small_args[8] = {NULL};
  bool small_owned[8] = {false};
  hlo_literal **args = n <= 8 ? small_args : malloc((size_t)n * sizeof *args);
  bool *owned = n <= 8 ? small_owned : malloc((size_t)n * sizeof *owned);
  if (!args || !owned) abort();
  for (int k = 0; k < n; k++) args[k] = opnd_take_or_borrow(a, k, &owned[k]);
  kiln_status st = call_computation(ctx, ins->called[0], args, owned, n, out);
  if (args != small_args) free(args);
  if (owned != small_owned) free(owned);
  return wrap_called(ctx, st, ins, ins->called[0]);
}

static kiln_status k_while(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  TRY(need_called(ins, 2));
  const hlo_computation *cond = ins->called[0], *body = ins->called[1];
  hlo_literal *state = opnd_take(a, 0);
  for (;;) {
    hlo_literal *pred = NULL;
    kiln_status st = eval_call(ctx, cond, &state, 1, &pred);
    if (st) {
      literal_free(state);
      return wrap_called(ctx, st, ins, cond);
    }
    if (pred->shape.type != HLO_PRED || pred->n != 1) {
      char *s = shape_str(&pred->shape);
      st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "condition %s returned %s, not pred[]", cond->name, s);
      free(s);
      literal_free(pred);
      literal_free(state);
      return st;
    }
    bool go = ((const uint8_t *)pred->data)[0] != 0;
    literal_free(pred);
    if (!go) break;
    bool give = true;
    hlo_literal *next = NULL;
    st = call_computation(ctx, body, &state, &give, 1, &next); /* the body takes the state over */
    if (st) return wrap_called(ctx, st, ins, body);
    state = next;
  }
  *out = state;
  return NULL;
}

static kiln_status k_conditional(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  int n_branches = ins->n_called;
  if (n_branches < 1 || ins->n_operands != n_branches + 1)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "%d branches need %d operands, got %d", n_branches, n_branches + 1,
                    ins->n_operands);
  const hlo_literal *sel = opnd_get(a, 0);
  int branch;
  if (sel->shape.type == HLO_PRED && sel->n == 1 && sel->shape.rank == 0) {
    if (n_branches != 2)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "a pred selector needs 2 branches, got %d", n_branches);
    branch = ((const uint8_t *)sel->data)[0] ? 0 : 1;
  } else if (sel->shape.type == HLO_S32 && sel->n == 1 && sel->shape.rank == 0) {
    int32_t idx = ((const int32_t *)sel->data)[0];
    branch = (idx < 0 || idx >= n_branches) ? n_branches - 1 : idx; /* XLA: out of range runs the last */
  } else {
    char *s = shape_str(&sel->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "selector must be pred[] or s32[], got %s", s);
    free(s);
    return st;
  }
  bool owned;
  hlo_literal *arg = opnd_take_or_borrow(a, branch + 1, &owned);
  kiln_status st = call_computation(ctx, ins->called[branch], &arg, &owned, 1, out);
  return wrap_called(ctx, st, ins, ins->called[branch]);
}

static kiln_status k_map(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  TRY(need_called(ins, 1));
  const hlo_computation *f = ins->called[0];
  int n_ops = ins->n_operands;
  if (!shape_is_array(&ins->shape)) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result must be an array");
  hlo_literal *res;
  TRY(literal_create(&ins->shape, &res));
  hlo_type rt = res->shape.type;
  bool same_types = true;
  for (int k = 0; k < n_ops; k++) {
    const hlo_literal *o = opnd_get(a, k);
    if (!shape_is_array(&o->shape) || !shape_same_dims(&o->shape, &res->shape)) {
      char *s = shape_str(&o->shape), *r = shape_str(&res->shape);
      kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d shape %s does not match result %s", k, s, r);
      free(s);
      free(r);
      literal_free(res);
      return st;
    }
    if (o->shape.type != rt) same_types = false;
  }
  int64_t n = res->n;
  eval_reducer_kind kind = n_ops == 2 && same_types ? eval_reducer_classify(f) : EVAL_REDUCER_GENERIC;
  if (kind != EVAL_REDUCER_GENERIC) {
    const hlo_literal *x = opnd_get(a, 0), *y = opnd_get(a, 1);
    memcpy(res->data, x->data, (size_t)shape_byte_size(&res->shape));
    for (int64_t i = 0; i < n; i++) eval_reducer_apply(kind, rt, res->data, i, y->data, i);
    *out = res;
    return NULL;
  }
  /* Generic: call f on scalars, reusing one scalar literal per operand. */
  hlo_literal **scalars = calloc((size_t)(n_ops ? n_ops : 1), sizeof *scalars);
  if (!scalars) abort();
  kiln_status st = NULL;
  for (int k = 0; k < n_ops && !st; k++) {
    hlo_shape s = shape_scalar(opnd_get(a, k)->shape.type);
    st = literal_create(&s, &scalars[k]);
  }
  size_t res_size = hlo_type_size(rt);
  for (int64_t i = 0; i < n && !st; i++) {
    for (int k = 0; k < n_ops; k++) {
      const hlo_literal *o = opnd_get(a, k);
      size_t es = hlo_type_size(o->shape.type);
      memcpy(scalars[k]->data, (const char *)o->data + (size_t)i * es, es);
    }
    hlo_literal *r = NULL;
    st = eval_call(ctx, f, scalars, n_ops, &r);
    if (st) {
      st = wrap_called(ctx, st, ins, f);
      break;
    }
    if (r->shape.type != rt || r->n != 1 || r->shape.rank != 0) {
      char *s = shape_str(&r->shape);
      st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "%s returned %s, expected a %s scalar", f->name, s, hlo_type_name(rt));
      free(s);
    } else {
      memcpy((char *)res->data + (size_t)i * res_size, r->data, res_size);
    }
    literal_free(r);
  }
  for (int k = 0; k < n_ops; k++) literal_free(scalars[k]);
  free(scalars);
  if (st) {
    literal_free(res);
    return st;
  }
  *out = res;
  return NULL;
}

static bool layout_is_default(const hlo_shape *s) {
  if (!s->has_layout) return true;
  for (int i = 0; i < s->rank; i++)
    if (s->minor_to_major[i] != s->rank - 1 - i) return false;
  return true;
}

/* Element strides of the physical (layout) order; false if the layout is not a
 * permutation of the dimensions. */
static bool physical_strides(const hlo_shape *s, int64_t *strides) {
  bool seen[HLO_MAX_RANK] = {false};
  int64_t st = 1;
  for (int j = 0; j < s->rank; j++) {
    int64_t d = s->has_layout ? s->minor_to_major[j] : s->rank - 1 - j;
    if (d < 0 || d >= s->rank || seen[d]) return false;
    seen[d] = true;
    strides[d] = st;
    st *= s->dims[d];
  }
  return true;
}

/* Copies between row-major (logical) order and physical order of shape s. */
static void permute_physical(const hlo_shape *s, const int64_t *pstrides, const char *src, char *dst, size_t es,
                             bool to_physical) {
  int64_t n = shape_elements(s);
  int64_t idx[HLO_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t p = eval_linear_index(s->rank, pstrides, idx);
    if (to_physical)
      memcpy(dst + p * (int64_t)es, src + i * (int64_t)es, es);
    else
      memcpy(dst + i * (int64_t)es, src + p * (int64_t)es, es);
    eval_next_index(s->rank, s->dims, idx);
  }
}

static void set_array_shape(hlo_literal *l, const hlo_shape *s) {
  l->shape = *s;
  l->shape.layout_extra = NULL;
  l->shape.elems = NULL;
  l->shape.n_elems = 0;
  l->n = shape_elements(s);
}

/* bitcast reinterprets the physical bytes: with default layouts on both sides that is
 * the row-major buffer itself; otherwise bytes go through the physical order. */
static kiln_status k_bitcast(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  const hlo_literal *src = opnd_get(a, 0);
  if (!shape_is_array(&src->shape) || !shape_is_array(&ins->shape) ||
      shape_byte_size(&src->shape) != shape_byte_size(&ins->shape)) {
    char *s = shape_str(&src->shape), *r = shape_str(&ins->shape);
    kiln_status st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "cannot bitcast %s to %s: byte sizes differ", s, r);
    free(s);
    free(r);
    return st;
  }
  /* The physical order is the instruction operand's layout (literals themselves are
   * always row-major, whatever layout fields they carry). */
  hlo_shape in_shape = src->shape;
  const hlo_shape *decl = ins->n_operands > 0 && ins->operands[0] ? &ins->operands[0]->shape : NULL;
  in_shape.has_layout = decl && decl->has_layout && decl->rank == in_shape.rank;
  if (in_shape.has_layout) memcpy(in_shape.minor_to_major, decl->minor_to_major, sizeof in_shape.minor_to_major);
  if (layout_is_default(&in_shape) && layout_is_default(&ins->shape)) {
    hlo_literal *l = opnd_take(a, 0);
    set_array_shape(l, &ins->shape);
    if (l->shape.type == HLO_PRED)
      for (int64_t i = 0; i < l->n; i++) ((uint8_t *)l->data)[i] = ((uint8_t *)l->data)[i] != 0;
    *out = l;
    return NULL;
  }
  int64_t in_strides[HLO_MAX_RANK], out_strides[HLO_MAX_RANK];
  if (!physical_strides(&in_shape, in_strides) || !physical_strides(&ins->shape, out_strides))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "layout is not a permutation of the dimensions");
  int64_t bytes = shape_byte_size(&ins->shape);
  char *phys = malloc((size_t)(bytes ? bytes : 1));
  if (!phys) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory");
  hlo_literal *res;
  kiln_status st = literal_create(&ins->shape, &res);
  if (st) {
    free(phys);
    return st;
  }
  permute_physical(&in_shape, in_strides, src->data, phys, hlo_type_size(src->shape.type), true);
  permute_physical(&res->shape, out_strides, phys, res->data, hlo_type_size(res->shape.type), false);
  free(phys);
  if (res->shape.type == HLO_PRED)
    for (int64_t i = 0; i < res->n; i++) ((uint8_t *)res->data)[i] = ((uint8_t *)res->data)[i] != 0;
  *out = res;
  return NULL;
}

static kiln_status k_set_dimension_size(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a,
                                        hlo_literal **out) {
  const hlo_literal *src = opnd_get(a, 0);
  if (!shape_is_array(&src->shape) || !shape_is_array(&ins->shape) ||
      src->shape.type != ins->shape.type || !shape_same_dims(&src->shape, &ins->shape))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand and result shapes differ");
  hlo_literal *l = opnd_take(a, 0);
  set_array_shape(l, &ins->shape); /* the data is the padded (static-bound) array */
  *out = l;
  return NULL;
}

static kiln_status k_get_dimension_size(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a,
                                        hlo_literal **out) {
  const hlo_literal *src = opnd_get(a, 0);
  int64_t d = ins->dimensions.n ? ins->dimensions.v[0] : -1;
  if (!shape_is_array(&src->shape) || d < 0 || d >= src->shape.rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "dimension %lld out of range for rank %d", (long long)d,
                    src->shape.rank);
  if (src->shape.dims[d] > INT32_MAX)
    return EVAL_ERR(KILN_OUT_OF_RANGE, ins, "dimension size %lld does not fit s32", (long long)src->shape.dims[d]);
  hlo_shape s = shape_scalar(HLO_S32);
  hlo_literal *l;
  TRY(literal_create(&s, &l));
  ((int32_t *)l->data)[0] = (int32_t)src->shape.dims[d];
  *out = l;
  return NULL;
}

/* Values with no data to compute: after-all's token, and a single device's replica-id
 * and partition-id (both 0). */
static kiln_status k_zero_of_shape(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  if (ins->shape.type == HLO_TUPLE) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "unexpected tuple shape");
  return literal_create(&ins->shape, out);
}

/* copy-start gives (destination, source, context); copy-done the destination. */
static kiln_status k_copy_start(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  const hlo_literal *src = opnd_get(a, 0);
  if (ins->shape.type != HLO_TUPLE || ins->shape.n_elems < 2)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result must be a (destination, source, context) tuple");
  int n = ins->shape.n_elems;
  hlo_literal **elems = calloc((size_t)n, sizeof *elems);
  if (!elems) abort();
  kiln_status st = NULL;
  for (int k = 0; k < n && !st; k++) {
    if (k < 2)
      elems[k] = literal_clone(src);
    else if (ins->shape.elems[k].type == HLO_TUPLE)
      st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "unexpected tuple context");
    else
      st = literal_create(&ins->shape.elems[k], &elems[k]);
  }
  if (st) {
    for (int k = 0; k < n; k++) literal_free(elems[k]);
    free(elems);
    return st;
  }
  *out = literal_tuple(n, elems);
  free(elems);
  return NULL;
}

static kiln_status k_copy_done(eval_ctx *ctx, const hlo_instr *ins, const eval_operands *a, hlo_literal **out) {
  const hlo_literal *t = opnd_get(a, 0);
  if (t->shape.type != HLO_TUPLE || t->shape.n_elems < 1 || !t->tuple[0])
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand must be copy-start's tuple");
  *out = literal_clone(t->tuple[0]);
  return NULL;
}

static plumbing_kernel plumbing_for(hlo_opcode op) {
  switch (op) {
    case HLO_OP_CONSTANT: return k_constant;
    case HLO_OP_TUPLE: return k_tuple;
    case HLO_OP_GET_TUPLE_ELEMENT: return k_get_tuple_element;
    case HLO_OP_COPY:
    case HLO_OP_OPTIMIZATION_BARRIER:
    case HLO_OP_ADD_DEPENDENCY:
    case HLO_OP_DOMAIN: return k_pass_through;
    case HLO_OP_CALL:
    case HLO_OP_FUSION: return k_call;
    case HLO_OP_WHILE: return k_while;
    case HLO_OP_CONDITIONAL: return k_conditional;
    case HLO_OP_MAP: return k_map;
    case HLO_OP_BITCAST: return k_bitcast;
    case HLO_OP_SET_DIMENSION_SIZE: return k_set_dimension_size;
    case HLO_OP_GET_DIMENSION_SIZE: return k_get_dimension_size;
    case HLO_OP_AFTER_ALL:
    case HLO_OP_PARTITION_ID:
    case HLO_OP_REPLICA_ID: return k_zero_of_shape;
    case HLO_OP_COPY_START: return k_copy_start;
    case HLO_OP_COPY_DONE: return k_copy_done;
    default: return NULL;
  }
}

/* Table entry for the plumbing ops: the same kernels on borrowed operands (they copy
 * instead of moving). The walk calls them with slots directly. */
static kiln_status eval_plumbing(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  if (ins->op == HLO_OP_PARAMETER)
    return EVAL_ERR(KILN_INTERNAL, ins, "parameters are bound by the caller, not evaluated as kernels");
  plumbing_kernel k = plumbing_for(ins->op);
  if (!k) return EVAL_ERR(KILN_INTERNAL, ins, "no plumbing kernel");
  eval_operands a = {NULL, NULL, ops};
  return k(ctx, ins, &a, out);
}

/* ------------------------------------------------------------------ table ------ */

static kiln_status unsupported(const hlo_instr *ins);

/* custom-call: the LAPACK targets jaxlib emits on CPU run in lapack.c; any other target
 * has no defined semantics here and gets the evaluator's usual UNIMPLEMENTED error. */
static kiln_status eval_custom_call(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                    hlo_literal **out) {
  *out = NULL;
  if (hlo_is_lapack_call(ins)) return eval_lapack(ctx, ins, ops, out);
  return unsupported(ins);
}

static const eval_kernel kernel_table[HLO_OP_COUNT] = {
    /* plumbing and control flow (this file) */
    [HLO_OP_PARAMETER] = eval_plumbing,
    [HLO_OP_CONSTANT] = eval_plumbing,
    [HLO_OP_TUPLE] = eval_plumbing,
    [HLO_OP_GET_TUPLE_ELEMENT] = eval_plumbing,
    [HLO_OP_OPTIMIZATION_BARRIER] = eval_plumbing,
    [HLO_OP_ADD_DEPENDENCY] = eval_plumbing,
    [HLO_OP_DOMAIN] = eval_plumbing,
    [HLO_OP_CALL] = eval_plumbing,
    [HLO_OP_FUSION] = eval_plumbing,
    [HLO_OP_WHILE] = eval_plumbing,
    [HLO_OP_CONDITIONAL] = eval_plumbing,
    [HLO_OP_MAP] = eval_plumbing,
    [HLO_OP_BITCAST] = eval_plumbing,
    [HLO_OP_SET_DIMENSION_SIZE] = eval_plumbing,
    [HLO_OP_GET_DIMENSION_SIZE] = eval_plumbing,
    [HLO_OP_AFTER_ALL] = eval_plumbing,
    [HLO_OP_PARTITION_ID] = eval_plumbing,
    [HLO_OP_REPLICA_ID] = eval_plumbing,
    [HLO_OP_COPY_START] = eval_plumbing,
    [HLO_OP_COPY_DONE] = eval_plumbing,
    /* elementwise.c / convert.c */
    [HLO_OP_ABS] = eval_elementwise,
    [HLO_OP_ADD] = eval_elementwise,
    [HLO_OP_AND] = eval_elementwise,
    [HLO_OP_ATAN2] = eval_elementwise,
    [HLO_OP_CBRT] = eval_elementwise,
    [HLO_OP_CEIL] = eval_elementwise,
    [HLO_OP_CLAMP] = eval_elementwise,
    [HLO_OP_CLZ] = eval_elementwise,
    [HLO_OP_COMPARE] = eval_elementwise,
    [HLO_OP_COPY] = eval_elementwise,
    [HLO_OP_COSINE] = eval_elementwise,
    [HLO_OP_DIVIDE] = eval_elementwise,
    [HLO_OP_ERF] = eval_elementwise,
    [HLO_OP_EXP] = eval_elementwise,
    [HLO_OP_EXPM1] = eval_elementwise,
    [HLO_OP_FLOOR] = eval_elementwise,
    [HLO_OP_IS_FINITE] = eval_elementwise,
    [HLO_OP_LOG] = eval_elementwise,
    [HLO_OP_LOG1P] = eval_elementwise,
    [HLO_OP_LOGISTIC] = eval_elementwise,
    [HLO_OP_MAXIMUM] = eval_elementwise,
    [HLO_OP_MINIMUM] = eval_elementwise,
    [HLO_OP_MULTIPLY] = eval_elementwise,
    [HLO_OP_NEGATE] = eval_elementwise,
    [HLO_OP_NOT] = eval_elementwise,
    [HLO_OP_OR] = eval_elementwise,
    [HLO_OP_POPCNT] = eval_elementwise,
    [HLO_OP_POWER] = eval_elementwise,
    [HLO_OP_REMAINDER] = eval_elementwise,
    [HLO_OP_ROUND_NEAREST_AFZ] = eval_elementwise,
    [HLO_OP_ROUND_NEAREST_EVEN] = eval_elementwise,
    [HLO_OP_RSQRT] = eval_elementwise,
    [HLO_OP_SELECT] = eval_elementwise,
    [HLO_OP_SHIFT_LEFT] = eval_elementwise,
    [HLO_OP_SHIFT_RIGHT_ARITHMETIC] = eval_elementwise,
    [HLO_OP_SHIFT_RIGHT_LOGICAL] = eval_elementwise,
    [HLO_OP_SIGN] = eval_elementwise,
    [HLO_OP_SINE] = eval_elementwise,
    [HLO_OP_SQRT] = eval_elementwise,
    [HLO_OP_SUBTRACT] = eval_elementwise,
    [HLO_OP_TAN] = eval_elementwise,
    [HLO_OP_TANH] = eval_elementwise,
    [HLO_OP_XOR] = eval_elementwise,
    [HLO_OP_REDUCE_PRECISION] = eval_elementwise,
    [HLO_OP_CONVERT] = eval_convert,
    [HLO_OP_BITCAST_CONVERT] = eval_bitcast_convert,
    /* data_movement.c */
    [HLO_OP_BROADCAST] = eval_broadcast,
    [HLO_OP_RESHAPE] = eval_reshape,
    [HLO_OP_TRANSPOSE] = eval_transpose,
    [HLO_OP_SLICE] = eval_slice,
    [HLO_OP_DYNAMIC_SLICE] = eval_dynamic_slice,
    [HLO_OP_DYNAMIC_UPDATE_SLICE] = eval_dynamic_update_slice,
    [HLO_OP_CONCATENATE] = eval_concatenate,
    [HLO_OP_PAD] = eval_pad,
    [HLO_OP_REVERSE] = eval_reverse,
    [HLO_OP_IOTA] = eval_iota,
    /* reduce.c, sort.c, dot_conv.c, gather_scatter.c */
    [HLO_OP_REDUCE] = eval_reduce,
    [HLO_OP_REDUCE_WINDOW] = eval_reduce_window,
    [HLO_OP_SELECT_AND_SCATTER] = eval_select_and_scatter,
    [HLO_OP_BATCH_NORM_INFERENCE] = eval_batch_norm_inference,
    [HLO_OP_SORT] = eval_sort,
    [HLO_OP_TOPK] = eval_topk,
    [HLO_OP_DOT] = eval_dot,
    [HLO_OP_CONVOLUTION] = eval_convolution,
    [HLO_OP_GATHER] = eval_gather,
    [HLO_OP_SCATTER] = eval_scatter,
    /* eval_custom_call above, lapack.c */
    [HLO_OP_CUSTOM_CALL] = eval_custom_call,
};

bool eval_supports(const hlo_instr *ins) {
  if (!ins || (unsigned)ins->op >= HLO_OP_COUNT || kernel_table[ins->op] == NULL) return false;
  /* A custom-call only when its kernel will run it: constant folding and the backends
   * (the cpu backend's evaluator fallback, the interpreter) rely on this answer, and any
   * other target would only fail at run time. */
  if (ins->op == HLO_OP_CUSTOM_CALL) return eval_lapack_supported(ins);
  return true;
}

static kiln_status unsupported(const hlo_instr *ins) {
  switch (ins->op) {
    case HLO_OP_CUSTOM_CALL:
      return EVAL_ERR(KILN_UNIMPLEMENTED, ins, "custom-call target \"%s\" is not supported by the evaluator",
                      ins->custom_call_target ? ins->custom_call_target : "");
    case HLO_OP_RNG:
    case HLO_OP_RNG_BIT_GENERATOR:
    case HLO_OP_RNG_GET_AND_UPDATE_STATE:
      return EVAL_ERR(KILN_UNIMPLEMENTED, ins,
                      "random number generation is not supported by the evaluator (its bits are "
                      "implementation-defined and nondeterministic, so there is no reference answer)");
    case HLO_OP_ALL_GATHER:
    case HLO_OP_ALL_REDUCE:
    case HLO_OP_ALL_TO_ALL:
    case HLO_OP_COLLECTIVE_PERMUTE:
    case HLO_OP_REDUCE_SCATTER:
    case HLO_OP_SEND:
    case HLO_OP_SEND_DONE:
    case HLO_OP_RECV:
    case HLO_OP_RECV_DONE:
    case HLO_OP_INFEED:
    case HLO_OP_OUTFEED:
      return EVAL_ERR(KILN_UNIMPLEMENTED, ins,
                      "opcode %s is not supported by the evaluator (it needs a multi-device or host-transfer "
                      "runtime)",
                      hlo_opcode_name(ins->op));
    default:
      return EVAL_ERR(KILN_UNIMPLEMENTED, ins, "opcode %s is not implemented by the evaluator",
                      hlo_opcode_name(ins->op));
  }
}

/* ------------------------------------------------------------------ walk ------- */

static kiln_status run_plan(eval_ctx *ctx, const eval_plan *p, hlo_literal *const *args, const bool *owned,
                            hlo_literal **out) {
  *out = NULL;
  const hlo_computation *c = p->comp;
  int n = p->n;
  eval_slot small[32];
  eval_slot *s = n <= 32 ? small : malloc((size_t)n * sizeof *s);
  if (!s) abort();
  for (int i = 0; i < n; i++) {
    s[i].lit = NULL;
    s[i].uses = p->uses[i];
    s[i].parent = -1;
    s[i].owned = false;
  }
  for (int k = 0; k < p->n_params; k++) {
    int i = p->param_pos[k];
    s[i].lit = args[k];
    s[i].owned = owned && owned[k];
  }

  hlo_literal *op_small[16];
  hlo_literal **ops = op_small;
  int ops_cap = 16;
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++) {
    if (!p->live[i]) continue;
    const hlo_instr *ins = c->instrs[i];
    if (ins->op == HLO_OP_PARAMETER) continue;
    const int *pos = p->op_pos + p->op_start[i];
    int n_ops = p->op_start[i + 1] - p->op_start[i];
    for (int k = 0; k < n_ops; k++) {
      if (!s[pos[k]].lit) {
        st = EVAL_ERR(KILN_INTERNAL, ins, "operand %s has no value", c->instrs[pos[k]]->name);
        break;
      }
    }
    if (st) break;

    hlo_literal *res = NULL;
    if (ins->op == HLO_OP_CONSTANT && ins->literal) {
      /* Borrowed from the module, which outlives the evaluation. Kernels trust shapes,
       * so a literal that disagrees with its instruction stops here. */
      if (!shape_compatible(&ins->literal->shape, &ins->shape)) {
        char *got = shape_str(&ins->literal->shape), *want = shape_str(&ins->shape);
        st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "constant value has shape %s, but the instruction's shape is %s",
                      got, want);
        free(got);
        free(want);
        break;
      }
      s[i].lit = ins->literal;
      s[i].owned = false;
    } else if (ins->op == HLO_OP_GET_TUPLE_ELEMENT && n_ops == 1) {
      /* An alias into the tuple; the tuple stays alive while the alias is used. */
      st = check_gte(ins, s[pos[0]].lit);
      if (st) break;
      s[i].lit = s[pos[0]].lit->tuple[ins->tuple_index];
      s[i].owned = false;
      s[i].parent = pos[0];
      s[pos[0]].uses++;
    } else {
      plumbing_kernel pk = plumbing_for(ins->op);
      if (pk) {
        eval_operands a = {s, pos, NULL};
        st = pk(ctx, ins, &a, &res);
      } else {
        eval_kernel k = kernel_table[ins->op];
        if (!k) {
          st = unsupported(ins);
          break;
        }
        if (n_ops > ops_cap) {
          if (ops != op_small) free(ops);
          ops = malloc((size_t)n_ops * sizeof *ops);
          if (!ops) abort();
          ops_cap = n_ops;
        }
        for (int k2 = 0; k2 < n_ops; k2++) ops[k2] = s[pos[k2]].lit;
        st = k(ctx, ins, ops, &res);
      }
      if (st) break;
      if (!res) {
        st = EVAL_ERR(KILN_INTERNAL, ins, "kernel returned no value");
        break;
      }
      if (!shape_compatible(&res->shape, &ins->shape)) {
        char *got = shape_str(&res->shape), *want = shape_str(&ins->shape);
        st = EVAL_ERR(KILN_INTERNAL, ins, "kernel produced %s, but the instruction's shape is %s", got, want);
        free(got);
        free(want);
        literal_free(res);
        break;
      }
      s[i].lit = res;
      s[i].owned = true;
    }
    for (int k = 0; k < n_ops; k++) slot_release(s, pos[k]);
  }
  if (ops != op_small) free(ops);

  if (!st) {
    hlo_literal *r = slot_steal(s, p->root);
    *out = r ? r : literal_clone(s[p->root].lit);
  }
  for (int i = 0; i < n; i++)
    if (s[i].owned) literal_free(s[i].lit);
  if (s != small) free(s);
  return st;
}

/* ------------------------------------------------------------------ entry ------ */

kiln_status eval_computation(const hlo_computation *c, hlo_literal *const *args, int n_args, hlo_literal **out) {
  *out = NULL;
  if (!c) return ERR_INVALID("no computation to evaluate");
  struct eval_plan_cache cache = {0, 0, NULL};
  eval_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.plans = &cache;
  kiln_status st = call_computation(&ctx, c, args, NULL, n_args, out);
  cache_free(&cache);
  return st;
}

kiln_status eval_module(const hlo_module *m, hlo_literal *const *args, int n_args, hlo_literal **out) {
  *out = NULL;
  if (!m || !m->entry) return ERR_INVALID("module %s has no entry computation", m && m->name ? m->name : "");
  return eval_computation(m->entry, args, n_args, out);
}
