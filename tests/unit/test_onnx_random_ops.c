/* Tests of src/ops/ops_onnx_random.c on the evaluator (op_case.h). ONNX's conformance
 * suite cannot check random values beyond its seeded Dropout cases, so these tests
 * check the documented generator itself: values equal to numpy's RandomState(seed)
 * (the reference numbers below were printed by numpy 2.4 for the seeds given), the
 * same seed giving the same bits and another seed other bits, shapes, dtypes and
 * ranges, and the distributions over 100k samples within 6 standard errors (a fixed
 * seed makes each check deterministic; 6 sigma makes it hold for any seed in
 * practice). Dropout's kept elements are checked for the exact scale, and bad
 * attributes and inputs for errors naming the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "op_case.h"
#include "hlo/literal.h"

#define N_STAT 100000

enum { ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_BOOL = 9, ONNX_HALF = 10, ONNX_DOUBLE = 11,
       ONNX_BF16 = 16 };

static hlo_literal *scalar_lit(hlo_type t, double v) {
  hlo_shape s = shape_scalar(t);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  literal_set_f64(l, 0, v);
  return l;
}

static hlo_literal *filled(hlo_type t, int rank, const int64_t *dims, double v) {
  hlo_shape s = shape_make(t, rank, dims);
  hlo_literal *l;
  if (literal_create(&s, &l)) abort();
  for (int64_t i = 0; i < l->n; i++) literal_set_f64(l, i, v);
  return l;
}

/* Runs a RandomUniform / RandomNormal node of the given shape, dtype (0: absent) and
 * seed (NAN: absent); returns its output (caller frees) or NULL after a failed CHECK. */
static hlo_literal *generate(const char *op, int rank, const int64_t *dims, int dtype, float seed, float a,
                             float b) {
  tcase t;
  tc_init(&t, op, 22);
  graph_node_set_attr_ints(t.node, "shape", rank, dims);
  if (dtype) graph_node_set_attr_int(t.node, "dtype", dtype);
  if (!isnan(seed)) graph_node_set_attr_float(t.node, "seed", seed);
  bool normal = strcmp(op, "RandomNormal") == 0;
  graph_node_set_attr_float(t.node, normal ? "mean" : "low", a);
  graph_node_set_attr_float(t.node, normal ? "scale" : "high", b);
  kiln_status s = tc_run(&t);
  hlo_literal *out = NULL;
  if (s) {
    check_fail(__FILE__, __LINE__, op, kiln_status_message(s));
    kiln_status_free(s);
  } else {
    out = literal_clone(t.out[0]);
  }
  tc_free(&t);
  return out;
}

static void moments(const hlo_literal *l, double *mean, double *var) {
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < l->n; i++) s += literal_get_f64(l, i);
  *mean = s / (double)l->n;
  for (int64_t i = 0; i < l->n; i++) {
    double d = literal_get_f64(l, i) - *mean;
    s2 += d * d;
  }
  *var = s2 / (double)(l->n - 1);
}

