/* kiln public C API: load a model, look at its inputs and outputs, run it.
 *
 * This header is everything a program embedding kiln needs (link libkiln: `pkg-config
 * --cflags --libs kiln`, or CMake `find_package(kiln)` and `kiln::kiln`). It is C99 and
 * valid C++; every handle is opaque; every call that can fail returns a kiln_status
 * (NULL on success, else an error object the caller owns and frees with
 * kiln_status_free). Error messages name what was wrong and where: the file (and
 * line:column for text formats), the node and op, the input and the shapes involved.
 * Structs the caller fills begin with struct_size (set it with the matching _INIT macro
 * or init function) so later versions can add fields without breaking old callers.
 *
 * A complete program (error handling shortened to CHECK):
 *
 *     #include <kiln/kiln.h>
 *     #define CHECK(call) do { kiln_status s_ = (call); if (s_) { \
 *         fprintf(stderr, "%s\n", kiln_status_message(s_)); kiln_status_free(s_); exit(1); } } while (0)
 *
 *     kiln_options *opts;
 *     CHECK(kiln_options_create(&opts));
 *     CHECK(kiln_options_set(opts, "jit", "auto"));        // any `kiln flags` switch by name
 *     kiln_model *model;
 *     CHECK(kiln_model_load("mobilenet.onnx", opts, &model));
 *     kiln_options_free(opts);                              // the model keeps its own copy
 *
 *     kiln_value in = KILN_VALUE_INIT;                      // what the model takes
 *     CHECK(kiln_model_input(model, 0, &in));
 *     float pixels[1 * 3 * 224 * 224] = {0};
 *     int64_t dims[4] = {1, 3, 224, 224};
 *     in.dims = dims; in.rank = 4;                          // fill dynamic dims in
 *     in.data = pixels; in.byte_size = sizeof pixels;       // borrowed, not copied
 *
 *     kiln_tensor *out[1];
 *     CHECK(kiln_model_run(model, NULL, 1, &in, 1, NULL, out)); // NULL names: outputs in order
 *     const float *scores = (const float *)kiln_tensor_data(out[0]);
 *     int64_t n = kiln_tensor_element_count(out[0]);
 *     ... use scores[0..n) ...
 *     kiln_tensor_free(out[0]);
 *     kiln_model_free(model);
 *
 * Threads. kiln_model_run may be called on one model from any number of threads at
 * once: each concurrent run gets its own execution state (the model keeps a pool of
 * them), compiled code is shared between them through a locked cache, and the results
 * equal a single-threaded run's bit for bit. A model whose graph assigns resource
 * variables (training-style state) serialises its runs instead, so the variables see
 * one run after another. Everything else that takes a handle is safe to call
 * concurrently on *different* handles; on one kiln_options or kiln_tensor object the
 * caller serialises. Loading models, kiln_device_count/kiln_device_info and the
 * version and name functions are thread-safe. kiln_model_free must not overlap a run
 * of the same model; using any handle after its free is undefined. Freeing NULL is
 * always a no-op; a status is freed exactly once (kiln_status_free(NULL) is fine).
 *
 * Logging. Warnings (a fallback to another device, an elided constant) and, at level
 * INFO, progress messages go to stderr by default; kiln_options_set_log_callback
 * routes the messages of every call made with that model to a function instead (the
 * routing is per calling thread for the duration of the call, so two models can log
 * to two places at once). */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libkiln.so; the static library and the tool see the same symbols. */
#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* ------------------------------------------------------------------ version ---- */

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 2
#define KILN_VERSION_PATCH 0
/* "0.2.0": the library actually loaded, which may be newer than this header. */
KILN_API const char *kiln_version(void);
/* MAJOR * 10000 + MINOR * 100 + PATCH of the loaded library. */
KILN_API int kiln_version_number(void);

/* ------------------------------------------------------------------- status ---- */

