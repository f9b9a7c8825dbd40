/* Constant folding (see constant_folding.h): each candidate is copied into a scratch
 * computation whose parameters stand for its constant operands, and the evaluator runs
 * that computation on the constants' literals. The result is, by construction, exactly
 * what the evaluator would have computed in place, so folding never changes a result
 * bit. */
#include <stdlib.h>

#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/builder.h"
#include "hlo/literal.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

/* Bounds the evaluator work spent on one fold (e.g. a dot of two big constants). */
#define MAX_OPERAND_ELEMENTS (4 * 1024 * 1024)

/* Relayouts of one constant (a transposed weight matrix, a reshaped filter, a weight
 * converted to another type): one linear pass of the evaluator, and a folded constant
 * little bigger than what it replaces (the original goes once unused). Backends then
 * see the weight as a constant and can pre-pack it, instead of transposing megabytes on
 * every run, so these fold up to a far larger size than computations do. */
#define MAX_RELAYOUT_ELEMENTS (64 * 1024 * 1024)

/* The widening of 8-bit integers to s32 is no relayout: it is how an integer product's
 * weights reach it (cpu_quantize.c), and the backend reads the 8-bit values through the
 * widening itself, so a folded s32 copy of a large weight would only quadruple its
 * memory. Small ones (zero points, short vectors) still fold by the general rule. */
static bool widens_8bit_integers(const hlo_instr *ins) {
  hlo_type from = ins->operands[0]->shape.type;
  return ins->op == HLO_OP_CONVERT && ins->shape.type == HLO_S32 && (from == HLO_S8 || from == HLO_U8);
}

static bool relayout(const hlo_instr *ins) {
  switch (ins->op) {
    case HLO_OP_TRANSPOSE: case HLO_OP_RESHAPE: case HLO_OP_COPY: case HLO_OP_BITCAST:
    case HLO_OP_REVERSE: case HLO_OP_SLICE: case HLO_OP_CONVERT:
      return ins->n_operands == 1 && ins->operands[0]->op == HLO_OP_CONSTANT && ins->operands[0]->literal &&
             shape_is_array(&ins->operands[0]->shape) && !widens_8bit_integers(ins);
    default:
      return false;
  }
}

/* A broadcast of a constant: an operand a fold may read (the broadcast is redone in the
 * scratch computation), though a broadcast is never folded on its own -- that would
 * only grow the module. So scale vectors formed as broadcast(scalar) * vector fold. */
static bool broadcast_of_constant(const hlo_instr *op) {
  return op->op == HLO_OP_BROADCAST && op->n_operands == 1 && op->operands[0]->op == HLO_OP_CONSTANT &&
         op->operands[0]->literal && shape_is_array(&op->operands[0]->shape);
}

/* An elementwise op on a constant of its own size, its other operands constants or
 * broadcasts of them (a weight times its per-channel scale: a dequantization, a folded
 * batch norm): like a relayout, one linear pass of the evaluator whose result replaces a
 * constant no smaller, so it folds up to the relayout size. */
static bool pass_over_one_constant(const hlo_instr *ins, int64_t n) {
  /* converts are relayouts, judged above (the 8-bit widening stays unfolded) */
  if (!hlo_opcode_is_elementwise(ins->op) || ins->op == HLO_OP_CONVERT) return false;
  bool full = false;
  for (int k = 0; k < ins->n_operands; k++) {
    const hlo_instr *op = ins->operands[k];
    if (broadcast_of_constant(op)) continue;
    if (op->op != HLO_OP_CONSTANT || !op->literal || !shape_is_array(&op->shape)) return false;
    full = full || op->literal->n == n;
  }
  return full;
}

static bool foldable(const hlo_instr *ins) {
  if (ins->n_operands < 1 || !shape_is_array(&ins->shape)) return false;
  if (relayout(ins)) {
    int64_t n = shape_elements(&ins->shape);
    return n >= 0 && n <= MAX_RELAYOUT_ELEMENTS && ins->operands[0]->literal->n <= MAX_RELAYOUT_ELEMENTS &&
           !hlo_pass_has_side_effect(ins) && eval_supports(ins);
  }
  switch (ins->op) {
    case HLO_OP_BROADCAST:
    case HLO_OP_WHILE: case HLO_OP_CONDITIONAL: case HLO_OP_CALL:
    case HLO_OP_FUSION: case HLO_OP_MAP:
    case HLO_OP_GET_DIMENSION_SIZE: case HLO_OP_SET_DIMENSION_SIZE:
      return false;
    default:
      break;
  }
  if (hlo_pass_has_side_effect(ins)) return false;
  int64_t n = shape_elements(&ins->shape);
  if (n >= 0 && n <= MAX_RELAYOUT_ELEMENTS && pass_over_one_constant(ins, n)) return eval_supports(ins);
  if (n < 0 || n > EVAL_CONSTANT_FOLDING_MAX_ELEMENTS) return false;
  int64_t in = 0;
  for (int k = 0; k < ins->n_operands; k++) {
    const hlo_instr *op = ins->operands[k];
    if (broadcast_of_constant(op)) {
      in += op->operands[0]->literal->n;
      continue;
    }
    if (op->op != HLO_OP_CONSTANT || !op->literal || !shape_is_array(&op->shape)) return false;
    in += op->literal->n;
    if (in > MAX_OPERAND_ELEMENTS) return false;
  }
  /* An op whose constant result is much larger than its constant inputs (pad of a small
   * constant, a gather that repeats rows…) would only make the module bigger. */
  if (n > in && n > 256) return false;
  return eval_supports(ins);
}

