/* ONNX TensorProto and TypeProto decoding for the importer.
 *
 * A TensorProto can hold its elements in five ways -- raw_data (fixed width,
 * little-endian), a typed repeated field chosen by the element type (int32_data also
 * carries the 8/16-bit integers, bool and the 16- and 8-bit floats' bit patterns),
 * string_data, or a side file (data_location EXTERNAL). INT4, UINT4 and FLOAT4E2M1 come
 * packed two per byte, first element in the low nibble, INT2 and UINT2 four per byte,
 * first element in the low two bits (an int32_data entry holds one such byte); kiln
 * unpacks them to its one-per-byte layout (int4/int2 sign-extended, see hlo/types.h)
 * right after reading. Every path checks the element count the dims
 * promise against what the file holds *before* allocating, so a header claiming a
 * billion elements costs nothing. External files are resolved against the model's
 * directory and must stay inside it (no absolute paths, no "..", no symlink that leads
 * out), because a model is untrusted input and must not read arbitrary files. */
#include "import/onnx/onnx_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/strbuf.h"
#include "import/onnx/onnx_import.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer copies little-endian raw_data directly; add byte swapping for this host"
#endif

const char *onnx_dtype_name(int64_t t) {
  static const char *const names[] = {"UNDEFINED", "FLOAT",     "UINT8",          "INT8",       "UINT16",
                                      "INT16",     "INT32",     "INT64",          "STRING",     "BOOL",
                                      "FLOAT16",   "DOUBLE",    "UINT32",         "UINT64",     "COMPLEX64",
                                      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",   "FLOAT8E4M3FNUZ",
                                      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",    "INT4",       "FLOAT4E2M1",
                                      "FLOAT8E8M0", "UINT2",     "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  return t >= 0 && t < (int64_t)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

static const char *tensor_label(const Onnx__TensorProto *tp) {
  return tp->name && *tp->name ? tp->name : "(unnamed)";
}

/* ---- external data ---- */

static bool parse_decimal(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > (INT64_MAX - (*s - '0')) / 10) return false;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return true;
}

/* Refuses locations that could leave the model directory by their spelling. */
static kiln_status check_location(const char *tensor, const char *loc) {
  if (!*loc) return ERR_INVALID("tensor '%s': external data has an empty location", tensor);
  if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
    return ERR_INVALID("tensor '%s': external data location '%s' is an absolute path; it must be relative to the "
                       "model's directory", tensor, loc);
  const char *p = loc;
  while (*p) {
    size_t n = strcspn(p, "/\\");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return ERR_INVALID("tensor '%s': external data location '%s' escapes the model's directory ('..')", tensor, loc);
    p += n;
    if (*p) p++;
  }
  return NULL;
}

/* Reads `want` bytes at `offset` of the external file into dst (dst may be NULL when
 * want == 0). */
static kiln_status read_external(const onnx_ctx *ctx, const Onnx__TensorProto *tp, size_t want, void *dst) {
  const char *tensor = tensor_label(tp);
  const char *location = NULL;
  int64_t offset = 0, length = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    const char *key = onnx_str(e->key), *value = onnx_str(e->value);
    if (strcmp(key, "location") == 0) {
      location = value;
    } else if (strcmp(key, "offset") == 0) {
      if (!parse_decimal(value, &offset))
        return ERR_INVALID("tensor '%s': external data offset '%s' is not a non-negative integer", tensor, value);
    } else if (strcmp(key, "length") == 0) {
      if (!parse_decimal(value, &length))
        return ERR_INVALID("tensor '%s': external data length '%s' is not a non-negative integer", tensor, value);
    }
  }
  if (!location) return ERR_INVALID("tensor '%s': external data has no 'location'", tensor);
  TRY(check_location(tensor, location));
  if (!ctx->dir)
    return ERR_INVALID("tensor '%s': external data ('%s') needs the model's file path to be found", tensor, location);
  if (length >= 0 && (uint64_t)length != want)
    return ERR_INVALID("tensor '%s': external data length is %" PRId64 " bytes, the tensor needs %zu", tensor, length,
                       want);

  strbuf path;
  strbuf_init(&path);
  strbuf_printf(&path, "%s/%s", ctx->dir, location);
  kiln_status s = NULL;
  FILE *f = NULL;
  /* Symlinks may not lead out of the model's directory either. */
  char *real_dir = realpath(ctx->dir, NULL);
  char *real_file = realpath(strbuf_cstr(&path), NULL);
  if (!real_file) {
    s = status_error(errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR, "tensor '%s': cannot open external data file '%s': %s",
                     tensor, strbuf_cstr(&path), strerror(errno));
    goto done;
  }
  if (!real_dir) {
    s = status_error(KILN_IO_ERROR, "tensor '%s': cannot resolve model directory '%s': %s", tensor, ctx->dir,
                     strerror(errno));
    goto done;
  }
  size_t dlen = strlen(real_dir);
  bool inside = strncmp(real_file, real_dir, dlen) == 0 && (real_file[dlen] == '/' || (dlen == 1 && real_dir[0] == '/'));
  if (!inside) {
    s = ERR_INVALID("tensor '%s': external data file '%s' resolves to '%s', outside the model's directory", tensor,
                    location, real_file);
    goto done;
  }
  f = fopen(real_file, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    s = status_error(KILN_IO_ERROR, "tensor '%s': cannot open external data file '%s': %s", tensor, strbuf_cstr(&path),
                     strerror(errno));
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    s = ERR_INVALID("tensor '%s': external data '%s' is not a regular file", tensor, strbuf_cstr(&path));
    goto done;
  }
  if (offset > (int64_t)st.st_size || want > (uint64_t)((int64_t)st.st_size - offset)) {
    s = ERR_INVALID("tensor '%s': external data file '%s' has %lld bytes, the tensor needs %zu at offset %" PRId64,
                    tensor, strbuf_cstr(&path), (long long)st.st_size, want, offset);
    goto done;
  }
  if (want) {
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(dst, 1, want, f) != want) {
      s = status_error(KILN_IO_ERROR, "tensor '%s': reading external data file '%s' failed", tensor,
                       strbuf_cstr(&path));
      goto done;
    }
  }
