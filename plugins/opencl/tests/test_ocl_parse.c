/* Tests of the OpenCL plugin's HLO text parser (plugins/opencl/ocl_parse.c): hand-written
 * modules covering every construct kiln's printer can emit, checked field by field
 * (shapes, operands, called computations, raw attributes, constants' exact bytes
 * including the f16/bf16 rounding), the attribute decoders, and malformed inputs, each
 * of which must fail with a "line:col: ..." message and never crash (run under ASan
 * in development; every prefix of a valid module is parsed too). With file arguments it
 * instead parses each file and reports the ones that fail: parse_kiln_printed.sh uses
 * that on kiln-printed corpus modules. Built standalone (no kiln library): see
 * README.parse.txt. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/plugin.h"
#include "ocl_hlo.h"

static int failures, checks;

#define CHECK(cond)                                                        \
  do {                                                                     \
    checks++;                                                              \
    if (!(cond)) {                                                         \
      failures++;                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                      \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                          \
  do {                                                                                              \
    long long a_ = (long long)(a), b_ = (long long)(b);                                             \
    checks++;                                                                                       \
    if (a_ != b_) {                                                                                 \
      failures++;                                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, a_, b_); \
    }                                                                                               \
  } while (0)

#define CHECK_STR(a, b)                                                                             \
  do {                                                                                              \
    const char *a_ = (a), *b_ = (b);                                                                \
    checks++;                                                                                       \
    if (!a_ || strcmp(a_, b_) != 0) {                                                               \
      failures++;                                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s == \"%s\" (got %s%s%s)\n", __FILE__, __LINE__, #a, b_, \
              a_ ? "\"" : "", a_ ? a_ : "NULL", a_ ? "\"" : "");                                    \
    }                                                                                               \
  } while (0)

static ocl_module *parse_ok(const char *text, int line) {
  ocl_module *m = NULL;
  char err[512];
  checks++;
  if (ocl_parse_module(text, strlen(text), &m, err, sizeof err) != 0 || !m) {
    failures++;
    fprintf(stderr, "%s:%d: parse failed: %s\n", __FILE__, line, err);
    return NULL;
  }
  return m;
}
#define PARSE_OK(text) parse_ok(text, __LINE__)

/* Must fail with "L:C: " and a message containing want (and, when at is given, that
 * exact location). */
static void parse_bad(const char *text, const char *want, const char *at, int line) {
  ocl_module *m = (ocl_module *)1;
  char err[512];
  checks++;
  int rc = ocl_parse_module(text, strlen(text), &m, err, sizeof err);
  int l = 0, c = 0, k = 0;
  int located = sscanf(err, "%d:%d: %n", &l, &c, &k) == 2 && k > 0;
  if (rc == 0 || m != NULL || !located || (want && !strstr(err, want))) {
    failures++;
    fprintf(stderr, "%s:%d: expected a located failure containing \"%s\"; rc=%d err=\"%s\"\n", __FILE__, line,
            want ? want : "", rc, err);
    if (rc == 0) ocl_module_free(m);
    return;
  }
  if (at) {
    char loc[32];
    snprintf(loc, sizeof loc, "%d:%d", l, c);
    if (strcmp(loc, at) != 0) {
      failures++;
      fprintf(stderr, "%s:%d: error at %s, expected at %s: %s\n", __FILE__, line, loc, at, err);
    }
  }
}
#define PARSE_BAD(text, want) parse_bad(text, want, NULL, __LINE__)
#define PARSE_BAD_AT(text, want, at) parse_bad(text, want, at, __LINE__)

static ocl_comp *comp(const ocl_module *m, const char *name) {
  for (int i = 0; i < m->n_comps; i++)
    if (strcmp(m->comps[i]->name, name) == 0) return m->comps[i];
  return NULL;
}

static ocl_instr *instr(const ocl_comp *c, const char *name) {
  if (!c) return NULL;
  for (int i = 0; i < c->n_instrs; i++)
    if (strcmp(c->instrs[i]->name, name) == 0) return c->instrs[i];
  return NULL;
}

static int dims_are(const ocl_shape *s, int dtype, int rank, const int64_t *dims) {
  if (s->dtype != dtype || s->rank != rank) return 0;
  for (int i = 0; i < rank; i++)
    if (s->dims[i] != dims[i]) return 0;
  return 1;
}
#define SHAPE_IS(s, dt, ...) dims_are((s), (dt), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define SCALAR_IS(s, dt) dims_are((s), (dt), 0, NULL)

static const char *k_example =
    "HloModule m, entry_computation_layout={(f32[2,3]{1,0}, f32[3,3,2,4]{3,2,1,0})->(f32[2]{0}, f32[1,2]{1,0})}\n"
    "\n"
    "%add_f (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s.1 = f32[] add(f32[] %a, f32[] %b)\n"
    "}\n"
    "\n"
    "ENTRY %e (p: f32[2,3], k: f32[3,3,2,4]) -> (f32[2], f32[1,2]) {\n"
    "  %p = f32[2,3] parameter(0)\n"
    "  %c = f32[2,3] constant({ { 1, 2, 3 }, { 4, 5, 6 } })\n"
    "  %z = f32[] constant(0)\n"
    "  %m = f32[2,3] multiply(f32[2,3] %p, f32[2,3] %c)\n"
    "  %r = f32[2] reduce(f32[2,3] %m, f32[] %z), dimensions={1}, to_apply=%add_f\n"
    "  %s = f32[1,2] slice(f32[2,3] %m), slice={[0:1], [1:3]}\n"
    "  %k = f32[3,3,2,4] parameter(1)\n"
    "  ROOT %t = (f32[2], f32[1,2]) tuple(f32[2] %r, f32[1,2] %s)\n"
    "}\n";

static void test_example(void) {
  ocl_module *m = PARSE_OK(k_example);
  if (!m) return;
  CHECK_STR(m->name, "m");
  CHECK_EQ_INT(m->n_comps, 2);
  ocl_comp *add = comp(m, "add_f"), *e = comp(m, "e");
  CHECK(add && e && m->entry == e && e->is_entry && !add->is_entry);
  if (!add || !e) goto out;
  CHECK_EQ_INT(add->n_instrs, 3);
  CHECK_EQ_INT(add->n_params, 2);
  CHECK_STR(add->params[0]->name, "a");
  CHECK_STR(add->params[1]->name, "b");
  CHECK(add->root == add->instrs[2] && add->root->is_root);
  CHECK_STR(add->root->name, "s.1");
  CHECK_STR(add->root->opcode, "add");
  CHECK(SCALAR_IS(&add->root->shape, KILN_DTYPE_F32));
  CHECK(add->root->n_operands == 2 && add->root->operands[0] == add->params[0] && add->root->operands[1] == add->params[1]);

  CHECK_EQ_INT(e->n_instrs, 8);
  CHECK_EQ_INT(e->n_params, 2);
  ocl_instr *p = instr(e, "p"), *c = instr(e, "c"), *z = instr(e, "z"), *mul = instr(e, "m"), *r = instr(e, "r"),
            *s = instr(e, "s"), *k = instr(e, "k"), *t = instr(e, "t");
  CHECK(p && c && z && mul && r && s && k && t);
  if (!(p && c && z && mul && r && s && k && t)) goto out;
  CHECK(e->params[0] == p && e->params[1] == k);
  CHECK_EQ_INT(p->parameter_number, 0);
  CHECK_EQ_INT(k->parameter_number, 1);
  CHECK_EQ_INT(mul->parameter_number, -1);
  CHECK(SHAPE_IS(&k->shape, KILN_DTYPE_F32, 3, 3, 2, 4));
  for (int i = 0; i < e->n_instrs; i++) CHECK_EQ_INT(e->instrs[i]->index, i);
  CHECK(e->root == t && t->is_root && !r->is_root);
  CHECK(SHAPE_IS(&c->shape, KILN_DTYPE_F32, 2, 3));
  CHECK_EQ_INT(c->literal_bytes, 24);
  if (c->literal && c->literal_bytes == 24) {
    float want[6] = {1, 2, 3, 4, 5, 6};
    CHECK(memcmp(c->literal, want, 24) == 0);
  }
  CHECK_EQ_INT(z->literal_bytes, 4);
  CHECK(z->literal && *(const float *)z->literal == 0.0f);
  CHECK(mul->n_operands == 2 && mul->operands[0] == p && mul->operands[1] == c);
  CHECK(mul->literal == NULL && mul->n_called == 0 && mul->n_attrs == 0);
  CHECK(r->n_operands == 2 && r->operands[0] == mul && r->operands[1] == z);
  CHECK(r->n_called == 1 && r->called[0] == add);
  CHECK_EQ_INT(r->n_attrs, 2);
  CHECK_STR(ocl_attr(r, "dimensions"), "{1}");
  CHECK_STR(ocl_attr(r, "to_apply"), "%add_f");
  CHECK(ocl_attr(r, "slice") == NULL);
  int64_t d[4];
  CHECK_EQ_INT(ocl_parse_int_list(ocl_attr(r, "dimensions"), d, 4), 1);
  CHECK_EQ_INT(d[0], 1);
  CHECK_STR(ocl_attr(s, "slice"), "{[0:1], [1:3]}");
  int64_t st[4], li[4], sd[4];
  CHECK_EQ_INT(ocl_parse_slice(ocl_attr(s, "slice"), st, li, sd, 4), 2);
  CHECK(st[0] == 0 && li[0] == 1 && sd[0] == 1 && st[1] == 1 && li[1] == 3 && sd[1] == 1);
  CHECK_EQ_INT(t->shape.dtype, 0);
  CHECK_EQ_INT(t->shape.n_elems, 2);
  if (t->shape.n_elems == 2) {
    CHECK(SHAPE_IS(&t->shape.elems[0], KILN_DTYPE_F32, 2));
    CHECK(SHAPE_IS(&t->shape.elems[1], KILN_DTYPE_F32, 1, 2));
  }
  CHECK_EQ_INT(ocl_shape_elems(&c->shape), 6);
  CHECK_EQ_INT(ocl_shape_elems(&z->shape), 1);
  CHECK_EQ_INT(ocl_shape_elems(&t->shape), 0);
out:
  ocl_module_free(m);
}

