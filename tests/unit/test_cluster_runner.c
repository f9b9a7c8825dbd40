/* Unit tests for kiln.Cluster call nodes (src/exec/cluster_runner.c): encapsulated
 * clusters written by hand in the graph text format -- a function body plus a call node
 * -- run next to the same nodes left un-encapsulated in the root graph, which the
 * executor runs op by op; every result must be bitwise identical. Around that the
 * tests check the compile cache and its policies through the executor's statistics
 * (compile on the first run, lazy second-request compiles, must_compile, the
 * megamorphic cut-off, constant arguments keyed by value), the UNIMPLEMENTED fallback
 * and its single warning, compile-time evaluation of a must-be-constant input computed
 * inside the cluster, resource variables updated across runs, dumps, and errors that
 * name the cluster -- including a device whose compile says UNIMPLEMENTED (tests/plugin's tiny
 * plugins, built next to this executable) and one whose execute fails, after which
 * the variables the cluster writes must be unchanged. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "check.h"
#include "check_util.h"
#include "exec/executor.h"
#include "graph/graph.h"

static executor *new_ok(graph *g, const executor_options *opts) {
  executor *e = NULL;
  kiln_status s = executor_new(g, opts, &e);
  if (s) {
    check_fail(__FILE__, __LINE__, "executor_new", kiln_status_message(s));
    kiln_status_free(s);
    return NULL;
  }
  return e;
}

/* Deterministic values with fractional parts, so rounding differences would show. */
static graph_tensor *ramp(graph_dtype dtype, int rank, const int64_t *dims, double seed) {
  graph_tensor *t = NULL;
  if (tensor_create(dtype, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->n; i++) tensor_set_f64(t, i, 2.5 * sin(0.37 * (double)i + seed));
  return t;
}

static graph_tensor *vec_of(graph_dtype dtype, int n, const double *v) {
  graph_tensor *t = NULL;
  int64_t d = n;
  if (tensor_create(dtype, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++) tensor_set_f64(t, i, v[i]);
  return t;
}

static graph_tensor *vec1(int64_t n, double seed) { return ramp(GRAPH_DT_FLOAT, 1, &n, seed); }
static graph_tensor *mat(int64_t r, int64_t c, double seed) { return ramp(GRAPH_DT_FLOAT, 2, (int64_t[]){r, c}, seed); }

static bool same_bits(const graph_tensor *a, const graph_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return memcmp(a->data, b->data, tensor_byte_size(a)) == 0;
}

/* ------------------------------------------------ cluster vs. op by op -------- */

/* The same computation encapsulated (cl) and un-encapsulated (ref). */
typedef struct pair {
  graph *gc, *gr;
  executor *ec, *er;
} pair;

static bool pair_open(pair *p, const char *cluster_text, const char *ref_text) {
  *p = (pair){0};
  p->gc = check_parse_graph(cluster_text);
  p->gr = check_parse_graph(ref_text);
  /* Both on the reference device, so the comparison checks the cluster runner rather
   * than how a backend fuses. */
  executor_options opts = {.device = "interpreter"};
  p->ec = new_ok(p->gc, &opts);
  p->er = new_ok(p->gr, &opts);
  return p->ec && p->er;
}

static void pair_close(pair *p) {
  executor_free(p->ec);
  executor_free(p->er);
  graph_free(p->gc);
  graph_free(p->gr);
}

/* Runs both graphs on the same feeds (released afterwards) and checks that every
 * result is bitwise equal. Returns whether both runs succeeded. */
static bool pair_run_at(int line, pair *p, int n_in, const char **names, graph_tensor **vals) {
  int n_out = p->gc->n_results;
  graph_tensor *oc[8] = {0}, *orf[8] = {0};
  bool ok = true;
  kiln_status s = executor_run(p->ec, n_in, names, vals, oc);
  if (s) {
    check_fail(__FILE__, line, "executor_run (cluster)", kiln_status_message(s));
    kiln_status_free(s);
    ok = false;
  }
  s = executor_run(p->er, n_in, names, vals, orf);
  if (s) {
    check_fail(__FILE__, line, "executor_run (reference)", kiln_status_message(s));
    kiln_status_free(s);
    ok = false;
  }
  for (int r = 0; ok && r < n_out; r++)
    if (!same_bits(oc[r], orf[r])) {
      char msg[64];
      snprintf(msg, sizeof msg, "result %d differs from op-by-op execution", r);
      check_fail(__FILE__, line, "same_bits", msg);
    }
  for (int r = 0; r < n_out; r++) {
    tensor_free(oc[r]);
    tensor_free(orf[r]);
  }
  for (int i = 0; i < n_in; i++) tensor_free(vals[i]);
  return ok;
}

#define PAIR_RUN1(p, n0, v0) pair_run_at(__LINE__, (p), 1, (const char *[]){n0}, (graph_tensor *[]){v0})
#define PAIR_RUN2(p, n0, v0, n1, v1) \
  pair_run_at(__LINE__, (p), 2, (const char *[]){n0, n1}, (graph_tensor *[]){v0, v1})

static const executor_stats *stats(const pair *p) { return executor_get_stats(p->ec); }

/* --------------------------------------------------------- stderr capture ----- */

/* Warnings go to stderr; the fallback tests read them back. */
typedef struct capture {
  int saved_fd;
  FILE *file;
} capture;

static void capture_begin(capture *c) {
  fflush(stderr);
  c->file = tmpfile();
  if (!c->file) abort();
  c->saved_fd = dup(fileno(stderr));
  dup2(fileno(c->file), fileno(stderr));
}

/* Ends the capture; returns what was written (malloc'ed). */
static char *capture_end(capture *c) {
  fflush(stderr);
  dup2(c->saved_fd, fileno(stderr));
  close(c->saved_fd);
  long n = ftell(c->file);
  char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
  if (!text) abort();
  rewind(c->file);
  if (n > 0 && fread(text, 1, (size_t)n, c->file) != (size_t)n) text[0] = 0;
  fclose(c->file);
  return text;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* ------------------------------------------------------------- math body ------ */

static const char mlp_cluster[] =
    "framework tf\n"
    "graph mlp {\n"
    "  input x: float[?,?]\n"
    "  input w: float[?,?]\n"
    "  mm = MatMul[T=float, transpose_a=false, transpose_b=false](x, w)\n"
    "  ex = Exp[T=float](mm)\n"
    "  axis = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"
    "  s = Sum[T=float, Tidx=int32, keep_dims=true](ex, axis)\n"
    "  d = RealDiv[T=float](ex, s)\n"
    "  t = Tanh[T=float](mm)\n"
    "  output soft = d:0\n"
    "  output tanh = t:0\n"
    "}\n"
    "input x: float[?,?]\n"
    "input w: float[?,?]\n"
    "c = kiln.Cluster[function=@mlp, n_constants=0, n_resources=0](x, w) -> (float, float)\n"
    "output soft = c:0\n"
    "output tanh = c:1\n";

static const char mlp_ref[] =
    "framework tf\n"
    "input x: float[?,?]\n"
    "input w: float[?,?]\n"
    "mm = MatMul[T=float, transpose_a=false, transpose_b=false](x, w)\n"
    "ex = Exp[T=float](mm)\n"
    "axis = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"
    "s = Sum[T=float, Tidx=int32, keep_dims=true](ex, axis)\n"
    "d = RealDiv[T=float](ex, s)\n"
    "t = Tanh[T=float](mm)\n"
    "output soft = d:0\n"
    "output tanh = t:0\n";

static void test_bitwise_and_compile_once(void) {
  pair p;
  if (!pair_open(&p, mlp_cluster, mlp_ref)) goto done;
  PAIR_RUN2(&p, "x", mat(3, 4, 0.1), "w", mat(4, 5, 0.9));
  CHECK(stats(&p)->cluster_runs == 1);
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->cluster_cache_hits == 0);
  CHECK(stats(&p)->compiles == 0); /* no single-op module: the whole body is one */
  CHECK(stats(&p)->cluster_compile_ms > 0);
  PAIR_RUN2(&p, "x", mat(3, 4, 2.0), "w", mat(4, 5, -1.0));
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_cache_hits == 1);
  CHECK(stats(&p)->cluster_runs == 2);
done:
  pair_close(&p);
}

/* An ONNX body whose Reshape takes its shape from a Constant inside the cluster; the
 * call node names its device. */
static const char onnx_cluster[] =
    "framework onnx\n"
    "graph onnx_body {\n"
    "  input x: float[?]\n"
    "  input b: float[?,?]\n"
    "  k = Constant[value=tensor<int64[2]>{2, 3}]()\n"
    "  r = Reshape(x, k)\n"
    "  a = Add(r, b)\n"
    "  y = Relu(a)\n"
    "  t = Transpose[perm=[1, 0]](y)\n"
    "  mm = MatMul(y, t)\n"
    "  sg = Sigmoid(mm)\n"
    "  output y = y:0\n"
    "  output sg = sg:0\n"
    "}\n"
    "input x: float[?]\n"
    "input b: float[?,?]\n"
    "c = kiln.Cluster[function=@onnx_body, n_constants=0, n_resources=0, assigned_device=interpreter](x, b) "
    "-> (float, float)\n"
    "output y = c:0\n"
    "output sg = c:1\n";

static const char onnx_ref[] =
    "framework onnx\n"
    "input x: float[?]\n"
    "input b: float[?,?]\n"
    "k = Constant[value=tensor<int64[2]>{2, 3}]()\n"
    "r = Reshape(x, k)\n"
    "a = Add(r, b)\n"
    "y = Relu(a)\n"
    "t = Transpose[perm=[1, 0]](y)\n"
    "mm = MatMul(y, t)\n"
    "sg = Sigmoid(mm)\n"
    "output y = y:0\n"
    "output sg = sg:0\n";

static void test_onnx_body(void) {
  pair p;
  if (!pair_open(&p, onnx_cluster, onnx_ref)) goto done;
  PAIR_RUN2(&p, "x", vec1(6, 0.3), "b", mat(2, 3, 1.7));
  PAIR_RUN2(&p, "x", vec1(6, 2.3), "b", mat(1, 3, -0.2)); /* broadcast b: a new signature */
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 1);
done:
  pair_close(&p);
}

