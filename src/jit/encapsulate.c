/* Post-placement pass encapsulate-clusters: each cluster becomes a function graph and
 * one KILN_CLUSTER_OP call node (graph/cluster_op.h has the contract).
 *
 * For a cluster, the values its members read from outside become the function's
 * inputs, ordered [constants][args][resources]: a value some member needs as a
 * must-be-constant operand is a constant (also when other members read it as data:
 * the compile then keys on its value), a DT_RESOURCE handle is a resource, anything
 * else an arg; each distinct (node, port) appears once. The values read outside the
 * cluster — by other nodes or as graph results — become the function's results, in
 * member order. Members are copied into the function with their attributes and
 * devices, in topological order; control edges between members are kept inside, and
 * those crossing the boundary attach to the call node. Finally every outside use of a
 * member moves to the call node and the members are removed from the graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/cluster_op.h"
#include "jit/jit_internal.h"

typedef struct value_ref {
  graph_node *node;
  int port;
} value_ref;

typedef enum arg_kind { ARG_CONSTANT, ARG_DATA, ARG_RESOURCE } arg_kind;

typedef struct boundary {
  int n_in, cap_in;
  value_ref *in;
  arg_kind *in_kind;
  int n_out, cap_out;
  value_ref *out;
  int n_ctl_in, cap_ctl_in;
  graph_node **ctl_in;
  int n_ctl_out, cap_ctl_out;
  graph_node **ctl_out;
} boundary;

static bool in_cluster(const jit_state *st, const graph_node *n, int c) {
  if (n->id >= st->id_limit) return false;
  const jit_node_state *ns = &st->nodes[n->id];
  return !ns->reason && ns->cluster == c;
}

static void grow(void **p, int *cap, int need, size_t size) {
  if (need <= *cap) return;
  *cap = need * 2 + 4;
  *p = realloc(*p, (size_t)*cap * size);
  if (!*p) abort();
}

static graph_dtype value_dtype(const jit_state *st, const value_ref *v) {
  if (v->node->id < st->id_limit) {
    const jit_node_state *ns = &st->nodes[v->node->id];
    if (v->port < ns->n_out) return ns->out[v->port].dtype;
  }
  return v->port < v->node->n_outputs ? v->node->outputs[v->port].dtype : GRAPH_DT_INVALID;
}

static graph_shape value_shape(const jit_state *st, const value_ref *v) {
  if (v->node->id < st->id_limit) {
    const jit_node_state *ns = &st->nodes[v->node->id];
    if (v->port < ns->n_out) return ns->out[v->port].shape;
  }
  return v->port < v->node->n_outputs ? v->node->outputs[v->port].shape : graph_shape_unknown();
}

static void add_input(boundary *b, const jit_state *st, graph_node *src, int port, bool must_be_constant,
                      bool resource_operand) {
  arg_kind kind = must_be_constant ? ARG_CONSTANT : ARG_DATA;
  value_ref v = {src, port};
  if (resource_operand || value_dtype(st, &v) == GRAPH_DT_RESOURCE) kind = ARG_RESOURCE;
  for (int i = 0; i < b->n_in; i++)
    if (b->in[i].node == src && b->in[i].port == port) {
      if (kind == ARG_CONSTANT) b->in_kind[i] = ARG_CONSTANT; /* constant for everyone */
      return;
    }
  grow((void **)&b->in, &b->cap_in, b->n_in + 1, sizeof *b->in);
  int cap = b->cap_in;
  b->in_kind = realloc(b->in_kind, (size_t)cap * sizeof *b->in_kind);
  if (!b->in_kind) abort();
  b->in[b->n_in] = v;
  b->in_kind[b->n_in++] = kind;
}

static void add_ctl(graph_node ***list, int *n, int *cap, graph_node *x) {
  for (int i = 0; i < *n; i++)
    if ((*list)[i] == x) return;
  grow((void **)list, cap, *n + 1, sizeof **list);
  (*list)[(*n)++] = x;
}

static bool is_graph_result(const graph *g, const graph_node *n, int port) {
  for (int r = 0; r < g->n_results; r++)
    if (g->results[r].node == n && g->results[r].port == port) return true;
  return false;
}

