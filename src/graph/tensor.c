/* Host tensor storage, reference counting, element access, literal interop and the
 * tensor<...>{...} text form. */
#include "graph/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "graph/tensor_source.h"

kiln_status tensor_create(graph_dtype dtype, int rank, const int64_t *dims, graph_tensor **out) {
  *out = NULL;
  if (dtype == GRAPH_DT_INVALID || (unsigned)dtype >= GRAPH_DT_COUNT)
    return ERR_INVALID("cannot create a tensor of unknown element type");
  if (rank < 0 || rank > GRAPH_MAX_RANK)
    return ERR_INVALID("tensor rank %d is outside 0..%d", rank, GRAPH_MAX_RANK);
  int64_t n = 1;
  bool overflow = false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return ERR_INVALID("tensor dimension %d is negative (%lld)", i, (long long)dims[i]);
    if (dims[i] != 0 && n > INT64_MAX / dims[i]) overflow = true;
    else n *= dims[i];
  }
  size_t esize = graph_dtype_size(dtype);
  if (overflow || n > literal_max_bytes / (int64_t)esize)
    return status_error(KILN_RESOURCE_EXHAUSTED,
                        "a %s tensor of %s elements is over the %lld-byte limit for one value",
                        graph_dtype_name(dtype), overflow ? "more than 2^63" : "too many",
                        (long long)literal_max_bytes);
  graph_tensor *t = calloc(1, sizeof *t);
  if (!t) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  size_t bytes = (size_t)n * esize;
  t->data = calloc(1, bytes ? bytes : 1);
  if (!t->data) {
    free(t);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", bytes);
  }
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->n = n;
  atomic_init(&t->refs, 1);
  *out = t;
  return NULL;
}

kiln_status tensor_create_scalar(graph_dtype dtype, graph_tensor **out) {
  return tensor_create(dtype, 0, NULL, out);
}

kiln_status tensor_wrap(graph_dtype dtype, int rank, const int64_t *dims, void *data, graph_tensor **out) {
  hlo_type ht;
  if (!graph_dtype_to_hlo(dtype, &ht)) return ERR_INVALID("cannot wrap a %s buffer: numeric and bool tensors only", graph_dtype_name(dtype));
  if (rank < 0 || rank > GRAPH_MAX_RANK) return ERR_INVALID("rank %d is outside 0..%d", rank, GRAPH_MAX_RANK);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return ERR_INVALID("dimension %d is negative (%lld)", i, (long long)dims[i]);
    if (dims[i] && n > INT64_MAX / dims[i]) return status_error(KILN_OUT_OF_RANGE, "the element count overflows int64");
    n *= dims[i];
  }
  graph_tensor *t = calloc(1, sizeof *t);
  if (!t) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  static char empty[1];
  t->data = data ? data : empty;
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->n = n;
  t->borrowed = true;
  atomic_init(&t->refs, 1);
  *out = t;
  return NULL;
}

kiln_status tensor_unborrow(graph_tensor *t, graph_tensor **out) {
  if (!t->borrowed) {
    *out = t;
    return NULL;
  }
  kiln_status s = tensor_clone(t, out);
  tensor_free(t);
  return s;
}

graph_tensor *tensor_ref(graph_tensor *t) {
  if (t) atomic_fetch_add(&t->refs, 1);
  return t;
}

static void free_strings(graph_tensor *t) {
  if (t->dtype != GRAPH_DT_STRING) return;
  graph_bytes *s = t->data;
  for (int64_t i = 0; i < t->n; i++) free(s[i].data);
}

void tensor_free(graph_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub(&t->refs, 1) != 1) return;
  if (!t->borrowed) {
    free_strings(t);
    free(t->data);
  }
  tensor_source_release(t->source);
  free(t);
}

kiln_status tensor_clone(const graph_tensor *t, graph_tensor **out) {
  TRY(tensor_create(t->dtype, t->rank, t->dims, out));
  if (t->dtype == GRAPH_DT_STRING) {
    const graph_bytes *s = t->data;
    for (int64_t i = 0; i < t->n; i++) tensor_set_string(*out, i, s[i].data, s[i].len);
  } else {
    memcpy((*out)->data, t->data, tensor_byte_size(t));
  }
  return NULL;
}

size_t tensor_byte_size(const graph_tensor *t) { return (size_t)t->n * graph_dtype_size(t->dtype); }

graph_shape tensor_shape(const graph_tensor *t) { return graph_shape_make(t->rank, t->dims); }

bool tensor_equal(const graph_tensor *a, const graph_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  if (a->dtype == GRAPH_DT_STRING) {
    const graph_bytes *x = a->data, *y = b->data;
    for (int64_t i = 0; i < a->n; i++) {
      if (x[i].len != y[i].len) return false;
      if (x[i].len && memcmp(x[i].data, y[i].data, x[i].len) != 0) return false;
    }
    return true;
  }
  return memcmp(a->data, b->data, tensor_byte_size(a)) == 0;
}

