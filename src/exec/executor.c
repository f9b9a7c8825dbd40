/* Plans and the scheduler: TensorFlow's executor semantics over kiln graphs, one node
 * at a time.
 *
 * A plan is built once per graph (the root, and each function body on its first call):
 * the graph is pruned to the ancestors of its results (and, in a function body, of its
 * variable assignments), every node gets a kind (control
 * flow, feed, executor-native op or op-library op), a static loop frame (TF's
 * ControlFlowInfo: Enter opens the frame named by frame_name, Exit returns to the
 * parent) and, inside its frame, an index for its pending count and a base for its
 * input slots.
 *
 * A run follows TF's executor (executor.cc / propagator_state.cc): every (frame
 * instance, iteration) owns pending counts, dead counts and input slots; a node whose
 * pending count reaches zero is queued, marked dead if any input was dead; Merge is
 * ready on its first live data input or when every data input is dead; Enter delivers
 * into a child frame (is_constant Enters as loop invariants visible in every
 * iteration), Exit into the parent, NextIteration into the next iteration (started
 * lazily; one iteration at a time, i.e. parallel_iterations = 1); dead Exits of the
 * last iteration propagate deadness when the frame completes. Iterations are released
 * as they finish, so long loops keep only one iteration's state alive. The queue is
 * FIFO, which makes runs deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/log.h"
#include "exec/exec_internal.h"

/* Deepest nesting of function calls (If/Loop bodies, TF functions) before a run is
 * refused: recursion in a model must not overflow the C stack. */
#define EXEC_MAX_CALL_DEPTH 64

typedef enum exec_kind {
  EK_OP,
  EK_NATIVE,
  EK_INPUT,
  EK_PLACEHOLDER,
  EK_PLACEHOLDER_DEFAULT,
  EK_SWITCH,
  EK_MERGE,
  EK_ENTER,
  EK_EXIT,
  EK_NEXT_ITERATION,
  EK_LOOP_COND,
  EK_CONTROL_TRIGGER
} exec_kind;

typedef struct exec_edge {
  int dst;   /* plan index */
  int input; /* data input index of dst, or -1 for a control edge */
  int port;  /* output port of the source (0 for control edges) */
} exec_edge;

typedef struct exec_pnode {
  graph_node *node;
  exec_kind kind;
  const op_def *def;
  const exec_native *native;
  int static_key;
  int frame;       /* static frame the node runs in */
  int local;       /* pending-count index inside the frame */
  int slot_base;   /* first input slot inside the frame */
  int n_inputs, n_control, n_outputs;
  int n_edges;
  exec_edge *edges;
  int child_frame; /* Enter: the frame it opens */
  bool constant_enter;
  int feed;        /* feeds: index into plan->feeds, else -1 */
  int n_results;
  int *results;    /* graph results that read this node */
  bool *port_used; /* n_outputs: someone reads this output */
} exec_pnode;

typedef struct exec_frame_info {
  const char *name;
  int parent;
  int n_nodes, n_slots;
  int *pending0; /* initial pending count per local index */
  int n_enters;  /* Enter nodes delivering into this frame */
} exec_frame_info;

struct exec_plan {
  arena *arena;
  graph *g;
  int n;
  exec_pnode *nodes; /* topological order of the pruned graph */
  int n_frames, cap_frames;
  exec_frame_info *frames;
  int n_roots;
  int *roots;
  int n_feeds;
  int *feeds;        /* plan indices of feed nodes: graph inputs first, then Placeholders */
  int *result_node;  /* plan index per graph result */
};

/* ================================================================== plans ====== */

static bool is_tf_namespace(const graph_node *n) {
  const char *dot = strrchr(n->op, '.');
  if (!dot) return true;
  return (size_t)(dot - n->op) == 2 && strncmp(n->op, "tf", 2) == 0;
}

static bool base_is(const char *base, const char *a, const char *b) {
  return strcmp(base, a) == 0 || (b && strcmp(base, b) == 0);
}

/* Finds how to run n; false when nothing can (unknown op, or an op without lowering
 * and host kernel). */
static bool classify(exec_cache *cache, exec_pnode *pn) {
  const graph_node *n = pn->node;
  pn->feed = -1;
  pn->static_key = -1;
  if (n->is_input || strcmp(n->op, GRAPH_OP_INPUT) == 0) {
    pn->kind = EK_INPUT;
    return true;
  }
  kiln_status version = op_check_onnx_version(n); /* an ONNX op version kiln lacks */
  if (version) {
    kiln_status_free(version);
    return false;
  }
  if (is_tf_namespace(n)) {
    const char *b = graph_node_op_base(n);
    static const struct {
      const char *a, *b;
      exec_kind k;
    } cf[] = {
        {"Switch", "RefSwitch", EK_SWITCH},
        {"Merge", "RefMerge", EK_MERGE},
        {"Enter", "RefEnter", EK_ENTER},
        {"Exit", "RefExit", EK_EXIT},
        {"NextIteration", "RefNextIteration", EK_NEXT_ITERATION},
        {"LoopCond", NULL, EK_LOOP_COND},
        {"ControlTrigger", NULL, EK_CONTROL_TRIGGER},
        {"Placeholder", "PlaceholderV2", EK_PLACEHOLDER},
        {"PlaceholderWithDefault", NULL, EK_PLACEHOLDER_DEFAULT},
    };
    for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++)
      if (base_is(b, cf[i].a, cf[i].b)) {
        pn->kind = cf[i].k;
        return true;
      }
  }
  pn->native = exec_native_find(n->op);
  if (!pn->native && !strchr(n->op, '.')) {
    /* A graph without a framework: its ops are TF's by convention. */
    char buf[256];
    snprintf(buf, sizeof buf, "tf.%s", n->op);
    pn->native = exec_native_find(buf);
  }
  if (pn->native) {
    pn->kind = EK_NATIVE;
    return true;
  }
  pn->def = op_find(n->op);
  if (pn->def && (pn->def->lower || pn->def->host)) {
    pn->kind = EK_OP;
    pn->static_key = exec_cache_static_key(cache, n);
    return true;
  }
  return false;
}

static int find_or_add_frame(exec_plan *p, const char *name, int parent, int *out) {
  for (int i = 1; i < p->n_frames; i++)
    if (strcmp(p->frames[i].name, name) == 0) {
      if (p->frames[i].parent != parent) return -1;
      *out = i;
      return 0;
    }
  if (p->n_frames == p->cap_frames) {
    int cap = p->cap_frames * 2;
    exec_frame_info *f = arena_calloc(p->arena, (size_t)cap, sizeof *f);
    memcpy(f, p->frames, (size_t)p->n_frames * sizeof *f);
    p->frames = f;
    p->cap_frames = cap;
  }
  exec_frame_info *f = &p->frames[p->n_frames];
  memset(f, 0, sizeof *f);
  f->name = name;
  f->parent = parent;
  *out = p->n_frames++;
  return 0;
}

