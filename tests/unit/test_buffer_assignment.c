/* Unit tests for buffer assignment: on random entry computations (elementwise chains,
 * transposes, reshapes and bitcasts that alias, tuples and get-tuple-elements,
 * constants, parameters) the independent checker must accept the assignment, and must
 * reject one that was corrupted on purpose; a chain of non-elementwise ops reuses two
 * blocks; an x+k chain runs in place in one block; kLoop fusions go in place only when
 * the fused computation keeps element i at element i; outputs that alias parameters,
 * constants or each other are reported as needing a copy. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "hlo/buffer_assignment.h"
#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

static hlo_buffer_assignment *assign_ok(const hlo_module *m) {
  hlo_buffer_assignment *a = NULL;
  CHECK_OK(hlo_assign_buffers(m->entry, 64, &a));
  if (!a) abort();
  CHECK(hlo_buffer_assignment_check(m->entry, a));
  for (int i = 0; i < a->n_slots; i++)
    if (a->slots[i].kind == HLO_BUFFER_ARENA) CHECK(a->slots[i].offset % 64 == 0);
  return a;
}

static int index_of(const hlo_module *m, const char *name) {
  for (int i = 0; i < m->entry->n_instrs; i++)
    if (strcmp(m->entry->instrs[i]->name, name) == 0) return i;
  return -1;
}

/* xorshift64: deterministic random module shapes. */
static uint64_t rng_state = 88172645463325252ull;
static int rnd(int n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (int)(rng_state % (uint64_t)n);
}

/* A random program over f32[4,8] values (and their [8,4] transposes/reshapes). */
static hlo_module *random_module(int n_ops) {
  hlo_module *m = hlo_module_new("random");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape s48 = shape_make(HLO_F32, 2, (int64_t[]){4, 8});
  hlo_instr *vals[256];
  int n = 0;
  for (int i = 0; i < 3; i++) CHECK_OK(hlo_build_parameter(c, i, &s48, NULL, &vals[n++]));
  hlo_literal *lit = NULL;
  CHECK_OK(literal_create(&s48, &lit));
  literal_fill_pseudo_random(lit, 5);
  CHECK_OK(hlo_build_constant(c, lit, &vals[n++]));
  for (int k = 0; k < n_ops && n < 250; k++) {
    hlo_instr *x = vals[n - 1 - rnd(n < 6 ? n : 6)], *y = vals[rnd(n)], *r = NULL;
    if (x->shape.rank != 2 || x->shape.dims[0] != 4) x = vals[0];
    if (y->shape.rank != 2 || y->shape.dims[0] != 4) y = vals[1];
    switch (rnd(7)) {
      case 0: CHECK_OK(hlo_build_unary(c, HLO_OP_NEGATE, x, &r)); break;
      case 1: CHECK_OK(hlo_build_binary(c, HLO_OP_ADD, x, y, &r)); break;
      case 2: CHECK_OK(hlo_build_binary(c, HLO_OP_MULTIPLY, y, x, &r)); break;
      case 3: { /* transpose and back: two fresh arena values */
        hlo_instr *t;
        CHECK_OK(hlo_build_transpose(c, x, (int64_t[]){1, 0}, &t));
        CHECK_OK(hlo_build_transpose(c, t, (int64_t[]){1, 0}, &r));
        break;
      }
      case 4: { /* reshape there and back: aliases of x */
        hlo_instr *t;
        CHECK_OK(hlo_build_reshape(c, x, 2, (int64_t[]){8, 4}, &t));
        CHECK_OK(hlo_build_reshape(c, t, 2, (int64_t[]){4, 8}, &r));
        break;
      }
      case 5: { /* through a tuple */
        hlo_instr *t, *pair[2] = {x, y};
        CHECK_OK(hlo_build_tuple(c, 2, pair, &t));
        CHECK_OK(hlo_build_get_tuple_element(c, t, rnd(2), &r));
        break;
      }
      default: CHECK_OK(hlo_build_unary(c, HLO_OP_EXP, x, &r)); break;
    }
    if (r) vals[n++] = r;
  }
  hlo_instr *outs[3] = {vals[n - 1], vals[n / 2], vals[rnd(n)]}, *root;
  CHECK_OK(hlo_build_tuple(c, 3, outs, &root));
  CHECK_OK(hlo_build_set_root(c, root));
  hlo_build_set_entry(m, c);
  CHECK_OK(hlo_verify_module(m));
  return m;
}

