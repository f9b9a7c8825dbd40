/* Tests of hlo_verify_module: a hand-built valid module passes, and each kind of
 * structural or shape error, injected into an otherwise valid module, is reported with
 * the computation, instruction and shapes involved. Modules are made directly through
 * ir.h (no parser, no builder) so the verifier is tested on its own. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hlo/ir.h"
#include "hlo/verifier.h"

static hlo_shape arr(hlo_type t, int rank, int64_t d0, int64_t d1) {
  int64_t dims[2] = {d0, d1};
  return shape_make(t, rank, dims);
}

static hlo_instr *param(hlo_computation *c, int64_t number, hlo_shape s, const char *name) {
  hlo_instr *p = hlo_instr_new(c, HLO_OP_PARAMETER, &s, name);
  p->parameter_number = number;
  return p;
}

static hlo_instr *instr(hlo_computation *c, hlo_opcode op, hlo_shape s, const char *name, int n, hlo_instr *a,
                        hlo_instr *b) {
  hlo_instr *ins = hlo_instr_new(c, op, &s, name);
  hlo_instr *ops[2] = {a, b};
  hlo_instr_set_operands(ins, n, ops);
  return ins;
}

/* The parts of the reference module a test may want to break. */
typedef struct fixture {
  hlo_module *m;
  hlo_computation *add_f32, *main;
  hlo_instr *x, *y, *a, *b, *bcast, *sum, *zero, *reduce;
} fixture;

/* add_f32 = (x: f32[], y: f32[]) -> add(x, y)
 * main    = (a: f32[2,3], b: f32[3]) -> reduce(add(a, broadcast(b, {1})), 0, dims={1}) */
static fixture make_fixture(void) {
  fixture f;
  f.m = hlo_module_new("fixture");
  f.add_f32 = hlo_computation_new(f.m, "add_f32");
  f.x = param(f.add_f32, 0, shape_scalar(HLO_F32), "x");
  f.y = param(f.add_f32, 1, shape_scalar(HLO_F32), "y");
  f.add_f32->root = instr(f.add_f32, HLO_OP_ADD, shape_scalar(HLO_F32), "xy", 2, f.x, f.y);
  if (hlo_computation_index_params(f.add_f32)) abort();

  f.main = hlo_computation_new(f.m, "main");
  hlo_shape s23 = arr(HLO_F32, 2, 2, 3);
  s23.has_layout = true;
  s23.minor_to_major[0] = 1, s23.minor_to_major[1] = 0;
  f.a = param(f.main, 0, s23, "a");
  f.b = param(f.main, 1, arr(HLO_F32, 1, 3, 0), "b");
  f.bcast = instr(f.main, HLO_OP_BROADCAST, s23, "bcast", 1, f.b, NULL);
  int64_t one = 1;
  f.bcast->dimensions = hlo_ints_make(f.m->arena, 1, &one);
  f.sum = instr(f.main, HLO_OP_ADD, s23, "sum", 2, f.a, f.bcast);
  hlo_shape scalar = shape_scalar(HLO_F32);
  f.zero = hlo_instr_new(f.main, HLO_OP_CONSTANT, &scalar, "zero");
  hlo_literal *lit;
  if (literal_create(&scalar, &lit)) abort();
  hlo_instr_set_literal(f.zero, lit);
  f.reduce = instr(f.main, HLO_OP_REDUCE, arr(HLO_F32, 1, 2, 0), "reduce", 2, f.sum, f.zero);
  f.reduce->dimensions = hlo_ints_make(f.m->arena, 1, &one);
  hlo_instr_set_called(f.reduce, 1, &f.add_f32);
  f.main->root = f.reduce;
  if (hlo_computation_index_params(f.main)) abort();
  f.main->is_entry = true;
  f.m->entry = f.main;
  return f;
}

static void expect_error(fixture *f, const char *needle) {
  CHECK_ERR(hlo_verify_module(f->m), needle);
  hlo_module_free(f->m);
}

static void test_valid_module(void) {
  fixture f = make_fixture();
  CHECK_OK(hlo_verify_module(f.m));
  hlo_module_free(f.m);
}