/* Computations called before they are defined, without '%', and no ENTRY. */
static void test_order_and_entry(void) {
  ocl_module *m = PARSE_OK(
      "HloModule fwd\n"
      "main {\n"
      "  x = f32[4] parameter(0)\n"
      "  zero = f32[] constant(0)\n"
      "  r = f32[] reduce(x, zero), dimensions={0}, to_apply=sum\n"
      "  ROOT n = f32[] negate(r)\n"
      "}\n"
      "sum {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  add = f32[] add(a, b)\n"
      "}\n");
  if (m) {
    ocl_comp *main_c = comp(m, "main"), *sum = comp(m, "sum");
    CHECK(main_c && sum);
    /* XLA's rule: without ENTRY the last computation is the entry. */
    CHECK(m->entry == sum && sum->is_entry && !main_c->is_entry);
    ocl_instr *r = instr(main_c, "r");
    CHECK(r && r->n_called == 1 && r->called[0] == sum);
    CHECK(r && r->n_operands == 2 && r->operands[0] == instr(main_c, "x"));
    /* No ROOT: the last instruction is the root. */
    CHECK(sum->root == instr(sum, "add") && sum->root->is_root);
    CHECK(main_c->root == instr(main_c, "n"));
    ocl_module_free(m);
  }
  /* Headerless text is accepted too. */
  m = PARSE_OK("ENTRY e { ROOT c = s32[] constant(-7) }");
  if (m) {
    CHECK_STR(m->name, "");
    CHECK(m->entry && m->entry->root && *(const int32_t *)m->entry->root->literal == -7);
    ocl_module_free(m);
  }
}

static void test_called_computations(void) {
  /* %p0 is used before its definition: rejected, not resolved. */
  PARSE_BAD(
      "HloModule calls\n"
      "%cond (s: (s32[], f32[2])) -> pred[] {\n"
      "  %s = (s32[], f32[2]) parameter(0)\n"
      "  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0\n"
      "  %n = s32[] constant(10)\n"
      "  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT\n"
      "}\n"
      "%body (s: (s32[], f32[2])) -> (s32[], f32[2]) {\n"
      "  %s = (s32[], f32[2]) parameter(0)\n"
      "  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0\n"
      "  %v = f32[2] get-tuple-element((s32[], f32[2]) %s), index=1\n"
      "  %one = s32[] constant(1)\n"
      "  %i2 = s32[] add(s32[] %i, s32[] %one)\n"
      "  ROOT %t = (s32[], f32[2]) tuple(s32[] %i2, f32[2] %v)\n"
      "}\n"
      "%b0 (x: f32[2]) -> f32[2] { ROOT %x = f32[2] parameter(0) }\n"
      "%b1 (x: f32[2]) -> f32[2] { %x = f32[2] parameter(0)\n ROOT %y = f32[2] negate(%x) }\n"
      "%ge (a: f32[], b: f32[]) -> pred[] { %a = f32[] parameter(0) %b = f32[] parameter(1)\n"
      "  ROOT %c = pred[] compare(%a, %b), direction=GE, type=TOTALORDER }\n"
      "%sc (a: f32[], b: f32[]) -> f32[] { %a = f32[] parameter(0) %b = f32[] parameter(1)\n"
      "  ROOT %c = f32[] add(%a, %b) }\n"
      "ENTRY %main (p: f32[2], k: s32[]) -> f32[2] {\n"
      "  %p = f32[2] parameter(0)\n"
      "  %k = s32[] parameter(1)\n"
      "  %zero = s32[] constant(0)\n"
      "  %init = (s32[], f32[2]) tuple(s32[] %zero, f32[2]{0} %p)\n"
      "  %w = (s32[], f32[2]) while((s32[], f32[2]) %init), condition=%cond, body=%body, metadata={op_name=\"a\\\"b\" source_line=3}\n"
      "  %v = f32[2] get-tuple-element((s32[], f32[2]{0}) %w), index=1\n"
      "  %sw = f32[2] conditional(s32[] %k, f32[2] %v, f32[2] %v), branch_computations={%b0, %b1}\n"
      "  %f = f32[2] fusion(f32[2] %sw), kind=kLoop, calls=%b1\n"
      "  %c2 = f32[2] call(f32[2] %f, f32[2] %f), calls=%b0, %b1, backend_config=\"{\\\"x\\\": 1}\"\n"
      "  %sas = f32[2] select-and-scatter(f32[2] %c2, f32[2] %c2, f32[] %p0), window={size=1}, select=%ge, scatter=%sc\n"
      "  %p0 = f32[] constant(0)\n"
      "}\n",
      "operand 'p0' of 'sas' is defined at 34:3, after its user");
  const char *good =
      "HloModule calls\n"
      "%cond (s: (s32[], f32[2])) -> pred[] {\n"
      "  %s = (s32[], f32[2]) parameter(0)\n"
      "  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0\n"
      "  %n = s32[] constant(10)\n"
      "  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT\n"
      "}\n"
      "%body (s: (s32[], f32[2])) -> (s32[], f32[2]) {\n"
      "  %s = (s32[], f32[2]) parameter(0)\n"
      "  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0\n"
      "  %v = f32[2] get-tuple-element((s32[], f32[2]) %s), index=1\n"
      "  %one = s32[] constant(1)\n"
      "  %i2 = s32[] add(s32[] %i, s32[] %one)\n"
      "  ROOT %t = (s32[], f32[2]) tuple(s32[] %i2, f32[2] %v)\n"
      "}\n"
      "%b0 (x: f32[2]) -> f32[2] { ROOT %x = f32[2] parameter(0) }\n"
      "%b1 (x: f32[2]) -> f32[2] { %x = f32[2] parameter(0)\n ROOT %y = f32[2] negate(%x) }\n"
      "%ge (a: f32[], b: f32[]) -> pred[] { %a = f32[] parameter(0) %b = f32[] parameter(1)\n"
      "  ROOT %c = pred[] compare(%a, %b), direction=GE, type=TOTALORDER }\n"
      "%sc (a: f32[], b: f32[]) -> f32[] { %a = f32[] parameter(0) %b = f32[] parameter(1)\n"
      "  ROOT %c = f32[] add(%a, %b) }\n"
      "ENTRY %main (p: f32[2], k: s32[]) -> f32[2] {\n"
      "  %p = f32[2] parameter(0)\n"
      "  %k = s32[] parameter(1)\n"
      "  %zero = s32[] constant(0)\n"
      "  %init = (s32[], f32[2]) tuple(s32[] %zero, f32[2]{0} %p)\n"
      "  %w = (s32[], f32[2]) while((s32[], f32[2]) %init), condition=%cond, body=%body, metadata={op_name=\"a\\\"b\" source_line=3}\n"
      "  %v = f32[2] get-tuple-element((s32[], f32[2]{0}) %w), index=1\n"
      "  %sw = f32[2] conditional(s32[] %k, f32[2] %v, f32[2] %v), branch_computations={%b0, %b1}\n"
      "  %f = f32[2] fusion(f32[2] %sw), kind=kLoop, calls=%b1\n"
      "  %c2 = f32[2] call(f32[2] %f, f32[2] %f), calls=%b0, %b1, backend_config=\"{\\\"x\\\": 1}\"\n"
      "  %p0 = f32[] constant(0)\n"
      "  ROOT %sas = f32[2] select-and-scatter(f32[2] %c2, f32[2] %c2, f32[] %p0), window={size=1}, select=%ge, scatter=%sc\n"
      "}\n";
  ocl_module *m = PARSE_OK(good);
  if (!m) return;
  ocl_comp *e = m->entry;
  CHECK(e && strcmp(e->name, "main") == 0);
  ocl_instr *w = instr(e, "w"), *sw = instr(e, "sw"), *f = instr(e, "f"), *c2 = instr(e, "c2"), *sas = instr(e, "sas"),
            *v = instr(e, "v");
  CHECK(w && sw && f && c2 && sas && v);
  if (w && sw && f && c2 && sas && v) {
    CHECK(w->n_called == 2 && w->called[0] == comp(m, "cond") && w->called[1] == comp(m, "body"));
    CHECK_STR(ocl_attr(w, "metadata"), "{op_name=\"a\\\"b\" source_line=3}");
    CHECK_STR(ocl_attr(w, "condition"), "%cond");
    CHECK(v->int_payload == 1 && v->operands[0] == w);
    CHECK(sw->n_called == 2 && sw->called[0] == comp(m, "b0") && sw->called[1] == comp(m, "b1"));
    CHECK_STR(ocl_attr(sw, "branch_computations"), "{%b0, %b1}");
    CHECK(f->n_called == 1 && f->called[0] == comp(m, "b1"));
    CHECK_STR(ocl_attr(f, "kind"), "kLoop");
    CHECK(c2->n_called == 2 && c2->called[0] == comp(m, "b0") && c2->called[1] == comp(m, "b1"));
    CHECK_STR(ocl_attr(c2, "calls"), "%b0, %b1");
    CHECK_STR(ocl_attr(c2, "backend_config"), "\"{\\\"x\\\": 1}\"");
    CHECK_EQ_INT(c2->n_attrs, 2);
    CHECK(sas->n_called == 2 && sas->called[0] == comp(m, "ge") && sas->called[1] == comp(m, "sc"));
    CHECK(e->root == sas);
  }
  ocl_comp *body = comp(m, "body");
  if (body) {
    ocl_instr *i = instr(body, "i"), *bv = instr(body, "v");
    CHECK(i && i->int_payload == 0 && bv && bv->int_payload == 1);
  }
  ocl_instr *lt = instr(comp(m, "cond"), "lt");
  CHECK(lt && SCALAR_IS(&lt->shape, KILN_DTYPE_PRED));
  CHECK_STR(ocl_attr(lt, "direction"), "LT");
  ocl_module_free(m);
}

