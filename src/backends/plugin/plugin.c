/* The plugin loader and the backend adapter.
 *
 * The loader judges a plugin by its manifest before touching the library: the ABI major
 * picks the table (2: kiln/plugin.h, used as is; 1: kiln/plugin_v1.h, wrapped by
 * plugin_v1.c into an ABI-2 table), anything else is never opened. It then dlopens the
 * library (RTLD_LOCAL so its symbols never interpose on kiln's, RTLD_NOW so an
 * unresolved symbol fails here and not in the middle of a run), calls kiln_plugin_init,
 * copies the returned table into a host-sized, zeroed struct (a shorter table from an
 * older minor reads as NULL optional entries) and creates the plugin's one client.
 *
 * The adapter turns each device into a `backend`. Every plugin call is wrapped so that a
 * plugin error becomes a kiln_status naming the device, keeping the plugin's code, and
 * the plugin's error object is released through the plugin's own error_destroy. Only
 * UNIMPLEMENTED from compile lets a caller place the work elsewhere; every other compile
 * error is the run's failure unless the user asked for --allow_plugin_fallback.
 *
 * Compile hoists the entry computation's large constants (weights) out of the module
 * text into trailing parameters and uploads them once: they then stay on the device
 * for the executable's life instead of being re-parsed from text by the plugin, and
 * execute appends their handles to the caller's arguments. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/plugin/plugin.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "hlo/clone.h"
#include "hlo/literal.h"
#include "hlo/printer.h"
#include "kiln/plugin_v1.h"

typedef struct plugin_device {
  backend b; /* first, so the adapter can get from a backend back to its device */
  plugin *owner;
  int index;
  char *name;
  char *description;
  int fallback_warned; /* --allow_plugin_fallback's warning was given (atomic) */
} plugin_device;

struct plugin {
  char *path;
  plugin_manifest manifest;
  bool manifest_ok;
  char *reason;
  char *note;
  void *dl;
  bool adapted;            /* an ABI-1 plugin behind plugin_v1.c's shim */
  char abi[48];            /* plugin_abi's answer */
  kiln_plugin_api api;     /* host-sized copy; entries beyond the plugin's struct_size are NULL */
  kiln_plugin_host host;   /* what client_create got; must outlive the client */
  kiln_plugin_client *client; /* NULL until created */
  int n_devices;
  plugin_device *devices;
};

struct backend_executable {
  plugin_device *dev;
  kiln_plugin_executable *exe;
  bool root_is_tuple;
  int n_results;
  hlo_shape *result_shapes; /* array shapes, one per result */
  int n_params;             /* the caller's entry parameters */
  int n_resident;           /* hoisted constants, passed after them */
  kiln_plugin_buffer **resident;
  int64_t resident_bytes;
};

static char *dup_str(const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (!d) abort();
  memcpy(d, s, n + 1);
  return d;
}

static char *format_str(const char *fmt, ...) KILN_PRINTF(1, 2);
static char *format_str(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = malloc(n > 0 ? (size_t)n + 1 : 1);
  if (!d) abort();
  vsnprintf(d, n > 0 ? (size_t)n + 1 : 1, fmt, ap2);
  va_end(ap2);
  if (n <= 0) d[0] = 0;
  return d;
}

/* ---- type and error conversion ---- */

static int dtype_from_hlo(hlo_type t) {
  switch (t) {
  case HLO_PRED: return KILN_DTYPE_PRED;
  case HLO_S8: return KILN_DTYPE_S8;
  case HLO_S16: return KILN_DTYPE_S16;
  case HLO_S32: return KILN_DTYPE_S32;
  case HLO_S64: return KILN_DTYPE_S64;
  case HLO_U8: return KILN_DTYPE_U8;
  case HLO_U16: return KILN_DTYPE_U16;
  case HLO_U32: return KILN_DTYPE_U32;
  case HLO_U64: return KILN_DTYPE_U64;
  case HLO_F16: return KILN_DTYPE_F16;
  case HLO_BF16: return KILN_DTYPE_BF16;
  case HLO_F32: return KILN_DTYPE_F32;
  case HLO_F64: return KILN_DTYPE_F64;
  default: return 0;
  }
}

/* kiln has no code for UNAVAILABLE (a device that went away): it is the device's
 * failure, INTERNAL, like any other code the host does not know. */
static kiln_code code_from_plugin(int code) {
  switch (code) {
  case KILN_PLUGIN_ERR_INVALID_ARGUMENT: return KILN_INVALID_ARGUMENT;
  case KILN_PLUGIN_ERR_NOT_FOUND: return KILN_NOT_FOUND;
  case KILN_PLUGIN_ERR_UNIMPLEMENTED: return KILN_UNIMPLEMENTED;
  case KILN_PLUGIN_ERR_OUT_OF_RANGE: return KILN_OUT_OF_RANGE;
  case KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED: return KILN_RESOURCE_EXHAUSTED;
  default: return KILN_INTERNAL;
  }
}

