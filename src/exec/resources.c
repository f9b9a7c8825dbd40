/* Session and step state: resource variables, TensorArrays and TensorLists.
 *
 * Handles are opaque 64-bit values in scalar tensors (dtype resource for variables and
 * TensorArrays, variant for TensorLists), as graph/tensor.h prescribes; the value
 * encodes the kind and an index into the tables below, so a handle of the wrong kind
 * is an error, never a wild pointer. Variables live as long as the session (they are
 * what makes one run see the previous run's updates); TensorArrays and TensorLists
 * live for one top-level run, like TF's per-step resources.
 *
 * A TensorArray is a mutable resource (reads and writes go through the handle; the
 * flow tensor only orders them). A TensorList is a value: every op that "changes" one
 * returns a new list -- except when the executor holds the only reference to the
 * input list, which is then updated in place (TF's buffer forwarding), so loops that
 * SetItem every iteration stay linear. Semantics follow TF's kernels
 * (tensor_array_ops.cc, list_kernels.cc): reading an unwritten TensorArray element or
 * an uninitialized list element gives zeros when the element shape is known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

enum { HANDLE_VAR = 1, HANDLE_TA = 2, HANDLE_TL = 3 };

typedef struct exec_variable {
  char *name;
  graph_dtype dtype; /* INVALID when the handle op did not say */
  graph_tensor *value; /* NULL: uninitialized */
} exec_variable;

typedef struct exec_ta {
  graph_dtype dtype;
  graph_shape element_shape;
  bool dynamic_size, clear_after_read, closed;
  int64_t size, cap;
  graph_tensor **elems;
  bool *written, *cleared;
} exec_ta;

struct exec_resources {
  int n_vars, cap_vars;
  exec_variable *vars;
  int n_tas, cap_tas;
  exec_ta **tas;
  int n_lists, cap_lists;
  exec_list **lists;
};

#define GROW(arr, n, cap)                                    \
  do {                                                       \
    if ((n) == (cap)) {                                      \
      int c_ = (cap) ? (cap) * 2 : 8;                        \
      void *a_ = realloc((arr), (size_t)c_ * sizeof *(arr)); \
      if (!a_) abort();                                      \
      (arr) = a_;                                            \
      (cap) = c_;                                            \
    }                                                        \
  } while (0)

exec_resources *exec_resources_new(void) {
  exec_resources *r = calloc(1, sizeof *r);
  if (!r) abort();
  return r;
}

static void ta_free(exec_ta *ta) {
  if (!ta) return;
  for (int64_t i = 0; i < ta->size; i++) tensor_free(ta->elems[i]);
  free(ta->elems);
  free(ta->written);
  free(ta->cleared);
  free(ta);
}

static void list_free(exec_list *l) {
  if (!l) return;
  for (int64_t i = 0; i < l->n; i++) tensor_free(l->elems[i]);
  free(l->elems);
  free(l);
}

void exec_resources_end_run(exec_resources *r) {
  for (int i = 0; i < r->n_tas; i++) ta_free(r->tas[i]);
  r->n_tas = 0;
  for (int i = 0; i < r->n_lists; i++) list_free(r->lists[i]);
  r->n_lists = 0;
}

void exec_resources_free(exec_resources *r) {
  if (!r) return;
  exec_resources_end_run(r);
  free(r->tas);
  free(r->lists);
  for (int i = 0; i < r->n_vars; i++) {
    free(r->vars[i].name);
    tensor_free(r->vars[i].value);
  }
  free(r->vars);
  free(r);
}

/* ----------------------------------------------------------------- handles ---- */

static kiln_status make_handle(graph_dtype dtype, int kind, int index, graph_tensor **out) {
  TRY(tensor_create_scalar(dtype, out));
  uint64_t h = ((uint64_t)kind << 48) | ((uint64_t)index + 1);
  memcpy((*out)->data, &h, sizeof h);
  return NULL;
}

static const char *kind_name(int kind) {
  return kind == HANDLE_VAR ? "resource variable" : kind == HANDLE_TA ? "TensorArray" : "TensorList";
}

static kiln_status read_handle(const graph_tensor *t, int kind, int count, int *index) {
  graph_dtype want = kind == HANDLE_TL ? GRAPH_DT_VARIANT : GRAPH_DT_RESOURCE;
  if (t->dtype != want || t->n != 1)
    return ERR_INVALID("expected a %s handle (a %s scalar), got a %s tensor of %lld elements", kind_name(kind),
                       graph_dtype_name(want), graph_dtype_name(t->dtype), (long long)t->n);
  uint64_t h;
  memcpy(&h, t->data, sizeof h);
  int64_t idx = (int64_t)(h & 0xffffffffffffull) - 1;
  if ((int)(h >> 48) != kind || idx < 0 || idx >= count)
    return ERR_INVALID("the %s handle is not valid here (a handle from another run or of another kind)",
                       kind_name(kind));
  *index = (int)idx;
  return NULL;
}

static kiln_status need_inputs(const exec_node_ctx *c, int n) {
  if (c->n_inputs < n) return ERR_INVALID("expected %d inputs, got %d", n, c->n_inputs);
  return NULL;
}

static graph_dtype attr_type_or(const graph_node *n, const char *name, graph_dtype dflt) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_TYPE ? v->type : dflt;
}

static graph_shape attr_shape_or_unknown(const graph_node *n, const char *name) {
  const graph_attr_value *v = graph_node_attr(n, name);
  return v && v->kind == GRAPH_ATTR_SHAPE ? *v->shape : graph_shape_unknown();
}

