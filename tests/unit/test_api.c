/* The public C API (include/kiln/kiln.h) as an embedder uses it, and misuses it.
 *
 * Every entry point is called the right way and the wrong way: NULL handles and
 * out-parameters, wrong dtype, shape, byte size or count of inputs, unknown input and
 * output names, truncated model bytes, struct_size too small, an option key or value
 * kiln does not know. Each error must carry the right code and a message naming what
 * was wrong (the input, the output, the key...). Results are checked against the
 * interpreter (the evaluator, kiln's oracle) with a relative tolerance of 1e-4: the cpu
 * backend sums convolution and matmul products in another order and rounds f32 exp in
 * its own polynomial; within one device, repeated runs must agree bit for bit.
 * Models: tests/api/convnet.graph and transformer.graph (weights filled by the graph
 * text form from a fixed seed) and small HLO modules written here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kiln/kiln.h"

#define CONVNET "tests/api/convnet.graph"
#define TRANSFORMER "tests/api/transformer.graph"

static const char add_hlo[] =
    "HloModule add\n"
    "ENTRY main {\n"
    "  a = f32[4] parameter(0)\n"
    "  b = f32[4] parameter(1)\n"
    "  s = f32[4] add(a, b)\n"
    "  m = f32[4] multiply(a, b)\n"
    "  ROOT t = (f32[4], f32[4]) tuple(s, m)\n"
    "}\n";

/* A while loop: the cpu device runs it through the evaluator (one thunk, the rest
 * compiled) with a warning (what the log tests listen for). */
/* A loop whose body doubles its state with a `map`, which the cpu code generator has no
 * rule for: it runs through the evaluator, and compile warns naming it. */
static const char while_hlo[] =
    "HloModule loop\n"
    "add2 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "cond {\n"
    "  cp = (s32[], f32[2]) parameter(0)\n"
    "  ci = s32[] get-tuple-element(cp), index=0\n"
    "  n = s32[] constant(3)\n"
    "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], f32[2]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  bx = f32[2] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  j = s32[] add(i, one)\n"
    "  y = f32[2] map(bx, bx), dimensions={0}, to_apply=add2\n"
    "  ROOT t = (s32[], f32[2]) tuple(j, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[2] parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  init = (s32[], f32[2]) tuple(z, x)\n"
    "  w = (s32[], f32[2]) while(init), condition=cond, body=body\n"
    "  ROOT r = f32[2] get-tuple-element(w), index=1\n"
    "}\n";

static kiln_model *load_with(const char *path, const char *key, const char *value) {
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  if (key) CHECK_OK(kiln_options_set(o, key, value));
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load(path, o, &m));
  kiln_options_free(o);
  return m;
}

static kiln_model *load_hlo(const char *text, const char *device) {
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  if (device) CHECK_OK(kiln_options_set(o, "device", device));
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load_from_memory(text, strlen(text), KILN_FORMAT_HLO, o, &m));
  kiln_options_free(o);
  return m;
}

static void fill_pattern(float *x, int64_t n, unsigned seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((s >> 8) & 0xffff) / 65536.0f;
  }
}

static kiln_value image_value(float *data, int64_t *dims) {
  kiln_value v = KILN_VALUE_INIT;
  v.name = "image";
  v.dtype = KILN_FLOAT32;
  v.rank = 4;
  dims[0] = 2, dims[1] = 32, dims[2] = 32, dims[3] = 3;
  v.dims = dims;
  v.data = data;
  v.byte_size = 2 * 32 * 32 * 3 * sizeof(float);
  return v;
}

static bool close_rel(const float *a, const float *b, int64_t n, double tol) {
  double scale = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)a[i] - b[i]) <= tol * (scale > 0 ? scale : 1))) return false;
  return true;
}

/* ------------------------------------------------------------------ tests ---- */

static void test_version_matches_header_macros(void) {
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH);
  CHECK(strcmp(kiln_version(), want) == 0);
  CHECK(kiln_version_number() == KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH);
}

static void test_status_functions_accept_null(void) {
  CHECK(kiln_status_code(NULL) == KILN_OK);
  CHECK(strcmp(kiln_status_message(NULL), "OK") == 0);
  kiln_status_free(NULL);
  CHECK(strcmp(kiln_code_name(KILN_NOT_FOUND), "NOT_FOUND") == 0);
  CHECK(strcmp(kiln_code_name((kiln_code)99), "UNKNOWN") == 0);
}

