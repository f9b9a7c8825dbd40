/* Evaluator kernels for gather and scatter, transcribing XLA's definitions literally.
 *
 * Both ops pair a "batch" part of an index space (positions in start/scatter indices)
 * with a "window" part (offsets inside a slice of the operand). The start of the slice
 * depends only on the batch position, so it is computed once per position into a table
 * of operand offsets; every output (gather) or update (scatter) element then costs two
 * short dot products of its multi-index with precomputed coefficient vectors. Gather
 * clamps starts so the whole slice fits, as XLA does; scatter skips an update window
 * that does not fit entirely, as XLA's CPU/GPU backends do. Indices may be of any
 * integer type; unsigned values beyond int64 saturate, which clamping/skipping then
 * handles like any other out-of-range index. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

/* Reads an index element as int64, saturating u64 values past INT64_MAX. */
static int64_t read_index(const hlo_literal *l, int64_t i) { return hlo_index_at(l->shape.type, l->data, i); }

static void copy_elem(void *dst, int64_t di, const void *src, int64_t si, size_t esize) {
  switch (esize) {
    case 1: ((uint8_t *)dst)[di] = ((const uint8_t *)src)[si]; break;
    case 2: memcpy((char *)dst + di * 2, (const char *)src + si * 2, 2); break;
    case 4: memcpy((char *)dst + di * 4, (const char *)src + si * 4, 4); break;
    case 8: memcpy((char *)dst + di * 8, (const char *)src + si * 8, 8); break;
    default: eval_copy_element(dst, di, src, si, esize); break;
  }
}

/* Row-major strides with a wrapping product: an empty shape may carry dims whose
 * product overflows, and its strides are never used for addressing. */
static void strides_of(const hlo_shape *sh, int64_t *strides) {
  uint64_t s = 1;
  for (int d = sh->rank - 1; d >= 0; d--) {
    strides[d] = (int64_t)s;
    s *= (uint64_t)sh->dims[d];
  }
}

static bool contains(const hlo_ints *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return true;
  return false;
}

/* Every entry in [0, rank) and no repeats across the given lists. */
static bool distinct_dims(int rank, const hlo_ints *a, const hlo_ints *b, const hlo_ints *c) {
  bool seen[HLO_MAX_RANK] = {false};
  const hlo_ints *lists[3] = {a, b, c};
  for (int l = 0; l < 3; l++) {
    if (!lists[l]) continue;
    for (int i = 0; i < lists[l]->n; i++) {
      int64_t d = lists[l]->v[i];
      if (d < 0 || d >= rank || seen[d]) return false;
      seen[d] = true;
    }
  }
  return true;
}

static bool ascending(const hlo_ints *l) {
  for (int i = 1; i < l->n; i++)
    if (l->v[i] <= l->v[i - 1]) return false;
  return true;
}

/* The index-space view of start/scatter indices: all dims except index_vector_dim (the
 * "batch" dims, in order) and the vector of per-position index components. */
typedef struct index_space {
  int nb;                             /* batch dims of the indices */
  int64_t dims[HLO_MAX_RANK];         /* their sizes */
  int64_t ind_stride[HLO_MAX_RANK];   /* their strides in the indices literal */
  int64_t pos_stride[HLO_MAX_RANK];   /* row-major strides of the batch space */
  int64_t count;                      /* positions */
  int64_t n_components;               /* length of each index vector */
  int64_t component_stride;           /* stride of index_vector_dim (0 if implicit) */
  int ind_to_batch[HLO_MAX_RANK];     /* indices dim -> batch dim, -1 for the vector dim */
} index_space;

static kiln_status index_space_make(const hlo_instr *ins, const hlo_literal *idx, int64_t ivd, index_space *sp) {
  int ir = idx->shape.rank;
  if (!hlo_type_is_int(idx->shape.type))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "indices must have an integer type, not %s",
                    hlo_type_name(idx->shape.type));
  if (ivd < 0 || ivd > ir)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "index_vector_dim %lld out of range for indices of rank %d",
                    (long long)ivd, ir);
  int64_t strides[HLO_MAX_RANK];
  strides_of(&idx->shape, strides);
  sp->nb = 0;
  uint64_t count = 1; /* a zero dim makes the wrapped product exactly 0 too */
  sp->n_components = ivd < ir ? idx->shape.dims[ivd] : 1;
  sp->component_stride = ivd < ir ? strides[ivd] : 0;
  for (int d = 0; d < ir; d++) {
    if (d == ivd) {
      sp->ind_to_batch[d] = -1;
      continue;
    }
    sp->ind_to_batch[d] = sp->nb;
    sp->dims[sp->nb] = idx->shape.dims[d];
    sp->ind_stride[sp->nb] = strides[d];
    count *= (uint64_t)idx->shape.dims[d];
    sp->nb++;
  }
  sp->count = (int64_t)count;
  uint64_t s = 1; /* wraps like strides_of; exact whenever count != 0 */
  for (int b = sp->nb - 1; b >= 0; b--) {
    sp->pos_stride[b] = (int64_t)s;
    s *= (uint64_t)sp->dims[b];
  }
  return NULL;
}

