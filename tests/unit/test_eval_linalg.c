/* Unit tests for the evaluator's dot, convolution, gather and scatter kernels.
 *
 * Each kernel is checked two ways: small hand-computed cases whose expected values are
 * written out, and randomized comparisons against brute-force references written here
 * in the most literal form of the semantics (convolution by explicitly dilating and
 * padding the input and kernel and sliding a window; gather and scatter by following
 * XLA's per-element pseudo-code). The references share no code with the kernels, so
 * an indexing mistake has to be made twice, differently, to go unnoticed. Values are
 * small integers so float sums are exact and comparisons can be bitwise. Modules are
 * built through ir.h directly and kernels are called without the text parser. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eval/eval_internal.h"

/* ------------------------------------------------------------------ fixtures */

static hlo_module *g_mod;
static hlo_computation *g_comp;
static eval_ctx g_ctx;

static void setup(void) {
  g_mod = hlo_module_new("linalg_test");
  g_comp = hlo_computation_new(g_mod, "entry");
  g_comp->is_entry = true;
  g_mod->entry = g_comp;
  memset(&g_ctx, 0, sizeof g_ctx);
}
static void teardown(void) { hlo_module_free(g_mod); }

#define NARGS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SHAPE(t, ...) shape_make((t), NARGS(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
#define INTS(...) hlo_ints_make(g_mod->arena, NARGS(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
static const hlo_ints NO_INTS = {0, NULL};

/* An instruction of opcode OP whose operands are parameters shaped like OPS. */
static hlo_instr *mk_instr(hlo_opcode op, hlo_shape shape, int n_ops, hlo_literal *const *ops) {
  hlo_instr *params[8];
  for (int i = 0; i < n_ops; i++) {
    params[i] = hlo_instr_new(g_comp, HLO_OP_PARAMETER, &ops[i]->shape, NULL);
    params[i]->parameter_number = i;
  }
  hlo_instr *ins = hlo_instr_new(g_comp, op, &shape, NULL);
  hlo_instr_set_operands(ins, n_ops, params);
  return ins;
}

static hlo_literal *lit_make(hlo_shape s) {
  hlo_literal *l = NULL;
  kiln_status st = literal_create(&s, &l);
  if (st) abort();
  return l;
}

static hlo_literal *lit_vals(hlo_shape s, const double *v) {
  hlo_literal *l = lit_make(s);
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v[i]);
  return l;
}
#define LIT(s, ...) lit_vals((s), (double[]){__VA_ARGS__})

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static int64_t rand_in(int64_t lo, int64_t hi) { /* inclusive */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (int64_t)((g_rng >> 33) % (uint64_t)(hi - lo + 1));
}

static hlo_literal *lit_rand(hlo_shape s, int64_t lo, int64_t hi) {
  hlo_literal *l = lit_make(s);
  for (int64_t i = 0; i < l->n; i++) literal_set_s64(l, i, rand_in(lo, hi));
  return l;
}

static bool values_are(const hlo_literal *l, int n, const double *v) {
  if (l->n != n) return false;
  for (int i = 0; i < n; i++)
    if (literal_get_f64(l, i) != v[i]) {
      fprintf(stderr, "  element %d: got %g, want %g\n", i, literal_get_f64(l, i), v[i]);
      return false;
    }
  return true;
}
#define VALUES_ARE(l, ...) values_are((l), NARGS(__VA_ARGS__), (double[]){__VA_ARGS__})

static bool same(const hlo_literal *got, const hlo_literal *want) {
  if (literal_equal(got, want)) return true;
  char *a = shape_to_string(&got->shape), *b = shape_to_string(&want->shape);
  fprintf(stderr, "  literals differ: %s vs %s\n", a, b);
  free(a);
  free(b);
  if (got->n == want->n)
    for (int64_t i = 0; i < got->n; i++)
      if (literal_get_f64(got, i) != literal_get_f64(want, i)) {
        fprintf(stderr, "  first difference at %lld: %g vs %g\n", (long long)i, literal_get_f64(got, i),
                literal_get_f64(want, i));
        break;
      }
  return false;
}

/* Row-major helpers for the references (deliberately not the evaluator's). */
static int64_t lin(int rank, const int64_t *dims, const int64_t *idx) {
  int64_t l = 0;
  for (int d = 0; d < rank; d++) l = l * dims[d] + idx[d];
  return l;
}
static bool next(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}
static int64_t product(int rank, const int64_t *dims) {
  int64_t p = 1;
  for (int d = 0; d < rank; d++) p *= dims[d];
  return p;
}

/* ------------------------------------------------------------------ dot */

static hlo_instr *mk_dot(hlo_shape out, hlo_literal *l, hlo_literal *r, hlo_ints lb, hlo_ints rb, hlo_ints lc,
                         hlo_ints rc) {
  hlo_literal *ops[2] = {l, r};
  hlo_instr *ins = mk_instr(HLO_OP_DOT, out, 2, ops);
  ins->dot.lhs_batch = lb;
  ins->dot.rhs_batch = rb;
  ins->dot.lhs_contracting = lc;
  ins->dot.rhs_contracting = rc;
  return ins;
}

static bool in_list(const hlo_ints *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return true;
  return false;
}

/* Literal dot_general: for each result index, split it into batch / lhs free / rhs free
 * parts and sum over every contracting index. Floats in double, ints in wrapping u64. */
static hlo_literal *ref_dot(const hlo_instr *ins, const hlo_literal *l, const hlo_literal *r) {
  const hlo_dot_dnums *dn = &ins->dot;
  hlo_literal *out = lit_make(ins->shape);
  int lr = l->shape.rank, rr = r->shape.rank;
  int lfree[HLO_MAX_RANK], rfree[HLO_MAX_RANK], nlf = 0, nrf = 0;
  for (int d = 0; d < lr; d++)
    if (!in_list(&dn->lhs_batch, d) && !in_list(&dn->lhs_contracting, d)) lfree[nlf++] = d;
  for (int d = 0; d < rr; d++)
    if (!in_list(&dn->rhs_batch, d) && !in_list(&dn->rhs_contracting, d)) rfree[nrf++] = d;
  int64_t cdims[HLO_MAX_RANK];
  for (int i = 0; i < dn->lhs_contracting.n; i++) cdims[i] = l->shape.dims[dn->lhs_contracting.v[i]];
  int64_t oidx[HLO_MAX_RANK] = {0};
  bool is_float = hlo_type_is_float(ins->shape.type);
  for (int64_t o = 0; o < out->n; o++) {
    int64_t li[HLO_MAX_RANK] = {0}, ri[HLO_MAX_RANK] = {0};
    int k = 0;
    for (int i = 0; i < dn->lhs_batch.n; i++, k++) {
      li[dn->lhs_batch.v[i]] = oidx[k];
      ri[dn->rhs_batch.v[i]] = oidx[k];
    }
    for (int i = 0; i < nlf; i++, k++) li[lfree[i]] = oidx[k];
    for (int i = 0; i < nrf; i++, k++) ri[rfree[i]] = oidx[k];
    double fsum = 0;
    uint64_t isum = 0;
    int64_t c[HLO_MAX_RANK] = {0};
    bool any = product(dn->lhs_contracting.n, cdims) > 0;
    while (any) {
      for (int i = 0; i < dn->lhs_contracting.n; i++) {
        li[dn->lhs_contracting.v[i]] = c[i];
        ri[dn->rhs_contracting.v[i]] = c[i];
      }
      int64_t a = lin(lr, l->shape.dims, li), b = lin(rr, r->shape.dims, ri);
      if (is_float)
        fsum += literal_get_f64(l, a) * literal_get_f64(r, b);
      else
        isum += literal_get_u64(l, a) * literal_get_u64(r, b);
      any = next(dn->lhs_contracting.n, cdims, c);
    }
    if (is_float)
      literal_set_f64(out, o, fsum);
    else
      literal_set_u64(out, o, isum);
    next(ins->shape.rank, ins->shape.dims, oidx);
  }
  return out;
}

static void run_dot_vs_ref(hlo_instr *ins, hlo_literal *l, hlo_literal *r) {
  hlo_literal *ops[2] = {l, r}, *got = NULL;
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &got));
  hlo_literal *want = ref_dot(ins, l, r);
  if (got) CHECK(same(got, want));
  literal_free(got);
  literal_free(want);
}

static void test_dot_matmul(void) {
  setup();
  hlo_literal *l = LIT(SHAPE(HLO_F32, 2, 3), 1, 2, 3, 4, 5, 6);
  hlo_literal *r = LIT(SHAPE(HLO_F32, 3, 2), 7, 8, 9, 10, 11, 12);
  hlo_instr *ins = mk_dot(SHAPE(HLO_F32, 2, 2), l, r, NO_INTS, NO_INTS, INTS(1), INTS(0));
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &out));
  CHECK(out && VALUES_ARE(out, 58, 64, 139, 154));
  literal_free(out);
  /* Contracting lhs dim 0 with rhs dim 1: l^T r^T = (r l)^T. */
  hlo_instr *t = mk_dot(SHAPE(HLO_F32, 3, 3), l, r, NO_INTS, NO_INTS, INTS(0), INTS(1));
  CHECK_OK(eval_dot(&g_ctx, t, ops, &out));
  CHECK(out && VALUES_ARE(out, 39, 49, 59, 54, 68, 82, 69, 87, 105));
  literal_free(out);
  /* Matrix-vector. */
  hlo_literal *v = LIT(SHAPE(HLO_F32, 3), 1, 0, -1);
  hlo_literal *mv_ops[2] = {l, v};
  hlo_instr *mv = mk_dot(SHAPE(HLO_F32, 2), l, v, NO_INTS, NO_INTS, INTS(1), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, mv, mv_ops, &out));
  CHECK(out && VALUES_ARE(out, -2, -2));
  literal_free(out);
  literal_free(v);
  literal_free(l);
  literal_free(r);
  teardown();
}

