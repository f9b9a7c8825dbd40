/* Unit tests for the dataflow graph IR (src/graph): building graphs through the API and
 * through text, the text round trip on the example graphs in tests/graph, every
 * attribute kind, topological order with loop back-edges, pruning, the consumer index,
 * cloning, host tensors and their literal conversions, and parse errors that must name
 * line:col. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_util.h"
#include "graph/graph.h"

/* print(parse(print(g))) == print(g); returns print(g) (caller frees). */
static char *check_roundtrip(const graph *g) {
  char *t1 = graph_to_string(g);
  graph *g2 = NULL;
  kiln_status s = graph_parse(t1, strlen(t1), "reprint", &g2);
  if (s) {
    check_fail(__FILE__, __LINE__, "reparse of printed graph", kiln_status_message(s));
    kiln_status_free(s);
    return t1;
  }
  char *t2 = graph_to_string(g2);
  if (strcmp(t1, t2) != 0) {
    fprintf(stderr, "first print:\n%s\nsecond print:\n%s\n", t1, t2);
    check_fail(__FILE__, __LINE__, "print(parse(print(g))) == print(g)", NULL);
  }
  free(t2);
  graph_free(g2);
  return t1;
}

static void test_dtypes(void) {
  graph_dtype t;
  CHECK(graph_dtype_from_name("float", 5, &t) && t == GRAPH_DT_FLOAT);
  CHECK(graph_dtype_from_name("f32", 3, &t) && t == GRAPH_DT_FLOAT);
  CHECK(graph_dtype_from_name("pred", 4, &t) && t == GRAPH_DT_BOOL);
  CHECK(graph_dtype_from_name("resource", 8, &t) && t == GRAPH_DT_RESOURCE);
  CHECK(!graph_dtype_from_name("tuple", 5, &t));
  CHECK(!graph_dtype_from_name("floaty", 6, &t));
  hlo_type h;
  CHECK(graph_dtype_to_hlo(GRAPH_DT_BFLOAT16, &h) && h == HLO_BF16);
  CHECK(graph_dtype_to_hlo(GRAPH_DT_UINT16, &h) && h == HLO_U16);
  CHECK(!graph_dtype_to_hlo(GRAPH_DT_STRING, &h));
  CHECK(!graph_dtype_to_hlo(GRAPH_DT_COMPLEX64, &h));
  CHECK(!graph_dtype_to_hlo(GRAPH_DT_INVALID, &h));
  for (int i = 0; i < HLO_TYPE_COUNT; i++) {
    graph_dtype g = graph_dtype_from_hlo((hlo_type)i);
    if (i == HLO_TUPLE || i == HLO_TOKEN) {
      CHECK(g == GRAPH_DT_INVALID);
    } else {
      CHECK(graph_dtype_to_hlo(g, &h) && h == (hlo_type)i);
      CHECK(graph_dtype_size(g) == hlo_type_size((hlo_type)i));
    }
  }
  CHECK(graph_dtype_from_tf(1) == GRAPH_DT_FLOAT && graph_dtype_from_tf(3) == GRAPH_DT_INT32);
  CHECK(graph_dtype_from_tf(101) == GRAPH_DT_FLOAT); /* DT_FLOAT_REF */
  CHECK(graph_dtype_from_tf(20) == GRAPH_DT_RESOURCE && graph_dtype_from_tf(21) == GRAPH_DT_VARIANT);
  CHECK(graph_dtype_from_tf(11) == GRAPH_DT_INVALID); /* qint8 */
  CHECK(graph_dtype_to_tf(GRAPH_DT_HALF) == 19 && graph_dtype_to_tf(GRAPH_DT_UINT64) == 23);
  CHECK(graph_dtype_from_onnx(1) == GRAPH_DT_FLOAT && graph_dtype_from_onnx(7) == GRAPH_DT_INT64);
  CHECK(graph_dtype_from_onnx(16) == GRAPH_DT_BFLOAT16 && graph_dtype_from_onnx(99) == GRAPH_DT_INVALID);
  CHECK(graph_dtype_to_onnx(GRAPH_DT_BOOL) == 9 && graph_dtype_to_onnx(GRAPH_DT_RESOURCE) == 0);
  int64_t dims[3] = {2, -1, 3};
  graph_shape s = graph_shape_make(3, dims);
  CHECK(!graph_shape_is_fully_known(&s) && graph_shape_elements(&s) == -1);
  s.dims[1] = 4;
  CHECK(graph_shape_elements(&s) == 24);
  hlo_shape hs;
  CHECK(graph_shape_to_hlo(&s, GRAPH_DT_FLOAT, &hs) && hs.type == HLO_F32 && hs.rank == 3 && hs.dims[1] == 4);
  graph_shape u = graph_shape_unknown();
  CHECK(u.rank == GRAPH_UNKNOWN && !graph_shape_to_hlo(&u, GRAPH_DT_FLOAT, &hs));
}

