/* Ops that run function bodies: ONNX If/Loop/Scan/SequenceMap and TensorFlow's functional control
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

/* Writes step t of batch entry b into a Scan-8 scan output, which the first step of
 * any entry creates zero-filled as [batch, max_len, <its element shape>]. */
static kiln_status scan8_place(graph_tensor **out, const graph_tensor *e, int64_t batch, int64_t max_len, int64_t b,
                               int64_t t) {
  if (!*out) {
    if (e->rank + 2 > GRAPH_MAX_RANK)
      return ERR_INVALID("a rank-%d scan output element needs rank %d with its batch and sequence axes (the limit is "
                         "%d)",
                         e->rank, e->rank + 2, GRAPH_MAX_RANK);
    int64_t dims[GRAPH_MAX_RANK] = {batch, max_len};
    for (int i = 0; i < e->rank; i++) dims[2 + i] = e->dims[i];
    TRY(tensor_create(e->dtype, e->rank + 2, dims, out));
  }
  graph_tensor *o = *out;
  bool same = e->dtype == o->dtype && e->rank + 2 == o->rank;
  for (int i = 0; same && i < e->rank; i++) same = e->dims[i] == o->dims[2 + i];
  if (!same) {
    strbuf sb;
    strbuf_init(&sb);
    exec_print_tensor_type(&sb, e);
    kiln_status s = ERR_INVALID("batch %lld, step %lld gives %s, unlike the earlier steps' elements", (long long)b,
                                (long long)t, strbuf_cstr(&sb));
    strbuf_free(&sb);
    return s;
  }
  exec_copy_elements(o, (b * max_len + t) * e->n, e, 0, e->n);
  return NULL;
}

/* A Scan-8 scan output that no step wrote (no batch entries, no steps): zeros shaped
 * [batch, max_len, ...] after the node's declared element shape. */
static kiln_status scan8_empty_output(const graph_node *n, int port, const graph *body, int64_t batch,
                                      int64_t max_len, graph_tensor **out) {
  const graph_shape *d = port < n->n_outputs ? &n->outputs[port].shape : NULL;
  bool known = d && d->rank >= 2;
  for (int i = 2; known && i < d->rank; i++) known = d->dims[i] >= 0;
  if (!known)
    return ERR_INVALID("scan output %d: no step ran and the node does not declare its element shape", port);
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, d->dims, sizeof dims);
  dims[0] = batch;
  dims[1] = max_len;
  return tensor_create(declared_dtype(n, port, body, port), d->rank, dims, out);
}

/* Scan-8, before the scan axes became attributes: ONNX input 0 is the optional
 * sequence_lens, and every state and scan input has a leading batch axis. Each batch
 * entry b runs the body on its own slices: the states start from init[b], each scan
 * input is iterated along its axis 1 for sequence_lens[b] steps (the whole axis when
 * sequence_lens is absent), and the final states are stacked back along the batch axis.
 * Scan outputs are [batch, max_len, ...]; the spec leaves the steps past a short
 * sequence undefined and ONNX Runtime writes zeros there, so kiln does too. A reversed
 * input ("directions") starts at the entry's last valid step, sequence_lens[b] - 1,
 * as in ONNX Runtime, not at the padded end. */
