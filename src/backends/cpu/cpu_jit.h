/* The cpu backend's JIT: turns one LLVM module of kernels into callable machine code
 * for the host CPU through LLVM's ORC LLJIT (C API).
 *
 * One LLJIT serves the process (creating one per executable costs more than compiling
 * a small module); every compiled executable owns a cpu_jit, which is its module's
 * resource tracker in that LLJIT: destroying it frees exactly that code. A module is
 * optimised once (on a thread of its own when several compile together) with the O3 pipeline for the host's CPU name and features (so the
 * loop vectorizer targets the real vector width). Generated code may call libm and the
 * few runtime helpers the elemental emitter needs (f16/bf16 rounding); those are
 * defined as absolute symbols, and anything else the optimiser introduces (memcpy,
 * memset) resolves against the process. Symbol names share one namespace, so callers
 * give every module's functions a unique prefix. */
#ifndef KILN_BACKENDS_CPU_CPU_JIT_H
#define KILN_BACKENDS_CPU_CPU_JIT_H

#include <stdbool.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "backends/cpu/cpu_persist.h" /* cpu_jit_object */
#include "base/status.h"

typedef struct cpu_jit cpu_jit;

/* A module being generated: its own (thread-safe) LLVM context and a module laid out
 * for the host. The caller fills `module`, then passes it to cpu_jit_create, which
 * takes ownership on success and on error; cpu_jit_module_discard drops an unfinished
 * one. */
typedef struct cpu_jit_module {
  void *tsc; /* LLVMOrcThreadSafeContextRef, kept opaque so callers need not include Orc.h */
  LLVMContextRef ctx;
  LLVMModuleRef module;
} cpu_jit_module;

kiln_status cpu_jit_new_module(const char *name, cpu_jit_module *out);
void cpu_jit_module_discard(cpu_jit_module *m);

/* Generated code that embeds an address of this process (a constant's data as an
 * immediate) must mark its module: such code is only valid here, so the persistent
 * cache (cpu_persist.h) neither stores nor loads objects for an executable with a
 * marked module. */
void cpu_jit_mark_process_specific(LLVMModuleRef m);
bool cpu_jit_is_process_specific(const cpu_jit_module *m);

/* Verifies, optimises and compiles the module. With KILN_CPU_DUMP_IR set in the
 * environment the optimised IR is printed to stderr (for looking at vectorization). */
kiln_status cpu_jit_create(cpu_jit_module *m, cpu_jit **out);
/* The same for n modules compiled in parallel, one thread each, into one cpu_jit (one
 * resource tracker); takes ownership of every module, on success and on error. Their
 * function names must differ. */
kiln_status cpu_jit_create_many(cpu_jit_module *mods, int n, cpu_jit **out);
/* cpu_jit_create_many that also hands back a copy of every object file it linked
 * (*objs, *n_objs; for the persistent cache), when objs is non-NULL. */
kiln_status cpu_jit_create_many_keep(cpu_jit_module *mods, int n, cpu_jit **out, cpu_jit_object **objs,
                                     int *n_objs);
/* A cpu_jit of object files made earlier (by cpu_jit_create_many_keep, maybe in another
 * process on this host): linked, nothing compiled. The objects stay the caller's. */
kiln_status cpu_jit_create_from_objects(const cpu_jit_object *objs, int n, cpu_jit **out);
/* What the generated code depends on besides the IR (malloc'd): the host triple, CPU
 * name and CPU features the target machines are made for. */
kiln_status cpu_jit_host_description(char **out);
/* Address of a function defined in the module. */
kiln_status cpu_jit_lookup(cpu_jit *j, const char *name, void **out);
void cpu_jit_destroy(cpu_jit *j);
/* Frees the process-wide JIT; every cpu_jit must have been destroyed (kiln's exit path
 * calls it after the executable cache is emptied). */
void cpu_jit_shutdown(void);

#endif
