/* Buffer assignment (see buffer_assignment.h for the rules): slot kinds first, then
 * live ranges (last reader of every value, seen through aliases and tuples), then a
 * linear walk over the program order that frees dead blocks, tries the in-place reuse of
 * an operand's block, and otherwise places the value best-fit in the free list of the
 * arena, growing the arena only when no freed range fits. */
#include "hlo/buffer_assignment.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/shape.h"

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* Bytes of a value: arrays as they are, tuples packed leaf by leaf at aligned offsets.
 * -1 on overflow. */
int64_t hlo_buffer_packed_bytes(const hlo_shape *s, int64_t align) {
  if (!shape_is_tuple(s)) {
    if (s->type == HLO_TOKEN) return 0;
    return shape_byte_size(s);
  }
  int64_t total = 0;
  for (int k = 0; k < s->n_elems; k++) {
    int64_t e = hlo_buffer_packed_bytes(&s->elems[k], align);
    if (e < 0 || e > INT64_MAX / 2 - total) return -1;
    total += align_up(e, align);
  }
  return total;
}

int64_t hlo_buffer_packed_element_offset(const hlo_shape *s, int64_t index, int64_t align) {
  int64_t off = 0;
  for (int k = 0; k < index && k < s->n_elems; k++) off += align_up(hlo_buffer_packed_bytes(&s->elems[k], align), align);
  return off;
}

/* Instruction index within the entry: built once per call from ids. */
typedef struct index_map {
  int *of_id;
  int n_ids;
} index_map;

static kiln_status index_map_make(const hlo_computation *c, index_map *im) {
  int max_id = 0;
  for (int i = 0; i < c->n_instrs; i++)
    if (c->instrs[i]->id > max_id) max_id = c->instrs[i]->id;
  im->n_ids = max_id + 1;
  im->of_id = malloc((size_t)im->n_ids * sizeof(int));
  if (!im->of_id) abort();
  for (int i = 0; i < im->n_ids; i++) im->of_id[i] = -1;
  for (int i = 0; i < c->n_instrs; i++) im->of_id[c->instrs[i]->id] = i;
  for (int i = 0; i < c->n_instrs; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++) {
      const hlo_instr *o = c->instrs[i]->operands[k];
      if (o->id < 0 || o->id >= im->n_ids || im->of_id[o->id] < 0)
        return ERR_INVALID("buffer assignment: %s reads %s, which is not in computation %s", c->instrs[i]->name,
                           o->name, c->name);
    }
  return NULL;
}

static int idx(const index_map *im, const hlo_instr *ins) { return im->of_id[ins->id]; }

/* pos[i]: position of instruction i in a topological order (the list order when it is
 * one, else a stable depth-first post-order). */
static void program_order(const hlo_computation *c, const index_map *im, int *pos) {
  int n = c->n_instrs;
  bool ordered = true;
  for (int i = 0; i < n && ordered; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++)
      if (idx(im, c->instrs[i]->operands[k]) >= i) ordered = false;
  if (ordered) {
    for (int i = 0; i < n; i++) pos[i] = i;
    return;
  }
  unsigned char *state = calloc((size_t)n, 1);
  int *stack = malloc((size_t)n * sizeof(int)), *next = malloc((size_t)n * sizeof(int));
  if (!state || !stack || !next) abort();
  int placed = 0;
  for (int s = 0; s < n; s++) {
    if (state[s]) continue;
    int sp = 0;
    stack[sp] = s;
    next[sp++] = 0;
    state[s] = 1;
    while (sp) {
      int top = stack[sp - 1];
      const hlo_instr *ins = c->instrs[top];
      if (next[sp - 1] < ins->n_operands) {
        int o = idx(im, ins->operands[next[sp - 1]++]);
        if (state[o]) continue; /* placed, or a cycle the verifier rejects */
        state[o] = 1;
        stack[sp] = o;
        next[sp++] = 0;
      } else {
        pos[top] = placed++;
        state[top] = 2;
        sp--;
      }
    }
  }
  free(state);
  free(stack);
  free(next);
}

static bool gte_of_tuple_instr(const hlo_instr *ins) {
  return ins->op == HLO_OP_GET_TUPLE_ELEMENT && ins->n_operands == 1 && ins->operands[0]->op == HLO_OP_TUPLE &&
         ins->tuple_index >= 0 && ins->tuple_index < ins->operands[0]->n_operands;
}

