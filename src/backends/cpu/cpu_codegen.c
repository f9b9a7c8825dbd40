/* Kernel loops around the elemental emitter, and the thread split (see cpu_codegen.h).
 * The loop nest is deliberately plain — an i64 counter, a load/compute/store body with
 * addresses affine in the counter — because that is what LLVM's loop vectorizer
 * recognises; everything clever happens in the O3 pipeline the JIT runs. */
#include "backends/cpu/cpu_codegen.h"

/* The one OpenMP runtime call used, declared here rather than through <omp.h>: clang
 * builds (fuzzing) compile against gcc's libgomp, whose omp.h clang cannot parse. */
int omp_get_max_threads(void);

#include <stdio.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "backends/cpu/cpu_elemental.h"

/* Below this many elements of work a kernel runs on the calling thread: waking the pool
 * costs more than it saves. */
#define CPU_PARALLEL_MIN_ELEMS 32768

/* The most elements of a flat kernel's unit (see cpu_codegen_add_kernel): enough for
 * the widest vector the vectorizer picks (64 bytes of i8) interleaved, small enough to
 * leave the thread split fine-grained. */
#define CPU_FLAT_BLOCK 64

static void store_values(LLVMBuilderRef b, int n, LLVMTypeRef *et, LLVMValueRef *out, LLVMValueRef *values,
                         LLVMValueRef lin) {
  for (int k = 0; k < n; k++) LLVMBuildStore(b, values[k], LLVMBuildInBoundsGEP2(b, et[k], out[k], &lin, 1, ""));
}

/* A loop ID for the loop closed by latch (set on it), with the vector width hint. */
static LLVMMetadataRef loop_id_for(LLVMContextRef c, LLVMValueRef latch, int vector_width) {
  LLVMMetadataRef self = LLVMTemporaryMDNode(c, NULL, 0);
  LLVMMetadataRef items[4] = {self};
  int n_items = 1;
  if (vector_width > 0) {
    /* A short loop of known length (a column chunk): one vector of this width per
     * step and no interleaving, so that the vector body runs at all; the vectorizer's
     * own choice (4 interleaved vectors) would leave every chunk to the scalar tail.
     * Not unrolled before that: a fully unrolled body loses the loop's no-overlap
     * promise and stays scalar. */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
    LLVMMetadataRef w[2] = {LLVMMDStringInContext2(c, "llvm.loop.vectorize.width", 25),
                            LLVMValueAsMetadata(LLVMConstInt(i32, (unsigned long long)vector_width, 0))};
    LLVMMetadataRef il[2] = {LLVMMDStringInContext2(c, "llvm.loop.interleave.count", 26),
                             LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0))};
    LLVMMetadataRef nu = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    items[n_items++] = LLVMMDNodeInContext2(c, w, 2);
    items[n_items++] = LLVMMDNodeInContext2(c, il, 2);
    items[n_items++] = LLVMMDNodeInContext2(c, &nu, 1);
  }
  LLVMMetadataRef loop_id = LLVMMDNodeInContext2(c, items, (size_t)n_items);
  LLVMMetadataReplaceAllUsesWith(self, loop_id); /* loop IDs refer to themselves */
  LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(c, "llvm.loop", 9), LLVMMetadataAsValue(c, loop_id));
  return loop_id;
}

/* Declares the loops closed by latches[0 .. n_latches) (one, or a unit's two passes,
 * emit_unit) free of loop-carried memory dependencies, so the vectorizer needs no
 * runtime overlap checks between the output and the inputs. That holds for every loop
 * that stores the output: each iteration writes its own output elements, and buffer
 * assignment only lets an output share storage with an input the kernel reads at the
 * same element (in place); without this, such a kernel would fail LLVM's overlap check
 * at run time and take the scalar loop. Every access names all the loops (a loop it is
 * not in ignores it); accesses to allocas (loop counters, accumulators, which mem2reg
 * removes before any loop pass) are left out. */
