/* Graph construction, edges, attributes, the name and consumer indexes, topological
 * order with loop back-edges, pruning, cloning and validation. Everything structural
 * lives in the root's arena; the two indexes are heap side tables rebuilt from the
 * node arrays when a mutation made them stale. */
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "kiln: out of memory (%zu bytes)\n", n);
    abort();
  }
  return q;
}

/* Grows an arena array to hold `need` elements (doubling); the old block stays in the
 * arena, which is the price of never tracking individual frees. */
static void arena_grow(arena *a, void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int c = *cap ? *cap : 4;
  while (c < need) c *= 2;
  void *n = arena_calloc(a, (size_t)c, elem);
  if (*cap) memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = c;
}

/* ---------------------------------------------------------------------------------- */
/* Name index: open addressing, linear probing, backward-shift deletion.              */

typedef struct graph_name_index {
  size_t cap, count; /* cap is a power of two */
  const char **keys;
  void **vals;
} graph_name_index;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static graph_name_index *names_new(void) {
  graph_name_index *m = xrealloc(NULL, sizeof *m);
  m->cap = 16;
  m->count = 0;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  if (!m->keys || !m->vals) abort();
  return m;
}

static void names_free(graph_name_index *m) {
  if (!m) return;
  free(m->keys);
  free(m->vals);
  free(m);
}

static void *names_get(const graph_name_index *m, const char *key) {
  if (!m) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
    if (!m->keys[i]) return NULL;
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

static void names_put(graph_name_index *m, const char *key, void *val);

static void names_rehash(graph_name_index *m, size_t cap) {
  const char **keys = m->keys;
  void **vals = m->vals;
  size_t old = m->cap;
  m->cap = cap;
  m->count = 0;
  m->keys = calloc(cap, sizeof *m->keys);
  m->vals = calloc(cap, sizeof *m->vals);
  if (!m->keys || !m->vals) abort();
  for (size_t i = 0; i < old; i++)
    if (keys[i]) names_put(m, keys[i], vals[i]);
  free(keys);
  free(vals);
}

static void names_put(graph_name_index *m, const char *key, void *val) {
  if ((m->count + 1) * 2 > m->cap) names_rehash(m, m->cap * 2);
  size_t mask = m->cap - 1;
  size_t i = hash_str(key) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
  if (!m->keys[i]) m->count++;
  m->keys[i] = key;
  m->vals[i] = val;
}

static void names_del(graph_name_index *m, const char *key) {
  size_t mask = m->cap - 1;
  size_t i = hash_str(key) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
  if (!m->keys[i]) return;
  m->keys[i] = NULL;
  m->count--;
  /* Shift back later entries of the cluster that no longer reach their home slot. */
  for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
    size_t home = hash_str(m->keys[j]) & mask;
    bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (between) continue;
    m->keys[i] = m->keys[j];
    m->vals[i] = m->vals[j];
    m->keys[j] = NULL;
    i = j;
  }
}

/* ---------------------------------------------------------------------------------- */
/* Consumer index: for every node, one slot for control consumers and one per output;
 * each slot a run of graph_use in a flat array, in consumer node order. */

typedef struct graph_use_index {
  uint64_t version;
  int *node_base; /* per node index: first slot */
  int *slot_start; /* per slot: first use; one extra at the end */
  graph_use *uses;
} graph_use_index;

static void uses_free(graph_use_index *u) {
  if (!u) return;
  free(u->node_base);
  free(u->slot_start);
  free(u->uses);
  free(u);
}

static graph_use_index *uses_get(graph *g) {
  graph_use_index *u = g->use_index;
  if (u && u->version == g->version) return u;
  uses_free(u);
  u = xrealloc(NULL, sizeof *u);
  u->version = g->version;
  u->node_base = xrealloc(NULL, (size_t)g->n_nodes * sizeof(int));
  int slots = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    u->node_base[i] = slots;
    slots += g->nodes[i]->n_outputs + 1;
  }
  int *count = calloc((size_t)slots + 1, sizeof(int));
  if (!count) abort();
  int total = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
      count[u->node_base[n->inputs[k].node->index] + 1 + n->inputs[k].port]++;
      total++;
    }
    for (int k = 0; k < n->n_control; k++) {
      count[u->node_base[n->control_inputs[k]->index]]++;
      total++;
    }
  }
  u->slot_start = xrealloc(NULL, ((size_t)slots + 1) * sizeof(int));
  int run = 0;
  for (int s = 0; s <= slots; s++) {
    u->slot_start[s] = run;
    run += count[s];
  }
  u->uses = xrealloc(NULL, (size_t)total * sizeof(graph_use));
  memset(count, 0, ((size_t)slots + 1) * sizeof(int));
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
      int s = u->node_base[n->inputs[k].node->index] + 1 + n->inputs[k].port;
      u->uses[u->slot_start[s] + count[s]++] = (graph_use){n, k};
    }
    for (int k = 0; k < n->n_control; k++) {
      int s = u->node_base[n->control_inputs[k]->index];
      u->uses[u->slot_start[s] + count[s]++] = (graph_use){n, GRAPH_CONTROL};
    }
  }
  free(count);
  g->use_index = u;
  return u;
}

int graph_consumers(const graph_node *n, int port, const graph_use **uses) {
  *uses = NULL;
  if (port < GRAPH_CONTROL || port >= n->n_outputs || n->index < 0) return 0;
  graph_use_index *u = uses_get(n->graph);
  int s = u->node_base[n->index] + 1 + port;
  *uses = u->uses + u->slot_start[s];
  return u->slot_start[s + 1] - u->slot_start[s];
}

