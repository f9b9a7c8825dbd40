/* The op library: what kiln knows about each framework op.
 *
 * Every framework op ("tf.Conv2D", "onnx.Conv") that kiln can run has one op_def,
 * registered in a per-family table (ops_onnx_*.c, ops_tf_*.c) and found by name. An op
 * def carries:
 *   - lower: the translator (TF's tf2xla kernels): emits HLO into a computation for
 *     static input shapes, given HLO values for the inputs and the compile-time value
 *     of every input the op needs as a constant (shape operands, axes, paddings…);
 *   - host: a host kernel over graph tensors, for ops whose output shape depends on
 *     data (NonMaxSuppression, Where, Unique, TopK with dynamic k…) or that have no HLO
 *     meaning (strings);
 *   - traits and must-be-constant inputs, which the executor and the clustering bridge
 *     read.
 * An op has a lowering, a host kernel, or both. Control-flow primitives (Switch, Merge,
 * Enter, Exit, NextIteration, LoopCond, If, Loop) and stateful resources (variables,
 * TensorArray, TensorList) are interpreted by the executor itself (src/exec), not here.
 *
 * Lowering helpers that several ops share (broadcasting, softmax, conv layouts, pooling,
 * reductions) live once in ops_lib.h, in the style of XLA's client/lib. */
#ifndef KILN_OPS_OPS_H
#define KILN_OPS_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "hlo/ir.h"

typedef enum op_trait {
  OP_STATEFUL = 1u << 0,        /* has effects or hidden state: never CSE'd or clustered */
  OP_RNG = 1u << 1,             /* random: stateful and excluded from clusters */
  OP_ASSERT = 1u << 2,          /* Assert/CheckNumerics-like */
  OP_VARIANT = 1u << 3,         /* produces/consumes DT_VARIANT (TensorList) or TensorArray handles */
  OP_SHAPE_CONSUMER = 1u << 4,  /* reads only the shape of its input (Shape, Size, Rank) */
  OP_RESOURCE_READ = 1u << 5,   /* reads a resource variable */
  OP_RESOURCE_WRITE = 1u << 6,  /* writes a resource variable */
  OP_DYNAMIC_SHAPE = 1u << 7,   /* output shape depends on input values: host kernel only */
  OP_STRING = 1u << 8,          /* consumes or produces strings */
  /* The last input must be a compile-time constant too, wherever it falls (ConcatV2's
   * axis follows a variable number of values, so no fixed const_inputs bit can say it). */
  OP_CONST_LAST_INPUT = 1u << 9,
  /* Input 1, a const_inputs input, may also be a runtime value: the lowering takes it
   * as ctx->inputs[1] with ctx->const_inputs[1] NULL when nothing can know it at
   * compile time (tf.Slice's begin computed from a loop counter becomes a
   * dynamic-slice, as tf2xla lowers it), so such a value neither splits a cluster nor
   * keeps a loop from compiling. A known value still comes as a constant. */
  OP_RUNTIME_OK_INPUT1 = 1u << 10
} op_trait;

/* Context of a lowering. The caller creates `comp` (a computation of a module being
 * built), HLO values for the inputs, and reads the outputs back. */
typedef struct op_lower_ctx {
  const graph_node *node; /* attributes come from here */
  int64_t opset;          /* ONNX default-domain opset (0 for TF) */
  hlo_computation *comp;  /* emit instructions here with the builder (hlo/builder.h) */
  int n_inputs;
  /* HLO value of each data input. May be NULL for an input in the op's
   * const_inputs mask: such inputs are given by value in const_inputs instead. */
  hlo_instr **inputs;
  /* Compile-time value of input i, when known (always set for const_inputs-mask
   * inputs; may also be set for others, e.g. Const-fed weights); else NULL. */
  const graph_tensor *const *const_inputs;
  /* Framework dtypes of the inputs (graph dtypes carry what HLO types lose). */
  const graph_dtype *input_dtypes;
  int n_outputs;
  hlo_instr **outputs; /* to fill: one HLO value per node output */
} op_lower_ctx;

