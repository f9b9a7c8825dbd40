/* ONNX importer: a model.onnx (ModelProto) becomes a kiln graph (graph/graph.h).
 *
 * This header is the contract between the importer and everything that reads the graphs
 * it makes (the op library's onnx.* lowerings, the executor, the bridge). ONNX names
 * values, graph.h connects (node, port) pairs and has no notion of an absent input or of
 * an implicitly captured outer value, so the importer fixes the following conventions.
 *
 * Graph. framework "onnx"; graph->opset holds the default domain's opset (1..28, see
 * ONNX_IMPORT_MIN_OPSET/MAX_OPSET; a newer one is refused, as kiln cannot know its ops),
 * on the root and on every body function alike. Which op versions kiln implements is
 * the op library's to say, per node (op_check_onnx_version in ops/ops.h; the executor
 * refuses a node whose version is missing); ONNX_IMPORT_MAX_OPSET equals the op
 * library's op_onnx_max_opset() (a unit test holds them together). In each graph the inputs come first, then
 * the constants made from initializers, then the nodes in a topological order of the
 * ONNX node list (the file's own order when it is already sorted, as ONNX requires).
 *
 * Ops. A node of the default domain ("" or "ai.onnx") has op "onnx.<op_type>"; any other
 * domain keeps its name: "com.microsoft.FusedConv", "ai.onnx.ml.LabelEncoder". Such
 * nodes carry INT attr "_domain_opset" with the version the model imports for their
 * domain (absent when the model imports none).
 *
 * Names. Graph inputs and constants made from initializers are named exactly by their
 * ONNX value names (the executor feeds inputs by these names). Other nodes take their
 * ONNX name, or when it is empty their first non-empty output name, or else their op
 * type; capture inputs of bodies take the captured value's name. A name already used
 * in the graph gets _1, _2, ... (as graph_unique_name), so names are unique and
 * deterministic. Graph results carry the ONNX output names.
 *
 * Constants. Initializers and Constant nodes both become op "onnx.Constant" with a
 * TENSOR attr "value" (Constant's value_float(s)/value_int(s)/value_string(s) forms are
 * normalised to it). Main-graph inputs that are also initializers (old opsets) are
 * constants, not inputs (in a body the input wins: body inputs are positional). Tensors accept every TensorProto encoding: raw_data, the typed fields
 * (int32_data also for int8/int16/uint8/uint16/bool/float16/bfloat16) and external data
 * (data_location EXTERNAL, location relative to the model's directory; paths that leave
 * it are refused).
 *
 * Outputs. A node has exactly as many outputs as its ONNX output list, "" entries
 * included (nothing consumes those ports). Graph results are named by the ONNX output
 * names. value_info/output types become node output dtype/shape when they are tensors.
 *
 * Absent optional inputs. An input given as "" (ONNX's "not provided") has no edge:
 * the node's data inputs are the *present* ONNX inputs in order, and INTS attr
 * "_absent_inputs" lists the ONNX positions that were "" (trailing ones included; the
 * attr is omitted when nothing is absent). Example: Clip(x, "", max) has data inputs
 * [x, max] and _absent_inputs = [1]. Use onnx_input_index() below to map an ONNX input
 * position to a data-input index.
 *
 * Subgraphs. GRAPH / GRAPHS attributes (If's then_branch/else_branch, Loop's and Scan's
 * body, any other op's graphs) become functions of the root's library, named
 * "<node>/<attr>" ("<node>/<attr>/<i>" for lists; uniqued with _N), referenced by FUNC
 * attrs (a list of FUNC for GRAPHS). Bodies are closed: each outer-scope value a body
 * reads ("capture") becomes an extra graph input of the body AND an extra data input of
 * the node. The node's captures are the union over all its bodies; STRINGS attr
 * "_captures" lists their ONNX value names in order; they are the node's LAST
 * len(_captures) data inputs; EVERY body of the node has inputs = its ONNX formal inputs
 * followed by one input per capture in the same order (a body that does not use a
 * capture still has its input). Nested subgraphs capture through every level: a value
 * two scopes up becomes a capture of the middle body too. Example: If(cond) whose
 * branches read outer x and y: data inputs [cond, x, y], _captures = ["x", "y"],
 * both branch functions have inputs (x, y). Loop(M, cond, v0) capturing w: data inputs
 * [M, cond, v0, w], body inputs (iter, cond, v, w). Body results are the ONNX body
 * outputs, in order, named by their ONNX names.
 *
 * Model-local functions (ModelProto.functions) are inlined at each call: their nodes
 * are named "<caller>/<inner>", ref_attr_name attributes take the caller's attribute
 * (and are left out when the caller has none).
 *
 * Graph inputs with symbolic dims (dim_param) get unknown (-1) dims; STRINGS attr
 * "_dim_params" on the input node keeps one name per dim ("" for concrete or unnamed
 * dims; the attr is omitted when no dim is symbolic). Non-tensor inputs (sequence, map,
 * optional, sparse) have dtype unknown and STRING attr "_onnx_type" spelling the whole
 * type ("sequence(tensor(float))", "optional(tensor(int64))", "map(string,tensor(float))";
 * "?" for what the model leaves unsaid), which the executor checks fed values against.
 *
 * Attributes map INT->INT, FLOAT->FLOAT, STRING->STRING (bytes), TENSOR->TENSOR,
 * GRAPH->FUNC, INTS/FLOATS/STRINGS/TENSORS/GRAPHS->LIST of the element kind (empty
 * lists keep their element kind). SPARSE_TENSOR(S) attributes are an unimplemented
 * error; TYPE_PROTO(S) are dropped and their names listed in STRINGS attr
 * "_skipped_attrs". Attribute names starting with '_' are reserved for the above.
 *
 * Errors (malformed protobuf, missing or mis-sized tensor data, undefined value names,
 * cycles, values defined twice, unsupported types) are kiln errors whose message starts
 * with the file name and names the node / attribute / tensor. No input can crash the
 * importer or make it leak (fuzzed by tests/fuzz/fuzz_onnx_import.c). */
