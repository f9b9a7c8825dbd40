/* Unit tests for the deadness analysis (src/jit/deadness): the predicate factory's
 * normal forms and hash-consing (including a 10k random-construction stress run where
 * equal printed structure must mean the same pointer), and the analysis over graphs in
 * the text format: a Switch/Merge diamond, nested switches on two predicates, equal
 * predicates reached along different paths, control edges, v1 while loops (shared
 * body predicate, verified and pessimistic frames), printing and errors. */
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "check.h"
#include "check_util.h"
#include "graph/graph.h"
#include "jit/deadness.h"

static deadness *analyze_ok(const graph *g) {
  deadness *d = NULL;
  kiln_status s = deadness_analyze(g, &d);
  if (s) {
    check_fail(__FILE__, __LINE__, "deadness_analyze", kiln_status_message(s));
    kiln_status_free(s);
    return deadness_new_factory();
  }
  return d;
}

static const deadness_pred *pred_of(const deadness *d, const graph *g, const char *name, int port) {
  graph_node *n = graph_find_node(g, name);
  CHECK(n != NULL);
  return n ? deadness_predicate(d, n, port) : NULL;
}

static bool pred_prints(const deadness_pred *p, const char *want) {
  if (!p) return false;
  char *s = deadness_pred_to_string(p);
  bool ok = strcmp(s, want) == 0;
  if (!ok) fprintf(stderr, "  predicate prints \"%s\", expected \"%s\"\n", s, want);
  free(s);
  return ok;
}

static bool same(const deadness *d, const graph *g, const char *a, const char *b) {
  return deadness_has_same_liveness(d, graph_find_node(g, a), graph_find_node(g, b));
}

/* ---- factory ---- */

static void test_factory_laws(void) {
  deadness *d = deadness_new_factory();
  const deadness_pred *T = deadness_make_true(d), *F = deadness_make_false(d);
  const deadness_pred *a = deadness_make_symbol(d, "a:0", false), *b = deadness_make_symbol(d, "b:0", false);
  const deadness_pred *c = deadness_make_symbol(d, "c:0", false);
  const deadness_pred *na = deadness_make_not(d, a);
  CHECK(na == deadness_make_symbol(d, "a:0", true));
  CHECK(deadness_make_not(d, na) == a);
  CHECK(deadness_make_not(d, T) == F && deadness_make_not(d, F) == T);
  CHECK(deadness_make_symbol(d, "a:0", false) == a);

  const deadness_pred *ab[] = {a, b}, *ba[] = {b, a};
  const deadness_pred *and_ab = deadness_make_and(d, 2, ab);
  CHECK(deadness_make_and(d, 2, ba) == and_ab);
  CHECK(deadness_pred_get_kind(and_ab) == DEADNESS_AND && deadness_pred_num_operands(and_ab) == 2);
  CHECK(deadness_make_and(d, 1, &a) == a);                       /* AND(x) = x */
  CHECK(deadness_make_and(d, 0, NULL) == T && deadness_make_or(d, 0, NULL) == F);
  const deadness_pred *aT[] = {a, T}, *aF[] = {a, F}, *aa[] = {a, a, a};
  CHECK(deadness_make_and(d, 2, aT) == a && deadness_make_and(d, 2, aF) == F);
  CHECK(deadness_make_or(d, 2, aT) == T && deadness_make_or(d, 2, aF) == a);
  CHECK(deadness_make_and(d, 3, aa) == a && deadness_make_or(d, 3, aa) == a);
  const deadness_pred *a_na[] = {a, na};
  CHECK(deadness_make_and(d, 2, a_na) == F); /* x & !x */
  CHECK(deadness_make_or(d, 2, a_na) == T);  /* x | !x */

  /* flattening: a & (b & c) == (c & b) & a */
  const deadness_pred *bc[] = {b, c};
  const deadness_pred *a_bc[] = {a, deadness_make_and(d, 2, bc)};
  const deadness_pred *cb[] = {c, b};
  const deadness_pred *cb_a[] = {deadness_make_and(d, 2, cb), a};
  const deadness_pred *abc = deadness_make_and(d, 2, a_bc);
  CHECK(abc == deadness_make_and(d, 2, cb_a));
  CHECK(deadness_pred_num_operands(abc) == 3);

  /* absorption: a | (a & b) = a; a & (a | b) = a */
  const deadness_pred *a_ab[] = {a, and_ab};
  CHECK(deadness_make_or(d, 2, a_ab) == a);
  const deadness_pred *or_ab = deadness_make_or(d, 2, ab);
  const deadness_pred *a_orab[] = {or_ab, a};
  CHECK(deadness_make_and(d, 2, a_orab) == a);

  /* consensus: (a & b) | (a & !b) = a and its dual */
  const deadness_pred *nb = deadness_make_not(d, b);
  const deadness_pred *anb[] = {a, nb};
  const deadness_pred *two[] = {and_ab, deadness_make_and(d, 2, anb)};
  CHECK(deadness_make_or(d, 2, two) == a);
  const deadness_pred *two_or[] = {or_ab, deadness_make_or(d, 2, anb)};
  CHECK(deadness_make_and(d, 2, two_or) == a);

  /* NOT of compounds: a NOT node, undone by a second NOT, complementary in AND/OR */
  const deadness_pred *n_ab = deadness_make_not(d, and_ab);
  CHECK(deadness_pred_get_kind(n_ab) == DEADNESS_NOT && deadness_make_not(d, n_ab) == and_ab);
  const deadness_pred *x_nx[] = {n_ab, and_ab};
  CHECK(deadness_make_or(d, 2, x_nx) == T);
  CHECK(pred_prints(n_ab, "!(a:0 & b:0)"));
  CHECK(pred_prints(deadness_make_and(d, 2, anb), "(a:0 & !b:0)"));
  CHECK(pred_prints(or_ab, "(a:0 | b:0)"));
  CHECK(pred_prints(T, "#true") && pred_prints(F, "#false"));
  deadness_free(d);
}

