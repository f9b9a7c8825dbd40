/* Tests of the bridge's online cycle detector (jit/cycles.h). The property test drives
 * hundreds of seeded random graphs through random sequences of every mutation and
 * compares each answer with a brute-force model (an adjacency matrix and a transitive
 * closure recomputed from scratch), checking the rank invariant and the full edge
 * lists after every step; hand cases pin down the classic traps (a merge that would
 * close a cycle through a third node, self-loops, id recycling) and a 100k-node chain
 * checks that rank-consistent insertions and contractions stay linear. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "jit/cycles.h"

/* ---- brute-force model ---- */

enum { MODEL_MAX = 32, MODEL_MAX_LIVE = 22 };

typedef struct model {
  bool live[MODEL_MAX];
  bool adj[MODEL_MAX][MODEL_MAX];
  uint32_t reach[MODEL_MAX]; /* reflexive-transitive closure, bit w of reach[v] */
} model;

static void model_close(model *m) {
  for (int v = 0; v < MODEL_MAX; v++) {
    m->reach[v] = m->live[v] ? 1u << v : 0;
    for (int w = 0; w < MODEL_MAX; w++)
      if (m->adj[v][w]) m->reach[v] |= 1u << w;
  }
  for (int k = 0; k < MODEL_MAX; k++)
    for (int v = 0; v < MODEL_MAX; v++)
      if (m->reach[v] >> k & 1u) m->reach[v] |= m->reach[k];
}

static bool model_reaches(const model *m, int from, int to) {
  return m->live[from] && m->live[to] && (m->reach[from] >> to & 1u);
}

/* A path from → x → … → to of two or more edges. */
static bool model_indirect(const model *m, int from, int to) {
  for (int x = 0; x < MODEL_MAX; x++)
    if (x != to && x != from && m->adj[from][x] && model_reaches(m, x, to)) return true;
  return false;
}

/* Shortest path length in edges, or -1. */
static int model_distance(const model *m, int from, int to) {
  int dist[MODEL_MAX], queue[MODEL_MAX], head = 0, tail = 0;
  for (int v = 0; v < MODEL_MAX; v++) dist[v] = -1;
  dist[from] = 0;
  queue[tail++] = from;
  while (head < tail) {
    int v = queue[head++];
    for (int w = 0; w < MODEL_MAX; w++)
      if (m->adj[v][w] && dist[w] < 0) {
        dist[w] = dist[v] + 1;
        queue[tail++] = w;
      }
  }
  return dist[to];
}

static void model_merge(model *m, int a, int b) {
  for (int w = 0; w < MODEL_MAX; w++) {
    if (m->adj[b][w] && w != a) m->adj[a][w] = true;
    if (m->adj[w][b] && w != a) m->adj[w][a] = true;
    m->adj[b][w] = m->adj[w][b] = false;
  }
  m->adj[a][b] = m->adj[b][a] = false;
  m->live[b] = false;
}

static void model_remove(model *m, int v) {
  for (int w = 0; w < MODEL_MAX; w++) m->adj[v][w] = m->adj[w][v] = false;
  m->live[v] = false;
}

static uint64_t rng_state;
static uint32_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 11);
}
static int rng_below(int n) { return (int)(rng() % (uint32_t)n); }

static int model_live_count(const model *m) {
  int n = 0;
  for (int v = 0; v < MODEL_MAX; v++) n += m->live[v];
  return n;
}

static int random_live(const model *m) {
  int n = model_live_count(m);
  if (!n) return -1;
  int k = rng_below(n);
  for (int v = 0; v < MODEL_MAX; v++)
    if (m->live[v] && k-- == 0) return v;
  return -1;
}

static bool random_edge(const model *m, int *a, int *b) {
  int n = 0;
  for (int v = 0; v < MODEL_MAX; v++)
    for (int w = 0; w < MODEL_MAX; w++) n += m->adj[v][w];
  if (!n) return false;
  int k = rng_below(n);
  for (int v = 0; v < MODEL_MAX; v++)
    for (int w = 0; w < MODEL_MAX; w++)
      if (m->adj[v][w] && k-- == 0) {
        *a = v;
        *b = w;
        return true;
      }
  return false;
}

/* Counts mismatches instead of CHECKing each one, so one bug does not print thousands
 * of lines; the caller reports the first failing seed/step. */
