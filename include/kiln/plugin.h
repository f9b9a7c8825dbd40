/* kiln backend-plugin ABI 2: the only contract between kiln and a device plugin.
 *
 * A plugin is a shared library that exports exactly one symbol, kiln_plugin_init, plus a
 * JSON manifest NAME.kiln-plugin.json beside it (docs/PLUGINS.md). The host reads the
 * manifest first and decides compatibility (the plugin never does): a manifest ABI major
 * the host does not speak (it speaks 2, and adapts 1 through kiln/plugin_v1.h) or a minor
 * newer than the host's means the library is never opened.
 *
 * The shape of ABI 2 (after PJRT's C API and ggml-backend):
 *   - a client: the plugin's state (driver context, queues, caches) lives in a
 *     kiln_plugin_client the plugin creates in client_create and the host passes to
 *     every call, so one process may hold several clients and the plugin keeps no
 *     globals; the client gets the host's callbacks (logging) at creation;
 *   - argument structs: every entry that may ever need a new parameter takes one
 *     pointer to a *_args struct that begins with struct_size. The host fills
 *     struct_size with sizeof of the struct as its header defines it; the plugin reads
 *     only the fields that fit (a field beyond an older host's struct_size reads as
 *     absent) and writes outputs only within it. New fields go at the end of a struct,
 *     new entries at the end of the table, after a KILN_PLUGIN_API_MINOR bump;
 *   - buffers that live on the device: the host uploads an array once
 *     (buffer_from_host), passes the handle to any number of executes, reads results
 *     back only when it needs them (buffer_to_host), and may donate an argument so its
 *     memory becomes a result's;
 *   - error codes kept end to end: compile answering KILN_PLUGIN_ERR_UNIMPLEMENTED means
 *     "this module does not run on this device, place it elsewhere"; every other error
 *     is the plugin's failure and is reported as such (the user may ask the host to fall
 *     back anyway with --allow_plugin_fallback).
 *
 * The header is plain C89 (also valid C++): POD structs, ints for enums and flags (fixed
 * size), no bool.
 *
 * Ownership: every handle (client, executable, buffer, error) is created by the plugin
 * and released by the host through the plugin's own destroy entry, so the two sides may
 * use different allocators (even different C++ runtimes). Strings the plugin returns stay
 * valid until the object they belong to is destroyed (table strings: until unload; device
 * strings: until client_destroy; error messages: until error_destroy). Arrays and strings
 * the host passes in are borrowed for the call only.
 *
 * Threads: the host may call entries of one client from several threads at once, except
 * client_destroy (called once, when nothing else runs on that client). A plugin that is
 * not thread-safe serialises inside its client.
 *
 * Mandatory entries (a table with one NULL is refused and the library unloaded):
 *   error_code, error_message, error_destroy, client_create, client_destroy,
 *   device_count, device_info, compile, executable_destroy, execute,
 *   buffer_from_host, buffer_to_host, buffer_shape, buffer_destroy.
 * Optional entries and what the host does when one is NULL or beyond struct_size:
 *   op_supported          -> every opcode x type is assumed supported; compile decides
 *   instruction_supported -> op_supported alone decides
 *
 * Usage (a minimal plugin):
 *
 *   #include "kiln/plugin.h"
 *   struct kiln_plugin_client { ... your driver state ... };
 *   static kiln_plugin_error *my_client_create(kiln_plugin_client_create_args *a) {
 *     a->client = calloc(1, sizeof *a->client); ... return NULL;
 *   }
 *   ... the other entries ...
 *   static const kiln_plugin_api my_api = {
 *     sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR, "my-plugin", "1.0",
 *     my_error_code, my_error_message, my_error_destroy,
 *     my_client_create, my_client_destroy, my_device_count, my_device_info,
 *     my_compile, my_executable_destroy, my_execute,
 *     my_buffer_from_host, my_buffer_to_host, my_buffer_shape, my_buffer_destroy,
 *     my_op_supported, my_instruction_supported };
 *   KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_api **api) {
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

#define KILN_PLUGIN_API_MAJOR 2
#define KILN_PLUGIN_API_MINOR 0

/* The entry symbol's name, for dlsym (the same in every ABI major; the manifest's major
 * says which signature it has). */
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

/* Error codes (error_code's result). Only UNIMPLEMENTED from compile (or from
 * op_supported-style queries) means "not on this device"; the rest are failures. */
#define KILN_PLUGIN_ERR_INVALID_ARGUMENT 1
#define KILN_PLUGIN_ERR_NOT_FOUND 2
#define KILN_PLUGIN_ERR_UNIMPLEMENTED 3
#define KILN_PLUGIN_ERR_OUT_OF_RANGE 4
#define KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED 5
#define KILN_PLUGIN_ERR_INTERNAL 6
#define KILN_PLUGIN_ERR_UNAVAILABLE 7 /* the device or its driver is gone or not ready */

/* The module format compile accepts: XLA HLO text, as kiln prints it (docs/PLUGINS.md
 * "What compile receives"). */
#define KILN_PLUGIN_FORMAT_HLO_TEXT "hlo-text"

