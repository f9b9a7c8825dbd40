/* The bridge's graph pass registry and jit_run.
 *
 * Passes are registered in one table by phase and priority, as in TensorFlow's
 * OptimizationPassRegistry: jit_run sorts nothing at run time, the table is written in
 * order and a static check at start-up would be noise; what matters is that phases
 * run pre-placement -> placement -> post-placement -> partitioning and that passes of
 * one phase run by ascending priority. Each pass may dump the graph before and after
 * it (--dump_to), so a wrong rewrite shows up as a diff between two text files. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/executor.h"
#include "graph/cluster_op.h"
#include "jit/jit_internal.h"

typedef enum jit_phase { JIT_PRE_PLACEMENT, JIT_PLACEMENT, JIT_POST_PLACEMENT, JIT_PARTITIONING } jit_phase;

static const char *const phase_names[] = {"pre-placement", "placement", "post-placement", "partitioning"};

typedef struct jit_pass {
  jit_phase phase;
  int priority;
  const char *name;
  jit_pass_fn run;
  bool when_off; /* also runs with --jit off */
} jit_pass;

static const jit_pass passes[] = {
    {JIT_PRE_PLACEMENT, 10, "static-shapes", jit_pass_static_shapes, true},
    {JIT_PLACEMENT, 10, "placer", jit_pass_placer, true},
    {JIT_POST_PLACEMENT, 10, "mark-for-compilation", jit_pass_mark_for_compilation, false},
    {JIT_POST_PLACEMENT, 20, "partial-declustering", jit_pass_partial_declustering, false},
    {JIT_POST_PLACEMENT, 30, "encapsulate-clusters", jit_pass_encapsulate, false},
};

jit_options jit_options_default(void) {
  jit_options o;
  memset(&o, 0, sizeof o);
  o.mode = JIT_AUTO;
  o.min_cluster_size = JIT_DEFAULT_MIN_CLUSTER_SIZE;
  o.max_cluster_size = JIT_DEFAULT_MAX_CLUSTER_SIZE;
  return o;
}

/* ------------------------------------------------------------------ helpers ---- */

jit_node_state *jit_node(jit_state *st, const graph_node *n) { return &st->nodes[n->id]; }

void jit_exclude(jit_state *st, const graph_node *n, const char *fmt, ...) {
  jit_node_state *ns = jit_node(st, n);
  if (ns->reason) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ns->reason = arena_strdup(st->arena, buf);
}

bool jit_input_must_be_constant(const jit_node_state *ns, int i) {
  return ns->kind == JIT_KIND_LOWERED && ns->def && op_input_must_be_constant(ns->def, i, ns->node->n_inputs);
}

static bool op_base_in(const graph_node *n, const char *const *names) {
  const char *base = graph_node_op_base(n);
  for (int i = 0; names[i]; i++)
    if (strcmp(base, names[i]) == 0) return true;
  return false;
}

static bool tf_or_onnx(const graph_node *n) {
  return strncmp(n->op, "tf.", 3) == 0 || strncmp(n->op, "onnx.", 5) == 0 || !strchr(n->op, '.');
}

jit_node_kind jit_classify(const graph_node *n, const op_def **def) {
  static const char *const consts[] = {"Const", "Constant", NULL};
  static const char *const identities[] = {"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient",
                                           "NoOp", NULL};
  static const char *const resources[] = {"ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
                                          "AssignSubVariableOp", NULL};
  static const char *const functional[] = {"While", "StatelessWhile", "If", "StatelessIf", NULL};
  static const char *const lists[] = {"TensorListReserve", "TensorListFromTensor", "TensorListGetItem",
                                      "TensorListSetItem", "TensorListStack", NULL};
  *def = NULL;
  if (n->is_input) return JIT_KIND_OTHER;
  if (tf_or_onnx(n)) {
    if (op_base_in(n, consts)) {
      const graph_attr_value *v = graph_node_attr(n, "value");
      return v && v->kind == GRAPH_ATTR_TENSOR ? JIT_KIND_CONST : JIT_KIND_OTHER;
    }
    if (op_base_in(n, identities)) return JIT_KIND_IDENTITY;
    if (op_base_in(n, resources)) return JIT_KIND_RESOURCE;
  }
  if (strncmp(n->op, "tf.", 3) == 0 && op_base_in(n, functional)) return JIT_KIND_FUNCTIONAL;
  if (strncmp(n->op, "tf.", 3) == 0 && op_base_in(n, lists)) return JIT_KIND_TENSOR_LIST;
  if (executor_knows_op(n->op)) {
    const op_def *d = op_find(n->op);
    if (d && (d->lower || d->host)) {
      *def = d;
      return d->lower ? JIT_KIND_LOWERED : JIT_KIND_HOST_ONLY;
    }
  }
  return JIT_KIND_OTHER;
}

