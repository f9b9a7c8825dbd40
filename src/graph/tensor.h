/* Host tensors: the values a framework graph holds in constants and the host executor
 * passes between op-by-op kernels.
 *
 * A tensor is a dtype, fully known dims and one owned row-major buffer. Numeric and
 * bool elements are stored exactly as an hlo_literal of the matching HLO type stores
 * them (bool one byte 0/1, half/bfloat16 raw 16-bit patterns), so conversion to and
 * from literals is a memcpy -- or no copy at all with the adopt/release forms, which
 * move the malloc'ed buffer between the two. Types HLO lacks live in the same buffer:
 * complex as (re, im) pairs, string elements as graph_bytes records each owning its
 * bytes, resource/variant as opaque 64-bit handles.
 *
 * Tensors are reference counted because graphs share constants: cloning a graph, or
 * cutting a cluster out of one, takes a reference instead of copying weights. A tensor
 * shared by more than one holder must not be written. The count is atomic so that
 * executor threads may drop references concurrently. */
#ifndef KILN_GRAPH_TENSOR_H
#define KILN_GRAPH_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "graph/dtype.h"
#include "hlo/literal.h"

typedef struct graph_tensor {
  graph_dtype dtype;
  int rank;
  int64_t dims[GRAPH_MAX_RANK];
  int64_t n;        /* element count */
  void *data;       /* n * graph_dtype_size(dtype) bytes (never NULL, even when n == 0,
                     * except while dropped: see `source`) */
  atomic_int refs;  /* owners; tensor_free releases one */
  /* Of those, the ones graphs hold for node attributes (graph_adopt_tensor). Such a
   * holder reads a Const's data only through tensor_ref_loaded (tensor_source.h). */
  atomic_int graph_refs;
  bool borrowed;    /* data belongs to someone else (tensor_wrap): never freed or moved */
  /* Where the bytes can be read back from (a model file; NULL: nowhere). Such a tensor
   * may have data NULL: dropped while only its graph held it (tensor_source.h). */
  struct tensor_source *source;
  size_t source_offset;
} graph_tensor;

/* Zero-filled tensor (strings empty). Sizes over literal_max_bytes are
 * RESOURCE_EXHAUSTED errors; dtype INVALID, a rank over GRAPH_MAX_RANK or a negative
 * dim are INVALID_ARGUMENT. */
kiln_status tensor_create(graph_dtype dtype, int rank, const int64_t *dims, graph_tensor **out);
kiln_status tensor_create_scalar(graph_dtype dtype, graph_tensor **out);
/* A tensor over the caller's buffer (numeric and bool dtypes only), for feeding
 * embedder memory without a copy: the data is neither freed nor moved into a literal,
 * and must stay valid and unchanged while any reference lives. Holders that keep a
 * value beyond the call that received it copy a borrowed tensor (tensor_unborrow). */
kiln_status tensor_wrap(graph_dtype dtype, int rank, const int64_t *dims, void *data, graph_tensor **out);
/* t itself when it owns its data, else an owned copy; the caller's reference moves to
 * the result either way. */
kiln_status tensor_unborrow(graph_tensor *t, graph_tensor **out);
/* Adds a reference and returns t. */
graph_tensor *tensor_ref(graph_tensor *t);
/* Drops one reference; the last one frees the tensor. NULL is ignored. */
void tensor_free(graph_tensor *t);
/* Deep copy (a fresh, unshared tensor). */
kiln_status tensor_clone(const graph_tensor *t, graph_tensor **out);

size_t tensor_byte_size(const graph_tensor *t);
graph_shape tensor_shape(const graph_tensor *t);
/* Same dtype, dims and element bits (strings by bytes). */
bool tensor_equal(const graph_tensor *a, const graph_tensor *b);

/* Strings (dtype STRING): element i, and replacing it with a copy of len bytes. */
const graph_bytes *tensor_string(const graph_tensor *t, int64_t i);
void tensor_set_string(graph_tensor *t, int64_t i, const char *data, size_t len);

/* Element access by linear index for numeric and bool tensors, converting like
 * literal_get_* / literal_set_* (floats round to nearest even, ints wrap). For complex
 * tensors these read or write the real part. */
double tensor_get_f64(const graph_tensor *t, int64_t i);
int64_t tensor_get_s64(const graph_tensor *t, int64_t i);
void tensor_set_f64(graph_tensor *t, int64_t i, double v);
void tensor_set_s64(graph_tensor *t, int64_t i, int64_t v);

/* ---- hlo_literal interop (only for dtypes with an HLO type) ---- */
/* A literal that aliases t's buffer: no allocation, nothing to free, valid while t is.
 * Returns false for dtypes HLO lacks. */
bool tensor_literal_view(const graph_tensor *t, hlo_literal *view);
/* Copies. Tuple/token literals and non-HLO dtypes are INVALID_ARGUMENT errors. */
kiln_status tensor_from_literal(const hlo_literal *l, graph_tensor **out);
kiln_status tensor_to_literal(const graph_tensor *t, hlo_literal **out);
/* Moves: the literal's buffer becomes the tensor's and the literal shell is freed (on
 * error the literal is left untouched and still the caller's). */
kiln_status tensor_adopt_literal(hlo_literal *l, graph_tensor **out);
/* Moves the buffer of a tensor the caller holds the only reference to into a new
 * literal and frees the tensor; shared tensors are copied instead (the caller's
 * reference is dropped either way, on success). */
kiln_status tensor_release_to_literal(graph_tensor *t, hlo_literal **out);

/* Text form used by the graph text format: tensor<float[2,2]>{1, 2, 3, 4}, values flat
 * in row-major order; strings quoted with C escapes; bools true/false; complex
 * (re, im); floats in the shortest form that reads back to the same bits. When
 * max_elements > 0 and the tensor has more elements, or for resource/variant tensors
 * (handles mean nothing outside their process), the values print as {...}. */
void tensor_print(strbuf *b, const graph_tensor *t, int64_t max_elements);
/* The quoted-string syntax of the text format: "..." with \\ \" \n \t \r \xHH. */
void tensor_print_quoted(strbuf *b, const char *data, size_t len);
/* Shortest decimal that reads back (via tensor_set_f64 for dtype) to the same value. */
void tensor_print_float(strbuf *b, double v, graph_dtype dtype);

#endif
