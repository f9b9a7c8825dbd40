/* Ops that run function bodies: ONNX If/Loop/Scan and TensorFlow's functional control
 * flow (If/StatelessIf, While/StatelessWhile, PartitionedCall).
 *
 * Bodies are graphs of the root's library, run through the executor recursively
 * (exec_call_function), so everything a body contains -- nested loops, TF v1 control
 * flow, TensorArrays -- works inside it. The ONNX importer makes bodies closed (see
 * import/onnx/onnx_import.h): the node's captured outer values are its last
 * len(_captures) data inputs, and every body of the node takes them, in that order,
 * after its ONNX formal inputs. Loop-carried values are handed from one iteration to
 * the next without copies; scan outputs are stacked once at the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "import/onnx/onnx_import.h"

static kiln_status func_attr(const graph_node *n, const char *name, graph **out) {
  const graph_attr_value *v = graph_node_attr(n, name);
  if (!v || v->kind != GRAPH_ATTR_FUNC || !v->func.body)
    return ERR_INVALID("attribute %s must name a function of the graph library", name);
  *out = v->func.body;
  return NULL;
}

static int n_captures(const graph_node *n) {
  const graph_attr_value *v = graph_node_attr(n, "_captures");
  return v && v->kind == GRAPH_ATTR_LIST ? v->list.n : 0;
}

static void release(graph_tensor **t, int n) {
  if (!t) return;
  for (int i = 0; i < n; i++) {
    tensor_free(t[i]);
    t[i] = NULL;
  }
}

static graph_tensor **tensors(int n) {
  graph_tensor **t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
  if (!t) abort();
  return t;
}

static kiln_status condition(const graph_tensor *t, const char *what, bool *out) {
  if (t->n != 1) return ERR_INVALID("%s must have exactly one element, got %lld", what, (long long)t->n);
  *out = exec_truth(t);
  return NULL;
}

/* ------------------------------------------------------------------- ONNX ---- */

kiln_status exec_onnx_if(exec_node_ctx *c) {
  if (c->n_inputs < 1) return ERR_INVALID("If needs a condition");
  bool cond = false;
  TRY(condition(c->inputs[0], "the condition", &cond));
  graph *body = NULL;
  TRY(func_attr(c->node, cond ? "then_branch" : "else_branch", &body));
  int caps = n_captures(c->node);
  if (caps > c->n_inputs - 1) return ERR_INVALID("the node lists %d captures but has %d inputs", caps, c->n_inputs);
  return exec_call_function(c->e, body, caps, c->inputs + (c->n_inputs - caps), c->n_outputs, c->outputs);
}

/* The element shape of an empty scan output, from what the node's output declares. */
static graph_shape declared_element_shape(const graph_node *n, int port, int axis) {
  graph_shape s = graph_shape_unknown();
  if (port >= n->n_outputs) return s;
  const graph_shape *d = &n->outputs[port].shape;
  if (d->rank < 1 || axis < 0 || axis >= d->rank) return s;
  s.rank = d->rank - 1;
  for (int i = 0, k = 0; i < d->rank; i++)
    if (i != axis) s.dims[k++] = d->dims[i];
  return s;
}

static graph_dtype declared_dtype(const graph_node *n, int port, const graph *body, int result) {
  if (port < n->n_outputs && n->outputs[port].dtype != GRAPH_DT_INVALID) return n->outputs[port].dtype;
  const graph_node *r = body->results[result].node;
  int p = body->results[result].port;
  if (p < r->n_outputs && r->outputs[p].dtype != GRAPH_DT_INVALID) return r->outputs[p].dtype;
  return GRAPH_DT_FLOAT;
}

/* Appends one iteration's scan slices. */
typedef struct scan_acc {
  int n, cap;
  graph_tensor **items;
} scan_acc;

static void acc_push(scan_acc *a, graph_tensor *t) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 16;
    graph_tensor **p = realloc(a->items, (size_t)cap * sizeof *p);
    if (!p) abort();
    a->items = p;
    a->cap = cap;
  }
  a->items[a->n++] = t;
}

