/* ONNX ai.onnx.ml ops: the classical-ML domain that skl2onnx (and onnxmltools) emit for
 * scikit-learn models -- tree ensembles (TreeEnsembleClassifier/Regressor of ml opsets
 * 1 and 3, the unified TreeEnsemble of ml opset 5), linear and SVM models, and the
 * preprocessing ops (Scaler, Normalizer, Binarizer, Imputer, OneHotEncoder,
 * LabelEncoder, ArrayFeatureExtractor). Every op here is a host kernel over graph
 * tensors: the models are small, branchy and attribute-driven, so an HLO lowering would
 * buy nothing. Scores are computed in double and written as the spec's output type
 * (float32 scores and probabilities, int64 labels, string labels as kiln STRING
 * tensors); tree thresholds are compared exactly as stored (float32 attributes, or
 * double ones from the *_as_tensor forms). Models are validated before use: attribute
 * lengths must agree, node/child/target ids must exist, and a tree walk that takes more
 * steps than the ensemble has nodes (a cycle) is refused instead of looping. ZipMap,
 * which turns probabilities into a sequence of maps, makes list values and so is an
 * executor native (exec/maps.c); DictVectorizer and CastMap, which take maps, are
 * refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"
#include "ops/ops_onnx_ml.h"

/* ------------------------------------------------------------ scratch memory ---- */


void *ml_alloc(ml_mem *m, int64_t count, size_t elem) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 32;
    m->p = realloc(m->p, (size_t)m->cap * sizeof *m->p);
    if (!m->p) abort();
  }
  void *q = calloc(count > 0 ? (size_t)count : 1, elem);
  if (!q) abort();
  m->p[m->n++] = q;
  return q;
}

void ml_free(ml_mem *m) {
  for (int i = 0; i < m->n; i++) free(m->p[i]);
  free(m->p);
}


/* -------------------------------------------------------------- attributes ---- */

static bool ml_numeric_dtype(graph_dtype d) {
  hlo_type t;
  return d != GRAPH_DT_BOOL && graph_dtype_to_hlo(d, &t);
}

/* A float list attribute (FLOAT, list of FLOAT/INT, or a numeric TENSOR) as doubles. */
kiln_status ml_attr_f64(const graph_node *node, ml_mem *m, const char *name, double **out, int64_t *n,
                               bool *present) {
  const graph_attr_value *v = graph_node_attr(node, name);
  *out = NULL;
  *n = 0;
  if (present) *present = v != NULL;
  if (!v) return NULL;
  if (v->kind == GRAPH_ATTR_FLOAT || v->kind == GRAPH_ATTR_INT) {
    *out = ml_alloc(m, 1, sizeof(double));
    (*out)[0] = v->kind == GRAPH_ATTR_FLOAT ? v->f : (double)v->i;
    *n = 1;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_LIST &&
      (v->list.elem == GRAPH_ATTR_FLOAT || v->list.elem == GRAPH_ATTR_INT || v->list.n == 0)) {
    *out = ml_alloc(m, v->list.n, sizeof(double));
    for (int i = 0; i < v->list.n; i++)
      (*out)[i] = v->list.elem == GRAPH_ATTR_FLOAT ? v->list.items[i].f : (double)v->list.items[i].i;
    *n = v->list.n;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_TENSOR && v->tensor && ml_numeric_dtype(v->tensor->dtype)) {
    const graph_tensor *t = v->tensor;
    *out = ml_alloc(m, t->n, sizeof(double));
    for (int64_t i = 0; i < t->n; i++) (*out)[i] = tensor_get_f64(t, i);
    *n = t->n;
    return NULL;
  }
  return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a list of numbers (or a numeric tensor)", name);
}

/* name_as_tensor (double precision) when present, else name. */
kiln_status ml_attr_f64_either(const graph_node *node, ml_mem *m, const char *name, double **out, int64_t *n,
                                      bool *present) {
  char buf[96];
  snprintf(buf, sizeof buf, "%s_as_tensor", name);
  if (graph_node_attr(node, buf)) return ml_attr_f64(node, m, buf, out, n, present);
  return ml_attr_f64(node, m, name, out, n, present);
}

/* An int list attribute (INT, list of INT, or an integer TENSOR). */
kiln_status ml_attr_i64(const graph_node *node, ml_mem *m, const char *name, int64_t **out, int64_t *n,
                               bool *present) {
  const graph_attr_value *v = graph_node_attr(node, name);
  *out = NULL;
  *n = 0;
  if (present) *present = v != NULL;
  if (!v) return NULL;
  if (v->kind == GRAPH_ATTR_INT) {
    *out = ml_alloc(m, 1, sizeof(int64_t));
    (*out)[0] = v->i;
    *n = 1;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_LIST && (v->list.elem == GRAPH_ATTR_INT || v->list.n == 0)) {
    *out = ml_alloc(m, v->list.n, sizeof(int64_t));
    for (int i = 0; i < v->list.n; i++) (*out)[i] = v->list.items[i].i;
    *n = v->list.n;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_TENSOR && v->tensor && ml_numeric_dtype(v->tensor->dtype) &&
      v->tensor->dtype != GRAPH_DT_FLOAT && v->tensor->dtype != GRAPH_DT_DOUBLE) {
    const graph_tensor *t = v->tensor;
    *out = ml_alloc(m, t->n, sizeof(int64_t));
    for (int64_t i = 0; i < t->n; i++) (*out)[i] = tensor_get_s64(t, i);
    *n = t->n;
    return NULL;
  }
  return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a list of integers", name);
}

/* A string list attribute (STRING, list of STRING, or a STRING tensor); the bytes stay
 * the graph's. */
