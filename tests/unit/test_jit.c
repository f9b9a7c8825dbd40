/* Unit tests for the bridge's clustering passes (src/jit), each rule on a small graph
 * in the text format: a chain that clusters (and runs bitwise as op by op), a cycle a
 * naive merge would create, a Switch/Merge diamond, a while loop's body clustered
 * inside its frame, every unsafe resource pair and the safe read-then-write, a
 * must-be-constant chain that must be declustered, the minimum size with Const/Identity not counting, explicit compile
 * scopes, --jit_ops / --jit_exclude_ops, the host-cost rule, soft placement,
 * --no_host_fallback, and TF2 functional While loops clustered (or refused, naming
 * the body node that blocks them). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "exec/executor.h"
#include "graph/cluster_op.h"
#include "graph/graph.h"
#include "jit/jit.h"

static jit_options opts_min(int min_size) {
  jit_options o = jit_options_default();
  o.device = "interpreter";
  o.min_cluster_size = min_size;
  return o;
}

/* Runs the bridge; the report (caller frees) or NULL after a failed CHECK. */
static jit_report *cluster_ok(graph *g, const jit_options *o) {
  jit_report *r = NULL;
  kiln_status s = jit_run(g, o, &r);
  if (s) {
    check_fail(__FILE__, __LINE__, "jit_run", kiln_status_message(s));
    kiln_status_free(s);
  }
  return r;
}

static const jit_node_report *node_of(const jit_report *r, const char *name) {
  for (int i = 0; r && i < r->n_nodes; i++)
    if (strcmp(r->nodes[i].name, name) == 0) return &r->nodes[i];
  fprintf(stderr, "  no node %s in the report\n", name);
  return NULL;
}

static int cluster_of(const jit_report *r, const char *name) {
  const jit_node_report *n = node_of(r, name);
  return n ? n->cluster : -2;
}

static bool reason_has(const jit_report *r, const char *name, const char *needle) {
  const jit_node_report *n = node_of(r, name);
  bool ok = n && n->reason && strstr(n->reason, needle);
  if (!ok) fprintf(stderr, "  %s: reason \"%s\" lacks \"%s\"\n", name, n && n->reason ? n->reason : "(none)", needle);
  return ok;
}

/* Runs g (one float input x of the given shape, filled 0.1, 0.2, ...) and returns
 * result 0. */
static graph_tensor *run_graph(graph *g, int rank, const int64_t *dims) {
  executor *e = NULL;
  executor_options eo = {.device = "interpreter"};
  kiln_status s = executor_new(g, &eo, &e);
  graph_tensor *x = NULL, *out[4] = {0};
  if (!s) s = tensor_create(GRAPH_DT_FLOAT, rank, dims, &x);
  if (!s) {
    for (int64_t i = 0; i < x->n; i++) tensor_set_f64(x, i, 0.1 * (double)(i + 1));
    const char *names[] = {"x"};
    s = executor_run(e, 1, names, &x, out);
  }
  if (s) {
    check_fail(__FILE__, __LINE__, "executor_run", kiln_status_message(s));
    kiln_status_free(s);
  }
  tensor_free(x);
  executor_free(e);
  for (int i = 1; i < 4; i++) tensor_free(out[i]);
  return out[0];
}

static void test_chain_clusters_and_runs_bitwise(void) {
  const char *text = "framework tf\n"
                     "input x: float[2,3]\n"
                     "a = Exp[T=float](x)\n"
                     "b = Neg[T=float](a)\n"
                     "c = Tanh[T=float](b)\n"
                     "k = Const[dtype=float, value=tensor<float[]>{0.5}]()\n"
                     "d = Mul[T=float](c, k)\n"
                     "e = Sqrt[T=float](a)\n"
                     "f = AddV2[T=float](d, e)\n"
                     "output r = f:0\n";
  int64_t dims[] = {2, 3};
  graph *plain = check_parse_graph(text);
  graph_tensor *want = run_graph(plain, 2, dims);
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(4);
  jit_report *r = cluster_ok(g, &o);
  CHECK(r && r->n_clusters == 1);
  CHECK(cluster_of(r, "a") == 0 && cluster_of(r, "f") == 0 && cluster_of(r, "k") == 0);
  CHECK(r && r->clusters[0].n_nodes == 7 && r->clusters[0].n_counted == 6 && r->clusters[0].n_args == 1);
  /* The rewritten graph: input, one call node. */
  CHECK(g->n_nodes == 2 && graph_find_node(g, "cluster_0") && strcmp(graph_find_node(g, "cluster_0")->op, KILN_CLUSTER_OP) == 0);
  graph_tensor *got = run_graph(g, 2, dims);
  CHECK(want && got && tensor_equal(want, got));
  tensor_free(want);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
  graph_free(plain);
}