/* Every attribute form kiln's printer emits, kept raw. */
static void test_attributes(void) {
  /* Elided constants cannot be used. */
  PARSE_BAD(
      "HloModule attrs, is_scheduled=true, entry_computation_layout={(f32[1,4,4,2]{3,2,1,0})->f32[1,2,2,3]{3,2,1,0}}, "
      "frontend_attributes={a=\"b\"}\n"
      "\n"
      "FileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=3}\n"
      "StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n"
      "\n"
      "ENTRY %e (x: f32[1,4,4,2]) -> f32[1,2,2,3] {\n"
      "  %x = f32[1,4,4,2]{3,2,1,0} parameter(0), sharding={replicated}\n"
      "  %k = f32[3,3,2,3]{3,2,1,0} constant({...})\n"
      "}\n",
      "14:39: the constant's values were elided");
  ocl_module *m = PARSE_OK(
      "HloModule attrs, is_scheduled=true, entry_computation_layout={(f32[1,4,4,2]{3,2,1,0})->f32[1,2,2,3]{3,2,1,0}}, "
      "frontend_attributes={a=\"b\"}\n"
      "\n"
      "FileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=3}\n"
      "StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n"
      "\n"
      "ENTRY %e (x: f32[1,4,4,2]) -> f32[1,2,2,3], execution_thread=\"main\" {\n"
      "  %x = f32[1,4,4,2]{3,2,1,0} parameter(0), sharding={devices=[1,2,1,1]0,1}\n"
      "  %k = f32[1,1,2,3]{3,2,1,0:T(8,128)S(1)} constant({ { { {1, 2, 3}, {4, 5, 6} } } })\n"
      "  %cv = f32[1,2,2,3] convolution(f32[1,4,4,2] %x, f32[1,1,2,3] %k), window={size=1x1 stride=2x2 pad=0_0x0_-1 "
      "lhs_dilate=1x1 rhs_dilate=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, "
      "frontend_attributes={_xla_stream=\"1\"}, metadata={op_type=\"Conv2D\" op_name=\"conv/x\" source_file=\"m.py\" "
      "source_line=12}, backend_config={\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[]}\n"
      "  %z = f32[] constant(0)\n"
      "  %pd = f32[1,3,3,3] pad(f32[1,2,2,3] %cv, f32[] %z), padding=0_0x1_0_1x-1_1_2x0_0\n"
      "  %zp = f32[] pad(f32[] %z, f32[] %z), padding=\n"
      "  %cc = f32[1,2,2,3] custom-call(f32[1,2,2,3] %cv), custom_call_target=\"my\\\\target\", "
      "api_version=API_VERSION_STATUS_RETURNING, literal=s32[] 5, operand_layout_constraints={f32[1,2,2,3]{3,2,1,0}}, "
      "output_to_operand_aliasing={{}: (0, {})}\n"
      "  %tk = token[] after-all()\n"
      "  %io = s32[2,3] iota(), iota_dimension=1\n"
      "  %cat = f32[2,2,2,3] concatenate(f32[1,2,2,3] %cv, f32[1,2,2,3] %cc), dimensions={0}, "
      "control-predecessors={%tk}\n"
      "  ROOT %r = f32[1,2,2,3] reduce-window(f32[1,2,2,3] %cc, f32[] %z), window={size=1x2x2x1 pad=0_0x0_1x0_1x0_0 "
      "rhs_reversal=0x1x0x1}, to_apply=%sum // trailing comment\n"
      "}\n"
      "%sum (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n");
  if (!m) return;
  ocl_comp *e = m->entry;
  CHECK_STR(m->name, "attrs");
  CHECK(e && strcmp(e->name, "e") == 0 && m->n_comps == 2);
  ocl_instr *x = instr(e, "x"), *k = instr(e, "k"), *cv = instr(e, "cv"), *pd = instr(e, "pd"), *zp = instr(e, "zp"),
            *cc = instr(e, "cc"), *tk = instr(e, "tk"), *io = instr(e, "io"), *cat = instr(e, "cat"), *r = instr(e, "r");
  CHECK(x && k && cv && pd && zp && cc && tk && io && cat && r);
  if (!(x && k && cv && pd && zp && cc && tk && io && cat && r)) goto out;
  CHECK_STR(ocl_attr(x, "sharding"), "{devices=[1,2,1,1]0,1}");
  CHECK(SHAPE_IS(&k->shape, KILN_DTYPE_F32, 1, 1, 2, 3));
  CHECK_EQ_INT(k->literal_bytes, 24);
  if (k->literal_bytes == 24) CHECK(((const float *)k->literal)[5] == 6.0f);
  CHECK_STR(ocl_attr(cv, "dim_labels"), "b01f_01io->b01f");
  CHECK_STR(ocl_attr(cv, "feature_group_count"), "1");
  CHECK_STR(ocl_attr(cv, "metadata"), "{op_type=\"Conv2D\" op_name=\"conv/x\" source_file=\"m.py\" source_line=12}");
  CHECK_STR(ocl_attr(cv, "backend_config"), "{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[]}");
  CHECK_STR(ocl_attr(cv, "frontend_attributes"), "{_xla_stream=\"1\"}");
  ocl_window_dim wd[4];
  CHECK_EQ_INT(ocl_parse_window(ocl_attr(cv, "window"), wd, 4), 2);
  CHECK(wd[0].size == 1 && wd[0].stride == 2 && wd[1].pad_lo == 0 && wd[1].pad_hi == -1 && wd[1].lhs_dilate == 1);
  ocl_conv_dnums dn;
  CHECK_EQ_INT(ocl_parse_conv_dnums(ocl_attr(cv, "dim_labels"), &dn), 0);
  ocl_pad_dim pads[4];
  CHECK_EQ_INT(ocl_parse_padding(ocl_attr(pd, "padding"), pads, 4), 4);
  CHECK(pads[1].lo == 1 && pads[1].hi == 0 && pads[1].interior == 1);
  CHECK(pads[2].lo == -1 && pads[2].hi == 1 && pads[2].interior == 2);
  CHECK(pads[3].lo == 0 && pads[3].hi == 0 && pads[3].interior == 0);
  CHECK_STR(ocl_attr(zp, "padding"), "");
  CHECK_EQ_INT(ocl_parse_padding(ocl_attr(zp, "padding"), pads, 4), 0);
  CHECK_STR(ocl_attr(cc, "custom_call_target"), "\"my\\\\target\"");
  CHECK_STR(ocl_attr(cc, "literal"), "s32[] 5");
  CHECK_STR(ocl_attr(cc, "api_version"), "API_VERSION_STATUS_RETURNING");
  CHECK_STR(ocl_attr(cc, "operand_layout_constraints"), "{f32[1,2,2,3]{3,2,1,0}}");
  CHECK_STR(ocl_attr(cc, "output_to_operand_aliasing"), "{{}: (0, {})}");
  CHECK_EQ_INT(cc->n_attrs, 5);
  CHECK(tk->shape.dtype == OCL_DTYPE_TOKEN && tk->n_operands == 0 && ocl_dtype_size(tk->shape.dtype) == 0);
  CHECK(io->int_payload == 1 && SHAPE_IS(&io->shape, KILN_DTYPE_S32, 2, 3));
  CHECK(cat->int_payload == 0 && cat->n_operands == 2 && cat->operands[1] == cc);
  CHECK_STR(ocl_attr(cat, "control-predecessors"), "{%tk}");
  CHECK(r->n_called == 1 && r->called[0] == comp(m, "sum") && e->root == r);
  CHECK_EQ_INT(ocl_parse_window(ocl_attr(r, "window"), wd, 4), 4);
  CHECK(wd[1].size == 2 && wd[1].pad_hi == 1 && wd[1].reversal == 1 && wd[0].reversal == 0 && wd[2].stride == 1);
out:
  ocl_module_free(m);
}