static void print_shape(strbuf *b, const graph_shape *s) {
  if (s->rank == GRAPH_UNKNOWN) {
    strbuf_append(b, "<unknown>");
    return;
  }
  strbuf_putc(b, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i) strbuf_putc(b, ',');
    if (s->dims[i] == GRAPH_UNKNOWN) strbuf_putc(b, '?');
    else strbuf_printf(b, "%lld", (long long)s->dims[i]);
  }
  strbuf_putc(b, ']');
}

static kiln_status check_element(graph_dtype dtype, const graph_shape *shape, const graph_tensor *v, const char *what) {
  if (dtype != GRAPH_DT_INVALID && v->dtype != dtype)
    return ERR_INVALID("%s holds %s elements, got a %s tensor", what, graph_dtype_name(dtype),
                       graph_dtype_name(v->dtype));
  if (!exec_shape_matches(shape, v)) {
    strbuf b;
    strbuf_init(&b);
    print_shape(&b, shape);
    strbuf_append(&b, ", got ");
    exec_print_tensor_type(&b, v);
    kiln_status s = ERR_INVALID("%s elements have shape %s", what, strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  return NULL;
}

/* Merges what is known of two shapes (the first wins where both know a dim). */
static graph_shape merge_shapes(const graph_shape *a, const graph_shape *b) {
  if (a->rank == GRAPH_UNKNOWN) return *b;
  if (b->rank != a->rank) return *a;
  graph_shape m = *a;
  for (int i = 0; i < m.rank; i++)
    if (m.dims[i] == GRAPH_UNKNOWN) m.dims[i] = b->dims[i];
  return m;
}

static kiln_status zeros(graph_dtype dtype, const graph_shape *shape, const char *what, graph_tensor **out) {
  if (!graph_shape_is_fully_known(shape))
    return ERR_INVALID("%s was never written and its element shape is not fully known, so it has no value", what);
  return tensor_create(dtype, shape->rank, shape->dims, out);
}

/* ---------------------------------------------------------------- variables ---- */

kiln_status exec_var_handle(exec_node_ctx *c) {
  const graph_node *n = c->node;
  const graph_attr_value *cont = graph_node_attr(n, "container");
  const graph_attr_value *shared = graph_node_attr(n, "shared_name");
  strbuf b;
  strbuf_init(&b);
  if (cont && cont->kind == GRAPH_ATTR_STRING) strbuf_appendn(&b, cont->s.data, cont->s.len);
  strbuf_putc(&b, '/');
  if (shared && shared->kind == GRAPH_ATTR_STRING && shared->s.len) strbuf_appendn(&b, shared->s.data, shared->s.len);
  else strbuf_append(&b, n->name);
  exec_resources *r = c->e->res;
  int idx = -1;
  for (int i = 0; i < r->n_vars; i++)
    if (strcmp(r->vars[i].name, strbuf_cstr(&b)) == 0) idx = i;
  if (idx < 0) {
    GROW(r->vars, r->n_vars, r->cap_vars);
    idx = r->n_vars++;
    r->vars[idx] = (exec_variable){strbuf_take(&b), attr_type_or(n, "dtype", GRAPH_DT_INVALID), NULL};
    /* A SavedModel's variables come with their checkpoint values (the importer's
     * "_kiln_value"): the first value of the session's variable, as TF's restore. */
    const graph_attr_value *init = graph_node_attr(n, "_kiln_value");
    if (init && init->kind == GRAPH_ATTR_TENSOR) r->vars[idx].value = tensor_ref(init->tensor);
  }
  strbuf_free(&b);
  return make_handle(GRAPH_DT_RESOURCE, HANDLE_VAR, idx, &c->outputs[0]);
}

static kiln_status get_var(exec_node_ctx *c, exec_variable **out) {
  TRY(need_inputs(c, 1));
  int idx = 0;
  TRY(read_handle(c->inputs[0], HANDLE_VAR, c->e->res->n_vars, &idx));
  *out = &c->e->res->vars[idx];
  return NULL;
}

kiln_status exec_var_read(exec_node_ctx *c) {
  exec_variable *v;
  TRY(get_var(c, &v));
  if (!v->value) return ERR_INVALID("variable %s is read before it was assigned a value", v->name);
  graph_dtype want = attr_type_or(c->node, "dtype", v->value->dtype);
  if (want != v->value->dtype)
    return ERR_INVALID("variable %s holds %s, read as %s", v->name, graph_dtype_name(v->value->dtype),
                       graph_dtype_name(want));
  c->outputs[0] = tensor_ref(v->value);
  return NULL;
}

kiln_status exec_var_assign(exec_node_ctx *c) {
  exec_variable *v;
  TRY(get_var(c, &v));
  TRY(need_inputs(c, 2));
  const graph_tensor *x = c->inputs[1];
  if (v->dtype != GRAPH_DT_INVALID && x->dtype != v->dtype)
    return ERR_INVALID("variable %s holds %s, assigned a %s tensor", v->name, graph_dtype_name(v->dtype),
                       graph_dtype_name(x->dtype));
  tensor_free(v->value);
  v->value = tensor_ref(c->inputs[1]);
  return NULL;
}

static kiln_status assign_update(exec_node_ctx *c, int sign) {
  exec_variable *v;
  TRY(get_var(c, &v));
  TRY(need_inputs(c, 2));
  const graph_tensor *x = c->inputs[1];
  if (!v->value) return ERR_INVALID("variable %s is updated before it was assigned a value", v->name);
  const graph_tensor *old = v->value;
  bool same = old->dtype == x->dtype && old->rank == x->rank;
  for (int i = 0; same && i < x->rank; i++) same = old->dims[i] == x->dims[i];
  if (!same) {
    strbuf b;
    strbuf_init(&b);
    exec_print_tensor_type(&b, old);
    strbuf_append(&b, " with ");
    exec_print_tensor_type(&b, x);
    kiln_status s = ERR_INVALID("variable %s: cannot update %s", v->name, strbuf_cstr(&b));
    strbuf_free(&b);
    return s;
  }
  if (!graph_dtype_is_float(x->dtype) && !graph_dtype_is_int(x->dtype))
    return ERR_UNIMPLEMENTED("variable %s: cannot add %s values", v->name, graph_dtype_name(x->dtype));
  graph_tensor *nv;
  TRY(tensor_create(x->dtype, x->rank, x->dims, &nv));
  /* One rounding per element from exact double sums: the same as adding in the
   * element type for every float type; integers wrap like the C types. */
  for (int64_t i = 0; i < x->n; i++) {
    if (graph_dtype_is_float(x->dtype))
      tensor_set_f64(nv, i, tensor_get_f64(old, i) + sign * tensor_get_f64(x, i));
    else
      tensor_set_s64(nv, i, (int64_t)((uint64_t)tensor_get_s64(old, i) + (uint64_t)(sign * tensor_get_s64(x, i))));
  }
  tensor_free(v->value);
  v->value = nv;
  return NULL;
}

kiln_status exec_var_assign_add(exec_node_ctx *c) { return assign_update(c, 1); }
kiln_status exec_var_assign_sub(exec_node_ctx *c) { return assign_update(c, -1); }

/* Accessors for code that works on variables by handle rather than as a graph node
 * (the cluster runner reads every variable at cluster entry and writes back at exit). */
kiln_status exec_var_lookup(executor *e, const graph_tensor *handle, const char **name, graph_dtype *declared,
                            const graph_tensor **value) {
  int idx = 0;
  TRY(read_handle(handle, HANDLE_VAR, e->res->n_vars, &idx));
  const exec_variable *v = &e->res->vars[idx];
  *name = v->name;
  *declared = v->dtype;
  *value = v->value;
  return NULL;
}

kiln_status exec_var_read_value(executor *e, const graph_tensor *handle, graph_tensor **out) {
  *out = NULL;
  int idx = 0;
  TRY(read_handle(handle, HANDLE_VAR, e->res->n_vars, &idx));
  const exec_variable *v = &e->res->vars[idx];
  if (!v->value) return ERR_INVALID("variable %s is read before it was assigned a value", v->name);
  *out = tensor_ref(v->value);
  return NULL;
}

kiln_status exec_var_write_value(executor *e, const graph_tensor *handle, graph_tensor *value) {
  int idx = 0;
  kiln_status s = read_handle(handle, HANDLE_VAR, e->res->n_vars, &idx);
  if (!s) {
    exec_variable *v = &e->res->vars[idx];
    if (v->dtype != GRAPH_DT_INVALID && value->dtype != v->dtype) {
      s = ERR_INVALID("variable %s holds %s, assigned a %s tensor", v->name, graph_dtype_name(v->dtype),
                      graph_dtype_name(value->dtype));
    } else {
      /* A variable outlives the run: a fed buffer the embedder lent must be copied. */
      graph_tensor *owned;
      TRY(tensor_unborrow(value, &owned));
      tensor_free(v->value);
      v->value = owned;
      return NULL;
    }
  }
  tensor_free(value);
  return s;
}

kiln_status exec_var_is_initialized(exec_node_ctx *c) {
  exec_variable *v;
  TRY(get_var(c, &v));
  return exec_scalar_s64(GRAPH_DT_BOOL, v->value != NULL, &c->outputs[0]);
}

kiln_status exec_var_destroy(exec_node_ctx *c) {
  exec_variable *v;
  TRY(get_var(c, &v));
  tensor_free(v->value);
  v->value = NULL;
  return NULL;
}

/* -------------------------------------------------------------- TensorArray ---- */

static kiln_status ta_resize(exec_ta *ta, int64_t size) {
  if (size > (int64_t)1 << 31) return status_error(KILN_RESOURCE_EXHAUSTED, "TensorArray size %lld is too large",
                                                   (long long)size);
  if (size > ta->cap) {
    int64_t cap = ta->cap ? ta->cap : 8;
    while (cap < size) cap *= 2;
    graph_tensor **e = realloc(ta->elems, (size_t)cap * sizeof *e);
    if (!e) abort();
    ta->elems = e;
    bool *w = realloc(ta->written, (size_t)cap * sizeof *w);
    if (!w) abort();
    ta->written = w;
    bool *cl = realloc(ta->cleared, (size_t)cap * sizeof *cl);
    if (!cl) abort();
    ta->cleared = cl;
    ta->cap = cap;
  }
  for (int64_t i = ta->size; i < size; i++) {
    ta->elems[i] = NULL;
    ta->written[i] = ta->cleared[i] = false;
  }
  ta->size = size;
  return NULL;
}

kiln_status exec_ta_new(exec_node_ctx *c) {
  TRY(need_inputs(c, 1));
  int64_t size;
  TRY(exec_read_index(c->inputs[0], "the TensorArray size", &size));
  if (size < 0) return ERR_INVALID("TensorArray size %lld is negative", (long long)size);
  exec_ta *ta = calloc(1, sizeof *ta);
  if (!ta) abort();
  ta->dtype = attr_type_or(c->node, "dtype", GRAPH_DT_INVALID);
  ta->element_shape = attr_shape_or_unknown(c->node, "element_shape");
  ta->dynamic_size = graph_node_attr_bool_or(c->node, "dynamic_size", false);
  ta->clear_after_read = graph_node_attr_bool_or(c->node, "clear_after_read", true);
  kiln_status s = ta_resize(ta, size);
  if (s) {
    ta_free(ta);
    return s;
  }
  exec_resources *r = c->e->res;
  GROW(r->tas, r->n_tas, r->cap_tas);
  r->tas[r->n_tas++] = ta;
  TRY(make_handle(GRAPH_DT_RESOURCE, HANDLE_TA, r->n_tas - 1, &c->outputs[0]));
  if (c->n_outputs > 1) TRY(exec_scalar_f64(GRAPH_DT_FLOAT, 0, &c->outputs[1]));
  return NULL;
}

static kiln_status get_ta(exec_node_ctx *c, exec_ta **out) {
  TRY(need_inputs(c, 1));
  int idx = 0;
  TRY(read_handle(c->inputs[0], HANDLE_TA, c->e->res->n_tas, &idx));
  *out = c->e->res->tas[idx];
  if ((*out)->closed) return ERR_INVALID("the TensorArray was already closed");
  return NULL;
}

static kiln_status ta_write(exec_ta *ta, int64_t index, graph_tensor *v) {
  if (index < 0) return status_error(KILN_OUT_OF_RANGE, "TensorArray index %lld is negative", (long long)index);
  if (index >= ta->size) {
    if (!ta->dynamic_size)
      return status_error(KILN_OUT_OF_RANGE, "TensorArray index %lld is out of range (size %lld, not dynamic)",
                          (long long)index, (long long)ta->size);
    TRY(ta_resize(ta, index + 1));
  }
  TRY(check_element(ta->dtype, &ta->element_shape, v, "the TensorArray"));
  if (ta->written[index])
    return ERR_INVALID("TensorArray index %lld was already written to (a TensorArray element is written once)",
                       (long long)index);
  graph_shape vs = tensor_shape(v);
  ta->element_shape = merge_shapes(&ta->element_shape, &vs);
  ta->elems[index] = tensor_ref(v);
  ta->written[index] = true;
  return NULL;
}

static kiln_status ta_read(exec_ta *ta, int64_t index, graph_dtype dtype, graph_tensor **out) {
  if (index < 0 || index >= ta->size)
    return status_error(KILN_OUT_OF_RANGE, "TensorArray index %lld is out of range (size %lld)", (long long)index,
                        (long long)ta->size);
  if (dtype != GRAPH_DT_INVALID && ta->dtype != GRAPH_DT_INVALID && dtype != ta->dtype)
    return ERR_INVALID("the TensorArray holds %s, read as %s", graph_dtype_name(ta->dtype), graph_dtype_name(dtype));
  if (ta->cleared[index])
    return ERR_INVALID("TensorArray index %lld was cleared by an earlier read (clear_after_read is true)",
                       (long long)index);
  if (!ta->written[index]) {
    char what[64];
    snprintf(what, sizeof what, "TensorArray index %lld", (long long)index);
    return zeros(ta->dtype != GRAPH_DT_INVALID ? ta->dtype : dtype, &ta->element_shape, what, out);
  }
  *out = tensor_ref(ta->elems[index]);
  if (ta->clear_after_read) {
    tensor_free(ta->elems[index]);
    ta->elems[index] = NULL;
    ta->written[index] = false;
    ta->cleared[index] = true;
  }
  return NULL;
}

static graph_tensor *flow_out(exec_node_ctx *c, int flow_input) {
  return tensor_ref(c->inputs[flow_input]);
}

kiln_status exec_ta_write(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  TRY(need_inputs(c, 4));
  int64_t index;
  TRY(exec_read_index(c->inputs[1], "the index", &index));
  TRY(ta_write(ta, index, c->inputs[2]));
  c->outputs[0] = flow_out(c, 3);
  return NULL;
}

kiln_status exec_ta_read(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  TRY(need_inputs(c, 3));
  int64_t index;
  TRY(exec_read_index(c->inputs[1], "the index", &index));
  return ta_read(ta, index, attr_type_or(c->node, "dtype", GRAPH_DT_INVALID), &c->outputs[0]);
}

static kiln_status read_indices(const graph_tensor *t, int64_t **out, int64_t *n) {
  if (!graph_dtype_is_int(t->dtype) || t->rank != 1)
    return ERR_INVALID("indices must be an integer vector, got %s of rank %d", graph_dtype_name(t->dtype), t->rank);
  *n = t->n;
  *out = malloc((size_t)(t->n ? t->n : 1) * sizeof **out);
  if (!*out) abort();
  for (int64_t i = 0; i < t->n; i++) (*out)[i] = tensor_get_s64(t, i);
  return NULL;
}

static void free_tensors(graph_tensor **t, int64_t n) {
  if (!t) return;
  for (int64_t i = 0; i < n; i++) tensor_free(t[i]);
  free(t);
}

kiln_status exec_ta_gather(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  TRY(need_inputs(c, 3));
  int64_t *idx, n;
  TRY(read_indices(c->inputs[1], &idx, &n));
  graph_dtype dtype = attr_type_or(c->node, "dtype", ta->dtype);
  graph_tensor **elems = calloc((size_t)(n ? n : 1), sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int64_t i = 0; i < n && !s; i++) s = ta_read(ta, idx[i], dtype, &elems[i]);
  graph_shape es = attr_shape_or_unknown(c->node, "element_shape");
  es = merge_shapes(&es, &ta->element_shape);
  if (!s) s = exec_tensor_stack(dtype, (int)n, elems, 0, &es, &c->outputs[0]);
  free_tensors(elems, n);
  free(idx);
  return s;
}

kiln_status exec_ta_scatter(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  TRY(need_inputs(c, 4));
  int64_t *idx, n;
  TRY(read_indices(c->inputs[1], &idx, &n));
  const graph_tensor *v = c->inputs[2];
  kiln_status s = NULL;
  if (v->rank < 1 || v->dims[0] != n)
    s = ERR_INVALID("scattering %lld indices needs a value with %lld rows", (long long)n, (long long)n);
  for (int64_t i = 0; i < n && !s; i++) {
    graph_tensor *row;
    s = exec_tensor_take(v, 0, i, &row);
    if (!s) s = ta_write(ta, idx[i], row);
    tensor_free(row);
  }
  free(idx);
  if (!s) c->outputs[0] = flow_out(c, 3);
  return s;
}

kiln_status exec_ta_concat(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  graph_dtype dtype = attr_type_or(c->node, "dtype", ta->dtype);
  int64_t n = ta->size;
  graph_tensor **elems = calloc((size_t)(n ? n : 1), sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int64_t i = 0; i < n && !s; i++) {
    s = ta_read(ta, i, dtype, &elems[i]);
    if (!s && elems[i]->rank < 1) s = ERR_INVALID("TensorArray element %lld is a scalar; concat needs rank >= 1", (long long)i);
  }
  graph_shape es = graph_shape_unknown();
  const graph_attr_value *ex = graph_node_attr(c->node, "element_shape_except0");
  if (ex && ex->kind == GRAPH_ATTR_SHAPE && ex->shape->rank != GRAPH_UNKNOWN && ex->shape->rank < GRAPH_MAX_RANK) {
    es.rank = ex->shape->rank + 1;
    es.dims[0] = 0;
    for (int i = 0; i < ex->shape->rank; i++) es.dims[i + 1] = ex->shape->dims[i];
  }
  if (!s) s = exec_tensor_concat0(dtype, (int)n, elems, &es, &c->outputs[0]);
  if (!s && c->n_outputs > 1) {
    s = tensor_create(GRAPH_DT_INT64, 1, &n, &c->outputs[1]);
    for (int64_t i = 0; i < n && !s; i++) tensor_set_s64(c->outputs[1], i, elems[i]->dims[0]);
  }
  free_tensors(elems, n);
  return s;
}

kiln_status exec_ta_split(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  TRY(need_inputs(c, 4));
  const graph_tensor *v = c->inputs[1];
  int64_t *len, n;
  TRY(read_indices(c->inputs[2], &len, &n));
  kiln_status s = NULL;
  int64_t total = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    if (len[i] < 0) s = ERR_INVALID("split length %lld is negative", (long long)len[i]);
    total += len[i];
  }
  if (!s && (v->rank < 1 || total != v->dims[0]))
    s = ERR_INVALID("split lengths add up to %lld but the value has %lld rows", (long long)total,
                    (long long)(v->rank ? v->dims[0] : 0));
  int64_t off = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    graph_tensor *part;
    s = exec_tensor_rows(v, off, len[i], &part);
    if (!s) s = ta_write(ta, i, part);
    tensor_free(part);
    off += len[i];
  }
  free(len);
  if (!s) c->outputs[0] = flow_out(c, 3);
  return s;
}

