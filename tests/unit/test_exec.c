/* Unit tests for the host executor (src/exec): TF v1 control flow with dead tensors
 * (Switch/Merge diamonds, while loops counting to N, nested loops whose last outer
 * iteration enters the inner loop with dead values), TensorArray and TensorList loops,
 * resource variables that keep their value across runs, ONNX If/Loop/Scan and TF
 * StatelessWhile bodies, the compile cache (identical nodes share one module), and the
 * errors a user can cause (unknown ops, missing or mistyped inputs, failing ops, dead
 * results), which must name the node, op and input shapes. Graphs are written in the
 * graph text format; ops come from the op library. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "exec/executor.h"
#include "graph/graph.h"

static executor *new_ok(graph *g) {
  executor *e = NULL;
  kiln_status s = executor_new(g, NULL, &e);
  if (s) {
    check_fail(__FILE__, __LINE__, "executor_new", kiln_status_message(s));
    kiln_status_free(s);
    return NULL;
  }
  return e;
}

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

/* Runs with inputs given as name, tensor pairs (the tensors are released). */
static kiln_status run(executor *e, graph_tensor **outs, int n_in, ...) {
  const char *names[8];
  graph_tensor *vals[8];
  va_list ap;
  va_start(ap, n_in);
  for (int i = 0; i < n_in; i++) {
    names[i] = va_arg(ap, const char *);
    vals[i] = va_arg(ap, graph_tensor *);
  }
  va_end(ap);
  kiln_status s = executor_run(e, n_in, names, vals, outs);
  for (int i = 0; i < n_in; i++) tensor_free(vals[i]);
  return s;
}

static bool values_are(const graph_tensor *t, int n, const double *want) {
  if (!t || t->n != n) return false;
  for (int i = 0; i < n; i++)
    if (tensor_get_f64(t, i) != want[i]) return false;
  return true;
}

static void free_outs(graph_tensor **o, int n) {
  for (int i = 0; i < n; i++) tensor_free(o[i]);
}

/* ------------------------------------------------------------ Switch/Merge ---- */

static const char diamond[] =
    "framework tf\n"
    "input x: float[2]\n"
    "input p: bool[]\n"
    "sw = Switch[T=float](x, p) -> (float[2], float[2])\n"
    "neg = Neg[T=float](sw:1)\n"
    "two = Const[dtype=float, value=tensor<float[]>{2}]()\n"
    "dbl = Mul[T=float](sw:0, two)\n"
    "m = Merge[N=2, T=float](dbl, neg) -> (float[2], int32[])\n"
    "output y = m:0\n"
    "output idx = m:1\n";

static void test_switch_merge(void) {
  graph *g = check_parse_graph(diamond);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[2] = {0};
  CHECK_OK(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1.5, -3}), "p", scalar(GRAPH_DT_BOOL, 1)));
  CHECK(values_are(o[0], 2, (double[]){-1.5, 3}));
  CHECK(o[1] && o[1]->dtype == GRAPH_DT_INT32 && tensor_get_s64(o[1], 0) == 1);
  free_outs(o, 2);
  int64_t dead_before = executor_get_stats(e)->dead_nodes;
  CHECK(dead_before >= 1); /* Mul ran dead */
  CHECK_OK(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1.5, -3}), "p", scalar(GRAPH_DT_BOOL, 0)));
  CHECK(values_are(o[0], 2, (double[]){3, -6}));
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 0);
  CHECK(executor_get_stats(e)->dead_nodes > dead_before);
  free_outs(o, 2);
done:
  executor_free(e);
  graph_free(g);
}

static void test_dead_result(void) {
  graph *g = check_parse_graph(
      "framework tf\n"
      "input x: float[2]\n"
      "input p: bool[]\n"
      "sw = Switch[T=float](x, p) -> (float[2], float[2])\n"
      "neg = Neg[T=float](sw:1)\n"
      "output z = neg:0\n");
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[1] = {0};
  CHECK_ERR(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "p", scalar(GRAPH_DT_BOOL, 0)), "is dead");
  CHECK(o[0] == NULL);
  CHECK_OK(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "p", scalar(GRAPH_DT_BOOL, 1)));
  CHECK(values_are(o[0], 2, (double[]){-1, -2}));
  free_outs(o, 1);
done:
  executor_free(e);
  graph_free(g);
}

/* ------------------------------------------------------------- while loops ---- */

