/* ONNX elementwise ops: arithmetic and comparisons with multidirectional broadcasting,
 * the activation zoo, math functions, logic, Cast/CastLike, Clip, Where.
 *
 * Most ops are one HLO opcode, or a short formula of them, applied after numpy
 * broadcasting (ops_lib); QuantizeLinear/DequantizeLinear (per-tensor and per-axis) live
 * here too, being elementwise affine maps. Functions HLO lacks (asin, sinh, softplus…) are written as
 * the numerically sensible formula rather than the textbook one (expm1/log1p where
 * cancellation would bite), since ONNX Runtime computes them with libm. Simple
 * one-opcode ops share one lowering that looks the opcode up by op name. */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_lib.h"
#include "ops/ops_onnx_string.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* Scalar constant shaped like x. */
static kiln_status like(op_lower_ctx *ctx, hlo_instr *x, double v, hlo_instr **out) {
  return oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, v, out);
}

/* The narrow floats (f8*, f4e2m1fn) are storage types (hlo/types.h): ops that look at
 * their values widen them to f32 first, which keeps every value, NaN and inf included. */
static kiln_status widen_narrow(op_lower_ctx *ctx, hlo_instr *x, hlo_instr **out) {
  *out = x;
  if (hlo_type_is_narrow(x->shape.type)) L(hlo_build_convert(ctx->comp, x, HLO_F32, out));
  return NULL;
}

static kiln_status need_float(op_lower_ctx *ctx, hlo_instr *x) {
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs a floating-point input, got %s",
                    hlo_type_name(x->shape.type));
  return NULL;
}

/* ------------------------------------------------------------- simple unary ---- */

typedef struct unary_entry {
  const char *name;
  hlo_opcode op;
} unary_entry;

static const unary_entry unary_ops[] = {
    {"Abs", HLO_OP_ABS},         {"Neg", HLO_OP_NEGATE},     {"Exp", HLO_OP_EXP},
    {"Log", HLO_OP_LOG},         {"Sqrt", HLO_OP_SQRT},      {"Floor", HLO_OP_FLOOR},
    {"Ceil", HLO_OP_CEIL},       {"Round", HLO_OP_ROUND_NEAREST_EVEN}, {"Sign", HLO_OP_SIGN},
    {"Sin", HLO_OP_SINE},        {"Cos", HLO_OP_COSINE},     {"Tan", HLO_OP_TAN},
    {"Tanh", HLO_OP_TANH},       {"Erf", HLO_OP_ERF},        {"Sigmoid", HLO_OP_LOGISTIC},
    {"Not", HLO_OP_NOT},         {"BitwiseNot", HLO_OP_NOT},
};

static kiln_status lower_unary(op_lower_ctx *ctx) {
  const char *base = graph_node_op_base(ctx->node);
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++) {
    if (strcmp(unary_ops[i].name, base) != 0) continue;
    hlo_opcode op = unary_ops[i].op;
    /* Integer forms where HLO's opcode would not apply. */
    if (op == HLO_OP_ABS && (hlo_type_is_unsigned_int(x->shape.type) || x->shape.type == HLO_PRED))
      return onnx_set_output(ctx, 0, x);
    if ((op == HLO_OP_FLOOR || op == HLO_OP_CEIL || op == HLO_OP_ROUND_NEAREST_EVEN) &&
        !hlo_type_is_float(x->shape.type))
      return onnx_set_output(ctx, 0, x);
    if (op == HLO_OP_SIGN && hlo_type_is_unsigned_int(x->shape.type)) {
      hlo_instr *zero, *nz;
      L(like(ctx, x, 0, &zero));
      L(hlo_build_compare(ctx->comp, HLO_DIR_NE, x, zero, &nz));
      L(hlo_build_convert(ctx->comp, nz, x->shape.type, &r));
      return onnx_set_output(ctx, 0, r);
    }
    L(hlo_build_unary(ctx->comp, op, x, &r));
    return onnx_set_output(ctx, 0, r);
  }
  return op_error(ctx->node, KILN_INTERNAL, "no unary opcode for %s", base);
}

/* ------------------------------------------------------------ simple binary ---- */

typedef struct binary_entry {
  const char *name;
  hlo_opcode op;
} binary_entry;

static const binary_entry binary_ops[] = {
    {"Add", HLO_OP_ADD},        {"Sub", HLO_OP_SUBTRACT},  {"Mul", HLO_OP_MULTIPLY},
    {"Div", HLO_OP_DIVIDE},     {"And", HLO_OP_AND},       {"Or", HLO_OP_OR},
    {"Xor", HLO_OP_XOR},        {"BitwiseAnd", HLO_OP_AND}, {"BitwiseOr", HLO_OP_OR},
    {"BitwiseXor", HLO_OP_XOR},
};

/* Before opset 7 the binary ops broadcast only when attribute broadcast=1, and then B's
 * dims line up with A's starting at attribute axis (by default at the trailing end, as
 * numpy would): B becomes A's rank with ones around its dims. Without broadcast=1 the
 * shapes must already agree, which the numpy-style path checks as well. */
static kiln_status legacy_broadcast(op_lower_ctx *ctx, hlo_instr *a, hlo_instr **b) {
  if (!(ctx->opset > 0 && ctx->opset < 7) || graph_node_attr_int_or(ctx->node, "broadcast", 0) == 0) return NULL;
  int ra = a->shape.rank, rb = (*b)->shape.rank;
  if (!graph_node_attr(ctx->node, "axis")) return NULL;
  int64_t axis = graph_node_attr_int_or(ctx->node, "axis", 0);
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "legacy broadcast: axis %lld does not fit a rank-%d B into rank %d",
                    (long long)graph_node_attr_int_or(ctx->node, "axis", 0), rb, ra);
  int64_t dims[HLO_MAX_RANK];
  for (int i = 0; i < ra; i++) dims[i] = 1;
  for (int i = 0; i < rb; i++) dims[axis + i] = (*b)->shape.dims[i];
  L(oplib_reshape(ctx->comp, *b, ra, dims, b));
  return NULL;
}

