/* Unit tests of the evaluator's core: control flow (while, conditional, call, map,
 * tuples), argument checking, unsupported-op errors, and the edge semantics of the
 * elementwise and conversion kernels (integer division/shift/power corner cases,
 * total-order compare, saturating convert, f16/bf16 rounding, reduce-precision,
 * bitcasts, reducer recognition).
 *
 * Modules are built directly through ir.h (no parser). Expected values come from the
 * definitions (worked out in the comments), never from running the code under test. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "check.h"
#include "eval/eval.h"
#include "eval/eval_internal.h"
#include "hlo/ir.h"

/* ------------------------------------------------------------------ helpers ---- */

static hlo_shape arr(hlo_type t, int64_t n) { return shape_make(t, 1, &n); }

static hlo_instr *param(hlo_computation *c, int num, hlo_shape s, const char *name) {
  hlo_instr *p = hlo_instr_new(c, HLO_OP_PARAMETER, &s, name);
  p->parameter_number = num;
  return p;
}

static hlo_instr *op1(hlo_computation *c, hlo_opcode op, hlo_shape s, hlo_instr *a) {
  hlo_instr *i = hlo_instr_new(c, op, &s, NULL);
  hlo_instr_set_operands(i, 1, &a);
  return i;
}

static hlo_instr *op2(hlo_computation *c, hlo_opcode op, hlo_shape s, hlo_instr *a, hlo_instr *b) {
  hlo_instr *ops[2] = {a, b};
  hlo_instr *i = hlo_instr_new(c, op, &s, NULL);
  hlo_instr_set_operands(i, 2, ops);
  return i;
}

static hlo_instr *op3(hlo_computation *c, hlo_opcode op, hlo_shape s, hlo_instr *a, hlo_instr *b, hlo_instr *d) {
  hlo_instr *ops[3] = {a, b, d};
  hlo_instr *i = hlo_instr_new(c, op, &s, NULL);
  hlo_instr_set_operands(i, 3, ops);
  return i;
}

static hlo_literal *lit(hlo_shape s, const void *data) {
  hlo_literal *l = NULL;
  kiln_status st = literal_create(&s, &l);
  if (st) abort();
  if (data) memcpy(l->data, data, (size_t)shape_byte_size(&s));
  return l;
}

static hlo_instr *constant(hlo_computation *c, hlo_shape s, const void *data) {
  hlo_instr *i = hlo_instr_new(c, HLO_OP_CONSTANT, &s, NULL);
  hlo_instr_set_literal(i, lit(s, data));
  return i;
}

static hlo_instr *const_s32(hlo_computation *c, int32_t v) { return constant(c, shape_scalar(HLO_S32), &v); }

static hlo_instr *tuple(hlo_computation *c, int n, hlo_instr **elems) {
  hlo_shape es[8];
  for (int k = 0; k < n; k++) es[k] = elems[k]->shape;
  hlo_shape s = shape_tuple(c->module->arena, n, es);
  hlo_instr *t = hlo_instr_new(c, HLO_OP_TUPLE, &s, NULL);
  hlo_instr_set_operands(t, n, elems);
  return t;
}

static hlo_instr *gte(hlo_computation *c, hlo_instr *t, int idx) {
  hlo_instr *g = hlo_instr_new(c, HLO_OP_GET_TUPLE_ELEMENT, &t->shape.elems[idx], NULL);
  hlo_instr_set_operands(g, 1, &t);
  g->tuple_index = idx;
  return g;
}

static void finish(hlo_computation *c, hlo_instr *root) {
  c->root = root;
  kiln_status st = hlo_computation_index_params(c);
  if (st) abort();
}

static hlo_computation *new_entry(hlo_module *m, const char *name) {
  hlo_computation *c = hlo_computation_new(m, name);
  c->is_entry = true;
  m->entry = c;
  return c;
}

/* Scalar binary computation (p0, p1) -> op(pA, pB). */
static hlo_computation *scalar_binary(hlo_module *m, const char *name, hlo_opcode op, hlo_type t, bool swapped) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *a = param(c, 0, shape_scalar(t), "a");
  hlo_instr *b = param(c, 1, shape_scalar(t), "b");
  finish(c, swapped ? op2(c, op, shape_scalar(t), b, a) : op2(c, op, shape_scalar(t), a, b));
  return c;
}

/* Evaluates a one-instruction module root = op(p0[, p1[, p2]]) on arrays of n
 * elements (operand types given separately) and copies the result out. */
static void run_op(hlo_opcode op, hlo_type rt, int n_ops, const hlo_type *ts, const int64_t *ns, const void *const *in,
                   int64_t n, void *out, void (*tweak)(hlo_instr *)) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c = new_entry(m, "main");
  hlo_instr *p[3];
  hlo_literal *args[3];
  for (int k = 0; k < n_ops; k++) {
    hlo_shape s = ns[k] < 0 ? shape_scalar(ts[k]) : arr(ts[k], ns[k]);
    p[k] = param(c, k, s, NULL);
    args[k] = lit(s, in[k]);
  }
  hlo_shape rs = arr(rt, n);
  hlo_instr *r = n_ops == 1 ? op1(c, op, rs, p[0]) : n_ops == 2 ? op2(c, op, rs, p[0], p[1]) : op3(c, op, rs, p[0], p[1], p[2]);
  if (tweak) tweak(r);
  finish(c, r);
  hlo_literal *res = NULL;
  CHECK_OK(eval_module(m, args, n_ops, &res));
  if (res) {
    CHECK(res->shape.type == rt && res->n == n);
    memcpy(out, res->data, (size_t)n * hlo_type_size(rt));
  }
  literal_free(res);
  for (int k = 0; k < n_ops; k++) literal_free(args[k]);
  hlo_module_free(m);
}

static void run_unary(hlo_opcode op, hlo_type t, hlo_type rt, int64_t n, const void *a, void *out) {
  const void *in[1] = {a};
  hlo_type ts[1] = {t};
  int64_t ns[1] = {n};
  run_op(op, rt, 1, ts, ns, in, n, out, NULL);
}

