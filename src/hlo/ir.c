/* Construction and simple queries of the HLO IR. Everything is arena-allocated except
 * constant literals, which the module tracks and frees. */
#include "hlo/ir.h"

#include <stdlib.h>
#include <string.h>

hlo_module *hlo_module_new(const char *name) {
  arena *a = arena_new();
  /* Outside the arena: hlo_module_compact gives the module a new one. */
  hlo_module *m = calloc(1, sizeof *m);
  if (!m) abort();
  m->arena = a;
  m->name = arena_strdup(a, name ? name : "module");
  return m;
}

/* ------------------------------------------------------------ name index ---- */

struct hlo_name_index {
  size_t cap, n;
  const char **slots; /* arena strings of the module; NULL: empty */
  int64_t n_instrs;   /* instructions of the module when the index was last current */
};

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void index_insert(struct hlo_name_index *x, const char *name) {
  if ((x->n + 1) * 2 > x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 256;
    const char **old = x->slots;
    size_t old_cap = x->cap;
    x->slots = calloc(cap, sizeof *x->slots);
    if (!x->slots) abort();
    x->cap = cap;
    x->n = 0;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i]) index_insert(x, old[i]);
    free(old);
  }
  for (size_t i = name_hash(name) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
    if (!x->slots[i]) {
      x->slots[i] = name;
      x->n++;
      return;
    }
    if (strcmp(x->slots[i], name) == 0) return;
  }
}

static bool index_has(const struct hlo_name_index *x, const char *name) {
  if (!x->cap) return false;
  for (size_t i = name_hash(name) & (x->cap - 1); x->slots[i]; i = (i + 1) & (x->cap - 1))
    if (strcmp(x->slots[i], name) == 0) return true;
  return false;
}

static int64_t count_instrs(const hlo_module *m) {
  int64_t n = 0;
  for (int i = 0; i < m->n_comps; i++) n += m->comps[i]->n_instrs;
  return n;
}

bool hlo_module_name_taken(hlo_module *m, const char *name, const hlo_instr *except) {
  if (!m->name_index) {
    m->name_index = calloc(1, sizeof *m->name_index);
    if (!m->name_index) abort();
    m->name_index->n_instrs = -1;
  }
  struct hlo_name_index *x = m->name_index;
  int64_t n = count_instrs(m) - (except ? 1 : 0);
  if (x->n_instrs != n) {
    free(x->slots);
    memset(x, 0, sizeof *x);
    for (int i = 0; i < m->n_comps; i++)
      for (int j = 0; j < m->comps[i]->n_instrs; j++)
        if (m->comps[i]->instrs[j] != except) index_insert(x, m->comps[i]->instrs[j]->name);
    x->n_instrs = n;
  }
  return index_has(x, name);
}

void hlo_module_note_name(hlo_module *m, const char *name) {
  struct hlo_name_index *x = m->name_index;
  if (!x) return; /* built on first use */
  if (x->n_instrs + 1 != count_instrs(m)) {
    x->n_instrs = -1; /* out of step: rebuild on the next question */
    return;
  }
  index_insert(x, name);
  x->n_instrs++;
}

void hlo_module_free(hlo_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_owned_literals; i++) literal_free(m->owned_literals[i]);
  free(m->owned_literals);
  if (m->name_index) free(m->name_index->slots);
  free(m->name_index);
  arena_free(m->arena);
  free(m);
}

/* Grows an arena-held pointer array by doubling (old storage stays in the arena). */
static void **grow(arena *a, void **items, int n, int *cap) {
  if (n < *cap) return items;
  int nc = *cap ? *cap * 2 : 8;
  void **ni = arena_calloc(a, (size_t)nc, sizeof(void *));
  if (n) memcpy(ni, items, (size_t)n * sizeof(void *));
  *cap = nc;
  return ni;
}

hlo_computation *hlo_computation_new(hlo_module *m, const char *name) {
  hlo_computation *c = arena_alloc(m->arena, sizeof *c);
  c->module = m;
  c->name = arena_strdup(m->arena, name);
  m->comps = (hlo_computation **)grow(m->arena, (void **)m->comps, m->n_comps, &m->cap_comps);
  m->comps[m->n_comps++] = c;
  return c;
}

hlo_instr *hlo_instr_new(hlo_computation *c, hlo_opcode op, const hlo_shape *shape, const char *name) {
  hlo_module *m = c->module;
  hlo_instr *ins = arena_alloc(m->arena, sizeof *ins);
  ins->id = m->next_id++;
  m->arena_instrs++;
  ins->op = op;
  ins->shape = shape_clone(m->arena, shape);
  ins->parent = c;
  ins->name = name ? arena_strdup(m->arena, name) : arena_printf(m->arena, "%s.%d", hlo_opcode_name(op), ins->id);
  ins->feature_group_count = 1;
  ins->batch_group_count = 1;
  c->instrs = (hlo_instr **)grow(m->arena, (void **)c->instrs, c->n_instrs, &c->cap_instrs);
  c->instrs[c->n_instrs++] = ins;
  return ins;
}

