/* TensorFlow importers: frozen GraphDef files (.pb, binary protobuf) and TF.js graph
 * models (model.json + weight shards) become kiln graphs of framework "tf".
 *
 * What the graph holds:
 *   - one node per NodeDef, op "tf.<op>" (TF's own name: tf.Conv2D, tf._FusedConv2D,
 *     tf.Switch, tf.TensorArrayV3...), the NodeDef's name, its device as the requested
 *     device, and every attribute converted to a graph attribute of the same kind.
 *     Control-flow and TensorArray/TensorList ops are ordinary nodes; the executor
 *     gives them meaning. NextIteration back-edges make cycles, which graph.h allows;
 *   - Placeholder nodes become graph inputs (graph_add_input) of the same name, with
 *     dtype and shape from their "dtype" and "shape" attributes (unknown dims -1,
 *     unknown rank when the shape says so or is absent). Control inputs into a
 *     placeholder are dropped (a fed value does not wait for anything).
 *     PlaceholderWithDefault has an input and stays an ordinary node;
 *   - Const nodes carry their value as the "value" tensor attribute and output 0 typed
 *     by it. TensorProto rules are TensorFlow's: tensor_content is raw little-endian
 *     bytes (strings: varint lengths, then the bytes); otherwise the typed field of the
 *     dtype is read and, when shorter than the shape, its last value repeats to fill it
 *     (no values at all: zeros). DT_RESOURCE and DT_VARIANT constants are not
 *     materialised: they become tensors of null handles of the right shape;
 *   - the function library: one graph function per FunctionDef, inputs from the
 *     signature's input_arg (typed when the arg has a fixed type), results named after
 *     the output_arg in signature order from the ret map. Body inputs written
 *     "node:out_arg:index" become ports through a table of the output arguments of
 *     TF's multi-output ops (Switch, TopKV2, FusedBatchNormV3, NonMaxSuppressionV5...)
 *     and the signatures of library functions; unknown single-output ops use the index.
 *     Attribute placeholders ($T in polymorphic bodies) are kept as string attributes
 *     "$T". Control returns are not represented. List-valued arguments (number_attr /
 *     type_list_attr) are UNIMPLEMENTED;
 *   - results: a TF.js signature's outputs (named by their signature keys, in file
 *     order) when present. A frozen GraphDef declares no outputs, so the importer
 *     picks every node that nothing consumes, except ops that only have effects or
 *     are never outputs (NoOp, Assert, Const, Placeholder, Save/Restore, Assign*,
 *     Print...) and nodes that exist only for control: a node whose only consumers are
 *     control edges is not an output (TF's lowered control flow makes such Identity
 *     helpers: a while loop's loop_body_control, a cond's pivot_t / pivot_f), unless
 *     every one of those edges goes into a NoOp that nothing waits on (TF1's
 *     tf.group of the final ops must not hide them). One result per node, output 0,
 *     named after the node. Callers who know better replace them with
 *     tf_import_set_results (or import_select_io, which the `--outputs` flag and the
 *     API's "outputs" option use).
 * Known multi-output ops and calls of library functions also get their full output
 * count (Switch: 2, Unpack: num, a call: the function's outputs), so an unconsumed
 * output still exists. An op name is always put in the "tf" namespace as written, so
 * one containing a '.' (only possible for function names) keeps it.
 *
 * TF.js: model.json must be format "graph-model" (or have no format but a topology).
 * modelTopology.node[] and library.function[] are NodeDefs/FunctionDefs in protobuf's
 * JSON mapping (camelCase or original field names, int64 as strings, bytes as base64,
 * enums by name or number). weightsManifest[] groups list shard files (read next to
 * model.json, concatenated in order) and weights, which are read in order from their
 * group's bytes: float32/int32/bool/complex64 raw, strings as uint32 length + bytes,
 * and quantized weights (quantization.dtype uint8/uint16: value = q * scale + min,
 * computed in double and rounded to float32, or Math.round'ed for int32; float16: IEEE
 * half to float32), exactly as TF.js decodes them. Each weight becomes the value of the
 * Const node of its name (TF.js keeps those nodes in the topology with only dtype and
 * shape), or a new Const node when there is none.
 *
 * Errors name the file and the node, weight or JSON path at fault. Nothing is left
 * allocated on error; a hostile file gets an error, never a crash. */
#ifndef KILN_IMPORT_TF_TF_IMPORT_H
#define KILN_IMPORT_TF_TF_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/graph.h"

/* What the importer learned besides the graph. */
typedef struct tf_import_info {
  int64_t producer;        /* versions.producer (GraphDef or modelTopology); 0 if absent */
  int64_t min_consumer;    /* versions.min_consumer; 0 if absent */
  bool results_inferred;   /* results were picked as unconsumed nodes (no signature) */
  int n_weights;           /* TF.js: weights read from the shards */
  int n_unmaterialised;    /* DT_RESOURCE / DT_VARIANT constants left as null handles */
} tf_import_info;

/* Binary GraphDef (a frozen graph). `name` is used in messages only (NULL:
 * "<graphdef>"). */
kiln_status tf_import_graphdef_file(const char *path, graph **out);
kiln_status tf_import_graphdef_buffer(const void *data, size_t len, const char *name, graph **out);

/* TF.js graph model: model.json with its shards in the same folder. */
kiln_status tfjs_import_file(const char *model_json_path, graph **out);
/* The same from memory: the JSON text and the bytes of every shard of every group,
 * concatenated in manifest order (weights are then read consecutively from it, as
 * TF.js does). `name` names model.json in messages (NULL: "model.json"). */
kiln_status tfjs_import_buffer(const char *json, size_t json_len, const void *weights, size_t weights_len,
                               const char *name, graph **out);

/* The same four, also filling *info (which may be NULL). */
kiln_status tf_import_graphdef_file_ex(const char *path, graph **out, tf_import_info *info);
kiln_status tf_import_graphdef_buffer_ex(const void *data, size_t len, const char *name, graph **out,
                                         tf_import_info *info);
kiln_status tfjs_import_file_ex(const char *model_json_path, graph **out, tf_import_info *info);
kiln_status tfjs_import_buffer_ex(const char *json, size_t json_len, const void *weights, size_t weights_len,
                                  const char *name, graph **out, tf_import_info *info);

/* SavedModel directory: DIR/saved_model.pb (the MetaGraphDef tagged "serve") and its
 * checkpoint DIR/variables/variables.{index,data-*} (tf_savedmodel.c). signature
 * names the SignatureDef (NULL or "": "serving_default"; an unknown name is NOT_FOUND
 * listing the ones there are). Graph inputs and results are named by signature key. */
kiln_status tf_import_savedmodel(const char *dir, const char *signature, graph **out, tf_import_info *info);
/* The same from saved_model.pb's bytes; variables are read from dir/variables (dir
 * NULL: a signature that reads variables is NOT_FOUND). name stands for the file. */
kiln_status tf_import_savedmodel_buffer(const void *data, size_t len, const char *dir, const char *signature,
                                        const char *name, graph **out, tf_import_info *info);

/* Replaces g's results with the named tensors, in order: "node" (output 0) or
 * "node:port", as TensorFlow names tensors; each result is named by the string as
 * given. Unknown nodes are errors and leave g unchanged. Follow with graph_prune to
 * drop what the new results do not need. */
kiln_status tf_import_set_results(graph *g, int n, const char *const *names);

#endif
