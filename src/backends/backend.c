/* The device registry: built-in backends plus the devices of discovered plugins, ordered
 * by priority (highest first, registration order among equals) so lookups and the placer
 * see the best device first. Discovery is lazy — the first registry call scans
 * KILN_PLUGIN_PATH and the --plugin flag — so commands that never touch a device never
 * open a plugin. Unusable plugin devices stay in the list with their reason, because
 * "why is my device missing" is the first question a plugin user asks. */
#include "backends/backend.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin/plugin.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/strbuf.h"

static const backend *const builtin[] = {&cpu_backend, &interpreter_backend};

static bool discovered;
static int n_entries;
static backend_entry *entries;
static int n_usable;
static const backend **usable;
static int n_plugins;
static plugin **plugins;
static char **owned_strings; /* duplicate-name reasons */
static int n_owned_strings;

static void add_entry(backend_entry e) {
  backend_entry *grown = realloc(entries, (size_t)(n_entries + 1) * sizeof *entries);
  if (!grown) abort();
  entries = grown;
  entries[n_entries++] = e;
}

static char *keep_string(char *s) {
  char **grown = realloc(owned_strings, (size_t)(n_owned_strings + 1) * sizeof *owned_strings);
  if (!grown) abort();
  owned_strings = grown;
  owned_strings[n_owned_strings++] = s;
  return s;
}

static void add_plugin(const char *manifest_path) {
  plugin *p = plugin_load(manifest_path);
  plugin **grown = realloc(plugins, (size_t)(n_plugins + 1) * sizeof *plugins);
  if (!grown) abort();
  plugins = grown;
  plugins[n_plugins++] = p;
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
      if (strcmp(entries[k].name, e.name) == 0 && entries[k].backend) {
        strbuf r;
        strbuf_init(&r);
        strbuf_printf(&r, "device name already taken by %s", entries[k].source);
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

/* Every *.kiln-plugin.json in dir, in name order so discovery is reproducible. */
static void scan_directory(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    log_info("KILN_PLUGIN_PATH: cannot open %s", dir);
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
    char **grown = realloc(names, (size_t)(n + 1) * sizeof *names);
    if (!grown) abort();
    names = grown;
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

static int compare_priority(const void *a, const void *b) {
  const backend_entry *x = a, *y = b;
  if (x->priority != y->priority) return x->priority > y->priority ? -1 : 1;
  return 0;
}

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
      if (*dir) scan_directory(dir);
    free(copy);
  }
  for (int i = 0; i < kiln_flags.plugin.n; i++) add_plugin(kiln_flags.plugin.v[i]);
  /* Stable sort by priority: insertion sort keeps registration order among equals. */
  for (int i = 1; i < n_entries; i++) {
    backend_entry e = entries[i];
    int j = i - 1;
    while (j >= 0 && compare_priority(&entries[j], &e) > 0) {
      entries[j + 1] = entries[j];
      j--;
    }
    entries[j + 1] = e;
  }
  usable = calloc((size_t)n_entries, sizeof *usable);
  if (!usable) abort();
  for (int i = 0; i < n_entries; i++)
    if (entries[i].backend) usable[n_usable++] = entries[i].backend;
}

void backend_registry_reset(void) {
  for (int i = 0; i < n_plugins; i++) plugin_free(plugins[i]);
  free(plugins);
  plugins = NULL;
  n_plugins = 0;
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
}

int backend_count(void) {
  discover();
  return n_usable;
}

const backend *backend_at(int i) {
  discover();
  return i >= 0 && i < n_usable ? usable[i] : NULL;
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
  discover();
  return n_entries;
}

const backend_entry *backend_entry_at(int i) {
  discover();
  return i >= 0 && i < n_entries ? &entries[i] : NULL;
}

const backend_entry *backend_entry_find(const char *name) {
  discover();
  /* A usable device wins over an unusable one of the same name. */
  const backend_entry *fallback = NULL;
  for (int i = 0; i < n_entries; i++) {
    if (strcmp(entries[i].name, name) != 0) continue;
    if (entries[i].backend) return &entries[i];
    if (!fallback) fallback = &entries[i];
  }
  return fallback;
}

int plugin_registry_count(void) {
  discover();
  return n_plugins;
}

const plugin *plugin_registry_at(int i) {
  discover();
  return i >= 0 && i < n_plugins ? plugins[i] : NULL;
}