static const char count_loop[] =
    "framework tf\n"
    "input limit: int32[]\n"
    "i/init = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "while/Enter = Enter[T=int32, frame_name=\"while/while_context\", is_constant=false, "
    "parallel_iterations=10](i/init)\n"
    "while/Enter_1 = Enter[T=int32, frame_name=\"while/while_context\", is_constant=true, "
    "parallel_iterations=10](limit)\n"
    "while/Merge = Merge[N=2, T=int32](while/Enter, while/NextIteration) -> (int32[], int32[])\n"
    "while/Less = Less[T=int32](while/Merge, while/Enter_1)\n"
    "while/LoopCond = LoopCond(while/Less) -> (bool[])\n"
    "while/Switch = Switch[T=int32](while/Merge, while/LoopCond) -> (int32[], int32[])\n"
    "while/Identity = Identity[T=int32](while/Switch:1)\n"
    "while/add/y = Const[dtype=int32, value=tensor<int32[]>{1}]() @ while/Identity\n"
    "while/add = AddV2[T=int32](while/Identity, while/add/y)\n"
    "while/NextIteration = NextIteration[T=int32](while/add)\n"
    "while/Exit = Exit[T=int32](while/Switch)\n"
    "output result = while/Exit:0\n";

static void test_while_loop(void) {
  graph *g = check_parse_graph(count_loop);
  executor *e = new_ok(g);
  if (!e) goto done;
  static const int limits[] = {5, 0, 1, 37};
  for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
    graph_tensor *o[1] = {0};
    CHECK_OK(run(e, o, 1, "limit", scalar(GRAPH_DT_INT32, limits[k])));
    CHECK(o[0] && o[0]->dtype == GRAPH_DT_INT32 && tensor_get_s64(o[0], 0) == limits[k]);
    free_outs(o, 1);
  }
  /* Less and AddV2 compile once each, whatever the trip count. */
  CHECK(executor_get_stats(e)->compiles == 2);
  CHECK(executor_get_stats(e)->cache_hits > 50);
done:
  executor_free(e);
  graph_free(g);
}

/* total = sum over i < n of (number of inner iterations j < i) = n(n-1)/2. The last
 * outer iteration enters the inner loop with dead values only. */
static const char nested_loops[] =
    "framework tf\n"
    "input n: int32[]\n"
    "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "o/Enter_i = Enter[T=int32, frame_name=\"outer\", is_constant=false](zero)\n"
    "o/Enter_t = Enter[T=int32, frame_name=\"outer\", is_constant=false](zero)\n"
    "o/Enter_n = Enter[T=int32, frame_name=\"outer\", is_constant=true](n)\n"
    "o/Merge_i = Merge[N=2, T=int32](o/Enter_i, o/Next_i) -> (int32[], int32[])\n"
    "o/Merge_t = Merge[N=2, T=int32](o/Enter_t, o/Next_t) -> (int32[], int32[])\n"
    "o/Less = Less[T=int32](o/Merge_i, o/Enter_n)\n"
    "o/Cond = LoopCond(o/Less)\n"
    "o/Switch_i = Switch[T=int32](o/Merge_i, o/Cond) -> (int32[], int32[])\n"
    "o/Switch_t = Switch[T=int32](o/Merge_t, o/Cond) -> (int32[], int32[])\n"
    "o/Id_i = Identity[T=int32](o/Switch_i:1)\n"
    "o/Id_t = Identity[T=int32](o/Switch_t:1)\n"
    "o/one = Const[dtype=int32, value=tensor<int32[]>{1}]() @ o/Id_i\n"
    "o/i1 = AddV2[T=int32](o/Id_i, o/one)\n"
    "o/zero = Const[dtype=int32, value=tensor<int32[]>{0}]() @ o/Id_i\n"
    "i/Enter_j = Enter[T=int32, frame_name=\"inner\", is_constant=false](o/zero)\n"
    "i/Enter_t = Enter[T=int32, frame_name=\"inner\", is_constant=false](o/Id_t)\n"
    "i/Enter_lim = Enter[T=int32, frame_name=\"inner\", is_constant=true](o/Id_i)\n"
    "i/Merge_j = Merge[N=2, T=int32](i/Enter_j, i/Next_j) -> (int32[], int32[])\n"
    "i/Merge_t = Merge[N=2, T=int32](i/Enter_t, i/Next_t) -> (int32[], int32[])\n"
    "i/Less = Less[T=int32](i/Merge_j, i/Enter_lim)\n"
    "i/Cond = LoopCond(i/Less)\n"
    "i/Switch_j = Switch[T=int32](i/Merge_j, i/Cond) -> (int32[], int32[])\n"
    "i/Switch_t = Switch[T=int32](i/Merge_t, i/Cond) -> (int32[], int32[])\n"
    "i/Id_j = Identity[T=int32](i/Switch_j:1)\n"
    "i/Id_t = Identity[T=int32](i/Switch_t:1)\n"
    "i/one = Const[dtype=int32, value=tensor<int32[]>{1}]() @ i/Id_j\n"
    "i/j1 = AddV2[T=int32](i/Id_j, i/one)\n"
    "i/t1 = AddV2[T=int32](i/Id_t, i/one)\n"
    "i/Next_j = NextIteration[T=int32](i/j1)\n"
    "i/Next_t = NextIteration[T=int32](i/t1)\n"
    "i/Exit_t = Exit[T=int32](i/Switch_t)\n"
    "o/Next_i = NextIteration[T=int32](o/i1)\n"
    "o/Next_t = NextIteration[T=int32](i/Exit_t)\n"
    "o/Exit_t = Exit[T=int32](o/Switch_t)\n"
    "output total = o/Exit_t:0\n";

static void test_nested_loops(void) {
  graph *g = check_parse_graph(nested_loops);
  executor *e = new_ok(g);
  if (!e) goto done;
  static const int ns[] = {0, 1, 2, 5, 9};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    graph_tensor *o[1] = {0};
    CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, ns[k])));
    CHECK(o[0] && tensor_get_s64(o[0], 0) == ns[k] * (ns[k] - 1) / 2);
    free_outs(o, 1);
  }