static uint16_t u16_at(const ocl_instr *ins, int i) {
  uint16_t v;
  memcpy(&v, (const char *)ins->literal + 2 * i, 2);
  return v;
}
static uint32_t u32_at(const ocl_instr *ins, int i) {
  uint32_t v;
  memcpy(&v, (const char *)ins->literal + 4 * i, 4);
  return v;
}
static uint64_t u64_at(const ocl_instr *ins, int i) {
  uint64_t v;
  memcpy(&v, (const char *)ins->literal + 8 * i, 8);
  return v;
}

static void test_constants(void) {
  ocl_module *m = PARSE_OK(
      "HloModule consts\n"
      "ENTRY %e () -> f32[] {\n"
      "  %h = f16[12] constant({0.1, -0, nan, -nan, inf, -inf, 65504, 6e-08, 2049, 2051, 1e-05, 0.00099945})\n"
      "  %b = bf16[8] constant({0.1, -0, nan, 3.141, -9.973e+19, 1.00390625, 1.01171875, 1e-45})\n"
      "  %f = f32[10] constant({0.1, -0, nan, -nan, inf, 3.40282347e+38, 1.4013e-45, 1e-05, 0x1p-3, 1E+2})\n"
      "  %d = f64[5] constant({0.1, -0, -nan, 2.2250738585072014e-308, -1.7976931348623157e+308})\n"
      "  %np = f32[2] constant({nan(0x1), -nan(0x7fffff)})\n"
      "  %s64 = s64[3] constant({-9223372036854775808, 0, 9223372036854775807})\n"
      "  %u64 = u64[2] constant({0, 18446744073709551615})\n"
      "  %s8 = s8[3] constant({-128, -0, 127})\n"
      "  %u8 = u8[2] constant({0, 255})\n"
      "  %s16 = s16[2] constant({-32768, 32767})\n"
      "  %u16 = u16[1] constant({65535})\n"
      "  %s32 = s32[2] constant({-2147483648, 2147483647})\n"
      "  %u32 = u32[1] constant({4294967295})\n"
      "  %pr = pred[4] constant({true, false, 1, 0})\n"
      "  %ps = pred[] constant(true)\n"
      "  %e0 = f32[0] constant({})\n"
      "  %e1 = s32[2,0] constant({ {}, {} })\n"
      "  %e2 = f32[0,3] constant({})\n"
      "  %tu = (f32[2], (s32[], pred[])) constant(( {1.5, 2}, (3, true) ))\n"
      "  %old = (f32[2], s32[]) constant((f32[2] {1, 2}, s32[] 3))\n"
      "  %r3 = f32[2,2,2] constant({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } })\n"
      "  ROOT %z = f32[] constant(-0.5)\n"
      "}\n");
  if (!m) return;
  ocl_comp *e = m->entry;
  ocl_instr *h = instr(e, "h"), *b = instr(e, "b"), *f = instr(e, "f"), *d = instr(e, "d"), *np = instr(e, "np"),
            *s64 = instr(e, "s64"), *u64 = instr(e, "u64"), *s8 = instr(e, "s8"), *u8 = instr(e, "u8"),
            *s16 = instr(e, "s16"), *u16 = instr(e, "u16"), *s32 = instr(e, "s32"), *u32 = instr(e, "u32"),
            *pr = instr(e, "pr"), *ps = instr(e, "ps"), *e0 = instr(e, "e0"), *e1 = instr(e, "e1"),
            *e2 = instr(e, "e2"), *tu = instr(e, "tu"), *old = instr(e, "old"), *r3 = instr(e, "r3"),
            *z = instr(e, "z");
  if (!(h && b && f && d && np && s64 && u64 && s8 && u8 && s16 && u16 && s32 && u32 && pr && ps && e0 && e1 && e2 &&
        tu && old && r3 && z)) {
    CHECK(!"missing instruction");
    ocl_module_free(m);
    return;
  }
  CHECK_EQ_INT(h->literal_bytes, 24);
  static const uint16_t want_h[12] = {0x2e66, 0x8000, 0x7e00, 0xfe00, 0x7c00, 0xfc00,
                                      0x7bff, 0x0001, 0x6800, 0x6802, 0x00a8, 0x1418};
  for (int i = 0; i < 12; i++) {
    checks++;
    if (u16_at(h, i) != want_h[i]) {
      failures++;
      fprintf(stderr, "f16[%d]: got 0x%04x, want 0x%04x\n", i, u16_at(h, i), want_h[i]);
    }
  }
  static const uint16_t want_b[8] = {0x3dcd, 0x8000, 0x7fc0, 0x4049, 0xe0ad, 0x3f80, 0x3f82, 0x0000};
  CHECK_EQ_INT(b->literal_bytes, 16);
  for (int i = 0; i < 8; i++) {
    checks++;
    if (u16_at(b, i) != want_b[i]) {
      failures++;
      fprintf(stderr, "bf16[%d]: got 0x%04x, want 0x%04x\n", i, u16_at(b, i), want_b[i]);
    }
  }
  static const uint32_t want_f[10] = {0x3dcccccd, 0x80000000, 0x7fc00000, 0xffc00000, 0x7f800000,
                                      0x7f7fffff, 0x00000001, 0x3727c5ac, 0x3e000000, 0x42c80000};
  for (int i = 0; i < 10; i++) {
    checks++;
    if (u32_at(f, i) != want_f[i]) {
      failures++;
      fprintf(stderr, "f32[%d]: got 0x%08x, want 0x%08x\n", i, u32_at(f, i), want_f[i]);
    }
  }
  CHECK(u64_at(d, 0) == 0x3fb999999999999aull && u64_at(d, 1) == 0x8000000000000000ull);
  CHECK(u64_at(d, 2) == 0xfff8000000000000ull && u64_at(d, 3) == 0x0010000000000000ull);
  CHECK(u64_at(d, 4) == 0xffefffffffffffffull);
  CHECK(u32_at(np, 0) == 0x7f800001u && u32_at(np, 1) == 0xffffffffu);
  CHECK(s64->literal_bytes == 24 && (int64_t)u64_at(s64, 0) == INT64_MIN && (int64_t)u64_at(s64, 2) == INT64_MAX);
  CHECK(u64_at(u64, 1) == UINT64_MAX);
  const int8_t *v8 = s8->literal;
  CHECK(s8->literal_bytes == 3 && v8[0] == -128 && v8[1] == 0 && v8[2] == 127);
  CHECK(((const uint8_t *)u8->literal)[1] == 255);
  CHECK((int16_t)u16_at(s16, 0) == -32768 && (int16_t)u16_at(s16, 1) == 32767);
  CHECK(u16_at(u16, 0) == 65535);
  CHECK((int32_t)u32_at(s32, 0) == INT32_MIN && (int32_t)u32_at(s32, 1) == INT32_MAX);
  CHECK(u32_at(u32, 0) == UINT32_MAX);
  const uint8_t *vp = pr->literal;
  CHECK(pr->literal_bytes == 4 && vp[0] == 1 && vp[1] == 0 && vp[2] == 1 && vp[3] == 0);
  CHECK(ps->literal_bytes == 1 && *(const uint8_t *)ps->literal == 1);
  CHECK(e0->literal != NULL && e0->literal_bytes == 0);
  CHECK(e1->literal != NULL && e1->literal_bytes == 0);
  CHECK(e2->literal != NULL && e2->literal_bytes == 0);
  /* Tuple constants: the leaves' bytes one after another. */
  CHECK_EQ_INT(tu->literal_bytes, 8 + 4 + 1);
  if (tu->literal_bytes == 13) {
    float fv[2];
    int32_t iv;
    memcpy(fv, tu->literal, 8);
    memcpy(&iv, (const char *)tu->literal + 8, 4);
    CHECK(fv[0] == 1.5f && fv[1] == 2.0f && iv == 3 && ((const uint8_t *)tu->literal)[12] == 1);
  }
  CHECK_EQ_INT(old->literal_bytes, 12);
  CHECK_EQ_INT(r3->literal_bytes, 32);
  if (r3->literal_bytes == 32) CHECK(((const float *)r3->literal)[6] == 7.0f);
  CHECK(*(const float *)z->literal == -0.5f);
  ocl_module_free(m);
}

