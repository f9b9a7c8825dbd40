/* The ops the executor interprets itself, and the simplest of them.
 *
 * Constants and identities are here because running them through a compiled HLO
 * module would copy every weight once per run and could not carry strings, resource
 * handles or TensorList variants; the stateful families (variables, TensorArray,
 * TensorList) live in resources.c, ONNX sequences and optionals in sequences.c, maps
 * and ai.onnx.ml ZipMap in maps.c,
 * and the ops that call function bodies in functional.c. The table below is the single list of what the executor claims; it
 * wins over the op library for these names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "graph/tensor_source.h"

static const exec_native natives[] = {
    {"ai.onnx.ml.ZipMap", exec_zipmap},
    {"kiln.Cluster", exec_cluster},
    {"onnx.ConcatFromSequence", exec_seq_concat},
    {"onnx.Constant", exec_native_const},
    {"onnx.Identity", exec_native_identity},
    {"onnx.If", exec_onnx_if},
    {"onnx.Loop", exec_onnx_loop},
    {"onnx.Optional", exec_opt_make},
    {"onnx.OptionalGetElement", exec_opt_get_element},
    {"onnx.OptionalHasElement", exec_opt_has_element},
    {"onnx.Scan", exec_onnx_scan},
    {"onnx.SequenceAt", exec_seq_at},
    {"onnx.SequenceConstruct", exec_seq_construct},
    {"onnx.SequenceEmpty", exec_seq_empty},
    {"onnx.SequenceErase", exec_seq_erase},
    {"onnx.SequenceInsert", exec_seq_insert},
    {"onnx.SequenceLength", exec_seq_length},
    {"onnx.SequenceMap", exec_seq_map},
    {"onnx.SplitToSequence", exec_seq_split},
    {"tf.AssignAddVariableOp", exec_var_assign_add},
    {"tf.AssignSubVariableOp", exec_var_assign_sub},
    {"tf.AssignVariableOp", exec_var_assign},
    {"tf.Const", exec_native_const},
    {"tf.DestroyResourceOp", exec_var_destroy},
    {"tf.EmptyTensorList", exec_tl_empty},
    {"tf.Identity", exec_native_identity},
    {"tf.IdentityN", exec_native_identity},
    {"tf.If", exec_tf_if},
    {"tf.NoOp", exec_native_noop},
    {"tf.PartitionedCall", exec_tf_call},
    {"tf.PreventGradient", exec_native_identity},
    {"tf.ReadVariableOp", exec_var_read},
    {"tf.Snapshot", exec_native_identity},
    {"tf.StatefulPartitionedCall", exec_tf_call},
    {"tf.StatelessIf", exec_tf_if},
    {"tf.StatelessWhile", exec_tf_while},
    {"tf.StopGradient", exec_native_identity},
    {"tf.TensorArrayCloseV3", exec_ta_close},
    {"tf.TensorArrayConcatV3", exec_ta_concat},
    {"tf.TensorArrayGatherV3", exec_ta_gather},
    {"tf.TensorArrayReadV3", exec_ta_read},
    {"tf.TensorArrayScatterV3", exec_ta_scatter},
    {"tf.TensorArraySizeV3", exec_ta_size},
    {"tf.TensorArraySplitV3", exec_ta_split},
    {"tf.TensorArrayV3", exec_ta_new},
    {"tf.TensorArrayWriteV3", exec_ta_write},
    {"tf.TensorListConcatV2", exec_tl_concat},
    {"tf.TensorListElementShape", exec_tl_element_shape},
    {"tf.TensorListFromTensor", exec_tl_from_tensor},
    {"tf.TensorListGather", exec_tl_gather},
    {"tf.TensorListGetItem", exec_tl_get_item},
    {"tf.TensorListLength", exec_tl_length},
    {"tf.TensorListPopBack", exec_tl_pop_back},
    {"tf.TensorListPushBack", exec_tl_push_back},
    {"tf.TensorListReserve", exec_tl_reserve},
    {"tf.TensorListResize", exec_tl_resize},
    {"tf.TensorListScatter", exec_tl_scatter},
    {"tf.TensorListScatterIntoExistingList", exec_tl_scatter_into},
    {"tf.TensorListScatterV2", exec_tl_scatter},
    {"tf.TensorListSetItem", exec_tl_set_item},
    {"tf.TensorListSplit", exec_tl_split},
    {"tf.TensorListStack", exec_tl_stack},
    {"tf.VarHandleOp", exec_var_handle},
    {"tf.VarIsInitializedOp", exec_var_is_initialized},
    {"tf.While", exec_tf_while},
};

/* Control flow and feeds are scheduler kinds (executor.c), listed for `kiln ops`. */
static const char *const scheduler_ops[] = {
    "tf.ControlTrigger", "tf.Enter",         "tf.Exit",          "tf.LoopCond",
    "tf.Merge",          "tf.NextIteration", "tf.Placeholder",   "tf.PlaceholderWithDefault",
    "tf.RefEnter",       "tf.RefExit",       "tf.RefMerge",      "tf.RefNextIteration",
    "tf.RefSwitch",      "tf.Switch",
};

