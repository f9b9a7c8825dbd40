/* Naming a model's inputs and outputs by hand (import.h: import_select_io), for the
 * files that do not say them: a frozen GraphDef has no signature, so the importer has to
 * guess its outputs, and a user who knows better (or wants an intermediate tensor)
 * names them, as TensorFlow's own tools take --input_arrays / --output_arrays. Names
 * follow TensorFlow: "node" is "node:0", "node:N" is output N; a name that is already a
 * graph result or graph input is taken as it is, so ONNX tensor names work too. Naming
 * an internal tensor as an input feeds it, as TF's feed does: a new graph input takes
 * over every consumer of that tensor, and whatever only computed it is pruned away. */
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "import/import.h"

/* "x" and "x:0" name the same tensor. */
static bool same_tensor(const char *have, const char *want) {
  if (!strcmp(have, want)) return true;
  size_t h = strlen(have), w = strlen(want);
  if (w == h + 2 && !strncmp(want, have, h) && !strcmp(want + h, ":0")) return true;
  if (h == w + 2 && !strncmp(have, want, w) && !strcmp(have + w, ":0")) return true;
  return false;
}

/* Splits "node:N" (N decimal) into the node and port; anything else is port 0 of the
 * whole name. The node name is allocated in a. */
static void split_tensor_name(arena *a, const char *s, const char **node, int *port) {
  const char *colon = strrchr(s, ':');
  *node = s;
  *port = 0;
  if (!colon || !colon[1]) return;
  long v = 0;
  for (const char *d = colon + 1; *d; d++) {
    if (*d < '0' || *d > '9') return;
    v = v * 10 + (*d - '0');
    if (v >= GRAPH_MAX_OUTPUTS) return;
  }
  *node = arena_strndup(a, s, (size_t)(colon - s));
  *port = (int)v;
}

/* The node and port a name stands for, or an error naming it (`what`: "input" or
 * "output"). */
static kiln_status find_tensor(arena *a, graph *g, const char *what, const char *name, graph_node **node,
                               int *port) {
  const char *node_name;
  split_tensor_name(a, name, &node_name, port);
  *node = graph_find_node(g, node_name);
  if (!*node) {
    /* A name with a ':' that is not a port ("a:b") may still be a whole node name. */
    *node = graph_find_node(g, name);
    *port = 0;
  }
  if (!*node)
    return status_error(KILN_NOT_FOUND, "%s '%s' names no tensor of the model (it has no node, input or output of "
                        "that name)",
                        what, name);
  if (*port >= (*node)->n_outputs)
    return ERR_INVALID("%s '%s': node '%s' has %d output%s", what, name, (*node)->name, (*node)->n_outputs,
                       (*node)->n_outputs == 1 ? "" : "s");
  return NULL;
}

static kiln_status check_unique(int n, const char *const *names, const char *what) {
  for (int i = 0; i < n; i++) {
    if (!names[i] || !*names[i]) return ERR_INVALID("%s %d has an empty name", what, i);
    for (int k = 0; k < i; k++)
      if (same_tensor(names[k], names[i])) return ERR_INVALID("%s '%s' is named twice", what, names[i]);
  }
  return NULL;
}

/* The dtype a fed tensor must have: what the importer recorded, else the node's type
 * attribute (TF writes "T" or "dtype"). */
static graph_dtype fed_dtype(const graph_node *n, int port) {
  graph_dtype dt = n->outputs[port].dtype;
  if (dt != GRAPH_DT_INVALID) return dt;
  if (n->n_outputs == 1 && (!graph_node_get_type(n, "T", &dt) || !graph_node_get_type(n, "dtype", &dt))) return dt;
  return GRAPH_DT_INVALID;
}

static kiln_status select_outputs(arena *a, graph *g, int n, const char *const *names) {
  graph_result *picked = arena_calloc(a, (size_t)n + 1, sizeof *picked);
  for (int i = 0; i < n; i++) {
    const graph_result *r = NULL;
    for (int k = 0; k < g->n_results && !r; k++)
      if (same_tensor(g->results[k].name, names[i])) r = &g->results[k];
    if (r) {
      picked[i] = *r;
      continue;
    }
    graph_node *node;
    int port;
    TRY(find_tensor(a, g, "output", names[i], &node, &port));
    picked[i] = (graph_result){names[i], node, port};
  }
  g->n_results = 0;
  graph_invalidate(g);
  for (int i = 0; i < n; i++) TRY(graph_add_result(g, picked[i].name, picked[i].node, picked[i].port));
  return NULL;
}

/* The while-loop frame n runs in (its frame_name), or NULL for the root: TF's
 * ControlFlowInfo over a topological order, an Enter opening the frame it names and an
 * Exit returning to the parent. A feed is a root-frame value, so a tensor inside a loop
 * cannot be fed (its consumers run once per iteration). */