typedef struct built {
  const deadness_pred *p;
  char *text;
} built;

static int cmp_built(const void *a, const void *b) {
  return strcmp(((const built *)a)->text, ((const built *)b)->text);
}

static unsigned rng_next(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 16) & 0x7fff;
}

/* 10k random constructions over a few symbols: printing is canonical, so equal text
 * must be the same pointer and different text different pointers; rebuilding an
 * AND/OR from its operands in reverse order must give the same pointer back. */
static void test_hash_consing_stress(void) {
  deadness *d = deadness_new_factory();
  enum { N = 10000, ATOMS = 6 };
  built *all = calloc(N, sizeof *all);
  const deadness_pred **pool = calloc(N + 2 * ATOMS, sizeof *pool);
  int n_pool = 0;
  for (int i = 0; i < ATOMS; i++) {
    char label[16];
    snprintf(label, sizeof label, "s%d:0", i);
    pool[n_pool++] = deadness_make_symbol(d, label, false);
    pool[n_pool++] = deadness_make_symbol(d, label, true);
  }
  unsigned seed = 12345;
  int rebuild_failures = 0;
  for (int i = 0; i < N; i++) {
    unsigned r = rng_next(&seed) % 5;
    const deadness_pred *p;
    if (r == 0) {
      p = deadness_make_not(d, pool[rng_next(&seed) % (unsigned)n_pool]);
    } else {
      int k = 1 + (int)(rng_next(&seed) % 4);
      const deadness_pred *ops[4];
      /* mostly atoms so that structure repeats often enough to matter */
      for (int j = 0; j < k; j++)
        ops[j] = pool[rng_next(&seed) % (rng_next(&seed) % 3 ? 2 * ATOMS : (unsigned)n_pool)];
      p = r <= 2 ? deadness_make_and(d, k, ops) : deadness_make_or(d, k, ops);
    }
    pool[n_pool++] = p;
    all[i].p = p;
    all[i].text = deadness_pred_to_string(p);
    deadness_pred_kind kind = deadness_pred_get_kind(p);
    if (kind == DEADNESS_AND || kind == DEADNESS_OR) {
      int k = deadness_pred_num_operands(p);
      const deadness_pred **rev = malloc((size_t)k * sizeof *rev);
      for (int j = 0; j < k; j++) rev[j] = deadness_pred_operand(p, k - 1 - j);
      const deadness_pred *q = kind == DEADNESS_AND ? deadness_make_and(d, k, rev) : deadness_make_or(d, k, rev);
      if (q != p) rebuild_failures++;
      free(rev);
    }
    if (deadness_make_not(d, deadness_make_not(d, p)) != p) rebuild_failures++;
  }
  CHECK(rebuild_failures == 0);
  qsort(all, N, sizeof *all, cmp_built);
  int mismatches = 0, distinct = 1;
  for (int i = 1; i < N; i++) {
    bool eq_text = strcmp(all[i - 1].text, all[i].text) == 0;
    if (eq_text != (all[i - 1].p == all[i].p)) mismatches++;
    if (!eq_text) distinct++;
  }
  CHECK(mismatches == 0);
  CHECK(distinct > 100 && distinct < N); /* the run did repeat structures */
  for (int i = 0; i < N; i++) free(all[i].text);
  free(all);
  free(pool);
  deadness_free(d);
}

