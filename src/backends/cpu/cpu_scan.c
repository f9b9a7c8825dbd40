/* Cumulative reductions as a native kernel. JAX writes cumsum / cumprod / cummax /
 * cummin as a reduce-window whose window spans the whole scanned dimension, padded
 * below by size - 1: output j folds inputs 0..j. Computed window by window that is
 * O(n^2) per row (a cumsum over 4096 elements folds 8 million terms per row); as a
 * running fold it is O(n): out[j] = f(out[j - 1], x[j]), out[-1] = init.
 *
 * Bit-exact with the evaluator, which folds each window's covered inputs in increasing
 * order starting from init (padding positions are skipped): the window of j covers
 * exactly 0..j, and f(...f(f(init, x0), x1)..., xj) is the running fold. Only the
 * forward form qualifies; a reversed cumsum (padding above) would associate the other
 * way and stays with the generic kernel. The generated function runs the fold over a
 * range of outer rows, with the reducer inlined by the elemental emitter; its loop over
 * the dims after the scanned one is innermost, so it vectorises when there are any. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_native.h"

/* Declared here rather than through <omp.h> (see cpu_codegen.c). */
int omp_get_max_threads(void);

typedef void (*scan_fn)(char **bufs, int64_t row_begin, int64_t row_end);

typedef struct scan_state {
  char *name;
  scan_fn fn;
  int64_t rows, row_elems; /* outer rows and the elements of each (n * inner) */
} scan_state;

/* The scanned dimension of a forward cumulative reduce-window, or -1. */
static int scan_dim(const hlo_instr *ins) {
  if (ins->op != HLO_OP_REDUCE_WINDOW || ins->n_operands != 2 || ins->n_called != 1) return -1;
  const hlo_shape *s = &ins->shape, *x = &ins->operands[0]->shape;
  if (!shape_is_array(s) || !shape_is_array(x) || !shape_same_dims(s, x) || s->type != x->type) return -1;
  if (ins->window.rank != s->rank || !shape_is_array(&ins->operands[1]->shape) || ins->operands[1]->shape.rank != 0)
    return -1;
  int d = -1;
  for (int k = 0; k < s->rank; k++) {
    const hlo_window_dim *w = &ins->window.dims[k];
    if (w->stride != 1 || w->lhs_dilate != 1 || w->rhs_dilate != 1 || w->reversal || w->pad_hi != 0) return -1;
    if (w->size == 1 && w->pad_lo == 0) continue;
    if (d >= 0 || w->size < s->dims[k] || w->pad_lo != w->size - 1) return -1;
    d = k;
  }
  return d;
}

static bool scan_supports(const hlo_instr *ins, strbuf *why) {
  if (scan_dim(ins) < 0) return false;
  return cpu_elemental_supports_scalar(ins, ins->called[0], 2, 1, why);
}

static LLVMValueRef gep(LLVMBuilderRef b, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(b, t, base, &i, 1, "");
}

/* void scan(char **bufs, i64 row_begin, i64 row_end): bufs[0] the result, bufs[1] the
 * input, bufs[2] the init scalar. For each row r and position j < n, and each inner
 * position i: out[r, j, i] = f(j ? out[r, j - 1, i] : init, x[r, j, i]). */
