/* TensorFlow checkpoint (TensorBundle) reader: what a SavedModel keeps in
 * variables/variables.index and variables/variables.data-NNNNN-of-MMMMM.
 *
 * The index is a LevelDB-style sorted string table: data blocks of prefix-compressed
 * keys with restart points, a metaindex block, an index block naming the data blocks,
 * and a 48-byte footer ending in the table magic number; every block is followed by a
 * compression byte and the masked CRC32C of the block and that byte. Its values are
 * BundleEntryProto messages (dtype, shape, shard, offset, size, masked CRC32C of the
 * bytes, slices) keyed by tensor name; the empty key holds BundleHeaderProto (shard
 * count, endianness). Tensor bytes are raw little-endian elements in the data shards
 * (strings: varint64 lengths, a masked CRC32C of those lengths, then the bytes). A
 * tensor saved in pieces lists TensorSliceProtos; each piece is its own entry under
 * the key TensorFlow's ordered-code encoding makes of the name and the slice, and may
 * live in any shard.
 *
 * The index is read whole (it is small); shards are mapped with mmap when first needed
 * and every tensor's bytes are checked against their CRC before they are copied, once,
 * into the tensor the caller gets. Errors name the file and the tensor key: a missing
 * or truncated shard, a bad CRC, a bad magic number, an unsupported dtype or
 * compression. A hostile index gets an error, never a crash. */
#ifndef KILN_IMPORT_TF_TF_BUNDLE_H
#define KILN_IMPORT_TF_TF_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/tensor.h"

typedef struct tf_bundle tf_bundle;

/* Opens the bundle whose files are PREFIX.index and PREFIX.data-*-of-* (for a
 * SavedModel: DIR/variables/variables). Only the index is read now. */
kiln_status tf_bundle_open(const char *prefix, tf_bundle **out);
/* Parses an index held in memory (the caller's bytes are copied). Shards are looked
 * for beside `prefix` (NULL: none can be read, as in the fuzz target). */
kiln_status tf_bundle_open_index(const void *data, size_t len, const char *prefix, tf_bundle **out);
void tf_bundle_free(tf_bundle *b);

/* The tensor names the index lists, sorted (slice entries and the header excluded). */
int tf_bundle_count(const tf_bundle *b);
const char *tf_bundle_key(const tf_bundle *b, int i);
bool tf_bundle_has(const tf_bundle *b, const char *key);
int tf_bundle_num_shards(const tf_bundle *b);
/* The tensor saved under key: read from its shard (or assembled from its slices),
 * CRC-checked, in a fresh tensor the caller owns. */
kiln_status tf_bundle_read(tf_bundle *b, const char *key, graph_tensor **out);

/* CRC32C (Castagnoli) and the masking LevelDB and TensorFlow store. */
uint32_t tf_crc32c_extend(uint32_t crc, const void *data, size_t n);
uint32_t tf_crc32c_mask(uint32_t crc);

#endif
