/* Shape construction, comparison and printing in XLA's text syntax. */
#include "hlo/shape.h"

#include <stdlib.h>
#include <string.h>

hlo_shape shape_make(hlo_type type, int rank, const int64_t *dims) {
  hlo_shape s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
  return s;
}

hlo_shape shape_scalar(hlo_type type) { return shape_make(type, 0, NULL); }

hlo_shape shape_tuple(arena *a, int n, const hlo_shape *elems) {
  hlo_shape s;
  memset(&s, 0, sizeof s);
  s.type = HLO_TUPLE;
  s.n_elems = n;
  s.elems = arena_calloc(a, n ? (size_t)n : 1, sizeof(hlo_shape));
  for (int i = 0; i < n; i++) s.elems[i] = shape_clone(a, &elems[i]);
  return s;
}

hlo_shape shape_clone(arena *a, const hlo_shape *s) {
  hlo_shape c = *s;
  if (s->layout_extra) c.layout_extra = arena_strdup(a, s->layout_extra);
  if (s->type == HLO_TUPLE) {
    c.elems = arena_calloc(a, s->n_elems ? (size_t)s->n_elems : 1, sizeof(hlo_shape));
    for (int i = 0; i < s->n_elems; i++) c.elems[i] = shape_clone(a, &s->elems[i]);
  }
  return c;
}

bool shape_is_array(const hlo_shape *s) { return hlo_type_is_array(s->type); }
bool shape_is_tuple(const hlo_shape *s) { return s->type == HLO_TUPLE; }

int64_t shape_elements(const hlo_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return -1;
    if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i]) return -1;
    n *= s->dims[i];
  }
  return n;
}

int64_t shape_byte_size(const hlo_shape *s) {
  int64_t n = shape_elements(s);
  int64_t sz = (int64_t)hlo_type_size(s->type);
  if (n < 0) return -1;
  if (sz && n > INT64_MAX / sz) return -1;
  return n * sz;
}

bool shape_same_dims(const hlo_shape *a, const hlo_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool shape_compatible(const hlo_shape *a, const hlo_shape *b) {
  if (a->type != b->type) return false;
  if (a->type == HLO_TUPLE) {
    if (a->n_elems != b->n_elems) return false;
    for (int i = 0; i < a->n_elems; i++)
      if (!shape_compatible(&a->elems[i], &b->elems[i])) return false;
    return true;
  }
  return shape_same_dims(a, b);
}

bool shape_equal(const hlo_shape *a, const hlo_shape *b) {
  if (!shape_compatible(a, b)) return false;
  if (a->type == HLO_TUPLE) {
    for (int i = 0; i < a->n_elems; i++)
      if (!shape_equal(&a->elems[i], &b->elems[i])) return false;
    return true;
  }
  if (a->has_layout != b->has_layout) return false;
  if (a->has_layout)
    for (int i = 0; i < a->rank; i++)
      if (a->minor_to_major[i] != b->minor_to_major[i]) return false;
  return true;
}

void shape_set_default_layout(hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    for (int i = 0; i < s->n_elems; i++) shape_set_default_layout(&s->elems[i]);
    return;
  }
  if (!shape_is_array(s)) return;
  s->has_layout = true;
  for (int i = 0; i < s->rank; i++) s->minor_to_major[i] = s->rank - 1 - i;
}

void shape_print(strbuf *b, const hlo_shape *s, bool with_layout) {
  if (s->type == HLO_TUPLE) {
    strbuf_putc(b, '(');
    for (int i = 0; i < s->n_elems; i++) {
      if (i) strbuf_append(b, ", ");
      shape_print(b, &s->elems[i], with_layout);
    }
    strbuf_putc(b, ')');
    return;
  }
  strbuf_append(b, hlo_type_name(s->type));
  strbuf_putc(b, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i) strbuf_putc(b, ',');
    strbuf_printf(b, "%s%lld", s->dynamic[i] ? "<=" : "", (long long)s->dims[i]);
  }
  strbuf_putc(b, ']');
  /* XLA's parser rejects an empty layout "{}" on scalars, so print none there. */
  if (with_layout && s->has_layout && s->type != HLO_TOKEN && (s->rank > 0 || s->layout_extra)) {
    strbuf_putc(b, '{');
    for (int i = 0; i < s->rank; i++) {
      if (i) strbuf_putc(b, ',');
      strbuf_printf(b, "%lld", (long long)s->minor_to_major[i]);
    }
    if (s->layout_extra) strbuf_append(b, s->layout_extra);
    strbuf_putc(b, '}');
  }
}

char *shape_to_string(const hlo_shape *s) {
  strbuf b;
  strbuf_init(&b);
  shape_print(&b, s, true);
  return strbuf_take(&b);
}

void shape_strides(const hlo_shape *s, int64_t *strides) {
  /* Unsigned so that an empty shape whose other dims multiply past INT64_MAX (legal:
   * it has no elements) wraps instead of overflowing; such strides are never used to
   * address an element. */
  uint64_t st = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = (int64_t)st;
    st *= (uint64_t)s->dims[i];
  }
}