kiln_status exec_ta_size(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  return exec_scalar_s64(GRAPH_DT_INT32, ta->size, &c->outputs[0]);
}

kiln_status exec_ta_close(exec_node_ctx *c) {
  exec_ta *ta;
  TRY(get_ta(c, &ta));
  ta->closed = true;
  return NULL;
}

/* --------------------------------------------------------------- TensorList ---- */

static kiln_status new_list_in(executor *e, graph_dtype dtype, const graph_shape *shape, int64_t n,
                               exec_list **list, graph_tensor **handle) {
  if (n < 0 || n > (int64_t)1 << 31) return ERR_INVALID("TensorList size %lld is out of range", (long long)n);
  exec_list *l = calloc(1, sizeof *l);
  if (!l) abort();
  l->dtype = dtype;
  l->element_shape = *shape;
  l->n = l->cap = n;
  l->elems = calloc((size_t)(n ? n : 1), sizeof *l->elems);
  if (!l->elems) abort();
  exec_resources *r = e->res;
  GROW(r->lists, r->n_lists, r->cap_lists);
  r->lists[r->n_lists++] = l;
  *list = l;
  return make_handle(GRAPH_DT_VARIANT, HANDLE_TL, r->n_lists - 1, handle);
}

static kiln_status new_list(exec_node_ctx *c, graph_dtype dtype, const graph_shape *shape, int64_t n, exec_list **list,
                            graph_tensor **handle) {
  return new_list_in(c->e, dtype, shape, n, list, handle);
}

