/* Unit tests for the TensorFlow importers. GraphDefs are encoded in the test with a
 * minimal protobuf writer and TF.js models are written as model.json + shards into a
 * temporary folder, so every expected value here is computed independently of the
 * importer: the wire format, every AttrValue kind, TensorProto's typed fields with
 * splats and raw content, placeholders as inputs, v1 loops, the function library and
 * its "node:out:index" naming, result inference, TF.js weights (raw, strings, uint8 /
 * uint16 / float16 quantization with TF.js's own arithmetic) across groups and
 * shards, and the errors each malformed file must give. Every truncation of a valid
 * file and a run of byte mutations must give an error or a graph, never a crash (the
 * ASan build checks for leaks too).
 *
 * With arguments the executable is a small tool for the real-model check
 * (tests/import/check_human_models.sh):
 *   test_tf_import --summary FILE...        import each file, print a summary line
 *   test_tf_import --weight-hashes FILE...  FNV-1a of each Const value, for comparing
 *                                           with TF.js's decodeWeights */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/half.h"
#include "check.h"
#include "graph/graph.h"
#include "hlo/literal.h"
#include "import/import.h"
#include "import/tf/pb_wire.h"
#include "import/tf/tf_import.h"

/* ---- a minimal protobuf writer ---- */

static strbuf sb(void) {
  strbuf b;
  strbuf_init(&b);
  return b;
}

static void pw_raw(strbuf *b, const void *p, size_t n) { strbuf_appendn(b, p, n); }

static void pw_varint(strbuf *b, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    if (v) c |= 0x80;
    pw_raw(b, &c, 1);
  } while (v);
}

static void pw_tag(strbuf *b, int field, int wire) { pw_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }
static void pw_int(strbuf *b, int field, int64_t v) {
  pw_tag(b, field, 0);
  pw_varint(b, (uint64_t)v);
}
static void pw_bytes(strbuf *b, int field, const void *d, size_t n) {
  pw_tag(b, field, 2);
  pw_varint(b, n);
  pw_raw(b, d, n);
}
static void pw_str(strbuf *b, int field, const char *s) { pw_bytes(b, field, s, strlen(s)); }
/* Appends sub as a length-delimited field and frees it. */
static void pw_msg(strbuf *b, int field, strbuf *sub) {
  pw_bytes(b, field, sub->data ? sub->data : "", sub->len);
  strbuf_free(sub);
}
static void pw_le(strbuf *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    pw_raw(b, &c, 1);
  }
}
static void pw_f32(strbuf *b, int field, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  pw_tag(b, field, 5);
  pw_le(b, u, 4);
}
static void pw_f64(strbuf *b, int field, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  pw_tag(b, field, 1);
  pw_le(b, u, 8);
}

/* TF messages. */
enum { DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 5, DT_INT8 = 6, DT_STRING = 7,
       DT_COMPLEX64 = 8, DT_INT64 = 9, DT_BOOL = 10, DT_QINT8 = 11, DT_BFLOAT16 = 14, DT_UINT16 = 17,
       DT_COMPLEX128 = 18, DT_HALF = 19, DT_RESOURCE = 20, DT_VARIANT = 21, DT_UINT32 = 22, DT_UINT64 = 23 };

static strbuf pb_shape(int rank, const int64_t *dims) {
  strbuf s = sb();
  if (rank < 0) {
    pw_int(&s, 3, 1);
    return s;
  }
  for (int i = 0; i < rank; i++) {
    strbuf d = sb();
    pw_int(&d, 1, dims[i]);
    pw_msg(&s, 2, &d);
  }
  return s;
}

static strbuf pb_tensor(int dtype, int rank, const int64_t *dims) {
  strbuf t = sb();
  pw_int(&t, 1, dtype);
  strbuf sh = pb_shape(rank, dims);
  pw_msg(&t, 2, &sh);
  return t;
}

/* AttrValue builders. */
static strbuf av_int(int64_t v) { strbuf a = sb(); pw_int(&a, 3, v); return a; }
static strbuf av_type(int t) { strbuf a = sb(); pw_int(&a, 6, t); return a; }
static strbuf av_str(const char *s) { strbuf a = sb(); pw_str(&a, 2, s); return a; }
static strbuf av_bool(bool b) { strbuf a = sb(); pw_int(&a, 5, b); return a; }
static strbuf av_float(float f) { strbuf a = sb(); pw_f32(&a, 4, f); return a; }
static strbuf av_shape(int rank, const int64_t *dims) {
  strbuf a = sb(), s = pb_shape(rank, dims);
  pw_msg(&a, 7, &s);
  return a;
}
static strbuf av_tensor(strbuf *t) {
  strbuf a = sb();
  pw_msg(&a, 8, t);
  return a;
}
static strbuf av_list(strbuf *l) {
  strbuf a = sb();
  pw_msg(&a, 1, l);
  return a;
}
static strbuf av_func(const char *name, const char *attr_key, strbuf *attr_value /* may be NULL */) {
  strbuf f = sb(), a = sb();
  pw_str(&f, 1, name);
  if (attr_value) {
    strbuf e = sb();
    pw_str(&e, 1, attr_key);
    pw_msg(&e, 2, attr_value);
    pw_msg(&f, 2, &e);
  }
  pw_msg(&a, 10, &f);
  return a;
}

static strbuf nodedef(const char *name, const char *op) {
  strbuf n = sb();
  pw_str(&n, 1, name);
  pw_str(&n, 2, op);
  return n;
}
static void nd_in(strbuf *n, const char *in) { pw_str(n, 3, in); }
static void nd_attr(strbuf *n, const char *key, strbuf av) {
  strbuf e = sb();
  pw_str(&e, 1, key);
  pw_msg(&e, 2, &av);
  pw_msg(n, 5, &e);
}
static void gd_add(strbuf *gd, strbuf *n) { pw_msg(gd, 1, n); }

static strbuf const_node(const char *name, strbuf *tensor, int dtype) {
  strbuf n = nodedef(name, "Const");
  nd_attr(&n, "value", av_tensor(tensor));
  nd_attr(&n, "dtype", av_type(dtype));
  return n;
}

static kiln_status import_gd(const strbuf *gd, graph **g) {
  return tf_import_graphdef_buffer(gd->data ? gd->data : "", gd->len, "t.pb", g);
}

/* The value tensor of a Const node of g. */
static const graph_tensor *const_value(const graph *g, const char *name) {
  graph_node *n = graph_find_node(g, name);
  const graph_tensor *t = NULL;
  if (!n) return NULL;
  kiln_status s = graph_node_get_tensor(n, "value", &t);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  return t;
}

/* ---- wire format ---- */

static void test_pb_wire(void) {
  /* 10-byte varints: the largest value and -1 as int32. */
  const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  const uint8_t *p = max;
  uint64_t v = 0;
  CHECK_OK(pb_read_varint(&p, max + sizeof max, &v));
  CHECK(v == UINT64_MAX && p == max + sizeof max);
  const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  p = over;
  CHECK_ERR(pb_read_varint(&p, over + sizeof over, &v), "overflows");
  const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  p = eleven;
  CHECK_ERR(pb_read_varint(&p, eleven + sizeof eleven, &v), "");
  p = max;
  CHECK_ERR(pb_read_varint(&p, max + 3, &v), "truncated");

  strbuf b = sb();
  pw_int(&b, 1, 150);
  pw_str(&b, 2, "hi");
  pw_f32(&b, 3, 1.5f);
  pw_f64(&b, 4, -2.25);
  pb_reader r = pb_reader_init(b.data, b.len);
  pb_field f;
  bool done;
  CHECK_OK(pb_next(&r, &f, &done));
  CHECK(!done && f.number == 1 && f.wire == PB_VARINT && f.bits == 150);
  CHECK_OK(pb_next(&r, &f, &done));
  CHECK(f.number == 2 && f.wire == PB_LEN && f.len == 2 && !memcmp(f.data, "hi", 2));
  CHECK_ERR(pb_expect_wire(&f, PB_VARINT, "Test"), "wire type 2");
  CHECK_OK(pb_next(&r, &f, &done));
  CHECK(f.number == 3 && pb_float(&f) == 1.5f);
  CHECK_OK(pb_next(&r, &f, &done));
  CHECK(f.number == 4 && pb_double(&f) == -2.25);
  CHECK_OK(pb_next(&r, &f, &done));
  CHECK(done);
  strbuf_free(&b);

  /* A length past the end, a group, field number 0, truncated fixed-width values. */
  const uint8_t longlen[] = {0x12, 0x05, 'a', 'b'};
  r = pb_reader_init(longlen, sizeof longlen);
  CHECK_ERR(pb_next(&r, &f, &done), "runs past the end");
  const uint8_t group[] = {0x0b};
  r = pb_reader_init(group, sizeof group);
  CHECK_ERR(pb_next(&r, &f, &done), "wire type 3");
  const uint8_t zero[] = {0x00, 0x01};
  r = pb_reader_init(zero, sizeof zero);
  CHECK_ERR(pb_next(&r, &f, &done), "field number 0");
  const uint8_t short32[] = {0x0d, 1, 2};
  r = pb_reader_init(short32, sizeof short32);
  CHECK_ERR(pb_next(&r, &f, &done), "truncated 32-bit");
  const uint8_t short64[] = {0x09, 1, 2, 3, 4, 5, 6, 7};
  r = pb_reader_init(short64, sizeof short64);
  CHECK_ERR(pb_next(&r, &f, &done), "truncated 64-bit");

  /* Nesting limit. */
  pb_reader deep = pb_reader_init(longlen, 0);
  deep.depth = PB_MAX_DEPTH;
  pb_field lf = {.number = 1, .wire = PB_LEN, .data = longlen, .len = 0};
  pb_reader sub;
  CHECK_ERR(pb_sub(&deep, &lf, &sub), "nest deeper");

  /* Packed fixed32 values must come in whole units. */
  pb_field packed = {.number = 5, .wire = PB_LEN, .data = longlen, .len = 3};
  CHECK_ERR(pb_packed_each(&packed, PB_I32, NULL, NULL), "not a multiple of 4");
}

/* ---- GraphDef: structure ---- */

