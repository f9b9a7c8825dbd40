/* `kiln cluster MODEL [--dot FILE]`: runs the bridge's passes on a model and prints
 * what they decided — clusters with sizes, share of the graph and op histograms, and
 * every node that stayed out with the reason — without running anything. --dot writes
 * the graph as Graphviz DOT with the clusters coloured. The flags that steer the
 * bridge (--device, --jit_ops, --jit_exclude_ops, --min_cluster_size,
 * --max_cluster_size, --clustering_debug, --log_placement, --dump_to) apply as they do
 * for `kiln run`. */
#include <stdio.h>
#include <stdlib.h>

#include "base/file.h"
#include "base/flags.h"
#include "import/import.h"
#include "jit/jit.h"
#include "tools/tool.h"

int cmd_cluster(int argc, char **argv) {
  if (argc < 1) return tool_usage_error("kiln cluster needs a model: kiln cluster MODEL.onnx|MODEL.pb|model.json");
  if (argc > 1) return tool_usage_error("kiln cluster takes one model (unexpected '%s')", argv[1]);
  graph *g = NULL, *original = NULL;
  jit_report *report = NULL;
  kiln_status s = import_model_file(argv[0], &g);
  if (!s && kiln_flags.dump_to[0]) s = file_make_dirs(kiln_flags.dump_to);
  if (!s) {
    original = graph_clone(g);
    jit_options o = tool_jit_options();
    o.mode = JIT_AUTO;
    s = jit_run(g, &o, &report);
    if (s) s = status_wrap(s, "%s", argv[0]);
  }
  if (!s) {
    strbuf b;
    strbuf_init(&b);
    jit_report_print(&b, report);
    fputs(strbuf_cstr(&b), stdout);
    strbuf_free(&b);
    if (kiln_flags.dot[0]) s = jit_report_write_dot(report, original, kiln_flags.dot);
  }
  jit_report_free(report);
  graph_free(original);
  graph_free(g);
  return s ? tool_fail(s) : TOOL_OK;
}