static kiln_status get_list(exec_node_ctx *c, int input, exec_list **out) {
  TRY(need_inputs(c, input + 1));
  int idx = 0;
  TRY(read_handle(c->inputs[input], HANDLE_TL, c->e->res->n_lists, &idx));
  *out = c->e->res->lists[idx];
  return NULL;
}

/* The list an updating op may change: the input itself when nobody else can see it,
 * else a copy. *handle is the output handle. */
static kiln_status writable_list(exec_node_ctx *c, int input, exec_list **out, graph_tensor **handle) {
  exec_list *src;
  TRY(get_list(c, input, &src));
  if (atomic_load(&c->inputs[input]->refs) == 1) {
    *out = src;
    *handle = tensor_ref(c->inputs[input]);
    return NULL;
  }
  exec_list *l;
  TRY(new_list(c, src->dtype, &src->element_shape, src->n, &l, handle));
  l->kind = src->kind;
  for (int64_t i = 0; i < src->n; i++) l->elems[i] = src->elems[i] ? tensor_ref(src->elems[i]) : NULL;
  *out = l;
  return NULL;
}

static kiln_status list_reserve(exec_list *l, int64_t n) {
  if (n > (int64_t)1 << 31) return status_error(KILN_RESOURCE_EXHAUSTED, "TensorList size %lld is too large", (long long)n);
  if (n > l->cap) {
    int64_t cap = l->cap ? l->cap : 8;
    while (cap < n) cap *= 2;
    graph_tensor **e = realloc(l->elems, (size_t)cap * sizeof *e);
    if (!e) abort();
    l->elems = e;
    l->cap = cap;
  }
  return NULL;
}