done:
  executor_free(e);
  graph_free(g);
}

/* --------------------------------------------------------------- TensorArray ---- */

/* Writes v, 2v, 4v, ... at indices 0..n-1 in a loop, then gathers and reads. */
static const char ta_loop[] =
    "framework tf\n"
    "input n: int32[]\n"
    "ta = TensorArrayV3[clear_after_read=false, dtype=float, dynamic_size=false, element_shape=<2>](n) "
    "-> (resource[], float[])\n"
    "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "v0 = Const[dtype=float, value=tensor<float[2]>{1, 10}]()\n"
    "w/Enter_i = Enter[T=int32, frame_name=\"w\"](zero)\n"
    "w/Enter_v = Enter[T=float, frame_name=\"w\"](v0)\n"
    "w/Enter_f = Enter[T=float, frame_name=\"w\"](ta:1)\n"
    "w/Enter_ta = Enter[T=resource, frame_name=\"w\", is_constant=true](ta:0)\n"
    "w/Enter_n = Enter[T=int32, frame_name=\"w\", is_constant=true](n)\n"
    "w/Merge_i = Merge[N=2, T=int32](w/Enter_i, w/Next_i) -> (int32[], int32[])\n"
    "w/Merge_v = Merge[N=2, T=float](w/Enter_v, w/Next_v) -> (float[2], int32[])\n"
    "w/Merge_f = Merge[N=2, T=float](w/Enter_f, w/Next_f) -> (float[], int32[])\n"
    "w/Less = Less[T=int32](w/Merge_i, w/Enter_n)\n"
    "w/Cond = LoopCond(w/Less)\n"
    "w/Sw_i = Switch[T=int32](w/Merge_i, w/Cond) -> (int32[], int32[])\n"
    "w/Sw_v = Switch[T=float](w/Merge_v, w/Cond) -> (float[2], float[2])\n"
    "w/Sw_f = Switch[T=float](w/Merge_f, w/Cond) -> (float[], float[])\n"
    "w/Id_i = Identity[T=int32](w/Sw_i:1)\n"
    "w/Id_v = Identity[T=float](w/Sw_v:1)\n"
    "w/Id_f = Identity[T=float](w/Sw_f:1)\n"
    "w/write = TensorArrayWriteV3[T=float](w/Enter_ta, w/Id_i, w/Id_v, w/Id_f)\n"
    "w/one = Const[dtype=int32, value=tensor<int32[]>{1}]() @ w/Id_i\n"
    "w/two = Const[dtype=float, value=tensor<float[]>{2}]() @ w/Id_i\n"
    "w/i1 = AddV2[T=int32](w/Id_i, w/one)\n"
    "w/v1 = Mul[T=float](w/Id_v, w/two)\n"
    "w/Next_i = NextIteration[T=int32](w/i1)\n"
    "w/Next_v = NextIteration[T=float](w/v1)\n"
    "w/Next_f = NextIteration[T=float](w/write)\n"
    "w/Exit_f = Exit[T=float](w/Sw_f)\n"
    "idx = Const[dtype=int32, value=tensor<int32[3]>{2, 0, 1}]()\n"
    "gather = TensorArrayGatherV3[dtype=float, element_shape=<2>](ta, idx, w/Exit_f)\n"
    "one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"
    "read = TensorArrayReadV3[dtype=float](ta, one, w/Exit_f)\n"
    "size = TensorArraySizeV3(ta, w/Exit_f)\n"
    "output gather = gather:0\n"
    "output read = read:0\n"
    "output size = size:0\n";

