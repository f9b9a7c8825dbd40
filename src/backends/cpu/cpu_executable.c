/* Running, profiling and freeing cpu executables (see cpu_executable.h). A while thunk
 * copies its init into the loop state (its own block), then alternates the condition
 * and body programs on that block, moving the body's result leaves back in (see
 * leaf_move); a conditional thunk hands its chosen branch one block (packing a tuple
 * of separately stored values first) and copies the branch's result out. A program's
 * thunk buffer addresses are resolved once for the parameters it is run with and kept
 * while they stay the same (see bind_params), so a loop's iterations only dispatch; a
 * loop compiled as one function (cpu_loop_kernel.h) runs all its iterations in one call
 * on those addresses, unless the executable is profiled. */
#include "backends/cpu/cpu_executable.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/cpu_persist.h"
#include "hlo/literal.h"
#include "hlo/printer.h"

const hlo_shape *cpu_leaf_shape(const hlo_shape *s, int k) {
  if (!shape_is_tuple(s)) return s;
  for (int e = 0; e < s->n_elems; e++) {
    int n = cpu_eval_leaf_count(&s->elems[e]);
    if (k < n) return cpu_leaf_shape(&s->elems[e], k);
    k -= n;
  }
  return s;
}

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

void cpu_executable_print_profile(const cpu_executable *x) {
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
    fprintf(stderr, "  %6.2f%%  %9.3f ms  %-6s %s %s%s%s %s%s\n", 100.0 * (double)t->ns / (double)total,
            (double)t->ns / 1e6 / (double)runs, kinds[t->kind], t->ins->name, hlo_opcode_name(t->ins->op),
            fk[0] ? ":" : "", fk, shape,
            t->kind == THUNK_WHILE && t->loop >= 0 ? " (one function when not profiled)" : "");
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

void cpu_thunk_free(thunk *t) {
  free(t->refs);
  if (t->prim) cpu_dnnl_destroy(t->prim);
  cpu_eval_destroy(t->eval);
  cpu_native_destroy(t->native);
  for (int k = 0; k < t->n_progs; k++) cpu_program_free(t->progs[k]);
  free(t->progs);
  free(t->leaf_bytes);
  free(t->moves);
  free(t->stage_at);
  free(t->arg_leaf);
  free(t->arg_packed);
  free(t->scratch);
  memset(t, 0, sizeof *t);
}

void cpu_program_free(cpu_program *p) {
  if (!p) return;
  for (int i = 0; i < p->n_thunks; i++) cpu_thunk_free(&p->thunks[i]);
  free(p->thunks);
  free(p->results);
  if (p->assignment) hlo_buffer_assignment_free(p->assignment);
  free(p->arena);
  free(p->addrs);
  free(p->bound);
  free(p->slot_extra);
  free(p);
}

void cpu_executable_free(cpu_executable *x) {
  if (!x) return;
  cpu_program_free(x->entry); /* its native kernels hold addresses of code in the JIT */
  free(x->outputs);
  cpu_jit_destroy(x->jit);
  if (x->persist_claimed) cpu_persist_release(x->persist_claim); /* after its symbols left the JIT */
  if (x->module) hlo_module_free(x->module);
  pthread_mutex_destroy(&x->run_lock);
  free(x->evaluated);
  free(x->fingerprint);
  free(x);
}

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
  if (p->slot_extra && p->slot_extra[r.base] >= 0) return params[p->comp->n_params + p->slot_extra[r.base]] + r.offset;
  switch (slot->kind) {
    case HLO_BUFFER_PARAMETER: a = params[slot->param_index]; break;
    case HLO_BUFFER_CONSTANT: a = p->comp->instrs[r.base]->literal->data; break;
    default: a = p->arena + slot->offset; break;
  }
  return a ? a + r.offset : NULL; /* NULL: a constant a primitive captured (never read) */
}

static kiln_status run_program(cpu_executable *x, cpu_program *p, char *const *params);
static kiln_status prepare_program(cpu_program *p, char *const *params);
static kiln_status run_bound(cpu_executable *x, cpu_program *p);

/* bufs[0..n_out): the state leaves (the while's block); bufs[n_out..): the init's.
 * The condition and body run on the same block every iteration, so their arenas and
 * addresses, the predicate's and the body's result leaves' are settled once before
 * the loop: an iteration of a small body (a scan step) is then only its thunks and
 * the leaf moves. */