/* ------------------------------------------------------------ policies -------- */

#define SQUASH_BODY                          \
  "graph squash {\n"                         \
  "  input x: float[?]\n"                    \
  "  sq = Mul[T=float](x, x)\n"              \
  "  sn = Sin[T=float](sq)\n"                \
  "  out = AddV2[T=float](sn, x)\n"          \
  "  output y = out:0\n"                     \
  "}\n"

static const char squash_lazy[] =
    "framework tf\n" SQUASH_BODY
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@squash, n_constants=0, n_resources=0](x) -> (float[?])\n"
    "output y = c:0\n";

static const char squash_must[] =
    "framework tf\n" SQUASH_BODY
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@squash, must_compile=true, n_constants=0, n_resources=0](x) -> (float[?])\n"
    "output y = c:0\n";

static const char squash_ref[] =
    "framework tf\n"
    "input x: float[?]\n"
    "sq = Mul[T=float](x, x)\n"
    "sn = Sin[T=float](sq)\n"
    "out = AddV2[T=float](sn, x)\n"
    "output y = out:0\n";

static void test_lazy_second_request(void) {
  pair p;
  if (!pair_open(&p, squash_lazy, squash_ref)) goto done;
  PAIR_RUN1(&p, "x", vec1(3, 0.2)); /* first execution of the cluster: compiles */
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 0);
  PAIR_RUN1(&p, "x", vec1(5, 0.4)); /* new signature, first request: op by op */
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 1);
  CHECK(stats(&p)->compiles > 0); /* the body's ops ran as single-op modules */
  PAIR_RUN1(&p, "x", vec1(5, 0.6)); /* second request: compiles */
  CHECK(stats(&p)->cluster_compiles == 2 && stats(&p)->cluster_fallback_runs == 1);
  PAIR_RUN1(&p, "x", vec1(5, 0.8));
  PAIR_RUN1(&p, "x", vec1(3, 1.0));
  CHECK(stats(&p)->cluster_compiles == 2 && stats(&p)->cluster_cache_hits == 2);
  CHECK(stats(&p)->cluster_runs == 5);
done:
  pair_close(&p);
}

static void test_must_compile(void) {
  pair p;
  if (!pair_open(&p, squash_must, squash_ref)) goto done;
  PAIR_RUN1(&p, "x", vec1(3, 0.2));
  PAIR_RUN1(&p, "x", vec1(5, 0.4));
  PAIR_RUN1(&p, "x", vec1(7, 0.4));
  CHECK(stats(&p)->cluster_compiles == 3);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->compiles == 0);
  /* An explicit compile scope keeps compiling past the megamorphic cut-off, as TF's
   * strict mode does. */
  for (int n = 8; n <= 20; n++) PAIR_RUN1(&p, "x", vec1(n, 0.1 * n));
  CHECK(stats(&p)->cluster_compiles == 16);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
done:
  pair_close(&p);
}

static void test_megamorphic(void) {
  pair p;
  if (!pair_open(&p, squash_lazy, squash_ref)) goto done;
  PAIR_RUN1(&p, "x", vec1(1, 0.0));
  for (int n = 2; n <= 11; n++) { /* lazy: two requests per new signature */
    PAIR_RUN1(&p, "x", vec1(n, 0.1 * n));
    PAIR_RUN1(&p, "x", vec1(n, 0.2 * n));
  }
  CHECK(stats(&p)->cluster_compiles == 11);
  CHECK(stats(&p)->cluster_fallback_runs == 10);
  /* 11 compiles > 10 in 21 executions < 50 x 11: megamorphic, so new signatures stay op
   * by op however often they come. */
  for (int k = 0; k < 3; k++) PAIR_RUN1(&p, "x", vec1(12, k));
  CHECK(stats(&p)->cluster_compiles == 11);
  CHECK(stats(&p)->cluster_fallback_runs == 13);
  int64_t hits = stats(&p)->cluster_cache_hits;
  PAIR_RUN1(&p, "x", vec1(4, 3.0)); /* compiled signatures still hit */
  CHECK(stats(&p)->cluster_cache_hits == hits + 1);
  CHECK(stats(&p)->cluster_compiles == 11);
done:
  pair_close(&p);
}

/* ------------------------------------------------------ unimplemented body ----- */

static const char where_cluster[] =
    "framework tf\n"
    "graph with_where {\n"
    "  input x: float[?]\n"
    "  sq = Mul[T=float](x, x)\n"
    "  big = Greater[T=float](sq, half)\n"
    "  half = Const[dtype=float, value=tensor<float[]>{0.5}]()\n"
    "  idx = Where[T=bool](big)\n"
    "  output idx = idx:0\n"
    "  output sq = sq:0\n"
    "}\n"
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@with_where, n_constants=0, n_resources=0](x) -> (int64[?,1], float[?])\n"
    "output idx = c:0\n"
    "output sq = c:1\n";

static const char where_ref[] =
    "framework tf\n"
    "input x: float[?]\n"
    "sq = Mul[T=float](x, x)\n"
    "half = Const[dtype=float, value=tensor<float[]>{0.5}]()\n"
    "big = Greater[T=float](sq, half)\n"
    "idx = Where[T=bool](big)\n"
    "output idx = idx:0\n"
    "output sq = sq:0\n";

static void test_unimplemented_falls_back(void) {
  pair p;
  if (!pair_open(&p, where_cluster, where_ref)) goto done;
  capture cap;
  capture_begin(&cap);
  bool ok1 = PAIR_RUN1(&p, "x", vec1(9, 0.3));
  double ms = stats(&p)->cluster_compile_ms;
  bool ok2 = PAIR_RUN1(&p, "x", vec1(9, 1.3));
  char *err = capture_end(&cap);
  CHECK(ok1 && ok2);
  CHECK(stats(&p)->cluster_compiles == 0);
  CHECK(stats(&p)->cluster_fallback_runs == 2);
  CHECK(stats(&p)->cluster_compile_ms == ms); /* the decision is remembered */
  /* One warning for the signature, naming the cluster and the reason. */
  CHECK(count_of(err, "cluster with_where") == 1);
  CHECK(strstr(err, "node idx (tf.Where)") != NULL);
  free(err);
done:
  pair_close(&p);
}

/* ------------------------------------------------------ constant arguments ----- */

