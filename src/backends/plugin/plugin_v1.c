/* The ABI-1 adapter: makes a plugin built against kiln/plugin_v1.h look like an ABI-2
 * plugin, so that the loader and the backend adapter in plugin.c are written once,
 * against kiln/plugin.h only.
 *
 * An ABI-1 plugin has no client handle (its state is process-global), positional entry
 * points and its own error type. The shim below is an ABI-2 function table implemented
 * by the host: its "client" is a host allocation holding a copy of the plugin's ABI-1
 * table, each entry unpacks the argument struct and makes the positional call, and each
 * ABI-1 error is wrapped in a host-made kiln_plugin_error that remembers which table
 * releases it. ABI-1 buffer and executable handles are passed through unchanged (cast
 * to the ABI-2 handle types: both are opaque pointers the plugin owns). What ABI 1
 * cannot express is simply absent: donation is ignored (the host never offers it to an
 * adapted plugin), buffer_shape reports device -1, device memory is unknown (0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin/plugin.h"
#include "kiln/plugin_v1.h"

/* The shim's client: the plugin's table, copied into a host-sized zeroed struct so an
 * older, shorter table reads as NULL optional entries. */
typedef struct v1_state {
  kiln_plugin_v1_api api;
} v1_state;

/* The shim's error: an ABI-1 error and the table that can read and release it; or, for
 * errors the shim makes itself (err NULL), a code and a static message. */
typedef struct v1_error {
  const kiln_plugin_v1_api *api;
  kiln_plugin_v1_error *err;
  int code;
  const char *message;
} v1_error;

static v1_state *state_of(kiln_plugin_client *c) { return (v1_state *)(void *)c; }

static kiln_plugin_error *wrap_error(const v1_state *st, kiln_plugin_v1_error *err) {
  if (!err) return NULL;
  v1_error *e = calloc(1, sizeof *e);
  if (!e) abort();
  e->api = &st->api;
  e->err = err;
  return (kiln_plugin_error *)(void *)e;
}

static kiln_plugin_error *shim_error(int code, const char *message) {
  v1_error *e = calloc(1, sizeof *e);
  if (!e) abort();
  e->code = code;
  e->message = message;
  return (kiln_plugin_error *)(void *)e;
}

static int s_error_code(const kiln_plugin_error *err) {
  const v1_error *e = (const v1_error *)(const void *)err;
  return e->err ? e->api->error_code(e->err) : e->code;
}

static const char *s_error_message(const kiln_plugin_error *err) {
  const v1_error *e = (const v1_error *)(const void *)err;
  return e->err ? e->api->error_message(e->err) : e->message;
}

static void s_error_destroy(kiln_plugin_error *err) {
  v1_error *e = (v1_error *)(void *)err;
  if (!e) return;
  if (e->err) e->api->error_destroy(e->err);
  free(e);
}

/* Never called: the loader makes the shim's client itself (plugin_v1_open). */
static kiln_plugin_error *s_client_create(kiln_plugin_client_create_args *a) {
  (void)a;
  return shim_error(KILN_PLUGIN_ERR_INTERNAL, "an ABI-1 plugin has no client_create");
}

/* ABI 1's shutdown ran before unload; the client's end is the same moment. */
static void s_client_destroy(kiln_plugin_client *c) {
  v1_state *st = state_of(c);
  if (!st) return;
  if (st->api.shutdown) st->api.shutdown();
  free(st);
}

static kiln_plugin_error *s_device_count(kiln_plugin_device_count_args *a) {
  a->n_devices = state_of(a->client)->api.device_count();
  return NULL;
}

static kiln_plugin_error *s_device_info(kiln_plugin_device_info_args *a) {
  v1_state *st = state_of(a->client);
  kiln_plugin_v1_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  kiln_plugin_error *e = wrap_error(st, st->api.device_info(a->device, &info));
  if (e) return e;
  a->name = info.name;
  a->description = info.description;
  a->memory_bytes = 0;
  return NULL;
}

