/* Running kiln.Cluster call nodes (graph/cluster_op.h): a whole cluster as one HLO
 * module per signature, with TensorFlow's DeviceCompiler policies.
 *
 * Lowering is op_runner.c's single-op build generalised to a function body: every
 * member is lowered through its op_def.lower into one computation, in topological
 * order, with the same context a single-op module gets -- const_inputs only for the
 * op's must-be-constant inputs -- so a compiled cluster gives the bits op-by-op
 * execution gives. The executor-level ops a cluster may hold (constants, identities,
 * NoOp, variable reads and assignments) are translated here: a variable is a
 * parameter holding its value at entry, reads and writes thread that value through
 * the module, and the final value of every written variable is an extra result that
 * is stored back only after the module ran successfully. A must-be-constant input
 * computed inside the cluster (Reshape's shape from a Shape) is evaluated at compile
 * time when it depends on constants only; one the lowering can also take at run time
 * (OP_RUNTIME_OK_INPUT1: Slice's begin) is a runtime operand otherwise. TF's
 * functional While/If become HLO
 * while/conditional: their functions are lowered node by node like the body, each
 * into a computation of its own taking the operands as one tuple (lower_graph), so
 * control flow nests; what HLO cannot express (a loop variable changing shape, a
 * must-be-constant input computed from loop state that the lowering needs as a
 * constant) is UNIMPLEMENTED.
 *
 * The cache keys on (function, device, values of the constant arguments, dtypes and
 * shapes of the other arguments and of the variables' values). Policies follow
 * TensorFlow's DeviceCompiler: the first execution of a cluster compiles; after that
 * a new signature runs op by op on its first request and compiles on its second
 * (must_compile call nodes compile at once); a cluster that compiled more than
 * MEGAMORPHIC_MIN_COMPILES signatures while executing fewer than
 * MEGAMORPHIC_RUNS_PER_COMPILE times as often is megamorphic and stops compiling new
 * signatures -- except at must_compile call nodes, which, as TF's strict mode, always
 * compile (an explicit compile scope asked for it). A
 * lowering or compile that answers UNIMPLEMENTED makes that signature run op by op
 * for good, with one warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "eval/eval.h"
#include "exec/exec_internal.h"
#include "graph/cluster_op.h"
#include "graph/tensor_source.h"
#include "hlo/builder.h"
#include "hlo/shape.h"
#include "hlo/verifier.h"

/* TensorFlow's kMaxNumberOfCompiles and kMegamorphicThreshold (device_compiler.h). */
#define MEGAMORPHIC_MIN_COMPILES 10
#define MEGAMORPHIC_RUNS_PER_COMPILE 50
/* TensorFlow's kDefaultCompilationThreshold: requests of a new signature before it
 * compiles, once its cluster has compiled something. */
#define LAZY_COMPILE_REQUESTS 2

/* ------------------------------------------------------------ the cache -------- */

typedef enum sig_state {
  SIG_PENDING,  /* seen, not compiled yet (lazy or megamorphic): runs op by op */
  SIG_COMPILED,
  SIG_OP_BY_OP, /* lowering or compile answered UNIMPLEMENTED: always op by op */
} sig_state;

/* Where an entry parameter's value comes from at run time. */
typedef struct param_source {
  int input;        /* call-node input index */
  bool is_resource; /* the input is a variable handle: the parameter is its value */
} param_source;

/* A variable's value kept on a device with memory of its own between runs: uploaded
 * when the variable's host value is not the one last uploaded (the held reference keeps
 * that tensor, and so its address, alive, so pointer identity is a safe test), replaced
 * by the cluster's own result when the cluster writes the variable. */
typedef struct resident_value {
  graph_tensor *value; /* a reference to the host value the buffer holds */
  backend_buffer *buf;
} resident_value;

typedef struct cluster_sig {
  sig_state state;
  int64_t requests;
  const backend *device;
  /* The compiled module's result shape (the module itself is released after the compile:
   * its constants would be a second copy of the weights). Tuple elements are arrays. */
  hlo_shape root_shape;
  backend_executable *exe;
  bool tuple_root;
  int n_params;
  param_source *params;
  int n_results;
  int n_written;
  int *written_inputs; /* call-node input index of each written variable's handle */
  resident_value *resident; /* per parameter (resource parameters only), devices with memory */
} cluster_sig;

typedef struct cluster_info {
  const graph *body;
  int64_t executions, compiles;
  bool megamorphic;
} cluster_info;

struct exec_clusters {
  exec_key_table sigs; /* value: cluster_sig* */
  int n_infos, cap_infos;
  cluster_info *infos;
};

/* Finds the signature of key, adding a pending one (key taken over) when absent. */
static cluster_sig *sig_find_or_add(exec_clusters *c, char *key, size_t len) {
  cluster_sig *sig = exec_key_table_get(&c->sigs, key, len);
  if (sig) {
    free(key);
    return sig;
  }
  sig = calloc(1, sizeof *sig);
  if (!sig) abort();
  exec_key_table_put(&c->sigs, key, len, sig);
  return sig;
}

static void release_resident(cluster_sig *sig) {
  if (!sig->resident) return;
  for (int k = 0; k < sig->n_params; k++) {
    tensor_free(sig->resident[k].value);
    backend_buffer_free(sig->resident[k].buf);
  }
  free(sig->resident);
  sig->resident = NULL;
}

static void sig_release_compiled(cluster_sig *sig) {
  release_resident(sig);
  if (sig->exe) sig->device->destroy(sig->exe);
  sig->exe = NULL;
  free(sig->root_shape.elems);
  sig->root_shape = (hlo_shape){0};
  free(sig->params);
  sig->params = NULL;
  free(sig->written_inputs);
  sig->written_inputs = NULL;
}

static void sig_free(void *p) {
  sig_release_compiled(p);
  free(p);
}

void exec_clusters_free(exec_clusters *c) {
  if (!c) return;
  exec_key_table_free(&c->sigs, sig_free);
  free(c->infos);
  free(c);
}

static cluster_info *info_for(exec_clusters *c, const graph *body) {
  for (int i = 0; i < c->n_infos; i++)
    if (c->infos[i].body == body) return &c->infos[i];
  if (c->n_infos == c->cap_infos) {
    int cap = c->cap_infos ? c->cap_infos * 2 : 8;
    cluster_info *p = realloc(c->infos, (size_t)cap * sizeof *p);
    if (!p) abort();
    c->infos = p;
    c->cap_infos = cap;
  }
  c->infos[c->n_infos] = (cluster_info){.body = body};
  return &c->infos[c->n_infos++];
}

/* ------------------------------------------------------------- key bytes -------- */

/* ------------------------------------------------------------ the call node ----- */

/* What a call node says about its cluster. */
typedef struct cluster_call {
  executor *e;
  const graph_node *node;
  graph *body;
  const char *name; /* the function's */
  int n_constants, n_args, n_resources;
  bool must_compile;
  const backend *device;
  int n_inputs;
  graph_tensor *const *inputs;
  int n_outputs;
  graph_tensor **outputs;
  /* Per resource (index r = input n_constants + n_args + r): the variable, read at
   * entry. value is borrowed and NULL while the variable is uninitialized; alias is
   * the first resource with the same variable (r itself when none). */
  const char **var_names;
  graph_dtype *var_declared;
  const graph_tensor **var_values;
  int *alias;
} cluster_call;

static int resource_input(const cluster_call *cc, int r) { return cc->n_constants + cc->n_args + r; }

static kiln_status read_call(exec_node_ctx *c, cluster_call *cc) {
  const graph_node *n = c->node;
  const graph_attr_value *f = graph_node_attr(n, KILN_CLUSTER_ATTR_FUNCTION);
  if (!f || f->kind != GRAPH_ATTR_FUNC || !f->func.body)
    return ERR_INVALID("attribute %s must name a function of the graph library", KILN_CLUSTER_ATTR_FUNCTION);
  *cc = (cluster_call){.e = c->e, .node = n, .body = f->func.body, .n_inputs = c->n_inputs, .inputs = c->inputs,
                       .n_outputs = c->n_outputs, .outputs = c->outputs};
  cc->name = cc->body->name ? cc->body->name : f->func.name;
  int64_t n_const = graph_node_attr_int_or(n, KILN_CLUSTER_ATTR_N_CONSTANTS, 0);
  int64_t n_res = graph_node_attr_int_or(n, KILN_CLUSTER_ATTR_N_RESOURCES, 0);
  if (n_const < 0 || n_res < 0 || n_const + n_res > c->n_inputs)
    return ERR_INVALID("cluster %s: %s=%lld and %s=%lld do not fit the node's %d inputs", cc->name,
                       KILN_CLUSTER_ATTR_N_CONSTANTS, (long long)n_const, KILN_CLUSTER_ATTR_N_RESOURCES,
                       (long long)n_res, c->n_inputs);
  if (cc->body->n_inputs != c->n_inputs)
    return ERR_INVALID("cluster %s: the function takes %d inputs, the node has %d", cc->name, cc->body->n_inputs,
                       c->n_inputs);
  if (cc->body->n_results != c->n_outputs)
    return ERR_INVALID("cluster %s: the function has %d results, the node %d outputs", cc->name,
                       cc->body->n_results, c->n_outputs);
  cc->n_constants = (int)n_const;
  cc->n_resources = (int)n_res;
  cc->n_args = c->n_inputs - cc->n_constants - cc->n_resources;
  cc->must_compile = graph_node_attr_bool_or(n, KILN_CLUSTER_ATTR_MUST_COMPILE, false);
  /* Placement's convention (as op_runner.c): "host" is the evaluator; no device or one
   * not registered here means the executor's. */
  if (n->assigned_device)
    cc->device = strcmp(n->assigned_device, "host") == 0 ? &interpreter_backend : backend_find(n->assigned_device);
  if (!cc->device) cc->device = c->e->device;
  for (int i = 0; i < c->n_inputs; i++)
    if (!c->inputs[i]) return ERR_INVALID("cluster %s: input %d has no value", cc->name, i);
  return NULL;
}

