/* Post-placement pass mark-for-compilation: which nodes form which cluster.
 *
 * TensorFlow's mark_for_compilation_pass, rule for rule:
 *   1. candidates: a node its device can run through a lowering (or a Const,
 *      Identity-like or resource-variable op, which the cluster runtime handles), minus
 *      stateful RNG, asserts, TensorArray/TensorList/variant ops, string tensors, ops
 *      whose output shape depends on values, ops the user excluded (--jit_ops,
 *      --jit_exclude_ops, _XlaCompile=false). Every node that is not a candidate gets
 *      the reason. Nodes inside while-loop frames are candidates like any other. TF2's
 *      functional While/If are candidates when every node of their functions,
 *      recursively, passes the same rules (the cluster runner lowers them to HLO
 *      while/conditional); otherwise the reason names the blocking function node.
 *      The TensorList ops the runner compiles (as buffers) are candidates only where
 *      every node across their variant edges can share their cluster (confine_lists);
 *   2. every node starts as its own cluster; the detector graph (jit/cycles.h) holds
 *      one node per graph node with every data and control edge but loop back-edges;
 *   3. contraction, in post-order over the graph, along each edge from a cluster to a
 *      consumer's cluster, in two phases: first only edges into shape consumers
 *      (Shape/Size/Rank join their producer's cluster before anything else can take
 *      the producer's place), then every edge, each phase repeated until nothing
 *      merges. Two clusters merge only if they share the loop frame (a cluster runs
 *      once per iteration of its frame, so it never spans two), the device, the
 *      deadness predicate (pointer-equal, jit/deadness.h), the compile scope and explicit-scope
 *      status, the merged size stays within --max_cluster_size, no unsafe
 *      resource-variable pair would share the cluster (jit_resource_unsafe), and
 *      contracting the edge closes no cycle (jit_cycles_contract_edge);
 *   4. clusters without an explicit scope dissolve when they count fewer than
 *      --min_cluster_size nodes (Identity-like ops and Const do not count, a functional
 *      While/If counts the nodes of its functions too), or when all
 *      their work is on tiny tensors (the host-cost rule: launching a compiled kernel
 *      for a few scalars costs more than evaluating them op by op on the host).
 * With --clustering_debug every refused merge is logged with its reason. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "graph/cluster_op.h"
#include "jit/cycles.h"
#include "jit/deadness.h"
#include "jit/jit_internal.h"

/* The host-cost rule: a cluster whose every member output has at most this many
 * elements is scalar bookkeeping (loop counters, shape arithmetic). */
#define JIT_TINY_ELEMENTS 1

typedef struct cl_state {
  int parent;       /* union-find over node ids */
  int cyc;          /* detector node of the cluster (valid at the root) */
  int n_members, cap_members;
  int *members;     /* node ids (valid at the root) */
  const char *scope;
  bool must_compile;
} cl_state;

typedef struct marker {
  jit_state *st;
  cl_state *cl; /* by node id */
  jit_cycles *cycles;
  deadness *dead;
  jit_resource_order *order;
  int merges;
} marker;

static int find(marker *mk, int id) {
  while (mk->cl[id].parent != id) {
    mk->cl[id].parent = mk->cl[mk->cl[id].parent].parent;
    id = mk->cl[id].parent;
  }
  return id;
}

/* ------------------------------------------------------------ candidates ---- */

