/* `kiln compile FILE.hlo`: parse, verify, run the target-independent optimization
 * pipeline (with --dump_to / --dump_pass_re / --disable_passes from the flags) and print
 * the optimized module on stdout in HLO text, which kiln and XLA both read back. */
#include <stdio.h>
#include <stdlib.h>

#include "eval/constant_folding.h"
#include "hlo/parser.h"
#include "hlo/passes/pipeline.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "tools/tool.h"

int cmd_compile(int argc, char **argv) {
  if (argc < 1) return tool_usage_error("kiln compile needs an HLO file: kiln compile FILE.hlo");
  if (argc > 1) return tool_usage_error("kiln compile takes one HLO file (unexpected '%s')", argv[1]);
  hlo_module *m = NULL;
  kiln_status s = hlo_parse_file(argv[0], &m);
  if (!s) s = hlo_verify_module(m);
  if (!s) {
    hlo_pipeline *p = hlo_pipeline_new_optimize(eval_pass_constant_folding);
    hlo_pipeline_options opts = tool_pipeline_options();
    s = hlo_pipeline_run(p, m, &opts, NULL);
    hlo_pipeline_free(p);
  }
  if (s) {
    hlo_module_free(m);
    return tool_fail(s);
  }
  char *text = hlo_module_to_string(m, NULL);
  fputs(text, stdout);
  free(text);
  hlo_module_free(m);
  return TOOL_OK;
}