static void mark_parallel(LLVMContextRef c, LLVMValueRef fn, LLVMValueRef *latches, int n_latches, int vector_width) {
  LLVMMetadataRef ids[2];
  for (int l = 0; l < n_latches; l++) ids[l] = loop_id_for(c, latches[l], vector_width);
  LLVMValueRef id = LLVMMetadataAsValue(c, n_latches == 1 ? ids[0] : LLVMMDNodeInContext2(c, ids, (size_t)n_latches));
  const char *kind = "llvm.mem.parallel_loop_access";
  unsigned par = LLVMGetMDKindIDInContext(c, kind, (unsigned)strlen(kind));
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      LLVMValueRef ptr = NULL;
      if (LLVMIsALoadInst(i)) ptr = LLVMGetOperand(i, 0);
      else if (LLVMIsAStoreInst(i)) ptr = LLVMGetOperand(i, 1);
      if (ptr && !LLVMIsAAllocaInst(ptr)) LLVMSetMetadata(i, par, id);
    }
}

/* A reduce whose input's last dimension is reduced. */
static bool reduces_minor_dim(const hlo_instr *v) {
  if (v->op != HLO_OP_REDUCE) return false;
  int last = v->operands[0]->shape.rank - 1;
  for (int i = 0; i < v->dimensions.n; i++)
    if (v->dimensions.v[i] == last) return true;
  return false;
}

/* Lanes per vector step of a column chunk's loop: 16 f32 are one AVX-512 register. */
#define COLUMN_VECTOR 16

/* A reduce that keeps the input's last dimension (a global average pool in NHWC, a
 * column sum) with something to reduce. Computed element by element, each output would
 * run its own reduction loop innermost: scalar, and one row of outputs is one unit. */
static bool is_column_reduce(const hlo_instr *v) {
  return v->op == HLO_OP_REDUCE && !reduces_minor_dim(v) && v->dimensions.n > 0 && v->shape.rank > 0 &&
         shape_elements(&v->operands[0]->shape) > 0;
}

/* The body of a column reduction: a unit is a chunk of CPU_COLUMN_CHUNK outputs of one
 * output row. The outputs are initialised, then for every reduced position in row-major
 * order (the evaluator's order, so results are exact) the inner loop folds one input
 * element into each output of the chunk: contiguous loads, independent accumulators
 * kept in the output buffer (never shared with an input: only kLoop fusions and
 * elementwise ops run in place), which the vectorizer turns into vector code. */
/* A column reduction over the leading dimensions only (a batch sum, a gradient's sum
 * over examples) whose input is flat (cpu_reduce_input_is_flat): the kept dimensions
 * are contiguous in the input, so all outputs form one row of columns, and each chunk
 * of them reads contiguous runs of the input. Taking only the last dimension as the
 * columns would, for a short last dimension (xyz coordinates, 3), read each run of 3
 * from a new cache line: [4096, 4096, 3] summed over dim 0 took 738 ms. */
static bool reduces_leading_dims_flat(const hlo_instr *root, const hlo_instr *v) {
  for (int i = 0; i < v->dimensions.n; i++) {
    bool found = false;
    for (int j = 0; j < v->dimensions.n; j++) found |= v->dimensions.v[j] == i;
    if (!found) return false;
  }
  return cpu_reduce_input_is_flat(root);
}

/* The outputs of one column-reduction row: all of them for a leading-dims reduction,
 * else the output's last dimension. */
static int64_t column_count(const hlo_instr *root, const hlo_instr *v, const hlo_shape *os) {
  return reduces_leading_dims_flat(root, v) ? shape_elements(os) : os->dims[os->rank - 1];
}

