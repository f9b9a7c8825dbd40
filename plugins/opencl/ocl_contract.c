/* The contractions of the OpenCL code generator: reducer computations as OpenCL functions
 * of scalars (tuple-returning ones write through pointers), and the kernel bodies of
 * reduce (variadic too), dot (any batch / contracting dimensions), convolution (any
 * dim_labels, strides, padding, lhs/rhs dilation, window reversal, feature groups) and
 * reduce-window, one work-item per output element looping over the contracted
 * positions, with the operands' producers fused into the loop. Two specialised forms:
 * a tiled local-memory kernel for f32 matmuls and a work-group tree reduction for
 * reductions over many elements. Floats accumulate in the compute type and round once;
 * integers accumulate in wrapping unsigned arithmetic. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_gen.h"

/* ------------------------------------------------------------------ reducers --- */

const char *reducer_name(gen *g, const ocl_comp *comp, int dtype) {
  for (int i = 0; i < g->n_reducers; i++)
    if (g->reducers[i].comp == comp && g->reducers[i].dtype == dtype) return g->reducers[i].name;
  int n = comp->n_params / 2;
  reducer_fn *nr = realloc(g->reducers, (size_t)(g->n_reducers + 1) * sizeof *nr);
  if (!nr) {
    fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return "red";
  }
  g->reducers = nr;
  reducer_fn *r = &g->reducers[g->n_reducers++];
  r->comp = comp;
  r->dtype = dtype;
  snprintf(r->name, sizeof r->name, "red%d", g->n_reducers - 1);
  /* The function body. */
  sb body = {0};
  ectx c = {0};
  c.g = g;
  c.out = &body;
  c.comp = comp;
  char **pv = idxv(g, 2 * n);
  for (int k = 0; k < 2 * n; k++) pv[k] = gstr(g, "x%d", k);
  c.param_vars = pv;
  if (n == 1) {
    char *v = emit(&c, comp->root, NULL);
    const char *T = ocl_compute_type(dtype);
    sbf(&g->src, "static inline %s %s(%s x0, %s x1) {\n%s  return %s;\n}\n", T, r->name, T, T, body.p ? body.p : "", v);
  } else {
    char **vs = idxv(g, n);
    for (int k = 0; k < n; k++) vs[k] = emit(&c, comp->root->operands[k], NULL);
    sbf(&g->src, "static inline void %s(", r->name);
    for (int k = 0; k < n; k++) sbf(&g->src, "%s *o%d, ", ocl_compute_type(comp->params[k]->shape.dtype), k);
    for (int k = 0; k < 2 * n; k++)
      sbf(&g->src, "%s x%d%s", ocl_compute_type(comp->params[k]->shape.dtype), k, k + 1 < 2 * n ? ", " : "");
    sbf(&g->src, ") {\n%s", body.p ? body.p : "");
    for (int k = 0; k < n; k++) sbf(&g->src, "  *o%d = %s;\n", k, vs[k]);
    sbf(&g->src, "}\n");
  }
  if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  free(body.p);
  free(c.memo);
  return r->name;
}

char *emit_reducer_call(ectx *c, const ocl_comp *comp, int dtype, const char *acc, const char *v) {
  const char *fn = reducer_name(c->g, comp, dtype);
  return gstr(c->g, "%s(%s, %s)", fn, acc, v);
}

/* ------------------------------------------------------------------ roots ------ */

/* Reduce (n inputs, n inits): component j of the result at idx. */
char *emit_reduce(ectx *c, const ocl_instr *ins, char **idx, int j) {
  gen *g = c->g;
  int nin = ins->n_operands / 2;
  const ocl_instr *x = ins->operands[0];
  const ocl_shape *rs = nin > 1 ? &ins->shape.elems[0] : &ins->shape;
  int64_t rd[OCL_MAX_RANK];
  const char *a = ocl_attr(ins, "dimensions");
  int n = a ? ocl_parse_int_list(a, rd, OCL_MAX_RANK) : -1;
  int xr = x->shape.rank;
  if (n < 0 || xr - n != rs->rank || j < 0 || j >= nin) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce dimensions", ins->name);
    return "0";
  }
  int reduced[OCL_MAX_RANK] = {0};
  for (int k = 0; k < n; k++) {
    if (rd[k] < 0 || rd[k] >= xr || reduced[rd[k]]) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce dimensions", ins->name);
      return "0";
    }
    reduced[rd[k]] = 1;
  }
  char **acc = idxv(g, nin);
  for (int k = 0; k < nin; k++) {
    acc[k] = gstr(g, "acc%d", g->tmp++);
    char *iv = emit(c, ins->operands[nin + k], NULL);
    line(c, "%s %s = %s;", ocl_compute_type(ins->operands[k]->shape.dtype), acc[k], iv);
  }
  char **oi = idxv(g, xr);
  int o = 0, mk = memo_mark(c);
  for (int k = 0; k < xr; k++) {
    if (reduced[k]) {
      char *r = gstr(g, "r%d", g->tmp++);
      open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", r, r, (long long)x->shape.dims[k], r));
      oi[k] = r;
    } else {
      oi[k] = idx[o++];
    }
  }
  if (nin == 1) {
    char *v = emit(c, x, oi);
    line(c, "%s = %s;", acc[0], emit_reducer_call(c, ins->called[0], ins->shape.dtype, acc[0], v));
  } else {
    char **vs = idxv(g, nin);
    for (int k = 0; k < nin; k++) vs[k] = emit(c, ins->operands[k], oi);
    const char *fn = reducer_name(g, ins->called[0], 0);
    char *call = gstr(g, "%s(", fn);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s&%s, ", call, acc[k]);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s%s, ", call, acc[k]);
    for (int k = 0; k < nin; k++) call = gstr(g, "%s%s%s", call, vs[k], k + 1 < nin ? ", " : ")");
    line(c, "%s;", call);
  }
  memo_reset(c, mk);
  for (int k = 0; k < n; k++) close_block(c, NULL);
  return acc[j];
}