static void call_free(cluster_call *cc) {
  free(cc->var_names);
  free(cc->var_declared);
  free(cc->var_values);
  free(cc->alias);
}

static kiln_status read_variables(cluster_call *cc) {
  int n = cc->n_resources;
  cc->var_names = calloc((size_t)n + 1, sizeof *cc->var_names);
  cc->var_declared = calloc((size_t)n + 1, sizeof *cc->var_declared);
  cc->var_values = calloc((size_t)n + 1, sizeof *cc->var_values);
  cc->alias = calloc((size_t)n + 1, sizeof *cc->alias);
  if (!cc->var_names || !cc->var_declared || !cc->var_values || !cc->alias) abort();
  for (int r = 0; r < n; r++) {
    const graph_tensor *h = cc->inputs[resource_input(cc, r)];
    TRY(status_wrap(exec_var_lookup(cc->e, h, &cc->var_names[r], &cc->var_declared[r], &cc->var_values[r]),
                    "cluster %s: resource input %d", cc->name, resource_input(cc, r)));
    cc->alias[r] = r;
    for (int q = 0; q < r; q++)
      if (memcmp(cc->inputs[resource_input(cc, q)]->data, h->data, sizeof(uint64_t)) == 0) {
        cc->alias[r] = q;
        break;
      }
  }
  return NULL;
}

/* The signature: everything the compiled module depends on. */
static char *signature_key(const cluster_call *cc, size_t *len) {
  strbuf b;
  strbuf_init(&b);
  exec_key_bytes(&b, &cc->body, sizeof cc->body);
  exec_key_str(&b, cc->name, strlen(cc->name));
  exec_key_bytes(&b, &cc->device, sizeof cc->device);
  exec_key_i64(&b, cc->n_constants);
  exec_key_i64(&b, cc->n_args);
  exec_key_i64(&b, cc->n_resources);
  for (int i = 0; i < cc->n_constants; i++) exec_key_tensor(&b, cc->inputs[i]);
  for (int i = cc->n_constants; i < cc->n_constants + cc->n_args; i++) {
    const graph_tensor *t = cc->inputs[i];
    exec_key_type(&b, t->dtype, t->rank, t->dims);
  }
  for (int r = 0; r < cc->n_resources; r++) {
    const graph_tensor *v = cc->var_values[r];
    if (v) exec_key_type(&b, v->dtype, v->rank, v->dims);
    else exec_key_type(&b, GRAPH_DT_INVALID, -1, NULL);
    exec_key_i64(&b, cc->alias[r]);
  }
  *len = b.len;
  return strbuf_take(&b);
}

/* ------------------------------------------------------------- lowering --------- */

/* A value inside the cluster while it is lowered. */
typedef struct cluster_value {
  bool defined;
  hlo_instr *hlo;            /* NULL for values an HLO module cannot hold */
  graph_dtype dtype;
  const graph_tensor *known; /* compile-time value when there is one (borrowed) */
  int resource;              /* a variable handle: index among the resources; else -1 */
  /* A TensorList (dtype variant) is its buffer, hlo = [length, element...]. A
   * TensorListReserve whose element shape is not fully known has no buffer yet
   * (unshaped: hlo NULL) until the loop that fills it is lowered: list_len and
   * list_dtype say what to build, and list_item is the first item a SetItem put in
   * (its shape is the element shape). */
  bool list_unshaped;
  int64_t list_len;
  graph_dtype list_dtype;
  hlo_instr *list_item;
} cluster_value;

/* A variable's value as the module threads it: entry parameter, then assignments. */
typedef struct variable_state {
  cluster_value current; /* defined == false: uninitialized */
  bool written;
} variable_state;

typedef struct lowering {
  cluster_call *cc;
  cluster_sig *sig;
  hlo_module *m;
  hlo_computation *comp;
  cluster_value **values; /* per body node (by index): one per output */
  variable_state *vars;
  const char **param_what; /* per parameter number: what it holds, for messages */
  int n_params;
  /* While lowering a loop body, condition or branch (comp is then not the entry):
   * what that computation's one parameter holds, for messages; NULL in the entry. */
  const char *state_what;
  /* Tensors the lowering made (evaluated constants, Const values) kept alive until the
   * module is built. */
  int n_owned, cap_owned;
  graph_tensor **owned;
} lowering;

static void own(lowering *lw, graph_tensor *t) {
  if (lw->n_owned == lw->cap_owned) {
    int cap = lw->cap_owned ? lw->cap_owned * 2 : 16;
    graph_tensor **p = realloc(lw->owned, (size_t)cap * sizeof *p);
    if (!p) abort();
    lw->owned = p;
    lw->cap_owned = cap;
  }
  lw->owned[lw->n_owned++] = t;
}

/* An HLO constant of t, or NULL when t's dtype has no HLO form. */
static kiln_status add_parameter(lowering *lw, const graph_tensor *t, param_source src, const char *what,
                                 hlo_instr **out) {
  *out = NULL;
  graph_shape gs = tensor_shape(t);
  hlo_shape hs;
  if (!graph_shape_to_hlo(&gs, t->dtype, &hs)) return NULL;
  int k = lw->n_params++;
  lw->sig->params[k] = src;
  lw->param_what[k] = what;
  lw->sig->n_params = lw->n_params;
  return hlo_build_parameter(lw->comp, k, &hs, NULL, out);
}

/* The value of a must-be-constant input computed inside the cluster: the evaluator
 * runs a scratch computation holding a copy of what `target` depends on (as constant
 * folding does), which must reach no parameter. */
static kiln_status fold_constant(lowering *lw, hlo_instr *target, const graph_node *node, int input,
                                 graph_tensor **out) {
  *out = NULL;
  hlo_computation *c = lw->comp;
  hlo_module *m = lw->m;
  if (target->parent != c) return ERR_INTERNAL("node %s: input %d is not a value of the cluster", node->name, input);
  int n_ids = m->next_id;
  bool *needed = calloc((size_t)n_ids + 1, sizeof *needed);
  hlo_instr **copies = calloc((size_t)n_ids + 1, sizeof *copies);
  if (!needed || !copies) abort();
  needed[target->id] = true;
  kiln_status s = NULL;
  /* Definition order puts operands first, so one backward sweep marks every
   * dependency. */
  for (int i = c->n_instrs - 1; i >= 0 && !s; i--) {
    const hlo_instr *ins = c->instrs[i];
    if (!needed[ins->id]) continue;
    if (ins->op == HLO_OP_PARAMETER) {
      s = ERR_UNIMPLEMENTED("input %d of node %s must be a compile-time constant but depends on runtime value of %s",
                            input, node->name,
                            lw->state_what ? lw->state_what : lw->param_what[ins->parameter_number]);
      break;
    }
    for (int k = 0; k < ins->n_operands; k++) needed[ins->operands[k]->id] = true;
  }
  int n_comps = m->n_comps;
  hlo_computation *scratch = NULL;
  if (!s) scratch = hlo_computation_new(m, "cluster.constant_input");
  for (int i = 0; i < c->n_instrs && !s; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (!needed[ins->id]) continue;
    hlo_instr **ops = calloc((size_t)ins->n_operands + 1, sizeof *ops);
    if (!ops) abort();
    for (int k = 0; k < ins->n_operands; k++) ops[k] = copies[ins->operands[k]->id];
    hlo_instr tmpl = hlo_instr_template_from(ins, ops);
    tmpl.literal = ins->literal ? literal_clone(ins->literal) : NULL;
    s = hlo_build_instr(scratch, &tmpl, &copies[ins->id]);
    free(ops);
  }
  hlo_literal *lit = NULL;
  if (!s) s = hlo_build_set_root(scratch, copies[target->id]);
  if (!s) s = eval_computation(scratch, NULL, 0, &lit);
  m->n_comps = n_comps; /* unlink the scratch computation */
  if (!s) {
    s = tensor_adopt_literal(lit, out);
    if (s) literal_free(lit);
  }
  free(needed);
  free(copies);
  return status_wrap(s, "evaluating input %d of node %s at compile time", input, node->name);
}


static bool message_names_node(kiln_status s, const graph_node *n) {
  const char *msg = kiln_status_message(s);
  size_t len = strlen(n->name);
  return strncmp(msg, "node ", 5) == 0 && strncmp(msg + 5, n->name, len) == 0 && msg[5 + len] == ' ';
}