static const char *frame_label(const exec_plan *p, int f) {
  return f == 0 ? "the root frame" : p->frames[f].name;
}

/* The frame values leaving node `src` live in. */
static kiln_status output_frame(const exec_plan *p, const exec_pnode *src, int *out) {
  if (src->kind == EK_ENTER) {
    *out = src->child_frame;
  } else if (src->kind == EK_EXIT) {
    if (src->frame == 0)
      return ERR_INVALID("node %s (%s) is an Exit outside any loop frame", src->node->name, src->node->op);
    *out = p->frames[src->frame].parent;
  } else {
    *out = src->frame;
  }
  return NULL;
}

static void plan_free(exec_plan *p) {
  if (p) arena_free(p->arena);
}

static void list_unsupported(strbuf *b, const exec_pnode *pn, int count) {
  kiln_status version = op_check_onnx_version(pn->node);
  if (version) { /* its message names the node, the op version and what kiln has */
    strbuf_printf(b, "%s%s", count ? ", " : "", kiln_status_message(version));
    kiln_status_free(version);
    return;
  }
  const op_def *def = op_find(pn->node->op);
  strbuf_printf(b, "%snode %s (%s%s)", count ? ", " : "", pn->node->name, pn->node->op,
                def ? ": registered without lowering or host kernel" : "");
}

/* Whether n assigns a resource variable. A function body runs such nodes even when no
 * result depends on them, as TF runs a function's stateful ops: an encapsulated
 * cluster's writes are often ordered only by control edges outside it, and its
 * op-by-op fallback must update the variables as its compiled module does. */
static bool assigns_variable(const graph_node *n) {
  const exec_native *nat = exec_native_find(n->op);
  if (!nat && !strchr(n->op, '.')) {
    char buf[256];
    snprintf(buf, sizeof buf, "tf.%s", n->op);
    nat = exec_native_find(buf);
  }
  return nat && (nat->fn == exec_var_assign || nat->fn == exec_var_assign_add || nat->fn == exec_var_assign_sub);
}

