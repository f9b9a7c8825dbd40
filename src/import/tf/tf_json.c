/* TF.js graph-model reader: model.json (a GraphDef in protobuf's JSON mapping plus a
 * weights manifest) and its binary shards -> the neutral form of tf_def.h, then the
 * shared builder.
 *
 * The JSON mapping writes field names in lowerCamelCase (the original snake_case is
 * accepted too), int64 as decimal strings, bytes as base64 and enums by name. Weights
 * are decoded exactly as tfjs-core's io.decodeWeights does (including its arithmetic
 * for quantized values: double precision, then stored to float32 or Math.round'ed to
 * int32) and become the values of the Const nodes of the same name. Every error names
 * model.json and the JSON path or weight at fault. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "base/half.h"
#include "base/json.h"
#include "import/tf/tf_def.h"

/* A field under its JSON name or its proto name. */
static const json_value *jfield(const json_value *obj, const char *camel, const char *snake) {
  const json_value *v = json_get(obj, camel);
  if (!v && snake) v = json_get(obj, snake);
  return v;
}

/* A string with no NUL bytes (names, ops, devices). */
static kiln_status json_name(const json_value *v, const char **out) {
  size_t len;
  TRY(json_expect_string(v, out, &len));
  if (strlen(*out) != len) return json_error_at(v, KILN_INVALID_ARGUMENT, "contains a NUL character");
  return NULL;
}

/* ---- base64 (RFC 4648; the standard and the URL-safe alphabet, padding optional) ---- */

static int b64_digit(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+' || ch == '-') return 62;
  if (ch == '/' || ch == '_') return 63;
  return -1;
}

static kiln_status json_bytes(tf_ctx *c, const json_value *v, const char **out, size_t *out_len) {
  const char *s;
  size_t len;
  TRY(json_expect_string(v, &s, &len));
  while (len && s[len - 1] == '=') len--;
  if (len % 4 == 1) return json_error_at(v, KILN_INVALID_ARGUMENT, "malformed base64 (bad length)");
  char *buf = arena_alloc(c->scratch, len / 4 * 3 + 3);
  size_t n = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int d = b64_digit((unsigned char)s[i]);
    if (d < 0) return json_error_at(v, KILN_INVALID_ARGUMENT, "malformed base64 (character %zu)", i);
    acc = (acc << 6) | (uint32_t)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[n++] = (char)((acc >> bits) & 0xff);
    }
  }
  buf[n] = 0;
  *out = buf;
  *out_len = n;
  return NULL;
}

/* ---- scalars of the JSON mapping ---- */

static kiln_status json_int32(const json_value *v, int32_t *out) {
  int64_t x = 0;
  TRY(json_expect_proto_int64(v, &x));
  if (x < INT32_MIN || x > INT32_MAX)
    return json_error_at(v, KILN_INVALID_ARGUMENT, "%lld is outside int32", (long long)x);
  *out = (int32_t)x;
  return NULL;
}

static kiln_status json_uint64(const json_value *v, uint64_t *out) {
  const char *s = json_as_string(v);
  if (!s) {
    int64_t x;
    TRY(json_expect_int64(v, &x));
    if (x < 0) return json_error_at(v, KILN_INVALID_ARGUMENT, "expected an unsigned integer, got %lld", (long long)x);
    *out = (uint64_t)x;
    return NULL;
  }
  uint64_t x = 0;
  if (!*s) return json_error_at(v, KILN_INVALID_ARGUMENT, "expected an unsigned integer, got an empty string");
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9' || x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
      return json_error_at(v, KILN_INVALID_ARGUMENT, "expected an unsigned 64-bit integer, got \"%s\"", s);
    x = x * 10 + (uint64_t)(*p - '0');
  }
  *out = x;
  return NULL;
}

/* DataType: an enum name ("DT_FLOAT") or its number, as written. */
static kiln_status json_tf_type_raw(const json_value *v, int *out) {
  const char *s = json_as_string(v);
  if (s) {
    if (!tf_dtype_from_enum_name(s, out)) return json_error_at(v, KILN_INVALID_ARGUMENT, "unknown DataType \"%s\"", s);
    return NULL;
  }
  int32_t n = 0;
  TRY(json_int32(v, &n));
  *out = n;
  return NULL;
}

/* DataType of an attribute. TF.js has no float64: its converter and runtime treat
 * DT_DOUBLE as float32 (weights of such Consts are shipped as float32, Casts to double
 * produce float32), so a TF.js graph mixing the two is consistent only if kiln reads
 * DT_DOUBLE attributes as float too. GraphDef files keep their real doubles. */
enum { TF_DT_FLOAT = 1, TF_DT_DOUBLE = 2 };
static kiln_status json_tf_type(const json_value *v, int *out) {
  TRY(json_tf_type_raw(v, out));
  if (*out == TF_DT_DOUBLE) *out = TF_DT_FLOAT;
  return NULL;
}

/* ---- shapes and tensors ---- */

