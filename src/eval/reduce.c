/* Evaluator kernels for reductions: reduce, reduce-window, select-and-scatter, and
 * batch-norm-inference (a per-feature affine map, kept here with the other ops that
 * combine values along dimensions).
 *
 * Reduction order is part of the result for floats, so it is fixed and documented:
 * every output element starts from its init value and folds in the input elements in
 * row-major order of the reduced dimensions (reduce) or of the window positions
 * (reduce-window; positions in padding or in base-dilation holes are skipped, as XLA's
 * evaluator and CPU backend do; StableHLO's "pad with init, then reduce" gives the same
 * whenever init is an identity of the reducer, the only case models use). The fast path
 * (a recognised single-op reducer applied directly through eval_reducer_apply) and the
 * generic path (one interpreter call per element) visit elements in exactly this order,
 * so they give bit-identical results.
 *
 * Window arithmetic on attribute values (strides, pads, dilations from a user file) is
 * checked for overflow once per instruction; after that every index computed inside the
 * loops is known to fit in int64. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "eval/eval_internal.h"

static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static bool sub_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_sub_overflow(a, b, r); }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* ---- results ---- */

/* The i-th result shape of a variadic op: the tuple element, or the array itself. */
static const hlo_shape *result_shape(const hlo_instr *ins, int i) {
  return ins->shape.type == HLO_TUPLE ? &ins->shape.elems[i] : &ins->shape;
}

static kiln_status check_result_arity(const hlo_instr *ins, int n) {
  bool tuple = ins->shape.type == HLO_TUPLE;
  if (tuple ? ins->shape.n_elems != n : n != 1)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape does not hold %d value(s)", n);
  for (int i = 0; i < n; i++)
    if (!hlo_type_is_array(result_shape(ins, i)->type))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result %d is not an array", i);
  return NULL;
}

/* Checks the inputs/init values of a variadic reduction: inputs of equal dims, each init
 * a scalar of its input's element type, each result of that element type too. */
static kiln_status check_variadic(const hlo_instr *ins, hlo_literal *const *inputs, hlo_literal *const *inits,
                                  int n) {
  TRY(check_result_arity(ins, n));
  for (int i = 0; i < n; i++) {
    const hlo_shape *s = &inputs[i]->shape;
    if (!hlo_type_is_array(s->type) || !shape_same_dims(s, &inputs[0]->shape))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "input %d is not an array with the dimensions of input 0", i);
    if (!hlo_type_is_array(inits[i]->shape.type) || inits[i]->n != 1 || inits[i]->shape.type != s->type)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "init value %d is not a %s scalar", i, hlo_type_name(s->type));
    if (result_shape(ins, i)->type != s->type)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result %d has element type %s, input %d has %s", i,
                      hlo_type_name(result_shape(ins, i)->type), i, hlo_type_name(s->type));
  }
  return NULL;
}

static void fill_with_element(hlo_literal *l, const void *value) {
  size_t esize = hlo_type_size(l->shape.type);
  if (l->n == 0) return;
  char *d = (char *)l->data;
  memcpy(d, value, esize);
  size_t done = esize, total = (size_t)l->n * esize;
  while (done < total) {
    size_t chunk = done < total - done ? done : total - done;
    memcpy(d + done, d, chunk);
    done += chunk;
  }
}

/* Creates the n results (shapes from ins) filled with their init values. */
static kiln_status create_results(const hlo_instr *ins, int n, hlo_literal *const *inits, hlo_literal **res) {
  for (int i = 0; i < n; i++) {
    kiln_status st = literal_create(result_shape(ins, i), &res[i]);
    if (st) {
      for (int j = 0; j < i; j++) {
        literal_free(res[j]);
        res[j] = NULL;
      }
      return st;
    }
    fill_with_element(res[i], inits[i]->data);
  }
  return NULL;
}

static void free_results(hlo_literal **res, int n) {
  for (int i = 0; i < n; i++) literal_free(res[i]);
}

/* Wraps results as the instruction's shape says: a tuple, or the single array. Takes
 * ownership of res[0..n). */
static hlo_literal *pack_results(const hlo_instr *ins, int n, hlo_literal **res) {
  return ins->shape.type == HLO_TUPLE ? literal_tuple(n, res) : res[0];
}

/* ---- the generic path: one interpreter call per folded element ---- */

