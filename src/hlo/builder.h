/* HLO builder: the checked way for graph lowering and passes to create instructions.
 *
 * Every hlo_build_* call fills the instruction's attributes, runs shape inference and
 * either appends a fully shaped instruction to the computation (*out) or returns an
 * error naming the op and shapes, leaving the computation exactly as it was (the
 * half-made instruction is removed). Operands must already belong to the computation.
 * Names are generated ("add.7"); rename with `ins->name = arena_strdup(...)` if needed.
 * Integer arrays passed in (dims, permutations, dimension numbers, windows) are copied,
 * so they may live on the caller's stack. *out is written only after every operand was
 * read (NULL on error), so it may be a slot of the operand array passed in.
 *
 * Example — entry computation computing reduce_sum(dot(a, b) + bias, dim 1):
 *
 *   hlo_module *m = hlo_module_new("example");
 *   hlo_computation *c = hlo_computation_new(m, "main");
 *   hlo_computation *add_f32;
 *   hlo_instr *a, *b, *bias, *d, *bb, *sum, *zero, *r;
 *   hlo_shape sa = shape_make(HLO_F32, 2, (int64_t[]){2, 3});
 *   hlo_shape sb = shape_make(HLO_F32, 2, (int64_t[]){3, 4});
 *   hlo_shape sv = shape_make(HLO_F32, 1, (int64_t[]){4});
 *   int64_t lc[] = {1}, rc[] = {0};
 *   hlo_dot_dnums dn = {.lhs_contracting = {1, lc}, .rhs_contracting = {1, rc}};
 *   TRY(hlo_build_parameter(c, 0, &sa, "a", &a));
 *   TRY(hlo_build_parameter(c, 1, &sb, "b", &b));
 *   TRY(hlo_build_parameter(c, 2, &sv, "bias", &bias));
 *   TRY(hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &d));          // f32[2,4]
 *   TRY(hlo_build_broadcast(c, bias, 2, (int64_t[]){2, 4}, (int64_t[]){1}, &bb));
 *   TRY(hlo_build_binary(c, HLO_OP_ADD, d, bb, &sum));
 *   TRY(hlo_build_constant_scalar(c, HLO_F32, 0.0, &zero));
 *   TRY(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &add_f32));
 *   TRY(hlo_build_reduce(c, 1, &sum, &zero, 1, (int64_t[]){1}, add_f32, &r)); // f32[2]
 *   TRY(hlo_build_set_root(c, r));
 *   hlo_build_set_entry(m, c);
 *   TRY(hlo_build_order_computations(m));   // callees first, entry last (for printing)
 *   TRY(hlo_verify_module(m));
 *
 * (Real callers free the module on error instead of a bare TRY.) */
#ifndef KILN_HLO_BUILDER_H
#define KILN_HLO_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "hlo/ir.h"

/* For dot/convolution result_type: use the operands' (higher-precision) type. */
#define HLO_BUILD_DEFAULT_TYPE HLO_TYPE_COUNT

/* ---- generic ---- */

/* A zeroed instruction template for op with XLA's defaults set (group counts 1) and
 * shape token[], which dot/convolution read as "no preferred type". Fill the shape for
 * ops whose shape is given (see hlo_infer_shape), operands, called and attributes, then
 * pass it to hlo_build_instr. */
hlo_instr hlo_instr_template(hlo_opcode op);

/* A template rebuilding src over `operands`: src's opcode, shape, attributes, called
 * computations and metadata, with no name (one is generated), no literal and no user
 * data. Passes that rewrite an instruction change the attributes they rename on it. */
hlo_instr hlo_instr_template_from(const hlo_instr *src, hlo_instr **operands);

/* Creates an instruction from a template: copies tmpl's name (NULL: generated; a name
 * already used in the module is an error), operands, called computations, attributes,
 * raw attributes and metadata into the module, infers the shape and appends it to c.
 * Takes ownership of tmpl->literal, even on error. A parameter is also entered in
 * c->params. The typed builders below are thin wrappers over this. */
kiln_status hlo_build_instr(hlo_computation *c, const hlo_instr *tmpl, hlo_instr **out);

