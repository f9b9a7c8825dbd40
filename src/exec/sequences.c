/* ONNX sequence and optional ops, as executor natives over the TensorList list values
 * of resources.c.
 *
 * An ONNX sequence is an exec_list of kind EXEC_LIST_SEQUENCE: a DT_VARIANT scalar
 * handle to an ordered list of tensors of one element type (shapes may differ), every
 * element set. An ONNX optional is an exec_list of kind EXEC_LIST_OPTIONAL holding 0
 * elements (none) or 1 (a tensor, or the handle of a sequence). Both are values:
 * SequenceInsert/SequenceErase return a new sequence, updating the input in place only
 * when nothing else holds its handle (exec_list_writable, TF's buffer forwarding), and
 * because handles are plain tensors they pass through Identity and in and out of
 * If/Loop bodies (loop-carried values, body results) like any tensor. Lists live until
 * the top-level run ends (exec_resources_end_run). Positions follow the spec: negative
 * ones count from the back; SequenceInsert accepts [-n, n], SequenceAt/Erase [-n, n-1].
 * The Optional op's `type` attribute (a TypeProto, which the importer drops) is not
 * needed: an empty optional only answers OptionalHasElement, and OptionalGetElement on
 * it is an error. Data inputs are found by ONNX position (onnx_input_index), so absent
 * optional inputs ("" in the model) are handled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "import/onnx/onnx_import.h"

static const char *list_kind_name(exec_list_kind k) {
  return k == EXEC_LIST_SEQUENCE ? "sequence" : k == EXEC_LIST_OPTIONAL ? "optional" : k == EXEC_LIST_MAP ? "map" : "TensorList";
}

/* Data-input index of ONNX input `pos`, or -1 when absent. */
static int input_at(const exec_node_ctx *c, int pos) {
  int i = onnx_input_index(c->node, pos);
  return i >= 0 && i < c->n_inputs ? i : -1;
}

