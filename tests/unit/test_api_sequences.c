/* The public C API with ONNX sequence, optional and map values (include/kiln/kiln.h's
 * kiln_kind): introspection saying what kind an input is declared as, a sequence given
 * as a kiln_value with items and returned as a kiln_tensor with items, an empty
 * sequence keeping its element dtype, an empty optional in and out, a present optional
 * given as its plain tensor, ZipMap's sequence of maps (keys and values as two tensor
 * items), a map given and returned (its key dtype and lengths checked), a caller built against the header before kind existed (a smaller
 * struct_size) still passing tensors, and the errors, each naming the input: a tensor
 * where a sequence is declared, an element of the wrong dtype, a sequence where a
 * tensor is declared, run_into on a sequence output. The models are kiln graph text
 * whose inputs carry the ONNX importer's "_onnx_type" attribute. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kiln/kiln.h"

static const char model[] =
    "framework onnx\n"
    "input s[_onnx_type=\"sequence(tensor(float))\"]: ?\n"
    "input o[_onnx_type=\"optional(tensor(int64))\"]: ?\n"
    "input p: float[?,3]\n"
    "n = SequenceLength(s)\n"
    "s2 = SequenceErase(s)\n"
    "h = OptionalHasElement(o)\n"
    "o2 = Identity(o)\n"
    "z = ai.onnx.ml.ZipMap[classlabels_int64s=[10,20,30]](p)\n"
    "output s2 = s2:0\n"
    "output n = n:0\n"
    "output h = h:0\n"
    "output o2 = o2:0\n"
    "output z = z:0\n";

/* The same without SequenceErase, which an empty sequence fails (a run computes every
 * output, asked for or not). */
static const char model_no_erase[] =
    "framework onnx\n"
    "input s[_onnx_type=\"sequence(tensor(float))\"]: ?\n"
    "input o[_onnx_type=\"optional(tensor(int64))\"]: ?\n"
    "n = SequenceLength(s)\n"
    "h = OptionalHasElement(o)\n"
    "o2 = Identity(o)\n"
    "output n = n:0\n"
    "output h = h:0\n"
    "output o2 = o2:0\n";

static kiln_model *load(const char *text) {
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load_from_memory(text, strlen(text), KILN_FORMAT_GRAPH, NULL, &m));
  return m;
}

static kiln_value tensor(const char *name, kiln_dtype dtype, int rank, const int64_t *dims, void *data, size_t bytes) {
  kiln_value v = KILN_VALUE_INIT;
  v.name = name;
  v.dtype = dtype;
  v.rank = rank;
  v.dims = dims;
  v.data = data;
  v.byte_size = bytes;
  return v;
}

static kiln_value container(const char *name, kiln_kind kind, int n, const kiln_value *items) {
  kiln_value v = KILN_VALUE_INIT;
  v.name = name;
  v.kind = kind;
  v.n_items = n;
  v.items = items;
  return v;
}

static float a[3] = {1, 2, 3}, b[4] = {4, 5, 6, 7}, p[6] = {0.5f, 0.25f, 0.25f, 0.f, 1.f, 0.f};
static const int64_t three = 3, two_two[2] = {2, 2}, p_dims[2] = {2, 3};

static void test_inputs_say_what_kind_they_are_declared_as(void) {
  kiln_model *m = load(model);
  if (!m) return;
  kiln_value info = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 0, &info));
  CHECK(strcmp(info.name, "s") == 0 && info.kind == KILN_KIND_SEQUENCE && info.dtype == KILN_FLOAT32);
  CHECK_OK(kiln_model_input(m, 1, &info));
  CHECK(strcmp(info.name, "o") == 0 && info.kind == KILN_KIND_OPTIONAL && info.dtype == KILN_INT64);
  CHECK_OK(kiln_model_input(m, 2, &info));
  CHECK(info.kind == KILN_KIND_TENSOR && info.dtype == KILN_FLOAT32 && info.rank == 2);
  CHECK(strcmp(kiln_kind_name(KILN_KIND_MAP), "map") == 0 && strcmp(kiln_kind_name((kiln_kind)9), "invalid") == 0);
  kiln_model_free(m);
}

