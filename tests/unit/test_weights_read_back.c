/* A compiled model holds each large weight once: the graph's copy of a weight the cpu
 * compile packed is dropped, read back from the mapped ONNX file when a new input shape
 * compiles the cluster again, and a model file changed on disk since it was loaded is
 * an error naming it, never stale weights (graph/tensor_source.h). The model is written
 * here with protobuf-c: y = relu(x @ W) with x [n, 64] (n symbolic) and W a 64 KiB
 * initializer, the size at which the importer keeps weights in the mapped file. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "graph/tensor_source.h"
#include "import/onnx/onnx_import.h"
#include "kiln/kiln.h"
#include "onnx/onnx.pb-c.h"

enum { K = 64, N = 256 };

static float weight(int i, int j) { return (float)((i * 7 + j * 3) % 11) / 10.0f - 0.5f; }

static Onnx__ValueInfoProto *value_info(const char *name, Onnx__TensorShapeProto__Dimension **dims, size_t rank) {
  static Onnx__TypeProto__Tensor tt[2];
  static Onnx__TensorShapeProto shape[2];
  static Onnx__TypeProto type[2];
  static Onnx__ValueInfoProto vi[2];
  static int next;
  int k = next++ % 2;
  onnx__type_proto__tensor__init(&tt[k]);
  onnx__tensor_shape_proto__init(&shape[k]);
  onnx__type_proto__init(&type[k]);
  onnx__value_info_proto__init(&vi[k]);
  shape[k].n_dim = rank;
  shape[k].dim = dims;
  tt[k].has_elem_type = 1;
  tt[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tt[k].shape = &shape[k];
  type[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type[k].tensor_type = &tt[k];
  vi[k].name = (char *)name;
  vi[k].type = &type[k];
  return &vi[k];
}

/* Writes the model to path; false on an I/O failure. */
static bool write_model(const char *path) {
  static float w[K * N];
  for (int i = 0; i < K; i++)
    for (int j = 0; j < N; j++) w[i * N + j] = weight(i, j);
  Onnx__TensorProto init;
  onnx__tensor_proto__init(&init);
  int64_t wdims[2] = {K, N};
  init.name = "W";
  init.n_dims = 2;
  init.dims = wdims;
  init.has_data_type = 1;
  init.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  init.has_raw_data = 1;
  init.raw_data.len = sizeof w;
  init.raw_data.data = (uint8_t *)w;

  Onnx__NodeProto mm, relu;
  onnx__node_proto__init(&mm);
  onnx__node_proto__init(&relu);
  char *mm_in[] = {"x", "W"}, *mm_out[] = {"h"}, *relu_in[] = {"h"}, *relu_out[] = {"y"};
  mm.name = "mm", mm.op_type = "MatMul", mm.n_input = 2, mm.input = mm_in, mm.n_output = 1, mm.output = mm_out;
  relu.name = "relu", relu.op_type = "Relu", relu.n_input = 1, relu.input = relu_in, relu.n_output = 1;
  relu.output = relu_out;
  Onnx__NodeProto *nodes[] = {&mm, &relu};

  Onnx__TensorShapeProto__Dimension batch, kdim, ndim;
  onnx__tensor_shape_proto__dimension__init(&batch);
  onnx__tensor_shape_proto__dimension__init(&kdim);
  onnx__tensor_shape_proto__dimension__init(&ndim);
  batch.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, batch.dim_param = "n";
  kdim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, kdim.dim_value = K;
  ndim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, ndim.dim_value = N;
  Onnx__TensorShapeProto__Dimension *xd[] = {&batch, &kdim}, *yd[] = {&batch, &ndim};
  Onnx__ValueInfoProto *in[] = {value_info("x", xd, 2)}, *out[] = {value_info("y", yd, 2)};
  Onnx__TensorProto *inits[] = {&init};

  Onnx__GraphProto g;
  onnx__graph_proto__init(&g);
  g.name = "dense";
  g.n_node = 2, g.node = nodes;
  g.n_initializer = 1, g.initializer = inits;
  g.n_input = 1, g.input = in;
  g.n_output = 1, g.output = out;
  Onnx__OperatorSetIdProto opset;
  onnx__operator_set_id_proto__init(&opset);
  opset.domain = "", opset.has_version = 1, opset.version = 17;
  Onnx__OperatorSetIdProto *opsets[] = {&opset};
  Onnx__ModelProto m;
  onnx__model_proto__init(&m);
  m.has_ir_version = 1, m.ir_version = 8;
  m.n_opset_import = 1, m.opset_import = opsets;
  m.graph = &g;

  size_t len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(len);
  if (!buf) return false;
  onnx__model_proto__pack(&m, buf);
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(buf, 1, len, f) == len;
  if (f && fclose(f) != 0) ok = false;
  free(buf);
  return ok;
}

