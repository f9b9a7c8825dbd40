/* The cpu backend's executable cache: compiling the same module with the same options
 * twice returns the same compiled code.
 *
 * The key is a fingerprint: the module's printed text with large constants elided,
 * plus a 128-bit digest of every constant's bytes (printing megabytes of weights as
 * decimal text would cost more than compiling), plus the compile options that change
 * what is built (disabled passes, profiling). Entries are reference-counted; idle ones
 * are evicted beyond a cap, least recently used first, and everything is freed at exit. */
#ifndef KILN_BACKENDS_CPU_CPU_CACHE_H
#define KILN_BACKENDS_CPU_CPU_CACHE_H

#include "backends/backend.h"
#include "backends/cpu/cpu_executable.h"

/* The 128-bit digest of the fingerprint and the constants, continuing from *h1, *h2
 * (also the persistent cache's file names and checksums, cpu_persist.c). */
void cpu_cache_digest(const void *p, size_t n, uint64_t *h1, uint64_t *h2);

/* The cached executable for m and opts, compiled now if there is none; the caller holds
 * one reference. Repeats the executable's evaluator warning on every call. */
kiln_status cpu_cache_get(const hlo_module *m, const backend_compile_options *opts, cpu_executable **out);
/* Drops a reference (printing the --profile summary when the last one goes). */
void cpu_cache_release(cpu_executable *x);

#endif
