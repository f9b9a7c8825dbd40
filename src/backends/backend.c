/* The device registry: built-in backends plus the devices of discovered plugins, ordered
 * by priority (highest first, registration order among equals) so lookups and the placer
 * see the best device first. Discovery is lazy — the first registry call scans
 * KILN_PLUGIN_PATH — so commands that never touch a device never open a plugin; callers
 * add further plugins with backend_registry_add_plugins. Unusable plugin devices stay in
 * the list with their reason, because "why is my device missing" is the first question
 * a plugin user asks.
 *
 * One recursive mutex guards everything: the registry is process-wide and an embedder
 * may load models on several threads at once. Entries are allocated one by one and only
 * the arrays of pointers to them grow, so an entry (and a plugin's backend) handed out
 * stays where it is until backend_registry_reset, even when later plugins sort before
 * it. */
#include "backends/backend.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin/plugin.h"
#include "base/log.h"
#include "base/strbuf.h"

static const backend *const builtin[] = {&cpu_backend, &interpreter_backend};

static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t registry_lock;

static bool discovered;
static int n_entries;
static backend_entry **entries; /* by priority; each entry its own allocation */
static int n_usable;
static const backend **usable;
static int n_plugins;
static plugin **plugins;
static char **plugin_keys; /* per plugin: its manifest's canonical path, for add_plugins' duplicates */
static char **owned_strings; /* duplicate-name reasons */
static int n_owned_strings;

int backend_evaluated_instructions(const backend *b, const backend_executable *e) {
  return b && e && b->evaluated_instructions ? b->evaluated_instructions(e) : 0;
}

backend_compile_options backend_compile_options_default(void) {
  backend_compile_options o;
  memset(&o, 0, sizeof o);
  return o;
}

/* Recursive, so that a log sink called while a plugin loads may ask the registry. */
static void init_lock(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&registry_lock, &a);
  pthread_mutexattr_destroy(&a);
}

static void lock(void) {
  pthread_once(&lock_once, init_lock);
  pthread_mutex_lock(&registry_lock);
}

static void unlock(void) { pthread_mutex_unlock(&registry_lock); }

static void *grow(void *p, int n, size_t elem) {
  void *g = realloc(p, (size_t)(n + 1) * elem);
  if (!g) abort();
  return g;
}

/* Inserts after every entry of the same or higher priority: the order a stable sort by
 * priority of the registration order gives. */
static void add_entry(backend_entry e) {
  backend_entry *copy = malloc(sizeof *copy);
  if (!copy) abort();
  *copy = e;
  entries = grow(entries, n_entries, sizeof *entries);
  int at = n_entries;
  while (at > 0 && entries[at - 1]->priority < e.priority) {
    entries[at] = entries[at - 1];
    at--;
  }
  entries[at] = copy;
  n_entries++;
  if (e.backend) {
    /* The usable list is rebuilt: an added device may sort before existing ones. */
    usable = grow(usable, n_entries, sizeof *usable);
    n_usable = 0;
    for (int i = 0; i < n_entries; i++)
      if (entries[i]->backend) usable[n_usable++] = entries[i]->backend;
  }
}

static char *keep_string(char *s) {
  owned_strings = grow(owned_strings, n_owned_strings, sizeof *owned_strings);
  owned_strings[n_owned_strings++] = s;
  return s;
}

/* The path a manifest is known by: resolved when it exists, so "./x.json" and an
 * absolute spelling of the same file count as one. */
static char *manifest_key(const char *path) {
  char *key = realpath(path, NULL);
  if (!key) key = strdup(path);
  if (!key) abort();
  return key;
}