static void test_valid_control_flow(void) {
  /* while loop counting to 10 over (s32[], f32[4]), plus a conditional and a call. */
  hlo_module *m = hlo_module_new("loops");
  hlo_shape s32 = shape_scalar(HLO_S32), f4 = arr(HLO_F32, 1, 4, 0), pred = shape_scalar(HLO_PRED);
  hlo_shape elems[2] = {s32, f4};
  hlo_shape st = shape_tuple(m->arena, 2, elems);

  hlo_computation *cond = hlo_computation_new(m, "cond");
  hlo_instr *cp = param(cond, 0, st, "cp");
  hlo_instr *ci = instr(cond, HLO_OP_GET_TUPLE_ELEMENT, s32, "ci", 1, cp, NULL);
  ci->tuple_index = 0;
  hlo_instr *ten = hlo_instr_new(cond, HLO_OP_CONSTANT, &s32, "ten");
  hlo_literal *lit;
  if (literal_create(&s32, &lit)) abort();
  literal_set_s64(lit, 0, 10);
  hlo_instr_set_literal(ten, lit);
  hlo_instr *lt = instr(cond, HLO_OP_COMPARE, pred, "lt", 2, ci, ten);
  lt->direction = HLO_DIR_LT;
  cond->root = lt;

  hlo_computation *body = hlo_computation_new(m, "body");
  hlo_instr *bp = param(body, 0, st, "bp");
  hlo_instr *bi = instr(body, HLO_OP_GET_TUPLE_ELEMENT, s32, "bi", 1, bp, NULL);
  hlo_instr *bv = instr(body, HLO_OP_GET_TUPLE_ELEMENT, f4, "bv", 1, bp, NULL);
  bv->tuple_index = 1;
  hlo_instr *bn = instr(body, HLO_OP_ADD, s32, "bn", 2, bi, bi);
  hlo_instr *bt = instr(body, HLO_OP_TUPLE, st, "bt", 2, bn, bv);
  body->root = bt;

  hlo_computation *main = hlo_computation_new(m, "main");
  hlo_instr *init = param(main, 0, st, "init");
  hlo_instr *loop = instr(main, HLO_OP_WHILE, st, "loop", 1, init, NULL);
  hlo_computation *cb[2] = {cond, body};
  hlo_instr_set_called(loop, 2, cb);
  hlo_instr *call = instr(main, HLO_OP_CALL, st, "again", 1, loop, NULL);
  hlo_instr_set_called(call, 1, &body);
  main->root = call;
  for (int i = 0; i < m->n_comps; i++)
    if (hlo_computation_index_params(m->comps[i])) abort();
  m->entry = main;
  CHECK_OK(hlo_verify_module(m));

  /* The body returning the wrong state is a signature error reported at the while. */
  bt->operands[1] = bi;
  bt->shape.elems[1] = s32;
  CHECK_ERR(hlo_verify_module(m), "loop (while): body computation body returns (s32[], s32[])");
  hlo_module_free(m);
}

static void test_no_entry(void) {
  fixture f = make_fixture();
  f.m->entry = NULL;
  expect_error(&f, "module fixture has no entry computation");
}

static void test_missing_root(void) {
  fixture f = make_fixture();
  f.add_f32->root = NULL;
  expect_error(&f, "computation add_f32 has no root instruction");
}

static void test_root_from_elsewhere(void) {
  fixture f = make_fixture();
  f.add_f32->root = f.sum;
  expect_error(&f, "computation add_f32: root sum is not an instruction of this computation");
}

static void test_parameter_numbers(void) {
  fixture f = make_fixture();
  f.b->parameter_number = 2;
  expect_error(&f, "computation main: parameter slot 1 holds b (parameter, number 2)");
  f = make_fixture();
  param(f.main, 2, shape_scalar(HLO_F32), "extra");
  expect_error(&f, "computation main: has 3 parameter instructions but its parameter list has 2 entries");
  f = make_fixture();
  f.main->params[1] = NULL;
  expect_error(&f, "computation main: parameter number 1 is missing");
}

static void test_operand_counts(void) {
  fixture f = make_fixture();
  f.sum->n_operands = 1;
  expect_error(&f, "computation main: sum (add): expects 2 operands, got 1");
  f = make_fixture();
  hlo_instr *ops[3] = {f.sum, f.zero, f.zero};
  hlo_instr_set_operands(f.reduce, 3, ops);
  expect_error(&f, "reduce (reduce): expects N inputs and N init values (an even count >= 2), got 3 operands");
  f = make_fixture();
  hlo_instr *ds = hlo_instr_new(f.main, HLO_OP_DYNAMIC_SLICE, &f.a->shape, "ds");
  hlo_instr *dops[2] = {f.a, f.zero};
  hlo_instr_set_operands(ds, 2, dops);
  expect_error(&f, "ds (dynamic-slice): expects the operand and 2 scalar start indices for f32[2,3], got 2 operands");
}

static void test_cross_computation_operand(void) {
  fixture f = make_fixture();
  f.sum->operands[1] = f.x;
  expect_error(&f, "computation main: instruction sum (add): operand 1 (x) belongs to computation add_f32");
}

static void test_use_before_definition(void) {
  fixture f = make_fixture();
  /* swap sum and bcast: sum now precedes its operand */
  hlo_instr **in = f.main->instrs;
  int ib = -1, is = -1;
  for (int i = 0; i < f.main->n_instrs; i++) {
    if (in[i] == f.bcast) ib = i;
    if (in[i] == f.sum) is = i;
  }
  in[ib] = f.sum;
  in[is] = f.bcast;
  expect_error(&f, "instruction sum (add): operand 1 (bcast) is defined after its user");
}

