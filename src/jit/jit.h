/* The bridge's front door: auto-clustering of a framework graph, TensorFlow's
 * mark_for_compilation design in kiln's shape.
 *
 * jit_run rewrites an imported graph in place through a registry of graph passes
 * grouped in phases, like TensorFlow's OptimizationPassRegistry:
 *   pre-placement    static-shapes      dtypes, shapes and small constant values of
 *                                       node outputs, found by lowering each node
 *   placement        placer             a device per node (highest priority that takes
 *                                       it; the host last), --log_placement
 *   post-placement   mark-for-compilation, partial-declustering, encapsulate-clusters
 *   partitioning     (no pass yet: kiln runs one host process)
 * Every pass can dump the graph before and after it (--dump_to DIR writes
 * jit_NNNN.PASS.before.txt / .after.txt in the graph text form; --clustering_debug
 * also logs every refused merge with its reason).
 *
 * After jit_run the graph holds KILN_CLUSTER_OP call nodes (graph/cluster_op.h) that
 * the executor compiles just in time; everything else runs op by op as before, so the
 * results never change. The report says what was clustered and why everything else
 * was not (`kiln cluster` prints it). */
#ifndef KILN_JIT_JIT_H
#define KILN_JIT_JIT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "graph/graph.h"

typedef enum jit_mode { JIT_OFF, JIT_AUTO } jit_mode;

/* TensorFlow's defaults (tf_xla_min_cluster_size / max_cluster_size). */
#define JIT_DEFAULT_MIN_CLUSTER_SIZE 4
#define JIT_DEFAULT_MAX_CLUSTER_SIZE 1000000

typedef struct jit_options {
  jit_mode mode;
  /* The device that compiles clusters and runs lowered ops: a `kiln devices` name, or
   * NULL/"" for the highest-priority usable device. */
  const char *device;
  /* Comma-separated op names ("Conv2D", "onnx.Conv"): when non-empty only these ops
   * are candidates; --jit_exclude_ops removes ops from the candidates. */
  const char *jit_ops;
  const char *jit_exclude_ops;
  int min_cluster_size; /* clusters with fewer counted nodes dissolve (Identity, Const don't count) */
  int max_cluster_size;
  const char *dump_to;  /* NULL/"": no dumps */
  bool dump_large_constants; /* false: tensors over 10 elements dump as {...} */
  bool clustering_debug;
  bool log_placement;   /* print node -> device on stdout after placement */
  /* A node its requested device cannot run is an error instead of a host fallback. */
  bool no_host_fallback;
} jit_options;

/* Auto clustering with TensorFlow's size limits, on the highest-priority devices, no
 * dumps or logs (the kiln command maps its flags onto these fields). */
jit_options jit_options_default(void);

/* What clustering decided, kept as plain strings so it outlives the rewrite. */
typedef struct jit_node_report {
  const char *name, *op, *device;
  int cluster;        /* index into clusters, or -1 */
  const char *reason; /* why the node stayed out of every cluster (NULL when clustered) */
} jit_node_report;

typedef struct jit_cluster_report {
  const char *name;   /* the function / call node name: cluster_N */
  const char *device;
  int n_nodes;        /* every member */
  int n_counted;      /* members that count toward the minimum size */
  bool must_compile;  /* an explicit compile scope */
  const char *frame;  /* the while loop frame it runs in (once per iteration); NULL: root */
  int n_constants, n_args, n_resources, n_outputs;
} jit_cluster_report;

typedef struct jit_report {
  struct arena *arena;
  int n_nodes;
  jit_node_report *nodes; /* the graph's nodes before clustering, in graph order */
  int n_clusters;
  jit_cluster_report *clusters;
  int n_declustered; /* nodes partial declustering moved out */
} jit_report;

/* Runs the bridge passes over g (a root graph). With mode JIT_OFF only placement runs
 * (so --log_placement still works) and nothing is clustered. *report (may be NULL) gets
 * the report; free it with jit_report_free. */
kiln_status jit_run(graph *g, const jit_options *opts, jit_report **report);
void jit_report_free(jit_report *r);

/* Human-readable summary: clusters with sizes and % of nodes, per-cluster op
 * histograms, and every unclustered node with its reason. */
void jit_report_print(strbuf *b, const jit_report *r);
/* Graphviz DOT of the graph as clustered (before encapsulation: one box per node,
 * clusters as coloured subgraphs). */
void jit_report_dot(strbuf *b, const jit_report *r, const graph *original);

#endif