static void add_plugin(const char *manifest_path) {
  char *key = manifest_key(manifest_path);
  for (int i = 0; i < n_plugins; i++) {
    if (strcmp(plugin_keys[i], key) == 0) {
      free(key);
      return;
    }
  }
  plugin *p = plugin_load(manifest_path);
  plugins = grow(plugins, n_plugins, sizeof *plugins);
  plugin_keys = grow(plugin_keys, n_plugins, sizeof *plugin_keys);
  plugins[n_plugins] = p;
  plugin_keys[n_plugins++] = key;
  if (plugin_reason(p)) log_info("plugin %s unavailable: %s", plugin_name(p), plugin_reason(p));
  const plugin_manifest *m = plugin_get_manifest(p);
  for (int i = 0; i < plugin_device_count(p); i++) {
    const backend *b = plugin_device_backend(p, i);
    backend_entry e = {
        .name = plugin_device_name(p, i),
        .priority = m ? m->priority : 0,
        .description = b ? b->description : "plugin device",
        .backend = b,
        .reason = plugin_reason(p),
        .source = plugin_manifest_path(p),
    };
    for (int k = 0; k < n_entries; k++) {
      if (strcmp(entries[k]->name, e.name) == 0 && entries[k]->backend) {
        strbuf r;
        strbuf_init(&r);
        strbuf_printf(&r, "device name already taken by %s", entries[k]->source);
        e.reason = keep_string(strbuf_take(&r));
        e.backend = NULL;
        break;
      }
    }
    add_entry(e);
  }
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.kiln-plugin.json in dir, in name order so discovery is reproducible. `origin`
 * names where dir came from in the note about a directory that cannot be opened. */
static void scan_directory(const char *dir, const char *origin) {
  DIR *d = opendir(dir);
  if (!d) {
    log_info("%s: cannot open %s", origin, dir);
    return;
  }
  static const char suffix[] = ".kiln-plugin.json";
  size_t sl = sizeof suffix - 1;
  char **names = NULL;
  int n = 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    size_t l = strlen(ent->d_name);
    if (l <= sl || strcmp(ent->d_name + l - sl, suffix) != 0) continue;
    names = grow(names, n, sizeof *names);
    strbuf p;
    strbuf_init(&p);
    strbuf_printf(&p, "%s/%s", dir, ent->d_name);
    names[n++] = strbuf_take(&p);
  }
  closedir(d);
  if (n > 1) qsort(names, (size_t)n, sizeof *names, compare_names);
  for (int i = 0; i < n; i++) {
    add_plugin(names[i]);
    free(names[i]);
  }
  free(names);
}

/* Called locked. */
static void discover(void) {
  if (discovered) return;
  discovered = true;
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
    backend_entry e = {builtin[i]->name, builtin[i]->priority, builtin[i]->description, builtin[i], NULL, "built-in"};
    add_entry(e);
  }
  const char *path = getenv("KILN_PLUGIN_PATH");
  if (path && *path) {
    char *copy = strdup(path);
    if (!copy) abort();
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
      if (*dir) scan_directory(dir, "KILN_PLUGIN_PATH");
    free(copy);
  }
}

void backend_registry_add_plugins(int n_dirs, const char *const *dirs, int n_manifests, const char *const *manifests) {
  lock();
  discover();
  for (int i = 0; i < n_dirs; i++)
    if (dirs[i] && *dirs[i]) scan_directory(dirs[i], "plugin directory");
  for (int i = 0; i < n_manifests; i++)
    if (manifests[i] && *manifests[i]) add_plugin(manifests[i]);
  unlock();
}

void backend_registry_reset(void) {
  lock();
  for (int i = 0; i < n_plugins; i++) {
    plugin_free(plugins[i]);
    free(plugin_keys[i]);
  }
  free(plugins);
  free(plugin_keys);
  plugins = NULL;
  plugin_keys = NULL;
  n_plugins = 0;
  for (int i = 0; i < n_entries; i++) free(entries[i]);
  free(entries);
  entries = NULL;
  n_entries = 0;
  free(usable);
  usable = NULL;
  n_usable = 0;
  for (int i = 0; i < n_owned_strings; i++) free(owned_strings[i]);
  free(owned_strings);
  owned_strings = NULL;
  n_owned_strings = 0;
  discovered = false;
  unlock();
}

int backend_count(void) {
  lock();
  discover();
  int n = n_usable;
  unlock();
  return n;
}

const backend *backend_at(int i) {
  lock();
  discover();
  const backend *b = i >= 0 && i < n_usable ? usable[i] : NULL;
  unlock();
  return b;
}

const backend *backend_find(const char *name) {
  const backend_entry *e = backend_entry_find(name);
  if (!e) return NULL;
  if (!e->backend) log_warning("device %s is unavailable: %s", name, e->reason);
  return e->backend;
}

/* The fastest built-in: cpu. Plugins are never the default for HLO modules and
 * op-by-op runs; the placer gives them the nodes they support by priority. */