static void emit_column_reduce(LLVMBuilderRef b, LLVMValueRef fn, cpu_emitter *e, const hlo_instr *root,
                               const hlo_instr *v, const hlo_shape *os, int n_out, LLVMTypeRef *et,
                               LLVMValueRef *out, LLVMValueRef unit, LLVMValueRef *latch) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(unit));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  const hlo_shape *is = &v->operands[0]->shape;
  int r = os->rank;
  bool leading = reduces_leading_dims_flat(root, v);
  int64_t cols = column_count(root, v, os), chunks = (cols + CPU_COLUMN_CHUNK - 1) / CPU_COLUMN_CHUNK;
  LLVMValueRef k_chunks = LLVMConstInt(i64, (unsigned long long)chunks, 0);
  LLVMValueRef row = LLVMBuildUDiv(b, unit, k_chunks, "row");
  LLVMValueRef c0 = LLVMBuildMul(b, LLVMBuildURem(b, unit, k_chunks, ""), LLVMConstInt(i64, CPU_COLUMN_CHUNK, 0), "");
  LLVMValueRef c1 = LLVMBuildAdd(b, c0, LLVMConstInt(i64, CPU_COLUMN_CHUNK, 0), "");
  LLVMValueRef k_cols = LLVMConstInt(i64, (unsigned long long)cols, 0);
  c1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, c1, k_cols, ""), c1, k_cols, "");
  LLVMValueRef row_base = LLVMBuildMul(b, row, k_cols, "");
  /* output indices of the row (all dims but the last), once per unit */
  LLVMValueRef kept_ix[HLO_MAX_RANK];
  LLVMValueRef rest = row;
  for (int d = r - 2; d >= 0; d--) {
    if (d == 0) {
      kept_ix[0] = rest;
    } else {
      LLVMValueRef dim = LLVMConstInt(i64, (unsigned long long)os->dims[d], 0);
      kept_ix[d] = LLVMBuildURem(b, rest, dim, "");
      rest = LLVMBuildUDiv(b, rest, dim, "");
    }
  }
  LLVMValueRef init[CPU_MAX_KERNEL_OUTPUTS], acc[CPU_MAX_KERNEL_OUTPUTS], ptr[CPU_MAX_KERNEL_OUTPUTS];
  cpu_emit_reduce_init(e, v, init);
  cpu_loop l;
  cpu_loop_begin(b, fn, &l, c0, c1, "col");
  LLVMValueRef lin = LLVMBuildAdd(b, row_base, l.index, "");
  for (int k = 0; k < n_out; k++) LLVMBuildStore(b, init[k], LLVMBuildInBoundsGEP2(b, et[k], out[k], &lin, 1, ""));
  cpu_loop_end(b, &l);

  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < v->dimensions.n; i++) reduced[v->dimensions.v[i]] = true;
  cpu_index ix = {.rank = is->rank};
  cpu_loop loops[HLO_MAX_RANK];
  int n_loops = 0, kept = 0;
  if (leading) {
    /* the reduced positions in row-major order (the evaluator's), one linear input
     * index: position * cols + column */
    int64_t positions = shape_elements(is) / cols;
    cpu_loop_begin(b, fn, &loops[n_loops++], LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, (unsigned long long)positions, 0), "r");
    LLVMValueRef at = LLVMBuildNUWMul(b, loops[0].index, k_cols, "");
    cpu_loop col;
    cpu_loop_begin(b, fn, &col, c0, c1, "col");
    ix = (cpu_index){.rank = 1, .flat = true, .v = {LLVMBuildNUWAdd(b, at, col.index, "")}};
    lin = col.index;
    for (int k = 0; k < n_out; k++) {
      ptr[k] = LLVMBuildInBoundsGEP2(b, et[k], out[k], &lin, 1, "");
      acc[k] = LLVMBuildLoad2(b, et[k], ptr[k], "");
    }
    cpu_emit_reduce_step(e, v, &ix, acc);
    for (int k = 0; k < n_out; k++) LLVMBuildStore(b, acc[k], ptr[k]);
    *latch = cpu_loop_end(b, &col);
    cpu_loop_end(b, &loops[0]);
    return;
  }
  for (int d = 0; d < is->rank - 1; d++) {
    if (!reduced[d]) {
      ix.v[d] = kept_ix[kept++];
      continue;
    }
    cpu_loop_begin(b, fn, &loops[n_loops], LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, (unsigned long long)is->dims[d], 0), "r");
    ix.v[d] = loops[n_loops++].index;
  }
  cpu_loop col;
  cpu_loop_begin(b, fn, &col, c0, c1, "col");
  ix.v[is->rank - 1] = col.index;
  lin = LLVMBuildAdd(b, row_base, col.index, "");
  for (int k = 0; k < n_out; k++) {
    ptr[k] = LLVMBuildInBoundsGEP2(b, et[k], out[k], &lin, 1, "");
    acc[k] = LLVMBuildLoad2(b, et[k], ptr[k], "");
  }
  cpu_emit_reduce_step(e, v, &ix, acc);
  for (int k = 0; k < n_out; k++) LLVMBuildStore(b, acc[k], ptr[k]);
  *latch = cpu_loop_end(b, &col);
  for (int i = n_loops - 1; i >= 0; i--) cpu_loop_end(b, &loops[i]);
}