static kiln_status loop_frame_of(arena *a, graph *g, const graph_node *target, const char **frame) {
  graph_node **order = NULL;
  int n = 0;
  TRY(graph_topo_order(g, &order, &n));
  /* By node index: the frame name and the index of the Enter's input frame's node. */
  const char **name = arena_calloc(a, (size_t)g->n_nodes + 1, sizeof *name);
  const graph_node **parent = arena_calloc(a, (size_t)g->n_nodes + 1, sizeof *parent);
  *frame = NULL;
  for (int t = 0; t < n; t++) {
    graph_node *v = order[t];
    const graph_node *from = NULL;
    for (int k = 0; k < v->n_inputs && !from; k++)
      if (!graph_node_is_next_iteration(v->inputs[k].node)) from = v->inputs[k].node;
    if (!from && v->n_control) from = v->control_inputs[0];
    /* name/parent of v: the frame it runs in, and a node of the enclosing frame. */
    const char *f = from ? name[from->index] : NULL;
    const graph_node *up = from ? parent[from->index] : NULL;
    if (graph_node_is(v, "Enter") || graph_node_is(v, "RefEnter")) {
      const graph_attr_value *fv = graph_node_attr(v, "frame_name");
      up = from;
      f = fv && fv->kind == GRAPH_ATTR_STRING ? fv->s.data : "?";
    } else if ((graph_node_is(v, "Exit") || graph_node_is(v, "RefExit")) && up) {
      f = name[up->index];
      up = parent[up->index];
    } else if (graph_node_is(v, "Exit") || graph_node_is(v, "RefExit")) {
      f = NULL;
    }
    name[v->index] = f;
    parent[v->index] = up;
    if (v == target) {
      *frame = f;
      break;
    }
  }
  free(order);
  return NULL;
}

static kiln_status select_inputs(arena *a, graph *g, int n, const char *const *names) {
  graph_node **order = arena_calloc(a, (size_t)g->n_inputs + (size_t)n + 1, sizeof *order);
  int w = 0;
  for (int i = 0; i < n; i++) {
    graph_node *in = NULL;
    for (int k = 0; k < g->n_inputs && !in; k++)
      if (same_tensor(g->inputs[k]->name, names[i])) in = g->inputs[k];
    if (!in) {
      graph_node *node;
      int port;
      TRY(find_tensor(a, g, "input", names[i], &node, &port));
      const char *frame = NULL;
      if (!node->is_input) TRY(loop_frame_of(a, g, node, &frame));
      if (frame)
        return ERR_INVALID("input '%s' is a tensor inside while loop frame '%s'; only tensors outside loops can "
                           "be fed",
                           names[i], frame);
      if (node->is_input) {
        in = node;
      } else {
        /* TF node names never hold a ':', so "node:N" cannot clash with one; the API
         * matches "node" to "node:0", so the user feeds it by either name. */
        const char *feed_name = graph_unique_name(g, arena_printf(a, "%s:%d", node->name, port));
        graph_shape shape = node->outputs[port].shape;
        TRY(graph_add_input(g, feed_name, fed_dtype(node, port), &shape, &in));
        graph_replace_uses(node, port, in, 0);
      }
    }
    for (int k = 0; k < w; k++)
      if (order[k] == in) return ERR_INVALID("input '%s' is named twice", names[i]);
    order[w++] = in;
  }
  /* The named inputs first, in the order given; the others keep theirs after them. */
  for (int k = 0; k < g->n_inputs; k++) {
    bool taken = false;
    for (int j = 0; j < w && !taken; j++) taken = order[j] == g->inputs[k];
    if (!taken) order[w++] = g->inputs[k];
  }
  memcpy(g->inputs, order, (size_t)g->n_inputs * sizeof *order);
  graph_invalidate(g);
  return NULL;
}

kiln_status import_select_io(graph *g, int n_inputs, const char *const *inputs, int n_outputs,
                             const char *const *outputs) {
  if (n_inputs < 0 || n_outputs < 0) return ERR_INVALID("negative input or output count");
  TRY(check_unique(n_inputs, inputs, "input"));
  TRY(check_unique(n_outputs, outputs, "output"));
  arena *a = arena_new();
  /* Outputs first: a result that names a tensor the inputs then cut is fed through. */
  kiln_status s = n_outputs ? select_outputs(a, g, n_outputs, outputs) : NULL;
  if (!s && n_inputs) s = select_inputs(a, g, n_inputs, inputs);
  arena_free(a);
  if (s) return s;
  graph_prune(g, NULL, 0);
  return graph_validate(g);
}
