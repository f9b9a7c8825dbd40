/* Native kernels for scatter, select-and-scatter and tuple-shaped (variadic)
 * reduce-window: the instructions whose outputs are not one independent function per
 * element, so the elemental emitter's loop kernels cannot produce them.
 *
 * Each kernel is one LLVM function generated at compile time with every shape,
 * stride and window constant baked in, and the instruction's scalar computations
 * (combiner, comparator, reducer) inlined by the elemental emitter
 * (cpu_emit_scalar_call): there is no per-element interpretation. What depends on
 * run-time values but not per element stays in C: scatter's table of window starts
 * (one int64 operand offset per index position, -1 for a window that does not fit,
 * read from indices of any integer type), the copy of the operands into the result and
 * select-and-scatter's fill with the init value.
 *
 * Results equal the evaluator's bit for bit (src/eval/gather_scatter.c, reduce.c), since
 * the generated loops visit elements in the evaluator's documented order: scatter
 * applies update elements sequentially in row-major order of the updates (later
 * updates see earlier ones: duplicates and non-associative combiners stay
 * deterministic); windows are walked in row-major window order skipping padding and
 * base-dilation holes; select-and-scatter starts from the first valid element of a
 * window and calls select(current, candidate), keeping the current one on true, then
 * scatter(source, output). Threads only split work whose writes provably never meet,
 * so results stay bit-identical to one thread's: reduce-window's output rows always;
 * select-and-scatter's source rows when windows along the leading dims do not overlap
 * (2x2/2 pooling, not 3x3/2); scatter's operand blocks when every window is one whole
 * trailing block (embedding rows), each thread applying in order the updates that land
 * in its blocks.
 *
 * supports() repeats every check the evaluator makes at run time, statically (shapes
 * are known at compile time), so a kernel is never built for an instruction the
 * evaluator would reject and run() cannot fail except for lack of memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_codegen.h"
#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_native.h"
#include "hlo/literal.h"

/* The one OpenMP runtime call used, declared here rather than through <omp.h> (as in
 * cpu_codegen.c: clang builds compile against gcc's libgomp, whose omp.h clang cannot
 * parse). */
int omp_get_max_threads(void);

/* The most operands of a variadic scatter / reduce-window (results of one kernel). */
#define MAX_VARIADIC CPU_MAX_KERNEL_OUTPUTS

/* Every generated function is a cpu_kernel_fn, void f(char **buffers, int64_t begin,
 * int64_t end), so that cpu_kernel_run can split window kernels across the OpenMP
 * pool: buffers holds the output leaves, then the operand leaves (then, for scatter,
 * the table of window starts); [begin, end) is a range of work units. */

static bool why_not(strbuf *why, const hlo_instr *ins, const char *reason) {
  if (why) strbuf_printf(why, "%s (%s): %s", ins->name, hlo_opcode_name(ins->op), reason);
  return false;
}

static bool contains(const hlo_ints *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return true;
  return false;
}