static kiln_status json_shape(const json_value *v, graph_shape *out) {
  TRY(json_expect_object(v));
  const json_value *unknown = jfield(v, "unknownRank", "unknown_rank");
  bool unknown_rank = false;
  if (unknown) TRY(json_expect_bool(unknown, &unknown_rank));
  graph_shape sh = graph_shape_scalar();
  const json_value *dims = json_get(v, "dim");
  size_t n = 0;
  if (dims) TRY(json_expect_array(dims, &n));
  if (n > GRAPH_MAX_RANK) return json_error_at(dims, KILN_INVALID_ARGUMENT, "more than %d dimensions", GRAPH_MAX_RANK);
  for (size_t i = 0; i < n; i++) {
    const json_value *d = json_array_at(dims, i);
    TRY(json_expect_object(d));
    const json_value *size = json_get(d, "size");
    int64_t x = 0; /* proto3 leaves a zero size out */
    if (size) TRY(json_expect_proto_int64(size, &x));
    if (x < -1) return json_error_at(d, KILN_INVALID_ARGUMENT, "dimension size %lld", (long long)x);
    sh.dims[sh.rank++] = x;
  }
  *out = unknown_rank ? graph_shape_unknown() : sh;
  return NULL;
}

typedef enum { VAL_F32, VAL_F64, VAL_I32, VAL_I64, VAL_U32, VAL_U64, VAL_BOOL } val_kind;

static const struct {
  const char *camel, *snake;
  int field;
  val_kind kind;
} tensor_value_fields[] = {
    {"floatVal", "float_val", TF_TP_FLOAT, VAL_F32},       {"doubleVal", "double_val", TF_TP_DOUBLE, VAL_F64},
    {"intVal", "int_val", TF_TP_INT, VAL_I32},             {"scomplexVal", "scomplex_val", TF_TP_SCOMPLEX, VAL_F32},
    {"int64Val", "int64_val", TF_TP_INT64, VAL_I64},       {"boolVal", "bool_val", TF_TP_BOOL, VAL_BOOL},
    {"dcomplexVal", "dcomplex_val", TF_TP_DCOMPLEX, VAL_F64}, {"halfVal", "half_val", TF_TP_HALF, VAL_I32},
    {"uint32Val", "uint32_val", TF_TP_UINT32, VAL_U32},    {"uint64Val", "uint64_val", TF_TP_UINT64, VAL_U64},
};

static kiln_status json_value_bits(const json_value *v, val_kind k, uint64_t *bits) {
  switch (k) {
    case VAL_F32: {
      double d;
      TRY(json_expect_proto_double(v, &d));
      float f = (float)d;
      uint32_t u;
      memcpy(&u, &f, 4);
      *bits = u;
      return NULL;
    }
    case VAL_F64: {
      double d;
      TRY(json_expect_proto_double(v, &d));
      memcpy(bits, &d, 8);
      return NULL;
    }
    case VAL_I32: {
      int32_t x = 0;
      TRY(json_int32(v, &x));
      *bits = (uint64_t)(int64_t)x;
      return NULL;
    }
    case VAL_I64: {
      int64_t x;
      TRY(json_expect_proto_int64(v, &x));
      *bits = (uint64_t)x;
      return NULL;
    }
    case VAL_U32: {
      uint64_t x;
      TRY(json_uint64(v, &x));
      if (x > UINT32_MAX)
        return json_error_at(v, KILN_INVALID_ARGUMENT, "%llu is outside uint32", (unsigned long long)x);
      *bits = x;
      return NULL;
    }
    case VAL_U64: return json_uint64(v, bits);
    case VAL_BOOL: {
      bool b;
      TRY(json_expect_bool(v, &b));
      *bits = b;
      return NULL;
    }
  }
  return NULL;
}

static kiln_status json_tensor(tf_ctx *c, const json_value *v, graph_tensor **out) {
  TRY(json_expect_object(v));
  tf_tensor_def t;
  tf_tensor_def_init(&t);
  const json_value *x = json_get(v, "dtype");
  if (x) TRY(json_tf_type_raw(x, &t.dtype));
  if ((x = jfield(v, "tensorShape", "tensor_shape"))) TRY(json_shape(x, &t.shape));
  if ((x = jfield(v, "tensorContent", "tensor_content"))) {
    const char *data;
    TRY(json_bytes(c, x, &data, &t.content_len));
    t.content = (const uint8_t *)data;
  }
  for (size_t f = 0; f < sizeof tensor_value_fields / sizeof tensor_value_fields[0]; f++) {
    const json_value *arr = jfield(v, tensor_value_fields[f].camel, tensor_value_fields[f].snake);
    if (!arr) continue;
    size_t n;
    TRY(json_expect_array(arr, &n));
    for (size_t i = 0; i < n; i++) {
      uint64_t bits = 0;
      TRY(json_value_bits(json_array_at(arr, i), tensor_value_fields[f].kind, &bits));
      tf_values_push(c, &t.vals[tensor_value_fields[f].field], bits);
    }
  }
  if ((x = jfield(v, "stringVal", "string_val"))) {
    size_t n;
    TRY(json_expect_array(x, &n));
    for (size_t i = 0; i < n; i++) {
      const char *data;
      size_t len;
      TRY(json_bytes(c, json_array_at(x, i), &data, &len));
      tf_tensor_add_string(c, &t, data, len);
    }
  }
  kiln_status s = tf_tensor_make(c, &t, "tensor", out);
  if (s) {
    kiln_status e = json_error_at(v, kiln_status_code(s), "%s", kiln_status_message(s));
    kiln_status_free(s);
    return e;
  }
  return NULL;
}

/* ---- attribute values ---- */

static kiln_status json_attr_value(tf_ctx *c, const json_value *v, graph_attr_value *out);