/* ---- analysis ---- */

static void test_diamond(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[]\n"
                      "input p: bool[]\n"
                      "s = Switch[T=float](x, p) -> (float[], float[])\n"
                      "a = Neg[T=float](s:0)\n"
                      "b = Exp[T=float](s:1)\n"
                      "m = Merge[N=2, T=float](a, b) -> (float[], int32[])\n"
                      "c = AddV2[T=float](m, x)\n"
                      "output r = c:0\n");
  deadness *d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "a", 0), "!p:0"));
  CHECK(pred_prints(pred_of(d, g, "b", 0), "p:0"));
  CHECK(pred_of(d, g, "s", 0) == pred_of(d, g, "a", 0));
  CHECK(pred_of(d, g, "s", 1) == pred_of(d, g, "b", 0));
  CHECK(deadness_pred_get_kind(pred_of(d, g, "s", GRAPH_CONTROL)) == DEADNESS_TRUE);
  CHECK(deadness_pred_get_kind(pred_of(d, g, "m", 0)) == DEADNESS_TRUE);
  CHECK(pred_of(d, g, "m", 1) == pred_of(d, g, "m", 0));
  CHECK(same(d, g, "m", "x") && same(d, g, "c", "x"));
  CHECK(!same(d, g, "a", "b") && !same(d, g, "a", "x"));
  CHECK(deadness_predicate(d, graph_find_node(g, "a"), 1) == NULL); /* port out of range */
  deadness_free(d);
  graph_free(g);

  /* the same diamond under a switch on q: the merge meets back at q */
  g = check_parse_graph("framework tf\n"
               "input x: float[]\n"
               "input p: bool[]\n"
               "input q: bool[]\n"
               "sq = Switch[T=float](x, q) -> (float[], float[])\n"
               "y = Identity[T=float](sq:1)\n"
               "s = Switch[T=float](y, p) -> (float[], float[])\n"
               "a = Neg[T=float](s:0)\n"
               "b = Exp[T=float](s:1)\n"
               "m = Merge[N=2, T=float](a, b) -> (float[], int32[])\n"
               "output r = m:0\n");
  d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "y", 0), "q:0"));
  CHECK(pred_prints(pred_of(d, g, "a", 0), "(q:0 & !p:0)"));
  CHECK(pred_prints(pred_of(d, g, "b", 0), "(q:0 & p:0)"));
  CHECK(same(d, g, "m", "y"));
  CHECK(!same(d, g, "m", "x"));
  deadness_free(d);
  graph_free(g);
}