static void test_graphdef_basic(void) {
  strbuf gd = sb();
  int64_t xdims[] = {-1, 3};
  strbuf n = nodedef("x", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_FLOAT));
  nd_attr(&n, "shape", av_shape(2, xdims));
  gd_add(&gd, &n);
  /* The consumer comes before the constant it uses: names resolve after all nodes. */
  n = nodedef("sum", "AddV2");
  nd_in(&n, "x");
  nd_in(&n, "c:0");
  nd_attr(&n, "T", av_type(DT_FLOAT));
  pw_str(&n, 4, "/device:CPU:0");
  gd_add(&gd, &n);
  int64_t cdims[] = {3};
  strbuf t = pb_tensor(DT_FLOAT, 1, cdims);
  float cv[] = {1.0f, 2.0f, 3.0f};
  pw_bytes(&t, 4, cv, sizeof cv);
  n = const_node("c", &t, DT_FLOAT);
  gd_add(&gd, &n);
  n = nodedef("out", "Identity");
  nd_in(&n, "sum");
  nd_in(&n, "^c");
  gd_add(&gd, &n);
  n = nodedef("side", "NoOp");
  nd_in(&n, "^out");
  gd_add(&gd, &n);
  strbuf versions = sb();
  pw_int(&versions, 1, 1234);
  pw_int(&versions, 2, 12);
  pw_msg(&gd, 4, &versions);

  graph *g = NULL;
  tf_import_info info;
  CHECK_OK(tf_import_graphdef_buffer_ex(gd.data, gd.len, "t.pb", &g, &info));
  strbuf_free(&gd);
  if (!g) return;
  CHECK(!strcmp(g->framework, "tf"));
  CHECK(info.producer == 1234 && info.min_consumer == 12 && info.results_inferred);
  CHECK(g->n_nodes == 5 && g->n_inputs == 1);
  graph_node *x = g->inputs[0];
  CHECK(!strcmp(x->name, "x") && x->is_input && !strcmp(x->op, GRAPH_OP_INPUT));
  CHECK(x->outputs[0].dtype == GRAPH_DT_FLOAT && x->outputs[0].shape.rank == 2);
  CHECK(x->outputs[0].shape.dims[0] == GRAPH_UNKNOWN && x->outputs[0].shape.dims[1] == 3);
  graph_node *sum = graph_find_node(g, "sum");
  CHECK(sum && !strcmp(sum->op, "tf.AddV2") && sum->n_inputs == 2);
  CHECK(sum->inputs[0].node == x && sum->inputs[1].node == graph_find_node(g, "c") && sum->inputs[1].port == 0);
  CHECK(sum->requested_device && !strcmp(sum->requested_device, "/device:CPU:0"));
  graph_dtype T = GRAPH_DT_INVALID;
  CHECK_OK(graph_node_get_type(sum, "T", &T));
  CHECK(T == GRAPH_DT_FLOAT);
  graph_node *c = graph_find_node(g, "c");
  const graph_tensor *cval = const_value(g, "c");
  CHECK(cval && cval->dtype == GRAPH_DT_FLOAT && cval->rank == 1 && cval->dims[0] == 3);
  CHECK(cval && ((float *)cval->data)[2] == 3.0f);
  CHECK(c->outputs[0].dtype == GRAPH_DT_FLOAT && c->outputs[0].shape.rank == 1 && c->outputs[0].shape.dims[0] == 3);
  graph_node *out = graph_find_node(g, "out");
  CHECK(out->n_control == 1 && out->control_inputs[0] == c);
  /* The NoOp is never a result, and its control edge does not hide "out". */
  CHECK(g->n_results == 1 && g->results[0].node == out && !strcmp(g->results[0].name, "out"));
  CHECK_OK(graph_validate(g));
  /* The caller names the results. */
  const char *names[] = {"out", "sum:0"};
  CHECK_OK(tf_import_set_results(g, 2, names));
  CHECK(g->n_results == 2 && g->results[0].node == out && g->results[1].node == sum);
  const char *bad[] = {"nope"};
  CHECK_ERR(tf_import_set_results(g, 1, bad), "no node named 'nope'");
  const char *dup[] = {"out", "out"};
  CHECK_ERR(tf_import_set_results(g, 2, dup), "named twice");
  const char *badport[] = {"x:1"};
  CHECK_ERR(tf_import_set_results(g, 1, badport), "only output 0");
  CHECK(g->n_results == 2);
  graph_free(g);
}

static void test_result_inference(void) {
  strbuf gd = sb();
  strbuf n = nodedef("in", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_INT32));
  gd_add(&gd, &n);
  n = nodedef("a", "Neg");
  nd_in(&n, "in");
  gd_add(&gd, &n);
  n = nodedef("b", "Abs");
  nd_in(&n, "in");
  nd_in(&n, "^dep");
  gd_add(&gd, &n);
  n = nodedef("dep", "Sign"); /* only an ordering dependency of b: not an output */
  nd_in(&n, "in");
  gd_add(&gd, &n);
  n = nodedef("grouped", "Square"); /* grouped by a NoOp: still an output */
  nd_in(&n, "in");
  gd_add(&gd, &n);
  n = nodedef("group", "NoOp");
  nd_in(&n, "^grouped");
  nd_in(&n, "^b");
  gd_add(&gd, &n);
  strbuf t = pb_tensor(DT_INT32, 0, NULL);
  n = const_node("unused_const", &t, DT_INT32);
  gd_add(&gd, &n);
  n = nodedef("check", "Assert");
  nd_in(&n, "a");
  gd_add(&gd, &n);
  n = nodedef("unused_in", "Placeholder");
  gd_add(&gd, &n);
  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  strbuf_free(&gd);
  if (!g) return;
  /* b and grouped are the outputs: the Assert, NoOp, Const and Placeholder are not. */
  CHECK(g->n_results == 2 && !strcmp(g->results[0].name, "b") && g->results[0].port == 0);
  CHECK(g->n_results == 2 && !strcmp(g->results[1].name, "grouped"));
  graph_node *u = graph_find_node(g, "unused_in");
  CHECK(u && u->is_input && u->outputs[0].dtype == GRAPH_DT_INVALID && u->outputs[0].shape.rank == GRAPH_UNKNOWN);
  CHECK(g->n_inputs == 2);
  graph_free(g);
}

/* ---- GraphDef: attributes ---- */

/* TF's lowered control flow: an Identity that a NoOp waits on through a control edge,
 * and that NoOp puts constants into a loop frame or branch (while/loop_body_control,
 * cond/pivot_t). Such helpers exist for control only and are never outputs. */
static void test_control_only_helpers_are_not_outputs(void) {
  strbuf gd = sb();
  strbuf n = nodedef("in", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_BOOL));
  gd_add(&gd, &n);
  n = nodedef("switch", "Switch");
  nd_in(&n, "in");
  nd_in(&n, "in");
  gd_add(&gd, &n);
  n = nodedef("pivot_t", "Identity");
  nd_in(&n, "switch:1");
  gd_add(&gd, &n);
  n = nodedef("input_control_node", "NoOp");
  nd_in(&n, "^pivot_t");
  gd_add(&gd, &n);
  strbuf t = pb_tensor(DT_INT32, 0, NULL);
  n = const_node("branch_const", &t, DT_INT32);
  nd_in(&n, "^input_control_node");
  gd_add(&gd, &n);
  n = nodedef("out", "Identity");
  nd_in(&n, "branch_const");
  gd_add(&gd, &n);
  n = nodedef("final", "Neg"); /* grouped by a NoOp nothing waits on: an output */
  nd_in(&n, "branch_const");
  gd_add(&gd, &n);
  n = nodedef("group", "NoOp");
  nd_in(&n, "^final");
  gd_add(&gd, &n);
  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  strbuf_free(&gd);
  if (!g) return;
  CHECK(g->n_results == 2 && !strcmp(g->results[0].name, "out") && !strcmp(g->results[1].name, "final"));
  graph_free(g);
}

/* in -> a (Neg) -> b (Abs) -> c (Square); d (Sign) reads a. */
static graph *select_io_graph(void) {
  strbuf gd = sb();
  strbuf n = nodedef("in", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_FLOAT));
  gd_add(&gd, &n);
  const char *chain[][3] = {{"a", "Neg", "in"}, {"b", "Abs", "a"}, {"c", "Square", "b"}, {"d", "Sign", "a"}};
  for (int i = 0; i < 4; i++) {
    n = nodedef(chain[i][0], chain[i][1]);
    nd_in(&n, chain[i][2]);
    nd_attr(&n, "T", av_type(DT_FLOAT));
    gd_add(&gd, &n);
  }
  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  strbuf_free(&gd);
  return g;
}

static void test_select_io_names_outputs_and_prunes(void) {
  graph *g = select_io_graph();
  if (!g) return;
  CHECK(g->n_results == 2); /* c and d, inferred */
  const char *outs[] = {"b:0", "d"};
  CHECK_OK(import_select_io(g, 0, NULL, 2, outs));
  CHECK(g->n_results == 2 && g->results[0].node == graph_find_node(g, "b") && !strcmp(g->results[0].name, "b:0"));
  CHECK(g->results[1].node == graph_find_node(g, "d"));
  CHECK(!graph_find_node(g, "c")); /* nothing needs it now */
  graph_free(g);
}

static void test_select_io_refuses_unknown_and_repeated_names(void) {
  graph *g = select_io_graph();
  if (!g) return;
  const char *bad[] = {"nope:0"};
  CHECK_ERR(import_select_io(g, 0, NULL, 1, bad), "output 'nope:0' names no tensor");
  CHECK_ERR(import_select_io(g, 1, bad, 0, NULL), "input 'nope:0' names no tensor");
  const char *port[] = {"a:3"};
  CHECK_ERR(import_select_io(g, 0, NULL, 1, port), "node 'a' has 1 output");
  const char *twice[] = {"c", "c:0"};
  CHECK_ERR(import_select_io(g, 0, NULL, 2, twice), "named twice");
  CHECK(g->n_results == 2 && graph_find_node(g, "c")); /* unchanged */
  graph_free(g);
}

/* Naming an internal tensor as an input feeds it, as TF's feed does: a new graph input
 * "a:0" takes over a's consumers, and what only computed a goes. */
static void test_select_io_feeds_an_internal_tensor(void) {
  graph *g = select_io_graph();
  if (!g) return;
  const char *ins[] = {"a"}, *outs[] = {"c"};
  CHECK_OK(import_select_io(g, 1, ins, 1, outs));
  graph_node *feed = graph_find_node(g, "a:0");
  CHECK(feed && feed->is_input && g->inputs[0] == feed);
  CHECK(feed && feed->outputs[0].dtype == GRAPH_DT_FLOAT);
  CHECK(graph_find_node(g, "b")->inputs[0].node == feed);
  CHECK(!graph_find_node(g, "a") && !graph_find_node(g, "d"));
  CHECK(g->n_inputs == 2 && g->inputs[1] == graph_find_node(g, "in")); /* kept: the signature */
  CHECK_OK(graph_validate(g));
  graph_free(g);
}

/* A feed is a root-frame value: a tensor inside a while loop cannot be fed (its
 * consumers run once per iteration), while the loop's Exit, back in the root, can. */
static void test_select_io_refuses_feeding_inside_a_loop(void) {
  static const char text[] =
      "framework tf\n"
      "input x: int32[]\n"
      "limit = Const[dtype=int32, value=tensor<int32[]>{3}]()\n"
      "w/Enter = Enter[T=int32, frame_name=\"w\", is_constant=false](x)\n"
      "w/Limit = Enter[T=int32, frame_name=\"w\", is_constant=true](limit)\n"
      "w/Merge = Merge[N=2, T=int32](w/Enter, w/Next) -> (int32[], int32[])\n"
      "w/Less = Less[T=int32](w/Merge, w/Limit)\n"
      "w/LoopCond = LoopCond(w/Less) -> (bool[])\n"
      "w/Switch = Switch[T=int32](w/Merge, w/LoopCond) -> (int32[], int32[])\n"
      "w/Body = Identity[T=int32](w/Switch:1)\n"
      "w/Add = AddV2[T=int32](w/Body, w/Limit)\n"
      "w/Next = NextIteration[T=int32](w/Add)\n"
      "w/Exit = Exit[T=int32](w/Switch)\n"
      "out = Neg[T=int32](w/Exit)\n"
      "output out = out:0\n";
  graph *g = NULL;
  CHECK_OK(graph_parse(text, strlen(text), "loop.graph", &g));
  if (!g) return;
  const char *inside[] = {"w/Add"};
  CHECK_ERR(import_select_io(g, 1, inside, 0, NULL), "inside while loop frame 'w'");
  const char *exit_[] = {"w/Exit"};
  CHECK_OK(import_select_io(g, 1, exit_, 0, NULL));
  CHECK(g->inputs[0] == graph_find_node(g, "w/Exit:0") && !graph_find_node(g, "w/Merge"));
  graph_free(g);
}

