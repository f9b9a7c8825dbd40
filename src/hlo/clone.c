/* hlo_module_clone (see clone.h): computations first (so calls can be re-pointed by
 * index), then each computation's instructions in order through an id map. An
 * instruction is struct-copied, so attributes added to hlo_instr later are copied too,
 * and only its pointer fields are re-pointed into the new module's arena here. */
#include "hlo/clone.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/literal.h"

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

/* What a copy does with the source's constants: copies them, borrows their array data,
 * or (compaction, where the source is freed right after) takes the literals themselves. */
typedef enum literal_mode { LITERALS_COPY, LITERALS_BORROW, LITERALS_MOVE } literal_mode;

/* A constant's literal for the copy: its own data, or (borrow) a view of the source's
 * array data. */
static hlo_literal *copy_literal(const hlo_literal *l, bool borrow) {
  if (!borrow || l->shape.type == HLO_TUPLE || !l->data) return literal_clone(l);
  return literal_borrow_counted(&l->shape, l->data, l->owner);
}

static int compare_pointers(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(const hlo_literal *const *)a, y = (uintptr_t)*(const hlo_literal *const *)b;
  return x < y ? -1 : x > y;
}

/* Moving: src's owned literals, sorted, and which of them the copy has taken. A
 * literal src does not own (none today, but nothing forbids an instruction pointing at
 * one) is shared, not taken; one that two instructions hold is taken once. */
typedef struct literal_moves {
  hlo_literal **sorted;
  bool *taken;
  int n;
} literal_moves;

static void move_literal(literal_moves *mv, hlo_instr *d, hlo_literal *l) {
  hlo_literal **at = bsearch(&l, mv->sorted, (size_t)mv->n, sizeof *mv->sorted, compare_pointers);
  if (!at || mv->taken[at - mv->sorted]) {
    d->literal = l;
    return;
  }
  mv->taken[at - mv->sorted] = true;
  hlo_instr_set_literal(d, l);
}

static kiln_status clone_module(const hlo_module *src, literal_mode mode, literal_moves *mv, hlo_module **out) {
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
        st = status_error(KILN_INTERNAL, "clone: instruction %s has id %d outside the module's range", si->name, si->id);
        break;
      }
      hlo_instr *d = hlo_instr_new(dc, si->op, &si->shape, si->name);
      hlo_instr fresh = *d;
      *d = *si;
      /* Compaction keeps the ids: ids are never reused within a module, so names made
       * from them ("add.17") stay unique. */
      d->id = mode == LITERALS_MOVE ? si->id : fresh.id;
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
        if (!ops[k]) st = status_error(KILN_INTERNAL, "clone: %s uses %s before its definition", si->name, si->operands[k]->name);
      }
      for (int k = 0; !st && k < si->n_called; k++) {
        int ci = computation_index(src, si->called[k]);
        if (ci < 0) st = status_error(KILN_INTERNAL, "clone: %s calls a computation outside the module", si->name);
        else called[k] = m->comps[ci];
      }
      if (!st) {
        hlo_instr_set_operands(d, si->n_operands, ops);
        hlo_instr_set_called(d, si->n_called, called);
        if (si->literal && mode == LITERALS_MOVE) {
          move_literal(mv, d, si->literal);
        } else if (si->literal) {
          hlo_literal *l = copy_literal(si->literal, mode == LITERALS_BORROW);
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
    if (mode == LITERALS_MOVE) m->n_owned_literals = 0; /* still the source's */
    hlo_module_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

kiln_status hlo_module_clone(const hlo_module *src, hlo_module **out) {
  return clone_module(src, LITERALS_COPY, NULL, out);
}

kiln_status hlo_module_clone_borrowing_constants(const hlo_module *src, hlo_module **out) {
  return clone_module(src, LITERALS_BORROW, NULL, out);
}

int64_t hlo_module_dead_instrs(const hlo_module *m) {
  int64_t live = 0;
  for (int c = 0; c < m->n_comps; c++) live += m->comps[c]->n_instrs;
  return m->arena_instrs - live;
}

kiln_status hlo_module_compact(hlo_module *m) {
  literal_moves mv = {.n = m->n_owned_literals};
  mv.sorted = malloc(((size_t)mv.n + 1) * sizeof *mv.sorted);
  mv.taken = calloc((size_t)mv.n + 1, sizeof *mv.taken);
  if (!mv.sorted || !mv.taken) {
    free(mv.sorted);
    free(mv.taken);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (mv.n) memcpy(mv.sorted, m->owned_literals, (size_t)mv.n * sizeof *mv.sorted);
  qsort(mv.sorted, (size_t)mv.n, sizeof *mv.sorted, compare_pointers);
  hlo_module *fresh = NULL;
  kiln_status st = clone_module(m, LITERALS_MOVE, &mv, &fresh);
  if (st) { /* m is unchanged: the failed copy gave its moved literals back */
    free(mv.sorted);
    free(mv.taken);
    return st;
  }
  /* m keeps (and frees below) only the literals nothing took; sorted holds exactly its
   * owned list, and the order they are freed in does not matter. */
  int kept = 0;
  for (int i = 0; i < mv.n; i++)
    if (!mv.taken[i]) m->owned_literals[kept++] = mv.sorted[i];
  m->n_owned_literals = kept;
  free(mv.sorted);
  free(mv.taken);
  fresh->next_id = m->next_id;
  /* The struct stays where callers hold it; its contents are the copy's. */
  hlo_module old = *m;
  *m = *fresh;
  *fresh = old;
  for (int c = 0; c < m->n_comps; c++) m->comps[c]->module = m;
  hlo_module_free(fresh);
  return NULL;
}

void hlo_module_own_constants(hlo_module *m) {
  for (int c = 0; c < m->n_comps; c++) {
    hlo_computation *comp = m->comps[c];
    for (int i = 0; i < comp->n_instrs; i++)
      if (comp->instrs[i]->literal) literal_own(comp->instrs[i]->literal);
  }
  /* What no instruction holds any more (replaced literals, removed computations) is
   * never read: it lets go of the source's data instead of copying it. */
  for (int i = 0; i < m->n_owned_literals; i++)
    if (m->owned_literals[i]->borrowed) literal_drop_data(m->owned_literals[i]);
}