static kiln_status lower_op(lowering *lw, const graph_node *node, const op_def *def, cluster_value *const *in,
                            cluster_value *out) {
  int n_in = node->n_inputs, n_out = node->n_outputs;
  bool runs_on_host = !def->lower || (def->host && (def->traits & OP_DYNAMIC_SHAPE));
  if (runs_on_host)
    return ERR_UNIMPLEMENTED("node %s (%s) has no lowering (it runs as a host kernel)", node->name, node->op);
  op_lower_args a;
  op_lower_args_init(&a, node);
  hlo_instr **outs = a.outputs;
  kiln_status s = NULL;
  for (int i = 0; i < n_in && !s; i++) {
    const cluster_value *v = in[i];
    a.dtypes[i] = v->dtype;
    if (op_input_must_be_constant(def, i, n_in)) {
      const graph_tensor *t = v->known;
      if (!t && !v->hlo) {
        s = ERR_UNIMPLEMENTED("input %d of node %s must be a compile-time constant but is a %s value", i,
                              node->name, graph_dtype_name(v->dtype));
        break;
      }
      if (!t) {
        graph_tensor *folded = NULL;
        s = fold_constant(lw, v->hlo, node, i, &folded);
        if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED && op_input_runtime_ok(def, i)) {
          /* Known only at run time, and the lowering takes it so (Slice's begin from a
           * loop counter): a runtime operand, not a reason to run op by op. */
          kiln_status_free(s);
          s = NULL;
          a.inputs[i] = v->hlo;
          continue;
        }
        if (s) break;
        own(lw, folded);
        t = folded;
      }
      a.consts[i] = t;
      s = op_constant(lw->comp, t, &a.inputs[i]);
      continue;
    }
    if (!v->hlo)
      s = ERR_UNIMPLEMENTED("input %d of node %s has dtype %s, which an HLO module cannot take", i, node->name,
                            graph_dtype_name(v->dtype));
    a.inputs[i] = v->hlo;
  }
  if (!s) {
    s = op_lower(def, node, lw->comp, &a);
    if (s && !message_names_node(s, node)) s = status_wrap(s, "node %s (%s)", node->name, node->op);
  }
  for (int k = 0; k < n_out && !s; k++) {
    if (!outs[k]) continue; /* an output the op did not produce: a consumer fails */
    out[k] = (cluster_value){.defined = true, .hlo = outs[k], .dtype = graph_dtype_from_hlo(outs[k]->shape.type),
                             .resource = -1};
  }
  op_lower_args_free(&a);
  return s;
}

static graph_dtype attr_type_or(const graph_node *n, const char *name, graph_dtype dflt) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_TYPE ? v->type : dflt;
}

static kiln_status handle_of(lowering *lw, const graph_node *node, cluster_value *const *in, variable_state **var,
                             const char **name) {
  if (node->n_inputs < 1) return ERR_INVALID("node %s (%s) needs a variable handle input", node->name, node->op);
  int r = in[0]->resource;
  if (r < 0)
    return ERR_UNIMPLEMENTED("node %s (%s) uses a handle that is not a resource argument of the cluster", node->name,
                             node->op);
  r = lw->cc->alias[r];
  *var = &lw->vars[r];
  *name = lw->cc->var_names[r];
  return NULL;
}

static kiln_status lower_read(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out) {
  variable_state *v = NULL;
  const char *name = NULL;
  TRY(handle_of(lw, node, in, &v, &name));
  if (!v->current.defined) return ERR_INVALID("variable %s is read before it was assigned a value", name);
  graph_dtype want = attr_type_or(node, "dtype", v->current.dtype);
  if (want != v->current.dtype)
    return ERR_INVALID("variable %s holds %s, read as %s", name, graph_dtype_name(v->current.dtype),
                       graph_dtype_name(want));
  if (!v->current.hlo)
    return ERR_UNIMPLEMENTED("variable %s holds %s values, which an HLO module cannot take", name,
                             graph_dtype_name(v->current.dtype));
  if (node->n_outputs > 0) out[0] = v->current;
  return NULL;
}

static kiln_status need_value_input(const graph_node *node, cluster_value *const *in) {
  if (node->n_inputs < 2) return ERR_INVALID("node %s (%s) needs (handle, value) inputs", node->name, node->op);
  if (!in[1]->hlo)
    return ERR_UNIMPLEMENTED("input 1 of node %s has dtype %s, which an HLO module cannot take", node->name,
                             graph_dtype_name(in[1]->dtype));
  return NULL;
}

static kiln_status lower_assign(lowering *lw, const graph_node *node, cluster_value *const *in) {
  variable_state *v = NULL;
  const char *name = NULL;
  TRY(handle_of(lw, node, in, &v, &name));
  TRY(need_value_input(node, in));
  graph_dtype declared = lw->cc->var_declared[lw->cc->alias[in[0]->resource]];
  if (declared != GRAPH_DT_INVALID && in[1]->dtype != declared)
    return ERR_INVALID("variable %s holds %s, assigned a %s tensor", name, graph_dtype_name(declared),
                       graph_dtype_name(in[1]->dtype));
  v->current = *in[1];
  v->current.known = NULL;
  v->current.resource = -1;
  v->written = true;
  return NULL;
}

static void print_hlo_type(strbuf *b, graph_dtype dtype, const hlo_instr *x) {
  strbuf_printf(b, "%s[", graph_dtype_name(dtype));
  for (int i = 0; i < x->shape.rank; i++) strbuf_printf(b, "%s%lld", i ? "," : "", (long long)x->shape.dims[i]);
  strbuf_putc(b, ']');
}

/* "f32[2,3]" for messages (malloc'ed). */
static char *type_string(graph_dtype dtype, const hlo_instr *x) {
  strbuf b;
  strbuf_init(&b);
  print_hlo_type(&b, dtype, x);
  return strbuf_take(&b);
}

/* The executor's assign_update computes old +/- x exactly in double and rounds once
 * (floats) or wraps (integers); HLO add/subtract in the element type give the same
 * bits for every type that update accepts. */
