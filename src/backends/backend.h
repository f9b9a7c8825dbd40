/* The internal backend vtable and the device registry.
 *
 * A backend compiles an HLO module into an executable and runs it on literals. Every
 * device kiln can place work on — the built-in `interpreter` (the evaluator), later the
 * `cpu` backend and plugins — is one of these, registered with a priority; the placer
 * picks the highest-priority device whose supports() accepts an instruction. Buffers
 * are host literals for now; device-resident buffers arrive with the first backend that
 * needs them. */
#ifndef KILN_BACKENDS_BACKEND_H
#define KILN_BACKENDS_BACKEND_H

#include <stdbool.h>

#include "base/status.h"
#include "hlo/ir.h"

typedef struct backend backend;
typedef struct backend_executable backend_executable;

struct backend {
  const char *name;
  int priority; /* higher wins; the host evaluator is lowest */
  const char *description;
  /* Whether this backend can execute the instruction (opcode, types, attributes). */
  bool (*supports)(const backend *b, const hlo_instr *ins);
  /* Compiles `m` (borrowed; the executable must not keep pointers into it unless it
   * documents so). UNIMPLEMENTED means "cannot compile this module here" and lets the
   * caller fall back; any other error is a real failure. */
  kiln_status (*compile)(const backend *b, const hlo_module *m, backend_executable **out);
  /* Runs the executable; args borrowed, *out owned by the caller. */
  kiln_status (*execute)(backend_executable *e, hlo_literal *const *args, int n_args, hlo_literal **out);
  void (*destroy)(backend_executable *e);
};

/* Built-in backends, in registry order. */
int backend_count(void);
const backend *backend_at(int i);
/* NULL when no backend has that name. */
const backend *backend_find(const char *name);
/* The default device for `kiln run` (the built-in cpu backend). */
const backend *backend_default(void);

/* The full registry, including devices that cannot be used (a plugin with an
 * incompatible ABI, a missing library, a failed init): `kiln devices` lists these with
 * the reason. backend_count/backend_at/backend_find above see only usable devices,
 * highest priority first. Plugins are discovered on first use of the registry from
 * KILN_PLUGIN_PATH (colon-separated directories of *.kiln-plugin.json) and the --plugin
 * flag (manifest paths). */
typedef struct backend_entry {
  const char *name;
  int priority;
  const char *description;
  const backend *backend; /* NULL when unavailable */
  const char *reason;     /* why unavailable; NULL when usable */
  const char *source;     /* "built-in" or the plugin's manifest path */
} backend_entry;

int backend_entry_count(void);
const backend_entry *backend_entry_at(int i);
const backend_entry *backend_entry_find(const char *name);
/* Unloads every plugin; the next registry call discovers them again (tests use it
 * after changing KILN_PLUGIN_PATH; kiln calls it at exit). */
void backend_registry_reset(void);

/* Defined by each built-in backend. */
extern const backend interpreter_backend;
extern const backend cpu_backend;

#endif
