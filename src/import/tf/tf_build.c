/* The builder shared by both TensorFlow readers: neutral NodeDefs and FunctionDefs
 * (tf_def.h) -> a kiln graph of framework "tf". It applies TensorFlow's graph rules
 * once: nodes first and edges second (a GraphDef may name an input before defining
 * it, and loops must), "node:port" and "^control" input names, the
 * "node:out_arg:index" naming of function bodies, Placeholders as graph inputs,
 * function references resolved against the library, and results -- the signature's
 * when there is one, otherwise every node nothing consumes, as TF's own tools guess
 * the outputs of a frozen graph. */
#include <stdlib.h>
#include <string.h>

#include "import/tf/tf_def.h"

/* ---- op output arguments ----
 * For ops with several output arguments, each a single tensor: their names in order,
 * so that a function body's "node:arg:i" finds its port. */
typedef struct tf_op_outputs {
  const char *op;
  const char *const *args;
} tf_op_outputs;

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
static const tf_op_outputs multi_output_ops[] = {
    {"ApproxTopK", ARGS("values", "indices")},
    {"BlockLSTM", ARGS("i", "cs", "f", "o", "ci", "co", "h")},
    {"BlockLSTMV2", ARGS("i", "cs", "f", "o", "ci", "co", "h")},
    {"BroadcastGradientArgs", ARGS("r0", "r1")},
    {"CTCGreedyDecoder", ARGS("decoded_indices", "decoded_values", "decoded_shape", "log_probability")},
    {"CombinedNonMaxSuppression", ARGS("nmsed_boxes", "nmsed_scores", "nmsed_classes", "valid_detections")},
    {"Eig", ARGS("e", "v")},
    {"FusedBatchNorm", ARGS("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")},
    {"FusedBatchNormV2", ARGS("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")},
    {"FusedBatchNormV3",
     ARGS("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3")},
    {"GRUBlockCell", ARGS("r", "u", "c", "h")},
    {"LSTMBlockCell", ARGS("i", "cs", "f", "o", "ci", "co", "h")},
    {"ListDiff", ARGS("out", "idx")},
    {"LogMatrixDeterminant", ARGS("sign", "log_abs_determinant")},
    {"Lu", ARGS("lu", "p")},
    {"MaxPoolWithArgmax", ARGS("output", "argmax")},
    {"Merge", ARGS("output", "value_index")},
    {"NonMaxSuppressionV4", ARGS("selected_indices", "valid_outputs")},
    {"NonMaxSuppressionV5", ARGS("selected_indices", "selected_scores", "valid_outputs")},
    {"Qr", ARGS("q", "r")},
    {"QuantizeV2", ARGS("output", "output_min", "output_max")},
    {"RefMerge", ARGS("output", "value_index")},
    {"RefSwitch", ARGS("output_false", "output_true")},
    {"SelfAdjointEigV2", ARGS("e", "v")},
    {"SparseReshape", ARGS("output_indices", "output_shape")},
    {"StringSplit", ARGS("indices", "values", "shape")},
    {"StringSplitV2", ARGS("indices", "values", "shape")},
    {"Svd", ARGS("s", "u", "v")},
    {"Switch", ARGS("output_false", "output_true")},
    {"TensorArrayConcatV3", ARGS("value", "lengths")},
    {"TensorArrayGradV3", ARGS("grad_handle", "flow_out")},
    {"TensorArrayGradWithShape", ARGS("grad_handle", "flow_out")},
    {"TensorArrayV3", ARGS("handle", "flow")},
    {"TensorListConcat", ARGS("tensor", "lengths")},
    {"TensorListConcatV2", ARGS("tensor", "lengths")},
    {"TensorListPopBack", ARGS("output_handle", "tensor")},
    {"TopK", ARGS("values", "indices")},
    {"TopKV2", ARGS("values", "indices")},
    {"Unique", ARGS("y", "idx")},
    {"UniqueV2", ARGS("y", "idx")},
    {"UniqueWithCounts", ARGS("y", "idx", "count")},
    {"UniqueWithCountsV2", ARGS("y", "idx", "count")},
    {"_FusedBatchNormEx",
     ARGS("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3")},
};
#undef ARGS

/* Ops with one list-valued output whose length an attribute gives: an int, or the
 * length of a list of types. */
