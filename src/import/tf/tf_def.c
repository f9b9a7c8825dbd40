/* Bookkeeping for the importer's neutral form (tf_def.h): the import context, arena
 * arrays that grow by doubling, TensorFlow's DataType enum names (which the JSON form
 * spells out, "DT_FLOAT", and error messages quote), tensor-name parsing and whole-file
 * reads shared by both readers. */
#include "import/tf/tf_def.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tf_ctx_init(tf_ctx *c, const char *source) {
  memset(c, 0, sizeof *c);
  c->scratch = arena_new();
  c->source = arena_strdup(c->scratch, source);
}

void tf_ctx_release(tf_ctx *c) {
  for (int i = 0; i < c->n_tensors; i++) tensor_free(c->tensors[i]);
  free(c->tensors);
  arena_free(c->scratch);
  c->tensors = NULL;
  c->scratch = NULL;
  c->n_tensors = c->cap_tensors = 0;
}

void tf_ctx_own_tensor(tf_ctx *c, graph_tensor *t) {
  if (c->n_tensors == c->cap_tensors) {
    int cap = c->cap_tensors ? c->cap_tensors * 2 : 64;
    graph_tensor **n = realloc(c->tensors, (size_t)cap * sizeof *n);
    if (!n) {
      fprintf(stderr, "kiln: out of memory\n");
      abort();
    }
    c->tensors = n;
    c->cap_tensors = cap;
  }
  c->tensors[c->n_tensors++] = t;
}

void tf_grow(arena *a, void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int c = *cap ? *cap : 4;
  while (c < need) c *= 2;
  void *n = arena_calloc(a, (size_t)c, elem);
  if (*cap) memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = c;
}

tf_node_def *tf_graph_add_node(tf_ctx *c, tf_graph_def *g) {
  tf_grow(c->scratch, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes);
  tf_node_def *n = arena_alloc(c->scratch, sizeof *n);
  g->nodes[g->n_nodes++] = n;
  return n;
}

tf_function_def *tf_graph_add_function(tf_ctx *c, tf_graph_def *g) {
  tf_grow(c->scratch, (void **)&g->functions, &g->cap_functions, g->n_functions + 1, sizeof *g->functions);
  tf_function_def *f = arena_alloc(c->scratch, sizeof *f);
  g->functions[g->n_functions++] = f;
  return f;
}

tf_node_def *tf_function_add_node(tf_ctx *c, tf_function_def *f) {
  tf_grow(c->scratch, (void **)&f->nodes, &f->cap_nodes, f->n_nodes + 1, sizeof *f->nodes);
  tf_node_def *n = arena_alloc(c->scratch, sizeof *n);
  f->nodes[f->n_nodes++] = n;
  return n;
}

void tf_node_add_input(tf_ctx *c, tf_node_def *n, const char *input) {
  tf_grow(c->scratch, (void **)&n->inputs, &n->cap_inputs, n->n_inputs + 1, sizeof *n->inputs);
  n->inputs[n->n_inputs++] = input;
}

void tf_node_add_attr(tf_ctx *c, tf_node_def *n, const char *name, const graph_attr_value *v) {
  tf_grow(c->scratch, (void **)&n->attrs, &n->cap_attrs, n->n_attrs + 1, sizeof *n->attrs);
  n->attrs[n->n_attrs].name = name;
  n->attrs[n->n_attrs].value = *v;
  n->n_attrs++;
}

/* Index = DataType number (tensorflow/core/framework/types.proto). */
static const char *const tf_enum_names[] = {
    "DT_INVALID",         "DT_FLOAT",      "DT_DOUBLE",         "DT_INT32",
    "DT_UINT8",           "DT_INT16",      "DT_INT8",           "DT_STRING",
    "DT_COMPLEX64",       "DT_INT64",      "DT_BOOL",           "DT_QINT8",
    "DT_QUINT8",          "DT_QINT32",     "DT_BFLOAT16",       "DT_QINT16",
    "DT_QUINT16",         "DT_UINT16",     "DT_COMPLEX128",     "DT_HALF",
    "DT_RESOURCE",        "DT_VARIANT",    "DT_UINT32",         "DT_UINT64",
    "DT_FLOAT8_E5M2",     "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3B11FNUZ",
    "DT_FLOAT8_E5M2FNUZ", "DT_INT4",       "DT_UINT4",          "DT_INT2",
    "DT_UINT2",
};
enum { TF_ENUM_COUNT = sizeof tf_enum_names / sizeof tf_enum_names[0], TF_REF = 100 };

bool tf_dtype_from_enum_name(const char *s, int *out) {
  size_t len = strlen(s);
  int ref = 0;
  if (len > 4 && strcmp(s + len - 4, "_REF") == 0) {
    ref = TF_REF;
    len -= 4;
  }
  for (int i = 0; i < TF_ENUM_COUNT; i++)
    if (strlen(tf_enum_names[i]) == len && strncmp(tf_enum_names[i], s, len) == 0) {
      if (ref && i == 0) return false;
      *out = i + ref;
      return true;
    }
  return false;
}

const char *tf_dtype_enum_name(int t) {
  if (t > TF_REF) t -= TF_REF;
  return t >= 0 && t < TF_ENUM_COUNT ? tf_enum_names[t] : NULL;
}

kiln_status tf_dtype_to_graph(int tf_type, const char *what, graph_dtype *out) {
  graph_dtype d = graph_dtype_from_tf(tf_type);
  if (d != GRAPH_DT_INVALID) {
    *out = d;
    return NULL;
  }
  if (tf_type == 0) return ERR_INVALID("%s has no dtype (DT_INVALID)", what);
  const char *name = tf_dtype_enum_name(tf_type);
  if (name) return status_error(KILN_UNIMPLEMENTED, "%s: dtype %s is not supported", what, name);
  return ERR_INVALID("%s: unknown dtype number %d", what, tf_type);
}

bool tf_parse_tensor_name(arena *a, const char *s, const char **node, int *port) {
  const char *colon = strrchr(s, ':');
  if (!colon) {
    *node = s;
    *port = 0;
    return true;
  }
  const char *d = colon + 1;
  if (!*d) return false;
  long v = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9') return false;
    v = v * 10 + (*d - '0');
    if (v >= GRAPH_MAX_OUTPUTS) return false;
  }
  *node = arena_strndup(a, s, (size_t)(colon - s));
  *port = (int)v;
  return true;
}