static void run_binary(hlo_opcode op, hlo_type t, int64_t n, const void *a, const void *b, void *out) {
  const void *in[2] = {a, b};
  hlo_type ts[2] = {t, t};
  int64_t ns[2] = {n, n};
  run_op(op, t, 2, ts, ns, in, n, out, NULL);
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static bool same_f32(float a, float b) { return f32_bits(a) == f32_bits(b); }

/* ------------------------------------------------------------ control flow ---- */

/* while (i < n) { i += 1; acc += 1.0 (elementwise over f32[64]) } */
static void test_while_counts(void) {
  hlo_module *m = hlo_module_new("w");
  hlo_shape s32 = shape_scalar(HLO_S32), vec = arr(HLO_F32, 64);
  hlo_shape elems[3] = {s32, s32, vec};
  hlo_shape st = shape_tuple(m->arena, 3, elems);

  hlo_computation *cond = hlo_computation_new(m, "cond");
  hlo_instr *cp = param(cond, 0, st, "state");
  hlo_instr *lt = op2(cond, HLO_OP_COMPARE, shape_scalar(HLO_PRED), gte(cond, cp, 0), gte(cond, cp, 1));
  lt->direction = HLO_DIR_LT;
  finish(cond, lt);

  hlo_computation *body = hlo_computation_new(m, "body");
  hlo_instr *bp = param(body, 0, st, "state");
  hlo_instr *i1 = op2(body, HLO_OP_ADD, s32, gte(body, bp, 0), const_s32(body, 1));
  float one = 1.0f;
  hlo_instr *onev = op1(body, HLO_OP_BROADCAST, vec, constant(body, shape_scalar(HLO_F32), &one));
  onev->dimensions = hlo_ints_make(m->arena, 0, NULL);
  hlo_instr *acc = op2(body, HLO_OP_ADD, vec, gte(body, bp, 2), onev);
  hlo_instr *be[3] = {i1, gte(body, bp, 1), acc};
  finish(body, tuple(body, 3, be));

  hlo_computation *e = new_entry(m, "main");
  hlo_instr *n = param(e, 0, s32, "n");
  hlo_instr *v = param(e, 1, vec, "v");
  hlo_instr *init_e[3] = {const_s32(e, 0), n, v};
  hlo_instr *init = tuple(e, 3, init_e);
  hlo_instr *w = op1(e, HLO_OP_WHILE, st, init);
  hlo_computation *wc[2] = {cond, body};
  hlo_instr_set_called(w, 2, wc);
  hlo_instr *out_e[2] = {gte(e, w, 0), gte(e, w, 2)};
  finish(e, tuple(e, 2, out_e));

  int32_t count = 1000;
  float zeros[64] = {0};
  hlo_literal *args[2] = {lit(s32, &count), lit(vec, zeros)};
  hlo_literal *r = NULL;
  CHECK_OK(eval_module(m, args, 2, &r));
  if (r) {
    CHECK(r->shape.type == HLO_TUPLE && r->shape.n_elems == 2);
    CHECK(((int32_t *)r->tuple[0]->data)[0] == 1000);
    bool all = true;
    for (int k = 0; k < 64; k++) all &= ((float *)r->tuple[1]->data)[k] == 1000.0f;
    CHECK(all);
  }
  literal_free(r);
  /* the arguments are borrowed: still intact */
  CHECK(((float *)args[1]->data)[0] == 0.0f);
  /* zero iterations returns the initial state */
  count = -5;
  memcpy(args[0]->data, &count, 4);
  CHECK_OK(eval_module(m, args, 2, &r));
  if (r) CHECK(((int32_t *)r->tuple[0]->data)[0] == 0);
  literal_free(r);
  literal_free(args[0]);
  literal_free(args[1]);
  hlo_module_free(m);
}

/* Branch computations: b0(x) = x + 1, b1(x) = x * 2, b2(x) = -x. */
static hlo_computation *branch(hlo_module *m, const char *name, int kind) {
  hlo_shape s = shape_scalar(HLO_S32);
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *x = param(c, 0, s, "x");
  hlo_instr *r = kind == 0   ? op2(c, HLO_OP_ADD, s, x, const_s32(c, 1))
                 : kind == 1 ? op2(c, HLO_OP_MULTIPLY, s, x, const_s32(c, 2))
                             : op1(c, HLO_OP_NEGATE, s, x);
  finish(c, r);
  return c;
}

static int32_t run_conditional(hlo_type sel_type, int n_branches, int32_t sel, int32_t x) {
  hlo_module *m = hlo_module_new("c");
  hlo_computation *br[3];
  for (int k = 0; k < n_branches; k++) br[k] = branch(m, k == 0 ? "b0" : k == 1 ? "b1" : "b2", k);
  hlo_computation *e = new_entry(m, "main");
  hlo_shape s = shape_scalar(HLO_S32);
  hlo_instr *ops[4];
  ops[0] = param(e, 0, shape_scalar(sel_type), "sel");
  hlo_instr *xp = param(e, 1, s, "x");
  for (int k = 0; k < n_branches; k++) ops[k + 1] = xp;
  hlo_instr *cnd = hlo_instr_new(e, HLO_OP_CONDITIONAL, &s, NULL);
  hlo_instr_set_operands(cnd, n_branches + 1, ops);
  hlo_instr_set_called(cnd, n_branches, br);
  finish(e, cnd);
  uint8_t p = sel != 0;
  hlo_literal *args[2] = {sel_type == HLO_PRED ? lit(shape_scalar(HLO_PRED), &p) : lit(s, &sel), lit(s, &x)};
  hlo_literal *r = NULL;
  int32_t v = INT32_MIN;
  CHECK_OK(eval_module(m, args, 2, &r));
  if (r) v = ((int32_t *)r->data)[0];
  literal_free(r);
  literal_free(args[0]);
  literal_free(args[1]);
  hlo_module_free(m);
  return v;
}

static void test_conditional(void) {
  CHECK(run_conditional(HLO_PRED, 2, 1, 10) == 11); /* true -> first branch */
  CHECK(run_conditional(HLO_PRED, 2, 0, 10) == 20);
  CHECK(run_conditional(HLO_S32, 3, 0, 10) == 11);
  CHECK(run_conditional(HLO_S32, 3, 1, 10) == 20);
  CHECK(run_conditional(HLO_S32, 3, 2, 10) == -10);
  CHECK(run_conditional(HLO_S32, 3, 3, 10) == -10);  /* out of range -> last branch */
  CHECK(run_conditional(HLO_S32, 3, -1, 10) == -10); /* negative too */
  CHECK(run_conditional(HLO_S32, 3, INT32_MAX, 7) == -7);
}

/* call f(x, y) = x * y + x, also as fusion, with a tuple/gte round trip around it. */
static void test_call_and_fusion(void) {
  for (int fusion = 0; fusion < 2; fusion++) {
    hlo_module *m = hlo_module_new("k");
    hlo_shape s = arr(HLO_S32, 3);
    hlo_computation *f = hlo_computation_new(m, "f");
    hlo_instr *x = param(f, 0, s, "x"), *y = param(f, 1, s, "y");
    finish(f, op2(f, HLO_OP_ADD, s, op2(f, HLO_OP_MULTIPLY, s, x, y), x));
    hlo_computation *e = new_entry(m, "main");
    hlo_instr *a = param(e, 0, s, "a"), *b = param(e, 1, s, "b");
    hlo_instr *ab[2] = {a, b};
    hlo_instr *call = hlo_instr_new(e, fusion ? HLO_OP_FUSION : HLO_OP_CALL, &s, NULL);
    hlo_instr_set_operands(call, 2, ab);
    hlo_instr_set_called(call, 1, &f);
    finish(e, call);
    int32_t av[3] = {1, 2, -3}, bv[3] = {4, 5, 6};
    hlo_literal *args[2] = {lit(s, av), lit(s, bv)};
    hlo_literal *r = NULL;
    CHECK_OK(eval_module(m, args, 2, &r));
    if (r) {
      int32_t *v = r->data;
      CHECK(v[0] == 5 && v[1] == 12 && v[2] == -21);
    }
    literal_free(r);
    literal_free(args[0]);
    literal_free(args[1]);
    hlo_module_free(m);
  }
}

/* Tuples shared by several users, gte of gte, a tuple element used twice and the
 * whole tuple returned as well: moves must never steal a value someone still sees. */
static void test_tuple_aliasing(void) {
  hlo_module *m = hlo_module_new("t");
  hlo_shape s = arr(HLO_S32, 2);
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *a = param(e, 0, s, "a");
  hlo_instr *b = op2(e, HLO_OP_ADD, s, a, a);
  hlo_instr *inner_e[2] = {a, b};
  hlo_instr *inner = tuple(e, 2, inner_e);
  hlo_instr *outer_e[2] = {inner, b};
  hlo_instr *outer = tuple(e, 2, outer_e);
  hlo_instr *g1 = gte(e, gte(e, outer, 0), 1); /* b */
  hlo_instr *g2 = gte(e, gte(e, outer, 0), 1); /* b again */
  hlo_instr *sum = op2(e, HLO_OP_ADD, s, g1, g2);
  hlo_instr *cp = op1(e, HLO_OP_COPY, s, g1);
  hlo_instr *res_e[4] = {sum, outer, cp, gte(e, outer, 1)};
  finish(e, tuple(e, 4, res_e));
  int32_t av[2] = {3, -4};
  hlo_literal *arg = lit(s, av);
  hlo_literal *r = NULL;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) {
    int32_t *sumv = r->tuple[0]->data;
    CHECK(sumv[0] == 12 && sumv[1] == -16);
    hlo_literal *o = r->tuple[1];
    CHECK(o->shape.type == HLO_TUPLE && o->tuple[0]->shape.type == HLO_TUPLE);
    int32_t *oa = o->tuple[0]->tuple[0]->data, *ob = o->tuple[0]->tuple[1]->data, *o2 = o->tuple[1]->data;
    CHECK(oa[0] == 3 && oa[1] == -4 && ob[0] == 6 && ob[1] == -8 && o2[0] == 6 && o2[1] == -8);
    int32_t *c = r->tuple[2]->data, *d = r->tuple[3]->data;
    CHECK(c[0] == 6 && c[1] == -8 && d[0] == 6 && d[1] == -8);
  }
  literal_free(r);
  CHECK(((int32_t *)arg->data)[0] == 3);
  literal_free(arg);
  hlo_module_free(m);
}

/* The root may be a parameter, a constant or a gte of a parameter: all come back as
 * independent copies. */
static void test_root_borrowed(void) {
  hlo_module *m = hlo_module_new("r");
  hlo_shape s = shape_scalar(HLO_S32);
  hlo_shape el[2] = {s, s};
  hlo_shape ts = shape_tuple(m->arena, 2, el);
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *p = param(e, 0, ts, "p");
  finish(e, gte(e, p, 1));
  int32_t v0 = 5, v1 = 9;
  hlo_literal *els[2] = {lit(s, &v0), lit(s, &v1)};
  hlo_literal *arg = literal_tuple(2, els);
  hlo_literal *r = NULL;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) CHECK(((int32_t *)r->data)[0] == 9 && r != arg->tuple[1]);
  literal_free(r);
  e->root = p;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) CHECK(r != arg && literal_equal(r, arg));
  literal_free(r);
  literal_free(arg);
  hlo_module_free(m);
}

/* map with a recognised reducer (fast path) and with a generic computation. */
static void test_map(void) {
  hlo_module *m = hlo_module_new("map");
  hlo_shape s = arr(HLO_F32, 4);
  hlo_computation *add = scalar_binary(m, "add", HLO_OP_ADD, HLO_F32, false);
  /* g(x, y) = x * x - y */
  hlo_computation *g = hlo_computation_new(m, "g");
  hlo_shape sc = shape_scalar(HLO_F32);
  hlo_instr *gx = param(g, 0, sc, "x"), *gy = param(g, 1, sc, "y");
  finish(g, op2(g, HLO_OP_SUBTRACT, sc, op2(g, HLO_OP_MULTIPLY, sc, gx, gx), gy));
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *a = param(e, 0, s, "a"), *b = param(e, 1, s, "b");
  hlo_instr *ab[2] = {a, b};
  hlo_instr *m1 = hlo_instr_new(e, HLO_OP_MAP, &s, NULL);
  hlo_instr_set_operands(m1, 2, ab);
  hlo_instr_set_called(m1, 1, &add);
  hlo_instr *m2 = hlo_instr_new(e, HLO_OP_MAP, &s, NULL);
  hlo_instr_set_operands(m2, 2, ab);
  hlo_instr_set_called(m2, 1, &g);
  hlo_instr *both[2] = {m1, m2};
  finish(e, tuple(e, 2, both));
  float av[4] = {1, 2, 3, -4}, bv[4] = {0.5f, -1, 10, 2};
  hlo_literal *args[2] = {lit(s, av), lit(s, bv)};
  hlo_literal *r = NULL;
  CHECK_OK(eval_module(m, args, 2, &r));
  if (r) {
    float *x = r->tuple[0]->data, *y = r->tuple[1]->data;
    CHECK(x[0] == 1.5f && x[1] == 1.0f && x[2] == 13.0f && x[3] == -2.0f);
    CHECK(y[0] == 0.5f && y[1] == 5.0f && y[2] == -1.0f && y[3] == 14.0f);
  }
  literal_free(r);
  literal_free(args[0]);
  literal_free(args[1]);
  hlo_module_free(m);
}