static kiln_status json_attr_map(tf_ctx *c, const json_value *obj, graph_attr **attrs, int *n_attrs) {
  TRY(json_expect_object(obj));
  size_t n = json_object_len(obj);
  graph_attr *a = n ? arena_calloc(c->scratch, n, sizeof *a) : NULL;
  int w = 0;
  for (size_t i = 0; i < n; i++) {
    const json_member *m = json_object_at(obj, i);
    if (strlen(m->key) != m->key_len)
      return json_error_at(m->value, KILN_INVALID_ARGUMENT, "attribute name contains a NUL");
    graph_attr_value v;
    TRY(json_attr_value(c, m->value, &v));
    if (v.kind == GRAPH_ATTR_NONE) continue;
    a[w].name = arena_strdup(c->scratch, m->key);
    a[w].value = v;
    w++;
  }
  *attrs = a;
  *n_attrs = w;
  return NULL;
}

static int attr_name_cmp(const void *x, const void *y) {
  return strcmp(((const graph_attr *)x)->name, ((const graph_attr *)y)->name);
}

static kiln_status json_func(tf_ctx *c, const json_value *v, graph_func_ref *out) {
  TRY(json_expect_object(v));
  memset(out, 0, sizeof *out);
  const json_value *name = json_get(v, "name");
  out->name = "";
  if (name) TRY(json_name(name, &out->name));
  const json_value *attr = json_get(v, "attr");
  if (attr) {
    TRY(json_attr_map(c, attr, &out->attrs, &out->n_attrs));
    /* JSON objects have unique keys, so sorting is all a graph_func_ref needs. */
    if (out->n_attrs > 1) qsort(out->attrs, (size_t)out->n_attrs, sizeof *out->attrs, attr_name_cmp);
  }
  return NULL;
}

static kiln_status json_list(tf_ctx *c, const json_value *v, graph_attr_value *out) {
  static const char *const kinds[] = {"s", "i", "f", "b", "type", "shape", "tensor", "func"};
  TRY(json_expect_object(v));
  memset(out, 0, sizeof *out);
  out->kind = GRAPH_ATTR_LIST;
  const json_value *arr = NULL;
  int kind = -1;
  for (int k = 0; k < 8; k++) {
    const json_value *a = json_get(v, kinds[k]);
    size_t n;
    if (!a) continue;
    TRY(json_expect_array(a, &n));
    if (!n) continue;
    if (arr)
      return json_error_at(v, KILN_INVALID_ARGUMENT, "list attribute has both %s and %s values", kinds[kind],
                           kinds[k]);
    arr = a;
    kind = k;
  }
  if (!arr) return NULL; /* an empty list */
  size_t n = json_array_len(arr);
  if (n > INT32_MAX / 2) return json_error_at(arr, KILN_INVALID_ARGUMENT, "list too long");
  graph_attr_value *items = arena_calloc(c->scratch, n, sizeof *items);
  for (size_t i = 0; i < n; i++) {
    const json_value *e = json_array_at(arr, i);
    graph_attr_value *it = &items[i];
    switch (kind) {
      case 0:
        it->kind = GRAPH_ATTR_STRING;
        TRY(json_bytes(c, e, (const char **)&it->s.data, &it->s.len));
        break;
      case 1: it->kind = GRAPH_ATTR_INT; TRY(json_expect_proto_int64(e, &it->i)); break;
      case 2: {
        double d;
        TRY(json_expect_proto_double(e, &d));
        it->kind = GRAPH_ATTR_FLOAT;
        it->f = (float)d;
        break;
      }
      case 3: it->kind = GRAPH_ATTR_BOOL; TRY(json_expect_bool(e, &it->b)); break;
      case 4: {
        int t;
        TRY(json_tf_type(e, &t));
        it->kind = GRAPH_ATTR_TYPE;
        it->type = graph_dtype_from_tf(t);
        break;
      }
      case 5:
        it->kind = GRAPH_ATTR_SHAPE;
        it->shape = arena_alloc(c->scratch, sizeof *it->shape);
        TRY(json_shape(e, it->shape));
        break;
      case 6: it->kind = GRAPH_ATTR_TENSOR; TRY(json_tensor(c, e, &it->tensor)); break;
      default: it->kind = GRAPH_ATTR_FUNC; TRY(json_func(c, e, &it->func)); break;
    }
  }
  out->list.elem = items[0].kind;
  out->list.n = (int)n;
  out->list.items = items;
  return NULL;
}

/* An AttrValue: the oneof member present decides; with none (or only unknown keys) the
 * value stays GRAPH_ATTR_NONE and the caller drops it. */