static const char reshape_cluster[] =
    "framework tf\n"
    "graph reshape_neg {\n"
    "  input shape: int32[2]\n"
    "  input x: float[?]\n"
    "  r = Reshape[T=float, Tshape=int32](x, shape)\n"
    "  n = Neg[T=float](r)\n"
    "  output y = n:0\n"
    "}\n"
    "input shape: int32[2]\n"
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@reshape_neg, must_compile=true, n_constants=1, n_resources=0](shape, x) -> (float)\n"
    "output y = c:0\n";

static const char reshape_ref[] =
    "framework tf\n"
    "input shape: int32[2]\n"
    "input x: float[?]\n"
    "r = Reshape[T=float, Tshape=int32](x, shape)\n"
    "n = Neg[T=float](r)\n"
    "output y = n:0\n";

static void test_constant_args_by_value(void) {
  pair p;
  if (!pair_open(&p, reshape_cluster, reshape_ref)) goto done;
  PAIR_RUN2(&p, "shape", vec_of(GRAPH_DT_INT32, 2, (double[]){2, 3}), "x", vec1(6, 0.5));
  CHECK(stats(&p)->cluster_compiles == 1);
  PAIR_RUN2(&p, "shape", vec_of(GRAPH_DT_INT32, 2, (double[]){3, 2}), "x", vec1(6, 0.5));
  CHECK(stats(&p)->cluster_compiles == 2);
  PAIR_RUN2(&p, "shape", vec_of(GRAPH_DT_INT32, 2, (double[]){2, 3}), "x", vec1(6, 0.7));
  CHECK(stats(&p)->cluster_compiles == 2 && stats(&p)->cluster_cache_hits == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  /* The output really has the shape of the value given. */
  graph_tensor *o[1] = {0};
  graph_tensor *in[2] = {vec_of(GRAPH_DT_INT32, 2, (double[]){3, 2}), vec1(6, 0.5)};
  CHECK_OK(executor_run(p.ec, 2, (const char *[]){"shape", "x"}, in, o));
  CHECK(o[0] && o[0]->rank == 2 && o[0]->dims[0] == 3 && o[0]->dims[1] == 2);
  tensor_free(o[0]);
  tensor_free(in[0]);
  tensor_free(in[1]);
done:
  pair_close(&p);
}

/* --------------------------------------- must-be-constant computed inside ----- */

static const char shape_inside_cluster[] =
    "framework tf\n"
    "graph like {\n"
    "  input x: float[?,?]\n"
    "  input y: float[?]\n"
    "  s = Shape[T=float, out_type=int32](x)\n"
    "  r = Reshape[T=float, Tshape=int32](y, s)\n"
    "  a = AddV2[T=float](r, x)\n"
    "  output z = a:0\n"
    "}\n"
    "input x: float[?,?]\n"
    "input y: float[?]\n"
    "c = kiln.Cluster[function=@like, n_constants=0, n_resources=0](x, y) -> (float)\n"
    "output z = c:0\n";

static const char shape_inside_ref[] =
    "framework tf\n"
    "input x: float[?,?]\n"
    "input y: float[?]\n"
    "s = Shape[T=float, out_type=int32](x)\n"
    "r = Reshape[T=float, Tshape=int32](y, s)\n"
    "a = AddV2[T=float](r, x)\n"
    "output z = a:0\n";

/* The shape operand is a runtime argument of the cluster: only the safety net can
 * catch it, and the cluster runs op by op. */
static const char runtime_shape_cluster[] =
    "framework tf\n"
    "graph dyn {\n"
    "  input x: float[?]\n"
    "  input shape: int32[2]\n"
    "  i = Identity[T=int32](shape)\n"
    "  r = Reshape[T=float, Tshape=int32](x, i)\n"
    "  output y = r:0\n"
    "}\n"
    "input x: float[?]\n"
    "input shape: int32[2]\n"
    "c = kiln.Cluster[function=@dyn, n_constants=0, n_resources=0](x, shape) -> (float)\n"
    "output y = c:0\n";

static const char runtime_shape_ref[] =
    "framework tf\n"
    "input x: float[?]\n"
    "input shape: int32[2]\n"
    "i = Identity[T=int32](shape)\n"
    "r = Reshape[T=float, Tshape=int32](x, i)\n"
    "output y = r:0\n";

static void test_constant_input_computed_inside(void) {
  pair p;
  if (pair_open(&p, shape_inside_cluster, shape_inside_ref)) {
    PAIR_RUN2(&p, "x", mat(2, 3, 0.1), "y", vec1(6, 0.9));
    CHECK(stats(&p)->cluster_compiles == 1);
    CHECK(stats(&p)->cluster_fallback_runs == 0);
  }
  pair_close(&p);

  if (!pair_open(&p, runtime_shape_cluster, runtime_shape_ref)) goto done;
  capture cap;
  capture_begin(&cap);
  bool ok = PAIR_RUN2(&p, "x", vec1(6, 0.2), "shape", vec_of(GRAPH_DT_INT32, 2, (double[]){3, 2}));
  char *err = capture_end(&cap);
  CHECK(ok);
  CHECK(stats(&p)->cluster_compiles == 0 && stats(&p)->cluster_fallback_runs == 1);
  CHECK(strstr(err, "input 1 of node r must be a compile-time constant but depends on runtime value of argument "
                    "shape") != NULL);
  free(err);
done:
  pair_close(&p);
}

/* ------------------------------------------------------------- resources ------ */

/* The first run initializes the counter to zeros outside the cluster; every run adds x
 * inside it and reads the sum back. */
#define COUNTER_INIT                                                                  \
  "v = VarHandleOp[container=\"\", dtype=float, shape=<2>, shared_name=\"counter\"]() -> (resource[])\n" \
  "init = VarIsInitializedOp(v)\n"                                                    \
  "zeros = Const[dtype=float, value=tensor<float[2]>{0, 0}]()\n"                      \
  "sw = Switch[T=float](zeros, init) -> (float[2], float[2])\n"                       \
  "assign = AssignVariableOp[dtype=float](v, sw:0) -> ()\n"                           \
  "ready = ControlTrigger() @ assign\n"

static const char counter_cluster[] =
    "framework tf\n"
    "graph count {\n"
    "  input x: float[2]\n"
    "  input h: resource[]\n"
    "  add = AssignAddVariableOp[dtype=float](h, x) -> ()\n"
    "  sub = AssignSubVariableOp[dtype=float](h, x3) @ add\n"
    "  x3 = Mul[T=float](x, third)\n"
    "  third = Const[dtype=float, value=tensor<float[]>{0.333}]()\n"
    "  r = ReadVariableOp[dtype=float](h) @ sub\n"
    "  output r = r:0\n"
    "}\n"
    "input x: float[2]\n" COUNTER_INIT
    "c = kiln.Cluster[function=@count, n_constants=0, n_resources=1](x, v) @ ready -> (float[2])\n"
    "output value = c:0\n";

static const char counter_ref[] =
    "framework tf\n"
    "input x: float[2]\n" COUNTER_INIT
    "add = AssignAddVariableOp[dtype=float](v, x) @ ready -> ()\n"
    "third = Const[dtype=float, value=tensor<float[]>{0.333}]()\n"
    "x3 = Mul[T=float](x, third)\n"
    "sub = AssignSubVariableOp[dtype=float](v, x3) @ add -> ()\n"
    "r = ReadVariableOp[dtype=float](v) @ sub\n"
    "output value = r:0\n";

static void test_resource_counter(void) {
  pair p;
  if (!pair_open(&p, counter_cluster, counter_ref)) goto done;
  graph_tensor *o[1] = {0};
  for (int k = 1; k <= 3; k++) {
    PAIR_RUN1(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){0.1, 0.7}));
  }
  CHECK(stats(&p)->cluster_runs == 3);
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_cache_hits == 2);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  /* A fourth run shows the stored value: three updates, then this one. */
  graph_tensor *zero = vec_of(GRAPH_DT_FLOAT, 2, (double[]){0, 0});
  CHECK_OK(executor_run(p.ec, 1, (const char *[]){"x"}, &zero, o));
  tensor_free(zero);
  float want0 = 0, want1 = 0;
  for (int k = 0; k < 3; k++) {
    want0 = (want0 + 0.1f) - 0.1f * 0.333f;
    want1 = (want1 + 0.7f) - 0.7f * 0.333f;
  }
  CHECK(o[0] && o[0]->n == 2 && ((float *)o[0]->data)[0] == want0 && ((float *)o[0]->data)[1] == want1);
  tensor_free(o[0]);