/* ----------------------------------------------------------------- errors ----- */

static void test_argument_errors(void) {
  hlo_module *m = hlo_module_new("a");
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *x = param(e, 0, arr(HLO_F32, 2), "x");
  hlo_instr *y = param(e, 1, arr(HLO_F32, 2), "y");
  finish(e, op2(e, HLO_OP_ADD, arr(HLO_F32, 2), x, y));
  float fv[2] = {1, 2};
  int32_t iv[2] = {1, 2};
  hlo_literal *good = lit(arr(HLO_F32, 2), fv), *wrong_type = lit(arr(HLO_S32, 2), iv);
  hlo_literal *wrong_dims = lit(arr(HLO_F32, 3), NULL);
  hlo_literal *r = NULL;
  hlo_literal *one[1] = {good};
  CHECK_ERR(eval_module(m, one, 1, &r), "takes 2 arguments, given 1");
  CHECK(r == NULL);
  hlo_literal *bad_t[2] = {good, wrong_type};
  kiln_status st = eval_module(m, bad_t, 2, &r);
  CHECK(st && kiln_status_code(st) == KILN_INVALID_ARGUMENT);
  kiln_status_free(st);
  CHECK_ERR(eval_module(m, bad_t, 2, &r), "argument 1 (parameter y): expected f32[2], given s32[2]");
  hlo_literal *bad_d[2] = {wrong_dims, good};
  CHECK_ERR(eval_module(m, bad_d, 2, &r), "argument 0 (parameter x): expected f32[2], given f32[3]");
  literal_free(good);
  literal_free(wrong_type);
  literal_free(wrong_dims);
  hlo_module_free(m);
}

static void test_unsupported_ops(void) {
  hlo_module *m = hlo_module_new("u");
  hlo_computation *e = new_entry(m, "main");
  hlo_shape s = arr(HLO_F32, 2);
  hlo_instr *x = param(e, 0, s, "x");
  hlo_instr *cc = op1(e, HLO_OP_CUSTOM_CALL, s, x);
  cc->custom_call_target = "MyKernel";
  finish(e, cc);
  hlo_literal *arg = lit(s, NULL), *r = NULL;
  kiln_status st = eval_module(m, &arg, 1, &r);
  CHECK(st && kiln_status_code(st) == KILN_UNIMPLEMENTED);
  kiln_status_free(st);
  CHECK_ERR(eval_module(m, &arg, 1, &r), "custom-call target \"MyKernel\" is not supported by the evaluator");
  CHECK(!eval_supports(cc));
  hlo_instr *rng = op2(e, HLO_OP_RNG, s, x, x);
  e->root = rng;
  CHECK_ERR(eval_module(m, &arg, 1, &r), "nondeterministic");
  CHECK(!eval_supports(rng));
  hlo_instr *ar = op1(e, HLO_OP_ALL_REDUCE, s, x);
  e->root = ar;
  CHECK_ERR(eval_module(m, &arg, 1, &r), "all-reduce");
  hlo_instr *fft = op1(e, HLO_OP_FFT, s, x);
  e->root = fft;
  CHECK_ERR(eval_module(m, &arg, 1, &r), "fft");
  CHECK(eval_supports(x) && eval_supports(op2(e, HLO_OP_ADD, s, x, x)));
  /* dead unsupported instructions are never run */
  e->root = op1(e, HLO_OP_NEGATE, s, x);
  CHECK_OK(eval_module(m, &arg, 1, &r));
  literal_free(r);
  literal_free(arg);
  hlo_module_free(m);
}

/* An error raised deep inside a loop (iteration 5, inside a conditional branch) comes
 * out with context and leaks nothing (LeakSanitizer checks the latter in CI). */
static void test_error_inside_loop(void) {
  hlo_module *m = hlo_module_new("e");
  hlo_shape s32 = shape_scalar(HLO_S32), pred = shape_scalar(HLO_PRED);
  hlo_computation *ok_br = hlo_computation_new(m, "ok");
  finish(ok_br, param(ok_br, 0, s32, "x"));
  hlo_computation *bad_br = hlo_computation_new(m, "bad");
  hlo_instr *bx = param(bad_br, 0, s32, "x");
  hlo_instr *cc = op1(bad_br, HLO_OP_CUSTOM_CALL, s32, bx);
  cc->custom_call_target = "Boom";
  finish(bad_br, cc);
  hlo_computation *cond = hlo_computation_new(m, "cond");
  hlo_instr *ci = param(cond, 0, s32, "i");
  hlo_instr *lt = op2(cond, HLO_OP_COMPARE, pred, ci, const_s32(cond, 100));
  lt->direction = HLO_DIR_LT;
  finish(cond, lt);
  hlo_computation *body = hlo_computation_new(m, "body");
  hlo_instr *bi = param(body, 0, s32, "i");
  hlo_instr *is5 = op2(body, HLO_OP_COMPARE, pred, bi, const_s32(body, 5));
  is5->direction = HLO_DIR_EQ;
  hlo_instr *cops[3] = {is5, bi, bi};
  hlo_instr *cnd = hlo_instr_new(body, HLO_OP_CONDITIONAL, &s32, NULL);
  hlo_instr_set_operands(cnd, 3, cops);
  hlo_computation *brs[2] = {bad_br, ok_br};
  hlo_instr_set_called(cnd, 2, brs);
  finish(body, op2(body, HLO_OP_ADD, s32, cnd, const_s32(body, 1)));
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *w = op1(e, HLO_OP_WHILE, s32, const_s32(e, 0));
  hlo_computation *wc[2] = {cond, body};
  hlo_instr_set_called(w, 2, wc);
  finish(e, w);
  hlo_literal *r = NULL;
  kiln_status st = eval_module(m, NULL, 0, &r);
  CHECK(st != NULL && r == NULL);
  if (st) {
    const char *msg = kiln_status_message(st);
    CHECK(strstr(msg, "Boom") && strstr(msg, "body") && strstr(msg, "while"));
    kiln_status_free(st);
  }
  hlo_module_free(m);
}

/* A computation that calls itself hits the nesting limit instead of the C stack. */
static void test_recursion_limit(void) {
  hlo_module *m = hlo_module_new("rec");
  hlo_shape s = shape_scalar(HLO_S32);
  hlo_computation *e = new_entry(m, "main");
  hlo_instr *x = param(e, 0, s, "x");
  hlo_instr *call = op1(e, HLO_OP_CALL, s, x);
  hlo_instr_set_called(call, 1, &e);
  finish(e, call);
  int32_t v = 1;
  hlo_literal *arg = lit(s, &v), *r = NULL;
  CHECK_ERR(eval_module(m, &arg, 1, &r), "nested more than 512");
  literal_free(arg);
  hlo_module_free(m);
}

/* --------------------------------------------------------- integer edges ------ */

static void test_int_divide_remainder(void) {
  int32_t a[6] = {7, -7, 7, INT32_MIN, INT32_MIN, -7};
  int32_t b[6] = {0, 0, -2, -1, 1, 2};
  int32_t q[6], r[6];
  run_binary(HLO_OP_DIVIDE, HLO_S32, 6, a, b, q);
  run_binary(HLO_OP_REMAINDER, HLO_S32, 6, a, b, r);
  /* x/0 = -1; INT_MIN/-1 = INT_MIN; otherwise C truncation */
  CHECK(q[0] == -1 && q[1] == -1 && q[2] == -3 && q[3] == INT32_MIN && q[4] == INT32_MIN && q[5] == -3);
  /* x%0 = x; INT_MIN%-1 = 0; sign follows the dividend */
  CHECK(r[0] == 7 && r[1] == -7 && r[2] == 1 && r[3] == 0 && r[4] == 0 && r[5] == -1);
  int8_t a8[3] = {-128, 100, -128}, b8[3] = {-1, 0, 3}, q8[3], r8[3];
  run_binary(HLO_OP_DIVIDE, HLO_S8, 3, a8, b8, q8);
  run_binary(HLO_OP_REMAINDER, HLO_S8, 3, a8, b8, r8);
  CHECK(q8[0] == -128 && q8[1] == -1 && q8[2] == -42);
  CHECK(r8[0] == 0 && r8[1] == 100 && r8[2] == -2);
  uint32_t ua[3] = {5, 0, 4000000000u}, ub[3] = {0, 0, 3}, uq[3], ur[3];
  run_binary(HLO_OP_DIVIDE, HLO_U32, 3, ua, ub, uq);
  run_binary(HLO_OP_REMAINDER, HLO_U32, 3, ua, ub, ur);
  CHECK(uq[0] == UINT32_MAX && uq[1] == UINT32_MAX && uq[2] == 1333333333u);
  CHECK(ur[0] == 5 && ur[1] == 0 && ur[2] == 1);
  int64_t a64[2] = {INT64_MIN, 9}, b64[2] = {-1, 0}, q64[2];
  run_binary(HLO_OP_DIVIDE, HLO_S64, 2, a64, b64, q64);
  CHECK(q64[0] == INT64_MIN && q64[1] == -1);
}