char *emit_dot(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  int64_t lb[OCL_MAX_RANK], rb[OCL_MAX_RANK], lc[OCL_MAX_RANK], rc[OCL_MAX_RANK];
  const char *s;
  int nlb = (s = ocl_attr(ins, "lhs_batch_dims")) ? ocl_parse_int_list(s, lb, OCL_MAX_RANK) : 0;
  int nrb = (s = ocl_attr(ins, "rhs_batch_dims")) ? ocl_parse_int_list(s, rb, OCL_MAX_RANK) : 0;
  int nlc = (s = ocl_attr(ins, "lhs_contracting_dims")) ? ocl_parse_int_list(s, lc, OCL_MAX_RANK) : 0;
  int nrc = (s = ocl_attr(ins, "rhs_contracting_dims")) ? ocl_parse_int_list(s, rc, OCL_MAX_RANK) : 0;
  int lr = l->shape.rank, rr = r->shape.rank, dt = ins->shape.dtype;
  if (nlb < 0 || nrb < 0 || nlc < 0 || nrc < 0 || nlb != nrb || nlc != nrc ||
      ins->shape.rank != lr + rr - nlb - 2 * nlc) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dot dimension numbers", ins->name);
    return "0";
  }
  int lrole[OCL_MAX_RANK], rrole[OCL_MAX_RANK]; /* -1 free, else batch k or 100+contract k */
  for (int k = 0; k < lr; k++) lrole[k] = -1;
  for (int k = 0; k < rr; k++) rrole[k] = -1;
  for (int k = 0; k < nlb; k++) {
    if (lb[k] < 0 || lb[k] >= lr || rb[k] < 0 || rb[k] >= rr) goto bad;
    lrole[lb[k]] = k;
    rrole[rb[k]] = k;
  }
  for (int k = 0; k < nlc; k++) {
    if (lc[k] < 0 || lc[k] >= lr || rc[k] < 0 || rc[k] >= rr) goto bad;
    lrole[lc[k]] = 100 + k;
    rrole[rc[k]] = 100 + k;
  }
  char **li = idxv(g, lr), **ri = idxv(g, rr);
  int o = nlb;
  for (int k = 0; k < lr; k++)
    if (lrole[k] == -1) li[k] = idx[o++];
  for (int k = 0; k < rr; k++)
    if (rrole[k] == -1) ri[k] = idx[o++];
  int isf = ocl_dtype_is_float(dt);
  const char *W = isf ? ocl_compute_type(dt) : ocl_dtype_bits(dt) == 64 ? "ulong" : "uint";
  char *acc = gstr(g, "acc%d", g->tmp++);
  line(c, "%s %s = 0;", W, acc);
  char *cv[OCL_MAX_RANK];
  for (int k = 0; k < nlc; k++) {
    cv[k] = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", cv[k], cv[k], (long long)l->shape.dims[lc[k]], cv[k]));
  }
  for (int k = 0; k < lr; k++)
    if (lrole[k] >= 100) li[k] = cv[lrole[k] - 100];
    else if (lrole[k] >= 0) li[k] = idx[lrole[k]];
  for (int k = 0; k < rr; k++)
    if (rrole[k] >= 100) ri[k] = cv[rrole[k] - 100];
    else if (rrole[k] >= 0) ri[k] = idx[rrole[k]];
  int mk = memo_mark(c);
  char *a = convert_expr(g, l->shape.dtype, dt, emit(c, l, li));
  char *b = convert_expr(g, r->shape.dtype, dt, emit(c, r, ri));
  if (isf) line(c, "%s += %s * %s;", acc, a, b);
  else {
    const char *UT = ocl_dtype_is_signed(dt) ? gstr(g, "u%s", ocl_compute_type(dt)) : ocl_compute_type(dt);
    line(c, "%s += (%s)(%s)(%s) * (%s)(%s)(%s);", acc, W, UT, a, W, UT, b);
  }
  memo_reset(c, mk);
  for (int k = 0; k < nlc; k++) close_block(c, NULL);
  if (isf) return newvar(c, dt, rnd(g, dt, acc));
  return newvar(c, dt, gstr(g, "(%s)%s", ocl_compute_type(dt), acc));
bad:
  fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dot dimension numbers", ins->name);
  return "0";
}

