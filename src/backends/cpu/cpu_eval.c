/* Evaluator thunks of the cpu backend (see cpu_eval.h): the single-instruction
 * computation built once at compile time, and per run the copies between buffers and
 * literals around one eval_computation call. The evaluator rebuilds its per-computation
 * plans (a while body's included) on every call; that cost is small next to the
 * evaluator's own per-element work, which is what an evaluator thunk is slow at. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_eval.h"
#include "eval/eval.h"
#include "hlo/buffer_assignment.h"
#include "hlo/builder.h"
#include "hlo/shape.h"

struct cpu_eval_op {
  const hlo_instr *ins;  /* in the compiled module */
  hlo_computation *comp; /* parameters for ins's operands, root a copy of ins */
};

/* ------------------------------------------------------------- shapes ---------- */

static bool only_arrays(const hlo_shape *s) {
  if (!shape_is_tuple(s)) return shape_is_array(s) && s->type != HLO_TOKEN;
  for (int k = 0; k < s->n_elems; k++)
    if (!only_arrays(&s->elems[k])) return false;
  return true;
}

int cpu_eval_leaf_count(const hlo_shape *s) {
  if (!shape_is_tuple(s)) return 1;
  int n = 0;
  for (int k = 0; k < s->n_elems; k++) n += cpu_eval_leaf_count(&s->elems[k]);
  return n;
}

/* Walks s depth-first from byte `base`; *k counts down the leaves still to skip. */
static bool find_leaf(const hlo_shape *s, int *k, int64_t align, int64_t base, int64_t *off) {
  if (!shape_is_tuple(s)) {
    if ((*k)-- == 0) {
      *off = base;
      return true;
    }
    return false;
  }
  for (int e = 0; e < s->n_elems; e++)
    if (find_leaf(&s->elems[e], k, align, base + hlo_buffer_packed_element_offset(s, e, align), off)) return true;
  return false;
}

int64_t cpu_eval_leaf_offset(const hlo_shape *s, int k, int64_t alignment) {
  int64_t off = 0;
  return find_leaf(s, &k, alignment, 0, &off) ? off : 0;
}

/* ------------------------------------------------------------- supports -------- */

static bool why_not(strbuf *why, const hlo_instr *ins, const char *reason) {
  if (!why) return false;
  if (ins->op == HLO_OP_CUSTOM_CALL) /* the target is what the user needs to know */
    strbuf_printf(why, "%s (custom-call target \"%s\"): %s", ins->name,
                  ins->custom_call_target ? ins->custom_call_target : "", reason);
  else
    strbuf_printf(why, "%s (%s): %s", ins->name, hlo_opcode_name(ins->op), reason);
  return false;
}

/* Every instruction of c and of what it calls; seen holds the computations already
 * checked (n_seen of them, at most cap), so shared reducers are checked once. */
static bool computation_evaluable(const hlo_computation *c, const hlo_computation **seen, int *n_seen, int cap,
                                  strbuf *why) {
  for (int s = 0; s < *n_seen; s++)
    if (seen[s] == c) return true;
  if (*n_seen < cap) seen[(*n_seen)++] = c;
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (!eval_supports(ins)) return why_not(why, ins, "not implemented by the evaluator either");
    for (int k = 0; k < ins->n_called; k++)
      if (ins->called[k] && !computation_evaluable(ins->called[k], seen, n_seen, cap, why)) return false;
  }
  return true;
}

bool cpu_eval_supports(const hlo_instr *ins, strbuf *why) {
  if (!eval_supports(ins)) return why_not(why, ins, "not implemented by the evaluator either");
  if (ins->op == HLO_OP_PARAMETER || ins->op == HLO_OP_CONSTANT)
    return why_not(why, ins, "has storage of its own, nothing to evaluate");
  if (!only_arrays(&ins->shape)) return why_not(why, ins, "the result holds a token");
  for (int k = 0; k < ins->n_operands; k++)
    if (!only_arrays(&ins->operands[k]->shape)) return why_not(why, ins, "an operand holds a token");
  const hlo_computation *seen[64];
  int n_seen = 0;
  for (int k = 0; k < ins->n_called; k++) {
    if (!ins->called[k]) return why_not(why, ins, "a called computation is missing");
    if (!computation_evaluable(ins->called[k], seen, &n_seen, 64, why)) return false;
  }
  return true;
}

/* ------------------------------------------------------------- build ----------- */

