/* Generates a while loop as one function (see cpu_loop_kernel.h). The buffer addresses
 * are read from the programs' address arrays inside the loop rather than once before
 * it: the kernels' stores may alias those arrays as far as LLVM knows, and the reloads
 * are L1 hits. A dynamic-update-slice or dynamic-slice clamps its start indices as XLA
 * specifies (each to [0, dim - window dim]) and copies the window in runs as
 * cpu_update_slice.c does; when an update's result is not the operand's own block, the
 * operand is copied in first. */
#include "backends/cpu/cpu_loop_kernel.h"

#include "backends/cpu/cpu_codegen.h"
#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_native.h"

typedef struct loop_gen {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMValueRef fn;
  LLVMBuilderRef b;
  LLVMTypeRef i8, i8p, i64;
  unsigned always_inline;
} loop_gen;

static LLVMValueRef c64(const loop_gen *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* addrs[k] */
static LLVMValueRef address(const loop_gen *g, LLVMValueRef addrs, int64_t k) {
  LLVMValueRef at = c64(g, k);
  return LLVMBuildLoad2(g->b, g->i8p, LLVMBuildInBoundsGEP2(g->b, g->i8p, addrs, &at, 1, ""), "");
}

static LLVMValueRef byte_at(const loop_gen *g, LLVMValueRef base, LLVMValueRef offset) {
  return LLVMBuildInBoundsGEP2(g->b, g->i8, base, &offset, 1, "");
}

static kiln_status emit_kernel_call(const loop_gen *g, LLVMValueRef addrs, const cpu_loop_step *s) {
  LLVMValueRef callee = LLVMGetNamedFunction(g->m, s->kernel);
  if (!callee) return ERR_INTERNAL("cpu: loop kernel: %s is not in the loop's module", s->kernel);
  LLVMValueRef at = c64(g, s->at);
  LLVMValueRef args[3] = {LLVMBuildInBoundsGEP2(g->b, g->i8p, addrs, &at, 1, ""), c64(g, 0), c64(g, s->units)};
  LLVMValueRef call = LLVMBuildCall2(g->b, cpu_kernel_llvm_type(g->c), callee, args, 3, "");
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->c, g->always_inline, 0));
  return NULL;
}

/* A dynamic-update-slice (update) or dynamic-slice (!update): the window of `big` at
 * the clamped start indices, whose addresses follow at addrs[idx], moved from or to
 * `small`, run by run. */
static void emit_window_copy(const loop_gen *g, LLVMValueRef addrs, int idx, const hlo_instr *ins, bool update,
                             LLVMValueRef big, LLVMValueRef small) {
  const hlo_shape *sh = &ins->operands[0]->shape;
  const int64_t *win = update ? ins->operands[1]->shape.dims : ins->shape.dims;
  int64_t elem = (int64_t)hlo_type_size(sh->type);
  int64_t strides[HLO_MAX_RANK], stride = 1;
  for (int d = sh->rank - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= sh->dims[d];
  }
  /* the clamped start's element offset */
  hlo_type it = sh->rank ? ins->operands[update ? 2 : 1]->shape.type : HLO_S32;
  LLVMTypeRef ity = cpu_llvm_type(g->c, it);
  LLVMValueRef start = c64(g, 0);
  for (int d = 0; d < sh->rank; d++) {
    LLVMValueRef p = LLVMBuildBitCast(g->b, address(g, addrs, idx + d), LLVMPointerType(ity, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(g->b, ity, p, "");
    v = hlo_type_is_unsigned_int(it) ? LLVMBuildZExt(g->b, v, g->i64, "") : LLVMBuildSExt(g->b, v, g->i64, "");
    LLVMValueRef hi = c64(g, sh->dims[d] - win[d]);
    v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, c64(g, 0), ""), c64(g, 0), v, "");
    v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, hi, ""), hi, v, "");
    start = LLVMBuildAdd(g->b, start, LLVMBuildMul(g->b, v, c64(g, strides[d]), ""), "");
  }
  int inner;
  int64_t run;
  cpu_window_runs(sh, win, &inner, &run);
  /* runs: the window's dims before `inner`, counted like an odometer; run r of the
   * small side (row-major over those dims) is at start + sum pos[d] * stride[d] */
  cpu_loop loops[HLO_MAX_RANK];
  LLVMValueRef at_big = start, at_small = c64(g, 0);
  for (int d = 0; d < inner; d++) {
    cpu_loop_begin(g->b, g->fn, &loops[d], c64(g, 0), c64(g, win[d]), "window.run");
    at_big = LLVMBuildAdd(g->b, at_big, LLVMBuildMul(g->b, loops[d].index, c64(g, strides[d]), ""), "");
    at_small = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, at_small, c64(g, win[d]), ""), loops[d].index, "");
  }
  LLVMValueRef b = byte_at(g, big, LLVMBuildMul(g->b, at_big, c64(g, elem), ""));
  LLVMValueRef s = byte_at(g, small, LLVMBuildMul(g->b, at_small, c64(g, run * elem), ""));
  if (update)
    LLVMBuildMemMove(g->b, b, 1, s, 1, c64(g, run * elem));
  else
    LLVMBuildMemMove(g->b, s, 1, b, 1, c64(g, run * elem));
  for (int d = inner - 1; d >= 0; d--) cpu_loop_end(g->b, &loops[d]);
}

