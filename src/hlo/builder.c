/* The HLO builder: every instruction goes through hlo_build_instr, which copies a
 * caller-filled template into the module, runs shape inference and keeps the
 * instruction only if inference accepts it. Keeping one creation path means a lowering
 * or a pass cannot produce an instruction the verifier would reject for shape reasons,
 * and an error leaves the computation untouched (the new instruction is popped again;
 * it is always the last one appended). The typed hlo_build_* functions only fill
 * templates. */
#include "hlo/builder.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/shape_inference.h"

/* A module never needs more parameters per computation than this; the cap keeps a bad
 * number from turning into a huge allocation. */
#define MAX_PARAMETER_NUMBER (1 << 24)

hlo_instr hlo_instr_template(hlo_opcode op) {
  hlo_instr t;
  memset(&t, 0, sizeof t);
  t.op = op;
  t.shape = shape_scalar(HLO_TOKEN); /* "not given": see hlo_infer_shape */
  t.feature_group_count = 1;
  t.batch_group_count = 1;
  return t;
}

hlo_instr hlo_instr_template_from(const hlo_instr *src, hlo_instr **operands) {
  hlo_instr t = *src;
  t.name = NULL;
  t.literal = NULL;
  t.user_data = NULL;
  t.operands = operands;
  return t;
}

/* ------------------------------------------------------------ the one path ---- */

static kiln_status copy_ints(arena *a, hlo_ints *dst, const hlo_ints *src, const char *what) {
  if (src->n < 0 || (src->n > 0 && !src->v)) return ERR_INVALID("builder: malformed %s list", what);
  *dst = hlo_ints_make(a, src->n, src->v);
  return NULL;
}

static const char *copy_str(arena *a, const char *s) { return s ? arena_strdup(a, s) : NULL; }

/* Deep-copies the template's arena-owned fields into the module (the template's lists
 * may point at the caller's stack). */
static kiln_status copy_attrs(hlo_instr *ins, const hlo_instr *t) {
  arena *a = ins->parent->module->arena;
  TRY(copy_ints(a, &ins->dimensions, &t->dimensions, "dimensions"));
  TRY(copy_ints(a, &ins->slice_start, &t->slice_start, "slice start"));
  TRY(copy_ints(a, &ins->slice_limit, &t->slice_limit, "slice limit"));
  TRY(copy_ints(a, &ins->slice_stride, &t->slice_stride, "slice stride"));
  TRY(copy_ints(a, &ins->dynamic_slice_sizes, &t->dynamic_slice_sizes, "dynamic_slice_sizes"));
  TRY(copy_ints(a, &ins->pad_lo, &t->pad_lo, "padding low"));
  TRY(copy_ints(a, &ins->pad_hi, &t->pad_hi, "padding high"));
  TRY(copy_ints(a, &ins->pad_interior, &t->pad_interior, "padding interior"));
  TRY(copy_ints(a, &ins->dot.lhs_batch, &t->dot.lhs_batch, "lhs_batch_dims"));
  TRY(copy_ints(a, &ins->dot.rhs_batch, &t->dot.rhs_batch, "rhs_batch_dims"));
  TRY(copy_ints(a, &ins->dot.lhs_contracting, &t->dot.lhs_contracting, "lhs_contracting_dims"));
  TRY(copy_ints(a, &ins->dot.rhs_contracting, &t->dot.rhs_contracting, "rhs_contracting_dims"));
  TRY(copy_ints(a, &ins->gather.offset_dims, &t->gather.offset_dims, "offset_dims"));
  TRY(copy_ints(a, &ins->gather.collapsed_slice_dims, &t->gather.collapsed_slice_dims, "collapsed_slice_dims"));
  TRY(copy_ints(a, &ins->gather.start_index_map, &t->gather.start_index_map, "start_index_map"));
  TRY(copy_ints(a, &ins->gather.operand_batching_dims, &t->gather.operand_batching_dims, "operand_batching_dims"));
  TRY(copy_ints(a, &ins->gather.start_indices_batching_dims, &t->gather.start_indices_batching_dims,
                "start_indices_batching_dims"));
  TRY(copy_ints(a, &ins->gather_slice_sizes, &t->gather_slice_sizes, "slice_sizes"));
  TRY(copy_ints(a, &ins->scatter.update_window_dims, &t->scatter.update_window_dims, "update_window_dims"));
  TRY(copy_ints(a, &ins->scatter.inserted_window_dims, &t->scatter.inserted_window_dims, "inserted_window_dims"));
  TRY(copy_ints(a, &ins->scatter.scatter_dims_to_operand_dims, &t->scatter.scatter_dims_to_operand_dims,
                "scatter_dims_to_operand_dims"));
  TRY(copy_ints(a, &ins->scatter.input_batching_dims, &t->scatter.input_batching_dims, "input_batching_dims"));
  TRY(copy_ints(a, &ins->scatter.scatter_indices_batching_dims, &t->scatter.scatter_indices_batching_dims,
                "scatter_indices_batching_dims"));
  ins->custom_call_target = copy_str(a, t->custom_call_target);
  ins->fusion_kind = copy_str(a, t->fusion_kind);
  ins->metadata = copy_str(a, t->metadata);
  ins->n_raw_attrs = 0;
  ins->raw_attrs = NULL;
  if (t->n_raw_attrs < 0 || (t->n_raw_attrs > 0 && !t->raw_attrs))
    return ERR_INVALID("builder: malformed raw attributes");
  for (int i = 0; i < t->n_raw_attrs; i++) {
    if (!t->raw_attrs[i].key || !t->raw_attrs[i].value)
      return ERR_INVALID("builder: raw attribute %d is incomplete", i);
    hlo_instr_add_raw_attr(ins, t->raw_attrs[i].key, t->raw_attrs[i].value);
  }
  return NULL;
}

