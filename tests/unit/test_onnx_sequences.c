/* Unit tests for the ONNX sequence and optional ops the executor runs as natives
 * (src/exec/sequences.c): SequenceEmpty/Construct/Insert/Erase/At/Length with negative
 * positions and value semantics (an updated sequence leaves its input unchanged),
 * SplitToSequence with and without split and keepdims, ConcatFromSequence with and
 * without new_axis, sequences carried through an ONNX Loop and returned by If bodies,
 * Optional/OptionalHasElement/OptionalGetElement (empty, of a tensor, of a sequence),
 * SequenceMap over two sequences with a tensor passed whole and two outputs, and the
 * errors out-of-range positions, empty optionals and
 * sequences of unequal length give. Graphs are written in the graph text format. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "exec/executor.h"
#include "graph/graph.h"

static graph_tensor *scalar(graph_dtype t, double v) {
  graph_tensor *x = NULL;
  if (tensor_create_scalar(t, &x)) abort();
  tensor_set_f64(x, 0, v);
  return x;
}

static graph_tensor *vec(graph_dtype t, int n, const double *v) {
  graph_tensor *x = NULL;
  int64_t d = n;
  if (tensor_create(t, 1, &d, &x)) abort();
  for (int i = 0; i < n; i++) tensor_set_f64(x, i, v[i]);
  return x;
}

static graph_tensor *mat(int r, int c, const double *v) {
  graph_tensor *x = NULL;
  int64_t d[2] = {r, c};
  if (tensor_create(GRAPH_DT_FLOAT, 2, d, &x)) abort();
  for (int i = 0; i < r * c; i++) tensor_set_f64(x, i, v[i]);
  return x;
}

/* Parses and runs src with inputs given as name, tensor pairs (released). */
static kiln_status run_graph(const char *src, int n_out, graph_tensor **outs, int n_in, ...) {
  const char *names[8];
  graph_tensor *vals[8];
  va_list ap;
  va_start(ap, n_in);
  for (int i = 0; i < n_in; i++) {
    names[i] = va_arg(ap, const char *);
    vals[i] = va_arg(ap, graph_tensor *);
  }
  va_end(ap);
  for (int i = 0; i < n_out; i++) outs[i] = NULL;
  graph *g = check_parse_graph(src);
  executor *e = NULL;
  kiln_status s = g ? executor_new(g, NULL, &e) : status_error(KILN_INVALID_ARGUMENT, "graph did not parse");
  if (!s) s = executor_run(e, n_in, names, vals, outs);
  for (int i = 0; i < n_in; i++) tensor_free(vals[i]);
  executor_free(e);
  graph_free(g);
  return s;
}

static bool values_are(const graph_tensor *t, int rank, const int64_t *dims, int n, const double *want) {
  if (!t || t->n != n || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i]) return false;
  for (int i = 0; i < n; i++)
    if (tensor_get_f64(t, i) != want[i]) return false;
  return true;
}

static void free_outs(graph_tensor **o, int n) {
  for (int i = 0; i < n; i++) tensor_free(o[i]);
}

/* [b, c, a] built by inserts at the back, the front and -1; s1 is reused after being
 * inserted into, so it must keep its own elements. */
static const char seq_ops[] =
    "framework onnx\n"
    "input a: float[1]\n"
    "input b: float[1]\n"
    "input c: float[1]\n"
    "input zero: int64[]\n"
    "input minus1: int64[]\n"
    "s0 = SequenceEmpty[dtype=1]()\n"
    "s1 = SequenceInsert(s0, a)\n"
    "s2 = SequenceInsert(s1, b, zero)\n"
    "s3 = SequenceInsert(s2, c, minus1)\n"
    "at_last = SequenceAt(s3, minus1)\n"
    "s1_len = SequenceLength(s1)\n"
    "at_1 = SequenceAt(s3, s1_len)\n"
    "s4 = SequenceErase(s3, zero)\n"
    "s5 = SequenceErase(s4)\n"
    "first4 = SequenceAt(s4, zero)\n"
    "len3 = SequenceLength(s3)\n"
    "len5 = SequenceLength(s5)\n"
    "cat = ConcatFromSequence[axis=0](s3)\n"
    "output at_last = at_last:0\n"
    "output at_1 = at_1:0\n"
    "output first4 = first4:0\n"
    "output len3 = len3:0\n"
    "output len5 = len5:0\n"
    "output s1_len = s1_len:0\n"
    "output cat = cat:0\n";

