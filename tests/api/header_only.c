/* Compiled, not run: include/kiln/kiln.h must stand alone as C99 and as C++ (the
 * api.header_c99 / api.header_cxx tests compile this file both ways with -pedantic
 * -Werror), including the struct initialiser macros an embedder uses. */
#include <kiln/kiln.h>

int kiln_header_only_check(void);

int kiln_header_only_check(void) {
  kiln_value v = KILN_VALUE_INIT;
  kiln_run_options r = KILN_RUN_OPTIONS_INIT;
  kiln_model_stats s = KILN_MODEL_STATS_INIT;
  kiln_device_info d = KILN_DEVICE_INFO_INIT;
  kiln_log_fn fn = 0;
  (void)fn;
  return (int)(v.struct_size + r.struct_size + s.struct_size + d.struct_size) + KILN_VERSION_MAJOR +
         (int)KILN_FLOAT32 + (int)KILN_FORMAT_AUTO + (int)KILN_LOG_INFO + (int)KILN_OK;
}