/* A one-scope list for the outputs of kernel `name`: the scope (in a domain of its
 * own, both named after the kernel so they are unique in the module) that the output
 * stores carry and the operand loads are declared apart from. */
static LLVMMetadataRef output_scope(LLVMContextRef c, const char *name) {
  char text[96];
  snprintf(text, sizeof text, "%s.buffers", name);
  LLVMMetadataRef d = LLVMMDStringInContext2(c, text, strlen(text));
  LLVMMetadataRef domain = LLVMMDNodeInContext2(c, &d, 1);
  snprintf(text, sizeof text, "%s.outputs", name);
  LLVMMetadataRef scope_ops[2] = {LLVMMDStringInContext2(c, text, strlen(text)), domain};
  LLVMMetadataRef scope = LLVMMDNodeInContext2(c, scope_ops, 2);
  return LLVMMDNodeInContext2(c, &scope, 1);
}

/* Whether ptr points into one of the kernel's own stack arrays (an alloca, through
 * GEPs and casts). */
static bool points_to_alloca(LLVMValueRef ptr) {
  while (LLVMIsAGetElementPtrInst(ptr) || LLVMIsABitCastInst(ptr)) ptr = LLVMGetOperand(ptr, 0);
  return LLVMIsAAllocaInst(ptr) != NULL;
}

/* Puts every store of fn to memory other than a bare alloca in the outputs' scope, and
 * with them every load from a stack array (a reduction's lanes): the operand loads are
 * declared apart from the scope, so the loop vectorizer needs no runtime check of a
 * lane array against an input buffer -- with one it versioned every block of a row
 * reduction on that check and kept the lanes in memory; without, LICM holds them in
 * registers across the row (xla_mean_axis_bf16 0.30 -> 0.18 ms). A bare alloca (a scalar
 * accumulator) needs nothing: SROA makes it a register first. */
static void scope_stores(LLVMContextRef c, LLVMValueRef fn, LLVMMetadataRef list) {
  unsigned kind = LLVMGetMDKindIDInContext(c, "alias.scope", 11);
  LLVMValueRef v = LLVMMetadataAsValue(c, list);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMIsAStoreInst(i) && !LLVMIsAAllocaInst(LLVMGetOperand(i, 1))) LLVMSetMetadata(i, kind, v);
      if (LLVMIsALoadInst(i) && points_to_alloca(LLVMGetOperand(i, 0)) && !LLVMIsAAllocaInst(LLVMGetOperand(i, 0)))
        LLVMSetMetadata(i, kind, v);
    }
}

/* One unit's inner loop over elements [0, n): element j is at linear position base + j,
 * and index component `dim` of ix is that position (flat kernels) or j (rows). */
typedef struct unit_loop {
  LLVMValueRef base, n;
  int dim;
  bool linear;
} unit_loop;

/* Emits the loop computing and storing every output; with `anynan`, also ORs into it
 * whether an output came out NaN. Returns the loop's latch. */