static void test_dot_batched(void) {
  setup();
  /* [b=2, m=2, k=2] x [b=2, k=2, n=1] */
  hlo_literal *l = LIT(SHAPE(HLO_F64, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  hlo_literal *r = LIT(SHAPE(HLO_F64, 2, 2, 1), 1, 1, 2, -1);
  hlo_instr *ins = mk_dot(SHAPE(HLO_F64, 2, 2, 1), l, r, INTS(0), INTS(0), INTS(2), INTS(1));
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &out));
  CHECK(out && VALUES_ARE(out, 3, 7, 4, 6));
  literal_free(out);
  literal_free(l);
  literal_free(r);
  /* Batch dims not leading, two contracting dims, against the reference. */
  hlo_literal *a = lit_rand(SHAPE(HLO_F32, 3, 2, 4, 5), -4, 4); /* k1, b, m, k2 */
  hlo_literal *b = lit_rand(SHAPE(HLO_F32, 5, 2, 6, 3), -4, 4); /* k2, b, n, k1 */
  hlo_instr *g = mk_dot(SHAPE(HLO_F32, 2, 4, 6), a, b, INTS(1), INTS(1), INTS(0, 3), INTS(3, 0));
  run_dot_vs_ref(g, a, b);
  /* Two batch dims in swapped order. */
  hlo_literal *c = lit_rand(SHAPE(HLO_F32, 2, 3, 4), -4, 4);  /* b0, b1, k */
  hlo_literal *d = lit_rand(SHAPE(HLO_F32, 4, 3, 2, 5), -4, 4); /* k, b1, b0, n */
  hlo_instr *h = mk_dot(SHAPE(HLO_F32, 3, 2, 5), c, d, INTS(1, 0), INTS(1, 2), INTS(2), INTS(0));
  run_dot_vs_ref(h, c, d);
  literal_free(a);
  literal_free(b);
  literal_free(c);
  literal_free(d);
  teardown();
}

static void test_dot_outer_and_empty(void) {
  setup();
  hlo_literal *l = LIT(SHAPE(HLO_F32, 2), 1, 2);
  hlo_literal *r = LIT(SHAPE(HLO_F32, 3), 3, 4, 5);
  hlo_instr *ins = mk_dot(SHAPE(HLO_F32, 2, 3), l, r, NO_INTS, NO_INTS, NO_INTS, NO_INTS);
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &out));
  CHECK(out && VALUES_ARE(out, 3, 4, 5, 6, 8, 10));
  literal_free(out);
  literal_free(l);
  literal_free(r);
  /* Zero-length contraction gives zeros; a zero-size free dim gives an empty result. */
  hlo_literal *e1 = lit_make(SHAPE(HLO_F32, 2, 0)), *e2 = lit_make(SHAPE(HLO_F32, 0, 3));
  hlo_literal *eops[2] = {e1, e2};
  hlo_instr *z = mk_dot(SHAPE(HLO_F32, 2, 3), e1, e2, NO_INTS, NO_INTS, INTS(1), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, z, eops, &out));
  CHECK(out && VALUES_ARE(out, 0, 0, 0, 0, 0, 0));
  literal_free(out);
  hlo_instr *z2 = mk_dot(SHAPE(HLO_F32, 0, 0), e2, e1, NO_INTS, NO_INTS, INTS(1), INTS(0));
  hlo_literal *eops2[2] = {e2, e1};
  /* e2 [0,3] . e1 [2,0] contracting 3 with 2 mismatches: an error, not a crash. */
  CHECK_ERR(eval_dot(&g_ctx, z2, eops2, &out), "sizes differ");
  literal_free(e1);
  literal_free(e2);
  /* Empty operands whose other dims multiply past int64: an empty result, no overflow. */
  hlo_literal *h1 = lit_make(SHAPE(HLO_F32, 2, 0, (int64_t)1 << 40, (int64_t)1 << 40));
  hlo_literal *h2 = lit_make(SHAPE(HLO_F32, 0, (int64_t)1 << 40, (int64_t)1 << 40));
  hlo_literal *hops[2] = {h1, h2};
  hlo_instr *hd = mk_dot(SHAPE(HLO_F32, 2, 0, 0), h1, h2, NO_INTS, NO_INTS, INTS(2, 3), INTS(1, 2));
  CHECK_OK(eval_dot(&g_ctx, hd, hops, &out));
  CHECK(out && out->n == 0);
  literal_free(out);
  literal_free(h1);
  literal_free(h2);
  /* A scalar dot (rank-0 operands, no dims at all) is a multiply. */
  hlo_literal *s1 = LIT(shape_scalar(HLO_F32), 3), *s2 = LIT(shape_scalar(HLO_F32), -2);
  hlo_literal *sops[2] = {s1, s2};
  hlo_instr *sd = mk_dot(shape_scalar(HLO_F32), s1, s2, NO_INTS, NO_INTS, NO_INTS, NO_INTS);
  CHECK_OK(eval_dot(&g_ctx, sd, sops, &out));
  CHECK(out && VALUES_ARE(out, -6));
  literal_free(out);
  literal_free(s1);
  literal_free(s2);
  teardown();
}

static void test_dot_integer_wrapping(void) {
  setup();
  /* 65536 * 65536 + 1 * 1 wraps to 1 in s32; -2^31 * 65536 - 1 wraps to -1. */
  hlo_literal *l = LIT(SHAPE(HLO_S32, 2, 2), 65536, 1, -2147483648.0, -1);
  hlo_literal *r = LIT(SHAPE(HLO_S32, 2, 1), 65536, 1);
  hlo_instr *ins = mk_dot(SHAPE(HLO_S32, 2, 1), l, r, NO_INTS, NO_INTS, INTS(1), INTS(0));
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &out));
  CHECK(out && ((int32_t *)out->data)[0] == 1 && ((int32_t *)out->data)[1] == -1);
  literal_free(out);
  literal_free(l);
  literal_free(r);
  /* u8 wraps mod 256. */
  hlo_literal *a = LIT(SHAPE(HLO_U8, 3), 200, 100, 3), *b = LIT(SHAPE(HLO_U8, 3), 2, 1, 5);
  hlo_literal *uops[2] = {a, b};
  hlo_instr *u = mk_dot(shape_scalar(HLO_U8), a, b, NO_INTS, NO_INTS, INTS(0), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, u, uops, &out));
  CHECK(out && ((uint8_t *)out->data)[0] == (uint8_t)(400 + 100 + 15));
  literal_free(out);
  literal_free(a);
  literal_free(b);
  /* s64 near the limits: INT64_MAX * 2 wraps to -2. */
  hlo_literal *c = lit_make(SHAPE(HLO_S64, 1)), *d = lit_make(SHAPE(HLO_S64, 1));
  ((int64_t *)c->data)[0] = INT64_MAX;
  ((int64_t *)d->data)[0] = 2;
  hlo_literal *sops[2] = {c, d};
  hlo_instr *s = mk_dot(shape_scalar(HLO_S64), c, d, NO_INTS, NO_INTS, INTS(0), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, s, sops, &out));
  CHECK(out && ((int64_t *)out->data)[0] == -2);
  literal_free(out);
  literal_free(c);
  literal_free(d);
  /* Random ints against the reference. */
  hlo_literal *e = lit_rand(SHAPE(HLO_S16, 3, 7), -30000, 30000), *f = lit_rand(SHAPE(HLO_S16, 7, 4), -30000, 30000);
  run_dot_vs_ref(mk_dot(SHAPE(HLO_S16, 3, 4), e, f, NO_INTS, NO_INTS, INTS(1), INTS(0)), e, f);
  literal_free(e);
  literal_free(f);
  teardown();
}

static void test_dot_mixed_types_and_pred(void) {
  setup();
  /* s8 x s8 -> s32: operands widen first, so 100*100*2 does not wrap. */
  hlo_literal *l = LIT(SHAPE(HLO_S8, 2), 100, 100), *r = LIT(SHAPE(HLO_S8, 2), 100, 100);
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  hlo_instr *ins = mk_dot(shape_scalar(HLO_S32), l, r, NO_INTS, NO_INTS, INTS(0), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, ins, ops, &out));
  CHECK(out && VALUES_ARE(out, 20000));
  literal_free(out);
  literal_free(l);
  literal_free(r);
  /* bf16 x bf16 -> f32 is exact; -> bf16 rounds once at the end: 1 + 2^-8 + 2^-8
   * accumulates to 1 + 2^-7 (representable in bf16), where per-step bf16 rounding
   * would have tied to even at every step and given 1. */
  hlo_literal *a = LIT(SHAPE(HLO_BF16, 3), 1, 0.00390625, 0.00390625), *b = LIT(SHAPE(HLO_BF16, 3), 1, 1, 1);
  hlo_literal *bops[2] = {a, b};
  hlo_instr *bd = mk_dot(shape_scalar(HLO_BF16), a, b, NO_INTS, NO_INTS, INTS(0), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, bd, bops, &out));
  CHECK(out && VALUES_ARE(out, 1.0078125));
  literal_free(out);
  hlo_instr *bf = mk_dot(shape_scalar(HLO_F32), a, b, NO_INTS, NO_INTS, INTS(0), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, bf, bops, &out));
  CHECK(out && out->shape.type == HLO_F32 && VALUES_ARE(out, 1.0078125));
  literal_free(out);
  literal_free(a);
  literal_free(b);
  /* pred: or of ands. */
  hlo_literal *p = LIT(SHAPE(HLO_PRED, 2, 2), 1, 0, 0, 0), *q = LIT(SHAPE(HLO_PRED, 2, 2), 0, 1, 1, 1);
  hlo_literal *pops[2] = {p, q};
  hlo_instr *pd = mk_dot(SHAPE(HLO_PRED, 2, 2), p, q, NO_INTS, NO_INTS, INTS(1), INTS(0));
  CHECK_OK(eval_dot(&g_ctx, pd, pops, &out));
  CHECK(out && VALUES_ARE(out, 0, 1, 0, 0));
  literal_free(out);
  literal_free(p);
  literal_free(q);
  teardown();
}

