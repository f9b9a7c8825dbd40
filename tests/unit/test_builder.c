/* Tests of the HLO builder: small modules built only through hlo_build_* must verify
 * and carry the shapes XLA's rules give; a failing build must report the op and shapes
 * and leave the computation untouched; helper computations are reused and ordered so
 * callees precede callers. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"

static char *shape_text(const hlo_instr *ins) {
  strbuf b;
  strbuf_init(&b);
  shape_print(&b, &ins->shape, false);
  return strbuf_take(&b);
}

static void check_shape(const hlo_instr *ins, const char *want) {
  if (!ins) {
    check_fail(__FILE__, __LINE__, "instruction exists", want);
    return;
  }
  char *got = shape_text(ins);
  if (strcmp(got, want) != 0) {
    char detail[256];
    snprintf(detail, sizeof detail, "%s: expected %s, got %s", ins->name, want, got);
    check_fail(__FILE__, __LINE__, "shape", detail);
  }
  free(got);
}

static hlo_shape f32(int rank, const int64_t *dims) { return shape_make(HLO_F32, rank, dims); }

/* The example from builder.h: reduce_sum(dot(a, b) + broadcast(bias), dim 1). */
static void test_dot_bias_reduce(void) {
  hlo_module *m = hlo_module_new("example");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_computation *add_f32 = NULL;
  hlo_instr *a, *b, *bias, *d = NULL, *bb = NULL, *sum = NULL, *zero, *r = NULL;
  hlo_shape sa = f32(2, (int64_t[]){2, 3}), sb = f32(2, (int64_t[]){3, 4}), sv = f32(1, (int64_t[]){4});
  int64_t lc[] = {1}, rc[] = {0};
  hlo_dot_dnums dn = {.lhs_contracting = {1, lc}, .rhs_contracting = {1, rc}};
  CHECK_OK(hlo_build_parameter(c, 0, &sa, "a", &a));
  CHECK_OK(hlo_build_parameter(c, 1, &sb, "b", &b));
  CHECK_OK(hlo_build_parameter(c, 2, &sv, "bias", &bias));
  CHECK_OK(hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &d));
  check_shape(d, "f32[2,4]");
  CHECK_OK(hlo_build_broadcast(c, bias, 2, (int64_t[]){2, 4}, (int64_t[]){1}, &bb));
  check_shape(bb, "f32[2,4]");
  CHECK_OK(hlo_build_binary(c, HLO_OP_ADD, d, bb, &sum));
  check_shape(sum, "f32[2,4]");
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, 0.0, &zero));
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &add_f32));
  CHECK(add_f32 && strcmp(add_f32->name, "add_f32") == 0);
  CHECK_OK(hlo_build_reduce(c, 1, &sum, &zero, 1, (int64_t[]){1}, add_f32, &r));
  check_shape(r, "f32[2]");
  CHECK_OK(hlo_build_set_root(c, r));
  hlo_build_set_entry(m, c);
  CHECK_OK(hlo_build_order_computations(m));
  CHECK(m->comps[0] == add_f32 && m->comps[m->n_comps - 1] == c);
  CHECK(c->n_params == 3 && c->params[2] == bias);
  CHECK_OK(hlo_verify_module(m));
  /* The list arguments were copied: the dot's dnums no longer point at our stack. */
  CHECK(d->dot.lhs_contracting.v != lc && d->dot.lhs_contracting.v[0] == 1);
  hlo_module_free(m);
}