int graph_num_consumers(const graph_node *n) {
  if (n->index < 0) return 0;
  graph_use_index *u = uses_get(n->graph);
  int s = u->node_base[n->index];
  return u->slot_start[s + n->n_outputs + 1] - u->slot_start[s];
}

/* ---------------------------------------------------------------------------------- */
/* Graphs                                                                              */

static graph *graph_alloc(arena *a, graph *root) {
  graph *g = arena_alloc(a, sizeof *g);
  g->arena = a;
  g->root = root ? root : g;
  g->name_index = names_new();
  return g;
}

graph *graph_new(const char *framework) {
  arena *a = arena_new();
  graph *g = graph_alloc(a, NULL);
  g->framework = framework && *framework ? arena_strdup(a, framework) : NULL;
  return g;
}

static void free_side_tables(graph *g) {
  names_free(g->name_index);
  names_free(g->function_index);
  uses_free(g->use_index);
  g->function_index = NULL;
  g->name_index = NULL;
  g->use_index = NULL;
}

void graph_free(graph *g) {
  if (!g || g->root != g) return;
  for (int i = 0; i < g->n_functions; i++) free_side_tables(g->functions[i]);
  free_side_tables(g);
  for (int i = 0; i < g->n_tensors; i++) {
    atomic_fetch_sub(&g->tensors[i]->graph_refs, 1);
    tensor_free(g->tensors[i]);
  }
  free(g->tensors);
  arena_free(g->arena);
}

graph *graph_find_function(const graph *g, const char *name) {
  return names_get(g->root->function_index, name);
}

kiln_status graph_add_function(graph *g, const char *name, graph **out) {
  graph *root = g->root;
  *out = NULL;
  if (!name || !*name) return ERR_INVALID("a function needs a non-empty name");
  if (graph_find_function(root, name)) return ERR_INVALID("function '%s' is defined twice", name);
  graph *f = graph_alloc(root->arena, root);
  f->name = arena_strdup(root->arena, name);
  if (!root->function_index) root->function_index = names_new();
  names_put(root->function_index, f->name, f);
  f->framework = root->framework;
  arena_grow(root->arena, (void **)&root->functions, &root->cap_functions, root->n_functions + 1, sizeof(graph *));
  root->functions[root->n_functions++] = f;
  root->version++;
  *out = f;
  return NULL;
}

void graph_invalidate(graph *g) { g->version++; }

void graph_adopt_tensor(graph *g, graph_tensor *t) {
  graph *root = g->root;
  if (root->n_tensors == root->cap_tensors) {
    root->cap_tensors = root->cap_tensors ? root->cap_tensors * 2 : 16;
    root->tensors = xrealloc(root->tensors, (size_t)root->cap_tensors * sizeof *root->tensors);
  }
  root->tensors[root->n_tensors++] = t;
  atomic_fetch_add(&t->graph_refs, 1);
}

/* ---------------------------------------------------------------------------------- */
/* Nodes                                                                               */

static graph_node *new_node(graph *g, const char *name, const char *op) {
  graph_node *n = arena_alloc(g->arena, sizeof *n);
  n->id = g->next_id++;
  n->name = name;
  n->op = op;
  n->graph = g;
  n->n_outputs = n->cap_outputs = 1;
  n->outputs = arena_alloc(g->arena, sizeof *n->outputs);
  n->outputs[0].dtype = GRAPH_DT_INVALID;
  n->outputs[0].shape = graph_shape_unknown();
  arena_grow(g->arena, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(graph_node *));
  n->index = g->n_nodes;
  g->nodes[g->n_nodes++] = n;
  names_put(g->name_index, n->name, n);
  g->version++;
  return n;
}

kiln_status graph_add_node(graph *g, const char *name, const char *op, graph_node **out) {
  *out = NULL;
  if (!name || !*name) return ERR_INVALID("a node needs a non-empty name");
  if (!op || !*op) return ERR_INVALID("node '%s' needs a non-empty op", name);
  if (names_get(g->name_index, name)) return ERR_INVALID("node name '%s' is used twice", name);
  const char *fw = g->root->framework;
  const char *full = fw && !strchr(op, '.') ? arena_printf(g->arena, "%s.%s", fw, op) : arena_strdup(g->arena, op);
  *out = new_node(g, arena_strdup(g->arena, name), full);
  return NULL;
}