static const graph_bytes empty_bytes = {"", 0};

const graph_bytes *tensor_string(const graph_tensor *t, int64_t i) {
  const graph_bytes *s = &((const graph_bytes *)t->data)[i];
  return s->data ? s : &empty_bytes;
}

void tensor_set_string(graph_tensor *t, int64_t i, const char *data, size_t len) {
  graph_bytes *s = &((graph_bytes *)t->data)[i];
  char *copy = malloc(len + 1);
  if (!copy) {
    fprintf(stderr, "kiln: out of memory copying a %zu-byte string\n", len);
    abort();
  }
  if (len) memcpy(copy, data, len);
  copy[len] = 0;
  free(s->data);
  s->data = copy;
  s->len = len;
}

/* The narrow storage types (float8, float4, int4) follow the HLO literal's element
 * rules (rounding, overflow, 4-bit wrapping), read through a view of the same bytes. */
static bool narrow_view(const graph_tensor *t, hlo_literal *view) {
  hlo_type h;
  return graph_dtype_to_hlo(t->dtype, &h) && hlo_type_is_narrow(h) && tensor_literal_view(t, view);
}

double tensor_get_f64(const graph_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
    case GRAPH_DT_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case GRAPH_DT_INT8: return ((const int8_t *)d)[i];
    case GRAPH_DT_INT16: return ((const int16_t *)d)[i];
    case GRAPH_DT_INT32: return ((const int32_t *)d)[i];
    case GRAPH_DT_INT64: return (double)((const int64_t *)d)[i];
    case GRAPH_DT_UINT8: return ((const uint8_t *)d)[i];
    case GRAPH_DT_UINT16: return ((const uint16_t *)d)[i];
    case GRAPH_DT_UINT32: return ((const uint32_t *)d)[i];
    case GRAPH_DT_UINT64: return (double)((const uint64_t *)d)[i];
    case GRAPH_DT_HALF: return f16_to_f32(((const uint16_t *)d)[i]);
    case GRAPH_DT_BFLOAT16: return bf16_to_f32(((const uint16_t *)d)[i]);
    case GRAPH_DT_FLOAT: return ((const float *)d)[i];
    case GRAPH_DT_DOUBLE: return ((const double *)d)[i];
    case GRAPH_DT_COMPLEX64: return ((const float *)d)[2 * i];
    case GRAPH_DT_COMPLEX128: return ((const double *)d)[2 * i];
    default: {
      hlo_literal view;
      return narrow_view(t, &view) ? literal_get_f64(&view, i) : 0;
    }
  }
}

int64_t tensor_get_s64(const graph_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
    case GRAPH_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    case GRAPH_DT_INT8: return ((const int8_t *)d)[i];
    case GRAPH_DT_INT16: return ((const int16_t *)d)[i];
    case GRAPH_DT_INT32: return ((const int32_t *)d)[i];
    case GRAPH_DT_INT64: return ((const int64_t *)d)[i];
    case GRAPH_DT_UINT8: return ((const uint8_t *)d)[i];
    case GRAPH_DT_UINT16: return ((const uint16_t *)d)[i];
    case GRAPH_DT_UINT32: return ((const uint32_t *)d)[i];
    case GRAPH_DT_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case GRAPH_DT_RESOURCE:
    case GRAPH_DT_VARIANT: return (int64_t)((const uint64_t *)d)[i];
    default: {
      double v = tensor_get_f64(t, i);
      if (isnan(v)) return 0;
      if (v >= 9223372036854775807.0) return INT64_MAX;
      if (v <= -9223372036854775808.0) return INT64_MIN;
      return (int64_t)v;
    }
  }
}

void tensor_set_f64(graph_tensor *t, int64_t i, double v) {
  void *d = t->data;
  hlo_literal view;
  if (narrow_view(t, &view)) {
    literal_set_f64(&view, i, v);
    return;
  }
  switch (t->dtype) {
    case GRAPH_DT_HALF: ((uint16_t *)d)[i] = f64_to_f16(v); return;
    case GRAPH_DT_BFLOAT16: ((uint16_t *)d)[i] = f64_to_bf16(v); return;
    case GRAPH_DT_FLOAT: ((float *)d)[i] = (float)v; return;
    case GRAPH_DT_DOUBLE: ((double *)d)[i] = v; return;
    case GRAPH_DT_COMPLEX64: ((float *)d)[2 * i] = (float)v; return;
    case GRAPH_DT_COMPLEX128: ((double *)d)[2 * i] = v; return;
    case GRAPH_DT_BOOL: ((uint8_t *)d)[i] = v != 0; return;
    case GRAPH_DT_STRING: return;
    default: {
      int64_t s = 0;
      if (isnan(v)) s = 0;
      else if (v >= 9223372036854775807.0) s = INT64_MAX;
      else if (v <= -9223372036854775808.0) s = INT64_MIN;
      else s = (int64_t)v;
      tensor_set_s64(t, i, s);
      return;
    }
  }
}

