/* ocl_run: drives the OpenCL plugin through its ABI-2 table without the kiln host, for
 * testing before (and besides) the host's ABI-2 loader. It dlopens the library, creates a
 * client, compiles an HLO text file, uploads inputs (from .npy files, or deterministic
 * random values it also writes as OUTDIR/p<N>.npy so the reference can be run on the same
 * data), executes (optionally donating every argument) and writes OUTDIR/output_<i>.npy,
 * the names `kiln run -o OUTDIR` uses. bf16 is written and read as f32 (.npy has no
 * bf16; kiln widens and narrows the same way).
 *
 *   ocl_run LIB.so MODULE.hlo OUTDIR [--positive] [--seed N] [--donate] [--iters N]
 *           [--opt KEY=VALUE]... [-i pN=FILE.npy]...
 * --opt passes compile options (opencl.dump_source=1 logs the generated kernels when
 * OCL_RUN_LOG is set); OCL_PLATFORM / OCL_DEVICE choose the device.
 * Exit status: 0 success, 2 compile said UNIMPLEMENTED, 1 any other failure. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/plugin.h"

static const kiln_plugin_api *api;

static void die_err(const char *what, kiln_plugin_error *e) {
  fprintf(stderr, "ocl_run: %s: [%d] %s\n", what, api->error_code(e), api->error_message(e));
  int code = api->error_code(e);
  api->error_destroy(e);
  exit(code == KILN_PLUGIN_ERR_UNIMPLEMENTED ? 2 : 1);
}

static void host_log(void *data, int level, const char *msg) {
  (void)data;
  if (getenv("OCL_RUN_LOG")) fprintf(stderr, "log[%d]: %s\n", level, msg);
}

static size_t dsize(int t) {
  switch (t) {
    case KILN_DTYPE_PRED: case KILN_DTYPE_S8: case KILN_DTYPE_U8: return 1;
    case KILN_DTYPE_S16: case KILN_DTYPE_U16: case KILN_DTYPE_F16: case KILN_DTYPE_BF16: return 2;
    case KILN_DTYPE_S32: case KILN_DTYPE_U32: case KILN_DTYPE_F32: return 4;
    default: return 8;
  }
}

static const char *descr(int t) {
  switch (t) {
    case KILN_DTYPE_PRED: return "|b1";
    case KILN_DTYPE_S8: return "|i1";
    case KILN_DTYPE_S16: return "<i2";
    case KILN_DTYPE_S32: return "<i4";
    case KILN_DTYPE_S64: return "<i8";
    case KILN_DTYPE_U8: return "|u1";
    case KILN_DTYPE_U16: return "<u2";
    case KILN_DTYPE_U32: return "<u4";
    case KILN_DTYPE_U64: return "<u8";
    case KILN_DTYPE_F16: return "<f2";
    case KILN_DTYPE_BF16: return "<f4";
    case KILN_DTYPE_F32: return "<f4";
    default: return "<f8";
  }
}

static const struct { const char *n; int t; } tnames[] = {
    {"pred", KILN_DTYPE_PRED}, {"s8", KILN_DTYPE_S8},   {"s16", KILN_DTYPE_S16}, {"s32", KILN_DTYPE_S32},
    {"s64", KILN_DTYPE_S64},   {"u8", KILN_DTYPE_U8},   {"u16", KILN_DTYPE_U16}, {"u32", KILN_DTYPE_U32},
    {"u64", KILN_DTYPE_U64},   {"f16", KILN_DTYPE_F16}, {"bf16", KILN_DTYPE_BF16}, {"f32", KILN_DTYPE_F32},
    {"f64", KILN_DTYPE_F64}};

typedef struct param {
  int dtype;
  size_t rank, dims[KILN_PLUGIN_MAX_RANK];
} param;

/* Finds "parameter(N)" lines of the ENTRY computation: NAME = TYPE[DIMS]{...} parameter(N). */
static int entry_params(const char *text, param *ps, int cap) {
  const char *e = strstr(text, "\nENTRY");
  if (!e) e = strstr(text, "ENTRY");
  if (!e) return -1;
  int n = 0;
  const char *end = strstr(e, "\n}");
  for (const char *p = strstr(e, "parameter("); p && (!end || p < end); p = strstr(p + 1, "parameter(")) {
    int num = atoi(p + 10);
    const char *ls = p;
    while (ls > e && ls[-1] != '\n') ls--;
    const char *eq = strchr(ls, '=');
    if (!eq || eq > p) continue;
    eq++;
    while (*eq == ' ') eq++;
    const char *br = strchr(eq, '[');
    if (!br || br > p || num < 0 || num >= cap) continue;
    param *q = &ps[num];
    q->dtype = 0;
    for (size_t k = 0; k < sizeof tnames / sizeof tnames[0]; k++)
      if (strlen(tnames[k].n) == (size_t)(br - eq) && !memcmp(tnames[k].n, eq, (size_t)(br - eq))) q->dtype = tnames[k].t;
    q->rank = 0;
    const char *d = br + 1;
    while (*d && *d != ']') {
      q->dims[q->rank++] = strtoull(d, (char **)&d, 10);
      if (*d == ',') d++;
    }
    if (num + 1 > n) n = num + 1;
  }
  return n;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
  if (a < 0x38800000u) {
    float fa;
    memcpy(&fa, &a, 4);
    double m = (double)fa * 16777216.0;
    uint32_t r = (uint32_t)m;
    double fr = m - r;
    if (fr > 0.5 || (fr == 0.5 && (r & 1))) r++;
    return (uint16_t)(s | r);
  }
  uint32_t r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(s | h);
}