static bool listed(const char *list, const graph_node *n) {
  if (!list || !list[0]) return false;
  const char *base = graph_node_op_base(n);
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if ((strlen(n->op) == len && strncmp(n->op, p, len) == 0) || (strlen(base) == len && strncmp(base, p, len) == 0))
      return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

static bool hlo_dtype(graph_dtype dt) {
  hlo_type t;
  return dt == GRAPH_DT_INVALID || graph_dtype_to_hlo(dt, &t);
}

/* Whether a value of dtype dt can flow into or out of a node of that kind inside a
 * cluster: HLO types, and the variants of the TensorLists that TensorList ops and
 * While/If nodes carry as buffers. */
static bool clusterable_dtype(jit_node_kind kind, graph_dtype dt) {
  if (dt == GRAPH_DT_VARIANT) return kind == JIT_KIND_TENSOR_LIST || kind == JIT_KIND_FUNCTIONAL;
  return hlo_dtype(dt);
}

/* Frames: 0 is the root; an Enter opens (or joins) the frame its frame_name names
 * inside its input's frame and an Exit returns to the parent of its input's frame
 * (TF's ControlFlowInfo). Every Enter of one loop names the same frame, so the loop's
 * body is one frame however many values enter it; clusters never span two frames. */
static int frame_of_enter(const graph_node *enter, int parent, int *n_frames, int *parents,
                          const char **names) {
  const graph_attr_value *v = graph_node_attr(enter, "frame_name");
  /* a nameless Enter opens a frame of its own, so nothing is shared wrongly */
  const char *name = v && v->kind == GRAPH_ATTR_STRING ? v->s.data : NULL;
  for (int f = 1; name && f < *n_frames; f++)
    if (parents[f] == parent && names[f] && strcmp(names[f], name) == 0) return f;
  parents[*n_frames] = parent;
  names[*n_frames] = name;
  return (*n_frames)++;
}

static void assign_frames(jit_state *st) {
  int n_frames = 1;
  int *parent = malloc(((size_t)st->n_topo + 1) * sizeof *parent);
  const char **names = malloc(((size_t)st->n_topo + 1) * sizeof *names);
  if (!parent || !names) abort();
  parent[0] = 0;
  names[0] = NULL;
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    int f = 0;
    bool found = false;
    for (int k = 0; k < n->n_inputs && !found; k++)
      if (!graph_node_is_next_iteration(n->inputs[k].node)) {
        f = jit_node(st, n->inputs[k].node)->frame;
        found = true;
      }
    for (int k = 0; k < n->n_control && !found; k++) {
      f = jit_node(st, n->control_inputs[k])->frame;
      found = true;
    }
    const char *b = graph_node_op_base(n);
    if (strcmp(b, "Enter") == 0 || strcmp(b, "RefEnter") == 0) {
      f = frame_of_enter(n, f, &n_frames, parent, names);
    } else if (strcmp(b, "Exit") == 0 || strcmp(b, "RefExit") == 0) {
      f = parent[f];
    }
    jit_node(st, n)->frame = f;
  }
  st->frame_names = arena_calloc(st->arena, (size_t)n_frames, sizeof *st->frame_names);
  memcpy(st->frame_names, names, (size_t)n_frames * sizeof *names);
  free(parent);
  free(names);
}

/* Why an op-library op cannot be in a cluster, from its traits; NULL when it can. */
static const char *trait_reason(const op_def *def) {
  uint32_t tr = def->traits;
  if (tr & OP_RNG) return "stateful random op";
  if (tr & OP_ASSERT) return "assertion";
  if (tr & OP_VARIANT) return "TensorArray/TensorList/variant op";
  if (tr & OP_STRING) return "string op";
  if (tr & OP_DYNAMIC_SHAPE) return "output shape depends on input values";
  if ((tr & OP_STATEFUL) && !(tr & (OP_RESOURCE_READ | OP_RESOURCE_WRITE))) return "stateful op";
  return NULL;
}

static const char *functional_blocker(jit_state *st, const graph_node *n, int depth);

/* Whether a function node takes or gives a variant (a TensorList, a TensorArray's
 * flow), so the message can say so. */
static bool uses_variant(const graph_node *n) {
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k].dtype == GRAPH_DT_VARIANT) return true;
  for (int k = 0; k < n->n_inputs; k++) {
    const graph_edge *e = &n->inputs[k];
    if (e->port >= 0 && e->port < e->node->n_outputs && e->node->outputs[e->port].dtype == GRAPH_DT_VARIANT)
      return true;
  }
  return strncmp(graph_node_op_base(n), "TensorList", 10) == 0 || strncmp(graph_node_op_base(n), "TensorArray", 11) == 0;
}

/* Why function f (a While's cond/body, an If's branch) cannot be lowered into its
 * caller's cluster: the first node the cluster runner's lowering would refuse, as
 * "<attr> node <name> (<op>): <reason>"; NULL when every node lowers. Nested
 * While/If nodes are checked recursively. */
