/* The elemental emitter (see cpu_elemental.h).
 *
 * emit(ins, index) returns the LLVM value of one element. Elementwise ops pass their
 * index through; data movement maps it (broadcast, transpose, slice, reverse, reshape
 * through the linear position, dynamic-slice and gather through clamped starts read
 * from their index operands); pad, concatenate and dynamic-update-slice branch so that
 * no operand is ever read outside its bounds; reduce (variadic too), reduce-window, dot
 * and convolution loop over the contracted positions in the evaluator's order (dot and
 * convolution operands of another element type are converted to the result type first,
 * as the evaluator does); bitcast-convert between widths splits or joins little-endian
 * pieces along a minor dimension. Values already emitted for
 * the same (instruction, index object) are reused, which keeps fused graphs with shared
 * subexpressions linear in size; index objects are never reused across basic-block
 * regions, so a cached value always dominates its reuse.
 *
 * Every rule transcribes the evaluator (src/eval/elementwise.c, convert.c): integer
 * division by zero gives -1 (all ones), INT_MIN / -1 gives INT_MIN, shifts by the width
 * or more give 0 or the sign fill, float -> int converts truncate and saturate with
 * NaN -> 0, maximum/minimum propagate the left NaN, + - * / keep the first NaN
 * operand's payload, pred arithmetic is boolean, reduce-precision is the evaluator's
 * bit recipe (halves through f32). */
#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_jit.h" /* cpu_jit_mark_process_specific */
#include "backends/cpu/cpu_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct cache_entry {
  const hlo_instr *ins;
  const cpu_index *ix;
  LLVMValueRef value;
  bool wide; /* the unrounded f32 value of a bf16 instruction (see emit_wide) */
} cache_entry;

struct cpu_emitter {
  LLVMContextRef c;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMValueRef fn, buffers;
  LLVMValueRef *slot_pointers; /* buffers[k] as char*, loaded once before the loops */
  int n_slots;
  int n_outputs; /* buffers[0 .. n_outputs) are outputs, operands follow */
  const hlo_instr *root;
  const hlo_computation *fused; /* the fusion's computation, NULL for a plain instruction */
  /* Scalar computation being inlined (a reducer body) and its argument values. */
  const hlo_computation *bound_comp;
  LLVMValueRef *bound_args;
  cache_entry *cache;
  int n_cache, cap_cache;
  cpu_index **indexes; /* every index object made, freed with the emitter */
  int n_indexes, cap_indexes;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64;
  bool excess_precision; /* see cpu_emitter_allow_excess_precision */
  LLVMValueRef load_noalias; /* see cpu_emitter_set_load_noalias */
  bool outline_math; /* see cpu_emitter_outline_math */
  /* A first pass that drops the NaN payload rules (see cpu_emitter_set_payload_free):
   * values are the exact pass's bits or both NaN. */
  bool payload_free;
  /* In it, float reads make their NaNs canonical and bf16 rounding has no NaN case: set
   * with payload_free for a kernel that rounds to bf16 (rounds_to_bf16). */
  bool canonical_nans;
};

/* ------------------------------------------------------------- what we support -- */

static bool type_ok(hlo_type t) { return hlo_type_is_array(t); }

static bool supports_instr(const hlo_instr *ins, bool in_fusion, strbuf *why);

static bool why_not(strbuf *why, const hlo_instr *ins, const char *reason) {
  if (why) strbuf_printf(why, "%s (%s): %s", ins->name, hlo_opcode_name(ins->op), reason);
  return false;
}

static bool supports_computation(const hlo_computation *c, strbuf *why) {
  for (int i = 0; i < c->n_instrs; i++)
    if (!supports_instr(c->instrs[i], true, why)) return false;
  return true;
}

/* A scalar computation (reducer, comparator, combiner): scalars only; with
 * n_results > 1 the root is a tuple of n_results scalars. */
static bool supports_scalar(const hlo_instr *user, const hlo_computation *c, int n_params, int n_results, strbuf *why) {
  if (!c || c->n_params != n_params) return why_not(why, user, "called computation has the wrong arity");
  if (n_results > 1) {
    if (c->root->op != HLO_OP_TUPLE || c->root->n_operands != n_results)
      return why_not(why, user, "called computation must return a tuple of its results");
  } else if (!shape_is_array(&c->root->shape)) {
    return why_not(why, user, "called computation returns a tuple");
  }
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *x = c->instrs[i];
    if (x == c->root && n_results > 1) continue;
    if (!shape_is_array(&x->shape) || x->shape.rank != 0)
      return why_not(why, user, "called computation has non-scalar values");
    if (!supports_instr(x, true, why)) return false;
  }
  return true;
}

/* A reducer body: n_params / 2 accumulators. */
static bool supports_scalar_computation(const hlo_instr *user, const hlo_computation *c, int n_params, strbuf *why) {
  return supports_scalar(user, c, n_params, n_params > 2 ? n_params / 2 : 1, why);
}

/* bitcast-convert: equal widths keep the dimensions; otherwise the narrow side has one
 * more, minor, dimension of the width ratio (XLA's rule, which the evaluator checks
 * the same way). Types under 8 bits never get here: shape inference refuses them. */
static bool bitcast_convert_ok(const hlo_instr *ins) {
  const hlo_shape *in = &ins->operands[0]->shape, *out = &ins->shape;
  size_t a = hlo_type_size(in->type), b = hlo_type_size(out->type);
  if (hlo_type_bit_width(in->type) < 8 || hlo_type_bit_width(out->type) < 8) return false;
  if (a == b) return shape_same_dims(in, out);
  const hlo_shape *wide = a > b ? in : out, *narrow = a > b ? out : in;
  size_t ratio = a > b ? a / b : b / a;
  if ((a > b ? a % b : b % a) != 0) return false;
  if (narrow->rank != wide->rank + 1 || narrow->dims[narrow->rank - 1] != (int64_t)ratio) return false;
  for (int d = 0; d < wide->rank; d++)
    if (wide->dims[d] != narrow->dims[d]) return false;
  return true;
}

static bool supports_instr(const hlo_instr *ins, bool in_fusion, strbuf *why) {
  if (ins->op == HLO_OP_FUSION) {
    if (in_fusion) return why_not(why, ins, "nested fusion");
    if (ins->n_called != 1) return why_not(why, ins, "fusion without a computation");
    if (!shape_is_array(&ins->shape)) return why_not(why, ins, "multi-output fusion");
    return supports_computation(ins->called[0], why);
  }
  if (ins->op == HLO_OP_REDUCE && ins->n_operands > 2) {
    int n = ins->n_operands / 2;
    if (in_fusion) return why_not(why, ins, "variadic reduce inside a fusion");
    if (ins->n_operands % 2 || n > CPU_MAX_KERNEL_OUTPUTS) return why_not(why, ins, "too many reduce operands");
    if (!shape_is_tuple(&ins->shape) || ins->shape.n_elems != n) return why_not(why, ins, "result is not a tuple of n arrays");
    for (int k = 0; k < n; k++)
      if (!shape_is_array(&ins->shape.elems[k]) || !shape_same_dims(&ins->shape.elems[k], &ins->shape.elems[0]))
        return why_not(why, ins, "results differ in dimensions");
    for (int k = 0; k < ins->n_operands; k++)
      if (!shape_is_array(&ins->operands[k]->shape)) return why_not(why, ins, "operand is not an array");
    return supports_scalar_computation(ins, ins->called[0], ins->n_operands, why);
  }
  if (!shape_is_array(&ins->shape) || !type_ok(ins->shape.type))
    return why_not(why, ins, "result is not an array");
  for (int k = 0; k < ins->n_operands; k++)
    if (!shape_is_array(&ins->operands[k]->shape)) return why_not(why, ins, "operand is not an array");
  if (ins->op == HLO_OP_BITCAST && hlo_type_size(ins->shape.type) != hlo_type_size(ins->operands[0]->shape.type))
    return why_not(why, ins, "bitcast between element types of different widths");
  switch (ins->op) {
    case HLO_OP_PARAMETER:
    case HLO_OP_CONSTANT:
    case HLO_OP_IOTA:
    case HLO_OP_BROADCAST:
    case HLO_OP_RESHAPE:
    case HLO_OP_BITCAST:
    case HLO_OP_TRANSPOSE:
    case HLO_OP_SLICE:
    case HLO_OP_CONCATENATE:
    case HLO_OP_PAD:
    case HLO_OP_REVERSE:
    case HLO_OP_COPY:
    case HLO_OP_CONVERT:
    case HLO_OP_COMPARE:
    case HLO_OP_SELECT:
    case HLO_OP_CLAMP:
      return true;
    case HLO_OP_DYNAMIC_SLICE:
    case HLO_OP_DYNAMIC_UPDATE_SLICE: {
      int first = ins->op == HLO_OP_DYNAMIC_SLICE ? 1 : 2;
      for (int k = first; k < ins->n_operands; k++)
        if (ins->operands[k]->shape.rank != 0 || !hlo_type_is_int(ins->operands[k]->shape.type))
          return why_not(why, ins, "start indices must be integer scalars");
      if (ins->n_operands - first != ins->operands[0]->shape.rank)
        return why_not(why, ins, "expected one start index per dimension");
      return true;
    }
    case HLO_OP_GATHER:
      if (!hlo_type_is_int(ins->operands[1]->shape.type)) return why_not(why, ins, "start indices must be integers");
      if (ins->gather_slice_sizes.n != ins->operands[0]->shape.rank)
        return why_not(why, ins, "slice_sizes does not match the operand rank");
      return true;
    case HLO_OP_BITCAST_CONVERT:
      return bitcast_convert_ok(ins) ? true : why_not(why, ins, "bitcast-convert shapes do not match the widths");
    case HLO_OP_REDUCE_PRECISION: {
      hlo_type t = ins->shape.type;
      if ((t != HLO_F16 && t != HLO_BF16 && t != HLO_F32 && t != HLO_F64) || ins->operands[0]->shape.type != t)
        return why_not(why, ins, "reduce-precision of a type other than f16, bf16, f32, f64");
      /* the evaluator's range; past it the evaluator reports the error */
      if (ins->exponent_bits < 1 || ins->exponent_bits > 1024 || ins->mantissa_bits < 0 || ins->mantissa_bits > 1024)
        return why_not(why, ins, "exponent_bits or mantissa_bits out of range");
      return true;
    }
    case HLO_OP_IS_FINITE:
      return hlo_type_is_float(ins->operands[0]->shape.type) ? true : why_not(why, ins, "operand is not a float");
    case HLO_OP_REDUCE:
      if (ins->n_operands != 2) return why_not(why, ins, "variadic reduce");
      return supports_scalar_computation(ins, ins->called[0], 2, why);
    case HLO_OP_REDUCE_WINDOW:
      if (ins->n_operands != 2) return why_not(why, ins, "variadic reduce-window");
      if (ins->window.rank != ins->shape.rank) return why_not(why, ins, "window rank differs from the operand rank");
      return supports_scalar_computation(ins, ins->called[0], 2, why);
    case HLO_OP_CONVOLUTION:
      if (ins->conv.n_spatial != ins->shape.rank - 2 || ins->window.rank != ins->conv.n_spatial)
        return why_not(why, ins, "convolution dimension numbers do not match the rank");
      if (ins->feature_group_count < 1 || ins->batch_group_count < 1)
        return why_not(why, ins, "invalid group counts");
      __attribute__((fallthrough)); /* same type rules as dot */
    case HLO_OP_DOT:
      /* Operands of any element type: each is converted to the result type first, as
       * the evaluator does (bf16 x bf16 -> f32, s8 x s8 -> s32, ...). */
      if (ins->shape.type == HLO_PRED) return why_not(why, ins, "pred dot");
      return true;
    default:
      break;
  }
  if (hlo_opcode_is_elementwise(ins->op)) {
    hlo_type t = ins->operands[0]->shape.type;
    bool fl = hlo_type_is_float(t), pr = t == HLO_PRED;
    switch (ins->op) {
      case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_DIVIDE:
      case HLO_OP_REMAINDER: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_POWER:
      case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_SIGN:
        return true;
      case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR: case HLO_OP_NOT:
        return fl ? why_not(why, ins, "logic op on floats") : true;
      case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_LOGICAL: case HLO_OP_SHIFT_RIGHT_ARITHMETIC:
      case HLO_OP_POPCNT: case HLO_OP_CLZ:
        return (fl || pr) ? why_not(why, ins, "integer-only op on this type") : true;
      case HLO_OP_ATAN2: case HLO_OP_CBRT: case HLO_OP_CEIL: case HLO_OP_COSINE: case HLO_OP_ERF:
      case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_FLOOR: case HLO_OP_LOG: case HLO_OP_LOG1P:
      case HLO_OP_LOGISTIC: case HLO_OP_ROUND_NEAREST_AFZ: case HLO_OP_ROUND_NEAREST_EVEN:
      case HLO_OP_RSQRT: case HLO_OP_SINE: case HLO_OP_SQRT: case HLO_OP_TAN: case HLO_OP_TANH:
        return fl ? true : why_not(why, ins, "float-only op on a non-float type");
      default: break;
    }
  }
  return why_not(why, ins, "not implemented by the cpu code generator");
}

bool cpu_elemental_supports(const hlo_instr *ins, strbuf *why) { return supports_instr(ins, false, why); }

const hlo_instr *cpu_kernel_value_instr(const hlo_instr *root) {
  return root->op == HLO_OP_FUSION ? root->called[0]->root : root;
}

/* Flat kernels: only same-size elementwise work, scalars and scalar broadcasts. */
static bool flat_instr(const hlo_instr *ins, int64_t n) {
  int64_t k = shape_elements(&ins->shape);
  if (ins->shape.rank != 0 && k != n) return false;
  switch (ins->op) {
    case HLO_OP_PARAMETER:
    case HLO_OP_CONSTANT:
    case HLO_OP_RESHAPE:
    case HLO_OP_BITCAST:
      return true;
    case HLO_OP_BROADCAST: return ins->operands[0]->shape.rank == 0;
    case HLO_OP_BITCAST_CONVERT: /* a change of width reads ratio elements, or part of one */
      return hlo_type_size(ins->shape.type) == hlo_type_size(ins->operands[0]->shape.type);
    case HLO_OP_DOT:
    case HLO_OP_CONVOLUTION:
    case HLO_OP_GATHER:
    case HLO_OP_IOTA:
    case HLO_OP_REDUCE:
    case HLO_OP_REDUCE_WINDOW:
    case HLO_OP_DYNAMIC_SLICE:
    case HLO_OP_DYNAMIC_UPDATE_SLICE:
      return false;
    default: break;
  }
  if (!hlo_opcode_is_elementwise(ins->op)) return false;
  for (int i = 0; i < ins->n_operands; i++) {
    const hlo_shape *s = &ins->operands[i]->shape;
    if (s->rank != 0 && shape_elements(s) != n) return false;
  }
  return true;
}

bool cpu_kernel_is_flat(const hlo_instr *root) {
  int64_t n = shape_elements(&root->shape);
  if (root->op != HLO_OP_FUSION) return flat_instr(root, n);
  const hlo_computation *c = root->called[0];
  for (int i = 0; i < c->n_instrs; i++)
    if (!flat_instr(c->instrs[i], n)) return false;
  return true;
}

bool cpu_reduce_input_is_flat(const hlo_instr *root) {
  const hlo_instr *v = cpu_kernel_value_instr(root);
  if (v->op != HLO_OP_REDUCE) return false;
  if (root->op != HLO_OP_FUSION) return true;
  int64_t n = shape_elements(&v->operands[0]->shape);
  const hlo_computation *c = root->called[0];
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i] != v && !flat_instr(c->instrs[i], n)) return false;
  return true;
}

/* ------------------------------------------------------------- basics ----------- */

LLVMTypeRef cpu_llvm_type(LLVMContextRef c, hlo_type t) {
  switch (hlo_type_size(t)) {
    case 1: return LLVMInt8TypeInContext(c);
    case 2: return LLVMInt16TypeInContext(c);
    case 4: return t == HLO_F32 ? LLVMFloatTypeInContext(c) : LLVMInt32TypeInContext(c);
    default: return t == HLO_F64 ? LLVMDoubleTypeInContext(c) : LLVMInt64TypeInContext(c);
  }
}

static cpu_emitter *emitter_alloc(LLVMModuleRef m, LLVMValueRef fn, LLVMBuilderRef b) {
  cpu_emitter *e = calloc(1, sizeof *e);
  if (!e) abort();
  e->m = m;
  e->c = LLVMGetModuleContext(m);
  e->b = b;
  e->fn = fn;
  e->i1 = LLVMInt1TypeInContext(e->c);
  e->i8 = LLVMInt8TypeInContext(e->c);
  e->i16 = LLVMInt16TypeInContext(e->c);
  e->i32 = LLVMInt32TypeInContext(e->c);
  e->i64 = LLVMInt64TypeInContext(e->c);
  e->f32 = LLVMFloatTypeInContext(e->c);
  e->f64 = LLVMDoubleTypeInContext(e->c);
  return e;
}

