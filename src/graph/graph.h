/* The framework-level dataflow graph: what the TensorFlow and ONNX importers produce,
 * what placement, auto-clustering and encapsulation rewrite, and what the host executor
 * runs. It plays the role of TensorFlow's Graph: nodes with typed attributes, data
 * edges (node, output port) and control edges.
 *
 * Memory. A root graph owns one arena; every node, name, attribute value, edge array
 * and function body lives in it and goes with graph_free. Constant tensors are
 * reference-counted heap objects (graph/tensor.h); the graph holds one reference per
 * attribute that names them and drops them on graph_free. Side indexes (name lookup,
 * consumer index) are heap-allocated and rebuilt on demand.
 *
 * Ops. node->op is always a namespaced string "NAMESPACE.Op": "tf.Conv2D",
 * "onnx.Conv", "com.microsoft.FusedConv" (the namespace is everything before the last
 * '.', so ONNX domains keep their dots). A graph may name its framework ("tf", "onnx");
 * then graph_add_node prefixes op names given without a '.', and the text form prints
 * ops of that namespace bare. Graph inputs are nodes of op GRAPH_OP_INPUT ("kiln.Input")
 * made by graph_add_input; they have no inputs and one output whose dtype/shape is the
 * input's signature.
 *
 * Functions. The root graph holds a flat library of function graphs (TF's
 * FunctionDefLibrary; ONNX If/Loop/Scan bodies, which the importer names uniquely). A
 * node attribute of kind FUNC refers to one by name and pointer, optionally with
 * attributes of its own (TF's NameAttrList). Function bodies are closed: their nodes
 * only consume their own inputs and nodes, never an outer graph's, so an importer
 * turns ONNX's implicit outer-scope captures into explicit inputs of the body (and of
 * the node that calls it). Functions share the root's arena and framework.
 *
 * Loops. TensorFlow v1 while loops (Enter/Merge/Switch/NextIteration/Exit) make
 * cycles: Merge consumes NextIteration. Every edge whose source is a NextIteration node
 * (op base name NextIteration or RefNextIteration, any namespace) is a back-edge;
 * graph_topo_order ignores back-edges and orders the rest, and any cycle left is an
 * error.
 *
 * Mutation goes through the functions below: they keep the name index and the
 * consumer index honest (each mutation bumps graph->version; the consumer index is
 * rebuilt when stale). Code that edits node fields directly must call
 * graph_invalidate. */
#ifndef KILN_GRAPH_GRAPH_H
#define KILN_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "graph/dtype.h"
#include "graph/tensor.h"

typedef struct graph graph;
typedef struct graph_node graph_node;
typedef struct graph_attr graph_attr;

#define GRAPH_OP_INPUT "kiln.Input"
/* Port value of a control edge in a graph_use. */
#define GRAPH_CONTROL (-1)
/* Largest output count a node may have (ports are checked against it). */
#define GRAPH_MAX_OUTPUTS (1 << 16)

typedef enum graph_attr_kind {
  GRAPH_ATTR_NONE,   /* element kind of an empty list whose kind nobody said */
  GRAPH_ATTR_INT,    /* int64 */
  GRAPH_ATTR_FLOAT,  /* 32-bit, as TF's AttrValue.f and ONNX's AttributeProto.f */
  GRAPH_ATTR_BOOL,
  GRAPH_ATTR_STRING, /* bytes */
  GRAPH_ATTR_TYPE,   /* graph_dtype */
  GRAPH_ATTR_SHAPE,  /* graph_shape */
  GRAPH_ATTR_TENSOR, /* constant value */
  GRAPH_ATTR_FUNC,   /* function of the library (+ attributes) */
  GRAPH_ATTR_LIST    /* homogeneous list of any kind above but LIST */
} graph_attr_kind;

typedef struct graph_func_ref {
  const char *name;
  graph *body; /* NULL only while a parser is still resolving names */
  int n_attrs;
  graph_attr *attrs; /* sorted by name, like node attributes */
} graph_func_ref;

typedef struct graph_attr_value {
  graph_attr_kind kind;
  union {
    int64_t i;
    float f;
    bool b;
    graph_bytes s;
    graph_dtype type;
    graph_shape *shape; /* arena-owned (a pointer keeps every value small) */
    graph_tensor *tensor;
    graph_func_ref func;
    struct {
      graph_attr_kind elem; /* GRAPH_ATTR_NONE only when n == 0 */
      int n;
      struct graph_attr_value *items;
    } list;
  };
} graph_attr_value;

struct graph_attr {
  const char *name;
  graph_attr_value value;
};

/* One data input: output `port` of `node`. */
typedef struct graph_edge {
  graph_node *node;
  int port;
} graph_edge;