static kiln_status json_attr_value(tf_ctx *c, const json_value *v, graph_attr_value *out) {
  TRY(json_expect_object(v));
  memset(out, 0, sizeof *out);
  const json_value *x;
  if ((x = json_get(v, "list"))) return json_list(c, x, out);
  if ((x = json_get(v, "s"))) {
    out->kind = GRAPH_ATTR_STRING;
    return json_bytes(c, x, (const char **)&out->s.data, &out->s.len);
  }
  if ((x = json_get(v, "i"))) {
    out->kind = GRAPH_ATTR_INT;
    return json_expect_proto_int64(x, &out->i);
  }
  if ((x = json_get(v, "f"))) {
    double d;
    TRY(json_expect_proto_double(x, &d));
    out->kind = GRAPH_ATTR_FLOAT;
    out->f = (float)d;
    return NULL;
  }
  if ((x = json_get(v, "b"))) {
    out->kind = GRAPH_ATTR_BOOL;
    return json_expect_bool(x, &out->b);
  }
  if ((x = json_get(v, "type"))) {
    int t;
    TRY(json_tf_type(x, &t));
    out->kind = GRAPH_ATTR_TYPE;
    out->type = graph_dtype_from_tf(t);
    return NULL;
  }
  if ((x = json_get(v, "shape"))) {
    out->kind = GRAPH_ATTR_SHAPE;
    out->shape = arena_alloc(c->scratch, sizeof *out->shape);
    return json_shape(x, out->shape);
  }
  if ((x = json_get(v, "tensor"))) {
    out->kind = GRAPH_ATTR_TENSOR;
    return json_tensor(c, x, &out->tensor);
  }
  if ((x = json_get(v, "func"))) {
    out->kind = GRAPH_ATTR_FUNC;
    return json_func(c, x, &out->func);
  }
  if ((x = json_get(v, "placeholder"))) {
    const char *name;
    TRY(json_name(x, &name));
    out->kind = GRAPH_ATTR_STRING;
    out->s.data = arena_printf(c->scratch, "$%s", name);
    out->s.len = strlen(out->s.data);
    return NULL;
  }
  return NULL;
}

/* ---- weights ---- */

typedef struct weight {
  const char *name;
  graph_tensor *tensor;
  const json_value *where;
  bool used;
} weight;

typedef struct weight_source {
  const uint8_t *data;
  size_t len;
  /* Per manifest group, when known (file import): its byte range and its files. */
  const size_t *group_start, *group_end;
  const char *const *group_files;
} weight_source;

typedef struct weights {
  weight *w; /* sorted by name after reading */
  int n, cap;
} weights;

static int weight_cmp(const void *a, const void *b) {
  return strcmp(((const weight *)a)->name, ((const weight *)b)->name);
}

static weight *find_weight(const weights *ws, const char *name) {
  weight key = {.name = name};
  if (!ws->n) return NULL;
  return bsearch(&key, ws->w, (size_t)ws->n, sizeof *ws->w, weight_cmp);
}

/* ToInt32 of ECMAScript applied to Math.round(x): what storing into an Int32Array does. */
static int32_t js_round_to_int32(double x) {
  if (!isfinite(x)) return 0;
  double r = floor(x);
  if (x - r >= 0.5) r += 1; /* Math.round: halves go towards +infinity */
  double m = fmod(r, 4294967296.0);
  if (m < 0) m += 4294967296.0;
  uint32_t u = (uint32_t)m;
  return (int32_t)u;
}

static uint64_t load_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

typedef struct weight_type {
  const char *name;
  graph_dtype dtype;
  int width;
} weight_type;

/* TF.js's own weight dtypes, and plain numeric ones other converters write. */
static const weight_type weight_types[] = {
    {"float32", GRAPH_DT_FLOAT, 4},  {"int32", GRAPH_DT_INT32, 4},   {"bool", GRAPH_DT_BOOL, 1},
    {"complex64", GRAPH_DT_COMPLEX64, 8}, {"string", GRAPH_DT_STRING, 0}, {"float16", GRAPH_DT_HALF, 2},
    {"float64", GRAPH_DT_DOUBLE, 8}, {"int8", GRAPH_DT_INT8, 1},     {"uint8", GRAPH_DT_UINT8, 1},
    {"int16", GRAPH_DT_INT16, 2},    {"uint16", GRAPH_DT_UINT16, 2}, {"uint32", GRAPH_DT_UINT32, 4},
    {"int64", GRAPH_DT_INT64, 8},    {"uint64", GRAPH_DT_UINT64, 8},
};

static kiln_status short_shard(const json_value *w, const char *name, const weight_source *src, int group,
                               size_t offset, uint64_t need, size_t limit) {
  if (src->group_files)
    return json_error_at(w, KILN_INVALID_ARGUMENT,
                         "weight '%s' needs %llu bytes at offset %zu of group %d, but the group's shards (%s) hold "
                         "only %zu bytes: shard too short",
                         name, (unsigned long long)need, offset - src->group_start[group], group,
                         src->group_files[group], limit - src->group_start[group]);
  return json_error_at(w, KILN_INVALID_ARGUMENT,
                       "weight '%s' needs %llu bytes at offset %zu, but the weight data holds only %zu bytes", name,
                       (unsigned long long)need, offset, limit);
}