done:
  pair_close(&p);
}

/* A cluster without results whose only effect is a variable update, ordered by a
 * control edge outside it; y's length changes the signature, so runs alternate
 * between the compiled module and the op-by-op body (lazy first request). */
#define BUMP_INIT                                                                     \
  "v = VarHandleOp[container=\"\", dtype=float, shape=<2>, shared_name=\"acc\"]() -> (resource[])\n" \
  "init = VarIsInitializedOp(v)\n"                                                    \
  "zeros = Const[dtype=float, value=tensor<float[2]>{0, 0}]()\n"                      \
  "sw = Switch[T=float](zeros, init) -> (float[2], float[2])\n"                       \
  "assign = AssignVariableOp[dtype=float](v, sw:0) -> ()\n"                           \
  "ready = ControlTrigger() @ assign\n"

static const char bump_cluster[] =
    "framework tf\n"
    "graph bump {\n"
    "  input x: float[2]\n"
    "  input y: float[?]\n"
    "  input h: resource[]\n"
    "  axis = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "  s = Sum[T=float, Tidx=int32, keep_dims=false](y, axis)\n"
    "  xs = Mul[T=float](x, s)\n"
    "  add = AssignAddVariableOp[dtype=float](h, xs) -> ()\n"
    "}\n"
    "input x: float[2]\n"
    "input y: float[?]\n" BUMP_INIT
    "c = kiln.Cluster[function=@bump, n_constants=0, n_resources=1](x, y, v) @ ready -> ()\n"
    "r = ReadVariableOp[dtype=float](v) @ c\n"
    "output value = r:0\n";

static const char bump_ref[] =
    "framework tf\n"
    "input x: float[2]\n"
    "input y: float[?]\n" BUMP_INIT
    "axis = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "s = Sum[T=float, Tidx=int32, keep_dims=false](y, axis)\n"
    "xs = Mul[T=float](x, s)\n"
    "add = AssignAddVariableOp[dtype=float](v, xs) @ ready -> ()\n"
    "r = ReadVariableOp[dtype=float](v) @ add\n"
    "output value = r:0\n";

static void test_write_only_cluster(void) {
  pair p;
  if (!pair_open(&p, bump_cluster, bump_ref)) goto done;
  PAIR_RUN2(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){0.1, 0.3}), "y", vec1(3, 0.5));
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 0);
  PAIR_RUN2(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){0.7, -0.2}), "y", vec1(4, 0.5));
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 1);
  PAIR_RUN2(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){0.3, 0.9}), "y", vec1(4, 1.5));
  PAIR_RUN2(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){-0.4, 0.6}), "y", vec1(3, 2.5));
  CHECK(stats(&p)->cluster_compiles == 2 && stats(&p)->cluster_cache_hits == 1);
  CHECK(stats(&p)->cluster_runs == 4);
done:
  pair_close(&p);
}

/* --------------------------------------------------------------- errors ------- */

static void test_errors_name_the_cluster(void) {
  graph *g = check_parse_graph(mlp_cluster);
  executor *e = new_ok(g, NULL);
  if (!e) goto done;
  graph_tensor *o[2] = {0};
  /* Inner dimensions differ: the lowering rejects it, naming the cluster and device. */
  graph_tensor *bad[2] = {mat(3, 4, 0), mat(5, 2, 0)};
  kiln_status s = executor_run(e, 2, (const char *[]){"x", "w"}, bad, o);
  CHECK_ERR(s, "cluster mlp on device");
  CHECK(o[0] == NULL && o[1] == NULL);
  tensor_free(bad[0]);
  tensor_free(bad[1]);
  /* The executor is still usable. */
  graph_tensor *good[2] = {mat(3, 4, 0), mat(4, 2, 0)};
  CHECK_OK(executor_run(e, 2, (const char *[]){"x", "w"}, good, o));
  CHECK(o[0] && o[0]->rank == 2 && o[0]->dims[0] == 3 && o[0]->dims[1] == 2);
  tensor_free(o[0]);
  tensor_free(o[1]);
  tensor_free(good[0]);
  tensor_free(good[1]);
done:
  executor_free(e);
  graph_free(g);

  /* A call node whose argument counts do not fit its inputs. */
  g = check_parse_graph(
      "framework tf\n" SQUASH_BODY
      "input x: float[?]\n"
      "c = kiln.Cluster[function=@squash, n_constants=2, n_resources=0](x) -> (float[?])\n"
      "output y = c:0\n");
  e = new_ok(g, NULL);
  if (e) {
    graph_tensor *x = vec1(3, 0);
    CHECK_ERR(executor_run(e, 1, (const char *[]){"x"}, &x, o), "cluster squash: n_constants=2");
    tensor_free(x);
  }
  executor_free(e);
  graph_free(g);

  /* A variable the cluster reads but nobody initialized. */
  g = check_parse_graph(
      "framework tf\n"
      "graph readv {\n"
      "  input h: resource[]\n"
      "  r = ReadVariableOp[dtype=float](h)\n"
      "  output r = r:0\n"
      "}\n"
      "v = VarHandleOp[dtype=float, shape=<>, shared_name=\"nothing\"]() -> (resource[])\n"
      "c = kiln.Cluster[function=@readv, n_constants=0, n_resources=1](v) -> (float)\n"
      "output r = c:0\n");
  e = new_ok(g, NULL);
  char want[128];
  snprintf(want, sizeof want, "cluster readv on device %s: variable /nothing is read", backend_default()->name);
  if (e) CHECK_ERR(executor_run(e, 0, NULL, NULL, o), want);
  executor_free(e);
  graph_free(g);
}

/* ---------------------------------------------------------------- dumps ------- */

static void test_dump(void) {
  char dir[] = "/tmp/kiln_cluster_dump_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  graph *g = check_parse_graph(mlp_cluster);
  executor_options opts = {.dump_dir = dir};
  executor *e = new_ok(g, &opts);
  if (e) {
    graph_tensor *o[2] = {0};
    graph_tensor *in[2] = {mat(2, 2, 0), mat(2, 2, 1)};
    CHECK_OK(executor_run(e, 2, (const char *[]){"x", "w"}, in, o));
    for (int i = 0; i < 2; i++) {
      tensor_free(in[i]);
      tensor_free(o[i]);
    }
  }
  char path[128];
  snprintf(path, sizeof path, "%s/cluster_0000.mlp.hlo", dir);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (f) {
    char text[4096] = {0};
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    CHECK(n > 0 && strstr(text, "HloModule") != NULL && strstr(text, "dot(") != NULL);
    remove(path);
  }
  rmdir(dir);
  executor_free(e);
  graph_free(g);
}

/* ------------------------------------------------------- failing devices ----- */


/* The counter cluster placed on the example plugin, a device with memory of its own: the
 * variable crosses to the device once, stays there (the cluster's own update becomes its
 * resident copy), and each later run moves only x in and the results out. The values
 * equal the op-by-op reference bit for bit (the example plugin runs kiln's evaluator). */
static const char counter_on_example[] =
    "framework tf\n"
    "graph count {\n"
    "  input x: float[2]\n"
    "  input h: resource[]\n"
    "  add = AssignAddVariableOp[dtype=float](h, x) -> ()\n"
    "  sub = AssignSubVariableOp[dtype=float](h, x3) @ add\n"
    "  x3 = Mul[T=float](x, third)\n"
    "  third = Const[dtype=float, value=tensor<float[]>{0.333}]()\n"
    "  r = ReadVariableOp[dtype=float](h) @ sub\n"
    "  output r = r:0\n"
    "}\n"
    "input x: float[2]\n" COUNTER_INIT
    "c = kiln.Cluster[function=@count, n_constants=0, n_resources=1, assigned_device=example](x, v) @ ready "
    "-> (float[2])\n"
    "output value = c:0\n";