static void test_shapes(void) {
  ocl_module *m = PARSE_OK(
      "HloModule shapes\n"
      "ENTRY %e (p: (f32[2], (s32[], (pred[3,1], token[])))) -> ((f32[2], (s32[], (pred[3,1], token[]))), u8[1]) {\n"
      "  %p = (f32[2]{0}, (s32[], (pred[3,1]{0,1}, token[]))) parameter(0)\n"
      "  %q = f32[]{:S(1)} constant(1)\n"
      "  %w = u8[1]{0:T(128)} constant({7})\n"
      "  %b = bf16[2,3]{1,0} parameter(1)\n"
      "  %c = f64[16,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2] parameter(2)\n"
      "  %s = (f32[2], /*index=1*/(s32[], (pred[3,1], token[])), u16[], s16[], u32[], /*index=5*/s64[], u64[], f16[]) "
      "parameter(3)\n"
      "  ROOT %t = ((f32[2], (s32[], (pred[3,1], token[]))), u8[1]) tuple((f32[2], (s32[], (pred[3,1], token[]))) %p, "
      "/*index=1*/u8[1] %w)\n"
      "}\n");
  if (!m) return;
  ocl_instr *p = instr(m->entry, "p"), *c = instr(m->entry, "c"), *s = instr(m->entry, "s"), *t = instr(m->entry, "t");
  CHECK(p && c && s && t);
  if (p && c && s && t) {
    CHECK(p->shape.dtype == 0 && p->shape.n_elems == 2);
    const ocl_shape *in = &p->shape.elems[1].elems[1];
    CHECK(in->dtype == 0 && in->n_elems == 2 && SHAPE_IS(&in->elems[0], KILN_DTYPE_PRED, 3, 1) &&
          in->elems[1].dtype == OCL_DTYPE_TOKEN);
    CHECK_EQ_INT(c->shape.rank, 16);
    CHECK_EQ_INT(ocl_shape_elems(&c->shape), 32);
    CHECK_EQ_INT(s->shape.n_elems, 8);
    int want[8] = {0, 0, KILN_DTYPE_U16, KILN_DTYPE_S16, KILN_DTYPE_U32, KILN_DTYPE_S64, KILN_DTYPE_U64, KILN_DTYPE_F16};
    for (int i = 2; i < 8 && s->shape.n_elems == 8; i++) CHECK_EQ_INT(s->shape.elems[i].dtype, want[i]);
    CHECK(t->n_operands == 2 && t->operands[0] == p);
    CHECK_EQ_INT(m->entry->n_params, 4);
  }
  static const struct {
    int dtype;
    size_t size;
  } sizes[] = {{KILN_DTYPE_PRED, 1}, {KILN_DTYPE_S8, 1},   {KILN_DTYPE_S16, 2}, {KILN_DTYPE_S32, 4},
               {KILN_DTYPE_S64, 8},  {KILN_DTYPE_U8, 1},   {KILN_DTYPE_U16, 2}, {KILN_DTYPE_U32, 4},
               {KILN_DTYPE_U64, 8},  {KILN_DTYPE_F16, 2},  {KILN_DTYPE_BF16, 2}, {KILN_DTYPE_F32, 4},
               {KILN_DTYPE_F64, 8},  {0, 0},               {OCL_DTYPE_TOKEN, 0}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) CHECK_EQ_INT(ocl_dtype_size(sizes[i].dtype), sizes[i].size);
  ocl_module_free(m);
}