static void random_modules_check(void) {
  int reused = 0;
  for (int t = 0; t < 200; t++) {
    hlo_module *m = random_module(5 + rnd(60));
    hlo_buffer_assignment *a = assign_ok(m);
    int64_t sum = 0;
    for (int i = 0; i < a->n_slots; i++)
      if (a->slots[i].kind == HLO_BUFFER_ARENA) sum += a->slots[i].size;
    if (a->arena_bytes < sum) reused++;
    CHECK(a->arena_bytes <= sum);
    /* Corrupt it: put a value on top of one that is live at the same time. */
    int first = -1, second = -1;
    for (int i = 0; i < a->n_slots && second < 0; i++) {
      if (a->slots[i].kind != HLO_BUFFER_ARENA || a->slots[i].size == 0) continue;
      if (first < 0)
        first = i;
      else if (a->slots[i].offset != a->slots[first].offset) {
        /* live together when first is read at or after i's definition */
        for (int u = i; u < m->entry->n_instrs; u++)
          for (int k = 0; k < m->entry->instrs[u]->n_operands; k++)
            if (m->entry->instrs[u]->operands[k] == m->entry->instrs[first] && u > i) second = i;
      }
    }
    if (second >= 0) {
      int64_t keep = a->slots[second].offset;
      a->slots[second].offset = a->slots[first].offset;
      CHECK(!hlo_buffer_assignment_check(m->entry, a));
      a->slots[second].offset = keep;
      CHECK(hlo_buffer_assignment_check(m->entry, a));
    }
    hlo_buffer_assignment_free(a);
    hlo_module_free(m);
  }
  CHECK(reused > 150);
}

static void chain_reuses_two_blocks(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "ENTRY main {\n"
      "  p = f32[8,8] parameter(0)\n"
      "  t1 = f32[8,8] transpose(p), dimensions={1,0}\n"
      "  t2 = f32[8,8] transpose(t1), dimensions={1,0}\n"
      "  t3 = f32[8,8] transpose(t2), dimensions={1,0}\n"
      "  t4 = f32[8,8] transpose(t3), dimensions={1,0}\n"
      "  t5 = f32[8,8] transpose(t4), dimensions={1,0}\n"
      "  ROOT t6 = f32[8,8] transpose(t5), dimensions={1,0}\n"
      "}\n");
  hlo_buffer_assignment *a = assign_ok(m);
  CHECK(a->arena_bytes == 2 * 256);
  CHECK(a->slots[index_of(m, "t1")].offset == a->slots[index_of(m, "t3")].offset);
  CHECK(a->slots[index_of(m, "t1")].offset != a->slots[index_of(m, "t2")].offset);
  CHECK(!a->slots[index_of(m, "t2")].in_place);
  CHECK(a->slots[index_of(m, "p")].kind == HLO_BUFFER_PARAMETER && a->slots[index_of(m, "p")].param_index == 0);
  CHECK(a->slots[index_of(m, "t6")].kind == HLO_BUFFER_ARENA); /* the output: a fresh block */
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