/* Offsets into an operand of each position's slice start. STARTS_FROM[k] is the
 * operand dim index component k sets; BATCH_OPERAND[i]/BATCH_INDICES[i] pair operand
 * batching dims with indices dims. With CLAMP (gather) starts are clamped into
 * [0, dim - window]; without (scatter) positions whose window does not fit get -1. */
static kiln_status slice_starts(const hlo_instr *ins, const hlo_literal *idx, const index_space *sp,
                                const hlo_shape *operand, const int64_t *window, const hlo_ints *starts_from,
                                const hlo_ints *batch_operand, const hlo_ints *batch_indices, bool clamp,
                                int64_t **out) {
  *out = NULL;
  int r = operand->rank;
  int64_t ostrides[HLO_MAX_RANK];
  strides_of(operand, ostrides);
  if ((uint64_t)sp->count > SIZE_MAX / sizeof(int64_t))
    return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "too many index positions");
  int64_t *base = malloc(sp->count ? (size_t)sp->count * sizeof *base : 1);
  if (!base) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory for %lld index positions", (long long)sp->count);
  int64_t g[HLO_MAX_RANK] = {0};
  for (int64_t p = 0; p < sp->count; p++) {
    int64_t start[HLO_MAX_RANK] = {0};
    int64_t ioff = eval_linear_index(sp->nb, sp->ind_stride, g);
    for (int k = 0; k < starts_from->n; k++) start[starts_from->v[k]] = read_index(idx, ioff + k * sp->component_stride);
    for (int i = 0; i < batch_operand->n; i++) start[batch_operand->v[i]] = g[sp->ind_to_batch[batch_indices->v[i]]];
    int64_t off = 0;
    bool fits = true;
    for (int d = 0; d < r; d++) {
      int64_t hi = operand->dims[d] - window[d];
      if (clamp) {
        if (start[d] > hi) start[d] = hi;
        if (start[d] < 0) start[d] = 0;
      } else if (start[d] < 0 || start[d] > hi) {
        fits = false;
        break;
      }
      off += start[d] * ostrides[d];
    }
    base[p] = fits ? off : -1;
    eval_next_index(sp->nb, sp->dims, g);
  }
  *out = base;
  return NULL;
}

/* ---------------------------------------------------------------- gather */

