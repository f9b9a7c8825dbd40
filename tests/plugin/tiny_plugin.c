/* A throwaway ABI-1 plugin for the loader tests, compiled once per misbehaviour with a
 * TINY_* macro. It stays on ABI 1 on purpose (kiln/plugin_v1.h, manifests "abi" 1.0):
 * it proves that plugins built against the first ABI still load and run through the
 * host's adapter. It needs nothing from kiln but the plugin headers: its one device
 * `tiny` runs any module the way a toy accelerator would — it adds all f32 arguments
 * elementwise — which is enough to tell a working plugin from a broken one. Modes:
 *   (none)            well-behaved
 *   TINY_OLD_TABLE    a 1.0 table cut before the optional entries (an older plugin)
 *   TINY_INIT_ERROR   init fails with a message
 *   TINY_NO_ENTRY     kiln_plugin_init is not exported
 *   TINY_COMPILE_ERROR compile always fails with INTERNAL (a broken compiler)
 *   TINY_COMPILE_UNIMPLEMENTED compile always answers UNIMPLEMENTED (not this device)
 *   TINY_EXEC_ERROR   execute always fails
 *   TINY_EXTRA_EXPORT exports a second symbol (the nm check must flag it) */
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin_v1.h"

#ifndef TINY_DEVICE
#define TINY_DEVICE "tiny"
#endif

struct kiln_plugin_v1_error {
  int code;
  const char *message;
};
struct kiln_plugin_v1_executable {
  int unused;
};
struct kiln_plugin_v1_buffer {
  size_t n, rank;
  size_t dims[KILN_PLUGIN_MAX_RANK];
  float *data;
};

static kiln_plugin_v1_error *make_error(int code, const char *msg) {
  kiln_plugin_v1_error *e = (kiln_plugin_v1_error *)malloc(sizeof *e);
  if (!e) return NULL;
  e->code = code;
  e->message = msg;
  return e;
}

static int t_error_code(const kiln_plugin_v1_error *e) { return e->code; }
static const char *t_error_message(const kiln_plugin_v1_error *e) { return e->message; }
static void t_error_destroy(kiln_plugin_v1_error *e) { free(e); }
static int t_device_count(void) { return 1; }
static kiln_plugin_v1_error *t_device_info(int device, kiln_plugin_v1_device_info *out) {
  (void)device;
  out->name = TINY_DEVICE;
  out->description = "tiny test plugin (adds its f32 arguments)";
  return NULL;
}

static kiln_plugin_v1_error *t_compile(int device, const char *format, const char *module, size_t len,
                                    const kiln_plugin_option *options, size_t n_options,
                                    kiln_plugin_v1_executable **out) {
  (void)device, (void)format, (void)module, (void)len, (void)options, (void)n_options;
#if defined(TINY_COMPILE_ERROR)
  (void)out;
  return make_error(KILN_PLUGIN_ERR_INTERNAL, "tiny compiler crashed politely");
#elif defined(TINY_COMPILE_UNIMPLEMENTED)
  (void)out;
  return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "tiny device does not do this module");
#else
  *out = (kiln_plugin_v1_executable *)calloc(1, sizeof **out);
  return *out ? NULL : make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
#endif
}

static void t_executable_destroy(kiln_plugin_v1_executable *e) { free(e); }

static kiln_plugin_v1_error *t_execute(kiln_plugin_v1_executable *e, kiln_plugin_v1_buffer *const *args, size_t n_args,
                                    kiln_plugin_v1_buffer **results, size_t max_results, size_t *n_results) {
  size_t i, k;
  kiln_plugin_v1_buffer *r;
  (void)e;
  *n_results = 0;
#ifdef TINY_EXEC_ERROR
  (void)args, (void)n_args, (void)results, (void)max_results, (void)i, (void)k, (void)r;
  return make_error(KILN_PLUGIN_ERR_INTERNAL, "tiny device fell over");
#else
  if (n_args == 0 || max_results < 1) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "need arguments");
  r = (kiln_plugin_v1_buffer *)malloc(sizeof *r);
  if (!r) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  *r = *args[0];
  r->data = (float *)calloc(r->n ? r->n : 1, sizeof(float));
  if (!r->data) {
    free(r);
    return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (i = 0; i < n_args; i++)
    for (k = 0; k < r->n && k < args[i]->n; k++) r->data[k] += args[i]->data[k];
  results[0] = r;
  *n_results = 1;
  return NULL;
#endif
}

