/* ai.onnx.ml tree ensembles: TreeEnsembleClassifier and TreeEnsembleRegressor (ml opsets
 * 1 and 3; the *_as_tensor attributes of opset 3 give double thresholds and weights) and
 * TreeEnsemble (ml opset 5: interior nodes and leaves in separate lists, modes as a
 * uint8 tensor, BRANCH_MEMBER set tests). Host kernels, split from ops_onnx_ml.c (see
 * its header for the family's design). Each model is compiled per run into one node
 * array whose children are indices (ids resolved and checked first: a child that names
 * no node, a weight on a missing node or a target out of range is refused), then every
 * row walks every tree; a walk longer than the node count means a cycle and is refused.
 * Scores add up in double; the classifier's binary case (two classes, every weight on
 * one class id) scores [1 - s, s] (or [-s, s] before LOGISTIC/SOFTMAX*), as the spec
 * says. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"
#include "ops/ops_onnx_ml.h"

/* ============================================================ tree ensembles ==== */

enum { ML_LEQ, ML_LT, ML_GTE, ML_GT, ML_EQ, ML_NEQ, ML_MEMBER, ML_LEAF };
typedef enum ml_agg { ML_AVERAGE, ML_SUM, ML_MIN, ML_MAX } ml_agg;

typedef struct ml_tnode {
  int64_t feature;
  double value;
  int mode;
  bool nan_true;
  int64_t child[2];         /* [false, true] node index */
  int64_t member_off, member_n;
  int64_t w_head;           /* first weight of a leaf; -1 when none */
} ml_tnode;

typedef struct ml_forest {
  int64_t n_nodes;
  ml_tnode *nodes;
  int64_t n_trees;
  int64_t *roots;
  int64_t n_w;
  int64_t *w_next, *w_target;
  double *w_value;
  double *members;
  int64_t n_targets;
  ml_agg agg;
  double *base;     /* n_base values (0, 1 or n_targets) */
  int64_t n_base;
} ml_forest;

static int ml_parse_mode(const graph_bytes *b) {
  static const char *names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
  for (int i = 0; i < 8; i++)
    if (ml_bytes_is(b, names[i])) return i;
  return -1;
}

typedef struct ml_key {
  int64_t tree, node, index;
} ml_key;

static int ml_key_cmp(const void *pa, const void *pb) {
  const ml_key *a = pa, *b = pb;
  if (a->tree != b->tree) return a->tree < b->tree ? -1 : 1;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  return 0;
}

static int64_t ml_find_node(const ml_key *keys, int64_t n, int64_t tree, int64_t node) {
  ml_key k = {tree, node, 0};
  const ml_key *hit = bsearch(&k, keys, (size_t)n, sizeof *keys, ml_key_cmp);
  return hit ? hit->index : -1;
}

/* The forest of TreeEnsembleClassifier/Regressor (ml opsets 1..3): nodes named by
 * (tree id, node id), weights on leaves by the same pair. wp is "class" or "target". */