static void test_tensor_array_loop(void) {
  graph *g = check_parse_graph(ta_loop);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[3] = {0};
  CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 3)));
  CHECK(o[0] && o[0]->rank == 2 && o[0]->dims[0] == 3 && o[0]->dims[1] == 2);
  CHECK(values_are(o[0], 6, (double[]){4, 40, 1, 10, 2, 20}));
  CHECK(values_are(o[1], 2, (double[]){2, 20}));
  CHECK(o[2] && tensor_get_s64(o[2], 0) == 3);
  free_outs(o, 3);
  /* A second run starts from a fresh TensorArray. */
  CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 3)));
  CHECK(values_are(o[1], 2, (double[]){2, 20}));
  free_outs(o, 3);
  /* Gathering index 2 of a 2-element array is out of range; the error names the node. */
  CHECK_ERR(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 2)), "node gather (tf.TensorArrayGatherV3)");
done:
  executor_free(e);
  graph_free(g);
}

/* ---------------------------------------------------------------- TensorList ---- */

static const char tl_loop[] =
    "framework tf\n"
    "input n: int32[]\n"
    "eshape = Const[dtype=int32, value=tensor<int32[1]>{2}]()\n"
    "tl = TensorListReserve[element_dtype=float, shape_type=int32](eshape, n) -> (variant[])\n"
    "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "v0 = Const[dtype=float, value=tensor<float[2]>{1, -1}]()\n"
    "w/Enter_i = Enter[T=int32, frame_name=\"w\"](zero)\n"
    "w/Enter_v = Enter[T=float, frame_name=\"w\"](v0)\n"
    "w/Enter_l = Enter[T=variant, frame_name=\"w\"](tl)\n"
    "w/Enter_n = Enter[T=int32, frame_name=\"w\", is_constant=true](n)\n"
    "w/Merge_i = Merge[N=2, T=int32](w/Enter_i, w/Next_i) -> (int32[], int32[])\n"
    "w/Merge_v = Merge[N=2, T=float](w/Enter_v, w/Next_v) -> (float[2], int32[])\n"
    "w/Merge_l = Merge[N=2, T=variant](w/Enter_l, w/Next_l) -> (variant[], int32[])\n"
    "w/Less = Less[T=int32](w/Merge_i, w/Enter_n)\n"
    "w/Cond = LoopCond(w/Less)\n"
    "w/Sw_i = Switch[T=int32](w/Merge_i, w/Cond) -> (int32[], int32[])\n"
    "w/Sw_v = Switch[T=float](w/Merge_v, w/Cond) -> (float[2], float[2])\n"
    "w/Sw_l = Switch[T=variant](w/Merge_l, w/Cond) -> (variant[], variant[])\n"
    "w/Id_i = Identity[T=int32](w/Sw_i:1)\n"
    "w/Id_v = Identity[T=float](w/Sw_v:1)\n"
    "w/Id_l = Identity[T=variant](w/Sw_l:1)\n"
    "w/set = TensorListSetItem[element_dtype=float](w/Id_l, w/Id_i, w/Id_v)\n"
    "w/one = Const[dtype=int32, value=tensor<int32[]>{1}]() @ w/Id_i\n"
    "w/three = Const[dtype=float, value=tensor<float[]>{3}]() @ w/Id_i\n"
    "w/i1 = AddV2[T=int32](w/Id_i, w/one)\n"
    "w/v1 = Mul[T=float](w/Id_v, w/three)\n"
    "w/Next_i = NextIteration[T=int32](w/i1)\n"
    "w/Next_v = NextIteration[T=float](w/v1)\n"
    "w/Next_l = NextIteration[T=variant](w/set)\n"
    "w/Exit_l = Exit[T=variant](w/Sw_l)\n"
    "stack = TensorListStack[element_dtype=float, num_elements=-1](w/Exit_l, eshape)\n"
    "len = TensorListLength(w/Exit_l)\n"
    "output stack = stack:0\n"
    "output len = len:0\n";