kiln_status eval_gather(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  (void)ctx;
  *out = NULL;
  if (ins->n_operands != 2 || !ops[0]->data || !ops[1]->data || ops[0]->shape.type == HLO_TUPLE)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "gather needs an array operand and array start indices");
  const hlo_literal *opnd = ops[0], *idx = ops[1];
  const hlo_gather_dnums *dn = &ins->gather;
  const hlo_ints *ss = &ins->gather_slice_sizes;
  int r = opnd->shape.rank, orank = ins->shape.rank;
  index_space sp;
  TRY(index_space_make(ins, idx, dn->index_vector_dim, &sp));
  if (ss->n != r) return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice_sizes has %d entries, operand rank is %d", ss->n, r);
  for (int d = 0; d < r; d++)
    if (ss->v[d] < 0 || ss->v[d] > opnd->shape.dims[d])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "slice size %lld out of range for operand dim %d of size %lld",
                      (long long)ss->v[d], d, (long long)opnd->shape.dims[d]);
  if (dn->start_index_map.n != sp.n_components || !distinct_dims(r, &dn->start_index_map, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "start_index_map must name %lld distinct operand dims",
                    (long long)sp.n_components);
  if (!distinct_dims(r, &dn->collapsed_slice_dims, &dn->operand_batching_dims, NULL) ||
      dn->operand_batching_dims.n != dn->start_indices_batching_dims.n)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid collapsed_slice_dims / operand_batching_dims");
  for (int i = 0; i < dn->collapsed_slice_dims.n; i++)
    if (ss->v[dn->collapsed_slice_dims.v[i]] != 1)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "collapsed dim %lld must have slice size 1",
                      (long long)dn->collapsed_slice_dims.v[i]);
  for (int i = 0; i < dn->operand_batching_dims.n; i++) {
    int64_t od = dn->operand_batching_dims.v[i], id = dn->start_indices_batching_dims.v[i];
    if (id < 0 || id >= idx->shape.rank || id == dn->index_vector_dim || ss->v[od] != 1 ||
        idx->shape.dims[id] != opnd->shape.dims[od])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "batching dims %lld (operand) / %lld (indices) do not pair up",
                      (long long)od, (long long)id);
  }
  if (!distinct_dims(idx->shape.rank, &dn->start_indices_batching_dims, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid start_indices_batching_dims");
  /* Window (offset) dims of the operand, in order, pair with offset_dims. */
  int wdims[HLO_MAX_RANK], nw = 0;
  for (int d = 0; d < r; d++)
    if (!contains(&dn->collapsed_slice_dims, d) && !contains(&dn->operand_batching_dims, d)) wdims[nw++] = d;
  if (nw != dn->offset_dims.n || orank != sp.nb + nw || !ascending(&dn->offset_dims) ||
      !distinct_dims(orank, &dn->offset_dims, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "offset_dims do not match the operand's window dims and result rank");
  /* Coefficients over output dims: position in the batch space and operand offset. */
  int64_t ostrides[HLO_MAX_RANK], cpos[HLO_MAX_RANK], coff[HLO_MAX_RANK];
  strides_of(&opnd->shape, ostrides);
  for (int d = 0, b = 0, w = 0; d < orank; d++) {
    if (w < nw && dn->offset_dims.v[w] == d) {
      if (ins->shape.dims[d] != ss->v[wdims[w]])
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result dim %d has size %lld, slice size is %lld", d,
                        (long long)ins->shape.dims[d], (long long)ss->v[wdims[w]]);
      cpos[d] = 0;
      coff[d] = ostrides[wdims[w]];
      w++;
    } else {
      if (ins->shape.dims[d] != sp.dims[b])
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result dim %d has size %lld, start indices give %lld", d,
                        (long long)ins->shape.dims[d], (long long)sp.dims[b]);
      cpos[d] = sp.pos_stride[b];
      coff[d] = 0;
      b++;
    }
  }
  if (ins->shape.type != opnd->shape.type)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "result type %s differs from operand type %s",
                    hlo_type_name(ins->shape.type), hlo_type_name(opnd->shape.type));

  hlo_literal *res;
  TRY(literal_create(&ins->shape, &res));
  if (res->n == 0) {
    *out = res;
    return NULL;
  }
  int64_t *base;
  kiln_status st = slice_starts(ins, idx, &sp, &opnd->shape, ss->v, &dn->start_index_map, &dn->operand_batching_dims,
                                &dn->start_indices_batching_dims, true, &base);
  if (st) {
    literal_free(res);
    return st;
  }
  size_t es = hlo_type_size(res->shape.type);
  if (orank == 0) {
    copy_elem(res->data, 0, opnd->data, base[0], es);
  } else {
    int outer = orank - 1;
    int64_t inner = ins->shape.dims[outer], ip = cpos[outer], io = coff[outer];
    int64_t o[HLO_MAX_RANK] = {0}, i = 0;
    do {
      int64_t p = eval_linear_index(outer, cpos, o), off = eval_linear_index(outer, coff, o);
      for (int64_t j = 0; j < inner; j++) copy_elem(res->data, i++, opnd->data, base[p + j * ip] + off + j * io, es);
    } while (eval_next_index(outer, ins->shape.dims, o));
  }
  free(base);
  *out = res;
  return NULL;
}

/* ---------------------------------------------------------------- scatter */

/* How the update computation combines (operands..., updates...) -> results. */
typedef enum scatter_combine { COMBINE_CALL, COMBINE_REDUCER, COMBINE_ASSIGN } scatter_combine;

static bool is_param(const hlo_instr *i, int64_t n) { return i && i->op == HLO_OP_PARAMETER && i->parameter_number == n; }

/* The update computation must take 2N scalars of the operand types. Recognises the
 * overwrite combiner (result i = update i) and single binary reducers. */
