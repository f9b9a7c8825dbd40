/* Shared lowering helpers for the op library, in the style of XLA's client/lib.
 *
 * Framework ops are thin: an ONNX Add and a TF AddV2 are both "numpy-broadcast the two
 * operands, then add"; a Conv and a Conv2D are both "a convolution with some window".
 * What they share lives here once, built only through the checked HLO builder
 * (hlo/builder.h), so every helper either appends well-shaped instructions to the
 * computation or returns an error naming the HLO op and shapes. Helpers never take a
 * graph node: callers add the node's context (OPLIB_TRY below).
 *
 * Sections:
 *   1. errors           OPLIB_TRY: wrap an error with "node NAME (OP): " once
 *   2. constants        scalars, filled arrays, int/float arrays, tensors, type limits
 *   3. shapes           axis normalisation, reshape/transpose/convert that skip
 *                       no-ops, slices, pads, constant-index gathers, checked element
 *                       counts
 *   4. broadcasting     numpy/ONNX multidirectional broadcasting of 2..n values and
 *                       the elementwise binary/compare/select built on it
 *   5. reductions       sum/prod/max/min/mean over axes, arg-max/arg-min, softmax
 *   6. windows          conv/pool window construction from (kernel, strides, pads,
 *                       dilations, auto_pad, ceil_mode), NCHW conv dimension numbers
 *   7. contractions     numpy matmul with batch broadcasting
 *   8. computations     uniquely named helper computations (sort comparators,
 *                       "replace" scatter combiners, multi-value reducers)
 *   9. constant inputs  reading int lists / scalars from a graph_tensor
 *  10. ONNX conventions absent optional inputs, attribute forms, dtypes (onnx_*)
 * (Other families append their own sections at the end.)
 *
 * Example -- the whole lowering of ONNX Add:
 *
 *   static kiln_status lower_add(op_lower_ctx *ctx) {
 *     hlo_instr *a, *b, *y;
 *     TRY(onnx_require_input(ctx, 0, &a));       // errors already name the node
 *     TRY(onnx_require_input(ctx, 1, &b));
 *     OPLIB_TRY(ctx->node, oplib_binary(ctx->comp, HLO_OP_ADD, a, b, &y));
 *     ctx->outputs[0] = y;
 *     return NULL;
 *   }
 *
 * ONNX conventions (what the ONNX importer produces and the ONNX ops rely on):
 *   - Initializers and Constant nodes become "onnx.Constant" nodes whose tensor
 *     attribute `value` holds the value (the other Constant attribute forms, value_float
 *     and friends, are accepted too).
 *   - An optional input given as "" is not a data input at all: the node carries an int
 *     list attribute "_absent_inputs" with the ONNX positions that are absent, and the
 *     data inputs skip them. onnx_input_index() (import/onnx/onnx_import.h) maps an ONNX
 *     position to the data input index (or -1); onnx_input()/onnx_const_input()/
 *     onnx_input_dtype() read through it.
 *     Trailing optional inputs that are simply left out have no data input either.
 *   - graph->opset, the default-domain opset, arrives as ctx->opset; ops pick their
 *     per-version semantics from it (e.g. Softmax's 2-D coercion before opset 13).
 *   - op_def.const_inputs bits index *data* inputs. Because absent inputs shift later
 *     positions down, an op whose optional value inputs may shift marks every
 *     position from the first value input on (e.g. Slice: all but input 0).
 *   - Attributes keep ONNX's kinds: ints as INT, floats as FLOAT, strings as STRING
 *     (bytes), tensors as TENSOR, lists as LIST. Cast's `to` may be an INT (ONNX's
 *     TensorProto.DataType number) or a TYPE.
 *   - Element types: ONNX index outputs (ArgMax, TopK indices, Shape, NonZero) are
 *     int64; comparisons produce bool (pred). */
#ifndef KILN_OPS_OPS_LIB_H
#define KILN_OPS_OPS_LIB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "hlo/ir.h"
#include "import/onnx/onnx_import.h"
#include "ops/ops.h"

/* ================================================================ 1. errors ====== */

/* Prefixes s with "node NAME (OP): " unless its message already names this node (errors
 * made by op_error do). NULL passes through. */
