/* Internals shared by the executor's files: the session object, execution plans (the
 * per-graph layout the scheduler walks), the compiled-op cache, the executor-native
 * ops (resources, TensorArray/TensorList, functional ops) and host tensor helpers.
 *
 * executor.c     plans and the scheduler (frames, iterations, deadness)
 * op_runner.c    op-library ops: single-op HLO modules, the compile cache, host kernels
 * natives.c      the table of ops the executor interprets, and the simple ones
 * resources.c    resource variables, TensorArrayV3 family, TensorList family
 * sequences.c    ONNX sequence and optional ops over the TensorList list values
 * functional.c   ONNX If/Loop/Scan, TF If/While/PartitionedCall
 * key_table.c    the byte-keyed hash table and key builders both compile caches use
 * cluster_runner.c  kiln.Cluster call nodes: one HLO module per cluster signature
 * tensor_util.c  slicing, stacking and scalar helpers over host tensors */
#ifndef KILN_EXEC_EXEC_INTERNAL_H
#define KILN_EXEC_EXEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/status.h"
#include "exec/executor.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "ops/ops.h"

/* ------------------------------------------------------------------ natives ---- */

/* Context of an executor-native op. Inputs are borrowed (the scheduler holds them);
 * each produced output is stored with one reference owned by the caller. */
typedef struct exec_node_ctx {
  executor *e;
  const graph_node *node;
  int n_inputs;
  graph_tensor *const *inputs;
  int n_outputs;
  graph_tensor **outputs;
} exec_node_ctx;

typedef kiln_status (*exec_native_fn)(exec_node_ctx *ctx);

typedef struct exec_native {
  const char *name; /* namespaced: "tf.TensorArrayV3" */
  exec_native_fn fn;
} exec_native;

/* NULL when the executor does not interpret op itself. */
const exec_native *exec_native_find(const char *op);
/* The native n runs as, or NULL; an op without a domain (a GraphDef's "Const") is looked
 * up as TensorFlow's ("tf.Const"). */
const exec_native *exec_native_of(const graph_node *n);

/* Native op implementations, by file. */
kiln_status exec_native_const(exec_node_ctx *c);
kiln_status exec_native_identity(exec_node_ctx *c);
kiln_status exec_native_noop(exec_node_ctx *c);

kiln_status exec_var_handle(exec_node_ctx *c);
kiln_status exec_var_read(exec_node_ctx *c);
kiln_status exec_var_assign(exec_node_ctx *c);
kiln_status exec_var_assign_add(exec_node_ctx *c);
kiln_status exec_var_assign_sub(exec_node_ctx *c);
kiln_status exec_var_is_initialized(exec_node_ctx *c);
kiln_status exec_var_destroy(exec_node_ctx *c);

kiln_status exec_ta_new(exec_node_ctx *c);
kiln_status exec_ta_read(exec_node_ctx *c);
kiln_status exec_ta_write(exec_node_ctx *c);
kiln_status exec_ta_gather(exec_node_ctx *c);
kiln_status exec_ta_scatter(exec_node_ctx *c);
kiln_status exec_ta_concat(exec_node_ctx *c);
kiln_status exec_ta_split(exec_node_ctx *c);
kiln_status exec_ta_size(exec_node_ctx *c);
kiln_status exec_ta_close(exec_node_ctx *c);

kiln_status exec_tl_empty(exec_node_ctx *c);
kiln_status exec_tl_reserve(exec_node_ctx *c);
kiln_status exec_tl_from_tensor(exec_node_ctx *c);
kiln_status exec_tl_set_item(exec_node_ctx *c);
kiln_status exec_tl_get_item(exec_node_ctx *c);
kiln_status exec_tl_push_back(exec_node_ctx *c);
kiln_status exec_tl_pop_back(exec_node_ctx *c);
kiln_status exec_tl_stack(exec_node_ctx *c);
kiln_status exec_tl_gather(exec_node_ctx *c);
kiln_status exec_tl_scatter_into(exec_node_ctx *c);
kiln_status exec_tl_scatter(exec_node_ctx *c);
kiln_status exec_tl_length(exec_node_ctx *c);
kiln_status exec_tl_element_shape(exec_node_ctx *c);
kiln_status exec_tl_resize(exec_node_ctx *c);
kiln_status exec_tl_concat(exec_node_ctx *c);
kiln_status exec_tl_split(exec_node_ctx *c);

kiln_status exec_seq_construct(exec_node_ctx *c);
kiln_status exec_seq_empty(exec_node_ctx *c);
kiln_status exec_seq_insert(exec_node_ctx *c);
kiln_status exec_seq_erase(exec_node_ctx *c);
kiln_status exec_seq_at(exec_node_ctx *c);
kiln_status exec_seq_length(exec_node_ctx *c);
kiln_status exec_seq_split(exec_node_ctx *c);
kiln_status exec_seq_concat(exec_node_ctx *c);
kiln_status exec_opt_make(exec_node_ctx *c);
kiln_status exec_opt_has_element(exec_node_ctx *c);
kiln_status exec_opt_get_element(exec_node_ctx *c);
kiln_status exec_zipmap(exec_node_ctx *c); /* maps.c */