/* Builds x -> Relu -> (Add with a constant) through the API and checks the text. */
static void test_build_api(void) {
  graph *g = graph_new("tf");
  graph_node *x, *c, *r, *a;
  int64_t dims[2] = {-1, 3};
  graph_shape xs = graph_shape_make(2, dims);
  CHECK_OK(graph_add_input(g, "x", GRAPH_DT_FLOAT, &xs, &x));
  CHECK_OK(graph_add_node(g, "c", "Const", &c));
  CHECK(strcmp(c->op, "tf.Const") == 0 && strcmp(graph_node_op_base(c), "Const") == 0);
  graph_tensor *t;
  CHECK_OK(tensor_create(GRAPH_DT_FLOAT, 1, (int64_t[]){3}, &t));
  for (int i = 0; i < 3; i++) tensor_set_f64(t, i, i + 0.5);
  graph_node_set_attr_tensor(c, "value", t);
  tensor_free(t); /* the graph holds its own reference */
  graph_node_set_attr_type(c, "dtype", GRAPH_DT_FLOAT);
  CHECK_OK(graph_add_node(g, "r", "Relu", &r));
  CHECK_OK(graph_add_edge(x, 0, r));
  graph_node_set_attr_type(r, "T", GRAPH_DT_FLOAT);
  graph_node_set_requested_device(r, "cpu:0");
  CHECK_OK(graph_add_node(g, "a", "onnx.Add", &a)); /* another namespace stays as given */
  CHECK_OK(graph_add_edge(r, 0, a));
  CHECK_OK(graph_add_edge(c, 0, a));
  CHECK_OK(graph_add_control_edge(c, r));
  CHECK_OK(graph_add_control_edge(c, r)); /* duplicate: ignored */
  CHECK(r->n_control == 1);
  graph_node_set_output(a, 0, GRAPH_DT_FLOAT, &xs);
  graph_node_set_assigned_device(a, "/device:CPU:0");
  CHECK_OK(graph_add_result(g, "y", a, 0));
  CHECK_OK(graph_validate(g));

  graph_node *fail;
  CHECK_ERR(graph_add_node(g, "r", "Relu", &fail), "used twice");
  CHECK_ERR(graph_add_node(g, "", "Relu", &fail), "non-empty");
  CHECK(fail == NULL);
  CHECK_ERR(graph_add_edge(a, 0, x), "cannot have inputs");
  CHECK_ERR(graph_add_edge(x, 1, a), "only output 0");
  CHECK_ERR(graph_add_edge(a, -1, r), "port");
  CHECK_ERR(graph_add_result(g, "y", a, 0), "named twice");
  CHECK(graph_find_node(g, "r") == g->nodes[2] && !graph_find_node(g, "nope"));
  CHECK(graph_node_is(a, "Add") && graph_node_is(a, "onnx.Add") && !graph_node_is(a, "tf.Add"));
  CHECK(strcmp(graph_unique_name(g, "r"), "r_1") == 0 && strcmp(graph_unique_name(g, "q"), "q") == 0);

  char *text = graph_to_string(g);
  const char *want =
      "framework tf\n\n"
      "input x: float[?,3]\n"
      "c = Const[dtype=float, value=tensor<float[3]>{0.5, 1.5, 2.5}]()\n"
      "r = Relu[T=float, device=cpu:0](x) @ c\n"
      "a = onnx.Add[assigned_device=/device:CPU:0](r, c) -> (float[?,3])\n"
      "output y = a:0\n";
  if (strcmp(text, want) != 0) fprintf(stderr, "got:\n%s\nwant:\n%s\n", text, want);
  CHECK(strcmp(text, want) == 0);
  free(text);
  free(check_roundtrip(g));
  graph_free(g);
}

static void test_parse_structure(void) {
  graph *g = check_parse_graph(
      "# comment line\n"
      "framework tf\n"
      "input x: float[1,?,3]   # trailing comment\n"
      "input \"odd name\"[device=gpu:1]: ?\n"
      "n98 = Foo(x)\n"
      "n119 = NoOp() -> ()\n"
      "n121 = Identity[T=float, device=cpu:0](n98) @ n119\n"
      "n5 = Pair(n121, \"odd name\") -> (float, int32[2])\n"
      "n6 = onnx.Add(n5:1, n5)\n"
      "output y = n5:0\n"
      "output \"z:0\" = n6\n");
  CHECK(g->n_nodes == 7 && g->n_inputs == 2 && g->n_results == 2);
  CHECK(strcmp(g->framework, "tf") == 0);
  graph_node *x = g->inputs[0], *odd = g->inputs[1];
  CHECK(x->is_input && x->outputs[0].dtype == GRAPH_DT_FLOAT && x->outputs[0].shape.rank == 3);
  CHECK(x->outputs[0].shape.dims[1] == GRAPH_UNKNOWN && x->outputs[0].shape.dims[2] == 3);
  CHECK(strcmp(odd->name, "odd name") == 0 && strcmp(odd->requested_device, "gpu:1") == 0);
  CHECK(odd->outputs[0].dtype == GRAPH_DT_INVALID && odd->outputs[0].shape.rank == GRAPH_UNKNOWN);
  graph_node *n121 = graph_find_node(g, "n121");
  CHECK(strcmp(n121->op, "tf.Identity") == 0 && strcmp(n121->requested_device, "cpu:0") == 0);
  CHECK(n121->n_inputs == 1 && n121->inputs[0].node == graph_find_node(g, "n98") && n121->inputs[0].port == 0);
  CHECK(n121->n_control == 1 && n121->control_inputs[0] == graph_find_node(g, "n119"));
  graph_dtype T;
  CHECK_OK(graph_node_get_type(n121, "T", &T));
  CHECK(T == GRAPH_DT_FLOAT);
  CHECK(graph_find_node(g, "n119")->n_outputs == 0);
  graph_node *n5 = graph_find_node(g, "n5"), *n6 = graph_find_node(g, "n6");
  CHECK(n5->n_outputs == 2 && n5->outputs[0].dtype == GRAPH_DT_FLOAT && n5->outputs[0].shape.rank == GRAPH_UNKNOWN);
  CHECK(n5->outputs[1].dtype == GRAPH_DT_INT32 && n5->outputs[1].shape.rank == 1 && n5->outputs[1].shape.dims[0] == 2);
  CHECK(strcmp(n6->op, "onnx.Add") == 0);
  CHECK(n6->inputs[0].node == n5 && n6->inputs[0].port == 1 && n6->inputs[1].port == 0);
  CHECK(g->results[0].node == n5 && g->results[0].port == 0 && strcmp(g->results[1].name, "z:0") == 0);
  CHECK(graph_find_result(g, "z:0")->node == n6);
  char *text = check_roundtrip(g);
  CHECK(strstr(text, "input \"odd name\"[device=gpu:1]: ?\n") != NULL);
  CHECK(strstr(text, "n5 = Pair(n121, \"odd name\") -> (float, int32[2])\n") != NULL);
  CHECK(strstr(text, "output \"z:0\" = n6:0\n") != NULL);
  free(text);
  graph_free(g);

  /* Keywords are plain node names when an '=' follows; no framework: ops as written. */
  g = check_parse_graph("input = Placeholder()\noutput = Identity(input)\ngraph = X(output)\noutput out = graph\n");
  CHECK(g->n_nodes == 3 && g->n_inputs == 0 && strcmp(graph_find_node(g, "graph")->op, "X") == 0);
  free(check_roundtrip(g));
  graph_free(g);

  /* Empty text: an empty graph. */
  g = check_parse_graph("  # nothing\n");
  CHECK(g->n_nodes == 0);
  graph_free(g);
}

