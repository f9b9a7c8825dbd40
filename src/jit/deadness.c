/* Deadness analysis (see deadness.h for the rules and the loop strategy). Two parts:
 * a hash-consing predicate factory whose constructors normalise as they build, so
 * pointer equality is the only comparison clustering ever needs, and a forward pass
 * over the graph in topological order (back-edges out of NextIteration skipped) that
 * applies each node's transfer function, repeated with more frames marked pessimistic
 * until every optimistic loop assumption has been checked. All predicates and per-node
 * tables live in one arena that deadness_free releases. */
#include "jit/deadness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"

/* Operand lists longer than this skip the quadratic simplifications (complement,
 * absorption, consensus): missing one only makes two predicates compare unequal,
 * which is conservative. */
#define DEADNESS_CHEAP_OPERANDS 64
#define DEADNESS_PRINT_LIMIT 4096

struct deadness_pred {
  deadness_pred_kind kind;
  uint32_t id; /* creation order: the canonical operand order */
  uint64_t hash;
  bool negated;            /* SYMBOL */
  const char *label;       /* SYMBOL */
  const graph_node *node;  /* SYMBOL made from a switch predicate tensor, else NULL */
  int frame;               /* iter(F) symbols made by the analysis: F's index, else 0 */
  int n;                   /* NOT: 1, AND/OR: >= 2 */
  const deadness_pred **ops;
};

typedef struct node_info {
  bool done;
  int n_out;
  const deadness_pred **out;
  const deadness_pred *control;
  int frame;
} node_info;

typedef struct frame_info {
  const char *name; /* NULL for the root frame */
  int parent;
  bool pessimistic;
  const deadness_pred *iter;  /* iter(NAME) */
  const deadness_pred *entry; /* entry predicate of the first header Merge seen */
  const deadness_pred *back;  /* back-edge predicate of the first header Merge checked */
  /* Exits: opaque until a pass has shown back == AND(entry, iter(F), lc) for a LoopCond
   * symbol lc (then exit_lc = lc, and an Exit fed by AND(entry, iter(F), !lc) gets
   * entry); a later pass that no longer shows it makes them opaque for good. Every
   * change is one-way, which bounds the number of passes. */
  enum { EXIT_UNKNOWN, EXIT_REFINED, EXIT_OPAQUE } exit_mode;
  const deadness_pred *exit_lc;
} frame_info;

struct deadness {
  arena *arena;
  const graph *g;
  /* intern table: open addressing, power-of-two capacity */
  deadness_pred **slots;
  size_t cap, count;
  uint32_t next_id;
  const deadness_pred *true_pred, *false_pred;
  /* analysis results, indexed by node id */
  int n_ids;
  node_info *info;
  int n_frames, cap_frames;
  frame_info *frames;
};

