/* oneDNN matmul/convolution primitives for the cpu backend (see cpu_dnnl.h).
 *
 * An instruction is first turned into a plan: oneDNN memory descriptors that describe
 * kiln's row-major buffers as they are (strides, no copies), the convolution geometry,
 * and the epilogue as oneDNN post-ops. A dot becomes a matmul [batch..., M, K] x
 * [batch..., K, N] -> [batch..., M, N] where each oneDNN dim is a group of HLO dims
 * merged into one strided dim; a group that cannot be merged (its dims are not
 * consecutive in memory) makes the dot unsupported rather than copied (strides that
 * merge but that no matmul kernel reads are reordered, though). A convolution
 * maps its dimension numbers onto oneDNN's logical [N, C, spatial...] order, again by
 * strides; 1-D gets a unit height dim. A convolution with lhs dilation (a transposed
 * convolution) or a reversed window becomes a oneDNN deconvolution with the kernel
 * mirrored. Where oneDNN's fast kernels do not read kiln's layout (e.g. NCHW), the
 * activations are reordered to oneDNN's choice. The epilogue's other operands (bias,
 * residual, bounds) are described over the result's oneDNN dims with broadcast dims of
 * size 1; a per-channel add straight after the product becomes the primitive's own bias
 * (see absorb_bias).
 * Planning is pure analysis, so supports() and create() share it; supports() also
 * creates the primitive descriptor so that "yes" means oneDNN has an optimized
 * implementation for exactly this configuration. */
#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_patterns.h"
#include "backends/cpu/cpu_shared_constants.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/literal.h"
#include "hlo/passes/pass_util.h"
#include "hlo/shape.h"

#define MAX_POST_OPS 16

/* ------------------------------------------------------------------ engine */

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status;

static void engine_init(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

static kiln_status get_engine(const hlo_instr *ins) {
  pthread_once(&engine_once, engine_init);
  if (engine_status != dnnl_success)
    return status_error(KILN_INTERNAL, "cpu_dnnl: %s: cannot create the oneDNN CPU engine: %s", ins->name,
                        dnnl_status2str(engine_status));
  return NULL;
}

#define DNNL_TRY(ins, call)                                                                              \
  do {                                                                                                   \
    dnnl_status_t dnnl_s_ = (call);                                                                      \
    if (dnnl_s_ != dnnl_success)                                                                         \
      return status_error(KILN_INTERNAL, "cpu_dnnl: %s: %s failed: %s", (ins)->name, #call,              \
                          dnnl_status2str(dnnl_s_));                                                     \
  } while (0)

bool cpu_dnnl_int8_exact(void) {
  /* The VNNI bits of oneDNN's ISA masks: avx512_core_vnni (and bf16, amx) and avx2_vnni. */
  unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
  return (isa & 0x40u) || (isa & 0x400u);
}

static kiln_status unsupported(const hlo_instr *ins, const char *why) {
  return status_error(KILN_UNIMPLEMENTED, "cpu_dnnl: %s (%s) is not supported by oneDNN: %s", ins->name,
                      hlo_opcode_name(ins->op), why);
}

/* ------------------------------------------------------------------ plan */

/* Where a tensor's data comes from: the buffer of ins->operands[outer] at execute time,
 * or a constant captured at create time. */
typedef struct operand_ref {
  int outer;                   /* -1 for a constant */
  const hlo_literal *constant; /* non-NULL for a constant */
} operand_ref;

typedef struct post_op {
  bool binary;
  bool sum; /* "add the result buffer's old contents" (a residual computed in place) */
  dnnl_alg_kind_t alg;
  float alpha, beta;            /* eltwise parameters */
  operand_ref src1;             /* binary */
  dnnl_memory_desc_t src1_md;   /* binary: over the result's oneDNN dims */
} post_op;

/* A oneDNN dim as the list of HLO result dims it merges (empty: a unit dim). */
typedef struct dim_group {
  int n;
  int dims[HLO_MAX_RANK];
} dim_group;

typedef struct plan {
  const hlo_instr *core; /* the dot or convolution (inside the fusion for a fusion) */
  bool is_conv;
  bool softmax; /* a kCustom softmax fusion: src/dst only, src_md describes both */
  operand_ref src, wei;
  dnnl_memory_desc_t src_md, wei_md, dst_md; /* user (row-major buffer) layouts */
  int ndims;                                 /* oneDNN rank of the result */
  dim_group groups[DNNL_MAX_NDIMS];          /* result's oneDNN dims */
  dnnl_dims_t strides, dilates, pad_l, pad_r;
  /* A convolution with lhs dilation or window reversal runs as a oneDNN deconvolution,
   * which applies the kernel mirrored: kernel dims with wei_flip set are mirrored when
   * the weights are bound (the HLO kernel is row-major with dims wei_shape). */
  bool deconv;
  hlo_shape wei_shape;
  bool wei_flip[HLO_MAX_RANK];
  int n_post;
  post_op post[MAX_POST_OPS];
  /* The primitive's bias (absorb_bias); bias_md is zeroed when there is none. */
  bool has_bias;
  operand_ref bias;
  dnnl_memory_desc_t bias_md;
  /* One-element second operands of binary post-ops that stand in for repeated eltwise
   * post-ops (see split_repeated_eltwise). */
  int n_scalars;
  float scalars[MAX_POST_OPS];
  hlo_literal scalar_lits[MAX_POST_OPS];
  /* Element types of the product's operands and of the result: f32, or for an integer
   * product (cpu_quantize.c) u8/s8 activations, s8 weights and an f32, u8 or s8 result. */
  dnnl_data_type_t src_dt, wei_dt, dst_dt;
  int32_t src_zp;   /* the activation's zero point (oneDNN's source zero point) */
  int src_zp_outer; /* >= 0: the zero point is computed at run time, an s32 scalar operand */
  /* Strides of the product's operands over their dims: row-major, or permuted where
   * the operand is a transpose of the buffer read (an integer product's widening). */
  int64_t src_strides[HLO_MAX_RANK], wei_strides[HLO_MAX_RANK];
  /* Constant integer weights narrowed to s8 (owned; freed by plan_free). */
  hlo_literal wei_lit;
  int8_t *wei_s8;
  /* An integer product's rescale as oneDNN output scales (owned): n_scales values, one
   * per output channel (scales_mask selects the channel dim) or one in all. */
  int n_scales, scales_mask;
  float *scales;
} plan;

static void plan_free(plan *p) {
  if (!p) return;
  free(p->wei_s8);
  free(p->scales);
  free(p);
}

/* Merges dims (in order, outer to inner) into one strided dim. Unit dims never matter;
 * the others must be consecutive in memory. An all-unit list merges to size 1. */
static bool merge_dims(int n, const int64_t *size, const int64_t *stride, int64_t *msize, int64_t *mstride) {
  int64_t total = 1, last_stride = 1;
  int prev = -1;
  for (int i = 0; i < n; i++) {
    if (size[i] == 1) continue;
    if (prev >= 0 && stride[prev] != size[i] * stride[i]) return false;
    total *= size[i];
    last_stride = stride[i];
    prev = i;
  }
  *msize = total;
  *mstride = last_stride;
  return true;
}

/* Strides of unit dims are meaningless to the math but oneDNN recognizes plain layouts
 * by strides, so a unit dim gets the stride a dense layout would give it there. */
static void fix_unit_strides(int nd, const int64_t *dims, int64_t *strides) {
  for (int p = nd - 1; p >= 0; p--) {
    if (dims[p] != 1) continue;
    int64_t s = 1;
    for (int q = p + 1; q < nd; q++)
      if (strides[q] * dims[q] > s) s = strides[q] * dims[q];
    strides[p] = s;
  }
}

static kiln_status make_md_typed(const hlo_instr *ins, int nd, const int64_t *dims, int64_t *strides,
                                 dnnl_data_type_t dt, dnnl_memory_desc_t *md) {
  dnnl_dims_t d, s;
  fix_unit_strides(nd, dims, strides);
  for (int i = 0; i < nd; i++) {
    d[i] = dims[i];
    s[i] = strides[i];
  }
  DNNL_TRY(ins, dnnl_memory_desc_init_by_strides(md, nd, d, dt, s));
  return NULL;
}

static kiln_status make_md(const hlo_instr *ins, int nd, const int64_t *dims, int64_t *strides,
                           dnnl_memory_desc_t *md) {
  return make_md_typed(ins, nd, dims, strides, dnnl_f32, md);
}

/* A tensor seen over the HLO result dims: size[d] is the result's size or 1 where the
 * tensor is broadcast along d; stride[d] addresses its row-major buffer. Builds its
 * descriptor over the plan's oneDNN dims. */
static kiln_status view_md(const hlo_instr *ins, const plan *p, const int64_t *size, const int64_t *stride,
                           dnnl_memory_desc_t *md) {
  const hlo_shape *rs = &p->core->shape;
  int64_t dims[DNNL_MAX_NDIMS], strides[DNNL_MAX_NDIMS];
  for (int g = 0; g < p->ndims; g++) {
    const dim_group *grp = &p->groups[g];
    int64_t gs[HLO_MAX_RANK], gt[HLO_MAX_RANK];
    bool any_broadcast = false, any_present = false;
    for (int i = 0; i < grp->n; i++) {
      int d = grp->dims[i];
      gs[i] = size[d];
      gt[i] = stride[d];
      if (rs->dims[d] != 1) {
        if (size[d] == 1)
          any_broadcast = true;
        else
          any_present = true;
      }
    }
    if (any_broadcast && any_present)
      return unsupported(ins, "an epilogue operand is broadcast along only some of the dims oneDNN merges");
    if (!merge_dims(grp->n, gs, gt, &dims[g], &strides[g]))
      return unsupported(ins, "an epilogue operand's dims are not consecutive in memory where oneDNN merges them");
  }
  return make_md(ins, p->ndims, dims, strides, md);
}

/* Resolves a leaf inside the fused computation (or an operand of a plain instruction)
 * to an outer operand or a constant. */
static bool resolve_leaf(const hlo_instr *ins, const hlo_instr *leaf, operand_ref *ref) {
  ref->outer = -1;
  ref->constant = NULL;
  if (ins->op != HLO_OP_FUSION) {
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i] == leaf) {
        ref->outer = i;
        break;
      }
    if (ref->outer < 0) return false;
    if (leaf->op == HLO_OP_CONSTANT) ref->constant = leaf->literal;
  } else if (leaf->op == HLO_OP_PARAMETER) {
    int64_t k = leaf->parameter_number;
    if (k < 0 || k >= ins->n_operands) return false;
    ref->outer = (int)k;
    if (ins->operands[k]->op == HLO_OP_CONSTANT) ref->constant = ins->operands[k]->literal;
  } else if (leaf->op == HLO_OP_CONSTANT) {
    ref->constant = leaf->literal;
  } else {
    return false;
  }
  if (ref->constant) {
    ref->outer = -1;
    if (!ref->constant->data || ref->constant->shape.type != HLO_F32) return false;
  }
  return true;
}

static bool is_f32_array(const hlo_shape *s) { return s->type == HLO_F32 && s->rank >= 0 && s->n_elems == 0; }
static bool is_bf16_array(const hlo_shape *s) { return s->type == HLO_BF16 && s->rank >= 0 && s->n_elems == 0; }

/* ------------------------------------------------------------------ dot */

/* Merges batch dims [i, j) of a dot in both operands (they have equal sizes). */
static bool merge_batch(const hlo_dot_dnums *dn, const hlo_shape *ls, const int64_t *lst, const int64_t *rst, int i,
                        int j, int64_t *size, int64_t *lstride, int64_t *rstride) {
  int64_t sz[HLO_MAX_RANK], lt[HLO_MAX_RANK], rt[HLO_MAX_RANK], unused;
  for (int k = i; k < j; k++) {
    sz[k - i] = ls->dims[dn->lhs_batch.v[k]];
    lt[k - i] = lst[dn->lhs_batch.v[k]];
    rt[k - i] = rst[dn->rhs_batch.v[k]];
  }
  return merge_dims(j - i, sz, lt, size, lstride) && merge_dims(j - i, sz, rt, &unused, rstride);
}