static void register_parameter(hlo_computation *c, hlo_instr *p) {
  int k = (int)p->parameter_number;
  if (k >= c->n_params) {
    hlo_instr **np = arena_calloc(c->module->arena, (size_t)k + 1, sizeof *np);
    for (int i = 0; i < c->n_params; i++) np[i] = c->params[i];
    c->params = np;
    c->n_params = k + 1;
  }
  c->params[k] = p;
}

/* Checks everything about the template that must hold before an instruction exists. */
static kiln_status check_template(hlo_computation *c, const hlo_instr *t) {
  if (!c) return ERR_INVALID("builder: no computation to add to");
  hlo_module *m = c->module;
  const char *op = (unsigned)t->op < HLO_OP_COUNT ? hlo_opcode_name(t->op) : "invalid";
  if ((unsigned)t->op >= HLO_OP_COUNT) return ERR_INVALID("builder: unknown opcode %d", (int)t->op);
  if (t->n_operands < 0 || (t->n_operands > 0 && !t->operands))
    return ERR_INVALID("builder: %s: malformed operand list", op);
  for (int i = 0; i < t->n_operands; i++) {
    const hlo_instr *o = t->operands[i];
    if (!o) return ERR_INVALID("builder: %s: operand %d is missing", op, i);
    if (o->parent != c)
      return ERR_INVALID("builder: %s: operand %d (%s) belongs to computation %s, not %s", op, i, o->name,
                         o->parent ? o->parent->name : "<none>", c->name);
  }
  if (t->n_called < 0 || (t->n_called > 0 && !t->called))
    return ERR_INVALID("builder: %s: malformed called computation list", op);
  for (int i = 0; i < t->n_called; i++) {
    if (!t->called[i]) return ERR_INVALID("builder: %s: called computation %d is missing", op, i);
    if (t->called[i]->module != m)
      return ERR_INVALID("builder: %s: called computation %s belongs to another module", op, t->called[i]->name);
    if (t->called[i] == c) return ERR_INVALID("builder: %s: computation %s cannot call itself", op, c->name);
  }
  if (t->name && hlo_module_name_taken(m, t->name, NULL))
    return ERR_INVALID("builder: %s: the name %s is already used in module %s", op, t->name, m->name);
  if (t->op == HLO_OP_PARAMETER) {
    if (t->parameter_number < 0 || t->parameter_number > MAX_PARAMETER_NUMBER)
      return ERR_INVALID("builder: parameter number %lld is out of range", (long long)t->parameter_number);
    if (t->parameter_number < c->n_params && c->params[t->parameter_number])
      return ERR_INVALID("builder: computation %s already has parameter %lld (%s)", c->name,
                         (long long)t->parameter_number, c->params[t->parameter_number]->name);
  }
  kiln_status st = hlo_shape_validate(&t->shape, true);
  if (st) return status_wrap(st, "builder: %s", op);
  return NULL;
}

/* Undoes hlo_instr_new for the instruction just appended. */
static void pop_instr(hlo_computation *c, hlo_instr *ins) {
  if (c->n_instrs > 0 && c->instrs[c->n_instrs - 1] == ins) c->n_instrs--;
  if (ins->id == c->module->next_id - 1) c->module->next_id--;
}

