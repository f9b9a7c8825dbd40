/* Post-placement pass partial-declustering: moves nodes back out of clusters where
 * being inside costs more than it saves (TensorFlow's partially_decluster_pass).
 *
 *   1. Host-consumed outputs. A clustered node whose value a host node needs on the
 *      host — as a must-be-constant operand, or as the input of a host-kernel op — and
 *      whose own inputs all come from outside its cluster gets a copy outside the
 *      cluster that serves those consumers, so they need not wait for the whole
 *      cluster (the cluster keeps the original for its own members).
 *   2. Must-be-constant chains. A member's must-be-constant operand (a shape, axes)
 *      computed inside the cluster from runtime values cannot be known when the
 *      cluster compiles: the producer and every member upstream of it leave the
 *      cluster, so the value arrives as a constant argument and the compile cache
 *      keys on it. Values derived from constants and shapes alone stay (the cluster
 *      compiler evaluates them), and so does an operand the lowering also takes as a
 *      runtime value (OP_RUNTIME_OK_INPUT1).
 *   3. Root shape consumers. A Shape/Size/Rank whose consumers are all outside the
 *      cluster and whose input is already available outside (an argument or an
 *      output of the cluster) leaves: it only reads metadata.
 * Clusters that drop below the minimum size afterwards dissolve. */
#include <stdlib.h>
#include <string.h>

#include "jit/jit_internal.h"

static int cluster_of(const jit_state *st, const graph_node *n) {
  if (n->id >= st->id_limit) return -1;
  const jit_node_state *ns = &st->nodes[n->id];
  return ns->reason ? -1 : ns->cluster;
}

/* Whether output `port` of n is computable when cluster c compiles: from members
 * that are constants or read only shapes (arguments are shape-specialized). A value
 * from outside the cluster is a runtime argument here, whatever static-shapes knows
 * about it: only a must-be-constant operand fed directly from outside becomes a
 * constant argument (encapsulate.c). */
static bool compile_time_value(jit_state *st, const graph_node *n, int port, int c, int depth) {
  const jit_node_state *ns = jit_node(st, n);
  (void)port;
  if (cluster_of(st, n) != c || depth > 64) return false;
  if (ns->kind == JIT_KIND_CONST) return true;
  if (ns->def && (ns->def->traits & OP_SHAPE_CONSUMER)) return true;
  if (ns->kind != JIT_KIND_LOWERED && ns->kind != JIT_KIND_IDENTITY) return false;
  for (int k = 0; k < n->n_inputs; k++)
    if (!compile_time_value(st, n->inputs[k].node, n->inputs[k].port, c, depth + 1)) return false;
  return true;
}

/* Rule 2: moves `from` and every member of its cluster upstream of it out. */
static void decluster_upstream(jit_state *st, graph_node *from, int c, const char *why) {
  size_t cap = 16, sp = 0;
  graph_node **stack = malloc(cap * sizeof *stack);
  if (!stack) abort();
  stack[sp++] = from;
  while (sp) {
    graph_node *n = stack[--sp];
    if (cluster_of(st, n) != c) continue; /* outside, or already moved */
    jit_node_state *ns = jit_node(st, n);
    ns->reason = why;
    ns->declustered = true;
    if (sp + (size_t)n->n_inputs + (size_t)n->n_control >= cap) {
      cap = (sp + (size_t)n->n_inputs + (size_t)n->n_control) * 2;
      stack = realloc(stack, cap * sizeof *stack);
      if (!stack) abort();
    }
    for (int k = 0; k < n->n_inputs; k++) stack[sp++] = n->inputs[k].node;
    for (int k = 0; k < n->n_control; k++) stack[sp++] = n->control_inputs[k];
  }
  free(stack);
}

static void must_be_constant_chains(jit_state *st) {
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    int c = cluster_of(st, n);
    if (c < 0) continue;
    for (int k = 0; k < n->n_inputs; k++) {
      /* An input the lowering also takes at run time (Slice's begin) needs no split. */
      if (!jit_input_must_be_constant(ns, k) || op_input_runtime_ok(ns->def, k)) continue;
      graph_node *p = n->inputs[k].node;
      if (cluster_of(st, p) != c || compile_time_value(st, p, n->inputs[k].port, c, 0)) continue;
      const char *why = arena_printf(st->arena,
                                     "partially declustered: computes must-be-constant input %d of %s from runtime "
                                     "values",
                                     k, n->name);
      decluster_upstream(st, p, c, why);
    }
  }
}

static bool host_needs_value(jit_state *st, const graph_use *u) {
  const jit_node_state *cs = jit_node(st, u->node);
  if (u->index < 0) return false;
  if (cs->kind == JIT_KIND_HOST_ONLY) return true;
  return jit_input_must_be_constant(cs, u->index);
}