static void test_int_shifts(void) {
  int32_t a[8] = {1, 1, 1, -8, 8, -8, -8, 1};
  int32_t b[8] = {31, 32, -1, 40, 40, 1, 2, 0};
  int32_t shl[8], sra[8], srl[8];
  run_binary(HLO_OP_SHIFT_LEFT, HLO_S32, 8, a, b, shl);
  run_binary(HLO_OP_SHIFT_RIGHT_ARITHMETIC, HLO_S32, 8, a, b, sra);
  run_binary(HLO_OP_SHIFT_RIGHT_LOGICAL, HLO_S32, 8, a, b, srl);
  CHECK(shl[0] == INT32_MIN && shl[1] == 0 && shl[2] == 0 && shl[3] == 0 && shl[5] == -16 && shl[7] == 1);
  /* out of range (>= 32, or negative read as unsigned): sign fill / zero */
  CHECK(sra[2] == 0 && sra[3] == -1 && sra[4] == 0 && sra[5] == -4 && sra[6] == -2);
  CHECK(srl[1] == 0 && srl[3] == 0 && srl[5] == 0x7ffffffc && srl[6] == 0x3ffffffe);
  /* arithmetic shift of an unsigned type fills with its top bit */
  uint8_t ua[3] = {0x80, 0x80, 0x40}, ub[3] = {1, 9, 1}, ur[3];
  run_binary(HLO_OP_SHIFT_RIGHT_ARITHMETIC, HLO_U8, 3, ua, ub, ur);
  CHECK(ur[0] == 0xc0 && ur[1] == 0xff && ur[2] == 0x20);
  uint16_t sa[2] = {0xffff, 0xffff}, sb[2] = {15, 16}, sr[2];
  run_binary(HLO_OP_SHIFT_LEFT, HLO_U16, 2, sa, sb, sr);
  CHECK(sr[0] == 0x8000 && sr[1] == 0);
  int64_t la[2] = {1, -1}, lb[2] = {63, 64}, lr[2];
  run_binary(HLO_OP_SHIFT_LEFT, HLO_S64, 2, la, lb, lr);
  CHECK(lr[0] == INT64_MIN && lr[1] == 0);
}

static void test_int_unary_and_wrap(void) {
  int32_t a[4] = {INT32_MIN, -5, 0, 7}, r[4];
  run_unary(HLO_OP_ABS, HLO_S32, HLO_S32, 4, a, r);
  CHECK(r[0] == INT32_MIN && r[1] == 5 && r[2] == 0 && r[3] == 7);
  run_unary(HLO_OP_NEGATE, HLO_S32, HLO_S32, 4, a, r);
  CHECK(r[0] == INT32_MIN && r[1] == 5 && r[2] == 0 && r[3] == -7);
  run_unary(HLO_OP_SIGN, HLO_S32, HLO_S32, 4, a, r);
  CHECK(r[0] == -1 && r[1] == -1 && r[2] == 0 && r[3] == 1);
  run_unary(HLO_OP_NOT, HLO_S32, HLO_S32, 4, a, r);
  CHECK(r[0] == INT32_MAX && r[1] == 4 && r[2] == -1 && r[3] == -8);
  int32_t pc_in[4] = {-1, 0, 1, 0x00f0f0f0}, pc[4], clz[4];
  run_unary(HLO_OP_POPCNT, HLO_S32, HLO_S32, 4, pc_in, pc);
  run_unary(HLO_OP_CLZ, HLO_S32, HLO_S32, 4, pc_in, clz);
  CHECK(pc[0] == 32 && pc[1] == 0 && pc[2] == 1 && pc[3] == 12);
  CHECK(clz[0] == 0 && clz[1] == 32 && clz[2] == 31 && clz[3] == 8);
  uint8_t u8[3] = {0, 1, 0x80}, u8r[3];
  run_unary(HLO_OP_CLZ, HLO_U8, HLO_U8, 3, u8, u8r);
  CHECK(u8r[0] == 8 && u8r[1] == 7 && u8r[2] == 0);
  run_unary(HLO_OP_NOT, HLO_U8, HLO_U8, 3, u8, u8r);
  CHECK(u8r[0] == 0xff && u8r[1] == 0xfe && u8r[2] == 0x7f);
  int8_t s8a[3] = {127, -128, 100}, s8b[3] = {1, -1, 100}, s8r[3];
  run_binary(HLO_OP_ADD, HLO_S8, 3, s8a, s8b, s8r);
  CHECK(s8r[0] == -128 && s8r[1] == 127 && s8r[2] == -56); /* 200 - 256 */
  uint16_t ma[2] = {65535, 300}, mb[2] = {65535, 300}, mr[2];
  run_binary(HLO_OP_MULTIPLY, HLO_U16, 2, ma, mb, mr);
  CHECK(mr[0] == 1 && mr[1] == (uint16_t)(90000 - 65536)); /* (2^16-1)^2 = 1 mod 2^16 */
  int64_t xa[1] = {INT64_MAX}, xb[1] = {1}, xr[1];
  run_binary(HLO_OP_ADD, HLO_S64, 1, xa, xb, xr);
  CHECK(xr[0] == INT64_MIN);
  int8_t sgn[3] = {-128, 0, 5}, sgr[3];
  run_unary(HLO_OP_SIGN, HLO_S8, HLO_S8, 3, sgn, sgr);
  CHECK(sgr[0] == -1 && sgr[1] == 0 && sgr[2] == 1);
}

static void test_int_power(void) {
  int32_t a[9] = {2, -2, 3, 1, -1, 0, 5, -1, 3};
  int32_t b[9] = {10, 3, -1, -5, -1, 0, 0, 2, 40};
  int32_t r[9];
  run_binary(HLO_OP_POWER, HLO_S32, 9, a, b, r);
  /* 3^40 mod 2^32 by repeated multiplication, independently */
  uint32_t p = 1;
  for (int i = 0; i < 40; i++) p *= 3u;
  CHECK(r[0] == 1024 && r[1] == -8 && r[2] == 0 && r[3] == 1);
  CHECK(r[4] == 0); /* XLA: a negative exponent gives 0 unless the base is 1 */
  CHECK(r[5] == 1 && r[6] == 1 && r[7] == 1 && r[8] == (int32_t)p);
  uint8_t ua[2] = {2, 3}, ub[2] = {8, 5}, ur[2];
  run_binary(HLO_OP_POWER, HLO_U8, 2, ua, ub, ur);
  CHECK(ur[0] == 0 && ur[1] == 243);
}

/* --------------------------------------------------------- float semantics ---- */

static void test_float_max_min_sign_round(void) {
  float qnan = bits_f32(0x7fc00001), qnan2 = bits_f32(0xffc00002);
  float a[6] = {qnan, 1.0f, -0.0f, 0.0f, qnan, -INFINITY};
  float b[6] = {1.0f, qnan2, 0.0f, -0.0f, qnan2, 2.0f};
  float mx[6], mn[6];
  run_binary(HLO_OP_MAXIMUM, HLO_F32, 6, a, b, mx);
  run_binary(HLO_OP_MINIMUM, HLO_F32, 6, a, b, mn);
  /* NaN wins (the left one first); ties keep the left operand */
  CHECK(same_f32(mx[0], qnan) && same_f32(mx[1], qnan2) && same_f32(mx[2], -0.0f) && same_f32(mx[3], 0.0f));
  CHECK(same_f32(mx[4], qnan) && mx[5] == 2.0f);
  CHECK(same_f32(mn[0], qnan) && same_f32(mn[1], qnan2) && same_f32(mn[2], -0.0f) && same_f32(mn[3], 0.0f));
  CHECK(mn[5] == -INFINITY);
  /* NaN arithmetic: the first NaN operand survives, quieted; inf - inf makes a NaN */
  float na[3] = {qnan, bits_f32(0x7f800001), INFINITY}, nb[3] = {qnan2, 1.0f, INFINITY}, nr[3], nr2[3];
  run_binary(HLO_OP_ADD, HLO_F32, 3, na, nb, nr);
  run_binary(HLO_OP_SUBTRACT, HLO_F32, 3, nb, na, nr2);
  CHECK(f32_bits(nr[0]) == 0x7fc00001 && f32_bits(nr[1]) == 0x7fc00001 && nr[2] == INFINITY);
  CHECK(f32_bits(nr2[0]) == 0xffc00002 && f32_bits(nr2[1]) == 0x7fc00001 && isnan(nr2[2]));
  float sv[5] = {-0.0f, 0.0f, -3.5f, NAN, INFINITY}, sr[5];
  run_unary(HLO_OP_SIGN, HLO_F32, HLO_F32, 5, sv, sr);
  CHECK(same_f32(sr[0], -0.0f) && same_f32(sr[1], 0.0f) && sr[2] == -1.0f && isnan(sr[3]) && sr[4] == 1.0f);
  float rv[6] = {2.5f, -2.5f, 0.5f, 1.5f, -0.5f, 3.4999998f}, re[6], ra[6];
  run_unary(HLO_OP_ROUND_NEAREST_EVEN, HLO_F32, HLO_F32, 6, rv, re);
  run_unary(HLO_OP_ROUND_NEAREST_AFZ, HLO_F32, HLO_F32, 6, rv, ra);
  CHECK(re[0] == 2.0f && re[1] == -2.0f && same_f32(re[2], 0.0f) && re[3] == 2.0f && same_f32(re[4], -0.0f));
  CHECK(re[5] == 3.0f);
  CHECK(ra[0] == 3.0f && ra[1] == -3.0f && ra[2] == 1.0f && ra[3] == 2.0f && ra[4] == -1.0f && ra[5] == 3.0f);
  float lg[3] = {-200.0f, 0.0f, 200.0f}, lr[3];
  run_unary(HLO_OP_LOGISTIC, HLO_F32, HLO_F32, 3, lg, lr);
  CHECK(lr[0] == 0.0f && lr[1] == 0.5f && lr[2] == 1.0f);
  /* f32 arithmetic is IEEE single: 1 + 2^-24 rounds to 1 (no double intermediate) */
  float x1[2] = {1.0f, 16777216.0f}, x2[2] = {0x1p-24f, 1.0f}, xs[2];
  run_binary(HLO_OP_ADD, HLO_F32, 2, x1, x2, xs);
  CHECK(xs[0] == 1.0f && xs[1] == 16777216.0f);
  /* integer-valued remainder and power */
  float pa[3] = {-7.0f, 0.0f, 2.0f}, pb[3] = {2.0f, 0.0f, -1.0f}, pr[3], fr[3];
  run_binary(HLO_OP_POWER, HLO_F32, 3, pa, pb, pr);
  run_binary(HLO_OP_REMAINDER, HLO_F32, 3, pa, pb, fr);
  CHECK(pr[0] == 49.0f && pr[1] == 1.0f && pr[2] == 0.5f);
  CHECK(fr[0] == -1.0f && isnan(fr[1]) && fr[2] == 0.0f);
}