static void test_roundtrip_files(void) {
  static const char *files[] = {"tests/graph/convnet.graph", "tests/graph/while_loop.graph",
                                "tests/graph/onnx_if.graph", "tests/graph/control_deps.graph",
                                "tests/graph/multi_output.graph"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    graph *g = NULL;
    kiln_status s = graph_parse_file(files[i], &g);
    if (s) {
      check_fail(__FILE__, __LINE__, files[i], kiln_status_message(s));
      kiln_status_free(s);
      continue;
    }
    CHECK_OK(graph_validate(g));
    char *t1 = check_roundtrip(g);
    graph *c = graph_clone(g);
    char *t2 = graph_to_string(c);
    CHECK(strcmp(t1, t2) == 0);
    CHECK_OK(graph_validate(c));
    free(t1);
    free(t2);
    graph_free(c);
    graph_free(g);
  }
  CHECK_ERR(graph_parse_file("tests/graph/no_such_file.graph", &(graph *){NULL}), "cannot open");
}

static void test_file_contents(void) {
  graph *g = NULL;
  CHECK_OK(graph_parse_file("tests/graph/onnx_if.graph", &g));
  if (!g) return;
  CHECK(g->n_functions == 2);
  graph_node *n = graph_find_node(g, "if");
  const graph_attr_value *then_b = graph_node_attr(n, "then_branch");
  CHECK(then_b && then_b->kind == GRAPH_ATTR_FUNC && then_b->func.body == graph_find_function(g, "then_branch_0"));
  CHECK(then_b->func.body->root == g && then_b->func.body->n_inputs == 1 && then_b->func.body->n_results == 1);
  CHECK(strcmp(then_b->func.body->nodes[1]->op, "onnx.Neg") == 0);
  CHECK(strcmp(graph_find_node(g, "gelu")->op, "com.microsoft.Gelu") == 0);
  CHECK(strcmp(graph_node_op_base(graph_find_node(g, "gelu")), "Gelu") == 0);
  graph_free(g);

  CHECK_OK(graph_parse_file("tests/graph/multi_output.graph", &g));
  if (!g) return;
  CHECK(graph_find_node(g, "custom")->n_outputs == 3); /* grown by custom:2 */
  const graph_tensor *w;
  CHECK_OK(graph_node_get_tensor(graph_find_node(g, "words"), "value", &w));
  CHECK(w->dtype == GRAPH_DT_STRING && w->n == 2);
  CHECK(tensor_string(w, 1)->len == 7 && memcmp(tensor_string(w, 1)->data, "w\xc3\xb6rld\n", 7) == 0);
  graph_free(g);
}