const backend *backend_default(void) { return &cpu_backend; }

int backend_entry_count(void) {
  lock();
  discover();
  int n = n_entries;
  unlock();
  return n;
}

const backend_entry *backend_entry_at(int i) {
  lock();
  discover();
  const backend_entry *e = i >= 0 && i < n_entries ? entries[i] : NULL;
  unlock();
  return e;
}

const backend_entry *backend_entry_find(const char *name) {
  lock();
  discover();
  /* A usable device wins over an unusable one of the same name. */
  const backend_entry *found = NULL;
  for (int i = 0; i < n_entries; i++) {
    if (strcmp(entries[i]->name, name) != 0) continue;
    if (entries[i]->backend) {
      found = entries[i];
      break;
    }
    if (!found) found = entries[i];
  }
  unlock();
  return found;
}

int plugin_registry_count(void) {
  lock();
  discover();
  int n = n_plugins;
  unlock();
  return n;
}

const plugin *plugin_registry_at(int i) {
  lock();
  discover();
  const plugin *p = i >= 0 && i < n_plugins ? plugins[i] : NULL;
  unlock();
  return p;
}

/* ---- device buffers (backend.h): the device's own entries, or host literals ---- */

bool backend_has_device_memory(const backend *b) {
  return b && b->buffer_upload && b->buffer_download && b->buffer_free && b->execute_buffers;
}

int64_t backend_resident_bytes(const backend *b, const backend_executable *e) {
  return b && e && b->resident_bytes ? b->resident_bytes(e) : 0;
}

static kiln_status check_array(const backend *b, const hlo_shape *s, const char *what) {
  if (shape_is_array(s)) return NULL;
  char *t = shape_to_string(s);
  kiln_status st = ERR_INVALID("device %s: %s is %s; device buffers hold arrays only", b->name, what, t);
  free(t);
  return st;
}

static backend_buffer *buffer_new(const backend *b, const hlo_shape *s) {
  backend_buffer *buf = calloc(1, sizeof *buf);
  if (!buf) abort();
  buf->device = b;
  buf->shape = *s;
  buf->shape.n_elems = 0;
  buf->shape.elems = NULL;
  buf->shape.layout_extra = NULL;
  return buf;
}

kiln_status backend_buffer_upload(const backend *b, const hlo_literal *lit, backend_transfers *tx,
                                  backend_buffer **out) {
  *out = NULL;
  TRY(check_array(b, &lit->shape, "the uploaded value"));
  backend_buffer *buf = buffer_new(b, &lit->shape);
  if (!backend_has_device_memory(b)) {
    buf->host = literal_clone(lit);
    *out = buf;
    return NULL;
  }
  kiln_status s = b->buffer_upload(b, lit, &buf->handle);
  if (s) {
    free(buf);
    return s;
  }
  if (tx) tx->to_device += shape_byte_size(&lit->shape);
  *out = buf;
  return NULL;
}

kiln_status backend_buffer_adopt(const backend *b, hlo_literal *lit, backend_buffer **out) {
  *out = NULL;
  if (backend_has_device_memory(b))
    return ERR_INTERNAL("device %s has memory of its own: upload, do not adopt, host literals", b->name);
  TRY(check_array(b, &lit->shape, "the adopted value"));
  backend_buffer *buf = buffer_new(b, &lit->shape);
  buf->host = lit;
  *out = buf;
  return NULL;
}

kiln_status backend_buffer_download(const backend_buffer *buf, backend_transfers *tx, hlo_literal **out) {
  *out = NULL;
  const backend *b = buf->device;
  if (buf->consumed)
    return ERR_INTERNAL("device %s: reading a buffer that was donated to an execute", b->name);
  if (!backend_has_device_memory(b)) {
    *out = literal_clone(buf->host);
    return NULL;
  }
  hlo_literal *lit;
  TRY(literal_create(&buf->shape, &lit));
  kiln_status s = b->buffer_download(b, buf->handle, lit);
  if (s) {
    literal_free(lit);
    return s;
  }
  if (tx) tx->to_host += shape_byte_size(&buf->shape);
  *out = lit;
  return NULL;
}