typedef struct folder {
  eval_ctx *ctx;
  const hlo_instr *ins;
  const hlo_computation *fn;
  int n;
  hlo_literal **args; /* n accumulator scalars, then n input scalars; reused per call */
} folder;

static void folder_free(folder *f) {
  if (f->args)
    for (int i = 0; i < 2 * f->n; i++) literal_free(f->args[i]);
  free(f->args);
  f->args = NULL;
}

static kiln_status folder_init(folder *f, eval_ctx *ctx, const hlo_instr *ins, const hlo_computation *fn, int n,
                               hlo_literal *const *inputs) {
  f->ctx = ctx;
  f->ins = ins;
  f->fn = fn;
  f->n = n;
  f->args = calloc((size_t)(2 * n), sizeof *f->args);
  if (!f->args) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < 2 * n; i++) {
    hlo_shape s = shape_scalar(inputs[i % n]->shape.type);
    kiln_status st = literal_create(&s, &f->args[i]);
    if (st) {
      folder_free(f);
      return st;
    }
  }
  return NULL;
}

/* Copies the computation's result (a scalar when n == 1, else a tuple of n scalars) into
 * element di of dsts[0..n). */
static kiln_status store_call_result(const hlo_instr *ins, const hlo_computation *fn, const hlo_literal *r, int n,
                                     hlo_literal **dsts, int64_t di) {
  if (r && r->shape.type == HLO_TUPLE && r->shape.n_elems == n) {
    for (int i = 0; i < n; i++) {
      const hlo_literal *e = r->tuple[i];
      if (e->shape.type != dsts[i]->shape.type || e->n != 1)
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "%s returned a %s value where a %s scalar was expected", fn->name,
                        hlo_type_name(e->shape.type), hlo_type_name(dsts[i]->shape.type));
      eval_copy_element(dsts[i]->data, di, e->data, 0, hlo_type_size(e->shape.type));
    }
    return NULL;
  }
  if (r && n == 1 && r->shape.type == dsts[0]->shape.type && r->n == 1) {
    eval_copy_element(dsts[0]->data, di, r->data, 0, hlo_type_size(r->shape.type));
    return NULL;
  }
  return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "%s did not return %d scalar(s) of the reduced type(s)", fn->name, n);
}

/* accs[*][ai] = fn(accs[0..n)[ai], inputs[0..n)[ii]) */
static kiln_status folder_step(folder *f, hlo_literal **accs, int64_t ai, hlo_literal *const *inputs, int64_t ii) {
  for (int i = 0; i < f->n; i++) {
    size_t esize = hlo_type_size(accs[i]->shape.type);
    eval_copy_element(f->args[i]->data, 0, accs[i]->data, ai, esize);
    eval_copy_element(f->args[f->n + i]->data, 0, inputs[i]->data, ii, esize);
  }
  hlo_literal *r = NULL;
  TRY(eval_call(f->ctx, f->fn, f->args, 2 * f->n, &r));
  kiln_status st = store_call_result(f->ins, f->fn, r, f->n, accs, ai);
  literal_free(r);
  return st;
}

/* The fast-path reducer kind, or GENERIC when the computation must be called. */
static eval_reducer_kind pick_reducer(const hlo_instr *ins, int n) {
  if (n != 1 || ins->n_called < 1) return EVAL_REDUCER_GENERIC;
  return eval_reducer_classify(ins->called[0]);
}

/* ---- reduce ---- */

