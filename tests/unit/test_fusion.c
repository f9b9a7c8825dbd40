/* Unit tests for the CPU backend's HLO passes: instruction fusion (kLoop, kInput,
 * kOutput groups, the kCustom softmax, no duplication of expensive producers, nothing fused across dots or
 * parameters, XLA-style names, print/parse round trip), dot canonicalization (batch dims
 * moved to the front, several contracting dims merged, matrix-vector products), and the
 * whole cpu_pipeline_new pipeline over every module of tests/hlo/corpus. The oracle
 * is the evaluator: each rewritten module must compute bit-identical results to the
 * module as written on deterministic pseudo-random inputs. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_pipeline.h"
#include "check.h"
#include "check_util.h"
#include "eval/constant_folding.h"
#include "eval/eval.h"
#include "hlo/buffer_assignment.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/passes/pipeline.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

static int count_op_module(const hlo_module *m, hlo_opcode op) {
  int n = 0;
  for (int i = 0; i < m->n_comps; i++) n += check_count_op(m->comps[i], op);
  return n;
}

static hlo_instr *find_op(const hlo_computation *c, hlo_opcode op) {
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->op == op) return c->instrs[i];
  return NULL;
}

/* ---- fusion ---- */

static void loop_fusion_of_elementwise_chain(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[4,3] parameter(0)\n"
      "  b = f32[4,3] parameter(1)\n"
      "  c = f32[4,3] parameter(2)\n"
      "  mul = f32[4,3] multiply(a, b)\n"
      "  ROOT add = f32[4,3] add(mul, c)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(m->entry->n_instrs == 4);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && f->fusion_kind && strcmp(f->fusion_kind, "kLoop") == 0);
  CHECK(strcmp(f->name, "fusion") == 0);
  CHECK(f->n_operands == 3 && f->n_called == 1);
  hlo_computation *fc = f->called[0];
  CHECK(fc->is_fusion_computation && strcmp(fc->name, "fused_computation") == 0);
  CHECK(fc->root->op == HLO_OP_ADD && check_count_op(fc, HLO_OP_MULTIPLY) == 1 && fc->n_params == 3);
  CHECK(strcmp(fc->params[0]->name, "param_0") == 0);
  /* The fused module prints the XLA way and reads back to the same program. */
  char *text = hlo_module_to_string(m, NULL);
  CHECK(strstr(text, "fusion(") && strstr(text, "kind=kLoop, calls=%fused_computation"));
  hlo_module *back = check_parse_hlo(text);
  CHECK(back->entry->root->op == HLO_OP_FUSION && back->entry->root->called[0]->is_fusion_computation);
  check_same_eval(m, back, 17);
  hlo_module_free(back);
  free(text);
  hlo_module_free(m);
}

/* A scan's step input: a short dynamic-slice of the current row joins the kernel that
 * reads it (no row buffer, no kernel of its own); a long one (64 elements) stays
 * alone, and a dynamic-slice that is itself needed roots no group: it stays alone for
 * the backend's native row copy. */
static void dynamic_slice_joins_its_reader_but_roots_no_group(void) {
  hlo_module *m = check_run_pass("HloModule t\n"
                                 "ENTRY main {\n"
                                 "  x = f32[20,3] parameter(0)\n  i = s32[] parameter(1)\n  s = f32[3] parameter(2)\n"
                                 "  z = s32[] constant(0)\n"
                                 "  row = f32[1,3] dynamic-slice(x, i, z), dynamic_slice_sizes={1,3}\n"
                                 "  r = f32[3] reshape(row)\n  a = f32[3] add(r, s)\n  ROOT t = f32[3] tanh(a)\n"
                                 "}\n",
                                 cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && f->fusion_kind && strcmp(f->fusion_kind, "kLoop") == 0);
  CHECK(check_count_op(f->called[0], HLO_OP_DYNAMIC_SLICE) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_DYNAMIC_SLICE) == 0);
  hlo_module_free(m);
  m = check_run_pass("HloModule t\n"
                     "ENTRY main {\n"
                     "  x = f32[20,64] parameter(0)\n  i = s32[] parameter(1)\n  s = f32[64] parameter(2)\n"
                     "  z = s32[] constant(0)\n"
                     "  row = f32[1,64] dynamic-slice(x, i, z), dynamic_slice_sizes={1,64}\n"
                     "  r = f32[64] reshape(row)\n  a = f32[64] add(r, s)\n  ROOT t = f32[64] tanh(a)\n"
                     "}\n",
                     cpu_pass_fusion, true);
  CHECK(check_count_op(m->entry, HLO_OP_DYNAMIC_SLICE) == 1);
  hlo_module_free(m);
  m = check_parse_hlo("HloModule t\n"
                      "ENTRY main {\n"
                      "  x = f32[4,6,40] parameter(0)\n  i = s64[] parameter(1)\n  k = s64[] constant(3)\n"
                      "  i3 = s64[] and(i, k)\n"
                      "  ROOT r = f32[2,3,20] dynamic-slice(x, i3, i3, i3), dynamic_slice_sizes={2,3,20}\n"
                      "}\n");
  bool changed = true;
  CHECK_OK(cpu_pass_fusion(m, &changed));
  CHECK(m->entry->root->op == HLO_OP_DYNAMIC_SLICE);
  hlo_module_free(m);
}

static void loop_fusion_pulls_cheap_producers(void) {
  /* broadcast of a scalar constant, a transpose and a convert all join one kernel */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,4] parameter(0)\n"
      "  b = s32[4,3] parameter(1)\n"
      "  k = f32[] constant(2.5)\n"
      "  kb = f32[4,3] broadcast(k), dimensions={}\n"
      "  t = f32[4,3] transpose(a), dimensions={1,0}\n"
      "  cb = f32[4,3] convert(b)\n"
      "  s = f32[4,3] subtract(t, cb)\n"
      "  ROOT r = f32[4,3] multiply(s, kb)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(m->entry->n_instrs == 3 && m->entry->root->op == HLO_OP_FUSION);
  hlo_computation *fc = m->entry->root->called[0];
  CHECK(check_count_op(fc, HLO_OP_CONSTANT) == 1 && check_count_op(fc, HLO_OP_BROADCAST) == 1);
  CHECK(check_count_op(fc, HLO_OP_TRANSPOSE) == 1 && check_count_op(fc, HLO_OP_CONVERT) == 1);
  CHECK(fc->n_params == 2);
  hlo_module_free(m);
}