static void test_dtype_tables_cover_every_type(void) {
  static const struct {
    kiln_dtype d;
    size_t size;
    const char *name;
  } rows[] = {{KILN_BOOL, 1, "bool"},         {KILN_INT8, 1, "int8"},       {KILN_INT16, 2, "int16"},
              {KILN_INT32, 4, "int32"},       {KILN_INT64, 8, "int64"},     {KILN_UINT8, 1, "uint8"},
              {KILN_UINT16, 2, "uint16"},     {KILN_UINT32, 4, "uint32"},   {KILN_UINT64, 8, "uint64"},
              {KILN_FLOAT16, 2, "float16"},   {KILN_BFLOAT16, 2, "bfloat16"}, {KILN_FLOAT32, 4, "float32"},
              {KILN_FLOAT64, 8, "float64"},   {KILN_COMPLEX64, 8, "complex64"}, {KILN_COMPLEX128, 16, "complex128"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    CHECK(kiln_dtype_size(rows[i].d) == rows[i].size);
    CHECK(strcmp(kiln_dtype_name(rows[i].d), rows[i].name) == 0);
  }
  CHECK(kiln_dtype_size(KILN_DTYPE_INVALID) == 0);
  CHECK(kiln_dtype_size((kiln_dtype)77) == 0);
  CHECK(strcmp(kiln_dtype_name((kiln_dtype)77), "invalid") == 0);
}

static void test_options_set_get_every_key(void) {
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  int n = kiln_options_key_count();
  CHECK(n >= 20);
  for (int i = 0; i < n; i++) {
    const char *help = NULL;
    const char *key = kiln_options_key(i, &help);
    CHECK(key && help && *help);
    const char *v = NULL;
    CHECK_OK(kiln_options_get(o, key, &v));
    CHECK(v != NULL);
  }
  CHECK(kiln_options_key(n, NULL) == NULL);
  const char *v = NULL;
  CHECK_OK(kiln_options_get(o, "jit", &v));
  CHECK(strcmp(v, "auto") == 0);
  CHECK_OK(kiln_options_set(o, "jit", "off"));
  CHECK_OK(kiln_options_get(o, "jit", &v));
  CHECK(strcmp(v, "off") == 0);
  CHECK_OK(kiln_options_set(o, "min_cluster_size", "7"));
  CHECK_OK(kiln_options_get(o, "min_cluster_size", &v));
  CHECK(strcmp(v, "7") == 0);
  CHECK_OK(kiln_options_set(o, "profile", NULL)); /* a bool without value is true */
  CHECK_OK(kiln_options_get(o, "profile", &v));
  CHECK(strcmp(v, "true") == 0);
  CHECK_OK(kiln_options_set(o, "plugin_option", "a=1"));
  CHECK_OK(kiln_options_set(o, "plugin_option", "b=2"));
  CHECK_OK(kiln_options_get(o, "plugin_option", &v));
  CHECK(strcmp(v, "a=1,b=2") == 0);
  CHECK_OK(kiln_options_set(o, "log_level", "ERROR"));
  CHECK_OK(kiln_options_get(o, "log_level", &v));
  CHECK(strcmp(v, "error") == 0);

  /* A clone is independent of its source. */
  kiln_options *c = NULL;
  CHECK_OK(kiln_options_clone(o, &c));
  CHECK_OK(kiln_options_set(o, "device", "interpreter"));
  CHECK_OK(kiln_options_get(c, "device", &v));
  CHECK(strcmp(v, "") == 0);
  CHECK_OK(kiln_options_get(c, "plugin_option", &v));
  CHECK(strcmp(v, "a=1,b=2") == 0);
  kiln_options_free(c);
  kiln_options_free(o);
  kiln_options_free(NULL);
}

static void test_options_refuse_unknown_keys_and_bad_values(void) {
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  kiln_status s = kiln_options_set(o, "jitt", "auto");
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND);
  CHECK(strstr(kiln_status_message(s), "unknown option 'jitt'") && strstr(kiln_status_message(s), "jit_ops"));
  kiln_status_free(s);
  CHECK_ERR(kiln_options_set(o, "jit", "sometimes"), "option jit takes auto or off (got 'sometimes')");
  CHECK_ERR(kiln_options_set(o, "threads", "-1"), "option threads takes an integer in 0..4096 (got '-1')");
  CHECK_ERR(kiln_options_set(o, "threads", "4x"), "option threads takes an integer");
  CHECK_ERR(kiln_options_set(o, "profile", "maybe"), "option profile takes true or false (got 'maybe')");
  CHECK_ERR(kiln_options_set(o, "plugin_option", "novalue"), "plugin_option takes KEY=VALUE (got 'novalue')");
  CHECK_ERR(kiln_options_set(o, "format", "tflite"), "option format takes auto, onnx");
  CHECK_ERR(kiln_options_set(o, "device", NULL), "option device: value is NULL");
  CHECK_ERR(kiln_options_set(NULL, "jit", "off"), "options handle is NULL");
  CHECK_ERR(kiln_options_set(o, NULL, "off"), "key is NULL");
  CHECK_ERR(kiln_options_create(NULL), "out is NULL");
  const char *v;
  CHECK_ERR(kiln_options_get(o, "nope", &v), "unknown option 'nope'");
  CHECK_ERR(kiln_options_set_log_callback(NULL, NULL, NULL), "options handle is NULL");
  kiln_options_free(o);
}

