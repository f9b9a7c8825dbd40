/* Running op-library ops: single-op HLO modules through the device, with a compile
 * cache, or the op's host kernel.
 *
 * An op with a lowering is lowered into a fresh module whose parameters are the
 * runtime dtypes and shapes of its inputs (must-be-constant inputs are given by value,
 * as constants and in ctx.const_inputs), compiled once for the device and cached.
 * The key is (op, attributes, output count, opset) -- interned once per node as a
 * "static key" -- plus the input dtypes and shapes and the values of the
 * must-be-constant inputs, so two nodes with the same op, attributes and signature
 * share one compiled module, as XLA's compilation cache does for clusters. The node
 * name is not part of the key; it only appears in error messages of the first
 * compile. A lowering that answers UNIMPLEMENTED falls back to the host kernel when
 * the op has one; a device compile that answers UNIMPLEMENTED falls back to the host
 * evaluator (the interpreter); the cache remembers either choice. The device is the
 * node's assigned device (the placer's choice; "host" means the evaluator), else the
 * executor's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "exec/exec_internal.h"
#include "hlo/builder.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

/* ------------------------------------------------------------ the cache ---------- */

typedef struct cache_entry {
  hlo_module *module;
  const backend *device; /* that compiled exe */
  backend_executable *exe;
  bool use_host;    /* lowering or compile answered UNIMPLEMENTED; the host kernel runs */
  bool tuple_root;  /* the root is a tuple of the produced outputs */
  int n_outputs;
  int *tuple_index; /* per node output: element of the root tuple, -1 if not produced */
  /* Devices with memory of their own: per input, whether it is a weight lowered as a
   * constant (so the device keeps it and it is not an argument), and the references
   * that keep those tensors -- and so the addresses the cache key holds -- alive. */
  bool *resident;
  int n_held;
  graph_tensor **held;
} cache_entry;

/* Graph constants of at least this many bytes feeding a node placed on a device with
 * memory of its own become constants of the node's module: the plugin adapter keeps
 * such constants on the device (uploaded once), instead of receiving the weight with
 * every run. Smaller ones stay arguments, so modules stay shared across nodes. */
#define RESIDENT_WEIGHT_MIN_BYTES 4096

static bool is_resident_weight(const backend *device, const graph_node *node, int i, const graph_tensor *t) {
  if (!backend_has_device_memory(device) || i >= node->n_inputs) return false;
  if (tensor_byte_size(t) < RESIDENT_WEIGHT_MIN_BYTES) return false;
  const exec_native *nat = exec_native_of(node->inputs[i].node);
  return nat && nat->fn == exec_native_const;
}

struct exec_cache {
  exec_key_table statics; /* value: id + 1 */
  int n_statics;
  exec_key_table compiled; /* value: cache_entry* */
};

exec_cache *exec_cache_new(void) {
  exec_cache *c = calloc(1, sizeof *c);
  if (!c) abort();
  return c;
}

static void entry_free(void *p) {
  cache_entry *ce = p;
  if (!ce) return;
  if (ce->exe) ce->device->destroy(ce->exe);
  hlo_module_free(ce->module);
  free(ce->tuple_index);
  free(ce->resident);
  for (int i = 0; i < ce->n_held; i++) tensor_free(ce->held[i]);
  free(ce->held);
  free(ce);
}

void exec_cache_free(exec_cache *c) {
  if (!c) return;
  exec_key_table_free(&c->statics, NULL);
  exec_key_table_free(&c->compiled, entry_free);
  free(c);
}

/* ------------------------------------------------------------- key bytes --------- */

static void put_attrs(strbuf *b, int n, const graph_attr *attrs);

static void put_value(strbuf *b, const graph_attr_value *v) {
  exec_key_i64(b, v->kind);
  switch (v->kind) {
    case GRAPH_ATTR_NONE: break;
    case GRAPH_ATTR_INT: exec_key_i64(b, v->i); break;
    case GRAPH_ATTR_FLOAT: exec_key_bytes(b, &v->f, sizeof v->f); break;
    case GRAPH_ATTR_BOOL: exec_key_i64(b, v->b); break;
    case GRAPH_ATTR_STRING: exec_key_str(b, v->s.data, v->s.len); break;
    case GRAPH_ATTR_TYPE: exec_key_i64(b, v->type); break;
    case GRAPH_ATTR_SHAPE:
      exec_key_i64(b, v->shape->rank);
      if (v->shape->rank > 0) exec_key_bytes(b, v->shape->dims, (size_t)v->shape->rank * sizeof v->shape->dims[0]);
      break;
    case GRAPH_ATTR_TENSOR: exec_key_tensor(b, v->tensor); break;
    case GRAPH_ATTR_FUNC:
      exec_key_str(b, v->func.name, strlen(v->func.name));
      exec_key_bytes(b, &v->func.body, sizeof v->func.body);
      put_attrs(b, v->func.n_attrs, v->func.attrs);
      break;
    case GRAPH_ATTR_LIST:
      exec_key_i64(b, v->list.elem);
      exec_key_i64(b, v->list.n);
      for (int i = 0; i < v->list.n; i++) put_value(b, &v->list.items[i]);
      break;
  }
}