static void input_fusion_of_reduce(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "add_f32 {\n"
      "  x = f32[] parameter(0)\n"
      "  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n"
      "}\n"
      "ENTRY main {\n"
      "  p = f32[5,7] parameter(0)\n"
      "  e = f32[5,7] exponential(p)\n"
      "  z = f32[] constant(0)\n"
      "  ROOT r = f32[5] reduce(e, z), dimensions={1}, to_apply=add_f32\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kInput") == 0);
  hlo_computation *fc = f->called[0];
  CHECK(fc->root->op == HLO_OP_REDUCE && check_count_op(fc, HLO_OP_EXP) == 1 && fc->n_params == 1);
  CHECK(check_count_op(m->entry, HLO_OP_EXP) == 0);
  hlo_module_free(m);
}

static void output_fusion_dot_bias_relu(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[8,16] parameter(0)\n"
      "  w = f32[16,4] parameter(1)\n"
      "  bias = f32[4] parameter(2)\n"
      "  d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  bb = f32[8,4] broadcast(bias), dimensions={1}\n"
      "  a = f32[8,4] add(d, bb)\n"
      "  z = f32[] constant(0)\n"
      "  zb = f32[8,4] broadcast(z), dimensions={}\n"
      "  ROOT r = f32[8,4] maximum(a, zb)\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kOutput") == 0);
  CHECK(check_count_op(m->entry, HLO_OP_DOT) == 0 && m->entry->n_instrs == 4);
  hlo_computation *fc = f->called[0];
  CHECK(fc->root->op == HLO_OP_MAXIMUM && check_count_op(fc, HLO_OP_DOT) == 1 && check_count_op(fc, HLO_OP_ADD) == 1);
  CHECK(check_count_op(fc, HLO_OP_BROADCAST) == 2 && fc->n_params == 3);
  /* the chain is root <- add <- dot; the dot reads fusion parameters directly */
  hlo_instr *dot = find_op(fc, HLO_OP_DOT);
  CHECK(dot && dot->operands[0]->op == HLO_OP_PARAMETER && dot->operands[1]->op == HLO_OP_PARAMETER);
  hlo_module_free(m);
}

/* A transposed convolution keeps its bias add out of any kOutput fusion (oneDNN's
 * deconvolution takes no binary post-ops); the add becomes a loop fusion. */
static void no_output_fusion_for_transposed_convolution(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[1,4,4,3] parameter(0)\n"
      "  w = f32[2,2,1,3] parameter(1)\n"
      "  bias = f32[1] parameter(2)\n"
      "  c = f32[1,8,8,1] convolution(x, w), window={size=2x2 pad=1_1x1_1 lhs_dilate=2x2}, "
      "dim_labels=b01f_01oi->b01f\n"
      "  bb = f32[1,8,8,1] broadcast(bias), dimensions={3}\n"
      "  ROOT a = f32[1,8,8,1] add(c, bb)\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kLoop") == 0);
  CHECK(check_count_op(m->entry, HLO_OP_CONVOLUTION) == 1);
  hlo_module_free(m);
}

static void output_fusion_residual_and_scale(void) {
  /* conv + residual add + scale by broadcast parameter + clamp */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[1,5,5,2] parameter(0)\n"
      "  k = f32[3,3,2,2] parameter(1)\n"
      "  res = f32[1,5,5,2] parameter(2)\n"
      "  s = f32[2] parameter(3)\n"
      "  cv = f32[1,5,5,2] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
      "  a = f32[1,5,5,2] add(res, cv)\n"
      "  sb = f32[1,5,5,2] broadcast(s), dimensions={3}\n"
      "  mu = f32[1,5,5,2] multiply(a, sb)\n"
      "  lo = f32[] constant(-0.5)\n"
      "  hi = f32[] constant(0.5)\n"
      "  ROOT r = f32[1,5,5,2] clamp(lo, mu, hi)\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kOutput") == 0);
  hlo_computation *fc = f->called[0];
  CHECK(fc->root->op == HLO_OP_CLAMP && check_count_op(fc, HLO_OP_CONVOLUTION) == 1);
  hlo_module_free(m);
}

static void post_op_reading_two_dots(void) {
  /* add(dot1 + bias, dot2): the add joins dot1's chain; dot2 is its parameter */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4,6] parameter(0)\n"
      "  w = f32[6,5] parameter(1)\n"
      "  bias = f32[5] parameter(2)\n"
      "  d1 = f32[4,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  bb = f32[4,5] broadcast(bias), dimensions={1}\n"
      "  a1 = f32[4,5] add(d1, bb)\n"
      "  d2 = f32[4,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT a2 = f32[4,5] add(a1, d2)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(check_count_op(m->entry, HLO_OP_FUSION) == 1 && check_count_op(m->entry, HLO_OP_DOT) == 1);
  hlo_computation *fc = m->entry->root->called[0];
  CHECK(check_count_op(fc, HLO_OP_DOT) == 1 && check_count_op(fc, HLO_OP_ADD) == 2 && fc->n_params == 4);
  hlo_module_free(m);
}

static void expensive_producer_not_duplicated(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[6] parameter(0)\n"
      "  y = f32[6] parameter(1)\n"
      "  e = f32[6] exponential(x)\n"
      "  n = f32[6] negate(y)\n"
      "  a = f32[6] add(e, n)\n"
      "  b = f32[6] multiply(e, n)\n"
      "  ROOT r = (f32[6], f32[6]) tuple(a, b)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(count_op_module(m, HLO_OP_EXP) == 1);
  /* the cheap negate is copied into both consumers' fusions */
  CHECK(count_op_module(m, HLO_OP_NEGATE) == 2 && check_count_op(m->entry, HLO_OP_NEGATE) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_FUSION) == 2);
  CHECK(m->entry->root->op == HLO_OP_TUPLE);
  hlo_module_free(m);
}

/* An elementwise chain of n instructions (add, multiply, tanh, subtract, exponential in
 * turn, two parameters read all along), as JAX writes one: the shape of issue #15's
 * compile-time series. Caller frees. */
