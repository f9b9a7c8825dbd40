/* Graph element-type tables (generated from GRAPH_DTYPE_LIST), the TensorFlow and ONNX
 * type-number mappings, and graph_shape helpers. */
#include "graph/dtype.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
  int hlo; /* -1: none */
} dtype_info[] = {
#define X(e, n, s, h) {n, s, h},
    GRAPH_DTYPE_LIST(X)
#undef X
};

const char *graph_dtype_name(graph_dtype t) {
  return (unsigned)t < GRAPH_DT_COUNT ? dtype_info[t].name : "invalid";
}

bool graph_dtype_from_name(const char *name, size_t len, graph_dtype *out) {
  for (int t = 0; t < GRAPH_DT_COUNT; t++) {
    if (strlen(dtype_info[t].name) == len && memcmp(dtype_info[t].name, name, len) == 0) {
      *out = (graph_dtype)t;
      return true;
    }
  }
  hlo_type h;
  if (hlo_type_from_name(name, len, &h)) {
    graph_dtype g = graph_dtype_from_hlo(h);
    if (g != GRAPH_DT_INVALID) {
      *out = g;
      return true;
    }
  }
  return false;
}

size_t graph_dtype_size(graph_dtype t) { return (unsigned)t < GRAPH_DT_COUNT ? dtype_info[t].size : 0; }

bool graph_dtype_to_hlo(graph_dtype t, hlo_type *out) {
  if ((unsigned)t >= GRAPH_DT_COUNT || dtype_info[t].hlo < 0) return false;
  *out = (hlo_type)dtype_info[t].hlo;
  return true;
}

graph_dtype graph_dtype_from_hlo(hlo_type h) {
  for (int t = 0; t < GRAPH_DT_COUNT; t++)
    if (dtype_info[t].hlo == (int)h) return (graph_dtype)t;
  return GRAPH_DT_INVALID;
}

bool graph_dtype_is_float(graph_dtype t) {
  hlo_type h;
  return graph_dtype_to_hlo(t, &h) && hlo_type_is_float(h);
}

bool graph_dtype_is_int(graph_dtype t) {
  hlo_type h;
  return graph_dtype_to_hlo(t, &h) && hlo_type_is_int(h);
}

bool graph_dtype_is_complex(graph_dtype t) { return t == GRAPH_DT_COMPLEX64 || t == GRAPH_DT_COMPLEX128; }

/* Index = TF DataType number. */
static const graph_dtype tf_types[] = {
    GRAPH_DT_INVALID,   GRAPH_DT_FLOAT,    GRAPH_DT_DOUBLE,  GRAPH_DT_INT32,   GRAPH_DT_UINT8,
    GRAPH_DT_INT16,     GRAPH_DT_INT8,     GRAPH_DT_STRING,  GRAPH_DT_COMPLEX64, GRAPH_DT_INT64,
    GRAPH_DT_BOOL,      GRAPH_DT_INVALID /* qint8 */, GRAPH_DT_INVALID /* quint8 */,
    GRAPH_DT_INVALID /* qint32 */, GRAPH_DT_BFLOAT16, GRAPH_DT_INVALID /* qint16 */,
    GRAPH_DT_INVALID /* quint16 */, GRAPH_DT_UINT16, GRAPH_DT_COMPLEX128, GRAPH_DT_HALF,
    GRAPH_DT_RESOURCE,  GRAPH_DT_VARIANT,  GRAPH_DT_UINT32,  GRAPH_DT_UINT64,
    GRAPH_DT_FLOAT8E5M2, GRAPH_DT_FLOAT8E4M3FN, GRAPH_DT_FLOAT8E4M3FNUZ,
    GRAPH_DT_INVALID /* float8_e4m3b11fnuz */, GRAPH_DT_FLOAT8E5M2FNUZ,
    /* int4/uint4 (29, 30) are left out: TF's tensors hold them in ml_dtypes' nibble form,
     * which is not kiln's sign-extended s4. */
};
enum { TF_TYPE_COUNT = sizeof tf_types / sizeof tf_types[0], TF_REF_OFFSET = 100 };

