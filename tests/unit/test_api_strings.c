/* The public C API with string values and optional inputs (include/kiln/kiln.h):
 * KILN_STRING inputs given as arrays of NUL-terminated UTF-8 pointers and outputs
 * handed back the same way (one block the tensor owns), a graph input the model
 * declares but never reads listed after the required ones, accepted when given (checked
 * against its declaration) and never required, a TensorFlow PlaceholderWithDefault
 * likewise optional (a value given replaces the default), and the errors, each naming
 * the input or output. The models are kiln graph text. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "kiln/kiln.h"

static const char concat_split[] =
    "framework onnx\n"
    "input x: string[?]\n"
    "input y: string[2]\n"
    "input like: float[3]\n" /* declared, read by nothing (ONNX's CastLike _expanded cases do this) */
    "z = StringConcat(x, y)\n"
    "parts = StringSplit[delimiter=\" \"](z) -> (string, int64)\n"
    "output z = z:0\n"
    "output parts = parts:0\n"
    "output counts = parts:1\n";

static kiln_model *load(const char *text) {
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load_from_memory(text, strlen(text), KILN_FORMAT_GRAPH, NULL, &m));
  return m;
}

static kiln_value strings_value(const char *name, int64_t *dim, const char **v) {
  kiln_value in = KILN_VALUE_INIT;
  in.name = name;
  in.dtype = KILN_STRING;
  in.rank = 1;
  in.dims = dim;
  in.data = (void *)v;
  in.byte_size = (size_t)*dim * sizeof(const char *);
  return in;
}

static void test_strings_go_in_and_out_as_pointer_arrays(void) {
  CHECK(kiln_dtype_size(KILN_STRING) == sizeof(const char *) && strcmp(kiln_dtype_name(KILN_STRING), "string") == 0);
  kiln_model *m = load(concat_split);
  if (!m) return;
  kiln_value info = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 0, &info));
  CHECK(strcmp(info.name, "x") == 0 && info.dtype == KILN_STRING);
  int64_t two = 2;
  const char *xs[2] = {"h\xc3\xa9llo ", "a"}, *ys[2] = {"w\xc3\xb6rld", "b c"};
  kiln_value in[2] = {strings_value("x", &two, xs), strings_value("y", &two, ys)};
  kiln_tensor *out[3] = {0};
  CHECK_OK(kiln_model_run(m, NULL, 2, in, 3, NULL, out));
  if (out[0] && out[1] && out[2]) {
    CHECK(kiln_tensor_dtype(out[0]) == KILN_STRING && kiln_tensor_element_count(out[0]) == 2);
    CHECK(kiln_tensor_byte_size(out[0]) == 2 * sizeof(const char *));
    const char *const *z = kiln_tensor_data(out[0]);
    CHECK(strcmp(z[0], "h\xc3\xa9llo w\xc3\xb6rld") == 0 && strcmp(z[1], "ab c") == 0);
    const char *const *p = kiln_tensor_data(out[1]);
    CHECK(kiln_tensor_rank(out[1]) == 2 && kiln_tensor_dims(out[1])[1] == 2);
    CHECK(strcmp(p[0], "h\xc3\xa9llo") == 0 && strcmp(p[1], "w\xc3\xb6rld") == 0 && strcmp(p[2], "ab") == 0 &&
          strcmp(p[3], "c") == 0);
    const int64_t *c = kiln_tensor_data(out[2]);
    CHECK(kiln_tensor_dtype(out[2]) == KILN_INT64 && c[0] == 2 && c[1] == 2);
  }
  for (int i = 0; i < 3; i++) kiln_tensor_free(out[i]);
  kiln_model_free(m);
}

static void test_declared_but_unread_inputs_are_optional(void) {
  kiln_model *m = load(concat_split);
  if (!m) return;
  CHECK(kiln_model_num_inputs(m) == 2 && kiln_model_num_optional_inputs(m) == 1);
  kiln_value info = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 2, &info));
  CHECK(strcmp(info.name, "like") == 0 && info.dtype == KILN_FLOAT32 && info.rank == 1 && info.dims[0] == 3);
  kiln_status s = kiln_model_input(m, 3, &info);
  CHECK(kiln_status_code(s) == KILN_OUT_OF_RANGE);
  kiln_status_free(s);
  int index = -1;
  CHECK_OK(kiln_model_find_input(m, "like", &index));
  CHECK(index == 2);
  int64_t two = 2, three = 3, four = 4;
  const char *xs[2] = {"a", "b"}, *ys[2] = {"c", "d"};
  float like[4] = {0};
  kiln_value in[4] = {strings_value("x", &two, xs), strings_value("y", &two, ys), KILN_VALUE_INIT, KILN_VALUE_INIT};
  in[2].name = "like";
  in[2].dtype = KILN_FLOAT32;
  in[2].rank = 1;
  in[2].dims = &three;
  in[2].data = like;
  in[2].byte_size = 3 * sizeof(float);
  in[3] = in[2];
  kiln_tensor *out[3] = {0};
  CHECK_OK(kiln_model_run(m, NULL, 2, in, 3, NULL, out)); /* left out */
  for (int i = 0; i < 3; i++) kiln_tensor_free(out[i]);
  CHECK_OK(kiln_model_run(m, NULL, 3, in, 3, NULL, out)); /* given: checked, then ignored */
  if (out[0]) CHECK(strcmp(((const char *const *)kiln_tensor_data(out[0]))[1], "bd") == 0);
  for (int i = 0; i < 3; i++) kiln_tensor_free(out[i]);
  CHECK_ERR(kiln_model_run(m, NULL, 4, in, 3, NULL, out), "input like is given twice");
  in[2].dims = &four;
  in[2].byte_size = 4 * sizeof(float);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 3, NULL, out),
            "input like: the model takes float32[3] but the given tensor is float32[4] (dimensions differ)");
  CHECK_ERR(kiln_model_run(m, NULL, 1, in, 3, NULL, out),
            "missing input: y (string[2]); the model's inputs: x (string[?]), y (string[2]); optional: like (float32[3])");
  kiln_model_free(m);
}

