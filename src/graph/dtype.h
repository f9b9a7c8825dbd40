/* Framework-level element types and shapes for the dataflow graph.
 *
 * HLO's element types cover what a compiled cluster computes on, but a framework graph
 * also carries strings, opaque resource handles (TF variables), variants (TensorList,
 * TensorArray) and complex numbers that never reach HLO. graph_dtype is the union of
 * what TensorFlow and ONNX graphs need; graph_dtype_to_hlo answers which of them a
 * cluster can take. graph_shape differs from hlo_shape in what it cannot know: a
 * dimension may be unknown (-1, printed '?') and so may the rank (-1). Both are plain
 * values, copied with '='. The mappings from TensorFlow's DataType and ONNX's
 * TensorProto.DataType numbers live here once so both importers agree. */
#ifndef KILN_GRAPH_DTYPE_H
#define KILN_GRAPH_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo/shape.h"
#include "hlo/types.h"

/* X(ENUM, text name, byte size of one element, HLO type or -1 when HLO lacks it).
 * Text names follow TensorFlow's (float, int32, bool...; ml_dtypes' float4_e2m1fn). String
 * elements are graph_bytes records; resource and variant elements are opaque 64-bit
 * handles the executor interprets. The float8/float4/int4/int2 types are HLO's narrow
 * storage types and share their one-byte-per-element layout (hlo/types.h): ONNX's
 * packed 4-bit and 2-bit tensors are unpacked on import. */
#define GRAPH_DTYPE_LIST(X)                  \
  X(INVALID, "?", 0, -1)                     \
  X(FLOAT, "float", 4, HLO_F32)              \
  X(DOUBLE, "double", 8, HLO_F64)            \
  X(HALF, "half", 2, HLO_F16)                \
  X(BFLOAT16, "bfloat16", 2, HLO_BF16)       \
  X(INT8, "int8", 1, HLO_S8)                 \
  X(INT16, "int16", 2, HLO_S16)              \
  X(INT32, "int32", 4, HLO_S32)              \
  X(INT64, "int64", 8, HLO_S64)              \
  X(UINT8, "uint8", 1, HLO_U8)               \
  X(UINT16, "uint16", 2, HLO_U16)            \
  X(UINT32, "uint32", 4, HLO_U32)            \
  X(UINT64, "uint64", 8, HLO_U64)            \
  X(BOOL, "bool", 1, HLO_PRED)               \
  X(COMPLEX64, "complex64", 8, -1)           \
  X(COMPLEX128, "complex128", 16, -1)        \
  X(STRING, "string", sizeof(graph_bytes), -1) \
  X(RESOURCE, "resource", 8, -1)             \
  X(VARIANT, "variant", 8, -1)               \
  X(FLOAT8E4M3FN, "float8_e4m3fn", 1, HLO_F8E4M3FN)       \
  X(FLOAT8E4M3FNUZ, "float8_e4m3fnuz", 1, HLO_F8E4M3FNUZ) \
  X(FLOAT8E5M2, "float8_e5m2", 1, HLO_F8E5M2)             \
  X(FLOAT8E5M2FNUZ, "float8_e5m2fnuz", 1, HLO_F8E5M2FNUZ) \
  X(FLOAT4E2M1, "float4_e2m1fn", 1, HLO_F4E2M1FN)         \
  X(INT4, "int4", 1, HLO_S4)                               \
  X(UINT4, "uint4", 1, HLO_U4)                             \
  X(INT2, "int2", 1, HLO_S2)                               \
  X(UINT2, "uint2", 1, HLO_U2)                             \
  X(FLOAT8E8M0, "float8_e8m0fnu", 1, HLO_F8E8M0FNU)

/* A byte string that may hold NULs; data is also NUL-terminated for convenience. */
typedef struct graph_bytes {
  char *data;
  size_t len;
} graph_bytes;

typedef enum graph_dtype {
#define X(e, n, s, h) GRAPH_DT_##e,
  GRAPH_DTYPE_LIST(X)
#undef X
  GRAPH_DT_COUNT
} graph_dtype;

/* "?" for GRAPH_DT_INVALID (unknown), "invalid" for out-of-range values. */
const char *graph_dtype_name(graph_dtype t);
/* Accepts the canonical names and HLO's spellings (f32, s32, pred, ...) as aliases. */
bool graph_dtype_from_name(const char *name, size_t len, graph_dtype *out);
/* Bytes per element in a host tensor's buffer (0 for INVALID). */
size_t graph_dtype_size(graph_dtype t);
/* False for types HLO cannot represent (string, resource, variant, complex, invalid). */
bool graph_dtype_to_hlo(graph_dtype t, hlo_type *out);
/* GRAPH_DT_INVALID for tuple and token. */
graph_dtype graph_dtype_from_hlo(hlo_type t);
bool graph_dtype_is_float(graph_dtype t);   /* half, bfloat16, float, double, float8*, float4 */
bool graph_dtype_is_int(graph_dtype t);     /* signed and unsigned integers (int4 too), not bool */
bool graph_dtype_is_complex(graph_dtype t);
/* Numbers as in tensorflow/core/framework/types.proto (DT_FLOAT = 1 ...); reference
 * types (DT_FLOAT_REF = 101 ...) map to their base type. INVALID for unknown numbers
 * and for the quantized types kiln does not support. */
graph_dtype graph_dtype_from_tf(int tf_datatype);
int graph_dtype_to_tf(graph_dtype t); /* 0 (DT_INVALID) when TF has no equivalent */
/* Numbers as in onnx.proto TensorProto.DataType (FLOAT = 1 ...). */
graph_dtype graph_dtype_from_onnx(int onnx_datatype);
int graph_dtype_to_onnx(graph_dtype t); /* 0 (UNDEFINED) when ONNX has no equivalent */

/* Shapes as frameworks know them before (or without) running the graph. */
#define GRAPH_MAX_RANK HLO_MAX_RANK
#define GRAPH_UNKNOWN (-1)

typedef struct graph_shape {
  int rank;                      /* GRAPH_UNKNOWN: unknown rank (dims unused) */
  int64_t dims[GRAPH_MAX_RANK];  /* GRAPH_UNKNOWN: unknown dimension */
} graph_shape;

graph_shape graph_shape_unknown(void);
graph_shape graph_shape_scalar(void);
/* rank must be 0..GRAPH_MAX_RANK (checked by the caller); dims may be GRAPH_UNKNOWN. */
graph_shape graph_shape_make(int rank, const int64_t *dims);
bool graph_shape_is_fully_known(const graph_shape *s);
bool graph_shape_equal(const graph_shape *a, const graph_shape *b);
/* Product of the dims; -1 when unknown or on overflow past INT64_MAX. */
int64_t graph_shape_elements(const graph_shape *s);
/* False when the shape is not fully known or the dtype has no HLO type. */
bool graph_shape_to_hlo(const graph_shape *s, graph_dtype t, hlo_shape *out);

#endif
