/* Tests of the TensorFlow op library (src/ops/ops_tf_*.c): each case builds one graph
 * node by hand, lowers it into a fresh HLO module whose parameters are the node's
 * inputs (must-be-constant inputs given by value), evaluates the module with the
 * reference evaluator and compares against values computed here by direct loops from
 * TensorFlow's definitions — never from kiln's own helpers. Host kernels (NMS, Where,
 * Unique, …) run on graph tensors the same way. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eval/eval.h"
#include "graph/graph.h"
#include "hlo/builder.h"
#include "hlo/verifier.h"
#include "ops/ops.h"

/* ------------------------------------------------------------------ harness ---- */

#define MAX_IO 16

static graph *g_graph;
static int g_counter;

static graph_node *mk(const char *op) {
  char name[32];
  graph_node *n = NULL;
  if (!g_graph) g_graph = graph_new("tf");
  snprintf(name, sizeof name, "n%d", g_counter++);
  CHECK_OK(graph_add_node(g_graph, name, op, &n));
  return n;
}

static hlo_literal *lit(hlo_type t, int rank, const int64_t *dims, const double *v) {
  hlo_shape s = shape_make(t, rank, dims);
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  for (int64_t i = 0; l && i < l->n; i++) literal_set_f64(l, i, v ? v[i] : 0);
  return l;
}
static hlo_literal *lit_iota(hlo_type t, int rank, const int64_t *dims, double scale, double offset) {
  hlo_literal *l = lit(t, rank, dims, NULL);
  for (int64_t i = 0; l && i < l->n; i++) literal_set_f64(l, i, offset + scale * (double)i);
  return l;
}
static hlo_literal *lit_ints(hlo_type t, int n, const int64_t *v) {
  int64_t d = n;
  hlo_literal *l = lit(t, 1, &d, NULL);
  for (int i = 0; i < n; i++) literal_set_s64(l, i, v[i]);
  return l;
}
static hlo_literal *lit_scalar(hlo_type t, double v) { return lit(t, 0, NULL, &v); }
/* Deterministic values in [-1, 1). */
static hlo_literal *lit_rand(hlo_type t, int rank, const int64_t *dims, unsigned seed) {
  hlo_literal *l = lit(t, rank, dims, NULL);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; l && i < l->n; i++) {
    s = s * 1664525u + 1013904223u;
    literal_set_f64(l, i, (double)(s >> 8) / (double)(1u << 23) - 1.0);
  }
  return l;
}

/* Lowers node (as op_def `op`) with the given inputs, evaluates it and returns the
 * node's n_out outputs (caller frees). Takes ownership of the input literals. */
static kiln_status run(graph_node *node, int n_in, hlo_literal **in, int n_out, hlo_literal **out) {
  const op_def *d = op_find(node->op);
  kiln_status s = NULL;
  for (int i = 0; i < n_out; i++) out[i] = NULL;
  bool missing = false;
  for (int i = 0; i < n_in; i++) missing |= in[i] == NULL;
  if (!d || !d->lower || missing) {
    for (int i = 0; i < n_in; i++) literal_free(in[i]);
    return ERR_INVALID("no lowering for %s", node->op);
  }
  hlo_module *m = hlo_module_new("t");
  hlo_computation *c = hlo_computation_new(m, "main");
  hlo_instr *ins[MAX_IO] = {0}, *outs[MAX_IO + 8] = {0};
  const graph_tensor *consts[MAX_IO] = {0};
  graph_tensor *owned[MAX_IO] = {0};
  graph_dtype dts[MAX_IO];
  hlo_literal *args[MAX_IO];
  int n_args = 0;
  for (int i = 0; i < n_in && !s; i++) {
    dts[i] = graph_dtype_from_hlo(in[i]->shape.type);
    bool is_const = (d->const_inputs >> i & 1) || ((d->traits & OP_CONST_LAST_INPUT) && i == n_in - 1);
    if (is_const) {
      s = tensor_from_literal(in[i], &owned[i]);
      consts[i] = owned[i];
    } else {
      s = hlo_build_parameter(c, n_args, &in[i]->shape, NULL, &ins[i]);
      args[n_args++] = in[i];
    }
  }
  op_lower_ctx ctx = {.node = node, .comp = c, .n_inputs = n_in, .inputs = ins, .const_inputs = consts,
                      .input_dtypes = dts, .n_outputs = n_out, .outputs = outs};
  if (!s) s = d->lower(&ctx);
  hlo_instr *root = NULL;
  if (!s) {
    for (int i = 0; i < n_out; i++)
      if (!outs[i]) s = ERR_INTERNAL("output %d not produced", i);
  }
  if (!s) s = n_out == 1 ? NULL : hlo_build_tuple(c, n_out, outs, &root);
  if (!s) s = hlo_build_set_root(c, n_out == 1 ? outs[0] : root);
  if (!s) {
    hlo_build_set_entry(m, c);
    s = hlo_build_order_computations(m);
  }
  if (!s) s = hlo_verify_module(m);
  hlo_literal *res = NULL;
  if (!s) s = eval_module(m, args, n_args, &res);
  if (!s) {
    if (n_out == 1) {
      out[0] = res;
    } else {
      for (int i = 0; i < n_out; i++) out[i] = literal_clone(res->tuple[i]);
      literal_free(res);
    }
  }
  for (int i = 0; i < n_in; i++) {
    literal_free(in[i]);
    tensor_free(owned[i]);
  }
  hlo_module_free(m);
  return s;
}

static hlo_literal *run1(graph_node *node, int n_in, hlo_literal **in) {
  hlo_literal *out = NULL;
  CHECK_OK(run(node, n_in, in, 1, &out));
  return out;
}

static void check_dims(const hlo_literal *l, int rank, const int64_t *dims, int line) {
  char buf[200];
  if (!l) {
    check_fail(__FILE__, line, "result exists", NULL);
    return;
  }
  bool ok = l->shape.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = l->shape.dims[i] == dims[i];
  if (!ok) {
    char *s = shape_to_string(&l->shape);
    snprintf(buf, sizeof buf, "got %s", s);
    free(s);
    check_fail(__FILE__, line, "result dims", buf);
  }
}

/* max|a-b| <= 1e-4 + 1e-3 |b| (f32), exact for ints/bools. */
static void check_vals(const hlo_literal *l, int64_t n, const double *want, int line) {
  if (!l) return;
  if (l->n != n) {
    char buf[100];
    snprintf(buf, sizeof buf, "%lld elements, expected %lld", (long long)l->n, (long long)n);
    check_fail(__FILE__, line, "element count", buf);
    return;
  }
  bool exact = !hlo_type_is_float(l->shape.type);
  for (int64_t i = 0; i < n; i++) {
    double a = literal_get_f64(l, i), b = want[i];
    bool ok = exact ? a == b : (isnan(b) ? isnan(a) : (a == b || fabs(a - b) <= 1e-4 + 1e-3 * fabs(b)));
    if (!ok) {
      char buf[160];
      snprintf(buf, sizeof buf, "element %lld: got %.9g, expected %.9g", (long long)i, a, b);
      check_fail(__FILE__, line, "value", buf);
      return;
    }
  }
}
#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define CHECK_DIMS(l, ...) check_dims((l), DIMS(__VA_ARGS__), __LINE__)
#define CHECK_VALS(l, n, want) check_vals((l), (n), (want), __LINE__)

static void set_str(graph_node *n, const char *name, const char *v) { graph_node_set_attr_string(n, name, v, strlen(v)); }
static void set_ints(graph_node *n, const char *name, int k, const int64_t *v) { graph_node_set_attr_ints(n, name, k, v); }
static void set_strs(graph_node *n, const char *name, int k, const char *const *v) {
  graph_attr_value items[8], list;
  memset(items, 0, sizeof items);
  for (int i = 0; i < k; i++) {
    items[i].kind = GRAPH_ATTR_STRING;
    items[i].s.data = (char *)v[i];
    items[i].s.len = strlen(v[i]);
  }
  memset(&list, 0, sizeof list);
  list.kind = GRAPH_ATTR_LIST;
  list.list.elem = GRAPH_ATTR_STRING;
  list.list.n = k;
  list.list.items = items;
  graph_node_set_attr(n, name, &list);
}

/* ------------------------------------------------------------ elementwise ---- */

static void test_binary_broadcast(void) {
  graph_node *n = mk("AddV2");
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(2, 3), 1, 0), lit_iota(HLO_F32, DIMS(3), 10, 0)};
  hlo_literal *r = run1(n, 2, in);
  double want[6];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = (i * 3 + j) + 10.0 * j;
  CHECK_DIMS(r, 2, 3);
  CHECK_VALS(r, 6, want);
  literal_free(r);
}