static void test_nested_switches(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[]\n"
                      "input p: bool[]\n"
                      "input q: bool[]\n"
                      "s1 = Switch[T=float](x, p) -> (float[], float[])\n"
                      "s2 = Switch[T=float](s1:1, q) -> (float[], float[])\n"
                      "tt = Identity[T=float](s2:1)\n"
                      "tf = Identity[T=float](s2:0)\n"
                      "f = Identity[T=float](s1:0)\n"
                      /* the other nesting order reaches p & q again */
                      "s3 = Switch[T=float](x, q) -> (float[], float[])\n"
                      "s4 = Switch[T=float](s3:1, p) -> (float[], float[])\n"
                      "qp = Identity[T=float](s4:1)\n"
                      /* and a plain AND of the two branches a third way */
                      "both = AddV2[T=float](qp, tt)\n"
                      "inner = Merge[N=2, T=float](tt, tf) -> (float[], int32[])\n"
                      "partial = Merge[N=2, T=float](tf, f) -> (float[], int32[])\n"
                      "dead = AddV2[T=float](tt, tf)\n"
                      "output r = inner:0\n");
  deadness *d = analyze_ok(g);
  const deadness_pred *tt = pred_of(d, g, "tt", 0);
  CHECK(deadness_pred_get_kind(tt) == DEADNESS_AND && deadness_pred_num_operands(tt) == 2);
  CHECK(pred_of(d, g, "qp", 0) == tt); /* identical predicates from two paths: one pointer */
  CHECK(same(d, g, "qp", "tt") && same(d, g, "both", "tt"));
  CHECK(pred_prints(pred_of(d, g, "tf", 0), "(p:0 & !q:0)"));
  CHECK(!same(d, g, "tt", "tf") && !same(d, g, "tf", "f"));
  CHECK(same(d, g, "inner", "s1") == false); /* s1's output 0 is !p */
  CHECK(pred_of(d, g, "inner", 0) == pred_of(d, g, "s1", 1));
  CHECK(deadness_pred_get_kind(pred_of(d, g, "partial", 0)) == DEADNESS_OR);
  CHECK(deadness_pred_get_kind(pred_of(d, g, "dead", 0)) == DEADNESS_FALSE); /* q & !q */
  deadness_free(d);
  graph_free(g);
}

static void test_control_inputs(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input x: float[]\n"
                      "input p: bool[]\n"
                      "s = Switch[T=float](x, p) -> (float[], float[])\n"
                      "t = Identity[T=float](s:1)\n"
                      "k = Const[dtype=float, value=tensor<float[]>{1}]() @ t\n"
                      "k2 = Const[dtype=float, value=tensor<float[]>{2}]() @ s\n"
                      "k3 = Const[dtype=float, value=tensor<float[]>{3}]()\n"
                      "u = AddV2[T=float](k3, x) @ t\n"
                      "trig = ControlTrigger() @ t -> ()\n"
                      "after = Identity[T=float](x) @ trig\n"
                      "m = Merge[N=2, T=float](x, x) @ t -> (float[], int32[])\n"
                      "output r = u:0\n");
  deadness *d = analyze_ok(g);
  CHECK(same(d, g, "k", "t") && same(d, g, "u", "t"));
  CHECK(pred_prints(pred_of(d, g, "k", 0), "p:0"));
  CHECK(same(d, g, "k2", "x")); /* a Switch's control output is live with its inputs */
  CHECK(same(d, g, "k3", "x"));
  CHECK(pred_of(d, g, "trig", GRAPH_CONTROL) != NULL && same(d, g, "trig", "x"));
  CHECK(same(d, g, "after", "x"));
  CHECK(same(d, g, "m", "x")); /* control inputs do not kill a Merge */
  deadness_free(d);
  graph_free(g);
}

#define WHILE_HEAD                                                                                        \
  "framework tf\n"                                                                                        \
  "input limit: int32[]\n"                                                                                \
  "input z: int32[]\n"                                                                                    \
  "i/init = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"                                             \
  "j/init = Const[dtype=int32, value=tensor<int32[]>{1}]()\n"                                             \
  "while/Enter = Enter[T=int32, frame_name=\"while/ctx\", is_constant=false](i/init)\n"                   \
  "while/Enter_1 = Enter[T=int32, frame_name=\"while/ctx\", is_constant=true](limit)\n"                   \
  "while/Enter_2 = Enter[T=int32, frame_name=\"while/ctx\", is_constant=false](j/init)\n"                 \
  "while/Merge = Merge[N=2, T=int32](while/Enter, while/NextIteration) -> (int32[], int32[])\n"           \
  "while/Merge_1 = Merge[N=2, T=int32](while/Enter_2, while/NextIteration_1) -> (int32[], int32[])\n"     \
  "while/Less = Less[T=int32](while/Merge, while/Enter_1)\n"                                              \
  "while/LoopCond = LoopCond(while/Less) -> (bool[])\n"                                                   \
  "while/Switch = Switch[T=int32](while/Merge, while/LoopCond) -> (int32[], int32[])\n"                   \
  "while/Switch_1 = Switch[T=int32](while/Merge_1, while/LoopCond) -> (int32[], int32[])\n"               \
  "while/Identity = Identity[T=int32](while/Switch:1)\n"                                                  \
  "while/Identity_1 = Identity[T=int32](while/Switch_1:1)\n"                                              \
  "while/add/y = Const[dtype=int32, value=tensor<int32[]>{1}]() @ while/Identity\n"                       \
  "while/add = AddV2[T=int32](while/Identity, while/add/y)\n"                                             \
  "while/mul = Mul[T=int32](while/Identity_1, while/Identity_1)\n"                                        \
  "while/NextIteration = NextIteration[T=int32](while/add)\n"                                             \
  "while/Exit = Exit[T=int32](while/Switch)\n"                                                            \
  "while/Exit_1 = Exit[T=int32](while/Switch_1)\n"                                                        \
  "after = AddV2[T=int32](while/Exit, while/Exit_1)\n"                                                    \
  "outside = Neg[T=int32](z)\n"                                                                           \
  "output result = after:0\n"

