/* kiln backend-plugin ABI 1.0, frozen: the tables of the first plugin ABI, kept so that
 * the host can load plugins built against it (it adapts them to ABI 2, see
 * docs/PLUGINS.md "Migrating from ABI 1") and so that such a plugin can still be rebuilt
 * unchanged but for its include and type names. New plugins use kiln/plugin.h (ABI 2).
 *
 * ABI 1 in short: one global instance per process (no client handle), positional entry
 * points, host literals re-uploaded on every execute. A plugin exports
 * kiln_plugin_init(const kiln_plugin_v1_host *, const kiln_plugin_v1_api **) and its
 * manifest says "abi": {"major": 1, "minor": 0}. Element types, error codes, the module
 * format and kiln_plugin_option are shared with ABI 2 and come from kiln/plugin.h.
 *
 * Mandatory entries: error_code, error_message, error_destroy, device_count,
 * device_info, compile, executable_destroy, execute, buffer_from_host, buffer_shape,
 * buffer_to_host, buffer_destroy. Optional (NULL or beyond struct_size): op_supported
 * (every opcode x type assumed supported), instruction_supported (op_supported alone
 * decides), shutdown (nothing called before unload). */
#ifndef KILN_PLUGIN_V1_H
#define KILN_PLUGIN_V1_H

#include "kiln/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_V1_API_MAJOR 1
#define KILN_PLUGIN_V1_API_MINOR 0

/* Opaque plugin-owned handles. */
typedef struct kiln_plugin_v1_error kiln_plugin_v1_error;
typedef struct kiln_plugin_v1_executable kiln_plugin_v1_executable;
typedef struct kiln_plugin_v1_buffer kiln_plugin_v1_buffer;

/* Compile options are kiln_plugin_option (plugin.h; the layout is the same in both ABIs). */

/* What the host tells the plugin at init. Valid during the init call only. */
typedef struct kiln_plugin_v1_host {
  size_t struct_size;
  int api_major;
  int api_minor;
  const char *host_version;
  const char *manifest_path; /* the manifest the plugin was loaded from */
} kiln_plugin_v1_host;

/* Filled by device_info. The host sets struct_size to its own size; the plugin writes
 * only the fields that fit in it. */
typedef struct kiln_plugin_v1_device_info {
  size_t struct_size;
  const char *name;        /* the device name users pass to --device */
  const char *description; /* one line */
} kiln_plugin_v1_device_info;

/* The function table the plugin returns from init. */
typedef struct kiln_plugin_v1_api {
  size_t struct_size;
  int api_major; /* the ABI the plugin was built against */
  int api_minor;
  const char *plugin_name;
  const char *plugin_version;

  /* ---- errors (mandatory) ---- */
  int (*error_code)(const kiln_plugin_v1_error *err);
  const char *(*error_message)(const kiln_plugin_v1_error *err);
  void (*error_destroy)(kiln_plugin_v1_error *err);

  /* ---- devices (mandatory) ---- */
  int (*device_count)(void);
  kiln_plugin_v1_error *(*device_info)(int device, kiln_plugin_v1_device_info *out);

  /* ---- compile and execute (mandatory) ---- */
  /* module[0..module_len) in `format` (KILN_PLUGIN_FORMAT_HLO_TEXT). */
  kiln_plugin_v1_error *(*compile)(int device, const char *format, const char *module, size_t module_len,
                                const kiln_plugin_option *options, size_t n_options,
                                kiln_plugin_v1_executable **out);
  void (*executable_destroy)(kiln_plugin_v1_executable *exe);
  /* args are borrowed. The results are the root's value, or the elements of a root
   * tuple, in order; the plugin writes at most max_results handles (owned by the host)
   * and their count into *n_results. */
  kiln_plugin_v1_error *(*execute)(kiln_plugin_v1_executable *exe, kiln_plugin_v1_buffer *const *args, size_t n_args,
                                kiln_plugin_v1_buffer **results, size_t max_results, size_t *n_results);

  /* ---- buffers (mandatory): dense row-major arrays; pred is one byte, f16/bf16 their
   * 16-bit patterns ---- */
  kiln_plugin_v1_error *(*buffer_from_host)(int device, int dtype, const size_t *dims, size_t rank,
                                         const void *data, size_t n_bytes, kiln_plugin_v1_buffer **out);
  /* dims must hold KILN_PLUGIN_MAX_RANK entries. */
  kiln_plugin_v1_error *(*buffer_shape)(const kiln_plugin_v1_buffer *buf, int *dtype, size_t *dims, size_t *rank);
  kiln_plugin_v1_error *(*buffer_to_host)(const kiln_plugin_v1_buffer *buf, void *dst, size_t n_bytes);
  void (*buffer_destroy)(kiln_plugin_v1_buffer *buf);

  /* ---- optional (see the leading comment) ---- */
  /* Nonzero when the device implements `opcode` (XLA's spelling, "add") for outputs of
   * element type dtype. */
  int (*op_supported)(int device, const char *opcode, int dtype);
  /* Finer check for one instruction, given as its HLO text line
   * ("%add.1 = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b)"). */
  int (*instruction_supported)(int device, const char *hlo_text, size_t len);
  void (*shutdown)(void);
  /* Frozen: ABI 1 gets no new entries. */
} kiln_plugin_v1_api;

/* The entry point, called once right after dlopen. On success it sets *api (a table
 * that stays valid until unload) and returns NULL. On failure it returns an error and
 * should still set *api, so that the host can read the message and release the error
 * through error_message / error_destroy; with *api NULL the host reports the failure
 * without a message and cannot release the error. A failed init is not retried. */
typedef kiln_plugin_v1_error *(*kiln_plugin_v1_init_fn)(const kiln_plugin_v1_host *host, const kiln_plugin_v1_api **api);

#ifdef __cplusplus
}
#endif

/* ABI freeze: the offsets of the 1.0 tables never change (checked in C11 builds on LP64
 * targets, where the host is built; the numbers below assume 8-byte pointers). */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && defined(__LP64__)
_Static_assert(offsetof(kiln_plugin_option, value) == 2 * sizeof(void *), "kiln_plugin_option layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_host, host_version) == 2 * sizeof(void *), "kiln_plugin_v1_host layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_host, manifest_path) == 3 * sizeof(void *), "kiln_plugin_v1_host layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_device_info, description) == 2 * sizeof(void *), "device_info layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, api_major) == sizeof(size_t), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, plugin_name) == 2 * sizeof(size_t), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, error_code) == 4 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, device_count) == 7 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, compile) == 9 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, buffer_from_host) == 12 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, buffer_destroy) == 15 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, op_supported) == 16 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_v1_api, shutdown) == 18 * sizeof(void *), "api layout frozen");
_Static_assert(sizeof(kiln_plugin_v1_api) == 19 * sizeof(void *), "api 1.0 size frozen");
#endif

#endif