static void test_failed_build_leaves_no_trace(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape s23 = f32(2, (int64_t[]){2, 3}), s32 = f32(2, (int64_t[]){3, 2});
  hlo_instr *a, *b, *out = (hlo_instr *)1;
  CHECK_OK(hlo_build_parameter(c, 0, &s23, "a", &a));
  CHECK_OK(hlo_build_parameter(c, 1, &s32, "b", &b));
  int n = c->n_instrs, next = m->next_id;
  CHECK_ERR(hlo_build_binary(c, HLO_OP_ADD, a, b, &out), "(add): operand shapes f32[2,3] and f32[3,2] differ");
  CHECK(out == NULL);
  CHECK(c->n_instrs == n && m->next_id == next);
  CHECK_ERR(hlo_build_reshape(c, a, 1, (int64_t[]){5}, &out), "cannot reshape f32[2,3] (6 elements) to f32[5]");
  CHECK_ERR(hlo_build_transpose(c, a, (int64_t[]){0, 0}, &out), "repeats dimension 0");
  CHECK_ERR(hlo_build_unary(c, HLO_OP_ADD, a, &out), "not a one-operand elementwise opcode");
  CHECK_ERR(hlo_build_convert(c, a, HLO_TUPLE, &out), "not an array element type");
  CHECK(c->n_instrs == n && m->next_id == next);
  /* A constant whose build fails must not leak its literal (run under ASan). */
  hlo_literal *lit;
  hlo_shape sc = shape_scalar(HLO_F32);
  CHECK_OK(literal_create(&sc, &lit));
  hlo_instr t = hlo_instr_template(HLO_OP_CONSTANT);
  t.shape = sc;
  t.literal = lit;
  t.name = "a";
  CHECK_ERR(hlo_build_instr(c, &t, &out), "the name a is already used");
  CHECK(c->n_instrs == n);
  CHECK_OK(hlo_build_set_root(c, a));
  m->entry = c;
  CHECK_OK(hlo_verify_module(m));
  hlo_module_free(m);
}

static void test_operand_checks(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c1 = hlo_computation_new(m, "one"), *c2 = hlo_computation_new(m, "two");
  hlo_shape s = f32(1, (int64_t[]){4});
  hlo_instr *a, *b, *out;
  CHECK_OK(hlo_build_parameter(c1, 0, &s, "a", &a));
  CHECK_OK(hlo_build_parameter(c2, 0, &s, "b", &b));
  CHECK_ERR(hlo_build_binary(c1, HLO_OP_ADD, a, b, &out), "operand 1 (b) belongs to computation two, not one");
  CHECK_ERR(hlo_build_binary(c1, HLO_OP_ADD, a, NULL, &out), "operand 1 is missing");
  CHECK_ERR(hlo_build_parameter(c1, 0, &s, "again", &out), "already has parameter 0 (a)");
  CHECK_ERR(hlo_build_parameter(c1, -1, &s, "neg", &out), "out of range");
  /* Parameters may come in any order; the list stays indexed by number. */
  hlo_instr *p2, *p1;
  CHECK_OK(hlo_build_parameter(c1, 2, &s, "p2", &p2));
  CHECK(c1->n_params == 3 && c1->params[1] == NULL && c1->params[2] == p2);
  CHECK_OK(hlo_build_parameter(c1, 1, &s, "p1", &p1));
  CHECK(c1->params[1] == p1);
  CHECK_ERR(hlo_build_set_root(c1, b), "cannot be the root of computation one");
  hlo_module_free(m);
}

static void test_generated_names_stay_unique(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape s = f32(1, (int64_t[]){4});
  hlo_instr *a, *sum;
  /* "add.1" is what the next instruction (id 1) would be called by default. */
  CHECK_OK(hlo_build_parameter(c, 0, &s, "add.1", &a));
  CHECK_OK(hlo_build_binary(c, HLO_OP_ADD, a, a, &sum));
  CHECK(strcmp(sum->name, "add.1") != 0);
  CHECK_OK(hlo_build_set_root(c, sum));
  hlo_build_set_entry(m, c);
  CHECK_OK(hlo_verify_module(m));
  hlo_module_free(m);
}