graph_dtype graph_dtype_from_tf(int n) {
  if (n > TF_REF_OFFSET) n -= TF_REF_OFFSET;
  return n >= 0 && n < TF_TYPE_COUNT ? tf_types[n] : GRAPH_DT_INVALID;
}

int graph_dtype_to_tf(graph_dtype t) {
  if (t == GRAPH_DT_INVALID) return 0;
  for (int n = 1; n < TF_TYPE_COUNT; n++)
    if (tf_types[n] == t) return n;
  return 0;
}

/* Index = ONNX TensorProto.DataType number. */
static const graph_dtype onnx_types[] = {
    GRAPH_DT_INVALID, GRAPH_DT_FLOAT,  GRAPH_DT_UINT8,  GRAPH_DT_INT8,      GRAPH_DT_UINT16,
    GRAPH_DT_INT16,   GRAPH_DT_INT32,  GRAPH_DT_INT64,  GRAPH_DT_STRING,    GRAPH_DT_BOOL,
    GRAPH_DT_HALF,    GRAPH_DT_DOUBLE, GRAPH_DT_UINT32, GRAPH_DT_UINT64,    GRAPH_DT_COMPLEX64,
    GRAPH_DT_COMPLEX128, GRAPH_DT_BFLOAT16, GRAPH_DT_FLOAT8E4M3FN, GRAPH_DT_FLOAT8E4M3FNUZ, GRAPH_DT_FLOAT8E5M2,
    GRAPH_DT_FLOAT8E5M2FNUZ, GRAPH_DT_UINT4, GRAPH_DT_INT4, GRAPH_DT_FLOAT4E2M1, GRAPH_DT_FLOAT8E8M0,
    GRAPH_DT_UINT2, GRAPH_DT_INT2,
};
enum { ONNX_TYPE_COUNT = sizeof onnx_types / sizeof onnx_types[0] };

graph_dtype graph_dtype_from_onnx(int n) {
  return n >= 0 && n < ONNX_TYPE_COUNT ? onnx_types[n] : GRAPH_DT_INVALID;
}

int graph_dtype_to_onnx(graph_dtype t) {
  if (t == GRAPH_DT_INVALID) return 0;
  for (int n = 1; n < ONNX_TYPE_COUNT; n++)
    if (onnx_types[n] == t) return n;
  return 0;
}

graph_shape graph_shape_unknown(void) {
  graph_shape s;
  memset(&s, 0, sizeof s);
  s.rank = GRAPH_UNKNOWN;
  return s;
}

graph_shape graph_shape_scalar(void) {
  graph_shape s;
  memset(&s, 0, sizeof s);
  return s;
}

graph_shape graph_shape_make(int rank, const int64_t *dims) {
  graph_shape s = graph_shape_scalar();
  if (rank < 0 || rank > GRAPH_MAX_RANK) return graph_shape_unknown();
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims[i] < 0 ? GRAPH_UNKNOWN : dims[i];
  return s;
}

bool graph_shape_is_fully_known(const graph_shape *s) {
  if (s->rank < 0) return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return false;
  return true;
}

bool graph_shape_equal(const graph_shape *a, const graph_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

int64_t graph_shape_elements(const graph_shape *s) {
  if (!graph_shape_is_fully_known(s)) return -1;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i]) return -1;
    n *= s->dims[i];
  }
  return n;
}

bool graph_shape_to_hlo(const graph_shape *s, graph_dtype t, hlo_shape *out) {
  hlo_type h;
  if (!graph_dtype_to_hlo(t, &h) || !graph_shape_is_fully_known(s)) return false;
  *out = shape_make(h, s->rank, s->dims);
  return true;
}