typedef enum kiln_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,   /* bad user input: malformed file, wrong shapes, bad option */
  KILN_NOT_FOUND = 2,          /* a named thing (file, input, output, device) does not exist */
  KILN_UNIMPLEMENTED = 3,      /* valid input that this build does not support (yet) */
  KILN_OUT_OF_RANGE = 4,       /* an index or size beyond what is representable */
  KILN_RESOURCE_EXHAUSTED = 5, /* allocation failure, size over a configured cap */
  KILN_INTERNAL = 6,           /* a kiln bug: an invariant did not hold */
  KILN_IO_ERROR = 7            /* the operating system refused a read or write */
} kiln_code;

typedef struct kiln_status_t kiln_status_t;
typedef kiln_status_t *kiln_status; /* NULL == OK */

/* KILN_OK for NULL. */
KILN_API kiln_code kiln_status_code(const kiln_status_t *s);
/* "OK" for NULL; valid until the status is freed. */
KILN_API const char *kiln_status_message(const kiln_status_t *s);
/* "INVALID_ARGUMENT", ...; "UNKNOWN" for a value outside the enum. */
KILN_API const char *kiln_code_name(kiln_code code);
KILN_API void kiln_status_free(kiln_status_t *s);

/* ------------------------------------------------------------ element types ---- */

typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0, /* also "not known" in model introspection */
  KILN_BOOL = 1,          /* one byte, 0 or 1 */
  KILN_INT8 = 2,
  KILN_INT16 = 3,
  KILN_INT32 = 4,
  KILN_INT64 = 5,
  KILN_UINT8 = 6,
  KILN_UINT16 = 7,
  KILN_UINT32 = 8,
  KILN_UINT64 = 9,
  KILN_FLOAT16 = 10,   /* IEEE half, raw 16-bit patterns */
  KILN_BFLOAT16 = 11,  /* raw 16-bit patterns */
  KILN_FLOAT32 = 12,
  KILN_FLOAT64 = 13,
  KILN_COMPLEX64 = 14, /* (re, im) float pairs */
  KILN_COMPLEX128 = 15,
  /* The narrow types, one byte per element (never packed two per byte): the float8 and
   * float4 types as their raw bit patterns (float4 in the low 4 bits), int4 as an int8
   * value in -8..7, uint4 as a uint8 value in 0..15. Numbers and names follow
   * ml_dtypes. */
  KILN_FLOAT8E4M3FN = 16,
  KILN_FLOAT8E4M3FNUZ = 17,
  KILN_FLOAT8E5M2 = 18,
  KILN_FLOAT8E5M2FNUZ = 19,
  KILN_FLOAT4E2M1FN = 20,
  KILN_INT4 = 21,
  KILN_UINT4 = 22,
  /* Added later, so numbered after the others: int2 as an int8 value in -2..1, uint2 as
   * a uint8 value in 0..3, float8_e8m0fnu as its raw byte (the biased exponent; 0xFF is
   * NaN). */
  KILN_INT2 = 23,
  KILN_UINT2 = 24,
  KILN_FLOAT8E8M0FNU = 25,
  /* Text (numbered apart from the numeric types): one element is a `const char *` to
   * NUL-terminated UTF-8, so a value's data is an array of element-count pointers and
   * its byte_size element-count * sizeof(const char *). Inputs: kiln copies the text
   * during the run; no element may be NULL. Outputs (kiln_tensor_data): the pointers
   * and the text belong to the tensor and go with kiln_tensor_free; a string holding
   * a NUL byte cannot be handed out this way and fails the run naming the output.
   * kiln_tensor_create and kiln_model_run_into do not take strings. */
  KILN_STRING = 32
} kiln_dtype;

/* Bytes per element; 0 for INVALID or a value outside the enum. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);
/* numpy's names: "bool", "int8", ..., "float16", "bfloat16", "float32", "complex64",
 * and ml_dtypes' for the narrow types ("float8_e4m3fn", "int4", ...); "invalid"
 * otherwise. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/* ------------------------------------------------------------------ options ---- */

typedef struct kiln_options kiln_options;

typedef enum kiln_log_level { KILN_LOG_INFO = 0, KILN_LOG_WARNING = 1, KILN_LOG_ERROR = 2 } kiln_log_level;
/* Receives one message (no trailing newline); called on the thread that made the call. */
typedef void (*kiln_log_fn)(void *user, kiln_log_level level, const char *message);