static int compare_with_model(jit_cycles *g, const model *m, bool all_pairs) {
  int bad = 0;
  if (!jit_cycles_check_invariants(g)) bad++;
  if (jit_cycles_num_nodes(g) != model_live_count(m)) bad++;
  if (jit_cycles_id_limit(g) > MODEL_MAX) bad++;
  for (int v = 0; v < MODEL_MAX; v++) {
    if (jit_cycles_has_node(g, v) != m->live[v]) bad++;
    const int *succ, *pred;
    int ns = jit_cycles_successors(g, v, &succ), np = jit_cycles_predecessors(g, v, &pred);
    int want_s = 0, want_p = 0;
    for (int w = 0; w < MODEL_MAX; w++) {
      want_s += m->adj[v][w];
      want_p += m->adj[w][v];
      if (jit_cycles_has_edge(g, v, w) != m->adj[v][w]) bad++;
    }
    if (ns != want_s || np != want_p) {
      bad++;
      continue;
    }
    uint32_t seen = 0;
    for (int k = 0; k < ns; k++) {
      if (succ[k] < 0 || succ[k] >= MODEL_MAX || !m->adj[v][succ[k]] || (seen >> succ[k] & 1u)) bad++;
      else seen |= 1u << succ[k];
      if (jit_cycles_rank(g, v) >= jit_cycles_rank(g, succ[k])) bad++;
    }
    seen = 0;
    for (int k = 0; k < np; k++) {
      if (pred[k] < 0 || pred[k] >= MODEL_MAX || !m->adj[pred[k]][v] || (seen >> pred[k] & 1u)) bad++;
      else seen |= 1u << pred[k];
    }
  }
  for (int t = 0; t < (all_pairs ? MODEL_MAX * MODEL_MAX : 24); t++) {
    int a = all_pairs ? t / MODEL_MAX : rng_below(MODEL_MAX);
    int b = all_pairs ? t % MODEL_MAX : rng_below(MODEL_MAX);
    if (jit_cycles_is_reachable(g, a, b) != model_reaches(m, a, b)) bad++;
  }
  return bad;
}

/* How often each answer came up, so the log shows both branches were exercised. */
static int stat_insert[2], stat_contract[2], stat_merge[2];

/* One random mutation or query, checked against the model; answers mismatches. */
static int random_step(jit_cycles *g, model *m) {
  int bad = 0, a = random_live(m), b = random_live(m);
  if (a < 0) {
    int id = jit_cycles_add_node(g);
    if (id < 0 || id >= MODEL_MAX || m->live[id]) return 1;
    m->live[id] = true;
    model_close(m);
    return 0;
  }
  switch (rng_below(12)) {
    case 0:
    case 1:
    case 2: { /* insert: refused exactly when it would close a cycle */
      if (rng_below(10) == 0) b = a;
      bool want = a != b && !model_reaches(m, b, a);
      if (jit_cycles_insert_edge(g, a, b) != want) bad++;
      if (want) m->adj[a][b] = true;
      stat_insert[want]++;
      break;
    }
    case 3: { /* remove an existing edge, or try a random pair */
      if (rng_below(3)) random_edge(m, &a, &b);
      bool want = m->adj[a][b];
      if (jit_cycles_remove_edge(g, a, b) != want) bad++;
      m->adj[a][b] = false;
      break;
    }
    case 4:
    case 5: { /* contract: allowed iff the edge exists and is the only path */
      if (rng_below(5)) random_edge(m, &a, &b);
      bool want = m->adj[a][b] && !model_indirect(m, a, b);
      if (jit_cycles_can_contract_edge(g, a, b) != want) bad++;
      if (jit_cycles_contract_edge(g, a, b) != want) bad++;
      if (want) model_merge(m, a, b);
      stat_contract[want]++;
      break;
    }
    case 6: { /* merge of any two nodes */
      bool want = a != b && !model_indirect(m, a, b) && !model_indirect(m, b, a);
      if (jit_cycles_can_merge(g, a, b) != want) bad++;
      if (jit_cycles_merge_nodes(g, a, b) != want) bad++;
      if (want) model_merge(m, a, b);
      stat_merge[want]++;
      break;
    }
    case 7:
    case 8: {
      if (model_live_count(m) >= MODEL_MAX_LIVE) break;
      int id = jit_cycles_add_node(g);
      if (id < 0 || id >= MODEL_MAX || m->live[id]) return bad + 1;
      m->live[id] = true;
      break;
    }
    case 9:
      if (rng_below(2)) {
        jit_cycles_remove_node(g, a);
        model_remove(m, a);
      }
      break;
    case 10: { /* shortest path agrees with BFS on the model, and is a real path */
      int path[MODEL_MAX];
      int len = jit_cycles_find_path(g, a, b, path, MODEL_MAX);
      int dist = model_distance(m, a, b);
      if (len != dist + 1) bad++;
      if (len > 0 && (path[0] != a || path[len - 1] != b)) bad++;
      for (int k = 0; k + 1 < len; k++)
        if (!m->adj[path[k]][path[k + 1]]) bad++;
      break;
    }
    default: { /* dead and out-of-range ids are absent, never a crash */
      int dead = -1;
      for (int v = 0; v < MODEL_MAX && dead < 0; v++)
        if (!m->live[v]) dead = v;
      int bogus[] = {-1, dead, MODEL_MAX + 5, 1 << 30};
      for (size_t k = 0; k < sizeof bogus / sizeof bogus[0]; k++) {
        int x = bogus[k];
        if (x == -1 && k) continue;
        if (jit_cycles_insert_edge(g, a, x) || jit_cycles_insert_edge(g, x, a)) bad++;
        if (jit_cycles_has_edge(g, a, x) || jit_cycles_is_reachable(g, x, x)) bad++;
        if (jit_cycles_contract_edge(g, a, x) || jit_cycles_merge_nodes(g, x, a)) bad++;
        if (jit_cycles_remove_edge(g, x, a) || jit_cycles_rank(g, x) != -1) bad++;
        jit_cycles_remove_node(g, x);
      }
      break;
    }
  }
  model_close(m);
  return bad;
}