static char *elementwise_chain(int n) {
  static const char *const ops[5] = {"add", "multiply", "tanh", "subtract", "exponential"};
  size_t cap = 128 + (size_t)n * 80, len = 0;
  char *t = malloc(cap);
  if (!t) abort();
  len += (size_t)snprintf(t + len, cap - len,
                          "HloModule chain\nENTRY main {\n  a = f32[16] parameter(0)\n  b = f32[16] parameter(1)\n");
  for (int i = 0; i < n; i++) {
    const char *op = ops[i % 5], *prev = i ? "v" : "a";
    char prev_name[24];
    snprintf(prev_name, sizeof prev_name, "%s%d", prev, i - 1);
    const char *arg = i ? prev_name : "a";
    if (i % 5 == 2 || i % 5 == 4)
      len += (size_t)snprintf(t + len, cap - len, "  %sv%d = f32[16] %s(%s)\n", i == n - 1 ? "ROOT " : "", i, op, arg);
    else
      len += (size_t)snprintf(t + len, cap - len, "  %sv%d = f32[16] %s(%s, %s)\n", i == n - 1 ? "ROOT " : "", i, op,
                              arg, i % 5 == 3 ? "a" : "b");
  }
  snprintf(t + len, cap - len, "}\n");
  return t;
}

static void long_chain_split_into_bounded_kernels(void) {
  /* Fused whole, the chain would be one LLVM function of ~30,000 instructions, whose
   * optimisation takes time super-linear in its size; the groups stop at
   * HLO_FUSION_MAX_COST, each instruction still computed exactly once, and the results
   * stay bit-identical (check_run_pass evaluates both). */
  enum { N = 1000 };
  char *text = elementwise_chain(N);
  hlo_module *m = check_run_pass(text, cpu_pass_fusion, true);
  int fusions = 0, chain_ops = 0, total_cost = 0;
  for (int i = 0; i < m->entry->n_instrs; i++) {
    const hlo_instr *ins = m->entry->instrs[i];
    if (ins->op != HLO_OP_FUSION) {
      chain_ops += ins->op != HLO_OP_PARAMETER;
      total_cost += hlo_pass_fusion_code_cost(ins);
      continue;
    }
    fusions++;
    CHECK(strcmp(ins->fusion_kind, "kLoop") == 0);
    const hlo_computation *fc = ins->called[0];
    int cost = 0;
    for (int k = 0; k < fc->n_instrs; k++) {
      cost += hlo_pass_fusion_code_cost(fc->instrs[k]);
      chain_ops += fc->instrs[k]->op != HLO_OP_PARAMETER;
    }
    /* the last producer to join may be expensive (4) with the group one short of the cap */
    CHECK(cost > 0 && cost < HLO_FUSION_MAX_COST + 4);
    total_cost += cost;
  }
  CHECK(chain_ops == N); /* nothing recomputed, nothing lost */
  CHECK(fusions >= total_cost / (HLO_FUSION_MAX_COST + 4) && fusions > 1);
  /* and not split needlessly: every kernel but the last is close to the cap */
  CHECK(fusions <= total_cost / (HLO_FUSION_MAX_COST - 4) + 1);
  hlo_module_free(m);
  free(text);
}

static uint64_t fusion_work_on_chain(int n) {
  char *text = elementwise_chain(n);
  hlo_module *m = check_parse_hlo(text);
  bool changed = false;
  CHECK_OK(cpu_pass_fusion(m, &changed));
  CHECK(changed);
  uint64_t work = hlo_pass_fusion_last_work();
  hlo_module_free(m);
  free(text);
  return work;
}

static void fusion_work_linear_in_chain_length(void) {
  /* Every group of the chain reads the two parameters at the top of the computation; a
   * pass that scanned from each group's root down to its lowest operand, or sized
   * per-group state by the root's position, would do work quadratic in the length. */
  uint64_t w1 = fusion_work_on_chain(1000), w4 = fusion_work_on_chain(4000);
  CHECK(w1 > 1000);
  CHECK(w4 <= w1 * 4 + w1 / 2);
}

/* A cheap producer whose copy would read more than it replaces is not copied into a
 * second consumer: in a residual stream h1 = h0 + a, h2 = h1 + b, ... every add has a
 * user outside the next kernel (here the dots), and copying them would recompute the
 * whole stream in every later kernel. Each add is computed once. */
static void residual_stream_not_recomputed(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  h0 = f32[4,8] parameter(0)\n"
      "  w = f32[8,8] parameter(1)\n"
      "  a = f32[4,8] dot(h0, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  h1 = f32[4,8] add(h0, a)\n"
      "  b = f32[4,8] dot(h1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  h2 = f32[4,8] add(h1, b)\n"
      "  c = f32[4,8] dot(h2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  h3 = f32[4,8] add(h2, c)\n"
      "  ROOT n = f32[4,8] negate(h3)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(count_op_module(m, HLO_OP_ADD) == 3);
  hlo_module_free(m);
}

/* conv -> bias add -> swish (x * logistic(x)): the add has two users, logistic and the
 * multiply, and all three join the convolution's kOutput group (a oneDNN swish
 * post-op); a logistic alone joins too, and so do a hardswish and a GELU after a dot. */