static int window_of(gen *g, const ocl_instr *ins, int n, ocl_window_dim *w) {
  for (int k = 0; k < n; k++) {
    w[k].size = 1;
    w[k].stride = 1;
    w[k].pad_lo = w[k].pad_hi = 0;
    w[k].lhs_dilate = w[k].rhs_dilate = 1;
    w[k].reversal = 0;
  }
  const char *a = ocl_attr(ins, "window");
  if (!a) return n == 0 ? 0 : (fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: no window", ins->name), -1);
  int m = ocl_parse_window(a, w, OCL_MAX_RANK);
  if (m != n) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: window has %d dimensions, expected %d", ins->name, m, n);
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (w[k].stride < 1 || w[k].lhs_dilate < 1 || w[k].rhs_dilate < 1 || w[k].size < 0) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad window", ins->name);
      return -1;
    }
  return 0;
}

/* Input position of output o and window offset w along one dimension; writes the
 * validity condition and the position expression. */
static void window_pos(gen *g, const ocl_window_dim *w, const char *o, const char *wv, int64_t in_dim, char **cond,
                       char **pos) {
  char *p = gstr(g, "((%s) * %lldL - %lldL + (%s) * %lldL)", o, (long long)w->stride, (long long)w->pad_lo, wv,
                 (long long)w->rhs_dilate);
  if (w->lhs_dilate > 1) {
    *cond = gstr(g, "%s && %s >= 0 && %s %% %lldL == 0 && %s / %lldL < %lldL", *cond, p, p, (long long)w->lhs_dilate, p,
                 (long long)w->lhs_dilate, (long long)in_dim);
    *pos = gstr(g, "(%s / %lldL)", p, (long long)w->lhs_dilate);
  } else {
    *cond = gstr(g, "%s && %s >= 0 && %s < %lldL", *cond, p, p, (long long)in_dim);
    *pos = p;
  }
}

char *emit_conv(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  ocl_conv_dnums dn;
  const char *a = ocl_attr(ins, "dim_labels");
  int dt = ins->shape.dtype;
  if (!a || ocl_parse_conv_dnums(a, &dn) != 0) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad dim_labels", ins->name);
    return "0";
  }
  int ns = dn.n_spatial;
  if (l->shape.rank != ns + 2 || r->shape.rank != ns + 2 || ins->shape.rank != ns + 2) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: convolution ranks do not match dim_labels", ins->name);
    return "0";
  }
  ocl_window_dim w[OCL_MAX_RANK];
  if (window_of(g, ins, ns, w)) return "0";
  int64_t groups = 1;
  const char *fg = ocl_attr(ins, "feature_group_count");
  if (fg) groups = strtoll(fg, NULL, 10);
  int64_t in_f = l->shape.dims[dn.in_feature], out_f = ins->shape.dims[dn.out_feature];
  if (groups < 1 || in_f % groups || out_f % groups || r->shape.dims[dn.k_in_feature] != in_f / groups) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad feature_group_count", ins->name);
    return "0";
  }
  int64_t ifg = in_f / groups, ofg = out_f / groups;
  int isf = ocl_dtype_is_float(dt);
  const char *W = isf ? ocl_compute_type(dt) : ocl_dtype_bits(dt) == 64 ? "ulong" : "uint";
  char *acc = gstr(g, "acc%d", g->tmp++);
  line(c, "%s %s = 0;", W, acc);
  char *grp = gstr(g, "((%s) / %lldL)", idx[dn.out_feature], (long long)ofg);
  char *ic = gstr(g, "r%d", g->tmp++);
  open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", ic, ic, (long long)ifg, ic));
  char **li = idxv(g, ns + 2), **ri = idxv(g, ns + 2);
  char *cond = gstr(g, "1");
  for (int k = 0; k < ns; k++) {
    char *wv = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", wv, wv, (long long)w[k].size, wv));
    window_pos(g, &w[k], idx[dn.out_spatial[k]], wv, l->shape.dims[dn.in_spatial[k]], &cond, &li[dn.in_spatial[k]]);
    ri[dn.k_spatial[k]] = w[k].reversal ? gstr(g, "(%lldL - %s)", (long long)(w[k].size - 1), wv) : wv;
  }
  li[dn.in_batch] = idx[dn.out_batch];
  li[dn.in_feature] = gstr(g, "(%s * %lldL + %s)", grp, (long long)ifg, ic);
  ri[dn.k_in_feature] = ic;
  ri[dn.k_out_feature] = idx[dn.out_feature];
  int mk = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *x = convert_expr(g, l->shape.dtype, dt, emit(c, l, li));
  char *y = convert_expr(g, r->shape.dtype, dt, emit(c, r, ri));
  if (isf) line(c, "%s += %s * %s;", acc, x, y);
  else {
    const char *UT = ocl_dtype_is_signed(dt) ? gstr(g, "u%s", ocl_compute_type(dt)) : ocl_compute_type(dt);
    line(c, "%s += (%s)(%s)(%s) * (%s)(%s)(%s);", acc, W, UT, x, W, UT, y);
  }
  memo_reset(c, mk);
  close_block(c, NULL);
  for (int k = 0; k < ns; k++) close_block(c, NULL);
  close_block(c, NULL);
  if (isf) return newvar(c, dt, rnd(g, dt, acc));
  return newvar(c, dt, gstr(g, "(%s)%s", ocl_compute_type(dt), acc));
}