/* Options with their defaults (the same as the `kiln` command's). */
KILN_API kiln_status kiln_options_create(kiln_options **out);
KILN_API kiln_status kiln_options_clone(const kiln_options *opts, kiln_options **out);
KILN_API void kiln_options_free(kiln_options *opts);

/* Sets one option from text, as `kiln` would read `--KEY=VALUE`:
 *   device            a `kiln devices` name; "" (default): HLO modules run on cpu,
 *                     a model's nodes and clusters on the highest-priority device
 *                     that supports them
 *   jit               "auto" (default: cluster and compile just in time) or "off"
 *   threads           worker threads for the cpu device; 0 (default): all cores
 *   dump_to           directory for module and graph dumps; "" (default): none
 *   dump_pass_re      POSIX extended regex of the passes to dump after (".*")
 *   dump_large_constants  "true"/"false"
 *   disable_passes    comma-separated HLO pass names to skip
 *   jit_ops, jit_exclude_ops  comma-separated ops the bridge may / may not cluster
 *   min_cluster_size, max_cluster_size  integers (4, 1000000)
 *   clustering_debug, log_placement, no_host_fallback, profile  "true"/"false"
 *   plugin_path       colon-separated directories of *.kiln-plugin.json manifests
 *   plugin            a plugin manifest path (adds one each time it is set)
 *   plugin_option     KEY=VALUE passed to every plugin compile (adds one each time)
 *   allow_plugin_fallback  "true": a plugin compile failing with anything but
 *                     UNIMPLEMENTED logs a warning and the work goes to the next
 *                     device; "false" (default): it fails the load / run
 *   log_level         "info", "warning" (default) or "error": the least severe
 *                     message delivered
 *   format            "auto" (default), "onnx", "graphdef", "tfjs", "hlo", "graph",
 *                     "savedmodel": how kiln_model_load* reads the bytes
 *   signature         a SavedModel's SignatureDef to run; "" (default):
 *                     serving_default (an unknown name is NOT_FOUND listing them)
 *   report            "true": keep what the bridge decided for kiln_model_report
 *   inputs, outputs   comma-separated tensor names, TensorFlow style: "node" (its
 *                     output 0) or "node:N", or a name the model already gives an
 *                     input or output. outputs: the tensors the model returns, in
 *                     that order, instead of its own outputs (a frozen GraphDef has
 *                     none: kiln takes every node whose data nothing reads, minus
 *                     control-only helpers). inputs: the inputs in that order; an
 *                     internal tensor becomes an input of that name, fed in place of
 *                     what computed it. A name matching nothing fails the load
 *                     (NOT_FOUND naming it). "" (default): the model's own. Not for
 *                     HLO modules.
 * An unknown key is NOT_FOUND listing the keys; a bad value is INVALID_ARGUMENT naming
 * the key and what it takes.
 * Plugins named by plugin_path / plugin join the process-wide device registry when a
 * model is loaded with these options. */
KILN_API kiln_status kiln_options_set(kiln_options *opts, const char *key, const char *value);
/* The current value of key as text (as kiln_options_set takes it; lists joined by
 * ','); the pointer stays valid until the option changes or opts is freed. */
KILN_API kiln_status kiln_options_get(const kiln_options *opts, const char *key, const char **value);
/* Number of settable keys, and key i with a one-line description (for listings). */
KILN_API int kiln_options_key_count(void);
KILN_API const char *kiln_options_key(int i, const char **help);
/* Routes the log messages of models loaded with these options to fn (NULL: back to
 * stderr). Models copy fn and user: user must stay valid until every such model is
 * freed. */
KILN_API kiln_status kiln_options_set_log_callback(kiln_options *opts, kiln_log_fn fn, void *user);

/* ------------------------------------------------------------ value kinds ---- */

/* What a value is. Most are tensors; ONNX models may also take and give sequences,
 * optionals and maps. A non-tensor value is a list of items, each itself a value:
 *   SEQUENCE  0 or more items (its elements, in order): tensors of one dtype, or
 *             nested sequences or maps (ZipMap gives a sequence of maps);
 *   OPTIONAL  0 items (none) or 1 (a tensor or a sequence);
 *   MAP       2 tensor items, the keys and the values: 1-D, of one length, the keys
 *             KILN_INT64 or KILN_STRING (entry i maps keys[i] to values[i]). */