/* One module exercising most builders; every shape checked, then the whole verified. */
static void test_many_ops(void) {
  hlo_module *m = hlo_module_new("many");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_instr *x, *i0, *v;
  hlo_shape sx = f32(2, (int64_t[]){4, 6}), si = shape_scalar(HLO_S32), sv = shape_make(HLO_S32, 1, (int64_t[]){6});
  CHECK_OK(hlo_build_parameter(c, 0, &sx, "x", &x));
  CHECK_OK(hlo_build_parameter(c, 1, &si, "i0", &i0));
  CHECK_OK(hlo_build_parameter(c, 2, &sv, "v", &v));

  hlo_instr *neg, *cmp, *sel, *cl, *cv, *bc, *tr, *sl, *ds, *dus, *cat, *pad, *rev, *iota, *lo, *hi;
  CHECK_OK(hlo_build_unary(c, HLO_OP_NEGATE, x, &neg));
  check_shape(neg, "f32[4,6]");
  CHECK_OK(hlo_build_compare(c, HLO_DIR_GT, x, neg, &cmp));
  check_shape(cmp, "pred[4,6]");
  CHECK_OK(hlo_build_select(c, cmp, x, neg, &sel));
  check_shape(sel, "f32[4,6]");
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, -1.0, &lo));
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, 1.0, &hi));
  CHECK_OK(hlo_build_clamp(c, lo, sel, hi, &cl));
  check_shape(cl, "f32[4,6]");
  CHECK_OK(hlo_build_convert(c, cl, HLO_BF16, &cv));
  check_shape(cv, "bf16[4,6]");
  CHECK_OK(hlo_build_bitcast_convert(c, x, HLO_U8, &bc));
  check_shape(bc, "u8[4,6,4]");
  CHECK_OK(hlo_build_transpose(c, x, (int64_t[]){1, 0}, &tr));
  check_shape(tr, "f32[6,4]");
  CHECK_OK(hlo_build_slice(c, x, (int64_t[]){1, 0}, (int64_t[]){4, 6}, (int64_t[]){2, 4}, &sl));
  check_shape(sl, "f32[2,2]");
  hlo_instr *starts[2] = {i0, i0};
  CHECK_OK(hlo_build_dynamic_slice(c, x, starts, (int64_t[]){2, 3}, &ds));
  check_shape(ds, "f32[2,3]");
  CHECK_OK(hlo_build_dynamic_update_slice(c, x, ds, starts, &dus));
  check_shape(dus, "f32[4,6]");
  hlo_instr *parts[2] = {x, dus};
  CHECK_OK(hlo_build_concatenate(c, 2, parts, 0, &cat));
  check_shape(cat, "f32[8,6]");
  CHECK_OK(hlo_build_pad(c, x, lo, (int64_t[]){1, -1}, (int64_t[]){0, 2}, (int64_t[]){1, 0}, &pad));
  check_shape(pad, "f32[8,7]");
  CHECK_OK(hlo_build_reverse(c, x, 1, (int64_t[]){1}, &rev));
  check_shape(rev, "f32[4,6]");
  hlo_shape is = shape_make(HLO_S32, 2, (int64_t[]){3, 1});
  CHECK_OK(hlo_build_iota(c, &is, 0, &iota));
  check_shape(iota, "s32[3,1]");

  /* gather rows of x by iota, scatter them back with add */
  hlo_instr *g, *sc;
  hlo_gather_dnums gd = {.offset_dims = {1, (int64_t[]){1}},
                         .collapsed_slice_dims = {1, (int64_t[]){0}},
                         .start_index_map = {1, (int64_t[]){0}},
                         .index_vector_dim = 1};
  CHECK_OK(hlo_build_gather(c, x, iota, &gd, (int64_t[]){1, 6}, &g));
  check_shape(g, "f32[3,6]");
  hlo_computation *add_f32, *max_f32, *lt_f32;
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &add_f32));
  hlo_scatter_dnums sd = {.update_window_dims = {1, (int64_t[]){1}},
                          .inserted_window_dims = {1, (int64_t[]){0}},
                          .scatter_dims_to_operand_dims = {1, (int64_t[]){0}},
                          .index_vector_dim = 1};
  CHECK_OK(hlo_build_scatter(c, 1, &x, iota, &g, &sd, add_f32, &sc));
  check_shape(sc, "f32[4,6]");

  /* reduce-window max pool 2x3 */
  hlo_instr *rw, *ninf;
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_MAXIMUM, HLO_F32, &max_f32));
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, -1e30, &ninf));
  hlo_window w = hlo_window_make(2, (int64_t[]){2, 3}, (int64_t[]){2, 3});
  CHECK_OK(hlo_build_reduce_window(c, 1, &x, &ninf, &w, max_f32, &rw));
  check_shape(rw, "f32[2,2]");

  /* sort x along dim 1 together with a broadcast s32 payload */
  hlo_instr *vb, *sorted, *keys;
  CHECK_OK(hlo_build_broadcast(c, v, 2, (int64_t[]){4, 6}, (int64_t[]){1}, &vb));
  hlo_computation *cmp2 = hlo_computation_new(m, "cmp2");
  {
    hlo_instr *p[4], *r;
    hlo_shape f = shape_scalar(HLO_F32), s = shape_scalar(HLO_S32);
    CHECK_OK(hlo_build_parameter(cmp2, 0, &f, NULL, &p[0]));
    CHECK_OK(hlo_build_parameter(cmp2, 1, &f, NULL, &p[1]));
    CHECK_OK(hlo_build_parameter(cmp2, 2, &s, NULL, &p[2]));
    CHECK_OK(hlo_build_parameter(cmp2, 3, &s, NULL, &p[3]));
    CHECK_OK(hlo_build_compare(cmp2, HLO_DIR_LT, p[0], p[1], &r));
    CHECK_OK(hlo_build_set_root(cmp2, r));
  }
  hlo_instr *sort_in[2] = {x, vb};
  CHECK_OK(hlo_build_sort(c, 2, sort_in, 1, true, cmp2, &sorted));
  check_shape(sorted, "(f32[4,6], s32[4,6])");
  CHECK_OK(hlo_build_get_tuple_element(c, sorted, 0, &keys));
  check_shape(keys, "f32[4,6]");
  hlo_instr *single;
  CHECK_OK(hlo_build_compare_computation(m, HLO_DIR_LT, HLO_F32, &lt_f32));
  CHECK(strcmp(lt_f32->name, "lt_f32") == 0);
  CHECK_OK(hlo_build_sort(c, 1, &x, 0, false, lt_f32, &single));
  check_shape(single, "f32[4,6]");

  /* map, convolution */
  hlo_instr *mp, *img, *ker, *conv;
  hlo_instr *pair[2] = {x, neg};
  CHECK_OK(hlo_build_map(c, 2, pair, add_f32, &mp));
  check_shape(mp, "f32[4,6]");
  CHECK_OK(hlo_build_reshape(c, x, 4, (int64_t[]){1, 4, 6, 1}, &img));
  check_shape(img, "f32[1,4,6,1]");
  CHECK_OK(hlo_build_broadcast(c, lo, 4, (int64_t[]){3, 3, 1, 2}, NULL, &ker));
  hlo_conv_dnums cd = {.n_spatial = 2,
                       .input_batch = 0, .input_feature = 3, .input_spatial = {1, 2},
                       .kernel_input_feature = 2, .kernel_output_feature = 3, .kernel_spatial = {0, 1},
                       .output_batch = 0, .output_feature = 3, .output_spatial = {1, 2}};
  hlo_window cw = hlo_window_make(2, (int64_t[]){3, 3}, NULL);
  cw.dims[0].pad_lo = cw.dims[0].pad_hi = 1;
  CHECK_OK(hlo_build_convolution(c, img, ker, &cw, &cd, 1, 1, HLO_BUILD_DEFAULT_TYPE, &conv));
  check_shape(conv, "f32[1,4,4,2]");
  hlo_instr *bad;
  CHECK_ERR(hlo_build_convolution(c, img, ker, &cw, &cd, 2, 1, HLO_BUILD_DEFAULT_TYPE, &bad), "feature_group_count 2");

  hlo_instr *outs[6] = {cat, rw, sorted, mp, conv, sc};
  hlo_instr *root;
  CHECK_OK(hlo_build_tuple(c, 6, outs, &root));
  check_shape(root, "(f32[8,6], f32[2,2], (f32[4,6], s32[4,6]), f32[4,6], f32[1,4,4,2], f32[4,6])");
  CHECK_OK(hlo_build_set_root(c, root));
  hlo_build_set_entry(m, c);
  CHECK_OK(hlo_build_order_computations(m));
  CHECK(m->comps[m->n_comps - 1] == c);
  CHECK_OK(hlo_verify_module(m));
  hlo_module_free(m);
}