static const char *plugin_code_name(int code) {
  switch (code) {
  case KILN_PLUGIN_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case KILN_PLUGIN_ERR_NOT_FOUND: return "NOT_FOUND";
  case KILN_PLUGIN_ERR_UNIMPLEMENTED: return "UNIMPLEMENTED";
  case KILN_PLUGIN_ERR_OUT_OF_RANGE: return "OUT_OF_RANGE";
  case KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
  case KILN_PLUGIN_ERR_INTERNAL: return "INTERNAL";
  case KILN_PLUGIN_ERR_UNAVAILABLE: return "UNAVAILABLE";
  default: return "unknown code";
  }
}

/* Turns a plugin error into a status "device NAME: WHAT: MESSAGE" (the plugin's code
 * kept) and releases it. */
static kiln_status take_error(const kiln_plugin_api *api, kiln_plugin_error *err, const char *device,
                              const char *what) {
  const char *msg = api->error_message(err);
  kiln_status s = status_error(code_from_plugin(api->error_code(err)), "device %s: %s: %s", device, what,
                               msg && *msg ? msg : "(no message)");
  api->error_destroy(err);
  return s;
}

/* ---- the backend adapter ---- */

static plugin_device *device_of(const backend *b) { return (plugin_device *)(void *)b; }

/* A query that fails says "no": the placer then puts the instruction elsewhere. */
static bool query_ok(const kiln_plugin_api *api, kiln_plugin_error *err, int supported) {
  if (err) {
    api->error_destroy(err);
    return false;
  }
  return supported != 0;
}

static bool adapter_supports(const backend *b, const hlo_instr *ins) {
  plugin_device *d = device_of(b);
  plugin *p = d->owner;
  const kiln_plugin_api *api = &p->api;
  /* The ABI has no dtypes for the narrow types (hlo/types.h): what takes or gives them
   * stays on kiln's own devices. */
  if (hlo_type_is_narrow(ins->shape.type)) return false;
  for (int k = 0; k < ins->n_operands; k++)
    if (hlo_type_is_narrow(ins->operands[k]->shape.type)) return false;
  if (api->op_supported) {
    kiln_plugin_op_supported_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.client = p->client;
    a.device = d->index;
    a.opcode = hlo_opcode_name(ins->op);
    a.dtype = dtype_from_hlo(ins->shape.type);
    kiln_plugin_error *err = api->op_supported(&a);
    if (!query_ok(api, err, a.supported)) return false;
  }
  if (api->instruction_supported) {
    strbuf t;
    strbuf_init(&t);
    hlo_print_instr(&t, ins, NULL);
    kiln_plugin_instruction_supported_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.client = p->client;
    a.device = d->index;
    a.hlo_text = strbuf_cstr(&t);
    a.hlo_text_len = t.len;
    kiln_plugin_error *err = api->instruction_supported(&a);
    bool ok = query_ok(api, err, a.supported);
    strbuf_free(&t);
    if (!ok) return false;
  }
  return true;
}

static kiln_status check_module_fits_abi(const plugin_device *d, const hlo_module *m) {
  const hlo_computation *e = m->entry;
  if (!e) return ERR_UNIMPLEMENTED("device %s: module has no entry computation", d->name);
  for (int i = 0; i < e->n_params; i++)
    if (!shape_is_array(&e->params[i]->shape) || !dtype_from_hlo(e->params[i]->shape.type))
      return ERR_UNIMPLEMENTED("device %s: entry parameter %d is %s, which the plugin ABI cannot pass (arrays of "
                               "pred, 8- to 64-bit integers, f16, bf16, f32, f64)",
                               d->name, i, hlo_type_name(e->params[i]->shape.type));
  const hlo_shape *r = &e->root->shape;
  if (shape_is_tuple(r)) {
    for (int i = 0; i < r->n_elems; i++)
      if (!shape_is_array(&r->elems[i]) || !dtype_from_hlo(r->elems[i].type))
        return ERR_UNIMPLEMENTED("device %s: nested or non-array result %d", d->name, i);
  } else if (!shape_is_array(r) || !dtype_from_hlo(r->type)) {
    return ERR_UNIMPLEMENTED("device %s: the root is not an array", d->name);
  }
  return NULL;
}

static bool is_resident_constant(const hlo_instr *ins) {
  return ins->op == HLO_OP_CONSTANT && ins->literal && shape_is_array(&ins->shape) &&
         dtype_from_hlo(ins->shape.type) && shape_byte_size(&ins->shape) >= PLUGIN_RESIDENT_CONSTANT_MIN_BYTES;
}

/* The module the plugin gets: m itself when its entry has no large constant, else a
 * clone (m is the caller's and stays untouched) in which each large constant became a
 * parameter numbered after the caller's. consts[0..*n_consts) are those constants'
 * literals (owned by *printed). */