static void test_floor_div_mod(void) {
  int64_t a[] = {7, -7, 7, -7, 6, -6, 0};
  int64_t b[] = {2, 2, -2, -2, 3, 3, 5};
  double wd[7], wm[7];
  for (int i = 0; i < 7; i++) {
    wd[i] = floor((double)a[i] / (double)b[i]);
    wm[i] = (double)a[i] - wd[i] * (double)b[i];
  }
  hlo_literal *in[2] = {lit_ints(HLO_S32, 7, a), lit_ints(HLO_S32, 7, b)};
  hlo_literal *r = run1(mk("FloorDiv"), 2, in);
  CHECK_VALS(r, 7, wd);
  literal_free(r);
  hlo_literal *in2[2] = {lit_ints(HLO_S32, 7, a), lit_ints(HLO_S32, 7, b)};
  r = run1(mk("FloorMod"), 2, in2);
  CHECK_VALS(r, 7, wm);
  literal_free(r);
  /* float FloorMod: sign of the divisor */
  double fa[] = {5.5, -5.5, 5.5, -5.5}, fb[] = {2, 2, -2, -2}, fw[4];
  for (int i = 0; i < 4; i++) fw[i] = fa[i] - floor(fa[i] / fb[i]) * fb[i];
  hlo_literal *in3[2] = {lit(HLO_F32, DIMS(4), fa), lit(HLO_F32, DIMS(4), fb)};
  r = run1(mk("FloorMod"), 2, in3);
  CHECK_VALS(r, 4, fw);
  literal_free(r);
  /* Div on ints truncates (TF's C semantics) */
  hlo_literal *in4[2] = {lit_ints(HLO_S32, 7, a), lit_ints(HLO_S32, 7, b)};
  r = run1(mk("Div"), 2, in4);
  double wt[7];
  for (int i = 0; i < 7; i++) wt[i] = (double)(a[i] / b[i]);
  CHECK_VALS(r, 7, wt);
  literal_free(r);
}

static void test_activations(void) {
  double x[] = {-3, -1, -0.25, 0, 0.5, 2, 7, -20, 20};
  int n = 9;
  struct {
    const char *op;
    double (*f)(double);
  } cases[] = {{"Relu", NULL}, {"Relu6", NULL}, {"Elu", NULL}, {"Selu", NULL}, {"Softplus", NULL},
               {"Sigmoid", NULL}, {"Softsign", NULL}, {"LeakyRelu", NULL}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    graph_node *nd = mk(cases[k].op);
    if (!strcmp(cases[k].op, "LeakyRelu")) graph_node_set_attr_float(nd, "alpha", 0.1f);
    hlo_literal *in[1] = {lit(HLO_F32, DIMS(9), x)};
    hlo_literal *r = run1(nd, 1, in);
    double want[9];
    for (int i = 0; i < n; i++) {
      double v = x[i];
      switch (k) {
        case 0: want[i] = v > 0 ? v : 0; break;
        case 1: want[i] = v < 0 ? 0 : v > 6 ? 6 : v; break;
        case 2: want[i] = v > 0 ? v : exp(v) - 1; break;
        case 3: want[i] = 1.0507009873554804934193349852946 * (v > 0 ? v : 1.6732632423543772848170429916717 * (exp(v) - 1)); break;
        case 4: want[i] = log1p(exp(v)); break;
        case 5: want[i] = 1 / (1 + exp(-v)); break;
        case 6: want[i] = v / (1 + fabs(v)); break;
        default: want[i] = v > 0 ? v : 0.1 * v; break;
      }
    }
    CHECK_VALS(r, n, want);
    literal_free(r);
  }
}

static void test_round_cast_select(void) {
  double x[] = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6};
  double wr[] = {0, 2, 2, -0.0, -2, 2, -3};
  hlo_literal *in[1] = {lit(HLO_F32, DIMS(7), x)};
  hlo_literal *r = run1(mk("Round"), 1, in);
  CHECK_VALS(r, 7, wr);
  literal_free(r);
  graph_node *c = mk("Cast");
  graph_node_set_attr_type(c, "DstT", GRAPH_DT_INT32);
  hlo_literal *in2[1] = {lit(HLO_F32, DIMS(7), x)};
  r = run1(c, 1, in2);
  double wc[] = {0, 1, 2, 0, -1, 2, -2};
  CHECK(r && r->shape.type == HLO_S32);
  CHECK_VALS(r, 7, wc);
  literal_free(r);
  /* Select v1 with a vector condition picks rows. */
  double cond[] = {1, 0};
  hlo_literal *in3[3] = {lit(HLO_PRED, DIMS(2), cond), lit_iota(HLO_F32, DIMS(2, 3), 1, 0),
                         lit_iota(HLO_F32, DIMS(2, 3), -1, 0)};
  r = run1(mk("Select"), 3, in3);
  double ws[] = {0, 1, 2, -3, -4, -5};
  CHECK_VALS(r, 6, ws);
  literal_free(r);
}

static void test_bias_add_addn_clip(void) {
  graph_node *n = mk("BiasAdd");
  set_str(n, "data_format", "NCHW");
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(1, 2, 2, 2), 1, 0), lit_ints(HLO_F32, 2, (int64_t[]){100, 200})};
  hlo_literal *r = run1(n, 2, in);
  double w[8];
  for (int i = 0; i < 8; i++) w[i] = i + (i < 4 ? 100 : 200);
  CHECK_VALS(r, 8, w);
  literal_free(r);
  hlo_literal *in2[3] = {lit_iota(HLO_F32, DIMS(3), 1, 0), lit_iota(HLO_F32, DIMS(3), 2, 0), lit_iota(HLO_F32, DIMS(3), 3, 1)};
  r = run1(mk("AddN"), 3, in2);
  double wa[] = {1, 7, 13};
  CHECK_VALS(r, 3, wa);
  literal_free(r);
  hlo_literal *in3[3] = {lit_iota(HLO_F32, DIMS(5), 1, -2), lit_scalar(HLO_F32, -1), lit_scalar(HLO_F32, 1.5)};
  r = run1(mk("ClipByValue"), 3, in3);
  double wcl[] = {-1, -1, 0, 1, 1.5};
  CHECK_VALS(r, 5, wcl);
  literal_free(r);
}

/* ------------------------------------------------------------ convolutions ---- */

/* Direct NHWC convolution by TF's definition (SAME/VALID pads as TF computes them). */
static void ref_conv2d(const hlo_literal *x, const hlo_literal *f, int sh, int sw, int dh, int dw, bool same,
                       int groups_depthwise_mult, int64_t *out_dims, double **out) {
  int64_t n = x->shape.dims[0], h = x->shape.dims[1], w = x->shape.dims[2], c = x->shape.dims[3];
  int64_t kh = f->shape.dims[0], kw = f->shape.dims[1], fi = f->shape.dims[2], fo = f->shape.dims[3];
  int64_t ekh = (kh - 1) * dh + 1, ekw = (kw - 1) * dw + 1, oh, ow, pt = 0, pl = 0;
  if (same) {
    oh = (h + sh - 1) / sh;
    ow = (w + sw - 1) / sw;
    int64_t th = (oh - 1) * sh + ekh - h, tw = (ow - 1) * sw + ekw - w;
    pt = th > 0 ? th / 2 : 0;
    pl = tw > 0 ? tw / 2 : 0;
  } else {
    oh = (h - ekh) / sh + 1;
    ow = (w - ekw) / sw + 1;
  }
  bool dw_mode = groups_depthwise_mult > 0;
  int64_t oc = dw_mode ? c * fo : fo;
  out_dims[0] = n;
  out_dims[1] = oh;
  out_dims[2] = ow;
  out_dims[3] = oc;
  double *o = calloc((size_t)(n * oh * ow * oc), sizeof *o);
  for (int64_t b = 0; b < n; b++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t xx = 0; xx < ow; xx++)
        for (int64_t k = 0; k < oc; k++) {
          double acc = 0;
          for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) {
              int64_t iy = y * sh + i * dh - pt, ix = xx * sw + j * dw - pl;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              if (dw_mode) {
                int64_t ch = k / fo, m = k % fo;
                acc += literal_get_f64(x, ((b * h + iy) * w + ix) * c + ch) *
                       literal_get_f64(f, ((i * kw + j) * fi + ch) * fo + m);
              } else {
                for (int64_t q = 0; q < c; q++)
                  acc += literal_get_f64(x, ((b * h + iy) * w + ix) * c + q) *
                         literal_get_f64(f, ((i * kw + j) * fi + q) * fo + k);
              }
            }
          o[((b * oh + y) * ow + xx) * oc + k] = acc;
        }
  *out = o;
}