/* a -> s -> c and a -> c with s excluded: a and c in one cluster would both feed and
 * consume s. */
static void test_cycle_is_refused(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[4]\n"
                      "a = Exp[T=float](x)\n"
                      "a2 = Neg[T=float](a)\n"
                      "s = Sin[T=float](a2)\n"
                      "c = AddV2[T=float](a2, s)\n"
                      "c2 = Abs[T=float](c)\n"
                      "output r = c2:0\n");
  jit_options o = opts_min(1);
  o.jit_exclude_ops = "Sin";
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "s", "--jit_exclude_ops"));
  CHECK(cluster_of(r, "a") >= 0 && cluster_of(r, "a") == cluster_of(r, "a2"));
  CHECK(cluster_of(r, "c") >= 0 && cluster_of(r, "c") == cluster_of(r, "c2"));
  CHECK(cluster_of(r, "a") != cluster_of(r, "c"));
  int64_t dims[] = {4};
  graph_tensor *got = run_graph(g, 1, dims);
  CHECK(got != NULL);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
}

static void test_switch_merge_diamond(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[4]\n"
                      "input p: bool[]\n"
                      "x1 = Exp[T=float](x)\n"
                      "s = Switch[T=float](x1, p) -> (float[4], float[4])\n"
                      "a = Neg[T=float](s:0)\n"
                      "a2 = Abs[T=float](a)\n"
                      "b = Exp[T=float](s:1)\n"
                      "b2 = Tanh[T=float](b)\n"
                      "m = Merge[N=2, T=float](a2, b2) -> (float[4], int32[])\n"
                      "c = AddV2[T=float](m, x1)\n"
                      "output r = c:0\n");
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "s", "runs in the executor") && reason_has(r, "m", "runs in the executor"));
  CHECK(cluster_of(r, "a") >= 0 && cluster_of(r, "a") == cluster_of(r, "a2"));
  CHECK(cluster_of(r, "b") >= 0 && cluster_of(r, "b") == cluster_of(r, "b2"));
  CHECK(cluster_of(r, "a") != cluster_of(r, "b")); /* !p vs p */
  CHECK(cluster_of(r, "x1") != cluster_of(r, "a")); /* true vs !p */
  jit_report_free(r);
  graph_free(g);
}

/* A while loop whose body carries a float vector: v = tanh(v * 0.5 + x), three
 * times. The body's float work clusters inside the loop frame 'w' (one cluster run per
 * iteration); no cluster spans the frame and the root, so pre/post stay apart from it;
 * the scalar counter stays op by op (host-cost rule). The clustered graph computes
 * bitwise what the plain graph computes op by op. */