kiln_status graph_add_input(graph *g, const char *name, graph_dtype dtype, const graph_shape *shape,
                            graph_node **out) {
  TRY(graph_add_node(g, name, GRAPH_OP_INPUT, out));
  graph_node *n = *out;
  n->is_input = true;
  n->outputs[0].dtype = dtype;
  n->outputs[0].shape = shape ? *shape : graph_shape_unknown();
  arena_grow(g->arena, (void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof(graph_node *));
  g->inputs[g->n_inputs++] = n;
  return NULL;
}

graph_node *graph_find_node(const graph *g, const char *name) { return names_get(g->name_index, name); }

const char *graph_unique_name(graph *g, const char *base) {
  if (!names_get(g->name_index, base)) return arena_strdup(g->arena, base);
  size_t len = strlen(base) + 24;
  char *buf = xrealloc(NULL, len);
  for (long i = 1;; i++) {
    snprintf(buf, len, "%s_%ld", base, i);
    if (!names_get(g->name_index, buf)) break;
  }
  const char *r = arena_strdup(g->arena, buf);
  free(buf);
  return r;
}

const char *graph_node_op_base(const graph_node *n) {
  const char *dot = strrchr(n->op, '.');
  return dot ? dot + 1 : n->op;
}

bool graph_node_is(const graph_node *n, const char *op) {
  if (strchr(op, '.')) return strcmp(n->op, op) == 0;
  return strcmp(graph_node_op_base(n), op) == 0;
}

bool graph_node_is_next_iteration(const graph_node *n) {
  const char *b = graph_node_op_base(n);
  return strcmp(b, "NextIteration") == 0 || strcmp(b, "RefNextIteration") == 0;
}

static void grow_outputs(graph_node *n, int k) {
  if (k <= n->n_outputs) return;
  if (k > n->cap_outputs) {
    int c = n->cap_outputs ? n->cap_outputs : 1;
    while (c < k) c *= 2;
    graph_output_info *o = arena_calloc(n->graph->arena, (size_t)c, sizeof *o);
    if (n->n_outputs) memcpy(o, n->outputs, (size_t)n->n_outputs * sizeof *o);
    n->outputs = o;
    n->cap_outputs = c;
  }
  for (int i = n->n_outputs; i < k; i++) {
    n->outputs[i].dtype = GRAPH_DT_INVALID;
    n->outputs[i].shape = graph_shape_unknown();
  }
  n->n_outputs = k;
  n->graph->version++;
}

kiln_status graph_node_set_num_outputs(graph_node *n, int k) {
  if (k < 0 || k > GRAPH_MAX_OUTPUTS)
    return ERR_INVALID("node '%s': %d outputs is outside 0..%d", n->name, k, GRAPH_MAX_OUTPUTS);
  if (n->is_input && k != 1) return ERR_INVALID("graph input '%s' has exactly one output", n->name);
  if (k >= n->n_outputs) {
    grow_outputs(n, k);
    return NULL;
  }
  graph *g = n->graph;
  for (int i = 0; i < g->n_nodes; i++) {
    const graph_node *c = g->nodes[i];
    for (int j = 0; j < c->n_inputs; j++)
      if (c->inputs[j].node == n && c->inputs[j].port >= k)
        return ERR_INVALID("node '%s' cannot have %d outputs: '%s' consumes output %d", n->name, k, c->name,
                           c->inputs[j].port);
  }
  for (int i = 0; i < g->n_results; i++)
    if (g->results[i].node == n && g->results[i].port >= k)
      return ERR_INVALID("node '%s' cannot have %d outputs: result '%s' is output %d", n->name, k,
                         g->results[i].name, g->results[i].port);
  n->n_outputs = k;
  g->version++;
  return NULL;
}

void graph_node_set_output(graph_node *n, int port, graph_dtype dtype, const graph_shape *shape) {
  if (port < 0 || port >= GRAPH_MAX_OUTPUTS || (n->is_input && port)) return;
  grow_outputs(n, port + 1);
  n->outputs[port].dtype = dtype;
  n->outputs[port].shape = shape ? *shape : graph_shape_unknown();
}

void graph_node_set_requested_device(graph_node *n, const char *device) {
  n->requested_device = device ? arena_strdup(n->graph->arena, device) : NULL;
}

void graph_node_set_assigned_device(graph_node *n, const char *device) {
  n->assigned_device = device ? arena_strdup(n->graph->arena, device) : NULL;
}

/* Removes every node with mark set (user_data is not touched: marks live in `dead`,
 * indexed by node index). Control edges into survivors from removed nodes go too. */
static void remove_marked(graph *g, const bool *dead) {
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    if (dead[i]) continue;
    int w = 0;
    for (int k = 0; k < n->n_control; k++)
      if (!dead[n->control_inputs[k]->index]) n->control_inputs[w++] = n->control_inputs[k];
    n->n_control = w;
  }
  int w = 0;
  for (int i = 0; i < g->n_inputs; i++)
    if (!dead[g->inputs[i]->index]) g->inputs[w++] = g->inputs[i];
  g->n_inputs = w;
  w = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    if (dead[i]) {
      names_del(g->name_index, n->name);
      n->index = -1;
      continue;
    }
    n->index = w;
    g->nodes[w++] = n;
  }
  g->n_nodes = w;
  g->version++;
}