/* ---------------------------------------------------------------- factory ---- */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint64_t hash_string(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static uint64_t hash_parts(deadness_pred_kind kind, bool negated, const char *label, int n,
                           const deadness_pred *const *ops) {
  uint64_t h = mix64((uint64_t)kind * 0x9e3779b97f4a7c15ULL + (negated ? 7 : 3));
  if (label) h = mix64(h ^ hash_string(label));
  for (int i = 0; i < n; i++) h = mix64(h ^ ((uint64_t)ops[i]->id + 0x632be59bd9b4e019ULL));
  return h;
}

static bool same_parts(const deadness_pred *p, deadness_pred_kind kind, bool negated, const char *label,
                       int n, const deadness_pred *const *ops) {
  if (p->kind != kind || p->n != n || p->negated != negated) return false;
  if ((p->label == NULL) != (label == NULL)) return false;
  if (label && strcmp(p->label, label) != 0) return false;
  for (int i = 0; i < n; i++)
    if (p->ops[i] != ops[i]) return false;
  return true;
}

static void table_grow(deadness *d) {
  size_t cap = d->cap ? d->cap * 2 : 256;
  deadness_pred **slots = calloc(cap, sizeof *slots);
  if (!slots) abort();
  for (size_t i = 0; i < d->cap; i++) {
    deadness_pred *p = d->slots[i];
    if (!p) continue;
    size_t j = (size_t)p->hash & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = p;
  }
  free(d->slots);
  d->slots = slots;
  d->cap = cap;
}

/* The one constructor every predicate goes through: returns the existing equal
 * predicate or a new arena copy. ops must already be normalised. */
static deadness_pred *intern(deadness *d, deadness_pred_kind kind, bool negated, const char *label, int n,
                             const deadness_pred *const *ops) {
  uint64_t h = hash_parts(kind, negated, label, n, ops);
  if ((d->count + 1) * 2 > d->cap) table_grow(d);
  size_t j = (size_t)h & (d->cap - 1);
  for (; d->slots[j]; j = (j + 1) & (d->cap - 1)) {
    deadness_pred *p = d->slots[j];
    if (p->hash == h && same_parts(p, kind, negated, label, n, ops)) return p;
  }
  deadness_pred *p = arena_calloc(d->arena, 1, sizeof *p);
  p->kind = kind;
  p->id = d->next_id++;
  p->hash = h;
  p->negated = negated;
  p->label = label ? arena_strdup(d->arena, label) : NULL;
  p->n = n;
  if (n > 0) p->ops = arena_memdup(d->arena, ops, (size_t)n * sizeof *ops);
  d->slots[j] = p;
  d->count++;
  return p;
}

const deadness_pred *deadness_make_true(deadness *d) { return d->true_pred; }
const deadness_pred *deadness_make_false(deadness *d) { return d->false_pred; }

const deadness_pred *deadness_make_symbol(deadness *d, const char *label, bool negated) {
  return intern(d, DEADNESS_SYMBOL, negated, label ? label : "", 0, NULL);
}

const deadness_pred *deadness_make_not(deadness *d, const deadness_pred *p) {
  switch (p->kind) {
  case DEADNESS_TRUE: return d->false_pred;
  case DEADNESS_FALSE: return d->true_pred;
  case DEADNESS_SYMBOL: return deadness_make_symbol(d, p->label, !p->negated);
  case DEADNESS_NOT: return p->ops[0];
  default: return intern(d, DEADNESS_NOT, false, NULL, 1, &p);
  }
}

static bool are_complements(const deadness_pred *a, const deadness_pred *b) {
  if (a->kind == DEADNESS_SYMBOL && b->kind == DEADNESS_SYMBOL)
    return a->negated != b->negated && strcmp(a->label, b->label) == 0;
  if (a->kind == DEADNESS_NOT && a->ops[0] == b) return true;
  if (b->kind == DEADNESS_NOT && b->ops[0] == a) return true;
  return false;
}

static int cmp_pred_id(const void *a, const void *b) {
  uint32_t x = (*(const deadness_pred *const *)a)->id, y = (*(const deadness_pred *const *)b)->id;
  return x < y ? -1 : x > y;
}

/* Viewed from an OR, an operand is the set of its conjuncts (an AND's operands, or
 * itself); from an AND, the set of its disjuncts. Both come out sorted by id. */
static int operand_set(const deadness_pred *const *slot, deadness_pred_kind inner,
                       const deadness_pred *const **set) {
  if ((*slot)->kind == inner) {
    *set = (*slot)->ops;
    return (*slot)->n;
  }
  *set = slot;
  return 1;
}

static bool set_is_subset(const deadness_pred *const *a, int na, const deadness_pred *const *b, int nb) {
  if (na > nb) return false;
  int j = 0;
  for (int i = 0; i < na; i++) {
    while (j < nb && b[j]->id < a[i]->id) j++;
    if (j == nb || b[j] != a[i]) return false;
    j++;
  }
  return true;
}

static const deadness_pred *make_nary(deadness *d, deadness_pred_kind kind, int n, const deadness_pred *const *ops);

/* Absorption and consensus over a sorted, deduplicated operand list. Returns NULL when
 * nothing applied (buf may have shrunk by absorption: *n is updated), else the rebuilt
 * predicate. */
static const deadness_pred *simplify_pairs(deadness *d, deadness_pred_kind kind, const deadness_pred **buf,
                                           int *n) {
  deadness_pred_kind inner = kind == DEADNESS_OR ? DEADNESS_AND : DEADNESS_OR;
  int count = *n;
  size_t alloc_count = count > 0 ? (size_t)count : 1;
  bool *gone = calloc(alloc_count, sizeof *gone);
  const deadness_pred **common = malloc(alloc_count * sizeof *common);
  if (!gone || !common) abort();
  for (int i = 0; i < count; i++) {
    if (gone[i]) continue;
    const deadness_pred *const *si;
    int ni = operand_set(&buf[i], inner, &si);
    for (int j = i + 1; j < count && !gone[i]; j++) {
      if (gone[j]) continue;
      const deadness_pred *const *sj;
      int nj = operand_set(&buf[j], inner, &sj);
      if (set_is_subset(si, ni, sj, nj)) { /* a | (a & b) = a */
        gone[j] = true;
        continue;
      }
      if (set_is_subset(sj, nj, si, ni)) {
        gone[i] = true;
        continue;
      }
      if (ni != nj) continue;
      /* (a & p) | (a & !p) = a: the sets differ in exactly one complementary pair */
      int ia = 0, ib = 0, nc = 0, only_a = -1, only_b = -1, extra = 0;
      const deadness_pred **cbuf = malloc((ni > 0 ? (size_t)ni : 1) * sizeof *cbuf);
      if (!cbuf) abort();
      while (ia < ni || ib < nj) {
        if (ia < ni && ib < nj && si[ia] == sj[ib]) {
          cbuf[nc++] = si[ia];
          ia++, ib++;
        } else if (ib == nj || (ia < ni && si[ia]->id < sj[ib]->id)) {
          if (only_a >= 0) extra++;
          only_a = ia++;
        } else {
          if (only_b >= 0) extra++;
          only_b = ib++;
        }
      }
      if (!extra && only_a >= 0 && only_b >= 0 && are_complements(si[only_a], sj[only_b])) {
        const deadness_pred *merged = make_nary(d, inner, nc, cbuf);
        free(cbuf);
        int m = 0;
        for (int k = 0; k < count; k++)
          if (k != i && k != j && !gone[k]) common[m++] = buf[k];
        common[m++] = merged;
        const deadness_pred *r = make_nary(d, kind, m, common);
        free(gone);
        free(common);
        return r;
      }
      free(cbuf);
    }
  }
  int m = 0;
  for (int k = 0; k < count; k++)
    if (!gone[k]) buf[m++] = buf[k];
  *n = m;
  free(gone);
  free(common);
  return NULL;
}

static const deadness_pred *make_nary(deadness *d, deadness_pred_kind kind, int n, const deadness_pred *const *ops) {
  const deadness_pred *identity = kind == DEADNESS_AND ? d->true_pred : d->false_pred;
  const deadness_pred *annihilator = kind == DEADNESS_AND ? d->false_pred : d->true_pred;
  int total = 0;
  for (int i = 0; i < n; i++) total += ops[i]->kind == kind ? ops[i]->n : 1;
  const deadness_pred **buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *buf);
  if (!buf) abort();
  int m = 0;
  for (int i = 0; i < n; i++) {
    const deadness_pred *p = ops[i];
    if (p == annihilator) {
      free(buf);
      return annihilator;
    }
    if (p == identity) continue;
    if (p->kind == kind)
      for (int k = 0; k < p->n; k++) buf[m++] = p->ops[k];
    else
      buf[m++] = p;
  }
  qsort(buf, (size_t)m, sizeof *buf, cmp_pred_id);
  int u = 0;
  for (int i = 0; i < m; i++)
    if (u == 0 || buf[u - 1] != buf[i]) buf[u++] = buf[i];
  m = u;
  if (m <= DEADNESS_CHEAP_OPERANDS) {
    for (int i = 0; i < m; i++)
      for (int j = i + 1; j < m; j++)
        if (are_complements(buf[i], buf[j])) { /* x & !x, x | !x */
          free(buf);
          return annihilator;
        }
    const deadness_pred *r = simplify_pairs(d, kind, buf, &m);
    if (r) {
      free(buf);
      return r;
    }
  }
  const deadness_pred *r;
  if (m == 0)
    r = identity;
  else if (m == 1)
    r = buf[0];
  else
    r = intern(d, kind, false, NULL, m, buf);
  free(buf);
  return r;
}