static kiln_status plan_build(executor *e, graph *g, exec_plan **out) {
  *out = NULL;
  TRY(status_wrap(graph_validate(g), "invalid graph"));
  graph_node **topo = NULL;
  int n_topo = 0;
  TRY(graph_topo_order(g, &topo, &n_topo));

  exec_plan *p = calloc(1, sizeof *p);
  if (!p) {
    free(topo);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->arena = arena_new();
  p->g = g;
  kiln_status s = NULL;

  /* Needed nodes: ancestors of the results through data, control and back edges. */
  int n_all = g->n_nodes;
  int *plan_of = arena_calloc(p->arena, (size_t)n_all + 1, sizeof *plan_of);
  bool *needed = arena_calloc(p->arena, (size_t)n_all + 1, sizeof *needed);
  graph_node **stack = arena_calloc(p->arena, (size_t)n_all + 1, sizeof *stack);
  int sp = 0;
  for (int r = 0; r < g->n_results; r++) {
    graph_node *n = g->results[r].node;
    if (!needed[n->index]) {
      needed[n->index] = true;
      stack[sp++] = n;
    }
  }
  if (g != e->g)
    for (int i = 0; i < n_all; i++)
      if (!needed[i] && assigns_variable(g->nodes[i])) {
        needed[i] = true;
        stack[sp++] = g->nodes[i];
      }
  while (sp) {
    graph_node *n = stack[--sp];
    for (int i = 0; i < n->n_inputs + n->n_control; i++) {
      graph_node *src = i < n->n_inputs ? n->inputs[i].node : n->control_inputs[i - n->n_inputs];
      if (!needed[src->index]) {
        needed[src->index] = true;
        stack[sp++] = src;
      }
    }
  }
  for (int i = 0; i < n_all; i++) plan_of[i] = -1;
  int n = 0;
  for (int i = 0; i < n_topo; i++)
    if (needed[topo[i]->index]) n++;
  p->n = n;
  p->nodes = arena_calloc(p->arena, (size_t)n + 1, sizeof *p->nodes);
  n = 0;
  for (int i = 0; i < n_topo; i++)
    if (needed[topo[i]->index]) {
      plan_of[topo[i]->index] = n;
      p->nodes[n++].node = topo[i];
    }
  free(topo);

  /* Kinds; every node the results need must be runnable. */
  strbuf bad;
  strbuf_init(&bad);
  int n_bad = 0;
  for (int i = 0; i < p->n; i++) {
    exec_pnode *pn = &p->nodes[i];
    pn->n_inputs = pn->node->n_inputs;
    pn->n_control = pn->node->n_control;
    pn->n_outputs = pn->node->n_outputs;
    if (!classify(e->cache, pn)) {
      if (n_bad < 20) list_unsupported(&bad, pn, n_bad);
      n_bad++;
    }
  }
  if (n_bad) {
    if (n_bad > 20) strbuf_printf(&bad, ", and %d more", n_bad - 20);
    s = status_error(KILN_UNIMPLEMENTED,
                     "%d node%s use%s ops kiln cannot run: %s (`kiln ops` lists the ops kiln knows)", n_bad,
                     n_bad == 1 ? "" : "s", n_bad == 1 ? "s" : "", strbuf_cstr(&bad));
    strbuf_free(&bad);
    goto fail;
  }
  strbuf_free(&bad);

  /* Frames (TF's ControlFlowInfo), in topological order. */
  p->cap_frames = 4;
  p->frames = arena_calloc(p->arena, (size_t)p->cap_frames, sizeof *p->frames);
  p->n_frames = 1;
  p->frames[0].name = "";
  p->frames[0].parent = -1;
  for (int i = 0; i < p->n && !s; i++) {
    exec_pnode *pn = &p->nodes[i];
    const graph_node *nd = pn->node;
    int f = -1;
    const graph_node *first = NULL;
    for (int k = 0; k < nd->n_inputs + nd->n_control && !s; k++) {
      const graph_node *src = k < nd->n_inputs ? nd->inputs[k].node : nd->control_inputs[k - nd->n_inputs];
      if (graph_node_is_next_iteration(src)) continue; /* back-edge */
      int sf = 0;
      s = output_frame(p, &p->nodes[plan_of[src->index]], &sf);
      if (s) break;
      if (f < 0) {
        f = sf;
        first = src;
      } else if (f != sf) {
        s = ERR_INVALID("node %s (%s) has inputs from different loop frames: %s from %s, %s from %s", nd->name,
                        nd->op, first->name, frame_label(p, f), src->name, frame_label(p, sf));
      }
    }
    if (s) break;
    pn->frame = f < 0 ? 0 : f;
    if (pn->kind == EK_ENTER) {
      const graph_bytes *name = NULL;
      s = graph_node_get_string(nd, "frame_name", &name);
      if (s) break;
      if (find_or_add_frame(p, arena_strdup(p->arena, name->data), pn->frame, &pn->child_frame) < 0) {
        s = ERR_INVALID("node %s (%s): loop frame '%s' is entered from two different frames", nd->name, nd->op,
                        name->data);
        break;
      }
      pn->constant_enter = graph_node_attr_bool_or(nd, "is_constant", false);
      p->frames[pn->child_frame].n_enters++;
    }
  }
  if (s) goto fail;

  /* Out-edges, grouped by source, in destination order. */
  int *counts = arena_calloc(p->arena, (size_t)p->n + 1, sizeof *counts);
  for (int i = 0; i < p->n; i++) {
    const graph_node *nd = p->nodes[i].node;
    for (int k = 0; k < nd->n_inputs; k++) counts[plan_of[nd->inputs[k].node->index]]++;
    for (int k = 0; k < nd->n_control; k++) counts[plan_of[nd->control_inputs[k]->index]]++;
  }
  for (int i = 0; i < p->n; i++) {
    p->nodes[i].edges = arena_calloc(p->arena, (size_t)counts[i] + 1, sizeof(exec_edge));
    p->nodes[i].port_used = arena_calloc(p->arena, (size_t)p->nodes[i].n_outputs + 1, sizeof(bool));
  }
  for (int i = 0; i < p->n; i++) {
    const graph_node *nd = p->nodes[i].node;
    for (int k = 0; k < nd->n_inputs; k++) {
      exec_pnode *src = &p->nodes[plan_of[nd->inputs[k].node->index]];
      src->edges[src->n_edges++] = (exec_edge){i, k, nd->inputs[k].port};
      src->port_used[nd->inputs[k].port] = true;
    }
    for (int k = 0; k < nd->n_control; k++) {
      exec_pnode *src = &p->nodes[plan_of[nd->control_inputs[k]->index]];
      src->edges[src->n_edges++] = (exec_edge){i, -1, 0};
    }
  }

  /* A NextIteration must feed Merges of its own frame. */
  for (int i = 0; i < p->n && !s; i++) {
    const exec_pnode *pn = &p->nodes[i];
    if (pn->kind != EK_NEXT_ITERATION) continue;
    for (int k = 0; k < pn->n_edges; k++) {
      const exec_pnode *dst = &p->nodes[pn->edges[k].dst];
      if (dst->frame != pn->frame || (pn->edges[k].input >= 0 && dst->kind != EK_MERGE))
        s = ERR_INVALID("node %s (%s): a NextIteration must feed a Merge of its own loop frame, not %s (%s)",
                        pn->node->name, pn->node->op, dst->node->name, dst->node->op);
    }
  }
  if (s) goto fail;

  /* Per-frame layout and initial pending counts. */
  for (int i = 0; i < p->n; i++) {
    exec_pnode *pn = &p->nodes[i];
    exec_frame_info *f = &p->frames[pn->frame];
    pn->local = f->n_nodes++;
    pn->slot_base = f->n_slots;
    f->n_slots += pn->n_inputs;
  }
  for (int fi = 0; fi < p->n_frames; fi++)
    p->frames[fi].pending0 = arena_calloc(p->arena, (size_t)p->frames[fi].n_nodes + 1, sizeof(int));
  int n_roots = 0;
  for (int i = 0; i < p->n; i++) {
    exec_pnode *pn = &p->nodes[i];
    int pending = pn->kind == EK_MERGE ? 1 + 2 * pn->n_control : pn->n_inputs + pn->n_control;
    p->frames[pn->frame].pending0[pn->local] = pending;
    if (pn->n_inputs + pn->n_control == 0) n_roots++;
  }
  p->roots = arena_calloc(p->arena, (size_t)n_roots + 1, sizeof(int));
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].n_inputs + p->nodes[i].n_control == 0) p->roots[p->n_roots++] = i;

  /* Results. */
  p->result_node = arena_calloc(p->arena, (size_t)g->n_results + 1, sizeof(int));
  for (int r = 0; r < g->n_results && !s; r++) {
    const graph_result *res = &g->results[r];
    int pi = plan_of[res->node->index];
    exec_pnode *pn = &p->nodes[pi];
    int of = 0;
    s = output_frame(p, pn, &of);
    if (!s && of != 0)
      s = ERR_INVALID("result %s reads node %s, whose value lives inside loop frame '%s'", res->name, res->node->name,
                      p->frames[of].name);
    if (s) break;
    p->result_node[r] = pi;
    pn->n_results++;
    pn->port_used[res->port] = true;
  }
  if (s) goto fail;
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].n_results) {
      p->nodes[i].results = arena_calloc(p->arena, (size_t)p->nodes[i].n_results, sizeof(int));
      p->nodes[i].n_results = 0;
    }
  for (int r = 0; r < g->n_results; r++) {
    exec_pnode *pn = &p->nodes[p->result_node[r]];
    pn->results[pn->n_results++] = r;
  }

  /* Feeds: the graph inputs in order (needed or not: functions take them by
   * position), then needed Placeholders. */
  int n_feeds = g->n_inputs;
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].kind == EK_PLACEHOLDER || p->nodes[i].kind == EK_PLACEHOLDER_DEFAULT) n_feeds++;
  p->feeds = arena_calloc(p->arena, (size_t)n_feeds + 1, sizeof(int));
  for (int k = 0; k < g->n_inputs; k++) {
    int pi = plan_of[g->inputs[k]->index];
    p->feeds[p->n_feeds++] = pi;
    if (pi >= 0) p->nodes[pi].feed = k;
  }
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].kind == EK_PLACEHOLDER || p->nodes[i].kind == EK_PLACEHOLDER_DEFAULT) {
      p->nodes[i].feed = p->n_feeds;
      p->feeds[p->n_feeds++] = i;
    }
  /* A graph input that is not in g->inputs (hand-built graphs) cannot be fed. */
  for (int i = 0; i < p->n && !s; i++)
    if (p->nodes[i].kind == EK_INPUT && p->nodes[i].feed < 0)
      s = ERR_INVALID("node %s (%s) is not one of the graph's inputs", p->nodes[i].node->name, p->nodes[i].node->op);
  if (s) goto fail;
  *out = p;
  return NULL;