/* Every entry in [0, rank) and no repeats across the given lists (b may be NULL). */
static bool distinct_dims(int rank, const hlo_ints *a, const hlo_ints *b) {
  bool seen[HLO_MAX_RANK] = {false};
  const hlo_ints *lists[2] = {a, b};
  for (int l = 0; l < 2; l++) {
    if (!lists[l]) continue;
    for (int i = 0; i < lists[l]->n; i++) {
      int64_t d = lists[l]->v[i];
      if (d < 0 || d >= rank || d >= HLO_MAX_RANK || seen[d]) return false;
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

/* Whether computation c takes n_params scalars whose types are param_types[i % n_types]
 * and returns n_results scalars of types result_types[i], all of which the elemental
 * emitter can compute. */
static bool scalar_fn_ok(const hlo_instr *ins, const hlo_computation *c, int n_params, const hlo_type *param_types,
                         int n_types, int n_results, const hlo_type *result_types, strbuf *why) {
  if (!c || c->n_params != n_params || !c->root) return why_not(why, ins, "called computation has the wrong arity");
  for (int i = 0; i < n_params; i++) {
    const hlo_instr *p = c->params[i];
    if (!p || !shape_is_array(&p->shape) || p->shape.rank != 0 || p->shape.type != param_types[i % n_types])
      return why_not(why, ins, "called computation's parameters have the wrong types");
  }
  if (!cpu_elemental_supports_scalar(ins, c, n_params, n_results, why)) return false;
  for (int i = 0; i < n_results; i++) {
    const hlo_instr *r = n_results > 1 ? c->root->operands[i] : c->root;
    if (!shape_is_array(&r->shape) || r->shape.rank != 0 || r->shape.type != result_types[i])
      return why_not(why, ins, "called computation returns the wrong types");
  }
  return true;
}

/* ------------------------------------------------------------ LLVM helpers ---- */

typedef struct gen {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMValueRef fn;
  LLVMBuilderRef b;
  LLVMTypeRef i64, i8p;
} gen;

static LLVMValueRef k64(const gen *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* Starts function NAME of type cpu_kernel_fn. */
static void gen_begin(gen *g, cpu_jit_module *jm, const char *name) {
  g->c = jm->ctx;
  g->m = jm->module;
  g->i64 = LLVMInt64TypeInContext(g->c);
  g->i8p = LLVMPointerType(LLVMInt8TypeInContext(g->c), 0);
  LLVMTypeRef params[3] = {LLVMPointerType(g->i8p, 0), g->i64, g->i64};
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(g->c), params, 3, 0);
  g->fn = LLVMAddFunction(g->m, name, fty);
  LLVMSetLinkage(g->fn, LLVMExternalLinkage);
  g->b = LLVMCreateBuilderInContext(g->c);
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->c, g->fn, "entry"));
}

static void gen_end(gen *g) {
  LLVMBuildRetVoid(g->b);
  LLVMDisposeBuilder(g->b);
}

/* buffers[k] as a pointer to elements of LLVM type et, loaded once in the entry block
 * (a load inside the loops could alias the stores and block vectorization). */
static LLVMValueRef gen_buffer_as(const gen *g, int k, LLVMTypeRef et) {
  LLVMValueRef slot = k64(g, k);
  LLVMValueRef at = LLVMBuildInBoundsGEP2(g->b, g->i8p, LLVMGetParam(g->fn, 0), &slot, 1, "");
  LLVMValueRef raw = LLVMBuildLoad2(g->b, g->i8p, at, "buf");
  return LLVMBuildBitCast(g->b, raw, LLVMPointerType(et, 0), "");
}

static LLVMValueRef gen_buffer(const gen *g, int k, hlo_type t) { return gen_buffer_as(g, k, cpu_llvm_type(g->c, t)); }

static LLVMValueRef gen_load(const gen *g, hlo_type t, LLVMValueRef base, LLVMValueRef i) {
  LLVMTypeRef et = cpu_llvm_type(g->c, t);
  return LLVMBuildLoad2(g->b, et, LLVMBuildInBoundsGEP2(g->b, et, base, &i, 1, ""), "");
}

static void gen_store(const gen *g, hlo_type t, LLVMValueRef base, LLVMValueRef i, LLVMValueRef v) {
  LLVMTypeRef et = cpu_llvm_type(g->c, t);
  LLVMBuildStore(g->b, v, LLVMBuildInBoundsGEP2(g->b, et, base, &i, 1, ""));
}

/* sum + coef * i, folding the trivial cases (LLVM would too; this keeps the IR short). */
static LLVMValueRef gen_madd(const gen *g, LLVMValueRef sum, int64_t coef, LLVMValueRef i) {
  if (coef == 0) return sum;
  LLVMValueRef t = coef == 1 ? i : LLVMBuildMul(g->b, i, k64(g, coef), "");
  return sum ? LLVMBuildAdd(g->b, sum, t, "") : t;
}

static LLVMValueRef or_zero(const gen *g, LLVMValueRef v) { return v ? v : k64(g, 0); }

/* ---------------------------------------------------------------- windows ---- */

/* The window of a reduce-window or select-and-scatter over input dims `in`, iterated by
 * index space `iter` (the result, or the source). Position p = o*stride + k*rhs_dilate
 * - pad_lo in the padded, base-dilated input is element p / lhs_dilate when 0 <= p <=
 * (dim-1)*lhs_dilate and lhs_dilate divides p. */
typedef struct window_geom {
  int rank;
  int64_t in_dims[HLO_MAX_RANK], in_strides[HLO_MAX_RANK];
  int64_t iter_dims[HLO_MAX_RANK], iter_strides[HLO_MAX_RANK];
  hlo_window_dim w[HLO_MAX_RANK];
} window_geom;

static bool window_ok(const hlo_instr *ins, const hlo_shape *in, const hlo_shape *iter, window_geom *wg, strbuf *why) {
  int r = in->rank;
  if (ins->window.rank != r || iter->rank != r) return why_not(why, ins, "window rank differs from the input rank");
  wg->rank = r;
  shape_strides(in, wg->in_strides);
  shape_strides(iter, wg->iter_strides);
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &ins->window.dims[d];
    wg->w[d] = *w;
    wg->in_dims[d] = in->dims[d];
    wg->iter_dims[d] = iter->dims[d];
    if (w->size < 0 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1)
      return why_not(why, ins, "window has a non-positive size, stride or dilation");
    /* The evaluator's overflow checks: every position the loops compute fits int64. */
    int64_t in_dim = in->dims[d], out_dim = iter->dims[d];
    if (in_dim > 0 && out_dim > 0 && w->size > 0) {
      int64_t base_min, base_max, pmax, t;
      bool ok = !__builtin_sub_overflow(0, w->pad_lo, &base_min) &&
                !__builtin_mul_overflow(out_dim - 1, w->stride, &t) && !__builtin_sub_overflow(t, w->pad_lo, &base_max) &&
                !__builtin_mul_overflow(in_dim - 1, w->lhs_dilate, &pmax) && !__builtin_sub_overflow(pmax, base_min, &t) &&
                !__builtin_mul_overflow(w->size - 1, w->rhs_dilate, &t) && !__builtin_add_overflow(base_max, t, &t);
      if (!ok) return why_not(why, ins, "window positions overflow int64");
    }
  }
  return true;
}

/* Loops over the iteration space then the window. The iteration space is split into
 * units for the thread pool as cpu_codegen splits kernels: a unit is one row of the
 * last dim (all outer indices fixed), so the function takes a [begin, end) range of
 * units. gen_window_open emits the unit loop and the last dim's loop (it gives their
 * row-major linear index) and stops there so that the caller can emit per-element
 * code; gen_window_inner opens the window loops, one per dim, each skipping positions
 * outside the input (padding, dilation holes) before opening the next, and gives the
 * input element's linear index. Close with gen_window_close_inner /
 * gen_window_close_iter. */
typedef struct window_loops {
  cpu_loop unit, row, k[HLO_MAX_RANK];
  LLVMBasicBlockRef skip[HLO_MAX_RANK];
  LLVMValueRef o[HLO_MAX_RANK];
} window_loops;

/* Units of a window kernel, and the elements each one computes. */
static cpu_kernel_space window_space(const window_geom *wg) {
  cpu_kernel_space sp = {.units = 1, .unit_cost = 1};
  for (int d = 0; d < wg->rank; d++) {
    if (d < wg->rank - 1)
      sp.units *= wg->iter_dims[d];
    else
      sp.unit_cost *= wg->iter_dims[d];
    sp.unit_cost *= wg->w[d].size > 0 ? wg->w[d].size : 1;
  }
  return sp;
}