static kiln_status list_resize(exec_list *l, int64_t n) {
  TRY(list_reserve(l, n));
  for (int64_t i = n; i < l->n; i++) tensor_free(l->elems[i]);
  for (int64_t i = l->n; i < n; i++) l->elems[i] = NULL;
  l->n = n;
  return NULL;
}

/* The list API other files (sequences.c) build on: see exec_internal.h. */
kiln_status exec_list_new(exec_node_ctx *c, graph_dtype dtype, const graph_shape *shape, int64_t n, exec_list **list,
                          graph_tensor **handle) {
  return new_list(c, dtype, shape, n, list, handle);
}

kiln_status exec_list_new_in(executor *e, graph_dtype dtype, const graph_shape *shape, int64_t n, exec_list **list,
                             graph_tensor **handle) {
  return new_list_in(e, dtype, shape, n, list, handle);
}

kiln_status exec_list_input(exec_node_ctx *c, int input, exec_list **out) { return get_list(c, input, out); }

kiln_status exec_list_writable(exec_node_ctx *c, int input, exec_list **out, graph_tensor **handle) {
  return writable_list(c, input, out, handle);
}

kiln_status exec_list_resize(exec_list *l, int64_t n) { return list_resize(l, n); }

exec_list *exec_list_lookup(executor *e, const graph_tensor *t) {
  if (!t || t->dtype != GRAPH_DT_VARIANT || t->n != 1) return NULL;
  int idx = 0;
  kiln_status s = read_handle(t, HANDLE_TL, e->res->n_lists, &idx);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  return e->res->lists[idx];
}