static const char while_text[] =
    "framework tf\n"
    "input x: float[3]\n"
    "limit = Const[dtype=int32, value=tensor<int32[]>{3}]()\n"
    "i0 = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "pre = Exp[T=float](x)\n"
    "pre2 = Neg[T=float](pre)\n"
    "w/Enter = Enter[T=int32, frame_name=\"w\", is_constant=false](i0)\n"
    "w/Enter_1 = Enter[T=int32, frame_name=\"w\", is_constant=true](limit)\n"
    "w/EnterV = Enter[T=float, frame_name=\"w\", is_constant=false](pre2)\n"
    "w/EnterX = Enter[T=float, frame_name=\"w\", is_constant=true](x)\n"
    "w/Merge = Merge[N=2, T=int32](w/Enter, w/NextIteration) -> (int32[], int32[])\n"
    "w/MergeV = Merge[N=2, T=float](w/EnterV, w/NextIterationV) -> (float[3], int32[])\n"
    "w/Less = Less[T=int32](w/Merge, w/Enter_1)\n"
    "w/LoopCond = LoopCond(w/Less) -> (bool[])\n"
    "w/Switch = Switch[T=int32](w/Merge, w/LoopCond) -> (int32[], int32[])\n"
    "w/SwitchV = Switch[T=float](w/MergeV, w/LoopCond) -> (float[3], float[3])\n"
    "w/Identity = Identity[T=int32](w/Switch:1)\n"
    "w/IdentityV = Identity[T=float](w/SwitchV:1)\n"
    "w/one = Const[dtype=int32, value=tensor<int32[]>{1}]() @ w/Identity\n"
    "w/add = AddV2[T=int32](w/Identity, w/one)\n"
    "w/half = Const[dtype=float, value=tensor<float[]>{0.5}]() @ w/IdentityV\n"
    "w/mul = Mul[T=float](w/IdentityV, w/half)\n"
    "w/addv = AddV2[T=float](w/mul, w/EnterX)\n"
    "w/tanh = Tanh[T=float](w/addv)\n"
    "w/NextIteration = NextIteration[T=int32](w/add)\n"
    "w/NextIterationV = NextIteration[T=float](w/tanh)\n"
    "w/Exit = Exit[T=int32](w/Switch)\n"
    "w/ExitV = Exit[T=float](w/SwitchV)\n"
    "f = Cast[SrcT=int32, DstT=float](w/Exit)\n"
    "post = AddV2[T=float](w/ExitV, f)\n"
    "post2 = Abs[T=float](post)\n"
    "output r = post2:0\n";

static void test_while_body_clusters_inside_its_frame(void) {
  int64_t dims[] = {3};
  graph *plain = check_parse_graph(while_text);
  graph_tensor *want = run_graph(plain, 1, dims);
  graph *g = check_parse_graph(while_text);
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  int body = cluster_of(r, "w/mul");
  CHECK(body >= 0 && cluster_of(r, "w/addv") == body && cluster_of(r, "w/tanh") == body);
  CHECK(cluster_of(r, "pre") >= 0 && cluster_of(r, "pre") != body);
  CHECK(cluster_of(r, "post") >= 0 && cluster_of(r, "post") != body);
  CHECK(r && body >= 0 && r->clusters[body].frame && !strcmp(r->clusters[body].frame, "w"));
  CHECK(r && cluster_of(r, "pre") >= 0 && !r->clusters[cluster_of(r, "pre")].frame);
  CHECK(reason_has(r, "w/add", "scalar work"));
  CHECK(reason_has(r, "w/Merge", "runs in the executor") && reason_has(r, "w/EnterX", "runs in the executor"));
  graph_tensor *got = run_graph(g, 1, dims);
  CHECK(want && got && tensor_equal(want, got));
  tensor_free(want);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
  graph_free(plain);
}

/* first -> second through a data path; expect them apart when unsafe. */
static void resource_pair(const char *first, const char *second, bool unsafe) {
  char text[2048];
  const char *w_line = "%s = %s[dtype=float](v, val)\n";
  char first_line[256], second_line[256];
  /* Reads take (v) and produce a value; writes take (v, value). */
  bool first_reads = strcmp(first, "ReadVariableOp") == 0, second_reads = strcmp(second, "ReadVariableOp") == 0;
  if (first_reads)
    snprintf(first_line, sizeof first_line, "op1 = ReadVariableOp[dtype=float](v) -> (float[2])\n");
  else
    snprintf(first_line, sizeof first_line, w_line, "op1", first);
  if (second_reads)
    snprintf(second_line, sizeof second_line, "op2 = ReadVariableOp[dtype=float](v) @ mid -> (float[2])\n");
  else
    snprintf(second_line, sizeof second_line, "op2 = %s[dtype=float](v, val) @ mid\n", second);
  snprintf(text, sizeof text,
           "framework tf\n"
           "input x: float[2]\n"
           "v = VarHandleOp[dtype=float, shape=<2>, shared_name=\"v\"]() -> (resource[])\n"
           "val = Exp[T=float](x)\n"
           "%s"
           "mid = Neg[T=float](val) @ op1\n"
           "%s"
           "out = Abs[T=float](mid)\n"
           "output r = out:0\n",
           first_line, second_line);
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  int c1 = cluster_of(r, "op1"), c2 = cluster_of(r, "op2");
  if (unsafe) {
    if (!(c1 != c2 || c1 < 0)) fprintf(stderr, "  %s -> %s share cluster %d\n", first, second, c1);
    CHECK(c1 != c2 || c1 < 0);
  } else {
    if (!(c1 >= 0 && c1 == c2)) fprintf(stderr, "  %s -> %s: clusters %d, %d\n", first, second, c1, c2);
    CHECK(c1 >= 0 && c1 == c2);
  }
  jit_report_free(r);
  graph_free(g);
}

