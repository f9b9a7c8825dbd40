/* `kiln plugins`: lists every plugin the registry discovered (KILN_PLUGIN_PATH and
 * --plugin), whether it loaded, and why not. It is the first thing to run when a device
 * is missing from `kiln devices`, so each unavailable plugin gets its full reason, and
 * loaded ones show their manifest path, ABI (and whether the host adapts it from ABI 1),
 * priority, devices and build information. */
#include <stdio.h>

#include "backends/backend.h"
#include "backends/plugin/plugin.h"
#include "tools/tool.h"

int cmd_plugins(int argc, char **argv) {
  if (argc > 0) return tool_usage_error("kiln plugins takes no arguments (got '%s')", argv[0]);
  int n = plugin_registry_count();
  if (n == 0) {
    printf("no plugins found (set KILN_PLUGIN_PATH to directories of *.kiln-plugin.json, or pass --plugin FILE)\n");
    return TOOL_OK;
  }
  printf("%-20s %-12s %s\n", "PLUGIN", "STATUS", "DETAILS");
  for (int i = 0; i < n; i++) {
    const plugin *p = plugin_registry_at(i);
    const plugin_manifest *m = plugin_get_manifest(p);
    const char *reason = plugin_reason(p);
    printf("%-20s %-12s %s\n", plugin_name(p), reason ? "unavailable" : "loaded", reason ? reason : "");
    printf("  manifest: %s\n", plugin_manifest_path(p));
    if (m) {
      printf("  library:  %s\n", m->library);
      /* "2.0", "1.0 (adapted)" for an ABI-1 plugin behind the host's adapter, or the
       * manifest's numbers for one that did not load. */
      printf("  abi:      %s, priority %d\n", plugin_abi(p), m->priority);
      if (m->build_info) printf("  build:    %s\n", m->build_info);
    }
    printf("  devices: ");
    for (int d = 0; d < plugin_device_count(p); d++) printf(" %s", plugin_device_name(p, d));
    putchar('\n');
    if (plugin_note(p)) printf("  note:     %s\n", plugin_note(p));
  }
  return TOOL_OK;
}