kiln_status eval_reduce(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  if (ins->n_operands < 2 || ins->n_operands % 2)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected inputs and as many init values, got %d operands",
                    ins->n_operands);
  if (ins->n_called < 1 || !ins->called[0]) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "missing to_apply");
  int n = ins->n_operands / 2;
  hlo_literal *const *inputs = ops, *const *inits = ops + n;
  TRY(check_variadic(ins, inputs, inits, n));
  const hlo_shape *is = &inputs[0]->shape;
  int rank = is->rank;
  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->dimensions.n; i++) {
    int64_t d = ins->dimensions.v[i];
    if (d < 0 || d >= rank || reduced[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "reduce dimension %lld is out of range or repeated", (long long)d);
    reduced[d] = true;
  }
  /* Output strides seen from each input dimension: 0 along reduced dimensions. */
  const hlo_shape *rs = result_shape(ins, 0);
  int64_t rstrides[HLO_MAX_RANK], ostride[HLO_MAX_RANK];
  shape_strides(rs, rstrides);
  int kept = 0;
  for (int d = 0; d < rank; d++) {
    if (reduced[d]) {
      ostride[d] = 0;
      continue;
    }
    if (kept >= rs->rank || rs->dims[kept] != is->dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result dimensions do not match the kept input dimensions");
    ostride[d] = rstrides[kept++];
  }
  if (kept != rs->rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result rank %d, expected %d", rs->rank, kept);
  for (int i = 1; i < n; i++)
    if (!shape_same_dims(result_shape(ins, i), rs))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result %d dimensions differ from result 0", i);

  hlo_literal **res = calloc((size_t)n, sizeof *res);
  if (!res) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = create_results(ins, n, inits, res);
  if (st) {
    free(res);
    return st;
  }
  eval_reducer_kind kind = pick_reducer(ins, n);
  folder f = {0};
  if (kind == EVAL_REDUCER_GENERIC) st = folder_init(&f, ctx, ins, ins->called[0], n, inputs);

  /* Walk the input in row-major order, folding each element into its output element.
     For one output element this visits its inputs in row-major order of the reduced
     dimensions: the documented order. */
  if (!st && inputs[0]->n > 0) {
    hlo_type t = is->type;
    int64_t idx[HLO_MAX_RANK] = {0};
    int64_t o = 0;
    for (int64_t i = 0;; i++) {
      if (kind != EVAL_REDUCER_GENERIC) {
        eval_reducer_apply(kind, t, res[0]->data, o, inputs[0]->data, i);
      } else {
        st = folder_step(&f, res, o, inputs, i);
        if (st) break;
      }
      int d = rank - 1;
      for (; d >= 0; d--) {
        o += ostride[d];
        if (++idx[d] < is->dims[d]) break;
        o -= ostride[d] * is->dims[d];
        idx[d] = 0;
      }
      if (d < 0) break;
    }
  }
  folder_free(&f);
  if (st) {
    free_results(res, n);
    free(res);
    return st;
  }
  *out = pack_results(ins, n, res);
  free(res);
  return NULL;
}

/* ---- windows (reduce-window, select-and-scatter) ---- */

/* For each window dimension, the input indices that one window position covers, in
 * window order (increasing window offset k). Position p = o*stride + k*window_dilation -
 * pad_lo in the padded, base-dilated input; it is an input element when
 * 0 <= p <= (dim-1)*base_dilation and p is a multiple of base_dilation. */
typedef struct window_plan {
  int rank;
  const hlo_window_dim *w;
  int64_t in_dims[HLO_MAX_RANK], in_strides[HLO_MAX_RANK];
  int64_t *lists[HLO_MAX_RANK];
  int64_t counts[HLO_MAX_RANK];
  int64_t *storage;
} window_plan;

static void window_plan_free(window_plan *wp) {
  free(wp->storage);
  wp->storage = NULL;
}

/* Validates the window against the input and iteration-space shapes and checks that
 * every position computed later fits in int64. */
static kiln_status window_plan_init(const hlo_instr *ins, const hlo_shape *in, const hlo_shape *iter,
                                    window_plan *wp) {
  memset(wp, 0, sizeof *wp);
  int rank = in->rank;
  if (ins->window.rank != rank || iter->rank != rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "window has %d dimensions for an input of rank %d", ins->window.rank,
                    rank);
  wp->rank = rank;
  wp->w = ins->window.dims;
  shape_strides(in, wp->in_strides);
  int64_t total = 0;
  for (int d = 0; d < rank; d++) {
    const hlo_window_dim *w = &wp->w[d];
    int64_t in_dim = in->dims[d], out_dim = iter->dims[d];
    wp->in_dims[d] = in_dim;
    if (w->size < 0 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "window dimension %d has a non-positive size, stride or dilation", d);
    if (in_dim > 0 && out_dim > 0 && w->size > 0) {
      int64_t base_min, base_max, pmax, t;
      bool ok = sub_ok(0, w->pad_lo, &base_min) && mul_ok(out_dim - 1, w->stride, &t) &&
                sub_ok(t, w->pad_lo, &base_max) && mul_ok(in_dim - 1, w->lhs_dilate, &pmax) &&
                sub_ok(pmax, base_min, &t) && mul_ok(w->size - 1, w->rhs_dilate, &t) && add_ok(base_max, t, &t);
      if (!ok) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "window dimension %d: positions overflow int64", d);
    }
    total += in_dim < w->size ? in_dim : w->size; /* a window covers each input index at most once */
  }
  wp->storage = malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
  if (!wp->storage) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  int64_t at = 0;
  for (int d = 0; d < rank; d++) {
    wp->lists[d] = wp->storage + at;
    at += wp->in_dims[d] < wp->w[d].size ? wp->in_dims[d] : wp->w[d].size;
  }
  return NULL;
}

static int64_t window_dim_inputs(const hlo_window_dim *w, int64_t in_dim, int64_t o, int64_t *list) {
  if (in_dim == 0 || w->size == 0) return 0;
  int64_t base = o * w->stride - w->pad_lo;
  int64_t pmax = (in_dim - 1) * w->lhs_dilate;
  int64_t rd = w->rhs_dilate, ld = w->lhs_dilate;
  if (base > pmax) return 0;
  int64_t kmin = base >= 0 ? 0 : (-base - 1) / rd + 1;
  int64_t kmax = (pmax - base) / rd;
  if (kmax > w->size - 1) kmax = w->size - 1;
  if (kmin > kmax) return 0;
  int64_t n = 0;
  if (ld == 1) {
    /* every position in range is an element: walk k directly when that is short */
    if (kmax - kmin < in_dim) {
      for (int64_t k = kmin; k <= kmax; k++) list[n++] = base + k * rd;
      return n;
    }
  } else if (kmax - kmin < in_dim) {
    for (int64_t k = kmin; k <= kmax; k++) {
      int64_t p = base + k * rd;
      if (p % ld == 0) list[n++] = p / ld;
    }
    return n;
  }
  /* long window range: walk the input indices instead (both go in increasing k order) */
  for (int64_t i = 0; i < in_dim; i++) {
    int64_t delta = i * ld - base;
    if (delta < 0 || delta % rd != 0) continue;
    if (delta / rd > kmax) break;
    if (delta / rd >= kmin) list[n++] = i;
  }
  return n;
}

/* Fills lists for the window at iteration index oidx; returns the number of covered
 * input elements. */
static int64_t window_plan_at(window_plan *wp, const int64_t *oidx) {
  int64_t total = 1;
  for (int d = 0; d < wp->rank; d++) {
    wp->counts[d] = window_dim_inputs(&wp->w[d], wp->in_dims[d], oidx[d], wp->lists[d]);
    total *= wp->counts[d];
    if (!total) return 0;
  }
  return total;
}

/* Iterates the covered input elements of the current window in row-major window order:
 * call with *first = true, then while it returns true use *lin. */
typedef struct window_cursor {
  int64_t j[HLO_MAX_RANK];
  int64_t lin;
  bool started;
} window_cursor;

static bool window_next(const window_plan *wp, window_cursor *c) {
  if (!c->started) {
    c->started = true;
    c->lin = 0;
    for (int d = 0; d < wp->rank; d++) {
      c->j[d] = 0;
      c->lin += wp->lists[d][0] * wp->in_strides[d];
    }
    return true;
  }
  for (int d = wp->rank - 1; d >= 0; d--) {
    c->lin -= wp->lists[d][c->j[d]] * wp->in_strides[d];
    if (++c->j[d] < wp->counts[d]) {
      c->lin += wp->lists[d][c->j[d]] * wp->in_strides[d];
      return true;
    }
    c->j[d] = 0;
    c->lin += wp->lists[d][0] * wp->in_strides[d];
  }
  return false;
}

kiln_status eval_reduce_window(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  if (ins->n_operands < 2 || ins->n_operands % 2)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected inputs and as many init values, got %d operands",
                    ins->n_operands);
  if (ins->n_called < 1 || !ins->called[0]) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "missing to_apply");
  int n = ins->n_operands / 2;
  hlo_literal *const *inputs = ops, *const *inits = ops + n;
  TRY(check_variadic(ins, inputs, inits, n));
  const hlo_shape *rs = result_shape(ins, 0);
  for (int i = 1; i < n; i++)
    if (!shape_same_dims(result_shape(ins, i), rs))
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result %d dimensions differ from result 0", i);
  window_plan wp;
  TRY(window_plan_init(ins, &inputs[0]->shape, rs, &wp));

  hlo_literal **res = calloc((size_t)n, sizeof *res);
  if (!res) {
    window_plan_free(&wp);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  kiln_status st = create_results(ins, n, inits, res);
  eval_reducer_kind kind = pick_reducer(ins, n);
  folder f = {0};
  if (!st && kind == EVAL_REDUCER_GENERIC) st = folder_init(&f, ctx, ins, ins->called[0], n, inputs);
  if (!st && res[0]->n > 0) {
    hlo_type t = inputs[0]->shape.type;
    int64_t oidx[HLO_MAX_RANK] = {0};
    int64_t o = 0;
    do {
      if (window_plan_at(&wp, oidx) > 0) {
        window_cursor c = {.started = false};
        while (window_next(&wp, &c)) {
          if (kind != EVAL_REDUCER_GENERIC) {
            eval_reducer_apply(kind, t, res[0]->data, o, inputs[0]->data, c.lin);
          } else if ((st = folder_step(&f, res, o, inputs, c.lin))) {
            break;
          }
        }
      }
      o++;
    } while (!st && eval_next_index(rs->rank, rs->dims, oidx));
  }
  folder_free(&f);
  window_plan_free(&wp);
  if (st) {
    free_results(res, n);
    free(res);
    return st;
  }
  *out = pack_results(ins, n, res);
  free(res);
  return NULL;
}