static void test_dot_errors(void) {
  setup();
  hlo_literal *l = lit_make(SHAPE(HLO_F32, 2, 3)), *r = lit_make(SHAPE(HLO_F32, 4, 2));
  hlo_literal *ops[2] = {l, r}, *out = NULL;
  CHECK_ERR(eval_dot(&g_ctx, mk_dot(SHAPE(HLO_F32, 2, 2), l, r, NO_INTS, NO_INTS, INTS(1), INTS(0)), ops, &out),
            "sizes differ");
  CHECK_ERR(eval_dot(&g_ctx, mk_dot(SHAPE(HLO_F32, 2, 2), l, r, NO_INTS, NO_INTS, INTS(5), INTS(0)), ops, &out),
            "dimension numbers");
  CHECK_ERR(eval_dot(&g_ctx, mk_dot(SHAPE(HLO_F32, 7), l, r, NO_INTS, NO_INTS, INTS(0), INTS(1)), ops, &out),
            "result shape");
  CHECK(out == NULL);
  literal_free(l);
  literal_free(r);
  teardown();
}

/* ------------------------------------------------------------------ convolution */

/* Parses dim_labels like "bf01_oi01->bf01" (a local parser, independent of the real
 * one). Returns the spatial count. */
static int parse_labels(const char *s, hlo_conv_dnums *dn) {
  memset(dn, 0, sizeof *dn);
  int part = 0, pos = 0, ns = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '_' || *p == '>') {
      part++;
      pos = 0;
      continue;
    }
    if (*p == '-') continue;
    char c = *p;
    if (c >= '0' && c <= '9') {
      int sd = c - '0';
      if (sd + 1 > ns) ns = sd + 1;
      if (part == 0) dn->input_spatial[sd] = pos;
      if (part == 1) dn->kernel_spatial[sd] = pos;
      if (part == 2) dn->output_spatial[sd] = pos;
    } else if (part == 0) {
      if (c == 'b') dn->input_batch = pos;
      if (c == 'f') dn->input_feature = pos;
    } else if (part == 1) {
      if (c == 'i') dn->kernel_input_feature = pos;
      if (c == 'o') dn->kernel_output_feature = pos;
    } else {
      if (c == 'b') dn->output_batch = pos;
      if (c == 'f') dn->output_feature = pos;
    }
    pos++;
  }
  dn->n_spatial = ns;
  return ns;
}

typedef struct conv_spec {
  const char *labels;
  hlo_type type;
  int64_t batch, in_features, out_features;
  int64_t in_sp[3], k_sp[3];
  int64_t stride[3], pad_lo[3], pad_hi[3], lhs_dil[3], rhs_dil[3];
  bool rev[3];
  int64_t fgc, bgc;
} conv_spec;

static int64_t or1(int64_t v) { return v ? v : 1; }

/* Builds the convolution instruction (result shape from the window formula) and random
 * operands for SPEC. */
static hlo_instr *mk_conv(const conv_spec *sp, hlo_literal **x, hlo_literal **w) {
  hlo_conv_dnums dn;
  int ns = parse_labels(sp->labels, &dn);
  int rank = ns + 2;
  int64_t fgc = or1(sp->fgc), bgc = or1(sp->bgc);
  int64_t xd[HLO_MAX_RANK], wd[HLO_MAX_RANK], od[HLO_MAX_RANK];
  hlo_window win;
  memset(&win, 0, sizeof win);
  win.rank = ns;
  xd[dn.input_batch] = sp->batch;
  xd[dn.input_feature] = sp->in_features;
  wd[dn.kernel_input_feature] = sp->in_features / fgc;
  wd[dn.kernel_output_feature] = sp->out_features;
  od[dn.output_batch] = sp->batch / bgc;
  od[dn.output_feature] = sp->out_features;
  for (int s = 0; s < ns; s++) {
    hlo_window_dim *d = &win.dims[s];
    d->size = sp->k_sp[s];
    d->stride = or1(sp->stride[s]);
    d->pad_lo = sp->pad_lo[s];
    d->pad_hi = sp->pad_hi[s];
    d->lhs_dilate = or1(sp->lhs_dil[s]);
    d->rhs_dilate = or1(sp->rhs_dil[s]);
    d->reversal = sp->rev[s];
    xd[dn.input_spatial[s]] = sp->in_sp[s];
    wd[dn.kernel_spatial[s]] = sp->k_sp[s];
    int64_t in_dil = sp->in_sp[s] ? (sp->in_sp[s] - 1) * d->lhs_dilate + 1 : 0;
    int64_t k_dil = sp->k_sp[s] ? (sp->k_sp[s] - 1) * d->rhs_dilate + 1 : 0;
    int64_t padded = in_dil + d->pad_lo + d->pad_hi;
    od[dn.output_spatial[s]] = (padded <= 0 || k_dil > padded) ? 0 : (padded - k_dil) / d->stride + 1;
  }
  hlo_type t = sp->type ? sp->type : HLO_F32;
  *x = lit_rand(shape_make(t, rank, xd), -3, 3);
  *w = lit_rand(shape_make(t, rank, wd), -3, 3);
  hlo_literal *ops[2] = {*x, *w};
  hlo_instr *ins = mk_instr(HLO_OP_CONVOLUTION, shape_make(t, rank, od), 2, ops);
  ins->conv = dn;
  ins->has_conv_dnums = true;
  ins->window = win;
  ins->feature_group_count = fgc;
  ins->batch_group_count = bgc;
  return ins;
}

/* Literal convolution: canonicalise to [n][c][spatial], build the explicitly dilated and
 * padded input and the explicitly dilated kernel, then slide the (possibly reversed)
 * window; groups by literally splitting features / batches as StableHLO's spec says. */
static hlo_literal *ref_conv(const hlo_instr *ins, const hlo_literal *x, const hlo_literal *w) {
  const hlo_conv_dnums *dn = &ins->conv;
  int ns = dn->n_spatial, rank = ns + 2;
  int64_t n_in = x->shape.dims[dn->input_batch], c_in = x->shape.dims[dn->input_feature];
  int64_t c_out = w->shape.dims[dn->kernel_output_feature], cg = w->shape.dims[dn->kernel_input_feature];
  int64_t fgc = ins->feature_group_count, bgc = ins->batch_group_count, n_out = n_in / bgc;
  int64_t in_sp[3], k_sp[3], padded[3], kdil[3], out_sp[3];
  for (int s = 0; s < ns; s++) {
    const hlo_window_dim *wd = &ins->window.dims[s];
    in_sp[s] = x->shape.dims[dn->input_spatial[s]];
    k_sp[s] = w->shape.dims[dn->kernel_spatial[s]];
    int64_t in_dil = in_sp[s] ? (in_sp[s] - 1) * wd->lhs_dilate + 1 : 0;
    padded[s] = wd->pad_lo + in_dil + wd->pad_hi;
    if (padded[s] < 0) padded[s] = 0;
    kdil[s] = k_sp[s] ? (k_sp[s] - 1) * wd->rhs_dilate + 1 : 0;
    out_sp[s] = ins->shape.dims[dn->output_spatial[s]];
  }
  /* Padded, dilated input P[n][c][padded...]. */
  int64_t psz = n_in * c_in * product(ns, padded);
  double *P = calloc((size_t)(psz ? psz : 1), sizeof *P);
  int64_t pdims[5] = {n_in, c_in}, pi[5] = {0};
  for (int s = 0; s < ns; s++) pdims[2 + s] = padded[s];
  for (int64_t i = 0; i < psz; i++) {
    int64_t xi[HLO_MAX_RANK];
    bool inside = true;
    xi[dn->input_batch] = pi[0];
    xi[dn->input_feature] = pi[1];
    for (int s = 0; s < ns && inside; s++) {
      const hlo_window_dim *wd = &ins->window.dims[s];
      int64_t t = pi[2 + s] - wd->pad_lo; /* position in the dilated input */
      int64_t in_dil = in_sp[s] ? (in_sp[s] - 1) * wd->lhs_dilate + 1 : 0;
      if (t < 0 || t >= in_dil || t % wd->lhs_dilate != 0) inside = false;
      else xi[dn->input_spatial[s]] = t / wd->lhs_dilate;
    }
    P[i] = inside ? literal_get_f64(x, lin(rank, x->shape.dims, xi)) : 0;
    next(rank, pdims, pi);
  }
  /* Dilated kernel K[o][i][kdil...]. */
  int64_t ksz = c_out * cg * product(ns, kdil);
  double *K = calloc((size_t)(ksz ? ksz : 1), sizeof *K);
  int64_t kdims[5] = {c_out, cg}, ki[5] = {0};
  for (int s = 0; s < ns; s++) kdims[2 + s] = kdil[s];
  for (int64_t i = 0; i < ksz; i++) {
    int64_t wi[HLO_MAX_RANK];
    bool tap = true;
    wi[dn->kernel_output_feature] = ki[0];
    wi[dn->kernel_input_feature] = ki[1];
    for (int s = 0; s < ns && tap; s++) {
      int64_t rd = ins->window.dims[s].rhs_dilate;
      if (ki[2 + s] % rd != 0) tap = false;
      else wi[dn->kernel_spatial[s]] = ki[2 + s] / rd;
    }
    K[i] = tap ? literal_get_f64(w, lin(rank, w->shape.dims, wi)) : 0;
    next(rank, kdims, ki);
  }
  hlo_literal *out = lit_make(ins->shape);
  int64_t odims[5] = {n_out, c_out}, oi[5] = {0};
  for (int s = 0; s < ns; s++) odims[2 + s] = out_sp[s];
  int64_t total = product(rank, odims);
  bool is_float = hlo_type_is_float(ins->shape.type);
  for (int64_t i = 0; i < total; i++) {
    int64_t b = oi[0], o = oi[1];
    int64_t fgroup = o / (c_out / fgc), bgroup = o / (c_out / bgc);
    int64_t nb = bgroup * n_out + b;
    double fsum = 0;
    uint64_t isum = 0;
    for (int64_t c = 0; c < cg; c++) {
      int64_t ic = fgroup * cg + c;
      int64_t t[3] = {0};
      int64_t nt = product(ns, kdil);
      for (int64_t j = 0; j < nt; j++) {
        int64_t pidx[5] = {nb, ic}, kidx[5] = {o, c};
        for (int s = 0; s < ns; s++) {
          const hlo_window_dim *wd = &ins->window.dims[s];
          int64_t wpos = wd->reversal ? kdil[s] - 1 - t[s] : t[s]; /* reversed window */
          pidx[2 + s] = oi[2 + s] * wd->stride + wpos;
          kidx[2 + s] = t[s];
        }
        double xv = P[lin(rank, pdims, pidx)], kv = K[lin(rank, kdims, kidx)];
        fsum += xv * kv;
        isum += (uint64_t)(int64_t)xv * (uint64_t)(int64_t)kv;
        next(ns, kdil, t);
      }
    }
    int64_t out_idx[HLO_MAX_RANK];
    out_idx[dn->output_batch] = b;
    out_idx[dn->output_feature] = o;
    for (int s = 0; s < ns; s++) out_idx[dn->output_spatial[s]] = oi[2 + s];
    int64_t li = lin(rank, ins->shape.dims, out_idx);
    if (is_float)
      literal_set_f64(out, li, fsum);
    else
      literal_set_u64(out, li, isum);
    next(rank, odims, oi);
  }
  free(P);
  free(K);
  return out;
}

