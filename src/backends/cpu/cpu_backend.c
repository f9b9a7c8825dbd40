/* The `cpu` backend: XLA:CPU's shape on kiln's pieces. This file is its face to the
 * device registry: what it supports, and compile/execute/destroy handed to the cache
 * (cpu_cache.c), the compiler (cpu_compiler.c) and the executable (cpu_executable.c).
 *
 * Compiled code: a oneDNN primitive for each dot/convolution (and output fusion)
 * oneDNN takes, a generated LLVM kernel for everything else that computes values (one
 * function per fusion or instruction), a native kernel (cpu_native.h: sort, scatter,
 * dynamic-update-slice, ...) where C code calling small generated functions does better
 * than a loop nest, a memmove for copies; a while loop or conditional runs programs of
 * its own for the computations it calls, so loops run compiled with no per-iteration
 * allocation. An instruction that no path takes runs alone through the evaluator
 * (cpu_eval.c, listed by --profile as "evaluator"), so the rest of the module stays
 * compiled; compile warns once per call naming those instructions, and supports()
 * refuses them, so graph placement keeps such nodes on the interpreter. Only what the
 * evaluator cannot run either (custom-calls, rng, tokens, tuple-shaped entry parameters)
 * makes compile answer UNIMPLEMENTED with the instruction and the
 * reason, which lets the caller fall back. execute() is serialised per executable
 * because a oneDNN primitive must not run on two threads at once and the arenas are the
 * executable's; generated kernels themselves are reentrant. */
#include <stdlib.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_cache.h"
#include "backends/cpu/cpu_dnnl.h"
#include "backends/cpu/cpu_elemental.h"
#include "backends/cpu/cpu_executable.h"
#include "backends/cpu/cpu_native.h"

/* OpenMP's runtime calls, declared here rather than through <omp.h>: clang builds
 * (fuzzing) compile against gcc's libgomp, whose omp.h clang cannot parse. */
void omp_set_num_threads(int n);
int omp_get_max_threads(void);

struct backend_executable {
  cpu_executable *x;
};

/* ------------------------------------------------------------- supports -------- */

/* A value made of arrays and tuples of them (no tokens). */
static bool arrays_and_tuples(const hlo_shape *s) {
  if (!shape_is_tuple(s)) return shape_is_array(s);
  for (int k = 0; k < s->n_elems; k++)
    if (!arrays_and_tuples(&s->elems[k])) return false;
  return true;
}

/* Values with a block of their own (an array, or the packed tuple result of a real op:
 * a while, a sort, a variadic reduce or scatter, ...), which an output tuple can copy
 * out; a `tuple` instruction only groups other values' storage. */
static bool has_packed_result(const hlo_instr *ins) {
  return ins->op != HLO_OP_TUPLE && arrays_and_tuples(&ins->shape);
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

/* ------------------------------------------------------------- compile / run --- */

static kiln_status cpu_compile(const backend *b, const hlo_module *m, const backend_compile_options *opts,
                               backend_executable **out) {
  (void)b;
  *out = NULL;
  backend_compile_options defaults = backend_compile_options_default();
  backend_executable *h = malloc(sizeof *h);
  if (!h) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = cpu_cache_get(m, opts ? opts : &defaults, &h->x);
  if (st) {
    free(h);
    return st;
  }
  *out = h;
  return NULL;
}

static void cpu_destroy(backend_executable *h) {
  if (!h) return;
  cpu_cache_release(h->x);
  free(h);
}

static kiln_status cpu_execute(backend_executable *h, hlo_literal *const *args, int n_args, hlo_literal **out) {
  return cpu_executable_run(h->x, args, n_args, out);
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
