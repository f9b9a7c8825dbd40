/* The registry of built-in backends. Plugins will join it at load time; the list is
 * ordered by priority so lookups and the placer see the best device first. */
#include "backends/backend.h"

#include <string.h>

static const backend *const builtin[] = {&interpreter_backend};

int backend_count(void) { return (int)(sizeof builtin / sizeof builtin[0]); }
const backend *backend_at(int i) { return builtin[i]; }

const backend *backend_find(const char *name) {
  for (int i = 0; i < backend_count(); i++)
    if (strcmp(builtin[i]->name, name) == 0) return builtin[i];
  return NULL;
}

const backend *backend_default(void) { return &interpreter_backend; }
