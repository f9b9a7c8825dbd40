/* Online cycle detection for auto-clustering: a directed acyclic graph over plain int
 * node ids that refuses any edge insertion or node merge that would close a cycle.
 *
 * Clustering merges graph nodes step by step; a merge that puts a → x → b's endpoints a
 * and b into one cluster while x stays outside would make the cluster both feed and
 * consume x — a deadlock. Checking every merge with a fresh whole-graph search is
 * quadratic, so this keeps a topological rank per node and updates it incrementally
 * (Pearce & Kelly, "A dynamic topological sort algorithm for directed acyclic graphs",
 * the algorithm XLA's graphcycles uses): an edge a→b with rank[a] < rank[b] is accepted
 * with no search at all; otherwise only the nodes ranked between b and a are visited,
 * and those are re-ranked among themselves. Reachability questions use the ranks to
 * bound their searches the same way. No search recurses: depth is never controlled by
 * the size or shape of a user's graph.
 *
 * Ids. jit_cycles_add_node hands out small non-negative ints, recycling the ids of
 * removed (or merged-away) nodes, so callers can index side arrays by id. An id that is
 * not a live node (negative, never handed out, or removed) is treated as absent:
 * queries answer false / empty and mutations change nothing and answer false. That is a
 * caller bug, never a user-file condition, but it is not worth aborting over.
 *
 * Cost. An edge that agrees with the current ranks is O(1); one that disagrees pays
 * for a search of the nodes ranked between its ends, which on a large graph built in
 * an order unrelated to its dataflow can approach the whole graph per edge. A new
 * node's rank follows its id, so the cheap way to load a graph is to add its nodes in
 * a topological order (a reverse post-order of the dataflow), back edges aside; then
 * the initial build re-ranks nothing and only merges move ranks.
 *
 * Determinism. Edge lists iterate in insertion order, except that removing an edge moves
 * the list's last entry into its place. Nothing depends on addresses or hashing seeds,
 * so one sequence of calls always yields the same lists, ids and ranks (cluster names
 * built from them are stable from run to run).
 *
 * While-frames. A TF while loop is a cycle (NextIteration → Merge), yet the enclosing
 * graph must see it as one opaque node, so that clustering outside the loop cannot route
 * a path through its body. The caller builds the detector graph as follows:
 *   1. add one detector node per graph node, and insert every data/control edge except
 *      the loop back edges (edges out of NextIteration nodes), which makes it acyclic;
 *   2. collapse each frame (innermost frames first) into one node: pick a member as the
 *      representative and jit_cycles_merge_nodes(rep, m) every other member m, visiting
 *      members in a topological order of the body (step 1's graph restricted to the
 *      frame). Merging in that order always succeeds for a well-formed frame, because
 *      every member ranked before m is already part of rep, so a second route between
 *      rep and m could only leave the frame and come back — which is a real cycle
 *      through the loop (a loop consuming its own result), and the refusal reports it;
 *   3. remember member → representative, and map every later question about a member
 *      to its representative. Edges into Enter and out of Exit now attach to the frame
 *      node, which is what TensorFlow's cycle-detection graph does with its extra
 *      "frame" nodes. Clustering inside a body runs on its own detector graph.
 * Where the members form a chain of edges (each one's predecessor already merged),
 * jit_cycles_contract_edge(rep, m) is the same operation with the edge required. */
#ifndef KILN_JIT_CYCLES_H
#define KILN_JIT_CYCLES_H

#include <stdbool.h>

typedef struct jit_cycles jit_cycles;

/* All allocation aborts on out-of-memory (the only abort in this module). */
jit_cycles *jit_cycles_new(void);
void jit_cycles_free(jit_cycles *g); /* NULL is fine */

/* A fresh node with no edges; may reuse the id of a removed node. */
int jit_cycles_add_node(jit_cycles *g);
/* Removes the node with all its edges; its id becomes free for reuse. */
void jit_cycles_remove_node(jit_cycles *g, int node);
/* True if `node` is live. */
bool jit_cycles_has_node(const jit_cycles *g, int node);
/* Live nodes, and one past the largest id ever handed out (for side arrays). */
int jit_cycles_num_nodes(const jit_cycles *g);
int jit_cycles_id_limit(const jit_cycles *g);

/* Adds from→to. False (graph unchanged) if the edge would close a cycle — i.e. `to`
 * already reaches `from`, including from == to (self-loops are refused). An edge that
 * already exists answers true and stays single. */
bool jit_cycles_insert_edge(jit_cycles *g, int from, int to);
/* Removes from→to; false if there was no such edge. */
bool jit_cycles_remove_edge(jit_cycles *g, int from, int to);
bool jit_cycles_has_edge(const jit_cycles *g, int from, int to);

/* True if a path of zero or more edges leads from `from` to `to` (a node reaches
 * itself). Non-const: searches use per-node marks and scratch space kept in g. */
bool jit_cycles_is_reachable(jit_cycles *g, int from, int to);

/* Would merging a and b into one node keep the graph acyclic? That holds unless a path
 * of two or more edges joins them (a → x → … → b or the reverse); a direct edge
 * between them becomes internal and is fine. Both must be live and distinct. */
bool jit_cycles_can_merge(jit_cycles *g, int a, int b);
/* Merges b into a when jit_cycles_can_merge allows: a gains b's in- and out-edges
 * (edges between a and b vanish rather than becoming self-loops) and b is removed, its
 * id freed. Otherwise answers false and changes nothing. */
bool jit_cycles_merge_nodes(jit_cycles *g, int a, int b);
/* The edge form clustering uses: requires the edge a→b, then merges b into a unless
 * another path a → … → b exists (contracting would turn it into a cycle). False and no
 * change when the edge is missing or contraction is unsafe. */
bool jit_cycles_can_contract_edge(jit_cycles *g, int a, int b);
bool jit_cycles_contract_edge(jit_cycles *g, int a, int b);

/* Edge lists of `node`: *out points at the ids (owned by g, valid until the next
 * mutation); the answer is the count. A dead node has none. */
int jit_cycles_successors(const jit_cycles *g, int node, const int **out);
int jit_cycles_predecessors(const jit_cycles *g, int node, const int **out);

/* The node's current topological rank: every edge goes from a lower to a higher rank.
 * Ranks are distinct but change as edges are inserted; -1 for a dead node. */
int jit_cycles_rank(const jit_cycles *g, int node);

/* One shortest path from → to, for explaining why a merge was refused: writes up to
 * max_len node ids (from first, to last) into path and answers the path's full node
 * count, or 0 when `to` is unreachable. A node reaches itself with a 1-node path. */
int jit_cycles_find_path(jit_cycles *g, int from, int to, int *path, int max_len);

/* Debug check of every internal invariant: each edge goes from lower to higher rank,
 * ranks are distinct, in- and out-lists mirror each other with no duplicates and no
 * self-loops, and the edge-list indexes agree with the lists. */
bool jit_cycles_check_invariants(const jit_cycles *g);

#endif
