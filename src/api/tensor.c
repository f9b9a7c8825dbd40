/* kiln_tensor: the dense tensors the API hands out, and the element-type tables.
 *
 * A kiln_tensor owns one malloc'ed row-major buffer. Outputs of a graph model arrive as
 * host tensors (graph_tensor) and of an HLO module as literal leaves; both give their
 * buffer to the kiln_tensor without a copy when nobody else holds it, so returning a
 * large output costs no memcpy; string outputs are copied into one block of element
 * pointers followed by their NUL-terminated texts (kiln.h's KILN_STRING form). The
 * public dtype enum has its own numbering (stable across releases); the tables here map
 * it onto the graph and HLO types. A sequence, optional or map result is a kiln_tensor
 * of no elements whose items are kiln_tensors it owns, built from the executor's value
 * tree (exec/executor.h) with the same buffer moves. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "base/status.h"

struct kiln_tensor {
  kiln_dtype dtype;
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
  int64_t n;
  size_t bytes;
  void *data; /* owned */
  kiln_kind kind;
  int n_items;
  kiln_tensor **items; /* owned */
};

typedef struct dtype_row {
  kiln_dtype kiln;
  graph_dtype graph;
  const char *name;
  size_t size;
} dtype_row;

static const dtype_row dtypes[] = {
    {KILN_BOOL, GRAPH_DT_BOOL, "bool", 1},
    {KILN_INT8, GRAPH_DT_INT8, "int8", 1},
    {KILN_INT16, GRAPH_DT_INT16, "int16", 2},
    {KILN_INT32, GRAPH_DT_INT32, "int32", 4},
    {KILN_INT64, GRAPH_DT_INT64, "int64", 8},
    {KILN_UINT8, GRAPH_DT_UINT8, "uint8", 1},
    {KILN_UINT16, GRAPH_DT_UINT16, "uint16", 2},
    {KILN_UINT32, GRAPH_DT_UINT32, "uint32", 4},
    {KILN_UINT64, GRAPH_DT_UINT64, "uint64", 8},
    {KILN_FLOAT16, GRAPH_DT_HALF, "float16", 2},
    {KILN_BFLOAT16, GRAPH_DT_BFLOAT16, "bfloat16", 2},
    {KILN_FLOAT32, GRAPH_DT_FLOAT, "float32", 4},
    {KILN_FLOAT64, GRAPH_DT_DOUBLE, "float64", 8},
    {KILN_COMPLEX64, GRAPH_DT_COMPLEX64, "complex64", 8},
    {KILN_COMPLEX128, GRAPH_DT_COMPLEX128, "complex128", 16},
    {KILN_FLOAT8E4M3FN, GRAPH_DT_FLOAT8E4M3FN, "float8_e4m3fn", 1},
    {KILN_FLOAT8E4M3FNUZ, GRAPH_DT_FLOAT8E4M3FNUZ, "float8_e4m3fnuz", 1},
    {KILN_FLOAT8E5M2, GRAPH_DT_FLOAT8E5M2, "float8_e5m2", 1},
    {KILN_FLOAT8E5M2FNUZ, GRAPH_DT_FLOAT8E5M2FNUZ, "float8_e5m2fnuz", 1},
    {KILN_FLOAT4E2M1FN, GRAPH_DT_FLOAT4E2M1, "float4_e2m1fn", 1},
    {KILN_INT4, GRAPH_DT_INT4, "int4", 1},
    {KILN_UINT4, GRAPH_DT_UINT4, "uint4", 1},
    {KILN_INT2, GRAPH_DT_INT2, "int2", 1},
    {KILN_UINT2, GRAPH_DT_UINT2, "uint2", 1},
    {KILN_FLOAT8E8M0FNU, GRAPH_DT_FLOAT8E8M0, "float8_e8m0fnu", 1},
    {KILN_STRING, GRAPH_DT_STRING, "string", sizeof(const char *)}, /* elements are pointers (kiln.h) */
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

static const dtype_row *row_of(kiln_dtype d) {
  for (int i = 0; i < N_DTYPES; i++)
    if (dtypes[i].kiln == d) return &dtypes[i];
  return NULL;
}

size_t kiln_dtype_size(kiln_dtype d) {
  const dtype_row *r = row_of(d);
  return r ? r->size : 0;
}

const char *kiln_dtype_name(kiln_dtype d) {
  const dtype_row *r = row_of(d);
  return r ? r->name : "invalid";
}

bool api_dtype_to_graph(kiln_dtype d, graph_dtype *out) {
  const dtype_row *r = row_of(d);
  if (r) *out = r->graph;
  return r != NULL;
}

kiln_dtype api_dtype_from_graph(graph_dtype d) {
  for (int i = 0; i < N_DTYPES; i++)
    if (dtypes[i].graph == d) return dtypes[i].kiln;
  return KILN_DTYPE_INVALID;
}

kiln_dtype api_dtype_from_hlo(hlo_type t) { return api_dtype_from_graph(graph_dtype_from_hlo(t)); }

static kiln_status shell(kiln_dtype dtype, int rank, const int64_t *dims, kiln_tensor **out) {
  *out = NULL;
  size_t esize = kiln_dtype_size(dtype);
  if (!esize) return ERR_INVALID("kiln_tensor: dtype %d is not a kiln_dtype", (int)dtype);
  if (rank < 0 || rank > GRAPH_MAX_RANK) return ERR_INVALID("kiln_tensor: rank %d is outside 0..%d", rank, GRAPH_MAX_RANK);
  if (rank && !dims) return ERR_INVALID("kiln_tensor: dims is NULL for rank %d", rank);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return ERR_INVALID("kiln_tensor: dimension %d is negative (%lld)", i, (long long)dims[i]);
    if (dims[i] && n > INT64_MAX / dims[i] / (int64_t)esize)
      return status_error(KILN_OUT_OF_RANGE, "kiln_tensor: the size overflows");
    n *= dims[i];
  }
  if ((size_t)n * esize > (size_t)literal_max_bytes)
    return status_error(KILN_RESOURCE_EXHAUSTED, "kiln_tensor: %lld bytes exceed the %lld-byte cap",
                        (long long)((size_t)n * esize), (long long)literal_max_bytes);
  kiln_tensor *t = calloc(1, sizeof *t);
  if (!t) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->n = n;
  t->bytes = (size_t)n * esize;
  *out = t;
  return NULL;
}