cpu_emitter *cpu_emitter_new_scalar(LLVMModuleRef m, LLVMValueRef fn, LLVMBuilderRef b) {
  return emitter_alloc(m, fn, b);
}

cpu_emitter *cpu_emitter_new(LLVMModuleRef m, LLVMValueRef fn, LLVMBuilderRef b, const hlo_instr *root) {
  cpu_emitter *e = emitter_alloc(m, fn, b);
  e->buffers = LLVMGetParam(fn, 0);
  e->root = root;
  e->fused = root->op == HLO_OP_FUSION ? root->called[0] : NULL;
  /* Loading the buffer table up front lets LLVM see loop-invariant base pointers; a
   * load inside the loop could alias the output stores and would block vectorization. */
  e->n_outputs = cpu_kernel_output_count(root);
  e->n_slots = e->n_outputs + (e->fused ? e->fused->n_params : root->n_operands);
  e->slot_pointers = calloc((size_t)e->n_slots, sizeof *e->slot_pointers);
  if (!e->slot_pointers) abort();
  LLVMTypeRef i8p = LLVMPointerType(e->i8, 0);
  for (int k = e->n_outputs; k < e->n_slots; k++) {
    LLVMValueRef idx = LLVMConstInt(e->i64, (unsigned long long)k, 0);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(b, i8p, e->buffers, &idx, 1, "");
    e->slot_pointers[k] = LLVMBuildLoad2(b, i8p, at, "buf");
  }
  return e;
}

void cpu_emitter_free(cpu_emitter *e) {
  if (!e) return;
  for (int i = 0; i < e->n_indexes; i++) free(e->indexes[i]);
  free(e->indexes);
  free(e->cache);
  free(e->slot_pointers);
  free(e);
}

void cpu_emitter_reset_cache(cpu_emitter *e) { e->n_cache = 0; }

void cpu_emitter_allow_excess_precision(cpu_emitter *e, bool allow) { e->excess_precision = allow; }

void cpu_emitter_outline_math(cpu_emitter *e, bool outline) { e->outline_math = outline; }

void cpu_emitter_set_load_noalias(cpu_emitter *e, LLVMMetadataRef list) {
  e->load_noalias = list ? LLVMMetadataAsValue(e->c, list) : NULL;
}

static cpu_index *new_index(cpu_emitter *e, int rank, bool flat) {
  if (e->n_indexes == e->cap_indexes) {
    e->cap_indexes = e->cap_indexes ? 2 * e->cap_indexes : 64;
    e->indexes = realloc(e->indexes, (size_t)e->cap_indexes * sizeof *e->indexes);
    if (!e->indexes) abort();
  }
  cpu_index *ix = calloc(1, sizeof *ix);
  if (!ix) abort();
  ix->rank = rank;
  ix->flat = flat;
  e->indexes[e->n_indexes++] = ix;
  return ix;
}

static LLVMValueRef c64(cpu_emitter *e, int64_t v) { return LLVMConstInt(e->i64, (unsigned long long)v, 1); }
static LLVMValueRef cint(LLVMTypeRef t, uint64_t v) { return LLVMConstInt(t, v, 0); }

static LLVMValueRef call(cpu_emitter *e, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n) {
  LLVMTypeRef params[4];
  for (int i = 0; i < n; i++) params[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(e->m, name);
  if (!f) f = LLVMAddFunction(e->m, name, fty);
  return LLVMBuildCall2(e->b, fty, f, args, (unsigned)n, "");
}
static LLVMValueRef call1(cpu_emitter *e, const char *name, LLVMTypeRef ret, LLVMValueRef a) {
  return call(e, name, ret, &a, 1);
}
static LLVMValueRef call2(cpu_emitter *e, const char *name, LLVMTypeRef ret, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return call(e, name, ret, args, 2);
}

static LLVMValueRef linearize(cpu_emitter *e, const hlo_shape *s, const cpu_index *ix) {
  if (ix->rank == 0) return c64(e, 0);
  if (ix->flat) return ix->v[0];
  int64_t strides[HLO_MAX_RANK];
  shape_strides(s, strides);
  LLVMValueRef lin = NULL;
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] == 1) continue;
    LLVMValueRef term = strides[d] == 1 ? ix->v[d] : LLVMBuildMul(e->b, ix->v[d], c64(e, strides[d]), "");
    lin = lin ? LLVMBuildAdd(e->b, lin, term, "") : term;
  }
  return lin ? lin : c64(e, 0);
}

static cpu_index *delinearize(cpu_emitter *e, const hlo_shape *s, LLVMValueRef lin) {
  cpu_index *ix = new_index(e, s->rank, false);
  int64_t strides[HLO_MAX_RANK];
  shape_strides(s, strides);
  for (int d = 0; d < s->rank; d++) {
    LLVMValueRef q = strides[d] == 1 ? lin : LLVMBuildUDiv(e->b, lin, c64(e, strides[d]), "");
    ix->v[d] = d == 0 ? q : LLVMBuildURem(e->b, q, c64(e, s->dims[d]), "");
    if (s->dims[d] == 1) ix->v[d] = c64(e, 0);
  }
  return ix;
}

/* The operand index of a reshape from `in` to `out` at output index ix, group by group:
 * the shapes split into runs of dims with equal products (size-1 dims belong to no run),
 * a run of one dim on each side maps through unchanged, and only the other runs go
 * through a linear position. Reshapes that insert or drop size-1 dims, or split or merge
 * a few dims, then cost no division for the dims they leave alone. `in` has elements. */
static cpu_index *reshape_index(cpu_emitter *e, const hlo_shape *out, const cpu_index *ix, const hlo_shape *in) {
  cpu_index *oix = new_index(e, in->rank, false);
  int a = 0, b = 0;
  for (;;) {
    while (a < in->rank && in->dims[a] == 1) oix->v[a++] = c64(e, 0);
    while (b < out->rank && out->dims[b] == 1) b++;
    if (a == in->rank || b == out->rank) break;
    int a1 = a + 1, b1 = b + 1;
    int64_t pa = in->dims[a], pb = out->dims[b];
    while (pa != pb) {
      if (pa < pb) pa *= in->dims[a1++];
      else pb *= out->dims[b1++];
    }
    if (a1 - a == 1 && b1 - b == 1) {
      oix->v[a] = ix->v[b];
    } else {
      LLVMValueRef lin = NULL;
      for (int d = b; d < b1; d++)
        lin = lin ? LLVMBuildAdd(e->b, LLVMBuildMul(e->b, lin, c64(e, out->dims[d]), ""), ix->v[d], "") : ix->v[d];
      for (int d = a1 - 1; d >= a; d--) {
        oix->v[d] = d == a ? lin : LLVMBuildURem(e->b, lin, c64(e, in->dims[d]), "");
        if (d > a) lin = LLVMBuildUDiv(e->b, lin, c64(e, in->dims[d]), "");
      }
    }
    a = a1;
    b = b1;
  }
  return oix;
}

static LLVMValueRef buffer_pointer(cpu_emitter *e, int slot, hlo_type t) {
  return LLVMBuildBitCast(e->b, e->slot_pointers[slot], LLVMPointerType(cpu_llvm_type(e->c, t), 0), "");
}

static LLVMValueRef is_nan(cpu_emitter *e, LLVMValueRef x) { return LLVMBuildFCmp(e->b, LLVMRealUNO, x, x, ""); }

static bool canonical(const cpu_emitter *e) { return e->payload_free && e->canonical_nans; }

static bool rounds_to_bf16(const cpu_emitter *e);

void cpu_emitter_set_payload_free(cpu_emitter *e, bool on) {
  e->payload_free = on;
  e->canonical_nans = on && rounds_to_bf16(e);
}

/* In a payload-free pass of a kernel that rounds to bf16, an f32/f64 read from memory
 * with any NaN made the quiet NaN of no payload: every NaN the pass then computes has a
 * zero low half (quieting and propagation keep it so), which is what lets
 * round_to_bf16_f32 drop its NaN select. */
static LLVMValueRef canonical_nan(cpu_emitter *e, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (!canonical(e) || (t != e->f32 && t != e->f64)) return v;
  return LLVMBuildSelect(e->b, is_nan(e, v), LLVMConstReal(t, NAN), v, "");
}

/* Element lin of an operand buffer or constant: read-only memory, never the output. */
static LLVMValueRef load_at(cpu_emitter *e, LLVMValueRef base, hlo_type t, LLVMValueRef lin) {
  LLVMTypeRef et = cpu_llvm_type(e->c, t);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, et, base, &lin, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(e->b, et, p, "");
  if (e->load_noalias) LLVMSetMetadata(v, LLVMGetMDKindIDInContext(e->c, "noalias", 7), e->load_noalias);
  return canonical_nan(e, v);
}

static LLVMValueRef load_buffer(cpu_emitter *e, int slot, const hlo_shape *s, const cpu_index *ix) {
  return load_at(e, buffer_pointer(e, slot, s->type), s->type, linearize(e, s, ix));
}

/* ------------------------------------------------------------- floats ----------- */

static bool is_half(hlo_type t) { return t == HLO_F16 || t == HLO_BF16; }

/* The f16 conversions are the evaluator's bit recipes (base/half.h, f16_to_f32 and
 * f32_to_f16) written out in integer operations and selects, which the loop vectorizer
 * widens: a call into the runtime per element kept every f16 kernel scalar (a
 * [4096,768] f16 add, multiply and subtract took 19.8 ms, the f32 one 0.39 ms). LLVM's
 * own half conversions are no better here: LLVM 14 leaves them scalar (one vcvtps2ph
 * per element) and leaves NaN payloads to the target. */

/* f16 bits (in an i32) -> float, exact: a subnormal is its mantissa times 2^-24 (exact
 * in f32), an infinity or NaN keeps its payload, unquieted, as the evaluator's. */
static LLVMValueRef f16_bits_to_f32(cpu_emitter *e, LLVMValueRef w) {
  LLVMValueRef sign = LLVMBuildShl(e->b, LLVMBuildAnd(e->b, w, cint(e->i32, 0x8000), ""), cint(e->i32, 16), "");
  LLVMValueRef em = LLVMBuildAnd(e->b, w, cint(e->i32, 0x7fff), "");
  LLVMValueRef man13 = LLVMBuildShl(e->b, LLVMBuildAnd(e->b, w, cint(e->i32, 0x3ff), ""), cint(e->i32, 13), "");
  /* exponent 1..30: rebias 15 -> 127 by adding 112 << 23 to the shifted exponent and mantissa */
  LLVMValueRef normal = LLVMBuildAdd(e->b, LLVMBuildShl(e->b, em, cint(e->i32, 13), ""), cint(e->i32, 112u << 23), "");
  /* (payload-free: an infinity, or the canonical NaN, see canonical_nan) */
  LLVMValueRef special = canonical(e) ? LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntEQ, man13, cint(e->i32, 0), ""),
                                                           cint(e->i32, 0x7f800000u), cint(e->i32, 0x7fc00000u), "")
                                         : LLVMBuildOr(e->b, cint(e->i32, 0x7f800000u), man13, "");
  LLVMValueRef tiny = LLVMBuildFMul(e->b, LLVMBuildUIToFP(e->b, em, e->f32, ""), LLVMConstReal(e->f32, 0x1p-24), "");
  LLVMValueRef r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntUGE, em, cint(e->i32, 0x7c00), ""), special, normal, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, em, cint(e->i32, 0x400), ""),
                      LLVMBuildBitCast(e->b, tiny, e->i32, ""), r, "");
  return LLVMBuildBitCast(e->b, LLVMBuildOr(e->b, r, sign, ""), e->f32, "");
}

/* float -> f16 bits (i16), round to nearest even: NaNs quiet with the payload's top ten
 * bits, from 65520 up infinity, below 2^-14 the subnormal (shifted mantissa, rounded on
 * the bits shifted out), at or below 2^-25 a signed zero. */
static LLVMValueRef f32_to_f16_bits(cpu_emitter *e, LLVMValueRef f) {
  LLVMValueRef u = LLVMBuildBitCast(e->b, f, e->i32, "");
  LLVMValueRef sign = LLVMBuildAnd(e->b, LLVMBuildLShr(e->b, u, cint(e->i32, 16), ""), cint(e->i32, 0x8000), "");
  LLVMValueRef au = LLVMBuildAnd(e->b, u, cint(e->i32, 0x7fffffffu), "");
  LLVMValueRef top = LLVMBuildLShr(e->b, au, cint(e->i32, 13), "");
  LLVMValueRef nan = LLVMBuildOr(e->b, cint(e->i32, 0x7e00), LLVMBuildAnd(e->b, top, cint(e->i32, 0x3ff), ""), "");
  /* normal: round on bit 13, then rebias 127 -> 15 */
  LLVMValueRef odd = LLVMBuildAnd(e->b, top, cint(e->i32, 1), "");
  LLVMValueRef rn = LLVMBuildAdd(e->b, LLVMBuildAdd(e->b, au, cint(e->i32, 0xfff), ""), odd, "");
  LLVMValueRef normal = LLVMBuildLShr(e->b, LLVMBuildSub(e->b, rn, cint(e->i32, 0x38000000u), ""), cint(e->i32, 13), "");
  /* subnormal: the value in units of 2^-24 is man >> shift, shift = 126 - exponent in
   * 14..24 where it is taken (clamped so the unused lanes stay defined) */
  LLVMValueRef man = LLVMBuildOr(e->b, LLVMBuildAnd(e->b, au, cint(e->i32, 0x7fffff), ""), cint(e->i32, 0x800000), "");
  LLVMValueRef shift = LLVMBuildSub(e->b, cint(e->i32, 126), LLVMBuildLShr(e->b, au, cint(e->i32, 23), ""), "");
  LLVMValueRef big = LLVMBuildICmp(e->b, LLVMIntUGT, shift, cint(e->i32, 24), "");
  shift = LLVMBuildSelect(e->b, big, cint(e->i32, 24), shift, "");
  LLVMValueRef half = LLVMBuildLShr(e->b, man, shift, "");
  LLVMValueRef mask = LLVMBuildSub(e->b, LLVMBuildShl(e->b, cint(e->i32, 1), shift, ""), cint(e->i32, 1), "");
  LLVMValueRef rem = LLVMBuildAnd(e->b, man, mask, "");
  LLVMValueRef mid = LLVMBuildShl(e->b, cint(e->i32, 1), LLVMBuildSub(e->b, shift, cint(e->i32, 1), ""), "");
  LLVMValueRef tie_odd = LLVMBuildAnd(e->b, LLVMBuildICmp(e->b, LLVMIntEQ, rem, mid, ""),
                                      LLVMBuildTrunc(e->b, LLVMBuildAnd(e->b, half, cint(e->i32, 1), ""), e->i1, ""), "");
  LLVMValueRef up = LLVMBuildOr(e->b, LLVMBuildICmp(e->b, LLVMIntUGT, rem, mid, ""), tie_odd, "");
  LLVMValueRef sub = LLVMBuildAdd(e->b, half, LLVMBuildZExt(e->b, up, e->i32, ""), "");
  LLVMValueRef r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, au, cint(e->i32, 0x33000000u), ""),
                                   cint(e->i32, 0), sub, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, au, cint(e->i32, 0x38800000u), ""), r, normal, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntUGE, au, cint(e->i32, 0x477ff000u), ""), cint(e->i32, 0x7c00), r, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntUGT, au, cint(e->i32, 0x7f800000u), ""), nan, r, "");
  return LLVMBuildTrunc(e->b, LLVMBuildOr(e->b, r, sign, ""), e->i16, "");
}

/* f16/bf16 bits -> float (exact). */
static LLVMValueRef widen_half(cpu_emitter *e, hlo_type t, LLVMValueRef bits) {
  LLVMValueRef w = LLVMBuildZExt(e->b, bits, e->i32, "");
  if (t == HLO_F16) return f16_bits_to_f32(e, w);
  return LLVMBuildBitCast(e->b, LLVMBuildShl(e->b, w, cint(e->i32, 16), ""), e->f32, "");
}

/* An f32 rounded to bf16 and widened back, in one step: the bits narrow_half and then
 * widening (with a convert's NaN quieting) give. Finite values round to nearest even on
 * the low 16 bits, NaNs come out quieted with their payload's top bits; a third of the
 * integer work of the two steps. The NaN test is a float compare (one instruction, a
 * mask register on AVX-512) rather than the integer and-and-compare: in a bf16 kernel
 * that rounds after every op it is a ninth of the work (xla_layer_norm_bf16 1.43 ->
 * 1.30 ms). */
