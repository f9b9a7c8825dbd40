/* Model files -> graphs: one entry point that picks the importer.
 *
 * `kiln run MODEL` and embedders call import_model_file and get a graph whatever the
 * format: ONNX (model.onnx), a frozen TensorFlow GraphDef (.pb), a TensorFlow
 * SavedModel (its directory, or the saved_model.pb in it) or a TF.js graph model
 * (model.json with its weight shards beside it). The extension decides; a file with
 * another extension is recognised by its first bytes (a JSON object is TF.js, a
 * protobuf starting with field 1 as a varint is an ONNX ModelProto -- ir_version comes
 * first --, one starting with field 1 as a message is a GraphDef -- node comes first).
 * HLO text is not a model: import_detect_format says UNKNOWN for it, which is how
 * `kiln run` knows to take the HLO path. */
#ifndef KILN_IMPORT_IMPORT_H
#define KILN_IMPORT_IMPORT_H

#include "base/status.h"
#include "graph/graph.h"

typedef enum import_format {
  IMPORT_FORMAT_UNKNOWN,
  IMPORT_FORMAT_ONNX,
  IMPORT_FORMAT_TF_GRAPHDEF,
  IMPORT_FORMAT_TFJS,
  IMPORT_FORMAT_GRAPH_TEXT, /* kiln's graph text form (graph/graph.h), *.graph */
  IMPORT_FORMAT_TF_SAVEDMODEL /* a directory holding saved_model.pb (or that file itself) */
} import_format;

/* By extension (.onnx, .pb, .json; case-insensitive), else by content. .hlo and .txt
 * files, unreadable files and anything unrecognised are UNKNOWN. */
import_format import_detect_format(const char *path);
/* A directory, or a file named saved_model.pb, is a SavedModel (checked first). */
/* "ONNX", "TensorFlow GraphDef", "TF.js graph model", "unknown". */
const char *import_format_name(import_format f);
/* Imports with the importer the format calls for; an UNKNOWN format is an error that
 * names the file and the formats kiln reads. */
kiln_status import_model_file(const char *path, graph **out);
/* import_model_file with the choices some formats take: `signature` picks a
 * SavedModel's SignatureDef (NULL: serving_default); other formats ignore it. */
kiln_status import_model_file_signature(const char *path, const char *signature, graph **out);
/* The same rules for bytes in memory (content only: a JSON object is TF.js, field 1 as
 * a varint ONNX, as a message a GraphDef; "HloModule" and anything else UNKNOWN). */
import_format import_detect_buffer_format(const void *data, size_t len);
/* Imports bytes in memory; format UNKNOWN detects it from the content. name stands for
 * the file in error messages. TF.js needs its files (INVALID_ARGUMENT). */
kiln_status import_model_buffer(const void *data, size_t len, import_format format, const char *name, graph **out);

/* Names g's inputs and outputs explicitly (select_io.c), for models whose file does not
 * (a frozen GraphDef has no signature) or to pick other tensors. Each name is a graph
 * result or graph input name, or a tensor as TensorFlow names it: "node" (output 0) or
 * "node:N". n_outputs > 0 makes the named tensors g's results, in order; n_inputs > 0
 * puts the named inputs first, in order, and a name of an internal tensor becomes a new
 * graph input "node:N" that takes over all its consumers (fed, as TF's feed does).
 * Then g is pruned to what the results need. A name that matches nothing is NOT_FOUND
 * naming it; a tensor inside a while loop cannot be fed (INVALID_ARGUMENT naming its
 * frame); 0 and 0 leave g as it is. */
kiln_status import_select_io(graph *g, int n_inputs, const char *const *inputs, int n_outputs,
                             const char *const *outputs);

#endif
