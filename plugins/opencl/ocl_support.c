/* What the OpenCL code generator accepts: the opcode x element-type table behind
 * op_supported, and the per-instruction check behind instruction_supported and compile
 * (operand types, attributes, reducer computations, f64 only with cl_khr_fp64). compile
 * answers UNIMPLEMENTED exactly when this check fails, naming the instruction and why. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_gen.h"

/* ------------------------------------------------------------------ opcodes ---- */

enum { M_PRED = 1, M_INT = 2, M_FLOAT = 4, M_ALL = 7, M_NUM = 6, M_LOGIC = 3 };

typedef enum okind { OK_UNARY = OP_UNARY, OK_BINARY = OP_BINARY, OK_OTHER = OP_OTHER } okind;

static const struct opinfo {
  const char *name;
  int mask;
  okind kind;
} ops[] = {
    {"abs", M_ALL, OK_UNARY}, {"negate", M_ALL, OK_UNARY}, {"sign", M_ALL, OK_UNARY}, {"copy", M_ALL, OK_UNARY},
    {"not", M_LOGIC, OK_UNARY}, {"exponential", M_FLOAT, OK_UNARY}, {"exponential-minus-one", M_FLOAT, OK_UNARY},
    {"log", M_FLOAT, OK_UNARY}, {"log-plus-one", M_FLOAT, OK_UNARY}, {"sqrt", M_FLOAT, OK_UNARY},
    {"rsqrt", M_FLOAT, OK_UNARY}, {"cbrt", M_FLOAT, OK_UNARY}, {"tanh", M_FLOAT, OK_UNARY},
    {"logistic", M_FLOAT, OK_UNARY}, {"sine", M_FLOAT, OK_UNARY}, {"cosine", M_FLOAT, OK_UNARY},
    {"tan", M_FLOAT, OK_UNARY}, {"floor", M_FLOAT, OK_UNARY}, {"ceil", M_FLOAT, OK_UNARY},
    {"round-nearest-even", M_FLOAT, OK_UNARY}, {"round-nearest-afz", M_FLOAT, OK_UNARY}, {"erf", M_FLOAT, OK_UNARY},
    {"popcnt", M_INT, OK_UNARY}, {"count-leading-zeros", M_INT, OK_UNARY},
    {"is-finite", M_PRED, OK_OTHER}, /* result pred; operand float (checked apart) */
    {"add", M_ALL, OK_BINARY}, {"subtract", M_ALL, OK_BINARY}, {"multiply", M_ALL, OK_BINARY},
    {"divide", M_ALL, OK_BINARY}, {"remainder", M_ALL, OK_BINARY}, {"maximum", M_ALL, OK_BINARY},
    {"minimum", M_ALL, OK_BINARY}, {"power", M_ALL, OK_BINARY}, {"atan2", M_FLOAT, OK_BINARY},
    {"and", M_LOGIC, OK_BINARY}, {"or", M_LOGIC, OK_BINARY}, {"xor", M_LOGIC, OK_BINARY},
    {"shift-left", M_INT, OK_BINARY}, {"shift-right-logical", M_INT, OK_BINARY},
    {"shift-right-arithmetic", M_INT, OK_BINARY},
    {"compare", M_PRED, OK_OTHER}, {"select", M_ALL, OK_OTHER}, {"clamp", M_ALL, OK_OTHER},
    {"convert", M_ALL, OK_OTHER}, {"reduce", M_ALL, OK_OTHER}, {"reduce-window", M_ALL, OK_OTHER},
    {"dot", M_NUM, OK_OTHER}, {"convolution", M_NUM, OK_OTHER}, {"broadcast", M_ALL, OK_OTHER},
    {"reshape", M_ALL, OK_OTHER}, {"bitcast", M_ALL, OK_OTHER}, {"transpose", M_ALL, OK_OTHER},
    {"slice", M_ALL, OK_OTHER}, {"concatenate", M_ALL, OK_OTHER}, {"reverse", M_ALL, OK_OTHER},
    {"pad", M_ALL, OK_OTHER}, {"iota", M_NUM, OK_OTHER}, {"tuple", M_ALL, OK_OTHER},
    {"get-tuple-element", M_ALL, OK_OTHER}, {"constant", M_ALL, OK_OTHER}, {"parameter", M_ALL, OK_OTHER},
    {"gather", M_ALL, OK_OTHER}, {"dynamic-slice", M_ALL, OK_OTHER}, {"dynamic-update-slice", M_ALL, OK_OTHER},
    {"reduce-precision", M_FLOAT, OK_OTHER}, {"bitcast-convert", M_NUM, OK_OTHER}, {"fusion", M_ALL, OK_OTHER},
    {"sort", M_ALL, OK_OTHER}, {"scatter", M_ALL, OK_OTHER}, {"select-and-scatter", M_ALL, OK_OTHER},
};
#define N_OPS ((int)(sizeof ops / sizeof ops[0]))

