/* `kiln`: the command-line front door. main() sets the flags from their defaults,
 * KILN_FLAGS and the command line (in that order, so the command line wins), applies the
 * flags that configure the libraries process-wide (verbosity, tensor size cap, --plugin
 * manifests) and dispatches to a subcommand. Every path returns through here so the
 * flag storage is released and a leak checker sees a clean exit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "base/flags.h"
#include "base/log.h"
#include "hlo/literal.h"
#include "tools/tool.h"

static const char usage_text[] =
    "usage: kiln COMMAND [ARGS] [FLAGS]\n"
    "\n"
    "commands:\n"
    "  run FILE.hlo [-i NAME=PATH.npy]... [-o OUTDIR] [--device NAME] [--iters N] [--json]\n"
    "        compile the module for a device, run it on .npy inputs and write\n"
    "        OUTDIR/output_0.npy, output_1.npy, ... (one per element of the root tuple).\n"
    "        NAME is pN (the parameter number) or the parameter instruction's name.\n"
    "  run MODEL [-i NAME=PATH]... [-o OUTDIR] [--device NAME] [--iters N] [--json] [--jit off|auto]\n"
    "        import MODEL (model.onnx, a TensorFlow GraphDef .pb, a TF SavedModel directory\n"
    "        or a TF.js model.json) and run it; NAME is a graph input (ONNX input, TF\n"
    "        Placeholder, SavedModel signature key; --signature NAME picks a SignatureDef\n"
    "        other than serving_default). Writes\n"
    "        OUTDIR/NAME.npy per graph output (TF's ':0' dropped, characters outside\n"
    "        [A-Za-z0-9_.-] replaced by '_'). --jit auto (the default) clusters the\n"
    "        compilable regions and compiles them just in time; --jit off runs op by op.\n"
    "        ONNX sequences, optionals and maps, in and out alike: a sequence is a\n"
    "        directory PATH/ of 0.npy, 1.npy, ... (no gaps; nested values as 0/, 1/;\n"
    "        empty: an empty directory), a map a directory of keys.npy and values.npy,\n"
    "        an optional what it holds, or when empty a path ending in .none (written\n"
    "        as the empty file OUTDIR/NAME.none).\n"
    "        --outputs T,... / --inputs T,... name the tensors to return / feed (\"node\" or\n"
    "        \"node:N\"; a frozen GraphDef's outputs are otherwise its unread nodes).\n"
    "  cluster MODEL [--dot FILE] [--log_placement] [--jit_ops OPS] [--jit_exclude_ops OPS] [--outputs T,...]\n"
    "        show what auto-clustering does with MODEL: clusters, sizes, op histograms\n"
    "        and why every other node stayed out; --dot writes a Graphviz picture.\n"
    "  run ... --cache_dir DIR\n"
    "        cpu backend: keep compiled object code in DIR (created if missing); a later\n"
    "        process compiling the same module links it instead of running LLVM.\n"
    "  compile FILE.hlo [--dump_to DIR] [--dump_pass_re RE]\n"
    "        run the optimization pipeline and print the resulting module.\n"
    "  flags        list every flag with its type, default and help\n"
    "  devices      list the devices (backends) kiln can run on\n"
    "  ops [NAMESPACE]  list the framework ops kiln can run (onnx, tf, ...)\n"
    "  plugins      list discovered plugins (KILN_PLUGIN_PATH, --plugin FILE) and why any is unavailable\n"
    "  conformance --device NAME [--csv FILE]\n"
    "        run every opcode x type x shape case on the device and on the evaluator;\n"
    "        prints OK / FAIL / unsupported per case, exits 1 if any case is wrong\n"
    "  help         print this message\n"
    "\n"
    "Flags are also read from the KILN_FLAGS environment variable (e.g.\n"
    "KILN_FLAGS='--device=interpreter --v=1'); the command line wins.\n";

int tool_fail(kiln_status s) {
  fprintf(stderr, "kiln: error: %s\n", kiln_status_message(s));
  kiln_status_free(s);
  return TOOL_FAILED;
}

int tool_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kiln: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return TOOL_USAGE;
}

static int dispatch(int n_pos, char **pos) {
  if (kiln_flags.help) {
    fputs(usage_text, stdout);
    return TOOL_OK;
  }
  if (n_pos == 0) {
    fputs(usage_text, stderr);
    return TOOL_USAGE;
  }
  const char *cmd = pos[0];
  if (strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return TOOL_OK;
  }
  if (strcmp(cmd, "run") == 0) return cmd_run(n_pos - 1, pos + 1);
  if (strcmp(cmd, "compile") == 0) return cmd_compile(n_pos - 1, pos + 1);
  if (strcmp(cmd, "flags") == 0) return cmd_flags(n_pos - 1, pos + 1);
  if (strcmp(cmd, "devices") == 0) return cmd_devices(n_pos - 1, pos + 1);
  if (strcmp(cmd, "plugins") == 0) return cmd_plugins(n_pos - 1, pos + 1);
  if (strcmp(cmd, "conformance") == 0) return cmd_conformance(n_pos - 1, pos + 1);
  if (strcmp(cmd, "ops") == 0) return cmd_ops(n_pos - 1, pos + 1);
  if (strcmp(cmd, "cluster") == 0) return cmd_cluster(n_pos - 1, pos + 1);
  return tool_usage_error("unknown command '%s' (commands: run, cluster, compile, flags, devices, plugins, conformance, ops, help)", cmd);
}

int main(int argc, char **argv) {
  flags_reset();
  int rc;
  kiln_status s = flags_parse_env(getenv("KILN_FLAGS"));
  int n_pos = 0;
  char **pos = NULL;
  if (!s) s = flags_parse_args(argc - 1, argv + 1, &n_pos, &pos);
  if (s) {
    rc = tool_usage_error("%s", kiln_status_message(s));
    kiln_status_free(s);
  } else if (kiln_flags.max_literal_bytes < 0) {
    rc = tool_usage_error("--max_literal_bytes must be >= 0");
  } else {
    log_verbose = (int)kiln_flags.v;
    literal_max_bytes = kiln_flags.max_literal_bytes;
    /* Only when asked: registering discovers, and commands that never touch a device
     * should not open plugins. */
    if (kiln_flags.plugin.n > 0) backend_registry_add_plugins(0, NULL, kiln_flags.plugin.n, kiln_flags.plugin.v);
    rc = dispatch(n_pos, pos);
  }
  free(pos);
  backend_registry_reset(); /* unload plugins, so a leak checker sees a clean exit */
  flags_reset();
  fflush(stdout);
  return rc;
}