static void assign_kinds(const hlo_computation *c, int64_t align, hlo_buffer_slot *slots) {
  for (int i = 0; i < c->n_instrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    hlo_buffer_slot *s = &slots[i];
    memset(s, 0, sizeof *s);
    s->param_index = -1;
    switch (ins->op) {
      case HLO_OP_PARAMETER:
        s->kind = HLO_BUFFER_PARAMETER;
        s->param_index = (int)ins->parameter_number;
        break;
      case HLO_OP_CONSTANT:
        s->kind = HLO_BUFFER_CONSTANT;
        break;
      case HLO_OP_TUPLE:
        s->kind = HLO_BUFFER_NONE;
        break;
      case HLO_OP_GET_TUPLE_ELEMENT:
        s->kind = HLO_BUFFER_ALIAS;
        if (!gte_of_tuple_instr(ins) && ins->n_operands == 1)
          s->offset = hlo_buffer_packed_element_offset(&ins->operands[0]->shape, ins->tuple_index, align);
        break;
      case HLO_OP_BITCAST:
      case HLO_OP_RESHAPE:
        s->kind = HLO_BUFFER_ALIAS;
        break;
      default:
        s->kind = HLO_BUFFER_ARENA;
        break;
    }
  }
}

/* The instruction whose storage an ALIAS slot i refers to directly. */
static int alias_target(const hlo_computation *c, const index_map *im, int i) {
  const hlo_instr *ins = c->instrs[i];
  if (gte_of_tuple_instr(ins)) return idx(im, ins->operands[0]->operands[ins->tuple_index]);
  return idx(im, ins->operands[0]);
}

bool hlo_buffer_resolve(const hlo_computation *entry, const hlo_buffer_assignment *a, int i, int *base,
                        int64_t *offset) {
  int64_t off = 0;
  for (int steps = 0; steps <= a->n_slots; steps++) {
    const hlo_buffer_slot *s = &a->slots[i];
    if (s->kind == HLO_BUFFER_NONE) return false;
    if (s->kind != HLO_BUFFER_ALIAS) {
      *base = i;
      *offset = off;
      return true;
    }
    const hlo_instr *ins = entry->instrs[i];
    const hlo_instr *target = gte_of_tuple_instr(ins) ? ins->operands[0]->operands[ins->tuple_index] : ins->operands[0];
    off += s->offset;
    i = -1;
    for (int j = 0; j < entry->n_instrs; j++)
      if (entry->instrs[j] == target) i = j;
    if (i < 0) return false;
  }
  return false;
}

/* Marks every value that reading instruction r at position p keeps alive: r itself and,
 * through aliases and tuples, the storage behind it. */
static void mark_read(const hlo_computation *c, const index_map *im, const hlo_buffer_slot *slots, int r, int p,
                      int *last_use, int *stack) {
  int sp = 0;
  stack[sp++] = r;
  while (sp) {
    int i = stack[--sp];
    if (last_use[i] >= p) continue; /* already kept alive to p, and so is what it points at */
    last_use[i] = p;
    if (slots[i].kind == HLO_BUFFER_ALIAS) {
      stack[sp++] = alias_target(c, im, i);
    } else if (slots[i].kind == HLO_BUFFER_NONE) {
      for (int k = 0; k < c->instrs[i]->n_operands; k++) stack[sp++] = idx(im, c->instrs[i]->operands[k]);
    }
  }
}

/* last_use[i]: the last position at which the value of i is read; n for outputs. */
static void live_ranges(const hlo_computation *c, const index_map *im, const hlo_buffer_slot *slots, const int *pos,
                        int *last_use) {
  int n = c->n_instrs;
  int total = 1;
  for (int i = 0; i < n; i++) total += c->instrs[i]->n_operands + 1;
  int *stack = malloc((size_t)total * sizeof(int));
  if (!stack) abort();
  for (int i = 0; i < n; i++) last_use[i] = pos[i];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c->instrs[i]->n_operands; k++)
      mark_read(c, im, slots, idx(im, c->instrs[i]->operands[k]), pos[i], last_use, stack);
  if (c->root) mark_read(c, im, slots, idx(im, c->root), n, last_use, stack);
  free(stack);
}

