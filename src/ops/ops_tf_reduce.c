/* TensorFlow reductions and their relatives: Sum/Mean/Max/Min/Prod/All/Any/
 * EuclideanNorm over constant axes, ArgMax/ArgMin, Cumsum/Cumprod (exclusive,
 * reverse), TopKV2 (a sort when k is a compile-time value, a host kernel otherwise)
 * and Einsum (lowered to one dot general plus reductions and transposes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

/* Reduction axes from constant input 1 (scalar or vector, negative allowed, repeats
 * ignored as TF does). */
static kiln_status reduction_axes(op_lower_ctx *ctx, int rank, int64_t *axes, int *n) {
  int64_t raw[TF_MAX_INTS];
  int nr = 0;
  bool seen[HLO_MAX_RANK] = {false};
  TRY(tf_const_ints(ctx, 1, "reduction_indices", raw, TF_MAX_INTS, &nr));
  *n = 0;
  for (int i = 0; i < nr; i++) {
    int64_t a;
    T(oplib_normalize_axis(raw[i], rank, &a));
    if (!seen[a]) axes[(*n)++] = a;
    seen[a] = true;
  }
  return NULL;
}

typedef enum tf_reduce_kind { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_ALL, R_ANY, R_NORM } tf_reduce_kind;

static kiln_status lower_reduce(op_lower_ctx *ctx, tf_reduce_kind kind) {
  hlo_instr *x, *r;
  int64_t axes[HLO_MAX_RANK];
  int n = 0;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(reduction_axes(ctx, x->shape.rank, axes, &n));
  bool keep = graph_node_attr_bool_or(ctx->node, "keep_dims", false);
  if ((kind == R_ALL || kind == R_ANY) && x->shape.type != HLO_PRED)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be bool");
  switch (kind) {
    case R_SUM: T(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, x, n, axes, keep, &r)); break;
    case R_MEAN: T(oplib_reduce_mean(ctx->comp, x, n, axes, keep, &r)); break;
    case R_MAX:
    case R_ANY: T(oplib_reduce(ctx->comp, OPLIB_REDUCE_MAX, x, n, axes, keep, &r)); break;
    case R_MIN:
    case R_ALL: T(oplib_reduce(ctx->comp, OPLIB_REDUCE_MIN, x, n, axes, keep, &r)); break;
    case R_PROD: T(oplib_reduce(ctx->comp, OPLIB_REDUCE_PROD, x, n, axes, keep, &r)); break;
    default: {
      hlo_instr *x2, *s;
      T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, &x2));
      T(oplib_reduce(ctx->comp, OPLIB_REDUCE_SUM, x2, n, axes, keep, &s));
      r = s;
      if (hlo_type_is_float(s->shape.type)) T(hlo_build_unary(ctx->comp, HLO_OP_SQRT, s, &r));
      break;
    }
  }
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Sum(op_lower_ctx *ctx) { return lower_reduce(ctx, R_SUM); }
static kiln_status lower_Mean(op_lower_ctx *ctx) { return lower_reduce(ctx, R_MEAN); }
static kiln_status lower_Max(op_lower_ctx *ctx) { return lower_reduce(ctx, R_MAX); }
static kiln_status lower_Min(op_lower_ctx *ctx) { return lower_reduce(ctx, R_MIN); }
static kiln_status lower_Prod(op_lower_ctx *ctx) { return lower_reduce(ctx, R_PROD); }
static kiln_status lower_All(op_lower_ctx *ctx) { return lower_reduce(ctx, R_ALL); }
static kiln_status lower_Any(op_lower_ctx *ctx) { return lower_reduce(ctx, R_ANY); }
static kiln_status lower_EuclideanNorm(op_lower_ctx *ctx) { return lower_reduce(ctx, R_NORM); }