static const struct opinfo *find_op(const char *name) {
  for (int i = 0; i < N_OPS; i++)
    if (!strcmp(ops[i].name, name)) return &ops[i];
  return NULL;
}

static int type_mask(int dtype) {
  if (dtype == KILN_DTYPE_PRED) return M_PRED;
  if (ocl_dtype_is_int(dtype)) return M_INT;
  if (ocl_dtype_is_float(dtype)) return M_FLOAT;
  return 0;
}

static int dtype_ok(int dtype, const ocl_caps *caps) {
  if (!ocl_dtype_name(dtype)) return 0;
  if (dtype == KILN_DTYPE_F64 && !caps->has_fp64) return 0;
  return 1;
}

int ocl_op_supported(const char *opcode, int dtype, const ocl_caps *caps) {
  const struct opinfo *o = find_op(opcode);
  if (!o) return 0;
  if (dtype == 0)
    return !strcmp(opcode, "tuple") || !strcmp(opcode, "get-tuple-element") || !strcmp(opcode, "parameter") ||
           !strcmp(opcode, "reduce") || !strcmp(opcode, "sort");
  if (!dtype_ok(dtype, caps)) return 0;
  if (!strcmp(opcode, "compare") || !strcmp(opcode, "is-finite")) return dtype == KILN_DTYPE_PRED;
  return (o->mask & type_mask(dtype)) != 0;
}

static int shape_ok(const ocl_shape *s, const ocl_caps *caps) {
  if (s->dtype == 0) {
    for (int i = 0; i < s->n_elems; i++)
      if (!shape_ok(&s->elems[i], caps)) return 0;
    return 1;
  }
  return dtype_ok(s->dtype, caps);
}

static int is_scalar_comp_ok(const ocl_comp *comp, int n, const ocl_caps *caps, char *why, size_t cap);

/* compare's direction: XLA prints direction=LT (comparison_direction in older text). */
const char *direction_of(const ocl_instr *ins) {
  const char *d = ocl_attr(ins, "direction");
  return d ? d : ocl_attr(ins, "comparison_direction");
}