static LLVMValueRef round_to_bf16_f32(cpu_emitter *e, LLVMValueRef x) {
  LLVMValueRef u = LLVMBuildBitCast(e->b, x, e->i32, "");
  if (canonical(e)) {
    /* every NaN here has a zero low half and a nonzero top mantissa (canonical_nan):
     * the bias cannot carry into it, so rounding keeps it a NaN without the select */
    LLVMValueRef lsb = LLVMBuildAnd(e->b, LLVMBuildLShr(e->b, u, cint(e->i32, 16), ""), cint(e->i32, 1), "");
    LLVMValueRef rounded = LLVMBuildAdd(e->b, u, LLVMBuildAdd(e->b, cint(e->i32, 0x7fff), lsb, ""), "");
    return LLVMBuildBitCast(e->b, LLVMBuildAnd(e->b, rounded, cint(e->i32, 0xffff0000u), ""), e->f32, "");
  }
  LLVMValueRef nan = is_nan(e, x);
  LLVMValueRef lsb = LLVMBuildAnd(e->b, LLVMBuildLShr(e->b, u, cint(e->i32, 16), ""), cint(e->i32, 1), "");
  LLVMValueRef rounded = LLVMBuildAdd(e->b, u, LLVMBuildAdd(e->b, cint(e->i32, 0x7fff), lsb, ""), "");
  LLVMValueRef quieted = LLVMBuildOr(e->b, u, cint(e->i32, 0x00400000u), "");
  LLVMValueRef r = LLVMBuildAnd(e->b, LLVMBuildSelect(e->b, nan, quieted, rounded, ""), cint(e->i32, 0xffff0000u), "");
  return LLVMBuildBitCast(e->b, r, e->f32, "");
}

/* An f32 rounded to f16 and widened back, in one step: the bits f32_to_f16_bits and
 * f16_bits_to_f32 give, at a third of their work. NaNs come out quieted with the
 * payload's top ten bits, from 65520 up infinity; in f16's normal range the mantissa
 * rounds to nearest even on bit 13; below it (|x| < 2^-14) to a multiple of 2^-24, the
 * f16 subnormal spacing, which adding and subtracting 0.75 does exactly (the sum lies in
 * [0.5, 1), where the f32 spacing is 2^-24, and the float add rounds to nearest even). */
static LLVMValueRef round_to_f16_f32(cpu_emitter *e, LLVMValueRef x) {
  LLVMValueRef u = LLVMBuildBitCast(e->b, x, e->i32, "");
  LLVMValueRef sign = LLVMBuildAnd(e->b, u, cint(e->i32, 0x80000000u), "");
  LLVMValueRef au = LLVMBuildAnd(e->b, u, cint(e->i32, 0x7fffffffu), "");
  LLVMValueRef nan = LLVMBuildAnd(e->b, LLVMBuildOr(e->b, u, cint(e->i32, 0x00400000u), ""), cint(e->i32, 0xffffe000u), "");
  LLVMValueRef odd = LLVMBuildAnd(e->b, LLVMBuildLShr(e->b, au, cint(e->i32, 13), ""), cint(e->i32, 1), "");
  LLVMValueRef rn = LLVMBuildAdd(e->b, LLVMBuildAdd(e->b, au, cint(e->i32, 0xfff), ""), odd, "");
  LLVMValueRef normal = LLVMBuildAnd(e->b, rn, cint(e->i32, 0xffffe000u), "");
  LLVMValueRef mag = LLVMBuildBitCast(e->b, au, e->f32, "");
  LLVMValueRef c = LLVMConstReal(e->f32, 0.75);
  LLVMValueRef tiny = LLVMBuildBitCast(e->b, LLVMBuildFSub(e->b, LLVMBuildFAdd(e->b, mag, c, ""), c, ""), e->i32, "");
  LLVMValueRef r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, au, cint(e->i32, 0x38800000u), ""), tiny, normal, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntUGE, au, cint(e->i32, 0x477ff000u), ""), cint(e->i32, 0x7f800000u), r, "");
  r = LLVMBuildOr(e->b, r, sign, "");
  r = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntUGT, au, cint(e->i32, 0x7f800000u), ""), nan, r, "");
  return LLVMBuildBitCast(e->b, r, e->f32, "");
}

/* x rounded to the half type t and widened back (round_to_bf16_f32, round_to_f16_f32). */
static LLVMValueRef round_to_half_f32(cpu_emitter *e, hlo_type t, LLVMValueRef x) {
  return t == HLO_F16 ? round_to_f16_f32(e, x) : round_to_bf16_f32(e, x);
}

/* float -> f16/bf16 bits, round to nearest even (bf16 inline: round_to_bf16_f32's high
 * half). */
static LLVMValueRef narrow_half(cpu_emitter *e, hlo_type t, LLVMValueRef f) {
  if (t == HLO_F16) return f32_to_f16_bits(e, f);
  LLVMValueRef u = LLVMBuildBitCast(e->b, round_to_bf16_f32(e, f), e->i32, "");
  return LLVMBuildTrunc(e->b, LLVMBuildLShr(e->b, u, cint(e->i32, 16), ""), e->i16, "");
}

static LLVMValueRef quiet(cpu_emitter *e, LLVMValueRef x) {
  bool f32 = LLVMTypeOf(x) == e->f32;
  LLVMTypeRef it = f32 ? e->i32 : e->i64;
  LLVMValueRef bit = f32 ? cint(e->i32, 0x00400000u) : cint(e->i64, 0x0008000000000000ull);
  return LLVMBuildBitCast(e->b, LLVMBuildOr(e->b, LLVMBuildBitCast(e->b, x, it, ""), bit, ""), LLVMTypeOf(x), "");
}

/* x with a signalling NaN quieted, as a conversion gives it (a payload matter only). */
static LLVMValueRef quiet_if_nan(cpu_emitter *e, LLVMValueRef x) {
  if (e->payload_free) return x;
  return LLVMBuildSelect(e->b, is_nan(e, x), quiet(e, x), x, "");
}

/* eval_nan_pick: a NaN result carries the first NaN operand, quieted. For + - * / a
 * NaN operand always makes the result NaN, so "first NaN operand, else r" is the same
 * function without testing r, which keeps the test off an accumulator's critical path
 * (fadd then select, instead of fadd, compare, select). Only a NaN `a` needs its own
 * select: the hardware (x86's SSE/AVX, as AArch64's FP unit) answers an op with exactly
 * one NaN operand with that NaN quieted, in either operand position, so when b alone
 * is NaN, r already is quiet(b) -- half the code of every float add, subtract, multiply
 * and divide, which a long elementwise chain's compile time and a bf16 kernel's
 * instruction count feel. LLVM keeps that for runtime values; an op with a constant
 * operand it may rewrite (fsub -0.0, x and fmul x, -1.0 into fneg x, which flips a
 * NaN's sign instead of quieting it), so with a constant both tests stay. */
static LLVMValueRef nan_pick(cpu_emitter *e, LLVMValueRef r, LLVMValueRef a, LLVMValueRef b) {
  if (e->payload_free) return r;
  if (LLVMIsConstant(a) || LLVMIsConstant(b)) r = LLVMBuildSelect(e->b, is_nan(e, b), quiet(e, b), r, "");
  return LLVMBuildSelect(e->b, is_nan(e, a), quiet(e, a), r, "");
}

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static LLVMValueRef intrinsic1(cpu_emitter *e, const char *base, LLVMValueRef x) {
  char name[64];
  snprintf(name, sizeof name, "llvm.%s.%s", base, LLVMTypeOf(x) == e->f32 ? "f32" : "f64");
  return call1(e, name, LLVMTypeOf(x), x);
}

static LLVMValueRef libm1(cpu_emitter *e, const char *base, LLVMValueRef x) {
  char name[32];
  bool f32 = LLVMTypeOf(x) == e->f32;
  snprintf(name, sizeof name, "%s%s", base, f32 ? "f" : "");
  return call1(e, name, LLVMTypeOf(x), x);
}

static LLVMValueRef libm2(cpu_emitter *e, const char *base, LLVMValueRef a, LLVMValueRef b) {
  char name[32];
  bool f32 = LLVMTypeOf(a) == e->f32;
  snprintf(name, sizeof name, "%s%s", base, f32 ? "f" : "");
  return call2(e, name, LLVMTypeOf(a), a, b);
}

static LLVMValueRef float_max(cpu_emitter *e, LLVMValueRef a, LLVMValueRef b, bool is_max) {
  LLVMValueRef lt = is_max ? LLVMBuildFCmp(e->b, LLVMRealOLT, a, b, "") : LLVMBuildFCmp(e->b, LLVMRealOLT, b, a, "");
  LLVMValueRef r = LLVMBuildSelect(e->b, lt, b, a, "");
  r = LLVMBuildSelect(e->b, is_nan(e, b), b, r, "");
  return LLVMBuildSelect(e->b, is_nan(e, a), a, r, "");
}

static LLVMValueRef math_f32(cpu_emitter *e, cpu_math_fn fn, LLVMValueRef x) {
  return cpu_math_f32(e->m, e->b, fn, x, e->outline_math);
}

static LLVMValueRef exp_any(cpu_emitter *e, LLVMValueRef x) {
  return LLVMTypeOf(x) == e->f32 ? math_f32(e, CPU_MATH_EXP, x) : libm1(e, "exp", x);
}

/* Float unary/binary math in float or double (the caller widens halves). */
static LLVMValueRef float_op(cpu_emitter *e, hlo_opcode op, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  switch (op) {
    case HLO_OP_COPY: return a;
    case HLO_OP_ABS: return intrinsic1(e, "fabs", a);
    case HLO_OP_CBRT: return libm1(e, "cbrt", a);
    case HLO_OP_CEIL: return intrinsic1(e, "ceil", a);
    case HLO_OP_COSINE: return libm1(e, "cos", a);
    case HLO_OP_ERF: return t == e->f32 ? math_f32(e, CPU_MATH_ERF, a) : libm1(e, "erf", a);
    case HLO_OP_EXP: return exp_any(e, a);
    case HLO_OP_EXPM1: return libm1(e, "expm1", a);
    case HLO_OP_FLOOR: return intrinsic1(e, "floor", a);
    case HLO_OP_LOG: return libm1(e, "log", a);
    case HLO_OP_LOG1P: return libm1(e, "log1p", a);
    case HLO_OP_LOGISTIC: {
      LLVMValueRef ex = exp_any(e, LLVMBuildFNeg(e->b, a, ""));
      return LLVMBuildFDiv(e->b, fconst(t, 1), LLVMBuildFAdd(e->b, fconst(t, 1), ex, ""), "");
    }
    case HLO_OP_NEGATE: return LLVMBuildFNeg(e->b, a, "");
    case HLO_OP_ROUND_NEAREST_AFZ: return intrinsic1(e, "round", a);
    case HLO_OP_ROUND_NEAREST_EVEN: return intrinsic1(e, "nearbyint", a);
    case HLO_OP_RSQRT: return LLVMBuildFDiv(e->b, fconst(t, 1), intrinsic1(e, "sqrt", a), "");
    case HLO_OP_SIGN: {
      LLVMValueRef nz = LLVMBuildUIToFP(e->b, LLVMBuildFCmp(e->b, LLVMRealUNE, a, fconst(t, 0), ""), t, "");
      char name[32];
      snprintf(name, sizeof name, "llvm.copysign.%s", t == e->f32 ? "f32" : "f64");
      LLVMValueRef s = call2(e, name, t, nz, a);
      return LLVMBuildSelect(e->b, is_nan(e, a), a, s, "");
    }
    case HLO_OP_SINE: return libm1(e, "sin", a);
    case HLO_OP_SQRT: return intrinsic1(e, "sqrt", a);
    case HLO_OP_TAN: return libm1(e, "tan", a);
    case HLO_OP_TANH: return t == e->f32 ? math_f32(e, CPU_MATH_TANH, a) : libm1(e, "tanh", a);
    case HLO_OP_ADD: return nan_pick(e, LLVMBuildFAdd(e->b, a, b, ""), a, b);
    case HLO_OP_SUBTRACT: return nan_pick(e, LLVMBuildFSub(e->b, a, b, ""), a, b);
    case HLO_OP_MULTIPLY: return nan_pick(e, LLVMBuildFMul(e->b, a, b, ""), a, b);
    case HLO_OP_DIVIDE: return nan_pick(e, LLVMBuildFDiv(e->b, a, b, ""), a, b);
    case HLO_OP_MAXIMUM: return float_max(e, a, b, true);
    case HLO_OP_MINIMUM: return float_max(e, a, b, false);
    case HLO_OP_POWER: return libm2(e, "pow", a, b);
    case HLO_OP_REMAINDER: return libm2(e, "fmod", a, b);
    case HLO_OP_ATAN2: return libm2(e, "atan2", a, b);
    default: return NULL;
  }
}

/* ------------------------------------------------------------- integers --------- */

static LLVMValueRef int_op(cpu_emitter *e, hlo_type ty, hlo_opcode op, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  bool sg = hlo_type_is_signed_int(ty);
  unsigned bits = (unsigned)hlo_type_size(ty) * 8;
  LLVMValueRef zero = cint(t, 0), ones = LLVMConstAllOnes(t);
  switch (op) {
    case HLO_OP_COPY: return a;
    case HLO_OP_ABS:
      if (!sg) return a;
      return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, a, zero, ""), LLVMBuildSub(e->b, zero, a, ""), a, "");
    case HLO_OP_NEGATE: return LLVMBuildSub(e->b, zero, a, "");
    case HLO_OP_NOT: return LLVMBuildNot(e->b, a, "");
    case HLO_OP_SIGN: {
      LLVMValueRef nz = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, a, zero, ""), t, "");
      if (!sg) return nz;
      return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, a, zero, ""), ones, nz, "");
    }
    case HLO_OP_POPCNT: {
      char name[32];
      snprintf(name, sizeof name, "llvm.ctpop.i%u", bits);
      return call1(e, name, t, a);
    }
    case HLO_OP_CLZ: {
      char name[32];
      snprintf(name, sizeof name, "llvm.ctlz.i%u", bits);
      return call2(e, name, t, a, LLVMConstInt(e->i1, 0, 0));
    }
    case HLO_OP_ADD: return LLVMBuildAdd(e->b, a, b, "");
    case HLO_OP_SUBTRACT: return LLVMBuildSub(e->b, a, b, "");
    case HLO_OP_MULTIPLY: return LLVMBuildMul(e->b, a, b, "");
    case HLO_OP_DIVIDE:
    case HLO_OP_REMAINDER: {
      bool div = op == HLO_OP_DIVIDE;
      LLVMValueRef bz = LLVMBuildICmp(e->b, LLVMIntEQ, b, zero, "");
      LLVMValueRef ovf = LLVMConstInt(e->i1, 0, 0);
      if (sg) {
        LLVMValueRef min = LLVMConstShl(cint(t, 1), cint(t, bits - 1));
        ovf = LLVMBuildAnd(e->b, LLVMBuildICmp(e->b, LLVMIntEQ, a, min, ""),
                           LLVMBuildICmp(e->b, LLVMIntEQ, b, ones, ""), "");
      }
      LLVMValueRef safe = LLVMBuildSelect(e->b, LLVMBuildOr(e->b, bz, ovf, ""), cint(t, 1), b, "");
      LLVMValueRef q = div ? (sg ? LLVMBuildSDiv(e->b, a, safe, "") : LLVMBuildUDiv(e->b, a, safe, ""))
                           : (sg ? LLVMBuildSRem(e->b, a, safe, "") : LLVMBuildURem(e->b, a, safe, ""));
      q = LLVMBuildSelect(e->b, ovf, div ? a : zero, q, "");
      return LLVMBuildSelect(e->b, bz, div ? ones : a, q, "");
    }
    case HLO_OP_POWER: {
      LLVMValueRef p = call2(e, "kiln_cpu_ipow", e->i64, bits == 64 ? a : LLVMBuildZExt(e->b, a, e->i64, ""),
                             bits == 64 ? b : LLVMBuildZExt(e->b, b, e->i64, ""));
      if (bits < 64) p = LLVMBuildTrunc(e->b, p, t, "");
      LLVMValueRef one = LLVMBuildOr(e->b, LLVMBuildICmp(e->b, LLVMIntEQ, a, cint(t, 1), ""),
                                     LLVMBuildICmp(e->b, LLVMIntEQ, b, zero, ""), "");
      if (sg) p = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, b, zero, ""), zero, p, "");
      return LLVMBuildSelect(e->b, one, cint(t, 1), p, "");
    }
    case HLO_OP_MAXIMUM:
      return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, sg ? LLVMIntSLT : LLVMIntULT, a, b, ""), b, a, "");
    case HLO_OP_MINIMUM:
      return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, sg ? LLVMIntSLT : LLVMIntULT, b, a, ""), b, a, "");
    case HLO_OP_AND: return LLVMBuildAnd(e->b, a, b, "");
    case HLO_OP_OR: return LLVMBuildOr(e->b, a, b, "");
    case HLO_OP_XOR: return LLVMBuildXor(e->b, a, b, "");
    case HLO_OP_SHIFT_LEFT:
    case HLO_OP_SHIFT_RIGHT_LOGICAL:
    case HLO_OP_SHIFT_RIGHT_ARITHMETIC: {
      LLVMValueRef big = LLVMBuildICmp(e->b, LLVMIntUGE, b, cint(t, bits), "");
      LLVMValueRef amount = LLVMBuildSelect(e->b, big, cint(t, bits - 1), b, "");
      if (op == HLO_OP_SHIFT_RIGHT_ARITHMETIC) return LLVMBuildAShr(e->b, a, amount, "");
      LLVMValueRef r = op == HLO_OP_SHIFT_LEFT ? LLVMBuildShl(e->b, a, amount, "") : LLVMBuildLShr(e->b, a, amount, "");
      return LLVMBuildSelect(e->b, big, zero, r, "");
    }
    default: return NULL;
  }
}