#define N_NATIVES ((int)(sizeof natives / sizeof natives[0]))
#define N_SCHEDULER ((int)(sizeof scheduler_ops / sizeof scheduler_ops[0]))

const exec_native *exec_native_find(const char *op) {
  for (int i = 0; i < N_NATIVES; i++)
    if (strcmp(natives[i].name, op) == 0) return &natives[i];
  return NULL;
}

const exec_native *exec_native_of(const graph_node *n) {
  const exec_native *nat = exec_native_find(n->op);
  if (!nat && !strchr(n->op, '.')) {
    char buf[256];
    snprintf(buf, sizeof buf, "tf.%s", n->op);
    nat = exec_native_find(buf);
  }
  return nat;
}

static const char **all_names;

static int by_string(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void build_names(void) {
  if (all_names) return;
  all_names = malloc((size_t)(N_NATIVES + N_SCHEDULER) * sizeof *all_names);
  if (!all_names) abort();
  for (int i = 0; i < N_NATIVES; i++) all_names[i] = natives[i].name;
  for (int i = 0; i < N_SCHEDULER; i++) all_names[N_NATIVES + i] = scheduler_ops[i];
  qsort(all_names, (size_t)(N_NATIVES + N_SCHEDULER), sizeof *all_names, by_string);
}

int executor_native_op_count(void) { return N_NATIVES + N_SCHEDULER; }

const char *executor_native_op_at(int i) {
  build_names();
  return all_names[i];
}

bool executor_knows_op(const char *op) {
  if (exec_native_find(op)) return true;
  for (int i = 0; i < N_SCHEDULER; i++)
    if (strcmp(scheduler_ops[i], op) == 0) return true;
  const op_def *d = op_find(op);
  return d && (d->lower || d->host);
}

/* ---------------------------------------------------------------- constants ---- */

static kiln_status list_tensor(const graph_attr_value *v, graph_dtype dtype, graph_tensor **out) {
  int64_t n = v->list.n;
  TRY(tensor_create(dtype, 1, &n, out));
  for (int64_t i = 0; i < n; i++) {
    const graph_attr_value *it = &v->list.items[i];
    if (it->kind == GRAPH_ATTR_FLOAT) tensor_set_f64(*out, i, it->f);
    else if (it->kind == GRAPH_ATTR_INT) tensor_set_s64(*out, i, it->i);
    else if (it->kind == GRAPH_ATTR_STRING) tensor_set_string(*out, i, it->s.data, it->s.len);
  }
  return NULL;
}

kiln_status exec_native_const(exec_node_ctx *c) {
  const graph_node *n = c->node;
  if (c->n_outputs < 1) return NULL;
  const graph_attr_value *v = graph_node_attr(n, "value");
  if (v && v->kind == GRAPH_ATTR_TENSOR) /* read back from its file if a compile dropped it */
    return tensor_ref_loaded(v->tensor, &c->outputs[0]);
  /* ONNX Constant's other attribute forms. */
  if ((v = graph_node_attr(n, "value_float")) && v->kind == GRAPH_ATTR_FLOAT) {
    TRY(tensor_create_scalar(GRAPH_DT_FLOAT, &c->outputs[0]));
    tensor_set_f64(c->outputs[0], 0, v->f);
    return NULL;
  }
  if ((v = graph_node_attr(n, "value_int")) && v->kind == GRAPH_ATTR_INT) {
    TRY(tensor_create_scalar(GRAPH_DT_INT64, &c->outputs[0]));
    tensor_set_s64(c->outputs[0], 0, v->i);
    return NULL;
  }
  if ((v = graph_node_attr(n, "value_string")) && v->kind == GRAPH_ATTR_STRING) {
    TRY(tensor_create_scalar(GRAPH_DT_STRING, &c->outputs[0]));
    tensor_set_string(c->outputs[0], 0, v->s.data, v->s.len);
    return NULL;
  }
  static const struct {
    const char *name;
    graph_dtype dtype;
  } lists[] = {{"value_floats", GRAPH_DT_FLOAT}, {"value_ints", GRAPH_DT_INT64}, {"value_strings", GRAPH_DT_STRING}};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
    if ((v = graph_node_attr(n, lists[i].name)) && v->kind == GRAPH_ATTR_LIST)
      return list_tensor(v, lists[i].dtype, &c->outputs[0]);
  if (graph_node_attr(n, "sparse_value"))
    return ERR_UNIMPLEMENTED("sparse constants are not supported");
  return ERR_INVALID("constant without a value attribute");
}

kiln_status exec_native_identity(exec_node_ctx *c) {
  int n = c->n_inputs < c->n_outputs ? c->n_inputs : c->n_outputs;
  for (int i = 0; i < n; i++) c->outputs[i] = tensor_ref(c->inputs[i]);
  return NULL;
}

kiln_status exec_native_noop(exec_node_ctx *c) { return NULL; }
