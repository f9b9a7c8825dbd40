/* Host tensor helpers for the executor's own ops: scalars, index and shape operands,
 * truth values, and the slicing/stacking that TensorArray, TensorList and ONNX
 * Loop/Scan need. They move elements by bytes (strings by deep copy) so every dtype
 * works, including those HLO lacks. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

kiln_status exec_scalar_s64(graph_dtype dtype, int64_t v, graph_tensor **out) {
  TRY(tensor_create_scalar(dtype, out));
  tensor_set_s64(*out, 0, v);
  return NULL;
}

kiln_status exec_scalar_f64(graph_dtype dtype, double v, graph_tensor **out) {
  TRY(tensor_create_scalar(dtype, out));
  tensor_set_f64(*out, 0, v);
  return NULL;
}

static bool is_numeric(graph_dtype t) { return graph_dtype_is_int(t) || graph_dtype_is_float(t) || t == GRAPH_DT_BOOL; }

kiln_status exec_read_index(const graph_tensor *t, const char *what, int64_t *out) {
  if (!graph_dtype_is_int(t->dtype) && t->dtype != GRAPH_DT_BOOL)
    return ERR_INVALID("%s must be an integer, got %s", what, graph_dtype_name(t->dtype));
  if (t->n != 1) return ERR_INVALID("%s must have one element, got %lld", what, (long long)t->n);
  *out = tensor_get_s64(t, 0);
  return NULL;
}

bool exec_truth(const graph_tensor *t) {
  if (t->n != 1 || !is_numeric(t->dtype)) return t->n > 0;
  if (graph_dtype_is_float(t->dtype)) return tensor_get_f64(t, 0) != 0.0;
  return tensor_get_s64(t, 0) != 0;
}

kiln_status exec_read_shape(const graph_tensor *t, const char *what, graph_shape *out) {
  if (!graph_dtype_is_int(t->dtype)) return ERR_INVALID("%s must be an integer tensor, got %s", what, graph_dtype_name(t->dtype));
  if (t->rank == 0) {
    if (tensor_get_s64(t, 0) != -1) return ERR_INVALID("%s: a scalar shape must be -1 (unknown rank)", what);
    *out = graph_shape_unknown();
    return NULL;
  }
  if (t->rank != 1 || t->n > GRAPH_MAX_RANK)
    return ERR_INVALID("%s must be a vector of at most %d dimensions", what, GRAPH_MAX_RANK);
  out->rank = (int)t->n;
  for (int64_t i = 0; i < t->n; i++) {
    int64_t d = tensor_get_s64(t, i);
    if (d < -1) return ERR_INVALID("%s has dimension %lld", what, (long long)d);
    out->dims[i] = d < 0 ? GRAPH_UNKNOWN : d;
  }
  return NULL;
}

void exec_copy_elements(graph_tensor *dst, int64_t dst_off, const graph_tensor *src, int64_t src_off, int64_t count) {
  if (count <= 0) return;
  if (dst->dtype == GRAPH_DT_STRING) {
    for (int64_t i = 0; i < count; i++) {
      const graph_bytes *s = tensor_string(src, src_off + i);
      tensor_set_string(dst, dst_off + i, s->data, s->len);
    }
    return;
  }
  size_t es = graph_dtype_size(dst->dtype);
  memcpy((char *)dst->data + (size_t)dst_off * es, (const char *)src->data + (size_t)src_off * es, (size_t)count * es);
}

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

kiln_status exec_tensor_take(const graph_tensor *t, int axis, int64_t index, graph_tensor **out) {
  if (axis < 0 || axis >= t->rank) return ERR_INVALID("axis %d is out of range for a rank-%d tensor", axis, t->rank);
  if (index < 0 || index >= t->dims[axis])
    return status_error(KILN_OUT_OF_RANGE, "index %lld is out of range [0, %lld)", (long long)index,
                        (long long)t->dims[axis]);
  int64_t dims[GRAPH_MAX_RANK];
  int r = 0;
  for (int i = 0; i < t->rank; i++)
    if (i != axis) dims[r++] = t->dims[i];
  TRY(tensor_create(t->dtype, r, dims, out));
  int64_t outer = prod(t->dims, 0, axis), inner = prod(t->dims, axis + 1, t->rank), len = t->dims[axis];
  for (int64_t o = 0; o < outer; o++) exec_copy_elements(*out, o * inner, t, (o * len + index) * inner, inner);
  return NULL;
}

kiln_status exec_tensor_rows(const graph_tensor *t, int64_t start, int64_t len, graph_tensor **out) {
  if (t->rank < 1) return ERR_INVALID("cannot take rows of a scalar");
  if (start < 0 || len < 0 || start > t->dims[0] || len > t->dims[0] - start)
    return status_error(KILN_OUT_OF_RANGE, "rows [%lld, %lld) are out of range [0, %lld)", (long long)start,
                        (long long)(start + len), (long long)t->dims[0]);
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  dims[0] = len;
  TRY(tensor_create(t->dtype, t->rank, dims, out));
  int64_t row = prod(t->dims, 1, t->rank);
  exec_copy_elements(*out, 0, t, start * row, len * row);
  return NULL;
}

static kiln_status known_shape(const graph_shape *s, const char *what) {
  if (!s || !graph_shape_is_fully_known(s))
    return ERR_INVALID("%s of no elements needs a fully known element shape", what);
  return NULL;
}

kiln_status exec_tensor_stack(graph_dtype dtype, int n, graph_tensor *const *elems, int axis,
                              const graph_shape *empty_shape, graph_tensor **out) {
  int64_t edims[GRAPH_MAX_RANK];
  int erank;
  if (n == 0) {
    TRY(known_shape(empty_shape, "stacking a list"));
    erank = empty_shape->rank;
    memcpy(edims, empty_shape->dims, sizeof edims);
  } else {
    erank = elems[0]->rank;
    memcpy(edims, elems[0]->dims, sizeof edims);
  }
  if (erank + 1 > GRAPH_MAX_RANK) return ERR_INVALID("stacking rank-%d elements exceeds rank %d", erank, GRAPH_MAX_RANK);
  if (axis < 0 || axis > erank) return ERR_INVALID("stack axis %d is out of range for rank-%d elements", axis, erank);
  for (int i = 0; i < n; i++) {
    const graph_tensor *e = elems[i];
    bool same = e->dtype == dtype && e->rank == erank;
    for (int k = 0; same && k < erank; k++) same = e->dims[k] == edims[k];
    if (!same) {
      strbuf b;
      strbuf_init(&b);
      exec_print_tensor_type(&b, elems[0]);
      strbuf_append(&b, " vs ");
      exec_print_tensor_type(&b, e);
      kiln_status s = ERR_INVALID("cannot stack elements of different types or shapes (element 0 vs %d: %s)", i,
                                  strbuf_cstr(&b));
      strbuf_free(&b);
      return s;
    }
  }
  int64_t dims[GRAPH_MAX_RANK];
  for (int k = 0, r = 0; k <= erank; k++) dims[k] = k == axis ? n : edims[r++];
  TRY(tensor_create(dtype, erank + 1, dims, out));
  int64_t outer = prod(edims, 0, axis), inner = prod(edims, axis, erank);
  for (int i = 0; i < n; i++)
    for (int64_t o = 0; o < outer; o++) exec_copy_elements(*out, (o * n + i) * inner, elems[i], o * inner, inner);
  return NULL;
}

kiln_status exec_tensor_concat0(graph_dtype dtype, int n, graph_tensor *const *elems, const graph_shape *empty_shape,
                                graph_tensor **out) {
  if (n == 0) {
    TRY(known_shape(empty_shape, "concatenating a list"));
    if (empty_shape->rank < 1) return ERR_INVALID("cannot concatenate scalars");
    int64_t dims[GRAPH_MAX_RANK];
    memcpy(dims, empty_shape->dims, sizeof dims);
    dims[0] = 0;
    return tensor_create(dtype, empty_shape->rank, dims, out);
  }
  const graph_tensor *f = elems[0];
  if (f->rank < 1) return ERR_INVALID("cannot concatenate scalars");
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const graph_tensor *e = elems[i];
    bool same = e->dtype == dtype && e->rank == f->rank;
    for (int k = 1; same && k < f->rank; k++) same = e->dims[k] == f->dims[k];
    if (!same) return ERR_INVALID("cannot concatenate element %d: its type or trailing dimensions differ", i);
    total += e->dims[0];
  }
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, f->dims, sizeof dims);
  dims[0] = total;
  TRY(tensor_create(dtype, f->rank, dims, out));
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    exec_copy_elements(*out, off, elems[i], 0, elems[i]->n);
    off += elems[i]->n;
  }
  return NULL;
}