static kiln_plugin_error *s_op_supported(kiln_plugin_op_supported_args *a) {
  a->supported = state_of(a->client)->api.op_supported(a->device, a->opcode, a->dtype);
  return NULL;
}

static kiln_plugin_error *s_instruction_supported(kiln_plugin_instruction_supported_args *a) {
  a->supported = state_of(a->client)->api.instruction_supported(a->device, a->hlo_text, a->hlo_text_len);
  return NULL;
}

static kiln_plugin_error *s_compile(kiln_plugin_compile_args *a) {
  v1_state *st = state_of(a->client);
  kiln_plugin_v1_executable *exe = NULL;
  kiln_plugin_error *e = wrap_error(
      st, st->api.compile(a->device, a->format, a->module, a->module_len, a->options, a->n_options, &exe));
  if (e) {
    if (exe) st->api.executable_destroy(exe);
    return e;
  }
  a->executable = (kiln_plugin_executable *)(void *)exe;
  return NULL;
}

static void s_executable_destroy(kiln_plugin_client *c, kiln_plugin_executable *exe) {
  state_of(c)->api.executable_destroy((kiln_plugin_v1_executable *)(void *)exe);
}

/* donated is ignored: ABI 1 borrows its arguments. */
static kiln_plugin_error *s_execute(kiln_plugin_execute_args *a) {
  v1_state *st = state_of(a->client);
  size_t n = 0;
  kiln_plugin_error *e = wrap_error(
      st, st->api.execute((kiln_plugin_v1_executable *)(void *)a->executable,
                          (kiln_plugin_v1_buffer *const *)(const void *)a->args, a->n_args,
                          (kiln_plugin_v1_buffer **)(void *)a->results, a->max_results, &n));
  a->n_results = n;
  return e;
}

static kiln_plugin_error *s_buffer_from_host(kiln_plugin_buffer_from_host_args *a) {
  v1_state *st = state_of(a->client);
  kiln_plugin_v1_buffer *b = NULL;
  kiln_plugin_error *e =
      wrap_error(st, st->api.buffer_from_host(a->device, a->dtype, a->dims, a->rank, a->data, a->n_bytes, &b));
  if (e) return e;
  a->buffer = (kiln_plugin_buffer *)(void *)b;
  return NULL;
}

static kiln_plugin_error *s_buffer_to_host(kiln_plugin_buffer_to_host_args *a) {
  v1_state *st = state_of(a->client);
  return wrap_error(st, st->api.buffer_to_host((const kiln_plugin_v1_buffer *)(const void *)a->buffer, a->dst,
                                               a->n_bytes));
}

static kiln_plugin_error *s_buffer_shape(kiln_plugin_buffer_shape_args *a) {
  v1_state *st = state_of(a->client);
  int dtype = 0;
  size_t rank = 0;
  kiln_plugin_error *e = wrap_error(
      st, st->api.buffer_shape((const kiln_plugin_v1_buffer *)(const void *)a->buffer, &dtype, a->dims, &rank));
  if (e) return e;
  a->dtype = dtype;
  a->rank = rank;
  a->device = -1; /* ABI 1 does not say */
  return NULL;
}

static void s_buffer_destroy(kiln_plugin_client *c, kiln_plugin_buffer *b) {
  state_of(c)->api.buffer_destroy((kiln_plugin_v1_buffer *)(void *)b);
}

static char *dup_printf_reason(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (!s) abort();
  strcpy(s, a);
  strcat(s, b);
  return s;
}