static LLVMValueRef gen_window_open(gen *g, const window_geom *wg, window_loops *wl) {
  int r = wg->rank;
  cpu_loop_begin(g->b, g->fn, &wl->unit, LLVMGetParam(g->fn, 1), LLVMGetParam(g->fn, 2), "unit");
  LLVMValueRef rest = wl->unit.index, lin = NULL;
  for (int d = r - 2; d >= 0; d--) {
    LLVMValueRef dim = k64(g, wg->iter_dims[d]);
    wl->o[d] = d == 0 ? rest : LLVMBuildURem(g->b, rest, dim, "");
    if (d > 0) rest = LLVMBuildUDiv(g->b, rest, dim, "");
  }
  if (r > 0) {
    cpu_loop_begin(g->b, g->fn, &wl->row, k64(g, 0), k64(g, wg->iter_dims[r - 1]), "o");
    wl->o[r - 1] = wl->row.index;
  }
  for (int d = 0; d < r; d++) lin = gen_madd(g, lin, wg->iter_strides[d], wl->o[d]);
  return or_zero(g, lin);
}

static LLVMValueRef gen_window_inner(gen *g, const window_geom *wg, window_loops *wl) {
  LLVMValueRef lin = NULL;
  for (int d = 0; d < wg->rank; d++) {
    const hlo_window_dim *w = &wg->w[d];
    cpu_loop_begin(g->b, g->fn, &wl->k[d], k64(g, 0), k64(g, w->size), "k");
    LLVMValueRef p = LLVMBuildMul(g->b, wl->o[d], k64(g, w->stride), "");
    p = LLVMBuildSub(g->b, p, k64(g, w->pad_lo), "");
    p = gen_madd(g, p, w->rhs_dilate, wl->k[d].index);
    /* (dim-1)*lhs_dilate is negative for an empty dim: nothing is valid then. It can
     * only overflow when no window position is computed (window_ok checked the rest). */
    int64_t pmax;
    if (__builtin_mul_overflow(wg->in_dims[d] - 1, w->lhs_dilate, &pmax)) pmax = INT64_MAX;
    LLVMValueRef ok = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSGE, p, k64(g, 0), ""),
                                   LLVMBuildICmp(g->b, LLVMIntSLE, p, k64(g, pmax), ""), "");
    LLVMValueRef i = p;
    if (w->lhs_dilate > 1) {
      /* p is non-negative whenever ok holds, so unsigned division is exact there. */
      LLVMValueRef ld = k64(g, w->lhs_dilate);
      ok = LLVMBuildAnd(g->b, ok, LLVMBuildICmp(g->b, LLVMIntEQ, LLVMBuildURem(g->b, p, ld, ""), k64(g, 0), ""), "");
      i = LLVMBuildUDiv(g->b, p, ld, "");
    }
    LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(g->c, g->fn, "in");
    wl->skip[d] = LLVMAppendBasicBlockInContext(g->c, g->fn, "next");
    LLVMBuildCondBr(g->b, ok, in, wl->skip[d]);
    LLVMPositionBuilderAtEnd(g->b, in);
    lin = gen_madd(g, lin, wg->in_strides[d], i);
  }
  return or_zero(g, lin);
}

static void gen_window_close_inner(gen *g, const window_geom *wg, window_loops *wl) {
  for (int d = wg->rank - 1; d >= 0; d--) {
    LLVMBuildBr(g->b, wl->skip[d]);
    LLVMPositionBuilderAtEnd(g->b, wl->skip[d]);
    cpu_loop_end(g->b, &wl->k[d]);
  }
}

static void gen_window_close_iter(gen *g, const window_geom *wg, window_loops *wl) {
  if (wg->rank > 0) cpu_loop_end(g->b, &wl->row);
  cpu_loop_end(g->b, &wl->unit);
}

/* ---------------------------------------------------------------- common state */

typedef struct kernel {
  char name[96];
  cpu_kernel_fn fn;
} kernel;

static kiln_status kernel_link(kernel *k, cpu_jit *jit) {
  void *addr = NULL;
  TRY(cpu_jit_lookup(jit, k->name, &addr));
  /* Converting the JIT's object address to a function pointer, as POSIX dlsym users do. */
  memcpy(&k->fn, &addr, sizeof k->fn);
  return NULL;
}

/* ---------------------------------------------------------------- scatter ---- */

/* Everything scatter needs, checked against the evaluator's rules once. */
typedef struct scatter_plan {
  int n;         /* operands (= updates = results) */
  int r, ur, ir; /* ranks: operand, updates, indices */
  hlo_type types[MAX_VARIADIC];
  hlo_type idx_type;
  int64_t operand_bytes[MAX_VARIADIC];
  int64_t n_operand, n_updates;
  /* the index space: indices dims other than index_vector_dim */
  int nb;
  int64_t bdims[HLO_MAX_RANK], ind_stride[HLO_MAX_RANK];
  int ind_to_batch[HLO_MAX_RANK];
  int64_t count, n_components, component_stride;
  /* operand geometry */
  int64_t odims[HLO_MAX_RANK], ostrides[HLO_MAX_RANK], window[HLO_MAX_RANK];
  /* per updates dim: stride in the position space, in the operand, in the updates */
  int64_t cpos[HLO_MAX_RANK], coff[HLO_MAX_RANK], ustrides[HLO_MAX_RANK], udims[HLO_MAX_RANK];
  int last_batch_dim; /* the last updates dim that is not a window dim, -1 if none */
  int64_t block, units; /* the thread split: `units` blocks of `block` operand elements */
  hlo_ints starts_from, batch_operand, batch_indices;
} scatter_plan;

