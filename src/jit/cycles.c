/* Pearce–Kelly dynamic topological order behind jit/cycles.h.
 *
 * Every live node holds a distinct rank, and ranks only ever move among the nodes a
 * single insertion disturbs, so they stay a permutation of the slot numbers: a slot
 * keeps its rank while free and a recycled node simply inherits it (it has no edges, so
 * any rank is consistent). Inserting a→b with rank[a] > rank[b] searches forward from b
 * over nodes ranked below a (reaching a means a cycle) and backward from a over nodes
 * ranked above b; the two regions are then handed back their own ranks, the nodes that
 * reach a first, each region keeping its internal order. Nodes outside the window
 * (rank[b], rank[a]) are never touched, which is what keeps typical insertions cheap.
 *
 * Edge lists are "ordered sets": a dense array that fixes the iteration order, plus —
 * once a list outgrows a linear scan — an open-addressing index (linear probing,
 * backward-shift deletion, so no tombstones) from id to array position. Removal swaps
 * the last entry into the hole, keeping every operation O(1) amortised.
 *
 * Besides out-of-memory, the one abort guards an internal invariant: a merge that
 * jit_cycles_can_merge approved must never close a cycle while its edges move over. */
#include "jit/cycles.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lists at most this long are scanned linearly; longer ones get a hash index. */
enum { EDGE_SET_SCAN_LIMIT = 8 };

static void *checked(void *p) {
  if (!p) {
    fputs("kiln: out of memory in the cycle detector\n", stderr);
    abort();
  }
  return p;
}

static void internal_error(const char *what) {
  fprintf(stderr, "kiln: internal error in the cycle detector: %s closed a cycle\n", what);
  abort();
}

static void *grow_array(void *p, int *cap, int need, size_t elem) {
  if (need <= *cap) return p;
  int new_cap = *cap ? *cap : 4;
  while (new_cap < need) {
    if (new_cap > INT32_MAX / 2) checked(NULL);
    new_cap *= 2;
  }
  p = checked(realloc(p, (size_t)new_cap * elem));
  *cap = new_cap;
  return p;
}

/* ---- ordered edge sets ---- */

typedef struct edge_set {
  int *items;
  int count, cap;
  int *slots; /* item index + 1, 0 = empty; NULL while the list is scanned linearly */
  int slot_mask;
} edge_set;

static unsigned slot_hash(int v, int mask) {
  uint32_t h = (uint32_t)v * 0x9E3779B1u;
  h ^= h >> 15;
  return h & (unsigned)mask;
}

/* Slot holding v, or -1. Needs an index. */
static int set_find_slot(const edge_set *s, int v) {
  unsigned i = slot_hash(v, s->slot_mask);
  while (s->slots[i]) {
    if (s->items[s->slots[i] - 1] == v) return (int)i;
    i = (i + 1) & (unsigned)s->slot_mask;
  }
  return -1;
}

static void set_place(edge_set *s, int item_index) {
  unsigned i = slot_hash(s->items[item_index], s->slot_mask);
  while (s->slots[i]) i = (i + 1) & (unsigned)s->slot_mask;
  s->slots[i] = item_index + 1;
}

/* Rebuilds the index with room for `need` items at load factor ≤ 1/2. */
static void set_reindex(edge_set *s, int need) {
  int slot_cap = 16;
  while (slot_cap < 2 * need) {
    if (slot_cap > INT32_MAX / 4) checked(NULL);
    slot_cap *= 2;
  }
  free(s->slots);
  s->slots = checked(calloc((size_t)slot_cap, sizeof *s->slots));
  s->slot_mask = slot_cap - 1;
  for (int k = 0; k < s->count; k++) set_place(s, k);
}

static int set_index_of(const edge_set *s, int v) {
  if (!s->slots) {
    for (int k = 0; k < s->count; k++)
      if (s->items[k] == v) return k;
    return -1;
  }
  int slot = set_find_slot(s, v);
  return slot < 0 ? -1 : s->slots[slot] - 1;
}

static bool set_contains(const edge_set *s, int v) { return set_index_of(s, v) >= 0; }

