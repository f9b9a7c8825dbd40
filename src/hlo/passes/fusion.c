/* Instruction fusion for the CPU backend, after XLA's InstructionFusion /
 * CpuInstructionFusion: groups an instruction with the producers it reads into one
 * `fusion` instruction whose called computation (is_fusion_computation) holds copies of
 * the grouped instructions, so the backend emits one kernel per group and the
 * intermediate values never reach memory. Three kinds:
 *   kLoop   - root elementwise or a cheap data-movement op; producers elementwise or cheap
 *             (broadcast, reshape, transpose, slice, a short dynamic-slice, concatenate, pad,
 *             iota, convert, reverse, bitcast, same-width bitcast-convert, scalar
 *             constants);
 *   kInput  - root a single-result reduce, producers as for kLoop;
 *   kOutput - a dot or convolution followed by a chain of add / multiply / maximum /
 *             minimum / clamp whose other operands are fusion parameters, broadcasts of
 *             them or broadcasts of scalar constants, logistic, and the activations
 *             the backend's policy matches (the cpu backend's: swish, hardswish, GELU),
 *             what oneDNN post-ops express; for an integer product (the cpu backend's quantized
 *             products) also the widening of its 8-bit operands, an int32 bias, the
 *             convert to f32 and a requantization ending in a convert to 8 bits;
 *   kCustom - a softmax over the minor dimension (the policy's match_softmax), for
 *             oneDNN's softmax primitive.
 * The decision procedure: output chains are found first, then softmaxes; then instructions are visited
 * consumers-first (reverse definition order) and every instruction whose value is still
 * needed outside the groups formed so far becomes a group root that absorbs its operands,
 * nearest producer first. A producer all of whose users are exclusive members of the
 * group moves in; one with other users is copied in only if it is cheap (an expensive
 * op - transcendental, divide, power - stays outside so it is computed once) and its
 * copy reads no more bytes than the value it replaces (a convert: twice), a small broadcast operand (a
 * per-row mean, a bias) counted as free (else copies of copies recompute
 * long chains, e.g. a transformer's residual stream, in every consumer), and an
 * expensive producer is never fused below a broadcast, which would recompute it per
 * output element. A kLoop / kInput group stops growing at HLO_FUSION_MAX_COST (LLVM's
 * time on one kernel is super-linear in its size), so a long chain becomes several
 * kernels; the pass itself does work proportional to the groups' sizes (candidates
 * from a heap, members in lists). A group is only built if it absorbed something besides constants.
 * Fusion copies instructions without changing them, so results are bit-identical. The
 * bypassed originals are left for DCE. Fusion runs in the entry and in computations it
 * reaches through while / conditional / call, not in reducers, comparators or existing
 * fused computations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* ------------------------------------------------------------ names ---- */

/* Every instruction and computation name of the module, so the new names can follow
 * XLA's scheme (fusion, fusion.1, fused_computation.1, param_0.2, add.3) without
 * colliding with names read from a file. */
typedef struct name_set {
  size_t cap, n;
  const char **slots;
  /* base name -> the next suffix to try, so naming k copies of "add" stays linear */
  size_t base_cap, base_n;
  const char **bases;
  int *next_suffix;
} name_set;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool name_set_has(const name_set *s, const char *name) {
  for (size_t i = hash_str(name) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (!s->slots[i]) return false;
    if (strcmp(s->slots[i], name) == 0) return true;
  }
}

static void name_set_add(name_set *s, const char *name);

static void name_set_grow(name_set *s) {
  name_set old = *s;
  s->cap = old.cap ? old.cap * 2 : 256;
  s->n = 0;
  s->slots = calloc(s->cap, sizeof *s->slots);
  if (!s->slots) abort();
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i]) name_set_add(s, old.slots[i]);
  free(old.slots);
}

static void name_set_add(name_set *s, const char *name) {
  if ((s->n + 1) * 2 > s->cap) name_set_grow(s);
  size_t i = hash_str(name) & (s->cap - 1);
  while (s->slots[i]) {
    if (strcmp(s->slots[i], name) == 0) return;
    i = (i + 1) & (s->cap - 1);
  }
  s->slots[i] = name;
  s->n++;
}

static int *base_counter(name_set *s, const char *base) {
  if ((s->base_n + 1) * 2 > s->base_cap) {
    size_t old_cap = s->base_cap;
    const char **old_bases = s->bases;
    int *old_next = s->next_suffix;
    s->base_cap = old_cap ? old_cap * 2 : 64;
    s->bases = calloc(s->base_cap, sizeof *s->bases);
    s->next_suffix = calloc(s->base_cap, sizeof *s->next_suffix);
    if (!s->bases || !s->next_suffix) abort();
    for (size_t i = 0; i < old_cap; i++) {
      if (!old_bases[i]) continue;
      size_t j = hash_str(old_bases[i]) & (s->base_cap - 1);
      while (s->bases[j]) j = (j + 1) & (s->base_cap - 1);
      s->bases[j] = old_bases[i];
      s->next_suffix[j] = old_next[i];
    }
    free(old_bases);
    free(old_next);
  }
  size_t i = hash_str(base) & (s->base_cap - 1);
  while (s->bases[i] && strcmp(s->bases[i], base) != 0) i = (i + 1) & (s->base_cap - 1);
  if (!s->bases[i]) {
    s->bases[i] = base;
    s->next_suffix[i] = 1;
    s->base_n++;
  }
  return &s->next_suffix[i];
}

/* base if free, else base.1, base.2, ...; the name is reserved and arena-owned. */
static const char *unique_name(hlo_module *m, name_set *s, const char *base) {
  const char *name = arena_strdup(m->arena, base);
  if (name_set_has(s, name)) {
    int *k = base_counter(s, name);
    do name = arena_printf(m->arena, "%s.%d", base, (*k)++);
    while (name_set_has(s, name));
  }
  name_set_add(s, name);
  return name;
}