/* Rule 1: a copy outside the cluster for host consumers. */
static kiln_status clone_for_host(jit_state *st) {
  int limit = st->id_limit;
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    if (n->id >= limit) continue;
    int c = cluster_of(st, n);
    jit_node_state *ns = jit_node(st, n);
    if (c < 0 || ns->kind != JIT_KIND_LOWERED || n->n_outputs != 1 || n->n_control) continue;
    bool inputs_outside = true;
    for (int k = 0; k < n->n_inputs && inputs_outside; k++) inputs_outside = cluster_of(st, n->inputs[k].node) != c;
    if (!inputs_outside) continue;
    const graph_use *uses;
    int nu = graph_consumers(n, 0, &uses);
    bool wanted = false;
    for (int u = 0; u < nu && !wanted; u++)
      wanted = cluster_of(st, uses[u].node) != c && host_needs_value(st, &uses[u]);
    if (!wanted) continue;
    graph_node *copy;
    TRY(graph_add_node(st->g, graph_unique_name(st->g, n->name), n->op, &copy));
    for (int a = 0; a < n->n_attrs; a++) graph_node_set_attr(copy, n->attrs[a].name, &n->attrs[a].value);
    for (int k = 0; k < n->n_inputs; k++) TRY(graph_add_edge(n->inputs[k].node, n->inputs[k].port, copy));
    graph_node_set_output(copy, 0, n->outputs[0].dtype, &n->outputs[0].shape);
    graph_node_set_assigned_device(copy, "host");
    /* Rewire only the host consumers that need the value; uses is invalidated by the
     * mutations above, so collect first. */
    nu = graph_consumers(n, 0, &uses);
    graph_use *moving = malloc(((size_t)nu + 1) * sizeof *moving);
    if (!moving) abort();
    int nm = 0;
    for (int u = 0; u < nu; u++)
      if (uses[u].node != copy && cluster_of(st, uses[u].node) != c && host_needs_value(st, &uses[u]))
        moving[nm++] = uses[u];
    kiln_status s = NULL;
    for (int u = 0; u < nm && !s; u++) s = graph_set_input(moving[u].node, moving[u].index, copy, 0);
    free(moving);
    TRY(s);
    ns->clone_outside = true;
  }
  return NULL;
}

/* Rule 3. */
static void root_shape_consumers(jit_state *st) {
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    int c = cluster_of(st, n);
    if (c < 0 || !ns->def || !(ns->def->traits & OP_SHAPE_CONSUMER) || n->n_inputs < 1) continue;
    bool all_outside = true;
    for (int port = 0; port < n->n_outputs && all_outside; port++) {
      const graph_use *uses;
      int nu = graph_consumers(n, port, &uses);
      for (int u = 0; u < nu && all_outside; u++) all_outside = cluster_of(st, uses[u].node) != c;
    }
    const graph_use *cu;
    if (graph_consumers(n, GRAPH_CONTROL, &cu) > 0) all_outside = false;
    if (!all_outside) continue;
    graph_node *src = n->inputs[0].node;
    bool available = cluster_of(st, src) != c;
    if (!available) {
      const graph_use *uses;
      int nu = graph_consumers(src, n->inputs[0].port, &uses);
      for (int u = 0; u < nu && !available; u++) available = uses[u].node != n && cluster_of(st, uses[u].node) != c;
    }
    if (!available) continue;
    ns->reason = "partially declustered: a shape consumer whose result only leaves the cluster";
    ns->declustered = true;
  }
}

/* Clusters that fell below the minimum size dissolve; members are renumbered. */
static void recount(jit_state *st) {
  int kept = 0;
  for (int c = 0; c < st->n_clusters; c++) {
    jit_cluster *cl = &st->clusters[c];
    int n = 0, counted = 0;
    for (int i = 0; i < cl->n_members; i++) {
      jit_node_state *ns = &st->nodes[cl->members[i]];
      if (ns->reason) continue;
      cl->members[n++] = cl->members[i];
      counted += jit_node_weight(ns->node, ns->kind);
    }
    cl->n_members = n;
    if (n == 0 || (!cl->must_compile && counted < st->opts->min_cluster_size)) {
      for (int i = 0; i < n; i++)
        jit_exclude(st, st->nodes[cl->members[i]].node,
                    "its cluster counts %d node%s after partial declustering, below --min_cluster_size=%d", counted,
                    counted == 1 ? "" : "s", st->opts->min_cluster_size);
      free(cl->members);
      continue;
    }
    st->clusters[kept] = *cl;
    st->clusters[kept].id = kept;
    for (int i = 0; i < n; i++) st->nodes[cl->members[i]].cluster = kept;
    kept++;
  }
  st->n_clusters = kept;
}

kiln_status jit_pass_partial_declustering(jit_state *st) {
  TRY(clone_for_host(st));
  must_be_constant_chains(st);
  root_shape_consumers(st);
  recount(st);
  return NULL;
}
