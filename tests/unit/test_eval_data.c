/* Unit tests for the evaluator's data-movement, reduction, window and sort kernels.
 *
 * Modules are built directly through ir.h (no text parser) and each kernel is called on
 * hand-made literals. Expectations are either worked out by hand from XLA's operation
 * semantics on tiny inputs, or computed by a brute-force transcription of the definition
 * written independently here (e.g. reduce-window walks every window position of the
 * padded, dilated input and asks whether it hits an element), so a shared
 * misunderstanding between kernel and test is unlikely. Edge cases are the point:
 * negative and interior padding, strides, clamped dynamic indices, empty shapes, ties in
 * select-and-scatter and sort, NaNs under TOTALORDER. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "check.h"
#include "eval/eval_internal.h"

/* ---- building blocks ---- */

static hlo_literal *lit(hlo_type t, int rank, const int64_t *dims) {
  hlo_shape s = shape_make(t, rank, dims);
  hlo_literal *l = NULL;
  kiln_status st = literal_create(&s, &l);
  if (st) abort();
  return l;
}

static hlo_literal *lit_f32(int rank, const int64_t *dims, const float *v) {
  hlo_literal *l = lit(HLO_F32, rank, dims);
  if (l->n) memcpy(l->data, v, (size_t)l->n * 4);
  return l;
}

static hlo_literal *lit_s32(int rank, const int64_t *dims, const int32_t *v) {
  hlo_literal *l = lit(HLO_S32, rank, dims);
  if (l->n) memcpy(l->data, v, (size_t)l->n * 4);
  return l;
}

static hlo_literal *scalar_f32(float v) { return lit_f32(0, NULL, &v); }
static hlo_literal *scalar_s32(int32_t v) { return lit_s32(0, NULL, &v); }

/* Literal whose element i holds i (as s32). */
static hlo_literal *lit_counting(int rank, const int64_t *dims) {
  hlo_literal *l = lit(HLO_S32, rank, dims);
  for (int64_t i = 0; i < l->n; i++) ((int32_t *)l->data)[i] = (int32_t)i;
  return l;
}

static float f32_at(const hlo_literal *l, int64_t i) { return ((const float *)l->data)[i]; }
static int32_t s32_at(const hlo_literal *l, int64_t i) { return ((const int32_t *)l->data)[i]; }

static bool f32_equal(const hlo_literal *l, const float *want, int64_t n) {
  if (!l || l->shape.type != HLO_F32 || l->n != n) return false;
  return n == 0 || memcmp(l->data, want, (size_t)n * 4) == 0;
}

static bool s32_equal(const hlo_literal *l, const int32_t *want, int64_t n) {
  if (!l || l->shape.type != HLO_S32 || l->n != n) return false;
  for (int64_t i = 0; i < n; i++)
    if (s32_at(l, i) != want[i]) return false;
  return true;
}

static bool dims_are(const hlo_literal *l, int rank, const int64_t *dims) {
  if (!l || l->shape.rank != rank) return false;
  for (int d = 0; d < rank; d++)
    if (l->shape.dims[d] != dims[d]) return false;
  return true;
}

static hlo_module *new_module(void) { return hlo_module_new("test"); }

static hlo_computation *entry(hlo_module *m) {
  hlo_computation *c = hlo_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  return c;
}

/* The instruction under test, with one parameter per operand (kernels read operand
 * counts and, via the literals, operand shapes). */
static hlo_instr *make_instr(hlo_computation *c, hlo_opcode op, hlo_shape shape, int n, hlo_literal *const *ops) {
  hlo_instr *params[16];
  for (int i = 0; i < n; i++) {
    params[i] = hlo_instr_new(c, HLO_OP_PARAMETER, &ops[i]->shape, NULL);
    params[i]->parameter_number = i;
  }
  hlo_instr *ins = hlo_instr_new(c, op, &shape, NULL);
  hlo_instr_set_operands(ins, n, params);
  c->root = ins;
  return ins;
}

static void set_ints(hlo_module *m, hlo_ints *dst, int n, const int64_t *v) { *dst = hlo_ints_make(m->arena, n, v); }

static kiln_status run(eval_kernel k, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  eval_ctx ctx = {0};
  *out = NULL;
  return k(&ctx, ins, ops, out);
}

static void free_all(hlo_literal **ls, int n) {
  for (int i = 0; i < n; i++) literal_free(ls[i]);
}

/* ---- scalar computations ---- */

static hlo_instr *scalar_param(hlo_computation *c, int num, hlo_type t) {
  hlo_shape s = shape_scalar(t);
  hlo_instr *p = hlo_instr_new(c, HLO_OP_PARAMETER, &s, NULL);
  p->parameter_number = num;
  return p;
}

static hlo_instr *binary(hlo_computation *c, hlo_opcode op, hlo_type t, hlo_instr *a, hlo_instr *b) {
  hlo_shape s = shape_scalar(t);
  hlo_instr *ins = hlo_instr_new(c, op, &s, NULL);
  hlo_instr *ops[2] = {a, b};
  hlo_instr_set_operands(ins, 2, ops);
  return ins;
}

static hlo_instr *compare(hlo_computation *c, hlo_direction dir, hlo_compare_type ct, hlo_instr *a, hlo_instr *b) {
  hlo_instr *ins = binary(c, HLO_OP_COMPARE, HLO_PRED, a, b);
  ins->direction = dir;
  ins->compare_type = ct;
  return ins;
}

static hlo_instr *select3(hlo_computation *c, hlo_type t, hlo_instr *p, hlo_instr *a, hlo_instr *b) {
  hlo_shape s = shape_scalar(t);
  hlo_instr *ins = hlo_instr_new(c, HLO_OP_SELECT, &s, NULL);
  hlo_instr *ops[3] = {p, a, b};
  hlo_instr_set_operands(ins, 3, ops);
  return ins;
}

static hlo_computation *finish(hlo_computation *c, hlo_instr *root) {
  c->root = root;
  if (hlo_computation_index_params(c)) abort();
  return c;
}

/* (p0, p1) -> op(p0, p1): recognised by the reducer fast path. */
static hlo_computation *binary_comp(hlo_module *m, const char *name, hlo_opcode op, hlo_type t) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *a = scalar_param(c, 0, t), *b = scalar_param(c, 1, t);
  return finish(c, binary(c, op, t, a, b));
}

/* The same op hidden behind a tuple round trip, so the generic path must be taken. */
static hlo_computation *binary_comp_generic(hlo_module *m, const char *name, hlo_opcode op, hlo_type t) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *a = scalar_param(c, 0, t), *b = scalar_param(c, 1, t);
  hlo_instr *r = binary(c, op, t, a, b);
  hlo_shape es = shape_scalar(t);
  hlo_shape ts = shape_tuple(m->arena, 1, &es);
  hlo_instr *tup = hlo_instr_new(c, HLO_OP_TUPLE, &ts, NULL);
  hlo_instr_set_operands(tup, 1, &r);
  hlo_instr *g = hlo_instr_new(c, HLO_OP_GET_TUPLE_ELEMENT, &es, NULL);
  hlo_instr_set_operands(g, 1, &tup);
  g->tuple_index = 0;
  return finish(c, g);
}

/* Comparator over 2n params comparing params (lhs, rhs) with dir / compare type. */
static hlo_computation *compare_comp(hlo_module *m, const char *name, int n, const hlo_type *types, int lhs, int rhs,
                                     hlo_direction dir, hlo_compare_type ct) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *p[8];
  for (int i = 0; i < 2 * n; i++) p[i] = scalar_param(c, i, types[i / 2]);
  return finish(c, compare(c, dir, ct, p[lhs], p[rhs]));
}

/* ---- data movement ---- */

