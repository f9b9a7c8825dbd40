/* ONNX GraphProto -> kiln graph: the heart of the ONNX importer.
 *
 * ONNX wires nodes by value name inside nested scopes: a subgraph (If/Loop/Scan body)
 * may read any value of the scopes around it, nodes may come in any order as long as
 * the dataflow is acyclic, and "" stands for an input that is not given. kiln's graph
 * wires (node, port) pairs and wants closed function bodies. The converter therefore
 *   - keeps one name -> (node, port) map per scope (onnx_map);
 *   - orders each node list topologically first (Kahn, earliest index first, so sorted
 *     models keep their order), counting the free variables of a node's subgraphs as
 *     dependencies, and reports cycles by node;
 *   - resolves a name missing from a body's scope in the enclosing scopes and turns it
 *     into a capture: an extra input of the body function and, after all bodies of the
 *     node are converted, an extra data input of the node (the union over its bodies,
 *     in first-use order, listed in "_captures"); every level of nesting in between
 *     captures it too;
 *   - inlines model-local functions (FunctionProto) at their call sites.
 * The conventions these produce are documented in onnx_import.h. */
#include "import/onnx/onnx_internal.h"
#include "import/onnx/onnx_import.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/strbuf.h"

/* ---------------------------------------------------------------------------------- */
/* String-keyed map                                                                    */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

onnx_map_entry *onnx_map_get(const onnx_map *m, const char *key) {
  if (!m->cap) return NULL;
  uint64_t h = hash_str(key);
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    onnx_map_entry *e = &m->slots[i];
    if (!e->key) return NULL;
    if (e->hash == h && strcmp(e->key, key) == 0) return e;
  }
}

onnx_map_entry *onnx_map_put(onnx_map *m, const char *key, graph_node *node, int port) {
  onnx_map_entry *e = onnx_map_get(m, key);
  if (e) {
    e->node = node;
    e->port = port;
    return e;
  }
  if ((m->n + 1) * 4 > m->cap * 3) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    onnx_map_entry *slots = calloc(cap, sizeof *slots);
    if (!slots) abort();
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->slots[i].key) continue;
      size_t j = m->slots[i].hash & (cap - 1);
      while (slots[j].key) j = (j + 1) & (cap - 1);
      slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
  }
  uint64_t h = hash_str(key);
  size_t i = h & (m->cap - 1);
  while (m->slots[i].key) i = (i + 1) & (m->cap - 1);
  m->slots[i] = (onnx_map_entry){key, h, node, port, NULL};
  m->n++;
  return &m->slots[i];
}

void onnx_map_free(onnx_map *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}

/* ---------------------------------------------------------------------------------- */
/* Scopes                                                                              */

typedef struct capture {
  const char *name;   /* ONNX value name */
  graph_edge outer;   /* the value in the enclosing scope's graph */
  graph_node *input;  /* the body's input standing for it */
} capture;

typedef struct scope {
  struct scope *parent; /* enclosing scope a body captures from; NULL: closed scope */
  graph *g;
  onnx_map values;
  onnx_map infos; /* value name -> ValueInfoProto (value_info and outputs) */
  int n_formal; /* graph inputs made from the GraphProto's inputs */
  int n_captures, cap_captures;
  capture *captures;
  onnx_map capture_index; /* ONNX name -> index in captures */
  /* The scope owning g's name bookkeeping (itself for root and bodies, the caller's
   * owner for inlined functions) and, there, every name handed out -> next suffix. */
  struct scope *owner;
  onnx_map used_names;
  /* Inside an inlined model-local function: the calling node (whose attributes
   * ref_attr_name reads), the scope that node lives in, and the prefix of inner node
   * names (only on the inline scope itself, not on bodies within it). */
  const Onnx__NodeProto *caller;
  struct scope *caller_scope;
  const char *prefix;
} scope;

static void scope_free(scope *s) {
  onnx_map_free(&s->values);
  onnx_map_free(&s->infos);
  onnx_map_free(&s->capture_index);
  onnx_map_free(&s->used_names);
  free(s->captures);
  s->captures = NULL;
}

/* A node name not used in the scope's graph: `base`, else base_1, base_2, ... Names
 * handed out are remembered with the next suffix to try, so many nodes of one base
 * name (exporters that name every node "Conv", inlined functions) cost O(1) each
 * instead of a scan from _1. Names reserved without a node (inlining prefixes) are
 * not handed out twice either. */
static const char *unique_name(scope *s, const char *base) {
  scope *o = s->owner;
  graph *g = s->g;
  onnx_map_entry *e = onnx_map_get(&o->used_names, base);
  if (!e) {
    const char *key = arena_strdup(g->arena, base);
    bool taken = graph_find_node(g, key) != NULL;
    e = onnx_map_put(&o->used_names, key, NULL, 1);
    if (!taken) return key;
  }
  strbuf b;
  strbuf_init(&b);
  for (;;) {
    b.len = 0;
    strbuf_printf(&b, "%s_%d", base, e->port);
    if (e->port < INT32_MAX) e->port++;
    if (!graph_find_node(g, strbuf_cstr(&b)) && !onnx_map_get(&o->used_names, strbuf_cstr(&b))) break;
  }
  const char *r = arena_strdup(g->arena, strbuf_cstr(&b));
  strbuf_free(&b);
  onnx_map_put(&o->used_names, r, NULL, 1);
  return r;
}

static const graph_output_info *output_info(const graph_edge *e) {
  return e->port < e->node->n_outputs ? &e->node->outputs[e->port] : NULL;
}

