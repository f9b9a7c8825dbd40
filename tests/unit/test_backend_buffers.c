/* Unit tests for the generic device-buffer layer of src/backends/backend.c on the host
 * devices (cpu and the interpreter), which have no memory of their own: buffers there
 * are host literals, an upload is a copy, an adopt is not, nothing counts as a transfer,
 * and backend_execute_buffers runs the literal execute and hands back one buffer per
 * element of a root tuple. Values are checked against the evaluator run on the same
 * module; these ops (add, multiply, tuple) are exact, so results must be bit-equal.
 * The plugin side (a device with memory) is tested in tests/plugin. */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "check_util.h"
#include "eval/eval.h"

static const char module_text[] =
    "HloModule m\n"
    "ENTRY e {\n"
    "  a = f32[2,3] parameter(0)\n"
    "  b = f32[2,3] parameter(1)\n"
    "  s = f32[2,3] add(a, b)\n"
    "  p = f32[2,3] multiply(s, b)\n"
    "  ROOT t = (f32[2,3], f32[2,3]) tuple(s, p)\n"
    "}\n";

static hlo_literal *vector(float base) {
  hlo_shape sh = shape_make(HLO_F32, 2, (int64_t[]){2, 3});
  hlo_literal *l = NULL;
  if (literal_create(&sh, &l)) abort();
  for (int i = 0; i < 6; i++) ((float *)l->data)[i] = base + 0.25f * (float)i;
  return l;
}

static bool same(const hlo_literal *a, const hlo_literal *b) {
  return a && b && shape_compatible(&a->shape, &b->shape) &&
         memcmp(a->data, b->data, (size_t)shape_byte_size(&a->shape)) == 0;
}

static void check_host_device(const backend *dev) {
  hlo_module *m = check_parse_hlo(module_text);
  if (!m) return;
  CHECK(!backend_has_device_memory(dev));
  backend_executable *exe = NULL;
  CHECK_OK(dev->compile(dev, m, NULL, &exe));
  hlo_literal *a = vector(1.0f), *b = vector(-0.5f);
  hlo_literal *ref = NULL;
  CHECK_OK(eval_computation(m->entry, (hlo_literal *[]){a, b}, 2, &ref));
  backend_transfers tx = {0, 0};
  backend_buffer *args[2] = {0};
  CHECK_OK(backend_buffer_upload(dev, a, &tx, &args[0]));
  hlo_literal *b_copy = literal_clone(b);
  CHECK_OK(backend_buffer_adopt(dev, b_copy, &args[1]));
  CHECK(args[1] && args[1]->host == b_copy); /* adopted, not copied */
  /* Twice on the same buffers: arguments are borrowed, never consumed on the host. */
  for (int run = 0; run < 2 && exe && args[0] && args[1]; run++) {
    backend_buffer **res = NULL;
    int n_res = 0;
    CHECK_OK(backend_execute_buffers(dev, exe, &m->entry->root->shape, args, 2, (const bool[]){true, true}, &res,
                                     &n_res));
    CHECK(n_res == 2);
    for (int i = 0; i < n_res; i++) {
      hlo_literal *got = NULL;
      CHECK_OK(backend_buffer_download(res[i], &tx, &got));
      CHECK(same(got, ref->tuple[i]));
      literal_free(got);
      backend_buffer_free(res[i]);
    }
    free(res);
    CHECK(!args[0]->consumed && !args[1]->consumed);
  }
  CHECK(tx.to_device == 0 && tx.to_host == 0); /* nothing crossed a boundary */
  /* A tuple is not a buffer. */
  hlo_literal *pair = literal_tuple(2, (hlo_literal *[]){literal_clone(a), literal_clone(b)});
  backend_buffer *bad = NULL;
  CHECK_ERR(backend_buffer_upload(dev, pair, &tx, &bad), "device buffers hold arrays only");
  CHECK(bad == NULL);
  literal_free(pair);
  backend_buffer_free(args[0]);
  backend_buffer_free(args[1]);
  literal_free(a);
  literal_free(b);
  literal_free(ref);
  if (exe) dev->destroy(exe);
  hlo_module_free(m);
}

static void test_cpu_buffers_are_host_literals(void) { check_host_device(&cpu_backend); }
static void test_interpreter_buffers_are_host_literals(void) { check_host_device(&interpreter_backend); }

/* A buffer of one device is refused by another device's execute. */
static void test_execute_refuses_foreign_buffers(void) {
  hlo_module *m = check_parse_hlo(module_text);
  if (!m) return;
  backend_executable *exe = NULL;
  CHECK_OK(cpu_backend.compile(&cpu_backend, m, NULL, &exe));
  hlo_literal *a = vector(1.0f);
  backend_buffer *args[2] = {0};
  CHECK_OK(backend_buffer_upload(&interpreter_backend, a, NULL, &args[0]));
  CHECK_OK(backend_buffer_upload(&cpu_backend, a, NULL, &args[1]));
  backend_buffer **res = NULL;
  int n_res = 0;
  if (exe)
    CHECK_ERR(backend_execute_buffers(&cpu_backend, exe, &m->entry->root->shape, args, 2, NULL, &res, &n_res),
              "argument 0 lives on device interpreter");
  CHECK(res == NULL && n_res == 0);
  backend_buffer_free(args[0]);
  backend_buffer_free(args[1]);
  literal_free(a);
  if (exe) cpu_backend.destroy(exe);
  hlo_module_free(m);
}

TEST_MAIN(TEST(test_cpu_buffers_are_host_literals), TEST(test_interpreter_buffers_are_host_literals),
          TEST(test_execute_refuses_foreign_buffers))
