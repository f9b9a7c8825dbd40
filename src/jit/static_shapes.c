/* Pre-placement pass static-shapes: what is known before running about every node
 * output — dtype, shape and, for small values computable from constants alone (shape
 * arithmetic: Shape -> Gather -> Concat -> Reshape's target), the value itself.
 *
 * Importers keep only what the model file declares, which is little, so this pass
 * finds the rest the way the compiler would: in topological order, a node whose inputs
 * are all known is lowered through its op's translator into a scratch HLO module, and
 * the module's root shapes are the node's output shapes (the lowering is the single
 * source of truth for shape semantics, so no second shape function per op exists to
 * disagree with it). When every input value is known and the outputs are small, the
 * evaluator runs the module and the values are recorded too.
 *
 * The scratch module also answers the placer's question "which devices can run this
 * node": every instruction of the lowering is offered to each candidate device's
 * supports(), and the first refusal is kept per device as the reason. A node whose shapes
 * stay unknown (a dynamic dimension) is decided when its cluster compiles. */
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "hlo/builder.h"
#include "hlo/shape.h"
#include "jit/jit_internal.h"

/* Values up to this many elements are evaluated and kept (shape vectors, axes,
 * scalars); anything larger is real data, not shape arithmetic. */
#define STATIC_VALUE_MAX_ELEMENTS 1024

typedef struct lowered {
  hlo_module *m;
  int n_out;
  hlo_instr **outs;
  bool has_params;
} lowered;

static const jit_value_info *input_info(jit_state *st, const graph_node *n, int i) {
  const graph_edge *e = &n->inputs[i];
  jit_node_state *src = jit_node(st, e->node);
  if (e->port < 0 || e->port >= src->n_out) return NULL;
  return &src->out[e->port];
}

static bool small_value(const graph_tensor *t) { return t && t->n <= STATIC_VALUE_MAX_ELEMENTS; }

/* Lowers node n on its known inputs; false when something needed is unknown or the
 * lowering declines (left unknown, never an error: the runtime decides then). */
static bool lower_node(jit_state *st, jit_node_state *ns, lowered *out) {
  const graph_node *n = ns->node;
  int n_in = n->n_inputs;
  memset(out, 0, sizeof *out);
  for (int i = 0; i < n_in; i++) {
    const jit_value_info *vi = input_info(st, n, i);
    if (!vi) return false;
    if (jit_input_must_be_constant(ns, i)) {
      if (!vi->value) return false;
    } else {
      hlo_shape hs;
      if (!graph_shape_to_hlo(&vi->shape, vi->dtype, &hs)) return false;
    }
  }
  hlo_module *m = hlo_module_new(graph_node_op_base(n));
  hlo_computation *c = hlo_computation_new(m, "main");
  op_lower_args a;
  op_lower_args_init(&a, n);
  kiln_status s = NULL;
  int n_params = 0;
  for (int i = 0; i < n_in && !s; i++) {
    const jit_value_info *vi = input_info(st, n, i);
    a.dtypes[i] = vi->dtype;
    bool must = jit_input_must_be_constant(ns, i);
    if (must) a.consts[i] = vi->value;
    if (vi->value && (must || small_value(vi->value))) {
      s = op_constant(c, vi->value, &a.inputs[i]);
      if (!s && !a.inputs[i] && !must) s = status_error(KILN_UNIMPLEMENTED, "no HLO form");
      continue;
    }
    hlo_shape hs;
    graph_shape_to_hlo(&vi->shape, vi->dtype, &hs);
    s = hlo_build_parameter(c, n_params++, &hs, NULL, &a.inputs[i]);
  }
  if (!s) s = op_lower(ns->def, n, c, &a);
  hlo_instr **outs = a.outputs;
  a.outputs = NULL; /* kept by out on success */
  op_lower_args_free(&a);
  if (s) {
    kiln_status_free(s);
    free(outs);
    hlo_module_free(m);
    return false;
  }
  hlo_build_set_entry(m, c);
  out->m = m;
  out->n_out = ns->n_out;
  out->outs = outs;
  out->has_params = n_params > 0;
  return true;
}