char *emit_reduce_window(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0], *init = ins->operands[1];
  int n = x->shape.rank;
  ocl_window_dim w[OCL_MAX_RANK];
  if (ins->shape.rank != n || window_of(g, ins, n, w)) {
    if (!g->code) fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad reduce-window", ins->name);
    return "0";
  }
  char *acc = gstr(g, "acc%d", g->tmp++);
  char *iv = emit(c, init, NULL);
  line(c, "%s %s = %s;", ocl_compute_type(ins->shape.dtype), acc, iv);
  char **xi = idxv(g, n);
  char *cond = gstr(g, "1");
  for (int k = 0; k < n; k++) {
    char *wv = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", wv, wv, (long long)w[k].size, wv));
    window_pos(g, &w[k], idx[k], wv, x->shape.dims[k], &cond, &xi[k]);
  }
  int mk = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *v = emit(c, x, xi);
  line(c, "%s = %s;", acc, emit_reducer_call(c, ins->called[0], ins->shape.dtype, acc, v));
  memo_reset(c, mk);
  close_block(c, NULL);
  for (int k = 0; k < n; k++) close_block(c, NULL);
  return acc;
}

/* ------------------------------------------------------------------ kernels ---- */

/* A plain f32 matmul (one free dimension per side, one contracting dimension, any batch
 * dimensions) big enough to be worth it becomes a tiled kernel: TxT work-groups stage
 * TxT tiles of both operands in local memory (the operands' producers are still fused:
 * the tile loads are emitted like any other read). */

int gen_tiled_dot(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c) {
  if (strcmp(ins->opcode, "dot") || g->caps->max_work_group < TILE * TILE || g->caps->local_mem < 2 * TILE * (TILE + 1) * 4)
    return 0;
  const ocl_instr *l = ins->operands[0], *r = ins->operands[1];
  if (ins->shape.dtype != KILN_DTYPE_F32 || l->shape.dtype != KILN_DTYPE_F32 || r->shape.dtype != KILN_DTYPE_F32) return 0;
  int64_t lb[OCL_MAX_RANK], rb[OCL_MAX_RANK], lc[OCL_MAX_RANK], rc[OCL_MAX_RANK];
  const char *s;
  int nlb = (s = ocl_attr(ins, "lhs_batch_dims")) ? ocl_parse_int_list(s, lb, OCL_MAX_RANK) : 0;
  int nrb = (s = ocl_attr(ins, "rhs_batch_dims")) ? ocl_parse_int_list(s, rb, OCL_MAX_RANK) : 0;
  int nlc = (s = ocl_attr(ins, "lhs_contracting_dims")) ? ocl_parse_int_list(s, lc, OCL_MAX_RANK) : 0;
  int nrc = (s = ocl_attr(ins, "rhs_contracting_dims")) ? ocl_parse_int_list(s, rc, OCL_MAX_RANK) : 0;
  int lr = l->shape.rank, rr = r->shape.rank;
  if (nlb < 0 || nlb != nrb || nlc != 1 || nrc != 1 || lr != nlb + 2 || rr != nrb + 2 || ins->shape.rank != nlb + 2)
    return 0;
  int lrole[OCL_MAX_RANK], rrole[OCL_MAX_RANK];
  for (int k = 0; k < lr; k++) lrole[k] = -1;
  for (int k = 0; k < rr; k++) rrole[k] = -1;
  for (int k = 0; k < nlb; k++) {
    if (lb[k] < 0 || lb[k] >= lr || rb[k] < 0 || rb[k] >= rr) return 0;
    lrole[lb[k]] = k;
    rrole[rb[k]] = k;
  }
  if (lc[0] < 0 || lc[0] >= lr || rc[0] < 0 || rc[0] >= rr || lrole[lc[0]] != -1 || rrole[rc[0]] != -1) return 0;
  lrole[lc[0]] = 100;
  rrole[rc[0]] = 100;
  int lf = -1, rf = -1;
  for (int k = 0; k < lr; k++)
    if (lrole[k] == -1) lf = k;
  for (int k = 0; k < rr; k++)
    if (rrole[k] == -1) rf = k;
  if (lf < 0 || rf < 0) return 0;
  int64_t M = l->shape.dims[lf], N = r->shape.dims[rf], K = l->shape.dims[lc[0]], B = 1;
  if (K != r->shape.dims[rc[0]] || M * N < 1024 || K < TILE) return 0;
  for (int k = 0; k < nlb; k++) B *= ins->shape.dims[k];
  /* Batch indices from get_global_id(2). */
  char **bidx = idxv(g, nlb + 1);
  int64_t stride = 1;
  for (int k = nlb - 1; k >= 0; k--) {
    bidx[k] = gstr(g, "q%d", k);
    line(c, "long q%d = bb / %lldL %% %lldL;", k, (long long)stride, (long long)ins->shape.dims[k]);
    stride *= ins->shape.dims[k];
  }
  line(c, "float acc = 0.0f;");
  open_block(c, gstr(g, "for (long k0 = 0; k0 < %lldL; k0 += %d)", (long long)K, TILE));
  for (int side = 0; side < 2; side++) {
    const ocl_instr *x = side ? r : l;
    int *role = side ? rrole : lrole;
    char **xi = idxv(g, x->shape.rank);
    for (int k = 0; k < x->shape.rank; k++)
      xi[k] = role[k] == 100 ? "tk" : role[k] == -1 ? "tf" : bidx[role[k]];
    open_block(c, "");
    if (!side) line(c, "long tf = get_group_id(1) * %dL + lr, tk = k0 + lc;", TILE);
    else line(c, "long tk = k0 + lr, tf = get_group_id(0) * %dL + lc;", TILE);
    line(c, "float v = 0.0f;");
    int mk = memo_mark(c);
    open_block(c, gstr(g, "if (tf < %lldL && tk < %lldL)", (long long)(side ? N : M), (long long)K));
    char *val = emit(c, x, xi);
    line(c, "v = %s;", val);
    close_block(c, NULL);
    memo_reset(c, mk);
    line(c, "%s[lr][lc] = v;", side ? "Bs" : "As");
    close_block(c, NULL);
  }
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  line(c, "for (int t = 0; t < %d; t++) acc += As[lr][t] * Bs[t][lc];", TILE);
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  close_block(c, NULL);
  line(c, "if (row < %lldL && col < %lldL) out[(bb * %lldL + row) * %lldL + col] = acc;", (long long)M, (long long)N,
       (long long)M, (long long)N);
  kp->work_dim = 3;
  kp->local[0] = kp->local[1] = TILE;
  kp->local[2] = 1;
  kp->global[0] = (size_t)((N + TILE - 1) / TILE * TILE);
  kp->global[1] = (size_t)((M + TILE - 1) / TILE * TILE);
  kp->global[2] = (size_t)B;
  return 1;
}