kiln_status graph_remove_node(graph_node *n) {
  graph *g = n->graph;
  if (n->index < 0) return ERR_INVALID("node '%s' was already removed", n->name);
  for (int p = 0; p < n->n_outputs; p++) {
    const graph_use *uses;
    int k = graph_consumers(n, p, &uses);
    if (k) return ERR_INVALID("cannot remove node '%s': '%s' consumes its output %d", n->name, uses[0].node->name, p);
  }
  for (int i = 0; i < g->n_results; i++)
    if (g->results[i].node == n)
      return ERR_INVALID("cannot remove node '%s': it is graph result '%s'", n->name, g->results[i].name);
  bool *dead = calloc((size_t)g->n_nodes, sizeof *dead);
  if (!dead) abort();
  dead[n->index] = true;
  remove_marked(g, dead);
  free(dead);
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Edges                                                                               */

static kiln_status check_edge(const graph_node *src, int port, const graph_node *dst) {
  if (src->graph != dst->graph)
    return ERR_INVALID("edge %s -> %s crosses graphs", src->name, dst->name);
  if (src->index < 0 || dst->index < 0) return ERR_INVALID("edge %s -> %s uses a removed node", src->name, dst->name);
  if (port < 0 || port >= GRAPH_MAX_OUTPUTS)
    return ERR_INVALID("edge %s:%d -> %s: port outside 0..%d", src->name, port, dst->name, GRAPH_MAX_OUTPUTS - 1);
  if (dst->is_input) return ERR_INVALID("graph input '%s' cannot have inputs", dst->name);
  if (src->is_input && port != 0) return ERR_INVALID("graph input '%s' has only output 0, not %d", src->name, port);
  return NULL;
}

kiln_status graph_add_edge(graph_node *src, int port, graph_node *dst) {
  TRY(check_edge(src, port, dst));
  graph *g = dst->graph;
  grow_outputs(src, port + 1);
  arena_grow(g->arena, (void **)&dst->inputs, &dst->cap_inputs, dst->n_inputs + 1, sizeof(graph_edge));
  dst->inputs[dst->n_inputs++] = (graph_edge){src, port};
  g->version++;
  return NULL;
}

kiln_status graph_set_input(graph_node *dst, int index, graph_node *src, int port) {
  TRY(check_edge(src, port, dst));
  if (index < 0 || index >= dst->n_inputs)
    return ERR_INVALID("node '%s' has no input %d (it has %d)", dst->name, index, dst->n_inputs);
  grow_outputs(src, port + 1);
  dst->inputs[index] = (graph_edge){src, port};
  dst->graph->version++;
  return NULL;
}

kiln_status graph_add_control_edge(graph_node *src, graph_node *dst) {
  if (src->graph != dst->graph) return ERR_INVALID("control edge %s -> %s crosses graphs", src->name, dst->name);
  if (src->index < 0 || dst->index < 0)
    return ERR_INVALID("control edge %s -> %s uses a removed node", src->name, dst->name);
  if (dst->is_input) return ERR_INVALID("graph input '%s' cannot have control inputs", dst->name);
  for (int i = 0; i < dst->n_control; i++)
    if (dst->control_inputs[i] == src) return NULL;
  graph *g = dst->graph;
  arena_grow(g->arena, (void **)&dst->control_inputs, &dst->cap_control, dst->n_control + 1, sizeof(graph_node *));
  dst->control_inputs[dst->n_control++] = src;
  g->version++;
  return NULL;
}

bool graph_remove_control_edge(graph_node *src, graph_node *dst) {
  for (int i = 0; i < dst->n_control; i++) {
    if (dst->control_inputs[i] != src) continue;
    memmove(dst->control_inputs + i, dst->control_inputs + i + 1,
            (size_t)(dst->n_control - i - 1) * sizeof(graph_node *));
    dst->n_control--;
    dst->graph->version++;
    return true;
  }
  return false;
}

int graph_replace_uses(graph_node *old_node, int old_port, graph_node *new_node, int new_port) {
  graph *g = old_node->graph;
  if (new_node->graph != g || new_port < 0 || new_port >= GRAPH_MAX_OUTPUTS || (new_node->is_input && new_port))
    return 0;
  int moved = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *c = g->nodes[i];
    for (int k = 0; k < c->n_inputs; k++)
      if (c->inputs[k].node == old_node && c->inputs[k].port == old_port) {
        c->inputs[k] = (graph_edge){new_node, new_port};
        moved++;
      }
  }
  for (int i = 0; i < g->n_results; i++)
    if (g->results[i].node == old_node && g->results[i].port == old_port) {
      g->results[i].node = new_node;
      g->results[i].port = new_port;
      moved++;
    }
  if (moved) {
    grow_outputs(new_node, new_port + 1);
    g->version++;
  }
  return moved;
}

kiln_status graph_add_result(graph *g, const char *name, graph_node *node, int port) {
  if (!name || !*name) return ERR_INVALID("a graph result needs a non-empty name");
  if (graph_find_result(g, name)) return ERR_INVALID("graph result '%s' is named twice", name);
  if (node->graph != g || node->index < 0) return ERR_INVALID("result '%s': node '%s' is not in this graph", name, node->name);
  if (port < 0 || port >= GRAPH_MAX_OUTPUTS || (node->is_input && port))
    return ERR_INVALID("result '%s': port %d of '%s' out of range", name, port, node->name);
  grow_outputs(node, port + 1);
  arena_grow(g->arena, (void **)&g->results, &g->cap_results, g->n_results + 1, sizeof(graph_result));
  g->results[g->n_results++] = (graph_result){arena_strdup(g->arena, name), node, port};
  g->version++;
  return NULL;
}