kiln_status cpu_eval_create(hlo_module *m, const hlo_instr *ins, cpu_eval_op **out) {
  *out = NULL;
  int n = ins->n_operands;
  hlo_instr **params = calloc((size_t)n + 1, sizeof *params);
  cpu_eval_op *op = calloc(1, sizeof *op);
  if (!params || !op) {
    free(params);
    free(op);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* Named after the instruction so dumps and errors point at it; a computation of that
   * name already in the module would only make lookups by name ambiguous, which nothing
   * does after compilation. */
  char *name = arena_printf(m->arena, "evaluator.%s", ins->name);
  hlo_computation *c = hlo_computation_new(m, name);
  kiln_status st = NULL;
  for (int k = 0; k < n && !st; k++) st = hlo_build_parameter(c, k, &ins->operands[k]->shape, NULL, &params[k]);
  hlo_instr *root = NULL;
  if (!st) {
    /* The copy calls the very computations ins calls: they are in m already. */
    hlo_instr t = hlo_instr_template_from(ins, params);
    st = hlo_build_instr(c, &t, &root);
  }
  if (!st && !shape_compatible(&root->shape, &ins->shape)) {
    char *got = shape_to_string(&root->shape), *want = shape_to_string(&ins->shape);
    st = status_error(KILN_INTERNAL, "its copy has shape %s, not %s", got, want);
    free(got);
    free(want);
  }
  if (!st) st = hlo_build_set_root(c, root);
  if (!st) st = hlo_computation_index_params(c);
  free(params);
  if (st) {
    /* Left in the module's arena but no longer listed, as the builder drops a failed
     * computation. */
    if (m->n_comps && m->comps[m->n_comps - 1] == c) m->n_comps--;
    free(op);
    return status_wrap(st, "cpu: building the evaluator thunk of %s", ins->name);
  }
  op->ins = ins;
  op->comp = c;
  *out = op;
  return NULL;
}

void cpu_eval_destroy(cpu_eval_op *op) { free(op); }

/* ------------------------------------------------------------- run ------------- */

/* A literal of shape s from the next leaves of `in` (advancing *leaf). */
static kiln_status literal_from_leaves(const hlo_shape *s, char *const *in, int *leaf, hlo_literal **out) {
  *out = NULL;
  if (!shape_is_tuple(s)) {
    const char *src = in[(*leaf)++];
    int64_t bytes = shape_byte_size(s);
    if (bytes > 0 && !src) return status_error(KILN_INTERNAL, "cpu: an evaluator operand has no storage");
    TRY(literal_create(s, out));
    if (bytes > 0) memcpy((*out)->data, src, (size_t)bytes);
    return NULL;
  }
  hlo_literal **elems = calloc((size_t)s->n_elems + 1, sizeof *elems);
  if (!elems) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  for (int k = 0; k < s->n_elems && !st; k++) st = literal_from_leaves(&s->elems[k], in, leaf, &elems[k]);
  if (st) {
    for (int k = 0; k < s->n_elems; k++) literal_free(elems[k]);
    free(elems);
    return st;
  }
  *out = literal_tuple(s->n_elems, elems);
  free(elems);
  return NULL;
}

/* Copies l's leaves, depth-first, to the next leaves of `out`. */
static void literal_to_leaves(const hlo_literal *l, char *const *out, int *leaf) {
  if (!shape_is_tuple(&l->shape)) {
    char *dst = out[(*leaf)++];
    int64_t bytes = shape_byte_size(&l->shape);
    if (bytes > 0) memcpy(dst, l->data, (size_t)bytes);
    return;
  }
  for (int k = 0; k < l->shape.n_elems; k++) literal_to_leaves(l->tuple[k], out, leaf);
}

kiln_status cpu_eval_run(const cpu_eval_op *op, char *const *out, char *const *in) {
  const hlo_instr *ins = op->ins;
  int n = ins->n_operands;
  hlo_literal **args = calloc((size_t)n + 1, sizeof *args);
  if (!args) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status st = NULL;
  int leaf = 0;
  for (int k = 0; k < n && !st; k++) st = literal_from_leaves(&ins->operands[k]->shape, in, &leaf, &args[k]);
  hlo_literal *result = NULL;
  if (!st) st = eval_computation(op->comp, args, n, &result);
  if (!st) {
    leaf = 0;
    literal_to_leaves(result, out, &leaf);
  }
  literal_free(result);
  for (int k = 0; k < n; k++) literal_free(args[k]);
  free(args);
  return st;
}