/* ---- select-and-scatter ---- */

kiln_status eval_select_and_scatter(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                    hlo_literal **out) {
  if (ins->n_operands != 3) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected operand, source and init value");
  if (ins->n_called < 2 || !ins->called[0] || !ins->called[1])
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected select and scatter computations");
  const hlo_literal *operand = ops[0], *source = ops[1], *init = ops[2];
  hlo_type t = operand->shape.type;
  if (!hlo_type_is_array(t) || ins->shape.type != t || !shape_same_dims(&ins->shape, &operand->shape))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result shape differs from the operand shape");
  if (source->shape.type != t || init->shape.type != t || init->n != 1)
    return EVAL_ERR(KILN_UNIMPLEMENTED, ins, "source and init value must have the operand's element type %s",
                    hlo_type_name(t));
  const hlo_computation *select = ins->called[0], *scatter = ins->called[1];
  size_t esize = hlo_type_size(t);

  window_plan wp;
  TRY(window_plan_init(ins, &operand->shape, &source->shape, &wp));
  hlo_literal *res = NULL;
  kiln_status st = literal_create(&ins->shape, &res);
  if (st) {
    window_plan_free(&wp);
    return st;
  }
  fill_with_element(res, init->data);

  /* select(a, b) with a the current choice and b the candidate: true keeps a. */
  eval_scalar_compare cmp;
  bool fast_select = eval_scalar_compare_match(select, &cmp) && cmp.type == t &&
                     ((cmp.lhs_param == 0 && cmp.rhs_param == 1) || (cmp.lhs_param == 1 && cmp.rhs_param == 0));
  eval_reducer_kind scatter_kind = eval_reducer_classify(scatter);
  hlo_literal *args[2] = {NULL, NULL};
  hlo_shape sc = shape_scalar(t);
  for (int i = 0; i < 2 && !st; i++) st = literal_create(&sc, &args[i]);

  int64_t sidx[HLO_MAX_RANK] = {0};
  int64_t s = 0;
  if (!st && source->n > 0) do {
      if (window_plan_at(&wp, sidx) == 0) continue;
      window_cursor c = {.started = false};
      window_next(&wp, &c);
      int64_t chosen = c.lin;
      while (!st && window_next(&wp, &c)) {
        bool keep;
        if (fast_select) {
          keep = cmp.lhs_param == 0 ? eval_scalar_compare_apply(&cmp, operand->data, chosen, operand->data, c.lin)
                                    : eval_scalar_compare_apply(&cmp, operand->data, c.lin, operand->data, chosen);
        } else {
          eval_copy_element(args[0]->data, 0, operand->data, chosen, esize);
          eval_copy_element(args[1]->data, 0, operand->data, c.lin, esize);
          hlo_literal *r = NULL;
          st = eval_call(ctx, select, args, 2, &r);
          if (!st && (!r || r->shape.type != HLO_PRED || r->n != 1))
            st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "select %s did not return a pred scalar", select->name);
          keep = !st && ((const uint8_t *)r->data)[0] != 0;
          literal_free(r);
        }
        if (!keep) chosen = c.lin;
      }
      if (st) break;
      /* scatter(source value, current output value): the fast path folds the output
         into a copy of the source value so operand order matches the call exactly
         (it matters for float maximum/minimum with NaNs or signed zeros) */
      if (scatter_kind != EVAL_REDUCER_GENERIC) {
        eval_copy_element(args[0]->data, 0, source->data, s, esize);
        eval_reducer_apply(scatter_kind, t, args[0]->data, 0, res->data, chosen);
        eval_copy_element(res->data, chosen, args[0]->data, 0, esize);
      } else {
        eval_copy_element(args[0]->data, 0, source->data, s, esize);
        eval_copy_element(args[1]->data, 0, res->data, chosen, esize);
        hlo_literal *r = NULL;
        st = eval_call(ctx, scatter, args, 2, &r);
        if (!st) st = store_call_result(ins, scatter, r, 1, &res, chosen);
        literal_free(r);
      }
    } while (!st && (s++, eval_next_index(source->shape.rank, source->shape.dims, sidx)));
  literal_free(args[0]);
  literal_free(args[1]);
  window_plan_free(&wp);
  if (st) {
    literal_free(res);
    return st;
  }
  *out = res;
  return NULL;
}