static void test_conv2d_same_stride2(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(2, 7, 6, 3), 1), *f = lit_rand(HLO_F32, DIMS(3, 3, 3, 4), 2);
  int64_t od[4];
  double *want;
  ref_conv2d(x, f, 2, 2, 1, 1, true, 0, od, &want);
  graph_node *n = mk("Conv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 2, 2, 1});
  set_str(n, "padding", "SAME");
  hlo_literal *in[2] = {literal_clone(x), literal_clone(f)};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, od[0], od[1], od[2], od[3]);
  CHECK_VALS(r, od[0] * od[1] * od[2] * od[3], want);
  literal_free(r);
  free(want);
  /* VALID with dilation 2 */
  ref_conv2d(x, f, 1, 1, 2, 2, false, 0, od, &want);
  n = mk("Conv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_ints(n, "dilations", 4, (int64_t[]){1, 2, 2, 1});
  set_str(n, "padding", "VALID");
  hlo_literal *in2[2] = {literal_clone(x), literal_clone(f)};
  r = run1(n, 2, in2);
  CHECK_DIMS(r, od[0], od[1], od[2], od[3]);
  CHECK_VALS(r, od[0] * od[1] * od[2] * od[3], want);
  literal_free(r);
  free(want);
  /* NCHW: same numbers, transposed around the op */
  ref_conv2d(x, f, 2, 1, 1, 1, true, 0, od, &want);
  hlo_literal *xn = lit(HLO_F32, DIMS(2, 3, 7, 6), NULL);
  for (int b = 0; b < 2; b++)
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 7; y++)
        for (int xx = 0; xx < 6; xx++)
          literal_set_f64(xn, ((b * 3 + c) * 7 + y) * 6 + xx, literal_get_f64(x, ((b * 7 + y) * 6 + xx) * 3 + c));
  n = mk("Conv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 2, 1});
  set_str(n, "padding", "SAME");
  set_str(n, "data_format", "NCHW");
  hlo_literal *in3[2] = {xn, literal_clone(f)};
  r = run1(n, 2, in3);
  CHECK_DIMS(r, od[0], od[3], od[1], od[2]);
  if (r) {
    double *wt = malloc((size_t)r->n * sizeof *wt);
    for (int64_t b = 0; b < od[0]; b++)
      for (int64_t c = 0; c < od[3]; c++)
        for (int64_t y = 0; y < od[1]; y++)
          for (int64_t xx = 0; xx < od[2]; xx++)
            wt[((b * od[3] + c) * od[1] + y) * od[2] + xx] = want[((b * od[1] + y) * od[2] + xx) * od[3] + c];
    CHECK_VALS(r, r->n, wt);
    free(wt);
  }
  literal_free(r);
  free(want);
  literal_free(x);
  literal_free(f);
}

static void test_depthwise_and_explicit(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(1, 6, 5, 3), 3), *f = lit_rand(HLO_F32, DIMS(3, 2, 3, 2), 4);
  int64_t od[4];
  double *want;
  ref_conv2d(x, f, 2, 2, 1, 1, true, 1, od, &want);
  graph_node *n = mk("DepthwiseConv2dNative");
  set_ints(n, "strides", 4, (int64_t[]){1, 2, 2, 1});
  set_str(n, "padding", "SAME");
  hlo_literal *in[2] = {literal_clone(x), literal_clone(f)};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, od[0], od[1], od[2], od[3]);
  CHECK_VALS(r, od[0] * od[1] * od[2] * od[3], want);
  literal_free(r);
  free(want);
  /* EXPLICIT padding equal to SAME's gives the same result */
  ref_conv2d(x, f, 1, 1, 1, 1, true, 1, od, &want); /* k 3x2 stride 1: pads top 1 bottom 1, left 0 right 1 */
  n = mk("DepthwiseConv2dNative");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "EXPLICIT");
  set_ints(n, "explicit_paddings", 8, (int64_t[]){0, 0, 1, 1, 0, 1, 0, 0});
  hlo_literal *in2[2] = {literal_clone(x), literal_clone(f)};
  r = run1(n, 2, in2);
  CHECK_DIMS(r, od[0], od[1], od[2], od[3]);
  CHECK_VALS(r, od[0] * od[1] * od[2] * od[3], want);
  literal_free(r);
  free(want);
  literal_free(x);
  literal_free(f);
}

/* Conv2DBackpropInput: the scatter form of the gradient, computed directly. */
static void test_conv2d_backprop_input(void) {
  int64_t n = 1, h = 7, w = 8, c = 2, kh = 3, kw = 3, o = 3, s = 2;
  hlo_literal *f = lit_rand(HLO_F32, DIMS(kh, kw, c, o), 5);
  int64_t oh = (h + s - 1) / s, ow = (w + s - 1) / s; /* SAME */
  int64_t th = (oh - 1) * s + kh - h, tw = (ow - 1) * s + kw - w;
  int64_t pt = th / 2, pl = tw / 2;
  hlo_literal *dy = lit_rand(HLO_F32, DIMS(n, oh, ow, o), 6);
  double *want = calloc((size_t)(n * h * w * c), sizeof *want);
  for (int64_t y = 0; y < oh; y++)
    for (int64_t x = 0; x < ow; x++)
      for (int64_t k = 0; k < o; k++)
        for (int64_t i = 0; i < kh; i++)
          for (int64_t j = 0; j < kw; j++) {
            int64_t iy = y * s + i - pt, ix = x * s + j - pl;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            for (int64_t q = 0; q < c; q++)
              want[(iy * w + ix) * c + q] +=
                  literal_get_f64(dy, (y * ow + x) * o + k) * literal_get_f64(f, ((i * kw + j) * c + q) * o + k);
          }
  graph_node *nd = mk("Conv2DBackpropInput");
  set_ints(nd, "strides", 4, (int64_t[]){1, s, s, 1});
  set_str(nd, "padding", "SAME");
  hlo_literal *in[3] = {lit_ints(HLO_S32, 4, (int64_t[]){n, h, w, c}), f, dy};
  hlo_literal *r = run1(nd, 3, in);
  CHECK_DIMS(r, n, h, w, c);
  CHECK_VALS(r, n * h * w * c, want);
  literal_free(r);
  free(want);
}

static void test_matmul_batch(void) {
  graph_node *n = mk("MatMul");
  graph_node_set_attr_bool(n, "transpose_a", true);
  hlo_literal *a = lit_rand(HLO_F32, DIMS(3, 2), 7), *b = lit_rand(HLO_F32, DIMS(3, 4), 8);
  double want[8];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      double acc = 0;
      for (int k = 0; k < 3; k++) acc += literal_get_f64(a, k * 2 + i) * literal_get_f64(b, k * 4 + j);
      want[i * 4 + j] = acc;
    }
  hlo_literal *in[2] = {a, b};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, 2, 4);
  CHECK_VALS(r, 8, want);
  literal_free(r);
  /* BatchMatMulV2: [2,1,2,3] x [3,3,4]^T-adj -> broadcast batch [2,3] */
  n = mk("BatchMatMulV2");
  graph_node_set_attr_bool(n, "adj_y", true);
  a = lit_rand(HLO_F32, DIMS(2, 1, 2, 3), 9);
  b = lit_rand(HLO_F32, DIMS(3, 4, 3), 10);
  double w2[2 * 3 * 2 * 4];
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
          double acc = 0;
          for (int k = 0; k < 3; k++) acc += literal_get_f64(a, (p * 2 + i) * 3 + k) * literal_get_f64(b, (q * 4 + j) * 3 + k);
          w2[((p * 3 + q) * 2 + i) * 4 + j] = acc;
        }
  hlo_literal *in2[2] = {a, b};
  r = run1(n, 2, in2);
  CHECK_DIMS(r, 2, 3, 2, 4);
  CHECK_VALS(r, 48, w2);
  literal_free(r);
}

static void test_fused_batch_norm(void) {
  graph_node *n = mk("FusedBatchNormV3");
  graph_node_set_attr_float(n, "epsilon", 0.001f);
  graph_node_set_attr_bool(n, "is_training", false);
  hlo_literal *x = lit_rand(HLO_F32, DIMS(2, 3, 3, 4), 11);
  double sc[] = {1, 2, 0.5, -1}, of[] = {0.1, 0.2, 0.3, 0.4}, mn[] = {0.5, -0.5, 0, 0.25}, vr[] = {1, 4, 0.25, 2};
  double want[72];
  for (int i = 0; i < 72; i++) {
    int c = i % 4;
    want[i] = (literal_get_f64(x, i) - mn[c]) / sqrt(vr[c] + 0.001) * sc[c] + of[c];
  }
  hlo_literal *in[5] = {x, lit(HLO_F32, DIMS(4), sc), lit(HLO_F32, DIMS(4), of), lit(HLO_F32, DIMS(4), mn),
                        lit(HLO_F32, DIMS(4), vr)};
  hlo_literal *out[3];
  CHECK_OK(run(n, 5, in, 3, out));
  CHECK_VALS(out[0], 72, want);
  CHECK_VALS(out[1], 4, mn);
  for (int i = 0; i < 3; i++) literal_free(out[i]);
}

