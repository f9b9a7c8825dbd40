/* The internal backend vtable and the device registry.
 *
 * A backend compiles an HLO module into an executable and runs it on literals. Every
 * device kiln can place work on — the built-in `cpu` and `interpreter` (the evaluator)
 * and the devices of plugins — is one of these, registered with a priority; the placer
 * picks the highest-priority device whose supports() accepts an instruction. What a
 * compile may be told besides the module travels in backend_compile_options, never in
 * process-wide flags, so two callers can compile with different options at once.
 *
 * Buffers: a backend_buffer is one array in a device's memory. Devices with memory of
 * their own (plugins) implement the four device-memory entries; host devices (cpu, the
 * interpreter) leave them NULL, and backend_buffer_* / backend_execute_buffers then keep
 * the array as a host literal and run the literal execute on it. Callers that keep data
 * on a device across runs (the cluster runner's resident variables) use the buffer
 * functions for every device alike; backend_transfers counts the bytes that really
 * crossed between host and device (nothing, for host devices). */
#ifndef KILN_BACKENDS_BACKEND_H
#define KILN_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "hlo/ir.h"

typedef struct backend backend;
typedef struct backend_executable backend_executable;

/* Bytes moved between host and device memory, each way (a running total the caller owns). */
typedef struct backend_transfers {
  int64_t to_device;
  int64_t to_host;
} backend_transfers;

/* One array on a device. Made by backend_buffer_upload (or an execute), released by
 * backend_buffer_free; the fields are the generic layer's (backend.c), not the device's. */
typedef struct backend_buffer {
  const backend *device;
  hlo_shape shape;   /* an array shape */
  hlo_literal *host; /* host devices: the value */
  void *handle;      /* devices with memory: the device's own handle */
  bool consumed;     /* donated to an execute that took its memory: only free remains */
} backend_buffer;

/* What a compile may be told besides the module (the CLI maps its flags here; the
 * public API maps kiln_options here). All pointers borrowed for the call. */
typedef struct backend_compile_options {
  const char *dump_to;          /* NULL/"": no pass dumps */
  const char *dump_pass_re;     /* NULL/"": ".*" */
  bool dump_large_constants;
  const char *disabled_passes;  /* comma-separated pass names; NULL/"": none */
  bool allow_plugin_fallback;   /* a plugin compile failing with anything but UNIMPLEMENTED is reported as
                                   UNIMPLEMENTED (with a warning) so the caller places the work elsewhere */
  bool profile;                 /* cpu: time every thunk and print the summary when the executable is released */
  const char *cache_dir;        /* cpu: persistent compilation cache directory (cpu_persist.h); NULL/"": off */
  bool allow_excess_precision;  /* cpu: bf16 arithmetic inside a kernel may skip rounding its intermediates
                                   (XLA's xla_allow_excess_precision); false (a backend's default): every op
                                   rounds, as the evaluator. kiln's front doors set it for HLO modules. */
  int n_plugin_options;
  const char *const *plugin_options; /* "KEY=VALUE" strings passed to plugin compiles */
} backend_compile_options;
/* No dumps, no disabled passes, no profiling, no plugin options. */
backend_compile_options backend_compile_options_default(void);

struct backend {
  const char *name;
  int priority; /* higher wins; the host evaluator is lowest */
  const char *description;
  /* Whether this backend can execute the instruction (opcode, types, attributes). */
  bool (*supports)(const backend *b, const hlo_instr *ins);
  /* Compiles `m` (borrowed; the executable must not keep pointers into it unless it
   * documents so) with opts (borrowed for the call; NULL: the defaults). UNIMPLEMENTED
   * means "cannot compile this module here" and lets the caller fall back; any other
   * error is a real failure. */
  kiln_status (*compile)(const backend *b, const hlo_module *m, const backend_compile_options *opts,
                         backend_executable **out);
  /* Runs the executable; args borrowed, *out owned by the caller. */
  kiln_status (*execute)(backend_executable *e, hlo_literal *const *args, int n_args, hlo_literal **out);
  void (*destroy)(backend_executable *e);
  /* Optional (NULL: none): how many instructions the executable runs through the
   * reference evaluator instead of compiling them (cpu's evaluator thunks). */
  int (*evaluated_instructions)(const backend_executable *e);