/* "add.17" -> "add": a copy inside a fused computation is numbered afresh. */
static const char *strip_number(hlo_module *m, const char *name) {
  size_t n = strlen(name), i = n;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
  if (i > 1 && i < n && name[i - 1] == '.') return arena_strndup(m->arena, name, i - 1);
  return name;
}

/* ------------------------------------------------------ op classes ---- */

/* Ops whose per-element cost makes recomputing them in several kernels a loss. */
static bool is_expensive(hlo_opcode op) {
  switch (op) {
    case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC:
    case HLO_OP_TANH: case HLO_OP_SINE: case HLO_OP_COSINE: case HLO_OP_TAN: case HLO_OP_ATAN2:
    case HLO_OP_POWER: case HLO_OP_SQRT: case HLO_OP_RSQRT: case HLO_OP_CBRT: case HLO_OP_ERF:
    case HLO_OP_DIVIDE: case HLO_OP_REMAINDER:
      return true;
    default:
      return false;
  }
}

/* The most elements of a dynamic-slice that fuses into its reader. */
#define HLO_FUSION_MAX_DYNAMIC_SLICE 16

/* Ops a loop kernel computes element by element from its operands' elements. */
static bool is_loop_fusible(const hlo_instr *ins) {
  if (!shape_is_array(&ins->shape) || ins->shape.type == HLO_TOKEN) return false;
  if (hlo_pass_has_side_effect(ins)) return false;
  if (hlo_opcode_is_elementwise(ins->op)) return true;
  switch (ins->op) {
    case HLO_OP_BROADCAST: case HLO_OP_RESHAPE: case HLO_OP_TRANSPOSE: case HLO_OP_SLICE:
    case HLO_OP_CONCATENATE: case HLO_OP_PAD: case HLO_OP_IOTA: case HLO_OP_REVERSE:
      return true;
    case HLO_OP_DYNAMIC_SLICE:
      /* A producer only (form_loop_groups), and a short one (a scan's step input of a
       * few elements): the kernel recomputes the clamped start per element, which made
       * a loop reading 768-element rows 2.8x slower than the native row copy
       * (xla_dynamic_slice_loop_bf16, 1.3 -> 3.6 ms). */
      return shape_elements(&ins->shape) <= HLO_FUSION_MAX_DYNAMIC_SLICE;
    case HLO_OP_BITCAST: /* a kernel reads it as a reshape: the element type must stay */
      return ins->n_operands == 1 && ins->operands[0]->shape.type == ins->shape.type;
    case HLO_OP_BITCAST_CONVERT: /* same element width only: then it is elementwise */
      return ins->n_operands == 1 && ins->operands[0]->shape.rank == ins->shape.rank;
    case HLO_OP_CONSTANT: /* big constants stay buffers the kernel reads */
      return ins->shape.rank == 0;
    default:
      return false;
  }
}

/* Instructions of straight-line code the backend emits per element of ins, in units of
 * a cheap op: a transcendental or a division expands into a polynomial with range
 * reduction and NaN/infinity selects (tens of LLVM instructions), which is what makes
 * LLVM's time on a kernel grow. */
int hlo_pass_fusion_code_cost(const hlo_instr *ins) {
  if (ins->op == HLO_OP_CONSTANT || ins->op == HLO_OP_PARAMETER) return 0;
  return is_expensive(ins->op) ? 4 : 1;
}

static bool is_input_fusion_root(const hlo_instr *ins) {
  return ins->op == HLO_OP_REDUCE && ins->n_operands == 2 && shape_is_array(&ins->shape);
}

static bool is_output_post_op(hlo_opcode op) {
  return op == HLO_OP_ADD || op == HLO_OP_MULTIPLY || op == HLO_OP_MAXIMUM || op == HLO_OP_MINIMUM ||
         op == HLO_OP_CLAMP || op == HLO_OP_LOGISTIC;
}

/* ------------------------------------------------------------ groups ---- */

enum {
  MEMBER_EXCL = 1,  /* every user is an exclusive member: the original becomes dead */
  MEMBER_DUP = 2,   /* copied in; the original stays for users outside the group */
  MEMBER_REUSED = 4 /* some element is read more than once (below a broadcast) */
};

typedef struct group {
  int root;          /* index into the computation's instrs */
  const char *kind;  /* kLoop / kInput / kOutput */
  /* Members (the root included) and their MEMBER_* bits; sorted by index once the group
   * is finished. While the group forms, fusion_ctx.forming_state holds the bits, indexed
   * densely: a dense array per group would make the pass quadratic in the number of
   * instructions (one allocation and one scan of every instruction below the root per
   * group). */
  int n_members, cap_members;
  int *members;
  unsigned char *member_state;
} group;

/* Per-computation analysis state. */
typedef struct fusion_ctx {
  hlo_computation *c;
  int n;
  int *index_of_id;  /* instruction id -> index in c->instrs, -1 if not in c */
  int *user_start;   /* CSR users: user_idx[user_start[i] .. user_start[i+1]) */
  int *user_idx;
  bool *needed;      /* the original value is read outside every group that copies it */
  bool *output_root; /* root of a kOutput or kCustom group: never a producer for another group */
  bool *in_output_chain; /* the dot/convolution or a post-op of some kOutput group */
  int *group_of_root; /* index into groups, -1 */
  group *groups;
  int n_groups, cap_groups;
  int forming;                  /* index of the group being formed, -1 */
  unsigned char *forming_state; /* its MEMBER_* bits by instruction index, else 0 */
  int *heap, n_heap;            /* grow_group's candidate producers, a max-heap */
  int *queued;                  /* the queue_tag a producer was last queued under */
  int queue_tag;                /* one per grow_group call (group indices are reused) */
  hlo_instr **clone;            /* build_group's copies by instruction index, else NULL */
  const hlo_fusion_policy *policy; /* the backend's activation and softmax patterns (may be NULL) */
} fusion_ctx;