static void test_values_are_numpy_random_state_streams(void) {
  /* numpy.random.RandomState(0).random_sample(4), RandomState(42).random_sample(3),
   * RandomState(0).randn(5), RandomState(7).randn(3) */
  const double u0[4] = {0.5488135039273248, 0.7151893663724195, 0.6027633760716439, 0.5448831829968969};
  const double u42[3] = {0.3745401188473625, 0.9507143064099162, 0.7319939418114051};
  const double z0[5] = {1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458,
                        1.8675579901499675};
  const double z7[3] = {1.690525703800356, -0.4659373705408328, 0.0328201636785844};
  hlo_literal *l = generate("RandomUniform", 1, (int64_t[]){4}, ONNX_DOUBLE, 0, 0, 1);
  CHECK(l && l->shape.type == HLO_F64);
  for (int i = 0; l && i < 4; i++) CHECK(((double *)l->data)[i] == u0[i]);
  literal_free(l);
  l = generate("RandomUniform", 1, (int64_t[]){3}, ONNX_DOUBLE, 42, 0, 1);
  for (int i = 0; l && i < 3; i++) CHECK(((double *)l->data)[i] == u42[i]);
  literal_free(l);
  l = generate("RandomUniform", 1, (int64_t[]){4}, ONNX_FLOAT, 0, 0, 1); /* one rounding to f32 */
  CHECK(l && l->shape.type == HLO_F32);
  for (int i = 0; l && i < 4; i++) CHECK(((float *)l->data)[i] == (float)u0[i]);
  literal_free(l);
  l = generate("RandomUniform", 1, (int64_t[]){3}, ONNX_DOUBLE, 42, -1, 3); /* low + (high - low) u */
  for (int i = 0; l && i < 3; i++) CHECK(((double *)l->data)[i] == -1.0 + 4.0 * u42[i]);
  literal_free(l);
  /* Normals go through log and sqrt: equal to numpy's up to the C library's last bit. */
  l = generate("RandomNormal", 1, (int64_t[]){5}, ONNX_DOUBLE, 0, 0, 1);
  for (int i = 0; l && i < 5; i++) CHECK(fabs(((double *)l->data)[i] - z0[i]) <= 1e-14 * fabs(z0[i]));
  literal_free(l);
  l = generate("RandomNormal", 1, (int64_t[]){3}, ONNX_DOUBLE, 7, 10, 0.5f);
  for (int i = 0; l && i < 3; i++) CHECK(fabs(((double *)l->data)[i] - (10 + 0.5 * z7[i])) <= 1e-14 * 10);
  literal_free(l);
}

static void test_same_seed_same_values_other_seed_other_values(void) {
  const char *ops[2] = {"RandomUniform", "RandomNormal"};
  for (int k = 0; k < 2; k++) {
    int64_t dims[2] = {16, 16};
    hlo_literal *a = generate(ops[k], 2, dims, ONNX_FLOAT, 7, 0, 1);
    hlo_literal *b = generate(ops[k], 2, dims, ONNX_FLOAT, 7, 0, 1);
    hlo_literal *c = generate(ops[k], 2, dims, ONNX_FLOAT, 8, 0, 1);
    hlo_literal *d = generate(ops[k], 2, dims, ONNX_FLOAT, NAN, 0, 1); /* no seed */
    hlo_literal *e = generate(ops[k], 2, dims, ONNX_FLOAT, 0, 0, 1);
    CHECK(a && b && c && d && e);
    if (a && b && c && d && e) {
      CHECK(literal_equal(a, b));
      int same = 0;
      for (int64_t i = 0; i < a->n; i++) same += ((float *)a->data)[i] == ((float *)c->data)[i];
      CHECK(same < 4); /* 256 values of other streams */
      CHECK(literal_equal(d, e)); /* the documented default: seed 0 */
    }
    literal_free(a), literal_free(b), literal_free(c), literal_free(d), literal_free(e);
  }
}

static void test_uniform_dtypes_shape_range_and_moments(void) {
  const int dtypes[4] = {ONNX_HALF, ONNX_BF16, ONNX_FLOAT, ONNX_DOUBLE};
  const hlo_type types[4] = {HLO_F16, HLO_BF16, HLO_F32, HLO_F64};
  const double lo = -2, hi = 3, n = N_STAT;
  for (int k = 0; k < 4; k++) {
    int64_t dims[3] = {2, 5, N_STAT / 10};
    hlo_literal *l = generate("RandomUniform", 3, dims, dtypes[k], 3, (float)lo, (float)hi);
    CHECK(l && l->shape.type == types[k] && l->shape.rank == 3 && l->n == N_STAT);
    if (!l) continue;
    CHECK(l->shape.dims[0] == 2 && l->shape.dims[1] == 5 && l->shape.dims[2] == N_STAT / 10);
    int outside = 0;
    for (int64_t i = 0; i < l->n; i++) {
      double v = literal_get_f64(l, i);
      outside += !(v >= lo && v < hi);
    }
    CHECK(outside == 0);
    double mean, var, w = hi - lo;
    moments(l, &mean, &var);
    CHECK(fabs(mean - (lo + hi) / 2) < 6 * w / sqrt(12 * n));
    /* the sample variance's standard error: sqrt((mu4 - sigma^4) / n), mu4 = w^4 / 80 */
    CHECK(fabs(var - w * w / 12) < 6 * w * w * sqrt((1.0 / 80 - 1.0 / 144) / n));
    literal_free(l);
  }
}