static const struct {
  const char *op, *attr;
} list_output_ops[] = {
    {"Case", "Tout"},          {"DynamicPartition", "num_partitions"}, {"IdentityN", "T"},
    {"If", "Tout"},            {"PartitionedCall", "Tout"},             {"ShapeN", "N"},
    {"Split", "num_split"},    {"SplitV", "num_split"},                 {"StatefulPartitionedCall", "Tout"},
    {"StatelessCase", "Tout"}, {"StatelessIf", "Tout"},                 {"StatelessWhile", "T"},
    {"Unpack", "num"},         {"While", "T"},
};

static int op_outputs_cmp(const void *key, const void *elem) {
  return strcmp(key, ((const tf_op_outputs *)elem)->op);
}

static const tf_op_outputs *find_multi_output(const char *op) {
  return bsearch(op, multi_output_ops, sizeof multi_output_ops / sizeof multi_output_ops[0], sizeof multi_output_ops[0],
                 op_outputs_cmp);
}

/* How many outputs the op certainly has (0: nothing known beyond what edges show). */
static int known_output_count(const graph_node *n) {
  const char *op = graph_node_op_base(n);
  const tf_op_outputs *m = find_multi_output(op);
  if (m) {
    int k = 0;
    while (m->args[k]) k++;
    return k;
  }
  for (size_t i = 0; i < sizeof list_output_ops / sizeof list_output_ops[0]; i++) {
    if (strcmp(list_output_ops[i].op, op)) continue;
    const graph_attr_value *v = graph_node_attr(n, list_output_ops[i].attr);
    if (!v) return 0;
    if (v->kind == GRAPH_ATTR_INT) return v->i > 0 && v->i <= GRAPH_MAX_OUTPUTS ? (int)v->i : 0;
    if (v->kind == GRAPH_ATTR_LIST) return v->list.n;
    return 0;
  }
  return 0;
}

/* ---- the library index: function name -> its definition ---- */

typedef struct fn_entry {
  const char *name;
  const tf_function_def *def;
} fn_entry;

typedef struct build_state {
  tf_ctx *c;
  const tf_graph_def *def;
  fn_entry *fns; /* sorted by name */
  int n_fns;
  int64_t extra_outputs; /* output slots grown beyond one per node, all bodies together */
} build_state;

/* Every output slot of a node costs a graph_output_info (about 140 bytes), and a port
 * number is cheap to write ("n:65535"), so the slots a file may make beyond the first
 * of each node are bounded (262144: far beyond any real model, at most ~37 MB). */
enum { EXTRA_OUTPUTS_LIMIT = 1 << 18 };

static kiln_status charge_outputs(build_state *b, const graph_node *n, int64_t want) {
  if (want <= n->n_outputs) return NULL;
  b->extra_outputs += want - n->n_outputs;
  if (b->extra_outputs > EXTRA_OUTPUTS_LIMIT)
    return status_error(KILN_RESOURCE_EXHAUSTED,
                        "the graph uses more than %d output ports beyond the first of each node",
                        EXTRA_OUTPUTS_LIMIT);
  return NULL;
}

static int fn_entry_cmp(const void *a, const void *b) {
  return strcmp(((const fn_entry *)a)->name, ((const fn_entry *)b)->name);
}

static const tf_function_def *find_function_def(const build_state *b, const char *name) {
  fn_entry key = {name, NULL};
  if (!b->n_fns) return NULL;
  const fn_entry *e = bsearch(&key, b->fns, (size_t)b->n_fns, sizeof *b->fns, fn_entry_cmp);
  return e ? e->def : NULL;
}

/* ---- attributes ---- */

/* Deeper than any file can nest (protobuf and JSON readers both limit nesting). */
enum { RESOLVE_DEPTH_LIMIT = 1024 };

static kiln_status resolve_funcs(graph *root, graph_attr_value *v, int depth) {
  if (depth > RESOLVE_DEPTH_LIMIT) return ERR_INVALID("attribute nests too deeply");
  if (v->kind == GRAPH_ATTR_FUNC) {
    graph *f = graph_find_function(root, v->func.name);
    if (!f) return ERR_INVALID("names function '%s', which the library does not define", v->func.name);
    v->func.body = f;
    for (int i = 0; i < v->func.n_attrs; i++) TRY(resolve_funcs(root, &v->func.attrs[i].value, depth + 1));
  } else if (v->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < v->list.n; i++) TRY(resolve_funcs(root, &v->list.items[i], depth + 1));
  }
  return NULL;
}