static void test_random_against_brute_force(void) {
  const int graphs = 400, steps = 150;
  int failed_graphs = 0, inserts_checked = 0;
  for (int seed = 1; seed <= graphs; seed++) {
    rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)seed;
    jit_cycles *g = jit_cycles_new();
    model m;
    memset(&m, 0, sizeof m);
    /* A random DAG to start from, built through insert_edge itself. */
    int n = 2 + rng_below(MODEL_MAX_LIVE - 1);
    for (int k = 0; k < n; k++) m.live[jit_cycles_add_node(g)] = true;
    int density = 1 + rng_below(4), bad = 0;
    for (int k = 0; k < density * n; k++) {
      int a = rng_below(n), b = rng_below(n);
      bool want = a != b && !model_reaches(&m, b, a);
      if (jit_cycles_insert_edge(g, a, b) != want) bad++;
      if (want) m.adj[a][b] = true;
      model_close(&m);
      inserts_checked++;
    }
    bad += compare_with_model(g, &m, true);
    for (int step = 0; step < steps && !bad; step++) {
      bad += random_step(g, &m);
      bad += compare_with_model(g, &m, step % 16 == 0);
      if (bad) fprintf(stderr, "cycles: seed %d diverged at step %d\n", seed, step);
    }
    if (bad) failed_graphs++;
    jit_cycles_free(g);
  }
  fprintf(stderr,
          "cycles: %d graphs x %d steps; inserts ok/refused %d/%d, contractions %d/%d, "
          "merges %d/%d\n",
          graphs, steps, stat_insert[1], stat_insert[0], stat_contract[1], stat_contract[0],
          stat_merge[1], stat_merge[0]);
  CHECK(failed_graphs == 0);
  CHECK(inserts_checked > graphs * 2);
  CHECK(stat_insert[0] > 1000 && stat_contract[0] > 100 && stat_contract[1] > 1000);
  CHECK(stat_merge[0] > 100 && stat_merge[1] > 1000);
}