static void test_attr_kinds(void) {
  strbuf gd = sb();
  /* A library function for func attributes. */
  strbuf lib = sb(), fd = sb(), sig = sb(), arg = sb();
  pw_str(&sig, 1, "fn");
  pw_str(&arg, 1, "a");
  pw_int(&arg, 3, DT_FLOAT);
  pw_msg(&sig, 2, &arg);
  arg = sb();
  pw_str(&arg, 1, "r");
  pw_int(&arg, 3, DT_FLOAT);
  pw_msg(&sig, 3, &arg);
  pw_msg(&fd, 1, &sig);
  strbuf ret = sb();
  pw_str(&ret, 1, "r");
  pw_str(&ret, 2, "a");
  pw_msg(&fd, 4, &ret);
  pw_msg(&lib, 1, &fd);
  pw_msg(&gd, 2, &lib);

  strbuf n = nodedef("k", "Custom");
  nd_attr(&n, "s", av_str("hello"));
  strbuf nul = sb();
  pw_bytes(&nul, 2, "a\0b", 3);
  nd_attr(&n, "s_nul", nul);
  nd_attr(&n, "i", av_int(-5));
  nd_attr(&n, "f", av_float(0.25f));
  nd_attr(&n, "b", av_bool(true));
  nd_attr(&n, "type", av_type(DT_BFLOAT16));
  nd_attr(&n, "type_ref", av_type(DT_INT32 + 100));
  nd_attr(&n, "type_q", av_type(DT_QINT8));
  int64_t dims[] = {2, -1};
  nd_attr(&n, "shape", av_shape(2, dims));
  nd_attr(&n, "shape_unknown", av_shape(-1, NULL));
  strbuf t = pb_tensor(DT_INT64, 1, (int64_t[]){2});
  pw_int(&t, 10, -7);
  pw_int(&t, 10, 1LL << 40);
  nd_attr(&n, "tensor", av_tensor(&t));
  strbuf fattr = av_int(4);
  nd_attr(&n, "func", av_func("fn", "N", &fattr));
  strbuf ph = sb();
  pw_str(&ph, 9, "T");
  nd_attr(&n, "ph", ph);
  /* Lists: packed ints, unpacked ints, floats, bools, types, strings, shapes, tensors,
   * funcs, an empty list. */
  strbuf l = sb(), packed = sb();
  pw_varint(&packed, 1);
  pw_varint(&packed, (uint64_t)-2);
  pw_varint(&packed, 300);
  pw_msg(&l, 3, &packed);
  nd_attr(&n, "li", av_list(&l));
  l = sb();
  pw_int(&l, 3, 7);
  pw_int(&l, 3, 8);
  nd_attr(&n, "li_unpacked", av_list(&l));
  l = sb();
  packed = sb();
  pw_le(&packed, 0x3f800000u, 4);
  pw_le(&packed, 0xc0000000u, 4);
  pw_msg(&l, 4, &packed);
  nd_attr(&n, "lf", av_list(&l));
  l = sb();
  pw_int(&l, 5, 1);
  pw_int(&l, 5, 0);
  nd_attr(&n, "lb", av_list(&l));
  l = sb();
  pw_int(&l, 6, DT_HALF);
  pw_int(&l, 6, DT_STRING);
  nd_attr(&n, "ltype", av_list(&l));
  l = sb();
  pw_str(&l, 2, "x");
  pw_str(&l, 2, "");
  nd_attr(&n, "ls", av_list(&l));
  l = sb();
  strbuf s1 = pb_shape(1, (int64_t[]){5}), s2 = pb_shape(-1, NULL);
  pw_msg(&l, 7, &s1);
  pw_msg(&l, 7, &s2);
  nd_attr(&n, "lshape", av_list(&l));
  l = sb();
  strbuf t1 = pb_tensor(DT_BOOL, 0, NULL);
  pw_int(&t1, 11, 1);
  pw_msg(&l, 8, &t1);
  nd_attr(&n, "ltensor", av_list(&l));
  l = sb();
  strbuf f1 = sb();
  pw_str(&f1, 1, "fn");
  pw_msg(&l, 9, &f1);
  nd_attr(&n, "lfunc", av_list(&l));
  l = sb();
  nd_attr(&n, "lempty", av_list(&l));
  /* An AttrValue with nothing set is dropped; a repeated oneof keeps the last. */
  nd_attr(&n, "nothing", sb());
  strbuf twice = sb();
  pw_int(&twice, 3, 1);
  pw_int(&twice, 5, 1);
  nd_attr(&n, "twice", twice);
  gd_add(&gd, &n);

  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  strbuf_free(&gd);
  if (!g) return;
  graph_node *k = graph_find_node(g, "k");
  const graph_attr_value *v;
  const graph_bytes *s;
  CHECK_OK(graph_node_get_string(k, "s", &s));
  CHECK(s->len == 5 && !memcmp(s->data, "hello", 5));
  CHECK_OK(graph_node_get_string(k, "s_nul", &s));
  CHECK(s->len == 3 && !memcmp(s->data, "a\0b", 3));
  int64_t i = 0;
  CHECK_OK(graph_node_get_int(k, "i", &i));
  CHECK(i == -5);
  float f = 0;
  CHECK_OK(graph_node_get_float(k, "f", &f));
  CHECK(f == 0.25f);
  bool b = false;
  CHECK_OK(graph_node_get_bool(k, "b", &b));
  CHECK(b);
  graph_dtype ty = GRAPH_DT_INVALID;
  CHECK_OK(graph_node_get_type(k, "type", &ty));
  CHECK(ty == GRAPH_DT_BFLOAT16);
  CHECK_OK(graph_node_get_type(k, "type_ref", &ty));
  CHECK(ty == GRAPH_DT_INT32);
  CHECK_OK(graph_node_get_type(k, "type_q", &ty));
  CHECK(ty == GRAPH_DT_INVALID); /* kept, as "unknown" */
  graph_shape sh;
  CHECK_OK(graph_node_get_shape(k, "shape", &sh));
  CHECK(sh.rank == 2 && sh.dims[0] == 2 && sh.dims[1] == GRAPH_UNKNOWN);
  CHECK_OK(graph_node_get_shape(k, "shape_unknown", &sh));
  CHECK(sh.rank == GRAPH_UNKNOWN);
  const graph_tensor *tv;
  CHECK_OK(graph_node_get_tensor(k, "tensor", &tv));
  CHECK(tv->dtype == GRAPH_DT_INT64 && tv->n == 2 && ((int64_t *)tv->data)[0] == -7 &&
        ((int64_t *)tv->data)[1] == (1LL << 40));
  v = graph_node_attr(k, "func");
  CHECK(v && v->kind == GRAPH_ATTR_FUNC && v->func.body == graph_find_function(g, "fn") && v->func.n_attrs == 1);
  CHECK(v && v->func.n_attrs == 1 && !strcmp(v->func.attrs[0].name, "N") && v->func.attrs[0].value.i == 4);
  CHECK_OK(graph_node_get_string(k, "ph", &s));
  CHECK(!strcmp(s->data, "$T"));
  int64_t ints[8];
  int cnt = 0;
  CHECK_OK(graph_node_get_ints(k, "li", ints, 8, &cnt));
  CHECK(cnt == 3 && ints[0] == 1 && ints[1] == -2 && ints[2] == 300);
  CHECK_OK(graph_node_get_ints(k, "li_unpacked", ints, 8, &cnt));
  CHECK(cnt == 2 && ints[0] == 7 && ints[1] == 8);
  v = graph_node_attr(k, "lf");
  CHECK(v && v->list.n == 2 && v->list.elem == GRAPH_ATTR_FLOAT && v->list.items[0].f == 1.0f &&
        v->list.items[1].f == -2.0f);
  v = graph_node_attr(k, "lb");
  CHECK(v && v->list.n == 2 && v->list.elem == GRAPH_ATTR_BOOL && v->list.items[0].b && !v->list.items[1].b);
  v = graph_node_attr(k, "ltype");
  CHECK(v && v->list.n == 2 && v->list.items[0].type == GRAPH_DT_HALF && v->list.items[1].type == GRAPH_DT_STRING);
  v = graph_node_attr(k, "ls");
  CHECK(v && v->list.n == 2 && v->list.elem == GRAPH_ATTR_STRING && !strcmp(v->list.items[0].s.data, "x") &&
        v->list.items[1].s.len == 0);
  v = graph_node_attr(k, "lshape");
  CHECK(v && v->list.n == 2 && v->list.items[0].shape->rank == 1 && v->list.items[0].shape->dims[0] == 5 &&
        v->list.items[1].shape->rank == GRAPH_UNKNOWN);
  v = graph_node_attr(k, "ltensor");
  CHECK(v && v->list.n == 1 && v->list.items[0].tensor->dtype == GRAPH_DT_BOOL &&
        ((uint8_t *)v->list.items[0].tensor->data)[0] == 1);
  v = graph_node_attr(k, "lfunc");
  CHECK(v && v->list.n == 1 && v->list.elem == GRAPH_ATTR_FUNC &&
        v->list.items[0].func.body == graph_find_function(g, "fn"));
  v = graph_node_attr(k, "lempty");
  CHECK(v && v->kind == GRAPH_ATTR_LIST && v->list.n == 0);
  CHECK(graph_node_attr(k, "nothing") == NULL);
  CHECK_OK(graph_node_get_bool(k, "twice", &b));
  /* The whole graph prints and reads back. */
  char *text = graph_to_string(g);
  graph *back = NULL;
  CHECK_OK(graph_parse(text, strlen(text), "printed", &back));
  graph_free(back);
  free(text);
  graph_free(g);
}

/* ---- GraphDef: tensors ---- */

/* One Const node "c" holding tensor t; returns the imported graph (or NULL). */
static graph *import_const(strbuf *t, int dtype, kiln_status *err) {
  strbuf gd = sb();
  strbuf n = const_node("c", t, dtype);
  gd_add(&gd, &n);
  graph *g = NULL;
  *err = import_gd(&gd, &g);
  strbuf_free(&gd);
  return g;
}

static const graph_tensor *expect_const(graph **keep, strbuf *t, int dtype) {
  kiln_status s;
  *keep = import_const(t, dtype, &s);
  CHECK_OK(s);
  return *keep ? const_value(*keep, "c") : NULL;
}