static void test_decoders(void) {
  int64_t v[8];
  CHECK_EQ_INT(ocl_parse_int_list("{1,0}", v, 8), 2);
  CHECK(v[0] == 1 && v[1] == 0);
  CHECK_EQ_INT(ocl_parse_int_list("{}", v, 8), 0);
  CHECK_EQ_INT(ocl_parse_int_list(" { -3 , 9223372036854775807,-9223372036854775808 } ", v, 8), 3);
  CHECK(v[0] == -3 && v[1] == INT64_MAX && v[2] == INT64_MIN);
  CHECK_EQ_INT(ocl_parse_int_list("{1,2,3}", v, 2), -1); /* over cap */
  CHECK_EQ_INT(ocl_parse_int_list("{1,}", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list("{1 2}", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list("1,2", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list("{1}x", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list("{9223372036854775808}", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list("{", v, 8), -1);
  CHECK_EQ_INT(ocl_parse_int_list(NULL, v, 8), -1);

  int64_t st[4], li[4], sd[4];
  CHECK_EQ_INT(ocl_parse_slice("{[0:4], [1:5:2]}", st, li, sd, 4), 2);
  CHECK(st[0] == 0 && li[0] == 4 && sd[0] == 1 && st[1] == 1 && li[1] == 5 && sd[1] == 2);
  CHECK_EQ_INT(ocl_parse_slice("{}", st, li, sd, 4), 0);
  CHECK_EQ_INT(ocl_parse_slice("{[0:4]}", st, li, sd, 0), -1);
  CHECK_EQ_INT(ocl_parse_slice("{[0:4:]}", st, li, sd, 4), -1);
  CHECK_EQ_INT(ocl_parse_slice("{[0]}", st, li, sd, 4), -1);
  CHECK_EQ_INT(ocl_parse_slice("{[0:1] [1:2]}", st, li, sd, 4), -1);

  ocl_window_dim w[4];
  CHECK_EQ_INT(ocl_parse_window("{size=3x3 stride=2x1 pad=0_1x-1_2 lhs_dilate=1x2 rhs_dilate=2x3 rhs_reversal=0x1}", w, 4),
               2);
  CHECK(w[0].size == 3 && w[0].stride == 2 && w[0].pad_lo == 0 && w[0].pad_hi == 1 && w[0].lhs_dilate == 1 &&
        w[0].rhs_dilate == 2 && w[0].reversal == 0);
  CHECK(w[1].size == 3 && w[1].stride == 1 && w[1].pad_lo == -1 && w[1].pad_hi == 2 && w[1].lhs_dilate == 2 &&
        w[1].rhs_dilate == 3 && w[1].reversal == 1);
  CHECK_EQ_INT(ocl_parse_window("{size=5}", w, 4), 1);
  CHECK(w[0].size == 5 && w[0].stride == 1 && w[0].pad_lo == 0 && w[0].pad_hi == 0 && w[0].lhs_dilate == 1 &&
        w[0].rhs_dilate == 1 && w[0].reversal == 0);
  CHECK_EQ_INT(ocl_parse_window("{}", w, 4), 0);
  CHECK_EQ_INT(ocl_parse_window("{stride=2}", w, 4), -1);          /* no size */
  CHECK_EQ_INT(ocl_parse_window("{size=2x2 stride=2}", w, 4), -1); /* rank mismatch */
  CHECK_EQ_INT(ocl_parse_window("{size=2 size=2}", w, 4), -1);
  CHECK_EQ_INT(ocl_parse_window("{size=2 bogus=1}", w, 4), -1);
  CHECK_EQ_INT(ocl_parse_window("{size=2 pad=1}", w, 4), -1);
  CHECK_EQ_INT(ocl_parse_window("{size=2x2x2}", w, 2), -1);
  CHECK_EQ_INT(ocl_parse_window("{size=2", w, 4), -1);
  CHECK_EQ_INT(ocl_parse_window("{size=2x}", w, 4), -1);

  ocl_pad_dim pd[4];
  CHECK_EQ_INT(ocl_parse_padding("0_0x1_2_1", pd, 4), 2);
  CHECK(pd[0].lo == 0 && pd[0].hi == 0 && pd[0].interior == 0 && pd[1].lo == 1 && pd[1].hi == 2 && pd[1].interior == 1);
  CHECK_EQ_INT(ocl_parse_padding("-1_-2x3_-4_5", pd, 4), 2);
  CHECK(pd[0].lo == -1 && pd[0].hi == -2 && pd[1].lo == 3 && pd[1].hi == -4 && pd[1].interior == 5);
  CHECK_EQ_INT(ocl_parse_padding("", pd, 4), 0);
  CHECK_EQ_INT(ocl_parse_padding("1", pd, 4), -1);
  CHECK_EQ_INT(ocl_parse_padding("1_2x", pd, 4), -1);
  CHECK_EQ_INT(ocl_parse_padding("1_2_3_4", pd, 4), -1);
  CHECK_EQ_INT(ocl_parse_padding("1_2x3_4", pd, 1), -1);

  ocl_conv_dnums d;
  CHECK_EQ_INT(ocl_parse_conv_dnums("b01f_01io->b01f", &d), 0);
  CHECK(d.n_spatial == 2 && d.in_batch == 0 && d.in_feature == 3 && d.in_spatial[0] == 1 && d.in_spatial[1] == 2);
  CHECK(d.k_in_feature == 2 && d.k_out_feature == 3 && d.k_spatial[0] == 0 && d.k_spatial[1] == 1);
  CHECK(d.out_batch == 0 && d.out_feature == 3 && d.out_spatial[0] == 1 && d.out_spatial[1] == 2);
  CHECK_EQ_INT(ocl_parse_conv_dnums("bf01_oi01->bf01", &d), 0);
  CHECK(d.n_spatial == 2 && d.in_batch == 0 && d.in_feature == 1 && d.in_spatial[0] == 2 && d.in_spatial[1] == 3);
  CHECK(d.k_out_feature == 0 && d.k_in_feature == 1 && d.k_spatial[0] == 2 && d.k_spatial[1] == 3);
  CHECK(d.out_batch == 0 && d.out_feature == 1 && d.out_spatial[0] == 2 && d.out_spatial[1] == 3);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b012f_012io->b012f", &d), 0);
  CHECK(d.n_spatial == 3 && d.in_feature == 4 && d.in_spatial[2] == 3 && d.k_in_feature == 3 && d.k_out_feature == 4);
  CHECK_EQ_INT(ocl_parse_conv_dnums("bf012_oi012->bf012", &d), 0);
  CHECK(d.n_spatial == 3 && d.in_spatial[0] == 2 && d.k_spatial[2] == 4 && d.out_spatial[1] == 3);
  /* Spatial dims out of order: "b10f" means tensor dim 1 is spatial 1, dim 2 spatial 0. */
  CHECK_EQ_INT(ocl_parse_conv_dnums("f10b_i10o->b01f", &d), 0);
  CHECK(d.in_feature == 0 && d.in_batch == 3 && d.in_spatial[0] == 2 && d.in_spatial[1] == 1 && d.k_out_feature == 3);
  CHECK_EQ_INT(ocl_parse_conv_dnums("bf_io->bf", &d), 0);
  CHECK_EQ_INT(d.n_spatial, 0);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b0f_0io->b0f", &d), 0);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b01f_01io->b0f", &d), -1); /* spatial counts differ */
  CHECK_EQ_INT(ocl_parse_conv_dnums("b01f_01io", &d), -1);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b00f_01io->b01f", &d), -1);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b02f_02io->b02f", &d), -1); /* gap in spatial numbering */
  CHECK_EQ_INT(ocl_parse_conv_dnums("bb01_01io->b01f", &d), -1);
  CHECK_EQ_INT(ocl_parse_conv_dnums("b01f_01io->b01fx", &d), -1);
  CHECK_EQ_INT(ocl_parse_conv_dnums("", &d), -1);
}

static void test_malformed(void) {
  const char *hdr = "HloModule m\n";
  (void)hdr;
  PARSE_BAD("", "expected a computation, got end of input");
  PARSE_BAD("HloModule", "expected a module name");
  PARSE_BAD("HloModule m", "expected a computation");
  PARSE_BAD("HloModule m\nENTRY %e {", "'}' closing computation 'e'");
  PARSE_BAD_AT("HloModule m\nENTRY %e {\n  %a = f32[] add(f32[] %x, f32[] %x)\n}\n", "unknown operand 'x'", "3:24");
  PARSE_BAD_AT("HloModule m\nENTRY %e {\n  %a = f32[] negate(f32[] %b)\n  %b = f32[] constant(1)\n}\n",
               "after its user", "3:27");
  PARSE_BAD_AT("HloModule m\nENTRY %e {\n  %a = f32[] constant(1)\n  %a = f32[] constant(2)\n}\n",
               "duplicate instruction name 'a' (first defined at 3:3)", "4:3");
  PARSE_BAD("ENTRY %e {\n  ROOT %a = f32[] constant(1)\n  ROOT %b = f32[] constant(2)\n}\n", "more than one ROOT");
  PARSE_BAD_AT("ENTRY %e {\n  %a = c64[2] parameter(0)\n}\n", "unsupported element type 'c64'", "2:8");
  PARSE_BAD("ENTRY %e {\n  %a = f8e4m3fn[2] parameter(0)\n}\n", "unsupported element type 'f8e4m3fn'");
  PARSE_BAD("ENTRY %e {\n  %a = s4[2] parameter(0)\n}\n", "unsupported element type 's4'");
  PARSE_BAD("ENTRY %e {\n  %a = (f32[], c128[]) parameter(0)\n}\n", "unsupported element type 'c128'");
  PARSE_BAD_AT("ENTRY %e {\n  %a = f32[<=4] parameter(0)\n}\n", "dynamic dimensions", "2:12");
  PARSE_BAD("ENTRY %e {\n  %a = f32[?] parameter(0)\n}\n", "dynamic dimensions");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] parameter(0)\n}\n", "more than 16 dimensions");
  PARSE_BAD("ENTRY %e {\n  %a = f32[-1] parameter(0)\n}\n", "expected a dimension size");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1099511627776,1099511627776] parameter(0)\n}\n", "too large");
  PARSE_BAD("ENTRY %e {\n  %a = f32[99999999999999999999] parameter(0)\n}\n", "out of range");
  PARSE_BAD("ENTRY %e {\n  %a = f32[0,4611686018427387904,4] parameter(0)\n}\n", "too large");
  PARSE_BAD("ENTRY %e {\n  %a = f32 parameter(0)\n}\n", "expected a shape");
  PARSE_BAD("ENTRY %e {\n  %a = f32[2] constant({1})\n}\n", "constant has 1 values in dimension 0, but its shape f32[2] needs 2");
  PARSE_BAD("ENTRY %e {\n  %a = f32[2] constant({1, 2, 3})\n}\n", "more than 2 values");
  PARSE_BAD("ENTRY %e {\n  %a = f32[2,2] constant({1, 2, 3, 4})\n}\n", "expected '{' opening a dimension");
  PARSE_BAD("ENTRY %e {\n  %a = f32[100000] constant({1, 2})\n}\n", "constant has 2 values");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1000000,1000000] constant({})\n}\n", "constant has 0 values");
  PARSE_BAD_AT("ENTRY %e {\n  %a = s8[2] constant({1, 200})\n}\n", "value 200 is out of range for s8", "2:27");
  PARSE_BAD("ENTRY %e {\n  %a = u8[1] constant({-1})\n}\n", "out of range for u8");
  PARSE_BAD("ENTRY %e {\n  %a = s64[1] constant({9223372036854775808})\n}\n", "out of range for s64");
  PARSE_BAD("ENTRY %e {\n  %a = u64[1] constant({18446744073709551616})\n}\n", "out of range for u64");
  PARSE_BAD("ENTRY %e {\n  %a = s32[1] constant({1.5})\n}\n", "expected an integer for s32, got '1.5'");
  PARSE_BAD("ENTRY %e {\n  %a = f16[1] constant({65520})\n}\n", "out of range for f16");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1] constant({1e39})\n}\n", "out of range for f32");
  PARSE_BAD("ENTRY %e {\n  %a = f64[1] constant({1e309})\n}\n", "out of range for f64");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1] constant({1.2.3})\n}\n", "expected a number for f32, got '1.2.3'");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1] constant({abc})\n}\n", "expected a number for f32");
  PARSE_BAD("ENTRY %e {\n  %a = f32[1] constant({nan(1)})\n}\n", "hexadecimal NaN payload");
  PARSE_BAD("ENTRY %e {\n  %a = pred[1] constant({2})\n}\n", "'true' or 'false'");
  PARSE_BAD("ENTRY %e {\n  %a = f32[3] constant({...})\n}\n", "elided");
  PARSE_BAD("ENTRY %e {\n  %a = token[] constant(0)\n}\n", "token");
  PARSE_BAD("ENTRY %e {\n  %a = (f32[], s32[]) constant((1))\n}\n", "tuple constant has 1 elements");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), metadata={op_name=\"x}\n}\n", "unterminated string");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), sharding={devices=[1,2)0,1}\n}\n", "expected ']' to close");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), sharding={x\n", "'}' to close the '{' at 2:36");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), dimensions={1}, dimensions={2}\n}\n", "given twice");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), =2\n}\n", "expected an attribute name");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), x 2\n}\n", "expected '=' after the attribute name");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(1)\n}\n", "leaves a gap");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(0)\n  %q = f32[] parameter(0)\n}\n", "given twice (also 'p')");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(99999999999)\n}\n", "out of range");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(x)\n}\n", "expected a parameter number");
  PARSE_BAD("ENTRY %e {\n  %p = (f32[]) parameter(0)\n  %g = f32[] get-tuple-element(%p), index=1\n}\n",
            "index 1 is out of range");
  PARSE_BAD("ENTRY %e {\n  %p = (f32[]) parameter(0)\n  %g = f32[] get-tuple-element(%p)\n}\n", "needs a index=");
  PARSE_BAD("ENTRY %e {\n  %p = (f32[]) parameter(0)\n  %g = s32[] get-tuple-element(%p), index=0\n}\n",
            "differs from tuple element");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(0)\n  %g = f32[] get-tuple-element(%p), index=0\n}\n",
            "one tuple-shaped operand");
  PARSE_BAD("ENTRY %e {\n  %p = f32[] parameter(0)\n  %g = f32[] get-tuple-element((f32[]) %p), index=0\n}\n",
            "written with shape (f32[]) but defined with shape f32[]");
  PARSE_BAD("ENTRY %e {\n  %i = s32[2] iota()\n}\n", "iota_dimension=");
  PARSE_BAD("ENTRY %e {\n  %i = s32[2] iota(), iota_dimension=x\n}\n", "not an integer");
  PARSE_BAD("ENTRY %e {\n  %p = f32[2] parameter(0)\n  %c = f32[4] concatenate(%p, %p)\n}\n", "dimensions={d}");
  PARSE_BAD("ENTRY %e {\n  %p = f32[2] parameter(0)\n  %c = f32[4] concatenate(%p, %p), dimensions={0,1}\n}\n",
            "dimensions={d}");
  PARSE_BAD_AT("ENTRY %e {\n  %p = f32[] parameter(0)\n  %r = f32[] call(%p), to_apply=%nope\n}\n",
               "unknown computation 'nope' called by 'r'", "3:33");
  PARSE_BAD("%a {\n  %p = f32[] parameter(0)\n  %r = f32[] call(%p), to_apply=%b\n}\n"
            "%b {\n  %p = f32[] parameter(0)\n  %r = f32[] call(%p), to_apply=%a\n}\n",
            "call cycle");
  PARSE_BAD("%a {\n  %p = f32[] parameter(0)\n  %r = f32[] call(%p), to_apply=%a\n}\n", "call cycle");
  PARSE_BAD("ENTRY %a {\n  %p = f32[] parameter(0)\n}\nENTRY %b {\n  %p = f32[] parameter(0)\n}\n",
            "more than one ENTRY");
  PARSE_BAD("%a {\n  %p = f32[] parameter(0)\n}\n%a {\n  %p = f32[] parameter(0)\n}\n", "duplicate computation name 'a'");
  PARSE_BAD("ENTRY %e {\n}\n", "has no instructions");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1) /* unterminated\n}\n", "unterminated comment");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] negate(f32[] )\n}\n", "expected an operand name");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] negate(%b %c)\n}\n", "expected ',' or ')' after an operand");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] \n}\n", "expected an opcode");
  PARSE_BAD("ENTRY %e {\n  %a f32[] constant(1)\n}\n", "expected '=' after the instruction name");
  PARSE_BAD("ENTRY %e (p: f32[]) f32[] {\n  %a = f32[] constant(1)\n}\n", "'->'");
  PARSE_BAD("HloModule m, entry_computation_layout={(f32[])->f32[]\nENTRY %e {\n %a = f32[] constant(1)\n}\n", "to close");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1)\n}\n}\n", "expected a computation");
  PARSE_BAD("ENTRY %e {\n  %a = token[2] after-all()\n}\n", "token shapes have no dimensions");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), calls=%b, %c=1\n}\n", "expected an attribute name, got '%c'");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(1), branch_computations={%b %c}\n}\n", "',' or '}' in the computation list");
  PARSE_BAD("ENTRY %e {\n  %a = f32[] constant(\x01)\n}\n", "got byte 0x01");

  /* Nesting: 64 levels of tuple shape are fine, 65 are not. */
  char buf[4096];
  for (int depth = 63; depth <= 66; depth++) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, sizeof buf - k, "ENTRY %%e {\n  %%p = ");
    for (int i = 0; i < depth; i++) buf[k++] = '(';
    k += (size_t)snprintf(buf + k, sizeof buf - k, "f32[]");
    for (int i = 0; i < depth; i++) buf[k++] = ')';
    k += (size_t)snprintf(buf + k, sizeof buf - k, " parameter(0)\n}\n");
    buf[k] = 0;
    if (depth <= 64) {
      ocl_module *m = PARSE_OK(buf);
      if (m) ocl_module_free(m);
    } else {
      PARSE_BAD(buf, "nested more than 64 deep");
    }
  }
  /* Deep brackets in an attribute value. */
  {
    size_t k = (size_t)snprintf(buf, sizeof buf, "ENTRY %%e {\n  %%p = f32[] parameter(0), x=");
    for (int i = 0; i < 100; i++) buf[k++] = '{';
    for (int i = 0; i < 100; i++) buf[k++] = '}';
    snprintf(buf + k, sizeof buf - k, "\n}\n");
    PARSE_BAD(buf, "nested more than 64 deep");
  }
  /* Error buffers: NULL and tiny ones are fine. */
  {
    ocl_module *m;
    CHECK(ocl_parse_module("x", 1, &m, NULL, 0) != 0 && m == NULL);
    char tiny[4] = "zzz";
    CHECK(ocl_parse_module("x", 1, &m, tiny, sizeof tiny) != 0 && strlen(tiny) == 3);
    CHECK(ocl_parse_module(NULL, 0, &m, NULL, 0) != 0);
    CHECK(ocl_parse_module("x", 1, NULL, NULL, 0) != 0);
  }
  /* Text need not be NUL-terminated: only len bytes are read. */
  {
    const char *t = "ENTRY %e { %a = f32[] constant(1) }GARBAGE";
    ocl_module *m;
    char err[256];
    CHECK(ocl_parse_module(t, strlen(t) - 7, &m, err, sizeof err) == 0);
    if (m) ocl_module_free(m);
  }
}