static void test_fused_conv_matmul(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(1, 5, 5, 2), 12), *f = lit_rand(HLO_F32, DIMS(3, 3, 2, 3), 13);
  double bias[] = {0.5, -0.25, 0.1};
  int64_t od[4];
  double *want;
  ref_conv2d(x, f, 1, 1, 1, 1, true, 0, od, &want);
  int64_t total = od[0] * od[1] * od[2] * od[3];
  for (int64_t i = 0; i < total; i++) {
    double v = want[i] + bias[i % 3];
    want[i] = v < 0 ? 0 : v > 6 ? 6 : v;
  }
  graph_node *n = mk("_FusedConv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "SAME");
  set_strs(n, "fused_ops", 2, (const char *[]){"BiasAdd", "Relu6"});
  graph_node_set_attr_int(n, "num_args", 1);
  hlo_literal *in[3] = {x, f, lit(HLO_F32, DIMS(3), bias)};
  hlo_literal *r = run1(n, 3, in);
  CHECK_VALS(r, total, want);
  literal_free(r);
  free(want);
  /* _FusedMatMul with BiasAdd + LeakyRelu(alpha 0.3) */
  hlo_literal *a = lit_rand(HLO_F32, DIMS(2, 3), 14), *b = lit_rand(HLO_F32, DIMS(3, 2), 15);
  double bb[] = {0.2, -0.4}, w2[4];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double acc = bb[j];
      for (int k = 0; k < 3; k++) acc += literal_get_f64(a, i * 3 + k) * literal_get_f64(b, k * 2 + j);
      w2[i * 2 + j] = acc > 0 ? acc : 0.3 * acc;
    }
  n = mk("_FusedMatMul");
  set_strs(n, "fused_ops", 2, (const char *[]){"BiasAdd", "LeakyRelu"});
  graph_node_set_attr_int(n, "num_args", 1);
  graph_node_set_attr_float(n, "leakyrelu_alpha", 0.3f);
  hlo_literal *in2[3] = {a, b, lit(HLO_F32, DIMS(2), bb)};
  r = run1(n, 3, in2);
  CHECK_VALS(r, 4, w2);
  literal_free(r);
}

static void test_pooling(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(1, 5, 4, 2), 16);
  int64_t h = 5, w = 4, c = 2, k = 3, s = 2, oh = 3, ow = 2; /* SAME: pads h 1/1, w 0/1 */
  int64_t pt = 1, pl = 0;
  double wmax[12], wavg[12];
  for (int64_t y = 0; y < oh; y++)
    for (int64_t xx = 0; xx < ow; xx++)
      for (int64_t q = 0; q < c; q++) {
        double mx = -INFINITY, sum = 0;
        int cnt = 0;
        for (int64_t i = 0; i < k; i++)
          for (int64_t j = 0; j < k; j++) {
            int64_t iy = y * s + i - pt, ix = xx * s + j - pl;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            double v = literal_get_f64(x, (iy * w + ix) * c + q);
            mx = v > mx ? v : mx;
            sum += v;
            cnt++;
          }
        wmax[(y * ow + xx) * c + q] = mx;
        wavg[(y * ow + xx) * c + q] = sum / cnt;
      }
  const char *ops[2] = {"MaxPool", "AvgPool"};
  for (int t = 0; t < 2; t++) {
    graph_node *n = mk(ops[t]);
    set_ints(n, "ksize", 4, (int64_t[]){1, k, k, 1});
    set_ints(n, "strides", 4, (int64_t[]){1, s, s, 1});
    set_str(n, "padding", "SAME");
    hlo_literal *in[1] = {literal_clone(x)};
    hlo_literal *r = run1(n, 1, in);
    CHECK_DIMS(r, 1, oh, ow, c);
    CHECK_VALS(r, 12, t ? wavg : wmax);
    literal_free(r);
  }
  literal_free(x);
}

static void test_softmax(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(2, 5), 17);
  double ws[10], wl[10];
  for (int i = 0; i < 2; i++) {
    double sum = 0;
    for (int j = 0; j < 5; j++) sum += exp(literal_get_f64(x, i * 5 + j));
    for (int j = 0; j < 5; j++) {
      ws[i * 5 + j] = exp(literal_get_f64(x, i * 5 + j)) / sum;
      wl[i * 5 + j] = literal_get_f64(x, i * 5 + j) - log(sum);
    }
  }
  hlo_literal *in[1] = {literal_clone(x)};
  hlo_literal *r = run1(mk("Softmax"), 1, in);
  CHECK_VALS(r, 10, ws);
  literal_free(r);
  hlo_literal *in2[1] = {x};
  r = run1(mk("LogSoftmax"), 1, in2);
  CHECK_VALS(r, 10, wl);
  literal_free(r);
}

/* ------------------------------------------------------------------- array ---- */

/* x[b][c][d][e] = the row-major index, shape [2,3,4,5] */
#define X4(b, c, d, e) ((double)((((b) * 3 + (c)) * 4 + (d)) * 5 + (e)))

static hlo_literal *strided(graph_node *n, int k, const int64_t *b, const int64_t *e, const int64_t *s) {
  hlo_literal *in[4] = {lit_iota(HLO_F32, DIMS(2, 3, 4, 5), 1, 0), lit_ints(HLO_S32, k, b), lit_ints(HLO_S32, k, e),
                        lit_ints(HLO_S32, k, s)};
  return run1(n, 4, in);
}

static void test_strided_slice(void) {
  /* x[1:, ::-2, ..., 3] */
  graph_node *n = mk("StridedSlice");
  graph_node_set_attr_int(n, "begin_mask", 0x2);
  graph_node_set_attr_int(n, "end_mask", 0x3);
  graph_node_set_attr_int(n, "ellipsis_mask", 0x4);
  graph_node_set_attr_int(n, "shrink_axis_mask", 0x8);
  hlo_literal *r = strided(n, 4, (int64_t[]){1, 0, 0, 3}, (int64_t[]){0, 0, 0, 4}, (int64_t[]){1, -2, 1, 1});
  double w1[1 * 2 * 4];
  int k = 0;
  for (int b = 1; b < 2; b++)
    for (int c = 2; c >= 0; c -= 2)
      for (int d = 0; d < 4; d++) w1[k++] = X4(b, c, d, 3);
  CHECK_DIMS(r, 1, 2, 4);
  CHECK_VALS(r, 8, w1);
  literal_free(r);
  /* x[:, newaxis, 1, -1:0:-1] -> [2,1,3] */
  n = mk("StridedSlice");
  graph_node_set_attr_int(n, "begin_mask", 0x1);
  graph_node_set_attr_int(n, "end_mask", 0x1);
  graph_node_set_attr_int(n, "new_axis_mask", 0x2);
  graph_node_set_attr_int(n, "shrink_axis_mask", 0x4);
  r = strided(n, 4, (int64_t[]){0, 0, 1, -1}, (int64_t[]){0, 0, 2, 0}, (int64_t[]){1, 1, 1, -1});
  /* dims: b all, newaxis, c=1 shrunk, d from 3 down to 1 (e all, implicit) */
  double w2[2 * 3 * 5];
  k = 0;
  for (int b = 0; b < 2; b++)
    for (int d = 3; d > 0; d--)
      for (int e = 0; e < 5; e++) w2[k++] = X4(b, 1, d, e);
  CHECK_DIMS(r, 2, 1, 3, 5);
  CHECK_VALS(r, 30, w2);
  literal_free(r);
  /* x[-1, ..., -2:] with clamping of an end past the dim: x[-1, ..., -2:100] */
  n = mk("StridedSlice");
  graph_node_set_attr_int(n, "ellipsis_mask", 0x2);
  graph_node_set_attr_int(n, "shrink_axis_mask", 0x1);
  r = strided(n, 3, (int64_t[]){-1, 0, -2}, (int64_t[]){0, 0, 100}, (int64_t[]){1, 1, 1});
  double w3[3 * 4 * 2];
  k = 0;
  for (int c = 0; c < 3; c++)
    for (int d = 0; d < 4; d++)
      for (int e = 3; e < 5; e++) w3[k++] = X4(1, c, d, e);
  CHECK_DIMS(r, 3, 4, 2);
  CHECK_VALS(r, 24, w3);
  literal_free(r);
  /* empty result: x[3:1] and stride 3 rounding: x[:, :, 0:4:3] */
  n = mk("StridedSlice");
  r = strided(n, 3, (int64_t[]){1, 0, 0}, (int64_t[]){1, 3, 4}, (int64_t[]){1, 1, 3});
  CHECK_DIMS(r, 0, 3, 2, 5);
  literal_free(r);
  /* out of bounds shrink index is an error naming the node */
  n = mk("StridedSlice");
  graph_node_set_attr_int(n, "shrink_axis_mask", 0x1);
  hlo_literal *in[4] = {lit_iota(HLO_F32, DIMS(2, 3), 1, 0), lit_ints(HLO_S32, 1, (int64_t[]){2}),
                        lit_ints(HLO_S32, 1, (int64_t[]){3}), lit_ints(HLO_S32, 1, (int64_t[]){1})};
  hlo_literal *o = NULL;
  CHECK_ERR(run(n, 4, in, 1, &o), "out of bounds");
}