const graph_result *graph_find_result(const graph *g, const char *name) {
  for (int i = 0; i < g->n_results; i++)
    if (strcmp(g->results[i].name, name) == 0) return &g->results[i];
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Topological order                                                                   */

static void heap_push(int *h, int *n, int v) {
  int i = (*n)++;
  h[i] = v;
  while (i > 0 && h[(i - 1) / 2] > h[i]) {
    int p = (i - 1) / 2, t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static int heap_pop(int *h, int *n) {
  int top = h[0];
  h[0] = h[--(*n)];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && h[l] < h[m]) m = l;
    if (r < *n && h[r] < h[m]) m = r;
    if (m == i) break;
    int t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
  return top;
}

kiln_status graph_topo_order(const graph *g, graph_node ***order_out, int *n_out) {
  int n = g->n_nodes;
  *order_out = NULL;
  *n_out = 0;
  /* Forward adjacency (CSR) of the edges that count: all but back-edges. */
  int *indeg = calloc((size_t)n + 1, sizeof(int));
  int *start = calloc((size_t)n + 2, sizeof(int));
  if (!indeg || !start) abort();
  int total = 0;
  for (int i = 0; i < n; i++) {
    const graph_node *d = g->nodes[i];
    for (int k = 0; k < d->n_inputs + d->n_control; k++) {
      const graph_node *s = k < d->n_inputs ? d->inputs[k].node : d->control_inputs[k - d->n_inputs];
      if (graph_node_is_next_iteration(s)) continue;
      start[s->index + 1]++;
      indeg[i]++;
      total++;
    }
  }
  for (int i = 0; i < n; i++) start[i + 1] += start[i];
  int *succ = xrealloc(NULL, (size_t)total * sizeof(int));
  int *fill = calloc((size_t)n + 1, sizeof(int));
  if (!fill) abort();
  for (int i = 0; i < n; i++) {
    const graph_node *d = g->nodes[i];
    for (int k = 0; k < d->n_inputs + d->n_control; k++) {
      const graph_node *s = k < d->n_inputs ? d->inputs[k].node : d->control_inputs[k - d->n_inputs];
      if (graph_node_is_next_iteration(s)) continue;
      succ[start[s->index] + fill[s->index]++] = i;
    }
  }
  free(fill);
  int *heap = xrealloc(NULL, ((size_t)n + 1) * sizeof(int));
  int hn = 0;
  for (int i = 0; i < n; i++)
    if (!indeg[i]) heap_push(heap, &hn, i);
  graph_node **order = xrealloc(NULL, ((size_t)n + 1) * sizeof *order);
  int emitted = 0;
  while (hn) {
    int v = heap_pop(heap, &hn);
    order[emitted++] = g->nodes[v];
    for (int e = start[v]; e < start[v + 1]; e++)
      if (--indeg[succ[e]] == 0) heap_push(heap, &hn, succ[e]);
  }
  kiln_status st = NULL;
  if (emitted < n) {
    /* Walk predecessors among the unemitted nodes until one repeats: it is on a cycle. */
    int v = 0;
    while (!indeg[v]) v++;
    char *seen = calloc((size_t)n, 1);
    if (!seen) abort();
    while (!seen[v]) {
      seen[v] = 1;
      const graph_node *d = g->nodes[v];
      for (int k = 0; k < d->n_inputs + d->n_control; k++) {
        const graph_node *s = k < d->n_inputs ? d->inputs[k].node : d->control_inputs[k - d->n_inputs];
        if (!graph_node_is_next_iteration(s) && indeg[s->index]) {
          v = s->index;
          break;
        }
      }
    }
    free(seen);
    st = ERR_INVALID("graph has a cycle through node '%s' (%s) that no NextIteration back-edge breaks",
                     g->nodes[v]->name, g->nodes[v]->op);
    free(order);
    order = NULL;
  }
  free(indeg);
  free(start);
  free(succ);
  free(heap);
  if (st) return st;
  *order_out = order;
  *n_out = n;
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Pruning                                                                             */

int graph_prune(graph *g, graph_node *const *extra_roots, int n_extra) {
  int n = g->n_nodes;
  bool *live = calloc((size_t)n + 1, sizeof *live);
  int *stack = xrealloc(NULL, ((size_t)n + 1) * sizeof(int));
  if (!live) abort();
  int sp = 0;
#define MARK(node)                                                      \
  do {                                                                  \
    const graph_node *m_ = (node);                                      \
    if (m_ && m_->graph == g && m_->index >= 0 && !live[m_->index]) {   \
      live[m_->index] = true;                                           \
      stack[sp++] = m_->index;                                          \
    }                                                                   \
  } while (0)
  for (int i = 0; i < g->n_results; i++) MARK(g->results[i].node);
  for (int i = 0; i < n_extra; i++) MARK(extra_roots[i]);
  for (int i = 0; i < g->n_inputs; i++) MARK(g->inputs[i]);
  while (sp) {
    const graph_node *v = g->nodes[stack[--sp]];
    for (int k = 0; k < v->n_inputs; k++) MARK(v->inputs[k].node);
    for (int k = 0; k < v->n_control; k++) MARK(v->control_inputs[k]);
  }
#undef MARK
  int removed = 0;
  for (int i = 0; i < n; i++) {
    live[i] = !live[i]; /* now: dead */
    removed += live[i];
  }
  if (removed) remove_marked(g, live);
  free(live);
  free(stack);
  return removed;
}

/* ---------------------------------------------------------------------------------- */
/* Attributes                                                                          */

static void copy_value(graph *g, graph_attr_value *dst, const graph_attr_value *src);

static graph_attr *copy_attrs(graph *g, int n, const graph_attr *src) {
  if (!n) return NULL;
  graph_attr *a = arena_calloc(g->arena, (size_t)n, sizeof *a);
  for (int i = 0; i < n; i++) {
    a[i].name = arena_strdup(g->arena, src[i].name);
    copy_value(g, &a[i].value, &src[i].value);
  }
  return a;
}

static void copy_value(graph *g, graph_attr_value *dst, const graph_attr_value *src) {
  *dst = *src;
  switch (src->kind) {
    case GRAPH_ATTR_STRING: {
      char *s = arena_alloc(g->arena, src->s.len + 1);
      if (src->s.len) memcpy(s, src->s.data, src->s.len);
      s[src->s.len] = 0;
      dst->s.data = s;
      break;
    }
    case GRAPH_ATTR_TENSOR:
      if (src->tensor) graph_adopt_tensor(g, tensor_ref(src->tensor));
      break;
    case GRAPH_ATTR_SHAPE:
      if (src->shape) dst->shape = arena_memdup(g->arena, src->shape, sizeof *src->shape);
      break;
    case GRAPH_ATTR_FUNC:
      dst->func.name = arena_strdup(g->arena, src->func.name ? src->func.name : "");
      dst->func.attrs = copy_attrs(g, src->func.n_attrs, src->func.attrs);
      break;
    case GRAPH_ATTR_LIST:
      dst->list.items = src->list.n ? arena_calloc(g->arena, (size_t)src->list.n, sizeof(graph_attr_value)) : NULL;
      for (int i = 0; i < src->list.n; i++) copy_value(g, &dst->list.items[i], &src->list.items[i]);
      break;
    default: break;
  }
}

/* Index of name in n->attrs, or -(insertion point) - 1. */
static int attr_find(const graph_node *n, const char *name) {
  int lo = 0, hi = n->n_attrs;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(n->attrs[mid].name, name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -lo - 1;
}

const graph_attr_value *graph_node_attr(const graph_node *n, const char *name) {
  int i = attr_find(n, name);
  return i >= 0 ? &n->attrs[i].value : NULL;
}

void graph_node_set_attr(graph_node *n, const char *name, const graph_attr_value *v) {
  graph *g = n->graph;
  graph_attr_value copy;
  copy_value(g, &copy, v);
  int i = attr_find(n, name);
  if (i >= 0) {
    n->attrs[i].value = copy;
    return;
  }
  i = -i - 1;
  arena_grow(g->arena, (void **)&n->attrs, &n->cap_attrs, n->n_attrs + 1, sizeof(graph_attr));
  memmove(n->attrs + i + 1, n->attrs + i, (size_t)(n->n_attrs - i) * sizeof(graph_attr));
  n->attrs[i].name = arena_strdup(g->arena, name);
  n->attrs[i].value = copy;
  n->n_attrs++;
}

bool graph_node_remove_attr(graph_node *n, const char *name) {
  int i = attr_find(n, name);
  if (i < 0) return false;
  memmove(n->attrs + i, n->attrs + i + 1, (size_t)(n->n_attrs - i - 1) * sizeof(graph_attr));
  n->n_attrs--;
  return true;
}

void graph_node_set_attr_int(graph_node *n, const char *name, int64_t v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_INT, .i = v};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_float(graph_node *n, const char *name, float v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_FLOAT, .f = v};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_bool(graph_node *n, const char *name, bool v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_BOOL, .b = v};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_string(graph_node *n, const char *name, const char *data, size_t len) {
  graph_attr_value a = {.kind = GRAPH_ATTR_STRING, .s = {(char *)data, len}};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_type(graph_node *n, const char *name, graph_dtype v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_TYPE, .type = v};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_shape(graph_node *n, const char *name, const graph_shape *v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_SHAPE, .shape = (graph_shape *)v};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_tensor(graph_node *n, const char *name, graph_tensor *t) {
  graph_attr_value a = {.kind = GRAPH_ATTR_TENSOR, .tensor = t};
  graph_node_set_attr(n, name, &a);
}
void graph_node_set_attr_func(graph_node *n, const char *name, graph *function) {
  graph_attr_value a = {.kind = GRAPH_ATTR_FUNC, .func = {function->name, function, 0, NULL}};
  graph_node_set_attr(n, name, &a);
}

/* Lists built on the heap for a moment; set_attr copies them into the arena. */
static void set_list(graph_node *n, const char *name, graph_attr_kind elem, int count, const void *v) {
  graph_attr_value a = {.kind = GRAPH_ATTR_LIST};
  a.list.elem = count ? elem : GRAPH_ATTR_NONE;
  a.list.n = count;
  a.list.items = calloc(count ? (size_t)count : 1, sizeof(graph_attr_value));
  if (!a.list.items) abort();
  for (int i = 0; i < count; i++) {
    graph_attr_value *it = &a.list.items[i];
    it->kind = elem;
    if (elem == GRAPH_ATTR_INT) it->i = ((const int64_t *)v)[i];
    else if (elem == GRAPH_ATTR_FLOAT) it->f = ((const float *)v)[i];
    else it->type = ((const graph_dtype *)v)[i];
  }
  graph_node_set_attr(n, name, &a);
  free(a.list.items);
}

void graph_node_set_attr_ints(graph_node *n, const char *name, int count, const int64_t *v) {
  set_list(n, name, GRAPH_ATTR_INT, count, v);
}
void graph_node_set_attr_floats(graph_node *n, const char *name, int count, const float *v) {
  set_list(n, name, GRAPH_ATTR_FLOAT, count, v);
}
void graph_node_set_attr_types(graph_node *n, const char *name, int count, const graph_dtype *v) {
  set_list(n, name, GRAPH_ATTR_TYPE, count, v);
}

static const char *kind_name(graph_attr_kind k) {
  switch (k) {
    case GRAPH_ATTR_NONE: return "nothing";
    case GRAPH_ATTR_INT: return "an int";
    case GRAPH_ATTR_FLOAT: return "a float";
    case GRAPH_ATTR_BOOL: return "a bool";
    case GRAPH_ATTR_STRING: return "a string";
    case GRAPH_ATTR_TYPE: return "a type";
    case GRAPH_ATTR_SHAPE: return "a shape";
    case GRAPH_ATTR_TENSOR: return "a tensor";
    case GRAPH_ATTR_FUNC: return "a function";
    case GRAPH_ATTR_LIST: return "a list";
  }
  return "?";
}

static kiln_status get_attr(const graph_node *n, const char *name, graph_attr_kind kind,
                            const graph_attr_value **out) {
  const graph_attr_value *v = graph_node_attr(n, name);
  if (!v) return ERR_INVALID("node '%s' (%s) has no attribute '%s'", n->name, n->op, name);
  if (v->kind != kind)
    return ERR_INVALID("node '%s' (%s): attribute '%s' is %s, expected %s", n->name, n->op, name, kind_name(v->kind),
                       kind_name(kind));
  *out = v;
  return NULL;
}

kiln_status graph_node_get_int(const graph_node *n, const char *name, int64_t *out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_INT, &v));
  *out = v->i;
  return NULL;
}
kiln_status graph_node_get_float(const graph_node *n, const char *name, float *out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_FLOAT, &v));
  *out = v->f;
  return NULL;
}
kiln_status graph_node_get_bool(const graph_node *n, const char *name, bool *out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_BOOL, &v));
  *out = v->b;
  return NULL;
}
kiln_status graph_node_get_type(const graph_node *n, const char *name, graph_dtype *out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_TYPE, &v));
  *out = v->type;
  return NULL;
}
kiln_status graph_node_get_shape(const graph_node *n, const char *name, graph_shape *out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_SHAPE, &v));
  *out = *v->shape;
  return NULL;
}
kiln_status graph_node_get_tensor(const graph_node *n, const char *name, const graph_tensor **out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_TENSOR, &v));
  *out = v->tensor;
  return NULL;
}
kiln_status graph_node_get_string(const graph_node *n, const char *name, const graph_bytes **out) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_STRING, &v));
  *out = &v->s;
  return NULL;
}
kiln_status graph_node_get_ints(const graph_node *n, const char *name, int64_t *buf, int cap, int *count) {
  const graph_attr_value *v;
  TRY(get_attr(n, name, GRAPH_ATTR_LIST, &v));
  if (v->list.n && v->list.elem != GRAPH_ATTR_INT)
    return ERR_INVALID("node '%s' (%s): attribute '%s' is a list of %s values, expected ints", n->name, n->op, name,
                       kind_name(v->list.elem));
  *count = v->list.n;
  for (int i = 0; i < v->list.n && i < cap; i++) buf[i] = v->list.items[i].i;
  return NULL;
}