kiln_status kiln_tensor_create(kiln_dtype dtype, int rank, const int64_t *dims, kiln_tensor **out) {
  if (!out) return ERR_INVALID("kiln_tensor_create: out is NULL");
  if (dtype == KILN_STRING) {
    *out = NULL;
    return ERR_INVALID("kiln_tensor_create: string tensors come only from runs (give string inputs as kiln_value)");
  }
  TRY(shell(dtype, rank, dims, out));
  (*out)->data = calloc(1, (*out)->bytes ? (*out)->bytes : 1);
  if (!(*out)->data) {
    size_t bytes = (*out)->bytes;
    free(*out);
    *out = NULL;
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", bytes);
  }
  return NULL;
}

void kiln_tensor_free(kiln_tensor *t) {
  if (!t) return;
  for (int i = 0; i < t->n_items; i++) kiln_tensor_free(t->items[i]);
  free(t->items);
  free(t->data);
  free(t);
}

kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) { return t ? t->dtype : KILN_DTYPE_INVALID; }
int kiln_tensor_rank(const kiln_tensor *t) { return t ? t->rank : 0; }
const int64_t *kiln_tensor_dims(const kiln_tensor *t) { return t ? t->dims : NULL; }
int64_t kiln_tensor_element_count(const kiln_tensor *t) { return t ? t->n : 0; }
size_t kiln_tensor_byte_size(const kiln_tensor *t) { return t ? t->bytes : 0; }
void *kiln_tensor_data(kiln_tensor *t) { return t ? t->data : NULL; }
kiln_kind kiln_tensor_kind(const kiln_tensor *t) { return t ? t->kind : KILN_KIND_TENSOR; }
int kiln_tensor_item_count(const kiln_tensor *t) { return t ? t->n_items : 0; }
kiln_tensor *kiln_tensor_item(const kiln_tensor *t, int i) { return t && i >= 0 && i < t->n_items ? t->items[i] : NULL; }

const char *kiln_kind_name(kiln_kind kind) {
  switch (kind) {
    case KILN_KIND_TENSOR: return "tensor";
    case KILN_KIND_SEQUENCE: return "sequence";
    case KILN_KIND_OPTIONAL: return "optional";
    case KILN_KIND_MAP: return "map";
    default: return "invalid";
  }
}

/* Takes buf (malloc'ed, bytes long) or copies it when steal is false. */
static kiln_status fill(kiln_tensor *t, void *buf, bool steal) {
  if (steal) {
    t->data = buf;
    return NULL;
  }
  t->data = malloc(t->bytes ? t->bytes : 1);
  if (!t->data) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", t->bytes);
  if (t->bytes) memcpy(t->data, buf, t->bytes);
  return NULL;
}

/* A string tensor's kiln form: one block holding the n element pointers and then the
 * NUL-terminated texts they point to, so kiln_tensor_free's one free() releases it. */