/* Evaluates ins on its constant operands; *out NULL when the evaluator declines. The
 * copy lives in a scratch computation of the same module (so called computations are
 * valid for the builder) whose parameters receive the constants' literals, borrowed, so
 * no constant data is copied; the scratch computation is unlinked afterwards (its few
 * IR objects stay in the module's arena, like everything a pass bypasses). */
static kiln_status evaluate(hlo_module *m, const hlo_instr *ins, hlo_literal **out) {
  *out = NULL;
  int n_comps = m->n_comps;
  hlo_computation *c = hlo_computation_new(m, "constant_folding.scratch");
  hlo_instr **ops = calloc((size_t)ins->n_operands, sizeof *ops);
  hlo_literal **args = calloc((size_t)ins->n_operands, sizeof *args);
  if (!ops || !args) abort();
  kiln_status s = NULL;
  for (int k = 0; k < ins->n_operands && !s; k++) {
    const hlo_instr *op = ins->operands[k];
    if (broadcast_of_constant(op)) {
      hlo_instr *src = NULL;
      args[k] = op->operands[0]->literal;
      s = hlo_build_parameter(c, k, &op->operands[0]->shape, NULL, &src);
      if (!s) {
        hlo_instr tmpl = hlo_instr_template_from(op, &src);
        s = hlo_build_instr(c, &tmpl, &ops[k]);
      }
      continue;
    }
    args[k] = op->literal;
    s = hlo_build_parameter(c, k, &op->shape, NULL, &ops[k]);
  }
  hlo_instr *copy = NULL;
  if (!s) {
    hlo_instr tmpl = hlo_instr_template_from(ins, ops);
    s = hlo_build_instr(c, &tmpl, &copy);
  }
  if (!s) s = hlo_build_set_root(c, copy);
  if (!s) s = eval_computation(c, args, ins->n_operands, out);
  free(ops);
  free(args);
  m->n_comps = n_comps; /* unlink the scratch computation */
  if (s) {
    kiln_status_free(s);
    *out = NULL;
  }
  return NULL;
}

kiln_status eval_pass_constant_folding(hlo_module *m, bool *changed) {
  *changed = false;
  /* A constant whose only reader was just folded away is read by nothing any more: its
   * data goes at once, and DCE removes the dead instructions before the pass returns.
   * So a weight folded through several steps (convert, scale, transpose) never holds
   * more than two copies at a time, nor keeps its intermediates alive with the module. */
  bool released = false;
  /* Only live readers count below: a pass that replaced a weight's reader (conv-layout's
   * NHWC convolution for the NCHW one) leaves the old reader until DCE, and a weight
   * it still appears to read kept both copies alive through the whole pipeline
   * (resnet50: 97 MB of transposed weights beside the originals). */
  bool removed = false;
  TRY(hlo_pass_dce(m, &removed));
  if (removed) *changed = true;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    int n = c->n_instrs;
    bool any = false;
    for (int i = 0; i < n; i++) {
      hlo_instr *ins = c->instrs[i];
      if (!foldable(ins)) continue;
      if (ins != c->root && hlo_instr_count_users(ins) == 0) continue;
      hlo_literal *value = NULL;
      TRY(evaluate(m, ins, &value));
      if (!value) continue;
      if (!shape_compatible(&value->shape, &ins->shape)) {
        literal_free(value);
        continue;
      }
      hlo_instr *k = NULL;
      kiln_status s = hlo_build_constant(c, value, &k);
      if (s) {
        kiln_status_free(s);
        continue;
      }
      if (ins->shape.has_layout) { /* keep the printed layout of what it replaces */
        k->shape.has_layout = true;
        for (int d = 0; d < ins->shape.rank; d++) k->shape.minor_to_major[d] = ins->shape.minor_to_major[d];
      }
      if (hlo_pass_replace_uses(c, ins, k) > 0) any = true;
      for (int o = 0; o < ins->n_operands && ins != c->root; o++) {
        hlo_instr *op = ins->operands[o];
        if (op->op != HLO_OP_CONSTANT || !op->literal || op == c->root || hlo_instr_count_users(op) != 1) continue;
        bool seen = false; /* multiply(w, w): one constant, one release */
        for (int j = 0; j < o; j++) seen = seen || ins->operands[j] == op;
        if (seen) continue;
        literal_drop_data(op->literal);
        released = true;
      }
    }
    if (any || c->n_instrs != n) hlo_pass_restore_order(c);
    if (any) *changed = true;
  }
  kiln_status st = NULL;
  if (released) {
    bool removed = false;
    st = hlo_pass_dce(m, &removed);
  }
  return st;
}