static const char *function_blocker(jit_state *st, const char *attr, const graph *f, int depth) {
  for (int i = 0; i < f->n_nodes; i++) {
    const graph_node *n = f->nodes[i];
    if (n->is_input || strcmp(n->op, GRAPH_OP_INPUT) == 0) continue;
    const op_def *def = NULL;
    const char *why = NULL;
    jit_node_kind kind = jit_classify(n, &def);
    switch (kind) {
      case JIT_KIND_CONST:
      case JIT_KIND_IDENTITY:
      case JIT_KIND_TENSOR_LIST:
        break;
      case JIT_KIND_LOWERED:
        why = trait_reason(def);
        if (!why && def->host && (def->traits & OP_DYNAMIC_SHAPE)) why = "runs as a host kernel";
        break;
      case JIT_KIND_FUNCTIONAL:
        why = functional_blocker(st, n, depth + 1);
        break;
      case JIT_KIND_RESOURCE:
        why = "resource-variable op (variables are not compiled inside function bodies)";
        break;
      case JIT_KIND_HOST_ONLY:
        why = "no HLO lowering (only a host kernel)";
        break;
      case JIT_KIND_OTHER:
        why = uses_variant(n) ? "TensorArray/TensorList/variant op (runs in the executor)" : "runs in the executor";
        break;
    }
    /* Identity-like nodes pass TensorLists through too */
    jit_node_kind flows = kind == JIT_KIND_IDENTITY ? JIT_KIND_TENSOR_LIST : kind;
    for (int k = 0; k < n->n_outputs && !why; k++)
      if (!clusterable_dtype(flows, n->outputs[k].dtype))
        why = arena_printf(st->arena, "output %d is %s", k, graph_dtype_name(n->outputs[k].dtype));
    if (why) return arena_printf(st->arena, "%s node %s (%s): %s", attr, n->name, graph_node_op_base(n), why);
  }
  return NULL;
}

/* Why the While/If node n cannot be compiled: the first blocking node of its
 * functions, or a missing function; NULL when the cluster runner can lower it. */
static const char *functional_blocker(jit_state *st, const graph_node *n, int depth) {
  static const char *const while_attrs[] = {"cond", "body", NULL};
  static const char *const if_attrs[] = {"then_branch", "else_branch", NULL};
  if (depth > 32) return "functions nest too deeply";
  const char *base = graph_node_op_base(n);
  const char *const *attrs = strstr(base, "While") ? while_attrs : if_attrs;
  for (int a = 0; attrs[a]; a++) {
    const graph_attr_value *v = graph_node_attr(n, attrs[a]);
    if (!v || v->kind != GRAPH_ATTR_FUNC || !v->func.body)
      return arena_printf(st->arena, "attribute %s names no function of the graph library", attrs[a]);
    const char *why = function_blocker(st, attrs[a], v->func.body, depth);
    if (why) return why;
  }
  return NULL;
}

static void find_candidates(marker *mk) {
  jit_state *st = mk->st;
  const jit_options *o = st->opts;
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    const graph_attr_value *xc = graph_node_attr(n, KILN_ATTR_XLA_COMPILE);
    if (xc && xc->kind == GRAPH_ATTR_BOOL && !xc->b) jit_exclude(st, n, "_XlaCompile=false");
    switch (ns->kind) {
      case JIT_KIND_OTHER:
        jit_exclude(st, n, "%s runs in the executor (control flow, feeds, functional or stateful ops)", n->op);
        break;
      case JIT_KIND_HOST_ONLY:
        jit_exclude(st, n, "no HLO lowering: the op has only a host kernel");
        break;
      default:
        break;
    }
    if (ns->def) {
      const char *why = trait_reason(ns->def);
      if (why) jit_exclude(st, n, "%s", why);
    }
    if (ns->kind == JIT_KIND_FUNCTIONAL) {
      const char *why = functional_blocker(st, n, 0);
      if (why) jit_exclude(st, n, "%s %s: %s", graph_node_op_base(n), n->name, why);
    }
    /* Identity-like nodes pass TensorLists through too */
    jit_node_kind flows = ns->kind == JIT_KIND_IDENTITY ? JIT_KIND_TENSOR_LIST : ns->kind;
    for (int k = 0; k < ns->n_out; k++)
      if (!clusterable_dtype(flows, ns->out[k].dtype))
        jit_exclude(st, n, "output %d is %s", k, graph_dtype_name(ns->out[k].dtype));
    for (int k = 0; k < n->n_inputs && ns->res == JIT_RES_NONE; k++) {
      const jit_node_state *src = jit_node(st, n->inputs[k].node);
      int port = n->inputs[k].port;
      if (port >= 0 && port < src->n_out && !clusterable_dtype(flows, src->out[port].dtype))
        jit_exclude(st, n, "input %d is %s", k, graph_dtype_name(src->out[port].dtype));
    }
    if (o->jit_ops && o->jit_ops[0] && !listed(o->jit_ops, n) && ns->kind != JIT_KIND_CONST &&
        ns->kind != JIT_KIND_IDENTITY)
      jit_exclude(st, n, "not in --jit_ops");
    if (listed(o->jit_exclude_ops, n)) jit_exclude(st, n, "excluded by --jit_exclude_ops");
    if (!ns->device && !ns->reason) jit_exclude(st, n, "placed on the host");
  }
}