int64_t graph_node_attr_int_or(const graph_node *n, const char *name, int64_t dflt) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_INT ? v->i : dflt;
}
float graph_node_attr_float_or(const graph_node *n, const char *name, float dflt) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_FLOAT ? v->f : dflt;
}
bool graph_node_attr_bool_or(const graph_node *n, const char *name, bool dflt) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_BOOL ? v->b : dflt;
}

/* ---------------------------------------------------------------------------------- */
/* Cloning                                                                             */

/* Points func references at the function of the same name in dst's root. */
static void remap_funcs(graph *dst_root, graph_attr_value *v) {
  if (v->kind == GRAPH_ATTR_FUNC) {
    v->func.body = v->func.name ? graph_find_function(dst_root, v->func.name) : NULL;
    for (int i = 0; i < v->func.n_attrs; i++) remap_funcs(dst_root, &v->func.attrs[i].value);
  } else if (v->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < v->list.n; i++) remap_funcs(dst_root, &v->list.items[i]);
  }
}

static void copy_contents(const graph *src, graph *dst) {
  arena *a = dst->arena;
  for (int i = 0; i < src->n_nodes; i++) {
    const graph_node *s = src->nodes[i];
    graph_node *d = new_node(dst, arena_strdup(a, s->name), arena_strdup(a, s->op));
    d->id = s->id;
    d->is_input = s->is_input;
    d->requested_device = s->requested_device ? arena_strdup(a, s->requested_device) : NULL;
    d->assigned_device = s->assigned_device ? arena_strdup(a, s->assigned_device) : NULL;
    d->n_outputs = d->cap_outputs = s->n_outputs;
    d->outputs = s->n_outputs ? arena_memdup(a, s->outputs, (size_t)s->n_outputs * sizeof *s->outputs) : NULL;
    d->n_attrs = d->cap_attrs = s->n_attrs;
    d->attrs = copy_attrs(dst, s->n_attrs, s->attrs);
    for (int k = 0; k < d->n_attrs; k++) remap_funcs(dst->root, &d->attrs[k].value);
  }
  dst->next_id = src->next_id;
  for (int i = 0; i < src->n_nodes; i++) {
    const graph_node *s = src->nodes[i];
    graph_node *d = dst->nodes[i];
    d->n_inputs = d->cap_inputs = s->n_inputs;
    d->inputs = s->n_inputs ? arena_calloc(a, (size_t)s->n_inputs, sizeof(graph_edge)) : NULL;
    for (int k = 0; k < s->n_inputs; k++) d->inputs[k] = (graph_edge){dst->nodes[s->inputs[k].node->index], s->inputs[k].port};
    d->n_control = d->cap_control = s->n_control;
    d->control_inputs = s->n_control ? arena_calloc(a, (size_t)s->n_control, sizeof(graph_node *)) : NULL;
    for (int k = 0; k < s->n_control; k++) d->control_inputs[k] = dst->nodes[s->control_inputs[k]->index];
  }
  dst->n_inputs = dst->cap_inputs = src->n_inputs;
  dst->inputs = src->n_inputs ? arena_calloc(a, (size_t)src->n_inputs, sizeof(graph_node *)) : NULL;
  for (int i = 0; i < src->n_inputs; i++) dst->inputs[i] = dst->nodes[src->inputs[i]->index];
  dst->n_results = dst->cap_results = src->n_results;
  dst->results = src->n_results ? arena_calloc(a, (size_t)src->n_results, sizeof(graph_result)) : NULL;
  for (int i = 0; i < src->n_results; i++)
    dst->results[i] = (graph_result){arena_strdup(a, src->results[i].name), dst->nodes[src->results[i].node->index],
                                     src->results[i].port};
  dst->version++;
}