/* ---- nodes ---- */

static bool is_placeholder_op(const char *op) { return !strcmp(op, "Placeholder") || !strcmp(op, "PlaceholderV2"); }

static bool has_data_inputs(const tf_node_def *nd) {
  for (int i = 0; i < nd->n_inputs; i++)
    if (nd->inputs[i][0] != '^') return true;
  return false;
}

static const graph_attr_value *def_attr(const tf_node_def *nd, const char *name) {
  const graph_attr_value *v = NULL;
  for (int i = 0; i < nd->n_attrs; i++)
    if (!strcmp(nd->attrs[i].name, name)) v = &nd->attrs[i].value; /* the last one wins */
  return v;
}

static kiln_status make_node(build_state *b, graph *g, tf_node_def *nd, bool in_function, graph_node **out) {
  tf_ctx *c = b->c;
  graph_node *n;
  if (!in_function && is_placeholder_op(nd->op) && !has_data_inputs(nd)) {
    const graph_attr_value *dt = def_attr(nd, "dtype"), *sh = def_attr(nd, "shape");
    graph_shape shape = sh && sh->kind == GRAPH_ATTR_SHAPE ? *sh->shape : graph_shape_unknown();
    TRY(graph_add_input(g, nd->name, dt && dt->kind == GRAPH_ATTR_TYPE ? dt->type : GRAPH_DT_INVALID, &shape, &n));
  } else {
    /* The namespace is written out so an op name with a '.' still lands in "tf". */
    TRY(graph_add_node(g, nd->name, arena_printf(c->scratch, "tf.%s", nd->op), &n));
    for (int i = 0; i < nd->n_attrs; i++) {
      graph_attr *a = &nd->attrs[i];
      kiln_status s = resolve_funcs(g->root, &a->value, 0);
      if (s) return status_wrap(s, "attribute '%s'", a->name);
      graph_node_set_attr(n, a->name, &a->value);
    }
    const graph_attr_value *value = graph_node_attr(n, "value");
    if (!strcmp(nd->op, "Const") && value && value->kind == GRAPH_ATTR_TENSOR) {
      graph_shape shape = tensor_shape(value->tensor);
      graph_node_set_output(n, 0, value->tensor->dtype, &shape);
    }
    const tf_function_def *called = find_function_def(b, nd->op);
    int k = called ? called->n_out : known_output_count(n);
    if (k > n->n_outputs) {
      TRY(charge_outputs(b, n, k));
      TRY(graph_node_set_num_outputs(n, k));
    }
  }
  if (nd->device && *nd->device) graph_node_set_requested_device(n, nd->device);
  *out = n;
  return NULL;
}

/* Port of output argument `arg` element `index` of node src (function-body naming). */
static kiln_status output_arg_port(const build_state *b, const graph_node *src, const char *arg, int index,
                                   int *port) {
  const char *op = graph_node_op_base(src);
  int base = 0;
  const tf_function_def *fd = find_function_def(b, op);
  const tf_op_outputs *m = fd ? NULL : find_multi_output(op);
  if (fd) {
    int k = 0;
    while (k < fd->n_out && strcmp(fd->out[k].name, arg)) k++;
    if (k == fd->n_out) return ERR_INVALID("function '%s' has no output '%s'", op, arg);
    if (index != 0) return ERR_INVALID("output '%s' of function '%s' is a single tensor, not a list", arg, op);
    base = k;
  } else if (m) {
    int k = 0;
    while (m->args[k] && strcmp(m->args[k], arg)) k++;
    if (!m->args[k]) return ERR_INVALID("op %s has no output '%s'", op, arg);
    if (index != 0) return ERR_INVALID("output '%s' of op %s is a single tensor, not a list", arg, op);
    base = k;
  }
  /* Any other op has one output argument (possibly a list): the index is the port. */
  if ((int64_t)base + index >= GRAPH_MAX_OUTPUTS) return ERR_INVALID("output index %d is too large", index);
  *port = base + index;
  return NULL;
}

static bool parse_index(const char *s, int *out) {
  if (!*s) return false;
  long v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
    if (v >= GRAPH_MAX_OUTPUTS) return false;
  }
  *out = (int)v;
  return true;
}

/* Resolves a data input name to (node, port): GraphDef style "node" / "node:port", or
 * in a function body also "node:out_arg:index". */
