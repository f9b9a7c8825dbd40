/* HLO IR -> OpenCL C and a launch plan (the driver of the generator; see ocl_gen.h for
 * its parts). The entry computation is split into kernels, one
 * per materialized instruction (roots and root-tuple elements, reduce / dot /
 * convolution / reduce-window, values used several times whose inlined cost is more than
 * a few operations, and non-trivial operands of the contractions), with one work-item per
 * output element. Every other instruction is fused into its consumers: the emitter
 * produces the value of instruction X at a multi-index (C expressions of the kernel's
 * index variables) as statements writing fresh temporaries, so elementwise chains,
 * broadcast, reshape, transpose, slice, reverse, pad, concatenate, iota, convert,
 * compare, select and clamp cost no memory traffic. Values are memoised per (instruction,
 * index) within a block so diamonds are computed once. Reducer computations become
 * OpenCL functions of scalars. Integer semantics follow XLA / kiln's evaluator through
 * the preamble's helpers (ocl_types.c); f16/bf16 compute in float and are rounded after
 * every operation. The support check (ocl_instr_supported / ocl_op_supported) says
 * exactly what the generator accepts. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_gen.h"

static int is_contraction(const char *op) {
  return !strcmp(op, "reduce") || !strcmp(op, "dot") || !strcmp(op, "convolution") || !strcmp(op, "reduce-window") ||
         !strcmp(op, "scatter") || !strcmp(op, "select-and-scatter");
}

/* The contraction a fusion computes (XLA wraps single reduces, dots, ... in fusions, and
 * fuses producers into them), or NULL. */
static const ocl_instr *fused_contraction(const ocl_instr *ins) {
  if (strcmp(ins->opcode, "fusion") || ins->n_called != 1 || !ins->called[0]->root) return NULL;
  const ocl_instr *r = ins->called[0]->root;
  return is_contraction(r->opcode) ? r : NULL;
}