/* f16/bf16 compute in float and round once: results derived from the definitions. */
static void test_half_arithmetic(void) {
  /* f16: 1 + 2^-11 is a tie between 1 and 1+2^-10 -> even (1); (1+2^-10) + 2^-11 is a
   * tie between 1+2^-10 and 1+2^-9 -> even (1+2^-9 = 0x3c02); 65504 + 16 = 65520 ties
   * to infinity; 65504 + 15 rounds back to 65504. */
  uint16_t a[4] = {0x3c00, 0x3c01, 0x7bff, 0x7bff};
  uint16_t b[4] = {0x1000, 0x1000, 0x4c00, 0x4b80}; /* 2^-11, 2^-11, 16, 15 */
  uint16_t r[4];
  run_binary(HLO_OP_ADD, HLO_F16, 4, a, b, r);
  CHECK(r[0] == 0x3c00 && r[1] == 0x3c02 && r[2] == 0x7c00 && r[3] == 0x7bff);
  /* bf16: 1 + 2^-8 ties to 1; (1+2^-7) + 2^-8 ties up to 1+2^-6 (0x3f82) */
  uint16_t ba[2] = {0x3f80, 0x3f81}, bb[2] = {0x3b80, 0x3b80}, br[2];
  run_binary(HLO_OP_ADD, HLO_BF16, 2, ba, bb, br);
  CHECK(br[0] == 0x3f80 && br[1] == 0x3f82);
  /* sqrt(2) in f16: 1.41421356 -> nearest f16 is 1 + 424/1024 = 1.4140625 (0x3da8) */
  uint16_t two = 0x4000, s;
  run_unary(HLO_OP_SQRT, HLO_F16, HLO_F16, 1, &two, &s);
  CHECK(s == 0x3da8);
  uint16_t fin[4] = {0x7c00, 0x7e00, 0x7bff, 0x8000};
  uint8_t fr[4];
  run_unary(HLO_OP_IS_FINITE, HLO_F16, HLO_PRED, 4, fin, fr);
  CHECK(fr[0] == 0 && fr[1] == 0 && fr[2] == 1 && fr[3] == 1);
}

/* ----------------------------------------------------------------- compare ---- */

static hlo_compare_type cmp_type_arg;
static hlo_direction cmp_dir_arg;
static void set_cmp(hlo_instr *i) {
  i->direction = cmp_dir_arg;
  i->compare_type = cmp_type_arg;
}

static void run_compare(hlo_type t, hlo_direction dir, hlo_compare_type ct, int64_t n, const void *a, const void *b,
                        uint8_t *out) {
  const void *in[2] = {a, b};
  hlo_type ts[2] = {t, t};
  int64_t ns[2] = {n, n};
  cmp_dir_arg = dir;
  cmp_type_arg = ct;
  run_op(HLO_OP_COMPARE, HLO_PRED, 2, ts, ns, in, n, out, set_cmp);
}

static void test_compare_total_order(void) {
  /* ascending in total order: -NaN < -inf < -1 < -min_subnormal < -0 < +0 < 1 < inf < NaN */
  uint32_t bits[9] = {0xffc00000, 0xff800000, 0xbf800000, 0x80000001, 0x80000000,
                      0x00000000, 0x3f800000, 0x7f800000, 0x7fc00000};
  float v[9];
  for (int i = 0; i < 9; i++) v[i] = bits_f32(bits[i]);
  float a[81], b[81];
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < 9; j++) a[i * 9 + j] = v[i], b[i * 9 + j] = v[j];
  uint8_t lt[81], eq[81], ge[81];
  run_compare(HLO_F32, HLO_DIR_LT, HLO_CMP_TOTALORDER, 81, a, b, lt);
  run_compare(HLO_F32, HLO_DIR_EQ, HLO_CMP_TOTALORDER, 81, a, b, eq);
  run_compare(HLO_F32, HLO_DIR_GE, HLO_CMP_TOTALORDER, 81, a, b, ge);
  int bad = 0;
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < 9; j++) {
      bad += lt[i * 9 + j] != (i < j);
      bad += eq[i * 9 + j] != (i == j);
      bad += ge[i * 9 + j] != (i >= j);
    }
  CHECK(bad == 0);
  /* IEEE (default): NaN is unordered, -0 == +0 */
  float ia[4] = {NAN, NAN, -0.0f, 1.0f}, ib[4] = {NAN, 1.0f, 0.0f, NAN};
  uint8_t ieq[4], ine[4], ilt[4], ige[4];
  run_compare(HLO_F32, HLO_DIR_EQ, HLO_CMP_DEFAULT, 4, ia, ib, ieq);
  run_compare(HLO_F32, HLO_DIR_NE, HLO_CMP_FLOAT, 4, ia, ib, ine);
  run_compare(HLO_F32, HLO_DIR_LT, HLO_CMP_DEFAULT, 4, ia, ib, ilt);
  run_compare(HLO_F32, HLO_DIR_GE, HLO_CMP_DEFAULT, 4, ia, ib, ige);
  CHECK(ieq[0] == 0 && ieq[1] == 0 && ieq[2] == 1 && ieq[3] == 0);
  CHECK(ine[0] == 1 && ine[1] == 1 && ine[2] == 0 && ine[3] == 1);
  CHECK(ilt[0] == 0 && ilt[1] == 0 && ilt[2] == 0 && ilt[3] == 0);
  CHECK(ige[0] == 0 && ige[1] == 0 && ige[2] == 1 && ige[3] == 0);
  /* total order in the other float types: -NaN < -0 < +0 < NaN */
  uint16_t h[4] = {0xfe00, 0x8000, 0x0000, 0x7e00}, hb[4] = {0xffc0, 0x8000, 0x0000, 0x7fc0};
  uint16_t ha[16], hbb[16], ba[16], bbb[16];
  double d[4] = {-NAN, -0.0, 0.0, NAN}, da[16], db[16];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      ha[i * 4 + j] = h[i], hbb[i * 4 + j] = h[j];
      ba[i * 4 + j] = hb[i], bbb[i * 4 + j] = hb[j];
      da[i * 4 + j] = d[i], db[i * 4 + j] = d[j];
    }
  uint8_t r16[16], rb[16], r64[16];
  run_compare(HLO_F16, HLO_DIR_LT, HLO_CMP_TOTALORDER, 16, ha, hbb, r16);
  run_compare(HLO_BF16, HLO_DIR_LT, HLO_CMP_TOTALORDER, 16, ba, bbb, rb);
  run_compare(HLO_F64, HLO_DIR_LT, HLO_CMP_TOTALORDER, 16, da, db, r64);
  bad = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) bad += (r16[i * 4 + j] != (i < j)) + (rb[i * 4 + j] != (i < j)) + (r64[i * 4 + j] != (i < j));
  CHECK(bad == 0);
}

static void test_compare_ints(void) {
  int32_t a[3] = {-1, 5, INT32_MIN}, b[3] = {1, 5, INT32_MAX};
  uint8_t lt[3], le[3], gt[3];
  run_compare(HLO_S32, HLO_DIR_LT, HLO_CMP_DEFAULT, 3, a, b, lt);
  run_compare(HLO_S32, HLO_DIR_LE, HLO_CMP_SIGNED, 3, a, b, le);
  CHECK(lt[0] == 1 && lt[1] == 0 && lt[2] == 1 && le[1] == 1);
  uint32_t ua[2] = {0xffffffffu, 0}, ub[2] = {1, 0};
  run_compare(HLO_U32, HLO_DIR_GT, HLO_CMP_UNSIGNED, 2, ua, ub, gt);
  CHECK(gt[0] == 1 && gt[1] == 0);
  uint8_t pa[4] = {0, 0, 1, 1}, pb[4] = {0, 1, 0, 1}, plt[4];
  run_compare(HLO_PRED, HLO_DIR_LT, HLO_CMP_DEFAULT, 4, pa, pb, plt);
  CHECK(plt[0] == 0 && plt[1] == 1 && plt[2] == 0 && plt[3] == 0); /* false < true */
}