static kiln_status hoist_constants(const hlo_module *m, hlo_module **printed, const hlo_literal ***consts,
                                   int *n_consts) {
  *printed = NULL;
  *consts = NULL;
  *n_consts = 0;
  int n = 0;
  for (int i = 0; i < m->entry->n_instrs; i++) n += is_resident_constant(m->entry->instrs[i]);
  if (n == 0) return NULL;
  hlo_module *c = NULL;
  TRY(hlo_module_clone(m, &c));
  const hlo_literal **lits = calloc((size_t)n, sizeof *lits);
  if (!lits) abort();
  hlo_computation *e = c->entry;
  int k = 0;
  for (int i = 0; i < e->n_instrs && k < n; i++) {
    hlo_instr *ins = e->instrs[i];
    if (!is_resident_constant(ins)) continue;
    /* The literal stays in the clone's owned_literals, so it lives (and is freed) with
     * the clone; a parameter prints no literal. */
    lits[k] = ins->literal;
    ins->op = HLO_OP_PARAMETER;
    ins->parameter_number = m->entry->n_params + k;
    ins->literal = NULL;
    k++;
  }
  kiln_status s = hlo_computation_index_params(e);
  if (s) {
    free(lits);
    hlo_module_free(c);
    return status_wrap(s, "hoisting large constants");
  }
  *printed = c;
  *consts = lits;
  *n_consts = k;
  return NULL;
}

/* Copies an array literal into a new buffer on device d. A plugin failure is left in
 * *perr (the caller decides how to report it); a host-side refusal is the status. */
static kiln_status upload_raw(plugin_device *d, const hlo_literal *lit, kiln_plugin_buffer **out,
                              kiln_plugin_error **perr) {
  plugin *p = d->owner;
  *perr = NULL;
  if (!shape_is_array(&lit->shape) || !dtype_from_hlo(lit->shape.type) || lit->shape.rank > KILN_PLUGIN_MAX_RANK)
    return ERR_INVALID("device %s: a %s value cannot be passed to a plugin (arrays of the ABI's types only)", d->name,
                       hlo_type_name(lit->shape.type));
  size_t dims[KILN_PLUGIN_MAX_RANK];
  for (int k = 0; k < lit->shape.rank; k++) dims[k] = (size_t)lit->shape.dims[k];
  kiln_plugin_buffer_from_host_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = p->client;
  a.device = d->index;
  a.dtype = dtype_from_hlo(lit->shape.type);
  a.dims = dims;
  a.rank = (size_t)lit->shape.rank;
  a.data = lit->data;
  a.n_bytes = (size_t)shape_byte_size(&lit->shape);
  *perr = p->api.buffer_from_host(&a);
  if (*perr) {
    if (a.buffer) p->api.buffer_destroy(p->client, a.buffer);
    return NULL;
  }
  if (!a.buffer) return status_error(KILN_INTERNAL, "device %s: buffer_from_host returned no buffer", d->name);
  *out = a.buffer;
  return NULL;
}

static kiln_status upload(plugin_device *d, const hlo_literal *lit, kiln_plugin_buffer **out) {
  kiln_plugin_error *err = NULL;
  TRY(upload_raw(d, lit, out, &err));
  return err ? take_error(&d->owner->api, err, d->name, "copying an array to the device") : NULL;
}

static void release(plugin_device *d, kiln_plugin_buffer *b) {
  if (b) d->owner->api.buffer_destroy(d->owner->client, b);
}

/* A failed compile (or constant upload) as the caller sees it, from the plugin's code
 * and message: UNIMPLEMENTED stays UNIMPLEMENTED ("not on this device"); anything else
 * is the run's failure with the plugin's code, or, with allow_plugin_fallback, a
 * warning and UNIMPLEMENTED so the caller places the work elsewhere. */
static kiln_status compile_failure(plugin_device *d, int plugin_code, const char *msg,
                                   const backend_compile_options *copts) {
  if (!msg || !*msg) msg = "(no message)";
  if (plugin_code == KILN_PLUGIN_ERR_UNIMPLEMENTED)
    return status_error(KILN_UNIMPLEMENTED, "device %s: cannot compile this module: %s", d->name, msg);
  if (!copts || !copts->allow_plugin_fallback)
    return status_error(code_from_plugin(plugin_code), "device %s: compile failed: %s", d->name, msg);
  /* A model's op-by-op fallback compiles many small modules on the same device: warn
   * once per device, then note the rest at info level. */
  if (!__atomic_exchange_n(&d->fallback_warned, 1, __ATOMIC_RELAXED))
    log_warning("device %s: compile failed (%s): %s; falling back to the next device (--allow_plugin_fallback)",
                d->name, plugin_code_name(plugin_code), msg);
  else
    log_info("device %s: compile failed (%s): %s; falling back to the next device (--allow_plugin_fallback)", d->name,
             plugin_code_name(plugin_code), msg);
  return status_error(KILN_UNIMPLEMENTED, "device %s: compile failed (%s): %s", d->name, plugin_code_name(plugin_code),
                      msg);
}

/* compile_failure for a plugin error (released here). */
static kiln_status compile_error(plugin_device *d, kiln_plugin_error *err, const backend_compile_options *copts) {
  const kiln_plugin_api *api = &d->owner->api;
  kiln_status s = compile_failure(d, api->error_code(err), api->error_message(err), copts);
  api->error_destroy(err);
  return s;
}

static void free_executable(backend_executable *x) {
  if (!x) return;
  plugin *p = x->dev->owner;
  for (int i = 0; i < x->n_resident; i++) release(x->dev, x->resident[i]);
  if (x->exe) p->api.executable_destroy(p->client, x->exe);
  free(x->resident);
  free(x->result_shapes);
  free(x);
}