static kiln_status shape_input(exec_node_ctx *c, int input, graph_shape *out) {
  *out = graph_shape_unknown();
  if (input >= c->n_inputs) return NULL;
  return exec_read_shape(c->inputs[input], "the element shape", out);
}

static graph_dtype list_dtype_attr(const exec_node_ctx *c) {
  return attr_type_or(c->node, "element_dtype", GRAPH_DT_INVALID);
}

/* The element shape zeros take: what the list, the operand and the set elements say. */
static graph_shape element_shape_for(const exec_list *l, const graph_shape *given) {
  graph_shape s = merge_shapes(&l->element_shape, given);
  for (int64_t i = 0; i < l->n && !graph_shape_is_fully_known(&s); i++)
    if (l->elems[i]) {
      graph_shape es = tensor_shape(l->elems[i]);
      s = merge_shapes(&s, &es);
    }
  return s;
}

static kiln_status list_get(const exec_list *l, int64_t i, graph_dtype dtype, const graph_shape *given,
                            graph_tensor **out) {
  if (i < 0 || i >= l->n)
    return status_error(KILN_OUT_OF_RANGE, "TensorList index %lld is out of range (length %lld)", (long long)i,
                        (long long)l->n);
  if (l->elems[i]) {
    *out = tensor_ref(l->elems[i]);
    return NULL;
  }
  graph_shape s = element_shape_for(l, given);
  char what[64];
  snprintf(what, sizeof what, "TensorList element %lld", (long long)i);
  return zeros(l->dtype != GRAPH_DT_INVALID ? l->dtype : dtype, &s, what, out);
}

static kiln_status list_set(exec_list *l, int64_t i, graph_tensor *v) {
  TRY(check_element(l->dtype, &l->element_shape, v, "the TensorList"));
  tensor_free(l->elems[i]);
  l->elems[i] = tensor_ref(v);
  return NULL;
}

kiln_status exec_tl_empty(exec_node_ctx *c) {
  graph_shape shape;
  TRY(shape_input(c, 0, &shape));
  exec_list *l;
  return new_list(c, list_dtype_attr(c), &shape, 0, &l, &c->outputs[0]);
}