static void test_resource_pairs(void) {
  resource_pair("AssignVariableOp", "ReadVariableOp", true);        /* W -> R */
  resource_pair("AssignVariableOp", "AssignAddVariableOp", true);   /* W -> RW */
  resource_pair("AssignAddVariableOp", "ReadVariableOp", true);     /* RW -> R */
  resource_pair("AssignSubVariableOp", "AssignAddVariableOp", true); /* RW -> RW */
  resource_pair("ReadVariableOp", "AssignVariableOp", false);       /* R -> W: safe */
  resource_pair("AssignVariableOp", "AssignVariableOp", false);     /* W -> W: safe */
}

/* A Reshape whose shape operand is computed from runtime values inside the cluster:
 * the chain leaves the cluster; a shape computed from Shape stays. */
static void test_must_be_constant_chain_declustered(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[2,3]\n"
                      "a = Exp[T=float](x)\n"
                      "b = Neg[T=float](a)\n"
                      "m = Max[T=float, Tidx=int32, keep_dims=false](x, axes)\n"
                      "axes = Const[dtype=int32, value=tensor<int32[2]>{0, 1}]()\n"
                      "mc = Ceil[T=float](m)\n"
                      "n = Cast[SrcT=float, DstT=int32](mc)\n"
                      "shp = Pack[N=2, T=int32, axis=0](n, six)\n"
                      "six = Const[dtype=int32, value=tensor<int32[]>{6}]()\n"
                      "rs = Reshape[T=float, Tshape=int32](b, shp)\n"
                      "s2 = Shape[T=float, out_type=int32](b)\n"
                      "rs2 = Reshape[T=float, Tshape=int32](rs, s2)\n"
                      "t = Tanh[T=float](rs2)\n"
                      "output r = t:0\n");
  jit_options o = opts_min(2);
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "shp", "partially declustered") && reason_has(r, "n", "partially declustered"));
  CHECK(reason_has(r, "m", "partially declustered"));
  CHECK(cluster_of(r, "rs") >= 0 && cluster_of(r, "rs") == cluster_of(r, "s2"));
  CHECK(r && r->n_declustered >= 3);
  int64_t dims[] = {2, 3};
  graph_tensor *got = run_graph(g, 2, dims);
  CHECK(got && got->n == 6);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
}

static void test_min_size_ignores_const_and_identity(void) {
  const char *text = "framework tf\n"
                     "input x: float[8]\n"
                     "a = Exp[T=float](x)\n"
                     "i = Identity[T=float](a)\n"
                     "k = Const[dtype=float, value=tensor<float[]>{2}]()\n"
                     "b = Mul[T=float](i, k)\n"
                     "c = Abs[T=float](b)\n"
                     "output r = c:0\n";
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(4);
  jit_report *r = cluster_ok(g, &o);
  CHECK(r && r->n_clusters == 0);
  CHECK(reason_has(r, "a", "3 nodes, below --min_cluster_size=4"));
  jit_report_free(r);
  graph_free(g);
  g = check_parse_graph(text);
  o = opts_min(3);
  r = cluster_ok(g, &o);
  CHECK(r && r->n_clusters == 1 && r->clusters[0].n_nodes == 5 && r->clusters[0].n_counted == 3);
  jit_report_free(r);
  graph_free(g);
}

static void test_compile_scopes(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[8]\n"
                      "a = Exp[T=float, _XlaCompile=true, _XlaScope=\"s1\"](x)\n"
                      "b = Neg[T=float, _XlaCompile=true, _XlaScope=\"s1\"](a)\n"
                      "c = Abs[T=float, _XlaCompile=true, _XlaScope=\"s2\"](b)\n"
                      "d = Tanh[T=float](c)\n"
                      "e = Sin[T=float, _XlaCompile=false](d)\n"
                      "output r = e:0\n");
  jit_options o = opts_min(4);
  jit_report *r = cluster_ok(g, &o);
  /* Scoped clusters exist whatever their size, and different scopes stay apart. */
  CHECK(cluster_of(r, "a") >= 0 && cluster_of(r, "a") == cluster_of(r, "b"));
  CHECK(cluster_of(r, "c") >= 0 && cluster_of(r, "c") != cluster_of(r, "a"));
  CHECK(r && r->n_clusters == 2 && r->clusters[0].must_compile && r->clusters[1].must_compile);
  CHECK(reason_has(r, "d", "min_cluster_size"));
  CHECK(reason_has(r, "e", "_XlaCompile=false"));
  graph_node *call = graph_find_node(g, "cluster_0");
  CHECK(call && graph_node_attr_bool_or(call, KILN_CLUSTER_ATTR_MUST_COMPILE, false));
  jit_report_free(r);
  graph_free(g);
}