static void test_tensor_create_and_misuse(void) {
  int64_t dims[3] = {2, 0, 3};
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_create(KILN_INT16, 3, dims, &t));
  CHECK(kiln_tensor_dtype(t) == KILN_INT16 && kiln_tensor_rank(t) == 3);
  CHECK(kiln_tensor_element_count(t) == 0 && kiln_tensor_byte_size(t) == 0 && kiln_tensor_data(t) != NULL);
  kiln_tensor_free(t);
  dims[1] = 5;
  CHECK_OK(kiln_tensor_create(KILN_FLOAT64, 3, dims, &t));
  CHECK(kiln_tensor_byte_size(t) == 30 * 8 && kiln_tensor_dims(t)[1] == 5);
  const double *d = kiln_tensor_data(t);
  bool zero = true;
  for (int i = 0; i < 30; i++) zero = zero && d[i] == 0;
  CHECK(zero);
  kiln_tensor_free(t);
  kiln_tensor_free(NULL);
  dims[1] = -2;
  CHECK_ERR(kiln_tensor_create(KILN_FLOAT32, 3, dims, &t), "dimension 1 is negative (-2)");
  CHECK_ERR(kiln_tensor_create((kiln_dtype)50, 1, dims, &t), "dtype 50 is not a kiln_dtype");
  CHECK_ERR(kiln_tensor_create(KILN_FLOAT32, 2, NULL, &t), "dims is NULL for rank 2");
  CHECK_ERR(kiln_tensor_create(KILN_FLOAT32, 99, dims, &t), "rank 99 is outside");
  CHECK(kiln_tensor_rank(NULL) == 0 && kiln_tensor_data(NULL) == NULL && kiln_tensor_dims(NULL) == NULL);
}

static void test_model_introspection_names_dtypes_and_dynamic_dims(void) {
  kiln_model *m = load_with(CONVNET, NULL, NULL);
  if (!m) return;
  CHECK(kiln_model_format(m) == KILN_FORMAT_GRAPH);
  CHECK(strcmp(kiln_format_name(KILN_FORMAT_GRAPH), "kiln graph") == 0);
  CHECK(kiln_model_num_inputs(m) == 1 && kiln_model_num_outputs(m) == 2);
  kiln_value v = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 0, &v));
  CHECK(strcmp(v.name, "image") == 0 && v.dtype == KILN_FLOAT32 && v.rank == 4);
  CHECK(v.dims[0] == -1 && v.dims[1] == 32 && v.dims[3] == 3);
  /* Downstream of the dynamic batch dimension kiln cannot infer types before a run. */
  CHECK_OK(kiln_model_output(m, 0, &v));
  CHECK(strcmp(v.name, "probs") == 0 && v.dtype == KILN_DTYPE_INVALID && v.rank == -1);
  CHECK_OK(kiln_model_output(m, 1, &v));
  CHECK(strcmp(v.name, "features") == 0);
  kiln_status s = kiln_model_input(m, 1, &v);
  CHECK(kiln_status_code(s) == KILN_OUT_OF_RANGE);
  CHECK(strstr(kiln_status_message(s), "index 1 is outside 0..0 (the model has 1 inputs)"));
  kiln_status_free(s);
  CHECK_ERR(kiln_model_output(m, -1, &v), "index -1 is outside 0..1");
  kiln_value small = KILN_VALUE_INIT;
  small.struct_size = 8;
  CHECK_ERR(kiln_model_input(m, 0, &small), "struct_size is 8");
  CHECK_ERR(kiln_model_input(NULL, 0, &v), "model handle is NULL");
  CHECK_ERR(kiln_model_input(m, 0, NULL), "out is NULL");
  CHECK(kiln_model_num_inputs(NULL) == 0 && kiln_model_num_outputs(NULL) == 0);
  kiln_model_free(m);
  kiln_model_free(NULL);
}

/* The inputs / outputs options name tensors TensorFlow style: outputs replace the
 * model's (in order, an existing output by its name, any node as "node" or
 * "node:N"); an internal tensor named as an input is fed in place of what computed
 * it; a name that matches nothing fails the load naming it. */
static void test_inputs_outputs_options_name_tensors(void) {
  kiln_model *m = load_with(CONVNET, "outputs", "dense/bias:0,features");
  if (m) {
    CHECK(kiln_model_num_outputs(m) == 2);
    kiln_value v = KILN_VALUE_INIT;
    CHECK_OK(kiln_model_output(m, 0, &v));
    CHECK(strcmp(v.name, "dense/bias:0") == 0);
    CHECK_OK(kiln_model_output(m, 1, &v));
    CHECK(strcmp(v.name, "features") == 0);
    kiln_model_free(m);
  }
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "inputs", "gap"));
  CHECK_OK(kiln_options_set(o, "outputs", "probs"));
  m = NULL;
  CHECK_OK(kiln_model_load(CONVNET, o, &m));
  if (m) {
    /* Only the fed tensor is needed now: the image is optional. */
    CHECK(kiln_model_num_inputs(m) == 1 && kiln_model_num_outputs(m) == 1);
    kiln_value v = KILN_VALUE_INIT;
    CHECK_OK(kiln_model_input(m, 0, &v));
    CHECK(strcmp(v.name, "gap:0") == 0 && v.dtype == KILN_FLOAT32);
    kiln_model_free(m);
  }
  CHECK_OK(kiln_options_set(o, "inputs", ""));
  CHECK_OK(kiln_options_set(o, "outputs", "probs,no_such_node:0"));
  m = NULL;
  kiln_status s = kiln_model_load(CONVNET, o, &m);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND && m == NULL);
  CHECK(s && strstr(kiln_status_message(s), "output 'no_such_node:0' names no tensor"));
  kiln_status_free(s);
  CHECK_OK(kiln_options_set(o, "outputs", "r"));
  CHECK_ERR(kiln_model_load_from_memory(add_hlo, strlen(add_hlo), KILN_FORMAT_HLO, o, &m),
            "the inputs and outputs options name a model's tensors");
  kiln_options_free(o);
}