static bool scatter_plan_make(const hlo_instr *ins, scatter_plan *sp, strbuf *why) {
  memset(sp, 0, sizeof *sp);
  if (ins->n_operands < 3 || ins->n_operands % 2 == 0) return why_not(why, ins, "expected N operands, indices, N updates");
  int n = (ins->n_operands - 1) / 2;
  if (n > MAX_VARIADIC) return why_not(why, ins, "too many operands");
  sp->n = n;
  for (int i = 0; i < ins->n_operands; i++)
    if (!shape_is_array(&ins->operands[i]->shape)) return why_not(why, ins, "an operand is not an array");
  const hlo_shape *os = &ins->operands[0]->shape, *is = &ins->operands[n]->shape, *us = &ins->operands[n + 1]->shape;
  for (int i = 0; i < n; i++) {
    const hlo_shape *o = &ins->operands[i]->shape, *u = &ins->operands[n + 1 + i]->shape;
    const hlo_shape *res = n == 1 ? &ins->shape : NULL;
    if (n > 1 && shape_is_tuple(&ins->shape) && ins->shape.n_elems == n) res = &ins->shape.elems[i];
    if (!res || !shape_is_array(res) || !shape_same_dims(res, o) || res->type != o->type)
      return why_not(why, ins, "result shape does not match the operands");
    if (!shape_same_dims(o, os) || !shape_same_dims(u, us) || u->type != o->type)
      return why_not(why, ins, "operands/updates disagree in shape or type");
    sp->types[i] = o->type;
    sp->operand_bytes[i] = shape_elements(o) * (int64_t)hlo_type_size(o->type);
  }
  if (!hlo_type_is_int(is->type)) return why_not(why, ins, "indices are not integers");
  sp->idx_type = is->type;
  const hlo_scatter_dnums *dn = &ins->scatter;
  int r = os->rank, ur = us->rank, ir = is->rank;
  sp->r = r;
  sp->ur = ur;
  sp->ir = ir;
  int64_t ivd = dn->index_vector_dim;
  if (ivd < 0 || ivd > ir) return why_not(why, ins, "index_vector_dim out of range");
  int64_t istrides[HLO_MAX_RANK];
  shape_strides(is, istrides);
  sp->n_components = ivd < ir ? is->dims[ivd] : 1;
  sp->component_stride = ivd < ir ? istrides[ivd] : 0;
  sp->count = 1;
  for (int d = 0; d < ir; d++) {
    if (d == ivd) {
      sp->ind_to_batch[d] = -1;
      continue;
    }
    sp->ind_to_batch[d] = sp->nb;
    sp->bdims[sp->nb] = is->dims[d];
    sp->ind_stride[sp->nb] = istrides[d];
    sp->count *= is->dims[d];
    sp->nb++;
  }
  if (dn->scatter_dims_to_operand_dims.n != sp->n_components || !distinct_dims(r, &dn->scatter_dims_to_operand_dims, NULL))
    return why_not(why, ins, "scatter_dims_to_operand_dims must name one distinct operand dim per index component");
  if (!distinct_dims(r, &dn->inserted_window_dims, &dn->input_batching_dims) ||
      dn->input_batching_dims.n != dn->scatter_indices_batching_dims.n ||
      !distinct_dims(ir, &dn->scatter_indices_batching_dims, NULL))
    return why_not(why, ins, "invalid inserted_window_dims / batching dims");
  for (int i = 0; i < dn->input_batching_dims.n; i++) {
    int64_t od = dn->input_batching_dims.v[i], id = dn->scatter_indices_batching_dims.v[i];
    if (id == ivd || is->dims[id] != os->dims[od]) return why_not(why, ins, "batching dims do not pair up");
  }
  int wdims[HLO_MAX_RANK], nw = 0;
  for (int d = 0; d < r; d++)
    if (!contains(&dn->inserted_window_dims, d) && !contains(&dn->input_batching_dims, d)) wdims[nw++] = d;
  if (nw != dn->update_window_dims.n || ur != sp->nb + nw || !ascending(&dn->update_window_dims) ||
      !distinct_dims(ur, &dn->update_window_dims, NULL))
    return why_not(why, ins, "update_window_dims do not match the operand's window dims and updates rank");
  shape_strides(os, sp->ostrides);
  shape_strides(us, sp->ustrides);
  for (int d = 0; d < r; d++) {
    sp->odims[d] = os->dims[d];
    sp->window[d] = 1;
  }
  int64_t pos_stride[HLO_MAX_RANK];
  int64_t s = 1;
  for (int b = sp->nb - 1; b >= 0; b--) {
    pos_stride[b] = s;
    s *= sp->bdims[b];
  }
  sp->last_batch_dim = -1;
  for (int d = 0, b = 0, w = 0; d < ur; d++) {
    sp->udims[d] = us->dims[d];
    if (w < nw && dn->update_window_dims.v[w] == d) {
      sp->window[wdims[w]] = us->dims[d];
      sp->cpos[d] = 0;
      sp->coff[d] = sp->ostrides[wdims[w]];
      w++;
    } else {
      if (us->dims[d] != sp->bdims[b]) return why_not(why, ins, "updates dims do not match the scatter indices");
      sp->cpos[d] = pos_stride[b];
      sp->coff[d] = 0;
      sp->last_batch_dim = d;
      b++;
    }
  }
  sp->starts_from = dn->scatter_dims_to_operand_dims;
  sp->batch_operand = dn->input_batching_dims;
  sp->batch_indices = dn->scatter_indices_batching_dims;
  sp->n_operand = shape_elements(os);
  sp->n_updates = shape_elements(us);
  /* When every window is one whole block of the operand's trailing dims (window 1 up to
   * dim j, the full dim after it: rows of an embedding table, single elements), the
   * windows of any two positions are the same block or disjoint. Threads can then own
   * ranges of blocks: each applies, in the sequential order, exactly the updates that
   * land in its blocks, so every element sees the same updates in the same order and
   * the result is bit-identical to one thread's. Otherwise there is one unit. */
  int j = r - 1;
  while (j >= 0 && sp->window[j] == sp->odims[j]) j--;
  bool blocks = j >= 0 && sp->n_operand > 0;
  for (int d = 0; d <= j && blocks; d++) blocks = sp->window[d] == 1;
  sp->block = blocks ? sp->ostrides[j] : (sp->n_operand > 0 ? sp->n_operand : 1);
  sp->units = sp->n_operand / sp->block;
  if (ins->n_called < 1) return why_not(why, ins, "no update computation");
  return scalar_fn_ok(ins, ins->called[0], 2 * n, sp->types, n, n, sp->types, why);
}