typedef struct graph_output_info {
  graph_dtype dtype;  /* GRAPH_DT_INVALID when unknown */
  graph_shape shape;  /* rank GRAPH_UNKNOWN when unknown */
} graph_output_info;

struct graph_node {
  int id;          /* unique within its graph, in creation order; never reused */
  int index;       /* position in graph->nodes (changes when nodes are removed) */
  const char *name;
  const char *op;  /* namespaced, see above */
  graph *graph;
  bool is_input;   /* made by graph_add_input */

  int n_inputs, cap_inputs;
  graph_edge *inputs;
  int n_control, cap_control;
  graph_node **control_inputs; /* no duplicates */

  int n_attrs, cap_attrs;
  graph_attr *attrs; /* sorted by name (strcmp), names unique */

  const char *requested_device; /* what the model asked for; NULL if nothing */
  const char *assigned_device;  /* what the placer chose; NULL before placement */

  int n_outputs, cap_outputs; /* 1 unless set otherwise; grown by edges to higher ports */
  graph_output_info *outputs;

  void *user_data; /* scratch for passes; never printed or copied */
};

/* A named graph result: output `port` of `node`. */
typedef struct graph_result {
  const char *name;
  graph_node *node;
  int port;
} graph_result;

struct graph {
  arena *arena;        /* the root's, shared by its functions */
  graph *root;         /* this graph for a root, the owning root for a function */
  const char *name;    /* function name; NULL for a root */
  const char *framework; /* root's op namespace ("tf", "onnx") or NULL */
  int64_t opset; /* ONNX: the default domain's opset version (0: not ONNX / unknown) */

  int n_nodes, cap_nodes;
  graph_node **nodes; /* creation order (minus removed nodes) */
  int n_inputs, cap_inputs;
  graph_node **inputs;
  int n_results, cap_results;
  graph_result *results;
  int n_functions, cap_functions;
  graph **functions; /* root only, in creation order */

  int next_id;
  uint64_t version; /* bumped by every mutation */

  /* private: name indexes (nodes; functions for a root), consumer index, tensors to
   * release */
  struct graph_name_index *name_index;
  struct graph_name_index *function_index;
  struct graph_use_index *use_index;
  int n_tensors, cap_tensors;
  graph_tensor **tensors;
};

/* ---- graphs ---- */
graph *graph_new(const char *framework); /* framework may be NULL */
/* Frees a root graph with its functions and tensor references. A function graph is
 * freed with its root; passing one here does nothing. */
void graph_free(graph *g);
/* Makes an empty function graph in g's root library. Duplicate names are errors. */
kiln_status graph_add_function(graph *g, const char *name, graph **out);
graph *graph_find_function(const graph *g, const char *name);
/* Deep copy of g's nodes, inputs, results and the whole function library of g's root
 * into a new root graph (func references rewired to the copies). Tensors are shared
 * by reference; node ids, order and names are kept. user_data is not copied. */
graph *graph_clone(const graph *g);
/* For code that changed node fields directly. */
void graph_invalidate(graph *g);

/* ---- nodes ---- */
/* Adds a node with one output of unknown type and no inputs. The name must be
 * non-empty and unique in g; op gets the framework prefix when it has no '.'. */
kiln_status graph_add_node(graph *g, const char *name, const char *op, graph_node **out);
/* Adds a graph input (op GRAPH_OP_INPUT) at the end of g->inputs. */
kiln_status graph_add_input(graph *g, const char *name, graph_dtype dtype, const graph_shape *shape,
                            graph_node **out);
/* A name not used in g: `base` if free, else base_1, base_2, ... (arena string). */
const char *graph_unique_name(graph *g, const char *base);
graph_node *graph_find_node(const graph *g, const char *name);
/* Removes n. Control edges from n to other nodes go with it; a node still consumed
 * through a data edge or named by a graph result cannot be removed (error). */
kiln_status graph_remove_node(graph_node *n);
/* The op after the namespace: "Conv2D" for "tf.Conv2D". */
const char *graph_node_op_base(const graph_node *n);
/* True if n's op is `op` exactly, or n's op base name equals `op` when op has no '.'. */
bool graph_node_is(const graph_node *n, const char *op);
/* Sources of loop back-edges: NextIteration / RefNextIteration in any namespace. */
bool graph_node_is_next_iteration(const graph_node *n);

/* Output count and per-output type information. Setting fewer outputs than a
 * consumer uses is an error; k is at most GRAPH_MAX_OUTPUTS. */
kiln_status graph_node_set_num_outputs(graph_node *n, int k);
void graph_node_set_output(graph_node *n, int port, graph_dtype dtype, const graph_shape *shape);
void graph_node_set_requested_device(graph_node *n, const char *device); /* NULL clears */
void graph_node_set_assigned_device(graph_node *n, const char *device);  /* NULL clears */