static void test_run_matches_interpreter_and_repeats_bitwise(void) {
  kiln_model *cpu = load_with(CONVNET, NULL, NULL);
  kiln_model *ref = load_with(CONVNET, "device", "interpreter");
  if (!cpu || !ref) return;
  float img[2 * 32 * 32 * 3];
  fill_pattern(img, 2 * 32 * 32 * 3, 1);
  int64_t dims[4];
  kiln_value in = image_value(img, dims);
  kiln_tensor *a[2], *b[2], *r[2];
  CHECK_OK(kiln_model_run(cpu, NULL, 1, &in, 2, NULL, a));
  CHECK_OK(kiln_model_run(cpu, NULL, 1, &in, 2, NULL, b));
  CHECK_OK(kiln_model_run(ref, NULL, 1, &in, 2, NULL, r));
  for (int k = 0; k < 2; k++) {
    CHECK(kiln_tensor_rank(a[k]) == 2 && kiln_tensor_dims(a[k])[0] == 2);
    CHECK(kiln_tensor_byte_size(a[k]) == kiln_tensor_byte_size(b[k]));
    CHECK(memcmp(kiln_tensor_data(a[k]), kiln_tensor_data(b[k]), kiln_tensor_byte_size(a[k])) == 0);
    CHECK(close_rel(kiln_tensor_data(a[k]), kiln_tensor_data(r[k]), kiln_tensor_element_count(a[k]), 1e-4));
  }
  CHECK(kiln_tensor_dims(a[0])[1] == 10 && kiln_tensor_dims(a[1])[1] == 32);
  /* The input buffer is read in place and left as it was. */
  float again[2 * 32 * 32 * 3];
  fill_pattern(again, 2 * 32 * 32 * 3, 1);
  CHECK(memcmp(img, again, sizeof img) == 0);
  kiln_model_stats st = KILN_MODEL_STATS_INIT;
  CHECK_OK(kiln_model_get_stats(cpu, &st));
  CHECK(st.runs == 2 && st.clusters >= 1 && st.cluster_compiles >= 1 && st.cluster_cache_hits >= 1);
  CHECK(strcmp(st.jit, "auto") == 0);
  for (int k = 0; k < 2; k++) {
    kiln_tensor_free(a[k]);
    kiln_tensor_free(b[k]);
    kiln_tensor_free(r[k]);
  }
  kiln_model_free(cpu);
  kiln_model_free(ref);
}

static void test_run_selects_and_orders_outputs_by_name(void) {
  kiln_model *m = load_with(CONVNET, NULL, NULL);
  if (!m) return;
  float img[2 * 32 * 32 * 3];
  fill_pattern(img, 2 * 32 * 32 * 3, 2);
  int64_t dims[4];
  kiln_value in = image_value(img, dims);
  kiln_tensor *all[2], *sel[3];
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 2, NULL, all));
  /* TF tensor names with ":0" name the same outputs; one output may be asked twice. */
  const char *names[3] = {"features", "probs:0", "features:0"};
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 3, names, sel));
  CHECK(memcmp(kiln_tensor_data(sel[0]), kiln_tensor_data(all[1]), kiln_tensor_byte_size(all[1])) == 0);
  CHECK(memcmp(kiln_tensor_data(sel[1]), kiln_tensor_data(all[0]), kiln_tensor_byte_size(all[0])) == 0);
  CHECK(memcmp(kiln_tensor_data(sel[2]), kiln_tensor_data(all[1]), kiln_tensor_byte_size(all[1])) == 0);
  for (int k = 0; k < 3; k++) kiln_tensor_free(sel[k]);
  for (int k = 0; k < 2; k++) kiln_tensor_free(all[k]);
  /* Per-run thread count: same bits. */
  kiln_run_options ro = KILN_RUN_OPTIONS_INIT;
  ro.threads = 1;
  kiln_tensor *one[1], *many[1];
  const char *probs = "probs";
  CHECK_OK(kiln_model_run(m, &ro, 1, &in, 1, &probs, one));
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 1, &probs, many));
  CHECK(memcmp(kiln_tensor_data(one[0]), kiln_tensor_data(many[0]), kiln_tensor_byte_size(one[0])) == 0);
  kiln_tensor_free(one[0]);
  kiln_tensor_free(many[0]);
  kiln_model_free(m);
}