static kiln_status scan8(exec_node_ctx *c, graph *body, int n_scan_in) {
  const graph_node *n = c->node;
  int caps = n_captures(n);
  int i_lens = onnx_input_index(n, 0);
  int first = i_lens >= 0; /* data index of the first state input */
  int formal = c->n_inputs - caps;
  int n_vars = formal - first;
  int n_state = n_vars - n_scan_in;
  int n_scan_out = c->n_outputs - n_state;
  if (n_scan_in < 1 || n_state < 0 || n_scan_out < 0 || body->n_inputs != n_vars + caps ||
      body->n_results != c->n_outputs)
    return ERR_INVALID("num_scan_inputs %d does not fit %d inputs (%d captures%s), %d outputs and a body of %d "
                       "inputs and %d results",
                       n_scan_in, c->n_inputs, caps, first ? ", sequence_lens" : "", c->n_outputs, body->n_inputs,
                       body->n_results);
  graph_tensor *const *state_in = c->inputs + first, *const *scan_in = c->inputs + first + n_state;
  int64_t batch = -1, max_len = -1;
  for (int k = 0; k < n_vars; k++) {
    const graph_tensor *x = k < n_state ? state_in[k] : scan_in[k - n_state];
    const char *what = k < n_state ? "state" : "scan input";
    int idx = k < n_state ? k : k - n_state;
    if (x->rank < (k < n_state ? 1 : 2))
      return ERR_INVALID("%s %d has rank %d: Scan-8 needs a batch axis%s", what, idx, x->rank,
                         k < n_state ? "" : " and a sequence axis");
    if (batch >= 0 && x->dims[0] != batch)
      return ERR_INVALID("%s %d has batch size %lld, the earlier inputs %lld", what, idx, (long long)x->dims[0],
                         (long long)batch);
    batch = x->dims[0];
    if (k < n_state) continue;
    if (max_len >= 0 && x->dims[1] != max_len)
      return ERR_INVALID("scan inputs have different sequence lengths (%lld and %lld)", (long long)max_len,
                         (long long)x->dims[1]);
    max_len = x->dims[1];
  }
  int64_t *lens = calloc((size_t)batch + 1, sizeof *lens), *dirs = calloc((size_t)n_scan_in, sizeof *dirs);
  if (!lens || !dirs) abort();
  kiln_status s = read_axes(n, "directions", n_scan_in, dirs);
  if (!s && i_lens >= 0) {
    /* The spec allows any length up to the maximum, 0 included (ONNX Runtime refuses
     * 0): such an entry keeps its initial states and gets all-zero scan outputs. */
    const graph_tensor *l = c->inputs[i_lens];
    if (l->n != batch || !graph_dtype_is_int(l->dtype))
      s = ERR_INVALID("sequence_lens must be %lld integers (one per batch entry), got %lld of %s", (long long)batch,
                      (long long)l->n, graph_dtype_name(l->dtype));
    for (int64_t b = 0; b < batch && !s; b++) {
      lens[b] = tensor_get_s64(l, b);
      if (lens[b] < 0 || lens[b] > max_len)
        s = ERR_INVALID("sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b, (long long)lens[b],
                        (long long)max_len);
    }
  } else {
    for (int64_t b = 0; b < batch; b++) lens[b] = max_len;
  }
  graph_tensor **args = tensors(body->n_inputs);
  graph_tensor **res = tensors(body->n_results);
  graph_tensor **rows = tensors(n_scan_in);   /* batch entry b of each scan input */
  graph_tensor **outs = tensors(n_scan_out);  /* the scan outputs, made at the first step */
  scan_acc *finals = calloc((size_t)(n_state ? n_state : 1), sizeof *finals);
  if (!finals) abort();
  for (int k = 0; k < caps; k++) args[n_vars + k] = tensor_ref(c->inputs[formal + k]);
  for (int64_t b = 0; b < batch && !s; b++) {
    for (int k = 0; k < n_state && !s; k++) s = exec_tensor_take(state_in[k], 0, b, &args[k]);
    for (int j = 0; j < n_scan_in && !s; j++) {
      tensor_free(rows[j]);
      rows[j] = NULL;
      s = exec_tensor_take(scan_in[j], 0, b, &rows[j]);
    }
    for (int64_t t = 0; t < lens[b] && !s; t++) {
      for (int j = 0; j < n_scan_in && !s; j++) {
        tensor_free(args[n_state + j]);
        args[n_state + j] = NULL;
        s = exec_tensor_take(rows[j], 0, dirs[j] ? lens[b] - 1 - t : t, &args[n_state + j]);
      }
      if (!s) s = exec_call_function(c->e, body, body->n_inputs, args, body->n_results, res);
      for (int k = 0; k < n_state && !s; k++) {
        tensor_free(args[k]);
        args[k] = res[k];
        res[k] = NULL;
      }
      for (int k = 0; k < n_scan_out && !s; k++) {
        s = scan8_place(&outs[k], res[n_state + k], batch, max_len, b, t);
        if (s) s = status_wrap(s, "scan output %d", k);
      }
      release(res, body->n_results);
      if (s) s = status_wrap(s, "batch entry %lld, iteration %lld", (long long)b, (long long)t);
    }
    for (int k = 0; k < n_state && !s; k++) {
      acc_push(&finals[k], args[k]);
      args[k] = NULL;
    }
  }
  for (int k = 0; k < n_state && !s; k++) {
    /* With no batch entries the final states are the (empty) initial ones. */
    if (batch == 0) c->outputs[k] = tensor_ref(state_in[k]);
    else s = exec_tensor_stack(finals[k].items[0]->dtype, finals[k].n, finals[k].items, 0, NULL, &c->outputs[k]);
    if (s) s = status_wrap(s, "final state %d", k);
  }
  for (int k = 0; k < n_scan_out && !s; k++) {
    if (outs[k]) {
      c->outputs[n_state + k] = outs[k];
      outs[k] = NULL;
    } else {
      s = scan8_empty_output(n, n_state + k, body, batch, max_len, &c->outputs[n_state + k]);
    }
  }
  release(args, body->n_inputs);
  release(res, body->n_results);
  release(rows, n_scan_in);
  release(outs, n_scan_out);
  free(args);
  free(res);
  free(rows);
  free(outs);
  acc_free(finals, n_state);
  free(lens);
  free(dirs);
  return s;
}