static void test_broadcast(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d2[] = {2}, d23[] = {2, 3}, d32[] = {3, 2};
  float v[] = {1.5f, -2};
  hlo_literal *in = lit_f32(1, d2, v), *out = NULL;
  hlo_instr *ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_F32, 2, d23), 1, &in);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  CHECK_OK(run(eval_broadcast, ins, &in, &out));
  float want0[] = {1.5f, 1.5f, 1.5f, -2, -2, -2};
  CHECK(f32_equal(out, want0, 6) && dims_are(out, 2, d23));
  literal_free(out);

  ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_F32, 2, d32), 1, &in);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  CHECK_OK(run(eval_broadcast, ins, &in, &out));
  float want1[] = {1.5f, -2, 1.5f, -2, 1.5f, -2};
  CHECK(f32_equal(out, want1, 6));
  literal_free(out);
  literal_free(in);

  /* scalar to [2,3], f16 raw bits travel unchanged */
  hlo_literal *h = lit(HLO_F16, 0, NULL);
  ((uint16_t *)h->data)[0] = 0x7e01; /* a NaN payload */
  ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_F16, 2, d23), 1, &h);
  CHECK_OK(run(eval_broadcast, ins, &h, &out));
  bool all = out && out->n == 6;
  for (int i = 0; all && i < 6; i++) all = ((uint16_t *)out->data)[i] == 0x7e01;
  CHECK(all);
  literal_free(out);
  literal_free(h);

  /* 3-D brute force: [2,1,3] operand into [4,2,5,3] with dims {1,2,3} */
  int64_t din[] = {2, 1, 3}, dout[] = {4, 2, 5, 3};
  hlo_literal *cnt = lit_counting(3, din);
  ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_S32, 4, dout), 1, &cnt);
  set_ints(m, &ins->dimensions, 3, (int64_t[]){1, 2, 3});
  CHECK_OK(run(eval_broadcast, ins, &cnt, &out));
  bool ok = out && out->n == 120;
  for (int a = 0; ok && a < 4; a++)
    for (int b = 0; b < 2; b++)
      for (int e = 0; e < 5; e++)
        for (int f = 0; f < 3; f++) ok = ok && s32_at(out, ((a * 2 + b) * 5 + e) * 3 + f) == b * 3 + f;
  CHECK(ok);
  literal_free(out);

  /* zero-size result */
  int64_t d0[] = {0, 2, 1, 3};
  ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_S32, 4, d0), 1, &cnt);
  set_ints(m, &ins->dimensions, 3, (int64_t[]){1, 2, 3});
  CHECK_OK(run(eval_broadcast, ins, &cnt, &out));
  CHECK(out && out->n == 0);
  literal_free(out);

  /* a bad mapping is an error naming the instruction, not a crash */
  ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_S32, 4, dout), 1, &cnt);
  set_ints(m, &ins->dimensions, 3, (int64_t[]){0, 2, 3});
  CHECK_ERR(run(eval_broadcast, ins, &cnt, &out), ins->name);
  literal_free(cnt);
  hlo_module_free(m);
}

static void test_reshape_transpose_reverse(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d234[] = {2, 3, 4}, d423[] = {4, 2, 3}, d64[] = {6, 4};
  hlo_literal *in = lit_counting(3, d234), *out = NULL;

  hlo_instr *ins = make_instr(c, HLO_OP_RESHAPE, shape_make(HLO_S32, 2, d64), 1, &in);
  CHECK_OK(run(eval_reshape, ins, &in, &out));
  bool ok = out && out->n == 24 && dims_are(out, 2, d64);
  for (int i = 0; ok && i < 24; i++) ok = s32_at(out, i) == i;
  CHECK(ok);
  literal_free(out);

  /* transpose {2,0,1}: out[a][b][c] = in[b][c][a] */
  ins = make_instr(c, HLO_OP_TRANSPOSE, shape_make(HLO_S32, 3, d423), 1, &in);
  set_ints(m, &ins->dimensions, 3, (int64_t[]){2, 0, 1});
  CHECK_OK(run(eval_transpose, ins, &in, &out));
  ok = out && out->n == 24;
  for (int a = 0; ok && a < 4; a++)
    for (int b = 0; b < 2; b++)
      for (int e = 0; e < 3; e++) ok = ok && s32_at(out, (a * 2 + b) * 3 + e) == (b * 3 + e) * 4 + a;
  CHECK(ok);
  literal_free(out);

  /* reverse {0,2}: out[a][b][c] = in[1-a][b][3-c] */
  ins = make_instr(c, HLO_OP_REVERSE, shape_make(HLO_S32, 3, d234), 1, &in);
  set_ints(m, &ins->dimensions, 2, (int64_t[]){0, 2});
  CHECK_OK(run(eval_reverse, ins, &in, &out));
  ok = out && out->n == 24;
  for (int a = 0; ok && a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int e = 0; e < 4; e++) ok = ok && s32_at(out, (a * 3 + b) * 4 + e) == ((1 - a) * 3 + b) * 4 + (3 - e);
  CHECK(ok);
  literal_free(out);
  literal_free(in);

  /* zero-size everywhere */
  int64_t d03[] = {0, 3}, d30[] = {3, 0};
  hlo_literal *z = lit(HLO_PRED, 2, d03);
  ins = make_instr(c, HLO_OP_RESHAPE, shape_make(HLO_PRED, 2, d30), 1, &z);
  CHECK_OK(run(eval_reshape, ins, &z, &out));
  CHECK(out && out->n == 0 && dims_are(out, 2, d30));
  literal_free(out);
  ins = make_instr(c, HLO_OP_TRANSPOSE, shape_make(HLO_PRED, 2, d30), 1, &z);
  set_ints(m, &ins->dimensions, 2, (int64_t[]){1, 0});
  CHECK_OK(run(eval_transpose, ins, &z, &out));
  CHECK(out && out->n == 0);
  literal_free(out);
  ins = make_instr(c, HLO_OP_REVERSE, shape_make(HLO_PRED, 2, d03), 1, &z);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  CHECK_OK(run(eval_reverse, ins, &z, &out));
  CHECK(out && out->n == 0);
  literal_free(out);
  literal_free(z);

  /* element-count mismatch is an error */
  int64_t d5[] = {5};
  hlo_literal *five = lit_counting(1, d5);
  ins = make_instr(c, HLO_OP_RESHAPE, shape_make(HLO_S32, 2, (int64_t[]){2, 3}), 1, &five);
  CHECK_ERR(run(eval_reshape, ins, &five, &out), "elements");
  literal_free(five);
  hlo_module_free(m);
}

static void test_slice(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d56[] = {5, 6}, d22[] = {2, 2};
  hlo_literal *in = lit_counting(2, d56), *out = NULL;
  hlo_instr *ins = make_instr(c, HLO_OP_SLICE, shape_make(HLO_S32, 2, d22), 1, &in);
  set_ints(m, &ins->slice_start, 2, (int64_t[]){1, 0});
  set_ints(m, &ins->slice_limit, 2, (int64_t[]){5, 6});
  set_ints(m, &ins->slice_stride, 2, (int64_t[]){2, 4});
  CHECK_OK(run(eval_slice, ins, &in, &out));
  int32_t want[] = {6, 10, 18, 22}; /* rows 1,3 x cols 0,4 */
  CHECK(s32_equal(out, want, 4));
  literal_free(out);

  /* stride that does not divide the extent: [1:6:2] -> 1,3,5 (3 elements) */
  int64_t d53[] = {5, 3};
  ins = make_instr(c, HLO_OP_SLICE, shape_make(HLO_S32, 2, d53), 1, &in);
  set_ints(m, &ins->slice_start, 2, (int64_t[]){0, 1});
  set_ints(m, &ins->slice_limit, 2, (int64_t[]){5, 6});
  set_ints(m, &ins->slice_stride, 2, (int64_t[]){1, 2});
  CHECK_OK(run(eval_slice, ins, &in, &out));
  bool ok = out && out->n == 15;
  for (int r = 0; ok && r < 5; r++)
    for (int k = 0; k < 3; k++) ok = ok && s32_at(out, r * 3 + k) == r * 6 + 1 + 2 * k;
  CHECK(ok);
  literal_free(out);

  /* empty slice */
  int64_t d50[] = {5, 0};
  ins = make_instr(c, HLO_OP_SLICE, shape_make(HLO_S32, 2, d50), 1, &in);
  set_ints(m, &ins->slice_start, 2, (int64_t[]){0, 2});
  set_ints(m, &ins->slice_limit, 2, (int64_t[]){5, 2});
  set_ints(m, &ins->slice_stride, 2, (int64_t[]){1, 1});
  CHECK_OK(run(eval_slice, ins, &in, &out));
  CHECK(out && out->n == 0);
  literal_free(out);

  /* limit beyond the operand is an error */
  ins = make_instr(c, HLO_OP_SLICE, shape_make(HLO_S32, 2, d22), 1, &in);
  set_ints(m, &ins->slice_start, 2, (int64_t[]){4, 0});
  set_ints(m, &ins->slice_limit, 2, (int64_t[]){6, 2});
  set_ints(m, &ins->slice_stride, 2, (int64_t[]){1, 1});
  CHECK_ERR(run(eval_slice, ins, &in, &out), ins->name);
  literal_free(in);
  hlo_module_free(m);
}