typedef enum kiln_kind {
  KILN_KIND_TENSOR = 0,
  KILN_KIND_SEQUENCE = 1,
  KILN_KIND_OPTIONAL = 2,
  KILN_KIND_MAP = 3
} kiln_kind;
/* "tensor", "sequence", "optional", "map"; "invalid" otherwise. */
KILN_API const char *kiln_kind_name(kiln_kind kind);

/* ------------------------------------------------------------------ tensors ---- */

/* A dense row-major tensor owned by kiln (outputs) or wrapping caller memory; an
 * output may also be a sequence, optional or map (kiln_tensor_kind), whose items are
 * again kiln_tensors. */
typedef struct kiln_tensor kiln_tensor;

/* A new zero-filled tensor (any dtype but KILN_STRING). */
KILN_API kiln_status kiln_tensor_create(kiln_dtype dtype, int rank, const int64_t *dims, kiln_tensor **out);
KILN_API void kiln_tensor_free(kiln_tensor *t);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int kiln_tensor_rank(const kiln_tensor *t);
/* rank entries; valid while t is. */
KILN_API const int64_t *kiln_tensor_dims(const kiln_tensor *t);
KILN_API int64_t kiln_tensor_element_count(const kiln_tensor *t);
KILN_API size_t kiln_tensor_byte_size(const kiln_tensor *t);
/* The elements, row-major (never NULL, even for 0 elements). */
KILN_API void *kiln_tensor_data(kiln_tensor *t);
/* KILN_KIND_TENSOR for tensors. A sequence, optional or map output has rank 0, no
 * elements and no bytes; its dtype is a sequence's element dtype (INVALID when not
 * known) and KILN_DTYPE_INVALID otherwise; what it holds are its items. */
KILN_API kiln_kind kiln_tensor_kind(const kiln_tensor *t);
/* Items of a sequence, optional or map (kiln_kind); 0 for a tensor. */
KILN_API int kiln_tensor_item_count(const kiln_tensor *t);
/* Item i (NULL when out of range), owned by t: valid while t is, freed with it (never
 * pass it to kiln_tensor_free). */
KILN_API kiln_tensor *kiln_tensor_item(const kiln_tensor *t, int i);

/* ------------------------------------------------------------------- models ---- */

typedef struct kiln_model kiln_model;

typedef enum kiln_format {
  KILN_FORMAT_AUTO = 0,     /* by extension, else by content (as `kiln run` decides) */
  KILN_FORMAT_ONNX = 1,     /* ModelProto */
  KILN_FORMAT_GRAPHDEF = 2, /* frozen TensorFlow GraphDef (.pb) */
  KILN_FORMAT_TFJS = 3,     /* TF.js graph model.json (file only: it names its shards) */
  KILN_FORMAT_HLO = 4,      /* XLA HLO text */
  KILN_FORMAT_GRAPH = 5,    /* kiln's graph text form (.graph) */
  KILN_FORMAT_SAVEDMODEL = 6 /* TensorFlow SavedModel directory (file only: it names its checkpoint) */
} kiln_format;

/* Loads and prepares a model: imports it, runs the bridge (clustering per the jit
 * option) or, for HLO, parses, verifies and compiles it for the device. opts may be
 * NULL (defaults); the model copies what it needs, so opts may be freed afterwards. */
KILN_API kiln_status kiln_model_load(const char *path, const kiln_options *opts, kiln_model **out);
/* The same from bytes in memory (copied as needed; data may be freed on return).
 * AUTO recognises ONNX, GraphDef and HLO text by content; TF.js needs its file. */
KILN_API kiln_status kiln_model_load_from_memory(const void *data, size_t size, kiln_format format,
                                                 const kiln_options *opts, kiln_model **out);
/* NULL is ignored. No run of the model may be in progress. */
KILN_API void kiln_model_free(kiln_model *model);
/* What was loaded (never AUTO). */
KILN_API kiln_format kiln_model_format(const kiln_model *model);
/* "ONNX", "TensorFlow GraphDef", "TF.js graph model", "HLO text", "kiln graph". */
KILN_API const char *kiln_format_name(kiln_format format);

