/* Reduction splitting for the thread pool: a reduce that keeps its input's minor
 * dimension and has few outputs (a global average pool in NHWC at batch 1: [1,112,112,32]
 * -> [1,32], or a column sum over [4096,1024]) is a column reduction with a single work
 * unit of up to CPU_COLUMN_CHUNK outputs, so one core does all of it. It becomes two
 * reduces over a reshape that splits one reduced dimension d into (f, dims[d] / f):
 *   reduce(x, dims) -> reduce(reduce(reshape(x), dims'), {position of f})
 * The inner reduce has f times the outputs, hence f times the units, and does nearly all
 * the work; the outer one folds f partial results per output. (XLA's tree reduction
 * rewriters do the same for GPUs.)
 * Only reducers whose init value is the identity (add from 0, maximum from -inf,
 * minimum from +inf) are split, since the init is folded in twice. The reducer of an
 * HLO reduce is associative and commutative by contract, so integer, minimum and
 * maximum results are unchanged and float sums differ by rounding only, as for the cpu
 * backend's lane reductions. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_codegen.h" /* CPU_COLUMN_CHUNK */
#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"
#include "hlo/shape.h"

/* The units a split aims for: enough for a few per core of a small machine. */
#define TARGET_UNITS 16
/* Input elements per output below which a reduction is too small to be worth a second
 * pass (a split then costs more in the extra kernel than it saves). */
#define MIN_REDUCED 2048

/* Whether init is the identity of the reduce's binary reducer. */
static bool identity_init(const hlo_instr *r) {
  const hlo_instr *init = r->operands[1];
  hlo_opcode op;
  if (!hlo_pass_reducer_op(r->called[0], r->shape.type, &op)) return false;
  bool is_float = hlo_type_is_float(init->shape.type);
  switch (op) {
    case HLO_OP_ADD:
      return is_float ? hlo_pass_is_float_constant(init, 0.0, false) || hlo_pass_is_float_constant(init, 0.0, true)
                      : hlo_pass_is_int_constant(init, 0);
    case HLO_OP_MAXIMUM: return is_float && hlo_pass_is_float_constant(init, -INFINITY, true);
    case HLO_OP_MINIMUM: return is_float && hlo_pass_is_float_constant(init, INFINITY, false);
    default: return false;
  }
}

/* The dim to split and the factor, or false when the reduce is left alone. */
static bool plan_split(const hlo_instr *r, int *split_dim, int64_t *factor) {
  if (r->op != HLO_OP_REDUCE || r->n_operands != 2 || r->n_called != 1 || !shape_is_array(&r->shape)) return false;
  const hlo_shape *is = &r->operands[0]->shape;
  if (is->rank < 1 || is->rank + 1 > HLO_MAX_RANK || r->shape.rank < 1) return false;
  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < r->dimensions.n; i++) reduced[r->dimensions.v[i]] = true;
  if (reduced[is->rank - 1]) return false; /* a lane reduction: one unit per output */
  int64_t outs = shape_elements(&r->shape), ins = shape_elements(is);
  if (outs <= 0 || ins / outs < MIN_REDUCED) return false;
  int64_t cols = r->shape.dims[r->shape.rank - 1];
  int64_t units = outs / cols * ((cols + CPU_COLUMN_CHUNK - 1) / CPU_COLUMN_CHUNK);
  if (units >= TARGET_UNITS || !identity_init(r)) return false;
  int64_t want = (TARGET_UNITS + units - 1) / units;
  *factor = 1;
  for (int d = 0; d < is->rank; d++) {
    if (!reduced[d]) continue;
    /* The largest divisor of the dim up to `want`; the whole dim would leave nothing
     * reduced in the inner reduce along it, which is fine but no better. */
    for (int64_t f = want < is->dims[d] ? want : is->dims[d] - 1; f > *factor; f--)
      if (is->dims[d] % f == 0) {
        *factor = f;
        *split_dim = d;
        break;
      }
  }
  return *factor >= 2 && ins / outs / *factor >= MIN_REDUCED / TARGET_UNITS;
}

static kiln_status split(hlo_computation *c, hlo_instr *r, int d, int64_t f, hlo_instr **out) {
  hlo_instr *x = r->operands[0], *init = r->operands[1];
  const hlo_shape *is = &x->shape;
  int64_t dims[HLO_MAX_RANK], inner_dims[HLO_MAX_RANK];
  int rank = 0, n_inner = 0, kept_before = 0;
  for (int i = 0; i < is->rank; i++) {
    bool red = false;
    for (int k = 0; k < r->dimensions.n; k++) red = red || r->dimensions.v[k] == i;
    if (i == d) {
      dims[rank++] = f; /* kept by the inner reduce */
      inner_dims[n_inner++] = rank;
      dims[rank++] = is->dims[i] / f;
    } else {
      if (red) inner_dims[n_inner++] = rank;
      if (!red && i < d) kept_before++;
      dims[rank++] = is->dims[i];
    }
  }
  hlo_instr *reshaped, *partial;
  TRY(hlo_build_reshape(c, x, rank, dims, &reshaped));
  TRY(hlo_build_reduce(c, 1, &reshaped, &init, n_inner, inner_dims, r->called[0], &partial));
  int64_t outer_dim = kept_before;
  return hlo_build_reduce(c, 1, &partial, &init, 1, &outer_dim, r->called[0], out);
}

/* Shapes the builder refuses leave the reduce as it is. */
static kiln_status split_instr(hlo_computation *c, hlo_instr *r, hlo_instr **out) {
  int d = 0;
  int64_t f = 1;
  *out = NULL;
  return plan_split(r, &d, &f) ? split(c, r, d, f, out) : NULL;
}

kiln_status cpu_pass_reduction_splitter(hlo_module *m, bool *changed) {
  return hlo_pass_rewrite_each(m, split_instr, changed);
}