static kiln_status lower_assign_update(lowering *lw, const graph_node *node, cluster_value *const *in, int sign) {
  variable_state *v = NULL;
  const char *name = NULL;
  TRY(handle_of(lw, node, in, &v, &name));
  TRY(need_value_input(node, in));
  if (!v->current.defined) return ERR_INVALID("variable %s is updated before it was assigned a value", name);
  const cluster_value *old = &v->current, *x = in[1];
  if (!old->hlo)
    return ERR_UNIMPLEMENTED("variable %s holds %s values, which an HLO module cannot take", name,
                             graph_dtype_name(old->dtype));
  bool same = old->dtype == x->dtype && old->hlo->shape.rank == x->hlo->shape.rank;
  for (int i = 0; same && i < x->hlo->shape.rank; i++) same = old->hlo->shape.dims[i] == x->hlo->shape.dims[i];
  if (!same) {
    strbuf b;
    strbuf_init(&b);
    print_hlo_type(&b, old->dtype, old->hlo);
    strbuf_append(&b, " with ");
    print_hlo_type(&b, x->dtype, x->hlo);
    kiln_status s = ERR_INVALID("variable %s: cannot update %s", name, strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  if (!graph_dtype_is_float(x->dtype) && !graph_dtype_is_int(x->dtype))
    return ERR_UNIMPLEMENTED("variable %s: cannot add %s values", name, graph_dtype_name(x->dtype));
  hlo_instr *sum;
  TRY(hlo_build_binary(lw->comp, sign > 0 ? HLO_OP_ADD : HLO_OP_SUBTRACT, old->hlo, x->hlo, &sum));
  v->current = (cluster_value){.defined = true, .hlo = sum, .dtype = x->dtype, .resource = -1};
  v->written = true;
  return NULL;
}

/* A weight the module borrows from a Const that can be read back from its model file
 * (tensor_source.h): once the compile has packed it, the graph's copy is dropped, unless
 * someone besides the graph and this lowering holds the tensor. */
typedef struct weight_lender {
  literal_owner base;
  lowering *lw;
  graph_tensor *t;
} weight_lender;

static void weight_unneeded(literal_owner *o) {
  weight_lender *w = (weight_lender *)o;
  int held = 0; /* the references this lowering holds (own) */
  for (int i = 0; i < w->lw->n_owned; i++) held += w->lw->owned[i] == w->t;
  tensor_drop_data(w->t, held);
}

static kiln_status lower_const(lowering *lw, const graph_node *node, cluster_value *out) {
  graph_tensor *t[1] = {NULL};
  exec_node_ctx c = {lw->cc->e, node, 0, NULL, 1, t};
  kiln_status s = exec_native_const(&c);
  if (s) return status_wrap(s, "node %s (%s)", node->name, node->op);
  if (!t[0]) return NULL; /* a constant without outputs */
  own(lw, t[0]);
  hlo_instr *k;
  hlo_literal view;
  if (t[0]->source && tensor_literal_view(t[0], &view)) {
    weight_lender *w = arena_calloc(lw->m->arena, 1, sizeof *w);
    *w = (weight_lender){.base = {.unneeded = weight_unneeded}, .lw = lw, .t = t[0]};
    TRY(hlo_build_constant(lw->comp, literal_borrow_owned(&view.shape, t[0]->data, &w->base), &k));
  } else {
    TRY(op_constant_borrowed(lw->comp, t[0], &k)); /* t[0] outlives the module (compile_signature) */
  }
  if (node->n_outputs > 0)
    out[0] = (cluster_value){.defined = true, .hlo = k, .dtype = t[0]->dtype, .known = t[0], .resource = -1};
  return NULL;
}

static kiln_status lower_while(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out);
static kiln_status lower_if(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out);

/* A must-be-constant operand of an executor-native op (a TensorList's element shape
 * or length): its compile-time value, folded when computed inside the cluster. */
static kiln_status native_constant(lowering *lw, const graph_node *node, cluster_value *const *in, int i,
                                   const graph_tensor **out) {
  if (i >= node->n_inputs) return ERR_INVALID("node %s (%s) needs input %d", node->name, node->op, i);
  *out = in[i]->known;
  if (*out) return NULL;
  if (!in[i]->hlo)
    return ERR_UNIMPLEMENTED("input %d of node %s must be a compile-time constant but is a %s value", i, node->name,
                             graph_dtype_name(in[i]->dtype));
  graph_tensor *folded = NULL;
  TRY(fold_constant(lw, in[i]->hlo, node, i, &folded));
  own(lw, folded);
  *out = folded;
  return NULL;
}

/* The buffer of a list value, refusing what the lowering cannot hold as one. */
static kiln_status list_buffer(const graph_node *node, const cluster_value *v, hlo_instr **out) {
  if (v->list_unshaped)
    return ERR_UNIMPLEMENTED("node %s (%s) reads a TensorList whose element shape is not known yet", node->name,
                             node->op);
  if (!v->hlo || v->dtype != GRAPH_DT_VARIANT || v->hlo->shape.rank < 1)
    return ERR_UNIMPLEMENTED("node %s (%s): input 0 is not a TensorList made inside the cluster", node->name,
                             node->op);
  *out = v->hlo;
  return NULL;
}

/* A zero-filled buffer [len, element dims] of type t. */
static kiln_status zero_buffer(hlo_computation *c, hlo_type t, int64_t len, int rank, const int64_t *dims,
                               hlo_instr **out) {
  int64_t bd[HLO_MAX_RANK];
  if (rank + 1 > HLO_MAX_RANK) return ERR_UNIMPLEMENTED("a TensorList of rank-%d elements is too deep", rank);
  bd[0] = len;
  for (int i = 0; i < rank; i++) bd[1 + i] = dims[i];
  hlo_instr *zero = NULL;
  TRY(hlo_build_constant_scalar(c, t, 0, &zero));
  return hlo_build_broadcast(c, zero, rank + 1, bd, NULL, out);
}

/* TensorListReserve: a zero buffer when the element shape is fully known, else an
 * unshaped list that the While filling it resolves (lower_while). */
static kiln_status lower_tl_reserve(lowering *lw, const graph_node *node, cluster_value *const *in,
                                    cluster_value *out) {
  const graph_tensor *shape = NULL, *len = NULL;
  TRY(native_constant(lw, node, in, 0, &shape));
  TRY(native_constant(lw, node, in, 1, &len));
  graph_dtype dt = attr_type_or(node, "element_dtype", GRAPH_DT_INVALID);
  hlo_type t;
  if (!graph_dtype_to_hlo(dt, &t))
    return ERR_UNIMPLEMENTED("node %s (%s): element_dtype %s has no HLO form", node->name, node->op,
                             graph_dtype_name(dt));
  if (len->n != 1 || !graph_dtype_is_int(len->dtype) || tensor_get_s64(len, 0) < 0)
    return ERR_UNIMPLEMENTED("node %s (%s): num_elements must be one non-negative integer", node->name, node->op);
  out[0] = (cluster_value){.defined = true, .dtype = GRAPH_DT_VARIANT, .resource = -1, .list_unshaped = true,
                           .list_len = tensor_get_s64(len, 0), .list_dtype = dt};
  if (shape->rank != 1 || !graph_dtype_is_int(shape->dtype) || shape->n > HLO_MAX_RANK) return NULL;
  int64_t dims[HLO_MAX_RANK];
  for (int64_t i = 0; i < shape->n; i++)
    if ((dims[i] = tensor_get_s64(shape, i)) < 0) return NULL;
  out[0].list_unshaped = false;
  return zero_buffer(lw->comp, t, out[0].list_len, (int)shape->n, dims, &out[0].hlo);
}

/* TensorListFromTensor: the tensor itself is the buffer. */
static kiln_status lower_tl_from_tensor(const graph_node *node, cluster_value *const *in, cluster_value *out) {
  if (node->n_inputs < 1 || !in[0]->hlo || in[0]->dtype == GRAPH_DT_VARIANT || in[0]->hlo->shape.rank < 1)
    return ERR_UNIMPLEMENTED("node %s (%s) needs an HLO tensor of rank >= 1", node->name, node->op);
  out[0] = (cluster_value){.defined = true, .hlo = in[0]->hlo, .dtype = GRAPH_DT_VARIANT, .resource = -1};
  return NULL;
}

/* The start indices [index, 0, ...] of an element of buffer buf. An empty list has
 * no element to address (the executor reports the index then; the module could not
 * even be built), so it is refused. */
static kiln_status element_starts(hlo_computation *c, const graph_node *node, const hlo_instr *buf,
                                  const cluster_value *index, hlo_instr **starts) {
  int rank = buf->shape.rank;
  if (buf->shape.dims[0] < 1)
    return ERR_UNIMPLEMENTED("node %s (%s) addresses an item of an empty TensorList", node->name, node->op);
  if (!index->hlo || index->hlo->shape.rank != 0 || !graph_dtype_is_int(index->dtype))
    return ERR_UNIMPLEMENTED("node %s (%s): the index must be an integer scalar", node->name, node->op);
  starts[0] = index->hlo;
  if (index->hlo->shape.type != HLO_S32) TRY(hlo_build_convert(c, index->hlo, HLO_S32, &starts[0]));
  for (int i = 1; i < rank; i++) TRY(hlo_build_constant_scalar(c, HLO_S32, 0, &starts[i]));
  return NULL;
}

/* TensorListGetItem: a dynamic slice of the buffer. */
static kiln_status lower_tl_get_item(lowering *lw, const graph_node *node, cluster_value *const *in,
                                     cluster_value *out) {
  if (node->n_inputs < 2) return ERR_INVALID("node %s (%s) needs (list, index) inputs", node->name, node->op);
  hlo_instr *buf = NULL;
  TRY(list_buffer(node, in[0], &buf));
  int rank = buf->shape.rank;
  hlo_instr *starts[HLO_MAX_RANK];
  TRY(element_starts(lw->comp, node, buf, in[1], starts));
  int64_t sizes[HLO_MAX_RANK];
  sizes[0] = 1;
  for (int i = 1; i < rank; i++) sizes[i] = buf->shape.dims[i];
  hlo_instr *slice = NULL, *item = NULL;
  TRY(hlo_build_dynamic_slice(lw->comp, buf, starts, sizes, &slice));
  TRY(hlo_build_reshape(lw->comp, slice, rank - 1, buf->shape.dims + 1, &item));
  out[0] = (cluster_value){.defined = true, .hlo = item, .dtype = graph_dtype_from_hlo(item->shape.type),
                           .resource = -1};
  return NULL;
}

/* TensorListSetItem: a dynamic update slice of the buffer; on an unshaped list it only
 * records the item, whose shape the enclosing loop then gives the buffer. */
static kiln_status lower_tl_set_item(lowering *lw, const graph_node *node, cluster_value *const *in,
                                     cluster_value *out) {
  if (node->n_inputs < 3) return ERR_INVALID("node %s (%s) needs (list, index, item) inputs", node->name, node->op);
  const cluster_value *item = in[2];
  if (!item->hlo || item->dtype == GRAPH_DT_VARIANT)
    return ERR_UNIMPLEMENTED("node %s (%s): the item is not an HLO tensor", node->name, node->op);
  if (in[0]->list_unshaped) {
    if (item->dtype != in[0]->list_dtype ||
        (in[0]->list_item && !shape_compatible(&in[0]->list_item->shape, &item->hlo->shape)))
      return ERR_UNIMPLEMENTED("node %s (%s) sets items of different types into one TensorList", node->name,
                               node->op);
    out[0] = *in[0];
    out[0].list_item = item->hlo;
    return NULL;
  }
  hlo_instr *buf = NULL;
  TRY(list_buffer(node, in[0], &buf));
  int rank = buf->shape.rank;
  bool fits = item->hlo->shape.type == buf->shape.type && item->hlo->shape.rank == rank - 1;
  for (int i = 1; fits && i < rank; i++) fits = item->hlo->shape.dims[i - 1] == buf->shape.dims[i];
  if (!fits) {
    char *a = type_string(item->dtype, item->hlo);
    kiln_status s = ERR_UNIMPLEMENTED("node %s (%s): a %s item does not fit the TensorList's elements", node->name,
                                      node->op, a);
    free(a);
    return s;
  }
  hlo_instr *starts[HLO_MAX_RANK];
  TRY(element_starts(lw->comp, node, buf, in[1], starts));
  int64_t dims[HLO_MAX_RANK];
  dims[0] = 1;
  for (int i = 1; i < rank; i++) dims[i] = buf->shape.dims[i];
  hlo_instr *update = NULL, *next = NULL;
  TRY(hlo_build_reshape(lw->comp, item->hlo, rank, dims, &update));
  TRY(hlo_build_dynamic_update_slice(lw->comp, buf, update, starts, &next));
  out[0] = (cluster_value){.defined = true, .hlo = next, .dtype = GRAPH_DT_VARIANT, .resource = -1};
  return NULL;
}

/* TensorListStack: the buffer is the stacked tensor. */
static kiln_status lower_tl_stack(const graph_node *node, cluster_value *const *in, cluster_value *out) {
  if (node->n_inputs < 1) return ERR_INVALID("node %s (%s) needs a list input", node->name, node->op);
  hlo_instr *buf = NULL;
  TRY(list_buffer(node, in[0], &buf));
  int64_t n = graph_node_attr_int_or(node, "num_elements", -1);
  if (n >= 0 && n != buf->shape.dims[0])
    return ERR_UNIMPLEMENTED("node %s (%s): num_elements %lld, but the list holds %lld", node->name, node->op,
                             (long long)n, (long long)buf->shape.dims[0]);
  out[0] = (cluster_value){.defined = true, .hlo = buf, .dtype = graph_dtype_from_hlo(buf->shape.type),
                           .resource = -1};
  return NULL;
}

/* The executor-native ops a cluster may contain; NULL for the others. */

static kiln_status lower_node(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out) {
  const exec_native *nat = exec_native_of(node);
  if (nat) {
    if (nat->fn == exec_native_const) return lower_const(lw, node, out);
    if (nat->fn == exec_native_identity) {
      int n = node->n_inputs < node->n_outputs ? node->n_inputs : node->n_outputs;
      for (int i = 0; i < n; i++) out[i] = *in[i];
      return NULL;
    }
    if (nat->fn == exec_native_noop) return NULL;
    if (nat->fn == exec_var_read) return lower_read(lw, node, in, out);
    if (nat->fn == exec_var_assign) return lower_assign(lw, node, in);
    if (nat->fn == exec_var_assign_add) return lower_assign_update(lw, node, in, 1);
    if (nat->fn == exec_var_assign_sub) return lower_assign_update(lw, node, in, -1);
    if (nat->fn == exec_tl_reserve) return lower_tl_reserve(lw, node, in, out);
    if (nat->fn == exec_tl_from_tensor) return lower_tl_from_tensor(node, in, out);
    if (nat->fn == exec_tl_get_item) return lower_tl_get_item(lw, node, in, out);
    if (nat->fn == exec_tl_set_item) return lower_tl_set_item(lw, node, in, out);
    if (nat->fn == exec_tl_stack) return lower_tl_stack(node, in, out);
    if (nat->fn == exec_tf_while) return lower_while(lw, node, in, out);
    if (nat->fn == exec_tf_if) return lower_if(lw, node, in, out);
    return ERR_UNIMPLEMENTED("node %s (%s) has no lowering (the executor interprets it)", node->name, node->op);
  }
  const op_def *def = op_find(node->op);
  if (!def) return ERR_UNIMPLEMENTED("node %s (%s) has no lowering", node->name, node->op);
  return lower_op(lw, node, def, in, out);
}

/* Entry values: constants as HLO constants, args and variables as parameters. */
static kiln_status lower_arguments(lowering *lw) {
  cluster_call *cc = lw->cc;
  graph *body = cc->body;
  for (int i = 0; i < cc->n_inputs; i++) {
    const graph_node *in_node = body->inputs[i];
    cluster_value *v = &lw->values[in_node->index][0];
    const graph_tensor *t = cc->inputs[i];
    *v = (cluster_value){.defined = true, .dtype = t->dtype, .resource = -1};
    if (i < cc->n_constants) {
      v->known = t;
      TRY(op_constant_borrowed(lw->comp, t, &v->hlo)); /* the call's inputs outlive the module */
    } else if (i < cc->n_constants + cc->n_args) {
      const char *what = arena_printf(lw->m->arena, "argument %s", in_node->name);
      TRY(add_parameter(lw, t, (param_source){i, false}, what, &v->hlo));
    } else {
      v->resource = i - cc->n_constants - cc->n_args;
    }
  }
  for (int r = 0; r < cc->n_resources; r++) {
    if (cc->alias[r] != r) continue;
    const graph_tensor *value = cc->var_values[r];
    if (!value) continue;
    cluster_value *cur = &lw->vars[r].current;
    *cur = (cluster_value){.defined = true, .dtype = value->dtype, .resource = -1};
    const char *what = arena_printf(lw->m->arena, "variable %s", cc->var_names[r]);
    TRY(add_parameter(lw, value, (param_source){resource_input(cc, r), true}, what, &cur->hlo));
  }
  return NULL;
}

/* Lowers every node of g, in topological order, into lw->comp; the values of g's
 * inputs must already be in lw->values. Shared by the cluster body and the function
 * bodies of While/If nodes (lower_graph), so nested control flow lowers recursively. */
static kiln_status lower_nodes(lowering *lw, const graph *g) {
  graph_node **order = NULL;
  int n_order = 0;
  TRY(graph_topo_order(g, &order, &n_order));
  kiln_status s = NULL;
  int max_in = 1;
  for (int i = 0; i < n_order; i++)
    if (order[i]->n_inputs > max_in) max_in = order[i]->n_inputs;
  cluster_value **in = calloc((size_t)max_in, sizeof *in);
  if (!in) abort();
  for (int i = 0; i < n_order && !s; i++) {
    graph_node *node = order[i];
    if (node->is_input || strcmp(node->op, GRAPH_OP_INPUT) == 0) continue;
    for (int k = 0; k < node->n_inputs && !s; k++) {
      const graph_edge *edge = &node->inputs[k];
      cluster_value *v = &lw->values[edge->node->index][edge->port];
      if (!v->defined)
        s = ERR_INVALID("input %d of node %s (%s) comes from %s:%d, which produced no value", k, node->name,
                        node->op, edge->node->name, edge->port);
      in[k] = v;
    }
    if (!s) s = lower_node(lw, node, in, lw->values[node->index]);
  }
  free(in);
  free(order);
  return s;
}

static kiln_status lower_body(lowering *lw) { return lower_nodes(lw, lw->cc->body); }

/* Elements up to which a function argument's known value is a constant in its body. */
#define KNOWN_AS_CONSTANT_MAX 64

/* Lowers function g (a While's cond/body, an If's branch) into comp, whose parameter 0
 * is the tuple `state` (described by `what` in messages): g's input i is element i and
 * takes the dtype and compile-time value of outer[i] (an If's operands keep theirs; so
 * do a loop's invariant variables, the others are passed without). results[] receives g's
 * results, which must be HLO values -- or, in a probe (shape_loop_lists), unshaped
 * TensorLists too. Values inside g are g's own, so the caller's are saved and restored. */
static kiln_status lower_graph(lowering *lw, const graph *g, hlo_computation *comp, const hlo_shape *state,
                               const char *what, const cluster_value *const *outer, bool probe,
                               cluster_value *results) {
  hlo_computation *saved_comp = lw->comp;
  cluster_value **saved_values = lw->values;
  const char *saved_what = lw->state_what;
  lw->comp = comp;
  lw->state_what = what;
  lw->values = calloc((size_t)g->n_nodes + 1, sizeof *lw->values);
  if (!lw->values) abort();
  for (int i = 0; i < g->n_nodes; i++) {
    lw->values[i] = calloc((size_t)g->nodes[i]->n_outputs + 1, sizeof *lw->values[i]);
    if (!lw->values[i]) abort();
  }
  hlo_instr *param = NULL;
  kiln_status s = hlo_build_parameter(comp, 0, state, NULL, &param);
  for (int i = 0; i < g->n_inputs && !s; i++) {
    cluster_value *v = &lw->values[g->inputs[i]->index][0];
    *v = (cluster_value){.defined = true, .dtype = outer[i]->dtype, .known = outer[i]->known, .resource = -1,
                         .list_unshaped = outer[i]->list_unshaped, .list_len = outer[i]->list_len,
                         .list_dtype = outer[i]->list_dtype};
    if (v->list_unshaped) continue;
    /* A small known value is a constant inside too, so what is computed from it (a
     * Slice size from a loop's tile size) folds at compile time; the state keeps the
     * element all the same. Large ones (weights) stay tuple elements: one copy. */
    if (v->known && v->known->n <= KNOWN_AS_CONSTANT_MAX) s = op_constant(comp, v->known, &v->hlo);
    if (!s && !v->hlo) s = hlo_build_get_tuple_element(comp, param, i, &v->hlo);
  }
  if (!s) s = lower_nodes(lw, g);
  for (int r = 0; r < g->n_results && !s; r++) {
    const graph_result *res = &g->results[r];
    results[r] = lw->values[res->node->index][res->port];
    if (!results[r].defined)
      s = ERR_INVALID("result %d (%s) comes from %s:%d, which produced no value", r, res->name, res->node->name,
                      res->port);
    else if (!results[r].hlo && !(probe && results[r].list_unshaped))
      s = ERR_UNIMPLEMENTED("result %d (%s) is a %s value, which an HLO module cannot return", r, res->name,
                            graph_dtype_name(results[r].dtype));
  }
  for (int i = 0; i < g->n_nodes; i++) free(lw->values[i]);
  free(lw->values);
  lw->values = saved_values;
  lw->comp = saved_comp;
  lw->state_what = saved_what;
  return s;
}

/* The operands of a While/If as one tuple (the HLO while's state, the conditional's
 * branch argument); each must be an HLO value -- a variable handle or a string is not. */
static kiln_status operand_tuple(lowering *lw, const graph_node *node, int first, cluster_value *const *in,
                                 hlo_instr **out) {
  int n = node->n_inputs - first;
  hlo_instr **elems = calloc((size_t)n + 1, sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n && !s; i++) {
    const cluster_value *v = in[first + i];
    if (v->resource >= 0)
      s = ERR_UNIMPLEMENTED("node %s (%s): input %d is a variable handle; variables are not compiled inside "
                            "function bodies",
                            node->name, node->op, first + i);
    else if (!v->hlo)
      s = ERR_UNIMPLEMENTED("node %s (%s): input %d is a %s value, which an HLO module cannot carry", node->name,
                            node->op, first + i, graph_dtype_name(v->dtype));
    elems[i] = v->hlo;
  }
  if (!s) s = hlo_build_tuple(lw->comp, n, elems, out);
  free(elems);
  return s;
}

static kiln_status function_of(const graph_node *node, const char *attr, graph **out) {
  const graph_attr_value *v = graph_node_attr(node, attr);
  if (!v || v->kind != GRAPH_ATTR_FUNC || !v->func.body)
    return ERR_INVALID("node %s (%s): attribute %s must name a function of the graph library", node->name, node->op,
                       attr);
  *out = v->func.body;
  return NULL;
}

/* Refuses a result that does not match what the While/If promises its users: HLO needs
 * one fixed type per loop variable and per conditional output. */
static kiln_status same_type(const graph_node *node, const char *what, int i, const cluster_value *want,
                             const cluster_value *got) {
  if (want->dtype == got->dtype && shape_compatible(&want->hlo->shape, &got->hlo->shape)) return NULL;
  char *a = type_string(want->dtype, want->hlo), *b = type_string(got->dtype, got->hlo);
  kiln_status s = ERR_UNIMPLEMENTED("node %s (%s): %s %d changes from %s to %s; HLO control flow needs fixed shapes",
                                    node->name, node->op, what, i, a, b);
  free(a);
  free(b);
  return s;
}

/* The outputs of a While/If: elements of its tuple result. */
static kiln_status untuple(lowering *lw, const graph_node *node, hlo_instr *tuple, const cluster_value *types,
                           cluster_value *out) {
  for (int i = 0; i < node->n_outputs; i++) {
    out[i] = (cluster_value){.defined = true, .dtype = types[i].dtype, .resource = -1};
    TRY(hlo_build_get_tuple_element(lw->comp, tuple, i, &out[i].hlo));
  }
  return NULL;
}

/* Gives each unshaped TensorList among a While's loop variables (vars, updated in
 * place) its buffer, as TF's XLA bridge does for uninitialized lists: the body is
 * lowered once into a scratch computation, dropped afterwards, with those variables
 * unshaped, and the item the body sets into each fixes its element shape. */
static kiln_status shape_loop_lists(lowering *lw, const graph_node *node, const graph *body_f, const char *what,
                                    cluster_value *vars) {
  int n = node->n_inputs;
  bool any = false;
  for (int i = 0; i < n; i++) any = any || vars[i].list_unshaped;
  if (!any) return NULL;
  hlo_module *m = lw->m;
  hlo_shape *elems = calloc((size_t)n + 1, sizeof *elems);
  cluster_value *res = calloc((size_t)n + 1, sizeof *res);
  const cluster_value **outer = calloc((size_t)n + 1, sizeof *outer);
  if (!elems || !res || !outer) abort();
  for (int i = 0; i < n; i++) {
    /* a value without an HLO form gets a placeholder: operand_tuple refuses it later */
    elems[i] = vars[i].hlo ? vars[i].hlo->shape : shape_scalar(HLO_S32);
    outer[i] = &vars[i];
  }
  hlo_shape state = shape_tuple(m->arena, n, elems);
  int n_comps = m->n_comps;
  hlo_computation *scratch = hlo_computation_new(m, "while_probe");
  kiln_status s = lower_graph(lw, body_f, scratch, &state, what, outer, true, res);
  m->n_comps = n_comps; /* unlink the scratch computation and whatever it nested */
  for (int i = 0; i < n && !s; i++) {
    if (!vars[i].list_unshaped) continue;
    const hlo_instr *item = res[i].list_unshaped ? res[i].list_item : NULL;
    if (!item) {
      s = ERR_UNIMPLEMENTED("node %s (%s): loop variable %d is a TensorList of unknown element shape that the body "
                            "does not set an item of",
                            node->name, node->op, i);
      break;
    }
    s = zero_buffer(lw->comp, item->shape.type, vars[i].list_len, item->shape.rank, item->shape.dims, &vars[i].hlo);
    vars[i].list_unshaped = false;
  }
  free(elems);
  free(res);
  free(outer);
  return s;
}

/* Integer values of a few elements: what a must-be-constant input (sizes, axes, counts)
 * is made of, and cheap to evaluate while compiling. */
static bool small_int_value(const hlo_instr *x) {
  return shape_is_array(&x->shape) && hlo_type_is_int(x->shape.type) && shape_elements(&x->shape) <= 64;
}

/* Gives v (input i of node) its compile-time value when it is a small integer computed
 * from constants and shapes alone (a tile count, a dimension): what a function body
 * may need as a must-be-constant input. A value that depends on runtime data stays
 * unknown; only a failure to evaluate is an error. */
static kiln_status learn_value(lowering *lw, const graph_node *node, int i, cluster_value *v) {
  if (v->known || !v->hlo || !small_int_value(v->hlo)) return NULL;
  graph_tensor *folded = NULL;
  kiln_status s = fold_constant(lw, v->hlo, node, i, &folded);
  if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED) {
    kiln_status_free(s);
    return NULL;
  }
  if (s) return s;
  own(lw, folded);
  v->known = folded;
  return NULL;
}

/* Whether the body's result i is its input i unchanged (directly or through
 * identities): a loop variable the loop never changes. TF passes captured tensors
 * (non_max_suppression_padded's tile size) into a while as such variables. */
static bool loop_invariant(const graph *body, int i) {
  const graph_node *n = body->results[i].node;
  int port = body->results[i].port;
  for (int hops = 0; hops < 64; hops++) {
    if (n == body->inputs[i] && port == 0) return true;
    const exec_native *nat = exec_native_of(n);
    if (!nat || nat->fn != exec_native_identity || port >= n->n_inputs) return false;
    const graph_edge *e = &n->inputs[port];
    n = e->node;
    port = e->port;
  }
  return false;
}

/* TF's While/StatelessWhile as an HLO while: the state is the tuple of the loop
 * variables, the condition and body computations are the cond/body functions lowered
 * like the cluster body. A variable the body passes through unchanged keeps its
 * compile-time value inside cond and body when it has one (tf2xla resolves such
 * loop-invariant constants too), so a must-be-constant input computed from it -- a
 * Slice size from the captured tile size -- still compiles. A body that changes a
 * variable's type or shape, or a condition that is not a scalar bool, is
 * UNIMPLEMENTED: the cluster runs op by op. */
static kiln_status lower_while(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out) {
  graph *cond_f = NULL, *body_f = NULL;
  TRY(function_of(node, "cond", &cond_f));
  TRY(function_of(node, "body", &body_f));
  int n = node->n_inputs;
  if (cond_f->n_inputs != n || body_f->n_inputs != n || body_f->n_results != n || cond_f->n_results < 1 ||
      node->n_outputs > n)
    return ERR_INVALID("node %s (%s): %d loop variables and %d outputs, but cond takes %d inputs and body %d "
                       "inputs and %d results",
                       node->name, node->op, n, node->n_outputs, cond_f->n_inputs, body_f->n_inputs,
                       body_f->n_results);
  hlo_module *m = lw->m;
  const char *what = arena_printf(m->arena, "the loop state of node %s", node->name);
  cluster_value *vars = calloc((size_t)n + 1, sizeof *vars);
  cluster_value *res = calloc((size_t)(n > cond_f->n_results ? n : cond_f->n_results) + 1, sizeof *res);
  cluster_value **outer = calloc((size_t)n + 1, sizeof *outer);
  if (!vars || !res || !outer) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n && !s; i++) {
    bool invariant = loop_invariant(body_f, i);
    if (invariant) s = learn_value(lw, node, i, in[i]);
    vars[i] = *in[i];
    if (!invariant) vars[i].known = NULL;
    vars[i].list_item = NULL;
    outer[i] = &vars[i];
  }
  hlo_instr *init = NULL;
  if (!s) s = shape_loop_lists(lw, node, body_f, what, vars);
  if (!s) s = operand_tuple(lw, node, 0, outer, &init);
  hlo_computation *cond_c = NULL, *body_c = NULL;
  if (!s) {
    cond_c = hlo_computation_new(m, arena_printf(m->arena, "while_cond.%d", m->n_comps));
    body_c = hlo_computation_new(m, arena_printf(m->arena, "while_body.%d", m->n_comps));
    s = lower_graph(lw, body_f, body_c, &init->shape, what, (const cluster_value *const *)outer, false, res);
  }
  for (int i = 0; i < n && !s; i++) s = same_type(node, "loop variable", i, &vars[i], &res[i]);
  hlo_instr **elems = calloc((size_t)n + 1, sizeof *elems);
  if (!elems) abort();
  for (int i = 0; i < n && !s; i++) elems[i] = res[i].hlo;
  hlo_instr *root = NULL;
  if (!s) s = hlo_build_tuple(body_c, n, elems, &root);
  if (!s) s = hlo_build_set_root(body_c, root);
  free(elems);
  if (!s) s = lower_graph(lw, cond_f, cond_c, &init->shape, what, (const cluster_value *const *)outer, false, res);
  if (!s && (res[0].dtype != GRAPH_DT_BOOL || res[0].hlo->shape.rank != 0)) {
    char *t = type_string(res[0].dtype, res[0].hlo);
    s = ERR_UNIMPLEMENTED("node %s (%s): the condition gives %s; only a scalar bool is compiled", node->name,
                          node->op, t);
    free(t);
  }
  if (!s) s = hlo_build_set_root(cond_c, res[0].hlo);
  hlo_instr *loop = NULL;
  if (!s) s = hlo_build_while(lw->comp, cond_c, body_c, init, &loop);
  if (!s) s = untuple(lw, node, loop, vars, out);
  free(vars);
  free(res);
  free(outer);
  return s;
}