static void test_while_loop(void) {
  graph *g = check_parse_graph(WHILE_HEAD "while/NextIteration_1 = NextIteration[T=int32](while/mul)\n");
  deadness *d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "while/Merge", 0), "iter(while/ctx)"));
  CHECK(same(d, g, "while/Merge", "while/Merge_1"));
  /* the body: every node shares one predicate */
  CHECK(same(d, g, "while/Identity", "while/Identity_1"));
  CHECK(same(d, g, "while/add", "while/mul") && same(d, g, "while/add/y", "while/add"));
  CHECK(same(d, g, "while/NextIteration", "while/NextIteration_1"));
  CHECK(pred_prints(pred_of(d, g, "while/add", 0), "(iter(while/ctx) & while/LoopCond:0)"));
  /* the condition runs once more than the body */
  CHECK(same(d, g, "while/Less", "while/Merge") && !same(d, g, "while/Less", "while/add"));
  /* outside the loop: not like the body; the exits are live when the loop ran */
  CHECK(!same(d, g, "outside", "while/add") && !same(d, g, "while/Enter", "while/add"));
  CHECK(same(d, g, "while/Exit", "while/Exit_1") && same(d, g, "after", "outside"));
  CHECK(deadness_pred_get_kind(pred_of(d, g, "after", 0)) == DEADNESS_TRUE);
  deadness_free(d);
  graph_free(g);

  /* the second variable only comes round when z says so: the frame cannot be proven
   * uniform, so its merges and exits get their own symbols */
  g = check_parse_graph(WHILE_HEAD "while/Enter_3 = Enter[T=bool, frame_name=\"while/ctx\", is_constant=true](flag)\n"
                          "input flag: bool[]\n"
                          "while/sw = Switch[T=int32](while/mul, while/Enter_3) -> (int32[], int32[])\n"
                          "while/NextIteration_1 = NextIteration[T=int32](while/sw:1)\n");
  d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "while/Merge", 0), "merge(while/Merge)"));
  CHECK(!same(d, g, "while/Merge", "while/Merge_1"));
  CHECK(!same(d, g, "while/add", "while/mul"));
  CHECK(pred_prints(pred_of(d, g, "while/Exit", 0), "exit(while/Exit)"));
  CHECK(!same(d, g, "while/Exit", "while/Exit_1") && !same(d, g, "after", "outside"));
  deadness_free(d);
  graph_free(g);

  /* both variables come round only when flag says so: still one uniform frame, but
   * the loop no longer runs exactly while LoopCond holds, so the exits stay opaque */
  g = check_parse_graph(WHILE_HEAD "while/Enter_3 = Enter[T=bool, frame_name=\"while/ctx\", is_constant=true](flag)\n"
                          "input flag: bool[]\n"
                          "while/sw = Switch[T=int32](while/mul, while/Enter_3) -> (int32[], int32[])\n"
                          "while/sw2 = Switch[T=int32](while/add, while/Enter_3) -> (int32[], int32[])\n"
                          "while/NextIteration_1 = NextIteration[T=int32](while/sw:1)\n");
  /* rewire the first variable's back-edge through the flag switch too */
  CHECK_OK(graph_set_input(graph_find_node(g, "while/NextIteration"), 0, graph_find_node(g, "while/sw2"), 1));
  d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "while/Merge", 0), "iter(while/ctx)"));
  CHECK(same(d, g, "while/Merge", "while/Merge_1") && same(d, g, "while/add", "while/mul"));
  CHECK(pred_prints(pred_of(d, g, "while/Exit", 0), "exit(while/Exit)"));
  CHECK(!same(d, g, "while/Exit", "while/Exit_1"));
  deadness_free(d);
  graph_free(g);

  /* a loop entered under a switch: the exit is live exactly when the loop was entered */
  g = check_parse_graph("framework tf\n"
               "input x: int32[]\n"
               "input p: bool[]\n"
               "s = Switch[T=int32](x, p) -> (int32[], int32[])\n"
               "e = Enter[T=int32, frame_name=\"f\"](s:1)\n"
               "m = Merge[N=2, T=int32](e, ni) -> (int32[], int32[])\n"
               "lc = LoopCond(m) -> (bool[])\n"
               "sw = Switch[T=int32](m, lc) -> (int32[], int32[])\n"
               "body = Identity[T=int32](sw:1)\n"
               "ni = NextIteration[T=int32](body)\n"
               "ex = Exit[T=int32](sw:0)\n"
               "output r = ex:0\n");
  d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "m", 0), "(p:0 & iter(f))"));
  CHECK(same(d, g, "ex", "e") && same(d, g, "ex", "s") == false);
  CHECK(pred_prints(pred_of(d, g, "ex", 0), "p:0"));
  deadness_free(d);
  graph_free(g);
}

