/* Host side of the plugin ABI: manifests, the loader and the adapter that turns each
 * device of a loaded plugin into a `backend`.
 *
 * Loading is two-phase so that a bad plugin costs nothing: the manifest is read and
 * judged first (ABI major 2, or 1 which the host adapts; minor not newer than the
 * host's for that major; library present), and only a plugin that passes is dlopen'ed
 * (RTLD_LOCAL | RTLD_NOW) and initialised. A plugin that fails at any step is still
 * returned, with `reason` saying why, so that `kiln plugins` and `kiln devices` can show
 * it as unavailable. ABI-1 plugins are wrapped by plugin_v1.c into an ABI-2 table, so
 * everything past loading is written against kiln/plugin.h alone. */
#ifndef KILN_BACKENDS_PLUGIN_PLUGIN_H
#define KILN_BACKENDS_PLUGIN_PLUGIN_H

#include <stdbool.h>

#include "backends/backend.h"
#include "base/status.h"
#include "kiln/plugin.h"

typedef struct plugin_manifest {
  char *path;         /* the manifest file */
  char *name;         /* plugin name */
  char *library;      /* resolved library path (relative entries are taken from the manifest's dir) */
  int abi_major, abi_minor;
  int priority;
  int n_devices;
  char **devices;     /* device names the manifest declares */
  char *build_info;   /* compact JSON of the "build" member, or NULL */
} plugin_manifest;

typedef struct plugin plugin;

/* Reads and validates a manifest (structure and types only; compatibility is judged
 * by plugin_load). */
kiln_status plugin_manifest_read(const char *path, plugin_manifest *out);
void plugin_manifest_free(plugin_manifest *m);

/* Reads the manifest at `path`, checks compatibility and, if it passes, opens and
 * initialises the library. Always returns a plugin (NULL only when out of memory);
 * plugin_reason() is non-NULL when it is unavailable. */
plugin *plugin_load(const char *manifest_path);
/* Unloads (client_destroy, dlclose) and frees. Every executable and buffer of its
 * devices must have been released. */
void plugin_free(plugin *p);

const char *plugin_name(const plugin *p);          /* manifest name, or the path when unreadable */
const char *plugin_manifest_path(const plugin *p);
const plugin_manifest *plugin_get_manifest(const plugin *p); /* NULL when unreadable */
const char *plugin_reason(const plugin *p);        /* NULL when loaded */
/* Devices: from the plugin once loaded, from the manifest otherwise. */
int plugin_device_count(const plugin *p);
const char *plugin_device_name(const plugin *p, int i);
/* The backend of device i; NULL when the plugin is unavailable. Owned by the plugin. */
const backend *plugin_device_backend(const plugin *p, int i);
/* Warnings found at load time that do not make the plugin unavailable (e.g. an older
 * table), or NULL. */
const char *plugin_note(const plugin *p);

/* The ABI the plugin was loaded with ("2.0", or "1.0 (adapted)" for an ABI-1 plugin the
 * host wraps), or the manifest's when it did not load; "?" without a manifest. */
const char *plugin_abi(const plugin *p);

/* Large array constants of a module's entry computation, at least this many bytes,
 * are uploaded once at compile time and passed as extra trailing parameters (see
 * adapter_compile in plugin.c). */
#define PLUGIN_RESIDENT_CONSTANT_MIN_BYTES 4096

/* plugin_v1.c: runs an ABI-1 plugin's init (init_sym, the library's kiln_plugin_init)
 * and, when its table passes the checks, fills *api with the host's ABI-2 shim for it
 * and *client with the shim's state (released by api->client_destroy, which also calls
 * the plugin's shutdown). Returns NULL on success, else the reason (malloc'ed). *note
 * may receive a malloc'ed warning (an older, shorter table). */
char *plugin_v1_open(void *init_sym, const char *manifest_path, kiln_plugin_api *api, kiln_plugin_client **client,
                     char **note);

/* The plugins the registry discovered or was given (in registration order); a plugin
 * stays valid until backend_registry_reset. */
int plugin_registry_count(void);
const plugin *plugin_registry_at(int i);

#endif