/* Whether parameter k of a kLoop or kOutput fusion's computation reaches the root only
 * through elementwise ops of the root's dimensions, so element i of it feeds only
 * element i (in a kOutput fusion: the residual of an epilogue add, not an operand of
 * the dot/convolution). */
static bool fusion_param_in_place_safe(const hlo_instr *fusion, int k) {
  const char *kind = fusion->fusion_kind;
  if (!kind || (strcmp(kind, "kLoop") != 0 && strcmp(kind, "kOutput") != 0) || fusion->n_called != 1) return false;
  const hlo_computation *fc = fusion->called[0];
  if (k >= fc->n_params || !fc->params[k] || !fc->root || !shape_is_array(&fc->root->shape)) return false;
  index_map im;
  kiln_status st = index_map_make(fc, &im);
  if (st) {
    kiln_status_free(st);
    free(im.of_id);
    return false;
  }
  bool *dep = calloc((size_t)fc->n_instrs + 1, sizeof(bool));
  if (!dep) abort();
  bool safe = true;
  for (int i = 0; i < fc->n_instrs && safe; i++) {
    const hlo_instr *x = fc->instrs[i];
    if (x == fc->params[k]) {
      dep[i] = true;
      continue;
    }
    for (int o = 0; o < x->n_operands; o++) dep[i] = dep[i] || dep[idx(&im, x->operands[o])];
    if (dep[i] && (!hlo_opcode_is_elementwise(x->op) || !shape_same_dims(&x->shape, &fc->root->shape))) safe = false;
  }
  free(dep);
  free(im.of_id);
  return safe;
}

/* The ARENA instruction whose whole block instruction i names (itself, or through
 * reshapes, bitcasts and tuple plumbing at offset 0); -1 otherwise. Since rows are
 * row-major, element e of such an alias is element e of the block. */
static int arena_base(const hlo_computation *c, const index_map *im, const hlo_buffer_slot *slots, int i) {
  for (int steps = 0; steps <= c->n_instrs; steps++) {
    if (slots[i].kind == HLO_BUFFER_ARENA) return i;
    if (slots[i].kind != HLO_BUFFER_ALIAS || slots[i].offset != 0) return -1;
    i = alias_target(c, im, i);
  }
  return -1;
}

/* Whether user reads base's block through one of its operands. */
static bool reads_block(const hlo_computation *c, const index_map *im, const hlo_buffer_slot *slots,
                        const hlo_instr *user, int base) {
  for (int k = 0; k < user->n_operands; k++)
    if (arena_base(c, im, slots, idx(im, user->operands[k])) == base) return true;
  return false;
}

static bool in_place_candidate(const hlo_instr *ins, int k) {
  const hlo_instr *o = ins->operands[k];
  if (!shape_is_array(&ins->shape) || !shape_is_array(&o->shape) || !shape_same_dims(&o->shape, &ins->shape) ||
      shape_byte_size(&o->shape) != shape_byte_size(&ins->shape))
    return false;
  if (hlo_opcode_is_elementwise(ins->op)) return true;
  /* dynamic-update-slice writes its window over a copy of operand 0: in place, the copy
   * goes away (its start indices and update are separate values). */
  if (ins->op == HLO_OP_DYNAMIC_UPDATE_SLICE) return k == 0;
  return ins->op == HLO_OP_FUSION && fusion_param_in_place_safe(ins, k);
}

bool hlo_buffer_in_place_operand(const hlo_instr *ins, int k) {
  return k >= 0 && k < ins->n_operands && in_place_candidate(ins, k);
}

/* ---- the arena's free list, sorted by offset, adjacent ranges merged ---- */

typedef struct range {
  int64_t off, size;
} range;

typedef struct free_list {
  range *v;
  int n, cap;
} free_list;

static void free_range(free_list *f, int64_t off, int64_t size) {
  if (size <= 0) return;
  if (f->n == f->cap) {
    f->cap = f->cap ? f->cap * 2 : 16;
    f->v = realloc(f->v, (size_t)f->cap * sizeof *f->v);
    if (!f->v) abort();
  }
  int at = 0;
  while (at < f->n && f->v[at].off < off) at++;
  memmove(&f->v[at + 1], &f->v[at], (size_t)(f->n - at) * sizeof *f->v);
  f->v[at] = (range){off, size};
  f->n++;
  if (at + 1 < f->n && f->v[at].off + f->v[at].size == f->v[at + 1].off) { /* merge with the next */
    f->v[at].size += f->v[at + 1].size;
    memmove(&f->v[at + 1], &f->v[at + 2], (size_t)(f->n - at - 2) * sizeof *f->v);
    f->n--;
  }
  if (at > 0 && f->v[at - 1].off + f->v[at - 1].size == f->v[at].off) { /* merge with the previous */
    f->v[at - 1].size += f->v[at].size;
    memmove(&f->v[at], &f->v[at + 1], (size_t)(f->n - at - 1) * sizeof *f->v);
    f->n--;
  }
}