static void test_dynamic_slice(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d5[] = {5}, d3[] = {3};
  hlo_literal *out = NULL;
  struct {
    hlo_type t;
    int64_t v;
    uint64_t u;
    int32_t first;
  } cases[] = {
      {HLO_S32, 1, 0, 1}, {HLO_S32, 4, 0, 2}, {HLO_S32, -3, 0, 0}, {HLO_S8, 127, 0, 2},
      {HLO_S64, INT64_MIN, 0, 0}, {HLO_U64, 0, UINT64_MAX, 2}, {HLO_U8, 0, 200, 2}, {HLO_U16, 0, 1, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hlo_literal *ops[2] = {lit_counting(1, d5), lit(cases[k].t, 0, NULL)};
    if (hlo_type_is_unsigned_int(cases[k].t)) literal_set_u64(ops[1], 0, cases[k].u);
    else literal_set_s64(ops[1], 0, cases[k].v);
    hlo_instr *ins = make_instr(c, HLO_OP_DYNAMIC_SLICE, shape_make(HLO_S32, 1, d3), 2, ops);
    set_ints(m, &ins->dynamic_slice_sizes, 1, d3);
    CHECK_OK(run(eval_dynamic_slice, ins, ops, &out));
    int32_t f = cases[k].first;
    int32_t want[] = {f, f + 1, f + 2};
    CHECK(s32_equal(out, want, 3));
    literal_free(out);
    free_all(ops, 2);
  }

  /* 2-D with one index per dimension, the second clamped */
  int64_t d45[] = {4, 5}, d22[] = {2, 2};
  hlo_literal *ops[3] = {lit_counting(2, d45), scalar_s32(1), scalar_s32(9)};
  hlo_instr *ins = make_instr(c, HLO_OP_DYNAMIC_SLICE, shape_make(HLO_S32, 2, d22), 3, ops);
  CHECK_OK(run(eval_dynamic_slice, ins, ops, &out));
  int32_t want2[] = {8, 9, 13, 14};
  CHECK(s32_equal(out, want2, 4));
  literal_free(out);

  /* a float index is an error */
  literal_free(ops[2]);
  ops[2] = scalar_f32(1);
  ins = make_instr(c, HLO_OP_DYNAMIC_SLICE, shape_make(HLO_S32, 2, d22), 3, ops);
  CHECK_ERR(run(eval_dynamic_slice, ins, ops, &out), "integer");
  free_all(ops, 3);

  /* dynamic-update-slice: clamped start, 2-D */
  hlo_literal *uops[4] = {lit(HLO_S32, 2, d45), lit_counting(2, d22), scalar_s32(-7), scalar_s32(4)};
  ((int32_t *)uops[1]->data)[0] = 100;
  ins = make_instr(c, HLO_OP_DYNAMIC_UPDATE_SLICE, shape_make(HLO_S32, 2, d45), 4, uops);
  CHECK_OK(run(eval_dynamic_update_slice, ins, uops, &out));
  int32_t want3[20] = {0};
  want3[3] = 100; /* start (0, 3) after clamping */
  want3[4] = 1;
  want3[8] = 2;
  want3[9] = 3;
  CHECK(s32_equal(out, want3, 20));
  literal_free(out);
  free_all(uops, 4);

  /* zero-size update: result equals the operand */
  int64_t d40[] = {4, 0};
  hlo_literal *zops[4] = {lit_counting(2, d45), lit(HLO_S32, 2, d40), scalar_s32(2), scalar_s32(2)};
  ins = make_instr(c, HLO_OP_DYNAMIC_UPDATE_SLICE, shape_make(HLO_S32, 2, d45), 4, zops);
  CHECK_OK(run(eval_dynamic_update_slice, ins, zops, &out));
  CHECK(out && literal_equal(out, zops[0]));
  literal_free(out);
  free_all(zops, 4);
  hlo_module_free(m);
}

static void test_concatenate(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t da[] = {2, 1}, db[] = {2, 2}, dz[] = {2, 0}, dout[] = {2, 3};
  int32_t va[] = {1, 2}, vb[] = {3, 4, 5, 6};
  hlo_literal *ops[3] = {lit_s32(2, da, va), lit(HLO_S32, 2, dz), lit_s32(2, db, vb)}, *out = NULL;
  hlo_instr *ins = make_instr(c, HLO_OP_CONCATENATE, shape_make(HLO_S32, 2, dout), 3, ops);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  CHECK_OK(run(eval_concatenate, ins, ops, &out));
  int32_t want[] = {1, 3, 4, 2, 5, 6};
  CHECK(s32_equal(out, want, 6));
  literal_free(out);
  free_all(ops, 3);

  /* along dimension 0 */
  int64_t d12[] = {1, 2}, d32[] = {3, 2};
  hlo_literal *ops2[2] = {lit_s32(2, d12, va), lit_s32(2, db, vb)};
  ins = make_instr(c, HLO_OP_CONCATENATE, shape_make(HLO_S32, 2, d32), 2, ops2);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  CHECK_OK(run(eval_concatenate, ins, ops2, &out));
  int32_t want2[] = {1, 2, 3, 4, 5, 6};
  CHECK(s32_equal(out, want2, 6));
  literal_free(out);
  free_all(ops2, 2);
  hlo_module_free(m);
}

/* Brute-force pad: out position p along a dimension comes from operand index i when
 * p = lo + i * (interior + 1). */
static void test_pad(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_literal *out = NULL;
  /* 1-D by hand: {1,2,3} lo=-1 hi=2 interior=1 -> {p,2,p,3,p,p} */
  int64_t d3[] = {3}, d6[] = {6};
  float v[] = {1, 2, 3};
  hlo_literal *ops[2] = {lit_f32(1, d3, v), scalar_f32(-9)};
  hlo_instr *ins = make_instr(c, HLO_OP_PAD, shape_make(HLO_F32, 1, d6), 2, ops);
  set_ints(m, &ins->pad_lo, 1, (int64_t[]){-1});
  set_ints(m, &ins->pad_hi, 1, (int64_t[]){2});
  set_ints(m, &ins->pad_interior, 1, (int64_t[]){1});
  CHECK_OK(run(eval_pad, ins, ops, &out));
  float want[] = {-9, 2, -9, 3, -9, -9};
  CHECK(f32_equal(out, want, 6));
  literal_free(out);
  free_all(ops, 2);

  /* 2-D brute force over a grid of configurations, including cropping into the
     interior and zero-size operands and results */
  int64_t los[] = {-3, -2, 0, 1}, his[] = {-2, 0, 2}, ints[] = {0, 2};
  int64_t in_dims[][2] = {{3, 4}, {0, 2}};
  int checked = 0;
  for (int s = 0; s < 2; s++)
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 3; b++)
        for (int e = 0; e < 2; e++) {
          int64_t lo[2] = {los[a], los[(a + 1) % 4]}, hi[2] = {his[b], his[(b + 2) % 3]}, in[2] = {ints[e], 1};
          int64_t odims[2];
          bool valid = true;
          for (int d = 0; d < 2; d++) {
            int64_t n = in_dims[s][d];
            odims[d] = lo[d] + hi[d] + n + (n > 0 ? (n - 1) * in[d] : 0);
            valid = valid && odims[d] >= 0;
          }
          if (!valid) continue;
          hlo_literal *pops[2] = {lit_counting(2, in_dims[s]), scalar_s32(-1)};
          ins = make_instr(c, HLO_OP_PAD, shape_make(HLO_S32, 2, odims), 2, pops);
          set_ints(m, &ins->pad_lo, 2, lo);
          set_ints(m, &ins->pad_hi, 2, hi);
          set_ints(m, &ins->pad_interior, 2, in);
          CHECK_OK(run(eval_pad, ins, pops, &out));
          bool ok = out && dims_are(out, 2, odims);
          for (int64_t i = 0; ok && i < odims[0]; i++)
            for (int64_t j = 0; j < odims[1]; j++) {
              int64_t src[2], pos[2] = {i, j};
              bool hit = true;
              for (int d = 0; d < 2; d++) {
                int64_t rel = pos[d] - lo[d];
                hit = hit && rel >= 0 && rel % (in[d] + 1) == 0 && rel / (in[d] + 1) < in_dims[s][d];
                src[d] = hit ? rel / (in[d] + 1) : 0;
              }
              int32_t expect = hit ? (int32_t)(src[0] * in_dims[s][1] + src[1]) : -1;
              ok = ok && s32_at(out, i * odims[1] + j) == expect;
            }
          CHECK(ok);
          checked++;
          literal_free(out);
          free_all(pops, 2);
        }
  CHECK(checked == 30);
  hlo_module_free(m);
}

static void test_iota(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_literal *out = NULL;
  int64_t d23[] = {2, 3};
  hlo_instr *ins = make_instr(c, HLO_OP_IOTA, shape_make(HLO_S32, 2, d23), 0, NULL);
  ins->iota_dimension = 1;
  CHECK_OK(run(eval_iota, ins, NULL, &out));
  int32_t want[] = {0, 1, 2, 0, 1, 2};
  CHECK(s32_equal(out, want, 6));
  literal_free(out);
  ins->iota_dimension = 0;
  CHECK_OK(run(eval_iota, ins, NULL, &out));
  int32_t want0[] = {0, 0, 0, 1, 1, 1};
  CHECK(s32_equal(out, want0, 6));
  literal_free(out);

  int64_t d3[] = {3};
  ins = make_instr(c, HLO_OP_IOTA, shape_make(HLO_PRED, 1, d3), 0, NULL);
  CHECK_OK(run(eval_iota, ins, NULL, &out));
  CHECK(out && ((uint8_t *)out->data)[0] == 0 && ((uint8_t *)out->data)[1] == 1 && ((uint8_t *)out->data)[2] == 1);
  literal_free(out);

  int64_t d4[] = {4};
  ins = make_instr(c, HLO_OP_IOTA, shape_make(HLO_BF16, 1, d4), 0, NULL);
  CHECK_OK(run(eval_iota, ins, NULL, &out));
  CHECK(out && bf16_to_f32(((uint16_t *)out->data)[3]) == 3.0f);
  literal_free(out);

  int64_t d0[] = {2, 0};
  ins = make_instr(c, HLO_OP_IOTA, shape_make(HLO_F32, 2, d0), 0, NULL);
  ins->iota_dimension = 1;
  CHECK_OK(run(eval_iota, ins, NULL, &out));
  CHECK(out && out->n == 0);
  literal_free(out);

  ins->iota_dimension = 2;
  CHECK_ERR(run(eval_iota, ins, NULL, &out), "iota_dimension");
  hlo_module_free(m);
}