/* while (i < 10) i = i + 1, wrapped in a conditional and a call. */
static void test_control_flow(void) {
  hlo_module *m = hlo_module_new("loop");
  hlo_shape si = shape_scalar(HLO_S32);
  hlo_shape state = shape_tuple(m->arena, 1, &si);

  hlo_computation *cond = hlo_computation_new(m, "cond");
  hlo_instr *cp, *ci, *ten, *lt;
  CHECK_OK(hlo_build_parameter(cond, 0, &state, "cp", &cp));
  CHECK_OK(hlo_build_get_tuple_element(cond, cp, 0, &ci));
  CHECK_OK(hlo_build_constant_scalar(cond, HLO_S32, 10, &ten));
  CHECK_OK(hlo_build_compare(cond, HLO_DIR_LT, ci, ten, &lt));
  CHECK_OK(hlo_build_set_root(cond, lt));

  hlo_computation *body = hlo_computation_new(m, "body");
  hlo_instr *bp, *bi, *one, *inc, *bt;
  CHECK_OK(hlo_build_parameter(body, 0, &state, "bp", &bp));
  CHECK_OK(hlo_build_get_tuple_element(body, bp, 0, &bi));
  CHECK_OK(hlo_build_constant_scalar(body, HLO_S32, 1, &one));
  CHECK_OK(hlo_build_binary(body, HLO_OP_ADD, bi, one, &inc));
  CHECK_OK(hlo_build_tuple(body, 1, &inc, &bt));
  CHECK_OK(hlo_build_set_root(body, bt));

  hlo_computation *main = hlo_computation_new(m, "main");
  hlo_instr *init, *loop, *flag, *cnd, *called, *out;
  CHECK_OK(hlo_build_parameter(main, 0, &state, "init", &init));
  CHECK_OK(hlo_build_while(main, cond, body, init, &loop));
  check_shape(loop, "(s32[])");
  CHECK_ERR(hlo_build_while(main, body, cond, init, &out), "condition computation body must return pred[]");
  hlo_shape sp = shape_scalar(HLO_PRED);
  CHECK_OK(hlo_build_parameter(main, 1, &sp, "flag", &flag));
  hlo_computation *branches[2] = {body, body};
  hlo_instr *args[2] = {loop, init};
  CHECK_OK(hlo_build_conditional(main, flag, 2, branches, args, &cnd));
  check_shape(cnd, "(s32[])");
  CHECK_OK(hlo_build_call(main, body, 1, &cnd, &called));
  check_shape(called, "(s32[])");
  CHECK_OK(hlo_build_get_tuple_element(main, called, 0, &out));
  check_shape(out, "s32[]");
  CHECK_OK(hlo_build_set_root(main, out));
  hlo_build_set_entry(m, main);
  CHECK_OK(hlo_verify_module(m));

  /* A call cycle cannot be ordered. */
  hlo_instr *back;
  CHECK_OK(hlo_build_call(cond, body, 1, &cp, &back));
  CHECK_OK(hlo_build_call(body, cond, 1, &bp, &back));
  CHECK_ERR(hlo_build_order_computations(m), "cycle");
  CHECK_ERR(hlo_verify_module(m), "cycle");
  hlo_module_free(m);
}