static kiln_status plan_dot(const hlo_instr *ins, plan *p) {
  const hlo_instr *dot = p->core;
  const hlo_dot_dnums *dn = &dot->dot;
  const hlo_shape *ls = &dot->operands[0]->shape, *rs = &dot->operands[1]->shape, *os = &dot->shape;
  int64_t lst[HLO_MAX_RANK], rst[HLO_MAX_RANK], ost[HLO_MAX_RANK];
  memcpy(lst, p->src_strides, sizeof lst);
  memcpy(rst, p->wei_strides, sizeof rst);
  shape_strides(os, ost);
  int nb = dn->lhs_batch.n, nc = dn->lhs_contracting.n;
  if (dn->rhs_batch.n != nb || dn->rhs_contracting.n != nc)
    return unsupported(ins, "inconsistent dot dimension numbers");
  bool lused[HLO_MAX_RANK] = {false}, rused[HLO_MAX_RANK] = {false};
  for (int i = 0; i < nb; i++) lused[dn->lhs_batch.v[i]] = rused[dn->rhs_batch.v[i]] = true;
  for (int i = 0; i < nc; i++) lused[dn->lhs_contracting.v[i]] = rused[dn->rhs_contracting.v[i]] = true;
  int lfree[HLO_MAX_RANK], rfree[HLO_MAX_RANK], nlf = 0, nrf = 0;
  for (int d = 0; d < ls->rank; d++)
    if (!lused[d]) lfree[nlf++] = d;
  for (int d = 0; d < rs->rank; d++)
    if (!rused[d]) rfree[nrf++] = d;
  if (nb + nlf + nrf != os->rank) return unsupported(ins, "dot result rank does not match its dimension numbers");

  int64_t sd[DNNL_MAX_NDIMS], ss[DNNL_MAX_NDIMS], wd[DNNL_MAX_NDIMS], ws[DNNL_MAX_NDIMS];
  int64_t dd[DNNL_MAX_NDIMS], ds[DNNL_MAX_NDIMS];
  int nd = 0;
  /* Batch dims: greedily merge neighbours that are consecutive in both operands. */
  for (int i = 0; i < nb;) {
    int64_t m, lstride, rstride;
    int j = i + 1;
    while (j < nb && merge_batch(dn, ls, lst, rst, i, j + 1, &m, &lstride, &rstride)) j++;
    merge_batch(dn, ls, lst, rst, i, j, &m, &lstride, &rstride);
    if (nd >= DNNL_MAX_NDIMS - 2) return unsupported(ins, "too many unmergeable batch dims");
    dim_group *g = &p->groups[nd];
    g->n = 0;
    for (int k = i; k < j; k++) g->dims[g->n++] = k;
    sd[nd] = wd[nd] = m;
    ss[nd] = lstride;
    ws[nd] = rstride;
    nd++;
    i = j;
  }
  int64_t lsz[HLO_MAX_RANK], lstd[HLO_MAX_RANK], rsz[HLO_MAX_RANK], rstd[HLO_MAX_RANK];
  int64_t M, N, K, sM, sK, wK, wN, tmp;
  for (int k = 0; k < nlf; k++) lsz[k] = ls->dims[lfree[k]], lstd[k] = lst[lfree[k]];
  if (!merge_dims(nlf, lsz, lstd, &M, &sM)) return unsupported(ins, "the lhs free dims are not consecutive in memory");
  for (int k = 0; k < nrf; k++) rsz[k] = rs->dims[rfree[k]], rstd[k] = rst[rfree[k]];
  if (!merge_dims(nrf, rsz, rstd, &N, &wN)) return unsupported(ins, "the rhs free dims are not consecutive in memory");
  /* Contracting pairs can be taken in any order; outermost in the lhs first. */
  int order[HLO_MAX_RANK];
  for (int k = 0; k < nc; k++) order[k] = k;
  for (int a = 1; a < nc; a++)
    for (int b = a; b > 0 && lst[dn->lhs_contracting.v[order[b]]] > lst[dn->lhs_contracting.v[order[b - 1]]]; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  for (int k = 0; k < nc; k++) {
    int64_t ld = dn->lhs_contracting.v[order[k]], rd = dn->rhs_contracting.v[order[k]];
    lsz[k] = ls->dims[ld], lstd[k] = lst[ld];
    rsz[k] = rs->dims[rd], rstd[k] = rst[rd];
  }
  if (!merge_dims(nc, lsz, lstd, &K, &sK) || !merge_dims(nc, rsz, rstd, &tmp, &wK))
    return unsupported(ins, "the contracting dims are not consecutive in memory in the same order in both operands");

  dim_group *gm = &p->groups[nd], *gn = &p->groups[nd + 1];
  gm->n = gn->n = 0;
  for (int k = 0; k < nlf; k++) gm->dims[gm->n++] = nb + k;
  for (int k = 0; k < nrf; k++) gn->dims[gn->n++] = nb + nlf + k;
  sd[nd] = M, ss[nd] = sM, sd[nd + 1] = K, ss[nd + 1] = sK;
  wd[nd] = K, ws[nd] = wK, wd[nd + 1] = N, ws[nd + 1] = wN;
  p->ndims = nd + 2;
  for (int g = 0; g < p->ndims; g++) {
    const dim_group *grp = &p->groups[g];
    int64_t gs[HLO_MAX_RANK], gt[HLO_MAX_RANK];
    for (int i = 0; i < grp->n; i++) gs[i] = os->dims[grp->dims[i]], gt[i] = ost[grp->dims[i]];
    merge_dims(grp->n, gs, gt, &dd[g], &ds[g]); /* the result is row-major: always merges */
  }
  TRY(make_md_typed(ins, p->ndims, sd, ss, p->src_dt, &p->src_md));
  TRY(make_md_typed(ins, p->ndims, wd, ws, p->wei_dt, &p->wei_md));
  TRY(make_md_typed(ins, p->ndims, dd, ds, p->dst_dt, &p->dst_md));
  return NULL;
}

/* ------------------------------------------------------------------ convolution */

static kiln_status plan_conv(const hlo_instr *ins, plan *p) {
  const hlo_instr *cv = p->core;
  const hlo_conv_dnums *cd = &cv->conv;
  const hlo_shape *xs = &cv->operands[0]->shape, *ks = &cv->operands[1]->shape, *os = &cv->shape;
  int ns = cd->n_spatial;
  if (!cv->has_conv_dnums) return unsupported(ins, "convolution without dim_labels");
  if (ns < 1 || ns > 3) return unsupported(ins, "only 1-, 2- and 3-D convolutions");
  if (xs->rank != ns + 2 || ks->rank != ns + 2 || os->rank != ns + 2 || cv->window.rank != ns)
    return unsupported(ins, "convolution ranks disagree with its dim_labels/window");
  if (cv->batch_group_count != 1) return unsupported(ins, "batch_group_count != 1");
  int64_t G = cv->feature_group_count;
  int64_t C = xs->dims[cd->input_feature], O = ks->dims[cd->kernel_output_feature];
  int64_t I = ks->dims[cd->kernel_input_feature];
  if (G < 1 || C % G != 0 || O % G != 0 || I != C / G) return unsupported(ins, "inconsistent feature_group_count");
  for (int s = 0; s < ns; s++) {
    const hlo_window_dim *w = &cv->window.dims[s];
    if (w->pad_lo < 0 || w->pad_hi < 0) return unsupported(ins, "negative padding");
    if (w->stride < 1 || w->rhs_dilate < 1 || w->lhs_dilate < 1)
      return unsupported(ins, "invalid window stride or dilation");
    if (w->lhs_dilate > 1 || w->reversal) p->deconv = true;
  }
  p->wei_shape = *ks;
  for (int s = 0; s < ns && p->deconv; s++) {
    const hlo_window_dim *w = &cv->window.dims[s];
    /* out[p] sums x[i] * w[q] over p = i*L + pad_lo - q*d (window stride 1). oneDNN's
     * deconvolution sums src[i] * w'[j] over p = i*S + j*d - pad_l', so S = L, j = k-1-q
     * (w' is w mirrored, or w itself when the window is already reversed) and
     * pad_l' = (k-1)*d - pad_lo; likewise pad_r' = (k-1)*d - pad_hi. */
    if (w->stride != 1) return unsupported(ins, "lhs dilation or window reversal with a window stride");
    int64_t extent = (w->size - 1) * w->rhs_dilate;
    if (w->pad_lo > extent || w->pad_hi > extent)
      return unsupported(ins, "lhs dilation with padding beyond the dilated kernel");
    p->wei_flip[cd->kernel_spatial[s]] = !w->reversal;
  }
  int64_t xst[HLO_MAX_RANK], kst[HLO_MAX_RANK], ost[HLO_MAX_RANK];
  memcpy(xst, p->src_strides, sizeof xst);
  memcpy(kst, p->wei_strides, sizeof kst);
  shape_strides(os, ost);
  /* oneDNN spatial dims; 1-D gets a leading unit dim (height). */
  int unit = ns == 1 ? 1 : 0, dns = ns + unit;
  p->ndims = dns + 2;
  int64_t sd[DNNL_MAX_NDIMS], ss[DNNL_MAX_NDIMS], dd[DNNL_MAX_NDIMS], ds[DNNL_MAX_NDIMS];
  int64_t wd[DNNL_MAX_NDIMS], ws[DNNL_MAX_NDIMS];
  sd[0] = xs->dims[cd->input_batch], ss[0] = xst[cd->input_batch];
  sd[1] = C, ss[1] = xst[cd->input_feature];
  dd[0] = os->dims[cd->output_batch], ds[0] = ost[cd->output_batch];
  dd[1] = os->dims[cd->output_feature], ds[1] = ost[cd->output_feature];
  p->groups[0].n = 1, p->groups[0].dims[0] = (int)cd->output_batch;
  p->groups[1].n = 1, p->groups[1].dims[0] = (int)cd->output_feature;
  int wo = 0; /* weights: [G,] O/G, I, spatial... */
  if (G > 1) wd[wo] = G, ws[wo] = (O / G) * kst[cd->kernel_output_feature], wo++;
  wd[wo] = O / G, ws[wo] = kst[cd->kernel_output_feature], wo++;
  wd[wo] = I, ws[wo] = kst[cd->kernel_input_feature], wo++;
  if (unit) {
    sd[2] = dd[2] = wd[wo] = 1;
    ss[2] = ds[2] = ws[wo] = 1; /* fixed up by make_md */
    p->groups[2].n = 0;
    p->strides[0] = 1, p->dilates[0] = 0, p->pad_l[0] = p->pad_r[0] = 0;
    wo++;
  }
  for (int s = 0; s < ns; s++) {
    const hlo_window_dim *w = &cv->window.dims[s];
    int k = 2 + unit + s;
    sd[k] = xs->dims[cd->input_spatial[s]], ss[k] = xst[cd->input_spatial[s]];
    dd[k] = os->dims[cd->output_spatial[s]], ds[k] = ost[cd->output_spatial[s]];
    wd[wo] = ks->dims[cd->kernel_spatial[s]], ws[wo] = kst[cd->kernel_spatial[s]], wo++;
    p->groups[k].n = 1, p->groups[k].dims[0] = (int)cd->output_spatial[s];
    int64_t extent = (w->size - 1) * w->rhs_dilate;
    p->strides[unit + s] = p->deconv ? w->lhs_dilate : w->stride;
    p->dilates[unit + s] = w->rhs_dilate - 1;
    p->pad_l[unit + s] = p->deconv ? extent - w->pad_lo : w->pad_lo;
    p->pad_r[unit + s] = p->deconv ? extent - w->pad_hi : w->pad_hi;
  }
  TRY(make_md_typed(ins, p->ndims, sd, ss, p->src_dt, &p->src_md));
  TRY(make_md_typed(ins, wo, wd, ws, p->wei_dt, &p->wei_md));
  TRY(make_md_typed(ins, p->ndims, dd, ds, p->dst_dt, &p->dst_md));
  return NULL;
}

/* ------------------------------------------------------------------ epilogue */

static bool is_core(const hlo_instr *x) { return x->op == HLO_OP_DOT || x->op == HLO_OP_CONVOLUTION; }

static bool is_chain_op(const hlo_instr *x) {
  switch (x->op) {
    case HLO_OP_ADD:
    case HLO_OP_SUBTRACT:
    case HLO_OP_MULTIPLY:
    case HLO_OP_MAXIMUM:
    case HLO_OP_MINIMUM:
    case HLO_OP_CLAMP:
    case HLO_OP_LOGISTIC:
    case HLO_OP_DIVIDE:             /* an integer product's requantization (x / scale) */
    case HLO_OP_ROUND_NEAREST_EVEN: /* ... rounded */
    case HLO_OP_CONVERT:            /* its result to f32, and the requantized value to 8 bits */
      return true;
    default:
      return false;
  }
}

/* An epilogue operand: a tensor over the result dims (parameter, constant or a
 * broadcast of one) or, when it holds a single value known now, that scalar. */
typedef struct leaf {
  bool is_scalar;
  float scalar;
  operand_ref ref;
  int64_t size[HLO_MAX_RANK], stride[HLO_MAX_RANK];
} leaf;

static kiln_status analyze_leaf(const hlo_instr *ins, const plan *p, const hlo_instr *x, leaf *out) {
  const hlo_shape *rs = &p->core->shape;
  const hlo_instr *src = x;
  memset(out, 0, sizeof *out);
  if (x->op == HLO_OP_BROADCAST) src = x->operands[0];
  if (!resolve_leaf(ins, src, &out->ref) || !is_f32_array(&src->shape))
    return unsupported(ins, "an epilogue operand is not an f32 parameter, constant or broadcast of one");
  if (out->ref.constant && out->ref.constant->n == 1) {
    out->is_scalar = true;
    out->scalar = ((const float *)out->ref.constant->data)[0];
    return NULL;
  }
  int64_t st[HLO_MAX_RANK];
  shape_strides(&src->shape, st);
  for (int d = 0; d < rs->rank; d++) out->size[d] = 1, out->stride[d] = 0;
  if (src->shape.rank == 0) return NULL; /* a scalar operand of clamp: broadcast everywhere */
  if (x->op == HLO_OP_BROADCAST) {
    if (x->dimensions.n != src->shape.rank) return unsupported(ins, "malformed broadcast in the epilogue");
    for (int i = 0; i < src->shape.rank; i++) {
      int64_t d = x->dimensions.v[i];
      if (d < 0 || d >= rs->rank || src->shape.dims[i] != rs->dims[d])
        return unsupported(ins, "malformed broadcast in the epilogue");
      out->size[d] = src->shape.dims[i];
      out->stride[d] = st[i];
    }
    return NULL;
  }
  if (!shape_same_dims(&src->shape, rs))
    return unsupported(ins, "an epilogue operand's shape differs from the result's");
  for (int d = 0; d < rs->rank; d++) out->size[d] = rs->dims[d], out->stride[d] = st[d];
  return NULL;
}

static kiln_status add_eltwise(const hlo_instr *ins, plan *p, dnnl_alg_kind_t alg, float alpha, float beta) {
  if (p->n_post >= MAX_POST_OPS) return unsupported(ins, "too many epilogue operations");
  post_op *po = &p->post[p->n_post++];
  memset(po, 0, sizeof *po);
  po->alg = alg;
  po->alpha = alpha;
  po->beta = beta;
  return NULL;
}

static kiln_status add_binary(const hlo_instr *ins, plan *p, dnnl_alg_kind_t alg, const leaf *l) {
  if (p->n_post >= MAX_POST_OPS) return unsupported(ins, "too many epilogue operations");
  post_op *po = &p->post[p->n_post];
  memset(po, 0, sizeof *po);
  po->binary = true;
  po->alg = alg;
  po->src1 = l->ref;
  TRY(view_md(ins, p, l->size, l->stride, &po->src1_md));
  p->n_post++;
  return NULL;
}

/* max(x, lo) and min(x, hi) as clips: oneDNN's relu would give -0 for negative x where
 * maximum(x, 0) gives +0. Infinite bounds make a one-sided clip. */
/* The previous post-op when it is a clip, which a scalar max/min folds into:
 * max(clip(x, a, b), l) = clip(x, max(a, l), max(b, l)) and min(clip(x, a, b), h) =
 * clip(x, min(a, h), min(b, h)), so max(x, 0) then min(., 6) is one clip(0, 6). Two
 * consecutive clip post-ops lose the second one in oneDNN 2.6's 1x1 convolution kernels
 * (MobileNet's relu6 came out unbounded), and one clip is cheaper anyway. */
static post_op *last_clip(plan *p) {
  if (p->n_post == 0) return NULL;
  post_op *po = &p->post[p->n_post - 1];
  return !po->binary && po->alg == dnnl_eltwise_clip ? po : NULL;
}

static kiln_status add_max(const hlo_instr *ins, plan *p, const leaf *l) {
  if (!l->is_scalar) return add_binary(ins, p, dnnl_binary_max, l);
  post_op *c = last_clip(p);
  if (!c) return add_eltwise(ins, p, dnnl_eltwise_clip, l->scalar, FLT_MAX);
  c->alpha = fmaxf(c->alpha, l->scalar);
  c->beta = fmaxf(c->beta, l->scalar);
  return NULL;
}

static kiln_status add_min(const hlo_instr *ins, plan *p, const leaf *l) {
  if (!l->is_scalar) return add_binary(ins, p, dnnl_binary_min, l);
  post_op *c = last_clip(p);
  if (!c) return add_eltwise(ins, p, dnnl_eltwise_clip, -FLT_MAX, l->scalar);
  c->alpha = fminf(c->alpha, l->scalar);
  c->beta = fminf(c->beta, l->scalar);
  return NULL;
}

/* For an activation's final multiply (cpu_match_activation): the activated value;
 * else NULL. */
static const hlo_instr *activation_input(const hlo_instr *x, cpu_activation *kind) {
  const hlo_instr *v = NULL, *inner[CPU_ACTIVATION_MAX_INNER];
  int n = 0;
  *kind = cpu_match_activation(x, &v, inner, &n);
  return *kind == CPU_ACTIVATION_NONE ? NULL : v;
}

static kiln_status add_scalar_binary(const hlo_instr *ins, plan *p, dnnl_alg_kind_t alg, float v);

/* One epilogue instruction X whose chain operand is operand CHAIN_IDX. */
static kiln_status add_post(const hlo_instr *ins, plan *p, const hlo_instr *x, int chain_idx) {
  leaf a, b;
  if (x->op == HLO_OP_LOGISTIC) return add_eltwise(ins, p, dnnl_eltwise_logistic, 0.0f, 0.0f);
  /* oneDNN's round is half to even, as round-nearest-even. */
  if (x->op == HLO_OP_ROUND_NEAREST_EVEN) return add_eltwise(ins, p, dnnl_eltwise_round, 0.0f, 0.0f);
  if (x->op == HLO_OP_CONVERT) return NULL; /* checked by quantized_chain: no arithmetic */
  cpu_activation act;
  if (activation_input(x, &act))
    return add_eltwise(ins, p,
                       act == CPU_ACTIVATION_SWISH       ? dnnl_eltwise_swish
                       : act == CPU_ACTIVATION_HARDSWISH ? dnnl_eltwise_hardswish
                                                         : dnnl_eltwise_gelu_erf,
                       act == CPU_ACTIVATION_SWISH ? 1.0f : 0.0f, 0.0f);
  if (x->op == HLO_OP_CLAMP) {
    TRY(analyze_leaf(ins, p, x->operands[0], &a));
    TRY(analyze_leaf(ins, p, x->operands[2], &b));
    if (a.is_scalar && b.is_scalar && a.scalar <= b.scalar)
      return add_eltwise(ins, p, dnnl_eltwise_clip, a.scalar, b.scalar);
    TRY(add_max(ins, p, &a));
    return add_min(ins, p, &b);
  }
  TRY(analyze_leaf(ins, p, x->operands[1 - chain_idx], &a));
  /* Linear's beta = -0 leaves every x (also -0) unchanged: x * 1 + -0 == x. */
  switch (x->op) {
    case HLO_OP_ADD:
      if (a.is_scalar) return add_eltwise(ins, p, dnnl_eltwise_linear, 1.0f, a.scalar);
      return add_binary(ins, p, dnnl_binary_add, &a);
    case HLO_OP_MULTIPLY:
      if (a.is_scalar) return add_eltwise(ins, p, dnnl_eltwise_linear, a.scalar, -0.0f);
      return add_binary(ins, p, dnnl_binary_mul, &a);
    case HLO_OP_SUBTRACT:
      if (chain_idx == 0) {
        if (a.is_scalar) return add_eltwise(ins, p, dnnl_eltwise_linear, 1.0f, -a.scalar);
        return add_binary(ins, p, dnnl_binary_sub, &a);
      }
      /* a - x == (-x) + a exactly. */
      if (a.is_scalar) return add_eltwise(ins, p, dnnl_eltwise_linear, -1.0f, a.scalar);
      TRY(add_eltwise(ins, p, dnnl_eltwise_linear, -1.0f, -0.0f));
      return add_binary(ins, p, dnnl_binary_add, &a);
    case HLO_OP_MAXIMUM:
      return add_max(ins, p, &a);
    case HLO_OP_MINIMUM:
      return add_min(ins, p, &a);
    case HLO_OP_DIVIDE: /* a true division, not a multiply by the reciprocal */
      if (chain_idx != 0) return unsupported(ins, "an epilogue divides by the computed value");
      if (a.is_scalar) return add_scalar_binary(ins, p, dnnl_binary_div, a.scalar);
      return add_binary(ins, p, dnnl_binary_div, &a);
    default:
      return unsupported(ins, "unexpected epilogue operation");
  }
}

/* Walks a kOutput fusion's root down to its dot/convolution; the epilogue is applied
 * bottom-up, so the chain is collected first. */
static kiln_status plan_fusion_chain(const hlo_instr *ins, const hlo_instr **core, const hlo_instr **chain,
                                     int *chain_idx, int *n_chain) {
  if (!ins->fusion_kind || strcmp(ins->fusion_kind, "kOutput") != 0)
    return unsupported(ins, "only kOutput fusions");
  if (ins->n_called != 1 || !ins->called[0] || !ins->called[0]->root)
    return unsupported(ins, "fusion without a fused computation");
  const hlo_instr *x = ins->called[0]->root;
  *n_chain = 0;
  while (!is_core(x)) {
    if (!is_chain_op(x))
      return unsupported(ins, "the fused computation is not a dot/convolution with an elementwise epilogue");
    if (*n_chain >= MAX_POST_OPS) return unsupported(ins, "too many epilogue operations");
    cpu_activation act;
    const hlo_instr *act_in = activation_input(x, &act), *next;
    int ci = 0; /* the chain operand; add_post does not use it for activations */
    bool unary = x->op == HLO_OP_LOGISTIC || x->op == HLO_OP_ROUND_NEAREST_EVEN || x->op == HLO_OP_CONVERT;
    if (act_in || unary) {
      if (unary && x->n_operands != 1) return unsupported(ins, "malformed epilogue operation");
      next = act_in ? act_in : x->operands[0];
      if (!is_core(next) && !is_chain_op(next))
        return unsupported(ins, "an epilogue operation does not use the dot/convolution result");
    } else {
      if (x->n_operands != (x->op == HLO_OP_CLAMP ? 3 : 2)) return unsupported(ins, "malformed epilogue operation");
      ci = -1;
      int candidates[2] = {0, 1}, nc = 2;
      if (x->op == HLO_OP_CLAMP) candidates[0] = 1, nc = 1;
      for (int k = 0; k < nc; k++) {
        const hlo_instr *o = x->operands[candidates[k]];
        if (is_core(o) || is_chain_op(o)) {
          if (ci >= 0) return unsupported(ins, "an epilogue operation combines two computed values");
          ci = candidates[k];
        }
      }
      if (ci < 0) return unsupported(ins, "an epilogue operation does not use the dot/convolution result");
      if (x->op == HLO_OP_CLAMP && (is_chain_op(x->operands[0]) || is_chain_op(x->operands[2]) ||
                                    is_core(x->operands[0]) || is_core(x->operands[2])))
        return unsupported(ins, "clamp bounds are computed values");
      next = x->operands[ci];
    }
    bool requantized = x == ins->called[0]->root && x->op == HLO_OP_CONVERT &&
                       (x->shape.type == HLO_U8 || x->shape.type == HLO_S8);
    bool int_bias = x->op == HLO_OP_ADD && x->shape.type == HLO_S32 && is_core(next);
    if (!shape_same_dims(&x->shape, &ins->shape) || (x->shape.type != HLO_F32 && !requantized && !int_bias))
      return unsupported(ins, "the epilogue changes shape or type");
    chain[*n_chain] = x;
    chain_idx[*n_chain] = ci;
    (*n_chain)++;
    x = next;
  }
  *core = x;
  return NULL;
}

/* Appends the binary post-op "result ALG= V" with V a one-element constant. */
static kiln_status add_scalar_binary(const hlo_instr *ins, plan *p, dnnl_alg_kind_t alg, float v) {
  if (p->n_scalars >= MAX_POST_OPS) return unsupported(ins, "too many epilogue operations");
  int k = p->n_scalars++;
  p->scalars[k] = v;
  hlo_literal *lit = &p->scalar_lits[k];
  memset(lit, 0, sizeof *lit);
  lit->shape.type = HLO_F32;
  lit->data = &p->scalars[k];
  lit->n = 1;
  leaf l;
  memset(&l, 0, sizeof l);
  l.ref.outer = -1;
  l.ref.constant = lit;
  for (int d = 0; d < p->core->shape.rank; d++) l.size[d] = 1;
  return add_binary(ins, p, alg, &l);
}

/* oneDNN 2.6's jit post-op injector keeps one eltwise injector per algorithm, built from
 * the first post-op of that algorithm: a later eltwise post-op of the same algorithm
 * silently runs with the first one's alpha and beta (hardsigmoid's "+3, clip, *1/6"
 * after a bias came out as clip(x + 3, 0, 6) + 3). So only the first post-op of each
 * eltwise algorithm stays eltwise; a repeat becomes binary post-ops with one-element
 * operands, which give the same values: linear(a, b) is multiply by a then add b (our
 * linears are a pure scale, a pure shift, or a negation then a shift, each exact in
 * either form), clip(lo, hi) is max with lo then min with hi. */
static kiln_status split_repeated_eltwise(const hlo_instr *ins, plan *p) {
  post_op old[MAX_POST_OPS];
  int n_old = p->n_post;
  memcpy(old, p->post, sizeof old[0] * (size_t)n_old);
  dnnl_alg_kind_t seen[MAX_POST_OPS];
  int n_seen = 0;
  p->n_post = 0;
  for (int i = 0; i < n_old; i++) {
    const post_op *po = &old[i];
    bool repeated = false;
    for (int k = 0; k < n_seen && !po->binary; k++) repeated = repeated || seen[k] == po->alg;
    if (!repeated) {
      if (p->n_post >= MAX_POST_OPS) return unsupported(ins, "too many epilogue operations");
      p->post[p->n_post++] = *po;
      if (!po->binary) seen[n_seen++] = po->alg;
      continue;
    }
    if (po->alg == dnnl_eltwise_linear) {
      if (po->alpha != 1.0f) TRY(add_scalar_binary(ins, p, dnnl_binary_mul, po->alpha));
      if (!(po->beta == 0.0f && signbit(po->beta))) TRY(add_scalar_binary(ins, p, dnnl_binary_add, po->beta));
    } else if (po->alg == dnnl_eltwise_clip) {
      if (po->alpha > -FLT_MAX) TRY(add_scalar_binary(ins, p, dnnl_binary_max, po->alpha));
      if (po->beta < FLT_MAX) TRY(add_scalar_binary(ins, p, dnnl_binary_min, po->beta));
    } else {
      return unsupported(ins, "an eltwise epilogue algorithm repeats");
    }
  }
  return NULL;
}

/* A first post-op that adds a per-output-channel vector (a convolution's output feature
 * dim, a matmul's N) is the primitive's bias instead: the same sum, acc + b in f32, but
 * applied as the accumulators are stored. As a binary post-op it cost oneDNN 2.6's
 * depthwise kernel half its time again ([1,112,112,32] 3x3: 0.051 -> 0.079 ms). */
static kiln_status absorb_bias(const hlo_instr *ins, plan *p) {
  if (p->n_post == 0 || !p->post[0].binary || p->post[0].alg != dnnl_binary_add) return NULL;
  const dnnl_memory_desc_t *v = &p->post[0].src1_md, *d = &p->dst_md;
  int channel = p->is_conv ? 1 : d->ndims - 1;
  for (int i = 0; i < d->ndims; i++)
    if (v->dims[i] != (i == channel ? d->dims[i] : 1)) return NULL;
  if (p->is_conv) {
    dnnl_dims_t dims = {d->dims[channel]}, strides = {v->format_desc.blocking.strides[channel]};
    DNNL_TRY(ins, dnnl_memory_desc_init_by_strides(&p->bias_md, 1, dims, dnnl_f32, strides));
  } else {
    p->bias_md = *v;
  }
  p->has_bias = true;
  p->bias = p->post[0].src1;
  p->n_post--;
  memmove(&p->post[0], &p->post[1], sizeof p->post[0] * (size_t)p->n_post);
  return NULL;
}

/* A kCustom fusion holding a softmax over the minor dimension of its one parameter
 * (formed by the fusion pass): oneDNN's softmax primitive over the row-major buffer. */
static kiln_status plan_softmax(const hlo_instr *ins, plan *p) {
  const hlo_instr *x = NULL, *inner[CPU_SOFTMAX_INNER];
  if (ins->n_called != 1 || !ins->called[0] || !ins->called[0]->root ||
      !cpu_match_softmax(ins->called[0]->root, &x, inner))
    return unsupported(ins, "a kCustom fusion that is not a softmax");
  if (!resolve_leaf(ins, x, &p->src) || p->src.constant)
    return unsupported(ins, "the softmax input is not a fusion parameter");
  if (ins->shape.rank > DNNL_MAX_NDIMS || shape_elements(&ins->shape) <= 0 || !is_f32_array(&ins->shape))
    return unsupported(ins, "softmax rank, size or type");
  p->softmax = true;
  p->ndims = ins->shape.rank;
  int64_t strides[HLO_MAX_RANK];
  shape_strides(&ins->shape, strides);
  TRY(make_md(ins, p->ndims, ins->shape.dims, strides, &p->src_md));
  p->dst_md = p->src_md;
  return NULL;
}

static dnnl_data_type_t dnnl_type_of(hlo_type t) {
  return t == HLO_U8 ? dnnl_u8 : t == HLO_S8 ? dnnl_s8 : t == HLO_S32 ? dnnl_s32 : dnnl_f32;
}

/* The value an integer product's operand X was widened from (cpu_quantize.c; the fusion
 * pass groups the widening with the product): from X down, at most one transpose, then
 * reshapes, a subtract of a broadcast scalar constant (the zero point, ZP non-NULL:
 * activations only) and a convert from u8/s8, ending at a fusion parameter or constant.
 * A constant s32 operand (the weights, their widening folded) is taken when every value
 * fits s8 and narrowed into p->wei_s8. Sets REF, *DT and STRIDES (X's dims over the
 * buffer read). */
static kiln_status resolve_widened(const hlo_instr *ins, plan *p, const hlo_instr *x, int32_t *zp, operand_ref *ref,
                                   dnnl_data_type_t *dt, int64_t *strides) {
  const hlo_instr *t = NULL, *v = x;
  bool widened = false;
  if (zp) *zp = 0;
  if (v->op == HLO_OP_TRANSPOSE) t = v, v = v->operands[0];
  for (;;) {
    if (v->op == HLO_OP_RESHAPE || (v->op == HLO_OP_BITCAST && v->operands[0]->shape.type == v->shape.type)) {
      v = v->operands[0];
    } else if (v->op == HLO_OP_SUBTRACT && zp && !widened && v->operands[1]->op == HLO_OP_BROADCAST &&
               v->operands[1]->operands[0]->op == HLO_OP_CONSTANT && v->operands[1]->operands[0]->shape.rank == 0 &&
               v->operands[1]->operands[0]->literal) {
      int64_t z = literal_get_s64(v->operands[1]->operands[0]->literal, 0);
      if (*zp != 0 || p->src_zp_outer >= 0 || z < INT32_MIN || z > INT32_MAX)
        return unsupported(ins, "an unexpected zero point");
      *zp = (int32_t)z;
      v = v->operands[0];
    } else if (v->op == HLO_OP_SUBTRACT && zp && !widened && v->operands[1]->op == HLO_OP_BROADCAST &&
               v->operands[1]->operands[0]->op == HLO_OP_PARAMETER && ins->op == HLO_OP_FUSION &&
               v->operands[1]->operands[0]->shape.rank == 0 && v->operands[1]->operands[0]->shape.type == HLO_S32) {
      /* A zero point computed at run time (DynamicQuantizeLinear's): oneDNN takes it as
       * a runtime source zero point, read from the operand's buffer on each execute. */
      int64_t k = v->operands[1]->operands[0]->parameter_number;
      if (*zp != 0 || p->src_zp_outer >= 0 || k < 0 || k >= ins->n_operands)
        return unsupported(ins, "an unexpected zero point");
      p->src_zp_outer = (int)k;
      v = v->operands[0];
    } else if (v->op == HLO_OP_CONVERT && !widened && (v->operands[0]->shape.type == HLO_U8 ||
                                                        v->operands[0]->shape.type == HLO_S8)) {
      widened = true;
      v = v->operands[0];
    } else {
      break;
    }
  }
  ref->outer = -1;
  ref->constant = NULL;
  const hlo_instr *leaf = v;
  if (ins->op == HLO_OP_FUSION && v->op == HLO_OP_PARAMETER) {
    int64_t k = v->parameter_number;
    if (k < 0 || k >= ins->n_operands) return unsupported(ins, "a malformed fusion parameter");
    ref->outer = (int)k;
    leaf = ins->operands[k];
  } else if (ins->op != HLO_OP_FUSION || v->op != HLO_OP_CONSTANT) {
    return unsupported(ins, "an integer product's operand is not a widened 8-bit parameter or constant");
  }
  if (leaf->op == HLO_OP_CONSTANT) {
    if (!leaf->literal || !leaf->literal->data) return unsupported(ins, "a constant without data");
    ref->outer = -1;
    ref->constant = leaf->literal;
  }
  hlo_type lt = v->shape.type;
  if (!widened) {
    /* A folded widening: s32 weights whose values all fit s8. */
    if (zp || !ref->constant || lt != HLO_S32) return unsupported(ins, "an integer product's operand is not 8-bit");
    const int32_t *w = ref->constant->data;
    int64_t n = ref->constant->n;
    for (int64_t i = 0; i < n; i++)
      if (w[i] < -128 || w[i] > 127) return unsupported(ins, "integer weights outside s8");
    p->wei_s8 = malloc((size_t)(n > 0 ? n : 1));
    if (!p->wei_s8) return status_error(KILN_RESOURCE_EXHAUSTED, "cpu_dnnl: %s: out of memory", ins->name);
    for (int64_t i = 0; i < n; i++) p->wei_s8[i] = (int8_t)w[i];
    p->wei_lit = *ref->constant;
    p->wei_lit.shape.type = HLO_S8;
    p->wei_lit.data = p->wei_s8;
    ref->constant = &p->wei_lit;
    lt = HLO_S8;
  }
  *dt = dnnl_type_of(lt);
  /* Reshapes keep the row-major order; a transpose permutes its operand's strides. */
  if (t) {
    int64_t in[HLO_MAX_RANK];
    shape_strides(&t->operands[0]->shape, in);
    for (int d = 0; d < t->shape.rank; d++) strides[d] = in[t->dimensions.v[d]];
  } else {
    shape_strides(&x->shape, strides);
  }
  return NULL;
}

/* An epilogue ending in a convert to 8 bits must have made the value an integer in
 * range first (oneDNN's conversion rounds and saturates where HLO's truncates): from
 * the root down, a clamp to scalar integer bounds within the type, optionally an add of
 * a scalar integer (the zero point), then a round-nearest-even. */
static bool requantization_exact(const hlo_instr *ins, const hlo_instr *const *chain, int n_chain) {
  if (n_chain == 0 || chain[0]->op != HLO_OP_CONVERT || chain[0] != ins->called[0]->root) return true;
  double lo = chain[0]->shape.type == HLO_U8 ? 0 : -128, hi = chain[0]->shape.type == HLO_U8 ? 255 : 127;
  int k = 1;
  if (k >= n_chain || chain[k]->op != HLO_OP_CLAMP) return false;
  for (int b = 0; b < 3; b += 2) {
    const hlo_instr *c = chain[k]->operands[b];
    if (c->op == HLO_OP_BROADCAST) c = c->operands[0];
    if (c->op != HLO_OP_CONSTANT || c->shape.rank != 0 || !c->literal) return false;
    double v = literal_get_f64(c->literal, 0);
    if (v != floor(v) || v < lo || v > hi) return false;
  }
  k++;
  if (k + 1 < n_chain && chain[k]->op == HLO_OP_ADD) {
    /* chain[k + 1] is the value the add applies to */
    const hlo_instr *a = chain[k]->operands[chain[k]->operands[0] == chain[k + 1] ? 1 : 0];
    if (a->op == HLO_OP_BROADCAST) a = a->operands[0];
    if (a->op != HLO_OP_CONSTANT || a->shape.rank != 0 || !a->literal) return false;
    double v = literal_get_f64(a->literal, 0);
    if (v != floor(v) || fabs(v) > 65536) return false;
    k++;
  }
  return k < n_chain && chain[k]->op == HLO_OP_ROUND_NEAREST_EVEN;
}

/* An int32 bias on the accumulators: broadcast(v) of a per-output-channel vector v (a
 * fusion parameter or constant) along the convolution's output feature dim or the
 * matmul's N. It becomes the primitive's s32 bias, which oneDNN adds to the integer
 * accumulators before the epilogue -- where the HLO adds it. */
static kiln_status plan_int_bias(const hlo_instr *ins, plan *p, const hlo_instr *x) {
  const hlo_shape *rs = &p->core->shape;
  int64_t channel = p->is_conv ? p->core->conv.output_feature : rs->rank - 1;
  if (x->op != HLO_OP_BROADCAST || x->operands[0]->shape.rank != 1 || x->dimensions.n != 1 ||
      x->dimensions.v[0] != channel || x->operands[0]->shape.dims[0] != rs->dims[channel])
    return unsupported(ins, "an integer bias that is not one value per output channel");
  const hlo_instr *v = x->operands[0];
  p->bias.outer = -1;
  p->bias.constant = NULL;
  const hlo_instr *leaf = v;
  if (v->op == HLO_OP_PARAMETER && v->parameter_number >= 0 && v->parameter_number < ins->n_operands) {
    p->bias.outer = (int)v->parameter_number;
    leaf = ins->operands[v->parameter_number];
  } else if (v->op != HLO_OP_CONSTANT) {
    return unsupported(ins, "an integer bias that is not a fusion parameter or constant");
  }
  if (leaf->op == HLO_OP_CONSTANT) {
    if (!leaf->literal || !leaf->literal->data) return unsupported(ins, "a constant without data");
    p->bias.outer = -1;
    p->bias.constant = leaf->literal;
  }
  int64_t n = rs->dims[channel];
  if (p->is_conv) {
    dnnl_dims_t dims = {n}, strides = {1};
    DNNL_TRY(ins, dnnl_memory_desc_init_by_strides(&p->bias_md, 1, dims, dnnl_s32, strides));
  } else {
    dnnl_dims_t dims, strides;
    for (int d = 0; d < p->ndims; d++) dims[d] = 1, strides[d] = n;
    dims[p->ndims - 1] = n;
    strides[p->ndims - 1] = 1;
    DNNL_TRY(ins, dnnl_memory_desc_init_by_strides(&p->bias_md, p->ndims, dims, dnnl_s32, strides));
  }
  p->has_bias = true;
  return NULL;
}

/* The literal of a scalar constant or of a broadcast of one; NULL otherwise. */
static const hlo_literal *scalar_constant(const hlo_instr *x) {
  if (x->op == HLO_OP_BROADCAST) x = x->operands[0];
  return x->op == HLO_OP_CONSTANT && x->shape.rank == 0 && x->literal && x->literal->data ? x->literal : NULL;
}

/* The multiply right after an integer product's convert to f32, by a constant that is
 * one value or one per output channel: oneDNN's output scales, which its int8 kernels
 * apply to the accumulators as they convert them (a per-channel binary post-op instead
 * cost oneDNN 2.6's 1x1 kernels 3-5x the convolution itself: [1,112,112,16] -> 96,
 * 0.18 -> 0.76 ms). The same f32 product either way. *TAKEN false: left as a post-op. */
static kiln_status plan_output_scales(const hlo_instr *ins, plan *p, const hlo_instr *m, int chain_idx, bool *taken) {
  *taken = false;
  const hlo_instr *x = m->operands[1 - chain_idx];
  const hlo_shape *rs = &p->core->shape;
  int64_t channel = p->is_conv ? p->core->conv.output_feature : rs->rank - 1;
  const hlo_literal *l = NULL;
  if (x->op == HLO_OP_BROADCAST && x->operands[0]->op == HLO_OP_CONSTANT) {
    const hlo_instr *src = x->operands[0];
    if (src->shape.rank == 0 || (src->shape.rank == 1 && x->dimensions.n == 1 && x->dimensions.v[0] == channel))
      l = src->literal;
  } else if (x->op == HLO_OP_BROADCAST && x->operands[0]->op == HLO_OP_PARAMETER && ins->op == HLO_OP_FUSION) {
    const hlo_instr *src = x->operands[0];
    int64_t k = src->parameter_number;
    if (k >= 0 && k < ins->n_operands && ins->operands[k]->op == HLO_OP_CONSTANT &&
        (src->shape.rank == 0 || (src->shape.rank == 1 && x->dimensions.n == 1 && x->dimensions.v[0] == channel)))
      l = ins->operands[k]->literal;
  }
  if (!l || !l->data || l->shape.type != HLO_F32 || (l->n != 1 && l->n != rs->dims[channel])) return NULL;
  p->scales = malloc(sizeof(float) * (size_t)l->n);
  if (!p->scales) return status_error(KILN_RESOURCE_EXHAUSTED, "cpu_dnnl: %s: out of memory", ins->name);
  memcpy(p->scales, l->data, sizeof(float) * (size_t)l->n);
  p->n_scales = (int)l->n;
  p->scales_mask = l->n == 1 ? 0 : 1 << (p->is_conv ? 1 : p->ndims - 1);
  *taken = true;
  return NULL;
}

/* Whether the epilogue's last five entries (CHAIN[0..4], root first) are a
 * requantization oneDNN can do itself: convert to 8 bits <- clamp to exactly that type's
 * range <- add of a scalar integer zero point (or of 0) <- round half to even <- divide
 * by a scalar constant. oneDNN's conversion to u8/s8 rounds half to even and saturates,
 * and round(v) + z = round(v + z) for an integer z, so this is x * (1/c) + z converted
 * -- the same except that x * (1/c) can differ from x / c in the last bit, which moves
 * a value lying within that bit of a half-step boundary to the other side (ONNX
 * Runtime's kernels multiply by the reciprocal too). N: the entries available. */
static bool requantization_native(const hlo_instr *const *chain, int n) {
  if (n < 5 || chain[0]->op != HLO_OP_CONVERT || chain[1]->op != HLO_OP_CLAMP || chain[2]->op != HLO_OP_ADD ||
      chain[3]->op != HLO_OP_ROUND_NEAREST_EVEN || chain[4]->op != HLO_OP_DIVIDE)
    return false;
  double lo = chain[0]->shape.type == HLO_U8 ? 0 : -128, hi = chain[0]->shape.type == HLO_U8 ? 255 : 127;
  const hlo_literal *a = scalar_constant(chain[1]->operands[0]), *b = scalar_constant(chain[1]->operands[2]);
  if (!a || !b || literal_get_f64(a, 0) != lo || literal_get_f64(b, 0) != hi) return false;
  const hlo_literal *z = scalar_constant(chain[2]->operands[chain[2]->operands[0] == chain[3] ? 1 : 0]);
  if (!z) return false;
  const hlo_literal *c = scalar_constant(chain[4]->operands[1]); /* x / c, the chain value first */
  return c && literal_get_f64(c, 0) != 0 && isfinite(literal_get_f64(c, 0));
}

static kiln_status build_plan(const hlo_instr *ins, plan *p) {
  memset(p, 0, sizeof *p);
  p->src_dt = p->wei_dt = p->dst_dt = dnnl_f32;
  p->src_zp_outer = -1;
  const hlo_instr *chain[MAX_POST_OPS];
  int chain_idx[MAX_POST_OPS], n_chain = 0;
  if (ins->op == HLO_OP_FUSION && ins->fusion_kind && strcmp(ins->fusion_kind, "kCustom") == 0) {
    return plan_softmax(ins, p);
  } else if (ins->op == HLO_OP_FUSION) {
    TRY(plan_fusion_chain(ins, &p->core, chain, chain_idx, &n_chain));
  } else if (is_core(ins)) {
    p->core = ins;
  } else {
    return unsupported(ins, "only dot, convolution and kOutput fusions of them");
  }
  const hlo_instr *core = p->core;
  p->is_conv = core->op == HLO_OP_CONVOLUTION;
  if (core->n_operands != 2) return unsupported(ins, "malformed dot/convolution");
  /* An integer product (cpu_quantize.c): s32 accumulators, converted to f32 first thing
   * in the epilogue; the result f32, or requantized to 8 bits. */
  /* An int32 bias may come between the product and that convert (QLinearConv's B). */
  const hlo_instr *int_bias = NULL;
  int to_f32 = n_chain - 1; /* the chain index of the convert to f32 */
  if (n_chain >= 2 && chain[n_chain - 1]->op == HLO_OP_ADD && chain[n_chain - 1]->shape.type == HLO_S32)
    int_bias = chain[n_chain - 1], to_f32 = n_chain - 2;
  bool quantized = core->shape.type == HLO_S32 && ins->op == HLO_OP_FUSION && to_f32 >= 0 &&
                   chain[to_f32]->op == HLO_OP_CONVERT && chain[to_f32]->shape.type == HLO_F32;
  if (!quantized) int_bias = NULL, to_f32 = n_chain - 1;
  if (quantized) {
    if (!cpu_dnnl_int8_exact()) return unsupported(ins, "int8 products without VNNI (oneDNN's would saturate)");
    if (!requantization_exact(ins, chain, to_f32 + 1))
      return unsupported(ins, "a convert to 8 bits of a value not rounded and clamped to the type's range");
    for (int i = 1; i < to_f32; i++)
      if (chain[i]->op == HLO_OP_CONVERT) return unsupported(ins, "a convert inside the epilogue");
    TRY(resolve_widened(ins, p, core->operands[0], &p->src_zp, &p->src, &p->src_dt, p->src_strides));
    TRY(resolve_widened(ins, p, core->operands[1], NULL, &p->wei, &p->wei_dt, p->wei_strides));
    if (p->wei_dt != dnnl_s8) return unsupported(ins, "integer weights must be s8");
    p->dst_dt = dnnl_type_of(ins->shape.type);
  } else {
    /* A bf16 x bf16 -> f32 matmul (JAX's preferred_element_type=float32 on bf16 values):
     * oneDNN reads the bf16 operands as they are and accumulates in f32, where the code
     * generator would widen every element and accumulate in double. Runtime operands
     * only (a captured constant is f32, resolve_leaf); convolutions stay f32. */
    bool bf16_product = !p->is_conv && is_f32_array(&core->shape) && is_bf16_array(&core->operands[0]->shape) &&
                        is_bf16_array(&core->operands[1]->shape);
    if (!is_f32_array(&core->shape) ||
        (!bf16_product && (!is_f32_array(&core->operands[0]->shape) || !is_f32_array(&core->operands[1]->shape))))
      return unsupported(ins, "only f32 operands and result (or a bf16 x bf16 -> f32 dot)");
    if (bf16_product) p->src_dt = p->wei_dt = dnnl_bf16;
    if (!is_f32_array(&ins->shape)) return unsupported(ins, "the result is not the dot/convolution's f32 shape");
    for (int i = 0; i < n_chain; i++)
      if (chain[i]->op == HLO_OP_CONVERT) return unsupported(ins, "a convert in an f32 epilogue");
    if (!resolve_leaf(ins, core->operands[0], &p->src) || !resolve_leaf(ins, core->operands[1], &p->wei))
      return unsupported(ins, "the dot/convolution operands are not fusion parameters or constants");
    shape_strides(&core->operands[0]->shape, p->src_strides);
    shape_strides(&core->operands[1]->shape, p->wei_strides);
  }
  if (!shape_same_dims(&core->shape, &ins->shape)) return unsupported(ins, "the result is not the dot/convolution's shape");
  if (shape_elements(&core->shape) <= 0 || shape_elements(&core->operands[0]->shape) <= 0 ||
      shape_elements(&core->operands[1]->shape) <= 0)
    return unsupported(ins, "empty tensors");
  TRY(p->is_conv ? plan_conv(ins, p) : plan_dot(ins, p));
  if (quantized && p->deconv) return unsupported(ins, "integer transposed convolution");
  if (int_bias) TRY(plan_int_bias(ins, p, int_bias->operands[chain_idx[n_chain - 1] == 0 ? 1 : 0]));
  int first = to_f32, last = 0; /* the chain entries left for add_post */
  if (quantized) {
    first = to_f32 - 1; /* the convert to f32 is implied */
    if (first >= 0 && chain[first]->op == HLO_OP_MULTIPLY) {
      bool taken;
      TRY(plan_output_scales(ins, p, chain[first], chain_idx[first], &taken));
      if (taken) first--;
    }
    if (requantization_native(chain, first + 1)) last = 5;
  }
  for (int i = first; i >= last; i--) TRY(add_post(ins, p, chain[i], chain_idx[i]));
  if (last == 5) { /* x / c, round, + z, clamp, convert: x * (1/c) + z, then oneDNN's conversion */
    double c = literal_get_f64(scalar_constant(chain[4]->operands[1]), 0);
    double z = chain[2]->op == HLO_OP_ADD ? literal_get_f64(scalar_constant(chain[2]->operands[chain_idx[2] == 0]), 0) : 0;
    TRY(add_eltwise(ins, p, dnnl_eltwise_linear, (float)(1.0 / c), (float)z));
  }
  /* oneDNN 2.6 adds an int8 primitive's bias to the integer accumulators (before any
   * scaling); kiln's epilogue adds it after the rescale, so it stays a post-op. */
  if (!quantized) TRY(absorb_bias(ins, p));
  return split_repeated_eltwise(ins, p);
}

/* ------------------------------------------------------------------ primitive descriptors */

/* Whether a binary post-op's second operand covers the whole result (no broadcast). */
static bool full_tensor(const plan *p, const post_op *po) {
  if (!po->binary) return false;
  for (int d = 0; d < p->dst_md.ndims; d++)
    if (po->src1_md.dims[d] != p->dst_md.dims[d]) return false;
  return true;
}

/* FULL_LAYOUT, when given, replaces the layout of whole-result binary operands. */
static kiln_status make_attr(const hlo_instr *ins, const plan *p, const dnnl_memory_desc_t *full_layout,
                             dnnl_primitive_attr_t *out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  *out = NULL;
  DNNL_TRY(ins, dnnl_primitive_attr_create(&attr));
  dnnl_status_t s = dnnl_primitive_attr_set_fpmath_mode(attr, dnnl_fpmath_mode_strict);
  if (s == dnnl_success) s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  /* The activation's zero point: oneDNN computes with src - zp and pads with zp, i.e.
   * with a real zero, as the dequantized convolution does. */
  if (s == dnnl_success && p && p->n_scales)
    s = dnnl_primitive_attr_set_output_scales(attr, p->n_scales, p->scales_mask, p->scales);
  static const int32_t runtime_zp = DNNL_RUNTIME_S32_VAL;
  if (s == dnnl_success && p && p->src_zp_outer >= 0)
    s = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime_zp);
  else if (s == dnnl_success && p && p->src_zp != 0)
    s = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &p->src_zp);
  if (s == dnnl_success && p && p->n_post) {
    s = dnnl_post_ops_create(&ops);
    for (int i = 0; i < p->n_post && s == dnnl_success; i++) {
      const post_op *po = &p->post[i];
      const dnnl_memory_desc_t *md = full_layout && full_tensor(p, po) ? full_layout : &po->src1_md;
      s = po->sum      ? dnnl_post_ops_append_sum(ops, 1.0f)
          : po->binary ? dnnl_post_ops_append_binary(ops, po->alg, md)
                       : dnnl_post_ops_append_eltwise(ops, 1.0f, po->alg, po->alpha, po->beta);
    }
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, ops);
    if (ops) dnnl_post_ops_destroy(ops);
  }
  if (s != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return status_error(KILN_INTERNAL, "cpu_dnnl: %s: cannot set up primitive attributes: %s", ins->name,
                        dnnl_status2str(s));
  }
  *out = attr;
  return NULL;
}