kiln_status ml_attr_str(const graph_node *node, ml_mem *m, const char *name, graph_bytes **out, int64_t *n,
                               bool *present) {
  const graph_attr_value *v = graph_node_attr(node, name);
  *out = NULL;
  *n = 0;
  if (present) *present = v != NULL;
  if (!v) return NULL;
  if (v->kind == GRAPH_ATTR_STRING) {
    *out = ml_alloc(m, 1, sizeof(graph_bytes));
    (*out)[0] = v->s;
    *n = 1;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_LIST && (v->list.elem == GRAPH_ATTR_STRING || v->list.n == 0)) {
    *out = ml_alloc(m, v->list.n, sizeof(graph_bytes));
    for (int i = 0; i < v->list.n; i++) (*out)[i] = v->list.items[i].s;
    *n = v->list.n;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_TENSOR && v->tensor && v->tensor->dtype == GRAPH_DT_STRING) {
    *out = ml_alloc(m, v->tensor->n, sizeof(graph_bytes));
    for (int64_t i = 0; i < v->tensor->n; i++) (*out)[i] = *tensor_string(v->tensor, i);
    *n = v->tensor->n;
    return NULL;
  }
  return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s must be a list of strings", name);
}

bool ml_bytes_is(const graph_bytes *b, const char *s) {
  size_t l = strlen(s);
  return b->len == l && memcmp(b->data, s, l) == 0;
}

static int ml_bytes_cmp(const graph_bytes *a, const graph_bytes *b) {
  size_t l = a->len < b->len ? a->len : b->len;
  int c = l ? memcmp(a->data, b->data, l) : 0;
  if (c) return c;
  return a->len < b->len ? -1 : a->len > b->len;
}

kiln_status ml_check_len(const graph_node *node, const char *name, int64_t n, int64_t want, bool optional) {
  if (n == want || (optional && n == 0)) return NULL;
  return op_error(node, KILN_INVALID_ARGUMENT, "attribute %s has %lld entries, expected %lld", name, (long long)n,
                  (long long)want);
}

/* ------------------------------------------------------------ post_transform ---- */