/* a→b and a→c→b: merging a and b would make the merged node feed c and consume it. */
static void test_contract_refuses_indirect_path(void) {
  jit_cycles *g = jit_cycles_new();
  int a = jit_cycles_add_node(g), b = jit_cycles_add_node(g), c = jit_cycles_add_node(g);
  CHECK(jit_cycles_insert_edge(g, a, b));
  CHECK(jit_cycles_insert_edge(g, a, c));
  CHECK(jit_cycles_insert_edge(g, c, b));
  CHECK(!jit_cycles_can_contract_edge(g, a, b));
  CHECK(!jit_cycles_contract_edge(g, a, b));
  CHECK(!jit_cycles_merge_nodes(g, b, a));
  /* Unchanged, down to the order of the lists. */
  const int *succ;
  CHECK(jit_cycles_successors(g, a, &succ) == 2 && succ[0] == b && succ[1] == c);
  CHECK(jit_cycles_num_nodes(g) == 3 && jit_cycles_has_edge(g, c, b));
  int path[3];
  CHECK(jit_cycles_find_path(g, c, b, path, 3) == 2 && path[0] == c && path[1] == b);
  /* Contracting c into a first removes the detour; then a-b is safe. */
  CHECK(jit_cycles_contract_edge(g, a, c));
  CHECK(!jit_cycles_has_node(g, c));
  CHECK(jit_cycles_successors(g, a, &succ) == 1 && succ[0] == b);
  CHECK(jit_cycles_contract_edge(g, a, b));
  CHECK(jit_cycles_num_nodes(g) == 1 && jit_cycles_successors(g, a, &succ) == 0);
  CHECK(jit_cycles_check_invariants(g));
  jit_cycles_free(g);
}

static void test_self_loops_and_cycles_refused(void) {
  jit_cycles *g = jit_cycles_new();
  int a = jit_cycles_add_node(g), b = jit_cycles_add_node(g), c = jit_cycles_add_node(g);
  CHECK(!jit_cycles_insert_edge(g, a, a));
  CHECK(!jit_cycles_contract_edge(g, a, a) && !jit_cycles_merge_nodes(g, a, a));
  CHECK(jit_cycles_insert_edge(g, c, b)); /* against the initial ranks: reorders */
  CHECK(jit_cycles_insert_edge(g, b, a));
  CHECK(jit_cycles_rank(g, c) < jit_cycles_rank(g, b) && jit_cycles_rank(g, b) < jit_cycles_rank(g, a));
  CHECK(!jit_cycles_insert_edge(g, a, c));
  CHECK(!jit_cycles_insert_edge(g, a, b));
  CHECK(!jit_cycles_has_edge(g, a, c) && jit_cycles_num_nodes(g) == 3);
  CHECK(jit_cycles_insert_edge(g, c, b)); /* duplicate: accepted, stays single */
  const int *pred;
  CHECK(jit_cycles_predecessors(g, b, &pred) == 1 && pred[0] == c);
  CHECK(jit_cycles_is_reachable(g, c, a) && !jit_cycles_is_reachable(g, a, c));
  CHECK(jit_cycles_is_reachable(g, b, b));
  int path[3];
  CHECK(jit_cycles_find_path(g, c, a, path, 3) == 3 && path[0] == c && path[1] == b && path[2] == a);
  CHECK(jit_cycles_find_path(g, c, a, path, 1) == 3 && path[0] == c);
  CHECK(jit_cycles_find_path(g, a, c, path, 3) == 0);
  /* Merging along b→a (the second node first) is fine: the edge becomes internal. */
  CHECK(jit_cycles_merge_nodes(g, a, b));
  CHECK(jit_cycles_has_edge(g, c, a) && !jit_cycles_has_node(g, b));
  CHECK(jit_cycles_check_invariants(g));
  jit_cycles_free(g);
}

static void test_remove_nodes_and_edges(void) {
  jit_cycles *g = jit_cycles_new();
  int a = jit_cycles_add_node(g), b = jit_cycles_add_node(g), c = jit_cycles_add_node(g);
  CHECK(jit_cycles_insert_edge(g, a, b) && jit_cycles_insert_edge(g, b, c));
  CHECK(jit_cycles_is_reachable(g, a, c));
  CHECK(jit_cycles_remove_edge(g, b, c) && !jit_cycles_remove_edge(g, b, c));
  CHECK(!jit_cycles_is_reachable(g, a, c));
  CHECK(jit_cycles_insert_edge(g, c, a)); /* legal now */
  jit_cycles_remove_node(g, b);
  CHECK(!jit_cycles_has_node(g, b) && jit_cycles_num_nodes(g) == 2);
  const int *list;
  CHECK(jit_cycles_successors(g, a, &list) == 0 && jit_cycles_successors(g, b, &list) == 0);
  /* The id comes back, with no edges. */
  int d = jit_cycles_add_node(g);
  CHECK(d == b && jit_cycles_predecessors(g, d, &list) == 0);
  CHECK(jit_cycles_insert_edge(g, a, d) && jit_cycles_insert_edge(g, d, c) == false);
  CHECK(jit_cycles_id_limit(g) == 3);
  CHECK(jit_cycles_check_invariants(g));
  jit_cycles_free(g);
  jit_cycles_free(NULL);
}