typedef struct scatter_state {
  scatter_plan plan;
  kernel k;
} scatter_state;

static bool scatter_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_SCATTER) return false;
  scatter_plan sp;
  return scatter_plan_make(ins, &sp, why);
}

/* The update loop: updates dims in row-major order; the window start of a position is
 * loaded (and the window skipped when it does not fit) once the last position dim's
 * loop is open, outside the trailing window dims' loops. */
static void scatter_generate(gen *g, const hlo_instr *ins, const scatter_plan *sp) {
  int n = sp->n;
  LLVMValueRef out[MAX_VARIADIC], upd[MAX_VARIADIC];
  for (int i = 0; i < n; i++) {
    out[i] = gen_buffer(g, i, sp->types[i]);
    upd[i] = gen_buffer(g, 2 * n + 1 + i, sp->types[i]);
  }
  LLVMValueRef base = gen_buffer_as(g, 3 * n + 1, g->i64);
  /* Windows start in [lo, hi): the block range [begin, end) of this call. */
  LLVMValueRef lo = LLVMBuildMul(g->b, LLVMGetParam(g->fn, 1), k64(g, sp->block), "lo");
  LLVMValueRef hi = LLVMBuildMul(g->b, LLVMGetParam(g->fn, 2), k64(g, sp->block), "hi");
  cpu_emitter *e = cpu_emitter_new_scalar(g->m, g->fn, g->b);
  cpu_loop loops[HLO_MAX_RANK];
  LLVMValueRef pos = NULL, off = NULL, ui = NULL;
  int split = sp->last_batch_dim + 1;
  for (int d = 0; d < split; d++) {
    cpu_loop_begin(g->b, g->fn, &loops[d], k64(g, 0), k64(g, sp->udims[d]), "u");
    pos = gen_madd(g, pos, sp->cpos[d], loops[d].index);
    off = gen_madd(g, off, sp->coff[d], loops[d].index);
    ui = gen_madd(g, ui, sp->ustrides[d], loops[d].index);
  }
  LLVMValueRef p = or_zero(g, pos);
  LLVMValueRef start = LLVMBuildLoad2(g->b, g->i64, LLVMBuildInBoundsGEP2(g->b, g->i64, base, &p, 1, ""), "start");
  LLVMBasicBlockRef fits = LLVMAppendBasicBlockInContext(g->c, g->fn, "fits");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->c, g->fn, "next");
  /* lo >= 0, so this also skips the windows that do not fit (start -1). */
  LLVMValueRef mine = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSGE, start, lo, ""),
                                   LLVMBuildICmp(g->b, LLVMIntSLT, start, hi, ""), "");
  LLVMBuildCondBr(g->b, mine, fits, next);
  LLVMPositionBuilderAtEnd(g->b, fits);
  off = off ? LLVMBuildAdd(g->b, start, off, "") : start;
  for (int d = split; d < sp->ur; d++) {
    cpu_loop_begin(g->b, g->fn, &loops[d], k64(g, 0), k64(g, sp->udims[d]), "w");
    off = gen_madd(g, off, sp->coff[d], loops[d].index);
    ui = gen_madd(g, ui, sp->ustrides[d], loops[d].index);
  }
  ui = or_zero(g, ui);
  LLVMValueRef args[2 * MAX_VARIADIC], res[MAX_VARIADIC];
  for (int i = 0; i < n; i++) {
    args[i] = gen_load(g, sp->types[i], out[i], off);
    args[n + i] = gen_load(g, sp->types[i], upd[i], ui);
  }
  cpu_emit_scalar_call(e, ins->called[0], args, res);
  for (int i = 0; i < n; i++) gen_store(g, sp->types[i], out[i], off, res[i]);
  for (int d = sp->ur - 1; d >= split; d--) cpu_loop_end(g->b, &loops[d]);
  LLVMBuildBr(g->b, next);
  LLVMPositionBuilderAtEnd(g->b, next);
  for (int d = split - 1; d >= 0; d--) cpu_loop_end(g->b, &loops[d]);
  cpu_emitter_free(e);
}

static kiln_status scatter_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                                  bool *uses_jit) {
  scatter_state *s = calloc(1, sizeof *s);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  strbuf why;
  strbuf_init(&why);
  if (!scatter_plan_make(ins, &s->plan, &why)) {
    kiln_status st = ERR_INVALID("cpu: %s", strbuf_cstr(&why));
    strbuf_free(&why);
    free(s);
    return st;
  }
  strbuf_free(&why);
  snprintf(s->k.name, sizeof s->k.name, "%sscatter", prefix);
  gen g;
  gen_begin(&g, jm, s->k.name);
  scatter_generate(&g, ins, &s->plan);
  gen_end(&g);
  *state = s;
  *uses_jit = true;
  return NULL;
}