static void test_tensor_values(void) {
  graph *g;
  const graph_tensor *x;
  int64_t four[] = {4}, two_two[] = {2, 2};

  /* float_val with a splat of the last value; packed. */
  strbuf t = pb_tensor(DT_FLOAT, 1, four);
  strbuf packed = sb();
  pw_le(&packed, 0x3f800000u, 4); /* 1 */
  pw_le(&packed, 0x40000000u, 4); /* 2 */
  pw_msg(&t, 5, &packed);
  x = expect_const(&g, &t, DT_FLOAT);
  CHECK(x && x->n == 4 && ((float *)x->data)[0] == 1 && ((float *)x->data)[1] == 2 && ((float *)x->data)[3] == 2);
  graph_free(g);

  /* Unpacked float_val records count too. */
  t = pb_tensor(DT_FLOAT, 1, (int64_t[]){2});
  pw_f32(&t, 5, 0.5f);
  pw_f32(&t, 5, -0.5f);
  x = expect_const(&g, &t, DT_FLOAT);
  CHECK(x && ((float *)x->data)[0] == 0.5f && ((float *)x->data)[1] == -0.5f);
  graph_free(g);

  /* No values: zeros. */
  t = pb_tensor(DT_DOUBLE, 2, two_two);
  x = expect_const(&g, &t, DT_DOUBLE);
  CHECK(x && x->n == 4 && ((double *)x->data)[3] == 0.0);
  graph_free(g);

  /* double_val. */
  t = pb_tensor(DT_DOUBLE, 0, NULL);
  pw_f64(&t, 6, 1e300);
  x = expect_const(&g, &t, DT_DOUBLE);
  CHECK(x && x->rank == 0 && ((double *)x->data)[0] == 1e300);
  graph_free(g);

  /* int_val feeds int32, int16, int8, uint8, uint16 (truncating, as TF casts). */
  struct {
    int dtype;
    int64_t v;
    int64_t want;
  } ints[] = {{DT_INT32, -123456, -123456}, {DT_INT16, -2, -2}, {DT_INT8, -128, -128},
              {DT_UINT8, 255, 255},         {DT_UINT16, 65535, 65535}, {DT_INT8, 300, 44}};
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    t = pb_tensor(ints[k].dtype, 1, (int64_t[]){3});
    pw_int(&t, 7, ints[k].v);
    x = expect_const(&g, &t, ints[k].dtype);
    CHECK(x && tensor_get_s64(x, 0) == ints[k].want && tensor_get_s64(x, 2) == ints[k].want);
    graph_free(g);
  }

  /* int64_val, uint32_val, uint64_val. */
  t = pb_tensor(DT_INT64, 1, (int64_t[]){2});
  pw_int(&t, 10, INT64_MIN);
  x = expect_const(&g, &t, DT_INT64);
  CHECK(x && ((int64_t *)x->data)[1] == INT64_MIN);
  graph_free(g);
  t = pb_tensor(DT_UINT32, 1, (int64_t[]){1});
  pw_int(&t, 16, 4000000000LL);
  x = expect_const(&g, &t, DT_UINT32);
  CHECK(x && ((uint32_t *)x->data)[0] == 4000000000u);
  graph_free(g);
  t = pb_tensor(DT_UINT64, 1, (int64_t[]){1});
  pw_int(&t, 17, (int64_t)UINT64_MAX);
  x = expect_const(&g, &t, DT_UINT64);
  CHECK(x && ((uint64_t *)x->data)[0] == UINT64_MAX);
  graph_free(g);

  /* bool_val; half_val for half and bfloat16 (bits in int32s). */
  t = pb_tensor(DT_BOOL, 1, (int64_t[]){3});
  pw_int(&t, 11, 0);
  pw_int(&t, 11, 1);
  x = expect_const(&g, &t, DT_BOOL);
  CHECK(x && ((uint8_t *)x->data)[0] == 0 && ((uint8_t *)x->data)[1] == 1 && ((uint8_t *)x->data)[2] == 1);
  graph_free(g);
  t = pb_tensor(DT_HALF, 1, (int64_t[]){2});
  pw_int(&t, 13, 0x3c00);
  pw_int(&t, 13, 0xc000);
  x = expect_const(&g, &t, DT_HALF);
  CHECK(x && tensor_get_f64(x, 0) == 1.0 && tensor_get_f64(x, 1) == -2.0);
  graph_free(g);
  t = pb_tensor(DT_BFLOAT16, 0, NULL);
  pw_int(&t, 13, 0x4049); /* 3.140625 */
  x = expect_const(&g, &t, DT_BFLOAT16);
  CHECK(x && tensor_get_f64(x, 0) == 3.140625);
  graph_free(g);

  /* Complex: (re, im) pairs, splat by pairs. */
  t = pb_tensor(DT_COMPLEX64, 1, (int64_t[]){2});
  pw_f32(&t, 9, 1.0f);
  pw_f32(&t, 9, -1.0f);
  x = expect_const(&g, &t, DT_COMPLEX64);
  CHECK(x && ((float *)x->data)[0] == 1 && ((float *)x->data)[1] == -1 && ((float *)x->data)[2] == 1 &&
        ((float *)x->data)[3] == -1);
  graph_free(g);
  t = pb_tensor(DT_COMPLEX128, 0, NULL);
  pw_f64(&t, 12, 2.0);
  pw_f64(&t, 12, 3.0);
  x = expect_const(&g, &t, DT_COMPLEX128);
  CHECK(x && ((double *)x->data)[0] == 2 && ((double *)x->data)[1] == 3);
  graph_free(g);

  /* Strings: string_val with a splat; tensor_content's varint-lengths encoding. */
  t = pb_tensor(DT_STRING, 1, (int64_t[]){3});
  pw_str(&t, 8, "ab");
  pw_bytes(&t, 8, "c\0d", 3);
  x = expect_const(&g, &t, DT_STRING);
  CHECK(x && !strcmp(tensor_string(x, 0)->data, "ab") && tensor_string(x, 2)->len == 3 &&
        !memcmp(tensor_string(x, 2)->data, "c\0d", 3));
  graph_free(g);
  t = pb_tensor(DT_STRING, 1, (int64_t[]){2});
  pw_bytes(&t, 4, "\x01\x03" "xyzw", 6);
  x = expect_const(&g, &t, DT_STRING);
  CHECK(x && !strcmp(tensor_string(x, 0)->data, "x") && !strcmp(tensor_string(x, 1)->data, "yzw"));
  graph_free(g);

  /* tensor_content: raw little-endian; it wins over typed fields. */
  t = pb_tensor(DT_INT32, 2, two_two);
  uint8_t raw[16];
  for (int k = 0; k < 4; k++) {
    uint32_t u = (uint32_t)(k * 1000 - 1);
    for (int j = 0; j < 4; j++) raw[4 * k + j] = (uint8_t)(u >> (8 * j));
  }
  pw_bytes(&t, 4, raw, sizeof raw);
  pw_int(&t, 7, 42);
  x = expect_const(&g, &t, DT_INT32);
  CHECK(x && ((int32_t *)x->data)[0] == -1 && ((int32_t *)x->data)[3] == 2999);
  graph_free(g);

  /* Resource and variant constants: shaped tensors of null handles. */
  t = pb_tensor(DT_VARIANT, 1, (int64_t[]){2});
  strbuf gd = sb();
  strbuf n = const_node("c", &t, DT_VARIANT);
  gd_add(&gd, &n);
  tf_import_info info;
  g = NULL;
  CHECK_OK(tf_import_graphdef_buffer_ex(gd.data, gd.len, "t.pb", &g, &info));
  strbuf_free(&gd);
  x = g ? const_value(g, "c") : NULL;
  CHECK(x && x->dtype == GRAPH_DT_VARIANT && x->n == 2 && info.n_unmaterialised == 1);
  graph_free(g);

  /* Errors. */
  kiln_status s;
  t = pb_tensor(DT_FLOAT, 1, (int64_t[]){1});
  pw_f32(&t, 5, 1);
  pw_f32(&t, 5, 2);
  g = import_const(&t, DT_FLOAT, &s);
  CHECK_ERR(s, "2 values for 1 elements");
  CHECK(!g);
  t = pb_tensor(DT_FLOAT, 1, (int64_t[]){2});
  pw_bytes(&t, 4, "abc", 3);
  g = import_const(&t, DT_FLOAT, &s);
  CHECK_ERR(s, "tensor_content has 3 bytes");
  t = pb_tensor(DT_QINT8, 0, NULL);
  g = import_const(&t, DT_QINT8, &s);
  CHECK_ERR(s, "DT_QINT8 is not supported");
  t = pb_tensor(0, 0, NULL);
  g = import_const(&t, 0, &s);
  CHECK_ERR(s, "no dtype");
  t = pb_tensor(DT_FLOAT, -1, NULL);
  g = import_const(&t, DT_FLOAT, &s);
  CHECK_ERR(s, "unknown rank");
  t = pb_tensor(DT_FLOAT, 1, (int64_t[]){-1});
  g = import_const(&t, DT_FLOAT, &s);
  CHECK_ERR(s, "dimension 0");
  t = pb_tensor(DT_STRING, 1, (int64_t[]){2});
  pw_bytes(&t, 4, "\x01\x05" "ab", 4);
  g = import_const(&t, DT_STRING, &s);
  CHECK_ERR(s, "lengths add up to 6");
  t = pb_tensor(DT_COMPLEX64, 0, NULL);
  pw_f32(&t, 9, 1);
  g = import_const(&t, DT_COMPLEX64, &s);
  CHECK_ERR(s, "pairs");
  int64_t seventeen[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  t = pb_tensor(DT_FLOAT, 17, seventeen);
  g = import_const(&t, DT_FLOAT, &s);
  CHECK_ERR(s, "more than 16 dimensions");
  /* A splat the size limit refuses. */
  int64_t saved = literal_max_bytes;
  literal_max_bytes = 1 << 20;
  t = pb_tensor(DT_FLOAT, 2, (int64_t[]){1 << 20, 1 << 20});
  pw_f32(&t, 5, 1);
  g = import_const(&t, DT_FLOAT, &s);
  CHECK(s && kiln_status_code(s) == KILN_RESOURCE_EXHAUSTED);
  kiln_status_free(s);
  literal_max_bytes = saved;
}

/* ---- GraphDef: control flow ---- */

static void test_while_loop(void) {
  /* i = 0; while (i < 10) i = i + 1; the v1 form with a TensorArray beside it. */
  strbuf gd = sb();
  strbuf t = pb_tensor(DT_INT32, 0, NULL);
  strbuf n = const_node("zero", &t, DT_INT32);
  gd_add(&gd, &n);
  t = pb_tensor(DT_INT32, 0, NULL);
  pw_int(&t, 7, 10);
  n = const_node("ten", &t, DT_INT32);
  gd_add(&gd, &n);
  t = pb_tensor(DT_INT32, 0, NULL);
  pw_int(&t, 7, 1);
  n = const_node("one", &t, DT_INT32);
  gd_add(&gd, &n);
  n = nodedef("enter", "Enter");
  nd_in(&n, "zero");
  nd_attr(&n, "frame_name", av_str("loop"));
  nd_attr(&n, "is_constant", av_bool(false));
  nd_attr(&n, "parallel_iterations", av_int(10));
  gd_add(&gd, &n);
  n = nodedef("merge", "Merge");
  nd_in(&n, "enter");
  nd_in(&n, "next");
  nd_attr(&n, "N", av_int(2));
  gd_add(&gd, &n);
  n = nodedef("limit", "Enter");
  nd_in(&n, "ten");
  nd_attr(&n, "frame_name", av_str("loop"));
  nd_attr(&n, "is_constant", av_bool(true));
  gd_add(&gd, &n);
  n = nodedef("less", "Less");
  nd_in(&n, "merge");
  nd_in(&n, "limit");
  gd_add(&gd, &n);
  n = nodedef("cond", "LoopCond");
  nd_in(&n, "less");
  gd_add(&gd, &n);
  n = nodedef("switch", "Switch");
  nd_in(&n, "merge");
  nd_in(&n, "cond");
  gd_add(&gd, &n);
  n = nodedef("body", "Identity");
  nd_in(&n, "switch:1");
  gd_add(&gd, &n);
  n = nodedef("step", "Enter");
  nd_in(&n, "one");
  nd_attr(&n, "frame_name", av_str("loop"));
  nd_attr(&n, "is_constant", av_bool(true));
  gd_add(&gd, &n);
  n = nodedef("add", "AddV2");
  nd_in(&n, "body");
  nd_in(&n, "step");
  gd_add(&gd, &n);
  n = nodedef("next", "NextIteration");
  nd_in(&n, "add");
  gd_add(&gd, &n);
  n = nodedef("exit", "Exit");
  nd_in(&n, "switch");
  gd_add(&gd, &n);
  n = nodedef("ta", "TensorArrayV3");
  nd_in(&n, "ten");
  nd_attr(&n, "dtype", av_type(DT_FLOAT));
  gd_add(&gd, &n);
  n = nodedef("ta_size", "TensorArraySizeV3");
  nd_in(&n, "ta");
  nd_in(&n, "ta:1");
  gd_add(&gd, &n);
  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  strbuf_free(&gd);
  if (!g) return;
  graph_node **order = NULL;
  int count = 0;
  CHECK_OK(graph_topo_order(g, &order, &count));
  CHECK(count == g->n_nodes);
  free(order);
  graph_node *sw = graph_find_node(g, "switch"), *merge = graph_find_node(g, "merge");
  CHECK(sw->n_outputs == 2 && merge->n_outputs == 2); /* full output counts */
  CHECK(graph_find_node(g, "body")->inputs[0].node == sw && graph_find_node(g, "body")->inputs[0].port == 1);
  CHECK(merge->inputs[1].node == graph_find_node(g, "next"));
  graph_node *enter = graph_find_node(g, "enter");
  const graph_bytes *frame;
  CHECK_OK(graph_node_get_string(enter, "frame_name", &frame));
  CHECK(!strcmp(frame->data, "loop") && graph_node_attr_int_or(enter, "parallel_iterations", 0) == 10);
  graph_node *ta_size = graph_find_node(g, "ta_size");
  CHECK(ta_size->inputs[1].port == 1 && graph_find_node(g, "ta")->n_outputs == 2);
  /* Results: exit and ta_size are the sinks. */
  CHECK(g->n_results == 2 && !strcmp(g->results[0].name, "exit") && !strcmp(g->results[1].name, "ta_size"));
  graph_free(g);
}