static void test_shape_ops(void) {
  graph_node *n = mk("Reshape");
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(2, 6), 1, 0), lit_ints(HLO_S32, 3, (int64_t[]){3, -1, 2})};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, 3, 2, 2);
  literal_free(r);
  n = mk("Reshape");
  hlo_literal *bad[2] = {lit_iota(HLO_F32, DIMS(2, 6), 1, 0), lit_ints(HLO_S32, 2, (int64_t[]){5, -1})};
  CHECK_ERR(run(n, 2, bad, 1, &r), "node n");
  n = mk("Squeeze");
  hlo_literal *in2[1] = {lit(HLO_F32, DIMS(1, 3, 1, 2), NULL)};
  r = run1(n, 1, in2);
  CHECK_DIMS(r, 3, 2);
  literal_free(r);
  n = mk("ExpandDims");
  hlo_literal *in3[2] = {lit(HLO_F32, DIMS(3, 2), NULL), lit_scalar(HLO_S32, -1)};
  r = run1(n, 2, in3);
  CHECK_DIMS(r, 3, 2, 1);
  literal_free(r);
  n = mk("Transpose");
  hlo_literal *in4[2] = {lit_iota(HLO_F32, DIMS(2, 3), 1, 0), lit_ints(HLO_S32, 2, (int64_t[]){1, 0})};
  r = run1(n, 2, in4);
  double wt[] = {0, 3, 1, 4, 2, 5};
  CHECK_DIMS(r, 3, 2);
  CHECK_VALS(r, 6, wt);
  literal_free(r);
  n = mk("Shape");
  graph_node_set_attr_type(n, "out_type", GRAPH_DT_INT64);
  hlo_literal *in5[1] = {lit(HLO_F32, DIMS(4, 1, 7), NULL)};
  r = run1(n, 1, in5);
  double ws[] = {4, 1, 7};
  CHECK(r && r->shape.type == HLO_S64);
  CHECK_VALS(r, 3, ws);
  literal_free(r);
}

static void test_concat_pack_split(void) {
  graph_node *n = mk("ConcatV2");
  hlo_literal *in[3] = {lit_iota(HLO_F32, DIMS(2, 1), 1, 0), lit_iota(HLO_F32, DIMS(2, 2), 1, 10),
                        lit_scalar(HLO_S32, -1)};
  hlo_literal *r = run1(n, 3, in);
  double w[] = {0, 10, 11, 1, 12, 13};
  CHECK_DIMS(r, 2, 3);
  CHECK_VALS(r, 6, w);
  literal_free(r);
  n = mk("Pack");
  graph_node_set_attr_int(n, "axis", 1);
  hlo_literal *in2[2] = {lit_iota(HLO_F32, DIMS(2), 1, 0), lit_iota(HLO_F32, DIMS(2), 1, 5)};
  r = run1(n, 2, in2);
  double wp[] = {0, 5, 1, 6};
  CHECK_DIMS(r, 2, 2);
  CHECK_VALS(r, 4, wp);
  literal_free(r);
  n = mk("SplitV");
  hlo_literal *in3[3] = {lit_iota(HLO_F32, DIMS(2, 5), 1, 0), lit_ints(HLO_S32, 3, (int64_t[]){1, -1, 2}),
                         lit_scalar(HLO_S32, 1)};
  hlo_literal *outs[3];
  CHECK_OK(run(n, 3, in3, 3, outs));
  CHECK_DIMS(outs[1], 2, 2);
  double w1[] = {1, 2, 6, 7};
  CHECK_VALS(outs[1], 4, w1);
  for (int i = 0; i < 3; i++) literal_free(outs[i]);
  n = mk("Unpack");
  graph_node_set_attr_int(n, "num", 2);
  hlo_literal *in4[1] = {lit_iota(HLO_F32, DIMS(2, 3), 1, 0)};
  CHECK_OK(run(n, 1, in4, 2, outs));
  double wu[] = {3, 4, 5};
  CHECK_VALS(outs[1], 3, wu);
  literal_free(outs[0]);
  literal_free(outs[1]);
}

static void test_tile_pad(void) {
  graph_node *n = mk("Tile");
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(2, 2), 1, 0), lit_ints(HLO_S32, 2, (int64_t[]){2, 3})};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, 4, 6);
  double wt[24];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) wt[i * 6 + j] = (i % 2) * 2 + j % 2;
  CHECK_VALS(r, 24, wt);
  literal_free(r);
  const char *modes[2] = {"REFLECT", "SYMMETRIC"};
  for (int m = 0; m < 2; m++) {
    n = mk("MirrorPad");
    set_str(n, "mode", modes[m]);
    hlo_literal *in2[2] = {lit_iota(HLO_F32, DIMS(4), 1, 1),
                           lit(HLO_S32, DIMS(1, 2), (double[]){2, 3})};
    r = run1(n, 2, in2);
    double refl[] = {3, 2, 1, 2, 3, 4, 3, 2, 1}, sym[] = {2, 1, 1, 2, 3, 4, 4, 3, 2};
    CHECK_DIMS(r, 9);
    CHECK_VALS(r, 9, m ? sym : refl);
    literal_free(r);
  }
  n = mk("PadV2");
  hlo_literal *in3[3] = {lit_iota(HLO_F32, DIMS(1, 2), 1, 1), lit(HLO_S32, DIMS(2, 2), (double[]){1, 0, 0, 1}),
                         lit_scalar(HLO_F32, -7)};
  r = run1(n, 3, in3);
  double wp[] = {-7, -7, -7, 1, 2, -7};
  CHECK_DIMS(r, 2, 3);
  CHECK_VALS(r, 6, wp);
  literal_free(r);
}

static void test_space_batch(void) {
  /* SpaceToBatchND then BatchToSpaceND with the same blocks is the identity (minus
   * the padding, cropped back). */
  hlo_literal *x = lit_iota(HLO_F32, DIMS(2, 3, 4, 1), 1, 0);
  graph_node *n = mk("SpaceToBatchND");
  hlo_literal *in[3] = {literal_clone(x), lit_ints(HLO_S32, 2, (int64_t[]){2, 2}),
                        lit(HLO_S32, DIMS(2, 2), (double[]){1, 0, 0, 0})};
  hlo_literal *r = run1(n, 3, in);
  CHECK_DIMS(r, 8, 2, 2, 1);
  /* batch index = (bh * 2 + bw) * 2 + b; element (i, j) comes from padded (i*2+bh, j*2+bw) */
  if (r) {
    double want[32];
    for (int bh = 0; bh < 2; bh++)
      for (int bw = 0; bw < 2; bw++)
        for (int b = 0; b < 2; b++)
          for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
              int py = i * 2 + bh - 1, px = j * 2 + bw;
              want[(((bh * 2 + bw) * 2 + b) * 2 + i) * 2 + j] = py < 0 ? 0 : (b * 3 + py) * 4 + px;
            }
    CHECK_VALS(r, 32, want);
  }
  n = mk("BatchToSpaceND");
  hlo_literal *in2[3] = {r, lit_ints(HLO_S32, 2, (int64_t[]){2, 2}), lit(HLO_S32, DIMS(2, 2), (double[]){1, 0, 0, 0})};
  hlo_literal *back = run1(n, 3, in2);
  CHECK_DIMS(back, 2, 3, 4, 1);
  double wx[24];
  for (int i = 0; i < 24; i++) wx[i] = i;
  CHECK_VALS(back, 24, wx);
  literal_free(back);
  literal_free(x);
  /* DepthToSpace NHWC block 2: [1,1,1,8] -> [1,2,2,2] */
  n = mk("DepthToSpace");
  graph_node_set_attr_int(n, "block_size", 2);
  hlo_literal *in3[1] = {lit_iota(HLO_F32, DIMS(1, 1, 1, 8), 1, 0)};
  r = run1(n, 1, in3);
  double wd[] = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK_DIMS(r, 1, 2, 2, 2);
  CHECK_VALS(r, 8, wd);
  literal_free(r);
}

static void test_range_linspace_fill(void) {
  graph_node *n = mk("Range");
  hlo_literal *in[3] = {lit_scalar(HLO_S32, 10), lit_scalar(HLO_S32, 1), lit_scalar(HLO_S32, -3)};
  hlo_literal *r = run1(n, 3, in);
  double w[] = {10, 7, 4};
  CHECK_VALS(r, 3, w);
  literal_free(r);
  n = mk("Range");
  hlo_literal *in2[3] = {lit_scalar(HLO_F32, 0), lit_scalar(HLO_F32, 1), lit_scalar(HLO_F32, 0.3)};
  r = run1(n, 3, in2);
  double wf[] = {0, 0.3, 0.6, 0.9};
  CHECK_VALS(r, 4, wf);
  literal_free(r);
  n = mk("LinSpace");
  hlo_literal *in3[3] = {lit_scalar(HLO_F32, 1), lit_scalar(HLO_F32, 2), lit_scalar(HLO_S32, 5)};
  r = run1(n, 3, in3);
  double wl[] = {1, 1.25, 1.5, 1.75, 2};
  CHECK_VALS(r, 5, wl);
  literal_free(r);
  n = mk("Fill");
  hlo_literal *in4[2] = {lit_ints(HLO_S32, 2, (int64_t[]){2, 2}), lit_scalar(HLO_F32, 3)};
  r = run1(n, 2, in4);
  double wfill[] = {3, 3, 3, 3};
  CHECK_VALS(r, 4, wfill);
  literal_free(r);
}

