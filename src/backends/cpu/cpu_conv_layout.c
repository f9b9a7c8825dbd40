/* Convolution layout assignment for the cpu backend: channels-first 2-D convolutions
 * (dim_labels=bf01_oi01->bf01, what ONNX models lower to) are rewritten to compute
 * channels-last (b01f_01io->b01f), the layout oneDNN's direct kernels read in place,
 * and the transposes this puts around every convolution are then sunk through the ops
 * between convolutions until they meet the next convolution's input transpose and
 * cancel. Without this the backend reorders every NCHW activation into a blocked
 * layout and back around each convolution, which dominates small-batch CNN time.
 *
 * Step 1, per convolution of a computation with at least two: x' = transpose(x) to
 * NHWC, the kernel transposed to 01io (a constant kernel is folded into a relayouted
 * constant by constant folding), the convolution on x', and transpose(y', {0,3,1,2})
 * back to NCHW for its users. A parameter input of at most 4 channels (the image a
 * network starts from) stays NCHW (bf01_01io->b01f).
 *
 * Step 2, sinking: an instruction U whose operands are transpose(v, P) with that same
 * P = {0,3,1,2} (or a broadcast or constant, re-expressed in v's dimension order, or a
 * scalar) is rebuilt over the v's with its dimension attributes renamed through P and
 * followed by one transpose(., P). U can be elementwise (clamp and select included),
 * reduce, reduce-window, pad, concatenate or slice. A transpose that reaches the next
 * convolution's NHWC input transpose composes with it into the identity, which the
 * algebraic simplifier run after this pass removes (the cpu pipeline's
 * conv-layout-cleanup). Sinking into U happens only when every live user of each
 * transposed operand can absorb a transpose too, so a transpose with a consumer that
 * must see NCHW (a reshape, the root) stays where it is instead of being duplicated.
 *
 * Step 3: a remaining transpose that moves only size-1 dimensions (squeeze-excite
 * blocks' [N,C,1,1] tensors) is a reshape, which the backend aliases instead of copying.
 *
 * Exactness: only data movement changes. The evaluator packs convolution operands into
 * one logical order whatever the dim_labels, so a relabelled convolution sums the same
 * products in the same order. Reduce and reduce-window fold elements in row-major order
 * of the reduced dimensions / window positions; they are sunk only when P keeps the
 * relative order of those dimensions of size > 1, so each output folds the same
 * elements in the same order. Everything else is elementwise or pure data movement. */
#include <stdlib.h>
#include <string.h>

#include "hlo/builder.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/pipeline.h"

#define LAYOUT_RANK 4
/* transpose(nchw, TO_NHWC) is NHWC; transpose(nhwc, TO_NCHW) is NCHW. */
static const int64_t TO_NHWC[LAYOUT_RANK] = {0, 2, 3, 1};
static const int64_t TO_NCHW[LAYOUT_RANK] = {0, 3, 1, 2};
/* Cap on sinking sweeps; each sweep moves transposes down a whole chain of users, so
 * real models settle in a few. */
#define MAX_SWEEPS 64
/* Input channels up to which a convolution keeps a channels-first input (images). */
#define FEW_CHANNELS 4

static kiln_status built(kiln_status s, const hlo_instr *about) {
  return status_wrap(s, "conv-layout: rewriting %s", about->name);
}

/* ------------------------------------------------------------------ step 1 */

/* A rebuilt instruction whose shape differs from the one it replaces: a bug here. */
static kiln_status wrong_shape(const hlo_instr *orig, const hlo_instr *rebuilt) {
  char *want = shape_to_string(&orig->shape), *got = shape_to_string(&rebuilt->shape);
  kiln_status s = status_error(KILN_INTERNAL, "conv-layout: NHWC form of %s has shape %s, not %s", orig->name, got,
                               want);
  free(want);
  free(got);
  return s;
}

static bool is_nchw_conv(const hlo_instr *cv) {
  if (cv->op != HLO_OP_CONVOLUTION || !cv->has_conv_dnums || cv->n_operands != 2) return false;
  const hlo_conv_dnums *d = &cv->conv;
  if (d->n_spatial != 2 || cv->window.rank != 2 || cv->batch_group_count != 1) return false;
  if (!shape_is_array(&cv->shape) || cv->shape.rank != LAYOUT_RANK) return false;
  if (cv->operands[0]->shape.rank != LAYOUT_RANK || cv->operands[1]->shape.rank != LAYOUT_RANK) return false;
  return d->input_batch == 0 && d->input_feature == 1 && d->input_spatial[0] == 2 && d->input_spatial[1] == 3 &&
         d->output_batch == 0 && d->output_feature == 1 && d->output_spatial[0] == 2 && d->output_spatial[1] == 3;
}