static kiln_status lower_binary(op_lower_ctx *ctx) {
  const char *base = graph_node_op_base(ctx->node);
  hlo_instr *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  TRY(legacy_broadcast(ctx, a, &b));
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) {
    if (strcmp(binary_ops[i].name, base) != 0) continue;
    L(oplib_binary(ctx->comp, binary_ops[i].op, a, b, &r));
    return onnx_set_output(ctx, 0, r);
  }
  return op_error(ctx->node, KILN_INTERNAL, "no binary opcode for %s", base);
}

typedef struct compare_entry {
  const char *name;
  hlo_direction dir;
} compare_entry;

static const compare_entry compare_ops[] = {
    {"Equal", HLO_DIR_EQ},       {"Less", HLO_DIR_LT},          {"Greater", HLO_DIR_GT},
    {"LessOrEqual", HLO_DIR_LE}, {"GreaterOrEqual", HLO_DIR_GE},
};

static kiln_status lower_compare(op_lower_ctx *ctx) {
  const char *base = graph_node_op_base(ctx->node);
  hlo_instr *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  TRY(legacy_broadcast(ctx, a, &b));
  for (size_t i = 0; i < sizeof compare_ops / sizeof compare_ops[0]; i++) {
    if (strcmp(compare_ops[i].name, base) != 0) continue;
    L(oplib_compare(ctx->comp, compare_ops[i].dir, a, b, &r));
    return onnx_set_output(ctx, 0, r);
  }
  return op_error(ctx->node, KILN_INTERNAL, "no comparison for %s", base);
}

static kiln_status lower_pow(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  TRY(legacy_broadcast(ctx, a, &b));
  hlo_type ta = a->shape.type, tb = b->shape.type;
  if (ta == tb || hlo_type_is_float(ta)) {
    L(oplib_convert(ctx->comp, b, ta, &b));
    L(oplib_binary(ctx->comp, HLO_OP_POWER, a, b, &r));
  } else {
    /* Integer base, float exponent: as pow() in double, truncated to the base type. */
    L(hlo_build_convert(ctx->comp, a, HLO_F64, &a));
    L(oplib_convert(ctx->comp, b, HLO_F64, &b));
    L(oplib_binary(ctx->comp, HLO_OP_POWER, a, b, &r));
    L(hlo_build_convert(ctx->comp, r, ta, &r));
  }
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_mod(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  int64_t fmod_attr = graph_node_attr_int_or(ctx->node, "fmod", 0);
  hlo_instr *xs[2] = {a, b};
  L(oplib_broadcast_all(ctx->comp, 2, xs));
  a = xs[0];
  b = xs[1];
  L(hlo_build_binary(ctx->comp, HLO_OP_REMAINDER, a, b, &r));
  if (!fmod_attr && !hlo_type_is_unsigned_int(r->shape.type)) {
    /* Python-style: the result takes the divisor's sign. */
    hlo_instr *zero, *r_nz, *r_neg, *b_neg, *differ, *fix, *adj;
    L(like(ctx, r, 0, &zero));
    L(hlo_build_compare(ctx->comp, HLO_DIR_NE, r, zero, &r_nz));
    L(hlo_build_compare(ctx->comp, HLO_DIR_LT, r, zero, &r_neg));
    L(hlo_build_compare(ctx->comp, HLO_DIR_LT, b, zero, &b_neg));
    L(hlo_build_compare(ctx->comp, HLO_DIR_NE, r_neg, b_neg, &differ));
    L(hlo_build_binary(ctx->comp, HLO_OP_AND, r_nz, differ, &fix));
    L(hlo_build_binary(ctx->comp, HLO_OP_ADD, r, b, &adj));
    L(hlo_build_select(ctx->comp, fix, adj, r, &r));
  }
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_bitshift(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &a));
  TRY(onnx_require_input(ctx, 1, &b));
  const char *dir = onnx_attr_string(ctx->node, "direction", "");
  hlo_opcode op;
  if (strcmp(dir, "LEFT") == 0)
    op = HLO_OP_SHIFT_LEFT;
  else if (strcmp(dir, "RIGHT") == 0) /* BitShift-28: signed types shift arithmetically */
    op = hlo_type_is_signed_int(a->shape.type) ? HLO_OP_SHIFT_RIGHT_ARITHMETIC : HLO_OP_SHIFT_RIGHT_LOGICAL;
  else
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "direction must be LEFT or RIGHT, got \"%s\"", dir);
  L(oplib_binary(ctx->comp, op, a, b, &r));
  return onnx_set_output(ctx, 0, r);
}