static kiln_status resolve_input(const build_state *b, graph *g, const char *in, bool in_function, graph_node **src,
                                 int *port) {
  arena *a = b->c->scratch;
  const char *c1 = strchr(in, ':');
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (c2 && (!in_function || strchr(c2 + 1, ':'))) return ERR_INVALID("malformed input name '%s'", in);
  const char *name = c1 ? arena_strndup(a, in, (size_t)(c1 - in)) : in;
  *src = graph_find_node(g, name);
  if (!*src) return ERR_INVALID("input '%s' names no node of the %s", in, in_function ? "function" : "graph");
  if (!c1) {
    *port = 0;
    return NULL;
  }
  if (!c2) {
    if (!parse_index(c1 + 1, port)) return ERR_INVALID("malformed input name '%s'", in);
    return NULL;
  }
  int index;
  if (!parse_index(c2 + 1, &index)) return ERR_INVALID("malformed input name '%s'", in);
  const char *arg = arena_strndup(a, c1 + 1, (size_t)(c2 - c1 - 1));
  kiln_status s = output_arg_port(b, *src, arg, index, port);
  return s ? status_wrap(s, "input '%s'", in) : NULL;
}

static kiln_status add_inputs(build_state *b, graph *g, const tf_node_def *nd, graph_node *dst, bool in_function) {
  for (int i = 0; i < nd->n_inputs; i++) {
    const char *in = nd->inputs[i];
    if (in[0] == '^') {
      graph_node *src = graph_find_node(g, in + 1);
      if (!src) return ERR_INVALID("control input '%s' names no node", in);
      if (dst->is_input) continue; /* a fed placeholder waits for nothing */
      TRY(graph_add_control_edge(src, dst));
      continue;
    }
    graph_node *src;
    int port;
    TRY(resolve_input(b, g, in, in_function, &src, &port));
    TRY(charge_outputs(b, src, (int64_t)port + 1));
    TRY(graph_add_edge(src, port, dst));
  }
  return NULL;
}

static kiln_status check_names(const tf_node_def *nd, int index) {
  if (!nd->name || !*nd->name) return ERR_INVALID("node %d has no name", index);
  if (!nd->op || !*nd->op) return ERR_INVALID("node %d ('%s') has no op", index, nd->name);
  return NULL;
}

/* Adds the nodes and then the edges of one body (the root graph or a function). */
static kiln_status build_body(build_state *b, graph *g, tf_node_def *const *nodes, int n_nodes, bool in_function) {
  graph_node **made = calloc(n_nodes ? (size_t)n_nodes : 1, sizeof *made);
  if (!made) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n_nodes && !s; i++) {
    s = check_names(nodes[i], i);
    if (!s) {
      s = make_node(b, g, nodes[i], in_function, &made[i]);
      if (s) s = status_wrap(s, "node '%s' (%s)", nodes[i]->name, nodes[i]->op);
    }
  }
  for (int i = 0; i < n_nodes && !s; i++) {
    s = add_inputs(b, g, nodes[i], made[i], in_function);
    if (s) s = status_wrap(s, "node '%s' (%s)", nodes[i]->name, nodes[i]->op);
  }
  free(made);
  return s;
}

/* ---- functions ---- */

static kiln_status build_function(build_state *b, graph *f, const tf_function_def *fd) {
  for (int i = 0; i < fd->n_in; i++) {
    const tf_arg_def *a = &fd->in[i];
    if (!*a->name) return ERR_INVALID("input argument %d has no name", i);
    if (a->is_list)
      return status_error(KILN_UNIMPLEMENTED, "input argument '%s' is a list (number_attr/type_list_attr)", a->name);
    graph_node *n;
    graph_shape unknown = graph_shape_unknown();
    TRY(graph_add_input(f, a->name, graph_dtype_from_tf(a->type), &unknown, &n));
  }
  for (int i = 0; i < fd->n_out; i++)
    if (fd->out[i].is_list)
      return status_error(KILN_UNIMPLEMENTED, "output argument '%s' is a list (number_attr/type_list_attr)",
                          fd->out[i].name);
  TRY(build_body(b, f, fd->nodes, fd->n_nodes, true));
  for (int i = 0; i < fd->n_out; i++) {
    const char *arg = fd->out[i].name;
    const char *value = NULL;
    for (int k = 0; k < fd->n_ret; k++)
      if (!strcmp(fd->ret[k].key, arg)) value = fd->ret[k].value; /* the last one wins */
    if (!value) return ERR_INVALID("output argument '%s' has no entry in ret", arg);
    graph_node *src;
    int port;
    kiln_status s = resolve_input(b, f, value, true, &src, &port);
    if (s) return status_wrap(s, "ret '%s'", arg);
    TRY(charge_outputs(b, src, (int64_t)port + 1));
    TRY(graph_add_result(f, arg, src, port));
  }
  return NULL;
}