/* ---------------------------------------------------------------- indexing ---- */

static void test_gather(void) {
  /* GatherV2 axis 1, batch_dims 1: params [2,3,2], indices [2,2] -> [2,2,2] */
  graph_node *n = mk("GatherV2");
  graph_node_set_attr_int(n, "batch_dims", 1);
  hlo_literal *in[3] = {lit_iota(HLO_F32, DIMS(2, 3, 2), 1, 0), lit(HLO_S32, DIMS(2, 2), (double[]){2, 0, 1, 1}),
                        lit_scalar(HLO_S32, 1)};
  hlo_literal *r = run1(n, 3, in);
  int idx[2][2] = {{2, 0}, {1, 1}};
  double w[8];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 2; k++) w[(b * 2 + i) * 2 + k] = (b * 3 + idx[b][i]) * 2 + k;
  CHECK_DIMS(r, 2, 2, 2);
  CHECK_VALS(r, 8, w);
  literal_free(r);
  /* GatherV2 axis -1 without batch dims: params [2,3], indices [4] -> [2,4] */
  n = mk("GatherV2");
  hlo_literal *in2[3] = {lit_iota(HLO_F32, DIMS(2, 3), 1, 0), lit_ints(HLO_S64, 4, (int64_t[]){2, 2, 0, 1}),
                         lit_scalar(HLO_S32, -1)};
  r = run1(n, 3, in2);
  double w2[] = {2, 2, 0, 1, 5, 5, 3, 4};
  CHECK_DIMS(r, 2, 4);
  CHECK_VALS(r, 8, w2);
  literal_free(r);
  /* GatherNd: params [2,3,2], indices [[1,2],[0,0]] -> [2,2] */
  n = mk("GatherNd");
  hlo_literal *in3[2] = {lit_iota(HLO_F32, DIMS(2, 3, 2), 1, 0), lit(HLO_S32, DIMS(2, 2), (double[]){1, 2, 0, 0})};
  r = run1(n, 2, in3);
  double w3[] = {10, 11, 0, 1};
  CHECK_DIMS(r, 2, 2);
  CHECK_VALS(r, 4, w3);
  literal_free(r);
}

static void test_scatter_onehot_segments(void) {
  /* ScatterNd sums duplicate indices */
  graph_node *n = mk("ScatterNd");
  hlo_literal *in[3] = {lit(HLO_S32, DIMS(3, 1), (double[]){1, 3, 1}), lit(HLO_F32, DIMS(3), (double[]){1, 2, 4}),
                        lit_ints(HLO_S32, 1, (int64_t[]){5})};
  hlo_literal *r = run1(n, 3, in);
  double w[] = {0, 5, 0, 2, 0};
  CHECK_VALS(r, 5, w);
  literal_free(r);
  n = mk("OneHot");
  graph_node_set_attr_int(n, "axis", 0);
  hlo_literal *in2[4] = {lit_ints(HLO_S32, 3, (int64_t[]){2, -1, 0}), lit_scalar(HLO_S32, 3), lit_scalar(HLO_F32, 5),
                         lit_scalar(HLO_F32, -1)};
  r = run1(n, 4, in2);
  double wo[] = {-1, -1, 5, -1, -1, -1, 5, -1, -1};
  CHECK_DIMS(r, 3, 3);
  CHECK_VALS(r, 9, wo);
  literal_free(r);
  n = mk("UnsortedSegmentMax");
  hlo_literal *in3[3] = {lit(HLO_F32, DIMS(4), (double[]){1, 7, 3, 2}), lit_ints(HLO_S32, 4, (int64_t[]){0, 2, 0, 2}),
                         lit_scalar(HLO_S32, 3)};
  r = run1(n, 3, in3);
  double ws[] = {3, -FLT_MAX, 7};
  CHECK_VALS(r, 3, ws);
  literal_free(r);
}

/* ------------------------------------------------------------- reductions ---- */

static void test_reductions(void) {
  graph_node *n = mk("Sum");
  graph_node_set_attr_bool(n, "keep_dims", true);
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(2, 3, 2), 1, 0), lit_ints(HLO_S32, 2, (int64_t[]){-1, 0})};
  hlo_literal *r = run1(n, 2, in);
  double w[3];
  for (int j = 0; j < 3; j++) w[j] = (0 * 6 + j * 2) + (0 * 6 + j * 2 + 1) + (6 + j * 2) + (6 + j * 2 + 1);
  CHECK_DIMS(r, 1, 3, 1);
  CHECK_VALS(r, 3, w);
  literal_free(r);
  n = mk("Mean");
  hlo_literal *in2[2] = {lit(HLO_S32, DIMS(2, 2), (double[]){1, 2, 4, 4}), lit_scalar(HLO_S32, 1)};
  r = run1(n, 2, in2);
  double wm[] = {1, 4};
  CHECK_VALS(r, 2, wm);
  literal_free(r);
  n = mk("ArgMax");
  hlo_literal *in3[2] = {lit(HLO_F32, DIMS(2, 3), (double[]){1, 5, 5, 9, 2, 9}), lit_scalar(HLO_S32, 1)};
  r = run1(n, 2, in3);
  double wa[] = {1, 0};
  CHECK(r && r->shape.type == HLO_S64);
  CHECK_VALS(r, 2, wa);
  literal_free(r);
  n = mk("Cumsum");
  graph_node_set_attr_bool(n, "exclusive", true);
  graph_node_set_attr_bool(n, "reverse", true);
  hlo_literal *in4[2] = {lit(HLO_F32, DIMS(4), (double[]){1, 2, 3, 4}), lit_scalar(HLO_S32, 0)};
  r = run1(n, 2, in4);
  double wc[] = {9, 7, 4, 0};
  CHECK_VALS(r, 4, wc);
  literal_free(r);
  n = mk("Cumsum");
  hlo_literal *in5[2] = {lit(HLO_F32, DIMS(2, 3), (double[]){1, 2, 3, 4, 5, 6}), lit_scalar(HLO_S32, 1)};
  r = run1(n, 2, in5);
  double wc2[] = {1, 3, 6, 4, 9, 15};
  CHECK_VALS(r, 6, wc2);
  literal_free(r);
  n = mk("TopKV2");
  hlo_literal *in6[2] = {lit(HLO_F32, DIMS(2, 4), (double[]){3, 1, 3, 2, 0, 5, -1, 5}), lit_scalar(HLO_S32, 3)};
  hlo_literal *outs[2];
  CHECK_OK(run(n, 2, in6, 2, outs));
  double wv[] = {3, 3, 2, 5, 5, 0}, wi[] = {0, 2, 3, 1, 3, 0};
  CHECK_VALS(outs[0], 6, wv);
  CHECK_VALS(outs[1], 6, wi);
  literal_free(outs[0]);
  literal_free(outs[1]);
}

static void test_einsum(void) {
  graph_node *n = mk("Einsum");
  set_str(n, "equation", "bij,bkj->bik");
  hlo_literal *a = lit_rand(HLO_F32, DIMS(2, 2, 3), 20), *b = lit_rand(HLO_F32, DIMS(2, 4, 3), 21);
  double w[16];
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 4; k++) {
        double acc = 0;
        for (int j = 0; j < 3; j++) acc += literal_get_f64(a, (p * 2 + i) * 3 + j) * literal_get_f64(b, (p * 4 + k) * 3 + j);
        w[(p * 2 + i) * 4 + k] = acc;
      }
  hlo_literal *in[2] = {a, b};
  hlo_literal *r = run1(n, 2, in);
  CHECK_DIMS(r, 2, 2, 4);
  CHECK_VALS(r, 16, w);
  literal_free(r);
  n = mk("Einsum");
  set_str(n, "equation", "...ij->...j");
  hlo_literal *in2[1] = {lit_iota(HLO_F32, DIMS(2, 2, 3), 1, 0)};
  r = run1(n, 1, in2);
  double w2[] = {3, 5, 7, 15, 17, 19};
  CHECK_DIMS(r, 2, 3);
  CHECK_VALS(r, 6, w2);
  literal_free(r);
}

/* ------------------------------------------------------------------ images ---- */