static kiln_status run_while(cpu_executable *x, thunk *t, char *const *bufs) {
  for (int k = 0; k < t->n_out; k++)
    if (bufs[k] != bufs[t->n_out + k]) memmove(bufs[k], bufs[t->n_out + k], (size_t)t->leaf_bytes[k]);
  char *state = bufs[0]; /* leaf 0 sits at the start of the block */
  cpu_program *cond = t->progs[0], *body = t->progs[1];
  TRY(prepare_program(cond, &state));
  TRY(prepare_program(body, &state));
  const uint8_t *pred = (const uint8_t *)buffer_address(cond, &state, cond->results[0]);
  char *stack[16];
  char **from = t->n_out <= 16 ? stack : malloc((size_t)t->n_out * sizeof *from);
  if (!from) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < t->n_out; k++) from[k] = buffer_address(body, &state, body->results[k]);
  kiln_status st = NULL;
  if (t->loop_fn && !x->profile) {
    t->loop_fn(cond->addrs, body->addrs, pred, bufs, from);
    if (from != stack) free(from);
    return NULL;
  }
  for (;;) {
    if ((st = run_bound(x, cond)) || !*pred) break;
    if ((st = run_bound(x, body))) break;
    /* Leaves the body took from other state leaves are read before any is written. */
    for (int k = 0; k < t->n_out; k++)
      if (t->moves[k] == LEAF_STAGE) memcpy(t->scratch + t->stage_at[k], from[k], (size_t)t->leaf_bytes[k]);
    for (int k = 0; k < t->n_out; k++) {
      if (t->moves[k] == LEAF_COPY)
        memcpy(bufs[k], from[k], (size_t)t->leaf_bytes[k]);
      else if (t->moves[k] == LEAF_STAGE)
        memcpy(bufs[k], t->scratch + t->stage_at[k], (size_t)t->leaf_bytes[k]);
    }
  }
  if (from != stack) free(from);
  return st;
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
             (size_t)shape_byte_size(cpu_leaf_shape(&operand->shape, k)));
  }
  cpu_program *branch = t->progs[b];
  TRY(run_program(x, branch, &arg));
  for (int k = 0; k < t->n_out; k++)
    memmove(bufs[k], buffer_address(branch, &arg, branch->results[k]), (size_t)t->leaf_bytes[k]);
  return NULL;
}

/* Resolves p->addrs for params unless they are the ones it was resolved for. The arena
 * and the constants' data stay where they are once the program has run, so only a
 * change of parameters (a new call of the entry, a branch handed another block) or of
 * the entry's output blocks (after the parameters in params) moves any address. */