static void conv_vs_ref(const conv_spec *sp) {
  hlo_literal *x, *w, *got = NULL;
  hlo_instr *ins = mk_conv(sp, &x, &w);
  hlo_literal *ops[2] = {x, w};
  kiln_status st = eval_convolution(&g_ctx, ins, ops, &got);
  if (st) fprintf(stderr, "  conv %s failed\n", sp->labels);
  CHECK_OK(st);
  hlo_literal *want = ref_conv(ins, x, w);
  if (got && !same(got, want)) {
    fprintf(stderr, "  (conv case %s)\n", sp->labels);
    CHECK(!"convolution differs from the reference");
  }
  literal_free(got);
  literal_free(want);
  literal_free(x);
  literal_free(w);
}

static void test_conv_hand(void) {
  setup();
  /* StableHLO spec example: 4x4 input with lhs dilation 2, 3x3 ones kernel, stride 4. */
  hlo_literal *x = LIT(SHAPE(HLO_S64, 1, 4, 4, 1), 1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17);
  hlo_literal *w = LIT(SHAPE(HLO_S64, 3, 3, 1, 1), 1, 1, 1, 1, 1, 1, 1, 1, 1);
  hlo_literal *ops[2] = {x, w}, *out = NULL;
  hlo_instr *ins = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_S64, 1, 2, 2, 1), 2, ops);
  parse_labels("b01f_01io->b01f", &ins->conv);
  ins->window.rank = 2;
  for (int s = 0; s < 2; s++)
    ins->window.dims[s] = (hlo_window_dim){.size = 3, .stride = 4, .lhs_dilate = 2, .rhs_dilate = 1};
  CHECK_OK(eval_convolution(&g_ctx, ins, ops, &out));
  CHECK(out && VALUES_ARE(out, 10, 26, 46, 62));
  literal_free(out);
  literal_free(x);
  literal_free(w);

  /* 1-D, NCW: [1,2,3,4] * [1,10] with pad 1_0 -> [10, 21, 32, 43]; reversed kernel
   * -> [1, 12, 23, 34]; stride 2 -> [10, 32]; pad -1_0 -> [32, 43]. */
  hlo_literal *a = LIT(SHAPE(HLO_F32, 1, 1, 4), 1, 2, 3, 4), *k = LIT(SHAPE(HLO_F32, 1, 1, 2), 1, 10);
  hlo_literal *aops[2] = {a, k};
  struct {
    int64_t stride, lo, hi;
    bool rev;
    int64_t n;
    double want[4];
  } cases[] = {{1, 1, 0, false, 4, {10, 21, 32, 43}},
               {1, 1, 0, true, 4, {1, 12, 23, 34}},
               {2, 1, 0, false, 2, {10, 32}},
               {1, -1, 0, false, 2, {32, 43}},
               {1, 0, -1, false, 2, {21, 32}}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hlo_instr *c = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 1, 1, cases[i].n), 2, aops);
    parse_labels("bf0_oi0->bf0", &c->conv);
    c->window.rank = 1;
    c->window.dims[0] = (hlo_window_dim){.size = 2, .stride = cases[i].stride, .pad_lo = cases[i].lo,
                                         .pad_hi = cases[i].hi, .lhs_dilate = 1, .rhs_dilate = 1,
                                         .reversal = cases[i].rev};
    CHECK_OK(eval_convolution(&g_ctx, c, aops, &out));
    CHECK(out && values_are(out, (int)cases[i].n, cases[i].want));
    literal_free(out);
  }
  /* rhs dilation 2: taps 1 and 10 two apart -> [1*1+3*10, 2+40] = [31, 42]. */
  hlo_instr *c = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 1, 1, 2), 2, aops);
  parse_labels("bf0_oi0->bf0", &c->conv);
  c->window.rank = 1;
  c->window.dims[0] = (hlo_window_dim){.size = 2, .stride = 1, .lhs_dilate = 1, .rhs_dilate = 2};
  CHECK_OK(eval_convolution(&g_ctx, c, aops, &out));
  CHECK(out && VALUES_ARE(out, 31, 42));
  literal_free(out);
  /* Wrong result size is an error naming the instruction. */
  hlo_instr *bad = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 1, 1, 5), 2, aops);
  parse_labels("bf0_oi0->bf0", &bad->conv);
  bad->window.rank = 1;
  bad->window.dims[0] = (hlo_window_dim){.size = 2, .stride = 1, .lhs_dilate = 1, .rhs_dilate = 1};
  CHECK_ERR(eval_convolution(&g_ctx, bad, aops, &out), bad->name);
  bad->window.dims[0].size = 3;
  CHECK_ERR(eval_convolution(&g_ctx, bad, aops, &out), "window");
  bad->window.dims[0] = (hlo_window_dim){.size = 2, .stride = 1, .lhs_dilate = INT64_MAX, .rhs_dilate = 1};
  CHECK_ERR(eval_convolution(&g_ctx, bad, aops, &out), "spatial");
  literal_free(a);
  literal_free(k);
  /* Empty batch with spatial dims whose product overflows int64: empty result. */
  int64_t big = (int64_t)1 << 40;
  hlo_literal *ex = lit_make(SHAPE(HLO_F32, 0, big, big, 1)), *ek = LIT(SHAPE(HLO_F32, 1, 1, 1, 1), 2);
  hlo_literal *eops[2] = {ex, ek};
  hlo_instr *ec = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 0, big, big, 1), 2, eops);
  parse_labels("b01f_01io->b01f", &ec->conv);
  ec->window.rank = 2;
  for (int s = 0; s < 2; s++) ec->window.dims[s] = (hlo_window_dim){.size = 1, .stride = 1, .lhs_dilate = 1, .rhs_dilate = 1};
  CHECK_OK(eval_convolution(&g_ctx, ec, eops, &out));
  CHECK(out && out->n == 0);
  literal_free(out);
  literal_free(ex);
  literal_free(ek);
  teardown();
}