/* post_transform as a string (ml opsets <= 4) or an INT enum (TreeEnsemble-5). */
kiln_status ml_parse_post(const graph_node *node, ml_post *out) {
  static const char *names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  const graph_attr_value *v = graph_node_attr(node, "post_transform");
  *out = ML_NONE;
  if (!v) return NULL;
  if (v->kind == GRAPH_ATTR_INT) {
    if (v->i < 0 || v->i > 4)
      return op_error(node, KILN_INVALID_ARGUMENT, "post_transform %lld is not one of 0..4", (long long)v->i);
    *out = (ml_post)v->i;
    return NULL;
  }
  if (v->kind == GRAPH_ATTR_STRING) {
    for (int i = 0; i < 5; i++)
      if (ml_bytes_is(&v->s, names[i])) {
        *out = (ml_post)i;
        return NULL;
      }
  }
  return op_error(node, KILN_INVALID_ARGUMENT,
                  "post_transform must be one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

static double ml_logistic(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}

/* The probit function: the inverse of the standard normal CDF, sqrt(2) erfinv(2p - 1),
 * from a rational first guess refined by Newton steps on erf (exact to double rounding,
 * where ONNX Runtime keeps a rough closed-form approximation). */
static double ml_probit(double p) {
  if (!(p > 0 && p < 1)) return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
  double z = 2 * p - 1;
  double w = log((1 - z) * (1 + z)), a = 0.147;
  double t = 2 / (M_PI * a) + w / 2;
  double y = copysign(sqrt(sqrt(t * t - w / a) - t), z);
  for (int i = 0; i < 4; i++) {
    double d = 2 / sqrt(M_PI) * exp(-y * y);
    if (!(d > 0)) break;
    double err = (z > 0.5 ? -(erfc(y) - (1 - z)) : erf(y) - z);
    y -= err / d;
  }
  return M_SQRT2 * y;
}

void ml_apply_post(ml_post pt, double *s, int64_t n) {
  switch (pt) {
    case ML_NONE:
      return;
    case ML_LOGISTIC:
      for (int64_t i = 0; i < n; i++) s[i] = ml_logistic(s[i]);
      return;
    case ML_PROBIT:
      for (int64_t i = 0; i < n; i++) s[i] = ml_probit(s[i]);
      return;
    case ML_SOFTMAX:
    case ML_SOFTMAX_ZERO: {
      if (n == 0) return;
      double mx = s[0], sum = 0;
      for (int64_t i = 1; i < n; i++) mx = fmax(mx, s[i]);
      for (int64_t i = 0; i < n; i++) {
        /* SOFTMAX_ZERO: a zero score stays (almost) zero instead of exp(0 - max). */
        if (pt == ML_SOFTMAX_ZERO && fabs(s[i]) <= 1e-7) s[i] *= exp(-mx);
        else s[i] = exp(s[i] - mx);
        sum += s[i];
      }
      for (int64_t i = 0; i < n; i++) s[i] = sum == 0 ? 0.5 : s[i] / sum;
      return;
    }
  }
}

/* ------------------------------------------------------------------ inputs ---- */

/* The [N, F] matrix of input 0 (a vector is one row) as doubles. */
kiln_status ml_input_matrix(op_host_ctx *ctx, ml_mem *m, double **x, int64_t *rows, int64_t *cols) {
  graph_tensor *t = onnx_host_input(ctx, 0);
  if (!t) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X is required");
  if (!ml_numeric_dtype(t->dtype))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X must be numeric (got %s)", graph_dtype_name(t->dtype));
  if (t->rank == 1) {
    *rows = 1;
    *cols = t->dims[0];
  } else if (t->rank == 2) {
    *rows = t->dims[0];
    *cols = t->dims[1];
  } else {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X must be [N, F] or [F] (got rank %d)", t->rank);
  }
  *x = ml_alloc(m, t->n, sizeof(double));
  for (int64_t i = 0; i < t->n; i++) (*x)[i] = tensor_get_f64(t, i);
  return NULL;
}

static kiln_status ml_set_output(op_host_ctx *ctx, int i, graph_dtype dt, int rank, const int64_t *dims,
                                 graph_tensor **out) {
  *out = NULL;
  if (i >= ctx->n_outputs) return NULL;
  TRY(tensor_create(dt, rank, dims, out));
  ctx->outputs[i] = *out;
  return NULL;
}

/* Writes an [N, C] score matrix as float32 output i. */
kiln_status ml_write_scores(op_host_ctx *ctx, int i, const double *s, int64_t rows, int64_t cols,
                                   graph_dtype dt) {
  graph_tensor *t;
  int64_t dims[2] = {rows, cols};
  TRY(ml_set_output(ctx, i, dt, 2, dims, &t));
  if (t)
    for (int64_t k = 0; k < rows * cols; k++) tensor_set_f64(t, k, s[k]);
  return NULL;
}


kiln_status ml_read_labels(const graph_node *node, ml_mem *m, const char *ints_name, const char *strs_name,
                                  ml_labels *l) {
  bool has_i, has_s;
  int64_t ni, ns;
  memset(l, 0, sizeof *l);
  TRY(ml_attr_i64(node, m, ints_name, &l->ints, &ni, &has_i));
  TRY(ml_attr_str(node, m, strs_name, &l->strs, &ns, &has_s));
  if (ni && ns) return op_error(node, KILN_INVALID_ARGUMENT, "both %s and %s are given", ints_name, strs_name);
  if (ns) {
    l->n = ns;
    l->ints = NULL;
  } else {
    l->n = ni;
    l->strs = NULL;
  }
  return NULL;
}

/* Output 0: labels[idx[r]] for each row (int64 or string); an index outside the
 * labels writes 0 or "". */
kiln_status ml_write_labels(op_host_ctx *ctx, const ml_labels *l, const int64_t *idx, int64_t rows) {
  graph_tensor *t;
  TRY(ml_set_output(ctx, 0, l->strs ? GRAPH_DT_STRING : GRAPH_DT_INT64, 1, &rows, &t));
  if (!t) return NULL;
  for (int64_t r = 0; r < rows; r++) {
    int64_t k = idx[r];
    if (l->strs) {
      if (k >= 0 && k < l->n) tensor_set_string(t, r, l->strs[k].data, l->strs[k].len);
    } else {
      tensor_set_s64(t, r, k >= 0 && k < l->n ? l->ints[k] : 0);
    }
  }
  return NULL;
}

int64_t ml_argmax(const double *s, int64_t n) {
  int64_t b = 0;
  for (int64_t i = 1; i < n; i++)
    if (s[i] > s[b]) b = i;
  return b;
}

/* ============================================================ linear models ==== */

/* scores[r, j] = x[r] . coef[j] + intercept[j] for j < k, coef being [k, cols]. */
static kiln_status ml_linear(const graph_node *node, ml_mem *m, const double *x, int64_t rows, int64_t cols,
                             int64_t k_hint, double **out, int64_t *k_out) {
  double *coef, *icpt;
  int64_t nc, ni;
  TRY(ml_attr_f64(node, m, "coefficients", &coef, &nc, NULL));
  TRY(ml_attr_f64(node, m, "intercepts", &icpt, &ni, NULL));
  if (cols == 0 || nc % cols != 0 || nc == 0)
    return op_error(node, KILN_INVALID_ARGUMENT, "coefficients has %lld entries, not a multiple of X's %lld features",
                    (long long)nc, (long long)cols);
  int64_t k = nc / cols;
  if (k_hint > 0 && k != k_hint)
    return op_error(node, KILN_INVALID_ARGUMENT, "coefficients has %lld entries, expected %lld x %lld", (long long)nc,
                    (long long)k_hint, (long long)cols);
  if (ni != 0 && ni != k && ni != 1)
    return op_error(node, KILN_INVALID_ARGUMENT, "intercepts has %lld entries, expected %lld", (long long)ni,
                    (long long)k);
  double *s = ml_alloc(m, rows * k, sizeof(double));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < k; j++) {
      double a = ni ? icpt[ni == 1 ? 0 : j] : 0;
      for (int64_t c = 0; c < cols; c++) a += x[r * cols + c] * coef[j * cols + c];
      s[r * k + j] = a;
    }
  *out = s;
  *k_out = k;
  return NULL;
}

static kiln_status linear_regressor(op_host_ctx *ctx, ml_mem *m) {
  double *x, *s;
  int64_t rows, cols, k;
  ml_post pt;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  int64_t targets = graph_node_attr_int_or(ctx->node, "targets", 1);
  if (targets <= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute targets must be positive");
  TRY(ml_parse_post(ctx->node, &pt));
  TRY(ml_linear(ctx->node, m, x, rows, cols, targets, &s, &k));
  for (int64_t r = 0; r < rows; r++) ml_apply_post(pt, s + r * k, k);
  return ml_write_scores(ctx, 0, s, rows, k, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_linear_regressor, linear_regressor)

static kiln_status linear_classifier(op_host_ctx *ctx, ml_mem *m) {
  double *x, *s;
  int64_t rows, cols, k;
  ml_post pt;
  ml_labels lab;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_read_labels(ctx->node, m, "classlabels_ints", "classlabels_strings", &lab));
  TRY(ml_parse_post(ctx->node, &pt));
  TRY(ml_linear(ctx->node, m, x, rows, cols, 0, &s, &k));
  int64_t C = lab.n;
  if (C < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "classlabels_ints / classlabels_strings are missing");
  if (k != C && !(k == 1 && C == 2))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "coefficients give %lld score columns for %lld classes",
                    (long long)k, (long long)C);
  int64_t w = k == 1 && C == 2 ? 2 : k;
  double *z = ml_alloc(m, rows * w, sizeof(double));
  int64_t *label = ml_alloc(m, rows, sizeof(int64_t));
  for (int64_t r = 0; r < rows; r++) {
    double *zr = z + r * w;
    if (w == 2 && k == 1) {
      zr[0] = -s[r];
      zr[1] = s[r];
    } else {
      memcpy(zr, s + r * k, (size_t)k * sizeof(double));
    }
    ml_apply_post(pt, zr, w);
    if (w > 1) {
      label[r] = ml_argmax(zr, w);
    } else {
      /* One score column for one class: that class when the score reaches the
       * threshold (0 for raw scores, 0.5 for transformed ones), else no class (label 0
       * or ""). */
      label[r] = zr[0] >= (pt == ML_NONE ? 0 : 0.5) ? 0 : -1;
    }
  }
  TRY(ml_write_labels(ctx, &lab, label, rows));
  return ml_write_scores(ctx, 1, z, rows, w, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_linear_classifier, linear_classifier)

/* ===================================================================== SVMs ==== */

typedef enum ml_kernel { ML_K_LINEAR, ML_K_POLY, ML_K_RBF, ML_K_SIGMOID } ml_kernel;

typedef struct ml_svm {
  ml_kernel kernel;
  double gamma, coef0, degree;
} ml_svm;

static kiln_status ml_parse_svm(const graph_node *node, ml_mem *m, ml_svm *k) {
  static const char *names[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
  const char *s = onnx_attr_string(node, "kernel_type", "LINEAR");
  int i = 0;
  while (i < 4 && strcmp(s, names[i]) != 0) i++;
  if (i == 4) return op_error(node, KILN_INVALID_ARGUMENT, "kernel_type '%s' is not LINEAR, POLY, RBF or SIGMOID", s);
  k->kernel = (ml_kernel)i;
  double *p;
  int64_t n;
  TRY(ml_attr_f64(node, m, "kernel_params", &p, &n, NULL));
  k->gamma = n > 0 ? p[0] : 0;
  k->coef0 = n > 1 ? p[1] : 0;
  k->degree = n > 2 ? p[2] : 0;
  return NULL;
}

static double ml_kernel_dot(const ml_svm *k, const double *a, const double *b, int64_t n) {
  double s = 0;
  if (k->kernel == ML_K_RBF) {
    for (int64_t i = 0; i < n; i++) s += (a[i] - b[i]) * (a[i] - b[i]);
    return exp(-k->gamma * s);
  }
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
  if (k->kernel == ML_K_POLY) return pow(k->gamma * s + k->coef0, (double)(int64_t)k->degree);
  if (k->kernel == ML_K_SIGMOID) return tanh(k->gamma * s + k->coef0);
  return s;
}

static kiln_status svm_regressor(op_host_ctx *ctx, ml_mem *m) {
  double *x, *coef, *sv, *rho;
  int64_t rows, cols, nc, nsv, nrho;
  ml_svm k;
  ml_post pt;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_parse_svm(ctx->node, m, &k));
  TRY(ml_parse_post(ctx->node, &pt));
  int64_t ns = graph_node_attr_int_or(ctx->node, "n_supports", 0);
  bool one_class = graph_node_attr_int_or(ctx->node, "one_class", 0) != 0;
  TRY(ml_attr_f64(ctx->node, m, "coefficients", &coef, &nc, NULL));
  TRY(ml_attr_f64(ctx->node, m, "support_vectors", &sv, &nsv, NULL));
  TRY(ml_attr_f64(ctx->node, m, "rho", &rho, &nrho, NULL));
  if (nrho < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute rho is missing");
  if (ns < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "n_supports is negative");
  if (ns > 0) {
    TRY(ml_check_len(ctx->node, "coefficients", nc, ns, false));
    if (nsv != ns * cols)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "support_vectors has %lld entries, expected %lld x %lld",
                      (long long)nsv, (long long)ns, (long long)cols);
  } else {
    TRY(ml_check_len(ctx->node, "coefficients", nc, cols, false));
  }
  double *s = ml_alloc(m, rows, sizeof(double));
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * cols;
    double a = 0;
    if (ns > 0)
      for (int64_t j = 0; j < ns; j++) a += coef[j] * ml_kernel_dot(&k, xr, sv + j * cols, cols);
    else
      for (int64_t c = 0; c < cols; c++) a += xr[c] * coef[c];
    a += rho[0];
    s[r] = one_class ? (a > 0 ? 1 : -1) : a;
    ml_apply_post(pt, s + r, 1);
  }
  return ml_write_scores(ctx, 0, s, rows, 1, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_svm_regressor, svm_regressor)

/* Pairwise-coupling of one-vs-one probabilities r[i][j] into class probabilities p
 * (Wu, Lin and Weng 2004, method 2, as libsvm solves it: a fixed-point iteration on
 * Q p = const with sum p = 1). */
static void ml_couple(int64_t k, const double *r, double *p, double *Q, double *Qp) {
  for (int64_t t = 0; t < k; t++) {
    p[t] = 1.0 / (double)k;
    Q[t * k + t] = 0;
    for (int64_t j = 0; j < k; j++) {
      if (j == t) continue;
      Q[t * k + t] += r[j * k + t] * r[j * k + t];
      Q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  int64_t max_iter = k > 100 ? k : 100;
  double eps = 0.005 / (double)k;
  for (int64_t it = 0; it < max_iter; it++) {
    double pQp = 0;
    for (int64_t t = 0; t < k; t++) {
      Qp[t] = 0;
      for (int64_t j = 0; j < k; j++) Qp[t] += Q[t * k + j] * p[j];
      pQp += p[t] * Qp[t];
    }
    double err = 0;
    for (int64_t t = 0; t < k; t++) err = fmax(err, fabs(Qp[t] - pQp));
    if (err < eps) break;
    for (int64_t t = 0; t < k; t++) {
      double diff = (-Qp[t] + pQp) / Q[t * k + t];
      p[t] += diff;
      pQp = (pQp + diff * (diff * Q[t * k + t] + 2 * Qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; j++) {
        Qp[j] = (Qp[j] + diff * Q[t * k + j]) / (1 + diff);
        p[j] /= 1 + diff;
      }
    }
  }
}

static kiln_status svm_classifier(op_host_ctx *ctx, ml_mem *m) {
  double *x, *coef, *sv, *rho, *pa, *pb;
  int64_t rows, cols, nc, nsv, nrho, npa, npb, *vpc, nvpc;
  ml_svm k;
  ml_post pt;
  ml_labels lab;
  const graph_node *node = ctx->node;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_parse_svm(node, m, &k));
  TRY(ml_parse_post(node, &pt));
  TRY(ml_read_labels(node, m, "classlabels_ints", "classlabels_strings", &lab));
  TRY(ml_attr_f64(node, m, "coefficients", &coef, &nc, NULL));
  TRY(ml_attr_f64(node, m, "support_vectors", &sv, &nsv, NULL));
  TRY(ml_attr_f64(node, m, "rho", &rho, &nrho, NULL));
  TRY(ml_attr_f64(node, m, "prob_a", &pa, &npa, NULL));
  TRY(ml_attr_f64(node, m, "prob_b", &pb, &npb, NULL));
  TRY(ml_attr_i64(node, m, "vectors_per_class", &vpc, &nvpc, NULL));
  int64_t C = lab.n > 0 ? lab.n : 1, nv = 0;
  if (nvpc && nvpc != C)
    return op_error(node, KILN_INVALID_ARGUMENT, "vectors_per_class has %lld entries for %lld classes",
                    (long long)nvpc, (long long)C);
  int64_t *start = ml_alloc(m, C, sizeof(int64_t));
  for (int64_t i = 0; i < nvpc; i++) {
    if (vpc[i] < 0) return op_error(node, KILN_INVALID_ARGUMENT, "vectors_per_class[%lld] is negative", (long long)i);
    start[i] = nv;
    nv += vpc[i];
  }
  bool svc = nv > 0;
  int64_t npair = C * (C - 1) / 2;
  if (svc) {
    if (nsv != nv * cols)
      return op_error(node, KILN_INVALID_ARGUMENT, "support_vectors has %lld entries, expected %lld x %lld",
                      (long long)nsv, (long long)nv, (long long)cols);
    if (nc != (C - 1) * nv)
      return op_error(node, KILN_INVALID_ARGUMENT, "coefficients has %lld entries, expected %lld x %lld",
                      (long long)nc, (long long)(C - 1), (long long)nv);
    if (nrho < npair)
      return op_error(node, KILN_INVALID_ARGUMENT, "rho has %lld entries, expected %lld (one per class pair)",
                      (long long)nrho, (long long)npair);
  } else {
    if (nc != C * cols)
      return op_error(node, KILN_INVALID_ARGUMENT, "coefficients has %lld entries, expected %lld x %lld",
                      (long long)nc, (long long)C, (long long)cols);
    if (nrho < 1) return op_error(node, KILN_INVALID_ARGUMENT, "attribute rho is missing");
  }
  bool proba = svc && npa > 0;
  if (proba && (npa < npair || npb < npair))
    return op_error(node, KILN_INVALID_ARGUMENT, "prob_a/prob_b have %lld/%lld entries, expected %lld",
                    (long long)npa, (long long)npb, (long long)npair);
  bool all_pos = true;
  for (int64_t i = 0; i < nc; i++) all_pos = all_pos && coef[i] >= 0;
  int64_t nscore = svc ? (proba ? C : npair) : C;
  /* One raw score and two classes: the scores are written as [-s, s] (or the
   * transformed pair), as the spec's SVM classifier does for the binary case. */
  bool second = nrho == 1 && lab.n == 2 && nscore == 1;
  int64_t w = second ? 2 : nscore;
  double *z = ml_alloc(m, rows * w, sizeof(double)), *kern = ml_alloc(m, nv, sizeof(double));
  double *sc = ml_alloc(m, nscore > npair ? nscore : npair + 1, sizeof(double));
  double *votes = ml_alloc(m, C, sizeof(double)), *R = ml_alloc(m, C * C, sizeof(double));
  double *Q = ml_alloc(m, C * C, sizeof(double)), *Qp = ml_alloc(m, C, sizeof(double));
  int64_t *label = ml_alloc(m, rows, sizeof(int64_t));
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * cols;
    int64_t best;
    double best_w;
    if (svc) {
      for (int64_t j = 0; j < nv; j++) kern[j] = ml_kernel_dot(&k, xr, sv + j * cols, cols);
      memset(votes, 0, (size_t)C * sizeof(double));
      int64_t e = 0;
      for (int64_t i = 0; i < C; i++)
        for (int64_t j = i + 1; j < C; j++, e++) {
          double s = rho[e];
          for (int64_t q = 0; q < vpc[i]; q++) s += coef[(j - 1) * nv + start[i] + q] * kern[start[i] + q];
          for (int64_t q = 0; q < vpc[j]; q++) s += coef[i * nv + start[j] + q] * kern[start[j] + q];
          sc[e] = s;
          votes[s > 0 ? i : j] += 1;
        }
      best = ml_argmax(votes, C);
      best_w = votes[best];
      if (proba) {
        e = 0;
        for (int64_t i = 0; i < C; i++)
          for (int64_t j = i + 1; j < C; j++, e++) {
            double v = 1 - ml_logistic(sc[e] * pa[e] + pb[e]);
            v = fmin(fmax(v, 1e-7), 1 - 1e-7);
            R[i * C + j] = v;
            R[j * C + i] = 1 - v;
          }
        ml_couple(C, R, sc, Q, Qp);
      }
    } else {
      for (int64_t j = 0; j < C; j++) {
        double s = rho[0];
        for (int64_t c = 0; c < cols; c++) s += xr[c] * coef[j * cols + c];
        sc[j] = s;
      }
      best = ml_argmax(sc, C);
      best_w = sc[best];
    }
    if (nrho == 1 && lab.n == 2) {
      /* Binary: the label rule of the spec's reference (all-positive weights vote by
       * a 0.5 threshold). */
      if (!proba && all_pos && best_w >= 0.5) best = 1;
    } else if (nrho == 1) {
      best = best_w > 0 ? 1 : 0; /* one decision function: positive class 1, else 0 */
    }
    label[r] = best;
    double *zr = z + r * w;
    if (second) {
      double s = sc[0];
      if (pt == ML_NONE || pt == ML_PROBIT) {
        zr[0] = pt == ML_PROBIT ? ml_probit(s) : -s;
        zr[1] = pt == ML_PROBIT ? ml_probit(s) : s;
      } else {
        zr[0] = -s;
        zr[1] = s;
        ml_apply_post(pt, zr, 2);
      }
    } else {
      memcpy(zr, sc, (size_t)nscore * sizeof(double));
      ml_apply_post(pt, zr, nscore);
    }
  }
  if (lab.n == 0 || (nrho == 1 && lab.n != 2)) { /* raw labels: the class index, or 1/0 */
    graph_tensor *t;
    TRY(ml_set_output(ctx, 0, GRAPH_DT_INT64, 1, &rows, &t));
    for (int64_t r = 0; t && r < rows; r++) tensor_set_s64(t, r, label[r]);
  } else {
    TRY(ml_write_labels(ctx, &lab, label, rows));
  }
  return ml_write_scores(ctx, 1, z, rows, w, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_svm_classifier, svm_classifier)

/* ========================================================= preprocessing ==== */

/* Per-feature parameter p (1 or cols entries) for column c. */
static double ml_per_col(const double *p, int64_t n, int64_t c, double dflt) {
  return n == 0 ? dflt : p[n == 1 ? 0 : c];
}

static kiln_status scaler(op_host_ctx *ctx, ml_mem *m) {
  double *x, *off, *scale;
  int64_t rows, cols, no, ns;
  graph_tensor *in = onnx_host_input(ctx, 0);
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_attr_f64(ctx->node, m, "offset", &off, &no, NULL));
  TRY(ml_attr_f64(ctx->node, m, "scale", &scale, &ns, NULL));
  if (no > 1 && no != cols)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "offset has %lld entries for %lld features", (long long)no,
                    (long long)cols);
  if (ns > 1 && ns != cols)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "scale has %lld entries for %lld features", (long long)ns,
                    (long long)cols);
  graph_tensor *t;
  TRY(ml_set_output(ctx, 0, GRAPH_DT_FLOAT, in->rank, in->dims, &t));
  for (int64_t i = 0; t && i < rows * cols; i++) {
    int64_t c = i % cols;
    tensor_set_f64(t, i, (x[i] - ml_per_col(off, no, c, 0)) * ml_per_col(scale, ns, c, 1));
  }
  return NULL;
}
ML_KERNEL(host_scaler, scaler)

static kiln_status normalizer(op_host_ctx *ctx, ml_mem *m) {
  double *x;
  int64_t rows, cols;
  graph_tensor *in = onnx_host_input(ctx, 0);
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  const char *norm = onnx_attr_string(ctx->node, "norm", "MAX");
  int kind = strcmp(norm, "MAX") == 0 ? 0 : strcmp(norm, "L1") == 0 ? 1 : strcmp(norm, "L2") == 0 ? 2 : -1;
  if (kind < 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "norm '%s' is not MAX, L1 or L2", norm);
  graph_tensor *t;
  TRY(ml_set_output(ctx, 0, GRAPH_DT_FLOAT, in->rank, in->dims, &t));
  for (int64_t r = 0; t && r < rows; r++) {
    const double *xr = x + r * cols;
    double d = 0;
    for (int64_t c = 0; c < cols; c++) {
      if (kind == 0) d = fmax(d, fabs(xr[c]));
      else if (kind == 1) d += fabs(xr[c]);
      else d += xr[c] * xr[c];
    }
    if (kind == 2) d = sqrt(d);
    d = fmax(d, 1e-30); /* an all-zero row stays zero */
    for (int64_t c = 0; c < cols; c++) tensor_set_f64(t, r * cols + c, xr[c] / d);
  }
  return NULL;
}
ML_KERNEL(host_normalizer, normalizer)

static kiln_status binarizer(op_host_ctx *ctx, ml_mem *m) {
  (void)m;
  graph_tensor *in = onnx_host_input(ctx, 0), *t;
  if (!in || !ml_numeric_dtype(in->dtype)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X must be numeric");
  double thr = graph_node_attr_float_or(ctx->node, "threshold", 0.0f);
  TRY(ml_set_output(ctx, 0, in->dtype, in->rank, in->dims, &t));
  for (int64_t i = 0; t && i < in->n; i++) tensor_set_f64(t, i, tensor_get_f64(in, i) > thr ? 1 : 0);
  return NULL;
}
ML_KERNEL(host_binarizer, binarizer)

static kiln_status imputer(op_host_ctx *ctx, ml_mem *m) {
  graph_tensor *in = onnx_host_input(ctx, 0), *t;
  if (!in || !ml_numeric_dtype(in->dtype)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X must be numeric");
  double *vals;
  int64_t nv;
  bool is_float = in->dtype == GRAPH_DT_FLOAT || in->dtype == GRAPH_DT_DOUBLE || in->dtype == GRAPH_DT_HALF;
  TRY(ml_attr_f64(ctx->node, m, is_float ? "imputed_value_floats" : "imputed_value_int64s", &vals, &nv, NULL));
  if (nv == 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute %s is missing for a %s input",
                    is_float ? "imputed_value_floats" : "imputed_value_int64s", graph_dtype_name(in->dtype));
  double repl = is_float ? graph_node_attr_float_or(ctx->node, "replaced_value_float", 0.0f)
                         : (double)graph_node_attr_int_or(ctx->node, "replaced_value_int64", 0);
  int64_t cols = in->rank ? in->dims[in->rank - 1] : 1;
  if (nv != 1 && nv != cols)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%lld imputed values for %lld features", (long long)nv,
                    (long long)cols);
  TRY(ml_set_output(ctx, 0, in->dtype, in->rank, in->dims, &t));
  for (int64_t i = 0; t && i < in->n; i++) {
    double v = tensor_get_f64(in, i);
    bool hit = isnan(repl) ? isnan(v) : v == repl;
    if (hit) tensor_set_f64(t, i, vals[nv == 1 ? 0 : i % cols]);
    else if (is_float) tensor_set_f64(t, i, v);
    else tensor_set_s64(t, i, tensor_get_s64(in, i));
  }
  return NULL;
}
ML_KERNEL(host_imputer, imputer)

static kiln_status array_feature_extractor(op_host_ctx *ctx, ml_mem *m) {
  (void)m;
  graph_tensor *in = onnx_host_input(ctx, 0), *idx = onnx_host_input(ctx, 1), *t;
  if (!in || !idx) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "inputs X and Y are required");
  hlo_type ht;
  if (!graph_dtype_to_hlo(idx->dtype, &ht) || idx->dtype == GRAPH_DT_FLOAT || idx->dtype == GRAPH_DT_DOUBLE)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "indices Y must be int64 (got %s)", graph_dtype_name(idx->dtype));
  if (in->rank == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "X must have rank >= 1");
  int64_t F = in->dims[in->rank - 1], k = idx->n, outer = F ? in->n / F : 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t v = tensor_get_s64(idx, j);
    if (v < 0 || v >= F)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "index %lld is outside [0, %lld)", (long long)v, (long long)F);
  }
  int64_t dims[GRAPH_MAX_RANK];
  int rank = in->rank;
  memcpy(dims, in->dims, sizeof dims);
  if (rank == 1) { /* a vector selects into [1, k] */
    rank = 2;
    dims[0] = 1;
    dims[1] = k;
  } else {
    dims[rank - 1] = k;
  }
  TRY(ml_set_output(ctx, 0, in->dtype, rank, dims, &t));
  size_t es = graph_dtype_size(in->dtype);
  for (int64_t o = 0; t && o < outer; o++)
    for (int64_t j = 0; j < k; j++) {
      int64_t src = o * F + tensor_get_s64(idx, j), dst = o * k + j;
      if (in->dtype == GRAPH_DT_STRING) {
        const graph_bytes *b = tensor_string(in, src);
        tensor_set_string(t, dst, b->data, b->len);
      } else {
        memcpy((char *)t->data + dst * es, (const char *)in->data + src * es, es);
      }
    }
  return NULL;
}
ML_KERNEL(host_array_feature_extractor, array_feature_extractor)