/* ---- batch-norm-inference ---- */

static const char *find_raw_attr(const hlo_instr *ins, const char *key) {
  for (int i = 0; i < ins->n_raw_attrs; i++)
    if (strcmp(ins->raw_attrs[i].key, key) == 0) return ins->raw_attrs[i].value;
  return NULL;
}

/* Rounds v to element type t (the precision the elementwise ops would compute in). */
static double round_to(hlo_type t, double v) {
  switch (t) {
    case HLO_F16: return f16_to_f32(f32_to_f16((float)v));
    case HLO_BF16: return bf16_to_f32(f32_to_bf16((float)v));
    case HLO_F32: return (float)v;
    default: return v;
  }
}

/* As XLA's batch-norm expansion computes it, one rounded op at a time in the element
 * type: scale' = scale * rsqrt(var + eps), shift = offset - mean * scale',
 * out = x * scale' + shift. */
kiln_status eval_batch_norm_inference(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops,
                                      hlo_literal **out) {
  (void)ctx;
  if (ins->n_operands != 5)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "expected operand, scale, offset, mean and variance");
  const hlo_literal *x = ops[0];
  hlo_type t = x->shape.type;
  if (!hlo_type_is_float(t) || ins->shape.type != t || !shape_same_dims(&ins->shape, &x->shape))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand and result must be the same floating-point shape");
  const char *eps_text = find_raw_attr(ins, "epsilon"), *fi_text = find_raw_attr(ins, "feature_index");
  if (!eps_text || !fi_text)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "missing epsilon or feature_index attribute");
  char *end;
  errno = 0;
  double eps = strtod(eps_text, &end);
  if (end == eps_text || *end || errno == ERANGE)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "epsilon=%s is not a number", eps_text);
  errno = 0;
  long long fi = strtoll(fi_text, &end, 10);
  if (end == fi_text || *end || errno == ERANGE || fi < 0 || fi >= x->shape.rank)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "feature_index=%s is not a dimension of the operand", fi_text);
  int64_t features = x->shape.dims[fi];
  for (int i = 1; i < 5; i++)
    if (ops[i]->shape.type != t || ops[i]->shape.rank != 1 || ops[i]->shape.dims[0] != features)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "operand %d is not %s[%lld]", i, hlo_type_name(t),
                      (long long)features);
  int64_t inner = 1;
  for (int d = (int)fi + 1; d < x->shape.rank; d++) inner *= x->shape.dims[d];
  double *scale = malloc((size_t)(features > 0 ? features : 1) * 2 * sizeof(double));
  if (!scale) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  double *shift = scale + (features > 0 ? features : 1);
  double e = round_to(t, (float)eps); /* XLA keeps epsilon as a float attribute */
  for (int64_t f = 0; f < features; f++) {
    double var_eps = round_to(t, literal_get_f64(ops[4], f) + e);
    double rsq = round_to(t, 1.0 / round_to(t, sqrt(var_eps)));
    scale[f] = round_to(t, literal_get_f64(ops[1], f) * rsq);
    shift[f] = round_to(t, literal_get_f64(ops[2], f) - round_to(t, literal_get_f64(ops[3], f) * scale[f]));
  }
  kiln_status st = literal_create(&ins->shape, out);
  if (st) {
    free(scale);
    return st;
  }
  for (int64_t i = 0; i < x->n; i++) {
    int64_t f = (i / inner) % features;
    literal_set_f64(*out, i, round_to(t, literal_get_f64(x, i) * scale[f]) + shift[f]);
  }
  free(scale);
  return NULL;
}