static bool holds_lists(jit_node_kind kind) {
  return kind == JIT_KIND_TENSOR_LIST || kind == JIT_KIND_FUNCTIONAL || kind == JIT_KIND_IDENTITY;
}

/* Whether the variant edge between candidate n and `other` keeps the list inside
 * whatever cluster n joins: `other` must be a candidate that holds lists, in n's
 * loop frame. */
static bool list_edge_ok(jit_state *st, const jit_node_state *ns, const graph_node *other) {
  const jit_node_state *os = jit_node(st, other);
  return !os->reason && holds_lists(os->kind) && os->frame == ns->frame;
}

/* Whether output `port` of n carries a TensorList: a declared variant, the list
 * output of a TensorList op or an Identity-like pass-through of one (imports that
 * leave dtypes unknown, as TF.js's, declare none). */
static bool list_output(jit_state *st, const graph_node *n, int port) {
  const jit_node_state *ns = jit_node(st, n);
  if (port >= 0 && port < ns->n_out && ns->out[port].dtype == GRAPH_DT_VARIANT) return true;
  const char *b = graph_node_op_base(n);
  if (ns->kind == JIT_KIND_IDENTITY && port >= 0 && port < n->n_inputs)
    /* ends: a cycle needs a NextIteration, which is not Identity-like */
    return list_output(st, n->inputs[port].node, n->inputs[port].port);
  return ns->kind == JIT_KIND_TENSOR_LIST && port == 0 && strcmp(b, "TensorListGetItem") != 0 &&
         strcmp(b, "TensorListStack") != 0;
}

/* Whether input k of n takes a TensorList: from a list output, or as a TensorList
 * op's list operand. */
static bool list_input(jit_state *st, const graph_node *n, int k) {
  const jit_node_state *ns = jit_node(st, n);
  const char *b = graph_node_op_base(n);
  if (ns->kind == JIT_KIND_TENSOR_LIST && k == 0 && strcmp(b, "TensorListReserve") != 0 &&
      strcmp(b, "TensorListFromTensor") != 0)
    return true;
  return list_output(st, n->inputs[k].node, n->inputs[k].port);
}

/* A compiled TensorList is a buffer, which cannot cross a cluster boundary: a node
 * taking or giving a variant stays out unless every node on the other side of each
 * of its variant edges could share its cluster, and a variant graph result keeps its
 * producer out. Repeated until nothing changes, as an exclusion spreads along a list's
 * edges (a TensorList built by a v1 loop's Enter/Exit stays op by op as a whole). */
static void confine_lists(marker *mk) {
  jit_state *st = mk->st;
  for (int r = 0; r < st->g->n_results; r++) {
    const graph_result *res = &st->g->results[r];
    if (list_output(st, res->node, res->port))
      jit_exclude(st, res->node, "output %d is a TensorList the graph returns", res->port);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int t = 0; t < st->n_topo; t++) {
      graph_node *n = st->topo[t];
      jit_node_state *ns = jit_node(st, n);
      if (ns->reason) continue;
      for (int k = 0; k < n->n_inputs && !ns->reason; k++) {
        const graph_edge *e = &n->inputs[k];
        if (!list_input(st, n, k)) continue;
        if (!list_edge_ok(st, ns, e->node))
          jit_exclude(st, n, "input %d is a TensorList from %s (%s), which cannot join its cluster", k, e->node->name,
                      e->node->op);
      }
      for (int port = 0; port < ns->n_out && !ns->reason; port++) {
        if (!list_output(st, n, port)) continue;
        const graph_use *uses;
        int nu = graph_consumers(n, port, &uses);
        for (int u = 0; u < nu && !ns->reason; u++)
          if (!list_edge_ok(st, ns, uses[u].node))
            jit_exclude(st, n, "output %d is a TensorList read by %s (%s), which cannot join its cluster", port,
                        uses[u].node->name, uses[u].node->op);
      }
      changed = changed || ns->reason;
    }
  }
}

/* -------------------------------------------------------------- merging ---- */