/* Random shapes through transpose, slice, reverse, broadcast and dynamic-slice, checked
 * element by element against the index formulas of the definitions. This exercises the
 * copy planner's dimension merging on many stride patterns. */
static uint32_t rnd_state = 7;
static int64_t rnd(int64_t n) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return (int64_t)((rnd_state >> 8) % (uint32_t)n);
}

static void test_random_data_movement(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  for (int iter = 0; iter < 300; iter++) {
    int rank = (int)rnd(5);
    int64_t dims[HLO_MAX_RANK];
    for (int d = 0; d < rank; d++) dims[d] = rnd(8) == 0 ? (rnd(3) == 0 ? 0 : 1) : 1 + rnd(4);
    hlo_literal *in = lit_counting(rank, dims), *out = NULL;
    int64_t in_strides[HLO_MAX_RANK];
    shape_strides(&in->shape, in_strides);
    int op = (int)rnd(5);
    int64_t odims[HLO_MAX_RANK], a[HLO_MAX_RANK], b[HLO_MAX_RANK], e[HLO_MAX_RANK];
    int orank = rank;
    hlo_instr *ins;
    hlo_literal *ops[1 + HLO_MAX_RANK] = {in};
    int n_ops = 1;
    if (op == 0) { /* transpose: a = random permutation */
      for (int d = 0; d < rank; d++) a[d] = d;
      for (int d = rank - 1; d > 0; d--) {
        int64_t j = rnd(d + 1), t = a[d];
        a[d] = a[j];
        a[j] = t;
      }
      for (int d = 0; d < rank; d++) odims[d] = dims[a[d]];
      ins = make_instr(c, HLO_OP_TRANSPOSE, shape_make(HLO_S32, rank, odims), 1, ops);
      set_ints(m, &ins->dimensions, rank, a);
    } else if (op == 1) { /* slice: a = start, b = limit, e = stride */
      for (int d = 0; d < rank; d++) {
        a[d] = rnd(dims[d] + 1);
        b[d] = a[d] + rnd(dims[d] - a[d] + 1);
        e[d] = 1 + rnd(3);
        odims[d] = (b[d] - a[d] + e[d] - 1) / e[d];
      }
      ins = make_instr(c, HLO_OP_SLICE, shape_make(HLO_S32, rank, odims), 1, ops);
      set_ints(m, &ins->slice_start, rank, a);
      set_ints(m, &ins->slice_limit, rank, b);
      set_ints(m, &ins->slice_stride, rank, e);
    } else if (op == 2) { /* reverse: a[d] = 1 when reversed */
      int64_t list[HLO_MAX_RANK];
      int n = 0;
      for (int d = 0; d < rank; d++) {
        a[d] = rnd(2);
        if (a[d]) list[n++] = d;
        odims[d] = dims[d];
      }
      ins = make_instr(c, HLO_OP_REVERSE, shape_make(HLO_S32, rank, odims), 1, ops);
      set_ints(m, &ins->dimensions, n, list);
    } else if (op == 3) { /* broadcast: operand dim d -> output dim a[d], increasing */
      orank = rank + (int)rnd(3);
      int64_t at = 0;
      for (int d = 0; d < rank; d++) {
        a[d] = at + rnd(orank - at - (rank - d) + 1);
        at = a[d] + 1;
      }
      for (int d = 0; d < orank; d++) odims[d] = 1 + rnd(3);
      for (int d = 0; d < rank; d++) odims[a[d]] = dims[d] == 1 && rnd(2) ? 3 : dims[d];
      ins = make_instr(c, HLO_OP_BROADCAST, shape_make(HLO_S32, orank, odims), 1, ops);
      set_ints(m, &ins->dimensions, rank, a);
    } else { /* dynamic-slice: a = requested start (maybe out of range), odims = sizes */
      for (int d = 0; d < rank; d++) {
        odims[d] = rnd(dims[d] + 1);
        a[d] = rnd(dims[d] + 3) - 1;
        ops[n_ops++] = scalar_s32((int32_t)a[d]);
      }
      ins = make_instr(c, HLO_OP_DYNAMIC_SLICE, shape_make(HLO_S32, rank, odims), n_ops, ops);
    }
    eval_kernel k = op == 0 ? eval_transpose : op == 1 ? eval_slice : op == 2 ? eval_reverse
                  : op == 3 ? eval_broadcast : eval_dynamic_slice;
    CHECK_OK(run(k, ins, ops, &out));
    hlo_shape os = shape_make(HLO_S32, orank, odims);
    bool ok = out && out->n == shape_elements(&os);
    int64_t oidx[HLO_MAX_RANK] = {0};
    for (int64_t i = 0; ok && i < out->n; i++) {
      int64_t src = 0;
      for (int d = 0; d < rank; d++) {
        int64_t id;
        if (op == 0) id = 0; /* filled below */
        else if (op == 1) id = a[d] + oidx[d] * e[d];
        else if (op == 2) id = a[d] ? dims[d] - 1 - oidx[d] : oidx[d];
        else if (op == 3) id = dims[d] == 1 ? 0 : oidx[a[d]];
        else {
          int64_t st = a[d] < 0 ? 0 : a[d] > dims[d] - odims[d] ? dims[d] - odims[d] : a[d];
          id = st + oidx[d];
        }
        src += id * in_strides[d];
      }
      if (op == 0) {
        src = 0;
        for (int d = 0; d < rank; d++) src += oidx[d] * in_strides[a[d]];
      }
      ok = s32_at(out, i) == (int32_t)src;
      eval_next_index(orank, odims, oidx);
    }
    CHECK(ok);
    literal_free(out);
    free_all(ops, n_ops);
  }
  hlo_module_free(m);
}

/* ---- reduce ---- */

static void test_reduce(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *add = binary_comp(m, "add", HLO_OP_ADD, HLO_S32);
  hlo_computation *add_g = binary_comp_generic(m, "add_g", HLO_OP_ADD, HLO_S32);
  hlo_literal *out = NULL;
  int64_t d234[] = {2, 3, 4}, d3[] = {3};
  hlo_literal *ops[2] = {lit_counting(3, d234), scalar_s32(1000)};
  for (int g = 0; g < 2; g++) {
    hlo_instr *ins = make_instr(c, HLO_OP_REDUCE, shape_make(HLO_S32, 1, d3), 2, ops);
    set_ints(m, &ins->dimensions, 2, (int64_t[]){0, 2});
    hlo_computation *fn = g ? add_g : add;
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, ops, &out));
    int32_t want[3];
    for (int b = 0; b < 3; b++) {
      want[b] = 1000;
      for (int a = 0; a < 2; a++)
        for (int e = 0; e < 4; e++) want[b] += (a * 3 + b) * 4 + e;
    }
    CHECK(s32_equal(out, want, 3));
    literal_free(out);

    /* all dimensions -> scalar; no dimensions -> elementwise fold with init */
    ins = make_instr(c, HLO_OP_REDUCE, shape_scalar(HLO_S32), 2, ops);
    set_ints(m, &ins->dimensions, 3, (int64_t[]){2, 0, 1});
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, ops, &out));
    CHECK(out && out->n == 1 && s32_at(out, 0) == 1000 + 23 * 24 / 2);
    literal_free(out);
    ins = make_instr(c, HLO_OP_REDUCE, shape_make(HLO_S32, 3, d234), 2, ops);
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, ops, &out));
    CHECK(out && out->n == 24 && s32_at(out, 5) == 1005);
    literal_free(out);

    /* reducing an empty dimension gives init; an empty result is empty */
    int64_t d03[] = {0, 3}, d0[] = {0};
    hlo_literal *eops[2] = {lit(HLO_S32, 2, d03), scalar_s32(7)};
    ins = make_instr(c, HLO_OP_REDUCE, shape_make(HLO_S32, 1, d3), 2, eops);
    set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, eops, &out));
    int32_t sevens[] = {7, 7, 7};
    CHECK(s32_equal(out, sevens, 3));
    literal_free(out);
    ins = make_instr(c, HLO_OP_REDUCE, shape_make(HLO_S32, 1, d0), 2, eops);
    set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, eops, &out));
    CHECK(out && out->n == 0);
    literal_free(out);
    free_all(eops, 2);
  }
  free_all(ops, 2);
  hlo_module_free(m);
}