const deadness_pred *deadness_make_and(deadness *d, int n, const deadness_pred *const *ops) {
  return make_nary(d, DEADNESS_AND, n, ops);
}

const deadness_pred *deadness_make_or(deadness *d, int n, const deadness_pred *const *ops) {
  return make_nary(d, DEADNESS_OR, n, ops);
}

static const deadness_pred *make_and2(deadness *d, const deadness_pred *a, const deadness_pred *b) {
  const deadness_pred *ops[2] = {a, b};
  return make_nary(d, DEADNESS_AND, 2, ops);
}

deadness *deadness_new_factory(void) {
  deadness *d = calloc(1, sizeof *d);
  if (!d) abort();
  d->arena = arena_new();
  d->true_pred = intern(d, DEADNESS_TRUE, false, NULL, 0, NULL);
  d->false_pred = intern(d, DEADNESS_FALSE, false, NULL, 0, NULL);
  return d;
}

void deadness_free(deadness *d) {
  if (!d) return;
  free(d->slots);
  free(d->frames);
  arena_free(d->arena);
  free(d);
}

deadness_pred_kind deadness_pred_get_kind(const deadness_pred *p) { return p->kind; }
int deadness_pred_num_operands(const deadness_pred *p) { return p->n; }
const deadness_pred *deadness_pred_operand(const deadness_pred *p, int i) {
  return i >= 0 && i < p->n ? p->ops[i] : NULL;
}