static void test_attr_kinds(void) {
  const char *text =
      "n = Op[b=true, c=false, e=[], f=1.0, f2=1e-05, f3=-inf, f4=nan, f5=-0.0, f6=3.4028235e+38, "
      "fl=[0.5, 2.0], fn=@body, fn2=@body[T=float, \"device\"=\"x\", n=@body], i=-9223372036854775808, "
      "il=[1, -2, 3], s=\"a\\\"b\\\\c\\n\\t\\x00\\xff\", sh=<2,?,3>, sh0=<>, shl=[<1>, <unknown>], "
      "t=int32, t2=?, t3=f16, tl=[float, string, resource, variant], "
      "x=tensor<half[2]>{0.1, -65504}, xb=tensor<bfloat16[]>{3.140625}, xc=tensor<complex64[2]>{(1, -2), (0.5, inf)}, "
      "xd=tensor<double[2,2]>{1e-300, 2, 3, 4}, xe=tensor<float[0]>{}, xi=tensor<int8[3]>{-128, 127, 0}, "
      "xl=[tensor<bool[2]>{true, false}, tensor<uint64[1]>{18446744073709551615}], "
      "xr=tensor<resource[2]>{...}, xs=tensor<string[1,2]>{\"\", \"\\x01\"}](a)\n"
      "a = A()\n"
      "graph body {\n}\n";
  graph *g = check_parse_graph(text);
  graph_node *n = graph_find_node(g, "n");
  if (!n) {
    graph_free(g);
    return;
  }
  bool b;
  CHECK_OK(graph_node_get_bool(n, "b", &b));
  CHECK(b);
  const graph_attr_value *v = graph_node_attr(n, "e");
  CHECK(v->kind == GRAPH_ATTR_LIST && v->list.n == 0 && v->list.elem == GRAPH_ATTR_NONE);
  float f;
  CHECK_OK(graph_node_get_float(n, "f2", &f));
  CHECK(f == 1e-5f);
  CHECK(isinf(graph_node_attr(n, "f3")->f) && graph_node_attr(n, "f3")->f < 0);
  CHECK(isnan(graph_node_attr(n, "f4")->f));
  CHECK(signbit(graph_node_attr(n, "f5")->f));
  int64_t i64;
  CHECK_OK(graph_node_get_int(n, "i", &i64));
  CHECK(i64 == INT64_MIN);
  int64_t ints[8];
  int count;
  CHECK_OK(graph_node_get_ints(n, "il", ints, 8, &count));
  CHECK(count == 3 && ints[1] == -2);
  CHECK_OK(graph_node_get_ints(n, "e", ints, 8, &count)); /* empty list: empty ints */
  CHECK(count == 0);
  CHECK_ERR(graph_node_get_ints(n, "fl", ints, 8, &count), "expected ints");
  const graph_bytes *s;
  CHECK_OK(graph_node_get_string(n, "s", &s));
  CHECK(s->len == 9 && memcmp(s->data, "a\"b\\c\n\t\0\xff", 9) == 0);
  graph_shape sh;
  CHECK_OK(graph_node_get_shape(n, "sh", &sh));
  CHECK(sh.rank == 3 && sh.dims[1] == GRAPH_UNKNOWN && sh.dims[2] == 3);
  CHECK_OK(graph_node_get_shape(n, "sh0", &sh));
  CHECK(sh.rank == 0);
  CHECK(graph_node_attr(n, "shl")->list.items[1].shape->rank == GRAPH_UNKNOWN);
  graph_dtype t;
  CHECK_OK(graph_node_get_type(n, "t3", &t));
  CHECK(t == GRAPH_DT_HALF);
  CHECK(graph_node_attr(n, "tl")->list.items[3].type == GRAPH_DT_VARIANT);
  const graph_attr_value *fn2 = graph_node_attr(n, "fn2");
  CHECK(fn2->func.body == graph_find_function(g, "body") && fn2->func.n_attrs == 3);
  CHECK(strcmp(fn2->func.attrs[0].name, "T") == 0 && strcmp(fn2->func.attrs[1].name, "device") == 0);
  CHECK(fn2->func.attrs[2].value.func.body == graph_find_function(g, "body"));
  const graph_tensor *x;
  CHECK_OK(graph_node_get_tensor(n, "x", &x));
  CHECK(x->dtype == GRAPH_DT_HALF && fabs(tensor_get_f64(x, 0) - 0.1) < 1e-4 && tensor_get_f64(x, 1) == -65504);
  CHECK_OK(graph_node_get_tensor(n, "xc", &x));
  CHECK(((const float *)x->data)[1] == -2 && isinf(((const float *)x->data)[3]));
  CHECK_OK(graph_node_get_tensor(n, "xd", &x));
  CHECK(x->rank == 2 && tensor_get_f64(x, 0) == 1e-300);
  CHECK_OK(graph_node_get_tensor(n, "xe", &x));
  CHECK(x->n == 0 && x->rank == 1);
  CHECK_OK(graph_node_get_tensor(n, "xi", &x));
  CHECK(tensor_get_s64(x, 0) == -128 && tensor_get_s64(x, 1) == 127);
  const graph_attr_value *xl = graph_node_attr(n, "xl");
  CHECK(xl->list.elem == GRAPH_ATTR_TENSOR && ((const uint64_t *)xl->list.items[1].tensor->data)[0] == UINT64_MAX);
  CHECK_OK(graph_node_get_tensor(n, "xs", &x));
  CHECK(x->rank == 2 && tensor_string(x, 0)->len == 0 && tensor_string(x, 1)->data[0] == 1);
  CHECK_ERR(graph_node_get_int(n, "nope", &i64), "has no attribute 'nope'");
  CHECK_ERR(graph_node_get_int(n, "f", &i64), "is a float, expected an int");
  CHECK(graph_node_attr_int_or(n, "nope", 7) == 7 && graph_node_attr_float_or(n, "f", 0) == 1.0f);
  CHECK(graph_node_attr_bool_or(n, "c", true) == false);

  char *printed = check_roundtrip(g);
  CHECK(strstr(printed, "f=1.0, f2=1e-05, f3=-inf, f4=nan, f5=-0.0, f6=3.4028235e+38") != NULL);
  CHECK(strstr(printed, "s=\"a\\\"b\\\\c\\n\\t\\x00\\xff\"") != NULL);
  CHECK(strstr(printed, "t3=half") != NULL && strstr(printed, "t2=?") != NULL);
  CHECK(strstr(printed, "x=tensor<half[2]>{0.1, -6.55e+04}") != NULL);
  CHECK(strstr(printed, "xc=tensor<complex64[2]>{(1, -2), (0.5, inf)}") != NULL);
  CHECK(strstr(printed, "xr=tensor<resource[2]>{...}") != NULL);
  CHECK(strstr(printed, "fn2=@body[T=float, \"device\"=\"x\", n=@body]") != NULL);
  CHECK(strstr(printed, "sh=<2,?,3>, sh0=<>, shl=[<1>, <unknown>]") != NULL);
  free(printed);

  /* Setters replace, removal works, the attribute list stays sorted. */
  graph_node_set_attr_int(n, "b", 5);
  CHECK(graph_node_attr(n, "b")->kind == GRAPH_ATTR_INT);
  graph_node_set_attr_ints(n, "aaa", 2, (int64_t[]){4, 5});
  graph_node_set_attr_floats(n, "zzz", 1, (float[]){0.25f});
  graph_node_set_attr_types(n, "mmm", 1, (graph_dtype[]){GRAPH_DT_INT64});
  graph_node_set_attr_string(n, "str", "q\0r", 3);
  CHECK(strcmp(n->attrs[0].name, "aaa") == 0 && strcmp(n->attrs[n->n_attrs - 1].name, "zzz") == 0);
  CHECK(graph_node_remove_attr(n, "aaa") && !graph_node_remove_attr(n, "aaa"));
  CHECK(graph_node_attr(n, "str")->s.len == 3);
  CHECK_OK(graph_validate(g));
  free(check_roundtrip(g));
  graph_free(g);
}

static int position(graph_node **order, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(order[i]->name, name) == 0) return i;
  return -1;
}