kiln_status oplib_wrap(const graph_node *node, kiln_status s);

/* TRY that adds the node's context: OPLIB_TRY(ctx->node, hlo_build_...(...)). */
#define OPLIB_TRY(node, expr)                                          \
  do {                                                                 \
    kiln_status oplib_try_status_ = (expr);                            \
    if (oplib_try_status_) return oplib_wrap((node), oplib_try_status_); \
  } while (0)

/* ============================================================= 2. constants ====== */

/* A scalar constant of type t (value rounded / wrapped like literal_set_f64). */
kiln_status oplib_scalar(hlo_computation *c, hlo_type t, double v, hlo_instr **out);
/* An array of the given dims filled with v (a broadcast scalar constant). */
kiln_status oplib_full(hlo_computation *c, hlo_type t, double v, int rank, const int64_t *dims, hlo_instr **out);
/* An array shaped like x (x's type unless t is given: pass HLO_TYPE_COUNT for x's). */
kiln_status oplib_full_like(hlo_computation *c, hlo_instr *x, hlo_type t, double v, hlo_instr **out);
/* Array constants from host values (row-major; n = product of dims). Integer values
 * are stored with literal_set_s64 (exact for int64), doubles with literal_set_f64. */
kiln_status oplib_const_ints(hlo_computation *c, hlo_type t, int rank, const int64_t *dims, const int64_t *v,
                             hlo_instr **out);
kiln_status oplib_const_f64s(hlo_computation *c, hlo_type t, int rank, const int64_t *dims, const double *v,
                             hlo_instr **out);
/* A 1-D constant of n ints. */
kiln_status oplib_const_vector(hlo_computation *c, hlo_type t, int64_t n, const int64_t *v, hlo_instr **out);
/* The value of a host tensor as a constant (UNIMPLEMENTED for dtypes HLO lacks). */
kiln_status oplib_const_tensor(hlo_computation *c, const graph_tensor *t, hlo_instr **out);
/* Scalar constant of the lowest / highest value of a type: -inf/+inf for floats (the
 * largest finite values for the narrow floats without inf), the exact integer range
 * ends for ints (s4: -8, 7), false/true for pred. */
kiln_status oplib_lowest(hlo_computation *c, hlo_type t, hlo_instr **out);
kiln_status oplib_highest(hlo_computation *c, hlo_type t, hlo_instr **out);

/* ================================================================ 3. shapes ====== */

/* axis in [-rank, rank) -> [0, rank); otherwise an INVALID_ARGUMENT error. */
kiln_status oplib_normalize_axis(int64_t axis, int rank, int64_t *out);
/* Normalises n axes in place; with `unique`, a repeated axis is an error. */
kiln_status oplib_normalize_axes(int n, int64_t *axes, int rank, bool unique);
/* Product of dims[0..n); an error when negative or beyond INT64_MAX / literal limits
 * (for shapes that come from user values: Reshape, Expand, ConstantOfShape…). */
kiln_status oplib_checked_elements(int n, const int64_t *dims, int64_t *out);
/* Reshape / transpose / convert that return x itself when they would change nothing. */
kiln_status oplib_reshape(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out);
kiln_status oplib_transpose(hlo_computation *c, hlo_instr *x, const int64_t *perm, hlo_instr **out);
kiln_status oplib_convert(hlo_computation *c, hlo_instr *x, hlo_type t, hlo_instr **out);
/* Slice of [start, limit) with stride 1 along one axis (the other axes whole). */
kiln_status oplib_slice_axis(hlo_computation *c, hlo_instr *x, int axis, int64_t start, int64_t limit,
                             hlo_instr **out);
/* Edge padding (negative values crop) with explicit zero interior padding, which
 * every consumer of the pad's config handles. */
kiln_status oplib_pad(hlo_computation *c, hlo_instr *x, hlo_instr *value, const int64_t *lo, const int64_t *hi,
                      hlo_instr **out);
/* Concatenation that returns xs[0] when n == 1. */
kiln_status oplib_concat(hlo_computation *c, int n, hlo_instr *const *xs, int64_t axis, hlo_instr **out);
/* Inserts size-1 dims so that x's dims land at positions `dims_in_out` of a rank-`rank`
 * result (a reshape). */