static void test_tensor_list_loop(void) {
  graph *g = check_parse_graph(tl_loop);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[2] = {0};
  CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 3)));
  CHECK(o[0] && o[0]->rank == 2 && o[0]->dims[0] == 3);
  CHECK(values_are(o[0], 6, (double[]){1, -1, 3, -3, 9, -9}));
  CHECK(o[1] && tensor_get_s64(o[1], 0) == 3);
  free_outs(o, 2);
  /* An empty list stacks to [0, 2] thanks to the element shape. */
  CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 0)));
  CHECK(o[0] && o[0]->rank == 2 && o[0]->dims[0] == 0 && o[0]->dims[1] == 2);
  free_outs(o, 2);
done:
  executor_free(e);
  graph_free(g);
}

/* ----------------------------------------------------------------- variables ---- */

/* First run assigns x (the variable is uninitialized), later runs add x. */
static const char var_graph[] =
    "framework tf\n"
    "input x: float[2]\n"
    "v = VarHandleOp[container=\"\", dtype=float, shape=<2>, shared_name=\"acc\"]() -> (resource[])\n"
    "init = VarIsInitializedOp(v)\n"
    "sw = Switch[T=float](x, init) -> (float[2], float[2])\n"
    "assign = AssignVariableOp[dtype=float](v, sw:0) -> ()\n"
    "add = AssignAddVariableOp[dtype=float](v, sw:1) -> ()\n"
    "done = ControlTrigger() @ assign, add\n"
    "read = ReadVariableOp[dtype=float](v) @ done\n"
    "output value = read:0\n";

static void test_variable_across_runs(void) {
  graph *g = check_parse_graph(var_graph);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[1] = {0};
  CHECK_OK(run(e, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){3, 1})));
  CHECK(values_are(o[0], 2, (double[]){3, 1}));
  free_outs(o, 1);
  CHECK_OK(run(e, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){4, 0.5})));
  CHECK(values_are(o[0], 2, (double[]){7, 1.5}));
  free_outs(o, 1);
  CHECK_OK(run(e, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){-7, -1.5})));
  CHECK(values_are(o[0], 2, (double[]){0, 0}));
  free_outs(o, 1);
done:
  executor_free(e);
  graph_free(g);

  /* Reading a variable nobody assigned is an error naming the variable and node. */
  g = check_parse_graph(
      "framework tf\n"
      "v = VarHandleOp[dtype=float, shape=<>, shared_name=\"w\"]() -> (resource[])\n"
      "r = ReadVariableOp[dtype=float](v)\n"
      "output r = r:0\n");
  e = new_ok(g);
  if (e) CHECK_ERR(executor_run(e, 0, NULL, NULL, o), "node r (tf.ReadVariableOp)");
  executor_free(e);
  graph_free(g);
}

/* ------------------------------------------------------------- compile cache ---- */

static void test_cache_sharing(void) {
  graph *g = check_parse_graph(
      "framework tf\n"
      "input x: float[2]\n"
      "input y: float[2]\n"
      "input z: float[3]\n"
      "a = Neg[T=float](x)\n"
      "b = Neg[T=float](y)\n"
      "c = Neg[T=float](z)\n"
      "l1 = LeakyRelu[T=float, alpha=0.1](x)\n"
      "l2 = LeakyRelu[T=float, alpha=0.2](y)\n"
      "output a = a:0\n"
      "output b = b:0\n"
      "output c = c:0\n"
      "output l1 = l1:0\n"
      "output l2 = l2:0\n");
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[5] = {0};
  CHECK_OK(run(e, o, 3, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, -2}), "y", vec(GRAPH_DT_FLOAT, 2, (double[]){3, 4}),
               "z", vec(GRAPH_DT_FLOAT, 3, (double[]){5, 6, 7})));
  CHECK(values_are(o[0], 2, (double[]){-1, 2}));
  CHECK(values_are(o[1], 2, (double[]){-3, -4}));
  CHECK(values_are(o[2], 3, (double[]){-5, -6, -7}));
  CHECK(o[3] && fabs(tensor_get_f64(o[3], 1) - -0.2) < 1e-6);
  free_outs(o, 5);
  const executor_stats *st = executor_get_stats(e);
  /* a and b share a module; c differs in shape; l1 and l2 in an attribute. */
  CHECK(st->compiles == 4);
  CHECK(st->cache_hits == 1);
  CHECK(st->lowered_runs == 5);
  CHECK_OK(run(e, o, 3, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "y", vec(GRAPH_DT_FLOAT, 2, (double[]){3, 4}),
               "z", vec(GRAPH_DT_FLOAT, 3, (double[]){5, 6, 7})));
  free_outs(o, 5);
  CHECK(st->compiles == 4);
  CHECK(st->cache_hits == 6);