static void acc_free(scan_acc *a, int n) {
  if (!a) return;
  for (int k = 0; k < n; k++) {
    release(a[k].items, a[k].n);
    free(a[k].items);
  }
  free(a);
}

kiln_status exec_onnx_loop(exec_node_ctx *c) {
  const graph_node *n = c->node;
  graph *body = NULL;
  TRY(func_attr(n, "body", &body));
  int caps = n_captures(n);
  int formal = c->n_inputs - caps;
  int i_m = onnx_input_index(n, 0), i_cond = onnx_input_index(n, 1);
  int v_start = (i_m >= 0) + (i_cond >= 0);
  int n_v = formal - v_start;
  if (n_v < 0) return ERR_INVALID("Loop has fewer inputs than its captures and controls");
  int n_scan = body->n_results - 1 - n_v;
  if (body->n_inputs != 2 + n_v + caps || n_scan < 0)
    return ERR_INVALID("the body takes %d inputs and gives %d results; the node carries %d values and %d captures",
                       body->n_inputs, body->n_results, n_v, caps);
  if (c->n_outputs != n_v + n_scan)
    return ERR_INVALID("the node has %d outputs; the body carries %d values and %d scan outputs", c->n_outputs, n_v,
                       n_scan);
  int64_t max_trip = INT64_MAX;
  if (i_m >= 0) TRY(exec_read_index(c->inputs[i_m], "the trip count M", &max_trip));
  bool cond = true;
  if (i_cond >= 0) TRY(condition(c->inputs[i_cond], "the loop condition", &cond));

  int n_body_in = body->n_inputs;
  graph_tensor **args = tensors(n_body_in);
  graph_tensor **res = tensors(body->n_results);
  scan_acc *acc = calloc((size_t)(n_scan ? n_scan : 1), sizeof *acc);
  if (!acc) abort();
  for (int k = 0; k < n_v; k++) args[2 + k] = tensor_ref(c->inputs[v_start + k]);
  for (int k = 0; k < caps; k++) args[2 + n_v + k] = tensor_ref(c->inputs[formal + k]);
  kiln_status s = NULL;
  for (int64_t it = 0; it < max_trip && cond && !s; it++) {
    tensor_free(args[0]);
    tensor_free(args[1]);
    args[0] = args[1] = NULL;
    s = exec_scalar_s64(GRAPH_DT_INT64, it, &args[0]);
    if (!s) s = exec_scalar_s64(GRAPH_DT_BOOL, 1, &args[1]);
    if (!s) s = exec_call_function(c->e, body, n_body_in, args, body->n_results, res);
    if (s) {
      s = status_wrap(s, "iteration %lld", (long long)it);
      break;
    }
    s = condition(res[0], "the body's condition output", &cond);
    for (int k = 0; k < n_v; k++) {
      tensor_free(args[2 + k]);
      args[2 + k] = res[1 + k];
      res[1 + k] = NULL;
    }
    for (int k = 0; k < n_scan; k++) {
      acc_push(&acc[k], res[1 + n_v + k]);
      res[1 + n_v + k] = NULL;
    }
    release(res, body->n_results);
  }
  for (int k = 0; k < n_v && !s; k++) {
    c->outputs[k] = args[2 + k];
    args[2 + k] = NULL;
  }
  for (int k = 0; k < n_scan && !s; k++) {
    graph_shape es = declared_element_shape(n, n_v + k, 0);
    graph_dtype dt = acc[k].n ? acc[k].items[0]->dtype : declared_dtype(n, n_v + k, body, 1 + n_v + k);
    s = exec_tensor_stack(dt, acc[k].n, acc[k].items, 0, &es, &c->outputs[n_v + k]);
    if (s) s = status_wrap(s, "scan output %d", k);
  }
  release(args, n_body_in);
  release(res, body->n_results);
  free(args);
  free(res);
  acc_free(acc, n_scan);
  return s;
}