/* A single-input reduce over many elements becomes one work-group per output element:
 * each work-item folds a strided share of the reduced elements, then the group combines
 * the partial results in local memory (a tree; a flag marks work-items that saw no
 * element, so the init value is applied exactly once, by the final combine). */

static int tree_group_size(const gen *g) {
  int l = 256;
  while (l > 1 && (size_t)l > g->caps->max_work_group) l /= 2;
  return l;
}

int gen_tree_reduce(gen *g, const ocl_instr *ins, ocl_kernel_plan *kp, ectx *c) {
  if (strcmp(ins->opcode, "reduce") || ins->n_operands != 2 || ins->shape.dtype == 0) return 0;
  int L = tree_group_size(g);
  if (L < 32 || g->caps->local_mem < (size_t)L * 9) return 0;
  const ocl_instr *x = ins->operands[0];
  int64_t rd[OCL_MAX_RANK];
  const char *a = ocl_attr(ins, "dimensions");
  int n = a ? ocl_parse_int_list(a, rd, OCL_MAX_RANK) : -1;
  int xr = x->shape.rank;
  if (n <= 0 || xr - n != ins->shape.rank) return 0;
  int reduced[OCL_MAX_RANK] = {0};
  int64_t R = 1;
  for (int k = 0; k < n; k++) {
    if (rd[k] < 0 || rd[k] >= xr || reduced[rd[k]]) return 0;
    reduced[rd[k]] = 1;
    R *= x->shape.dims[rd[k]];
  }
  if (R < RED_THRESHOLD) return 0;
  int dt = ins->shape.dtype;
  const char *T = ocl_compute_type(dt);
  int rank = ins->shape.rank;
  char **idx = idxv(g, rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = gstr(g, "i%d", k);
    line(c, "long i%d = grp / %lldL %% %lldL;", k, (long long)stride, (long long)ins->shape.dims[k]);
    stride *= ins->shape.dims[k];
  }
  line(c, "%s p = 0;", T);
  line(c, "int have = 0;");
  open_block(c, gstr(g, "for (long rr = lid; rr < %lldL; rr += %d)", (long long)R, L));
  char **oi = idxv(g, xr);
  int o = 0;
  stride = 1;
  for (int k = xr - 1; k >= 0; k--)
    if (reduced[k]) {
      oi[k] = gstr(g, "(rr / %lldL %% %lldL)", (long long)stride, (long long)x->shape.dims[k]);
      stride *= x->shape.dims[k];
    }
  for (int k = 0; k < xr; k++)
    if (!reduced[k]) oi[k] = idx[o++];
  int mk = memo_mark(c);
  char *v = emit(c, x, oi);
  line(c, "p = have ? %s : %s;", emit_reducer_call(c, ins->called[0], dt, "p", v), v);
  line(c, "have = 1;");
  memo_reset(c, mk);
  close_block(c, NULL);
  line(c, "vals[lid] = p;");
  line(c, "flags[lid] = (uchar)have;");
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  open_block(c, gstr(g, "for (int s = %d; s > 0; s >>= 1)", L / 2));
  open_block(c, "if (lid < s)");
  line(c, "if (flags[lid] && flags[lid + s]) vals[lid] = %s;",
       emit_reducer_call(c, ins->called[0], dt, "vals[lid]", "vals[lid + s]"));
  line(c, "else if (flags[lid + s]) { vals[lid] = vals[lid + s]; flags[lid] = 1; }");
  close_block(c, NULL);
  line(c, "barrier(CLK_LOCAL_MEM_FENCE);");
  close_block(c, NULL);
  open_block(c, "if (lid == 0)");
  char *iv = emit(c, ins->operands[1], NULL);
  line(c, "%s r = flags[0] ? %s : %s;", T, emit_reducer_call(c, ins->called[0], dt, iv, "vals[0]"), iv);
  if (dt == KILN_DTYPE_F16) line(c, "out[grp] = f2h(r);");
  else if (dt == KILN_DTYPE_BF16) line(c, "out[grp] = f2bf(r);");
  else line(c, "out[grp] = (%s)r;", ocl_storage_type(dt));
  close_block(c, NULL);
  kp->work_dim = 1;
  kp->local[0] = (size_t)L;
  kp->global[0] = (size_t)kp->n_elems * (size_t)L;
  kp->local[1] = kp->local[2] = kp->global[1] = kp->global[2] = 1;
  return L;
}