static void test_insert_erase_at_follow_positions_and_keep_inputs(void) {
  graph_tensor *o[7];
  CHECK_OK(run_graph(seq_ops, 7, o, 5, "a", vec(GRAPH_DT_FLOAT, 1, (double[]){1}), "b",
                     vec(GRAPH_DT_FLOAT, 1, (double[]){2}), "c", vec(GRAPH_DT_FLOAT, 1, (double[]){3}), "zero",
                     scalar(GRAPH_DT_INT64, 0), "minus1", scalar(GRAPH_DT_INT64, -1)));
  CHECK(values_are(o[0], 1, (int64_t[]){1}, 1, (double[]){1}));           /* s3[-1] = a */
  CHECK(values_are(o[1], 1, (int64_t[]){1}, 1, (double[]){3}));           /* s3[1] = c */
  CHECK(values_are(o[2], 1, (int64_t[]){1}, 1, (double[]){3}));           /* erase(s3, 0)[0] = c */
  CHECK(o[3] && o[3]->dtype == GRAPH_DT_INT64 && tensor_get_s64(o[3], 0) == 3);
  CHECK(o[4] && tensor_get_s64(o[4], 0) == 1);                            /* erase twice */
  CHECK(o[5] && tensor_get_s64(o[5], 0) == 1);                            /* s1 unchanged */
  CHECK(values_are(o[6], 1, (int64_t[]){3}, 3, (double[]){2, 3, 1}));     /* [b, c, a] */
  free_outs(o, 7);
}

static const char split_concat[] =
    "framework onnx\n"
    "input x: float[2,3]\n"
    "input two: int64[]\n"
    "input lens: int64[2]\n"
    "cols = SplitToSequence[axis=1, keepdims=0](x)\n"
    "chunks = SplitToSequence[axis=-1](x, two)\n"
    "parts = SplitToSequence(x, lens)\n"
    "ncols = SequenceLength(cols)\n"
    "col2 = SequenceAt(cols, two)\n"
    "nchunks = SequenceLength(chunks)\n"
    "stacked = ConcatFromSequence[axis=-1, new_axis=1](cols)\n"
    "joined = ConcatFromSequence[axis=1](chunks)\n"
    "rows = ConcatFromSequence[axis=0](parts)\n"
    "output ncols = ncols:0\n"
    "output col2 = col2:0\n"
    "output nchunks = nchunks:0\n"
    "output stacked = stacked:0\n"
    "output joined = joined:0\n"
    "output rows = rows:0\n";

static void test_split_to_sequence_and_concat_round_trip(void) {
  graph_tensor *o[6];
  CHECK_OK(run_graph(split_concat, 6, o, 3, "x", mat(2, 3, (double[]){1, 2, 3, 4, 5, 6}), "two",
                     scalar(GRAPH_DT_INT64, 2), "lens", vec(GRAPH_DT_INT64, 2, (double[]){0, 2})));
  CHECK(o[0] && tensor_get_s64(o[0], 0) == 3);
  CHECK(values_are(o[1], 1, (int64_t[]){2}, 2, (double[]){3, 6})); /* keepdims=0: rank 1 */
  CHECK(o[2] && tensor_get_s64(o[2], 0) == 2);                     /* chunks of 2 and 1 */
  CHECK(values_are(o[3], 2, (int64_t[]){2, 3}, 6, (double[]){1, 2, 3, 4, 5, 6}));
  CHECK(values_are(o[4], 2, (int64_t[]){2, 3}, 6, (double[]){1, 2, 3, 4, 5, 6}));
  CHECK(values_are(o[5], 2, (int64_t[]){2, 3}, 6, (double[]){1, 2, 3, 4, 5, 6}));
  free_outs(o, 6);
}