static void test_conv_vs_reference(void) {
  setup();
  conv_spec specs[] = {
      /* plain NHWC / NCHW / HWIO / OIHW layouts */
      {.labels = "b01f_01io->b01f", .batch = 2, .in_features = 3, .out_features = 4, .in_sp = {5, 6}, .k_sp = {3, 2}},
      {.labels = "bf01_oi01->bf01", .batch = 2, .in_features = 3, .out_features = 4, .in_sp = {5, 6}, .k_sp = {3, 2}},
      {.labels = "f01b_i01o->01bf", .batch = 2, .in_features = 3, .out_features = 2, .in_sp = {4, 5}, .k_sp = {2, 3}},
      /* stride and padding */
      {.labels = "b01f_01io->b01f", .batch = 1, .in_features = 2, .out_features = 3, .in_sp = {7, 6}, .k_sp = {3, 3},
       .stride = {2, 3}, .pad_lo = {1, 2}, .pad_hi = {2, 0}},
      /* negative padding */
      {.labels = "bf01_oi01->bf01", .batch = 1, .in_features = 2, .out_features = 2, .in_sp = {8, 7}, .k_sp = {2, 3},
       .pad_lo = {-2, 1}, .pad_hi = {-1, -2}},
      /* lhs (base) dilation = transposed conv, with padding */
      {.labels = "b01f_01io->b01f", .batch = 2, .in_features = 2, .out_features = 3, .in_sp = {4, 3}, .k_sp = {3, 3},
       .lhs_dil = {2, 3}, .pad_lo = {2, 2}, .pad_hi = {2, 1}},
      /* rhs (kernel) dilation with stride */
      {.labels = "b01f_01io->b01f", .batch = 1, .in_features = 3, .out_features = 2, .in_sp = {9, 8}, .k_sp = {3, 2},
       .rhs_dil = {2, 3}, .stride = {2, 1}},
      /* window reversal in one dim, everything at once in the other */
      {.labels = "bf01_oi01->bf01", .batch = 2, .in_features = 2, .out_features = 2, .in_sp = {5, 6}, .k_sp = {3, 2},
       .rev = {true, false}, .lhs_dil = {1, 2}, .rhs_dil = {1, 2}, .stride = {1, 2}, .pad_lo = {1, -1},
       .pad_hi = {0, 3}},
      {.labels = "b01f_01io->b01f", .batch = 1, .in_features = 2, .out_features = 2, .in_sp = {4, 4}, .k_sp = {2, 3},
       .rev = {true, true}, .pad_lo = {1, 1}, .pad_hi = {1, 1}},
      /* feature groups: grouped and depthwise (with a channel multiplier) */
      {.labels = "b01f_01io->b01f", .batch = 2, .in_features = 6, .out_features = 4, .in_sp = {5, 5}, .k_sp = {3, 3},
       .fgc = 2},
      {.labels = "b01f_01io->b01f", .batch = 1, .in_features = 4, .out_features = 8, .in_sp = {6, 5}, .k_sp = {3, 3},
       .fgc = 4, .pad_lo = {1, 1}, .pad_hi = {1, 1}},
      {.labels = "bf01_oi01->bf01", .batch = 2, .in_features = 3, .out_features = 3, .in_sp = {4, 4}, .k_sp = {2, 2},
       .fgc = 3, .stride = {2, 2}},
      /* batch groups (the kernel gradient of a grouped conv) */
      {.labels = "b01f_01io->b01f", .batch = 4, .in_features = 3, .out_features = 6, .in_sp = {5, 4}, .k_sp = {2, 2},
       .bgc = 2},
      {.labels = "f01b_i01o->01bf", .batch = 6, .in_features = 2, .out_features = 3, .in_sp = {4, 4}, .k_sp = {3, 2},
       .bgc = 3},
      /* 1-D and 3-D */
      {.labels = "b0f_0io->b0f", .batch = 2, .in_features = 3, .out_features = 2, .in_sp = {9}, .k_sp = {4},
       .stride = {2}, .pad_lo = {3}, .pad_hi = {1}, .rhs_dil = {2}},
      {.labels = "bf0_oi0->bf0", .batch = 1, .in_features = 1, .out_features = 1, .in_sp = {6}, .k_sp = {3},
       .lhs_dil = {3}, .pad_lo = {2}, .pad_hi = {2}, .rev = {true}},
      {.labels = "b012f_012io->b012f", .batch = 2, .in_features = 2, .out_features = 3, .in_sp = {4, 5, 3},
       .k_sp = {2, 3, 2}, .stride = {1, 2, 1}, .pad_lo = {1, 0, 1}, .pad_hi = {0, 1, 1}},
      {.labels = "bf012_oi012->bf012", .batch = 1, .in_features = 4, .out_features = 4, .in_sp = {3, 4, 5},
       .k_sp = {3, 2, 2}, .fgc = 2, .rhs_dil = {1, 2, 1}, .lhs_dil = {2, 1, 1}},
      /* no spatial dims at all: a (grouped) matmul */
      {.labels = "bf_io->bf", .batch = 3, .in_features = 4, .out_features = 5},
      {.labels = "fb_oi->bf", .batch = 4, .in_features = 6, .out_features = 4, .fgc = 2},
      {.labels = "bf_io->fb", .batch = 4, .in_features = 3, .out_features = 4, .bgc = 2},
      /* kernel larger than input (empty result), zero-size batch, 1x1 kernels */
      {.labels = "b01f_01io->b01f", .batch = 1, .in_features = 1, .out_features = 1, .in_sp = {2, 2}, .k_sp = {3, 3}},
      {.labels = "b01f_01io->b01f", .batch = 0, .in_features = 2, .out_features = 2, .in_sp = {3, 3}, .k_sp = {1, 1}},
      {.labels = "b01f_01io->b01f", .batch = 2, .in_features = 5, .out_features = 3, .in_sp = {3, 3}, .k_sp = {1, 1}},
      /* integer convolutions */
      {.labels = "b01f_01io->b01f", .type = HLO_S32, .batch = 2, .in_features = 3, .out_features = 2, .in_sp = {5, 5},
       .k_sp = {3, 3}, .stride = {2, 1}, .pad_lo = {1, 1}},
      {.labels = "bf01_oi01->bf01", .type = HLO_S8, .batch = 1, .in_features = 8, .out_features = 2, .in_sp = {3, 3},
       .k_sp = {3, 3}},
      {.labels = "b01f_01io->b01f", .type = HLO_BF16, .batch = 1, .in_features = 2, .out_features = 2,
       .in_sp = {4, 4}, .k_sp = {2, 2}},
      {.labels = "b01f_01io->b01f", .type = HLO_F16, .batch = 1, .in_features = 2, .out_features = 2,
       .in_sp = {4, 4}, .k_sp = {2, 2}, .fgc = 2},
      {.labels = "b01f_01io->b01f", .type = HLO_F64, .batch = 1, .in_features = 2, .out_features = 2,
       .in_sp = {4, 4}, .k_sp = {2, 2}, .bgc = 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) conv_vs_ref(&specs[i]);
  teardown();
}

/* The same data in NHWC/HWIO and NCHW/OIHW layouts gives the same (transposed) result. */
static void test_conv_layouts_agree(void) {
  setup();
  hlo_literal *x = lit_rand(SHAPE(HLO_F32, 2, 5, 6, 3), -3, 3); /* NHWC */
  hlo_literal *w = lit_rand(SHAPE(HLO_F32, 3, 2, 3, 4), -3, 3); /* HWIO */
  hlo_literal *xt = lit_make(SHAPE(HLO_F32, 2, 3, 5, 6)), *wt = lit_make(SHAPE(HLO_F32, 4, 3, 3, 2));
  int64_t i4[4] = {0};
  do {
    int64_t src = lin(4, x->shape.dims, i4), dst = lin(4, xt->shape.dims, (int64_t[]){i4[0], i4[3], i4[1], i4[2]});
    ((float *)xt->data)[dst] = ((float *)x->data)[src];
  } while (next(4, x->shape.dims, i4));
  memset(i4, 0, sizeof i4);
  do {
    int64_t src = lin(4, w->shape.dims, i4), dst = lin(4, wt->shape.dims, (int64_t[]){i4[3], i4[2], i4[0], i4[1]});
    ((float *)wt->data)[dst] = ((float *)w->data)[src];
  } while (next(4, w->shape.dims, i4));
  hlo_literal *o1 = NULL, *o2 = NULL;
  hlo_literal *ops1[2] = {x, w}, *ops2[2] = {xt, wt};
  hlo_instr *c1 = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 2, 3, 4, 4), 2, ops1);
  hlo_instr *c2 = mk_instr(HLO_OP_CONVOLUTION, SHAPE(HLO_F32, 2, 4, 3, 4), 2, ops2);
  parse_labels("b01f_01io->b01f", &c1->conv);
  parse_labels("bf01_oi01->bf01", &c2->conv);
  for (int s = 0; s < 2; s++) {
    hlo_window_dim d = {.size = s ? 2 : 3, .stride = 2, .pad_lo = 1, .pad_hi = 1, .lhs_dilate = 1, .rhs_dilate = 1};
    c1->window.dims[s] = c2->window.dims[s] = d;
  }
  c1->window.rank = c2->window.rank = 2;
  CHECK_OK(eval_convolution(&g_ctx, c1, ops1, &o1));
  CHECK_OK(eval_convolution(&g_ctx, c2, ops2, &o2));
  if (o1 && o2) {
    int64_t i[4] = {0};
    bool ok = true;
    do {
      float a = ((float *)o1->data)[lin(4, o1->shape.dims, i)];
      float b = ((float *)o2->data)[lin(4, o2->shape.dims, (int64_t[]){i[0], i[3], i[1], i[2]})];
      ok = ok && a == b;
    } while (next(4, o1->shape.dims, i));
    CHECK(ok);
  }
  literal_free(o1);
  literal_free(o2);
  literal_free(x);
  literal_free(w);
  literal_free(xt);
  literal_free(wt);
  teardown();
}

/* ------------------------------------------------------------------ gather */

typedef struct gather_spec {
  hlo_ints offset_dims, collapsed, start_index_map, operand_batching, indices_batching, slice_sizes;
  int64_t index_vector_dim;
} gather_spec;

static hlo_instr *mk_gather(const gather_spec *g, hlo_shape out, hlo_literal *opnd, hlo_literal *idx) {
  hlo_literal *ops[2] = {opnd, idx};
  hlo_instr *ins = mk_instr(HLO_OP_GATHER, out, 2, ops);
  ins->gather.offset_dims = g->offset_dims;
  ins->gather.collapsed_slice_dims = g->collapsed;
  ins->gather.start_index_map = g->start_index_map;
  ins->gather.operand_batching_dims = g->operand_batching;
  ins->gather.start_indices_batching_dims = g->indices_batching;
  ins->gather.index_vector_dim = g->index_vector_dim;
  ins->gather_slice_sizes = g->slice_sizes;
  return ins;
}

static int64_t ref_index_value(const hlo_literal *l, int64_t i) {
  if (l->shape.type == HLO_U64) {
    uint64_t v = literal_get_u64(l, i);
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
  }
  return literal_get_s64(l, i);
}

/* XLA's gather pseudo-code, per output index Out:
 *   batch_dims = dims of Out not in offset_dims; G = Out[batch_dims];
 *   S = start_indices[G with ':' inserted at index_vector_dim];
 *   S_in[start_index_map[k]] = S[k], S_in[operand_batching_dims[i]] = G at the position
 *   of start_indices_batching_dims[i]; clamp S_in to [0, operand_dim - slice_size];
 *   O_in[window operand dim j] = Out[offset_dims[j]]; In = S_in + O_in. */
static hlo_literal *ref_gather(const hlo_instr *ins, const hlo_literal *opnd, const hlo_literal *idx) {
  const hlo_gather_dnums *dn = &ins->gather;
  hlo_literal *out = lit_make(ins->shape);
  int orank = ins->shape.rank, r = opnd->shape.rank, ir = idx->shape.rank;
  int64_t o[HLO_MAX_RANK] = {0};
  for (int64_t e = 0; e < out->n; e++) {
    int64_t G[HLO_MAX_RANK];
    int ng = 0;
    for (int d = 0; d < orank; d++)
      if (!in_list(&dn->offset_dims, d)) G[ng++] = o[d];
    /* Index into start_indices for component k: G with k inserted at index_vector_dim. */
    int64_t S_in[HLO_MAX_RANK] = {0};
    for (int k = 0; k < dn->start_index_map.n; k++) {
      int64_t ii[HLO_MAX_RANK];
      for (int d = 0, j = 0; d < ir; d++) ii[d] = d == dn->index_vector_dim ? k : G[j++];
      S_in[dn->start_index_map.v[k]] = ref_index_value(idx, lin(ir, idx->shape.dims, ii));
    }
    for (int i = 0; i < dn->operand_batching_dims.n; i++) {
      int64_t id = dn->start_indices_batching_dims.v[i];
      int pos = (int)id - (dn->index_vector_dim < id ? 1 : 0);
      S_in[dn->operand_batching_dims.v[i]] = G[pos];
    }
    int64_t In[HLO_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++) {
      int64_t hi = opnd->shape.dims[d] - ins->gather_slice_sizes.v[d];
      int64_t s = S_in[d] < 0 ? 0 : S_in[d] > hi ? hi : S_in[d];
      int64_t off = 0;
      if (!in_list(&dn->collapsed_slice_dims, d) && !in_list(&dn->operand_batching_dims, d))
        off = o[dn->offset_dims.v[j++]];
      In[d] = s + off;
    }
    literal_set_f64(out, e, literal_get_f64(opnd, lin(r, opnd->shape.dims, In)));
    next(orank, ins->shape.dims, o);
  }
  return out;
}