/* ------------------------------------------------------------------ sort ------- */

/* The comparator as a function of 2n scalars returning uchar (a before b). */
const char *comparator_name(gen *g, const ocl_comp *comp) {
  for (int i = 0; i < g->n_reducers; i++)
    if (g->reducers[i].comp == comp && g->reducers[i].dtype == -1) return g->reducers[i].name;
  reducer_fn *nr = realloc(g->reducers, (size_t)(g->n_reducers + 1) * sizeof *nr);
  if (!nr) {
    fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    return "cmp";
  }
  g->reducers = nr;
  reducer_fn *r = &g->reducers[g->n_reducers++];
  r->comp = comp;
  r->dtype = -1;
  snprintf(r->name, sizeof r->name, "cmp%d", g->n_reducers - 1);
  sb body = {0};
  ectx c = {0};
  c.g = g;
  c.out = &body;
  c.comp = comp;
  char **pv = idxv(g, comp->n_params);
  for (int k = 0; k < comp->n_params; k++) pv[k] = gstr(g, "x%d", k);
  c.param_vars = pv;
  char *v = emit(&c, comp->root, NULL);
  sbf(&g->src, "static inline uchar %s(", r->name);
  for (int k = 0; k < comp->n_params; k++)
    sbf(&g->src, "%s x%d%s", ocl_compute_type(comp->params[k]->shape.dtype), k, k + 1 < comp->n_params ? ", " : "");
  sbf(&g->src, ") {\n%s  return %s;\n}\n", body.p ? body.p : "", v);
  if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  free(body.p);
  free(c.memo);
  return r->name;
}

/* Element idx of the operands goes to position rank(idx) along the sort dimension, where
 * rank counts the elements that come before it: those the comparator puts first, and
 * equivalent ones at lower indices (a stable sort, as kiln's evaluator does). The kernel
 * runs one work-item per element and stores component j there. */
void gen_sort(gen *g, const ocl_instr *ins, int j, ectx *c) {
  int n = ins->n_operands;
  const ocl_shape *s = &ins->operands[0]->shape;
  int64_t d[OCL_MAX_RANK];
  if (int_attr_list(ins, "dimensions", d) != 1 || d[0] < 0 || d[0] >= s->rank || j < 0 || j >= n) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad sort", ins->name);
    return;
  }
  int sd = (int)d[0], rank = s->rank;
  char **idx = idxv(g, rank), **jdx = idxv(g, rank), **pos = idxv(g, rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = gstr(g, "i%d", k);
    int64_t dk = s->dims[k] ? s->dims[k] : 1;
    line(c, "long i%d = gid / %lldL %% %lldL;", k, (long long)stride, (long long)dk);
    stride *= dk;
  }
  for (int k = 0; k < rank; k++) jdx[k] = pos[k] = idx[k];
  jdx[sd] = "sj";
  pos[sd] = "cnt";
  const char *fn = comparator_name(g, ins->called[0]);
  char **own = idxv(g, n);
  for (int k = 0; k < n; k++) own[k] = emit(c, ins->operands[k], idx);
  line(c, "long cnt = 0;");
  open_block(c, gstr(g, "for (long sj = 0; sj < %lldL; sj++)", (long long)s->dims[sd]));
  line(c, "if (sj == %s) continue;", idx[sd]);
  int mk = memo_mark(c);
  char **other = idxv(g, n);
  for (int k = 0; k < n; k++) other[k] = emit(c, ins->operands[k], jdx);
  char *before = gstr(g, "%s(", fn), *after = gstr(g, "%s(", fn);
  for (int k = 0; k < n; k++) {
    before = gstr(g, "%s%s, %s%s", before, other[k], own[k], k + 1 < n ? ", " : ")");
    after = gstr(g, "%s%s, %s%s", after, own[k], other[k], k + 1 < n ? ", " : ")");
  }
  line(c, "if (%s || (sj < %s && !%s)) cnt++;", before, idx[sd], after);
  memo_reset(c, mk);
  close_block(c, NULL);
  int dt = ins->operands[j]->shape.dtype;
  char *dst = linear(g, rank, s->dims, pos);
  if (dt == KILN_DTYPE_F16) line(c, "out[%s] = f2h(%s);", dst, own[j]);
  else if (dt == KILN_DTYPE_BF16) line(c, "out[%s] = f2bf(%s);", dst, own[j]);
  else line(c, "out[%s] = (%s)%s;", dst, ocl_storage_type(dt), own[j]);
}