/* pred as C++ bool: arithmetic promotes to int and converts back with != 0. */
static LLVMValueRef pred_op(cpu_emitter *e, hlo_opcode op, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef zero = cint(e->i8, 0), one = cint(e->i8, 1);
  LLVMValueRef pa = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, a, zero, ""), e->i8, "");
  LLVMValueRef pb = b ? LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, b, zero, ""), e->i8, "") : NULL;
  switch (op) {
    case HLO_OP_COPY: case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_SIGN: return pa;
    case HLO_OP_NOT: return LLVMBuildXor(e->b, pa, one, "");
    case HLO_OP_AND: case HLO_OP_MINIMUM: case HLO_OP_MULTIPLY: return LLVMBuildAnd(e->b, pa, pb, "");
    case HLO_OP_OR: case HLO_OP_MAXIMUM: case HLO_OP_ADD: return LLVMBuildOr(e->b, pa, pb, "");
    case HLO_OP_XOR: case HLO_OP_SUBTRACT: return LLVMBuildXor(e->b, pa, pb, "");
    case HLO_OP_DIVIDE: return LLVMBuildSelect(e->b, LLVMBuildTrunc(e->b, pb, e->i1, ""), pa, one, "");
    case HLO_OP_REMAINDER: return LLVMBuildSelect(e->b, LLVMBuildTrunc(e->b, pb, e->i1, ""), zero, pa, "");
    case HLO_OP_POWER: return LLVMBuildOr(e->b, pa, LLVMBuildXor(e->b, pb, one, ""), "");
    default: return NULL;
  }
}

/* ------------------------------------------------------------- convert ---------- */

typedef enum carrier { CARRY_U64, CARRY_S64, CARRY_F64 } carrier;

/* Widens to the evaluator's carrier: uint64 (pred, unsigned), int64 (signed), double. */
static LLVMValueRef to_carrier(cpu_emitter *e, hlo_type from, LLVMValueRef v, carrier *c) {
  minifloat_format mf;
  if (hlo_type_is_float(from)) {
    *c = CARRY_F64;
    if (is_half(from)) v = widen_half(e, from, v);
    if (hlo_type_minifloat(from, &mf))
      v = call2(e, "kiln_cpu_minifloat_to_f32", e->f32, cint(e->i32, mf), LLVMBuildZExt(e->b, v, e->i32, ""));
    return from == HLO_F64 ? v : LLVMBuildFPExt(e->b, v, e->f64, "");
  }
  if (hlo_type_is_signed_int(from)) {
    *c = CARRY_S64;
    return from == HLO_S64 ? v : LLVMBuildSExt(e->b, v, e->i64, "");
  }
  *c = CARRY_U64;
  if (from == HLO_PRED) v = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, v, cint(e->i8, 0), ""), e->i8, "");
  return from == HLO_U64 ? v : LLVMBuildZExt(e->b, v, e->i64, "");
}

/* A 4- or 2-bit integer from its carrier, in kiln's byte (s4/s2 sign-extended): integers
 * wrap to the low bits, floats saturate to the range (NaN -> 0), as the evaluator does. */
static LLVMValueRef subbyte_int_from_carrier(cpu_emitter *e, hlo_type to, carrier c, LLVMValueRef v) {
  bool sgn = hlo_type_is_signed_int(to);
  int bits = hlo_type_bit_width(to);
  uint64_t mask = (1ull << bits) - 1, half = 1ull << (bits - 1);
  if (c == CARRY_F64) {
    v = call1(e, sgn ? "llvm.fptosi.sat.i8.f64" : "llvm.fptoui.sat.i8.f64", e->i8, v);
    LLVMValueRef lo = cint(e->i8, sgn ? (uint64_t)0 - half : 0), hi = cint(e->i8, sgn ? half - 1 : mask);
    LLVMIntPredicate lt = sgn ? LLVMIntSLT : LLVMIntULT, gt = sgn ? LLVMIntSGT : LLVMIntUGT;
    v = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, v, lo, ""), lo, v, "");
    return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, gt, v, hi, ""), hi, v, "");
  }
  v = LLVMBuildAnd(e->b, LLVMBuildTrunc(e->b, v, e->i8, ""), cint(e->i8, mask), "");
  return sgn ? LLVMBuildSub(e->b, LLVMBuildXor(e->b, v, cint(e->i8, half), ""), cint(e->i8, half), "") : v;
}

static LLVMValueRef from_carrier(cpu_emitter *e, hlo_type to, carrier c, LLVMValueRef v) {
  LLVMTypeRef t = cpu_llvm_type(e->c, to);
  minifloat_format mf;
  if (to == HLO_S4 || to == HLO_U4 || to == HLO_S2 || to == HLO_U2) return subbyte_int_from_carrier(e, to, c, v);
  if (hlo_type_minifloat(to, &mf)) {
    const char *fn = c == CARRY_F64 ? "kiln_cpu_f64_to_minifloat" : c == CARRY_S64 ? "kiln_cpu_s64_to_minifloat"
                                                                                   : "kiln_cpu_u64_to_minifloat";
    return LLVMBuildTrunc(e->b, call2(e, fn, e->i32, cint(e->i32, mf), v), e->i8, "");
  }
  if (to == HLO_PRED) {
    LLVMValueRef nz = c == CARRY_F64 ? LLVMBuildFCmp(e->b, LLVMRealUNE, v, fconst(e->f64, 0), "")
                                     : LLVMBuildICmp(e->b, LLVMIntNE, v, cint(e->i64, 0), "");
    return LLVMBuildZExt(e->b, nz, e->i8, "");
  }
  if (hlo_type_is_int(to)) {
    if (c != CARRY_F64) return to == HLO_S64 || to == HLO_U64 ? v : LLVMBuildTrunc(e->b, v, t, "");
    char name[48];
    unsigned bits = (unsigned)hlo_type_size(to) * 8;
    snprintf(name, sizeof name, "llvm.%s.sat.i%u.f64", hlo_type_is_signed_int(to) ? "fptosi" : "fptoui", bits);
    return call1(e, name, t, v);
  }
  if (is_half(to)) {
    const char *fn;
    bool f16 = to == HLO_F16;
    if (c == CARRY_F64) fn = f16 ? "kiln_cpu_f64_to_f16" : "kiln_cpu_f64_to_bf16";
    else if (c == CARRY_S64) fn = f16 ? "kiln_cpu_s64_to_f16" : "kiln_cpu_s64_to_bf16";
    else fn = f16 ? "kiln_cpu_u64_to_f16" : "kiln_cpu_u64_to_bf16";
    return LLVMBuildTrunc(e->b, call1(e, fn, e->i32, v), e->i16, "");
  }
  if (c == CARRY_F64) return to == HLO_F64 ? v : LLVMBuildFPTrunc(e->b, v, t, "");
  return c == CARRY_S64 ? LLVMBuildSIToFP(e->b, v, t, "") : LLVMBuildUIToFP(e->b, v, t, "");
}

static LLVMValueRef convert_value(cpu_emitter *e, hlo_type from, hlo_type to, LLVMValueRef v) {
  if (from == to) return v;
  /* Direct paths that give the same bits as the carrier route, in fewer instructions. */
  if (from == HLO_F32 && to == HLO_F64) return LLVMBuildFPExt(e->b, v, e->f64, "");
  if (from == HLO_F64 && to == HLO_F32) return LLVMBuildFPTrunc(e->b, v, e->f32, "");
  /* f32 -> bf16 inline: the carrier route (exact fpext, then a call rounding the double)
   * gives the same bits, NaN payloads included, but kept every bf16-producing loop
   * scalar: a [1,4096,1024] convert took 10.4 ms. */
  if (from == HLO_F32 && (to == HLO_F16 || to == HLO_BF16)) return narrow_half(e, to, v);
  if (is_half(from) && to == HLO_F32) {
    /* a signalling NaN comes out quiet, as the evaluator's conversion through double
     * (and XLA:CPU's fpext) makes it */
    return quiet_if_nan(e, widen_half(e, from, v));
  }
  /* An integer of up to 32 bits to f32/f64: converting the value itself rounds exactly
   * as converting its 64-bit carrier does, and only this form vectorizes well (a vector
   * i64 -> float conversion is scalarized without AVX-512DQ: a dequantizing u8 -> s32 ->
   * f32 chain ran at 0.8 ns an element). */
  if ((from == HLO_S8 || from == HLO_S16 || from == HLO_S32 || from == HLO_U8 || from == HLO_U16 ||
       from == HLO_U32) && (to == HLO_F32 || to == HLO_F64)) {
    LLVMTypeRef ft = to == HLO_F32 ? e->f32 : e->f64;
    return hlo_type_is_signed_int(from) ? LLVMBuildSIToFP(e->b, v, ft, "") : LLVMBuildUIToFP(e->b, v, ft, "");
  }
  /* f32/f64 to an 8- or 16-bit integer: saturate in the float type (both bounds are
   * exact there), truncate, NaN to 0 -- the carrier route's llvm.fpto*i.sat.*.f64 result,
   * but in instructions the loop vectorizer takes (the saturating call kept a
   * requantization's whole loop scalar: 2.4 vs 0.4 ms on [1,56,56,256]). */
  if ((from == HLO_F32 || from == HLO_F64) && hlo_type_is_int(to) && hlo_type_size(to) <= 2) {
    LLVMTypeRef ft = from == HLO_F32 ? e->f32 : e->f64;
    bool sgn = hlo_type_is_signed_int(to);
    int bits = hlo_type_bit_width(to); /* s4/u4 (s2/u2) saturate to their 4-bit (2-bit) range */
    double lo = sgn ? -(double)(1ull << (bits - 1)) : 0.0;
    double hi = sgn ? (double)((1ull << (bits - 1)) - 1) : (double)((1ull << bits) - 1);
    LLVMValueRef nan = LLVMBuildFCmp(e->b, LLVMRealUNO, v, v, "");
    LLVMValueRef x = LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, v, fconst(ft, lo), ""), fconst(ft, lo), v, "");
    x = LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOGT, x, fconst(ft, hi), ""), fconst(ft, hi), x, "");
    x = LLVMBuildSelect(e->b, nan, fconst(ft, 0.0), x, "");
    LLVMValueRef i = LLVMBuildFPToSI(e->b, x, e->i32, "");
    return LLVMBuildTrunc(e->b, i, cpu_llvm_type(e->c, to), "");
  }
  carrier c;
  LLVMValueRef w = to_carrier(e, from, v, &c);
  return from_carrier(e, to, c, w);
}

/* ------------------------------------------------------------- reduce-precision - */

/* reduce-precision on an f32 or f64 value, the evaluator's bit recipe
 * (eval_reduce_precision_f32/_f64) with the formats' constants folded in: round the
 * mantissa to nearest even at mantissa_bits (adding half an ulp of the reduced format
 * less one, plus its lsb, then masking; a carry into the exponent is the correct
 * round-up, into inf included), then exponents above the reduced range become inf and
 * those at or below its smallest normal exponent become a signed zero (reduced-format
 * subnormals flush). A NaN input is returned as it came in, or as +inf when there are
 * no mantissa bits to hold a NaN. Straight-line integer work: it vectorizes. */
static LLVMValueRef reduce_precision(cpu_emitter *e, LLVMValueRef v, int64_t exponent_bits, int64_t mantissa_bits) {
  bool f32 = LLVMTypeOf(v) == e->f32;
  LLVMTypeRef it = f32 ? e->i32 : e->i64;
  const int mbits = f32 ? 23 : 52, ebits = f32 ? 8 : 11;
  LLVMValueRef u = LLVMBuildBitCast(e->b, v, it, "");
  if (mantissa_bits < mbits) {
    unsigned shift = (unsigned)(mbits - mantissa_bits);
    uint64_t last_bit = 1ull << shift;
    LLVMValueRef lsb = LLVMBuildAnd(e->b, LLVMBuildLShr(e->b, u, cint(it, shift), ""), cint(it, 1), "");
    LLVMValueRef bias = LLVMBuildAdd(e->b, cint(it, (last_bit >> 1) - 1), lsb, "");
    u = LLVMBuildAnd(e->b, LLVMBuildAdd(e->b, u, bias, ""), cint(it, ~(last_bit - 1)), "");
  }
  if (exponent_bits < ebits) {
    uint64_t sign_mask = 1ull << (mbits + ebits);
    uint64_t exp_mask = ((1ull << ebits) - 1) << mbits;
    uint64_t src_bias = (1ull << (ebits - 1)) - 1, reduced_bias = (1ull << (exponent_bits - 1)) - 1;
    LLVMValueRef exponent = LLVMBuildAnd(e->b, u, cint(it, exp_mask), "");
    LLVMValueRef sign = LLVMBuildAnd(e->b, u, cint(it, sign_mask), "");
    /* disjoint conditions (reduced_bias >= 0), so the order of the selects is free */
    LLVMValueRef over = LLVMBuildICmp(e->b, LLVMIntUGT, exponent, cint(it, (src_bias + reduced_bias) << mbits), "");
    LLVMValueRef under = LLVMBuildICmp(e->b, LLVMIntULE, exponent, cint(it, (src_bias - reduced_bias) << mbits), "");
    u = LLVMBuildSelect(e->b, under, sign, u, "");
    u = LLVMBuildSelect(e->b, over, LLVMBuildOr(e->b, sign, cint(it, exp_mask), ""), u, "");
  }
  LLVMValueRef r = LLVMBuildBitCast(e->b, u, LLVMTypeOf(v), "");
  LLVMValueRef nan_result = mantissa_bits > 0 ? v : fconst(LLVMTypeOf(v), 1.0 / 0.0);
  return LLVMBuildSelect(e->b, is_nan(e, v), nan_result, r, "");
}

/* ------------------------------------------------------------- compare ---------- */

static LLVMValueRef total_key(cpu_emitter *e, LLVMValueRef bits) {
  LLVMTypeRef t = LLVMTypeOf(bits);
  unsigned w = LLVMGetIntTypeWidth(t);
  LLVMValueRef sign = LLVMConstShl(cint(t, 1), cint(t, w - 1));
  LLVMValueRef neg = LLVMBuildICmp(e->b, LLVMIntNE, LLVMBuildAnd(e->b, bits, sign, ""), cint(t, 0), "");
  return LLVMBuildSelect(e->b, neg, LLVMBuildNot(e->b, bits, ""), LLVMBuildOr(e->b, bits, sign, ""), "");
}

static LLVMValueRef compare_values(cpu_emitter *e, const hlo_instr *ins, hlo_type t, LLVMValueRef a, LLVMValueRef b) {
  static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  int d = (int)ins->direction;
  LLVMValueRef r;
  if (hlo_type_is_float(t) && ins->compare_type == HLO_CMP_TOTALORDER) {
    if (!is_half(t)) {
      LLVMTypeRef it = t == HLO_F32 ? e->i32 : e->i64;
      a = LLVMBuildBitCast(e->b, a, it, "");
      b = LLVMBuildBitCast(e->b, b, it, "");
    }
    r = LLVMBuildICmp(e->b, up[d], total_key(e, a), total_key(e, b), "");
  } else if (hlo_type_is_float(t)) {
    if (is_half(t)) {
      a = widen_half(e, t, a);
      b = widen_half(e, t, b);
    }
    r = LLVMBuildFCmp(e->b, fp[d], a, b, "");
  } else if (t == HLO_PRED) {
    a = LLVMBuildICmp(e->b, LLVMIntNE, a, cint(e->i8, 0), "");
    b = LLVMBuildICmp(e->b, LLVMIntNE, b, cint(e->i8, 0), "");
    r = LLVMBuildICmp(e->b, up[d], a, b, "");
  } else {
    r = LLVMBuildICmp(e->b, hlo_type_is_signed_int(t) ? sp[d] : up[d], a, b, "");
  }
  return LLVMBuildZExt(e->b, r, e->i8, "");
}

