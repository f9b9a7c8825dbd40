/* The plugin adapter's device-memory path, against the example plugin (ABI 2) loaded
 * through the registry as kiln loads it: a module with a large constant keeps that
 * constant on the device (resident_bytes), arguments uploaded once serve two
 * execute_buffers runs, results read back equal the reference evaluator's, the caller's
 * module is not changed by compile, a donated argument whose shape is the result's is
 * consumed and its memory reused (the plugin says so through the host's log callback),
 * misuse is an error and never a crash, and an ABI-1 plugin (tiny_ok) runs on buffers
 * too but is never offered donation. The backend vtable is called directly (the
 * generic backend_buffer_* layer is tested with the cluster runner). Paths come from
 * the build (KILN_EXAMPLE_MANIFEST, KILN_TINY_OK_MANIFEST). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/plugin/plugin.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "check.h"
#include "eval/eval.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

static hlo_module *parse(const char *text) {
  hlo_module *m = NULL;
  CHECK_OK(hlo_parse(text, strlen(text), "test", &m));
  if (m) CHECK_OK(hlo_verify_module(m));
  return m;
}

/* y = dot(a, w) + a and -a, with w a 32x32 f32 constant: 4096 bytes, exactly the
 * resident threshold. */
static hlo_module *weights_module(void) {
  strbuf t;
  strbuf_init(&t);
  strbuf_append(&t, "HloModule weights\n\nENTRY main {\n  a = f32[32,32] parameter(0)\n  w = f32[32,32] constant({");
  for (int i = 0; i < 32; i++) {
    strbuf_append(&t, i ? ", {" : "{");
    for (int j = 0; j < 32; j++) strbuf_printf(&t, "%s%g", j ? ", " : "", 0.25 * ((i * 7 + j * 3) % 11) - 1);
    strbuf_append(&t, "}");
  }
  strbuf_append(&t, "})\n"
                    "  d = f32[32,32] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                    "  y = f32[32,32] add(d, a)\n"
                    "  n = f32[32,32] negate(a)\n"
                    "  ROOT t = (f32[32,32], f32[32,32]) tuple(y, n)\n}\n");
  hlo_module *m = parse(strbuf_cstr(&t));
  strbuf_free(&t);
  return m;
}

static hlo_literal *matrix(int rows, int cols, double seed) {
  hlo_shape s = shape_make(HLO_F32, 2, (int64_t[]){rows, cols});
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(&s, &l));
  for (int i = 0; i < rows * cols; i++) literal_set_f64(l, i, seed + 0.125 * (i % 13) - 0.5);
  return l;
}

static bool same_values(const hlo_literal *a, const hlo_literal *b) {
  return shape_equal(&a->shape, &b->shape) && memcmp(a->data, b->data, (size_t)shape_byte_size(&a->shape)) == 0;
}

static hlo_literal *download(const backend *b, void *h, const hlo_shape *shape) {
  hlo_literal *l = NULL;
  CHECK_OK(literal_create(shape, &l));
  CHECK_OK(b->buffer_download(b, h, l));
  return l;
}

static const backend *example_device(void) {
  const char *manifest = KILN_EXAMPLE_MANIFEST;
  backend_registry_add_plugins(0, NULL, 1, &manifest);
  const backend *b = backend_find("example");
  CHECK(b != NULL);
  if (b) CHECK(b->buffer_upload && b->buffer_download && b->buffer_free && b->execute_buffers && b->resident_bytes);
  return b;
}

static void test_resident_constant_and_reused_arguments(void) {
  const backend *b = example_device();
  if (!b) return;
  hlo_module *m = weights_module();
  char *before = hlo_module_to_string(m, NULL);
  backend_executable *e = NULL;
  CHECK_OK(b->compile(b, m, NULL, &e));
  if (!e) goto out;
  /* The caller's module is untouched: the hoisting worked on a copy. */
  char *after = hlo_module_to_string(m, NULL);
  CHECK(strcmp(before, after) == 0);
  free(after);
  CHECK(m->entry->n_params == 1);
  CHECK(b->resident_bytes(e) == 32 * 32 * 4);

  hlo_literal *a = matrix(32, 32, 0.5);
  hlo_literal *ref = NULL;
  CHECK_OK(eval_module(m, &a, 1, &ref));
  void *arg = NULL;
  CHECK_OK(b->buffer_upload(b, a, &arg));
  for (int run = 0; run < 2 && ref; run++) {
    void *res[2] = {NULL, NULL};
    CHECK_OK(b->execute_buffers(e, &arg, 1, NULL, NULL, res, 2));
    for (int i = 0; i < 2; i++) {
      if (!res[i]) continue;
      hlo_literal *got = download(b, res[i], &ref->tuple[i]->shape);
      CHECK(same_values(got, ref->tuple[i]));
      literal_free(got);
      b->buffer_free(b, res[i]);
    }
  }
  /* The argument is still the caller's and still intact. */
  hlo_literal *back = download(b, arg, &a->shape);
  CHECK(same_values(back, a));
  literal_free(back);
  /* The literal path appends the same resident constant. */
  hlo_literal *out = NULL;
  CHECK_OK(b->execute(e, &a, 1, &out));
  CHECK(out && ref && shape_is_tuple(&out->shape) && same_values(out->tuple[0], ref->tuple[0]) &&
        same_values(out->tuple[1], ref->tuple[1]));
  literal_free(out);

  /* Misuse: wrong argument count, wrong room for results, a download into the wrong
   * shape. Errors, not crashes. */
  void *res[2] = {NULL, NULL};
  CHECK_ERR(b->execute_buffers(e, NULL, 0, NULL, NULL, res, 2), "0 arguments for an executable of 1 parameters");
  CHECK_ERR(b->execute_buffers(e, &arg, 1, NULL, NULL, res, 1), "room for 1 results, the executable has 2");
  hlo_literal *wrong = matrix(4, 4, 0);
  CHECK_ERR(b->buffer_download(b, arg, wrong), "does not have the destination's shape");
  literal_free(wrong);

  b->buffer_free(b, arg);
  literal_free(ref);
  literal_free(a);
  b->destroy(e);
out:
  free(before);
  hlo_module_free(m);
}