static void test_topo_loop(void) {
  graph *g = NULL;
  CHECK_OK(graph_parse_file("tests/graph/while_loop.graph", &g));
  if (!g) return;
  graph_node **order;
  int n;
  CHECK_OK(graph_topo_order(g, &order, &n));
  CHECK(n == g->n_nodes);
  /* Every non-back edge goes forward. */
  for (int i = 0; i < g->n_nodes; i++) {
    graph_node *d = g->nodes[i];
    int pd = position(order, n, d->name);
    for (int k = 0; k < d->n_inputs; k++)
      if (!graph_node_is_next_iteration(d->inputs[k].node)) CHECK(position(order, n, d->inputs[k].node->name) < pd);
    for (int k = 0; k < d->n_control; k++) CHECK(position(order, n, d->control_inputs[k]->name) < pd);
  }
  CHECK(position(order, n, "while/Merge") < position(order, n, "while/NextIteration"));
  CHECK(position(order, n, "while/add/y") > position(order, n, "while/Identity"));
  free(order);
  CHECK(graph_node_is_next_iteration(graph_find_node(g, "while/NextIteration")));
  graph_free(g);

  /* The same cycle without a NextIteration is an error that names a node on it. */
  g = check_parse_graph("x = A(y)\ny = B(z)\nz = C(y)\nw = D(x)\n");
  kiln_status s = graph_topo_order(g, &order, &n);
  CHECK(s && (strstr(kiln_status_message(s), "'y'") || strstr(kiln_status_message(s), "'z'")));
  CHECK(s && strstr(kiln_status_message(s), "cycle"));
  kiln_status_free(s);
  graph_free(g);
  /* A control-edge cycle counts as well; RefNextIteration in any namespace breaks one. */
  g = check_parse_graph("a = A() @ b\nb = B(a)\n");
  CHECK_ERR(graph_topo_order(g, &order, &n), "cycle");
  graph_free(g);
  g = check_parse_graph("framework onnx\na = Merge(e, b)\nb = tf.RefNextIteration(a)\ne = Enter()\n");
  CHECK_OK(graph_topo_order(g, &order, &n));
  CHECK(n == 3 && strcmp(order[0]->name, "e") == 0 && strcmp(order[1]->name, "a") == 0);
  free(order);
  graph_free(g);
}

static void test_topo_stable(void) {
  /* An ordered graph keeps its order; a reversed one comes out sorted, ties by position. */
  graph *g = check_parse_graph("a = A()\nb = B(a)\nc = C()\nd = D(b, c)\n");
  graph_node **order;
  int n;
  CHECK_OK(graph_topo_order(g, &order, &n));
  for (int i = 0; i < n; i++) CHECK(order[i] == g->nodes[i]);
  free(order);
  graph_free(g);
  g = check_parse_graph("d = D(b, c)\nc = C()\nb = B(a)\na = A()\n");
  CHECK_OK(graph_topo_order(g, &order, &n));
  CHECK(n == 4 && strcmp(order[0]->name, "c") == 0 && strcmp(order[1]->name, "a") == 0);
  CHECK(strcmp(order[2]->name, "b") == 0 && strcmp(order[3]->name, "d") == 0);
  free(order);
  graph_free(g);
  g = graph_new(NULL);
  CHECK_OK(graph_topo_order(g, &order, &n));
  CHECK(n == 0);
  free(order);
  graph_free(g);
}

static void test_prune(void) {
  graph *g = check_parse_graph(
      "input x: float[2]\n"
      "input unused: float[2]\n"
      "a = A(x)\n"
      "dead1 = B(a)\n"
      "dead2 = C(dead1) @ a\n"
      "ctl = Ctl()\n"
      "b = B(a) @ ctl\n"
      "side = Side(x)\n"
      "dead3 = D(side)\n"
      "output y = b:0\n");
  graph_node *side = graph_find_node(g, "side");
  int removed = graph_prune(g, &side, 1);
  CHECK(removed == 3);
  CHECK(g->n_nodes == 6 && !graph_find_node(g, "dead1") && !graph_find_node(g, "dead2") && !graph_find_node(g, "dead3"));
  CHECK(graph_find_node(g, "unused") && graph_find_node(g, "ctl") && graph_find_node(g, "side"));
  CHECK_OK(graph_validate(g));
  for (int i = 0; i < g->n_nodes; i++) CHECK(g->nodes[i]->index == i);
  const graph_use *uses;
  CHECK(graph_consumers(graph_find_node(g, "a"), 0, &uses) == 1 && strcmp(uses[0].node->name, "b") == 0);
  free(check_roundtrip(g));
  CHECK(graph_prune(g, NULL, 0) == 1); /* side is no longer a root */
  /* Names of removed nodes are free again. */
  graph_node *n;
  CHECK_OK(graph_add_node(g, "dead1", "X", &n));
  graph_free(g);

  /* Pruning keeps a whole while loop feeding the result. */
  CHECK_OK(graph_parse_file("tests/graph/while_loop.graph", &g));
  if (!g) return;
  int before = g->n_nodes;
  CHECK(graph_prune(g, NULL, 0) == 0 && g->n_nodes == before);
  graph_free(g);
}

static void test_consumers(void) {
  graph *g = check_parse_graph(
      "s = Split() -> (?, ?, ?)\n"
      "a = A(s, s:2)\n"
      "b = B(s:2, a) @ s\n"
      "c = C(s:2) @ s, a\n");
  graph_node *s = graph_find_node(g, "s"), *a = graph_find_node(g, "a");
  const graph_use *uses;
  CHECK(graph_consumers(s, 0, &uses) == 1 && uses[0].node == a && uses[0].index == 0);
  CHECK(graph_consumers(s, 1, &uses) == 0);
  int k = graph_consumers(s, 2, &uses);
  CHECK(k == 3 && uses[0].node == a && uses[0].index == 1 && strcmp(uses[1].node->name, "b") == 0);
  CHECK(strcmp(uses[2].node->name, "c") == 0 && uses[2].index == 0);
  k = graph_consumers(s, GRAPH_CONTROL, &uses);
  CHECK(k == 2 && uses[0].index == GRAPH_CONTROL && strcmp(uses[1].node->name, "c") == 0);
  CHECK(graph_consumers(s, 3, &uses) == 0 && graph_consumers(s, -2, &uses) == 0);
  CHECK(graph_num_consumers(s) == 6 && graph_num_consumers(a) == 2);
  /* The index follows mutations. */
  graph_node *d;
  CHECK_OK(graph_add_node(g, "d", "D", &d));
  CHECK_OK(graph_add_edge(s, 1, d));
  CHECK(graph_consumers(s, 1, &uses) == 1 && uses[0].node == d);
  CHECK(graph_remove_control_edge(s, graph_find_node(g, "b")) && !graph_remove_control_edge(s, d));
  CHECK(graph_consumers(s, GRAPH_CONTROL, &uses) == 1);
  CHECK(graph_replace_uses(s, 2, a, 0) == 3);
  CHECK(graph_consumers(s, 2, &uses) == 0 && graph_consumers(a, 0, &uses) == 4);
  CHECK_OK(graph_set_input(d, 0, a, 0));
  CHECK(graph_consumers(s, 1, &uses) == 0);
  CHECK_ERR(graph_set_input(d, 3, a, 0), "no input 3");
  /* Output counts cannot drop below a used port. */
  CHECK_ERR(graph_node_set_num_outputs(s, 0), "consumes output 0");
  CHECK_OK(graph_node_set_num_outputs(s, 1));
  CHECK(s->n_outputs == 1);
  graph_free(g);
}

