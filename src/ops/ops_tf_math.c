/* TensorFlow elementwise math: arithmetic with numpy broadcasting, comparisons and
 * logic, unary functions and activations, Cast, Select/SelectV2, AddN, BiasAdd and
 * ClipByValue, lowered to HLO as tf2xla's cwise kernels do.
 *
 * Semantics follow TensorFlow's kernels rather than HLO's where they differ: integer
 * FloorDiv/FloorMod round toward negative infinity (HLO divide/remainder truncate),
 * Div on integers truncates like C (TF's safe_div), Round is half-to-even, Softplus
 * uses TF's thresholds, and ops TF defines through others (Selu, Softsign, Xlogy,
 * DivNoNan…) are spelled out the same way. */
#include <math.h>
#include <string.h>

#include "ops/ops_tf_common.h"

#define T(expr) OPLIB_TRY(ctx->node, (expr))

static kiln_status get2(op_lower_ctx *ctx, hlo_instr **a, hlo_instr **b) {
  TRY(tf_check_inputs(ctx, 2, 2));
  TRY(tf_input(ctx, 0, a));
  TRY(tf_input(ctx, 1, b));
  return NULL;
}

static kiln_status get1(op_lower_ctx *ctx, hlo_instr **x) {
  TRY(tf_check_inputs(ctx, 1, 1));
  return tf_input(ctx, 0, x);
}

