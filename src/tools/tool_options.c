/* The one place where flags become library options: the libraries take option structs
 * (jit_options, hlo_pipeline_options, backend_compile_options) so that an embedder can
 * give each call its own, and only the `kiln` command reads kiln_flags to fill them;
 * the commands built on the public API (run, cluster) get a kiln_options instead. */
#include <stdio.h>
#include <string.h>

#include "base/flags.h"
#include "tools/tool.h"

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
  o.cache_dir = kiln_flags.cache_dir;
  o.n_plugin_options = kiln_flags.plugin_option.n;
  o.plugin_options = kiln_flags.plugin_option.v;
  o.allow_plugin_fallback = kiln_flags.allow_plugin_fallback;
  return o;
}

static kiln_status set_flag(kiln_options *o, const char *key, const char *value) {
  return status_wrap(kiln_options_set(o, key, value), "--%s", key);
}

kiln_status tool_kiln_options(kiln_options **out) {
  kiln_options *o;
  TRY(kiln_options_create(&o));
  char num[32];
  kiln_status s = set_flag(o, "device", kiln_flags.device);
  if (!s) s = set_flag(o, "jit", kiln_flags.jit);
  if (!s) s = set_flag(o, "inputs", kiln_flags.inputs);
  if (!s) s = set_flag(o, "outputs", kiln_flags.outputs);
  if (!s) s = set_flag(o, "dump_to", kiln_flags.dump_to);
  if (!s) s = set_flag(o, "dump_pass_re", kiln_flags.dump_pass_re);
  if (!s) s = set_flag(o, "dump_large_constants", kiln_flags.dump_large_constants ? "true" : "false");
  if (!s) s = set_flag(o, "disable_passes", kiln_flags.disable_passes);
  if (!s) s = set_flag(o, "jit_ops", kiln_flags.jit_ops);
  if (!s) s = set_flag(o, "jit_exclude_ops", kiln_flags.jit_exclude_ops);
  snprintf(num, sizeof num, "%lld", (long long)kiln_flags.min_cluster_size);
  if (!s) s = set_flag(o, "min_cluster_size", num);
  snprintf(num, sizeof num, "%lld", (long long)kiln_flags.max_cluster_size);
  if (!s) s = set_flag(o, "max_cluster_size", num);
  if (!s) s = set_flag(o, "clustering_debug", kiln_flags.clustering_debug ? "true" : "false");
  if (!s) s = set_flag(o, "log_placement", kiln_flags.log_placement ? "true" : "false");
  if (!s) s = set_flag(o, "no_host_fallback", kiln_flags.no_host_fallback ? "true" : "false");
  if (!s) s = set_flag(o, "profile", kiln_flags.profile ? "true" : "false");
  if (!s) s = set_flag(o, "signature", kiln_flags.signature);
  if (!s) s = set_flag(o, "cache_dir", kiln_flags.cache_dir);
  if (!s) s = set_flag(o, "allow_excess_precision", kiln_flags.allow_excess_precision ? "true" : "false");
  for (int i = 0; !s && i < kiln_flags.plugin.n; i++) s = set_flag(o, "plugin", kiln_flags.plugin.v[i]);
  for (int i = 0; !s && i < kiln_flags.plugin_option.n; i++) s = set_flag(o, "plugin_option", kiln_flags.plugin_option.v[i]);
  if (!s) s = set_flag(o, "allow_plugin_fallback", kiln_flags.allow_plugin_fallback ? "true" : "false");
  if (!s) s = set_flag(o, "log_level", kiln_flags.v > 0 ? "info" : "warning");
  if (s) {
    kiln_options_free(o);
    return s;
  }
  *out = o;
  return NULL;
}