static kiln_status read_weight(tf_ctx *c, const json_value *w, const weight_source *src, int group, size_t *offset,
                               size_t limit, weight *out) {
  TRY(json_expect_object(w));
  const json_value *jname, *jshape, *jdtype;
  TRY(json_expect_member(w, "name", &jname));
  TRY(json_expect_member(w, "shape", &jshape));
  TRY(json_expect_member(w, "dtype", &jdtype));
  const char *name, *dtype_name;
  TRY(json_name(jname, &name));
  TRY(json_expect_string(jdtype, &dtype_name, NULL));
  size_t rank;
  TRY(json_expect_array(jshape, &rank));
  if (rank > GRAPH_MAX_RANK)
    return json_error_at(jshape, KILN_INVALID_ARGUMENT, "weight '%s' has more than %d dimensions", name,
                         GRAPH_MAX_RANK);
  int64_t dims[GRAPH_MAX_RANK];
  uint64_t n = 1;
  bool huge = false;
  for (size_t i = 0; i < rank; i++) {
    TRY(json_expect_int64(json_array_at(jshape, i), &dims[i]));
    if (dims[i] < 0)
      return json_error_at(json_array_at(jshape, i), KILN_INVALID_ARGUMENT, "weight '%s' has a negative dimension",
                           name);
    if (dims[i] && n > (uint64_t)INT64_MAX / (uint64_t)dims[i]) huge = true;
    else n *= (uint64_t)dims[i];
  }
  const weight_type *type = NULL;
  for (size_t i = 0; i < sizeof weight_types / sizeof weight_types[0]; i++)
    if (!strcmp(weight_types[i].name, dtype_name)) type = &weight_types[i];
  if (!type)
    return json_error_at(jdtype, KILN_INVALID_ARGUMENT, "weight '%s' has unknown dtype '%s'", name, dtype_name);

  /* Quantization: the stored element type and how to widen it. */
  const json_value *q = json_get(w, "quantization");
  int qwidth = 0; /* 0: not quantized */
  bool q_half = false;
  double qmin = 0, qscale = 0;
  if (q) {
    TRY(json_expect_object(q));
    const json_value *qd;
    const char *qname;
    TRY(json_expect_member(q, "dtype", &qd));
    TRY(json_expect_string(qd, &qname, NULL));
    if (!strcmp(qname, "uint8") || !strcmp(qname, "uint16")) {
      qwidth = qname[4] == '8' ? 1 : 2;
      const json_value *jmin = json_get(q, "min"), *jscale = json_get(q, "scale");
      if (!jmin || !jscale)
        return json_error_at(q, KILN_INVALID_ARGUMENT, "weight '%s' is quantized to %s without min and scale", name,
                             qname);
      TRY(json_expect_double(jmin, &qmin));
      TRY(json_expect_double(jscale, &qscale));
      if (type->dtype != GRAPH_DT_FLOAT && type->dtype != GRAPH_DT_INT32)
        return json_error_at(q, KILN_INVALID_ARGUMENT, "weight '%s': %s quantization of a %s weight is not supported",
                             name, qname, dtype_name);
    } else if (!strcmp(qname, "float16")) {
      qwidth = 2;
      q_half = true;
      if (type->dtype != GRAPH_DT_FLOAT)
        return json_error_at(q, KILN_INVALID_ARGUMENT,
                             "weight '%s' is quantized with float16, which only supports float32 weights, not %s", name,
                             dtype_name);
    } else {
      return json_error_at(qd, KILN_INVALID_ARGUMENT, "weight '%s' has unknown quantization dtype '%s'", name, qname);
    }
  }

  /* The bytes must be there before anything is allocated: a shape is cheap to write. */
  size_t off = *offset;
  int width = qwidth ? qwidth : type->width;
  bool is_string = type->dtype == GRAPH_DT_STRING && !q;
  uint64_t min_bytes = is_string ? 4 : (uint64_t)width; /* per element */
  if (!huge && n > (uint64_t)(limit - off) / min_bytes)
    return short_shard(w, name, src, group, off, n * min_bytes, limit);
  graph_tensor *t;
  kiln_status s = huge ? status_error(KILN_RESOURCE_EXHAUSTED, "too many elements")
                       : tensor_create(type->dtype, (int)rank, dims, &t);
  if (s) {
    kiln_status e = json_error_at(w, kiln_status_code(s), "weight '%s': %s", name, kiln_status_message(s));
    kiln_status_free(s);
    return e;
  }
  tf_ctx_own_tensor(c, t);
  if (is_string) {
    for (int64_t i = 0; i < t->n; i++) {
      if (limit - off < 4) return short_shard(w, name, src, group, off, 4, limit);
      uint32_t len = (uint32_t)load_le(src->data + off, 4);
      off += 4;
      if (limit - off < len) return short_shard(w, name, src, group, off, len, limit);
      tensor_set_string(t, i, (const char *)src->data + off, len);
      off += len;
    }
  } else {
    uint64_t bytes = (uint64_t)t->n * (uint64_t)width;
    if (bytes > limit - off) return short_shard(w, name, src, group, off, bytes, limit);
    const uint8_t *p = src->data + off;
    if (!q) {
      /* Raw little-endian elements: assemble each value from its bytes. */
      uint8_t *d = t->data;
      int comp = type->dtype == GRAPH_DT_COMPLEX64 ? 4 : width;
      for (uint64_t i = 0; i < bytes; i += (uint64_t)comp) {
        uint64_t bits = load_le(p + i, comp);
        if (type->dtype == GRAPH_DT_BOOL) bits = bits != 0;
        if (comp == 1) d[i] = (uint8_t)bits;
        else if (comp == 2) { uint16_t u = (uint16_t)bits; memcpy(d + i, &u, 2); }
        else if (comp == 4) { uint32_t u = (uint32_t)bits; memcpy(d + i, &u, 4); }
        else memcpy(d + i, &bits, 8);
      }
    } else {
      for (int64_t i = 0; i < t->n; i++) {
        uint32_t qv = (uint32_t)load_le(p + (size_t)i * (size_t)qwidth, qwidth);
        if (q_half) {
          ((float *)t->data)[i] = f16_to_f32((uint16_t)qv);
        } else {
          double x = (double)qv * qscale + qmin;
          if (type->dtype == GRAPH_DT_FLOAT) ((float *)t->data)[i] = (float)x;
          else ((int32_t *)t->data)[i] = js_round_to_int32(x);
        }
      }
    }
    off += (size_t)bytes;
  }
  *offset = off;
  out->name = name;
  out->tensor = t;
  out->where = w;
  out->used = false;
  return NULL;
}