/* The sequence at ONNX input `pos` (required); *index is its data-input index. */
static kiln_status seq_input(exec_node_ctx *c, int pos, exec_list **out, int *index) {
  int i = input_at(c, pos);
  if (i < 0) return ERR_INVALID("input %d (a sequence) is missing", pos);
  exec_list *l = exec_list_lookup(c->e, c->inputs[i]);
  if (!l) {
    strbuf b;
    strbuf_init(&b);
    exec_print_tensor_type(&b, c->inputs[i]);
    kiln_status s = ERR_INVALID("input %d must be a sequence, got a %s tensor", pos, strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  if (l->kind != EXEC_LIST_SEQUENCE)
    return ERR_INVALID("input %d must be a sequence, got an ONNX %s", pos, list_kind_name(l->kind));
  *out = l;
  if (index) *index = i;
  return NULL;
}

/* A tensor (not a sequence or optional handle) to store in a sequence of dtype `dtype`
 * (INVALID: any). */
static kiln_status check_tensor_element(exec_node_ctx *c, const graph_tensor *t, graph_dtype dtype, const char *what) {
  exec_list *l = exec_list_lookup(c->e, t);
  if (l) return ERR_INVALID("%s must be a tensor, got an ONNX %s", what, list_kind_name(l->kind));
  if (t->dtype == GRAPH_DT_VARIANT || t->dtype == GRAPH_DT_RESOURCE)
    return ERR_INVALID("%s must be a tensor, got a %s handle", what, graph_dtype_name(t->dtype));
  if (dtype != GRAPH_DT_INVALID && t->dtype != dtype)
    return ERR_INVALID("%s is a %s tensor but the sequence holds %s tensors", what, graph_dtype_name(t->dtype),
                       graph_dtype_name(dtype));
  return NULL;
}

/* Reads an optional position input; `dflt` when absent. Range [-n, n - 1 + extra]. */
static kiln_status read_position(exec_node_ctx *c, int pos, int64_t n, int64_t dflt, int extra, int64_t *out) {
  int i = input_at(c, pos);
  if (i < 0) {
    *out = dflt;
    return NULL;
  }
  int64_t p;
  TRY(exec_read_index(c->inputs[i], "the position", &p));
  if (p < -n || p > n - 1 + extra)
    return status_error(KILN_OUT_OF_RANGE, "position %lld is out of range [%lld, %lld] for a sequence of length %lld",
                        (long long)p, (long long)-n, (long long)(n - 1 + extra), (long long)n);
  *out = p < 0 ? p + n : p;
  return NULL;
}

static kiln_status new_seq(exec_node_ctx *c, graph_dtype dtype, int64_t n, exec_list **l, graph_tensor **handle) {
  graph_shape unknown = graph_shape_unknown();
  TRY(exec_list_new(c, dtype, &unknown, n, l, handle));
  (*l)->kind = EXEC_LIST_SEQUENCE;
  return NULL;
}

static int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

static kiln_status norm_axis(int64_t axis, int rank, const char *what, int *out) {
  if (axis < -rank || axis >= rank)
    return ERR_INVALID("%s %lld is out of range [%d, %d]", what, (long long)axis, -rank, rank - 1);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

/* ------------------------------------------------------------- sequences ---- */

kiln_status exec_seq_empty(exec_node_ctx *c) {
  int64_t code = graph_node_attr_int_or(c->node, "dtype", 1 /* FLOAT */);
  graph_dtype dt = graph_dtype_from_onnx((int)code);
  if (dt == GRAPH_DT_INVALID) return ERR_UNIMPLEMENTED("SequenceEmpty: element type %lld is not supported", (long long)code);
  exec_list *l;
  return new_seq(c, dt, 0, &l, &c->outputs[0]);
}

kiln_status exec_seq_construct(exec_node_ctx *c) {
  int n = c->n_inputs;
  if (n < 1) return ERR_INVALID("SequenceConstruct needs at least one input");
  graph_dtype dt = c->inputs[0]->dtype;
  for (int i = 0; i < n; i++) {
    char what[32];
    snprintf(what, sizeof what, "input %d", i);
    TRY(check_tensor_element(c, c->inputs[i], dt, what));
  }
  exec_list *l;
  TRY(new_seq(c, dt, n, &l, &c->outputs[0]));
  for (int i = 0; i < n; i++) l->elems[i] = tensor_ref(c->inputs[i]);
  return NULL;
}

kiln_status exec_seq_insert(exec_node_ctx *c) {
  exec_list *src;
  int si;
  TRY(seq_input(c, 0, &src, &si));
  int ti = input_at(c, 1);
  if (ti < 0) return ERR_INVALID("SequenceInsert needs a tensor to insert");
  graph_tensor *t = c->inputs[ti];
  TRY(check_tensor_element(c, t, src->dtype, "the inserted tensor"));
  int64_t pos;
  TRY(read_position(c, 2, src->n, src->n, 1, &pos));
  exec_list *l;
  TRY(exec_list_writable(c, si, &l, &c->outputs[0]));
  int64_t n = l->n;
  TRY(exec_list_resize(l, n + 1));
  memmove(&l->elems[pos + 1], &l->elems[pos], (size_t)(n - pos) * sizeof *l->elems);
  l->elems[pos] = tensor_ref(t);
  if (l->dtype == GRAPH_DT_INVALID) l->dtype = t->dtype;
  return NULL;
}

kiln_status exec_seq_erase(exec_node_ctx *c) {
  exec_list *src;
  int si;
  TRY(seq_input(c, 0, &src, &si));
  if (src->n == 0) return status_error(KILN_OUT_OF_RANGE, "SequenceErase on an empty sequence");
  int64_t pos;
  TRY(read_position(c, 1, src->n, src->n - 1, 0, &pos));
  exec_list *l;
  TRY(exec_list_writable(c, si, &l, &c->outputs[0]));
  tensor_free(l->elems[pos]);
  memmove(&l->elems[pos], &l->elems[pos + 1], (size_t)(l->n - pos - 1) * sizeof *l->elems);
  l->elems[--l->n] = NULL;
  return NULL;
}

kiln_status exec_seq_at(exec_node_ctx *c) {
  exec_list *l;
  TRY(seq_input(c, 0, &l, NULL));
  if (input_at(c, 1) < 0) return ERR_INVALID("SequenceAt needs a position");
  int64_t pos;
  TRY(read_position(c, 1, l->n, 0, 0, &pos));
  if (!l->elems[pos]) return ERR_INVALID("sequence element %lld has no value", (long long)pos);
  c->outputs[0] = tensor_ref(l->elems[pos]);
  return NULL;
}

kiln_status exec_seq_length(exec_node_ctx *c) {
  exec_list *l;
  TRY(seq_input(c, 0, &l, NULL));
  return exec_scalar_s64(GRAPH_DT_INT64, l->n, &c->outputs[0]);
}

/* [start, start + len) of t along axis; with keep false (len 1) the axis is removed. */
static kiln_status slice_axis(const graph_tensor *t, int axis, int64_t start, int64_t len, bool keep,
                              graph_tensor **out) {
  if (!keep) return exec_tensor_take(t, axis, start, out);
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  dims[axis] = len;
  TRY(tensor_create(t->dtype, t->rank, dims, out));
  int64_t outer = prod(t->dims, 0, axis), inner = prod(t->dims, axis + 1, t->rank), d = t->dims[axis];
  for (int64_t o = 0; o < outer; o++)
    exec_copy_elements(*out, o * len * inner, t, (o * d + start) * inner, len * inner);
  return NULL;
}

kiln_status exec_seq_split(exec_node_ctx *c) {
  int xi = input_at(c, 0);
  if (xi < 0) return ERR_INVALID("SplitToSequence needs an input tensor");
  const graph_tensor *x = c->inputs[xi];
  TRY(check_tensor_element(c, x, GRAPH_DT_INVALID, "the input"));
  int axis = 0;
  TRY(norm_axis(graph_node_attr_int_or(c->node, "axis", 0), x->rank, "axis", &axis));
  bool keep = graph_node_attr_int_or(c->node, "keepdims", 1) != 0;
  int64_t d = x->dims[axis];
  int64_t n = 0, *lens = NULL;
  int si = input_at(c, 1);
  if (si < 0) { /* pieces of 1, keepdims applies */
    n = d;
    lens = calloc((size_t)(n ? n : 1), sizeof *lens);
    if (!lens) abort();
    for (int64_t i = 0; i < n; i++) lens[i] = 1;
  } else {
    const graph_tensor *s = c->inputs[si];
    keep = true; /* keepdims is ignored when split is given */
    if (!graph_dtype_is_int(s->dtype) || s->rank > 1)
      return ERR_INVALID("split must be an integer scalar or 1-D tensor, got a %s tensor of rank %d",
                         graph_dtype_name(s->dtype), s->rank);
    if (s->rank == 0) {
      int64_t size = tensor_get_s64(s, 0);
      if (size <= 0) return ERR_INVALID("split size %lld must be positive", (long long)size);
      n = (d + size - 1) / size;
      lens = calloc((size_t)(n ? n : 1), sizeof *lens);
      if (!lens) abort();
      for (int64_t i = 0; i < n; i++) lens[i] = i < n - 1 ? size : d - size * (n - 1);
    } else {
      n = s->n;
      lens = calloc((size_t)(n ? n : 1), sizeof *lens);
      if (!lens) abort();
      int64_t total = 0;
      for (int64_t i = 0; i < n; i++) {
        lens[i] = tensor_get_s64(s, i);
        if (lens[i] < 0) {
          free(lens);
          return ERR_INVALID("split length %lld is negative", (long long)tensor_get_s64(s, i));
        }
        total += lens[i];
      }
      if (total != d) {
        free(lens);
        return ERR_INVALID("split lengths add up to %lld but axis %d has %lld elements", (long long)total, axis,
                           (long long)d);
      }
    }
  }
  exec_list *l;
  kiln_status st = new_seq(c, x->dtype, n, &l, &c->outputs[0]);
  int64_t off = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    st = slice_axis(x, axis, off, lens[i], keep, &l->elems[i]);
    off += lens[i];
  }
  free(lens);
  return st;
}

kiln_status exec_seq_concat(exec_node_ctx *c) {
  exec_list *l;
  TRY(seq_input(c, 0, &l, NULL));
  const graph_attr_value *av = graph_node_attr(c->node, "axis");
  if (!av || av->kind != GRAPH_ATTR_INT) return ERR_INVALID("ConcatFromSequence needs an integer attribute axis");
  bool new_axis = graph_node_attr_int_or(c->node, "new_axis", 0) != 0;
  if (l->n == 0) return ERR_INVALID("ConcatFromSequence of an empty sequence (its result has no known shape)");
  if (l->n > INT32_MAX) return ERR_INVALID("the sequence is too long");
  int n = (int)l->n;
  const graph_tensor *f = l->elems[0];
  for (int i = 0; i < n; i++)
    if (!l->elems[i]) return ERR_INVALID("sequence element %d has no value", i);
  int axis = 0;
  if (new_axis) {
    TRY(norm_axis(av->i, f->rank + 1, "axis", &axis));
    return exec_tensor_stack(f->dtype, n, l->elems, axis, NULL, &c->outputs[0]);
  }
  TRY(norm_axis(av->i, f->rank, "axis", &axis));
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const graph_tensor *e = l->elems[i];
    bool same = e->dtype == f->dtype && e->rank == f->rank;
    for (int k = 0; same && k < f->rank; k++) same = k == axis || e->dims[k] == f->dims[k];
    if (!same) {
      strbuf b;
      strbuf_init(&b);
      exec_print_tensor_type(&b, f);
      strbuf_append(&b, " vs ");
      exec_print_tensor_type(&b, e);
      kiln_status s = ERR_INVALID("cannot concatenate sequence elements along axis %d (element 0 vs %d: %s)", axis, i,
                                  strbuf_cstr(&b));
      strbuf_free(&b);
      return s;
    }
    total += e->dims[axis];
  }
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, f->dims, sizeof dims);
  dims[axis] = total;
  TRY(tensor_create(f->dtype, f->rank, dims, &c->outputs[0]));
  int64_t outer = prod(f->dims, 0, axis), inner = prod(f->dims, axis + 1, f->rank);
  for (int64_t o = 0; o < outer; o++) {
    int64_t off = o * total * inner;
    for (int i = 0; i < n; i++) {
      const graph_tensor *e = l->elems[i];
      int64_t chunk = e->dims[axis] * inner;
      exec_copy_elements(c->outputs[0], off, e, o * chunk, chunk);
      off += chunk;
    }
  }
  return NULL;
}