static void test_run_refuses_bad_inputs_naming_them(void) {
  kiln_model *m = load_with(CONVNET, NULL, NULL);
  if (!m) return;
  float img[2 * 32 * 32 * 3] = {0};
  int64_t dims[4];
  kiln_value in = image_value(img, dims);
  kiln_tensor *out[2] = {(kiln_tensor *)1, (kiln_tensor *)1};

  kiln_value bad = in;
  bad.dtype = KILN_FLOAT64;
  bad.byte_size *= 2;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "input image: the model takes float32 but float64 was given");
  CHECK(out[0] == NULL && out[1] == NULL); /* nothing set on error */

  int64_t wrong[4] = {2, 32, 31, 3};
  bad = in;
  bad.dims = wrong;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out),
            "input image: the model takes float32[?,32,32,3] but the given tensor is float32[2,32,31,3] (dimensions differ)");
  bad = in;
  bad.rank = 3;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "(dimensions differ)");
  bad = in;
  bad.byte_size -= 4;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "takes 24576 bytes but byte_size is 24572");
  bad = in;
  bad.data = NULL;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "input image: data is NULL");
  bad = in;
  bad.name = "img";
  kiln_status s = kiln_model_run(m, NULL, 1, &bad, 2, NULL, out);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND);
  CHECK(strstr(kiln_status_message(s), "unknown input 'img'; the model's inputs: image (float32[?,32,32,3])"));
  kiln_status_free(s);
  CHECK_ERR(kiln_model_run(m, NULL, 0, NULL, 2, NULL, out), "missing input: image (float32[?,32,32,3])");
  kiln_value twice[2] = {in, in};
  CHECK_ERR(kiln_model_run(m, NULL, 2, twice, 2, NULL, out), "input image is given twice (inputs 0 and 1)");
  bad = in;
  bad.name = NULL;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "input 0 has no name");
  bad = in;
  bad.struct_size = 4;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &bad, 2, NULL, out), "struct_size is 4");
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 1, NULL, out), "without output names n_outputs must be the model's output count 2 (got 1)");
  const char *unknown = "logits";
  s = kiln_model_run(m, NULL, 1, &in, 1, &unknown, out);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND);
  CHECK(strstr(kiln_status_message(s), "unknown output 'logits'; the model's outputs: probs"));
  kiln_status_free(s);
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 2, NULL, NULL), "outputs is NULL");
  CHECK_ERR(kiln_model_run(NULL, NULL, 1, &in, 2, NULL, out), "model handle is NULL");
  kiln_run_options ro = KILN_RUN_OPTIONS_INIT;
  ro.struct_size = 2;
  CHECK_ERR(kiln_model_run(m, &ro, 1, &in, 2, NULL, out), "kiln_run_options: struct_size is 2");
  /* After all that the model still runs. */
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 2, NULL, out));
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_model_free(m);
}

static void test_run_into_caller_buffers(void) {
  kiln_model *m = load_with(CONVNET, NULL, NULL);
  if (!m) return;
  float img[2 * 32 * 32 * 3];
  fill_pattern(img, 2 * 32 * 32 * 3, 3);
  int64_t dims[4];
  kiln_value in = image_value(img, dims);
  kiln_tensor *ref[2];
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 2, NULL, ref));
  float probs[2 * 10], feats[2 * 32 + 1];
  kiln_value outs[2] = {KILN_VALUE_INIT, KILN_VALUE_INIT};
  outs[0].name = "features";
  outs[0].data = feats;
  outs[0].byte_size = sizeof feats;
  outs[1].name = "probs";
  outs[1].dtype = KILN_FLOAT32;
  int64_t pd[2] = {2, 10};
  outs[1].rank = 2;
  outs[1].dims = pd;
  outs[1].data = probs;
  outs[1].byte_size = sizeof probs;
  CHECK_OK(kiln_model_run_into(m, NULL, 1, &in, 2, outs));
  CHECK(outs[0].byte_size == 2 * 32 * sizeof(float) && outs[1].byte_size == sizeof probs);
  CHECK(memcmp(feats, kiln_tensor_data(ref[1]), 2 * 32 * sizeof(float)) == 0);
  CHECK(memcmp(probs, kiln_tensor_data(ref[0]), sizeof probs) == 0);

  /* Too small, or declared otherwise: an error naming the output, and nothing written. */
  float sentinel[2 * 10];
  for (int i = 0; i < 20; i++) sentinel[i] = -7.0f;
  kiln_value small[2] = {KILN_VALUE_INIT, KILN_VALUE_INIT};
  small[0].name = "probs";
  small[0].data = sentinel;
  small[0].byte_size = sizeof sentinel;
  small[1].name = "features";
  small[1].data = feats;
  small[1].byte_size = 16;
  CHECK_ERR(kiln_model_run_into(m, NULL, 1, &in, 2, small), "output features needs 256 bytes; the buffer has 16");
  CHECK(sentinel[0] == -7.0f && sentinel[19] == -7.0f);
  small[1].byte_size = sizeof feats;
  small[1].dtype = KILN_INT32;
  CHECK_ERR(kiln_model_run_into(m, NULL, 1, &in, 2, small), "output features is float32 but the buffer was declared int32");
  small[1].dtype = KILN_DTYPE_INVALID;
  int64_t wrong[2] = {2, 31};
  small[1].rank = 2;
  small[1].dims = wrong;
  CHECK_ERR(kiln_model_run_into(m, NULL, 1, &in, 2, small), "output features is float32[2,32] but the buffer was declared [2,31]");
  small[1].name = NULL;
  CHECK_ERR(kiln_model_run_into(m, NULL, 1, &in, 2, small), "name every output or none");
  kiln_tensor_free(ref[0]);
  kiln_tensor_free(ref[1]);
  kiln_model_free(m);
}

