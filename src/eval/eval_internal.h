/* Shared declarations between the evaluator's files: one kernel per opcode family, all
 * with the same signature, plus small index helpers.
 *
 * A kernel receives the instruction (for attributes and result shape) and its evaluated
 * operands (borrowed) and returns a new literal in *out. Kernels trust that the module
 * passed the verifier (shapes consistent) but still check anything data-dependent
 * (indices, while-loop trip counts) and report errors with the instruction name. */
#ifndef KILN_EVAL_EVAL_INTERNAL_H
#define KILN_EVAL_EVAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "eval/eval.h"

typedef struct eval_ctx {
  int depth; /* nesting of called computations, to bound runaway recursion */
  /* Per-computation execution plans (operand positions, use counts), built on first
   * call and reused: reducers and loop bodies are called many times. May be NULL
   * (a zero-initialised ctx works, just without reuse). Owned by eval.c. */
  struct eval_plan_cache *plans;
} eval_ctx;

typedef kiln_status (*eval_kernel)(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                   hlo_literal **out);

/* Runs a called computation (to_apply, body, comparator, …) on borrowed args. */
kiln_status eval_call(eval_ctx *ctx, const hlo_computation *c, hlo_literal *const *args, int n_args,
                      hlo_literal **out);

/* --- elementwise.c: unary/binary/ternary math and logic, compare, select, clamp, copy,
 *     convert, bitcast-convert, reduce-precision, is-finite, popcnt, clz, … --- */
kiln_status eval_elementwise(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_convert(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_bitcast_convert(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
/* Converts one literal to another element type with XLA's convert semantics. */
kiln_status eval_convert_literal(const hlo_literal *in, hlo_type to, hlo_literal **out);

/* --- data_movement.c --- */
kiln_status eval_broadcast(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_reshape(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_transpose(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_dynamic_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_dynamic_update_slice(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                      hlo_literal **out);
kiln_status eval_concatenate(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_pad(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_reverse(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_iota(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);

/* --- reduce.c --- */
kiln_status eval_reduce(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_reduce_window(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_select_and_scatter(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                    hlo_literal **out);
/* batch-norm-inference: epsilon and feature_index are read from raw_attrs. */
kiln_status eval_batch_norm_inference(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                      hlo_literal **out);

/* --- sort.c --- */
kiln_status eval_sort(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_topk(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);

/* Direct scalar comparisons for comparator-like computations (sort's comparator,
 * select-and-scatter's select): most are a single compare of two parameters, which the
 * kernels can then evaluate without calling the interpreter, with exactly the compare
 * kernel's semantics (FLOAT: IEEE, every ordered comparison with NaN is false and NE is
 * true; TOTALORDER: -NaN < -inf < … < -0 < +0 < … < +inf < +NaN; integers by value). */
typedef struct eval_scalar_compare {
  hlo_type type;     /* element type of both compared parameters */
  hlo_direction dir;
  bool total_order;  /* floats only */
  int lhs_param, rhs_param; /* parameter numbers of compare's operands 0 and 1 */
} eval_scalar_compare;
/* True when c consists only of parameters and a root compare(param, param) on scalars
 * whose compare type is the natural one for the element type (or TOTALORDER on floats). */
bool eval_scalar_compare_match(const hlo_computation *c, eval_scalar_compare *out);
/* compare(a[ai], b[bi]) with cmp's type, direction and order. */
bool eval_scalar_compare_apply(const eval_scalar_compare *cmp, const void *a, int64_t ai, const void *b,
                               int64_t bi);

/* --- dot_conv.c --- */
kiln_status eval_dot(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_convolution(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);

/* --- gather_scatter.c --- */
kiln_status eval_gather(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
kiln_status eval_scatter(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);

/* --- lapack.c: jaxlib's LAPACK custom-calls (hlo/lapack_call.h) ---
 * eval_lapack runs a custom-call whose target is lapack_*; a target the decoder rejects
 * (complex types, other routines, malformed shapes) is its error, naming the call. */
kiln_status eval_lapack(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out);
/* Whether INS is a LAPACK custom-call the decoder accepts, i.e. one eval_lapack runs. */
bool eval_lapack_supported(const hlo_instr *ins);

/* --- reducer.c: recognising scalar reducer computations ---
 * Many called computations (reduce's to_apply, scatter's combiner) are a single binary
 * op over the two parameters. Recognising them lets kernels apply the op directly
 * instead of calling the interpreter per element: same results, orders of magnitude
 * faster. Anything else goes through eval_call. */
typedef enum eval_reducer_kind {
  EVAL_REDUCER_GENERIC, /* call the computation */
  EVAL_REDUCER_ADD,
  EVAL_REDUCER_MUL,
  EVAL_REDUCER_MAX,
  EVAL_REDUCER_MIN,
  EVAL_REDUCER_AND,
  EVAL_REDUCER_OR,
  EVAL_REDUCER_XOR
} eval_reducer_kind;
/* Kind of a computation (p0, p1) -> op(p0, p1) or op(p1, p0) on scalars of one type. */
eval_reducer_kind eval_reducer_classify(const hlo_computation *c);
/* Applies a non-generic reducer: dst[di] = op(dst[di], src[si]) for element type t,
 * with exactly the rounding the full evaluator would give (f16/bf16 round per step). */
void eval_reducer_apply(eval_reducer_kind k, hlo_type t, void *dst, int64_t di, const void *src, int64_t si);

/* --- index helpers --- */
/* Advances a row-major multi-index; returns false after the last index. */
static inline bool eval_next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

static inline int64_t eval_linear_index(int rank, const int64_t *strides, const int64_t *idx) {
  int64_t l = 0;
  for (int d = 0; d < rank; d++) l += idx[d] * strides[d];
  return l;
}

/* Copies element si of src to element di of dst (same element type). */
static inline void eval_copy_element(void *dst, int64_t di, const void *src, int64_t si, size_t esize) {
  memcpy((char *)dst + di * (int64_t)esize, (const char *)src + si * (int64_t)esize, esize);
}

/* Error helper that names the instruction. */
#define EVAL_ERR(code, ins, fmt, ...) \
  status_error(code, "%s (%s): " fmt, (ins)->name, hlo_opcode_name((ins)->op), ##__VA_ARGS__)

#endif