/* Iteration order is insertion order, a removal moving the last entry into the hole,
 * with and without the hash index behind the list. */
static void test_edge_list_order_and_large_degree(void) {
  jit_cycles *g = jit_cycles_new();
  int hub = jit_cycles_add_node(g);
  enum { N = 3000 };
  int ids[N];
  for (int k = 0; k < N; k++) ids[k] = jit_cycles_add_node(g);
  for (int k = N - 1; k >= 0; k--) CHECK(jit_cycles_insert_edge(g, ids[k], hub) == true);
  for (int k = 0; k < N; k++) jit_cycles_insert_edge(g, hub, ids[k]); /* all refused */
  const int *list;
  CHECK(jit_cycles_successors(g, hub, &list) == 0);
  CHECK(jit_cycles_predecessors(g, hub, &list) == N && list[0] == ids[N - 1] && list[N - 1] == ids[0]);
  for (int k = 0; k < N; k += 2) CHECK(jit_cycles_remove_edge(g, ids[k], hub));
  CHECK(jit_cycles_predecessors(g, hub, &list) == N / 2);
  int ok = 0;
  for (int k = 0; k < N; k++) ok += jit_cycles_has_edge(g, ids[k], hub) == (k % 2 == 1);
  CHECK(ok == N);
  CHECK(jit_cycles_check_invariants(g));

  int a = jit_cycles_add_node(g), b = jit_cycles_add_node(g), c = jit_cycles_add_node(g),
      d = jit_cycles_add_node(g);
  CHECK(jit_cycles_insert_edge(g, a, d) && jit_cycles_insert_edge(g, a, b) && jit_cycles_insert_edge(g, a, c));
  CHECK(jit_cycles_successors(g, a, &list) == 3 && list[0] == d && list[1] == b && list[2] == c);
  CHECK(jit_cycles_remove_edge(g, a, d));
  CHECK(jit_cycles_successors(g, a, &list) == 2 && list[0] == c && list[1] == b);
  jit_cycles_free(g);
}

/* The while-frame recipe documented in cycles.h: drop the NextIteration back edge,
 * then merge the frame's members into one node in a topological order of the body. */
static void test_while_frame_collapses(void) {
  for (int feedback = 0; feedback < 2; feedback++) {
    jit_cycles *g = jit_cycles_new();
    enum { X, Y, ENTER1, ENTER2, MERGE1, MERGE2, COND, SWITCH1, BODY, NEXT1, EXIT1, Z, COUNT };
    int id[COUNT];
    for (int k = 0; k < COUNT; k++) id[k] = jit_cycles_add_node(g);
    static const int edges[][2] = {
        {X, ENTER1},       {Y, ENTER2},    {ENTER1, MERGE1}, {ENTER2, MERGE2}, {MERGE1, COND},
        {COND, SWITCH1},   {MERGE1, SWITCH1}, {SWITCH1, BODY}, {MERGE2, BODY}, {BODY, NEXT1},
        {SWITCH1, EXIT1},  {EXIT1, Z}, /* NEXT1 → MERGE1 is the back edge: left out */
    };
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
      CHECK(jit_cycles_insert_edge(g, id[edges[k][0]], id[edges[k][1]]));
    /* With feedback, the loop's own result flows back into its second input. */
    if (feedback) {
      CHECK(jit_cycles_insert_edge(g, id[Z], id[Y]));
      /* ENTER2 is reached from ENTER1 only by leaving the frame: EXIT1 → Z → Y. */
      int path[8];
      CHECK(jit_cycles_find_path(g, id[ENTER1], id[ENTER2], path, 8) == 7 && path[3] == id[EXIT1]);
      CHECK(!jit_cycles_can_merge(g, id[ENTER1], id[ENTER2]));
    }
    static const int members_in_order[] = {ENTER2, MERGE1, MERGE2, COND, SWITCH1, BODY, NEXT1, EXIT1};
    int rep = id[ENTER1], merged = 0;
    for (size_t k = 0; k < sizeof members_in_order / sizeof members_in_order[0]; k++)
      merged += jit_cycles_merge_nodes(g, rep, id[members_in_order[k]]);
    if (!feedback) {
      CHECK(merged == 8 && jit_cycles_num_nodes(g) == 4);
      const int *list;
      CHECK(jit_cycles_predecessors(g, rep, &list) == 2);
      CHECK(jit_cycles_has_edge(g, id[X], rep) && jit_cycles_has_edge(g, id[Y], rep));
      CHECK(jit_cycles_successors(g, rep, &list) == 1 && list[0] == id[Z]);
    } else {
      CHECK(merged < 8 && jit_cycles_has_node(g, id[ENTER2]));
    }
    CHECK(jit_cycles_check_invariants(g));
    jit_cycles_free(g);
  }
}