static void find_boundary(jit_state *st, const jit_cluster *cl, boundary *b) {
  for (int i = 0; i < cl->n_members; i++) {
    graph_node *m = st->nodes[cl->members[i]].node;
    const jit_node_state *ms = &st->nodes[m->id];
    for (int k = 0; k < m->n_inputs; k++) {
      graph_node *src = m->inputs[k].node;
      if (in_cluster(st, src, cl->id)) continue;
      add_input(b, st, src, m->inputs[k].port, jit_input_must_be_constant(ms, k), ms->res != JIT_RES_NONE && k == 0);
    }
    for (int k = 0; k < m->n_control; k++)
      if (!in_cluster(st, m->control_inputs[k], cl->id)) add_ctl(&b->ctl_in, &b->n_ctl_in, &b->cap_ctl_in, m->control_inputs[k]);
    for (int port = 0; port < m->n_outputs; port++) {
      const graph_use *uses;
      int nu = graph_consumers(m, port, &uses);
      bool outside = is_graph_result(st->g, m, port);
      for (int u = 0; u < nu && !outside; u++) outside = !in_cluster(st, uses[u].node, cl->id);
      if (!outside) continue;
      grow((void **)&b->out, &b->cap_out, b->n_out + 1, sizeof *b->out);
      b->out[b->n_out++] = (value_ref){m, port};
    }
    const graph_use *cu;
    int nc = graph_consumers(m, GRAPH_CONTROL, &cu);
    for (int u = 0; u < nc; u++)
      if (!in_cluster(st, cu[u].node, cl->id)) add_ctl(&b->ctl_out, &b->n_ctl_out, &b->cap_ctl_out, cu[u].node);
  }
  /* [constants][args][resources], stable within each kind. */
  value_ref *sorted = malloc(((size_t)b->n_in + 1) * sizeof *sorted);
  arg_kind *kinds = malloc(((size_t)b->n_in + 1) * sizeof *kinds);
  if (!sorted || !kinds) abort();
  int n = 0;
  for (int kind = ARG_CONSTANT; kind <= ARG_RESOURCE; kind++)
    for (int i = 0; i < b->n_in; i++)
      if ((int)b->in_kind[i] == kind) {
        sorted[n] = b->in[i];
        kinds[n++] = b->in_kind[i];
      }
  if (b->n_in) memcpy(b->in, sorted, (size_t)n * sizeof *sorted);
  if (b->n_in) memcpy(b->in_kind, kinds, (size_t)n * sizeof *kinds);
  free(sorted);
  free(kinds);
}

static void boundary_free(boundary *b) {
  free(b->in);
  free(b->in_kind);
  free(b->out);
  free(b->ctl_in);
  free(b->ctl_out);
}

static const char *function_name(graph *g, int id) {
  char buf[64];
  for (int k = 0;; k++) {
    if (k == 0)
      snprintf(buf, sizeof buf, "cluster_%d", id);
    else
      snprintf(buf, sizeof buf, "cluster_%d_%d", id, k);
    if (!graph_find_function(g, buf) && !graph_find_node(g, buf)) return arena_strdup(g->arena, buf);
  }
}

static kiln_status copy_node(graph *f, const graph_node *m, graph_node **out) {
  graph_node *c;
  TRY(graph_add_node(f, m->name, m->op, &c));
  for (int a = 0; a < m->n_attrs; a++) graph_node_set_attr(c, m->attrs[a].name, &m->attrs[a].value);
  if (m->requested_device) graph_node_set_requested_device(c, m->requested_device);
  if (m->assigned_device) graph_node_set_assigned_device(c, m->assigned_device);
  TRY(graph_node_set_num_outputs(c, m->n_outputs));
  for (int k = 0; k < m->n_outputs; k++) graph_node_set_output(c, k, m->outputs[k].dtype, &m->outputs[k].shape);
  *out = c;
  return NULL;
}

