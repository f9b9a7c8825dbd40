/* The host executor: runs a framework graph (what the importers produce) op by op.
 *
 * It plays the role of TensorFlow's executor inside a DirectSession. executor_new
 * prunes the graph to what its results need and lays out, per loop frame, the pending
 * counts and input slots of every node; executor_run feeds the graph inputs, runs the
 * ready nodes one at a time and hands back the graph results. The session keeps state
 * across runs: resource variables, the compiled-op cache, plans of function bodies.
 *
 * How a node runs:
 *   - control flow (Switch, Merge, Enter, Exit, NextIteration, LoopCond, ControlTrigger)
 *     follows TensorFlow's executor semantics: dead tensors, frames and iterations,
 *     loop invariants (is_constant Enter), dead exits; parallel_iterations is 1;
 *   - Const/Constant, Identity, Placeholder, resource variables, TensorArrayV3 and the
 *     TensorList family, and the functional ops (ONNX If/Loop/Scan, TF If/While/
 *     PartitionedCall) are interpreted here; function bodies run through the same
 *     machinery recursively;
 *   - kiln.Cluster call nodes (graph/cluster_op.h), which the bridge's encapsulation
 *     leaves in place of a cluster, compile the cluster's function into one HLO module
 *     per signature (or run it op by op when that cannot or should not happen yet);
 *   - every other op comes from the op library (ops/ops.h): an op with a lowering runs
 *     as a single-op HLO module compiled for the device and cached by (op, attributes,
 *     input dtypes and shapes, values of must-be-constant inputs), so identical nodes
 *     share one compiled module; an op with only a host kernel runs that kernel.
 * All tensors are host tensors, so ops that need values (shape operands) read them
 * directly.
 *
 * The graph is borrowed and must not change (nor be freed) while the executor lives.
 * Errors name the node, its op and its input shapes. */
#ifndef KILN_EXEC_EXECUTOR_H
#define KILN_EXEC_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"

typedef struct executor executor;

typedef struct executor_options {
  /* Backend that runs lowered ops (see `kiln devices`); NULL or "": the default. */
  const char *device;
  /* When non-empty: every single-op module compiled is also written there as
   * op_NNNN.OPNAME.hlo (NNNN counts compiles), for debugging lowerings. */
  const char *dump_dir;
  /* false: constants over 10 elements appear as {...} in those dumps. */
  bool dump_large_constants;
  /* What every single-op and cluster compile is told. The executor keeps a copy of the
   * struct; the strings and the plugin option array it points to stay borrowed. */
  const backend_compile_options *compile; /* borrowed for the executor's life; NULL: defaults */
} executor_options;

typedef struct executor_stats {
  int64_t compiles;     /* single-op HLO modules lowered and compiled */
  int64_t cache_hits;   /* lowered op runs that reused a compiled module */
  int64_t lowered_runs; /* op runs through compiled modules */
  int64_t host_runs;    /* op-library host kernel runs */
  int64_t native_runs;  /* nodes the executor interpreted itself */
  int64_t dead_nodes;   /* nodes skipped because an input was dead */
  /* kiln.Cluster call nodes (graph/cluster_op.h). */
  int64_t cluster_runs;          /* cluster executions, compiled or op by op */
  int64_t cluster_compiles;      /* cluster signatures lowered and compiled */
  int64_t cluster_cache_hits;    /* cluster runs that reused a compiled signature */
  int64_t cluster_fallback_runs; /* op-by-op cluster runs: lazy first request, megamorphic, unimplemented */
  double cluster_compile_ms;     /* wall time spent lowering and compiling clusters */
  int64_t evaluated_instructions; /* in the modules compiled: instructions a device runs through the evaluator */
  /* Bytes moved between host memory and devices with memory of their own (plugins),
   * each way: arguments, results, resident variables and constants (0 on cpu). */
  int64_t bytes_to_device;
  int64_t bytes_to_host;
} executor_stats;

/* Validates g, prunes it to what its results need and checks that every needed node
 * has an implementation (an error lists the nodes whose ops kiln lacks). */