static kiln_status read_weights(tf_ctx *c, const json_value *manifest, const weight_source *src, weights *ws) {
  size_t n_groups;
  TRY(json_expect_array(manifest, &n_groups));
  size_t offset = 0;
  for (size_t g = 0; g < n_groups; g++) {
    const json_value *group = json_array_at(manifest, g);
    TRY(json_expect_object(group));
    const json_value *list;
    size_t n;
    TRY(json_expect_member(group, "weights", &list));
    TRY(json_expect_array(list, &n));
    size_t limit = src->len;
    if (src->group_start) {
      offset = src->group_start[g];
      limit = src->group_end[g];
    }
    for (size_t i = 0; i < n; i++) {
      tf_grow(c->scratch, (void **)&ws->w, &ws->cap, ws->n + 1, sizeof *ws->w);
      TRY(read_weight(c, json_array_at(list, i), src, (int)g, &offset, limit, &ws->w[ws->n]));
      ws->n++;
      if (ws->n == INT32_MAX / 2) return json_error_at(list, KILN_INVALID_ARGUMENT, "too many weights");
    }
  }
  if (ws->n > 1) qsort(ws->w, (size_t)ws->n, sizeof *ws->w, weight_cmp);
  for (int i = 1; i < ws->n; i++)
    if (!strcmp(ws->w[i - 1].name, ws->w[i].name))
      return json_error_at(ws->w[i].where, KILN_INVALID_ARGUMENT, "weight '%s' is listed twice", ws->w[i].name);
  c->info.n_weights = ws->n;
  return NULL;
}

/* ---- topology ---- */

static void set_const_value(tf_ctx *c, tf_node_def *n, graph_tensor *t) {
  graph_attr_value v = {.kind = GRAPH_ATTR_TENSOR, .tensor = t};
  tf_node_add_attr(c, n, "value", &v);
  graph_attr_value d = {.kind = GRAPH_ATTR_TYPE, .type = t->dtype};
  tf_node_add_attr(c, n, "dtype", &d);
}

static kiln_status json_node(tf_ctx *c, const json_value *v, weights *ws, tf_node_def *n) {
  TRY(json_expect_object(v));
  const json_value *x;
  TRY(json_expect_member(v, "name", &x));
  TRY(json_name(x, &n->name));
  TRY(json_expect_member(v, "op", &x));
  TRY(json_name(x, &n->op));
  if ((x = json_get(v, "device"))) TRY(json_name(x, &n->device));
  if ((x = json_get(v, "input"))) {
    size_t k;
    TRY(json_expect_array(x, &k));
    for (size_t i = 0; i < k; i++) {
      const char *in;
      TRY(json_name(json_array_at(x, i), &in));
      tf_node_add_input(c, n, in);
    }
  }
  weight *w = ws ? find_weight(ws, n->name) : NULL;
  if (w && strcmp(n->op, "Const"))
    return json_error_at(v, KILN_INVALID_ARGUMENT, "weight '%s' names a %s node, not a Const", n->name, n->op);
  const json_value *attrs = json_get(v, "attr");
  if (attrs) {
    TRY(json_expect_object(attrs));
    for (size_t i = 0; i < json_object_len(attrs); i++) {
      const json_member *m = json_object_at(attrs, i);
      if (strlen(m->key) != m->key_len)
        return json_error_at(m->value, KILN_INVALID_ARGUMENT, "attribute name contains a NUL");
      /* A weight replaces the topology's value, which only has dtype and shape. */
      if (w && !strcmp(m->key, "value")) continue;
      graph_attr_value a;
      TRY(json_attr_value(c, m->value, &a));
      if (a.kind != GRAPH_ATTR_NONE) tf_node_add_attr(c, n, arena_strdup(c->scratch, m->key), &a);
    }
  }
  if (w) {
    set_const_value(c, n, w->tensor);
    w->used = true;
  }
  return NULL;
}

static kiln_status json_arg(const json_value *v, tf_arg_def *a) {
  TRY(json_expect_object(v));
  const json_value *x;
  a->name = "";
  if ((x = json_get(v, "name"))) TRY(json_name(x, &a->name));
  if ((x = json_get(v, "type"))) TRY(json_tf_type(x, &a->type));
  const char *s;
  if ((s = json_as_string(jfield(v, "numberAttr", "number_attr"))) && *s) a->is_list = true;
  if ((s = json_as_string(jfield(v, "typeListAttr", "type_list_attr"))) && *s) a->is_list = true;
  return NULL;
}

static kiln_status json_args(tf_ctx *c, const json_value *arr, tf_arg_def **out, int *n_out) {
  size_t n;
  TRY(json_expect_array(arr, &n));
  if (n > INT32_MAX / 2) return json_error_at(arr, KILN_INVALID_ARGUMENT, "too many arguments");
  *out = n ? arena_calloc(c->scratch, n, sizeof **out) : NULL;
  for (size_t i = 0; i < n; i++) TRY(json_arg(json_array_at(arr, i), &(*out)[i]));
  *n_out = (int)n;
  return NULL;
}