/* Appends v if absent; true if it was added. */
static bool set_insert(edge_set *s, int v) {
  if (set_contains(s, v)) return false;
  s->items = grow_array(s->items, &s->cap, s->count + 1, sizeof *s->items);
  s->items[s->count++] = v;
  if (s->slots) {
    if (2 * s->count > s->slot_mask + 1)
      set_reindex(s, s->count);
    else
      set_place(s, s->count - 1);
  } else if (s->count > EDGE_SET_SCAN_LIMIT) {
    set_reindex(s, s->count);
  }
  return true;
}

/* Backward-shift deletion: walks the probe run after the hole and pulls back every
 * entry whose home slot does not lie cyclically in (hole, its position]. */
static void set_clear_slot(edge_set *s, int hole) {
  unsigned mask = (unsigned)s->slot_mask;
  unsigned j = (unsigned)hole;
  s->slots[j] = 0;
  for (unsigned k = (j + 1) & mask; s->slots[k]; k = (k + 1) & mask) {
    unsigned home = slot_hash(s->items[s->slots[k] - 1], s->slot_mask);
    bool stays = j < k ? (home > j && home <= k) : (home > j || home <= k);
    if (!stays) {
      s->slots[j] = s->slots[k];
      s->slots[k] = 0;
      j = k;
    }
  }
}

/* Removes v if present; true if it was there. The last item fills the hole. */
static bool set_erase(edge_set *s, int v) {
  int idx, slot = -1;
  if (s->slots) {
    slot = set_find_slot(s, v);
    if (slot < 0) return false;
    idx = s->slots[slot] - 1;
  } else {
    idx = set_index_of(s, v);
    if (idx < 0) return false;
  }
  int last = s->count - 1;
  if (idx != last) {
    if (s->slots) s->slots[set_find_slot(s, s->items[last])] = idx + 1;
    s->items[idx] = s->items[last];
  }
  s->count--;
  if (s->slots) set_clear_slot(s, slot);
  return true;
}

static void set_release(edge_set *s) {
  free(s->items);
  free(s->slots);
  memset(s, 0, sizeof *s);
}

/* ---- the graph ---- */

typedef struct cycle_node {
  int rank;
  bool live;
  bool visited; /* search mark; always false between calls */
  edge_set in, out;
} cycle_node;

typedef struct int_vec {
  int *v;
  int n, cap;
} int_vec;

static void vec_push(int_vec *a, int x) {
  a->v = grow_array(a->v, &a->cap, a->n + 1, sizeof *a->v);
  a->v[a->n++] = x;
}

struct jit_cycles {
  cycle_node *nodes;
  int num_slots, slot_cap;
  int num_live;
  int_vec free_ids; /* LIFO, so recycling is deterministic */
  int_vec stack, marked, delta_f, delta_b, ranks, moved_out, moved_in, parent;
};

jit_cycles *jit_cycles_new(void) { return checked(calloc(1, sizeof(jit_cycles))); }

void jit_cycles_free(jit_cycles *g) {
  if (!g) return;
  for (int i = 0; i < g->num_slots; i++) {
    set_release(&g->nodes[i].in);
    set_release(&g->nodes[i].out);
  }
  free(g->nodes);
  int_vec *vecs[] = {&g->free_ids, &g->stack,     &g->marked,   &g->delta_f, &g->delta_b,
                     &g->ranks,    &g->moved_out, &g->moved_in, &g->parent};
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) free(vecs[i]->v);
  free(g);
}

static bool live(const jit_cycles *g, int node) {
  return node >= 0 && node < g->num_slots && g->nodes[node].live;
}

int jit_cycles_add_node(jit_cycles *g) {
  int id;
  if (g->free_ids.n) {
    id = g->free_ids.v[--g->free_ids.n];
  } else {
    if (g->num_slots == INT32_MAX) checked(NULL);
    g->nodes = grow_array(g->nodes, &g->slot_cap, g->num_slots + 1, sizeof *g->nodes);
    id = g->num_slots++;
    memset(&g->nodes[id], 0, sizeof g->nodes[id]);
    g->nodes[id].rank = id;
  }
  g->nodes[id].live = true;
  g->num_live++;
  return id;
}