static void test_uniform_values_rounding_up_to_high_stay_below_it(void) {
  /* In f16, u > 1 - 2^-12 rounds to 1.0: about 24 of 100k draws. They become
   * 1 - 2^-11, the largest f16 below 1. */
  hlo_literal *l = generate("RandomUniform", 1, (int64_t[]){N_STAT}, ONNX_HALF, 1, 0, 1);
  CHECK(l != NULL);
  if (!l) return;
  int at_top = 0, at_or_above_high = 0;
  for (int64_t i = 0; i < l->n; i++) {
    double v = literal_get_f64(l, i);
    at_top += v == 1.0 - 0x1p-11;
    at_or_above_high += v >= 1.0;
  }
  CHECK(at_or_above_high == 0);
  CHECK(at_top > 0);
  literal_free(l);
}

static void test_normal_moments(void) {
  const double mean0 = 1.5, scale = 2, n = N_STAT;
  const int dtypes[2] = {ONNX_FLOAT, ONNX_DOUBLE};
  for (int k = 0; k < 2; k++) {
    hlo_literal *l = generate("RandomNormal", 1, (int64_t[]){N_STAT}, dtypes[k], 11, (float)mean0, (float)scale);
    CHECK(l != NULL);
    if (!l) continue;
    double mean, var;
    moments(l, &mean, &var);
    CHECK(fabs(mean - mean0) < 6 * scale / sqrt(n));
    CHECK(fabs(var - scale * scale) < 6 * scale * scale * sqrt(2 / n));
    literal_free(l);
  }
}

static void test_like_ops_take_shape_and_type_from_their_input(void) {
  int64_t dims[2] = {3, 4};
  tcase t;
  tc_init(&t, "RandomUniformLike", 22);
  graph_node_set_attr_float(t.node, "seed", 42);
  tc_input(&t, filled(HLO_F64, 2, dims, 0), false);
  RUN(&t);
  hlo_literal *ref = generate("RandomUniform", 2, dims, ONNX_DOUBLE, 42, 0, 1);
  CHECK(t.out[0] && ref && literal_equal(t.out[0], ref)); /* element i takes u_i either way */
  literal_free(ref);
  tc_free(&t);

  tc_init(&t, "RandomNormalLike", 22);
  graph_node_set_attr_float(t.node, "seed", 42);
  tc_input(&t, filled(HLO_F16, 2, dims, 0), false);
  RUN(&t);
  CHECK(t.out[0] && t.out[0]->shape.type == HLO_F16 && t.out[0]->n == 12);
  tc_free(&t);

  tc_init(&t, "RandomUniformLike", 22); /* an int input with a dtype saying float */
  graph_node_set_attr_int(t.node, "dtype", ONNX_FLOAT);
  tc_input(&t, filled(HLO_S32, 2, dims, 0), false);
  RUN(&t);
  CHECK(t.out[0] && t.out[0]->shape.type == HLO_F32 && t.out[0]->shape.rank == 2);
  tc_free(&t);
}

