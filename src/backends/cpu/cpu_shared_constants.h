/* Constant buffers shared by content: one copy of each packed weight per process.
 *
 * A oneDNN primitive keeps its constant weights in the layout it reads them in (packed
 * once at create time). When one weight feeds several products -- an exporter that
 * deduplicated the identical layers of a transformer feeds each initializer to four
 * matmuls; a cluster compiled for a second input shape packs the same weights again --
 * each primitive held its own copy: 113 MB of packed copies of a 28 MB model. The
 * store below is content-addressed: a primitive hands in its freshly packed bytes and
 * gets back the buffer already holding equal bytes (its own is freed) or its own, now
 * registered. Equal bytes are found by hash and confirmed byte by byte, so sharing never
 * depends on a hash alone; the buffers are read only, so which primitive's layout
 * produced them does not matter. Thread-safe; a buffer lives until its last holder
 * releases it. */
#ifndef KILN_BACKENDS_CPU_CPU_SHARED_CONSTANTS_H
#define KILN_BACKENDS_CPU_CPU_SHARED_CONSTANTS_H

#include <stddef.h>

/* Takes ownership of buf (from aligned_alloc/malloc; `bytes` of constant data) and
 * returns the buffer to read from instead: an earlier equal one (buf is freed) or buf.
 * Each call takes one reference, released with cpu_shared_constant_release. */
void *cpu_shared_constant_adopt(void *buf, size_t bytes);

/* Drops one reference to a buffer cpu_shared_constant_adopt returned; the last frees it. */
void cpu_shared_constant_release(void *buf);

/* Buffers held and their total bytes (for tests). */
void cpu_shared_constant_stats(int *buffers, size_t *bytes);

#endif
