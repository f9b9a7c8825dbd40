/* Private pieces shared by the ONNX importer's files: the import context, a small
 * string-keyed hash map (ONNX connects everything by value name), the tensor/type
 * decoders (onnx_tensor.c), the protobuf nesting check (onnx_wire.c) and the graph
 * converter (onnx_graph.c). Nothing here is part of the importer's contract; see
 * onnx_import.h for that. */
#ifndef KILN_IMPORT_ONNX_INTERNAL_H
#define KILN_IMPORT_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "graph/graph.h"
#include "graph/tensor_source.h"
#include "onnx/onnx.pb-c.h"

/* Deepest protobuf message nesting accepted (protobuf-c decodes recursively; a crafted
 * file could otherwise exhaust the stack). Each subgraph level costs three messages
 * (Graph -> Node -> Attribute), so this allows far deeper control flow than any
 * exporter writes. */
#define ONNX_MAX_MESSAGE_DEPTH 192
/* Inlining model-local functions inside each other. */
#define ONNX_MAX_INLINE_DEPTH 32

typedef struct onnx_domain_opset {
  const char *domain;
  int64_t version;
} onnx_domain_opset;

/* ---- lean decoding of large models (onnx_lean.c) ---- */
typedef struct onnx_lifted {
  size_t initializer;   /* index in ModelProto.graph.initializer */
  size_t offset, len;   /* its raw_data payload in the mapped file */
  uint8_t *saved;       /* what protobuf-c decoded for the cut payload, restored before freeing */
  bool attached;
} onnx_lifted;
typedef struct onnx_lean {
  uint8_t *wire;        /* the model's wire bytes with the lifted payloads cut */
  size_t wire_len;
  size_t n, cap;
  onnx_lifted *lifted;
} onnx_lean;

typedef struct onnx_ctx {
  const char *path;      /* for messages */
  const char *dir;       /* model directory for external data; NULL: refused */
  Onnx__ModelProto *model;
  graph *root;
  int64_t opset;         /* default domain; 0 when the model imports none */
  int n_domains;
  onnx_domain_opset *domains; /* heap */
  int inline_depth;
  const Onnx__FunctionProto *inline_stack[ONNX_MAX_INLINE_DEPTH];
  int64_t inlined_nodes; /* nodes made while inlining, against onnx_import_max_inlined_nodes */
  const uint8_t *map;    /* the mapped model file (onnx_lean.c), or NULL */
  size_t map_len;
  tensor_source *source; /* the same mapping, for weights that can be read back, or NULL */
} onnx_ctx;


/* Builds the lean copy of data[0..len) (payloads of at least min_bytes are lifted);
 * false when nothing is worth lifting or the bytes are not what it expects. */
bool onnx_lean_build(const uint8_t *data, size_t len, size_t min_bytes, onnx_lean *out);
/* Points the decoded initializers' raw_data into base (the mapped file); false (and
 * nothing attached) when the decoded model does not match the lifted list. */
bool onnx_lean_attach(onnx_lean *l, Onnx__ModelProto *m, const uint8_t *base);
/* Undoes attach; must run before the model is freed. */
void onnx_lean_detach(onnx_lean *l, Onnx__ModelProto *m);
void onnx_lean_free(onnx_lean *l);
/* After data[0..len) was copied out: drops the mapped file pages it occupied (no-op for
 * data outside the mapping). */
void onnx_lean_release(const onnx_ctx *ctx, const void *data, size_t len);
/* Whether p points into the mapped model file. */
bool onnx_lean_is_mapped(const onnx_ctx *ctx, const void *p);

/* ---- string-keyed map (keys borrowed: they must outlive the map) ---- */
typedef struct onnx_map_entry {
  const char *key; /* NULL: empty slot */
  uint64_t hash;
  graph_node *node; /* for value maps; NULL marks an absent optional value */
  int port;         /* port, or an index for other uses */
  const void *data; /* for other uses (value_info by name) */
} onnx_map_entry;

typedef struct onnx_map {
  onnx_map_entry *slots;
  size_t cap, n;
} onnx_map;

onnx_map_entry *onnx_map_get(const onnx_map *m, const char *key);
/* Inserts or overwrites; returns the entry. */
onnx_map_entry *onnx_map_put(onnx_map *m, const char *key, graph_node *node, int port);
void onnx_map_free(onnx_map *m);

/* A protobuf-c string field: NULL when absent in proto2. */
static inline const char *onnx_str(const char *s) { return s ? s : ""; }

/* ---- onnx_wire.c ---- */
/* Walks the wire format of a ModelProto and refuses nesting deeper than
 * ONNX_MAX_MESSAGE_DEPTH before protobuf-c sees the bytes. */
kiln_status onnx_check_nesting(const uint8_t *data, size_t len);

/* ---- onnx_tensor.c ---- */
/* Decodes a TensorProto (any encoding, external data included) into a fresh tensor.
 * `what` names the tensor in messages. */
kiln_status onnx_tensor_from_proto(const onnx_ctx *ctx, const Onnx__TensorProto *tp, graph_tensor **out);
/* ONNX type number -> name for messages ("FLOAT8E4M3FN", "UNDEFINED", ...). */
const char *onnx_dtype_name(int64_t onnx_type);

/* What a ValueInfo's TypeProto says. dim_params[i] is the dim_param of dim i or NULL. */
typedef struct onnx_type_info {
  graph_dtype dtype;   /* INVALID: unknown or not a tensor */
  graph_shape shape;
  const char *dim_params[GRAPH_MAX_RANK];
  bool any_dim_param;
  const char *non_tensor; /* "sequence", "map", "optional", "sparse_tensor" or NULL */
  int64_t onnx_elem_type; /* as written, for messages */
  bool rank_too_large;
} onnx_type_info;
void onnx_type_info_from_proto(const Onnx__TypeProto *tp, onnx_type_info *out);
/* The type as text for the "_onnx_type" attribute (onnx_import.h): "tensor(float)",
 * "sequence(tensor(int64))", "optional(sequence(tensor(?)))", "map(string,tensor(float))";
 * element types by graph_dtype_name, "?" where the model does not say. */
void onnx_type_text(const Onnx__TypeProto *tp, strbuf *b);

/* ---- onnx_graph.c ---- */
/* Converts the model's main graph into ctx->root. */
kiln_status onnx_convert_main_graph(onnx_ctx *ctx, const Onnx__GraphProto *gp);

#endif