static bool is_identity(int n, const int64_t *perm) {
  for (int i = 0; i < n; i++)
    if (perm[i] != i) return false;
  return true;
}

/* The convolution on NHWC activations and a 01io kernel, between two transposes. */
static kiln_status relayout_conv(hlo_computation *c, hlo_instr *cv) {
  const hlo_conv_dnums *d = &cv->conv;
  hlo_instr *x = cv->operands[0], *k = cv->operands[1], *y = NULL, *back = NULL;
  /* A network's first convolution reads the image (3 channels), a parameter: no
   * transpose of it to cancel, and a transpose kernel with a 3-wide inner dimension is
   * slower than oneDNN's own reorder behind a channels-first input. */
  bool keep_input = x->shape.dims[1] <= FEW_CHANNELS && x->op == HLO_OP_PARAMETER;
  if (!keep_input) TRY(built(hlo_build_transpose(c, cv->operands[0], TO_NHWC, &x), cv));
  int64_t kperm[LAYOUT_RANK] = {d->kernel_spatial[0], d->kernel_spatial[1], d->kernel_input_feature,
                                d->kernel_output_feature};
  if (!is_identity(LAYOUT_RANK, kperm)) TRY(built(hlo_build_transpose(c, cv->operands[1], kperm, &k), cv));
  hlo_instr *ops[2] = {x, k};
  hlo_instr tmpl = hlo_instr_template_from(cv, ops); /* window, group counts, precision config, metadata */
  hlo_conv_dnums nd;
  memset(&nd, 0, sizeof nd);
  nd.n_spatial = 2;
  nd.input_batch = nd.output_batch = 0;
  nd.input_spatial[0] = nd.output_spatial[0] = 1;
  nd.input_spatial[1] = nd.output_spatial[1] = 2;
  nd.input_feature = nd.output_feature = 3;
  if (keep_input) nd.input_feature = 1, nd.input_spatial[0] = 2, nd.input_spatial[1] = 3;
  nd.kernel_spatial[0] = 0, nd.kernel_spatial[1] = 1;
  nd.kernel_input_feature = 2, nd.kernel_output_feature = 3;
  tmpl.conv = nd;
  TRY(built(hlo_build_instr(c, &tmpl, &y), cv));
  TRY(built(hlo_build_transpose(c, y, TO_NCHW, &back), cv));
  if (!shape_compatible(&back->shape, &cv->shape)) return wrong_shape(cv, back);
  hlo_pass_replace_uses(c, cv, back);
  return NULL;
}

/* ------------------------------------------------------------------ step 2 */

/* How many users each instruction of a computation had when a sweep began, by id: an
 * instruction with none (and not the root) is dead and left for DCE. Instructions made
 * during the sweep are not counted and are taken as live. */
typedef struct use_counts {
  int max_id;
  int *n;
} use_counts;

static void use_counts_build(const hlo_computation *c, use_counts *uc) {
  int max_id = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  uc->max_id = max_id;
  uc->n = calloc((size_t)max_id + 1, sizeof *uc->n);
  if (!uc->n) abort();
  for (int i = 0; i < c->n_instrs; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++) {
      int id = c->instrs[i]->operands[k]->id;
      if (id >= 0 && id <= max_id) uc->n[id]++;
    }
}

static bool is_dead(const hlo_computation *c, const use_counts *uc, const hlo_instr *x) {
  return x != c->root && x->id >= 0 && x->id <= uc->max_id && uc->n[x->id] == 0;
}

static bool is_transpose_by(const hlo_instr *x, const int64_t *perm) {
  if (x->op != HLO_OP_TRANSPOSE || x->dimensions.n != LAYOUT_RANK) return false;
  return memcmp(x->dimensions.v, perm, sizeof(int64_t) * LAYOUT_RANK) == 0;
}

static bool sinkable_kind(const hlo_instr *u) {
  if (!shape_is_array(&u->shape) || u->shape.rank > LAYOUT_RANK) return false;
  switch (u->op) {
    case HLO_OP_REDUCE:
    case HLO_OP_REDUCE_WINDOW:
      return u->n_operands == 2; /* one input and its init value */
    case HLO_OP_PAD:
    case HLO_OP_CONCATENATE:
    case HLO_OP_SLICE:
      return true;
    default:
      return hlo_opcode_is_elementwise(u->op);
  }
}