kiln_status oplib_expand_rank(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims_in_out,
                              hlo_instr **out);
/* Gathers along one axis with a 1-D index constant: result dim `axis` has n entries,
 * entry i being x's slice idx[i] (idx must be in range; nearest-neighbour resampling,
 * reflect padding, ...). */
kiln_status oplib_take_constant(hlo_computation *c, hlo_instr *x, int axis, int64_t n, const int64_t *idx,
                                hlo_instr **out);

/* ========================================================== 4. broadcasting ====== */

/* Multidirectional (numpy) broadcast of two shapes: dims align at the right; each pair
 * must be equal or contain a 1. Error text names both shapes. */
kiln_status oplib_broadcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims);
/* x broadcast to exactly (rank, dims) under the same rule (x's rank <= rank). Returns
 * x itself when it already has those dims. */
kiln_status oplib_broadcast_to(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out);
/* Broadcasts n values (in place) to their common shape. */
kiln_status oplib_broadcast_all(hlo_computation *c, int n, hlo_instr **xs);
/* Elementwise ops with numpy broadcasting of the operands. */
kiln_status oplib_binary(hlo_computation *c, hlo_opcode op, hlo_instr *a, hlo_instr *b, hlo_instr **out);
kiln_status oplib_compare(hlo_computation *c, hlo_direction dir, hlo_instr *a, hlo_instr *b, hlo_instr **out);
kiln_status oplib_select(hlo_computation *c, hlo_instr *pred, hlo_instr *on_true, hlo_instr *on_false,
                         hlo_instr **out);
/* x OP scalar(v) with the scalar of x's type (e.g. x * 0.5, x + 1). */
kiln_status oplib_binary_scalar(hlo_computation *c, hlo_opcode op, hlo_instr *x, double v, hlo_instr **out);
/* A unary op that also accepts x of rank 0..n (just hlo_build_unary; for symmetry). */
kiln_status oplib_unary(hlo_computation *c, hlo_opcode op, hlo_instr *x, hlo_instr **out);

/* ============================================================ 5. reductions ====== */

typedef enum oplib_reducer { OPLIB_REDUCE_SUM, OPLIB_REDUCE_PROD, OPLIB_REDUCE_MAX, OPLIB_REDUCE_MIN } oplib_reducer;

/* Reduces x over the given (normalised, distinct) axes with the reducer's identity as
 * init (0, 1, lowest, highest). keepdims keeps the reduced axes as size 1. n_axes == 0
 * returns x. Sums of f16/bf16 accumulate in f32, as XLA's client/lib does. */
kiln_status oplib_reduce(hlo_computation *c, oplib_reducer kind, hlo_instr *x, int n_axes, const int64_t *axes,
                         bool keepdims, hlo_instr **out);
/* Mean over axes: sum / element count (integer types divide with truncation). */
kiln_status oplib_reduce_mean(hlo_computation *c, hlo_instr *x, int n_axes, const int64_t *axes, bool keepdims,
                              hlo_instr **out);
/* Index of the max (is_max) or min along `axis`, as index_type; ties pick the first
 * index, or the last with select_last. NaN is treated as the extreme value (it wins). */
kiln_status oplib_argminmax(hlo_computation *c, hlo_instr *x, int64_t axis, bool is_max, bool select_last,
                            bool keepdims, hlo_type index_type, hlo_instr **out);
/* The variadic reducer behind oplib_argminmax, for reduce / reduce-window over
 * (value, index) pairs: (acc_v, acc_i, v, i) -> (v, i), NaN-aware, ties by index. */
kiln_status oplib_argminmax_computation(hlo_module *m, hlo_type value_type, hlo_type index_type, bool is_max,
                                        bool select_last, hlo_computation **out);
/* Standardises x over axes: y = (x - mean) * rsqrt(var + eps), with the population
 * variance; mean and inv_std (may be NULL) keep the reduced axes as size 1. */
kiln_status oplib_normalize(hlo_computation *c, hlo_instr *x, int n_axes, const int64_t *axes, double eps,
                            hlo_instr **y, hlo_instr **mean, hlo_instr **inv_std);