/* Loop(M, "", seq) appending iter to the carried sequence each iteration; an If picks
 * a sequence made in one of its bodies. */
static const char loop_seq[] =
    "framework onnx\n"
    "graph body {\n"
    "  input iter: int64[]\n"
    "  input cond_in: bool[]\n"
    "  input s: variant[]\n"
    "  c = Identity(cond_in)\n"
    "  s_out = SequenceInsert(s, iter)\n"
    "  output cond_out = c:0\n"
    "  output s_out = s_out:0\n"
    "}\n"
    "graph then_b {\n"
    "  input s: variant[]\n"
    "  e = SequenceErase(s)\n"
    "  output r = e:0\n"
    "}\n"
    "graph else_b {\n"
    "  input s: variant[]\n"
    "  seven = Constant[value=tensor<int64[]>{7}]()\n"
    "  n = SequenceConstruct(seven, seven)\n"
    "  output r = n:0\n"
    "}\n"
    "input M: int64[]\n"
    "input p: bool[]\n"
    "s0 = SequenceEmpty[dtype=7]()\n"
    "loop = Loop[_absent_inputs=[1], body=@body](M, s0)\n"
    "picked = If[_captures=[\"loop\"], else_branch=@else_b, then_branch=@then_b](p, loop)\n"
    "all = ConcatFromSequence[axis=0, new_axis=1](loop)\n"
    "n = SequenceLength(picked)\n"
    "output all = all:0\n"
    "output n = n:0\n";

static void test_sequence_carried_through_loop_and_if(void) {
  graph_tensor *o[2];
  CHECK_OK(run_graph(loop_seq, 2, o, 2, "M", scalar(GRAPH_DT_INT64, 4), "p", scalar(GRAPH_DT_BOOL, 1)));
  CHECK(o[0] && o[0]->dtype == GRAPH_DT_INT64 && values_are(o[0], 1, (int64_t[]){4}, 4, (double[]){0, 1, 2, 3}));
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 3);
  free_outs(o, 2);
  CHECK_OK(run_graph(loop_seq, 2, o, 2, "M", scalar(GRAPH_DT_INT64, 2), "p", scalar(GRAPH_DT_BOOL, 0)));
  CHECK(values_are(o[0], 1, (int64_t[]){2}, 2, (double[]){0, 1}));
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 2);
  free_outs(o, 2);
}

static const char seq_map[] =
    "framework onnx\n"
    "graph body {\n"
    "  input a: float[?]\n"
    "  input b: float[?]\n"
    "  input k: float[]\n"
    "  ab = Add(a, b)\n"
    "  y = Mul(ab, k)\n"
    "  n = Shape(a)\n"
    "  output y = y:0\n"
    "  output n = n:0\n"
    "}\n"
    "input x: float[?]\n"
    "input k: float[]\n"
    "s = SplitToSequence[axis=0](x)\n"
    "t = SplitToSequence[axis=0](x)\n"
    "m = SequenceMap[body=@body](s, t, k) -> (variant, variant)\n"
    "y = ConcatFromSequence[axis=0](m:0)\n"
    "len = SequenceLength(m:1)\n"
    "output y = y:0\n"
    "output len = len:0\n";

static void test_sequence_map_runs_the_body_per_element(void) {
  graph_tensor *o[2];
  CHECK_OK(run_graph(seq_map, 2, o, 2, "x", vec(GRAPH_DT_FLOAT, 3, (double[]){1, 2, 3}), "k",
                     scalar(GRAPH_DT_FLOAT, 10)));
  CHECK(values_are(o[0], 1, (int64_t[]){3}, 3, (double[]){20, 40, 60}));
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 3);
  free_outs(o, 2);
  /* Sequences of unequal length are refused, naming the input. */
  CHECK_ERR(run_graph("framework onnx\n"
                      "graph body {\n"
                      "  input a: float[?]\n"
                      "  input b: float[?]\n"
                      "  output a = a:0\n"
                      "}\n"
                      "input x: float[2]\n"
                      "s = SplitToSequence[axis=0](x)\n"
                      "t = SequenceConstruct(x)\n"
                      "m = SequenceMap[body=@body](s, t)\n"
                      "n = SequenceLength(m)\n"
                      "output n = n:0\n",
                      1, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})),
            "input 1 is a sequence of 1 elements but input 0 has 2");
  free_outs(o, 1);
}