static kiln_status scatter_combiner(const hlo_instr *ins, int n, hlo_literal *const *operands, scatter_combine *how,
                                    eval_reducer_kind *kind) {
  if (ins->n_called < 1 || !ins->called[0])
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "scatter has no update computation");
  const hlo_computation *c = ins->called[0];
  if (c->n_params != 2 * n)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "update computation %s takes %d parameters, expected %d", c->name,
                    c->n_params, 2 * n);
  for (int i = 0; i < 2 * n; i++) {
    const hlo_instr *p = c->params[i];
    if (!p || p->shape.type != operands[i % n]->shape.type || p->shape.rank != 0)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "update computation %s parameter %d must be a %s scalar", c->name, i,
                      hlo_type_name(operands[i % n]->shape.type));
  }
  const hlo_instr *root = c->root;
  *how = COMBINE_CALL;
  *kind = EVAL_REDUCER_GENERIC;
  if (n == 1 && is_param(root, 1)) {
    *how = COMBINE_ASSIGN;
  } else if (n > 1 && root && root->op == HLO_OP_TUPLE && root->n_operands == n) {
    bool all = true;
    for (int i = 0; i < n; i++) all = all && is_param(root->operands[i], n + i);
    if (all) *how = COMBINE_ASSIGN;
  } else if (n == 1) {
    *kind = eval_reducer_classify(c);
    if (*kind != EVAL_REDUCER_GENERIC) *how = COMBINE_REDUCER;
  }
  return NULL;
}

/* Generic path: one call of the update computation per update element. ARGS are 2N
 * preallocated scalars reused across calls. */
static kiln_status scatter_call(eval_ctx *ctx, const hlo_instr *ins, int n, hlo_literal **res, int64_t oi,
                                hlo_literal *const *updates, int64_t ui, hlo_literal **args) {
  for (int i = 0; i < n; i++) {
    size_t es = hlo_type_size(res[i]->shape.type);
    copy_elem(args[i]->data, 0, res[i]->data, oi, es);
    copy_elem(args[n + i]->data, 0, updates[i]->data, ui, es);
  }
  hlo_literal *r = NULL;
  TRY(eval_call(ctx, ins->called[0], args, 2 * n, &r));
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++) {
    const hlo_literal *v = r->shape.type == HLO_TUPLE ? (i < r->shape.n_elems ? r->tuple[i] : NULL) : (i == 0 ? r : NULL);
    if (!v || v->shape.type != res[i]->shape.type || v->n != 1 || !v->data)
      st = EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "update computation %s must return %d %s scalar(s)",
                    ins->called[0]->name, n, hlo_type_name(res[i]->shape.type));
    else
      copy_elem(res[i]->data, oi, v->data, 0, hlo_type_size(v->shape.type));
  }
  literal_free(r);
  return st;
}