static void test_jit_ops_filters(void) {
  const char *text = "framework tf\n"
                     "input x: float[8]\n"
                     "a = Exp[T=float](x)\n"
                     "b = Neg[T=float](a)\n"
                     "c = Exp[T=float](b)\n"
                     "d = Neg[T=float](c)\n"
                     "output r = d:0\n";
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(1);
  o.jit_ops = "tf.Exp";
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "b", "not in --jit_ops") && cluster_of(r, "a") >= 0 && cluster_of(r, "c") >= 0);
  jit_report_free(r);
  graph_free(g);
  g = check_parse_graph(text);
  o = opts_min(1);
  o.jit_exclude_ops = "Neg";
  r = cluster_ok(g, &o);
  CHECK(reason_has(r, "d", "--jit_exclude_ops") && cluster_of(r, "c") >= 0);
  jit_report_free(r);
  graph_free(g);
}

static void test_host_cost_rule(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[]\n"
                      "a = Exp[T=float](x)\n"
                      "b = Neg[T=float](a)\n"
                      "c = Abs[T=float](b)\n"
                      "d = Tanh[T=float](c)\n"
                      "output r = d:0\n");
  jit_options o = opts_min(2);
  jit_report *r = cluster_ok(g, &o);
  CHECK(r && r->n_clusters == 0 && reason_has(r, "a", "scalar work"));
  jit_report_free(r);
  graph_free(g);
}

static void test_soft_placement_and_no_host_fallback(void) {
  const char *text = "framework tf\n"
                     "input x: float[4]\n"
                     "a = Exp[T=float, device=\"/device:GPU:0\"](x)\n"
                     "w = Where[T=float](a) -> (int64[?,1])\n"
                     "output r = w:0\n";
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  /* No GPU device: the node goes to the bridge's device. Where has only a host kernel. */
  const jit_node_report *a = node_of(r, "a"), *w = node_of(r, "w");
  CHECK(a && strcmp(a->device, "interpreter") == 0);
  CHECK(w && strcmp(w->device, "host") == 0);
  jit_report_free(r);
  graph_free(g);
  g = check_parse_graph(text);
  o.no_host_fallback = true;
  CHECK_ERR(jit_run(g, &o, NULL), "node w (tf.Where) cannot run on device interpreter");
  graph_free(g);
}

/* A counter variable updated every run: the bridge keeps the write->read pairs apart
 * and the auto-clustered graph gives, run after run, the op-by-op values. */
static void test_counter_variable_auto_clustered(void) {
  const char *text = "framework tf\n"
                     "input x: float[2]\n"
                     "v = VarHandleOp[container=\"\", dtype=float, shape=<2>, shared_name=\"c\"]() -> (resource[])\n"
                     "init = VarIsInitializedOp(v)\n"
                     "zeros = Const[dtype=float, value=tensor<float[2]>{0, 0}]()\n"
                     "sw = Switch[T=float](zeros, init) -> (float[2], float[2])\n"
                     "assign = AssignVariableOp[dtype=float](v, sw:0) -> ()\n"
                     "ready = ControlTrigger() @ assign\n"
                     "e = Exp[T=float](x)\n"
                     "s = Sqrt[T=float](e)\n"
                     "add = AssignAddVariableOp[dtype=float](v, s) @ ready -> ()\n"
                     "r = ReadVariableOp[dtype=float](v) @ add\n"
                     "t = Tanh[T=float](r)\n"
                     "u = Neg[T=float](t)\n"
                     "output value = u:0\n";
  graph *plain = check_parse_graph(text), *g = check_parse_graph(text);
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  CHECK(cluster_of(r, "add") >= 0 && cluster_of(r, "add") != cluster_of(r, "r")); /* RW -> R */
  CHECK(cluster_of(r, "e") == cluster_of(r, "add"));
  executor *ep = NULL, *ej = NULL;
  executor_options eo = {.device = "interpreter"};
  CHECK_OK(executor_new(plain, &eo, &ep));
  CHECK_OK(executor_new(g, &eo, &ej));
  for (int k = 0; ep && ej && k < 3; k++) {
    graph_tensor *x = NULL, *a = NULL, *b = NULL;
    int64_t dims[] = {2};
    CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 1, dims, &x));
    tensor_set_f64(x, 0, 0.25 * k);
    tensor_set_f64(x, 1, -0.5);
    const char *names[] = {"x"};
    CHECK_OK(executor_run(ep, 1, names, &x, &a));
    CHECK_OK(executor_run(ej, 1, names, &x, &b));
    CHECK(a && b && tensor_equal(a, b));
    tensor_free(x);
    tensor_free(a);
    tensor_free(b);
  }
  CHECK(ej && executor_get_stats(ej)->cluster_runs >= 3);
  executor_free(ep);
  executor_free(ej);
  jit_report_free(r);
  graph_free(g);
  graph_free(plain);
}