/* A loop inside a loop's body: the inner body has both iteration symbols, the inner
 * exit hands the outer body's predicate back, and the outer exit is live. */
static void test_nested_loops(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "input n: int32[]\n"
                      "zero = Const[dtype=int32, value=tensor<int32[]>{0}]()\n"
                      "o/Enter = Enter[T=int32, frame_name=\"outer\"](zero)\n"
                      "o/lim = Enter[T=int32, frame_name=\"outer\", is_constant=true](n)\n"
                      "o/Merge = Merge[N=2, T=int32](o/Enter, o/NextIteration) -> (int32[], int32[])\n"
                      "o/Less = Less[T=int32](o/Merge, o/lim)\n"
                      "o/LoopCond = LoopCond(o/Less) -> (bool[])\n"
                      "o/Switch = Switch[T=int32](o/Merge, o/LoopCond) -> (int32[], int32[])\n"
                      "o/Identity = Identity[T=int32](o/Switch:1)\n"
                      "i/Enter = Enter[T=int32, frame_name=\"inner\"](o/Identity)\n"
                      "i/lim = Enter[T=int32, frame_name=\"inner\", is_constant=true](o/Identity)\n"
                      "i/Merge = Merge[N=2, T=int32](i/Enter, i/NextIteration) -> (int32[], int32[])\n"
                      "i/Less = Less[T=int32](i/Merge, i/lim)\n"
                      "i/LoopCond = LoopCond(i/Less) -> (bool[])\n"
                      "i/Switch = Switch[T=int32](i/Merge, i/LoopCond) -> (int32[], int32[])\n"
                      "i/Identity = Identity[T=int32](i/Switch:1)\n"
                      "i/add = AddV2[T=int32](i/Identity, i/Identity)\n"
                      "i/NextIteration = NextIteration[T=int32](i/add)\n"
                      "i/Exit = Exit[T=int32](i/Switch)\n"
                      "o/add = AddV2[T=int32](i/Exit, o/Identity)\n"
                      "o/NextIteration = NextIteration[T=int32](o/add)\n"
                      "o/Exit = Exit[T=int32](o/Switch)\n"
                      "output r = o/Exit:0\n");
  deadness *d = analyze_ok(g);
  CHECK(pred_prints(pred_of(d, g, "o/Identity", 0), "(iter(outer) & o/LoopCond:0)"));
  CHECK(pred_prints(pred_of(d, g, "i/add", 0), "(iter(outer) & o/LoopCond:0 & iter(inner) & i/LoopCond:0)"));
  CHECK(same(d, g, "i/Exit", "o/Identity") && same(d, g, "o/add", "o/Identity"));
  CHECK(!same(d, g, "i/add", "o/add") && !same(d, g, "i/Merge", "o/Merge"));
  CHECK(same(d, g, "o/Exit", "n"));
  deadness_free(d);
  graph_free(g);
}