/* Work the last hlo_pass_fusion on this thread did (see pipeline.h). */
static _Thread_local uint64_t fusion_work;

uint64_t hlo_pass_fusion_last_work(void) { return fusion_work; }

static int group_index(const fusion_ctx *x, const group *g) { return (int)(g - x->groups); }

/* MEMBER_* bits of instruction i in g; 0: not a member. */
static unsigned char state_of(const fusion_ctx *x, const group *g, int i) {
  if (i > g->root) return 0;
  if (group_index(x, g) == x->forming) return x->forming_state[i];
  int lo = 0, hi = g->n_members - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (g->members[mid] == i) return g->member_state[mid];
    if (g->members[mid] < i) lo = mid + 1;
    else hi = mid - 1;
  }
  return 0;
}

static bool is_member(const fusion_ctx *x, const group *g, int i) { return state_of(x, g, i) != 0; }

/* Sets i's bits in the group being formed. */
static void set_state(fusion_ctx *x, group *g, int i, unsigned char st) {
  if (!x->forming_state[i]) {
    if (g->n_members == g->cap_members) {
      g->cap_members = g->cap_members ? g->cap_members * 2 : 8;
      g->members = realloc(g->members, (size_t)g->cap_members * sizeof *g->members);
      if (!g->members) abort();
    }
    g->members[g->n_members++] = i;
  }
  x->forming_state[i] = st;
}