static void test_sequence_in_and_out_and_empty_optional(void) {
  kiln_model *m = load(model);
  if (!m) return;
  kiln_value elems[2] = {tensor(NULL, KILN_FLOAT32, 1, &three, a, sizeof a),
                         tensor(NULL, KILN_FLOAT32, 2, two_two, b, sizeof b)};
  kiln_value in[3] = {container("s", KILN_KIND_SEQUENCE, 2, elems), container("o", KILN_KIND_OPTIONAL, 0, NULL),
                      tensor("p", KILN_FLOAT32, 2, p_dims, p, sizeof p)};
  kiln_tensor *out[5] = {0};
  CHECK_OK(kiln_model_run(m, NULL, 3, in, 5, NULL, out));
  if (out[0] && out[1] && out[2] && out[3] && out[4]) {
    /* SequenceErase without a position drops the last element. */
    CHECK(kiln_tensor_kind(out[0]) == KILN_KIND_SEQUENCE && kiln_tensor_item_count(out[0]) == 1);
    CHECK(kiln_tensor_dtype(out[0]) == KILN_FLOAT32 && kiln_tensor_element_count(out[0]) == 0);
    kiln_tensor *e0 = kiln_tensor_item(out[0], 0);
    CHECK(e0 && kiln_tensor_kind(e0) == KILN_KIND_TENSOR && kiln_tensor_rank(e0) == 1 &&
          kiln_tensor_dims(e0)[0] == 3 && memcmp(kiln_tensor_data(e0), a, sizeof a) == 0);
    CHECK(kiln_tensor_item(out[0], 1) == NULL && kiln_tensor_item(out[0], -1) == NULL);
    CHECK(*(const int64_t *)kiln_tensor_data(out[1]) == 2);
    CHECK(*(const uint8_t *)kiln_tensor_data(out[2]) == 0);
    CHECK(kiln_tensor_kind(out[3]) == KILN_KIND_OPTIONAL && kiln_tensor_item_count(out[3]) == 0);
    /* ZipMap: one map per row, keys the labels, values the row. */
    CHECK(kiln_tensor_kind(out[4]) == KILN_KIND_SEQUENCE && kiln_tensor_item_count(out[4]) == 2);
    for (int r = 0; r < 2 && kiln_tensor_item_count(out[4]) == 2; r++) {
      kiln_tensor *map = kiln_tensor_item(out[4], r);
      CHECK(kiln_tensor_kind(map) == KILN_KIND_MAP && kiln_tensor_item_count(map) == 2);
      kiln_tensor *keys = kiln_tensor_item(map, 0), *vals = kiln_tensor_item(map, 1);
      if (!keys || !vals) continue;
      const int64_t *k = kiln_tensor_data(keys);
      const float *v = kiln_tensor_data(vals);
      CHECK(kiln_tensor_dtype(keys) == KILN_INT64 && kiln_tensor_element_count(keys) == 3);
      CHECK(k[0] == 10 && k[1] == 20 && k[2] == 30);
      CHECK(kiln_tensor_dtype(vals) == KILN_FLOAT32 && v[0] == p[3 * r] && v[1] == p[3 * r + 1] &&
            v[2] == p[3 * r + 2]);
    }
  }
  for (int i = 0; i < 5; i++) kiln_tensor_free(out[i]);
  kiln_model_free(m);
}

static void test_empty_sequence_and_optional_given_as_its_tensor(void) {
  kiln_model *m = load(model_no_erase);
  if (!m) return;
  int64_t seven = 7, one = 1;
  kiln_value in[2] = {container("s", KILN_KIND_SEQUENCE, 0, NULL),
                      tensor("o", KILN_INT64, 1, &one, &seven, sizeof seven)};
  in[0].dtype = KILN_FLOAT32;
  kiln_tensor *out[3] = {0};
  CHECK_OK(kiln_model_run(m, NULL, 2, in, 3, NULL, out));
  if (out[0] && out[1] && out[2]) {
    CHECK(*(const int64_t *)kiln_tensor_data(out[0]) == 0);
    CHECK(*(const uint8_t *)kiln_tensor_data(out[1]) == 1);
    CHECK(kiln_tensor_kind(out[2]) == KILN_KIND_OPTIONAL && kiln_tensor_item_count(out[2]) == 1);
    kiln_tensor *held = kiln_tensor_item(out[2], 0);
    CHECK(held && kiln_tensor_dtype(held) == KILN_INT64 && *(const int64_t *)kiln_tensor_data(held) == 7);
  }
  for (int i = 0; i < 3; i++) kiln_tensor_free(out[i]);
  kiln_model_free(m);
  /* Where an op cannot take the empty sequence, the run fails and sets no output. */
  m = load(model);
  if (!m) return;
  kiln_value all[3] = {in[0], in[1], tensor("p", KILN_FLOAT32, 2, p_dims, p, sizeof p)};
  kiln_tensor *five[5] = {0};
  CHECK_ERR(kiln_model_run(m, NULL, 3, all, 5, NULL, five), "SequenceErase on an empty sequence");
  for (int i = 0; i < 5; i++) CHECK(five[i] == NULL);
  kiln_model_free(m);
}

static void test_older_callers_pass_tensors_with_a_smaller_struct(void) {
  kiln_model *m = load("framework onnx\ninput x: float[3]\ny = Neg(x)\noutput y = y:0\n");
  if (!m) return;
  kiln_value old = tensor("x", KILN_FLOAT32, 1, &three, a, sizeof a);
  old.struct_size = offsetof(kiln_value, kind);
  old.kind = (kiln_kind)77; /* beyond the old struct: never read */
  kiln_tensor *y = NULL;
  CHECK_OK(kiln_model_run(m, NULL, 1, &old, 1, NULL, &y));
  CHECK(y && kiln_tensor_kind(y) == KILN_KIND_TENSOR && ((const float *)kiln_tensor_data(y))[2] == -3);
  kiln_tensor_free(y);
  kiln_model_free(m);
}