static void put_attrs(strbuf *b, int n, const graph_attr *attrs) {
  exec_key_i64(b, n);
  for (int i = 0; i < n; i++) {
    exec_key_str(b, attrs[i].name, strlen(attrs[i].name));
    put_value(b, &attrs[i].value);
  }
}

int exec_cache_static_key(exec_cache *c, const graph_node *n) {
  strbuf b;
  strbuf_init(&b);
  exec_key_str(&b, n->op, strlen(n->op));
  exec_key_i64(&b, n->n_outputs);
  exec_key_i64(&b, n->graph->root->opset);
  put_attrs(&b, n->n_attrs, n->attrs);
  size_t len = b.len;
  void *found = exec_key_table_get(&c->statics, b.data ? b.data : "", len);
  if (found) {
    strbuf_free(&b);
    return (int)((intptr_t)found - 1);
  }
  int id = c->n_statics++;
  exec_key_table_put(&c->statics, strbuf_take(&b), len, (void *)(intptr_t)(id + 1));
  return id;
}


/* ------------------------------------------------------------- compiling --------- */

void exec_dump_module(const executor *e, const hlo_module *m, const char *file_name, const char *header) {
  strbuf path;
  strbuf_init(&path);
  strbuf_printf(&path, "%s/%s", e->dump_dir, file_name);
  char *text = hlo_module_to_dump_string(m, e->dump_large_constants);
  FILE *f = fopen(strbuf_cstr(&path), "w");
  if (f) {
    fprintf(f, "// %s\n%s", header, text);
    fclose(f);
  } else {
    log_warning("cannot write %s", strbuf_cstr(&path));
  }
  strbuf_free(&path);
  free(text);
}

static kiln_status build_module(executor *e, const backend *device, const graph_node *node, const op_def *def,
                                graph_tensor *const *in, int n_in, int n_out, cache_entry *ce) {
  hlo_module *m = hlo_module_new(graph_node_op_base(node));
  hlo_computation *c = hlo_computation_new(m, "main");
  op_lower_args a;
  op_lower_args_init(&a, node);
  hlo_instr **outs = a.outputs;
  kiln_status s = NULL;
  int n_params = 0;
  for (int i = 0; i < n_in && !s; i++) {
    const graph_tensor *t = in[i];
    a.dtypes[i] = t->dtype;
    if (op_input_must_be_constant(def, i, n_in)) {
      a.consts[i] = t;
      s = op_constant(c, t, &a.inputs[i]);
      continue;
    }
    if (ce->resident && ce->resident[i]) {
      /* The entry holds t, which outlives the module (both die with the entry). */
      s = op_constant_borrowed(c, t, &a.inputs[i]);
      continue;
    }
    graph_shape gs = tensor_shape(t);
    hlo_shape hs;
    if (!graph_shape_to_hlo(&gs, t->dtype, &hs)) {
      s = ERR_UNIMPLEMENTED("input %d has dtype %s, which an HLO module cannot take", i, graph_dtype_name(t->dtype));
      break;
    }
    s = hlo_build_parameter(c, n_params++, &hs, NULL, &a.inputs[i]);
  }
  if (!s) s = op_lower(def, node, c, &a);
  hlo_instr *root = NULL;
  if (!s) {
    ce->n_outputs = n_out;
    ce->tuple_index = calloc((size_t)n_out + 1, sizeof *ce->tuple_index);
    if (!ce->tuple_index) abort();
    if (n_out == 1) {
      if (!outs[0]) s = ERR_INTERNAL("the lowering produced no value");
      root = outs[0];
    } else {
      ce->tuple_root = true;
      hlo_instr **elems = calloc((size_t)n_out + 1, sizeof *elems);
      if (!elems) abort();
      int k = 0;
      for (int i = 0; i < n_out; i++) {
        ce->tuple_index[i] = outs[i] ? k : -1;
        if (outs[i]) elems[k++] = outs[i];
      }
      s = hlo_build_tuple(c, k, elems, &root);
      free(elems);
    }
  }
  if (!s) s = hlo_build_set_root(c, root);
  if (!s) {
    hlo_build_set_entry(m, c);
    s = hlo_build_order_computations(m);
  }
  if (!s && e->dump_dir) {
    strbuf file, header;
    strbuf_init(&file);
    strbuf_init(&header);
    strbuf_printf(&file, "op_%04lld.%s.hlo", (long long)e->stats.compiles, graph_node_op_base(node));
    strbuf_printf(&header, "node %s (%s)", node->name, node->op);
    exec_dump_module(e, m, strbuf_cstr(&file), strbuf_cstr(&header));
    strbuf_free(&file);
    strbuf_free(&header);
  }
  if (!s) s = status_wrap(hlo_verify_module(m), "the lowering built an invalid module");
  if (!s) {
    ce->module = m;
    m = NULL;
    ce->device = device;
    s = device->compile(device, ce->module, &e->compile, &ce->exe);
    if (s && kiln_status_code(s) == KILN_UNIMPLEMENTED && device != &interpreter_backend) {
      /* The host evaluator is the last resort for lowered ops (the placer's host). */
      log_info("node %s (%s): device %s cannot compile it (%s); running it on the host evaluator", node->name,
               node->op, device->name, kiln_status_message(s));
      kiln_status_free(s);
      ce->device = &interpreter_backend;
      s = interpreter_backend.compile(&interpreter_backend, ce->module, &e->compile, &ce->exe);
    }
    if (s) s = status_wrap(s, "compiling for device %s", ce->device->name);
    else {
      e->stats.evaluated_instructions += backend_evaluated_instructions(ce->device, ce->exe);
      e->stats.bytes_to_device += backend_resident_bytes(ce->device, ce->exe);
    }
  }
  hlo_module_free(m);
  op_lower_args_free(&a);
  return s;
}