/* TF's If/StatelessIf as an HLO conditional on a pred (a non-bool scalar condition
 * is compared with zero, TF's ToBool); both branches take the tuple of the other
 * operands, which keep their compile-time values inside. The branches must give the
 * same types, which HLO needs and TF does not: otherwise UNIMPLEMENTED. */
static kiln_status lower_if(lowering *lw, const graph_node *node, cluster_value *const *in, cluster_value *out) {
  graph *fs[2] = {NULL, NULL};
  TRY(function_of(node, "then_branch", &fs[0]));
  TRY(function_of(node, "else_branch", &fs[1]));
  int n = node->n_inputs - 1;
  if (n < 0) return ERR_INVALID("node %s (%s) needs a condition input", node->name, node->op);
  for (int b = 0; b < 2; b++)
    if (fs[b]->n_inputs != n || fs[b]->n_results < node->n_outputs)
      return ERR_INVALID("node %s (%s): %d operands and %d outputs, but %s takes %d inputs and gives %d results",
                         node->name, node->op, n, node->n_outputs, b ? "else_branch" : "then_branch",
                         fs[b]->n_inputs, fs[b]->n_results);
  const cluster_value *c = in[0];
  if (!c->hlo || c->hlo->shape.rank != 0 || !(c->dtype == GRAPH_DT_BOOL || graph_dtype_is_float(c->dtype) ||
                                              graph_dtype_is_int(c->dtype)))
    return ERR_UNIMPLEMENTED("node %s (%s): the condition is not a numeric or bool scalar", node->name, node->op);
  hlo_instr *pred = c->hlo;
  if (c->dtype != GRAPH_DT_BOOL) {
    hlo_instr *zero = NULL;
    TRY(hlo_build_constant_scalar(lw->comp, c->hlo->shape.type, 0, &zero));
    TRY(hlo_build_compare(lw->comp, HLO_DIR_NE, c->hlo, zero, &pred));
  }
  for (int i = 1; i <= n; i++) TRY(learn_value(lw, node, i, in[i]));
  hlo_instr *args = NULL;
  TRY(operand_tuple(lw, node, 1, in, &args));
  hlo_module *m = lw->m;
  const char *what = arena_printf(m->arena, "the operands of node %s", node->name);
  hlo_computation *comps[2];
  cluster_value *res[2];
  for (int b = 0; b < 2; b++) {
    comps[b] = hlo_computation_new(m, arena_printf(m->arena, "%s.%d", b ? "if_else" : "if_then", m->n_comps));
    res[b] = calloc((size_t)fs[b]->n_results + 1, sizeof *res[b]);
    if (!res[b]) abort();
  }
  hlo_instr **elems = calloc((size_t)node->n_outputs + 1, sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int b = 0; b < 2 && !s; b++) {
    s = lower_graph(lw, fs[b], comps[b], &args->shape, what, (const cluster_value *const *)in + 1, false, res[b]);
    for (int i = 0; i < node->n_outputs && !s; i++) {
      if (b) s = same_type(node, "output", i, &res[0][i], &res[1][i]);
      elems[i] = res[b][i].hlo;
    }
    hlo_instr *root = NULL;
    if (!s) s = hlo_build_tuple(comps[b], node->n_outputs, elems, &root);
    if (!s) s = hlo_build_set_root(comps[b], root);
  }
  hlo_instr *cond = NULL;
  if (!s) s = hlo_build_conditional(lw->comp, pred, 2, comps, (hlo_instr *const[]){args, args}, &cond);
  if (!s) s = untuple(lw, node, cond, res[0], out);
  free(elems);
  free(res[0]);
  free(res[1]);
  return s;
}