static kiln_status adapter_compile(const backend *b, const hlo_module *m, const backend_compile_options *copts,
                                   backend_executable **out) {
  plugin_device *d = device_of(b);
  plugin *p = d->owner;
  const kiln_plugin_api *api = &p->api;
  TRY(check_module_fits_abi(d, m));
  /* Compile options (plugin.h): the module name, then the caller's plugin options. */
  int n_user = copts && copts->n_plugin_options > 0 ? copts->n_plugin_options : 0;
  kiln_plugin_option *opts = calloc((size_t)n_user + 1, sizeof *opts);
  char **keys = calloc((size_t)n_user + 1, sizeof *keys);
  if (!opts || !keys) abort();
  opts[0] = (kiln_plugin_option){sizeof(kiln_plugin_option), "kiln.module", m->name};
  kiln_status s = NULL;
  for (int i = 0; i < n_user && !s; i++) {
    const char *kv = copts->plugin_options[i];
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv) {
      s = status_error(KILN_INVALID_ARGUMENT, "--plugin_option '%s' is not KEY=VALUE", kv ? kv : "(null)");
      break;
    }
    keys[i] = strndup(kv, (size_t)(eq - kv));
    if (!keys[i]) abort();
    opts[i + 1] = (kiln_plugin_option){sizeof(kiln_plugin_option), keys[i], eq + 1};
  }
  hlo_module *hoisted = NULL;
  const hlo_literal **consts = NULL;
  int n_consts = 0;
  if (!s) s = hoist_constants(m, &hoisted, &consts, &n_consts);
  char *text = s ? NULL : hlo_module_to_string(hoisted ? hoisted : m, NULL);
  kiln_plugin_compile_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = p->client;
  a.device = d->index;
  a.format = KILN_PLUGIN_FORMAT_HLO_TEXT;
  a.module = text;
  a.module_len = text ? strlen(text) : 0;
  a.options = opts;
  a.n_options = (size_t)n_user + 1;
  kiln_plugin_error *err = s ? NULL : api->compile(&a);
  free(text);
  for (int i = 0; i < n_user; i++) free(keys[i]);
  free(keys);
  free(opts);
  if (s) {
    free(consts);
    hlo_module_free(hoisted);
    return s;
  }
  if (err || !a.executable) {
    s = err ? compile_error(d, err, copts)
            : compile_failure(d, KILN_PLUGIN_ERR_INTERNAL, "the plugin returned no executable", copts);
    if (a.executable) api->executable_destroy(p->client, a.executable);
    free(consts);
    hlo_module_free(hoisted);
    return s;
  }
  backend_executable *x = calloc(1, sizeof *x);
  if (!x) abort();
  x->dev = d;
  x->exe = a.executable;
  x->n_params = m->entry->n_params;
  const hlo_shape *r = &m->entry->root->shape;
  x->root_is_tuple = shape_is_tuple(r);
  x->n_results = x->root_is_tuple ? r->n_elems : 1;
  x->result_shapes = calloc(x->n_results ? (size_t)x->n_results : 1, sizeof(hlo_shape));
  x->resident = calloc(n_consts ? (size_t)n_consts : 1, sizeof *x->resident);
  if (!x->result_shapes || !x->resident) abort();
  for (int i = 0; i < x->n_results; i++) {
    x->result_shapes[i] = x->root_is_tuple ? r->elems[i] : *r;
    x->result_shapes[i].layout_extra = NULL;
    x->result_shapes[i].n_elems = 0;
    x->result_shapes[i].elems = NULL;
  }
  for (int i = 0; i < n_consts && !s && !err; i++) {
    s = upload_raw(d, consts[i], &x->resident[i], &err);
    if (!s && !err) {
      x->n_resident = i + 1;
      x->resident_bytes += shape_byte_size(&consts[i]->shape);
    }
  }
  free(consts);
  hlo_module_free(hoisted);
  if (s || err) {
    free_executable(x);
    if (s) return s; /* the host's own check, not the plugin's */
    /* Uploading the weights is part of compiling: its failure is judged the same way. */
    return compile_error(d, err, copts);
  }
  *out = x;
  return NULL;
}

/* Asks the plugin for buf's shape and sets *same to whether it is the array shape want
 * (type and dims). `what` names the buffer in a plugin error. */
static kiln_status buffer_has_shape(plugin_device *d, const kiln_plugin_buffer *buf, const hlo_shape *want,
                                    const char *what, bool *same) {
  plugin *p = d->owner;
  kiln_plugin_buffer_shape_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = p->client;
  a.buffer = buf;
  kiln_plugin_error *err = p->api.buffer_shape(&a);
  if (err) return take_error(&p->api, err, d->name, what);
  *same = shape_is_array(want) && a.dtype == dtype_from_hlo(want->type) && a.rank == (size_t)want->rank;
  for (size_t k = 0; *same && k < a.rank; k++) *same = a.dims[k] == (size_t)want->dims[k];
  return NULL;
}

/* Checks that buf has result i's shape. */
static kiln_status check_result_shape(backend_executable *x, int i, const kiln_plugin_buffer *buf) {
  plugin_device *d = x->dev;
  const hlo_shape *want = &x->result_shapes[i];
  bool same = false;
  TRY(buffer_has_shape(d, buf, want, "reading a result's shape", &same));
  if (!same) {
    char *w = shape_to_string(want);
    kiln_status s = status_error(KILN_INTERNAL, "device %s: result %d has the wrong shape (expected %s)", d->name, i, w);
    free(w);
    return s;
  }
  return NULL;
}