/* Largest rank a buffer may have. */
#define KILN_PLUGIN_MAX_RANK 16

/* Log levels of the host's log callback. */
#define KILN_PLUGIN_LOG_DEBUG 0
#define KILN_PLUGIN_LOG_INFO 1
#define KILN_PLUGIN_LOG_WARNING 2
#define KILN_PLUGIN_LOG_ERROR 3

/* Opaque plugin-owned handles. */
typedef struct kiln_plugin_client kiln_plugin_client;
typedef struct kiln_plugin_error kiln_plugin_error;
typedef struct kiln_plugin_executable kiln_plugin_executable;
typedef struct kiln_plugin_buffer kiln_plugin_buffer;

/* A key/value option. Unknown keys must be ignored. Keys are conventionally prefixed with
 * the plugin's name ("opencl.platform"); the host's own keys start with "kiln.". */
typedef struct kiln_plugin_option {
  size_t struct_size;
  const char *key;
  const char *value;
} kiln_plugin_option;

/* What the host offers a client: callbacks valid for the client's whole life. */
typedef struct kiln_plugin_host {
  size_t struct_size;
  int api_major; /* the ABI the host speaks */
  int api_minor;
  const char *host_version;
  const char *manifest_path; /* the manifest the plugin was loaded from */
  void *host_data;           /* passed back to every callback */
  /* Writes one message to kiln's log (shown per kiln's --log level). May be NULL. */
  void (*log)(void *host_data, int level, const char *message);
} kiln_plugin_host;

/* ---- argument structs: struct_size first; see the leading comment ---- */

typedef struct kiln_plugin_client_create_args {
  size_t struct_size;
  const kiln_plugin_host *host;       /* valid until client_destroy */
  const kiln_plugin_option *options;  /* may be empty: kiln loads plugins before it knows a run's options,
                                         which every compile receives (kiln_plugin_compile_args) */
  size_t n_options;
  kiln_plugin_client *client;         /* out */
} kiln_plugin_client_create_args;

typedef struct kiln_plugin_device_count_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int n_devices; /* out: 1..1024 */
} kiln_plugin_device_count_args;

typedef struct kiln_plugin_device_info_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int device;                 /* 0 .. n_devices-1 */
  const char *name;           /* out: the device name users pass to --device */
  const char *description;    /* out: one line (driver, hardware) */
  size_t memory_bytes;        /* out: device memory, 0 when unknown */
} kiln_plugin_device_info_args;

typedef struct kiln_plugin_op_supported_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int device;
  const char *opcode; /* XLA's spelling: "add", "dot", "reduce-window" */
  int dtype;          /* the instruction's result element type; 0 for tuple-shaped results */
  int supported;      /* out: nonzero when the device implements it */
} kiln_plugin_op_supported_args;

typedef struct kiln_plugin_instruction_supported_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int device;
  const char *hlo_text; /* one instruction line: "%add.1 = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b)" */
  size_t hlo_text_len;
  int supported; /* out */
} kiln_plugin_instruction_supported_args;

/* The host passes, in this order: "kiln.module" = the module's name (for a cluster the
 * bridge built, the cluster's name), then every --plugin_option KEY=VALUE, verbatim. */
typedef struct kiln_plugin_compile_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int device;
  const char *format; /* KILN_PLUGIN_FORMAT_HLO_TEXT */
  const char *module; /* module[0..module_len), not NUL-terminated necessarily */
  size_t module_len;
  const kiln_plugin_option *options;
  size_t n_options;
  kiln_plugin_executable *executable; /* out */
} kiln_plugin_compile_args;

/* Runs an executable. Arguments are device buffers of the executable's device, borrowed,
 * in parameter order (entry parameters are arrays; no tuples). results receive the
 * root's value, or the elements of a root tuple in order: the plugin writes at most
 * max_results new handles (owned by the host) and their count into n_results.
 * donated: NULL, or n_args flags; a nonzero flag gives that argument's memory to the
 * plugin, which may reuse it for a result (the buffer then counts as consumed: the host
 * only destroys its handle and never reads it again). The plugin is free to ignore
 * donation. */
typedef struct kiln_plugin_execute_args {
  size_t struct_size;
  kiln_plugin_client *client;
  kiln_plugin_executable *executable;
  kiln_plugin_buffer *const *args;
  size_t n_args;
  const int *donated;
  kiln_plugin_buffer **results; /* host array of max_results slots */
  size_t max_results;
  size_t n_results; /* out */
} kiln_plugin_execute_args;

/* Buffers are dense row-major arrays; pred is one byte per element, f16/bf16 their 16-bit
 * patterns. data is NULL to allocate without initialising (a buffer for a result the host
 * fills later, or scratch). */
typedef struct kiln_plugin_buffer_from_host_args {
  size_t struct_size;
  kiln_plugin_client *client;
  int device;
  int dtype;
  const size_t *dims;
  size_t rank;
  const void *data; /* n_bytes bytes, or NULL: allocate only */
  size_t n_bytes;
  kiln_plugin_buffer *buffer; /* out */
} kiln_plugin_buffer_from_host_args;

