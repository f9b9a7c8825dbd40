/* Shared plumbing of the `kiln` command's subcommands.
 *
 * Exit codes are part of the command's interface: 0 success, 1 the input was bad or the
 * work failed (message on stderr after "kiln: error: "), 2 the command line itself was
 * wrong (unknown flag or device, missing argument). Each subcommand gets the positional
 * words after its own name and reads everything else from kiln_flags; the libraries
 * never read flags, so the tool_*_options functions map them onto the option structs
 * the libraries take. */
#ifndef KILN_TOOLS_TOOL_H
#define KILN_TOOLS_TOOL_H

#include "backends/backend.h"
#include "base/status.h"
#include "hlo/passes/pipeline.h"
#include "jit/jit.h"

enum { TOOL_OK = 0, TOOL_FAILED = 1, TOOL_USAGE = 2 };

/* Prints "kiln: error: MESSAGE", frees s, returns TOOL_FAILED. */
int tool_fail(kiln_status s);
/* Prints "kiln: error: MESSAGE"; returns TOOL_USAGE. */
int tool_usage_error(const char *fmt, ...) KILN_PRINTF(1, 2);

/* The flags as library options (tool_options.c); the strings stay kiln_flags' own, valid
 * until flags_reset. tool_pipeline_options: --dump_to, --dump_pass_re,
 * --dump_large_constants, --disable_passes. */
hlo_pipeline_options tool_pipeline_options(void);
/* Those four, --profile, --plugin_option and --allow_plugin_fallback. */
backend_compile_options tool_compile_options(void);
/* Every flag the public API has an option for, as a new kiln_options (free it with
 * kiln_options_free); --v=1 makes the log level info. */
kiln_status tool_kiln_options(kiln_options **out);

int cmd_run(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_flags(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_plugins(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_cluster(int argc, char **argv);

#endif