static void gen_kernel(gen *g, const ocl_instr *ins, int kidx) {
  ocl_kernel_plan *kp = &g->plan->kernels[kidx];
  snprintf(kp->name, sizeof kp->name, "k%d", kidx);
  kp->dtype = ins->shape.dtype;
  kp->rank = ins->shape.rank;
  memcpy(kp->dims, ins->shape.dims, sizeof kp->dims);
  kp->n_elems = ocl_shape_elems(&ins->shape);
  kp->bytes = (size_t)kp->n_elems * ocl_dtype_size(kp->dtype);
  sb body = {0};
  ectx c = {0};
  c.g = g;
  c.out = &body;
  c.kp = kp;
  c.self = ins;
  c.out_rank = ins->shape.rank;
  c.out_dims = ins->shape.dims;
  const ocl_instr *fc = fused_contraction(ins);
  if (fc) { /* the kernel is the fused contraction's, its parameters the fusion's operands */
    c.fus[c.n_fus++] = ins;
    ins = fc;
  }
  const ocl_instr *sorted = !strcmp(ins->opcode, "sort") ? ins
                            : (!strcmp(ins->opcode, "get-tuple-element") && !strcmp(ins->operands[0]->opcode, "sort"))
                                ? ins->operands[0]
                                : NULL;
  if (sorted) {
    c.out_rank = -1; /* writes go to other elements than it reads: never in place */
    gen_sort(g, sorted, sorted == ins ? 0 : (int)ins->int_payload, &c);
    sbf(&g->src, "__kernel void %s(", kp->name);
    for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
    sbf(&g->src, "__global %s *out, long n) {\n  long gid = get_global_id(0);\n  if (gid >= n) return;\n%s}\n",
        ocl_storage_type(kp->dtype), body.p ? body.p : "");
    if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    free(body.p);
    free(c.memo);
    free(c.ref_dtypes);
    return;
  }
  if (kp->n_elems > 0 && gen_tiled_dot(g, ins, kp, &c)) {
    sbf(&g->src, "__kernel __attribute__((reqd_work_group_size(%d, %d, 1))) void %s(", TILE, TILE, kp->name);
    for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
    sbf(&g->src,
        "__global float *out, long n) {\n  __local float As[%d][%d];\n  __local float Bs[%d][%d];\n"
        "  int lc = get_local_id(0), lr = get_local_id(1);\n"
        "  long col = get_global_id(0), row = get_global_id(1), bb = get_global_id(2);\n%s}\n",
        TILE, TILE + 1, TILE, TILE + 1, body.p ? body.p : "");
    if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    free(body.p);
    free(c.memo);
    free(c.ref_dtypes);
    return;
  }
  int L = kp->n_elems > 0 ? gen_tree_reduce(g, ins, kp, &c) : 0;
  if (L) {
    const char *ST = ocl_compute_type(kp->dtype);
    sbf(&g->src, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1))) void %s(", L, kp->name);
    for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
    sbf(&g->src,
        "__global %s *out, long n) {\n  __local %s vals[%d];\n  __local uchar flags[%d];\n"
        "  int lid = get_local_id(0);\n  long grp = get_group_id(0);\n%s}\n",
        ocl_storage_type(kp->dtype), ST, L, L, body.p ? body.p : "");
    if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
    free(body.p);
    free(c.memo);
    free(c.ref_dtypes);
    return;
  }
  int rank = ins->shape.rank;
  char **idx = idxv(g, rank);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = gstr(g, "i%d", k);
    /* 32-bit division where the index fits (64-bit division is slow on GPUs). */
    if (kp->n_elems < ((int64_t)1 << 31))
      line(&c, "long i%d = (long)((uint)gid / %lluU %% %lluU);", k, (unsigned long long)stride,
           (unsigned long long)(ins->shape.dims[k] ? ins->shape.dims[k] : 1));
    else
      line(&c, "long i%d = gid / %lldL %% %lldL;", k, (long long)stride, (long long)(ins->shape.dims[k] ? ins->shape.dims[k] : 1));
    stride *= ins->shape.dims[k] ? ins->shape.dims[k] : 1;
  }
  const char *op = ins->opcode;
  char *v;
  if (!strcmp(op, "reduce")) v = emit_reduce(&c, ins, idx, 0);
  else if (!strcmp(op, "get-tuple-element") && !strcmp(ins->operands[0]->opcode, "reduce"))
    v = emit_reduce(&c, ins->operands[0], idx, (int)ins->int_payload);
  else if (!strcmp(op, "dot")) v = emit_dot(&c, ins, idx);
  else if (!strcmp(op, "convolution")) v = emit_conv(&c, ins, idx);
  else if (!strcmp(op, "reduce-window")) v = emit_reduce_window(&c, ins, idx);
  else if (!strcmp(op, "scatter")) v = emit_scatter(&c, ins, idx);
  else if (!strcmp(op, "select-and-scatter")) v = emit_select_and_scatter(&c, ins, idx);
  else v = emit(&c, ins, idx);
  char *st;
  if (kp->dtype == KILN_DTYPE_F16) st = gstr(g, "f2h(%s)", v);
  else if (kp->dtype == KILN_DTYPE_BF16) st = gstr(g, "f2bf(%s)", v);
  else st = gstr(g, "(%s)(%s)", ocl_storage_type(kp->dtype), v);
  sbf(&g->src, "__kernel void %s(", kp->name);
  for (int i = 0; i < kp->n_refs; i++) sbf(&g->src, "__global const %s *b%d, ", ocl_storage_type(c.ref_dtypes[i]), i);
  sbf(&g->src, "__global %s *out, long n) {\n  long gid = get_global_id(0);\n  if (gid >= n) return;\n%s  out[gid] = %s;\n}\n",
      ocl_storage_type(kp->dtype), body.p ? body.p : "", st);
  if (body.oom) fail(g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  free(body.p);
  free(c.memo);
  free(c.ref_dtypes);
}

void ocl_plan_free(ocl_plan *p) {
  if (!p) return;
  free(p->source);
  if (p->kernels)
    for (int i = 0; i < p->n_kernels; i++) free(p->kernels[i].refs);
  free(p->kernels);
  if (p->consts)
    for (int i = 0; i < p->n_consts; i++) free(p->consts[i].data);
  free(p->consts);
  free(p->params);
  free(p->result_kernel);
  free(p);
}