graph *graph_clone(const graph *g) {
  const graph *root = g->root;
  graph *c = graph_new(root->framework);
  for (int i = 0; i < root->n_functions; i++) {
    graph *f;
    kiln_status s = graph_add_function(c, root->functions[i]->name, &f);
    if (s) abort(); /* names were unique in the source library */
  }
  for (int i = 0; i < root->n_functions; i++) copy_contents(root->functions[i], c->functions[i]);
  copy_contents(g, c);
  return c;
}

/* ---------------------------------------------------------------------------------- */
/* Validation                                                                          */

static kiln_status validate_value(const graph *g, const graph_node *n, const char *attr, const graph_attr_value *v,
                                  int depth) {
  if (depth > 64) return ERR_INVALID("node '%s': attribute '%s' nests too deeply", n->name, attr);
  if (v->kind == GRAPH_ATTR_FUNC) {
    if (!v->func.body || v->func.body->root != g->root || v->func.body->root == v->func.body)
      return ERR_INVALID("node '%s': attribute '%s' names function '%s', which is not in the library", n->name, attr,
                         v->func.name ? v->func.name : "");
    for (int i = 0; i < v->func.n_attrs; i++) TRY(validate_value(g, n, attr, &v->func.attrs[i].value, depth + 1));
  } else if (v->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < v->list.n; i++) {
      if (v->list.items[i].kind != v->list.elem || v->list.elem == GRAPH_ATTR_LIST)
        return ERR_INVALID("node '%s': list attribute '%s' mixes kinds", n->name, attr);
      TRY(validate_value(g, n, attr, &v->list.items[i], depth + 1));
    }
  } else if (v->kind == GRAPH_ATTR_TENSOR && !v->tensor) {
    return ERR_INVALID("node '%s': tensor attribute '%s' has no value", n->name, attr);
  } else if (v->kind == GRAPH_ATTR_SHAPE && !v->shape) {
    return ERR_INVALID("node '%s': shape attribute '%s' has no value", n->name, attr);
  }
  return NULL;
}

