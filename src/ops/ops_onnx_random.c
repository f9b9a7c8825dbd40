/* ONNX random ops: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike,
 * Bernoulli, Multinomial and Dropout (whose training mode draws a mask), lowered to HLO.
 *
 * The generator is numpy's legacy RandomState(seed), which onnx's reference
 * implementation (onnx.reference) and ONNX's own Dropout test data use: MT19937 seeded
 * by init_genrand(seed), each uniform u in [0, 1) built from two 32-bit outputs a, b as
 * ((a >> 5) * 2^26 + (b >> 6)) / 2^53 (53 random mantissa bits, numpy's random_sample),
 * each normal from numpy's legacy polar Box-Muller (pairs of 2u-1 rejected outside the
 * unit disc; the second value of a pair is the next sample). Element i of an output, in
 * row-major order, takes the stream's i-th value: u_i for RandomUniform
 * (low + (high - low) * u_i in double, rounded once to dtype; a value that rounds up to
 * high becomes the largest value of dtype below it, so outputs lie in [low, high)),
 * the i-th normal for RandomNormal (mean + scale * z_i, rounded once), u_i < p_i for
 * Bernoulli, u_i >= ratio for Dropout's keep mask (numpy's expression, so ONNX's
 * training-Dropout cases match bit for bit) and u_(b*S+s) for Multinomial's sample s
 * of row b (inverse CDF: the number of classes whose running sum of
 * exp(logit - max) is <= u * total, all in f64). With seed attribute s,
 * RandomState(seed) takes trunc(s) mod 2^32, so every seed numpy accepts
 * (0..2^32-1) gives numpy's stream exactly; a NaN seed counts as absent (as in
 * onnx.reference). Without a seed ONNX leaves the values unspecified; kiln uses seed 0,
 * deterministic run after run: a per-node default could not work, because the executor
 * shares one compiled module between nodes of equal op, attributes and input shapes
 * (src/exec/op_runner.c), so two seedless nodes of one shape give equal values. The
 * stream is sequential, so the values are drawn on the host at compile time (seed and
 * shapes are compile-time facts) into constants -- the uniforms for Bernoulli and
 * Multinomial, whose probabilities arrive at run time, the finished values otherwise --
 * and every backend runs them; the ops are therefore pure functions of their inputs and
 * attributes and carry no OP_RNG/OP_STATEFUL trait (they cluster and cache like any
 * op). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "hlo/literal.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

/* ------------------------------------------------------------ generator ---- */

#define MT_N 624
#define MT_M 397

typedef struct mt19937 {
  uint32_t key[MT_N];
  int pos;
  bool has_gauss; /* the polar method makes normals in pairs */
  double gauss;
} mt19937;