done:
  if (f) fclose(f);
  free(real_dir);
  free(real_file);
  strbuf_free(&path);
  return s;
}

/* ---- typed fields ---- */

/* The 4-bit types pack two elements a byte, the 2-bit ones four; 0 for every other type. */
static int packed_per_byte(graph_dtype t) {
  if (t == GRAPH_DT_INT4 || t == GRAPH_DT_UINT4 || t == GRAPH_DT_FLOAT4E2M1) return 2;
  if (t == GRAPH_DT_INT2 || t == GRAPH_DT_UINT2) return 4;
  return 0;
}

/* Bytes that n packed elements of t take (the last byte may be partly padding). */
static uint64_t packed_bytes(graph_dtype t, int64_t n) {
  int per = packed_per_byte(t);
  return ((uint64_t)n + (uint64_t)per - 1) / (uint64_t)per;
}

/* Which typed field carries elements of ONNX type t, and how many values per element. */
typedef enum typed_field { F_NONE, F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_STRING } typed_field;

static typed_field field_for(graph_dtype t, int *per_element) {
  *per_element = 1;
  switch (t) {
    case GRAPH_DT_FLOAT: return F_FLOAT;
    case GRAPH_DT_COMPLEX64: *per_element = 2; return F_FLOAT;
    case GRAPH_DT_INT32: case GRAPH_DT_INT16: case GRAPH_DT_INT8: case GRAPH_DT_UINT16: case GRAPH_DT_UINT8:
    case GRAPH_DT_BOOL: case GRAPH_DT_HALF: case GRAPH_DT_BFLOAT16: case GRAPH_DT_FLOAT8E4M3FN:
    case GRAPH_DT_FLOAT8E4M3FNUZ: case GRAPH_DT_FLOAT8E5M2: case GRAPH_DT_FLOAT8E5M2FNUZ: case GRAPH_DT_FLOAT8E8M0:
    case GRAPH_DT_INT4: case GRAPH_DT_UINT4: case GRAPH_DT_FLOAT4E2M1: /* packed: one entry per byte */
    case GRAPH_DT_INT2: case GRAPH_DT_UINT2:
      return F_INT32;
    case GRAPH_DT_INT64: return F_INT64;
    case GRAPH_DT_DOUBLE: return F_DOUBLE;
    case GRAPH_DT_COMPLEX128: *per_element = 2; return F_DOUBLE;
    case GRAPH_DT_UINT32: case GRAPH_DT_UINT64: return F_UINT64;
    case GRAPH_DT_STRING: return F_STRING;
    default: return F_NONE;
  }
}