/* The first instruction of m the device refuses, or NULL. */
static const hlo_instr *first_unsupported(const backend *dev, const hlo_module *m) {
  for (int ci = 0; ci < m->n_comps; ci++) {
    const hlo_computation *comp = m->comps[ci];
    for (int i = 0; i < comp->n_instrs; i++)
      if (!dev->supports(dev, comp->instrs[i])) return comp->instrs[i];
  }
  return NULL;
}

/* Evaluates the produced outputs of a parameter-free lowering. */
static void evaluate_outputs(jit_node_state *ns, lowered *lw) {
  int k_prod = 0;
  hlo_instr *elems[64];
  int map[64];
  for (int k = 0; k < lw->n_out && k < 64; k++) {
    map[k] = -1;
    if (!lw->outs[k]) continue;
    if (shape_is_tuple(&lw->outs[k]->shape)) return;
    if (shape_elements(&lw->outs[k]->shape) > STATIC_VALUE_MAX_ELEMENTS) return;
    map[k] = k_prod;
    elems[k_prod++] = lw->outs[k];
  }
  if (k_prod == 0 || lw->n_out > 64) return;
  hlo_computation *c = lw->m->entry;
  hlo_instr *root;
  if (hlo_build_tuple(c, k_prod, elems, &root) || hlo_build_set_root(c, root)) return;
  hlo_literal *res = NULL;
  kiln_status s = eval_module(lw->m, NULL, 0, &res);
  if (s) {
    kiln_status_free(s);
    return;
  }
  for (int k = 0; k < lw->n_out && k < 64; k++) {
    if (map[k] < 0) continue;
    graph_tensor *t;
    if (tensor_from_literal(res->tuple[map[k]], &t)) continue;
    /* The framework dtype wins where HLO lost it (none of the small-value ops do). */
    ns->out[k].value = t;
  }
  literal_free(res);
}

static void analyze_lowered(jit_state *st, jit_node_state *ns) {
  lowered lw;
  if (!lower_node(st, ns, &lw)) return;
  for (int k = 0; k < lw.n_out; k++) {
    const hlo_instr *o = lw.outs[k];
    if (!o || shape_is_tuple(&o->shape)) continue;
    graph_dtype dt = graph_dtype_from_hlo(o->shape.type);
    if (ns->out[k].dtype == GRAPH_DT_INVALID) ns->out[k].dtype = dt;
    ns->out[k].shape = graph_shape_make(o->shape.rank, o->shape.dims);
  }
  ns->unsupported = arena_calloc(st->arena, (size_t)st->n_devices + 1, sizeof *ns->unsupported);
  for (int d = 0; d < st->n_devices; d++) {
    const hlo_instr *bad = first_unsupported(st->devices[d], lw.m);
    if (bad)
      ns->unsupported[d] = arena_printf(st->arena, "device %s does not support %s (%s %s)", st->devices[d]->name,
                                        hlo_opcode_name(bad->op), bad->name, hlo_type_name(bad->shape.type));
  }
  if (!lw.has_params) evaluate_outputs(ns, &lw);
  free(lw.outs);
  hlo_module_free(lw.m);
}

kiln_status jit_pass_static_shapes(jit_state *st) {
  for (int t = 0; t < st->n_topo; t++) {
    graph_node *n = st->topo[t];
    jit_node_state *ns = jit_node(st, n);
    switch (ns->kind) {
      case JIT_KIND_CONST: {
        const graph_attr_value *v = graph_node_attr(n, "value");
        if (ns->n_out < 1) break;
        ns->out[0].dtype = v->tensor->dtype;
        ns->out[0].shape = tensor_shape(v->tensor);
        if (small_value(v->tensor)) ns->out[0].value = tensor_ref(v->tensor);
        break;
      }
      case JIT_KIND_IDENTITY:
        for (int k = 0; k < ns->n_out && k < n->n_inputs; k++) {
          const jit_value_info *vi = input_info(st, n, k);
          if (!vi) continue;
          ns->out[k].dtype = vi->dtype;
          ns->out[k].shape = vi->shape;
          ns->out[k].value = vi->value ? tensor_ref(vi->value) : NULL;
        }
        break;
      case JIT_KIND_LOWERED:
        analyze_lowered(st, ns);
        break;
      default:
        break;
    }
  }
  return NULL;
}