static const char *impl_name(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return "";
  return impl;
}

/* Whether a depthwise convolution should run on oneDNN 2.6's jit_dw kernel rather than
 * brdgmm_dw, which it lists first. Measured per layer in the models (ONEDNN_VERBOSE
 * exec times, 200 runs): with a swish epilogue jit_dw was faster on every one of
 * efficientnet_b0's depthwise layers (1.02 -> 0.92 ms in all); with relu6 it was faster
 * on mobilenet_v2's large layers (112x112: 0.082 -> 0.066 ms) and slower on the small
 * ones (14x14: 0.020 -> 0.022 ms). */
static bool prefer_jit_dw(const plan *p) {
  for (int i = 0; i < p->n_post; i++) {
    dnnl_alg_kind_t a = p->post[i].alg;
    if (!p->post[i].binary && !p->post[i].sum &&
        (a == dnnl_eltwise_swish || a == dnnl_eltwise_logistic || a == dnnl_eltwise_gelu_erf))
      return true;
  }
  int64_t positions = 1;
  for (int d = 2; d < p->dst_md.ndims; d++) positions *= p->dst_md.dims[d];
  return positions >= 56 * 56;
}

/* Whether an int8 convolution should avoid oneDNN 2.6's AMX kernels, which it lists
 * first on CPUs that have AMX: a 1x1 convolution over few input channels gives AMX's
 * 64-deep tiles too little to reduce, and the VNNI kernel is faster. Measured on
 * mobilenet_v2's expansions (--profile, one thread): 16 -> 96 channels at 112x112,
 * 0.52 ms on AMX vs 0.28 ms on VNNI; 24 -> 144 at 56x56, 0.20 vs 0.12 ms; the whole
 * int8 network at batch 1 and two threads, 3.1 vs 2.2 ms. Wider reductions stay on AMX
 * (resnet50's, from 64 channels up, run faster there). */