static kiln_status json_function(tf_ctx *c, const json_value *v, tf_function_def *f) {
  TRY(json_expect_object(v));
  const json_value *sig, *x;
  TRY(json_expect_member(v, "signature", &sig));
  TRY(json_expect_object(sig));
  f->name = "";
  if ((x = json_get(sig, "name"))) TRY(json_name(x, &f->name));
  if ((x = jfield(sig, "inputArg", "input_arg"))) TRY(json_args(c, x, &f->in, &f->n_in));
  if ((x = jfield(sig, "outputArg", "output_arg"))) TRY(json_args(c, x, &f->out, &f->n_out));
  if ((x = jfield(v, "nodeDef", "node_def"))) {
    size_t n;
    TRY(json_expect_array(x, &n));
    for (size_t i = 0; i < n; i++) TRY(json_node(c, json_array_at(x, i), NULL, tf_function_add_node(c, f)));
  }
  if ((x = json_get(v, "ret"))) {
    TRY(json_expect_object(x));
    size_t n = json_object_len(x);
    f->ret = n ? arena_calloc(c->scratch, n, sizeof *f->ret) : NULL;
    for (size_t i = 0; i < n; i++) {
      const json_member *m = json_object_at(x, i);
      if (strlen(m->key) != m->key_len) return json_error_at(m->value, KILN_INVALID_ARGUMENT, "key contains a NUL");
      f->ret[i].key = m->key;
      TRY(json_name(m->value, &f->ret[i].value));
    }
    f->n_ret = (int)n;
  }
  return NULL;
}

static kiln_status json_signature_part(tf_ctx *c, const json_value *obj, tf_string_pair **out, int *n_out) {
  TRY(json_expect_object(obj));
  size_t n = json_object_len(obj);
  *out = n ? arena_calloc(c->scratch, n, sizeof **out) : NULL;
  for (size_t i = 0; i < n; i++) {
    const json_member *m = json_object_at(obj, i);
    if (strlen(m->key) != m->key_len) return json_error_at(m->value, KILN_INVALID_ARGUMENT, "key contains a NUL");
    TRY(json_expect_object(m->value));
    (*out)[i].key = m->key;
    (*out)[i].value = m->key;
    const json_value *name = json_get(m->value, "name");
    if (name) TRY(json_name(name, &(*out)[i].value));
  }
  *n_out = (int)n;
  return NULL;
}

/* The whole document, with the weight bytes at hand. */
static kiln_status tfjs_build(tf_ctx *c, const json_value *doc, const weight_source *src, graph **out) {
  TRY(json_expect_object(doc));
  const json_value *x;
  if ((x = json_get(doc, "format"))) {
    const char *format;
    TRY(json_expect_string(x, &format, NULL));
    if (strcmp(format, "graph-model"))
      return json_error_at(x, KILN_INVALID_ARGUMENT,
                           "format is \"%s\"; kiln reads TF.js graph models (\"graph-model\")", format);
  }
  const json_value *topo;
  TRY(json_expect_member(doc, "modelTopology", &topo));
  TRY(json_expect_object(topo));

  weights ws = {0};
  if ((x = json_get(doc, "weightsManifest"))) TRY(read_weights(c, x, src, &ws));

  tf_graph_def def;
  memset(&def, 0, sizeof def);
  if ((x = json_get(topo, "node"))) {
    size_t n;
    TRY(json_expect_array(x, &n));
    for (size_t i = 0; i < n; i++) TRY(json_node(c, json_array_at(x, i), &ws, tf_graph_add_node(c, &def)));
  }
  /* Weights with no Const node in the topology make their own. */
  for (int i = 0; i < ws.n; i++) {
    if (ws.w[i].used) continue;
    tf_node_def *n = tf_graph_add_node(c, &def);
    n->name = ws.w[i].name;
    n->op = "Const";
    set_const_value(c, n, ws.w[i].tensor);
  }
  const json_value *lib = json_get(topo, "library");
  if (lib && (x = json_get(lib, "function"))) {
    size_t n;
    TRY(json_expect_array(x, &n));
    for (size_t i = 0; i < n; i++) TRY(json_function(c, json_array_at(x, i), tf_graph_add_function(c, &def)));
  }
  if ((x = json_get(topo, "versions"))) {
    const json_value *p = json_get(x, "producer"), *m = jfield(x, "minConsumer", "min_consumer");
    if (p) TRY(json_expect_proto_int64(p, &c->info.producer));
    if (m) TRY(json_expect_proto_int64(m, &c->info.min_consumer));
  }
  tf_signature sig;
  memset(&sig, 0, sizeof sig);
  const json_value *jsig = json_get(doc, "signature");
  if (jsig) {
    TRY(json_expect_object(jsig));
    if ((x = json_get(jsig, "inputs"))) TRY(json_signature_part(c, x, &sig.inputs, &sig.n_inputs));
    if ((x = json_get(jsig, "outputs"))) TRY(json_signature_part(c, x, &sig.outputs, &sig.n_outputs));
  }
  kiln_status s = tf_build_graph(c, &def, jsig ? &sig : NULL, out);
  return s ? status_wrap(s, "%s", c->source) : NULL;
}