kiln_status exec_onnx_if(exec_node_ctx *c);
kiln_status exec_onnx_loop(exec_node_ctx *c);
kiln_status exec_onnx_scan(exec_node_ctx *c);
kiln_status exec_seq_map(exec_node_ctx *c);
kiln_status exec_tf_if(exec_node_ctx *c);
kiln_status exec_tf_while(exec_node_ctx *c);
kiln_status exec_tf_call(exec_node_ctx *c);

/* kiln.Cluster (graph/cluster_op.h): compiles the cluster's function per signature,
 * or runs it op by op. */
kiln_status exec_cluster(exec_node_ctx *c);

typedef struct executor executor;
/* --dump_to: writes "// HEADER", then the module's dump text (hlo_module_to_dump_string),
 * to the dump directory's FILE_NAME. Best effort: a dump that cannot be written only
 * logs a warning. */
void exec_dump_module(const executor *e, const hlo_module *m, const char *file_name, const char *header);

/* ---------------------------------------------------------------- resources ---- */

typedef struct exec_resources exec_resources;
exec_resources *exec_resources_new(void);
void exec_resources_free(exec_resources *r);
/* Drops the per-run resources (TensorArrays, TensorLists) after a top-level run. */
void exec_resources_end_run(exec_resources *r);

/* Resource variables by handle tensor (a DT_RESOURCE scalar from VarHandleOp).
 * lookup: the variable's name, declared dtype (INVALID when its handle op did not say)
 * and current value (borrowed; NULL while uninitialized). read_value: a new reference
 * to the value; an uninitialized variable is an error naming it. write_value: replaces
 * the value, taking over the caller's reference to `value` even on error; a value of
 * another dtype than the declared one is an error naming the variable. */
kiln_status exec_var_lookup(executor *e, const graph_tensor *handle, const char **name, graph_dtype *declared,
                            const graph_tensor **value);
kiln_status exec_var_read_value(executor *e, const graph_tensor *handle, graph_tensor **out);
kiln_status exec_var_write_value(executor *e, const graph_tensor *handle, graph_tensor *value);

/* List values (resources.c): TensorLists, and ONNX sequences and optionals
 * (sequences.c), all DT_VARIANT scalar handles into step state that live until the
 * top-level run ends. A list is a value: ops that change one take a writable list
 * (exec_list_writable), which is the input itself when nothing else holds its handle
 * tensor, else a fresh copy sharing the element tensors. */
typedef enum exec_list_kind {
  EXEC_LIST_TENSOR_LIST = 0, /* TF TensorList */
  EXEC_LIST_SEQUENCE,        /* ONNX sequence */
  EXEC_LIST_OPTIONAL,        /* ONNX optional: 0 (none) or 1 element, a tensor or a sequence handle */
  EXEC_LIST_MAP,             /* ONNX map: 2 elements, the 1-D keys and the 1-D values */
} exec_list_kind;

typedef struct exec_list {
  graph_dtype dtype; /* element dtype; INVALID while unknown */
  graph_shape element_shape;
  int64_t n, cap;
  graph_tensor **elems; /* NULL: uninitialized element (TensorList only) */
  exec_list_kind kind;
} exec_list;

/* A new list of n uninitialized elements (kind TENSOR_LIST; set l->kind after) and its
 * handle. */
kiln_status exec_list_new(exec_node_ctx *c, graph_dtype dtype, const graph_shape *shape, int64_t n, exec_list **list,
                          graph_tensor **handle);
/* The same outside a node (graph inputs, values.c). */
kiln_status exec_list_new_in(executor *e, graph_dtype dtype, const graph_shape *shape, int64_t n, exec_list **list,
                             graph_tensor **handle);
/* The list data input `input` refers to; an error when it is not a list handle. */
kiln_status exec_list_input(exec_node_ctx *c, int input, exec_list **out);
/* The list an updating op may change (see above); *handle is its handle, a new reference. */
kiln_status exec_list_writable(exec_node_ctx *c, int input, exec_list **out, graph_tensor **handle);
/* Grows (new elements NULL) or shrinks (releasing elements) to n elements. */
kiln_status exec_list_resize(exec_list *l, int64_t n);
/* The list t is a handle of, or NULL when t is not a valid list handle of this run. */
exec_list *exec_list_lookup(executor *e, const graph_tensor *t);

/* ----------------------------------------------------------- cache keys ---- */

/* A hash table over byte-string keys (key_table.c), for the compile caches. */
typedef struct exec_key_slot {
  uint64_t hash;
  char *key; /* owned; NULL: empty slot */
  size_t len;
  void *value;
} exec_key_slot;

typedef struct exec_key_table {
  size_t cap, n;
  exec_key_slot *slots;
} exec_key_table;