/* ---- results ---- */

/* Ops that are never a graph's output even when nothing consumes them. */
static bool never_an_output(const graph_node *n) {
  static const char *const ops[] = {
      "Abort",          "Assert",           "Assign",          "AssignAdd",           "AssignAddVariableOp",
      "AssignSub",      "AssignSubVariableOp", "AssignVariableOp", "Const",             "ControlTrigger",
      "NoOp",           "Placeholder",      "PlaceholderV2",   "Print",               "PrintV2",
      "Restore",        "RestoreSlice",     "RestoreV2",       "Save",                "SaveSlices",
      "SaveV2",         "TensorArrayCloseV3", "VarHandleOp",   "VarIsInitializedOp",  "Variable",
      "VariableV2",
  };
  const char *op = graph_node_op_base(n);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i], op)) return true;
  return false;
}

/* A NoOp (or ControlTrigger) that nothing waits on: TF1's tf.group of a graph's final
 * ops (a train op, "init"). Its control inputs are still outputs. */
static bool is_final_group(const graph_node *v) {
  if (!graph_node_is(v, "NoOp") && !graph_node_is(v, "ControlTrigger")) return false;
  return graph_num_consumers(v) == 0;
}

/* A sink: no data consumer, and no control consumer other than a final group. A node
 * that something waits on only through control edges exists for control: TF's lowered
 * control flow makes Identity helpers of that kind (a while loop's loop_body_control
 * and a cond's pivot_t / pivot_f, read by the input_control_node NoOp that puts a
 * function body's constants into the loop frame or the branch), and they are never
 * outputs (they live inside loop frames, where a result cannot be read). */
static bool is_sink(const graph_node *v) {
  const graph_use *uses;
  for (int p = 0; p < v->n_outputs; p++)
    if (graph_consumers(v, p, &uses)) return false;
  int k = graph_consumers(v, GRAPH_CONTROL, &uses);
  for (int i = 0; i < k; i++)
    if (!is_final_group(uses[i].node)) return false;
  return true;
}

static kiln_status infer_results(tf_ctx *c, graph *g) {
  graph_node **picked = malloc(((size_t)g->n_nodes + 1) * sizeof *picked);
  if (!picked) abort();
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *v = g->nodes[i];
    if (v->is_input || never_an_output(v) || !is_sink(v)) continue;
    picked[n++] = v;
  }
  kiln_status s = NULL;
  for (int i = 0; i < n && !s; i++) s = graph_add_result(g, picked[i]->name, picked[i], 0);
  free(picked);
  c->info.results_inferred = true;
  return s;
}

static kiln_status apply_signature(build_state *b, graph *g, const tf_signature *sig) {
  tf_ctx *c = b->c;
  if (sig->n_inputs) {
    graph_node **order = malloc((size_t)g->n_inputs * sizeof *order + 1);
    bool *taken = calloc((size_t)g->n_inputs + 1, sizeof *taken);
    if (!order || !taken) abort();
    int w = 0;
    kiln_status s = NULL;
    for (int i = 0; i < sig->n_inputs && !s; i++) {
      const char *node;
      int port;
      if (!tf_parse_tensor_name(c->scratch, sig->inputs[i].value, &node, &port)) {
        s = ERR_INVALID("signature input '%s': malformed tensor name '%s'", sig->inputs[i].key, sig->inputs[i].value);
        break;
      }
      graph_node *n = graph_find_node(g, node);
      if (!n) {
        s = ERR_INVALID("signature input '%s' names node '%s', which the graph does not have", sig->inputs[i].key,
                        node);
        break;
      }
      if (!n->is_input || port != 0) {
        s = ERR_INVALID("signature input '%s' is '%s', which is not a Placeholder's output", sig->inputs[i].key,
                        sig->inputs[i].value);
        break;
      }
      int k = 0;
      while (g->inputs[k] != n) k++;
      if (taken[k]) continue;
      taken[k] = true;
      order[w++] = n;
    }
    if (!s) {
      for (int k = 0; k < g->n_inputs; k++)
        if (!taken[k]) order[w++] = g->inputs[k];
      memcpy(g->inputs, order, (size_t)g->n_inputs * sizeof *order);
      graph_invalidate(g);
    }
    free(order);
    free(taken);
    TRY(s);
  }
  if (!sig->n_outputs) return infer_results(c, g);
  for (int i = 0; i < sig->n_outputs; i++) {
    const char *node;
    int port;
    if (!tf_parse_tensor_name(c->scratch, sig->outputs[i].value, &node, &port))
      return ERR_INVALID("signature output '%s': malformed tensor name '%s'", sig->outputs[i].key,
                         sig->outputs[i].value);
    graph_node *n = graph_find_node(g, node);
    if (!n)
      return ERR_INVALID("signature output '%s' names node '%s', which the graph does not have", sig->outputs[i].key,
                         node);
    TRY(charge_outputs(b, n, (int64_t)port + 1));
    kiln_status s = graph_add_result(g, sig->outputs[i].key, n, port);
    if (s) return status_wrap(s, "signature output '%s'", sig->outputs[i].key);
  }
  return NULL;
}