static void test_variables_stay_on_the_device(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) abort();
  exe[n] = 0;
  char plugin_dir[4200];
  snprintf(plugin_dir, sizeof plugin_dir, "%s/../plugins/example", dirname(exe));
  setenv("KILN_PLUGIN_PATH", plugin_dir, 1);
  backend_registry_reset();
  pair p = {0};
  const backend *dev = backend_find("example");
  if (!dev) {
    check_fail(__FILE__, __LINE__, "backend_find", "the example plugin did not load (is it built?)");
    goto done;
  }
  CHECK(backend_has_device_memory(dev));
  if (!pair_open(&p, counter_on_example, counter_ref)) goto done;
  int64_t to_dev[4], to_host[4];
  for (int k = 0; k < 4; k++) {
    PAIR_RUN1(&p, "x", vec_of(GRAPH_DT_FLOAT, 2, (double[]){0.1 * (k + 1), 0.7}));
    to_dev[k] = stats(&p)->bytes_to_device;
    to_host[k] = stats(&p)->bytes_to_host;
  }
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_fallback_runs == 0);
  /* First run: x and the variable (8 bytes each) go to the device. */
  CHECK(to_dev[0] == 16);
  /* Later runs: x only; every run brings back the result and the variable's new value. */
  for (int k = 1; k < 4; k++) {
    CHECK(to_dev[k] - to_dev[k - 1] == 8);
    CHECK(to_host[k] - to_host[k - 1] == 16);
  }
done:
  pair_close(&p);
  unsetenv("KILN_PLUGIN_PATH");
  backend_registry_reset();
}

static char plugin_tmp[] = "/tmp/kiln_cluster_plugins_XXXXXX";

/* Writes a manifest for tests/plugin's tiny_MODE library into plugin_tmp. */
static void write_tiny_manifest(const char *plugin_dir, const char *mode) {
  char path[4400];
  snprintf(path, sizeof path, "%s/tiny_%s.kiln-plugin.json", plugin_tmp, mode);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fprintf(f,
          "{\"name\": \"tiny_%s\", \"library\": \"%s/libtiny_%s.so\", \"abi\": {\"major\": 1, \"minor\": 0}, "
          "\"devices\": [\"tiny_%s\"], \"priority\": 30}\n",
          mode, plugin_dir, mode, mode);
  fclose(f);
}

static void remove_tiny_manifest(const char *mode) {
  char path[4400];
  snprintf(path, sizeof path, "%s/tiny_%s.kiln-plugin.json", plugin_tmp, mode);
  remove(path);
}

static const char squash_on_failing_compile[] =
    "framework tf\n" SQUASH_BODY
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@squash, n_constants=0, n_resources=0, assigned_device=tiny_compile_unimplemented](x) "
    "-> (float[?])\n"
    "output y = c:0\n";

/* The cluster runs only when p is true; the variable is read outside it either way. */
static const char counter_on_failing_device[] =
    "framework tf\n"
    "graph count {\n"
    "  input x: float[2]\n"
    "  input h: resource[]\n"
    "  add = AssignAddVariableOp[dtype=float](h, x) -> ()\n"
    "  r = ReadVariableOp[dtype=float](h) @ add\n"
    "  output r = r:0\n"
    "}\n"
    "input x: float[2]\n"
    "input p: bool[]\n" COUNTER_INIT
    "gate = Switch[T=float](x, p) -> (float[2], float[2])\n"
    "c = kiln.Cluster[function=@count, n_constants=0, n_resources=1, assigned_device=tiny_exec_error](gate:1, v) "
    "@ ready -> (float[2])\n"
    "after = ControlTrigger() @ c\n"
    "r = ReadVariableOp[dtype=float](v) @ after\n"
    "output value = r:0\n";

static void test_failing_devices(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0 || !mkdtemp(plugin_tmp)) abort();
  exe[n] = 0;
  char plugin_dir[4200];
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugin", dirname(exe));
  write_tiny_manifest(plugin_dir, "compile_unimplemented");
  write_tiny_manifest(plugin_dir, "exec_error");
  setenv("KILN_PLUGIN_PATH", plugin_tmp, 1);
  backend_registry_reset();
  pair p = {0};
  graph *g = NULL;
  executor *e = NULL;
  if (!backend_find("tiny_compile_unimplemented") || !backend_find("tiny_exec_error")) {
    check_fail(__FILE__, __LINE__, "backend_find", "the tiny test plugins did not load (are they built?)");
    goto done;
  }

  /* A compile the cluster's device answers with UNIMPLEMENTED (the plugin ABI's "not on
   * this device"): one warning naming cluster, device and reason, then op by op. */
  if (pair_open(&p, squash_on_failing_compile, squash_ref)) {
    capture cap;
    capture_begin(&cap);
    bool ok = PAIR_RUN1(&p, "x", vec1(4, 0.5));
    ok = PAIR_RUN1(&p, "x", vec1(4, 0.9)) && ok;
    char *err = capture_end(&cap);
    CHECK(ok);
    CHECK(stats(&p)->cluster_compiles == 0 && stats(&p)->cluster_fallback_runs == 2);
    CHECK(count_of(err, "cluster squash cannot be compiled for device tiny_compile_unimplemented") == 1);
    CHECK(strstr(err, "tiny device does not do this module") != NULL);
    free(err);
  }

  /* An execute failure: an error naming cluster and device, the variable keeps its
   * value, the executor keeps working. */
  g = check_parse_graph(counter_on_failing_device);
  executor_options opts = {.device = "interpreter"};
  e = new_ok(g, &opts);
  if (!e) goto done;
  graph_tensor *o[1] = {0};
  graph_tensor *in[2] = {vec_of(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), NULL};
  if (tensor_create_scalar(GRAPH_DT_BOOL, &in[1])) abort();
  tensor_set_f64(in[1], 0, 1);
  CHECK_ERR(executor_run(e, 2, (const char *[]){"x", "p"}, in, o), "cluster count on device tiny_exec_error");
  tensor_set_f64(in[1], 0, 0);
  CHECK_OK(executor_run(e, 2, (const char *[]){"x", "p"}, in, o));
  CHECK(o[0] && o[0]->n == 2 && tensor_get_f64(o[0], 0) == 0 && tensor_get_f64(o[0], 1) == 0);
  tensor_free(o[0]);
  tensor_free(in[0]);
  tensor_free(in[1]);
done:
  executor_free(e);
  graph_free(g);
  pair_close(&p);
  unsetenv("KILN_PLUGIN_PATH");
  backend_registry_reset();
  remove_tiny_manifest("compile_unimplemented");
  remove_tiny_manifest("exec_error");
  rmdir(plugin_tmp);
}

/* ------------------------------------------------ functional control flow ----- */

/* Clusters holding TF2 functional While/If: the same nodes run op by op in the
 * reference graph (the executor's tf.StatelessWhile/StatelessIf natives). */

static graph_tensor *scalar_of(graph_dtype dtype, double v) {
  graph_tensor *t = NULL;
  if (tensor_create_scalar(dtype, &t)) abort();
  tensor_set_f64(t, 0, v);
  return t;
}

#define PAIR_RUN4(p, n0, v0, n1, v1, n2, v2, n3, v3) \
  pair_run_at(__LINE__, (p), 4, (const char *[]){n0, n1, n2, n3}, (graph_tensor *[]){v0, v1, v2, v3})

/* An RNN step counted to n: h = tanh(h w + x). */
#define RNN_FUNCTIONS                                                   \
  "graph rnn_cond {\n"                                                  \
  "  input i: int32[]\n"                                                \
  "  input n: int32[]\n"                                                \
  "  input h: float[?,?]\n"                                             \
  "  input w: float[?,?]\n"                                             \
  "  input x: float[?,?]\n"                                             \
  "  l = Less[T=int32](i, n)\n"                                         \
  "  output r = l:0\n"                                                  \
  "}\n"                                                                 \
  "graph rnn_body {\n"                                                  \
  "  input i: int32[]\n"                                                \
  "  input n: int32[]\n"                                                \
  "  input h: float[?,?]\n"                                             \
  "  input w: float[?,?]\n"                                             \
  "  input x: float[?,?]\n"                                             \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"            \
  "  i1 = AddV2[T=int32](i, one)\n"                                     \
  "  mm = MatMul[T=float, transpose_a=false, transpose_b=false](h, w)\n" \
  "  a = AddV2[T=float](mm, x)\n"                                       \
  "  t = Tanh[T=float](a)\n"                                            \
  "  output i = i1:0\n"                                                 \
  "  output n = n:0\n"                                                  \
  "  output h = t:0\n"                                                  \
  "  output w = w:0\n"                                                  \
  "  output x = x:0\n"                                                  \
  "}\n"