/* The value stored under key, or NULL. */
void *exec_key_table_get(const exec_key_table *t, const char *key, size_t len);
/* Adds key (taken over; it must be absent) with value. */
void exec_key_table_put(exec_key_table *t, char *key, size_t len, void *value);
/* Frees the keys, each value through free_value (may be NULL), and the slots. */
void exec_key_table_free(exec_key_table *t, void (*free_value)(void *));

/* Key builders: raw bytes, an int64, a length-prefixed string, dtype + dims, and a
 * tensor's type and full contents. */
void exec_key_bytes(strbuf *b, const void *p, size_t n);
void exec_key_i64(strbuf *b, int64_t v);
void exec_key_str(strbuf *b, const char *s, size_t n);
void exec_key_type(strbuf *b, graph_dtype dtype, int rank, const int64_t *dims);
void exec_key_tensor(strbuf *b, const graph_tensor *t);

/* ------------------------------------------------------------------- cache ---- */

typedef struct exec_cache exec_cache;
exec_cache *exec_cache_new(void);
void exec_cache_free(exec_cache *c);
/* Interns what of a node's key is fixed (op, attributes, output count): nodes with the
 * same static key and the same runtime signature share one compiled module. */
int exec_cache_static_key(exec_cache *c, const graph_node *n);

/* Runs an op-library op on host tensors (borrowed); fills out[0..n_out) (NULL where
 * the op produced nothing). */
kiln_status exec_run_op(executor *e, const graph_node *node, const op_def *def, int static_key,
                        graph_tensor *const *in, int n_in, graph_tensor **out, int n_out);

/* ------------------------------------------------------------- the session ---- */

/* The cluster runner's per-executor state: compiled signatures and per-cluster
 * counters for the lazy and megamorphic policies. Created on the first cluster run. */
typedef struct exec_clusters exec_clusters;
void exec_clusters_free(exec_clusters *c); /* NULL is ignored */

typedef struct exec_plan exec_plan;

struct executor {
  graph *g;
  const backend *device;
  executor_stats stats;
  exec_cache *cache;
  exec_clusters *clusters; /* NULL until a cluster runs */
  exec_resources *res;
  int n_plans, cap_plans;
  exec_plan **plans; /* plans[0]: the root graph; then function bodies, built lazily */
  int call_depth;    /* nesting of function calls, bounded */
  char *dump_dir;    /* NULL: no dumps */
  bool dump_large_constants;
  backend_compile_options compile; /* its pointers borrowed from executor_options */
};

/* executor_run up to (not including) the end of the run: lists are still alive. */
kiln_status exec_run_fed(executor *e, int n_inputs, const char *const *names, graph_tensor *const *inputs,
                         graph_tensor **outputs);

/* Runs function graph `body` (of e's graph library) on positional inputs, giving its
 * results in order. Errors name the function. */
kiln_status exec_call_function(executor *e, graph *body, int n_in, graph_tensor *const *in, int n_out,
                               graph_tensor **out);

/* ---------------------------------------------------------- tensor helpers ---- */

/* "float[2,3]" into b. */
void exec_print_tensor_type(strbuf *b, const graph_tensor *t);
/* A new scalar. */
kiln_status exec_scalar_s64(graph_dtype dtype, int64_t v, graph_tensor **out);
kiln_status exec_scalar_f64(graph_dtype dtype, double v, graph_tensor **out);
/* Reads a one-element integer (or bool) tensor; `what` names it in errors. */
kiln_status exec_read_index(const graph_tensor *t, const char *what, int64_t *out);
/* TF's ToBool / ONNX's condition: one-element tensors by value (non-zero), otherwise
 * true iff non-empty. */
bool exec_truth(const graph_tensor *t);
/* A shape given as a tensor (TF element_shape operands): scalar -1 is unknown rank,
 * -1 entries are unknown dims. */
kiln_status exec_read_shape(const graph_tensor *t, const char *what, graph_shape *out);
/* Copies count elements between buffers of the same dtype (deep copies strings). */
void exec_copy_elements(graph_tensor *dst, int64_t dst_off, const graph_tensor *src, int64_t src_off, int64_t count);
/* Element `index` along `axis` with that axis removed. */
kiln_status exec_tensor_take(const graph_tensor *t, int axis, int64_t index, graph_tensor **out);
/* Rows [start, start+len) along axis 0 (axis kept). */
kiln_status exec_tensor_rows(const graph_tensor *t, int64_t start, int64_t len, graph_tensor **out);
/* Stacks n tensors of one dtype and shape along a new axis `axis`. When n == 0 the
 * element shape comes from *empty_shape (must be fully known) and dtype. */
kiln_status exec_tensor_stack(graph_dtype dtype, int n, graph_tensor *const *elems, int axis,
                              const graph_shape *empty_shape, graph_tensor **out);
/* Concatenates n tensors along axis 0 (same dtype and trailing dims). */
kiln_status exec_tensor_concat0(graph_dtype dtype, int n, graph_tensor *const *elems,
                                const graph_shape *empty_shape, graph_tensor **out);
/* Whether a runtime shape satisfies a declared one (unknown rank/dims match). */
bool exec_shape_matches(const graph_shape *declared, const graph_tensor *t);

#endif