/* -------------------------------------------------------------- printing ---- */

static void print_rec(strbuf *b, const deadness_pred *p, size_t start) {
  if (b->len - start > DEADNESS_PRINT_LIMIT) {
    if (b->len < 3 || strcmp(b->data + b->len - 3, "...") != 0) strbuf_append(b, "...");
    return;
  }
  switch (p->kind) {
  case DEADNESS_TRUE: strbuf_append(b, "#true"); return;
  case DEADNESS_FALSE: strbuf_append(b, "#false"); return;
  case DEADNESS_SYMBOL:
    if (p->negated) strbuf_putc(b, '!');
    strbuf_append(b, p->label);
    return;
  case DEADNESS_NOT:
    strbuf_putc(b, '!');
    print_rec(b, p->ops[0], start);
    return;
  case DEADNESS_AND:
  case DEADNESS_OR:
    strbuf_putc(b, '(');
    for (int i = 0; i < p->n; i++) {
      if (i) strbuf_append(b, p->kind == DEADNESS_AND ? " & " : " | ");
      print_rec(b, p->ops[i], start);
    }
    strbuf_putc(b, ')');
    return;
  }
}

void deadness_pred_print(strbuf *b, const deadness_pred *p) { print_rec(b, p, b->len); }

char *deadness_pred_to_string(const deadness_pred *p) {
  strbuf b;
  strbuf_init(&b);
  deadness_pred_print(&b, p);
  return strbuf_take(&b);
}

/* -------------------------------------------------------------- analysis ---- */

static bool op_is(const graph_node *n, const char *a, const char *b) {
  const char *base = graph_node_op_base(n);
  return strcmp(base, a) == 0 || (b && strcmp(base, b) == 0);
}

static bool is_back_edge(const graph_edge *e) { return graph_node_is_next_iteration(e->node); }

static const deadness_pred *input_pred(const deadness *d, const graph_edge *e) {
  const node_info *src = &d->info[e->node->id];
  if (!src->done || e->port < 0 || e->port >= src->n_out) return NULL;
  return src->out[e->port];
}

