/* Graph inputs and results that are not tensors: ONNX sequences, optionals and maps
 * crossing the executor's boundary as executor_value trees (executor.h).
 *
 * Inside a run these values are lists of resources.c (DT_VARIANT handles that die when
 * the run ends), so executor_run_values builds a list for each non-tensor feed before
 * the run and, after it but before the lists go, turns every list a result refers to
 * back into a value tree holding references to the element tensors. A fed value is
 * checked against the type the ONNX importer spelled into the input's "_onnx_type"
 * attribute (onnx_import.h): the kind at every level and each element's dtype, so a
 * tensor where a sequence is declared or an int64 element in a sequence of float32 is
 * an error naming the input and the element rather than a failure deep in the graph.
 * One convenience: a plain tensor given for an optional input is the optional holding
 * it (the usual way to pass a present optional). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

/* ------------------------------------------------------------------ values ---- */

executor_value *executor_value_tensor(graph_tensor *t) {
  executor_value *v = calloc(1, sizeof *v);
  if (!v) abort();
  v->kind = EXECUTOR_VALUE_TENSOR;
  v->tensor = t;
  v->elem_dtype = t ? t->dtype : GRAPH_DT_INVALID;
  return v;
}

executor_value *executor_value_container(executor_value_kind kind, graph_dtype elem_dtype) {
  executor_value *v = calloc(1, sizeof *v);
  if (!v) abort();
  v->kind = kind;
  v->elem_dtype = elem_dtype;
  return v;
}

void executor_value_append(executor_value *v, executor_value *item) {
  /* Grows by doubling: capacity is the next power of two at or above n. */
  if ((v->n & (v->n - 1)) == 0) {
    executor_value **items = realloc(v->items, (size_t)(v->n ? 2 * v->n : 1) * sizeof *items);
    if (!items) abort();
    v->items = items;
  }
  v->items[v->n++] = item;
}

void executor_value_free(executor_value *v) {
  if (!v) return;
  tensor_free(v->tensor);
  for (int i = 0; i < v->n; i++) executor_value_free(v->items[i]);
  free(v->items);
  free(v);
}

const char *executor_value_kind_name(executor_value_kind kind) {
  switch (kind) {
    case EXECUTOR_VALUE_SEQUENCE: return "sequence";
    case EXECUTOR_VALUE_OPTIONAL: return "optional";
    case EXECUTOR_VALUE_MAP: return "map";
    default: return "tensor";
  }
}

const char *executor_feed_type(const graph_node *feed) {
  const graph_attr_value *a = graph_node_attr(feed, "_onnx_type");
  if (!a || a->kind != GRAPH_ATTR_STRING) return NULL;
  return a->s.data;
}

/* ------------------------------------------------------- checking types ---- */

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* The end of the type text starting at t: the ',' or ')' that closes it, or the NUL. */
static const char *type_end(const char *t) {
  int depth = 0;
  for (; *t; t++) {
    if (*t == '(') depth++;
    else if (*t == ')' && depth-- == 0) break;
    else if (*t == ',' && depth == 0) break;
  }
  return t;
}

/* Whether dtype is the element type named by name[0..len) ("?" matches anything). */
static bool dtype_is(graph_dtype dtype, const char *name, size_t len) {
  if (len == 1 && name[0] == '?') return true;
  const char *have = graph_dtype_name(dtype);
  return strlen(have) == len && strncmp(have, name, len) == 0;
}

static kiln_status kind_error(const char *where, const char *t, const executor_value *v) {
  int len = (int)(type_end(t) - t);
  if (v->kind == EXECUTOR_VALUE_TENSOR)
    return ERR_INVALID("%s is declared %.*s but a %s tensor was given", where, len, t,
                       graph_dtype_name(v->tensor->dtype));
  return ERR_INVALID("%s is declared %.*s but a %s was given", where, len, t, executor_value_kind_name(v->kind));
}

/* Checks v against the type text at t; `where` names the value ("input x", "input x
 * element 2"). */