static kiln_status lower_argminmax(op_lower_ctx *ctx, bool is_max) {
  hlo_instr *x, *r;
  int64_t axis;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_int(ctx, 1, "dimension", &axis));
  if (x->shape.rank == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  T(oplib_normalize_axis(axis, x->shape.rank, &axis));
  if (x->shape.dims[axis] == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "reduction over an empty dimension");
  hlo_type it;
  TRY(tf_attr_hlo_type(ctx->node, "output_type", HLO_S64, &it));
  T(oplib_argminmax(ctx->comp, x, axis, is_max, false, false, it, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_ArgMax(op_lower_ctx *ctx) { return lower_argminmax(ctx, true); }
static kiln_status lower_ArgMin(op_lower_ctx *ctx) { return lower_argminmax(ctx, false); }

/* Cumsum/Cumprod: a reduce-window whose window spans the whole axis, padded in front
 * so that output i covers inputs 0..i. exclusive shifts the input by one (pad one
 * identity element in front, drop the last); reverse runs on the reversed axis. */
static kiln_status lower_cumulative(op_lower_ctx *ctx, bool prod) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *init, *r;
  int64_t axis;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_int(ctx, 1, "axis", &axis));
  int rank = x->shape.rank;
  if (rank == 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  T(oplib_normalize_axis(axis, rank, &axis));
  bool exclusive = graph_node_attr_bool_or(ctx->node, "exclusive", false);
  bool reverse = graph_node_attr_bool_or(ctx->node, "reverse", false);
  hlo_type t = x->shape.type, acc = (t == HLO_F16 || t == HLO_BF16) ? HLO_F32 : t;
  int64_t n = x->shape.dims[axis];
  T(oplib_convert(c, x, acc, &x));
  if (reverse) T(hlo_build_reverse(c, x, 1, &axis, &x));
  T(oplib_scalar(c, acc, prod ? 1 : 0, &init));
  if (exclusive && n > 0) {
    int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK] = {0};
    lo[axis] = 1;
    hi[axis] = -1;
    T(hlo_build_pad(c, x, init, lo, hi, (int64_t[HLO_MAX_RANK]){0}, &x));
  }
  r = x;
  if (n > 1) {
    int64_t sizes[HLO_MAX_RANK];
    for (int i = 0; i < rank; i++) sizes[i] = i == axis ? n : 1;
    hlo_window w = hlo_window_make(rank, sizes, NULL);
    w.dims[axis].pad_lo = n - 1;
    hlo_computation *f;
    T(hlo_build_scalar_computation(c->module, prod ? HLO_OP_MULTIPLY : HLO_OP_ADD, acc, &f));
    T(hlo_build_reduce_window(c, 1, &x, &init, &w, f, &r));
  }
  if (reverse) T(hlo_build_reverse(c, r, 1, &axis, &r));
  T(oplib_convert(c, r, t, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Cumsum(op_lower_ctx *ctx) { return lower_cumulative(ctx, false); }
static kiln_status lower_Cumprod(op_lower_ctx *ctx) { return lower_cumulative(ctx, true); }

/* ------------------------------------------------------------------- TopK ---- */

static kiln_status lower_TopKV2(op_lower_ctx *ctx) {
  hlo_instr *x, *v, *i;
  int64_t k;
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_const_int(ctx, 1, "k", &k));
  if (x->shape.rank < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must have rank >= 1");
  hlo_type it;
  TRY(tf_attr_hlo_type(ctx->node, "index_type", HLO_S32, &it));
  T(oplib_topk(ctx->comp, x, x->shape.rank - 1, k, true, it, &v, &i));
  tf_set_output(ctx, 0, v);
  tf_set_output(ctx, 1, i);
  return NULL;
}

typedef struct topk_row {
  const graph_tensor *x;
  int64_t base;
} topk_row;

/* Descending values, NaN first, ties by ascending index (TF's stable order). */
static int topk_cmp(const void *p, int64_t a, int64_t b) {
  const topk_row *r = p;
  if (graph_dtype_is_int(r->x->dtype)) {
    int64_t va = tensor_get_s64(r->x, r->base + a), vb = tensor_get_s64(r->x, r->base + b);
    if (r->x->dtype == GRAPH_DT_UINT64) {
      uint64_t ua = (uint64_t)va, ub = (uint64_t)vb;
      return ua > ub ? -1 : ua < ub ? 1 : 0;
    }
    return va > vb ? -1 : va < vb ? 1 : 0;
  }
  double va = tensor_get_f64(r->x, r->base + a), vb = tensor_get_f64(r->x, r->base + b);
  bool na = isnan(va), nb = isnan(vb);
  if (na || nb) return na && nb ? 0 : na ? -1 : 1;
  return va > vb ? -1 : va < vb ? 1 : 0;
}

static kiln_status host_TopKV2(op_host_ctx *ctx) {
  TRY(tf_host_check_inputs(ctx, 2, 2));
  const graph_tensor *x = ctx->inputs[0], *kt = ctx->inputs[1];
  if (kt->n != 1 || !graph_dtype_is_int(kt->dtype))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "k must be an integer scalar");
  if (x->rank < 1 || (!graph_dtype_is_int(x->dtype) && !graph_dtype_is_float(x->dtype)))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a real number tensor of rank >= 1");
  int64_t k = tensor_get_s64(kt, 0), n = x->dims[x->rank - 1];
  if (k < 0 || k > n)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "k=%lld is outside [0, %lld]", (long long)k, (long long)n);
  const graph_attr_value *itv = graph_node_attr(ctx->node, "index_type");
  graph_dtype it = itv && itv->kind == GRAPH_ATTR_TYPE ? itv->type : GRAPH_DT_INT32;
  int64_t dims[GRAPH_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[x->rank - 1] = k;
  graph_tensor *v = NULL, *ix = NULL;
  kiln_status s = tensor_create(x->dtype, x->rank, dims, &v);
  if (!s) s = tensor_create(it, x->rank, dims, &ix);
  int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
  if (!s && !order) s = op_error(ctx->node, KILN_RESOURCE_EXHAUSTED, "out of memory");
  if (s) {
    free(order);
    tensor_free(v);
    tensor_free(ix);
    return s;
  }
  size_t es = graph_dtype_size(x->dtype);
  int64_t rows = n > 0 ? x->n / n : 0;
  for (int64_t row = 0; row < rows; row++) {
    topk_row r = {x, row * n};
    for (int64_t i = 0; i < n; i++) order[i] = i;
    tf_sort_indices(order, n, topk_cmp, &r);
    for (int64_t i = 0; i < k; i++) {
      memcpy((char *)v->data + (size_t)(row * k + i) * es, (const char *)x->data + (size_t)(row * n + order[i]) * es,
             es);
      tensor_set_s64(ix, row * k + i, order[i]);
    }
  }
  free(order);
  if (ctx->n_outputs > 0) ctx->outputs[0] = v;
  else tensor_free(v);
  if (ctx->n_outputs > 1) ctx->outputs[1] = ix;
  else tensor_free(ix);
  return NULL;
}

/* ----------------------------------------------------------------- Einsum ---- */

#define EIN_MAX HLO_MAX_RANK

typedef struct ein_term {
  int n;
  char labels[EIN_MAX];
} ein_term;

/* Parses one term; "..." becomes labels '0'..'9' counted from the right so that
 * ellipses of different lengths line up as numpy broadcasting does. */
static kiln_status ein_parse_term(const graph_node *node, const char *s, size_t len, int rank, ein_term *t,
                                  int *ellipsis_len) {
  int explicit_n = 0;
  bool has_ellipsis = false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      if (has_ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
        return op_error(node, KILN_INVALID_ARGUMENT, "malformed ellipsis in equation");
      has_ellipsis = true;
      i += 2;
    } else if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
      explicit_n++;
    } else if (s[i] != ' ') {
      return op_error(node, KILN_INVALID_ARGUMENT, "unexpected character '%c' in equation", s[i]);
    }
  }
  int el = has_ellipsis ? rank - explicit_n : 0;
  if (rank >= 0 && (el < 0 || (!has_ellipsis && explicit_n != rank)))
    return op_error(node, KILN_INVALID_ARGUMENT, "equation term \"%.*s\" does not match rank %d", (int)len, s, rank);
  if (el > 10 || explicit_n + el > EIN_MAX) return op_error(node, KILN_UNIMPLEMENTED, "equation term is too long");
  t->n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '.') {
      for (int k = el - 1; k >= 0; k--) t->labels[t->n++] = (char)('0' + k);
      i += 2;
    } else if (s[i] != ' ') {
      t->labels[t->n++] = s[i];
    }
  }
  *ellipsis_len = has_ellipsis ? el : -1;
  return NULL;
}