#define RNN_INPUTS  \
  "input n: int32[]\n" \
  "input h0: float[?,?]\n" \
  "input wt: float[?,?]\n" \
  "input x: float[?,?]\n"

#define RNN_NODES                                                                                  \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                        \
  "loop = StatelessWhile[body=@rnn_body, cond=@rnn_cond](zero, n, h0, wt, x) "                    \
  "-> (int32[], int32[], float[?,?], float[?,?], float[?,?])\n"                                   \
  "y = Sigmoid[T=float](loop:2)\n"

static const char rnn_cluster[] =
    "framework tf\n" RNN_FUNCTIONS
    "graph rnn {\n"
    "  " RNN_INPUTS RNN_NODES
    "  output y = y:0\n"
    "  output i = loop:0\n"
    "}\n" RNN_INPUTS
    "c = kiln.Cluster[function=@rnn, n_constants=0, n_resources=0](n, h0, wt, x) -> (float, int32)\n"
    "output y = c:0\n"
    "output i = c:1\n";

static const char rnn_ref[] =
    "framework tf\n" RNN_FUNCTIONS RNN_INPUTS RNN_NODES
    "output y = y:0\n"
    "output i = loop:0\n";

static void test_stateless_while_compiles_to_hlo_while(void) {
  pair p;
  if (!pair_open(&p, rnn_cluster, rnn_ref)) goto done;
  PAIR_RUN4(&p, "n", scalar_of(GRAPH_DT_INT32, 7), "h0", mat(2, 4, 0.3), "wt", mat(4, 4, 1.1), "x", mat(2, 4, 2.0));
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->compiles == 0); /* the loop's ops ran inside the one module */
  /* The trip count is a runtime value: another count reuses the module. */
  PAIR_RUN4(&p, "n", scalar_of(GRAPH_DT_INT32, 0), "h0", mat(2, 4, 0.5), "wt", mat(4, 4, 0.1), "x", mat(2, 4, 1.0));
  PAIR_RUN4(&p, "n", scalar_of(GRAPH_DT_INT32, 12), "h0", mat(2, 4, 0.5), "wt", mat(4, 4, 0.1), "x", mat(2, 4, 1.0));
  CHECK(stats(&p)->cluster_compiles == 1 && stats(&p)->cluster_cache_hits == 2);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
done:
  pair_close(&p);
}

/* StatelessIf on a float condition (TF's ToBool: nonzero, NaN included, is true) and
 * on a bool one, both branches taken. */
#define IF_FUNCTIONS                                                     \
  "graph if_then {\n"                                                    \
  "  input a: float[?,?]\n"                                              \
  "  input b: float[?,?]\n"                                              \
  "  mm = MatMul[T=float, transpose_a=false, transpose_b=false](a, b)\n" \
  "  output r = mm:0\n"                                                  \
  "}\n"                                                                  \
  "graph if_else {\n"                                                    \
  "  input a: float[?,?]\n"                                              \
  "  input b: float[?,?]\n"                                              \
  "  mm = MatMul[T=float, transpose_a=false, transpose_b=false](a, b)\n" \
  "  t = Tanh[T=float](mm)\n"                                            \
  "  ng = Neg[T=float](t)\n"                                             \
  "  output r = ng:0\n"                                                  \
  "}\n"

#define IF_INPUTS \
  "input p: float[]\n" \
  "input a: float[?,?]\n" \
  "input b: float[?,?]\n"

#define IF_NODES                                                                                          \
  "f = StatelessIf[Tcond=float, then_branch=@if_then, else_branch=@if_else](p, a, b) -> (float[?,?])\n"  \
  "zero = Const[dtype=float, value=tensor<float[]>{0}]()\n"                                               \
  "q = Less[T=float](p, zero)\n"                                                                          \
  "g = StatelessIf[Tcond=bool, then_branch=@if_then, else_branch=@if_else](q, f, b) -> (float[?,?])\n"

static const char if_cluster[] =
    "framework tf\n" IF_FUNCTIONS
    "graph branchy {\n"
    "  " IF_INPUTS IF_NODES
    "  output g = g:0\n"
    "}\n" IF_INPUTS
    "c = kiln.Cluster[function=@branchy, n_constants=0, n_resources=0](p, a, b) -> (float)\n"
    "output g = c:0\n";

static const char if_ref[] = "framework tf\n" IF_FUNCTIONS IF_INPUTS IF_NODES "output g = g:0\n";

static void test_stateless_if_compiles_to_hlo_conditional(void) {
  pair p;
  if (!pair_open(&p, if_cluster, if_ref)) goto done;
  double conds[] = {0.0, 2.5, -1.0, NAN, -0.0};
  for (int k = 0; k < 5; k++)
    pair_run_at(__LINE__, &p, 3, (const char *[]){"p", "a", "b"},
                (graph_tensor *[]){scalar_of(GRAPH_DT_FLOAT, conds[k]), mat(3, 3, 0.2 * k), mat(3, 3, 1.0 - k)});
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->compiles == 0);
done:
  pair_close(&p);
}

/* A loop inside a loop: the outer body runs the RNN loop m times. */
#define OUTER_FUNCTIONS                                                                          \
  "graph outer_cond {\n"                                                                         \
  "  input j: int32[]\n"                                                                         \
  "  input m: int32[]\n"                                                                         \
  "  input n: int32[]\n"                                                                         \
  "  input h: float[?,?]\n"                                                                      \
  "  input w: float[?,?]\n"                                                                      \
  "  input x: float[?,?]\n"                                                                      \
  "  l = Less[T=int32](j, m)\n"                                                                  \
  "  output r = l:0\n"                                                                           \
  "}\n"                                                                                          \
  "graph outer_body {\n"                                                                         \
  "  input j: int32[]\n"                                                                         \
  "  input m: int32[]\n"                                                                         \
  "  input n: int32[]\n"                                                                         \
  "  input h: float[?,?]\n"                                                                      \
  "  input w: float[?,?]\n"                                                                      \
  "  input x: float[?,?]\n"                                                                      \
  "  zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                    \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"                                     \
  "  j1 = AddV2[T=int32](j, one)\n"                                                              \
  "  inner = StatelessWhile[body=@rnn_body, cond=@rnn_cond](zero, n, h, w, x) "                  \
  "-> (int32[], int32[], float[?,?], float[?,?], float[?,?])\n"                                  \
  "  half = Const[dtype=float, value=tensor<float[]>{0.5}]()\n"                                  \
  "  hs = Mul[T=float](inner:2, half)\n"                                                         \
  "  output j = j1:0\n"                                                                          \
  "  output m = m:0\n"                                                                           \
  "  output n = n:0\n"                                                                           \
  "  output h = hs:0\n"                                                                          \
  "  output w = w:0\n"                                                                           \
  "  output x = x:0\n"                                                                           \
  "}\n"

#define NESTED_INPUTS "input m: int32[]\n" RNN_INPUTS

#define NESTED_NODES                                                                    \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                             \
  "loop = StatelessWhile[body=@outer_body, cond=@outer_cond](zero, m, n, h0, wt, x) "  \
  "-> (int32[], int32[], int32[], float[?,?], float[?,?], float[?,?])\n"

static const char nested_cluster[] =
    "framework tf\n" RNN_FUNCTIONS OUTER_FUNCTIONS
    "graph nested {\n"
    "  " NESTED_INPUTS NESTED_NODES
    "  output h = loop:3\n"
    "}\n" NESTED_INPUTS
    "c = kiln.Cluster[function=@nested, n_constants=0, n_resources=0](m, n, h0, wt, x) -> (float)\n"
    "output h = c:0\n";

static const char nested_ref[] =
    "framework tf\n" RNN_FUNCTIONS OUTER_FUNCTIONS NESTED_INPUTS NESTED_NODES "output h = loop:3\n";

static void test_nested_while_in_while_compiles(void) {
  pair p;
  if (!pair_open(&p, nested_cluster, nested_ref)) goto done;
  for (int k = 0; k < 2; k++)
    pair_run_at(__LINE__, &p, 5, (const char *[]){"m", "n", "h0", "wt", "x"},
                (graph_tensor *[]){scalar_of(GRAPH_DT_INT32, 3 + k), scalar_of(GRAPH_DT_INT32, 4 - k),
                                   mat(2, 3, 0.4 + k), mat(3, 3, 0.7), mat(2, 3, -0.3)});
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->compiles == 0);
done:
  pair_close(&p);
}