/* Whether transpose T may be sunk: each live user takes a transpose as well. Users are
 * found by scanning, as sinking earlier in the sweep gave T's replacements new users. */
static bool users_absorb(const hlo_computation *c, const use_counts *uc, const hlo_instr *t) {
  if (t == c->root) return false;
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *u = c->instrs[i];
    bool uses = false;
    for (int k = 0; k < u->n_operands && !uses; k++) uses = u->operands[k] == t;
    if (!uses || is_dead(c, uc, u)) continue;
    if (u->op != HLO_OP_TRANSPOSE && !sinkable_kind(u)) return false;
  }
  return true;
}

/* Which of U's operands carry its dimensions (the others are scalars: init and pad
 * values, clamp bounds). */
static bool carries_dims(const hlo_instr *u, int k) {
  switch (u->op) {
    case HLO_OP_REDUCE:
    case HLO_OP_REDUCE_WINDOW:
    case HLO_OP_PAD:
      return k == 0;
    default:
      return u->operands[k]->shape.rank == LAYOUT_RANK;
  }
}

/* Whether the dims flagged in `selected` keep their relative order under TO_NCHW. */
static bool keeps_order(const bool *selected) {
  int64_t last = -1;
  for (int d = 0; d < LAYOUT_RANK; d++) {
    if (!selected[d]) continue;
    if (TO_NCHW[d] < last) return false;
    last = TO_NCHW[d];
  }
  return true;
}

/* Whether U (all checks but its operands') may be rebuilt in NHWC order bit-exactly. */
static bool order_preserved(const hlo_instr *u) {
  bool selected[LAYOUT_RANK] = {false};
  if (u->op == HLO_OP_REDUCE) {
    const hlo_shape *s = &u->operands[0]->shape;
    for (int i = 0; i < u->dimensions.n; i++) {
      int64_t d = u->dimensions.v[i];
      if (d < 0 || d >= LAYOUT_RANK) return false;
      selected[d] = s->dims[d] > 1;
    }
    return keeps_order(selected);
  }
  if (u->op == HLO_OP_REDUCE_WINDOW) {
    if (u->window.rank != LAYOUT_RANK) return false;
    for (int d = 0; d < LAYOUT_RANK; d++) selected[d] = u->window.dims[d].size > 1;
    return keeps_order(selected);
  }
  return true;
}

/* NCHW dimension number -> NHWC dimension number: transpose(nhwc, TO_NCHW) has
 * dim d = nhwc dim TO_NCHW[d]. */
static int64_t rename_dim(int64_t d) { return TO_NCHW[d]; }

/* The NHWC-ordered stand-in for operand X of U (whose dims are NCHW-ordered): the
 * transpose's input, a re-broadcast, or a transposed constant. NULL *out: none. */