/* ---------------------------------------------------- select / clamp ---------- */

static void test_select_clamp_scalars(void) {
  /* select with a scalar predicate */
  uint8_t p = 0;
  int32_t x[3] = {1, 2, 3}, y[3] = {7, 8, 9}, r[3];
  const void *in[3] = {&p, x, y};
  hlo_type ts[3] = {HLO_PRED, HLO_S32, HLO_S32};
  int64_t ns[3] = {-1, 3, 3};
  run_op(HLO_OP_SELECT, HLO_S32, 3, ts, ns, in, 3, r, NULL);
  CHECK(r[0] == 7 && r[1] == 8 && r[2] == 9);
  uint8_t pv[3] = {1, 0, 1};
  const void *in2[3] = {pv, x, y};
  int64_t ns2[3] = {3, 3, 3};
  run_op(HLO_OP_SELECT, HLO_S32, 3, ts, ns2, in2, 3, r, NULL);
  CHECK(r[0] == 1 && r[1] == 8 && r[2] == 3);
  /* clamp with scalar bounds */
  float lo = -1.0f, hi = 2.0f, v[5] = {-5.0f, 0.5f, 7.0f, NAN, -0.0f}, cr[5];
  const void *cin[3] = {&lo, v, &hi};
  hlo_type cts[3] = {HLO_F32, HLO_F32, HLO_F32};
  int64_t cns[3] = {-1, 5, -1};
  run_op(HLO_OP_CLAMP, HLO_F32, 3, cts, cns, cin, 5, cr, NULL);
  CHECK(cr[0] == -1.0f && cr[1] == 0.5f && cr[2] == 2.0f && isnan(cr[3]) && same_f32(cr[4], -0.0f));
  /* NaN bound wins */
  float nlo = NAN;
  const void *cin2[3] = {&nlo, v, &hi};
  run_op(HLO_OP_CLAMP, HLO_F32, 3, cts, cns, cin2, 5, cr, NULL);
  CHECK(isnan(cr[0]) && isnan(cr[1]) && isnan(cr[2]));
  int32_t ilo = 0, ihi = 10, iv[4] = {-3, 4, 99, 10}, ir[4];
  const void *iin[3] = {&ilo, iv, &ihi};
  hlo_type its[3] = {HLO_S32, HLO_S32, HLO_S32};
  int64_t ins_[3] = {-1, 4, -1};
  run_op(HLO_OP_CLAMP, HLO_S32, 3, its, ins_, iin, 4, ir, NULL);
  CHECK(ir[0] == 0 && ir[1] == 4 && ir[2] == 10 && ir[3] == 10);
}

/* ----------------------------------------------------------------- convert ---- */

static void run_convert(hlo_type from, hlo_type to, int64_t n, const void *in, void *out) {
  run_unary(HLO_OP_CONVERT, from, to, n, in, out);
}

static void test_convert_saturation(void) {
  float f[9] = {NAN, INFINITY, -INFINITY, 1e10f, -1e10f, 2.9f, -2.9f, -0.5f, 2147483520.0f};
  int32_t s[9];
  uint8_t u[9];
  run_convert(HLO_F32, HLO_S32, 9, f, s);
  run_convert(HLO_F32, HLO_U8, 9, f, u);
  CHECK(s[0] == 0 && s[1] == INT32_MAX && s[2] == INT32_MIN && s[3] == INT32_MAX && s[4] == INT32_MIN);
  CHECK(s[5] == 2 && s[6] == -2 && s[7] == 0 && s[8] == 2147483520);
  CHECK(u[0] == 0 && u[1] == 255 && u[2] == 0 && u[3] == 255 && u[4] == 0 && u[5] == 2 && u[6] == 0 && u[7] == 0);
  double d[4] = {9.3e18, -9.3e18, 9223372036854775808.0, 18446744073709551616.0};
  int64_t s64[4];
  uint64_t u64[4];
  run_convert(HLO_F64, HLO_S64, 4, d, s64);
  run_convert(HLO_F64, HLO_U64, 4, d, u64);
  CHECK(s64[0] == INT64_MAX && s64[1] == INT64_MIN && s64[2] == INT64_MAX);
  CHECK(u64[0] == 9300000000000000000ull && u64[1] == 0 && u64[2] == 9223372036854775808ull && u64[3] == UINT64_MAX);
  /* f16 source: 65504 -> s8 saturates, -inf -> u16 0 */
  uint16_t h[2] = {0x7bff, 0xfc00};
  int8_t h8[2];
  run_convert(HLO_F16, HLO_S8, 2, h, h8);
  CHECK(h8[0] == 127 && h8[1] == -128);
}

static void test_convert_ints_and_pred(void) {
  int32_t a[4] = {300, -1, 128, -129};
  int8_t s8[4];
  uint32_t u32[4];
  run_convert(HLO_S32, HLO_S8, 4, a, s8);
  run_convert(HLO_S32, HLO_U32, 4, a, u32);
  CHECK(s8[0] == 44 && s8[1] == -1 && s8[2] == -128 && s8[3] == 127); /* two's complement truncation */
  CHECK(u32[1] == 0xffffffffu && u32[0] == 300);
  uint64_t big = 0xffffffffffffffffull;
  int64_t sb;
  run_convert(HLO_U64, HLO_S64, 1, &big, &sb);
  CHECK(sb == -1);
  float f[4] = {0.5f, -0.0f, NAN, 0.0f};
  uint8_t p[4];
  run_convert(HLO_F32, HLO_PRED, 4, f, p);
  CHECK(p[0] == 1 && p[1] == 0 && p[2] == 1 && p[3] == 0);
  int32_t ip[3] = {0, -7, 2};
  run_convert(HLO_S32, HLO_PRED, 3, ip, p);
  CHECK(p[0] == 0 && p[1] == 1 && p[2] == 1);
  uint8_t pp[2] = {1, 0};
  float pf[2];
  int64_t pi[2];
  run_convert(HLO_PRED, HLO_F32, 2, pp, pf);
  run_convert(HLO_PRED, HLO_S64, 2, pp, pi);
  CHECK(pf[0] == 1.0f && pf[1] == 0.0f && pi[0] == 1 && pi[1] == 0);
}

static void test_convert_float_rounding(void) {
  /* s64 -> bf16: 2^24 + 2^16 + 1 lies just above the midpoint of 2^24 (0x4b80) and
   * 2^24 + 2^17 (0x4b81); via f32 it would first become the midpoint and tie to even. */
  int64_t v[3] = {(1LL << 24) + (1LL << 16) + 1, -((1LL << 24) + (1LL << 16) + 1), (1LL << 24) + (1LL << 16)};
  uint16_t r[3];
  run_convert(HLO_S64, HLO_BF16, 3, v, r);
  CHECK(r[0] == 0x4b81 && r[1] == 0xcb81 && r[2] == 0x4b80);
  /* u64 max -> f16 overflows to inf; 65519 -> 65504; 2049 -> 2048 (tie to even) */
  uint64_t u[3] = {UINT64_MAX, 65519, 2049};
  uint16_t h[3];
  run_convert(HLO_U64, HLO_F16, 3, u, h);
  CHECK(h[0] == 0x7c00 && h[1] == 0x7bff && h[2] == 0x6800);
  /* s64 -> f32 rounds once: 2^60 + 2^36 + 1 is above the midpoint of 2^60 and 2^60+2^37 */
  int64_t w = (1LL << 60) + (1LL << 36) + 1;
  float wf;
  run_convert(HLO_S64, HLO_F32, 1, &w, &wf);
  CHECK(wf == 0x1p60f + 0x1p37f);
  /* f64 -> f16 directly (no double rounding through f32) */
  double d = 1.0 + 0x1p-11 + 0x1p-40;
  uint16_t dh;
  run_convert(HLO_F64, HLO_F16, 1, &d, &dh);
  CHECK(dh == 0x3c01);
  /* f64 -> f32 -> NaN stays NaN; f16 -> bf16: 65504 = 0x477fe000 in f32 -> bf16 rounds
   * 0x477fe000 to 0x4780 (mantissa 0x7fe000: upper 7 bits all ones + round up) */
  uint16_t hm = 0x7bff, bm;
  run_convert(HLO_F16, HLO_BF16, 1, &hm, &bm);
  CHECK(bm == 0x4780);
}

/* ----------------------------------------------------------- reduce-precision - */

static int rp_e, rp_m;
static void set_rp(hlo_instr *i) {
  i->exponent_bits = rp_e;
  i->mantissa_bits = rp_m;
}

static void run_rp(hlo_type t, int e, int m, int64_t n, const void *in, void *out) {
  rp_e = e;
  rp_m = m;
  const void *ins[1] = {in};
  hlo_type ts[1] = {t};
  int64_t ns[1] = {n};
  run_op(HLO_OP_REDUCE_PRECISION, t, 1, ts, ns, ins, n, out, set_rp);
}