static void output_fusion_swish_and_logistic(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[1,6,6,4] parameter(0)\n"
      "  w = f32[1,1,4,8] parameter(1)\n"
      "  bias = f32[8] parameter(2)\n"
      "  c = f32[1,6,6,8] convolution(x, w), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
      "  bb = f32[1,6,6,8] broadcast(bias), dimensions={3}\n"
      "  a = f32[1,6,6,8] add(c, bb)\n"
      "  l = f32[1,6,6,8] logistic(a)\n"
      "  s = f32[1,6,6,8] multiply(a, l)\n"
      "  w2 = f32[1,1,8,8] parameter(3)\n"
      "  d = f32[1,6,6,8] convolution(s, w2), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
      "  ROOT g = f32[1,6,6,8] logistic(d)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(check_count_op(m->entry, HLO_OP_FUSION) == 2 && check_count_op(m->entry, HLO_OP_CONVOLUTION) == 0);
  CHECK(check_count_op(m->entry, HLO_OP_LOGISTIC) == 0 && check_count_op(m->entry, HLO_OP_MULTIPLY) == 0);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kOutput") == 0 && f->called[0]->root->op == HLO_OP_LOGISTIC);
  hlo_instr *f1 = f->operands[0];
  CHECK(f1->op == HLO_OP_FUSION && strcmp(f1->fusion_kind, "kOutput") == 0);
  CHECK(f1->called[0]->root->op == HLO_OP_MULTIPLY && check_count_op(f1->called[0], HLO_OP_LOGISTIC) == 1);
  hlo_module_free(m);
  /* hardswish: x * clamp(x * (1/6) + 0.5, 0, 1), the clamp as maximum(minimum) */
  m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  w = f32[8,8] parameter(1)\n"
      "  d = f32[4,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  k6 = f32[] constant(0.166666672)\n  k6b = f32[4,8] broadcast(k6), dimensions={}\n"
      "  h = f32[] constant(0.5)\n  hb = f32[4,8] broadcast(h), dimensions={}\n"
      "  one = f32[] constant(1)\n  oneb = f32[4,8] broadcast(one), dimensions={}\n"
      "  z = f32[] constant(0)\n  zb = f32[4,8] broadcast(z), dimensions={}\n"
      "  s = f32[4,8] multiply(k6b, d)\n  t = f32[4,8] add(s, hb)\n"
      "  mn = f32[4,8] minimum(oneb, t)\n  mx = f32[4,8] maximum(mn, zb)\n"
      "  ROOT r = f32[4,8] multiply(mx, d)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(m->entry->n_instrs == 3 && m->entry->root->op == HLO_OP_FUSION);
  CHECK(strcmp(m->entry->root->fusion_kind, "kOutput") == 0 && check_count_op(m->entry->root->called[0], HLO_OP_DOT) == 1);
  hlo_module_free(m);
  /* GELU as PyTorch exports it: (x * (erf(x / sqrt(2)) + 1)) * 0.5 after the bias add */
  m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  w = f32[8,8] parameter(1)\n"
      "  bias = f32[8] parameter(2)\n"
      "  d = f32[4,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  bb = f32[4,8] broadcast(bias), dimensions={1}\n"
      "  a = f32[4,8] add(d, bb)\n"
      "  r2 = f32[] constant(1.41421354)\n  r2b = f32[4,8] broadcast(r2), dimensions={}\n"
      "  one = f32[] constant(1)\n  oneb = f32[4,8] broadcast(one), dimensions={}\n"
      "  h = f32[] constant(0.5)\n  hb = f32[4,8] broadcast(h), dimensions={}\n"
      "  q = f32[4,8] divide(a, r2b)\n  e = f32[4,8] erf(q)\n  e1 = f32[4,8] add(e, oneb)\n"
      "  m1 = f32[4,8] multiply(a, e1)\n"
      "  ROOT g = f32[4,8] multiply(m1, hb)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(m->entry->n_instrs == 4 && m->entry->root->op == HLO_OP_FUSION);
  CHECK(strcmp(m->entry->root->fusion_kind, "kOutput") == 0 && check_count_op(m->entry->root->called[0], HLO_OP_ERF) == 1);
  hlo_module_free(m);
}

/* A softmax over the last dim as the op library lowers it (attention's [heads, q, k]
 * scores): one kCustom fusion reading only the scores, the init constants copied in.
 * With the exponentials also read outside the pattern it is left to kLoop / kInput
 * fusion; so is a softmax over another dim. */
static const char *softmax_text =
    "HloModule t\n"
    "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT mx = f32[] maximum(a, b)\n}\n"
    "add_f32 {\n  c = f32[] parameter(0)\n  d = f32[] parameter(1)\n  ROOT sm = f32[] add(c, d)\n}\n"
    "ENTRY main {\n  x = f32[3,5,%d] parameter(0)\n"
    "  ninf = f32[] constant(-inf)\n  zero = f32[] constant(0)\n"
    "  m = f32[3,5] reduce(x, ninf), dimensions={%d}, to_apply=max_f32\n"
    "  mb = f32[3,5,%d] broadcast(m), dimensions={0,1}\n  sub = f32[3,5,%d] subtract(x, mb)\n"
    "  e = f32[3,5,%d] exponential(sub)\n"
    "  s = f32[3,5] reduce(e, zero), dimensions={2}, to_apply=add_f32\n"
    "  sb = f32[3,5,%d] broadcast(s), dimensions={0,1}\n  y = f32[3,5,%d] divide(e, sb)\n"
    "  ROOT r = %s\n}\n";

static int count_fusion_kind(const hlo_computation *c, const char *kind) {
  int n = 0;
  for (int i = 0; i < c->n_instrs; i++)
    n += c->instrs[i]->op == HLO_OP_FUSION && strcmp(c->instrs[i]->fusion_kind, kind) == 0;
  return n;
}