static void test_remove_node(void) {
  graph *g = check_parse_graph("input x: float\na = A(x)\nb = B() @ a\nc = C(a)\noutput r = c:0\n");
  graph_node *a = graph_find_node(g, "a"), *b = graph_find_node(g, "b"), *c = graph_find_node(g, "c");
  CHECK_ERR(graph_remove_node(a), "'c' consumes its output 0");
  CHECK_ERR(graph_remove_node(c), "graph result 'r'");
  CHECK_OK(graph_remove_node(b));
  CHECK(g->n_nodes == 3 && !graph_find_node(g, "b") && b->index == -1);
  CHECK_ERR(graph_remove_node(b), "already removed");
  graph_node *x = graph_find_node(g, "x");
  CHECK_OK(graph_add_control_edge(c, graph_find_node(g, "a")));
  CHECK_OK(graph_set_input(a, 0, c, 0));
  /* x has no consumers now: removing it also drops it from the inputs. */
  CHECK_OK(graph_remove_node(x));
  CHECK(g->n_inputs == 0 && g->n_nodes == 2);
  CHECK_OK(graph_validate(g));
  char *text = graph_to_string(g);
  CHECK(strcmp(text, "a = A(c) @ c\nc = C(a)\noutput r = c:0\n") == 0);
  free(text);
  graph_free(g);
}

static void test_clone(void) {
  graph *g = NULL;
  CHECK_OK(graph_parse_file("tests/graph/onnx_if.graph", &g));
  if (!g) return;
  graph *c = graph_clone(g);
  graph_node *cif = graph_find_node(c, "if");
  CHECK(cif != graph_find_node(g, "if") && cif->id == graph_find_node(g, "if")->id);
  const graph_attr_value *v = graph_node_attr(cif, "then_branch");
  CHECK(v->func.body == graph_find_function(c, "then_branch_0") && v->func.body != graph_find_function(g, "then_branch_0"));
  CHECK(v->func.body->root == c);
  /* Mutating the clone leaves the original alone. */
  graph_node *n;
  CHECK_OK(graph_add_node(c, "extra", "Extra", &n));
  CHECK(graph_prune(c, NULL, 0) == 1);
  CHECK(!graph_find_node(g, "extra"));
  graph_free(g);
  CHECK_OK(graph_validate(c)); /* nothing in the clone points into the freed original */
  free(check_roundtrip(c));
  graph_free(c);

  /* Constants are shared by reference, not copied. */
  g = check_parse_graph("c = Const[value=tensor<float[2]>{1, 2}]()\n");
  c = graph_clone(g);
  const graph_tensor *t1, *t2;
  CHECK_OK(graph_node_get_tensor(graph_find_node(g, "c"), "value", &t1));
  CHECK_OK(graph_node_get_tensor(graph_find_node(c, "c"), "value", &t2));
  CHECK(t1 == t2 && atomic_load(&t1->refs) >= 2);
  graph_free(g);
  CHECK(tensor_get_f64(t2, 1) == 2);
  graph_free(c);

  /* Cloning a function gives a root with that body and the whole library. */
  CHECK_OK(graph_parse_file("tests/graph/onnx_if.graph", &g));
  if (!g) return;
  c = graph_clone(graph_find_function(g, "else_branch_0"));
  CHECK(c->root == c && c->n_nodes == 3 && c->n_functions == 2 && graph_find_node(c, "mul"));
  graph_free(c);
  graph_free(g);
}

static void test_functions_api(void) {
  graph *g = graph_new("onnx");
  graph *body;
  CHECK_OK(graph_add_function(g, "body", &body));
  graph *again;
  CHECK_ERR(graph_add_function(g, "body", &again), "defined twice");
  graph_node *i, *o, *x, *loop;
  CHECK_OK(graph_add_input(body, "i", GRAPH_DT_INT64, NULL, &i));
  CHECK_OK(graph_add_node(body, "o", "Identity", &o));
  CHECK_OK(graph_add_edge(i, 0, o));
  CHECK_OK(graph_add_result(body, "o", o, 0));
  CHECK_OK(graph_add_input(g, "x", GRAPH_DT_INT64, NULL, &x));
  CHECK_OK(graph_add_node(g, "loop", "Loop", &loop));
  graph_node_set_attr_func(loop, "body", body);
  CHECK_OK(graph_add_edge(x, 0, loop));
  CHECK_ERR(graph_add_edge(o, 0, loop), "crosses graphs");
  CHECK_OK(graph_add_result(g, "y", loop, 0));
  CHECK_OK(graph_validate(g));
  /* Names are per graph. */
  graph_node *dup;
  CHECK_OK(graph_add_node(g, "o", "Other", &dup));
  char *text = graph_to_string(g);
  const char *want =
      "framework onnx\n\n"
      "graph body {\n"
      "  input i: int64\n"
      "  o = Identity(i)\n"
      "  output o = o:0\n"
      "}\n\n"
      "input x: int64\n"
      "loop = Loop[body=@body](x)\n"
      "o = Other()\n"
      "output y = loop:0\n";
  if (strcmp(text, want) != 0) fprintf(stderr, "got:\n%s\nwant:\n%s\n", text, want);
  CHECK(strcmp(text, want) == 0);
  free(text);
  graph_free(body); /* a function: no-op, it goes with its root */
  free(check_roundtrip(g));
  graph_free(g);
}