/* jit_node_weight at nesting depth `depth` (bounded: a malformed library could make
 * functions call each other). */
static int weight_at(const graph_node *n, jit_node_kind kind, int depth) {
  if (kind == JIT_KIND_CONST || kind == JIT_KIND_IDENTITY) return 0;
  if (kind != JIT_KIND_FUNCTIONAL || depth > 32) return 1;
  int w = 1;
  for (int a = 0; a < n->n_attrs; a++) {
    const graph_attr_value *v = &n->attrs[a].value;
    if (v->kind != GRAPH_ATTR_FUNC || !v->func.body) continue;
    const graph *f = v->func.body;
    for (int i = 0; i < f->n_nodes; i++) {
      const graph_node *m = f->nodes[i];
      const op_def *def = NULL;
      if (!m->is_input) w += weight_at(m, jit_classify(m, &def), depth + 1);
    }
  }
  return w;
}

int jit_node_weight(const graph_node *n, jit_node_kind kind) { return weight_at(n, kind, 0); }

/* --------------------------------------------------------------- the state ---- */

static void state_free(jit_state *st) {
  for (int i = 0; i < st->id_limit; i++) {
    jit_node_state *ns = &st->nodes[i];
    for (int k = 0; ns->out && k < ns->n_out; k++) tensor_free(ns->out[k].value);
  }
  free(st->nodes);
  free(st->topo);
  for (int c = 0; c < st->n_clusters; c++) free(st->clusters[c].members);
  free(st->clusters);
  arena_free(st->arena);
}

static kiln_status state_init(jit_state *st, graph *g, const jit_options *opts) {
  memset(st, 0, sizeof *st);
  st->g = g;
  st->opts = opts;
  st->arena = arena_new();
  st->id_limit = g->next_id;
  st->nodes = calloc((size_t)st->id_limit + 1, sizeof *st->nodes);
  if (!st->nodes) abort();
  if (opts->device && opts->device[0]) {
    const backend *d = backend_find(opts->device);
    if (!d) return status_error(KILN_NOT_FOUND, "unknown device '%s' (see `kiln devices`)", opts->device);
    st->devices[st->n_devices++] = d;
    st->device_named = true;
  } else {
    for (int i = 0; i < backend_count() && st->n_devices < 32; i++) st->devices[st->n_devices++] = backend_at(i);
  }
  TRY(graph_topo_order(g, &st->topo, &st->n_topo));
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    jit_node_state *ns = &st->nodes[n->id];
    ns->node = n;
    ns->kind = jit_classify(n, &ns->def);
    ns->cluster = -1;
    ns->n_out = n->n_outputs;
    ns->out = arena_calloc(st->arena, (size_t)ns->n_out + 1, sizeof *ns->out);
    for (int k = 0; k < ns->n_out; k++) {
      ns->out[k].dtype = n->outputs[k].dtype;
      ns->out[k].shape = n->outputs[k].shape;
    }
    ns->res = jit_resource_kind_of(n);
  }
  return NULL;
}

/* ------------------------------------------------------------------- dumps ---- */

static void dump_graph(const jit_state *st, int seq, const char *pass, const char *when) {
  if (!st->opts->dump_to || !st->opts->dump_to[0]) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/jit_%04d.%s.%s.txt", st->opts->dump_to, seq, pass, when);
  /* a model's weights in every dump would be gigabytes: elided unless asked */
  graph_print_options po = {.max_tensor_elements = st->opts->dump_large_constants ? 0 : 10};
  strbuf b;
  strbuf_init(&b);
  graph_print(&b, st->g, &po);
  FILE *f = fopen(path, "w");
  if (!f || fputs(strbuf_cstr(&b), f) < 0) log_warning("cannot write the graph dump %s", path);
  if (f) fclose(f);
  strbuf_free(&b);
}