/* Copies buf into dst (n_bytes, the size of the shape the caller checked). */
static kiln_status download(plugin_device *d, const kiln_plugin_buffer *buf, void *dst, size_t n_bytes) {
  plugin *p = d->owner;
  kiln_plugin_buffer_to_host_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = p->client;
  a.buffer = buf;
  a.dst = dst;
  a.n_bytes = n_bytes;
  kiln_plugin_error *err = p->api.buffer_to_host(&a);
  return err ? take_error(&p->api, err, d->name, "copying a result to the host") : NULL;
}

/* Runs x on the caller's n_args arguments plus the resident constants. On success
 * res[0..x->n_results) hold the results, checked for count and shape; on failure
 * nothing is left in res. donated: NULL or n_args flags (never offered to an adapted
 * ABI-1 plugin, and never for the resident constants, which later runs need). */
static kiln_status run(backend_executable *x, kiln_plugin_buffer *const *args, int n_args, const bool *donated,
                       kiln_plugin_buffer **res) {
  plugin_device *d = x->dev;
  plugin *p = d->owner;
  if (n_args != x->n_params)
    return ERR_INVALID("device %s: %d arguments for an executable of %d parameters", d->name, n_args, x->n_params);
  int n_all = n_args + x->n_resident;
  kiln_plugin_buffer **all = calloc(n_all ? (size_t)n_all : 1, sizeof *all);
  int *flags = calloc(n_all ? (size_t)n_all : 1, sizeof *flags);
  if (!all || !flags) abort();
  bool any_donated = false;
  for (int i = 0; i < n_args; i++) {
    all[i] = args[i];
    flags[i] = donated && donated[i] && !p->adapted;
    any_donated = any_donated || flags[i];
  }
  for (int i = 0; i < x->n_resident; i++) all[n_args + i] = x->resident[i];
  kiln_plugin_execute_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.client = p->client;
  a.executable = x->exe;
  a.args = all;
  a.n_args = (size_t)n_all;
  a.donated = any_donated ? flags : NULL;
  a.results = res;
  a.max_results = (size_t)x->n_results;
  kiln_status s = NULL;
  kiln_plugin_error *err = p->api.execute(&a);
  free(all);
  free(flags);
  size_t n_res = a.n_results > (size_t)x->n_results ? (size_t)x->n_results : a.n_results; /* never past res */
  if (err) s = take_error(&p->api, err, d->name, "execute failed");
  else if (a.n_results != (size_t)x->n_results)
    s = status_error(KILN_INTERNAL, "device %s: execute returned %zu results, expected %d", d->name, a.n_results,
                     x->n_results);
  for (int i = 0; i < x->n_results && !s; i++)
    s = res[i] ? check_result_shape(x, i, res[i])
               : status_error(KILN_INTERNAL, "device %s: execute returned a NULL result", d->name);
  if (s) {
    for (size_t i = 0; i < n_res; i++) release(d, res[i]);
    for (int i = 0; i < x->n_results; i++) res[i] = NULL;
  }
  return s;
}

static kiln_status adapter_execute(backend_executable *x, hlo_literal *const *args, int n_args, hlo_literal **out) {
  plugin_device *d = x->dev;
  kiln_status s = NULL;
  kiln_plugin_buffer **bufs = calloc(n_args > 0 ? (size_t)n_args : 1, sizeof *bufs);
  kiln_plugin_buffer **res = calloc((size_t)x->n_results + 1, sizeof *res);
  hlo_literal **lits = calloc((size_t)x->n_results + 1, sizeof *lits);
  if (!bufs || !res || !lits) abort();
  for (int i = 0; i < n_args && !s; i++) {
    s = upload(d, args[i], &bufs[i]);
    if (s) s = status_wrap(s, "argument %d", i);
  }
  if (!s) s = run(x, bufs, n_args, NULL, res);
  for (int i = 0; i < x->n_results && !s; i++) {
    s = literal_create(&x->result_shapes[i], &lits[i]);
    if (!s) s = download(d, res[i], lits[i]->data, (size_t)shape_byte_size(&x->result_shapes[i]));
  }
  for (int i = 0; i < n_args; i++) release(d, bufs[i]);
  for (int i = 0; i < x->n_results; i++) release(d, res[i]);
  free(bufs);
  free(res);
  if (s) {
    for (int i = 0; i < x->n_results; i++) literal_free(lits[i]);
    free(lits);
    return s;
  }
  *out = x->root_is_tuple ? literal_tuple(x->n_results, lits) : lits[0];
  free(lits);
  return NULL;
}

static void adapter_destroy(backend_executable *x) { free_executable(x); }

/* ---- device memory ---- */

static kiln_status adapter_buffer_upload(const backend *b, const hlo_literal *lit, void **handle) {
  kiln_plugin_buffer *buf = NULL;
  TRY(upload(device_of(b), lit, &buf));
  *handle = buf;
  return NULL;
}