static void gather_vs_ref(const gather_spec *g, hlo_shape out_shape, hlo_literal *opnd, hlo_literal *idx,
                          const double *expect) {
  hlo_instr *ins = mk_gather(g, out_shape, opnd, idx);
  hlo_literal *ops[2] = {opnd, idx}, *got = NULL;
  CHECK_OK(eval_gather(&g_ctx, ins, ops, &got));
  hlo_literal *want = ref_gather(ins, opnd, idx);
  if (got) {
    CHECK(same(got, want));
    if (expect) CHECK(values_are(got, (int)got->n, expect));
  }
  literal_free(got);
  literal_free(want);
}

static hlo_literal *iota_lit(hlo_shape s) {
  hlo_literal *l = lit_make(s);
  for (int64_t i = 0; i < l->n; i++) literal_set_s64(l, i, i);
  return l;
}

static void test_gather(void) {
  setup();
  hlo_literal *m = iota_lit(SHAPE(HLO_F32, 5, 3)); /* row r = {3r, 3r+1, 3r+2} */
  /* GatherV2 axis 0 (rows 3, 0, 3), s32 indices, implicit index vector dim. */
  hlo_literal *rows = LIT(SHAPE(HLO_S32, 3), 3, 0, 3);
  gather_spec axis0 = {.offset_dims = INTS(1), .collapsed = INTS(0), .start_index_map = INTS(0),
                       .slice_sizes = INTS(1, 3), .index_vector_dim = 1};
  gather_vs_ref(&axis0, SHAPE(HLO_F32, 3, 3), m, rows, (double[]){9, 10, 11, 0, 1, 2, 9, 10, 11});
  /* Same with out-of-range indices: clamped to [0, 4]. */
  hlo_literal *wild = LIT(SHAPE(HLO_S64, 2), -7, 1000);
  gather_vs_ref(&axis0, SHAPE(HLO_F32, 2, 3), m, wild, (double[]){0, 1, 2, 12, 13, 14});
  /* GatherV2 axis 1 with u8 indices: columns 2, 0. */
  hlo_literal *cols = LIT(SHAPE(HLO_U8, 2), 2, 0);
  gather_spec axis1 = {.offset_dims = INTS(0), .collapsed = INTS(1), .start_index_map = INTS(1),
                       .slice_sizes = INTS(5, 1), .index_vector_dim = 1};
  gather_vs_ref(&axis1, SHAPE(HLO_F32, 5, 2), m, cols, (double[]){2, 0, 5, 3, 8, 6, 11, 9, 14, 12});
  /* Index matrix [2,2] on axis 0 (index vector dim implicit after it): result [2,2,3]. */
  hlo_literal *rows2 = LIT(SHAPE(HLO_S16, 2, 2), 4, 1, 0, 2);
  gather_spec axis0m = axis0;
  axis0m.offset_dims = INTS(2);
  axis0m.index_vector_dim = 2;
  gather_vs_ref(&axis0m, SHAPE(HLO_F32, 2, 2, 3), m, rows2, NULL);
  /* Slice of 2x2 starting at (r, c) with explicit index vector dim 1, u64 indices
   * including a huge one that must clamp to the last valid start. */
  hlo_literal *starts = lit_make(SHAPE(HLO_U64, 3, 2));
  uint64_t sv[6] = {1, 1, 0, UINT64_MAX, 9, 0};
  memcpy(starts->data, sv, sizeof sv);
  gather_spec win = {.offset_dims = INTS(1, 2), .start_index_map = INTS(0, 1), .slice_sizes = INTS(2, 2),
                     .index_vector_dim = 1};
  gather_vs_ref(&win, SHAPE(HLO_F32, 3, 2, 2), m, starts,
                (double[]){4, 5, 7, 8, 1, 2, 4, 5, 9, 10, 12, 13});
  /* Scalar result: rank-1 index vector picks one element. */
  hlo_literal *pt = LIT(SHAPE(HLO_S32, 2), 2, 1);
  gather_spec scalar = {.offset_dims = NO_INTS, .collapsed = INTS(0, 1), .start_index_map = INTS(0, 1),
                        .slice_sizes = INTS(1, 1), .index_vector_dim = 0};
  gather_vs_ref(&scalar, shape_scalar(HLO_F32), m, pt, (double[]){7});
  literal_free(m);
  literal_free(rows);
  literal_free(wild);
  literal_free(cols);
  literal_free(rows2);
  literal_free(starts);
  literal_free(pt);

  /* gather_nd: operand [4,5,6], indices [2,3,2] -> [2,3,6]; and with the index vector
   * dim first (indices [2,2,3]) and start_index_map reversed. */
  hlo_literal *t = lit_rand(SHAPE(HLO_S32, 4, 5, 6), -100, 100);
  hlo_literal *nd = lit_rand(SHAPE(HLO_S32, 2, 3, 2), -1, 5);
  gather_spec gnd = {.offset_dims = INTS(2), .collapsed = INTS(0, 1), .start_index_map = INTS(0, 1),
                     .slice_sizes = INTS(1, 1, 6), .index_vector_dim = 2};
  gather_vs_ref(&gnd, SHAPE(HLO_S32, 2, 3, 6), t, nd, NULL);
  hlo_literal *nd0 = lit_rand(SHAPE(HLO_S8, 2, 2, 3), -2, 6);
  gather_spec gnd0 = {.offset_dims = INTS(1, 3), .collapsed = INTS(1), .start_index_map = INTS(2, 1),
                      .slice_sizes = INTS(3, 1, 2), .index_vector_dim = 0};
  gather_vs_ref(&gnd0, SHAPE(HLO_S32, 2, 3, 3, 2), t, nd0, NULL);
  /* Batching dims: operand [3(batch),5,4], indices [2,3] (batch is indices dim 1). */
  hlo_literal *bop = lit_rand(SHAPE(HLO_F32, 3, 5, 4), -9, 9);
  hlo_literal *bidx = lit_rand(SHAPE(HLO_S32, 2, 3), -1, 6);
  gather_spec gb = {.offset_dims = INTS(2), .collapsed = INTS(1), .start_index_map = INTS(1),
                    .operand_batching = INTS(0), .indices_batching = INTS(1), .slice_sizes = INTS(1, 1, 4),
                    .index_vector_dim = 2};
  gather_vs_ref(&gb, SHAPE(HLO_F32, 2, 3, 4), bop, bidx, NULL);
  /* Zero-size index batch: empty result. */
  hlo_literal *mm = iota_lit(SHAPE(HLO_F32, 5, 3));
  hlo_literal *none = lit_make(SHAPE(HLO_S32, 0));
  gather_vs_ref(&axis0, SHAPE(HLO_F32, 0, 3), mm, none, NULL);
  /* Empty operand with dims whose product overflows int64: empty result. */
  int64_t huge_dim = (int64_t)1 << 40;
  hlo_literal *huge = lit_make(SHAPE(HLO_F32, 0, huge_dim, huge_dim));
  hlo_literal *hidx = LIT(SHAPE(HLO_S32, 2, 2), 5, 5, 0, 0);
  gather_spec hg = {.offset_dims = INTS(1), .collapsed = INTS(1, 2), .start_index_map = INTS(1, 2),
                    .slice_sizes = INTS(0, 1, 1), .index_vector_dim = 1};
  gather_vs_ref(&hg, SHAPE(HLO_F32, 2, 0), huge, hidx, NULL);
  literal_free(huge);
  literal_free(hidx);
  /* Errors: float indices; slice larger than the operand. */
  hlo_literal *fidx = LIT(SHAPE(HLO_F32, 1), 0), *out = NULL;
  hlo_literal *eops[2] = {mm, fidx};
  CHECK_ERR(eval_gather(&g_ctx, mk_gather(&axis0, SHAPE(HLO_F32, 1, 3), mm, fidx), eops, &out), "integer");
  gather_spec big = axis0;
  big.slice_sizes = INTS(1, 4);
  hlo_literal *i1 = LIT(SHAPE(HLO_S32, 1), 0);
  hlo_literal *bops[2] = {mm, i1};
  CHECK_ERR(eval_gather(&g_ctx, mk_gather(&big, SHAPE(HLO_F32, 1, 4), mm, i1), bops, &out), "slice size");
  literal_free(fidx);
  literal_free(mm);
  literal_free(i1);
  literal_free(none);
  literal_free(t);
  literal_free(nd);
  literal_free(nd0);
  literal_free(bop);
  literal_free(bidx);
  teardown();
}

/* ------------------------------------------------------------------ scatter */

/* A scalar computation (p0, p1[, p2, p3]) -> op. N operands use 2N parameters. */
static hlo_computation *mk_combiner(const char *name, hlo_type t, int n, hlo_opcode op0, hlo_opcode op1) {
  hlo_computation *c = hlo_computation_new(g_mod, name);
  hlo_instr *p[4];
  hlo_shape s = shape_scalar(t);
  for (int i = 0; i < 2 * n; i++) {
    p[i] = hlo_instr_new(c, HLO_OP_PARAMETER, &s, NULL);
    p[i]->parameter_number = i;
  }
  if (hlo_computation_index_params(c)) abort();
  if (n == 1) {
    if (op0 == HLO_OP_PARAMETER) {
      c->root = p[1];
      return c;
    }
    hlo_instr *r = hlo_instr_new(c, op0, &s, NULL);
    hlo_instr_set_operands(r, 2, (hlo_instr *[]){p[0], p[1]});
    c->root = r;
    return c;
  }
  hlo_instr *a, *b;
  if (op0 == HLO_OP_PARAMETER) {
    a = p[2];
    b = p[3];
  } else {
    a = hlo_instr_new(c, op0, &s, NULL);
    hlo_instr_set_operands(a, 2, (hlo_instr *[]){p[0], p[2]});
    b = hlo_instr_new(c, op1, &s, NULL);
    hlo_instr_set_operands(b, 2, (hlo_instr *[]){p[1], p[3]});
  }
  hlo_shape ts = shape_tuple(g_mod->arena, 2, (hlo_shape[]){s, s});
  hlo_instr *tup = hlo_instr_new(c, HLO_OP_TUPLE, &ts, NULL);
  hlo_instr_set_operands(tup, 2, (hlo_instr *[]){a, b});
  c->root = tup;
  return c;
}