void backend_buffer_free(backend_buffer *buf) {
  if (!buf) return;
  if (buf->host) literal_free(buf->host);
  if (buf->handle) buf->device->buffer_free(buf->device, buf->handle);
  free(buf);
}

/* The root's elements: the root itself, or the elements of a root tuple (arrays). */
static kiln_status root_elements(const backend *b, const hlo_shape *root, int *n, const hlo_shape **elems) {
  if (shape_is_tuple(root)) {
    for (int i = 0; i < root->n_elems; i++) TRY(check_array(b, &root->elems[i], "a result"));
    *n = root->n_elems;
    *elems = root->elems;
    return NULL;
  }
  TRY(check_array(b, root, "the result"));
  *n = 1;
  *elems = root;
  return NULL;
}

/* Host devices: the literal execute on the buffers' literals (borrowed); the results
 * become host buffers without a copy. Donation has nothing to gain on the host. */
static kiln_status execute_host(const backend *b, backend_executable *e, const hlo_shape *root,
                                backend_buffer *const *args, int n_args, int n_res, const hlo_shape *elems,
                                backend_buffer **res) {
  hlo_literal **lits = calloc((size_t)n_args + 1, sizeof *lits);
  if (!lits) abort();
  for (int i = 0; i < n_args; i++) lits[i] = args[i]->host;
  hlo_literal *out = NULL;
  kiln_status s = b->execute(e, lits, n_args, &out);
  free(lits);
  if (s) return s;
  if (shape_is_tuple(root) != (out->shape.type == HLO_TUPLE) ||
      (shape_is_tuple(root) && out->shape.n_elems != n_res)) {
    literal_free(out);
    return ERR_INTERNAL("device %s returned a result of the wrong structure", b->name);
  }
  if (!shape_is_tuple(root)) {
    res[0] = buffer_new(b, &elems[0]);
    res[0]->host = out;
    return NULL;
  }
  for (int i = 0; i < n_res; i++) {
    res[i] = buffer_new(b, &elems[i]);
    res[i]->host = out->tuple[i];
    out->tuple[i] = NULL;
  }
  literal_free(out);
  return NULL;
}

kiln_status backend_execute_buffers(const backend *b, backend_executable *e, const hlo_shape *root_shape,
                                    backend_buffer *const *args, int n_args, const bool *donated,
                                    backend_buffer ***results, int *n_results) {
  *results = NULL;
  *n_results = 0;
  int n_res = 0;
  const hlo_shape *elems = NULL;
  TRY(root_elements(b, root_shape, &n_res, &elems));
  for (int i = 0; i < n_args; i++) {
    if (args[i]->device != b)
      return ERR_INVALID("device %s: argument %d lives on device %s", b->name, i, args[i]->device->name);
    if (args[i]->consumed) return ERR_INVALID("device %s: argument %d was donated to an earlier execute", b->name, i);
  }
  backend_buffer **res = calloc((size_t)n_res + 1, sizeof *res);
  if (!res) abort();
  kiln_status s = NULL;
  if (!backend_has_device_memory(b)) {
    s = execute_host(b, e, root_shape, args, n_args, n_res, elems, res);
  } else {
    void **handles = calloc((size_t)n_args + 1, sizeof *handles);
    void **out = calloc((size_t)n_res + 1, sizeof *out);
    bool *consumed = calloc((size_t)n_args + 1, sizeof *consumed);
    if (!handles || !out || !consumed) abort();
    for (int i = 0; i < n_args; i++) handles[i] = args[i]->handle;
    s = b->execute_buffers(e, handles, n_args, donated, consumed, out, n_res);
    for (int i = 0; i < n_args; i++)
      if (consumed[i]) args[i]->consumed = true;
    for (int i = 0; i < n_res; i++) {
      if (!out[i]) continue;
      res[i] = buffer_new(b, &elems[i]);
      res[i]->handle = out[i];
    }
    if (!s)
      for (int i = 0; i < n_res && !s; i++)
        if (!res[i]) s = ERR_INTERNAL("device %s: execute returned no buffer for result %d", b->name, i);
    free(handles);
    free(out);
    free(consumed);
  }
  if (s) {
    for (int i = 0; i < n_res; i++) backend_buffer_free(res[i]);
    free(res);
    return s;
  }
  *results = res;
  *n_results = n_res;
  return NULL;
}