static bool avoid_amx(const plan *p) {
  if (p->src_dt != dnnl_u8 && p->src_dt != dnnl_s8) return false;
  if (p->wei_md.ndims != p->src_md.ndims) return false; /* grouped */
  for (int d = 2; d < p->wei_md.ndims; d++)
    if (p->wei_md.dims[d] != 1) return false;
  return p->wei_md.dims[1] < 64;
}

/* oneDNN's first choice for a convolution; jit_dw for a depthwise one where
 * prefer_jit_dw says so; the first non-AMX kernel where avoid_amx says so. */
static dnnl_status_t create_conv_pd(const plan *p, const dnnl_convolution_desc_t *d, const_dnnl_primitive_attr_t attr,
                                    dnnl_primitive_desc_t *out) {
  dnnl_primitive_desc_iterator_t it;
  dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, d, attr, engine, NULL);
  if (s != dnnl_success) return s;
  dnnl_primitive_desc_t first = dnnl_primitive_desc_iterator_fetch(it), chosen = NULL;
  bool jit_dw = first && strncmp(impl_name(first), "brdgmm_dw", 9) == 0 && prefer_jit_dw(p);
  bool no_amx = first && strstr(impl_name(first), "amx") && avoid_amx(p);
  while ((jit_dw || no_amx) && !chosen && dnnl_primitive_desc_iterator_next(it) == dnnl_success) {
    dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
    const char *name = pd ? impl_name(pd) : "";
    if (pd && (jit_dw ? strncmp(name, "jit_dw", 6) == 0 && strstr(name, "avx512") : !strstr(name, "amx")))
      chosen = pd;
    else if (pd)
      dnnl_primitive_desc_destroy(pd);
  }
  dnnl_primitive_desc_iterator_destroy(it);
  if (chosen && first) dnnl_primitive_desc_destroy(first);
  *out = chosen ? chosen : first;
  return *out ? dnnl_success : dnnl_unimplemented;
}