void tensor_set_s64(graph_tensor *t, int64_t i, int64_t v) {
  void *d = t->data;
  switch (t->dtype) {
    case GRAPH_DT_BOOL: ((uint8_t *)d)[i] = v != 0; return;
    case GRAPH_DT_INT8: ((int8_t *)d)[i] = (int8_t)v; return;
    case GRAPH_DT_INT16: ((int16_t *)d)[i] = (int16_t)v; return;
    case GRAPH_DT_INT32: ((int32_t *)d)[i] = (int32_t)v; return;
    case GRAPH_DT_INT64: ((int64_t *)d)[i] = v; return;
    case GRAPH_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; return;
    case GRAPH_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; return;
    case GRAPH_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; return;
    case GRAPH_DT_UINT64:
    case GRAPH_DT_RESOURCE:
    case GRAPH_DT_VARIANT: ((uint64_t *)d)[i] = (uint64_t)v; return;
    case GRAPH_DT_STRING: return;
    default: {
      hlo_literal view;
      if (narrow_view(t, &view)) literal_set_s64(&view, i, v);
      else tensor_set_f64(t, i, (double)v);
      return;
    }
  }
}

bool tensor_literal_view(const graph_tensor *t, hlo_literal *view) {
  hlo_type h;
  if (!graph_dtype_to_hlo(t->dtype, &h)) return false;
  memset(view, 0, sizeof *view);
  view->shape = shape_make(h, t->rank, t->dims);
  view->data = t->data;
  view->n = t->n;
  return true;
}

static kiln_status literal_dtype(const hlo_literal *l, graph_dtype *out) {
  *out = GRAPH_DT_INVALID;
  if (l->shape.type == HLO_TUPLE || l->shape.type == HLO_TOKEN)
    return ERR_INVALID("a host tensor cannot hold a %s literal", hlo_type_name(l->shape.type));
  *out = graph_dtype_from_hlo(l->shape.type);
  if (*out == GRAPH_DT_INVALID) return ERR_INVALID("no tensor type for %s", hlo_type_name(l->shape.type));
  return NULL;
}

kiln_status tensor_from_literal(const hlo_literal *l, graph_tensor **out) {
  graph_dtype dt = GRAPH_DT_INVALID;
  *out = NULL;
  TRY(literal_dtype(l, &dt));
  TRY(tensor_create(dt, l->shape.rank, l->shape.dims, out));
  memcpy((*out)->data, l->data, tensor_byte_size(*out));
  return NULL;
}

kiln_status tensor_to_literal(const graph_tensor *t, hlo_literal **out) {
  hlo_literal view;
  *out = NULL;
  if (!tensor_literal_view(t, &view))
    return ERR_INVALID("a %s tensor has no HLO literal form", graph_dtype_name(t->dtype));
  TRY(literal_create(&view.shape, out));
  memcpy((*out)->data, t->data, tensor_byte_size(t));
  return NULL;
}