fail:
  plan_free(p);
  free(p);
  return s;
}

static kiln_status plan_get(executor *e, graph *g, exec_plan **out) {
  for (int i = 0; i < e->n_plans; i++)
    if (e->plans[i]->g == g) {
      *out = e->plans[i];
      return NULL;
    }
  exec_plan *p;
  TRY(plan_build(e, g, &p));
  if (e->n_plans == e->cap_plans) {
    int cap = e->cap_plans ? e->cap_plans * 2 : 4;
    exec_plan **a = realloc(e->plans, (size_t)cap * sizeof *a);
    if (!a) {
      plan_free(p);
      free(p);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
    e->plans = a;
    e->cap_plans = cap;
  }
  e->plans[e->n_plans++] = p;
  *out = p;
  return NULL;
}

/* ============================================================== run state ====== */

typedef struct iter_state {
  int64_t number;
  graph_tensor **slots;
  int *pending;
  int *dead;
  int outstanding_ops;
  int outstanding_frames;
} iter_state;

typedef struct held_value {
  int node;
  graph_tensor *value; /* NULL: dead */
} held_value;

typedef struct frame_inst frame_inst;
struct frame_inst {
  int sf;
  frame_inst *parent;
  int64_t parent_iter;
  int64_t iteration_count;
  int num_outstanding_iterations;
  int max_parallel;
  int num_pending_inputs;
  int ring_n;
  iter_state **ring;
  int n_invs, cap_invs;
  held_value *invs;
  int n_next, cap_next;
  held_value *next_roots;
  int n_dead_exits, cap_dead_exits;
  int *dead_exits;
  int n_children, cap_children;
  frame_inst **children;
};

typedef struct tagged {
  int node;
  frame_inst *frame;
  int64_t iter;
  bool dead;
} tagged;

enum { RESULT_PENDING, RESULT_LIVE, RESULT_DEAD };

typedef struct run_state {
  executor *e;
  exec_plan *p;
  graph_tensor *const *feeds; /* by plan feed index */
  graph_tensor **results;
  int *result_state;
  tagged *queue;
  size_t head, tail, cap;
  frame_inst *root;
} run_state;

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) abort(); /* out of memory is an internal invariant */
  return p;
}

#define GROW(arr, n, cap)                                          \
  do {                                                             \
    if ((n) == (cap)) {                                            \
      int c_ = (cap) ? (cap) * 2 : 4;                              \
      void *a_ = realloc((arr), (size_t)c_ * sizeof *(arr));       \
      if (!a_) abort();                                            \
      (arr) = a_;                                                  \
      (cap) = c_;                                                  \
    }                                                              \
  } while (0)

static iter_state *iter_new(const exec_frame_info *fi, int64_t number) {
  iter_state *it = xcalloc(1, sizeof *it);
  it->number = number;
  it->slots = xcalloc((size_t)fi->n_slots, sizeof *it->slots);
  it->pending = xcalloc((size_t)fi->n_nodes, sizeof *it->pending);
  it->dead = xcalloc((size_t)fi->n_nodes, sizeof *it->dead);
  memcpy(it->pending, fi->pending0, (size_t)fi->n_nodes * sizeof *it->pending);
  return it;
}

static void iter_free(const exec_frame_info *fi, iter_state *it) {
  if (!it) return;
  for (int i = 0; i < fi->n_slots; i++) tensor_free(it->slots[i]);
  free(it->slots);
  free(it->pending);
  free(it->dead);
  free(it);
}

static iter_state *iter_get(const frame_inst *f, int64_t i) {
  if (i < 0) return NULL;
  iter_state *it = f->ring[i % f->ring_n];
  return it && it->number == i ? it : NULL;
}

static frame_inst *frame_new(const exec_plan *p, int sf, frame_inst *parent, int64_t parent_iter) {
  frame_inst *f = xcalloc(1, sizeof *f);
  f->sf = sf;
  f->parent = parent;
  f->parent_iter = parent_iter;
  f->max_parallel = 1;
  f->ring_n = f->max_parallel + 1;
  f->ring = xcalloc((size_t)f->ring_n, sizeof *f->ring);
  f->ring[0] = iter_new(&p->frames[sf], 0);
  f->num_outstanding_iterations = 1;
  f->num_pending_inputs = p->frames[sf].n_enters;
  return f;
}

static void frame_free(const exec_plan *p, frame_inst *f) {
  if (!f) return;
  for (int i = 0; i < f->n_children; i++) frame_free(p, f->children[i]);
  free(f->children);
  for (int i = 0; i < f->ring_n; i++) iter_free(&p->frames[f->sf], f->ring[i]);
  free(f->ring);
  for (int i = 0; i < f->n_invs; i++) tensor_free(f->invs[i].value);
  free(f->invs);
  for (int i = 0; i < f->n_next; i++) tensor_free(f->next_roots[i].value);
  free(f->next_roots);
  free(f->dead_exits);
  free(f);
}

static void push_ready(run_state *rs, int node, frame_inst *f, int64_t iter, bool dead) {
  if (rs->tail == rs->cap) {
    if (rs->head > 0) {
      memmove(rs->queue, rs->queue + rs->head, (rs->tail - rs->head) * sizeof *rs->queue);
      rs->tail -= rs->head;
      rs->head = 0;
    }
    if (rs->tail == rs->cap) {
      size_t cap = rs->cap ? rs->cap * 2 : 64;
      tagged *q = realloc(rs->queue, cap * sizeof *q);
      if (!q) abort();
      rs->queue = q;
      rs->cap = cap;
    }
  }
  rs->queue[rs->tail++] = (tagged){node, f, iter, dead};
}

/* TF's ActivateNodes: delivers src's outputs (out[0..n_out), NULL = dead) to its
 * consumers in iteration `iter` of frame f and queues the ones that become ready. */