static void test_scalar_computation_reuse(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *main = hlo_computation_new(m, "main");
  hlo_computation *a1, *a2, *s32add, *mul;
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &a1));
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &a2));
  CHECK(a1 == a2);
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_S32, &s32add));
  CHECK(s32add != a1 && strcmp(s32add->name, "add_s32") == 0);
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_MULTIPLY, HLO_F32, &mul));
  CHECK(strcmp(mul->name, "multiply_f32") == 0);
  CHECK(m->comps[m->n_comps - 1] == main); /* helpers went in front */
  CHECK_ERR(hlo_build_scalar_computation(m, HLO_OP_NEGATE, HLO_F32, &mul), "not a binary elementwise opcode");
  CHECK_ERR(hlo_build_scalar_computation(m, HLO_OP_SHIFT_LEFT, HLO_F32, &mul), "an integer type");
  CHECK(hlo_module_find_computation(m, "shift-left_f32") == NULL);
  /* A same-named computation with another signature is not reused. */
  hlo_computation *fake = hlo_computation_new(m, "maximum_f32");
  (void)fake;
  hlo_computation *mx;
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_MAXIMUM, HLO_F32, &mx));
  CHECK(mx != fake && strcmp(mx->name, "maximum_f32.1") == 0);
  hlo_module_free(m);
}

