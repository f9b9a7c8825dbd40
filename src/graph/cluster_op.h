/* The cluster call node: the contract between the bridge's encapsulation (src/jit),
 * which rewrites a graph, and the executor (src/exec), which runs it.
 *
 * Encapsulation moves the nodes of each cluster into a function graph of the root's
 * library and leaves one call node of op KILN_CLUSTER_OP in their place (TF's
 * _XlaCompile/_XlaRun pair folded into one op). The function's inputs are the
 * cluster's arguments in the order [constants][args][resources]:
 *   - constants: values some member needs at compile time (a shape operand, axes…)
 *     that come from outside the cluster; the compile cache keys on their values;
 *   - args: ordinary tensors; the compile cache keys on their dtypes and shapes;
 *   - resources: resource-variable handles (DT_RESOURCE) the members read or write;
 *     the cluster reads each variable at entry and writes it back at exit.
 * The function's results are the values consumers outside the cluster read, in the
 * call node's output order. The call node's attributes say how many arguments of each
 * kind there are and which device compiles the cluster (node->assigned_device). Control
 * edges into or out of any member attach to the call node. A call node whose device
 * cannot compile the cluster, or whose compile answers UNIMPLEMENTED, runs the function
 * op by op: same semantics, same results. */
#ifndef KILN_GRAPH_CLUSTER_OP_H
#define KILN_GRAPH_CLUSTER_OP_H

#define KILN_CLUSTER_OP "kiln.Cluster"
/* FUNC: the cluster's function graph. */
#define KILN_CLUSTER_ATTR_FUNCTION "function"
/* INT: how many leading inputs are compile-time constants. */
#define KILN_CLUSTER_ATTR_N_CONSTANTS "n_constants"
/* INT: how many trailing inputs are resource handles. */
#define KILN_CLUSTER_ATTR_N_RESOURCES "n_resources"
/* BOOL: an explicit compile scope (_XlaCompile=true, kiln scope attribute): compile on
 * every new signature, without the lazy second-request rule. */
#define KILN_CLUSTER_ATTR_MUST_COMPILE "must_compile"

/* Attributes a model (or a user) puts on nodes to steer the bridge. */
#define KILN_ATTR_XLA_COMPILE "_XlaCompile"   /* TF's jit_compile=True marker (bool) */
#define KILN_ATTR_XLA_SCOPE "_XlaScope"       /* TF's compile scope name (string) */
#define KILN_ATTR_KILN_SCOPE "_kiln_scope"    /* kiln's own compile scope name (string) */

#endif