static void test_hlo_module_runs_by_parameter_name_or_number(void) {
  kiln_model *m = load_hlo(add_hlo, NULL);
  if (!m) return;
  CHECK(kiln_model_format(m) == KILN_FORMAT_HLO);
  CHECK(kiln_model_num_inputs(m) == 2 && kiln_model_num_outputs(m) == 2);
  kiln_value v = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 1, &v));
  CHECK(strcmp(v.name, "b") == 0 && v.rank == 1 && v.dims[0] == 4 && v.dtype == KILN_FLOAT32);
  CHECK_OK(kiln_model_output(m, 1, &v));
  CHECK(strcmp(v.name, "output_1") == 0);
  float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -1, 10, 0};
  int64_t d[1] = {4};
  kiln_value in[2] = {KILN_VALUE_INIT, KILN_VALUE_INIT};
  in[0].name = "p1"; /* pN is parameter N, as `kiln run -i pN=` */
  in[0].dtype = KILN_FLOAT32;
  in[0].rank = 1;
  in[0].dims = d;
  in[0].data = b;
  in[0].byte_size = sizeof b;
  in[1] = in[0];
  in[1].name = "a";
  in[1].data = a;
  kiln_tensor *out[2];
  CHECK_OK(kiln_model_run(m, NULL, 2, in, 2, NULL, out));
  const float *s = kiln_tensor_data(out[0]), *p = kiln_tensor_data(out[1]);
  CHECK(s[0] == 1.5f && s[1] == 1.0f && s[2] == 13.0f && s[3] == 4.0f);
  CHECK(p[0] == 0.5f && p[1] == -2.0f && p[2] == 30.0f && p[3] == 0.0f);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_model_stats st = KILN_MODEL_STATS_INIT;
  CHECK_OK(kiln_model_get_stats(m, &st));
  CHECK(st.runs == 1 && strcmp(st.device, "cpu") == 0 && st.nodes == 0);
  in[0].name = "p2";
  CHECK_ERR(kiln_model_run(m, NULL, 2, in, 2, NULL, out), "unknown input 'p2'; the model's inputs: a (float32[4]), b (float32[4])");
  kiln_model_free(m);
}

static void test_load_refuses_bad_files_and_arguments(void) {
  kiln_model *m = (kiln_model *)1;
  kiln_status s = kiln_model_load("tests/api/no_such_model.onnx", NULL, &m);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND && m == NULL);
  CHECK(strstr(kiln_status_message(s), "tests/api/no_such_model.onnx"));
  kiln_status_free(s);
  CHECK_ERR(kiln_model_load(NULL, NULL, &m), "path is NULL");
  CHECK_ERR(kiln_model_load(CONVNET, NULL, NULL), "out is NULL");
  CHECK_ERR(kiln_model_load_from_memory("x", 0, KILN_FORMAT_AUTO, NULL, &m), "the model is empty");
  CHECK_ERR(kiln_model_load_from_memory(NULL, 4, KILN_FORMAT_AUTO, NULL, &m), "data is NULL");
  CHECK_ERR(kiln_model_load_from_memory("{}", 2, KILN_FORMAT_TFJS, NULL, &m), "a TF.js graph model is read from its model.json file");
  CHECK_ERR(kiln_model_load_from_memory("abc", 3, (kiln_format)42, NULL, &m), "format 42 is not a kiln_format");
  /* HLO text with an error names line and column. */
  const char *broken = "HloModule m\nENTRY e {\n  ROOT x = f32[2] parameter(0\n}\n";
  CHECK_ERR(kiln_model_load_from_memory(broken, strlen(broken), KILN_FORMAT_HLO, NULL, &m), "<memory>:");
  /* A truncated ONNX model (a real one from the fuzz seeds, cut in half) is refused
   * with an error, never a crash. */
  FILE *f = fopen("tests/fuzz/seeds/fuzz_onnx_import/constants.onnx", "rb");
  CHECK(f != NULL);
  if (f) {
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    kiln_model *whole = NULL;
    CHECK_OK(kiln_model_load_from_memory(buf, n, KILN_FORMAT_AUTO, NULL, &whole));
    CHECK(kiln_model_format(whole) == KILN_FORMAT_ONNX);
    kiln_model_free(whole);
    s = kiln_model_load_from_memory(buf, n / 2, KILN_FORMAT_ONNX, NULL, &m);
    CHECK(s != NULL && kiln_status_code(s) == KILN_INVALID_ARGUMENT && m == NULL);
    kiln_status_free(s);
  }
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "device", "tpu"));
  s = kiln_model_load(CONVNET, o, &m);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND && strstr(kiln_status_message(s), "unknown device 'tpu' (available devices:"));
  kiln_status_free(s);
  kiln_options_free(o);
}

static void test_load_from_memory_equals_load_from_file(void) {
  FILE *f = fopen(TRANSFORMER, "rb");
  CHECK(f != NULL);
  if (!f) return;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  kiln_model *a = NULL, *b = NULL;
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "format", "graph"));
  CHECK_OK(kiln_model_load_from_memory(text, n, KILN_FORMAT_AUTO, o, &a));
  kiln_options_free(o);
  CHECK_OK(kiln_model_load(TRANSFORMER, NULL, &b));
  if (!a || !b) return;
  /* With static input shapes the bridge knows the output's type before any run. */
  kiln_value ov = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_output(b, 0, &ov));
  CHECK(strcmp(ov.name, "out") == 0 && ov.dtype == KILN_FLOAT32 && ov.rank == 3 && ov.dims[0] == 1 &&
        ov.dims[1] == 16 && ov.dims[2] == 32);
  float x[16 * 32];
  fill_pattern(x, 16 * 32, 9);
  int64_t d[3] = {1, 16, 32};
  kiln_value in = KILN_VALUE_INIT;
  in.name = "x";
  in.dtype = KILN_FLOAT32;
  in.rank = 3;
  in.dims = d;
  in.data = x;
  in.byte_size = sizeof x;
  kiln_tensor *ta, *tb;
  CHECK_OK(kiln_model_run(a, NULL, 1, &in, 1, NULL, &ta));
  CHECK_OK(kiln_model_run(b, NULL, 1, &in, 1, NULL, &tb));
  CHECK(memcmp(kiln_tensor_data(ta), kiln_tensor_data(tb), kiln_tensor_byte_size(ta)) == 0);
  kiln_tensor_free(ta);
  kiln_tensor_free(tb);
  kiln_model_free(a);
  kiln_model_free(b);
}