/* ---- GraphDef: functions ---- */

static strbuf argdef(const char *name, int type) {
  strbuf a = sb();
  pw_str(&a, 1, name);
  if (type) pw_int(&a, 3, type);
  return a;
}

static void add_ret(strbuf *fd, const char *k, const char *v) {
  strbuf e = sb();
  pw_str(&e, 1, k);
  pw_str(&e, 2, v);
  pw_msg(fd, 4, &e);
}

static void test_functions(void) {
  strbuf gd = sb(), lib = sb();
  /* pick(x, p) = (Switch(x, p):output_true:0 + one, TopKV2(x):indices:0) */
  strbuf fd = sb(), sig = sb(), a;
  pw_str(&sig, 1, "pick");
  a = argdef("x", DT_FLOAT);
  pw_msg(&sig, 2, &a);
  a = argdef("p", DT_BOOL);
  pw_msg(&sig, 2, &a);
  a = argdef("y", DT_FLOAT);
  pw_msg(&sig, 3, &a);
  a = argdef("idx", DT_INT32);
  pw_msg(&sig, 3, &a);
  pw_msg(&fd, 1, &sig);
  strbuf t = pb_tensor(DT_FLOAT, 0, NULL);
  pw_f32(&t, 5, 1.0f);
  strbuf n = const_node("one", &t, DT_FLOAT);
  pw_msg(&fd, 3, &n);
  n = nodedef("sw", "Switch");
  nd_in(&n, "x");
  nd_in(&n, "p:0");
  nd_attr(&n, "T", av_type(DT_FLOAT));
  pw_msg(&fd, 3, &n);
  n = nodedef("add", "AddV2");
  nd_in(&n, "sw:output_true:0");
  nd_in(&n, "one:output:0");
  pw_msg(&fd, 3, &n);
  n = nodedef("k", "Const");
  pw_msg(&fd, 3, &n);
  n = nodedef("top", "TopKV2");
  nd_in(&n, "x");
  nd_in(&n, "k:output:0");
  pw_msg(&fd, 3, &n);
  n = nodedef("parts", "Unpack");
  nd_in(&n, "x");
  nd_attr(&n, "num", av_int(3));
  pw_msg(&fd, 3, &n);
  n = nodedef("third", "Identity");
  nd_in(&n, "parts:output:2");
  pw_msg(&fd, 3, &n);
  add_ret(&fd, "y", "add:z:0");
  add_ret(&fd, "idx", "top:indices:0");
  pw_msg(&lib, 1, &fd);
  /* wrap(x) = pick(x, true) through a direct call, using pick's second output. */
  fd = sb();
  sig = sb();
  pw_str(&sig, 1, "wrap");
  a = argdef("x", DT_FLOAT);
  pw_msg(&sig, 2, &a);
  a = argdef("out", 0);
  pw_msg(&sig, 3, &a);
  pw_msg(&fd, 1, &sig);
  t = pb_tensor(DT_BOOL, 0, NULL);
  pw_int(&t, 11, 1);
  n = const_node("yes", &t, DT_BOOL);
  pw_msg(&fd, 3, &n);
  n = nodedef("call", "pick");
  nd_in(&n, "x");
  nd_in(&n, "yes:output:0");
  pw_msg(&fd, 3, &n);
  add_ret(&fd, "out", "call:idx:0");
  pw_msg(&lib, 1, &fd);
  pw_msg(&gd, 2, &lib);
  /* Root: PartitionedCall of wrap. */
  n = nodedef("in", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_FLOAT));
  gd_add(&gd, &n);
  n = nodedef("pc", "StatefulPartitionedCall");
  nd_in(&n, "in");
  nd_attr(&n, "f", av_func("wrap", NULL, NULL));
  strbuf tl = sb();
  pw_int(&tl, 6, DT_INT32);
  nd_attr(&n, "Tout", av_list(&tl));
  gd_add(&gd, &n);

  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  if (!g) {
    strbuf_free(&gd);
    return;
  }
  CHECK(g->n_functions == 2);
  graph *pick = graph_find_function(g, "pick"), *wrap = graph_find_function(g, "wrap");
  CHECK(pick && wrap && pick->root == g);
  CHECK(pick->n_inputs == 2 && !strcmp(pick->inputs[0]->name, "x") &&
        pick->inputs[1]->outputs[0].dtype == GRAPH_DT_BOOL);
  CHECK(pick->n_results == 2 && !strcmp(pick->results[0].name, "y") && !strcmp(pick->results[1].name, "idx"));
  graph_node *add = graph_find_node(pick, "add");
  CHECK(add->inputs[0].node == graph_find_node(pick, "sw") && add->inputs[0].port == 1);
  CHECK(add->inputs[1].node == graph_find_node(pick, "one") && add->inputs[1].port == 0);
  CHECK(graph_find_node(pick, "sw")->inputs[1].node == pick->inputs[1]);
  CHECK(pick->results[1].node == graph_find_node(pick, "top") && pick->results[1].port == 1);
  CHECK(graph_find_node(pick, "third")->inputs[0].port == 2 && graph_find_node(pick, "parts")->n_outputs == 3);
  graph_node *call = graph_find_node(wrap, "call");
  CHECK(call && !strcmp(call->op, "tf.pick") && call->n_outputs == 2);
  CHECK(wrap->results[0].node == call && wrap->results[0].port == 1);
  graph_node *pc = graph_find_node(g, "pc");
  const graph_attr_value *f = graph_node_attr(pc, "f");
  CHECK(f && f->kind == GRAPH_ATTR_FUNC && f->func.body == wrap);
  CHECK(g->n_results == 1 && g->results[0].node == pc);
  CHECK_OK(graph_validate(g));
  graph *copy = graph_clone(g);
  CHECK_OK(graph_validate(copy));
  graph_free(copy);
  graph_free(g);

  /* A func attribute naming a function the library lacks. */
  n = nodedef("bad", "PartitionedCall");
  nd_attr(&n, "f", av_func("missing", NULL, NULL));
  gd_add(&gd, &n);
  CHECK_ERR(import_gd(&gd, &g), "names function 'missing'");
  strbuf_free(&gd);
}