static kiln_status one_hot_encoder(op_host_ctx *ctx, ml_mem *m) {
  graph_tensor *in = onnx_host_input(ctx, 0), *t;
  int64_t *ci, ni, ns;
  graph_bytes *cs;
  if (!in) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X is required");
  TRY(ml_attr_i64(ctx->node, m, "cats_int64s", &ci, &ni, NULL));
  TRY(ml_attr_str(ctx->node, m, "cats_strings", &cs, &ns, NULL));
  bool str_in = in->dtype == GRAPH_DT_STRING;
  int64_t K = str_in ? ns : ni;
  if (K == 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute %s is missing for a %s input",
                    str_in ? "cats_strings" : "cats_int64s", graph_dtype_name(in->dtype));
  if (!str_in && !ml_numeric_dtype(in->dtype))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X must be numeric or string");
  bool zeros = graph_node_attr_int_or(ctx->node, "zeros", 1) != 0;
  if (in->rank >= GRAPH_MAX_RANK) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input X has too high a rank");
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, in->dims, sizeof dims);
  dims[in->rank] = K;
  TRY(ml_set_output(ctx, 0, GRAPH_DT_FLOAT, in->rank + 1, dims, &t));
  float *y = t ? t->data : NULL;
  for (int64_t i = 0; y && i < in->n; i++) {
    int64_t hit = -1;
    if (str_in) {
      const graph_bytes *b = tensor_string(in, i);
      for (int64_t j = 0; j < K && hit < 0; j++)
        if (ml_bytes_cmp(b, &cs[j]) == 0) hit = j;
    } else {
      double v = tensor_get_f64(in, i);
      for (int64_t j = 0; j < K && hit < 0; j++)
        if ((double)ci[j] == v) hit = j;
    }
    if (hit >= 0) y[i * K + hit] = 1;
    else if (!zeros)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "element %lld of X is not one of the categories (and zeros=0 forbids an all-zero row)",
                      (long long)i);
  }
  return NULL;
}
ML_KERNEL(host_one_hot_encoder, one_hot_encoder)