static void add_chain_in_place(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "ENTRY main {\n"
      "  x = f32[30] parameter(0)\n"
      "  k = f32[30] parameter(1)\n"
      "  a1 = f32[30] add(x, k)\n"
      "  a2 = f32[30] add(a1, k)\n"
      "  a3 = f32[30] add(k, a2)\n"
      "  r = f32[6,5] reshape(a3)\n"
      "  ROOT a4 = f32[6,5] negate(r)\n"
      "}\n");
  hlo_buffer_assignment *a = assign_ok(m);
  CHECK(a->arena_bytes == 128); /* 120 bytes, aligned to 64 */
  CHECK(!a->slots[index_of(m, "a1")].in_place); /* parameters are never written */
  CHECK(a->slots[index_of(m, "a2")].in_place && a->slots[index_of(m, "a3")].in_place);
  CHECK(a->slots[index_of(m, "r")].kind == HLO_BUFFER_ALIAS);
  /* negate reads a3 through the reshape alias and still writes over it */
  CHECK(a->slots[index_of(m, "a4")].in_place);
  CHECK(a->slots[index_of(m, "a4")].offset == a->slots[index_of(m, "a3")].offset);
  int b;
  int64_t off;
  CHECK(hlo_buffer_resolve(m->entry, a, index_of(m, "r"), &b, &off) && b == index_of(m, "a3") && off == 0);
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

static void fusion_in_place_only_when_elementwise(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "fc_elementwise {\n"
      "  p0 = f32[4,4] parameter(0)\n"
      "  p1 = f32[4] parameter(1)\n"
      "  b = f32[4,4] broadcast(p1), dimensions={1}\n"
      "  n = f32[4,4] negate(p0)\n"
      "  ROOT m = f32[4,4] multiply(n, b)\n"
      "}\n"
      "fc_transpose {\n"
      "  q0 = f32[4,4] parameter(0)\n"
      "  tq = f32[4,4] transpose(q0), dimensions={1,0}\n"
      "  ROOT e = f32[4,4] exponential(tq)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[4,4] parameter(0)\n"
      "  v = f32[4] parameter(1)\n"
      "  e1 = f32[4,4] exponential(x)\n"
      "  f1 = f32[4,4] fusion(e1, v), kind=kLoop, calls=fc_elementwise\n"
      "  f2 = f32[4,4] fusion(f1), kind=kLoop, calls=fc_transpose\n"
      "  ROOT out = (f32[4,4], f32[4,4], f32[4]) tuple(f2, f2, v)\n"
      "}\n");
  hlo_buffer_assignment *a = assign_ok(m);
  CHECK(a->slots[index_of(m, "f1")].in_place);
  CHECK(a->slots[index_of(m, "f1")].offset == a->slots[index_of(m, "e1")].offset);
  CHECK(!a->slots[index_of(m, "f2")].in_place);
  CHECK(a->slots[index_of(m, "out")].kind == HLO_BUFFER_NONE);
  CHECK(a->slots[index_of(m, "f2")].kind == HLO_BUFFER_ARENA);
  CHECK(a->slots[index_of(m, "v")].kind == HLO_BUFFER_PARAMETER); /* an output the caller owns */
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
  /* the same block read once elementwise and once transposed: writing over it would
   * corrupt the transposed reads */
  m = check_parse_hlo(
      "HloModule t\n"
      "fc {\n"
      "  p0 = f32[4,4] parameter(0)\n"
      "  p1 = f32[4,4] parameter(1)\n"
      "  t = f32[4,4] transpose(p1), dimensions={1,0}\n"
      "  ROOT s = f32[4,4] subtract(p0, t)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[4,4] parameter(0)\n"
      "  e = f32[4,4] exponential(x)\n"
      "  ROOT f = f32[4,4] fusion(e, e), kind=kLoop, calls=fc\n"
      "}\n");
  a = assign_ok(m);
  CHECK(!a->slots[index_of(m, "f")].in_place);
  CHECK(a->arena_bytes == 128);
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

/* A kOutput fusion takes over its residual's block (read elementwise by the epilogue),
 * never the block of a dot operand (read across rows), even when that is its last read. */
