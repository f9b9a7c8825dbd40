/* Batch-norm-inference expansion, as XLA's BatchNormExpander: rewrites
 * batch-norm-inference(x, scale, offset, mean, variance) into elementwise HLO so later
 * passes and backends need no batch-norm kernel. The expansion mirrors the reference
 * evaluator's kernel (src/eval/reduce.c) step for step, each step rounded to the element
 * type exactly where the kernel rounds:
 *   per feature:  scale' = scale * (1 / sqrt(variance + epsilon))
 *                 shift  = offset - mean * scale'
 *   per element:  y = x * scale'[f] + shift[f]
 * with epsilon converted to f32 (XLA keeps it as a float attribute) and then to the
 * element type. Computing scale' and shift once per feature, not per element, is what
 * makes the expansion bit-identical to the kernel rather than merely close. Instructions
 * whose epsilon/feature_index do not parse are left for the evaluator to reject. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

static const char *raw_attr(const hlo_instr *ins, const char *key) {
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, key) == 0) return ins->raw_attrs[i].value;
  return NULL;
}

/* Builds the expansion; on a builder error the half-built instructions are dead and
 * DCE removes them. */
static kiln_status expand(hlo_computation *c, hlo_instr *bn, double eps, int64_t fi, hlo_instr **out) {
  hlo_instr *x = bn->operands[0], *scale = bn->operands[1], *offset = bn->operands[2];
  hlo_instr *mean = bn->operands[3], *var = bn->operands[4];
  hlo_type t = x->shape.type;
  int64_t features = x->shape.dims[fi];
  hlo_instr *eps_s, *eps_v, *one_s, *one_v, *var_eps, *sq, *rsq, *sc, *ms, *shift, *bsc, *bshift, *xs;
  TRY(hlo_build_constant_scalar(c, t, (double)(float)eps, &eps_s));
  TRY(hlo_build_broadcast(c, eps_s, 1, &features, NULL, &eps_v));
  TRY(hlo_build_binary(c, HLO_OP_ADD, var, eps_v, &var_eps));
  TRY(hlo_build_unary(c, HLO_OP_SQRT, var_eps, &sq));
  TRY(hlo_build_constant_scalar(c, t, 1.0, &one_s));
  TRY(hlo_build_broadcast(c, one_s, 1, &features, NULL, &one_v));
  TRY(hlo_build_binary(c, HLO_OP_DIVIDE, one_v, sq, &rsq));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, scale, rsq, &sc));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, mean, sc, &ms));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, offset, ms, &shift));
  TRY(hlo_build_broadcast(c, sc, x->shape.rank, x->shape.dims, &fi, &bsc));
  TRY(hlo_build_broadcast(c, shift, x->shape.rank, x->shape.dims, &fi, &bshift));
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, x, bsc, &xs));
  TRY(hlo_build_binary(c, HLO_OP_ADD, xs, bshift, out));
  return NULL;
}

static bool expandable(const hlo_instr *bn, double *eps, int64_t *fi) {
  if (bn->n_operands != 5) return false;
  const hlo_instr *x = bn->operands[0];
  hlo_type t = x->shape.type;
  if (!shape_is_array(&x->shape) || !hlo_type_is_float(t) || !shape_compatible(&bn->shape, &x->shape)) return false;
  const char *eps_text = raw_attr(bn, "epsilon"), *fi_text = raw_attr(bn, "feature_index");
  if (!eps_text || !fi_text) return false;
  char *end;
  errno = 0;
  *eps = strtod(eps_text, &end);
  /* epsilon outside f32's range has no f32 value (the cast would be undefined) */
  if (end == eps_text || *end || errno == ERANGE || !(fabs(*eps) <= FLT_MAX)) return false;
  errno = 0;
  long long f = strtoll(fi_text, &end, 10);
  if (end == fi_text || *end || errno == ERANGE || f < 0 || f >= x->shape.rank) return false;
  *fi = f;
  for (int i = 1; i < 5; i++) {
    const hlo_shape *s = &bn->operands[i]->shape;
    if (s->type != t || s->rank != 1 || s->dims[0] != x->shape.dims[f]) return false;
  }
  return true;
}

/* Shapes the builder refuses leave the op to the evaluator's checks. */
static kiln_status expand_instr(hlo_computation *c, hlo_instr *bn, hlo_instr **out) {
  double eps;
  int64_t fi;
  *out = NULL;
  if (bn->op != HLO_OP_BATCH_NORM_INFERENCE || !expandable(bn, &eps, &fi)) return NULL;
  return expand(c, bn, eps, fi, out);
}

kiln_status hlo_pass_batchnorm_expander(hlo_module *m, bool *changed) {
  return hlo_pass_rewrite_each(m, expand_instr, changed);
}