static kiln_status adapter_buffer_download(const backend *b, void *handle, hlo_literal *dst) {
  plugin_device *d = device_of(b);
  bool same = false;
  TRY(buffer_has_shape(d, handle, &dst->shape, "reading a buffer's shape", &same));
  if (!same) {
    char *w = shape_to_string(&dst->shape);
    kiln_status s = ERR_INVALID("device %s: the buffer does not have the destination's shape %s", d->name, w);
    free(w);
    return s;
  }
  return download(d, handle, dst->data, (size_t)shape_byte_size(&dst->shape));
}

static void adapter_buffer_free(const backend *b, void *handle) { release(device_of(b), handle); }

static kiln_status adapter_execute_buffers(backend_executable *x, void *const *args, int n_args, const bool *donated,
                                           bool *consumed, void **results, int n_results) {
  plugin_device *d = x->dev;
  if (n_results != x->n_results)
    return ERR_INVALID("device %s: room for %d results, the executable has %d", d->name, n_results, x->n_results);
  kiln_plugin_buffer **res = calloc((size_t)x->n_results + 1, sizeof *res);
  if (!res) abort();
  kiln_status s = run(x, (kiln_plugin_buffer *const *)args, n_args, donated, res);
  /* A donated argument belongs to the plugin once execute was called, whether or not
   * it reused the memory and whether or not the run succeeded (plugin.h): the caller
   * may only free its handle. The ABI-1 shim is never offered donation. */
  if (consumed)
    for (int i = 0; i < n_args; i++) consumed[i] = donated && donated[i] && !d->owner->adapted && n_args == x->n_params;
  if (!s)
    for (int i = 0; i < x->n_results; i++) results[i] = res[i];
  free(res);
  return s;
}

static int64_t adapter_resident_bytes(const backend_executable *x) { return x ? x->resident_bytes : 0; }

/* ---- exported-symbol audit ---- */

/* Counts the defined, visible dynamic symbols of an ELF64 file other than the entry
 * symbol, and names the first in `first`. A plugin that leaks symbols (typically a
 * statically linked library built without hidden visibility) still works under
 * RTLD_LOCAL, but is flagged so its vendor fixes the build. Anything that is not a
 * well-formed ELF64 file counts as 0: dlopen is the judge of loadability. */
static int count_foreign_exports(const char *path, char *first, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
    close(fd);
    return 0;
  }
  size_t size = (size_t)st.st_size;
  const unsigned char *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return 0;
  int count = 0;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
      (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
    goto done;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr *sym = &sh[i], *str = &sh[sym->sh_link];
    if (sym->sh_offset > size || sym->sh_size > size - sym->sh_offset || str->sh_offset > size ||
        str->sh_size > size - str->sh_offset || sym->sh_entsize != sizeof(Elf64_Sym))
      goto done;
    const Elf64_Sym *syms = (const Elf64_Sym *)(const void *)(base + sym->sh_offset);
    const char *names = (const char *)base + str->sh_offset;
    size_t n = sym->sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < n; k++) {
      const Elf64_Sym *y = &syms[k];
      int bind = ELF64_ST_BIND(y->st_info), type = ELF64_ST_TYPE(y->st_info);
      if (y->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)) continue;
      if (type == STT_SECTION || type == STT_FILE) continue;
      int vis = ELF64_ST_VISIBILITY(y->st_other);
      if (vis != STV_DEFAULT && vis != STV_PROTECTED) continue;
      if (y->st_name >= str->sh_size || !memchr(names + y->st_name, 0, str->sh_size - y->st_name)) continue;
      const char *name = names + y->st_name;
      if (!*name || strcmp(name, KILN_PLUGIN_INIT_SYMBOL) == 0) continue;
      if (count++ == 0) snprintf(first, cap, "%s", name);
    }
    break;
  }
done:
  munmap((void *)base, size);
  return count;
}

/* ---- loading ---- */

static void fail(plugin *p, char *reason) {
  free(p->reason);
  p->reason = reason;
}

static void add_note(plugin *p, char *note) {
  if (!note) return;
  if (!p->note) {
    p->note = note;
    return;
  }
  char *both = format_str("%s; %s", p->note, note);
  free(p->note);
  free(note);
  p->note = both;
}

/* The client's log callback: the plugin's messages go to kiln's log, prefixed with the
 * plugin's name. DEBUG and INFO are info (shown with --v=1). */
static void host_log(void *host_data, int level, const char *message) {
  const plugin *p = host_data;
  const char *name = p && p->manifest_ok ? p->manifest.name : "?";
  if (!message) message = "";
  if (level >= KILN_PLUGIN_LOG_ERROR) log_error("plugin %s: %s", name, message);
  else if (level == KILN_PLUGIN_LOG_WARNING) log_warning("plugin %s: %s", name, message);
  else log_info("plugin %s: %s", name, message);
}

