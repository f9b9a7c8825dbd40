/* Command-line and environment flags: one static table for the whole program.
 *
 * Every flag is one line of KILN_FLAG_LIST below (name, optional one-letter alias, type,
 * default, help); the X-macro turns that line into a typed field of the global
 * `kiln_flags` struct and into a row of the runtime table that `kiln flags` prints, so a
 * flag cannot exist in one place and be missing from the other. Values come first from
 * the defaults, then from the KILN_FLAGS environment variable (whitespace-separated
 * `--name=value` / `--name value` / `--bool`), then from the command line; the command
 * line wins because it is parsed last. An unknown flag or a bad value is an
 * INVALID_ARGUMENT error naming it (the `kiln` command exits 2 on those).
 *
 * Accepted forms: `--name=value`, `--name value` (non-bool), `--bool`, `--bool=true|false|1|0`,
 * `-x value` / `-x=value` for one-letter aliases, and `--` to end flag parsing. List flags
 * (type LIST) collect every occurrence in order. Later components add flags by adding a
 * line to KILN_FLAG_LIST. */
#ifndef KILN_BASE_FLAGS_H
#define KILN_BASE_FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

/* X(name, alias ('\0' for none), TYPE, "default", "help") */
#define KILN_FLAG_LIST(X)                                                                          \
  X(device, '\0', STRING, "", "device (backend) to run on; empty: the default for HLO, and per node/cluster the highest-priority device that supports it for models (`kiln devices`)") \
  X(iters, '\0', INT, "1", "kiln run: how many times to execute the compiled module (>= 1)")       \
  X(json, '\0', BOOL, "false", "kiln run: print one JSON line with device and timings")            \
  X(output_dir, 'o', STRING, ".", "kiln run: directory for output_N.npy (created if missing)")     \
  X(input, 'i', LIST, "", "kiln run: NAME=PATH.npy for an entry parameter (pN or its name); repeatable") \
  X(inputs, '\0', STRING, "", "kiln run/cluster MODEL: comma-separated tensors to feed (name or name:index; an internal tensor becomes a fed input)") \
  X(outputs, '\0', STRING, "", "kiln run/cluster MODEL: comma-separated tensors to return (name or name:index) instead of the model's outputs") \
  X(jit, '\0', STRING, "auto", "kiln run MODEL: auto (cluster and compile just in time) or off (op by op)") \
  X(jit_ops, '\0', STRING, "", "comma-separated ops the bridge may cluster (others stay op by op); empty: all")  \
  X(jit_exclude_ops, '\0', STRING, "", "comma-separated ops the bridge never clusters")            \
  X(min_cluster_size, '\0', INT, "4", "smallest cluster the bridge keeps (Identity and Const do not count)") \
  X(max_cluster_size, '\0', INT, "1000000", "largest cluster the bridge builds, in nodes")          \
  X(clustering_debug, '\0', BOOL, "false", "log every merge the bridge refuses, with the reason")   \
  X(log_placement, '\0', BOOL, "false", "print the device each node was placed on")                \
  X(no_host_fallback, '\0', BOOL, "false", "a node its device cannot run is an error, not a host fallback") \
  X(dot, '\0', STRING, "", "kiln cluster: write the clustered graph as Graphviz DOT to this file")  \
  X(signature, '\0', STRING, "", "SavedModel: the SignatureDef to run (kiln run/cluster/info); empty: serving_default") \
  X(dump_to, '\0', STRING, "", "directory to dump the module before optimizations and after passes") \
  X(dump_pass_re, '\0', STRING, ".*", "POSIX extended regex: dump after the passes whose name matches") \
  X(dump_large_constants, '\0', BOOL, "false", "print constants of more than 10 elements in dumps in full (default {...})") \
  X(disable_passes, '\0', STRING, "", "comma-separated pass names the pipeline skips")             \
  X(max_literal_bytes, '\0', INT, "8589934592", "largest single tensor kiln allocates, in bytes")  \
  X(plugin, '\0', LIST, "", "plugin manifest (NAME.kiln-plugin.json) to load besides KILN_PLUGIN_PATH; repeatable") \
  X(plugin_option, '\0', LIST, "", "KEY=VALUE compile option the host passes to every plugin compile; repeatable") \
  X(allow_plugin_fallback, '\0', BOOL, "false", "a plugin compile that fails with anything but UNIMPLEMENTED warns and falls back to the next device instead of failing the run") \
  X(profile, '\0', BOOL, "false", "cpu backend: print where each compiled module's run time went, per instruction, when its last user releases it") \
  X(cache_dir, '\0', STRING, "", "cpu backend: directory of the persistent compilation cache; a later process compiling the same module links the stored object code instead of running LLVM (created if missing; empty: off)") \
  X(allow_excess_precision, '\0', BOOL, "true", "HLO modules on cpu: a kernel computes chains of bf16 arithmetic in f32 and rounds only what it writes out, as XLA:CPU does by default (xla_allow_excess_precision=true; results move by up to bf16 rounding from the evaluator's); false: every bf16 op rounds, bit for bit as the evaluator and --device interpreter. A model's clusters always round") \
  X(csv, '\0', STRING, "", "kiln conformance: write the opcode x dtype support matrix to this CSV file") \
  X(v, '\0', INT, "0", "verbosity: 1 prints info messages on stderr")                              \
  X(help, 'h', BOOL, "false", "print usage and exit")

typedef enum flag_type { FLAG_BOOL, FLAG_INT, FLAG_DOUBLE, FLAG_STRING, FLAG_LIST } flag_type;

/* A LIST flag's values, in the order given (environment first, then command line). */
typedef struct flag_list {
  int n;
  const char **v;
} flag_list;

#define FLAG_CTYPE_BOOL bool
#define FLAG_CTYPE_INT int64_t
#define FLAG_CTYPE_DOUBLE double
#define FLAG_CTYPE_STRING const char *
#define FLAG_CTYPE_LIST flag_list

typedef struct kiln_flags_t {
#define X(name, alias, type, def, help) FLAG_CTYPE_##type name;
  KILN_FLAG_LIST(X)
#undef X
} kiln_flags_t;

/* The current values. Strings are never NULL (an unset string is ""). Storage for
 * strings and lists is owned by the flags module until flags_reset. */
extern kiln_flags_t kiln_flags;

typedef struct flag_info {
  const char *name;
  char alias;
  flag_type type;
  const char *default_value;
  const char *help;
} flag_info;

int flags_count(void);
const flag_info *flags_at(int i);
/* NULL when no flag has that name. */
const flag_info *flags_find(const char *name);
const char *flag_type_name(flag_type t);

/* Restores every default and frees the values parsed so far. Call once before parsing
 * and once at exit (so leak checkers see a clean heap). */
void flags_reset(void);
/* Parses the contents of KILN_FLAGS (NULL or "" is fine). Positional words there are an
 * error: the environment only carries flags. Single or double quotes group a value with
 * spaces. */
kiln_status flags_parse_env(const char *text);
/* Parses argv[0..argc) (argv[0] is NOT skipped: pass argv + 1). Words that are not flags
 * are collected in order into *positional (a malloc'ed array of pointers into argv;
 * free it with free()), count in *n_positional. */
kiln_status flags_parse_args(int argc, char **argv, int *n_positional, char ***positional);
/* Sets one flag from text, as if `--name=value` had been given (value NULL: a bool set
 * to true). */
kiln_status flags_set(const char *name, const char *value);

/* The current value of flag i, formatted as the user would write it (malloc'ed). */
char *flags_value_string(int i);

#endif