static kiln_status add_capture_input(scope *s, const char *name, graph_edge outer, capture **out) {
  const graph_output_info *info = output_info(&outer);
  graph_node *in;
  TRY(graph_add_input(s->g, unique_name(s, name), info ? info->dtype : GRAPH_DT_INVALID,
                      info ? &info->shape : NULL, &in));
  if (s->n_captures == s->cap_captures) {
    s->cap_captures = s->cap_captures ? s->cap_captures * 2 : 4;
    s->captures = realloc(s->captures, (size_t)s->cap_captures * sizeof *s->captures);
    if (!s->captures) abort();
  }
  onnx_map_put(&s->capture_index, name, NULL, s->n_captures);
  capture *c = &s->captures[s->n_captures++];
  *c = (capture){name, outer, in};
  *out = c;
  return NULL;
}

/* Looks `name` up from s outward. *found is false when no scope defines it; a found
 * value with out->node == NULL is an absent optional value (a function input the
 * caller left out). A body reaching past its own scope captures the value. */
static kiln_status resolve(scope *s, const char *name, bool *found, graph_edge *out) {
  onnx_map_entry *e = onnx_map_get(&s->values, name);
  if (e) {
    *found = true;
    *out = (graph_edge){e->node, e->port};
    return NULL;
  }
  *found = false;
  if (!s->parent) return NULL;
  graph_edge outer;
  TRY(resolve(s->parent, name, found, &outer));
  if (!*found) return NULL;
  if (!outer.node) {
    onnx_map_put(&s->values, name, NULL, 0);
    *out = outer;
    return NULL;
  }
  capture *c;
  TRY(add_capture_input(s, name, outer, &c));
  onnx_map_put(&s->values, name, c->input, 0);
  *out = (graph_edge){c->input, 0};
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Small helpers                                                                       */

static bool is_default_domain(const char *domain) { return !*domain || strcmp(domain, "ai.onnx") == 0; }

/* "node 'conv1' (onnx.Conv)", or for an unnamed node "unnamed onnx.Relu node producing
 * 'y'": for errors raised before the kiln node exists. */
static const char *node_label(const Onnx__NodeProto *np, strbuf *b) {
  const char *domain = onnx_str(np->domain);
  const char *ns = is_default_domain(domain) ? "onnx" : domain;
  b->len = 0;
  if (np->name && *np->name) {
    strbuf_printf(b, "node '%s' (%s.%s)", np->name, ns, onnx_str(np->op_type));
  } else {
    const char *first = NULL;
    for (size_t i = 0; i < np->n_output && !first; i++)
      if (np->output[i] && *np->output[i]) first = np->output[i];
    strbuf_printf(b, "unnamed %s.%s node", ns, onnx_str(np->op_type));
    if (first) strbuf_printf(b, " producing '%s'", first);
  }
  return strbuf_cstr(b);
}

static kiln_status node_error(kiln_status s, const Onnx__NodeProto *np) {
  strbuf b;
  strbuf_init(&b);
  s = status_wrap(s, "%s", node_label(np, &b));
  strbuf_free(&b);
  return s;
}

static const onnx_domain_opset *find_domain(const onnx_ctx *ctx, const char *domain) {
  for (int i = 0; i < ctx->n_domains; i++)
    if (strcmp(ctx->domains[i].domain, domain) == 0) return &ctx->domains[i];
  return NULL;
}

static const Onnx__FunctionProto *find_model_function(const onnx_ctx *ctx, const char *domain, const char *name) {
  for (size_t i = 0; i < ctx->model->n_functions; i++) {
    const Onnx__FunctionProto *f = ctx->model->functions[i];
    const char *fd = onnx_str(f->domain);
    bool same_domain = strcmp(fd, domain) == 0 || (is_default_domain(fd) && is_default_domain(domain));
    if (same_domain && strcmp(onnx_str(f->name), name) == 0) return f;
  }
  return NULL;
}

static void set_strings_attr(graph_node *n, const char *name, int count, const char *const *v, const size_t *lens) {
  graph_attr_value a = {.kind = GRAPH_ATTR_LIST};
  a.list.elem = GRAPH_ATTR_STRING;
  a.list.n = count;
  a.list.items = calloc(count ? (size_t)count : 1, sizeof(graph_attr_value));
  if (!a.list.items) abort();
  for (int i = 0; i < count; i++) {
    a.list.items[i].kind = GRAPH_ATTR_STRING;
    a.list.items[i].s.data = (char *)v[i];
    a.list.items[i].s.len = lens ? lens[i] : strlen(v[i]);
  }
  graph_node_set_attr(n, name, &a);
  free(a.list.items);
}

static const char *unique_function_name(graph *root, const char *base) {
  if (!graph_find_function(root, base)) return base;
  strbuf b;
  strbuf_init(&b);
  for (long i = 1;; i++) {
    b.len = 0;
    strbuf_printf(&b, "%s_%ld", base, i);
    if (!graph_find_function(root, strbuf_cstr(&b))) break;
  }
  const char *r = arena_strdup(root->arena, strbuf_cstr(&b));
  strbuf_free(&b);
  return r;
}

/* ---------------------------------------------------------------------------------- */
/* Free variables and ordering                                                         */

static void graph_free_vars(const Onnx__GraphProto *gp, onnx_map *out);

/* Adds to `out` the names node np reads that `defined` (may be NULL) lacks: its inputs
 * and the free variables of its subgraphs. */
static void node_used_names(const Onnx__NodeProto *np, const onnx_map *defined, onnx_map *out) {
  for (size_t i = 0; i < np->n_input; i++) {
    const char *in = np->input[i];
    if (in && *in && !(defined && onnx_map_get(defined, in))) onnx_map_put(out, in, NULL, 0);
  }
  for (size_t i = 0; i < np->n_attribute; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    size_t n_graphs = (a->g ? 1 : 0) + a->n_graphs;
    for (size_t k = 0; k < n_graphs; k++) {
      const Onnx__GraphProto *sub = a->g ? (k == 0 ? a->g : a->graphs[k - 1]) : a->graphs[k];
      onnx_map inner = {0};
      graph_free_vars(sub, &inner);
      for (size_t j = 0; j < inner.cap; j++) {
        const char *name = inner.slots[j].key;
        if (name && !(defined && onnx_map_get(defined, name))) onnx_map_put(out, name, NULL, 0);
      }
      onnx_map_free(&inner);
    }
  }
}

static void graph_free_vars(const Onnx__GraphProto *gp, onnx_map *out) {
  onnx_map defined = {0};
  for (size_t i = 0; i < gp->n_input; i++)
    if (gp->input[i]->name) onnx_map_put(&defined, gp->input[i]->name, NULL, 0);
  for (size_t i = 0; i < gp->n_initializer; i++)
    if (gp->initializer[i]->name) onnx_map_put(&defined, gp->initializer[i]->name, NULL, 0);
  for (size_t i = 0; i < gp->n_node; i++)
    for (size_t j = 0; j < gp->node[i]->n_output; j++)
      if (gp->node[i]->output[j] && *gp->node[i]->output[j]) onnx_map_put(&defined, gp->node[i]->output[j], NULL, 0);
  for (size_t i = 0; i < gp->n_node; i++) node_used_names(gp->node[i], &defined, out);
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *name = gp->output[i]->name;
    if (name && *name && !onnx_map_get(&defined, name)) onnx_map_put(out, name, NULL, 0);
  }
  onnx_map_free(&defined);
}