/* AND of every data and control input that is already known (back-edges are not). */
static const deadness_pred *inputs_and(deadness *d, const graph_node *n) {
  int cap = n->n_inputs + n->n_control;
  const deadness_pred **ops = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *ops);
  if (!ops) abort();
  int m = 0;
  for (int i = 0; i < n->n_inputs; i++) {
    if (is_back_edge(&n->inputs[i])) continue;
    const deadness_pred *p = input_pred(d, &n->inputs[i]);
    if (p) ops[m++] = p;
  }
  for (int i = 0; i < n->n_control; i++) {
    const node_info *src = &d->info[n->control_inputs[i]->id];
    if (src->done && !graph_node_is_next_iteration(n->control_inputs[i])) ops[m++] = src->control;
  }
  const deadness_pred *r = make_nary(d, DEADNESS_AND, m, ops);
  free(ops);
  return r;
}

/* Frames are found through their interned iter(NAME) symbol, which remembers the
 * frame's index: no separate name table, and no quadratic search over many loops. */
static int frame_find_or_add(deadness *d, const char *name, int parent) {
  deadness_pred *iter = intern(d, DEADNESS_SYMBOL, false, arena_printf(d->arena, "iter(%s)", name), 0, NULL);
  if (iter->frame > 0) return iter->frame;
  if (d->n_frames == d->cap_frames) {
    d->cap_frames = d->cap_frames ? d->cap_frames * 2 : 8;
    d->frames = realloc(d->frames, (size_t)d->cap_frames * sizeof *d->frames);
    if (!d->frames) abort();
  }
  frame_info *f = &d->frames[d->n_frames];
  memset(f, 0, sizeof *f);
  f->name = arena_strdup(d->arena, name);
  f->parent = parent;
  f->iter = iter;
  iter->frame = d->n_frames;
  return d->n_frames++;
}

static int node_frame(deadness *d, const graph_node *n) {
  int in_frame = 0;
  bool found = false;
  for (int i = 0; i < n->n_inputs && !found; i++)
    if (!is_back_edge(&n->inputs[i]) && d->info[n->inputs[i].node->id].done) {
      in_frame = d->info[n->inputs[i].node->id].frame;
      found = true;
    }
  for (int i = 0; i < n->n_control && !found; i++)
    if (d->info[n->control_inputs[i]->id].done) {
      in_frame = d->info[n->control_inputs[i]->id].frame;
      found = true;
    }
  if (op_is(n, "Enter", "RefEnter")) {
    const graph_attr_value *v = graph_node_attr(n, "frame_name");
    /* a nameless Enter still opens a frame: its own, so nothing is shared wrongly */
    const char *name = v && v->kind == GRAPH_ATTR_STRING ? v->s.data : arena_printf(d->arena, "<%s>", n->name);
    return frame_find_or_add(d, name, in_frame);
  }
  if (op_is(n, "Exit", "RefExit")) return in_frame ? d->frames[in_frame].parent : 0;
  return in_frame;
}

static bool is_loop_merge(const graph_node *n) {
  if (!op_is(n, "Merge", "RefMerge")) return false;
  for (int i = 0; i < n->n_inputs; i++)
    if (is_back_edge(&n->inputs[i])) return true;
  return false;
}

static const deadness_pred *opaque_symbol(deadness *d, const char *what, const graph_node *n) {
  return deadness_make_symbol(d, arena_printf(d->arena, "%s(%s)", what, n->name), false);
}

static const deadness_pred *merge_entry(deadness *d, const graph_node *n) {
  const deadness_pred **ops = malloc((size_t)(n->n_inputs > 0 ? n->n_inputs : 1) * sizeof *ops);
  if (!ops) abort();
  int m = 0;
  for (int i = 0; i < n->n_inputs; i++) {
    if (is_back_edge(&n->inputs[i])) continue;
    const deadness_pred *p = input_pred(d, &n->inputs[i]);
    if (p) ops[m++] = p;
  }
  const deadness_pred *r = make_nary(d, DEADNESS_OR, m, ops);
  free(ops);
  return r;
}

static const deadness_pred *merge_back(deadness *d, const graph_node *n) {
  const deadness_pred **ops = malloc((size_t)(n->n_inputs > 0 ? n->n_inputs : 1) * sizeof *ops);
  if (!ops) abort();
  int m = 0;
  for (int i = 0; i < n->n_inputs; i++) {
    if (!is_back_edge(&n->inputs[i])) continue;
    const deadness_pred *p = input_pred(d, &n->inputs[i]);
    ops[m++] = p ? p : d->false_pred;
  }
  const deadness_pred *r = make_nary(d, DEADNESS_OR, m, ops);
  free(ops);
  return r;
}