typedef struct scatter_spec {
  hlo_ints update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, input_batching,
      indices_batching;
  int64_t index_vector_dim;
} scatter_spec;

static hlo_instr *mk_scatter(const scatter_spec *s, int n, hlo_literal *const *ops, hlo_computation *comb) {
  hlo_shape shape = ops[0]->shape;
  if (n > 1) {
    hlo_shape el[2] = {ops[0]->shape, ops[1]->shape};
    shape = shape_tuple(g_mod->arena, n, el);
  }
  hlo_instr *ins = mk_instr(HLO_OP_SCATTER, shape, 2 * n + 1, ops);
  ins->scatter.update_window_dims = s->update_window_dims;
  ins->scatter.inserted_window_dims = s->inserted_window_dims;
  ins->scatter.scatter_dims_to_operand_dims = s->scatter_dims_to_operand_dims;
  ins->scatter.input_batching_dims = s->input_batching;
  ins->scatter.scatter_indices_batching_dims = s->indices_batching;
  ins->scatter.index_vector_dim = s->index_vector_dim;
  hlo_instr_set_called(ins, 1, &comb);
  return ins;
}

typedef double (*ref_combine)(double old, double upd);
static double comb_add(double a, double b) { return a + b; }
static double comb_assign(double a, double b) { (void)a; return b; }
static double comb_sub(double a, double b) { return a - b; }

/* XLA's scatter pseudo-code, per update index U in row-major order:
 *   update_scatter_dims = dims of U not in update_window_dims; G = U[those];
 *   S = scatter_indices[G with ':' at index_vector_dim]; S_in from
 *   scatter_dims_to_operand_dims and batching dims; W_in[window operand dim j] =
 *   U[update_window_dims[j]]; skip if the whole window at S_in does not fit;
 *   operand[S_in + W_in] = combine(operand[S_in + W_in], updates[U]). */
static hlo_literal *ref_scatter(const hlo_instr *ins, const hlo_literal *opnd, const hlo_literal *idx,
                                const hlo_literal *upd, ref_combine f) {
  const hlo_scatter_dnums *dn = &ins->scatter;
  hlo_literal *out = literal_clone(opnd);
  int r = opnd->shape.rank, ur = upd->shape.rank, ir = idx->shape.rank;
  int64_t u[HLO_MAX_RANK] = {0};
  for (int64_t e = 0; e < upd->n; e++) {
    int64_t G[HLO_MAX_RANK];
    int ng = 0;
    for (int d = 0; d < ur; d++)
      if (!in_list(&dn->update_window_dims, d)) G[ng++] = u[d];
    int64_t S_in[HLO_MAX_RANK] = {0}, W_size[HLO_MAX_RANK], W_in[HLO_MAX_RANK];
    for (int k = 0; k < dn->scatter_dims_to_operand_dims.n; k++) {
      int64_t ii[HLO_MAX_RANK];
      for (int d = 0, j = 0; d < ir; d++) ii[d] = d == dn->index_vector_dim ? k : G[j++];
      S_in[dn->scatter_dims_to_operand_dims.v[k]] = ref_index_value(idx, lin(ir, idx->shape.dims, ii));
    }
    for (int i = 0; i < dn->input_batching_dims.n; i++) {
      int64_t id = dn->scatter_indices_batching_dims.v[i];
      S_in[dn->input_batching_dims.v[i]] = G[(int)id - (dn->index_vector_dim < id ? 1 : 0)];
    }
    for (int d = 0, j = 0; d < r; d++) {
      if (in_list(&dn->inserted_window_dims, d) || in_list(&dn->input_batching_dims, d)) {
        W_size[d] = 1;
        W_in[d] = 0;
      } else {
        int64_t ud = dn->update_window_dims.v[j++];
        W_size[d] = upd->shape.dims[ud];
        W_in[d] = u[ud];
      }
    }
    bool fits = true;
    int64_t In[HLO_MAX_RANK];
    for (int d = 0; d < r; d++) {
      if (S_in[d] < 0 || S_in[d] > opnd->shape.dims[d] - W_size[d]) fits = false;
      In[d] = S_in[d] + W_in[d];
    }
    if (fits) {
      int64_t oi = lin(r, opnd->shape.dims, In);
      literal_set_f64(out, oi, f(literal_get_f64(out, oi), literal_get_f64(upd, e)));
    }
    next(ur, upd->shape.dims, u);
  }
  return out;
}

static hlo_literal *run_scatter(const scatter_spec *s, hlo_literal *opnd, hlo_literal *idx, hlo_literal *upd,
                                hlo_computation *comb) {
  hlo_literal *ops[3] = {opnd, idx, upd}, *got = NULL;
  hlo_instr *ins = mk_scatter(s, 1, ops, comb);
  CHECK_OK(eval_scatter(&g_ctx, ins, ops, &got));
  return got;
}

static void scatter_vs_ref(const scatter_spec *s, hlo_literal *opnd, hlo_literal *idx, hlo_literal *upd,
                           hlo_computation *comb, ref_combine f) {
  hlo_literal *ops[3] = {opnd, idx, upd}, *got = NULL;
  hlo_instr *ins = mk_scatter(s, 1, ops, comb);
  CHECK_OK(eval_scatter(&g_ctx, ins, ops, &got));
  hlo_literal *want = ref_scatter(ins, opnd, idx, upd, f);
  if (got) CHECK(same(got, want));
  literal_free(got);
  literal_free(want);
}

static void test_scatter_hand(void) {
  setup();
  hlo_computation *add = mk_combiner("add", HLO_F32, 1, HLO_OP_ADD, HLO_OP_ADD);
  hlo_computation *assign = mk_combiner("assign", HLO_F32, 1, HLO_OP_PARAMETER, HLO_OP_PARAMETER);
  hlo_computation *sub = mk_combiner("sub", HLO_F32, 1, HLO_OP_SUBTRACT, HLO_OP_SUBTRACT);
  /* Scatter-add with duplicate indices accumulates all of them. */
  hlo_literal *z = lit_make(SHAPE(HLO_F32, 5));
  hlo_literal *i = LIT(SHAPE(HLO_S32, 4), 1, 3, 1, 1);
  hlo_literal *u = LIT(SHAPE(HLO_F32, 4), 1, 2, 3, 4);
  scatter_spec s1 = {.update_window_dims = NO_INTS, .inserted_window_dims = INTS(0),
                     .scatter_dims_to_operand_dims = INTS(0), .index_vector_dim = 1};
  hlo_literal *out = run_scatter(&s1, z, i, u, add);
  CHECK(out && VALUES_ARE(out, 0, 8, 0, 2, 0));
  literal_free(out);
  /* Assign: the last write to an index wins (updates in row-major order). */
  out = run_scatter(&s1, z, i, u, assign);
  CHECK(out && VALUES_ARE(out, 0, 4, 0, 2, 0));
  literal_free(out);
  /* Non-commutative combiner through the generic path: operand - update, in order. */
  out = run_scatter(&s1, z, i, u, sub);
  CHECK(out && VALUES_ARE(out, 0, -8, 0, -2, 0));
  literal_free(out);
  literal_free(z);
  literal_free(i);
  literal_free(u);

  /* Row assign: operand [4,3], rows 2 and 0. */
  hlo_literal *m = iota_lit(SHAPE(HLO_F32, 4, 3));
  hlo_literal *ri = LIT(SHAPE(HLO_S64, 2), 2, 0);
  hlo_literal *ru = LIT(SHAPE(HLO_F32, 2, 3), -1, -2, -3, -4, -5, -6);
  scatter_spec rows = {.update_window_dims = INTS(1), .inserted_window_dims = INTS(0),
                       .scatter_dims_to_operand_dims = INTS(0), .index_vector_dim = 1};
  out = run_scatter(&rows, m, ri, ru, assign);
  CHECK(out && VALUES_ARE(out, -4, -5, -6, 3, 4, 5, -1, -2, -3, 9, 10, 11));
  literal_free(out);
  literal_free(ri);
  literal_free(ru);

  /* Windows of 2 along a dim of 5: start 3 fits; 4, -1 and a huge u64 do not and are
   * skipped whole (element 4 stays untouched even though start 4 is in range). */
  hlo_literal *v = lit_make(SHAPE(HLO_F32, 5));
  hlo_literal *wi = lit_make(SHAPE(HLO_U64, 3, 1));
  uint64_t starts[3] = {3, 4, UINT64_MAX};
  memcpy(wi->data, starts, sizeof starts);
  hlo_literal *wu = LIT(SHAPE(HLO_F32, 3, 2), 1, 2, 10, 20, 100, 200);
  scatter_spec win = {.update_window_dims = INTS(1), .inserted_window_dims = NO_INTS,
                      .scatter_dims_to_operand_dims = INTS(0), .index_vector_dim = 1};
  out = run_scatter(&win, v, wi, wu, add);
  CHECK(out && VALUES_ARE(out, 0, 0, 0, 1, 2));
  literal_free(out);
  hlo_literal *ni = LIT(SHAPE(HLO_S8, 2, 1), -1, 0);
  hlo_literal *nu = LIT(SHAPE(HLO_F32, 2, 2), 7, 7, 5, 6);
  out = run_scatter(&win, v, ni, nu, add);
  CHECK(out && VALUES_ARE(out, 5, 6, 0, 0, 0));
  literal_free(out);
  literal_free(v);
  literal_free(wi);
  literal_free(wu);
  literal_free(ni);
  literal_free(nu);

  /* Integer scatter-add wraps. */
  hlo_computation *iadd = mk_combiner("iadd", HLO_S8, 1, HLO_OP_ADD, HLO_OP_ADD);
  hlo_literal *b = LIT(SHAPE(HLO_S8, 2), 100, 0);
  hlo_literal *bi = LIT(SHAPE(HLO_S32, 2), 0, 0);
  hlo_literal *bu = LIT(SHAPE(HLO_S8, 2), 20, 10);
  out = run_scatter(&s1, b, bi, bu, iadd);
  CHECK(out && ((int8_t *)out->data)[0] == (int8_t)(130 - 256) && ((int8_t *)out->data)[1] == 0);
  literal_free(out);
  literal_free(b);
  literal_free(bi);
  literal_free(bu);

  /* Errors: a combiner of the wrong arity; float indices. */
  hlo_literal *fi = LIT(SHAPE(HLO_F32, 1), 0), *fu = LIT(SHAPE(HLO_F32, 1, 3), 1, 2, 3);
  hlo_literal *fops[3] = {m, fi, fu};
  CHECK_ERR(eval_scatter(&g_ctx, mk_scatter(&rows, 1, fops, add), fops, &out), "integer");
  hlo_literal *gi = LIT(SHAPE(HLO_S32, 1), 0);
  hlo_literal *gops[3] = {m, gi, fu};
  hlo_computation *two = mk_combiner("two", HLO_F32, 2, HLO_OP_ADD, HLO_OP_ADD);
  CHECK_ERR(eval_scatter(&g_ctx, mk_scatter(&rows, 1, gops, two), gops, &out), "parameters");
  literal_free(fi);
  literal_free(fu);
  literal_free(gi);
  literal_free(m);
  teardown();
}