static void activate(run_state *rs, frame_inst *f, int64_t iter, int src, graph_tensor *const *out, int n_out,
                     bool src_dead) {
  const exec_plan *p = rs->p;
  const exec_pnode *pn = &p->nodes[src];
  iter_state *it = iter_get(f, iter);
  if (!it) abort(); /* the iteration receiving values is alive by construction */
  for (int k = 0; k < pn->n_edges; k++) {
    const exec_edge *e = &pn->edges[k];
    const exec_pnode *dst = &p->nodes[e->dst];
    int local = dst->local;
    graph_tensor *v = (e->input >= 0 && !src_dead && e->port < n_out) ? out[e->port] : NULL;
    bool ready, dst_dead = false;
    if (dst->kind == EK_MERGE) {
      if (e->input < 0) {
        it->pending[local] -= 2;
        dst_dead = it->dead[local] == dst->n_inputs;
        ready = it->pending[local] == 0 || (it->pending[local] == 1 && dst_dead);
      } else if (v) {
        int count = it->pending[local];
        it->pending[local] &= ~1;
        ready = count == 1;
        if (count & 1) {
          graph_tensor **slot = &it->slots[dst->slot_base + e->input];
          tensor_free(*slot);
          *slot = tensor_ref(v);
        }
      } else {
        it->dead[local]++;
        dst_dead = it->dead[local] == dst->n_inputs;
        ready = it->pending[local] == 1 && dst_dead;
      }
    } else {
      it->pending[local]--;
      if (src_dead || (e->input >= 0 && !v)) it->dead[local]++;
      dst_dead = it->dead[local] > 0;
      ready = it->pending[local] == 0;
      if (v) {
        graph_tensor **slot = &it->slots[dst->slot_base + e->input];
        tensor_free(*slot);
        *slot = tensor_ref(v);
      }
    }
    if (ready) {
      if (dst->kind == EK_CONTROL_TRIGGER) dst_dead = false;
      push_ready(rs, e->dst, f, iter, dst_dead);
      it->outstanding_ops++;
    }
  }
}

static void activate_held(run_state *rs, frame_inst *f, int64_t iter, const held_value *h) {
  graph_tensor *v = h->value;
  activate(rs, f, iter, h->node, &v, 1, v == NULL);
}

static void increment_iteration(run_state *rs, frame_inst *f) {
  f->iteration_count++;
  int64_t n = f->iteration_count;
  iter_state **slot = &f->ring[n % f->ring_n];
  if (*slot) abort(); /* at most max_parallel iterations are alive */
  *slot = iter_new(&rs->p->frames[f->sf], n);
  f->num_outstanding_iterations++;
  f->n_dead_exits = 0;
  int n_next = f->n_next;
  f->n_next = 0;
  for (int i = 0; i < n_next; i++) {
    activate_held(rs, f, n, &f->next_roots[i]);
    tensor_free(f->next_roots[i].value);
  }
  for (int i = 0; i < f->n_invs; i++) activate_held(rs, f, n, &f->invs[i]);
}

