/* The registry of op families. Each family file (ops_onnx_*.c, ops_tf_*.c) exports one
 * op_table; this file lists them and serves lookups by name from one sorted index built
 * on first use. Adding a family = one extern line and one table entry below. */
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* ONNX families */
/* (ONNX tables) */
extern const op_table onnx_math_ops, onnx_nn_ops, onnx_tensor_ops, onnx_index_ops, onnx_reduce_ops, onnx_resize_ops;
extern const op_table onnx_rnn_ops, onnx_signal_ops, onnx_attention_ops, onnx_loss_ops, onnx_image_ops, onnx_quant_ops,
    onnx_select_ops, onnx_ml_ops, onnx_ml_tree_ops, onnx_linalg_ops, onnx_random_ops, onnx_string_ops,
    onnx_causal_ops;

/* TensorFlow families */
/* (TF tables) */
extern const op_table tf_array_table;
extern const op_table tf_image_table;
extern const op_table tf_index_table;
extern const op_table tf_math_table;
extern const op_table tf_nn_table;
extern const op_table tf_reduce_table;

static const op_table *const families[] = {
    /* (ONNX entries) */
    &onnx_math_ops, &onnx_nn_ops, &onnx_tensor_ops, &onnx_index_ops, &onnx_reduce_ops, &onnx_resize_ops,
    &onnx_rnn_ops, &onnx_signal_ops, &onnx_attention_ops, &onnx_loss_ops, &onnx_image_ops, &onnx_quant_ops,
    &onnx_select_ops, &onnx_ml_ops, &onnx_ml_tree_ops, &onnx_linalg_ops, &onnx_random_ops, &onnx_string_ops,
    &onnx_causal_ops,
    /* (TF entries) */
    &tf_array_table,
    &tf_image_table,
    &tf_index_table,
    &tf_math_table,
    &tf_nn_table,
    &tf_reduce_table,
    NULL,
};

/* Built once, on first use, from any thread (embedders load models concurrently). */
static pthread_once_t index_once = PTHREAD_ONCE_INIT;
static const op_def **index_defs;
static int index_n;

static int by_name(const void *a, const void *b) {
  return strcmp((*(const op_def *const *)a)->name, (*(const op_def *const *)b)->name);
}

static void build_index_once(void) {
  int n = 0;
  for (int f = 0; families[f]; f++) n += families[f]->n;
  index_defs = malloc((size_t)(n ? n : 1) * sizeof *index_defs);
  if (!index_defs) abort();
  int k = 0;
  for (int f = 0; families[f]; f++)
    for (int i = 0; i < families[f]->n; i++) index_defs[k++] = &families[f]->defs[i];
  qsort(index_defs, (size_t)n, sizeof *index_defs, by_name);
  index_n = n;
}

static void build_index(void) { pthread_once(&index_once, build_index_once); }

const op_def *op_find(const char *name) {
  build_index();
  int lo = 0, hi = index_n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(index_defs[mid]->name, name);
    if (c == 0) return index_defs[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

int op_count(void) {
  build_index();
  return index_n;
}

const op_def *op_at(int i) {
  build_index();
  return index_defs[i];
}

kiln_status op_error(const graph_node *node, kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status s = status_verror(code, fmt, ap);
  va_end(ap);
  return status_wrap(s, "node %s (%s)", node->name, node->op);
}

bool op_input_must_be_constant(const op_def *def, int i, int n_in) {
  if ((def->traits & OP_CONST_LAST_INPUT) && i == n_in - 1) return true;
  return i >= 0 && i < 64 && ((def->const_inputs >> i) & 1u);
}

bool op_input_runtime_ok(const op_def *def, int i) {
  return i == 1 && (def->traits & OP_RUNTIME_OK_INPUT1);
}

/* Room past the node's output count: a lowering that fills more outputs than the node
 * declares writes there harmlessly; only the declared ones are read. */
#define OP_LOWER_EXTRA_OUTPUTS 8

void op_lower_args_init(op_lower_args *a, const graph_node *node) {
  size_t n_in = (size_t)node->n_inputs + 1;
  a->inputs = calloc(n_in, sizeof *a->inputs);
  a->consts = calloc(n_in, sizeof *a->consts);
  a->dtypes = calloc(n_in, sizeof *a->dtypes);
  a->outputs = calloc((size_t)node->n_outputs + OP_LOWER_EXTRA_OUTPUTS, sizeof *a->outputs);
  if (!a->inputs || !a->consts || !a->dtypes || !a->outputs) abort();
}

void op_lower_args_free(op_lower_args *a) {
  free(a->inputs);
  free(a->consts);
  free(a->dtypes);
  free(a->outputs);
}

kiln_status op_lower(const op_def *def, const graph_node *node, hlo_computation *comp, const op_lower_args *a) {
  op_lower_ctx ctx = {
      .node = node,
      .opset = node->graph->root->opset,
      .comp = comp,
      .n_inputs = node->n_inputs,
      .inputs = a->inputs,
      .const_inputs = a->consts,
      .input_dtypes = a->dtypes,
      .n_outputs = node->n_outputs,
      .outputs = a->outputs,
  };
  return def->lower(&ctx);
}

kiln_status op_constant(hlo_computation *comp, const graph_tensor *t, hlo_instr **out) {
  *out = NULL;
  hlo_literal view, *lit;
  if (!tensor_literal_view(t, &view)) return NULL;
  TRY(tensor_to_literal(t, &lit));
  return hlo_build_constant(comp, lit, out);
}

kiln_status op_constant_borrowed(hlo_computation *comp, const graph_tensor *t, hlo_instr **out) {
  *out = NULL;
  hlo_literal view;
  if (!tensor_literal_view(t, &view)) return NULL;
  return hlo_build_constant(comp, literal_borrow(&view.shape, t->data), out);
}