/* A named tensor: what a model takes or gives (introspection fills name, dtype, rank
 * and dims; rank -1 is an unknown rank, a dim of -1 is dynamic, dtype INVALID an
 * element type kiln cannot tell before a run, as for outputs downstream of a dynamic
 * dimension) and what a run reads
 * (name, dtype, rank, dims, data, byte_size) or writes into (run_into).
 *
 * kind, n_items and items (added in 0.2; a caller built against an older header, whose
 * struct_size ends before kind, passes tensors) carry sequences, optionals and maps
 * (kiln_kind). An input of another kind leaves rank, dims, data and byte_size alone
 * and lists its items: items[0..n_items) are kiln_values themselves (struct_size set,
 * name ignored), borrowed for the call like data. A sequence's dtype names its element
 * type, which an empty one needs (INVALID: whatever the model declares). An optional
 * that holds a tensor may also be passed as the plain tensor. Introspection sets kind
 * to what an input is declared as (and dtype to its innermost element type, INVALID
 * where the model does not say); outputs say KILN_KIND_TENSOR before a run, since the
 * kind of a result shows on the kiln_tensor a run returns. */
typedef struct kiln_value {
  size_t struct_size;
  const char *name;
  kiln_dtype dtype;
  int rank;
  const int64_t *dims;
  void *data;
  size_t byte_size;
  kiln_kind kind;
  int n_items;
  const struct kiln_value *items;
} kiln_value;
#define KILN_VALUE_INIT {sizeof(kiln_value), NULL, KILN_DTYPE_INVALID, 0, NULL, NULL, 0, KILN_KIND_TENSOR, 0, NULL}

/* The inputs every run must give. */
KILN_API int kiln_model_num_inputs(const kiln_model *model);
/* Inputs a run may give or leave out; kiln_model_input describes them at indices
 * kiln_model_num_inputs .. + this - 1. They are inputs a graph declares but never
 * reads (ONNX allows them: a value given is checked against the declared dtype and
 * shape, then ignored) and TensorFlow PlaceholderWithDefault nodes (a value given
 * replaces the default). 0 for HLO modules. */
KILN_API int kiln_model_num_optional_inputs(const kiln_model *model);
KILN_API int kiln_model_num_outputs(const kiln_model *model);
/* Fills *out (struct_size set by the caller) for input / output i; the strings and dims
 * stay valid while the model lives. An index out of range is OUT_OF_RANGE. */
KILN_API kiln_status kiln_model_input(const kiln_model *model, int i, kiln_value *out);
KILN_API kiln_status kiln_model_output(const kiln_model *model, int i, kiln_value *out);

/* The index of the input / output a name refers to, by the rules runs use: the exact
 * name; for TensorFlow-style names "x" and "x:0" alike; for HLO parameters also "pN"
 * (parameter number N). An unknown name is NOT_FOUND listing what the model has. */
KILN_API kiln_status kiln_model_find_input(const kiln_model *model, const char *name, int *index);
KILN_API kiln_status kiln_model_find_output(const kiln_model *model, const char *name, int *index);

/* Per-run options; NULL means the defaults. */
typedef struct kiln_run_options {
  size_t struct_size;
  /* cpu worker threads for this run; 0: the model's `threads` option. */
  int threads;
} kiln_run_options;
#define KILN_RUN_OPTIONS_INIT {sizeof(kiln_run_options), 0}

/* Runs the model once. inputs[0..n_inputs) are borrowed for the call (kiln reads the
 * caller's memory in place where it can); every input the model takes must be given
 * once, by name, with the declared dtype and a shape that fits the declared one (an
 * optional input at most once). String inputs and outputs: see KILN_STRING; sequence,
 * optional and map inputs and outputs: see kiln_kind and kiln_value (an input of the
 * wrong kind, or an element of the wrong dtype, is INVALID_ARGUMENT naming the input
 * and the element). output_names selects and orders the outputs (NULL: all of them,
 * in model order, and n_outputs must be kiln_model_num_outputs); outputs[0..n_outputs)
 * receive new kiln-owned tensors (free each with kiln_tensor_free, which frees a
 * sequence's items with it). On error no output is set. */
