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
