/* The `cpu` backend: XLA:CPU's shape on kiln's pieces.
 *
 * compile() deep-copies the module, runs the cpu pass pipeline (simplification, dot
 * canonicalisation, fusion), and turns the entry computation into a program: buffers
 * assigned in one temp arena (kept with the executable and reused by every run) and a
 * thunk sequence -- a oneDNN primitive for each dot/convolution (and output fusion)
 * oneDNN takes, a generated LLVM kernel for everything else that computes values (one
 * function per fusion or instruction, spread over LLVM modules JIT-compiled in
 * parallel), a native kernel (cpu_native.h: sort, scatter, dynamic-update-slice, ...)
 * where C code calling small generated functions does better than a loop nest, a
 * memmove for copies, nothing for parameters, constants, tuples and aliases. A while
 * loop or conditional becomes a thunk running programs of its own (its condition and
 * body, or its branches), built the same way with their own buffer assignment and
 * arena, so loops run compiled with no per-iteration allocation. An instruction that
 * no path takes runs alone through the evaluator (cpu_eval.c: an evaluator thunk,
 * listed by --profile as "evaluator"), so the rest of the module stays compiled;
 * compile warns once per call naming those instructions. supports() still refuses
 * them, so graph placement keeps such nodes on the interpreter. Only what the evaluator
 * cannot run either (custom-calls, rng, tokens, tuple-shaped parameters, nested-tuple
 * outputs) makes compile answer UNIMPLEMENTED with the instruction and the reason,
 * which lets the caller fall back.
 *
 * Executables are cached by fingerprint (the module's printed text with large constants
 * elided, plus a 128-bit digest of every constant's bytes: printing megabytes of
 * weights as decimal text would cost more than compiling, plus the compile options that
 * change what is built: disabled passes and profiling) and shared: compiling the same
 * module with the same options twice returns the same compiled code. Entries are
 * reference-counted; idle ones are evicted beyond a cap, and everything is freed at
 * exit. execute() is serialised per executable because a oneDNN primitive must not
 * run on two threads at once and the arenas are the executable's; generated kernels
 * themselves are reentrant. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_codegen.h"
#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_quantize.h"
#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_eval.h"
#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/cpu_native.h"
#include "base/log.h"
#include "eval/constant_folding.h"
#include "hlo/buffer_assignment.h"
#include "hlo/passes/pipeline.h"
#include "hlo/printer.h"

/* OpenMP's runtime calls, declared here rather than through <omp.h>: clang builds
 * (fuzzing) compile against gcc's libgomp, whose omp.h clang cannot parse. */
void omp_set_num_threads(int n);
int omp_get_max_threads(void);

#define CPU_ALIGNMENT 64
/* Idle cached executables kept beyond this many are evicted (oldest first). */
#define CPU_CACHE_MAX_ENTRIES 256

typedef enum thunk_kind {
  THUNK_KERNEL,
  THUNK_DNNL,
  THUNK_COPY,
  THUNK_EVAL,
  THUNK_NATIVE,
  THUNK_WHILE,
  THUNK_CONDITIONAL,
} thunk_kind;

/* Where a buffer lives: instruction `base` of the program's computation (its
 * PARAMETER, CONSTANT or ARENA storage) plus a byte offset. */
typedef struct buffer_ref {
  int base;
  int64_t offset;
} buffer_ref;

typedef struct cpu_program cpu_program;

/* How a while thunk moves leaf k of the body's result into the loop state: copy it
 * from the body's own storage, keep it (the body passed the state's leaf k through),
 * or stage it through scratch memory first (the body returns another state leaf, which
 * a direct copy could overwrite before it is read). */
typedef enum leaf_move { LEAF_COPY, LEAF_KEEP, LEAF_STAGE } leaf_move;

typedef struct thunk {
  thunk_kind kind;
  int n_refs;
  buffer_ref *refs; /* [0] the output, [1 + k] operand k; leaf thunks: see add_leaf_thunk */
  int n_out;        /* leaf thunks (evaluator, native, while, conditional): refs[0..n_out) are the result's leaves */
  cpu_eval_op *eval;
  cpu_native *native;
  int kernel; /* THUNK_KERNEL: the function is kiln_x<executable>_k<kernel> */
  cpu_kernel_fn fn;
  cpu_kernel_space space;
  cpu_dnnl_prim *prim;
  int64_t bytes; /* THUNK_COPY */
  /* THUNK_WHILE: progs[0] the condition, progs[1] the body, both reading the loop state
   * (the while's own block) as their parameter. THUNK_CONDITIONAL: one per branch. */
  int n_progs;
  cpu_program **progs;
  int64_t *leaf_bytes;   /* while / conditional: the size of each result leaf */
  leaf_move *moves;      /* while: per state leaf */
  int64_t *stage_at;     /* while: where a LEAF_STAGE leaf waits in scratch */
  int *arg_leaf;         /* conditional: refs index of branch b's operand's first leaf */
  bool *arg_packed;      /* conditional: that operand's leaves already lie packed in one block */
  char *scratch;         /* while: staging; conditional: an operand packed into one block */
  const hlo_instr *ins;  /* what it computes (in the executable's module) */
  int64_t ns, runs;      /* profiling: time spent and executions */
} thunk;

/* One computation turned into thunks: the entry, or a loop's condition and body, or a
 * conditional's branch. Each has its own buffer assignment and arena (allocated on its
 * first run, kept); a sub-program's parameter is the block its caller passes, and its
 * result is the root's leaves, which the caller copies out. */
struct cpu_program {
  const hlo_computation *comp;
  hlo_buffer_assignment *assignment;
  int n_thunks;
  thunk *thunks;
  int n_results;
  buffer_ref *results; /* sub-programs: the root's array leaves, depth-first */
  char *arena;
};