static void softmax_custom_fusion(void) {
  char text[2048];
  snprintf(text, sizeof text, softmax_text, 7, 2, 7, 7, 7, 7, 7, "f32[3,5,7] negate(y)");
  hlo_module *m = check_run_pass(text, cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root->operands[0];
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kCustom") == 0 && f->n_operands == 1);
  CHECK(count_fusion_kind(m->entry, "kCustom") == 1);
  CHECK(f->operands[0]->op == HLO_OP_PARAMETER && f->called[0]->n_params == 1);
  CHECK(check_count_op(f->called[0], HLO_OP_REDUCE) == 2 && check_count_op(f->called[0], HLO_OP_EXP) == 1);
  hlo_module_free(m);
  /* the exponentials also feed the root tuple */
  snprintf(text, sizeof text, softmax_text, 7, 2, 7, 7, 7, 7, 7, "(f32[3,5,7], f32[3,5,7]) tuple(y, e)");
  m = check_run_pass(text, cpu_pass_fusion, true);
  CHECK(count_fusion_kind(m->entry, "kCustom") == 0);
  hlo_module_free(m);
  /* the max taken over dim 1: not a softmax over one dim */
  snprintf(text, sizeof text, softmax_text, 5, 1, 5, 5, 5, 5, 5, "f32[3,5,5] negate(y)");
  m = check_run_pass(text, cpu_pass_fusion, true);
  CHECK(count_fusion_kind(m->entry, "kCustom") == 0);
  hlo_module_free(m);
}

/* A layer norm's centred value c = x - mean is read by the variance reduction and by the
 * normalisation. A copy reads x and the small per-row mean (which stays in cache), no
 * more than reading c back, so c is copied into both kernels instead of being written
 * out between them. */
static void centred_value_copied_into_both_consumers(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY main {\n"
      "  x = f32[4,8,64] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[4,8] reduce(x, z), dimensions={2}, to_apply=add_f32\n"
      "  mb = f32[4,8,64] broadcast(s), dimensions={0,1}\n"
      "  c = f32[4,8,64] subtract(x, mb)\n"
      "  sq = f32[4,8,64] multiply(c, c)\n"
      "  v = f32[4,8] reduce(sq, z), dimensions={2}, to_apply=add_f32\n"
      "  vb = f32[4,8,64] broadcast(v), dimensions={0,1}\n"
      "  ROOT y = f32[4,8,64] multiply(c, vb)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(count_op_module(m, HLO_OP_SUBTRACT) == 2 && check_count_op(m->entry, HLO_OP_SUBTRACT) == 0);
  CHECK(count_fusion_kind(m->entry, "kInput") == 1 && count_fusion_kind(m->entry, "kLoop") == 1);
  hlo_module_free(m);
}

static void expensive_producer_not_under_broadcast(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[6] parameter(0)\n"
      "  y = f32[4,6] parameter(1)\n"
      "  e = f32[6] exponential(x)\n"
      "  b = f32[4,6] broadcast(e), dimensions={1}\n"
      "  ROOT r = f32[4,6] add(b, y)\n"
      "}\n",
      cpu_pass_fusion, true);
  CHECK(check_count_op(m->entry, HLO_OP_EXP) == 1);
  hlo_computation *fc = m->entry->root->called[0];
  CHECK(check_count_op(fc, HLO_OP_BROADCAST) == 1 && check_count_op(fc, HLO_OP_EXP) == 0);
  hlo_module_free(m);
}

/* A conversion the cpu backend rounds in software (f32 -> bf16) is not redone for every
 * element of a broadcast: through the reshape between them it stays a kernel of its
 * own, unless bf16 arithmetic runs with excess precision, where the fused conversion
 * costs nothing; an f32 -> f64 conversion (exact, one instruction) fuses either way. */
static void software_rounding_not_under_broadcast(void) {
  static const char *text =
      "HloModule t\n"
      "ENTRY main {\n"
      "  g = f32[6] parameter(0)\n"
      "  y = bf16[1,4,6] parameter(1)\n"
      "  w = f32[6] parameter(2)\n"
      "  z = f64[4,6] parameter(3)\n"
      "  c = bf16[6] convert(g)\n"
      "  r = bf16[1,6] reshape(c)\n"
      "  b = bf16[1,4,6] broadcast(r), dimensions={0,2}\n"
      "  m = bf16[1,4,6] multiply(y, b)\n"
      "  cw = f64[6] convert(w)\n"
      "  bw = f64[4,6] broadcast(cw), dimensions={1}\n"
      "  s = f64[4,6] add(z, bw)\n"
      "  ROOT t = (bf16[1,4,6], f64[4,6]) tuple(m, s)\n"
      "}\n";
  for (int excess = 0; excess < 2; excess++) {
    hlo_module *m = check_run_pass(text, excess ? cpu_pass_fusion_excess_precision : cpu_pass_fusion, true);
    int outside = 0;
    for (int i = 0; i < m->entry->n_instrs; i++) {
      const hlo_instr *x = m->entry->instrs[i];
      if (x->op == HLO_OP_CONVERT) outside++;
      if (x->op == HLO_OP_CONVERT) CHECK(x->shape.type == HLO_BF16);
    }
    CHECK(outside == (excess ? 0 : 1));
    hlo_module_free(m);
  }
}

static void nothing_fused_across_dot_or_parameter(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,4] parameter(0)\n"
      "  b = f32[4,2] parameter(1)\n"
      "  na = f32[3,4] negate(a)\n"
      "  d = f32[3,2] dot(na, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT e = f32[3,2] exponential(d)\n"
      "}\n",
      cpu_pass_fusion, false);
  CHECK(check_count_op(m->entry, HLO_OP_DOT) == 1 && check_count_op(m->entry, HLO_OP_NEGATE) == 1);
  CHECK(check_count_op(m->entry, HLO_OP_FUSION) == 0 && check_count_op(m->entry, HLO_OP_PARAMETER) == 2);
  hlo_module_free(m);
}

static void side_effects_and_tuples_stay(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  p0 = f32[4] parameter(0)\n"
      "  p1 = f32[4] parameter(1)\n"
      "  p = (f32[4], f32[4]) tuple(p0, p1)\n"
      "  g0 = f32[4] get-tuple-element(p), index=0\n"
      "  g1 = f32[4] get-tuple-element(p), index=1\n"
      "  ROOT t = (f32[4], f32[4]) tuple(g1, g0)\n"
      "}\n",
      cpu_pass_fusion, false);
  CHECK(check_count_op(m->entry, HLO_OP_FUSION) == 0);
  hlo_module_free(m);
}

static void names_avoid_existing_ones(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "fused_computation {\n"
      "  q = f32[2] parameter(0)\n"
      "  ROOT n = f32[2] negate(q)\n"
      "}\n"
      "ENTRY main {\n"
      "  param_0 = f32[2] parameter(0)\n"
      "  fusion = f32[2] fusion(param_0), kind=kLoop, calls=fused_computation\n"
      "  a = f32[2] abs(fusion)\n"
      "  ROOT s = f32[2] sqrt(a)\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_instr *f = m->entry->root;
  CHECK(f->op == HLO_OP_FUSION && strcmp(f->name, "fusion.1") == 0);
  CHECK(strcmp(f->called[0]->name, "fused_computation.1") == 0);
  CHECK(strcmp(f->called[0]->params[0]->name, "param_0.1") == 0);
  hlo_module_free(m);
}