done:
  executor_free(e);
  graph_free(g);
}

/* ------------------------------------------------------------ ONNX functions ---- */

static const char onnx_if[] =
    "framework onnx\n"
    "graph then_b {\n"
    "  input x: float[2]\n"
    "  neg = Neg(x)\n"
    "  output y = neg:0\n"
    "}\n"
    "graph else_b {\n"
    "  input x: float[2]\n"
    "  two = Constant[value=tensor<float[]>{2}]()\n"
    "  mul = Mul(x, two)\n"
    "  output y = mul:0\n"
    "}\n"
    "input cond: bool[]\n"
    "input x: float[2]\n"
    "if = If[_captures=[\"x\"], else_branch=@else_b, then_branch=@then_b](cond, x) -> (float[2])\n"
    "output out = if:0\n";

static void test_onnx_if(void) {
  graph *g = check_parse_graph(onnx_if);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[1] = {0};
  CHECK_OK(run(e, o, 2, "cond", scalar(GRAPH_DT_BOOL, 1), "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})));
  CHECK(values_are(o[0], 2, (double[]){-1, -2}));
  free_outs(o, 1);
  CHECK_OK(run(e, o, 2, "cond", scalar(GRAPH_DT_BOOL, 0), "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})));
  CHECK(values_are(o[0], 2, (double[]){2, 4}));
  free_outs(o, 1);
done:
  executor_free(e);
  graph_free(g);
}

/* Loop(M, "", v0) capturing w: v += w each iteration, scanning v before the add. */
static const char onnx_loop[] =
    "framework onnx\n"
    "graph body {\n"
    "  input iter: int64[]\n"
    "  input cond_in: bool[]\n"
    "  input v: float[2]\n"
    "  input w: float[2]\n"
    "  s = Add(v, w)\n"
    "  c = Identity(cond_in)\n"
    "  snap = Identity(v)\n"
    "  output cond_out = c:0\n"
    "  output v_out = s:0\n"
    "  output scan = snap:0\n"
    "}\n"
    "input M: int64[]\n"
    "input v0: float[2]\n"
    "input w: float[2]\n"
    "loop = Loop[_absent_inputs=[1], _captures=[\"w\"], body=@body](M, v0, w) -> (float[2], float[?,2])\n"
    "output v = loop:0\n"
    "output scan = loop:1\n";

static void test_onnx_loop(void) {
  graph *g = check_parse_graph(onnx_loop);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[2] = {0};
  CHECK_OK(run(e, o, 3, "M", scalar(GRAPH_DT_INT64, 3), "v0", vec(GRAPH_DT_FLOAT, 2, (double[]){0, 0}), "w",
               vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})));
  CHECK(values_are(o[0], 2, (double[]){3, 6}));
  CHECK(o[1] && o[1]->rank == 2 && values_are(o[1], 6, (double[]){0, 0, 1, 2, 2, 4}));
  free_outs(o, 2);
  /* Zero iterations: the scan output takes its element shape from the declaration. */
  CHECK_OK(run(e, o, 3, "M", scalar(GRAPH_DT_INT64, 0), "v0", vec(GRAPH_DT_FLOAT, 2, (double[]){5, 6}), "w",
               vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})));
  CHECK(values_are(o[0], 2, (double[]){5, 6}));
  CHECK(o[1] && o[1]->rank == 2 && o[1]->dims[0] == 0 && o[1]->dims[1] == 2);
  free_outs(o, 2);
done:
  executor_free(e);
  graph_free(g);
}