/* ---- leaves ---- */

/* Parameter `number` of c (numbers may be added in any order; the verifier checks that
 * they end up dense). */
kiln_status hlo_build_parameter(hlo_computation *c, int64_t number, const hlo_shape *shape, const char *name,
                                hlo_instr **out);
/* Takes ownership of lit, even on error. */
kiln_status hlo_build_constant(hlo_computation *c, hlo_literal *lit, hlo_instr **out);
/* Scalar constant of an array type (value rounded/wrapped as literal_set_f64 does). */
kiln_status hlo_build_constant_scalar(hlo_computation *c, hlo_type type, double value, hlo_instr **out);
kiln_status hlo_build_iota(hlo_computation *c, const hlo_shape *shape, int64_t iota_dimension, hlo_instr **out);

/* ---- elementwise ---- */

/* op: abs, negate, exponential, sqrt, not, is-finite, copy, … (any one-operand
 * elementwise opcode). */
kiln_status hlo_build_unary(hlo_computation *c, hlo_opcode op, hlo_instr *x, hlo_instr **out);
/* op: add, subtract, multiply, divide, maximum, and, shift-left, … (same shapes). */
kiln_status hlo_build_binary(hlo_computation *c, hlo_opcode op, hlo_instr *lhs, hlo_instr *rhs, hlo_instr **out);
kiln_status hlo_build_compare(hlo_computation *c, hlo_direction dir, hlo_instr *lhs, hlo_instr *rhs,
                              hlo_instr **out);
kiln_status hlo_build_select(hlo_computation *c, hlo_instr *pred, hlo_instr *on_true, hlo_instr *on_false,
                             hlo_instr **out);
kiln_status hlo_build_clamp(hlo_computation *c, hlo_instr *min, hlo_instr *x, hlo_instr *max, hlo_instr **out);
kiln_status hlo_build_convert(hlo_computation *c, hlo_instr *x, hlo_type type, hlo_instr **out);
kiln_status hlo_build_bitcast_convert(hlo_computation *c, hlo_instr *x, hlo_type type, hlo_instr **out);

/* ---- shape manipulation ---- */

/* Result dims out_dims[0..rank); operand dimension i goes to result dimension
 * broadcast_dims[i] (x's rank entries; NULL when x is a scalar). */
kiln_status hlo_build_broadcast(hlo_computation *c, hlo_instr *x, int rank, const int64_t *out_dims,
                                const int64_t *broadcast_dims, hlo_instr **out);
kiln_status hlo_build_reshape(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out);
/* perm has x's rank entries: result dimension i is operand dimension perm[i]. */
kiln_status hlo_build_transpose(hlo_computation *c, hlo_instr *x, const int64_t *perm, hlo_instr **out);
/* start/limit/stride have x's rank entries; stride NULL means all 1. */
kiln_status hlo_build_slice(hlo_computation *c, hlo_instr *x, const int64_t *start, const int64_t *limit,
                            const int64_t *stride, hlo_instr **out);
/* starts: x's rank scalar integer instructions; sizes: x's rank entries. */
kiln_status hlo_build_dynamic_slice(hlo_computation *c, hlo_instr *x, hlo_instr *const *starts, const int64_t *sizes,
                                    hlo_instr **out);
kiln_status hlo_build_dynamic_update_slice(hlo_computation *c, hlo_instr *x, hlo_instr *update,
                                           hlo_instr *const *starts, hlo_instr **out);
kiln_status hlo_build_concatenate(hlo_computation *c, int n, hlo_instr *const *xs, int64_t dimension,
                                  hlo_instr **out);
/* lo/hi/interior have x's rank entries (negative lo/hi crop); interior NULL means 0. */
kiln_status hlo_build_pad(hlo_computation *c, hlo_instr *x, hlo_instr *pad_value, const int64_t *lo,
                          const int64_t *hi, const int64_t *interior, hlo_instr **out);
kiln_status hlo_build_reverse(hlo_computation *c, hlo_instr *x, int n_dims, const int64_t *dims, hlo_instr **out);

/* ---- tuples ---- */