typedef struct cpu_executable {
  uint64_t id;       /* unique per process: kernel symbols are kiln_x<id>_k<kernel> */
  char *fingerprint; /* printed module text */
  uint64_t hash;
  int refs;
  bool profile; /* time every thunk; print the summary when the last user releases it */
  hlo_module *module; /* the compiled clone; constants live here */
  cpu_program *entry;
  int n_kernels;
  cpu_jit *jit;
  int n_outputs;
  buffer_ref *outputs;
  char *evaluated; /* the warning naming the evaluator thunks (repeated by every compile), or NULL */
  int n_evaluated;  /* how many thunks that is */
  pthread_mutex_t run_lock; /* one run at a time: the arenas are the executable's */
  struct cpu_executable *next; /* cache list, most recently used first */
} cpu_executable;

struct backend_executable {
  cpu_executable *x;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_executable_id;
static cpu_executable *cache_head;
static int cache_size;

/* ------------------------------------------------------------- supports -------- */

/* A value made of arrays and tuples of them (no tokens). */
static bool arrays_and_tuples(const hlo_shape *s) {
  if (!shape_is_tuple(s)) return shape_is_array(s);
  for (int k = 0; k < s->n_elems; k++)
    if (!arrays_and_tuples(&s->elems[k])) return false;
  return true;
}

/* Values with a packed block of their own, which an output tuple can copy out. */
static bool has_packed_result(const hlo_instr *ins) {
  return shape_is_array(&ins->shape) || ins->op == HLO_OP_REDUCE || ins->op == HLO_OP_WHILE ||
         ins->op == HLO_OP_CONDITIONAL;
}

static bool supported_plumbing(const hlo_instr *ins) {
  bool entry = ins->parent && ins->parent->is_entry;
  switch (ins->op) {
    /* The entry's arguments are arrays; a loop body's or branch's parameter is the
     * packed block its caller hands over. */
    case HLO_OP_PARAMETER: return entry ? shape_is_array(&ins->shape) : arrays_and_tuples(&ins->shape);
    case HLO_OP_CONSTANT: return shape_is_array(&ins->shape);
    /* The entry's outputs are copied out one level deep: its root tuple may hold arrays
     * and packed results, not other `tuple`s. Other tuples only group leaves. */
    case HLO_OP_TUPLE:
      for (int k = 0; k < ins->n_operands; k++)
        if (entry && ins == ins->parent->root ? !has_packed_result(ins->operands[k])
                                              : !arrays_and_tuples(&ins->operands[k]->shape))
          return false;
      return true;
    case HLO_OP_GET_TUPLE_ELEMENT: return arrays_and_tuples(&ins->shape);
    /* Their computations' instructions are asked about one by one. */
    case HLO_OP_WHILE:
    case HLO_OP_CONDITIONAL: return arrays_and_tuples(&ins->shape);
    default: return false;
  }
}

static bool cpu_supports(const backend *b, const hlo_instr *ins) {
  (void)b;
  return supported_plumbing(ins) || cpu_dnnl_supports(ins) || cpu_elemental_supports(ins, NULL) ||
         cpu_native_supports(ins, NULL);
}

/* ------------------------------------------------------------- executables ----- */

/* --profile: where an executable's run time went, per thunk, most expensive first. */
static int by_time(const void *a, const void *b) {
  const thunk *x = *(const thunk *const *)a, *y = *(const thunk *const *)b;
  return (x->ns < y->ns) - (x->ns > y->ns);
}

/* "kLoop" etc. for a fusion thunk, "" otherwise. */
static const char *fusion_kind_of(const thunk *t) {
  return t->ins->op == HLO_OP_FUSION && t->ins->fusion_kind ? t->ins->fusion_kind : "";
}

typedef struct profile_group {
  int kind;
  const char *op, *fusion_kind;
  int n;
  int64_t ns;
} profile_group;

static int group_by_time(const void *a, const void *b) {
  const profile_group *x = a, *y = b;
  return (x->ns < y->ns) - (x->ns > y->ns);
}

/* Every thunk of program p and of the programs its loops and conditionals run. */
static int count_thunks(const cpu_program *p) {
  int n = p->n_thunks;
  for (int i = 0; i < p->n_thunks; i++)
    for (int k = 0; k < p->thunks[i].n_progs; k++) n += count_thunks(p->thunks[i].progs[k]);
  return n;
}

static void gather_thunks(const cpu_program *p, const thunk **out, int *n) {
  for (int i = 0; i < p->n_thunks; i++) {
    out[(*n)++] = &p->thunks[i];
    for (int k = 0; k < p->thunks[i].n_progs; k++) gather_thunks(p->thunks[i].progs[k], out, n);
  }
}

static bool is_control(const thunk *t) { return t->kind == THUNK_WHILE || t->kind == THUNK_CONDITIONAL; }

static void print_profile(const cpu_executable *x) {
  int64_t total = 0, runs = 0;
  const cpu_program *entry = x->entry;
  for (int i = 0; i < entry->n_thunks; i++) {
    total += entry->thunks[i].ns;
    if (entry->thunks[i].runs > runs) runs = entry->thunks[i].runs;
  }
  if (runs == 0 || total == 0) return;
  int n = count_thunks(entry), m = 0;
  const thunk **order = malloc(((size_t)n + 1) * sizeof *order);
  if (!order) return;
  gather_thunks(entry, order, &m);
  qsort(order, (size_t)n, sizeof *order, by_time);
  static const char *const kinds[] = {"kernel", "onednn", "copy", "evaluator", "native", "loop", "branch"};
  fprintf(stderr, "cpu profile of %s: %d thunks, %.3f ms per run over %lld runs; the most expensive%s:\n",
          x->module->name, n, (double)total / 1e6 / (double)runs, (long long)runs,
          n > entry->n_thunks ? " (a loop's or conditional's time includes the thunks it runs)" : "");
  for (int i = 0; i < n && i < 15; i++) {
    const thunk *t = order[i];
    char *shape = shape_to_string(&t->ins->shape);
    const char *fk = fusion_kind_of(t);
    fprintf(stderr, "  %6.2f%%  %9.3f ms  %-6s %s %s%s%s %s\n", 100.0 * (double)t->ns / (double)total,
            (double)t->ns / 1e6 / (double)runs, kinds[t->kind], t->ins->name,
            hlo_opcode_name(t->ins->op), fk[0] ? ":" : "", fk, shape);
    free(shape);
  }
  /* Then the whole run by what computes it (kernel fusion:kLoop, onednn convolution,
   * ...), so the shares of the thunks below the top ones are visible too. Loops and
   * conditionals are left out: their time is that of the thunks they run. */
  profile_group *groups = calloc((size_t)n + 1, sizeof *groups);
  int n_groups = 0;
  for (int i = 0; groups && i < n; i++) {
    const thunk *t = order[i];
    if (is_control(t)) continue;
    const char *op = hlo_opcode_name(t->ins->op);
    const char *fk = fusion_kind_of(t);
    int g = 0;
    while (g < n_groups && !(groups[g].kind == (int)t->kind && strcmp(groups[g].op, op) == 0 &&
                             strcmp(groups[g].fusion_kind, fk) == 0))
      g++;
    if (g == n_groups) groups[n_groups++] = (profile_group){(int)t->kind, op, fk, 0, 0};
    groups[g].n++;
    groups[g].ns += t->ns;
  }
  if (n_groups) qsort(groups, (size_t)n_groups, sizeof *groups, group_by_time);
  if (n_groups) fprintf(stderr, "  by kind:\n");
  for (int g = 0; g < n_groups; g++)
    fprintf(stderr, "  %6.2f%%  %9.3f ms  %-6s %s%s%s (%d)\n", 100.0 * (double)groups[g].ns / (double)total,
            (double)groups[g].ns / 1e6 / (double)runs, kinds[groups[g].kind], groups[g].op,
            groups[g].fusion_kind[0] ? ":" : "", groups[g].fusion_kind, groups[g].n);
  free(groups);
  free(order);
}

static void program_free(cpu_program *p);

static void thunk_free(thunk *t) {
  free(t->refs);
  if (t->prim) cpu_dnnl_destroy(t->prim);
  cpu_eval_destroy(t->eval);
  cpu_native_destroy(t->native);
  for (int k = 0; k < t->n_progs; k++) program_free(t->progs[k]);
  free(t->progs);
  free(t->leaf_bytes);
  free(t->moves);
  free(t->stage_at);
  free(t->arg_leaf);
  free(t->arg_packed);
  free(t->scratch);
  memset(t, 0, sizeof *t);
}

static void program_free(cpu_program *p) {
  if (!p) return;
  for (int i = 0; i < p->n_thunks; i++) thunk_free(&p->thunks[i]);
  free(p->thunks);
  free(p->results);
  if (p->assignment) hlo_buffer_assignment_free(p->assignment);
  free(p->arena);
  free(p);
}

static void executable_free(cpu_executable *x) {
  if (!x) return;
  program_free(x->entry); /* its native kernels hold addresses of code in the JIT */
  free(x->outputs);
  cpu_jit_destroy(x->jit);
  if (x->module) hlo_module_free(x->module);
  pthread_mutex_destroy(&x->run_lock);
  free(x->evaluated);
  free(x->fingerprint);
  free(x);
}

/* Two independent 64-bit hashes of a byte range, together a 128-bit digest. The bytes
 * are read eight at a time into four independent multiply-xorshift lanes (two per
 * hash, over alternate words), folded at the end: the digest covers every constant of
 * the module, ~100 MB for resnet50, and a byte-at-a-time FNV loop (one dependent
 * multiply per byte per hash) spent ~0.2 s of its compile there. */
static uint64_t mix_word(uint64_t h, uint64_t w, uint64_t k, int shift) {
  h = (h ^ w) * k;
  return h ^ (h >> shift);
}

static void digest_bytes(const unsigned char *p, size_t n, uint64_t *h1, uint64_t *h2) {
  const uint64_t k1 = 0x9e3779b97f4a7c15ull, k2 = 0xc2b2ae3d27d4eb4full;
  uint64_t a0 = *h1, a1 = *h1 ^ 0x243f6a8885a308d3ull, b0 = *h2, b1 = *h2 ^ 0x13198a2e03707344ull;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t w0, w1;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + i + 8, 8);
    a0 = mix_word(a0, w0, k1, 29);
    a1 = mix_word(a1, w1, k1, 29);
    b0 = mix_word(b0, (w0 << 31) | (w0 >> 33), k2, 32);
    b1 = mix_word(b1, (w1 << 31) | (w1 >> 33), k2, 32);
  }
  uint64_t tail = 0; /* the last 0..15 bytes, with the length so that trailing zeros count */
  for (; i < n; i++) tail = (tail ^ p[i]) * 1099511628211ull;
  tail ^= (uint64_t)n;
  a0 = mix_word(mix_word(a0, a1, k1, 29), tail, k1, 29);
  b0 = mix_word(mix_word(b0, b1, k2, 32), tail, k2, 32);
  *h1 = a0;
  *h2 = b0;
}