static bool iteration_done(const frame_inst *f, int64_t i) {
  const iter_state *it = iter_get(f, i);
  if (!it || it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
  if (i == 0) return f->num_pending_inputs == 0;
  return iter_get(f, i - 1) == NULL;
}

/* Releases finished iterations from `iter` on, starting deferred ones; returns whether
 * the whole frame is done. */
static bool cleanup_iterations(run_state *rs, frame_inst *f, int64_t iter) {
  int64_t cur = iter;
  while (cur <= f->iteration_count && iteration_done(f, cur)) {
    iter_free(&rs->p->frames[f->sf], f->ring[cur % f->ring_n]);
    f->ring[cur % f->ring_n] = NULL;
    f->num_outstanding_iterations--;
    cur++;
    if (f->n_next) increment_iteration(rs, f);
  }
  return f->num_pending_inputs == 0 && f->num_outstanding_iterations == 0;
}

static void delete_frame(run_state *rs, frame_inst *f) {
  frame_inst *parent = f->parent;
  for (int i = 0; i < f->n_dead_exits; i++) activate(rs, parent, f->parent_iter, f->dead_exits[i], NULL, 0, true);
  for (int i = 0; i < parent->n_children; i++)
    if (parent->children[i] == f) {
      parent->children[i] = parent->children[--parent->n_children];
      break;
    }
  frame_free(rs->p, f);
}

/* A frame finished: remove it and let its parent iteration finish in turn. */
static void finish_frame(run_state *rs, frame_inst *f) {
  while (f->parent) {
    frame_inst *parent = f->parent;
    int64_t piter = f->parent_iter;
    delete_frame(rs, f);
    iter_get(parent, piter)->outstanding_frames--;
    if (!cleanup_iterations(rs, parent, piter)) return;
    f = parent;
  }
}

static bool decrement_outstanding(run_state *rs, frame_inst *f, int64_t iter) {
  iter_state *it = iter_get(f, iter);
  if (--it->outstanding_ops != 0) return false;
  return cleanup_iterations(rs, f, iter);
}

static frame_inst *child_frame(run_state *rs, frame_inst *f, int64_t iter, const exec_pnode *enter) {
  for (int i = 0; i < f->n_children; i++)
    if (f->children[i]->sf == enter->child_frame && f->children[i]->parent_iter == iter) return f->children[i];
  frame_inst *c = frame_new(rs->p, enter->child_frame, f, iter);
  GROW(f->children, f->n_children, f->cap_children);
  f->children[f->n_children++] = c;
  iter_get(f, iter)->outstanding_frames++;
  return c;
}

/* TF's PropagateOutputs. */
static void propagate(run_state *rs, const tagged *t, graph_tensor *const *out) {
  const exec_pnode *pn = &rs->p->nodes[t->node];
  frame_inst *f = t->frame;
  int64_t iter = t->iter;
  switch (pn->kind) {
    case EK_ENTER: {
      frame_inst *c = child_frame(rs, f, iter, pn);
      graph_tensor *v = t->dead ? NULL : out[0];
      if (pn->constant_enter) {
        GROW(c->invs, c->n_invs, c->cap_invs);
        held_value *h = &c->invs[c->n_invs++];
        h->node = t->node;
        h->value = v ? tensor_ref(v) : NULL;
        for (int64_t i = 0; i <= c->iteration_count; i++)
          if (iter_get(c, i)) activate_held(rs, c, i, h);
      } else {
        activate(rs, c, 0, t->node, out, pn->n_outputs, t->dead);
      }
      c->num_pending_inputs--;
      /* A frame whose last input activated nothing (a loop entered with dead values
       * waits on a NextIteration that never comes) is finished now: no node of it
       * will ever run to notice. */
      if (c->num_pending_inputs == 0) {
        iter_state *it0 = iter_get(c, 0);
        if (it0 && it0->outstanding_ops == 0 && it0->outstanding_frames == 0 && cleanup_iterations(rs, c, 0)) {
          delete_frame(rs, c);
          iter_get(f, iter)->outstanding_frames--;
        }
      }
      break;
    }
    case EK_EXIT:
      if (t->dead) {
        if (iter == f->iteration_count) {
          GROW(f->dead_exits, f->n_dead_exits, f->cap_dead_exits);
          f->dead_exits[f->n_dead_exits++] = t->node;
        }
      } else {
        activate(rs, f->parent, f->parent_iter, t->node, out, pn->n_outputs, false);
      }
      break;
    case EK_NEXT_ITERATION:
      if (t->dead || !out[0]) break; /* deadness stops at the back-edge */
      if (iter == f->iteration_count && f->num_outstanding_iterations == f->max_parallel) {
        GROW(f->next_roots, f->n_next, f->cap_next);
        f->next_roots[f->n_next++] = (held_value){t->node, tensor_ref(out[0])};
      } else {
        if (iter == f->iteration_count) increment_iteration(rs, f);
        activate(rs, f, iter + 1, t->node, out, pn->n_outputs, false);
      }
      break;
    default:
      activate(rs, f, iter, t->node, out, pn->n_outputs, t->dead);
      break;
  }
  if (decrement_outstanding(rs, f, iter)) finish_frame(rs, f);
}

/* ========================================================== running nodes ====== */

void exec_print_tensor_type(strbuf *b, const graph_tensor *t) {
  strbuf_printf(b, "%s[", graph_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) strbuf_printf(b, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  strbuf_putc(b, ']');
}

/* "node NAME (OP) on inputs (float[2], int32[]): MESSAGE", replacing a leading
 * "node NAME (OP): " that the op library already wrote. */
static kiln_status node_error(const graph_node *n, graph_tensor *const *in, int n_in, kiln_status s) {
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "node %s (%s)", n->name, n->op);
  size_t prefix = b.len;
  if (n_in > 0) {
    strbuf_append(&b, " on inputs (");
    for (int i = 0; i < n_in; i++) {
      if (i) strbuf_append(&b, ", ");
      if (in[i]) exec_print_tensor_type(&b, in[i]);
      else strbuf_append(&b, "-");
    }
    strbuf_putc(&b, ')');
  }
  const char *msg = kiln_status_message(s);
  if (strncmp(msg, b.data, prefix) == 0 && strncmp(msg + prefix, ": ", 2) == 0) msg += prefix + 2;
  kiln_status w = status_error(kiln_status_code(s), "%s: %s", strbuf_cstr(&b), msg);
  strbuf_free(&b);
  kiln_status_free(s);
  return w;
}

static kiln_status compute(run_state *rs, const exec_pnode *pn, graph_tensor **in, graph_tensor **out) {
  executor *e = rs->e;
  const graph_node *n = pn->node;
  switch (pn->kind) {
    case EK_INPUT:
    case EK_PLACEHOLDER:
    case EK_PLACEHOLDER_DEFAULT: {
      graph_tensor *v = rs->feeds[pn->feed];
      if (!v && pn->kind == EK_PLACEHOLDER_DEFAULT && pn->n_inputs > 0) v = in[0];
      if (!v) return ERR_INVALID("input %s was not fed", n->name);
      out[0] = tensor_ref(v);
      e->stats.native_runs++;
      return NULL;
    }
    case EK_SWITCH: {
      if (pn->n_inputs != 2 || pn->n_outputs > 2)
        return ERR_INVALID("Switch takes (data, pred) and has two outputs; this one has %d inputs", pn->n_inputs);
      const graph_tensor *pred = in[1];
      if (pred->n != 1) return ERR_INVALID("the predicate must be a scalar, got %lld elements", (long long)pred->n);
      int port = exec_truth(pred) ? 1 : 0;
      if (port < pn->n_outputs) {
        out[port] = in[0];
        in[0] = NULL;
      }
      e->stats.native_runs++;
      return NULL;
    }
    case EK_MERGE: {
      int taken = -1;
      for (int i = 0; i < pn->n_inputs; i++)
        if (in[i]) {
          taken = i;
          break;
        }
      if (taken < 0) return ERR_INVALID("Merge has no live input (a Merge needs data inputs)");
      out[0] = in[taken];
      in[taken] = NULL;
      if (pn->n_outputs > 1) TRY(exec_scalar_s64(GRAPH_DT_INT32, taken, &out[1]));
      e->stats.native_runs++;
      return NULL;
    }
    case EK_ENTER:
    case EK_EXIT:
    case EK_NEXT_ITERATION:
    case EK_LOOP_COND:
      if (pn->n_inputs < 1) return ERR_INVALID("%s needs one data input", graph_node_op_base(n));
      if (pn->n_outputs > 0) {
        out[0] = in[0];
        in[0] = NULL;
      }
      e->stats.native_runs++;
      return NULL;
    case EK_CONTROL_TRIGGER:
      e->stats.native_runs++;
      return NULL;
    case EK_NATIVE: {
      exec_node_ctx c = {e, n, pn->n_inputs, in, pn->n_outputs, out};
      e->stats.native_runs++;
      return pn->native->fn(&c);
    }
    case EK_OP:
      return exec_run_op(e, n, pn->def, pn->static_key, in, pn->n_inputs, out, pn->n_outputs);
  }
  return ERR_INTERNAL("unknown node kind");
}

static kiln_status process(run_state *rs, const tagged *t) {
  const exec_pnode *pn = &rs->p->nodes[t->node];
  iter_state *it = iter_get(t->frame, t->iter);
  graph_tensor *small[16];
  /* Executor-native ops write their usual outputs whatever count the graph declares
   * (a TensorArrayWriteV3 declared "-> ()" still makes its flow): room for a few, and
   * whatever lands past n_outputs is released below. */
  int n_out_room = pn->n_outputs < 4 ? 4 : pn->n_outputs;
  int n_buf = pn->n_inputs + n_out_room;
  graph_tensor **buf = n_buf <= 16 ? small : xcalloc((size_t)n_buf, sizeof *buf);
  memset(buf, 0, (size_t)n_buf * sizeof *buf);
  graph_tensor **in = buf, **out = buf + pn->n_inputs;
  for (int i = 0; i < pn->n_inputs; i++) {
    in[i] = it->slots[pn->slot_base + i];
    it->slots[pn->slot_base + i] = NULL;
  }
  kiln_status s = NULL;
  if (t->dead) {
    rs->e->stats.dead_nodes++;
  } else {
    s = compute(rs, pn, in, out);
    if (!s && (pn->kind == EK_OP || pn->kind == EK_NATIVE))
      for (int k = 0; k < pn->n_outputs && !s; k++)
        if (!out[k] && pn->port_used[k]) s = ERR_INVALID("produced no value for output %d, which is used", k);
    if (s) s = node_error(pn->node, in, pn->n_inputs, s);
  }
  if (!s) {
    /* Results are values of the root frame (an Exit's output lives in its parent). */
    frame_inst *values_in = pn->kind == EK_EXIT ? t->frame->parent : t->frame;
    if (values_in == rs->root)
      for (int k = 0; k < pn->n_results; k++) {
        int r = pn->results[k];
        int port = rs->p->g->results[r].port;
        graph_tensor *v = t->dead ? NULL : out[port];
        tensor_free(rs->results[r]);
        rs->results[r] = v ? tensor_ref(v) : NULL;
        rs->result_state[r] = v ? RESULT_LIVE : RESULT_DEAD;
      }
    propagate(rs, t, out);
  }
  for (int i = 0; i < n_buf; i++) tensor_free(buf[i]);
  if (buf != small) free(buf);
  return s;
}

/* Runs plan p with feeds by feed index; results[r] get references. */
static kiln_status run_plan(executor *e, exec_plan *p, graph_tensor *const *feeds, graph_tensor **results) {
  graph *g = p->g;
  run_state rs;
  memset(&rs, 0, sizeof rs);
  rs.e = e;
  rs.p = p;
  rs.feeds = feeds;
  rs.results = results;
  rs.result_state = xcalloc((size_t)g->n_results, sizeof *rs.result_state);
  for (int r = 0; r < g->n_results; r++) results[r] = NULL;
  rs.root = frame_new(p, 0, NULL, 0);
  iter_state *it0 = iter_get(rs.root, 0);
  for (int i = 0; i < p->n_roots; i++) {
    push_ready(&rs, p->roots[i], rs.root, 0, false);
    it0->outstanding_ops++;
  }
  kiln_status s = NULL;
  while (rs.head < rs.tail && !s) {
    tagged t = rs.queue[rs.head++];
    s = process(&rs, &t);
  }
  for (int r = 0; r < g->n_results && !s; r++) {
    if (rs.result_state[r] == RESULT_LIVE) continue;
    const graph_result *res = &g->results[r];
    if (rs.result_state[r] == RESULT_DEAD)
      s = ERR_INVALID("result %s (%s:%d) is dead: it comes from a branch of a Switch that was not taken", res->name,
                      res->node->name, res->port);
    else
      s = ERR_INVALID("result %s (%s:%d) was never computed: the nodes producing it never became ready (a loop or "
                      "branch they wait on did not deliver)",
                      res->name, res->node->name, res->port);
  }
  if (s)
    for (int r = 0; r < g->n_results; r++) {
      tensor_free(results[r]);
      results[r] = NULL;
    }
  frame_free(p, rs.root);
  free(rs.queue);
  free(rs.result_state);
  return s;
}

/* ================================================================ session ====== */

static void feed_signature_of(const graph_node *n, graph_dtype *dtype, graph_shape *shape) {
  *dtype = GRAPH_DT_INVALID;
  *shape = graph_shape_unknown();
  if (n->is_input || strcmp(n->op, GRAPH_OP_INPUT) == 0) {
    if (n->n_outputs > 0) {
      *dtype = n->outputs[0].dtype;
      *shape = n->outputs[0].shape;
    }
    return;
  }
  graph_dtype t;
  if (!graph_node_attr(n, "dtype") || graph_node_get_type(n, "dtype", &t)) {
    if (n->n_outputs > 0) *dtype = n->outputs[0].dtype;
  } else {
    *dtype = t;
  }
  graph_shape s;
  const graph_attr_value *v = graph_node_attr(n, "shape");
  if (v && v->kind == GRAPH_ATTR_SHAPE && !graph_node_get_shape(n, "shape", &s)) *shape = s;
  else if (n->n_outputs > 0) *shape = n->outputs[0].shape;
}

void executor_feed_signature(const graph_node *feed, graph_dtype *dtype, graph_shape *shape) {
  feed_signature_of(feed, dtype, shape);
}

bool exec_shape_matches(const graph_shape *declared, const graph_tensor *t) {
  if (declared->rank == GRAPH_UNKNOWN) return true;
  if (declared->rank != t->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (declared->dims[i] != GRAPH_UNKNOWN && declared->dims[i] != t->dims[i]) return false;
  return true;
}

static void print_signature(strbuf *b, graph_dtype dt, const graph_shape *s) {
  strbuf_append(b, graph_dtype_name(dt));
  if (s->rank == GRAPH_UNKNOWN) return;
  strbuf_putc(b, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (s->dims[i] == GRAPH_UNKNOWN) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)s->dims[i]);
  }
  strbuf_putc(b, ']');
}