static void test_placeholder_with_default_is_an_optional_input(void) {
  kiln_model *m = load("framework tf\n"
                       "d = Const[dtype=float, value=tensor<float[2]>{1, 2}]()\n"
                       "p = PlaceholderWithDefault[dtype=float, shape=<2>](d)\n"
                       "y = Neg[T=float](p)\n"
                       "output y = y:0\n");
  if (!m) return;
  CHECK(kiln_model_num_inputs(m) == 0 && kiln_model_num_optional_inputs(m) == 1);
  kiln_tensor *out = NULL;
  CHECK_OK(kiln_model_run(m, NULL, 0, NULL, 1, NULL, &out)); /* the default */
  if (out) CHECK(((const float *)kiln_tensor_data(out))[1] == -2);
  kiln_tensor_free(out);
  out = NULL;
  int64_t two = 2;
  float v[2] = {5, 6};
  kiln_value in = KILN_VALUE_INIT;
  in.name = "p";
  in.dtype = KILN_FLOAT32;
  in.rank = 1;
  in.dims = &two;
  in.data = v;
  in.byte_size = sizeof v;
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 1, NULL, &out)); /* given: replaces the default */
  if (out) CHECK(((const float *)kiln_tensor_data(out))[1] == -6);
  kiln_tensor_free(out);
  kiln_model_free(m);
}

static void test_string_errors_name_the_input_or_output(void) {
  kiln_tensor *t = (kiln_tensor *)1;
  CHECK_ERR(kiln_tensor_create(KILN_STRING, 0, NULL, &t), "string tensors come only from runs");
  CHECK(t == NULL);
  kiln_model *m = load(concat_split);
  if (!m) return;
  int64_t two = 2;
  const char *xs[2] = {"a", NULL}, *ys[2] = {"c", "d"};
  kiln_value in[3] = {strings_value("x", &two, xs), strings_value("y", &two, ys), KILN_VALUE_INIT};
  kiln_tensor *out[3] = {0};
  CHECK_ERR(kiln_model_run(m, NULL, 2, in, 3, NULL, out), "input x: string element 1 is NULL");
  xs[1] = "b";
  in[0].byte_size = 3;
  CHECK_ERR(kiln_model_run(m, NULL, 2, in, 3, NULL, out), "input x: string[2 elements] takes 16 bytes but byte_size is 3");
  in[0].byte_size = 2 * sizeof(const char *);
  float f[3] = {0};
  int64_t three = 3;
  in[2] = strings_value("like", &three, xs);
  in[2].byte_size = 3 * sizeof(const char *);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 3, NULL, out), "input like: the model takes float32 but string was given");
  (void)f;
  kiln_value into[1] = {KILN_VALUE_INIT};
  into[0].name = "z";
  char buf[64];
  into[0].data = buf;
  into[0].byte_size = sizeof buf;
  kiln_status s = kiln_model_run_into(m, NULL, 2, in, 1, into);
  CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED);
  CHECK_ERR(s, "output z holds strings, which kiln_model_run_into cannot write into caller memory");
  kiln_model_free(m);
  /* A string with a NUL byte inside cannot become a NUL-terminated output. */
  m = load("framework onnx\n"
           "input x: string[1]\n"
           "c = Constant[value=tensor<string[1]>{\"a\\x00b\"}]()\n"
           "z = StringConcat(x, c)\n"
           "output z = z:0\n");
  if (!m) return;
  int64_t one = 1;
  in[0] = strings_value("x", &one, xs);
  CHECK_ERR(kiln_model_run(m, NULL, 1, in, 1, NULL, out), "output z: string element 0 holds a NUL byte");
  kiln_model_free(m);
}

TEST_MAIN(TEST(test_strings_go_in_and_out_as_pointer_arrays), TEST(test_declared_but_unread_inputs_are_optional),
          TEST(test_placeholder_with_default_is_an_optional_input), TEST(test_string_errors_name_the_input_or_output))