/* The cache key: the module text with large constants elided, then the byte length
 * and digest of every constant's data in print order, then the options that change the
 * executable (dump options do not: a cache hit simply writes no dumps). */
static char *fingerprint_module(const hlo_module *m, const backend_compile_options *opts, uint64_t *hash) {
  hlo_print_options po = hlo_print_options_default();
  po.print_metadata = false;
  po.print_large_constants = false;
  char *text = hlo_module_to_string(m, &po);
  strbuf b;
  strbuf_init(&b);
  strbuf_append(&b, text);
  free(text);
  for (int c = 0; c < m->n_comps; c++) {
    const hlo_computation *comp = m->comps[c];
    for (int i = 0; i < comp->n_instrs; i++) {
      const hlo_literal *l = comp->instrs[i]->literal;
      if (!l || !l->data) continue;
      int64_t bytes = shape_byte_size(&l->shape);
      uint64_t h1 = 1469598103934665603ull, h2 = 0x84222325cbf29ce4ull;
      digest_bytes(l->data, (size_t)bytes, &h1, &h2);
      strbuf_printf(&b, "\n#%lld:%016llx%016llx", (long long)bytes, (unsigned long long)h1, (unsigned long long)h2);
    }
  }
  if (opts->disabled_passes && *opts->disabled_passes) strbuf_printf(&b, "\n#disabled:%s", opts->disabled_passes);
  if (opts->profile) strbuf_append(&b, "\n#profile");
  char *key = strbuf_take(&b);
  uint64_t h1 = 1469598103934665603ull, h2 = 0;
  digest_bytes((const unsigned char *)key, strlen(key), &h1, &h2);
  *hash = h1;
  return key;
}