static kiln_status nhwc_operand(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  *out = NULL;
  if (is_transpose_by(x, TO_NCHW)) {
    *out = x->operands[0];
    return NULL;
  }
  if (x->op == HLO_OP_CONSTANT) return built(hlo_build_transpose(c, x, TO_NHWC, out), x);
  if (x->op != HLO_OP_BROADCAST) return NULL;
  /* Operand dim k of x goes to NCHW dim D[k], renamed to its NHWC number; the
   * broadcast's dims are kept ascending by transposing its (small) operand where the
   * renaming reorders them. */
  hlo_instr *z = x->operands[0];
  int n = x->dimensions.n;
  if (n != z->shape.rank || n > LAYOUT_RANK) return NULL;
  int64_t nd[LAYOUT_RANK], order[LAYOUT_RANK], zperm[LAYOUT_RANK], sorted[LAYOUT_RANK], dims[LAYOUT_RANK];
  for (int k = 0; k < n; k++) {
    int64_t d = x->dimensions.v[k];
    if (d < 0 || d >= LAYOUT_RANK) return NULL;
    nd[k] = rename_dim(d);
    order[k] = k;
  }
  for (int a = 1; a < n; a++) /* insertion sort of operand dims by destination */
    for (int b = a; b > 0 && nd[order[b]] < nd[order[b - 1]]; b--) {
      int64_t t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  for (int k = 0; k < n; k++) zperm[k] = order[k], sorted[k] = nd[order[k]];
  for (int j = 0; j < LAYOUT_RANK; j++) dims[j] = x->shape.dims[TO_NHWC[j]];
  if (!is_identity(n, zperm)) TRY(built(hlo_build_transpose(c, z, zperm, &z), x));
  return built(hlo_build_broadcast(c, z, LAYOUT_RANK, dims, sorted, out), x);
}

/* NCHW-ordered per-dimension attribute -> NHWC order (nhwc dim j is nchw dim
 * TO_NHWC[j]). Only full-length lists are renamed; an absent one stays absent. */
static void rename_per_dim(const hlo_ints *in, int64_t *buf, hlo_ints *out) {
  *out = *in;
  if (in->n != LAYOUT_RANK) return;
  for (int j = 0; j < LAYOUT_RANK; j++) buf[j] = in->v[TO_NHWC[j]];
  out->v = buf;
}

/* Rebuilds U over NHWC operands; *out replaces U (NULL: U stays). */
static kiln_status sink_into(hlo_computation *c, const use_counts *uc, hlo_instr *u, hlo_instr **out) {
  *out = NULL;
  if (!sinkable_kind(u) || !order_preserved(u)) return NULL;
  if (u->op != HLO_OP_REDUCE && u->shape.rank != LAYOUT_RANK) return NULL;
  bool any = false;
  for (int k = 0; k < u->n_operands; k++) {
    hlo_instr *x = u->operands[k];
    if (!carries_dims(u, k)) {
      if (x->shape.rank != 0) return NULL;
      continue;
    }
    if (x->shape.rank != LAYOUT_RANK) return NULL;
    if (is_transpose_by(x, TO_NCHW)) {
      if (!users_absorb(c, uc, x)) return NULL;
      any = true;
    } else if (x->op != HLO_OP_CONSTANT && x->op != HLO_OP_BROADCAST) {
      return NULL;
    }
  }
  if (!any) return NULL;

  hlo_instr **ops = malloc((size_t)u->n_operands * sizeof *ops);
  if (!ops) abort();
  kiln_status st = NULL;
  for (int k = 0; k < u->n_operands && !st; k++) {
    ops[k] = u->operands[k];
    if (!carries_dims(u, k)) continue;
    st = nhwc_operand(c, u->operands[k], &ops[k]);
    if (!st && !ops[k]) st = status_error(KILN_INTERNAL, "conv-layout: %s: operand %d has no NHWC form", u->name, k);
  }
  hlo_instr tmpl = hlo_instr_template_from(u, ops);
  tmpl.shape.has_layout = false;
  int64_t b_dims[LAYOUT_RANK], b_lo[LAYOUT_RANK], b_hi[LAYOUT_RANK], b_in[LAYOUT_RANK], b_st[LAYOUT_RANK],
      b_li[LAYOUT_RANK], b_sd[LAYOUT_RANK];
  if (u->op != HLO_OP_REDUCE)
    for (int j = 0; j < LAYOUT_RANK; j++) tmpl.shape.dims[j] = u->shape.dims[TO_NHWC[j]];
  switch (u->op) {
    case HLO_OP_REDUCE: {
      int n = u->dimensions.n;
      for (int i = 0; i < n; i++) b_dims[i] = rename_dim(u->dimensions.v[i]);
      for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && b_dims[b] < b_dims[b - 1]; b--) {
          int64_t t = b_dims[b];
          b_dims[b] = b_dims[b - 1];
          b_dims[b - 1] = t;
        }
      tmpl.dimensions = (hlo_ints){n, b_dims};
      break;
    }
    case HLO_OP_REDUCE_WINDOW:
      for (int j = 0; j < LAYOUT_RANK; j++) tmpl.window.dims[j] = u->window.dims[TO_NHWC[j]];
      break;
    case HLO_OP_PAD:
      rename_per_dim(&u->pad_lo, b_lo, &tmpl.pad_lo);
      rename_per_dim(&u->pad_hi, b_hi, &tmpl.pad_hi);
      rename_per_dim(&u->pad_interior, b_in, &tmpl.pad_interior);
      break;
    case HLO_OP_SLICE:
      rename_per_dim(&u->slice_start, b_st, &tmpl.slice_start);
      rename_per_dim(&u->slice_limit, b_li, &tmpl.slice_limit);
      rename_per_dim(&u->slice_stride, b_sd, &tmpl.slice_stride);
      break;
    case HLO_OP_CONCATENATE:
      if (u->dimensions.n != 1) {
        st = st ? st : status_error(KILN_INTERNAL, "conv-layout: %s: concatenate without one dimension", u->name);
        break;
      }
      b_dims[0] = rename_dim(u->dimensions.v[0]);
      tmpl.dimensions = (hlo_ints){1, b_dims};
      break;
    default:
      break;
  }
  hlo_instr *nu = NULL;
  if (!st) st = built(hlo_build_instr(c, &tmpl, &nu), u);
  free(ops);
  TRY(st);

  /* Back to U's dimension order: TO_NCHW for same-rank ops; for reduce, the order
   * its kept dims had among U's operand dims. */
  int64_t back[LAYOUT_RANK];
  int rank = u->shape.rank;
  if (u->op == HLO_OP_REDUCE) {
    bool reduced[LAYOUT_RANK] = {false};
    for (int i = 0; i < u->dimensions.n; i++) reduced[u->dimensions.v[i]] = true;
    int r = 0;
    for (int d = 0; d < LAYOUT_RANK; d++) {
      if (reduced[d]) continue;
      int64_t j = rename_dim(d), pos = 0; /* nu dim holding NHWC dim j */
      for (int e = 0; e < j; e++)
        if (!reduced[TO_NHWC[e]]) pos++;
      back[r++] = pos;
    }
  } else {
    memcpy(back, TO_NCHW, sizeof back);
  }
  hlo_instr *res = nu;
  if (!is_identity(rank, back)) TRY(built(hlo_build_transpose(c, nu, back, &res), u));
  if (!shape_compatible(&res->shape, &u->shape)) return wrong_shape(u, res);
  *out = res;
  return NULL;
}