void hlo_instr_set_operands(hlo_instr *ins, int n, hlo_instr *const *ops) {
  arena *a = ins->parent->module->arena;
  ins->n_operands = n;
  ins->operands = arena_calloc(a, n ? (size_t)n : 1, sizeof(hlo_instr *));
  for (int i = 0; i < n; i++) ins->operands[i] = ops[i];
}

void hlo_instr_set_called(hlo_instr *ins, int n, hlo_computation *const *comps) {
  arena *a = ins->parent->module->arena;
  ins->n_called = n;
  ins->called = arena_calloc(a, n ? (size_t)n : 1, sizeof(hlo_computation *));
  for (int i = 0; i < n; i++) ins->called[i] = comps[i];
}

void hlo_instr_set_literal(hlo_instr *ins, hlo_literal *lit) {
  hlo_module *m = ins->parent->module;
  if (m->n_owned_literals == m->cap_owned_literals) {
    int nc = m->cap_owned_literals ? m->cap_owned_literals * 2 : 16;
    hlo_literal **nl = realloc(m->owned_literals, (size_t)nc * sizeof *nl);
    if (!nl) abort();
    m->owned_literals = nl;
    m->cap_owned_literals = nc;
  }
  m->owned_literals[m->n_owned_literals++] = lit;
  ins->literal = lit;
}

void hlo_instr_add_raw_attr(hlo_instr *ins, const char *key, const char *value) {
  arena *a = ins->parent->module->arena;
  hlo_raw_attr *na = arena_calloc(a, (size_t)ins->n_raw_attrs + 1, sizeof *na);
  if (ins->n_raw_attrs) memcpy(na, ins->raw_attrs, (size_t)ins->n_raw_attrs * sizeof *na);
  na[ins->n_raw_attrs].key = arena_strdup(a, key);
  na[ins->n_raw_attrs].value = arena_strdup(a, value);
  ins->raw_attrs = na;
  ins->n_raw_attrs++;
}

hlo_ints hlo_ints_make(arena *a, int n, const int64_t *v) {
  hlo_ints r;
  r.n = n;
  r.v = arena_calloc(a, n ? (size_t)n : 1, sizeof(int64_t));
  for (int i = 0; i < n; i++) r.v[i] = v[i];
  return r;
}

kiln_status hlo_computation_index_params(hlo_computation *c) {
  int n = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->op == HLO_OP_PARAMETER) n++;
  c->n_params = n;
  c->params = arena_calloc(c->module->arena, n ? (size_t)n : 1, sizeof(hlo_instr *));
  for (int i = 0; i < c->n_instrs; i++) {
    hlo_instr *p = c->instrs[i];
    if (p->op != HLO_OP_PARAMETER) continue;
    if (p->parameter_number < 0 || p->parameter_number >= n)
      return ERR_INVALID("computation %s: parameter %s has number %lld, but the computation has %d parameters",
                         c->name, p->name, (long long)p->parameter_number, n);
    if (c->params[p->parameter_number])
      return ERR_INVALID("computation %s: parameter number %lld used by both %s and %s", c->name,
                         (long long)p->parameter_number, c->params[p->parameter_number]->name, p->name);
    c->params[p->parameter_number] = p;
  }
  return NULL;
}

hlo_computation *hlo_module_find_computation(const hlo_module *m, const char *name) {
  for (int i = 0; i < m->n_comps; i++)
    if (strcmp(m->comps[i]->name, name) == 0) return m->comps[i];
  return NULL;
}

hlo_instr *hlo_computation_find_instr(const hlo_computation *c, const char *name) {
  for (int i = 0; i < c->n_instrs; i++)
    if (strcmp(c->instrs[i]->name, name) == 0) return c->instrs[i];
  return NULL;
}

int hlo_instr_count_users(const hlo_instr *ins) {
  const hlo_computation *c = ins->parent;
  int n = 0;
  for (int i = 0; i < c->n_instrs; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++)
      if (c->instrs[i]->operands[k] == ins) n++;
  return n;
}

int hlo_computation_remove_dead(hlo_computation *c) {
  /* Mark live from the root backwards, indexed by instruction id; instrs are in
   * definition order so one reverse sweep suffices. Parameters always stay (they define
   * the signature). */
  int n_ids = c->module->next_id;
  bool *live = calloc((size_t)n_ids + 1, sizeof(bool));
  if (!live) abort();
  for (int i = c->n_instrs - 1; i >= 0; i--) {
    hlo_instr *ins = c->instrs[i];
    if (ins == c->root || ins->op == HLO_OP_PARAMETER) live[ins->id] = true;
    if (!live[ins->id]) continue;
    for (int k = 0; k < ins->n_operands; k++) live[ins->operands[k]->id] = true;
  }
  int w = 0, removed = 0;
  for (int i = 0; i < c->n_instrs; i++) {
    hlo_instr *ins = c->instrs[i];
    if (live[ins->id]) {
      c->instrs[w++] = ins;
      continue;
    }
    removed++;
    /* A dead constant's counted borrow ends now, not when the module is freed: a
     * weight folded into a new constant is then given back during the compile. */
    if (ins->literal && ins->literal->counted) literal_drop_data(ins->literal);
  }
  c->n_instrs = w;
  free(live);
  return removed;
}