/* ------------------------------------------------------------- module copy ----- */

static const char *copy_str(arena *a, const char *s) { return s ? arena_strdup(a, s) : NULL; }
static hlo_ints copy_ints(arena *a, hlo_ints v) { return v.n ? hlo_ints_make(a, v.n, v.v) : v; }

static hlo_raw_attr *copy_raw_attrs(arena *a, int n, const hlo_raw_attr *src) {
  if (!n) return NULL;
  hlo_raw_attr *r = arena_calloc(a, (size_t)n, sizeof *r);
  for (int i = 0; i < n; i++) {
    r[i].key = copy_str(a, src[i].key);
    r[i].value = copy_str(a, src[i].value);
  }
  return r;
}

/* Re-points every pointer of a struct-copied instruction at storage of module a. Plain
 * fields came with the struct copy, so attributes added to hlo_instr later are copied
 * too; only pointer fields need a line here. */
static void copy_instr_pointers(arena *a, hlo_instr *d) {
  d->dimensions = copy_ints(a, d->dimensions);
  d->slice_start = copy_ints(a, d->slice_start);
  d->slice_limit = copy_ints(a, d->slice_limit);
  d->slice_stride = copy_ints(a, d->slice_stride);
  d->dynamic_slice_sizes = copy_ints(a, d->dynamic_slice_sizes);
  d->pad_lo = copy_ints(a, d->pad_lo);
  d->pad_hi = copy_ints(a, d->pad_hi);
  d->pad_interior = copy_ints(a, d->pad_interior);
  d->dot.lhs_batch = copy_ints(a, d->dot.lhs_batch);
  d->dot.rhs_batch = copy_ints(a, d->dot.rhs_batch);
  d->dot.lhs_contracting = copy_ints(a, d->dot.lhs_contracting);
  d->dot.rhs_contracting = copy_ints(a, d->dot.rhs_contracting);
  d->gather.offset_dims = copy_ints(a, d->gather.offset_dims);
  d->gather.collapsed_slice_dims = copy_ints(a, d->gather.collapsed_slice_dims);
  d->gather.start_index_map = copy_ints(a, d->gather.start_index_map);
  d->gather.operand_batching_dims = copy_ints(a, d->gather.operand_batching_dims);
  d->gather.start_indices_batching_dims = copy_ints(a, d->gather.start_indices_batching_dims);
  d->gather_slice_sizes = copy_ints(a, d->gather_slice_sizes);
  d->scatter.update_window_dims = copy_ints(a, d->scatter.update_window_dims);
  d->scatter.inserted_window_dims = copy_ints(a, d->scatter.inserted_window_dims);
  d->scatter.scatter_dims_to_operand_dims = copy_ints(a, d->scatter.scatter_dims_to_operand_dims);
  d->scatter.input_batching_dims = copy_ints(a, d->scatter.input_batching_dims);
  d->scatter.scatter_indices_batching_dims = copy_ints(a, d->scatter.scatter_indices_batching_dims);
  d->custom_call_target = copy_str(a, d->custom_call_target);
  d->fusion_kind = copy_str(a, d->fusion_kind);
  d->raw_attrs = copy_raw_attrs(a, d->n_raw_attrs, d->raw_attrs);
  d->metadata = copy_str(a, d->metadata);
  d->user_data = NULL;
}

static int computation_index(const hlo_module *m, const hlo_computation *c) {
  for (int i = 0; i < m->n_comps; i++)
    if (m->comps[i] == c) return i;
  return -1;
}

/* A deep copy of src that shares nothing with it (the executable outlives the caller's
 * module and the pipeline rewrites its copy). */