/* Float sums: the fast path and the generic path must agree bit for bit, and both must
 * equal a sequential fold in row-major order of the reduced dimensions. */
static void test_reduce_float_order(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *add = binary_comp(m, "add", HLO_OP_ADD, HLO_F32);
  hlo_computation *add_g = binary_comp_generic(m, "add_g", HLO_OP_ADD, HLO_F32);
  int64_t d[] = {3, 5, 7}, d5[] = {5};
  hlo_literal *ops[2] = {lit(HLO_F32, 3, d), scalar_f32(0.1f)};
  uint32_t seed = 12345;
  for (int64_t i = 0; i < ops[0]->n; i++) {
    seed = seed * 1664525u + 1013904223u;
    ((float *)ops[0]->data)[i] = ((float)(seed >> 8) / (float)(1 << 24) - 0.5f) * powf(10.0f, (float)(i % 7) - 3);
  }
  hlo_literal *res[2] = {NULL, NULL};
  for (int g = 0; g < 2; g++) {
    hlo_instr *ins = make_instr(c, HLO_OP_REDUCE, shape_make(HLO_F32, 1, d5), 2, ops);
    set_ints(m, &ins->dimensions, 2, (int64_t[]){2, 0}); /* order listed does not matter */
    hlo_computation *fn = g ? add_g : add;
    hlo_instr_set_called(ins, 1, &fn);
    CHECK_OK(run(eval_reduce, ins, ops, &res[g]));
  }
  CHECK(res[0] && res[1] && literal_equal(res[0], res[1]));
  bool ok = res[0] != NULL;
  for (int b = 0; ok && b < 5; b++) {
    float acc = 0.1f;
    for (int a = 0; a < 3; a++)
      for (int e = 0; e < 7; e++) acc = acc + f32_at(ops[0], (a * 5 + b) * 7 + e);
    ok = memcmp(&acc, (float *)res[0]->data + b, 4) == 0;
  }
  CHECK(ok);
  free_all(res, 2);
  free_all(ops, 2);
  hlo_module_free(m);
}

/* argmax as a variadic reduce: (value, index) pairs, keeping the first maximum. */
static hlo_computation *argmax_comp(hlo_module *m) {
  hlo_computation *c = hlo_computation_new(m, "argmax");
  hlo_instr *av = scalar_param(c, 0, HLO_F32), *ai = scalar_param(c, 1, HLO_S32);
  hlo_instr *xv = scalar_param(c, 2, HLO_F32), *xi = scalar_param(c, 3, HLO_S32);
  hlo_instr *gt = compare(c, HLO_DIR_GT, HLO_CMP_DEFAULT, xv, av);
  hlo_instr *v = select3(c, HLO_F32, gt, xv, av), *i = select3(c, HLO_S32, gt, xi, ai);
  hlo_shape es[2] = {shape_scalar(HLO_F32), shape_scalar(HLO_S32)};
  hlo_shape ts = shape_tuple(m->arena, 2, es);
  hlo_instr *t = hlo_instr_new(c, HLO_OP_TUPLE, &ts, NULL);
  hlo_instr *tops[2] = {v, i};
  hlo_instr_set_operands(t, 2, tops);
  return finish(c, t);
}

static void test_reduce_variadic(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *fn = argmax_comp(m);
  int64_t d[] = {3, 4}, d3[] = {3};
  float vals[] = {1, 5, 5, 2, /**/ -1, -3, -2, -1, /**/ 0, 0, 0, 9};
  hlo_literal *ops[4] = {lit_f32(2, d, vals), lit(HLO_S32, 2, d), scalar_f32(-INFINITY), scalar_s32(-1)};
  for (int i = 0; i < 12; i++) ((int32_t *)ops[1]->data)[i] = i % 4;
  hlo_shape es[2] = {shape_make(HLO_F32, 1, d3), shape_make(HLO_S32, 1, d3)};
  hlo_instr *ins = make_instr(c, HLO_OP_REDUCE, shape_tuple(m->arena, 2, es), 4, ops);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  hlo_instr_set_called(ins, 1, &fn);
  hlo_literal *out = NULL;
  CHECK_OK(run(eval_reduce, ins, ops, &out));
  CHECK(out && out->shape.type == HLO_TUPLE && out->shape.n_elems == 2);
  if (out && out->shape.type == HLO_TUPLE) {
    float wv[] = {5, -1, 9};
    int32_t wi[] = {1, 0, 3};
    CHECK(f32_equal(out->tuple[0], wv, 3));
    CHECK(s32_equal(out->tuple[1], wi, 3));
  }
  literal_free(out);

  /* the same over an empty dimension: the init pair */
  int64_t d30[] = {3, 0};
  hlo_literal *eops[4] = {lit(HLO_F32, 2, d30), lit(HLO_S32, 2, d30), scalar_f32(-INFINITY), scalar_s32(-1)};
  ins = make_instr(c, HLO_OP_REDUCE, shape_tuple(m->arena, 2, es), 4, eops);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  hlo_instr_set_called(ins, 1, &fn);
  CHECK_OK(run(eval_reduce, ins, eops, &out));
  if (out && out->shape.type == HLO_TUPLE) {
    int32_t wi[] = {-1, -1, -1};
    CHECK(s32_equal(out->tuple[1], wi, 3) && isinf(f32_at(out->tuple[0], 2)));
  } else {
    CHECK(!"tuple result");
  }
  literal_free(out);
  free_all(eops, 4);
  free_all(ops, 4);
  hlo_module_free(m);
}

/* ---- reduce-window ---- */

/* Independent transcription of reduce-window for s32 sums: walk every window offset,
 * map it into the padded, base-dilated input, and add the element it hits, if any. */
static void brute_reduce_window(const hlo_literal *in, const hlo_window *w, const hlo_shape *os, int32_t init,
                                int32_t *want) {
  int rank = in->shape.rank;
  int64_t oidx[HLO_MAX_RANK] = {0}, widx[HLO_MAX_RANK];
  int64_t wdims[HLO_MAX_RANK], in_strides[HLO_MAX_RANK];
  shape_strides(&in->shape, in_strides);
  for (int d = 0; d < rank; d++) wdims[d] = w->dims[d].size;
  int64_t n_out = shape_elements(os), n_win = 1;
  for (int d = 0; d < rank; d++) n_win *= wdims[d];
  for (int64_t o = 0; o < n_out; o++) {
    int32_t acc = init;
    memset(widx, 0, sizeof widx);
    for (int64_t k = 0; k < n_win; k++) {
      bool hit = true;
      int64_t lin = 0;
      for (int d = 0; d < rank; d++) {
        int64_t p = oidx[d] * w->dims[d].stride + widx[d] * w->dims[d].rhs_dilate - w->dims[d].pad_lo;
        int64_t ld = w->dims[d].lhs_dilate;
        if (p < 0 || p % ld != 0 || p / ld >= in->shape.dims[d]) hit = false;
        else lin += (p / ld) * in_strides[d];
      }
      if (hit) acc += s32_at(in, lin);
      eval_next_index(rank, wdims, widx);
    }
    want[o] = acc;
    eval_next_index(rank, os->dims, oidx);
  }
}

static int64_t window_out_dim(int64_t in, const hlo_window_dim *w) {
  int64_t dilated_in = in == 0 ? 0 : (in - 1) * w->lhs_dilate + 1;
  int64_t padded = dilated_in + w->pad_lo + w->pad_hi;
  int64_t dilated_w = w->size == 0 ? 0 : (w->size - 1) * w->rhs_dilate + 1;
  if (padded < dilated_w) return 0;
  return (padded - dilated_w) / w->stride + 1;
}

static hlo_window_dim wdim(int64_t size, int64_t stride, int64_t lo, int64_t hi, int64_t ld, int64_t rd) {
  hlo_window_dim w = {size, stride, lo, hi, ld, rd, false};
  return w;
}