/* The LoopCond symbol lc when p is AND(entry, iter(F), lc) (negated: with !lc). */
static const deadness_pred *loop_cond_of(deadness *d, const frame_info *f, const deadness_pred *p, bool negated) {
  if (!f->entry || p->kind != DEADNESS_AND) return NULL;
  for (int i = 0; i < p->n; i++) {
    const deadness_pred *c = p->ops[i];
    if (c->kind != DEADNESS_SYMBOL || c->negated != negated || !c->node || !op_is(c->node, "LoopCond", NULL))
      continue;
    const deadness_pred *ops[3] = {f->entry, f->iter, c};
    if (make_nary(d, DEADNESS_AND, 3, ops) == p) return c;
  }
  return NULL;
}

/* Exit of frame F. When every header Merge of F stays live exactly while the loop
 * condition holds (exit_mode REFINED) and the Exit sees the plain "condition false"
 * predicate, it fires once, live exactly when the loop was entered. Otherwise its
 * liveness is an opaque symbol of its own (TensorFlow passes the loop's inner
 * predicate out instead; the symbol keeps iteration symbols out of the outer frame). */
static const deadness_pred *exit_pred(deadness *d, const graph_node *n, int loop_frame) {
  const frame_info *f = &d->frames[loop_frame];
  const deadness_pred *in = inputs_and(d, n);
  if (!f->pessimistic && !f->entry) return in; /* a frame without header Merges: nothing loops */
  if (!f->pessimistic && f->exit_mode == EXIT_REFINED) {
    const deadness_pred *lc = loop_cond_of(d, f, in, true);
    if (lc && lc == deadness_make_not(d, f->exit_lc)) return f->entry;
  }
  return opaque_symbol(d, "exit", n);
}

static const deadness_pred *tensor_symbol(deadness *d, const graph_edge *e, bool negated) {
  deadness_pred *p = intern(d, DEADNESS_SYMBOL, negated, arena_printf(d->arena, "%s:%d", e->node->name, e->port),
                            0, NULL);
  if (!p->node) p->node = e->node;
  return p;
}

static void set_all(node_info *info, const deadness_pred *p) {
  for (int i = 0; i < info->n_out; i++) info->out[i] = p;
  info->control = p;
}

static void visit(deadness *d, const graph_node *n) {
  node_info *info = &d->info[n->id];
  info->frame = node_frame(d, n);
  info->n_out = n->n_outputs;
  info->out = arena_calloc(d->arena, (size_t)(n->n_outputs > 0 ? n->n_outputs : 1), sizeof *info->out);
  if (n->is_input || op_is(n, "ControlTrigger", NULL)) {
    set_all(info, d->true_pred);
  } else if (op_is(n, "Switch", "RefSwitch") && n->n_inputs >= 2 && !is_back_edge(&n->inputs[1])) {
    const deadness_pred *in = inputs_and(d, n);
    set_all(info, in);
    if (info->n_out > 0) info->out[0] = make_and2(d, in, tensor_symbol(d, &n->inputs[1], true));
    if (info->n_out > 1) info->out[1] = make_and2(d, in, tensor_symbol(d, &n->inputs[1], false));
  } else if (is_loop_merge(n)) {
    int f = info->frame;
    if (f == 0 || d->frames[f].pessimistic) {
      set_all(info, opaque_symbol(d, "merge", n));
    } else {
      const deadness_pred *entry = merge_entry(d, n);
      if (!d->frames[f].entry) d->frames[f].entry = entry;
      set_all(info, make_and2(d, entry, d->frames[f].iter));
    }
  } else if (op_is(n, "Merge", "RefMerge")) {
    set_all(info, merge_entry(d, n));
  } else if (op_is(n, "Exit", "RefExit") && n->n_inputs >= 1 && d->info[n->inputs[0].node->id].done &&
             d->info[n->inputs[0].node->id].frame != 0) {
    set_all(info, exit_pred(d, n, d->info[n->inputs[0].node->id].frame));
  } else {
    set_all(info, inputs_and(d, n));
  }
  info->done = true;
}