static int ein_find(const ein_term *t, char l) {
  for (int i = 0; i < t->n; i++)
    if (t->labels[i] == l) return i;
  return -1;
}

/* Sums away the labels of x not in keep1 or keep2; updates the term. */
static kiln_status ein_reduce_unused(hlo_computation *c, hlo_instr **x, ein_term *t, const ein_term *keep1,
                                     const ein_term *keep2) {
  int64_t axes[EIN_MAX];
  int na = 0;
  ein_term kept = {0};
  for (int i = 0; i < t->n; i++) {
    char l = t->labels[i];
    if (ein_find(keep1, l) < 0 && (!keep2 || ein_find(keep2, l) < 0))
      axes[na++] = i;
    else
      kept.labels[kept.n++] = l;
  }
  if (na) TRY(oplib_reduce(c, OPLIB_REDUCE_SUM, *x, na, axes, false, x));
  *t = kept;
  return NULL;
}

/* Stretches size-1 dims of x to the sizes the other operand has for the same label. */
static kiln_status ein_stretch(hlo_computation *c, hlo_instr **x, const ein_term *t, const hlo_instr *other,
                               const ein_term *ot) {
  int64_t dims[EIN_MAX];
  bool any = false;
  for (int i = 0; i < t->n; i++) {
    dims[i] = (*x)->shape.dims[i];
    int j = ein_find(ot, t->labels[i]);
    if (j >= 0 && dims[i] == 1 && other->shape.dims[j] != 1) {
      dims[i] = other->shape.dims[j];
      any = true;
    }
  }
  if (!any) return NULL;
  int64_t kept[EIN_MAX], map[EIN_MAX];
  int nk = 0;
  for (int i = 0; i < t->n; i++)
    if (dims[i] == (*x)->shape.dims[i]) {
      kept[nk] = dims[i];
      map[nk++] = i;
    }
  hlo_instr *squeezed;
  TRY(hlo_build_reshape(c, *x, nk, kept, &squeezed));
  return hlo_build_broadcast(c, squeezed, t->n, dims, map, x);
}