/* Best fit: the smallest free range that holds size (lowest offset on ties); else the
 * arena grows, starting inside a free range that reaches its end if there is one. */
static int64_t take_range(free_list *f, int64_t size, int64_t *arena_bytes) {
  int best = -1;
  for (int i = 0; i < f->n; i++)
    if (f->v[i].size >= size && (best < 0 || f->v[i].size < f->v[best].size)) best = i;
  if (best >= 0) {
    int64_t off = f->v[best].off;
    f->v[best].off += size;
    f->v[best].size -= size;
    if (f->v[best].size == 0) {
      memmove(&f->v[best], &f->v[best + 1], (size_t)(f->n - best - 1) * sizeof *f->v);
      f->n--;
    }
    return off;
  }
  if (f->n > 0 && f->v[f->n - 1].off + f->v[f->n - 1].size == *arena_bytes) {
    int64_t off = f->v[f->n - 1].off;
    f->n--;
    *arena_bytes = off + size;
    return off;
  }
  int64_t off = *arena_bytes;
  *arena_bytes += size;
  return off;
}

kiln_status hlo_assign_buffers(const hlo_computation *entry, int64_t alignment, hlo_buffer_assignment **out) {
  *out = NULL;
  if (!entry) return ERR_INVALID("buffer assignment: no computation");
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return ERR_INVALID("buffer assignment: alignment %lld is not a power of two", (long long)alignment);
  int n = entry->n_instrs;
  index_map im;
  kiln_status st = index_map_make(entry, &im);
  if (st) {
    free(im.of_id);
    return st;
  }
  hlo_buffer_assignment *a = calloc(1, sizeof *a);
  int *pos = malloc(((size_t)n + 1) * sizeof(int)), *order = malloc(((size_t)n + 1) * sizeof(int));
  int *last_use = malloc(((size_t)n + 1) * sizeof(int));
  int *active = malloc(((size_t)n + 1) * sizeof(int)); /* instructions owning an arena block */
  if (!a || !pos || !order || !last_use || !active) abort();
  a->n_slots = n;
  a->slots = calloc((size_t)n + 1, sizeof *a->slots);
  if (!a->slots) abort();
  assign_kinds(entry, alignment, a->slots);
  for (int i = 0; i < n && !st; i++) {
    if (a->slots[i].kind != HLO_BUFFER_ARENA) continue;
    int64_t bytes = hlo_buffer_packed_bytes(&entry->instrs[i]->shape, alignment);
    if (bytes < 0 || bytes > INT64_MAX / 4)
      st = ERR_INVALID("buffer assignment: %s: the size of its result overflows", entry->instrs[i]->name);
    a->slots[i].size = bytes < 0 ? 0 : align_up(bytes, alignment);
  }
  if (!st) {
    program_order(entry, &im, pos);
    for (int i = 0; i < n; i++) order[pos[i]] = i;
    live_ranges(entry, &im, a->slots, pos, last_use);
  }
  free_list fl = {NULL, 0, 0};
  int n_active = 0;
  for (int p = 0; p < n && !st; p++) {
    /* Blocks whose value nobody reads from here on go back to the free list. */
    int w = 0;
    for (int j = 0; j < n_active; j++) {
      int b = active[j];
      if (last_use[b] < p)
        free_range(&fl, a->slots[b].offset, a->slots[b].size);
      else
        active[w++] = b;
    }
    n_active = w;
    int i = order[p];
    hlo_buffer_slot *s = &a->slots[i];
    if (s->kind != HLO_BUFFER_ARENA || s->size == 0) continue;
    const hlo_instr *ins = entry->instrs[i];
    int donor = -1;
    for (int k = 0; k < ins->n_operands && donor < 0; k++) {
      int o = arena_base(entry, &im, a->slots, idx(&im, ins->operands[k]));
      if (o < 0 || last_use[o] != p || a->slots[o].size != s->size || !in_place_candidate(ins, k)) continue;
      /* every other view of the block this op reads must be read elementwise too */
      bool all_views_safe = true;
      for (int j = 0; j < ins->n_operands && all_views_safe; j++)
        if (j != k && arena_base(entry, &im, a->slots, idx(&im, ins->operands[j])) == o)
          all_views_safe = in_place_candidate(ins, j);
      if (all_views_safe) donor = o;
    }
    if (donor >= 0) {
      s->offset = a->slots[donor].offset;
      s->in_place = true;
      for (int j = 0; j < n_active; j++)
        if (active[j] == donor) active[j] = i; /* the block changes hands */
      continue;
    }
    s->offset = take_range(&fl, s->size, &a->arena_bytes);
    active[n_active++] = i;
  }
  free(fl.v);
  free(pos);
  free(order);
  free(last_use);
  free(active);
  free(im.of_id);
  if (st) {
    hlo_buffer_assignment_free(a);
    return st;
  }
  *out = a;
  return NULL;
}