static LLVMValueRef emit_unit_pass(LLVMBuilderRef b, LLVMValueRef fn, cpu_emitter *e, const hlo_instr *ins,
                                   cpu_index *ix, const unit_loop *u, int n_out, LLVMTypeRef *et, LLVMValueRef *out,
                                   LLVMValueRef anynan) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(u->base));
  cpu_loop inner;
  cpu_loop_begin(b, fn, &inner, LLVMConstInt(LLVMInt64TypeInContext(c), 0, 0), u->n, "j");
  LLVMValueRef lin = LLVMBuildNUWAdd(b, u->base, inner.index, "");
  ix->v[u->dim] = u->linear ? lin : inner.index;
  LLVMValueRef values[CPU_MAX_KERNEL_OUTPUTS];
  cpu_emit_root(e, ix, values);
  store_values(b, n_out, et, out, values, lin);
  if (anynan) {
    LLVMTypeRef i1 = LLVMInt1TypeInContext(c);
    LLVMValueRef any = LLVMBuildLoad2(b, i1, anynan, "");
    for (int k = 0; k < n_out; k++) {
      LLVMValueRef is = cpu_emit_is_nan_value(e, cpu_kernel_output_shape(ins, k)->type, values[k]);
      if (is) any = LLVMBuildOr(b, any, is, "");
    }
    LLVMBuildStore(b, any, anynan);
  }
  return cpu_loop_end(b, &inner);
}

/* A unit's elements, in two passes where the kernel allows (cpu_emitter_may_skip_payloads,
 * outputs apart from the inputs): a payload-free pass, whose results are exact unless
 * NaN, then -- only when an output came out NaN -- the exact pass over the unit again,
 * rewriting its outputs. A layer norm's bf16 output kernel does a third less work per
 * element in the first pass (no first-NaN picks, no NaN case in its roundings).
 * Returns the latches (one or two). */
static int emit_unit(LLVMBuilderRef b, LLVMValueRef fn, cpu_emitter *e, const hlo_instr *ins, cpu_index *ix,
                     const unit_loop *u, int n_out, LLVMTypeRef *et, LLVMValueRef *out, bool two_pass,
                     LLVMValueRef *latches) {
  if (!two_pass) {
    latches[0] = emit_unit_pass(b, fn, e, ins, ix, u, n_out, et, out, NULL);
    return 1;
  }
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(u->base));
  LLVMTypeRef i1 = LLVMInt1TypeInContext(c);
  LLVMValueRef anynan = cpu_entry_alloca(fn, i1, "anynan");
  LLVMBuildStore(b, LLVMConstInt(i1, 0, 0), anynan);
  cpu_emitter_set_payload_free(e, true);
  latches[0] = emit_unit_pass(b, fn, e, ins, ix, u, n_out, et, out, anynan);
  cpu_emitter_set_payload_free(e, false);
  cpu_emitter_reset_cache(e);
  LLVMBasicBlockRef exact = LLVMAppendBasicBlockInContext(c, fn, "unit.exact");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, fn, "unit.done");
  LLVMBuildCondBr(b, LLVMBuildLoad2(b, i1, anynan, ""), exact, done);
  LLVMPositionBuilderAtEnd(b, exact);
  latches[1] = emit_unit_pass(b, fn, e, ins, ix, u, n_out, et, out, NULL);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  cpu_emitter_reset_cache(e);
  return 2;
}

LLVMTypeRef cpu_kernel_llvm_type(LLVMContextRef c) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef params[3] = {LLVMPointerType(LLVMPointerType(LLVMInt8TypeInContext(c), 0), 0), i64, i64};
  return LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0);
}