/* Runs the model on an [n, 64] input; checks y against relu(x @ W) in double. */
static kiln_status run_rows(kiln_model *m, int n) {
  float *x = malloc((size_t)n * K * sizeof *x);
  if (!x) abort();
  for (int i = 0; i < n * K; i++) x[i] = (float)((i * 5) % 13) / 13.0f - 0.4f;
  int64_t dims[2] = {n, K};
  kiln_value in = KILN_VALUE_INIT;
  in.name = "x", in.dtype = KILN_FLOAT32, in.rank = 2, in.dims = dims, in.data = x;
  in.byte_size = (size_t)n * K * sizeof *x;
  kiln_tensor *y = NULL;
  kiln_status s = kiln_model_run(m, NULL, 1, &in, 1, NULL, &y);
  if (!s) {
    CHECK(kiln_tensor_rank(y) == 2 && kiln_tensor_dims(y)[0] == n && kiln_tensor_dims(y)[1] == N);
    const float *got = kiln_tensor_data(y);
    double worst = 0;
    for (int r = 0; r < n; r++)
      for (int j = 0; j < N; j++) {
        double acc = 0;
        for (int i = 0; i < K; i++) acc += (double)x[r * K + i] * weight(i, j);
        worst = fmax(worst, fabs(got[r * N + j] - fmax(acc, 0.0)));
      }
    CHECK(worst < 1e-4); /* f32 sums of 64 products of magnitude < 1 */
    kiln_tensor_free(y);
  }
  free(x);
  return s;
}

/* Writes the model as DIR/dense.onnx (dir: a mkdtemp template, path: 128 bytes) and
 * loads it for cpu, through the mapped import however small the file. */
static kiln_model *write_and_load(char *dir, char *path) {
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, 128, "%s/dense.onnx", dir);
  CHECK(write_model(path));
  int64_t saved = onnx_import_lean_min_file;
  onnx_import_lean_min_file = 0; /* a small file takes the mapped path too */
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "device", "cpu"));
  CHECK_OK(kiln_options_set(o, "min_cluster_size", "1")); /* two nodes make a cluster */
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load(path, o, &m));
  kiln_options_free(o);
  onnx_import_lean_min_file = saved;
  return m;
}

static void test_packed_weight_dropped_read_back_and_refused_after_file_change(void) {
  char dir[] = "/tmp/kiln_weights_XXXXXX", path[128];
  kiln_model *m = write_and_load(dir, path);
  if (m) {
    size_t dropped0, loaded0, dropped1, loaded1, dropped2, loaded2;
    tensor_source_stats(&dropped0, &loaded0);
    CHECK_OK(run_rows(m, 2)); /* compiles: W is packed, the graph's copy dropped */
    tensor_source_stats(&dropped1, &loaded1);
    CHECK(dropped1 - dropped0 == sizeof(float) * K * N && loaded1 == loaded0);
    CHECK_OK(run_rows(m, 2)); /* the compiled cluster again: nothing read back */
    /* A new shape runs op by op (reading W back) until it has been asked for often enough
     * to compile (lazy compilation); that compile drops W again. */
    kiln_model_stats st = KILN_MODEL_STATS_INIT;
    for (int i = 0; i < 16 && st.cluster_compiles < 2; i++) {
      CHECK_OK(run_rows(m, 3));
      CHECK_OK(kiln_model_get_stats(m, &st));
    }
    tensor_source_stats(&dropped2, &loaded2);
    CHECK(st.cluster_compiles == 2 && st.cluster_fallback_runs >= 1);
    CHECK(loaded2 - loaded1 == sizeof(float) * K * N && dropped2 - dropped1 == sizeof(float) * K * N);

    /* The file changes on disk (its modification time moves): no stale read back. */
    struct timespec times[2] = {{0, UTIME_OMIT}, {time(NULL) + 10, 0}};
    CHECK(utimensat(AT_FDCWD, path, times, 0) == 0);
    CHECK_ERR(run_rows(m, 5), "dense.onnx changed since it was loaded");
    CHECK_OK(run_rows(m, 3)); /* shapes compiled before still run */
    kiln_model_free(m);
  }
  remove(path);
  rmdir(dir);
}

/* Threads running one model on several shapes at once: compiles drop W while other
 * runs read it back for their op-by-op runs (lazy compilation), each result exact.
 * Under ThreadSanitizer (make tsan) this is the check that drop and read back take the
 * same lock as the references they count. */
typedef struct worker {
  kiln_model *m;
  int first_rows;
  int failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int i = 0; i < 12; i++) {
    kiln_status s = run_rows(w->m, w->first_rows + i % 3);
    if (s) {
      w->failures++;
      kiln_status_free(s);
    }
  }
  return NULL;
}

static void test_concurrent_runs_drop_and_read_back_safely(void) {
  char dir[] = "/tmp/kiln_weights_XXXXXX", path[128];
  kiln_model *m = write_and_load(dir, path);
  if (m) {
    size_t dropped0, loaded0, dropped1, loaded1;
    tensor_source_stats(&dropped0, &loaded0);
    pthread_t t[3];
    worker w[3];
    for (int i = 0; i < 3; i++) {
      w[i] = (worker){m, 1 + 2 * i, 0};
      CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < 3; i++) {
      pthread_join(t[i], NULL);
      CHECK(w[i].failures == 0);
    }
    tensor_source_stats(&dropped1, &loaded1);
    CHECK(dropped1 > dropped0); /* at least one compile dropped W */
    kiln_model_free(m);
  }
  remove(path);
  rmdir(dir);
}

TEST_MAIN(TEST(test_packed_weight_dropped_read_back_and_refused_after_file_change),
          TEST(test_concurrent_runs_drop_and_read_back_safely))