/* Numerically stable softmax / log-softmax along `axis` (x - max, exp, sum, divide). */
kiln_status oplib_softmax(hlo_computation *c, hlo_instr *x, int64_t axis, bool log, hlo_instr **out);

/* =============================================================== 6. windows ====== */

typedef enum oplib_auto_pad {
  OPLIB_AUTO_PAD_NOTSET, /* explicit pads */
  OPLIB_AUTO_PAD_SAME_UPPER,
  OPLIB_AUTO_PAD_SAME_LOWER,
  OPLIB_AUTO_PAD_VALID
} oplib_auto_pad;

/* Parses ONNX's auto_pad strings (TF's "SAME"/"VALID" too: SAME = SAME_UPPER). */
bool oplib_parse_auto_pad(const char *s, oplib_auto_pad *out);

/* A spatial window over n dims, before it becomes an hlo_window. */
typedef struct oplib_window {
  int n;
  int64_t kernel[HLO_MAX_RANK], stride[HLO_MAX_RANK], dilation[HLO_MAX_RANK];
  int64_t pad_lo[HLO_MAX_RANK], pad_hi[HLO_MAX_RANK];
} oplib_window;

/* Fills w's pads from the input's spatial sizes, given kernel/stride/dilation already
 * in w:
 *   NOTSET: pads = explicit (ONNX order: all begins, then all ends; NULL = zeros);
 *   VALID: zeros; SAME_UPPER/SAME_LOWER: out = ceil(in / stride), total padding
 *   (out-1)*stride + (k-1)*d + 1 - in (>= 0) split with the extra at the end (UPPER) or
 *   the start (LOWER).
 * With ceil_mode the output size rounds up (and a window may not start in the end
 * padding only, as PyTorch and ONNX Runtime do): the end pad grows to make that output
 * size, and *extra_hi (may be NULL) receives how much was added per dim. */
kiln_status oplib_window_pads(oplib_window *w, const int64_t *in_spatial, oplib_auto_pad auto_pad,
                              const int64_t *explicit_pads, bool ceil_mode, int64_t *extra_hi);
/* Output size of each spatial dim for w over in_spatial (floor division, >= 0). */
void oplib_window_out_dims(const oplib_window *w, const int64_t *in_spatial, int64_t *out);
/* An hlo_window over a rank-`rank` operand whose spatial dims start at `first_spatial`
 * (other dims: size 1, stride 1, no padding), e.g. pooling over NCHW: first_spatial 2. */
hlo_window oplib_window_to_hlo(const oplib_window *w, int rank, int first_spatial);
/* The hlo_window of a convolution (its rank is the spatial count). */
hlo_window oplib_conv_window(const oplib_window *w);
/* Dimension numbers for input N,C,spatial... / kernel O,I,spatial... / output
 * N,C,spatial... (ONNX's layouts). */
hlo_conv_dnums oplib_conv_dnums_nchw(int n_spatial);

/* ========================================================== 7. contractions ====== */

/* numpy.matmul: 1-D operands are promoted (a to [1,K], b to [K,1]) and the added dim
 * removed from the result; batch dims broadcast multidirectionally. The result has the
 * operands' type (they must agree; mixed types are the caller's business). */
kiln_status oplib_matmul(hlo_computation *c, hlo_instr *a, hlo_instr *b, hlo_instr **out);

/* ========================================================== 8. computations ====== */

/* A new, empty computation named after base (base, base.1, base.2… whichever is free),
 * placed first in the module (callees precede callers). Fill it with the builder and
 * set its root with hlo_build_set_root. */
hlo_computation *oplib_new_computation(hlo_module *m, const char *base);
/* (T[], T[]) -> T[] returning its second parameter: scatter's "replace" combiner. */
kiln_status oplib_replace_computation(hlo_module *m, hlo_type t, hlo_computation **out);
/* Sort comparator over (value, index) pairs: params (v_a, v_b, i_a, i_b) -> pred.
 * Orders by value descending (largest) or ascending, ties by ascending index, NaN
 * beyond every number (first when largest). Used for TopK with a stable result. */
kiln_status oplib_topk_comparator(hlo_module *m, hlo_type value_type, hlo_type index_type, bool largest,
                                  hlo_computation **out);