/* Sum, Mean, Max, Min: variadic, broadcasting. */
static kiln_status lower_variadic(op_lower_ctx *ctx) {
  const char *base = graph_node_op_base(ctx->node);
  hlo_opcode op = strcmp(base, "Max") == 0 ? HLO_OP_MAXIMUM : strcmp(base, "Min") == 0 ? HLO_OP_MINIMUM : HLO_OP_ADD;
  if (ctx->n_inputs < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs at least one input");
  hlo_instr *r;
  TRY(onnx_require_input(ctx, 0, &r));
  for (int i = 1; i < ctx->n_inputs; i++) {
    hlo_instr *x;
    TRY(onnx_require_input(ctx, i, &x));
    L(oplib_binary(ctx->comp, op, r, x, &r));
  }
  if (strcmp(base, "Mean") == 0 && ctx->n_inputs > 1)
    L(oplib_binary_scalar(ctx->comp, HLO_OP_DIVIDE, r, (double)ctx->n_inputs, &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_prelu(op_lower_ctx *ctx) {
  hlo_instr *x, *slope, *zero, *neg, *scaled, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &slope));
  /* Before opset 7 a 1-D slope of C values is per channel (dim 1), not numpy-aligned. */
  if (ctx->opset > 0 && ctx->opset < 7 && slope->shape.rank == 1 && x->shape.rank > 2 &&
      slope->shape.dims[0] == x->shape.dims[1] && slope->shape.dims[0] != 1) {
    int64_t dims[HLO_MAX_RANK];
    dims[0] = slope->shape.dims[0];
    for (int i = 1; i < x->shape.rank - 1; i++) dims[i] = 1;
    L(oplib_reshape(ctx->comp, slope, x->shape.rank - 1, dims, &slope));
  }
  L(oplib_broadcast_to(ctx->comp, slope, x->shape.rank, x->shape.dims, &slope));
  L(like(ctx, x, 0, &zero));
  L(hlo_build_compare(ctx->comp, HLO_DIR_LT, x, zero, &neg));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, slope, &scaled));
  L(hlo_build_select(ctx->comp, neg, scaled, x, &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_where(op_lower_ctx *ctx) {
  hlo_instr *p, *a, *b, *r;
  TRY(onnx_require_input(ctx, 0, &p));
  TRY(onnx_require_input(ctx, 1, &a));
  TRY(onnx_require_input(ctx, 2, &b));
  L(oplib_select(ctx->comp, p, a, b, &r));
  return onnx_set_output(ctx, 0, r);
}

/* ------------------------------------------------------------- activations ---- */

/* Small formula kit: every helper appends to ctx->comp and shares x's shape. */
typedef struct fx {
  op_lower_ctx *ctx;
  hlo_computation *c;
} fx;

static kiln_status k_(fx *f, hlo_instr *like_x, double v, hlo_instr **out) {
  return oplib_full_like(f->c, like_x, HLO_TYPE_COUNT, v, out);
}
static kiln_status b_(fx *f, hlo_opcode op, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  return hlo_build_binary(f->c, op, a, b, out);
}
static kiln_status bk_(fx *f, hlo_opcode op, hlo_instr *a, double v, hlo_instr **out) {
  return oplib_binary_scalar(f->c, op, a, v, out);
}
static kiln_status u_(fx *f, hlo_opcode op, hlo_instr *a, hlo_instr **out) { return hlo_build_unary(f->c, op, a, out); }

/* softplus(x) = max(x, 0) + log1p(exp(-|x|)), exact for large |x|. */
static kiln_status softplus(fx *f, hlo_instr *x, hlo_instr **out) {
  hlo_instr *pos, *ax, *e, *l;
  TRY(bk_(f, HLO_OP_MAXIMUM, x, 0, &pos));
  TRY(u_(f, HLO_OP_ABS, x, &ax));
  TRY(u_(f, HLO_OP_NEGATE, ax, &ax));
  TRY(u_(f, HLO_OP_EXP, ax, &e));
  TRY(u_(f, HLO_OP_LOG1P, e, &l));
  return b_(f, HLO_OP_ADD, pos, l, out);
}

static kiln_status activation(fx *f, const char *base, hlo_instr *x, hlo_instr **out) {
  const graph_node *n = f->ctx->node;
  hlo_instr *t1, *t2, *t3, *p;
  if (strcmp(base, "Relu") == 0) return bk_(f, HLO_OP_MAXIMUM, x, 0, out);
  if (strcmp(base, "LeakyRelu") == 0) {
    double alpha = graph_node_attr_float_or(n, "alpha", 0.01f);
    TRY(bk_(f, HLO_OP_MULTIPLY, x, alpha, &t1));
    TRY(k_(f, x, 0, &t2));
    TRY(hlo_build_compare(f->c, HLO_DIR_LT, x, t2, &p));
    return hlo_build_select(f->c, p, t1, x, out);
  }
  if (strcmp(base, "Elu") == 0 || strcmp(base, "Selu") == 0) {
    bool selu = base[0] == 'S';
    double alpha = graph_node_attr_float_or(n, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
    TRY(u_(f, HLO_OP_EXPM1, x, &t1));
    TRY(bk_(f, HLO_OP_MULTIPLY, t1, alpha, &t1));
    TRY(k_(f, x, 0, &t2));
    TRY(hlo_build_compare(f->c, selu ? HLO_DIR_GT : HLO_DIR_GE, x, t2, &p));
    TRY(hlo_build_select(f->c, p, x, t1, &t3));
    if (!selu) {
      *out = t3;
      return NULL;
    }
    double gamma = graph_node_attr_float_or(n, "gamma", 1.05070102214813232421875f);
    return bk_(f, HLO_OP_MULTIPLY, t3, gamma, out);
  }
  if (strcmp(base, "Celu") == 0) {
    double alpha = graph_node_attr_float_or(n, "alpha", 1.0f);
    TRY(bk_(f, HLO_OP_DIVIDE, x, alpha, &t1));
    TRY(u_(f, HLO_OP_EXPM1, t1, &t1));
    TRY(bk_(f, HLO_OP_MULTIPLY, t1, alpha, &t1));
    TRY(bk_(f, HLO_OP_MINIMUM, t1, 0, &t1));
    TRY(bk_(f, HLO_OP_MAXIMUM, x, 0, &t2));
    return b_(f, HLO_OP_ADD, t2, t1, out);
  }
  if (strcmp(base, "HardSigmoid") == 0 || strcmp(base, "HardSwish") == 0) {
    bool swish = base[4] == 'S' && base[5] == 'w';
    double alpha = swish ? 1.0 / 6.0 : graph_node_attr_float_or(n, "alpha", 0.2f);
    double beta = swish ? 0.5 : graph_node_attr_float_or(n, "beta", 0.5f);
    TRY(bk_(f, HLO_OP_MULTIPLY, x, alpha, &t1));
    TRY(bk_(f, HLO_OP_ADD, t1, beta, &t1));
    TRY(bk_(f, HLO_OP_MINIMUM, t1, 1, &t1));
    TRY(bk_(f, HLO_OP_MAXIMUM, t1, 0, &t1));
    if (!swish) {
      *out = t1;
      return NULL;
    }
    return b_(f, HLO_OP_MULTIPLY, x, t1, out);
  }
  if (strcmp(base, "Softplus") == 0) return softplus(f, x, out);
  if (strcmp(base, "Softsign") == 0) {
    TRY(u_(f, HLO_OP_ABS, x, &t1));
    TRY(bk_(f, HLO_OP_ADD, t1, 1, &t1));
    return b_(f, HLO_OP_DIVIDE, x, t1, out);
  }
  if (strcmp(base, "Mish") == 0) {
    TRY(softplus(f, x, &t1));
    TRY(u_(f, HLO_OP_TANH, t1, &t1));
    return b_(f, HLO_OP_MULTIPLY, x, t1, out);
  }
  if (strcmp(base, "Gelu") == 0) {
    const char *approx = onnx_attr_string(n, "approximate", "none");
    if (strcmp(approx, "tanh") == 0) {
      /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
      TRY(b_(f, HLO_OP_MULTIPLY, x, x, &t1));
      TRY(b_(f, HLO_OP_MULTIPLY, t1, x, &t1));
      TRY(bk_(f, HLO_OP_MULTIPLY, t1, 0.044715, &t1));
      TRY(b_(f, HLO_OP_ADD, x, t1, &t1));
      TRY(bk_(f, HLO_OP_MULTIPLY, t1, sqrt(2.0 / M_PI), &t1));
      TRY(u_(f, HLO_OP_TANH, t1, &t1));
    } else if (strcmp(approx, "none") == 0) {
      TRY(bk_(f, HLO_OP_MULTIPLY, x, 1.0 / sqrt(2.0), &t1));
      TRY(u_(f, HLO_OP_ERF, t1, &t1));
    } else {
      return op_error(n, KILN_INVALID_ARGUMENT, "approximate must be \"none\" or \"tanh\", got \"%s\"", approx);
    }
    TRY(bk_(f, HLO_OP_ADD, t1, 1, &t1));
    TRY(b_(f, HLO_OP_MULTIPLY, x, t1, &t1));
    return bk_(f, HLO_OP_MULTIPLY, t1, 0.5, out);
  }
  if (strcmp(base, "ThresholdedRelu") == 0) {
    double alpha = graph_node_attr_float_or(n, "alpha", 1.0f);
    TRY(k_(f, x, alpha, &t1));
    TRY(hlo_build_compare(f->c, HLO_DIR_GT, x, t1, &p));
    TRY(k_(f, x, 0, &t2));
    return hlo_build_select(f->c, p, x, t2, out);
  }
  if (strcmp(base, "Shrink") == 0) {
    double bias = graph_node_attr_float_or(n, "bias", 0.0f), lambd = graph_node_attr_float_or(n, "lambd", 0.5f);
    hlo_instr *lo, *hi, *plo, *phi, *zero;
    TRY(k_(f, x, -lambd, &lo));
    TRY(k_(f, x, lambd, &hi));
    TRY(hlo_build_compare(f->c, HLO_DIR_LT, x, lo, &plo));
    TRY(hlo_build_compare(f->c, HLO_DIR_GT, x, hi, &phi));
    TRY(bk_(f, HLO_OP_ADD, x, bias, &t1));
    TRY(bk_(f, HLO_OP_SUBTRACT, x, bias, &t2));
    TRY(k_(f, x, 0, &zero));
    TRY(hlo_build_select(f->c, phi, t2, zero, &t3));
    return hlo_build_select(f->c, plo, t1, t3, out);
  }
  if (strcmp(base, "Reciprocal") == 0) {
    TRY(k_(f, x, 1, &t1));
    return b_(f, HLO_OP_DIVIDE, t1, x, out);
  }
  /* Functions HLO lacks. */
  if (strcmp(base, "Atan") == 0) {
    TRY(k_(f, x, 1, &t1));
    return b_(f, HLO_OP_ATAN2, x, t1, out);
  }
  if (strcmp(base, "Asin") == 0 || strcmp(base, "Acos") == 0) {
    /* sqrt((1 - x)(1 + x)) keeps precision near |x| = 1. */
    TRY(k_(f, x, 1, &t1));
    TRY(b_(f, HLO_OP_SUBTRACT, t1, x, &t2));
    TRY(b_(f, HLO_OP_ADD, t1, x, &t3));
    TRY(b_(f, HLO_OP_MULTIPLY, t2, t3, &t2));
    TRY(u_(f, HLO_OP_SQRT, t2, &t2));
    return base[1] == 's' ? b_(f, HLO_OP_ATAN2, x, t2, out) : b_(f, HLO_OP_ATAN2, t2, x, out);
  }
  if (strcmp(base, "Sinh") == 0) {
    TRY(u_(f, HLO_OP_EXPM1, x, &t1));
    TRY(u_(f, HLO_OP_NEGATE, x, &t2));
    TRY(u_(f, HLO_OP_EXPM1, t2, &t2));
    TRY(b_(f, HLO_OP_SUBTRACT, t1, t2, &t1));
    return bk_(f, HLO_OP_MULTIPLY, t1, 0.5, out);
  }
  if (strcmp(base, "Cosh") == 0) {
    TRY(u_(f, HLO_OP_EXP, x, &t1));
    TRY(u_(f, HLO_OP_NEGATE, x, &t2));
    TRY(u_(f, HLO_OP_EXP, t2, &t2));
    TRY(b_(f, HLO_OP_ADD, t1, t2, &t1));
    return bk_(f, HLO_OP_MULTIPLY, t1, 0.5, out);
  }
  if (strcmp(base, "Asinh") == 0) {
    /* sign(x) log(|x| + sqrt(x^2 + 1)) */
    TRY(u_(f, HLO_OP_ABS, x, &t1));
    TRY(b_(f, HLO_OP_MULTIPLY, x, x, &t2));
    TRY(bk_(f, HLO_OP_ADD, t2, 1, &t2));
    TRY(u_(f, HLO_OP_SQRT, t2, &t2));
    TRY(b_(f, HLO_OP_ADD, t1, t2, &t1));
    TRY(u_(f, HLO_OP_LOG, t1, &t1));
    TRY(u_(f, HLO_OP_SIGN, x, &t3));
    return b_(f, HLO_OP_MULTIPLY, t3, t1, out);
  }
  if (strcmp(base, "Acosh") == 0) {
    /* log(x + sqrt((x - 1)(x + 1))) */
    TRY(bk_(f, HLO_OP_SUBTRACT, x, 1, &t1));
    TRY(bk_(f, HLO_OP_ADD, x, 1, &t2));
    TRY(b_(f, HLO_OP_MULTIPLY, t1, t2, &t1));
    TRY(u_(f, HLO_OP_SQRT, t1, &t1));
    TRY(b_(f, HLO_OP_ADD, x, t1, &t1));
    return u_(f, HLO_OP_LOG, t1, out);
  }
  if (strcmp(base, "Atanh") == 0) {
    /* 0.5 (log1p(x) - log1p(-x)) */
    TRY(u_(f, HLO_OP_LOG1P, x, &t1));
    TRY(u_(f, HLO_OP_NEGATE, x, &t2));
    TRY(u_(f, HLO_OP_LOG1P, t2, &t2));
    TRY(b_(f, HLO_OP_SUBTRACT, t1, t2, &t1));
    return bk_(f, HLO_OP_MULTIPLY, t1, 0.5, out);
  }
  return op_error(n, KILN_INTERNAL, "no formula for %s", base);
}

static kiln_status lower_activation(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  const char *base = graph_node_op_base(ctx->node);
  if (strcmp(base, "Relu") != 0) TRY(need_float(ctx, x));
  fx f = {ctx, ctx->comp};
  L(activation(&f, base, x, &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_isnan(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_float(ctx, x));
  TRY(widen_narrow(ctx, x, &x));
  L(hlo_build_compare(ctx->comp, HLO_DIR_NE, x, x, &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_isinf(op_lower_ctx *ctx) {
  hlo_instr *x, *pinf, *ninf, *p, *n, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(need_float(ctx, x));
  TRY(widen_narrow(ctx, x, &x));
  bool detect_pos = graph_node_attr_int_or(ctx->node, "detect_positive", 1) != 0;
  bool detect_neg = graph_node_attr_int_or(ctx->node, "detect_negative", 1) != 0;
  L(like(ctx, x, INFINITY, &pinf));
  L(like(ctx, x, -INFINITY, &ninf));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, x, pinf, &p));
  L(hlo_build_compare(ctx->comp, HLO_DIR_EQ, x, ninf, &n));
  if (detect_pos && detect_neg)
    L(hlo_build_binary(ctx->comp, HLO_OP_OR, p, n, &r));
  else if (detect_pos)
    r = p;
  else if (detect_neg)
    r = n;
  else
    L(oplib_full(ctx->comp, HLO_PRED, 0, x->shape.rank, x->shape.dims, &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_clip(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  r = x;
  if (ctx->opset > 0 && ctx->opset < 11) {
    const graph_attr_value *mn = graph_node_attr(ctx->node, "min"), *mx = graph_node_attr(ctx->node, "max");
    if (mn && mn->kind == GRAPH_ATTR_FLOAT) L(oplib_binary_scalar(ctx->comp, HLO_OP_MAXIMUM, r, mn->f, &r));
    if (mx && mx->kind == GRAPH_ATTR_FLOAT) L(oplib_binary_scalar(ctx->comp, HLO_OP_MINIMUM, r, mx->f, &r));
    return onnx_set_output(ctx, 0, r);
  }
  hlo_instr *mn = onnx_input(ctx, 1), *mx = onnx_input(ctx, 2);
  if (!mn && onnx_const_input(ctx, 1)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 1), &mn));
  if (!mx && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &mx));
  if (mn) L(oplib_binary(ctx->comp, HLO_OP_MAXIMUM, r, mn, &r));
  if (mx) L(oplib_binary(ctx->comp, HLO_OP_MINIMUM, r, mx, &r));
  return onnx_set_output(ctx, 0, r);
}

/* ONNX's Cast to FLOAT8E8M0 (opset 24), transcribed from onnx.numpy_helper.to_float8e8m0,
 * which the spec defers to: the value is first an f32 (a double rounds to it), and the
 * result is that float's biased exponent field -- so the sign is ignored, zero and f32
 * subnormals give 0 (2^-127), inf and NaN 0xFF -- bumped by one when round_mode says so:
 * "up" whenever the mantissa is not zero, "nearest" when its top bit is set and any
 * lower bit is too or the exponent is not zero, "down" never. `saturate` keeps 0xFE
 * from being bumped into 0xFF (NaN). Built from integer ops on the f32's bits and a
 * bitcast, because the reference's rules are not XLA's convert (ml_dtypes rounds to the
 * nearest power of two and maps zero and negatives to NaN). */
static kiln_status cast_to_e8m0(op_lower_ctx *ctx, hlo_instr *x, bool saturate, const char *mode, hlo_instr **out) {
  bool up = strcmp(mode, "up") == 0, nearest = strcmp(mode, "nearest") == 0;
  if (!up && !nearest && strcmp(mode, "down") != 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "round_mode must be \"up\", \"down\" or \"nearest\", got \"%s\"",
                    mode);
  hlo_computation *c = ctx->comp;
  hlo_instr *bits, *e, *k, *special, *bump, *t;
  TRY(widen_narrow(ctx, x, &x));
  if (x->shape.type != HLO_F32) L(hlo_build_convert(c, x, HLO_F32, &x));
  L(hlo_build_bitcast_convert(c, x, HLO_U32, &bits));
  L(like(ctx, bits, 23, &k));
  L(hlo_build_binary(c, HLO_OP_SHIFT_RIGHT_LOGICAL, bits, k, &e));
  L(like(ctx, bits, 0xff, &k));
  L(hlo_build_binary(c, HLO_OP_AND, e, k, &e));
  L(hlo_build_compare(c, HLO_DIR_EQ, e, k, &special));
  if (up || nearest) {
    hlo_instr *zero;
    L(like(ctx, bits, 0, &zero));
    L(like(ctx, bits, up ? 0x7fffff : 0x3fffff, &k));
    L(hlo_build_binary(c, HLO_OP_AND, bits, k, &t));
    L(hlo_build_compare(c, HLO_DIR_NE, t, zero, &bump)); /* up: any fraction; nearest: r or s */
    if (nearest) {
      hlo_instr *g, *lsb;
      L(hlo_build_compare(c, HLO_DIR_NE, e, zero, &lsb));
      L(hlo_build_binary(c, HLO_OP_OR, bump, lsb, &bump));
      L(like(ctx, bits, 0x400000, &k));
      L(hlo_build_binary(c, HLO_OP_AND, bits, k, &t));
      L(hlo_build_compare(c, HLO_DIR_NE, t, zero, &g));
      L(hlo_build_binary(c, HLO_OP_AND, bump, g, &bump));
    }
    if (saturate) {
      hlo_instr *below;
      L(like(ctx, bits, 0xfe, &k));
      L(hlo_build_compare(c, HLO_DIR_NE, e, k, &below));
      L(hlo_build_binary(c, HLO_OP_AND, bump, below, &bump));
    }
    L(hlo_build_convert(c, bump, HLO_U32, &t));
    L(hlo_build_binary(c, HLO_OP_ADD, e, t, &e)); /* at most 0xFF: e <= 0xFE unless special */
  }
  L(like(ctx, bits, 0xff, &k));
  L(hlo_build_select(c, special, k, e, &e));
  L(hlo_build_convert(c, e, HLO_U8, &e));
  L(hlo_build_bitcast_convert(c, e, HLO_F8E8M0FNU, out));
  return NULL;
}

/* Converts x to type t with ONNX's Cast rules: bool is x != 0; a float reaches int4,
 * uint4, int2 and uint2 through int32 (truncating), where the narrow convert wraps, as
 * the reference (ml_dtypes) does; FLOAT8E8M0 follows its own rules (cast_to_e8m0,
 * round_mode `mode`); with `saturate` (the default, Cast-19+) a cast to a float8 type
 * first clamps to the type's largest finite value, so overflow and infinities give
 * +-max instead of inf or NaN (NaN stays NaN), in the source type when that is a wide
 * float (the bounds are exact in f16/bf16), else in f32 (exact for every value that
 * does not saturate anyway). */
static kiln_status cast_to(op_lower_ctx *ctx, hlo_instr *x, hlo_type t, bool saturate, const char *mode,
                           hlo_instr **out) {
  hlo_type from = x->shape.type;
  minifloat_format mf;
  if (from == t) {
    *out = x;
    return NULL;
  }
  if (t == HLO_PRED) {
    hlo_instr *zero;
    TRY(widen_narrow(ctx, x, &x));
    L(like(ctx, x, 0, &zero));
    L(hlo_build_compare(ctx->comp, HLO_DIR_NE, x, zero, out));
    return NULL;
  }
  if (t == HLO_F8E8M0FNU) return cast_to_e8m0(ctx, x, saturate, mode, out);
  if ((t == HLO_S4 || t == HLO_U4 || t == HLO_S2 || t == HLO_U2) && hlo_type_is_float(from))
    L(hlo_build_convert(ctx->comp, x, HLO_S32, &x));
  if (saturate && t != HLO_F4E2M1FN && hlo_type_minifloat(t, &mf)) {
    hlo_instr *lo, *hi;
    if (!hlo_type_is_float(from) || hlo_type_is_narrow(from)) L(hlo_build_convert(ctx->comp, x, HLO_F32, &x));
    L(oplib_scalar(ctx->comp, x->shape.type, -minifloat_max(mf), &lo));
    L(oplib_scalar(ctx->comp, x->shape.type, minifloat_max(mf), &hi));
    L(hlo_build_clamp(ctx->comp, lo, x, hi, &x));
  }
  L(hlo_build_convert(ctx->comp, x, t, out));
  return NULL;
}

static bool saturate_attr(op_lower_ctx *ctx) { return graph_node_attr_int_or(ctx->node, "saturate", 1) != 0; }
/* Cast-24's rounding toward FLOAT8E8M0 (cast_to_e8m0); ignored for every other type. */
static const char *round_mode_attr(op_lower_ctx *ctx) { return onnx_attr_string(ctx->node, "round_mode", "up"); }

static kiln_status lower_cast(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  graph_dtype to;
  TRY(onnx_attr_dtype(ctx->node, "to", &to));
  hlo_type t;
  if (!graph_dtype_to_hlo(to, &t))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "cast to %s is not supported in compiled code",
                    graph_dtype_name(to));
  TRY(cast_to(ctx, x, t, saturate_attr(ctx), round_mode_attr(ctx), &r));
  return onnx_set_output(ctx, 0, r);
}

static kiln_status lower_castlike(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(onnx_require_input(ctx, 0, &x));
  hlo_type t;
  TRY(onnx_input_hlo_type(ctx, 1, &t));
  TRY(cast_to(ctx, x, t, saturate_attr(ctx), round_mode_attr(ctx), &r));
  return onnx_set_output(ctx, 0, r);
}

/* ------------------------------------------------------------ quantisation ---- */

/* A scale or zero point shaped for x: scalars broadcast, 1-D per-axis vectors go along
 * `axis` (ONNX's per-axis quantisation), and with block > 0 (blocked quantisation,
 * opset 21) v has x's rank with ceil(n / block) entries along axis, each standing for
 * `block` consecutive elements of x there. */
static kiln_status quant_param(op_lower_ctx *ctx, hlo_instr *v, hlo_instr *x, int64_t axis, int64_t block,
                               hlo_instr **out) {
  if (block > 0) {
    int r = x->shape.rank;
    bool fits = v->shape.rank == r && r > 0 && r < HLO_MAX_RANK;
    for (int i = 0; fits && i < r; i++)
      fits = i == axis ? v->shape.dims[i] == (x->shape.dims[i] + block - 1) / block : v->shape.dims[i] == x->shape.dims[i];
    if (!fits)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                      "blocked quantisation: a scale/zero point of rank %d does not cover x of rank %d in blocks of %lld "
                      "along axis %lld",
                      v->shape.rank, r, (long long)block, (long long)axis);
    /* [.., B, ..] -> [.., B, block, ..] -> [.., B*block, ..] -> the first n along axis. */
    int64_t wide[HLO_MAX_RANK], map[HLO_MAX_RANK], flat[HLO_MAX_RANK];
    for (int i = 0, k = 0; i <= r; i++) {
      if (i == axis + 1) {
        wide[i] = block;
        continue;
      }
      wide[i] = v->shape.dims[k];
      map[k++] = i;
    }
    L(hlo_build_broadcast(ctx->comp, v, r + 1, wide, map, &v));
    for (int i = 0; i < r; i++) flat[i] = i == axis ? v->shape.dims[i] * block : v->shape.dims[i < axis ? i : i + 1];
    L(oplib_reshape(ctx->comp, v, r, flat, &v));
    int64_t lo[HLO_MAX_RANK] = {0}, hi[HLO_MAX_RANK], st[HLO_MAX_RANK];
    for (int i = 0; i < r; i++) {
      hi[i] = x->shape.dims[i];
      st[i] = 1;
    }
    L(hlo_build_slice(ctx->comp, v, lo, hi, st, out));
    return NULL;
  }
  if (shape_elements(&v->shape) == 1) {
    L(oplib_reshape(ctx->comp, v, 0, NULL, &v));
    L(hlo_build_broadcast(ctx->comp, v, x->shape.rank, x->shape.dims, NULL, out));
    return NULL;
  }
  if (v->shape.rank != 1 || x->shape.rank == 0 || v->shape.dims[0] != x->shape.dims[axis])
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "scale/zero point must be a scalar, a vector along axis %lld or (with block_size) x's rank",
                    (long long)axis);
  L(hlo_build_broadcast(ctx->comp, v, x->shape.rank, x->shape.dims, &axis, out));
  return NULL;
}

/* The quantisation axis of x for this scale, and the block size (0: none). ONNX ignores
 * `axis` for per-tensor quantisation (a scalar or one-element scale), so it is only
 * checked for per-axis and blocked scales: the default axis 1 does not exist on a
 * rank-1 x, which per-tensor Q/DQ nodes (a quantised LayerNorm bias, say) have without
 * saying axis=0. */
static kiln_status quant_axis(op_lower_ctx *ctx, hlo_instr *x, hlo_instr *scale, int64_t *axis, int64_t *block) {
  int64_t a = graph_node_attr_int_or(ctx->node, "axis", 1);
  *block = graph_node_attr_int_or(ctx->node, "block_size", 0);
  if (*block < 0)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "block_size %lld is negative", (long long)*block);
  *axis = 0;
  if (*block == 0 && (x->shape.rank == 0 || shape_elements(&scale->shape) == 1)) return NULL;
  L(oplib_normalize_axis(a, x->shape.rank, axis));
  return NULL;
}

/* The HLO type named by optional dtype attribute `name` (0 or absent: *have false). */
static kiln_status quant_dtype_attr(op_lower_ctx *ctx, const char *name, bool *have, hlo_type *out) {
  *have = false;
  const graph_attr_value *a = graph_node_attr(ctx->node, name);
  if (!a || (a->kind == GRAPH_ATTR_INT && a->i == 0)) return NULL;
  graph_dtype dt;
  TRY(onnx_attr_dtype(ctx->node, name, &dt));
  if (!graph_dtype_to_hlo(dt, out))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "%s %s is not supported", name, graph_dtype_name(dt));
  *have = true;
  return NULL;
}

static kiln_status lower_quantize(op_lower_ctx *ctx) {
  hlo_instr *x, *scale, *zp = onnx_input(ctx, 2), *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &scale));
  if (!zp && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &zp));
  bool have_out, have_prec;
  hlo_type out_t = zp ? zp->shape.type : HLO_U8, prec;
  TRY(quant_dtype_attr(ctx, "output_dtype", &have_out, &out_t));
  if (have_out && zp && zp->shape.type != out_t)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "output_dtype %s differs from y_zero_point's type %s",
                    hlo_type_name(out_t), hlo_type_name(zp->shape.type));
  minifloat_format mf;
  bool float_out = hlo_type_minifloat(out_t, &mf);
  if ((!hlo_type_is_int(out_t) && !float_out) || out_t == HLO_F8E8M0FNU) /* e8m0 is a scale type, not a target */
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "quantising to %s is not supported", hlo_type_name(out_t));
  int64_t axis, block;
  TRY(quant_axis(ctx, x, scale, &axis, &block));
  /* The division's precision: attribute precision (opset 23), else f32 (f64 for f64 x). */
  TRY(quant_dtype_attr(ctx, "precision", &have_prec, &prec));
  hlo_type ct = have_prec ? prec : x->shape.type == HLO_F64 ? HLO_F64 : HLO_F32;
  if (!hlo_type_is_float(ct) || hlo_type_is_narrow(ct))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "precision must be f16, bf16, f32 or f64, got %s",
                    hlo_type_name(ct));
  hlo_instr *lo, *hi;
  L(oplib_convert(ctx->comp, x, ct, &x));
  L(oplib_convert(ctx->comp, scale, ct, &scale));
  TRY(quant_param(ctx, scale, x, axis, block, &scale));
  L(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, x, scale, &y));
  if (float_out) {
    /* Float quantisation rounds in the convert. ONNX requires a zero zero point for
     * float8, so only float4's is added (as the reference does); float8 saturates to
     * +-max unless saturate=0, float4 saturates in the convert itself. */
    if (zp && out_t == HLO_F4E2M1FN) {
      L(oplib_convert(ctx->comp, zp, ct, &zp));
      TRY(quant_param(ctx, zp, x, axis, block, &zp));
      L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, zp, &y));
    }
    if (out_t != HLO_F4E2M1FN && saturate_attr(ctx)) {
      L(oplib_scalar(ctx->comp, ct, -minifloat_max(mf), &lo));
      L(oplib_scalar(ctx->comp, ct, minifloat_max(mf), &hi));
      L(hlo_build_clamp(ctx->comp, lo, y, hi, &y));
    }
    L(hlo_build_convert(ctx->comp, y, out_t, &y));
    return onnx_set_output(ctx, 0, y);
  }
  L(hlo_build_unary(ctx->comp, HLO_OP_ROUND_NEAREST_EVEN, y, &y));
  if (zp) {
    L(oplib_convert(ctx->comp, zp, ct, &zp));
    TRY(quant_param(ctx, zp, x, axis, block, &zp));
    L(hlo_build_binary(ctx->comp, HLO_OP_ADD, y, zp, &y));
  }
  /* Saturate to the output type's range before converting. */
  L(oplib_lowest(ctx->comp, out_t, &lo));
  L(oplib_highest(ctx->comp, out_t, &hi));
  L(hlo_build_convert(ctx->comp, lo, ct, &lo));
  L(hlo_build_convert(ctx->comp, hi, ct, &hi));
  L(hlo_build_clamp(ctx->comp, lo, y, hi, &y));
  L(hlo_build_convert(ctx->comp, y, out_t, &y));
  return onnx_set_output(ctx, 0, y);
}