/* LabelEncoder: keys -> values, each int64, float or string (ml opset 1's
 * classes_strings maps string <-> index; opset 2 the keys_* / values_* lists; opset 4
 * the keys_tensor / values_tensor / default_tensor). */
typedef enum ml_kind { ML_KIND_INT, ML_KIND_FLOAT, ML_KIND_STR } ml_kind;
typedef struct ml_vec {
  ml_kind kind;
  int64_t n;
  int64_t *i;
  double *f;
  graph_bytes *s;
} ml_vec;

static kiln_status ml_read_vec(const graph_node *node, ml_mem *m, const char *prefix, ml_vec *v, bool *found) {
  char nm[64];
  bool p;
  memset(v, 0, sizeof *v);
  *found = true;
  snprintf(nm, sizeof nm, "%s_tensor", prefix);
  const graph_attr_value *a = graph_node_attr(node, nm);
  if (a && a->kind == GRAPH_ATTR_TENSOR && a->tensor) {
    graph_dtype d = a->tensor->dtype;
    if (d == GRAPH_DT_STRING) {
      v->kind = ML_KIND_STR;
      return ml_attr_str(node, m, nm, &v->s, &v->n, &p);
    }
    if (d == GRAPH_DT_FLOAT || d == GRAPH_DT_DOUBLE) {
      v->kind = ML_KIND_FLOAT;
      return ml_attr_f64(node, m, nm, &v->f, &v->n, &p);
    }
    v->kind = ML_KIND_INT;
    return ml_attr_i64(node, m, nm, &v->i, &v->n, &p);
  }
  snprintf(nm, sizeof nm, "%s_int64s", prefix);
  if (graph_node_attr(node, nm)) return v->kind = ML_KIND_INT, ml_attr_i64(node, m, nm, &v->i, &v->n, &p);
  snprintf(nm, sizeof nm, "%s_floats", prefix);
  if (graph_node_attr(node, nm)) return v->kind = ML_KIND_FLOAT, ml_attr_f64(node, m, nm, &v->f, &v->n, &p);
  snprintf(nm, sizeof nm, "%s_strings", prefix);
  if (graph_node_attr(node, nm)) return v->kind = ML_KIND_STR, ml_attr_str(node, m, nm, &v->s, &v->n, &p);
  *found = false;
  return NULL;
}