/* ---- the whole graph ---- */

static kiln_status build(build_state *b, const tf_graph_def *def, const tf_signature *sig, graph *g) {
  tf_ctx *c = b->c;
  graph **fns = def->n_functions ? arena_calloc(c->scratch, (size_t)def->n_functions, sizeof *fns) : NULL;
  b->fns = def->n_functions ? arena_calloc(c->scratch, (size_t)def->n_functions, sizeof *b->fns) : NULL;
  for (int i = 0; i < def->n_functions; i++) {
    const tf_function_def *fd = def->functions[i];
    if (!fd->name || !*fd->name) return ERR_INVALID("library function %d has no name", i);
    TRY(graph_add_function(g, fd->name, &fns[i]));
    b->fns[b->n_fns++] = (fn_entry){fd->name, fd};
  }
  if (b->n_fns) qsort(b->fns, (size_t)b->n_fns, sizeof *b->fns, fn_entry_cmp);
  for (int i = 0; i < def->n_functions; i++) {
    kiln_status s = build_function(b, fns[i], def->functions[i]);
    if (s) return status_wrap(s, "function '%s'", def->functions[i]->name);
  }
  TRY(build_body(b, g, def->nodes, def->n_nodes, false));
  if (sig) TRY(apply_signature(b, g, sig));
  else TRY(infer_results(c, g));
  return graph_validate(g);
}

kiln_status tf_build_graph(tf_ctx *c, const tf_graph_def *def, const tf_signature *sig, graph **out) {
  *out = NULL;
  graph *g = graph_new("tf");
  build_state b = {.c = c, .def = def};
  kiln_status s = build(&b, def, sig, g);
  if (s) {
    graph_free(g);
    return s;
  }
  *out = g;
  return NULL;
}

kiln_status tf_import_set_results(graph *g, int n, const char *const *names) {
  if (n < 0) return ERR_INVALID("negative result count");
  graph_node **nodes = calloc((size_t)n + 1, sizeof *nodes);
  int *ports = calloc((size_t)n + 1, sizeof *ports);
  arena *a = arena_new();
  if (!nodes || !ports) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n && !s; i++) {
    const char *node;
    if (!names[i] || !*names[i]) s = ERR_INVALID("result %d has an empty name", i);
    else if (!tf_parse_tensor_name(a, names[i], &node, &ports[i]))
      s = ERR_INVALID("malformed tensor name '%s'", names[i]);
    else if (!(nodes[i] = graph_find_node(g, node))) s = ERR_INVALID("no node named '%s'", node);
    else if (nodes[i]->is_input && ports[i]) s = ERR_INVALID("graph input '%s' has only output 0", node);
    for (int k = 0; k < i && !s; k++)
      if (!strcmp(names[k], names[i])) s = ERR_INVALID("result '%s' is named twice", names[i]);
  }
  if (!s) {
    g->n_results = 0;
    graph_invalidate(g);
    for (int i = 0; i < n && !s; i++) s = graph_add_result(g, names[i], nodes[i], ports[i]);
  }
  arena_free(a);
  free(nodes);
  free(ports);
  return s;
}