/* The example loop in tests/graph (CTest runs from the source root). */
static void test_example_loop_file(void) {
  graph *g = NULL;
  kiln_status s = graph_parse_file("tests/graph/while_loop.graph", &g);
  if (s) {
    check_fail(__FILE__, __LINE__, "graph_parse_file", kiln_status_message(s));
    kiln_status_free(s);
    return;
  }
  deadness *d = analyze_ok(g);
  CHECK(same(d, g, "while/Identity", "while/add") && same(d, g, "while/add/y", "while/NextIteration"));
  CHECK(!same(d, g, "while/add", "limit") && same(d, g, "while/Exit", "limit"));
  deadness_free(d);
  graph_free(g);
}

/* 5000 chained diamonds, each on one of 8 predicates and each entered from the
 * previous diamond's true branch: predicates stay small, and the run stays fast. */
static void test_long_chain(void) {
  strbuf b;
  strbuf_init(&b);
  strbuf_append(&b, "framework tf\ninput x: float[]\n");
  for (int i = 0; i < 8; i++) strbuf_printf(&b, "input p%d: bool[]\n", i);
  strbuf_append(&b, "y0 = Identity[T=float](x)\n");
  enum { STAGES = 5000 };
  for (int k = 0; k < STAGES; k++) {
    strbuf_printf(&b, "s%d = Switch[T=float](y%d, p%d) -> (float[], float[])\n", k, k, k % 8);
    strbuf_printf(&b, "a%d = Neg[T=float](s%d:0)\nb%d = Exp[T=float](s%d:1)\n", k, k, k, k);
    strbuf_printf(&b, "m%d = Merge[N=2, T=float](a%d, b%d) -> (float[], int32[])\n", k, k, k);
    strbuf_printf(&b, "t%d = Identity[T=float](s%d:1)\n", k, k);
    /* every third stage continues from the true branch only */
    strbuf_printf(&b, "y%d = Identity[T=float](%s%d)\n", k + 1, k % 3 == 0 ? "t" : "m", k);
  }
  graph *g = check_parse_graph(strbuf_cstr(&b));
  strbuf_free(&b);
  deadness *d = analyze_ok(g);
  char name[32];
  snprintf(name, sizeof name, "y%d", STAGES);
  const deadness_pred *last = pred_of(d, g, name, 0);
  CHECK(last && deadness_pred_get_kind(last) == DEADNESS_AND && deadness_pred_num_operands(last) == 8);
  CHECK(same(d, g, "m4998", "y4998"));
  deadness_free(d);
  graph_free(g);
}

static void test_errors_and_lookups(void) {
  graph *g = check_parse_graph("framework tf\n"
                      "a = Identity[T=float](b)\n"
                      "b = Identity[T=float](a)\n");
  deadness *d = NULL;
  CHECK_ERR(deadness_analyze(g, &d), "deadness");
  CHECK(d == NULL);
  graph_free(g);

  graph *g1 = check_parse_graph("framework tf\ninput x: float[]\ny = Neg[T=float](x)\n");
  graph *g2 = check_parse_graph("framework tf\ninput x: float[]\n");
  d = analyze_ok(g1);
  CHECK(deadness_predicate(d, graph_find_node(g2, "x"), 0) == NULL); /* another graph */
  CHECK(!deadness_has_same_liveness(d, graph_find_node(g1, "x"), graph_find_node(g2, "x")));
  CHECK(same(d, g1, "x", "y"));
  deadness_free(d);
  graph_free(g1);
  graph_free(g2);
}

TEST_MAIN(TEST(test_factory_laws), TEST(test_hash_consing_stress), TEST(test_diamond), TEST(test_nested_switches),
          TEST(test_control_inputs), TEST(test_while_loop), TEST(test_nested_loops), TEST(test_example_loop_file), TEST(test_long_chain),
          TEST(test_errors_and_lookups))