static void cluster_init(marker *mk) {
  jit_state *st = mk->st;
  mk->cl = calloc((size_t)st->id_limit + 1, sizeof *mk->cl);
  if (!mk->cl) abort();
  mk->cycles = jit_cycles_new();
  /* Detector nodes in topological order, so the initial build re-ranks nothing. */
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    cl_state *c = &mk->cl[n->id];
    c->parent = n->id;
    c->cyc = jit_cycles_add_node(mk->cycles);
    c->n_members = c->cap_members = 1;
    c->members = malloc(sizeof *c->members);
    if (!c->members) abort();
    c->members[0] = n->id;
    const graph_attr_value *xc = graph_node_attr(n, KILN_ATTR_XLA_COMPILE);
    const graph_attr_value *sc = graph_node_attr(n, KILN_ATTR_KILN_SCOPE);
    if (!sc) sc = graph_node_attr(n, KILN_ATTR_XLA_SCOPE);
    if (sc && sc->kind == GRAPH_ATTR_STRING) c->scope = sc->s.data;
    c->must_compile = (xc && xc->kind == GRAPH_ATTR_BOOL && xc->b) || graph_node_attr(n, KILN_ATTR_KILN_SCOPE);
  }
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    int to = mk->cl[n->id].cyc;
    for (int k = 0; k < n->n_inputs; k++)
      if (!graph_node_is_next_iteration(n->inputs[k].node))
        jit_cycles_insert_edge(mk->cycles, mk->cl[n->inputs[k].node->id].cyc, to);
    for (int k = 0; k < n->n_control; k++)
      if (!graph_node_is_next_iteration(n->control_inputs[k]))
        jit_cycles_insert_edge(mk->cycles, mk->cl[n->control_inputs[k]->id].cyc, to);
  }
}