static const char *field_name(typed_field f) {
  switch (f) {
    case F_FLOAT: return "float_data";
    case F_INT32: return "int32_data";
    case F_INT64: return "int64_data";
    case F_DOUBLE: return "double_data";
    case F_UINT64: return "uint64_data";
    case F_STRING: return "string_data";
    default: return "?";
  }
}

static size_t field_count(const Onnx__TensorProto *tp, typed_field f) {
  switch (f) {
    case F_FLOAT: return tp->n_float_data;
    case F_INT32: return tp->n_int32_data;
    case F_INT64: return tp->n_int64_data;
    case F_DOUBLE: return tp->n_double_data;
    case F_UINT64: return tp->n_uint64_data;
    case F_STRING: return tp->n_string_data;
    default: return 0;
  }
}

static void fill_from_typed(graph_tensor *t, const Onnx__TensorProto *tp, typed_field f) {
  int64_t n = t->n;
  switch (t->dtype) {
    case GRAPH_DT_FLOAT: case GRAPH_DT_COMPLEX64:
      memcpy(t->data, tp->float_data, tensor_byte_size(t));
      break;
    case GRAPH_DT_DOUBLE: case GRAPH_DT_COMPLEX128:
      memcpy(t->data, tp->double_data, tensor_byte_size(t));
      break;
    case GRAPH_DT_INT64:
      memcpy(t->data, tp->int64_data, tensor_byte_size(t));
      break;
    case GRAPH_DT_INT32:
      memcpy(t->data, tp->int32_data, tensor_byte_size(t));
      break;
    case GRAPH_DT_INT16: case GRAPH_DT_UINT16: case GRAPH_DT_HALF: case GRAPH_DT_BFLOAT16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = (uint16_t)(uint32_t)tp->int32_data[i];
      break;
    case GRAPH_DT_INT8: case GRAPH_DT_UINT8: case GRAPH_DT_FLOAT8E4M3FN: case GRAPH_DT_FLOAT8E4M3FNUZ:
    case GRAPH_DT_FLOAT8E5M2: case GRAPH_DT_FLOAT8E5M2FNUZ: case GRAPH_DT_FLOAT8E8M0:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)t->data)[i] = (uint8_t)(uint32_t)tp->int32_data[i];
      break;
    case GRAPH_DT_INT4: case GRAPH_DT_UINT4: case GRAPH_DT_FLOAT4E2M1: /* the packed bytes; unpacked later */
    case GRAPH_DT_INT2: case GRAPH_DT_UINT2:
      for (int64_t i = 0; i < (int64_t)packed_bytes(t->dtype, n); i++)
        ((uint8_t *)t->data)[i] = (uint8_t)(uint32_t)tp->int32_data[i];
      break;
    case GRAPH_DT_BOOL:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)t->data)[i] = tp->int32_data[i] != 0;
      break;
    case GRAPH_DT_UINT32:
      for (int64_t i = 0; i < n; i++) ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
      break;
    case GRAPH_DT_UINT64:
      memcpy(t->data, tp->uint64_data, tensor_byte_size(t));
      break;
    case GRAPH_DT_STRING:
      for (int64_t i = 0; i < n; i++)
        tensor_set_string(t, i, (const char *)tp->string_data[i].data, tp->string_data[i].len);
      break;
    default:
      break;
  }
  (void)f;
}