static kiln_status check_feed(const graph_node *n, const graph_tensor *v, bool check_shape) {
  graph_dtype dt;
  graph_shape shape;
  feed_signature_of(n, &dt, &shape);
  bool dtype_ok = dt == GRAPH_DT_INVALID || dt == v->dtype;
  bool shape_ok = !check_shape || exec_shape_matches(&shape, v);
  if (dtype_ok && shape_ok) return NULL;
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b, "input %s takes ", n->name);
  print_signature(&b, dt, &shape);
  strbuf_append(&b, " but was given ");
  exec_print_tensor_type(&b, v);
  strbuf_append(&b, dtype_ok ? " (dimensions differ)" : " (element types differ)");
  kiln_status s = ERR_INVALID("%s", strbuf_cstr(&b));
  strbuf_free(&b);
  return s;
}

kiln_status executor_new(graph *g, const executor_options *opts, executor **out) {
  *out = NULL;
  if (!g) return ERR_INVALID("executor_new: no graph");
  const backend *dev = backend_default();
  if (opts && opts->device && opts->device[0]) {
    dev = backend_find(opts->device);
    if (!dev) {
      strbuf b;
      strbuf_init(&b);
      for (int i = 0; i < backend_count(); i++) strbuf_printf(&b, "%s%s", i ? ", " : "", backend_at(i)->name);
      kiln_status s = status_error(KILN_NOT_FOUND, "unknown device '%s' (available devices: %s)", opts->device,
                                   strbuf_cstr(&b));
      strbuf_free(&b);
      return s;
    }
  }
  executor *e = calloc(1, sizeof *e);
  if (!e) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  e->g = g;
  e->device = dev;
  if (opts && opts->dump_dir && opts->dump_dir[0]) {
    e->dump_dir = strdup(opts->dump_dir);
    if (!e->dump_dir) abort();
  }
  e->dump_large_constants = opts && opts->dump_large_constants;
  e->compile = opts && opts->compile ? *opts->compile : backend_compile_options_default();
  e->cache = exec_cache_new();
  e->res = exec_resources_new();
  exec_plan *p;
  kiln_status s = plan_get(e, g, &p);
  if (s) {
    executor_free(e);
    return s;
  }
  *out = e;
  return NULL;
}