kiln_status tfjs_import_buffer_ex(const char *json, size_t json_len, const void *weights_data, size_t weights_len,
                                  const char *name, graph **out, tf_import_info *info) {
  *out = NULL;
  if (!name) name = "model.json";
  tf_ctx c;
  tf_ctx_init(&c, name);
  json_value *doc;
  kiln_status s = json_parse(c.scratch, json ? json : "", json ? json_len : 0, name, &doc);
  if (!s) {
    weight_source src = {.data = weights_data ? weights_data : (const void *)"", .len = weights_data ? weights_len : 0};
    s = tfjs_build(&c, doc, &src, out);
  }
  if (!s && info) *info = c.info;
  tf_ctx_release(&c);
  return s;
}

kiln_status tfjs_import_buffer(const char *json, size_t json_len, const void *weights, size_t weights_len,
                               const char *name, graph **out) {
  return tfjs_import_buffer_ex(json, json_len, weights, weights_len, name, out, NULL);
}

/* Grows buf to hold at least `need` bytes (doubling); false when out of memory. */
static bool reserve(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : (size_t)1 << 16;
  while (c < need) c = c > SIZE_MAX / 2 ? need : c * 2;
  uint8_t *n = realloc(*buf, c);
  if (!n) return false;
  *buf = n;
  *cap = c;
  return true;
}

/* Appends the whole file to buf, reading straight into place (shards are large). */
static kiln_status append_file(const char *path, uint8_t **buf, size_t *len, size_t *cap) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return status_error(errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "%s: cannot open: %s", path,
                        strerror(errno));
  struct stat st;
  kiln_status s = NULL;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      !reserve(buf, cap, *len + (size_t)st.st_size + 1))
    s = status_error(KILN_RESOURCE_EXHAUSTED, "%s: out of memory reading %lld bytes", path, (long long)st.st_size);
  while (!s) {
    if (*len == *cap && !reserve(buf, cap, *len + 1)) {
      s = status_error(KILN_RESOURCE_EXHAUSTED, "%s: out of memory reading the file", path);
      break;
    }
    size_t got = fread(*buf + *len, 1, *cap - *len, f);
    *len += got;
    if (!got) break;
  }
  if (!s && ferror(f)) s = status_error(KILN_IO_ERROR, "%s: read failed: %s", path, strerror(errno));
  fclose(f);
  return s;
}

/* Reads every shard of every group, in order, into one buffer, remembering where each
 * group's bytes start and end. */
static kiln_status read_shards(tf_ctx *c, const json_value *doc, const char *dir, weight_source *src,
                               uint8_t **buffer) {
  const json_value *manifest = json_get(doc, "weightsManifest");
  *buffer = NULL;
  if (!manifest) return NULL;
  size_t n_groups;
  TRY(json_expect_array(manifest, &n_groups));
  size_t *start = arena_calloc(c->scratch, n_groups + 1, sizeof *start);
  size_t *end = arena_calloc(c->scratch, n_groups + 1, sizeof *end);
  const char **files = arena_calloc(c->scratch, n_groups + 1, sizeof *files);
  size_t len = 0, cap = 0;
  uint8_t *buf = NULL;
  kiln_status s = NULL;
  for (size_t g = 0; g < n_groups && !s; g++) {
    const json_value *group = json_array_at(manifest, g), *paths;
    start[g] = len;
    s = json_expect_object(group);
    if (!s) s = json_expect_member(group, "paths", &paths);
    size_t n = 0;
    if (!s) s = json_expect_array(paths, &n);
    strbuf names;
    strbuf_init(&names);
    for (size_t i = 0; i < n && !s; i++) {
      const char *rel;
      s = json_name(json_array_at(paths, i), &rel);
      if (s) break;
      char *path = arena_printf(c->scratch, "%s%s", dir, rel);
      strbuf_printf(&names, "%s%s", i ? ", " : "", rel);
      s = append_file(path, &buf, &len, &cap);
      if (s) s = status_wrap(s, "%s: weightsManifest[%zu]: shard %zu", c->source, g, i);
    }
    files[g] = arena_strdup(c->scratch, strbuf_cstr(&names));
    strbuf_free(&names);
    end[g] = len;
  }
  if (s) {
    free(buf);
    return s;
  }
  src->data = buf ? buf : (const uint8_t *)"";
  src->len = len;
  src->group_start = start;
  src->group_end = end;
  src->group_files = files;
  *buffer = buf;
  return NULL;
}

kiln_status tfjs_import_file_ex(const char *path, graph **out, tf_import_info *info) {
  *out = NULL;
  char *text;
  size_t text_len;
  TRY(file_read_all(path, "TF.js model.json", 0, &text, &text_len));
  tf_ctx c;
  tf_ctx_init(&c, path);
  const char *slash = strrchr(path, '/');
  const char *dir = slash ? arena_strndup(c.scratch, path, (size_t)(slash - path + 1)) : "";
  json_value *doc;
  kiln_status s = json_parse(c.scratch, text, text_len, path, &doc);
  free(text);
  uint8_t *buffer = NULL;
  weight_source src;
  memset(&src, 0, sizeof src);
  if (!s) s = json_expect_object(doc);
  if (!s) s = read_shards(&c, doc, dir, &src, &buffer);
  if (!s) s = tfjs_build(&c, doc, &src, out);
  free(buffer);
  if (!s && info) *info = c.info;
  tf_ctx_release(&c);
  return s;
}

kiln_status tfjs_import_file(const char *path, graph **out) { return tfjs_import_file_ex(path, out, NULL); }