/* TF's bilinear resize, in double precision here. */
static void ref_bilinear(const hlo_literal *x, int64_t oh, int64_t ow, bool align, bool half, double *out) {
  int64_t h = x->shape.dims[1], w = x->shape.dims[2], c = x->shape.dims[3];
  double sy = (align && oh > 1) ? (double)(h - 1) / (double)(oh - 1) : (double)h / (double)oh;
  double sx = (align && ow > 1) ? (double)(w - 1) / (double)(ow - 1) : (double)w / (double)ow;
  for (int64_t y = 0; y < oh; y++) {
    double iy = half ? (y + 0.5) * sy - 0.5 : y * sy;
    int64_t y0 = (int64_t)floor(iy), y1 = (int64_t)ceil(iy);
    double ly = iy - floor(iy);
    if (y0 < 0) y0 = 0;
    if (y1 > h - 1) y1 = h - 1;
    for (int64_t xx = 0; xx < ow; xx++) {
      double ix = half ? (xx + 0.5) * sx - 0.5 : xx * sx;
      int64_t x0 = (int64_t)floor(ix), x1 = (int64_t)ceil(ix);
      double lx = ix - floor(ix);
      if (x0 < 0) x0 = 0;
      if (x1 > w - 1) x1 = w - 1;
      for (int64_t q = 0; q < c; q++) {
        double tl = literal_get_f64(x, (y0 * w + x0) * c + q), tr = literal_get_f64(x, (y0 * w + x1) * c + q);
        double bl = literal_get_f64(x, (y1 * w + x0) * c + q), br = literal_get_f64(x, (y1 * w + x1) * c + q);
        double top = tl + (tr - tl) * lx, bot = bl + (br - bl) * lx;
        out[(y * ow + xx) * c + q] = top + (bot - top) * ly;
      }
    }
  }
}

static void test_resize(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(1, 3, 4, 2), 22);
  struct {
    bool align, half;
    int64_t oh, ow;
  } cases[] = {{false, true, 5, 7}, {true, false, 5, 3}, {false, false, 2, 9}};
  for (int k = 0; k < 3; k++) {
    graph_node *n = mk("ResizeBilinear");
    graph_node_set_attr_bool(n, "align_corners", cases[k].align);
    graph_node_set_attr_bool(n, "half_pixel_centers", cases[k].half);
    hlo_literal *in[2] = {literal_clone(x), lit_ints(HLO_S32, 2, (int64_t[]){cases[k].oh, cases[k].ow})};
    hlo_literal *r = run1(n, 2, in);
    double want[2 * 9 * 5];
    ref_bilinear(x, cases[k].oh, cases[k].ow, cases[k].align, cases[k].half, want);
    CHECK_DIMS(r, 1, cases[k].oh, cases[k].ow, 2);
    CHECK_VALS(r, cases[k].oh * cases[k].ow * 2, want);
    literal_free(r);
  }
  /* nearest, half pixel: out 6 from in 4 (scale 2/3): (o + .5) * 2/3 floored */
  graph_node *n = mk("ResizeNearestNeighbor");
  graph_node_set_attr_bool(n, "half_pixel_centers", true);
  hlo_literal *in[2] = {lit_iota(HLO_F32, DIMS(1, 1, 4, 1), 1, 0), lit_ints(HLO_S32, 2, (int64_t[]){1, 6})};
  hlo_literal *r = run1(n, 2, in);
  double wn[6];
  for (int o = 0; o < 6; o++) wn[o] = floor((o + 0.5) * 4.0 / 6.0);
  CHECK_VALS(r, 6, wn);
  literal_free(r);
  literal_free(x);
}

/* ------------------------------------------------------------ host kernels ---- */

static graph_tensor *tensor_of(graph_dtype t, int rank, const int64_t *dims, const double *v) {
  graph_tensor *x = NULL;
  CHECK_OK(tensor_create(t, rank, dims, &x));
  for (int64_t i = 0; x && i < x->n; i++) tensor_set_f64(x, i, v[i]);
  return x;
}

static kiln_status run_host(graph_node *node, int n_in, graph_tensor **in, int n_out, graph_tensor **out) {
  const op_def *d = op_find(node->op);
  for (int i = 0; i < n_out; i++) out[i] = NULL;
  kiln_status s = d && d->host ? NULL : ERR_INVALID("no host kernel for %s", node->op);
  op_host_ctx ctx = {.node = node, .n_inputs = n_in, .inputs = in, .n_outputs = n_out, .outputs = out};
  if (!s) s = d->host(&ctx);
  for (int i = 0; i < n_in; i++) tensor_free(in[i]);
  return s;
}

static void check_tensor(const graph_tensor *t, int64_t n, const double *want, int line) {
  if (!t || t->n != n) {
    check_fail(__FILE__, line, "tensor size", NULL);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    if (fabs(tensor_get_f64(t, i) - want[i]) > 1e-5 + 1e-4 * fabs(want[i])) {
      char buf[120];
      snprintf(buf, sizeof buf, "element %lld: got %g, expected %g", (long long)i, tensor_get_f64(t, i), want[i]);
      check_fail(__FILE__, line, "tensor value", buf);
      return;
    }
}
#define CHECK_TENSOR(t, n, want) check_tensor((t), (n), (want), __LINE__)

static void test_nms(void) {
  /* Boxes 0 and 1 overlap heavily (IoU 0.81), box 2 apart, box 3 with score below the
   * threshold; equal scores 1 and 4 tie to the lower index. */
  double boxes[] = {0, 0, 1, 1, 0, 0.1, 1, 1.1, 2, 2, 3, 3, 5, 5, 6, 6, 10, 10, 11, 11};
  double scores[] = {0.9, 0.95, 0.8, 0.1, 0.95};
  graph_node *n = mk("NonMaxSuppressionV3");
  graph_tensor *in[5] = {tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){5, 4}, boxes),
                         tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){5}, scores),
                         tensor_of(GRAPH_DT_INT32, 0, NULL, (double[]){10}),
                         tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.5}),
                         tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.2})};
  graph_tensor *out[3];
  CHECK_OK(run_host(n, 5, in, 1, out));
  double w[] = {1, 4, 2};
  CHECK(out[0] && out[0]->dtype == GRAPH_DT_INT32);
  CHECK_TENSOR(out[0], 3, w);
  tensor_free(out[0]);
  /* V4 with padding to max_output_size 5 */
  n = mk("NonMaxSuppressionV4");
  graph_node_set_attr_bool(n, "pad_to_max_output_size", true);
  graph_tensor *in4[5] = {tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){5, 4}, boxes),
                          tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){5}, scores),
                          tensor_of(GRAPH_DT_INT32, 0, NULL, (double[]){5}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.5}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.0})};
  CHECK_OK(run_host(n, 5, in4, 2, out));
  double w4[] = {1, 4, 2, 3, 0}, wv[] = {4};
  CHECK_TENSOR(out[0], 5, w4);
  CHECK_TENSOR(out[1], 1, wv);
  tensor_free(out[0]);
  tensor_free(out[1]);
  /* V5 soft-NMS (sigma 0.5): a selected box decays the score of overlapping ones by
   * exp(-0.5 * iou^2 / sigma); recompute the expected order by hand. */
  n = mk("NonMaxSuppressionV5");
  double b2[] = {0, 0, 1, 1, 0, 0, 1, 0.5, 3, 3, 4, 4};
  double s2[] = {0.9, 0.8, 0.7};
  graph_tensor *in5[6] = {tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){3, 4}, b2),
                          tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){3}, s2),
                          tensor_of(GRAPH_DT_INT32, 0, NULL, (double[]){3}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){1.0}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.0}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0.5})};
  CHECK_OK(run_host(n, 6, in5, 3, out));
  /* box 1 vs box 0: IoU 0.5 -> 0.8 * exp(-0.25/0.5... ) = 0.8 * exp(-1 * 0.25) */
  double decayed = 0.8 * exp(-0.5 / 0.5 * 0.25);
  double wi[] = {0, 2, 1}, wsc[] = {0.9, 0.7, decayed}, wn[] = {3};
  CHECK_TENSOR(out[0], 3, wi);
  CHECK_TENSOR(out[1], 3, wsc);
  CHECK_TENSOR(out[2], 1, wn);
  for (int i = 0; i < 3; i++) tensor_free(out[i]);
}