static void refuse(marker *mk, int a, int b, const char *why) {
  if (!mk->st->opts->clustering_debug) return;
  log_warning("clustering: not merging %s into %s: %s", mk->st->nodes[b].node->name, mk->st->nodes[a].node->name, why);
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Tries to merge the cluster of node b (a consumer) into the cluster of node a. */
static bool try_merge(marker *mk, int a_node, int b_node) {
  jit_state *st = mk->st;
  int a = find(mk, a_node), b = find(mk, b_node);
  if (a == b) return false;
  jit_node_state *na = &st->nodes[a], *nb = &st->nodes[b];
  if (na->reason || nb->reason) return false;
  cl_state *ca = &mk->cl[a], *cb = &mk->cl[b];
  if (na->frame != nb->frame) return refuse(mk, a, b, "different loop frames"), false;
  if (na->device != nb->device) return refuse(mk, a, b, "different devices"), false;
  if (!deadness_has_same_liveness(mk->dead, na->node, nb->node))
    return refuse(mk, a, b, "different deadness predicates"), false;
  if (!same_str(ca->scope, cb->scope)) return refuse(mk, a, b, "different compile scopes"), false;
  if (ca->must_compile != cb->must_compile) return refuse(mk, a, b, "explicit and automatic clusters"), false;
  if (ca->n_members + cb->n_members > st->opts->max_cluster_size)
    return refuse(mk, a, b, "--max_cluster_size"), false;
  const char *why = NULL;
  if (jit_resource_unsafe(mk->order, st, ca->n_members, ca->members, cb->n_members, cb->members, &why))
    return refuse(mk, a, b, why), false;
  if (!jit_cycles_contract_edge(mk->cycles, ca->cyc, cb->cyc))
    return refuse(mk, a, b, "merging would create a cycle through a node outside both clusters"), false;
  /* b's members join a; a keeps the detector node (contract merged b's into it). */
  if (ca->n_members + cb->n_members > ca->cap_members) {
    ca->cap_members = (ca->n_members + cb->n_members) * 2;
    ca->members = realloc(ca->members, (size_t)ca->cap_members * sizeof *ca->members);
    if (!ca->members) abort();
  }
  memcpy(ca->members + ca->n_members, cb->members, (size_t)cb->n_members * sizeof *cb->members);
  ca->n_members += cb->n_members;
  free(cb->members);
  cb->members = NULL;
  cb->n_members = 0;
  cb->parent = a;
  mk->merges++;
  return true;
}

static bool is_shape_consumer(const jit_node_state *ns) {
  return ns->def && (ns->def->traits & OP_SHAPE_CONSUMER);
}

/* One phase: contract edges in post-order until a sweep merges nothing. */
static void contract(marker *mk, bool shape_consumers_only) {
  jit_state *st = mk->st;
  bool changed = true;
  while (changed) {
    changed = false;
    for (int t = st->n_topo - 1; t >= 0; t--) {
      graph_node *n = st->topo[t];
      for (int port = -1; port < n->n_outputs; port++) {
        const graph_use *uses;
        int k = graph_consumers(n, port < 0 ? GRAPH_CONTROL : port, &uses);
        for (int u = 0; u < k; u++) {
          const graph_node *m = uses[u].node;
          if (graph_node_is_next_iteration(n)) continue;
          if (shape_consumers_only && !is_shape_consumer(jit_node(st, m))) continue;
          if (try_merge(mk, n->id, m->id)) changed = true;
        }
      }
    }
  }
}

/* ------------------------------------------------------- cluster rules ---- */

static bool tiny(const jit_state *st, const cl_state *c) {
  for (int i = 0; i < c->n_members; i++) {
    const jit_node_state *ns = &st->nodes[c->members[i]];
    for (int k = 0; k < ns->n_out; k++) {
      int64_t e = graph_shape_elements(&ns->out[k].shape);
      if (e < 0 || e > JIT_TINY_ELEMENTS) return false;
    }
  }
  return true;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void finish_clusters(marker *mk) {
  jit_state *st = mk->st;
  int *topo_pos = malloc(((size_t)st->id_limit + 1) * sizeof *topo_pos);
  if (!topo_pos) abort();
  for (int t = 0; t < st->n_topo; t++) topo_pos[st->topo[t]->id] = t;
  st->clusters = calloc((size_t)st->n_topo + 1, sizeof *st->clusters);
  if (!st->clusters) abort();
  for (int t = 0; t < st->n_topo; t++) {
    int id = st->topo[t]->id;
    if (find(mk, id) != id) continue;
    cl_state *c = &mk->cl[id];
    jit_node_state *root = &st->nodes[id];
    if (root->reason) continue;
    int counted = 0;
    for (int i = 0; i < c->n_members; i++) {
      const jit_node_state *ns = &st->nodes[c->members[i]];
      counted += jit_node_weight(ns->node, ns->kind);
    }
    const char *why = NULL;
    if (!c->must_compile) {
      if (counted < st->opts->min_cluster_size)
        why = arena_printf(st->arena, "its cluster would count %d node%s, below --min_cluster_size=%d", counted,
                           counted == 1 ? "" : "s", st->opts->min_cluster_size);
      else if (tiny(st, c))
        why = arena_printf(st->arena, "its cluster only does scalar work (no output over %d element): cheaper "
                                      "op by op on the host",
                           JIT_TINY_ELEMENTS);
    }
    if (why) {
      for (int i = 0; i < c->n_members; i++) jit_exclude(st, st->nodes[c->members[i]].node, "%s", why);
      continue;
    }
    /* Members in topological order: encapsulation copies them in that order. */
    for (int i = 0; i < c->n_members; i++) c->members[i] = topo_pos[c->members[i]];
    qsort(c->members, (size_t)c->n_members, sizeof *c->members, cmp_int);
    for (int i = 0; i < c->n_members; i++) c->members[i] = st->topo[c->members[i]]->id;
    jit_cluster *jc = &st->clusters[st->n_clusters];
    jc->id = st->n_clusters++;
    jc->device = root->device;
    jc->scope = c->scope;
    jc->must_compile = c->must_compile;
    jc->frame = root->frame ? st->frame_names[root->frame] : NULL;
    jc->n_members = c->n_members;
    jc->members = c->members;
    c->members = NULL;
    for (int i = 0; i < jc->n_members; i++) st->nodes[jc->members[i]].cluster = jc->id;
  }
  free(topo_pos);
}

kiln_status jit_pass_mark_for_compilation(jit_state *st) {
  marker mk;
  memset(&mk, 0, sizeof mk);
  mk.st = st;
  assign_frames(st);
  kiln_status s = deadness_analyze(st->g, &mk.dead);
  if (s) {
    /* Malformed control flow: the executor will report it when it runs; nothing is
     * clustered meanwhile. */
    const char *msg = arena_strdup(st->arena, kiln_status_message(s));
    kiln_status_free(s);
    for (int t = 0; t < st->n_topo; t++) jit_exclude(st, st->topo[t], "deadness analysis failed: %s", msg);
    return NULL;
  }
  find_candidates(&mk);
  confine_lists(&mk);
  mk.order = jit_resource_order_new(st);
  cluster_init(&mk);
  contract(&mk, true);
  contract(&mk, false);
  finish_clusters(&mk);
  for (int i = 0; i < st->id_limit; i++) free(mk.cl[i].members);
  free(mk.cl);
  jit_cycles_free(mk.cycles);
  jit_resource_order_free(mk.order);
  deadness_free(mk.dead);
  return NULL;
}