/* One primitive descriptor. Convolution weights are always "any" (oneDNN's fast kernels
 * want blocked weights; runtime weights are reordered on each execute); matmul weights
 * are "any" when constant or with ANY_SRC, else read in place. ANY_SRC / ANY_DST let
 * oneDNN pick those layouts too (the kiln buffers are then reordered); DST_LAYOUT
 * instead fixes dst and whole-result binary operands to one layout. NULL *out with no
 * error: no implementation. */
static kiln_status try_pd(const hlo_instr *ins, const plan *p, bool any_src, bool any_dst,
                          const dnnl_memory_desc_t *dst_layout, dnnl_primitive_desc_t *out) {
  *out = NULL;
  dnnl_memory_desc_t wei_any, src_any, dst_any;
  const dnnl_memory_desc_t *wei = &p->wei_md, *src = &p->src_md, *dst = &p->dst_md;
  if (p->is_conv || p->wei.constant || any_src) {
    DNNL_TRY(ins, dnnl_memory_desc_init_by_tag(&wei_any, p->wei_md.ndims, p->wei_md.dims, p->wei_dt,
                                               dnnl_format_tag_any));
    wei = &wei_any;
  }
  if (any_src) {
    DNNL_TRY(ins, dnnl_memory_desc_init_by_tag(&src_any, p->src_md.ndims, p->src_md.dims, p->src_dt,
                                               dnnl_format_tag_any));
    src = &src_any;
  }
  if (any_dst) {
    DNNL_TRY(ins, dnnl_memory_desc_init_by_tag(&dst_any, p->dst_md.ndims, p->dst_md.dims, p->dst_dt,
                                               dnnl_format_tag_any));
    dst = &dst_any;
  }
  if (dst_layout) dst = dst_layout;
  const dnnl_memory_desc_t *bias = p->has_bias ? &p->bias_md : NULL;
  dnnl_primitive_attr_t attr;
  TRY(make_attr(ins, p, dst_layout, &attr));
  dnnl_status_t s;
  if (p->softmax) {
    dnnl_softmax_desc_t d;
    s = dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &p->src_md, p->ndims - 1);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(out, &d, attr, engine, NULL);
  } else if (p->is_conv && p->deconv) {
    dnnl_deconvolution_desc_t d;
    s = dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_deconvolution_direct, src,
                                                     wei, bias, dst, p->strides, p->dilates, p->pad_l, p->pad_r);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(out, &d, attr, engine, NULL);
  } else if (p->is_conv) {
    dnnl_convolution_desc_t d;
    s = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, src, wei,
                                                   bias, dst, p->strides, p->dilates, p->pad_l, p->pad_r);
    if (s == dnnl_success) s = create_conv_pd(p, &d, attr, out);
  } else {
    dnnl_matmul_desc_t d;
    s = dnnl_matmul_desc_init(&d, src, wei, bias, dst);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(out, &d, attr, engine, NULL);
  }
  dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success) *out = NULL;
  return NULL;
}


