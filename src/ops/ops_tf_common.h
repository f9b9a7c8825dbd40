/* TensorFlow conventions shared by the TF op families (ops_tf_*.c).
 *
 * The generic lowering helpers (broadcasting, reductions, windows…) live in ops_lib.h
 * and serve ONNX and TF alike; what is here is only how TensorFlow spells things in a
 * graph: attributes named after TF's OpDefs (T, data_format, padding as the bytes
 * "SAME"/"VALID"/"EXPLICIT" with explicit_paddings, strides/ksize/dilations listed in
 * data_format order), inputs that must be compile-time values, and the input count
 * checks every TF op starts with. Errors made here already name the node and op. */
#ifndef KILN_OPS_OPS_TF_COMMON_H
#define KILN_OPS_OPS_TF_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"

/* Most values a TF int-list attribute or shape input may hold here. */
#define TF_MAX_INTS 64

/* Error unless the node has between lo and hi data inputs (hi < 0: no upper bound). */
kiln_status tf_check_inputs(const op_lower_ctx *ctx, int lo, int hi);
kiln_status tf_host_check_inputs(const op_host_ctx *ctx, int lo, int hi);
/* Data input i as an HLO value (an error when it was given only by value). */
kiln_status tf_input(const op_lower_ctx *ctx, int i, hlo_instr **out);
/* The compile-time value of input i (an error naming `what` when it is not known). */
kiln_status tf_const_input(const op_lower_ctx *ctx, int i, const char *what, const graph_tensor **out);
/* Integer values of constant input i (flattened). */
kiln_status tf_const_ints(const op_lower_ctx *ctx, int i, const char *what, int64_t *buf, int cap, int *n);
/* The one integer of constant input i (a scalar or a one-element tensor). */
kiln_status tf_const_int(const op_lower_ctx *ctx, int i, const char *what, int64_t *out);

/* String attribute as a NUL-terminated string, or dflt when absent. */
const char *tf_attr_string(const graph_node *node, const char *name, const char *dflt);
/* Int-list attribute with an error past cap; *present tells whether it was there. */
kiln_status tf_attr_ints(const graph_node *node, const char *name, int64_t *buf, int cap, int *n, bool *present);
/* Type attribute as an HLO type; dflt when absent; an error for types HLO lacks. */
kiln_status tf_attr_hlo_type(const graph_node *node, const char *name, hlo_type dflt, hlo_type *out);

/* data_format: NHWC/NDHWC/NWC (channels last, the default) or NCHW/NCDHW/NCW. */
kiln_status tf_data_format(const graph_node *node, bool *channels_first);

/* TF's windowed ops (conv, pooling): the per-spatial-dim window of a rank-(n+2)
 * operand in the given layout, from the attributes named by ksize_attr (NULL: the
 * kernel sizes are given in kernel[]), "strides", "dilations" (absent: 1) and
 * "padding" (+ "explicit_paddings"), each list in data_format order. Fills w (kernel,
 * stride, dilation and pads) for the operand's spatial sizes in_spatial. */
kiln_status tf_window(const graph_node *node, int n_spatial, bool channels_first, const char *ksize_attr,
                      const int64_t *kernel, const int64_t *in_spatial, oplib_window *w);
/* Same, with strides/ksize given explicitly in data_format order (MaxPoolV2 inputs). */
kiln_status tf_window_from(const graph_node *node, int n_spatial, bool channels_first, const int64_t *ksize_full,
                           const int64_t *strides_full, const int64_t *in_spatial, oplib_window *w);

/* Shape text for error messages, into the caller's buffer (no allocation to free). */
typedef struct tf_shape_buf {
  char s[160];
} tf_shape_buf;
const char *tf_shape_text(const hlo_shape *shape, tf_shape_buf *buf);

/* Indices of the batch, feature and spatial dims of a rank-(n+2) layout. */
void tf_layout_dims(int n_spatial, bool channels_first, int64_t *batch, int64_t *feature, int64_t *spatial);

/* Host-kernel helper: stable sort of idx[0..n) by cmp (negative: a before b), which
 * gets ctx; merge sort, so equal keys keep their order. */
typedef int (*tf_index_cmp)(const void *ctx, int64_t a, int64_t b);
void tf_sort_indices(int64_t *idx, int64_t n, tf_index_cmp cmp, const void *ctx);

/* Activation by TF op name (Relu, Relu6, Elu, Selu, LeakyRelu with its alpha, Sigmoid,
 * Tanh, Softplus, Identity): *known false, and nothing built, for other names. Shared
 * by the plain ops and the fused_ops of _FusedConv2D / _FusedMatMul (ops_tf_math.c). */
kiln_status tf_activation(hlo_computation *c, const char *name, hlo_instr *x, double leakyrelu_alpha,
                          hlo_instr **out, bool *known);
/* x + bias along the channel dim: the last one (channels last) or dim 1 (ops_tf_math.c). */
kiln_status tf_bias_add(hlo_computation *c, hlo_instr *x, hlo_instr *bias, bool channels_first, hlo_instr **out);

/* Sets output i. A node may declare fewer outputs than the op makes (a TF.js graph
 * only knows the ports its consumers use), so values past ctx->n_outputs are dropped. */
static inline void tf_set_output(op_lower_ctx *ctx, int i, hlo_instr *v) {
  if (i < ctx->n_outputs) ctx->outputs[i] = v;
}

#endif