  /* ---- device memory: all four or none (host devices) ---- */
  /* Copies lit (an array) into a new device allocation; *handle is the device's. */
  kiln_status (*buffer_upload)(const backend *b, const hlo_literal *lit, void **handle);
  /* Copies the buffer into dst, a literal of the buffer's shape the caller made. */
  kiln_status (*buffer_download)(const backend *b, void *handle, hlo_literal *dst);
  void (*buffer_free)(const backend *b, void *handle);
  /* Runs e on device buffers (args[i] one handle per entry parameter, borrowed; a
   * nonzero donated[i] lets the device reuse that argument's memory for a result, in
   * which case it sets consumed[i]). Writes n_results new handles: the root array, or
   * the elements of a root tuple (arrays only). donated/consumed may be NULL. */
  kiln_status (*execute_buffers)(backend_executable *e, void *const *args, int n_args, const bool *donated,
                                 bool *consumed, void **results, int n_results);
  /* Optional (NULL: 0): bytes the executable uploaded to the device at compile time and
   * keeps there (a plugin's large constants), for the transfer statistics. */
  int64_t (*resident_bytes)(const backend_executable *e);
};

/* Whether b has memory of its own (the device-memory entries), i.e. moving an array to
 * or from it costs a copy across a boundary. */
bool backend_has_device_memory(const backend *b);
/* b's resident_bytes for e, 0 when b has none or e is NULL. */
int64_t backend_resident_bytes(const backend *b, const backend_executable *e);

/* Puts an array literal on device b (copied; tx counts the bytes for devices with
 * memory; tx may be NULL). */
kiln_status backend_buffer_upload(const backend *b, const hlo_literal *lit, backend_transfers *tx,
                                  backend_buffer **out);
/* Host devices only: takes lit over without copying. */
kiln_status backend_buffer_adopt(const backend *b, hlo_literal *lit, backend_buffer **out);
/* A host literal of the buffer's value (a new literal; tx counts the bytes). */
kiln_status backend_buffer_download(const backend_buffer *buf, backend_transfers *tx, hlo_literal **out);
void backend_buffer_free(backend_buffer *buf);
/* Runs e (compiled by b for a module whose root has shape root_shape: an array or a
 * tuple of arrays) on buffers of b. results receive one new buffer per root element
 * (*n_results of them, in a new array the caller frees with free()). donated may be
 * NULL; a donated argument the device took is marked consumed. */
kiln_status backend_execute_buffers(const backend *b, backend_executable *e, const hlo_shape *root_shape,
                                    backend_buffer *const *args, int n_args, const bool *donated,
                                    backend_buffer ***results, int *n_results);

/* b's evaluated_instructions for e, 0 when b has none or e is NULL. */
int backend_evaluated_instructions(const backend *b, const backend_executable *e);

/* The usable devices, highest priority first. */
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
 * KILN_PLUGIN_PATH (colon-separated directories of *.kiln-plugin.json); callers add more
 * with backend_registry_add_plugins. Every registry function is thread-safe, and the
 * pointers they hand out (const backend *, const backend_entry *, const plugin *) stay
 * valid until backend_registry_reset, however many plugins are added meanwhile; indices
 * may shift when an added device sorts before others. Plugins load under the registry's
 * lock, which is recursive so that a log sink called meanwhile may use the registry. */
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
/* Adds plugins besides KILN_PLUGIN_PATH: every *.kiln-plugin.json in dirs[0..n_dirs) and the manifests
 * manifests[0..n_manifests), skipping any already registered (same manifest path). Discovers first if
 * needed. Thread-safe; a manifest that fails to load is listed as unavailable with its reason, as discovery does. */
void backend_registry_add_plugins(int n_dirs, const char *const *dirs, int n_manifests, const char *const *manifests);
/* Unloads every plugin; the next registry call discovers them again (tests use it
 * after changing KILN_PLUGIN_PATH; kiln calls it at exit). Every pointer the registry
 * handed out dies here, so no other thread may be using one. */
void backend_registry_reset(void);

/* Defined by each built-in backend. */
extern const backend interpreter_backend;
extern const backend cpu_backend;

#endif