static void test_function_errors(void) {
  struct {
    const char *ret, *input, *needle;
  } cases[] = {
      {"nothere:output:0", "x", "input 'nothere:output:0' names no node"},
      {"n:output:0", "missing", "input 'missing' names no node"},
      {"n:output:0:1", "x", "malformed"},
      {"n:output:x", "x", "malformed"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    strbuf gd = sb(), lib = sb(), fd = sb(), sig = sb(), a;
    pw_str(&sig, 1, "f");
    a = argdef("x", DT_FLOAT);
    pw_msg(&sig, 2, &a);
    a = argdef("y", DT_FLOAT);
    pw_msg(&sig, 3, &a);
    pw_msg(&fd, 1, &sig);
    strbuf n = nodedef("n", "Identity");
    nd_in(&n, cases[k].input);
    pw_msg(&fd, 3, &n);
    add_ret(&fd, "y", cases[k].ret);
    pw_msg(&lib, 1, &fd);
    pw_msg(&gd, 2, &lib);
    graph *g = NULL;
    CHECK_ERR(import_gd(&gd, &g), cases[k].needle);
    CHECK(!g);
    strbuf_free(&gd);
  }
  /* No ret for an output; a list argument; a known op's unknown output name; two
   * functions of one name. */
  strbuf gd = sb(), lib = sb(), fd = sb(), sig = sb(), a;
  pw_str(&sig, 1, "f");
  a = argdef("y", DT_FLOAT);
  pw_msg(&sig, 3, &a);
  pw_msg(&fd, 1, &sig);
  pw_msg(&lib, 1, &fd);
  pw_msg(&gd, 2, &lib);
  graph *g = NULL;
  CHECK_ERR(import_gd(&gd, &g), "no entry in ret");
  strbuf_free(&gd);

  gd = sb(), lib = sb(), fd = sb(), sig = sb();
  pw_str(&sig, 1, "f");
  a = argdef("xs", DT_FLOAT);
  pw_str(&a, 5, "N");
  pw_msg(&sig, 2, &a);
  pw_msg(&fd, 1, &sig);
  pw_msg(&lib, 1, &fd);
  pw_msg(&gd, 2, &lib);
  kiln_status s = import_gd(&gd, &g);
  CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
  kiln_status_free(s);
  strbuf_free(&gd);

  gd = sb(), lib = sb(), fd = sb(), sig = sb();
  pw_str(&sig, 1, "f");
  a = argdef("x", DT_FLOAT);
  pw_msg(&sig, 2, &a);
  a = argdef("y", DT_FLOAT);
  pw_msg(&sig, 3, &a);
  pw_msg(&fd, 1, &sig);
  strbuf n = nodedef("sw", "Switch");
  nd_in(&n, "x");
  nd_in(&n, "x");
  pw_msg(&fd, 3, &n);
  add_ret(&fd, "y", "sw:output_maybe:0");
  pw_msg(&lib, 1, &fd);
  strbuf fd2 = sb(), sig2 = sb();
  pw_str(&sig2, 1, "f");
  pw_msg(&fd2, 1, &sig2);
  strbuf lib2 = sb();
  pw_msg(&lib2, 1, &fd2);
  strbuf gd2 = sb();
  pw_msg(&gd, 2, &lib);
  CHECK_ERR(import_gd(&gd, &g), "op Switch has no output 'output_maybe'");
  pw_msg(&gd, 2, &lib2); /* a second library message adds a second "f" */
  CHECK_ERR(import_gd(&gd, &g), "defined twice");
  strbuf_free(&gd);
  strbuf_free(&gd2);
}

/* ---- GraphDef: errors and robustness ---- */

static void test_graphdef_errors(void) {
  graph *g = NULL;
  struct {
    const char *name, *op, *input, *needle;
  } cases[] = {
      {"a", "Identity", "nowhere", "input 'nowhere' names no node"},
      {"a", "Identity", "^nowhere", "control input '^nowhere' names no node"},
      {"a", "Identity", "b:x", "malformed input name 'b:x'"},
      {"a", "Identity", "b:99999999", "malformed input name"},
      {"", "Identity", NULL, "node 1 has no name"},
      {"a", "", NULL, "node 1 ('a') has no op"},
      {"b", "Identity", NULL, "node name 'b' is used twice"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    strbuf gd = sb();
    strbuf n = nodedef("b", "Const");
    gd_add(&gd, &n);
    n = nodedef(cases[k].name, cases[k].op);
    if (cases[k].input) nd_in(&n, cases[k].input);
    gd_add(&gd, &n);
    CHECK_ERR(import_gd(&gd, &g), cases[k].needle);
    CHECK(!g);
    strbuf_free(&gd);
  }
  /* A placeholder with a data input cannot be a graph input. */
  strbuf gd = sb();
  strbuf n = nodedef("b", "Const");
  gd_add(&gd, &n);
  n = nodedef("p", "Placeholder");
  nd_in(&n, "^b");
  gd_add(&gd, &n);
  CHECK_OK(import_gd(&gd, &g)); /* a control input is dropped */
  CHECK(g && graph_find_node(g, "p")->is_input && graph_find_node(g, "p")->n_control == 0);
  graph_free(g);
  strbuf_free(&gd);
  /* A node name with a NUL byte; a field with the wrong wire type. */
  gd = sb();
  n = sb();
  pw_bytes(&n, 1, "a\0b", 3);
  pw_str(&n, 2, "NoOp");
  gd_add(&gd, &n);
  CHECK_ERR(import_gd(&gd, &g), "NUL");
  strbuf_free(&gd);
  gd = sb();
  n = sb();
  pw_int(&n, 1, 5);
  gd_add(&gd, &n);
  CHECK_ERR(import_gd(&gd, &g), "t.pb: node 0: byte 2: NodeDef.name field 1 has wire type 0");
  strbuf_free(&gd);
  /* Attributes nested past the limit (func attrs inside func attrs). */
  strbuf av = av_int(1);
  for (int d = 0; d < 40; d++) av = av_func("f", "a", &av);
  n = nodedef("deep", "X");
  nd_attr(&n, "a", av);
  gd = sb();
  gd_add(&gd, &n);
  CHECK_ERR(import_gd(&gd, &g), "nest deeper than 64");
  strbuf_free(&gd);
  /* Port numbers are cheap to write but each output slot costs memory: bounded. */
  gd = sb();
  for (int k = 0; k < 5; k++) {
    char name[16];
    snprintf(name, sizeof name, "a%d", k);
    n = nodedef(name, "Const");
    gd_add(&gd, &n);
    char in[32];
    snprintf(in, sizeof in, "a%d:60000", k);
    snprintf(name, sizeof name, "b%d", k);
    n = nodedef(name, "Identity");
    nd_in(&n, in);
    gd_add(&gd, &n);
  }
  kiln_status st = import_gd(&gd, &g);
  CHECK(st && kiln_status_code(st) == KILN_RESOURCE_EXHAUSTED && strstr(kiln_status_message(st), "output ports"));
  kiln_status_free(st);
  strbuf_free(&gd);
  /* Not a GraphDef at all; an empty one is an empty graph. */
  CHECK_ERR(tf_import_graphdef_buffer("\xff\xff", 2, "junk.pb", &g), "junk.pb");
  CHECK_OK(tf_import_graphdef_buffer("", 0, NULL, &g));
  CHECK(g && g->n_nodes == 0);
  graph_free(g);
  CHECK_ERR(tf_import_graphdef_file("/nonexistent/kiln/model.pb", &g), "/nonexistent/kiln/model.pb");
}

/* A GraphDef touching most of the reader, for truncation and mutation runs. */
static strbuf rich_graphdef(void) {
  strbuf gd = sb();
  strbuf n = nodedef("x", "Placeholder");
  nd_attr(&n, "dtype", av_type(DT_FLOAT));
  nd_attr(&n, "shape", av_shape(2, (int64_t[]){-1, 4}));
  gd_add(&gd, &n);
  strbuf t = pb_tensor(DT_FLOAT, 1, (int64_t[]){4});
  pw_f32(&t, 5, 2.0f);
  n = const_node("w", &t, DT_FLOAT);
  gd_add(&gd, &n);
  n = nodedef("m", "Mul");
  nd_in(&n, "x");
  nd_in(&n, "w");
  strbuf l = sb();
  pw_int(&l, 3, 1);
  pw_int(&l, 3, 2);
  nd_attr(&n, "li", av_list(&l));
  nd_attr(&n, "s", av_str("SAME"));
  gd_add(&gd, &n);
  t = pb_tensor(DT_STRING, 1, (int64_t[]){2});
  pw_bytes(&t, 4, "\x01\x01" "ab", 4);
  n = const_node("str", &t, DT_STRING);
  gd_add(&gd, &n);
  n = nodedef("o", "Identity");
  nd_in(&n, "m:0");
  nd_in(&n, "^str");
  gd_add(&gd, &n);
  return gd;
}

static uint32_t lcg(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static void test_graphdef_robustness(void) {
  int64_t saved = literal_max_bytes; /* mutated dims must not allocate gigabytes */
  literal_max_bytes = 1 << 20;
  strbuf gd = rich_graphdef();
  graph *g = NULL;
  CHECK_OK(import_gd(&gd, &g));
  graph_free(g);
  int ok = 0;
  for (size_t len = 0; len < gd.len; len++) {
    kiln_status s = tf_import_graphdef_buffer(gd.data, len, "t.pb", &g);
    if (!s) {
      ok++;
      graph_free(g);
    }
    kiln_status_free(s);
  }
  CHECK(ok > 0); /* prefixes ending between nodes are valid graphs */
  uint32_t seed = 12345;
  char *copy = malloc(gd.len);
  for (int round = 0; round < 3000; round++) {
    memcpy(copy, gd.data, gd.len);
    int flips = 1 + (int)(lcg(&seed) % 4);
    for (int k = 0; k < flips; k++) copy[lcg(&seed) % gd.len] = (char)lcg(&seed);
    kiln_status s = tf_import_graphdef_buffer(copy, gd.len, "t.pb", &g);
    if (!s) graph_free(g);
    kiln_status_free(s);
  }
  free(copy);
  strbuf_free(&gd);
  literal_max_bytes = saved;
}

/* ---- TF.js ---- */

static char tmpdir[512];

static void make_tmpdir(void) {
  if (tmpdir[0]) return;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kiln_tf_import_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    snprintf(tmpdir, sizeof tmpdir, "kiln_tf_import_XXXXXX");
    if (!mkdtemp(tmpdir)) {
      perror("mkdtemp");
      abort();
    }
  }
}

static const char *tmp_path(const char *name) {
  static char buf[4][700];
  static int next;
  char *p = buf[next++ % 4];
  snprintf(p, 700, "%s/%s", tmpdir, name);
  return p;
}

static void write_file(const char *name, const void *data, size_t len) {
  FILE *f = fopen(tmp_path(name), "wb");
  if (!f) {
    perror(name);
    abort();
  }
  if (len) fwrite(data, 1, len, f);
  fclose(f);
}

/* JSON written with ' for " to keep the C source readable. */
static char *jq(const char *s) {
  char *r = strdup(s);
  for (char *p = r; *p; p++)
    if (*p == '\'') *p = '"';
  return r;
}

static void write_json(const char *name, const char *single_quoted) {
  char *j = jq(single_quoted);
  write_file(name, j, strlen(j));
  free(j);
}

static void put_f32(strbuf *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  pw_le(b, u, 4);
}

/* The weights of the main TF.js model, in manifest order:
 *   group 0 (two shards, split inside a weight): w_f32 [2,2] float32 raw,
 *     q8 [4] float32 as uint8 (scale 0.1, min -1.5), q16 [3] float32 as uint16
 *     (scale 0.001, min 2), h16 [5] float32 as float16;
 *   group 1: qi [4] int32 as uint8 (scale 0.5, min -2), flags [3] bool,
 *     strs [3] string (no node in the topology), cplx [2] complex64, i32 [2] int32. */
static const uint8_t q8_raw[] = {0, 1, 128, 255};
static const uint16_t q16_raw[] = {0, 1000, 65535};
static const uint16_t h16_raw[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
static const uint8_t qi_raw[] = {0, 1, 3, 5};

static void write_tfjs_model(void) {
  make_tmpdir();
  strbuf g0 = sb(), g1 = sb();
  float w[] = {1.5f, -2.0f, 3.25f, 0.0f};
  for (int i = 0; i < 4; i++) put_f32(&g0, w[i]);
  pw_raw(&g0, q8_raw, 4);
  for (int i = 0; i < 3; i++) pw_le(&g0, q16_raw[i], 2);
  for (int i = 0; i < 5; i++) pw_le(&g0, h16_raw[i], 2);
  pw_raw(&g1, qi_raw, 4);
  pw_raw(&g1, "\x01\x00\x02", 3);
  const char *strs[] = {"ab", "", "x\0y"};
  size_t slen[] = {2, 0, 3};
  for (int i = 0; i < 3; i++) {
    pw_le(&g1, slen[i], 4);
    pw_raw(&g1, strs[i], slen[i]);
  }
  float c[] = {1, 2, 3, -4};
  for (int i = 0; i < 4; i++) put_f32(&g1, c[i]);
  pw_le(&g1, (uint32_t)-7, 4);
  pw_le(&g1, 123456789, 4);
  write_file("group1-shard1of2.bin", g0.data, 7);
  write_file("group1-shard2of2.bin", g0.data + 7, g0.len - 7);
  write_file("group2-shard1of1.bin", g1.data, g1.len);
  strbuf_free(&g0);
  strbuf_free(&g1);
  write_json("model.json",
             "{'format': 'graph-model', 'generatedBy': 'test', 'convertedBy': 'hand',"
             " 'modelTopology': {'versions': {'producer': 808, 'minConsumer': 12}, 'node': ["
             "  {'name': 'x', 'op': 'Placeholder', 'attr': {'dtype': {'type': 'DT_FLOAT'},"
             "     'shape': {'shape': {'dim': [{'size': '-1'}, {'size': '2'}]}}}},"
             "  {'name': 'w_f32', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_FLOAT',"
             "     'tensorShape': {'dim': [{'size': '2'}, {'size': '2'}]}}}, 'dtype': {'type': 'DT_FLOAT'}}},"
             "  {'name': 'q8', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_FLOAT'}}},"
             "  {'name': 'q16', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_FLOAT'}}},"
             "  {'name': 'h16', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_FLOAT'}}},"
             "  {'name': 'qi', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_INT32'}}},"
             "  {'name': 'flags', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_BOOL'}}},"
             "  {'name': 'cplx', 'op': 'Const'},"
             "  {'name': 'i32', 'op': 'Const'},"
             "  {'name': 'inline', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_INT32',"
             "     'tensorShape': {'dim': [{'size': '4'}]}, 'intVal': [7, 8]}}}},"
             "  {'name': 'content', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_FLOAT',"
             "     'tensorShape': {'dim': [{'size': '2'}]}, 'tensorContent': 'AADAPwAAAMA='}}}},"
             "  {'name': 'int64s', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_INT64',"
             "     'tensor_shape': {'dim': [{'size': '1'}, {'size': '3'}]}, 'int64Val': ['-9000000000000000000']}}}},"
             "  {'name': 'empty', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_FLOAT',"
             "     'tensorShape': {'dim': [{}, {'size': '3'}]}}}}},"
             "  {'name': 'mm', 'op': 'MatMul', 'input': ['x', 'w_f32'], 'device': '/device:CPU:0',"
             "     'attr': {'transpose_a': {'b': false}, 'T': {'type': 'DT_FLOAT'}}},"
             "  {'name': 'kinds', 'op': 'Custom', 'input': ['mm:0', '^inline'], 'attr': {"
             "     's': {'s': 'aGVsbG8='}, 'i': {'i': '-3'}, 'f': {'f': 0.5}, 'fnan': {'f': 'NaN'},"
             "     'b': {'b': true}, 'type': {'type': 'DT_HALF'}, 'shape': {'shape': {'unknownRank': true}},"
             "     'li': {'list': {'i': ['1', '2', 3]}}, 'ls': {'list': {'s': ['YQ==', '']}},"
             "     'lf': {'list': {'f': [1.5, 'Infinity']}}, 'lb': {'list': {'b': [true]}},"
             "     'lt': {'list': {'type': ['DT_INT32', 9]}}, 'lsh': {'list': {'shape': [{'dim': [{'size': '1'}]}]}},"
             "     'lten': {'list': {'tensor': [{'dtype': 'DT_BOOL', 'boolVal': [true]}]}},"
             "     'lfn': {'list': {'func': [{'name': 'fn'}]}}, 'lempty': {'list': {}},"
             "     'fn': {'func': {'name': 'fn', 'attr': {'T': {'type': 'DT_FLOAT'}, 'A': {'i': '1'}}}},"
             "     'ph': {'placeholder': 'T'}, 'nothing': {}}},"
             "  {'name': 'out', 'op': 'Identity', 'input': ['kinds']}"
             " ],"
             " 'library': {'function': [{'signature': {'name': 'fn', 'inputArg': [{'name': 'a', 'type': 'DT_FLOAT'}],"
             "   'outputArg': [{'name': 'r', 'type': 'DT_FLOAT'}]},"
             "   'nodeDef': [{'name': 'id', 'op': 'Identity', 'input': ['a'], 'attr': {'T': {'type': 'DT_FLOAT'}}}],"
             "   'ret': {'r': 'id:output:0'}}]}},"
             " 'signature': {'inputs': {'x:0': {'name': 'x:0', 'dtype': 'DT_FLOAT'}},"
             "   'outputs': {'result': {'name': 'out:0'}, 'mm_out': {'name': 'mm'}}},"
             " 'weightsManifest': ["
             "  {'paths': ['group1-shard1of2.bin', 'group1-shard2of2.bin'], 'weights': ["
             "   {'name': 'w_f32', 'shape': [2, 2], 'dtype': 'float32'},"
             "   {'name': 'q8', 'shape': [4], 'dtype': 'float32',"
             "    'quantization': {'dtype': 'uint8', 'min': -1.5, 'scale': 0.1, 'original_dtype': 'float32'}},"
             "   {'name': 'q16', 'shape': [3], 'dtype': 'float32',"
             "    'quantization': {'dtype': 'uint16', 'min': 2, 'scale': 0.001}},"
             "   {'name': 'h16', 'shape': [5], 'dtype': 'float32', 'quantization': {'dtype': 'float16'}}]},"
             "  {'paths': ['group2-shard1of1.bin'], 'weights': ["
             "   {'name': 'qi', 'shape': [4], 'dtype': 'int32',"
             "    'quantization': {'dtype': 'uint8', 'min': -2, 'scale': 0.5}},"
             "   {'name': 'flags', 'shape': [3], 'dtype': 'bool'},"
             "   {'name': 'strs', 'shape': [3], 'dtype': 'string'},"
             "   {'name': 'cplx', 'shape': [2], 'dtype': 'complex64'},"
             "   {'name': 'i32', 'shape': [2], 'dtype': 'int32'}]}]}");
}

static void test_tfjs_model(void) {
  write_tfjs_model();
  graph *g = NULL;
  tf_import_info info;
  CHECK_OK(tfjs_import_file_ex(tmp_path("model.json"), &g, &info));
  if (!g) return;
  CHECK(info.producer == 808 && info.min_consumer == 12 && info.n_weights == 9 && !info.results_inferred);
  /* Inputs and results from the signature. */
  CHECK(g->n_inputs == 1 && !strcmp(g->inputs[0]->name, "x") && g->inputs[0]->outputs[0].dtype == GRAPH_DT_FLOAT);
  CHECK(g->inputs[0]->outputs[0].shape.rank == 2 && g->inputs[0]->outputs[0].shape.dims[0] == GRAPH_UNKNOWN);
  CHECK(g->n_results == 2 && !strcmp(g->results[0].name, "result") && g->results[0].node == graph_find_node(g, "out"));
  CHECK(!strcmp(g->results[1].name, "mm_out") && g->results[1].node == graph_find_node(g, "mm"));
  /* Raw float32 across the shard boundary. */
  const graph_tensor *t = const_value(g, "w_f32");
  CHECK(t && t->dtype == GRAPH_DT_FLOAT && t->rank == 2 && ((float *)t->data)[0] == 1.5f &&
        ((float *)t->data)[1] == -2.0f && ((float *)t->data)[2] == 3.25f);
  graph_dtype dt = GRAPH_DT_INVALID;
  CHECK_OK(graph_node_get_type(graph_find_node(g, "w_f32"), "dtype", &dt));
  CHECK(dt == GRAPH_DT_FLOAT);
  /* uint8 / uint16 affine dequantization: q * scale + min in double, stored as float. */
  t = const_value(g, "q8");
  for (int i = 0; t && i < 4; i++) CHECK(((float *)t->data)[i] == (float)(q8_raw[i] * 0.1 + -1.5));
  CHECK(t && ((float *)t->data)[3] == (float)24.0);
  t = const_value(g, "q16");
  for (int i = 0; t && i < 3; i++) CHECK(((float *)t->data)[i] == (float)(q16_raw[i] * 0.001 + 2.0));
  /* float16 -> float32, including the largest half, a subnormal and infinity. */
  t = const_value(g, "h16");
  float want_h[] = {1.0f, -2.0f, 65504.0f, 5.9604644775390625e-08f, INFINITY};
  for (int i = 0; t && i < 5; i++) CHECK(((float *)t->data)[i] == want_h[i]);
  /* int32 through uint8: Math.round(q * 0.5 - 2): -2, -1.5 -> -1, -0.5 -> 0, 0.5 -> 1. */
  t = const_value(g, "qi");
  CHECK(t && t->dtype == GRAPH_DT_INT32);
  int32_t want_i[] = {-2, -1, 0, 1};
  for (int i = 0; t && i < 4; i++) CHECK(((int32_t *)t->data)[i] == want_i[i]);
  t = const_value(g, "flags");
  CHECK(t && t->dtype == GRAPH_DT_BOOL && ((uint8_t *)t->data)[0] == 1 && ((uint8_t *)t->data)[1] == 0 &&
        ((uint8_t *)t->data)[2] == 1);
  /* A weight the topology does not mention becomes its own Const node. */
  graph_node *strs = graph_find_node(g, "strs");
  CHECK(strs && !strcmp(strs->op, "tf.Const"));
  t = const_value(g, "strs");
  CHECK(t && t->dtype == GRAPH_DT_STRING && !strcmp(tensor_string(t, 0)->data, "ab") && tensor_string(t, 1)->len == 0 &&
        tensor_string(t, 2)->len == 3 && !memcmp(tensor_string(t, 2)->data, "x\0y", 3));
  t = const_value(g, "cplx");
  CHECK(t && t->dtype == GRAPH_DT_COMPLEX64 && ((float *)t->data)[3] == -4.0f);
  t = const_value(g, "i32");
  CHECK(t && ((int32_t *)t->data)[0] == -7 && ((int32_t *)t->data)[1] == 123456789);
  /* Inline tensors: splat, base64 tensorContent, int64 strings, a zero dim written {}. */
  t = const_value(g, "inline");
  CHECK(t && t->n == 4 && ((int32_t *)t->data)[0] == 7 && ((int32_t *)t->data)[3] == 8);
  t = const_value(g, "content");
  CHECK(t && ((float *)t->data)[0] == 1.5f && ((float *)t->data)[1] == -2.0f);
  t = const_value(g, "int64s");
  CHECK(t && t->rank == 2 && t->n == 3 && ((int64_t *)t->data)[2] == -9000000000000000000LL);
  t = const_value(g, "empty");
  CHECK(t && t->rank == 2 && t->dims[0] == 0 && t->dims[1] == 3 && t->n == 0);
  /* Nodes and attributes. */
  graph_node *mm = graph_find_node(g, "mm");
  CHECK(mm && !strcmp(mm->op, "tf.MatMul") && mm->inputs[1].node == graph_find_node(g, "w_f32"));
  CHECK(mm->requested_device && !strcmp(mm->requested_device, "/device:CPU:0"));
  CHECK(!graph_node_attr_bool_or(mm, "transpose_a", true));
  graph_node *k = graph_find_node(g, "kinds");
  CHECK(k->n_control == 1 && k->control_inputs[0] == graph_find_node(g, "inline"));
  const graph_bytes *s;
  CHECK_OK(graph_node_get_string(k, "s", &s));
  CHECK(!strcmp(s->data, "hello"));
  CHECK(graph_node_attr_int_or(k, "i", 0) == -3 && graph_node_attr_float_or(k, "f", 0) == 0.5f);
  CHECK(isnan(graph_node_attr_float_or(k, "fnan", 0)) && graph_node_attr_bool_or(k, "b", false));
  CHECK_OK(graph_node_get_type(k, "type", &dt));
  CHECK(dt == GRAPH_DT_HALF);
  graph_shape sh;
  CHECK_OK(graph_node_get_shape(k, "shape", &sh));
  CHECK(sh.rank == GRAPH_UNKNOWN);
  int64_t ints[4];
  int n = 0;
  CHECK_OK(graph_node_get_ints(k, "li", ints, 4, &n));
  CHECK(n == 3 && ints[0] == 1 && ints[2] == 3);
  const graph_attr_value *v = graph_node_attr(k, "ls");
  CHECK(v && v->list.n == 2 && !strcmp(v->list.items[0].s.data, "a") && v->list.items[1].s.len == 0);
  v = graph_node_attr(k, "lf");
  CHECK(v && v->list.items[0].f == 1.5f && isinf(v->list.items[1].f));
  v = graph_node_attr(k, "lt");
  CHECK(v && v->list.items[0].type == GRAPH_DT_INT32 && v->list.items[1].type == GRAPH_DT_INT64);
  v = graph_node_attr(k, "lsh");
  CHECK(v && v->list.items[0].shape->rank == 1);
  v = graph_node_attr(k, "lten");
  CHECK(v && v->list.items[0].tensor->dtype == GRAPH_DT_BOOL && v->list.items[0].tensor->rank == 0);
  v = graph_node_attr(k, "lfn");
  CHECK(v && v->list.items[0].func.body == graph_find_function(g, "fn"));
  v = graph_node_attr(k, "lempty");
  CHECK(v && v->kind == GRAPH_ATTR_LIST && v->list.n == 0);
  v = graph_node_attr(k, "fn");
  CHECK(v && v->func.body == graph_find_function(g, "fn") && v->func.n_attrs == 2 &&
        !strcmp(v->func.attrs[0].name, "A"));
  CHECK_OK(graph_node_get_string(k, "ph", &s));
  CHECK(!strcmp(s->data, "$T") && !graph_node_attr(k, "nothing"));
  graph *fn = graph_find_function(g, "fn");
  CHECK(fn && fn->n_inputs == 1 && fn->n_results == 1 && fn->results[0].node == graph_find_node(fn, "id"));
  CHECK_OK(graph_validate(g));
  graph_free(g);

  /* The same from memory: the shards concatenated in manifest order. */
  char *json;
  size_t json_len;
  FILE *f = fopen(tmp_path("model.json"), "rb");
  fseek(f, 0, SEEK_END);
  json_len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  json = malloc(json_len);
  CHECK(fread(json, 1, json_len, f) == json_len);
  fclose(f);
  strbuf all = sb();
  const char *shards[] = {"group1-shard1of2.bin", "group1-shard2of2.bin", "group2-shard1of1.bin"};
  for (int i = 0; i < 3; i++) {
    f = fopen(tmp_path(shards[i]), "rb");
    char buf[256];
    size_t got = fread(buf, 1, sizeof buf, f);
    pw_raw(&all, buf, got);
    fclose(f);
  }
  CHECK_OK(tfjs_import_buffer(json, json_len, all.data, all.len, "mem.json", &g));
  t = g ? const_value(g, "qi") : NULL;
  CHECK(t && ((int32_t *)t->data)[1] == -1);
  graph_free(g);
  /* One byte short: the last weight does not fit. */
  CHECK_ERR(tfjs_import_buffer(json, json_len, all.data, all.len - 1, "mem.json", &g),
            "mem.json: weightsManifest[1].weights[4]: weight 'i32' needs 8 bytes");
  free(json);
  strbuf_free(&all);
}

/* Writes model.json (single-quoted JSON) with one weight group of the given files. */
static kiln_status import_json(const char *single_quoted, graph **g) {
  write_json("m.json", single_quoted);
  return tfjs_import_file(tmp_path("m.json"), g);
}

static void test_tfjs_errors(void) {
  make_tmpdir();
  graph *g = NULL;
  uint8_t four[4] = {0};
  write_file("four.bin", four, 4);
  /* Bad JSON names the file, line and column. */
  CHECK_ERR(import_json("{'modelTopology': {'node': [}", &g), "m.json:1:29");
  CHECK(!g);
  CHECK_ERR(import_json("{'format': 'layers-model', 'modelTopology': {}}", &g), "graph-model");
  CHECK_ERR(import_json("{'format': 'graph-model'}", &g), "modelTopology");
  /* A missing shard names the file. */
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['nope.bin'], 'weights': []}]}", &g),
            "nope.bin");
  /* A short shard names the weight and the file. */
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [2], 'dtype': 'float32'}]}]}",
                        &g),
            "weight 'w' needs 8 bytes at offset 0 of group 0, but the group's shards (four.bin) hold only 4 bytes");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 's', 'shape': [2], 'dtype': 'string'}]}]}",
                        &g),
            "weight 's' needs 8 bytes at offset 0");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [1], 'dtype': 'float8'}]}]}",
                        &g),
            "weightsManifest[0].weights[0].dtype: weight 'w' has unknown dtype 'float8'");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [1], 'dtype': 'float32', 'quantization': {'dtype': 'int4'}}]}]}",
                        &g),
            "unknown quantization dtype 'int4'");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [1], 'dtype': 'float32', 'quantization': {'dtype': 'uint8'}}]}]}",
                        &g),
            "without min and scale");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [1], 'dtype': 'int32', 'quantization': {'dtype': 'float16'}}]}]}",
                        &g),
            "only supports float32");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [-1], 'dtype': 'float32'}]}]}",
                        &g),
            "negative dimension");
  CHECK_ERR(import_json("{'modelTopology': {}, 'weightsManifest': [{'paths': ['four.bin'], 'weights': ["
                        "{'name': 'w', 'shape': [], 'dtype': 'bool'}, {'name': 'w', 'shape': [], 'dtype': 'bool'}]}]}",
                        &g),
            "weight 'w' is listed twice");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'w', 'op': 'Placeholder'}]}, 'weightsManifest': ["
                        "{'paths': ['four.bin'], 'weights': [{'name': 'w', 'shape': [1], 'dtype': 'float32'}]}]}",
                        &g),
            "weight 'w' names a Placeholder node, not a Const");
  /* Topology errors name the JSON path. */
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X', 'attr': {'T': {'type': 'DT_NOPE'}}}]}}",
                        &g),
            "m.json: modelTopology.node[0].attr.T.type: unknown DataType \"DT_NOPE\"");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X', 'attr': {'s': {'s': 'a$b='}}}]}}", &g),
            "malformed base64");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X',"
                        " 'attr': {'l': {'list': {'i': ['1'], 'f': [1]}}}}]}}",
                        &g),
            "list attribute has both i and f values");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X', 'attr': {'i': {'i': 'x1'}}}]}}", &g),
            "modelTopology.node[0].attr.i.i");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'Const', 'attr': {'value': {'tensor': "
                        "{'dtype': 'DT_FLOAT', 'tensorShape': {'dim': [{'size': '1'}]}, 'floatVal': [1, 2]}}}}]}}",
                        &g),
            "modelTopology.node[0].attr.value.tensor: tensor: 2 values for 1 elements");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X', 'input': ['b']}]}}", &g),
            "node 'a' (X): input 'b' names no node");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'op': 'X'}]}}", &g), "modelTopology.node[0]");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X'}]}, 'signature': {'outputs': "
                        "{'o': {'name': 'zz:0'}}}}",
                        &g),
            "signature output 'o' names node 'zz'");
  CHECK_ERR(import_json("{'modelTopology': {'node': [{'name': 'a', 'op': 'X'}]}, 'signature': {'inputs': "
                        "{'i': {'name': 'a:0'}}}}",
                        &g),
            "not a Placeholder");
  CHECK_ERR(tfjs_import_file(tmp_path("absent.json"), &g), "absent.json");
  /* An empty topology with no weights is an empty graph. */
  CHECK_OK(import_json("{'modelTopology': {}}", &g));
  CHECK(g && g->n_nodes == 0);
  graph_free(g);
}