static LLVMValueRef clamp_values(cpu_emitter *e, hlo_type t, LLVMValueRef lo, LLVMValueRef x, LLVMValueRef hi) {
  if (hlo_type_is_float(t)) {
    /* Compare in float, pick by storage bits (halves then never round-trip). */
    LLVMValueRef fl = is_half(t) ? widen_half(e, t, lo) : lo;
    LLVMValueRef fx = is_half(t) ? widen_half(e, t, x) : x;
    LLVMValueRef fh = is_half(t) ? widen_half(e, t, hi) : hi;
    LLVMValueRef xlt = LLVMBuildFCmp(e->b, LLVMRealOLT, fx, fl, "");
    LLVMValueRef m = LLVMBuildSelect(e->b, xlt, lo, x, "");
    LLVMValueRef fm = LLVMBuildSelect(e->b, xlt, fl, fx, "");
    LLVMValueRef r = LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, fm, fh, ""), m, hi, "");
    r = LLVMBuildSelect(e->b, is_nan(e, fh), hi, r, "");
    r = LLVMBuildSelect(e->b, is_nan(e, fx), x, r, "");
    return LLVMBuildSelect(e->b, is_nan(e, fl), lo, r, "");
  }
  bool sg = hlo_type_is_signed_int(t);
  if (t == HLO_PRED) {
    lo = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, lo, cint(e->i8, 0), ""), e->i8, "");
    x = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, x, cint(e->i8, 0), ""), e->i8, "");
    hi = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, hi, cint(e->i8, 0), ""), e->i8, "");
  }
  LLVMIntPredicate lt = sg ? LLVMIntSLT : LLVMIntULT;
  LLVMValueRef m = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, x, lo, ""), lo, x, "");
  return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, m, hi, ""), m, hi, "");
}

/* ------------------------------------------------------------- emission --------- */

static LLVMValueRef emit(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix);

static cpu_index *scalar_index(cpu_emitter *e) { return new_index(e, 0, false); }

/* Operand k of ins at ix: a buffer load when ins is the (unfused) kernel root. */
static LLVMValueRef operand_at(cpu_emitter *e, const hlo_instr *ins, int k, const cpu_index *ix) {
  if (ins == e->root && !e->fused) return load_buffer(e, e->n_outputs + k, &ins->operands[k]->shape, ix);
  return emit(e, ins->operands[k], ix);
}

/* Elementwise operands: rank-0 operands broadcast (select/clamp's scalar forms). */
static LLVMValueRef ew_operand(cpu_emitter *e, const hlo_instr *ins, int k, const cpu_index *ix) {
  if (ins->operands[k]->shape.rank == 0 && ix->rank != 0) return operand_at(e, ins, k, scalar_index(e));
  return operand_at(e, ins, k, ix);
}

static LLVMValueRef scalar_constant(cpu_emitter *e, const hlo_literal *l, int64_t i) {
  hlo_type t = l->shape.type;
  LLVMTypeRef lt = cpu_llvm_type(e->c, t);
  size_t sz = hlo_type_size(t);
  uint64_t bits = 0;
  memcpy(&bits, (const char *)l->data + (size_t)i * sz, sz); /* little-endian host */
  /* Floats from their bits, so NaN payloads survive (a payload-free pass's NaN is the
   * canonical one, see canonical_nan). */
  bool f32_nan = t == HLO_F32 && (bits & 0x7fffffffu) > 0x7f800000u;
  bool f64_nan = t == HLO_F64 && (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
  if (canonical(e) && (f32_nan || f64_nan)) return LLVMConstReal(lt, NAN);
  if (t == HLO_F32) return LLVMConstBitCast(cint(e->i32, bits), lt);
  if (t == HLO_F64) return LLVMConstBitCast(cint(e->i64, bits), lt);
  return cint(lt, bits);
}

static LLVMValueRef emit_constant(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  hlo_literal *l = ins->literal;
  if (l->n == 1) return scalar_constant(e, l, 0);
  /* The kernel reads the data at this address, so it must live with the executable,
   * which owns the module: a constant borrowed from the caller's module (compiles
   * borrow them, cpu_compiler.c) gets its own copy first, else the kernel would read
   * memory the caller frees once the compile returns. */
  literal_own(l);
  LLVMTypeRef et = cpu_llvm_type(e->c, l->shape.type);
  LLVMValueRef base = LLVMConstIntToPtr(cint(e->i64, (uint64_t)(uintptr_t)l->data), LLVMPointerType(et, 0));
  cpu_jit_mark_process_specific(e->m); /* the address is this process's: never persisted */
  return load_at(e, base, l->shape.type, linearize(e, &ins->shape, ix));
}

/* Begins `if (cond) { ... } else { ... }` producing one value; returns the blocks. */
typedef struct branch {
  LLVMBasicBlockRef then_bb, else_bb, merge_bb;
} branch;

static void branch_begin(cpu_emitter *e, branch *br, LLVMValueRef cond) {
  br->then_bb = LLVMAppendBasicBlockInContext(e->c, e->fn, "then");
  br->else_bb = LLVMAppendBasicBlockInContext(e->c, e->fn, "else");
  br->merge_bb = LLVMAppendBasicBlockInContext(e->c, e->fn, "merge");
  LLVMBuildCondBr(e->b, cond, br->then_bb, br->else_bb);
  LLVMPositionBuilderAtEnd(e->b, br->then_bb);
}

static LLVMValueRef phi2(cpu_emitter *e, LLVMValueRef a, LLVMBasicBlockRef ab, LLVMValueRef b, LLVMBasicBlockRef bb) {
  LLVMValueRef p = LLVMBuildPhi(e->b, LLVMTypeOf(a), "");
  LLVMValueRef vals[2] = {a, b};
  LLVMBasicBlockRef blocks[2] = {ab, bb};
  LLVMAddIncoming(p, vals, blocks, 2);
  return p;
}

static LLVMValueRef emit_pad(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *os = &ins->operands[0]->shape;
  cpu_index *oix = new_index(e, os->rank, false);
  LLVMValueRef ok = LLVMConstInt(e->i1, 1, 0);
  bool no_config = ins->pad_lo.n == 0; /* as the evaluator: no padding attribute pads nothing */
  for (int d = 0; d < os->rank; d++) {
    int64_t lo = no_config ? 0 : ins->pad_lo.v[d], step = no_config ? 1 : ins->pad_interior.v[d] + 1;
    LLVMValueRef p = LLVMBuildSub(e->b, ix->v[d], c64(e, lo), "");
    LLVMValueRef in = LLVMBuildAnd(e->b, LLVMBuildICmp(e->b, LLVMIntSGE, p, c64(e, 0), ""),
                                   LLVMBuildICmp(e->b, LLVMIntSLE, p, c64(e, (os->dims[d] - 1) * step), ""), "");
    if (step > 1) {
      in = LLVMBuildAnd(e->b, in, LLVMBuildICmp(e->b, LLVMIntEQ, LLVMBuildSRem(e->b, p, c64(e, step), ""), c64(e, 0), ""), "");
      p = LLVMBuildSDiv(e->b, p, c64(e, step), "");
    }
    ok = LLVMBuildAnd(e->b, ok, in, "");
    oix->v[d] = p;
  }
  if (shape_elements(os) == 0) return operand_at(e, ins, 1, scalar_index(e));
  branch br;
  branch_begin(e, &br, ok);
  LLVMValueRef a = operand_at(e, ins, 0, oix);
  LLVMBasicBlockRef a_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, br.merge_bb);
  LLVMPositionBuilderAtEnd(e->b, br.else_bb);
  LLVMValueRef b = operand_at(e, ins, 1, scalar_index(e));
  LLVMBasicBlockRef b_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, br.merge_bb);
  LLVMPositionBuilderAtEnd(e->b, br.merge_bb);
  return phi2(e, a, a_end, b, b_end);
}

static LLVMValueRef emit_concatenate(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  int dim = (int)ins->dimensions.v[0];
  LLVMBasicBlockRef merge = LLVMAppendBasicBlockInContext(e->c, e->fn, "concat.merge");
  LLVMValueRef *vals = calloc((size_t)ins->n_operands, sizeof *vals);
  LLVMBasicBlockRef *blocks = calloc((size_t)ins->n_operands, sizeof *blocks);
  if (!vals || !blocks) abort();
  int n = 0;
  int64_t offset = 0;
  for (int k = 0; k < ins->n_operands; k++) {
    int64_t size = ins->operands[k]->shape.dims[dim];
    if (size == 0) continue;
    bool last = offset + size == ins->shape.dims[dim];
    LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(e->c, e->fn, "concat.take");
    LLVMBasicBlockRef next = last ? NULL : LLVMAppendBasicBlockInContext(e->c, e->fn, "concat.next");
    if (last)
      LLVMBuildBr(e->b, take);
    else
      LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, ix->v[dim], c64(e, offset + size), ""), take, next);
    LLVMPositionBuilderAtEnd(e->b, take);
    cpu_index *oix = new_index(e, ix->rank, false);
    memcpy(oix->v, ix->v, sizeof oix->v);
    oix->v[dim] = LLVMBuildSub(e->b, ix->v[dim], c64(e, offset), "");
    vals[n] = operand_at(e, ins, k, oix);
    blocks[n++] = LLVMGetInsertBlock(e->b);
    LLVMBuildBr(e->b, merge);
    if (next) LLVMPositionBuilderAtEnd(e->b, next);
    offset += size;
    if (last) break;
  }
  LLVMPositionBuilderAtEnd(e->b, merge);
  LLVMValueRef p = LLVMBuildPhi(e->b, LLVMTypeOf(vals[0]), "");
  LLVMAddIncoming(p, vals, blocks, (unsigned)n);
  free(vals);
  free(blocks);
  return p;
}

/* Clamped start index k (operand `first + k`) of a dynamic-(update-)slice. */
static LLVMValueRef dynamic_start(cpu_emitter *e, const hlo_instr *ins, int first, int d, int64_t limit) {
  const hlo_instr *s = ins->operands[first + d];
  LLVMValueRef v = operand_at(e, ins, first + d, scalar_index(e));
  hlo_type t = s->shape.type;
  if (t != HLO_S64 && t != HLO_U64)
    v = hlo_type_is_signed_int(t) ? LLVMBuildSExt(e->b, v, e->i64, "") : LLVMBuildZExt(e->b, v, e->i64, "");
  else if (t == HLO_U64) /* saturate above INT64_MAX so the signed clamp below works */
    v = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, v, c64(e, 0), ""), c64(e, INT64_MAX), v, "");
  v = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSGT, v, c64(e, limit), ""), c64(e, limit), v, "");
  return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, v, c64(e, 0), ""), c64(e, 0), v, "");
}

static bool ints_contain(const hlo_ints *v, int64_t x) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == x) return true;
  return false;
}

/* An integer index element as int64, unsigned values past INT64_MAX saturated (as the
 * evaluator reads gather indices). */
static LLVMValueRef index_as_i64(cpu_emitter *e, hlo_type t, LLVMValueRef v) {
  if (t == HLO_S64) return v;
  if (t == HLO_U64)
    return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, v, c64(e, 0), ""), c64(e, INT64_MAX), v, "");
  return hlo_type_is_signed_int(t) ? LLVMBuildSExt(e->b, v, e->i64, "") : LLVMBuildZExt(e->b, v, e->i64, "");
}

/* gather per output element: the output's batch dims select a position in the start
 * indices (all indices dims but index_vector_dim, in order), whose index vector gives
 * the slice start, clamped so the slice fits; the offset dims index inside the slice
 * (operand dims neither collapsed nor batching, in order). */
static LLVMValueRef emit_gather(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_gather_dnums *dn = &ins->gather;
  const hlo_shape *os = &ins->operands[0]->shape, *is = &ins->operands[1]->shape;
  int ivd = (int)dn->index_vector_dim;
  cpu_index *pos = new_index(e, is->rank, false); /* the batch position in the indices */
  for (int d = 0, id = 0; d < ins->shape.rank; d++) {
    if (ints_contain(&dn->offset_dims, d)) continue;
    if (id == ivd) id++;
    pos->v[id++] = ix->v[d];
  }
  LLVMValueRef start[HLO_MAX_RANK];
  for (int d = 0; d < os->rank; d++) start[d] = c64(e, 0);
  for (int k = 0; k < dn->start_index_map.n; k++) {
    cpu_index *at = new_index(e, is->rank, false);
    memcpy(at->v, pos->v, sizeof at->v);
    if (ivd < is->rank) at->v[ivd] = c64(e, k);
    start[dn->start_index_map.v[k]] = index_as_i64(e, is->type, operand_at(e, ins, 1, at));
  }
  for (int i = 0; i < dn->operand_batching_dims.n; i++)
    start[dn->operand_batching_dims.v[i]] = pos->v[dn->start_indices_batching_dims.v[i]];
  cpu_index *oix = new_index(e, os->rank, false);
  for (int d = 0, w = 0; d < os->rank; d++) {
    int64_t hi = os->dims[d] - ins->gather_slice_sizes.v[d];
    LLVMValueRef s0 = start[d];
    s0 = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSGT, s0, c64(e, hi), ""), c64(e, hi), s0, "");
    s0 = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, s0, c64(e, 0), ""), c64(e, 0), s0, "");
    if (ints_contain(&dn->collapsed_slice_dims, d) || ints_contain(&dn->operand_batching_dims, d)) {
      oix->v[d] = s0;
    } else {
      oix->v[d] = LLVMBuildAdd(e->b, s0, ix->v[dn->offset_dims.v[w++]], "");
    }
  }
  return operand_at(e, ins, 0, oix);
}

static LLVMValueRef emit_dynamic_update_slice(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *us = &ins->operands[1]->shape;
  cpu_index *uix = new_index(e, us->rank, false);
  LLVMValueRef in = LLVMConstInt(e->i1, 1, 0);
  for (int d = 0; d < us->rank; d++) {
    LLVMValueRef s = dynamic_start(e, ins, 2, d, ins->shape.dims[d] - us->dims[d]);
    LLVMValueRef p = LLVMBuildSub(e->b, ix->v[d], s, "");
    in = LLVMBuildAnd(e->b, in, LLVMBuildICmp(e->b, LLVMIntSGE, p, c64(e, 0), ""), "");
    in = LLVMBuildAnd(e->b, in, LLVMBuildICmp(e->b, LLVMIntSLT, p, c64(e, us->dims[d]), ""), "");
    uix->v[d] = p;
  }
  cpu_index *oix = new_index(e, ix->rank, false);
  memcpy(oix->v, ix->v, sizeof oix->v);
  if (shape_elements(us) == 0) return operand_at(e, ins, 0, oix);
  branch br;
  branch_begin(e, &br, in);
  LLVMValueRef a = operand_at(e, ins, 1, uix);
  LLVMBasicBlockRef a_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, br.merge_bb);
  LLVMPositionBuilderAtEnd(e->b, br.else_bb);
  LLVMValueRef b = operand_at(e, ins, 0, oix);
  LLVMBasicBlockRef b_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, br.merge_bb);
  LLVMPositionBuilderAtEnd(e->b, br.merge_bb);
  return phi2(e, a, a_end, b, b_end);
}

/* Inlines a scalar computation (a reducer body) on argument values; a tuple root
 * yields one value per element (they share one index, so common work is emitted once). */
static void emit_scalar_call(cpu_emitter *e, const hlo_computation *c, LLVMValueRef *args, LLVMValueRef *results) {
  const hlo_computation *saved_comp = e->bound_comp;
  LLVMValueRef *saved_args = e->bound_args;
  e->bound_comp = c;
  e->bound_args = args;
  cpu_index *sx = scalar_index(e);
  if (c->root->op == HLO_OP_TUPLE)
    for (int k = 0; k < c->root->n_operands; k++) results[k] = emit(e, c->root->operands[k], sx);
  else
    results[0] = emit(e, c->root, sx);
  e->bound_comp = saved_comp;
  e->bound_args = saved_args;
}

void cpu_loop_begin(LLVMBuilderRef b, LLVMValueRef fn, cpu_loop *l, LLVMValueRef lo, LLVMValueRef hi, const char *name) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(lo));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  l->counter = cpu_entry_alloca(fn, i64, name);
  LLVMBuildStore(b, lo, l->counter);
  l->header = LLVMAppendBasicBlockInContext(c, fn, "loop.header");
  l->body = LLVMAppendBasicBlockInContext(c, fn, "loop.body");
  l->exit = LLVMAppendBasicBlockInContext(c, fn, "loop.exit");
  LLVMBuildBr(b, l->header);
  LLVMPositionBuilderAtEnd(b, l->header);
  LLVMValueRef i = LLVMBuildLoad2(b, i64, l->counter, name);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i, hi, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(b, l->body);
  l->index = i;
}

