/* `kiln flags` and `kiln devices`: the two listing subcommands. Both print to stdout
 * in fixed columns so people can read them and scripts can grep them; `kiln flags` shows
 * the current value too when KILN_FLAGS or the command line changed it, which makes it
 * the quickest way to check what the environment is doing. `kiln devices` lists what
 * the public API's kiln_device_info_at reports, so it shows exactly what an embedder
 * sees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "base/flags.h"
#include "tools/tool.h"

int cmd_flags(int argc, char **argv) {
  if (argc > 0) return tool_usage_error("kiln flags takes no arguments (got '%s')", argv[0]);
  printf("%-22s %-7s %-14s %s\n", "FLAG", "TYPE", "DEFAULT", "HELP");
  for (int i = 0; i < flags_count(); i++) {
    const flag_info *f = flags_at(i);
    char name[64];
    if (f->alias)
      snprintf(name, sizeof name, "--%s, -%c", f->name, f->alias);
    else
      snprintf(name, sizeof name, "--%s", f->name);
    char def[64];
    snprintf(def, sizeof def, "%s", *f->default_value || f->type == FLAG_LIST ? f->default_value : "\"\"");
    if (f->type == FLAG_LIST) snprintf(def, sizeof def, "(none)");
    printf("%-22s %-7s %-14s %s", name, flag_type_name(f->type), def, f->help);
    char *now = flags_value_string(i);
    bool changed = f->type == FLAG_LIST ? *now != 0 : strcmp(now, f->default_value) != 0;
    if (changed) printf(" [now: %s]", now);
    free(now);
    putchar('\n');
  }
  return TOOL_OK;
}

int cmd_devices(int argc, char **argv) {
  if (argc > 0) return tool_usage_error("kiln devices takes no arguments (got '%s')", argv[0]);
  const char *def = backend_default()->name;
  printf("%-20s %-9s %-12s %s\n", "DEVICE", "PRIORITY", "STATUS", "DESCRIPTION");
  for (int i = 0; i < kiln_device_count(); i++) {
    kiln_device_info d = KILN_DEVICE_INFO_INIT;
    kiln_status s = kiln_device_info_at(i, &d);
    if (s) return tool_fail(s);
    if (d.available)
      printf("%-20s %-9d %-12s %s%s\n", d.name, d.priority, "available", d.description,
             strcmp(d.name, def) == 0 && strcmp(d.source, "built-in") == 0 ? " (default)" : "");
    else
      printf("%-20s %-9d %-12s %s\n", d.name, d.priority, "unavailable", d.reason);
  }
  return TOOL_OK;
}