/* Odds and ends of the text form: CRLF line ends, comments anywhere blanks may be,
 * names with dashes and dots, an instruction named ROOT, layouts that differ between
 * definition and use (ignored), and the self-reference and unknown-operand messages. */
static void test_misc(void) {
  ocl_module *m = PARSE_OK(
      "HloModule misc // the header\r\n"
      "/* a block\r\n comment */\r\n"
      "ENTRY %e.1-x (p: f32[2,3]) -> f32[3,2] {\r\n"
      "  %get-tuple-element.12 = f32[2,3]{1,0} parameter(0) // trailing\r\n"
      "  ROOT = f32[2,3]{0,1} copy(f32[2,3]{0,1} /* comment */ %get-tuple-element.12)\r\n"
      "  ROOT %t.2 = f32[3,2] transpose(f32[2,3] ROOT), dimensions={1,0}\r\n"
      "}\r\n");
  if (m) {
    ocl_comp *e = m->entry;
    CHECK_STR(e->name, "e.1-x");
    ocl_instr *g = instr(e, "get-tuple-element.12"), *r = instr(e, "ROOT"), *t = instr(e, "t.2");
    CHECK(g && r && t && e->root == t && !r->is_root && r->operands[0] == g && t->operands[0] == r);
    CHECK(g && g->parameter_number == 0);
    ocl_module_free(m);
  }
  PARSE_BAD_AT("ENTRY %e {\n  %a = f32[] negate(f32[] %a)\n}\n", "operand 'a' of 'a' is defined at 2:3", "2:27");
  /* The first bad operand is reported even when a later one is bad too. */
  PARSE_BAD_AT("ENTRY %e {\n  %a = f32[] parameter(0)\n  %b = f32[] add(%x, %y)\n  %x = f32[] negate(%q)\n}\n",
               "operand 'x' of 'b' is defined at 4:3, after its user", "3:18");
}

