/* Introspection of the cpu backend for tests and tools: the vtable itself is declared
 * with the other built-ins in backends/backend.h. */
#ifndef KILN_BACKENDS_CPU_CPU_BACKEND_H
#define KILN_BACKENDS_CPU_CPU_BACKEND_H

/* How many compiled executables the fingerprint cache holds (live and idle). */
int cpu_backend_cache_size(void);

#endif