static kiln_status check_type(const char *t, const executor_value *v, const char *where) {
  if (t[0] == '?') return NULL;
  char inner[512];
  if (starts_with(t, "tensor(")) {
    if (v->kind != EXECUTOR_VALUE_TENSOR) return kind_error(where, t, v);
    const char *name = t + 7, *end = strchr(name, ')');
    size_t len = end ? (size_t)(end - name) : strlen(name);
    if (!dtype_is(v->tensor->dtype, name, len))
      return ERR_INVALID("%s is a %s tensor but %.*s is declared", where, graph_dtype_name(v->tensor->dtype),
                         (int)(type_end(t) - t), t);
    return NULL;
  }
  if (starts_with(t, "sequence(")) {
    if (v->kind != EXECUTOR_VALUE_SEQUENCE) return kind_error(where, t, v);
    const char *elem = t + 9;
    for (int i = 0; i < v->n; i++) {
      snprintf(inner, sizeof inner, "%.400s element %d", where, i);
      TRY(check_type(elem, v->items[i], inner));
    }
    if (starts_with(elem, "tensor(") && v->elem_dtype != GRAPH_DT_INVALID) {
      const char *name = elem + 7, *end = strchr(name, ')');
      size_t len = end ? (size_t)(end - name) : strlen(name);
      if (!dtype_is(v->elem_dtype, name, len))
        return ERR_INVALID("%s is a sequence of %s but %.*s is declared", where, graph_dtype_name(v->elem_dtype),
                           (int)(type_end(t) - t), t);
    }
    return NULL;
  }
  if (starts_with(t, "optional(")) {
    if (v->kind != EXECUTOR_VALUE_OPTIONAL) return kind_error(where, t, v);
    if (v->n > 1) return ERR_INVALID("%s: an optional holds at most one value, given %d", where, v->n);
    return v->n ? check_type(t + 9, v->items[0], where) : NULL;
  }
  if (starts_with(t, "map(")) {
    if (v->kind != EXECUTOR_VALUE_MAP) return kind_error(where, t, v);
    if (v->n != 2 || v->items[0]->kind != EXECUTOR_VALUE_TENSOR || v->items[1]->kind != EXECUTOR_VALUE_TENSOR)
      return ERR_INVALID("%s: a map is a pair of tensors (keys, values)", where);
    const graph_tensor *keys = v->items[0]->tensor, *vals = v->items[1]->tensor;
    if (keys->rank != 1 || vals->rank != 1 || keys->n != vals->n)
      return ERR_INVALID("%s: a map's keys and values must be 1-D and of one length (%lld keys, %lld values)", where,
                         (long long)keys->n, (long long)vals->n);
    const char *key = t + 4, *comma = type_end(key);
    if (!dtype_is(keys->dtype, key, (size_t)(comma - key)))
      return ERR_INVALID("%s has %s keys but %.*s is declared", where, graph_dtype_name(keys->dtype),
                         (int)(type_end(t) - t), t);
    if (*comma != ',') return NULL;
    const char *val = comma + 1;
    if (starts_with(val, "tensor(")) {
      snprintf(inner, sizeof inner, "%.400s values", where);
      return check_type(val, v->items[1], inner);
    }
    return ERR_UNIMPLEMENTED("%s: maps whose values are %.*s are not supported", where, (int)(type_end(val) - val),
                             val);
  }
  return ERR_UNIMPLEMENTED("%s: values of type %s are not supported", where, t);
}

/* ------------------------------------------------------------ conversions ---- */

/* v as a tensor the graph takes: itself, or the handle of a new list of this run. */
static kiln_status to_handle(executor *e, const executor_value *v, const char *where, graph_tensor **out) {
  *out = NULL;
  if (v->kind == EXECUTOR_VALUE_TENSOR) {
    if (!v->tensor) return ERR_INVALID("%s: no tensor", where);
    *out = tensor_ref(v->tensor);
    return NULL;
  }
  graph_dtype dtype = v->elem_dtype;
  if (v->kind == EXECUTOR_VALUE_SEQUENCE)
    for (int i = 0; i < v->n; i++) {
      const executor_value *it = v->items[i];
      if (it->kind != EXECUTOR_VALUE_TENSOR) continue;
      /* A sequence holds one element type (sequences.c relies on it). */
      if (dtype == GRAPH_DT_INVALID) dtype = it->tensor->dtype;
      else if (it->tensor->dtype != dtype)
        return ERR_INVALID("%s element %d is a %s tensor but the sequence holds %s tensors", where, i,
                           graph_dtype_name(it->tensor->dtype), graph_dtype_name(dtype));
    }
  if (v->kind == EXECUTOR_VALUE_OPTIONAL && v->n == 1 && v->items[0]->kind == EXECUTOR_VALUE_TENSOR)
    dtype = v->items[0]->tensor->dtype;
  graph_shape unknown = graph_shape_unknown();
  exec_list *l;
  TRY(exec_list_new_in(e, dtype, &unknown, v->n, &l, out));
  l->kind = v->kind == EXECUTOR_VALUE_SEQUENCE   ? EXEC_LIST_SEQUENCE
            : v->kind == EXECUTOR_VALUE_OPTIONAL ? EXEC_LIST_OPTIONAL
                                                 : EXEC_LIST_MAP;
  /* Elements left NULL on error are fine: the list goes when the run ends. */
  for (int i = 0; i < v->n; i++) TRY(to_handle(e, v->items[i], where, &l->elems[i]));
  return NULL;
}