static kiln_status clone_module(const hlo_module *src, hlo_module **out) {
  hlo_module *m = hlo_module_new(src->name);
  arena *a = m->arena;
  m->n_raw_attrs = src->n_raw_attrs;
  m->raw_attrs = copy_raw_attrs(a, src->n_raw_attrs, src->raw_attrs);
  m->stack_frames = copy_str(a, src->stack_frames);
  hlo_instr **map = calloc((size_t)src->next_id + 1, sizeof *map);
  if (!map) {
    hlo_module_free(m);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int c = 0; c < src->n_comps; c++) {
    hlo_computation *dc = hlo_computation_new(m, src->comps[c]->name);
    dc->is_entry = src->comps[c]->is_entry;
    dc->is_fusion_computation = src->comps[c]->is_fusion_computation;
    if (src->comps[c] == src->entry) m->entry = dc;
  }
  kiln_status st = NULL;
  for (int c = 0; c < src->n_comps && !st; c++) {
    const hlo_computation *sc = src->comps[c];
    hlo_computation *dc = m->comps[c];
    for (int i = 0; i < sc->n_instrs && !st; i++) {
      const hlo_instr *si = sc->instrs[i];
      if (si->id < 0 || si->id >= src->next_id) {
        st = status_error(KILN_INTERNAL, "cpu: instruction %s has id %d outside the module's range", si->name, si->id);
        break;
      }
      hlo_instr *d = hlo_instr_new(dc, si->op, &si->shape, si->name);
      hlo_instr fresh = *d;
      *d = *si;
      d->id = fresh.id;
      d->name = fresh.name;
      d->parent = dc;
      d->shape = fresh.shape;
      d->literal = NULL;
      copy_instr_pointers(a, d);
      hlo_instr **ops = calloc((size_t)si->n_operands + 1, sizeof *ops);
      hlo_computation **called = calloc((size_t)si->n_called + 1, sizeof *called);
      if (!ops || !called) st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
      for (int k = 0; !st && k < si->n_operands; k++) {
        ops[k] = map[si->operands[k]->id];
        if (!ops[k]) st = status_error(KILN_INTERNAL, "cpu: %s uses %s before its definition", si->name, si->operands[k]->name);
      }
      for (int k = 0; !st && k < si->n_called; k++) {
        int ci = computation_index(src, si->called[k]);
        if (ci < 0) st = status_error(KILN_INTERNAL, "cpu: %s calls a computation outside the module", si->name);
        else called[k] = m->comps[ci];
      }
      if (!st) {
        hlo_instr_set_operands(d, si->n_operands, ops);
        hlo_instr_set_called(d, si->n_called, called);
        if (si->literal) {
          hlo_literal *l = literal_clone(si->literal);
          if (!l) st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory copying constant %s", si->name);
          else hlo_instr_set_literal(d, l);
        }
      }
      free(ops);
      free(called);
      map[si->id] = d;
    }
    if (!st) dc->root = sc->root ? map[sc->root->id] : NULL;
    if (!st) st = hlo_computation_index_params(dc);
  }
  free(map);
  if (st) {
    hlo_module_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

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

static kiln_status kernel_module_for(kernel_modules *km, const hlo_instr *ins, cpu_jit_module **out) {
  int64_t code = 1;
  if (ins->op == HLO_OP_FUSION && ins->n_called == 1) code = ins->called[0]->n_instrs;
  int best = -1;
  if (km->n < km->max) {
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
  char prefix[48];
  snprintf(prefix, sizeof prefix, "kiln_x%llu_n%d_", (unsigned long long)x->id, x->n_kernels++);
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

/* Constants that oneDNN primitives capture when they are created (weights reordered
 * into their own blocked copy, biases and other operands copied) are never read from
 * the module again, so their literal data is released once the last primitive reading
 * them exists: a compile then holds each weight once, not twice (vit_b_16: ~330 MB).
 * readers[i] counts the operand slots reading constant i of the entry; creating a
 * primitive that captures the constant takes its slots off, and any other reader (a
 * kernel, an alias such as a reshape, a tuple, the root) is never taken off, which pins
 * the data. Constants of loop bodies and branches are left alone (readers is NULL
 * there). */
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
    if (--readers[i] == 0) {
      free(c->literal->data);
      c->literal->data = NULL;
    }
  }
}

/* The shape of array leaf k of s, depth-first. */
static const hlo_shape *leaf_shape(const hlo_shape *s, int k) {
  if (!shape_is_tuple(s)) return s;
  for (int e = 0; e < s->n_elems; e++) {
    int n = cpu_eval_leaf_count(&s->elems[e]);
    if (k < n) return leaf_shape(&s->elems[e], k);
    k -= n;
  }
  return s;
}

static kiln_status build_program(cpu_executable *x, kernel_modules *km, const hlo_computation *comp, int *readers,
                                 bool *has_kernels, cpu_program **out);

/* The sizes of the result's leaves, for the copies control thunks make. */
static kiln_status set_leaf_bytes(thunk *t) {
  t->leaf_bytes = calloc((size_t)t->n_out + 1, sizeof *t->leaf_bytes);
  if (!t->leaf_bytes) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < t->n_out; k++) t->leaf_bytes[k] = shape_byte_size(leaf_shape(&t->ins->shape, k));
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

/* A loop carrying a buffer it updates one slice of per step (a scan's stacked outputs)
 * would copy the whole buffer twice per iteration: the dynamic-update-slice into its
 * own block, then that block back into the state. When the body's result leaf k is a
 * dynamic-update-slice of state leaf k, and nothing after it in the body reads that
 * leaf or the slice's own result, the slice writes straight into the state: its output
 * is redirected to the leaf (the native kernel then copies only the window) and the
 * leaf stays where it is. */
static void update_state_in_place(thunk *w, int k) {
  if (w->moves[k] != LEAF_COPY) return;
  cpu_program *body = w->progs[1];
  buffer_ref src = body->results[k];
  int at = -1;
  for (int i = 0; i < body->n_thunks && at < 0; i++)
    if (body->thunks[i].kind == THUNK_NATIVE && body->thunks[i].ins->op == HLO_OP_DYNAMIC_UPDATE_SLICE &&
        same_ref(body->thunks[i].refs[0], src))
      at = i;
  if (at < 0) return;
  thunk *t = &body->thunks[at];
  buffer_ref leaf = t->refs[t->n_out]; /* operand 0 */
  int64_t lo = cpu_eval_leaf_offset(&w->ins->shape, k, CPU_ALIGNMENT), hi = lo + w->leaf_bytes[k];
  if (body->assignment->slots[leaf.base].kind != HLO_BUFFER_PARAMETER || leaf.offset != lo) return;
  if (touched_from(body, at + 1, leaf.base, lo, hi) || touched_from(body, at + 1, src.base, 0, INT64_MAX)) return;
  for (int j = 0; j < w->n_out; j++) {
    const buffer_ref *r = &body->results[j];
    if (j == k) continue;
    if (same_ref(*r, src) || (r->base == leaf.base && r->offset >= lo && r->offset < hi)) return;
  }
  t->refs[0] = leaf;
  body->results[k] = leaf;
  w->moves[k] = LEAF_KEEP;
}

/* A while loop run natively: the condition and the body become programs of their own
 * that take the loop state -- the while's own packed block -- as their parameter. The
 * init value is copied into the block once; after each body run its result leaves are
 * moved into the block (see leaf_move), so the state never lives anywhere else. */
static kiln_status build_while(cpu_executable *x, kernel_modules *km, cpu_program *p, thunk *t, bool *has_kernels) {
  const hlo_instr *ins = t->ins;
  if (ins->n_called != 2 || ins->n_operands != 1 || t->n_out == 0)
    return ERR_UNIMPLEMENTED("cpu: %s: not a while with a condition, a body and state", ins->name);
  t->progs = calloc(2, sizeof *t->progs);
  if (!t->progs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  t->n_progs = 2;
  TRY(build_program(x, km, ins->called[0], NULL, has_kernels, &t->progs[0]));
  TRY(build_program(x, km, ins->called[1], NULL, has_kernels, &t->progs[1]));
  const cpu_program *cond = t->progs[0], *body = t->progs[1];
  if (cond->n_results != 1 || leaf_shape(&cond->comp->root->shape, 0)->type != HLO_PRED)
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
    thunk_free(t);
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
    } else if (cpu_dnnl_supports(ins)) {
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
      char name[48];
      snprintf(name, sizeof name, "kiln_x%llu_k%d", (unsigned long long)x->id, t->kernel);
      cpu_jit_module *jm;
      TRY(kernel_module_for(km, ins, &jm));
      TRY(cpu_codegen_add_kernel(jm, ins, name, &t->space));
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
    program_free(p);
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
  if (t->kind != THUNK_KERNEL) return NULL;
  char name[48];
  snprintf(name, sizeof name, "kiln_x%llu_k%d", (unsigned long long)x->id, t->kernel);
  void *addr;
  TRY(cpu_jit_lookup(x->jit, name, &addr));
  t->fn = (cpu_kernel_fn)addr;
  return NULL;
}

static kiln_status build_outputs(cpu_executable *x) {
  const cpu_program *p = x->entry;
  const hlo_buffer_assignment *a = p->assignment;
  x->n_outputs = a->n_outputs;
  x->outputs = calloc((size_t)a->n_outputs + 1, sizeof *x->outputs);
  if (!x->outputs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < a->n_outputs; k++) {
    const hlo_instr *ins = p->comp->instrs[a->output_instr[k]];
    /* Only a packed tuple (a variadic reduce, a while, ...) can be copied out leaf by
     * leaf; a `tuple` instruction inside the root tuple has no block of its own. */
    if (ins->op == HLO_OP_TUPLE)
      return status_error(KILN_UNIMPLEMENTED, "cpu: output %s (%s) is a nested tuple", ins->name,
                          hlo_opcode_name(ins->op));
    TRY(resolve(p->comp, a, ins, &x->outputs[k]));
  }
  return NULL;
}

/* Fusion groups the ops the code generator has rules for by opcode, but it lacks a few
 * of them (reduce-precision, some element types): a fusion holding one would run
 * through the evaluator as a whole. Such a fusion is split back into its instructions,
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

static kiln_status compile_module(const hlo_module *m, const backend_compile_options *opts, char *fingerprint,
                                  uint64_t hash, cpu_executable **out) {
  cpu_executable *x = calloc(1, sizeof *x);
  if (!x) {
    free(fingerprint);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  x->fingerprint = fingerprint;
  x->hash = hash;
  x->profile = opts->profile;
  x->id = __atomic_fetch_add(&next_executable_id, 1, __ATOMIC_RELAXED);
  pthread_mutex_init(&x->run_lock, NULL);
  kiln_status st = clone_module(m, &x->module);
  if (!st) {
    hlo_pipeline *p = hlo_pipeline_new_cpu(eval_pass_constant_folding, cpu_pass_quantized_products);
    hlo_pipeline_options po = hlo_pipeline_options_default();
    po.dump_to = opts->dump_to;
    po.dump_pass_re = opts->dump_pass_re;
    po.dump_large_constants = opts->dump_large_constants;
    po.disabled_passes = opts->disabled_passes;
    st = hlo_pipeline_run(p, x->module, &po, NULL);
    hlo_pipeline_free(p);
  }
  if (!st) st = unfuse_uncompilable(x->module);
  kernel_modules km;
  kernel_modules_init(&km, x->module->name);
  bool has_kernels = false;
  if (!st) st = build_entry(x, &km, &has_kernels);
  if (!st) st = build_outputs(x);
  if (!st) x->evaluated = describe_evaluated(x);
  if (!st && has_kernels) {
    st = cpu_jit_create_many(km.m, km.n, &x->jit); /* takes the modules */
    km.n = 0;
    if (!st) st = each_thunk(x->entry, link_thunk, x);
  } else {
    kernel_modules_discard(&km);
  }
  if (st) {
    executable_free(x);
    return st;
  }
  *out = x;
  return NULL;
}

/* Drops idle entries beyond the cap, least recently used first. Called locked. */
static void cache_trim(void) {
  while (cache_size > CPU_CACHE_MAX_ENTRIES) {
    cpu_executable **victim = NULL;
    for (cpu_executable **p = &cache_head; *p; p = &(*p)->next)
      if ((*p)->refs == 0) victim = p;
    if (!victim) return;
    cpu_executable *x = *victim;
    *victim = x->next;
    cache_size--;
    executable_free(x);
  }
}

/* At exit: the cached executables first, then the JIT that holds their code. */
__attribute__((destructor)) static void cache_free_all(void) {
  while (cache_head) {
    cpu_executable *x = cache_head;
    cache_head = x->next;
    executable_free(x);
  }
  cache_size = 0;
  cpu_jit_shutdown();
}

static kiln_status cpu_compile(const backend *b, const hlo_module *m, const backend_compile_options *opts,
                               backend_executable **out) {
  (void)b;
  *out = NULL;
  backend_compile_options defaults = backend_compile_options_default();
  if (!opts) opts = &defaults;
  backend_executable *h = malloc(sizeof *h);
  if (!h) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  uint64_t hash;
  char *text = fingerprint_module(m, opts, &hash);

  pthread_mutex_lock(&cache_lock);
  for (cpu_executable **p = &cache_head; *p; p = &(*p)->next) {
    cpu_executable *x = *p;
    if (x->hash == hash && strcmp(x->fingerprint, text) == 0) {
      *p = x->next; /* move to the front */
      x->next = cache_head;
      cache_head = x;
      x->refs++;
      pthread_mutex_unlock(&cache_lock);
      free(text);
      if (x->evaluated) log_warning("%s", x->evaluated);
      h->x = x;
      *out = h;
      return NULL;
    }
  }
  pthread_mutex_unlock(&cache_lock);

  /* Compiled unlocked: two threads may compile the same module; the second insert
   * then simply adds a twin, which is harmless. */
  cpu_executable *x = NULL;
  kiln_status st = compile_module(m, opts, text, hash, &x);
  if (st) {
    free(h);
    return st;
  }
  if (x->evaluated) log_warning("%s", x->evaluated);
  pthread_mutex_lock(&cache_lock);
  x->refs = 1;
  x->next = cache_head;
  cache_head = x;
  cache_size++;
  cache_trim();
  pthread_mutex_unlock(&cache_lock);
  h->x = x;
  *out = h;
  return NULL;
}

static void cpu_destroy(backend_executable *h) {
  if (!h) return;
  pthread_mutex_lock(&cache_lock);
  h->x->refs--;
  if (h->x->refs == 0 && h->x->profile) print_profile(h->x);
  cache_trim();
  pthread_mutex_unlock(&cache_lock);
  free(h);
}

int cpu_backend_cache_size(void) {
  pthread_mutex_lock(&cache_lock);
  int n = cache_size;
  pthread_mutex_unlock(&cache_lock);
  return n;
}

/* ------------------------------------------------------------- threads --------- */

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int default_threads;

static void read_default_threads(void) { default_threads = omp_get_max_threads(); }

void cpu_backend_set_threads(int n) {
  pthread_once(&threads_once, read_default_threads);
  omp_set_num_threads(n > 0 ? n : default_threads);
}

int cpu_backend_threads(void) {
  pthread_once(&threads_once, read_default_threads);
  return omp_get_max_threads();
}

/* ------------------------------------------------------------- execute --------- */

static kiln_status check_args(const hlo_computation *entry, hlo_literal *const *args, int n_args) {
  if (n_args != entry->n_params)
    return status_error(KILN_INVALID_ARGUMENT, "cpu: expected %d arguments, got %d", entry->n_params, n_args);
  for (int p = 0; p < n_args; p++) {
    const hlo_shape *want = &entry->params[p]->shape;
    if (!args[p] || !shape_compatible(&args[p]->shape, want)) {
      char *w = shape_to_string(want);
      char *g = args[p] ? shape_to_string(&args[p]->shape) : NULL;
      kiln_status st = status_error(KILN_INVALID_ARGUMENT, "cpu: argument %d (%s) has shape %s, expected %s", p,
                                    entry->params[p]->name, g ? g : "(null)", w);
      free(w);
      free(g);
      return st;
    }
  }
  return NULL;
}

/* The address of a buffer of program p, whose parameters are at params[]. */
static char *buffer_address(const cpu_program *p, char *const *params, buffer_ref r) {
  const hlo_buffer_slot *slot = &p->assignment->slots[r.base];
  char *a;
  switch (slot->kind) {
    case HLO_BUFFER_PARAMETER: a = params[slot->param_index]; break;
    case HLO_BUFFER_CONSTANT: a = p->comp->instrs[r.base]->literal->data; break;
    default: a = p->arena + slot->offset; break;
  }
  return a ? a + r.offset : NULL; /* NULL: a constant a primitive captured (never read) */
}

static kiln_status run_program(cpu_executable *x, cpu_program *p, char *const *params);

/* bufs[0..n_out): the state leaves (the while's block); bufs[n_out..): the init's. */
static kiln_status run_while(cpu_executable *x, thunk *t, char *const *bufs) {
  for (int k = 0; k < t->n_out; k++)
    if (bufs[k] != bufs[t->n_out + k]) memmove(bufs[k], bufs[t->n_out + k], (size_t)t->leaf_bytes[k]);
  char *state = bufs[0]; /* leaf 0 sits at the start of the block */
  cpu_program *cond = t->progs[0], *body = t->progs[1];
  for (;;) {
    TRY(run_program(x, cond, &state));
    if (!*(const uint8_t *)buffer_address(cond, &state, cond->results[0])) return NULL;
    TRY(run_program(x, body, &state));
    /* Leaves the body took from other state leaves are read before any is written. */
    for (int k = 0; k < t->n_out; k++)
      if (t->moves[k] == LEAF_STAGE)
        memcpy(t->scratch + t->stage_at[k], buffer_address(body, &state, body->results[k]), (size_t)t->leaf_bytes[k]);
    for (int k = 0; k < t->n_out; k++) {
      if (t->moves[k] == LEAF_COPY)
        memcpy(bufs[k], buffer_address(body, &state, body->results[k]), (size_t)t->leaf_bytes[k]);
      else if (t->moves[k] == LEAF_STAGE)
        memcpy(bufs[k], t->scratch + t->stage_at[k], (size_t)t->leaf_bytes[k]);
    }
  }
}

/* bufs[0..n_out): the result's leaves; then the selector, then each branch operand's
 * leaves. Out-of-range s32 selectors run the last branch, as XLA specifies. */
static kiln_status run_conditional(cpu_executable *x, thunk *t, char *const *bufs) {
  int n = t->n_progs, b;
  if (t->ins->operands[0]->shape.type == HLO_PRED) {
    b = *(const uint8_t *)bufs[t->n_out] ? 0 : 1;
  } else {
    int32_t v;
    memcpy(&v, bufs[t->n_out], sizeof v);
    b = v < 0 || v >= n ? n - 1 : v;
  }
  const hlo_instr *operand = t->ins->operands[b + 1];
  char *arg = t->scratch;
  if (t->arg_packed[b]) {
    arg = bufs[t->arg_leaf[b]];
  } else {
    int leaves = cpu_eval_leaf_count(&operand->shape);
    for (int k = 0; k < leaves; k++)
      memcpy(arg + cpu_eval_leaf_offset(&operand->shape, k, CPU_ALIGNMENT), bufs[t->arg_leaf[b] + k],
             (size_t)shape_byte_size(leaf_shape(&operand->shape, k)));
  }
  cpu_program *branch = t->progs[b];
  TRY(run_program(x, branch, &arg));
  for (int k = 0; k < t->n_out; k++)
    memmove(bufs[k], buffer_address(branch, &arg, branch->results[k]), (size_t)t->leaf_bytes[k]);
  return NULL;
}

static kiln_status run_program(cpu_executable *x, cpu_program *p, char *const *params) {
  int64_t bytes = (p->assignment->arena_bytes + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
  /* Allocated on the first run and kept: fresh memory would page-fault on every run. */
  if (bytes > 0 && !p->arena && !(p->arena = aligned_alloc(CPU_ALIGNMENT, (size_t)bytes)))
    return status_error(KILN_RESOURCE_EXHAUSTED, "cpu: cannot allocate a %lld-byte arena", (long long)bytes);
  char *ptrs[64];
  char **bufs = ptrs;
  for (int i = 0; i < p->n_thunks; i++) {
    thunk *t = &p->thunks[i];
    if (t->n_refs > 64) {
      bufs = malloc((size_t)t->n_refs * sizeof *bufs);
      if (!bufs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
    for (int k = 0; k < t->n_refs; k++) bufs[k] = buffer_address(p, params, t->refs[k]);
    kiln_status st = NULL;
    struct timespec t0 = {0}, t1;
    if (x->profile) clock_gettime(CLOCK_MONOTONIC, &t0);
    switch (t->kind) {
      case THUNK_KERNEL: cpu_kernel_run(t->fn, bufs, &t->space); break;
      case THUNK_COPY:
        if (bufs[0] != bufs[1]) memmove(bufs[0], bufs[1], (size_t)t->bytes);
        break;
      case THUNK_DNNL: st = cpu_dnnl_execute(t->prim, (void *const *)(bufs + 1), bufs[0]); break;
      case THUNK_EVAL: st = cpu_eval_run(t->eval, bufs, bufs + t->n_out); break;
      case THUNK_NATIVE: st = cpu_native_run(t->native, bufs, bufs + t->n_out); break;
      case THUNK_WHILE: st = run_while(x, t, bufs); break;
      case THUNK_CONDITIONAL: st = run_conditional(x, t, bufs); break;
    }
    if (x->profile) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      t->ns += (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
      t->runs++;
    }
    if (bufs != ptrs) {
      free(bufs);
      bufs = ptrs;
    }
    if (st) return st;
  }
  return NULL;
}

/* A result literal from an output's storage: an array, or a packed tuple (nested ones
 * too: an evaluator thunk's while may carry tuples). */
static kiln_status output_literal(const hlo_shape *shape, const char *src, hlo_literal **out) {
  *out = NULL;
  if (!shape_is_tuple(shape)) {
    TRY(literal_create(shape, out));
    int64_t bytes = shape_byte_size(shape);
    if (bytes > 0) memcpy((*out)->data, src, (size_t)bytes);
    return NULL;
  }
  int n = shape->n_elems;
  hlo_literal **leaves = calloc((size_t)n + 1, sizeof *leaves);
  if (!leaves) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  for (int k = 0; k < n && !st; k++)
    st = output_literal(&shape->elems[k], src + hlo_buffer_packed_element_offset(shape, k, CPU_ALIGNMENT), &leaves[k]);
  if (st) {
    for (int k = 0; k < n; k++) literal_free(leaves[k]);
    free(leaves);
    return st;
  }
  *out = literal_tuple(n, leaves);
  free(leaves);
  return NULL;
}

static kiln_status make_result(const cpu_executable *x, char *const *params, hlo_literal **out) {
  const cpu_program *p = x->entry;
  const hlo_buffer_assignment *a = p->assignment;
  hlo_literal **elems = calloc((size_t)x->n_outputs + 1, sizeof *elems);
  if (!elems) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  for (int k = 0; k < x->n_outputs && !st; k++) {
    const hlo_instr *ins = p->comp->instrs[a->output_instr[k]];
    st = output_literal(&ins->shape, buffer_address(p, params, x->outputs[k]), &elems[k]);
  }
  if (st) {
    for (int k = 0; k < x->n_outputs; k++) literal_free(elems[k]);
    free(elems);
    return st;
  }
  if (p->comp->root->op == HLO_OP_TUPLE) {
    *out = literal_tuple(x->n_outputs, elems);
  } else {
    *out = elems[0];
  }
  free(elems);
  return NULL;
}

static kiln_status cpu_execute(backend_executable *h, hlo_literal *const *args, int n_args, hlo_literal **out) {
  cpu_executable *x = h->x;
  *out = NULL;
  TRY(check_args(x->module->entry, args, n_args));
  char *stack[16] = {0};
  char **params = n_args <= 16 ? stack : malloc((size_t)n_args * sizeof *params);
  if (!params) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n_args; i++) params[i] = args[i]->data;
  pthread_mutex_lock(&x->run_lock);
  kiln_status st = run_program(x, x->entry, params);
  if (!st) st = make_result(x, params, out);
  pthread_mutex_unlock(&x->run_lock);
  if (params != stack) free(params);
  return st;
}

static int cpu_evaluated_instructions(const backend_executable *h) { return h->x->n_evaluated; }

const backend cpu_backend = {
    .name = "cpu",
    .priority = 50,
    .description = "LLVM-compiled fused kernels and oneDNN on the host CPU (multi-threaded)",
    .supports = cpu_supports,
    .compile = cpu_compile,
    .execute = cpu_execute,
    .destroy = cpu_destroy,
    .evaluated_instructions = cpu_evaluated_instructions,
};
