/* The one place where flags become library options: the libraries take option structs
 * (jit_options, hlo_pipeline_options, backend_compile_options) so that an embedder can
 * give each call its own, and only the `kiln` command reads kiln_flags to fill them. */
#include <string.h>

#include "base/flags.h"
#include "tools/tool.h"

jit_options tool_jit_options(void) {
  jit_options o = jit_options_default();
  o.mode = strcmp(kiln_flags.jit, "off") == 0 ? JIT_OFF : JIT_AUTO;
  o.device = kiln_flags.device;
  o.jit_ops = kiln_flags.jit_ops;
  o.jit_exclude_ops = kiln_flags.jit_exclude_ops;
  o.min_cluster_size = (int)kiln_flags.min_cluster_size;
  o.max_cluster_size = (int)kiln_flags.max_cluster_size;
  o.dump_to = kiln_flags.dump_to;
  o.dump_large_constants = kiln_flags.dump_large_constants;
  o.clustering_debug = kiln_flags.clustering_debug;
  o.log_placement = kiln_flags.log_placement;
  o.no_host_fallback = kiln_flags.no_host_fallback;
  return o;
}

hlo_pipeline_options tool_pipeline_options(void) {
  hlo_pipeline_options o = hlo_pipeline_options_default();
  o.dump_to = kiln_flags.dump_to;
  o.dump_pass_re = kiln_flags.dump_pass_re;
  o.dump_large_constants = kiln_flags.dump_large_constants;
  o.disabled_passes = kiln_flags.disable_passes;
  return o;
}

backend_compile_options tool_compile_options(void) {
  backend_compile_options o = backend_compile_options_default();
  o.dump_to = kiln_flags.dump_to;
  o.dump_pass_re = kiln_flags.dump_pass_re;
  o.dump_large_constants = kiln_flags.dump_large_constants;
  o.disabled_passes = kiln_flags.disable_passes;
  o.profile = kiln_flags.profile;
  o.n_plugin_options = kiln_flags.plugin_option.n;
  o.plugin_options = kiln_flags.plugin_option.v;
  return o;
}