/* Checks an ABI-2 table and copies it into p->api (zero-extended). */
static bool check_table(plugin *p, const kiln_plugin_api *t) {
  size_t mandatory_end = offsetof(kiln_plugin_api, buffer_destroy) + sizeof t->buffer_destroy;
  if (t->struct_size < mandatory_end) {
    fail(p, format_str("function table too small (%zu bytes; the mandatory entries need %zu)", t->struct_size,
                       mandatory_end));
    return false;
  }
  size_t n = t->struct_size < sizeof p->api ? t->struct_size : sizeof p->api;
  memset(&p->api, 0, sizeof p->api);
  memcpy(&p->api, t, n);
  if (t->struct_size < sizeof p->api)
    add_note(p, format_str("older plugin table (%zu bytes, host %zu): newer optional entries unused", t->struct_size,
                           sizeof p->api));
  if (p->api.api_major != KILN_PLUGIN_API_MAJOR) {
    fail(p, format_str("the plugin's table says ABI %d.%d, its manifest says %d.x", p->api.api_major,
                       p->api.api_minor, KILN_PLUGIN_API_MAJOR));
    return false;
  }
  const kiln_plugin_api *a = &p->api;
  const char *missing = !a->error_code          ? "error_code"
                        : !a->error_message      ? "error_message"
                        : !a->error_destroy      ? "error_destroy"
                        : !a->client_create      ? "client_create"
                        : !a->client_destroy     ? "client_destroy"
                        : !a->device_count       ? "device_count"
                        : !a->device_info        ? "device_info"
                        : !a->compile            ? "compile"
                        : !a->executable_destroy ? "executable_destroy"
                        : !a->execute            ? "execute"
                        : !a->buffer_from_host   ? "buffer_from_host"
                        : !a->buffer_to_host     ? "buffer_to_host"
                        : !a->buffer_shape       ? "buffer_shape"
                        : !a->buffer_destroy     ? "buffer_destroy"
                                                 : NULL;
  if (missing) {
    fail(p, format_str("mandatory entry %s is NULL", missing));
    return false;
  }
  return true;
}

static bool fail_with_error(plugin *p, kiln_plugin_error *err, const char *what) {
  kiln_status s = take_error(&p->api, err, p->manifest.name, what);
  fail(p, dup_str(kiln_status_message(s)));
  kiln_status_free(s);
  return false;
}

/* ABI 2: init, the table, then one client with the host's callbacks. The user's
 * --plugin_option pairs are not known when the registry loads a plugin (discovery is
 * lazy and shared by every caller), so client_create gets none; they reach the plugin
 * with every compile. */
static bool open_v2(plugin *p, void *sym) {
  kiln_plugin_init_fn init;
  memcpy(&init, &sym, sizeof init); /* POSIX guarantees object and function pointers convert */
  const kiln_plugin_api *table = NULL;
  kiln_plugin_error *err = init(&table);
  if (err) {
    if (table && table->struct_size >= offsetof(kiln_plugin_api, client_create) && table->error_message &&
        table->error_destroy) {
      const char *msg = table->error_message(err);
      fail(p, format_str("init failed: %s", msg && *msg ? msg : "(no message)"));
      table->error_destroy(err);
    } else {
      fail(p, dup_str("init failed (no error table to read the message)"));
    }
    return false;
  }
  if (!table) {
    fail(p, dup_str("init returned no function table"));
    return false;
  }
  if (!check_table(p, table)) return false;
  memset(&p->host, 0, sizeof p->host);
  p->host.struct_size = sizeof p->host;
  p->host.api_major = KILN_PLUGIN_API_MAJOR;
  p->host.api_minor = KILN_PLUGIN_API_MINOR;
  p->host.host_version = "kiln";
  p->host.manifest_path = p->manifest.path;
  p->host.host_data = p;
  p->host.log = host_log;
  kiln_plugin_client_create_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.host = &p->host;
  err = p->api.client_create(&a);
  if (err) {
    if (a.client) p->api.client_destroy(a.client);
    return fail_with_error(p, err, "client_create failed");
  }
  if (!a.client) {
    fail(p, dup_str("client_create returned no client"));
    return false;
  }
  p->client = a.client;
  return true;
}

static bool load_devices(plugin *p) {
  kiln_plugin_device_count_args c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.client = p->client;
  kiln_plugin_error *err = p->api.device_count(&c);
  if (err) return fail_with_error(p, err, "device_count failed");
  int n = c.n_devices;
  if (n < 1 || n > 1024) {
    fail(p, format_str("device_count returned %d", n));
    return false;
  }
  p->devices = calloc((size_t)n, sizeof *p->devices);
  if (!p->devices) abort();
  for (int i = 0; i < n; i++) {
    kiln_plugin_device_info_args info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.client = p->client;
    info.device = i;
    err = p->api.device_info(&info);
    if (err) return fail_with_error(p, err, "device_info failed");
    if (!info.name || !*info.name) {
      fail(p, format_str("device %d has no name", i));
      return false;
    }
    plugin_device *d = &p->devices[i];
    d->owner = p;
    d->index = i;
    d->name = dup_str(info.name);
    if (info.memory_bytes)
      d->description = format_str("plugin %s: %s (%zu MiB)", p->manifest.name, info.description ? info.description : "",
                                   info.memory_bytes >> 20);
    else
      d->description = format_str("plugin %s: %s", p->manifest.name, info.description ? info.description : "");
    d->b.name = d->name;
    d->b.priority = p->manifest.priority;
    d->b.description = d->description;
    d->b.supports = adapter_supports;
    d->b.compile = adapter_compile;
    d->b.execute = adapter_execute;
    d->b.destroy = adapter_destroy;
    d->b.buffer_upload = adapter_buffer_upload;
    d->b.buffer_download = adapter_buffer_download;
    d->b.buffer_free = adapter_buffer_free;
    d->b.execute_buffers = adapter_execute_buffers;
    d->b.resident_bytes = adapter_resident_bytes;
    p->n_devices = i + 1;
  }
  return true;
}