/* One pass over c in definition order; rebuilt instructions hand a transpose on to
 * their users, which come later in the same sweep. */
static kiln_status sink_sweep(hlo_computation *c, bool *changed) {
  use_counts uc;
  use_counts_build(c, &uc);
  int n = c->n_instrs;
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++) {
    hlo_instr *u = c->instrs[i];
    if (is_dead(c, &uc, u)) continue;
    hlo_instr *repl = NULL;
    st = sink_into(c, &uc, u, &repl);
    if (!st && repl && hlo_pass_replace_uses(c, u, repl) > 0) *changed = true;
  }
  free(uc.n);
  if (c->n_instrs != n) hlo_pass_restore_order(c);
  return st;
}

/* ------------------------------------------------------------------ step 3 */

/* A transpose that keeps every dimension of size > 1 in place relative to the others
 * moves no element in row-major order. */
static bool moves_only_unit_dims(const hlo_instr *t) {
  int64_t last = -1;
  const hlo_shape *s = &t->operands[0]->shape;
  for (int i = 0; i < t->dimensions.n; i++) {
    int64_t d = t->dimensions.v[i];
    if (s->dims[d] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

static kiln_status unit_transposes_to_reshapes(hlo_computation *c, bool *changed) {
  int n = c->n_instrs;
  for (int i = 0; i < n; i++) {
    hlo_instr *t = c->instrs[i], *r = NULL;
    if (t->op != HLO_OP_TRANSPOSE || !shape_is_array(&t->shape) || !moves_only_unit_dims(t)) continue;
    if (t != c->root && hlo_instr_count_users(t) == 0) continue;
    TRY(built(hlo_build_reshape(c, t->operands[0], t->shape.rank, t->shape.dims, &r), t));
    if (hlo_pass_replace_uses(c, t, r) > 0) *changed = true;
  }
  if (c->n_instrs != n) hlo_pass_restore_order(c);
  return NULL;
}

/* ------------------------------------------------------------------ driver */

kiln_status cpu_pass_conv_layout(hlo_module *m, bool *changed) {
  *changed = false;
  for (int ci = 0; ci < m->n_comps; ci++) {
    hlo_computation *c = m->comps[ci];
    if (c->is_fusion_computation) continue;
    int n = c->n_instrs, n_convs = 0;
    for (int i = 0; i < n; i++) n_convs += is_nchw_conv(c->instrs[i]);
    /* A lone convolution (op-by-op execution, a patch embedding) has no neighbour for
     * its transposes to cancel against, and oneDNN's own reorders beat them. */
    bool converted = false;
    for (int i = 0; i < n && n_convs > 1; i++) {
      hlo_instr *cv = c->instrs[i];
      if (!is_nchw_conv(cv) || (cv != c->root && hlo_instr_count_users(cv) == 0)) continue;
      TRY(relayout_conv(c, cv));
      converted = true;
    }
    if (converted) {
      hlo_pass_restore_order(c);
      *changed = true;
    }
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
      bool moved = false;
      TRY(sink_sweep(c, &moved));
      if (!moved) break;
      *changed = true;
    }
    TRY(unit_transposes_to_reshapes(c, changed));
  }
  return NULL;
}