kiln_status eval_scatter(eval_ctx *ctx, const hlo_instr *ins, hlo_literal *const *ops, hlo_literal **out) {
  *out = NULL;
  if (ins->n_operands < 3 || ins->n_operands % 2 == 0)
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "scatter needs N operands, indices and N updates, got %d operands",
                    ins->n_operands);
  int n = (ins->n_operands - 1) / 2;
  hlo_literal *const *operands = ops, *const *updates = ops + n + 1;
  const hlo_literal *idx = ops[n];
  const hlo_scatter_dnums *dn = &ins->scatter;
  for (int i = 0; i < 2 * n + 1; i++)
    if (!ops[i]->data || ops[i]->shape.type == HLO_TUPLE)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "scatter operand %d is not an array", i);
  const hlo_shape *os = &operands[0]->shape, *us = &updates[0]->shape;
  for (int i = 0; i < n; i++)
    if (!shape_same_dims(&operands[i]->shape, os) || !shape_same_dims(&updates[i]->shape, us) ||
        updates[i]->shape.type != operands[i]->shape.type)
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "scatter operands/updates %d disagree in shape or type", i);
  int r = os->rank, ur = us->rank;
  index_space sp;
  TRY(index_space_make(ins, idx, dn->index_vector_dim, &sp));
  if (dn->scatter_dims_to_operand_dims.n != sp.n_components ||
      !distinct_dims(r, &dn->scatter_dims_to_operand_dims, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "scatter_dims_to_operand_dims must name %lld distinct operand dims",
                    (long long)sp.n_components);
  if (!distinct_dims(r, &dn->inserted_window_dims, &dn->input_batching_dims, NULL) ||
      dn->input_batching_dims.n != dn->scatter_indices_batching_dims.n ||
      !distinct_dims(idx->shape.rank, &dn->scatter_indices_batching_dims, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "invalid inserted_window_dims / batching dims");
  for (int i = 0; i < dn->input_batching_dims.n; i++) {
    int64_t od = dn->input_batching_dims.v[i], id = dn->scatter_indices_batching_dims.v[i];
    if (id == dn->index_vector_dim || idx->shape.dims[id] != os->dims[od])
      return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "batching dims %lld (operand) / %lld (indices) do not pair up",
                      (long long)od, (long long)id);
  }
  int wdims[HLO_MAX_RANK], nw = 0;
  for (int d = 0; d < r; d++)
    if (!contains(&dn->inserted_window_dims, d) && !contains(&dn->input_batching_dims, d)) wdims[nw++] = d;
  if (nw != dn->update_window_dims.n || ur != sp.nb + nw || !ascending(&dn->update_window_dims) ||
      !distinct_dims(ur, &dn->update_window_dims, NULL, NULL))
    return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "update_window_dims do not match the operand's window dims and updates rank");
  int64_t window[HLO_MAX_RANK], ostrides[HLO_MAX_RANK], cpos[HLO_MAX_RANK], coff[HLO_MAX_RANK];
  strides_of(os, ostrides);
  for (int d = 0; d < r; d++) window[d] = 1;
  for (int d = 0, b = 0, w = 0; d < ur; d++) {
    if (w < nw && dn->update_window_dims.v[w] == d) {
      window[wdims[w]] = us->dims[d];
      cpos[d] = 0;
      coff[d] = ostrides[wdims[w]];
      w++;
    } else {
      if (us->dims[d] != sp.dims[b])
        return EVAL_ERR(KILN_INVALID_ARGUMENT, ins, "updates dim %d has size %lld, scatter indices give %lld", d,
                        (long long)us->dims[d], (long long)sp.dims[b]);
      cpos[d] = sp.pos_stride[b];
      coff[d] = 0;
      b++;
    }
  }
  scatter_combine how = COMBINE_CALL;
  eval_reducer_kind kind = EVAL_REDUCER_GENERIC;
  TRY(scatter_combiner(ins, n, operands, &how, &kind));

  hlo_literal **res = calloc((size_t)n, sizeof *res), **args = NULL;
  if (!res) return EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory");
  for (int i = 0; i < n; i++) res[i] = literal_clone(operands[i]);
  kiln_status st = NULL;
  int64_t *base = NULL;
  /* Into an empty operand no window fits; skipping also avoids its stride arithmetic. */
  int64_t n_updates = operands[0]->n > 0 ? updates[0]->n : 0;
  if (n_updates > 0) st = slice_starts(ins, idx, &sp, os, window, &dn->scatter_dims_to_operand_dims,
                                       &dn->input_batching_dims, &dn->scatter_indices_batching_dims, false, &base);
  if (!st && n_updates > 0 && how == COMBINE_CALL) {
    args = calloc((size_t)(2 * n), sizeof *args);
    if (!args) st = EVAL_ERR(KILN_RESOURCE_EXHAUSTED, ins, "out of memory");
    for (int i = 0; i < 2 * n && !st; i++) {
      hlo_shape s = shape_scalar(operands[i % n]->shape.type);
      st = literal_create(&s, &args[i]);
    }
  }
  if (!st && n_updates > 0) {
    /* Row-major over update elements: later updates see earlier ones' results. */
    int64_t u[HLO_MAX_RANK] = {0};
    for (int64_t ui = 0; ui < n_updates && !st; ui++) {
      int64_t p = eval_linear_index(ur, cpos, u);
      if (base[p] >= 0) {
        int64_t oi = base[p] + eval_linear_index(ur, coff, u);
        switch (how) {
          case COMBINE_ASSIGN:
            for (int i = 0; i < n; i++)
              copy_elem(res[i]->data, oi, updates[i]->data, ui, hlo_type_size(res[i]->shape.type));
            break;
          case COMBINE_REDUCER:
            eval_reducer_apply(kind, res[0]->shape.type, res[0]->data, oi, updates[0]->data, ui);
            break;
          case COMBINE_CALL:
            st = scatter_call(ctx, ins, n, res, oi, updates, ui, args);
            break;
        }
      }
      eval_next_index(ur, us->dims, u);
    }
  }
  free(base);
  if (args)
    for (int i = 0; i < 2 * n; i++) literal_free(args[i]);
  free(args);
  if (st) {
    for (int i = 0; i < n; i++) literal_free(res[i]);
    free(res);
    return st;
  }
  if (n == 1) {
    *out = res[0];
    free(res);
  } else {
    *out = literal_tuple(n, res);
    free(res);
  }
  return NULL;
}
