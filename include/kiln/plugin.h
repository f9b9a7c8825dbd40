/* kiln backend-plugin ABI: the only contract between kiln and a device plugin.
 *
 * A plugin is a shared library that exports exactly one symbol, kiln_plugin_init, plus a
 * JSON manifest NAME.kiln-plugin.json beside it (see docs/PLUGINS.md). The host reads
 * the manifest first and decides compatibility (the plugin never does): an ABI major
 * other than KILN_PLUGIN_API_MAJOR or a minor newer than the host's means the library is
 * never opened. Everything else goes through function tables. The header is plain C89
 * (also valid C++): POD structs, no enums in structs (ints instead, so the size is
 * fixed), no bool. Every struct begins with `size_t struct_size`, and tables only ever
 * grow at the end, so an older plugin (smaller struct_size) keeps working: the host
 * treats the missing trailing entries as NULL.
 *
 * Ownership: every handle (executable, buffer, error) is created by the plugin and
 * released by the host through the plugin's own destroy entry, so the two sides may use
 * different allocators. Strings the plugin returns (names, error messages) stay valid
 * until the object they belong to is destroyed (table/device strings: until unload).
 *
 * Mandatory entries (the host refuses a table where one is NULL, and never calls the
 * plugin again): error_code, error_message, error_destroy, device_count, device_info,
 * compile, executable_destroy, execute, buffer_from_host, buffer_shape, buffer_to_host,
 * buffer_destroy. Optional entries and what the host does when they are NULL or beyond
 * the plugin's struct_size:
 *   op_supported          -> every opcode x type is assumed supported; compile decides
 *   instruction_supported -> op_supported alone decides
 *   shutdown              -> nothing is called before unload
 *
 * Usage (a minimal plugin):
 *
 *   #include "kiln/plugin.h"
 *   static int my_device_count(void) { return 1; }
 *   ... the other entries ...
 *   static const kiln_plugin_api my_api = {
 *     sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR,
 *     "my-plugin", "1.0",
 *     my_error_code, my_error_message, my_error_destroy,
 *     my_device_count, my_device_info, my_compile, my_executable_destroy, my_execute,
 *     my_buffer_from_host, my_buffer_shape, my_buffer_to_host, my_buffer_destroy,
 *     my_op_supported, my_instruction_supported, my_shutdown };
 *   KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_host *host,
 *                                                           const kiln_plugin_api **api) {
 *     *api = &my_api;
 *     return 0;
 *   }
 *
 * Build it with -fvisibility=hidden (and -Wl,--exclude-libs,ALL when linking static
 * libraries) so that kiln_plugin_init is the library's only exported symbol. */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_API_MAJOR 1
#define KILN_PLUGIN_API_MINOR 0

/* The entry symbol's name, for dlsym. */
#define KILN_PLUGIN_INIT_SYMBOL "kiln_plugin_init"

#if defined(__GNUC__)
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define KILN_PLUGIN_EXPORT
#endif

/* Element types. Values are frozen; new types get new numbers. */
#define KILN_DTYPE_PRED 1
#define KILN_DTYPE_S8 2
#define KILN_DTYPE_S16 3
#define KILN_DTYPE_S32 4
#define KILN_DTYPE_S64 5
#define KILN_DTYPE_U8 6
#define KILN_DTYPE_U16 7
#define KILN_DTYPE_U32 8
#define KILN_DTYPE_U64 9
#define KILN_DTYPE_F16 10
#define KILN_DTYPE_BF16 11
#define KILN_DTYPE_F32 12
#define KILN_DTYPE_F64 13

/* Error codes (error_code's result). UNIMPLEMENTED from compile means "this module
 * cannot run here": the host falls back to another device. */
#define KILN_PLUGIN_ERR_INVALID_ARGUMENT 1
#define KILN_PLUGIN_ERR_NOT_FOUND 2
#define KILN_PLUGIN_ERR_UNIMPLEMENTED 3
#define KILN_PLUGIN_ERR_OUT_OF_RANGE 4
#define KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED 5
#define KILN_PLUGIN_ERR_INTERNAL 6

/* The module format compile accepts in this ABI version: XLA HLO text. */
#define KILN_PLUGIN_FORMAT_HLO_TEXT "hlo-text"

/* Largest rank a buffer may have. */
#define KILN_PLUGIN_MAX_RANK 16

/* Opaque plugin-owned handles. */
typedef struct kiln_plugin_error kiln_plugin_error;
typedef struct kiln_plugin_executable kiln_plugin_executable;
typedef struct kiln_plugin_buffer kiln_plugin_buffer;

/* A key/value option (compile options). Unknown keys must be ignored. The host passes,
 * in this order: "kiln.module" = the module's name (for a cluster the bridge built, the
 * cluster's name), then every `--plugin_option KEY=VALUE` the user gave, verbatim
 * (keys are conventionally prefixed with the plugin's name: "example.reject_opcodes"). */
typedef struct kiln_plugin_option {
  size_t struct_size;
  const char *key;
  const char *value;
} kiln_plugin_option;