static void emit_scan(cpu_jit_module *jm, const hlo_instr *ins, const char *name, int64_t n, int64_t inner) {
  LLVMContextRef c = jm->ctx;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i8p = LLVMPointerType(i8, 0), i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef et = cpu_llvm_type(c, ins->shape.type), ep = LLVMPointerType(et, 0);
  LLVMTypeRef params[3] = {LLVMPointerType(i8p, 0), i64, i64};
  LLVMValueRef fn = LLVMAddFunction(jm->module, name, LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0));
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  LLVMValueRef bufs = LLVMGetParam(fn, 0), ptr[3];
  for (int k = 0; k < 3; k++)
    ptr[k] = LLVMBuildBitCast(b, LLVMBuildLoad2(b, i8p, gep(b, i8p, bufs, LLVMConstInt(i64, (unsigned)k, 0)), ""), ep, "");
  LLVMValueRef init = LLVMBuildLoad2(b, et, ptr[2], "init");
  cpu_emitter *e = cpu_emitter_new_scalar(jm->module, fn, b);
  cpu_loop rows, pos, in;
  cpu_loop_begin(b, fn, &rows, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), "row");
  LLVMValueRef row_base = LLVMBuildMul(b, rows.index, LLVMConstInt(i64, (unsigned long long)(n * inner), 0), "");
  /* j = 0: f(init, x) */
  cpu_loop_begin(b, fn, &in, LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, (unsigned long long)inner, 0), "i0");
  {
    LLVMValueRef at = LLVMBuildAdd(b, row_base, in.index, "");
    LLVMValueRef args[2] = {init, LLVMBuildLoad2(b, et, gep(b, et, ptr[1], at), "")}, r;
    cpu_emitter_reset_cache(e);
    cpu_emit_scalar_call(e, ins->called[0], args, &r);
    LLVMBuildStore(b, r, gep(b, et, ptr[0], at));
  }
  cpu_loop_end(b, &in);
  /* j >= 1: f(out[j - 1], x[j]) */
  cpu_loop_begin(b, fn, &pos, LLVMConstInt(i64, 1, 0), LLVMConstInt(i64, (unsigned long long)n, 0), "j");
  LLVMValueRef pos_base = LLVMBuildAdd(b, row_base, LLVMBuildMul(b, pos.index, LLVMConstInt(i64, (unsigned long long)inner, 0), ""), "");
  cpu_loop_begin(b, fn, &in, LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, (unsigned long long)inner, 0), "i");
  {
    LLVMValueRef at = LLVMBuildAdd(b, pos_base, in.index, "");
    LLVMValueRef prev = LLVMBuildSub(b, at, LLVMConstInt(i64, (unsigned long long)inner, 0), "");
    LLVMValueRef args[2] = {LLVMBuildLoad2(b, et, gep(b, et, ptr[0], prev), ""),
                            LLVMBuildLoad2(b, et, gep(b, et, ptr[1], at), "")},
                 r;
    cpu_emitter_reset_cache(e);
    cpu_emit_scalar_call(e, ins->called[0], args, &r);
    LLVMBuildStore(b, r, gep(b, et, ptr[0], at));
  }
  cpu_loop_end(b, &in);
  cpu_loop_end(b, &pos);
  cpu_loop_end(b, &rows);
  LLVMBuildRetVoid(b);
  cpu_emitter_free(e);
  LLVMDisposeBuilder(b);
}

static kiln_status scan_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                               bool *uses_jit) {
  *state = NULL;
  *uses_jit = false;
  int d = scan_dim(ins);
  if (d < 0) return ERR_UNIMPLEMENTED("reduce-window: not a cumulative scan");
  scan_state *s = calloc(1, sizeof *s);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  size_t len = strlen(prefix) + 8;
  if (!(s->name = malloc(len))) {
    free(s);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  snprintf(s->name, len, "%sscan", prefix);
  int64_t rows = 1, inner = 1, n = ins->shape.dims[d];
  for (int k = 0; k < d; k++) rows *= ins->shape.dims[k];
  for (int k = d + 1; k < ins->shape.rank; k++) inner *= ins->shape.dims[k];
  s->rows = rows;
  s->row_elems = n * inner;
  if (n * inner > 0) {
    emit_scan(jm, ins, s->name, n, inner);
    *uses_jit = true;
  }
  *state = s;
  return NULL;
}

static kiln_status scan_link(void *state, cpu_jit *jit) {
  scan_state *s = state;
  if (s->row_elems == 0) return NULL;
  void *addr;
  TRY(cpu_jit_lookup(jit, s->name, &addr));
  s->fn = (scan_fn)addr;
  return NULL;
}

static kiln_status scan_run(void *state, char *const *out, char *const *in) {
  const scan_state *s = state;
  if (s->row_elems == 0 || s->rows == 0) return NULL;
  char *bufs[3] = {out[0], in[0], in[1]};
  /* Rows are independent; split them when there is enough work to pay for a fork. */
  int64_t threads = s->rows * s->row_elems >= 65536 ? omp_get_max_threads() : 1;
  if (threads > s->rows) threads = s->rows;
  if (threads <= 1) {
    s->fn(bufs, 0, s->rows);
    return NULL;
  }
#pragma omp parallel for num_threads((int)threads)
  for (int64_t t = 0; t < threads; t++) s->fn(bufs, s->rows * t / threads, s->rows * (t + 1) / threads);
  return NULL;
}

static void scan_destroy(void *state) {
  scan_state *s = state;
  if (!s) return;
  free(s->name);
  free(s);
}

const cpu_native_kind cpu_native_scan = {
    .name = "cumulative reduce-window",
    .supports = scan_supports,
    .create = scan_create,
    .link = scan_link,
    .run = scan_run,
    .destroy = scan_destroy,
};