static void test_bernoulli_frequency_extremes_and_types(void) {
  const double n = N_STAT / 2;
  tcase t;
  tc_init(&t, "Bernoulli", 22);
  graph_node_set_attr_float(t.node, "seed", 5);
  hlo_literal *p = filled(HLO_F32, 1, (int64_t[]){N_STAT}, 0.3);
  for (int64_t i = N_STAT / 2; i < N_STAT; i++) literal_set_f64(p, i, 0.85);
  tc_input(&t, p, false);
  RUN(&t);
  hlo_literal *y = t.out[0];
  CHECK(y && y->shape.type == HLO_F32); /* dtype defaults to the input's */
  if (y) {
    double ones[2] = {0, 0};
    int other = 0;
    for (int64_t i = 0; i < y->n; i++) {
      double v = literal_get_f64(y, i);
      ones[i >= N_STAT / 2] += v;
      other += v != 0 && v != 1;
    }
    CHECK(other == 0);
    CHECK(fabs(ones[0] / n - 0.3) < 6 * sqrt(0.3 * 0.7 / n));
    CHECK(fabs(ones[1] / n - 0.85) < 6 * sqrt(0.85 * 0.15 / n));
  }
  /* element i is u_i < p_i, u_i being RandomUniform's f64 value for the same seed */
  hlo_literal *u = generate("RandomUniform", 1, (int64_t[]){8}, ONNX_DOUBLE, 5, 0, 1);
  for (int i = 0; u && y && i < 8; i++) CHECK(literal_get_f64(y, i) == (literal_get_f64(u, i) < (double)0.3f));
  literal_free(u);
  tc_free(&t);

  /* p = 0 and p = 1 are exact; dtype bool and int32 */
  const int dtypes[2] = {ONNX_BOOL, ONNX_INT32};
  const hlo_type types[2] = {HLO_PRED, HLO_S32};
  for (int k = 0; k < 2; k++) {
    tc_init(&t, "Bernoulli", 22);
    graph_node_set_attr_int(t.node, "dtype", dtypes[k]);
    hlo_literal *q = filled(HLO_F64, 1, (int64_t[]){2000}, 0);
    for (int64_t i = 1000; i < 2000; i++) literal_set_f64(q, i, 1);
    tc_input(&t, q, false);
    RUN(&t);
    y = t.out[0];
    CHECK(y && y->shape.type == types[k]);
    int wrong = 0;
    for (int64_t i = 0; y && i < y->n; i++) wrong += literal_get_s64(y, i) != (i >= 1000);
    CHECK(wrong == 0);
    tc_free(&t);
  }
}

static void test_multinomial_frequencies_and_zero_probability_classes(void) {
  const int64_t S = N_STAT / 2;
  tcase t;
  tc_init(&t, "Multinomial", 22);
  graph_node_set_attr_int(t.node, "sample_size", S);
  graph_node_set_attr_int(t.node, "dtype", ONNX_INT64);
  graph_node_set_attr_float(t.node, "seed", 9);
  /* unnormalised log-probabilities: row 0 is p = (0.2, 0.5, 0.3) shifted by 4, row 1
   * p = (0, 0.5, 0.5) */
  float x[6] = {(float)log(0.2) + 4, (float)log(0.5) + 4, (float)log(0.3) + 4, -INFINITY, 0, 0};
  tc_input(&t, lit_f32(2, (int64_t[]){2, 3}, x), false);
  RUN(&t);
  hlo_literal *y = t.out[0];
  CHECK(y && y->shape.type == HLO_S64 && y->shape.rank == 2 && y->shape.dims[0] == 2 && y->shape.dims[1] == S);
  if (y) {
    const double p[2][3] = {{0.2, 0.5, 0.3}, {0, 0.5, 0.5}};
    for (int b = 0; b < 2; b++) {
      int64_t count[3] = {0, 0, 0}, bad = 0;
      for (int64_t s = 0; s < S; s++) {
        int64_t k = literal_get_s64(y, b * S + s);
        if (k < 0 || k > 2) bad++;
        else count[k]++;
      }
      CHECK(bad == 0);
      for (int k = 0; k < 3; k++)
        CHECK(fabs((double)count[k] / (double)S - p[b][k]) <= 6 * sqrt(p[b][k] * (1 - p[b][k]) / (double)S));
    }
  }
  tc_free(&t);

  tc_init(&t, "Multinomial", 22); /* dtype defaults to int32, sample_size to 1 */
  tc_input(&t, lit_f32(2, (int64_t[]){1, 2}, (float[]){0, 0}), false);
  RUN(&t);
  CHECK(t.out[0] && t.out[0]->shape.type == HLO_S32 && t.out[0]->shape.dims[1] == 1);
  tc_free(&t);
}