LLVMValueRef cpu_loop_end(LLVMBuilderRef b, cpu_loop *l) {
  LLVMTypeRef i64 = LLVMTypeOf(l->index);
  LLVMBuildStore(b, LLVMBuildAdd(b, l->index, LLVMConstInt(i64, 1, 0), ""), l->counter);
  LLVMValueRef latch = LLVMBuildBr(b, l->header);
  LLVMPositionBuilderAtEnd(b, l->exit);
  return latch;
}

LLVMValueRef cpu_entry_alloca(LLVMValueRef fn, LLVMTypeRef t, const char *name) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(LLVMGetTypeContext(t));
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(eb, first);
  else
    LLVMPositionBuilderAtEnd(eb, entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
  LLVMDisposeBuilder(eb);
  return a;
}

/* One reducer step on accumulators kept in memory (allocas): loads them, folds in the
 * input elements at ix (cpu_emit_reduce_step) and stores the results back. */
static void fold_into(cpu_emitter *e, const hlo_instr *ins, LLVMTypeRef *et, LLVMValueRef *acc_ptr,
                      const cpu_index *ix) {
  LLVMValueRef v[CPU_MAX_KERNEL_OUTPUTS];
  int n = ins->n_operands / 2;
  for (int k = 0; k < n; k++) v[k] = LLVMBuildLoad2(e->b, et[k], acc_ptr[k], "");
  cpu_emit_reduce_step(e, ins, ix, v);
  for (int k = 0; k < n; k++) LLVMBuildStore(e->b, v[k], acc_ptr[k]);
}

/* Lanes of a reduction over the input's minor dimension: element i is folded into lane
 * i mod L, the lanes into lane 0 at the end (an in-order tree) and lane 0 into the
 * accumulator. One accumulator would make every step wait for the previous one (a
 * float add or compare has a latency of several cycles); independent lanes are what
 * the vectorizer turns into vector accumulators. L is REDUCE_LANES, or
 * REDUCE_LANES_LONG for rows of at least twice that: 16 f32 lanes are one AVX-512
 * register, whose add latency then bounds the loop. The reducer of an HLO reduce is
 * associative and commutative by contract (XLA leaves the order unspecified), so for
 * integers, min and max nothing changes and float sums differ from the evaluator's
 * sequential order by rounding only (the conformance suite's NMSE bound,
 * docs/PLUGINS.md). */
#define REDUCE_LANES 16
#define REDUCE_LANES_LONG 64

static int64_t reduce_lanes(int64_t d) { return d >= 2 * REDUCE_LANES_LONG ? REDUCE_LANES_LONG : REDUCE_LANES; }

static LLVMValueRef lane_ptr(cpu_emitter *e, LLVMTypeRef array_t, LLVMValueRef lanes, LLVMValueRef j) {
  LLVMValueRef idx[2] = {c64(e, 0), j};
  return LLVMBuildInBoundsGEP2(e->b, array_t, lanes, idx, 2, "");
}

/* Folds the minor reduced dimension of `ins` (size d >= 2 lanes) into acc[] at the
 * outer position iix (its other reduced dims already bound by enclosing loops). */
static void emit_reduce_minor_in_lanes(cpu_emitter *e, const hlo_instr *ins, const cpu_index *iix,
                                       LLVMTypeRef *et, LLVMValueRef *acc) {
  int n = ins->n_operands / 2, last = iix->rank - 1;
  int64_t d = ins->operands[0]->shape.dims[last], L = reduce_lanes(d), blocks = d / L;
  LLVMTypeRef at[CPU_MAX_KERNEL_OUTPUTS];
  LLVMValueRef lanes[CPU_MAX_KERNEL_OUTPUTS], args[2 * CPU_MAX_KERNEL_OUTPUTS], next[CPU_MAX_KERNEL_OUTPUTS];
  for (int k = 0; k < n; k++) {
    at[k] = LLVMArrayType(et[k], (unsigned)L);
    lanes[k] = cpu_entry_alloca(e->fn, at[k], "lanes");
  }
  /* lane j starts at element j: no identity element is assumed of the init value */
  cpu_loop l;
  cpu_loop_begin(e->b, e->fn, &l, c64(e, 0), c64(e, L), "lane");
  cpu_index *x0 = new_index(e, iix->rank, false);
  *x0 = *iix;
  x0->v[last] = l.index;
  for (int k = 0; k < n; k++) args[k] = operand_at(e, ins, k, x0);
  for (int k = 0; k < n; k++) LLVMBuildStore(e->b, args[k], lane_ptr(e, at[k], lanes[k], l.index));
  cpu_loop_end(e->b, &l);
  /* blocks 1 .. blocks-1, each lane independent of the others */
  cpu_loop blk, lane;
  cpu_loop_begin(e->b, e->fn, &blk, c64(e, 1), c64(e, blocks), "block");
  cpu_loop_begin(e->b, e->fn, &lane, c64(e, 0), c64(e, L), "lane");
  cpu_index *xb = new_index(e, iix->rank, false);
  *xb = *iix;
  xb->v[last] = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, blk.index, c64(e, L), ""), lane.index, "");
  LLVMValueRef lane_acc[CPU_MAX_KERNEL_OUTPUTS];
  for (int k = 0; k < n; k++) lane_acc[k] = lane_ptr(e, at[k], lanes[k], lane.index);
  fold_into(e, ins, et, lane_acc, xb);
  cpu_loop_end(e->b, &lane);
  cpu_loop_end(e->b, &blk);
  /* the lanes in an in-order tree: lane j + s into lane j for j a multiple of 2s, s = 1,
   * 2, 4 ...: for an associative reducer the same result as folding lanes 0, 1, 2 ... in
   * turn, in log2(L) dependent steps instead of L */
  for (int64_t s = 1; s < L; s *= 2) {
    cpu_loop t;
    cpu_loop_begin(e->b, e->fn, &t, c64(e, 0), c64(e, L / (2 * s)), "tree");
    LLVMValueRef lo = LLVMBuildMul(e->b, t.index, c64(e, 2 * s), "");
    LLVMValueRef hi = LLVMBuildAdd(e->b, lo, c64(e, s), "");
    for (int k = 0; k < n; k++) {
      args[k] = LLVMBuildLoad2(e->b, et[k], lane_ptr(e, at[k], lanes[k], lo), "");
      args[n + k] = LLVMBuildLoad2(e->b, et[k], lane_ptr(e, at[k], lanes[k], hi), "");
    }
    emit_scalar_call(e, ins->called[0], args, next);
    for (int k = 0; k < n; k++) LLVMBuildStore(e->b, next[k], lane_ptr(e, at[k], lanes[k], lo));
    cpu_loop_end(e->b, &t);
  }
  /* lane 0, then the tail past the last whole block, into the accumulator */
  for (int k = 0; k < n; k++) {
    args[k] = LLVMBuildLoad2(e->b, et[k], acc[k], "");
    args[n + k] = LLVMBuildLoad2(e->b, et[k], lane_ptr(e, at[k], lanes[k], c64(e, 0)), "");
  }
  emit_scalar_call(e, ins->called[0], args, next);
  for (int k = 0; k < n; k++) LLVMBuildStore(e->b, next[k], acc[k]);
  if (blocks * L == d) return;
  cpu_loop tail;
  cpu_loop_begin(e->b, e->fn, &tail, c64(e, blocks * L), c64(e, d), "tail");
  cpu_index *xt = new_index(e, iix->rank, false);
  *xt = *iix;
  xt->v[last] = tail.index;
  fold_into(e, ins, et, acc, xt);
  cpu_loop_end(e->b, &tail);
}

/* Folds the input of reduce `ins` into the accumulators acc[] (holding the init
 * values) in row-major order of the reduced dimensions, as the evaluator does (the
 * minor dimension, when reduced and long enough, in lanes). */
static void fold_reduce(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix, LLVMTypeRef *et, LLVMValueRef *acc) {
  const hlo_shape *is = &ins->operands[0]->shape;
  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->dimensions.n; i++) reduced[ins->dimensions.v[i]] = true;
  if (shape_elements(is) == 0) return;
  int last = is->rank - 1;
  bool in_lanes = reduced[last] && is->dims[last] >= 2 * REDUCE_LANES;
  cpu_index *iix = new_index(e, is->rank, false);
  cpu_loop loops[HLO_MAX_RANK];
  int n_loops = 0, kept = 0;
  for (int d = 0; d < is->rank; d++) {
    if (!reduced[d]) {
      iix->v[d] = ix->v[kept++];
      continue;
    }
    if (d == last && in_lanes) continue;
    cpu_loop_begin(e->b, e->fn, &loops[n_loops], c64(e, 0), c64(e, is->dims[d]), "r");
    iix->v[d] = loops[n_loops++].index;
  }
  if (in_lanes)
    emit_reduce_minor_in_lanes(e, ins, iix, et, acc);
  else
    fold_into(e, ins, et, acc, iix);
  for (int i = n_loops - 1; i >= 0; i--) cpu_loop_end(e->b, &loops[i]);
}

static bool is_param(const hlo_instr *x, int k) { return x->op == HLO_OP_PARAMETER && x->parameter_number == k; }

static bool is_wide_float(hlo_type t) { return t == HLO_F16 || t == HLO_BF16 || t == HLO_F32 || t == HLO_F64; }

/* Whether instruction x keeps a payload-free pass sound: it reads no float's bits
 * (bitcast-convert from a float, reduce-precision: a payload-free value's NaN bits, or a
 * canonicalized input's, are not the exact pass's) and every float it touches is f16,
 * bf16, f32 or f64, whose NaNs canonical_nan and the roundings are written for. */
static bool keeps_payload_free_sound(const hlo_instr *x) {
  if (x->op == HLO_OP_REDUCE_PRECISION) return false;
  if (x->op == HLO_OP_BITCAST_CONVERT && hlo_type_is_float(x->operands[0]->shape.type)) return false;
  hlo_type t = shape_is_array(&x->shape) ? x->shape.type : HLO_F32;
  if (hlo_type_is_float(t) && !is_wide_float(t)) return false;
  for (int k = 0; k < x->n_operands; k++) {
    hlo_type ot = shape_is_array(&x->operands[k]->shape) ? x->operands[k]->shape.type : HLO_F32;
    if (hlo_type_is_float(ot) && !is_wide_float(ot)) return false;
  }
  for (int c = 0; c < x->n_called; c++)
    for (int i = 0; i < x->called[c]->n_instrs; i++)
      if (!keeps_payload_free_sound(x->called[c]->instrs[i])) return false;
  return true;
}

/* Whether every instruction the kernel computes keeps a payload-free pass sound. */
static bool payload_free_is_sound(const cpu_emitter *e) {
  if (!e->fused) return keeps_payload_free_sound(e->root);
  for (int i = 0; i < e->fused->n_instrs; i++)
    if (!keeps_payload_free_sound(e->fused->instrs[i])) return false;
  return true;
}

static bool computes_wide(const cpu_emitter *e, const hlo_instr *ins);
static bool stays_unrounded(const cpu_emitter *e, const hlo_instr *ins);

/* Whether x computes a bf16 value by rounding (an elementwise op or a reducer step, not
 * one kept wide under excess precision, nor data movement or a select). */
static bool rounds_bf16_at(const cpu_emitter *e, const hlo_instr *x) {
  if (!shape_is_array(&x->shape) || x->shape.type != HLO_BF16 || x->op == HLO_OP_SELECT) return false;
  if (!hlo_opcode_is_elementwise(x->op)) return false;
  return !(computes_wide(e, x) && stays_unrounded(e, x));
}

/* Whether the kernel rounds to bf16 anywhere, reducers included: then a payload-free
 * pass reads its floats with canonical NaNs so that the roundings need no NaN case. */
static bool rounds_to_bf16(const cpu_emitter *e) {
  int n = e->fused ? e->fused->n_instrs : 1;
  for (int i = 0; i < n; i++) {
    const hlo_instr *x = e->fused ? e->fused->instrs[i] : e->root;
    if (rounds_bf16_at(e, x)) return true;
    for (int c = 0; c < x->n_called; c++)
      for (int j = 0; j < x->called[c]->n_instrs; j++)
        if (rounds_bf16_at(e, x->called[c]->instrs[j])) return true;
  }
  return false;
}

/* Whether a payload-free pass of the fused computation saves enough instructions per
 * element for its second copy of the code: `saved` (what the caller's own part saves
 * or costs) plus two per payload select (the first-NaN pick of + - * / -- both
 * operands' when one is a constant --, a conversion's quieting, a bf16 rounding's NaN
 * case), against two per f32/f64/f16 read made canonical, with a margin for the
 * branch (see the end). Not with a transcendental in the kernel: its polynomial is most
 * of the work per element, and a second copy of it is the most compile time. */
static bool payload_free_pays(const cpu_emitter *e, int saved) {
  int added = 0;
  bool canonical_reads = rounds_to_bf16(e), halves = false;
  for (int i = 0; i < e->fused->n_instrs; i++) {
    const hlo_instr *x = e->fused->instrs[i];
    if (!shape_is_array(&x->shape)) continue;
    hlo_type t = x->shape.type;
    switch (x->op) {
      case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC:
      case HLO_OP_TANH: case HLO_OP_SINE: case HLO_OP_COSINE: case HLO_OP_TAN: case HLO_OP_ATAN2:
      case HLO_OP_POWER: case HLO_OP_CBRT: case HLO_OP_ERF:
        return false;
      case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_DIVIDE:
        if (!is_wide_float(t)) break;
        saved += 2;
        if (x->operands[0]->op == HLO_OP_CONSTANT || x->operands[1]->op == HLO_OP_CONSTANT) saved += 2;
        break;
      case HLO_OP_CONVERT:
        if (is_half(x->operands[0]->shape.type) && (t == HLO_F32 || t == HLO_F64)) saved += 2;
        break;
      case HLO_OP_PARAMETER:
        if (canonical_reads && (t == HLO_F32 || t == HLO_F64 || t == HLO_F16)) added += 2;
        break;
      case HLO_OP_CONSTANT:
        if (canonical_reads && (t == HLO_F32 || t == HLO_F64) && x->literal && x->literal->n > 1) added += 2;
        break;
      default: break;
    }
    if (rounds_bf16_at(e, x)) saved += 2;
    halves = halves || is_half(t);
  }
  /* f32/f64 kernels run at memory speed more often than not: there the second copy of
   * the code only costs compile time (transformer_encoder's variance reductions and
   * residual kernels, +25%), so they must save twice as much */
  return saved >= added + (halves ? 4 : 8);
}

/* Whether reduce `ins` may be folded first in a payload-free pass (see
 * cpu_emitter_set_payload_free), with the exact fold run again only when the result is
 * NaN. That holds when the result is NaN exactly when some value folded or computed on
 * the way was: one f32 or f64 accumulator, a reducer p0 + p1 or p0 * p1 (a NaN never
 * leaves a sum or a product), and a sound kernel (payload_free_is_sound), so a payload
 * can only decide which NaN comes out. Then a result that is not NaN saw no NaN, and
 * its bits are the exact fold's. In a row reduction the payload rules were a third of
 * the work per element (a compare and a masked move for the accumulator, two more for
 * a convert's quieting). */
static bool reduce_may_skip_payloads(const cpu_emitter *e, const hlo_instr *ins) {
  hlo_type t = ins->shape.type;
  if (e->payload_free || ins->n_operands != 2 || (t != HLO_F32 && t != HLO_F64)) return false; /* halves fold as bits */
  const hlo_computation *r = ins->called[0];
  const hlo_instr *root = r ? r->root : NULL;
  if (!root || r->n_instrs != 3 || (root->op != HLO_OP_ADD && root->op != HLO_OP_MULTIPLY)) return false;
  if (!((is_param(root->operands[0], 0) && is_param(root->operands[1], 1)) ||
        (is_param(root->operands[0], 1) && is_param(root->operands[1], 0))))
    return false;
  /* the accumulator's first-NaN pick is saved too; an unfused reduce (a sum of a buffer)
   * saves only that, not worth a second copy of the fold */
  if (!payload_free_is_sound(e)) return false;
  return e->fused ? payload_free_pays(e, 2) : false;
}