/* One forward pass; returns true when some frame failed its optimistic check (it is
 * then marked pessimistic and the caller runs again). */
static bool run_pass(deadness *d, graph_node *const *order, int n_order) {
  memset(d->info, 0, (size_t)d->n_ids * sizeof *d->info);
  for (int i = 1; i < d->n_frames; i++) d->frames[i].entry = d->frames[i].back = NULL;
  for (int i = 0; i < n_order; i++) visit(d, order[i]);
  bool changed = false;
  for (int i = 0; i < n_order; i++) {
    const graph_node *n = order[i];
    if (!is_loop_merge(n)) continue;
    frame_info *f = &d->frames[d->info[n->id].frame];
    if (d->info[n->id].frame == 0 || f->pessimistic) continue;
    const deadness_pred *entry = merge_entry(d, n), *back = merge_back(d, n);
    if (!f->back) f->back = back;
    if (entry != f->entry || back != f->back) {
      f->pessimistic = true;
      changed = true;
    }
  }
  for (int i = 1; i < d->n_frames; i++) {
    frame_info *f = &d->frames[i];
    if (f->pessimistic || !f->back || f->exit_mode == EXIT_OPAQUE) continue;
    const deadness_pred *lc = loop_cond_of(d, f, f->back, false);
    if (f->exit_mode == EXIT_UNKNOWN) {
      if (lc) {
        f->exit_mode = EXIT_REFINED;
        f->exit_lc = lc;
        changed = true;
      }
    } else if (lc != f->exit_lc) {
      f->exit_mode = EXIT_OPAQUE;
      changed = true;
    }
  }
  /* A frame still unknown may become clean once inner frames' exits are refined (an
   * outer loop's back-edge contains its inner loops' exits), so it is only settled
   * as opaque when nothing else moved; its exits were opaque in this pass anyway. */
  if (!changed)
    for (int i = 1; i < d->n_frames; i++)
      if (d->frames[i].exit_mode == EXIT_UNKNOWN) d->frames[i].exit_mode = EXIT_OPAQUE;
  return changed;
}

kiln_status deadness_analyze(const graph *g, deadness **out) {
  *out = NULL;
  graph_node **order = NULL;
  int n_order = 0;
  TRY(status_wrap(graph_topo_order(g, &order, &n_order), "deadness analysis"));
  deadness *d = deadness_new_factory();
  d->g = g;
  d->n_ids = g->next_id;
  d->info = arena_calloc(d->arena, (size_t)(d->n_ids > 0 ? d->n_ids : 1), sizeof *d->info);
  d->cap_frames = 8;
  d->frames = calloc((size_t)d->cap_frames, sizeof *d->frames);
  if (!d->frames) abort();
  d->n_frames = 1; /* the root frame */
  /* each rerun follows a one-way change of some frame (pessimistic, or its exit mode),
   * so there are at most 3 passes per frame */
  while (run_pass(d, order, n_order)) {
  }
  free(order);
  *out = d;
  return NULL;
}

const deadness_pred *deadness_predicate(const deadness *d, const graph_node *node, int port) {
  if (!d || !node || !d->g || node->graph != d->g || node->id < 0 || node->id >= d->n_ids) return NULL;
  const node_info *info = &d->info[node->id];
  if (!info->done) return NULL;
  if (port == GRAPH_CONTROL) return info->control;
  if (port < 0 || port >= info->n_out) return NULL;
  return info->out[port];
}

const deadness_pred *deadness_node_predicate(const deadness *d, const graph_node *node) {
  const deadness_pred *p = deadness_predicate(d, node, 0);
  return p ? p : deadness_predicate(d, node, GRAPH_CONTROL);
}

bool deadness_has_same_liveness(const deadness *d, const graph_node *a, const graph_node *b) {
  const deadness_pred *pa = deadness_node_predicate(d, a), *pb = deadness_node_predicate(d, b);
  return pa && pa == pb;
}