/* Top k of x along `axis` via a sort of (x, iota) pairs: values and indices (as
 * index_type) sorted as oplib_topk_comparator orders them (sorted output). */
kiln_status oplib_topk(hlo_computation *c, hlo_instr *x, int64_t axis, int64_t k, bool largest, hlo_type index_type,
                       hlo_instr **values, hlo_instr **indices);

/* ======================================================= 9. constant inputs ====== */

/* The integer values of a numeric tensor (any rank, flattened); more than cap values is
 * an error mentioning `what`. */
kiln_status oplib_tensor_ints(const graph_tensor *t, const char *what, int64_t *buf, int cap, int *n);
/* The single value of a one-element numeric tensor. */
kiln_status oplib_tensor_scalar(const graph_tensor *t, const char *what, double *out);

/* ===================================================== 10. ONNX conventions ====== */

/* onnx_input_index(node, onnx_position) -- the data input index of an ONNX input
 * position, or -1 when it is absent ("" in "_absent_inputs", or beyond the inputs the
 * node has; captures of subgraph ops never count) -- is defined once, next to the
 * convention itself, in import/onnx/onnx_import.h (included above). */
/* HLO value / compile-time value / dtype of an ONNX input position; NULL (or
 * GRAPH_DT_INVALID) when absent or not available. */
hlo_instr *onnx_input(const op_lower_ctx *ctx, int onnx_position);
const graph_tensor *onnx_const_input(const op_lower_ctx *ctx, int onnx_position);
graph_dtype onnx_input_dtype(const op_lower_ctx *ctx, int onnx_position);
bool onnx_has_input(const op_lower_ctx *ctx, int onnx_position);
/* For host kernels. */
graph_tensor *onnx_host_input(const op_host_ctx *ctx, int onnx_position);
/* Required input: error naming the op when it is missing. */
kiln_status onnx_require_input(const op_lower_ctx *ctx, int onnx_position, hlo_instr **out);
/* An optional input as an HLO value: the runtime value, else its compile-time one as a
 * constant; NULL (no error) when absent. */
kiln_status onnx_optional_value(op_lower_ctx *ctx, int onnx_position, hlo_instr **out);
/* Sets output i when the node has it (ONNX outputs may be omitted); NULL, for TRY. */
kiln_status onnx_set_output(op_lower_ctx *ctx, int i, hlo_instr *v);
/* An error naming the node unless x is a floating-point tensor. */
kiln_status onnx_require_float(op_lower_ctx *ctx, const hlo_instr *x, const char *what);
/* The type a computation on t runs in: f32 for f16/bf16 (rounded back at the end, as
 * ONNX's reference computes them), t otherwise. */
hlo_type onnx_compute_type(hlo_type t);
/* Required compile-time input (an error when it is absent or was not given by value). */
kiln_status onnx_require_const(const op_lower_ctx *ctx, int onnx_position, const char *what,
                               const graph_tensor **out);

/* String attribute as a NUL-terminated string (arena-owned), or dflt when missing. */
const char *onnx_attr_string(const graph_node *node, const char *name, const char *dflt);
/* Int-list attribute: *present false (and *n 0) when missing; too many is an error. */
kiln_status onnx_attr_ints(const graph_node *node, const char *name, int64_t *buf, int cap, int *n, bool *present);
/* Float-list attribute (as doubles), same rules. */
kiln_status onnx_attr_floats(const graph_node *node, const char *name, double *buf, int cap, int *n, bool *present);
/* A dtype attribute given as an ONNX DataType number (INT) or a TYPE. */
kiln_status onnx_attr_dtype(const graph_node *node, const char *name, graph_dtype *out);
/* Ints from either an attribute (older opsets) or a constant input position (newer
 * ones), whichever the node has: Squeeze/Unsqueeze axes, Split's split, Reduce* axes.
 * *present false when neither is there. */
kiln_status onnx_ints_attr_or_input(const op_lower_ctx *ctx, const char *attr, int onnx_position, int64_t *buf,
                                    int cap, int *n, bool *present);
/* The HLO type of ONNX input position (from its HLO value, else its graph dtype). */
kiln_status onnx_input_hlo_type(const op_lower_ctx *ctx, int onnx_position, hlo_type *out);

#endif