/* reduce with n = operands / 2 accumulators (fold_reduce); writes the n results. */
static void emit_reduce_values(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix, LLVMValueRef *results) {
  int n = ins->n_operands / 2;
  LLVMValueRef acc[CPU_MAX_KERNEL_OUTPUTS];
  LLVMTypeRef et[CPU_MAX_KERNEL_OUTPUTS];
  LLVMValueRef init[CPU_MAX_KERNEL_OUTPUTS];
  cpu_emit_reduce_init(e, ins, init);
  for (int k = 0; k < n; k++) {
    et[k] = cpu_llvm_type(e->c, ins->operands[k]->shape.type);
    acc[k] = cpu_entry_alloca(e->fn, et[k], "acc");
    LLVMBuildStore(e->b, init[k], acc[k]);
  }
  if (reduce_may_skip_payloads(e, ins)) {
    /* values emitted in the first pass carry its payloads: none is reused after it */
    int cached = e->n_cache;
    cpu_emitter_set_payload_free(e, true);
    fold_reduce(e, ins, ix, et, acc);
    cpu_emitter_set_payload_free(e, false);
    e->n_cache = cached;
    LLVMBasicBlockRef exact = LLVMAppendBasicBlockInContext(e->c, e->fn, "reduce.exact");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->c, e->fn, "reduce.done");
    LLVMBuildCondBr(e->b, is_nan(e, LLVMBuildLoad2(e->b, et[0], acc[0], "")), exact, done);
    LLVMPositionBuilderAtEnd(e->b, exact);
    LLVMBuildStore(e->b, init[0], acc[0]);
    fold_reduce(e, ins, ix, et, acc);
    LLVMBuildBr(e->b, done);
    LLVMPositionBuilderAtEnd(e->b, done);
  } else {
    fold_reduce(e, ins, ix, et, acc);
  }
  for (int k = 0; k < n; k++) results[k] = LLVMBuildLoad2(e->b, et[k], acc[k], "");
}

static LLVMValueRef emit_reduce(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  LLVMValueRef v;
  emit_reduce_values(e, ins, ix, &v);
  return v;
}

/* Window positions in window order; a position is an input element when it lands on a
 * base-dilated point inside the input (as the evaluator's window plan). */
static LLVMValueRef emit_reduce_window(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *is = &ins->operands[0]->shape;
  LLVMTypeRef et = cpu_llvm_type(e->c, ins->shape.type);
  LLVMValueRef acc = cpu_entry_alloca(e->fn, et, "acc");
  LLVMBuildStore(e->b, operand_at(e, ins, 1, scalar_index(e)), acc);
  if (shape_elements(is) == 0) return LLVMBuildLoad2(e->b, et, acc, "");
  int rank = is->rank;
  cpu_loop loops[HLO_MAX_RANK];
  cpu_index *iix = new_index(e, rank, false);
  LLVMValueRef ok = LLVMConstInt(e->i1, 1, 0);
  for (int d = 0; d < rank; d++) {
    const hlo_window_dim *w = &ins->window.dims[d];
    cpu_loop_begin(e->b, e->fn, &loops[d], c64(e, 0), c64(e, w->size), "w");
  }
  for (int d = 0; d < rank; d++) {
    const hlo_window_dim *w = &ins->window.dims[d];
    LLVMValueRef p = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, ix->v[d], c64(e, w->stride), ""),
                                  LLVMBuildMul(e->b, loops[d].index, c64(e, w->rhs_dilate), ""), "");
    p = LLVMBuildSub(e->b, p, c64(e, w->pad_lo), "");
    LLVMValueRef in = LLVMBuildAnd(e->b, LLVMBuildICmp(e->b, LLVMIntSGE, p, c64(e, 0), ""),
                                   LLVMBuildICmp(e->b, LLVMIntSLE, p, c64(e, (is->dims[d] - 1) * w->lhs_dilate), ""), "");
    if (w->lhs_dilate > 1) {
      in = LLVMBuildAnd(e->b, in,
                        LLVMBuildICmp(e->b, LLVMIntEQ, LLVMBuildSRem(e->b, p, c64(e, w->lhs_dilate), ""), c64(e, 0), ""), "");
      p = LLVMBuildSDiv(e->b, p, c64(e, w->lhs_dilate), "");
    }
    ok = LLVMBuildAnd(e->b, ok, in, "");
    iix->v[d] = p;
  }
  LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(e->c, e->fn, "win.take");
  LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(e->c, e->fn, "win.skip");
  LLVMBuildCondBr(e->b, ok, take, skip);
  LLVMPositionBuilderAtEnd(e->b, take);
  LLVMValueRef args[2], next;
  args[0] = LLVMBuildLoad2(e->b, et, acc, "");
  args[1] = operand_at(e, ins, 0, iix);
  emit_scalar_call(e, ins->called[0], args, &next);
  LLVMBuildStore(e->b, next, acc);
  LLVMBuildBr(e->b, skip);
  LLVMPositionBuilderAtEnd(e->b, skip);
  for (int d = rank - 1; d >= 0; d--) cpu_loop_end(e->b, &loops[d]);
  return LLVMBuildLoad2(e->b, et, acc, "");
}

/* dot as the evaluator computes it: floats accumulate in double and round once,
 * integers accumulate with wrapping in 64 bits. Contracting positions are visited in
 * row-major order of the lhs contracting dimensions. */
static LLVMValueRef emit_dot(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *ls = &ins->operands[0]->shape, *rs = &ins->operands[1]->shape;
  const hlo_dot_dnums *dn = &ins->dot;
  hlo_type t = ins->shape.type;
  bool fl = hlo_type_is_float(t);
  LLVMTypeRef at = fl ? e->f64 : e->i64;
  LLVMValueRef acc = cpu_entry_alloca(e->fn, at, "dotacc");
  LLVMBuildStore(e->b, fl ? fconst(e->f64, 0) : c64(e, 0), acc);
  cpu_index *lix = new_index(e, ls->rank, false), *rix = new_index(e, rs->rank, false);
  bool lset[HLO_MAX_RANK] = {false}, rset[HLO_MAX_RANK] = {false};
  int o = 0;
  for (int i = 0; i < dn->lhs_batch.n; i++, o++) {
    lix->v[dn->lhs_batch.v[i]] = ix->v[o];
    rix->v[dn->rhs_batch.v[i]] = ix->v[o];
    lset[dn->lhs_batch.v[i]] = rset[dn->rhs_batch.v[i]] = true;
  }
  for (int i = 0; i < dn->lhs_contracting.n; i++) lset[dn->lhs_contracting.v[i]] = true;
  for (int i = 0; i < dn->rhs_contracting.n; i++) rset[dn->rhs_contracting.v[i]] = true;
  for (int d = 0; d < ls->rank; d++)
    if (!lset[d]) lix->v[d] = ix->v[o++];
  for (int d = 0; d < rs->rank; d++)
    if (!rset[d]) rix->v[d] = ix->v[o++];
  cpu_loop loops[HLO_MAX_RANK];
  for (int i = 0; i < dn->lhs_contracting.n; i++) {
    cpu_loop_begin(e->b, e->fn, &loops[i], c64(e, 0), c64(e, ls->dims[dn->lhs_contracting.v[i]]), "k");
    lix->v[dn->lhs_contracting.v[i]] = loops[i].index;
    rix->v[dn->rhs_contracting.v[i]] = loops[i].index;
  }
  /* each operand in the result type first (XLA's preferred_element_type: bf16 x bf16
   * -> f32 widens exactly, s8 x s8 -> s32 multiplies in s32), as the evaluator does */
  LLVMValueRef a = convert_value(e, ls->type, t, operand_at(e, ins, 0, lix));
  LLVMValueRef b = convert_value(e, rs->type, t, operand_at(e, ins, 1, rix));
  carrier c;
  a = to_carrier(e, t, a, &c);
  b = to_carrier(e, t, b, &c);
  LLVMValueRef cur = LLVMBuildLoad2(e->b, at, acc, "");
  LLVMValueRef next = fl ? LLVMBuildFAdd(e->b, cur, LLVMBuildFMul(e->b, a, b, ""), "")
                         : LLVMBuildAdd(e->b, cur, LLVMBuildMul(e->b, a, b, ""), "");
  LLVMBuildStore(e->b, next, acc);
  for (int i = dn->lhs_contracting.n - 1; i >= 0; i--) cpu_loop_end(e->b, &loops[i]);
  LLVMValueRef sum = LLVMBuildLoad2(e->b, at, acc, "");
  /* integers wrap: the low bits, s4/s2 sign-extended in their byte */
  return from_carrier(e, t, fl ? CARRY_F64 : CARRY_U64, sum);
}

/* convolution as the evaluator computes it (same accumulators as dot): for each kernel
 * spatial position (row-major) and input feature of the output feature's group, the
 * input position o*stride + tap*rhs_dilate - pad_lo must land on a base-dilated input
 * element; window reversal flips the tap. */
static LLVMValueRef emit_convolution(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *xs = &ins->operands[0]->shape, *ws = &ins->operands[1]->shape;
  const hlo_conv_dnums *cd = &ins->conv;
  hlo_type t = ins->shape.type;
  bool fl = hlo_type_is_float(t);
  int ns = cd->n_spatial;
  int64_t c_out = ws->dims[cd->kernel_output_feature], cg = ws->dims[cd->kernel_input_feature];
  int64_t per_fgroup = c_out / ins->feature_group_count, per_bgroup = c_out / ins->batch_group_count;
  int64_t n_out = ins->shape.dims[cd->output_batch];
  LLVMTypeRef at = fl ? e->f64 : e->i64;
  LLVMValueRef acc = cpu_entry_alloca(e->fn, at, "convacc");
  LLVMBuildStore(e->b, fl ? fconst(e->f64, 0) : c64(e, 0), acc);
  if (shape_elements(xs) == 0 || shape_elements(ws) == 0)
    return fl ? from_carrier(e, t, CARRY_F64, fconst(e->f64, 0)) : from_carrier(e, t, CARRY_S64, c64(e, 0));
  LLVMValueRef o = ix->v[cd->output_feature];
  LLVMValueRef fgroup = LLVMBuildUDiv(e->b, o, c64(e, per_fgroup), "");
  LLVMValueRef bgroup = LLVMBuildUDiv(e->b, o, c64(e, per_bgroup), "");
  cpu_index *xix = new_index(e, xs->rank, false), *wix = new_index(e, ws->rank, false);
  xix->v[cd->input_batch] =
      LLVMBuildAdd(e->b, LLVMBuildMul(e->b, bgroup, c64(e, n_out), ""), ix->v[cd->output_batch], "");
  wix->v[cd->kernel_output_feature] = o;
  cpu_loop loops[HLO_MAX_RANK + 1];
  for (int s = 0; s < ns; s++) {
    cpu_loop_begin(e->b, e->fn, &loops[s], c64(e, 0), c64(e, ws->dims[cd->kernel_spatial[s]]), "q");
    wix->v[cd->kernel_spatial[s]] = loops[s].index;
  }
  cpu_loop_begin(e->b, e->fn, &loops[ns], c64(e, 0), c64(e, cg), "f");
  LLVMValueRef k = loops[ns].index;
  wix->v[cd->kernel_input_feature] = k;
  xix->v[cd->input_feature] = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, fgroup, c64(e, cg), ""), k, "");
  LLVMValueRef ok = LLVMConstInt(e->i1, 1, 0);
  for (int s = 0; s < ns; s++) {
    const hlo_window_dim *w = &ins->window.dims[s];
    int64_t ksize = ws->dims[cd->kernel_spatial[s]], in = xs->dims[cd->input_spatial[s]];
    LLVMValueRef tap = w->reversal ? LLVMBuildSub(e->b, c64(e, ksize - 1), loops[s].index, "") : loops[s].index;
    LLVMValueRef p = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, ix->v[cd->output_spatial[s]], c64(e, w->stride), ""),
                                  LLVMBuildMul(e->b, tap, c64(e, w->rhs_dilate), ""), "");
    p = LLVMBuildSub(e->b, p, c64(e, w->pad_lo), "");
    LLVMValueRef in_ok = LLVMBuildAnd(e->b, LLVMBuildICmp(e->b, LLVMIntSGE, p, c64(e, 0), ""),
                                      LLVMBuildICmp(e->b, LLVMIntSLE, p, c64(e, (in - 1) * w->lhs_dilate), ""), "");
    if (w->lhs_dilate > 1) {
      in_ok = LLVMBuildAnd(e->b, in_ok,
                           LLVMBuildICmp(e->b, LLVMIntEQ, LLVMBuildSRem(e->b, p, c64(e, w->lhs_dilate), ""), c64(e, 0), ""), "");
      p = LLVMBuildSDiv(e->b, p, c64(e, w->lhs_dilate), "");
    }
    ok = LLVMBuildAnd(e->b, ok, in_ok, "");
    xix->v[cd->input_spatial[s]] = p;
  }
  LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(e->c, e->fn, "conv.take");
  LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(e->c, e->fn, "conv.skip");
  LLVMBuildCondBr(e->b, ok, take, skip);
  LLVMPositionBuilderAtEnd(e->b, take);
  carrier c;
  LLVMValueRef a = to_carrier(e, t, convert_value(e, xs->type, t, operand_at(e, ins, 0, xix)), &c);
  LLVMValueRef b = to_carrier(e, t, convert_value(e, ws->type, t, operand_at(e, ins, 1, wix)), &c);
  LLVMValueRef cur = LLVMBuildLoad2(e->b, at, acc, "");
  LLVMBuildStore(e->b, fl ? LLVMBuildFAdd(e->b, cur, LLVMBuildFMul(e->b, a, b, ""), "")
                          : LLVMBuildAdd(e->b, cur, LLVMBuildMul(e->b, a, b, ""), ""),
                 acc);
  LLVMBuildBr(e->b, skip);
  LLVMPositionBuilderAtEnd(e->b, skip);
  for (int s = ns; s >= 0; s--) cpu_loop_end(e->b, &loops[s]);
  LLVMValueRef sum = LLVMBuildLoad2(e->b, at, acc, "");
  /* integers wrap: the low bits, s4/s2 sign-extended in their byte */
  return from_carrier(e, t, fl ? CARRY_F64 : CARRY_U64, sum);
}

/* A value's storage bits as an integer of its width (floats bitcast, integers as are). */
static LLVMValueRef storage_bits(cpu_emitter *e, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (t == e->f32) return LLVMBuildBitCast(e->b, v, e->i32, "");
  if (t == e->f64) return LLVMBuildBitCast(e->b, v, e->i64, "");
  return v;
}

/* Storage bits (an integer of the type's width) as a value of element type t; pred is
 * made canonical (0/1) as the evaluator makes it, since every pred reader may rely on
 * that. */
static LLVMValueRef from_storage_bits(cpu_emitter *e, hlo_type t, LLVMValueRef bits) {
  if (t == HLO_PRED) return LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntNE, bits, cint(e->i8, 0), ""), e->i8, "");
  return LLVMBuildBitCast(e->b, bits, cpu_llvm_type(e->c, t), "");
}

/* bitcast-convert reinterprets storage in little-endian byte order (the evaluator's
 * memcpy on this little-endian host). Equal widths: element for element. Wide to narrow
 * (f32[n] -> u8[n,4]): output (i, j) is piece j, counted from the least significant
 * end, of the wide element i. Narrow to wide (u8[n,4] -> f32[n]): the ratio narrow
 * elements of row i, piece j shifted up by j pieces, or-ed together. */
static LLVMValueRef emit_bitcast_convert(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  const hlo_shape *os = &ins->operands[0]->shape;
  hlo_type to = ins->shape.type;
  size_t in_size = hlo_type_size(os->type), out_size = hlo_type_size(to);
  if (in_size == out_size) return canonical_nan(e, from_storage_bits(e, to, storage_bits(e, ew_operand(e, ins, 0, ix))));
  if (in_size > out_size) {
    unsigned wide_bits = (unsigned)in_size * 8, piece = (unsigned)out_size * 8;
    LLVMTypeRef wt = LLVMIntTypeInContext(e->c, wide_bits);
    cpu_index *oix = new_index(e, os->rank, false);
    for (int d = 0; d < os->rank; d++) oix->v[d] = ix->v[d];
    LLVMValueRef w = storage_bits(e, operand_at(e, ins, 0, oix));
    LLVMValueRef shift = LLVMBuildMul(e->b, ix->v[ix->rank - 1], c64(e, piece), "");
    if (wide_bits != 64) shift = LLVMBuildTrunc(e->b, shift, wt, "");
    LLVMValueRef part = LLVMBuildTrunc(e->b, LLVMBuildLShr(e->b, w, shift, ""), LLVMIntTypeInContext(e->c, piece), "");
    return canonical_nan(e, from_storage_bits(e, to, part));
  }
  unsigned wide_bits = (unsigned)out_size * 8, piece = (unsigned)in_size * 8;
  int ratio = (int)(out_size / in_size);
  LLVMTypeRef wt = LLVMIntTypeInContext(e->c, wide_bits);
  LLVMValueRef acc = cint(wt, 0);
  for (int j = 0; j < ratio; j++) {
    cpu_index *oix = new_index(e, os->rank, false);
    for (int d = 0; d < ix->rank; d++) oix->v[d] = ix->v[d];
    oix->v[os->rank - 1] = c64(e, j);
    LLVMValueRef p = LLVMBuildZExt(e->b, storage_bits(e, operand_at(e, ins, 0, oix)), wt, "");
    if (j) p = LLVMBuildShl(e->b, p, cint(wt, (uint64_t)j * piece), "");
    acc = j ? LLVMBuildOr(e->b, acc, p, "") : p;
  }
  return canonical_nan(e, from_storage_bits(e, to, acc));
}