static void test_reduce_window(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *add = binary_comp(m, "add", HLO_OP_ADD, HLO_F32);
  hlo_literal *out = NULL;
  int64_t d5[] = {5};
  float v[] = {1, 2, 3, 4, 5};
  struct {
    hlo_window_dim w;
    int n;
    float want[10];
  } cases[] = {
      {wdim(2, 1, 1, 1, 1, 1), 6, {1, 3, 5, 7, 9, 5}},     /* padding both sides */
      {wdim(3, 2, 0, 0, 2, 1), 4, {3, 5, 7, 9}},           /* base dilation: holes skipped */
      {wdim(2, 1, 0, 0, 1, 2), 3, {4, 6, 8}},              /* window dilation */
      {wdim(2, 2, -1, 0, 1, 1), 2, {5, 9}},                /* negative padding crops */
      {wdim(1, 1, 0, 0, 1, 1), 5, {1, 2, 3, 4, 5}},        /* identity */
      {wdim(3, 1, 3, 3, 1, 1), 9, {0, 1, 3, 6, 9, 12, 9, 5, 0}}, /* windows entirely in padding -> init */
  };
  hlo_literal *ops[2] = {lit_f32(1, d5, v), scalar_f32(0)};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t on = cases[k].n;
    CHECK(window_out_dim(5, &cases[k].w) == on);
    hlo_instr *ins = make_instr(c, HLO_OP_REDUCE_WINDOW, shape_make(HLO_F32, 1, &on), 2, ops);
    ins->window.rank = 1;
    ins->window.dims[0] = cases[k].w;
    hlo_instr_set_called(ins, 1, &add);
    CHECK_OK(run(eval_reduce_window, ins, ops, &out));
    CHECK(f32_equal(out, cases[k].want, on));
    literal_free(out);
  }
  free_all(ops, 2);

  /* 3-D brute force, fast and generic paths, over assorted windows */
  hlo_computation *add_s = binary_comp(m, "add_s", HLO_OP_ADD, HLO_S32);
  hlo_computation *add_sg = binary_comp_generic(m, "add_sg", HLO_OP_ADD, HLO_S32);
  int64_t din[] = {4, 5, 3};
  hlo_literal *sops[2] = {lit_counting(3, din), scalar_s32(-100)};
  hlo_window_dim pool[] = {wdim(2, 2, 0, 1, 1, 1), wdim(3, 1, 1, 1, 1, 1), wdim(2, 1, 0, 0, 2, 1),
                           wdim(2, 2, 1, 0, 1, 2), wdim(3, 2, 2, -1, 3, 2), wdim(1, 1, 0, 0, 1, 1),
                           wdim(4, 1, -1, 2, 1, 1), wdim(0, 1, 0, 0, 1, 1)};
  int n_pool = (int)(sizeof pool / sizeof pool[0]);
  for (int a = 0; a < n_pool; a++)
    for (int g = 0; g < 2; g++) {
      hlo_window w = {.rank = 3};
      w.dims[0] = pool[a];
      w.dims[1] = pool[(a + 3) % n_pool];
      w.dims[2] = pool[(a + 5) % n_pool];
      int64_t od[3];
      for (int d = 0; d < 3; d++) od[d] = window_out_dim(din[d], &w.dims[d]);
      hlo_shape os = shape_make(HLO_S32, 3, od);
      hlo_instr *ins = make_instr(c, HLO_OP_REDUCE_WINDOW, os, 2, sops);
      ins->window = w;
      hlo_computation *fn = g ? add_sg : add_s;
      hlo_instr_set_called(ins, 1, &fn);
      CHECK_OK(run(eval_reduce_window, ins, sops, &out));
      int64_t n = shape_elements(&os);
      int32_t *want = calloc((size_t)(n ? n : 1), sizeof *want);
      brute_reduce_window(sops[0], &w, &os, -100, want);
      CHECK(s32_equal(out, want, n));
      free(want);
      literal_free(out);
    }

  /* zero-size input: every window is empty */
  int64_t dz[] = {0, 3}, dzo[] = {2, 3};
  hlo_literal *zops[2] = {lit(HLO_S32, 2, dz), scalar_s32(4)};
  hlo_instr *ins = make_instr(c, HLO_OP_REDUCE_WINDOW, shape_make(HLO_S32, 2, dzo), 2, zops);
  ins->window.rank = 2;
  ins->window.dims[0] = wdim(1, 1, 1, 1, 1, 1);
  ins->window.dims[1] = wdim(1, 1, 0, 0, 1, 1);
  hlo_instr_set_called(ins, 1, &add_s);
  CHECK_OK(run(eval_reduce_window, ins, zops, &out));
  int32_t fours[] = {4, 4, 4, 4, 4, 4};
  CHECK(s32_equal(out, fours, 6));
  literal_free(out);
  free_all(zops, 2);

  /* variadic: argmax over windows of 2, stride 2, padded on the right */
  hlo_computation *am = argmax_comp(m);
  int64_t d6[] = {6}, d3[] = {3};
  float vv[] = {4, 7, 7, 1, -2, 8};
  hlo_literal *vops[4] = {lit_f32(1, d6, vv), lit_counting(1, d6), scalar_f32(-INFINITY), scalar_s32(-1)};
  hlo_shape es[2] = {shape_make(HLO_F32, 1, d3), shape_make(HLO_S32, 1, d3)};
  ins = make_instr(c, HLO_OP_REDUCE_WINDOW, shape_tuple(m->arena, 2, es), 4, vops);
  ins->window.rank = 1;
  ins->window.dims[0] = wdim(3, 2, 0, 1, 1, 1); /* windows {0,1,2} {2,3,4} {4,5,pad} */
  hlo_instr_set_called(ins, 1, &am);
  CHECK_OK(run(eval_reduce_window, ins, vops, &out));
  if (out && out->shape.type == HLO_TUPLE) {
    float wv[] = {7, 7, 8};
    int32_t wi[] = {1, 2, 5};
    CHECK(f32_equal(out->tuple[0], wv, 3));
    CHECK(s32_equal(out->tuple[1], wi, 3));
  } else {
    CHECK(!"tuple result");
  }
  literal_free(out);
  free_all(vops, 4);

  /* window rank mismatch and absurd strides are errors naming the instruction */
  ins = make_instr(c, HLO_OP_REDUCE_WINDOW, shape_make(HLO_S32, 3, din), 2, sops);
  ins->window.rank = 2;
  hlo_instr_set_called(ins, 1, &add_s);
  CHECK_ERR(run(eval_reduce_window, ins, sops, &out), ins->name);
  int64_t d1[] = {2, 1, 1};
  ins = make_instr(c, HLO_OP_REDUCE_WINDOW, shape_make(HLO_S32, 3, d1), 2, sops);
  ins->window.rank = 3;
  ins->window.dims[0] = wdim(1, INT64_MAX, 0, 0, 1, 1);
  ins->window.dims[1] = wdim(1, 1, INT64_MIN, 0, 1, 1);
  ins->window.dims[2] = wdim(1, 1, 0, 0, 1, 1);
  hlo_instr_set_called(ins, 1, &add_s);
  CHECK_ERR(run(eval_reduce_window, ins, sops, &out), "overflow");
  free_all(sops, 2);
  hlo_module_free(m);
}

/* ---- select-and-scatter ---- */

static hlo_computation *select_comp(hlo_module *m, const char *name, hlo_direction dir, bool generic) {
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_instr *a = scalar_param(c, 0, HLO_F32), *b = scalar_param(c, 1, HLO_F32);
  hlo_instr *r = compare(c, dir, HLO_CMP_DEFAULT, a, b);
  if (generic) { /* and(r, r): same answer, not a bare compare */
    r = binary(c, HLO_OP_AND, HLO_PRED, r, r);
  }
  return finish(c, r);
}