/* ---- edges ---- */
/* Appends output src:port as dst's next data input. Grows src's output count when the
 * port is beyond it. Errors: nodes of different graphs, negative or too large port,
 * dst a graph input. */
kiln_status graph_add_edge(graph_node *src, int port, graph_node *dst);
/* Replaces dst's data input `index`. */
kiln_status graph_set_input(graph_node *dst, int index, graph_node *src, int port);
/* Adds src as a control input of dst (no-op if already there). */
kiln_status graph_add_control_edge(graph_node *src, graph_node *dst);
/* Returns false if there was no such control edge. */
bool graph_remove_control_edge(graph_node *src, graph_node *dst);
/* Rewires every data consumer (and graph result) of old:old_port to new:new_port;
 * returns how many uses moved. */
int graph_replace_uses(graph_node *old_node, int old_port, graph_node *new_node, int new_port);

/* ---- graph results ---- */
kiln_status graph_add_result(graph *g, const char *name, graph_node *node, int port);
const graph_result *graph_find_result(const graph *g, const char *name);

/* ---- consumers (reverse index, built on demand, rebuilt after mutations) ---- */
typedef struct graph_use {
  graph_node *node; /* the consumer */
  int index;        /* its data input index, or GRAPH_CONTROL for a control edge */
} graph_use;
/* Consumers of output `port` of n, in node order; port GRAPH_CONTROL gives n's control
 * consumers. The array stays valid until the next mutation of the graph. The first
 * call after a mutation rebuilds the index (O(nodes + edges)), which writes the
 * graph's cache: threads sharing a graph must make one call before they fan out. */
int graph_consumers(const graph_node *n, int port, const graph_use **uses);
/* Data consumers over all ports plus control consumers. */
int graph_num_consumers(const graph_node *n);

/* ---- traversal and cleanup ---- */
/* Kahn's algorithm over data and control edges, skipping back-edges out of
 * NextIteration nodes; among ready nodes the earliest in g->nodes comes first, so an
 * already ordered graph keeps its order. Fills a malloc'ed array of g->n_nodes nodes
 * (caller frees). A cycle that no back-edge breaks is an error naming a node on it. */
kiln_status graph_topo_order(const graph *g, graph_node ***order, int *n);
/* Removes every node that no graph result, nor any of extra_roots, depends on through
 * data or control edges. Graph inputs are always kept (they are the signature).
 * Returns how many nodes were removed. */
int graph_prune(graph *g, graph_node *const *extra_roots, int n_extra);
/* Structural checks: ports in range, edges within the graph, func references
 * resolved, unique names. Errors name the node. */
kiln_status graph_validate(const graph *g);

/* ---- attributes ---- */
/* NULL if n has no attribute of that name. */
const graph_attr_value *graph_node_attr(const graph_node *n, const char *name);
/* Sets (or replaces) an attribute with a deep copy of *v in the graph's arena; tensors
 * in v gain a reference held by the graph, func references keep their pointers. */
void graph_node_set_attr(graph_node *n, const char *name, const graph_attr_value *v);
bool graph_node_remove_attr(graph_node *n, const char *name);
/* Convenience setters. */
void graph_node_set_attr_int(graph_node *n, const char *name, int64_t v);
void graph_node_set_attr_float(graph_node *n, const char *name, float v);
void graph_node_set_attr_bool(graph_node *n, const char *name, bool v);
void graph_node_set_attr_string(graph_node *n, const char *name, const char *data, size_t len);
void graph_node_set_attr_type(graph_node *n, const char *name, graph_dtype v);
void graph_node_set_attr_shape(graph_node *n, const char *name, const graph_shape *v);
void graph_node_set_attr_tensor(graph_node *n, const char *name, graph_tensor *t); /* takes a ref */
void graph_node_set_attr_ints(graph_node *n, const char *name, int count, const int64_t *v);
void graph_node_set_attr_floats(graph_node *n, const char *name, int count, const float *v);
void graph_node_set_attr_types(graph_node *n, const char *name, int count, const graph_dtype *v);
void graph_node_set_attr_func(graph_node *n, const char *name, graph *function);
/* Typed getters: a missing attribute or one of another kind is an error naming the
 * node, op and attribute. get_ints copies at most cap values and sets *count to the
 * list length (an empty list of any kind is a valid empty int list). */