/* A DAG whose true order is a random permutation of the ids, so most insertions
 * disagree with the initial ranks and re-rank large regions; every edge along the
 * permutation must be accepted, every edge against a path must be refused. */
static void test_shuffled_dag_at_scale(void) {
  enum { N = 2000, E = 8000 };
  rng_state = 0x2545F4914F6CDD1Dull;
  int *perm = malloc(N * sizeof *perm);
  CHECK(perm != NULL);
  if (!perm) return;
  for (int k = 0; k < N; k++) perm[k] = k;
  for (int k = N - 1; k > 0; k--) {
    int j = rng_below(k + 1), t = perm[k];
    perm[k] = perm[j];
    perm[j] = t;
  }
  jit_cycles *g = jit_cycles_new();
  for (int k = 0; k < N; k++) jit_cycles_add_node(g);
  int refused = 0, accepted_backward = 0;
  for (int e = 0; e < E; e++) {
    int lo = rng_below(N - 1), hi = lo + 1 + rng_below(e % 2 ? 20 : N - 1 - lo);
    if (hi >= N) hi = N - 1;
    refused += !jit_cycles_insert_edge(g, perm[lo], perm[hi]);
  }
  CHECK(refused == 0);
  CHECK(jit_cycles_check_invariants(g));
  for (int t = 0; t < 2000; t++) {
    int lo = rng_below(N - 1), hi = lo + 1 + rng_below(N - 1 - lo);
    bool path = jit_cycles_is_reachable(g, perm[lo], perm[hi]);
    CHECK(!jit_cycles_is_reachable(g, perm[hi], perm[lo]));
    if (jit_cycles_insert_edge(g, perm[hi], perm[lo])) {
      accepted_backward++;
      CHECK(!path);
      CHECK(jit_cycles_remove_edge(g, perm[hi], perm[lo]));
    } else {
      CHECK(path);
    }
  }
  CHECK(accepted_backward > 0 && accepted_backward < 2000);
  CHECK(jit_cycles_check_invariants(g));
  jit_cycles_free(g);
  free(perm);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* A chain whose edges arrive back to front: a detector that searched on every insert
 * (the tail already being long) would be quadratic; ranks make each insert O(1). Then
 * the chain contracts into its head, each step O(1) as well. */
static void test_long_chain_is_linear(void) {
  enum { N = 100000 };
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  jit_cycles *g = jit_cycles_new();
  for (int k = 0; k < N; k++) CHECK(jit_cycles_add_node(g) == k);
  int refused = 0;
  for (int k = N - 2; k >= 0; k--) refused += !jit_cycles_insert_edge(g, k, k + 1);
  CHECK(refused == 0);
  CHECK(jit_cycles_is_reachable(g, 0, N - 1) && !jit_cycles_is_reachable(g, N - 1, 0));
  CHECK(!jit_cycles_insert_edge(g, N - 1, 0));
  int path[4];
  CHECK(jit_cycles_find_path(g, 0, N - 1, path, 4) == N && path[3] == 3);
  CHECK(jit_cycles_check_invariants(g));
  double build = seconds_since(&t0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int k = 1; k < N; k++) refused += !jit_cycles_contract_edge(g, 0, k);
  CHECK(refused == 0 && jit_cycles_num_nodes(g) == 1);
  double contract = seconds_since(&t0);
  fprintf(stderr, "cycles: 100k chain built in %.3fs, contracted in %.3fs\n", build, contract);
  CHECK(build < 0.5 && contract < 0.5);
  jit_cycles_free(g);
}

TEST_MAIN(TEST(test_random_against_brute_force), TEST(test_contract_refuses_indirect_path),
          TEST(test_self_loops_and_cycles_refused), TEST(test_remove_nodes_and_edges),
          TEST(test_edge_list_order_and_large_degree), TEST(test_while_frame_collapses),
          TEST(test_shuffled_dag_at_scale), TEST(test_long_chain_is_linear))