static kiln_status read_axes(const graph_node *n, const char *name, int count, int64_t *out) {
  for (int i = 0; i < count; i++) out[i] = 0;
  if (!graph_node_attr(n, name)) return NULL;
  int got = 0;
  TRY(graph_node_get_ints(n, name, out, count, &got));
  if (got != count) return ERR_INVALID("attribute %s has %d entries, %d expected", name, got, count);
  return NULL;
}

kiln_status exec_onnx_scan(exec_node_ctx *c) {
  const graph_node *n = c->node;
  if (n->graph->root->opset > 0 && n->graph->root->opset < 9)
    return ERR_UNIMPLEMENTED("Scan before opset 9 (with a batch axis and sequence_lens) is not supported");
  graph *body = NULL;
  TRY(func_attr(n, "body", &body));
  int64_t n_scan_in = 0;
  TRY(graph_node_get_int(n, "num_scan_inputs", &n_scan_in));
  int caps = n_captures(n);
  int formal = c->n_inputs - caps;
  int n_state = formal - (int)n_scan_in;
  int n_scan_out = c->n_outputs - n_state;
  if (n_scan_in < 1 || n_state < 0 || n_scan_out < 0 || body->n_inputs != formal + caps ||
      body->n_results != c->n_outputs)
    return ERR_INVALID("num_scan_inputs %lld does not fit %d inputs (%d captures), %d outputs and a body of %d "
                       "inputs and %d results",
                       (long long)n_scan_in, c->n_inputs, caps, c->n_outputs, body->n_inputs, body->n_results);
  int64_t *in_axes = calloc((size_t)n_scan_in, sizeof *in_axes), *in_dirs = calloc((size_t)n_scan_in, sizeof *in_dirs);
  int64_t *out_axes = calloc((size_t)n_scan_out + 1, sizeof *out_axes);
  int64_t *out_dirs = calloc((size_t)n_scan_out + 1, sizeof *out_dirs);
  if (!in_axes || !in_dirs || !out_axes || !out_dirs) abort();
  kiln_status s = read_axes(n, "scan_input_axes", (int)n_scan_in, in_axes);
  if (!s) s = read_axes(n, "scan_input_directions", (int)n_scan_in, in_dirs);
  if (!s) s = read_axes(n, "scan_output_axes", n_scan_out, out_axes);
  if (!s) s = read_axes(n, "scan_output_directions", n_scan_out, out_dirs);
  int64_t len = -1;
  for (int j = 0; j < n_scan_in && !s; j++) {
    const graph_tensor *x = c->inputs[n_state + j];
    int64_t a = in_axes[j] < 0 ? in_axes[j] + x->rank : in_axes[j];
    if (a < 0 || a >= x->rank) {
      s = ERR_INVALID("scan input %d: axis %lld is out of range for rank %d", j, (long long)in_axes[j], x->rank);
      break;
    }
    in_axes[j] = a;
    if (len >= 0 && x->dims[a] != len)
      s = ERR_INVALID("scan inputs have different sequence lengths (%lld and %lld)", (long long)len,
                      (long long)x->dims[a]);
    len = x->dims[a];
  }
  graph_tensor **args = tensors(body->n_inputs);
  graph_tensor **res = tensors(body->n_results);
  scan_acc *acc = calloc((size_t)(n_scan_out ? n_scan_out : 1), sizeof *acc);
  if (!acc) abort();
  for (int k = 0; k < n_state; k++) args[k] = tensor_ref(c->inputs[k]);
  for (int k = 0; k < caps; k++) args[formal + k] = tensor_ref(c->inputs[formal + k]);
  for (int64_t t = 0; t < len && !s; t++) {
    for (int j = 0; j < n_scan_in && !s; j++) {
      tensor_free(args[n_state + j]);
      args[n_state + j] = NULL;
      int64_t at = in_dirs[j] ? len - 1 - t : t;
      s = exec_tensor_take(c->inputs[n_state + j], (int)in_axes[j], at, &args[n_state + j]);
    }
    if (!s) s = exec_call_function(c->e, body, body->n_inputs, args, body->n_results, res);
    if (s) {
      s = status_wrap(s, "iteration %lld", (long long)t);
      break;
    }
    for (int k = 0; k < n_state; k++) {
      tensor_free(args[k]);
      args[k] = res[k];
      res[k] = NULL;
    }
    for (int k = 0; k < n_scan_out; k++) {
      acc_push(&acc[k], res[n_state + k]);
      res[n_state + k] = NULL;
    }
  }
  for (int k = 0; k < n_state && !s; k++) {
    c->outputs[k] = args[k];
    args[k] = NULL;
  }
  for (int k = 0; k < n_scan_out && !s; k++) {
    scan_acc *a = &acc[k];
    if (out_dirs[k])
      for (int i = 0; i < a->n / 2; i++) {
        graph_tensor *tmp = a->items[i];
        a->items[i] = a->items[a->n - 1 - i];
        a->items[a->n - 1 - i] = tmp;
      }
    int erank = a->n ? a->items[0]->rank : (n_state + k < n->n_outputs ? n->outputs[n_state + k].shape.rank - 1 : -1);
    int64_t axis = out_axes[k] < 0 ? out_axes[k] + erank + 1 : out_axes[k];
    graph_shape es = declared_element_shape(n, n_state + k, (int)axis);
    graph_dtype dt = a->n ? a->items[0]->dtype : declared_dtype(n, n_state + k, body, n_state + k);
    s = exec_tensor_stack(dt, a->n, a->items, (int)axis, &es, &c->outputs[n_state + k]);
    if (s) s = status_wrap(s, "scan output %d", k);
  }
  release(args, body->n_inputs);
  release(res, body->n_results);
  free(args);
  free(res);
  acc_free(acc, n_scan_out);
  free(in_axes);
  free(in_dirs);
  free(out_axes);
  free(out_dirs);
  return s;
}