/* Context of a host kernel run. Inputs are borrowed; each output the kernel produces
 * is stored (with one reference owned by the caller) in outputs[i]. */
typedef struct op_host_ctx {
  const graph_node *node;
  int64_t opset;
  int n_inputs;
  graph_tensor *const *inputs;
  int n_outputs;
  graph_tensor **outputs;
} op_host_ctx;

typedef struct op_def {
  const char *name;       /* namespaced: "onnx.Conv", "tf.Conv2D" */
  uint32_t traits;        /* op_trait bits */
  uint64_t const_inputs;  /* bit i: input i must be a compile-time constant for lower */
  kiln_status (*lower)(op_lower_ctx *ctx);
  kiln_status (*host)(op_host_ctx *ctx);
} op_def;

/* A family's table; see ops_registry.c for the list of families. */
typedef struct op_table {
  const char *family; /* "onnx.math", "tf.nn", … */
  int n;
  const op_def *defs;
} op_table;

/* Whether input i (of n_in) must be a compile-time constant for def's lowering: the
 * const_inputs mask, and the last input of an OP_CONST_LAST_INPUT op. */
bool op_input_must_be_constant(const op_def *def, int i, int n_in);
/* Whether def's lowering accepts must-be-constant input i as a runtime value instead
 * (OP_RUNTIME_OK_INPUT1). */
bool op_input_runtime_ok(const op_def *def, int i);

/* The argument arrays one lowering reads and fills (what op_lower_ctx points at), sized
 * for a node. Single-op modules, cluster modules and the bridge's shape analysis fill
 * the inputs each their own way, then call op_lower. */
typedef struct op_lower_args {
  hlo_instr **inputs;          /* node->n_inputs HLO values (NULL allowed for constants) */
  const graph_tensor **consts; /* node->n_inputs compile-time values (must-be-constant inputs) */
  graph_dtype *dtypes;         /* node->n_inputs framework dtypes */
  hlo_instr **outputs;         /* node->n_outputs, plus room for a lowering that fills more */
} op_lower_args;

void op_lower_args_init(op_lower_args *a, const graph_node *node);
void op_lower_args_free(op_lower_args *a);
/* Runs def's lowering of node into comp on a's arguments. */
kiln_status op_lower(const op_def *def, const graph_node *node, hlo_computation *comp, const op_lower_args *a);
/* An HLO constant holding t; *out stays NULL when t's dtype has no HLO form (strings). */
kiln_status op_constant(hlo_computation *comp, const graph_tensor *t, hlo_instr **out);
/* op_constant without the copy: the constant borrows t's data, so comp's module must be
 * released before t (the cluster runner's modules live only for their compile). */
kiln_status op_constant_borrowed(hlo_computation *comp, const graph_tensor *t, hlo_instr **out);

/* NULL when kiln has no op of that name. O(1) after the first call. */
const op_def *op_find(const char *name);
int op_count(void);
const op_def *op_at(int i); /* sorted by name */

/* ONNX op versions (ops_onnx_versions.c). ONNX versions an op by the opset at which
 * each of its definitions took effect (its since-versions); a model of opset V uses the
 * greatest one <= V. */
/* The newest default-domain opset kiln knows the ops of. */
int op_onnx_max_opset(void);
/* The since-version of op_type ("Conv") that opset selects; 0 when op_type is no ONNX
 * op at that opset. */
int op_onnx_since_version(const char *op_type, int64_t opset);
/* The since-versions [*lo, *hi] kiln implements op_type at; false for an op kiln lacks. */
bool op_onnx_version_range(const char *op_type, int *lo, int *hi);
/* NULL when node is not an ONNX default-domain op of kiln's, or when kiln implements the
 * version of its op that its model's opset selects; else an error naming the node, the
 * version, the opset and the versions kiln has. */
kiln_status op_check_onnx_version(const graph_node *node);

/* Error naming the node and op, for lowerings and kernels:
 *   "node conv1 (onnx.Conv): kernel_shape has 3 entries, input is 2-D" */
kiln_status op_error(const graph_node *node, kiln_code code, const char *fmt, ...) KILN_PRINTF(3, 4);

#endif