static void test_tfjs_robustness(void) {
  /* Every truncation of a small model and random byte mutations: errors, no crash. */
  const char *model =
      "{'format': 'graph-model', 'modelTopology': {'node': ["
      "{'name': 'x', 'op': 'Placeholder', 'attr': {'dtype': {'type': 'DT_FLOAT'},"
      " 'shape': {'shape': {'dim': [{'size': '-1'}]}}}},"
      "{'name': 'w', 'op': 'Const', 'attr': {'dtype': {'type': 'DT_FLOAT'}}},"
      "{'name': 's', 'op': 'Const', 'attr': {'value': {'tensor': {'dtype': 'DT_STRING', 'stringVal': ['YWI=']}}}},"
      "{'name': 'y', 'op': 'Mul', 'input': ['x', 'w:0', '^s'], 'attr': {'l': {'list': {'i': ['1']}}}}]},"
      "'weightsManifest': [{'paths': ['a'], 'weights': [{'name': 'w', 'shape': [2], 'dtype': 'float32',"
      "'quantization': {'dtype': 'uint8', 'min': 0.5, 'scale': 2}}, {'name': 't', 'shape': [1], 'dtype': 'string'}]}]}";
  int64_t saved = literal_max_bytes;
  literal_max_bytes = 1 << 20;
  char *json = jq(model);
  size_t len = strlen(json);
  const uint8_t weights[] = {1, 2, 3, 0, 0, 0, 'a', 'b', 'c'};
  graph *g = NULL;
  CHECK_OK(tfjs_import_buffer(json, len, weights, sizeof weights, NULL, &g));
  const graph_tensor *t = g ? const_value(g, "w") : NULL;
  CHECK(t && ((float *)t->data)[0] == 2.5f && ((float *)t->data)[1] == 4.5f);
  graph_free(g);
  for (size_t cut = 0; cut < len; cut++) {
    kiln_status s = tfjs_import_buffer(json, cut, weights, sizeof weights, NULL, &g);
    CHECK(s != NULL);
    kiln_status_free(s);
  }
  for (size_t cut = 0; cut < sizeof weights; cut++) {
    kiln_status s = tfjs_import_buffer(json, len, weights, cut, NULL, &g);
    CHECK(s != NULL);
    kiln_status_free(s);
  }
  uint32_t seed = 99;
  char *copy = malloc(len);
  for (int round = 0; round < 3000; round++) {
    memcpy(copy, json, len);
    int flips = 1 + (int)(lcg(&seed) % 3);
    static const char alphabet[] = "{}[]\":,0123456789-eE.abtnfulsDT_ \\";
    for (int k = 0; k < flips; k++) copy[lcg(&seed) % len] = alphabet[lcg(&seed) % (sizeof alphabet - 1)];
    kiln_status s = tfjs_import_buffer(copy, len, weights, sizeof weights, NULL, &g);
    if (!s) graph_free(g);
    kiln_status_free(s);
  }
  free(copy);
  free(json);
  literal_max_bytes = saved;
}