static void open_library(plugin *p) {
  const plugin_manifest *m = &p->manifest;
  int host_minor = m->abi_major == KILN_PLUGIN_API_MAJOR ? KILN_PLUGIN_API_MINOR : KILN_PLUGIN_V1_API_MINOR;
  if (m->abi_major != KILN_PLUGIN_API_MAJOR && m->abi_major != KILN_PLUGIN_V1_API_MAJOR) {
    fail(p, format_str("incompatible ABI major %d (host speaks %d.%d and adapts %d.%d); not loaded", m->abi_major,
                       KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR, KILN_PLUGIN_V1_API_MAJOR,
                       KILN_PLUGIN_V1_API_MINOR));
    return;
  }
  if (m->abi_minor > host_minor) {
    fail(p, format_str("ABI %d.%d is newer than the host's %d.%d; not loaded", m->abi_major, m->abi_minor,
                       m->abi_major, host_minor));
    return;
  }
  if (access(m->library, R_OK) != 0) {
    fail(p, format_str("library %s is missing; not loaded", m->library));
    return;
  }
  dlerror();
  p->dl = dlopen(m->library, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *e = dlerror();
    fail(p, format_str("dlopen failed: %s", e ? e : "unknown error"));
    return;
  }
  void *sym = dlsym(p->dl, KILN_PLUGIN_INIT_SYMBOL);
  if (!sym) {
    fail(p, format_str("library %s does not export %s", m->library, KILN_PLUGIN_INIT_SYMBOL));
    return;
  }
  if (m->abi_major == KILN_PLUGIN_V1_API_MAJOR) {
    char *note = NULL;
    char *reason = plugin_v1_open(sym, m->path, &p->api, &p->client, &note);
    add_note(p, note);
    if (reason) {
      fail(p, reason);
      return;
    }
    p->adapted = true;
  } else if (!open_v2(p, sym)) {
    return;
  }
  char leaked[128];
  int n_leaked = count_foreign_exports(m->library, leaked, sizeof leaked);
  if (n_leaked > 0) {
    char *note = format_str("exports %d symbol%s besides %s (first: %s); build it with -fvisibility=hidden", n_leaked,
                            n_leaked == 1 ? "" : "s", KILN_PLUGIN_INIT_SYMBOL, leaked);
    log_warning("plugin %s %s", m->name, note);
    add_note(p, note);
  }
  load_devices(p);
}

/* Releases the devices, the client and the library (in that order: the client's
 * destroy is code in the library). */
static void unload(plugin *p) {
  for (int i = 0; i < p->n_devices; i++) {
    free(p->devices[i].name);
    free(p->devices[i].description);
  }
  free(p->devices);
  p->devices = NULL;
  p->n_devices = 0;
  if (p->client) p->api.client_destroy(p->client);
  p->client = NULL;
  if (p->dl) dlclose(p->dl);
  p->dl = NULL;
}

plugin *plugin_load(const char *manifest_path) {
  plugin *p = calloc(1, sizeof *p);
  if (!p) abort();
  p->path = dup_str(manifest_path);
  kiln_status s = plugin_manifest_read(manifest_path, &p->manifest);
  if (s) {
    fail(p, format_str("bad manifest: %s", kiln_status_message(s)));
    kiln_status_free(s);
    return p;
  }
  p->manifest_ok = true;
  open_library(p);
  if (p->reason) unload(p);
  snprintf(p->abi, sizeof p->abi, "%d.%d%s", p->manifest.abi_major, p->manifest.abi_minor,
           p->adapted && !p->reason ? " (adapted)" : "");
  return p;
}

void plugin_free(plugin *p) {
  if (!p) return;
  unload(p);
  plugin_manifest_free(&p->manifest);
  free(p->path);
  free(p->reason);
  free(p->note);
  free(p);
}

const char *plugin_name(const plugin *p) { return p->manifest_ok ? p->manifest.name : p->path; }
const char *plugin_manifest_path(const plugin *p) { return p->path; }
const plugin_manifest *plugin_get_manifest(const plugin *p) { return p->manifest_ok ? &p->manifest : NULL; }
const char *plugin_reason(const plugin *p) { return p->reason; }
const char *plugin_note(const plugin *p) { return p->note; }

const char *plugin_abi(const plugin *p) { return p->abi[0] ? p->abi : "?"; }

int plugin_device_count(const plugin *p) {
  if (!p->reason) return p->n_devices;
  return p->manifest_ok ? p->manifest.n_devices : 0;
}

const char *plugin_device_name(const plugin *p, int i) {
  return !p->reason ? p->devices[i].name : p->manifest.devices[i];
}

const backend *plugin_device_backend(const plugin *p, int i) { return p->reason ? NULL : &p->devices[i].b; }