kiln_status cpu_codegen_add_kernel(cpu_jit_module *jm, const hlo_instr *ins, const char *name,
                                   const cpu_kernel_options *opts, cpu_kernel_space *space) {
  LLVMContextRef c = jm->ctx;
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMValueRef fn = LLVMAddFunction(jm->module, name, cpu_kernel_llvm_type(c));
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, fn, "entry");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, entry);

  /* Every output has the iteration shape (a variadic reduce's results share dims). */
  const hlo_shape *os = cpu_kernel_output_shape(ins, 0);
  int n_out = cpu_kernel_output_count(ins);
  LLVMTypeRef et[CPU_MAX_KERNEL_OUTPUTS];
  LLVMValueRef out[CPU_MAX_KERNEL_OUTPUTS];
  for (int k = 0; k < n_out; k++) {
    et[k] = cpu_llvm_type(c, cpu_kernel_output_shape(ins, k)->type);
    LLVMValueRef slot = LLVMConstInt(i64, (unsigned long long)k, 0);
    LLVMValueRef raw = LLVMBuildLoad2(b, i8p, LLVMBuildInBoundsGEP2(b, i8p, LLVMGetParam(fn, 0), &slot, 1, ""), "out");
    out[k] = LLVMBuildBitCast(b, raw, LLVMPointerType(et[k], 0), "");
  }
  LLVMValueRef begin = LLVMGetParam(fn, 1), end = LLVMGetParam(fn, 2);
  LLVMValueRef values[CPU_MAX_KERNEL_OUTPUTS];

  cpu_emitter *e = cpu_emitter_new(jm->module, fn, b, ins);
  cpu_emitter_allow_excess_precision(e, opts->excess_precision);
  cpu_emitter_outline_math(e, opts->outline_math);
  LLVMMetadataRef scope = opts->outputs_apart ? output_scope(c, name) : NULL;
  cpu_emitter_set_load_noalias(e, scope);
  cpu_index ix = {0};
  int64_t n = shape_elements(os);
  /* Input elements folded into each output element: what a unit of a reduction costs. */
  int64_t reduce_factor = 1;
  const hlo_instr *value = cpu_kernel_value_instr(ins);
  if (value->op == HLO_OP_REDUCE) {
    int64_t in = shape_elements(&value->operands[0]->shape), outs = shape_elements(os);
    if (outs > 0 && in > outs) reduce_factor = in / outs;
  }
  bool flat = cpu_kernel_is_flat(ins);
  bool reduces_minor = !flat && os->rank > 0 && reduces_minor_dim(value);
  bool column = !flat && is_column_reduce(value);
  /* A flat kernel whose element count is a multiple of a power of two counts its units
   * in blocks of that many elements, each block an inner loop of constant length: the
   * vectorizer then knows the trip count is a multiple of its vector width times its
   * interleave and emits no scalar remainder loop, so LLVM optimises and generates the
   * body once instead of twice (half the code of a long fused chain, hence half its
   * compile time). */
  int64_t block = 1;
  if (flat && os->rank > 0)
    while (block < CPU_FLAT_BLOCK && n % (block * 2) == 0) block *= 2;
  if (block < 8) block = 1;
  /* a unit's elements in two passes (emit_unit): payload-free, then exact where NaN */
  bool two_pass = scope && !column && !reduces_minor && cpu_emitter_may_skip_payloads(e);
  cpu_loop outer;
  cpu_loop_begin(b, fn, &outer, begin, end, "unit");
  LLVMValueRef lin;
  LLVMValueRef store_latch = NULL; /* the innermost loop that stores the output */
  LLVMValueRef latches[2] = {NULL, NULL}; /* it, and the exact pass's (emit_unit) */
  int n_latches = 1;
  if (column) {
    int64_t cols = column_count(ins, value, os);
    space->units = cols ? n / cols * ((cols + CPU_COLUMN_CHUNK - 1) / CPU_COLUMN_CHUNK) : 0;
    space->unit_cost = reduce_factor * (cols < CPU_COLUMN_CHUNK ? cols : CPU_COLUMN_CHUNK);
    emit_column_reduce(b, fn, e, ins, value, os, n_out, et, out, outer.index, &store_latch);
  } else if (reduces_minor) {
    /* One output element per unit: the inner loop is the reduction itself, reading the
     * input contiguously. A row of outputs as the inner loop would make LLVM vectorize
     * across outputs with strided gathers. */
    space->units = n;
    space->unit_cost = reduce_factor;
    ix.rank = os->rank;
    LLVMValueRef rest = outer.index;
    for (int d = os->rank - 1; d >= 0; d--) {
      if (d == 0) {
        ix.v[0] = rest;
      } else {
        LLVMValueRef dim = LLVMConstInt(i64, (unsigned long long)os->dims[d], 0);
        ix.v[d] = LLVMBuildURem(b, rest, dim, "");
        rest = LLVMBuildUDiv(b, rest, dim, "");
      }
    }
    lin = outer.index;
    cpu_emit_root(e, &ix, values);
    store_values(b, n_out, et, out, values, lin);
  } else if (flat || os->rank == 0) {
    space->units = n / block;
    space->unit_cost = reduce_factor * block;
    /* A scalar result of a kernel that is not flat (a slice or transpose reshaped to
     * rank 0) gets a plain rank-0 index: a flat one would pass through the reshape as
     * a linear position and reach the slice as if it were its multi-index. */
    ix.rank = os->rank == 0 ? 0 : 1;
    ix.flat = flat;
    if (block > 1) {
      LLVMValueRef k_block = LLVMConstInt(i64, (unsigned long long)block, 0);
      unit_loop u = {LLVMBuildNUWMul(b, outer.index, k_block, "first"), k_block, 0, true};
      n_latches = emit_unit(b, fn, e, ins, &ix, &u, n_out, et, out, two_pass, latches);
      store_latch = latches[0];
    } else {
      lin = outer.index;
      ix.v[0] = lin;
      cpu_emit_root(e, &ix, values);
      store_values(b, n_out, et, out, values, lin);
    }
  } else {
    int r = os->rank;
    int64_t inner_n = os->dims[r - 1];
    space->unit_cost = inner_n * reduce_factor;
    space->units = inner_n ? n / inner_n : 0;
    ix.rank = r;
    /* Outer indices from the row number, once per row. */
    LLVMValueRef row = outer.index;
    for (int d = r - 2; d >= 0; d--) {
      if (d == 0) {
        ix.v[0] = row;
      } else {
        LLVMValueRef dim = LLVMConstInt(i64, (unsigned long long)os->dims[d], 0);
        ix.v[d] = LLVMBuildURem(b, row, dim, "");
        row = LLVMBuildUDiv(b, row, dim, "");
      }
    }
    LLVMValueRef row_base = LLVMBuildMul(b, outer.index, LLVMConstInt(i64, (unsigned long long)inner_n, 0), "");
    unit_loop u = {row_base, LLVMConstInt(i64, (unsigned long long)inner_n, 0), r - 1, false};
    n_latches = emit_unit(b, fn, e, ins, &ix, &u, n_out, et, out, two_pass, latches);
    store_latch = latches[0];
  }
  LLVMValueRef outer_latch = cpu_loop_end(b, &outer);
  if (!store_latch && !reduces_minor) store_latch = outer_latch;
  LLVMBuildRetVoid(b);
  latches[0] = store_latch;
  if (store_latch) mark_parallel(c, fn, latches, n_latches, column ? COLUMN_VECTOR : 0);
  if (scope) scope_stores(c, fn, scope);
  cpu_emitter_free(e);
  LLVMDisposeBuilder(b);
  return NULL;
}

bool cpu_kernel_runs_serially(const cpu_kernel_space *space) {
  return space->units < 2 || space->units * space->unit_cost < CPU_PARALLEL_MIN_ELEMS;
}

void cpu_kernel_run(cpu_kernel_fn fn, char **buffers, const cpu_kernel_space *space) {
  int64_t units = space->units;
  if (units <= 0) return;
  /* Small work first, without asking OpenMP: a loop body's tiny kernels run here
   * thousands of times per call, and the call into libgomp is a fair part of that. */
  if (cpu_kernel_runs_serially(space)) {
    fn(buffers, 0, units);
    return;
  }
  int threads = omp_get_max_threads();
  if (threads <= 1) {
    fn(buffers, 0, units);
    return;
  }
  /* A few chunks per thread, handed out dynamically: a core that starts late (the
   * machine is shared) then simply takes fewer chunks instead of stalling the rest. */
  int64_t chunks = (int64_t)threads * 4;
  if (chunks > units) chunks = units;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t lo = units * c / chunks, hi = units * (c + 1) / chunks;
    fn(buffers, lo, hi);
  }
}