static const char optionals[] =
    "framework onnx\n"
    "input x: float[2]\n"
    "none = Optional()\n"
    "some = Optional(x)\n"
    "seq = SequenceConstruct(x)\n"
    "oseq = Optional(seq)\n"
    "h_none = OptionalHasElement(none)\n"
    "h_some = OptionalHasElement(some)\n"
    "h_tensor = OptionalHasElement(x)\n"
    "h_absent = OptionalHasElement()\n"
    "h_seq = OptionalHasElement(oseq)\n"
    "got = OptionalGetElement(some)\n"
    "got_t = OptionalGetElement(x)\n"
    "inner = OptionalGetElement(oseq)\n"
    "n = SequenceLength(inner)\n"
    "output h_none = h_none:0\n"
    "output h_some = h_some:0\n"
    "output h_tensor = h_tensor:0\n"
    "output h_absent = h_absent:0\n"
    "output h_seq = h_seq:0\n"
    "output got = got:0\n"
    "output got_t = got_t:0\n"
    "output n = n:0\n";

static void test_optional_has_and_get_element(void) {
  graph_tensor *o[8];
  CHECK_OK(run_graph(optionals, 8, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){5, 6})));
  CHECK(o[0] && o[0]->dtype == GRAPH_DT_BOOL && tensor_get_s64(o[0], 0) == 0);
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 1);
  CHECK(o[2] && tensor_get_s64(o[2], 0) == 1);
  CHECK(o[3] && tensor_get_s64(o[3], 0) == 0);
  CHECK(o[4] && tensor_get_s64(o[4], 0) == 1);
  CHECK(values_are(o[5], 1, (int64_t[]){2}, 2, (double[]){5, 6}));
  CHECK(values_are(o[6], 1, (int64_t[]){2}, 2, (double[]){5, 6}));
  CHECK(o[7] && tensor_get_s64(o[7], 0) == 1);
  free_outs(o, 8);
}

static void test_errors_name_position_and_empty_optional(void) {
  graph_tensor *o[1];
  CHECK_ERR(run_graph("framework onnx\n"
                      "input x: float[2]\n"
                      "input p: int64[]\n"
                      "s = SequenceConstruct(x, x)\n"
                      "a = SequenceAt(s, p)\n"
                      "output a = a:0\n",
                      1, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "p", scalar(GRAPH_DT_INT64, -3)),
            "position -3 is out of range [-2, 1]");
  free_outs(o, 1);
  CHECK_ERR(run_graph("framework onnx\n"
                      "input x: float[2]\n"
                      "none = Optional()\n"
                      "g = OptionalGetElement(none)\n"
                      "output g = g:0\n",
                      1, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})),
            "OptionalGetElement on an empty optional");
  free_outs(o, 1);
  CHECK_ERR(run_graph("framework onnx\n"
                      "input x: float[2]\n"
                      "input i: int32[1]\n"
                      "s = SequenceConstruct(x)\n"
                      "t = SequenceInsert(s, i)\n"
                      "n = SequenceLength(t)\n"
                      "output n = n:0\n",
                      1, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "i",
                      vec(GRAPH_DT_INT32, 1, (double[]){1})),
            "the sequence holds float tensors");
  free_outs(o, 1);
  CHECK_ERR(run_graph("framework onnx\n"
                      "input x: float[2]\n"
                      "n = SequenceLength(x)\n"
                      "output n = n:0\n",
                      1, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})),
            "input 0 must be a sequence");
  free_outs(o, 1);
}

TEST_MAIN(TEST(test_insert_erase_at_follow_positions_and_keep_inputs),
          TEST(test_split_to_sequence_and_concat_round_trip), TEST(test_sequence_carried_through_loop_and_if),
          TEST(test_optional_has_and_get_element), TEST(test_errors_name_position_and_empty_optional),
          TEST(test_sequence_map_runs_the_body_per_element))