int ocl_instr_supported(const ocl_instr *ins, const ocl_caps *caps, char *why, size_t why_cap) {
  const char *op = ins->opcode;
  int dt = ins->shape.dtype;
#define NO(...) do { snprintf(why, why_cap, __VA_ARGS__); return 0; } while (0)
  const struct opinfo *o = find_op(op);
  if (!o) NO("%s: opcode '%s' is not implemented by the OpenCL plugin", ins->name, op);
  if (!shape_ok(&ins->shape, caps)) NO("%s: %s of this element type is not supported on this device%s", ins->name, op,
                                       caps->has_fp64 ? "" : " (no cl_khr_fp64)");
  for (int i = 0; i < ins->n_operands; i++)
    if (!shape_ok(&ins->operands[i]->shape, caps))
      NO("%s: an operand's element type is not supported on this device", ins->name);
  if (dt == 0 && strcmp(op, "tuple") && strcmp(op, "get-tuple-element") && strcmp(op, "parameter") && strcmp(op, "reduce") &&
      strcmp(op, "sort"))
    NO("%s: tuple-shaped %s (variadic form) is not supported", ins->name, op);
  if (dt == OCL_DTYPE_TOKEN) NO("%s: tokens are not supported", ins->name);
  if (dt && !ocl_op_supported(op, dt, caps)) NO("%s: %s is not defined for %s here", ins->name, op, ocl_dtype_name(dt));
  if (o->kind != OK_OTHER)
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype != dt) NO("%s: mixed element types", ins->name);
  if (!strcmp(op, "is-finite") && (ins->n_operands != 1 || !ocl_dtype_is_float(ins->operands[0]->shape.dtype)))
    NO("%s: is-finite needs a float operand", ins->name);
  if (!strcmp(op, "compare")) {
    const char *d = direction_of(ins);
    if (!d || (strcmp(d, "EQ") && strcmp(d, "NE") && strcmp(d, "LT") && strcmp(d, "LE") && strcmp(d, "GT") && strcmp(d, "GE")))
      NO("%s: compare without a known comparison_direction", ins->name);
    if (ins->n_operands != 2 || ins->operands[0]->shape.dtype != ins->operands[1]->shape.dtype)
      NO("%s: compare of mixed types", ins->name);
  }
  if (!strcmp(op, "dot") || !strcmp(op, "convolution")) {
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype == KILN_DTYPE_PRED) NO("%s: %s of pred operands", ins->name, op);
    const char *bg = ocl_attr(ins, "batch_group_count");
    if (bg && strcmp(bg, "1")) NO("%s: batch_group_count > 1 is not supported", ins->name);
    if (ins->n_operands != 2) NO("%s: %s needs two operands", ins->name, op);
  }
  if (!strcmp(op, "reduce-window")) {
    if (ins->n_operands != 2 || ins->n_called != 1) NO("%s: only single-input %s is supported", ins->name, op);
    if (!is_scalar_comp_ok(ins->called[0], 1, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "reduce")) {
    int n = ins->n_operands / 2;
    if (ins->n_operands % 2 || n < 1 || ins->n_called != 1) NO("%s: malformed reduce", ins->name);
    if (n > 1) {
      if (dt != 0 || ins->shape.n_elems != n) NO("%s: variadic reduce must have a tuple of %d arrays", ins->name, n);
      for (int k = 0; k < n; k++)
        if (ins->shape.elems[k].dtype == 0 || ins->shape.elems[k].dtype != ins->operands[k]->shape.dtype ||
            !same_dims(ins->shape.elems[k].rank, ins->shape.elems[k].dims, ins->shape.elems[0].rank, ins->shape.elems[0].dims) ||
            !same_dims(ins->operands[k]->shape.rank, ins->operands[k]->shape.dims, ins->operands[0]->shape.rank,
                       ins->operands[0]->shape.dims))
          NO("%s: variadic reduce with mismatched inputs", ins->name);
    } else if (dt == 0) {
      NO("%s: tuple-shaped single-input reduce", ins->name);
    }
    if (!is_scalar_comp_ok(ins->called[0], n, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "get-tuple-element")) {
    if (ins->n_operands != 1 || (strcmp(ins->operands[0]->opcode, "tuple") && strcmp(ins->operands[0]->opcode, "reduce") &&
                                 strcmp(ins->operands[0]->opcode, "sort")))
      NO("%s: get-tuple-element of something other than a tuple, a variadic reduce or a sort", ins->name);
  }
  if (!strcmp(op, "scatter")) {
    if (ins->n_operands != 3 || ins->n_called != 1 || dt == 0) NO("%s: only single-operand scatter is supported", ins->name);
    if (!ocl_dtype_is_int(ins->operands[1]->shape.dtype)) NO("%s: scatter needs integer indices", ins->name);
    if (ins->operands[2]->shape.dtype != dt || ins->operands[0]->shape.dtype != dt)
      NO("%s: scatter operand, updates and result types differ", ins->name);
    if (!is_scalar_comp_ok(ins->called[0], 1, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "select-and-scatter")) {
    if (ins->n_operands != 3 || ins->n_called != 2 || ins->operands[0]->shape.rank != ins->operands[1]->shape.rank)
      NO("%s: select-and-scatter needs operand, source, init and two computations", ins->name);
    const ocl_comp *sel = ins->called[0];
    if (!sel || sel->n_params != 2 || !sel->root || sel->root->shape.dtype != KILN_DTYPE_PRED || sel->root->shape.rank)
      NO("%s: select must take two scalars and return pred[]", ins->name);
    for (int i = 0; i < sel->n_instrs; i++) {
      const ocl_instr *x = sel->instrs[i];
      if (x->shape.dtype == 0 || x->shape.rank != 0) NO("%s: select %s: %s is not scalar", ins->name, sel->name, x->name);
      if (!ocl_instr_supported(x, caps, why, why_cap)) return 0;
    }
    if (!is_scalar_comp_ok(ins->called[1], 1, caps, why, why_cap)) return 0;
  }
  if (!strcmp(op, "sort")) {
    int n = ins->n_operands;
    int64_t d[OCL_MAX_RANK];
    const char *dims = ocl_attr(ins, "dimensions");
    if (n < 1 || ins->n_called != 1 || !dims || ocl_parse_int_list(dims, d, OCL_MAX_RANK) != 1 || d[0] < 0 ||
        d[0] >= ins->operands[0]->shape.rank)
      NO("%s: sort needs one dimension and a comparator", ins->name);
    if (n > 1 && (dt != 0 || ins->shape.n_elems != n)) NO("%s: variadic sort must have a tuple of %d arrays", ins->name, n);
    for (int k = 0; k < n; k++)
      if (!same_dims(ins->operands[k]->shape.rank, ins->operands[k]->shape.dims, ins->operands[0]->shape.rank,
                     ins->operands[0]->shape.dims) ||
          (n > 1 && ins->shape.elems[k].dtype != ins->operands[k]->shape.dtype))
        NO("%s: sort operands of different shapes", ins->name);
    const ocl_comp *cmp = ins->called[0];
    if (!cmp || cmp->n_params != 2 * n || !cmp->root || cmp->root->shape.dtype != KILN_DTYPE_PRED ||
        cmp->root->shape.rank != 0)
      NO("%s: sort comparator must take %d scalars and return pred[]", ins->name, 2 * n);
    for (int k = 0; k < 2 * n; k++)
      if (!cmp->params[k] || cmp->params[k]->shape.rank != 0 ||
          cmp->params[k]->shape.dtype != ins->operands[k / 2]->shape.dtype)
        NO("%s: sort comparator parameters do not match the operands", ins->name);
    for (int i = 0; i < cmp->n_instrs; i++) {
      const ocl_instr *x = cmp->instrs[i];
      if (x->shape.dtype == 0 || x->shape.rank != 0 || !strcmp(x->opcode, "reduce") || !strcmp(x->opcode, "sort") ||
          !strcmp(x->opcode, "fusion"))
        NO("%s: comparator %s: %s is not a scalar operation", ins->name, cmp->name, x->name);
      if (!ocl_instr_supported(x, caps, why, why_cap)) return 0;
    }
  }
  if (!strcmp(op, "gather")) {
    if (ins->n_operands != 2 || !ocl_dtype_is_int(ins->operands[1]->shape.dtype))
      NO("%s: gather needs integer start indices", ins->name);
  }
  if (!strcmp(op, "dynamic-slice") || !strcmp(op, "dynamic-update-slice")) {
    int first = !strcmp(op, "dynamic-slice") ? 1 : 2;
    if (ins->n_operands < first || ins->n_operands - first != ins->operands[0]->shape.rank)
      NO("%s: %s needs one scalar start per dimension", ins->name, op);
    for (int i = first; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.rank != 0 || !ocl_dtype_is_int(ins->operands[i]->shape.dtype))
        NO("%s: %s starts must be integer scalars", ins->name, op);
  }
  if (!strcmp(op, "fusion")) {
    const ocl_comp *fc = ins->n_called == 1 ? ins->called[0] : NULL;
    if (!fc || !fc->root || fc->root->shape.dtype == 0 || fc->n_params != ins->n_operands)
      NO("%s: only single-output fusions are supported", ins->name);
    for (int i = 0; i < fc->n_instrs; i++) {
      const ocl_instr *x = fc->instrs[i];
      const char *xo = x->opcode;
      int contraction = !strcmp(xo, "reduce") || !strcmp(xo, "reduce-window") || !strcmp(xo, "dot") ||
                        !strcmp(xo, "convolution");
      if ((contraction && x != fc->root) ||
          (!strcmp(xo, "get-tuple-element") && x->n_operands == 1 && strcmp(x->operands[0]->opcode, "tuple")))
        NO("%s: %s inside a fusion is supported only as the fusion's root", ins->name, xo);
      if (!strcmp(xo, "constant") && ocl_shape_elems(&x->shape) != 1)
        NO("%s: array constant inside a fusion", ins->name);
      if (!strcmp(xo, "tuple") && x != fc->root) continue;
      if (!ocl_instr_supported(x, caps, why, why_cap)) return 0;
    }
    if (!same_dims(fc->root->shape.rank, fc->root->shape.dims, ins->shape.rank, ins->shape.dims) ||
        fc->root->shape.dtype != dt)
      NO("%s: fusion result does not match its computation", ins->name);
  }
  if (!strcmp(op, "bitcast-convert")) {
    if (ins->n_operands != 1 || type_mask(ins->operands[0]->shape.dtype) == M_PRED ||
        ocl_dtype_bits(ins->operands[0]->shape.dtype) != ocl_dtype_bits(dt))
      NO("%s: bitcast-convert between different widths is not supported", ins->name);
  }
  if (!strcmp(op, "reduce-precision")) {
    const char *e = ocl_attr(ins, "exponent_bits"), *m = ocl_attr(ins, "mantissa_bits");
    if (!e || !m || atoi(e) < 1 || atoi(m) < 0 || ins->n_operands != 1 || ins->operands[0]->shape.dtype != dt)
      NO("%s: reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0", ins->name);
  }
  if (!strcmp(op, "bitcast") && (ins->n_operands != 1 || ins->operands[0]->shape.dtype != dt))
    NO("%s: bitcast changing the element type", ins->name);
  if (!strcmp(op, "tuple"))
    for (int i = 0; i < ins->n_operands; i++)
      if (ins->operands[i]->shape.dtype == 0) NO("%s: nested tuples are not supported", ins->name);
  return 1;
#undef NO
}

/* A reducer of n accumulators: 2n scalar parameters, scalar elementwise instructions,
 * the root a scalar (n = 1) or a tuple of n scalars. */
static int is_scalar_comp_ok(const ocl_comp *comp, int n, const ocl_caps *caps, char *why, size_t cap) {
  if (!comp || comp->n_params != 2 * n || !comp->root) {
    snprintf(why, cap, "reducer computation must take %d scalars", 2 * n);
    return 0;
  }
  for (int k = 0; k < 2 * n; k++)
    if (!comp->params[k] || comp->params[k]->shape.dtype != comp->params[k % n]->shape.dtype) {
      snprintf(why, cap, "reducer %s: accumulator and value types differ", comp->name);
      return 0;
    }
  if (n > 1) {
    const ocl_instr *r = comp->root;
    if (strcmp(r->opcode, "tuple") || r->n_operands != n) {
      snprintf(why, cap, "reducer %s: root must be a tuple of %d scalars", comp->name, n);
      return 0;
    }
    for (int k = 0; k < n; k++)
      if (r->operands[k]->shape.dtype != comp->params[k]->shape.dtype || r->operands[k]->shape.rank != 0 ||
          !strcmp(r->operands[k]->opcode, "tuple")) {
        snprintf(why, cap, "reducer %s: result %d does not match its accumulator", comp->name, k);
        return 0;
      }
  }
  for (int i = 0; i < comp->n_instrs; i++) {
    const ocl_instr *x = comp->instrs[i];
    if (n > 1 && x == comp->root) continue;
    if (x->shape.dtype == 0 || x->shape.rank != 0) {
      snprintf(why, cap, "reducer %s: %s is not scalar", comp->name, x->name);
      return 0;
    }
    const char *op = x->opcode;
    if (!strcmp(op, "reduce") || !strcmp(op, "reduce-window") || !strcmp(op, "dot") || !strcmp(op, "convolution") ||
        !strcmp(op, "tuple") || !strcmp(op, "get-tuple-element") || !strcmp(op, "iota")) {
      snprintf(why, cap, "reducer %s: %s is not allowed in a reducer", comp->name, op);
      return 0;
    }
    if (!ocl_instr_supported(x, caps, why, cap)) return 0;
  }
  if (n == 1 && comp->root->shape.dtype != comp->params[0]->shape.dtype) {
    snprintf(why, cap, "reducer %s: result type differs from the accumulator", comp->name);
    return 0;
  }
  return 1;
}


int op_kind(const char *opcode) {
  const struct opinfo *o = find_op(opcode);
  return o ? (int)o->kind : OP_UNKNOWN;
}

/* ------------------------------------------------------------------ shapes ----- */

/* Shape consistency the kernels rely on to stay inside their buffers (kiln verifies
 * modules before sending them, but compile must not turn a malformed one into device
 * reads out of bounds). Returns 0 and writes why when something does not add up. */
int ocl_instr_shapes_ok(const ocl_instr *ins, char *why, size_t why_cap) {
#define BAD(...) do { snprintf(why, why_cap, __VA_ARGS__); return 0; } while (0)
  const char *op = ins->opcode;
  const ocl_shape *rs = &ins->shape;
  int kind = op_kind(op);
  if (kind == OP_UNARY || kind == OP_BINARY || !strcmp(op, "select") || !strcmp(op, "clamp") ||
      !strcmp(op, "compare") || !strcmp(op, "convert") || !strcmp(op, "is-finite") || !strcmp(op, "reduce-precision") ||
      !strcmp(op, "bitcast-convert")) {
    for (int i = 0; i < ins->n_operands; i++) {
      const ocl_shape *s = &ins->operands[i]->shape;
      if (s->rank != 0 && !same_dims(s->rank, s->dims, rs->rank, rs->dims))
        BAD("%s: operand %d's shape does not match the result", ins->name, i);
    }
    return 1;
  }
  if (ins->n_operands < 1) return 1;
  const ocl_shape *x = &ins->operands[0]->shape;
  int64_t v[OCL_MAX_RANK];
  if (!strcmp(op, "broadcast")) {
    const char *a = ocl_attr(ins, "dimensions");
    int n = ocl_parse_int_list(a ? a : "{}", v, OCL_MAX_RANK);
    if (n != x->rank) BAD("%s: broadcast dimensions do not match the operand", ins->name);
    for (int k = 0; k < n; k++)
      if (v[k] < 0 || v[k] >= rs->rank || rs->dims[v[k]] != x->dims[k]) BAD("%s: bad broadcast dimensions", ins->name);
  } else if (!strcmp(op, "transpose")) {
    const char *a = ocl_attr(ins, "dimensions");
    int n = ocl_parse_int_list(a ? a : "{}", v, OCL_MAX_RANK);
    if (n != rs->rank || x->rank != n) BAD("%s: bad transpose", ins->name);
    for (int k = 0; k < n; k++)
      if (v[k] < 0 || v[k] >= n || x->dims[v[k]] != rs->dims[k]) BAD("%s: bad transpose permutation", ins->name);
  } else if (!strcmp(op, "reshape") || !strcmp(op, "bitcast") || !strcmp(op, "copy")) {
    if (ocl_shape_elems(x) != ocl_shape_elems(rs)) BAD("%s: element counts differ", ins->name);
  } else if (!strcmp(op, "slice")) {
    int64_t st[OCL_MAX_RANK], li[OCL_MAX_RANK], sd[OCL_MAX_RANK];
    const char *a = ocl_attr(ins, "slice");
    int n = a ? ocl_parse_slice(a, st, li, sd, OCL_MAX_RANK) : -1;
    if (n != rs->rank || x->rank != n) BAD("%s: bad slice", ins->name);
    for (int k = 0; k < n; k++)
      if (st[k] < 0 || sd[k] < 1 || li[k] > x->dims[k] || st[k] > li[k] || rs->dims[k] != (li[k] - st[k] + sd[k] - 1) / sd[k])
        BAD("%s: slice out of the operand's bounds", ins->name);
  } else if (!strcmp(op, "pad")) {
    ocl_pad_dim pd[OCL_MAX_RANK];
    const char *a = ocl_attr(ins, "padding");
    int n = a ? ocl_parse_padding(a, pd, OCL_MAX_RANK) : -1;
    if (n != rs->rank || x->rank != n || ins->n_operands != 2 || ins->operands[1]->shape.rank != 0)
      BAD("%s: bad pad", ins->name);
    for (int k = 0; k < n; k++) {
      int64_t want = pd[k].lo + pd[k].hi + (x->dims[k] ? x->dims[k] + (x->dims[k] - 1) * pd[k].interior : 0);
      if (pd[k].interior < 0 || want != rs->dims[k]) BAD("%s: padding does not give the result shape", ins->name);
    }
  } else if (!strcmp(op, "concatenate")) {
    int d = (int)ins->int_payload;
    if (d < 0 || d >= rs->rank) BAD("%s: bad concatenate dimension", ins->name);
    int64_t sum = 0;
    for (int i = 0; i < ins->n_operands; i++) {
      const ocl_shape *s = &ins->operands[i]->shape;
      if (s->rank != rs->rank) BAD("%s: concatenate operands of different ranks", ins->name);
      for (int k = 0; k < rs->rank; k++)
        if (k != d && s->dims[k] != rs->dims[k]) BAD("%s: concatenate operands do not line up", ins->name);
      sum += s->dims[d];
    }
    if (sum != rs->dims[d]) BAD("%s: concatenate sizes do not add up", ins->name);
  } else if (!strcmp(op, "reverse")) {
    if (!same_dims(x->rank, x->dims, rs->rank, rs->dims)) BAD("%s: reverse changes the shape", ins->name);
  } else if (!strcmp(op, "dynamic-slice")) {
    const char *a = ocl_attr(ins, "dynamic_slice_sizes");
    int n = a ? ocl_parse_int_list(a, v, OCL_MAX_RANK) : -1;
    if (n != x->rank) BAD("%s: bad dynamic_slice_sizes", ins->name);
    for (int k = 0; k < n; k++)
      if (v[k] < 0 || v[k] > x->dims[k] || v[k] != rs->dims[k]) BAD("%s: dynamic slice larger than its operand", ins->name);
  } else if (!strcmp(op, "dynamic-update-slice")) {
    const ocl_shape *u = &ins->operands[ins->n_operands > 1 ? 1 : 0]->shape;
    if (!same_dims(x->rank, x->dims, rs->rank, rs->dims) || u->rank != x->rank) BAD("%s: bad dynamic-update-slice", ins->name);
    for (int k = 0; k < u->rank; k++)
      if (u->dims[k] > x->dims[k]) BAD("%s: update larger than its operand", ins->name);
  } else if (!strcmp(op, "gather") && ins->n_operands == 2) {
    const char *a = ocl_attr(ins, "slice_sizes");
    int n = a ? ocl_parse_int_list(a, v, OCL_MAX_RANK) : -1;
    if (n != x->rank) BAD("%s: bad slice_sizes", ins->name);
    for (int k = 0; k < n; k++)
      if (v[k] < 0 || v[k] > x->dims[k]) BAD("%s: gather slice larger than its operand", ins->name);
    /* Offset dims have the slice's sizes, batch dims the indices' sizes. */
    const ocl_shape *ix = &ins->operands[1]->shape;
    int64_t od[OCL_MAX_RANK], cd[OCL_MAX_RANK], ob[OCL_MAX_RANK], sb[OCL_MAX_RANK];
    int nod = int_attr_list(ins, "offset_dims", od), ncd = int_attr_list(ins, "collapsed_slice_dims", cd);
    int nob = int_attr_list(ins, "operand_batching_dims", ob), nsb = int_attr_list(ins, "start_indices_batching_dims", sb);
    const char *iv = ocl_attr(ins, "index_vector_dim");
    int ivd = iv ? atoi(iv) : ix->rank;
    if (nod < 0 || ncd < 0 || nob < 0 || nsb != nob || ivd < 0 || ivd > ix->rank) BAD("%s: bad gather dims", ins->name);
    for (int k = 0; k < nod; k++)
      if (od[k] < 0 || od[k] >= rs->rank || (k && od[k] <= od[k - 1])) BAD("%s: bad offset_dims", ins->name);
    for (int d = 0, k = 0; d < x->rank; d++) {
      if (in_list(cd, ncd, d) >= 0 || in_list(ob, nob, d) >= 0) {
        if (v[d] != 1) BAD("%s: collapsed or batching dims must have slice size 1", ins->name);
        continue;
      }
      if (k >= nod || rs->dims[od[k]] != v[d]) BAD("%s: offset dims do not match slice_sizes", ins->name);
      k++;
    }
    for (int d = 0, b = 0; d < rs->rank; d++) {
      if (in_list(od, nod, d) >= 0) continue;
      while (b == ivd) b++;
      if (b >= ix->rank || rs->dims[d] != ix->dims[b]) BAD("%s: batch dims do not match the indices", ins->name);
      b++;
    }
    for (int j = 0; j < nob; j++)
      if (ob[j] < 0 || ob[j] >= x->rank || sb[j] < 0 || sb[j] >= ix->rank || sb[j] == ivd ||
          x->dims[ob[j]] != ix->dims[sb[j]])
        BAD("%s: batching dims do not pair up", ins->name);
  } else if (!strcmp(op, "scatter") && ins->n_operands == 3) {
    const ocl_shape *ix = &ins->operands[1]->shape, *up = &ins->operands[2]->shape;
    if (!same_dims(x->rank, x->dims, rs->rank, rs->dims)) BAD("%s: scatter result differs from its operand", ins->name);
    int64_t uwd[OCL_MAX_RANK], iwd[OCL_MAX_RANK], ib[OCL_MAX_RANK], sb[OCL_MAX_RANK];
    int nuw = int_attr_list(ins, "update_window_dims", uwd), niw = int_attr_list(ins, "inserted_window_dims", iwd);
    int nib = int_attr_list(ins, "input_batching_dims", ib), nsb = int_attr_list(ins, "scatter_indices_batching_dims", sb);
    const char *iv = ocl_attr(ins, "index_vector_dim");
    int ivd = iv ? atoi(iv) : ix->rank;
    if (nuw < 0 || niw < 0 || nib < 0 || nsb != nib || ivd < 0 || ivd > ix->rank) BAD("%s: bad scatter dims", ins->name);
    for (int k = 0; k < nuw; k++)
      if (uwd[k] < 0 || uwd[k] >= up->rank || (k && uwd[k] <= uwd[k - 1])) BAD("%s: bad update_window_dims", ins->name);
    int ns = ix->rank - (ivd < ix->rank ? 1 : 0);
    if (up->rank != ns + nuw || x->rank != nuw + niw + nib) BAD("%s: scatter ranks do not add up", ins->name);
    for (int d = 0, b = 0; d < up->rank; d++) {
      if (in_list(uwd, nuw, d) >= 0) continue;
      while (b == ivd) b++;
      if (b >= ix->rank || up->dims[d] != ix->dims[b]) BAD("%s: update dims do not match the indices", ins->name);
      b++;
    }
    for (int j = 0; j < nib; j++)
      if (ib[j] < 0 || ib[j] >= x->rank || sb[j] < 0 || sb[j] >= ix->rank || sb[j] == ivd ||
          x->dims[ib[j]] != ix->dims[sb[j]])
        BAD("%s: batching dims do not pair up", ins->name);
  } else if (!strcmp(op, "reduce") && ins->n_operands >= 2) {
    const char *a = ocl_attr(ins, "dimensions");
    int n = a ? ocl_parse_int_list(a, v, OCL_MAX_RANK) : -1;
    const ocl_shape *r0 = rs->dtype == 0 ? (rs->n_elems > 0 ? &rs->elems[0] : NULL) : rs;
    if (n < 0 || !r0 || r0->rank != x->rank - n) BAD("%s: bad reduce dimensions", ins->name);
    for (int d = 0, o = 0; d < x->rank; d++) {
      if (in_list(v, n, d) >= 0) continue;
      if (r0->dims[o++] != x->dims[d]) BAD("%s: reduce result does not match the kept dimensions", ins->name);
    }
    for (int i = 0; i < ins->n_operands / 2; i++)
      if (!same_dims(ins->operands[i]->shape.rank, ins->operands[i]->shape.dims, x->rank, x->dims) ||
          ins->operands[ins->n_operands / 2 + i]->shape.rank != 0)
        BAD("%s: reduce inputs of different shapes", ins->name);
  } else if (!strcmp(op, "dot") && ins->n_operands == 2) {
    const ocl_shape *y = &ins->operands[1]->shape;
    int64_t a1[OCL_MAX_RANK], b1[OCL_MAX_RANK];
    const char *keys[2][2] = {{"lhs_contracting_dims", "rhs_contracting_dims"}, {"lhs_batch_dims", "rhs_batch_dims"}};
    for (int t = 0; t < 2; t++) {
      const char *ka = ocl_attr(ins, keys[t][0]), *kb = ocl_attr(ins, keys[t][1]);
      int na = ka ? ocl_parse_int_list(ka, a1, OCL_MAX_RANK) : 0, nb = kb ? ocl_parse_int_list(kb, b1, OCL_MAX_RANK) : 0;
      if (na != nb || na < 0) BAD("%s: dot dimension lists differ in length", ins->name);
      for (int k = 0; k < na; k++)
        if (a1[k] < 0 || a1[k] >= x->rank || b1[k] < 0 || b1[k] >= y->rank || x->dims[a1[k]] != y->dims[b1[k]])
          BAD("%s: dot dimensions do not match", ins->name);
    }
    /* Result: batch dims, then lhs free dims, then rhs free dims. */
    int64_t lc[OCL_MAX_RANK], rc[OCL_MAX_RANK], lb[OCL_MAX_RANK], rb[OCL_MAX_RANK];
    int nlc = int_attr_list(ins, "lhs_contracting_dims", lc), nrc = int_attr_list(ins, "rhs_contracting_dims", rc);
    int nlb = int_attr_list(ins, "lhs_batch_dims", lb), nrb = int_attr_list(ins, "rhs_batch_dims", rb);
    (void)nrc;
    (void)nrb;
    int o = 0;
    if (rs->rank != x->rank + y->rank - nlb - nlc - nlc) BAD("%s: dot result rank", ins->name);
    for (int k = 0; k < nlb; k++)
      if (rs->dims[o++] != x->dims[lb[k]]) BAD("%s: dot result batch dims", ins->name);
    for (int d = 0; d < x->rank; d++)
      if (in_list(lb, nlb, d) < 0 && in_list(lc, nlc, d) < 0 && rs->dims[o++] != x->dims[d])
        BAD("%s: dot result lhs dims", ins->name);
    for (int d = 0; d < y->rank; d++)
      if (in_list(rb, nlb, d) < 0 && in_list(rc, nlc, d) < 0 && rs->dims[o++] != y->dims[d])
        BAD("%s: dot result rhs dims", ins->name);
  } else if (!strcmp(op, "convolution") && ins->n_operands == 2) {
    ocl_conv_dnums dn;
    ocl_window_dim w[OCL_MAX_RANK];
    const char *a = ocl_attr(ins, "dim_labels"), *wa = ocl_attr(ins, "window");
    const ocl_shape *k = &ins->operands[1]->shape;
    if (!a || ocl_parse_conv_dnums(a, &dn) != 0 || x->rank != dn.n_spatial + 2 || k->rank != dn.n_spatial + 2 ||
        rs->rank != dn.n_spatial + 2)
      BAD("%s: bad dim_labels", ins->name);
    int nw = wa ? ocl_parse_window(wa, w, OCL_MAX_RANK) : 0;
    if (nw != dn.n_spatial) BAD("%s: window does not match the spatial dimensions", ins->name);
    for (int d = 0; d < nw; d++)
      if (w[d].size != k->dims[dn.k_spatial[d]]) BAD("%s: window size differs from the kernel's", ins->name);
    if (k->dims[dn.k_out_feature] != rs->dims[dn.out_feature] || x->dims[dn.in_batch] != rs->dims[dn.out_batch])
      BAD("%s: convolution batch / output features do not match", ins->name);
  }
  return 1;
#undef BAD
}