static kiln_status scatter_link(void *state, cpu_jit *jit) { return kernel_link(&((scatter_state *)state)->k, jit); }

/* base[p]: operand offset of position p's window start, -1 when the window does not
 * fit entirely (XLA skips the whole window then). */
static void scatter_starts(const scatter_plan *sp, const char *idx, int64_t *base) {
  int64_t g[HLO_MAX_RANK] = {0};
  int64_t ioff = 0;
  for (int64_t p = 0; p < sp->count; p++) {
    int64_t start[HLO_MAX_RANK] = {0};
    for (int k = 0; k < sp->starts_from.n; k++)
      start[sp->starts_from.v[k]] = hlo_index_at(sp->idx_type, idx, ioff + k * sp->component_stride);
    for (int i = 0; i < sp->batch_operand.n; i++)
      start[sp->batch_operand.v[i]] = g[sp->ind_to_batch[sp->batch_indices.v[i]]];
    int64_t off = 0;
    for (int d = 0; d < sp->r && off >= 0; d++) {
      if (start[d] < 0 || start[d] > sp->odims[d] - sp->window[d])
        off = -1;
      else
        off += start[d] * sp->ostrides[d];
    }
    base[p] = off;
    /* next position, row-major, keeping the indices offset in step */
    for (int b = sp->nb - 1; b >= 0; b--) {
      ioff += sp->ind_stride[b];
      if (++g[b] < sp->bdims[b]) break;
      ioff -= sp->ind_stride[b] * sp->bdims[b];
      g[b] = 0;
    }
  }
}

/* Update elements per position below which threads would spend more time scanning
 * every position than applying their share of the updates. */
#define SCATTER_PARALLEL_MIN_WINDOW 16
#define SCATTER_PARALLEL_MIN_UPDATES 65536

static kiln_status scatter_run(void *state, char *const *out, char *const *in) {
  const scatter_state *s = state;
  const scatter_plan *sp = &s->plan;
  int n = sp->n;
  /* The result starts as the operands; a result given its operand's block (no copy
   * needed) is allowed for, though buffer assignment does not do that today. */
  for (int i = 0; i < sp->n; i++)
    if (sp->operand_bytes[i] > 0 && out[i] != in[i]) memcpy(out[i], in[i], (size_t)sp->operand_bytes[i]);
  /* Into an empty operand no window fits. */
  if (sp->n_operand == 0 || sp->n_updates == 0) return NULL;
  int64_t *base = malloc((size_t)sp->count * sizeof *base);
  if (!base) return status_error(KILN_RESOURCE_EXHAUSTED, "cpu: out of memory for %lld scatter positions",
                                 (long long)sp->count);
  scatter_starts(sp, in[n], base);
  char *bufs[4 * MAX_VARIADIC + 2];
  for (int i = 0; i < n; i++) bufs[i] = out[i];
  for (int i = 0; i < 2 * n + 1; i++) bufs[n + i] = in[i];
  bufs[3 * n + 1] = (char *)base;
  /* Every thread scans all positions (a load and a compare each) and applies the
   * updates of its blocks: worth it only for windows of many elements. */
  int64_t chunks = omp_get_max_threads();
  if (chunks > sp->units) chunks = sp->units;
  if (chunks < 2 || sp->n_updates < SCATTER_PARALLEL_MIN_UPDATES ||
      sp->n_updates / sp->count < SCATTER_PARALLEL_MIN_WINDOW) {
    s->k.fn(bufs, 0, sp->units);
  } else {
    int64_t units = sp->units;
    cpu_kernel_fn fn = s->k.fn;
#pragma omp parallel for schedule(static, 1)
    for (int64_t c = 0; c < chunks; c++) fn(bufs, units * c / chunks, units * (c + 1) / chunks);
  }
  free(base);
  return NULL;
}

static void free_state(void *state) { free(state); }

const cpu_native_kind cpu_native_scatter = {
    .name = "scatter",
    .supports = scatter_supports,
    .create = scatter_create,
    .link = scatter_link,
    .run = scatter_run,
    .destroy = free_state,
};

/* ------------------------------------------------------ select-and-scatter ---- */

typedef struct sas_state {
  int64_t n_out;
  size_t esize;
  cpu_kernel_space space;
  bool parallel;
  kernel k;
} sas_state;

/* Whether rows of the source (the units) scatter into disjoint output elements: the
 * windows of two positions that differ in a leading dim never overlap there (stride at
 * least the dilated window, in the padded base-dilated space, so also in the input).
 * Only then may units run in parallel; windows along the last dim may overlap, their
 * positions run in order inside one unit. */
static bool sas_rows_disjoint(const window_geom *wg) {
  for (int d = 0; d + 1 < wg->rank; d++) {
    const hlo_window_dim *w = &wg->w[d];
    if (wg->iter_dims[d] > 1 && w->size > 0 && w->stride < (w->size - 1) * w->rhs_dilate + 1) return false;
  }
  return true;
}