static kiln_status find_or_compile(executor *e, const graph_node *node, const op_def *def, int static_key,
                                   graph_tensor *const *in, int n_in, int n_out, cache_entry **out) {
  exec_cache *c = e->cache;
  /* Placement (src/jit/placer.c): the node's assigned device when it has one, the
   * host evaluator for "host", else the executor's device. */
  const backend *device = e->device;
  if (node->assigned_device) {
    const backend *b = strcmp(node->assigned_device, "host") == 0 ? &interpreter_backend
                                                                    : backend_find(node->assigned_device);
    if (b) device = b;
  }
  strbuf b;
  strbuf_init(&b);
  exec_key_i64(&b, static_key);
  exec_key_str(&b, device->name, strlen(device->name));
  for (int i = 0; i < n_in; i++) {
    exec_key_i64(&b, in[i]->dtype);
    exec_key_i64(&b, in[i]->rank);
    exec_key_bytes(&b, in[i]->dims, (size_t)in[i]->rank * sizeof in[i]->dims[0]);
  }
  for (int i = 0; i < n_in; i++)
    if (op_input_must_be_constant(def, i, n_in)) exec_key_tensor(&b, in[i]);
  /* Resident weights: the module is this weight's own (keyed by the tensor, which the
   * entry holds so the address stays unique). */
  bool *resident = NULL;
  for (int i = 0; i < n_in; i++) {
    if (op_input_must_be_constant(def, i, n_in) || !is_resident_weight(device, node, i, in[i])) continue;
    if (!resident) {
      resident = calloc((size_t)n_in, sizeof *resident);
      if (!resident) abort();
    }
    resident[i] = true;
    exec_key_i64(&b, (int64_t)(intptr_t)in[i]);
  }
  size_t len = b.len;
  cache_entry *hit = exec_key_table_get(&c->compiled, b.data, len);
  if (hit) {
    strbuf_free(&b);
    free(resident);
    *out = hit;
    e->stats.cache_hits++;
    return NULL;
  }
  cache_entry *ce = calloc(1, sizeof *ce);
  if (!ce) abort();
  ce->resident = resident;
  for (int i = 0; resident && i < n_in; i++) {
    if (!resident[i]) continue;
    graph_tensor **h = realloc(ce->held, (size_t)(ce->n_held + 1) * sizeof *h);
    if (!h) abort();
    ce->held = h;
    ce->held[ce->n_held++] = tensor_ref(in[i]);
  }
  kiln_status st = build_module(e, device, node, def, in, n_in, n_out, ce);
  if (st && kiln_status_code(st) == KILN_UNIMPLEMENTED && def->host) {
    log_info("node %s (%s): no lowering for this signature (%s); using the host kernel", node->name, node->op,
             kiln_status_message(st));
    kiln_status_free(st);
    st = NULL;
    entry_free(ce);
    ce = calloc(1, sizeof *ce);
    if (!ce) abort();
    ce->use_host = true;
  }
  if (st) {
    entry_free(ce);
    strbuf_free(&b);
    return st;
  }
  if (!ce->use_host) e->stats.compiles++;
  exec_key_table_put(&c->compiled, strbuf_take(&b), len, ce);
  *out = ce;
  return NULL;
}