static void test_scatter_variadic(void) {
  setup();
  hlo_literal *a = LIT(SHAPE(HLO_F32, 4), 1, 1, 1, 1);
  hlo_literal *b = LIT(SHAPE(HLO_S32, 4), 0, 0, 0, 0);
  hlo_literal *i = LIT(SHAPE(HLO_S32, 3), 2, 0, 2);
  hlo_literal *ua = LIT(SHAPE(HLO_F32, 3), 10, 20, 30);
  hlo_literal *ub = LIT(SHAPE(HLO_S32, 3), 5, -3, 2);
  hlo_literal *ops[5] = {a, b, i, ua, ub}, *out = NULL;
  scatter_spec s = {.update_window_dims = NO_INTS, .inserted_window_dims = INTS(0),
                    .scatter_dims_to_operand_dims = INTS(0), .index_vector_dim = 1};
  /* (add, max) through the generic path; the combiner's parameter types differ per
   * operand, so it is built by hand. */
  hlo_computation *c = hlo_computation_new(g_mod, "add_max");
  hlo_shape sf = shape_scalar(HLO_F32), si = shape_scalar(HLO_S32);
  hlo_instr *p[4];
  hlo_shape ps[4] = {sf, si, sf, si};
  for (int k = 0; k < 4; k++) {
    p[k] = hlo_instr_new(c, HLO_OP_PARAMETER, &ps[k], NULL);
    p[k]->parameter_number = k;
  }
  CHECK_OK(hlo_computation_index_params(c));
  hlo_instr *sum = hlo_instr_new(c, HLO_OP_ADD, &sf, NULL);
  hlo_instr_set_operands(sum, 2, (hlo_instr *[]){p[0], p[2]});
  hlo_instr *mx = hlo_instr_new(c, HLO_OP_MAXIMUM, &si, NULL);
  hlo_instr_set_operands(mx, 2, (hlo_instr *[]){p[1], p[3]});
  hlo_shape ts = shape_tuple(g_mod->arena, 2, (hlo_shape[]){sf, si});
  hlo_instr *tup = hlo_instr_new(c, HLO_OP_TUPLE, &ts, NULL);
  hlo_instr_set_operands(tup, 2, (hlo_instr *[]){sum, mx});
  c->root = tup;
  CHECK_OK(eval_scatter(&g_ctx, mk_scatter(&s, 2, ops, c), ops, &out));
  CHECK(out && out->shape.type == HLO_TUPLE && out->shape.n_elems == 2);
  if (out && out->shape.type == HLO_TUPLE) {
    CHECK(VALUES_ARE(out->tuple[0], 21, 1, 41, 1));
    CHECK(VALUES_ARE(out->tuple[1], 0, 0, 5, 0));
  }
  literal_free(out);
  /* Variadic assign: recognised without calls; last write wins. */
  hlo_computation *asg = hlo_computation_new(g_mod, "assign2");
  hlo_instr *q[4];
  for (int k = 0; k < 4; k++) {
    q[k] = hlo_instr_new(asg, HLO_OP_PARAMETER, &ps[k], NULL);
    q[k]->parameter_number = k;
  }
  CHECK_OK(hlo_computation_index_params(asg));
  hlo_instr *t2 = hlo_instr_new(asg, HLO_OP_TUPLE, &ts, NULL);
  hlo_instr_set_operands(t2, 2, (hlo_instr *[]){q[2], q[3]});
  asg->root = t2;
  CHECK_OK(eval_scatter(&g_ctx, mk_scatter(&s, 2, ops, asg), ops, &out));
  if (out && out->shape.type == HLO_TUPLE) {
    CHECK(VALUES_ARE(out->tuple[0], 20, 1, 30, 1));
    CHECK(VALUES_ARE(out->tuple[1], -3, 0, 2, 0));
  }
  literal_free(out);
  literal_free(a);
  literal_free(b);
  literal_free(i);
  literal_free(ua);
  literal_free(ub);
  teardown();
}

static void test_scatter_vs_reference(void) {
  setup();
  hlo_computation *add = mk_combiner("add", HLO_F32, 1, HLO_OP_ADD, HLO_OP_ADD);
  hlo_computation *assign = mk_combiner("assign", HLO_F32, 1, HLO_OP_PARAMETER, HLO_OP_PARAMETER);
  hlo_computation *sub = mk_combiner("sub", HLO_F32, 1, HLO_OP_SUBTRACT, HLO_OP_SUBTRACT);
  /* scatter_nd-style: operand [4,5,6], indices [3,2,2] (ivd 2), updates [3,2,6]. */
  hlo_literal *t = lit_rand(SHAPE(HLO_F32, 4, 5, 6), -9, 9);
  hlo_literal *idx = lit_rand(SHAPE(HLO_S32, 3, 2, 2), -1, 5);
  hlo_literal *upd = lit_rand(SHAPE(HLO_F32, 3, 2, 6), -9, 9);
  scatter_spec nd = {.update_window_dims = INTS(2), .inserted_window_dims = INTS(0, 1),
                     .scatter_dims_to_operand_dims = INTS(0, 1), .index_vector_dim = 2};
  scatter_vs_ref(&nd, t, idx, upd, add, comb_add);
  scatter_vs_ref(&nd, t, idx, upd, assign, comb_assign);
  scatter_vs_ref(&nd, t, idx, upd, sub, comb_sub);
  /* Windows with the index vector first and a partial window: operand [4,5,6],
   * indices [2(vector), 3], updates [2, 3, 3] windows over operand dims 0 and 2 with
   * dim 1 inserted; starts partly out of range. */
  hlo_literal *idx2 = lit_rand(SHAPE(HLO_S64, 2, 3), -1, 4);
  hlo_literal *upd2 = lit_rand(SHAPE(HLO_F32, 2, 3, 3), -9, 9);
  scatter_spec w = {.update_window_dims = INTS(0, 2), .inserted_window_dims = INTS(1),
                    .scatter_dims_to_operand_dims = INTS(2, 1), .index_vector_dim = 0};
  scatter_vs_ref(&w, t, idx2, upd2, add, comb_add);
  /* Batching dims: operand [3(batch),5,4], indices [2,3] (batch = indices dim 1),
   * updates [2,3,4]. */
  hlo_literal *bop = lit_rand(SHAPE(HLO_F32, 3, 5, 4), -9, 9);
  hlo_literal *bidx = lit_rand(SHAPE(HLO_U16, 2, 3), 0, 5);
  hlo_literal *bupd = lit_rand(SHAPE(HLO_F32, 2, 3, 4), -9, 9);
  scatter_spec b = {.update_window_dims = INTS(2), .inserted_window_dims = INTS(1),
                    .scatter_dims_to_operand_dims = INTS(1), .input_batching = INTS(0), .indices_batching = INTS(1),
                    .index_vector_dim = 2};
  scatter_vs_ref(&b, bop, bidx, bupd, add, comb_add);
  scatter_vs_ref(&b, bop, bidx, bupd, sub, comb_sub);
  /* Into an empty operand with dims whose product overflows int64: nothing fits. */
  int64_t big = (int64_t)1 << 40;
  hlo_literal *huge = lit_make(SHAPE(HLO_F32, 0, big, big));
  hlo_literal *hidx = LIT(SHAPE(HLO_S32, 2, 3), 0, 5, 5, 0, 0, 0);
  hlo_literal *hupd = LIT(SHAPE(HLO_F32, 2), 1, 2);
  scatter_spec hs = {.update_window_dims = NO_INTS, .inserted_window_dims = INTS(0, 1, 2),
                     .scatter_dims_to_operand_dims = INTS(0, 1, 2), .index_vector_dim = 1};
  scatter_vs_ref(&hs, huge, hidx, hupd, add, comb_add);
  literal_free(huge);
  literal_free(hidx);
  literal_free(hupd);
  /* Empty updates leave the operand unchanged. */
  hlo_literal *eidx = lit_make(SHAPE(HLO_S32, 0, 2, 2)), *eupd = lit_make(SHAPE(HLO_F32, 0, 2, 6));
  scatter_vs_ref(&nd, t, eidx, eupd, add, comb_add);
  literal_free(t);
  literal_free(idx);
  literal_free(upd);
  literal_free(idx2);
  literal_free(upd2);
  literal_free(bop);
  literal_free(bidx);
  literal_free(bupd);
  literal_free(eidx);
  literal_free(eupd);
  teardown();
}

TEST_MAIN(TEST(test_dot_matmul), TEST(test_dot_batched), TEST(test_dot_outer_and_empty),
          TEST(test_dot_integer_wrapping), TEST(test_dot_mixed_types_and_pred), TEST(test_dot_errors),
          TEST(test_conv_hand), TEST(test_conv_vs_reference), TEST(test_conv_layouts_agree), TEST(test_gather),
          TEST(test_scatter_hand), TEST(test_scatter_variadic), TEST(test_scatter_vs_reference))
