/* One loaded model run from many threads at once (the public API's thread-safety
 * promise, include/kiln/kiln.h): 8 threads x 200 runs of a convolution network and of
 * a transformer block, each result compared bit for bit with a single-threaded run of
 * the same model on the same input. Different threads feed different inputs (one of
 * four), so a run that read another run's buffers would show up as a mismatch. A
 * second part loads models on four threads at once (lazy registries must be safe).
 * `make tsan` runs this test under ThreadSanitizer (label tsan). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kiln/kiln.h"

#define N_THREADS 8
#define N_RUNS 200
#define N_INPUTS 4

typedef struct model_case {
  const char *path;
  const char *input;
  int rank;
  int64_t dims[4];
  int64_t n;
  kiln_model *model;
  float *inputs[N_INPUTS];
  kiln_tensor *expected[N_INPUTS];
} model_case;

typedef struct worker {
  model_case *mc;
  int id;
  int mismatches;
  int errors;
  char first_error[512];
} worker;

static void fill(float *x, int64_t n, unsigned seed) {
  uint32_t s = seed * 2654435761u + 7;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static kiln_value input_of(const model_case *mc, int k) {
  kiln_value v = KILN_VALUE_INIT;
  v.name = mc->input;
  v.dtype = KILN_FLOAT32;
  v.rank = mc->rank;
  v.dims = mc->dims;
  v.data = mc->inputs[k];
  v.byte_size = (size_t)mc->n * sizeof(float);
  return v;
}

static void *work(void *arg) {
  worker *w = arg;
  model_case *mc = w->mc;
  for (int r = 0; r < N_RUNS; r++) {
    int k = (w->id + r) % N_INPUTS;
    kiln_value in = input_of(mc, k);
    kiln_tensor *out = NULL;
    const char *name = NULL;
    kiln_value o = KILN_VALUE_INIT;
    kiln_status s = kiln_model_output(mc->model, 0, &o);
    if (!s) {
      name = o.name;
      s = kiln_model_run(mc->model, NULL, 1, &in, 1, &name, &out);
    }
    if (s) {
      if (!w->errors++) snprintf(w->first_error, sizeof w->first_error, "%s", kiln_status_message(s));
      kiln_status_free(s);
      continue;
    }
    size_t bytes = kiln_tensor_byte_size(out);
    if (bytes != kiln_tensor_byte_size(mc->expected[k]) ||
        memcmp(kiln_tensor_data(out), kiln_tensor_data(mc->expected[k]), bytes) != 0)
      w->mismatches++;
    kiln_tensor_free(out);
  }
  return NULL;
}

static void run_case(model_case *mc) {
  CHECK_OK(kiln_model_load(mc->path, NULL, &mc->model));
  if (!mc->model) return;
  mc->n = 1;
  for (int i = 0; i < mc->rank; i++) mc->n *= mc->dims[i];
  kiln_value o = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_output(mc->model, 0, &o));
  for (int k = 0; k < N_INPUTS; k++) {
    mc->inputs[k] = malloc((size_t)mc->n * sizeof(float));
    fill(mc->inputs[k], mc->n, (unsigned)k + 1);
    kiln_value in = input_of(mc, k);
    CHECK_OK(kiln_model_run(mc->model, NULL, 1, &in, 1, &o.name, &mc->expected[k]));
  }
  worker w[N_THREADS];
  pthread_t t[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].mc = mc;
    w[i].id = i;
    CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
  }
  int mismatches = 0, errors = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(t[i], NULL);
    mismatches += w[i].mismatches;
    errors += w[i].errors;
    if (w[i].errors) fprintf(stderr, "%s thread %d: %s\n", mc->path, i, w[i].first_error);
  }
  if (mismatches || errors) fprintf(stderr, "%s: %d mismatches, %d errors\n", mc->path, mismatches, errors);
  CHECK(mismatches == 0 && errors == 0);
  kiln_model_stats st = KILN_MODEL_STATS_INIT;
  CHECK_OK(kiln_model_get_stats(mc->model, &st));
  CHECK(st.runs == N_INPUTS + N_THREADS * N_RUNS);
  for (int k = 0; k < N_INPUTS; k++) {
    free(mc->inputs[k]);
    kiln_tensor_free(mc->expected[k]);
  }
  kiln_model_free(mc->model);
}

static void test_convnet_runs_from_8_threads_match_single_thread_bitwise(void) {
  model_case mc = {.path = "tests/api/convnet.graph", .input = "image", .rank = 4, .dims = {2, 32, 32, 3}};
  run_case(&mc);
}

static void test_transformer_runs_from_8_threads_match_single_thread_bitwise(void) {
  model_case mc = {.path = "tests/api/transformer.graph", .input = "x", .rank = 3, .dims = {1, 16, 32}};
  run_case(&mc);
}

static void *load_one(void *arg) {
  kiln_model *m = NULL;
  kiln_status s = kiln_model_load((const char *)arg, NULL, &m);
  kiln_model_free(m);
  return s;
}

static void test_models_load_concurrently(void) {
  pthread_t t[4];
  const char *paths[4] = {"tests/api/convnet.graph", "tests/api/transformer.graph", "tests/api/convnet.graph",
                          "tests/api/transformer.graph"};
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, load_one, (void *)paths[i]) == 0);
  for (int i = 0; i < 4; i++) {
    void *s = NULL;
    pthread_join(t[i], &s);
    CHECK_OK((kiln_status)s);
  }
}

TEST_MAIN(TEST(test_models_load_concurrently), TEST(test_convnet_runs_from_8_threads_match_single_thread_bitwise),
          TEST(test_transformer_runs_from_8_threads_match_single_thread_bitwise))