static void test_reduce_precision(void) {
  /* (5, 10) on f32 = f16's precision and range with flushed subnormals */
  float a[12] = {1.0f + 0x1p-11f,        /* tie -> even -> 1 */
                 1.0f + 3 * 0x1p-11f,    /* tie -> even -> 1 + 2^-9 */
                 1.0f + 0x1p-11f + 0x1p-20f, /* above tie -> 1 + 2^-10 */
                 65504.0f,               /* largest f16: kept */
                 65520.0f,               /* rounds to 2^16: beyond the range -> inf */
                 0x1p-14f,               /* smallest normal of the reduced format: kept */
                 0x1p-15f,               /* its subnormal range: flushed to 0 */
                 -0x1p-15f,              /* -> -0 */
                 -0.0f, INFINITY, NAN, 1e-45f};
  float r[12];
  run_rp(HLO_F32, 5, 10, 12, a, r);
  CHECK(r[0] == 1.0f && r[1] == 1.0f + 0x1p-9f && r[2] == 1.0f + 0x1p-10f);
  CHECK(r[3] == 65504.0f && r[4] == INFINITY && r[5] == 0x1p-14f);
  CHECK(same_f32(r[6], 0.0f) && same_f32(r[7], -0.0f) && same_f32(r[8], -0.0f) && r[9] == INFINITY);
  CHECK(isnan(r[10]) && same_f32(r[11], 0.0f));
  /* (8, 7) = bfloat16's precision, f32's range */
  /* With 8 exponent bits the exponent step is skipped, so f32 subnormals are rounded
   * on their raw mantissa field: 2^-127 (field bit 22) survives, 2^-140 (field bit 9,
   * below the 7 kept bits and under half of the last one) rounds to 0. */
  float b[4] = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, 0x1p-127f, 0x1p-140f};
  float br[4];
  run_rp(HLO_F32, 8, 7, 4, b, br);
  CHECK(br[0] == 1.0f && br[1] == 1.0f + 0x1p-7f && br[2] == 0x1p-127f && same_f32(br[3], 0.0f));
  /* no mantissa bits: 3 is a tie between 2 and 4 -> the one with an even exponent
   * field (2 = 2^1, field 128); 6 ties between 4 (field 129) and 8 (field 130) -> 8;
   * NaN cannot be represented without mantissa bits -> inf */
  float c[3] = {3.0f, 6.0f, NAN}, cr[3];
  run_rp(HLO_F32, 8, 0, 3, c, cr);
  CHECK(cr[0] == 2.0f && cr[1] == 8.0f && cr[2] == INFINITY);
  /* f64 */
  double d[3] = {1.0 + 0x1p-11 + 0x1p-40, 1e300, 0x1p-1000}, dr[3];
  run_rp(HLO_F64, 5, 10, 3, d, dr);
  CHECK(dr[0] == 1.0 + 0x1p-10 && dr[1] == INFINITY && dr[2] == 0.0);
  double id[2] = {0.1, -1e-310}, idr[2];
  run_rp(HLO_F64, 11, 52, 2, id, idr);
  CHECK(idr[0] == 0.1 && idr[1] == -1e-310);
  /* f16 through f32: (5, 2) keeps 2 mantissa bits: 1.125 ties to 1; 1.375 ties to 1.5 */
  uint16_t h[2] = {0x3c80, 0x3d80}, hr[2];
  run_rp(HLO_F16, 5, 2, 2, h, hr);
  CHECK(hr[0] == 0x3c00 && hr[1] == 0x3e00);
}

/* ---------------------------------------------------------------- bitcasts ---- */

static void test_bitcast_convert(void) {
  hlo_module *m = hlo_module_new("bc");
  hlo_computation *e = new_entry(m, "main");
  int64_t d2[2] = {2, 4};
  hlo_instr *x = param(e, 0, arr(HLO_F32, 2), "x");
  hlo_instr *to_u8 = op1(e, HLO_OP_BITCAST_CONVERT, shape_make(HLO_U8, 2, d2), x);
  hlo_instr *back = op1(e, HLO_OP_BITCAST_CONVERT, arr(HLO_F32, 2), to_u8);
  hlo_instr *as_s32 = op1(e, HLO_OP_BITCAST_CONVERT, arr(HLO_S32, 2), x);
  hlo_instr *outs[3] = {to_u8, back, as_s32};
  finish(e, tuple(e, 3, outs));
  float v[2] = {1.0f, -2.0f}; /* 0x3f800000, 0xc0000000 */
  hlo_literal *arg = lit(arr(HLO_F32, 2), v), *r = NULL;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) {
    uint8_t *b = r->tuple[0]->data;
    uint8_t want[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* little-endian pieces */
    CHECK(memcmp(b, want, 8) == 0);
    CHECK(memcmp(r->tuple[1]->data, v, 8) == 0);
    int32_t *s = r->tuple[2]->data;
    CHECK((uint32_t)s[0] == 0x3f800000u && (uint32_t)s[1] == 0xc0000000u);
  }
  literal_free(r);
  /* a dimension rule violation is an error, not a silent memcpy */
  e->root = op1(e, HLO_OP_BITCAST_CONVERT, arr(HLO_U8, 8), x);
  CHECK_ERR(eval_module(m, &arg, 1, &r), "cannot bitcast");
  literal_free(arg);
  hlo_module_free(m);
}

/* bitcast reinterprets physical bytes: default layouts = reshape; {0,1} -> {1,0} with
 * swapped dims = transpose. */
static void test_bitcast_layouts(void) {
  hlo_module *m = hlo_module_new("b");
  hlo_computation *e = new_entry(m, "main");
  int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d6 = 6;
  hlo_shape xs = shape_make(HLO_S32, 2, d23);
  xs.has_layout = true;
  xs.minor_to_major[0] = 0;
  xs.minor_to_major[1] = 1;
  hlo_shape ys = shape_make(HLO_S32, 2, d32);
  shape_set_default_layout(&ys);
  hlo_instr *x = param(e, 0, xs, "x");
  hlo_instr *t = op1(e, HLO_OP_BITCAST, ys, x);
  hlo_instr *flat = op1(e, HLO_OP_BITCAST, shape_make(HLO_F32, 1, &d6), t); /* default -> default: bytes */
  hlo_instr *outs[2] = {t, flat};
  finish(e, tuple(e, 2, outs));
  int32_t v[6] = {1, 2, 3, 4, 5, 6}; /* x = [[1,2,3],[4,5,6]] */
  hlo_literal *arg = lit(xs, v), *r = NULL;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) {
    int32_t *y = r->tuple[0]->data; /* transpose: [[1,4],[2,5],[3,6]] */
    CHECK(y[0] == 1 && y[1] == 4 && y[2] == 2 && y[3] == 5 && y[4] == 3 && y[5] == 6);
    uint32_t bits;
    memcpy(&bits, (char *)r->tuple[1]->data + 4, 4);
    CHECK(bits == 4);
  }
  literal_free(r);
  e->root = op1(e, HLO_OP_BITCAST, arr(HLO_S32, 5), x);
  CHECK_ERR(eval_module(m, &arg, 1, &r), "byte sizes differ");
  literal_free(arg);
  hlo_module_free(m);
}

static void test_misc_plumbing(void) {
  hlo_module *m = hlo_module_new("p");
  hlo_computation *e = new_entry(m, "main");
  int64_t d[3] = {2, 5, 7};
  hlo_shape xs = shape_make(HLO_F32, 3, d);
  hlo_instr *x = param(e, 0, xs, "x");
  hlo_instr *gds = op1(e, HLO_OP_GET_DIMENSION_SIZE, shape_scalar(HLO_S32), x);
  int64_t one = 1;
  gds->dimensions = hlo_ints_make(m->arena, 1, &one);
  hlo_shape tok = shape_scalar(HLO_TOKEN);
  hlo_instr *aa = hlo_instr_new(e, HLO_OP_AFTER_ALL, &tok, NULL);
  hlo_instr *dep = op2(e, HLO_OP_ADD_DEPENDENCY, xs, x, aa);
  hlo_instr *ob = op1(e, HLO_OP_OPTIMIZATION_BARRIER, xs, dep);
  hlo_instr *outs[3] = {gds, ob, aa};
  finish(e, tuple(e, 3, outs));
  hlo_literal *arg = lit(xs, NULL), *r = NULL;
  ((float *)arg->data)[69] = 3.5f;
  CHECK_OK(eval_module(m, &arg, 1, &r));
  if (r) {
    CHECK(((int32_t *)r->tuple[0]->data)[0] == 5);
    CHECK(((float *)r->tuple[1]->data)[69] == 3.5f);
    CHECK(r->tuple[2]->shape.type == HLO_TOKEN);
  }
  literal_free(r);
  literal_free(arg);
  hlo_module_free(m);
}

/* ------------------------------------------------------------------ reducers -- */