kiln_status exec_tl_reserve(exec_node_ctx *c) {
  TRY(need_inputs(c, 2));
  graph_shape shape;
  TRY(shape_input(c, 0, &shape));
  int64_t n;
  TRY(exec_read_index(c->inputs[1], "num_elements", &n));
  exec_list *l;
  return new_list(c, list_dtype_attr(c), &shape, n, &l, &c->outputs[0]);
}

kiln_status exec_tl_from_tensor(exec_node_ctx *c) {
  TRY(need_inputs(c, 1));
  const graph_tensor *t = c->inputs[0];
  if (t->rank < 1) return ERR_INVALID("TensorListFromTensor needs a tensor of rank >= 1");
  graph_shape shape;
  TRY(shape_input(c, 1, &shape));
  graph_shape es = graph_shape_make(t->rank - 1, t->dims + 1);
  shape = merge_shapes(&es, &shape);
  exec_list *l;
  TRY(new_list(c, t->dtype, &shape, t->dims[0], &l, &c->outputs[0]));
  for (int64_t i = 0; i < t->dims[0]; i++) TRY(exec_tensor_take(t, 0, i, &l->elems[i]));
  return NULL;
}

kiln_status exec_tl_set_item(exec_node_ctx *c) {
  TRY(need_inputs(c, 3));
  int64_t i;
  TRY(exec_read_index(c->inputs[1], "the index", &i));
  exec_list *src;
  TRY(get_list(c, 0, &src));
  bool resize = graph_node_attr_bool_or(c->node, "resize_if_index_out_of_bounds", false);
  if (i < 0 || (i >= src->n && !resize))
    return status_error(KILN_OUT_OF_RANGE, "TensorList index %lld is out of range (length %lld)", (long long)i,
                        (long long)src->n);
  exec_list *l;
  TRY(writable_list(c, 0, &l, &c->outputs[0]));
  if (i >= l->n) TRY(list_resize(l, i + 1));
  return list_set(l, i, c->inputs[2]);
}

kiln_status exec_tl_get_item(exec_node_ctx *c) {
  TRY(need_inputs(c, 2));
  exec_list *l;
  TRY(get_list(c, 0, &l));
  int64_t i;
  TRY(exec_read_index(c->inputs[1], "the index", &i));
  graph_shape shape;
  TRY(shape_input(c, 2, &shape));
  return list_get(l, i, list_dtype_attr(c), &shape, &c->outputs[0]);
}

kiln_status exec_tl_push_back(exec_node_ctx *c) {
  TRY(need_inputs(c, 2));
  exec_list *l;
  TRY(writable_list(c, 0, &l, &c->outputs[0]));
  TRY(list_resize(l, l->n + 1));
  return list_set(l, l->n - 1, c->inputs[1]);
}

kiln_status exec_tl_pop_back(exec_node_ctx *c) {
  exec_list *src;
  TRY(get_list(c, 0, &src));
  if (src->n == 0) return ERR_INVALID("TensorListPopBack on an empty list");
  graph_shape shape;
  TRY(shape_input(c, 1, &shape));
  exec_list *l;
  TRY(writable_list(c, 0, &l, &c->outputs[0]));
  if (c->n_outputs > 1) TRY(list_get(l, l->n - 1, list_dtype_attr(c), &shape, &c->outputs[1]));
  return list_resize(l, l->n - 1);
}

static kiln_status stack_items(exec_node_ctx *c, const exec_list *l, int64_t n, const int64_t *idx,
                               const graph_shape *given, graph_tensor **out) {
  graph_dtype dtype = l->dtype != GRAPH_DT_INVALID ? l->dtype : list_dtype_attr(c);
  graph_tensor **elems = calloc((size_t)(n ? n : 1), sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int64_t i = 0; i < n && !s; i++) s = list_get(l, idx ? idx[i] : i, dtype, given, &elems[i]);
  graph_shape es = element_shape_for(l, given);
  if (!s) s = exec_tensor_stack(dtype, (int)n, elems, 0, &es, out);
  free_tensors(elems, n);
  return s;
}

kiln_status exec_tl_stack(exec_node_ctx *c) {
  exec_list *l;
  TRY(get_list(c, 0, &l));
  graph_shape shape;
  TRY(shape_input(c, 1, &shape));
  int64_t want = graph_node_attr_int_or(c->node, "num_elements", -1);
  if (want >= 0 && want != l->n)
    return ERR_INVALID("the TensorList has %lld elements, num_elements says %lld", (long long)l->n, (long long)want);
  return stack_items(c, l, l->n, NULL, &shape, &c->outputs[0]);
}

kiln_status exec_tl_gather(exec_node_ctx *c) {
  TRY(need_inputs(c, 2));
  exec_list *l;
  TRY(get_list(c, 0, &l));
  int64_t *idx, n;
  TRY(read_indices(c->inputs[1], &idx, &n));
  graph_shape shape;
  kiln_status s = shape_input(c, 2, &shape);
  if (!s) s = stack_items(c, l, n, idx, &shape, &c->outputs[0]);
  free(idx);
  return s;
}

static kiln_status scatter_rows(exec_list *l, const graph_tensor *t, const int64_t *idx, int64_t n) {
  if (t->rank < 1 || t->dims[0] != n)
    return ERR_INVALID("scattering %lld indices needs a tensor with %lld rows", (long long)n, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    if (idx[i] < 0) return status_error(KILN_OUT_OF_RANGE, "TensorList index %lld is negative", (long long)idx[i]);
    if (idx[i] >= l->n) TRY(list_resize(l, idx[i] + 1));
    graph_tensor *row;
    TRY(exec_tensor_take(t, 0, i, &row));
    kiln_status s = list_set(l, idx[i], row);
    tensor_free(row);
    TRY(s);
  }
  return NULL;
}