/* A branch inside a loop: the first two iterations take then_branch, the rest
 * else_branch. */
#define IF_LOOP_FUNCTIONS                                                                    \
  "graph il_cond {\n"                                                                        \
  "  input i: int32[]\n"                                                                     \
  "  input n: int32[]\n"                                                                     \
  "  input h: float[?,?]\n"                                                                  \
  "  input w: float[?,?]\n"                                                                  \
  "  l = Less[T=int32](i, n)\n"                                                              \
  "  output r = l:0\n"                                                                       \
  "}\n"                                                                                      \
  "graph il_body {\n"                                                                        \
  "  input i: int32[]\n"                                                                     \
  "  input n: int32[]\n"                                                                     \
  "  input h: float[?,?]\n"                                                                  \
  "  input w: float[?,?]\n"                                                                  \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"                                 \
  "  two = Const[dtype=int32, value=tensor<int32[]>{2}]()\n"                                 \
  "  i1 = AddV2[T=int32](i, one)\n"                                                          \
  "  early = Less[T=int32](i, two)\n"                                                        \
  "  f = StatelessIf[Tcond=bool, then_branch=@if_then, else_branch=@if_else](early, h, w) " \
  "-> (float[?,?])\n"                                                                        \
  "  output i = i1:0\n"                                                                      \
  "  output n = n:0\n"                                                                       \
  "  output h = f:0\n"                                                                       \
  "  output w = w:0\n"                                                                       \
  "}\n"

#define IF_LOOP_INPUTS \
  "input n: int32[]\n" \
  "input h0: float[?,?]\n" \
  "input wt: float[?,?]\n"

#define IF_LOOP_NODES                                                                \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                          \
  "loop = StatelessWhile[body=@il_body, cond=@il_cond](zero, n, h0, wt) "            \
  "-> (int32[], int32[], float[?,?], float[?,?])\n"

static const char if_loop_cluster[] =
    "framework tf\n" IF_FUNCTIONS IF_LOOP_FUNCTIONS
    "graph if_loop {\n"
    "  " IF_LOOP_INPUTS IF_LOOP_NODES
    "  output h = loop:2\n"
    "}\n" IF_LOOP_INPUTS
    "c = kiln.Cluster[function=@if_loop, n_constants=0, n_resources=0](n, h0, wt) -> (float)\n"
    "output h = c:0\n";

static const char if_loop_ref[] =
    "framework tf\n" IF_FUNCTIONS IF_LOOP_FUNCTIONS IF_LOOP_INPUTS IF_LOOP_NODES "output h = loop:2\n";

static void test_if_in_while_compiles(void) {
  pair p;
  if (!pair_open(&p, if_loop_cluster, if_loop_ref)) goto done;
  for (int n = 1; n <= 5; n += 2)
    pair_run_at(__LINE__, &p, 3, (const char *[]){"n", "h0", "wt"},
                (graph_tensor *[]){scalar_of(GRAPH_DT_INT32, n), mat(2, 2, 0.1 * n), mat(2, 2, 0.9)});
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 0);
  CHECK(stats(&p)->compiles == 0);
done:
  pair_close(&p);
}

/* A loop whose body grows a variable (x = concat(x, x)): HLO while needs fixed shapes,
 * so the cluster runs op by op, once warned, with the same results. */
#define GROW_FUNCTIONS                                                        \
  "graph grow_cond {\n"                                                       \
  "  input i: int32[]\n"                                                      \
  "  input n: int32[]\n"                                                      \
  "  input x: float[?]\n"                                                     \
  "  l = Less[T=int32](i, n)\n"                                               \
  "  output r = l:0\n"                                                        \
  "}\n"                                                                       \
  "graph grow_body {\n"                                                       \
  "  input i: int32[]\n"                                                      \
  "  input n: int32[]\n"                                                      \
  "  input x: float[?]\n"                                                     \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"                  \
  "  axis = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                 \
  "  i1 = AddV2[T=int32](i, one)\n"                                           \
  "  xx = ConcatV2[T=float, N=2, Tidx=int32](x, x, axis)\n"                   \
  "  output i = i1:0\n"                                                       \
  "  output n = n:0\n"                                                        \
  "  output x = xx:0\n"                                                       \
  "}\n"

#define GROW_NODES                                                                          \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                 \
  "loop = StatelessWhile[body=@grow_body, cond=@grow_cond](zero, n, x) -> (int32[], int32[], float[?])\n" \
  "y = Sin[T=float](loop:2)\n"

static const char grow_cluster[] =
    "framework tf\n" GROW_FUNCTIONS
    "graph grow {\n"
    "  input n: int32[]\n"
    "  input x: float[?]\n" GROW_NODES
    "  output y = y:0\n"
    "}\n"
    "input n: int32[]\n"
    "input x: float[?]\n"
    "c = kiln.Cluster[function=@grow, n_constants=0, n_resources=0](n, x) -> (float)\n"
    "output y = c:0\n";

static const char grow_ref[] = "framework tf\n" GROW_FUNCTIONS "input n: int32[]\ninput x: float[?]\n" GROW_NODES
                               "output y = y:0\n";

static void test_shape_changing_loop_falls_back(void) {
  pair p;
  if (!pair_open(&p, grow_cluster, grow_ref)) goto done;
  capture cap;
  capture_begin(&cap);
  bool ok = PAIR_RUN2(&p, "n", scalar_of(GRAPH_DT_INT32, 3), "x", vec1(2, 0.4));
  ok = PAIR_RUN2(&p, "n", scalar_of(GRAPH_DT_INT32, 2), "x", vec1(2, 0.8)) && ok;
  char *err = capture_end(&cap);
  CHECK(ok);
  CHECK(stats(&p)->cluster_compiles == 0 && stats(&p)->cluster_fallback_runs == 2);
  CHECK(count_of(err, "cluster grow cannot be compiled") == 1);
  CHECK(strstr(err, "node loop (tf.StatelessWhile): loop variable 2 changes from float[2] to float[4]") != NULL);
  free(err);
done:
  pair_close(&p);
}

/* A Reshape inside the body whose shape is a loop variable: not a compile-time
 * constant, so the cluster runs op by op and the warning says why. */
#define RESHAPE_LOOP_FUNCTIONS                                        \
  "graph rl_cond {\n"                                                 \
  "  input i: int32[]\n"                                              \
  "  input s: int32[2]\n"                                             \
  "  input x: float[?,?]\n"                                           \
  "  three = Const[dtype=int32, value=tensor<int32[]>{3}]()\n"        \
  "  l = Less[T=int32](i, three)\n"                                   \
  "  output r = l:0\n"                                                \
  "}\n"                                                               \
  "graph rl_body {\n"                                                 \
  "  input i: int32[]\n"                                              \
  "  input s: int32[2]\n"                                             \
  "  input x: float[?,?]\n"                                           \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"          \
  "  i1 = AddV2[T=int32](i, one)\n"                                   \
  "  r = Reshape[T=float, Tshape=int32](x, s)\n"                      \
  "  e = Exp[T=float](r)\n"                                           \
  "  output i = i1:0\n"                                               \
  "  output s = s:0\n"                                                \
  "  output x = e:0\n"                                                \
  "}\n"

#define RESHAPE_LOOP_NODES                                                                               \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                              \
  "loop = StatelessWhile[body=@rl_body, cond=@rl_cond](zero, s, x) -> (int32[], int32[2], float[?,?])\n"

static const char reshape_loop_cluster[] =
    "framework tf\n" RESHAPE_LOOP_FUNCTIONS
    "graph reshape_loop {\n"
    "  input s: int32[2]\n"
    "  input x: float[?,?]\n" RESHAPE_LOOP_NODES
    "  output x = loop:2\n"
    "}\n"
    "input s: int32[2]\n"
    "input x: float[?,?]\n"
    "c = kiln.Cluster[function=@reshape_loop, n_constants=0, n_resources=0](s, x) -> (float)\n"
    "output x = c:0\n";