KILN_API kiln_status kiln_model_run(kiln_model *model, const kiln_run_options *opts, int n_inputs,
                                    const kiln_value *inputs, int n_outputs, const char *const *output_names,
                                    kiln_tensor **outputs);
/* The same, writing each requested output into the caller's buffer outputs[i].data
 * of outputs[i].byte_size bytes (outputs[i].name selects the output; all names NULL
 * takes the model's outputs in order). Where dtype (not INVALID) or dims (not NULL)
 * are given they are checked against the result; byte_size is set to the bytes
 * written. A buffer that is too small or declared differently is INVALID_ARGUMENT
 * naming the output and what it needs, and then nothing is written. String outputs
 * and outputs that are not tensors cannot be written into caller memory
 * (UNIMPLEMENTED naming the output): use kiln_model_run. */
KILN_API kiln_status kiln_model_run_into(kiln_model *model, const kiln_run_options *opts, int n_inputs,
                                         const kiln_value *inputs, int n_outputs, kiln_value *outputs);

/* Counters over the model's life (all runs, all threads). */
typedef struct kiln_model_stats {
  size_t struct_size;
  int64_t runs;
  int nodes;                     /* graph nodes after the bridge (0 for HLO) */
  int clusters;                  /* clusters the bridge formed */
  int64_t cluster_runs, cluster_compiles, cluster_cache_hits, cluster_fallback_runs;
  double cluster_compile_ms;
  int64_t op_compiles, op_cache_hits; /* single-op modules compiled / reused */
  const char *device;            /* HLO: the device it was compiled for; graphs: the device lowered ops default to */
  const char *jit;               /* "auto" or "off" */
  /* Instructions of the compiled modules that their device runs through kiln's reference
   * evaluator instead of compiled code (the cpu backend's last resort; slow): 0 means
   * everything placed on the device was compiled. */
  int64_t evaluated_instructions;
  /* Bytes copied between host memory and devices that have memory of their own (plugins
   * such as opencl), each way: inputs, results, and variables and large constants, which
   * stay on the device and cross once per compiled signature. Always 0 on cpu. */
  int64_t bytes_to_device, bytes_to_host;
} kiln_model_stats;
#define KILN_MODEL_STATS_INIT {sizeof(kiln_model_stats), 0, 0, 0, 0, 0, 0, 0, 0.0, 0, 0, NULL, NULL, 0, 0, 0}
KILN_API kiln_status kiln_model_get_stats(const kiln_model *model, kiln_model_stats *out);

/* What the bridge decided for a graph model (what `kiln cluster` prints), as text the
 * caller frees with kiln_free. Needs the model loaded with the option report=true
 * (keeping it costs a copy of the graph's structure, weights shared); HLO modules have
 * no bridge (UNIMPLEMENTED). */
typedef enum kiln_report_kind {
  KILN_REPORT_CLUSTERS = 1, /* clusters with sizes and op histograms, and why every other node stayed out */
  KILN_REPORT_DOT = 2       /* the graph as clustered, as Graphviz DOT */
} kiln_report_kind;
KILN_API kiln_status kiln_model_report(const kiln_model *model, kiln_report_kind kind, char **text);
/* Frees memory kiln handed out as char* (kiln_model_report). NULL is ignored. */
KILN_API void kiln_free(void *p);

/* ------------------------------------------------------------------ devices ---- */

typedef struct kiln_device_info {
  size_t struct_size;
  const char *name;
  int priority;            /* higher wins when kiln places nodes */
  const char *description;
  int available;           /* 0: listed but unusable, see reason */
  const char *reason;      /* why unavailable; NULL when available */
  const char *source;      /* "built-in" or the plugin's manifest path */
} kiln_device_info;
#define KILN_DEVICE_INFO_INIT {sizeof(kiln_device_info), NULL, 0, NULL, 0, NULL, NULL}

/* Every registered device (usable or not), highest priority first. */
KILN_API int kiln_device_count(void);
KILN_API kiln_status kiln_device_info_at(int i, kiln_device_info *out);

#ifdef __cplusplus
}
#endif
#endif