kiln_status hlo_build_instr(hlo_computation *c, const hlo_instr *tmpl, hlo_instr **out) {
  /* *out is written only once the operands have been copied: a caller may pass a slot
   * of the very operand array it hands in as the output. */
  kiln_status st = check_template(c, tmpl);
  if (st) {
    literal_free(tmpl->literal);
    *out = NULL;
    return st;
  }
  hlo_module *m = c->module;
  hlo_instr *ins = hlo_instr_new(c, tmpl->op, &tmpl->shape, tmpl->name);
  /* Take every plain field from the template, then restore what hlo_instr_new owns. */
  int id = ins->id;
  const char *name = ins->name;
  hlo_shape shape = ins->shape;
  *ins = *tmpl;
  ins->id = id;
  ins->name = name;
  ins->shape = shape;
  ins->parent = c;
  ins->literal = NULL;
  ins->n_operands = 0, ins->operands = NULL;
  ins->n_called = 0, ins->called = NULL;
  if (tmpl->literal) hlo_instr_set_literal(ins, tmpl->literal);
  hlo_instr_set_operands(ins, tmpl->n_operands, tmpl->operands);
  hlo_instr_set_called(ins, tmpl->n_called, tmpl->called);
  st = copy_attrs(ins, tmpl);
  /* Generated names ("add.7") can collide with names read from a file. */
  for (int k = 1; !st && !tmpl->name && hlo_module_name_taken(m, ins->name, ins); k++)
    ins->name = arena_printf(m->arena, "%s.%d.%d", hlo_opcode_name(ins->op), ins->id, k);
  hlo_shape inferred;
  if (!st) st = hlo_infer_shape(m->arena, ins, &inferred);
  if (st) {
    pop_instr(c, ins);
    *out = NULL;
    return st;
  }
  ins->shape = inferred;
  if (ins->op == HLO_OP_PARAMETER) register_parameter(c, ins);
  hlo_module_note_name(m, ins->name);
  *out = ins;
  return NULL;
}

/* -------------------------------------------------------------- wrappers ---- */

/* Error return of a wrapper that takes operand arrays: such wrappers leave *out alone
 * until the operands are read (see hlo_build_instr), so their early errors clear it
 * here. */
static kiln_status fail(hlo_instr **out, kiln_status st) {
  *out = NULL;
  return st;
}

static kiln_status need(const hlo_instr *x, const char *what, const char *op) {
  if (!x) return ERR_INVALID("builder: %s: %s is missing", op, what);
  return NULL;
}

static kiln_status check_rank(int rank, const char *op) {
  if (rank < 0 || rank > HLO_MAX_RANK)
    return ERR_INVALID("builder: %s: rank %d is outside [0, %d]", op, rank, HLO_MAX_RANK);
  return NULL;
}

static hlo_ints ints_view(int n, const int64_t *v) {
  hlo_ints r = {n, (int64_t *)v};
  return r;
}

/* Operands of a template built from several caller arrays; freed after the build. */
typedef struct operand_list {
  int n;
  hlo_instr **v;
} operand_list;

static operand_list operands_new(int n) {
  operand_list l = {0, calloc(n > 0 ? (size_t)n : 1, sizeof(hlo_instr *))};
  if (!l.v) abort();
  return l;
}

static void operands_add(operand_list *l, hlo_instr *const *xs, int n) {
  for (int i = 0; i < n; i++) l->v[l->n++] = xs[i];
}

static kiln_status build_with(hlo_computation *c, hlo_instr *t, operand_list *ops, hlo_instr **out) {
  t->n_operands = ops->n;
  t->operands = ops->v;
  kiln_status st = hlo_build_instr(c, t, out);
  free(ops->v);
  return st;
}

static kiln_status build1(hlo_computation *c, hlo_instr *t, hlo_instr *a, hlo_instr **out) {
  hlo_instr *ops[1] = {a};
  t->n_operands = 1;
  t->operands = ops;
  return hlo_build_instr(c, t, out);
}

static kiln_status build2(hlo_computation *c, hlo_instr *t, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  hlo_instr *ops[2] = {a, b};
  t->n_operands = 2;
  t->operands = ops;
  return hlo_build_instr(c, t, out);
}

static kiln_status build3(hlo_computation *c, hlo_instr *t, hlo_instr *a, hlo_instr *b, hlo_instr *d,
                          hlo_instr **out) {
  hlo_instr *ops[3] = {a, b, d};
  t->n_operands = 3;
  t->operands = ops;
  return hlo_build_instr(c, t, out);
}

