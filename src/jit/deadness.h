/* Deadness analysis for auto-clustering: for every node output of a framework graph,
 * a predicate saying when that output is live (not "dead") under TensorFlow v1
 * control flow (Switch/Merge, Enter/Exit/NextIteration/LoopCond). Clustering may only
 * merge two nodes whose liveness is identical, and it asks that question millions of
 * times, so predicates are hash-consed in a factory the analysis owns: structurally
 * equal predicates are the same pointer, and normalisation (flattening, sorting and
 * deduplicating AND/OR operands, x & !x = false, absorption, and the consensus rule
 * (a & p) | (a & !p) = a) makes the usual ways of reaching one liveness from two paths
 * meet at one pointer. The analysis is conservative: two predicates that are equal
 * pointers are live under identical conditions; two different pointers may still be
 * equivalent (normalisation is not complete), which only costs a missed merge.
 *
 * Loops. The analysis follows TensorFlow's optimistic mode: every loop-header Merge
 * (a Merge fed by a NextIteration) of frame F gets AND(entry, iter(F)), where entry is
 * the OR of its non-back-edge inputs and iter(F) is a per-frame symbol standing for
 * "this iteration of F runs". The assumption is then checked once the back-edges are
 * known: all header Merges of F must have the same entry predicate and the same
 * back-edge predicate (by induction over iterations they are then live in the same
 * iterations). A frame that fails the check is recomputed pessimistically: each of
 * its header Merges gets its own opaque symbol merge(NAME), and its Exits exit(NAME).
 * This per-frame symbol is the "simpler TF approach" (TensorFlow's optimistic mode uses
 * one representative Merge's symbol per frame); the AndRecurrence form is not built.
 * Exits: TensorFlow passes the loop's inner predicate out; here, when a verified
 * frame's back-edges are exactly AND(entry, iter(F), lc) for a LoopCond symbol lc, the
 * loop runs while lc holds and an Exit fed by AND(entry, iter(F), !lc) fires once, live
 * exactly when the loop was entered: it gets the entry predicate. Any other Exit gets
 * its own opaque symbol exit(NAME), which keeps iteration symbols out of outer frames.
 *
 * Other rules: graph inputs, nodes without inputs and ControlTrigger are always live;
 * an ordinary node is the AND of its data and control inputs; Switch(data, pred)
 * output 0 is AND(inputs, !pred) and output 1 AND(inputs, pred), its control output
 * AND(inputs); a non-loop Merge is the OR of its data inputs (control inputs do not
 * kill a Merge); Enter, NextIteration and LoopCond pass their input's predicate on. */
#ifndef KILN_JIT_DEADNESS_H
#define KILN_JIT_DEADNESS_H

#include <stdbool.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "graph/graph.h"

typedef struct deadness deadness;
typedef struct deadness_pred deadness_pred;

typedef enum deadness_pred_kind {
  DEADNESS_TRUE,
  DEADNESS_FALSE,
  DEADNESS_SYMBOL, /* a switch predicate tensor (or loop/opaque symbol), maybe negated */
  DEADNESS_NOT,    /* negation of an AND/OR (symbols negate in place) */
  DEADNESS_AND,
  DEADNESS_OR
} deadness_pred_kind;

/* Runs the analysis over g's nodes (not its function bodies). g must not change while
 * the result is in use (predicates are looked up by node id). Errors: a cycle not
 * broken by a NextIteration back-edge. */
kiln_status deadness_analyze(const graph *g, deadness **out);
void deadness_free(deadness *d);

/* Predicate of output `port` of node (GRAPH_CONTROL: its control output). NULL for a
 * node of another graph or a port out of range. Pointers stay valid until
 * deadness_free and compare equal exactly when the factory found them equal. */
const deadness_pred *deadness_predicate(const deadness *d, const graph_node *node, int port);
/* The predicate clustering compares: output 0, or the control output of a node
 * without outputs (TensorFlow compares output 0 as well). */
const deadness_pred *deadness_node_predicate(const deadness *d, const graph_node *node);
/* deadness_node_predicate(a) == deadness_node_predicate(b) (false if either is NULL). */
bool deadness_has_same_liveness(const deadness *d, const graph_node *a, const graph_node *b);

deadness_pred_kind deadness_pred_get_kind(const deadness_pred *p);
/* AND/OR: operand count and operands (canonical order); NOT: 1 and its operand;
 * otherwise 0 / NULL. */
int deadness_pred_num_operands(const deadness_pred *p);
const deadness_pred *deadness_pred_operand(const deadness_pred *p, int i);
/* Appends a readable form: "#true", "#false", "p:0", "!p:0", "iter(frame)",
 * "merge(name)", "(a & b)", "(a | b)", "!(a & b)". Operands print in the factory's
 * canonical order, so equal pointers print equal text. Output longer than about 4 KiB
 * is cut with "...". */
void deadness_pred_print(strbuf *b, const deadness_pred *p);
char *deadness_pred_to_string(const deadness_pred *p); /* malloc'ed */

/* ---- the factory, exposed for tests and for passes that build predicates ---- */
const deadness_pred *deadness_make_true(deadness *d);
const deadness_pred *deadness_make_false(deadness *d);
/* The symbol "label is true" (negated: "label is false"). Labels are copied. */
const deadness_pred *deadness_make_symbol(deadness *d, const char *label, bool negated);
const deadness_pred *deadness_make_not(deadness *d, const deadness_pred *p);
const deadness_pred *deadness_make_and(deadness *d, int n, const deadness_pred *const *ops);
const deadness_pred *deadness_make_or(deadness *d, int n, const deadness_pred *const *ops);
/* A factory without a graph (deadness_predicate answers NULL for every node). */
deadness *deadness_new_factory(void);

#endif
