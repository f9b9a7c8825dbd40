/* TensorProto -> graph tensor, by TensorFlow's rules (tensorflow/core/framework/
 * tensor.cc, FromProto): tensor_content, when present, is the whole value as raw
 * little-endian elements (strings: all lengths as varint32s, then all the bytes);
 * otherwise only the typed field that belongs to the dtype counts (int_val also holds
 * int8/int16/uint8/uint16, half_val the bits of half and bfloat16), and a field with
 * fewer values than elements repeats its last value -- the splat that lets a GraphDef
 * write a large constant-filled tensor in a few bytes. More values than elements is an
 * error, as in TensorFlow. Resource and variant tensors are not materialised: their
 * handles only mean something inside the process that made them. */
#include <string.h>

#include "base/half.h"
#include "import/tf/pb_wire.h"
#include "import/tf/tf_def.h"

void tf_tensor_def_init(tf_tensor_def *t) {
  memset(t, 0, sizeof *t);
  t->shape = graph_shape_scalar();
}

void tf_values_push(tf_ctx *c, tf_values *v, uint64_t bits) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8;
    uint64_t *n = arena_alloc(c->scratch, cap * sizeof *n);
    if (v->n) memcpy(n, v->v, v->n * sizeof *n);
    v->v = n;
    v->cap = cap;
  }
  v->v[v->n++] = bits;
}

void tf_tensor_add_string(tf_ctx *c, tf_tensor_def *t, const char *data, size_t len) {
  if (t->n_strings == t->cap_strings) {
    size_t cap = t->cap_strings ? t->cap_strings * 2 : 4;
    graph_bytes *n = arena_alloc(c->scratch, cap * sizeof *n);
    if (t->n_strings) memcpy(n, t->strings, t->n_strings * sizeof *n);
    t->strings = n;
    t->cap_strings = cap;
  }
  t->strings[t->n_strings].data = (char *)data;
  t->strings[t->n_strings].len = len;
  t->n_strings++;
}

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  uint8_t b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* Raw little-endian elements of `width` bytes into host order. */
static void copy_le(void *dst, const uint8_t *src, size_t bytes, size_t width) {
  if (host_is_little_endian() || width == 1) {
    memcpy(dst, src, bytes);
    return;
  }
  uint8_t *d = dst;
  for (size_t i = 0; i < bytes; i += width)
    for (size_t k = 0; k < width; k++) d[i + k] = src[i + width - 1 - k];
}

/* Width of one scalar component in tensor_content (complex numbers are two). */
static size_t component_width(graph_dtype d) {
  if (d == GRAPH_DT_COMPLEX64) return 4;
  if (d == GRAPH_DT_COMPLEX128) return 8;
  return graph_dtype_size(d);
}

static kiln_status decode_string_content(graph_tensor *x, const uint8_t *p, size_t len, const char *what) {
  const uint8_t *end = p + len;
  /* Lengths first: n varint32s. They must all fit before any byte is taken. */
  const uint8_t *q = p;
  uint64_t total = 0;
  for (int64_t i = 0; i < x->n; i++) {
    uint64_t l;
    kiln_status s = pb_read_varint(&q, end, &l);
    if (s) return status_wrap(s, "%s: string tensor_content, length of element %lld", what, (long long)i);
    if (l > UINT32_MAX) return ERR_INVALID("%s: string element %lld is longer than 4 GiB", what, (long long)i);
    total += l;
  }
  if (total != (uint64_t)(end - q))
    return ERR_INVALID("%s: string tensor_content holds %zu bytes after the lengths, the lengths add up to %llu", what,
                       (size_t)(end - q), (unsigned long long)total);
  const uint8_t *data = q;
  q = p;
  for (int64_t i = 0; i < x->n; i++) {
    uint64_t l;
    if (pb_read_varint(&q, end, &l)) return ERR_INTERNAL("string lengths changed between passes");
    tensor_set_string(x, i, (const char *)data, (size_t)l);
    data += l;
  }
  return NULL;
}

/* Stores the value with the given bits as element i of x. */
static void store(graph_tensor *x, int64_t i, const uint64_t *bits) {
  uint8_t *d = (uint8_t *)x->data + (size_t)i * graph_dtype_size(x->dtype);
  switch (x->dtype) {
    case GRAPH_DT_FLOAT:
    case GRAPH_DT_UINT32: {
      uint32_t u = (uint32_t)bits[0];
      memcpy(d, &u, 4);
      break;
    }
    case GRAPH_DT_INT32: {
      int32_t v = (int32_t)(uint32_t)bits[0];
      memcpy(d, &v, 4);
      break;
    }
    case GRAPH_DT_DOUBLE:
    case GRAPH_DT_INT64:
    case GRAPH_DT_UINT64: memcpy(d, &bits[0], 8); break;
    case GRAPH_DT_INT16:
    case GRAPH_DT_UINT16:
    case GRAPH_DT_HALF:
    case GRAPH_DT_BFLOAT16: {
      uint16_t u = (uint16_t)bits[0];
      memcpy(d, &u, 2);
      break;
    }
    case GRAPH_DT_INT8:
    case GRAPH_DT_UINT8: d[0] = (uint8_t)bits[0]; break;
    case GRAPH_DT_BOOL: d[0] = bits[0] != 0; break;
    case GRAPH_DT_COMPLEX64: {
      uint32_t re = (uint32_t)bits[0], im = (uint32_t)bits[1];
      memcpy(d, &re, 4);
      memcpy(d + 4, &im, 4);
      break;
    }
    case GRAPH_DT_COMPLEX128:
      memcpy(d, &bits[0], 8);
      memcpy(d + 8, &bits[1], 8);
      break;
    default: break;
  }
}