/* Min-heap of node indices: among ready nodes the earliest in the file goes first. */
typedef struct index_heap {
  size_t *v;
  size_t n;
} index_heap;

static void heap_push(index_heap *h, size_t x) {
  size_t i = h->n++;
  h->v[i] = x;
  while (i && h->v[(i - 1) / 2] > h->v[i]) {
    size_t p = (i - 1) / 2, t = h->v[p];
    h->v[p] = h->v[i];
    h->v[i] = t;
    i = p;
  }
}

static size_t heap_pop(index_heap *h) {
  size_t top = h->v[0];
  h->v[0] = h->v[--h->n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && h->v[l] < h->v[m]) m = l;
    if (r < h->n && h->v[r] < h->v[m]) m = r;
    if (m == i) break;
    size_t t = h->v[m];
    h->v[m] = h->v[i];
    h->v[i] = t;
    i = m;
  }
  return top;
}

/* Topological order of nodes[0..n) (malloc'ed into *order). Errors: a value produced
 * twice, a cycle. */
static kiln_status order_nodes(Onnx__NodeProto *const *nodes, size_t n, size_t **order) {
  *order = NULL;
  kiln_status s = NULL;
  onnx_map producers = {0};
  size_t *indegree = calloc(n + 1, sizeof *indegree);
  size_t *succ_start = calloc(n + 2, sizeof *succ_start);
  size_t *succ = NULL, n_succ = 0, cap_succ = 0;
  size_t *edge_from = NULL; /* parallel to succ while collecting */
  index_heap heap = {calloc(n + 1, sizeof(size_t)), 0};
  size_t *result = malloc((n + 1) * sizeof *result);
  if (!indegree || !succ_start || !heap.v || !result) abort();

  for (size_t i = 0; i < n && !s; i++) {
    for (size_t j = 0; j < nodes[i]->n_output; j++) {
      const char *out = nodes[i]->output[j];
      if (!out || !*out) continue;
      onnx_map_entry *e = onnx_map_get(&producers, out);
      if (e) {
        if ((size_t)e->port == i)
          s = ERR_INVALID("output '%s' is listed twice", out);
        else
          s = ERR_INVALID("value '%s' is produced twice (also by node #%d)", out, e->port);
        s = node_error(s, nodes[i]);
        break;
      }
      if (i > (size_t)INT32_MAX) abort(); /* protobuf-c cannot hold that many nodes anyway */
      onnx_map_put(&producers, out, NULL, (int)i);
    }
  }
  /* Edges producer -> consumer, collected then grouped by producer (counting sort). */
  for (size_t i = 0; i < n && !s; i++) {
    onnx_map used = {0};
    node_used_names(nodes[i], NULL, &used);
    for (size_t k = 0; k < used.cap; k++) {
      if (!used.slots[k].key) continue;
      onnx_map_entry *p = onnx_map_get(&producers, used.slots[k].key);
      if (!p) continue;
      if ((size_t)p->port == i) {
        s = node_error(ERR_INVALID("the node consumes its own output '%s' (a cycle)", used.slots[k].key), nodes[i]);
        break;
      }
      if (n_succ == cap_succ) {
        cap_succ = cap_succ ? cap_succ * 2 : 64;
        succ = realloc(succ, cap_succ * sizeof *succ);
        edge_from = realloc(edge_from, cap_succ * sizeof *edge_from);
        if (!succ || !edge_from) abort();
      }
      edge_from[n_succ] = (size_t)p->port;
      succ[n_succ++] = i;
      indegree[i]++;
    }
    onnx_map_free(&used);
  }
  if (!s) {
    size_t *grouped = malloc((n_succ + 1) * sizeof *grouped);
    if (!grouped) abort();
    for (size_t e = 0; e < n_succ; e++) succ_start[edge_from[e] + 1]++;
    for (size_t i = 0; i < n; i++) succ_start[i + 1] += succ_start[i];
    size_t *fill = calloc(n + 1, sizeof *fill);
    if (!fill) abort();
    for (size_t e = 0; e < n_succ; e++) grouped[succ_start[edge_from[e]] + fill[edge_from[e]]++] = succ[e];
    free(fill);
    size_t done = 0;
    for (size_t i = 0; i < n; i++)
      if (!indegree[i]) heap_push(&heap, i);
    while (heap.n) {
      size_t i = heap_pop(&heap);
      result[done++] = i;
      for (size_t e = succ_start[i]; e < succ_start[i + 1]; e++)
        if (--indegree[grouped[e]] == 0) heap_push(&heap, grouped[e]);
    }
    free(grouped);
    if (done < n) {
      size_t stuck = 0;
      while (!indegree[stuck]) stuck++;
      s = node_error(ERR_INVALID("the graph has a cycle through this node"), nodes[stuck]);
    }
  }
  onnx_map_free(&producers);
  free(indegree);
  free(succ_start);
  free(succ);
  free(edge_from);
  free(heap.v);
  if (s) {
    free(result);
    return s;
  }
  *order = result;
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Graph contents                                                                      */

static kiln_status convert_graph(onnx_ctx *ctx, scope *s, const Onnx__GraphProto *gp);
static kiln_status convert_nodes(onnx_ctx *ctx, scope *s, Onnx__NodeProto *const *nodes, size_t n);

typedef struct body_list {
  int n, cap;
  scope **items;
} body_list;

static void body_list_free(body_list *b) {
  for (int i = 0; i < b->n; i++) {
    scope_free(b->items[i]);
    free(b->items[i]);
  }
  free(b->items);
}

/* Converts subgraph gp into a new library function; the body's scope goes to `bodies`
 * so that its captures can be wired once every body of the node is done. */
static kiln_status convert_body(onnx_ctx *ctx, scope *outer, const char *base, const Onnx__GraphProto *gp,
                                body_list *bodies, graph **out) {
  graph *fg;
  TRY(graph_add_function(ctx->root, unique_function_name(ctx->root, base), &fg));
  fg->opset = ctx->opset; /* bodies answer the same question as the root */
  scope *body = calloc(1, sizeof *body);
  if (!body) abort();
  body->parent = outer;
  body->g = fg;
  body->owner = body;
  body->caller = outer->caller;
  body->caller_scope = outer->caller_scope;
  if (bodies->n == bodies->cap) {
    bodies->cap = bodies->cap ? bodies->cap * 2 : 4;
    bodies->items = realloc(bodies->items, (size_t)bodies->cap * sizeof *bodies->items);
    if (!bodies->items) abort();
  }
  bodies->items[bodies->n++] = body;
  *out = fg;
  return convert_graph(ctx, body, gp);
}

/* Makes every body of node n take the union of their captures, in one order, and feeds
 * the captured outer values to n as its last data inputs. */
static kiln_status wire_captures(graph_node *n, body_list *bodies) {
  onnx_map seen = {0};
  int n_union = 0, cap_union = 0;
  capture *uni = NULL;
  for (int b = 0; b < bodies->n; b++) {
    for (int i = 0; i < bodies->items[b]->n_captures; i++) {
      capture *c = &bodies->items[b]->captures[i];
      if (onnx_map_get(&seen, c->name)) continue;
      onnx_map_put(&seen, c->name, NULL, 0);
      if (n_union == cap_union) {
        cap_union = cap_union ? cap_union * 2 : 8;
        uni = realloc(uni, (size_t)cap_union * sizeof *uni);
        if (!uni) abort();
      }
      uni[n_union++] = *c;
    }
  }
  onnx_map_free(&seen);
  kiln_status s = NULL;
  for (int b = 0; b < bodies->n && !s; b++) {
    scope *body = bodies->items[b];
    graph_node **ordered = calloc((size_t)n_union + 1, sizeof *ordered);
    if (!ordered) abort();
    for (int k = 0; k < n_union && !s; k++) {
      onnx_map_entry *e = onnx_map_get(&body->capture_index, uni[k].name);
      if (e) ordered[k] = body->captures[e->port].input;
      if (!ordered[k]) {
        capture *c;
        s = add_capture_input(body, uni[k].name, uni[k].outer, &c);
        if (!s) ordered[k] = c->input;
      }
    }
    if (!s && body->g->n_inputs != body->n_formal + n_union)
      s = ERR_INTERNAL("body '%s' has %d inputs, expected %d formal + %d captured", body->g->name,
                       body->g->n_inputs, body->n_formal, n_union);
    if (!s) {
      for (int k = 0; k < n_union; k++) body->g->inputs[body->n_formal + k] = ordered[k];
      graph_invalidate(body->g);
    }
    free(ordered);
  }
  for (int k = 0; k < n_union && !s; k++) s = graph_add_edge(uni[k].outer.node, uni[k].outer.port, n);
  if (!s && n_union) {
    const char **names = malloc((size_t)n_union * sizeof *names);
    if (!names) abort();
    for (int k = 0; k < n_union; k++) names[k] = uni[k].name;
    set_strings_attr(n, "_captures", n_union, names, NULL);
    free(names);
  }
  free(uni);
  return s;
}

/* The attribute ONNX means by `a`: itself, or for ref_attr_name inside an inlined
 * function the calling node's attribute of that name (NULL: the caller has none, so
 * the attribute is left out). */
static kiln_status deref_attr(const scope *s, const Onnx__AttributeProto *a, const Onnx__AttributeProto **out) {
  const scope *sc = s;
  for (int guard = 0; a && a->ref_attr_name && *a->ref_attr_name; guard++) {
    if (!sc || !sc->caller || guard > ONNX_MAX_INLINE_DEPTH)
      return ERR_INVALID("attribute '%s' refers to function attribute '%s' outside a function", onnx_str(a->name),
                         a->ref_attr_name);
    const Onnx__AttributeProto *found = NULL;
    for (size_t i = 0; i < sc->caller->n_attribute && !found; i++)
      if (strcmp(onnx_str(sc->caller->attribute[i]->name), a->ref_attr_name) == 0) found = sc->caller->attribute[i];
    a = found;
    sc = sc->caller_scope;
  }
  *out = a;
  return NULL;
}

static int attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return (int)a->type;
  /* IR version 1 had no type field: infer from the field in use. */
  if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  if (a->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
  if (a->tp) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
  if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
  if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  if (a->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
  if (a->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
  if (a->n_sparse_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
  if (a->n_type_protos) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
  return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* Sets attribute `name` of n from ONNX attribute a (already dereferenced). */
static kiln_status convert_attr_value(onnx_ctx *ctx, scope *s, graph_node *n, const char *name,
                                      const Onnx__AttributeProto *a, body_list *bodies, bool *skipped) {
  int type = attr_type(a);
  graph_attr_value v = {.kind = GRAPH_ATTR_LIST};
  kiln_status st = NULL;
  switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      graph_node_set_attr_float(n, name, a->f);
      return NULL;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      graph_node_set_attr_int(n, name, a->i);
      return NULL;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
      graph_node_set_attr_string(n, name, (const char *)a->s.data, a->s.len);
      return NULL;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
      if (!a->t) return ERR_INVALID("tensor attribute has no tensor");
      graph_tensor *t;
      TRY(onnx_tensor_from_proto(ctx, a->t, &t));
      graph_node_set_attr_tensor(n, name, t);
      tensor_free(t);
      return NULL;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
      if (!a->g) return ERR_INVALID("graph attribute has no graph");
      strbuf base;
      strbuf_init(&base);
      strbuf_printf(&base, "%s/%s", n->name, name);
      graph *fg = NULL;
      st = convert_body(ctx, s, strbuf_cstr(&base), a->g, bodies, &fg);
      strbuf_free(&base);
      if (!st) graph_node_set_attr_func(n, name, fg);
      return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED: {
      size_t count = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS    ? a->n_floats
                     : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS    ? a->n_ints
                     : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS ? a->n_strings
                     : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS ? a->n_tensors
                     : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS  ? a->n_graphs
                                                                              : 0;
      if (count > INT32_MAX) return ERR_INVALID("list attribute is too long");
      v.list.elem = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS    ? GRAPH_ATTR_FLOAT
                    : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS    ? GRAPH_ATTR_INT
                    : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS ? GRAPH_ATTR_STRING
                    : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS ? GRAPH_ATTR_TENSOR
                    : type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS  ? GRAPH_ATTR_FUNC
                                                                             : GRAPH_ATTR_NONE;
      v.list.n = (int)count;
      v.list.items = calloc(count ? count : 1, sizeof *v.list.items);
      if (!v.list.items) abort();
      for (size_t i = 0; i < count && !st; i++) {
        graph_attr_value *it = &v.list.items[i];
        it->kind = v.list.elem;
        switch (v.list.elem) {
          case GRAPH_ATTR_FLOAT: it->f = a->floats[i]; break;
          case GRAPH_ATTR_INT: it->i = a->ints[i]; break;
          case GRAPH_ATTR_STRING:
            it->s.data = (char *)a->strings[i].data;
            it->s.len = a->strings[i].len;
            if (!it->s.data) it->s.data = "";
            break;
          case GRAPH_ATTR_TENSOR:
            st = onnx_tensor_from_proto(ctx, a->tensors[i], &it->tensor);
            if (st) st = status_wrap(st, "element %zu", i);
            break;
          case GRAPH_ATTR_FUNC: {
            strbuf base;
            strbuf_init(&base);
            strbuf_printf(&base, "%s/%s/%zu", n->name, name, i);
            graph *fg = NULL;
            st = convert_body(ctx, s, strbuf_cstr(&base), a->graphs[i], bodies, &fg);
            strbuf_free(&base);
            if (st) st = status_wrap(st, "graph %zu", i);
            else it->func = (graph_func_ref){fg->name, fg, 0, NULL};
            break;
          }
          default: break;
        }
      }
      if (!st) graph_node_set_attr(n, name, &v);
      if (v.list.elem == GRAPH_ATTR_TENSOR)
        for (size_t i = 0; i < count; i++) tensor_free(v.list.items[i].tensor);
      free(v.list.items);
      return st;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
      return ERR_UNIMPLEMENTED("sparse tensor attributes are not supported");
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
      *skipped = true;
      return NULL;
    default:
      return ERR_INVALID("unknown attribute type %d", type);
  }
}

/* Constant's value_* forms become one `value` tensor. */
static kiln_status normalize_constant(graph_node *n) {
  static const char *const forms[] = {"value", "value_float", "value_floats", "value_int",
                                      "value_ints", "value_string", "value_strings"};
  int found = -1;
  for (int i = 0; i < (int)(sizeof forms / sizeof forms[0]); i++) {
    if (!graph_node_attr(n, forms[i])) continue;
    if (found >= 0) return ERR_INVALID("Constant has both '%s' and '%s'", forms[found], forms[i]);
    found = i;
  }
  if (found < 0) return ERR_INVALID("Constant has no value attribute");
  const graph_attr_value *v = graph_node_attr(n, forms[found]);
  graph_tensor *t = NULL;
  switch (found) {
    case 0:
      if (v->kind != GRAPH_ATTR_TENSOR) return ERR_INVALID("Constant's 'value' is not a tensor");
      break;
    case 1: case 3: case 5: {
      graph_attr_kind want = found == 1 ? GRAPH_ATTR_FLOAT : found == 3 ? GRAPH_ATTR_INT : GRAPH_ATTR_STRING;
      if (v->kind != want) return ERR_INVALID("Constant's '%s' has the wrong attribute type", forms[found]);
      TRY(tensor_create_scalar(found == 1 ? GRAPH_DT_FLOAT : found == 3 ? GRAPH_DT_INT64 : GRAPH_DT_STRING, &t));
      if (found == 1) ((float *)t->data)[0] = v->f;
      else if (found == 3) ((int64_t *)t->data)[0] = v->i;
      else tensor_set_string(t, 0, v->s.data, v->s.len);
      break;
    }
    default: {
      graph_attr_kind want = found == 2 ? GRAPH_ATTR_FLOAT : found == 4 ? GRAPH_ATTR_INT : GRAPH_ATTR_STRING;
      if (v->kind != GRAPH_ATTR_LIST || (v->list.n && v->list.elem != want))
        return ERR_INVALID("Constant's '%s' has the wrong attribute type", forms[found]);
      int64_t dim = v->list.n;
      TRY(tensor_create(found == 2 ? GRAPH_DT_FLOAT : found == 4 ? GRAPH_DT_INT64 : GRAPH_DT_STRING, 1, &dim, &t));
      for (int i = 0; i < v->list.n; i++) {
        const graph_attr_value *it = &v->list.items[i];
        if (found == 2) ((float *)t->data)[i] = it->f;
        else if (found == 4) ((int64_t *)t->data)[i] = it->i;
        else tensor_set_string(t, i, it->s.data, it->s.len);
      }
      break;
    }
  }
  if (t) {
    graph_node_remove_attr(n, forms[found]);
    graph_node_set_attr_tensor(n, "value", t);
    tensor_free(t);
  }
  const graph_tensor *value = graph_node_attr(n, "value")->tensor;
  graph_shape shape = tensor_shape(value);
  graph_node_set_output(n, 0, value->dtype, &shape);
  return NULL;
}

/* value_info / output types become the node output's dtype and shape as soon as the
 * value is defined, so that captures of it carry them into bodies. Constants keep their
 * tensor's; non-tensor and unknown types say nothing. */
static void apply_value_info(const scope *s, const char *name, graph_node *node, int port) {
  onnx_map_entry *e = onnx_map_get(&s->infos, name);
  if (!e || !node || node->is_input || graph_node_is(node, "onnx.Constant")) return;
  const Onnx__ValueInfoProto *vi = e->data;
  onnx_type_info info;
  onnx_type_info_from_proto(vi->type, &info);
  if (info.non_tensor || info.rank_too_large) return;
  if (info.dtype == GRAPH_DT_INVALID && info.shape.rank == GRAPH_UNKNOWN) return;
  graph_node_set_output(node, port, info.dtype, &info.shape);
}

static kiln_status define_output(scope *s, const char *name, graph_node *node, int port) {
  if (onnx_map_get(&s->values, name)) return ERR_INVALID("value '%s' is defined twice", name);
  onnx_map_put(&s->values, name, node, port);
  apply_value_info(s, name, node, port);
  return NULL;
}

static const char *base_name(const Onnx__NodeProto *np) {
  if (np->name && *np->name) return np->name;
  for (size_t i = 0; i < np->n_output; i++)
    if (np->output[i] && *np->output[i]) return np->output[i];
  return onnx_str(np->op_type);
}

static const char *prefixed_name(scope *s, const char *base) {
  if (!s->prefix) return unique_name(s, base);
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "%s/%s", s->prefix, base);
  const char *r = unique_name(s, strbuf_cstr(&b));
  strbuf_free(&b);
  return r;
}

/* Inlines a call of model-local function fp made by node np of scope s. */
static kiln_status inline_call(onnx_ctx *ctx, scope *s, const Onnx__NodeProto *np, const Onnx__FunctionProto *fp) {
  for (int i = 0; i < ctx->inline_depth; i++)
    if (ctx->inline_stack[i] == fp) return ERR_INVALID("model-local function '%s' calls itself", onnx_str(fp->name));
  if (ctx->inline_depth >= ONNX_MAX_INLINE_DEPTH)
    return ERR_UNIMPLEMENTED("model-local functions nest more than %d deep", ONNX_MAX_INLINE_DEPTH);
  /* Calls count against the budget too: bodies without nodes can still double. */
  if (++ctx->inlined_nodes > onnx_import_max_inlined_nodes)
    return status_error(KILN_RESOURCE_EXHAUSTED, "model-local functions expand to more than %lld nodes",
                        (long long)onnx_import_max_inlined_nodes);
  if (np->n_input > fp->n_input)
    return ERR_INVALID("%zu inputs given, function '%s' takes %zu", np->n_input, onnx_str(fp->name), fp->n_input);
  if (np->n_output > fp->n_output)
    return ERR_INVALID("%zu outputs named, function '%s' has %zu", np->n_output, onnx_str(fp->name), fp->n_output);
  scope inner = {0};
  inner.g = s->g;
  inner.owner = s->owner;
  inner.caller = np;
  inner.caller_scope = s;
  inner.prefix = prefixed_name(s, base_name(np));
  kiln_status st = NULL;
  for (size_t i = 0; i < fp->n_input && !st; i++) {
    const char *formal = onnx_str(fp->input[i]);
    if (!*formal) {
      st = ERR_INVALID("function '%s' has an unnamed input", onnx_str(fp->name));
      break;
    }
    graph_edge e = {NULL, 0};
    const char *actual = i < np->n_input ? onnx_str(np->input[i]) : "";
    if (*actual) {
      bool found;
      st = resolve(s, actual, &found, &e);
      if (!st && !found) st = ERR_INVALID("input %zu ('%s') is not defined", i, actual);
    }
    if (!st) st = define_output(&inner, formal, e.node, e.port);
  }
  if (!st) {
    ctx->inline_stack[ctx->inline_depth++] = fp;
    st = convert_nodes(ctx, &inner, fp->node, fp->n_node);
    ctx->inline_depth--;
    if (st) st = status_wrap(st, "in function '%s'", onnx_str(fp->name));
  }
  for (size_t j = 0; j < np->n_output && !st; j++) {
    const char *actual = onnx_str(np->output[j]);
    if (!*actual) continue;
    const char *formal = onnx_str(fp->output[j]);
    bool found;
    graph_edge e;
    st = resolve(&inner, formal, &found, &e);
    if (!st && (!found || !e.node))
      st = ERR_INVALID("function '%s' does not produce its output '%s'", onnx_str(fp->name), formal);
    if (!st) st = define_output(s, actual, e.node, e.port);
  }
  scope_free(&inner);
  return st;
}

static kiln_status convert_node(onnx_ctx *ctx, scope *s, const Onnx__NodeProto *np) {
  const char *op_type = onnx_str(np->op_type);
  const char *domain = onnx_str(np->domain);
  if (!*op_type) return node_error(ERR_INVALID("node has no op_type"), np);
  const Onnx__FunctionProto *fp = find_model_function(ctx, domain, op_type);
  if (fp) {
    kiln_status st = inline_call(ctx, s, np, fp);
    return st ? node_error(st, np) : NULL;
  }
  bool dflt = is_default_domain(domain);
  if (dflt && !ctx->opset)
    return node_error(ERR_INVALID("the model uses ONNX op %s but imports no opset of the default domain", op_type),
                      np);
  if (np->n_output > GRAPH_MAX_OUTPUTS) return node_error(ERR_INVALID("too many outputs (%zu)", np->n_output), np);
  if (np->n_input > INT32_MAX / 2) return node_error(ERR_INVALID("too many inputs (%zu)", np->n_input), np);

  strbuf op;
  strbuf_init(&op);
  strbuf_printf(&op, "%s.%s", dflt ? "onnx" : domain, op_type);
  if (ctx->inline_depth > 0 && ++ctx->inlined_nodes > onnx_import_max_inlined_nodes) {
    strbuf_free(&op);
    return node_error(status_error(KILN_RESOURCE_EXHAUSTED,
                                   "model-local functions expand to more than %lld nodes",
                                   (long long)onnx_import_max_inlined_nodes),
                      np);
  }
  graph_node *n;
  kiln_status st = graph_add_node(s->g, prefixed_name(s, base_name(np)), strbuf_cstr(&op), &n);
  strbuf_free(&op);
  if (st) return node_error(st, np);

  body_list bodies = {0};
  const char **skipped = NULL;
  int n_skipped = 0;
  int64_t *absent = NULL;
  int n_absent = 0;
  if (np->n_input || np->n_attribute) {
    absent = malloc((np->n_input + 1) * sizeof *absent);
    skipped = malloc((np->n_attribute + 1) * sizeof *skipped);
    if (!absent || !skipped) abort();
  }
  for (size_t i = 0; i < np->n_input && !st; i++) {
    const char *in = onnx_str(np->input[i]);
    graph_edge e = {NULL, 0};
    if (*in) {
      bool found;
      st = resolve(s, in, &found, &e);
      if (!st && !found) st = ERR_INVALID("input %zu ('%s') is not defined", i, in);
    }
    if (st) break;
    if (!e.node) absent[n_absent++] = (int64_t)i;
    else st = graph_add_edge(e.node, e.port, n);
  }
  if (!st) st = graph_node_set_num_outputs(n, (int)np->n_output);
  for (size_t i = 0; i < np->n_attribute && !st; i++) {
    const Onnx__AttributeProto *a = np->attribute[i];
    const char *name = onnx_str(a->name);
    if (!*name) {
      st = ERR_INVALID("attribute %zu has no name", i);
      break;
    }
    if (name[0] == '_') {
      st = ERR_INVALID("attribute '%s': names starting with '_' are reserved by kiln", name);
      break;
    }
    for (size_t k = 0; k < i && !st; k++)
      if (strcmp(onnx_str(np->attribute[k]->name), name) == 0) st = ERR_INVALID("attribute '%s' is given twice", name);
    if (st) break;
    const Onnx__AttributeProto *target = NULL;
    bool skip = false;
    st = deref_attr(s, a, &target);
    if (!st && target) st = convert_attr_value(ctx, s, n, name, target, &bodies, &skip);
    if (st) st = status_wrap(st, "attribute '%s'", name);
    if (skip) skipped[n_skipped++] = name;
  }
  if (!st && dflt && strcmp(op_type, "Constant") == 0) st = normalize_constant(n);
  if (!st) st = wire_captures(n, &bodies);
  if (!st && n_absent) graph_node_set_attr_ints(n, "_absent_inputs", n_absent, absent);
  if (!st && !dflt) {
    const onnx_domain_opset *d = find_domain(ctx, domain);
    if (d) graph_node_set_attr_int(n, "_domain_opset", d->version);
  }
  if (!st && n_skipped) set_strings_attr(n, "_skipped_attrs", n_skipped, skipped, NULL);
  for (size_t j = 0; j < np->n_output && !st; j++) {
    const char *out = onnx_str(np->output[j]);
    if (*out) st = define_output(s, out, n, (int)j);
  }
  free(absent);
  free(skipped);
  body_list_free(&bodies);
  if (st) st = status_wrap(st, "node '%s' (%s)", n->name, n->op);
  return st;
}

static kiln_status convert_nodes(onnx_ctx *ctx, scope *s, Onnx__NodeProto *const *nodes, size_t n) {
  size_t *order;
  TRY(order_nodes(nodes, n, &order));
  kiln_status st = NULL;
  for (size_t k = 0; k < n && !st; k++) {
    st = convert_node(ctx, s, nodes[order[k]]);
  }
  free(order);
  return st;
}

static kiln_status type_for_input(const Onnx__ValueInfoProto *vi, onnx_type_info *info) {
  onnx_type_info_from_proto(vi->type, info);
  if (info->rank_too_large)
    return ERR_UNIMPLEMENTED("rank %zu is over kiln's limit of %d", vi->type->tensor_type->shape->n_dim, GRAPH_MAX_RANK);
  if (info->dtype == GRAPH_DT_INVALID && info->onnx_elem_type != 0)
    return ERR_UNIMPLEMENTED("element type %s (%" PRId64 ") is not supported", onnx_dtype_name(info->onnx_elem_type),
                             info->onnx_elem_type);
  return NULL;
}

static kiln_status convert_graph(onnx_ctx *ctx, scope *s, const Onnx__GraphProto *gp) {
  if (gp->n_sparse_initializer) return ERR_UNIMPLEMENTED("sparse initializers are not supported");
  onnx_map inits = {0};
  kiln_status st = NULL;
  for (size_t i = 0; i < gp->n_value_info; i++)
    if (gp->value_info[i]->name && gp->value_info[i]->type)
      onnx_map_put(&s->infos, gp->value_info[i]->name, NULL, 0)->data = gp->value_info[i];
  for (size_t i = 0; i < gp->n_output; i++)
    if (gp->output[i]->name && gp->output[i]->type)
      onnx_map_put(&s->infos, gp->output[i]->name, NULL, 0)->data = gp->output[i];
  for (size_t i = 0; i < gp->n_initializer && !st; i++) {
    const char *name = onnx_str(gp->initializer[i]->name);
    if (!*name) st = ERR_INVALID("initializer %zu has no name", i);
    else if (onnx_map_get(&inits, name)) st = ERR_INVALID("initializer '%s' is given twice", name);
    else onnx_map_put(&inits, name, NULL, 0);
  }
  /* Inputs first, so that they keep their exact names. */
  for (size_t i = 0; i < gp->n_input && !st; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    const char *name = onnx_str(vi->name);
    if (!*name) {
      st = ERR_INVALID("graph input %zu has no name", i);
      break;
    }
    /* An initializer listed as input (IR < 4 style) is a constant of the main graph. A
     * body's inputs are positional parameters its op passes (Loop's iteration count,
     * Scan's slices), so there the input wins and the initializer is dropped. */
    onnx_map_entry *init = onnx_map_get(&inits, name);
    if (init && !s->parent) continue;
    if (init) init->port = -1;
    if (onnx_map_get(&s->values, name)) {
      st = ERR_INVALID("graph input '%s' is listed twice", name);
      break;
    }
    onnx_type_info info;
    st = type_for_input(vi, &info);
    graph_node *in = NULL;
    if (!st) st = graph_add_input(s->g, unique_name(s, name), info.dtype, &info.shape, &in);
    if (st) {
      st = status_wrap(st, "graph input '%s'", name);
      break;
    }
    if (info.any_dim_param) {
      const char *params[GRAPH_MAX_RANK];
      for (int d = 0; d < info.shape.rank; d++) params[d] = info.dim_params[d] ? info.dim_params[d] : "";
      set_strings_attr(in, "_dim_params", info.shape.rank, params, NULL);
    }
    if (info.non_tensor) {
      strbuf text;
      strbuf_init(&text);
      onnx_type_text(vi->type, &text);
      graph_node_set_attr_string(in, "_onnx_type", strbuf_cstr(&text), text.len);
      strbuf_free(&text);
    }
    onnx_map_put(&s->values, name, in, 0);
    s->n_formal++;
  }
  for (size_t i = 0; i < gp->n_initializer && !st; i++) {
    Onnx__TensorProto *tp = gp->initializer[i];
    if (onnx_map_get(&inits, tp->name)->port < 0) continue; /* shadowed by a body input */
    graph_tensor *t;
    st = onnx_tensor_from_proto(ctx, tp, &t);
    if (st) {
      st = status_wrap(st, "initializer");
      break;
    }
    /* The weights now live in the tensor: drop protobuf-c's copy to halve peak memory
     * (free_unpacked skips a NULL buffer; nothing reads this tensor proto again). A
     * payload in the mapped file is not protobuf-c's (onnx_lean.c). */
    if (!onnx_lean_is_mapped(ctx, tp->raw_data.data)) free(tp->raw_data.data);
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    graph_node *c;
    st = graph_add_node(s->g, unique_name(s, tp->name), "onnx.Constant", &c);
    if (!st) {
      graph_node_set_attr_tensor(c, "value", t);
      graph_shape shape = tensor_shape(t);
      graph_node_set_output(c, 0, t->dtype, &shape);
      onnx_map_put(&s->values, tp->name, c, 0);
    }
    tensor_free(t);
  }
  onnx_map_free(&inits);
  if (!st) st = convert_nodes(ctx, s, gp->node, gp->n_node);
  for (size_t i = 0; i < gp->n_output && !st; i++) {
    const char *name = onnx_str(gp->output[i]->name);
    bool found;
    graph_edge e;
    if (!*name) {
      st = ERR_INVALID("graph output %zu has no name", i);
      break;
    }
    st = resolve(s, name, &found, &e);
    if (!st && (!found || !e.node))
      st = ERR_INVALID("graph output '%s' is not produced by any node, input or initializer", name);
    if (!st) st = graph_add_result(s->g, name, e.node, e.port);
  }
  return st;
}

kiln_status onnx_convert_main_graph(onnx_ctx *ctx, const Onnx__GraphProto *gp) {
  scope root = {0};
  root.g = ctx->root;
  root.owner = &root;
  kiln_status st = convert_graph(ctx, &root, gp);
  scope_free(&root);
  return st;
}
