/* Weights that can be read back from their file, so a model holds each weight once.
 *
 * A compiled cluster keeps its large weights in its own form (oneDNN's packed layouts);
 * the graph's copy of such a weight is then only needed again if the cluster is
 * compiled anew (another input shape) or runs op by op. ONNX Runtime frees an
 * initializer once its kernels have packed it; kiln does the same for weights whose
 * bytes sit unchanged in a mapped model file: the importer attaches the file (a
 * tensor_source) to such a tensor, a compile that has packed it drops the tensor's
 * buffer (tensor_drop_data), and whoever reads a Const's value takes it through
 * tensor_ref_loaded, which reads the bytes back from the file first if they were
 * dropped. The file is kept open and its identity (size, modification time) checked
 * before a read back: a model file changed or truncated since it was loaded is an
 * error naming it, never stale or torn weights.
 *
 * A dropped tensor has data == NULL. Only tensors with a source are ever dropped, and
 * only while no one but graphs (and the caller that says so) hold them, so the
 * only readers that can meet one are the ones that go through tensor_ref_loaded: the
 * Const value paths of the executor and the lowerings. Drop and load take one
 * process-wide lock. */
#ifndef KILN_GRAPH_TENSOR_SOURCE_H
#define KILN_GRAPH_TENSOR_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "graph/tensor.h"

/* A read-only mapping of a model file, reference counted; the last release unmaps it
 * and closes the file. */
typedef struct tensor_source tensor_source;

/* Takes over fd (open on path) and the mapping map[0..len) of that file, returning a
 * source holding one reference; NULL when fd cannot be examined or memory runs out, in
 * which case the caller still owns both. */
tensor_source *tensor_source_new(const char *path, int fd, const void *map, size_t len);
void tensor_source_release(tensor_source *s);

/* Records that t's bytes are map[offset, offset + tensor_byte_size(t)) of s (takes a
 * reference to s). Not for string or borrowed tensors, nor for ranges outside the map. */
void tensor_attach_source(graph_tensor *t, tensor_source *s, size_t offset);

/* Frees t's buffer if it can be read back (it has a source) and nothing but graphs
 * (graph_refs) and `other_refs` references the caller accounts for hold t. Returns
 * whether it did. */
bool tensor_drop_data(graph_tensor *t, int other_refs);

/* A new reference to t with its data present: read back from the file first if it was
 * dropped. IO_ERROR when the file changed since it was loaded or cannot be read. */
kiln_status tensor_ref_loaded(graph_tensor *t, graph_tensor **out);

/* Bytes of tensor data dropped and read back since the process started (for tests). */
void tensor_source_stats(size_t *dropped_bytes, size_t *loaded_bytes);

#endif