/* Scan: running sum over the rows of X (reversed when the direction says so). */
static const char onnx_scan[] =
    "framework onnx\n"
    "graph body {\n"
    "  input s: float[2]\n"
    "  input x: float[2]\n"
    "  a = Add(s, x)\n"
    "  b = Identity(a)\n"
    "  output s_out = a:0\n"
    "  output y = b:0\n"
    "}\n"
    "input s0: float[2]\n"
    "input X: float[3,2]\n"
    "scan = Scan[body=@body, num_scan_inputs=1, scan_input_directions=[1]](s0, X) -> (float[2], float[3,2])\n"
    "output s = scan:0\n"
    "output y = scan:1\n";

static void test_onnx_scan(void) {
  graph *g = check_parse_graph(onnx_scan);
  if (g) g->opset = 13;
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[2] = {0};
  graph_tensor *X = NULL;
  CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 2, (int64_t[]){3, 2}, &X));
  for (int i = 0; i < 6; i++) tensor_set_f64(X, i, i + 1);
  CHECK_OK(run(e, o, 2, "s0", vec(GRAPH_DT_FLOAT, 2, (double[]){0, 100}), "X", X));
  CHECK(values_are(o[0], 2, (double[]){9, 112}));
  CHECK(values_are(o[1], 6, (double[]){5, 106, 8, 110, 9, 112}));
  free_outs(o, 2);
done:
  executor_free(e);
  graph_free(g);
}

/* TF2 functional while: i counts to n through cond/body functions. */
static const char tf_while[] =
    "framework tf\n"
    "graph cond_f {\n"
    "  input i: int32[]\n"
    "  input lim: int32[]\n"
    "  l = Less[T=int32](i, lim)\n"
    "  output r = l:0\n"
    "}\n"
    "graph body_f {\n"
    "  input i: int32[]\n"
    "  input lim: int32[]\n"
    "  one = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"
    "  a = AddV2[T=int32](i, one)\n"
    "  output i_out = a:0\n"
    "  output lim_out = lim:0\n"
    "}\n"
    "input n: int32[]\n"
    "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
    "w = StatelessWhile[body=@body_f, cond=@cond_f](zero, n) -> (int32[], int32[])\n"
    "output i = w:0\n";

static void test_tf_while_function(void) {
  graph *g = check_parse_graph(tf_while);
  executor *e = new_ok(g);
  if (!e) goto done;
  graph_tensor *o[1] = {0};
  CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 6)));
  CHECK(o[0] && tensor_get_s64(o[0], 0) == 6);
  free_outs(o, 1);
done:
  executor_free(e);
  graph_free(g);
}

/* -------------------------------------------------------------------- errors ---- */