static bool is_ref(const_dnnl_primitive_desc_t pd) { return strncmp(impl_name(pd), "ref", 3) == 0; }
static bool is_gemm(const_dnnl_primitive_desc_t pd) { return strstr(impl_name(pd), "gemm") != NULL; }

/* oneDNN 2.6's convolution kernels take a whole-result binary operand (a residual) only
 * with dst and that operand both channel-blocked by 16 (nChw16c); the residual is then
 * reordered on each execute. NULL *out with no error when that does not work either. */
static kiln_status try_pd_residual(const hlo_instr *ins, const plan *p, dnnl_primitive_desc_t *out) {
  *out = NULL;
  bool any_full = false;
  for (int i = 0; i < p->n_post; i++) any_full = any_full || full_tensor(p, &p->post[i]);
  if (!any_full) return NULL;
  dnnl_memory_desc_t layout;
  DNNL_TRY(ins, dnnl_memory_desc_init_by_tag(&layout, p->dst_md.ndims, p->dst_md.dims, p->dst_dt,
                                             p->dst_md.ndims == 4 ? dnnl_aBcd16b : dnnl_aBcde16b));
  return try_pd(ins, p, true, false, &layout, out);
}

/* The primitive descriptor to run. A reference implementation is a scalar loop nest,
 * slower than the backend's own generated code: declined. A convolution on kiln's own
 * layout that only oneDNN's im2col+gemm path takes (e.g. NCHW) runs about twice as fast
 * on oneDNN's preferred layouts, worth the activation reorders (and, with a residual
 * epilogue, its reorder too); a layout no kernel reads at all (e.g. feature-major) goes
 * through reorders as well. */
