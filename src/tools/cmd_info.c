/* `kiln flags` and `kiln devices`: the two listing subcommands. Both print to stdout
 * in fixed columns so people can read them and scripts can grep them; `kiln flags` shows
 * the current value too when KILN_FLAGS or the command line changed it, which makes it
 * the quickest way to check what the environment is doing. */
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
  const backend *def = backend_default();
  printf("%-20s %-9s %-12s %s\n", "DEVICE", "PRIORITY", "STATUS", "DESCRIPTION");
  for (int i = 0; i < backend_entry_count(); i++) {
    const backend_entry *e = backend_entry_at(i);
    if (e->backend)
      printf("%-20s %-9d %-12s %s%s\n", e->name, e->priority, "available", e->description,
             e->backend == def ? " (default)" : "");
    else
      printf("%-20s %-9d %-12s %s\n", e->name, e->priority, "unavailable", e->reason);
  }
  return TOOL_OK;
}