/* TF2 functional control flow: a StatelessWhile whose functions lower is a candidate
 * and counts its body's nodes, so the loop (with the one op around it) forms a
 * cluster that runs bitwise as op by op; one whose body holds a TensorList op the
 * lowering lacks (TensorListLength) stays out with a reason naming that body node. */
#define LOOP_FUNCTIONS                                   \
  "graph lc {\n"                                         \
  "  input i: int32[]\n"                                 \
  "  input h: float[2,3]\n"                              \
  "  three = Const[dtype=int32, value=tensor<int32[]>{3}]()\n" \
  "  l = Less[T=int32](i, three)\n"                      \
  "  output r = l:0\n"                                   \
  "}\n"                                                  \
  "graph lb {\n"                                         \
  "  input i: int32[]\n"                                 \
  "  input h: float[2,3]\n"                              \
  "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n" \
  "  i1 = AddV2[T=int32](i, one)\n"                      \
  "  s = Sin[T=float](h)\n"                              \
  "  t = Tanh[T=float](s)\n"                             \
  "  e = Exp[T=float](t)\n"                              \
  "  output i = i1:0\n"                                  \
  "  output h = e:0\n"                                   \
  "}\n"

static void test_functional_while_is_clustered(void) {
  const char *text = "framework tf\n" LOOP_FUNCTIONS
                     "input x: float[2,3]\n"
                     "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
                     "w = StatelessWhile[body=@lb, cond=@lc](zero, x) -> (int32[], float[2,3])\n"
                     "n = Neg[T=float](w:1)\n"
                     "output r = n:0\n";
  int64_t dims[] = {2, 3};
  graph *plain = check_parse_graph(text);
  graph_tensor *want = run_graph(plain, 2, dims);
  graph *g = check_parse_graph(text);
  jit_options o = opts_min(4);
  jit_report *r = cluster_ok(g, &o);
  CHECK(r && r->n_clusters == 1);
  CHECK(cluster_of(r, "w") == 0 && cluster_of(r, "n") == 0);
  CHECK(r && r->clusters[0].n_counted == 7); /* w, its 5 function nodes, n */
  graph_tensor *got = run_graph(g, 2, dims);
  CHECK(want && got && tensor_equal(want, got));
  tensor_free(want);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
  graph_free(plain);
}