kiln_status hlo_build_parameter(hlo_computation *c, int64_t number, const hlo_shape *shape, const char *name,
                                hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_PARAMETER);
  t.shape = *shape;
  t.parameter_number = number;
  t.name = name;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_constant(hlo_computation *c, hlo_literal *lit, hlo_instr **out) {
  *out = NULL;
  if (!lit) return ERR_INVALID("builder: constant: literal is missing");
  hlo_instr t = hlo_instr_template(HLO_OP_CONSTANT);
  t.shape = lit->shape;
  t.literal = lit;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_constant_scalar(hlo_computation *c, hlo_type type, double value, hlo_instr **out) {
  *out = NULL;
  if ((unsigned)type >= HLO_TYPE_COUNT || !hlo_type_is_array(type))
    return ERR_INVALID("builder: constant: %s is not an array element type", hlo_type_name(type));
  hlo_shape s = shape_scalar(type);
  hlo_literal *lit;
  TRY(literal_create(&s, &lit));
  literal_set_f64(lit, 0, value);
  return hlo_build_constant(c, lit, out);
}

kiln_status hlo_build_iota(hlo_computation *c, const hlo_shape *shape, int64_t iota_dimension, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_IOTA);
  t.shape = *shape;
  t.iota_dimension = iota_dimension;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_unary(hlo_computation *c, hlo_opcode op, hlo_instr *x, hlo_instr **out) {
  *out = NULL;
  if ((unsigned)op >= HLO_OP_COUNT || hlo_opcode_arity(op) != 1 || !hlo_opcode_is_elementwise(op))
    return ERR_INVALID("builder: %s is not a one-operand elementwise opcode", hlo_opcode_name(op));
  hlo_instr t = hlo_instr_template(op);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_binary(hlo_computation *c, hlo_opcode op, hlo_instr *lhs, hlo_instr *rhs, hlo_instr **out) {
  *out = NULL;
  if ((unsigned)op >= HLO_OP_COUNT || hlo_opcode_arity(op) != 2 || !hlo_opcode_is_elementwise(op) ||
      op == HLO_OP_COMPARE)
    return ERR_INVALID("builder: %s is not a binary elementwise opcode (use hlo_build_compare for compare)",
                       hlo_opcode_name(op));
  hlo_instr t = hlo_instr_template(op);
  return build2(c, &t, lhs, rhs, out);
}

kiln_status hlo_build_compare(hlo_computation *c, hlo_direction dir, hlo_instr *lhs, hlo_instr *rhs,
                              hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_COMPARE);
  t.direction = dir;
  return build2(c, &t, lhs, rhs, out);
}

kiln_status hlo_build_select(hlo_computation *c, hlo_instr *pred, hlo_instr *on_true, hlo_instr *on_false,
                             hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_SELECT);
  return build3(c, &t, pred, on_true, on_false, out);
}

kiln_status hlo_build_clamp(hlo_computation *c, hlo_instr *min, hlo_instr *x, hlo_instr *max, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_CLAMP);
  return build3(c, &t, min, x, max, out);
}