/* Excess precision (an option, after XLA's xla_allow_excess_precision): inside one
 * kernel, a chain of bf16 arithmetic is computed in f32 without rounding each
 * intermediate to bf16. Only values that leave the kernel (its outputs) or that an op
 * needs as bf16 bits (a bitcast, a comparison, data movement) are rounded; a convert
 * f32 -> bf16 feeding such a chain hands on its unrounded input, and a convert
 * bf16 -> f32 at the chain's end takes the unrounded value. Per element this saves the
 * widen and round of every intermediate. Off (the default, and always in the bridge's
 * clusters) every bf16 op rounds, as the evaluator does: XLA:CPU's own rounding points
 * lie between the two (on xla_mha_block_bf16 the option moves kiln 3.5x further from
 * XLA's outputs, on xla_layer_norm_bf16 3x closer), so neither is XLA's numerics. */
static bool computes_wide(const cpu_emitter *e, const hlo_instr *ins) {
  if (!is_half(ins->shape.type) || ins == e->root) return false;
  if (ins->op == HLO_OP_PARAMETER || ins->op == HLO_OP_CONSTANT) return false;
  if (ins->op == HLO_OP_CONVERT) return ins->operands[0]->shape.type == HLO_F32;
  if (ins->op == HLO_OP_SELECT) return true;
  if (!hlo_opcode_is_elementwise(ins->op) || ins->n_operands > 2) return false;
  switch (ins->op) {
    case HLO_OP_REDUCE_PRECISION:
    case HLO_OP_COMPARE:
    case HLO_OP_CLAMP:
    case HLO_OP_IS_FINITE:
    case HLO_OP_BITCAST_CONVERT: return false;
    default: break;
  }
  for (int k = 0; k < ins->n_operands; k++)
    if (ins->operands[k]->shape.type != ins->shape.type) return false;
  return true;
}

static LLVMValueRef emit_wide(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix);

/* Operand k of an elementwise bf16 instruction inside the kernel (computes_wide never
 * holds for the root) as an f32 value, unrounded when it is computed in this kernel;
 * ew_operand's index rule. */
static LLVMValueRef wide_operand(cpu_emitter *e, const hlo_instr *ins, int k, const cpu_index *ix) {
  const cpu_index *oix = ins->operands[k]->shape.rank == 0 && ix->rank != 0 ? scalar_index(e) : ix;
  return emit_wide(e, ins->operands[k], oix);
}

static void cache_put(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix, LLVMValueRef v, bool wide) {
  if (e->n_cache == e->cap_cache) {
    e->cap_cache = e->cap_cache ? 2 * e->cap_cache : 64;
    e->cache = realloc(e->cache, (size_t)e->cap_cache * sizeof *e->cache);
    if (!e->cache) abort();
  }
  e->cache[e->n_cache++] = (cache_entry){ins, ix, v, wide};
}

/* Whether a half value computed wide stays unrounded: excess precision, bf16 only. */
static bool stays_unrounded(const cpu_emitter *e, const hlo_instr *ins) {
  return e->excess_precision && ins->shape.type == HLO_BF16;
}

/* The f32 value of half-type instruction ins at ix: computed in f32 where computes_wide
 * allows (and unrounded where stays_unrounded), else its half value widened (exact).
 * Cached beside the rounded values. */
static LLVMValueRef emit_wide(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  for (int i = e->n_cache - 1; i >= 0; i--)
    if (e->cache[i].ins == ins && e->cache[i].ix == ix && e->cache[i].wide) return e->cache[i].value;
  LLVMValueRef v = NULL;
  if (computes_wide(e, ins)) {
    if (ins->op == HLO_OP_CONVERT) {
      v = ew_operand(e, ins, 0, ix);
    } else if (ins->op == HLO_OP_SELECT) {
      LLVMValueRef p = ew_operand(e, ins, 0, ix);
      LLVMValueRef a = wide_operand(e, ins, 1, ix), b = wide_operand(e, ins, 2, ix);
      v = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntNE, p, cint(e->i8, 0), ""), a, b, "");
    } else {
      LLVMValueRef a = wide_operand(e, ins, 0, ix);
      LLVMValueRef b = ins->n_operands > 1 ? wide_operand(e, ins, 1, ix) : NULL;
      v = float_op(e, ins->op, a, b);
      if (!v) return NULL; /* not a float op (the caller's path reports it); emit would come back here */
    }
    /* Without excess precision the value is rounded here, kept as an f32 whose low
     * bits are zero: the bits of rounding to the half type and widening again, without
     * the 16-bit round trip per op (a select of rounded values needs none). */
    if (v && !stays_unrounded(e, ins) && ins->op != HLO_OP_SELECT) v = round_to_half_f32(e, ins->shape.type, v);
  }
  if (!v) v = widen_half(e, ins->shape.type, emit(e, ins, ix));
  cache_put(e, ins, ix, v, true);
  return v;
}

static LLVMValueRef emit_elementwise(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  hlo_type t = ins->operands[0]->shape.type;
  /* Inside a kernel a half op's value is its wide one (see emit_wide) narrowed; a
   * half -> f32 convert takes the wide value itself. */
  if (ins->op != HLO_OP_CONVERT && computes_wide(e, ins)) {
    LLVMValueRef w = emit_wide(e, ins, ix);
    if (w) return narrow_half(e, ins->shape.type, w);
  }
  if (ins->op == HLO_OP_CONVERT && is_half(t) && (ins->shape.type == HLO_F32 || ins->shape.type == HLO_F64) &&
      !(ins == e->root && !e->fused)) {
    LLVMValueRef w = wide_operand(e, ins, 0, ix);
    /* as convert_value, NaNs come out quiet; a rounded value already is (a select's is
     * one of its operands', which may be a signalling NaN read from memory) */
    const hlo_instr *src = ins->operands[0];
    if (!computes_wide(e, src) || src->op == HLO_OP_SELECT || stays_unrounded(e, src)) w = quiet_if_nan(e, w);
    return ins->shape.type == HLO_F64 ? LLVMBuildFPExt(e->b, w, e->f64, "") : w;
  }
  switch (ins->op) {
    case HLO_OP_CONVERT: return convert_value(e, t, ins->shape.type, ew_operand(e, ins, 0, ix));
    case HLO_OP_REDUCE_PRECISION: {
      /* halves through f32 and back, as the evaluator does */
      LLVMValueRef v = ew_operand(e, ins, 0, ix);
      if (is_half(t)) return narrow_half(e, t, reduce_precision(e, widen_half(e, t, v), ins->exponent_bits, ins->mantissa_bits));
      return reduce_precision(e, v, ins->exponent_bits, ins->mantissa_bits);
    }
    case HLO_OP_COMPARE:
      return compare_values(e, ins, t, ew_operand(e, ins, 0, ix), ew_operand(e, ins, 1, ix));
    case HLO_OP_SELECT: {
      LLVMValueRef p = ew_operand(e, ins, 0, ix);
      LLVMValueRef a = ew_operand(e, ins, 1, ix), b = ew_operand(e, ins, 2, ix);
      return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntNE, p, cint(e->i8, 0), ""), a, b, "");
    }
    case HLO_OP_CLAMP:
      return clamp_values(e, ins->shape.type, ew_operand(e, ins, 0, ix), ew_operand(e, ins, 1, ix),
                          ew_operand(e, ins, 2, ix));
    case HLO_OP_IS_FINITE: {
      LLVMValueRef v = ew_operand(e, ins, 0, ix);
      if (is_half(t)) v = widen_half(e, t, v);
      LLVMValueRef inf = fconst(LLVMTypeOf(v), 1.0 / 0.0);
      return LLVMBuildZExt(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, intrinsic1(e, "fabs", v), inf, ""), e->i8, "");
    }
    default: break;
  }
  LLVMValueRef a = ew_operand(e, ins, 0, ix);
  LLVMValueRef b = ins->n_operands > 1 ? ew_operand(e, ins, 1, ix) : NULL;
  if (t == HLO_PRED) return pred_op(e, ins->op, a, b);
  if (hlo_type_is_int(t)) return int_op(e, t, ins->op, a, b);
  if (is_half(t)) {
    LLVMValueRef r = float_op(e, ins->op, widen_half(e, t, a), b ? widen_half(e, t, b) : NULL);
    return r ? narrow_half(e, t, r) : NULL;
  }
  return float_op(e, ins->op, a, b);
}

static LLVMValueRef emit_uncached(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  switch (ins->op) {
    case HLO_OP_PARAMETER:
      if (e->bound_comp && ins->parent == e->bound_comp) return e->bound_args[ins->parameter_number];
      return load_buffer(e, e->n_outputs + (int)ins->parameter_number, &ins->shape, ix);
    case HLO_OP_CONSTANT: return emit_constant(e, ins, ix);
    case HLO_OP_IOTA: {
      LLVMValueRef v = ix->v[ins->iota_dimension];
      hlo_type t = ins->shape.type;
      if (t == HLO_S64 || t == HLO_U64) return v;
      return from_carrier(e, t, CARRY_S64, v);
    }
    case HLO_OP_BROADCAST: {
      const hlo_shape *os = &ins->operands[0]->shape;
      cpu_index *oix = new_index(e, os->rank, false);
      for (int k = 0; k < os->rank; k++) oix->v[k] = ix->v[ins->dimensions.v[k]];
      return operand_at(e, ins, 0, oix);
    }
    case HLO_OP_RESHAPE:
    case HLO_OP_BITCAST: {
      const hlo_shape *os = &ins->operands[0]->shape;
      LLVMValueRef v;
      if (ix->flat) v = operand_at(e, ins, 0, ix);
      else if (shape_elements(os) == 0) v = operand_at(e, ins, 0, delinearize(e, os, linearize(e, &ins->shape, ix)));
      else v = operand_at(e, ins, 0, reshape_index(e, &ins->shape, ix, os));
      /* A bitcast may also reinterpret the element type (same width; XLA's optimised
       * sort comparators bitcast f32 to s32): the bits stay, the LLVM type changes. */
      return LLVMBuildBitCast(e->b, v, cpu_llvm_type(e->c, ins->shape.type), "");
    }
    case HLO_OP_TRANSPOSE: {
      cpu_index *oix = new_index(e, ix->rank, false);
      for (int k = 0; k < ix->rank; k++) oix->v[ins->dimensions.v[k]] = ix->v[k];
      return operand_at(e, ins, 0, oix);
    }
    case HLO_OP_SLICE: {
      cpu_index *oix = new_index(e, ix->rank, false);
      for (int d = 0; d < ix->rank; d++) {
        LLVMValueRef v = ix->v[d];
        int64_t stride = ins->slice_stride.n ? ins->slice_stride.v[d] : 1; /* absent strides are 1 */
        int64_t start = ins->slice_start.n ? ins->slice_start.v[d] : 0;
        if (stride != 1) v = LLVMBuildMul(e->b, v, c64(e, stride), "");
        if (start != 0) v = LLVMBuildAdd(e->b, v, c64(e, start), "");
        oix->v[d] = v;
      }
      return operand_at(e, ins, 0, oix);
    }
    case HLO_OP_REVERSE: {
      cpu_index *oix = new_index(e, ix->rank, false);
      memcpy(oix->v, ix->v, sizeof oix->v);
      for (int i = 0; i < ins->dimensions.n; i++) {
        int d = (int)ins->dimensions.v[i];
        oix->v[d] = LLVMBuildSub(e->b, c64(e, ins->shape.dims[d] - 1), ix->v[d], "");
      }
      return operand_at(e, ins, 0, oix);
    }
    case HLO_OP_DYNAMIC_SLICE: {
      const hlo_shape *os = &ins->operands[0]->shape;
      cpu_index *oix = new_index(e, ix->rank, false);
      for (int d = 0; d < ix->rank; d++)
        oix->v[d] = LLVMBuildAdd(e->b, ix->v[d], dynamic_start(e, ins, 1, d, os->dims[d] - ins->shape.dims[d]), "");
      return operand_at(e, ins, 0, oix);
    }
    case HLO_OP_DYNAMIC_UPDATE_SLICE: return emit_dynamic_update_slice(e, ins, ix);
    case HLO_OP_GATHER: return emit_gather(e, ins, ix);
    case HLO_OP_PAD: return emit_pad(e, ins, ix);
    case HLO_OP_CONCATENATE: return emit_concatenate(e, ins, ix);
    case HLO_OP_REDUCE: return emit_reduce(e, ins, ix);
    case HLO_OP_REDUCE_WINDOW: return emit_reduce_window(e, ins, ix);
    case HLO_OP_DOT: return emit_dot(e, ins, ix);
    case HLO_OP_CONVOLUTION: return emit_convolution(e, ins, ix);
    case HLO_OP_BITCAST_CONVERT: return emit_bitcast_convert(e, ins, ix);
    default: return emit_elementwise(e, ins, ix);
  }
}

static LLVMValueRef emit(cpu_emitter *e, const hlo_instr *ins, const cpu_index *ix) {
  for (int i = e->n_cache - 1; i >= 0; i--)
    if (e->cache[i].ins == ins && e->cache[i].ix == ix && !e->cache[i].wide) return e->cache[i].value;
  LLVMValueRef v = emit_uncached(e, ins, ix);
  cache_put(e, ins, ix, v, false);
  return v;
}

bool cpu_emitter_may_skip_payloads(const cpu_emitter *e) {
  if (e->payload_free || !e->fused || !payload_free_is_sound(e)) return false;
  int tested = 0; /* each float output's NaN test */
  for (int k = 0; k < e->n_outputs; k++)
    if (is_wide_float(cpu_kernel_output_shape(e->root, k)->type)) tested += 2;
  return payload_free_pays(e, -tested);
}

LLVMValueRef cpu_emit_is_nan_value(cpu_emitter *e, hlo_type t, LLVMValueRef v) {
  if (t == HLO_F32 || t == HLO_F64) return is_nan(e, v);
  if (t != HLO_BF16 && t != HLO_F16) return NULL;
  LLVMValueRef mag = LLVMBuildAnd(e->b, v, cint(e->i16, 0x7fff), "");
  return LLVMBuildICmp(e->b, LLVMIntUGT, mag, cint(e->i16, t == HLO_BF16 ? 0x7f80 : 0x7c00), "");
}

void cpu_emit_reduce_init(cpu_emitter *e, const hlo_instr *reduce, LLVMValueRef *init) {
  int n = reduce->n_operands / 2;
  for (int k = 0; k < n; k++) init[k] = operand_at(e, reduce, n + k, scalar_index(e));
}

void cpu_emit_reduce_step(cpu_emitter *e, const hlo_instr *reduce, const cpu_index *ix, LLVMValueRef *acc) {
  int n = reduce->n_operands / 2;
  LLVMValueRef args[2 * CPU_MAX_KERNEL_OUTPUTS];
  for (int k = 0; k < n; k++) {
    args[k] = acc[k];
    args[n + k] = operand_at(e, reduce, k, ix);
  }
  emit_scalar_call(e, reduce->called[0], args, acc);
}

void cpu_emit_root(cpu_emitter *e, const cpu_index *ix, LLVMValueRef *values) {
  if (e->n_outputs > 1) {
    emit_reduce_values(e, e->root, ix, values);
    return;
  }
  values[0] = emit(e, e->fused ? e->fused->root : e->root, ix);
}

int cpu_kernel_output_count(const hlo_instr *root) {
  return root->op == HLO_OP_REDUCE && shape_is_tuple(&root->shape) ? root->shape.n_elems : 1;
}

const hlo_shape *cpu_kernel_output_shape(const hlo_instr *root, int k) {
  return shape_is_tuple(&root->shape) ? &root->shape.elems[k] : &root->shape;
}

void cpu_emit_scalar_call(cpu_emitter *e, const hlo_computation *c, LLVMValueRef *args, LLVMValueRef *results) {
  emit_scalar_call(e, c, args, results);
}

bool cpu_elemental_supports_scalar(const hlo_instr *user, const hlo_computation *c, int n_params, int n_results,
                                   strbuf *why) {
  return supports_scalar(user, c, n_params, n_results, why);
}