static void test_functional_while_with_unsupported_list_op_is_refused(void) {
  graph *g = check_parse_graph(
      "framework tf\n"
      "graph tc {\n"
      "  input i: int32[]\n"
      "  input l: variant[]\n"
      "  input h: float[3]\n"
      "  two = Const[dtype=int32, value=tensor<int32[]>{2}]()\n"
      "  c = Less[T=int32](i, two)\n"
      "  output r = c:0\n"
      "}\n"
      "graph tb {\n"
      "  input i: int32[]\n"
      "  input l: variant[]\n"
      "  input h: float[3]\n"
      "  es = Const[dtype=int32, value=tensor<int32[1]>{3}]()\n"
      "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"
      "  item = TensorListGetItem[element_dtype=float](l, i, es) -> (float[3])\n"
      "  s = AddV2[T=float](h, item)\n"
      "  len = TensorListLength(l) -> (int32[])\n"
      "  i1 = AddV2[T=int32](i, len)\n"
      "  output i = i1:0\n"
      "  output l = l:0\n"
      "  output h = s:0\n"
      "}\n"
      "input x: float[2,3]\n"
      "es = Const[dtype=int32, value=tensor<int32[1]>{3}]()\n"
      "tl = TensorListFromTensor[element_dtype=float, shape_type=int32](x, es) -> (variant[])\n"
      "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
      "h0 = Const[dtype=float, value=tensor<float[3]>{0, 0, 0}]()\n"
      "w = StatelessWhile[body=@tb, cond=@tc](zero, tl, h0) -> (int32[], variant[], float[3])\n"
      "e = Exp[T=float](w:2)\n"
      "n = Neg[T=float](e)\n"
      "a = Abs[T=float](n)\n"
      "output r = a:0\n");
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "w", "StatelessWhile w: body node len (TensorListLength): TensorArray/TensorList/variant op"));
  CHECK(cluster_of(r, "e") >= 0);
  int64_t dims[] = {2, 3};
  graph_tensor *got = run_graph(g, 2, dims);
  CHECK(got && got->n == 3 && got->dtype == GRAPH_DT_FLOAT);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
}

/* A TensorList whose reader cannot be compiled keeps its whole list out of clusters
 * (a compiled list is a buffer that cannot cross a cluster boundary); the other ops
 * still cluster. */
static void test_tensorlist_crossing_a_boundary_stays_out(void) {
  graph *g = check_parse_graph(
      "framework tf\n"
      "input x: float[4,3]\n"
      "e = Exp[T=float](x)\n"
      "n = Neg[T=float](e)\n"
      "es = Const[dtype=int32, value=tensor<int32[1]>{3}]()\n"
      "tl = TensorListFromTensor[element_dtype=float, shape_type=int32](n, es) -> (variant[])\n"
      "len = TensorListLength(tl) -> (int32[])\n"
      "st = TensorListStack[element_dtype=float, num_elements=4](tl, es) -> (float[4,3])\n"
      "a = Abs[T=float](st)\n"
      "output r = a:0\n"
      "output len = len:0\n");
  jit_options o = opts_min(1);
  jit_report *r = cluster_ok(g, &o);
  CHECK(reason_has(r, "tl", "output 0 is a TensorList read by len (tf.TensorListLength), which cannot join"));
  CHECK(reason_has(r, "st", "input 0 is a TensorList from tl (tf.TensorListFromTensor), which cannot join"));
  CHECK(cluster_of(r, "e") >= 0 && cluster_of(r, "a") >= 0);
  int64_t dims[] = {4, 3};
  graph_tensor *got = run_graph(g, 2, dims);
  CHECK(got && got->n == 12);
  tensor_free(got);
  jit_report_free(r);
  graph_free(g);
  /* The same when the import declares no dtypes (TF.js): the list operand is known by
   * the op, not by a variant dtype. */
  g = check_parse_graph("framework tf\n"
                        "input x: float[4,3]\n"
                        "e = Exp[T=float](x)\n"
                        "es = Const[dtype=int32, value=tensor<int32[1]>{3}]()\n"
                        "tl = TensorListFromTensor[element_dtype=float, shape_type=int32](e, es)\n"
                        "id = Identity(tl)\n"
                        "len = TensorListLength(id)\n"
                        "output len = len:0\n");
  r = cluster_ok(g, &o);
  CHECK(reason_has(r, "tl", "output 0 is a TensorList read by id (tf.Identity), which cannot join"));
  jit_report_free(r);
  graph_free(g);
}

TEST_MAIN(TEST(test_chain_clusters_and_runs_bitwise), TEST(test_cycle_is_refused), TEST(test_switch_merge_diamond),
          TEST(test_while_body_clusters_inside_its_frame), TEST(test_resource_pairs), TEST(test_must_be_constant_chain_declustered),
          TEST(test_min_size_ignores_const_and_identity), TEST(test_compile_scopes), TEST(test_jit_ops_filters),
          TEST(test_host_cost_rule), TEST(test_soft_placement_and_no_host_fallback),
          TEST(test_counter_variable_auto_clustered), TEST(test_functional_while_is_clustered),
          TEST(test_functional_while_with_unsupported_list_op_is_refused),
          TEST(test_tensorlist_crossing_a_boundary_stays_out))