static int by_index(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Moves the forming group's bits into its sorted member list. */
static void finish_group(fusion_ctx *x) {
  if (x->forming < 0) return;
  group *g = &x->groups[x->forming];
  qsort(g->members, (size_t)g->n_members, sizeof *g->members, by_index);
  g->member_state = malloc((size_t)g->n_members + 1);
  if (!g->member_state) abort();
  for (int k = 0; k < g->n_members; k++) {
    g->member_state[k] = x->forming_state[g->members[k]];
    x->forming_state[g->members[k]] = 0;
  }
  fusion_work += (uint64_t)g->n_members;
  x->forming = -1;
}

static group *new_group(fusion_ctx *x, int root, const char *kind) {
  finish_group(x);
  if (x->n_groups == x->cap_groups) {
    x->cap_groups = x->cap_groups ? x->cap_groups * 2 : 16;
    x->groups = realloc(x->groups, (size_t)x->cap_groups * sizeof *x->groups);
    if (!x->groups) abort();
  }
  group *g = &x->groups[x->n_groups++];
  memset(g, 0, sizeof *g);
  g->root = root;
  g->kind = kind;
  x->forming = x->n_groups - 1;
  set_state(x, g, root, MEMBER_EXCL);
  x->group_of_root[root] = x->n_groups - 1;
  return g;
}

static void drop_last_group(fusion_ctx *x) {
  group *g = &x->groups[x->n_groups - 1];
  if (x->forming == x->n_groups - 1) {
    for (int k = 0; k < g->n_members; k++) x->forming_state[g->members[k]] = 0;
    x->forming = -1;
  }
  x->n_groups--;
  x->group_of_root[g->root] = -1;
  free(g->members);
  free(g->member_state);
}

static int n_users(const fusion_ctx *x, int i) { return x->user_start[i + 1] - x->user_start[i]; }

/* Whether every reader of instruction i is an exclusive member of g. */
static bool all_users_exclusive(const fusion_ctx *x, const group *g, int i) {
  if (x->c->root == x->c->instrs[i]) return false;
  for (int u = x->user_start[i]; u < x->user_start[i + 1]; u++) {
    int ui = x->user_idx[u];
    if (!(state_of(x, g, ui) & MEMBER_EXCL)) return false;
  }
  return true;
}

/* Adds producer i to g with the right membership bits (the caller decided it may). */
static void add_member(fusion_ctx *x, group *g, int i) {
  unsigned char st = all_users_exclusive(x, g, i) ? MEMBER_EXCL : MEMBER_DUP;
  for (int u = x->user_start[i]; u < x->user_start[i + 1]; u++) {
    int ui = x->user_idx[u];
    unsigned char us = state_of(x, g, ui);
    if (us && (x->c->instrs[ui]->op == HLO_OP_BROADCAST || (us & MEMBER_REUSED))) st |= MEMBER_REUSED;
  }
  fusion_work += (uint64_t)n_users(x, i);
  set_state(x, g, i, st);
}

/* ---- kOutput: dot/convolution + post-op chain ---- */

/* Accepts the non-chain operand `o` of a post-op: any value outside the chain becomes a
 * fusion parameter; a broadcast is pulled in (oneDNN's per-channel bias / scale) and so
 * is a scalar constant under it or used directly (clamp bounds). */
static void add_post_op_operand(fusion_ctx *x, group *g, hlo_instr *o) {
  if (o->op == HLO_OP_CONSTANT && o->shape.rank == 0) { /* a clamp's scalar bound */
    add_member(x, g, x->index_of_id[o->id]);
    return;
  }
  if (o->op != HLO_OP_BROADCAST || o->n_operands != 1) return;
  int bi = x->index_of_id[o->id];
  add_member(x, g, bi);
  hlo_instr *src = o->operands[0];
  if (src->op == HLO_OP_CONSTANT && src->shape.rank == 0) add_member(x, g, x->index_of_id[src->id]);
}

/* A transposed convolution (lhs dilation): oneDNN runs it as a deconvolution, whose
 * kernels take no binary post-ops (a bias add sends it to the reference
 * implementation, ~50x slower on selfie's upsampling head), so it stays unfused and
 * its epilogue becomes a loop fusion. */
static bool transposed_convolution(const hlo_instr *d) {
  if (d->op != HLO_OP_CONVOLUTION) return false;
  for (int k = 0; k < d->window.rank; k++)
    if (d->window.dims[k].lhs_dilate > 1) return true;
  return false;
}

/* An activation one post-op applies (the policy's match_activation) on t: found
 * by following single-user chains from t's users; t's users are all inside it and each
 * inner instruction has one user. Returns its final multiply and the inner
 * instructions. */
static hlo_instr *activation_of(const fusion_ctx *x, const hlo_instr *t, const hlo_instr **inner, int *n_inner) {
  int ti = x->index_of_id[t->id];
  if (!x->policy || !x->policy->match_activation || n_users(x, ti) != 2) return NULL;
  for (int k = 0; k < 2; k++) {
    hlo_instr *m = x->c->instrs[x->user_idx[x->user_start[ti] + k]];
    for (int step = 0; step <= HLO_FUSION_MAX_ACTIVATION_INNER; step++) {
      const hlo_instr *v = NULL;
      if (x->policy->match_activation(m, &v, inner, n_inner) && v == t) {
        bool ok = true;
        for (int i = 0; i < *n_inner && ok; i++)
          ok = inner[i] != x->c->root && n_users(x, x->index_of_id[inner[i]->id]) == 1;
        for (int u = 0; u < 2 && ok; u++) { /* both users of t inside */
          const hlo_instr *tu = x->c->instrs[x->user_idx[x->user_start[ti] + u]];
          bool inside = tu == m;
          for (int i = 0; i < *n_inner && !inside; i++) inside = tu == inner[i];
          ok = inside;
        }
        if (ok) return m;
      }
      int mi = x->index_of_id[m->id];
      if (m == x->c->root || n_users(x, mi) != 1) break;
      m = x->c->instrs[x->user_idx[x->user_start[mi]]];
    }
  }
  return NULL;
}

/* An integer product's epilogue (the cpu backend's quantized products): besides the
 * usual post-ops, an integer bias add and the convert to f32 right after the product,
 * a divide and a round-nearest-even (a requantization's x / scale rounded), and a final
 * convert to an 8-bit integer type, which ends the chain. T is the chain value so far. */
static bool is_quantized_post_op(const hlo_instr *t, const hlo_instr *u) {
  switch (u->op) {
    case HLO_OP_CONVERT:
      if (hlo_type_is_int(t->shape.type)) return u->shape.type == HLO_F32;
      return t->shape.type == HLO_F32 && (u->shape.type == HLO_U8 || u->shape.type == HLO_S8);
    case HLO_OP_ADD: /* an int32 bias (QLinearConv's B) added to the accumulators */
      if (hlo_type_is_int(t->shape.type)) return u->shape.type == t->shape.type;
      return t->shape.type == HLO_F32;
    case HLO_OP_DIVIDE:
    case HLO_OP_ROUND_NEAREST_EVEN:
      return t->shape.type == HLO_F32;
    default:
      return is_output_post_op(u->op) && t->shape.type == HLO_F32;
  }
}

/* The widening an integer product's operand went through (cpu_quantize.c): from the
 * operand down, at most one transpose, then reshapes, a subtract of a broadcast scalar
 * (the zero point, constant or computed) and a convert from an 8-bit value. Those are
 * cheap and the cpu backend's int8 primitive reads the 8-bit value itself, so they join
 * the group (copied where something else reads them too). */
static void add_widened_operand(fusion_ctx *x, group *g, hlo_instr *o) {
  bool transposed = false, subtracted = false;
  for (;;) {
    int oi = x->index_of_id[o->id];
    if (oi < 0 || x->in_output_chain[oi] || x->output_root[oi]) return;
    if (o->op == HLO_OP_TRANSPOSE && !transposed && !subtracted) {
      transposed = true;
    } else if (o->op == HLO_OP_RESHAPE || (o->op == HLO_OP_BITCAST && o->operands[0]->shape.type == o->shape.type)) {
    } else if (o->op == HLO_OP_SUBTRACT && !subtracted && o->operands[1]->op == HLO_OP_BROADCAST &&
               o->operands[1]->operands[0]->shape.rank == 0) {
      /* A constant zero point, or a scalar computed at run time (a parameter then). */
      subtracted = true;
      add_member(x, g, oi);
      add_post_op_operand(x, g, o->operands[1]);
      o = o->operands[0];
      continue;
    } else if (o->op == HLO_OP_CONVERT && hlo_type_is_int(o->shape.type) &&
               (o->operands[0]->shape.type == HLO_U8 || o->operands[0]->shape.type == HLO_S8)) {
      add_member(x, g, oi);
      return;
    } else {
      return;
    }
    add_member(x, g, oi);
    o = o->operands[0];
  }
}

static void form_output_groups(fusion_ctx *x) {
  hlo_computation *c = x->c;
  for (int i = 0; i < x->n; i++) {
    hlo_instr *d = c->instrs[i];
    if ((d->op != HLO_OP_DOT && d->op != HLO_OP_CONVOLUTION) || !shape_is_array(&d->shape)) continue;
    if (transposed_convolution(d)) continue;
    bool quantized = hlo_type_is_int(d->shape.type);
    /* Walk the chain of single-use post-ops (an activation's two uses counted as one). */
    int chain[64], n_side[64], side[64][HLO_FUSION_MAX_ACTIVATION_INNER], n_chain = 0;
    hlo_instr *t = d;
    while (n_chain < 64 && t != c->root) {
      const hlo_instr *inner[HLO_FUSION_MAX_ACTIVATION_INNER];
      int n_inner = 0;
      hlo_instr *u = activation_of(x, t, inner, &n_inner);
      if (u) {
        if (x->in_output_chain[x->index_of_id[u->id]] ||
            (quantized ? t->shape.type != HLO_F32 || !shape_same_dims(&u->shape, &d->shape)
                       : !shape_compatible(&u->shape, &d->shape)))
          break;
        n_side[n_chain] = n_inner;
        for (int i = 0; i < n_inner; i++) side[n_chain][i] = x->index_of_id[inner[i]->id];
        chain[n_chain++] = x->index_of_id[u->id];
        t = u;
        continue;
      }
      if (n_users(x, x->index_of_id[t->id]) != 1) break;
      u = c->instrs[x->user_idx[x->user_start[x->index_of_id[t->id]]]];
      /* a post-op reading two dots belongs to the chain of the first one only */
      if (x->in_output_chain[x->index_of_id[u->id]]) break;
      if (quantized ? !is_quantized_post_op(t, u) || !shape_same_dims(&u->shape, &d->shape)
                    : !is_output_post_op(u->op) || !shape_compatible(&u->shape, &d->shape))
        break;
      int uses = 0;
      for (int k = 0; k < u->n_operands; k++) uses += u->operands[k] == t;
      if (uses != 1 || (u->op == HLO_OP_CLAMP && (u->n_operands != 3 || u->operands[1] != t))) break;
      n_side[n_chain] = 0;
      chain[n_chain++] = x->index_of_id[u->id];
      t = u;
      if (quantized && u->op == HLO_OP_CONVERT && hlo_type_is_int(u->shape.type)) break; /* requantized: the end */
    }
    if (n_chain == 0) continue;
    int root = chain[n_chain - 1];
    group *g = new_group(x, root, "kOutput");
    /* Members are added consumers first so exclusivity is known when a producer joins. */
    for (int k = n_chain - 1; k >= 0; k--) {
      hlo_instr *u = c->instrs[chain[k]];
      hlo_instr *prev = k > 0 ? c->instrs[chain[k - 1]] : d;
      if (k < n_chain - 1) set_state(x, g, chain[k], MEMBER_EXCL);
      if (n_side[k] > 0) { /* an activation: its inner ops join, with their constants */
        for (int i = n_side[k]; i >= 0; i--) {
          hlo_instr *in = i == n_side[k] ? u : c->instrs[side[k][i]];
          if (i < n_side[k]) set_state(x, g, side[k][i], MEMBER_EXCL);
          for (int o = 0; o < in->n_operands; o++) {
            bool member = in->operands[o] == prev;
            for (int j = 0; j < n_side[k] && !member; j++) member = in->operands[o] == c->instrs[side[k][j]];
            if (!member) add_post_op_operand(x, g, in->operands[o]);
          }
        }
        continue;
      }
      for (int o = 0; o < u->n_operands; o++)
        if (u->operands[o] != prev) add_post_op_operand(x, g, u->operands[o]);
    }
    set_state(x, g, i, MEMBER_EXCL);
    if (quantized)
      for (int o = d->n_operands - 1; o >= 0; o--) add_widened_operand(x, g, d->operands[o]);
    x->output_root[root] = true;
    x->in_output_chain[i] = true;
    for (int k = 0; k < n_chain; k++) {
      x->in_output_chain[chain[k]] = true;
      for (int i = 0; i < n_side[k]; i++) x->in_output_chain[side[k][i]] = true;
    }
  }
}

/* ---- kCustom: softmax ---- */

/* Softmax over the minor dimension (the policy's match_softmax: max, subtract, exp, sum,
 * divide) becomes one kCustom fusion reading only x, which the cpu backend runs as
 * oneDNN's softmax primitive: one pass over each row for the max and one for the
 * exponentials and their sum, instead of four kernels (two reductions, the
 * exponentials, the division) each streaming the whole tensor. Only when every
 * intermediate value is read inside the pattern. */
static void form_softmax_groups(fusion_ctx *x) {
  hlo_computation *c = x->c;
  if (!x->policy || !x->policy->match_softmax) return;
  for (int i = 0; i < x->n; i++) {
    const hlo_instr *v = NULL, *inner[HLO_FUSION_SOFTMAX_INNER];
    if (x->in_output_chain[i] || !x->policy->match_softmax(c->instrs[i], &v, inner)) continue;
    int idx[HLO_FUSION_SOFTMAX_INNER];
    bool ok = true;
    for (int k = 0; k < HLO_FUSION_SOFTMAX_INNER && ok; k++) {
      idx[k] = x->index_of_id[inner[k]->id];
      ok = idx[k] >= 0 && inner[k] != c->root && !x->in_output_chain[idx[k]] && x->group_of_root[idx[k]] < 0;
    }
    if (!ok) continue;
    group *g = new_group(x, i, "kCustom");
    for (int k = 0; k < HLO_FUSION_SOFTMAX_INNER; k++) set_state(x, g, idx[k], MEMBER_EXCL);
    for (int k = 0; k < HLO_FUSION_SOFTMAX_INNER && ok; k++) ok = all_users_exclusive(x, g, idx[k]);
    if (!ok) {
      drop_last_group(x);
      continue;
    }
    for (int k = 0; k < HLO_FUSION_SOFTMAX_INNER; k++) { /* the reductions' init constants */
      const hlo_instr *r = inner[k];
      if (r->op == HLO_OP_REDUCE) add_member(x, g, x->index_of_id[r->operands[1]->id]);
    }
    x->output_root[i] = true;
  }
}

/* ---- kLoop / kInput ---- */

/* A broadcast source at most this fraction of the broadcast's size (a per-row mean or
 * scale, a bias vector) is read once from memory and then from cache. */
#define SMALL_BROADCAST_RATIO 16

/* Bytes a copy of `ins` reads from memory per evaluation of all its elements: each
 * distinct operand once, a broadcast counted as what it broadcasts, and a one-element
 * value or a small broadcast source as free (they are copied along and stay in cache).
 * Counting a layer norm's per-row mean made x - mean "read more" than it replaces, so
 * the centred value was written out and read back by the variance reduction and the
 * normalisation instead of being recomputed in both. */
static int64_t bytes_read_by_copy(const hlo_instr *ins) {
  int64_t total = 0, size = shape_byte_size(&ins->shape);
  for (int k = 0; k < ins->n_operands; k++) {
    const hlo_instr *o = ins->operands[k];
    bool seen = false;
    for (int j = 0; j < k && !seen; j++) seen = ins->operands[j] == o;
    if (seen) continue;
    bool broadcast = false;
    while (o->op == HLO_OP_BROADCAST && o->n_operands == 1) o = o->operands[0], broadcast = true;
    if (!shape_is_array(&o->shape) || shape_elements(&o->shape) <= 1) continue;
    int64_t bytes = shape_byte_size(&o->shape);
    if (broadcast && bytes <= size / SMALL_BROADCAST_RATIO) continue;
    total += bytes;
  }
  return total;
}

static bool may_join(const fusion_ctx *x, const group *g, int p) {
  hlo_instr *ins = x->c->instrs[p];
  if (x->output_root[p] || x->group_of_root[p] >= 0 || !is_loop_fusible(ins)) return false;
  bool copied = !all_users_exclusive(x, g, p);
  /* A copy that reads more than the value it replaces adds memory traffic, and copies
   * of copies compound: a residual stream of adds would be recomputed from the first
   * layer inside every later layer's kernels. Such a producer is fused only where it
   * dies (XLA's global unfusibility rule, simplified to this group). */
  int64_t limit = shape_byte_size(&ins->shape);
  /* A narrowing convert (f32 -> bf16) may read up to twice what it replaces: copied into
   * each reader it costs no more traffic than writing the narrow value out and reading
   * it back in every reader (up to three), and saves a pass over memory. */
  if (ins->op == HLO_OP_CONVERT) limit *= 2;
  if (copied && bytes_read_by_copy(ins) > limit) return false;
  /* An expensive op is computed once: neither copied into a second kernel nor again for
   * each element a broadcast makes of it; one the backend finds costly only the latter. */
  bool expensive = is_expensive(ins->op);
  if (!expensive && !(x->policy && x->policy->costly_per_element && x->policy->costly_per_element(ins))) return true;
  if (expensive && copied) return false;
  for (int u = x->user_start[p]; u < x->user_start[p + 1]; u++) {
    int ui = x->user_idx[u];
    unsigned char us = state_of(x, g, ui);
    if (us && (x->c->instrs[ui]->op == HLO_OP_BROADCAST || (us & MEMBER_REUSED))) return false;
  }
  return true;
}

/* Queues the operands of member i as candidate producers of the forming group. */
static void queue_operands(fusion_ctx *x, int i) {
  const hlo_instr *ins = x->c->instrs[i];
  int tag = x->queue_tag;
  for (int k = 0; k < ins->n_operands; k++) {
    int oi = x->index_of_id[ins->operands[k]->id];
    if (x->queued[oi] == tag) continue;
    x->queued[oi] = tag;
    int at = x->n_heap++; /* sift up */
    while (at > 0 && x->heap[(at - 1) / 2] < oi) {
      x->heap[at] = x->heap[(at - 1) / 2];
      at = (at - 1) / 2;
    }
    x->heap[at] = oi;
    fusion_work++;
  }
}

static int pop_candidate(fusion_ctx *x) {
  int top = x->heap[0], last = x->heap[--x->n_heap], at = 0;
  for (;;) { /* sift down */
    int child = 2 * at + 1;
    if (child >= x->n_heap) break;
    if (child + 1 < x->n_heap && x->heap[child + 1] > x->heap[child]) child++;
    if (x->heap[child] <= last) break;
    x->heap[at] = x->heap[child];
    at = child;
  }
  if (x->n_heap > 0) x->heap[at] = last;
  fusion_work++;
  return top;
}

/* Grows a group from its root over its operands, nearest producer first: every user of
 * a producer comes after it, so by the time a producer is decided, all of its users that
 * will ever join have joined. The candidates are exactly the operands of members, taken
 * from a max-heap of instruction indices, so the work is proportional to the group's
 * size rather than to the distance down to its lowest operand (a parameter read by
 * every group of a long chain would make that quadratic). Growth stops once the
 * group's code cost reaches HLO_FUSION_MAX_COST; what it would have absorbed stays
 * outside as the inputs of the group and becomes the root of the next one, so a long
 * chain turns into a sequence of bounded kernels. Returns whether anything but
 * constants joined. */
static bool grow_group(fusion_ctx *x, group *g) {
  bool absorbed = false;
  int cost = hlo_pass_fusion_code_cost(x->c->instrs[g->root]);
  x->n_heap = 0;
  x->queue_tag++;
  queue_operands(x, g->root);
  while (x->n_heap > 0 && cost < HLO_FUSION_MAX_COST) {
    int p = pop_candidate(x);
    if (!may_join(x, g, p)) continue;
    add_member(x, g, p);
    queue_operands(x, p);
    cost += hlo_pass_fusion_code_cost(x->c->instrs[p]);
    if (x->c->instrs[p]->op != HLO_OP_CONSTANT) absorbed = true;
  }
  return absorbed;
}

static void mark_operands_needed(fusion_ctx *x, int i) {
  hlo_instr *ins = x->c->instrs[i];
  for (int k = 0; k < ins->n_operands; k++) {
    int oi = x->index_of_id[ins->operands[k]->id];
    if (oi >= 0) x->needed[oi] = true;
  }
}

static void mark_group_inputs_needed(fusion_ctx *x, const group *g) {
  for (int m = 0; m < g->n_members; m++) {
    hlo_instr *ins = x->c->instrs[g->members[m]];
    for (int k = 0; k < ins->n_operands; k++) {
      int oi = x->index_of_id[ins->operands[k]->id];
      if (oi >= 0 && !is_member(x, g, oi)) x->needed[oi] = true;
    }
  }
}

static void form_loop_groups(fusion_ctx *x) {
  hlo_computation *c = x->c;
  for (int i = 0; i < x->n; i++)
    x->needed[i] = c->instrs[i] == c->root || hlo_pass_has_side_effect(c->instrs[i]);
  for (int i = x->n - 1; i >= 0; i--) {
    if (!x->needed[i]) continue;
    hlo_instr *ins = c->instrs[i];
    if (x->group_of_root[i] >= 0) { /* a kOutput or kCustom group */
      mark_group_inputs_needed(x, &x->groups[x->group_of_root[i]]);
      continue;
    }
    bool input = is_input_fusion_root(ins);
    /* A dynamic-slice joins its readers but roots no group: alone it stays a kernel of
     * its own or the backend's native row copy (memcpy per row), and what it would
     * absorb is only its scalar start indices. */
    if (input || (is_loop_fusible(ins) && ins->op != HLO_OP_DYNAMIC_SLICE)) {
      group *g = new_group(x, i, input ? "kInput" : "kLoop");
      if (grow_group(x, g)) {
        mark_group_inputs_needed(x, g);
        continue;
      }
      drop_last_group(x);
    }
    mark_operands_needed(x, i);
  }
  finish_group(x);
}

/* ------------------------------------------------------ materialize ---- */

static kiln_status build_group(fusion_ctx *x, const group *g, name_set *names, hlo_instr **fusion_out) {
  hlo_computation *c = x->c;
  hlo_module *m = c->module;
  int r = g->root;
  size_t max_inputs = 1;
  for (int j = 0; j < g->n_members; j++) max_inputs += (size_t)c->instrs[g->members[j]]->n_operands;
  hlo_instr **clone = x->clone; /* all NULL between groups */
  hlo_instr **inputs = malloc(max_inputs * sizeof *inputs);
  if (!inputs) abort();
  int n_inputs = 0;
  kiln_status st = NULL;
  hlo_computation *fc = hlo_computation_new(m, unique_name(m, names, "fused_computation"));
  fc->is_fusion_computation = true;
  /* Parameters: values read by members from outside, in first-read order (members are
   * sorted by index, which is definition order). */
  for (int j = 0; j < g->n_members && !st; j++) {
    hlo_instr *ins = c->instrs[g->members[j]];
    for (int k = 0; k < ins->n_operands && !st; k++) {
      hlo_instr *o = ins->operands[k];
      int oi = x->index_of_id[o->id];
      if (is_member(x, g, oi) || clone[oi]) continue;
      char pname[32];
      snprintf(pname, sizeof pname, "param_%d", n_inputs);
      st = hlo_build_parameter(fc, n_inputs, &o->shape, unique_name(m, names, pname), &clone[oi]);
      inputs[n_inputs++] = o;
    }
  }
  for (int j = 0; j < g->n_members && !st; j++) {
    int i = g->members[j];
    hlo_instr *ins = c->instrs[i];
    hlo_instr *ops[HLO_MAX_RANK * 4];
    hlo_instr **opv =
        ins->n_operands <= (int)(sizeof ops / sizeof ops[0]) ? ops : malloc((size_t)ins->n_operands * sizeof *opv);
    if (!opv) abort();
    for (int k = 0; k < ins->n_operands; k++) opv[k] = clone[x->index_of_id[ins->operands[k]->id]];
    hlo_instr tmpl = hlo_instr_template_from(ins, opv);
    tmpl.name = unique_name(m, names, strip_number(m, ins->name));
    tmpl.literal = ins->literal ? literal_clone(ins->literal) : NULL;
    st = hlo_build_instr(fc, &tmpl, &clone[i]);
    if (opv != ops) free(opv);
  }
  if (!st) st = hlo_build_set_root(fc, clone[r]);
  if (!st) {
    hlo_instr tmpl = hlo_instr_template(HLO_OP_FUSION);
    tmpl.name = unique_name(m, names, "fusion");
    tmpl.n_operands = n_inputs;
    tmpl.operands = inputs;
    tmpl.n_called = 1;
    tmpl.called = &fc;
    tmpl.fusion_kind = g->kind;
    tmpl.metadata = c->instrs[r]->metadata;
    st = hlo_build_instr(c, &tmpl, fusion_out);
  }
  for (int j = 0; j < g->n_members; j++) clone[g->members[j]] = NULL;
  for (int k = 0; k < n_inputs; k++) clone[x->index_of_id[inputs[k]->id]] = NULL;
  fusion_work += max_inputs;
  free(inputs);
  return status_wrap(st, "fusion: building %s fusion of %s", g->kind, c->instrs[r]->name);
}

/* ------------------------------------------------------------ driver ---- */

static kiln_status fuse_computation(hlo_computation *c, const hlo_fusion_policy *policy, name_set *names,
                                    bool *changed) {
  fusion_ctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.policy = policy;
  x.n = c->n_instrs;
  hlo_module *m = c->module;
  x.index_of_id = malloc(((size_t)m->next_id + 1) * sizeof(int));
  x.user_start = calloc((size_t)x.n + 1, sizeof(int));
  x.needed = calloc((size_t)x.n + 1, sizeof(bool));
  x.output_root = calloc((size_t)x.n + 1, sizeof(bool));
  x.in_output_chain = calloc((size_t)x.n + 1, sizeof(bool));
  x.group_of_root = malloc(((size_t)x.n + 1) * sizeof(int));
  x.forming = -1;
  x.forming_state = calloc((size_t)x.n + 1, 1);
  x.queued = calloc((size_t)x.n + 1, sizeof(int));
  x.clone = calloc((size_t)x.n + 1, sizeof *x.clone);
  if (!x.index_of_id || !x.user_start || !x.needed || !x.output_root || !x.in_output_chain || !x.group_of_root ||
      !x.forming_state || !x.queued || !x.clone)
    abort();
  for (int i = 0; i <= m->next_id; i++) x.index_of_id[i] = -1;
  for (int i = 0; i < x.n; i++) {
    x.index_of_id[c->instrs[i]->id] = i;
    x.group_of_root[i] = -1;
  }
  /* Users, each distinct user once; instrs are in definition order (an invariant the
   * verifier keeps), so every user index is larger than its operand's. */
  int total = 0;
  for (int i = 0; i < x.n; i++) total += c->instrs[i]->n_operands;
  x.user_idx = malloc(((size_t)total + 1) * sizeof(int));
  x.heap = malloc(((size_t)total + 1) * sizeof(int)); /* a group queues each operand once */
  int *count = calloc((size_t)x.n + 1, sizeof(int));
  if (!x.user_idx || !x.heap || !count) abort();
  kiln_status st = NULL;
  for (int i = 0; i < x.n && !st; i++) {
    hlo_instr *ins = c->instrs[i];
    for (int k = 0; k < ins->n_operands; k++) {
      int oi = x.index_of_id[ins->operands[k]->id];
      if (oi < 0 || oi >= i) {
        st = ERR_INTERNAL("fusion: %s in %s reads %s, which is not defined before it in that computation",
                          ins->name, c->name, ins->operands[k]->name);
        break;
      }
      bool seen = false;
      for (int j = 0; j < k && !seen; j++) seen = ins->operands[j] == ins->operands[k];
      if (!seen) count[oi]++;
    }
  }
  if (!st) {
    for (int i = 0; i < x.n; i++) x.user_start[i + 1] = x.user_start[i] + count[i];
    memset(count, 0, (size_t)x.n * sizeof(int));
    for (int i = 0; i < x.n; i++) {
      hlo_instr *ins = c->instrs[i];
      for (int k = 0; k < ins->n_operands; k++) {
        bool seen = false;
        for (int j = 0; j < k && !seen; j++) seen = ins->operands[j] == ins->operands[k];
        if (seen) continue;
        int oi = x.index_of_id[ins->operands[k]->id];
        x.user_idx[x.user_start[oi] + count[oi]++] = i;
      }
    }
    form_output_groups(&x);
    form_softmax_groups(&x);
    form_loop_groups(&x);
  }
  /* Build groups in definition order of their roots so names follow program order. */
  hlo_instr **fusions = calloc((size_t)x.n_groups + 1, sizeof *fusions);
  if (!fusions) abort();
  int built = 0;
  for (int i = 0; i < x.n && !st; i++) {
    int gi = x.group_of_root[i];
    if (gi < 0 || !x.needed[i]) continue; /* a kOutput chain nobody reads is left to DCE */
    st = build_group(&x, &x.groups[gi], names, &fusions[gi]);
    if (!st) built++;
  }
  if (!st && built > 0) {
    /* All at once: one call per group would scan the computation once per group. */
    hlo_instr **roots = malloc((size_t)built * sizeof *roots), **repl = malloc((size_t)built * sizeof *repl);
    if (!roots || !repl) abort();
    int k = 0;
    for (int gi = 0; gi < x.n_groups; gi++)
      if (fusions[gi]) {
        roots[k] = c->instrs[x.groups[gi].root];
        repl[k++] = fusions[gi];
      }
    hlo_pass_replace_uses_many(c, k, roots, repl);
    free(roots);
    free(repl);
    hlo_pass_restore_order(c);
    *changed = true;
  }
  for (int gi = 0; gi < x.n_groups; gi++) {
    free(x.groups[gi].members);
    free(x.groups[gi].member_state);
  }
  free(x.forming_state);
  free(x.queued);
  free(x.clone);
  free(x.heap);
  free(x.groups);
  free(fusions);
  free(count);
  free(x.user_idx);
  free(x.index_of_id);
  free(x.user_start);
  free(x.needed);
  free(x.output_root);
  free(x.in_output_chain);
  free(x.group_of_root);
  return st;
}

/* Computations that execute as sequential programs: the entry and what it reaches
 * through control flow. Reducers and comparators are applied per element and stay as
 * they are. */
static bool applied_per_element(const hlo_module *m, const hlo_computation *callee) {
  for (int ci = 0; ci < m->n_comps; ci++)
    for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
      const hlo_instr *ins = m->comps[ci]->instrs[i];
      if (ins->op == HLO_OP_WHILE || ins->op == HLO_OP_CONDITIONAL || ins->op == HLO_OP_CALL) continue;
      for (int k = 0; k < ins->n_called; k++)
        if (ins->called[k] == callee) return true;
    }
  return false;
}

