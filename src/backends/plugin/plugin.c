/* The plugin loader and the backend adapter.
 *
 * The loader judges a plugin by its manifest before touching the library, then dlopens
 * it (RTLD_LOCAL so its symbols never interpose on kiln's, RTLD_NOW so an unresolved
 * symbol fails here and not in the middle of a run), calls kiln_plugin_init and copies
 * the returned table into a host-sized, zeroed struct: an older plugin's shorter table
 * then simply reads as NULL optional entries. Every plugin call is wrapped so that a
 * plugin error becomes a kiln_status naming the device, and the plugin's error object
 * is released through the plugin's own error_destroy. */
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
#include "hlo/printer.h"

typedef struct plugin_device {
  backend b; /* first, so the adapter can get from a backend back to its device */
  plugin *owner;
  int index;
  char *name;
  char *description;
} plugin_device;

struct plugin {
  char *path;
  plugin_manifest manifest;
  bool manifest_ok;
  char *reason;
  char *note;
  void *dl;
  kiln_plugin_api api; /* host-sized copy; entries beyond the plugin's struct_size are NULL */
  bool api_ok;
  int n_devices;
  plugin_device *devices;
};

struct backend_executable {
  plugin_device *dev;
  kiln_plugin_executable *exe;
  bool root_is_tuple;
  int n_results;
  hlo_shape *result_shapes; /* array shapes, one per result */
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
  strbuf b;
  strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  strbuf_append(&b, tmp);
  return strbuf_take(&b);
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

/* Turns a plugin error into a status "device NAME: WHAT: MESSAGE" and releases it. */
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

static bool adapter_supports(const backend *b, const hlo_instr *ins) {
  plugin_device *d = device_of(b);
  const kiln_plugin_api *api = &d->owner->api;
  /* The ABI has no dtypes for the narrow types (hlo/types.h): what takes or gives them
   * stays on kiln's own devices. */
  if (hlo_type_is_narrow(ins->shape.type)) return false;
  for (int k = 0; k < ins->n_operands; k++)
    if (hlo_type_is_narrow(ins->operands[k]->shape.type)) return false;
  if (api->op_supported && !api->op_supported(d->index, hlo_opcode_name(ins->op), dtype_from_hlo(ins->shape.type)))
    return false;
  if (api->instruction_supported) {
    strbuf t;
    strbuf_init(&t);
    hlo_print_instr(&t, ins, NULL);
    bool ok = api->instruction_supported(d->index, strbuf_cstr(&t), t.len) != 0;
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

static kiln_status adapter_compile(const backend *b, const hlo_module *m, const backend_compile_options *copts,
                                   backend_executable **out) {
  plugin_device *d = device_of(b);
  const kiln_plugin_api *api = &d->owner->api;
  TRY(check_module_fits_abi(d, m));
  /* Compile options (plugin.h): the module name, then the caller's plugin options. */
  int n_user = copts && copts->n_plugin_options > 0 ? copts->n_plugin_options : 0;
  kiln_plugin_option *opts = calloc((size_t)n_user + 1, sizeof *opts);
  char **keys = calloc((size_t)n_user + 1, sizeof *keys);
  if (!opts || !keys) abort();
  opts[0] = (kiln_plugin_option){sizeof(kiln_plugin_option), "kiln.module", m->name};
  kiln_status bad = NULL;
  for (int i = 0; i < n_user && !bad; i++) {
    const char *kv = copts->plugin_options[i];
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv) {
      bad = status_error(KILN_INVALID_ARGUMENT, "--plugin_option '%s' is not KEY=VALUE", kv ? kv : "(null)");
      break;
    }
    keys[i] = strndup(kv, (size_t)(eq - kv));
    if (!keys[i]) abort();
    opts[i + 1] = (kiln_plugin_option){sizeof(kiln_plugin_option), keys[i], eq + 1};
  }
  char *text = bad ? NULL : hlo_module_to_string(m, NULL);
  kiln_plugin_executable *pe = NULL;
  kiln_plugin_error *err =
      bad ? NULL
          : api->compile(d->index, KILN_PLUGIN_FORMAT_HLO_TEXT, text, strlen(text), opts, (size_t)n_user + 1, &pe);
  free(text);
  for (int i = 0; i < n_user; i++) free(keys[i]);
  free(keys);
  free(opts);
  if (bad) return bad;
  if (err || !pe) {
    kiln_status s = err ? take_error(api, err, d->name, "compile failed")
                        : status_error(KILN_INTERNAL, "device %s: compile returned no executable", d->name);
    /* Any plugin compile failure lets the caller fall back to another device. */
    kiln_status u = status_error(KILN_UNIMPLEMENTED, "%s", kiln_status_message(s));
    kiln_status_free(s);
    if (pe) api->executable_destroy(pe);
    return u;
  }
  backend_executable *x = calloc(1, sizeof *x);
  if (!x) abort();
  x->dev = d;
  x->exe = pe;
  const hlo_shape *r = &m->entry->root->shape;
  x->root_is_tuple = shape_is_tuple(r);
  x->n_results = x->root_is_tuple ? r->n_elems : 1;
  x->result_shapes = calloc(x->n_results ? (size_t)x->n_results : 1, sizeof(hlo_shape));
  if (!x->result_shapes) abort();
  for (int i = 0; i < x->n_results; i++) {
    x->result_shapes[i] = x->root_is_tuple ? r->elems[i] : *r;
    x->result_shapes[i].layout_extra = NULL;
    x->result_shapes[i].n_elems = 0;
    x->result_shapes[i].elems = NULL;
  }
  *out = x;
  return NULL;
}

static kiln_status result_to_literal(backend_executable *x, int i, kiln_plugin_buffer *buf, hlo_literal **out) {
  plugin_device *d = x->dev;
  const kiln_plugin_api *api = &d->owner->api;
  int dtype = 0;
  size_t dims[KILN_PLUGIN_MAX_RANK];
  size_t rank = 0;
  kiln_plugin_error *err = api->buffer_shape(buf, &dtype, dims, &rank);
  if (err) return take_error(api, err, d->name, "reading a result's shape");
  const hlo_shape *want = &x->result_shapes[i];
  bool same = dtype == dtype_from_hlo(want->type) && rank == (size_t)want->rank;
  for (size_t k = 0; same && k < rank; k++) same = dims[k] == (size_t)want->dims[k];
  if (!same) {
    char *w = shape_to_string(want);
    kiln_status s = status_error(KILN_INTERNAL, "device %s: result %d has the wrong shape (expected %s)", d->name, i, w);
    free(w);
    return s;
  }
  hlo_literal *lit;
  TRY(literal_create(want, &lit));
  err = api->buffer_to_host(buf, lit->data, (size_t)shape_byte_size(want));
  if (err) {
    literal_free(lit);
    return take_error(api, err, d->name, "copying a result to the host");
  }
  *out = lit;
  return NULL;
}

static kiln_status adapter_execute(backend_executable *x, hlo_literal *const *args, int n_args, hlo_literal **out) {
  plugin_device *d = x->dev;
  const kiln_plugin_api *api = &d->owner->api;
  kiln_status s = NULL;
  kiln_plugin_buffer **bufs = calloc(n_args > 0 ? (size_t)n_args : 1, sizeof *bufs);
  kiln_plugin_buffer **res = calloc((size_t)x->n_results + 1, sizeof *res);
  hlo_literal **lits = calloc((size_t)x->n_results + 1, sizeof *lits);
  if (!bufs || !res || !lits) abort();
  for (int i = 0; i < n_args && !s; i++) {
    const hlo_literal *a = args[i];
    if (!shape_is_array(&a->shape) || !dtype_from_hlo(a->shape.type)) {
      s = ERR_INVALID("device %s: argument %d is not an array", d->name, i);
      break;
    }
    size_t dims[KILN_PLUGIN_MAX_RANK];
    for (int k = 0; k < a->shape.rank; k++) dims[k] = (size_t)a->shape.dims[k];
    kiln_plugin_error *err = api->buffer_from_host(d->index, dtype_from_hlo(a->shape.type), dims,
                                                   (size_t)a->shape.rank, a->data,
                                                   (size_t)shape_byte_size(&a->shape), &bufs[i]);
    if (err) s = take_error(api, err, d->name, "copying an argument to the device");
  }
  size_t n_res = 0;
  if (!s) {
    kiln_plugin_error *err = api->execute(x->exe, bufs, (size_t)n_args, res, (size_t)x->n_results, &n_res);
    if (err) s = take_error(api, err, d->name, "execute failed");
    else if (n_res != (size_t)x->n_results)
      s = status_error(KILN_INTERNAL, "device %s: execute returned %zu results, expected %d", d->name, n_res,
                       x->n_results);
  }
  if (n_res > (size_t)x->n_results) n_res = (size_t)x->n_results; /* never read past our array */
  for (int i = 0; i < x->n_results && !s; i++) {
    if (!res[i]) s = status_error(KILN_INTERNAL, "device %s: execute returned a NULL result", d->name);
    else s = result_to_literal(x, i, res[i], &lits[i]);
  }
  for (int i = 0; i < n_args; i++)
    if (bufs[i]) api->buffer_destroy(bufs[i]);
  for (size_t i = 0; i < n_res; i++)
    if (res[i]) api->buffer_destroy(res[i]);
  free(bufs);
  free(res);
  if (s) {
    for (int i = 0; i < x->n_results; i++) literal_free(lits[i]);
    free(lits);
    return s;
  }
  if (x->root_is_tuple) {
    *out = literal_tuple(x->n_results, lits);
  } else {
    *out = lits[0];
  }
  free(lits);
  return NULL;
}

static void adapter_destroy(backend_executable *x) {
  if (!x) return;
  x->dev->owner->api.executable_destroy(x->exe);
  free(x->result_shapes);
  free(x);
}

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
    p->note = format_str("older plugin table (%zu bytes, host %zu): newer optional entries unused", t->struct_size,
                         sizeof p->api);
  if (p->api.api_major != KILN_PLUGIN_API_MAJOR) {
    fail(p, format_str("the plugin's table says ABI %d.%d, host speaks %d.x", p->api.api_major, p->api.api_minor,
                       KILN_PLUGIN_API_MAJOR));
    return false;
  }
  const char *missing = !p->api.error_code          ? "error_code"
                        : !p->api.error_message      ? "error_message"
                        : !p->api.error_destroy      ? "error_destroy"
                        : !p->api.device_count       ? "device_count"
                        : !p->api.device_info        ? "device_info"
                        : !p->api.compile            ? "compile"
                        : !p->api.executable_destroy ? "executable_destroy"
                        : !p->api.execute            ? "execute"
                        : !p->api.buffer_from_host   ? "buffer_from_host"
                        : !p->api.buffer_shape       ? "buffer_shape"
                        : !p->api.buffer_to_host     ? "buffer_to_host"
                        : !p->api.buffer_destroy     ? "buffer_destroy"
                                                     : NULL;
  if (missing) {
    fail(p, format_str("mandatory entry %s is NULL", missing));
    return false;
  }
  return true;
}

static bool load_devices(plugin *p) {
  int n = p->api.device_count();
  if (n < 1 || n > 1024) {
    fail(p, format_str("device_count returned %d", n));
    return false;
  }
  p->devices = calloc((size_t)n, sizeof *p->devices);
  if (!p->devices) abort();
  for (int i = 0; i < n; i++) {
    kiln_plugin_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    kiln_plugin_error *err = p->api.device_info(i, &info);
    if (err) {
      kiln_status s = take_error(&p->api, err, p->manifest.name, "device_info failed");
      fail(p, dup_str(kiln_status_message(s)));
      kiln_status_free(s);
      return false;
    }
    if (!info.name || !*info.name) {
      fail(p, format_str("device %d has no name", i));
      return false;
    }
    plugin_device *d = &p->devices[i];
    d->owner = p;
    d->index = i;
    d->name = dup_str(info.name);
    d->description = format_str("plugin %s: %s", p->manifest.name, info.description ? info.description : "");
    d->b.name = d->name;
    d->b.priority = p->manifest.priority;
    d->b.description = d->description;
    d->b.supports = adapter_supports;
    d->b.compile = adapter_compile;
    d->b.execute = adapter_execute;
    d->b.destroy = adapter_destroy;
    p->n_devices = i + 1;
  }
  return true;
}

static void open_library(plugin *p) {
  const plugin_manifest *m = &p->manifest;
  if (m->abi_major != KILN_PLUGIN_API_MAJOR) {
    fail(p, format_str("incompatible ABI major %d (host speaks %d.%d); not loaded", m->abi_major,
                       KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR));
    return;
  }
  if (m->abi_minor > KILN_PLUGIN_API_MINOR) {
    fail(p, format_str("ABI %d.%d is newer than the host's %d.%d; not loaded", m->abi_major, m->abi_minor,
                       KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR));
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
  kiln_plugin_init_fn init;
  void *sym = dlsym(p->dl, KILN_PLUGIN_INIT_SYMBOL);
  if (!sym) {
    fail(p, format_str("library %s does not export %s", m->library, KILN_PLUGIN_INIT_SYMBOL));
    return;
  }
  memcpy(&init, &sym, sizeof init); /* POSIX guarantees object and function pointers convert */
  kiln_plugin_host host;
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.api_major = KILN_PLUGIN_API_MAJOR;
  host.api_minor = KILN_PLUGIN_API_MINOR;
  host.host_version = "kiln";
  host.manifest_path = m->path;
  const kiln_plugin_api *table = NULL;
  kiln_plugin_error *err = init(&host, &table);
  if (err) {
    if (table && table->struct_size >= offsetof(kiln_plugin_api, device_count) && table->error_message &&
        table->error_destroy && table->error_code) {
      const char *msg = table->error_message(err);
      fail(p, format_str("init failed: %s", msg && *msg ? msg : "(no message)"));
      table->error_destroy(err);
    } else {
      fail(p, dup_str("init failed (no error table to read the message)"));
    }
    return;
  }
  if (!table) {
    fail(p, dup_str("init returned no function table"));
    return;
  }
  if (!check_table(p, table)) return;
  char leaked[128];
  int n_leaked = count_foreign_exports(m->library, leaked, sizeof leaked);
  if (n_leaked > 0) {
    char *older = p->note;
    p->note = format_str("%s%sexports %d symbol%s besides %s (first: %s); build it with -fvisibility=hidden",
                         older ? older : "", older ? "; " : "", n_leaked, n_leaked == 1 ? "" : "s",
                         KILN_PLUGIN_INIT_SYMBOL, leaked);
    free(older);
    log_warning("plugin %s %s", m->name, p->note);
  }
  p->api_ok = true;
  if (!load_devices(p)) return;
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
  if (p->reason) {
    if (p->api_ok && p->api.shutdown) p->api.shutdown();
    p->api_ok = false;
    for (int i = 0; i < p->n_devices; i++) {
      free(p->devices[i].name);
      free(p->devices[i].description);
    }
    free(p->devices);
    p->devices = NULL;
    p->n_devices = 0;
    if (p->dl) dlclose(p->dl);
    p->dl = NULL;
  }
  return p;
}

void plugin_free(plugin *p) {
  if (!p) return;
  if (p->api_ok && p->api.shutdown) p->api.shutdown();
  for (int i = 0; i < p->n_devices; i++) {
    free(p->devices[i].name);
    free(p->devices[i].description);
  }
  free(p->devices);
  if (p->dl) dlclose(p->dl);
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

int plugin_device_count(const plugin *p) {
  if (!p->reason) return p->n_devices;
  return p->manifest_ok ? p->manifest.n_devices : 0;
}

const char *plugin_device_name(const plugin *p, int i) {
  return !p->reason ? p->devices[i].name : p->manifest.devices[i];
}

const backend *plugin_device_backend(const plugin *p, int i) { return p->reason ? NULL : &p->devices[i].b; }