static void cleanup_tmpdir(void) {
  if (!tmpdir[0]) return;
  const char *files[] = {"model.json", "m.json", "four.bin", "group1-shard1of2.bin", "group1-shard2of2.bin",
                         "group2-shard1of1.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(tmp_path(files[i]));
  rmdir(tmpdir);
}

/* ---- tool mode ---- */

static int cmp_count(const void *a, const void *b) {
  const int *x = *(const int *const *)a, *y = *(const int *const *)b;
  return y[0] - x[0];
}

static void print_summary(const char *path, const graph *g, const tf_import_info *info) {
  /* Op histogram: distinct ops with counts, most frequent first. */
  const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
  int *counts = calloc((size_t)g->n_nodes + 1, sizeof *counts);
  int n_ops = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const char *op = graph_node_op_base(g->nodes[i]);
    int k = 0;
    while (k < n_ops && strcmp(ops[k], op)) k++;
    if (k == n_ops) ops[n_ops++] = op;
    counts[k]++;
  }
  int **order = calloc((size_t)n_ops + 1, sizeof *order);
  int (*pairs)[2] = calloc((size_t)n_ops + 1, sizeof *pairs);
  for (int k = 0; k < n_ops; k++) {
    pairs[k][0] = counts[k];
    pairs[k][1] = k;
    order[k] = pairs[k];
  }
  qsort(order, (size_t)n_ops, sizeof *order, cmp_count);
  printf("ok %s: %d nodes, %d functions, %d weights, producer %lld\n", path, g->n_nodes, g->n_functions,
         info->n_weights, (long long)info->producer);
  printf("  inputs:");
  for (int i = 0; i < g->n_inputs; i++) {
    const graph_output_info *o = &g->inputs[i]->outputs[0];
    printf(" %s: %s", g->inputs[i]->name, graph_dtype_name(o->dtype));
    if (o->shape.rank >= 0) {
      printf("[");
      for (int d = 0; d < o->shape.rank; d++) {
        if (o->shape.dims[d] < 0) printf("%s?", d ? "," : "");
        else printf("%s%lld", d ? "," : "", (long long)o->shape.dims[d]);
      }
      printf("]");
    }
    printf(i + 1 < g->n_inputs ? ";" : "");
  }
  printf("\n  outputs%s:", info->results_inferred ? " (inferred)" : "");
  for (int i = 0; i < g->n_results; i++)
    printf(" %s = %s:%d%s", g->results[i].name, g->results[i].node->name, g->results[i].port,
           i + 1 < g->n_results ? ";" : "");
  printf("\n  ops (%d kinds):", n_ops);
  for (int k = 0; k < n_ops; k++) printf(" %s %d", ops[order[k][1]], order[k][0]);
  printf("\n");
  free(ops);
  free(counts);
  free(order);
  free(pairs);
}

static void print_weight_hashes(const char *path, const graph *g) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (int k = 0; k < g->n_nodes; k++) {
    const graph_tensor *t = const_value(g, g->nodes[k]->name);
    if (!t || !graph_node_is(g->nodes[k], "Const")) continue;
    uint32_t h = 0x811c9dc5u;
    const uint8_t *b = t->data;
    for (size_t j = 0; j < tensor_byte_size(t); j++) h = (h ^ b[j]) * 16777619u;
    const char *dt = t->dtype == GRAPH_DT_FLOAT ? "float32" : graph_dtype_name(t->dtype);
    printf("%s %s %s ", base, g->nodes[k]->name, dt);
    for (int d = 0; d < t->rank; d++) printf("%s%lld", d ? "x" : "", (long long)t->dims[d]);
    printf(" %x\n", h);
  }
}

static int tool_main(int argc, char **argv) {
  bool hashes = !strcmp(argv[1], "--weight-hashes");
  if (!hashes && strcmp(argv[1], "--summary")) {
    fprintf(stderr, "usage: %s [--summary | --weight-hashes] FILE...\n", argv[0]);
    return 2;
  }
  int failed = 0;
  for (int i = 2; i < argc; i++) {
    size_t l = strlen(argv[i]);
    bool js = l > 5 && !strcmp(argv[i] + l - 5, ".json");
    graph *g = NULL;
    tf_import_info info;
    kiln_status s = js ? tfjs_import_file_ex(argv[i], &g, &info) : tf_import_graphdef_file_ex(argv[i], &g, &info);
    if (s) {
      printf("FAILED %s: %s\n", argv[i], kiln_status_message(s));
      kiln_status_free(s);
      failed++;
      continue;
    }
    if (hashes) print_weight_hashes(argv[i], g);
    else print_summary(argv[i], g, &info);
    graph_free(g);
  }
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1) return tool_main(argc, argv);
  static const check_case cases[] = {
      TEST(test_pb_wire),         TEST(test_graphdef_basic),  TEST(test_result_inference),
      TEST(test_attr_kinds),      TEST(test_tensor_values),   TEST(test_while_loop),
      TEST(test_functions),       TEST(test_function_errors), TEST(test_graphdef_errors),
      TEST(test_graphdef_robustness), TEST(test_tfjs_model),  TEST(test_tfjs_errors),
      TEST(test_tfjs_robustness), TEST(test_control_only_helpers_are_not_outputs),
      TEST(test_select_io_names_outputs_and_prunes), TEST(test_select_io_refuses_unknown_and_repeated_names),
      TEST(test_select_io_feeds_an_internal_tensor), TEST(test_select_io_refuses_feeding_inside_a_loop),
  };
  int rc = check_run(__FILE__, cases, (int)(sizeof cases / sizeof cases[0]));
  cleanup_tmpdir();
  return rc;
}