static void test_errors(void) {
  /* Unknown op: named with its node, and the hint. */
  graph *g = check_parse_graph(
      "framework tf\n"
      "input x: float[2]\n"
      "a = FrobnicateOp(x)\n"
      "b = Neg[T=float](a)\n"
      "output b = b:0\n");
  executor *e = NULL;
  if (g) {
    kiln_status s = executor_new(g, NULL, &e);
    CHECK(s && strstr(kiln_status_message(s), "node a (tf.FrobnicateOp)") &&
          strstr(kiln_status_message(s), "kiln ops"));
    CHECK(s && kiln_status_code(s) == KILN_UNIMPLEMENTED);
    kiln_status_free(s);
    CHECK(e == NULL);
  }
  graph_free(g);

  /* Unused unknown ops do not matter: the graph is pruned to its results. */
  g = check_parse_graph(
      "framework tf\n"
      "input x: float[2]\n"
      "a = FrobnicateOp(x)\n"
      "b = Neg[T=float](x)\n"
      "output b = b:0\n");
  e = new_ok(g);
  graph_tensor *o[2] = {0};
  if (e) {
    CHECK(executor_num_feeds(e) == 1);
    /* Missing input: listed with dtype and shape. */
    CHECK_ERR(executor_run(e, 0, NULL, NULL, o), "missing input x: float[2]");
    CHECK_ERR(run(e, o, 1, "y", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})), "unknown input 'y'");
    CHECK_ERR(run(e, o, 1, "x", vec(GRAPH_DT_INT32, 2, (double[]){1, 2})), "element types differ");
    CHECK_ERR(run(e, o, 1, "x", vec(GRAPH_DT_FLOAT, 3, (double[]){1, 2, 3})), "dimensions differ");
    CHECK(o[0] == NULL);
  }
  executor_free(e);
  graph_free(g);

  /* An op that fails at run time: node, op and input shapes in the message. */
  g = check_parse_graph(
      "framework tf\n"
      "input x: float[?]\n"
      "input y: float[?]\n"
      "add = AddV2[T=float](x, y)\n"
      "output s = add:0\n");
  e = new_ok(g);
  if (e) {
    kiln_status s = run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "y",
                        vec(GRAPH_DT_FLOAT, 3, (double[]){1, 2, 3}));
    CHECK(s && strstr(kiln_status_message(s), "node add (tf.AddV2) on inputs (float[2], float[3])"));
    kiln_status_free(s);
    /* The executor stays usable after an error. */
    CHECK_OK(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "y", vec(GRAPH_DT_FLOAT, 2, (double[]){3, 4})));
    CHECK(values_are(o[0], 2, (double[]){4, 6}));
    free_outs(o, 1);
  }
  executor_free(e);
  graph_free(g);

  /* A node reading values of two different loop frames. */
  g = check_parse_graph(
      "framework tf\n"
      "input x: int32[]\n"
      "en = Enter[T=int32, frame_name=\"f\"](x)\n"
      "m = Merge[N=2, T=int32](en, nx) -> (int32[], int32[])\n"
      "bad = AddV2[T=int32](m, x)\n"
      "nx = NextIteration[T=int32](bad)\n"
      "ex = Exit[T=int32](m)\n"
      "output r = ex:0\n");
  if (g) CHECK_ERR(executor_new(g, NULL, &e), "different loop frames");
  graph_free(g);

  /* Switch with a predicate that is not a scalar. */
  g = check_parse_graph(
      "framework tf\n"
      "input x: float[2]\n"
      "input p: bool[2]\n"
      "sw = Switch[T=float](x, p) -> (float[2], float[2])\n"
      "output r = sw:1\n");
  e = new_ok(g);
  if (e) {
    CHECK_ERR(run(e, o, 2, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2}), "p", vec(GRAPH_DT_BOOL, 2, (double[]){1, 0})),
              "node sw (tf.Switch)");
  }
  executor_free(e);
  graph_free(g);

  /* Native ops whose graph declares fewer outputs than they make. */
  g = check_parse_graph(
      "framework tf\n"
      "input n: int32[]\n"
      "ta = TensorArrayV3[dtype=float](n) -> ()\n"
      "r = Identity[T=int32](n) @ ta\n"
      "output r = r:0\n");
  e = new_ok(g);
  if (e) {
    CHECK_OK(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, 2)));
    CHECK(o[0] && tensor_get_s64(o[0], 0) == 2);
    free_outs(o, 1);
    CHECK_ERR(run(e, o, 1, "n", scalar(GRAPH_DT_INT32, -1)), "negative");
  }
  executor_free(e);
  graph_free(g);

  /* Unknown device. */
  g = check_parse_graph("framework tf\ninput x: float[2]\noutput r = x:0\n");
  if (g) {
    executor_options opts = {.device = "tpu"};
    CHECK_ERR(executor_new(g, &opts, &e), "unknown device 'tpu'");
    /* A graph that only forwards its input. */
    e = new_ok(g);
    if (e) {
      CHECK_OK(run(e, o, 1, "x", vec(GRAPH_DT_FLOAT, 2, (double[]){1, 2})));
      CHECK(values_are(o[0], 2, (double[]){1, 2}));
      free_outs(o, 1);
    }
    executor_free(e);
  }
  graph_free(g);
}

static void test_native_op_list(void) {
  int n = executor_native_op_count();
  CHECK(n > 40);
  for (int i = 1; i < n; i++) CHECK(strcmp(executor_native_op_at(i - 1), executor_native_op_at(i)) < 0);
  CHECK(executor_knows_op("tf.Switch"));
  CHECK(executor_knows_op("tf.TensorArrayV3"));
  CHECK(executor_knows_op("onnx.Loop"));
  CHECK(!executor_knows_op("tf.FrobnicateOp"));
}

TEST_MAIN(TEST(test_switch_merge), TEST(test_dead_result), TEST(test_while_loop), TEST(test_nested_loops),
          TEST(test_tensor_array_loop), TEST(test_tensor_list_loop), TEST(test_variable_across_runs),
          TEST(test_cache_sharing), TEST(test_onnx_if), TEST(test_onnx_loop), TEST(test_onnx_scan),
          TEST(test_tf_while_function), TEST(test_errors), TEST(test_native_op_list))