static kiln_status make_pd(const hlo_instr *ins, const plan *p, dnnl_primitive_desc_t *out) {
  *out = NULL;
  TRY(get_engine(ins));
  dnnl_primitive_desc_t pd = NULL, alt = NULL;
  TRY(try_pd(ins, p, false, false, NULL, &pd));
  if (pd && is_ref(pd)) {
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
  }
  if (p->is_conv && (!pd || is_gemm(pd))) {
    kiln_status st = try_pd(ins, p, true, true, NULL, &alt);
    if (!st && (!alt || is_ref(alt) || is_gemm(alt))) {
      dnnl_primitive_desc_t blocked = NULL;
      st = try_pd_residual(ins, p, &blocked);
      if (blocked && !is_ref(blocked) && !is_gemm(blocked)) {
        if (alt) dnnl_primitive_desc_destroy(alt);
        alt = blocked;
      } else if (blocked) {
        dnnl_primitive_desc_destroy(blocked);
      }
    }
    if (st) {
      if (pd) dnnl_primitive_desc_destroy(pd);
      return st;
    }
    /* On kiln's layout gemm beats gemm plus reorders; with no kernel there, take it. */
    if (alt && (is_ref(alt) || (pd && is_gemm(alt)))) {
      dnnl_primitive_desc_destroy(alt);
      alt = NULL;
    }
    if (alt) {
      if (pd) dnnl_primitive_desc_destroy(pd);
      pd = alt;
    }
  }
  /* A matmul whose strides no kernel takes (e.g. a batch dim innermost) runs on copies
   * of its operands in oneDNN's layouts: a copy is cheap next to the product. */
  if (!p->is_conv && !p->softmax && !pd) {
    TRY(try_pd(ins, p, true, false, NULL, &pd));
    if (!pd || is_ref(pd)) {
      if (pd) dnnl_primitive_desc_destroy(pd);
      TRY(try_pd(ins, p, true, true, NULL, &pd));
    }
    if (pd && is_ref(pd)) {
      dnnl_primitive_desc_destroy(pd);
      pd = NULL;
    }
  }
  if (!pd) return unsupported(ins, "oneDNN has no optimized implementation for this configuration");
  *out = pd;
  return NULL;
}

bool cpu_dnnl_supports(const hlo_instr *ins) {
  if (!is_core(ins) && ins->op != HLO_OP_FUSION) return false; /* asked of every instruction */
  plan *p = malloc(sizeof *p);
  if (!p) return false;
  dnnl_primitive_desc_t pd = NULL;
  kiln_status s = build_plan(ins, p);
  if (!s) s = make_pd(ins, p, &pd);
  plan_free(p);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (s) {
    kiln_status_free(s);
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------ primitives */

/* A primitive argument backed by a kiln buffer. user_mem describes the row-major buffer
 * (its handle is set on each execute; for a captured constant it owns a copy). When the
 * primitive wants another layout, mem is an owned buffer in that layout and reorder
 * converts: before the primitive for inputs, after it for the result. A constant input
 * is converted once at create time and needs no reorder afterwards. */
typedef struct bound_arg {
  int outer;    /* operand index; -1: captured constant or the result */
  size_t bytes; /* of the kiln buffer */
  dnnl_memory_t user_mem, mem;
  dnnl_primitive_t reorder;
  dnnl_memory_t reorder_scratch;
} bound_arg;

struct cpu_dnnl_prim {
  char *name;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_memory_t scratch_mem;
  bound_arg src, wei, dst, bias; /* bias.user_mem is NULL without one */
  /* Deconvolution with runtime weights: each execute mirrors them into wei_mirror. */
  float *wei_mirror;
  /* Where the result buffer overlaps an input, the result is staged here first. */
  void *dst_stage;
  /* The operand whose buffer the result is computed in (its values added by a sum
   * post-op), or -1. */
  int sum_operand;
  hlo_shape wei_shape;
  bool wei_flip[HLO_MAX_RANK];
  int n_post;
  bound_arg post[MAX_POST_OPS]; /* binary post-ops' second operands (user_mem only) */
  /* A runtime source zero point: operand zp_outer's s32 scalar, bound on each execute. */
  int zp_outer;
  dnnl_memory_t zp_mem;
  int n_owned;
  void *owned[8 + MAX_POST_OPS]; /* buffers freed with the prim */
  int n_shared;
  void *shared[8 + MAX_POST_OPS]; /* constant buffers of cpu_shared_constants, released with it */
};

static dnnl_memory_t arg_mem(const bound_arg *a) { return a->mem ? a->mem : a->user_mem; }

static kiln_status prim_alloc(cpu_dnnl_prim *pr, const hlo_instr *ins, size_t bytes, void **out) {
  *out = NULL;
  if (pr->n_owned >= (int)(sizeof pr->owned / sizeof pr->owned[0]))
    return status_error(KILN_INTERNAL, "cpu_dnnl: %s: too many owned buffers", ins->name);
  size_t rounded = (bytes + 63) / 64 * 64;
  void *b = aligned_alloc(64, rounded ? rounded : 64);
  if (!b)
    return status_error(KILN_RESOURCE_EXHAUSTED, "cpu_dnnl: %s: out of memory for a %zu-byte buffer", ins->name, bytes);
  pr->owned[pr->n_owned++] = b;
  *out = b;
  return NULL;
}

/* Moves BUF, a constant's bytes just written into a prim_alloc'd buffer, into the
 * shared store: returns the buffer to bind (an equal one another primitive packed, or
 * BUF itself), which the prim then holds a reference to instead of owning BUF. */
static void *prim_share(cpu_dnnl_prim *pr, void *buf, size_t bytes) {
  for (int i = 0; i < pr->n_owned; i++)
    if (pr->owned[i] == buf) {
      pr->owned[i] = pr->owned[--pr->n_owned];
      break;
    }
  void *shared = cpu_shared_constant_adopt(buf, bytes);
  pr->shared[pr->n_shared++] = shared; /* never more than the owned buffers it came from */
  return shared;
}

/* Scratchpad of PD (user-managed so concurrent prims never share one); NULL if none. */
static kiln_status make_scratch(cpu_dnnl_prim *pr, const hlo_instr *ins, const_dnnl_primitive_desc_t pd,
                                dnnl_memory_t *out) {
  *out = NULL;
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (!md || dnnl_memory_desc_get_size(md) == 0) return NULL;
  void *buf;
  TRY(prim_alloc(pr, ins, dnnl_memory_desc_get_size(md), &buf));
  DNNL_TRY(ins, dnnl_memory_create(out, md, engine, buf));
  return NULL;
}

static kiln_status make_reorder(const hlo_instr *ins, cpu_dnnl_prim *pr, const dnnl_memory_desc_t *from,
                                const dnnl_memory_desc_t *to, dnnl_primitive_t *out, dnnl_memory_t *scratch) {
  dnnl_primitive_attr_t attr;
  dnnl_primitive_desc_t rpd;
  TRY(make_attr(ins, NULL, NULL, &attr));
  dnnl_status_t s = dnnl_reorder_primitive_desc_create(&rpd, from, engine, to, engine, attr);
  dnnl_primitive_attr_destroy(attr);
  if (s != dnnl_success)
    return status_error(KILN_INTERNAL, "cpu_dnnl: %s: no layout reorder: %s", ins->name, dnnl_status2str(s));
  kiln_status st = make_scratch(pr, ins, rpd, scratch);
  if (!st) {
    s = dnnl_primitive_create(out, rpd);
    if (s != dnnl_success)
      st = status_error(KILN_INTERNAL, "cpu_dnnl: %s: creating a layout reorder failed: %s", ins->name,
                        dnnl_status2str(s));
  }
  dnnl_primitive_desc_destroy(rpd);
  return st;
}

/* Queues a reorder of A's buffers on STREAM (inputs: user -> mem; the result: back). */
static dnnl_status_t queue_reorder(const bound_arg *a, dnnl_stream_t stream, bool to_user) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, to_user ? a->mem : a->user_mem},
                             {DNNL_ARG_TO, to_user ? a->user_mem : a->mem},
                             {DNNL_ARG_SCRATCHPAD, a->reorder_scratch}};
  return dnnl_primitive_execute(a->reorder, stream, a->reorder_scratch ? 3 : 2, args);
}

/* Sets up argument A, whose kiln buffer has layout USER and which the primitive reads
 * (or, with IS_RESULT, writes) in layout WANT. */
static kiln_status bind_setup(cpu_dnnl_prim *pr, const hlo_instr *ins, bound_arg *a, const operand_ref *ref,
                              const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, bool is_result) {
  bool same = dnnl_memory_desc_equal(user, want);
  a->outer = is_result ? -1 : ref->outer;
  a->bytes = dnnl_memory_desc_get_size(user);
  void *buf = DNNL_MEMORY_NONE;
  if (!is_result && ref->constant) {
    size_t bytes = (size_t)ref->constant->n * hlo_type_size(ref->constant->shape.type);
    if (same) { /* a copy, so the module may be freed: shared with equal ones */
      TRY(prim_alloc(pr, ins, bytes, &buf));
      memcpy(buf, ref->constant->data, bytes);
      buf = prim_share(pr, buf, bytes);
      DNNL_TRY(ins, dnnl_memory_create(&a->user_mem, user, engine, buf));
      return NULL;
    }
    /* Converted once; the literal is read in place for that. */
    TRY(prim_alloc(pr, ins, dnnl_memory_desc_get_size(want), &buf));
    DNNL_TRY(ins, dnnl_memory_create(&a->mem, want, engine, buf));
    DNNL_TRY(ins, dnnl_memory_create(&a->user_mem, user, engine, (void *)ref->constant->data));
    TRY(make_reorder(ins, pr, user, want, &a->reorder, &a->reorder_scratch));
    dnnl_status_t s = queue_reorder(a, pr->stream, false);
    if (s == dnnl_success) s = dnnl_stream_wait(pr->stream);
    if (s != dnnl_success)
      return status_error(KILN_INTERNAL, "cpu_dnnl: %s: reordering a constant failed: %s", ins->name,
                          dnnl_status2str(s));
    dnnl_primitive_destroy(a->reorder);
    a->reorder = NULL;
    dnnl_memory_destroy(a->user_mem);
    a->user_mem = NULL;
    /* Packed: one copy per process of equal packed bytes (cpu_shared_constants.h). */
    void *shared = prim_share(pr, buf, dnnl_memory_desc_get_size(want));
    if (shared != buf) DNNL_TRY(ins, dnnl_memory_set_data_handle(a->mem, shared));
    return NULL;
  }
  DNNL_TRY(ins, dnnl_memory_create(&a->user_mem, user, engine, DNNL_MEMORY_NONE));
  if (same) return NULL;
  TRY(prim_alloc(pr, ins, dnnl_memory_desc_get_size(want), &buf));
  DNNL_TRY(ins, dnnl_memory_create(&a->mem, want, engine, buf));
  return is_result ? make_reorder(ins, pr, want, user, &a->reorder, &a->reorder_scratch)
                   : make_reorder(ins, pr, user, want, &a->reorder, &a->reorder_scratch);
}