kiln_status hlo_build_tuple(hlo_computation *c, int n, hlo_instr *const *xs, hlo_instr **out);
kiln_status hlo_build_get_tuple_element(hlo_computation *c, hlo_instr *tuple, int64_t index, hlo_instr **out);

/* ---- reductions and windows ---- */

/* Variadic reduce: n inputs with n init values; the result is a tuple when to_apply
 * returns one. */
kiln_status hlo_build_reduce(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *const *inits,
                             int n_dims, const int64_t *dims, hlo_computation *to_apply, hlo_instr **out);
kiln_status hlo_build_reduce_window(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *const *inits,
                                    const hlo_window *window, hlo_computation *to_apply, hlo_instr **out);
/* A window of the given rank and sizes with strides (NULL: 1), no padding, no dilation. */
hlo_window hlo_window_make(int rank, const int64_t *sizes, const int64_t *strides);

/* ---- contractions, indexing ---- */

/* result_type: preferred element type, or HLO_BUILD_DEFAULT_TYPE. The dnums' lists
 * are copied. */
kiln_status hlo_build_dot(hlo_computation *c, hlo_instr *lhs, hlo_instr *rhs, const hlo_dot_dnums *dnums,
                          hlo_type result_type, hlo_instr **out);
kiln_status hlo_build_convolution(hlo_computation *c, hlo_instr *lhs, hlo_instr *rhs, const hlo_window *window,
                                  const hlo_conv_dnums *dnums, int64_t feature_group_count,
                                  int64_t batch_group_count, hlo_type result_type, hlo_instr **out);
/* slice_sizes has operand's rank entries. */
kiln_status hlo_build_gather(hlo_computation *c, hlo_instr *operand, hlo_instr *start_indices,
                             const hlo_gather_dnums *dnums, const int64_t *slice_sizes, hlo_instr **out);
kiln_status hlo_build_scatter(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *indices,
                              hlo_instr *const *updates, const hlo_scatter_dnums *dnums, hlo_computation *to_apply,
                              hlo_instr **out);
kiln_status hlo_build_sort(hlo_computation *c, int n, hlo_instr *const *xs, int64_t dimension, bool is_stable,
                           hlo_computation *comparator, hlo_instr **out);

/* ---- control flow and calls ---- */

kiln_status hlo_build_while(hlo_computation *c, hlo_computation *condition, hlo_computation *body, hlo_instr *init,
                            hlo_instr **out);
/* branch_index: pred[] (n == 2: true branch first) or s32[]; branch i gets args[i]. */
kiln_status hlo_build_conditional(hlo_computation *c, hlo_instr *branch_index, int n,
                                  hlo_computation *const *branches, hlo_instr *const *args, hlo_instr **out);
kiln_status hlo_build_call(hlo_computation *c, hlo_computation *callee, int n, hlo_instr *const *args,
                           hlo_instr **out);
kiln_status hlo_build_map(hlo_computation *c, int n, hlo_instr *const *xs, hlo_computation *to_apply,
                          hlo_instr **out);

/* ---- computations and modules ---- */

kiln_status hlo_build_set_root(hlo_computation *c, hlo_instr *root);
/* Makes c the module's entry (and no other computation). */
void hlo_build_set_entry(hlo_module *m, hlo_computation *c);
/* The reducer (T[], T[]) -> T[] applying binary `op`, named like "add_f32". Reuses a
 * computation of that name with that signature if the module has one; a new one is
 * placed first in the module (it calls nothing, so callees-first order holds). */
kiln_status hlo_build_scalar_computation(hlo_module *m, hlo_opcode op, hlo_type type, hlo_computation **out);
/* The sort comparator (T[], T[]) -> pred[] comparing with `dir`, named like "lt_f32". */
kiln_status hlo_build_compare_computation(hlo_module *m, hlo_direction dir, hlo_type type,
                                          hlo_computation **out);
/* Reorders m->comps so every computation follows those it calls and the entry is last
 * (the order the printer and XLA's parser expect). Error on a call cycle. */
kiln_status hlo_build_order_computations(hlo_module *m);

#endif
