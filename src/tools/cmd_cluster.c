/* `kiln cluster MODEL [--dot FILE]`: runs the bridge's passes on a model and prints
 * what they decided — clusters with sizes, share of the graph and op histograms, and
 * every node that stayed out with the reason — without running anything. --dot writes
 * the graph as Graphviz DOT with the clusters coloured. The flags that steer the
 * bridge (--device, --jit_ops, --jit_exclude_ops, --min_cluster_size,
 * --max_cluster_size, --clustering_debug, --log_placement, --dump_to) apply as they do
 * for `kiln run`. Built on the public API: the model is loaded with jit=auto and
 * report=true, and kiln_model_report gives the text and the DOT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/flags.h"
#include "tools/tool.h"

static kiln_status write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  size_t n = strlen(text);
  bool ok = f && fwrite(text, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = false;
  return ok ? NULL : status_error(KILN_IO_ERROR, "cannot write %s", path);
}

int cmd_cluster(int argc, char **argv) {
  if (argc < 1) return tool_usage_error("kiln cluster needs a model: kiln cluster MODEL.onnx|MODEL.pb|model.json");
  if (argc > 1) return tool_usage_error("kiln cluster takes one model (unexpected '%s')", argv[1]);
  kiln_options *opts = NULL;
  kiln_model *model = NULL;
  char *text = NULL;
  kiln_status s = tool_kiln_options(&opts);
  if (!s) s = kiln_options_set(opts, "jit", "auto");
  if (!s) s = kiln_options_set(opts, "report", "true");
  if (!s) s = kiln_model_load(argv[0], opts, &model);
  if (!s) s = kiln_model_report(model, KILN_REPORT_CLUSTERS, &text);
  if (!s) fputs(text, stdout);
  kiln_free(text);
  text = NULL;
  if (!s && kiln_flags.dot[0]) {
    s = kiln_model_report(model, KILN_REPORT_DOT, &text);
    if (!s) s = write_text(kiln_flags.dot, text);
    kiln_free(text);
  }
  kiln_model_free(model);
  kiln_options_free(opts);
  return s ? tool_fail(s) : TOOL_OK;
}