static const char reshape_loop_ref[] = "framework tf\n" RESHAPE_LOOP_FUNCTIONS
                                       "input s: int32[2]\ninput x: float[?,?]\n" RESHAPE_LOOP_NODES
                                       "output x = loop:2\n";

static void test_loop_state_shape_operand_falls_back(void) {
  pair p;
  if (!pair_open(&p, reshape_loop_cluster, reshape_loop_ref)) goto done;
  capture cap;
  capture_begin(&cap);
  bool ok = PAIR_RUN2(&p, "s", vec_of(GRAPH_DT_INT32, 2, (double[]){2, 3}), "x", mat(2, 3, 0.1));
  char *err = capture_end(&cap);
  CHECK(ok);
  CHECK(stats(&p)->cluster_compiles == 0 && stats(&p)->cluster_fallback_runs == 1);
  CHECK(strstr(err, "input 1 of node r must be a compile-time constant but depends on runtime value of the loop "
                    "state of node loop") != NULL);
  free(err);
done:
  pair_close(&p);
}

/* A sequence loop as Keras writes it: the inputs unstacked into a TensorList, one
 * item read per step, each step's state set into a TensorListReserve of unknown batch
 * size, stacked after the loop. The list becomes a buffer, the Reserve's element shape
 * comes from the item the body sets. */
#define SEQ_INPUTS_F         \
  "  input t: int32[]\n"     \
  "  input h: float[?,?]\n"  \
  "  input xs: variant[]\n"  \
  "  input ys: variant[]\n"  \
  "  input w: float[?,?]\n"  \
  "  input n: int32[]\n"

#define SEQ_FUNCTIONS                                                                  \
  "graph seq_cond {\n" SEQ_INPUTS_F                                                    \
  "  l = Less[T=int32](t, n)\n"                                                        \
  "  output r = l:0\n"                                                                 \
  "}\n"                                                                                \
  "graph seq_body {\n" SEQ_INPUTS_F                                                    \
  "  es = Const[dtype=int32, value=tensor<int32[2]>{-1, 3}]()\n"                       \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"                           \
  "  x = TensorListGetItem[element_dtype=float](xs, t, es) -> (float[?,3])\n"          \
  "  mm = MatMul[T=float, transpose_a=false, transpose_b=false](h, w)\n"               \
  "  a = AddV2[T=float](mm, x)\n"                                                      \
  "  hn = Tanh[T=float](a)\n"                                                          \
  "  ys2 = TensorListSetItem[element_dtype=float](ys, t, hn) -> (variant[])\n"         \
  "  t1 = AddV2[T=int32](t, one)\n"                                                    \
  "  output t = t1:0\n"                                                                \
  "  output h = hn:0\n"                                                                \
  "  output xs = xs:0\n"                                                               \
  "  output ys = ys2:0\n"                                                              \
  "  output w = w:0\n"                                                                 \
  "  output n = n:0\n"                                                                 \
  "}\n"

#define SEQ_INPUTS "input x: float[4,?,3]\ninput h0: float[?,3]\ninput w: float[3,3]\n"

#define SEQ_NODES                                                                                          \
  "es = Const[dtype=int32, value=tensor<int32[2]>{-1, 3}]()\n"                                             \
  "len = Const[dtype=int32, value=tensor<int32[]>{4}]()\n"                                                 \
  "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                                \
  "xs = TensorListFromTensor[element_dtype=float, shape_type=int32](x, es) -> (variant[])\n"              \
  "ys = TensorListReserve[element_dtype=float, shape_type=int32](es, len) -> (variant[])\n"               \
  "loop = StatelessWhile[body=@seq_body, cond=@seq_cond](zero, h0, xs, ys, w, len) "                      \
  "-> (int32[], float[?,3], variant[], variant[], float[3,3], int32[])\n"

static const char seq_cluster[] =
    "framework tf\n" SEQ_FUNCTIONS
    "graph seq {\n" SEQ_INPUTS SEQ_NODES
    "  st = TensorListStack[element_dtype=float, num_elements=4](loop:3, es) -> (float[4,?,3])\n"
    "  output hs = st:0\n"
    "  output h = loop:1\n"
    "}\n" SEQ_INPUTS
    "c = kiln.Cluster[function=@seq, n_constants=0, n_resources=0](x, h0, w) -> (float, float)\n"
    "output hs = c:0\n"
    "output h = c:1\n";

/* The same loop with the list leaving the cluster: an HLO module cannot return a
 * TensorList, so the cluster runs op by op and the Stack outside reads the list. */
static const char seq_leaving_cluster[] =
    "framework tf\n" SEQ_FUNCTIONS
    "graph seq {\n" SEQ_INPUTS SEQ_NODES
    "  output ys = loop:3\n"
    "  output h = loop:1\n"
    "}\n" SEQ_INPUTS
    "c = kiln.Cluster[function=@seq, n_constants=0, n_resources=0](x, h0, w) -> (variant[], float)\n"
    "es = Const[dtype=int32, value=tensor<int32[2]>{-1, 3}]()\n"
    "st = TensorListStack[element_dtype=float, num_elements=4](c:0, es) -> (float[4,?,3])\n"
    "output hs = st:0\n"
    "output h = c:1\n";

static const char seq_ref[] =
    "framework tf\n" SEQ_FUNCTIONS SEQ_INPUTS SEQ_NODES
    "st = TensorListStack[element_dtype=float, num_elements=4](loop:3, es) -> (float[4,?,3])\n"
    "output hs = st:0\n"
    "output h = loop:1\n";

static graph_tensor *seq_x(int64_t batch, double seed) { return ramp(GRAPH_DT_FLOAT, 3, (int64_t[]){4, batch, 3}, seed); }

static void test_tensorlist_loop_compiles_to_buffer(void) {
  pair p;
  if (!pair_open(&p, seq_cluster, seq_ref)) goto done;
  for (int b = 1; b <= 2; b++)
    pair_run_at(__LINE__, &p, 3, (const char *[]){"x", "h0", "w"},
                (graph_tensor *[]){seq_x(2, 0.3 * b), mat(2, 3, 0.1 * b), mat(3, 3, 0.8)});
  pair_run_at(__LINE__, &p, 3, (const char *[]){"x", "h0", "w"},
              (graph_tensor *[]){seq_x(5, 0.7), mat(5, 3, 0.2), mat(3, 3, 0.4)}); /* another batch */
  CHECK(stats(&p)->cluster_compiles == 1);
  CHECK(stats(&p)->cluster_fallback_runs == 1); /* the new batch's first request (lazy) */
  CHECK(stats(&p)->cluster_cache_hits == 1);
done:
  pair_close(&p);
}

static void test_tensorlist_leaving_cluster_falls_back(void) {
  pair p;
  if (!pair_open(&p, seq_leaving_cluster, seq_ref)) goto done;
  capture cap;
  capture_begin(&cap);
  bool ok = pair_run_at(__LINE__, &p, 3, (const char *[]){"x", "h0", "w"},
                        (graph_tensor *[]){seq_x(2, 0.5), mat(2, 3, 0.3), mat(3, 3, 0.6)});
  char *err = capture_end(&cap);
  CHECK(ok);
  CHECK(stats(&p)->cluster_compiles == 0 && stats(&p)->cluster_fallback_runs == 1);
  CHECK(strstr(err, "result 0 (ys) is a variant value") != NULL);
  free(err);
done:
  pair_close(&p);
}

TEST_MAIN(TEST(test_bitwise_and_compile_once), TEST(test_onnx_body), TEST(test_lazy_second_request),
          TEST(test_must_compile), TEST(test_megamorphic), TEST(test_unimplemented_falls_back),
          TEST(test_constant_args_by_value), TEST(test_constant_input_computed_inside), TEST(test_resource_counter),
          TEST(test_write_only_cluster), TEST(test_errors_name_the_cluster), TEST(test_dump),
          TEST(test_failing_devices), TEST(test_variables_stay_on_the_device),
          TEST(test_stateless_while_compiles_to_hlo_while),
          TEST(test_stateless_if_compiles_to_hlo_conditional), TEST(test_nested_while_in_while_compiles),
          TEST(test_if_in_while_compiles), TEST(test_shape_changing_loop_falls_back),
          TEST(test_loop_state_shape_operand_falls_back), TEST(test_tensorlist_loop_compiles_to_buffer),
          TEST(test_tensorlist_leaving_cluster_falls_back))
