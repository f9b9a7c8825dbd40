/* The cpu compiler: from an HLO module to a cpu executable (cpu_executable.h).
 *
 * It deep-copies the module, runs the cpu pass pipeline on the copy (simplification,
 * dot canonicalisation, fusion), splits back fusions the code generator cannot compile,
 * and builds the entry's program: buffer assignment, then one thunk per instruction that
 * computes something -- a oneDNN primitive where oneDNN takes it, a native kernel
 * (cpu_native.h), a generated LLVM kernel, a copy, a loop or branch running programs of
 * its own, or as the last resort an evaluator thunk. Kernels go into up to one LLVM
 * module per thread (balanced by code size), compiled in parallel and linked at the end. */
#ifndef KILN_BACKENDS_CPU_CPU_COMPILER_H
#define KILN_BACKENDS_CPU_CPU_COMPILER_H

#include "backends/backend.h"
#include "backends/cpu/cpu_executable.h"

/* Compiles m (borrowed) with opts (not NULL). The executable's fingerprint and cache
 * fields are left for the cache to fill. UNIMPLEMENTED names the instruction no path
 * can run. fingerprint: the in-memory cache's key for m and opts; with
 * opts->cache_dir set it keys the persistent cache (cpu_persist.h), whose objects are
 * linked instead of running LLVM on a hit (NULL: no persistent cache). */
kiln_status cpu_compile_executable(const hlo_module *m, const backend_compile_options *opts, const char *fingerprint,
                                   cpu_executable **out);

#endif