static kiln_status lower_dequantize(op_lower_ctx *ctx) {
  hlo_instr *x, *scale, *zp = onnx_input(ctx, 2), *y;
  TRY(onnx_require_input(ctx, 0, &x));
  TRY(onnx_require_input(ctx, 1, &scale));
  if (!zp && onnx_const_input(ctx, 2)) L(oplib_const_tensor(ctx->comp, onnx_const_input(ctx, 2), &zp));
  int64_t axis, block;
  TRY(quant_axis(ctx, x, scale, &axis, &block));
  hlo_type out_t = scale->shape.type, asked;
  if (!hlo_type_is_float(out_t)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "x_scale must be floating-point");
  bool have_out;
  TRY(quant_dtype_attr(ctx, "output_dtype", &have_out, &asked)); /* opset 23 */
  /* int32 inputs exceed f32's exact range: subtract the zero point in the wide type.
   * Float8/float4 inputs widen to f32 (exactly); ONNX requires their zero point to be
   * zero, so it is not read. */
  hlo_type wide = hlo_type_size(x->shape.type) >= 4 ? HLO_S64 : HLO_S32;
  bool narrow_float = hlo_type_is_float(x->shape.type) && hlo_type_is_narrow(x->shape.type);
  if (hlo_type_is_float(x->shape.type)) wide = narrow_float ? HLO_F32 : x->shape.type;
  L(oplib_convert(ctx->comp, x, wide, &y));
  if (zp && !narrow_float) {
    L(oplib_convert(ctx->comp, zp, wide, &zp));
    TRY(quant_param(ctx, zp, y, axis, block, &zp));
    L(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, y, zp, &y));
  }
  L(oplib_convert(ctx->comp, y, out_t, &y));
  TRY(quant_param(ctx, scale, y, axis, block, &scale));
  L(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, y, scale, &y));
  if (have_out) L(oplib_convert(ctx->comp, y, asked, &y));
  return onnx_set_output(ctx, 0, y);
}