kiln_status executor_new(graph *g, const executor_options *opts, executor **out);
void executor_free(executor *e); /* NULL is ignored */

/* The feeds the results need: graph inputs, and Placeholder nodes (without a default)
 * of graphs that kept them as nodes. The node's dtype and shape say what it takes. */
int executor_num_feeds(const executor *e);
const graph_node *executor_feed(const executor *e, int i);
/* The feeds a run may give but need not: graph inputs the results never read (a value
 * given is checked against the declaration and otherwise ignored; ONNX graphs may
 * declare such inputs) and PlaceholderWithDefault nodes the results need (a value given
 * replaces the default). In feed order. */
int executor_num_optional_feeds(const executor *e);
const graph_node *executor_optional_feed(const executor *e, int i);
/* The declared dtype and shape of a feed (INVALID / unknown when not declared). */
void executor_feed_signature(const graph_node *feed, graph_dtype *dtype, graph_shape *shape);

/* Runs the graph once. inputs[i] (borrowed) feeds the graph input or Placeholder named
 * names[i]; each feed the results need must be given, and its dtype and shape must
 * match the declared ones (unknown dimensions match anything). On success outputs[r]
 * receives a reference to the value of graph result r (g->n_results of them; release
 * with tensor_free). On error every outputs[r] is NULL. */
kiln_status executor_run(executor *e, int n_inputs, const char *const *names, graph_tensor *const *inputs,
                         graph_tensor **outputs);

/* Values that are not tensors: ONNX sequences, optionals and maps, as graph inputs
 * and results (values.c). A value owns its tensor references and items. A SEQUENCE
 * holds n element values (tensors, or sequences/maps for nested types) and its
 * element dtype (needed for an empty one; INVALID: unknown); an OPTIONAL holds 0
 * items (none) or 1; a MAP holds 2 tensor items, the 1-D keys and the 1-D values, of
 * equal length (keys int64 or string). */
typedef enum executor_value_kind {
  EXECUTOR_VALUE_TENSOR = 0,
  EXECUTOR_VALUE_SEQUENCE,
  EXECUTOR_VALUE_OPTIONAL,
  EXECUTOR_VALUE_MAP,
} executor_value_kind;

typedef struct executor_value {
  executor_value_kind kind;
  graph_tensor *tensor; /* TENSOR only: a reference */
  graph_dtype elem_dtype;
  int n;
  struct executor_value **items;
} executor_value;

/* A new value: a TENSOR taking over the caller's reference to t, or an empty
 * container of `kind` (append items with executor_value_append). */
executor_value *executor_value_tensor(graph_tensor *t);
executor_value *executor_value_container(executor_value_kind kind, graph_dtype elem_dtype);
void executor_value_append(executor_value *v, executor_value *item); /* takes item over */
void executor_value_free(executor_value *v);                        /* NULL is ignored */
/* "sequence", "optional", "map", "tensor". */
const char *executor_value_kind_name(executor_value_kind kind);
/* What a feed declares when it is not a plain tensor: the ONNX importer's "_onnx_type"
 * text ("sequence(tensor(float))"; onnx_import.h), else NULL. */
const char *executor_feed_type(const graph_node *feed);

/* executor_run over values: a feed declared as a sequence, optional or map takes one
 * (checked against the declared type, element dtypes included: errors name the
 * input), a tensor feed a TENSOR value; outputs[r] receives graph result r as a value
 * the caller frees (sequences and optionals the graph returns come back as such, their
 * elements shared with nothing the executor keeps). On error every outputs[r] is NULL. */
kiln_status executor_run_values(executor *e, int n_inputs, const char *const *names, executor_value *const *inputs,
                                executor_value **outputs);

const executor_stats *executor_get_stats(const executor *e);
/* The device lowered ops run on. */
const char *executor_device_name(const executor *e);

/* Ops the executor interprets itself (control flow, resources, functional ops), as
 * namespaced names ("tf.Switch"), sorted; for `kiln ops`. */
int executor_native_op_count(void);
const char *executor_native_op_at(int i);
/* Whether the executor can run op (natively or through the op library). */
bool executor_knows_op(const char *op);

#endif
