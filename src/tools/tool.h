/* Shared plumbing of the `kiln` command's subcommands.
 *
 * Exit codes are part of the command's interface: 0 success, 1 the input was bad or the
 * work failed (message on stderr after "kiln: error: "), 2 the command line itself was
 * wrong (unknown flag or device, missing argument). Each subcommand gets the positional
 * words after its own name and reads everything else from kiln_flags. */
#ifndef KILN_TOOLS_TOOL_H
#define KILN_TOOLS_TOOL_H

#include "base/status.h"

enum { TOOL_OK = 0, TOOL_FAILED = 1, TOOL_USAGE = 2 };

/* Prints "kiln: error: MESSAGE", frees s, returns TOOL_FAILED. */
int tool_fail(kiln_status s);
/* Prints "kiln: error: MESSAGE"; returns TOOL_USAGE. */
int tool_usage_error(const char *fmt, ...) KILN_PRINTF(1, 2);
/* mkdir -p. */
kiln_status tool_make_dirs(const char *path);

int cmd_run(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_flags(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_plugins(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_cluster(int argc, char **argv);

#endif