static void test_dot_preferred_type(void) {
  hlo_module *m = hlo_module_new("m");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape s = shape_make(HLO_S8, 2, (int64_t[]){2, 3}), t = shape_make(HLO_S8, 2, (int64_t[]){3, 5});
  hlo_instr *a, *b, *d;
  CHECK_OK(hlo_build_parameter(c, 0, &s, "a", &a));
  CHECK_OK(hlo_build_parameter(c, 1, &t, "b", &b));
  hlo_dot_dnums dn = {.lhs_contracting = {1, (int64_t[]){1}}, .rhs_contracting = {1, (int64_t[]){0}}};
  CHECK_OK(hlo_build_dot(c, a, b, &dn, HLO_S32, &d));
  check_shape(d, "s32[2,5]");
  CHECK_OK(hlo_build_dot(c, a, b, &dn, HLO_BUILD_DEFAULT_TYPE, &d));
  check_shape(d, "s8[2,5]");
  hlo_dot_dnums wrong = {.lhs_contracting = {1, (int64_t[]){0}}, .rhs_contracting = {1, (int64_t[]){0}}};
  CHECK_ERR(hlo_build_dot(c, a, b, &wrong, HLO_BUILD_DEFAULT_TYPE, &d),
            "contracting dimension sizes differ: lhs s8[2,3] dimension 0 vs rhs s8[3,5] dimension 0");
  hlo_module_free(m);
}

/* The output may alias a slot of the operand arrays (out = &xs[0]): the builder reads
 * every operand before it writes *out. */
static void test_output_aliases_operand_array(void) {
  hlo_module *m = hlo_module_new("alias");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_shape sv = f32(1, (int64_t[]){4});
  hlo_instr *xs[2] = {NULL, NULL}, *init = NULL;
  CHECK_OK(hlo_build_parameter(c, 0, &sv, "x", &xs[0]));
  CHECK_OK(hlo_build_parameter(c, 1, &sv, "y", &xs[1]));
  hlo_instr *x = xs[0], *y = xs[1];
  CHECK_OK(hlo_build_tuple(c, 2, xs, &xs[0]));
  CHECK(xs[0] && xs[0]->op == HLO_OP_TUPLE && xs[0]->operands[0] == x && xs[0]->operands[1] == y);
  hlo_instr *in[1] = {y};
  hlo_computation *add = NULL;
  CHECK_OK(hlo_build_constant_scalar(c, HLO_F32, 0.0, &init));
  CHECK_OK(hlo_build_scalar_computation(m, HLO_OP_ADD, HLO_F32, &add));
  CHECK_OK(hlo_build_reduce(c, 1, in, &init, 1, (int64_t[]){0}, add, &in[0]));
  CHECK(in[0] && in[0]->op == HLO_OP_REDUCE && in[0]->operands[0] == y && in[0]->operands[1] == init);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_dot_bias_reduce), TEST(test_output_aliases_operand_array), TEST(test_failed_build_leaves_no_trace), TEST(test_operand_checks),
          TEST(test_generated_names_stay_unique), TEST(test_many_ops), TEST(test_control_flow),
          TEST(test_scalar_computation_reuse), TEST(test_dot_preferred_type))