static void test_wrong_kinds_and_element_dtypes_name_the_input(void) {
  kiln_model *m = load(model);
  if (!m) return;
  int64_t ints[3] = {1, 2, 3};
  kiln_value elems[2] = {tensor(NULL, KILN_FLOAT32, 1, &three, a, sizeof a),
                         tensor(NULL, KILN_INT64, 1, &three, ints, sizeof ints)};
  kiln_value in[3] = {container("s", KILN_KIND_SEQUENCE, 2, elems), container("o", KILN_KIND_OPTIONAL, 0, NULL),
                      tensor("p", KILN_FLOAT32, 2, p_dims, p, sizeof p)};
  kiln_tensor *out[5] = {0};
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 5, NULL, out), "input s element 1 is a int64 tensor");
  in[0] = tensor("s", KILN_FLOAT32, 1, &three, a, sizeof a);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 5, NULL, out),
            "input s is declared sequence(tensor(float)) but a tensor was given");
  in[0] = container("s", KILN_KIND_SEQUENCE, 1, elems);
  in[2] = container("p", KILN_KIND_SEQUENCE, 1, elems);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 5, NULL, out), "input p is a tensor but a sequence was given");
  in[2] = tensor("p", KILN_FLOAT32, 2, p_dims, p, sizeof p);
  in[1] = container("o", KILN_KIND_OPTIONAL, 2, elems);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 5, NULL, out), "an optional holds at most one item");
  in[1] = container("o", KILN_KIND_OPTIONAL, 1, elems);
  CHECK_ERR(kiln_model_run(m, NULL, 3, in, 5, NULL, out), "input o is a float tensor but tensor(int64) is declared");
  for (int i = 0; i < 5; i++) CHECK(out[i] == NULL);
  in[1] = container("o", KILN_KIND_OPTIONAL, 0, NULL);
  kiln_value into = KILN_VALUE_INIT;
  into.name = "s2";
  char buf[64];
  into.data = buf;
  into.byte_size = sizeof buf;
  kiln_status s = kiln_model_run_into(m, NULL, 3, in, 1, &into);
  CHECK(kiln_status_code(s) == KILN_UNIMPLEMENTED);
  CHECK_ERR(s, "output s2 is a sequence, which kiln_model_run_into cannot write");
  kiln_model_free(m);
}

static void test_map_in_and_out_checks_keys_and_lengths(void) {
  kiln_model *m = load("framework onnx\n"
                       "input m[_onnx_type=\"map(int64,tensor(float))\"]: ?\n"
                       "r = Identity(m)\n"
                       "output r = r:0\n");
  if (!m) return;
  kiln_value info = KILN_VALUE_INIT;
  CHECK_OK(kiln_model_input(m, 0, &info));
  CHECK(info.kind == KILN_KIND_MAP && info.dtype == KILN_FLOAT32);
  int64_t keys[3] = {5, 6, 7};
  int32_t keys32[3] = {5, 6, 7};
  kiln_value parts[2] = {tensor(NULL, KILN_INT64, 1, &three, keys, sizeof keys),
                         tensor(NULL, KILN_FLOAT32, 1, &three, a, sizeof a)};
  kiln_value in = container("m", KILN_KIND_MAP, 2, parts);
  kiln_tensor *r = NULL;
  CHECK_OK(kiln_model_run(m, NULL, 1, &in, 1, NULL, &r));
  CHECK(r && kiln_tensor_kind(r) == KILN_KIND_MAP && kiln_tensor_item_count(r) == 2);
  if (r && kiln_tensor_item_count(r) == 2) {
    CHECK(((const int64_t *)kiln_tensor_data(kiln_tensor_item(r, 0)))[2] == 7);
    CHECK(((const float *)kiln_tensor_data(kiln_tensor_item(r, 1)))[1] == 2);
  }
  kiln_tensor_free(r);
  r = NULL;
  parts[0] = tensor(NULL, KILN_INT32, 1, &three, keys32, sizeof keys32);
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 1, NULL, &r), "input m has int32 keys but map(int64,tensor(float))");
  int64_t two = 2;
  parts[0] = tensor(NULL, KILN_INT64, 1, &two, keys, 2 * sizeof(int64_t));
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 1, NULL, &r), "(2 keys, 3 values)");
  in.n_items = 1;
  CHECK_ERR(kiln_model_run(m, NULL, 1, &in, 1, NULL, &r), "a map is 2 items (keys, values), given 1");
  CHECK(r == NULL);
  kiln_model_free(m);
}

TEST_MAIN(TEST(test_inputs_say_what_kind_they_are_declared_as), TEST(test_sequence_in_and_out_and_empty_optional),
          TEST(test_empty_sequence_and_optional_given_as_its_tensor),
          TEST(test_older_callers_pass_tensors_with_a_smaller_struct),
          TEST(test_wrong_kinds_and_element_dtypes_name_the_input), TEST(test_map_in_and_out_checks_keys_and_lengths))