/* --------------------------------------------------------------- running --------- */

static kiln_status run_host(executor *e, const graph_node *node, const op_def *def, graph_tensor *const *in, int n_in,
                            graph_tensor **out, int n_out) {
  op_host_ctx hc = {node, node->graph->root->opset, n_in, in, n_out, out};
  e->stats.host_runs++;
  kiln_status s = def->host(&hc);
  if (s)
    for (int i = 0; i < n_out; i++) {
      tensor_free(out[i]);
      out[i] = NULL;
    }
  return s;
}

static kiln_status run_compiled(executor *e, const op_def *def, const cache_entry *ce, graph_tensor *const *in,
                                int n_in, graph_tensor **out, int n_out) {
  hlo_literal small_views[8] = {0};
  hlo_literal *small_ptrs[8] = {0};
  hlo_literal *views = n_in <= 8 ? small_views : calloc((size_t)n_in, sizeof *views);
  hlo_literal **ptrs = n_in <= 8 ? small_ptrs : calloc((size_t)n_in, sizeof *ptrs);
  if (!views || !ptrs) abort();
  int n_args = 0;
  for (int i = 0; i < n_in; i++) {
    if (op_input_must_be_constant(def, i, n_in) || (ce->resident && ce->resident[i])) continue;
    tensor_literal_view(in[i], &views[n_args]); /* checked when the module was built */
    ptrs[n_args] = &views[n_args];
    n_args++;
  }
  hlo_literal *res = NULL;
  kiln_status s = ce->device->execute(ce->exe, ptrs, n_args, &res);
  if (backend_has_device_memory(ce->device)) {
    /* The literal execute of a device with memory uploads every argument and downloads
     * every result. */
    for (int i = 0; i < n_args; i++) e->stats.bytes_to_device += shape_byte_size(&ptrs[i]->shape);
    if (!s) e->stats.bytes_to_host += literal_array_bytes(res);
  }
  if (views != small_views) free(views);
  if (ptrs != small_ptrs) free(ptrs);
  e->stats.lowered_runs++;
  if (s) return status_wrap(s, "running on device %s", ce->device->name);
  if (!ce->tuple_root) {
    s = tensor_adopt_literal(res, &out[0]);
    if (s) literal_free(res);
    return s;
  }
  for (int k = 0; k < n_out && !s; k++) {
    int j = ce->tuple_index[k];
    if (j < 0) continue;
    if (res->shape.type != HLO_TUPLE || j >= res->shape.n_elems) {
      s = ERR_INTERNAL("the device returned a result of the wrong structure");
      break;
    }
    s = tensor_adopt_literal(res->tuple[j], &out[k]);
    if (!s) res->tuple[j] = NULL;
  }
  literal_free(res);
  if (s)
    for (int k = 0; k < n_out; k++) {
      tensor_free(out[k]);
      out[k] = NULL;
    }
  return s;
}

kiln_status exec_run_op(executor *e, const graph_node *node, const op_def *def, int static_key,
                        graph_tensor *const *in, int n_in, graph_tensor **out, int n_out) {
  bool host_first = !def->lower;
  if (def->host && (def->traits & OP_DYNAMIC_SHAPE)) host_first = true;
  for (int i = 0; i < n_in && !host_first; i++) {
    hlo_type t;
    if (!op_input_must_be_constant(def, i, n_in) && !graph_dtype_to_hlo(in[i]->dtype, &t)) {
      if (!def->host)
        return ERR_UNIMPLEMENTED("input %d has dtype %s, which an HLO module cannot take, and the op has no host "
                                 "kernel",
                                 i, graph_dtype_name(in[i]->dtype));
      host_first = true;
    }
  }
  if (host_first) return run_host(e, node, def, in, n_in, out, n_out);
  cache_entry *ce;
  TRY(find_or_compile(e, node, def, static_key, in, n_in, n_out, &ce));
  if (ce->use_host) return run_host(e, node, def, in, n_in, out, n_out);
  return run_compiled(e, def, ce, in, n_in, out, n_out);
}