static char log_text[4096];
static void keep_log(void *user, log_level level, const char *message) {
  (void)user, (void)level;
  size_t n = strlen(log_text);
  snprintf(log_text + n, sizeof log_text - n, "%s\n", message);
}

static void test_donation(void) {
  const backend *b = example_device();
  if (!b) return;
  hlo_module *m = parse("HloModule neg\nENTRY e {\n  a = f32[8,4] parameter(0)\n  ROOT n = f32[8,4] negate(a)\n}\n");
  backend_executable *e = NULL;
  CHECK_OK(b->compile(b, m, NULL, &e));
  if (!e) {
    hlo_module_free(m);
    return;
  }
  CHECK(b->resident_bytes(e) == 0);
  hlo_literal *a = matrix(8, 4, 1), *ref = NULL;
  CHECK_OK(eval_module(m, &a, 1, &ref));
  void *arg = NULL;
  CHECK_OK(b->buffer_upload(b, a, &arg));
  log_sink sink = {keep_log, NULL, LOG_INFO}, prev;
  bool had = false;
  log_text[0] = 0;
  log_set_thread_sink(&sink, &prev, &had);
  bool donated[1] = {true}, consumed[1] = {false};
  void *res = NULL;
  CHECK_OK(b->execute_buffers(e, &arg, 1, donated, consumed, &res, 1));
  log_set_thread_sink(had ? &prev : NULL, NULL, NULL);
  CHECK(consumed[0]);
  /* The example plugin took the argument's memory for the result and said so through
   * the host's log callback. */
  CHECK(strstr(log_text, "plugin example: execute: a result reuses donated argument 0") != NULL);
  if (res) {
    hlo_literal *got = download(b, res, &ref->shape);
    CHECK(same_values(got, ref));
    literal_free(got);
  }
  /* A consumed argument is only freed; running on it again is a clean error. */
  void *again = NULL;
  CHECK_ERR(b->execute_buffers(e, &arg, 1, NULL, NULL, &again, 1), "donated to an earlier execute");
  CHECK(again == NULL);
  b->buffer_free(b, arg);
  if (res) b->buffer_free(b, res);
  literal_free(a);
  literal_free(ref);
  b->destroy(e);
  hlo_module_free(m);
}

/* An ABI-1 plugin runs on buffers through the adapter; donation is not offered. */
static void test_abi1_buffers(void) {
  plugin *p = plugin_load(KILN_TINY_OK_MANIFEST);
  CHECK(plugin_reason(p) == NULL);
  const backend *b = plugin_device_backend(p, 0);
  if (b) {
    hlo_module *m = parse("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
                          "  ROOT r = f32[4] add(a, b)\n}\n");
    backend_executable *e = NULL;
    CHECK_OK(b->compile(b, m, NULL, &e));
    hlo_shape s = shape_make(HLO_F32, 1, (int64_t[]){4});
    hlo_literal *x = NULL;
    CHECK_OK(literal_create(&s, &x));
    for (int i = 0; i < 4; i++) literal_set_f64(x, i, i + 1);
    void *args[2] = {NULL, NULL};
    CHECK_OK(b->buffer_upload(b, x, &args[0]));
    CHECK_OK(b->buffer_upload(b, x, &args[1]));
    bool donated[2] = {true, true}, consumed[2] = {true, true};
    void *res = NULL;
    if (e) CHECK_OK(b->execute_buffers(e, args, 2, donated, consumed, &res, 1));
    CHECK(!consumed[0] && !consumed[1]);
    if (res) {
      hlo_literal *got = download(b, res, &s);
      CHECK(literal_get_f64(got, 3) == 8.0);
      literal_free(got);
      b->buffer_free(b, res);
    }
    for (int i = 0; i < 2; i++) b->buffer_free(b, args[i]);
    literal_free(x);
    if (e) b->destroy(e);
    hlo_module_free(m);
  }
  plugin_free(p);
}

static void test_reset(void) { backend_registry_reset(); }

TEST_MAIN(TEST(test_resident_constant_and_reused_arguments), TEST(test_donation), TEST(test_abi1_buffers),
          TEST(test_reset))