void executor_free(executor *e) {
  if (!e) return;
  for (int i = 0; i < e->n_plans; i++) {
    plan_free(e->plans[i]);
    free(e->plans[i]);
  }
  free(e->plans);
  exec_resources_free(e->res);
  exec_clusters_free(e->clusters);
  exec_cache_free(e->cache);
  free(e->dump_dir);
  free(e);
}

/* Feeds the results need, in feed order. */
static bool feed_needed(const exec_plan *p, int k) {
  int pi = p->feeds[k];
  if (pi < 0) return false;
  return p->nodes[pi].kind != EK_PLACEHOLDER_DEFAULT;
}

int executor_num_feeds(const executor *e) {
  const exec_plan *p = e->plans[0];
  int n = 0;
  for (int k = 0; k < p->n_feeds; k++)
    if (feed_needed(p, k)) n++;
  return n;
}

const graph_node *executor_feed(const executor *e, int i) {
  const exec_plan *p = e->plans[0];
  for (int k = 0; k < p->n_feeds; k++)
    if (feed_needed(p, k) && i-- == 0) return p->nodes[p->feeds[k]].node;
  return NULL;
}

const executor_stats *executor_get_stats(const executor *e) { return &e->stats; }
const char *executor_device_name(const executor *e) { return e->device->name; }

static const graph_node *feed_node(const exec_plan *p, int k) {
  if (p->feeds[k] >= 0) return p->nodes[p->feeds[k]].node;
  return p->g->inputs[k]; /* a graph input the results do not need */
}

int executor_num_optional_feeds(const executor *e) {
  const exec_plan *p = e->plans[0];
  int n = 0;
  for (int k = 0; k < p->n_feeds; k++)
    if (!feed_needed(p, k)) n++;
  return n;
}

const graph_node *executor_optional_feed(const executor *e, int i) {
  const exec_plan *p = e->plans[0];
  for (int k = 0; k < p->n_feeds; k++)
    if (!feed_needed(p, k) && i-- == 0) return feed_node(p, k);
  return NULL;
}

static void list_feeds(strbuf *b, const exec_plan *p) {
  int listed = 0;
  for (int k = 0; k < p->n_feeds; k++) {
    const graph_node *n = feed_node(p, k);
    graph_dtype dt;
    graph_shape shape;
    feed_signature_of(n, &dt, &shape);
    strbuf_printf(b, "%s%s: ", listed++ ? ", " : "", n->name);
    print_signature(b, dt, &shape);
  }
  if (!listed) strbuf_append(b, "nothing");
}

/* executor_run without the end of the run: values.c reads list results before the
 * lists go. */
kiln_status exec_run_fed(executor *e, int n_inputs, const char *const *names, graph_tensor *const *inputs,
                         graph_tensor **outputs) {
  exec_plan *p = e->plans[0];
  for (int r = 0; r < p->g->n_results; r++) outputs[r] = NULL;
  graph_tensor **feeds = xcalloc((size_t)p->n_feeds, sizeof *feeds);
  kiln_status s = NULL;
  for (int i = 0; i < n_inputs && !s; i++) {
    int k = 0;
    while (k < p->n_feeds && strcmp(feed_node(p, k)->name, names[i]) != 0) k++;
    if (k == p->n_feeds) {
      strbuf b;
      strbuf_init(&b);
      list_feeds(&b, p);
      s = status_error(KILN_NOT_FOUND, "unknown input '%s'; the graph takes %s", names[i], strbuf_cstr(&b));
      strbuf_free(&b);
    } else if (feeds[k]) {
      s = ERR_INVALID("input %s is given twice", names[i]);
    } else if (!inputs[i]) {
      s = ERR_INVALID("input %s: no tensor", names[i]);
    } else {
      s = check_feed(feed_node(p, k), inputs[i], true);
      if (!s) feeds[k] = inputs[i];
    }
  }
  if (!s) {
    strbuf missing;
    strbuf_init(&missing);
    int n_missing = 0;
    for (int k = 0; k < p->n_feeds; k++) {
      if (feeds[k] || !feed_needed(p, k)) continue;
      const graph_node *n = feed_node(p, k);
      graph_dtype dt;
      graph_shape shape;
      feed_signature_of(n, &dt, &shape);
      strbuf_printf(&missing, "%s%s: ", n_missing++ ? ", " : "", n->name);
      print_signature(&missing, dt, &shape);
    }
    if (n_missing) {
      strbuf all;
      strbuf_init(&all);
      list_feeds(&all, p);
      s = ERR_INVALID("missing input%s %s; the graph takes %s", n_missing > 1 ? "s" : "", strbuf_cstr(&missing),
                      strbuf_cstr(&all));
      strbuf_free(&all);
    }
    strbuf_free(&missing);
  }
  if (!s) s = run_plan(e, p, feeds, outputs);
  free(feeds);
  return s;
}

kiln_status executor_run(executor *e, int n_inputs, const char *const *names, graph_tensor *const *inputs,
                         graph_tensor **outputs) {
  kiln_status s = exec_run_fed(e, n_inputs, names, inputs, outputs);
  exec_resources_end_run(e->res);
  return s;
}

kiln_status exec_call_function(executor *e, graph *body, int n_in, graph_tensor *const *in, int n_out,
                               graph_tensor **out) {
  for (int i = 0; i < n_out; i++) out[i] = NULL;
  const char *fname = body->name ? body->name : "(root)";
  if (e->call_depth >= EXEC_MAX_CALL_DEPTH)
    return status_error(KILN_RESOURCE_EXHAUSTED, "function %s: calls nest deeper than %d", fname,
                        EXEC_MAX_CALL_DEPTH);
  if (n_in != body->n_inputs)
    return ERR_INVALID("function %s takes %d inputs, given %d", fname, body->n_inputs, n_in);
  if (n_out != body->n_results)
    return ERR_INVALID("function %s has %d results, %d expected", fname, body->n_results, n_out);
  exec_plan *p;
  TRY(status_wrap(plan_get(e, body, &p), "function %s", fname));
  graph_tensor **feeds = xcalloc((size_t)p->n_feeds, sizeof *feeds);
  kiln_status s = NULL;
  for (int i = 0; i < n_in && !s; i++) {
    feeds[i] = in[i];
    if (!in[i]) s = ERR_INVALID("input %d (%s) has no value", i, body->inputs[i]->name);
    else s = check_feed(body->inputs[i], in[i], false);
  }
  for (int k = n_in; k < p->n_feeds && !s; k++)
    if (feed_needed(p, k)) s = ERR_INVALID("placeholder %s cannot be fed in a function", feed_node(p, k)->name);
  if (!s) {
    e->call_depth++;
    s = run_plan(e, p, feeds, out);
    e->call_depth--;
  }
  free(feeds);
  return status_wrap(s, "in function %s", fname);
}