kiln_status exec_tl_scatter_into(exec_node_ctx *c) {
  TRY(need_inputs(c, 3));
  int64_t *idx, n;
  TRY(read_indices(c->inputs[2], &idx, &n));
  exec_list *l;
  kiln_status s = writable_list(c, 0, &l, &c->outputs[0]);
  if (!s) s = scatter_rows(l, c->inputs[1], idx, n);
  free(idx);
  return s;
}

kiln_status exec_tl_scatter(exec_node_ctx *c) {
  TRY(need_inputs(c, 3));
  const graph_tensor *t = c->inputs[0];
  int64_t *idx, n;
  TRY(read_indices(c->inputs[1], &idx, &n));
  graph_shape shape;
  kiln_status s = shape_input(c, 2, &shape);
  int64_t size = 0;
  if (!s && c->n_inputs > 3) s = exec_read_index(c->inputs[3], "num_elements", &size);
  for (int64_t i = 0; i < n; i++)
    if (idx[i] + 1 > size) size = idx[i] + 1;
  exec_list *l;
  if (!s) s = new_list(c, t->dtype, &shape, size < 0 ? 0 : size, &l, &c->outputs[0]);
  if (!s) s = scatter_rows(l, t, idx, n);
  free(idx);
  return s;
}

kiln_status exec_tl_length(exec_node_ctx *c) {
  exec_list *l;
  TRY(get_list(c, 0, &l));
  return exec_scalar_s64(GRAPH_DT_INT32, l->n, &c->outputs[0]);
}

kiln_status exec_tl_element_shape(exec_node_ctx *c) {
  exec_list *l;
  TRY(get_list(c, 0, &l));
  graph_dtype t = attr_type_or(c->node, "shape_type", GRAPH_DT_INT32);
  graph_shape unknown = graph_shape_unknown();
  graph_shape s = element_shape_for(l, &unknown);
  if (s.rank == GRAPH_UNKNOWN) return exec_scalar_s64(t, -1, &c->outputs[0]);
  int64_t r = s.rank;
  TRY(tensor_create(t, 1, &r, &c->outputs[0]));
  for (int i = 0; i < s.rank; i++) tensor_set_s64(c->outputs[0], i, s.dims[i]);
  return NULL;
}

kiln_status exec_tl_resize(exec_node_ctx *c) {
  TRY(need_inputs(c, 2));
  int64_t n;
  TRY(exec_read_index(c->inputs[1], "the size", &n));
  if (n < 0) return ERR_INVALID("TensorList size %lld is negative", (long long)n);
  exec_list *l;
  TRY(writable_list(c, 0, &l, &c->outputs[0]));
  return list_resize(l, n);
}

kiln_status exec_tl_concat(exec_node_ctx *c) {
  exec_list *l;
  TRY(get_list(c, 0, &l));
  graph_shape shape;
  TRY(shape_input(c, 1, &shape));
  graph_dtype dtype = l->dtype != GRAPH_DT_INVALID ? l->dtype : list_dtype_attr(c);
  int64_t n = l->n;
  graph_tensor **elems = calloc((size_t)(n ? n : 1), sizeof *elems);
  if (!elems) abort();
  kiln_status s = NULL;
  for (int64_t i = 0; i < n && !s; i++) {
    if (!l->elems[i]) s = ERR_UNIMPLEMENTED("TensorListConcat of a list with uninitialized elements");
    else elems[i] = tensor_ref(l->elems[i]);
  }
  graph_shape es = merge_shapes(&l->element_shape, &shape);
  if (es.rank != GRAPH_UNKNOWN && es.rank >= 1) es.dims[0] = 0;
  if (!s) s = exec_tensor_concat0(dtype, (int)n, elems, &es, &c->outputs[0]);
  if (!s && c->n_outputs > 1) {
    s = tensor_create(GRAPH_DT_INT64, 1, &n, &c->outputs[1]);
    for (int64_t i = 0; i < n && !s; i++) tensor_set_s64(c->outputs[1], i, elems[i]->dims[0]);
  }
  free_tensors(elems, n);
  return s;
}

kiln_status exec_tl_split(exec_node_ctx *c) {
  TRY(need_inputs(c, 3));
  const graph_tensor *t = c->inputs[0];
  graph_shape shape;
  TRY(shape_input(c, 1, &shape));
  int64_t *len, n;
  TRY(read_indices(c->inputs[2], &len, &n));
  kiln_status s = NULL;
  int64_t total = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    if (len[i] < 0) s = ERR_INVALID("split length %lld is negative", (long long)len[i]);
    total += len[i];
  }
  if (!s && (t->rank < 1 || total != t->dims[0]))
    s = ERR_INVALID("split lengths add up to %lld but the tensor has %lld rows", (long long)total,
                    (long long)(t->rank ? t->dims[0] : 0));
  exec_list *l;
  if (!s) s = new_list(c, t->dtype, &shape, n, &l, &c->outputs[0]);
  int64_t off = 0;
  for (int64_t i = 0; i < n && !s; i++) {
    s = exec_tensor_rows(t, off, len[i], &l->elems[i]);
    off += len[i];
  }
  free(len);
  return s;
}