static void mt_seed(mt19937 *s, uint32_t seed) {
  for (int i = 0; i < MT_N; i++) {
    s->key[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
  }
  s->pos = MT_N;
  s->has_gauss = false;
  s->gauss = 0;
}

static uint32_t mt_next32(mt19937 *s) {
  if (s->pos == MT_N) { /* regenerate the whole state block */
    for (int i = 0; i < MT_N; i++) {
      uint32_t y = (s->key[i] & 0x80000000u) | (s->key[(i + 1) % MT_N] & 0x7fffffffu);
      s->key[i] = s->key[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    s->pos = 0;
  }
  uint32_t y = s->key[s->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

/* numpy's random_sample: 53 bits, in [0, 1 - 2^-53]. */
static double mt_uniform(mt19937 *s) {
  uint32_t a = mt_next32(s) >> 5, b = mt_next32(s) >> 6;
  return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* numpy's legacy_gauss (RandomState.standard_normal). */
static double mt_gauss(mt19937 *s) {
  if (s->has_gauss) {
    s->has_gauss = false;
    return s->gauss;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * mt_uniform(s) - 1.0;
    x2 = 2.0 * mt_uniform(s) - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = sqrt(-2.0 * log(r2) / r2);
  s->gauss = f * x1;
  s->has_gauss = true;
  return f * x2;
}

/* The node's RandomState seed (see the header comment). Dropout's seed is an int,
 * the others' a float; either kind is read. */
static kiln_status node_seed(const graph_node *node, uint32_t *out) {
  const graph_attr_value *a = graph_node_attr(node, "seed");
  *out = 0;
  if (!a) return NULL;
  if (a->kind == GRAPH_ATTR_INT) {
    *out = (uint32_t)(uint64_t)a->i;
    return NULL;
  }
  if (a->kind != GRAPH_ATTR_FLOAT) return op_error(node, KILN_INVALID_ARGUMENT, "seed must be a number");
  double s = a->f;
  if (isnan(s)) return NULL;
  if (isinf(s)) return op_error(node, KILN_INVALID_ARGUMENT, "seed must be finite, got %g", s);
  double m = fmod(trunc(s), 4294967296.0);
  if (m < 0) m += 4294967296.0;
  *out = (uint32_t)m;
  return NULL;
}

/* An f64 constant of the first n uniforms of the node's stream, shaped (rank, dims). */
static kiln_status uniform_constant(op_lower_ctx *ctx, int rank, const int64_t *dims, hlo_instr **out) {
  uint32_t seed;
  TRY(node_seed(ctx->node, &seed));
  hlo_shape s = shape_make(HLO_F64, rank, dims);
  hlo_literal *lit;
  L(literal_create(&s, &lit));
  mt19937 mt;
  mt_seed(&mt, seed);
  double *v = lit->data;
  for (int64_t i = 0; i < lit->n; i++) v[i] = mt_uniform(&mt);
  L(hlo_build_constant(ctx->comp, lit, out));
  return NULL;
}

/* ------------------------------------------------- RandomUniform / Normal ---- */

static bool is_generator_type(hlo_type t) {
  return t == HLO_F16 || t == HLO_BF16 || t == HLO_F32 || t == HLO_F64;
}

/* The shape and element type of a generator op's output: the `shape` attribute or,
 * for the Like ops, input 0's shape; `dtype`, else float (RandomUniform/Normal) or
 * input 0's type (Like). */
static kiln_status generator_shape(op_lower_ctx *ctx, bool like, hlo_shape *out) {
  int rank = 0;
  int64_t dims[HLO_MAX_RANK];
  hlo_type ty = HLO_F32;
  if (like) {
    hlo_instr *x;
    TRY(onnx_require_input(ctx, 0, &x));
    rank = x->shape.rank;
    memcpy(dims, x->shape.dims, sizeof(int64_t) * (size_t)rank);
    ty = x->shape.type;
  } else {
    bool present;
    TRY(onnx_attr_ints(ctx->node, "shape", dims, HLO_MAX_RANK, &rank, &present));
    if (!present) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "attribute shape is required");
    for (int i = 0; i < rank; i++)
      if (dims[i] < 0)
        return op_error(ctx->node, KILN_INVALID_ARGUMENT, "shape has a negative dimension (%lld at %d)",
                        (long long)dims[i], i);
    int64_t n;
    L(oplib_checked_elements(rank, dims, &n));
  }
  if (graph_node_attr(ctx->node, "dtype")) {
    graph_dtype dt;
    TRY(onnx_attr_dtype(ctx->node, "dtype", &dt));
    if (!graph_dtype_to_hlo(dt, &ty) || !is_generator_type(ty))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dtype must be float16, bfloat16, float or double, got %s",
                      graph_dtype_name(dt));
  } else if (!is_generator_type(ty)) {
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "the input is %s, so dtype must say the (floating-point) output type", hlo_type_name(ty));
  }
  *out = shape_make(ty, rank, dims);
  return NULL;
}

/* Replaces element i (a finite or infinite float) by the next value of its type
 * toward -inf. */
static void step_down(hlo_literal *l, int64_t i) {
  switch (l->shape.type) {
    case HLO_F64: ((double *)l->data)[i] = nextafter(((double *)l->data)[i], -INFINITY); return;
    case HLO_F32: ((float *)l->data)[i] = nextafterf(((float *)l->data)[i], -INFINITY); return;
    default: { /* f16, bf16: sign-magnitude bit patterns */
      uint16_t *b = &((uint16_t *)l->data)[i];
      if (*b == 0) *b = 0x8001; /* +0: the smallest negative subnormal */
      else if (*b & 0x8000) (*b)++;
      else (*b)--;
      return;
    }
  }
}

static kiln_status lower_generator(op_lower_ctx *ctx, bool like, bool normal) {
  hlo_shape s;
  TRY(generator_shape(ctx, like, &s));
  uint32_t seed;
  TRY(node_seed(ctx->node, &seed));
  double a, b; /* low, high or mean, scale */
  if (normal) {
    a = graph_node_attr_float_or(ctx->node, "mean", 0.0f);
    b = graph_node_attr_float_or(ctx->node, "scale", 1.0f);
    if (!isfinite(a) || !isfinite(b))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "mean and scale must be finite, got %g and %g", a, b);
  } else {
    a = graph_node_attr_float_or(ctx->node, "low", 0.0f);
    b = graph_node_attr_float_or(ctx->node, "high", 1.0f);
    if (!(a <= b) || !isfinite(a) || !isfinite(b))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "need finite low <= high, got low %g, high %g", a, b);
  }
  hlo_literal *lit;
  L(literal_create(&s, &lit));
  mt19937 mt;
  mt_seed(&mt, seed);
  if (normal) {
    for (int64_t i = 0; i < lit->n; i++) literal_set_f64(lit, i, a + b * mt_gauss(&mt));
  } else if (lit->n > 0) {
    literal_set_f64(lit, 0, a); /* low as the type rounds it, read back */
    double low_rounded = literal_get_f64(lit, 0);
    for (int64_t i = 0; i < lit->n; i++) {
      literal_set_f64(lit, i, a + (b - a) * mt_uniform(&mt));
      if (literal_get_f64(lit, i) < b || a == b) continue;
      /* Rounded up to high: the largest value of the type below high (its rounding is
       * >= high here, so one step down is below it), never below low's rounding. */
      literal_set_f64(lit, i, b);
      step_down(lit, i);
      if (literal_get_f64(lit, i) < low_rounded) literal_set_f64(lit, i, a);
    }
  }
  hlo_instr *y;
  L(hlo_build_constant(ctx->comp, lit, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

static kiln_status lower_random_uniform(op_lower_ctx *ctx) { return lower_generator(ctx, false, false); }
static kiln_status lower_random_normal(op_lower_ctx *ctx) { return lower_generator(ctx, false, true); }
static kiln_status lower_random_uniform_like(op_lower_ctx *ctx) { return lower_generator(ctx, true, false); }
static kiln_status lower_random_normal_like(op_lower_ctx *ctx) { return lower_generator(ctx, true, true); }

/* -------------------------------------------------------------- Bernoulli ---- */

/* y = convert(u < p): 1 with probability p (p outside [0, 1] acts as clamped; NaN
 * gives 0). The comparison is in f64, where u < 1 always, so p = 1 gives 1. ONNX's
 * function body for Bernoulli writes Greater(u, p), 1 with probability 1 - p; kiln
 * follows the operator's text. */
static kiln_status lower_bernoulli(op_lower_ctx *ctx) {
  hlo_instr *x, *u, *p, *y;
  TRY(onnx_require_input(ctx, 0, &x));
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must hold floating-point probabilities, got %s",
                    hlo_type_name(x->shape.type));
  hlo_type ty = x->shape.type;
  if (graph_node_attr(ctx->node, "dtype")) {
    graph_dtype dt;
    TRY(onnx_attr_dtype(ctx->node, "dtype", &dt));
    if (!graph_dtype_to_hlo(dt, &ty) || !hlo_type_is_array(ty))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dtype %s is not a numeric or bool type",
                      graph_dtype_name(dt));
  }
  TRY(uniform_constant(ctx, x->shape.rank, x->shape.dims, &u));
  L(oplib_convert(ctx->comp, x, HLO_F64, &p));
  L(hlo_build_compare(ctx->comp, HLO_DIR_LT, u, p, &y));
  L(oplib_convert(ctx->comp, y, ty, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* ------------------------------------------------------------ Multinomial ---- */

/* Running sum along axis 1 of a [B, C] value: a reduce-window spanning the axis,
 * padded by C-1 zeros at the start (as CumSum lowers). */
static kiln_status running_sum(hlo_computation *c, hlo_instr *x, hlo_instr **out) {
  hlo_instr *zero;
  TRY(oplib_scalar(c, x->shape.type, 0, &zero));
  oplib_window w;
  memset(&w, 0, sizeof w);
  w.n = 1;
  w.kernel[0] = x->shape.dims[1];
  w.stride[0] = 1;
  w.dilation[0] = 1;
  w.pad_lo[0] = x->shape.dims[1] - 1;
  hlo_window hw = oplib_window_to_hlo(&w, 2, 1);
  hlo_computation *add;
  TRY(hlo_build_scalar_computation(c->module, HLO_OP_ADD, x->shape.type, &add));
  return hlo_build_reduce_window(c, 1, &x, &zero, &hw, add, out);
}

/* Dense inverse CDF (see the header comment): a [B, S, C] comparison, bounded here. In
 * f64, u * total < total (u <= 1 - 2^-53), so the count never reaches a class past the
 * last one of nonzero probability. */
#define MULTINOMIAL_MAX_ELEMENTS ((int64_t)1 << 28)

static kiln_status lower_multinomial(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x;
  TRY(onnx_require_input(ctx, 0, &x));
  if (!hlo_type_is_float(x->shape.type) || x->shape.rank != 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be a floating-point [batch, classes] matrix");
  int64_t B = x->shape.dims[0], C = x->shape.dims[1];
  int64_t S = graph_node_attr_int_or(ctx->node, "sample_size", 1);
  if (S < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "sample_size must be >= 1, got %lld", (long long)S);
  if (C < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "the input has no classes");
  hlo_type ty = HLO_S32;
  if (graph_node_attr(ctx->node, "dtype")) {
    graph_dtype dt;
    TRY(onnx_attr_dtype(ctx->node, "dtype", &dt));
    if (dt != GRAPH_DT_INT32 && dt != GRAPH_DT_INT64)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dtype must be int32 or int64, got %s", graph_dtype_name(dt));
    graph_dtype_to_hlo(dt, &ty);
  }
  if (B > 0 && (S > MULTINOMIAL_MAX_ELEMENTS / B || C > MULTINOMIAL_MAX_ELEMENTS / (B * S)))
    return op_error(ctx->node, KILN_UNIMPLEMENTED,
                    "%lld x %lld samples over %lld classes exceed the dense lowering's %lld comparisons",
                    (long long)B, (long long)S, (long long)C, (long long)MULTINOMIAL_MAX_ELEMENTS);
  hlo_instr *xf, *mx, *e, *cdf, *total, *u, *t, *cdf3, *t3, *le, *y;
  L(oplib_convert(c, x, HLO_F64, &xf));
  int64_t axis1 = 1;
  L(oplib_reduce(c, OPLIB_REDUCE_MAX, xf, 1, &axis1, true, &mx));
  L(oplib_binary(c, HLO_OP_SUBTRACT, xf, mx, &e));
  L(hlo_build_unary(c, HLO_OP_EXP, e, &e));
  L(running_sum(c, e, &cdf));
  L(oplib_slice_axis(c, cdf, 1, C - 1, C, &total)); /* [B, 1] */
  int64_t bs[2] = {B, S}, bsc[3] = {B, S, C};
  TRY(uniform_constant(ctx, 2, bs, &u));
  L(oplib_binary(c, HLO_OP_MULTIPLY, u, total, &t));
  int64_t map_cdf[2] = {0, 2}, map_t[2] = {0, 1};
  L(hlo_build_broadcast(c, cdf, 3, bsc, map_cdf, &cdf3));
  L(hlo_build_broadcast(c, t, 3, bsc, map_t, &t3));
  L(hlo_build_compare(c, HLO_DIR_LE, cdf3, t3, &le));
  L(oplib_convert(c, le, ty, &le));
  int64_t axis2 = 2;
  L(oplib_reduce(c, OPLIB_REDUCE_SUM, le, 1, &axis2, false, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* ---------------------------------------------------------------- Dropout ---- */

/* Dropout: the identity at inference, which is every version before 12 (Dropout-1/6's
 * is_test is not read: exporters of those opsets meant inference) and versions 12+
 * without a true training_mode or with ratio 0 (onnx.reference's rule); the mask output
 * is then all true (bool; of the input's type before Dropout-10). In training mode,
 * mask = u >= ratio and output = x * mask * (1 / (1 - ratio)), the scale rounded once
 * to x's type, so a kept element is exactly x * scale. ratio and training_mode must be
 * compile-time constants. */
static kiln_status lower_dropout(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *y, *mask;
  TRY(onnx_require_input(ctx, 0, &x));
  bool training = false;
  double ratio = 0.5;
  if (ctx->opset >= 12) {
    const graph_tensor *t;
    if (onnx_has_input(ctx, 2)) {
      double tv;
      TRY(onnx_require_const(ctx, 2, "training_mode", &t));
      L(oplib_tensor_scalar(t, "training_mode", &tv));
      training = tv != 0;
    }
    if (onnx_has_input(ctx, 1)) {
      TRY(onnx_require_const(ctx, 1, "ratio", &t));
      L(oplib_tensor_scalar(t, "ratio", &ratio));
    }
  }
  if (!training || ratio == 0) {
    if (ctx->n_outputs > 0) ctx->outputs[0] = x;
    if (ctx->n_outputs > 1) {
      L(oplib_full(c, ctx->opset >= 10 ? HLO_PRED : x->shape.type, 1, x->shape.rank, x->shape.dims, &mask));
      ctx->outputs[1] = mask;
    }
    return NULL;
  }
  if (!(ratio > 0 && ratio < 1))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "ratio must be in [0, 1) in training mode, got %g", ratio);
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "training mode needs a floating-point input, got %s",
                    hlo_type_name(x->shape.type));
  hlo_instr *u, *r, *keep;
  TRY(uniform_constant(ctx, x->shape.rank, x->shape.dims, &u));
  L(oplib_scalar(c, HLO_F64, ratio, &r));
  L(oplib_compare(c, HLO_DIR_GE, u, r, &mask));
  L(oplib_convert(c, mask, x->shape.type, &keep));
  L(hlo_build_binary(c, HLO_OP_MULTIPLY, x, keep, &y));
  L(oplib_binary_scalar(c, HLO_OP_MULTIPLY, y, 1.0 / (1.0 - ratio), &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  if (ctx->n_outputs > 1) ctx->outputs[1] = mask;
  return NULL;
}

static const op_def onnx_random_defs[] = {
    {"onnx.Bernoulli", 0, 0, lower_bernoulli, NULL},
    /* ratio and training_mode: every input past the data may shift down. */
    {"onnx.Dropout", 0, ~(uint64_t)1, lower_dropout, NULL},
    {"onnx.Multinomial", 0, 0, lower_multinomial, NULL},
    {"onnx.RandomNormal", 0, 0, lower_random_normal, NULL},
    {"onnx.RandomNormalLike", 0, 0, lower_random_normal_like, NULL},
    {"onnx.RandomUniform", 0, 0, lower_random_uniform, NULL},
    {"onnx.RandomUniformLike", 0, 0, lower_random_uniform_like, NULL},
};

const op_table onnx_random_ops = {"onnx.random", (int)(sizeof onnx_random_defs / sizeof onnx_random_defs[0]),
                                  onnx_random_defs};
