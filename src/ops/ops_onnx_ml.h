/* Helpers shared by the ai.onnx.ml op files (ops_onnx_ml.c, which defines them, and
 * ops_onnx_ml_trees.c); see ops_onnx_ml.c for the family's design. */
#ifndef KILN_OPS_OPS_ONNX_ML_H
#define KILN_OPS_OPS_ONNX_ML_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"
#include "ops/ops.h"

/* Every buffer a kernel mallocs is recorded here and freed once at the end, so error
 * paths need no cleanup of their own. */
typedef struct ml_mem {
  void **p;
  int n, cap;
} ml_mem;

void *ml_alloc(ml_mem *m, int64_t count, size_t elem); /* zeroed; aborts when out of memory */
void ml_free(ml_mem *m);

/* Runs a kernel body with scratch memory and frees it whatever the outcome. */
#define ML_KERNEL(name, body_fn)                 \
  static kiln_status name(op_host_ctx *ctx) {    \
    ml_mem m = {0};                              \
    kiln_status st = body_fn(ctx, &m);           \
    ml_free(&m);                                 \
    return st;                                   \
  }


/* Attribute lists, malloc'ed in m (*out NULL and *n 0 when absent; present may be
 * NULL). f64 reads FLOAT/INT lists and numeric tensors; f64_either prefers
 * NAME_as_tensor; i64 reads INT lists and integer tensors; str reads STRING lists and
 * string tensors (the bytes stay the graph's). A value of another kind is an error. */
kiln_status ml_attr_f64(const graph_node *node, ml_mem *m, const char *name, double **out, int64_t *n, bool *present);
kiln_status ml_attr_f64_either(const graph_node *node, ml_mem *m, const char *name, double **out, int64_t *n,
                               bool *present);
kiln_status ml_attr_i64(const graph_node *node, ml_mem *m, const char *name, int64_t **out, int64_t *n, bool *present);
kiln_status ml_attr_str(const graph_node *node, ml_mem *m, const char *name, graph_bytes **out, int64_t *n,
                        bool *present);
bool ml_bytes_is(const graph_bytes *b, const char *s);
/* An error naming attribute name unless n == want (or n == 0 when optional). */
kiln_status ml_check_len(const graph_node *node, const char *name, int64_t n, int64_t want, bool optional);

typedef enum ml_post { ML_NONE, ML_SOFTMAX, ML_LOGISTIC, ML_SOFTMAX_ZERO, ML_PROBIT } ml_post;
/* post_transform as a string or an INT enum (default NONE). */
kiln_status ml_parse_post(const graph_node *node, ml_post *out);
/* Applies the transform to one row of n scores in place. */
void ml_apply_post(ml_post pt, double *s, int64_t n);

/* Input 0 as an [N, F] matrix of doubles (a vector is one row). */
kiln_status ml_input_matrix(op_host_ctx *ctx, ml_mem *m, double **x, int64_t *rows, int64_t *cols);
/* Output i as a [rows, cols] tensor of dtype dt (skipped when the node lacks output i). */
kiln_status ml_write_scores(op_host_ctx *ctx, int i, const double *s, int64_t rows, int64_t cols, graph_dtype dt);

/* Class labels: classlabels_int64s / classlabels_strings (attribute names vary by op). */
typedef struct ml_labels {
  int64_t n;
  int64_t *ints;
  graph_bytes *strs; /* non-NULL for string labels */
} ml_labels;
kiln_status ml_read_labels(const graph_node *node, ml_mem *m, const char *ints_name, const char *strs_name,
                           ml_labels *l);
/* Output 0: labels[idx[r]] for each row (int64 or string; out of range: 0 or ""). */
kiln_status ml_write_labels(op_host_ctx *ctx, const ml_labels *l, const int64_t *idx, int64_t rows);
/* First index of the largest of n scores. */
int64_t ml_argmax(const double *s, int64_t n);

#endif