static kiln_status bind_params(cpu_program *p, char *const *params) {
  int n_params = p->comp->n_params + p->n_extra;
  if (!p->addrs) {
    int64_t n = 0;
    for (int i = 0; i < p->n_thunks; i++) n += p->thunks[i].n_refs;
    p->addrs = malloc(((size_t)n + 1) * sizeof *p->addrs);
    p->bound = malloc(((size_t)n_params + 1) * sizeof *p->bound);
    if (!p->addrs || !p->bound) {
      free(p->addrs);
      free(p->bound);
      p->addrs = p->bound = NULL;
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  if (p->resolved && (n_params == 0 || memcmp(p->bound, params, (size_t)n_params * sizeof *params) == 0))
    return NULL;
  char **a = p->addrs;
  for (int i = 0; i < p->n_thunks; i++)
    for (int k = 0; k < p->thunks[i].n_refs; k++) *a++ = buffer_address(p, params, p->thunks[i].refs[k]);
  if (n_params > 0) memcpy(p->bound, params, (size_t)n_params * sizeof *params);
  p->resolved = true;
  return NULL;
}

/* The arena (allocated on the first run and kept: fresh memory would page-fault on
 * every run) and the addresses for params. */
static kiln_status prepare_program(cpu_program *p, char *const *params) {
  int64_t bytes = (p->assignment->arena_bytes + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
  if (bytes > 0 && !p->arena && !(p->arena = aligned_alloc(CPU_ALIGNMENT, (size_t)bytes)))
    return status_error(KILN_RESOURCE_EXHAUSTED, "cpu: cannot allocate a %lld-byte arena", (long long)bytes);
  return bind_params(p, params);
}

static kiln_status run_thunk(cpu_executable *x, thunk *t, char **bufs) {
  switch (t->kind) {
    case THUNK_KERNEL: cpu_kernel_run(t->fn, bufs, &t->space); return NULL;
    case THUNK_COPY:
      if (bufs[0] != bufs[1]) memmove(bufs[0], bufs[1], (size_t)t->bytes);
      return NULL;
    case THUNK_DNNL: return cpu_dnnl_execute(t->prim, (void *const *)(bufs + 1), bufs[0]);
    case THUNK_EVAL: return cpu_eval_run(t->eval, bufs, bufs + t->n_out);
    case THUNK_NATIVE: return cpu_native_run(t->native, bufs, bufs + t->n_out);
    case THUNK_WHILE: return run_while(x, t, bufs);
    case THUNK_CONDITIONAL: return run_conditional(x, t, bufs);
  }
  return NULL;
}

/* Runs p's thunks on the addresses prepare_program bound. */
static kiln_status run_bound(cpu_executable *x, cpu_program *p) {
  char **bufs = p->addrs;
  if (!x->profile) {
    for (int i = 0; i < p->n_thunks; bufs += p->thunks[i++].n_refs) TRY(run_thunk(x, &p->thunks[i], bufs));
    return NULL;
  }
  for (int i = 0; i < p->n_thunks; bufs += p->thunks[i++].n_refs) {
    thunk *t = &p->thunks[i];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kiln_status st = run_thunk(x, t, bufs);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t->ns += (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    t->runs++;
    if (st) return st;
  }
  return NULL;
}

static kiln_status run_program(cpu_executable *x, cpu_program *p, char *const *params) {
  TRY(prepare_program(p, params));
  return run_bound(x, p);
}

/* A result literal from an output's storage: an array, or a packed tuple (nested ones
 * too: an evaluator thunk's while may carry tuples). */
static kiln_status output_literal(const hlo_shape *shape, const char *src, hlo_literal **out) {
  *out = NULL;
  if (!shape_is_tuple(shape)) {
    TRY(literal_create_uninit(shape, out));
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

/* The result literal of entry value ins (the root, then its `tuple` operands in turn):
 * a tuple for a `tuple` instruction, else the next leaf -- the literal the kernels
 * wrote (taken from direct[]) or a copy of the leaf's storage. */
static kiln_status build_result(const cpu_executable *x, const hlo_instr *ins, char *const *params,
                                hlo_literal **direct, int *next, hlo_literal **out) {
  *out = NULL;
  if (ins->op != HLO_OP_TUPLE) {
    const cpu_output *o = &x->outputs[(*next)++];
    if (o->direct >= 0) {
      *out = direct[o->direct];
      direct[o->direct] = NULL;
      return NULL;
    }
    return output_literal(&o->ins->shape, buffer_address(x->entry, params, o->ref), out);
  }
  int n = ins->n_operands;
  hlo_literal **elems = calloc((size_t)n + 1, sizeof *elems);
  if (!elems) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  for (int k = 0; k < n && !st; k++) st = build_result(x, ins->operands[k], params, direct, next, &elems[k]);
  if (st) {
    for (int k = 0; k < n; k++) literal_free(elems[k]);
  } else {
    *out = literal_tuple(n, elems);
  }
  free(elems);
  return st;
}

/* Runs the entry with its output blocks in fresh result literals (see build_outputs in
 * cpu_compiler.c), then assembles the result. params has room for the extras. */
static kiln_status run_entry(cpu_executable *x, char **params, int n_args, hlo_literal **out) {
  cpu_program *p = x->entry;
  hlo_literal *stack[8] = {0};
  hlo_literal **direct = p->n_extra <= 8 ? stack : calloc((size_t)p->n_extra, sizeof *direct);
  if (!direct) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  for (int k = 0; k < x->n_outputs && !st; k++) {
    const cpu_output *o = &x->outputs[k];
    if (o->direct < 0) continue;
    st = literal_create_uninit(&o->ins->shape, &direct[o->direct]);
    if (!st) params[n_args + o->direct] = direct[o->direct]->data;
  }
  if (!st) st = run_program(x, p, params);
  int next = 0;
  if (!st && p->comp->root) st = build_result(x, p->comp->root, params, direct, &next, out);
  for (int j = 0; j < p->n_extra; j++) literal_free(direct[j]); /* those not handed out */
  if (direct != stack) free(direct);
  return st;
}

kiln_status cpu_executable_run(cpu_executable *x, hlo_literal *const *args, int n_args, hlo_literal **out) {
  *out = NULL;
  TRY(check_args(x->module->entry, args, n_args));
  int n = n_args + x->entry->n_extra;
  char *stack[16] = {0};
  char **params = n <= 16 ? stack : malloc((size_t)n * sizeof *params);
  if (!params) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n_args; i++) params[i] = args[i]->data;
  pthread_mutex_lock(&x->run_lock);
  kiln_status st = run_entry(x, params, n_args, out);
  pthread_mutex_unlock(&x->run_lock);
  if (params != stack) free(params);
  return st;
}