/* The TensorProto field that holds values of dtype d. */
static int typed_field(graph_dtype d) {
  switch (d) {
    case GRAPH_DT_FLOAT: return TF_TP_FLOAT;
    case GRAPH_DT_DOUBLE: return TF_TP_DOUBLE;
    case GRAPH_DT_INT32:
    case GRAPH_DT_INT16:
    case GRAPH_DT_INT8:
    case GRAPH_DT_UINT8:
    case GRAPH_DT_UINT16: return TF_TP_INT;
    case GRAPH_DT_INT64: return TF_TP_INT64;
    case GRAPH_DT_BOOL: return TF_TP_BOOL;
    case GRAPH_DT_HALF:
    case GRAPH_DT_BFLOAT16: return TF_TP_HALF;
    case GRAPH_DT_COMPLEX64: return TF_TP_SCOMPLEX;
    case GRAPH_DT_COMPLEX128: return TF_TP_DCOMPLEX;
    case GRAPH_DT_UINT32: return TF_TP_UINT32;
    case GRAPH_DT_UINT64: return TF_TP_UINT64;
    case GRAPH_DT_STRING: return TF_TP_STRING;
    default: return 0;
  }
}

static kiln_status fill(tf_ctx *c, const tf_tensor_def *t, graph_tensor *x, const char *what) {
  graph_dtype d = x->dtype;
  if (d == GRAPH_DT_RESOURCE || d == GRAPH_DT_VARIANT) {
    c->info.n_unmaterialised++;
    return NULL;
  }
  if (t->content_len) {
    if (d == GRAPH_DT_STRING) return decode_string_content(x, t->content, t->content_len, what);
    size_t bytes = tensor_byte_size(x);
    if (t->content_len != bytes)
      return ERR_INVALID("%s: tensor_content has %zu bytes, a %s tensor of %lld elements needs %zu", what,
                         t->content_len, graph_dtype_name(d), (long long)x->n, bytes);
    copy_le(x->data, t->content, bytes, component_width(d));
    return NULL;
  }
  int field = typed_field(d);
  if (d == GRAPH_DT_STRING) {
    size_t m = t->n_strings;
    if (m > (uint64_t)x->n)
      return ERR_INVALID("%s: %zu string values for %lld elements", what, m, (long long)x->n);
    if (!m) return NULL;
    for (int64_t i = 0; i < x->n; i++) {
      const graph_bytes *s = &t->strings[(size_t)i < m ? (size_t)i : m - 1];
      tensor_set_string(x, i, s->data, s->len);
    }
    return NULL;
  }
  const tf_values *v = &t->vals[field];
  size_t per = graph_dtype_is_complex(d) ? 2 : 1;
  if (v->n % per) return ERR_INVALID("%s: complex values come in (real, imaginary) pairs; got %zu numbers", what, v->n);
  size_t m = v->n / per;
  if (m > (uint64_t)x->n) return ERR_INVALID("%s: %zu values for %lld elements", what, m, (long long)x->n);
  if (!m) return NULL; /* zeros, as created */
  for (int64_t i = 0; i < x->n; i++) {
    size_t j = (size_t)i < m ? (size_t)i : m - 1;
    store(x, i, &v->v[j * per]);
  }
  return NULL;
}

kiln_status tf_tensor_make(tf_ctx *c, const tf_tensor_def *t, const char *what, graph_tensor **out) {
  *out = NULL;
  graph_dtype d;
  TRY(tf_dtype_to_graph(t->dtype, what, &d));
  if (t->shape.rank < 0) return ERR_INVALID("%s: a tensor value cannot have unknown rank", what);
  for (int i = 0; i < t->shape.rank; i++)
    if (t->shape.dims[i] < 0)
      return ERR_INVALID("%s: dimension %d of a tensor value is %lld", what, i, (long long)t->shape.dims[i]);
  graph_tensor *x;
  kiln_status s = tensor_create(d, t->shape.rank, t->shape.dims, &x);
  if (s) return status_wrap(s, "%s", what);
  s = fill(c, t, x, what);
  if (s) {
    tensor_free(x);
    return s;
  }
  tf_ctx_own_tensor(c, x);
  *out = x;
  return NULL;
}