static kiln_status lower_Einsum(op_lower_ctx *ctx) {
  const graph_node *node = ctx->node;
  hlo_computation *c = ctx->comp;
  TRY(tf_check_inputs(ctx, 1, 2));
  const char *eq = tf_attr_string(node, "equation", NULL);
  if (!eq) return op_error(node, KILN_INVALID_ARGUMENT, "attribute equation is missing");
  hlo_instr *x[2];
  ein_term in[2], out;
  int n_in = ctx->n_inputs, max_el = 0;
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  const char *p = eq;
  for (int k = 0; k < n_in; k++) {
    TRY(tf_input(ctx, k, &x[k]));
    const char *comma = memchr(p, ',', lhs_len - (size_t)(p - eq));
    size_t len = comma ? (size_t)(comma - p) : lhs_len - (size_t)(p - eq);
    if ((k < n_in - 1) != (comma != NULL))
      return op_error(node, KILN_INVALID_ARGUMENT, "equation \"%s\" has the wrong number of inputs", eq);
    int el;
    TRY(ein_parse_term(node, p, len, x[k]->shape.rank, &in[k], &el));
    if (el > max_el) max_el = el;
    p = comma ? comma + 1 : p + len;
    for (int i = 0; i < in[k].n; i++)
      for (int j = i + 1; j < in[k].n; j++)
        if (in[k].labels[i] == in[k].labels[j])
          return op_error(node, KILN_UNIMPLEMENTED, "repeated label '%c' in one operand (diagonals)", in[k].labels[i]);
  }
  if (arrow) {
    int el;
    const char *o = arrow + 2;
    /* The output's ellipsis has the longest input ellipsis's length. */
    int explicit_n = 0;
    bool has_el = strstr(o, "...") != NULL;
    for (const char *q = o; *q; q++)
      if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) explicit_n++;
    TRY(ein_parse_term(node, o, strlen(o), explicit_n + (has_el ? max_el : 0), &out, &el));
  } else {
    /* Implicit output: ellipsis dims, then labels used once, alphabetically. */
    out.n = 0;
    for (int k = max_el - 1; k >= 0; k--) out.labels[out.n++] = (char)('0' + k);
    for (int ch = 'A'; ch <= 'z'; ch++) {
      if (ch > 'Z' && ch < 'a') continue;
      int count = 0;
      for (int k = 0; k < n_in; k++) count += ein_find(&in[k], (char)ch) >= 0;
      if (count == 1 && out.n < EIN_MAX) out.labels[out.n++] = (char)ch;
    }
  }
  for (int i = 0; i < out.n; i++) {
    bool found = false;
    for (int k = 0; k < n_in; k++) found |= ein_find(&in[k], out.labels[i]) >= 0;
    if (!found) return op_error(node, KILN_INVALID_ARGUMENT, "output label '%c' is in no input", out.labels[i]);
  }
  hlo_instr *r;
  ein_term rt;
  if (n_in == 1) {
    T(ein_reduce_unused(c, &x[0], &in[0], &out, NULL));
    r = x[0];
    rt = in[0];
  } else {
    T(ein_reduce_unused(c, &x[0], &in[0], &out, &in[1]));
    T(ein_reduce_unused(c, &x[1], &in[1], &out, &in[0]));
    for (int i = 0; i < in[0].n; i++) {
      int j = ein_find(&in[1], in[0].labels[i]);
      if (j < 0) continue;
      int64_t a = x[0]->shape.dims[i], b = x[1]->shape.dims[j];
      if (a != b && a != 1 && b != 1)
        return op_error(node, KILN_INVALID_ARGUMENT, "label '%c' has sizes %lld and %lld", in[0].labels[i],
                        (long long)a, (long long)b);
    }
    T(ein_stretch(c, &x[0], &in[0], x[1], &in[1]));
    T(ein_stretch(c, &x[1], &in[1], x[0], &in[0]));
    int64_t lb[EIN_MAX], rb[EIN_MAX], lc[EIN_MAX], rc[EIN_MAX];
    int nb = 0, nc = 0;
    rt.n = 0;
    for (int i = 0; i < in[0].n; i++) {
      char l = in[0].labels[i];
      int j = ein_find(&in[1], l);
      if (j < 0) continue;
      if (ein_find(&out, l) >= 0) {
        lb[nb] = i;
        rb[nb++] = j;
        rt.labels[rt.n++] = l;
      } else {
        lc[nc] = i;
        rc[nc++] = j;
      }
    }
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < in[k].n; i++)
        if (ein_find(&in[1 - k], in[k].labels[i]) < 0) rt.labels[rt.n++] = in[k].labels[i];
    hlo_dot_dnums dn = {.lhs_batch = {nb, lb}, .rhs_batch = {nb, rb}, .lhs_contracting = {nc, lc},
                        .rhs_contracting = {nc, rc}};
    T(hlo_build_dot(c, x[0], x[1], &dn, HLO_BUILD_DEFAULT_TYPE, &r));
  }
  if (rt.n != out.n) return op_error(node, KILN_INVALID_ARGUMENT, "equation \"%s\" is inconsistent", eq);
  int64_t perm[EIN_MAX];
  for (int i = 0; i < out.n; i++) perm[i] = ein_find(&rt, out.labels[i]);
  T(oplib_transpose(c, r, perm, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------------ table ---- */

#define OP(NAME, FN, MASK) {"tf." NAME, 0, MASK, lower_##FN, NULL}
#define B(i) (1u << (i))

static const op_def tf_reduce_defs[] = {
    OP("All", All, B(1)),
    OP("Any", Any, B(1)),
    OP("ArgMax", ArgMax, B(1)),
    OP("ArgMin", ArgMin, B(1)),
    OP("Cumprod", Cumprod, B(1)),
    OP("Cumsum", Cumsum, B(1)),
    OP("Einsum", Einsum, 0),
    OP("EuclideanNorm", EuclideanNorm, B(1)),
    OP("Max", Max, B(1)),
    OP("Mean", Mean, B(1)),
    OP("Min", Min, B(1)),
    OP("Prod", Prod, B(1)),
    OP("Sum", Sum, B(1)),
    {"tf.TopKV2", 0, B(1), lower_TopKV2, host_TopKV2},
};

const op_table tf_reduce_table = {"tf.reduce", (int)(sizeof tf_reduce_defs / sizeof tf_reduce_defs[0]),
                                  tf_reduce_defs};