static void test_tensor_literal(void) {
  graph_tensor *t;
  CHECK_OK(tensor_create(GRAPH_DT_INT16, 2, (int64_t[]){2, 3}, &t));
  for (int i = 0; i < 6; i++) tensor_set_s64(t, i, i * 1000 - 2500);
  hlo_literal *l;
  CHECK_OK(tensor_to_literal(t, &l));
  CHECK(l->shape.type == HLO_S16 && l->shape.rank == 2 && l->shape.dims[1] == 3 && l->n == 6);
  CHECK(literal_get_s64(l, 5) == 2500 && literal_get_s64(l, 0) == -2500);
  graph_tensor *back;
  CHECK_OK(tensor_from_literal(l, &back));
  CHECK(tensor_equal(t, back));
  tensor_free(back);
  /* Moves: adopt takes the literal's buffer, release hands it back. */
  void *buf = l->data;
  CHECK_OK(tensor_adopt_literal(l, &back));
  CHECK(back->data == buf && tensor_equal(t, back));
  hlo_literal *l2;
  CHECK_OK(tensor_release_to_literal(back, &l2));
  CHECK(l2->data == buf && literal_get_s64(l2, 3) == 500);
  literal_free(l2);
  /* A shared tensor is copied on release, and the caller's reference dropped. */
  tensor_ref(t);
  CHECK_OK(tensor_release_to_literal(t, &l2));
  CHECK(l2->data != t->data && atomic_load(&t->refs) == 1);
  literal_free(l2);
  hlo_literal view;
  CHECK(tensor_literal_view(t, &view) && view.data == t->data && literal_get_s64(&view, 1) == -1500);
  tensor_free(t);

  /* Every HLO element type converts both ways with the same bytes. */
  for (int h = 0; h < HLO_TYPE_COUNT; h++) {
    if (h == HLO_TUPLE || h == HLO_TOKEN) continue;
    hlo_shape sh = shape_make((hlo_type)h, 1, (int64_t[]){5});
    CHECK_OK(literal_create(&sh, &l));
    literal_fill_pseudo_random(l, 7);
    CHECK_OK(tensor_from_literal(l, &t));
    CHECK(graph_dtype_to_hlo(t->dtype, &sh.type) && (int)sh.type == h);
    CHECK_OK(tensor_to_literal(t, &l2));
    CHECK(literal_equal(l, l2));
    literal_free(l);
    literal_free(l2);
    tensor_free(t);
  }

  /* Types HLO lacks. */
  CHECK_OK(tensor_create(GRAPH_DT_STRING, 1, (int64_t[]){2}, &t));
  tensor_set_string(t, 0, "ab\0c", 4);
  CHECK(tensor_string(t, 0)->len == 4 && tensor_string(t, 1)->len == 0);
  CHECK(!tensor_literal_view(t, &view));
  CHECK_ERR(tensor_to_literal(t, &l), "no HLO literal form");
  graph_tensor *c;
  CHECK_OK(tensor_clone(t, &c));
  CHECK(tensor_equal(t, c) && tensor_string(c, 0)->data != tensor_string(t, 0)->data);
  tensor_set_string(c, 1, "x", 1);
  CHECK(!tensor_equal(t, c));
  strbuf b;
  strbuf_init(&b);
  tensor_print(&b, t, 0);
  CHECK(strcmp(strbuf_cstr(&b), "tensor<string[2]>{\"ab\\x00c\", \"\"}") == 0);
  strbuf_free(&b);
  tensor_free(c);
  tensor_free(t);
  hlo_literal tup;
  memset(&tup, 0, sizeof tup);
  tup.shape.type = HLO_TUPLE;
  CHECK_ERR(tensor_from_literal(&tup, &t), "tuple");

  /* Limits and bad shapes are errors, not crashes. */
  CHECK_ERR(tensor_create(GRAPH_DT_FLOAT, 2, (int64_t[]){1LL << 40, 1LL << 40}, &t), "limit");
  CHECK_ERR(tensor_create(GRAPH_DT_FLOAT, 1, (int64_t[]){-1}, &t), "negative");
  CHECK_ERR(tensor_create(GRAPH_DT_INVALID, 0, NULL, &t), "unknown element type");
  CHECK_OK(tensor_create_scalar(GRAPH_DT_BFLOAT16, &t));
  tensor_set_f64(t, 0, 1.0 / 3);
  CHECK(tensor_get_f64(t, 0) == 0.333984375);
  tensor_free(t);
}

static void test_elided(void) {
  graph *g = check_parse_graph("c = Const[value=tensor<float[4]>{1, 2, 3, 4}, v=tensor<int32[3]>{...}]()\n");
  graph_print_options opts = {.max_tensor_elements = 3};
  strbuf b;
  strbuf_init(&b);
  graph_print(&b, g, &opts);
  CHECK(strstr(strbuf_cstr(&b), "value=tensor<float[4]>{...}") != NULL);
  CHECK(strstr(strbuf_cstr(&b), "v=tensor<int32[3]>{") != NULL && !strstr(strbuf_cstr(&b), "int32[3]>{...}"));
  strbuf_free(&b);
  /* Elided values read back deterministically. */
  graph *g2 = check_parse_graph("c = Const[v=tensor<int32[3]>{...}]()\n");
  const graph_tensor *t1, *t2;
  CHECK_OK(graph_node_get_tensor(graph_find_node(g, "c"), "v", &t1));
  CHECK_OK(graph_node_get_tensor(graph_find_node(g2, "c"), "v", &t2));
  CHECK(tensor_equal(t1, t2));
  strbuf_init(&b);
  graph_node_print(&b, graph_find_node(g, "c"));
  CHECK(strstr(strbuf_cstr(&b), "value=tensor<float[4]>{1, 2, 3, 4}") != NULL);
  strbuf_free(&b);
  graph_free(g);
  graph_free(g2);
}