static void test_jit_off_runs_op_by_op_with_same_results(void) {
  kiln_model *on = load_with(TRANSFORMER, "device", "interpreter");
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set(o, "device", "interpreter"));
  CHECK_OK(kiln_options_set(o, "jit", "off"));
  kiln_model *off = NULL;
  CHECK_OK(kiln_model_load(TRANSFORMER, o, &off));
  kiln_options_free(o);
  if (!on || !off) return;
  float x[16 * 32];
  fill_pattern(x, 16 * 32, 4);
  int64_t d[3] = {1, 16, 32};
  kiln_value in = KILN_VALUE_INIT;
  in.name = "x:0";
  in.dtype = KILN_FLOAT32;
  in.rank = 3;
  in.dims = d;
  in.data = x;
  in.byte_size = sizeof x;
  kiln_tensor *a, *b;
  CHECK_OK(kiln_model_run(on, NULL, 1, &in, 1, NULL, &a));
  CHECK_OK(kiln_model_run(off, NULL, 1, &in, 1, NULL, &b));
  /* On the interpreter clustering never changes results (ARCHITECTURE.md). */
  CHECK(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_byte_size(a)) == 0);
  kiln_model_stats sa = KILN_MODEL_STATS_INIT, sb = KILN_MODEL_STATS_INIT;
  CHECK_OK(kiln_model_get_stats(on, &sa));
  CHECK_OK(kiln_model_get_stats(off, &sb));
  CHECK(sa.clusters == 1 && sb.clusters == 0 && strcmp(sb.jit, "off") == 0 && sb.op_compiles > 0);
  kiln_model_stats tiny = KILN_MODEL_STATS_INIT;
  tiny.struct_size = 3;
  CHECK_ERR(kiln_model_get_stats(on, &tiny), "struct_size is too small");
  /* A caller built before evaluated_instructions existed passes the older, smaller
   * struct: it is filled up to its size and nothing past it is written. */
  struct {
    kiln_model_stats st;
  } older;
  memset(&older, 0x5a, sizeof older);
  older.st.struct_size = offsetof(kiln_model_stats, evaluated_instructions);
  CHECK_OK(kiln_model_get_stats(on, &older.st));
  CHECK(older.st.clusters == 1);
  int64_t untouched;
  memset(&untouched, 0x5a, sizeof untouched);
  CHECK(memcmp(&older.st.evaluated_instructions, &untouched, sizeof untouched) == 0);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  kiln_model_free(on);
  kiln_model_free(off);
}

typedef struct log_record {
  int n_warnings, n_other;
  char last[512];
} log_record;

static void record_log(void *user, kiln_log_level level, const char *message) {
  log_record *r = user;
  if (level == KILN_LOG_WARNING) r->n_warnings++;
  else r->n_other++;
  snprintf(r->last, sizeof r->last, "%s", message);
}

static void test_log_callback_receives_warnings_and_level_filters(void) {
  log_record rec = {0};
  kiln_options *o = NULL;
  CHECK_OK(kiln_options_create(&o));
  CHECK_OK(kiln_options_set_log_callback(o, record_log, &rec));
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load_from_memory(while_hlo, strlen(while_hlo), KILN_FORMAT_HLO, o, &m));
  /* The loop is compiled; its map runs through the evaluator as one thunk, which
   * compile warns about (the module stays on cpu). */
  CHECK(rec.n_warnings == 1 && strstr(rec.last, "device cpu runs 1 instruction") && strstr(rec.last, "y (map)"));
  if (m) {
    float x[2] = {1.5f, -2.0f};
    int64_t d[1] = {2};
    kiln_value in = KILN_VALUE_INIT;
    in.name = "x";
    in.dtype = KILN_FLOAT32;
    in.rank = 1;
    in.dims = d;
    in.data = x;
    in.byte_size = sizeof x;
    kiln_tensor *out;
    CHECK_OK(kiln_model_run(m, NULL, 1, &in, 1, NULL, &out));
    const float *y = kiln_tensor_data(out);
    CHECK(y[0] == 12.0f && y[1] == -16.0f);
    kiln_model_stats st = KILN_MODEL_STATS_INIT;
    CHECK_OK(kiln_model_get_stats(m, &st));
    CHECK(strcmp(st.device, "cpu") == 0 && st.evaluated_instructions == 1); /* the map */
    kiln_tensor_free(out);
    kiln_model_free(m);
  }
  /* At level error the warning is not delivered. */
  memset(&rec, 0, sizeof rec);
  CHECK_OK(kiln_options_set(o, "log_level", "error"));
  CHECK_OK(kiln_model_load_from_memory(while_hlo, strlen(while_hlo), KILN_FORMAT_HLO, o, &m));
  CHECK(rec.n_warnings == 0 && rec.n_other == 0);
  kiln_model_free(m);
  kiln_options_free(o);
}