static kiln_status fill_strings(kiln_tensor *t, const graph_tensor *gt, const char *name) {
  size_t text = 0;
  for (int64_t i = 0; i < gt->n; i++) {
    const graph_bytes *s = tensor_string(gt, i);
    if (strlen(s->data) != s->len)
      return ERR_INVALID("output %s: string element %lld holds a NUL byte, which a NUL-terminated kiln string "
                         "cannot carry",
                         name, (long long)i);
    text += s->len + 1;
  }
  char *block = malloc(t->bytes + text + 1);
  if (!block) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", t->bytes + text);
  const char **ptrs = (const char **)(void *)block;
  char *at = block + t->bytes;
  for (int64_t i = 0; i < gt->n; i++) {
    const graph_bytes *s = tensor_string(gt, i);
    memcpy(at, s->data, s->len + 1);
    ptrs[i] = at;
    at += s->len + 1;
  }
  t->data = block;
  return NULL;
}

kiln_status api_tensor_from_graph(graph_tensor *gt, const char *name, kiln_tensor **out) {
  if (gt->dtype == GRAPH_DT_STRING) {
    kiln_status s = shell(KILN_STRING, gt->rank, gt->dims, out);
    if (!s) s = fill_strings(*out, gt, name);
    if (s && *out) {
      free(*out); /* its data was never set */
      *out = NULL;
    }
    tensor_free(gt);
    return s;
  }
  kiln_dtype d = api_dtype_from_graph(gt->dtype);
  if (d == KILN_DTYPE_INVALID) {
    kiln_status s = status_error(KILN_UNIMPLEMENTED, "output %s: a %s value has no kiln_dtype (numbers, bools and "
                                 "strings only)",
                                 name, graph_dtype_name(gt->dtype));
    tensor_free(gt);
    return s;
  }
  kiln_status s = shell(d, gt->rank, gt->dims, out);
  /* The buffer moves when this was the last reference and kiln owns it. */
  bool steal = !s && !gt->borrowed && atomic_load(&gt->refs) == 1;
  if (!s) s = fill(*out, gt->data, steal);
  if (s) {
    kiln_tensor_free(*out);
    *out = NULL;
  } else if (steal) {
    gt->data = NULL;
  }
  if (steal) free(gt);
  else tensor_free(gt);
  return s;
}

kiln_status api_tensor_from_literal(hlo_literal *l, kiln_tensor **out) {
  kiln_dtype d = api_dtype_from_hlo(l->shape.type);
  if (d == KILN_DTYPE_INVALID || !shape_is_array(&l->shape)) {
    kiln_status s = status_error(KILN_UNIMPLEMENTED, "an output of type %s has no kiln_dtype", hlo_type_name(l->shape.type));
    literal_free(l);
    return s;
  }
  kiln_status s = shell(d, l->shape.rank, l->shape.dims, out);
  if (!s) s = fill(*out, l->data, true);
  if (!s) l->data = NULL;
  literal_free(l);
  return s;
}

kiln_status api_tensor_from_value(executor_value *v, const char *name, kiln_tensor **out) {
  *out = NULL;
  if (v->kind == EXECUTOR_VALUE_TENSOR) {
    graph_tensor *t = v->tensor;
    v->tensor = NULL;
    executor_value_free(v);
    return api_tensor_from_graph(t, name, out);
  }
  kiln_tensor *t = calloc(1, sizeof *t);
  if (!t) abort();
  t->kind = v->kind == EXECUTOR_VALUE_SEQUENCE   ? KILN_KIND_SEQUENCE
            : v->kind == EXECUTOR_VALUE_OPTIONAL ? KILN_KIND_OPTIONAL
                                                 : KILN_KIND_MAP;
  t->dtype = v->kind == EXECUTOR_VALUE_SEQUENCE ? api_dtype_from_graph(v->elem_dtype) : KILN_DTYPE_INVALID;
  /* Never NULL (kiln.h), and zeroed past any one element, so a caller that predates
   * kinds and reads a rank-0 tensor's element stays in bounds. */
  t->data = calloc(1, 16);
  t->items = calloc((size_t)v->n + 1, sizeof *t->items);
  if (!t->data || !t->items) abort();
  kiln_status s = NULL;
  for (int i = 0; i < v->n; i++) {
    executor_value *item = v->items[i];
    v->items[i] = NULL;
    if (!s) s = api_tensor_from_value(item, name, &t->items[t->n_items]);
    else executor_value_free(item);
    if (!s) t->n_items++;
  }
  executor_value_free(v);
  if (s) {
    kiln_tensor_free(t);
    return s;
  }
  *out = t;
  return NULL;
}