/* Spreads the packed bytes at the start of t's buffer (packed_bytes of them) over its n
 * one-byte elements, in place: walking down from the last element, element i reads byte
 * i / per_byte, which no write has reached yet. */
static void unpack_subbyte(graph_tensor *t) {
  uint8_t *d = t->data;
  bool two = t->dtype == GRAPH_DT_INT2 || t->dtype == GRAPH_DT_UINT2;
  bool sgn = t->dtype == GRAPH_DT_INT4 || t->dtype == GRAPH_DT_INT2;
  unsigned width = two ? 2 : 4, per = 8 / width, mask = (1u << width) - 1, half = 1u << (width - 1);
  for (int64_t i = t->n - 1; i >= 0; i--) {
    unsigned v = (d[i / per] >> (width * (unsigned)(i % per))) & mask;
    d[i] = (uint8_t)(sgn ? ((v ^ half) - half) & 0xffu : v); /* sign-extended */
  }
}

kiln_status onnx_tensor_from_proto(const onnx_ctx *ctx, const Onnx__TensorProto *tp, graph_tensor **out) {
  *out = NULL;
  const char *name = tensor_label(tp);
  int64_t onnx_type = tp->has_data_type ? tp->data_type : 0;
  graph_dtype dtype = graph_dtype_from_onnx((int)onnx_type);
  if (onnx_type == 0) return ERR_INVALID("tensor '%s' has no data type", name);
  if (dtype == GRAPH_DT_INVALID)
    return ERR_UNIMPLEMENTED("tensor '%s': element type %s (%" PRId64 ") is not supported", name,
                             onnx_dtype_name(onnx_type), onnx_type);
  if (tp->segment) return ERR_UNIMPLEMENTED("tensor '%s': segmented tensors are not supported", name);
  if (tp->n_dims > GRAPH_MAX_RANK)
    return ERR_UNIMPLEMENTED("tensor '%s' has rank %zu; kiln supports up to %d", name, tp->n_dims, GRAPH_MAX_RANK);
  int64_t n = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    int64_t d = tp->dims[i];
    if (d < 0) return ERR_INVALID("tensor '%s': dimension %zu is negative (%" PRId64 ")", name, i, d);
    if (d && n > INT64_MAX / d) return ERR_INVALID("tensor '%s': element count overflows", name);
    n *= d;
  }
  size_t esize = graph_dtype_size(dtype);
  bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (tp->has_data_location && !external && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
    return ERR_INVALID("tensor '%s': unknown data_location %d", name, (int)tp->data_location);
  int per = 1;
  typed_field field = field_for(dtype, &per);
  bool packed = packed_per_byte(dtype) != 0;

  /* Size checks before any allocation. `bytes` is what the file holds; a packed tensor
   * unpacks into n bytes. */
  uint64_t bytes = 0;
  if (dtype != GRAPH_DT_STRING) {
    if ((uint64_t)n > (uint64_t)INT64_MAX / esize) return ERR_INVALID("tensor '%s': byte size overflows", name);
    bytes = packed ? packed_bytes(dtype, n) : (uint64_t)n * esize;
  }
  uint64_t typed_values = packed ? packed_bytes(dtype, n) : (uint64_t)n * (uint64_t)per;
  if (external) {
    if (dtype == GRAPH_DT_STRING)
      return ERR_UNIMPLEMENTED("tensor '%s': string tensors cannot be stored as external data", name);
  } else if (tp->has_raw_data) {
    if (dtype == GRAPH_DT_STRING) return ERR_INVALID("tensor '%s': string tensors cannot use raw_data", name);
    if (tp->raw_data.len != bytes)
      return ERR_INVALID("tensor '%s': raw_data has %zu bytes, but %" PRId64 " %s elements need %" PRIu64, name,
                         tp->raw_data.len, n, onnx_dtype_name(onnx_type), bytes);
  } else {
    size_t have = field_count(tp, field);
    if (have == 0 && n > 0)
      return ERR_INVALID("tensor '%s' has no data: %" PRId64 " %s elements need raw_data or %s", name, n,
                         onnx_dtype_name(onnx_type), field_name(field));
    if ((uint64_t)have != typed_values)
      return ERR_INVALID("tensor '%s': %s has %zu values, but %" PRId64 " %s elements need %" PRIu64, name,
                         field_name(field), have, n, onnx_dtype_name(onnx_type), typed_values);
  }

  graph_tensor *t = NULL;
  kiln_status s = tensor_create(dtype, (int)tp->n_dims, tp->dims, &t);
  if (s) return status_wrap(s, "tensor '%s'", name);
  if (external) {
    s = read_external(ctx, tp, (size_t)bytes, t->data);
  } else if (tp->has_raw_data) {
    if (bytes) memcpy(t->data, tp->raw_data.data, (size_t)bytes);
    onnx_lean_release(ctx, tp->raw_data.data, (size_t)bytes); /* one copy of a mapped model's weights */
    /* The bytes as they lie in the file: the tensor may drop them once compiled. */
    if (bytes >= (uint64_t)onnx_import_lean_min_payload && !packed && dtype != GRAPH_DT_BOOL &&
        onnx_lean_is_mapped(ctx, tp->raw_data.data))
      tensor_attach_source(t, ctx->source, (size_t)((const uint8_t *)tp->raw_data.data - ctx->map));
  } else if (n > 0) {
    fill_from_typed(t, tp, field);
  }
  if (!s && dtype == GRAPH_DT_BOOL && (external || tp->has_raw_data))
    for (int64_t i = 0; i < n; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
  if (!s && packed) unpack_subbyte(t);
  if (s) {
    tensor_free(t);
    return s;
  }
  *out = t;
  return NULL;
}

/* ---- TypeProto ---- */

void onnx_type_text(const Onnx__TypeProto *tp, strbuf *b) {
  if (!tp) {
    strbuf_append(b, "?");
    return;
  }
  switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: {
      int code = tp->tensor_type && tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
      strbuf_printf(b, "tensor(%s)", graph_dtype_name(graph_dtype_from_onnx(code)));
      return;
    }
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      strbuf_append(b, "sequence(");
      onnx_type_text(tp->sequence_type ? tp->sequence_type->elem_type : NULL, b);
      strbuf_putc(b, ')');
      return;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      strbuf_append(b, "optional(");
      onnx_type_text(tp->optional_type ? tp->optional_type->elem_type : NULL, b);
      strbuf_putc(b, ')');
      return;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: {
      const Onnx__TypeProto__Map *m = tp->map_type;
      int key = m && m->has_key_type ? m->key_type : 0;
      strbuf_printf(b, "map(%s,", graph_dtype_name(graph_dtype_from_onnx(key)));
      onnx_type_text(m ? m->value_type : NULL, b);
      strbuf_putc(b, ')');
      return;
    }
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: strbuf_append(b, "sparse_tensor"); return;
    default: strbuf_append(b, "?"); return;
  }
}

void onnx_type_info_from_proto(const Onnx__TypeProto *tp, onnx_type_info *out) {
  memset(out, 0, sizeof *out);
  out->dtype = GRAPH_DT_INVALID;
  out->shape = graph_shape_unknown();
  if (!tp) return;
  switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: out->non_tensor = "sequence"; return;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: out->non_tensor = "map"; return;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: out->non_tensor = "optional"; return;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: out->non_tensor = "sparse_tensor"; return;
    default: return;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (!tt) return;
  out->onnx_elem_type = tt->has_elem_type ? tt->elem_type : 0;
  out->dtype = graph_dtype_from_onnx((int)out->onnx_elem_type);
  if (!tt->shape) return;
  if (tt->shape->n_dim > GRAPH_MAX_RANK) {
    out->rank_too_large = true;
    return;
  }
  out->shape.rank = (int)tt->shape->n_dim;
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    out->shape.dims[i] = GRAPH_UNKNOWN;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
      out->shape.dims[i] = d->dim_value;
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
               *d->dim_param) {
      out->dim_params[i] = d->dim_param;
      out->any_dim_param = true;
    }
  }
}