static kiln_plugin_v1_error *t_buffer_from_host(int device, int dtype, const size_t *dims, size_t rank,
                                             const void *data, size_t n_bytes, kiln_plugin_v1_buffer **out) {
  size_t i, n = 1;
  kiln_plugin_v1_buffer *b;
  (void)device;
  if (dtype != KILN_DTYPE_F32) return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "tiny speaks f32 only");
  for (i = 0; i < rank; i++) n *= dims[i];
  if (n * sizeof(float) != n_bytes) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "size mismatch");
  b = (kiln_plugin_v1_buffer *)calloc(1, sizeof *b);
  if (!b) return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  b->n = n;
  b->rank = rank;
  for (i = 0; i < rank; i++) b->dims[i] = dims[i];
  b->data = (float *)malloc(n_bytes ? n_bytes : 1);
  if (!b->data) {
    free(b);
    return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  memcpy(b->data, data, n_bytes);
  *out = b;
  return NULL;
}

static kiln_plugin_v1_error *t_buffer_shape(const kiln_plugin_v1_buffer *b, int *dtype, size_t *dims, size_t *rank) {
  size_t i;
  *dtype = KILN_DTYPE_F32;
  *rank = b->rank;
  for (i = 0; i < b->rank; i++) dims[i] = b->dims[i];
  return NULL;
}

static kiln_plugin_v1_error *t_buffer_to_host(const kiln_plugin_v1_buffer *b, void *dst, size_t n_bytes) {
  if (n_bytes != b->n * sizeof(float)) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "size mismatch");
  memcpy(dst, b->data, n_bytes);
  return NULL;
}

static void t_buffer_destroy(kiln_plugin_v1_buffer *b) {
  if (!b) return;
  free(b->data);
  free(b);
}

/* Only add and parameters of f32: everything else is "unsupported", never "wrong". */
static int t_op_supported(int device, const char *opcode, int dtype) {
  (void)device;
  return dtype == KILN_DTYPE_F32 && (strcmp(opcode, "add") == 0 || strcmp(opcode, "parameter") == 0);
}

/* The per-instruction predicate sees the HLO text: it vetoes any instruction whose
 * name contains "veto", so the tests can tell it is consulted. */
static int t_instruction_supported(int device, const char *hlo_text, size_t len) {
  (void)device;
  (void)len;
  return strstr(hlo_text, "veto") == NULL;
}

static const kiln_plugin_v1_api tiny_api = {
#ifdef TINY_OLD_TABLE
    offsetof(kiln_plugin_v1_api, op_supported),
#else
    sizeof(kiln_plugin_v1_api),
#endif
    KILN_PLUGIN_V1_API_MAJOR, KILN_PLUGIN_V1_API_MINOR, "tiny", "0.1",
    t_error_code, t_error_message, t_error_destroy,
    t_device_count, t_device_info,
    t_compile, t_executable_destroy, t_execute,
    t_buffer_from_host, t_buffer_shape, t_buffer_to_host, t_buffer_destroy,
    t_op_supported, t_instruction_supported, NULL};

#ifdef TINY_NO_ENTRY
#define TINY_ENTRY_NAME kiln_plugin_init_misspelled
#else
#define TINY_ENTRY_NAME kiln_plugin_init
#endif

KILN_PLUGIN_EXPORT kiln_plugin_v1_error *TINY_ENTRY_NAME(const kiln_plugin_v1_host *host, const kiln_plugin_v1_api **api) {
  (void)host;
  *api = &tiny_api;
#ifdef TINY_INIT_ERROR
  return make_error(KILN_PLUGIN_ERR_INTERNAL, "no tiny device present");
#else
  return NULL;
#endif
}

#ifdef TINY_EXTRA_EXPORT
KILN_PLUGIN_EXPORT int tiny_leaked_helper(void) { return 42; }
#endif