static bool sas_check(const hlo_instr *ins, window_geom *wg, strbuf *why) {
  if (ins->n_operands != 3) return why_not(why, ins, "expected operand, source and init value");
  if (ins->n_called < 2) return why_not(why, ins, "expected select and scatter computations");
  const hlo_shape *os = &ins->operands[0]->shape, *ss = &ins->operands[1]->shape, *is = &ins->operands[2]->shape;
  if (!shape_is_array(os) || !shape_is_array(ss) || !shape_is_array(is) || !shape_is_array(&ins->shape))
    return why_not(why, ins, "operands and result must be arrays");
  hlo_type t = os->type;
  if (ins->shape.type != t || !shape_same_dims(&ins->shape, os))
    return why_not(why, ins, "result shape differs from the operand shape");
  if (ss->type != t || is->type != t || shape_elements(is) != 1)
    return why_not(why, ins, "source and init value must have the operand's element type");
  if (!window_ok(ins, os, ss, wg, why)) return false;
  hlo_type pred = HLO_PRED;
  return scalar_fn_ok(ins, ins->called[0], 2, &t, 1, 1, &pred, why) &&
         scalar_fn_ok(ins, ins->called[1], 2, &t, 1, 1, &t, why);
}

static bool sas_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_SELECT_AND_SCATTER) return false;
  window_geom wg;
  return sas_check(ins, &wg, why);
}

/* For each source element (row-major): walk its window, keep the chosen input's
 * linear index in an alloca (-1 before the first valid element), then fold the source
 * value into the output there. */
static void sas_generate(gen *g, const hlo_instr *ins, const window_geom *wg) {
  hlo_type t = ins->shape.type;
  LLVMValueRef out = gen_buffer(g, 0, t), operand = gen_buffer(g, 1, t), source = gen_buffer(g, 2, t);
  cpu_emitter *e = cpu_emitter_new_scalar(g->m, g->fn, g->b);
  LLVMValueRef chosen = cpu_entry_alloca(g->fn, g->i64, "chosen");
  window_loops wl;
  LLVMValueRef s_lin = gen_window_open(g, wg, &wl);
  LLVMBuildStore(g->b, k64(g, -1), chosen);
  LLVMValueRef lin = gen_window_inner(g, wg, &wl);
  LLVMValueRef cur = LLVMBuildLoad2(g->b, g->i64, chosen, "");
  LLVMValueRef none = LLVMBuildICmp(g->b, LLVMIntSLT, cur, k64(g, 0), "");
  /* Before the first choice the comparison runs on (lin, lin) and is ignored: no branch,
   * and no load from index -1. */
  LLVMValueRef args[2] = {gen_load(g, t, operand, LLVMBuildSelect(g->b, none, lin, cur, "")),
                          gen_load(g, t, operand, lin)};
  LLVMValueRef keep;
  cpu_emit_scalar_call(e, ins->called[0], args, &keep);
  LLVMValueRef take = LLVMBuildOr(g->b, none, LLVMBuildICmp(g->b, LLVMIntEQ, keep, LLVMConstInt(LLVMTypeOf(keep), 0, 0), ""), "");
  LLVMBuildStore(g->b, LLVMBuildSelect(g->b, take, lin, cur, ""), chosen);
  gen_window_close_inner(g, wg, &wl);
  cur = LLVMBuildLoad2(g->b, g->i64, chosen, "");
  LLVMBasicBlockRef some = LLVMAppendBasicBlockInContext(g->c, g->fn, "some");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->c, g->fn, "next");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSGE, cur, k64(g, 0), ""), some, next);
  LLVMPositionBuilderAtEnd(g->b, some);
  LLVMValueRef sargs[2] = {gen_load(g, t, source, s_lin), gen_load(g, t, out, cur)}, r;
  cpu_emit_scalar_call(e, ins->called[1], sargs, &r);
  gen_store(g, t, out, cur, r);
  LLVMBuildBr(g->b, next);
  LLVMPositionBuilderAtEnd(g->b, next);
  gen_window_close_iter(g, wg, &wl);
  cpu_emitter_free(e);
}

static kiln_status sas_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                              bool *uses_jit) {
  window_geom wg;
  strbuf why;
  strbuf_init(&why);
  if (!sas_check(ins, &wg, &why)) {
    kiln_status st = ERR_INVALID("cpu: %s", strbuf_cstr(&why));
    strbuf_free(&why);
    return st;
  }
  strbuf_free(&why);
  sas_state *s = calloc(1, sizeof *s);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  s->esize = hlo_type_size(ins->shape.type);
  s->n_out = shape_elements(&ins->shape);
  s->space = window_space(&wg);
  s->parallel = sas_rows_disjoint(&wg);
  snprintf(s->k.name, sizeof s->k.name, "%sselect_and_scatter", prefix);
  gen g;
  gen_begin(&g, jm, s->k.name);
  sas_generate(&g, ins, &wg);
  gen_end(&g);
  *state = s;
  *uses_jit = true;
  return NULL;
}

static kiln_status sas_link(void *state, cpu_jit *jit) { return kernel_link(&((sas_state *)state)->k, jit); }

/* Fills n elements of esize bytes with *value by doubling copies. */
static void fill(char *d, const char *value, size_t esize, int64_t n) {
  if (n <= 0) return;
  memcpy(d, value, esize);
  size_t done = esize, total = (size_t)n * esize;
  while (done < total) {
    size_t chunk = done < total - done ? done : total - done;
    memcpy(d + done, d, chunk);
    done += chunk;
  }
}

static kiln_status sas_run(void *state, char *const *out, char *const *in) {
  const sas_state *s = state;
  fill(out[0], in[2], s->esize, s->n_out);
  char *bufs[4] = {out[0], in[0], in[1], in[2]};
  if (s->parallel)
    cpu_kernel_run(s->k.fn, bufs, &s->space);
  else
    s->k.fn(bufs, 0, s->space.units);
  return NULL;
}

const cpu_native_kind cpu_native_select_and_scatter = {
    .name = "select-and-scatter",
    .supports = sas_supports,
    .create = sas_create,
    .link = sas_link,
    .run = sas_run,
    .destroy = free_state,
};

/* ------------------------------------------------------ variadic reduce-window */

