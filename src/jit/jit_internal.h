/* State the bridge's graph passes share (jit_run owns it; each pass reads what the
 * earlier phases left), and the pass entry points.
 *
 * Per-node facts are kept in side arrays indexed by node id rather than on the nodes,
 * so the graph itself only changes where a pass means to change it.
 *
 *   pass_registry.c         phases, ordering, dumps, jit_run
 *   static_shapes.c         pre-placement: output dtypes/shapes/small values by lowering
 *   placer.c                placement: a device per node
 *   resource_safety.c       resource-variable op kinds and the unsafe-pair check
 *   mark_for_compilation.c  candidates, phased contraction, cluster-level rules
 *   partial_declustering.c  nodes moved back out of clusters
 *   encapsulate.c           clusters -> function graphs + call nodes
 *   report.c                the summary and the DOT picture */
#ifndef KILN_JIT_JIT_INTERNAL_H
#define KILN_JIT_JIT_INTERNAL_H

#include "backends/backend.h"
#include "base/arena.h"
#include "jit/jit.h"
#include "ops/ops.h"

/* What static-shapes learnt about one node output. */
typedef struct jit_value_info {
  graph_dtype dtype;       /* GRAPH_DT_INVALID: unknown */
  graph_shape shape;       /* rank GRAPH_UNKNOWN: unknown */
  graph_tensor *value;     /* the value when it is a known small constant (owned), else NULL */
} jit_value_info;

/* How the executor or the cluster runtime handles a node. */
typedef enum jit_node_kind {
  JIT_KIND_OTHER,       /* control flow, feeds, functional, TensorArray/List, ... */
  JIT_KIND_LOWERED,     /* an op-library op with a lowering */
  JIT_KIND_HOST_ONLY,   /* an op-library op with only a host kernel */
  JIT_KIND_CONST,       /* Const / onnx.Constant */
  JIT_KIND_IDENTITY,    /* Identity-like pass-through, NoOp */
  JIT_KIND_RESOURCE,    /* ReadVariableOp / Assign*VariableOp */
  JIT_KIND_FUNCTIONAL,  /* TF While/StatelessWhile/If/StatelessIf: compiled when their functions lower */
  JIT_KIND_TENSOR_LIST  /* TensorListReserve/FromTensor/GetItem/SetItem/Stack: a buffer when compiled */
} jit_node_kind;

typedef enum jit_resource_kind { JIT_RES_NONE, JIT_RES_READ, JIT_RES_WRITE, JIT_RES_READ_WRITE } jit_resource_kind;

typedef struct jit_node_state {
  graph_node *node;
  jit_node_kind kind;
  const op_def *def;
  int n_out;
  jit_value_info *out; /* n_out entries */
  /* static-shapes: per device of jit_state.devices, why it cannot run the node's
   * lowering (NULL: it can); the array is NULL when the lowering is not known
   * statically (then every device is assumed able until its compile says otherwise). */
  const char **unsupported;
  const backend *device; /* the placer's choice; NULL: the host (op by op, evaluator/host kernels) */
  const char *reason;    /* why the node is not in a cluster (arena string); NULL while candidate */
  int frame;             /* 0: the root frame; >0: inside a while loop */
  int cluster;           /* union-find parent during marking; cluster id after */
  jit_resource_kind res;
  bool declustered;      /* moved out by partial declustering */
  bool clone_outside;    /* partial declustering: a host copy serves consumers outside */
} jit_node_state;

typedef struct jit_cluster {
  int id;
  const backend *device;
  const char *scope; /* compile scope name or NULL */
  bool must_compile;
  int n_members;
  int *members; /* node ids, topological order */
  const char *name; /* set by encapsulation */
  const char *frame; /* the while loop's frame_name it runs in; NULL: the root frame */
  int n_constants, n_args, n_resources, n_outputs;
} jit_cluster;

typedef struct jit_state {
  graph *g;
  const jit_options *opts;
  arena *arena;          /* strings and side arrays of this run */
  int id_limit;          /* side arrays cover node ids [0, id_limit) */
  jit_node_state *nodes; /* by node id; .node NULL for ids not in the graph */
  graph_node **topo;     /* topological order (back-edges ignored) */
  int n_topo;
  /* Candidate devices, highest priority first: only jit_options.device when one was
   * named, else every usable device of the registry. */
  int n_devices;
  const backend *devices[32];
  bool device_named; /* jit_options.device was given */
  int n_clusters;
  jit_cluster *clusters;
  jit_report *report;
  const char **frame_names; /* by jit_node_state.frame (mark-for-compilation); [0] NULL */
} jit_state;

typedef kiln_status (*jit_pass_fn)(jit_state *st);

kiln_status jit_pass_static_shapes(jit_state *st);
kiln_status jit_pass_placer(jit_state *st);
kiln_status jit_pass_mark_for_compilation(jit_state *st);
kiln_status jit_pass_partial_declustering(jit_state *st);
kiln_status jit_pass_encapsulate(jit_state *st);

/* Helpers. */
jit_node_state *jit_node(jit_state *st, const graph_node *n);
/* Sets the node's reason (printf-style) unless it already has one: the first rule
 * that excludes a node is the one reported. */
void jit_exclude(jit_state *st, const graph_node *n, const char *fmt, ...) KILN_PRINTF(3, 4);
/* Whether input i of a node must be a compile-time constant for its lowering. */
bool jit_input_must_be_constant(const jit_node_state *ns, int i);
/* Op kinds the cluster runtime handles itself (Const, Identity-like, resources,
 * functional control flow, TensorLists). */
jit_node_kind jit_classify(const graph_node *n, const op_def **def);
/* How many nodes n (of that kind) counts for --min_cluster_size: Const and
 * Identity-like nodes none, a functional While/If one plus what its functions count
 * (a loop holding an RNN step is real work however few nodes surround it), anything
 * else one. */
int jit_node_weight(const graph_node *n, jit_node_kind kind);
/* Resource op kind (resource_safety.c). */
jit_resource_kind jit_resource_kind_of(const graph_node *n);
/* True when a cluster holding the resource ops of cluster a together with those of
 * cluster b would read a value some member wrote (or write twice in order): an unsafe
 * pair W->R, W->RW, RW->R, RW->RW with a path from the first to the second. members
 * are node ids. */
typedef struct jit_resource_order jit_resource_order;
jit_resource_order *jit_resource_order_new(jit_state *st);
void jit_resource_order_free(jit_resource_order *o);
bool jit_resource_unsafe(const jit_resource_order *o, const jit_state *st, int n_a, const int *a, int n_b, const int *b,
                         const char **why);

#endif