void hlo_buffer_assignment_free(hlo_buffer_assignment *a) {
  if (!a) return;
  free(a->slots);
  free(a);
}

bool hlo_buffer_assignment_check(const hlo_computation *entry, const hlo_buffer_assignment *a) {
  int n = entry->n_instrs;
  if (!a || a->n_slots != n) return false;
  index_map im;
  kiln_status st = index_map_make(entry, &im);
  if (st) {
    kiln_status_free(st);
    free(im.of_id);
    return false;
  }
  int *pos = malloc(((size_t)n + 1) * sizeof(int)), *last_use = malloc(((size_t)n + 1) * sizeof(int));
  if (!pos || !last_use) abort();
  program_order(entry, &im, pos);
  live_ranges(entry, &im, a->slots, pos, last_use);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    const hlo_instr *ins = entry->instrs[i];
    const hlo_buffer_slot *s = &a->slots[i];
    if ((s->kind == HLO_BUFFER_PARAMETER) != (ins->op == HLO_OP_PARAMETER)) ok = false;
    if ((s->kind == HLO_BUFFER_CONSTANT) != (ins->op == HLO_OP_CONSTANT)) ok = false;
    if (s->kind != HLO_BUFFER_ARENA) continue;
    int64_t need = shape_is_tuple(&ins->shape) ? 0 : shape_byte_size(&ins->shape);
    if (s->offset < 0 || s->size < need || s->offset + s->size > a->arena_bytes) ok = false;
    if (s->in_place) { /* must take over the block of an arena operand it reads last */
      bool donor_found = false;
      for (int k = 0; k < ins->n_operands; k++) {
        int o = arena_base(entry, &im, a->slots, idx(&im, ins->operands[k]));
        if (o >= 0 && a->slots[o].offset == s->offset && a->slots[o].size == s->size && last_use[o] == pos[i])
          donor_found = true;
      }
      if (!donor_found) ok = false;
    }
  }
  for (int i = 0; i < n && ok; i++) {
    const hlo_buffer_slot *si = &a->slots[i];
    if (si->kind != HLO_BUFFER_ARENA || si->size == 0) continue;
    for (int j = 0; j < n && ok; j++) {
      const hlo_buffer_slot *sj = &a->slots[j];
      if (j == i || sj->kind != HLO_BUFFER_ARENA || sj->size == 0) continue;
      bool bytes_overlap = si->offset < sj->offset + sj->size && sj->offset < si->offset + si->size;
      bool live_overlap = pos[i] <= last_use[j] && pos[j] <= last_use[i];
      if (!bytes_overlap || !live_overlap) continue;
      /* the one legal case: j is written in place over i at i's last read */
      bool handover = sj->in_place && pos[j] == last_use[i] && sj->offset == si->offset &&
                      reads_block(entry, &im, a->slots, entry->instrs[j], i);
      bool handover_back = si->in_place && pos[i] == last_use[j] && si->offset == sj->offset &&
                           reads_block(entry, &im, a->slots, entry->instrs[i], j);
      if (!handover && !handover_back) ok = false;
    }
  }
  free(pos);
  free(last_use);
  free(im.of_id);
  return ok;
}