static kiln_status lower_root(lowering *lw) {
  cluster_call *cc = lw->cc;
  graph *body = cc->body;
  cluster_sig *sig = lw->sig;
  int n_res = body->n_results;
  hlo_instr **elems = calloc((size_t)(n_res + cc->n_resources) + 1, sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int r = 0; r < n_res && !s; r++) {
    const graph_result *res = &body->results[r];
    const cluster_value *v = &lw->values[res->node->index][res->port];
    if (!v->defined)
      s = ERR_INVALID("result %d (%s) comes from %s:%d, which produced no value", r, res->name, res->node->name,
                      res->port);
    else if (!v->hlo || v->dtype == GRAPH_DT_VARIANT)
      s = ERR_UNIMPLEMENTED("result %d (%s) is a %s value, which an HLO module cannot return", r, res->name,
                            graph_dtype_name(v->dtype));
    else elems[r] = v->hlo;
  }
  sig->n_results = n_res;
  sig->written_inputs = calloc((size_t)cc->n_resources + 1, sizeof *sig->written_inputs);
  if (!sig->written_inputs) abort();
  int k = n_res;
  for (int r = 0; r < cc->n_resources && !s; r++) {
    if (!lw->vars[r].written) continue;
    sig->written_inputs[sig->n_written++] = resource_input(cc, r);
    elems[k++] = lw->vars[r].current.hlo;
  }
  hlo_instr *root = NULL;
  if (!s) {
    if (k == 1 && sig->n_written == 0) {
      root = elems[0];
    } else {
      sig->tuple_root = true;
      s = hlo_build_tuple(lw->comp, k, elems, &root);
    }
  }
  if (!s) s = hlo_build_set_root(lw->comp, root);
  free(elems);
  return s;
}