static kiln_status encapsulate_one(jit_state *st, jit_cluster *cl) {
  graph *g = st->g;
  boundary b;
  memset(&b, 0, sizeof b);
  find_boundary(st, cl, &b);
  const char *name = function_name(g, cl->id);
  cl->name = name;
  graph *f;
  kiln_status s = graph_add_function(g, name, &f);
  /* Copies of the members, by node id (clusters reach thousands of members). */
  graph_node **copy = calloc((size_t)st->id_limit + 1, sizeof *copy);
  graph_node **arg_nodes = calloc((size_t)b.n_in + 1, sizeof *arg_nodes);
  if (!copy || !arg_nodes) abort();
  for (int i = 0; i < b.n_in && !s; i++) {
    char an[32];
    snprintf(an, sizeof an, "arg_%d", i);
    graph_shape shp = value_shape(st, &b.in[i]);
    s = graph_add_input(f, graph_unique_name(f, an), value_dtype(st, &b.in[i]), &shp, &arg_nodes[i]);
  }
  for (int i = 0; i < cl->n_members && !s; i++)
    s = copy_node(f, st->nodes[cl->members[i]].node, &copy[cl->members[i]]);
  for (int i = 0; i < cl->n_members && !s; i++) {
    graph_node *m = st->nodes[cl->members[i]].node, *mc = copy[m->id];
    for (int k = 0; k < m->n_inputs && !s; k++) {
      graph_node *src = m->inputs[k].node;
      int port = m->inputs[k].port;
      if (in_cluster(st, src, cl->id)) {
        s = graph_add_edge(copy[src->id], port, mc);
      } else {
        int j = 0;
        while (b.in[j].node != src || b.in[j].port != port) j++;
        s = graph_add_edge(arg_nodes[j], 0, mc);
      }
    }
    for (int k = 0; k < m->n_control && !s; k++) {
      graph_node *src = m->control_inputs[k];
      if (in_cluster(st, src, cl->id)) s = graph_add_control_edge(copy[src->id], mc);
    }
  }
  for (int o = 0; o < b.n_out && !s; o++) {
    char rn[32];
    snprintf(rn, sizeof rn, "out_%d", o);
    s = graph_add_result(f, rn, copy[b.out[o].node->id], b.out[o].port);
  }
  /* The call node. */
  graph_node *call = NULL;
  if (!s) s = graph_add_node(g, name, KILN_CLUSTER_OP, &call);
  if (!s) {
    int n_const = 0, n_res = 0;
    for (int i = 0; i < b.n_in; i++) {
      n_const += b.in_kind[i] == ARG_CONSTANT;
      n_res += b.in_kind[i] == ARG_RESOURCE;
    }
    graph_node_set_attr_func(call, KILN_CLUSTER_ATTR_FUNCTION, f);
    graph_node_set_attr_int(call, KILN_CLUSTER_ATTR_N_CONSTANTS, n_const);
    graph_node_set_attr_int(call, KILN_CLUSTER_ATTR_N_RESOURCES, n_res);
    graph_node_set_attr_bool(call, KILN_CLUSTER_ATTR_MUST_COMPILE, cl->must_compile);
    graph_node_set_assigned_device(call, cl->device ? cl->device->name : "host");
    s = graph_node_set_num_outputs(call, b.n_out);
  }
  for (int i = 0; i < b.n_in && !s; i++) s = graph_add_edge(b.in[i].node, b.in[i].port, call);
  for (int o = 0; o < b.n_out && !s; o++) {
    value_ref *v = &b.out[o];
    graph_shape shp = value_shape(st, v);
    graph_node_set_output(call, o, value_dtype(st, v), &shp);
  }
  for (int i = 0; i < b.n_ctl_in && !s; i++) s = graph_add_control_edge(b.ctl_in[i], call);
  for (int i = 0; i < b.n_ctl_out && !s; i++) s = graph_add_control_edge(call, b.ctl_out[i]);
  for (int o = 0; o < b.n_out && !s; o++) graph_replace_uses(b.out[o].node, b.out[o].port, call, o);
  /* Members go, consumers first. */
  for (int i = cl->n_members - 1; i >= 0 && !s; i--) s = graph_remove_node(st->nodes[cl->members[i]].node);
  for (int i = 0; i < b.n_in; i++) {
    cl->n_constants += b.in_kind[i] == ARG_CONSTANT;
    cl->n_args += b.in_kind[i] == ARG_DATA;
    cl->n_resources += b.in_kind[i] == ARG_RESOURCE;
  }
  cl->n_outputs = b.n_out;
  if (!s && st->opts->log_placement)
    printf("placement: %s (%s, %d nodes) -> %s\n", name, KILN_CLUSTER_OP, cl->n_members,
           cl->device ? cl->device->name : "host");
  free(copy);
  free(arg_nodes);
  boundary_free(&b);
  return s ? status_wrap(s, "encapsulating %s", name) : NULL;
}

kiln_status jit_pass_encapsulate(jit_state *st) {
  for (int c = 0; c < st->n_clusters; c++) TRY(encapsulate_one(st, &st->clusters[c]));
  return NULL;
}