kiln_status tensor_adopt_literal(hlo_literal *l, graph_tensor **out) {
  graph_dtype dt = GRAPH_DT_INVALID;
  *out = NULL;
  TRY(literal_dtype(l, &dt));
  if (l->shape.rank > GRAPH_MAX_RANK) return ERR_INVALID("literal rank %d is over %d", l->shape.rank, GRAPH_MAX_RANK);
  graph_tensor *t = calloc(1, sizeof *t);
  if (!t) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  t->dtype = dt;
  t->rank = l->shape.rank;
  for (int i = 0; i < t->rank; i++) t->dims[i] = l->shape.dims[i];
  t->n = l->n;
  t->data = l->data;
  if (!t->data) {
    t->data = calloc(1, 1);
    if (!t->data) {
      free(t);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  atomic_init(&t->refs, 1);
  l->data = NULL;
  literal_free(l);
  *out = t;
  return NULL;
}

kiln_status tensor_release_to_literal(graph_tensor *t, hlo_literal **out) {
  hlo_literal view;
  *out = NULL;
  if (!tensor_literal_view(t, &view))
    return ERR_INVALID("a %s tensor has no HLO literal form", graph_dtype_name(t->dtype));
  if (atomic_load(&t->refs) != 1 || t->borrowed) {
    TRY(tensor_to_literal(t, out));
    tensor_free(t);
    return NULL;
  }
  hlo_literal *l = calloc(1, sizeof *l);
  if (!l) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  *l = view;
  tensor_source_release(t->source);
  free(t);
  *out = l;
  return NULL;
}

/* ---- text ---- */

void tensor_print_quoted(strbuf *b, const char *data, size_t len) {
  static const char hex[] = "0123456789abcdef";
  strbuf_putc(b, '"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)data[i];
    switch (c) {
      case '"': strbuf_append(b, "\\\""); break;
      case '\\': strbuf_append(b, "\\\\"); break;
      case '\n': strbuf_append(b, "\\n"); break;
      case '\t': strbuf_append(b, "\\t"); break;
      case '\r': strbuf_append(b, "\\r"); break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char esc[5] = {'\\', 'x', hex[c >> 4], hex[c & 15], 0};
          strbuf_append(b, esc);
        } else {
          strbuf_putc(b, (char)c);
        }
    }
  }
  strbuf_putc(b, '"');
}

/* The bits v takes when stored as one element of dtype; the printer compares these so
 * that what it prints reads back through tensor_set_f64 to exactly the same element. */
static uint64_t stored_bits(double v, graph_dtype dtype) {
  switch (dtype) {
    case GRAPH_DT_HALF: return f64_to_f16(v);
    case GRAPH_DT_BFLOAT16: return f64_to_bf16(v);
    case GRAPH_DT_FLOAT8E4M3FN: return minifloat_from_f64(MINIFLOAT_E4M3FN, v);
    case GRAPH_DT_FLOAT8E4M3FNUZ: return minifloat_from_f64(MINIFLOAT_E4M3FNUZ, v);
    case GRAPH_DT_FLOAT8E5M2: return minifloat_from_f64(MINIFLOAT_E5M2, v);
    case GRAPH_DT_FLOAT8E5M2FNUZ: return minifloat_from_f64(MINIFLOAT_E5M2FNUZ, v);
    case GRAPH_DT_FLOAT4E2M1: return minifloat_from_f64(MINIFLOAT_E2M1FN, v);
    case GRAPH_DT_FLOAT8E8M0: return minifloat_from_f64(MINIFLOAT_E8M0FNU, v);
    case GRAPH_DT_FLOAT:
    case GRAPH_DT_COMPLEX64: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      return u;
    }
    default: {
      uint64_t u;
      memcpy(&u, &v, 8);
      return u;
    }
  }
}

void tensor_print_float(strbuf *b, double v, graph_dtype dtype) {
  if (isnan(v)) {
    strbuf_append(b, signbit(v) ? "-nan" : "nan");
    return;
  }
  if (isinf(v)) {
    strbuf_append(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  uint64_t want = stored_bits(v, dtype);
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (stored_bits(strtod(buf, NULL), dtype) == want) break;
  }
  strbuf_append(b, buf);
}

static void print_element(strbuf *b, const graph_tensor *t, int64_t i) {
  switch (t->dtype) {
    case GRAPH_DT_BOOL: strbuf_append(b, ((const uint8_t *)t->data)[i] ? "true" : "false"); return;
    case GRAPH_DT_UINT64: strbuf_printf(b, "%llu", (unsigned long long)((const uint64_t *)t->data)[i]); return;
    case GRAPH_DT_STRING: {
      const graph_bytes *s = tensor_string(t, i);
      tensor_print_quoted(b, s->data, s->len);
      return;
    }
    case GRAPH_DT_COMPLEX64: {
      const float *c = t->data;
      strbuf_putc(b, '(');
      tensor_print_float(b, c[2 * i], t->dtype);
      strbuf_append(b, ", ");
      tensor_print_float(b, c[2 * i + 1], t->dtype);
      strbuf_putc(b, ')');
      return;
    }
    case GRAPH_DT_COMPLEX128: {
      const double *c = t->data;
      strbuf_putc(b, '(');
      tensor_print_float(b, c[2 * i], t->dtype);
      strbuf_append(b, ", ");
      tensor_print_float(b, c[2 * i + 1], t->dtype);
      strbuf_putc(b, ')');
      return;
    }
    default:
      if (graph_dtype_is_float(t->dtype)) tensor_print_float(b, tensor_get_f64(t, i), t->dtype);
      else strbuf_printf(b, "%lld", (long long)tensor_get_s64(t, i));
  }
}

void tensor_print(strbuf *b, const graph_tensor *t, int64_t max_elements) {
  strbuf_printf(b, "tensor<%s[", graph_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) strbuf_printf(b, i ? ",%lld" : "%lld", (long long)t->dims[i]);
  strbuf_append(b, "]>{");
  bool opaque = t->dtype == GRAPH_DT_RESOURCE || t->dtype == GRAPH_DT_VARIANT;
  if (opaque || (max_elements > 0 && t->n > max_elements)) {
    strbuf_append(b, "...}");
    return;
  }
  for (int64_t i = 0; i < t->n; i++) {
    if (i) strbuf_append(b, ", ");
    print_element(b, t, i);
  }
  strbuf_putc(b, '}');
}