/* A Dropout-13 node over x with constant ratio and training_mode. */
static void dropout_case(tcase *t, hlo_literal *x, double ratio, bool training, int64_t seed) {
  tc_init(t, "Dropout", 13);
  if (seed >= 0) graph_node_set_attr_int(t->node, "seed", seed);
  tc_input(t, x, false);
  tc_input(t, scalar_lit(HLO_F32, ratio), true);
  tc_input(t, scalar_lit(HLO_PRED, training), true);
  t->n_out = 2;
}

static void test_dropout_training_mask_ratio_and_exact_scale(void) {
  const double n = N_STAT;
  const float ratio = 0.3f;
  hlo_literal *x = filled(HLO_F32, 1, (int64_t[]){N_STAT}, 0);
  for (int64_t i = 0; i < N_STAT; i++) literal_set_f64(x, i, 1.0 + (double)i * 1e-3);
  tcase t;
  dropout_case(&t, x, ratio, true, 5);
  RUN(&t);
  hlo_literal *y = t.out[0], *mask = t.out[1];
  CHECK(y && mask && y->shape.type == HLO_F32 && mask->shape.type == HLO_PRED && mask->n == N_STAT);
  if (y && mask) {
    const float scale = (float)(1.0 / (1.0 - (double)ratio));
    int64_t kept = 0, wrong = 0;
    for (int64_t i = 0; i < N_STAT; i++) {
      float xv = ((float *)x->data)[i], yv = ((float *)y->data)[i];
      if (((uint8_t *)mask->data)[i]) {
        kept++;
        wrong += yv != xv * scale;
      } else {
        wrong += yv != 0;
      }
    }
    CHECK(wrong == 0);
    CHECK(fabs((double)kept / n - (1 - ratio)) < 6 * sqrt(ratio * (1 - ratio) / n));
  }
  tc_free(&t);

  /* ONNX's test_training_dropout_mask: seed 0, ratio 0.75, mask = RandomState(0)
   * .uniform(0, 1, 60) >= 0.75, as numpy printed it */
  const char *expect = "000000011010010001111101000100010000001000000000000010000000";
  int64_t dims[3] = {3, 4, 5};
  dropout_case(&t, filled(HLO_F32, 3, dims, 1), 0.75, true, 0);
  RUN(&t);
  mask = t.out[1];
  for (int i = 0; mask && i < 60; i++) CHECK(((uint8_t *)mask->data)[i] == (expect[i] == '1'));
  for (int i = 0; t.out[0] && i < 60; i++) CHECK(((float *)t.out[0]->data)[i] == (expect[i] == '1' ? 4.0f : 0.0f));
  tc_free(&t);
}

static void test_dropout_identity_at_inference_and_ratio_zero(void) {
  int64_t dims[2] = {4, 5};
  for (int k = 0; k < 2; k++) {
    hlo_literal *x = filled(HLO_F32, 2, dims, 2.5);
    tcase t;
    dropout_case(&t, x, k == 0 ? 0.5 : 0.0, k == 1, 3); /* inference; training with ratio 0 */
    RUN(&t);
    CHECK(t.out[0] && literal_equal(t.out[0], x));
    int64_t ones = 0;
    for (int64_t i = 0; t.out[1] && i < t.out[1]->n; i++) ones += literal_get_s64(t.out[1], i);
    CHECK(t.out[1] && t.out[1]->shape.type == HLO_PRED && ones == 20);
    tc_free(&t);
  }
  /* Dropout-7's mask has the input's type */
  tcase t;
  tc_init(&t, "Dropout", 7);
  graph_node_set_attr_float(t.node, "ratio", 0.2f);
  tc_input(&t, filled(HLO_F32, 2, dims, 1), false);
  t.n_out = 2;
  RUN(&t);
  CHECK(t.out[1] && t.out[1]->shape.type == HLO_F32 && literal_get_f64(t.out[1], 7) == 1.0);
  tc_free(&t);
}