static void test_find_resolves_names_by_the_run_rules(void) {
  kiln_model *g = load_with(CONVNET, NULL, NULL);
  kiln_model *h = load_hlo(add_hlo, NULL);
  if (!g || !h) return;
  int i = -1;
  CHECK_OK(kiln_model_find_input(g, "image:0", &i));
  CHECK(i == 0);
  CHECK_OK(kiln_model_find_output(g, "features", &i));
  CHECK(i == 1);
  CHECK_OK(kiln_model_find_input(h, "p1", &i));
  CHECK(i == 1);
  CHECK_OK(kiln_model_find_input(h, "a", &i));
  CHECK(i == 0);
  kiln_status s = kiln_model_find_input(h, "p01", &i);
  CHECK(kiln_status_code(s) == KILN_NOT_FOUND && strstr(kiln_status_message(s), "unknown input 'p01'"));
  kiln_status_free(s);
  CHECK_ERR(kiln_model_find_output(g, "logits", &i), "unknown output 'logits'; the model's outputs: probs");
  CHECK_ERR(kiln_model_find_output(NULL, "x", &i), "model handle is NULL");
  CHECK_ERR(kiln_model_find_input(g, NULL, &i), "name or index is NULL");
  kiln_model_free(g);
  kiln_model_free(h);
}

static void test_report_tells_what_the_bridge_decided(void) {
  kiln_model *plain = load_with(TRANSFORMER, NULL, NULL);
  kiln_model *m = load_with(TRANSFORMER, "report", "true");
  kiln_model *h = load_hlo(add_hlo, NULL);
  if (!plain || !m || !h) return;
  char *text = NULL;
  CHECK_OK(kiln_model_report(m, KILN_REPORT_CLUSTERS, &text));
  CHECK(text && strstr(text, "1 cluster holding") && strstr(text, "tf.BatchMatMulV2 x7"));
  kiln_free(text);
  CHECK_OK(kiln_model_report(m, KILN_REPORT_DOT, &text));
  CHECK(text && strncmp(text, "digraph kiln {", 14) == 0 && strstr(text, "\"q/w\" -> \"q\";"));
  kiln_free(text);
  CHECK_ERR(kiln_model_report(plain, KILN_REPORT_CLUSTERS, &text), "was loaded without the option report=true");
  kiln_status s = kiln_model_report(h, KILN_REPORT_CLUSTERS, &text);
  CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED && text == NULL);
  kiln_status_free(s);
  CHECK_ERR(kiln_model_report(m, (kiln_report_kind)9, &text), "kind 9 is not a kiln_report_kind");
  CHECK_ERR(kiln_model_report(NULL, KILN_REPORT_DOT, &text), "model handle or text is NULL");
  kiln_free(NULL);
  kiln_model_free(plain);
  kiln_model_free(m);
  kiln_model_free(h);
}

static void test_devices_list_builtins_with_info(void) {
  int n = kiln_device_count();
  CHECK(n >= 2);
  bool cpu = false, interp = false;
  for (int i = 0; i < n; i++) {
    kiln_device_info d = KILN_DEVICE_INFO_INIT;
    CHECK_OK(kiln_device_info_at(i, &d));
    CHECK(d.name && d.description && d.source);
    if (strcmp(d.name, "cpu") == 0) cpu = d.available && !d.reason && strcmp(d.source, "built-in") == 0;
    if (strcmp(d.name, "interpreter") == 0) interp = d.available;
  }
  CHECK(cpu && interp);
  kiln_device_info d = KILN_DEVICE_INFO_INIT;
  CHECK_ERR(kiln_device_info_at(n, &d), "is outside 0..");
  d.struct_size = 1;
  CHECK_ERR(kiln_device_info_at(0, &d), "struct_size is 1");
  CHECK_ERR(kiln_device_info_at(0, NULL), "out is NULL");
}

TEST_MAIN(TEST(test_version_matches_header_macros), TEST(test_status_functions_accept_null),
          TEST(test_dtype_tables_cover_every_type), TEST(test_options_set_get_every_key),
          TEST(test_options_refuse_unknown_keys_and_bad_values), TEST(test_tensor_create_and_misuse),
          TEST(test_model_introspection_names_dtypes_and_dynamic_dims),
          TEST(test_run_matches_interpreter_and_repeats_bitwise), TEST(test_run_selects_and_orders_outputs_by_name),
          TEST(test_run_refuses_bad_inputs_naming_them), TEST(test_run_into_caller_buffers),
          TEST(test_hlo_module_runs_by_parameter_name_or_number), TEST(test_load_refuses_bad_files_and_arguments),
          TEST(test_load_from_memory_equals_load_from_file), TEST(test_jit_off_runs_op_by_op_with_same_results),
          TEST(test_log_callback_receives_warnings_and_level_filters), TEST(test_find_resolves_names_by_the_run_rules),
          TEST(test_report_tells_what_the_bridge_decided),
          TEST(test_devices_list_builtins_with_info), TEST(test_inputs_outputs_options_name_tensors))