static char *file_safe(const char *name) {
  char *s = strdup(name);
  if (!s) abort();
  for (char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
          *p == '-' || *p == '.'))
      *p = '_';
  return s;
}

static void dump_module(executor *e, const cluster_call *cc, const hlo_module *m) {
  char *safe = file_safe(cc->name);
  strbuf file, header;
  strbuf_init(&file);
  strbuf_init(&header);
  strbuf_printf(&file, "cluster_%04lld.%s.hlo", (long long)e->stats.cluster_compiles, safe);
  strbuf_printf(&header, "cluster %s (node %s) for device %s", cc->name, cc->node->name, cc->device->name);
  exec_dump_module(e, m, strbuf_cstr(&file), strbuf_cstr(&header));
  strbuf_free(&file);
  strbuf_free(&header);
  free(safe);
}

/* Builds and compiles the module of the call's signature into sig. */
static kiln_status compile_signature(cluster_call *cc, cluster_sig *sig) {
  executor *e = cc->e;
  graph *body = cc->body;
  char *module_name = file_safe(cc->name);
  lowering lw = {.cc = cc, .sig = sig};
  lw.m = hlo_module_new(module_name);
  free(module_name);
  lw.comp = hlo_computation_new(lw.m, "main");
  lw.values = calloc((size_t)body->n_nodes + 1, sizeof *lw.values);
  lw.vars = calloc((size_t)cc->n_resources + 1, sizeof *lw.vars);
  lw.param_what = calloc((size_t)cc->n_inputs + 1, sizeof *lw.param_what);
  sig->params = calloc((size_t)cc->n_inputs + 1, sizeof *sig->params);
  if (!lw.values || !lw.vars || !lw.param_what || !sig->params) abort();
  for (int i = 0; i < body->n_nodes; i++) {
    lw.values[i] = calloc((size_t)body->nodes[i]->n_outputs + 1, sizeof *lw.values[i]);
    if (!lw.values[i]) abort();
  }
  kiln_status s = NULL;
  for (int r = 0; r < cc->n_resources && !s; r++)
    if (cc->alias[r] != r)
      s = ERR_UNIMPLEMENTED("resource inputs %d and %d are the same variable %s", resource_input(cc, cc->alias[r]),
                            resource_input(cc, r), cc->var_names[r]);
  if (!s) s = lower_arguments(&lw);
  if (!s) s = lower_body(&lw);
  if (!s) s = lower_root(&lw);
  if (!s) {
    hlo_build_set_entry(lw.m, lw.comp);
    s = hlo_build_order_computations(lw.m);
  }
  if (!s && e->dump_dir) dump_module(e, cc, lw.m);
  if (!s) s = status_wrap(hlo_verify_module(lw.m), "the lowering built an invalid module");
  if (!s) {
    sig->device = cc->device;
    const hlo_shape *root = &lw.m->entry->root->shape;
    sig->root_shape = *root;
    sig->root_shape.layout_extra = NULL;
    sig->root_shape.elems = NULL;
    if (shape_is_tuple(root)) {
      sig->root_shape.elems = malloc((size_t)root->n_elems * sizeof *root->elems + 1);
      if (!sig->root_shape.elems) abort();
      for (int i = 0; i < root->n_elems; i++) {
        sig->root_shape.elems[i] = root->elems[i];
        sig->root_shape.elems[i].layout_extra = NULL;
      }
    }
    s = cc->device->compile(cc->device, lw.m, &e->compile, &sig->exe);
    if (s) s = status_wrap(s, "compiling for device %s", cc->device->name);
    else {
      e->stats.evaluated_instructions += backend_evaluated_instructions(cc->device, sig->exe);
      e->stats.bytes_to_device += backend_resident_bytes(cc->device, sig->exe);
    }
  }
  hlo_module_free(lw.m);
  for (int i = 0; i < body->n_nodes; i++) free(lw.values[i]);
  free(lw.values);
  free(lw.vars);
  free(lw.param_what);
  for (int i = 0; i < lw.n_owned; i++) tensor_free(lw.owned[i]);
  free(lw.owned);
  if (s) {
    sig_release_compiled(sig);
    *sig = (cluster_sig){.state = sig->state, .requests = sig->requests};
  }
  return s;
}

/* --------------------------------------------------------------- running -------- */

/* The parameter reading the variable behind call-node input `input`, or -1. */
static int resource_param(const cluster_sig *sig, int input) {
  for (int k = 0; k < sig->n_params; k++)
    if (sig->params[k].is_resource && sig->params[k].input == input) return k;
  return -1;
}

/* run_compiled on a device with memory of its own: inputs cross to the device each run,
 * variables only when their host value changed since they last crossed, results come
 * back. A variable the cluster writes keeps the cluster's result buffer as its resident
 * copy, and its old resident copy is donated (the update may happen in place). */