static void write_npy(const char *path, int dtype, size_t rank, const size_t *dims, const void *data) {
  size_t n = 1;
  for (size_t k = 0; k < rank; k++) n *= dims[k];
  char shape[512] = "";
  size_t o = 0;
  for (size_t k = 0; k < rank; k++) o += (size_t)snprintf(shape + o, sizeof shape - o, "%zu%s", dims[k], rank == 1 ? "," : k + 1 < rank ? ", " : "");
  char hdr[1024];
  int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr(dtype), shape);
  int total = 10 + hl + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "ocl_run: cannot write %s\n", path);
    exit(1);
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  uint16_t len = (uint16_t)(hl + pad + 1);
  pre[8] = (unsigned char)(len & 0xff);
  pre[9] = (unsigned char)(len >> 8);
  fwrite(pre, 1, 10, f);
  fwrite(hdr, 1, (size_t)hl, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  if (dtype == KILN_DTYPE_BF16) {
    for (size_t i = 0; i < n; i++) {
      float v = bf16_to_f32(((const uint16_t *)data)[i]);
      fwrite(&v, 4, 1, f);
    }
  } else {
    fwrite(data, dsize(dtype), n, f);
  }
  fclose(f);
}

/* Reads a .npy of the parameter's element count (f32 for bf16); no header checks beyond
 * finding the payload. */
static void *read_npy(const char *path, const param *p, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "ocl_run: cannot read %s\n", path);
    exit(1);
  }
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10) exit(1);
  size_t hl = pre[8] | (size_t)pre[9] << 8;
  fseek(f, (long)(10 + hl), SEEK_SET);
  size_t es = p->dtype == KILN_DTYPE_BF16 ? 4 : dsize(p->dtype);
  void *buf = malloc(n * es + 1);
  if (fread(buf, es, n, f) != n) {
    fprintf(stderr, "ocl_run: short read in %s\n", path);
    exit(1);
  }
  fclose(f);
  if (p->dtype == KILN_DTYPE_BF16) {
    uint16_t *h = malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16(((float *)buf)[i]);
    free(buf);
    return h;
  }
  return buf;
}

