/* Resource-variable safety for clustering (TensorFlow's
 * resource_operation_safety_analysis, in its essentials).
 *
 * A compiled cluster reads every resource variable it touches once at entry and writes
 * it back once at exit. That is only faithful if no member reads a value another
 * member of the same cluster wrote before it: so two resource ops x and y, with a path
 * x -> ... -> y in the graph, may not share a cluster when x writes and y reads —
 * the unsafe pairs write->read, write->read-write, read-write->read and
 * read-write->read-write. Reads before writes, and ops without a path between them,
 * are safe. The rule is applied to all resource ops regardless of which variable they
 * touch (handles are runtime values), which is TF's conservative choice too.
 *
 * Paths are computed once, from each resource op, over data and control edges (loop
 * back-edges ignored); models have few resource ops, so a bit matrix is cheap. */
#include <stdlib.h>
#include <string.h>

#include "jit/jit_internal.h"

struct jit_resource_order {
  int n;          /* resource ops */
  int *index_of;  /* node id -> resource op index, -1 */
  uint8_t *reach; /* n*n: reach[i*n+j] = path from op i to op j */
};

jit_resource_kind jit_resource_kind_of(const graph_node *n) {
  const char *b = graph_node_op_base(n);
  if (strncmp(n->op, "tf.", 3) != 0 && strchr(n->op, '.')) return JIT_RES_NONE;
  if (strcmp(b, "ReadVariableOp") == 0) return JIT_RES_READ;
  if (strcmp(b, "AssignVariableOp") == 0) return JIT_RES_WRITE;
  if (strcmp(b, "AssignAddVariableOp") == 0 || strcmp(b, "AssignSubVariableOp") == 0) return JIT_RES_READ_WRITE;
  return JIT_RES_NONE;
}

static const char *kind_name(jit_resource_kind k) {
  switch (k) {
    case JIT_RES_READ: return "read";
    case JIT_RES_WRITE: return "write";
    case JIT_RES_READ_WRITE: return "read-write";
    default: return "none";
  }
}

jit_resource_order *jit_resource_order_new(jit_state *st) {
  jit_resource_order *o = calloc(1, sizeof *o);
  if (!o) abort();
  o->index_of = malloc(((size_t)st->id_limit + 1) * sizeof *o->index_of);
  if (!o->index_of) abort();
  int *ops = malloc(((size_t)st->n_topo + 1) * sizeof *ops);
  if (!ops) abort();
  for (int i = 0; i < st->id_limit; i++) o->index_of[i] = -1;
  for (int t = 0; t < st->n_topo; t++) {
    const graph_node *n = st->topo[t];
    if (jit_node(st, n)->res == JIT_RES_NONE) continue;
    o->index_of[n->id] = o->n;
    ops[o->n++] = n->id;
  }
  o->reach = calloc((size_t)o->n * (size_t)o->n + 1, 1);
  if (!o->reach) abort();
  /* One forward search per resource op, over the topological order (a node is reached
   * when any of its inputs is). */
  uint8_t *seen = malloc((size_t)st->id_limit + 1);
  if (!seen) abort();
  for (int i = 0; i < o->n; i++) {
    memset(seen, 0, (size_t)st->id_limit + 1);
    seen[ops[i]] = 1;
    for (int t = 0; t < st->n_topo; t++) {
      const graph_node *n = st->topo[t];
      if (seen[n->id]) continue;
      bool hit = false;
      for (int k = 0; k < n->n_inputs && !hit; k++)
        hit = !graph_node_is_next_iteration(n->inputs[k].node) && seen[n->inputs[k].node->id];
      for (int k = 0; k < n->n_control && !hit; k++) hit = seen[n->control_inputs[k]->id];
      if (!hit) continue;
      seen[n->id] = 1;
      if (o->index_of[n->id] >= 0) o->reach[(size_t)i * (size_t)o->n + (size_t)o->index_of[n->id]] = 1;
    }
  }
  free(seen);
  free(ops);
  return o;
}

void jit_resource_order_free(jit_resource_order *o) {
  if (!o) return;
  free(o->index_of);
  free(o->reach);
  free(o);
}

static bool writes(jit_resource_kind k) { return k == JIT_RES_WRITE || k == JIT_RES_READ_WRITE; }
static bool reads(jit_resource_kind k) { return k == JIT_RES_READ || k == JIT_RES_READ_WRITE; }

/* x before y is unsafe in one cluster. */
static bool unsafe_pair(const jit_resource_order *o, const jit_state *st, int x, int y, const char **why) {
  int i = o->index_of[x], j = o->index_of[y];
  if (i < 0 || j < 0 || !o->reach[(size_t)i * (size_t)o->n + (size_t)j]) return false;
  jit_resource_kind kx = st->nodes[x].res, ky = st->nodes[y].res;
  if (!writes(kx) || !reads(ky)) return false;
  if (why)
    *why = arena_printf(st->arena, "resource %s %s precedes resource %s %s (a cluster reads its variables at entry)",
                        kind_name(kx), st->nodes[x].node->name, kind_name(ky), st->nodes[y].node->name);
  return true;
}

bool jit_resource_unsafe(const jit_resource_order *o, const jit_state *st, int n_a, const int *a, int n_b, const int *b,
                         const char **why) {
  if (o->n < 2) return false;
  for (int i = 0; i < n_a; i++) {
    if (st->nodes[a[i]].res == JIT_RES_NONE) continue;
    for (int j = 0; j < n_b; j++) {
      if (st->nodes[b[j]].res == JIT_RES_NONE) continue;
      if (unsafe_pair(o, st, a[i], b[j], why) || unsafe_pair(o, st, b[j], a[i], why)) return true;
    }
  }
  return false;
}