/* Only tuple-shaped reduce-windows: a single array result is an elemental kernel. */
static bool rw_check(const hlo_instr *ins, window_geom *wg, strbuf *why) {
  if (!shape_is_tuple(&ins->shape)) return false;
  if (ins->n_operands < 2 || ins->n_operands % 2) return why_not(why, ins, "expected inputs and as many init values");
  int n = ins->n_operands / 2;
  if (n > MAX_VARIADIC) return why_not(why, ins, "too many inputs");
  if (ins->shape.n_elems != n) return why_not(why, ins, "result is not a tuple of one array per input");
  if (ins->n_called < 1) return why_not(why, ins, "missing to_apply");
  hlo_type types[MAX_VARIADIC];
  const hlo_shape *in0 = &ins->operands[0]->shape, *r0 = &ins->shape.elems[0];
  for (int i = 0; i < n; i++) {
    const hlo_shape *s = &ins->operands[i]->shape, *init = &ins->operands[n + i]->shape, *r = &ins->shape.elems[i];
    if (!shape_is_array(s) || !shape_same_dims(s, in0)) return why_not(why, ins, "inputs differ in dimensions");
    if (!shape_is_array(init) || shape_elements(init) != 1 || init->type != s->type)
      return why_not(why, ins, "init value is not a scalar of its input's type");
    if (!shape_is_array(r) || r->type != s->type || !shape_same_dims(r, r0))
      return why_not(why, ins, "results do not match the inputs");
    types[i] = s->type;
  }
  if (!window_ok(ins, in0, r0, wg, why)) return false;
  return scalar_fn_ok(ins, ins->called[0], 2 * n, types, n, n, types, why);
}

static bool rw_supports(const hlo_instr *ins, strbuf *why) {
  if (ins->op != HLO_OP_REDUCE_WINDOW) return false;
  window_geom wg;
  return rw_check(ins, &wg, why);
}

/* Per output element: accumulators (allocas) start at the init values, fold in the
 * window's valid inputs in row-major window order, and are stored. */
static void rw_generate(gen *g, const hlo_instr *ins, const window_geom *wg) {
  int n = ins->n_operands / 2;
  LLVMValueRef out[MAX_VARIADIC], input[MAX_VARIADIC], init[MAX_VARIADIC], acc[MAX_VARIADIC];
  hlo_type types[MAX_VARIADIC];
  for (int i = 0; i < n; i++) {
    types[i] = ins->shape.elems[i].type;
    out[i] = gen_buffer(g, i, types[i]);
    input[i] = gen_buffer(g, n + i, types[i]);
    init[i] = gen_load(g, types[i], gen_buffer(g, 2 * n + i, types[i]), k64(g, 0));
    acc[i] = cpu_entry_alloca(g->fn, cpu_llvm_type(g->c, types[i]), "acc");
  }
  cpu_emitter *e = cpu_emitter_new_scalar(g->m, g->fn, g->b);
  window_loops wl;
  LLVMValueRef o_lin = gen_window_open(g, wg, &wl);
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, init[i], acc[i]);
  LLVMValueRef lin = gen_window_inner(g, wg, &wl);
  LLVMValueRef args[2 * MAX_VARIADIC], res[MAX_VARIADIC];
  for (int i = 0; i < n; i++) {
    args[i] = LLVMBuildLoad2(g->b, cpu_llvm_type(g->c, types[i]), acc[i], "");
    args[n + i] = gen_load(g, types[i], input[i], lin);
  }
  cpu_emit_scalar_call(e, ins->called[0], args, res);
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, res[i], acc[i]);
  gen_window_close_inner(g, wg, &wl);
  for (int i = 0; i < n; i++)
    gen_store(g, types[i], out[i], o_lin, LLVMBuildLoad2(g->b, cpu_llvm_type(g->c, types[i]), acc[i], ""));
  gen_window_close_iter(g, wg, &wl);
  cpu_emitter_free(e);
}

typedef struct rw_state {
  int n;
  cpu_kernel_space space;
  kernel k;
} rw_state;

static kiln_status rw_create(const hlo_instr *ins, cpu_jit_module *jm, const char *prefix, void **state,
                             bool *uses_jit) {
  window_geom wg;
  strbuf why;
  strbuf_init(&why);
  if (!rw_check(ins, &wg, &why)) {
    kiln_status st = ERR_INVALID("cpu: %s", strbuf_cstr(&why));
    strbuf_free(&why);
    return st;
  }
  strbuf_free(&why);
  rw_state *s = calloc(1, sizeof *s);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  s->n = ins->n_operands / 2;
  s->space = window_space(&wg);
  snprintf(s->k.name, sizeof s->k.name, "%sreduce_window", prefix);
  gen g;
  gen_begin(&g, jm, s->k.name);
  rw_generate(&g, ins, &wg);
  gen_end(&g);
  *state = s;
  *uses_jit = true;
  return NULL;
}

static kiln_status rw_link(void *state, cpu_jit *jit) { return kernel_link(&((rw_state *)state)->k, jit); }

static kiln_status rw_run(void *state, char *const *out, char *const *in) {
  const rw_state *s = state;
  /* Output elements are independent: units always run in parallel. */
  char *bufs[3 * MAX_VARIADIC];
  for (int i = 0; i < s->n; i++) bufs[i] = out[i];
  for (int i = 0; i < 2 * s->n; i++) bufs[s->n + i] = in[i];
  cpu_kernel_run(s->k.fn, bufs, &s->space);
  return NULL;
}

const cpu_native_kind cpu_native_reduce_window = {
    .name = "reduce-window",
    .supports = rw_supports,
    .create = rw_create,
    .link = rw_link,
    .run = rw_run,
    .destroy = free_state,
};