/* Runs a node expected to fail; the error must contain needle. */
static void expect_error(tcase *t, const char *needle) {
  CHECK_ERR(tc_run(t), needle);
  tc_free(t);
}

static void test_bad_attributes_and_inputs_name_the_node(void) {
  tcase t;
  tc_init(&t, "RandomUniform", 22);
  expect_error(&t, "node n (onnx.RandomUniform): attribute shape is required");

  tc_init(&t, "RandomNormal", 22);
  graph_node_set_attr_ints(t.node, "shape", 1, (int64_t[]){4});
  graph_node_set_attr_int(t.node, "dtype", ONNX_INT32);
  expect_error(&t, "node n (onnx.RandomNormal): dtype must be float16, bfloat16, float or double, got int32");

  tc_init(&t, "RandomUniform", 22);
  graph_node_set_attr_ints(t.node, "shape", 2, (int64_t[]){4, -1});
  expect_error(&t, "shape has a negative dimension");

  tc_init(&t, "RandomUniform", 22);
  graph_node_set_attr_ints(t.node, "shape", 1, (int64_t[]){4});
  graph_node_set_attr_float(t.node, "low", 2);
  graph_node_set_attr_float(t.node, "high", 1);
  expect_error(&t, "node n (onnx.RandomUniform): need finite low <= high, got low 2, high 1");

  tc_init(&t, "RandomUniform", 22);
  graph_node_set_attr_ints(t.node, "shape", 1, (int64_t[]){4});
  graph_node_set_attr_float(t.node, "seed", INFINITY);
  expect_error(&t, "node n (onnx.RandomUniform): seed must be finite");

  tc_init(&t, "RandomUniformLike", 22);
  tc_input(&t, filled(HLO_S64, 1, (int64_t[]){3}, 0), false);
  expect_error(&t, "node n (onnx.RandomUniformLike): the input is s64, so dtype must say");

  tc_init(&t, "Bernoulli", 22);
  tc_input(&t, filled(HLO_S32, 1, (int64_t[]){3}, 0), false);
  expect_error(&t, "node n (onnx.Bernoulli): input must hold floating-point probabilities");

  tc_init(&t, "Multinomial", 22);
  tc_input(&t, filled(HLO_F32, 1, (int64_t[]){3}, 0), false);
  expect_error(&t, "node n (onnx.Multinomial): input must be a floating-point [batch, classes] matrix");

  tc_init(&t, "Multinomial", 22);
  graph_node_set_attr_int(t.node, "dtype", ONNX_FLOAT);
  tc_input(&t, filled(HLO_F32, 2, (int64_t[]){1, 3}, 0), false);
  expect_error(&t, "dtype must be int32 or int64, got float");

  tc_init(&t, "Multinomial", 22);
  graph_node_set_attr_int(t.node, "sample_size", 0);
  tc_input(&t, filled(HLO_F32, 2, (int64_t[]){1, 3}, 0), false);
  expect_error(&t, "sample_size must be >= 1, got 0");

  dropout_case(&t, filled(HLO_F32, 1, (int64_t[]){3}, 1), 1.0, true, 0);
  expect_error(&t, "node n (onnx.Dropout): ratio must be in [0, 1) in training mode, got 1");
}

TEST_MAIN(TEST(test_values_are_numpy_random_state_streams), TEST(test_same_seed_same_values_other_seed_other_values),
          TEST(test_uniform_dtypes_shape_range_and_moments),
          TEST(test_uniform_values_rounding_up_to_high_stay_below_it), TEST(test_normal_moments),
          TEST(test_like_ops_take_shape_and_type_from_their_input),
          TEST(test_bernoulli_frequency_extremes_and_types),
          TEST(test_multinomial_frequencies_and_zero_probability_classes),
          TEST(test_dropout_training_mask_ratio_and_exact_scale),
          TEST(test_dropout_identity_at_inference_and_ratio_zero),
          TEST(test_bad_attributes_and_inputs_name_the_node))
