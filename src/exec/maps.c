/* ONNX map values and ai.onnx.ml ZipMap, the op that makes them, as an executor native.
 *
 * An ONNX map is an exec_list of kind EXEC_LIST_MAP (exec_internal.h) holding two
 * tensors, the 1-D keys and the 1-D values, entry i mapping keys[i] to values[i]. That
 * is how a map crosses the API (kiln.h's KILN_KIND_MAP) and the CLI (keys.npy,
 * values.npy), so a map needs no conversion on the way out. ZipMap lives here rather
 * than among the ml host kernels of ops/ops_onnx_ml.c because only the executor can
 * make list values: it turns an [N, C] (or [C]) float tensor of class scores into a
 * sequence of N maps, row i mapping label j (classlabels_int64s or classlabels_strings,
 * exactly one given, C of them) to score (i, j), which is what skl2onnx puts after a
 * classifier's probabilities by default. Every map shares one keys tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

/* The node's label list attribute, or NULL when absent. */
static const graph_attr_value *labels_attr(const graph_node *n, const char *name) {
  const graph_attr_value *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_LIST ? a : NULL;
}

/* The keys tensor: the C labels as int64 or string. */
static kiln_status zipmap_keys(const graph_node *n, graph_tensor **out) {
  const graph_attr_value *ints = labels_attr(n, "classlabels_int64s");
  const graph_attr_value *strs = labels_attr(n, "classlabels_strings");
  if (ints && ints->list.n == 0) ints = NULL;
  if (strs && strs->list.n == 0) strs = NULL;
  if (!ints == !strs)
    return ERR_INVALID("ZipMap needs exactly one of classlabels_int64s and classlabels_strings (%s given)",
                       ints ? "both" : "neither");
  const graph_attr_value *a = ints ? ints : strs;
  if (a->list.elem != (ints ? GRAPH_ATTR_INT : GRAPH_ATTR_STRING))
    return ERR_INVALID("ZipMap: %s must be a list of %s", ints ? "classlabels_int64s" : "classlabels_strings",
                       ints ? "ints" : "strings");
  int64_t c = a->list.n;
  TRY(tensor_create(ints ? GRAPH_DT_INT64 : GRAPH_DT_STRING, 1, &c, out));
  for (int64_t j = 0; j < c; j++) {
    const graph_attr_value *it = &a->list.items[j];
    if (ints) ((int64_t *)(*out)->data)[j] = it->i;
    else tensor_set_string(*out, j, it->s.data, it->s.len);
  }
  return NULL;
}

kiln_status exec_zipmap(exec_node_ctx *c) {
  if (c->n_inputs < 1) return ERR_INVALID("ZipMap needs an input");
  const graph_tensor *x = c->inputs[0];
  if (exec_list_lookup(c->e, x)) return ERR_INVALID("ZipMap's input must be a tensor, got a sequence or optional");
  if (x->dtype != GRAPH_DT_FLOAT)
    return ERR_INVALID("ZipMap's input must be float32, got %s", graph_dtype_name(x->dtype));
  if (x->rank != 1 && x->rank != 2)
    return ERR_INVALID("ZipMap's input must be [N, C] or [C], got rank %d", x->rank);
  int64_t rows = x->rank == 2 ? x->dims[0] : 1, cols = x->dims[x->rank - 1];
  graph_tensor *keys;
  TRY(zipmap_keys(c->node, &keys));
  kiln_status s = NULL;
  if (keys->n != cols)
    s = ERR_INVALID("ZipMap has %lld class labels but its input has %lld columns", (long long)keys->n,
                    (long long)cols);
  exec_list *seq = NULL;
  graph_tensor *handle = NULL;
  graph_shape unknown = graph_shape_unknown();
  if (!s) s = exec_list_new(c, GRAPH_DT_INVALID, &unknown, rows, &seq, &handle);
  if (!s) seq->kind = EXEC_LIST_SEQUENCE;
  const float *xs = x->data;
  /* The lists belong to the run; elements set so far go with them on error. */
  for (int64_t i = 0; i < rows && !s; i++) {
    exec_list *map;
    s = exec_list_new(c, GRAPH_DT_FLOAT, &unknown, 2, &map, &seq->elems[i]);
    if (s) break;
    map->kind = EXEC_LIST_MAP;
    map->elems[0] = tensor_ref(keys);
    s = tensor_create(GRAPH_DT_FLOAT, 1, &cols, &map->elems[1]);
    if (!s && cols) memcpy(map->elems[1]->data, xs + i * cols, (size_t)cols * sizeof(float));
  }
  tensor_free(keys);
  if (s) {
    tensor_free(handle);
    return s;
  }
  c->outputs[0] = handle;
  return NULL;
}