static void test_select_and_scatter(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *sel[2] = {select_comp(m, "ge", HLO_DIR_GE, false), select_comp(m, "ge_g", HLO_DIR_GE, true)};
  hlo_computation *sca[2] = {binary_comp(m, "add", HLO_OP_ADD, HLO_F32),
                             binary_comp_generic(m, "add_g", HLO_OP_ADD, HLO_F32)};
  hlo_literal *out = NULL;
  for (int g = 0; g < 2; g++) {
    hlo_computation *called[2] = {sel[g], sca[g]};
    /* max-pool gradient, 2x2 windows, stride 2 */
    int64_t d44[] = {4, 4}, d22[] = {2, 2};
    float op[] = {1, 5, 2, 2, /**/ 3, 4, 2, 2, /**/ 0, 0, 9, 1, /**/ 8, 0, 1, 1};
    float src[] = {10, 20, 30, 40};
    hlo_literal *ops[3] = {lit_f32(2, d44, op), lit_f32(2, d22, src), scalar_f32(0)};
    hlo_instr *ins = make_instr(c, HLO_OP_SELECT_AND_SCATTER, shape_make(HLO_F32, 2, d44), 3, ops);
    ins->window.rank = 2;
    ins->window.dims[0] = wdim(2, 2, 0, 0, 1, 1);
    ins->window.dims[1] = wdim(2, 2, 0, 0, 1, 1);
    hlo_instr_set_called(ins, 2, called);
    CHECK_OK(run(eval_select_and_scatter, ins, ops, &out));
    /* window (0,1) is all 2s: GE keeps the first; window (1,1): 9 */
    float want[] = {0, 10, 20, 0, /**/ 0, 0, 0, 0, /**/ 0, 0, 40, 0, /**/ 30, 0, 0, 0};
    CHECK(f32_equal(out, want, 16));
    literal_free(out);
    free_all(ops, 3);

    /* overlapping windows scatter into the same element; padding is never selected even
       when it would win (the padded slot of window 0 is skipped, not compared) */
    int64_t d3[] = {3}, d4[] = {4};
    float op1[] = {-5, 3, 2}, src1[] = {1, 10, 100, 1000};
    hlo_literal *ops1[3] = {lit_f32(1, d3, op1), lit_f32(1, d4, src1), scalar_f32(0.5f)};
    ins = make_instr(c, HLO_OP_SELECT_AND_SCATTER, shape_make(HLO_F32, 1, d3), 3, ops1);
    ins->window.rank = 1;
    ins->window.dims[0] = wdim(2, 1, 1, 1, 1, 1); /* windows {pad,-5} {-5,3} {3,2} {2,pad} */
    hlo_instr_set_called(ins, 2, called);
    CHECK_OK(run(eval_select_and_scatter, ins, ops1, &out));
    float want1[] = {1.5f, 110.5f, 1000.5f};
    CHECK(f32_equal(out, want1, 3));
    literal_free(out);
    free_all(ops1, 3);

    /* empty source: result is all init */
    int64_t d0[] = {0};
    hlo_literal *ops2[3] = {lit_f32(1, d3, op1), lit(HLO_F32, 1, d0), scalar_f32(2)};
    ins = make_instr(c, HLO_OP_SELECT_AND_SCATTER, shape_make(HLO_F32, 1, d3), 3, ops2);
    ins->window.rank = 1;
    ins->window.dims[0] = wdim(4, 1, 0, 0, 1, 1);
    hlo_instr_set_called(ins, 2, called);
    CHECK_OK(run(eval_select_and_scatter, ins, ops2, &out));
    float want2[] = {2, 2, 2};
    CHECK(f32_equal(out, want2, 3));
    literal_free(out);
    free_all(ops2, 3);
  }

  /* a float maximum scatter: the fast path must keep the call's operand order
     (scatter(source, current)), visible with signed zeros */
  hlo_computation *mx[2] = {binary_comp(m, "max", HLO_OP_MAXIMUM, HLO_F32),
                            binary_comp_generic(m, "max_g", HLO_OP_MAXIMUM, HLO_F32)};
  hlo_literal *res[2] = {NULL, NULL};
  int64_t d2[] = {2};
  float opv[] = {1, 2}, srcv[] = {-0.0f, 0.0f};
  hlo_literal *mops[3] = {lit_f32(1, d2, opv), lit_f32(1, d2, srcv), scalar_f32(0.0f)};
  ((float *)mops[2]->data)[0] = 0.0f;
  for (int g = 0; g < 2; g++) {
    hlo_computation *called[2] = {sel[0], mx[g]};
    hlo_instr *ins = make_instr(c, HLO_OP_SELECT_AND_SCATTER, shape_make(HLO_F32, 1, d2), 3, mops);
    ins->window.rank = 1;
    ins->window.dims[0] = wdim(1, 1, 0, 0, 1, 1);
    hlo_instr_set_called(ins, 2, called);
    CHECK_OK(run(eval_select_and_scatter, ins, mops, &res[g]));
  }
  CHECK(res[0] && res[1] && literal_equal(res[0], res[1]));
  free_all(res, 2);
  /* and with the init value -0 instead */
  ((float *)mops[2]->data)[0] = -0.0f;
  for (int g = 0; g < 2; g++) {
    hlo_computation *called[2] = {sel[0], mx[g]};
    hlo_instr *ins = make_instr(c, HLO_OP_SELECT_AND_SCATTER, shape_make(HLO_F32, 1, d2), 3, mops);
    ins->window.rank = 1;
    ins->window.dims[0] = wdim(1, 1, 0, 0, 1, 1);
    hlo_instr_set_called(ins, 2, called);
    CHECK_OK(run(eval_select_and_scatter, ins, mops, &res[g]));
  }
  CHECK(res[0] && res[1] && literal_equal(res[0], res[1]));
  free_all(res, 2);
  free_all(mops, 3);
  hlo_module_free(m);
}

/* ---- sort ---- */