static bool ml_vec_match(const ml_vec *keys, int64_t j, const graph_tensor *in, int64_t i) {
  switch (keys->kind) {
    case ML_KIND_STR: return ml_bytes_cmp(&keys->s[j], tensor_string(in, i)) == 0;
    case ML_KIND_FLOAT: {
      double v = tensor_get_f64(in, i);
      return keys->f[j] == v || (isnan(keys->f[j]) && isnan(v));
    }
    case ML_KIND_INT: return keys->i[j] == tensor_get_s64(in, i);
  }
  return false;
}

static kiln_status label_encoder(op_host_ctx *ctx, ml_mem *m) {
  const graph_node *node = ctx->node;
  graph_tensor *in = onnx_host_input(ctx, 0), *t;
  if (!in) return op_error(node, KILN_INVALID_ARGUMENT, "input X is required");
  ml_vec keys, vals;
  bool fk, fv;
  TRY(ml_read_vec(node, m, "keys", &keys, &fk));
  TRY(ml_read_vec(node, m, "values", &vals, &fv));
  /* Defaults, by the value kind. */
  double dflt_f = graph_node_attr_float_or(node, "default_float", -0.0f);
  int64_t dflt_i = graph_node_attr_int_or(node, "default_int64", -1);
  graph_bytes dflt_s = {(char *)"_Unused", 7};
  const graph_attr_value *ds = graph_node_attr(node, "default_string");
  if (ds && ds->kind == GRAPH_ATTR_STRING) dflt_s = ds->s;
  const graph_attr_value *dt = graph_node_attr(node, "default_tensor");
  if (dt && dt->kind == GRAPH_ATTR_TENSOR && dt->tensor && dt->tensor->n >= 1) {
    if (dt->tensor->dtype == GRAPH_DT_STRING) dflt_s = *tensor_string(dt->tensor, 0);
    else if (ml_numeric_dtype(dt->tensor->dtype)) {
      dflt_f = tensor_get_f64(dt->tensor, 0);
      dflt_i = tensor_get_s64(dt->tensor, 0);
    }
  }
  if (!fk && !fv) {
    /* ml opset 1: classes_strings; string -> index, or index -> string. */
    graph_bytes *cls;
    int64_t nc;
    TRY(ml_attr_str(node, m, "classes_strings", &cls, &nc, NULL));
    if (in->dtype == GRAPH_DT_STRING) {
      keys = (ml_vec){ML_KIND_STR, nc, NULL, NULL, cls};
      vals = (ml_vec){ML_KIND_INT, nc, ml_alloc(m, nc, sizeof(int64_t)), NULL, NULL};
      for (int64_t j = 0; j < nc; j++) vals.i[j] = j;
    } else {
      keys = (ml_vec){ML_KIND_INT, nc, ml_alloc(m, nc, sizeof(int64_t)), NULL, NULL};
      for (int64_t j = 0; j < nc; j++) keys.i[j] = j;
      vals = (ml_vec){ML_KIND_STR, nc, NULL, NULL, cls};
    }
  } else if (!fk || !fv) {
    return op_error(node, KILN_INVALID_ARGUMENT, "%s attribute is missing (keys_* and values_* come in pairs)",
                    fk ? "a values_*" : "a keys_*");
  }
  if (keys.n != vals.n)
    return op_error(node, KILN_INVALID_ARGUMENT, "%lld keys but %lld values", (long long)keys.n, (long long)vals.n);
  bool in_str = in->dtype == GRAPH_DT_STRING;
  if (in_str != (keys.kind == ML_KIND_STR) || (!in_str && !ml_numeric_dtype(in->dtype)))
    return op_error(node, KILN_INVALID_ARGUMENT, "input X is %s but the keys are %s", graph_dtype_name(in->dtype),
                    keys.kind == ML_KIND_STR ? "strings" : "numbers");
  graph_dtype odt = vals.kind == ML_KIND_STR ? GRAPH_DT_STRING : vals.kind == ML_KIND_INT ? GRAPH_DT_INT64
                    : (dt && dt->tensor && dt->tensor->dtype == GRAPH_DT_DOUBLE) ? GRAPH_DT_DOUBLE : GRAPH_DT_FLOAT;
  const graph_attr_value *vt = graph_node_attr(node, "values_tensor");
  if (vt && vt->kind == GRAPH_ATTR_TENSOR && vt->tensor && vals.kind != ML_KIND_STR) odt = vt->tensor->dtype;
  TRY(ml_set_output(ctx, 0, odt, in->rank, in->dims, &t));
  for (int64_t i = 0; t && i < in->n; i++) {
    int64_t hit = -1;
    for (int64_t j = 0; j < keys.n && hit < 0; j++)
      if (ml_vec_match(&keys, j, in, i)) hit = j;
    if (vals.kind == ML_KIND_STR) {
      const graph_bytes *b = hit >= 0 ? &vals.s[hit] : &dflt_s;
      tensor_set_string(t, i, b->data, b->len);
    } else if (vals.kind == ML_KIND_INT) {
      tensor_set_s64(t, i, hit >= 0 ? vals.i[hit] : dflt_i);
    } else {
      tensor_set_f64(t, i, hit >= 0 ? vals.f[hit] : dflt_f);
    }
  }
  return NULL;
}
ML_KERNEL(host_label_encoder, label_encoder)