static kiln_status run_on_device(cluster_call *cc, cluster_sig *sig) {
  executor *e = cc->e;
  backend_transfers tx = {0, 0};
  if (!sig->resident) {
    sig->resident = calloc((size_t)sig->n_params + 1, sizeof *sig->resident);
    if (!sig->resident) abort();
  }
  int n_out = sig->n_results + sig->n_written;
  backend_buffer **args = calloc((size_t)sig->n_params + 1, sizeof *args);
  bool *donated = calloc((size_t)sig->n_params + 1, sizeof *donated);
  bool *temp = calloc((size_t)sig->n_params + 1, sizeof *temp);
  graph_tensor **got = calloc((size_t)n_out + 1, sizeof *got);
  if (!args || !donated || !temp || !got) abort();
  kiln_status s = NULL;
  for (int k = 0; k < sig->n_params && !s; k++) {
    const param_source *src = &sig->params[k];
    const graph_tensor *t = cc->inputs[src->input];
    hlo_literal view;
    if (!src->is_resource) {
      tensor_literal_view(t, &view); /* the signature fixed an HLO dtype */
      s = backend_buffer_upload(sig->device, &view, &tx, &args[k]);
      temp[k] = donated[k] = true; /* the device copy is ours alone */
      continue;
    }
    graph_tensor *held = NULL;
    s = exec_var_read_value(e, t, &held);
    if (s) break;
    resident_value *r = &sig->resident[k];
    if (r->buf && r->value == held && !r->buf->consumed) {
      tensor_free(held);
    } else {
      tensor_free(r->value);
      backend_buffer_free(r->buf);
      r->value = held;
      r->buf = NULL;
      tensor_literal_view(held, &view);
      s = backend_buffer_upload(sig->device, &view, &tx, &r->buf);
    }
    args[k] = r->buf;
  }
  /* A written variable's old value is no longer needed on the device once the run
   * succeeds; offering it lets the device update the variable in place. */
  for (int w = 0; w < sig->n_written && !s; w++) {
    int k = resource_param(sig, sig->written_inputs[w]);
    if (k >= 0) donated[k] = true;
  }
  backend_buffer **res = NULL;
  int n_res = 0;
  if (!s)
    s = backend_execute_buffers(sig->device, sig->exe, &sig->root_shape, args, sig->n_params,
                                donated, &res, &n_res);
  if (!s && n_res != n_out) s = ERR_INTERNAL("the device returned %d results, expected %d", n_res, n_out);
  for (int j = 0; j < n_res && !s; j++) {
    hlo_literal *lit = NULL;
    s = backend_buffer_download(res[j], &tx, &lit);
    if (!s) {
      s = tensor_adopt_literal(lit, &got[j]);
      if (s) literal_free(lit);
    }
  }
  for (int k = 0; k < sig->n_params; k++) {
    if (temp[k]) backend_buffer_free(args[k]);
    else if (sig->resident[k].buf && sig->resident[k].buf->consumed) {
      /* Donated and taken: the old copy is gone whatever happens next. */
      backend_buffer_free(sig->resident[k].buf);
      sig->resident[k].buf = NULL;
      tensor_free(sig->resident[k].value);
      sig->resident[k].value = NULL;
    }
  }
  for (int r = 0; r < sig->n_results && !s; r++) {
    cc->outputs[r] = got[r];
    got[r] = NULL;
  }
  /* Variables change only when the whole cluster ran. */
  for (int w = 0; w < sig->n_written && !s; w++) {
    const graph_tensor *handle = cc->inputs[sig->written_inputs[w]];
    s = exec_var_write_value(e, handle, got[sig->n_results + w]);
    got[sig->n_results + w] = NULL;
    int k = resource_param(sig, sig->written_inputs[w]);
    if (s || k < 0) continue;
    /* The result buffer now mirrors the variable's new host value. */
    graph_tensor *now = NULL;
    s = exec_var_read_value(e, handle, &now);
    if (s) break;
    tensor_free(sig->resident[k].value);
    backend_buffer_free(sig->resident[k].buf);
    sig->resident[k].value = now;
    sig->resident[k].buf = res[sig->n_results + w];
    res[sig->n_results + w] = NULL;
  }
  for (int j = 0; j < n_res; j++) backend_buffer_free(res[j]);
  free(res);
  for (int j = 0; j < n_out; j++) tensor_free(got[j]);
  free(got);
  free(args);
  free(donated);
  free(temp);
  e->stats.bytes_to_device += tx.to_device;
  e->stats.bytes_to_host += tx.to_host;
  if (s)
    for (int r = 0; r < cc->n_outputs; r++) {
      tensor_free(cc->outputs[r]);
      cc->outputs[r] = NULL;
    }
  return s;
}

static kiln_status run_compiled(cluster_call *cc, cluster_sig *sig) {
  executor *e = cc->e;
  if (backend_has_device_memory(sig->device)) return run_on_device(cc, sig);
  hlo_literal *views = calloc((size_t)sig->n_params + 1, sizeof *views);
  hlo_literal **args = calloc((size_t)sig->n_params + 1, sizeof *args);
  graph_tensor **held = calloc((size_t)sig->n_params + 1, sizeof *held);
  graph_tensor **written = calloc((size_t)sig->n_written + 1, sizeof *written);
  if (!views || !args || !held || !written) abort();
  kiln_status s = NULL;
  for (int k = 0; k < sig->n_params && !s; k++) {
    const param_source *src = &sig->params[k];
    const graph_tensor *t = cc->inputs[src->input];
    if (src->is_resource) {
      s = exec_var_read_value(e, t, &held[k]);
      t = held[k];
    }
    if (!s) tensor_literal_view(t, &views[k]); /* the signature fixed an HLO dtype */
    args[k] = &views[k];
  }
  hlo_literal *res = NULL;
  if (!s) s = sig->device->execute(sig->exe, args, sig->n_params, &res);
  for (int k = 0; k < sig->n_params; k++) tensor_free(held[k]);
  free(views);
  free(args);
  free(held);
  if (!s && !sig->tuple_root) {
    s = tensor_adopt_literal(res, &cc->outputs[0]);
    if (s) literal_free(res);
    res = NULL;
  }
  if (!s && sig->tuple_root) {
    if (res->shape.type != HLO_TUPLE || res->shape.n_elems != sig->n_results + sig->n_written)
      s = ERR_INTERNAL("the device returned a result of the wrong structure");
    for (int j = 0; j < sig->n_results + sig->n_written && !s; j++) {
      graph_tensor **dst = j < sig->n_results ? &cc->outputs[j] : &written[j - sig->n_results];
      s = tensor_adopt_literal(res->tuple[j], dst);
      if (!s) res->tuple[j] = NULL;
    }
  }
  literal_free(res);
  /* Variables change only when the whole cluster ran. */
  for (int w = 0; w < sig->n_written && !s; w++) {
    s = exec_var_write_value(e, cc->inputs[sig->written_inputs[w]], written[w]);
    written[w] = NULL;
  }
  for (int w = 0; w < sig->n_written; w++) tensor_free(written[w]);
  free(written);
  if (s)
    for (int r = 0; r < cc->n_outputs; r++) {
      tensor_free(cc->outputs[r]);
      cc->outputs[r] = NULL;
    }
  return s;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* TensorFlow's policy (DeviceCompiler::ShouldCompileCluster), on a signature that has
 * not compiled. */
static bool should_compile(const cluster_call *cc, cluster_info *info, const cluster_sig *sig) {
  if (cc->must_compile) return true; /* TF's strict mode: megamorphism does not apply */
  if (info->megamorphic) return false;
  if (info->compiles == 0) return true;
  return sig->requests >= LAZY_COMPILE_REQUESTS;
}

static kiln_status run_cluster(cluster_call *cc) {
  executor *e = cc->e;
  if (!e->clusters) {
    e->clusters = calloc(1, sizeof *e->clusters);
    if (!e->clusters) abort();
  }
  cluster_info *info = info_for(e->clusters, cc->body);
  info->executions++;
  if (!info->megamorphic && info->compiles > MEGAMORPHIC_MIN_COMPILES &&
      info->executions < MEGAMORPHIC_RUNS_PER_COMPILE * info->compiles) {
    info->megamorphic = true;
    log_info("cluster %s is megamorphic (%lld signatures compiled in %lld executions): new signatures run op by op",
             cc->name, (long long)info->compiles, (long long)info->executions);
  }
  e->stats.cluster_runs++;
  TRY(read_variables(cc));
  size_t len;
  char *key = signature_key(cc, &len);
  cluster_sig *sig = sig_find_or_add(e->clusters, key, len);
  if (sig->state == SIG_COMPILED) {
    e->stats.cluster_cache_hits++;
    return status_wrap(run_compiled(cc, sig), "cluster %s on device %s", cc->name, sig->device->name);
  }
  if (sig->state == SIG_PENDING) {
    sig->requests++;
    if (should_compile(cc, info, sig)) {
      double start = now_ms();
      kiln_status s = compile_signature(cc, sig);
      e->stats.cluster_compile_ms += now_ms() - start;
      if (!s) {
        sig->state = SIG_COMPILED;
        info->compiles++;
        e->stats.cluster_compiles++;
        return status_wrap(run_compiled(cc, sig), "cluster %s on device %s", cc->name, sig->device->name);
      }
      if (kiln_status_code(s) != KILN_UNIMPLEMENTED)
        return status_wrap(s, "cluster %s on device %s", cc->name, cc->device->name);
      log_warning("cluster %s cannot be compiled for device %s (%s); running it op by op", cc->name,
                  cc->device->name, kiln_status_message(s));
      kiln_status_free(s);
      sig->state = SIG_OP_BY_OP;
    }
  }
  e->stats.cluster_fallback_runs++;
  return status_wrap(exec_call_function(e, cc->body, cc->n_inputs, cc->inputs, cc->n_outputs, cc->outputs),
                     "cluster %s (op by op)", cc->name);
}

kiln_status exec_cluster(exec_node_ctx *c) {
  cluster_call cc;
  TRY(read_call(c, &cc));
  kiln_status s = run_cluster(&cc);
  call_free(&cc);
  return s;
}
