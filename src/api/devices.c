/* The library's version and the device registry as the public API shows them.
 *
 * The version string is built from the header's macros, so the library reports the
 * version it was compiled as; a program compares it with the macros it was compiled
 * against to notice a mismatched libkiln. Devices are the registry's entries
 * (backends/backend.h), usable or not, highest priority first; the registry is
 * process-wide and locked, so these calls are thread-safe. */
#include <string.h>

#include "api/api_internal.h"
#include "base/status.h"

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

const char *kiln_version(void) {
  return KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(KILN_VERSION_MINOR) "." KILN_STR(KILN_VERSION_PATCH);
}

int kiln_version_number(void) { return KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH; }

int kiln_device_count(void) { return backend_entry_count(); }

kiln_status kiln_device_info_at(int i, kiln_device_info *out) {
  if (!out) return ERR_INVALID("kiln_device_info_at: out is NULL");
  if (out->struct_size < sizeof(kiln_device_info))
    return ERR_INVALID("kiln_device_info_at: struct_size is %zu, expected at least %zu (use KILN_DEVICE_INFO_INIT)",
                       out->struct_size, sizeof(kiln_device_info));
  const backend_entry *e = backend_entry_at(i);
  if (!e)
    return status_error(KILN_OUT_OF_RANGE, "kiln_device_info_at: index %d is outside 0..%d", i,
                        backend_entry_count() - 1);
  out->name = e->name;
  out->priority = e->priority;
  out->description = e->description;
  out->available = e->backend != NULL;
  out->reason = e->reason;
  out->source = e->source;
  return NULL;
}
