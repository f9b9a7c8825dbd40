/* Introspection and threading of the cpu backend for tests, tools and the public API:
 * the vtable itself is declared with the other built-ins in backends/backend.h. */
#ifndef KILN_BACKENDS_CPU_CPU_BACKEND_H
#define KILN_BACKENDS_CPU_CPU_BACKEND_H

#include <stdint.h>

/* How many compiled executables the fingerprint cache holds (live and idle). */
int cpu_backend_cache_size(void);
/* Frees the idle executables of that cache (tests: the next compile of a module then
 * misses it, e.g. to reach the persistent cache). */
void cpu_backend_cache_drop_idle(void);
/* The persistent compilation cache's (--cache_dir) counts since the process started:
 * compiles that linked stored objects, compiles that looked and found no usable entry,
 * entries written. NULL pointers are skipped. */
void cpu_backend_persistent_counts(int64_t *hits, int64_t *misses, int64_t *writes);

/* The worker-thread count of the parallel regions (generated kernels and oneDNN)
 * started from the calling thread: OpenMP's per-thread nthreads setting, so two
 * threads running models may use different counts. n <= 0 restores the process default
 * (what omp_get_max_threads returned on the first use of either function: all cores
 * unless OMP_NUM_THREADS says otherwise). */
void cpu_backend_set_threads(int n);
int cpu_backend_threads(void);

#endif