static void test_sort_stable_multi(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_type ts[2] = {HLO_S32, HLO_F32};
  hlo_computation *lt = compare_comp(m, "lt", 2, ts, 0, 1, HLO_DIR_LT, HLO_CMP_DEFAULT);
  hlo_computation *gt = compare_comp(m, "gt", 2, ts, 0, 1, HLO_DIR_GT, HLO_CMP_DEFAULT);
  hlo_computation *swapped = compare_comp(m, "swapped", 2, ts, 1, 0, HLO_DIR_LT, HLO_CMP_DEFAULT); /* = GT */
  /* keys by the second operand */
  hlo_computation *by_val = compare_comp(m, "by_val", 2, ts, 2, 3, HLO_DIR_LT, HLO_CMP_DEFAULT);
  int64_t d7[] = {7};
  int32_t keys[] = {3, 1, 2, 1, 3, 0, 1};
  float vals[] = {0, 1, 2, 3, 4, 5, 6};
  hlo_literal *ops[2] = {lit_s32(1, d7, keys), lit_f32(1, d7, vals)}, *out = NULL;
  hlo_shape es[2] = {shape_make(HLO_S32, 1, d7), shape_make(HLO_F32, 1, d7)};
  struct {
    hlo_computation *cmp;
    int32_t k[7];
    float v[7];
  } cases[] = {
      {lt, {0, 1, 1, 1, 2, 3, 3}, {5, 1, 3, 6, 2, 0, 4}},
      {gt, {3, 3, 2, 1, 1, 1, 0}, {0, 4, 2, 1, 3, 6, 5}},
      {swapped, {3, 3, 2, 1, 1, 1, 0}, {0, 4, 2, 1, 3, 6, 5}},
      {by_val, {3, 1, 2, 1, 3, 0, 1}, {0, 1, 2, 3, 4, 5, 6}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hlo_instr *ins = make_instr(c, HLO_OP_SORT, shape_tuple(m->arena, 2, es), 2, ops);
    set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
    ins->is_stable = true;
    hlo_instr_set_called(ins, 1, &cases[k].cmp);
    CHECK_OK(run(eval_sort, ins, ops, &out));
    if (out && out->shape.type == HLO_TUPLE) {
      CHECK(s32_equal(out->tuple[0], cases[k].k, 7));
      CHECK(f32_equal(out->tuple[1], cases[k].v, 7));
    } else {
      CHECK(!"tuple result");
    }
    literal_free(out);
  }
  free_all(ops, 2);

  /* 2-D, sorting along each dimension */
  int64_t d23[] = {2, 3};
  int32_t k2[] = {5, 1, 4, 0, 9, 2};
  hlo_literal *one = lit_s32(2, d23, k2);
  hlo_type t1 = HLO_S32;
  hlo_computation *lt1 = compare_comp(m, "lt1", 1, &t1, 0, 1, HLO_DIR_LT, HLO_CMP_DEFAULT);
  hlo_instr *ins = make_instr(c, HLO_OP_SORT, shape_make(HLO_S32, 2, d23), 1, &one);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  hlo_instr_set_called(ins, 1, &lt1);
  CHECK_OK(run(eval_sort, ins, &one, &out));
  int32_t w1[] = {1, 4, 5, 0, 2, 9};
  CHECK(s32_equal(out, w1, 6));
  literal_free(out);
  ins = make_instr(c, HLO_OP_SORT, shape_make(HLO_S32, 2, d23), 1, &one);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  hlo_instr_set_called(ins, 1, &lt1);
  CHECK_OK(run(eval_sort, ins, &one, &out));
  int32_t w0[] = {0, 1, 2, 5, 9, 4};
  CHECK(s32_equal(out, w0, 6));
  literal_free(out);
  literal_free(one);

  /* zero-size */
  int64_t d02[] = {0, 2};
  hlo_literal *z = lit(HLO_S32, 2, d02);
  ins = make_instr(c, HLO_OP_SORT, shape_make(HLO_S32, 2, d02), 1, &z);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
  hlo_instr_set_called(ins, 1, &lt1);
  CHECK_OK(run(eval_sort, ins, &z, &out));
  CHECK(out && out->n == 0);
  literal_free(out);
  literal_free(z);
  hlo_module_free(m);
}

/* Lexicographic comparator (key, then value descending): only the generic path applies. */
static void test_sort_generic_comparator(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_computation *cmp = hlo_computation_new(m, "lex");
  hlo_instr *kl = scalar_param(cmp, 0, HLO_S32), *kr = scalar_param(cmp, 1, HLO_S32);
  hlo_instr *vl = scalar_param(cmp, 2, HLO_S32), *vr = scalar_param(cmp, 3, HLO_S32);
  hlo_instr *klt = compare(cmp, HLO_DIR_LT, HLO_CMP_DEFAULT, kl, kr);
  hlo_instr *keq = compare(cmp, HLO_DIR_EQ, HLO_CMP_DEFAULT, kl, kr);
  hlo_instr *vgt = compare(cmp, HLO_DIR_GT, HLO_CMP_DEFAULT, vl, vr);
  hlo_instr *tie = binary(cmp, HLO_OP_AND, HLO_PRED, keq, vgt);
  finish(cmp, binary(cmp, HLO_OP_OR, HLO_PRED, klt, tie));
  int64_t d6[] = {6};
  int32_t keys[] = {2, 1, 2, 1, 0, 2}, vals[] = {1, 7, 3, 8, 4, 2};
  hlo_literal *ops[2] = {lit_s32(1, d6, keys), lit_s32(1, d6, vals)}, *out = NULL;
  hlo_shape es[2] = {shape_make(HLO_S32, 1, d6), shape_make(HLO_S32, 1, d6)};
  hlo_instr *ins = make_instr(c, HLO_OP_SORT, shape_tuple(m->arena, 2, es), 2, ops);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  hlo_instr_set_called(ins, 1, &cmp);
  CHECK_OK(run(eval_sort, ins, ops, &out));
  if (out && out->shape.type == HLO_TUPLE) {
    int32_t wk[] = {0, 1, 1, 2, 2, 2}, wv[] = {4, 8, 7, 3, 2, 1};
    CHECK(s32_equal(out->tuple[0], wk, 6));
    CHECK(s32_equal(out->tuple[1], wv, 6));
  } else {
    CHECK(!"tuple result");
  }
  literal_free(out);
  free_all(ops, 2);
  hlo_module_free(m);
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* NaNs and signed zeros: TOTALORDER gives the full order; the direct-compare fast path
 * and the generic path (the same compare behind and(x, x)) agree bit for bit, also for
 * IEEE LT where NaN is not ordered. */
static void test_sort_floats(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  hlo_type t = HLO_F32;
  int64_t d8[] = {8};
  float nan = NAN;
  float vals[] = {-0.0f, nan, 0.0f, -INFINITY, -nan, 1, 0.0f, -1};
  hlo_literal *in = lit_f32(1, d8, vals), *out = NULL;
  hlo_computation *total = compare_comp(m, "total", 1, &t, 0, 1, HLO_DIR_LT, HLO_CMP_TOTALORDER);
  hlo_instr *ins = make_instr(c, HLO_OP_SORT, shape_make(HLO_F32, 1, d8), 1, &in);
  set_ints(m, &ins->dimensions, 1, (int64_t[]){0});
  hlo_instr_set_called(ins, 1, &total);
  CHECK_OK(run(eval_sort, ins, &in, &out));
  uint32_t want[] = {f32_bits(-nan), f32_bits(-INFINITY), f32_bits(-1), f32_bits(-0.0f),
                     f32_bits(0.0f), f32_bits(0.0f),      f32_bits(1),  f32_bits(nan)};
  bool ok = out && out->n == 8;
  for (int i = 0; ok && i < 8; i++) ok = f32_bits(f32_at(out, i)) == want[i];
  CHECK(ok);
  literal_free(out);
  literal_free(in);

  /* fast vs generic on random data with NaNs and duplicates, all directions and types */
  hlo_direction dirs[] = {HLO_DIR_LT, HLO_DIR_GT, HLO_DIR_LE, HLO_DIR_NE};
  hlo_compare_type cts[] = {HLO_CMP_DEFAULT, HLO_CMP_TOTALORDER};
  int64_t d[] = {3, 37};
  hlo_literal *r = lit(HLO_F32, 2, d);
  uint32_t seed = 99;
  for (int64_t i = 0; i < r->n; i++) {
    seed = seed * 1664525u + 1013904223u;
    int k = (int)(seed >> 24) % 10;
    float v = k == 0 ? nan : k == 1 ? -nan : k == 2 ? -0.0f : (float)((int)(seed >> 16) % 7) - 3;
    ((float *)r->data)[i] = v;
  }
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 2; b++) {
      hlo_computation *fast = compare_comp(m, "fast", 1, &t, 0, 1, dirs[a], cts[b]);
      hlo_computation *gen = hlo_computation_new(m, "gen");
      hlo_instr *p0 = scalar_param(gen, 0, t), *p1 = scalar_param(gen, 1, t);
      hlo_instr *cmp = compare(gen, dirs[a], cts[b], p0, p1);
      finish(gen, binary(gen, HLO_OP_AND, HLO_PRED, cmp, cmp));
      hlo_literal *res[2] = {NULL, NULL};
      hlo_computation *fns[2] = {fast, gen};
      for (int g = 0; g < 2; g++) {
        ins = make_instr(c, HLO_OP_SORT, shape_make(HLO_F32, 2, d), 1, &r);
        set_ints(m, &ins->dimensions, 1, (int64_t[]){1});
        hlo_instr_set_called(ins, 1, &fns[g]);
        CHECK_OK(run(eval_sort, ins, &r, &res[g]));
      }
      CHECK(res[0] && res[1] && literal_equal(res[0], res[1]));
      free_all(res, 2);
    }
  literal_free(r);
  hlo_module_free(m);
}

/* ---- topk ---- */

/* Expected order by definition: descending total order (NaN largest), ties by lower
 * index; ascending for largest=false. */
static void test_topk(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d[] = {2, 5}, dk[] = {2, 3};
  float nan = NAN;
  float vals[] = {1, 3, nan, 3, -INFINITY, /* row 1 */ 2, 2, -1, 7, 2};
  hlo_literal *in = lit_f32(2, d, vals), *out = NULL;
  hlo_shape parts[2] = {shape_make(HLO_F32, 2, dk), shape_make(HLO_S32, 2, dk)};
  hlo_instr *ins = make_instr(c, HLO_OP_TOPK, shape_tuple(m->arena, 2, parts), 1, &in);
  ins->k = 3;
  ins->largest = true;
  CHECK_OK(run(eval_topk, ins, &in, &out));
  int32_t want_idx[] = {2, 1, 3, /* row 1 */ 3, 0, 1};
  CHECK(out && s32_equal(out->tuple[1], want_idx, 6));
  CHECK(out && isnan(f32_at(out->tuple[0], 0)) && f32_at(out->tuple[0], 1) == 3 && f32_at(out->tuple[0], 3) == 7);
  literal_free(out);
  ins->largest = false;
  CHECK_OK(run(eval_topk, ins, &in, &out));
  int32_t want_small[] = {4, 0, 1, /* row 1 */ 2, 0, 1};
  CHECK(out && s32_equal(out->tuple[1], want_small, 6));
  literal_free(out);
  ins->k = 6;
  CHECK_ERR(run(eval_topk, ins, &in, &out), "outside");
  literal_free(in);
  hlo_module_free(m);
}

/* ---- batch-norm-inference ---- */

static void test_batch_norm_inference(void) {
  hlo_module *m = new_module();
  hlo_computation *c = entry(m);
  int64_t d[] = {2, 3, 2}, d3[] = {3};
  float x[12], scale[] = {1, 2, 0.5f}, offset[] = {0, 1, -1}, mean[] = {0.5f, -1, 2}, var[] = {1, 4, 0.25f};
  for (int i = 0; i < 12; i++) x[i] = (float)i * 0.75f - 3;
  hlo_literal *ops[5] = {lit_f32(3, d, x), lit_f32(1, d3, scale), lit_f32(1, d3, offset), lit_f32(1, d3, mean),
                         lit_f32(1, d3, var)},
              *out = NULL;
  hlo_instr *ins = make_instr(c, HLO_OP_BATCH_NORM_INFERENCE, shape_make(HLO_F32, 3, d), 5, ops);
  hlo_instr_add_raw_attr(ins, "epsilon", "0.001");
  hlo_instr_add_raw_attr(ins, "feature_index", "1");
  CHECK_OK(run(eval_batch_norm_inference, ins, ops, &out));
  bool ok = out && out->n == 12;
  float eps = 0.001f;
  for (int i = 0; ok && i < 12; i++) {
    int f = (i / 2) % 3;
    float s = scale[f] * (1.0f / sqrtf(var[f] + eps));
    float sh = offset[f] - mean[f] * s;
    float want = x[i] * s + sh;
    ok = f32_at(out, i) == want;
  }
  CHECK(ok);
  literal_free(out);

  ins = make_instr(c, HLO_OP_BATCH_NORM_INFERENCE, shape_make(HLO_F32, 3, d), 5, ops);
  hlo_instr_add_raw_attr(ins, "epsilon", "0.001");
  hlo_instr_add_raw_attr(ins, "feature_index", "3");
  CHECK_ERR(run(eval_batch_norm_inference, ins, ops, &out), "feature_index");
  free_all(ops, 5);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_broadcast), TEST(test_reshape_transpose_reverse), TEST(test_slice), TEST(test_dynamic_slice),
          TEST(test_concatenate), TEST(test_pad), TEST(test_random_data_movement), TEST(test_iota), TEST(test_reduce), TEST(test_reduce_float_order),
          TEST(test_reduce_variadic), TEST(test_reduce_window), TEST(test_select_and_scatter),
          TEST(test_sort_stable_multi), TEST(test_sort_generic_comparator), TEST(test_sort_floats), TEST(test_topk),
          TEST(test_batch_norm_inference))