static void test_where_unique_sparse(void) {
  graph_node *n = mk("Where");
  graph_tensor *in[1] = {tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){2, 3}, (double[]){0, 1, 0, NAN, 0, -2})};
  graph_tensor *out[2];
  CHECK_OK(run_host(n, 1, in, 1, out));
  double w[] = {0, 1, 1, 0, 1, 2};
  CHECK(out[0] && out[0]->dtype == GRAPH_DT_INT64 && out[0]->dims[0] == 3 && out[0]->dims[1] == 2);
  CHECK_TENSOR(out[0], 6, w);
  tensor_free(out[0]);
  n = mk("Unique");
  graph_tensor *in2[1] = {tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){7}, (double[]){4, 1, 4, 2, 1, 7, 4})};
  CHECK_OK(run_host(n, 1, in2, 2, out));
  double wy[] = {4, 1, 2, 7}, wi[] = {0, 1, 0, 2, 1, 3, 0};
  CHECK_TENSOR(out[0], 4, wy);
  CHECK_TENSOR(out[1], 7, wi);
  tensor_free(out[0]);
  tensor_free(out[1]);
  n = mk("SparseToDense");
  graph_tensor *in3[4] = {tensor_of(GRAPH_DT_INT32, 2, (int64_t[]){2, 2}, (double[]){0, 1, 1, 2}),
                          tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){2}, (double[]){2, 3}),
                          tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){2}, (double[]){5, 6}),
                          tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){-1})};
  CHECK_OK(run_host(n, 4, in3, 1, out));
  double ws[] = {-1, 5, -1, -1, -1, 6};
  CHECK_TENSOR(out[0], 6, ws);
  tensor_free(out[0]);
  /* TopKV2 host kernel agrees with the lowering's order */
  n = mk("TopKV2");
  graph_tensor *in4[2] = {tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){5}, (double[]){1, 3, 3, -2, 2}),
                          tensor_of(GRAPH_DT_INT32, 0, NULL, (double[]){2})};
  CHECK_OK(run_host(n, 2, in4, 2, out));
  double wv[] = {3, 3}, wix[] = {1, 2};
  CHECK_TENSOR(out[0], 2, wv);
  CHECK_TENSOR(out[1], 2, wix);
  tensor_free(out[0]);
  tensor_free(out[1]);
}

static void test_crop_and_resize(void) {
  /* image 1x3x3x1 = 0..8; one box covering the whole image at 3x3 is the image, a box
   * reaching outside gets the extrapolation value. */
  graph_node *n = mk("CropAndResize");
  graph_node_set_attr_float(n, "extrapolation_value", -1.0f);
  double img[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  graph_tensor *in[4] = {tensor_of(GRAPH_DT_FLOAT, 4, (int64_t[]){1, 3, 3, 1}, img),
                         tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){2, 4}, (double[]){0, 0, 1, 1, 0.5, 0.5, 1.5, 1.0}),
                         tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){2}, (double[]){0, 0}),
                         tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){2}, (double[]){3, 2})};
  graph_tensor *out[1];
  CHECK_OK(run_host(n, 4, in, 1, out));
  /* box 2: y from 1.0 to 3.0 (step 1): rows 1, 2, out; x from 1.0 to 2.0 */
  double w[] = {0, 2, 3, 5, 6, 8, 4, 5, 7, 8, -1, -1};
  CHECK_TENSOR(out[0], 12, w);
  tensor_free(out[0]);
}

/* _FusedConv2D with FusedBatchNorm (4 args) then Relu, as grappler's remapper emits. */
static void test_fused_conv_batch_norm(void) {
  hlo_literal *x = lit_rand(HLO_F32, DIMS(1, 4, 4, 2), 30), *f = lit_rand(HLO_F32, DIMS(1, 1, 2, 2), 31);
  double sc[] = {1.5, -0.5}, of[] = {0.1, 0.2}, mn[] = {0.05, -0.1}, vr[] = {0.5, 2};
  int64_t od[4];
  double *want;
  ref_conv2d(x, f, 1, 1, 1, 1, false, 0, od, &want);
  for (int i = 0; i < 32; i++) {
    int c = i % 2;
    double v = (want[i] - mn[c]) / sqrt(vr[c] + 0.01) * sc[c] + of[c];
    want[i] = v > 0 ? v : 0;
  }
  graph_node *n = mk("_FusedConv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "VALID");
  set_strs(n, "fused_ops", 2, (const char *[]){"FusedBatchNorm", "Relu"});
  graph_node_set_attr_int(n, "num_args", 4);
  graph_node_set_attr_float(n, "epsilon", 0.01f);
  hlo_literal *in[6] = {x, f, lit(HLO_F32, DIMS(2), sc), lit(HLO_F32, DIMS(2), of), lit(HLO_F32, DIMS(2), mn),
                        lit(HLO_F32, DIMS(2), vr)};
  hlo_literal *r = run1(n, 6, in);
  CHECK_VALS(r, 32, want);
  literal_free(r);
  free(want);
}

/* Bad attributes and inputs are errors naming the node, never crashes. */
static void test_errors(void) {
  hlo_literal *o = NULL;
  graph_node *n = mk("Conv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "VALID");
  hlo_literal *in[2] = {lit(HLO_F32, DIMS(1, 2, 2, 1), NULL), lit(HLO_F32, DIMS(3, 3, 1, 1), NULL)};
  CHECK_ERR(run(n, 2, in, 1, &o), "smaller than the window");
  n = mk("Conv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "BOGUS");
  hlo_literal *in2[2] = {lit(HLO_F32, DIMS(1, 4, 4, 1), NULL), lit(HLO_F32, DIMS(3, 3, 1, 1), NULL)};
  CHECK_ERR(run(n, 2, in2, 1, &o), "is not SAME, VALID or EXPLICIT");
  n = mk("_FusedConv2D");
  set_ints(n, "strides", 4, (int64_t[]){1, 1, 1, 1});
  set_str(n, "padding", "SAME");
  set_strs(n, "fused_ops", 2, (const char *[]){"BiasAdd", "Swish9"});
  graph_node_set_attr_int(n, "num_args", 1);
  hlo_literal *in3[3] = {lit(HLO_F32, DIMS(1, 4, 4, 1), NULL), lit(HLO_F32, DIMS(3, 3, 1, 1), NULL),
                         lit(HLO_F32, DIMS(1), NULL)};
  CHECK_ERR(run(n, 3, in3, 1, &o), "Swish9");
  n = mk("Transpose");
  hlo_literal *in4[2] = {lit(HLO_F32, DIMS(2, 3), NULL), lit_ints(HLO_S32, 2, (int64_t[]){0, 0})};
  CHECK_ERR(run(n, 2, in4, 1, &o), "not a permutation");
  n = mk("Einsum");
  set_str(n, "equation", "ii->i");
  hlo_literal *in5[1] = {lit(HLO_F32, DIMS(3, 3), NULL)};
  CHECK_ERR(run(n, 1, in5, 1, &o), "repeated label");
  n = mk("NonMaxSuppressionV3");
  graph_tensor *h[5] = {tensor_of(GRAPH_DT_FLOAT, 2, (int64_t[]){1, 4}, (double[]){0, 0, 1, 1}),
                        tensor_of(GRAPH_DT_FLOAT, 1, (int64_t[]){1}, (double[]){1}),
                        tensor_of(GRAPH_DT_INT32, 0, NULL, (double[]){1}),
                        tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){1.5}),
                        tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0})};
  graph_tensor *ho[1];
  CHECK_ERR(run_host(n, 5, h, 1, ho), "iou_threshold must be in [0, 1]");
  n = mk("SparseToDense");
  graph_tensor *h2[4] = {tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){1}, (double[]){5}),
                         tensor_of(GRAPH_DT_INT32, 1, (int64_t[]){1}, (double[]){3}),
                         tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){1}),
                         tensor_of(GRAPH_DT_FLOAT, 0, NULL, (double[]){0})};
  CHECK_ERR(run_host(n, 4, h2, 1, ho), "out of bounds");
}

static void test_registry(void) {
  const char *must[] = {"tf.Conv2D", "tf.StridedSlice", "tf.NonMaxSuppressionV5", "tf._FusedConv2D", "tf.Where",
                        "tf.ConcatV2", "tf.Einsum", "tf.ResizeBilinear", "tf.Const", "tf.Shape"};
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) CHECK(op_find(must[i]) != NULL);
  CHECK(op_find("tf.ConcatV2")->traits & OP_CONST_LAST_INPUT);
  CHECK(op_find("tf.Where")->traits & OP_DYNAMIC_SHAPE);
  CHECK(op_find("tf.Shape")->traits & OP_SHAPE_CONSUMER);
  /* Names are unique across the TF tables. */
  for (int i = 1; i < op_count(); i++) CHECK(strcmp(op_at(i - 1)->name, op_at(i)->name) != 0);
}

static void cleanup(void) {
  graph_free(g_graph);
  g_graph = NULL;
}

TEST_MAIN(TEST(test_registry), TEST(test_binary_broadcast), TEST(test_floor_div_mod), TEST(test_activations),
          TEST(test_round_cast_select), TEST(test_bias_add_addn_clip), TEST(test_conv2d_same_stride2),
          TEST(test_depthwise_and_explicit), TEST(test_conv2d_backprop_input), TEST(test_matmul_batch),
          TEST(test_fused_batch_norm), TEST(test_fused_conv_matmul), TEST(test_pooling), TEST(test_softmax),
          TEST(test_strided_slice), TEST(test_shape_ops), TEST(test_concat_pack_split), TEST(test_tile_pad),
          TEST(test_space_batch), TEST(test_range_linspace_fill), TEST(test_gather), TEST(test_scatter_onehot_segments),
          TEST(test_reductions), TEST(test_einsum), TEST(test_resize), TEST(test_nms), TEST(test_where_unique_sparse),
          TEST(test_crop_and_resize), TEST(test_fused_conv_batch_norm), TEST(test_errors), TEST(cleanup))
