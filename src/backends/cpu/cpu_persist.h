/* The cpu backend's persistent compilation cache (--cache_dir): the object files LLVM
 * made for an executable, kept on disk so that another process compiling the same
 * module on the same host links them instead of running LLVM again.
 *
 * The key is the in-memory cache's fingerprint (module text with large constants
 * elided, constant digests, options) plus everything else that changes the machine
 * code: kiln's version and the build id of the binary or library it runs in, LLVM's
 * version, and the host triple, CPU name and CPU features. One entry per key, in a file
 * named by the key's 128-bit digest: a header (magic, format version, the full key,
 * the object count and lengths), the objects, then a 128-bit digest of everything
 * before it. The full key is compared on load, so a digest collision never loads
 * foreign code; a truncated, corrupted, foreign or mismatched file is reported (log
 * info) and treated as a miss, and the recompiled entry replaces it. Entries are
 * written to a temporary file and renamed into place, so a concurrent reader sees a
 * whole entry or none. A directory that cannot be created or written is a warning: the
 * compile proceeds without persisting. The in-memory cache is asked first: a module
 * this process already compiled (with or without cache_dir) is neither looked up on
 * disk nor stored. Entries are never evicted. */
#ifndef KILN_BACKENDS_CPU_CPU_PERSIST_H
#define KILN_BACKENDS_CPU_CPU_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* An object file's bytes (malloc'd): what cpu_jit makes and links, what an entry
 * stores. Declared here rather than in cpu_jit.h so that this header (tests, the fuzz
 * target) needs no LLVM headers. */
typedef struct cpu_jit_object {
  void *data;
  size_t size;
} cpu_jit_object;
void cpu_jit_objects_free(cpu_jit_object *objs, int n);

/* The persistent key for an in-memory fingerprint (malloc'd; NULL when out of memory
 * or when the JIT cannot be set up) and its 128-bit digest. */
char *cpu_persist_key(const char *fingerprint, uint64_t digest[2]);

/* Symbols of an executable compiled through the persistent cache are named after the
 * key (the same in every process), so two live executables with the same key would
 * define the same names: the first claims the name, a twin compiled meanwhile (two
 * threads compiling one module) is compiled under its process-unique names instead and
 * not persisted. Returns whether the claim succeeded. */
bool cpu_persist_claim(uint64_t symbol_hash);
void cpu_persist_release(uint64_t symbol_hash);

/* Loads the entry for key from dir: on success (a hit) *objs holds *n objects (free
 * with cpu_jit_objects_free). A missing entry returns false silently; an unusable one
 * returns false after a log message saying why. */
bool cpu_persist_load(const char *dir, const char *key, const uint64_t digest[2], cpu_jit_object **objs, int *n);
/* Writes the entry (atomically); failures are warnings, never errors. */
void cpu_persist_store(const char *dir, const char *key, const uint64_t digest[2], const cpu_jit_object *objs, int n);

/* Parses an entry held in memory (what cpu_persist_load does after reading the file;
 * exposed for the fuzz target and tests). NULL and *objs set on success; otherwise a
 * status saying what is wrong with the bytes. key may be NULL: then any key is
 * accepted. */
kiln_status cpu_persist_parse(const unsigned char *data, size_t size, const char *key, cpu_jit_object **objs,
                              int *n);

/* The checksum that ends an entry: the digest of the n bytes before it. */
void cpu_persist_checksum(const void *p, size_t n, uint64_t out[2]);

/* The entry's file name inside dir (malloc'd). */
char *cpu_persist_entry_path(const char *dir, const uint64_t digest[2]);

#endif
