/* The importer's neutral form of a TensorFlow graph, between the two readers (binary
 * GraphDef in tf_graphdef.c, TF.js model.json in tf_json.c) and the one builder that
 * turns it into a kiln graph (tf_build.c). Both file formats carry the same messages
 * (NodeDef, AttrValue, TensorProto, FunctionDef), so each reader only decodes its
 * syntax into these structs and the TensorFlow rules -- tensor values and splats,
 * input naming, placeholders as graph inputs, function bodies, result inference -- live
 * once in the builder.
 *
 * Everything here is allocated in the import context's scratch arena, which goes away
 * when the import ends. Attribute values are already graph_attr_values (function
 * references unresolved: body NULL); tensors they hold are owned by the context (one
 * reference each) until the graph takes its own. */
#ifndef KILN_IMPORT_TF_TF_DEF_H
#define KILN_IMPORT_TF_TF_DEF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "graph/graph.h"
#include "import/tf/tf_import.h"

typedef struct tf_ctx {
  arena *scratch;
  const char *source; /* file name for messages */
  graph_tensor **tensors; /* references released when the import ends */
  int n_tensors, cap_tensors;
  tf_import_info info;
} tf_ctx;

void tf_ctx_init(tf_ctx *c, const char *source);
void tf_ctx_release(tf_ctx *c);
/* The context keeps (and later drops) the caller's reference to t. */
void tf_ctx_own_tensor(tf_ctx *c, graph_tensor *t);

typedef struct tf_node_def {
  const char *name, *op, *device; /* device may be NULL */
  int n_inputs, cap_inputs;
  const char **inputs;
  int n_attrs, cap_attrs;
  graph_attr *attrs; /* in file order; a repeated key: the last one wins */
} tf_node_def;

/* OpDef.ArgDef: what the importer needs of a function signature argument. */
typedef struct tf_arg_def {
  const char *name;
  int type; /* TF DataType number; 0 when given by an attribute */
  bool is_list; /* number_attr or type_list_attr set */
} tf_arg_def;

typedef struct tf_string_pair {
  const char *key, *value;
} tf_string_pair;

typedef struct tf_function_def {
  const char *name;
  int n_in, cap_in, n_out, cap_out;
  tf_arg_def *in, *out;
  int n_nodes, cap_nodes;
  tf_node_def **nodes;
  int n_ret, cap_ret;
  tf_string_pair *ret;
} tf_function_def;

typedef struct tf_graph_def {
  int n_nodes, cap_nodes;
  tf_node_def **nodes;
  int n_functions, cap_functions;
  tf_function_def **functions;
} tf_graph_def;

/* A TF.js signature entry (or a caller's choice): result `key` is tensor `tensor`. */
typedef struct tf_signature {
  int n_inputs, n_outputs;
  tf_string_pair *inputs, *outputs;
} tf_signature;

/* Growing arrays in the scratch arena. */
void tf_grow(arena *a, void **arr, int *cap, int need, size_t elem);
tf_node_def *tf_graph_add_node(tf_ctx *c, tf_graph_def *g);
tf_function_def *tf_graph_add_function(tf_ctx *c, tf_graph_def *g);
tf_node_def *tf_function_add_node(tf_ctx *c, tf_function_def *f);
void tf_node_add_input(tf_ctx *c, tf_node_def *n, const char *input);
void tf_node_add_attr(tf_ctx *c, tf_node_def *n, const char *name, const graph_attr_value *v);

/* ---- tensors ----
 * A TensorProto's fields as read, before TensorFlow's rules make a tensor of them.
 * Typed repeated fields keep each value's bits (floats as their IEEE bits, ints
 * sign-extended) in a vector indexed by the TensorProto field number. */
enum {
  TF_TP_FLOAT = 5,
  TF_TP_DOUBLE = 6,
  TF_TP_INT = 7,
  TF_TP_STRING = 8,
  TF_TP_SCOMPLEX = 9,
  TF_TP_INT64 = 10,
  TF_TP_BOOL = 11,
  TF_TP_DCOMPLEX = 12,
  TF_TP_HALF = 13,
  TF_TP_RESOURCE = 14,
  TF_TP_VARIANT = 15,
  TF_TP_UINT32 = 16,
  TF_TP_UINT64 = 17,
  TF_TP_FIELDS = 18
};

typedef struct tf_values {
  uint64_t *v;
  size_t n, cap;
} tf_values;

typedef struct tf_tensor_def {
  int dtype;          /* TF DataType number */
  graph_shape shape;  /* rank GRAPH_UNKNOWN if unknown_rank was set */
  const uint8_t *content; /* tensor_content (NULL/0 when absent) */
  size_t content_len;
  tf_values vals[TF_TP_FIELDS];
  graph_bytes *strings; /* string_val */
  size_t n_strings, cap_strings;
  size_t n_handles; /* resource_handle_val + variant_val records */
} tf_tensor_def;

void tf_tensor_def_init(tf_tensor_def *t);
void tf_values_push(tf_ctx *c, tf_values *v, uint64_t bits);
void tf_tensor_add_string(tf_ctx *c, tf_tensor_def *t, const char *data, size_t len);
/* Applies TensorFlow's TensorProto rules. `what` names the tensor in errors. */
kiln_status tf_tensor_make(tf_ctx *c, const tf_tensor_def *t, const char *what, graph_tensor **out);

/* TF DataType number for an enum name ("DT_FLOAT", "DT_INT32_REF"); false if unknown. */
bool tf_dtype_from_enum_name(const char *s, int *out);
/* "DT_FLOAT" for 1 ..., or NULL. */
const char *tf_dtype_enum_name(int tf_type);
/* A graph dtype for a TF DataType number, or an error naming `what` for types kiln
 * cannot hold (quantized, float8, 4-bit, unknown numbers). */
kiln_status tf_dtype_to_graph(int tf_type, const char *what, graph_dtype *out);

/* Decodes a binary GraphDef's nodes, library and versions into *def (zeroed by the
 * caller); the SavedModel reader uses it on the MetaGraphDef's graph_def. */
kiln_status tf_parse_graphdef(tf_ctx *c, const void *data, size_t len, tf_graph_def *def);

/* ---- building ---- */
/* Makes the graph. sig may be NULL (results inferred); when given, its inputs must
 * name Placeholders (they come first among the graph inputs, in signature order) and
 * its outputs become the results. */
kiln_status tf_build_graph(tf_ctx *c, const tf_graph_def *def, const tf_signature *sig, graph **out);

/* Splits a TensorFlow tensor name "node", "node:3" (two-part) into node name and port.
 * Returns false for a malformed port. The node name is allocated in a. */
bool tf_parse_tensor_name(arena *a, const char *s, const char **node, int *port);

#endif