/* ------------------------------------------------------------------- table ---- */

#define UNARY(n) {"onnx." n, 0, 0, lower_unary, NULL}
#define ACT(n) {"onnx." n, 0, 0, lower_activation, NULL}

static const op_def onnx_math_defs[] = {
    UNARY("Abs"),  UNARY("Neg"),  UNARY("Exp"),   UNARY("Log"),     UNARY("Sqrt"),  UNARY("Floor"),
    UNARY("Ceil"), UNARY("Round"), UNARY("Sign"), UNARY("Sin"),     UNARY("Cos"),   UNARY("Tan"),
    UNARY("Tanh"), UNARY("Erf"),  UNARY("Sigmoid"), UNARY("Not"),   UNARY("BitwiseNot"),
    ACT("Relu"),   ACT("LeakyRelu"), ACT("Elu"),  ACT("Selu"),      ACT("Celu"),    ACT("HardSigmoid"),
    ACT("HardSwish"), ACT("Softplus"), ACT("Softsign"), ACT("Mish"), ACT("Gelu"),  ACT("ThresholdedRelu"),
    ACT("Shrink"), ACT("Reciprocal"), ACT("Atan"), ACT("Asin"),     ACT("Acos"),    ACT("Sinh"),
    ACT("Cosh"),   ACT("Asinh"),  ACT("Acosh"),   ACT("Atanh"),
    {"onnx.Add", 0, 0, lower_binary, NULL},
    {"onnx.Sub", 0, 0, lower_binary, NULL},
    {"onnx.Mul", 0, 0, lower_binary, NULL},
    {"onnx.Div", 0, 0, lower_binary, NULL},
    {"onnx.And", 0, 0, lower_binary, NULL},
    {"onnx.Or", 0, 0, lower_binary, NULL},
    {"onnx.Xor", 0, 0, lower_binary, NULL},
    {"onnx.BitwiseAnd", 0, 0, lower_binary, NULL},
    {"onnx.BitwiseOr", 0, 0, lower_binary, NULL},
    {"onnx.BitwiseXor", 0, 0, lower_binary, NULL},
    {"onnx.Equal", 0, 0, lower_compare, onnx_host_string_equal}, /* strings: ops_onnx_string.c */
    {"onnx.Less", 0, 0, lower_compare, NULL},
    {"onnx.Greater", 0, 0, lower_compare, NULL},
    {"onnx.LessOrEqual", 0, 0, lower_compare, NULL},
    {"onnx.GreaterOrEqual", 0, 0, lower_compare, NULL},
    {"onnx.Pow", 0, 0, lower_pow, NULL},
    {"onnx.Mod", 0, 0, lower_mod, NULL},
    {"onnx.BitShift", 0, 0, lower_bitshift, NULL},
    {"onnx.Sum", 0, 0, lower_variadic, NULL},
    {"onnx.Mean", 0, 0, lower_variadic, NULL},
    {"onnx.Max", 0, 0, lower_variadic, NULL},
    {"onnx.Min", 0, 0, lower_variadic, NULL},
    {"onnx.PRelu", 0, 0, lower_prelu, NULL},
    {"onnx.Where", 0, 0, lower_where, NULL},
    {"onnx.IsNaN", 0, 0, lower_isnan, NULL},
    {"onnx.IsInf", 0, 0, lower_isinf, NULL},
    {"onnx.Clip", 0, 0, lower_clip, NULL},
    {"onnx.Cast", 0, 0, lower_cast, onnx_host_string_cast},
    {"onnx.CastLike", 0, 0, lower_castlike, onnx_host_string_castlike},
    {"onnx.QuantizeLinear", 0, 0, lower_quantize, NULL},
    {"onnx.DequantizeLinear", 0, 0, lower_dequantize, NULL},
};

const op_table onnx_math_ops = {"onnx.math", (int)(sizeof onnx_math_defs / sizeof onnx_math_defs[0]), onnx_math_defs};