/* A result (or element) tensor as a value: lists of this run become trees. */
static kiln_status from_handle(executor *e, graph_tensor *t, int depth, executor_value **out) {
  *out = NULL;
  exec_list *l = exec_list_lookup(e, t);
  if (!l || l->kind == EXEC_LIST_TENSOR_LIST) {
    *out = executor_value_tensor(tensor_ref(t));
    return NULL;
  }
  if (depth > 64) return ERR_INVALID("a result nests sequences deeper than 64 levels");
  executor_value_kind kind = l->kind == EXEC_LIST_SEQUENCE   ? EXECUTOR_VALUE_SEQUENCE
                             : l->kind == EXEC_LIST_OPTIONAL ? EXECUTOR_VALUE_OPTIONAL
                                                             : EXECUTOR_VALUE_MAP;
  executor_value *v = executor_value_container(kind, l->dtype);
  for (int64_t i = 0; i < l->n; i++) {
    executor_value *item = NULL;
    kiln_status s = l->elems[i] ? from_handle(e, l->elems[i], depth + 1, &item)
                                : ERR_INTERNAL("element %lld of a %s result is not set", (long long)i,
                                               executor_value_kind_name(kind));
    if (s) {
      executor_value_free(v);
      return s;
    }
    executor_value_append(v, item);
  }
  *out = v;
  return NULL;
}

kiln_status executor_run_values(executor *e, int n_inputs, const char *const *names, executor_value *const *inputs,
                                executor_value **outputs) {
  int n_results = e->g->n_results;
  for (int r = 0; r < n_results; r++) outputs[r] = NULL;
  graph_tensor **feeds = calloc((size_t)n_inputs + 1, sizeof *feeds);
  graph_tensor **results = calloc((size_t)n_results + 1, sizeof *results);
  if (!feeds || !results) abort();
  kiln_status s = NULL;
  for (int i = 0; i < n_inputs && !s; i++) {
    const executor_value *v = inputs[i];
    char where[300];
    snprintf(where, sizeof where, "input %.250s", names[i]);
    const graph_node *feed = NULL;
    for (int k = 0; k < executor_num_feeds(e) + executor_num_optional_feeds(e) && !feed; k++) {
      const graph_node *f = k < executor_num_feeds(e) ? executor_feed(e, k)
                                                     : executor_optional_feed(e, k - executor_num_feeds(e));
      if (strcmp(f->name, names[i]) == 0) feed = f;
    }
    const char *type = feed ? executor_feed_type(feed) : NULL;
    executor_value *wrapped = NULL;
    if (!v) {
      s = ERR_INVALID("%s: no value", where);
      break;
    }
    if (type && starts_with(type, "optional(") && v->kind != EXECUTOR_VALUE_OPTIONAL) {
      /* A present optional may be given as what it holds: wrap it (borrowing v). */
      wrapped = executor_value_container(EXECUTOR_VALUE_OPTIONAL, GRAPH_DT_INVALID);
      executor_value_append(wrapped, (executor_value *)v);
      v = wrapped;
    }
    if (type) s = check_type(type, v, where);
    else if (feed && v->kind != EXECUTOR_VALUE_TENSOR)
      s = ERR_INVALID("%s is a tensor but a %s was given", where, executor_value_kind_name(v->kind));
    if (!s) s = to_handle(e, v, where, &feeds[i]);
    if (wrapped) {
      wrapped->n = 0; /* v was borrowed */
      executor_value_free(wrapped);
    }
  }
  if (!s) s = exec_run_fed(e, n_inputs, names, feeds, results);
  for (int r = 0; r < n_results && !s; r++) s = from_handle(e, results[r], 0, &outputs[r]);
  if (s)
    for (int r = 0; r < n_results; r++) {
      executor_value_free(outputs[r]);
      outputs[r] = NULL;
    }
  for (int r = 0; r < n_results; r++) tensor_free(results[r]);
  for (int i = 0; i < n_inputs; i++) tensor_free(feeds[i]);
  exec_resources_end_run(e->res);
  free(results);
  free(feeds);
  return s;
}