/* Every prefix of a valid module must fail cleanly (or parse) without reading past len. */
static void test_prefixes(void) {
  size_t n = strlen(k_example);
  int ok = 0;
  for (size_t len = 0; len <= n; len++) {
    char *copy = malloc(len ? len : 1); /* exact size: ASan catches any overread */
    memcpy(copy, k_example, len);
    ocl_module *m;
    char err[256];
    if (ocl_parse_module(copy, len, &m, err, sizeof err) == 0) {
      ok++;
      ocl_module_free(m);
    } else {
      int l, c;
      checks++;
      if (sscanf(err, "%d:%d:", &l, &c) != 2) {
        failures++;
        fprintf(stderr, "prefix %zu: unlocated error \"%s\"\n", len, err);
      }
    }
    free(copy);
  }
  CHECK(ok >= 1); /* the whole text, and the text without its final newline */
}

/* Long inputs stay linear: 200000 instructions, every one using the first. */
static void test_long_input(void) {
  int n = 200000;
  size_t cap = (size_t)n * 64 + 128;
  char *t = malloc(cap);
  size_t k = (size_t)snprintf(t, cap, "HloModule big\nENTRY %%e {\n  %%p0 = f32[4] parameter(0)\n");
  for (int i = 1; i < n; i++) k += (size_t)snprintf(t + k, cap - k, "  %%x%d = f32[4] add(f32[4] %%p0, %%x%d)\n", i, i > 1 ? i - 1 : 0);
  k += (size_t)snprintf(t + k, cap - k, "}\n");
  /* %x0 does not exist: fix the first use to refer to p0. */
  char *first = strstr(t, "%x0)");
  if (first) memcpy(first, "%p0)", 4);
  clock_t c0 = clock();
  ocl_module *m;
  char err[256];
  int rc = ocl_parse_module(t, k, &m, err, sizeof err);
  double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
  CHECK(rc == 0);
  if (rc) fprintf(stderr, "long input: %s\n", err);
  else {
    CHECK_EQ_INT(m->entry->n_instrs, n);
    CHECK(m->entry->instrs[n - 1]->operands[1] == m->entry->instrs[n - 2]);
    ocl_module_free(m);
  }
  CHECK(secs < 5.0);
  /* A big constant. */
  int ne = 100000;
  k = (size_t)snprintf(t, cap, "ENTRY %%e {\n  %%c = f32[%d] constant({", ne);
  for (int i = 0; i < ne; i++) k += (size_t)snprintf(t + k, cap - k, "%s%d.5", i ? ", " : "", i);
  k += (size_t)snprintf(t + k, cap - k, "})\n}\n");
  rc = ocl_parse_module(t, k, &m, err, sizeof err);
  CHECK(rc == 0);
  if (!rc) {
    const float *v = m->entry->root->literal;
    CHECK(m->entry->root->literal_bytes == (size_t)ne * 4 && v[ne - 1] == (float)(ne - 1) + 0.5f);
    ocl_module_free(m);
  }
  free(t);
}

/* File mode: parse each file; print one line per file; exit 1 if any fails. */
static int parse_files(int argc, char **argv) {
  int bad = 0, good = 0;
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      printf("FAIL %s: cannot open\n", argv[i]);
      bad++;
      continue;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
      n += r;
      if (n == cap) {
        char *nb = realloc(b, cap * 2);
        if (!nb) {
          free(b);
          b = NULL;
          break;
        }
        b = nb;
        cap *= 2;
      }
    }
    fclose(f);
    if (!b) {
      printf("FAIL %s: out of memory\n", argv[i]);
      bad++;
      continue;
    }
    ocl_module *m;
    char err[1024];
    if (ocl_parse_module(b, n, &m, err, sizeof err) != 0) {
      printf("FAIL %s:%s\n", argv[i], err);
      bad++;
    } else {
      int ni = 0;
      for (int c = 0; c < m->n_comps; c++) ni += m->comps[c]->n_instrs;
      printf("ok   %s: %d computations, %d instructions, entry %s\n", argv[i], m->n_comps, ni, m->entry->name);
      good++;
      ocl_module_free(m);
    }
    free(b);
  }
  printf("%d of %d parsed\n", good, good + bad);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1) return parse_files(argc, argv);
  test_example();
  test_order_and_entry();
  test_called_computations();
  test_attributes();
  test_constants();
  test_shapes();
  test_decoders();
  test_malformed();
  test_misc();
  test_prefixes();
  test_long_input();
  printf("test_ocl_parse: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