static kiln_status ml_build_forest_v1(const graph_node *node, ml_mem *m, const char *wp, int64_t n_targets,
                                      ml_forest *f) {
  int64_t *tree, *nid, *feat, *tid, *fid, *mvt, n, n2;
  double *val;
  graph_bytes *modes;
  bool present;
  memset(f, 0, sizeof *f);
  TRY(ml_attr_i64(node, m, "nodes_treeids", &tree, &n, NULL));
  if (n == 0) return op_error(node, KILN_INVALID_ARGUMENT, "attribute nodes_treeids is missing or empty");
  TRY(ml_attr_i64(node, m, "nodes_nodeids", &nid, &n2, NULL));
  TRY(ml_check_len(node, "nodes_nodeids", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_featureids", &feat, &n2, NULL));
  TRY(ml_check_len(node, "nodes_featureids", n2, n, false));
  TRY(ml_attr_str(node, m, "nodes_modes", &modes, &n2, NULL));
  TRY(ml_check_len(node, "nodes_modes", n2, n, false));
  TRY(ml_attr_f64_either(node, m, "nodes_values", &val, &n2, NULL));
  TRY(ml_check_len(node, "nodes_values", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_truenodeids", &tid, &n2, NULL));
  TRY(ml_check_len(node, "nodes_truenodeids", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_falsenodeids", &fid, &n2, NULL));
  TRY(ml_check_len(node, "nodes_falsenodeids", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_missing_value_tracks_true", &mvt, &n2, NULL));
  TRY(ml_check_len(node, "nodes_missing_value_tracks_true", n2, n, true));

  ml_key *keys = ml_alloc(m, n, sizeof *keys);
  for (int64_t i = 0; i < n; i++) keys[i] = (ml_key){tree[i], nid[i], i};
  qsort(keys, (size_t)n, sizeof *keys, ml_key_cmp);
  for (int64_t i = 1; i < n; i++)
    if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node)
      return op_error(node, KILN_INVALID_ARGUMENT, "node id %lld appears twice in tree %lld", (long long)keys[i].node,
                      (long long)keys[i].tree);
  /* Roots: the first node (in attribute order) of each tree. */
  f->roots = ml_alloc(m, n, sizeof(int64_t));
  for (int64_t i = 0; i < n;) {
    int64_t j = i, root = keys[i].index;
    while (j < n && keys[j].tree == keys[i].tree) {
      if (keys[j].index < root) root = keys[j].index;
      j++;
    }
    f->roots[f->n_trees++] = root;
    i = j;
  }
  f->n_nodes = n;
  f->nodes = ml_alloc(m, n, sizeof *f->nodes);
  for (int64_t i = 0; i < n; i++) {
    ml_tnode *t = &f->nodes[i];
    t->mode = ml_parse_mode(&modes[i]);
    if (t->mode < 0 || t->mode == ML_MEMBER)
      return op_error(node, KILN_INVALID_ARGUMENT, "nodes_modes[%lld] '%.*s' is not a mode of this op", (long long)i,
                      (int)modes[i].len, modes[i].data);
    t->feature = feat[i];
    t->value = val[i];
    t->nan_true = mvt && mvt[i] != 0;
    t->w_head = -1;
    if (t->mode == ML_LEAF) continue;
    if (feat[i] < 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "nodes_featureids[%lld] is negative", (long long)i);
    t->child[1] = ml_find_node(keys, n, tree[i], tid[i]);
    t->child[0] = ml_find_node(keys, n, tree[i], fid[i]);
    if (t->child[0] < 0 || t->child[1] < 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "node %lld of tree %lld: child id %lld is not a node of that tree",
                      (long long)nid[i], (long long)tree[i], (long long)(t->child[1] < 0 ? tid[i] : fid[i]));
  }
  char nm[64];
  int64_t *wt, *wn, *wi, nw;
  double *wv;
  snprintf(nm, sizeof nm, "%s_treeids", wp);
  TRY(ml_attr_i64(node, m, nm, &wt, &nw, NULL));
  snprintf(nm, sizeof nm, "%s_nodeids", wp);
  TRY(ml_attr_i64(node, m, nm, &wn, &n2, NULL));
  TRY(ml_check_len(node, nm, n2, nw, false));
  snprintf(nm, sizeof nm, "%s_ids", wp);
  TRY(ml_attr_i64(node, m, nm, &wi, &n2, NULL));
  TRY(ml_check_len(node, nm, n2, nw, false));
  snprintf(nm, sizeof nm, "%s_weights", wp);
  TRY(ml_attr_f64_either(node, m, nm, &wv, &n2, &present));
  TRY(ml_check_len(node, nm, n2, nw, false));
  f->n_w = nw;
  f->w_next = ml_alloc(m, nw, sizeof(int64_t));
  f->w_target = wi;
  f->w_value = wv;
  f->n_targets = n_targets;
  /* Chain each leaf's weights, keeping their attribute order. */
  for (int64_t w = nw - 1; w >= 0; w--) {
    int64_t k = ml_find_node(keys, n, wt[w], wn[w]);
    if (k < 0)
      return op_error(node, KILN_INVALID_ARGUMENT, "%s weight %lld names node %lld of tree %lld, which does not exist",
                      wp, (long long)w, (long long)wn[w], (long long)wt[w]);
    if (wi[w] < 0 || wi[w] >= n_targets)
      return op_error(node, KILN_INVALID_ARGUMENT, "%s_ids[%lld] = %lld is outside [0, %lld)", wp, (long long)w,
                      (long long)wi[w], (long long)n_targets);
    f->w_next[w] = f->nodes[k].w_head;
    f->nodes[k].w_head = w;
  }
  TRY(ml_attr_f64_either(node, m, "base_values", &f->base, &f->n_base, NULL));
  if (f->n_base != 0 && f->n_base != n_targets && f->n_base != 1)
    return op_error(node, KILN_INVALID_ARGUMENT, "base_values has %lld entries, expected %lld", (long long)f->n_base,
                    (long long)n_targets);
  return NULL;
}

/* The forest of TreeEnsemble (ml opset 5): interior nodes by position, leaves by
 * position in leaf_*; leaves become extra nodes after the interior ones. */
static kiln_status ml_build_forest_v5(const graph_node *node, ml_mem *m, ml_forest *f) {
  int64_t *feat, *tid, *tleaf, *fid, *fleaf, *mvt, *roots, *ltarget, *modes, n, n2, nl, nr, nmem;
  double *splits, *lw, *members;
  memset(f, 0, sizeof *f);
  TRY(ml_attr_i64(node, m, "nodes_featureids", &feat, &n, NULL));
  TRY(ml_attr_f64(node, m, "nodes_splits", &splits, &n2, NULL));
  TRY(ml_check_len(node, "nodes_splits", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_modes", &modes, &n2, NULL));
  TRY(ml_check_len(node, "nodes_modes", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_truenodeids", &tid, &n2, NULL));
  TRY(ml_check_len(node, "nodes_truenodeids", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_trueleafs", &tleaf, &n2, NULL));
  TRY(ml_check_len(node, "nodes_trueleafs", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_falsenodeids", &fid, &n2, NULL));
  TRY(ml_check_len(node, "nodes_falsenodeids", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_falseleafs", &fleaf, &n2, NULL));
  TRY(ml_check_len(node, "nodes_falseleafs", n2, n, false));
  TRY(ml_attr_i64(node, m, "nodes_missing_value_tracks_true", &mvt, &n2, NULL));
  TRY(ml_check_len(node, "nodes_missing_value_tracks_true", n2, n, true));
  TRY(ml_attr_i64(node, m, "tree_roots", &roots, &nr, NULL));
  if (nr == 0) return op_error(node, KILN_INVALID_ARGUMENT, "attribute tree_roots is missing or empty");
  TRY(ml_attr_i64(node, m, "leaf_targetids", &ltarget, &nl, NULL));
  TRY(ml_attr_f64(node, m, "leaf_weights", &lw, &n2, NULL));
  TRY(ml_check_len(node, "leaf_weights", n2, nl, false));
  TRY(ml_attr_f64(node, m, "membership_values", &members, &nmem, NULL));
  f->n_targets = graph_node_attr_int_or(node, "n_targets", -1);
  if (f->n_targets <= 0) return op_error(node, KILN_INVALID_ARGUMENT, "attribute n_targets must be positive");
  int64_t agg = graph_node_attr_int_or(node, "aggregate_function", 1);
  if (agg < 0 || agg > 3) return op_error(node, KILN_INVALID_ARGUMENT, "aggregate_function %lld is not 0..3", (long long)agg);
  f->agg = (ml_agg)agg;
  f->n_nodes = n + nl;
  f->nodes = ml_alloc(m, f->n_nodes, sizeof *f->nodes);
  f->members = members;
  int64_t mpos = 0;
  for (int64_t i = 0; i < n; i++) {
    ml_tnode *t = &f->nodes[i];
    if (modes[i] < 0 || modes[i] > 6)
      return op_error(node, KILN_INVALID_ARGUMENT, "nodes_modes[%lld] = %lld is not 0..6", (long long)i,
                      (long long)modes[i]);
    t->mode = (int)modes[i];
    t->feature = feat[i];
    if (feat[i] < 0) return op_error(node, KILN_INVALID_ARGUMENT, "nodes_featureids[%lld] is negative", (long long)i);
    t->value = splits[i];
    t->nan_true = mvt && mvt[i] != 0;
    t->w_head = -1;
    int64_t ids[2] = {fid[i], tid[i]}, leafs[2] = {fleaf[i], tleaf[i]};
    for (int b = 0; b < 2; b++) {
      int64_t lim = leafs[b] ? nl : n;
      if (ids[b] < 0 || ids[b] >= lim)
        return op_error(node, KILN_INVALID_ARGUMENT, "nodes_%snodeids[%lld] = %lld is outside [0, %lld) (%s)",
                        b ? "true" : "false", (long long)i, (long long)ids[b], (long long)lim,
                        leafs[b] ? "a leaf index" : "a node index");
      t->child[b] = leafs[b] ? n + ids[b] : ids[b];
    }
    if (t->mode == ML_MEMBER) {
      t->member_off = mpos;
      while (mpos < nmem && !isnan(members[mpos])) mpos++;
      t->member_n = mpos - t->member_off;
      if (nmem == 0)
        return op_error(node, KILN_INVALID_ARGUMENT, "node %lld is BRANCH_MEMBER but membership_values is empty",
                        (long long)i);
      if (mpos < nmem) mpos++; /* the NaN delimiter */
    }
  }
  f->n_w = nl;
  f->w_next = ml_alloc(m, nl, sizeof(int64_t));
  f->w_target = ltarget;
  f->w_value = lw;
  for (int64_t l = 0; l < nl; l++) {
    if (ltarget[l] < 0 || ltarget[l] >= f->n_targets)
      return op_error(node, KILN_INVALID_ARGUMENT, "leaf_targetids[%lld] = %lld is outside [0, %lld)", (long long)l,
                      (long long)ltarget[l], (long long)f->n_targets);
    ml_tnode *t = &f->nodes[n + l];
    t->mode = ML_LEAF;
    t->w_head = l;
    f->w_next[l] = -1;
  }
  f->n_trees = nr;
  f->roots = roots;
  for (int64_t i = 0; i < nr; i++)
    if (roots[i] < 0 || roots[i] >= n)
      return op_error(node, KILN_INVALID_ARGUMENT, "tree_roots[%lld] = %lld is outside [0, %lld)", (long long)i,
                      (long long)roots[i], (long long)n);
  return NULL;
}

static bool ml_branch(const ml_forest *f, const ml_tnode *t, double x) {
  if (isnan(x)) return t->nan_true;
  switch (t->mode) {
    case ML_LEQ: return x <= t->value;
    case ML_LT: return x < t->value;
    case ML_GTE: return x >= t->value;
    case ML_GT: return x > t->value;
    case ML_EQ: return x == t->value;
    case ML_NEQ: return x != t->value;
    case ML_MEMBER:
      for (int64_t k = 0; k < t->member_n; k++)
        if (f->members[t->member_off + k] == x) return true;
      return false;
  }
  return false;
}

/* Raw (aggregated, base-added, untransformed) scores [rows, n_targets]. */
static kiln_status ml_forest_run(const graph_node *node, ml_mem *m, const ml_forest *f, const double *x,
                                 int64_t rows, int64_t cols, double **out) {
  for (int64_t i = 0; i < f->n_nodes; i++)
    if (f->nodes[i].mode != ML_LEAF && f->nodes[i].feature >= cols)
      return op_error(node, KILN_INVALID_ARGUMENT, "tree node %lld reads feature %lld, but X has %lld features",
                      (long long)i, (long long)f->nodes[i].feature, (long long)cols);
  int64_t T = f->n_targets;
  double *s = ml_alloc(m, rows * T, sizeof(double));
  bool *has = ml_alloc(m, T, sizeof(bool));
  for (int64_t r = 0; r < rows; r++) {
    const double *row = x + r * cols;
    double *sr = s + r * T;
    memset(has, 0, (size_t)T);
    for (int64_t k = 0; k < f->n_trees; k++) {
      int64_t idx = f->roots[k], steps = 0;
      while (f->nodes[idx].mode != ML_LEAF) {
        if (++steps > f->n_nodes)
          return op_error(node, KILN_INVALID_ARGUMENT, "tree %lld does not reach a leaf: its nodes form a cycle",
                          (long long)k);
        const ml_tnode *t = &f->nodes[idx];
        idx = t->child[ml_branch(f, t, row[t->feature])];
      }
      for (int64_t w = f->nodes[idx].w_head; w >= 0; w = f->w_next[w]) {
        int64_t tg = f->w_target[w];
        double v = f->w_value[w];
        if (f->agg == ML_MIN) sr[tg] = has[tg] ? fmin(sr[tg], v) : v;
        else if (f->agg == ML_MAX) sr[tg] = has[tg] ? fmax(sr[tg], v) : v;
        else sr[tg] += v;
        has[tg] = true;
      }
    }
    for (int64_t tg = 0; tg < T; tg++) {
      if (f->agg == ML_AVERAGE && f->n_trees) sr[tg] /= (double)f->n_trees;
      if (f->n_base) sr[tg] += f->base[f->n_base == 1 ? 0 : tg];
    }
  }
  *out = s;
  return NULL;
}

static kiln_status ml_parse_agg(const graph_node *node, ml_agg *out) {
  static const char *names[] = {"AVERAGE", "SUM", "MIN", "MAX"};
  const char *s = onnx_attr_string(node, "aggregate_function", "SUM");
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (ml_agg)i;
      return NULL;
    }
  return op_error(node, KILN_INVALID_ARGUMENT, "aggregate_function '%s' is not AVERAGE, SUM, MIN or MAX", s);
}

static kiln_status tree_regressor(op_host_ctx *ctx, ml_mem *m) {
  double *x, *s;
  int64_t rows, cols;
  ml_forest f;
  ml_post pt;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  int64_t nt = graph_node_attr_int_or(ctx->node, "n_targets", 1);
  if (nt <= 0) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute n_targets must be positive");
  TRY(ml_build_forest_v1(ctx->node, m, "target", nt, &f));
  TRY(ml_parse_agg(ctx->node, &f.agg));
  TRY(ml_parse_post(ctx->node, &pt));
  TRY(ml_forest_run(ctx->node, m, &f, x, rows, cols, &s));
  for (int64_t r = 0; r < rows; r++) ml_apply_post(pt, s + r * nt, nt);
  return ml_write_scores(ctx, 0, s, rows, nt, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_tree_regressor, tree_regressor)

static kiln_status tree_ensemble(op_host_ctx *ctx, ml_mem *m) {
  double *x, *s;
  int64_t rows, cols;
  ml_forest f;
  ml_post pt;
  graph_tensor *in = onnx_host_input(ctx, 0);
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_build_forest_v5(ctx->node, m, &f));
  TRY(ml_parse_post(ctx->node, &pt));
  TRY(ml_forest_run(ctx->node, m, &f, x, rows, cols, &s));
  for (int64_t r = 0; r < rows; r++) ml_apply_post(pt, s + r * f.n_targets, f.n_targets);
  graph_dtype dt = in->dtype == GRAPH_DT_DOUBLE || in->dtype == GRAPH_DT_HALF ? in->dtype : GRAPH_DT_FLOAT;
  return ml_write_scores(ctx, 0, s, rows, f.n_targets, dt);
}
ML_KERNEL(host_tree_ensemble, tree_ensemble)

static kiln_status tree_classifier(op_host_ctx *ctx, ml_mem *m) {
  double *x, *s;
  int64_t rows, cols;
  ml_forest f;
  ml_post pt;
  ml_labels lab;
  TRY(ml_input_matrix(ctx, m, &x, &rows, &cols));
  TRY(ml_read_labels(ctx->node, m, "classlabels_int64s", "classlabels_strings", &lab));
  int64_t C = lab.n;
  if (C < 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "classlabels_int64s / classlabels_strings must name at least 2 classes (got %lld)", (long long)C);
  TRY(ml_build_forest_v1(ctx->node, m, "class", C, &f));
  f.agg = ML_SUM;
  TRY(ml_parse_post(ctx->node, &pt));
  TRY(ml_forest_run(ctx->node, m, &f, x, rows, cols, &s));
  /* Binary case: every weight votes for one class id of two. That column is the score
   * of class 1; class 0 gets its complement (1 - s before NONE/PROBIT, -s before the
   * transforms that map -s to the complement). */
  bool binary = C == 2 && f.n_w > 0;
  for (int64_t w = 1; w < f.n_w && binary; w++) binary = f.w_target[w] == f.w_target[0];
  int64_t *label = ml_alloc(m, rows, sizeof(int64_t));
  for (int64_t r = 0; r < rows; r++) {
    double *sr = s + r * C;
    if (binary) {
      double v = sr[f.w_target[0]];
      sr[1] = v;
      sr[0] = pt == ML_NONE || pt == ML_PROBIT ? 1 - v : -v;
    }
    ml_apply_post(pt, sr, C);
    label[r] = ml_argmax(sr, C);
  }
  TRY(ml_write_labels(ctx, &lab, label, rows));
  return ml_write_scores(ctx, 1, s, rows, C, GRAPH_DT_FLOAT);
}
ML_KERNEL(host_tree_classifier, tree_classifier)

/* -------------------------------------------------------------------- table ---- */

static const op_def onnx_ml_tree_defs[] = {
    {"ai.onnx.ml.TreeEnsemble", 0, 0, NULL, host_tree_ensemble},
    {"ai.onnx.ml.TreeEnsembleClassifier", OP_STRING, 0, NULL, host_tree_classifier},
    {"ai.onnx.ml.TreeEnsembleRegressor", 0, 0, NULL, host_tree_regressor},
};

const op_table onnx_ml_tree_ops = {"ai.onnx.ml.trees",
                                   (int)(sizeof onnx_ml_tree_defs / sizeof onnx_ml_tree_defs[0]), onnx_ml_tree_defs};