int ocl_codegen(const ocl_module *m, const ocl_caps *caps, ocl_plan **out, char *err, size_t err_cap) {
  *out = NULL;
  gen g = {0};
  g.m = m;
  g.caps = caps;
  g.err = err;
  g.err_cap = err_cap;
  const ocl_comp *e = m ? m->entry : NULL;
  if (!e || !e->root) {
    snprintf(err, err_cap, "module has no entry computation");
    return KILN_PLUGIN_ERR_INVALID_ARGUMENT;
  }
  /* Support check first: UNIMPLEMENTED names the first instruction the device lacks. */
  for (int i = 0; i < e->n_instrs; i++)
    if (!ocl_instr_supported(e->instrs[i], caps, err, err_cap)) return KILN_PLUGIN_ERR_UNIMPLEMENTED;
  for (int c = 0; c < m->n_comps; c++)
    for (int i = 0; i < m->comps[c]->n_instrs; i++)
      if (!ocl_instr_shapes_ok(m->comps[c]->instrs[i], err, err_cap)) return KILN_PLUGIN_ERR_INVALID_ARGUMENT;
  const ocl_instr *root = e->root;
  if (root->shape.dtype == 0 && strcmp(root->opcode, "tuple")) {
    snprintf(err, err_cap, "%s: a tuple-shaped root must be a tuple instruction", root->name);
    return KILN_PLUGIN_ERR_UNIMPLEMENTED;
  }
  ocl_plan *p = calloc(1, sizeof *p);
  g.infos = calloc((size_t)e->n_instrs + 1, sizeof *g.infos);
  if (!p || !g.infos) {
    free(p);
    free(g.infos);
    snprintf(err, err_cap, "out of memory");
    return KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED;
  }
  g.plan = p;
  for (int i = 0; i < e->n_instrs; i++) {
    e->instrs[i]->user = &g.infos[i];
    g.infos[i].const_idx = -1;
    g.infos[i].kernel = -1;
  }
  /* Uses, inline sizes, materialization. */
  for (int i = 0; i < e->n_instrs; i++)
    for (int j = 0; j < e->instrs[i]->n_operands; j++) inf(e->instrs[i]->operands[j])->uses++;
  for (int i = 0; i < e->n_instrs; i++) {
    ocl_instr *x = e->instrs[i];
    info *in = inf(x);
    const char *op = x->opcode;
    if (!strcmp(op, "parameter") || !strcmp(op, "constant") || !strcmp(op, "iota")) in->size = 1;
    else {
      in->size = !strcmp(op, "fusion") && x->n_called == 1 ? x->called[0]->n_instrs : 1;
      for (int j = 0; j < x->n_operands; j++)
        if (!inf(x->operands[j])->materialized) in->size += inf(x->operands[j])->size;
    }
    if (!strcmp(op, "get-tuple-element") &&
        (!strcmp(x->operands[0]->opcode, "reduce") || !strcmp(x->operands[0]->opcode, "sort"))) {
      in->materialized = 1;
      continue;
    }
    if (!strcmp(op, "tuple") || !strcmp(op, "parameter") || !strcmp(op, "get-tuple-element") || x->shape.dtype == 0)
      continue;
    if (!strcmp(op, "constant")) {
      if (ocl_shape_elems(&x->shape) > 1 || x->shape.rank > 0) {
        ocl_const_plan *nc = realloc(p->consts, (size_t)(p->n_consts + 1) * sizeof *nc);
        if (!nc) goto oom;
        p->consts = nc;
        nc[p->n_consts].bytes = x->literal_bytes;
        nc[p->n_consts].data = malloc(x->literal_bytes ? x->literal_bytes : 1);
        if (!nc[p->n_consts].data) goto oom;
        if (x->literal_bytes) memcpy(nc[p->n_consts].data, x->literal, x->literal_bytes);
        in->const_idx = p->n_consts++;
      }
      continue;
    }
    if (is_contraction(op) || !strcmp(op, "sort") || fused_contraction(x) || (in->uses > 1 && in->size > 8) ||
        in->size > 200)
      in->materialized = 1;
    if (!strcmp(op, "dot") || !strcmp(op, "convolution") || !strcmp(op, "reduce-window"))
      for (int j = 0; j < x->n_operands; j++) {
        info *oi = inf(x->operands[j]);
        if (oi->size > 3 && strcmp(x->operands[j]->opcode, "tuple") && strcmp(x->operands[j]->opcode, "constant") &&
            strcmp(x->operands[j]->opcode, "parameter") && strcmp(x->operands[j]->opcode, "get-tuple-element"))
          oi->materialized = 1;
      }
  }
  /* Results. */
  int n_res = !strcmp(root->opcode, "tuple") ? root->n_operands : 1;
  p->n_results = n_res;
  p->result_kernel = calloc((size_t)n_res + 1, sizeof *p->result_kernel);
  if (!p->result_kernel) goto oom;
  for (int r = 0; r < n_res; r++) {
    const ocl_instr *x = root->opcode[0] == 't' && !strcmp(root->opcode, "tuple") ? root->operands[r] : root;
    inf(x)->materialized = 1;
  }
  /* Kernels, in instruction order. */
  for (int i = 0; i < e->n_instrs; i++)
    if (g.infos[i].materialized) g.infos[i].kernel = p->n_kernels++;
  p->kernels = calloc((size_t)p->n_kernels + 1, sizeof *p->kernels);
  if (!p->kernels) goto oom;
  for (int r = 0; r < n_res; r++) {
    const ocl_instr *x = !strcmp(root->opcode, "tuple") ? root->operands[r] : root;
    p->result_kernel[r] = inf(x)->kernel;
  }
  p->n_params = e->n_params;
  p->params = calloc((size_t)e->n_params + 1, sizeof *p->params);
  if (!p->params) goto oom;
  for (int i = 0; i < e->n_params; i++) {
    if (!e->params[i]) {
      snprintf(err, err_cap, "parameter %d is missing", i);
      ocl_plan_free(p);
      free(g.infos);
      return KILN_PLUGIN_ERR_INVALID_ARGUMENT;
    }
    p->params[i].dtype = e->params[i]->shape.dtype;
    p->params[i].rank = e->params[i]->shape.rank;
    memcpy(p->params[i].dims, e->params[i]->shape.dims, sizeof p->params[i].dims);
  }
  sbf(&g.src, "%s", ocl_preamble);
  for (int i = 0; i < e->n_instrs && !g.code; i++) {
    if (!g.infos[i].materialized) continue;
    ocl_kernel_plan *kp = &p->kernels[g.infos[i].kernel];
    gen_kernel(&g, e->instrs[i], g.infos[i].kernel);
    /* Buffer arguments plus the output and the element count must fit the device's limit. */
    size_t arg_bytes = (size_t)(kp->n_refs + 1) * sizeof(cl_mem) + sizeof(cl_long);
    if (!g.code && caps->max_param_bytes && arg_bytes > caps->max_param_bytes)
      fail(&g, KILN_PLUGIN_ERR_UNIMPLEMENTED, "%s: its kernel needs %d buffer arguments, more than the device takes",
           e->instrs[i]->name, kp->n_refs + 1);
  }
  if (g.src.oom && !g.code) fail(&g, KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  int code = g.code;
  if (!code) {
    p->source = g.src.p;
    g.src.p = NULL;
    *out = p;
  } else {
    ocl_plan_free(p);
  }
  for (int i = 0; i < e->n_instrs; i++) e->instrs[i]->user = NULL;
  free(g.src.p);
  free(g.infos);
  free(g.reducers);
  while (g.arena) {
    arena_blk *n = g.arena->next;
    free(g.arena);
    g.arena = n;
  }
  return code;
oom:
  ocl_plan_free(p);
  for (int i = 0; i < e->n_instrs; i++) e->instrs[i]->user = NULL;
  free(g.infos);
  snprintf(err, err_cap, "out of memory");
  return KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED;
}