static void fusion_inside_while_body(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "cond {\n"
      "  cs = (s32[], f32[3]) parameter(0)\n"
      "  ci = s32[] get-tuple-element(cs), index=0\n"
      "  n = s32[] constant(3)\n"
      "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
      "}\n"
      "body {\n"
      "  s = (s32[], f32[3]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n"
      "  v = f32[3] get-tuple-element(s), index=1\n"
      "  one = s32[] constant(1)\n"
      "  i1 = s32[] add(i, one)\n"
      "  h = f32[] constant(0.5)\n"
      "  hb = f32[3] broadcast(h), dimensions={}\n"
      "  m = f32[3] multiply(v, hb)\n"
      "  v1 = f32[3] add(m, v)\n"
      "  ROOT t = (s32[], f32[3]) tuple(i1, v1)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[3] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  init = (s32[], f32[3]) tuple(z, x)\n"
      "  w = (s32[], f32[3]) while(init), condition=cond, body=body\n"
      "  ROOT r = f32[3] get-tuple-element(w), index=1\n"
      "}\n",
      cpu_pass_fusion, true);
  hlo_computation *body = hlo_module_find_computation(m, "body");
  CHECK(body && check_count_op(body, HLO_OP_FUSION) == 1 && check_count_op(body, HLO_OP_MULTIPLY) == 0);
  hlo_module_free(m);
}

/* ---- dot canonicalization ---- */

static bool all_dots_canonical(const hlo_module *m) {
  for (int ci = 0; ci < m->n_comps; ci++) {
    const hlo_computation *c = m->comps[ci];
    for (int i = 0; i < c->n_instrs; i++) {
      const hlo_instr *d = c->instrs[i];
      if (d->op != HLO_OP_DOT) continue;
      int nb = d->dot.lhs_batch.n;
      if (d->dot.lhs_contracting.n != 1 || d->dot.rhs_contracting.n != 1) return false;
      if (d->operands[0]->shape.rank != nb + 2 || d->operands[1]->shape.rank != nb + 2) return false;
      for (int k = 0; k < nb; k++)
        if (d->dot.lhs_batch.v[k] != k || d->dot.rhs_batch.v[k] != k) return false;
      if (d->dot.lhs_contracting.v[0] != nb + 1 || d->dot.rhs_contracting.v[0] != nb) return false;
    }
  }
  return true;
}

static void dot_canonical_untouched(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[2,3,4] parameter(0)\n"
      "  b = f32[2,4,5] parameter(1)\n"
      "  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
      "rhs_contracting_dims={1}\n"
      "}\n",
      hlo_pass_dot_canonicalize, false);
  CHECK(m->entry->n_instrs == 3);
  hlo_module_free(m);
}

static void dot_batch_and_multi_contracting(void) {
  /* batch dim last on lhs and middle on rhs, two contracting dims in swapped order */
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[5,3,7,2] parameter(0)\n"
      "  b = f32[7,2,5,4] parameter(1)\n"
      "  ROOT d = f32[2,3,4] dot(a, b), lhs_batch_dims={3}, rhs_batch_dims={1}, lhs_contracting_dims={2,0}, "
      "rhs_contracting_dims={0,2}\n"
      "}\n",
      hlo_pass_dot_canonicalize, true);
  CHECK(all_dots_canonical(m));
  CHECK(check_count_op(m->entry, HLO_OP_DOT) == 1);
  hlo_module_free(m);
}

static void dot_matrix_vector_and_vector_vector(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,6] parameter(0)\n"
      "  v = f32[6] parameter(1)\n"
      "  w = f32[6] parameter(2)\n"
      "  mv = f32[3] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  vm = f32[3] dot(v, a), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n"
      "  vv = f32[] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
      "  outer = f32[6,6] dot(v, w)\n"
      "  ROOT r = (f32[3], f32[3], f32[], f32[6,6]) tuple(mv, vm, vv, outer)\n"
      "}\n",
      hlo_pass_dot_canonicalize, true);
  CHECK(all_dots_canonical(m));
  CHECK(check_count_op(m->entry, HLO_OP_DOT) == 4);
  hlo_module_free(m);
}

static void dot_integer_and_preferred_type(void) {
  hlo_module *m = check_run_pass(
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = s8[4,3,2] parameter(0)\n"
      "  b = s8[3,2,5] parameter(1)\n"
      "  ROOT d = s32[4,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}\n"
      "}\n",
      hlo_pass_dot_canonicalize, true);
  CHECK(all_dots_canonical(m));
  hlo_instr *d = find_op(m->entry, HLO_OP_DOT);
  CHECK(d && d->shape.type == HLO_S32);
  hlo_module_free(m);
}

/* text parsed and run through the cpu backend's whole pipeline, verified. */
static hlo_module *after_cpu_pipeline(const char *text) {
  hlo_module *m = check_parse_hlo(text);
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
  hlo_pipeline_free(p);
  CHECK_OK(hlo_verify_module(m));
  return m;
}

/* algsimp and fusion after canonicalization must keep dots canonical */
static void cpu_pipeline_keeps_dots_canonical(void) {
  const char *text =
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,6] parameter(0)\n"
      "  v = f32[6] parameter(1)\n"
      "  b = f32[2,6,3,5] parameter(2)\n"
      "  c = f32[5,2,3] parameter(3)\n"
      "  mv = f32[3] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  bd = f32[2,6,5,5] dot(b, c), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, "
      "rhs_contracting_dims={2}\n"
      "  e = f32[3] exponential(mv)\n"
      "  ROOT r = (f32[3], f32[2,6,5,5]) tuple(e, bd)\n"
      "}\n";
  hlo_module *orig = check_parse_hlo(text), *m = after_cpu_pipeline(text);
  CHECK(all_dots_canonical(m));
  CHECK(count_op_module(m, HLO_OP_DOT) == 2);
  check_same_eval(orig, m, 17);
  hlo_module_free(orig);
  hlo_module_free(m);
}

/* The reduction splitter's reduce reads its input through a new reshape; the reduce it
 * replaced must be gone before fusion, or its read keeps the producers (a bf16 round
 * trip here) out of the split reduce's kernel, as a kernel of their own writing the
 * whole input once more. */
