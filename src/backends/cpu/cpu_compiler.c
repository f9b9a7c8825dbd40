/* The cpu compiler (see cpu_compiler.h): programs and their thunks. */
#include "backends/cpu/cpu_compiler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_persist.h"
#include "backends/cpu/cpu_pipeline.h"
#include "backends/cpu/cpu_elemental.h"
#include "base/heap.h"
#include "base/log.h"
#include "hlo/clone.h"

/* OpenMP's runtime call, declared here rather than through <omp.h>: clang builds
 * (fuzzing) compile against gcc's libgomp, whose omp.h clang cannot parse. */
int omp_get_max_threads(void);

static uint64_t next_executable_id;

static kiln_status resolve(const hlo_computation *entry, const hlo_buffer_assignment *a, const hlo_instr *ins,
                           buffer_ref *out) {
  int i = -1;
  for (int k = 0; k < entry->n_instrs; k++)
    if (entry->instrs[k] == ins) i = k;
  if (i < 0 || !hlo_buffer_resolve(entry, a, i, &out->base, &out->offset))
    return status_error(KILN_UNIMPLEMENTED, "cpu: %s (%s): its value has no storage of its own (a tuple)", ins->name,
                        hlo_opcode_name(ins->op));
  return NULL;
}

/* LLVM modules the kernels are spread over, compiled in parallel by cpu_jit_create_many:
 * up to one per thread, each kernel going to the module with the least code so far (its
 * instruction count, a fused computation's all counted). LLVM's time is proportional to
 * the code, so a long program's compile divides by the threads; a small one makes as
 * many modules as it has kernels at most. */
#define CPU_MAX_JIT_MODULES 16

typedef struct kernel_modules {
  cpu_jit_module m[CPU_MAX_JIT_MODULES];
  int64_t code[CPU_MAX_JIT_MODULES];
  int n, max;
  const char *name;
  bool excess_precision; /* backend_compile_options.allow_excess_precision */
  bool outline_math;     /* see math_outlined */
  cpu_jit_module *pin;   /* while set, every kernel goes here (a loop's, see build_while) */
} kernel_modules;

static void kernel_modules_init(kernel_modules *km, const char *name) {
  memset(km, 0, sizeof *km);
  km->name = name;
  km->max = omp_get_max_threads();
  if (km->max > CPU_MAX_JIT_MODULES) km->max = CPU_MAX_JIT_MODULES;
  if (km->max < 1) km->max = 1;
}

static void kernel_modules_discard(kernel_modules *km) {
  for (int i = 0; i < km->n; i++) cpu_jit_module_discard(&km->m[i]);
  km->n = 0;
}

/* f32 exp, tanh and erf (and logistic, an exp) sites beyond which a module's kernels
 * call one out-of-line copy of each instead of expanding it inline (cpu_math.h). Inline
 * is the faster code -- LLVM interleaves neighbouring evaluations -- but each site is
 * some forty to seventy instructions LLVM compiles again: the 16,000-instruction chain
 * of bench/compile_chain.py has 6,400, and with them inline it compiled in 16.0 s
 * (29.3 s of CPU), out of line in 4.4 s (7.2 s), running as fast. Models have far
 * fewer (the JAX bench's 2-layer transformer 6, its LSTM scan 7; a ViT or BERT encoder
 * one GELU and one softmax per layer), so they keep the inline code; what passes the
 * limit is a module whose compile time the math would dominate. */
#define CPU_INLINE_MATH_LIMIT 256

static bool is_outlinable_math(const hlo_instr *ins) {
  if (ins->shape.type != HLO_F32 && ins->shape.type != HLO_F16 && ins->shape.type != HLO_BF16) return false;
  return ins->op == HLO_OP_EXP || ins->op == HLO_OP_TANH || ins->op == HLO_OP_ERF || ins->op == HLO_OP_LOGISTIC;
}

static bool math_outlined(const hlo_module *m) {
  int sites = 0;
  for (int c = 0; c < m->n_comps; c++)
    for (int i = 0; i < m->comps[c]->n_instrs; i++)
      if (is_outlinable_math(m->comps[c]->instrs[i]) && ++sites > CPU_INLINE_MATH_LIMIT) return true;
  return false;
}

static kiln_status kernel_module_for(kernel_modules *km, const hlo_instr *ins, cpu_jit_module **out) {
  int64_t code = 1;
  if (ins->op == HLO_OP_FUSION && ins->n_called == 1) code = ins->called[0]->n_instrs;
  int best = -1;
  if (km->pin) {
    best = (int)(km->pin - km->m);
  } else if (km->n < km->max) {
    TRY(cpu_jit_new_module(km->name, &km->m[km->n]));
    best = km->n++;
  } else {
    best = 0;
    for (int i = 1; i < km->n; i++)
      if (km->code[i] < km->code[best]) best = i;
  }
  km->code[best] += code;
  *out = &km->m[best];
  return NULL;
}

/* The symbol of x's kernel (kind 'k') or loop function ('w') number n: the names the
 * modules define and link_thunk looks up. */
static void symbol_name(const cpu_executable *x, char kind, int n, char *buf, size_t size) {
  snprintf(buf, size, "%s_%c%d", x->sym, kind, n);
}

/* refs: the instruction's outputs (each leaf of a packed tuple result), then its
 * operands. */