static void output_fusion_in_place_on_residual(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "fc {\n"
      "  p0 = f32[4,4] parameter(0)\n"
      "  p1 = f32[4,4] parameter(1)\n"
      "  p2 = f32[4,4] parameter(2)\n"
      "  d = f32[4,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT r = f32[4,4] add(d, p2)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[4,4] parameter(0)\n"
      "  w = f32[4,4] parameter(1)\n"
      "  h = f32[4,4] exponential(x)\n"
      "  res = f32[4,4] negate(x)\n"
      "  f1 = f32[4,4] fusion(h, w, res), kind=kOutput, calls=fc\n"
      "  g = f32[4,4] exponential(w)\n"
      "  ROOT f2 = f32[4,4] fusion(g, w, x), kind=kOutput, calls=fc\n"
      "}\n");
  hlo_buffer_assignment *a = assign_ok(m);
  CHECK(a->slots[index_of(m, "f1")].in_place);
  CHECK(a->slots[index_of(m, "f1")].offset == a->slots[index_of(m, "res")].offset);
  CHECK(a->slots[index_of(m, "f1")].offset != a->slots[index_of(m, "h")].offset);
  CHECK(!a->slots[index_of(m, "f2")].in_place); /* g is only the dot's operand; x a parameter */
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

static void tuple_results_and_constants(void) {
  hlo_module *m = check_parse_hlo(
      "HloModule t\n"
      "add_f32 {\n"
      "  l = f32[] parameter(0)\n"
      "  r = f32[] parameter(1)\n"
      "  ROOT lr = f32[] add(l, r)\n"
      "}\n"
      "cond {\n"
      "  cs = (s32[], f32[5]) parameter(0)\n"
      "  ci = s32[] get-tuple-element(cs), index=0\n"
      "  n = s32[] constant(2)\n"
      "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
      "}\n"
      "body {\n"
      "  bs = (s32[], f32[5]) parameter(0)\n"
      "  bi = s32[] get-tuple-element(bs), index=0\n"
      "  bv = f32[5] get-tuple-element(bs), index=1\n"
      "  one = s32[] constant(1)\n"
      "  i1 = s32[] add(bi, one)\n"
      "  v1 = f32[5] add(bv, bv)\n"
      "  ROOT t = (s32[], f32[5]) tuple(i1, v1)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[5] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  init = (s32[], f32[5]) tuple(z, x)\n"
      "  w = (s32[], f32[5]) while(init), condition=cond, body=body\n"
      "  wv = f32[5] get-tuple-element(w), index=1\n"
      "  zero = f32[] constant(0)\n"
      "  sum = f32[] reduce(wv, zero), dimensions={0}, to_apply=add_f32\n"
      "  c = f32[5] constant({1, 2, 3, 4, 5})\n"
      "  ROOT out = (f32[], f32[5], f32[5]) tuple(sum, c, wv)\n"
      "}\n");
  hlo_buffer_assignment *a = assign_ok(m);
  int w = index_of(m, "w"), wv = index_of(m, "wv");
  CHECK(a->slots[w].kind == HLO_BUFFER_ARENA && a->slots[w].size == 128); /* s32[] + f32[5], each 64-aligned */
  CHECK(a->slots[wv].kind == HLO_BUFFER_ALIAS && a->slots[wv].offset == 64);
  int b;
  int64_t off;
  CHECK(hlo_buffer_resolve(m->entry, a, wv, &b, &off) && b == w && off == 64);
  CHECK(a->slots[index_of(m, "c")].kind == HLO_BUFFER_CONSTANT);
  CHECK(a->slots[index_of(m, "sum")].kind == HLO_BUFFER_ARENA);
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

static void bad_alignment_is_an_error(void) {
  hlo_module *m = check_parse_hlo("HloModule t\nENTRY main {\n  ROOT p = f32[2] parameter(0)\n}\n");
  hlo_buffer_assignment *a = NULL;
  CHECK_ERR(hlo_assign_buffers(m->entry, 48, &a), "power of two");
  CHECK(a == NULL);
  CHECK_OK(hlo_assign_buffers(m->entry, 64, &a));
  CHECK(a && a->arena_bytes == 0 && a->slots[index_of(m, "p")].kind == HLO_BUFFER_PARAMETER);
  hlo_buffer_assignment_free(a);
  hlo_module_free(m);
}

TEST_MAIN(TEST(random_modules_check), TEST(chain_reuses_two_blocks), TEST(add_chain_in_place),
          TEST(fusion_in_place_only_when_elementwise), TEST(output_fusion_in_place_on_residual),
          TEST(tuple_results_and_constants),
          TEST(bad_alignment_is_an_error))