/* Copies row-major SRC of SHAPE to DST with the dims marked in FLIP mirrored. */
static void mirror_copy(const float *src, float *dst, const hlo_shape *shape, const bool *flip) {
  int64_t strides[HLO_MAX_RANK], idx[HLO_MAX_RANK] = {0}, n = shape_elements(shape);
  shape_strides(shape, strides);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < shape->rank; d++) off += (flip[d] ? shape->dims[d] - 1 - idx[d] : idx[d]) * strides[d];
    dst[off] = src[i];
    for (int d = shape->rank - 1; d >= 0; d--) {
      if (++idx[d] < shape->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Weights: as bind_setup, mirrored first for a deconvolution. A constant is mirrored
 * once here; runtime weights on every execute. */
static kiln_status weights_setup(cpu_dnnl_prim *pr, const hlo_instr *ins, const plan *p,
                                 const dnnl_memory_desc_t *want) {
  if (!p->deconv) return bind_setup(pr, ins, &pr->wei, &p->wei, &p->wei_md, want, false);
  void *buf;
  TRY(prim_alloc(pr, ins, (size_t)shape_elements(&p->wei_shape) * sizeof(float), &buf));
  if (!p->wei.constant) {
    pr->wei_mirror = buf;
    pr->wei_shape = p->wei_shape;
    memcpy(pr->wei_flip, p->wei_flip, sizeof pr->wei_flip);
    return bind_setup(pr, ins, &pr->wei, &p->wei, &p->wei_md, want, false);
  }
  mirror_copy(p->wei.constant->data, buf, &p->wei_shape, p->wei_flip);
  hlo_literal mirrored = *p->wei.constant;
  mirrored.data = buf;
  operand_ref ref = {-1, &mirrored};
  return bind_setup(pr, ins, &pr->wei, &ref, &p->wei_md, want, false);
}

/* Binds the epilogue's second operands in the layouts the primitive reads them in. */
static kiln_status posts_setup(cpu_dnnl_prim *pr, const hlo_instr *ins, const plan *p,
                               const_dnnl_primitive_desc_t pd) {
  pr->n_post = p->n_post;
  for (int i = 0; i < p->n_post; i++) {
    const post_op *po = &p->post[i];
    pr->post[i].outer = -1;
    if (!po->binary) continue; /* eltwise or sum: nothing to bind */
    const dnnl_memory_desc_t *want =
        dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1);
    if (!want) return status_error(KILN_INTERNAL, "cpu_dnnl: %s: no descriptor for epilogue operand %d", ins->name, i);
    TRY(bind_setup(pr, ins, &pr->post[i], &po->src1, &po->src1_md, want, false));
  }
  return NULL;
}

/* When the result is computed in the buffer of operand IN_PLACE (buffer assignment lets
 * a kOutput fusion take over its residual's block), the residual add becomes oneDNN's
 * sum post-op, which adds what the result buffer holds: no second operand to read and
 * no staging of the result (a binary post-op reading the buffer being written would
 * need it). oneDNN 2.6's binary residual also forces slower kernels: a resnet50
 * [8,56,56,64] -> 256 1x1 convolution + residual took 3.0-3.9 ms as jit_1x1 with a
 * binary add and 2.4 ms as brgconv_1x1 without one. Taken only when oneDNN then writes
 * the result in kiln's layout (the sum reads the buffer as it is); *pd stays NULL
 * otherwise. */
static kiln_status try_pd_in_place_sum(const hlo_instr *ins, plan *p, int in_place, dnnl_primitive_desc_t *pd) {
  *pd = NULL;
  int r = -1;
  for (int i = 0; i < p->n_post && r < 0; i++) {
    const post_op *po = &p->post[i];
    if (po->binary && po->alg == dnnl_binary_add && full_tensor(p, po) && !po->src1.constant &&
        po->src1.outer == in_place)
      r = i;
  }
  if (in_place < 0 || r < 0) return NULL;
  post_op residual = p->post[r];
  p->post[r].binary = false;
  p->post[r].sum = true;
  kiln_status st = make_pd(ins, p, pd);
  if (st) kiln_status_free(st);
  if (!st && *pd && dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(*pd, dnnl_query_dst_md, 0), &p->dst_md))
    return NULL;
  if (*pd) dnnl_primitive_desc_destroy(*pd);
  *pd = NULL;
  p->post[r] = residual;
  return NULL;
}

/* Every argument is bound in the layout the primitive descriptor asks for; where that is
 * not the kiln buffer's, bind_setup adds the conversion. */
static kiln_status prim_init(cpu_dnnl_prim *pr, const hlo_instr *ins, plan *p, int in_place) {
  dnnl_primitive_desc_t pd;
  TRY(try_pd_in_place_sum(ins, p, in_place, &pd));
  pr->sum_operand = pd ? in_place : -1;
  if (!pd) TRY(make_pd(ins, p, &pd));
  kiln_status st = NULL;
  dnnl_status_t s = dnnl_stream_create(&pr->stream, engine, dnnl_stream_default_flags);
  if (s == dnnl_success) s = dnnl_primitive_create(&pr->prim, pd);
  if (s != dnnl_success)
    st = status_error(KILN_INTERNAL, "cpu_dnnl: %s: creating the primitive failed: %s", ins->name,
                      dnnl_status2str(s));
  if (!st) st = make_scratch(pr, ins, pd, &pr->scratch_mem);
  if (!st)
    st = bind_setup(pr, ins, &pr->src, &p->src, &p->src_md, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                    false);
  if (!st && !p->softmax) st = weights_setup(pr, ins, p, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
  if (!st)
    st = bind_setup(pr, ins, &pr->dst, NULL, &p->dst_md, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                    true);
  if (!st && p->has_bias)
    st = bind_setup(pr, ins, &pr->bias, &p->bias, &p->bias_md,
                    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), false);
  if (!st) st = posts_setup(pr, ins, p, pd);
  pr->zp_outer = p->src_zp_outer;
  if (!st && p->src_zp_outer >= 0) {
    dnnl_memory_desc_t md;
    dnnl_dims_t one = {1};
    dnnl_status_t zs = dnnl_memory_desc_init_by_tag(&md, 1, one, dnnl_s32, dnnl_a);
    if (zs == dnnl_success) zs = dnnl_memory_create(&pr->zp_mem, &md, engine, DNNL_MEMORY_NONE);
    if (zs != dnnl_success)
      st = status_error(KILN_INTERNAL, "cpu_dnnl: %s: cannot bind the runtime zero point: %s", ins->name,
                        dnnl_status2str(zs));
  }
  dnnl_primitive_desc_destroy(pd);
  return st;
}

kiln_status cpu_dnnl_create(const hlo_instr *ins, int in_place, cpu_dnnl_prim **out) {
  *out = NULL;
  plan *p = malloc(sizeof *p);
  cpu_dnnl_prim *pr = calloc(1, sizeof *pr);
  char *name = strdup(ins->name ? ins->name : "?");
  if (!p || !pr || !name) {
    free(p);
    free(pr);
    free(name);
    return status_error(KILN_RESOURCE_EXHAUSTED, "cpu_dnnl: %s: out of memory", ins->name);
  }
  pr->name = name;
  pr->wei.outer = pr->bias.outer = -1; /* absent unless set up */
  pr->zp_outer = -1;
  kiln_status st = build_plan(ins, p);
  if (!st) st = prim_init(pr, ins, p, in_place);
  plan_free(p);
  if (st) {
    cpu_dnnl_destroy(pr);
    return st;
  }
  *out = pr;
  return NULL;
}

#define EXEC_TRY(pr, call)                                                                               \
  do {                                                                                                   \
    dnnl_status_t dnnl_s_ = (call);                                                                      \
    if (dnnl_s_ != dnnl_success)                                                                         \
      return status_error(KILN_INTERNAL, "cpu_dnnl: %s: %s failed: %s", (pr)->name, #call,               \
                          dnnl_status2str(dnnl_s_));                                                     \
  } while (0)

/* Points a runtime argument at its operand's buffer (or, with MIRROR, at a mirrored copy
 * of it in that staging buffer) and converts it if needed. */
static kiln_status bind_input(cpu_dnnl_prim *pr, const bound_arg *a, void *const *operands, float *mirror) {
  if (a->outer < 0) return NULL;
  if (!operands || !operands[a->outer])
    return status_error(KILN_INVALID_ARGUMENT, "cpu_dnnl: %s: no buffer for operand %d", pr->name, a->outer);
  void *buf = operands[a->outer];
  if (mirror) {
    mirror_copy(buf, mirror, &pr->wei_shape, pr->wei_flip);
    buf = mirror;
  }
  EXEC_TRY(pr, dnnl_memory_set_data_handle(a->user_mem, buf));
  if (a->reorder) EXEC_TRY(pr, queue_reorder(a, pr->stream, false));
  return NULL;
}

static bool overlaps(const bound_arg *a, void *const *operands, const void *out, size_t out_bytes) {
  if (a->outer < 0 || !operands || !operands[a->outer]) return false;
  uintptr_t x = (uintptr_t)operands[a->outer], y = (uintptr_t)out;
  return x < y + out_bytes && y < x + a->bytes;
}

/* The result goes to OUT, or to the staging buffer when OUT overlaps an input: oneDNN
 * reads inputs while it writes the result. */
static kiln_status result_target(cpu_dnnl_prim *pr, void *const *operands, void *out, void **target) {
  bool clash = overlaps(&pr->src, operands, out, pr->dst.bytes) || overlaps(&pr->wei, operands, out, pr->dst.bytes) ||
               overlaps(&pr->bias, operands, out, pr->dst.bytes);
  for (int i = 0; i < pr->n_post; i++) clash = clash || overlaps(&pr->post[i], operands, out, pr->dst.bytes);
  *target = out;
  /* The residual a sum post-op adds is read from the result buffer itself: the compiler
   * assigned the result to the residual's block. An output block that lives in the
   * caller's result (cpu_program.slot_extra) is a fresh buffer instead, which gets a
   * copy of the residual first. */
  if (pr->sum_operand >= 0) {
    const void *res = operands ? operands[pr->sum_operand] : NULL;
    uintptr_t r = (uintptr_t)res, o = (uintptr_t)out;
    bool apart = r >= o + pr->dst.bytes || o >= r + pr->dst.bytes;
    if (!res || clash || (res != out && !apart))
      return status_error(KILN_INTERNAL, "cpu_dnnl: %s: the result must be computed in operand %d's buffer",
                          pr->name, pr->sum_operand);
    if (res != out) memcpy(out, res, pr->dst.bytes);
  }
  if (!clash) return NULL;
  if (!pr->dst_stage) {
    pr->dst_stage = aligned_alloc(64, (pr->dst.bytes + 63) / 64 * 64);
    if (!pr->dst_stage)
      return status_error(KILN_RESOURCE_EXHAUSTED, "cpu_dnnl: %s: out of memory for a %zu-byte buffer", pr->name,
                          pr->dst.bytes);
  }
  *target = pr->dst_stage;
  return NULL;
}

kiln_status cpu_dnnl_execute(cpu_dnnl_prim *pr, void *const *operands, void *out) {
  if (!out) return status_error(KILN_INVALID_ARGUMENT, "cpu_dnnl: %s: no result buffer", pr->name);
  void *target;
  TRY(result_target(pr, operands, out, &target));
  TRY(bind_input(pr, &pr->src, operands, NULL));
  if (arg_mem(&pr->wei)) TRY(bind_input(pr, &pr->wei, operands, pr->wei_mirror));
  EXEC_TRY(pr, dnnl_memory_set_data_handle(pr->dst.user_mem, target));
  dnnl_exec_arg_t args[6 + MAX_POST_OPS];
  int n = 0;
  args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, arg_mem(&pr->src)};
  if (arg_mem(&pr->wei)) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, arg_mem(&pr->wei)};
  args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, arg_mem(&pr->dst)};
  if (arg_mem(&pr->bias)) {
    TRY(bind_input(pr, &pr->bias, operands, NULL));
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, arg_mem(&pr->bias)};
  }
  if (pr->scratch_mem) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, pr->scratch_mem};
  if (pr->zp_mem) {
    if (!operands || !operands[pr->zp_outer])
      return status_error(KILN_INVALID_ARGUMENT, "cpu_dnnl: %s: no buffer for operand %d", pr->name, pr->zp_outer);
    EXEC_TRY(pr, dnnl_memory_set_data_handle(pr->zp_mem, operands[pr->zp_outer]));
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, pr->zp_mem};
  }
  for (int i = 0; i < pr->n_post; i++) {
    if (!arg_mem(&pr->post[i])) continue;
    TRY(bind_input(pr, &pr->post[i], operands, NULL));
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, arg_mem(&pr->post[i])};
  }
  EXEC_TRY(pr, dnnl_primitive_execute(pr->prim, pr->stream, n, args));
  if (pr->dst.reorder) EXEC_TRY(pr, queue_reorder(&pr->dst, pr->stream, true));
  EXEC_TRY(pr, dnnl_stream_wait(pr->stream));
  if (target != out) memcpy(out, target, pr->dst.bytes);
  return NULL;
}

static void bound_arg_free(bound_arg *a) {
  if (a->reorder) dnnl_primitive_destroy(a->reorder);
  if (a->reorder_scratch) dnnl_memory_destroy(a->reorder_scratch);
  if (a->mem) dnnl_memory_destroy(a->mem);
  if (a->user_mem) dnnl_memory_destroy(a->user_mem);
}

void cpu_dnnl_destroy(cpu_dnnl_prim *pr) {
  if (!pr) return;
  bound_arg_free(&pr->src);
  bound_arg_free(&pr->wei);
  bound_arg_free(&pr->dst);
  bound_arg_free(&pr->bias);
  for (int i = 0; i < pr->n_post; i++) bound_arg_free(&pr->post[i]);
  if (pr->scratch_mem) dnnl_memory_destroy(pr->scratch_mem);
  if (pr->zp_mem) dnnl_memory_destroy(pr->zp_mem);
  if (pr->prim) dnnl_primitive_destroy(pr->prim);
  if (pr->stream) dnnl_stream_destroy(pr->stream);
  for (int i = 0; i < pr->n_owned; i++) free(pr->owned[i]);
  for (int i = 0; i < pr->n_shared; i++) cpu_shared_constant_release(pr->shared[i]);
  free(pr->dst_stage);
  free(pr->name);
  free(pr);
}