static kiln_status add_thunk(cpu_program *p, const hlo_instr *ins, thunk_kind kind, thunk **out) {
  thunk *t = &p->thunks[p->n_thunks];
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->ins = ins;
  int n_out = shape_is_tuple(&ins->shape) ? ins->shape.n_elems : 1;
  t->n_refs = n_out + ins->n_operands;
  t->refs = calloc((size_t)t->n_refs, sizeof *t->refs);
  if (!t->refs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  p->n_thunks++;
  TRY(resolve(p->comp, p->assignment, ins, &t->refs[0]));
  for (int k = 1; k < n_out; k++) {
    t->refs[k] = t->refs[0];
    t->refs[k].offset += hlo_buffer_packed_element_offset(&ins->shape, k, CPU_ALIGNMENT);
  }
  for (int k = 0; k < ins->n_operands; k++)
    TRY(resolve(p->comp, p->assignment, ins->operands[k], &t->refs[n_out + k]));
  *out = t;
  return NULL;
}

static int instr_index(const hlo_computation *c, const hlo_instr *ins) {
  for (int k = 0; k < c->n_instrs; k++)
    if (c->instrs[k] == ins) return k;
  return -1;
}

/* Whether ins's value has storage of its own (an array, or a packed tuple block), as
 * opposed to a `tuple` instruction that only groups its operands' storage. */
static bool has_block(const cpu_program *p, const hlo_instr *ins) {
  int i = instr_index(p->comp, ins), base;
  int64_t offset;
  return i >= 0 && hlo_buffer_resolve(p->comp, p->assignment, i, &base, &offset);
}

/* The storage of every array leaf of ins's value, depth-first, appended to refs at
 * *n: a value with storage (an array, or a packed tuple: a while, a sort, a parameter)
 * gives its leaves at their packed offsets; a `tuple` instruction has none and gives
 * its operands' leaves; a get-tuple-element of one gives that operand's. */
static kiln_status collect_leaves(const cpu_program *p, const hlo_instr *ins, buffer_ref *refs, int *n) {
  int i = instr_index(p->comp, ins);
  buffer_ref base;
  if (i >= 0 && hlo_buffer_resolve(p->comp, p->assignment, i, &base.base, &base.offset)) {
    int leaves = cpu_eval_leaf_count(&ins->shape);
    for (int k = 0; k < leaves; k++) {
      refs[*n] = base;
      refs[(*n)++].offset += cpu_eval_leaf_offset(&ins->shape, k, CPU_ALIGNMENT);
    }
    return NULL;
  }
  if (ins->op == HLO_OP_TUPLE) {
    for (int k = 0; k < ins->n_operands; k++) TRY(collect_leaves(p, ins->operands[k], refs, n));
    return NULL;
  }
  if (ins->op == HLO_OP_GET_TUPLE_ELEMENT && ins->n_operands == 1 && shape_is_tuple(&ins->operands[0]->shape) &&
      ins->tuple_index >= 0 && ins->tuple_index < ins->operands[0]->shape.n_elems) {
    /* The operand's leaves, then only those of the element taken. */
    const hlo_shape *ts = &ins->operands[0]->shape;
    int all = cpu_eval_leaf_count(ts), first = *n, skip = 0;
    buffer_ref *tmp = calloc((size_t)all + 1, sizeof *tmp);
    if (!tmp) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    int m = 0;
    kiln_status st = collect_leaves(p, ins->operands[0], tmp, &m);
    for (int e = 0; e < ins->tuple_index; e++) skip += cpu_eval_leaf_count(&ts->elems[e]);
    int take = cpu_eval_leaf_count(&ins->shape);
    for (int k = 0; !st && k < take; k++) refs[first + k] = tmp[skip + k];
    if (!st) *n += take;
    free(tmp);
    return st;
  }
  return status_error(KILN_UNIMPLEMENTED, "cpu: %s (%s): its value has no storage", ins->name,
                      hlo_opcode_name(ins->op));
}

/* A thunk working on leaves (evaluator, native, while, conditional): refs[0..n_out)
 * the result's leaves, then every operand's leaves in operand order (see cpu_eval_run,
 * cpu_native_run). */
static kiln_status add_leaf_thunk(cpu_program *p, const hlo_instr *ins, thunk_kind kind, thunk **out) {
  thunk *t = &p->thunks[p->n_thunks];
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->ins = ins;
  int n = cpu_eval_leaf_count(&ins->shape);
  for (int k = 0; k < ins->n_operands; k++) n += cpu_eval_leaf_count(&ins->operands[k]->shape);
  t->refs = calloc((size_t)n + 1, sizeof *t->refs);
  if (!t->refs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  p->n_thunks++;
  TRY(collect_leaves(p, ins, t->refs, &t->n_refs));
  t->n_out = t->n_refs;
  for (int k = 0; k < ins->n_operands; k++) TRY(collect_leaves(p, ins->operands[k], t->refs, &t->n_refs));
  *out = t;
  return NULL;
}

static kiln_status add_eval_thunk(cpu_executable *x, cpu_program *p, const hlo_instr *ins) {
  thunk *t;
  TRY(add_leaf_thunk(p, ins, THUNK_EVAL, &t));
  return cpu_eval_create(x->module, ins, &t->eval);
}

static kiln_status add_native_thunk(cpu_executable *x, kernel_modules *km, cpu_program *p, const hlo_instr *ins,
                                    bool *has_kernels) {
  thunk *t;
  TRY(add_leaf_thunk(p, ins, THUNK_NATIVE, &t));
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s_n%d_", x->sym, x->n_kernels++);
  cpu_jit_module *jm;
  TRY(kernel_module_for(km, ins, &jm));
  bool uses_jit = false;
  TRY(cpu_native_create(ins, jm, prefix, &t->native, &uses_jit));
  if (uses_jit) *has_kernels = true;
  return NULL;
}

/* The operand of thunk T whose arena block T's result takes over (buffer assignment's
 * in-place reuse), or -1. */
static int in_place_operand(const cpu_program *p, const thunk *t) {
  const hlo_buffer_slot *slots = p->assignment->slots, *out = &slots[t->refs[0].base];
  if (out->kind != HLO_BUFFER_ARENA || !out->in_place) return -1;
  for (int k = 0; k < t->ins->n_operands; k++) {
    const buffer_ref *r = &t->refs[1 + k];
    if (slots[r->base].kind == HLO_BUFFER_ARENA && slots[r->base].offset + r->offset == out->offset + t->refs[0].offset)
      return k;
  }
  return -1;
}

/* Whether no operand of kernel thunk t can share storage with its outputs: their block
 * came fresh from buffer assignment's free list (not taken over in place from an
 * operand), so no value the kernel reads -- all live while it runs -- lies there.
 * Entry only: in a loop body, update_state_in_place may later point an output at the
 * state leaf an operand reads, after the kernel is generated. */
static bool outputs_apart(const cpu_executable *x, const cpu_program *p, const thunk *t) {
  if (p->comp != x->module->entry) return false;
  const hlo_buffer_slot *out = &p->assignment->slots[t->refs[0].base];
  return out->kind == HLO_BUFFER_ARENA && !out->in_place;
}

/* Constants that oneDNN primitives capture when they are created (weights reordered
 * into their own blocked copy, biases and other operands copied) are never read from
 * the module again, so their literal data is released once the last primitive reading
 * them exists: a compile then holds each weight once, not twice (vit_b_16: ~330 MB).
 * readers[i] counts the operand slots reading constant i of the entry; creating a
 * primitive that captures the constant takes its slots off, and any other reader (a
 * kernel, an alias such as a reshape, a tuple, the root) is never taken off, which pins
 * the data. Constants of loop bodies and branches are left alone (readers is NULL
 * there). A constant borrowed from a lender (literal_owner: a model weight that can be
 * read back from its file) ends its borrow as it is released, so once the last
 * primitive packed it the bridge may drop the graph's copy: the process then holds the
 * packed one alone. */
static int *constant_readers(const hlo_module *m) {
  const hlo_computation *entry = m->entry;
  int *index_of_id = malloc(((size_t)m->next_id + 1) * sizeof *index_of_id);
  int *readers = calloc((size_t)entry->n_instrs + 1, sizeof *readers);
  if (!index_of_id || !readers) {
    free(index_of_id);
    free(readers);
    return NULL;
  }
  for (int i = 0; i < entry->n_instrs; i++) index_of_id[entry->instrs[i]->id] = i;
  for (int i = 0; i < entry->n_instrs; i++)
    for (int k = 0; k < entry->instrs[i]->n_operands; k++) readers[index_of_id[entry->instrs[i]->operands[k]->id]]++;
  for (int i = 0; i < entry->n_instrs; i++)
    if (entry->instrs[i] == entry->root) readers[i]++;
  free(index_of_id);
  return readers;
}

/* After the primitive of thunk T captured its constant operands. */
static void release_captured_constants(const cpu_program *p, const thunk *t, int *readers) {
  if (!readers) return;
  for (int k = 0; k < t->ins->n_operands; k++) {
    hlo_instr *c = t->ins->operands[k];
    int i = t->refs[1 + k].base;
    if (c->op != HLO_OP_CONSTANT || p->comp->instrs[i] != c || !c->literal) continue;
    if (--readers[i] == 0) literal_drop_data(c->literal);
  }
}

static kiln_status build_program(cpu_executable *x, kernel_modules *km, const hlo_computation *comp, int *readers,
                                 bool *has_kernels, cpu_program **out);

/* The sizes of the result's leaves, for the copies control thunks make. */
static kiln_status set_leaf_bytes(thunk *t) {
  t->leaf_bytes = calloc((size_t)t->n_out + 1, sizeof *t->leaf_bytes);
  if (!t->leaf_bytes) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < t->n_out; k++) t->leaf_bytes[k] = shape_byte_size(cpu_leaf_shape(&t->ins->shape, k));
  return NULL;
}

static bool same_ref(buffer_ref a, buffer_ref b) { return a.base == b.base && a.offset == b.offset; }

/* Whether any thunk of p from index `from` on has a ref starting inside bytes [lo, hi)
 * of the storage of instruction `base`. Refs name where each array value starts (leaf
 * thunks list every leaf of a tuple), so a value inside the range is always seen. */
static bool touched_from(const cpu_program *p, int from, int base, int64_t lo, int64_t hi) {
  for (int i = from; i < p->n_thunks; i++) {
    const thunk *t = &p->thunks[i];
    for (int r = 0; r < t->n_refs; r++)
      if (t->refs[r].base == base && t->refs[r].offset >= lo && t->refs[r].offset < hi) return true;
  }
  return false;
}

/* Whether thunk t could write element i of its output over element i of the bytes
 * [lo, hi) of instruction `base`'s storage and still read what it needs: each operand
 * lying there must be one an in-place update may take (hlo_buffer_in_place_operand). */
static bool reads_in_place(const thunk *t, int base, int64_t lo, int64_t hi) {
  int first = t->kind == THUNK_KERNEL ? 1 : t->n_out; /* refs of operand 0 (arrays only) */
  for (int k = 0; k < t->ins->n_operands; k++) {
    const buffer_ref *r = &t->refs[first + k];
    if (r->base == base && r->offset >= lo && r->offset < hi && !hlo_buffer_in_place_operand(t->ins, k)) return false;
  }
  return true;
}

/* A loop body computing a new value for state leaf k into its own arena would have it
 * copied back into the state after every iteration: the whole stacked buffer, twice,
 * for a scan's dynamic-update-slice of one row; the new state itself for a small body
 * (a moving average's f32[768] per step). When the body's result leaf k is the single
 * output of a kernel or dynamic-update-slice thunk that reads the state's leaf k only
 * in place (element i for element i, or as the slice's operand 0), and nothing after it
 * in the body reads that leaf's old value, the thunk writes straight into the state:
 * its output, the later thunks reading it and the body's result are redirected to the
 * leaf, which then stays where it is (the slice copies only its window). */
static void update_state_in_place(thunk *w, int k) {
  if (w->moves[k] != LEAF_COPY) return;
  cpu_program *body = w->progs[1];
  buffer_ref src = body->results[k];
  int at = -1;
  for (int i = 0; i < body->n_thunks && at < 0; i++) {
    const thunk *t = &body->thunks[i];
    bool single = (t->kind == THUNK_KERNEL && shape_is_array(&t->ins->shape)) ||
                  (t->kind == THUNK_NATIVE && t->ins->op == HLO_OP_DYNAMIC_UPDATE_SLICE);
    if (single && same_ref(t->refs[0], src)) at = i;
  }
  if (at < 0 || body->comp->n_params != 1) return;
  thunk *t = &body->thunks[at];
  int64_t lo = cpu_eval_leaf_offset(&w->ins->shape, k, CPU_ALIGNMENT), hi = lo + w->leaf_bytes[k];
  buffer_ref leaf = {instr_index(body->comp, body->comp->params[0]), lo};
  if (leaf.base < 0 || body->assignment->slots[leaf.base].kind != HLO_BUFFER_PARAMETER) return;
  if (!reads_in_place(t, leaf.base, lo, hi) || touched_from(body, at + 1, leaf.base, lo, hi)) return;
  /* Later readers of the new value must name exactly its start, to be redirected. */
  for (int i = at + 1; i < body->n_thunks; i++)
    for (int r = 0; r < body->thunks[i].n_refs; r++)
      if (body->thunks[i].refs[r].base == src.base && !same_ref(body->thunks[i].refs[r], src)) return;
  for (int j = 0; j < w->n_out; j++) {
    const buffer_ref *r = &body->results[j];
    if (j == k) continue;
    if (r->base == src.base || (r->base == leaf.base && r->offset >= lo && r->offset < hi)) return;
  }
  t->refs[0] = leaf;
  for (int i = at + 1; i < body->n_thunks; i++)
    for (int r = 0; r < body->thunks[i].n_refs; r++)
      if (same_ref(body->thunks[i].refs[r], src)) body->thunks[i].refs[r] = leaf;
  body->results[k] = leaf;
  w->moves[k] = LEAF_KEEP;
}

/* Instructions of a loop's condition and body up to which their kernels share one LLVM
 * module, so that the loop can be one function (cpu_loop_kernel.h). Loops over more are
 * whole layers, whose kernels compile in parallel and which per-step dispatch does not
 * slow down. */
#define CPU_LOOP_KERNEL_MAX_INSTRS 64

static bool small_loop(const hlo_instr *ins) {
  return ins->n_called == 2 && ins->called[0]->n_instrs + ins->called[1]->n_instrs <= CPU_LOOP_KERNEL_MAX_INSTRS;
}

/* Steps of program p for a loop function, or false when a thunk is not one: a kernel
 * run on the calling thread, a copy, or a native dynamic-(update-)slice. */
static bool plan_steps(const cpu_executable *x, const cpu_program *p, cpu_loop_step *steps, char (*names)[64]) {
  int at = 0;
  for (int i = 0; i < p->n_thunks; at += p->thunks[i++].n_refs) {
    const thunk *t = &p->thunks[i];
    cpu_loop_step *s = &steps[i]; /* zeroed by the caller */
    s->at = at;
    if (t->kind == THUNK_KERNEL && cpu_kernel_runs_serially(&t->space)) {
      s->kind = CPU_STEP_KERNEL;
      symbol_name(x, 'k', t->kernel, names[i], sizeof names[i]);
      s->kernel = names[i];
      s->units = t->space.units;
    } else if (t->kind == THUNK_COPY) {
      s->kind = CPU_STEP_COPY;
      s->bytes = t->bytes;
    } else if (t->kind == THUNK_NATIVE && t->ins->op == HLO_OP_DYNAMIC_UPDATE_SLICE) {
      s->kind = CPU_STEP_UPDATE_SLICE;
      s->ins = t->ins;
    } else if (t->kind == THUNK_NATIVE && t->ins->op == HLO_OP_DYNAMIC_SLICE) {
      s->kind = CPU_STEP_SLICE;
      s->ins = t->ins;
    } else {
      return false;
    }
  }
  return true;
}

/* The loop of while thunk t as one function in jm, where its kernels are, when every
 * step of its condition and body can be a step of one and no state leaf is staged. */
static kiln_status add_loop_function(cpu_executable *x, cpu_jit_module *jm, thunk *t) {
  const cpu_program *cond = t->progs[0], *body = t->progs[1];
  for (int k = 0; k < t->n_out; k++)
    if (t->moves[k] == LEAF_STAGE) return NULL;
  int n = cond->n_thunks + body->n_thunks;
  cpu_loop_step *steps = calloc((size_t)n + 1, sizeof *steps);
  char(*names)[64] = calloc((size_t)n + 1, sizeof *names);
  int *move_leaf = calloc((size_t)t->n_out, sizeof *move_leaf);
  int64_t *move_bytes = calloc((size_t)t->n_out, sizeof *move_bytes);
  kiln_status st = NULL;
  if (!steps || !names || !move_leaf || !move_bytes) {
    st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  } else if (plan_steps(x, cond, steps, names) && plan_steps(x, body, steps + cond->n_thunks, names + cond->n_thunks)) {
    cpu_loop_plan plan = {cond->n_thunks, body->n_thunks, 0, steps, steps + cond->n_thunks, move_leaf, move_bytes};
    for (int k = 0; k < t->n_out; k++)
      if (t->moves[k] == LEAF_COPY) {
        move_leaf[plan.n_moves] = k;
        move_bytes[plan.n_moves++] = t->leaf_bytes[k];
      }
    char name[64];
    symbol_name(x, 'w', x->n_loops, name, sizeof name);
    st = cpu_codegen_add_loop(jm, name, &plan);
    if (!st) t->loop = x->n_loops++;
  }
  free(steps);
  free(names);
  free(move_leaf);
  free(move_bytes);
  return st;
}

static kiln_status build_while_programs(cpu_executable *x, kernel_modules *km, thunk *t, bool *has_kernels);

/* A while loop run natively: the condition and the body become programs of their own
 * that take the loop state -- the while's own packed block -- as their parameter. The
 * init value is copied into the block once; after each body run its result leaves are
 * moved into the block (see leaf_move), so the state never lives anywhere else. A small
 * loop's kernels share one module, where the loop also becomes one function when it
 * can (add_loop_function), which runs it unless --profile times its thunks. */
static kiln_status build_while(cpu_executable *x, kernel_modules *km, cpu_program *p, thunk *t, bool *has_kernels) {
  t->loop = -1;
  cpu_jit_module *outer = km->pin;
  if (!km->pin && small_loop(t->ins)) TRY(kernel_module_for(km, t->ins, &km->pin));
  kiln_status st = build_while_programs(x, km, t, has_kernels);
  if (!st && km->pin) st = add_loop_function(x, km->pin, t);
  if (!st && t->loop >= 0) *has_kernels = true; /* a loop of copies and slices alone has none */
  km->pin = outer;
  return st;
}

static kiln_status build_while_programs(cpu_executable *x, kernel_modules *km, thunk *t, bool *has_kernels) {
  const hlo_instr *ins = t->ins;
  if (ins->n_called != 2 || ins->n_operands != 1 || t->n_out == 0)
    return ERR_UNIMPLEMENTED("cpu: %s: not a while with a condition, a body and state", ins->name);
  t->progs = calloc(2, sizeof *t->progs);
  if (!t->progs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  t->n_progs = 2;
  TRY(build_program(x, km, ins->called[0], NULL, has_kernels, &t->progs[0]));
  TRY(build_program(x, km, ins->called[1], NULL, has_kernels, &t->progs[1]));
  const cpu_program *cond = t->progs[0], *body = t->progs[1];
  if (cond->n_results != 1 || cpu_leaf_shape(&cond->comp->root->shape, 0)->type != HLO_PRED)
    return ERR_UNIMPLEMENTED("cpu: %s: its condition does not return one pred", ins->name);
  if (body->n_results != t->n_out)
    return ERR_INTERNAL("cpu: %s: the body returns %d leaves for a state of %d", ins->name, body->n_results, t->n_out);
  TRY(set_leaf_bytes(t));
  t->moves = calloc((size_t)t->n_out, sizeof *t->moves);
  t->stage_at = calloc((size_t)t->n_out, sizeof *t->stage_at);
  if (!t->moves || !t->stage_at) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  int64_t staged = 0;
  for (int k = 0; k < t->n_out; k++) {
    const buffer_ref *r = &body->results[k];
    if (body->assignment->slots[r->base].kind != HLO_BUFFER_PARAMETER) {
      t->moves[k] = LEAF_COPY;
    } else if (r->offset == cpu_eval_leaf_offset(&ins->shape, k, CPU_ALIGNMENT)) {
      t->moves[k] = LEAF_KEEP;
    } else {
      t->moves[k] = LEAF_STAGE;
      t->stage_at[k] = staged;
      staged += (t->leaf_bytes[k] + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
    }
  }
  if (staged > 0 && !(t->scratch = aligned_alloc(CPU_ALIGNMENT, (size_t)staged)))
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < t->n_out; k++) update_state_in_place(t, k);
  return NULL;
}

/* A conditional run natively: each branch is a program of its own. A branch's operand
 * is handed over as one block: its own storage when it has one, else (a `tuple` of
 * separately stored values) packed into scratch memory first. */
static kiln_status build_conditional(cpu_executable *x, kernel_modules *km, cpu_program *p, thunk *t,
                                     bool *has_kernels) {
  const hlo_instr *ins = t->ins;
  int n = ins->n_called;
  if (n < 1 || ins->n_operands != n + 1) return ERR_UNIMPLEMENTED("cpu: %s: malformed conditional", ins->name);
  hlo_type sel = ins->operands[0]->shape.type;
  if (!shape_is_array(&ins->operands[0]->shape) || ins->operands[0]->shape.rank != 0 ||
      !(sel == HLO_S32 || (sel == HLO_PRED && n == 2)))
    return ERR_UNIMPLEMENTED("cpu: %s: the selector is not pred[] (two branches) or s32[]", ins->name);
  t->progs = calloc((size_t)n, sizeof *t->progs);
  t->arg_leaf = calloc((size_t)n, sizeof *t->arg_leaf);
  t->arg_packed = calloc((size_t)n, sizeof *t->arg_packed);
  if (!t->progs || !t->arg_leaf || !t->arg_packed) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  t->n_progs = n;
  int64_t scratch = 0;
  int leaf = t->n_out + 1; /* after the result's leaves and the selector's */
  for (int b = 0; b < n; b++) {
    TRY(build_program(x, km, ins->called[b], NULL, has_kernels, &t->progs[b]));
    if (t->progs[b]->n_results != t->n_out)
      return ERR_INTERNAL("cpu: %s: branch %d returns %d leaves for a result of %d", ins->name, b,
                          t->progs[b]->n_results, t->n_out);
    const hlo_instr *arg = ins->operands[b + 1];
    t->arg_leaf[b] = leaf;
    t->arg_packed[b] = has_block(p, arg) && cpu_eval_leaf_count(&arg->shape) > 0;
    leaf += cpu_eval_leaf_count(&arg->shape);
    int64_t bytes = hlo_buffer_packed_bytes(&arg->shape, CPU_ALIGNMENT);
    if (bytes < 0) return ERR_UNIMPLEMENTED("cpu: %s: operand %d is too large", ins->name, b + 1);
    if (!t->arg_packed[b] && bytes > scratch) scratch = bytes;
  }
  TRY(set_leaf_bytes(t));
  scratch = (scratch + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
  if (!(t->scratch = aligned_alloc(CPU_ALIGNMENT, (size_t)(scratch > 0 ? scratch : CPU_ALIGNMENT))))
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

/* Multiply-adds below which an f32 dot (alone, or the core of a fusion) is left to the
 * generated code although oneDNN takes it: a oneDNN call costs ~0.7 us whatever the
 * size, which a scan step's [3,3] x [3] product paid 2000 times (half the time of the
 * bench_scan_N2000_M3 program), while the emitted loop does that many multiply-adds in
 * about as long. */
#define TINY_PRODUCT_MACS 512

static bool tiny_product(const hlo_instr *ins) {
  const hlo_instr *dot = ins->op == HLO_OP_DOT ? ins : NULL;
  if (ins->op == HLO_OP_FUSION && ins->n_called == 1 && ins->called[0])
    for (int i = 0; i < ins->called[0]->n_instrs; i++)
      if (ins->called[0]->instrs[i]->op == HLO_OP_DOT) {
        if (dot) return false; /* two products: not a simple case */
        dot = ins->called[0]->instrs[i];
      }
  if (!dot || dot->n_operands != 2 || dot->shape.type != HLO_F32 || dot->operands[0]->shape.type != HLO_F32 ||
      dot->operands[1]->shape.type != HLO_F32)
    return false;
  int64_t macs = shape_elements(&dot->shape);
  const hlo_shape *ls = &dot->operands[0]->shape;
  for (int i = 0; i < dot->dot.lhs_contracting.n; i++) macs *= ls->dims[dot->dot.lhs_contracting.v[i]];
  return macs < TINY_PRODUCT_MACS;
}

/* A while or conditional as a thunk running programs of its own. UNIMPLEMENTED when a
 * called computation cannot be compiled; nothing is left behind then (the caller runs
 * the instruction through the evaluator instead). */
static kiln_status add_control_thunk(cpu_executable *x, kernel_modules *km, cpu_program *p, const hlo_instr *ins,
                                     bool *has_kernels) {
  thunk *t;
  kiln_status st = add_leaf_thunk(p, ins, ins->op == HLO_OP_WHILE ? THUNK_WHILE : THUNK_CONDITIONAL, &t);
  if (!st) st = ins->op == HLO_OP_WHILE ? build_while(x, km, p, t, has_kernels)
                                        : build_conditional(x, km, p, t, has_kernels);
  if (st && p->n_thunks > 0 && &p->thunks[p->n_thunks - 1] == t) {
    cpu_thunk_free(t);
    p->n_thunks--;
  }
  return st;
}

static kiln_status build_thunk_list(cpu_executable *x, cpu_program *p, kernel_modules *km, bool *has_kernels,
                                    int *readers) {
  const hlo_computation *comp = p->comp;
  for (int i = 0; i < comp->n_instrs; i++) {
    const hlo_instr *ins = comp->instrs[i];
    const hlo_buffer_slot *slot = &p->assignment->slots[i];
    if (slot->kind != HLO_BUFFER_ARENA) {
      if (ins->op == HLO_OP_PARAMETER || ins->op == HLO_OP_CONSTANT || ins->op == HLO_OP_TUPLE ||
          ins->op == HLO_OP_GET_TUPLE_ELEMENT || ins->op == HLO_OP_BITCAST || ins->op == HLO_OP_RESHAPE)
        continue;
      return status_error(KILN_UNIMPLEMENTED, "cpu: %s (%s): no storage was assigned to it", ins->name,
                          hlo_opcode_name(ins->op));
    }
    /* Tuple-shaped results other than a variadic reduce's, a loop's or a branch's
     * are the evaluator's. */
    bool tuple = !shape_is_array(&ins->shape) && ins->op != HLO_OP_REDUCE;
    if (tuple ? hlo_buffer_packed_bytes(&ins->shape, CPU_ALIGNMENT) == 0
              : shape_elements(cpu_kernel_output_shape(ins, 0)) == 0)
      continue;
    thunk *t;
    if (ins->op == HLO_OP_WHILE || ins->op == HLO_OP_CONDITIONAL) {
      kiln_status st = add_control_thunk(x, km, p, ins, has_kernels);
      if (!st) continue;
      if (kiln_status_code(st) != KILN_UNIMPLEMENTED) return st;
      kiln_status_free(st); /* a called computation cannot be compiled: evaluated below */
    }
    if (cpu_native_supports(ins, NULL)) {
      TRY(add_native_thunk(x, km, p, ins, has_kernels));
    } else if (tuple) {
      strbuf why;
      strbuf_init(&why);
      if (!cpu_eval_supports(ins, &why)) {
        kiln_status st = status_error(KILN_UNIMPLEMENTED, "cpu: cannot compile %s (%s): a tuple-shaped result; %s",
                                      ins->name, hlo_opcode_name(ins->op), strbuf_cstr(&why));
        strbuf_free(&why);
        return st;
      }
      strbuf_free(&why);
      TRY(add_eval_thunk(x, p, ins));
    } else if (ins->op == HLO_OP_COPY) {
      TRY(add_thunk(p, ins, THUNK_COPY, &t));
      t->bytes = shape_byte_size(&ins->shape);
    } else if (!(tiny_product(ins) && cpu_elemental_supports(ins, NULL)) && cpu_dnnl_supports(ins)) {
      /* tiny products are tested first: cpu_dnnl_supports builds a oneDNN descriptor */
      TRY(add_thunk(p, ins, THUNK_DNNL, &t));
      kiln_status st = cpu_dnnl_create(ins, in_place_operand(p, t), &t->prim);
      if (st) return status_wrap(st, "cpu: %s", ins->name);
      release_captured_constants(p, t, readers);
    } else {
      strbuf why;
      strbuf_init(&why);
      if (!cpu_elemental_supports(ins, &why)) {
        /* Neither path takes it: the evaluator runs this one instruction. */
        strbuf_append(&why, "; ");
        if (cpu_eval_supports(ins, &why)) {
          strbuf_free(&why);
          TRY(add_eval_thunk(x, p, ins));
          continue;
        }
        kiln_status st = status_error(KILN_UNIMPLEMENTED, "cpu: cannot compile %s: %s", ins->name, strbuf_cstr(&why));
        strbuf_free(&why);
        return st;
      }
      strbuf_free(&why);
      TRY(add_thunk(p, ins, THUNK_KERNEL, &t));
      t->kernel = x->n_kernels++;
      char name[64];
      symbol_name(x, 'k', t->kernel, name, sizeof name);
      cpu_jit_module *jm;
      TRY(kernel_module_for(km, ins, &jm));
      cpu_kernel_options ko = {km->excess_precision, outputs_apart(x, p, t), km->outline_math};
      TRY(cpu_codegen_add_kernel(jm, ins, name, &ko, &t->space));
      *has_kernels = true;
    }
  }
  return NULL;
}

/* Assigns comp's buffers and turns it into thunks. readers: see constant_readers
 * (entry only). A sub-program (not the entry) also records its root's leaves. */
static kiln_status build_program(cpu_executable *x, kernel_modules *km, const hlo_computation *comp, int *readers,
                                 bool *has_kernels, cpu_program **out) {
  *out = NULL;
  cpu_program *p = calloc(1, sizeof *p);
  if (!p) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  p->comp = comp;
  kiln_status st = hlo_assign_buffers(comp, CPU_ALIGNMENT, &p->assignment);
  if (!st && !(p->thunks = calloc((size_t)comp->n_instrs + 1, sizeof *p->thunks)))
    st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  if (!st) st = build_thunk_list(x, p, km, has_kernels, readers);
  if (!st && comp != x->module->entry) {
    int n = cpu_eval_leaf_count(&comp->root->shape);
    if (!(p->results = calloc((size_t)n + 1, sizeof *p->results)))
      st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    if (!st) st = collect_leaves(p, comp->root, p->results, &p->n_results);
  }
  if (st) {
    cpu_program_free(p);
    return st;
  }
  *out = p;
  return NULL;
}

static kiln_status build_entry(cpu_executable *x, kernel_modules *km, bool *has_kernels) {
  const hlo_computation *entry = x->module->entry;
  for (int i = 0; i < entry->n_params; i++)
    if (!shape_is_array(&entry->params[i]->shape))
      return status_error(KILN_UNIMPLEMENTED, "cpu: parameter %s has a tuple shape", entry->params[i]->name);
  int *readers = constant_readers(x->module); /* NULL (out of memory): nothing is released */
  kiln_status st = build_program(x, km, entry, readers, has_kernels, &x->entry);
  free(readers);
  return st;
}

/* Calls fn on every thunk of p and of the programs its thunks run. */
static kiln_status each_thunk(cpu_program *p, kiln_status (*fn)(thunk *t, void *ctx), void *ctx) {
  for (int i = 0; i < p->n_thunks; i++) {
    TRY(fn(&p->thunks[i], ctx));
    for (int k = 0; k < p->thunks[i].n_progs; k++) TRY(each_thunk(p->thunks[i].progs[k], fn, ctx));
  }
  return NULL;
}

typedef struct evaluated_list {
  strbuf *b;
  int n, listed;
} evaluated_list;

static kiln_status note_evaluated(thunk *t, void *ctx) {
  evaluated_list *l = ctx;
  if (t->kind != THUNK_EVAL) return NULL;
  if (l->b && l->listed < 8) {
    strbuf_printf(l->b, "%s %s (%s)", l->listed ? "," : "", t->ins->name, hlo_opcode_name(t->ins->op));
    l->listed++;
  }
  l->n++;
  return NULL;
}

/* The warning about evaluator thunks, or NULL when there are none: they are slow (the
 * evaluator is the oracle, not a fast path), so whoever compiles should know which. */
static char *describe_evaluated(const cpu_executable *x) {
  evaluated_list count = {NULL, 0, 0};
  each_thunk(x->entry, note_evaluated, &count);
  ((cpu_executable *)x)->n_evaluated = count.n;
  if (!count.n) return NULL;
  strbuf b;
  strbuf_init(&b);
  strbuf_printf(&b,
                "device cpu runs %d instruction%s of %s through the evaluator (the interpreter's code), the rest "
                "compiled:",
                count.n, count.n == 1 ? "" : "s", x->module->name);
  evaluated_list list = {&b, 0, 0};
  each_thunk(x->entry, note_evaluated, &list);
  if (list.n > list.listed) strbuf_printf(&b, " and %d more", list.n - list.listed);
  return strbuf_take(&b);
}

static kiln_status link_thunk(thunk *t, void *ctx) {
  const cpu_executable *x = ctx;
  if (t->kind == THUNK_NATIVE) return cpu_native_link(t->native, x->jit);
  char name[64];
  void *addr;
  if (t->kind == THUNK_WHILE && t->loop >= 0) {
    symbol_name(x, 'w', t->loop, name, sizeof name);
    TRY(cpu_jit_lookup(x->jit, name, &addr));
    t->loop_fn = (cpu_loop_fn)addr;
    return NULL;
  }
  if (t->kind != THUNK_KERNEL) return NULL;
  symbol_name(x, 'k', t->kernel, name, sizeof name);
  TRY(cpu_jit_lookup(x->jit, name, &addr));
  t->fn = (cpu_kernel_fn)addr;
  return NULL;
}

/* Appends the leaves of entry value ins to x->outputs: a `tuple` instruction's operands
 * in turn (so nested tuples flatten depth-first), anything else as one leaf. */
static kiln_status collect_outputs(cpu_executable *x, const hlo_instr *ins, int *cap) {
  const cpu_program *p = x->entry;
  if (ins->op == HLO_OP_TUPLE) {
    for (int k = 0; k < ins->n_operands; k++) TRY(collect_outputs(x, ins->operands[k], cap));
    return NULL;
  }
  if (x->n_outputs == *cap) {
    int n = *cap ? *cap * 2 : 4;
    cpu_output *grown = realloc(x->outputs, (size_t)n * sizeof *grown);
    if (!grown) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    x->outputs = grown;
    *cap = n;
  }
  cpu_output *o = &x->outputs[x->n_outputs++];
  o->ins = ins;
  o->direct = -1;
  return resolve(p->comp, p->assignment, ins, &o->ref);
}

/* The result's leaves, and which of them the kernels write straight into the result
 * literal: an array leaf whose value is a whole arena block of its own (not a
 * parameter or constant, not a view into a packed tuple, not a block an earlier leaf
 * already names). Those blocks' addresses become the entry program's extra addresses
 * (cpu_program.slot_extra), so a large output is not computed into the arena and then
 * copied (a 12.6 MB layer-norm output spent ~2 ms per run in that copy). */
static kiln_status build_outputs(cpu_executable *x) {
  cpu_program *p = x->entry;
  const hlo_buffer_assignment *a = p->assignment;
  int cap = 0;
  x->n_outputs = 0;
  if (p->comp->root) TRY(collect_outputs(x, p->comp->root, &cap));
  for (int k = 0; k < x->n_outputs; k++) {
    cpu_output *o = &x->outputs[k];
    const hlo_buffer_slot *slot = &a->slots[o->ref.base];
    const hlo_shape *base_shape = &p->comp->instrs[o->ref.base]->shape;
    int64_t bytes = shape_is_array(&o->ins->shape) ? shape_byte_size(&o->ins->shape) : 0;
    if (slot->kind != HLO_BUFFER_ARENA || o->ref.offset != 0 || bytes <= 0 || !shape_is_array(base_shape) ||
        shape_byte_size(base_shape) != bytes)
      continue;
    bool named_before = false;
    for (int j = 0; j < k && !named_before; j++) named_before = x->outputs[j].ref.base == o->ref.base;
    if (named_before) continue;
    if (!p->slot_extra) {
      if (!(p->slot_extra = malloc(((size_t)a->n_slots + 1) * sizeof *p->slot_extra)))
        return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
      for (int i = 0; i < a->n_slots; i++) p->slot_extra[i] = -1;
    }
    p->slot_extra[o->ref.base] = o->direct = p->n_extra++;
  }
  return NULL;
}

/* Fusion groups ops by opcode, but the code generator may lack a case the fusion rules
 * let in (an element type, an attribute; none is known today): a fusion holding one
 * would run through the evaluator as a whole. Such a fusion is split back into its instructions,
 * so only the one the code generator lacks is evaluated and the rest become kernels:
 * relabelled a call (same operands, one called computation), the call inliner does the
 * split. This holds in the entry and in loop bodies and branches alike. */
static kiln_status unfuse_uncompilable(hlo_module *m) {
  bool any = false;
  for (int c = 0; c < m->n_comps; c++) {
    if (m->comps[c]->is_fusion_computation) continue;
    for (int i = 0; i < m->comps[c]->n_instrs; i++) {
      hlo_instr *ins = m->comps[c]->instrs[i];
      if (ins->op != HLO_OP_FUSION || ins->n_called != 1 || cpu_dnnl_supports(ins) ||
          cpu_elemental_supports(ins, NULL))
        continue;
      ins->op = HLO_OP_CALL;
      ins->fusion_kind = NULL;
      any = true;
    }
  }
  bool changed;
  return any ? status_wrap(hlo_pass_call_inliner(m, &changed), "cpu: splitting a fusion") : NULL;
}

/* The persistent cache's side of a compile (cpu_persist.h): its key, and the stored
 * objects when the entry is usable. */
typedef struct persist_state {
  const char *dir; /* NULL: off */
  char *key;
  uint64_t digest[2];
  cpu_jit_object *objs; /* a hit's objects */
  int n_objs;
  bool hit;
} persist_state;

/* Names x's symbols after the persistent key when the cache is on and no live
 * executable of this process has claimed that name (see cpu_persist_claim), and looks
 * the entry up; otherwise the names are the process-unique kiln_x<id>. */
static void persist_begin(cpu_executable *x, const backend_compile_options *opts, const char *fingerprint,
                          persist_state *ps) {
  memset(ps, 0, sizeof *ps);
  snprintf(x->sym, sizeof x->sym, "kiln_x%llu", (unsigned long long)x->id);
  if (!opts->cache_dir || !*opts->cache_dir || !fingerprint) return;
  ps->key = cpu_persist_key(fingerprint, ps->digest);
  if (!ps->key) return;
  if (!cpu_persist_claim(ps->digest[0])) {
    log_info("cpu: compile cache: a live executable of this process has the same key; compiling a twin");
    free(ps->key);
    ps->key = NULL;
    return;
  }
  x->persist_claim = ps->digest[0];
  x->persist_claimed = true;
  snprintf(x->sym, sizeof x->sym, "kiln_p%016llx", (unsigned long long)ps->digest[0]);
  ps->dir = opts->cache_dir;
  ps->hit = cpu_persist_load(ps->dir, ps->key, ps->digest, &ps->objs, &ps->n_objs);
}

/* Turns the kernel modules into x->jit: on a hit the stored objects are linked and the
 * modules' IR is dropped unoptimised (LLVM's optimisation and code generation are what
 * the cache saves); otherwise they are compiled, and with the cache on, stored. The IR
 * is still generated on a hit because building it is cheap and fills the thunks
 * (kernel iteration spaces, native kinds' state): a 4,000-instruction chain takes
 * 10.8 s to compile and 0.24 s for a whole process on a hit, where everything LLVM
 * does (IR building, disposal, linking) is ~16% of the samples (perf). */
static kiln_status persist_jit(cpu_executable *x, kernel_modules *km, persist_state *ps) {
  bool process_specific = false;
  for (int i = 0; i < km->n; i++) process_specific |= cpu_jit_is_process_specific(&km->m[i]);
  if (process_specific && ps->dir) {
    log_info("cpu: compile cache: %s embeds addresses of this process (constants fused into kernels); not "
             "persisted",
             x->module->name);
    ps->hit = false;
    ps->dir = NULL;
  }
  if (ps->hit) {
    kiln_status st = cpu_jit_create_from_objects(ps->objs, ps->n_objs, &x->jit);
    if (!st) {
      kernel_modules_discard(km);
      return NULL;
    }
    log_warning("cpu: compile cache: the stored objects do not link (%s); recompiling", kiln_status_message(st));
    kiln_status_free(st);
  }
  cpu_jit_object *objs = NULL;
  int n_objs = 0;
  kiln_status st = cpu_jit_create_many_keep(km->m, km->n, &x->jit, ps->dir ? &objs : NULL, &n_objs);
  km->n = 0; /* taken */
  if (!st && ps->dir) cpu_persist_store(ps->dir, ps->key, ps->digest, objs, n_objs);
  cpu_jit_objects_free(objs, n_objs);
  return st;
}

/* Instructions a compile must have made (ids are never reused, so next_id counts them,
 * compacted ones included) for it to hand the heap's free pages back afterwards
 * (heap_release_free_pages): some 2 KiB each, so about 4 MiB of IR. A quantized
 * mobilenet's cluster makes 10,700 and frees 20 MiB. */
#define RELEASE_PAGES_AFTER_INSTRS 2048

kiln_status cpu_compile_executable(const hlo_module *m, const backend_compile_options *opts, const char *fingerprint,
                                   cpu_executable **out) {
  *out = NULL;
  cpu_executable *x = calloc(1, sizeof *x);
  if (!x) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  x->profile = opts->profile;
  x->id = __atomic_fetch_add(&next_executable_id, 1, __ATOMIC_RELAXED);
  pthread_mutex_init(&x->run_lock, NULL);
  persist_state ps;
  persist_begin(x, opts, fingerprint, &ps);
  /* The copy borrows the caller's constants while compiling: weights the oneDNN
   * primitives pack are dropped once packed (release_captured_constants) and never
   * copied; what remains gets its own copy at the end, since the caller may release its
   * module as soon as this returns. */
  kiln_status st = hlo_module_clone_borrowing_constants(m, &x->module);
  if (!st) {
    cpu_pipeline_options cpo = cpu_pipeline_options_for_host();
    cpo.excess_precision = opts->allow_excess_precision;
    hlo_pipeline *p = cpu_pipeline_new(&cpo);
    hlo_pipeline_options po = hlo_pipeline_options_default();
    po.dump_to = opts->dump_to;
    po.dump_pass_re = opts->dump_pass_re;
    po.dump_large_constants = opts->dump_large_constants;
    po.disabled_passes = opts->disabled_passes;
    po.compact = true; /* x->module is ours, and nothing points into it yet */
    st = hlo_pipeline_run(p, x->module, &po, NULL);
    hlo_pipeline_free(p);
  }
  if (!st) st = unfuse_uncompilable(x->module);
  /* What the passes replaced goes before the kernels and oneDNN's primitives are made
   * and LLVM compiles: the most memory-hungry phases come next. The free pages go back
   * to the system after a compile that made many instructions (a cluster's module,
   * whose passes freed megabytes), not after each of the small modules op-by-op
   * execution compiles. */
  if (!st) st = hlo_module_compact(x->module);
  if (!st && x->module->next_id >= RELEASE_PAGES_AFTER_INSTRS) heap_release_free_pages();
  kernel_modules km;
  kernel_modules_init(&km, x->module->name);
  km.excess_precision = opts->allow_excess_precision;
  km.outline_math = !st && math_outlined(x->module);
  bool has_kernels = false;
  if (!st) st = build_entry(x, &km, &has_kernels);
  if (!st) st = build_outputs(x);
  if (!st) x->evaluated = describe_evaluated(x);
  if (!st && has_kernels) {
    st = persist_jit(x, &km, &ps); /* takes the modules */
    if (!st) st = each_thunk(x->entry, link_thunk, x);
  } else {
    kernel_modules_discard(&km);
  }
  cpu_jit_objects_free(ps.objs, ps.n_objs);
  free(ps.key);
  if (st) {
    cpu_executable_free(x);
    return st;
  }
  hlo_module_own_constants(x->module);
  *out = x;
  return NULL;
}