static kiln_status lower_binary(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  T(oplib_binary(ctx->comp, op, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_compare(op_lower_ctx *ctx, hlo_direction dir) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  T(oplib_compare(ctx->comp, dir, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_unary(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *x, *r;
  TRY(get1(ctx, &x));
  T(oplib_unary(ctx->comp, op, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

#define BINARY(NAME, OP) \
  static kiln_status lower_##NAME(op_lower_ctx *ctx) { return lower_binary(ctx, OP); }
#define COMPARE(NAME, DIR) \
  static kiln_status lower_##NAME(op_lower_ctx *ctx) { return lower_compare(ctx, DIR); }
#define UNARY(NAME, OP) \
  static kiln_status lower_##NAME(op_lower_ctx *ctx) { return lower_unary(ctx, OP); }

BINARY(Add, HLO_OP_ADD)
BINARY(Sub, HLO_OP_SUBTRACT)
BINARY(Mul, HLO_OP_MULTIPLY)
BINARY(Div, HLO_OP_DIVIDE) /* ints: C truncation, as TF's safe_div */
BINARY(Maximum, HLO_OP_MAXIMUM)
BINARY(Minimum, HLO_OP_MINIMUM)
BINARY(Pow, HLO_OP_POWER)
BINARY(Atan2, HLO_OP_ATAN2)
BINARY(TruncateMod, HLO_OP_REMAINDER)
COMPARE(Equal, HLO_DIR_EQ)
COMPARE(NotEqual, HLO_DIR_NE)
COMPARE(Less, HLO_DIR_LT)
COMPARE(LessEqual, HLO_DIR_LE)
COMPARE(Greater, HLO_DIR_GT)
COMPARE(GreaterEqual, HLO_DIR_GE)
UNARY(Neg, HLO_OP_NEGATE)
UNARY(Abs, HLO_OP_ABS)
UNARY(Exp, HLO_OP_EXP)
UNARY(Expm1, HLO_OP_EXPM1)
UNARY(Log, HLO_OP_LOG)
UNARY(Log1p, HLO_OP_LOG1P)
UNARY(Sqrt, HLO_OP_SQRT)
UNARY(Rsqrt, HLO_OP_RSQRT)
UNARY(Sigmoid, HLO_OP_LOGISTIC)
UNARY(Tanh, HLO_OP_TANH)
UNARY(Erf, HLO_OP_ERF)
UNARY(Sin, HLO_OP_SINE)
UNARY(Cos, HLO_OP_COSINE)
UNARY(Tan, HLO_OP_TAN)
UNARY(Sign, HLO_OP_SIGN)
UNARY(IsFinite, HLO_OP_IS_FINITE)
UNARY(Invert, HLO_OP_NOT)

static bool is_float(const hlo_instr *x) { return hlo_type_is_float(x->shape.type); }
static bool is_int(const hlo_instr *x) { return hlo_type_is_int(x->shape.type); }

/* Logical ops take bools only; Invert/Bitwise* take integers. */
static kiln_status lower_logical(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  if (a->shape.type != HLO_PRED || b->shape.type != HLO_PRED)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "operands must be bool, got %s and %s",
                    hlo_type_name(a->shape.type), hlo_type_name(b->shape.type));
  T(oplib_binary(ctx->comp, op, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_LogicalAnd(op_lower_ctx *ctx) { return lower_logical(ctx, HLO_OP_AND); }
static kiln_status lower_LogicalOr(op_lower_ctx *ctx) { return lower_logical(ctx, HLO_OP_OR); }
static kiln_status lower_LogicalNot(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(get1(ctx, &x));
  if (x->shape.type != HLO_PRED)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "operand must be bool, got %s", hlo_type_name(x->shape.type));
  T(hlo_build_unary(ctx->comp, HLO_OP_NOT, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_bitwise(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  if (!is_int(a)) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "operands must be integers");
  if (op == HLO_OP_SHIFT_RIGHT_ARITHMETIC && !hlo_type_is_signed_int(a->shape.type)) op = HLO_OP_SHIFT_RIGHT_LOGICAL;
  T(oplib_binary(ctx->comp, op, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_BitwiseAnd(op_lower_ctx *ctx) { return lower_bitwise(ctx, HLO_OP_AND); }
static kiln_status lower_BitwiseOr(op_lower_ctx *ctx) { return lower_bitwise(ctx, HLO_OP_OR); }
static kiln_status lower_BitwiseXor(op_lower_ctx *ctx) { return lower_bitwise(ctx, HLO_OP_XOR); }
static kiln_status lower_LeftShift(op_lower_ctx *ctx) { return lower_bitwise(ctx, HLO_OP_SHIFT_LEFT); }
static kiln_status lower_RightShift(op_lower_ctx *ctx) { return lower_bitwise(ctx, HLO_OP_SHIFT_RIGHT_ARITHMETIC); }

/* ---------------------------------------------------------- division family ---- */

static kiln_status lower_RealDiv(op_lower_ctx *ctx) { return lower_binary(ctx, HLO_OP_DIVIDE); }

/* Integer floor division: the truncated quotient, one less when the remainder is
 * nonzero and its sign differs from the divisor's. */
static kiln_status floor_div(hlo_computation *c, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  hlo_instr *q, *r, *zero, *r_nz, *r_neg, *b_neg, *differ, *fix, *one, *qm1;
  if (hlo_type_is_float(a->shape.type)) {
    TRY(oplib_binary(c, HLO_OP_DIVIDE, a, b, &q));
    return hlo_build_unary(c, HLO_OP_FLOOR, q, out);
  }
  hlo_instr *ab[2] = {a, b};
  TRY(oplib_broadcast_all(c, 2, ab));
  a = ab[0];
  b = ab[1];
  TRY(hlo_build_binary(c, HLO_OP_DIVIDE, a, b, &q));
  if (!hlo_type_is_signed_int(a->shape.type)) {
    *out = q;
    return NULL;
  }
  TRY(hlo_build_binary(c, HLO_OP_REMAINDER, a, b, &r));
  TRY(oplib_full_like(c, r, HLO_TYPE_COUNT, 0, &zero));
  TRY(hlo_build_compare(c, HLO_DIR_NE, r, zero, &r_nz));
  TRY(hlo_build_compare(c, HLO_DIR_LT, r, zero, &r_neg));
  TRY(hlo_build_compare(c, HLO_DIR_LT, b, zero, &b_neg));
  TRY(hlo_build_compare(c, HLO_DIR_NE, r_neg, b_neg, &differ));
  TRY(hlo_build_binary(c, HLO_OP_AND, r_nz, differ, &fix));
  TRY(oplib_full_like(c, q, HLO_TYPE_COUNT, 1, &one));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, q, one, &qm1));
  return hlo_build_select(c, fix, qm1, q, out);
}

/* Floor modulo (Python's %): the truncated remainder plus the divisor when the two
 * signs differ; for floats on fmod, exactly as TF's FloorMod functor. */
static kiln_status floor_mod(hlo_computation *c, hlo_instr *a, hlo_instr *b, hlo_instr **out) {
  hlo_instr *ab[2] = {a, b}, *r, *zero, *r_nz, *r_neg, *b_neg, *differ, *fix, *rb;
  TRY(oplib_broadcast_all(c, 2, ab));
  a = ab[0];
  b = ab[1];
  TRY(hlo_build_binary(c, HLO_OP_REMAINDER, a, b, &r));
  if (hlo_type_is_unsigned_int(a->shape.type)) {
    *out = r;
    return NULL;
  }
  TRY(oplib_full_like(c, r, HLO_TYPE_COUNT, 0, &zero));
  TRY(hlo_build_compare(c, HLO_DIR_NE, r, zero, &r_nz));
  TRY(hlo_build_compare(c, HLO_DIR_LT, r, zero, &r_neg));
  TRY(hlo_build_compare(c, HLO_DIR_LT, b, zero, &b_neg));
  TRY(hlo_build_compare(c, HLO_DIR_NE, r_neg, b_neg, &differ));
  TRY(hlo_build_binary(c, HLO_OP_AND, r_nz, differ, &fix));
  TRY(hlo_build_binary(c, HLO_OP_ADD, r, b, &rb));
  return hlo_build_select(c, fix, rb, r, out);
}

static kiln_status lower_FloorDiv(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  T(floor_div(ctx->comp, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_FloorMod(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *r;
  TRY(get2(ctx, &a, &b));
  T(floor_mod(ctx->comp, a, b, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* trunc(a / b) for floats; plain division for ints. */
static kiln_status lower_TruncateDiv(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *q, *aq, *fl, *sg, *r;
  TRY(get2(ctx, &a, &b));
  T(oplib_binary(ctx->comp, HLO_OP_DIVIDE, a, b, &q));
  if (is_float(q)) {
    T(hlo_build_unary(ctx->comp, HLO_OP_ABS, q, &aq));
    T(hlo_build_unary(ctx->comp, HLO_OP_FLOOR, aq, &fl));
    T(hlo_build_unary(ctx->comp, HLO_OP_SIGN, q, &sg));
    T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, sg, fl, &r));
    q = r;
  }
  tf_set_output(ctx, 0, q);
  return NULL;
}

/* select(b == 0, 0, f(a, b)) : DivNoNan and MulNoNan. */
static kiln_status lower_no_nan(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *a, *b, *ab[2], *v, *zero, *isz, *r;
  TRY(get2(ctx, &a, &b));
  ab[0] = a;
  ab[1] = b;
  T(oplib_broadcast_all(ctx->comp, 2, ab));
  T(hlo_build_binary(ctx->comp, op, ab[0], ab[1], &v));
  T(oplib_full_like(ctx->comp, ab[1], HLO_TYPE_COUNT, 0, &zero));
  T(hlo_build_compare(ctx->comp, HLO_DIR_EQ, ab[1], zero, &isz));
  T(hlo_build_select(ctx->comp, isz, zero, v, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_DivNoNan(op_lower_ctx *ctx) { return lower_no_nan(ctx, HLO_OP_DIVIDE); }
static kiln_status lower_MulNoNan(op_lower_ctx *ctx) { return lower_no_nan(ctx, HLO_OP_MULTIPLY); }

/* select(x == 0, 0, x * log(y)) / select(x == 0, 0, x / y). */
static kiln_status lower_x_op_y(op_lower_ctx *ctx, bool log_y) {
  hlo_instr *a, *b, *ab[2], *ly, *v, *zero, *isz, *r;
  TRY(get2(ctx, &a, &b));
  ab[0] = a;
  ab[1] = b;
  T(oplib_broadcast_all(ctx->comp, 2, ab));
  if (log_y) {
    T(hlo_build_unary(ctx->comp, HLO_OP_LOG, ab[1], &ly));
    T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, ab[0], ly, &v));
  } else {
    T(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, ab[0], ab[1], &v));
  }
  T(oplib_full_like(ctx->comp, ab[0], HLO_TYPE_COUNT, 0, &zero));
  T(hlo_build_compare(ctx->comp, HLO_DIR_EQ, ab[0], zero, &isz));
  T(hlo_build_select(ctx->comp, isz, zero, v, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Xlogy(op_lower_ctx *ctx) { return lower_x_op_y(ctx, true); }
static kiln_status lower_Xdivy(op_lower_ctx *ctx) { return lower_x_op_y(ctx, false); }

static kiln_status lower_SquaredDifference(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *d, *r;
  TRY(get2(ctx, &a, &b));
  T(oplib_binary(ctx->comp, HLO_OP_SUBTRACT, a, b, &d));
  T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, d, d, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* |a - b| < tolerance. */
static kiln_status lower_ApproximateEqual(op_lower_ctx *ctx) {
  hlo_instr *a, *b, *d, *ad, *tol, *r;
  TRY(get2(ctx, &a, &b));
  float tolerance = graph_node_attr_float_or(ctx->node, "tolerance", 1e-5f);
  T(oplib_binary(ctx->comp, HLO_OP_SUBTRACT, a, b, &d));
  T(hlo_build_unary(ctx->comp, HLO_OP_ABS, d, &ad));
  T(oplib_full_like(ctx->comp, ad, HLO_TYPE_COUNT, tolerance, &tol));
  T(hlo_build_compare(ctx->comp, HLO_DIR_LT, ad, tol, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------------ unary ---- */

static kiln_status lower_Square(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Reciprocal(op_lower_ctx *ctx) {
  hlo_instr *x, *one, *r;
  TRY(get1(ctx, &x));
  T(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, 1, &one));
  T(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, one, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* Rounding ops: `op` on floats; integers are already whole, so they pass through. */
static kiln_status lower_rounding(op_lower_ctx *ctx, hlo_opcode op) {
  hlo_instr *x, *r = NULL;
  TRY(get1(ctx, &x));
  if (is_float(x)) T(hlo_build_unary(ctx->comp, op, x, &r));
  tf_set_output(ctx, 0, r ? r : x);
  return NULL;
}

static kiln_status lower_Floor(op_lower_ctx *ctx) { return lower_rounding(ctx, HLO_OP_FLOOR); }
static kiln_status lower_Ceil(op_lower_ctx *ctx) { return lower_rounding(ctx, HLO_OP_CEIL); }
/* Round and Rint: half to even (TF's Round is banker's rounding). */
static kiln_status lower_Round(op_lower_ctx *ctx) { return lower_rounding(ctx, HLO_OP_ROUND_NEAREST_EVEN); }

static kiln_status lower_IsNan(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_compare(ctx->comp, HLO_DIR_NE, x, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_IsInf(op_lower_ctx *ctx) {
  hlo_instr *x, *ax, *inf, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_ABS, x, &ax));
  T(oplib_full_like(ctx->comp, ax, HLO_TYPE_COUNT, INFINITY, &inf));
  T(hlo_build_compare(ctx->comp, HLO_DIR_EQ, ax, inf, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* x > 0 ? x : neg (neg computed by the caller from x). */
static kiln_status positive_or(hlo_computation *c, hlo_instr *x, hlo_instr *neg, hlo_instr **out) {
  hlo_instr *zero, *pos;
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &zero));
  TRY(hlo_build_compare(c, HLO_DIR_GT, x, zero, &pos));
  return hlo_build_select(c, pos, x, neg, out);
}

static kiln_status relu(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_instr *zero;
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &zero));
  return hlo_build_binary(c, HLO_OP_MAXIMUM, x, zero, out);
}

static kiln_status relu6(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_instr *zero, *six;
  TRY(oplib_scalar(c, x->shape.type, 0, &zero));
  TRY(oplib_scalar(c, x->shape.type, 6, &six));
  TRY(oplib_broadcast_to(c, zero, x->shape.rank, x->shape.dims, &zero));
  TRY(oplib_broadcast_to(c, six, x->shape.rank, x->shape.dims, &six));
  return hlo_build_clamp(c, zero, x, six, out);
}

static kiln_status elu(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_instr *em1;
  TRY(hlo_build_unary(c, HLO_OP_EXPM1, x, &em1));
  return positive_or(c, x, em1, out);
}

static kiln_status selu(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  hlo_instr *em1, *neg, *scaled, *zero, *gt;
  TRY(hlo_build_unary(c, HLO_OP_EXPM1, x, &em1));
  TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, em1, scale * alpha, &neg));
  TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, scale, &scaled));
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 0, &zero));
  TRY(hlo_build_compare(c, HLO_DIR_GT, x, zero, &gt));
  return hlo_build_select(c, gt, scaled, neg, out);
}

static kiln_status leaky_relu(hlo_computation *c, hlo_instr *x, double alpha, hlo_instr **out) {
  hlo_instr *ax;
  TRY(oplib_binary_scalar(c, HLO_OP_MULTIPLY, x, alpha, &ax));
  return positive_or(c, x, ax, out);
}

/* TF's softplus: x for large x, exp(x) for very negative x, log(exp(x) + 1) between;
 * the threshold is log(epsilon) + 2 of the type. */
static kiln_status softplus(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_type t = x->shape.type;
  double eps = t == HLO_F64 ? 2.220446049250313e-16 : t == HLO_F16 ? 0.0009765625 : t == HLO_BF16 ? 0.0078125
                                                                                                   : 1.1920929e-07;
  double threshold = log(eps) + 2.0;
  hlo_instr *e, *e1, *l, *hi, *lo, *too_large, *too_small, *s1;
  TRY(hlo_build_unary(c, HLO_OP_EXP, x, &e));
  TRY(oplib_binary_scalar(c, HLO_OP_ADD, e, 1, &e1));
  TRY(hlo_build_unary(c, HLO_OP_LOG, e1, &l));
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, -threshold, &hi));
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, threshold, &lo));
  TRY(hlo_build_compare(c, HLO_DIR_GT, x, hi, &too_large));
  TRY(hlo_build_compare(c, HLO_DIR_LT, x, lo, &too_small));
  TRY(hlo_build_select(c, too_small, e, l, &s1));
  return hlo_build_select(c, too_large, x, s1, out);
}

/* The activations _FusedConv2D/_FusedMatMul may carry; also the plain ops. */
kiln_status tf_activation(hlo_computation *c, const char *name, hlo_instr *x, double leakyrelu_alpha,
                          hlo_instr **out, bool *known) {
  *known = true;
  if (strcmp(name, "Relu") == 0) return relu(c, x, out);
  if (strcmp(name, "Relu6") == 0) return relu6(c, x, out);
  if (strcmp(name, "Elu") == 0) return elu(c, x, out);
  if (strcmp(name, "Selu") == 0) return selu(c, x, out);
  if (strcmp(name, "LeakyRelu") == 0) return leaky_relu(c, x, leakyrelu_alpha, out);
  if (strcmp(name, "Sigmoid") == 0) return hlo_build_unary(c, HLO_OP_LOGISTIC, x, out);
  if (strcmp(name, "Tanh") == 0) return hlo_build_unary(c, HLO_OP_TANH, x, out);
  if (strcmp(name, "Softplus") == 0) return softplus(c, x, out);
  if (strcmp(name, "Identity") == 0 || strcmp(name, "Linear") == 0) {
    *out = x;
    return NULL;
  }
  *known = false;
  return NULL;
}

static kiln_status lower_activation(op_lower_ctx *ctx) {
  hlo_instr *x, *r = NULL;
  bool known;
  TRY(get1(ctx, &x));
  if (!is_float(x) && strcmp(graph_node_op_base(ctx->node), "Relu") && strcmp(graph_node_op_base(ctx->node), "Relu6"))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "operand must be floating point, got %s",
                    hlo_type_name(x->shape.type));
  double alpha = graph_node_attr_float_or(ctx->node, "alpha", 0.2f);
  T(tf_activation(ctx->comp, graph_node_op_base(ctx->node), x, alpha, &r, &known));
  if (!known) return op_error(ctx->node, KILN_INTERNAL, "not an activation");
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Softsign(op_lower_ctx *ctx) {
  hlo_instr *x, *ax, *d, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_ABS, x, &ax));
  T(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, ax, 1, &d));
  T(hlo_build_binary(ctx->comp, HLO_OP_DIVIDE, x, d, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Erfc(op_lower_ctx *ctx) {
  hlo_instr *x, *e, *one, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_ERF, x, &e));
  T(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, 1, &one));
  T(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, one, e, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* sqrt(1 - x^2), shared by Asin and Acos. */
static kiln_status one_minus_sq_sqrt(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_instr *x2, *one, *d;
  TRY(hlo_build_binary(c, HLO_OP_MULTIPLY, x, x, &x2));
  TRY(oplib_full_like(c, x, HLO_TYPE_COUNT, 1, &one));
  TRY(hlo_build_binary(c, HLO_OP_SUBTRACT, one, x2, &d));
  return hlo_build_unary(c, HLO_OP_SQRT, d, out);
}

static kiln_status lower_Asin(op_lower_ctx *ctx) {
  hlo_instr *x, *s, *r;
  TRY(get1(ctx, &x));
  T(one_minus_sq_sqrt(ctx->comp, x, &s));
  T(hlo_build_binary(ctx->comp, HLO_OP_ATAN2, x, s, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Acos(op_lower_ctx *ctx) {
  hlo_instr *x, *s, *r;
  TRY(get1(ctx, &x));
  T(one_minus_sq_sqrt(ctx->comp, x, &s));
  T(hlo_build_binary(ctx->comp, HLO_OP_ATAN2, s, x, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_Atan(op_lower_ctx *ctx) {
  hlo_instr *x, *one, *r;
  TRY(get1(ctx, &x));
  T(oplib_full_like(ctx->comp, x, HLO_TYPE_COUNT, 1, &one));
  T(hlo_build_binary(ctx->comp, HLO_OP_ATAN2, x, one, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* (e^x ± e^-x) / 2 */
static kiln_status hyperbolic(op_lower_ctx *ctx, hlo_opcode combine) {
  hlo_instr *x, *nx, *e, *en, *s, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_NEGATE, x, &nx));
  T(hlo_build_unary(ctx->comp, HLO_OP_EXP, x, &e));
  T(hlo_build_unary(ctx->comp, HLO_OP_EXP, nx, &en));
  T(hlo_build_binary(ctx->comp, combine, e, en, &s));
  T(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, s, 0.5, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}
static kiln_status lower_Sinh(op_lower_ctx *ctx) { return hyperbolic(ctx, HLO_OP_SUBTRACT); }
static kiln_status lower_Cosh(op_lower_ctx *ctx) { return hyperbolic(ctx, HLO_OP_ADD); }

/* asinh(x) = sign(x) * log(|x| + sqrt(x^2 + 1)), odd by construction. */
static kiln_status lower_Asinh(op_lower_ctx *ctx) {
  hlo_instr *x, *ax, *x2, *p1, *sq, *s, *l, *sg, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_ABS, x, &ax));
  T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, &x2));
  T(oplib_binary_scalar(ctx->comp, HLO_OP_ADD, x2, 1, &p1));
  T(hlo_build_unary(ctx->comp, HLO_OP_SQRT, p1, &sq));
  T(hlo_build_binary(ctx->comp, HLO_OP_ADD, ax, sq, &s));
  T(hlo_build_unary(ctx->comp, HLO_OP_LOG, s, &l));
  T(hlo_build_unary(ctx->comp, HLO_OP_SIGN, x, &sg));
  T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, sg, l, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* acosh(x) = log(x + sqrt(x^2 - 1)) */
static kiln_status lower_Acosh(op_lower_ctx *ctx) {
  hlo_instr *x, *x2, *m1, *sq, *s, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_binary(ctx->comp, HLO_OP_MULTIPLY, x, x, &x2));
  T(oplib_binary_scalar(ctx->comp, HLO_OP_SUBTRACT, x2, 1, &m1));
  T(hlo_build_unary(ctx->comp, HLO_OP_SQRT, m1, &sq));
  T(hlo_build_binary(ctx->comp, HLO_OP_ADD, x, sq, &s));
  T(hlo_build_unary(ctx->comp, HLO_OP_LOG, s, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* atanh(x) = 0.5 * (log1p(x) - log1p(-x)) */
static kiln_status lower_Atanh(op_lower_ctx *ctx) {
  hlo_instr *x, *nx, *a, *b, *d, *r;
  TRY(get1(ctx, &x));
  T(hlo_build_unary(ctx->comp, HLO_OP_NEGATE, x, &nx));
  T(hlo_build_unary(ctx->comp, HLO_OP_LOG1P, x, &a));
  T(hlo_build_unary(ctx->comp, HLO_OP_LOG1P, nx, &b));
  T(hlo_build_binary(ctx->comp, HLO_OP_SUBTRACT, a, b, &d));
  T(oplib_binary_scalar(ctx->comp, HLO_OP_MULTIPLY, d, 0.5, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------- conversions ---- */

static kiln_status lower_Cast(op_lower_ctx *ctx) {
  hlo_instr *x, *r;
  hlo_type dst;
  TRY(get1(ctx, &x));
  if (!graph_node_attr(ctx->node, "DstT"))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute DstT is missing");
  TRY(tf_attr_hlo_type(ctx->node, "DstT", HLO_F32, &dst));
  T(oplib_convert(ctx->comp, x, dst, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* --------------------------------------------------------------- selection ---- */

/* Select (v1): condition of t's shape, a scalar, or a vector selecting whole rows of t
 * (along its first dimension). */
static kiln_status lower_Select(op_lower_ctx *ctx) {
  hlo_instr *cond, *t, *e, *r;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &cond));
  TRY(tf_input(ctx, 1, &t));
  TRY(tf_input(ctx, 2, &e));
  if (cond->shape.rank == 1 && t->shape.rank > 1) {
    if (cond->shape.dims[0] != t->shape.dims[0])
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "condition has %lld entries, then-value has %lld rows",
                      (long long)cond->shape.dims[0], (long long)t->shape.dims[0]);
    T(hlo_build_broadcast(ctx->comp, cond, t->shape.rank, t->shape.dims, (int64_t[]){0}, &cond));
  } else if (cond->shape.rank != 0 && !shape_same_dims(&cond->shape, &t->shape)) {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "condition and then-value shapes differ");
  }
  T(oplib_select(ctx->comp, cond, t, e, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_SelectV2(op_lower_ctx *ctx) {
  hlo_instr *cond, *t, *e, *r;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &cond));
  TRY(tf_input(ctx, 1, &t));
  TRY(tf_input(ctx, 2, &e));
  T(oplib_select(ctx->comp, cond, t, e, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_ClipByValue(op_lower_ctx *ctx) {
  hlo_instr *x, *lo, *hi, *m, *r;
  TRY(tf_check_inputs(ctx, 3, 3));
  TRY(tf_input(ctx, 0, &x));
  TRY(tf_input(ctx, 1, &lo));
  TRY(tf_input(ctx, 2, &hi));
  T(oplib_binary(ctx->comp, HLO_OP_MAXIMUM, x, lo, &m));
  T(oplib_binary(ctx->comp, HLO_OP_MINIMUM, m, hi, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

static kiln_status lower_AddN(op_lower_ctx *ctx) {
  hlo_instr *acc, *x;
  TRY(tf_check_inputs(ctx, 1, -1));
  TRY(tf_input(ctx, 0, &acc));
  for (int i = 1; i < ctx->n_inputs; i++) {
    TRY(tf_input(ctx, i, &x));
    T(oplib_binary(ctx->comp, HLO_OP_ADD, acc, x, &acc));
  }
  tf_set_output(ctx, 0, acc);
  return NULL;
}

kiln_status tf_bias_add(hlo_computation *c, hlo_instr *x, hlo_instr *bias, bool channels_first, hlo_instr **out) {
  tf_shape_buf b1, b2;
  if (x->shape.rank < 2 || bias->shape.rank != 1)
    return ERR_INVALID("BiasAdd: value %s must be at least 2-D and bias %s 1-D", tf_shape_text(&x->shape, &b1),
                       tf_shape_text(&bias->shape, &b2));
  int64_t dim = channels_first ? 1 : x->shape.rank - 1;
  if (x->shape.dims[dim] != bias->shape.dims[0])
    return ERR_INVALID("BiasAdd: bias has %lld entries, value has %lld channels", (long long)bias->shape.dims[0],
                       (long long)x->shape.dims[dim]);
  hlo_instr *b;
  TRY(hlo_build_broadcast(c, bias, x->shape.rank, x->shape.dims, &dim, &b));
  return hlo_build_binary(c, HLO_OP_ADD, x, b, out);
}

static kiln_status lower_BiasAdd(op_lower_ctx *ctx) {
  hlo_instr *x, *b, *r;
  bool nchw = false;
  TRY(get2(ctx, &x, &b));
  TRY(tf_data_format(ctx->node, &nchw));
  T(tf_bias_add(ctx->comp, x, b, nchw, &r));
  tf_set_output(ctx, 0, r);
  return NULL;
}

/* ------------------------------------------------------------------ table ---- */

#define OP(NAME, FN) {"tf." NAME, 0, 0, lower_##FN, NULL}

static const op_def tf_math_defs[] = {
    OP("Abs", Abs),
    OP("Acos", Acos),
    OP("Acosh", Acosh),
    OP("Add", Add),
    OP("AddN", AddN),
    OP("AddV2", Add),
    OP("ApproximateEqual", ApproximateEqual),
    OP("Asin", Asin),
    OP("Asinh", Asinh),
    OP("Atan", Atan),
    OP("Atan2", Atan2),
    OP("Atanh", Atanh),
    OP("BiasAdd", BiasAdd),
    OP("BiasAddV1", BiasAdd),
    OP("BitwiseAnd", BitwiseAnd),
    OP("BitwiseOr", BitwiseOr),
    OP("BitwiseXor", BitwiseXor),
    OP("Cast", Cast),
    OP("Ceil", Ceil),
    OP("ClipByValue", ClipByValue),
    OP("Cos", Cos),
    OP("Cosh", Cosh),
    OP("Div", Div),
    OP("DivNoNan", DivNoNan),
    OP("Elu", activation),
    OP("Equal", Equal),
    OP("Erf", Erf),
    OP("Erfc", Erfc),
    OP("Exp", Exp),
    OP("Expm1", Expm1),
    OP("Floor", Floor),
    OP("FloorDiv", FloorDiv),
    OP("FloorMod", FloorMod),
    OP("Greater", Greater),
    OP("GreaterEqual", GreaterEqual),
    OP("Inv", Reciprocal),
    OP("Invert", Invert),
    OP("IsFinite", IsFinite),
    OP("IsInf", IsInf),
    OP("IsNan", IsNan),
    OP("LeakyRelu", activation),
    OP("LeftShift", LeftShift),
    OP("Less", Less),
    OP("LessEqual", LessEqual),
    OP("Log", Log),
    OP("Log1p", Log1p),
    OP("LogicalAnd", LogicalAnd),
    OP("LogicalNot", LogicalNot),
    OP("LogicalOr", LogicalOr),
    OP("Maximum", Maximum),
    OP("Minimum", Minimum),
    OP("Mod", TruncateMod),
    OP("Mul", Mul),
    OP("MulNoNan", MulNoNan),
    OP("Neg", Neg),
    OP("NotEqual", NotEqual),
    OP("Pow", Pow),
    OP("RealDiv", RealDiv),
    OP("Reciprocal", Reciprocal),
    OP("Relu", activation),
    OP("Relu6", activation),
    OP("RightShift", RightShift),
    OP("Rint", Round),
    OP("Round", Round),
    OP("Rsqrt", Rsqrt),
    OP("Select", Select),
    OP("SelectV2", SelectV2),
    OP("Selu", activation),
    OP("Sigmoid", Sigmoid),
    OP("Sign", Sign),
    OP("Sin", Sin),
    OP("Sinh", Sinh),
    OP("Softplus", activation),
    OP("Softsign", Softsign),
    OP("Sqrt", Sqrt),
    OP("Square", Square),
    OP("SquaredDifference", SquaredDifference),
    OP("Sub", Sub),
    OP("Tan", Tan),
    OP("Tanh", Tanh),
    OP("TruncateDiv", TruncateDiv),
    OP("TruncateMod", TruncateMod),
    OP("Xdivy", Xdivy),
    OP("Xlogy", Xlogy),
};

const op_table tf_math_table = {"tf.math", (int)(sizeof tf_math_defs / sizeof tf_math_defs[0]), tf_math_defs};