typedef struct kiln_plugin_buffer_to_host_args {
  size_t struct_size;
  kiln_plugin_client *client;
  const kiln_plugin_buffer *buffer;
  void *dst; /* n_bytes bytes: exactly the buffer's size */
  size_t n_bytes;
} kiln_plugin_buffer_to_host_args;

typedef struct kiln_plugin_buffer_shape_args {
  size_t struct_size;
  kiln_plugin_client *client;
  const kiln_plugin_buffer *buffer;
  int dtype;                          /* out */
  size_t dims[KILN_PLUGIN_MAX_RANK];  /* out */
  size_t rank;                        /* out */
  int device;                         /* out: the device the buffer lives on */
} kiln_plugin_buffer_shape_args;

/* The function table kiln_plugin_init returns. */
typedef struct kiln_plugin_api {
  size_t struct_size;
  int api_major; /* the ABI the plugin was built against: KILN_PLUGIN_API_MAJOR */
  int api_minor;
  const char *plugin_name;
  const char *plugin_version;

  /* ---- errors (mandatory) ---- */
  int (*error_code)(const kiln_plugin_error *err);
  const char *(*error_message)(const kiln_plugin_error *err);
  void (*error_destroy)(kiln_plugin_error *err);

  /* ---- the client (mandatory) ---- */
  kiln_plugin_error *(*client_create)(kiln_plugin_client_create_args *args);
  /* Called once; every executable and buffer of the client was destroyed before. */
  void (*client_destroy)(kiln_plugin_client *client);

  /* ---- devices (mandatory) ---- */
  kiln_plugin_error *(*device_count)(kiln_plugin_device_count_args *args);
  kiln_plugin_error *(*device_info)(kiln_plugin_device_info_args *args);

  /* ---- compile and execute (mandatory) ---- */
  kiln_plugin_error *(*compile)(kiln_plugin_compile_args *args);
  void (*executable_destroy)(kiln_plugin_client *client, kiln_plugin_executable *exe);
  kiln_plugin_error *(*execute)(kiln_plugin_execute_args *args);

  /* ---- buffers (mandatory) ---- */
  kiln_plugin_error *(*buffer_from_host)(kiln_plugin_buffer_from_host_args *args);
  kiln_plugin_error *(*buffer_to_host)(kiln_plugin_buffer_to_host_args *args);
  kiln_plugin_error *(*buffer_shape)(kiln_plugin_buffer_shape_args *args);
  void (*buffer_destroy)(kiln_plugin_client *client, kiln_plugin_buffer *buf);

  /* ---- optional (see the leading comment) ---- */
  kiln_plugin_error *(*op_supported)(kiln_plugin_op_supported_args *args);
  kiln_plugin_error *(*instruction_supported)(kiln_plugin_instruction_supported_args *args);
  /* New entries go here, after a KILN_PLUGIN_API_MINOR bump. */
} kiln_plugin_api;

/* The entry point, called once right after dlopen. On success it sets *api (a table that
 * stays valid until unload) and returns NULL. On failure it returns an error and should
 * still set *api so the host can read the message and release the error through
 * error_message / error_destroy. Device discovery belongs in client_create, not here. */
typedef kiln_plugin_error *(*kiln_plugin_init_fn)(const kiln_plugin_api **api);

#ifdef __cplusplus
}
#endif

/* ABI freeze: the offsets of the 2.0 tables never change (checked in C11 builds on LP64
 * targets, where the host is built; the numbers assume 8-byte pointers and size_t). */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && defined(__LP64__)
_Static_assert(offsetof(kiln_plugin_option, value) == 2 * sizeof(void *), "kiln_plugin_option layout frozen");
_Static_assert(offsetof(kiln_plugin_host, log) == 5 * sizeof(void *), "kiln_plugin_host layout frozen");
_Static_assert(offsetof(kiln_plugin_client_create_args, client) == 4 * sizeof(void *), "client_create args frozen");
_Static_assert(offsetof(kiln_plugin_device_info_args, memory_bytes) == 5 * sizeof(void *), "device_info args frozen");
_Static_assert(offsetof(kiln_plugin_compile_args, executable) == 8 * sizeof(void *), "compile args frozen");
_Static_assert(offsetof(kiln_plugin_execute_args, n_results) == 8 * sizeof(void *), "execute args frozen");
_Static_assert(offsetof(kiln_plugin_buffer_from_host_args, buffer) == 7 * sizeof(void *), "from_host args frozen");
_Static_assert(offsetof(kiln_plugin_buffer_shape_args, rank) == (4 + KILN_PLUGIN_MAX_RANK) * sizeof(void *),
               "buffer_shape args frozen");
_Static_assert(offsetof(kiln_plugin_api, error_code) == 4 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, client_create) == 7 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, compile) == 11 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, buffer_from_host) == 14 * sizeof(void *), "api layout frozen");
_Static_assert(offsetof(kiln_plugin_api, op_supported) == 18 * sizeof(void *), "api layout frozen");
_Static_assert(sizeof(kiln_plugin_api) == 20 * sizeof(void *), "api 2.0 size frozen");
#endif

#endif