static bool owns(const graph *g, const graph_node *n) {
  return n && n->graph == g && n->index >= 0 && n->index < g->n_nodes && g->nodes[n->index] == n;
}

static kiln_status validate_one(const graph *g) {
  const char *where = g->name ? g->name : "graph";
  for (int i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    if (n->index != i || n->graph != g) return ERR_INTERNAL("%s: node '%s' has a stale index", where, n->name);
    if (graph_find_node(g, n->name) != n) return ERR_INVALID("%s: node name '%s' is not unique", where, n->name);
    if (n->is_input && (n->n_inputs || n->n_control || n->n_outputs != 1))
      return ERR_INVALID("%s: graph input '%s' must have no inputs and one output", where, n->name);
    for (int k = 0; k < n->n_inputs; k++) {
      const graph_edge *e = &n->inputs[k];
      if (!owns(g, e->node)) return ERR_INVALID("%s: node '%s' input %d is not a node of this graph", where, n->name, k);
      if (e->port < 0 || e->port >= e->node->n_outputs)
        return ERR_INVALID("%s: node '%s' input %d uses output %d of '%s', which has %d outputs", where, n->name, k,
                           e->port, e->node->name, e->node->n_outputs);
    }
    for (int k = 0; k < n->n_control; k++)
      if (!owns(g, n->control_inputs[k]))
        return ERR_INVALID("%s: node '%s' control input %d is not a node of this graph", where, n->name, k);
    for (int k = 0; k < n->n_attrs; k++) {
      if (k && strcmp(n->attrs[k - 1].name, n->attrs[k].name) >= 0)
        return ERR_INTERNAL("%s: node '%s' attributes are not sorted", where, n->name);
      TRY(validate_value(g, n, n->attrs[k].name, &n->attrs[k].value, 0));
    }
  }
  for (int i = 0; i < g->n_inputs; i++)
    if (!owns(g, g->inputs[i]) || !g->inputs[i]->is_input)
      return ERR_INVALID("%s: graph input %d is not an input node of this graph", where, i);
  for (int i = 0; i < g->n_results; i++) {
    const graph_result *r = &g->results[i];
    if (!owns(g, r->node)) return ERR_INVALID("%s: result '%s' is not a node of this graph", where, r->name);
    if (r->port < 0 || r->port >= r->node->n_outputs)
      return ERR_INVALID("%s: result '%s' uses output %d of '%s', which has %d outputs", where, r->name, r->port,
                         r->node->name, r->node->n_outputs);
  }
  return NULL;
}

kiln_status graph_validate(const graph *g) {
  TRY(validate_one(g));
  if (g->root == g)
    for (int i = 0; i < g->n_functions; i++) TRY(validate_one(g->functions[i]));
  return NULL;
}