#ifndef KILN_IMPORT_ONNX_IMPORT_H
#define KILN_IMPORT_ONNX_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/graph.h"

#define ONNX_IMPORT_MIN_OPSET 1
#define ONNX_IMPORT_MAX_OPSET 28

/* Model-local functions calling each other can expand exponentially; inlining more
 * nodes plus calls than this is a RESOURCE_EXHAUSTED error. Default 1 << 20; the fuzz target
 * lowers it. */
extern int64_t onnx_import_max_inlined_nodes;
/* onnx_import_file maps model files of at least this many bytes and decodes them without
 * copying initializer payloads of at least onnx_import_lean_min_payload bytes (they are
 * copied once, into their tensors; onnx_lean.c). Settable so tests can reach the path
 * with small files. */
extern int64_t onnx_import_lean_min_file;
extern int64_t onnx_import_lean_min_payload;

/* Reads and imports a model file; external data is looked up beside it. */
kiln_status onnx_import_file(const char *path, graph **out);

/* Imports a serialized ModelProto held in memory. model_path is the path the bytes
 * came from: it names the model in error messages and its directory is where external
 * data files are looked up. NULL: messages say "<buffer>" and tensors with external
 * data are an error (the fuzz target uses this). */
kiln_status onnx_import_buffer(const void *data, size_t len, const char *model_path, graph **out);

/* Data-input index of ONNX input position `onnx_pos` of an imported node, or -1 when
 * that input was given as "" or lies beyond the inputs the node has. Captures (see
 * above) are not ONNX inputs and are never returned. */
static inline int onnx_input_index(const graph_node *n, int onnx_pos) {
  const graph_attr_value *absent = graph_node_attr(n, "_absent_inputs");
  const graph_attr_value *captures = graph_node_attr(n, "_captures");
  int n_present = n->n_inputs - (captures && captures->kind == GRAPH_ATTR_LIST ? captures->list.n : 0);
  int index = onnx_pos;
  if (onnx_pos < 0) return -1;
  if (absent && absent->kind == GRAPH_ATTR_LIST) {
    for (int i = 0; i < absent->list.n; i++) {
      int64_t p = absent->list.items[i].i;
      if (p == onnx_pos) return -1;
      if (p < onnx_pos) index--;
    }
  }
  return index < n_present ? index : -1;
}

#endif