static uint64_t rng;
static double uni(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

static void fill(const param *p, void *data, size_t n, int positive) {
  for (size_t i = 0; i < n; i++) {
    double u = uni();
    double fv = positive ? 0.25 + u * 3.75 : u * 4 - 2;
    int64_t iv = positive ? 1 + (int64_t)(u * 7) : (int64_t)(u * 16) - 8;
    uint64_t uv = positive ? 1 + (uint64_t)(u * 7) : (uint64_t)(u * 16);
    switch (p->dtype) {
      case KILN_DTYPE_PRED: ((uint8_t *)data)[i] = u < 0.5; break;
      case KILN_DTYPE_S8: ((int8_t *)data)[i] = (int8_t)iv; break;
      case KILN_DTYPE_S16: ((int16_t *)data)[i] = (int16_t)iv; break;
      case KILN_DTYPE_S32: ((int32_t *)data)[i] = (int32_t)iv; break;
      case KILN_DTYPE_S64: ((int64_t *)data)[i] = iv; break;
      case KILN_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)uv; break;
      case KILN_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)uv; break;
      case KILN_DTYPE_U32: ((uint32_t *)data)[i] = (uint32_t)uv; break;
      case KILN_DTYPE_U64: ((uint64_t *)data)[i] = uv; break;
      case KILN_DTYPE_F16: ((uint16_t *)data)[i] = f32_to_f16((float)fv); break;
      case KILN_DTYPE_BF16: ((uint16_t *)data)[i] = f32_to_bf16((float)fv); break;
      case KILN_DTYPE_F32: ((float *)data)[i] = (float)fv; break;
      default: ((double *)data)[i] = fv; break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: ocl_run LIB.so MODULE.hlo OUTDIR [--positive] [--seed N] [--donate] [--iters N] [-i pN=F.npy]...\n");
    return 1;
  }
  const char *lib = argv[1], *mod = argv[2], *outdir = argv[3];
  int positive = 0, donate = 0, iters = 1;
  const char *inputs[64] = {0};
  kiln_plugin_option copts[16];
  size_t n_copts = 0;
  rng = 0x9E3779B97F4A7C15ull;
  for (int i = 4; i < argc; i++) {
    if (!strcmp(argv[i], "--positive")) positive = 1;
    else if (!strcmp(argv[i], "--donate")) donate = 1;
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng ^= strtoull(argv[++i], NULL, 10) * 0x2545F4914F6CDD1Dull;
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--opt") && i + 1 < argc && n_copts < 16) {
      char *kv = argv[++i], *eq = strchr(kv, '=');
      if (eq) {
        *eq = 0;
        copts[n_copts++] = (kiln_plugin_option){sizeof(kiln_plugin_option), kv, eq + 1};
      }
    }
    else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
      const char *s = argv[++i];
      if (s[0] == 'p') {
        int k = atoi(s + 1);
        const char *eq = strchr(s, '=');
        if (eq && k >= 0 && k < 64) inputs[k] = eq + 1;
      }
    }
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "ocl_run: dlopen: %s\n", dlerror());
    return 1;
  }
  kiln_plugin_init_fn init = (kiln_plugin_init_fn)(uintptr_t)dlsym(h, KILN_PLUGIN_INIT_SYMBOL);
  if (!init) return 1;
  kiln_plugin_error *e = init(&api);
  if (e) die_err("init", e);
  FILE *f = fopen(mod, "rb");
  if (!f) {
    fprintf(stderr, "ocl_run: cannot read %s\n", mod);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len + 1);
  if (fread(text, 1, (size_t)len, f) != (size_t)len) return 1;
  text[len] = 0;
  fclose(f);

  kiln_plugin_host host = {sizeof host, KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR, "ocl_run", "", NULL, host_log};
  kiln_plugin_client_create_args ca = {sizeof ca, &host, NULL, 0, NULL};
  const char *pl = getenv("OCL_PLATFORM"), *dv = getenv("OCL_DEVICE");
  kiln_plugin_option opts[2];
  if (pl) opts[ca.n_options++] = (kiln_plugin_option){sizeof(kiln_plugin_option), "opencl.platform", pl};
  if (dv) opts[ca.n_options++] = (kiln_plugin_option){sizeof(kiln_plugin_option), "opencl.device", dv};
  ca.options = opts;
  if ((e = api->client_create(&ca))) die_err("client_create", e);
  kiln_plugin_client *c = ca.client;
  kiln_plugin_device_info_args di = {sizeof di, c, 0, NULL, NULL, 0};
  if ((e = api->device_info(&di))) die_err("device_info", e);
  fprintf(stderr, "device %s: %s, %zu bytes\n", di.name, di.description, di.memory_bytes);

  param ps[64];
  memset(ps, 0, sizeof ps);
  int np = entry_params(text, ps, 64);
  if (np < 0) np = 0;
  /* Inputs first (written as .npy even when compile then declines the module). */
  void *datas[64] = {0};
  for (int i = 0; i < np; i++) {
    size_t n = 1;
    for (size_t k = 0; k < ps[i].rank; k++) n *= ps[i].dims[k];
    if (inputs[i]) datas[i] = read_npy(inputs[i], &ps[i], n);
    else {
      datas[i] = malloc(n * dsize(ps[i].dtype) + 1);
      fill(&ps[i], datas[i], n, positive);
      char path[4096];
      snprintf(path, sizeof path, "%s/p%d.npy", outdir, i);
      write_npy(path, ps[i].dtype, ps[i].rank, ps[i].dims, datas[i]);
    }
  }
  kiln_plugin_compile_args co = {sizeof co, c, 0, KILN_PLUGIN_FORMAT_HLO_TEXT, text, (size_t)len, copts, n_copts, NULL};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if ((e = api->compile(&co))) die_err("compile", e);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "compile: %.1f ms\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

  kiln_plugin_buffer *args[64];
  int donated[64];
  for (int i = 0; i < np; i++) {
    size_t n = 1;
    for (size_t k = 0; k < ps[i].rank; k++) n *= ps[i].dims[k];
    kiln_plugin_buffer_from_host_args ba = {sizeof ba, c, 0, ps[i].dtype, ps[i].dims, ps[i].rank, datas[i],
                                            n * dsize(ps[i].dtype), NULL};
    if ((e = api->buffer_from_host(&ba))) die_err("buffer_from_host", e);
    args[i] = ba.buffer;
    donated[i] = donate;
    free(datas[i]);
  }
  kiln_plugin_buffer *res[64];
  size_t n_res = 0;
  for (int it = 0; it < iters; it++) {
    for (size_t r = 0; r < n_res; r++) api->buffer_destroy(c, res[r]);
    kiln_plugin_execute_args ea = {sizeof ea, c, co.executable, args, (size_t)np, donate ? donated : NULL, res, 64, 0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((e = api->execute(&ea))) die_err("execute", e);
    n_res = ea.n_results;
    if (n_res) {
      kiln_plugin_buffer_shape_args sa = {sizeof sa, c, res[0], 0, {0}, 0, 0};
      api->buffer_shape(&sa);
      size_t n = 1;
      for (size_t k = 0; k < sa.rank; k++) n *= sa.dims[k];
      void *tmp = malloc(n * dsize(sa.dtype) + 1);
      kiln_plugin_buffer_to_host_args ta = {sizeof ta, c, res[0], tmp, n * dsize(sa.dtype)};
      api->buffer_to_host(&ta);
      free(tmp);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (iters > 1) fprintf(stderr, "execute %d: %.3f ms\n", it, (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (donate) break; /* donated arguments are consumed */
  }
  for (size_t r = 0; r < n_res; r++) {
    kiln_plugin_buffer_shape_args sa = {sizeof sa, c, res[r], 0, {0}, 0, 0};
    if ((e = api->buffer_shape(&sa))) die_err("buffer_shape", e);
    size_t n = 1;
    for (size_t k = 0; k < sa.rank; k++) n *= sa.dims[k];
    void *data = malloc(n * dsize(sa.dtype) + 1);
    kiln_plugin_buffer_to_host_args ta = {sizeof ta, c, res[r], data, n * dsize(sa.dtype)};
    if ((e = api->buffer_to_host(&ta))) die_err("buffer_to_host", e);
    char path[4096];
    snprintf(path, sizeof path, "%s/output_%zu.npy", outdir, r);
    write_npy(path, sa.dtype, sa.rank, sa.dims, data);
    free(data);
    api->buffer_destroy(c, res[r]);
  }
  for (int i = 0; i < np; i++) api->buffer_destroy(c, args[i]);
  api->executable_destroy(c, co.executable);
  api->client_destroy(c);
  free(text);
  if (!getenv("OCL_NO_DLCLOSE")) dlclose(h); /* kept open under a leak checker, for symbols */
  return 0;
}