/* ------------------------------------------------------------------ scatter ---- */

/* Scatter, gather-style: output element o starts as the operand's and folds in, in
 * row-major order of the scatter positions, every update whose window lands on o (a
 * window that does not fit entirely is skipped, as kiln's evaluator and XLA's backends
 * do). With the update window dimensions trailing, at most one update of each scatter
 * position lands on o and the positions' order is the updates' row-major order; otherwise
 * the loop runs over every update element in row-major order. Either way duplicates
 * combine in exactly the evaluator's order. */
char *emit_scatter(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0], *ix = ins->operands[1], *up = ins->operands[2];
  int64_t uwd[OCL_MAX_RANK], iwd[OCL_MAX_RANK], sdod[OCL_MAX_RANK], ibd[OCL_MAX_RANK], sibd[OCL_MAX_RANK];
  int nuw = int_attr_list(ins, "update_window_dims", uwd), niw = int_attr_list(ins, "inserted_window_dims", iwd);
  int nsd = int_attr_list(ins, "scatter_dims_to_operand_dims", sdod);
  int nib = int_attr_list(ins, "input_batching_dims", ibd), nsb = int_attr_list(ins, "scatter_indices_batching_dims", sibd);
  const char *iv = ocl_attr(ins, "index_vector_dim");
  int r = x->shape.rank, ir = ix->shape.rank, ur = up->shape.rank;
  int ivd = iv ? atoi(iv) : ir;
  int wdims[OCL_MAX_RANK], nw = 0;
  for (int d = 0; d < r; d++)
    if (in_list(iwd, niw, d) < 0 && in_list(ibd, nib, d) < 0) wdims[nw++] = d;
  int sdims[OCL_MAX_RANK], ns = 0;
  for (int d = 0; d < ir; d++)
    if (d != ivd) sdims[ns++] = d;
  if (nuw < 0 || niw < 0 || nsd < 0 || nib < 0 || nsb != nib || ivd < 0 || ivd > ir || nw != nuw || ur != ns + nw) {
    fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad scatter dimension numbers", ins->name);
    return "0";
  }
  int trailing = 1;
  for (int w = 0; w < nw; w++)
    if (uwd[w] != ns + w) trailing = 0;
  int dt = ins->shape.dtype;
  char *acc = gstr(g, "acc%d", g->tmp++);
  char *v0 = emit(c, x, idx);
  line(c, "%s %s = %s;", ocl_compute_type(dt), acc, v0);
  /* Trailing window dims: loop over scatter positions only (at most one update of each
   * lands on o). Otherwise loop over every update element in row-major order. */
  char **bv = idxv(g, ns), **wv = idxv(g, nw);
  int n_loops = 0;
  for (int k = 0, b = 0, w = 0; k < ur; k++) {
    int is_window = w < nw && uwd[w] == k;
    if (is_window && trailing) break;
    char *var = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", var, var, (long long)up->shape.dims[k], var));
    n_loops++;
    if (is_window) wv[w++] = var;
    else bv[b++] = var;
  }
  int mk = memo_mark(c);
  /* The window's start in the operand, and its extent. */
  char **start = idxv(g, r);
  int64_t window[OCL_MAX_RANK];
  for (int d = 0; d < r; d++) {
    start[d] = "0L";
    window[d] = 1;
  }
  for (int w = 0; w < nw; w++) window[wdims[w]] = up->shape.dims[uwd[w]];
  char **iidx = idxv(g, ir + 1);
  for (int b = 0; b < ns; b++) iidx[sdims[b]] = bv[b];
  for (int k = 0; k < nsd; k++) {
    if (ivd < ir) iidx[ivd] = gstr(g, "%dL", k);
    start[sdod[k]] = index_value(c, ix, iidx);
  }
  for (int j = 0; j < nib; j++) {
    int p = -1;
    for (int q = 0; q < ns; q++)
      if (sdims[q] == sibd[j]) p = q;
    if (p < 0 || ibd[j] < 0 || ibd[j] >= r) {
      fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad scatter batching dims", ins->name);
      return "0";
    }
    start[ibd[j]] = bv[p];
  }
  char *cond = gstr(g, "1");
  for (int d = 0; d < r; d++)
    cond = gstr(g, "%s && %s >= 0 && %s <= %lldL && (%s) - %s >= 0 && (%s) - %s < %lldL", cond, start[d], start[d],
                (long long)(x->shape.dims[d] - window[d]), idx[d], start[d], idx[d], start[d], (long long)window[d]);
  if (!trailing)
    for (int w = 0; w < nw; w++) cond = gstr(g, "%s && (%s) - %s == %s", cond, idx[wdims[w]], start[wdims[w]], wv[w]);
  open_block(c, gstr(g, "if (%s)", cond));
  char **uidx = idxv(g, ur);
  for (int k = 0, b = 0, w = 0; k < ur; k++) {
    if (w < nw && uwd[w] == k) {
      uidx[k] = gstr(g, "((%s) - %s)", idx[wdims[w]], start[wdims[w]]);
      w++;
    } else {
      uidx[k] = bv[b++];
    }
  }
  char *u = emit(c, up, uidx);
  line(c, "%s = %s;", acc, emit_reducer_call(c, ins->called[0], dt, acc, u));
  close_block(c, NULL);
  memo_reset(c, mk);
  for (int k = 0; k < n_loops; k++) close_block(c, NULL);
  return acc;
}