kiln_status graph_node_get_int(const graph_node *n, const char *name, int64_t *out);
kiln_status graph_node_get_float(const graph_node *n, const char *name, float *out);
kiln_status graph_node_get_bool(const graph_node *n, const char *name, bool *out);
kiln_status graph_node_get_type(const graph_node *n, const char *name, graph_dtype *out);
kiln_status graph_node_get_shape(const graph_node *n, const char *name, graph_shape *out);
kiln_status graph_node_get_tensor(const graph_node *n, const char *name, const graph_tensor **out);
kiln_status graph_node_get_string(const graph_node *n, const char *name, const graph_bytes **out);
kiln_status graph_node_get_ints(const graph_node *n, const char *name, int64_t *buf, int cap, int *count);
/* Defaults for optional attributes (a present attribute of another kind also gives
 * the default). */
int64_t graph_node_attr_int_or(const graph_node *n, const char *name, int64_t dflt);
float graph_node_attr_float_or(const graph_node *n, const char *name, float dflt);
bool graph_node_attr_bool_or(const graph_node *n, const char *name, bool dflt);
/* Takes over the caller's reference to t: released when the root graph is freed (counted
 * in t->graph_refs: see tensor_source.h). */
void graph_adopt_tensor(graph *g, graph_tensor *t);

/* ---- text form (graph_text.c) ----
 *
 * TensorFlow debug-string style, one statement per line as printed (the parser treats
 * newlines as any other whitespace), '#' comments to the end of the line:
 *
 *   framework tf                               # optional, must come first
 *   graph body {                               # function definitions (top level only)
 *     input i: int32[]
 *     n1 = Add(i, one)
 *     output r = n1:0
 *   }
 *   input x: float[1,?,3]                      # graph input: name, dtype, shape
 *   input y[device=cpu:0]: float               # attributes allowed after the name
 *   n121 = Identity[T=float, device=cpu:0](n98) @ n119, n120
 *   s = Split[num_split=2](axis, x) -> (float[1,3], float[1,3])
 *   output y = n5:0                            # graph result
 *
 * Node: NAME = OP[ATTR=VALUE, ...](INPUT, ...) @ CONTROL, ... -> (TYPE, ...)
 *   - [] is omitted when there are no attributes; () is always written.
 *   - INPUT is NAME (port 0) or NAME:PORT; nodes may be referred to before their line
 *     (loops need it).
 *   - "@ ..." lists control inputs; "-> (...)" declares the output count and types.
 *     Without it the node has one output of unknown type, grown to cover the highest
 *     port any edge uses; with it, an edge to a higher port is an error. "-> ()" is a
 *     node without outputs.
 *   - The pseudo-attributes device= and assigned_device= set the requested and the
 *     assigned device; their value is a bare device name (letters, digits and
 *     _ . / - : *) or a quoted string. A real attribute with one of those names is
 *     written with a quoted key: "device"="x".
 *   - The op is printed without the framework prefix when it is in that namespace.
 * Names (nodes, ops, results, functions) are bare when made of letters, digits and
 * _ . / - ; anything else is a quoted string.
 * TYPE (inputs and ->): DTYPE or DTYPE[DIMS]: float (unknown rank), float[] (scalar),
 *   float[2,?,3] (? = unknown dim), ?[2] (unknown dtype), ? (nothing known).
 * Attribute values:
 *   int        3, -1
 *   float      1.0, 1e-05, -inf, nan (always with '.', 'e' or as inf/nan)
 *   bool       true, false
 *   string     "text" with escapes \\ \" \n \t \r \xHH
 *   type       float, int32, bool, string, resource, ... (HLO spellings f32, s32 read too)
 *   shape      <2,?,3>, <> (scalar), <unknown> (unknown rank)
 *   tensor     tensor<float[2,2]>{1, 2, 3, 4} (flat row-major values; strings quoted;
 *              complex (re, im); {...} for elided values, which read back as
 *              deterministic pseudo-random numbers, complex zeros, empty strings,
 *              null handles)
 *   function   @name or @name[attr=value, ...]
 *   list       [v, v, ...] of one kind; [] is an empty list
 * Errors name FILE:LINE:COL and what was expected. */
typedef struct graph_print_options {
  int64_t max_tensor_elements; /* >0: larger tensors print as {...} (not re-readable) */
} graph_print_options;

void graph_print(strbuf *b, const graph *g, const graph_print_options *opts); /* opts may be NULL */
char *graph_to_string(const graph *g); /* malloc'ed */
/* One node line without the newline (for logs and error messages). */
void graph_node_print(strbuf *b, const graph_node *n);
void graph_attr_value_print(strbuf *b, const graph_attr_value *v);
/* filename is used only in messages (NULL: "<input>"). */
kiln_status graph_parse(const char *text, size_t len, const char *filename, graph **out);
kiln_status graph_parse_file(const char *path, graph **out);

#endif