static int collect_program_computations(hlo_module *m, hlo_computation **out) {
  int n = 0;
  if (!m->entry) return 0;
  out[n++] = m->entry;
  for (int q = 0; q < n; q++) {
    hlo_computation *c = out[q];
    for (int i = 0; i < c->n_instrs; i++) {
      hlo_instr *ins = c->instrs[i];
      if (ins->op != HLO_OP_WHILE && ins->op != HLO_OP_CONDITIONAL && ins->op != HLO_OP_CALL) continue;
      for (int k = 0; k < ins->n_called; k++) {
        hlo_computation *callee = ins->called[k];
        bool seen = callee->is_fusion_computation || applied_per_element(m, callee);
        for (int j = 0; j < n && !seen; j++) seen = out[j] == callee;
        if (!seen) out[n++] = callee;
      }
    }
  }
  return n;
}

kiln_status hlo_pass_fusion(hlo_module *m, bool *changed) { return hlo_pass_fusion_with(m, NULL, changed); }

kiln_status hlo_pass_fusion_with(hlo_module *m, const hlo_fusion_policy *policy, bool *changed) {
  *changed = false;
  fusion_work = 0;
  name_set names;
  memset(&names, 0, sizeof names);
  name_set_grow(&names);
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    name_set_add(&names, c->name);
    for (int i = 0; i < c->n_instrs; i++) name_set_add(&names, c->instrs[i]->name);
  }
  hlo_computation **progs = malloc(((size_t)m->n_comps + 1) * sizeof *progs);
  if (!progs) abort();
  int n_progs = collect_program_computations(m, progs);
  kiln_status st = NULL;
  for (int i = 0; i < n_progs && !st; i++) st = fuse_computation(progs[i], policy, &names, changed);
  free(progs);
  free(names.slots);
  free(names.bases);
  free(names.next_suffix);
  if (!st && *changed) st = hlo_build_order_computations(m);
  return st;
}