void jit_cycles_remove_node(jit_cycles *g, int node) {
  if (!live(g, node)) return;
  cycle_node *n = &g->nodes[node];
  for (int k = 0; k < n->out.count; k++) set_erase(&g->nodes[n->out.items[k]].in, node);
  for (int k = 0; k < n->in.count; k++) set_erase(&g->nodes[n->in.items[k]].out, node);
  set_release(&n->in);
  set_release(&n->out);
  n->live = false;
  g->num_live--;
  vec_push(&g->free_ids, node);
}

bool jit_cycles_has_node(const jit_cycles *g, int node) { return live(g, node); }
int jit_cycles_num_nodes(const jit_cycles *g) { return g->num_live; }
int jit_cycles_id_limit(const jit_cycles *g) { return g->num_slots; }

bool jit_cycles_has_edge(const jit_cycles *g, int from, int to) {
  return live(g, from) && live(g, to) && set_contains(&g->nodes[from].out, to);
}

bool jit_cycles_remove_edge(jit_cycles *g, int from, int to) {
  if (!live(g, from) || !live(g, to) || !set_erase(&g->nodes[from].out, to)) return false;
  set_erase(&g->nodes[to].in, from);
  return true;
}

static void mark(jit_cycles *g, int node) {
  g->nodes[node].visited = true;
  vec_push(&g->marked, node);
}

static void clear_marks(jit_cycles *g) {
  for (int k = 0; k < g->marked.n; k++) g->nodes[g->marked.v[k]].visited = false;
  g->marked.n = 0;
}

/* Forward search over nodes ranked below rank[target], starting from the already
 * pushed g->stack; marks and (if `region`) records every node visited. True as soon
 * as `target` turns up. Marks stay set for the caller to clear. */
static bool search_forward(jit_cycles *g, int target, int_vec *region) {
  int bound = g->nodes[target].rank;
  while (g->stack.n) {
    int n = g->stack.v[--g->stack.n];
    if (g->nodes[n].visited) continue;
    mark(g, n);
    if (region) vec_push(region, n);
    const edge_set *out = &g->nodes[n].out;
    for (int k = 0; k < out->count; k++) {
      int w = out->items[k];
      if (w == target) {
        g->stack.n = 0;
        return true;
      }
      if (!g->nodes[w].visited && g->nodes[w].rank < bound) vec_push(&g->stack, w);
    }
  }
  return false;
}

/* Backward search from `start` over nodes ranked above `lower`, recording them. */
static void search_backward(jit_cycles *g, int start, int lower, int_vec *region) {
  vec_push(&g->stack, start);
  while (g->stack.n) {
    int n = g->stack.v[--g->stack.n];
    if (g->nodes[n].visited) continue;
    mark(g, n);
    vec_push(region, n);
    const edge_set *in = &g->nodes[n].in;
    for (int k = 0; k < in->count; k++) {
      int w = in->items[k];
      if (!g->nodes[w].visited && g->nodes[w].rank > lower) vec_push(&g->stack, w);
    }
  }
}

/* qsort has no context argument, so a region is sorted as (rank, node) pairs packed
 * into 64-bit keys rather than through a comparator that would need the graph. */
