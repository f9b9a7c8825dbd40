/* The HLO verifier: checks a whole module's structure and shapes before anything runs
 * it. It works in three sweeps so that each check can rely on the previous ones:
 * module-level facts (an entry, unique computation and instruction names, ids that map
 * back to exactly one instruction), then every computation's skeleton (root, dense
 * parameters, operands defined earlier in the same computation, called computations
 * that exist in the module and form no cycle), and only then shapes: each instruction's
 * declared shape must be well formed, have a valid layout, and be compatible with what
 * shape inference derives from its operands and attributes. Inference already checks
 * operand counts and called computations' signatures, so those reports come from there.
 * Every message starts with the computation and instruction it is about. */
#include "hlo/verifier.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/shape_inference.h"

/* Where each instruction id lives: its computation index and position there (-1 if the
 * id belongs to no instruction listed in the module). */
typedef struct instr_pos {
  int comp;
  int index;
} instr_pos;

typedef struct verify_ctx {
  const hlo_module *m;
  instr_pos *pos; /* indexed by id, m->next_id entries */
} verify_ctx;

static int comp_index(const hlo_module *m, const hlo_computation *c) {
  for (int i = 0; i < m->n_comps; i++)
    if (m->comps[i] == c) return i;
  return -1;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorting the names finds duplicates in O(n log n) without a hash table. */
static kiln_status check_unique_names(const char **names, int n, const char *what) {
  if (n < 2) return NULL;
  const char **sorted = malloc((size_t)n * sizeof *sorted);
  if (!sorted) abort();
  memcpy(sorted, names, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_names);
  kiln_status st = NULL;
  for (int i = 1; i < n && !st; i++)
    if (strcmp(sorted[i - 1], sorted[i]) == 0) st = ERR_INVALID("%s name %s is used more than once", what, sorted[i]);
  free(sorted);
  return st;
}

static kiln_status check_module(verify_ctx *v) {
  const hlo_module *m = v->m;
  const char *mname = m->name ? m->name : "<unnamed>";
  if (!m->entry) return ERR_INVALID("module %s has no entry computation", mname);
  if (comp_index(m, m->entry) < 0)
    return ERR_INVALID("module %s: entry computation %s is not among the module's computations", mname,
                       m->entry->name ? m->entry->name : "<unnamed>");
  int n_instrs = 0;
  for (int i = 0; i < m->n_comps; i++) {
    const hlo_computation *c = m->comps[i];
    if (!c || !c->name) return ERR_INVALID("module %s: computation %d is missing or unnamed", mname, i);
    if (c->module != m) return ERR_INVALID("computation %s belongs to another module", c->name);
    if (c->n_instrs < 0 || (c->n_instrs > 0 && !c->instrs))
      return ERR_INVALID("computation %s: malformed instruction list", c->name);
    n_instrs += c->n_instrs;
  }
  const char **names = malloc(((size_t)(m->n_comps > n_instrs ? m->n_comps : n_instrs) + 1) * sizeof *names);
  if (!names) abort();
  for (int i = 0; i < m->n_comps; i++) names[i] = m->comps[i]->name;
  kiln_status st = check_unique_names(names, m->n_comps, "computation");
  int k = 0;
  for (int i = 0; i < m->n_comps && !st; i++) {
    const hlo_computation *c = m->comps[i];
    for (int j = 0; j < c->n_instrs && !st; j++) {
      const hlo_instr *ins = c->instrs[j];
      if (!ins || !ins->name) {
        st = ERR_INVALID("computation %s: instruction %d is missing or unnamed", c->name, j);
      } else if (ins->id < 0 || ins->id >= m->next_id) {
        st = ERR_INVALID("computation %s: instruction %s has id %d outside the module's range [0, %d)", c->name,
                         ins->name, ins->id, m->next_id);
      } else if (v->pos[ins->id].comp >= 0) {
        st = ERR_INVALID("computation %s: instruction %s shares id %d with another instruction", c->name, ins->name,
                         ins->id);
      } else {
        v->pos[ins->id].comp = i;
        v->pos[ins->id].index = j;
        names[k++] = ins->name;
      }
    }
  }
  if (!st) st = check_unique_names(names, k, "instruction");
  free(names);
  return st;
}

/* True when ins is listed in computation ci (the id table is only valid for pointers
 * that are in it, so compare the pointer too). */
static bool listed_in(const verify_ctx *v, const hlo_instr *ins, int ci) {
  if (ins->id < 0 || ins->id >= v->m->next_id) return false;
  instr_pos p = v->pos[ins->id];
  return p.comp == ci && v->m->comps[ci]->instrs[p.index] == ins;
}

static kiln_status check_params(const verify_ctx *v, const hlo_computation *c, int ci) {
  int count = 0;
  for (int j = 0; j < c->n_instrs; j++)
    if (c->instrs[j]->op == HLO_OP_PARAMETER) count++;
  if (c->n_params != count)
    return ERR_INVALID("computation %s: has %d parameter instructions but its parameter list has %d entries", c->name,
                       count, c->n_params);
  if (count && !c->params) return ERR_INVALID("computation %s: parameter list is missing", c->name);
  for (int i = 0; i < count; i++) {
    const hlo_instr *p = c->params[i];
    if (!p) return ERR_INVALID("computation %s: parameter number %d is missing (parameters must be numbered 0..%d)",
                               c->name, i, count - 1);
    if (p->op != HLO_OP_PARAMETER || p->parameter_number != i || !listed_in(v, p, ci))
      return ERR_INVALID("computation %s: parameter slot %d holds %s (%s, number %lld), which is not parameter %d of "
                         "this computation",
                         c->name, i, p->name, hlo_opcode_name(p->op), (long long)p->parameter_number, i);
  }
  return NULL;
}

static kiln_status check_structure(const verify_ctx *v, int ci) {
  const hlo_module *m = v->m;
  const hlo_computation *c = m->comps[ci];
  if (!c->root) return ERR_INVALID("computation %s has no root instruction", c->name);
  if (!listed_in(v, c->root, ci))
    return ERR_INVALID("computation %s: root %s is not an instruction of this computation", c->name,
                       c->root->name ? c->root->name : "<unnamed>");
  TRY(check_params(v, c, ci));
  for (int j = 0; j < c->n_instrs; j++) {
    const hlo_instr *ins = c->instrs[j];
    const char *op = hlo_opcode_name(ins->op);
    if ((unsigned)ins->op >= HLO_OP_COUNT)
      return ERR_INVALID("computation %s: instruction %s has an unknown opcode %d", c->name, ins->name, (int)ins->op);
    if (ins->parent != c)
      return ERR_INVALID("computation %s: instruction %s (%s) names %s as its parent", c->name, ins->name, op,
                         ins->parent && ins->parent->name ? ins->parent->name : "no computation");
    if (ins->n_operands < 0 || (ins->n_operands > 0 && !ins->operands))
      return ERR_INVALID("computation %s: instruction %s (%s) has a malformed operand list", c->name, ins->name, op);
    for (int k = 0; k < ins->n_operands; k++) {
      const hlo_instr *o = ins->operands[k];
      if (!o)
        return ERR_INVALID("computation %s: instruction %s (%s): operand %d is missing", c->name, ins->name, op, k);
      if (!listed_in(v, o, ci)) {
        const char *where = o->parent && o->parent != c && o->parent->name ? o->parent->name : NULL;
        return ERR_INVALID("computation %s: instruction %s (%s): operand %d (%s) %s%s", c->name, ins->name, op, k,
                           o->name ? o->name : "<unnamed>",
                           where ? "belongs to computation " : "is not an instruction of this computation",
                           where ? where : "");
      }
      if (v->pos[o->id].index >= j)
        return ERR_INVALID("computation %s: instruction %s (%s): operand %d (%s) is defined after its user", c->name,
                           ins->name, op, k, o->name);
    }
    if (ins->n_called < 0 || (ins->n_called > 0 && !ins->called))
      return ERR_INVALID("computation %s: instruction %s (%s) has a malformed called computation list", c->name,
                         ins->name, op);
    for (int k = 0; k < ins->n_called; k++) {
      const hlo_computation *cc = ins->called[k];
      if (!cc)
        return ERR_INVALID("computation %s: instruction %s (%s): called computation %d is missing", c->name, ins->name,
                           op, k);
      if (comp_index(m, cc) < 0)
        return ERR_INVALID("computation %s: instruction %s (%s) calls %s, which is not in the module", c->name,
                           ins->name, op, cc->name ? cc->name : "<unnamed>");
      if (cc == m->entry)
        return ERR_INVALID("computation %s: instruction %s (%s) calls the entry computation %s", c->name, ins->name,
                           op, cc->name);
    }
  }
  return NULL;
}

/* Depth-first search over "calls" edges; state 1 = on the stack, 2 = done. Iterative
 * so a deep (even if acyclic) chain of calls cannot exhaust the C stack. */
static kiln_status check_call_graph(const hlo_module *m) {
  int n = m->n_comps;
  if (!n) return NULL;
  unsigned char *state = calloc((size_t)n, 1);
  int *stack_comp = malloc((size_t)n * sizeof(int));
  int *stack_instr = malloc((size_t)n * sizeof(int));
  int *stack_call = malloc((size_t)n * sizeof(int));
  if (!state || !stack_comp || !stack_instr || !stack_call) abort();
  kiln_status st = NULL;
  for (int root = 0; root < n && !st; root++) {
    if (state[root]) continue;
    int sp = 0;
    stack_comp[0] = root, stack_instr[0] = 0, stack_call[0] = 0;
    state[root] = 1;
    while (sp >= 0 && !st) {
      const hlo_computation *c = m->comps[stack_comp[sp]];
      int *ii = &stack_instr[sp], *ki = &stack_call[sp];
      int next = -1;
      while (*ii < c->n_instrs && next < 0) {
        const hlo_instr *ins = c->instrs[*ii];
        if (*ki < ins->n_called) {
          next = comp_index(m, ins->called[(*ki)++]);
          if (next >= 0 && state[next] == 1) {
            st = ERR_INVALID("computation %s: instruction %s (%s) calls %s, which is already being called: the call "
                             "graph has a cycle",
                             c->name, ins->name, hlo_opcode_name(ins->op), m->comps[next]->name);
          } else if (next >= 0 && state[next] == 2) {
            next = -1;
          }
        } else {
          (*ii)++;
          *ki = 0;
        }
      }
      if (st) break;
      if (next >= 0) {
        state[next] = 1;
        sp++;
        stack_comp[sp] = next, stack_instr[sp] = 0, stack_call[sp] = 0;
      } else {
        state[stack_comp[sp]] = 2;
        sp--;
      }
    }
  }
  free(state);
  free(stack_comp);
  free(stack_instr);
  free(stack_call);
  return st;
}

static kiln_status check_shapes(const hlo_computation *c, arena *scratch) {
  for (int j = 0; j < c->n_instrs; j++) {
    const hlo_instr *ins = c->instrs[j];
    const char *op = hlo_opcode_name(ins->op);
    kiln_status st = hlo_shape_validate(&ins->shape, true);
    if (st) return status_wrap(st, "computation %s: instruction %s (%s) has an invalid shape", c->name, ins->name, op);
    hlo_shape inferred;
    st = hlo_infer_shape(scratch, ins, &inferred);
    if (st) return status_wrap(st, "computation %s", c->name);
    if (!shape_compatible(&ins->shape, &inferred)) {
      char *have = shape_to_string(&ins->shape);
      strbuf b;
      strbuf_init(&b);
      shape_print(&b, &inferred, false);
      st = ERR_INVALID("computation %s: instruction %s (%s) has shape %s, but its operands and attributes give %s",
                       c->name, ins->name, op, have, strbuf_cstr(&b));
      free(have);
      strbuf_free(&b);
      return st;
    }
  }
  return NULL;
}

kiln_status hlo_verify_module(const hlo_module *m) {
  if (!m) return ERR_INVALID("no module to verify");
  if (m->next_id < 0 || m->n_comps < 0 || (m->n_comps > 0 && !m->comps))
    return ERR_INVALID("module %s is malformed", m->name ? m->name : "<unnamed>");
  verify_ctx v = {m, NULL};
  v.pos = malloc(((size_t)m->next_id + 1) * sizeof *v.pos);
  if (!v.pos) abort();
  for (int i = 0; i <= m->next_id; i++) v.pos[i].comp = v.pos[i].index = -1;
  kiln_status st = check_module(&v);
  for (int i = 0; i < m->n_comps && !st; i++) st = check_structure(&v, i);
  if (!st) st = check_call_graph(m);
  if (!st) {
    arena *scratch = arena_new();
    for (int i = 0; i < m->n_comps && !st; i++) st = check_shapes(m->comps[i], scratch);
    arena_free(scratch);
  }
  free(v.pos);
  if (st) return status_wrap(st, "module %s", m->name ? m->name : "<unnamed>");
  return NULL;
}