/* dynamic-update-slice: when the result is not the operand's own block, the operand is
 * copied in first. */
static void emit_update_slice(const loop_gen *g, LLVMValueRef addrs, const cpu_loop_step *s) {
  const hlo_instr *ins = s->ins;
  LLVMValueRef out = address(g, addrs, s->at), operand = address(g, addrs, s->at + 1);
  LLVMBasicBlockRef copy = LLVMAppendBasicBlockInContext(g->c, g->fn, "dus.copy");
  LLVMBasicBlockRef window = LLVMAppendBasicBlockInContext(g->c, g->fn, "dus.window");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, out, operand, ""), window, copy);
  LLVMPositionBuilderAtEnd(g->b, copy);
  LLVMBuildMemCpy(g->b, out, 1, operand, 1, c64(g, shape_byte_size(&ins->shape)));
  LLVMBuildBr(g->b, window);
  LLVMPositionBuilderAtEnd(g->b, window);
  if (shape_elements(&ins->operands[1]->shape) > 0)
    emit_window_copy(g, addrs, s->at + 3, ins, true, out, address(g, addrs, s->at + 2));
}

static kiln_status emit_steps(const loop_gen *g, LLVMValueRef addrs, const cpu_loop_step *steps, int n) {
  for (int i = 0; i < n; i++) {
    const cpu_loop_step *s = &steps[i];
    switch (s->kind) {
      case CPU_STEP_KERNEL: TRY(emit_kernel_call(g, addrs, s)); break;
      case CPU_STEP_COPY:
        LLVMBuildMemMove(g->b, address(g, addrs, s->at), 1, address(g, addrs, s->at + 1), 1, c64(g, s->bytes));
        break;
      case CPU_STEP_UPDATE_SLICE: emit_update_slice(g, addrs, s); break;
      case CPU_STEP_SLICE:
        if (shape_elements(&s->ins->shape) > 0)
          emit_window_copy(g, addrs, s->at + 2, s->ins, false, address(g, addrs, s->at + 1), address(g, addrs, s->at));
        break;
    }
  }
  return NULL;
}

kiln_status cpu_codegen_add_loop(cpu_jit_module *jm, const char *name, const cpu_loop_plan *plan) {
  loop_gen g = {.c = jm->ctx, .m = jm->module};
  g.i8 = LLVMInt8TypeInContext(g.c);
  g.i8p = LLVMPointerType(g.i8, 0);
  g.i64 = LLVMInt64TypeInContext(g.c);
  g.always_inline = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMTypeRef i8pp = LLVMPointerType(g.i8p, 0);
  LLVMTypeRef params[5] = {i8pp, i8pp, g.i8p, i8pp, i8pp};
  g.fn = LLVMAddFunction(g.m, name, LLVMFunctionType(LLVMVoidTypeInContext(g.c), params, 5, 0));
  LLVMSetLinkage(g.fn, LLVMExternalLinkage);
  g.b = LLVMCreateBuilderInContext(g.c);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g.c, g.fn, "entry");
  LLVMBasicBlockRef cond = LLVMAppendBasicBlockInContext(g.c, g.fn, "cond");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g.c, g.fn, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g.c, g.fn, "done");
  LLVMPositionBuilderAtEnd(g.b, entry);
  LLVMBuildBr(g.b, cond);
  LLVMPositionBuilderAtEnd(g.b, cond);
  kiln_status st = emit_steps(&g, LLVMGetParam(g.fn, 0), plan->cond, plan->n_cond);
  if (!st) {
    LLVMValueRef pred = LLVMBuildLoad2(g.b, g.i8, LLVMGetParam(g.fn, 2), "pred");
    LLVMBuildCondBr(g.b, LLVMBuildICmp(g.b, LLVMIntNE, pred, LLVMConstInt(g.i8, 0, 0), ""), body, done);
    LLVMPositionBuilderAtEnd(g.b, body);
    st = emit_steps(&g, LLVMGetParam(g.fn, 1), plan->body, plan->n_body);
  }
  if (!st) {
    for (int i = 0; i < plan->n_moves; i++) {
      LLVMValueRef to = address(&g, LLVMGetParam(g.fn, 3), plan->move_leaf[i]);
      LLVMValueRef from = address(&g, LLVMGetParam(g.fn, 4), plan->move_leaf[i]);
      LLVMBuildMemCpy(g.b, to, 1, from, 1, c64(&g, plan->move_bytes[i]));
    }
    LLVMBuildBr(g.b, cond);
    LLVMPositionBuilderAtEnd(g.b, done);
    LLVMBuildRetVoid(g.b);
  }
  LLVMDisposeBuilder(g.b);
  if (st) LLVMDeleteFunction(g.fn);
  return st;
}