/* Checks the ABI-1 table the plugin returned and copies it into st (zero-extended). */
static char *check_v1_table(const kiln_plugin_v1_api *t, v1_state *st, char **note) {
  char buf[256];
  size_t mandatory_end = offsetof(kiln_plugin_v1_api, buffer_destroy) + sizeof t->buffer_destroy;
  if (t->struct_size < mandatory_end) {
    snprintf(buf, sizeof buf, "function table too small (%zu bytes; the mandatory entries need %zu)", t->struct_size,
             mandatory_end);
    return dup_printf_reason(buf, "");
  }
  size_t n = t->struct_size < sizeof st->api ? t->struct_size : sizeof st->api;
  memset(&st->api, 0, sizeof st->api);
  memcpy(&st->api, t, n);
  if (t->struct_size < sizeof st->api) {
    snprintf(buf, sizeof buf, "older plugin table (%zu bytes, ABI 1.0 has %zu): its optional entries unused",
             t->struct_size, sizeof st->api);
    *note = dup_printf_reason(buf, "");
  }
  if (st->api.api_major != KILN_PLUGIN_V1_API_MAJOR) {
    snprintf(buf, sizeof buf, "the plugin's table says ABI %d.%d, its manifest says 1.x", st->api.api_major,
             st->api.api_minor);
    return dup_printf_reason(buf, "");
  }
  const kiln_plugin_v1_api *a = &st->api;
  const char *missing = !a->error_code          ? "error_code"
                        : !a->error_message      ? "error_message"
                        : !a->error_destroy      ? "error_destroy"
                        : !a->device_count       ? "device_count"
                        : !a->device_info        ? "device_info"
                        : !a->compile            ? "compile"
                        : !a->executable_destroy ? "executable_destroy"
                        : !a->execute            ? "execute"
                        : !a->buffer_from_host   ? "buffer_from_host"
                        : !a->buffer_shape       ? "buffer_shape"
                        : !a->buffer_to_host     ? "buffer_to_host"
                        : !a->buffer_destroy     ? "buffer_destroy"
                                                 : NULL;
  if (missing) {
    snprintf(buf, sizeof buf, "mandatory entry %s is NULL", missing);
    return dup_printf_reason(buf, "");
  }
  return NULL;
}

char *plugin_v1_open(void *init_sym, const char *manifest_path, kiln_plugin_api *api, kiln_plugin_client **client,
                     char **note) {
  kiln_plugin_v1_init_fn init;
  memcpy(&init, &init_sym, sizeof init); /* POSIX guarantees object and function pointers convert */
  kiln_plugin_v1_host host;
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.api_major = KILN_PLUGIN_V1_API_MAJOR;
  host.api_minor = KILN_PLUGIN_V1_API_MINOR;
  host.host_version = "kiln";
  host.manifest_path = manifest_path;
  const kiln_plugin_v1_api *table = NULL;
  kiln_plugin_v1_error *err = init(&host, &table);
  if (err) {
    if (table && table->struct_size >= offsetof(kiln_plugin_v1_api, device_count) && table->error_message &&
        table->error_destroy) {
      const char *msg = table->error_message(err);
      char *r = dup_printf_reason("init failed: ", msg && *msg ? msg : "(no message)");
      table->error_destroy(err);
      return r;
    }
    return dup_printf_reason("init failed (no error table to read the message)", "");
  }
  if (!table) return dup_printf_reason("init returned no function table", "");
  v1_state *st = calloc(1, sizeof *st);
  if (!st) abort();
  char *reason = check_v1_table(table, st, note);
  if (reason) {
    /* The plugin initialised: let it release what it holds before the library goes. */
    if (st->api.api_major == KILN_PLUGIN_V1_API_MAJOR && st->api.shutdown) st->api.shutdown();
    free(st);
    return reason;
  }
  static const kiln_plugin_api shim = {
      sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR, NULL, NULL,
      s_error_code, s_error_message, s_error_destroy,
      s_client_create, s_client_destroy, s_device_count, s_device_info,
      s_compile, s_executable_destroy, s_execute,
      s_buffer_from_host, s_buffer_to_host, s_buffer_shape, s_buffer_destroy,
      s_op_supported, s_instruction_supported};
  *api = shim;
  api->plugin_name = st->api.plugin_name;
  api->plugin_version = st->api.plugin_version;
  if (!st->api.op_supported) api->op_supported = NULL;
  if (!st->api.instruction_supported) api->instruction_supported = NULL;
  *client = (kiln_plugin_client *)(void *)st;
  return NULL;
}