/* ------------------------------------------------------------- optionals ---- */

kiln_status exec_opt_make(exec_node_ctx *c) {
  int vi = input_at(c, 0);
  graph_tensor *v = vi >= 0 ? c->inputs[vi] : NULL;
  exec_list *inner = v ? exec_list_lookup(c->e, v) : NULL;
  if (inner && inner->kind == EXEC_LIST_OPTIONAL) return ERR_INVALID("Optional of an optional is not an ONNX type");
  graph_shape unknown = graph_shape_unknown();
  exec_list *l;
  TRY(exec_list_new(c, v && !inner ? v->dtype : GRAPH_DT_INVALID, &unknown, v ? 1 : 0, &l, &c->outputs[0]));
  l->kind = EXEC_LIST_OPTIONAL;
  if (v) l->elems[0] = tensor_ref(v);
  return NULL;
}

kiln_status exec_opt_has_element(exec_node_ctx *c) {
  int vi = input_at(c, 0);
  bool has = false;
  if (vi >= 0) {
    exec_list *l = exec_list_lookup(c->e, c->inputs[vi]);
    has = !l || l->kind != EXEC_LIST_OPTIONAL || l->n > 0; /* a tensor or a sequence is there */
  }
  return exec_scalar_s64(GRAPH_DT_BOOL, has, &c->outputs[0]);
}

kiln_status exec_opt_get_element(exec_node_ctx *c) {
  int vi = input_at(c, 0);
  if (vi < 0) return ERR_INVALID("OptionalGetElement needs an input");
  graph_tensor *v = c->inputs[vi];
  exec_list *l = exec_list_lookup(c->e, v);
  if (!l || l->kind != EXEC_LIST_OPTIONAL) { /* a tensor or a sequence: itself */
    c->outputs[0] = tensor_ref(v);
    return NULL;
  }
  if (l->n == 0 || !l->elems[0]) return ERR_INVALID("OptionalGetElement on an empty optional");
  c->outputs[0] = tensor_ref(l->elems[0]);
  return NULL;
}