kiln_status exec_onnx_scan(exec_node_ctx *c) {
  const graph_node *n = c->node;
  graph *body = NULL;
  TRY(func_attr(n, "body", &body));
  int64_t n_scan_in = 0;
  TRY(graph_node_get_int(n, "num_scan_inputs", &n_scan_in));
  int opset = n->graph->root->opset;
  if (opset > 0 && opset < 8) return ERR_INVALID("Scan does not exist before opset 8 (the model imports %d)", opset);
  if (opset == 8) {
    if (n_scan_in < 1 || n_scan_in > c->n_inputs)
      return ERR_INVALID("num_scan_inputs %lld does not fit %d inputs", (long long)n_scan_in, c->n_inputs);
    return scan8(c, body, (int)n_scan_in);
  }
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

/* ONNX SequenceMap: runs the body once per element of the first input (a sequence);
 * iteration i passes element i of every sequence input (all of one length) and every
 * tensor input whole, then the captures. Body output k, per iteration, becomes element
 * i of output sequence k. */
kiln_status exec_seq_map(exec_node_ctx *c) {
  graph *body = NULL;
  TRY(func_attr(c->node, "body", &body));
  int caps = n_captures(c->node), n_formal = c->n_inputs - caps;
  if (n_formal < 1) return ERR_INVALID("SequenceMap needs an input sequence");
  exec_list **lists = calloc((size_t)n_formal, sizeof *lists);
  if (!lists) abort();
  int64_t n = 0;
  kiln_status s = NULL;
  for (int j = 0; j < n_formal && !s; j++) {
    exec_list *l = exec_list_lookup(c->e, c->inputs[j]);
    if (l && l->kind != EXEC_LIST_SEQUENCE) s = ERR_INVALID("input %d must be a tensor or a sequence", j);
    else if (!l && j == 0) s = ERR_INVALID("input 0 must be a sequence");
    else if (l && j == 0) n = l->n;
    else if (l && l->n != n)
      s = ERR_INVALID("input %d is a sequence of %lld elements but input 0 has %lld", j, (long long)l->n,
                      (long long)n);
    lists[j] = l;
  }
  int n_out = c->n_outputs;
  exec_list **outs = calloc((size_t)n_out + 1, sizeof *outs);
  graph_tensor **ins = calloc((size_t)c->n_inputs + 1, sizeof *ins);
  graph_tensor **res = calloc((size_t)n_out + 1, sizeof *res);
  if (!outs || !ins || !res) abort();
  graph_shape unknown = graph_shape_unknown();
  for (int k = 0; k < n_out && !s; k++) {
    /* The element type: what the body's result declares (an empty sequence keeps it). */
    graph_dtype dt = GRAPH_DT_INVALID;
    if (k < body->n_results) {
      const graph_result *r = &body->results[k];
      if (r->port < r->node->n_outputs) dt = r->node->outputs[r->port].dtype;
    }
    s = exec_list_new(c, dt, &unknown, n, &outs[k], &c->outputs[k]);
    if (!s) outs[k]->kind = EXEC_LIST_SEQUENCE;
  }
  for (int64_t i = 0; i < n && !s; i++) {
    for (int j = 0; j < c->n_inputs; j++) ins[j] = j < n_formal && lists[j] ? lists[j]->elems[i] : c->inputs[j];
    s = exec_call_function(c->e, body, c->n_inputs, ins, n_out, res);
    for (int k = 0; k < n_out && !s; k++) {
      if (i == 0 || outs[k]->dtype == GRAPH_DT_INVALID) outs[k]->dtype = res[k]->dtype;
      else if (res[k]->dtype != outs[k]->dtype)
        s = ERR_INVALID("iteration %lld gives output %d as %s, earlier ones as %s", (long long)i, k,
                        graph_dtype_name(res[k]->dtype), graph_dtype_name(outs[k]->dtype));
      outs[k]->elems[i] = res[k];
      res[k] = NULL;
    }
    release(res, n_out);
  }
  if (s) release(c->outputs, n_out); /* the lists go when the run ends */
  free(res);
  free(ins);
  free(outs);
  free(lists);
  return s;
}