static int compare_keys(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void sort_by_rank(jit_cycles *g, int_vec *region) {
  if (region->n < 2) return;
  uint64_t *keys = checked(malloc((size_t)region->n * sizeof *keys));
  for (int k = 0; k < region->n; k++)
    keys[k] = ((uint64_t)(uint32_t)g->nodes[region->v[k]].rank << 32) | (uint32_t)region->v[k];
  qsort(keys, (size_t)region->n, sizeof *keys, compare_keys);
  for (int k = 0; k < region->n; k++) region->v[k] = (int)(uint32_t)keys[k];
  free(keys);
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

/* Hands the union of both regions' ranks back in ascending order: first to the nodes
 * that reach the new edge's source (delta_b), then to those it now reaches (delta_f). */
static void reorder(jit_cycles *g) {
  sort_by_rank(g, &g->delta_b);
  sort_by_rank(g, &g->delta_f);
  g->ranks.n = 0;
  for (int k = 0; k < g->delta_b.n; k++) vec_push(&g->ranks, g->nodes[g->delta_b.v[k]].rank);
  for (int k = 0; k < g->delta_f.n; k++) vec_push(&g->ranks, g->nodes[g->delta_f.v[k]].rank);
  qsort(g->ranks.v, (size_t)g->ranks.n, sizeof *g->ranks.v, compare_ints);
  int r = 0;
  for (int k = 0; k < g->delta_b.n; k++) g->nodes[g->delta_b.v[k]].rank = g->ranks.v[r++];
  for (int k = 0; k < g->delta_f.n; k++) g->nodes[g->delta_f.v[k]].rank = g->ranks.v[r++];
}

bool jit_cycles_insert_edge(jit_cycles *g, int from, int to) {
  if (!live(g, from) || !live(g, to) || from == to) return false;
  if (!set_insert(&g->nodes[from].out, to)) return true; /* already there */
  set_insert(&g->nodes[to].in, from);
  if (g->nodes[from].rank < g->nodes[to].rank) return true;

  /* `to` is ranked before `from`: anything `to` reaches that is ranked at or below
   * `from` must move after it, unless `from` itself is among them (a cycle). */
  g->delta_f.n = g->delta_b.n = 0;
  vec_push(&g->stack, to);
  if (search_forward(g, from, &g->delta_f)) {
    clear_marks(g);
    set_erase(&g->nodes[from].out, to);
    set_erase(&g->nodes[to].in, from);
    return false;
  }
  search_backward(g, from, g->nodes[to].rank, &g->delta_b);
  clear_marks(g);
  reorder(g);
  return true;
}

bool jit_cycles_is_reachable(jit_cycles *g, int from, int to) {
  if (!live(g, from) || !live(g, to)) return false;
  if (from == to) return true;
  if (g->nodes[from].rank > g->nodes[to].rank) return false;
  vec_push(&g->stack, from);
  bool found = search_forward(g, to, NULL);
  clear_marks(g);
  return found;
}

/* Is there a path from → x → … → to of two or more edges? Only nodes ranked strictly
 * between the two can lie on one, so the search is bounded by rank[to]. */
static bool has_indirect_path(jit_cycles *g, int from, int to) {
  if (g->nodes[from].rank > g->nodes[to].rank) return false;
  const edge_set *out = &g->nodes[from].out;
  for (int k = 0; k < out->count; k++) {
    int w = out->items[k];
    if (w != to && g->nodes[w].rank < g->nodes[to].rank) vec_push(&g->stack, w);
  }
  bool found = search_forward(g, to, NULL);
  clear_marks(g);
  return found;
}

bool jit_cycles_can_merge(jit_cycles *g, int a, int b) {
  if (!live(g, a) || !live(g, b) || a == b) return false;
  return !has_indirect_path(g, a, b) && !has_indirect_path(g, b, a);
}

static void copy_ids(int_vec *dst, const edge_set *src) {
  dst->n = 0;
  for (int k = 0; k < src->count; k++) vec_push(dst, src->items[k]);
}

bool jit_cycles_merge_nodes(jit_cycles *g, int a, int b) {
  if (!jit_cycles_can_merge(g, a, b)) return false;
  /* Copies first: removing b edits its neighbours' lists, and re-inserting may grow
   * g->nodes. Each re-insertion re-ranks as needed; none can fail, since a cycle
   * through the merged node would need one of the paths can_merge just ruled out. */
  copy_ids(&g->moved_out, &g->nodes[b].out);
  copy_ids(&g->moved_in, &g->nodes[b].in);
  jit_cycles_remove_node(g, b);
  for (int k = 0; k < g->moved_out.n; k++) {
    int w = g->moved_out.v[k];
    if (w != a && !jit_cycles_insert_edge(g, a, w)) internal_error("merge re-insertion");
  }
  for (int k = 0; k < g->moved_in.n; k++) {
    int w = g->moved_in.v[k];
    if (w != a && !jit_cycles_insert_edge(g, w, a)) internal_error("merge re-insertion");
  }
  return true;
}

bool jit_cycles_can_contract_edge(jit_cycles *g, int a, int b) {
  return jit_cycles_has_edge(g, a, b) && !has_indirect_path(g, a, b);
}

bool jit_cycles_contract_edge(jit_cycles *g, int a, int b) {
  /* With the edge a→b present, b cannot reach a, so can_merge reduces to the check
   * above; merge_nodes repeats it (cheaply) and does the work. */
  if (!jit_cycles_has_edge(g, a, b)) return false;
  return jit_cycles_merge_nodes(g, a, b);
}

int jit_cycles_successors(const jit_cycles *g, int node, const int **out) {
  *out = NULL;
  if (!live(g, node)) return 0;
  *out = g->nodes[node].out.items;
  return g->nodes[node].out.count;
}

int jit_cycles_predecessors(const jit_cycles *g, int node, const int **out) {
  *out = NULL;
  if (!live(g, node)) return 0;
  *out = g->nodes[node].in.items;
  return g->nodes[node].in.count;
}

int jit_cycles_rank(const jit_cycles *g, int node) {
  return live(g, node) ? g->nodes[node].rank : -1;
}

int jit_cycles_find_path(jit_cycles *g, int from, int to, int *path, int max_len) {
  if (!live(g, from) || !live(g, to)) return 0;
  if (from == to) {
    if (max_len > 0) path[0] = from;
    return 1;
  }
  if (g->nodes[from].rank > g->nodes[to].rank) return 0;
  /* Breadth-first (g->stack used as a queue) for a shortest path, over nodes ranked no
   * later than `to`; parent[] links each reached node back towards `from`, and only
   * reached nodes are ever read, so the array needs no clearing. */
  g->parent.v = grow_array(g->parent.v, &g->parent.cap, g->num_slots, sizeof *g->parent.v);
  g->parent.v[from] = -1; /* every other reached node gets its parent when marked */
  int bound = g->nodes[to].rank;
  g->stack.n = 0;
  vec_push(&g->stack, from);
  mark(g, from);
  bool found = false;
  for (int head = 0; head < g->stack.n && !found; head++) {
    int n = g->stack.v[head];
    const edge_set *out = &g->nodes[n].out;
    for (int k = 0; k < out->count; k++) {
      int w = out->items[k];
      if (g->nodes[w].visited || g->nodes[w].rank > bound) continue;
      mark(g, w);
      g->parent.v[w] = n;
      if (w == to) {
        found = true;
        break;
      }
      vec_push(&g->stack, w);
    }
  }
  g->stack.n = 0;
  clear_marks(g);
  if (!found) return 0;
  int len = 0;
  for (int n = to; n != -1; n = g->parent.v[n]) len++;
  int pos = len;
  for (int n = to; n != -1; n = g->parent.v[n])
    if (--pos < max_len) path[pos] = n;
  return len;
}

static bool set_consistent(const edge_set *s) {
  if (s->count > s->cap) return false;
  if (!s->slots) return s->count <= EDGE_SET_SCAN_LIMIT;
  int filled = 0;
  for (int i = 0; i <= s->slot_mask; i++) {
    if (!s->slots[i]) continue;
    filled++;
    int idx = s->slots[i] - 1;
    if (idx < 0 || idx >= s->count || set_find_slot(s, s->items[idx]) != i) return false;
  }
  return filled == s->count;
}

bool jit_cycles_check_invariants(const jit_cycles *g) {
  if (g->num_slots == 0) return g->num_live == 0;
  bool ok = true;
  int live_count = 0;
  char *rank_seen = checked(calloc((size_t)g->num_slots, 1));
  for (int i = 0; i < g->num_slots && ok; i++) {
    const cycle_node *n = &g->nodes[i];
    if (n->visited || n->rank < 0 || n->rank >= g->num_slots || rank_seen[n->rank]) ok = false;
    else rank_seen[n->rank] = 1;
    if (!n->live) {
      if (n->in.count || n->out.count) ok = false;
      continue;
    }
    live_count++;
    if (!set_consistent(&n->in) || !set_consistent(&n->out)) ok = false;
    for (int k = 0; k < n->out.count && ok; k++) {
      int w = n->out.items[k];
      if (!live(g, w) || w == i || g->nodes[w].rank <= n->rank) ok = false;
      else if (set_index_of(&n->out, w) != k || !set_contains(&g->nodes[w].in, i)) ok = false;
    }
    for (int k = 0; k < n->in.count && ok; k++) {
      int w = n->in.items[k];
      if (!live(g, w) || w == i || set_index_of(&n->in, w) != k ||
          !set_contains(&g->nodes[w].out, i))
        ok = false;
    }
  }
  free(rank_seen);
  return ok && live_count == g->num_live;
}