/* ------------------------------------------------------------------ report ---- */

static void report_init(jit_state *st) {
  jit_report *r = calloc(1, sizeof *r);
  if (!r) abort();
  r->arena = arena_new();
  r->n_nodes = st->g->n_nodes;
  r->nodes = arena_calloc(r->arena, (size_t)r->n_nodes + 1, sizeof *r->nodes);
  for (int i = 0; i < st->g->n_nodes; i++) {
    const graph_node *n = st->g->nodes[i];
    r->nodes[i].name = arena_strdup(r->arena, n->name);
    r->nodes[i].op = arena_strdup(r->arena, n->op);
    r->nodes[i].cluster = -1;
  }
  st->report = r;
}

/* Fills what marking, declustering and encapsulation decided (called after the passes;
 * report nodes are matched to state by position, taken before any rewrite). */
static void report_finish(jit_state *st, graph_node **before) {
  jit_report *r = st->report;
  for (int i = 0; i < r->n_nodes; i++) {
    const jit_node_state *ns = &st->nodes[before[i]->id];
    r->nodes[i].device = arena_strdup(r->arena, ns->device ? ns->device->name : "host");
    r->nodes[i].cluster = ns->reason ? -1 : ns->cluster;
    r->nodes[i].reason = ns->reason ? arena_strdup(r->arena, ns->reason) : NULL;
    if (ns->declustered) r->n_declustered++;
  }
  r->n_clusters = st->n_clusters;
  r->clusters = arena_calloc(r->arena, (size_t)st->n_clusters + 1, sizeof *r->clusters);
  for (int c = 0; c < st->n_clusters; c++) {
    const jit_cluster *cl = &st->clusters[c];
    jit_cluster_report *cr = &r->clusters[c];
    cr->name = arena_strdup(r->arena, cl->name ? cl->name : "?");
    cr->device = arena_strdup(r->arena, cl->device ? cl->device->name : "host");
    cr->n_nodes = cl->n_members;
    cr->must_compile = cl->must_compile;
    cr->frame = cl->frame ? arena_strdup(r->arena, cl->frame) : NULL;
    cr->n_constants = cl->n_constants;
    cr->n_args = cl->n_args;
    cr->n_resources = cl->n_resources;
    cr->n_outputs = cl->n_outputs;
    for (int m = 0; m < cl->n_members; m++) {
      const jit_node_state *ns = &st->nodes[cl->members[m]];
      cr->n_counted += jit_node_weight(ns->node, ns->kind);
    }
  }
}

void jit_report_free(jit_report *r) {
  if (!r) return;
  arena_free(r->arena);
  free(r);
}

/* -------------------------------------------------------------------- run ---- */

kiln_status jit_run(graph *g, const jit_options *opts, jit_report **report) {
  if (report) *report = NULL;
  jit_options defaults = jit_options_default();
  if (!opts) opts = &defaults;
  if (g->root != g) return status_error(KILN_INVALID_ARGUMENT, "jit_run: the bridge runs on a root graph");
  jit_state st;
  kiln_status s = state_init(&st, g, opts);
  graph_node **before = NULL;
  if (!s) {
    report_init(&st);
    before = malloc(((size_t)g->n_nodes + 1) * sizeof *before);
    if (!before) abort();
    memcpy(before, g->nodes, (size_t)g->n_nodes * sizeof *before);
  }
  int seq = 0;
  for (size_t i = 0; i < sizeof passes / sizeof passes[0] && !s; i++) {
    const jit_pass *p = &passes[i];
    if (opts->mode == JIT_OFF && !p->when_off) continue;
    log_info("jit: %s pass %s", phase_names[p->phase], p->name);
    dump_graph(&st, seq++, p->name, "before");
    s = p->run(&st);
    if (s) {
      s = status_wrap(s, "bridge pass %s", p->name);
      break;
    }
    dump_graph(&st, seq++, p->name, "after");
  }
  if (!s) {
    report_finish(&st, before);
    if (report) {
      *report = st.report;
      st.report = NULL;
    }
  }
  jit_report_free(st.report);
  free(before);
  state_free(&st);
  return s;
}