/* What the host tells the plugin at init. Valid during the init call only. */
typedef struct kiln_plugin_host {
  size_t struct_size;
  int api_major;
  int api_minor;
  const char *host_version;
  const char *manifest_path; /* the manifest the plugin was loaded from */
} kiln_plugin_host;

/* Filled by device_info. The host sets struct_size to its own size; the plugin writes
 * only the fields that fit in it. */
typedef struct kiln_plugin_device_info {
  size_t struct_size;
  const char *name;        /* the device name users pass to --device */
  const char *description; /* one line */
} kiln_plugin_device_info;

/* The function table the plugin returns from init. */
typedef struct kiln_plugin_api {
  size_t struct_size;
  int api_major; /* the ABI the plugin was built against */
  int api_minor;
  const char *plugin_name;
  const char *plugin_version;

  /* ---- errors (mandatory) ---- */
  int (*error_code)(const kiln_plugin_error *err);
  const char *(*error_message)(const kiln_plugin_error *err);
  void (*error_destroy)(kiln_plugin_error *err);

  /* ---- devices (mandatory) ---- */
  int (*device_count)(void);
  kiln_plugin_error *(*device_info)(int device, kiln_plugin_device_info *out);

  /* ---- compile and execute (mandatory) ---- */
  /* module[0..module_len) in `format` (KILN_PLUGIN_FORMAT_HLO_TEXT). */
  kiln_plugin_error *(*compile)(int device, const char *format, const char *module, size_t module_len,
                                const kiln_plugin_option *options, size_t n_options,
                                kiln_plugin_executable **out);
  void (*executable_destroy)(kiln_plugin_executable *exe);
  /* args are borrowed. The results are the root's value, or the elements of a root
   * tuple, in order; the plugin writes at most max_results handles (owned by the host)
   * and their count into *n_results. */
  kiln_plugin_error *(*execute)(kiln_plugin_executable *exe, kiln_plugin_buffer *const *args, size_t n_args,
                                kiln_plugin_buffer **results, size_t max_results, size_t *n_results);

  /* ---- buffers (mandatory): dense row-major arrays; pred is one byte, f16/bf16 their
   * 16-bit patterns ---- */
  kiln_plugin_error *(*buffer_from_host)(int device, int dtype, const size_t *dims, size_t rank,
                                         const void *data, size_t n_bytes, kiln_plugin_buffer **out);
  /* dims must hold KILN_PLUGIN_MAX_RANK entries. */
  kiln_plugin_error *(*buffer_shape)(const kiln_plugin_buffer *buf, int *dtype, size_t *dims, size_t *rank);
  kiln_plugin_error *(*buffer_to_host)(const kiln_plugin_buffer *buf, void *dst, size_t n_bytes);
  void (*buffer_destroy)(kiln_plugin_buffer *buf);

  /* ---- optional (see the leading comment) ---- */
  /* Nonzero when the device implements `opcode` (XLA's spelling, "add") for outputs of
   * element type dtype. */
  int (*op_supported)(int device, const char *opcode, int dtype);
  /* Finer check for one instruction, given as its HLO text line
   * ("%add.1 = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b)"). */
  int (*instruction_supported)(int device, const char *hlo_text, size_t len);
  void (*shutdown)(void);
  /* New entries go here, after a KILN_PLUGIN_API_MINOR bump. */
} kiln_plugin_api;

/* The entry point, called once right after dlopen. On success it sets *api (a table
 * that stays valid until unload) and returns NULL. On failure it returns an error and
 * should still set *api, so that the host can read the message and release the error
 * through error_message / error_destroy; with *api NULL the host reports the failure
 * without a message and cannot release the error. A failed init is not retried. */
typedef kiln_plugin_error *(*kiln_plugin_init_fn)(const kiln_plugin_host *host, const kiln_plugin_api **api);

#ifdef __cplusplus
}
#endif

/* ABI freeze: the offsets of the 1.0 tables never change (checked in C11 builds on LP64
 * targets, where the host is built; the numbers below assume 8-byte pointers). */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && defined(__LP64__)
_Static_assert(offsetof(kiln_plugin_option, value) == 2 * sizeof(void *), "kiln_plugin_option layout frozen");
_Static_assert(offsetof(kiln_plugin_host, host_version) == 2 * sizeof(void *), "kiln_plugin_host layout frozen");
_Static_assert(offsetof(kiln_plugin_host, manifest_path) == 3 * sizeof(void *), "kiln_plugin_host layout frozen");
_Static_assert(offsetof(kiln_plugin_device_info, description) == 2 * sizeof(void *), "device_info layout frozen");
_Static_assert(offsetof(kiln_plugin_api, api_major) == sizeof(size_t), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, plugin_name) == 2 * sizeof(size_t), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, error_code) == 4 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, device_count) == 7 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, compile) == 9 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, buffer_from_host) == 12 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, buffer_destroy) == 15 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, op_supported) == 16 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, shutdown) == 18 * sizeof(void *), "api layout frozen");
_Static_assert(sizeof(kiln_plugin_api) == 19 * sizeof(void *), "api 1.0 size frozen");
#endif

#endif