/* ------------------------------------------------------------------ select-and-scatter */

/* Gather-style: output element o starts at init and folds in, in row-major order of the
 * source, source[s] for every window s that covers o and whose selected element is o.
 * The selection walks the window in row-major order skipping padding, keeping the
 * current choice while select(current, candidate) is true (the evaluator's rule); the
 * fold is scatter(source value, current value). */
char *emit_select_and_scatter(ectx *c, const ocl_instr *ins, char **idx) {
  gen *g = c->g;
  const ocl_instr *x = ins->operands[0], *src = ins->operands[1], *init = ins->operands[2];
  int r = x->shape.rank, dt = ins->shape.dtype;
  ocl_window_dim w[OCL_MAX_RANK];
  if (src->shape.rank != r || window_of(g, ins, r, w)) {
    if (!g->code) fail(g, KILN_PLUGIN_ERR_INVALID_ARGUMENT, "%s: bad select-and-scatter", ins->name);
    return "0";
  }
  const char *sel = comparator_name(g, ins->called[0]);
  const char *T = ocl_compute_type(dt);
  char *acc = gstr(g, "acc%d", g->tmp++);
  char *iv = emit(c, init, NULL);
  line(c, "%s %s = %s;", T, acc, iv);
  /* Windows covering o, source positions ascending (offsets descending). */
  char **sv = idxv(g, r);
  for (int d = 0; d < r; d++) {
    char *k = gstr(g, "r%d", g->tmp++), *q = gstr(g, "l%d", g->tmp++);
    sv[d] = gstr(g, "l%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = %lldL; %s >= 0; %s--)", k, (long long)(w[d].size - 1), k, k));
    line(c, "long %s = (%s) * %lldL + %lldL - %s * %lldL;", q, idx[d], (long long)w[d].lhs_dilate, (long long)w[d].pad_lo,
         k, (long long)w[d].rhs_dilate);
    line(c, "if (%s < 0 || %s %% %lldL != 0) continue;", q, q, (long long)w[d].stride);
    line(c, "long %s = %s / %lldL;", sv[d], q, (long long)w[d].stride);
    line(c, "if (%s >= %lldL) continue;", sv[d], (long long)src->shape.dims[d]);
  }
  int mk = memo_mark(c);
  /* The selection inside window s. */
  char *have = gstr(g, "h%d", g->tmp++), *cv = gstr(g, "t%d", g->tmp++), *hit = gstr(g, "h%d", g->tmp++);
  line(c, "int %s = 0, %s = 0;", have, hit);
  line(c, "%s %s = 0;", T, cv);
  char **xi = idxv(g, r), **mv = idxv(g, r);
  char *cond = gstr(g, "1"), *same = gstr(g, "1");
  for (int d = 0; d < r; d++) {
    mv[d] = gstr(g, "r%d", g->tmp++);
    open_block(c, gstr(g, "for (long %s = 0; %s < %lldL; %s++)", mv[d], mv[d], (long long)w[d].size, mv[d]));
    char *p = gstr(g, "(%s * %lldL + %s * %lldL - %lldL)", sv[d], (long long)w[d].stride, mv[d], (long long)w[d].rhs_dilate,
                   (long long)w[d].pad_lo);
    cond = gstr(g, "%s && %s >= 0 && %s %% %lldL == 0 && %s / %lldL < %lldL", cond, p, p, (long long)w[d].lhs_dilate, p,
                (long long)w[d].lhs_dilate, (long long)x->shape.dims[d]);
    xi[d] = gstr(g, "(%s / %lldL)", p, (long long)w[d].lhs_dilate);
    same = gstr(g, "%s && %s == (%s)", same, xi[d], idx[d]);
  }
  int mk2 = memo_mark(c);
  open_block(c, gstr(g, "if (%s)", cond));
  char *v = emit(c, x, xi);
  line(c, "if (!%s || !%s(%s, %s)) { %s = %s; %s = %s; %s = 1; }", have, sel, cv, v, cv, v, hit, same, have);
  close_block(c, NULL);
  memo_reset(c, mk2);
  for (int d = 0; d < r; d++) close_block(c, NULL);
  open_block(c, gstr(g, "if (%s && %s)", have, hit));
  char *sval = emit(c, src, sv);
  line(c, "%s = %s;", acc, emit_reducer_call(c, ins->called[1], dt, sval, acc));
  close_block(c, NULL);
  memo_reset(c, mk);
  for (int d = 0; d < r; d++) close_block(c, NULL);
  return acc;
}