static void cpu_pipeline_fuses_split_reduction_producers(void) {
  const char *text =
      "HloModule t\n"
      "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n"
      "ENTRY main {\n"
      "  x = f32[2048,64] parameter(0)\n"
      "  h = bf16[2048,64] convert(x)\n"
      "  w = f32[2048,64] convert(h)\n"
      "  i = f32[] constant(-inf)\n"
      "  ROOT r = f32[64] reduce(w, i), dimensions={0}, to_apply=max_f32\n"
      "}\n";
  hlo_module *orig = check_parse_hlo(text), *m = after_cpu_pipeline(text);
  CHECK(count_op_module(m, HLO_OP_REDUCE) == 2); /* split */
  CHECK(check_count_op(m->entry, HLO_OP_CONVERT) == 0 && count_op_module(m, HLO_OP_CONVERT) == 2);
  check_same_eval(orig, m, 17);
  hlo_module_free(orig);
  hlo_module_free(m);
}

static void dot_malformed_dimension_numbers_error(void) {
  const char *text =
      "HloModule t\n"
      "ENTRY main {\n"
      "  a = f32[3,6] parameter(0)\n"
      "  b = f32[6,2] parameter(1)\n"
      "  ROOT d = f32[2,3] dot(b, a), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n"
      "}\n";
  hlo_module *m = check_parse_hlo(text);
  m->entry->root->dot.lhs_contracting.v[0] = 7; /* out of range: must be an error, not a crash */
  bool changed = false;
  CHECK_ERR(hlo_pass_dot_canonicalize(m, &changed), "malformed dimension numbers");
  hlo_module_free(m);
}

/* ---- the cpu pipeline over the corpus ---- */

static void cpu_pipeline_over_corpus(void) {
  const char *dir = "tests/hlo/corpus";
  DIR *dp = opendir(dir);
  CHECK(dp != NULL);
  if (!dp) return;
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 256) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(dp);
  int compared = 0, fusions = 0;
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    hlo_module *orig = NULL, *m = NULL;
    CHECK_OK(hlo_parse_file(path, &orig));
    CHECK_OK(hlo_parse_file(path, &m));
    if (!orig || !m) {
      hlo_module_free(orig);
      hlo_module_free(m);
      continue;
    }
    kiln_status st = hlo_pipeline_run(p, m, NULL, NULL);
    if (st) fprintf(stderr, "  %s: %s\n", names[i], kiln_status_message(st));
    CHECK_OK(st);
    CHECK_OK(hlo_verify_module(m));
    CHECK(all_dots_canonical(m));
    fusions += check_count_op(m->entry, HLO_OP_FUSION);
    char *printed = hlo_module_to_string(m, NULL); /* fused modules read back as they print */
    hlo_module *reread = NULL;
    CHECK_OK(hlo_parse(printed, strlen(printed), names[i], &reread));
    if (reread) CHECK_OK(hlo_verify_module(reread));
    hlo_module_free(reread);
    free(printed);
    hlo_buffer_assignment *ba = NULL;
    CHECK_OK(hlo_assign_buffers(m->entry, 64, &ba));
    CHECK(ba && hlo_buffer_assignment_check(m->entry, ba));
    hlo_buffer_assignment_free(ba);
    kiln_status ea = NULL, eb = NULL;
    hlo_literal *ra = check_eval_random(orig, 17, &ea);
    if (ea) { /* the evaluator cannot run it as written (custom-call, ...) */
      fprintf(stderr, "  %s: not evaluated: %s\n", names[i], kiln_status_message(ea));
      kiln_status_free(ea);
    } else {
      hlo_literal *rb = check_eval_random(m, 17, &eb);
      CHECK_OK(eb);
      bool same = rb && literal_equal(ra, rb);
      if (!same) fprintf(stderr, "  %s: fused results differ\n", names[i]);
      CHECK(same);
      compared++;
      literal_free(rb);
    }
    literal_free(ra);
    hlo_module_free(orig);
    hlo_module_free(m);
    free(names[i]);
  }
  hlo_pipeline_free(p);
  fprintf(stderr, "  corpus: %d modules, %d compared bitwise, %d entry fusions\n", n, compared, fusions);
  CHECK(n >= 20 && compared >= n / 2 && fusions > 0);
}

/* ---- random programs through the cpu pipeline ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int rnd(int n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (int)(rng_state % (uint64_t)n);
}

/* A random program over f32[4,8] values mixing everything fusion decides about:
 * cheap and expensive elementwise ops, broadcasts, reductions, transposes, slices and
 * concatenations, converts, select, dots with bias and relu. Returned as text so the
 * test can parse two independent copies. */
