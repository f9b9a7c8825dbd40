/* Unit tests of the OpenCL plugin's ABI-2 surface, through the table a host gets from
 * kiln_plugin_init (the library is dlopened like the host does): the table itself, error
 * codes (UNAVAILABLE for a device that does not exist, INVALID_ARGUMENT for unparsable
 * text, UNIMPLEMENTED for an opcode the device lacks, INVALID_ARGUMENT for wrong
 * arguments), op_supported / instruction_supported answers, buffers (including
 * zero-element ones), execute with donation, and a compile served from the program cache.
 *
 *   test_ocl_plugin LIB.so       (exit status 0 when every check passes; 77 = skipped
 *                                 because no OpenCL device exists) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"

static const kiln_plugin_api *api;
static int failures;

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                    \
    }                                                                \
  } while (0)

/* The error's code (0 for success); releases it. */
static int code_of(kiln_plugin_error *e, const char *what) {
  if (!e) return 0;
  int c = api->error_code(e);
  fprintf(stderr, "  (%s: [%d] %.200s)\n", what, c, api->error_message(e));
  api->error_destroy(e);
  return c;
}

static kiln_plugin_client *client;

static int compile(const char *text, kiln_plugin_executable **exe) {
  kiln_plugin_compile_args a = {sizeof a, client, 0, KILN_PLUGIN_FORMAT_HLO_TEXT, text, strlen(text), NULL, 0, NULL};
  int c = code_of(api->compile(&a), "compile");
  *exe = a.executable;
  return c;
}

static int supported_line(const char *line) {
  kiln_plugin_instruction_supported_args a = {sizeof a, client, 0, line, strlen(line), -1};
  CHECK(code_of(api->instruction_supported(&a), "instruction_supported") == 0);
  return a.supported;
}

static int supported_op(const char *op, int dtype) {
  kiln_plugin_op_supported_args a = {sizeof a, client, 0, op, dtype, -1};
  CHECK(code_of(api->op_supported(&a), "op_supported") == 0);
  return a.supported;
}