static void test_shape_mismatch(void) {
  fixture f = make_fixture();
  f.a->shape.dims[0] = 3, f.a->shape.dims[1] = 2;
  expect_error(&f, "module fixture: computation main: sum (add): operand shapes f32[3,2] and f32[2,3] differ");
  f = make_fixture();
  f.sum->shape.dims[0] = 3, f.sum->shape.dims[1] = 2;
  expect_error(&f, "instruction sum (add) has shape f32[3,2]{1,0}, but its operands and attributes give f32[2,3]");
  f = make_fixture();
  f.reduce->shape = arr(HLO_F32, 1, 3, 0);
  expect_error(&f, "computation main: instruction reduce (reduce) has shape f32[3], but its operands and attributes "
                   "give f32[2]");
  f = make_fixture();
  f.reduce->shape.type = HLO_S32;
  expect_error(&f, "has shape s32[2], but its operands and attributes give f32[2]");
}

static void test_called_signature(void) {
  fixture f = make_fixture();
  f.x->shape = shape_scalar(HLO_S32);
  f.y->shape = shape_scalar(HLO_S32);
  f.add_f32->root->shape = shape_scalar(HLO_S32);
  expect_error(&f, "computation main: reduce (reduce): to_apply computation add_f32 returns s32[] for slot 0");
}

static void test_bad_layout(void) {
  fixture f = make_fixture();
  f.a->shape.minor_to_major[1] = 1;
  expect_error(&f, "instruction a (parameter) has an invalid shape: layout of f32[2,3]{1,1} is not a permutation");
  f = make_fixture();
  f.b->shape.rank = HLO_MAX_RANK + 3;
  expect_error(&f, "rank 19 is outside [0, 16]");
}

static void test_duplicate_names(void) {
  fixture f = make_fixture();
  f.add_f32->root->name = "sum";
  expect_error(&f, "instruction name sum is used more than once");
  f = make_fixture();
  f.add_f32->name = "main";
  expect_error(&f, "computation name main is used more than once");
}

static void test_calls_entry(void) {
  fixture f = make_fixture();
  hlo_instr_set_called(f.reduce, 1, &f.main);
  expect_error(&f, "instruction reduce (reduce) calls the entry computation main");
}

static void test_call_cycle(void) {
  fixture f = make_fixture();
  /* add_f32 calls helper, helper calls add_f32 */
  hlo_computation *helper = hlo_computation_new(f.m, "helper");
  hlo_instr *hp = param(helper, 0, shape_scalar(HLO_F32), "hp");
  hlo_instr *hc = instr(helper, HLO_OP_CALL, shape_scalar(HLO_F32), "hc", 1, hp, NULL);
  hlo_instr_set_called(hc, 1, &f.add_f32);
  helper->root = hc;
  if (hlo_computation_index_params(helper)) abort();
  hlo_instr *back = instr(f.add_f32, HLO_OP_CALL, shape_scalar(HLO_F32), "back", 1, f.x, NULL);
  hlo_instr_set_called(back, 1, &helper);
  expect_error(&f, "the call graph has a cycle");
}

static void test_foreign_computation(void) {
  fixture f = make_fixture();
  hlo_module *other = hlo_module_new("other");
  hlo_computation *oc = hlo_computation_new(other, "elsewhere");
  hlo_instr_set_called(f.reduce, 1, &oc);
  expect_error(&f, "instruction reduce (reduce) calls elsewhere, which is not in the module");
  hlo_module_free(other);
}

static void test_wrong_parent(void) {
  fixture f = make_fixture();
  f.sum->parent = f.add_f32;
  expect_error(&f, "computation main: instruction sum (add) names add_f32 as its parent");
}

static void test_removed_operand(void) {
  fixture f = make_fixture();
  /* drop bcast from the list while sum still uses it */
  int w = 0;
  for (int i = 0; i < f.main->n_instrs; i++)
    if (f.main->instrs[i] != f.bcast) f.main->instrs[w++] = f.main->instrs[i];
  f.main->n_instrs = w;
  expect_error(&f, "operand 1 (bcast) is not an instruction of this computation");
}

static void test_unknown_opcode_attrs(void) {
  fixture f = make_fixture();
  int64_t bad = 5;
  f.bcast->dimensions = hlo_ints_make(f.m->arena, 1, &bad);
  expect_error(&f, "computation main: bcast (broadcast): dimensions={5}: dimension 5 is out of range [0, 2)");
}

TEST_MAIN(TEST(test_valid_module), TEST(test_valid_control_flow), TEST(test_no_entry), TEST(test_missing_root),
          TEST(test_root_from_elsewhere), TEST(test_parameter_numbers), TEST(test_operand_counts),
          TEST(test_cross_computation_operand), TEST(test_use_before_definition), TEST(test_shape_mismatch),
          TEST(test_called_signature), TEST(test_bad_layout), TEST(test_duplicate_names), TEST(test_calls_entry),
          TEST(test_call_cycle), TEST(test_foreign_computation), TEST(test_wrong_parent),
          TEST(test_removed_operand), TEST(test_unknown_opcode_attrs))