/* DictVectorizer and CastMap take maps, which no op of kiln's makes and no input of
 * a graph can be given as, short of a map graph input (exec/values.c); refused. ZipMap,
 * which makes maps, is an executor native (exec/maps.c). */
static kiln_status host_map_input(op_host_ctx *ctx) {
  return op_error(ctx->node, KILN_UNIMPLEMENTED, "this op takes maps, which kiln cannot represent");
}

/* -------------------------------------------------------------------- table ---- */

static const op_def onnx_ml_defs[] = {
    {"ai.onnx.ml.ArrayFeatureExtractor", 0, 0, NULL, host_array_feature_extractor},
    {"ai.onnx.ml.Binarizer", 0, 0, NULL, host_binarizer},
    {"ai.onnx.ml.CastMap", 0, 0, NULL, host_map_input},
    {"ai.onnx.ml.DictVectorizer", 0, 0, NULL, host_map_input},
    {"ai.onnx.ml.Imputer", 0, 0, NULL, host_imputer},
    {"ai.onnx.ml.LabelEncoder", OP_STRING, 0, NULL, host_label_encoder},
    {"ai.onnx.ml.LinearClassifier", OP_STRING, 0, NULL, host_linear_classifier},
    {"ai.onnx.ml.LinearRegressor", 0, 0, NULL, host_linear_regressor},
    {"ai.onnx.ml.Normalizer", 0, 0, NULL, host_normalizer},
    {"ai.onnx.ml.OneHotEncoder", OP_STRING, 0, NULL, host_one_hot_encoder},
    {"ai.onnx.ml.SVMClassifier", OP_STRING, 0, NULL, host_svm_classifier},
    {"ai.onnx.ml.SVMRegressor", 0, 0, NULL, host_svm_regressor},
    {"ai.onnx.ml.Scaler", 0, 0, NULL, host_scaler},
};

/* The tree ensembles' table is onnx_ml_tree_ops (ops_onnx_ml_trees.c). */
const op_table onnx_ml_ops = {"ai.onnx.ml", (int)(sizeof onnx_ml_defs / sizeof onnx_ml_defs[0]), onnx_ml_defs};