static char *random_program(void) {
  hlo_module *m = hlo_module_new("rand");
  hlo_computation *add_f32 = NULL;
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &add_f32));
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape s48 = shape_make(HLO_F32, 2, (int64_t[]){4, 8}), s88 = shape_make(HLO_F32, 2, (int64_t[]){8, 8});
  hlo_shape s8 = shape_make(HLO_F32, 1, (int64_t[]){8});
  hlo_instr *v[200], *w, *bias, *zero;
  int n = 0;
  CHECK_OK(hlo_build_parameter(c, 0, &s48, "x", &v[n++]));
  CHECK_OK(hlo_build_parameter(c, 1, &s48, "y", &v[n++]));
  CHECK_OK(hlo_build_parameter(c, 2, &s88, "w", &w));
  CHECK_OK(hlo_build_parameter(c, 3, &s8, "bias", &bias));
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, 0.0, &zero));
  int ops = 4 + rnd(25);
  for (int k = 0; k < ops; k++) {
    hlo_instr *a = v[n - 1 - rnd(n < 4 ? n : 4)], *b = v[rnd(n)], *r = NULL, *t = NULL, *u = NULL;
    static const hlo_opcode unary[] = {HLO_OP_NEGATE, HLO_OP_EXP, HLO_OP_TANH, HLO_OP_ABS};
    static const hlo_opcode binary[] = {HLO_OP_ADD, HLO_OP_MULTIPLY, HLO_OP_MAXIMUM, HLO_OP_SUBTRACT, HLO_OP_DIVIDE};
    switch (rnd(9)) {
      case 0: CHECK_OK(hlo_build_unary(c, unary[rnd(4)], a, &r)); break;
      case 1: CHECK_OK(hlo_build_binary(c, binary[rnd(5)], a, b, &r)); break;
      case 2: /* row sums broadcast back */
        CHECK_OK(hlo_build_reduce(c, 1, &a, &zero, 1, (int64_t[]){1}, add_f32, &t));
        CHECK_OK(hlo_build_broadcast(c, t, 2, (int64_t[]){4, 8}, (int64_t[]){0}, &r));
        break;
      case 3:
        CHECK_OK(hlo_build_transpose(c, a, (int64_t[]){1, 0}, &t));
        CHECK_OK(hlo_build_unary(c, HLO_OP_NEGATE, t, &u));
        CHECK_OK(hlo_build_transpose(c, u, (int64_t[]){1, 0}, &r));
        break;
      case 4: { /* dot + bias (+ relu) */
        hlo_dot_dnums dn = {.lhs_contracting = {1, (int64_t[]){1}}, .rhs_contracting = {1, (int64_t[]){0}}};
        hlo_instr *bb, *zb;
        CHECK_OK(hlo_build_dot(c, a, w, &dn, HLO_BUILD_DEFAULT_TYPE, &t));
        CHECK_OK(hlo_build_broadcast(c, bias, 2, (int64_t[]){4, 8}, (int64_t[]){1}, &bb));
        CHECK_OK(hlo_build_binary(c, HLO_OP_ADD, t, bb, &r));
        if (rnd(2)) {
          CHECK_OK(hlo_build_broadcast(c, zero, 2, (int64_t[]){4, 8}, NULL, &zb));
          CHECK_OK(hlo_build_binary(c, HLO_OP_MAXIMUM, r, zb, &r));
        }
        break;
      }
      case 5: { /* swap halves */
        hlo_instr *halves[2];
        CHECK_OK(hlo_build_slice(c, a, (int64_t[]){0, 4}, (int64_t[]){4, 8}, NULL, &halves[0]));
        CHECK_OK(hlo_build_slice(c, a, (int64_t[]){0, 0}, (int64_t[]){4, 4}, NULL, &halves[1]));
        CHECK_OK(hlo_build_concatenate(c, 2, halves, 1, &r));
        break;
      }
      case 6:
        CHECK_OK(hlo_build_convert(c, a, HLO_F64, &t));
        CHECK_OK(hlo_build_unary(c, HLO_OP_SQRT, t, &u));
        CHECK_OK(hlo_build_convert(c, u, HLO_F32, &r));
        break;
      case 7:
        CHECK_OK(hlo_build_compare(c, HLO_DIR_LT, a, b, &t));
        CHECK_OK(hlo_build_select(c, t, b, a, &r));
        break;
      default: { /* scaled by a broadcast constant */
        hlo_instr *k2, *kb;
        CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, 0.75, &k2));
        CHECK_OK(hlo_build_broadcast(c, k2, 2, (int64_t[]){4, 8}, NULL, &kb));
        CHECK_OK(hlo_build_binary(c, HLO_OP_MULTIPLY, kb, a, &r));
        break;
      }
    }
    if (r) v[n++] = r;
  }
  hlo_instr *outs[3] = {v[n - 1], v[rnd(n)], v[n / 2]}, *root;
  CHECK_OK(hlo_build_tuple(c, 3, outs, &root));
  CHECK_OK(hlo_build_set_root(c, root));
  hlo_build_set_entry(m, c);
  CHECK_OK(hlo_build_order_computations(m));
  CHECK_OK(hlo_verify_module(m));
  char *text = hlo_module_to_string(m, NULL);
  hlo_module_free(m);
  return text;
}

static void cpu_pipeline_on_random_programs(void) {
  hlo_pipeline *p = cpu_pipeline_new(NULL);
  int fused = 0, output_fusions = 0;
  for (int t = 0; t < 150; t++) {
    char *text = random_program();
    hlo_module *orig = check_parse_hlo(text), *m = check_parse_hlo(text);
    CHECK_OK(hlo_pipeline_run(p, m, NULL, NULL));
    CHECK_OK(hlo_verify_module(m));
    int nf = check_count_op(m->entry, HLO_OP_FUSION);
    fused += nf > 0;
    for (int i = 0; i < m->entry->n_instrs; i++) {
      const hlo_instr *f = m->entry->instrs[i];
      if (f->op == HLO_OP_FUSION && strcmp(f->fusion_kind, "kOutput") == 0) output_fusions++;
    }
    check_same_eval(orig, m, 17);
    hlo_buffer_assignment *ba = NULL;
    CHECK_OK(hlo_assign_buffers(m->entry, 64, &ba));
    CHECK(ba && hlo_buffer_assignment_check(m->entry, ba));
    hlo_buffer_assignment_free(ba);
    hlo_module_free(orig);
    hlo_module_free(m);
    free(text);
  }
  hlo_pipeline_free(p);
  fprintf(stderr, "  random: %d of 150 programs fused, %d kOutput fusions\n", fused, output_fusions);
  CHECK(fused > 100 && output_fusions > 20);
}

TEST_MAIN(TEST(loop_fusion_of_elementwise_chain), TEST(loop_fusion_pulls_cheap_producers),
          TEST(dynamic_slice_joins_its_reader_but_roots_no_group),
          TEST(input_fusion_of_reduce), TEST(output_fusion_dot_bias_relu), TEST(no_output_fusion_for_transposed_convolution),
          TEST(output_fusion_residual_and_scale),
          TEST(post_op_reading_two_dots),
          TEST(expensive_producer_not_duplicated), TEST(expensive_producer_not_under_broadcast),
          TEST(software_rounding_not_under_broadcast),
          TEST(softmax_custom_fusion),
          TEST(residual_stream_not_recomputed), TEST(centred_value_copied_into_both_consumers), TEST(long_chain_split_into_bounded_kernels),
          TEST(fusion_work_linear_in_chain_length), TEST(output_fusion_swish_and_logistic),
          TEST(nothing_fused_across_dot_or_parameter), TEST(side_effects_and_tuples_stay),
          TEST(names_avoid_existing_ones), TEST(fusion_inside_while_body), TEST(dot_canonical_untouched),
          TEST(dot_batch_and_multi_contracting), TEST(dot_matrix_vector_and_vector_vector),
          TEST(dot_integer_and_preferred_type), TEST(dot_malformed_dimension_numbers_error),
          TEST(cpu_pipeline_keeps_dots_canonical), TEST(cpu_pipeline_fuses_split_reduction_producers), TEST(cpu_pipeline_over_corpus),
          TEST(cpu_pipeline_on_random_programs))