static kiln_plugin_buffer *upload(int dtype, size_t rank, const size_t *dims, const void *data, size_t n) {
  kiln_plugin_buffer_from_host_args a = {sizeof a, client, 0, dtype, dims, rank, data, n, NULL};
  CHECK(code_of(api->buffer_from_host(&a), "buffer_from_host") == 0);
  return a.buffer;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_ocl_plugin LIB.so\n");
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  kiln_plugin_init_fn init = (kiln_plugin_init_fn)(uintptr_t)dlsym(h, KILN_PLUGIN_INIT_SYMBOL);
  CHECK(init != NULL);
  if (!init) return 1;
  CHECK(init(&api) == NULL);
  CHECK(api->struct_size == sizeof(kiln_plugin_api));
  CHECK(api->api_major == 2 && api->api_minor == 0);
  CHECK(!strcmp(api->plugin_name, "opencl"));
  CHECK(api->op_supported && api->instruction_supported);

  kiln_plugin_host host = {sizeof host, 2, 0, "test", "", NULL, NULL};
  /* A platform that does not exist: UNAVAILABLE. */
  kiln_plugin_option bad = {sizeof bad, "opencl.platform", "no such platform anywhere"};
  kiln_plugin_client_create_args ca = {sizeof ca, &host, &bad, 1, NULL};
  CHECK(code_of(api->client_create(&ca), "client_create (bad platform)") == KILN_PLUGIN_ERR_UNAVAILABLE);
  CHECK(ca.client == NULL);

  kiln_plugin_option unknown = {sizeof unknown, "some.other.key", "x"};
  kiln_plugin_client_create_args cb = {sizeof cb, &host, &unknown, 1, NULL};
  int cc = code_of(api->client_create(&cb), "client_create");
  if (cc == KILN_PLUGIN_ERR_UNAVAILABLE) {
    fprintf(stderr, "no OpenCL device: skipped\n");
    return 77;
  }
  CHECK(cc == 0 && cb.client);
  if (!cb.client) return 1;
  client = cb.client;

  kiln_plugin_device_count_args dc = {sizeof dc, client, 0};
  CHECK(code_of(api->device_count(&dc), "device_count") == 0 && dc.n_devices == 1);
  kiln_plugin_device_info_args di = {sizeof di, client, 0, NULL, NULL, 0};
  CHECK(code_of(api->device_info(&di), "device_info") == 0);
  CHECK(di.name && !strcmp(di.name, "opencl"));
  CHECK(di.description && strstr(di.description, "OpenCL"));
  CHECK(di.memory_bytes > 0);
  di.device = 1;
  CHECK(code_of(api->device_info(&di), "device_info(1)") == KILN_PLUGIN_ERR_NOT_FOUND);

  /* Support queries. */
  CHECK(supported_op("add", KILN_DTYPE_F32));
  CHECK(supported_op("add", KILN_DTYPE_PRED));
  CHECK(!supported_op("exponential", KILN_DTYPE_S32));
  CHECK(supported_op("sort", KILN_DTYPE_F32));
  CHECK(!supported_op("while", KILN_DTYPE_F32));
  CHECK(!supported_op("custom-call", KILN_DTYPE_F32));
  CHECK(supported_op("compare", KILN_DTYPE_PRED));
  CHECK(supported_op("tuple", 0));
  CHECK(supported_op("reduce", 0));
  CHECK(!supported_op("dot", KILN_DTYPE_PRED));
  CHECK(supported_line("%add.1 = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b)"));
  CHECK(supported_line("%c = pred[4]{0} compare(s32[4]{0} %a, s32[4]{0} %b), direction=LT"));
  CHECK(supported_line("%s = f32[4]{0} sort(f32[4]{0} %a), dimensions={0}, to_apply=%cmp"));
  CHECK(!supported_line("%w = f32[4]{0} while(f32[4]{0} %a), condition=%c, body=%b"));
  CHECK(!supported_line("%c = f32[4]{0} custom-call(f32[4]{0} %a), custom_call_target=\"foo\""));
  CHECK(!supported_line("%c = f32[1,4,4,8]{3,2,1,0} convolution(f32[2,4,4,4]{3,2,1,0} %a, f32[1,1,4,8]{3,2,1,0} %b), "
                        "window={size=1x1}, dim_labels=b01f_01io->b01f, batch_group_count=2"));
  CHECK(supported_line("%c = f32[2,4,4,8]{3,2,1,0} convolution(f32[2,4,4,4]{3,2,1,0} %a, f32[1,1,4,8]{3,2,1,0} %b), "
                       "window={size=1x1}, dim_labels=b01f_01io->b01f, batch_group_count=1"));
  CHECK(!supported_line("%b = s16[4]{0} bitcast-convert(f32[4]{0} %a)"));
  CHECK(supported_line("%b = s32[4]{0} bitcast-convert(f32[4]{0} %a)"));
  CHECK(!supported_line("garbage"));

  /* Compile errors. */
  kiln_plugin_executable *exe = NULL;
  CHECK(compile("this is not HLO", &exe) == KILN_PLUGIN_ERR_INVALID_ARGUMENT && !exe);
  CHECK(compile("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT s = f32[4] sort(p), dimensions={0}, "
                "to_apply=c\n}\n", &exe) == KILN_PLUGIN_ERR_INVALID_ARGUMENT && !exe);
  CHECK(compile("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(p), "
                "custom_call_target=\"x\"\n}\n", &exe) == KILN_PLUGIN_ERR_UNIMPLEMENTED && !exe);

  /* A malformed module (a slice past its operand) is refused, not run out of bounds. */
  CHECK(compile("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT s = f32[6] slice(p), slice={[0:6]}\n}\n",
                &exe) == KILN_PLUGIN_ERR_INVALID_ARGUMENT && !exe);
  CHECK(compile("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[5] parameter(1)\n"
                "  ROOT s = f32[5] add(p, q)\n}\n", &exe) == KILN_PLUGIN_ERR_INVALID_ARGUMENT && !exe);

  /* Buffers, zero-element ones included. */
  size_t d0[2] = {0, 3};
  kiln_plugin_buffer *e0 = upload(KILN_DTYPE_F32, 2, d0, NULL, 0);
  kiln_plugin_buffer_shape_args sh = {sizeof sh, client, e0, 0, {0}, 0, -1};
  CHECK(code_of(api->buffer_shape(&sh), "buffer_shape") == 0);
  CHECK(sh.dtype == KILN_DTYPE_F32 && sh.rank == 2 && sh.dims[0] == 0 && sh.dims[1] == 3 && sh.device == 0);
  kiln_plugin_buffer_to_host_args th = {sizeof th, client, e0, NULL, 0};
  CHECK(code_of(api->buffer_to_host(&th), "buffer_to_host (empty)") == 0);
  api->buffer_destroy(client, e0);
  size_t d4[1] = {4};
  float four[4] = {1, 2, 3, 4};
  CHECK(code_of(api->buffer_from_host(&(kiln_plugin_buffer_from_host_args){sizeof(kiln_plugin_buffer_from_host_args),
                                                                            client, 0, KILN_DTYPE_F32, d4, 1, four, 15,
                                                                            NULL}),
                "buffer_from_host (wrong size)") == KILN_PLUGIN_ERR_INVALID_ARGUMENT);

  /* Execute: y = x * x + x, donating x; then again (program cache) without donation. */
  const char *mod = "HloModule m\n\nENTRY e {\n  x = f32[4] parameter(0)\n  m = f32[4] multiply(x, x)\n"
                    "  ROOT a = f32[4] add(m, x)\n}\n";
  for (int round = 0; round < 2; round++) {
    CHECK(compile(mod, &exe) == 0 && exe);
    if (!exe) break;
    kiln_plugin_buffer *x = upload(KILN_DTYPE_F32, 1, d4, four, sizeof four);
    kiln_plugin_buffer *res[4] = {0};
    int donate[1] = {round == 0};
    kiln_plugin_execute_args ea = {sizeof ea, client, exe, &x, 1, donate, res, 4, 0};
    CHECK(code_of(api->execute(&ea), "execute") == 0 && ea.n_results == 1);
    float out[4] = {0};
    kiln_plugin_buffer_to_host_args rt = {sizeof rt, client, res[0], out, sizeof out};
    CHECK(code_of(api->buffer_to_host(&rt), "buffer_to_host") == 0);
    for (int i = 0; i < 4; i++) CHECK(out[i] == four[i] * four[i] + four[i]);
    kiln_plugin_execute_args wrong = {sizeof wrong, client, exe, &x, 0, NULL, res + 1, 3, 0};
    CHECK(code_of(api->execute(&wrong), "execute (no arguments)") == KILN_PLUGIN_ERR_INVALID_ARGUMENT);
    api->buffer_destroy(client, res[0]);
    api->buffer_destroy(client, x);
    api->executable_destroy(client, exe);
  }

  /* A parameter returned directly, twice, must come back as two new buffers. */
  CHECK(compile("HloModule m\n\nENTRY e {\n  x = s32[4] parameter(0)\n  ROOT t = (s32[4], s32[4]) tuple(x, x)\n}\n",
                &exe) == 0);
  if (exe) {
    int32_t iv[4] = {5, -6, 7, -8};
    kiln_plugin_buffer *x = upload(KILN_DTYPE_S32, 1, d4, iv, sizeof iv);
    kiln_plugin_buffer *res[2] = {0};
    kiln_plugin_execute_args ea = {sizeof ea, client, exe, &x, 1, NULL, res, 2, 0};
    CHECK(code_of(api->execute(&ea), "execute (tuple)") == 0 && ea.n_results == 2);
    CHECK(res[0] != x && res[1] != x && res[0] != res[1]);
    api->buffer_destroy(client, x);
    for (int r = 0; r < 2; r++) {
      int32_t got[4] = {0};
      kiln_plugin_buffer_to_host_args rt = {sizeof rt, client, res[r], got, sizeof got};
      CHECK(code_of(api->buffer_to_host(&rt), "buffer_to_host") == 0);
      CHECK(!memcmp(got, iv, sizeof iv));
      api->buffer_destroy(client, res[r]);
    }
    kiln_plugin_execute_args small = {sizeof small, client, exe, &x, 1, NULL, res, 1, 0};
    (void)small; /* x is gone: only the result-count check would apply */
    api->executable_destroy(client, exe);
  }
  api->client_destroy(client);
  if (!getenv("OCL_NO_DLCLOSE")) dlclose(h); /* kept open under a leak checker, for symbols */
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else fprintf(stderr, "all checks passed\n");
  return failures ? 1 : 0;
}