/* ------------------------------------------------------------- TensorFlow ---- */

kiln_status exec_tf_if(exec_node_ctx *c) {
  if (c->n_inputs < 1) return ERR_INVALID("If needs a condition");
  graph *body = NULL;
  TRY(func_attr(c->node, exec_truth(c->inputs[0]) ? "then_branch" : "else_branch", &body));
  return exec_call_function(c->e, body, c->n_inputs - 1, c->inputs + 1, c->n_outputs, c->outputs);
}

kiln_status exec_tf_while(exec_node_ctx *c) {
  graph *cond_f = NULL, *body = NULL;
  TRY(func_attr(c->node, "cond", &cond_f));
  TRY(func_attr(c->node, "body", &body));
  int n = c->n_inputs;
  if (c->n_outputs > n) return ERR_INVALID("While has %d outputs for %d loop variables", c->n_outputs, n);
  graph_tensor **vars = tensors(n);
  graph_tensor **next = tensors(n);
  for (int i = 0; i < n; i++) vars[i] = tensor_ref(c->inputs[i]);
  kiln_status s = NULL;
  for (int64_t it = 0; !s; it++) {
    graph_tensor *pred = NULL;
    s = exec_call_function(c->e, cond_f, n, vars, 1, &pred);
    if (s) {
      s = status_wrap(s, "condition of iteration %lld", (long long)it);
      break;
    }
    bool go = exec_truth(pred);
    tensor_free(pred);
    if (!go) break;
    s = exec_call_function(c->e, body, n, vars, n, next);
    if (s) {
      s = status_wrap(s, "iteration %lld", (long long)it);
      break;
    }
    for (int i = 0; i < n; i++) {
      tensor_free(vars[i]);
      vars[i] = next[i];
      next[i] = NULL;
    }
  }
  for (int i = 0; i < c->n_outputs && !s; i++) {
    c->outputs[i] = vars[i];
    vars[i] = NULL;
  }
  release(vars, n);
  free(vars);
  free(next);
  return s;
}

kiln_status exec_tf_call(exec_node_ctx *c) {
  graph *body = NULL;
  TRY(func_attr(c->node, "f", &body));
  return exec_call_function(c->e, body, c->n_inputs, c->inputs, c->n_outputs, c->outputs);
}