typedef struct bad_case {
  const char *text;
  const char *where;  /* "line:col" */
  const char *what;   /* part of the message */
} bad_case;

static void test_malformed(void) {
  static const bad_case cases[] = {
      {"a = Foo(b", "1:10", "expected ',' or ')', found end of input"},
      {"a = Foo(x)\nb Bar(a)\n", "2:3", "expected '=' after node name 'b'"},
      {"a = (x)\n", "1:5", "expected an op name, found '('"},
      {"a = Foo[T=flot](x)\n", "1:11", "expected an attribute value, found 'flot'"},
      {"a = Foo[T=float x]()\n", "1:17", "expected ',' or ']'"},
      {"a = Foo[s=\"abc]()\n", "1:11", "unterminated string"},
      {"a = Foo[s=\"a\\q\"]()\n", "1:13", "unknown escape"},
      {"a = Foo(nope)\n", "1:9", "unknown node 'nope'"},
      {"a = Foo()\na = Bar()\n", "2:1", "node 'a' is defined twice"},
      {"a = Foo() -> (float)\nb = Bar(a:1)\n", "2:9", "has 1 outputs (declared with ->)"},
      {"input x: flaot[2]\n", "1:10", "expected an element type"},
      {"input x: float[2,-1]\n", "1:18", "expected a dimension or '?', found '-1'"},
      {"a = A[s=<2,-1>]()\n", "1:12", "expected a dimension or '?'"},
      {"a = C[v=tensor<float[3]>{1, 2}]()\n", "1:30", "expected 3 values, found 2"},
      {"a = C[v=tensor<float[1]>{1, 2}]()\n", "1:29", "more values than the 1"},
      {"a = C[v=tensor<int8[1]>{300}]()\n", "1:25", "300 is out of range for int8"},
      {"a = C[v=tensor<int32[1]>{1.5}]()\n", "1:26", "expected an integer for a int32 tensor"},
      {"a = C[v=tensor<float[?]>{}]()\n", "1:22", "a tensor's dimensions must be known"},
      {"a = C[l=[1, 2.0]]()\n", "1:13", "list elements must all be of one kind"},
      {"a = C[l=[[1]]]()\n", "1:10", "lists cannot contain lists"},
      {"a = C[f=@missing]()\n", "1:10", "unknown function 'missing'"},
      {"a = C[i=99999999999999999999]()\n", "1:9", "out of range"},
      {"a = C[T=int32, T=float]()\n", "1:16", "attribute 'T' is given twice"},
      {"a = C[device=x, device=y]()\n", "1:17", "attribute 'device' is given twice"},
      {"a = C()\nframework tf\n", "2:1", "'framework' must be the first statement"},
      {"graph f {\n  graph g {\n  }\n}\n", "2:3", "only allowed at the top level"},
      {"graph f {\n  a = A()\n", "3:1", "expected '}' to close graph 'f'"},
      {"}\n", "1:1", "'}' without a graph block"},
      {"graph f {\n}\ngraph f {\n}\n", "3:7", "function 'f' is defined twice"},
      {"output y = a\noutput y = a\na = A()\n", "2:8", "result 'y' is defined twice"},
      {"a = A(b:x)\n", "1:9", "expected an output port number"},
      {"a = A(b:99999999)\nb = B()\n", "1:9", "output port 99999999 is out of range"},
      {"x = A(i:1)\ninput i: float\n", "1:7", "only output 0"},
      {"a = A[s=<1,2]()\n", "1:13", "expected ',' or '>'"},
      {"a = A[v=tensor<resource[1]>{0}]()\n", "1:29", "resource tensors have no values"},
      {"a = A[v=tensor<float[1]>{1e}]()\n", "1:26", "malformed number '1e'"},
      {"a = A[v=tensor<float[1]>{x}]()\n", "1:26", "malformed number 'x'"},
      {"a = A[v=tensor<float[1]>{1}\n", "2:1", "expected ',' or ']', found end of input"},
      {"a = A[v=tensor<float[2000000000,2000000000]>{...}]()\n", "1:9", "limit"},
      {"x\xff = A()\n", "1:2", "expected '=' after node name 'x'"},
      {"a = A()\n\n   ) b\n", "3:4", "expected a statement"},
      {"a = A[] () -> (float, int32[2] extra)\n", "1:32", "expected ',' or ')', found 'extra'"},
      {"\"a\\x00b\" = A()\n", "1:1", "cannot contain a NUL byte"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    graph *g = (graph *)1;
    kiln_status s = graph_parse(cases[i].text, strlen(cases[i].text), "bad.graph", &g);
    if (!s) {
      check_fail(__FILE__, __LINE__, cases[i].text, "parsed without error");
      graph_free(g);
      continue;
    }
    CHECK(g == NULL);
    char where[64];
    snprintf(where, sizeof where, "bad.graph:%s: ", cases[i].where);
    const char *m = kiln_status_message(s);
    if (!strstr(m, where) || !strstr(m, cases[i].what)) {
      char buf[512];
      snprintf(buf, sizeof buf, "case %zu: message \"%s\" lacks \"%s\" or \"%s\"", i, m, where, cases[i].what);
      check_fail(__FILE__, __LINE__, "malformed text error", buf);
    }
    kiln_status_free(s);
  }
  /* Embedded NUL bytes in the text are errors too, with their position. */
  static const char nul_text[] = "a = A()\nb\0 = B()\n";
  graph *g;
  CHECK_ERR(graph_parse(nul_text, sizeof nul_text - 1, NULL, &g), "<input>:2:2: expected '=' after node name 'b'");
}

TEST_MAIN(TEST(test_dtypes), TEST(test_build_api), TEST(test_parse_structure), TEST(test_roundtrip_files),
          TEST(test_file_contents), TEST(test_attr_kinds), TEST(test_topo_loop), TEST(test_topo_stable),
          TEST(test_prune), TEST(test_consumers), TEST(test_remove_node), TEST(test_clone), TEST(test_functions_api),
          TEST(test_tensor_literal), TEST(test_elided), TEST(test_malformed))