static void test_reducer_classify(void) {
  hlo_module *m = hlo_module_new("r");
  CHECK(eval_reducer_classify(scalar_binary(m, "a", HLO_OP_ADD, HLO_F32, false)) == EVAL_REDUCER_ADD);
  /* float op(p1, p0) differs from op(p0, p1) in which of two NaNs survives */
  CHECK(eval_reducer_classify(scalar_binary(m, "b", HLO_OP_ADD, HLO_F32, true)) == EVAL_REDUCER_GENERIC);
  CHECK(eval_reducer_classify(scalar_binary(m, "b2", HLO_OP_ADD, HLO_S32, true)) == EVAL_REDUCER_ADD);
  CHECK(eval_reducer_classify(scalar_binary(m, "c", HLO_OP_MAXIMUM, HLO_F32, false)) == EVAL_REDUCER_MAX);
  /* and max(p1, p0) in which of -0 and +0 survives */
  CHECK(eval_reducer_classify(scalar_binary(m, "d", HLO_OP_MAXIMUM, HLO_F32, true)) == EVAL_REDUCER_GENERIC);
  CHECK(eval_reducer_classify(scalar_binary(m, "e", HLO_OP_MAXIMUM, HLO_S32, true)) == EVAL_REDUCER_MAX);
  CHECK(eval_reducer_classify(scalar_binary(m, "f", HLO_OP_MINIMUM, HLO_BF16, false)) == EVAL_REDUCER_MIN);
  CHECK(eval_reducer_classify(scalar_binary(m, "g", HLO_OP_AND, HLO_PRED, false)) == EVAL_REDUCER_AND);
  CHECK(eval_reducer_classify(scalar_binary(m, "h", HLO_OP_OR, HLO_U8, true)) == EVAL_REDUCER_OR);
  CHECK(eval_reducer_classify(scalar_binary(m, "i", HLO_OP_XOR, HLO_S64, false)) == EVAL_REDUCER_XOR);
  CHECK(eval_reducer_classify(scalar_binary(m, "j", HLO_OP_MULTIPLY, HLO_F16, false)) == EVAL_REDUCER_MUL);
  CHECK(eval_reducer_classify(scalar_binary(m, "k", HLO_OP_AND, HLO_F32, false)) == EVAL_REDUCER_GENERIC);
  CHECK(eval_reducer_classify(scalar_binary(m, "l", HLO_OP_SUBTRACT, HLO_F32, false)) == EVAL_REDUCER_GENERIC);
  /* add(p0, p0) */
  hlo_computation *c = hlo_computation_new(m, "m");
  hlo_instr *a = param(c, 0, shape_scalar(HLO_F32), "a");
  param(c, 1, shape_scalar(HLO_F32), "b");
  finish(c, op2(c, HLO_OP_ADD, shape_scalar(HLO_F32), a, a));
  CHECK(eval_reducer_classify(c) == EVAL_REDUCER_GENERIC);
  /* root is not the op itself */
  hlo_computation *c2 = hlo_computation_new(m, "n");
  hlo_instr *x = param(c2, 0, shape_scalar(HLO_F32), "a"), *y = param(c2, 1, shape_scalar(HLO_F32), "b");
  finish(c2, op1(c2, HLO_OP_NEGATE, shape_scalar(HLO_F32), op2(c2, HLO_OP_ADD, shape_scalar(HLO_F32), x, y)));
  CHECK(eval_reducer_classify(c2) == EVAL_REDUCER_GENERIC);
  /* non-scalar parameters */
  hlo_computation *c3 = hlo_computation_new(m, "o");
  hlo_instr *v1 = param(c3, 0, arr(HLO_F32, 2), "a"), *v2 = param(c3, 1, arr(HLO_F32, 2), "b");
  finish(c3, op2(c3, HLO_OP_ADD, arr(HLO_F32, 2), v1, v2));
  CHECK(eval_reducer_classify(c3) == EVAL_REDUCER_GENERIC);
  hlo_module_free(m);
}

/* The fast path equals the interpreted computation bit for bit: run map with the
 * recognised computation and with the same op wrapped in a copy (GENERIC) over all
 * pairs of special values. */
static void check_reducer_matches(hlo_opcode op, hlo_type t, const void *vals, int nv) {
  size_t es = hlo_type_size(t);
  int n = nv * nv;
  char *a = malloc((size_t)n * es), *b = malloc((size_t)n * es);
  for (int i = 0; i < nv; i++)
    for (int j = 0; j < nv; j++) {
      memcpy(a + (size_t)(i * nv + j) * es, (const char *)vals + (size_t)i * es, es);
      memcpy(b + (size_t)(i * nv + j) * es, (const char *)vals + (size_t)j * es, es);
    }
  hlo_module *m = hlo_module_new("rm");
  hlo_computation *fast = scalar_binary(m, "fast", op, t, false);
  hlo_computation *slow = hlo_computation_new(m, "slow");
  hlo_instr *p0 = param(slow, 0, shape_scalar(t), "a"), *p1 = param(slow, 1, shape_scalar(t), "b");
  finish(slow, op1(slow, HLO_OP_COPY, shape_scalar(t), op2(slow, op, shape_scalar(t), p0, p1)));
  CHECK(eval_reducer_classify(fast) != EVAL_REDUCER_GENERIC);
  CHECK(eval_reducer_classify(slow) == EVAL_REDUCER_GENERIC);
  hlo_computation *e = new_entry(m, "main");
  hlo_shape s = arr(t, n);
  hlo_instr *x = param(e, 0, s, "x"), *y = param(e, 1, s, "y");
  hlo_instr *xy[2] = {x, y};
  hlo_instr *mf = hlo_instr_new(e, HLO_OP_MAP, &s, NULL);
  hlo_instr_set_operands(mf, 2, xy);
  hlo_instr_set_called(mf, 1, &fast);
  hlo_instr *ms = hlo_instr_new(e, HLO_OP_MAP, &s, NULL);
  hlo_instr_set_operands(ms, 2, xy);
  hlo_instr_set_called(ms, 1, &slow);
  hlo_instr *both[2] = {mf, ms};
  finish(e, tuple(e, 2, both));
  hlo_literal *args[2] = {lit(s, a), lit(s, b)}, *r = NULL;
  CHECK_OK(eval_module(m, args, 2, &r));
  if (r) CHECK(memcmp(r->tuple[0]->data, r->tuple[1]->data, (size_t)n * es) == 0);
  /* and eval_reducer_apply directly agrees too */
  if (r) {
    char *d = malloc((size_t)n * es);
    memcpy(d, a, (size_t)n * es);
    eval_reducer_kind k = eval_reducer_classify(fast);
    for (int i = 0; i < n; i++) eval_reducer_apply(k, t, d, i, b, i);
    CHECK(memcmp(d, r->tuple[1]->data, (size_t)n * es) == 0);
    free(d);
  }
  literal_free(r);
  literal_free(args[0]);
  literal_free(args[1]);
  hlo_module_free(m);
  free(a);
  free(b);
}

static void test_reducer_bit_identical(void) {
  uint32_t f32v[] = {0x7fc00001, 0xffc00002, 0x80000000, 0x00000000, 0x3f800000, 0xbf800000,
                     0x7f800000, 0xff800000, 0x00000001, 0x7f7fffff, 0x33800000};
  hlo_opcode fops[] = {HLO_OP_ADD, HLO_OP_MULTIPLY, HLO_OP_MAXIMUM, HLO_OP_MINIMUM};
  for (int k = 0; k < 4; k++) check_reducer_matches(fops[k], HLO_F32, f32v, 11);
  uint16_t f16v[] = {0x7e01, 0xfe02, 0x8000, 0x0000, 0x3c00, 0x3c01, 0x1000, 0x7bff, 0x0001, 0xfc00};
  for (int k = 0; k < 4; k++) check_reducer_matches(fops[k], HLO_F16, f16v, 10);
  for (int k = 0; k < 4; k++) check_reducer_matches(fops[k], HLO_BF16, f16v, 10);
  double f64v[] = {NAN, -0.0, 0.0, 1.0, -1.5, INFINITY, 1e308, 5e-324};
  for (int k = 0; k < 4; k++) check_reducer_matches(fops[k], HLO_F64, f64v, 8);
  int8_t s8v[] = {-128, -1, 0, 1, 127, 100};
  hlo_opcode iops[] = {HLO_OP_ADD, HLO_OP_MULTIPLY, HLO_OP_MAXIMUM, HLO_OP_MINIMUM,
                       HLO_OP_AND, HLO_OP_OR,       HLO_OP_XOR};
  for (int k = 0; k < 7; k++) check_reducer_matches(iops[k], HLO_S8, s8v, 6);
  uint64_t u64v[] = {0, 1, UINT64_MAX, 1ull << 63, 12345};
  for (int k = 0; k < 7; k++) check_reducer_matches(iops[k], HLO_U64, u64v, 5);
  uint8_t pv[] = {0, 1};
  hlo_opcode pops[] = {HLO_OP_AND, HLO_OP_OR, HLO_OP_XOR, HLO_OP_MAXIMUM, HLO_OP_MINIMUM, HLO_OP_ADD,
                       HLO_OP_MULTIPLY};
  for (int k = 0; k < 7; k++) check_reducer_matches(pops[k], HLO_PRED, pv, 2);
}

TEST_MAIN(TEST(test_while_counts), TEST(test_conditional), TEST(test_call_and_fusion), TEST(test_tuple_aliasing),
          TEST(test_root_borrowed), TEST(test_map), TEST(test_argument_errors), TEST(test_unsupported_ops),
          TEST(test_error_inside_loop), TEST(test_recursion_limit), TEST(test_int_divide_remainder),
          TEST(test_int_shifts), TEST(test_int_unary_and_wrap), TEST(test_int_power),
          TEST(test_float_max_min_sign_round), TEST(test_half_arithmetic), TEST(test_compare_total_order),
          TEST(test_compare_ints), TEST(test_select_clamp_scalars), TEST(test_convert_saturation),
          TEST(test_convert_ints_and_pred), TEST(test_convert_float_rounding), TEST(test_reduce_precision),
          TEST(test_bitcast_convert), TEST(test_bitcast_layouts), TEST(test_misc_plumbing),
          TEST(test_reducer_classify), TEST(test_reducer_bit_identical))
