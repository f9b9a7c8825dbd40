/* What the public API's files (src/api) share: the options object's layout, the
 * conversions between the public enums and the internal ones, and the per-call log
 * routing.
 *
 * options.c    kiln_options: one table of keys (the `kiln flags` names), typed values
 * tensor.c     kiln_tensor over a host tensor, a literal leaf or a sequence /
 *              optional / map result, dtype and kind names
 * model.c      kiln_model: load, introspection, run (graphs through a pool of
 *              executors, HLO modules through one compiled executable), stats
 * devices.c    version, the device registry as kiln_device_info
 * The API is the top layer: it may include every internal header, and nothing below
 * it includes this one. */
#ifndef KILN_API_API_INTERNAL_H
#define KILN_API_API_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/log.h"
#include "exec/executor.h"
#include "graph/dtype.h"
#include "graph/tensor.h"
#include "hlo/literal.h"
#include "jit/jit.h"
#include "kiln/kiln.h"

/* A growable list of owned strings (plugin manifests, plugin options). */
typedef struct api_strlist {
  int n, cap;
  char **v;
} api_strlist;

struct kiln_options {
  char *device;
  jit_mode jit;
  int threads;
  char *dump_to;
  char *dump_pass_re;
  bool dump_large_constants;
  char *disable_passes;
  char *jit_ops;
  char *jit_exclude_ops;
  char *signature; /* a SavedModel's SignatureDef; "": serving_default */
  int min_cluster_size;
  int max_cluster_size;
  bool clustering_debug;
  bool log_placement;
  bool no_host_fallback;
  bool profile;
  bool allow_excess_precision; /* HLO modules only: backend_compile_options.allow_excess_precision */
  char *cache_dir; /* cpu: persistent compilation cache; "": off */
  char *plugin_path;
  api_strlist plugins;
  api_strlist plugin_options;
  bool allow_plugin_fallback; /* plugin compile failures other than UNIMPLEMENTED fall back */
  log_level log_level;
  kiln_format format;
  bool report;
  char *inputs;  /* comma-separated tensor names, "" for the model's own */
  char *outputs;
  kiln_log_fn log_fn;
  void *log_user;
  char *get_text; /* kiln_options_get's last answer */
};

/* Internal option structs viewing o's strings (valid while o lives). */
backend_compile_options api_compile_options(const kiln_options *o);
jit_options api_jit_options(const kiln_options *o);

/* Routes log messages of the calling thread to o's callback / level until
 * api_log_end; calls nest. */
typedef struct api_log_scope {
  log_sink prev;
  bool had_sink;
} api_log_scope;
void api_log_begin(const kiln_options *o, api_log_scope *scope);
void api_log_end(const api_log_scope *scope);

/* dtype conversions; false / KILN_DTYPE_INVALID when the other side lacks the type. */
bool api_dtype_to_graph(kiln_dtype d, graph_dtype *out);
kiln_dtype api_dtype_from_graph(graph_dtype d);
kiln_dtype api_dtype_from_hlo(hlo_type t);

/* Output tensors: taking over a host tensor reference (copied if it borrows the
 * caller's memory; strings become kiln.h's pointer arrays, `name` naming the output in
 * errors) or an array literal (its buffer moves). */
kiln_status api_tensor_from_graph(graph_tensor *t, const char *name, kiln_tensor **out);
kiln_status api_tensor_from_literal(hlo_literal *l, kiln_tensor **out);
/* An executor result (a tensor, or a sequence / optional / map tree), taken over. */
kiln_status api_tensor_from_value(executor_value *v, const char *name, kiln_tensor **out);

#endif