static kiln_status build_type_change(hlo_computation *c, hlo_opcode op, hlo_instr *x, hlo_type type,
                                     hlo_instr **out) {
  *out = NULL;
  if ((unsigned)type >= HLO_TYPE_COUNT || !hlo_type_is_array(type))
    return ERR_INVALID("builder: %s: %s is not an array element type", hlo_opcode_name(op), hlo_type_name(type));
  hlo_instr t = hlo_instr_template(op);
  t.shape = shape_scalar(type);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_convert(hlo_computation *c, hlo_instr *x, hlo_type type, hlo_instr **out) {
  return build_type_change(c, HLO_OP_CONVERT, x, type, out);
}

kiln_status hlo_build_bitcast_convert(hlo_computation *c, hlo_instr *x, hlo_type type, hlo_instr **out) {
  return build_type_change(c, HLO_OP_BITCAST_CONVERT, x, type, out);
}

kiln_status hlo_build_broadcast(hlo_computation *c, hlo_instr *x, int rank, const int64_t *out_dims,
                                const int64_t *broadcast_dims, hlo_instr **out) {
  *out = NULL;
  TRY(need(x, "operand", "broadcast"));
  TRY(check_rank(rank, "broadcast"));
  if (x->shape.rank > 0 && !broadcast_dims) return ERR_INVALID("builder: broadcast: broadcast_dims is missing");
  hlo_instr t = hlo_instr_template(HLO_OP_BROADCAST);
  t.shape = shape_make(x->shape.type, rank, out_dims);
  t.dimensions = ints_view(shape_is_array(&x->shape) ? x->shape.rank : 0, broadcast_dims);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_reshape(hlo_computation *c, hlo_instr *x, int rank, const int64_t *dims, hlo_instr **out) {
  *out = NULL;
  TRY(need(x, "operand", "reshape"));
  TRY(check_rank(rank, "reshape"));
  hlo_instr t = hlo_instr_template(HLO_OP_RESHAPE);
  t.shape = shape_make(x->shape.type, rank, dims);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_transpose(hlo_computation *c, hlo_instr *x, const int64_t *perm, hlo_instr **out) {
  *out = NULL;
  TRY(need(x, "operand", "transpose"));
  hlo_instr t = hlo_instr_template(HLO_OP_TRANSPOSE);
  t.dimensions = ints_view(shape_is_array(&x->shape) ? x->shape.rank : 0, perm);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_slice(hlo_computation *c, hlo_instr *x, const int64_t *start, const int64_t *limit,
                            const int64_t *stride, hlo_instr **out) {
  *out = NULL;
  TRY(need(x, "operand", "slice"));
  int r = shape_is_array(&x->shape) ? x->shape.rank : 0;
  hlo_instr t = hlo_instr_template(HLO_OP_SLICE);
  t.slice_start = ints_view(r, start);
  t.slice_limit = ints_view(r, limit);
  t.slice_stride = ints_view(stride ? r : 0, stride);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_dynamic_slice(hlo_computation *c, hlo_instr *x, hlo_instr *const *starts, const int64_t *sizes,
                                    hlo_instr **out) {
  kiln_status st = need(x, "operand", "dynamic-slice");
  if (st) return fail(out, st);
  int r = shape_is_array(&x->shape) ? x->shape.rank : 0;
  hlo_instr t = hlo_instr_template(HLO_OP_DYNAMIC_SLICE);
  t.dynamic_slice_sizes = ints_view(r, sizes);
  operand_list ops = operands_new(1 + r);
  operands_add(&ops, &x, 1);
  operands_add(&ops, starts, r);
  return build_with(c, &t, &ops, out);
}

kiln_status hlo_build_dynamic_update_slice(hlo_computation *c, hlo_instr *x, hlo_instr *update,
                                           hlo_instr *const *starts, hlo_instr **out) {
  kiln_status st = need(x, "operand", "dynamic-update-slice");
  if (st) return fail(out, st);
  int r = shape_is_array(&x->shape) ? x->shape.rank : 0;
  hlo_instr t = hlo_instr_template(HLO_OP_DYNAMIC_UPDATE_SLICE);
  operand_list ops = operands_new(2 + r);
  operands_add(&ops, &x, 1);
  operands_add(&ops, &update, 1);
  operands_add(&ops, starts, r);
  return build_with(c, &t, &ops, out);
}

kiln_status hlo_build_concatenate(hlo_computation *c, int n, hlo_instr *const *xs, int64_t dimension,
                                  hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_CONCATENATE);
  t.dimensions = ints_view(1, &dimension);
  t.n_operands = n;
  t.operands = (hlo_instr **)xs;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_pad(hlo_computation *c, hlo_instr *x, hlo_instr *pad_value, const int64_t *lo,
                          const int64_t *hi, const int64_t *interior, hlo_instr **out) {
  *out = NULL;
  TRY(need(x, "operand", "pad"));
  int r = shape_is_array(&x->shape) ? x->shape.rank : 0;
  hlo_instr t = hlo_instr_template(HLO_OP_PAD);
  t.pad_lo = ints_view(r, lo);
  t.pad_hi = ints_view(r, hi);
  /* No interior padding means zeros, spelled out so every consumer sees a full config. */
  static const int64_t no_interior[HLO_MAX_RANK] = {0};
  t.pad_interior = ints_view(r, interior ? interior : no_interior);
  return build2(c, &t, x, pad_value, out);
}

kiln_status hlo_build_reverse(hlo_computation *c, hlo_instr *x, int n_dims, const int64_t *dims, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_REVERSE);
  t.dimensions = ints_view(n_dims, dims);
  return build1(c, &t, x, out);
}

kiln_status hlo_build_tuple(hlo_computation *c, int n, hlo_instr *const *xs, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_TUPLE);
  t.n_operands = n;
  t.operands = (hlo_instr **)xs;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_get_tuple_element(hlo_computation *c, hlo_instr *tuple, int64_t index, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_GET_TUPLE_ELEMENT);
  t.tuple_index = index;
  return build1(c, &t, tuple, out);
}

static kiln_status build_reduction(hlo_computation *c, hlo_instr *t, int n, hlo_instr *const *inputs,
                                   hlo_instr *const *inits, hlo_computation *to_apply, hlo_instr **out) {
  if (n < 1 || !inputs || !inits)
    return fail(out, ERR_INVALID("builder: %s needs at least one input and init value", hlo_opcode_name(t->op)));
  hlo_computation *called[1] = {to_apply};
  t->n_called = 1;
  t->called = called;
  operand_list ops = operands_new(2 * n);
  operands_add(&ops, inputs, n);
  operands_add(&ops, inits, n);
  return build_with(c, t, &ops, out);
}

kiln_status hlo_build_reduce(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *const *inits,
                             int n_dims, const int64_t *dims, hlo_computation *to_apply, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_REDUCE);
  t.dimensions = ints_view(n_dims, dims);
  return build_reduction(c, &t, n, inputs, inits, to_apply, out);
}

kiln_status hlo_build_reduce_window(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *const *inits,
                                    const hlo_window *window, hlo_computation *to_apply, hlo_instr **out) {
  if (!window) return fail(out, ERR_INVALID("builder: reduce-window: window is missing"));
  hlo_instr t = hlo_instr_template(HLO_OP_REDUCE_WINDOW);
  t.window = *window;
  return build_reduction(c, &t, n, inputs, inits, to_apply, out);
}

hlo_window hlo_window_make(int rank, const int64_t *sizes, const int64_t *strides) {
  hlo_window w;
  memset(&w, 0, sizeof w);
  w.rank = rank < 0 ? 0 : rank > HLO_MAX_RANK ? HLO_MAX_RANK : rank;
  for (int i = 0; i < w.rank; i++) {
    w.dims[i].size = sizes[i];
    w.dims[i].stride = strides ? strides[i] : 1;
    w.dims[i].lhs_dilate = w.dims[i].rhs_dilate = 1;
  }
  return w;
}

static kiln_status contraction_shape(const hlo_instr *lhs, const hlo_instr *rhs, hlo_type result_type,
                                     const char *op, hlo_shape *out) {
  TRY(need(lhs, "lhs", op));
  TRY(need(rhs, "rhs", op));
  if (result_type == HLO_BUILD_DEFAULT_TYPE) {
    result_type = hlo_higher_precision_type(lhs->shape.type, rhs->shape.type);
  } else if ((unsigned)result_type >= HLO_TYPE_COUNT || !hlo_type_is_array(result_type)) {
    return ERR_INVALID("builder: %s: result type %s is not an array element type", op, hlo_type_name(result_type));
  }
  *out = shape_scalar(result_type);
  return NULL;
}

kiln_status hlo_build_dot(hlo_computation *c, hlo_instr *lhs, hlo_instr *rhs, const hlo_dot_dnums *dnums,
                          hlo_type result_type, hlo_instr **out) {
  *out = NULL;
  hlo_instr t = hlo_instr_template(HLO_OP_DOT);
  TRY(contraction_shape(lhs, rhs, result_type, "dot", &t.shape));
  if (dnums) t.dot = *dnums;
  return build2(c, &t, lhs, rhs, out);
}

kiln_status hlo_build_convolution(hlo_computation *c, hlo_instr *lhs, hlo_instr *rhs, const hlo_window *window,
                                  const hlo_conv_dnums *dnums, int64_t feature_group_count,
                                  int64_t batch_group_count, hlo_type result_type, hlo_instr **out) {
  *out = NULL;
  hlo_instr t = hlo_instr_template(HLO_OP_CONVOLUTION);
  TRY(contraction_shape(lhs, rhs, result_type, "convolution", &t.shape));
  if (window) t.window = *window;
  if (dnums) {
    t.conv = *dnums;
    t.has_conv_dnums = true;
  }
  t.feature_group_count = feature_group_count;
  t.batch_group_count = batch_group_count;
  return build2(c, &t, lhs, rhs, out);
}

kiln_status hlo_build_gather(hlo_computation *c, hlo_instr *operand, hlo_instr *start_indices,
                             const hlo_gather_dnums *dnums, const int64_t *slice_sizes, hlo_instr **out) {
  *out = NULL;
  TRY(need(operand, "operand", "gather"));
  if (!dnums) return ERR_INVALID("builder: gather: dimension numbers are missing");
  hlo_instr t = hlo_instr_template(HLO_OP_GATHER);
  t.gather = *dnums;
  t.gather_slice_sizes = ints_view(shape_is_array(&operand->shape) ? operand->shape.rank : 0, slice_sizes);
  return build2(c, &t, operand, start_indices, out);
}

kiln_status hlo_build_scatter(hlo_computation *c, int n, hlo_instr *const *inputs, hlo_instr *indices,
                              hlo_instr *const *updates, const hlo_scatter_dnums *dnums, hlo_computation *to_apply,
                              hlo_instr **out) {
  if (n < 1 || !inputs || !updates) return fail(out, ERR_INVALID("builder: scatter needs at least one input and update"));
  if (!dnums) return fail(out, ERR_INVALID("builder: scatter: dimension numbers are missing"));
  hlo_instr t = hlo_instr_template(HLO_OP_SCATTER);
  t.scatter = *dnums;
  hlo_computation *called[1] = {to_apply};
  t.n_called = 1;
  t.called = called;
  operand_list ops = operands_new(2 * n + 1);
  operands_add(&ops, inputs, n);
  operands_add(&ops, &indices, 1);
  operands_add(&ops, updates, n);
  return build_with(c, &t, &ops, out);
}

kiln_status hlo_build_sort(hlo_computation *c, int n, hlo_instr *const *xs, int64_t dimension, bool is_stable,
                           hlo_computation *comparator, hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_SORT);
  t.dimensions = ints_view(1, &dimension);
  t.is_stable = is_stable;
  hlo_computation *called[1] = {comparator};
  t.n_called = 1;
  t.called = called;
  t.n_operands = n;
  t.operands = (hlo_instr **)xs;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_while(hlo_computation *c, hlo_computation *condition, hlo_computation *body, hlo_instr *init,
                            hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_WHILE);
  hlo_computation *called[2] = {condition, body};
  t.n_called = 2;
  t.called = called;
  return build1(c, &t, init, out);
}

kiln_status hlo_build_conditional(hlo_computation *c, hlo_instr *branch_index, int n,
                                  hlo_computation *const *branches, hlo_instr *const *args, hlo_instr **out) {
  if (n < 1 || !branches || !args) return fail(out, ERR_INVALID("builder: conditional needs at least one branch"));
  hlo_instr t = hlo_instr_template(HLO_OP_CONDITIONAL);
  t.n_called = n;
  t.called = (hlo_computation **)branches;
  operand_list ops = operands_new(n + 1);
  operands_add(&ops, &branch_index, 1);
  operands_add(&ops, args, n);
  return build_with(c, &t, &ops, out);
}

kiln_status hlo_build_call(hlo_computation *c, hlo_computation *callee, int n, hlo_instr *const *args,
                           hlo_instr **out) {
  hlo_instr t = hlo_instr_template(HLO_OP_CALL);
  hlo_computation *called[1] = {callee};
  t.n_called = 1;
  t.called = called;
  t.n_operands = n;
  t.operands = (hlo_instr **)args;
  return hlo_build_instr(c, &t, out);
}

kiln_status hlo_build_map(hlo_computation *c, int n, hlo_instr *const *xs, hlo_computation *to_apply,
                          hlo_instr **out) {
  if (n < 1 || !xs || !xs[0]) return fail(out, ERR_INVALID("builder: map needs at least one operand"));
  hlo_instr t = hlo_instr_template(HLO_OP_MAP);
  /* XLA prints map with dimensions={0..rank-1}; fill them so a print round-trips. */
  int64_t dims[HLO_MAX_RANK];
  int r = shape_is_array(&xs[0]->shape) ? xs[0]->shape.rank : 0;
  for (int i = 0; i < r; i++) dims[i] = i;
  t.dimensions = ints_view(r, dims);
  hlo_computation *called[1] = {to_apply};
  t.n_called = 1;
  t.called = called;
  t.n_operands = n;
  t.operands = (hlo_instr **)xs;
  return hlo_build_instr(c, &t, out);
}

/* --------------------------------------------------- computations, modules ---- */

kiln_status hlo_build_set_root(hlo_computation *c, hlo_instr *root) {
  if (!root) return ERR_INVALID("builder: computation %s: root is missing", c->name);
  if (root->parent != c)
    return ERR_INVALID("builder: %s cannot be the root of computation %s: it belongs to %s", root->name, c->name,
                       root->parent ? root->parent->name : "no computation");
  c->root = root;
  return NULL;
}

void hlo_build_set_entry(hlo_module *m, hlo_computation *c) {
  for (int i = 0; i < m->n_comps; i++) m->comps[i]->is_entry = false;
  c->is_entry = true;
  m->entry = c;
}

/* Moves the most recently added computation to the front of the module's list. */
static void move_last_to_front(hlo_module *m) {
  hlo_computation *c = m->comps[m->n_comps - 1];
  memmove(&m->comps[1], &m->comps[0], (size_t)(m->n_comps - 1) * sizeof *m->comps);
  m->comps[0] = c;
}

static bool is_scalar_binary(const hlo_computation *c, hlo_opcode op, hlo_type operand_type, hlo_type result_type,
                             hlo_direction dir) {
  if (c->n_params != 2 || !c->params || !c->params[0] || !c->params[1] || !c->root) return false;
  const hlo_instr *r = c->root;
  for (int i = 0; i < 2; i++) {
    const hlo_shape *s = &c->params[i]->shape;
    if (s->type != operand_type || s->rank != 0) return false;
  }
  return r->op == op && r->shape.type == result_type && r->shape.rank == 0 && r->n_operands == 2 &&
         r->operands[0] == c->params[0] && r->operands[1] == c->params[1] &&
         (op != HLO_OP_COMPARE || r->direction == dir);
}

static kiln_status scalar_binary_computation(hlo_module *m, const char *base, hlo_opcode op, hlo_direction dir,
                                             hlo_type type, hlo_computation **out) {
  *out = NULL;
  if ((unsigned)type >= HLO_TYPE_COUNT || !hlo_type_is_array(type))
    return ERR_INVALID("builder: %s: %s is not an array element type", base, hlo_type_name(type));
  hlo_type result = op == HLO_OP_COMPARE ? HLO_PRED : type;
  char *name = arena_printf(m->arena, "%s_%s", base, hlo_type_name(type));
  for (int k = 1;; k++) {
    hlo_computation *existing = hlo_module_find_computation(m, name);
    if (!existing) break;
    if (is_scalar_binary(existing, op, type, result, dir)) {
      *out = existing;
      return NULL;
    }
    name = arena_printf(m->arena, "%s_%s.%d", base, hlo_type_name(type), k);
  }
  hlo_computation *c = hlo_computation_new(m, name);
  hlo_shape s = shape_scalar(type);
  hlo_instr *lhs, *rhs, *root;
  kiln_status st = hlo_build_parameter(c, 0, &s, NULL, &lhs);
  if (!st) st = hlo_build_parameter(c, 1, &s, NULL, &rhs);
  if (!st) st = op == HLO_OP_COMPARE ? hlo_build_compare(c, dir, lhs, rhs, &root) : hlo_build_binary(c, op, lhs, rhs,
      &root);
  if (st) {
    /* Drop the unfinished computation (it is the last one added). */
    m->n_comps--;
    return st;
  }
  c->root = root;
  move_last_to_front(m);
  *out = c;
  return NULL;
}

kiln_status hlo_build_scalar_computation(hlo_module *m, hlo_opcode op, hlo_type type, hlo_computation **out) {
  if ((unsigned)op >= HLO_OP_COUNT || hlo_opcode_arity(op) != 2 || !hlo_opcode_is_elementwise(op) ||
      op == HLO_OP_COMPARE) {
    *out = NULL;
    return ERR_INVALID("builder: %s is not a binary elementwise opcode for a reducer", hlo_opcode_name(op));
  }
  return scalar_binary_computation(m, hlo_opcode_name(op), op, HLO_DIR_EQ, type, out);
}

kiln_status hlo_build_compare_computation(hlo_module *m, hlo_direction dir, hlo_type type, hlo_computation **out) {
  static const char *const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  if ((unsigned)dir > HLO_DIR_GE) {
    *out = NULL;
    return ERR_INVALID("builder: unknown comparison direction %d", (int)dir);
  }
  return scalar_binary_computation(m, names[dir], HLO_OP_COMPARE, dir, type, out);
}

typedef struct order_ctx {
  hlo_module *m;
  unsigned char *state; /* 0 new, 1 on the stack, 2 placed */
  hlo_computation **sorted;
  int n_sorted;
} order_ctx;

static int index_of(const hlo_module *m, const hlo_computation *c) {
  for (int i = 0; i < m->n_comps; i++)
    if (m->comps[i] == c) return i;
  return -1;
}

static kiln_status place(order_ctx *o, int ci) {
  if (o->state[ci] == 2) return NULL;
  hlo_computation *c = o->m->comps[ci];
  if (o->state[ci] == 1) return ERR_INVALID("builder: computation %s calls itself through a cycle", c->name);
  o->state[ci] = 1;
  for (int j = 0; j < c->n_instrs; j++)
    for (int k = 0; k < c->instrs[j]->n_called; k++) {
      int callee = index_of(o->m, c->instrs[j]->called[k]);
      if (callee < 0)
        return ERR_INVALID("builder: %s in computation %s calls a computation outside the module", c->instrs[j]->name,
                           c->name);
      TRY(place(o, callee));
    }
  o->state[ci] = 2;
  o->sorted[o->n_sorted++] = c;
  return NULL;
}

kiln_status hlo_build_order_computations(hlo_module *m) {
  int n = m->n_comps;
  if (n < 2) return NULL;
  order_ctx o = {m, calloc((size_t)n, 1), malloc((size_t)n * sizeof(hlo_computation *)), 0};
  if (!o.state || !o.sorted) abort();
  kiln_status st = NULL;
  for (int i = 0; i < n && !st; i++)
    if (m->comps[i] != m->entry) st = place(&o, i);
  int e = m->entry ? index_of(m, m->entry) : -1;
  if (!st && e >= 0) st = place(&o, e);
  if (!st) memcpy(m->comps, o.sorted, (size_t)n * sizeof *m->comps);
  free(o.state);
  free(o.sorted);
  return st;
}
